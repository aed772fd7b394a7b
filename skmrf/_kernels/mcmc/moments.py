"""The moment-matching schedule of MCMC maximum likelihood (Boltzmann-machine DCA).

What bmDCA and adabmDCA run to make a Potts model *generative*: persistent Gibbs chains, a
start at the independent-site model (couplings zero, fields the log frequencies), constant-rate
gradient steps, and a stop when the chains reproduce the data's connected correlations
(Pearson r of ``C_ij(a, b) = f_ij(a, b) - f_i(a) f_j(b)``) and one-site frequencies. Here the
steps shrink once the chains meet the criterion (:data:`DECAY_STEPS`), and fresh chains confirm the stop.

The steps are taken in *centred* coordinates (Montavon and Mueller 2012; Melchior, Fischer and
Wiskott 2016): the energy ``sum_i b_i . x_i + sum_ij (x_i - mu_i)' J_ij (x_j - mu_j)`` with
``mu`` the data's one-site frequencies, which is the package's model with the same couplings and
fields ``theta_i = b_i - sum_j J_ij mu_j`` (:meth:`Centred.to_theta`). A coupling's gradient
there is the mismatch of the connected correlation instead of the raw pair frequency, so moving
a coupling no longer moves its sites' frequencies; each coordinate's step is divided by the
variance of its centred feature under the data's independent-site model (plus ``damping``), a
fixed diagonal preconditioner. The gradient is the chain rule of the package's objective, so
the fixed point is the penalised maximum likelihood estimate whatever the coordinates.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ..._penalty import ridge_gradient
from ..._utils._budgets import MOMENTS_CHAIN_BLOCK
from .chains import Chains

__all__ = [
    "Centred",
    "MomentsFit",
    "confirmations",
    "connected_pearson",
    "decorrelation",
    "fit_moments",
    "independent_start",
]

#: Sweeps that bring the chains (started at data rows) to the independent-site start, where one
#: sweep already draws exactly from it.
MOMENTS_BURN_IN = 1

#: Standard errors by which the chains' overlap with their own states one step earlier may exceed
#: the overlap between different chains for the chains to count as decorrelated over the step.
DECORRELATION_SIGMAS = 3.0

#: Sweeps per step at which ``n_sweeps="auto"`` stops doubling (5 doubled 8 times).
MAX_AUTO_SWEEPS = 1280

#: Sweeps per step at the start of ``n_sweeps="auto"``.
AUTO_START_SWEEPS = 5

#: A stop is confirmed by fresh chains: ``n_chains`` chains started at uniformly random states and
#: run CONFIRM_SWEEPS sweeps under the parameters, whose moments must meet the targets too. #42:
#: persistent chains can meet them while the model's own equilibrium does not (on 75 columns of DHFR
#: with damping 0.01, persistent chains' r 0.90-0.92, fresh chains' 0.09-0.13). After a confirmation
#: that failed, the steps run at least CONFIRM_SPACING times its sweeps before the next one, so
#: confirmations take at most a fifth of the run's sweeps.
CONFIRM_SWEEPS = 100
CONFIRM_SPACING = 4

#: From the first step whose chains meet the targets on, the estimate is an average of the
#: iterates: their mean, then (after 1 / AVERAGE_RATE of them) an exponential average over about
#: as many, as the adaptive schedule averages once its rule has fired. #42: constant steps leave
#: the iterate as noisy as the chains' moments; on 75 columns of DHFR (4000 chains, rate 0.6)
#: fresh chains of successive iterates gave r 0.83 to 0.93, of the averages 0.93.
AVERAGE_RATE = 0.02

#: From the first step whose chains meet the targets on, the steps shrink as ``DECAY_STEPS /
#: (DECAY_STEPS + j)`` after ``j`` more steps: stochastic approximation's decreasing steps, with which
#: stochastic maximum likelihood converges (Younes 1999), where constant steps outrun the persistent
#: chains. #42, chorismate mutase (96 columns, 4000 chains, rate 1): fresh r at the checks 0.84, 0.86,
#: then 0.69, 0.32, 0.22 (0.14 at step 1105) while the persistent chains reached 0.99; steps shrinking
#: on a scale of 20 steps: 0.84, 0.89, 0.88, 0.86, 0.88 up to step 400 (10000 chains: 0.86, 0.90,
#: then 0.86, 0.41, 0.20 at rate 1; 0.86, 0.92, 0.92, 0.91, 0.91 shrinking). On 75 columns of DHFR
#: both stopped at step 278 (fresh r 0.933 and 0.931); on a scale of 50 steps the checks there
#: plateaued at 0.92-0.93 and the stop came at step 838. Shrinking only once a check had fallen
#: 0.02 below the best came too late (chorismate mutase 0.69, 0.35, 0.30; 10000 chains 0.86, 0.59, 0.45).
DECAY_STEPS = 20

#: Per-coordinate step multipliers (delta-bar-delta, Jacobs 1988; Rprop, Riedmiller and Braun
#: 1993): halved when a coordinate's gradient changes sign between steps, raised by a fifth (up to
#: 1) when it keeps it, never below RATE_FLOOR. A positive diagonal rescaling, so the fixed point
#: is unchanged. Measured on 75 columns of DHFR with chains at equilibrium (4000 chains, rate 0.05,
#: floor 0.01 then): without it the connected r alternated between steps (0.84, 0.90, 0.84, ...)
#: and fell to 0.59 at step 53; with it r rose steadily (0.91 at step 40, 0.92 at 55, 0.927 at 80),
#: and with RATE_DOWN 0.8 more slowly (0.90 at step 40). Halving drives the rates of coordinates
#: whose gradient is mostly noise to the floor: on a 5-cycle with 8000 chains, 300 steps end at
#: 0.19 of the start's distance from exact ML with floor 0.01, 0.12 with 0.2, 0.056 with fixed rates.
RATE_DOWN, RATE_UP, RATE_FLOOR = 0.5, 1.2, 0.2


class MomentsFit(NamedTuple):
    """What :func:`fit_moments` ran."""

    n_iter: int
    converged: bool
    """Whether fresh chains of the estimate reached the target correlations."""
    n_averaged: int
    """Iterates in the estimate (1: the last iterate, where no step's chains met the targets)."""
    trace: dict
    """One value per step: ``"pearson_connected"``, ``"pearson_frequencies"``, ``"gradient_norm"``, ``"time"``,
    ``"n_sweeps"``, ``"overlap_self"``, ``"overlap_between"`` (:func:`decorrelation`), ``"decorrelated"``, and
    ``"fresh_connected"``, ``"fresh_frequencies"``: the fresh chains' r (NaN on steps without a confirmation), and
    ``"step_scale"``: the factor of the step (:data:`DECAY_STEPS`)."""


class Centred:
    """Centred coordinates of a pairwise layout around one-site frequencies ``mu``.

    ``mu`` is the data's mean of the unary features (``theta`` order); the coordinates ``c``
    are ``theta`` with every unary entry replaced by ``b_i(a) = theta_i(a) + sum_j sum_b
    J_ij(a, b) mu_j(b)`` (pair entries unchanged).
    """

    def __init__(self, layout, mu):
        sizes = np.array([len(c) for c in layout.cliques])
        if sizes.max(initial=1) > 2:
            raise ValueError("The moment-matching schedule is defined for pairwise models.")
        offsets, n_states = layout.block_offsets, layout.n_states
        unary = np.full(len(n_states), -1, dtype=np.int64)
        for k in np.flatnonzero(sizes == 1):
            unary[layout.cliques[k][0]] = offsets[k]
        pairs = np.flatnonzero(sizes == 2)
        ends = np.array([layout.cliques[k] for k in pairs], dtype=np.int64).reshape(-1, 2)
        width = n_states[ends[:, 1]] - 1  # the second end's states but 0: the block's row length
        length = (n_states[ends[:, 0]] - 1) * width
        block = np.repeat(np.arange(len(pairs)), length)
        local = np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length)
        a, b = local // width[block], local % width[block]
        self.pair = offsets[pairs][block] + local
        self.row, self.col = unary[ends[block, 0]] + a, unary[ends[block, 1]] + b
        # Sums of a block's entries over a (one per b), over b (one per a), and over both
        height = n_states[ends[:, 0]] - 1
        self.by_b = np.repeat(np.cumsum(width) - width, length) + b
        self.by_a = np.repeat(np.cumsum(height) - height, length) + a
        self.block = block
        nodes = np.flatnonzero(sizes == 1)
        self.unary = np.concatenate([np.arange(offsets[k], offsets[k + 1]) for k in nodes])
        self.site = np.repeat(np.arange(len(nodes)), offsets[nodes + 1] - offsets[nodes])
        self.mu, self.n_params = mu, layout.n_params

    def _shift(self, J):
        """``sum_j J_ij mu_j`` on every unary entry (zeros elsewhere)."""
        mu, n = self.mu, self.n_params
        by_row = np.bincount(self.row, J * mu[self.col], minlength=n)
        return by_row + np.bincount(self.col, J * mu[self.row], minlength=n)

    def to_theta(self, c):
        """The package's parameters of centred coordinates ``c``."""
        theta = c.copy()
        theta[self.unary] -= self._shift(c[self.pair])[self.unary]
        return theta

    def from_theta(self, theta):
        """The centred coordinates of ``theta``."""
        c = theta.copy()
        c[self.unary] += self._shift(theta[self.pair])[self.unary]
        return c

    def gradient(self, g):
        """The gradient in centred coordinates of a function whose ``theta`` gradient is ``g``."""
        out = g.copy()
        out[self.pair] -= self.mu[self.col] * g[self.row] + self.mu[self.row] * g[self.col]
        return out

    def preconditioner(self, damping):
        """The variance of every centred feature under the independent-site model at ``mu``, plus ``damping``."""
        var = self.mu * (1 - self.mu)
        out = var + damping
        out[self.pair] = var[self.row] * var[self.col] + damping
        return out

    def frequencies(self, mean):
        """Every site's frequencies, state 0 included, from mean features (``theta`` order)."""
        f = mean[self.unary]
        return np.concatenate([f, 1 - np.bincount(self.site, f)])

    def connected(self, mean):
        """``C_ij(a, b) = f_ij(a, b) - f_i(a) f_j(b)`` on every edge and every pair of states, from
        mean features (``theta`` order, states other than 0): ``C_ij(0, b) = -sum_a C_ij(a, b)``,
        ``C_ij(a, 0) = -sum_b C_ij(a, b)`` and ``C_ij(0, 0) = sum_ab C_ij(a, b)``, since every
        row and column of a full table of connected correlations sums to zero."""
        C = mean[self.pair] - mean[self.row] * mean[self.col]
        return np.concatenate([C, -np.bincount(self.by_b, C), -np.bincount(self.by_a, C), np.bincount(self.block, C)])


