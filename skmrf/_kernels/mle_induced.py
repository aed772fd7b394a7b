"""The MLE-induced likelihood of the agreement model (Liu and Zheng): the kernel.

The agreement model (:mod:`skmrf.model._agreement`) is a binary pairwise MRF with one parameter
``theta_j`` in ``(0, 1)`` per edge ``j = (u, v)``, potential ``theta_j ** I[x_u == x_v] *
(1 - theta_j) ** I[x_u != x_v]`` and no node potentials.

- the agreement counts (Eq. 6) and the external effect induced by the MLE (Eq. 5):
  :func:`agreement_counts`, :func:`agreement_statistics` (by row chunks for a memmap or a dask
  array), :func:`induced_eta`;
- the MLE itself, from the exact or the LAP kernel on the flip-symmetrised rows: :func:`agreement_mle`;
- :class:`MLEInducedModel`: the marginal likelihoods (Eq. 3), their CDFs and normal scores
  (Eq. 8, kernels of :mod:`.coin_tossing`) and the joint likelihood with the independent
  (Eq. 7) or the exchangeable Gaussian copula (Eq. 9).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import gammaln, logit

from .._data import Rows
from .._data.chunks import _is_dask, default_chunk_rows
from ..exceptions import TreewidthError
from ..model import DiscreteMRF
from ..model._agreement import check_agreement_parameters
from .coin_tossing import marginal_log_likelihood_kernel, normal_scores, score_tables
from .exact import fit_exact
from .lap import fit_lap

__all__ = [
    "MLEInducedModel",
    "agreement_counts",
    "agreement_mle",
    "agreement_statistics",
    "induced_eta",
    "symmetrised",
]

_MIN = np.minimum.reduce  # the ufunc's own reduce: ndarray.min adds a Python-level wrapper
#: The exact kernel's stopping rule for the MLE (L-BFGS iterations and gradient tolerance).
MLE_MAX_ITER, MLE_TOL = 1000, 1e-7
#: The LAP kernel's, where the junction tree does not fit.
LAP_MAX_ITER, LAP_TOL = 100, 1e-8


def agreement_counts(X, edges, weight=None):
    """Number of rows in which the two ends of each edge agree (``alpha_0`` of Eq. 6).

    Parameters
    ----------
    X : ndarray of shape (..., n_samples, n_features)
        Binary states (any leading batch axes).
    edges : ndarray of int of shape (p, 2)
        Column indices of the ends of each edge.
    weight : ndarray of shape (n_samples,), optional
        Row weights (no batch axes): the counts are then the sums of the agreeing rows' weights.

    Returns
    -------
    ndarray of int64 (float64 with ``weight``) of shape (..., p)
        ``sum_i w_i I[x_u^i == x_v^i]`` per edge.
    """
    edges = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
    agree = X[..., edges[:, 0]] == X[..., edges[:, 1]]
    if weight is not None:
        return weight @ agree.astype(np.float64)
    return np.count_nonzero(agree, axis=-2).astype(np.int64)


#: Entries of the temporaries of one memmap chunk's statistics, at most: rows x edges of agreement
#: indicators (8 bytes each with weights), rows x columns of states for the clique counts (a copy,
#: its flip and the counting's own arrays). A chunk of the default 256 MB would hold several GB.
STATISTICS_CHUNK_ENTRIES = 1 << 22


def _agreement_chunk(chunk, weight, edges):
    return agreement_counts(chunk, edges, weight)


def agreement_statistics(rows, edges):
    """``(n, n_agree)`` of :class:`~skmrf._data.Rows`: the rows the data stand for (``n_rows``, an
    int, without weights; the sum of the weights otherwise) and :func:`agreement_counts`, summed
    over the row chunks of a memmap or a dask array (on the workers for dask).

    Without weights the counts are int64, with integer weights float64 sums of integers: exact
    in any chunking, so equal to the in-memory ones. Float weights are summed per chunk, then
    across chunks (a rounding of about ``1e-16`` relative per chunk).
    """
    edges = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
    n = rows.n_rows if rows.weight is None else rows.total
    # Capped at STATISTICS_CHUNK_ENTRIES rows x edges (reduce caps rows x columns).
    cap = max(rows.n_columns, STATISTICS_CHUNK_ENTRIES * rows.n_columns // max(1, len(edges)))
    return n, rows.reduce(_agreement_chunk, edges, max_entries=cap)


def induced_eta(lambda_hat, theta_hat):
    """The external effect ``eta0`` that the MLEs of ``lambda`` and ``theta`` induce (Eq. 5).

    Parameters
    ----------
    lambda_hat : array-like of float
        Agreement rates (Eq. 6), in ``(0, 1)``.
    theta_hat : array-like of float
        Maximum-likelihood agreement parameters, in ``(0, 1)``.

    Returns
    -------
    ndarray of float
        ``lambda (1 - theta) / (lambda + theta - 2 lambda theta)``, written as
        ``lambda (1 - theta) / (lambda (1 - theta) + theta (1 - lambda))`` (a sum of
        positive terms, so no cancellation).
    """
    lam = np.asarray(lambda_hat, dtype=np.float64)
    th = np.asarray(theta_hat, dtype=np.float64)
    num = lam * (1.0 - th)
    return num / (num + th * (1.0 - lam))


def _exchangeable_gaussian_constants(rho, p):
    """``(log det R / 2, rho / (2 (1 - rho)), k / (2 (1 - rho)))`` with ``k = rho / (1 + (p - 1) rho)``.

    For the exchangeable correlation matrix ``R = (1 - rho) I + rho 1 1^T``:
    ``det R = (1 - rho)^(p - 1) (1 + (p - 1) rho)`` and
    ``R^{-1} = (I - k 1 1^T) / (1 - rho)``, so
    ``u^T (R^{-1} - I) u = (rho sum(u^2) - k sum(u)^2) / (1 - rho)``.
    """
    half_log_det = 0.5 * ((p - 1) * np.log1p(-rho) + np.log1p((p - 1) * rho))
    k = rho / (1.0 + (p - 1) * rho)
    return half_log_det, 0.5 * rho / (1.0 - rho), 0.5 * k / (1.0 - rho)


# -- the estimator ----------------------------------------------------------------------------


class _LikelihoodConstants(NamedTuple):
    """What :meth:`MLEInducedLikelihood.log_likelihood` needs, fixed at fit."""

    p: int
    eta: np.ndarray
    rest: np.ndarray  # 1 - eta0
    coef: np.ndarray  # (3 p,): alpha_0, n - alpha_0, -n against log theta, log(1 - theta), log D
    const: float  # sum_j log binom(n, alpha_0j) + alpha_0j log eta0_j + (n - alpha_0j) log(1 - eta0_j)
    copula: tuple  # (half log det R, c2, c1) for copula="gaussian", else None
    # The CDF's log-density l(z) at z = logit(theta), from the same three logarithms:
    # l = (alpha_0 + 1) log theta + (n - alpha_0 + 1) log(1 - theta) - n log D + n log(1 - eta0) + off.
    coef_density: np.ndarray  # (3, p)
    const_density: np.ndarray  # (p,)


class MLEInducedModel:
    """The fitted MLE-induced likelihood: its statistics and what its evaluation needs.

    Parameters
    ----------
    n_agree : ndarray of shape (p,)
        ``alpha_0``: rows (summed weights) in which the ends of each edge agree.
    n_samples : float
        ``n``, the number of rows (the sum of the weights).
    theta_hat : ndarray of shape (p,)
        The MLE of the agreement parameters, in ``(0, 1)``.
    copula : {"independent", "gaussian"}
    rho : float
        The Gaussian copula's common correlation.
    """

    def __init__(self, n_agree, n_samples, theta_hat, copula, rho):
        self.n_agree, self.n_samples, self.theta_hat = n_agree, n_samples, theta_hat
        self.lambda_hat = n_agree / n_samples
        self.eta0 = induced_eta(self.lambda_hat, theta_hat)
        self._precompute(copula, rho)

    def _precompute(self, copula, rho):
        """Constants of the likelihood (Eq. 7) and the CDF tables of the copula (Eq. 8)."""
        a = self.n_agree.astype(np.float64)
        n = float(self.n_samples)
        eta = self.eta0
        p = len(a)
        log_binom = gammaln(n + 1.0) - gammaln(a + 1.0) - gammaln(n - a + 1.0)
        const = float(np.sum(log_binom + a * np.log(eta) + (n - a) * np.log1p(-eta)))
        gaussian = _exchangeable_gaussian_constants(float(rho), p) if copula == "gaussian" else None
        self._scores = score_tables(a, n, eta)
        self._lik = _LikelihoodConstants(
            p=p,
            eta=eta,
            rest=1.0 - eta,
            coef=np.concatenate([a, n - a, np.full(p, -n)]),
            const=const,
            copula=gaussian,
            coef_density=np.stack([a + 1.0, n - a + 1.0, np.full(p, -n)]),
            const_density=n * np.log1p(-eta) + self._scores.off,
        )

    def marginal_log_likelihood(self, j, theta):
        """``log L_j(theta)`` (Eq. 3) of edge indices ``j`` and parameters ``theta`` (broadcast, checked)."""
        return marginal_log_likelihood_kernel(theta, self.n_agree[j], self.n_samples, self.eta0[j])

    def marginal_cdf_scores(self, j, theta):
        """The unclipped normal scores ``Phi^{-1}(F_j(theta))`` of flat ``j`` and ``theta``."""
        return normal_scores(logit(theta), self._scores.take(j), clip=False)

    def normal_scores(self, theta):
        """The copula's clipped normal scores of parameter vectors ``theta`` (checked)."""
        return normal_scores(logit(theta), self._scores)

    def log_likelihood(self, theta):
        """Eq. 7 (or Eq. 9) for a batch ``theta`` of shape ``(..., p)``; entries outside ``(0, 1)``
        are refused by index (see :meth:`skmrf.MLEInducedLikelihood.log_likelihood`)."""
        lik = self._lik
        theta = np.asarray(theta, dtype=np.float64)
        shape, p = theta.shape, lik.p
        if not shape or shape[-1] != p:
            check_agreement_parameters(theta, p)
        # log theta, log(1 - theta) and log D (D = eta theta + (1 - eta)(1 - theta)) in one call.
        logs = np.empty(shape[:-1] + (3, p))
        logs[..., 0, :] = theta
        rest = np.subtract(1.0, theta, out=logs[..., 1, :])
        if not _MIN(logs[..., :2, :], axis=None, initial=np.inf) > 0:  # theta and 1 - theta > 0, no NaN
            check_agreement_parameters(theta, p)
        den = np.multiply(theta, lik.eta, out=logs[..., 2, :])
        den += rest * lik.rest
        np.log(logs, out=logs)
        out = np.dot(logs.reshape(shape[:-1] + (3 * p,)), lik.coef)
        out += lik.const
        if lik.copula is None:
            return out
        half_log_det, c2, c1 = lik.copula
        l_z = np.einsum("...kp,kp->...p", logs, lik.coef_density)
        l_z += lik.const_density
        u = normal_scores(logs[..., 0, :] - logs[..., 1, :], self._scores, l_z)
        s1 = u.sum(axis=-1)
        return out - half_log_det - c2 * np.einsum("...i,...i->...", u, u) + c1 * s1 * s1


