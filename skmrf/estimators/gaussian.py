"""Gaussian MRFs with a known sparsity pattern: LAP and maximum likelihood.

A zero-mean Gaussian ``N(mu, Sigma)`` is an MRF whose neighbourhoods are the
non-zero pattern of the precision ``Theta = Sigma^{-1}`` (LAP paper, Section 6,
equations (10)-(11)): the node potentials are ``Theta_ii x_i^2 / 2`` and the
edge potentials ``Theta_ij x_i x_j``. Both estimators below take that pattern
as ``graph`` and return a precision with zeros outside it.

* :class:`GaussianLAP` reads every entry off a small marginal model:
  ``Theta_ij`` from the inverse sample covariance of the 1-neighbourhood
  ``A = {i, j} u N(i) u N(j)`` and ``Theta_ii`` from that of ``{i} u N(i)``
  (Section 6.1, equations (12)-(14)). No iteration, one small inversion per
  entry, linear in the number of variables for bounded degree (Section 6.2).
* :class:`GaussianMaxLikelihood` solves covariance selection (Dempster, 1972):
  the maximum-likelihood precision with the same zeros, by Newton's method or
  by the modified regression algorithm of Hastie, Tibshirani & Friedman. It is
  the accuracy baseline.

Layering follows ``sklearn/covariance``: private kernels on plain arrays
(:class:`_LapPlan`, :func:`_lap_solve`, :func:`_newton_covsel`,
:func:`_regression_covsel`), then the estimators, which validate and store.
Large problems stay sparse: no ``p x p`` dense matrix is formed by
:class:`GaussianLAP` unless ``store_covariance`` asks for it, and the sample
covariance is only evaluated on the blocks that LAP needs.
"""

from __future__ import annotations

import time
import warnings
from numbers import Integral, Real

import networkx as nx
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.exceptions import ConvergenceWarning

from ..graphs import MRFGraph, resolve_adjacency
from ..utils._sklearn_compat import (
    Interval,
    Parallel,
    StrOptions,
    _fit_context,
    check_is_fitted,
    delayed,
    validate_data,
)
from ..utils._threads import single_blas_thread

__all__ = ["GaussianLAP", "GaussianMaxLikelihood", "NotPositiveDefiniteWarning"]

#: Largest number of variables for which ``store_covariance="auto"`` keeps the
#: dense covariance.
DENSE_MAX_FEATURES = 2000

# Up to this many variables positive definiteness and log det come from a dense
# Cholesky factorisation; above, from a sparse one (much faster even at p ~ 1000).
_DENSE_FACTOR_MAX_FEATURES = 200

#: Smallest eigenvalue of ``D^{-1/2} Theta D^{-1/2}`` after ``repair="shrink"``.
REPAIR_MIN_EIGENVALUE = 1e-6

#: A conditional variance below this fraction of the marginal one counts as zero.
_SINGULAR_RTOL = 1e-10

# Up to this many variables, LAP may read its blocks from the dense sample
# covariance: when it has at most 10 times the entries of the cluster Gram
# matrices (one large syrk runs several times faster than many small ones).
_DENSE_GRAM_MAX_FEATURES = 3000

# Up to this many variables the repair's smallest eigenvalue is computed densely.
_DENSE_EIG_MAX_FEATURES = 500

# Entries (float64) of the Gram buffer, of the gathered blocks and of the
# gathered data in one work chunk of the LAP kernel (each about 32 MB).
_CHUNK_ENTRIES = 1 << 22


class NotPositiveDefiniteWarning(UserWarning):
    """The fitted precision matrix is not positive definite."""


# --------------------------------------------------------------------------
# LAP kernel
# --------------------------------------------------------------------------
def _aggregate(adjacency):
    """Greedy aggregation of the variables into 1-neighbourhood-sized groups.

    Pass 1 turns every variable whose neighbours are all free into an
    aggregate ``{i} u N(i)``; pass 2 attaches the remaining variables to the
    most frequent aggregate among their neighbours (the "standard
    aggregation" of smoothed-aggregation multigrid). Aggregates are compact
    on lattices, which is what makes the shared Gram blocks of the LAP kernel
    pay off.
    """
    p = adjacency.shape[0]
    indptr = adjacency.indptr.tolist()
    indices = adjacency.indices.tolist()
    agg = [-1] * p
    k = 0
    for i in range(p):
        if agg[i] >= 0:
            continue
        nb = indices[indptr[i] : indptr[i + 1]]
        if all(agg[j] < 0 for j in nb):
            agg[i] = k
            for j in nb:
                agg[j] = k
            k += 1
    first = list(agg)
    for i in range(p):
        if agg[i] >= 0:
            continue
        cand = [first[j] for j in indices[indptr[i] : indptr[i + 1]] if first[j] >= 0]
        if cand:
            agg[i] = max(set(cand), key=cand.count)
        else:  # pragma: no cover - every free variable has an aggregated neighbour
            agg[i] = k
            k += 1
    return np.asarray(agg, dtype=np.int64), k


def _union_rows(groups, n_groups, M, members=None):
    """CSR (groups x p) whose row ``g`` is the union of the rows of ``M`` in group ``g``.

    Row ``members[k]`` of ``M`` (default ``k``) belongs to group ``groups[k]``.
    """
    members = np.arange(len(groups)) if members is None else members
    T = sp.csr_array(
        (np.ones(len(groups), dtype=np.int32), (groups, members)),
        shape=(n_groups, M.shape[0]),
    )
    U = sp.csr_array(T @ M)
    U.sort_indices()
    return U