def _pearson(a, b):
    """Pearson r; a constant vector (no variance) gives 1 when equal, else 0."""
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float(np.allclose(a, b))
    return float(np.corrcoef(a, b)[0, 1])


def connected_pearson(centred, mean, data):
    """Pearson r of the connected correlations and of the one-site frequencies of ``mean`` and ``data``.

    Both are mean features in ``theta`` order, or ``data`` is the pair ``(centred.connected(x),
    centred.frequencies(x))`` already taken. The correlations are every edge's full ``K_i x K_j``
    table (:meth:`Centred.connected`) and the frequencies every state's, state 0 included
    (adabmDCA's criterion).
    """
    data_C, data_f = (centred.connected(data), centred.frequencies(data)) if isinstance(data, np.ndarray) else data
    return _pearson(centred.connected(mean), data_C), _pearson(centred.frequencies(mean), data_f)


def decorrelation(before, after):
    """Whether chains forgot their states of ``before`` by ``after`` (adabmDCA's overlap test).

    ``before`` and ``after`` are blocks of chain states (``(n_variables, m)`` each, one column per
    chain, the same layout). The overlap of two states is the fraction of sites where they agree.
    A chain that forgot its earlier state agrees with it no more than with another chain's
    earlier state: the test compares each chain's overlap with its own earlier state (``q_self``)
    with its overlap with the previous chain's earlier state (``q_between``) and counts the chains
    as decorrelated unless the mean difference exceeds :data:`DECORRELATION_SIGMAS` standard
    errors. Both overlaps pair a current state with an earlier one, so a model that changed in
    between moves both alike; against other chains' *current* states, chains that kept their
    states while the model sharpened would pass (current states of different chains then agree
    more often than a state and its predecessor). Chains trapped in a basin (a subfamily of
    sequences) fail it, which a Pearson r of the moments cannot show.

    Returns
    -------
    q_self, q_between : float
        Mean overlaps.
    decorrelated : bool
    """
    before, after = np.concatenate(before, axis=1), np.concatenate(after, axis=1)
    q_self = (before == after).mean(axis=0)
    q_between = (after == np.roll(before, 1, axis=1)).mean(axis=0)
    d = q_self - q_between
    if len(d) < 2:  # no other chain to compare with
        return float(q_self.mean()), float("nan"), True
    excess, spread = d.mean(), d.std(ddof=1) / np.sqrt(len(d))
    return float(q_self.mean()), float(q_between.mean()), bool(excess <= DECORRELATION_SIGMAS * spread)


