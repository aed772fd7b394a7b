"""Projected gradient descent on a mean negative log-likelihood (Algorithm 1 of Domke, 2015)."""

from __future__ import annotations

import numpy as np

__all__ = ["projected_gradient"]


def projected_gradient(expectation, mean_stats, project, *, lipschitz, ridge=0.0, n_iter, x0=None, callback=None):
    """Minimise ``A(x) - x . t_bar + ridge / 2 ||x||^2`` over a convex set, with step ``1 / L``.

    Every step is ``x_k = project(x_{k-1} - (E_{x_{k-1}}[t] - t_bar + ridge x_{k-1}) / L)``,
    where the expectation ``E_x[t]`` (the gradient of ``A``) may be a Monte-Carlo estimate.

    Parameters
    ----------
    expectation : callable
        ``expectation(x)`` returns (an estimate of) ``E_x[t]``, an ndarray shaped like ``x``.
    mean_stats : ndarray of shape (n_params,)
        The empirical mean statistics ``t_bar``.
    project : callable
        ``project(x)``: the Euclidean projection onto the parameter set (a new array).
    lipschitz : float
        ``L``, the Lipschitz constant of the gradient; the step is ``1 / L``.
    ridge : float, default=0.0
        ``lambda``.
    n_iter : int
        ``K``, the number of steps.
    x0 : ndarray of shape (n_params,), optional
        The start; zero by default (as in the paper).
    callback : callable, optional
        ``callback(k, x=x_k, gradient=...)`` after step ``k`` (1-based).

    Returns
    -------
    x_last : ndarray of shape (n_params,)
        ``x_K``.
    x_mean : ndarray of shape (n_params,)
        ``(1/K) sum_{k=1}^K x_k``, the output of Theorem 2.

    References
    ----------
    J. Domke, "Maximum likelihood learning with arbitrary treewidth via
    fast-mixing parameter sets", NIPS 2015, Algorithm 1.
    """
    x = np.zeros(len(mean_stats)) if x0 is None else np.array(x0, dtype=float)
    total = np.zeros_like(x)
    for k in range(1, n_iter + 1):
        grad = expectation(x) - mean_stats + ridge * x
        x = project(x - grad / lipschitz)
        total += x
        if callback is not None:
            callback(k, x=x, gradient=grad)
    return x, total / max(n_iter, 1)
