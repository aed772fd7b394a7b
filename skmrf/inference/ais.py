"""Annealed importance sampling (AIS) estimates of the log partition function.

Neal (2001), "Annealed importance sampling", Statistics and Computing 11. The
chains start from exact draws of the *base* model, the independent model made
of the unary terms of ``theta``, whose log partition function ``log Z_0`` is a
sum of per-variable log-sum-exps. The interaction terms (every clique of two
or more variables) are then switched on along ``0 = beta_0 < ... < beta_T = 1``;
at each step a chain's log weight grows by ``(beta_t - beta_(t-1)) E(x)``, with
``E`` the interaction energy of its current state, and the chain makes one
chromatic Gibbs sweep that leaves ``p_(beta_t)`` invariant. Then

.. math::

    \\hat Z = Z_0 \\frac{1}{M} \\sum_m w_m, \\qquad E[\\hat Z] = Z,

so ``log`` of the estimate is biased low by about half its variance (Jensen)
and the reported standard error measures the spread of the weights. Chains
are vectorised and driven by :func:`~skmrf.inference.run_chains`; the binary
pairwise case uses :class:`BinaryGibbsKernel`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from ..utils.validation import check_generator
from .gibbs import GibbsSampler, run_chains

__all__ = ["AISResult", "annealed_importance_sampling"]


class AISResult(NamedTuple):
    """Estimate of ``log Z`` by annealed importance sampling."""

    log_z: float
    """``log`` of the unbiased estimate of ``Z``."""
    std_err: float
    """Delta-method standard error of ``log_z`` (standard error of the mean weight over the mean)."""
    effective_sample_size: float
    """``(sum w)^2 / sum w^2`` over the chains: how many of them carry the estimate."""
    log_weights: np.ndarray
    """Final log importance weight of each chain (``log Z_0`` included)."""


def annealed_importance_sampling(model, n_chains=100, n_steps=1000, random_state=None):
    """Estimate ``log Z`` of a :class:`~skmrf.model.DiscreteMRF` by annealed importance sampling.

    Parameters
    ----------
    model : DiscreteMRF
    n_chains : int, default=100
        Independent annealing runs (vectorised).
    n_steps : int, default=1000
        Intermediate distributions, equally spaced in ``beta``, one Gibbs sweep
        each. The cost is ``n_chains * n_steps`` sweeps.
    random_state : int, RandomState instance, Generator or None, default=None

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
    if n_chains < 1 or n_steps < 1:
        raise ValueError(f"n_chains and n_steps must be positive; got {n_chains} and {n_steps}.")
    rng = check_generator(random_state)
    theta_unary, _ = model.layout.split_unary(model.theta)
    log_z0, x = _base_model_draws(model, theta_unary, n_chains, rng)
    betas = np.linspace(0.0, 1.0, n_steps + 1)
    log_w = np.zeros(n_chains)
    kernel = GibbsSampler(model).kernel
    S = kernel.to_internal(x)
    for t in range(1, n_steps + 1):
        log_w += (betas[t] - betas[t - 1]) * kernel.interaction_energy(S)
        run_chains(kernel, [S], 1, [rng], beta=betas[t])
    log_w += log_z0
    log_mean = float(logsumexp(log_w) - np.log(n_chains))
    r = np.exp(log_w - log_w.max())
    std_err = float(r.std() / (r.mean() * np.sqrt(n_chains)))
    ess = float(r.sum() ** 2 / (r * r).sum())
    return AISResult(log_mean, std_err, ess, log_w)


def _base_model_draws(model, theta_unary, n_chains, rng):
    """``log Z_0`` of the independent unary model and exact draws from it (Gumbel-max).

    The draws, shape ``(n_chains, n_variables)``, are made in blocks of chains so the noise
    array stays under ``2^24`` floats.
    """
    lay = model.layout
    n, kmax = model.n_variables, int(model.n_states.max())
    logits = np.full((n, kmax), -np.inf)
    full0 = lay.full_tables(theta_unary)
    for b, c in enumerate(lay.cliques):
        if len(c) == 1:
            k = int(model.n_states[c[0]])
            logits[c[0], :k] = full0[lay.table_offsets[b] : lay.table_offsets[b] + k]
    log_z0 = float(logsumexp(logits, axis=1).sum())
    x = np.empty((n_chains, n), dtype=np.int64)
    step = max(1, (1 << 24) // (n * kmax))
    for a in range(0, n_chains, step):
        b = min(n_chains, a + step)
        x[a:b] = np.argmax(logits[None] + rng.gumbel(size=(b - a, n, kmax)), axis=2)
    return log_z0, x
