"""The LAP kernel for Gaussian MRFs: a plan that depends on the graph, and batched block solves.

Every entry ``q`` of the precision (a variable or an edge) is read off the
inverse sample covariance of its 1-neighbourhood ``A_q`` (LAP paper, Section
6.1, equations (12)-(14)). :class:`LapPlan` lists the entries, their ``A_q``
and the clusters of entries whose blocks share one Gram matrix; the blocks are
then solved in batches of equal size and kind by one loop,
:func:`_solve_tasks`, whose blocks come either from the dense sample covariance
(:func:`lap_from_covariance`) or from the cluster Gram matrices of the data,
in parallel chunks (:func:`lap_from_data`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..._data.gaussian import StandardisedRows, dense_covariance_rows
from ..._data.rows import over_blocks
from ..._utils._budgets import GLAP_CHUNK_ENTRIES as CHUNK_ENTRIES
from ..._utils._budgets import GLAP_MIN_WORK_PER_WORKER
from ..._utils._parallel import parallel_or_serial, workers_for
from ..._utils._sklearn_compat import delayed
from ..._utils._threads import single_blas_thread

__all__ = [
    "CHUNK_ENTRIES",
    "LapPlan",
    "StandardisedRows",
    "assemble_symmetric",
    "lap_from_covariance",
    "lap_from_data",
    "pattern_unknowns",
]


# A conditional variance below this fraction of the marginal one counts as zero.
_SINGULAR_RTOL = 1e-10

# Up to this many variables, LAP may read its blocks from the dense sample
# covariance: when it has at most 10 times the entries of the cluster Gram
# matrices (one large syrk runs several times faster than many small ones).
_DENSE_GRAM_MAX_FEATURES = 3000


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


class LapPlan:
    """Everything about a LAP fit that depends on the graph only.

    Parameters
    ----------
    adjacency : scipy.sparse array of shape (p, p)
        Symmetric adjacency pattern with zero diagonal (from
        :func:`skmrf.graphs.resolve_adjacency`).

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
        compute = self._cluster_cost(n_samples)
        n_chunks = max(int(min_chunks), int(np.ceil(memory.sum() / CHUNK_ENTRIES)), 1)
        n_chunks = min(n_chunks, max(self.n_clusters, 1))
        cum = np.cumsum(compute)
        total = float(cum[-1]) if len(cum) else 0.0
        bounds = np.searchsorted(cum, total * np.arange(1, n_chunks) / n_chunks, side="right")
        bounds = np.unique(np.concatenate([[0], bounds, [self.n_clusters]]))
        task_bounds = np.concatenate([[0], np.cumsum(tasks_per_cluster)])
        return [
            (int(a), int(b), int(task_bounds[a]), int(task_bounds[b])) for a, b in zip(bounds[:-1], bounds[1:]) if b > a
        ]

    def _cluster_cost(self, n_samples):
        """Compute cost of each cluster: ``u^2 n`` (its Gram matrix) plus ``sum |A|^3`` (its solves)."""
        u = self.cluster_sizes.astype(np.float64)
        m = self.sizes.astype(np.float64)
        return u**2 * n_samples + np.bincount(self.task_cluster, weights=m**3, minlength=self.n_clusters)

    def cost(self, n_samples):
        """Compute cost of the whole plan on ``n_samples`` rows (multiply-adds, up to constants).

        Parameters
        ----------
        n_samples : int
            Rows of the data.

        Returns
        -------
        float
            ``sum u^2 n + sum |A|^3`` over the clusters and the tasks.
        """
        return float(self._cluster_cost(n_samples).sum())

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


def _gram(x, grid):
    """``x x^T`` (one matrix, or a stack of them); with ``grid = (bound, block_rows)``, the sum over
    the blocks of ``block_rows`` columns of their products rounded onto the grid of ``bound``
    (:func:`~skmrf._data.rows.on_grid`),
    each block contiguous: bit for bit what :meth:`StandardisedRows.reduce` sums block by block."""
    if grid is None:
        return x @ np.swapaxes(x, -1, -2)
    bound, B = grid
    return over_blocks(np.moveaxis(x, -1, 0), 0, _block_gram, None, B, bound, np.add, ())