def _flipped_stack(X):
    """The lazy dask array ``[X; 1 - X]`` of a memmap or a dask array (a memmap's blocks are read
    from the file by row chunks), or, without dask, ``[C; 1 - C]`` in memory with ``C`` the rows in
    one byte per entry (:meth:`~skmrf._data.Rows.compact`)."""
    try:
        import dask.array as da
    except ImportError:
        C = Rows(X, np.full(X.shape[1], 2)).compact()
        return np.vstack([C, 1 - C])
    if not _is_dask(X):
        X = da.from_array(X, chunks=(default_chunk_rows(X), -1))
    return da.concatenate([X, 1 - X], axis=0)


def symmetrised(rows):
    """The flip-symmetrised rows ``[X; 1 - X]`` (each with its weight): their full-family MLE is
    the agreement-model MLE of ``X``.

    From a memmap or a dask array they are a lazy dask array read by row chunks, so any kernel
    that reads :class:`~skmrf._data.Rows` by chunks reads them so too (without dask installed,
    a memmap's rows are held in one byte per entry, twice)."""
    X, weight = rows.X, rows.weight
    w = None if weight is None else np.concatenate([weight, weight])
    stacked = _flipped_stack(X) if rows.chunked else np.vstack([X, 1 - X])
    return Rows(stacked, np.full(X.shape[1], 2), w)


