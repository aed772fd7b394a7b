"""Besag's maximum pseudo-likelihood for discrete MRFs: the objective and the kernel.

The pseudo-log-likelihood of a row is ``sum_i log p(x_i | x_-i)`` (LAP paper,
Eq. 6). The full conditional of ``x_i`` only depends on ``x_i`` and its Markov
blanket, so the data enter through the distinct configurations of each
variable's blanket and their counts ("records"), computed once; every
objective evaluation is then a gather, a sparse sum and a scatter over these
records, with no Python loop over rows or variables.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._data import (
    BlanketRecords,
    blanket_records,
    merge_records,
    padded_blankets,
)
from .._penalty import CentredRidge
from .._solvers import minimize_in_box, projected_max
from .._solvers.lbfgs import minimize_low_memory
from .._utils._budgets import DENSE_LBFGS_BYTES, DENSE_MIN_WORK_PER_WORKER, PL_MIN_WORK_PER_WORKER
from .._utils._memory import LBFGS_VECTORS, check_fit_memory
from .._utils._parallel import parallel_or_serial, workers_for
from .._utils._sklearn_compat import delayed
from .pseudo_dense import DensePseudoLikelihood, field_start, fit_asymmetric, normalise_pairwise

__all__ = [
    "PathChoice",
    "PseudoLikelihoodFit",
    "PseudoLikelihoodObjective",
    "choose_path",
    "fit_pseudo_likelihood",
]

#: L-BFGS correction pairs of the records path (its memory is small: scipy's L-BFGS-B, (2 m + 5)
#: float64 vectors) and of the one-hot path, whose parameters reach millions
#: (:func:`~skmrf._solvers.lbfgs.minimize_low_memory`: 2 m float32 vectors).
LBFGS_CORRECTIONS = 20
DENSE_LBFGS_CORRECTIONS = 5
#: The one-hot products run in float32 when ``tol`` is at least this (the gradient's rounding,
#: about ``1e-7`` of the largest logit, stays below ``tol``), in float64 otherwise.
DENSE_FLOAT32_TOL = 1e-6
#: Relative rounding of the one-hot objective by the dtype of its products (the line search's
#: ``f_noise``): float32 logits are rounded to ``6e-8`` of their size and summed over the columns.
DENSE_F_NOISE = {"float32": 1e-6, "float64": 1e-12}
#: The one-hot path starts L-BFGS at the independent-site fields (:func:`~.pseudo_dense.field_start`).
DENSE_FIELD_START = True
#: Entries (rows x columns) of a memmap chunk compressed to records at once: the coding of a chunk
#: holds about ten int64 temporaries of this many entries times the blanket size (about 300 MB
#: for a grid), the bound :func:`~skmrf._data.distinct_projections` keeps in memory.
RECORDS_CHUNK_ENTRIES = 1 << 22
#: Seconds per evaluation of the records path, ``a + b * work`` (:func:`choose_path`).
RECORDS_SECONDS = (3e-4, 1.2e-8)
#: Seconds per evaluation of the one-hot path, ``a + n (b 2 L D + c L + e D) + f D^2``: ``a``, per
#: entry of the two sparse one-hot products (each row sums ``L`` rows of the ``D``-wide coupling
#: matrix), per (row, column), per (row, one-hot column), and per entry of the coupling matrix.
#: Least squares on the relative error of CPU seconds per evaluation (one thread, load ~7) on
#: complete graphs, n x L x q = 2000x8x4, 2000x12x4, 3000x10x21, 1000x30x21, 2000x60x21,
#: 5000x30x2, 1000x100x2, 500x50x3, 200x100x21, 20000x20x2, 300x40x5, 3469x159x21: estimated /
#: measured 0.97, 0.80, 1.09, 1.06, 0.87, 1.01, 1.37, 0.81, 1.02, 0.78, 1.13, 0.69. The records
#: path measured on the same graphs up to L = 60 stayed 6 to 16 times slower.
ONE_HOT_SECONDS = (1.3e-3, 1.5e-10, 1.5e-8, 7e-9, 1.1e-8)
#: The one-hot path is taken only when estimated this many times faster than the records.
PATH_MARGIN = 2.0


def markov_blankets(graph):
    """Every variable's Markov blanket: itself and its neighbours, ascending."""
    return [tuple(sorted({v} | graph.neighbours[v])) for v in range(graph.n_variables)]


def _slot(B, real, target, member):
    """The column of ``target``'s padded blanket (row of ``B``) holding ``member`` (one per pair)."""
    return ((B[target] < member[:, None]) & real[target]).sum(axis=1)


