"""Random-walk Metropolis-Hastings over the agreement model's edge parameters, for blocks of chains.

The MLE-induced likelihood paper (Liu and Zheng), Section 3.1: a Gaussian random-walk proposal
on ``(0, 1)^p`` and the likelihood term of the MH ratio (Eq. 10) from a plug-in of
:mod:`skmrf._kernels.likelihoods`. Two runners with the same draws, decisions and samples: one
step at a time for every plug-in, and evaluated ahead along the rejection path for a
deterministic one (:func:`run_chains_speculative`).
"""

from __future__ import annotations

import time

import numpy as np

from .._utils._budgets import MAX_BATCH, STEP_BLOCK

__all__ = ["MAX_WINDOW", "run_chains", "run_chains_speculative", "uniform_log_prior"]


def uniform_log_prior(theta):
    """The uniform prior on ``(0, 1)^p``: 0 inside (proposals outside are rejected before)."""
    return np.zeros(theta.shape[0])


def run_chains(plugin, log_prior, theta0, seeds, n_steps, scale, burn_in, thin, callback):
    """Random-walk MH for a block of chains, vectorised over them.

    Each chain draws from its own generator (seeded up front), in the same order whatever
    the block, so the result does not depend on how chains are split between jobs.
    ``callback(step, n_steps=..., acceptance_rate=...)`` after every block of steps.
    """
    rngs = [np.random.default_rng(s) for s in seeds]
    theta = theta0.copy()
    c, p = theta.shape
    plugin.start(theta, rngs)
    uniform = log_prior is uniform_log_prior
    current = log_prior(theta)
    n_kept = len(range(burn_in, n_steps, thin))
    kept = np.empty((c, n_kept, p))
    n_accepted = np.zeros(c, dtype=np.int64)
    k = 0
    # A step is a handful of numpy calls on (n_chains, p) arrays: the loop is written for
    # few calls (no prior terms under the uniform prior, no copies when nothing moves).
    with np.errstate(invalid="ignore", divide="ignore"):
        for a in range(0, n_steps, STEP_BLOCK):
            m = min(STEP_BLOCK, n_steps - a)
            noise = np.stack([r.standard_normal((m, p)) for r in rngs], axis=1) * scale
            log_u = np.log(np.stack([r.random(m) for r in rngs], axis=1))
            for t in range(m):
                proposal = theta + noise[t]
                inside = (np.abs(proposal - 0.5) < 0.5).all(axis=1)
                # Outside (0, 1)^p the prior is 0: rejected without asking the likelihood,
                # which is evaluated at the current point there instead (the move discarded).
                safe = proposal if inside.all() else np.where(inside[:, None], proposal, theta)
                log_alpha = plugin.log_ratio(theta, safe, rngs)
                if not uniform:
                    prior = log_prior(safe)
                    log_alpha = log_alpha + prior - current
                accepted = inside & (log_u[t] < log_alpha)
                if accepted.any():
                    plugin.accept(accepted)
                    np.copyto(theta, proposal, where=accepted[:, None])
                    if not uniform:
                        np.copyto(current, prior, where=accepted)
                    n_accepted += accepted
                step = a + t
                if step >= burn_in and (step - burn_in) % thin == 0:
                    kept[:, k] = theta
                    k += 1
            callback(a + m, n_steps=n_steps, acceptance_rate=n_accepted.sum() / (c * (a + m)))
    return kept, n_accepted


#: Steps evaluated ahead by the speculative runner, at most; and rows of one likelihood call
#: over all chains, at most (the window shrinks with many chains).
MAX_WINDOW = 512


def _call_costs(function, theta):
    """Seconds of a call's fixed overhead and of each row (best of three, 1 and 8 rows per chain).

    Only the speed of :func:`run_chains_speculative` depends on these.
    """
    c = theta.shape[0]
    times = []
    for batch in (theta, np.repeat(theta, 8, axis=0)):
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            function(batch)
            best = min(best, time.perf_counter() - start)
        times.append(best)
    per_row = max(times[1] - times[0], 1e-9) / (7 * c)
    return max(times[0] - c * per_row, 1e-9), per_row