def _symmetrised_counts_chunk(chunk, weight, layout):
    """The clique counts of a chunk's rows and of their flips."""
    chunk = np.asarray(chunk)
    return layout.table_counts(chunk, weight) + layout.table_counts(1 - chunk, weight)


def agreement_mle(graph, rows, max_bytes=None):
    """The full binary pairwise MLE (``alpha = 0``) of the flip-symmetrised rows, as a ``DiscreteMRF``.

    The exact kernel (:func:`~skmrf._kernels.exact.fit_exact`; the extended MLE by iterative
    proportional fitting where the data leave a cell empty) when the junction tree fits within
    ``max_bytes``, else the LAP kernel (:func:`~skmrf._kernels.lap.fit_lap`). Returns the model
    and which kernel fitted it (``"exact"`` or ``"lap"``).

    From a memmap or a dask array, the exact kernel's clique counts of ``[X; 1 - X]`` are summed
    over row chunks (each chunk's counts plus its flip's): integer counts (no weights, or integer
    weights), so the fit is the in-memory one bit for bit. The LAP kernel reads
    :func:`symmetrised` by row chunks.
    """
    n_states = np.full(rows.n_columns, 2)
    model = DiscreteMRF(graph, n_states)
    try:
        model.get_junction_tree(max_bytes)
    except TreewidthError:
        theta, _ = fit_lap(
            model, symmetrised(rows), 0.0, strategy="pairwise", node_rule="mean", read="centred",
            max_neighbourhood_states=1 << 16,
            max_iter=LAP_MAX_ITER, tol=LAP_TOL, n_jobs=None, verbose=0, log=lambda *a: None,
        )  # fmt: skip
        model.theta = theta
        return model, "lap"
    lay = model.layout
    if rows.chunked:
        counts = rows.reduce(_symmetrised_counts_chunk, lay, max_entries=STATISTICS_CHUNK_ENTRIES)
    else:
        counts = lay.table_counts(*symmetrised(rows).dense())
    # The sum of the weights of [X; 1 - X], as Rows(symmetrised) has it.
    total = 2.0 * rows.n_rows if rows.weight is None else float(np.sum(np.concatenate([rows.weight, rows.weight])))
    empty = bool(np.any(np.add.reduceat(counts == 0, lay.table_offsets[:-1]) > 0))
    fit_exact(model, counts, total, 0.0, extended=empty, max_iter=MLE_MAX_ITER, tol=MLE_TOL, max_bytes=max_bytes)
    return model, "exact"