class PseudoLikelihoodObjective:
    """Negative mean pseudo-log-likelihood plus ridge, with its gradient.

    Parameters
    ----------
    layout : skmrf._parametrisation.CliqueLayout
        Parameter layout of the model.
    graph : MRFGraph
    X : ndarray of int of shape (n_samples, n_variables), or BlanketRecords
        The rows, or their records already compressed (:func:`~skmrf._data.blanket_records`, merged
        from row chunks by :func:`~skmrf._data.merge_records`; ``weight`` is then ignored, the
        counts hold it).
    alpha : float or ndarray
        Ridge ``alpha / 2 * ||x||^2`` on the objective's variable ``x`` (elementwise when an array
        of its length).
    n_chunks : int, default=1
        Records are split into this many chunks, evaluated by ``parallel``
        (:meth:`split` changes it).
    weight : ndarray of shape (n_samples,), optional
        Row weights; a record's weight is then the sum of its rows' weights.
    total : float, optional
        The number of rows the objective averages over: ``n_samples``, or the sum of the weights.
    tables : bool, default=False
        The variable ``x`` is ``theta`` (False) or the flat full tables of every clique (True,
        every state included: the pseudo-likelihood only depends on the model they represent,
        the ridge on every entry).

    Notes
    -----
    For a record ``r`` (variable ``v``, blanket configuration, weight
    ``w_r = count / n_samples``) and a candidate state ``k``, the conditional
    logit is the sum of the full-table entries of every clique containing
    ``v`` at the record's configuration with ``x_v = k``. With
    ``P_rk = softmax_k(logit_rk)`` the objective and gradient are

    .. math::

        f = -\\sum_r w_r \\log P_{r, x_r} + \\frac{\\alpha}{2}\\|\\theta\\|^2, \\qquad
        \\frac{\\partial f}{\\partial \\theta_a} = -\\sum_{r,k} w_r ([k = x_r] - P_{rk})
        \\, \\phi_a(x_{r}^{v \\to k}) + \\alpha\\theta_a,

    the multi-state form of the contrastive gradient of Section 2.2 of the
    LAP paper. One evaluation costs ``O(n_pairs * K)`` where ``n_pairs`` is
    the number of (record, clique containing its variable) pairs.
    """

    def __init__(self, layout, graph, X, alpha, n_chunks=1, weight=None, total=None, tables=False):
        self.layout = layout
        self.alpha = float(alpha) if np.ndim(alpha) == 0 else np.asarray(alpha, dtype=np.float64)
        self.tables = tables
        k = layout.n_states
        kmax = int(k.max())
        self.kmax = kmax
        n_var = graph.n_variables
        blankets = markov_blankets(graph)
        if isinstance(X, BlanketRecords):  # compressed already (from row chunks): ``weight`` is ignored
            records = X
            total = float(np.sum(records.count)) if total is None else total
        else:
            records = blanket_records(X, blankets, k, weight=weight)
            total = X.shape[0] if total is None else total
        rec_var, values, rec_cnt = records.var, records.values, records.count
        self.n_records = len(rec_var)
        self._check_memory(graph, rec_var, kmax)
        # slot[v, u]: the column of ``values`` holding variable u in the blanket of v.
        B, real, _ = padded_blankets(blankets, k)
        var_count = np.bincount(rec_var, minlength=n_var)
        var_start = np.concatenate([[0], np.cumsum(var_count)[:-1]])
        pos_parts, rec_parts = [], []
        for _, var, strides, offsets in layout.groups:
            s = var.shape[1]
            for j in range(s):
                tgt = var[:, j]
                rep = var_count[tgt]
                entry = np.repeat(np.arange(len(tgt)), rep)
                first = np.repeat(np.cumsum(rep) - rep, rep)
                rec = var_start[tgt][entry] + (np.arange(len(entry)) - first)
                others = [o for o in range(s) if o != j]
                base = offsets[entry].copy()
                for o in others:  # loop over clique positions (at most the clique size)
                    slot = _slot(B, real, tgt, var[:, o])
                    base += values[rec, slot[entry]] * strides[entry, o]
                kk = np.minimum(np.arange(kmax)[None, :], k[tgt][entry][:, None] - 1)
                pos_parts.append(base[:, None] + kk * strides[entry, j][:, None])
                rec_parts.append(rec)
        pos = np.concatenate(pos_parts)
        rec = np.concatenate(rec_parts)
        order = np.argsort(rec, kind="stable")
        pos, rec = pos[order], rec[order]
        x_own = values[np.arange(len(rec_var)), _slot(B, real, rec_var, rec_var)].astype(np.int64)
        invalid = np.arange(kmax)[None, :] >= k[rec_var][:, None]
        weight = rec_cnt / total
        self.n_pairs = len(rec)
        self._records = (pos, rec, x_own, invalid, weight)
        self.split(n_chunks)

    def _check_memory(self, graph, rec_var, kmax):
        """Refuse, before building them, records and an L-BFGS history larger than this machine's memory.

        Each (record, clique containing its variable) pair holds ``kmax`` table positions (int64)
        and, per evaluation, as many logits and residuals (float64): 24 bytes per candidate state.
        """
        members = np.concatenate([var.ravel() for _, var, _, _ in self.layout.groups])
        in_cliques = np.bincount(members, minlength=graph.n_variables)
        n_pairs = float(in_cliques[rec_var].sum())
        n_params = float(self.layout.n_params)
        check_fit_memory(
            "PseudoLikelihoodEstimator",
            24.0 * n_pairs * kmax + 8.0 * LBFGS_VECTORS * n_params,
            f"the pseudo-likelihood's {n_pairs:,.0f} (record, clique) pairs of {kmax:,} states each and "
            f"L-BFGS over {n_params:,.0f} parameters",
            "Recode the columns with fewer states, use a sparser graph, or fit on fewer distinct rows.",
        )

    @property
    def work(self):
        """Work of one evaluation: ``n_pairs * kmax``, the logits it gathers and sums.

        Every pass over the records (gather, sparse sums, softmax, gradient scatter) touches
        one logit per (record, clique containing its variable) pair and candidate state.
        """
        return self.n_pairs * self.kmax

    def split(self, n_chunks):
        """Split the records (and their pairs, which are sorted by record) into ``n_chunks`` chunks."""
        pos, rec, x_own, invalid, weight = self._records
        bounds = np.linspace(0, self.n_records, max(1, min(n_chunks, self.n_records)) + 1).astype(np.int64)
        pair_bounds = np.searchsorted(rec, bounds)
        self.chunks = []
        for a, b, pa, pb in zip(bounds[:-1], bounds[1:], pair_bounds[:-1], pair_bounds[1:]):
            r = rec[pa:pb] - a
            summer = sp.csr_matrix((np.ones(len(r)), (r, np.arange(len(r)))), shape=(b - a, len(r)))
            self.chunks.append((pos[pa:pb], summer, x_own[a:b], invalid[a:b], weight[a:b]))

    def ridge_term(self, x):
        """``alpha / 2 * ||x||^2`` (elementwise when ``alpha`` is a vector)."""
        return 0.5 * float((self.alpha * x) @ x)

    def __call__(self, theta, parallel=None):
        """Objective and gradient at ``theta`` (the flat full tables when ``tables``)."""
        full = theta if self.tables else self.layout.full_tables(theta)
        if parallel is None or len(self.chunks) == 1:
            parts = [_pl_chunk(full, *c, self.layout.n_table) for c in self.chunks]
        else:
            parts = parallel(delayed(_pl_chunk)(full, *c, self.layout.n_table) for c in self.chunks)
        gfull = parts[0][1]
        for p in parts[1:]:
            gfull = gfull + p[1]
        g = gfull if self.tables else gfull[self.layout.theta_pos]
        if np.ndim(self.alpha):
            ax = self.alpha * theta
            return sum(p[0] for p in parts) + 0.5 * float(ax @ theta), g + ax
        return sum(p[0] for p in parts) + 0.5 * self.alpha * theta @ theta, g + self.alpha * theta


