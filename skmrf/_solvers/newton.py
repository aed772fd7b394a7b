"""Damped Newton for batches of same-structure log-linear models (LAP's auxiliary problems)."""

from __future__ import annotations

import numpy as np

from .._utils._budgets import BATCH_FLOATS
from .box import THETA_BOUND, projected_max

__all__ = ["batched_newton"]

# Added to the Newton system only (not the objective) so that it is never singular.
_JITTER = 1e-10


def batched_newton(F3, freq, alpha, max_iter=100, tol=1e-8):
    """Fit a batch of same-structure log-linear models by damped Newton.

    Minimises, for every problem ``b`` of the batch,

    .. math::

        f_b(\\theta) = -\\sum_{x, k} \\hat p_b(x, k) \\log p_\\theta(k | x)
        + \\frac{1}{2}\\theta^T R \\theta,\\quad
        p_\\theta(k | x) = \\frac{\\exp(F_{xk} \\cdot \\theta)}{\\sum_{k'} \\exp(F_{xk'} \\cdot \\theta)}

    where ``x`` runs over contexts and ``R = alpha I`` (a ridge on ``theta``) or a given
    matrix. With a single context this is the auxiliary model's negative mean log-likelihood,
    ``log Z - theta . s``
    (LAP paper, Section 3, gradient ``E[phi] - s``); with several it is a
    conditional likelihood. The gradient is ``sum_x w_x E[F | x] - s +
    R theta`` and the Hessian ``sum_x w_x Cov[F | x] + R``
    (``F^T diag(p) F - mu mu^T`` for one context), built for the whole batch by
    batched matrix products and solved by one batched ``np.linalg.solve``;
    backtracking (Armijo) makes the steps monotone.

    Parameters
    ----------
    F3 : ndarray of shape (n_contexts, n_states, n_params)
        Shared 0/1 features.
    freq : ndarray of shape (batch, n_contexts, n_states)
        Empirical frequencies of each problem (summing to one).
    alpha : float or ndarray of shape (n_params, n_params)
        Ridge ``alpha / 2 * ||theta||^2``, or the symmetric matrix ``R`` of ``theta . R theta / 2``
        (the centred ridge, :class:`~skmrf._penalty.CentredRidge`).
    max_iter : int, default=100
        Newton iterations per problem.
    tol : float, default=1e-8
        Converged when no gradient component exceeds ``tol``.

    Returns
    -------
    theta : ndarray of shape (batch, n_params)
        The solutions, inside the box ``|theta| <= THETA_BOUND``.
    n_iter : ndarray of int, shape (batch,)
        Newton iterations run per problem.
    converged : ndarray of bool, shape (batch,)
        Whether each problem met ``tol``.
    """
    n_ctx, n_k, P = F3.shape
    B = freq.shape[0]
    F2 = F3.reshape(n_ctx * n_k, P)
    w_all = freq.sum(axis=2)
    s_all = freq.reshape(B, -1) @ F2
    theta = np.zeros((B, P))
    n_iter = np.zeros(B, dtype=np.int64)
    converged = np.zeros(B, dtype=bool)
    R = alpha * np.eye(P) if np.ndim(alpha) == 0 else np.asarray(alpha, dtype=np.float64)
    objective = _Objective(F3, R)
    hessian = _Hessian(F3, R)

    active = np.arange(B)
    f_act, logits, lse = objective(theta, freq, w_all)
    for _ in range(max_iter + 1):
        th, fr, w = theta[active], freq[active], w_all[active]
        p = np.exp(logits - lse[:, :, None])
        wp = (w[:, :, None] * p).reshape(len(active), -1)
        mu = wp @ F2
        g = mu - s_all[active] + th @ R
        done = projected_max(th, g, axis=1) <= tol
        converged[active[done]] = True
        keep = ~done & (n_iter[active] < max_iter)
        if not keep.any():
            break
        active, th, fr, w, g, p, wp, mu = (a[keep] for a in (active, th, fr, w, g, p, wp, mu))
        step, slope = _newton_step(hessian(wp, p, w, mu), g)
        new, f_act, logits, lse = _backtrack(objective, th, fr, w, f_act[keep], step, slope)
        theta[active] = new
        n_iter[active] += 1
    return theta, n_iter, converged


