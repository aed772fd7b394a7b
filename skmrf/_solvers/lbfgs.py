"""L-BFGS-B inside the box ``|theta| <= THETA_BOUND``, with one rule for non-convergence."""

from __future__ import annotations

import numpy as np
from scipy.linalg import blas
from scipy.optimize import minimize

from ._convergence import warn_not_converged
from .box import THETA_BOUND, projected_max

__all__ = ["GRADIENT_FLOOR", "minimize_in_box", "minimize_low_memory", "warn_if_not_converged"]

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
        ``callback(iteration, objective=..., grad_max=...)`` after every iteration.
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
            callback(state["it"], objective=state["f"], grad_max=state["g"])

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


def minimize_low_memory(fun, x0, max_iter, tol, callback=None, n_corrections=5, f_noise=1e-12, overwrite_x0=False):
    """Minimise ``fun`` by L-BFGS with float32 correction pairs, then inside the box if it left it.

    For objectives of millions of variables, where scipy's L-BFGS-B costs ``(2 m + 5) n`` float64
    numbers and converts its bounds in Python loops over the variables (minutes at 5e6). The
    two-loop recursion (Nocedal & Wright, Algorithm 7.4) keeps ``n_corrections`` pairs in float32
    (``8 m n`` bytes; the directions are a preconditioner, their rounding only changes the path),
    the iterate and gradient in float64. Steps: the unit step (``1 / ||g||`` at the first), halved
    by quadratic interpolation until Armijo's sufficient decrease holds; a pair with
    ``s^T y <= 0`` is not stored. It stops when ``max |g| <= tol``, after ``max_iter`` iterations,
    or when 30 trial steps give no decrease. Steps whose decrease is below the objective's relative
    rounding ``f_noise`` are accepted by Hager and Zhang's approximate Wolfe condition (SIAM J.
    Optim. 16(1), 2005), so that an objective evaluated in float32 still converges. A convex
    objective with a ridge has its minimum inside the box in all but extreme cases; when the
    solution leaves the box ``|x| <= THETA_BOUND``, :func:`minimize_in_box` restarts from its
    projection, so the result is always the boxed minimum. Returns as :func:`minimize_in_box`.

    Memory: the iterate is moved in place along the direction (trial steps are evaluated at
    ``x`` itself, a rejected one undone), and the vector operations run in BLAS or by slices,
    so the float64 vectors alive are ``x`` and one gradient (two during the two-loop recursion's
    start), the float32 ones the direction and the pairs (``2 m + 1`` at most). ``fun`` must
    not keep a reference to its argument. ``overwrite_x0``: ``x0`` (float64) is the iterate
    itself instead of a copy.
    """
    x = np.asarray(x0, dtype=np.float64) if overwrite_x0 else np.array(x0, dtype=np.float64)
    f, g = fun(x)
    S, Y, rho = [], [], []
    it = 0
    while it < max_iter and _max_abs(g) > tol:
        d = _two_loop(g, S, Y, rho)  # float32
        gd = _dot(g, d)
        if gd >= 0:  # not a descent direction (rounding): restart from steepest descent
            S, Y, rho = [], [], []
            np.negative(g, out=d, casting="unsafe")
            gd = -_dot(d, d)
        # During the line search g is only needed for y = g_new - g: kept as -g in float32, in the
        # oldest pair's y (dropped once n_corrections are kept; its s is released: d becomes s).
        if len(S) == n_corrections:
            rho.pop(0), S.pop(0)
            y_next = Y.pop(0)
        else:
            y_next = np.empty(len(d), np.float32)
        np.negative(g, out=y_next, casting="unsafe")
        del g
        step = 1.0 if S else 1.0 / max(np.sqrt(-gd), 1e-300)
        taken = 0.0  # the step x has been moved by
        for _ in range(30):
            _axpy(step - taken, d, x)
            taken = step
            g_new = None  # a rejected trial's gradient is released before the next evaluation
            f_new, g_new = fun(x)
            if np.isfinite(f_new) and f_new <= f + 1e-4 * step * gd:
                break
            # Hager & Zhang's approximate Wolfe condition, for steps whose decrease is below the
            # objective's rounding: no increase beyond it, and the slope has not turned upward more
            # than it went down at x.
            if f_new <= f + f_noise * abs(f) and _dot(g_new, d) <= -(1 - 2e-4) * gd:
                break
            curv = f_new - f - step * gd  # the quadratic through f, f' and f_new has its minimum at
            step = max(0.1 * step, min(0.5 * step, -gd * step * step / (2 * curv))) if np.isfinite(curv) else 0.1 * step
        else:
            _axpy(-taken, d, x)  # no step found: x goes back, its gradient to float32 precision
            g = -y_next.astype(np.float64)
            break
        s_next = np.multiply(d, np.float32(step), out=d)
        del d
        np.add(y_next, g_new, out=y_next, casting="unsafe")
        sy = float(np.dot(s_next, y_next))
        if sy > 0:
            S.append(s_next), Y.append(y_next), rho.append(1.0 / sy)
        del s_next, y_next
        f, g = f_new, g_new
        del g_new
        it += 1
        if callback is not None:
            callback(it, objective=f, grad_max=_max_abs(g))
    del S, Y
    if _max_abs(x) > THETA_BOUND:
        x, f, g, more = minimize_in_box(fun, np.clip(x, -THETA_BOUND, THETA_BOUND), max(1, max_iter - it), tol)
        it += more
    return x, f, g, it