def _pl_chunk(full, pos, summer, x_own, invalid, weight, n_table):
    """Negative weighted pseudo-log-likelihood of a chunk of records and its full-table gradient."""
    logits = summer @ full[pos]
    logits[invalid] = -np.inf
    # log-sum-exp and the conditional probabilities from one exp, as log1p of the terms other
    # than the largest (scipy's logsumexp, whose accuracy L-BFGS's stopping test needs: log of the
    # whole sum took 135 objective evaluations on a 100 x 100 grid instead of 82), without its
    # overhead (30 % of that fit). Every record has a valid state, so the largest is finite.
    rows = np.arange(len(logits))
    at_top = logits.argmax(axis=1)
    top = logits[rows, at_top]
    prob = np.exp(logits - top[:, None])
    prob[rows, at_top] = 0.0
    others = prob.sum(axis=1)
    prob[rows, at_top] = 1.0
    lse = top + np.log1p(others)
    own = np.take_along_axis(logits, x_own[:, None], axis=1)[:, 0]
    f = -float(weight @ (own - lse))
    resid = -(prob / (1.0 + others)[:, None])
    resid[rows, x_own] += 1.0
    resid *= -weight[:, None]
    g = summer.T @ resid
    return f, np.bincount(pos.ravel(), weights=g.ravel(), minlength=n_table)