def _block_gram(block, _):
    """``z z^T`` of a block of columns given with the columns first (see :func:`_gram`): a strided
    view, which BLAS reads in place with the same arithmetic as a contiguous copy (no copy: 0.09 s
    of 0.9 s on the 200 x 200 lattice, n = 1000)."""
    z = np.moveaxis(block, 0, -1)
    return z @ np.swapaxes(z, -1, -2)


def _gram_buffer(XT, cl_ptr, cl_idx, grid=None):
    """Flat buffer of the Gram matrices ``XT[U] @ XT[U].T`` of every cluster (see :func:`_gram`
    for ``grid``).

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
        step = max(1, CHUNK_ENTRIES // max(1, size * n))
        for s in range(0, len(cl), step):
            block = idx[s : s + step]
            g = _gram(XT[block[0]], grid)[None] if len(block) == 1 else _gram(XT[block], grid)
            pos = offsets[cl[s : s + step]][:, None] + np.arange(size * size)
            buf[pos] = g.reshape(len(block), -1)
    return buf, offsets


def _singular_error(i, j, A):
    """The error for a singular block on the variables ``A`` (sorted) of entry ``(i, j)``."""
    what = f"variable {i}" if i == j else f"edge ({i}, {j})"
    A = [int(v) for v in A]
    return ValueError(
        f"The sample covariance of the 1-neighbourhood of {what} ({len(A)} variables: "
        f"{A[:12]}{'...' if len(A) > 12 else ''}) is singular: some variable in it is "
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


def _solve_tasks(sizes, ti, tj, a_ptr, a_idx, gather, n_div=None, bias_dof=None):
    """The block-solve loop: LAP values of the tasks, batched by block size and kind.

    Parameters
    ----------
    sizes, ti, tj, a_ptr, a_idx : ndarray
        The tasks: ``|A|``, the entry ``(ti, tj)`` and the variables ``A``
        (CSR-like, sorted), as in :class:`LapPlan`.
    gather : callable
        ``gather(t, idx, perm)`` returns the stacked sub-covariances of the
        tasks ``t``, shape ``(len(t), m, m)``, on the variables
        ``take_along_axis(a_idx[idx], perm, axis=1)`` (targets first).
    n_div : float, optional
        The sample count, for the bias correction.
    bias_dof : float or None
        If given, multiply each entry of a block of ``m`` variables by
        ``(bias_dof - m - 1) / n_div`` (see :func:`_bias_factor`).

    Returns
    -------
    ndarray of shape (n_tasks,)

    Raises
    ------
    ValueError
        If a block is (numerically) singular.
    """
    out = np.empty(len(ti))
    is_diag = ti == tj
    for m in np.unique(sizes):
        m = int(m)
        for diag in (True, False):
            sel = np.flatnonzero((sizes == m) & (is_diag == diag))
            step = max(1, CHUNK_ENTRIES // (m * m))
            for s in range(0, len(sel), step):
                t = sel[s : s + step]
                idx = a_ptr[t][:, None] + np.arange(m)
                perm = _targets_first(a_idx[idx], ti[t], tj[t])
                vals, bad = _solve_blocks(gather(t, idx, perm), diag)
                if bad.any():
                    b = int(np.flatnonzero(bad)[0])
                    raise _singular_error(int(ti[t[b]]), int(tj[t[b]]), a_idx[idx[b]])
                if bias_dof is not None:
                    vals *= _bias_factor(m, n_div, bias_dof)
                out[t] = vals
    return out


def _lap_chunk(XT, n_div, shrinkage, mu, cl_ptr, cl_idx, task_cluster, a_ptr, a_idx, ti, tj, bias_dof=None, grid=None):
    """Worker: LAP precision entries for one chunk of clusters, from the data.

    Parameters
    ----------
    XT : ndarray of shape (n_features, n_samples)
        Centred data, one row per variable.
    n_div : float
        Divisor of the Gram matrices (``n`` samples).
    shrinkage : float
        Blocks are ``(1 - shrinkage) * C + shrinkage * diag(mu)``.
    mu : float or ndarray of shape (n_features,)
        The ridge target of every variable (a scalar: the same for all).
    cl_ptr, cl_idx, task_cluster, a_ptr, a_idx, ti, tj : ndarray
        From :meth:`LapPlan.chunk_args`.
    bias_dof : float or None
        See :func:`_solve_tasks`.
    grid : tuple, optional
        ``(bound, block_rows)`` of the data's :class:`StandardisedRows` (see :func:`_gram`).

    Returns
    -------
    ndarray of shape (n_tasks,)
    """
    buf, offsets = _gram_buffer(XT, cl_ptr, cl_idx, grid)
    return _lap_from_gram(
        buf, offsets, XT.shape[0], n_div, shrinkage, mu, cl_ptr, cl_idx, task_cluster, a_ptr, a_idx, ti, tj, bias_dof
    )


def _lap_from_gram(buf, offsets, p, n_div, shrinkage, mu, cl_ptr, cl_idx, task_cluster, a_ptr, a_idx, ti, tj, bias_dof):
    """:func:`_lap_chunk` from the clusters' Gram buffer (:func:`_gram_buffer`) of ``p`` variables."""
    u = np.diff(cl_ptr)
    sizes = np.diff(a_ptr)
    # Position of every element of every A inside its cluster's U (a small,
    # cache-resident table per chunk).
    table = np.repeat(np.arange(len(u), dtype=np.int64) * p, u) + cl_idx
    loc = np.searchsorted(table, np.repeat(task_cluster * p, sizes) + a_idx)
    loc -= np.repeat(cl_ptr[task_cluster], sizes)

    def gather(t, idx, perm):
        m = idx.shape[1]
        L = np.take_along_axis(loc[idx], perm, axis=1)
        c = task_cluster[t]
        flat = offsets[c][:, None, None] + L[:, :, None] * u[c][:, None, None] + L[:, None, :]
        C = buf[flat]
        C /= n_div
        if shrinkage:
            C *= 1.0 - shrinkage
            target = mu if np.ndim(mu) == 0 else mu[np.take_along_axis(a_idx[idx], perm, axis=1)]
            C[:, np.arange(m), np.arange(m)] += shrinkage * target
        return C

    return _solve_tasks(sizes, ti, tj, a_ptr, a_idx, gather, n_div, bias_dof)


