"""The adaptive schedule of MCMC maximum likelihood: persistent chains, natural-gradient steps,
a stopping rule on the gradient's noise level and the average of the iterates after it fired.

It works in the package's parametrisation, for pairwise models with any numbers of states,
with or without a constraint set (:mod:`.constraint`). No guarantee comes with it; its
accuracy is measured in ``benchmarks/mcmc_defaults.py``. Its "auto" chains, sweeps and
averaged steps come from :mod:`.defaults`.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from ..._penalty import ridge_gradient, ridge_scale
from ..._solvers.stochastic_gradient import stochastic_gradient
from .chains import Chains, indicator_matrix, largest_covariance_eigenvalue

__all__ = [
    "ADAPTIVE_BURN_IN",
    "ADAPTIVE_HOLD",
    "ADAPTIVE_MIN_ITER",
    "ADAPTIVE_STEP_RATIO_MAX",
    "ADAPTIVE_WINDOW",
    "AdaptiveFit",
    "fit_adaptive",
    "moment_ratio",
    "moment_ratio_max",
]

#: Fewest steps before the stopping rule may end the first phase, the rule's window, and the
#: sweeps that bring the chains (started at data rows) to the start parameters.
ADAPTIVE_MIN_ITER = 50
ADAPTIVE_WINDOW = 20
ADAPTIVE_BURN_IN = 20
#: The stopping rule must hold over a whole window of consecutive steps (one dip of the noise
#: ratio is not convergence, #39), and fires only while the window's step noise ratio is below
#: ``ADAPTIVE_STEP_RATIO_MAX`` (:func:`~skmrf._solvers.stochastic_gradient.stochastic_gradient`).
#: Measured on iterates that settled: 1.3 to 1.5 on an 8 x 8 grid with 2000 rows, 2.8 to 3.3 on
#: the 32 x 32 Ising torus at K = 0.3 with 1000 rows and 4000 chains; with the default 1063
#: chains the same fit's natural-gradient steps oscillated, at 26 to 816.
ADAPTIVE_HOLD = ADAPTIVE_WINDOW
ADAPTIVE_STEP_RATIO_MAX = 10.0
#: Damping added to the chains' feature covariance in the natural step (it bounds the step in
#: directions the chains barely see); the ridge ``alpha`` is added to it.
NATURAL_DAMPING = 1e-2
#: The fraction of the natural step taken. A full step (1) leaves a bias of order 1 / n_chains in
#: the averaged iterate (constant-step stochastic approximation on a curved objective): on a
#: 12x12 grid with 10^4 rows and 1000 chains, 1.6 % from exact ML for the mean of four fits
#: against 0.75 % with 0.5, where the error is the averaged noise alone.
NATURAL_STEP = 0.5


class AdaptiveFit(NamedTuple):
    """What :func:`fit_adaptive` ran."""

    n_iter: int
    converged: bool
    """Whether the stopping rule ended the run (True for a fixed number of steps)."""
    lipschitz: float | None
    """``L`` of the steps ``gradient / L``; None for natural-gradient steps."""
    trace: dict
    """One value per step: ``"gradient_norm"``, ``"noise_ratio"``, ``"step_noise_ratio"``, ``"step_norm"``,
    ``"time"``."""
    n_averaged: int
    """Iterates in the returned mean."""
    moment_ratio: float | None = None
    """:func:`moment_ratio` at the returned parameters on fresh chains; None when not checked."""
    moment_ratio_max: float | None = None
    """:func:`moment_ratio_max` of the check: above it, ``converged`` is False."""


def moment_ratio_max(n_free):
    """The largest :func:`moment_ratio` accepted on ``n_free`` parameters: 2, or the 0.1 % tail of
    ``chi2(n_free) / n_free`` where that is larger (a few parameters). At the optimum each
    ``g_j^2 / var_j`` is about a ``chi2(1)`` draw (the data's moments are exact, the returned
    average is near the optimum), so their mean is about 1; 2 leaves room for chains that are
    slightly short of equilibrium."""
    from scipy.stats import chi2

    return max(2.0, float(chi2.isf(1e-3, max(n_free, 1)) / max(n_free, 1)))


def moment_ratio(layout, colours, rows, mean_stats, alpha, theta, constraint, *, n_chains, n_sweeps, rng, parallel):
    """Check the moment conditions at ``theta`` on fresh chains: ``mean_j g_j^2 / var_j``.

    ``g = E_theta[t] - t_bar + alpha theta`` is zero at the (ridge) maximum-likelihood estimate;
    the expectation comes from ``n_chains`` new chains started at data rows and run
    ``ADAPTIVE_BURN_IN + n_sweeps`` sweeps under ``theta`` alone, so nothing of the fit's own
    chains (which can drift with the iterates) enters. ``var_j`` is its Monte-Carlo variance plus
    the data's own sampling variance of ``t_bar_j``, ``t_bar_j (1 - t_bar_j) / n`` (the features are
    indicators; ``n`` the sum of the weights): a moment gap far below what another sample of the
    data would move is no failure. Without that term the check grows with the chains: with 55,279
    chains on the 16 x 16 Ising torus at K_c (10,000 rows) it refused a fit within 0.01 of the true
    couplings; with it, the oscillating fit of the 32 x 32 torus (1000 rows, 1063 chains) still
    measures 21.1. Parameters held at a bound of a box constraint are left out (the gradient need
    not vanish there). Returns ``(ratio, n_free)``, or ``(None, 0)`` for a spectral constraint,
    whose optimum does not zero any coordinate of the gradient.
    """
    if constraint.bound is not None and constraint.box is None:
        return None, 0
    # persistent: the measured sweeps continue the burnt-in chains
    fresh = Chains(layout, colours, rows, n_chains, n_sweeps, "data", True, rng, parallel)
    fresh.advance(theta, ADAPTIVE_BURN_IN, statistic=False)
    mean, variance = fresh(theta)
    variance = variance + mean_stats * (1 - mean_stats) / rows.total
    grad = mean - mean_stats + ridge_gradient(alpha, theta)
    free = np.ones(len(theta), dtype=bool)
    if constraint.box is not None:
        pair, bound = constraint.box
        free[pair] = np.abs(theta[pair]) < bound * (1 - 1e-9)
    return float(np.mean(grad[free] ** 2 / variance[free])), int(free.sum())


def _natural_direction(x, gradient, chains, box, damping):
    """:data:`NATURAL_STEP` times the natural step of ``chains``; plain on pair entries held at a box.

    ``box`` is ``(pair, bound)`` or None. An entry at its bound whose gradient points out of
    the box is active (two-metric projection, Bertsekas 1982).
    """
    free = np.ones(len(x), dtype=bool)
    if box is not None:
        pair, bound = box
        xp, gp = x[pair], gradient[pair]
        free[pair] = ~(((xp >= bound * (1 - 1e-12)) & (gp < 0)) | ((xp <= -bound * (1 - 1e-12)) & (gp > 0)))
    return NATURAL_STEP * chains.natural_step(gradient, free, damping)


# Over 60 lines by its docstring (the parameters, and the rule's derivation); the body is under 40.
def fit_adaptive(
    layout,
    colours,
    rows,
    mean_stats,
    alpha,
    theta0,
    constraint,
    *,
    n_chains,
    n_sweeps,
    n_iter,
    tol,
    n_average=0,
    init,
    persistent,
    lipschitz,
    average,
    rng,
    parallel,
    callback=None,
    expectation=None,
):
    """Maximum likelihood by projected stochastic (natural) gradient with persistent chains.

    Parameters
    ----------
    layout : CliqueLayout
        The (pairwise) model's layout.
    colours : list of ndarray
        Colour classes of the graph, for the chromatic Gibbs sweeps.
    rows : Rows
        The data (chains started at data rows, drawn by weight).
    mean_stats : ndarray of shape (n_params,)
        The data's mean features (weighted).
    alpha : float or CentredRidge
        Ridge on the mean negative log-likelihood (:mod:`skmrf._penalty`).
    theta0 : ndarray of shape (n_params,)
        The start (inside the constraint set).
    constraint : Constraint
        The set and its projection (:func:`.constraint.constraint_set`).
    n_chains, n_sweeps, n_iter : int
        Chains, Gibbs sweeps per step, steps at most (:func:`.defaults.plan_adaptive`).
    tol : float or None
        The stopping rule (:func:`~skmrf._solvers.stochastic_gradient.stochastic_gradient`);
        None runs ``n_iter`` steps and averages their last half.
    n_average : int, default=0
        Fewest steps averaged after the rule fired (with ``tol``).
    init, persistent : str, bool
        The chains' start states and whether they persist (:class:`.chains.Chains`).
    lipschitz : float or None
        Steps ``gradient / lipschitz``; None: natural-gradient steps, or (spectral set) ``L``
        measured on the chains.
    average : bool
        Return the mean of the iterates after the rule fired, at least the last half (else the
        last iterate).
    rng : numpy.random.Generator
    parallel : joblib.Parallel or None
        Runs the chain blocks.
    callback : callable, optional
        ``callback(k, x=..., gradient=..., noise_ratio=..., step_norm=...)`` after each step.
    expectation : callable, optional
        ``expectation(theta) -> (mean features, variance)`` replacing the chains (tests pass
        exact junction-tree expectations); then the steps are ``gradient / L`` with
        ``L = lipschitz`` or ``1 + alpha``.

    Returns
    -------
    theta : ndarray of shape (n_params,)
    info : AdaptiveFit
    """
    if expectation is None:
        chains = Chains(layout, colours, rows, n_chains, n_sweeps, init, persistent, rng, parallel)
        chains.advance(theta0, ADAPTIVE_BURN_IN, statistic=False)
        expectation = chains
    else:
        chains = None
    L, direction = lipschitz, None
    if L is None and chains is not None and (constraint.bound is None or constraint.box is not None):
        direction = partial(
            _natural_direction, chains=chains, box=constraint.box, damping=NATURAL_DAMPING + ridge_scale(alpha)
        )
    elif L is None and chains is not None:
        # Floored at a fair coin's variance: a few chains can see next to no variance.
        L = max(largest_covariance_eigenvalue(indicator_matrix(layout, chains.states())), 0.25) + ridge_scale(alpha)
    elif L is None:
        L = 1.0 + ridge_scale(alpha)
    result = stochastic_gradient(
        expectation,
        mean_stats,
        constraint.project_theta,
        theta0,
        lipschitz=L,
        direction=direction,
        ridge=alpha,
        n_iter=n_iter,
        min_iter=ADAPTIVE_MIN_ITER if tol is not None else 0,
        tol=tol,
        window=ADAPTIVE_WINDOW,
        hold=ADAPTIVE_HOLD,
        step_ratio_max=ADAPTIVE_STEP_RATIO_MAX,
        n_average=n_average,
        callback=callback,
    )
    theta = result.x_mean if average else result.x_last
    converged = result.converged or tol is None
    n_averaged = result.n_averaged if average else 1
    ratio = limit = None
    if chains is not None:
        ratio, n_free = moment_ratio(
            layout, colours, rows, mean_stats, alpha, theta, constraint,
            n_chains=n_chains, n_sweeps=n_sweeps, rng=rng, parallel=parallel,
        )  # fmt: skip
        if ratio is not None:
            limit = moment_ratio_max(n_free)
            converged = converged and ratio <= limit
    fit = AdaptiveFit(result.n_iter, converged, None if L is None else float(L), result.trace, n_averaged, ratio, limit)
    return theta, fit