class PseudoLikelihoodFit(NamedTuple):
    """What :func:`fit_pseudo_likelihood` ran."""

    n_iter: int
    """L-BFGS iterations (the largest of the columns' for the asymmetric variant)."""
    grad_max: float
    """Largest projected-gradient component at the solution."""
    pseudo_log_likelihood: float
    """Mean pseudo-log-likelihood of the rows at the solution (the ridge term excluded)."""
    n_records: int
    """Records the objective evaluated: distinct (variable, Markov-blanket configuration) pairs
    on the records path, every (row, variable) pair on the one-hot path."""
    path: str
    """``"records"`` or ``"one-hot"`` (:func:`choose_path`)."""


def ridge_vector(layout, alpha, tables):
    """``alpha`` (a float, or one value per clique) as the ridge of the objective's variable:
    the float itself, or the per-clique values repeated over each clique's block (``theta``)
    or full table (``tables``)."""
    if np.ndim(alpha) == 0:
        return float(alpha)
    sizes = layout.table_sizes if tables else layout.block_sizes
    return np.repeat(np.asarray(alpha, dtype=np.float64), sizes)


def fit_pseudo_likelihood(  # over 60 lines by its docstring (the code is 20)
    layout,
    graph,
    rows,
    alpha,
    *,
    max_iter,
    tol,
    n_jobs=None,
    callback=None,
    verbose=0,
    ridge="parameters",
    path="auto",
    symmetric=True,
):
    """Maximum pseudo-likelihood parameters by L-BFGS-B from zero.

    Parameters
    ----------
    layout : CliqueLayout
        The model's parameter layout.
    graph : MRFGraph
        The resolved graph (its Markov blankets).
    rows : Rows
        The validated rows and their weights.
    alpha : float, ndarray of shape (n_cliques,) or CentredRidge
        Ridge ``alpha / 2 * ||theta||^2`` on the mean negative pseudo-log-likelihood; an array
        gives each clique's block (or table) its own ``alpha``; a
        :class:`~skmrf._penalty.CentredRidge` (``ridge="parameters"`` and ``symmetric=True`` only)
        penalises the energy's centred components, minimised over the full tables.
    max_iter, tol : int, float
        L-BFGS iterations and projected-gradient tolerance.
    n_jobs : int, optional
        Threads evaluating chunks of the objective (serial below :data:`PL_MIN_WORK_PER_WORKER`
        per thread on the records path, :data:`DENSE_MIN_WORK_PER_WORKER` on the one-hot path).
    callback : callable, optional
        ``callback(iteration, objective=..., grad_max=...)`` after each iteration.
    verbose : int, default=0
        joblib's verbosity is ``verbose - 1``.
    ridge : {"parameters", "tables"}, default="parameters"
        What the ridge penalises: ``theta``, or every entry of every clique's full table
        (minimised over the tables of the same model, then normalised to ``theta``).
    path : {"auto", "records", "one-hot"}, default="auto"
        How the objective is evaluated; ``"auto"`` is :func:`choose_path`.
    symmetric : bool, default=True
        False: the asymmetric variant (:func:`~skmrf._kernels.pseudo_dense.fit_asymmetric`, pairwise
        models only; ``path`` is then ignored).

    Returns
    -------
    theta : ndarray of shape (n_params,)
    info : PseudoLikelihoodFit
    """
    tables = ridge == "tables"
    if isinstance(alpha, CentredRidge):  # over the tables, where it is well conditioned (CentredRidge)
        tables, alpha = True, CentredRidge(layout, alpha.alpha, tables=True)
    n_rows = _rows_counted(rows)
    if not symmetric:
        X, weight = one_hot_rows(rows)
        return _fit_asymmetric(layout, X, weight, rows.total, alpha, tables, max_iter, tol, n_jobs, verbose, n_rows)
    if path == "auto":
        path = choose_path(layout, graph, n_rows).path
    if path == "records":
        X, weight = blanket_statistics(rows, graph, layout.n_states)
    else:
        X, weight = one_hot_rows(rows)
    obj, n_workers, x0, minimize = _objective(layout, graph, X, weight, rows.total, alpha, tables, path, tol, n_jobs)
    if n_workers > 1:
        obj.split(n_workers)
    with parallel_or_serial(n_workers, prefer="threads", verbose=max(0, verbose - 1)) as parallel:
        x, f, g, n_iter = minimize(partial(obj, parallel=parallel), x0, max_iter, tol, callback)
    pll = float(-(f - obj.ridge_term(x)))
    theta = _normalise(layout, x) if tables else x
    n_records = obj.n_records if path == "records" else n_rows * graph.n_variables
    return theta, PseudoLikelihoodFit(n_iter, projected_max(x, g), pll, n_records, path)


