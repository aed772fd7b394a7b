"""Optimisers shared by the estimators: batched Newton, bounded L-BFGS, projected gradient."""

from ._convergence import warn_not_converged

__all__ = ["warn_not_converged"]