def _adapt_rates(rate, direction, previous):
    """Update the per-coordinate step multipliers in place (:data:`RATE_DOWN`)."""
    if previous is not None:
        agree = direction * previous
        rate[agree < 0] *= RATE_DOWN
        np.minimum(np.where(agree > 0, rate * RATE_UP, rate), 1.0, out=rate)
        np.maximum(rate, RATE_FLOOR, out=rate)


def _fresh_mean(chains, theta, rng):
    """Mean features of ``chains.n_chains`` new chains from uniform states after :data:`CONFIRM_SWEEPS` sweeps."""
    fresh = Chains(
        chains.layout,
        chains.colours,
        None,
        chains.n_chains,
        CONFIRM_SWEEPS,
        "uniform",
        False,
        rng,
        chains.parallel,
        block=chains.block,
    )
    return fresh.advance(theta, CONFIRM_SWEEPS) / chains.n_chains


def _check(chains, theta, rng, centred, data):
    """``(r connected, r frequencies)`` of fresh chains of ``theta`` (:func:`_fresh_mean`)."""
    return connected_pearson(centred, _fresh_mean(chains, theta, rng), data)


def confirmations(fresh):
    """What the checks by fresh chains found, from ``trace["fresh_connected"]`` of :func:`fit_moments`."""
    steps = np.flatnonzero(~np.isnan(fresh))
    if not len(steps):
        return "no step's chains met the targets, so fresh chains never checked them; the estimate is the last iterate"
    best = steps[np.argmax(fresh[steps])]
    return (
        f"fresh chains checked {len(steps)} steps that did and reached connected r {fresh[best]:.3f} at best; the "
        f"estimate is the one checked at step {best + 1} (the average of the iterates from step {steps[0] + 1} on)"
    )


