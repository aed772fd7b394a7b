"""LAP: linear and parallel learning of discrete MRFs from 1-neighbourhood marginals (the kernel).

For every maximal clique ``q`` an *auxiliary MRF* over its 1-neighbourhood
``A_q`` is fitted by maximum likelihood from the counts of the joint states of
``X[:, A_q]`` alone, and ``theta_q`` is read off it (LAP paper, Algorithm 1;
valid because both models are normalised with respect to zero, Proposition 3).

The auxiliary problems are solved in batches: problems whose auxiliary model
has the same structure after relabelling ``A_q`` in sorted order (every
interior edge of a grid, say) share one enumerated feature matrix and are fitted
together by a vectorised damped Newton method (:func:`~skmrf.solvers.batched_newton`);
chunks of such batches run through ``joblib.Parallel``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..data import count_dtype, count_joint_states, transposed_states
from ..solvers import batched_newton
from ..solvers.newton import BATCH_FLOATS
from ..utils._parallel import parallel_or_serial, workers_for
from ..utils._sklearn_compat import delayed
from ..utils._threads import single_blas_thread
from .lap_structure import AuxiliaryStructure, group_by_structure

__all__ = ["LAPFit", "LAPSubproblem", "fit_lap"]

#: Work (:func:`_solve_work` of all the auxiliary problems) each thread needs before the
#: problems are solved in parallel. Measured (benchmarks/results/parallel_threshold.txt):
#: t(2 jobs) / t(1 job) was 1.7 at 1.5e4, 1.04 at 3e6, 0.69 at 7.5e6, 0.68 at 1.5e8, so two
#: threads start at 4e6.
LAP_MIN_WORK_PER_WORKER = 2e6

#: Default limit on the joint states of one 1-neighbourhood (enumerated exactly).
MAX_NEIGHBOURHOOD_STATES = 1 << 16


class LAPSubproblem(NamedTuple):
    """One auxiliary problem of a fitted :class:`LAPEstimator`."""

    clique: tuple
    """The clique ``q`` whose block(s) are read off."""
    neighbourhood: tuple
    """Its 1-neighbourhood ``A_q`` (sorted variables)."""
    n_params: int
    """Free parameters of the auxiliary fit."""
    profiled: bool
    """True when a saturated clique over ``A_q \\ q`` was profiled out (conditional fit)."""
    n_iter: int
    """Newton iterations run."""
    converged: bool


def _solve_chunk(tasks, alpha, max_iter, tol):
    """Worker: fit every ``(F3, freq)`` batch of a chunk; pure function of arrays.

    BLAS is held to one thread: the products are small (a few hundred
    configurations by tens of parameters) and a 2-thread OpenBLAS made the
    batched Newton method up to 10x slower on a 2-core machine.
    """
    with single_blas_thread():
        return [batched_newton(F3, freq, alpha, max_iter, tol) for F3, freq in tasks]


@dataclass
class _Group:
    """Auxiliary problems of one shared structure: their indices, 1-neighbourhoods and fits."""

    structure: AuxiliaryStructure
    members: list
    neighbourhoods: np.ndarray
    theta: np.ndarray = None
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


def _count(rows, groups, neighbourhoods):
    """Build each group's structure and its problems' empirical frequencies (local counts).

    The counts are summed over the row chunks of a memmap or a dask array (on the workers),
    so only they travel, in the narrowest integer type that holds them (:func:`~skmrf.data.count_dtype`);
    integer counts, so the frequencies equal the in-memory ones. With row weights they are
    float64 sums of the weights.
    """
    made = []
    for (local_states, lf, lq, profiled), members in groups.items():
        structure = AuxiliaryStructure(lf, local_states, lq, profiled)
        made.append((structure, members, np.array([neighbourhoods[i] for i in members], dtype=np.int64)))
    tables = [(A, s.strides, s.n_configs) for s, _, A in made]
    dtype = count_dtype(rows.n_rows) if rows.chunked and rows.weight is None else np.float64
    counts = rows.reduce(_count_chunk, int(rows.n_states.max()), tables, dtype)
    return [(_Group(s, members, A), s.frequencies(c)) for (s, members, A), c in zip(made, counts)]


def _solve_work(tasks):
    """Work of the batched Newton tasks: the floats of their ``(problems, configurations,
    parameters)`` temporaries, each rebuilt at every Newton iteration."""
    return sum(len(freq) * F3.size for F3, freq in tasks)


def _solve(counted, alpha, max_iter, tol, n_jobs, verbose):
    """Fit every auxiliary problem: batches bounded in memory, one parallel task per chunk."""
    tasks, owners = [], []
    for g, (group, freq) in enumerate(counted):
        F3 = group.structure.F3
        per = max(1, BATCH_FLOATS // max(1, F3.shape[0] * F3.shape[1] * max(group.structure.n_free, 1)))
        for a in range(0, len(freq), per):
            tasks.append((F3, freq[a : a + per]))
            owners.append(g)
    n_workers = workers_for(n_jobs, _solve_work(tasks), LAP_MIN_WORK_PER_WORKER)
    n_chunks = min(len(tasks), 4 * n_workers) if n_workers > 1 else 1
    bounds = np.linspace(0, len(tasks), n_chunks + 1).astype(int)
    chunks = [tasks[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    # Threads by default: numpy releases the GIL in the batched products and solves. The
    # one-BLAS-thread limit is process-wide, so it is held here for every thread;
    # _solve_chunk sets it again in process or Dask workers.
    with single_blas_thread(), parallel_or_serial(n_workers, prefer="threads", verbose=max(0, verbose - 1)) as pool:
        if pool is None:
            results = [_solve_chunk(chunk, alpha, max_iter, tol) for chunk in chunks]
        else:
            results = pool(delayed(_solve_chunk)(chunk, alpha, max_iter, tol) for chunk in chunks)
    results = [r for chunk in results for r in chunk]
    for g, (group, _) in enumerate(counted):
        mine = [r for o, r in zip(owners, results) if o == g]
        group.theta, group.n_iter, group.converged = (np.concatenate(parts) for parts in zip(*mine))
    return [group for group, _ in counted]


def _read_off(groups, problems, n_maximal, model, node_rule):
    """``theta`` of the model from the auxiliary fits (Proposition 3), in problem order.

    A block contained in several maximal cliques is averaged over them (``"mean"``), taken
    from the first (``"first"``) or from its own problem (``"own"``). Returns ``theta``
    and ``{block clique: problem indices it was read from}``.
    """
    where = [None] * len(problems)
    for group in groups:
        for j, idx in enumerate(group.members):
            where[idx] = (group, j)
    lay = model.layout
    block_index = {c: b for b, c in enumerate(model.cliques)}
    sums = np.zeros(lay.n_params)
    hits = np.zeros(len(model.cliques), dtype=np.int64)
    sources = {c: [] for c in model.cliques}
    first_of = {}
    for idx, q in enumerate(problems[:n_maximal]):
        for c in _subsets(q):
            first_of.setdefault(c, idx)
    for idx, q in enumerate(problems):
        group, j = where[idx]
        loc = {v: i for i, v in enumerate(group.neighbourhoods[j].tolist())}
        if node_rule == "own" or idx >= n_maximal:
            read = [q]
        else:
            read = [c for c in _subsets(q) if c == q or node_rule == "mean" or first_of[c] == idx]
        for c in read:
            off = group.structure.free_offset[tuple(loc[v] for v in c)]
            b = block_index[c]
            lo, hi = lay.block_offsets[b], lay.block_offsets[b + 1]
            sums[lo:hi] += group.theta[j, off : off + hi - lo]
            hits[b] += 1
            sources[c].append(idx)
    theta = sums / np.repeat(np.maximum(hits, 1), lay.block_sizes)
    return theta, {c: tuple(v) for c, v in sources.items()}


def _subproblems(groups, problems):
    """The :class:`LAPSubproblem` record of every problem, in problem order."""
    out = [None] * len(problems)
    for group in groups:
        s = group.structure
        for j, idx in enumerate(group.members):
            A = tuple(int(v) for v in group.neighbourhoods[j])
            out[idx] = LAPSubproblem(
                problems[idx], A, s.n_free, s.profiled, int(group.n_iter[j]), bool(group.converged[j])
            )
    return out


def _subsets(q):
    """Every non-empty subset of ``q`` (sorted tuples), i.e. the blocks of ``q``'s downward closure."""
    return [s for r in range(1, len(q) + 1) for s in itertools.combinations(q, r)]