class _LapPlan:
    """Everything about a LAP fit that depends on the graph only.

    Attributes
    ----------
    ti, tj : ndarray of int64, shape (n_tasks,)
        The entry ``(ti, tj)`` of each task (``ti <= tj``; ``ti == tj`` for
        the diagonal), stored sorted by cluster.
    sizes : ndarray of int64, shape (n_tasks,)
        ``|A|`` of each task.
    a_ptr, a_idx : ndarray
        CSR-like: the 1-neighbourhood ``A`` of each task (sorted variables).
    task_cluster : ndarray of int64, shape (n_tasks,)
        The cluster whose Gram matrix holds the task's block.
    cl_ptr, cl_idx : ndarray
        CSR-like: the variables ``U`` of each cluster (sorted), the union of
        the ``A`` of its tasks.
    """

    def __init__(self, adjacency):
        p = adjacency.shape[0]
        self.n_features = p
        adj = sp.csr_array(adjacency, dtype=np.int32)
        adj.sort_indices()
        closed = sp.csr_array(adj + sp.csr_array(sp.identity(p, dtype=np.int32, format="csr")))
        upper = sp.triu(adj, k=1, format="coo")
        ti = np.concatenate([np.arange(p), upper.row]).astype(np.int64)
        tj = np.concatenate([np.arange(p), upper.col]).astype(np.int64)
        n_tasks = len(ti)
        # Row t of M is the 1-neighbourhood A_t = N[ti] u N[tj] (closed neighbourhoods).
        two = np.flatnonzero(ti != tj)
        M = _union_rows(np.concatenate([np.arange(n_tasks), two]), n_tasks, closed, np.concatenate([ti, tj[two]]))
        m = np.diff(M.indptr).astype(np.int64)

        # Three ways to share Gram blocks, chosen per aggregate by cost (sum of |U|^2):
        # one set U per aggregate, one per owning variable (ti), or one per task.
        agg, n_agg = _aggregate(adj)
        owner_agg = agg[ti]
        u_agg = np.diff(_union_rows(owner_agg, n_agg, M).indptr).astype(np.float64)
        u_node = np.diff(_union_rows(ti, p, M).indptr).astype(np.float64)
        node_cost = np.bincount(agg, weights=u_node**2, minlength=n_agg)
        task_cost = np.bincount(owner_agg, weights=m.astype(np.float64) ** 2, minlength=n_agg)
        choice = np.argmin(np.stack([u_agg**2, node_cost, task_cost]), axis=0)[owner_agg]
        key = np.where(choice == 0, owner_agg, np.where(choice == 1, n_agg + ti, n_agg + p + np.arange(n_tasks)))
        order = np.argsort(key, kind="stable")
        skey = key[order]
        task_cluster = np.cumsum(np.concatenate([[0], skey[1:] != skey[:-1]])).astype(np.int64)
        n_clusters = int(task_cluster[-1]) + 1 if n_tasks else 0

        M = sp.csr_array(M[order])
        M.sort_indices()
        U = _union_rows(task_cluster, n_clusters, M)
        self.ti, self.tj, self.sizes = ti[order], tj[order], m[order]
        self.task_cluster = task_cluster
        self.a_ptr, self.a_idx = M.indptr.astype(np.int64), M.indices
        self.cl_ptr, self.cl_idx = U.indptr.astype(np.int64), U.indices
        self.n_clusters = n_clusters
        self.n_tasks = n_tasks
        self.max_size = int(m.max()) if n_tasks else 0
        self.cluster_sizes = np.diff(self.cl_ptr)

    def chunks(self, n_samples, min_chunks=1):
        """Split the clusters into work chunks of similar cost and bounded memory.

        The compute cost of a cluster is ``u^2 n`` (its Gram matrix) plus
        ``sum |A|^3`` (its solves); its memory is ``max(u^2, sum |A|^2)``
        entries. Returns a list of ``(cluster_start, cluster_stop,
        task_start, task_stop)``.
        """
        u = self.cluster_sizes.astype(np.float64)
        m = self.sizes.astype(np.float64)
        tasks_per_cluster = np.bincount(self.task_cluster, minlength=self.n_clusters)
        memory = np.maximum(u**2, np.bincount(self.task_cluster, weights=m**2, minlength=self.n_clusters))
        compute = u**2 * n_samples + np.bincount(self.task_cluster, weights=m**3, minlength=self.n_clusters)
        n_chunks = max(int(min_chunks), int(np.ceil(memory.sum() / _CHUNK_ENTRIES)), 1)
        n_chunks = min(n_chunks, max(self.n_clusters, 1))
        cum = np.cumsum(compute)
        total = float(cum[-1]) if len(cum) else 0.0
        bounds = np.searchsorted(cum, total * np.arange(1, n_chunks) / n_chunks, side="right")
        bounds = np.unique(np.concatenate([[0], bounds, [self.n_clusters]]))
        task_bounds = np.concatenate([[0], np.cumsum(tasks_per_cluster)])
        return [
            (int(a), int(b), int(task_bounds[a]), int(task_bounds[b])) for a, b in zip(bounds[:-1], bounds[1:]) if b > a
        ]

    def chunk_args(self, c0, c1, t0, t1):
        """The plain arrays a worker needs for clusters ``c0:c1`` (tasks ``t0:t1``)."""
        cp = self.cl_ptr[c0 : c1 + 1]
        ap = self.a_ptr[t0 : t1 + 1]
        return dict(
            cl_ptr=cp - cp[0],
            cl_idx=self.cl_idx[cp[0] : cp[-1]],
            task_cluster=self.task_cluster[t0:t1] - c0,
            a_ptr=ap - ap[0],
            a_idx=self.a_idx[ap[0] : ap[-1]],
            ti=self.ti[t0:t1],
            tj=self.tj[t0:t1],
        )


def _targets_first(A, ti, tj):
    """Column permutation of each row of ``A`` putting ``ti`` first and ``tj`` second."""
    rank = np.where(A == ti[:, None], 0, np.where(A == tj[:, None], 1, 2))
    return np.argsort(rank, axis=1, kind="stable")