def independent_start(layout, mean_stats, total):
    """The independent-site model's ``theta``: couplings zero, fields the log frequency ratios.

    The frequencies get one pseudo-row spread evenly over the states (``(f n + 1 / K) / (n +
    1)`` for ``n = total``), so a state the data never show gets a finite field.
    """
    theta = np.zeros(layout.n_params)
    sizes = np.array([len(c) for c in layout.cliques])
    for k in np.flatnonzero(sizes == 1):
        i, lo, hi = layout.cliques[k][0], layout.block_offsets[k], layout.block_offsets[k + 1]
        K = int(layout.n_states[i])
        f = np.concatenate([[1.0 - mean_stats[lo:hi].sum()], mean_stats[lo:hi]])
        f = (np.clip(f, 0.0, 1.0) * total + 1.0 / K) / (total + 1.0)
        theta[lo:hi] = np.log(f[1:]) - np.log(f[0])
    return theta


# Over 60 lines by its docstring (the parameters); the body is under 60.
def fit_moments(
    layout,
    colours,
    rows,
    mean_stats,
    alpha,
    *,
    n_chains,
    n_sweeps,
    n_iter,
    learning_rate,
    target,
    target_frequencies,
    damping,
    rng,
    parallel,
    callback=None,
):
    """Moment matching from the independent-site model by centred, preconditioned gradient steps.

    Every step advances ``n_chains`` persistent chains ``n_sweeps`` sweeps under ``theta``,
    takes their mean features ``m`` and moves the centred coordinates ``c -= learning_rate * rho *
    G(m - mean_stats + alpha theta) / D`` (:class:`Centred`: ``G`` the chain rule, ``D`` the
    preconditioner, ``rho`` per-coordinate multipliers that shrink where the gradient's sign
    flips, :data:`RATE_DOWN`), no coordinate by more than ``learning_rate``. When the chains give
    Pearson r of at least ``target`` on the connected correlations and ``target_frequencies`` on the
    one-site frequencies (:func:`connected_pearson`), ``n_chains`` fresh chains from uniformly random
    states run :data:`CONFIRM_SWEEPS` sweeps under the estimate, the average of the iterates since the
    first step that met them (:data:`AVERAGE_RATE`), at most one such check per
    :data:`CONFIRM_SPACING` times its sweeps; the run stops at the first estimate whose fresh chains
    meet both targets too, and returns it; after ``n_iter`` steps without one it returns the checked
    estimate whose fresh chains gave the highest r (the last iterate if none was checked). From the
    first step that met the targets on, the steps shrink (:data:`DECAY_STEPS`). Every
    step also records whether the chains forgot their states of the step before
    (:func:`decorrelation`). With
    ``n_sweeps="auto"`` (adabmDCA's adaptive waiting time) the sweeps per step start at
    :data:`AUTO_START_SWEEPS` and double after every step whose chains did not, up to
    :data:`MAX_AUTO_SWEEPS`, and the run stops only on chains that did: chains that lag the model
    can meet the targets while the model's own equilibrium does not.

    Parameters
    ----------
    layout, colours, rows, mean_stats, alpha
        As in :func:`.adaptive.fit_adaptive`.
    n_chains, n_iter : int
        Chains, steps at most.
    n_sweeps : int or "auto"
        Gibbs sweeps per step, or adapted (above).
    learning_rate, target, target_frequencies, damping : float
        See :class:`~skmrf.MomentMatchingSchedule`.
    rng : numpy.random.Generator
    parallel : joblib.Parallel or None
        Runs the chain blocks (:data:`MOMENTS_CHAIN_BLOCK` chains each; threads serve best).
    callback : callable, optional
        ``callback(k, theta=..., gradient=..., r_connected=..., r_frequencies=..., n_sweeps=...,
        decorrelated=..., r_fresh=...)`` after each step (``r_fresh`` NaN without a confirmation).

    Returns
    -------
    theta : ndarray of shape (n_params,)
    info : MomentsFit
    """
    centred = Centred(layout, mean_stats)
    scale = learning_rate / centred.preconditioner(damping)
    theta = independent_start(layout, mean_stats, rows.total)
    c, average, n_averaged, best = centred.from_theta(theta), None, 0, None  # best: the best-checked estimate
    auto = n_sweeps == "auto"
    sweeps = AUTO_START_SWEEPS if auto else n_sweeps
    chains = Chains(layout, colours, rows, n_chains, sweeps, "data", True, rng, parallel, block=MOMENTS_CHAIN_BLOCK)
    chains.advance(theta, MOMENTS_BURN_IN, statistic=False)
    data = (centred.connected(mean_stats), centred.frequencies(mean_stats))  # the criterion's fixed side
    keys = ("pearson_connected", "pearson_frequencies", "gradient_norm", "time", "n_sweeps")
    keys += ("overlap_self", "overlap_between", "decorrelated", "fresh_connected", "fresh_frequencies", "step_scale")
    trace = {key: [] for key in keys}
    rate, previous = np.ones(layout.n_params), None  # per-coordinate step multipliers (RATE_DOWN)
    start, converged, k, since = time.perf_counter(), False, 0, np.inf  # since: sweeps since a confirmation
    while k < n_iter:
        k += 1
        before = [S.copy() for S in chains.pool]  # the chains advance in place
        mean = chains.advance(theta, sweeps) / n_chains
        q_self, q_between, decorrelated = decorrelation(before, chains.pool)
        r_pair, r_unary = connected_pearson(centred, mean, data)
        fresh, since = (np.nan, np.nan), since + sweeps
        if r_pair >= target and r_unary >= target_frequencies and (decorrelated or not auto):
            if average is None:  # the chains met the targets for the first time: the average starts here
                average, n_averaged = theta.copy(), 1
            if since >= CONFIRM_SPACING * CONFIRM_SWEEPS:
                fresh, since = _check(chains, average, rng, centred, data), 0
                if best is None or fresh[0] > best[0]:
                    best = (fresh[0], average.copy(), n_averaged)
        grad = mean - mean_stats + ridge_gradient(alpha, theta)
        now = time.perf_counter() - start
        shrink = 1.0 if average is None else DECAY_STEPS / (DECAY_STEPS + n_averaged)
        values = (r_pair, r_unary, float(np.linalg.norm(grad)), now, sweeps, q_self, q_between, decorrelated, *fresh)
        for key, value in zip(trace, (*values, shrink)):
            trace[key].append(value)
        if callback is not None:
            report = dict(r_connected=r_pair, r_frequencies=r_unary, n_sweeps=sweeps, decorrelated=decorrelated)
            callback(k, theta=theta, gradient=grad, r_fresh=fresh[0], **report)
        converged = fresh[0] >= target and fresh[1] >= target_frequencies
        if converged:  # fresh chains of this average confirmed the targets: return it, not the step after
            break
        if auto and not decorrelated:
            sweeps = min(2 * sweeps, MAX_AUTO_SWEEPS)
        direction = centred.gradient(grad)
        _adapt_rates(rate, direction, previous)
        previous = direction
        step, cap = direction * rate * scale * shrink, learning_rate * shrink
        largest = np.abs(step).max(initial=0.0)
        c -= step * (cap / largest) if largest > cap else step
        theta = centred.to_theta(c)
        if average is not None:
            n_averaged += 1
            average += max(1.0 / n_averaged, AVERAGE_RATE) * (theta - average)
    if not converged and best is not None:  # fresh chains' r can fall as the fit goes on (#42)
        _, average, n_averaged = best
    trace = {key: np.array(v) for key, v in trace.items()}
    return theta if average is None else average, MomentsFit(k, converged, max(n_averaged, 1), trace)
