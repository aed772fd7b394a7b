"""L-BFGS-B inside the box ``|theta| <= THETA_BOUND``, with one rule for non-convergence."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from ._convergence import warn_not_converged
from .box import THETA_BOUND, projected_max

__all__ = ["GRADIENT_FLOOR", "minimize_in_box", "warn_if_not_converged"]

#: L-BFGS-B stops on a failed line search once the objective is flat to float64 precision,
#: which happens at gradients of about 1e-9 to 1e-6 depending on the scale of the objective.
#: A fit that stopped that way with every gradient component below this floor is as
#: converged as float64 allows, so it is not reported even if ``tol`` is tighter.
GRADIENT_FLOOR = 1e-5


def minimize_in_box(fun, x0, max_iter, tol, callback=None, n_corrections=20):
    """Minimise ``fun`` by L-BFGS-B on the box ``|theta_k| <= THETA_BOUND``.

    Parameters
    ----------
    fun : callable
        ``fun(theta)`` returns the objective and its gradient.
    x0 : ndarray of shape (n_params,)
        Starting point.
    max_iter : int
        Maximum L-BFGS iterations.
    tol : float
        Stop when the largest projected-gradient component is below ``tol``.
    callback : callable, optional
        ``callback(iteration, objective, grad_max)`` after every iteration.
    n_corrections : int, default=20
        Correction pairs L-BFGS keeps (scipy's ``maxcor``): its memory is about
        ``(2 * n_corrections + 5) * len(x0)`` float64 numbers.

    Returns
    -------
    theta : ndarray of shape (n_params,)
        The solution.
    f, g : float and ndarray
        Objective and gradient at ``theta``.
    n_iter : int
        L-BFGS iterations run.
    """
    state = {"it": 0, "f": np.nan, "g": np.nan}

    def wrapped(theta):
        f, g = fun(theta)
        state["f"], state["g"] = f, projected_max(theta, g)
        return f, g

    def on_iter(intermediate_result):
        state["it"] += 1
        if callback is not None:
            callback(state["it"], state["f"], state["g"])

    res = minimize(
        wrapped,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(-THETA_BOUND, THETA_BOUND)] * len(x0),
        callback=on_iter,
        options={"maxiter": max_iter, "gtol": tol, "ftol": 0.0, "maxcor": n_corrections},
    )
    f, g = fun(res.x)
    return res.x, f, g, int(res.nit)


def warn_if_not_converged(name, n_iter, grad_max, tol, max_iter, diverges=False, stacklevel=2):
    """The one non-convergence rule of the bounded fits.

    Warn when the largest projected-gradient component ``grad_max`` exceeds ``tol`` and the
    fit either ran out of iterations or stopped above :data:`GRADIENT_FLOOR`; nothing when
    ``diverges`` (no finite optimum exists, which the caller reports by its own warning).
    """
    if diverges or grad_max <= tol:
        return
    if n_iter >= max_iter or grad_max > GRADIENT_FLOOR:
        warn_not_converged(
            name,
            f"in {n_iter} iterations: the largest gradient component is {grad_max:.2e} > tol={tol:g}",
            "Increase max_iter or tol.",
            stacklevel=stacklevel + 1,
        )
