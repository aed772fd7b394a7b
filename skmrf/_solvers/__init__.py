"""Optimisers shared by the estimators: batched Newton, bounded L-BFGS, projected gradient."""

from ._convergence import warn_not_converged
from .box import THETA_BOUND, projected_max
from .lbfgs import minimize_in_box, warn_if_not_converged
from .newton import batched_newton
from .projected_gradient import projected_gradient

__all__ = [
    "THETA_BOUND",
    "batched_newton",
    "minimize_in_box",
    "projected_gradient",
    "projected_max",
    "warn_if_not_converged",
    "warn_not_converged",
]
