"""Covariance selection from a covariance matrix and a sample size, as ``ggm`` and ``glasso`` take them."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..._kernels.gaussian.max_likelihood import pattern_unknowns
from ..._utils.validation import check_real
from ._max_likelihood import GaussianMaxLikelihood

__all__ = ["CovarianceSelection", "covariance_selection"]


class CovarianceSelection(NamedTuple):
    """What :func:`covariance_selection` returns."""

    precision: np.ndarray
    """The maximum-likelihood precision, zero outside the graph."""
    covariance: np.ndarray
    """Its inverse: equal to ``S`` on the diagonal and the edges (``ggm``'s ``Shat``)."""
    deviance: float
    """``n (tr(S K) - log det(S K) - p)`` against the complete graph (``ggm``'s ``dev``)."""
    df: int
    """Its degrees of freedom: the absent edges (``ggm``'s ``df``)."""
    n_iter: int
    """Newton iterations (0 for the closed form of a chordal graph)."""
    estimator: GaussianMaxLikelihood
    """The fitted estimator (``assume_centered=True``: the covariance carries no mean), for
    ``n_params_``, ``standard_errors`` and the solver's certificate (``duality_gap_``)."""


def _pseudo_rows(S, n_samples):
    """Rows ``+-sqrt(p lambda_k) v_k`` with weight ``n / 2p`` each: mean zero, weighted ML covariance ``S``."""
    values, vectors = np.linalg.eigh(S)
    p = len(S)
    half = (vectors * np.sqrt(p * np.maximum(values, 0.0))).T
    return np.vstack([half, -half]), np.full(2 * p, n_samples / (2 * p))


def covariance_selection(S, graph, n_samples, *, max_iter=200, tol=1e-10):
    """Maximum-likelihood precision with a known zero pattern, from a covariance matrix and ``n``.

    Fits :class:`GaussianMaxLikelihood` to ``S`` as ``ggm::fitConGraph(amat, S, n)`` and
    ``glasso(S, rho = 0, zero = ...)`` do: the Gaussian likelihood of ``n`` rows whose
    maximum-likelihood covariance (centred, divisor ``n``) is ``S``. The estimate does not depend
    on ``n``; the deviance, the sample-size checks and the standard errors do.

    Parameters
    ----------
    S : array-like of shape (n_features, n_features)
        Symmetric positive semi-definite covariance. With R's ``cov()`` (divisor ``n - 1``)
        the precision comes out scaled by ``(n - 1) / n``; the deviance is the same (it does
        not change when ``S`` is scaled).
    graph : graph
        The zero pattern, in any form :class:`GaussianMaxLikelihood` takes.
    n_samples : int or float
        The number of rows behind ``S`` (or their summed weight).
    max_iter : int, default=200
        Newton iterations.
    tol : float, default=1e-10
        ``max |inv(K) - S|`` on the pattern, in standardised units, at which to stop (no early
        stop at statistical precision: ``decrement_tol=None``).

    Returns
    -------
    CovarianceSelection
        ``(precision, covariance, deviance, df, n_iter, estimator)``.

    Raises
    ------
    ValueError
        ``S`` not square, not symmetric, not finite or with a non-positive diagonal;
        ``n_samples`` not positive; and whatever :class:`GaussianMaxLikelihood` refuses (too
        few samples for a clique, a likelihood without a maximum).

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf import covariance_selection
    >>> S = np.array([[1.0, 0.5, 0.3], [0.5, 1.0, 0.5], [0.3, 0.5, 1.0]])
    >>> fit = covariance_selection(S, [(0, 1), (1, 2)], n_samples=100)
    >>> round(float(fit.covariance[0, 2]), 4)  # 0.5 * 0.5: the chain's conditional independence
    0.25
    >>> fit.df
    1
    """
    S = check_real(np.asarray(S))
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"S must be a square covariance matrix; got shape {S.shape}.")
    if not np.allclose(S, S.T, rtol=1e-10, atol=0):
        i, j = np.unravel_index(np.argmax(np.abs(S - S.T)), S.shape)
        raise ValueError(f"S must be symmetric; S[{i}, {j}] = {S[i, j]:g} but S[{j}, {i}] = {S[j, i]:g}.")
    if np.any(np.diag(S) <= 0):
        j = int(np.flatnonzero(np.diag(S) <= 0)[0])
        raise ValueError(f"S must have a positive diagonal; S[{j}, {j}] = {S[j, j]:g} (a constant variable).")
    if not (np.isfinite(n_samples) and n_samples > 0):
        raise ValueError(f"n_samples must be a positive number of rows; got {n_samples!r}.")
    S = 0.5 * (S + S.T)
    rows, weight = _pseudo_rows(S, float(n_samples))
    est = GaussianMaxLikelihood(graph, assume_centered=True, tol=tol, max_iter=max_iter, decrement_tol=None)
    est.fit(rows, sample_weight=weight)
    K = np.asarray(est.precision_.toarray() if hasattr(est.precision_, "toarray") else est.precision_)
    cov = est.covariance_ if est.covariance_ is not None else np.linalg.inv(K)
    p = len(S)
    SK = S @ K
    sign, logdet = np.linalg.slogdet(SK)
    deviance = float(n_samples * (np.trace(SK) - logdet - p))
    n_edges = len(pattern_unknowns(est.adjacency_)[0]) - p
    return CovarianceSelection(K, cov, deviance, p * (p - 1) // 2 - n_edges, int(est.n_iter_), est)