# -- The data, compressed by row chunks ----------------------------------------------------------


def _rows_counted(rows):
    """Rows of positive weight: the rows an in-memory fit keeps (it drops rows of weight 0)."""
    return rows.n_rows if rows.weight is None else int(np.count_nonzero(rows.weight))


def _records_chunk(chunk, weight, blankets, n_states):
    return blanket_records(chunk, blankets, n_states, weight=weight)


def blanket_statistics(rows, graph, n_states):
    """What the records path reads, ``(X, weight)``: the rows themselves in memory (the objective
    compresses them), or, from a memmap or a dask array, their :class:`~skmrf._data.BlanketRecords` accumulated by row
    chunks (on the workers for dask; only the records travel) and no weight.

    The records are the same arrays, in the same order, as those of the rows in memory: the
    objective, and so the fit, are bit for bit the in-memory ones: the counts are sums of weights
    that are exact in any order (integers below ``2^53``, or float weights on the grid of
    :func:`~skmrf._data.summable_weights`, where a fit puts them).
    """
    if not rows.chunked:
        return rows.dense()
    blankets = markov_blankets(graph)
    records = rows.reduce(_records_chunk, blankets, n_states, op=merge_records, max_entries=RECORDS_CHUNK_ENTRIES)
    keep = records.count > 0  # records only of rows of weight 0, which an in-memory fit drops
    if not keep.all():
        code = None if records.code is None else records.code[keep]
        records = BlanketRecords(records.var[keep], records.values[keep], records.count[keep], code)
    return records, None


def one_hot_rows(rows):
    """What the one-hot path reads, ``(X, weight)``: every row, in order (its products are sums over
    rows). A memmap or a dask array is read by row chunks into one byte per entry
    (:meth:`~skmrf._data.Rows.compact`; the objective's one-hot codes take four), never as ``int64``,
    and the objective's arithmetic, so the fit, is bit for bit the in-memory one (rows of weight 0
    dropped, as in memory)."""
    X, weight = rows.compact(), rows.weight
    if rows.chunked and weight is not None and not weight.all():
        keep = weight > 0
        X, weight = X[keep], weight[keep]
    return X, weight