def _window(acceptance_rate, n_chains, costs):
    """Steps to evaluate ahead: the most steps per second of likelihood calls, expected.

    A window of ``w`` steps advances ``(1 - q^w) / (1 - q)`` steps, ``q`` the chance that
    no chain accepts at a step, and costs ``fixed + w * n_chains * per_row``; powers of two,
    so the calls see few batch shapes.
    """
    fixed, per_row = costs
    q = (1.0 - min(max(acceptance_rate, 0.0), 1.0)) ** n_chains
    w = 2 ** np.arange(int(np.log2(max(1, min(MAX_WINDOW, MAX_BATCH // n_chains)))) + 1)
    advance = np.where(q < 1, (1 - q**w) / max(1 - q, 1e-300), w)
    return int(w[np.argmax(advance / (fixed + w * n_chains * per_row))])


def run_chains_speculative(plugin, log_prior, theta0, seeds, n_steps, scale, burn_in, thin, callback):
    """Random-walk MH for a deterministic plug-in (:class:`CallableLikelihood`), evaluated ahead.

    Until one of them accepts, the chains stay put, so their next proposals ``theta + z_t``,
    ``theta + z_{t+1}``, ... are known from noise already drawn: one call evaluates a window
    of steps for all chains, and the chains advance together to the first step at which one
    of them accepts (or through the window). The draws, decisions and samples are those of
    :func:`run_chains` (same generators, same order of use); only the proposals after that
    step are evaluated in vain. This is the "prefetching" of Brockwell (2006) along the
    rejection path, the likely one when acceptance is rare; it gains little when every
    step some chain accepts.
    """
    rngs = [np.random.default_rng(s) for s in seeds]
    theta = theta0.copy()
    c, p = theta.shape
    uniform = log_prior is uniform_log_prior
    function = plugin.function
    current = plugin._evaluate(theta) + (0.0 if uniform else log_prior(theta))
    costs = _call_costs(function, theta)
    n_kept = len(range(burn_in, n_steps, thin))
    kept = np.empty((c, n_kept, p))
    n_accepted = np.zeros(c, dtype=np.int64)
    rate = 0.25  # a guess until the first block has been run
    with np.errstate(invalid="ignore", divide="ignore"):
        for a in range(0, n_steps, STEP_BLOCK):
            m = min(STEP_BLOCK, n_steps - a)
            window = _window(rate, c, costs)
            # Padded by a window so every slice is full: the padding's log_u is +inf (never accepted).
            noise = np.zeros((c, m + window, p))
            log_u = np.full((c, m + window), np.inf)
            for i, r in enumerate(rngs):
                noise[i, :m] = r.standard_normal((m, p))
                log_u[i, :m] = np.log(r.random(m))
            noise *= scale
            n_before = n_accepted.sum()
            t = calls = 0
            block_start = time.perf_counter()
            while t < m:
                calls += 1
                proposal = theta[:, None] + noise[:, t : t + window]  # (c, window, p)
                inside = True
                if not (proposal.min() > 0 and proposal.max() < 1):
                    # Outside (0, 1)^p the prior is 0: rejected, and evaluated at theta instead.
                    inside = ((proposal > 0) & (proposal < 1)).all(axis=2)
                    proposal = np.where(inside[..., None], proposal, theta[:, None])
                flat = proposal.reshape(-1, p)
                value = plugin._evaluate(flat) if uniform else plugin._evaluate(flat) + log_prior(flat)
                value = value.reshape(c, window)
                accept = log_u[:, t : t + window] < value - current[:, None]
                accept &= inside
                some = accept.any(axis=0)
                k = int(some.argmax())  # the first step at which some chain accepts
                n = k + 1 if some[k] else min(window, m - t)
                # Steps t .. t + n - 1 of the block: the chains stay put, except the movers at the last.
                lo = len(range(burn_in, a + t, thin))
                hi = len(range(burn_in, a + t + n, thin))
                kept[:, lo:hi] = theta[:, None]
                if some[k]:
                    moved = accept[:, k]
                    np.copyto(theta, proposal[:, k], where=moved[:, None])
                    np.copyto(current, value[:, k], where=moved)
                    n_accepted += moved
                    if hi > lo and a + t + k == burn_in + (hi - 1) * thin:
                        kept[:, hi - 1] = theta
                t += n
            # A call's true fixed cost includes this loop's own: measured, for the next window.
            fixed = (time.perf_counter() - block_start) / calls - c * window * costs[1]
            costs = (max(fixed, costs[0]), costs[1])
            rate = (n_accepted.sum() - n_before + 1.0) / (c * m + 1.0)
            callback(a + m, n_steps=n_steps, acceptance_rate=n_accepted.sum() / (c * (a + m)))
    return kept, n_accepted
