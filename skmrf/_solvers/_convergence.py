"""The one place a :class:`~sklearn.exceptions.ConvergenceWarning` is raised."""

from __future__ import annotations

import warnings

from sklearn.exceptions import ConvergenceWarning

__all__ = ["warn_not_converged"]


def warn_not_converged(what, detail, advice, stacklevel=2):
    """Warn that ``what`` did not converge.

    The message reads ``"{what} did not converge {detail}. {advice}"``: say how far it got
    (iterations, the gap it stopped at) in ``detail`` and what to change in ``advice``.
    ``stacklevel`` counts from the caller, as for :func:`warnings.warn`.
    """
    warnings.warn(f"{what} did not converge {detail}. {advice}", ConvergenceWarning, stacklevel=stacklevel + 1)
