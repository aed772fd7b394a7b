"""Projected stochastic (natural) gradient with a noise-level stopping rule and iterate averaging.

The practical schedule of :class:`~skmrf.MCMCMaxLikelihood` (``schedule="adaptive"``): the
gradient of a mean negative log-likelihood ``A(x) - x . t_bar + ridge / 2 ||x||^2`` estimated
from persistent Markov chains, a step given by a ``direction`` (a natural-gradient step, or
``gradient / L``), and the average of the iterates of the second half of the run
(Polyak-Ruppert averaging, which removes most of the steps' noise). The run stops when the
gradient estimate is no larger than its own Monte-Carlo noise.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

__all__ = ["StochasticGradientResult", "stochastic_gradient"]


class StochasticGradientResult(NamedTuple):
    """What :func:`stochastic_gradient` returns.

    ``trace`` maps ``"gradient_norm"``, ``"noise_ratio"``, ``"step_norm"`` (``||x_k - x_{k-1}||``)
    and ``"time"`` to one value per step.
    """

    x_last: np.ndarray
    x_mean: np.ndarray
    n_iter: int
    converged: bool
    trace: dict


def stochastic_gradient(
    expectation,
    mean_stats,
    project,
    x0,
    *,
    lipschitz=None,
    direction=None,
    ridge=0.0,
    n_iter,
    min_iter=0,
    tol=None,
    window=20,
    callback=None,
):
    """Minimise ``A(x) - x . t_bar + ridge / 2 ||x||^2`` with noisy gradients ``E_x[t]``.

    Every step is ``x_k = project(x_{k-1} - direction(x_{k-1}, g_k))`` with the gradient
    estimate ``g_k = E_{x_{k-1}}[t] - t_bar + ridge x_{k-1}``; by default the direction is
    ``g_k / L``. With ``tol``, the run stops after ``min_iter`` steps once the *noise ratio*
    of the mean gradient over the last ``window`` steps, ``mean_j gbar_j^2 / (var_j /
    window)``, is below ``1 + tol``: ``var`` is the Monte-Carlo variance of the expectation
    part of one estimate, so the ratio is about 1 or less once the iterates only fluctuate
    around the optimum (their fluctuations cancel in the mean) and grows with any drift.

    Parameters
    ----------
    expectation : callable
        ``expectation(x) -> (mean, variance)``: an estimate of ``E_x[t]`` and the variance of
        that estimate, per statistic (arrays shaped like ``x``).
    mean_stats : ndarray of shape (n_params,)
        ``t_bar``.
    project : callable
        Euclidean projection onto the parameter set (a new array).
    x0 : ndarray of shape (n_params,)
        The start.
    lipschitz : float, optional
        The step ``g / lipschitz`` when no ``direction`` is given.
    direction : callable, optional
        ``direction(x, g) -> step`` (for instance a natural-gradient step).
    ridge : float, default=0.0
    n_iter : int
        Steps at most (exactly, without ``tol``).
    min_iter : int, default=0
    tol : float or None, default=None
        The stopping rule's excess of the noise ratio over 1; None runs ``n_iter`` steps.
    window : int, default=20
    callback : callable, optional
        ``callback(k, x_k, gradient, noise_ratio, step_norm)`` after step ``k`` (1-based).

    Returns
    -------
    StochasticGradientResult
        ``x_mean`` averages the iterates ``x_k`` for ``k > n_iter // 2``.
    """
    x = np.array(x0, dtype=float)
    path, recent = [], []
    gradient_norm, noise_ratio, step_norm, elapsed = [], [], [], []
    start = time.perf_counter()
    converged = False
    for k in range(1, n_iter + 1):
        mean, variance = expectation(x)
        grad = mean - mean_stats + ridge * x
        recent = (recent + [(grad, variance)])[-window:]
        mean_grad = np.mean([g for g, _ in recent], axis=0)
        ratio = float(np.mean(mean_grad**2 * len(recent) / np.mean([v for _, v in recent], axis=0)))
        previous = x
        x = project(x - (grad / lipschitz if direction is None else direction(x, grad)))
        path.append(x)
        gradient_norm.append(float(np.linalg.norm(grad)))
        noise_ratio.append(ratio)
        step_norm.append(float(np.linalg.norm(x - previous)))
        elapsed.append(time.perf_counter() - start)
        if callback is not None:
            callback(k, x, grad, ratio, step_norm[-1])
        if tol is not None and k >= max(min_iter, window) and ratio < 1 + tol:
            converged = True
            break
    n_run = len(path)
    trace = {
        "gradient_norm": np.array(gradient_norm),
        "noise_ratio": np.array(noise_ratio),
        "step_norm": np.array(step_norm),
        "time": np.array(elapsed),
    }
    x_mean = np.mean(path[n_run // 2 :], axis=0) if path else x
    return StochasticGradientResult(x, project(x_mean), n_run, converged, trace)
