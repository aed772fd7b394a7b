"""LAP: linear and parallel learning of discrete MRFs from 1-neighbourhood marginals.

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
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from ..data import count_dtype, count_joint_states, is_chunked, reduce_row_chunks, transposed_states
from ..solvers import batched_newton, warn_not_converged
from ..solvers.newton import BATCH_FLOATS
from ..utils._docstrings import fill_doc
from ..utils._parallel import parallel_or_serial, workers_for
from ..utils._sklearn_compat import Interval, StrOptions, _fit_context, delayed
from ..utils._threads import single_blas_thread
from ..utils._verbose import ProgressLog
from ._base import ALPHA_CONSTRAINT, N_JOBS_CONSTRAINT, BaseDiscreteMRF
from ._existence import warn_if_unbounded
from ._lap_structure import AuxiliaryStructure, NeighbourhoodTooLargeError, auxiliary_factors, group_by_structure

__all__ = ["LAPEstimator", "LAPSubproblem", "NeighbourhoodTooLargeError", "auxiliary_factors"]

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


def _count_chunk(X, start, max_states, tables, dtype):
    """Worker: the local counts of one chunk of rows, one ``(problems, configurations)`` array
    of ``dtype`` per ``(A, strides, n_configs)`` of ``tables``; a pure function of arrays."""
    XT = transposed_states(X, max_states)  # transposed once: counting gathers whole rows of XT
    return [count_joint_states(XT, A, strides, n_configs, dtype) for A, strides, n_configs in tables]


def _count(X, n_states, groups, neighbourhoods):
    """Build each group's structure and its problems' empirical frequencies (local counts).

    The counts are summed over the row chunks of a memmap or a dask array (on the workers),
    so only they travel, in the narrowest integer type that holds them (:func:`~skmrf.data.count_dtype`);
    integer counts, so the frequencies equal the in-memory ones.
    """
    made = []
    for (local_states, lf, lq, profiled), members in groups.items():
        structure = AuxiliaryStructure(lf, local_states, lq, profiled)
        made.append((structure, members, np.array([neighbourhoods[i] for i in members], dtype=np.int64)))
    tables = [(A, s.strides, s.n_configs) for s, _, A in made]
    dtype = count_dtype(X.shape[0]) if is_chunked(X) else np.float64
    counts = reduce_row_chunks(X, _count_chunk, int(n_states.max()), tables, dtype)
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


@fill_doc
class LAPEstimator(BaseDiscreteMRF):
    """Linear and parallel (LAP) MRF parameter learning from local marginals.

    For each maximal clique ``q``, fits an auxiliary MRF on the
    1-neighbourhood ``A_q`` by maximum likelihood from the counts of the
    joint states of ``X[:, A_q]`` only, and reads off ``theta_q`` (LAP paper,
    Algorithm 1). With the exact marginal structure it is consistent
    (Proposition 4) and on trees equals maximum likelihood. The total cost is
    linear in the number of cliques for graphs of bounded degree.

    Parameters
    ----------
    %(graph)s
    %(n_states)s
    strategy : {"pairwise", "dense", "exact"}, default="pairwise"
        Structure of the auxiliary MRF over ``A_q`` (LAP paper, Section 3.1);
        every strategy keeps the original factors inside ``A_q``:

        - ``"exact"``: the structure of the marginal on ``A_q`` (Proposition 9
          of the exact-inference paper): for each connected component of
          ``S \\ A_q``, a fully parametrised factor over the variables of
          ``A_q`` it borders.
        - ``"dense"``: a fully parametrised factor over ``A_q \\ q``.
        - ``"pairwise"``: unary and pairwise terms over ``A_q \\ q``.
    node_rule : {"mean", "first", "own"}, default="mean"
        Where the blocks of sub-cliques of maximal cliques (node potentials
        of a pairwise graph) are read from, since several auxiliary problems
        contain them: ``"first"`` from the first maximal clique containing
        them (graph order), ``"mean"`` the average over all containing
        maximal cliques, ``"own"`` from an auxiliary problem of their own
        (``q`` = the sub-clique, on its own 1-neighbourhood). All three are
        consistent. On scikit-learn's digits, binarised on the 8x8 grid
        (5-fold held-out exact log-likelihood, ``alpha=1e-4``), ``"mean"``
        and ``"first"`` were within 0.0013 nats per variable of each other
        (about one paired fold standard deviation; ``"mean"`` ahead at
        ``alpha=1e-2``, ``"first"`` at ``1e-4``) and ``"own"`` was 0.034
        (pairwise) to 0.040 (exact) nats per variable worse; ``"mean"`` is
        the default because it ties for best and does not depend on the
        order of the cliques (``benchmarks/lap_accuracy.py
        --digits-only``).
    alpha : float or "auto", default="auto"
        Ridge penalty ``alpha / 2 * ||alpha_aux||^2`` added to each auxiliary
        problem's negative mean log-likelihood. When a factor
        of the auxiliary model covers ``A_q \\ q`` it is profiled out (always
        for ``"dense"``; for ``"exact"`` when one component of ``S \\ A_q``
        borders all of ``A_q \\ q``; for ``"pairwise"`` when
        ``|A_q \\ q| <= 2``) and only the blocks meeting ``q`` are penalised.
        %(alpha_auto)s
    max_iter : int, default=100
        Maximum Newton iterations per auxiliary problem.
    tol : float, default=1e-8
        An auxiliary problem has converged when no gradient component exceeds
        ``tol``.
    max_neighbourhood_states : int, default=65536
        Largest number of joint states of one 1-neighbourhood (they are
        enumerated); ``fit`` refuses larger ones up front, and any auxiliary
        problem whose enumerated features (joint states x parameters) and
        Newton Hessian (parameters squared) exceed 2^25 float64 entries
        (``NeighbourhoodTooLargeError``, with the figures).
    n_jobs : int, default=None
        Number of jobs solving chunks of auxiliary problems in parallel through
        ``joblib.Parallel`` (``None`` means 1 unless in a
        ``joblib.parallel_config`` context; ``-1`` all processors). Threads
        by default, as numpy releases the GIL in the batched Newton steps
        (1.55x faster with 2 threads on a 100x100 grid, where 2 loky
        processes were no faster than one job once their start-up was
        paid); a ``joblib.parallel_config(backend=...)`` chooses any other
        backend, and ``backend="dask"`` runs the chunks on a Dask cluster,
        whose workers receive only local counts. Auxiliary problems too few
        to pay for a pool (under ``2 * LAP_MIN_WORK_PER_WORKER`` floats of
        Newton batches, measured by ``benchmarks/parallel_threshold.py``) are
        solved serially, whatever ``n_jobs`` and backend (Dask included).
    %(score_method)s
    %(max_bytes_scoring)s
    %(random_state_ais)s
    verbose : int, default=0
        Progress lines per structure group when positive; ``> 1`` also
        joblib's.

    Attributes
    ----------
    %(discrete_model_)s
    %(alpha_)s
    subproblems_ : list of LAPSubproblem
        Every auxiliary problem solved: clique, 1-neighbourhood, number of
        free parameters, whether profiled, Newton iterations, convergence.
    block_sources_ : dict
        ``{block clique: tuple of indices into subproblems_}``: the
        auxiliary problems each potential block was read from (averaged when
        more than one).
    n_groups_ : int
        Distinct auxiliary structures (batches).
    n_iter_ : int
        Largest number of Newton iterations of any auxiliary problem.
    %(log_partition_ais_)s
    %(score_method_)s
    %(n_features_in_)s
    %(feature_names_in_)s

    Raises
    ------
    NeighbourhoodTooLargeError
        From ``fit``, when a 1-neighbourhood has more than
        ``max_neighbourhood_states`` joint states (a dense graph, an RBM).

    See Also
    --------
    PseudoLikelihoodEstimator, ExactMaxLikelihood

    Notes
    -----
    Auxiliary problem of clique ``q`` (LAP paper, Section 3): minimise

    .. math::

        \\log Z(\\alpha) - \\alpha \\cdot \\frac{1}{N}\\sum_n \\phi(x_{A_q n})
        + \\frac{a}{2}\\|\\alpha\\|^2

    over the auxiliary parameters, then set ``theta_q = alpha_q``
    (Proposition 3). Its gradient is the difference of model and empirical
    feature means (the equation of Section 3) and needs only the counts of the
    joint states of ``X[:, A_q]``, computed once (data efficiency).

    When the auxiliary model contains a fully parametrised factor over
    ``A_q \\ q`` the likelihood factorises into the conditional likelihood of
    ``x_q`` given ``x_{A_q \\ q}`` and a free marginal of ``x_{A_q \\ q}``;
    the blocks meeting ``q`` are then fitted from the conditional likelihood
    alone, which is exact at ``alpha = 0`` and far cheaper (no parameter per
    joint state of ``A_q \\ q``).

    Problems of identical structure (after sorting ``A_q``) are batched and
    solved by a vectorised damped Newton method (:func:`~skmrf.solvers.batched_newton`)
    with a shared feature matrix; with ``C`` joint states of ``A_q`` and ``P``
    parameters a Newton step costs ``O(C P^2)`` per problem. For graphs of
    bounded degree the total is linear in the number of cliques. The
    ``"exact"`` strategy also searches the components of ``S \\ A_q``,
    ``O(n_variables)`` per clique.

    References
    ----------
    Mizrahi, Denil and de Freitas. Linear and parallel learning of Markov
    random fields. ICML 2014.

    Mizrahi, Denil and de Freitas. Learning Markov random fields with
    exact inference on 1-neighbourhoods (the Gaussian LAP paper).

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.estimators.lap import LAPEstimator
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
    >>> est = LAPEstimator(graph="chain", strategy="exact", alpha=0.1).fit(X)
    >>> est.theta_.shape
    (5,)
    >>> [s.clique for s in est.subproblems_]
    [(0, 1), (1, 2)]
    """

    _parameter_constraints: dict = {
        **BaseDiscreteMRF._parameter_constraints,
        "random_state": ["random_state"],
        "strategy": [StrOptions({"pairwise", "dense", "exact"})],
        "node_rule": [StrOptions({"mean", "first", "own"})],
        "alpha": ALPHA_CONSTRAINT,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_neighbourhood_states": [Interval(Integral, 2, None, closed="left")],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        graph="chain",
        *,
        n_states="auto",
        strategy="pairwise",
        node_rule="mean",
        alpha="auto",
        max_iter=100,
        tol=1e-8,
        max_neighbourhood_states=MAX_NEIGHBOURHOOD_STATES,
        n_jobs=None,
        score_method="auto",
        max_bytes=None,
        random_state=None,
        verbose=0,
    ):
        self.graph = graph
        self.n_states = n_states
        self.strategy = strategy
        self.node_rule = node_rule
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.max_neighbourhood_states = max_neighbourhood_states
        self.n_jobs = n_jobs
        self.score_method = score_method
        self.max_bytes = max_bytes
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y=None):
        """Fit the parameters by LAP (LAP paper, Algorithm 1).

        %(fit_states)s
        """
        log = ProgressLog(type(self).__name__, self.verbose)
        Xi = self._validate_fit_data(X, keep_dtype=True, chunked=True)
        graph, model = self.graph_, self.model_
        if self._ridge(Xi.shape[0]) == 0:
            warn_if_unbounded(self, Xi)
        problems, n_maximal = _problems(graph, model.cliques, self.node_rule)
        neighbourhoods, structures = group_by_structure(
            graph, self.n_states_, problems, self.strategy, self.max_neighbourhood_states
        )
        log("%d auxiliary problems in %d structure groups", len(problems), len(structures))
        counted = _count(Xi, self.n_states_, structures, neighbourhoods)
        del Xi
        log("counted local statistics")
        groups = _solve(counted, self.alpha_, self.max_iter, self.tol, self.n_jobs, self.verbose)
        log("solved %d auxiliary problems", len(problems))
        model.theta, self.block_sources_ = _read_off(groups, problems, n_maximal, model, self.node_rule)
        self.subproblems_ = _subproblems(groups, problems)
        self.n_groups_ = len(groups)
        self.n_iter_ = max((s.n_iter for s in self.subproblems_), default=0)
        self._warn_unconverged()
        self._resolve_score_method(self.random_state)
        log("done")
        return self

    def _warn_unconverged(self):
        bad = [s.clique for s in self.subproblems_ if not s.converged]
        if bad:
            warn_not_converged(
                f"{len(bad)} of {len(self.subproblems_)} LAP auxiliary problems",
                f"in max_iter={self.max_iter} Newton iterations (tol={self.tol:g}), for cliques {bad[:10]}"
                f"{'...' if len(bad) > 10 else ''}",
                "Their estimates may be inaccurate: increase alpha (a state or combination never "
                "observed has no finite estimate at alpha=0) or max_iter.",
                stacklevel=4,
            )


def _subsets(q):
    """Every non-empty subset of ``q`` (sorted tuples), i.e. the blocks of ``q``'s downward closure."""
    return [s for r in range(1, len(q) + 1) for s in itertools.combinations(q, r)]
