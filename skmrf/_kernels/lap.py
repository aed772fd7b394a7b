"""LAP: linear and parallel learning of discrete MRFs from 1-neighbourhood marginals (the kernel).

For every maximal clique ``q`` an *auxiliary MRF* over its 1-neighbourhood
``A_q`` is fitted by maximum likelihood from the counts of the joint states of
``X[:, A_q]`` alone, and ``theta_q`` is read off it (LAP paper, Algorithm 1;
valid because both models are normalised with respect to zero, Proposition 3).

The auxiliary problems are solved in batches: problems whose auxiliary model
has the same structure after relabelling ``A_q`` in sorted order (every
interior edge of a grid, say) share one enumerated feature matrix and are fitted
together by a vectorised damped Newton method (:func:`~skmrf._solvers.batched_newton`);
chunks of such batches run through ``joblib.Parallel``.

Memory is bounded by passes: the batches, ordered by their first problem (neighbouring
variables together), are taken a pass of at most :data:`PASS_ENTRIES` frequencies at a time;
a pass counts its problems' joint states from the band of columns their 1-neighbourhoods
span, solves them and reads their blocks off, then drops its frequencies and solutions. The
batches are the same whatever the passes, and the blocks are summed in problem order, so the
result does not depend on them, bit for bit.
"""

from __future__ import annotations

import itertools
import mmap
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .._anova import Components, component_matrix, theta_from_own_components
from .._data import Rows, count_dtype, count_joint_states, transposed_states
from .._penalty import CentredRidge
from .._solvers import batched_newton
from .._solvers.newton import BATCH_FLOATS
from .._utils._budgets import LAP_MIN_WORK_PER_WORKER, PASS_ENTRIES
from .._utils._parallel import parallel_or_serial, workers_for
from .._utils._progress import Progress
from .._utils._sklearn_compat import delayed
from .._utils._threads import single_blas_thread
from .lap_records import BlockIndex, BlockSources, LAPSubproblem, Subproblems
from .lap_structure import AuxiliaryStructure, group_by_structure

__all__ = ["LAPFit", "LAPSubproblem", "fit_lap"]


#: Default limit on the joint states of one 1-neighbourhood (enumerated exactly).
MAX_NEIGHBOURHOOD_STATES = 1 << 16


def _solve_chunk(tasks, max_iter, tol):
    """Worker: fit every ``(F3, freq, ridge)`` batch of a chunk; pure function of arrays.

    BLAS is held to one thread: the products are small (a few hundred
    configurations by tens of parameters) and a 2-thread OpenBLAS made the
    batched Newton method up to 10x slower on a 2-core machine.
    """
    with single_blas_thread():
        return [batched_newton(F3, freq, ridge, max_iter, tol) for F3, freq, ridge in tasks]


@dataclass
class _Group:
    """Auxiliary problems of one shared structure: their indices, 1-neighbourhoods and fit records."""

    structure: AuxiliaryStructure
    local_q: tuple
    members: np.ndarray
    neighbourhoods: np.ndarray
    n_iter: np.ndarray = None
    converged: np.ndarray = None


def _problems(graph, cliques, node_rule):
    """The cliques ``q`` that get an auxiliary problem, and how many of them are maximal.

    Every maximal factor (and every variable in no factor); with ``node_rule="own"`` also
    every remaining block of the model.
    """
    covered = np.zeros(graph.n_variables, dtype=bool)
    for f in graph.factors:
        covered[list(f)] = True
    maximal = list(graph.factors) + [(int(v),) for v in np.flatnonzero(~covered)]
    problems = list(maximal)
    if node_rule == "own":
        mset = set(maximal)
        problems += [c for c in cliques if c not in mset]
    return problems, len(maximal)


def _count_chunk(X, weight, max_states, tables, dtype):
    """Worker: the local counts (summed weights) of one chunk of rows, one ``(problems,
    configurations)`` array of ``dtype`` per ``(A, strides, n_configs)`` of ``tables``; a pure
    function of arrays."""
    XT = transposed_states(X, max_states)  # transposed once: counting gathers whole rows of XT
    return [count_joint_states(XT, A, strides, n_configs, dtype, weight) for A, strides, n_configs in tables]


def _make_groups(plan):
    """The :class:`_Group` of every ``(key, members, neighbourhoods)`` of :func:`group_by_structure`."""
    groups = []
    for (local_states, lf, lq, profiled), members, A in plan:
        s = AuxiliaryStructure(lf, local_states, lq, profiled)
        n = len(members)
        groups.append(_Group(s, lq, members, A, np.zeros(n, dtype=np.int32), np.zeros(n, dtype=bool)))
    return groups


