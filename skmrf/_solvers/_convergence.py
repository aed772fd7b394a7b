"""The one place a :class:`~sklearn.exceptions.ConvergenceWarning` is raised."""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning

from .._utils._warnings import warn

__all__ = ["warn_not_converged"]


def warn_not_converged(what, detail, advice):
    """Warn that ``what`` did not converge.

    The message reads ``"{what} did not converge {detail}. {advice}"``: say how far it got
    (iterations, the gap it stopped at) in ``detail`` and what to change in ``advice``.
    """
    warn(f"{what} did not converge {detail}. {advice}", ConvergenceWarning)
