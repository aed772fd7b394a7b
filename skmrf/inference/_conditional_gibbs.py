"""Conditional marginals by Gibbs chains with the evidence clamped, vectorised over rows and chains.

For the components of a row's missing entries whose junction tree exceeds the memory budget
(:mod:`._queries`). Every row runs ``n_chains`` independent chains from uniformly random states
of its free entries, the other entries held at the row's values; each sweep redraws one colour
class at a time from its full conditionals (:class:`~skmrf.inference.ConditionalPlan`, any
clique sizes and numbers of states), in all chains of all rows at once.

The estimate of ``p(x_j = k | evidence)`` is Rao-Blackwellised: the mean, over the second half
of the sweeps, of the full conditional ``p(x_j = k | x_-j)`` that the draw of ``x_j`` used
(never worse than counting the draws). Its Monte-Carlo standard error is the spread of the
chains' own means divided by the square root of their number: the chains are independent, so
this holds whatever the autocorrelation within a chain (it does not see a bias common to all
chains, such as too short a burn-in for chains that all start far from the bulk).
"""

from __future__ import annotations

import numpy as np

from ._conditionals import ConditionalPlan

__all__ = ["clamped_gibbs", "iterated_conditional_modes"]


def _softmax(logits):
    p = np.exp(logits - logits.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    return p


def clamped_gibbs(layout, theta, colours, E, free, n_chains, n_sweeps, rng):
    """Conditional marginals of the ``free`` entries of every row, by clamped Gibbs chains.

    Parameters
    ----------
    layout : skmrf._parametrisation.CliqueLayout
    theta : ndarray of shape (n_params,)
    colours : list of ndarray
        Colour classes of the graph (variables of one class share no clique).
    E : ndarray of int64, shape (n_rows, n_variables)
        The states of the entries that are not free (any value where free).
    free : ndarray of bool, shape (n_rows, n_variables)
        The entries the chains sample.
    n_chains, n_sweeps : int
        Chains per row, and sweeps per chain (the first half discarded).
    rng : numpy.random.Generator

    Returns
    -------
    mean : ndarray of shape (n_rows, n_variables, K_max)
        Rao-Blackwellised marginals of the free entries (zeros elsewhere).
    std : ndarray of shape (n_rows, n_variables, K_max)
        Their Monte-Carlo standard errors.
    states : ndarray of int64, shape (n_rows, n_chains, n_variables)
        The chains' last states.
    """
    K = layout.n_states
    kmax = int(K.max())
    n_rows, n = E.shape
    full = layout.full_tables(theta)
    free_c = np.repeat(free, n_chains, axis=0)
    S = np.repeat(E, n_chains, axis=0)
    S[free_c] = 0
    cols = np.nonzero(free_c)[1]
    S[free_c] = np.floor(rng.random(len(cols)) * K[cols]).astype(np.int64)
    plans = [ConditionalPlan(layout, u) for u in colours]
    burn = n_sweeps // 2
    acc = np.zeros((len(S), n, kmax))
    for sweep in range(n_sweeps):
        for u, plan in zip(colours, plans):
            fu = free_c[:, u]
            rows = np.flatnonzero(fu.any(axis=1))
            for b in plan.chunks(len(rows)):
                r = rows[b]
                p = _softmax(plan.logits(full, S[r]))  # (len(u), len(r), kmax)
                cdf = np.cumsum(p, axis=2)
                draw = (cdf[:, :, :-1] <= rng.random(cdf.shape[:2] + (1,))).sum(axis=2).T
                np.minimum(draw, K[u] - 1, out=draw)  # a cdf rounded below 1 never draws a missing state
                keep = fu[r]
                S[np.ix_(r, u)] = np.where(keep, draw, S[np.ix_(r, u)])
                if sweep >= burn:
                    acc[np.ix_(r, u)] += p.transpose(1, 0, 2) * keep[:, :, None]
    per_chain = (acc / (n_sweeps - burn)).reshape(n_rows, n_chains, n, kmax)
    mean = per_chain.mean(axis=1)
    std = per_chain.std(axis=1, ddof=1) / np.sqrt(n_chains) if n_chains > 1 else np.full_like(mean, np.inf)
    return mean, std, S.reshape(n_rows, n_chains, n)


def iterated_conditional_modes(layout, theta, colours, S, free, max_sweeps=100):
    """Raise ``S``'s free entries to a local maximum of the joint probability (Besag's ICM).

    Each sweep sets every free entry, one colour class at a time, to the mode of its full
    conditional; it stops when a sweep changes nothing (a state no single change improves) or
    after ``max_sweeps``. Returns the new states (``S`` is not modified).
    """
    full = layout.full_tables(theta)
    S = S.copy()
    plans = [ConditionalPlan(layout, u) for u in colours]
    for _ in range(max_sweeps):
        changed = False
        for u, plan in zip(colours, plans):
            fu = free[:, u]
            rows = np.flatnonzero(fu.any(axis=1))
            for b in plan.chunks(len(rows)):
                r = rows[b]
                mode = plan.logits(full, S[r]).argmax(axis=2).T
                old = S[np.ix_(r, u)]
                new = np.where(fu[r], mode, old)
                changed |= bool((new != old).any())
                S[np.ix_(r, u)] = new
        if not changed:
            break
    return S