def lap_from_covariance(S, plan, n_div=None, bias_dof=None):
    """LAP precision values from a dense covariance (small problems).

    The batched small solves run with one BLAS thread.

    Parameters
    ----------
    S : ndarray of shape (n_features, n_features)
        The (shrunk) sample covariance.
    plan : LapPlan
        The plan of the graph.
    n_div : float, optional
        The sample count, for the bias correction.
    bias_dof : float or None
        See :func:`_solve_tasks`.

    Returns
    -------
    values : ndarray of shape (plan.n_tasks,)
        Aligned with ``plan.ti``, ``plan.tj``.
    """

    def gather(t, idx, perm):
        A = np.take_along_axis(plan.a_idx[idx].astype(np.int64), perm, axis=1)
        return S[A[:, :, None], A[:, None, :]]

    with single_blas_thread():
        return _solve_tasks(plan.sizes, plan.ti, plan.tj, plan.a_ptr, plan.a_idx, gather, n_div, bias_dof)


def lap_from_data(data, plan, n_div, shrinkage=0.0, mu=1.0, n_jobs=None, verbose=0, bias_dof=None):
    """LAP precision values from standardised data and a plan.

    When the dense sample covariance costs about as much as the cluster Gram
    matrices (small ``p``), it is computed in one ``syrk`` and the blocks are
    read from it; otherwise the clusters are processed in parallel chunks.

    Parameters
    ----------
    data : StandardisedRows
        The data. In memory (``data.XT``), the clusters are processed in parallel chunks;
        else (a memmap or a dask array) their Gram blocks are summed over row chunks (on the
        workers for a dask array). Both give the same Gram blocks bit for bit.
    plan : LapPlan
        The plan of the graph.
    n_div : float
        The number of samples.
    shrinkage : float
        Blocks are ``(1 - shrinkage) * C + shrinkage * diag(mu)``.
    mu : float or ndarray of shape (n_features,)
        The ridge target of every variable (a scalar: the same for all).
    n_jobs : int, optional
        Number of joblib jobs for the chunks.
    verbose : int, default=0
        joblib's verbosity plus one.
    bias_dof : float or None
        The Wishart degrees of freedom turning on the inverse-Wishart bias
        correction of :func:`_bias_factor`, or None.

    Returns
    -------
    values : ndarray of shape (plan.n_tasks,)
        Aligned with ``plan.ti``, ``plan.tj``.
    """
    p, n = data.shape
    gram_cost = float(np.sum(plan.cluster_sizes.astype(np.float64) ** 2))
    if p <= _DENSE_GRAM_MAX_FEATURES and p * p <= 10 * gram_cost:
        S = dense_covariance_rows(data, n_div, shrinkage, mu)  # large products: all BLAS threads
        return lap_from_covariance(S, plan, n_div=n_div, bias_dof=bias_dof)
    if data.XT is None:
        return _lap_from_chunks(data, plan, n_div, shrinkage, mu, bias_dof)
    # The blocks are small: BLAS threads only add overhead (and oversubscribe
    # with n_jobs > 1), so they are limited to one for the batched small
    # products and solves (process workers get joblib's own limit).
    n_workers = workers_for(n_jobs, plan.cost(n), GLAP_MIN_WORK_PER_WORKER, prefer="threads")
    chunks = plan.chunks(n, min_chunks=4 * n_workers if n_workers > 1 else 1)
    common = (data.XT, float(n_div), float(shrinkage), mu)
    options = dict(bias_dof=bias_dof, grid=(data.bound, data.rows.block_rows()))
    with single_blas_thread(), parallel_or_serial(n_workers, verbose=max(0, verbose - 1), prefer="threads") as pool:
        if pool is None:
            results = [_lap_chunk(*common, **plan.chunk_args(*ch), **options) for ch in chunks]
        else:
            results = pool(delayed(_lap_chunk)(*common, **plan.chunk_args(*ch), **options) for ch in chunks)
    return np.concatenate(results) if results else np.empty(0)


