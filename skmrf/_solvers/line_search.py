"""The backtracking line search of the Newton solvers on self-concordant objectives (the Gaussian
``-log det Theta + tr(S Theta)``): dense Newton and sparse Newton-CG share it.

The batched Newton of many small problems (:mod:`.newton`) keeps its own vectorised Armijo rule,
clipped to the parameter box, with the classical fraction 1e-4 of the slope.
"""

from __future__ import annotations

__all__ = ["ARMIJO_FRACTION", "MIN_STEP", "backtrack"]

#: Sufficient decrease: ``f(x + t dx) <= f(x) - ARMIJO_FRACTION * t * lambda^2`` (Boyd and
#: Vandenberghe, Algorithm 9.2 with alpha = 1/4 and the decrement ``lambda^2 = -slope``).
ARMIJO_FRACTION = 0.25
#: Steps are halved from 1 while at least this long.
MIN_STEP = 1e-14


def backtrack(evaluate, f, decrement, *, full_step=False):
    """The first step ``t = 1, 1/2, 1/4, ...`` that is feasible and decreases ``f`` enough.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(t) -> (f_t, state)``: the objective at ``x + t dx`` and what the caller keeps
        of it (a Cholesky factor), ``state`` None where ``x + t dx`` is infeasible (not positive
        definite).
    f : float
        The objective at ``x``.
    decrement : float
        ``lambda^2``, the Newton decrement squared (minus the directional derivative).
    full_step : bool
        Take the first feasible step without the decrease test: in the quadratic phase
        (``lambda^2 < 1/16`` for a self-concordant objective) or when the predicted decrease is
        below the rounding of ``f``.

    Returns
    -------
    (t, f_t, state) or None
        None when no step down to :data:`MIN_STEP` qualifies.
    """
    t = 1.0
    while t >= MIN_STEP:
        f_t, state = evaluate(t)
        if state is not None and (full_step or f_t <= f - ARMIJO_FRACTION * t * decrement):
            return t, f_t, state
        t *= 0.5
    return None
