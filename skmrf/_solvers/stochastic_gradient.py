"""Projected stochastic (natural) gradient with a noise-level stopping rule and iterate averaging.

The practical schedule of :class:`~skmrf.MCMCMaxLikelihood` (``schedule="adaptive"``): the
gradient of a mean negative log-likelihood ``A(x) - x . t_bar + ridge / 2 ||x||^2`` estimated
from persistent Markov chains, a step given by a ``direction`` (a natural-gradient step, or
``gradient / L``), and the average of the iterates once the run has reached its noise level
(Polyak-Ruppert averaging, which removes most of the steps' noise). The run leaves its first
phase when the gradient estimate is no larger than its own Monte-Carlo noise.

Memory does not grow with the number of steps: the average is a running sum and the stopping
rule's window a ring of ``window`` gradients and variances, so the solver keeps
``2 * window + 3`` vectors of the parameters' length whatever ``n_iter`` is, and the trace
scalars per step.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from .._penalty import ridge_gradient

__all__ = ["StochasticGradientResult", "stochastic_gradient"]


class StochasticGradientResult(NamedTuple):
    """What :func:`stochastic_gradient` returns.

    ``trace`` maps ``"gradient_norm"``, ``"noise_ratio"``, ``"step_noise_ratio"``, ``"step_norm"``
    (``||x_k - x_{k-1}||``) and ``"time"`` to one value per step; ``n_averaged`` is the number of
    iterates in ``x_mean``.
    """

    x_last: np.ndarray
    x_mean: np.ndarray
    n_iter: int
    converged: bool
    trace: dict
    n_averaged: int


class _Window:
    """The last ``size`` gradients and variances (a ring), for the noise ratio of their mean."""

    def __init__(self, size, n):
        self.grad = np.empty((size, n))
        self.var = np.empty((size, n))
        self.step = np.empty(size)
        self.count = 0

    def push(self, grad, variance):
        """Store one step's gradient and variance; return the noise ratio of the window's mean and
        the mean over the window of each step's own ratio ``mean_j g_j^2 / var_j``."""
        slot = self.count % len(self.grad)
        self.grad[slot], self.var[slot] = grad, variance
        with np.errstate(divide="ignore", invalid="ignore"):
            self.step[slot] = np.mean(np.where(variance > 0, grad**2 / variance, 0.0))
        self.count += 1
        m = min(self.count, len(self.grad))
        mean_grad = self.grad[:m].mean(axis=0)
        return float(np.mean(mean_grad**2 * m / self.var[:m].mean(axis=0))), float(self.step[:m].mean())


