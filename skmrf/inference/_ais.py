"""Annealed importance sampling (AIS) of ``log Z``, forward and reverse.

Neal (2001), "Annealed importance sampling", Statistics and Computing 11. The chains start from
exact draws of an independent base model ``p_0`` whose ``log Z_0`` is a sum of per-variable
log-sum-exps, and cross ``p_beta ~ exp(U + beta A)`` for ``0 = beta_0 < ... < beta_T = 1``
(:class:`~skmrf.inference._annealing.AnnealingPath`; ``p_1`` is the model). At each step a chain's
log weight grows by ``(beta_t - beta_(t-1)) A(x)`` and the chain makes one chromatic Gibbs sweep
that leaves ``p_(beta_t)`` invariant. Then

.. math::

    \\hat Z = Z_0 \\frac{1}{M} \\sum_m w_m, \\qquad E[\\hat Z] = Z,

so ``log`` of the estimate is a *stochastic lower bound*: biased low (Jensen), and
``P(log Z_hat > log Z + t) <= exp(-t)`` (Markov), whatever the chains do.

*Reverse* AIS (Grosse, Ghahramani and Adams 2015, "Sandwiching the marginal likelihood using
bidirectional Monte Carlo") runs the same path backwards from **exact draws of the model**:
its weights estimate ``Z_0 / Z`` without bias, so its ``log Z`` estimate is a stochastic upper
bound. Exact draws exist where the junction tree fits (``DiscreteMRF.sample(method="exact")``)
and for data simulated from a known model; a wide fitted model has none, and approximate
draws (Gibbs chains) void the guarantee.

Chains are vectorised and driven by :func:`~skmrf.inference.run_chains`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from .._utils.validation import check_generator
from ._annealing import AnnealingPath

__all__ = [
    "AISResult",
    "BDMCResult",
    "annealed_importance_sampling",
    "bidirectional_monte_carlo",
    "reverse_annealed_importance_sampling",
]


class AISResult(NamedTuple):
    """Estimate of ``log Z`` by one run of (forward or reverse) annealed importance sampling."""

    log_z: float
    """The estimate of ``log Z``: a stochastic lower bound (forward) or upper bound (reverse)."""
    std_err: float
    """``sqrt(1 / ESS - 1 / M)``: the delta-method standard error of ``log_z`` from the variance
    of the ``M`` importance weights. It measures only the spread of the weights that were drawn:
    it cannot exceed 1 nat, and it does not see the bias of a schedule too short for the chains
    to follow the model (then it stays small while ``log_z`` is far off). An honest error needs
    the schedule to be checked: :func:`~skmrf.inference.adaptive_annealed_importance_sampling`."""
    effective_sample_size: float
    """``(sum w)^2 / sum w^2`` over the chains: how many of them carry the estimate."""
    log_weights: np.ndarray
    """Each chain's own estimate of ``log Z`` (``log Z_0`` included): forward, ``log`` of its
    weight; reverse, ``log Z_0`` minus ``log`` of its weight. ``log_z`` is their log-mean-exp
    (forward) or minus the log-mean-exp of their negatives (reverse)."""
    n_steps: int = 0
    """Annealing steps (intermediate distributions) of the run."""


class BDMCResult(NamedTuple):
    """Bidirectional Monte Carlo: forward and reverse AIS on the same schedule."""

    forward: AISResult
    """Stochastic lower bound on ``log Z``."""
    reverse: AISResult
    """Stochastic upper bound on ``log Z`` (from exact draws of the model)."""

    @property
    def gap(self) -> float:
        """``reverse.log_z - forward.log_z``: bounds the error of either estimate (stochastically)."""
        return self.reverse.log_z - self.forward.log_z


def _check_schedule(n_chains, n_steps):
    for name, v in (("n_chains", n_chains), ("n_steps", n_steps)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"n_chains and n_steps must be positive integers; got {name}={v!r}.")


def _summary(log_w, n_steps, reverse=False):
    """:class:`AISResult` of the chains' log weights (forward) or log inverse weights (reverse)."""
    m = len(log_w)
    s = -log_w if reverse else log_w
    log_mean = float(logsumexp(s) - np.log(m))
    r = np.exp(s - s.max())
    ess = float(r.sum() ** 2 / (r * r).sum())
    std_err = float(np.sqrt(max(1.0 / ess - 1.0 / m, 0.0)))
    return AISResult(-log_mean if reverse else log_mean, std_err, ess, log_w, int(n_steps))