#: Entries per slice of the vector operations mixing float64 and float32 (no full-size temporaries).
_SLICE = 1 << 18


def _max_abs(v):
    """``max |v|`` (0 for an empty ``v``) by slices: no temporary of the vector's size."""
    return max((float(np.abs(v[a : a + _SLICE]).max()) for a in range(0, len(v), _SLICE)), default=0.0)


def _dot(u, v):
    """``u . v`` of float64 ``u`` and float32 ``v`` in float32 by slices (no float64 copy of ``v``
    nor float32 copy of ``u``), summed in float64."""
    if u.dtype == v.dtype:
        return float(np.dot(u, v))
    return sum(float(np.dot(u[a : a + _SLICE].astype(v.dtype), v[a : a + _SLICE])) for a in range(0, len(u), _SLICE))


def _axpy(a, v, x):
    """``x += a * v`` in place (float64 ``x``, float32 ``v``), by slices."""
    if a == 0:
        return
    for k in range(0, len(x), _SLICE):
        x[k : k + _SLICE] += a * v[k : k + _SLICE].astype(np.float64)


def _two_loop(g, S, Y, rho):
    """The L-BFGS direction ``-H g`` (float32) from the stored pairs (scaled by ``s^T y / y^T y`` of the last).

    In the pairs' float32 (BLAS sdot/saxpy in place, no temporaries of the vectors' size): the
    direction is a preconditioned gradient, its rounding only changes the path; a direction that
    is not one of descent is caught by the caller.
    """
    q = g.astype(np.float32)
    a = np.zeros(len(S))
    for k in range(len(S) - 1, -1, -1):
        a[k] = rho[k] * float(np.dot(S[k], q))
        _saxpy(-a[k], Y[k], q)
    if S:
        q *= np.float32(1.0 / (rho[-1] * float(np.dot(Y[-1], Y[-1]))))
    for k in range(len(S)):
        b = rho[k] * float(np.dot(Y[k], q))
        _saxpy(a[k] - b, S[k], q)
    return np.negative(q, out=q)


def _saxpy(a, v, q):
    """``q += a * v`` for float32 ``q`` and ``v``: BLAS saxpy, in place for contiguous ``q``."""
    out = blas.saxpy(v, q, a=a)
    if out is not q:
        q[...] = out


def warn_if_not_converged(name, n_iter, grad_max, tol, max_iter, diverges=False):
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
        )
