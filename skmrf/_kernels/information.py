"""The information matrices behind standard errors: exact likelihood, incomplete data, pseudo-likelihood.

All are in the parametrisation normalised with respect to zero and refer to the *sum* over rows
(a row of weight ``w`` counts ``w`` times), with the ridge of the mean objective contributing
``N`` times its Hessian (``N alpha I`` for ``alpha / 2 ||theta||^2``; :mod:`skmrf._penalty`).

- Complete data: the observed information of the log-likelihood is ``N Cov_theta(phi)``, the
  Hessian of ``N log Z`` (exponential family: the same at every data set of ``N`` rows).
- Incomplete data (Louis, 1982): ``N Cov_theta(phi) - sum_i w_i Cov_theta(phi | d_i)``; the
  second term is the Jacobian of the expected statistics of the observed rows, taken here by
  central differences of their exact values.
- Pseudo-likelihood: ``H = -sum_i w_i Hess pl_i`` and ``J = sum_i w_i g_i g_i^T`` (``g_i`` the
  gradient of row ``i``'s pseudo-log-likelihood), for the sandwich ``H^-1 J H^-1`` (Godambe):
  the pseudo-likelihood is not a likelihood, so ``H^-1`` alone understates the variance.
"""

from __future__ import annotations

import numpy as np

from .._data import c_order_strides
from .._penalty import ridge_matrix
from ..inference._conditionals import ConditionalPlan
from .exact import exact_hessian

__all__ = ["FD_STEP", "exact_information", "incomplete_information", "pseudo_likelihood_information"]

#: Step of the central differences of the expected statistics (incomplete data). Their truncation
#: error is ``O(h^2)`` times the third derivative of ``log Z(d)`` (of order one: cumulants of
#: indicators) and their rounding ``O(eps / h)``; ``h = 1e-4`` balances both near ``1e-8``.
FD_STEP = 1e-4


def exact_information(model, total, alpha, max_bytes=None):
    """``N (Cov_theta(phi) + alpha I)``: the information of ``N`` complete rows (exact, junction tree);
    ``alpha`` a float or a :class:`~skmrf._penalty.CentredRidge`."""
    H = exact_hessian(model, model.theta, max_bytes)
    return total * (H + ridge_matrix(alpha, len(H)))


def incomplete_information(model, data_term, total, alpha, max_bytes=None):
    """The observed information of incomplete rows (Louis' formula, module docstring).

    ``data_term`` is the :class:`~skmrf._kernels.incomplete.term.IncompleteDataTerm` of the rows
    (their weights included); ``total`` the summed weight of the rows with an observed entry.
    """
    lay = model.layout
    theta = model.theta
    jac = np.empty((len(theta), len(theta)))
    for a in range(len(theta)):
        step = np.zeros_like(theta)
        step[a] = FD_STEP
        hi = data_term.evaluate(lay.full_tables(theta + step))[1][lay.theta_pos]
        lo = data_term.evaluate(lay.full_tables(theta - step))[1][lay.theta_pos]
        jac[a] = (hi - lo) / (2 * FD_STEP)
    return exact_information(model, total, alpha, max_bytes) - 0.5 * (jac + jac.T)


def pseudo_likelihood_information(layout, theta, X, weight=None):
    """``H = -sum_i w_i Hess pl_i`` and ``J = sum_i w_i g_i g_i^T`` of rows ``X`` (no ridge).

    Parameters
    ----------
    layout : CliqueLayout
    theta : ndarray of shape (n_params,)
    X : ndarray of int64, shape (n_rows, n_variables)
        Complete rows.
    weight : ndarray of shape (n_rows,), optional

    Returns
    -------
    H, J : ndarray of shape (n_params, n_params)

    Notes
    -----
    For variable ``v`` with conditional ``p_k = p(x_v = k | x_-v)`` and ``f(k)`` the 0/1 vector of
    the parameters whose feature is on at ``(k, x_-v)`` (one per clique holding ``v``, where every
    other variable of the clique is non-zero), ``d log p(x_v | x_-v) = f(x_v) - sum_k p_k f(k)`` and
    its Hessian is ``-Cov_p(f)``. Distinct rows are computed once; ``O(n_distinct * sum_v
    (c_v K_v)^2)`` for ``c_v`` cliques holding ``v``.
    """
    X, counts = np.unique(X, axis=0, return_counts=True) if weight is None else _weighted_distinct(X, weight)
    n_params, kmax = layout.n_params, int(layout.n_states.max())
    param_of = np.full(layout.n_table + 1, -1, dtype=np.int64)
    param_of[layout.theta_pos] = np.arange(n_params)
    full = layout.full_tables(theta)
    H = np.zeros(n_params * n_params)
    G = np.zeros((len(X), n_params))
    rows = np.arange(len(X))
    for v in range(len(layout.n_states)):
        plan = ConditionalPlan(layout, [v])
        lg = plan.logits(full, X)[0]  # (rows, kmax)
        p = np.exp(lg - lg.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        idx = _feature_index(layout, v, X, kmax, param_of)  # (rows, cliques, kmax), -1 for none
        on = idx >= 0
        own = np.take_along_axis(idx, X[:, v][:, None, None], axis=2)[:, :, 0]
        hit = own >= 0
        np.add.at(G, (np.broadcast_to(rows[:, None], own.shape)[hit], own[hit]), 1.0)
        pk = np.broadcast_to(p[:, None, :], idx.shape)
        np.add.at(G, (np.broadcast_to(rows[:, None, None], idx.shape)[on], idx[on]), -pk[on])
        # -Hess = sum_k p_k f(k) f(k)^T - m m^T, with m = sum_k p_k f(k).
        a, b = idx[:, :, None, :], idx[:, None, :, :]
        both = (a >= 0) & (b >= 0)
        w = np.broadcast_to((counts[:, None] * p)[:, None, None, :], both.shape)
        H += np.bincount((a * n_params + b)[both], weights=w[both], minlength=n_params * n_params)
        flat = idx.reshape(len(X), -1)
        pm = np.broadcast_to(p[:, None, :], idx.shape).reshape(len(X), -1)
        a, b = flat[:, :, None], flat[:, None, :]
        both = (a >= 0) & (b >= 0)
        w = counts[:, None, None] * pm[:, :, None] * pm[:, None, :]
        H -= np.bincount((a * n_params + b)[both], weights=w[both], minlength=n_params * n_params)
    J = G.T @ (counts[:, None] * G)
    return H.reshape(n_params, n_params), J


def _weighted_distinct(X, weight):
    """Distinct rows of X and their summed weights."""
    X, inverse = np.unique(X, axis=0, return_inverse=True)
    return X, np.bincount(inverse.ravel(), weights=weight, minlength=len(X))


def _feature_index(layout, v, X, kmax, param_of):
    """For every row and clique holding ``v``: the parameter on at ``x_v = k`` (``-1`` if none)."""
    K = layout.n_states
    cliques = [c for c in layout.cliques if v in c]
    out = np.full((len(X), len(cliques), kmax), -1, dtype=np.int64)
    for j, c in enumerate(cliques):
        k = layout.cliques.index(c)
        strides = c_order_strides(K[list(c)])
        own = c.index(v)
        others = [i for i in range(len(c)) if i != own]
        base = layout.table_offsets[k] + X[:, [c[i] for i in others]] @ strides[others]
        pos = base[:, None] + strides[own] * np.arange(kmax)[None, :]
        valid = np.arange(kmax)[None, :] < K[v]
        out[:, j] = np.where(valid, param_of[np.where(valid, pos, layout.n_table)], -1)
    return out