def _forward(path, n_chains, n_steps, rng, bar=None):
    """Forward AIS log weights, shape ``(n_chains,)``; ``log Z_0`` included. ``bar``: a
    :class:`~skmrf._utils._progress.Progress` counting chain sweeps, or None."""
    betas = np.linspace(0.0, 1.0, n_steps + 1)
    S = path.kernel.to_internal(path.base_draws(n_chains, rng))
    log_w = np.zeros(n_chains)
    for t in range(1, n_steps + 1):
        log_w += (betas[t] - betas[t - 1]) * path.annealed_energy(S)
        if t < n_steps:  # the last sweep, at the model itself, would not change any weight
            path.sweep(S, betas[t], rng)
        if bar is not None:
            bar.update(n_chains)
    return log_w + path.log_z0


def _reverse(path, samples, n_steps, rng):
    """Reverse AIS: ``log Z_0`` minus each chain's log weight, shape ``(n_samples,)``."""
    betas = np.linspace(0.0, 1.0, n_steps + 1)
    S = path.kernel.to_internal(samples)
    log_w = np.zeros(len(samples))
    for t in range(n_steps, 0, -1):
        log_w -= (betas[t] - betas[t - 1]) * path.annealed_energy(S)
        if t > 1:  # the last sweep, at the base model, would not change any weight
            path.sweep(S, betas[t - 1], rng)
    return path.log_z0 - log_w


def annealed_importance_sampling(model, n_chains=100, n_steps=1000, random_state=None, path="centred"):
    """Estimate ``log Z`` of a :class:`~skmrf.model.DiscreteMRF` by annealed importance sampling.

    One run on a fixed schedule; its ``std_err`` is the spread of the weights only.
    :func:`~skmrf.inference.adaptive_annealed_importance_sampling` checks the schedule and reports
    an error that includes its bias.

    Parameters
    ----------
    model : DiscreteMRF
    n_chains : int, default=100
        Independent annealing runs (vectorised).
    n_steps : int, default=1000
        Intermediate distributions, equally spaced in ``beta``, one Gibbs sweep each. The cost
        is ``n_chains * (n_steps - 1)`` sweeps.
    random_state : int, RandomState instance, Generator or None, default=None
    path : {"centred", "unary"}, default="centred"
        The annealing path (:mod:`skmrf.inference._annealing`): ``"centred"`` moves each
        interaction's main effects into the base model, ``"unary"`` starts from the unary terms
        alone (the path before; far less accurate on strongly coupled models).

    Returns
    -------
    AISResult

    Examples
    --------
    >>> from skmrf.datasets import make_random_mrf
    >>> from skmrf.graphs import grid_graph
    >>> model = make_random_mrf(grid_graph(4, 4), 2, 0.5, random_state=0)
    >>> res = annealed_importance_sampling(model, n_chains=200, n_steps=200, random_state=0)
    >>> bool(abs(res.log_z - model.log_partition()) < 5 * res.std_err + 1e-2)
    True
    """
    _check_schedule(n_chains, n_steps)
    rng = check_generator(random_state)
    return _summary(_forward(AnnealingPath(model, path), n_chains, n_steps, rng), n_steps)