def _gram_chunk(ZT, cl_ptr, cl_idx):
    """Worker: the clusters' Gram buffer of one chunk of rows in the fit's units."""
    return _gram_buffer(ZT, cl_ptr, cl_idx)[0]


def _lap_from_chunks(rows, plan, n_div, shrinkage, mu, bias_dof):
    """LAP values from Gram blocks summed over the row chunks of ``rows`` (StandardisedRows).

    Only the Gram buffer (``sum |U|^2`` floats over the clusters) travels from a dask worker;
    the blocks are then solved here, with one BLAS thread.
    """
    args = plan.chunk_args(0, plan.n_clusters, 0, plan.n_tasks)
    buf = rows.reduce(_gram_chunk, args["cl_ptr"], args["cl_idx"])
    offsets = np.concatenate([[0], np.cumsum(plan.cluster_sizes**2)])
    with single_blas_thread():
        return _lap_from_gram(
            buf, offsets, plan.n_features, float(n_div), float(shrinkage), mu, **args, bias_dof=bias_dof
        )


def assemble_symmetric(ti, tj, values, p):
    """Symmetric CSR matrix from its upper-triangular entries.

    Parameters
    ----------
    ti, tj : ndarray of int64, shape (q,)
        Positions ``ti <= tj`` of the entries.
    values : ndarray of shape (q,)
        The entries.
    p : int
        Size of the matrix.

    Returns
    -------
    scipy.sparse.csr_array of shape (p, p)
        With ``values`` at ``(ti, tj)`` and ``(tj, ti)``; sorted indices.
    """
    off = ti != tj
    rows = np.concatenate([ti, tj[off]])
    cols = np.concatenate([tj, ti[off]])
    vals = np.concatenate([values, values[off]])
    P = sp.csr_array((vals, (rows, cols)), shape=(p, p))
    P.sort_indices()
    return P


def pattern_unknowns(adjacency):
    """Positions ``(rows, cols)``, ``rows <= cols``, of the diagonal and the edges."""
    p = adjacency.shape[0]
    upper = sp.triu(adjacency, k=1, format="coo")
    rows = np.concatenate([np.arange(p), upper.row]).astype(np.int64)
    cols = np.concatenate([np.arange(p), upper.col]).astype(np.int64)
    return rows, cols