def _objective(layout, graph, X, weight, total, alpha, tables, path, tol, n_jobs):
    """The objective of ``path``, its number of threads, its start and its minimiser."""
    if isinstance(alpha, CentredRidge):
        obj, n_workers, x0, minimize = _objective(layout, graph, X, weight, total, 0.0, tables, path, tol, n_jobs)
        return _Penalised(obj, alpha), n_workers, x0, minimize
    a = ridge_vector(layout, alpha, tables)
    if path == "records":
        obj = PseudoLikelihoodObjective(layout, graph, X, a, weight=weight, total=total, tables=tables)
        minimize = partial(minimize_in_box, n_corrections=LBFGS_CORRECTIONS)
        x0 = np.zeros(layout.n_table if tables else layout.n_params)
        return obj, workers_for(n_jobs, obj.work, PL_MIN_WORK_PER_WORKER, prefer="threads"), x0, minimize
    dtype = np.float32 if tol >= DENSE_FLOAT32_TOL else np.float64
    obj = DensePseudoLikelihood(layout, X, a, weight, total, tables=tables, dtype=dtype)
    del a  # the objective keeps the ridge as runs of one value; no parameter-sized vector
    x0 = field_start(obj.index, X, obj.scale, total) if DENSE_FIELD_START else np.zeros(obj.index.size)
    pairs = int(np.clip(DENSE_LBFGS_BYTES // (8 * obj.index.size), 2, DENSE_LBFGS_CORRECTIONS))
    f_noise = DENSE_F_NOISE[np.dtype(dtype).name]
    minimize = partial(minimize_low_memory, n_corrections=pairs, f_noise=f_noise, overwrite_x0=True)  # x0 is ours
    return obj, workers_for(n_jobs, obj.work, DENSE_MIN_WORK_PER_WORKER, prefer="threads"), x0, minimize


class _Penalised:
    """An objective of ``theta`` with no ridge of its own, plus a :class:`~skmrf._penalty.CentredRidge`
    (every other attribute is the objective's)."""

    def __init__(self, objective, ridge):
        self.objective, self.ridge = objective, ridge

    def __getattr__(self, name):
        return getattr(self.objective, name)

    def ridge_term(self, x):
        return self.ridge.value(x)

    def __call__(self, x, parallel=None):
        f, g = self.objective(x, parallel=parallel)
        value, gradient = self.ridge.value_and_gradient(x)
        return f + value, g + gradient


def _fit_asymmetric(layout, X, weight, total, alpha, tables, max_iter, tol, n_jobs, verbose, n_rows):
    """:func:`~skmrf._kernels.pseudo_dense.fit_asymmetric` with its columns in parallel, and the
    mean pseudo-log-likelihood of the averaged model (one evaluation of the symmetric objective)."""
    n, L = X.shape
    work = 2.0 * n * L * L * (int(layout.n_states.max()) - 1)  # entries of one sweep of sparse products
    n_workers = workers_for(n_jobs, work, DENSE_MIN_WORK_PER_WORKER, prefer="threads")
    with parallel_or_serial(n_workers, prefer="threads", verbose=max(0, verbose - 1)) as parallel:
        theta, n_iter, grad_max = fit_asymmetric(
            layout,
            X,
            alpha,
            weight,
            total,
            tables=tables,
            max_iter=max_iter,
            tol=tol,
            n_blocks=n_workers,
            parallel=parallel,
            dtype=np.float32 if tol >= DENSE_FLOAT32_TOL else np.float64,
        )
    f, _ = DensePseudoLikelihood(layout, X, 0.0, weight, total)(theta)
    return theta, PseudoLikelihoodFit(n_iter, grad_max, -float(f), n_rows * L, "one-hot")


def _normalise(layout, full):
    """``theta`` of full tables (vectorised for pairwise layouts)."""
    if all(len(c) <= 2 for c in layout.cliques):
        return normalise_pairwise(layout, full)
    return layout.normalise(full)


class PathChoice(NamedTuple):
    """What :func:`choose_path` decided, and the estimates it compared (seconds per evaluation)."""

    path: str
    records_seconds: float
    one_hot_seconds: float


def choose_path(layout, graph, n_rows, tables=False):
    """The cheaper way to evaluate the pseudo-likelihood of ``layout`` on ``n_rows`` rows.

    The records path costs ``RECORDS_SECONDS[0] + RECORDS_SECONDS[1] * work`` per evaluation
    with ``work = kmax * sum_v R_v c_v``, ``R_v <= min(n_rows, prod of the states of v and its
    Markov blanket)`` distinct blanket configurations of variable ``v`` and ``c_v`` cliques
    containing it (the bound is used: the data are not read); the one-hot path (pairwise
    models only) ``a + n (b 2 L D + c L + e D) + f D^2`` (:data:`ONE_HOT_SECONDS`) with ``D = L * d``
    one-hot columns. The one-hot path is taken when it is estimated :data:`PATH_MARGIN` times
    cheaper, so that fits near the boundary keep the records path (the constants' check is beside
    them).
    """
    if any(len(c) > 2 for c in layout.cliques):
        return PathChoice("records", np.nan, np.nan)
    k = layout.n_states
    kmax = int(k.max())
    logk = np.log(k.astype(np.float64))
    members = np.concatenate([np.array(c) for c in layout.cliques])
    in_cliques = np.bincount(members, minlength=len(k))
    configs = np.array(
        [
            min(float(n_rows), float(np.exp(min(logk[v] + logk[list(graph.neighbours[v])].sum(), 700.0))))
            for v in range(len(k))
        ]
    )
    records = RECORDS_SECONDS[0] + RECORDS_SECONDS[1] * kmax * float(configs @ in_cliques)
    D = len(k) * (kmax - (0 if tables else 1))
    a, per_product, per_entry, per_coordinate, per_coupling = ONE_HOT_SECONDS
    L = len(k)
    one_hot = a + n_rows * (per_product * 2.0 * L * D + per_entry * L + per_coordinate * D) + per_coupling * D * D
    return PathChoice("one-hot" if PATH_MARGIN * one_hot < records else "records", records, one_hot)