def _gram_buffer(XT, cl_ptr, cl_idx):
    """Flat buffer of the Gram matrices ``XT[U] @ XT[U].T`` of every cluster.

    Clusters of equal size are stacked into one batched ``matmul``.
    Returns ``(buffer, offsets)``; cluster ``c`` occupies
    ``buffer[offsets[c]:offsets[c] + u_c**2]`` in C order.
    """
    n = XT.shape[1]
    u = np.diff(cl_ptr)
    offsets = np.concatenate([[0], np.cumsum(u * u)])
    buf = np.empty(int(offsets[-1]))
    for size in np.unique(u):
        size = int(size)
        cl = np.flatnonzero(u == size)
        idx = cl_idx[cl_ptr[cl][:, None] + np.arange(size)]
        step = max(1, _CHUNK_ENTRIES // max(1, size * n))
        for s in range(0, len(cl), step):
            block = idx[s : s + step]
            if len(block) == 1:
                x = XT[block[0]]
                g = (x @ x.T)[None]
            else:
                x = XT[block]
                g = np.matmul(x, x.transpose(0, 2, 1))
            pos = offsets[cl[s : s + step]][:, None] + np.arange(size * size)
            buf[pos] = g.reshape(len(block), -1)
    return buf, offsets


def _singular_error(i, j, A):
    what = f"variable {i}" if i == j else f"edge ({i}, {j})"
    return ValueError(
        f"The sample covariance of the 1-neighbourhood of {what} ({len(A)} variables: "
        f"{list(A)[:12]}{'...' if len(A) > 12 else ''}) is singular: some variable in it is "
        "(numerically) a linear combination of the others in this sample. Remove constant or "
        "duplicated columns, collect more samples, or set shrinkage > 0."
    )


def _solve_blocks(C, diag):
    """LAP entries from stacked sub-covariances ``C`` (targets first).

    For a diagonal task the target is position 0 and ``Theta_ii = 1 / Var(x_i | rest)``;
    for an edge the targets are positions 0 and 1 and ``Theta_ij`` is the
    off-diagonal entry of the inverse of the 2 x 2 conditional covariance of
    ``(x_i, x_j)`` given the rest of ``A``; both are entries of ``C^{-1}``
    (equation (13)) computed through a Schur complement.

    Returns ``(values, bad)`` with ``bad`` flagging singular blocks.
    """
    m = C.shape[1]
    k = 1 if diag else 2
    if m > k:
        rest = C[:, k:, k:]
        try:
            w = np.linalg.solve(rest, C[:, k:, :k])
        except np.linalg.LinAlgError:
            w = np.empty((len(C), m - k, k))
            for b in range(len(C)):
                try:
                    w[b] = np.linalg.solve(rest[b], C[b, k:, :k])
                except np.linalg.LinAlgError:
                    w[b] = np.nan
        schur = C[:, :k, :k] - np.matmul(C[:, :k, k:], w)
    else:
        schur = C[:, :k, :k]
    with np.errstate(divide="ignore", invalid="ignore"):
        if diag:
            s = schur[:, 0, 0]
            bad = ~(s > _SINGULAR_RTOL * C[:, 0, 0])
            return 1.0 / s, bad
        a, b, d = schur[:, 0, 0], schur[:, 0, 1], schur[:, 1, 1]
        det = a * d - b * b
        bad = ~((a > _SINGULAR_RTOL * C[:, 0, 0]) & (d > _SINGULAR_RTOL * C[:, 1, 1]) & (det > _SINGULAR_RTOL * a * d))
        return -b / det, bad


def _bias_factor(m, n_div, bias_dof):
    """Inverse-Wishart factor ``(bias_dof - m - 1) / n_div`` making ``[S_AA^{-1}]_ij`` unbiased (``|A| = m``)."""
    return (bias_dof - m - 1.0) / n_div


def _lap_chunk(XT, n_div, shrinkage, mu, cl_ptr, cl_idx, task_cluster, a_ptr, a_idx, ti, tj, bias_dof=None):
    """Worker: LAP precision entries for one chunk of clusters.

    Parameters
    ----------
    XT : ndarray of shape (n_features, n_samples)
        Centred data, one row per variable.
    n_div : float
        Divisor of the Gram matrices (``n`` samples).
    shrinkage, mu : float
        Blocks are ``(1 - shrinkage) * C + shrinkage * mu * I``.
    cl_ptr, cl_idx, task_cluster, a_ptr, a_idx, ti, tj : ndarray
        From :meth:`_LapPlan.chunk_args`.
    bias_dof : float or None
        If given, multiply each entry of a block of ``m`` variables by
        ``(bias_dof - m - 1) / n_div`` (see :func:`_bias_factor`).

    Returns
    -------
    ndarray of shape (n_tasks,)
    """
    p = XT.shape[0]
    buf, offsets = _gram_buffer(XT, cl_ptr, cl_idx)
    u = np.diff(cl_ptr)
    sizes = np.diff(a_ptr)
    # Position of every element of every A inside its cluster's U (a small,
    # cache-resident table per chunk).
    table = np.repeat(np.arange(len(u), dtype=np.int64) * p, u) + cl_idx
    loc = np.searchsorted(table, np.repeat(task_cluster * p, sizes) + a_idx)
    loc -= np.repeat(cl_ptr[task_cluster], sizes)
    out = np.empty(len(ti))
    is_diag = ti == tj
    for m in np.unique(sizes):
        m = int(m)
        for diag in (True, False):
            sel = np.flatnonzero((sizes == m) & (is_diag == diag))
            if len(sel) == 0:
                continue
            step = max(1, _CHUNK_ENTRIES // (m * m))
            for s in range(0, len(sel), step):
                t = sel[s : s + step]
                idx = a_ptr[t][:, None] + np.arange(m)
                perm = _targets_first(a_idx[idx], ti[t], tj[t])
                L = np.take_along_axis(loc[idx], perm, axis=1)
                c = task_cluster[t]
                flat = offsets[c][:, None, None] + L[:, :, None] * u[c][:, None, None] + L[:, None, :]
                C = buf[flat]
                C /= n_div
                if shrinkage:
                    C *= 1.0 - shrinkage
                    C[:, np.arange(m), np.arange(m)] += shrinkage * mu
                vals, bad = _solve_blocks(C, diag)
                if bad.any():
                    b = int(np.flatnonzero(bad)[0])
                    raise _singular_error(int(ti[t[b]]), int(tj[t[b]]), a_idx[idx[b]])
                if bias_dof is not None:
                    vals *= _bias_factor(m, n_div, bias_dof)
                out[t] = vals
    return out


def _lap_solve(XT, plan, n_div, shrinkage=0.0, mu=1.0, n_jobs=None, verbose=0, bias_dof=None):
    """LAP precision from centred data ``XT`` (variables x samples) and a plan.

    When the dense sample covariance costs about as much as the cluster Gram
    matrices (small ``p``), it is computed in one ``syrk`` and the blocks are
    read from it; otherwise the clusters are processed in parallel chunks.
    ``bias_dof`` (the Wishart degrees of freedom, or None) turns on the
    inverse-Wishart bias correction of :func:`_bias_factor`.

    Returns ``values`` aligned with ``plan.ti``, ``plan.tj``.
    """
    from joblib import effective_n_jobs

    p, n = XT.shape
    gram_cost = float(np.sum(plan.cluster_sizes.astype(np.float64) ** 2))
    if p <= _DENSE_GRAM_MAX_FEATURES and p * p <= 10 * gram_cost:
        S = _dense_covariance(XT, n_div, shrinkage, mu)  # one large product: all BLAS threads
        return _lap_from_covariance(S, plan, n_div=n_div, bias_dof=bias_dof)
    # The blocks are small: BLAS threads only add overhead (and oversubscribe
    # with n_jobs > 1), so they are limited to one for the batched small
    # products and solves (process workers get joblib's own limit).
    n_workers = effective_n_jobs(n_jobs)
    chunks = plan.chunks(n, min_chunks=4 * n_workers if n_workers > 1 else 1)
    with single_blas_thread():
        results = Parallel(n_jobs=n_jobs, verbose=max(0, verbose - 1), prefer="threads")(
            delayed(_lap_chunk)(
                XT, float(n_div), float(shrinkage), float(mu), **plan.chunk_args(*ch), bias_dof=bias_dof
            )
            for ch in chunks
        )
    return np.concatenate(results) if results else np.empty(0)


def _dense_covariance(XT, n_div, shrinkage=0.0, mu=1.0):
    """Dense ``(1 - shrinkage) * XT XT^T / n_div + shrinkage * mu * I``."""
    p = XT.shape[0]
    S = XT @ XT.T
    S /= n_div
    if shrinkage:
        S *= 1.0 - shrinkage
        S[np.diag_indices(p)] += shrinkage * mu
    return S


def _lap_from_covariance(S, plan, n_div=None, bias_dof=None):
    """LAP precision values from a dense covariance ``S`` (small problems).

    With ``bias_dof`` (and the sample count ``n_div``), each entry of a block
    of ``m`` variables is multiplied by :func:`_bias_factor`. The batched small
    solves run with one BLAS thread.
    """
    with single_blas_thread():
        return _lap_from_covariance_kernel(S, plan, n_div, bias_dof)


def _lap_from_covariance_kernel(S, plan, n_div, bias_dof):
    out = np.empty(plan.n_tasks)
    is_diag = plan.ti == plan.tj
    for m in np.unique(plan.sizes):
        m = int(m)
        for diag in (True, False):
            sel = np.flatnonzero((plan.sizes == m) & (is_diag == diag))
            if len(sel) == 0:
                continue
            step = max(1, _CHUNK_ENTRIES // (m * m))
            for s in range(0, len(sel), step):
                t = sel[s : s + step]
                A = plan.a_idx[plan.a_ptr[t][:, None] + np.arange(m)].astype(np.int64)
                A = np.take_along_axis(A, _targets_first(A, plan.ti[t], plan.tj[t]), axis=1)
                vals, bad = _solve_blocks(S[A[:, :, None], A[:, None, :]], diag)
                if bad.any():
                    b = int(np.flatnonzero(bad)[0])
                    raise _singular_error(int(plan.ti[t[b]]), int(plan.tj[t[b]]), np.sort(A[b]))
                if bias_dof is not None:
                    vals *= _bias_factor(m, n_div, bias_dof)
                out[t] = vals
    return out


def _assemble(ti, tj, values, p):
    """Symmetric CSR precision from its upper-triangular entries."""
    off = ti != tj
    rows = np.concatenate([ti, tj[off]])
    cols = np.concatenate([tj, ti[off]])
    vals = np.concatenate([values, values[off]])
    P = sp.csr_array((vals, (rows, cols)), shape=(p, p))
    P.sort_indices()
    return P


# --------------------------------------------------------------------------
# Positive definiteness, log-determinant, repair
# --------------------------------------------------------------------------
def _logdet_spd(P):
    """``(is_positive_definite, log_det)`` of a symmetric sparse matrix.

    Dense Cholesky for a few hundred variables; above, a
    sparse LU (SuperLU, minimum-degree ordering of ``A + A^T``) restricted
    to diagonal pivots, which is an ``L D L^T`` factorisation: the matrix is
    positive definite exactly when every pivot is positive. No dense
    ``p x p`` matrix is formed.
    """
    p = P.shape[0]
    if p == 0:
        return True, 0.0
    if p <= _DENSE_FACTOR_MAX_FEATURES:
        try:
            c = np.linalg.cholesky(P.toarray())
        except np.linalg.LinAlgError:
            return False, np.nan
        return True, float(2.0 * np.log(np.diag(c)).sum())
    try:
        lu = spla.splu(
            sp.csc_matrix(P),
            permc_spec="MMD_AT_PLUS_A",
            diag_pivot_thresh=0.0,
            options=dict(SymmetricMode=True),
        )
    except RuntimeError:  # exactly singular
        return False, np.nan
    if not np.array_equal(lu.perm_r, lu.perm_c):
        return False, np.nan
    d = lu.U.diagonal()
    if not np.all(d > 0):
        return False, np.nan
    return True, float(np.log(d).sum())


def _min_eig(R, tol):
    """Smallest eigenvalue of the symmetric sparse matrix ``R`` and its relative accuracy.

    Dense (exact to rounding) for a few hundred variables; above, Lanczos
    (ARPACK) to relative accuracy about ``tol``.
    """
    p = R.shape[0]
    if p <= _DENSE_EIG_MAX_FEATURES:
        return float(np.linalg.eigvalsh(R.toarray())[0]), 0.0
    try:
        val = spla.eigsh(R, k=1, which="SA", tol=tol, maxiter=20 * p, return_eigenvectors=False)
        return float(val[0]), tol
    except spla.ArpackNoConvergence as exc:  # pragma: no cover - fall back on a bound
        if len(exc.eigenvalues):
            return float(np.min(exc.eigenvalues)), tol
        return -float(abs(R).sum(axis=1).max()), 0.0


def _shrink_to_pd(P, tol=1e-4):
    """Shrink the off-diagonal of ``P`` towards zero until it is positive definite.

    Returns ``(P_t, t, log_det)`` with ``P_t = D + t (P - D)``, ``D = diag(P)``
    and ``t`` in ``(0, 1]`` the largest value for which the smallest
    eigenvalue of ``D^{-1/2} P_t D^{-1/2}`` is at least
    :data:`REPAIR_MIN_EIGENVALUE`. Above a few hundred variables the smallest
    eigenvalue is a Lanczos estimate of relative accuracy ``tol`` and ``t``
    is lowered by a relative ``2 tol`` to cover it; the result is always
    checked by a factorisation.
    """
    d = P.diagonal()
    if not np.all(d > 0):
        raise ValueError(
            "repair='shrink' needs a positive diagonal, but the fitted precision has "
            f"{int(np.sum(d <= 0))} non-positive diagonal entries."
        )
    s = 1.0 / np.sqrt(d)
    S = sp.csr_array(sp.diags(s, format="csr"))
    R = sp.csr_array(S @ P @ S)
    R.setdiag(0.0)
    R.eliminate_zeros()
    lam, rel = _min_eig(R, tol)
    if lam >= 0:
        t = 1.0
    else:
        t = min(1.0, (1.0 - REPAIR_MIN_EIGENVALUE) / -lam * (1.0 - 2.0 * rel))
    Dm = sp.csr_array(sp.diags(d, format="csr"))
    step = 1e-3
    for _ in range(30):
        Pt = sp.csr_array(Dm + t * (P - Dm))
        Pt.sort_indices()
        ok, logdet = _logdet_spd(Pt)
        if ok:
            return Pt, t, logdet
        t *= 1.0 - step
        step = min(0.5, 2 * step)
    raise RuntimeError("repair='shrink' failed to find a positive definite matrix.")  # pragma: no cover


# --------------------------------------------------------------------------
# Covariance selection (maximum likelihood with a fixed pattern)
# --------------------------------------------------------------------------
def _newton_covsel(S, rows, cols, theta0, tol=1e-10, max_iter=100, verbose=0):
    """Maximum-likelihood precision with support ``(rows, cols)`` by Newton's method.

    Minimises ``f(Theta) = -log det Theta + tr(S Theta)`` over symmetric
    ``Theta`` supported on the pattern (``rows <= cols``, diagonal included),
    with the exact Hessian ``H[(ij),(kl)] = W_ik W_jl + W_il W_jk`` (``W =
    Theta^{-1}``) and a damped step while the Newton decrement exceeds 1/4
    (the objective is self-concordant, so full steps converge quadratically
    after that).

    Returns ``(Theta, W, n_iter, kkt)`` with dense ``Theta`` and ``W`` and the
    final residual ``kkt = max |W - S|`` over the pattern divided by ``max S_ii``.
    """
    p = S.shape[0]
    half = np.where(rows == cols, 0.5, 1.0)
    target = S[rows, cols]
    scale = float(np.max(np.diag(S)))

    def build(x):
        T = np.zeros((p, p))
        T[rows, cols] = x
        T[cols, rows] = x
        return T

    def objective(x):
        T = build(x)
        try:
            c = sla.cho_factor(T, lower=True, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            return np.inf, None
        logdet = 2.0 * np.log(np.diag(c[0])).sum()
        return -logdet + 2.0 * np.dot(half * target, x), c

    x = theta0[rows, cols].copy()
    bound = float(np.max(1.0 / np.diag(S)))
    f, cf = objective(x)
    if cf is None:
        raise ValueError("The initial precision for Newton's method is not positive definite.")
    kkt = np.inf
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        W = sla.cho_solve(cf, np.eye(p), check_finite=False)
        resid = W[rows, cols] - target
        kkt = float(np.max(np.abs(resid))) / scale
        if verbose:
            print(f"[GaussianMaxLikelihood] Newton iteration {n_iter}, objective = {f:.10g}, kkt = {kkt:.3g}")
        if kkt <= tol:
            return build(x), W, n_iter, kkt
        g = -2.0 * half * resid
        Wr, Wc = W[rows], W[cols]
        H = Wr[:, rows] * Wc[:, cols]
        H += Wr[:, cols] * Wc[:, rows]
        H *= 2.0 * np.outer(half, half)
        try:
            dx = -sla.solve(H, g, assume_a="pos", check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            dx = -np.linalg.lstsq(H, g, rcond=None)[0]
        del H, Wr, Wc
        decrement = float(-g @ dx)
        t = 1.0
        while True:
            fn, cn = objective(x + t * dx)
            if cn is not None and (decrement < 1.0 / 16 or fn <= f - 0.25 * t * decrement):
                break
            t *= 0.5
            if t < 1e-14:
                break
        if cn is None:
            break
        x = x + t * dx
        f, cf = fn, cn
        if np.max(np.abs(x)) > 1e10 * bound:  # the likelihood is unbounded: no MLE
            break
    W = sla.cho_solve(cf, np.eye(p), check_finite=False)
    kkt = float(np.max(np.abs(W[rows, cols] - target))) / scale
    return build(x), W, n_iter, kkt


def _regression_covsel(S, neighbours, W0=None, tol=1e-10, max_iter=1000, verbose=0):
    """Maximum-likelihood precision by the modified regression algorithm.

    Hastie, Tibshirani & Friedman (2009), Algorithm 17.1: cycle over the
    variables; for variable ``i`` solve ``W[N, N] beta = S[N, i]`` on its
    neighbours ``N`` and set row/column ``i`` of ``W`` to ``W[:, N] beta``.
    At convergence ``W`` equals ``S`` on the pattern and its inverse is zero
    outside it. Stops when a sweep changes no entry of ``W`` by more than
    ``tol * max S_ii``.

    Returns ``(Theta, W, n_iter, change)`` with dense symmetric ``Theta``, the
    working covariance ``W`` (which approaches ``inv(Theta)`` at convergence)
    and ``change``, the largest change of an entry of ``W`` in the last
    sweep divided by ``max S_ii``.
    """
    p = S.shape[0]
    W = S.copy() if W0 is None else W0.copy()
    scale = float(np.max(np.diag(S)))
    change = np.inf
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        change = 0.0
        for i in range(p):
            nb = neighbours[i]
            if len(nb) == 0:
                col = np.zeros(p)
            else:
                Wn = W[nb]
                beta = np.linalg.solve(Wn[:, nb], S[nb, i])
                col = beta @ Wn
            col[i] = S[i, i]
            change = max(change, float(np.max(np.abs(col - W[i]))))
            W[i] = col
            W[:, i] = col
        change /= scale
        if verbose:
            print(f"[GaussianMaxLikelihood] regression sweep {n_iter}, max change = {change:.3g}")
        if change <= tol:
            break
    Theta = np.zeros((p, p))
    for i in range(p):
        nb = neighbours[i]
        if len(nb):
            beta = np.linalg.solve(W[np.ix_(nb, nb)], S[nb, i])
            tii = 1.0 / (S[i, i] - beta @ S[nb, i])
            Theta[nb, i] = -beta * tii
        else:
            tii = 1.0 / S[i, i]
        Theta[i, i] = tii
    Theta = 0.5 * (Theta + Theta.T)
    return Theta, W, n_iter, change


# --------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------
class _BaseGaussianMRF(DensityMixin, BaseEstimator):
    """Validation, storage and the covariance-estimator API shared by both estimators.

    A subclass's ``fit`` calls :meth:`_prepare` (validation, graph, centring),
    computes the sparse precision and hands it to :meth:`_store`.
    """

    #: How to obtain a positive definite fit (completes the error message of ``score``).
    _pd_advice = "more samples or shrinkage > 0"

    _parameter_constraints: dict = {
        "graph": [str, nx.Graph, MRFGraph, "array-like", "sparse matrix"],
        "assume_centered": ["boolean"],
        "shrinkage": [Interval(Real, 0, 1, closed="left")],
        "store_covariance": ["boolean", StrOptions({"auto"})],
        "verbose": ["verbose"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.non_deterministic = False
        return tags

    # -- fit ----------------------------------------------------------------
    def _prepare(self, X):
        """Validate X, resolve the pattern, centre; return ``(XT, n_div, mu)``."""
        X = validate_data(self, X, reset=True, dtype=np.float64, ensure_min_samples=2)
        n, p = X.shape
        names = getattr(self, "feature_names_in_", None)
        self.adjacency_ = resolve_adjacency(self.graph, p, names)
        self.location_ = np.zeros(p) if self.assume_centered else X.mean(axis=0)
        XT = X.T.copy()  # one row per variable: the kernels gather variables
        XT -= self.location_[:, None]
        mu = float(np.einsum("ij,ij->", XT, XT)) / (n * p) if self.shrinkage else 1.0
        return XT, float(n), mu

    def _check_enough_samples(self, n, max_size, what, bias_correction=False):
        """Raise when the largest block needs more samples (only with ``shrinkage == 0``).

        A block of ``m`` variables needs ``m <= dof`` (``dof = n - 1``, or ``n``
        with ``assume_centered``) to be invertible, and ``m <= dof - 2`` for
        the inverse-Wishart bias correction (a positive factor).
        """
        if self.shrinkage:
            return
        dof = n if self.assume_centered else n - 1
        centred = "" if self.assume_centered else "centred "
        if max_size > dof:
            need = max_size + (0 if self.assume_centered else 1)
            raise ValueError(
                f"{type(self).__name__} needs at least {need} samples (rows) for this graph: "
                f"{what} has {max_size} variables, and the sample covariance of {max_size} "
                f"variables estimated from {n} {centred}samples "
                "is singular. Collect more samples, use a sparser graph, or set shrinkage > 0 "
                "to fit (1 - shrinkage) * S + shrinkage * mean(diag(S)) * I instead."
            )
        if bias_correction and max_size > dof - 2:
            need = max_size + (2 if self.assume_centered else 3)
            raise ValueError(
                f"{type(self).__name__} with bias_correction=True needs at least {need} samples "
                f"(rows) for this graph: {what} has {max_size} variables, and the inverse-Wishart "
                f"correction factor (n - |A| - {1 if self.assume_centered else 2}) / n is not positive "
                f"with n = {n} {centred}samples. Collect more samples, set bias_correction=False, "
                "or set shrinkage > 0 (the correction is then not applied)."
            )

    def _store(self, precision, is_pd, logdet, covariance=None):
        p = precision.shape[0]
        self.precision_ = precision
        self.is_positive_definite_ = bool(is_pd)
        self.log_partition_ = 0.5 * (p * np.log(2 * np.pi) - logdet) if is_pd else np.nan
        store = self.store_covariance
        if store == "auto":
            store = p <= DENSE_MAX_FEATURES
        if store and is_pd:
            if covariance is None:
                covariance = np.linalg.inv(precision.toarray())
                covariance = 0.5 * (covariance + covariance.T)
            self.covariance_ = covariance
        else:
            self.covariance_ = None

    # -- the covariance-estimator API ----------------------------------------
    def get_precision(self):
        """The fitted precision matrix (sparse).

        Returns
        -------
        precision : scipy.sparse.csr_array of shape (n_features, n_features)
            Same object as ``precision_``; use ``.toarray()`` for a dense copy.
        """
        check_is_fitted(self)
        return self.precision_

    def _centred(self, X):
        """Validated, centred X transposed: one row per variable."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        XT = X.T.copy()
        XT -= self.location_[:, None]
        return XT

    def _quadratic(self, XT):
        """``x^T Theta x`` for every column of ``XT``, with the sparse precision.

        Works through blocks of rows of the precision, so the temporary
        memory is bounded; ``O(nnz(Theta) n)`` time.
        """
        p, n = XT.shape
        out = np.zeros(n)
        P = self.precision_
        step = max(1, _CHUNK_ENTRIES // max(1, n))
        for s in range(0, p, step):
            out += np.einsum("ij,ij->j", P[s : s + step] @ XT, XT[s : s + step])
        return out

    def mahalanobis(self, X):
        """Squared Mahalanobis distances of the rows of X under the fitted model.

        ``(x - location_)^T precision_ (x - location_)``, with the sparse
        precision (linear in its number of non-zeros).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        dist : ndarray of shape (n_samples,)
            Negative values are possible only if ``is_positive_definite_`` is False.
        """
        return self._quadratic(self._centred(X))

    def score_samples(self, X):
        """Gaussian log-density of each row under the fitted model.

        ``-(x - mu)^T Theta (x - mu) / 2 - log_partition_`` with
        ``log_partition_ = (p log(2 pi) - log det Theta) / 2``, the
        log-determinant taken from a sparse factorisation at fit time.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)

        Raises
        ------
        ValueError
            If the fitted precision is not positive definite (no density).
        """
        Xc = self._centred(X)
        if not self.is_positive_definite_:
            raise ValueError(
                f"The precision fitted by {type(self).__name__} is not positive definite, so it "
                f"defines no Gaussian density and no log-likelihood. Refit with {self._pd_advice}."
            )
        return -0.5 * self._quadratic(Xc) - self.log_partition_

    def score(self, X, y=None):
        """Mean Gaussian log-likelihood of X under the fitted model (higher is better).

        Equals scikit-learn's ``EmpiricalCovariance.score`` for the same
        ``location_`` and precision: ``X`` is centred by ``location_``, not
        by its own mean.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        float
        """
        return float(np.mean(self.score_samples(X)))

    def error_norm(self, comp_cov, norm="frobenius", scaling=True, squared=True):
        """Error between ``comp_cov`` and ``covariance_`` (as ``EmpiricalCovariance.error_norm``).

        Only available when the dense covariance is stored (see
        ``store_covariance``). To compare precisions on large problems,
        use ``scipy.sparse.linalg.norm(est.precision_ - true_precision)``.

        Parameters
        ----------
        comp_cov : array-like of shape (n_features, n_features)
        norm : {"frobenius", "spectral"}, default="frobenius"
        scaling : bool, default=True
            Divide the squared norm by ``n_features``.
        squared : bool, default=True
            Return the squared norm.

        Returns
        -------
        float
        """
        check_is_fitted(self)
        comp_cov = np.asarray(comp_cov, dtype=np.float64)
        p = self.n_features_in_
        if comp_cov.shape != (p, p):
            raise ValueError(f"comp_cov has shape {comp_cov.shape}; expected ({p}, {p}) (n_features_in_ = {p}).")
        if self.covariance_ is None:
            raise ValueError(
                "covariance_ was not stored (store_covariance=False, more than "
                f"{DENSE_MAX_FEATURES} features with store_covariance='auto', or a precision "
                "that is not positive definite); error_norm compares dense covariances."
            )
        error = comp_cov - self.covariance_
        if norm == "frobenius":
            sq = float(np.sum(error**2))
        elif norm == "spectral":
            sq = float(np.amax(sla.svdvals(error.T @ error)))
        else:
            raise NotImplementedError("Only spectral and frobenius norms are implemented")
        if scaling:
            sq /= error.shape[0]
        return sq if squared else float(np.sqrt(sq))


class GaussianLAP(_BaseGaussianMRF):
    """Precision of a Gaussian MRF with a known zero pattern, by LAP.

    Every non-zero entry of the precision ``Theta`` is read off the inverse
    sample covariance of a small marginal model: for an edge ``(i, j)`` the
    1-neighbourhood ``A = {i, j} u N(i) u N(j)``, for a diagonal entry
    ``A = {i} u N(i)``. The estimate is symmetric by construction and zero
    outside the graph. It is not guaranteed to be positive definite; when it
    is not, ``fit`` warns, sets ``is_positive_definite_ = False`` and, with
    ``repair="shrink"``, repairs it.

    Parameters
    ----------
    graph : networkx.Graph, list of tuples, array-like, sparse matrix or str, default="chain"
        The zero pattern of the precision: variables ``i != j`` are
        neighbours when ``Theta_ij`` may be non-zero. A networkx graph (nodes
        map to columns in ``list(G.nodes)`` order, or by name for a
        DataFrame), a list of edges (or cliques, which contribute all their
        pairs), a square matrix whose non-zero pattern is used (values and
        diagonal ignored; it must be structurally symmetric, so a precision
        matrix can be passed as its own pattern), or one of ``"chain"``,
        ``"complete"``, ``"grid:RxC"``. Resolved in ``fit`` into
        ``adjacency_``.

    assume_centered : bool, default=False
        If True, the data are not centred (``location_`` is zero) and the
        sample covariance is ``X^T X / n``, as in the paper. If False, the
        columns are centred first.

    shrinkage : float in [0, 1), default=0.0
        Use ``(1 - shrinkage) * S + shrinkage * mu * I`` with ``mu`` the mean
        sample variance instead of the sample covariance ``S``. Any positive
        value makes every block invertible, so the fit also works with fewer
        samples than variables in a 1-neighbourhood (without it that is an
        error).

    bias_correction : bool, default=True
        Multiply every entry read off a block of ``|A|`` variables by
        ``(n - |A| - 2) / n`` (``(n - |A| - 1) / n`` with
        ``assume_centered=True``), which makes each entry unbiased under the
        Gaussian model (see Notes). Needs ``n >= |A| + 3`` (``|A| + 2`` with
        ``assume_centered=True``) for the largest block. Not applied when
        ``shrinkage > 0``. ``False`` gives the paper's uncorrected estimate.

    repair : {"shrink"} or None, default=None
        What to do when the estimate is not positive definite. ``None``: keep
        it, warn (:class:`NotPositiveDefiniteWarning`) and set
        ``is_positive_definite_ = False``; ``score`` then raises. ``"shrink"``:
        keep the diagonal ``D`` and scale every off-diagonal entry by the
        largest ``t`` in ``(0, 1]`` for which the smallest eigenvalue of
        ``D^{-1/2} Theta D^{-1/2}`` is at least ``1e-6``; the factor is stored
        in ``repair_factor_`` and a warning still says the raw estimate was
        not positive definite. The repair restores positive definiteness,
        not likelihood: held-out, the repaired estimate can score far below
        maximum likelihood on ill-conditioned precisions (on the example's
        ``12 x 12`` Laplacian with ``n = 1000``, -91.2 against -31.3 for
        :class:`GaussianMaxLikelihood`; no rescaling of the off-diagonal or
        the diagonal did better than -60), because the likelihood is dominated
        by the smallest eigenvalues, which no entry-wise local estimate pins
        down. Use :class:`GaussianMaxLikelihood` when the density matters.

    store_covariance : bool or "auto", default="auto"
        Also store the dense ``covariance_ = inv(precision_)`` (``O(p^2)``
        memory, ``O(p^3)`` time). ``"auto"`` stores it for at most 2000
        features; otherwise ``covariance_`` is None.

    n_jobs : int, default=None
        Number of jobs for the block inversions, through :mod:`joblib` (one
        task per chunk of neighbourhoods; threads are preferred, as numpy
        releases the GIL, but ``joblib.parallel_config`` can choose any
        backend). ``None`` means 1 unless in a :obj:`joblib.parallel_config`
        context; ``-1`` uses all processors. BLAS is limited to one thread
        during the block solves (the blocks are small).

    verbose : int, default=0
        Print the time of each phase; above 1, also joblib's progress.

    Attributes
    ----------
    location_ : ndarray of shape (n_features,)
        Estimated mean (zeros with ``assume_centered=True``).

    precision_ : scipy.sparse.csr_array of shape (n_features, n_features)
        The estimated precision, non-zero only on the diagonal and the edges
        of the graph (``precision_.toarray()`` for a dense copy).

    covariance_ : ndarray of shape (n_features, n_features) or None
        ``inv(precision_)`` if stored (see ``store_covariance``) and the
        precision is positive definite, else None.

    adjacency_ : scipy.sparse.csr_array of bool, shape (n_features, n_features)
        The resolved graph: symmetric, zero diagonal.

    is_positive_definite_ : bool
        Whether ``precision_`` is positive definite (after the repair, if any).

    repair_factor_ : float
        The off-diagonal scale ``t`` applied by ``repair="shrink"`` (1.0 when
        no repair was needed or asked for).

    log_partition_ : float
        ``(p log(2 pi) - log det precision_) / 2``, the log normaliser of the
        density; NaN if the precision is not positive definite.

    max_neighbourhood_size_ : int
        The largest ``|A|``; ``fit`` needs more samples than this (plus one
        when centring) unless ``shrinkage > 0``.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit. Defined only when X has feature
        names that are all strings.

    See Also
    --------
    GaussianMaxLikelihood : Maximum likelihood with the same zero pattern.
    sklearn.covariance.GraphicalLasso : Sparse precision with an unknown pattern.
    sklearn.covariance.EmpiricalCovariance : The unrestricted estimate.

    Notes
    -----
    For an entry ``q`` (an edge or a node) with 1-neighbourhood ``A``, LAP
    estimates the marginal Gaussian on ``A`` (Section 6.1, equation (12)) by
    its sample covariance ``S_AA`` and pulls out the potential of ``q``
    (equations (13)-(14)):

    .. math::

        \\hat\\Theta_{ij} = \\left[S_{AA}^{-1}\\right]_{ij}, \\qquad
        A = \\{i, j\\} \\cup \\mathcal{N}_i \\cup \\mathcal{N}_j,

    and ``Theta_ii`` likewise from ``A = {i} u N(i)``. Because the potential
    normalised with respect to zero is unique (Theorem 6) and ``A``
    separates ``q`` from the rest of the graph, the marginal on ``A`` has the
    same potential on ``q`` as the full model (Theorems 10 and 12), so each
    estimate is consistent. In the paper's 7-node example (Figure 6)
    ``Theta_25`` comes from the 3 x 3 block on ``{1, 2, 5}``.

    With ``bias_correction=True`` (and ``shrinkage == 0``) each entry is
    multiplied by ``(n - |A| - 2) / n``, or ``(n - |A| - 1) / n`` with
    ``assume_centered=True``. The sample covariance ``S`` uses the ``1/n``
    normalisation, so ``n S_AA`` is Wishart with ``n - 1`` (centred data) or
    ``n`` degrees of freedom and scale ``Sigma_AA``; the inverse-Wishart mean
    then gives ``E[S_AA^{-1}] = n / (n - |A| - 2) Theta^A`` (or
    ``n / (n - |A| - 1) Theta^A``), where ``Theta^A = Sigma_AA^{-1}`` has
    the entry of interest equal to ``Theta_ij``. The factor therefore makes
    every entry exactly unbiased for Gaussian data. This correction is not
    in the paper; with few samples it matters (at ``n = 3 |A|`` the
    uncorrected entries are about 1.5 times too large), and Figure 8 of the
    benchmark shows both.

    The entries are computed as Schur complements:
    ``Theta_ii = 1 / Var(x_i | x_{A \\ i})`` and ``Theta_ij`` is the
    off-diagonal entry of the inverse of the 2 x 2 conditional covariance of
    ``(x_i, x_j)`` given ``x_{A \\ {i, j}}``.

    Complexity (Section 6.2, equation (15)): one ``|A| x |A|`` solve per
    non-zero, ``O(sum_q |A_q|^3)`` in total, plus the sample covariance on
    the blocks. The blocks are never formed one by one from the data: the
    variables are grouped into aggregates (``{i} u N(i)``) and the Gram
    matrix of the union of the neighbourhoods of each aggregate is computed
    once, when that is cheaper than per-variable or per-entry Gram matrices,
    so on a lattice the data cost is ``O(c n p)`` for a small constant ``c``
    (for at most 3000 variables, the dense sample covariance is used instead
    when it costs about as much). The small solves are batched by size and
    the chunks of aggregates run through :mod:`joblib`. Memory is ``O(n p)``
    for the centred data plus bounded work chunks; no ``p x p`` dense matrix
    is formed for large ``p``. Positive definiteness and the
    log-determinant used by :meth:`score` come from a sparse ``L D L^T``
    factorisation (SuperLU with diagonal pivoting and a minimum-degree
    ordering; dense Cholesky for a few hundred variables); the repair needs
    one Lanczos estimate of the smallest eigenvalue and one more
    factorisation.

    LAP estimates read off marginals of few variables, so with few samples
    they are more accurate than estimators that fit many more parameters
    (Section 6.3, Figure 8), but the assembled matrix need not be positive
    definite, especially for ill-conditioned precisions.

    References
    ----------
    Mizrahi, Y. D., Denil, M. and de Freitas, N. "Linear and parallel learning
    of Markov random fields." ICML, 2014.

    Mizrahi, Y. D., de Freitas, N. and Tenorio, L. "Efficient learning of
    practical Markov random fields with exact inference." Section 6.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.estimators.gaussian import GaussianLAP
    >>> rng = np.random.default_rng(0)
    >>> precision = np.array([[2.0, -0.8, 0.0], [-0.8, 2.0, -0.8], [0.0, -0.8, 2.0]])
    >>> X = rng.multivariate_normal(np.zeros(3), np.linalg.inv(precision), size=5000)
    >>> est = GaussianLAP(graph=[(0, 1), (1, 2)]).fit(X)
    >>> est.precision_.nnz  # zero outside the graph
    7
    >>> bool(np.allclose(est.precision_.toarray(), precision, atol=0.15))
    True
    """

    _parameter_constraints: dict = {
        **_BaseGaussianMRF._parameter_constraints,
        "bias_correction": ["boolean"],
        "repair": [StrOptions({"shrink"}), None],
        "n_jobs": [Integral, None],
    }

    _pd_advice = "repair='shrink', more samples, or shrinkage > 0 (or GaussianMaxLikelihood)"

    def __init__(
        self,
        graph="chain",
        *,
        assume_centered=False,
        shrinkage=0.0,
        bias_correction=True,
        repair=None,
        store_covariance="auto",
        n_jobs=None,
        verbose=0,
    ):
        self.graph = graph
        self.assume_centered = assume_centered
        self.shrinkage = shrinkage
        self.bias_correction = bias_correction
        self.repair = repair
        self.store_covariance = store_covariance
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _log(self, msg, t0):
        if self.verbose:
            print(f"[GaussianLAP] {msg}, time = {time.perf_counter() - t0:.2f}s")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Estimate the precision from X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite real values).
        y : None
            Ignored.

        Returns
        -------
        self : GaussianLAP
            The fitted estimator.

        Raises
        ------
        ValueError
            NaN or infinite values; a graph that does not match X; fewer
            samples than the largest 1-neighbourhood needs (with
            ``shrinkage=0``; three more than its size with
            ``bias_correction=True``, two more with ``assume_centered``); a
            singular neighbourhood covariance (constant or collinear
            columns).
        """
        t0 = time.perf_counter()
        XT, n_div, mu = self._prepare(X)
        p, n = XT.shape
        self._log(f"validated {n} x {p} data", t0)
        plan = _LapPlan(self.adjacency_)
        self.max_neighbourhood_size_ = plan.max_size
        self._log(
            f"planned {plan.n_tasks} entries in {plan.n_clusters} blocks (largest |A| = {plan.max_size})",
            t0,
        )
        b = int(np.argmax(plan.sizes))
        i, j = int(plan.ti[b]), int(plan.tj[b])
        what = f"the 1-neighbourhood of {f'variable {i}' if i == j else f'edge ({i}, {j})'}"
        correct = self.bias_correction and not self.shrinkage
        self._check_enough_samples(n, plan.max_size, what, bias_correction=correct)
        bias_dof = (n if self.assume_centered else n - 1) if correct else None
        values = _lap_solve(
            XT, plan, n_div, self.shrinkage, mu, n_jobs=self.n_jobs, verbose=self.verbose, bias_dof=bias_dof
        )
        precision = _assemble(plan.ti, plan.tj, values, p)
        self._log("solved the neighbourhood blocks", t0)
        is_pd, logdet = _logdet_spd(precision)
        self.repair_factor_ = 1.0
        if not is_pd:
            msg = (
                f"The LAP estimate of the precision ({p} variables, n = {n} samples) is not "
                "positive definite; this happens with few samples or when the data do not follow "
                "a Gaussian MRF on this graph."
            )
            if self.repair == "shrink":
                precision, self.repair_factor_, logdet = _shrink_to_pd(precision)
                is_pd = True
                msg += (
                    f" repair={self.repair!r} scaled its off-diagonal entries by {self.repair_factor_:.6g}"
                    " (see repair_factor_)"
                )
                msg += "."
            else:
                msg += (
                    " is_positive_definite_ is False and score() will raise. Use repair='shrink', "
                    "shrinkage > 0, more samples, or GaussianMaxLikelihood."
                )
            warnings.warn(msg, NotPositiveDefiniteWarning, stacklevel=3)
        del XT
        self._store(precision, is_pd, logdet)
        self._log("checked positive definiteness", t0)
        return self


class GaussianMaxLikelihood(_BaseGaussianMRF):
    """Maximum-likelihood precision of a Gaussian MRF with a known zero pattern.

    Covariance selection (Dempster, 1972): maximise the Gaussian likelihood
    over precision matrices that are zero outside the graph. The solution
    ``Theta`` is characterised by ``inv(Theta)`` equalling the sample
    covariance on the diagonal and on every edge. This is the accuracy
    baseline for :class:`GaussianLAP`; it needs dense ``p x p`` matrices.

    Parameters
    ----------
    graph : networkx.Graph, list of tuples, array-like, sparse matrix or str, default="chain"
        The zero pattern of the precision, in any form accepted by
        :class:`GaussianLAP`. Resolved in ``fit`` into ``adjacency_``.

    assume_centered : bool, default=False
        If True, the data are not centred and ``location_`` is zero.

    shrinkage : float in [0, 1), default=0.0
        Fit to ``(1 - shrinkage) * S + shrinkage * mu * I`` (``mu`` the mean
        sample variance) instead of the sample covariance ``S``.

    solver : {"auto", "newton", "regression"}, default="auto"
        ``"newton"``: Newton's method on the non-zeros with the exact
        Hessian (quadratic convergence; ``O(q^2)`` memory and ``O(q^3)``
        time per iteration for ``q = p + n_edges`` unknowns).
        ``"regression"``: the modified regression algorithm of Hastie,
        Tibshirani & Friedman (``O(p^2)`` memory, ``O(p^2 d)`` per sweep for
        degree ``d``, linear convergence: fast on well-conditioned problems,
        slow on ill-conditioned ones such as lattice Laplacians).
        ``"auto"``: ``"newton"`` when ``q <= 6000``, else ``"regression"``.

    max_iter : int, default=200
        Maximum Newton iterations or regression sweeps.

    tol : float, default=1e-10
        Newton: stop when ``max |inv(Theta) - S|`` over the diagonal and the
        edges is at most ``tol * max_i S_ii``. Regression: stop when a sweep
        changes no entry of the working covariance by more than
        ``tol * max_i S_ii``.

    store_covariance : bool or "auto", default="auto"
        Keep ``covariance_ = inv(precision_)`` (dense). ``"auto"``: for at
        most 2000 features.

    verbose : int, default=0
        Print the objective and the optimality residual at each iteration.

    Attributes
    ----------
    location_ : ndarray of shape (n_features,)
        Estimated mean.

    precision_ : scipy.sparse.csr_array of shape (n_features, n_features)
        The ML precision, zero outside the graph.

    covariance_ : ndarray of shape (n_features, n_features) or None
        ``inv(precision_)`` if stored.

    adjacency_ : scipy.sparse.csr_array of bool, shape (n_features, n_features)
        The resolved graph.

    is_positive_definite_ : bool
        True unless the iterations stopped (with a warning) at a matrix that
        is not positive definite.

    log_partition_ : float
        ``(p log(2 pi) - log det precision_) / 2``.

    solver_ : str
        The solver used (``"newton"`` or ``"regression"``).

    n_iter_ : int
        Newton iterations or regression sweeps run.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit. Defined only when X has feature
        names that are all strings.

    See Also
    --------
    GaussianLAP : Non-iterative, linear-cost estimate with the same pattern.

    Notes
    -----
    The problem (LAP paper, Section 6, equation (8) with the pattern of
    equation (11)) is

    .. math::

        \\hat\\Theta = \\arg\\min_{\\Theta \\succ 0,\\ \\Theta_{ij} = 0
        \\ \\forall (i, j) \\notin E} \\; -\\log\\det\\Theta + \\operatorname{tr}(S\\Theta),

    convex, with optimality conditions ``[Theta^{-1}]_ij = S_ij`` for
    ``i = j`` and every edge. It has a solution when ``S`` has a positive
    definite completion from its entries on the pattern (always when
    ``n > p``; for sparse graphs often much earlier); otherwise the
    iterations diverge and a :class:`~sklearn.exceptions.ConvergenceWarning`
    is raised.

    Newton starts from the LAP estimate when that is positive definite
    (usually close, so few iterations are needed) and from
    ``diag(1 / S_ii)`` otherwise. The regression solver starts from ``S``.

    References
    ----------
    Dempster, A. P. "Covariance selection." Biometrics 28(1), 1972.

    Hastie, T., Tibshirani, R. and Friedman, J. "The Elements of Statistical
    Learning", 2nd ed., Section 17.3.1, Algorithm 17.1. Springer, 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.estimators.gaussian import GaussianMaxLikelihood
    >>> rng = np.random.default_rng(0)
    >>> precision = np.array([[2.0, -0.8, 0.0], [-0.8, 2.0, -0.8], [0.0, -0.8, 2.0]])
    >>> X = rng.multivariate_normal(np.zeros(3), np.linalg.inv(precision), size=5000)
    >>> est = GaussianMaxLikelihood(graph=[(0, 1), (1, 2)]).fit(X)
    >>> S = np.cov(X.T, bias=True)
    >>> bool(np.allclose(est.covariance_[0, 1], S[0, 1]))
    True
    """

    _parameter_constraints: dict = {
        **_BaseGaussianMRF._parameter_constraints,
        "solver": [StrOptions({"auto", "newton", "regression"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    #: ``solver="auto"`` uses Newton up to this many unknowns.
    NEWTON_MAX_UNKNOWNS = 6000

    def __init__(
        self,
        graph="chain",
        *,
        assume_centered=False,
        shrinkage=0.0,
        solver="auto",
        max_iter=200,
        tol=1e-10,
        store_covariance="auto",
        verbose=0,
    ):
        self.graph = graph
        self.assume_centered = assume_centered
        self.shrinkage = shrinkage
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.store_covariance = store_covariance
        self.verbose = verbose

    _pd_advice = "more samples, shrinkage > 0, or a larger max_iter"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the maximum-likelihood precision.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite real values).
        y : None
            Ignored.

        Returns
        -------
        self : GaussianMaxLikelihood
            The fitted estimator.

        Raises
        ------
        ValueError
            NaN or infinite values; a graph that does not match X; too few
            samples for the neighbourhood regressions (with ``shrinkage=0``);
            a problem too large for the dense solvers.
        """
        XT, n_div, mu = self._prepare(X)
        p, n = XT.shape
        adj = self.adjacency_
        upper = sp.triu(adj, k=1, format="coo")
        rows = np.concatenate([np.arange(p), upper.row]).astype(np.int64)
        cols = np.concatenate([np.arange(p), upper.col]).astype(np.int64)
        q = len(rows)
        solver = self.solver
        if solver == "auto":
            solver = "newton" if q <= self.NEWTON_MAX_UNKNOWNS else "regression"
        if solver == "newton" and q > 4 * self.NEWTON_MAX_UNKNOWNS:
            raise ValueError(
                f"solver='newton' would build a dense {q} x {q} Hessian "
                f"({8 * q * q / 2**30:.1f} GiB) for {p} variables and {q - p} edges; use "
                "solver='regression' or GaussianLAP."
            )
        if p > 20000:
            raise ValueError(
                f"GaussianMaxLikelihood works with dense {p} x {p} matrices "
                f"({8 * p * p / 2**30:.1f} GiB each); use GaussianLAP for this many variables."
            )
        degree = np.diff(adj.indptr)
        max_nb = int(degree.max()) + 1 if p else 0
        self._check_enough_samples(n, max_nb, "the largest closed neighbourhood {i} u N(i)")
        S = _dense_covariance(XT, n_div, self.shrinkage, mu)
        del XT
        if np.any(np.diag(S) <= 0):
            j = int(np.flatnonzero(np.diag(S) <= 0)[0])
            raise ValueError(f"Column {j} has zero variance; remove constant columns or set shrinkage > 0.")
        self.solver_ = solver
        if solver == "newton":
            theta0 = None
            try:  # LAP, when positive definite, is usually close to the optimum
                plan = _LapPlan(adj)
                lap = _assemble(plan.ti, plan.tj, _lap_from_covariance(S, plan), p)
                if _logdet_spd(lap)[0]:
                    theta0 = lap.toarray()
            except (ValueError, np.linalg.LinAlgError):
                pass
            if theta0 is None:
                theta0 = np.diag(1.0 / np.diag(S))
            Theta, W, self.n_iter_, resid = _newton_covsel(
                S, rows, cols, theta0, tol=self.tol, max_iter=self.max_iter, verbose=self.verbose
            )
            covariance = 0.5 * (W + W.T)
        else:
            neighbours = [adj.indices[adj.indptr[i] : adj.indptr[i + 1]] for i in range(p)]
            try:
                Theta, _, self.n_iter_, resid = _regression_covsel(
                    S, neighbours, tol=self.tol, max_iter=self.max_iter, verbose=self.verbose
                )
            except np.linalg.LinAlgError:
                raise ValueError(
                    "The regression solver met a singular neighbourhood system: the maximum-"
                    f"likelihood estimate probably does not exist with n = {n} samples. Collect more "
                    "samples or set shrinkage > 0."
                ) from None
            covariance = None
        if not resid <= self.tol:
            what = (
                "the optimality residual max |inv(Theta) - S| over the pattern (relative to max S_ii) is"
                if solver == "newton"
                else "the largest change of the working covariance in the last sweep (relative to max S_ii) is"
            )
            warnings.warn(
                f"GaussianMaxLikelihood (solver={solver!r}) did not converge in {self.n_iter_} "
                f"iterations: {what} {resid:.3g} > tol={self.tol:g}. Increase "
                "max_iter, loosen tol, or add samples or shrinkage (the maximum-likelihood "
                "estimate may not exist when n is small).",
                ConvergenceWarning,
                stacklevel=3,
            )
        precision = _assemble(rows, cols, Theta[rows, cols], p)
        try:
            c = np.linalg.cholesky(Theta)
            is_pd, logdet = True, float(2.0 * np.log(np.diag(c)).sum())
        except np.linalg.LinAlgError:
            is_pd, logdet = False, np.nan
        if not is_pd:
            warnings.warn(
                "The maximum-likelihood iterations ended at a precision that is not positive "
                "definite; is_positive_definite_ is False.",
                NotPositiveDefiniteWarning,
                stacklevel=3,
            )
        self._store(precision, is_pd, logdet, covariance)
        return self