class LAPFit(NamedTuple):
    """What :func:`fit_lap` ran."""

    block_sources: dict
    """``{block clique: indices of the problems it was read from}``."""
    subproblems: list
    """The :class:`LAPSubproblem` of every auxiliary problem, in problem order."""
    n_groups: int
    """Structure groups the problems were batched in."""


def fit_lap(model, rows, alpha, *, strategy, node_rule, max_neighbourhood_states, max_iter, tol, n_jobs, verbose, log):
    """LAP (LAP paper, Algorithm 1): plan the auxiliary problems, count, solve, read off.

    Parameters
    ----------
    model : DiscreteMRF
        The model to fit (its graph, cliques and states).
    rows : Rows
        The validated rows and their weights (read by row chunks when chunked).
    alpha : float
        Ridge on each auxiliary problem's mean negative log-likelihood.
    strategy, node_rule, max_neighbourhood_states
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
    neighbourhoods, structures = group_by_structure(graph, rows.n_states, problems, strategy, max_neighbourhood_states)
    log("%d auxiliary problems in %d structure groups", len(problems), len(structures))
    counted = _count(rows, structures, neighbourhoods)
    log("counted local statistics")
    groups = _solve(counted, alpha, max_iter, tol, n_jobs, verbose)
    log("solved %d auxiliary problems", len(problems))
    theta, sources = _read_off(groups, problems, n_maximal, model, node_rule)
    return theta, LAPFit(sources, _subproblems(groups, problems), len(groups))