class _Objective:
    """``f_b`` of every problem with its logits and log-normalisers (see :func:`batched_newton`)."""

    def __init__(self, F3, R):
        self.n_ctx, self.n_k, P = F3.shape
        self.F2T = F3.reshape(-1, P).T
        self.R = R

    def __call__(self, th, fr, w):
        logits = (th @ self.F2T).reshape(len(th), self.n_ctx, self.n_k)
        mx = logits.max(axis=2)
        lse = np.log(np.exp(logits - mx[:, :, None]).sum(axis=2)) + mx
        f = -(fr * logits).sum(axis=(1, 2)) + (w * lse).sum(axis=1) + 0.5 * ((th @ self.R) * th).sum(axis=1)
        return f, logits, lse


class _Hessian:
    """The batch's Hessians ``sum_x w_x Cov[F | x] + R + jitter I``.

    For 0/1 features, ``sum_c p_c F_c F_c^T`` is one GEMM with the products of feature
    pairs, when that table is small enough. The products are indicators of joint
    assignments, and many pairs give the same one (``x_i x_j`` times ``x_j`` is
    ``x_i x_j``), so only the distinct columns are multiplied (160 of 465 for an interior
    edge of a binary grid) and gathered into the full Hessian.
    """

    def __init__(self, F3, R):
        n_ctx, n_k, P = F3.shape
        self.F3 = F3
        self.F2 = F3.reshape(n_ctx * n_k, P)
        self.ridge = R + _JITTER * np.eye(P)
        self.FF = None
        iu = np.triu_indices(P)
        if n_ctx * n_k * len(iu[0]) <= 2 * BATCH_FLOATS:
            self.FF, which = _distinct_columns(self.F2[:, iu[0]] * self.F2[:, iu[1]])
            pos = np.empty((P, P), dtype=np.intp)
            pos[iu] = pos[iu[1], iu[0]] = np.arange(len(iu[0]))
            self.gather = which[pos.ravel()]

    def __call__(self, wp, p, w, mu):
        B, P = mu.shape
        if self.FF is not None:
            H = np.take(wp @ self.FF, self.gather, axis=1).reshape(B, P, P)
        else:
            H = np.matmul((wp[:, :, None] * self.F2[None]).transpose(0, 2, 1), self.F2)
        if self.F3.shape[0] == 1:
            H -= mu[:, :, None] * mu[:, None, :]
        else:
            m = np.einsum("bxk,xkp->bxp", p, self.F3)
            H -= np.matmul((w[:, :, None] * m).transpose(0, 2, 1), m)
        H += self.ridge
        return H


def _newton_step(H, g):
    """Newton directions ``-H^-1 g`` (steepest descent where not a descent direction) and slopes."""
    try:
        step = -np.linalg.solve(H, g[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        step = -np.einsum("bpq,bq->bp", np.linalg.pinv(H), g)
    slope = np.einsum("bp,bp->b", g, step)
    bad = ~(slope < 0)
    step[bad] = -g[bad]
    slope[bad] = -np.einsum("bp,bp->b", g[bad], g[bad])
    return step, slope


def _backtrack(objective, th, fr, w, f0, step, slope):
    """Armijo backtracking of every problem's step, inside the box; returns the new points."""
    t = np.ones(len(th))
    new = np.clip(th + step, -THETA_BOUND, THETA_BOUND)
    f_new, lg_new, lse_new = objective(new, fr, w)
    # Near the optimum the predicted decrease (the Newton decrement) is below
    # float64 resolution of f; the full Newton step is then taken as is.
    tiny = -slope < 1e-12 * np.maximum(1.0, np.abs(f0))
    for _ls in range(40):
        fail = ~(f_new <= f0 + 1e-4 * t * slope) & ~tiny
        if not fail.any():
            break
        t[fail] *= 0.5
        new[fail] = np.clip(th[fail] + t[fail, None] * step[fail], -THETA_BOUND, THETA_BOUND)
        f_new[fail], lg_new[fail], lse_new[fail] = objective(new[fail], fr[fail], w[fail])
    return new, f_new, lg_new, lse_new


def _distinct_columns(M):
    """Distinct columns of the 0/1 matrix ``M``: ``(U, which)`` with ``M == U[:, which]``."""
    keys = np.ascontiguousarray(np.packbits(M.astype(bool), axis=0).T)
    keys = keys.view(np.dtype((np.void, keys.shape[1]))).ravel()
    _, first, which = np.unique(keys, return_index=True, return_inverse=True)
    return np.ascontiguousarray(M[:, first]), which.ravel()
