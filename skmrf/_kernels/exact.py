"""Exact maximum likelihood with junction-tree inference: L-BFGS-B, a Newton polish, and the
extended MLE by iterative proportional fitting when no finite maximiser exists."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._penalty import ridge_matrix, ridge_value_and_gradient
from .._solvers import THETA_BOUND, minimize_in_box, projected_max
from .._solvers.ipf import extended_max_likelihood

__all__ = ["ExactFit", "exact_hessian", "fit_exact", "fit_max_likelihood", "maximal_factors"]

#: Newton polish (exact Hessian) only for models with at most this many parameters.
NEWTON_MAX_PARAMS = 1000
NEWTON_STEPS = 8


class ExactFit(NamedTuple):
    """What :func:`fit_exact` ran."""

    n_iter: int
    """L-BFGS iterations plus Newton steps, or IPF sweeps for the extended MLE."""
    grad_max: float
    """Largest projected-gradient component (L-BFGS), or largest marginal gap (IPF), at the end."""
    extended: bool
    """Whether the extended MLE (IPF) was fitted: ``alpha = 0`` and an empty cell."""
    gain: float
    """IPF only: the mean log-likelihood gained in the last sweep (0 otherwise)."""


def fit_max_likelihood(model, mean_stats, alpha, max_iter, tol, max_bytes=None, callback=None):
    """Minimise ``log Z(theta) - theta . s + alpha/2 ||theta||^2`` by L-BFGS-B, then Newton.

    Parameters
    ----------
    model : DiscreteMRF
        Its ``theta`` is the starting point and receives the result.
    mean_stats : ndarray of shape (n_params,)
        Empirical feature means ``s``.
    alpha : float or CentredRidge
        Ridge penalty (:mod:`skmrf._penalty`).
    max_iter : int
        Maximum L-BFGS iterations.
    tol : float
        Stop when the largest projected-gradient component is below ``tol``.
        If L-BFGS stalls above it, up to ``NEWTON_STEPS`` Newton steps with
        the exact Hessian follow (models with at most ``NEWTON_MAX_PARAMS``
        parameters).
    max_bytes : int, optional
        Memory budget of one junction-tree calibration.
    callback : callable, optional
        Called as ``callback(iteration, objective=..., grad_max=...)``.

    Returns
    -------
    n_iter : int
        L-BFGS iterations plus Newton steps.
    grad_max : float
        Largest projected-gradient component at the solution.
    """
    tree, layout = model.get_junction_tree(max_bytes), model.layout

    def objective(theta):
        cal = tree.calibrate(layout.full_tables(theta), layout, max_bytes=max_bytes)
        mu = cal.clique_marginals()[layout.theta_pos]
        ridge, ridge_g = ridge_value_and_gradient(alpha, theta)
        f = cal.log_z - theta @ mean_stats + ridge
        g = mu - mean_stats + ridge_g
        return f, g

    theta, _, g, n_iter = minimize_in_box(objective, model.theta, max_iter, tol, callback)
    n_newton = 0
    if n_iter < max_iter:
        theta, g, n_newton = _newton_polish(model, objective, theta, g, alpha, tol, max_bytes)
    model.theta = theta
    return n_iter + n_newton, projected_max(theta, g)


def _newton_polish(model, objective, theta, g, alpha, tol, max_bytes):
    """Newton steps with the exact Hessian while they reduce the gradient.

    L-BFGS stalls near ``|grad| ~ 1e-9`` (the line search meets float64's precision on the
    objective); Newton steps on the gradient finish the job for models small enough for an
    exact Hessian. Returns the point, its gradient and the number of steps taken.
    """
    n_newton = 0
    for _ in range(NEWTON_STEPS):
        if projected_max(theta, g) <= tol or len(theta) > NEWTON_MAX_PARAMS:
            break
        if np.any(np.abs(theta) >= THETA_BOUND):
            break
        H = exact_hessian(model, theta, max_bytes) + ridge_matrix(alpha, len(theta))
        step = np.linalg.lstsq(H, -g, rcond=None)[0]
        new = np.clip(theta + step, -THETA_BOUND, THETA_BOUND)
        _, g_new = objective(new)
        if projected_max(new, g_new) >= projected_max(theta, g):
            break
        theta, g = new, g_new
        n_newton += 1
    return theta, g, n_newton


def exact_hessian(model, theta, max_bytes=None):
    """Hessian of ``log Z``: the covariance of the features, computed exactly.

    Row ``a`` is ``mu_a * (E[phi | phi_a = 1] - mu)``; the conditional
    expectation is one junction-tree calibration with the clique of ``a``
    clamped to the assignment of ``a``. Costs ``n_params`` calibrations.
    """
    tree, lay = model.get_junction_tree(max_bytes), model.layout
    full = lay.full_tables(theta)
    mu = tree.calibrate(full, lay, max_bytes=max_bytes).clique_marginals()[lay.theta_pos]
    H = np.empty((len(theta), len(theta)))
    for b, clique in enumerate(lay.cliques):
        for j in range(lay.block_sizes[b]):
            a = lay.block_offsets[b] + j
            states = np.unravel_index(j, lay.block_shapes[b])
            evidence = {v: int(s) + 1 for v, s in zip(clique, states)}
            cond = tree.calibrate(full, lay, evidence=evidence, max_bytes=max_bytes).clique_marginals()
            H[a] = mu[a] * (cond[lay.theta_pos] - mu)
    return 0.5 * (H + H.T)


def maximal_factors(model):
    """The blocks IPF fits: the graph's factors and every variable in none (indices into ``cliques``)."""
    graph = model.graph
    covered = {v for f in graph.factors for v in f}
    factors = [model.cliques.index(f) for f in graph.factors]
    return factors + [model.cliques.index((v,)) for v in range(graph.n_variables) if v not in covered]


def fit_exact(model, counts, total, alpha, *, extended, max_iter, tol, max_bytes=None, callback=None):
    """Exact maximum likelihood from the data's clique-table counts.

    Parameters
    ----------
    model : DiscreteMRF
        Its ``theta`` is the start of L-BFGS; it receives the result.
    counts : ndarray of shape (n_table,)
        Counts (or summed row weights) of every joint state of every clique
        (:func:`~skmrf.estimators._existence.table_counts`).
    total : float
        The number of rows behind ``counts`` (the sum of their weights).
    alpha : float or CentredRidge
        Ridge ``alpha / 2 * ||theta||^2`` on the mean negative log-likelihood, or the centred
        ridge (:mod:`skmrf._penalty`).
    extended : bool
        Fit the extended MLE by iterative proportional fitting
        (:func:`~skmrf._solvers.ipf.extended_max_likelihood`) instead: for ``alpha = 0`` with an
        empty cell, where no finite maximiser exists.
    max_iter, tol : int, float
        L-BFGS iterations and gradient tolerance (IPF: sweeps and marginal gap).
    max_bytes : int, optional
        Memory budget of one junction-tree calibration.
    callback : callable, optional
        ``callback(iteration, objective=..., grad_max=...)`` after each L-BFGS iteration.

    Returns
    -------
    theta : ndarray of shape (n_params,)
    info : ExactFit
    """
    if extended:
        n_iter, gap, gain = extended_max_likelihood(model, counts, maximal_factors(model), max_iter, tol, max_bytes)
        return model.theta, ExactFit(n_iter, gap, True, gain)
    mean_stats = counts[model.layout.theta_pos] / total
    n_iter, grad_max = fit_max_likelihood(model, mean_stats, alpha, max_iter, tol, max_bytes, callback)
    return model.theta, ExactFit(n_iter, grad_max, False, 0.0)
