"""Covariance selection: the maximum-likelihood precision with a fixed zero pattern.

Dempster (1972): minimise ``-log det Theta + tr(S Theta)`` over precisions
that are zero outside the graph. Two solvers on dense arrays: Newton's method
with the exact Hessian (:func:`newton_covsel`) and the modified regression
algorithm of Hastie, Tibshirani & Friedman (:func:`regression_covsel`).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla

from ..._solvers.line_search import backtrack

__all__ = ["newton_covsel", "regression_covsel"]


class _PatternObjective:
    """``f(Theta) = -log det Theta + tr(S Theta)`` on the unknowns ``x = Theta[rows, cols]``."""

    def __init__(self, S, rows, cols):
        self.p = S.shape[0]
        self.rows, self.cols = rows, cols
        self.half = np.where(rows == cols, 0.5, 1.0)
        self.target = S[rows, cols]

    def build(self, x):
        """The dense symmetric ``Theta`` with entries ``x`` on the pattern."""
        T = np.zeros((self.p, self.p))
        T[self.rows, self.cols] = x
        T[self.cols, self.rows] = x
        return T

    def __call__(self, x):
        """``(f, cho_factor)``, or ``(inf, None)`` where ``Theta`` is not positive definite."""
        try:
            c = sla.cho_factor(self.build(x), lower=True, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            return np.inf, None
        logdet = 2.0 * np.log(np.diag(c[0])).sum()
        return -logdet + 2.0 * np.dot(self.half * self.target, x), c

    def newton_direction(self, W, resid):
        """``(g, dx, accuracy)``: gradient, Newton step with the exact Hessian ``W_ik W_jl + W_il W_jk``,
        and the relative residual ``||H dx + g|| / ||g||`` of its solve (large when ``H`` is numerically
        singular, as on a likelihood without a maximum: the decrement ``-g^T dx`` is then meaningless)."""
        rows, cols, half = self.rows, self.cols, self.half
        g = -2.0 * half * resid
        Wr, Wc = W[rows], W[cols]
        H = Wr[:, rows] * Wc[:, cols]
        H += Wr[:, cols] * Wc[:, rows]
        H *= 2.0 * np.outer(half, half)
        try:
            dx = -sla.solve(H, g, assume_a="pos", check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            dx = -np.linalg.lstsq(H, g, rcond=None)[0]
        norm = float(np.linalg.norm(g))
        return g, dx, float(np.linalg.norm(H @ dx + g)) / norm if norm else 0.0


def newton_covsel(S, rows, cols, theta0, tol=1e-10, max_iter=100, decrement_tol=None, callback=None):
    """Maximum-likelihood precision with support ``(rows, cols)`` by Newton's method.

    Minimises ``f(Theta) = -log det Theta + tr(S Theta)`` over symmetric
    ``Theta`` supported on the pattern, with the exact Hessian
    ``H[(ij),(kl)] = W_ik W_jl + W_il W_jk`` (``W = Theta^{-1}``) and a damped
    step while the Newton decrement exceeds 1/4 (the objective is
    self-concordant, so full steps converge quadratically after that).

    Parameters
    ----------
    S : ndarray of shape (p, p)
        Sample covariance.
    rows, cols : ndarray of int64, shape (q,)
        The pattern (``rows <= cols``, diagonal included).
    theta0 : ndarray of shape (p, p)
        Positive definite starting precision.
    tol : float, default=1e-10
        Stop when the residual (see Returns) is at most ``tol``.
    max_iter : int, default=100
        Maximum Newton iterations.
    decrement_tol : float, optional
        Also stop, at the current iterate, when the Newton decrement (exact
        here) satisfies ``lambda^2 / 2 <= decrement_tol``, the Newton system
        was solved to a relative residual of ``1e-6`` (not so when the Hessian
        is numerically singular) and the full Newton step would not lower the
        objective by more than ``2 decrement_tol``.
    callback : callable, optional
        ``callback(n_iter, objective=..., kkt=...)`` once per iteration.

    Returns
    -------
    Theta, W : ndarray of shape (p, p)
        The dense precision and its inverse.
    n_iter : int
        Iterations run.
    kkt : float
        The final residual ``max |W - S|`` over the pattern divided by ``max S_ii``.
    decrement : float
        ``lambda^2 / 2`` at ``Theta`` (NaN when not computed: stopped on ``tol``).

    Raises
    ------
    ValueError
        If ``theta0`` is not positive definite.
    """
    p = S.shape[0]
    objective = _PatternObjective(S, rows, cols)
    scale = float(np.max(np.diag(S)))
    x = theta0[rows, cols].copy()
    bound = float(np.max(1.0 / np.diag(S)))
    f, cf = objective(x)
    if cf is None:
        raise ValueError("The initial precision for Newton's method is not positive definite.")
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        W = sla.cho_solve(cf, np.eye(p), check_finite=False)
        resid = W[rows, cols] - objective.target
        kkt = float(np.max(np.abs(resid))) / scale
        if callback is not None:
            callback(n_iter, objective=f, kkt=kkt)
        if kkt <= tol:
            return objective.build(x), W, n_iter, kkt, np.nan
        g, dx, accuracy = objective.newton_direction(W, resid)
        decrement = float(-g @ dx)
        if decrement_tol is not None and decrement / 2 <= decrement_tol and accuracy <= 1e-6:
            # The full step must confirm it: f falls by about lambda^2 / 2 near the optimum, but an
            # ill-conditioned Hessian (a likelihood without a maximum) can make dx, so lambda, wrong.
            fn, cn = objective(x + dx)
            if cn is not None and fn >= f - 2 * decrement_tol:
                if fn < f:  # take the full step: quadratically closer, at the cost of one inverse
                    x, cf = x + dx, cn
                    W = sla.cho_solve(cf, np.eye(p), check_finite=False)
                    kkt = float(np.max(np.abs(W[rows, cols] - objective.target))) / scale
                return objective.build(x), W, n_iter, kkt, decrement / 2
        # Full steps once the decrement is below 1/16 (the objective is self-concordant).
        step = backtrack(lambda t, x=x, dx=dx: objective(x + t * dx), f, decrement, full_step=decrement < 1.0 / 16)
        if step is None:
            break
        t, fn, cn = step
        x = x + t * dx
        f, cf = fn, cn
        if np.max(np.abs(x)) > 1e10 * bound:  # the likelihood is unbounded: no MLE
            break
    W = sla.cho_solve(cf, np.eye(p), check_finite=False)
    kkt = float(np.max(np.abs(W[rows, cols] - objective.target))) / scale
    return objective.build(x), W, n_iter, kkt, np.nan


def _precision_from_regressions(S, W, neighbours):
    """Dense symmetric ``Theta`` from the neighbourhood regressions on the working covariance ``W``."""
    p = S.shape[0]
    Theta = np.zeros((p, p))
    for i in range(p):
        nb = neighbours[i]
        if len(nb):
            beta = np.linalg.solve(W[np.ix_(nb, nb)], S[nb, i])
            tii = 1.0 / (S[i, i] - beta @ S[nb, i])
            Theta[nb, i] = -beta * tii
        else:
            tii = 1.0 / S[i, i]
        Theta[i, i] = tii
    return 0.5 * (Theta + Theta.T)


def regression_covsel(S, neighbours, W0=None, tol=1e-10, max_iter=1000, max_time=None, callback=None):
    """Maximum-likelihood precision by the modified regression algorithm.

    Hastie, Tibshirani & Friedman (2009), Algorithm 17.1: cycle over the
    variables; for variable ``i`` solve ``W[N, N] beta = S[N, i]`` on its
    neighbours ``N`` and set row/column ``i`` of ``W`` to ``W[:, N] beta``.
    At convergence ``W`` equals ``S`` on the pattern and its inverse is zero
    outside it.

    Parameters
    ----------
    S : ndarray of shape (p, p)
        Sample covariance.
    neighbours : list of ndarray of int
        ``neighbours[i]`` are the neighbours of variable ``i``.
    W0 : ndarray of shape (p, p), optional
        Starting working covariance (default ``S``).
    tol : float, default=1e-10
        Stop when a sweep changes no entry of ``W`` by more than ``tol * max S_ii``.
    max_iter : int, default=1000
        Maximum sweeps.
    max_time : float, optional
        Stop after the first sweep that ends more than this many seconds after the first began.
    callback : callable, optional
        ``callback(n_iter, change=...)`` once per sweep.

    Returns
    -------
    Theta : ndarray of shape (p, p)
        Dense symmetric precision.
    W : ndarray of shape (p, p)
        The working covariance (which approaches ``inv(Theta)`` at convergence); a view of a
        row-padded buffer, not C-contiguous.
    n_iter : int
        Sweeps run.
    change : float
        The largest change of an entry of ``W`` in the last sweep divided by ``max S_ii``.

    Raises
    ------
    numpy.linalg.LinAlgError
        If a neighbourhood system is singular.
    """
    p = S.shape[0]
    # Writing column i touches one entry of every row: rows whose stride is a power of two share
    # cache sets, and at p = 4096 a sweep took 0.34 s instead of 0.14. Rows padded to an odd number
    # of 64-byte lines apart take every set in turn (the same arithmetic; only the layout changes).
    W = np.empty((p, p + (8 - p) % 16))[:, :p]
    W[...] = S if W0 is None else W0
    scale = float(np.max(np.diag(S)))
    change = np.inf
    n_iter = 0
    deadline = None if max_time is None else time.perf_counter() + max_time
    for n_iter in range(1, max_iter + 1):
        change = 0.0
        for i in range(p):
            nb = neighbours[i]
            if len(nb) == 0:
                col = np.zeros(p)
            else:
                Wn = W[nb]
                beta = np.linalg.solve(Wn[:, nb], S[nb, i])
                col = beta @ Wn
            col[i] = S[i, i]
            change = max(change, float(np.max(np.abs(col - W[i]))))
            W[i] = col
            W[:, i] = col
        change /= scale
        if callback is not None:
            callback(n_iter, change=change)
        if change <= tol or (deadline is not None and time.perf_counter() > deadline):
            break
    return _precision_from_regressions(S, W, neighbours), W, n_iter, change