# Over 60 lines by its docstring (the parameters, and the rule's derivation); the body is under 40.
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
    hold=1,
    step_ratio_max=None,
    n_average=0,
    callback=None,
):
    """Minimise ``A(x) - x . t_bar + ridge / 2 ||x||^2`` with noisy gradients ``E_x[t]``.

    Every step is ``x_k = project(x_{k-1} - direction(x_{k-1}, g_k))`` with the gradient
    estimate ``g_k = E_{x_{k-1}}[t] - t_bar + ridge x_{k-1}``; by default the direction is
    ``g_k / L``. The *noise ratio* of step ``k`` is ``mean_j gbar_j^2 / (var_j / w)`` for the
    mean ``gbar`` of the last ``w = min(k, window)`` gradient estimates: ``var`` is the
    Monte-Carlo variance of the expectation part of one estimate, so the ratio is about 1 or
    less once the iterates only fluctuate around the optimum (their fluctuations cancel in the
    mean) and grows with any drift. The *step noise ratio* is the mean over the same window of
    each step's own ``mean_j g_j^2 / var_j``: a few for iterates fluctuating around the optimum
    (the gradient's noise plus that of the iterate; measured 1.3 to 3.3 with natural steps of
    0.5), and large when the steps oscillate: an oscillation whose gradients alternate
    in sign cancels in the window's mean, so the noise ratio alone can dip below its threshold
    while the gradient grows (on the 32 x 32 Ising torus at ``K = 0.3`` with 1000 rows, a dip to
    1.31 stopped a run whose gradient norm had grown from 1.35 to 26).

    Without ``tol`` the run has ``n_iter`` steps and ``x_mean`` is the mean of the iterates
    ``x_k``, ``k > n_iter // 2`` (the last half). With ``tol`` it has two phases: the first
    ends at the first step ``k_c >= max(min_iter, window)``, ``k_c <= n_iter // 2``, whose
    noise ratio and those of the ``hold - 1`` steps before it are below ``1 + tol`` and whose
    step noise ratio is below ``step_ratio_max`` (the run has *converged*); the second runs
    ``max(n_average, k_c)`` more steps (at most up to ``n_iter``) and ``x_mean`` is their
    mean, so it averages only iterates after convergence and at least the last half of the
    run. If the rule has not fired by step ``n_iter // 2`` the run goes on to ``n_iter``, not
    converged, and ``x_mean`` is the mean of its last half.

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
    ridge : float or CentredRidge, default=0.0
        The ridge penalty's weight (or the centred ridge, :mod:`skmrf._penalty`).
    n_iter : int
        Steps at most (exactly, without ``tol``).
    min_iter : int, default=0
        Fewest steps of the first phase (with ``tol``).
    tol : float or None, default=None
        The stopping rule's excess of the noise ratio over 1; None runs ``n_iter`` steps.
    window : int, default=20
        Steps in the noise ratio's mean.
    hold : int, default=1
        Consecutive steps whose noise ratio must be below ``1 + tol``.
    step_ratio_max : float, optional
        Largest step noise ratio at which the rule may fire; None: no such condition.
    n_average : int, default=0
        Fewest steps averaged after the rule fired (with ``tol``).
    callback : callable, optional
        ``callback(k, x=x_k, gradient=..., noise_ratio=..., step_norm=...)`` after step ``k`` (1-based).

    Returns
    -------
    StochasticGradientResult
        The last iterate, the average, the steps run, whether the rule fired, the trace and the
        number of averaged iterates.
    """
    x = np.array(x0, dtype=float)
    noise = _Window(window, len(x))
    total, n_averaged = np.zeros_like(x), 0
    average_from = n_iter // 2 + 1  # the first averaged step; moved when the rule fires
    end = n_iter
    gradient_norm, noise_ratio, step_noise_ratio, step_norm, elapsed = [], [], [], [], []
    start = time.perf_counter()
    converged = False
    below = 0  # consecutive steps with the noise ratio under 1 + tol
    k = 0
    while k < end:
        k += 1
        mean, variance = expectation(x)
        grad = mean - mean_stats + ridge_gradient(ridge, x)
        ratio, step_ratio = noise.push(grad, variance)
        previous = x
        x = project(x - (grad / lipschitz if direction is None else direction(x, grad)))
        if k >= average_from:
            total += x
            n_averaged += 1
        gradient_norm.append(float(np.linalg.norm(grad)))
        noise_ratio.append(ratio)
        step_noise_ratio.append(step_ratio)
        step_norm.append(float(np.linalg.norm(x - previous)))
        elapsed.append(time.perf_counter() - start)
        if callback is not None:
            callback(k, x=x, gradient=grad, noise_ratio=ratio, step_norm=step_norm[-1])
        below = below + 1 if tol is not None and ratio < 1 + tol else 0
        calm = step_ratio_max is None or step_ratio < step_ratio_max
        if tol is not None and not converged and max(min_iter, window) <= k < average_from and below >= hold and calm:
            converged = True
            average_from, end = k + 1, min(n_iter, k + max(n_average, k))
    trace = {
        "gradient_norm": np.array(gradient_norm),
        "noise_ratio": np.array(noise_ratio),
        "step_noise_ratio": np.array(step_noise_ratio),
        "step_norm": np.array(step_norm),
        "time": np.array(elapsed),
    }
    x_mean = total / n_averaged if n_averaged else x
    return StochasticGradientResult(x, project(x_mean), k, converged, trace, n_averaged)