def reverse_annealed_importance_sampling(model, samples, n_steps=1000, random_state=None, path="centred"):
    """Stochastic upper bound on ``log Z`` by reverse AIS from exact draws of the model.

    The path of :func:`annealed_importance_sampling` run from ``beta = 1`` to ``0``, one chain
    per sample. When the samples are exact draws of ``model``, the weights ``w`` estimate
    ``Z_0 / Z`` without bias, so ``log Z_0 - log(mean w)`` is biased high (Jensen) and exceeds
    ``log Z - t`` except with probability ``exp(-t)`` (Grosse, Ghahramani and Adams 2015).

    Parameters
    ----------
    model : DiscreteMRF
    samples : array-like of shape (n_chains, n_variables)
        Exact, independent draws of ``model`` (``model.sample(n, method="exact")`` where the
        junction tree fits, or data simulated from the model). Approximate draws (Gibbs chains)
        give an estimate, not a bound.
    n_steps : int, default=1000
    random_state : int, RandomState instance, Generator or None, default=None
    path : {"centred", "unary"}, default="centred"

    Returns
    -------
    AISResult
        ``log_z`` is the upper estimate; ``std_err`` and ``effective_sample_size`` are those of
        the reverse weights.

    Examples
    --------
    >>> from skmrf.datasets import make_random_mrf
    >>> from skmrf.graphs import grid_graph
    >>> model = make_random_mrf(grid_graph(4, 4), 2, 1.0, random_state=0)
    >>> x = model.sample(100, random_state=0, method="exact")
    >>> res = reverse_annealed_importance_sampling(model, x, n_steps=200, random_state=0)
    >>> bool(res.log_z > model.log_partition() - 5 * res.std_err - 1e-2)
    True
    """
    samples = np.asarray(samples)
    if samples.ndim != 2 or samples.shape[1] != model.n_variables or len(samples) < 1:
        raise ValueError(
            f"samples must have shape (n_chains >= 1, {model.n_variables}), one exact draw of the model per "
            f"row; got shape {samples.shape}."
        )
    if samples.dtype.kind not in "iu" or samples.min() < 0 or np.any(samples.max(axis=0) >= model.n_states):
        raise ValueError("samples must hold integer states 0..K_i-1 of the model's variables.")
    _check_schedule(len(samples), n_steps)
    rng = check_generator(random_state)
    return _summary(_reverse(AnnealingPath(model, path), samples, n_steps, rng), n_steps, reverse=True)


def bidirectional_monte_carlo(model, n_chains=100, n_steps=1000, samples=None, random_state=None, path="centred"):
    """Sandwich ``log Z`` between forward and reverse AIS (bidirectional Monte Carlo).

    Parameters
    ----------
    model : DiscreteMRF
    n_chains : int, default=100
        Chains of the forward run, and exact draws for the reverse run when ``samples`` is None.
    n_steps : int, default=1000
        The schedule of both runs.
    samples : array-like of shape (n_samples, n_variables), optional
        Exact draws of ``model`` for the reverse run. Default: ``n_chains`` draws by the junction
        tree (raises :class:`~skmrf.exceptions.TreewidthError` when it does not fit: a wide model
        has no exact draws, and no reverse bound).
    random_state : int, RandomState instance, Generator or None, default=None
    path : {"centred", "unary"}, default="centred"

    Returns
    -------
    BDMCResult
        ``forward.log_z <= log Z <= reverse.log_z`` up to each run's stochastic error; the gap
        bounds the error of both (Grosse, Ghahramani and Adams 2015).

    Examples
    --------
    >>> from skmrf.datasets import make_random_mrf
    >>> from skmrf.graphs import grid_graph
    >>> model = make_random_mrf(grid_graph(4, 4), 2, 1.0, random_state=0)
    >>> res = bidirectional_monte_carlo(model, 100, 200, random_state=0)
    >>> bool(res.gap < 0.2)
    True
    """
    _check_schedule(n_chains, n_steps)
    rng = check_generator(random_state)
    fwd_rng, rev_rng, draw_rng = rng.spawn(3)
    if samples is None:
        samples = model.sample(n_chains, random_state=draw_rng, method="exact")
    forward = annealed_importance_sampling(model, n_chains, n_steps, fwd_rng, path)
    reverse = reverse_annealed_importance_sampling(model, samples, n_steps, rev_rng, path)
    return BDMCResult(forward, reverse)
