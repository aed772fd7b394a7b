"""Convergence diagnostics of Markov chains: split R-hat and effective sample size.

Both follow Gelman et al., *Bayesian Data Analysis* (3rd ed., Section 11.4-11.5): R-hat on
chains split in halves, and the effective sample size from the autocorrelations averaged
over chains, summed in pairs until the first negative pair (Geyer's initial positive
sequence) and made monotone.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RHAT_MAX", "effective_sample_size", "split_rhat"]

#: Chains whose split R-hat exceeds this have not mixed (Gelman et al., BDA3, Section 11.4: "below 1.1").
RHAT_MAX = 1.1


def _split(samples):
    """``(2 m, n // 2, p)``: every chain of ``samples`` (shape ``(m, n, p)``) cut in halves."""
    n = samples.shape[1] // 2
    return np.concatenate([samples[:, :n], samples[:, n : 2 * n]])


def split_rhat(samples):
    """Potential scale reduction of each parameter, on chains split in halves.

    Parameters
    ----------
    samples : ndarray of shape (n_chains, n_draws, n_params)

    Returns
    -------
    ndarray of shape (n_params,)
        Near 1 when the chains agree; ``inf`` for a parameter whose draws never change
        within any half-chain (no within-chain variance: nothing shows the chains mixed);
        NaN with fewer than 4 draws per chain.
    """
    s = _split(np.asarray(samples, dtype=np.float64))
    n = s.shape[1]
    if n < 2:
        return np.full(s.shape[2], np.nan)
    W = s.var(axis=1, ddof=1).mean(axis=0)
    B = n * s.mean(axis=1).var(axis=0, ddof=1)
    # Constant half-chains have W = 0 exactly (np.var leaves rounding of ~1e-32 instead).
    frozen = (np.ptp(s, axis=1) == 0).all(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(frozen, np.inf, np.sqrt(((n - 1) / n * W + B / n) / W))


def _autocovariance(x):
    """Autocovariance of each chain and parameter along axis 1, by FFT."""
    n = x.shape[1]
    z = x - x.mean(axis=1, keepdims=True)
    f = np.fft.rfft(z, n=2 * n, axis=1)
    return np.fft.irfft(f * np.conj(f), n=2 * n, axis=1)[:, :n] / n


def effective_sample_size(samples):
    """Effective number of independent draws of each parameter, over all chains.

    Parameters
    ----------
    samples : ndarray of shape (n_chains, n_draws, n_params)

    Returns
    -------
    ndarray of shape (n_params,)
        NaN with fewer than 4 draws per chain; 1 for a parameter whose draws never change
        within any chain (each chain one value repeated: as good as one draw).
    """
    s = np.asarray(samples, dtype=np.float64)
    m, n, p = s.shape
    if n < 4:
        return np.full(p, np.nan)
    frozen = (np.ptp(s, axis=1) == 0).all(axis=0)
    if frozen.any():
        out = np.ones(p)
        if not frozen.all():
            out[~frozen] = effective_sample_size(s[:, :, ~frozen])
        return out
    per = max(1, (1 << 23) // (2 * m * n))  # parameters per FFT batch: about 64 MB of spectra
    if p > per:
        return np.concatenate([effective_sample_size(s[:, :, a : a + per]) for a in range(0, p, per)])
    acov = _autocovariance(s)  # (m, n, p)
    W = (acov[:, 0] * n / (n - 1)).mean(axis=0)
    var_plus = (n - 1) / n * W + (s.mean(axis=1).var(axis=0, ddof=1) if m > 1 else 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = 1.0 - (W[None] - acov.mean(axis=0)) / var_plus[None]  # (n, p)
    rho[0] = 1.0
    n_pairs = n // 2
    pairs = rho[: 2 * n_pairs].reshape(n_pairs, 2, p).sum(axis=1)
    # Geyer: keep the pairs up to the first negative one, made non-increasing.
    positive = np.cumprod(pairs > 0, axis=0).astype(bool)
    pairs = np.minimum.accumulate(np.where(positive, pairs, 0.0), axis=0)
    tau = -1.0 + 2.0 * pairs.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return m * n / np.maximum(tau, 1.0 / np.log10(max(m * n, 10)))