def _tasks(groups):
    """The Newton batches ``(group, start, stop)``: slices of at most ``BATCH_FLOATS`` floats of
    temporaries within one group, as they always were (so every problem is solved in the same
    batch, bit for bit), ordered by their first problem (neighbouring variables together)."""
    tasks = []
    for g, group in enumerate(groups):
        F3, n = group.structure.F3, len(group.members)
        per = max(1, BATCH_FLOATS // max(1, F3.shape[0] * F3.shape[1] * max(group.structure.n_free, 1)))
        tasks += [(g, a, min(a + per, n)) for a in range(0, n, per)]
    tasks.sort(key=lambda t: groups[t[0]].members[t[1]])
    return tasks


def _passes(tasks, groups):
    """Consecutive tasks, grouped so that each pass holds at most :data:`PASS_ENTRIES` frequencies."""
    passes, current, size = [], [], 0
    for t in tasks:
        entries = (t[2] - t[1]) * groups[t[0]].structure.n_configs
        if current and size + entries > PASS_ENTRIES:
            passes.append(current)
            current, size = [], 0
        current.append(t)
        size += entries
    return passes + ([current] if current else [])


def _count_pass(rows, groups, tasks):
    """Empirical frequencies of the problems of ``tasks``, one array per task.

    Only the columns between the smallest and the largest variable of their 1-neighbourhoods
    are read (a band of the grid for the problems of one pass): the counts are summed over the
    row chunks of a memmap or a dask array (on the workers), so only they travel, in the
    narrowest integer type that holds them (:func:`~skmrf._data.count_dtype`); integer counts,
    so the frequencies equal the in-memory ones. With row weights they are float64 sums.
    """
    As = [groups[g].neighbourhoods[a:b] for g, a, b in tasks]
    lo, hi = min(int(A.min()) for A in As), max(int(A.max()) for A in As) + 1
    window = Rows(rows.X[:, lo:hi], rows.n_states[lo:hi], rows.weight)
    tables = [(A - lo, groups[g].structure.strides, groups[g].structure.n_configs) for A, (g, _, _) in zip(As, tasks)]
    dtype = count_dtype(rows.n_rows) if rows.chunked and rows.weight is None else np.float64
    counts = window.reduce(_count_chunk, int(rows.n_states.max()), tables, dtype)
    return [groups[g].structure.frequencies(c) for c, (g, _, _) in zip(counts, tasks)]


def _release_mapped_pages(X):
    """Drop the pages of a read-only or shared ``numpy.memmap`` from this process's memory.

    Reading a memmap maps every page of the file into the process, where they count in its
    resident memory (0.93 GiB of the 1000 x 1000 grid's file by the end of a fit) although the
    system may reclaim them. ``MADV_DONTNEED`` unmaps them; the next read maps them again from
    the page cache, unchanged. Never for ``mode="c"``, whose private pages hold the caller's
    writes. Does nothing for other inputs or where ``madvise`` is missing.
    """
    mapped = getattr(X, "_mmap", None) if isinstance(X, np.memmap) else None
    if mapped is None or X.mode == "c" or not hasattr(mapped, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    try:
        mapped.madvise(mmap.MADV_DONTNEED)
    except (OSError, ValueError):  # a closed map or a platform that refuses: only memory is at stake
        pass


def _solve_work(groups):
    """Work of the batched Newton method: the floats of the ``(problems, configurations,
    parameters)`` temporaries, each rebuilt at every Newton iteration."""
    return sum(len(g.members) * g.structure.F3.size for g in groups)


def _solve_pass(pool, n_workers, work, max_iter, tol):
    """Solve the ``(F3, freq, ridge)`` batches of ``work`` (one pass), in chunks over the pool if any."""
    n_chunks = min(len(work), 4 * n_workers) if n_workers > 1 else 1
    bounds = np.linspace(0, len(work), n_chunks + 1).astype(int)
    chunks = [work[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    if pool is None:
        results = [_solve_chunk(chunk, max_iter, tol) for chunk in chunks]
    else:
        results = pool(delayed(_solve_chunk)(chunk, max_iter, tol) for chunk in chunks)
    return [r for chunk in results for r in chunk]


def _fit_passes(rows, groups, reads, alpha, max_iter, tol, n_jobs, verbose, log):
    """Count, solve and read off the auxiliary problems pass by pass (bounded memory).

    Each pass holds at most :data:`PASS_ENTRIES` frequencies: they are counted from the data,
    the problems solved and their blocks read off, then dropped, so memory no longer grows with
    the number of problems (9.1 GiB on the 1000 x 1000 grid before, when every frequency was
    held at once).
    """
    n_workers = workers_for(n_jobs, _solve_work(groups), LAP_MIN_WORK_PER_WORKER, prefer="threads")
    passes = _passes(_tasks(groups), groups)
    _release_mapped_pages(rows.X)  # the pages the validation's scan left mapped
    # Threads by default: numpy releases the GIL in the batched products and solves. The
    # one-BLAS-thread limit is process-wide, so it is held here for every thread;
    # _solve_chunk sets it again in process or Dask workers.
    n_problems = sum(b - a for tasks in passes for _, a, b in tasks)
    ridges = [auxiliary_ridge(group.structure, alpha) for group in groups]
    with (
        single_blas_thread(),
        parallel_or_serial(n_workers, prefer="threads", verbose=max(0, verbose - 1)) as pool,
        Progress(n_problems, getattr(log, "name", "LAP"), verbose, unit="problem") as bar,
    ):
        for k, tasks in enumerate(passes):
            freqs = _count_pass(rows, groups, tasks)
            _release_mapped_pages(rows.X)
            work = [(groups[g].structure.F3, f, ridges[g]) for f, (g, _, _) in zip(freqs, tasks)]
            del freqs
            results = _solve_pass(pool, n_workers, work, max_iter, tol)
            del work
            for (g, a, b), (theta, n_iter, converged) in zip(tasks, results):
                group = groups[g]
                group.n_iter[a:b], group.converged[a:b] = n_iter, converged
                reads.add(group, a, b, theta)
            done = sum(b - a for _, a, b in tasks)
            log("pass %d of %d: %d auxiliary problems", k + 1, len(passes), done)
            bar.update(done)


def auxiliary_ridge(structure, alpha):
    """The ridge of an auxiliary problem: ``alpha`` (on ``theta``), or for a
    :class:`~skmrf._penalty.CentredRidge` the centred ridge of the auxiliary model as a matrix
    over its free parameters. A profiled problem (fitted given ``x_{A_q \\ q}``, whose
    distribution is free) keeps only the components meeting ``q``: the others belong to that
    free, unpenalised distribution, so the penalty minimised over it leaves them zero."""
    if not isinstance(alpha, CentredRidge):
        return alpha
    meeting = structure.local_q if structure.profiled else None
    R = CentredRidge(structure.layout, alpha.alpha, meeting=meeting).matrix().toarray()
    return R[np.ix_(structure.free_cols, structure.free_cols)]


def own_component_reads(structure, local):
    """The map from an auxiliary solution (its free parameters) to the *own* centred component
    of its block ``local`` (:func:`~skmrf._anova.theta_from_own_components`): a matrix
    ``(block size, n_free)``, ``A^-1`` of the block's component map times the rows of its set."""
    comp = Components(structure.layout)
    B, base = comp.sparse()
    sub = tuple(int(structure.n_states[v]) for v in local)
    row = int(np.flatnonzero((comp.sets[sub] == np.array(local)).all(axis=1))[0])
    size = int(np.prod(sub))
    M = B[base[sub] + row * size : base[sub] + (row + 1) * size].toarray()[:, structure.free_cols]
    return np.linalg.pinv(component_matrix(sub, tuple(range(len(sub))))) @ M


class _Reads:
    """``theta`` of the model from the auxiliary fits (Proposition 3), gathered pass by pass.

    With ``read="centred"`` each problem gives the centred component ``E_S`` of every block
    ``S`` it reads (:mod:`skmrf._anova`), not the block of ``theta`` itself: ``theta_i`` is a conditional
    log-odds at all neighbours in state 0, so reading it with one problem's couplings and
    assembling it with another's favours state 0 (on the 32 x 32 Ising torus at criticality that
    put the all-ones state 6 to 10 nats per row above the all-zeros one, issue #39), while the
    components keep the labelling's symmetry. ``theta`` is solved from the components at the end
    (:func:`~skmrf._anova.theta_from_own_components`; the same ``theta`` whenever the problems
    agree, as they do on trees). A block contained in several maximal cliques is averaged over
    them (``"mean"``), taken from the first (``"first"``) or from its own problem (``"own"``).
    Every read is kept as (parameter positions, values, problem index); :meth:`finish` adds them
    in problem order, as one loop over the problems would (the same sums, bit for bit).
    """

    def __init__(self, model, node_rule, read):
        self.layout, self.node_rule, self.read = model.layout, node_rule, read
        self.index = BlockIndex(model.cliques, len(model.n_states))
        self.pos, self.val, self.pidx, self.pblk, self.blk, self.bidx = [], [], [], [], [], []
        self.maps = {}  # (structure, local block): own_component_reads

    def add(self, group, a, b, theta):
        """The blocks the problems ``a:b`` of ``group`` read, with their solutions ``theta``.

        Indices are int32 (int64 past 2^31 parameters): 28 bytes a read parameter, 170 MB for
        the 6 x 10^6 reads of the 1000 x 1000 grid.
        """
        lq, s, lay = group.local_q, group.structure, self.layout
        members, A = group.members[a:b].astype(np.int32), group.neighbourhoods[a:b]
        ptype = np.int32 if lay.n_params < 2**31 else np.int64
        patterns = [tuple(range(len(lq)))] if self.node_rule == "own" else _subsets(tuple(range(len(lq))))
        for pat in patterns:
            local = tuple(lq[j] for j in pat)
            blocks = self.index.find(A[:, list(local)]).astype(np.int32)  # A sorted, lq increasing
            off, size = s.free_offset[local], s.block_size[local]
            self.blk.append(blocks)
            self.bidx.append(members)
            self.pos.append((lay.block_offsets[blocks][:, None] + np.arange(size)).ravel().astype(ptype))
            self.pidx.append(np.repeat(members, size))
            self.pblk.append(np.repeat(blocks, size))
            if self.read == "theta":
                self.val.append(theta[:, off : off + size].ravel())
                continue
            key = (id(s), local)
            if key not in self.maps:
                self.maps[key] = own_component_reads(s, local)
            self.val.append((theta @ self.maps[key].T).ravel())

    def finish(self):
        """``theta`` and the :class:`~skmrf._kernels.lap_records.BlockSources` it was read from."""
        lay = self.layout
        n_blocks = len(lay.cliques)
        # One list at a time, each dropped once joined: never two copies of every read.
        blk, bidx, pos, val, pidx, pblk = (self._join(name) for name in ("blk", "bidx", "pos", "val", "pidx", "pblk"))
        if self.node_rule == "first":  # the first maximal problem containing each block
            first = np.full(n_blocks, np.iinfo(np.int32).max, dtype=np.int32)
            np.minimum.at(first, blk, bidx)
            keep = bidx == first[blk]
            blk, bidx = blk[keep], bidx[keep]
            keep = pidx == first[pblk]
            pos, val, pidx = pos[keep], val[keep], pidx[keep]
        order = np.argsort(pidx, kind="stable")
        sums = np.zeros(lay.n_params)
        np.add.at(sums, pos[order], val[order])  # sequential, in problem order
        hits = np.bincount(blk, minlength=n_blocks)
        theta = sums / np.repeat(np.maximum(hits, 1), lay.block_sizes)
        if self.read == "centred":
            theta = theta_from_own_components(lay, theta)
        order = np.lexsort((bidx, blk))
        indptr = np.concatenate([[0], np.cumsum(hits)])
        return theta, BlockSources(lay.cliques, self.index, indptr, bidx[order])

    def _join(self, name):
        parts = getattr(self, name)
        setattr(self, name, None)
        out = np.concatenate(parts)
        parts.clear()
        return out


def _subsets(q):
    """Every non-empty subset of ``q`` (sorted tuples), i.e. the blocks of ``q``'s downward closure."""
    return [s for r in range(1, len(q) + 1) for s in itertools.combinations(q, r)]


class LAPFit(NamedTuple):
    """What :func:`fit_lap` ran."""

    block_sources: BlockSources
    """``{block clique: indices of the problems it was read from}``."""
    subproblems: Subproblems
    """The :class:`LAPSubproblem` of every auxiliary problem, in problem order."""
    n_groups: int
    """Structure groups the problems were batched in."""


def fit_lap(
    model, rows, alpha, *, strategy, node_rule, read, max_neighbourhood_states, max_iter, tol, n_jobs, verbose, log
):
    """LAP (LAP paper, Algorithm 1): plan the auxiliary problems, count, solve, read off.

    Parameters
    ----------
    model : DiscreteMRF
        The model to fit (its graph, cliques and states).
    rows : Rows
        The validated rows and their weights (read by row chunks when chunked).
    alpha : float or CentredRidge
        Ridge on each auxiliary problem's mean negative log-likelihood (a centred ridge is
        applied to each auxiliary model's own parameters, :func:`auxiliary_ridge`).
    strategy, node_rule, read, max_neighbourhood_states
        As the parameters of :class:`~skmrf.LAPEstimator`.
    max_iter, tol : int, float
        Newton iterations and tolerance of each auxiliary problem.
    n_jobs, verbose : int
        Threads over chunks of same-structure batches; joblib's verbosity is ``verbose - 1``.
    log : callable
        ``log(message, *args)`` progress lines.

    Returns
    -------
    theta : ndarray of shape (n_params,)
    info : LAPFit
    """
    graph = model.graph
    problems, n_maximal = _problems(graph, model.cliques, node_rule)
    plan = group_by_structure(graph, rows.n_states, problems, strategy, max_neighbourhood_states)
    groups = _make_groups(plan)
    del plan
    log("%d auxiliary problems in %d structure groups", len(problems), len(groups))
    reads = _Reads(model, node_rule, read)
    _fit_passes(rows, groups, reads, alpha, max_iter, tol, n_jobs, verbose, log)
    log("solved %d auxiliary problems", len(problems))
    theta, sources = reads.finish()
    return theta, LAPFit(sources, Subproblems(problems, groups), len(groups))
