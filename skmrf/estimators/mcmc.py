"""MCMC maximum likelihood inside a fast-mixing parameter set (Domke, 2015).

- the expectations ``E_phi[t(x)]`` that drive Algorithm 1: from Gibbs chains
  (:class:`_MCMCExpectation`, the paper's), from the junction tree and from exact
  samples (test references);
- the estimator :class:`MCMCMaxLikelihood`, which validates, computes the schedule
  (:mod:`skmrf.estimators._fast_mixing`), runs Algorithm 1
  (:func:`skmrf.solvers.projected_gradient.projected_gradient`) and stores ``model_``.

The paper's model is the Ising model over ``x in {-1, +1}``; the package's
model is over ``s in {0, 1}`` normalised with respect to zero. Everything the
paper bounds (the fast-mixing set, ``R_2``, the Lipschitz constant) is stated
in the ``{-1, +1}`` coordinates, so the optimisation runs there and the result
is converted at the end (:func:`skmrf.model.ising.ising_to_binary`).
"""

from __future__ import annotations

import math
from functools import partial
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from ..inference.gibbs import BinaryGibbsKernel, colour_classes, run_chains
from ..model.ising import ising_statistics, ising_to_binary
from ..solvers._convergence import warn_not_converged
from ..solvers.projected_gradient import projected_gradient
from ..utils._docstrings import fill_doc
from ..utils._parallel import parallel_or_serial, workers_for
from ..utils._sklearn_compat import Interval, StrOptions, _fit_context
from ..utils._verbose import ProgressLog
from ..utils.validation import check_generator
from ._base import ALPHA_CONSTRAINT, N_JOBS_CONSTRAINT, BaseDiscreteMRF
from ._fast_mixing import MAX_WORK, FastMixingSchedule, distance_bound, fast_mixing_schedule, fast_mixing_set

__all__ = ["MCMCMaxLikelihood"]

#: Chains per Gibbs block. Blocks are the unit of parallel work and each has
#: its own random stream, drawn up front, so results do not depend on n_jobs.
CHAIN_BLOCK = 4096

#: Work of one step (single-site Gibbs updates: chains x sweeps x variables) each worker
#: needs before the chain blocks run in parallel (loky processes). Measured
#: (benchmarks/results/parallel_threshold.txt): t(2 jobs) / t(1 job) was 15 at 1.8e3, 2.0 at
#: 4.1e6, 0.87 at 2.1e7, 0.68 at 8.4e7, so two workers start at 1.6e7.
MCMC_MIN_WORK_PER_WORKER = 8e6


def _chain_sums(S, order, edge_rows, chunk=1 << 22):
    """Sums over the chains of ``s_i`` and of ``s_i s_j`` per edge, from internal states ``S``.

    ``S`` has one row per variable in the kernel's internal order (``order`` maps variables
    to rows) and one column per chain; ``edge_rows`` holds the rows of the edges' ends. The
    pair sums are chunked over edges to bound the temporaries.
    """
    pi, pj = edge_rows
    sum_s = S.sum(axis=1, dtype=np.float64)[order]
    sum_ss = np.empty(len(pi))
    step = max(1, chunk // max(S.shape[1], 1))
    for a in range(0, len(pi), step):
        b = slice(a, a + step)
        sum_ss[b] = np.einsum("em,em->e", S[pi[b]], S[pj[b]], dtype=np.float64)
    return sum_s, sum_ss


def _binary_theta(phi, model, node_pos, edge_pos, edges):
    """The package's ``{0, 1}`` parameter vector of ``model`` for ``phi = (h, J)``."""
    n = model.n_variables
    theta = np.zeros(model.n_params)
    theta[node_pos], theta[edge_pos] = ising_to_binary(phi[:n], phi[n:], edges, n)
    return theta


def _mean_statistics(S01, edges):
    """Mean ``{-1, +1}`` statistics ``(E x_i, E x_i x_j)`` of float 0/1 rows ``S01``."""
    return ising_statistics(S01.mean(axis=0), (S01[:, edges[:, 0]] * S01[:, edges[:, 1]]).mean(axis=0), edges)


class _MCMCExpectation:
    """Estimate ``E_q[t(x)]`` in ``{-1, +1}`` coordinates from ``M`` Gibbs chains of ``v`` sweeps.

    ``init="uniform"`` starts each chain from a uniform random state (the
    paper's ``r``), ``init="data"`` from a training row drawn with replacement
    (contrastive divergence); ``persistent=True`` restarts the chains where
    the previous iteration left them (PCD, outside the paper's guarantee).
    The chains run in blocks of :data:`CHAIN_BLOCK` through
    :func:`~skmrf.inference.gibbs.run_chains`; every block's start and sweep
    streams are spawned up front, so the result does not depend on ``n_jobs``.
    """

    def __init__(self, X01, edges, colours, n_samples, n_sweeps, init, persistent, rng, parallel):
        self.X01 = X01
        self.n = X01.shape[1]
        self.edges = edges
        self.colours = colours
        self.n_samples = n_samples
        self.n_sweeps = n_sweeps
        self.init = init
        self.persistent = persistent
        self.rng = rng
        self.parallel = parallel
        self.pool = None

    def _start(self, kernel, m, rng):
        if self.init == "data":
            return kernel.to_internal(self.X01[rng.integers(0, len(self.X01), m)])
        return (rng.random((self.n, m), dtype=np.float32) < 0.5).astype(np.float32)

    def __call__(self, phi):
        n, edges = self.n, self.edges
        kernel = BinaryGibbsKernel(*ising_to_binary(phi[:n], phi[n:], edges, n), edges, self.colours)
        sizes = [min(CHAIN_BLOCK, self.n_samples - a) for a in range(0, self.n_samples, CHAIN_BLOCK)]
        if self.persistent and self.pool is not None:
            # Same colouring, hence the same internal row order, at every step.
            starts = self.pool
        else:
            starts = [self._start(kernel, m, r) for m, r in zip(sizes, self.rng.spawn(len(sizes)))]
        statistic = partial(_chain_sums, order=kernel.inv, edge_rows=(kernel.inv[edges[:, 0]], kernel.inv[edges[:, 1]]))
        out = run_chains(
            kernel,
            starts,
            self.n_sweeps,
            self.rng.spawn(len(sizes)),
            parallel=self.parallel,
            statistic=statistic,
            keep_states=self.persistent,
        )
        sum_s = sum(sums[0] for _, sums in out)
        sum_ss = sum(sums[1] for _, sums in out)
        if self.persistent:
            self.pool = [S for S, _ in out]
        return ising_statistics(sum_s / self.n_samples, sum_ss / self.n_samples, edges)


class _ExactExpectation:
    """Exact ``E_theta[t(x)]`` in ``{-1, +1}`` coordinates by junction-tree calibration."""

    def __init__(self, model, node_pos, edge_pos, edges):
        self.model, self.node_pos, self.edge_pos, self.edges = model, node_pos, edge_pos, edges

    def __call__(self, phi):
        self.model.theta = _binary_theta(phi, self.model, self.node_pos, self.edge_pos, self.edges)
        mu = self.model.expected_statistics()
        return ising_statistics(mu[self.node_pos], mu[self.edge_pos], self.edges)


class _ExactSampleExpectation(_ExactExpectation):
    """``E_theta[t(x)]`` estimated from ``M`` exact junction-tree samples (``v = infinity``)."""

    def __init__(self, model, node_pos, edge_pos, edges, n_samples, rng):
        super().__init__(model, node_pos, edge_pos, edges)
        self.n_samples, self.rng = n_samples, rng

    def __call__(self, phi):
        self.model.theta = _binary_theta(phi, self.model, self.node_pos, self.edge_pos, self.edges)
        S = self.model.sample(self.n_samples, self.rng, method="exact").astype(np.float64)
        return _mean_statistics(S, self.edges)


class _Positions(NamedTuple):
    """Where a binary pairwise model keeps its unary and pair parameters, and its edges."""

    node_pos: np.ndarray
    edge_pos: np.ndarray
    edges: np.ndarray


def _pairwise_positions(layout):
    """The :class:`_Positions` of a pairwise :class:`~skmrf.parametrisation.CliqueLayout`."""
    sizes = np.array([len(c) for c in layout.cliques])
    edge_blocks = np.flatnonzero(sizes == 2)
    edges = np.array([layout.cliques[k] for k in edge_blocks], dtype=np.int64).reshape(-1, 2)
    return _Positions(layout.block_offsets[np.flatnonzero(sizes == 1)], layout.block_offsets[edge_blocks], edges)


def _check_work(schedule, n_variables):
    """Refuse a schedule over :data:`~skmrf.estimators._fast_mixing.MAX_WORK` single-site updates."""
    n = n_variables
    work = float(schedule.n_iter) * schedule.n_samples * schedule.n_sweeps * n
    if work > MAX_WORK:
        raise ValueError(
            f"The schedule K={schedule.n_iter} steps, M={schedule.n_samples} samples, v={schedule.n_sweeps} "
            f"sweeps ({schedule.n_sweeps * n} single-site transitions) of {n} variables is K*M*v*n = {work:.3g} "
            f"single-site updates, over the budget MAX_WORK={MAX_WORK:.3g}. "
            "Increase eps or alpha, lower lipschitz (the paper uses L well below Theorem 1's bound), "
            "or give n_iter, n_samples and n_sweeps explicitly."
        )


def _report(log, n_variables, k, phi, grad):
    """Algorithm 1's progress line: the step, the gradient norm and the largest coupling."""
    log(
        "Iteration %d, |grad| = %.4f, max |J| = %.4f", k, np.linalg.norm(grad), np.abs(phi[n_variables:]).max(initial=0)
    )


def _project_couplings(phi, n_variables, project):
    """Project the couplings ``J = phi[n_variables:]`` of ``phi = (h, J)``; the fields are free."""
    return np.concatenate([phi[:n_variables], project(phi[n_variables:])])


# ---------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------
@fill_doc
class MCMCMaxLikelihood(BaseDiscreteMRF):
    """Maximum likelihood by projected gradient with MCMC gradients in a fast-mixing set.

    Algorithm 1 of Domke (2015): gradient descent with step ``1 / L`` on the
    (ridge-regularised) negative mean log-likelihood of a binary pairwise MRF,
    the model expectation estimated from ``n_samples`` Gibbs chains of
    ``n_sweeps`` sweeps each, every step projected onto a set of parameters
    in which Gibbs sampling is guaranteed to mix fast. With the schedule of
    :func:`fast_mixing_schedule` (``"auto"``), the result is within ``eps``
    of the best parameters inside the set with probability ``1 - delta``.

    Parameters
    ----------
    %(graph)s
        Pairwise only: every factor must be a node or an edge.
    max_coupling : float, default=None
        Size of the fast-mixing set, on the ``{-1, +1}`` couplings ``J``
        (``theta_ij = 4 J_ij``): the bound ``beta`` on ``|J_ij|`` (box) or the
        bound ``c < 1`` on ``||R(J)||_2`` (spectral). None takes
        ``artanh(0.8 / max_degree)`` (box) or ``0.8`` (spectral).
    projection : {"box", "spectral"}, default="box"
        The fast-mixing set. ``"box"``: ``|J_ij| <= beta`` with
        ``max_degree * tanh(beta) < 1`` (Dobrushin, Section 3.1), projected by
        clipping. ``"spectral"``: ``||R(J)||_2 <= c`` with ``R_ij = |J_ij|``
        (Eq. 4, Domke & Liu 2013), projected by Dykstra's algorithm
        (``O(n_features^3)`` per step).
    alpha : float or "auto", default="auto"
        Ridge penalty ``alpha / 2 * ||theta||^2`` on the ``{-1, +1}``
        parameters, added to the negative mean log-likelihood: the paper's
        ``lambda``. ``alpha > 0`` selects the strongly convex analysis
        (Corollary 9), ``alpha = 0`` the convex one (Theorem 5).
        %(alpha_auto)s
    lipschitz : float, default=None
        ``L``; the step is ``1 / L``. None takes Theorem 1's
        ``4 R2^2 + alpha`` with ``R2^2 = n_features + n_edges``.
    n_iter : int or "auto", default="auto"
        Gradient steps ``K``.
    n_samples : int or "auto", default="auto"
        Chains (samples) per step ``M``.
    n_sweeps : int or "auto", default="auto"
        Gibbs sweeps per chain and step: ``ceil(v / n_features)``.
    eps : float, default=1.0
        Target accuracy of the schedule: ``eps_theta`` (parameter distance,
        ``alpha > 0``) or ``eps_f`` (objective, ``alpha = 0``).
    delta : float, default=0.1
        Allowed probability of missing ``eps``.
    init : {"uniform", "data"}, default="uniform"
        Start distribution ``r`` of the chains: uniform (the paper), or
        training rows (contrastive divergence).
    persistent : bool, default=False
        Keep the chains between steps (persistent contrastive divergence).
        Outside the paper's guarantee (its proof needs fresh independent
        chains at every step, Section 7).
    average : bool, default=True
        Return the average of the iterates ``(1/K) sum theta_k`` (Theorem 2's
        output); False returns the last iterate ``theta_K`` (Corollary 9's).
    %(score_method)s
    max_bytes : int, default=None
        Memory budget of one junction-tree calibration for exact scoring.
    random_state : int, RandomState instance or None, default=None
        Seeds the start states and every Gibbs update. The streams of the
        chain blocks are drawn up front, so the result does not depend on
        ``n_jobs``.
    n_jobs : int, default=None
        Parallel jobs over blocks of 4096 chains (joblib). With one block, or
        steps too small to pay for the pool (under ``2 *
        MCMC_MIN_WORK_PER_WORKER`` single-site updates, measured by
        ``benchmarks/parallel_threshold.py``), the chains run serially,
        whatever ``n_jobs`` and backend (a Dask cluster included).
    verbose : int, default=0
        Print one line per step when positive.

    Attributes
    ----------
    graph_ : MRFGraph
    n_states_ : ndarray of shape (n_features,)
        All 2.
    model_ : DiscreteMRF
        The fitted model in the package's ``{0, 1}`` parametrisation.
    %(alpha_)s
    theta_ : ndarray of shape (n_params,)
        Alias of ``model_.theta``.
    edges_ : ndarray of shape (n_edges, 2)
    ising_fields_ : ndarray of shape (n_features,)
        Fitted ``{-1, +1}`` fields ``h``.
    ising_couplings_ : ndarray of shape (n_edges,)
        Fitted ``{-1, +1}`` couplings ``J`` (inside the fast-mixing set).
    schedule_ : FastMixingSchedule
        ``(n_iter, n_samples, n_sweeps)`` used.
    schedule_auto_ : FastMixingSchedule or None
        The theoretical schedule (None when all three were given).
    max_coupling_ : float
    mixing_constant_, mixing_rate_ : float
        ``C`` and ``alpha`` of Eq. 2 for the set.
    lipschitz_ : float
    suff_stat_bound_ : float
        ``R2 = sqrt(n_features + n_edges)``.
    distance_bound_ : float
        ``D >= ||theta_0 - theta*||_2`` used by the schedule.
    n_iter_ : int
    log_partition_ : float or None
        ``log Z`` when scoring is exact, its AIS estimate when it is
        ``"ais"``, None for ``"pseudo"``.
    log_partition_std_ : float
        Standard error of the AIS estimate (only with ``score_method="ais"``).
    score_method_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    ExactMaxLikelihood : exact (junction tree) maximum likelihood, without a set.

    Notes
    -----
    **Coordinates.** The paper's model (Section 3.1) is the Ising model over
    ``x in {-1, +1}``, ``p(x) ~ exp(sum J_ij x_i x_j + sum h_i x_i)``. With
    ``x = 2 s - 1`` it is the package's model over ``s in {0, 1}`` with
    ``theta_ij = 4 J_ij`` and ``theta_i = 2 h_i - 2 sum_j J_ij``. The fast-mixing
    sets, ``R2`` (``|x_i|, |x_i x_j| <= 1``) and the Lipschitz bound are
    defined on ``(h, J)``, so the optimisation, the projection and the ridge
    penalty all act on ``(h, J)``; ``model_`` receives the converted
    parameters. Fields are not constrained (the Dobrushin condition does not
    involve them).

    **Objective** (Eq. 1), with ``t(x) = (x_i, x_i x_j)``:

    .. math::

        f(\\phi) = A(\\phi) - \\phi\\cdot\\bar t + \\frac{\\lambda}{2}\\|\\phi\\|^2,\\qquad
        \\phi_{k} = \\Pi_\\Theta\\Bigl[\\phi_{k-1} - \\frac1L\\Bigl(\\frac1M\\sum_i t(x_i)
            - \\bar t + \\lambda\\phi_{k-1}\\Bigr)\\Bigr].

    **Schedule.** ``C = n_features`` and ``alpha = exp(-(1 - rho) / n_features)``
    with ``rho = max_degree tanh(beta)`` (box) or ``c`` (spectral). ``D`` bounds
    ``||phi*||`` (``phi_0 = 0``): ``2 beta`` per edge (the paper's diameter
    convention), ``artanh(|mean x_i|) + max_degree beta`` per field (at the
    optimum ``E[x_i]`` is pulled towards the data mean, and a field moves
    ``E[x_i]`` by ``tanh`` with neighbours contributing at most
    ``max_degree beta``), and with ``alpha > 0`` at most
    ``sqrt(2 n_features log 2 / alpha)`` overall (since ``f(phi*) <= f(0)``).
    For the spectral set the couplings contribute ``sqrt(2 n_features) c``
    and a field's neighbours ``sqrt(max_degree) c``.
    One Gibbs sweep counts as ``n_features`` of the paper's single-site
    transitions: under the Dobrushin condition a systematic sweep contracts by
    at least ``rho <= exp(-(1 - rho))`` (Dyer, Goldberg and Jerrum 2009).
    Fits whose work ``n_iter * n_samples * n_sweeps * n_features`` exceeds
    :data:`~skmrf.estimators._fast_mixing.MAX_WORK` single-site updates are refused.

    Each step costs ``n_samples * n_sweeps`` sweeps, vectorised over chains
    and colour classes; the projection is ``O(n_edges)`` (box).

    References
    ----------
    J. Domke, "Maximum likelihood learning with arbitrary treewidth via
    fast-mixing parameter sets", NIPS 2015.
    J. Domke and X. Liu, "Projecting Ising model parameters for fast
    mixing", NIPS 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.estimators.mcmc import MCMCMaxLikelihood
    >>> X = np.random.default_rng(0).integers(0, 2, size=(50, 4))
    >>> est = MCMCMaxLikelihood("chain", alpha=1.0, lipschitz=5.0, eps=1.0,
    ...                         random_state=0).fit(X)
    >>> est.schedule_
    FastMixingSchedule(n_iter=14, n_samples=3005, n_sweeps=34)
    >>> bool(np.all(np.abs(est.ising_couplings_) <= est.max_coupling_))
    True
    """

    _parameter_constraints: dict = {
        "graph": BaseDiscreteMRF._parameter_constraints["graph"],
        "score_method": BaseDiscreteMRF._parameter_constraints["score_method"],
        "max_bytes": BaseDiscreteMRF._parameter_constraints["max_bytes"],
        "max_coupling": [Interval(Real, 0, None, closed="neither"), None],
        "projection": [StrOptions({"box", "spectral"})],
        "alpha": ALPHA_CONSTRAINT,
        "lipschitz": [Interval(Real, 0, None, closed="neither"), None],
        "n_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_samples": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_sweeps": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "eps": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "init": [StrOptions({"uniform", "data"})],
        "persistent": ["boolean"],
        "average": ["boolean"],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    #: The model is binary; not a parameter (``_validate_fit_data`` reads it).
    n_states = "auto"

    #: Test hook: "mcmc" (Algorithm 1), "exact" (junction-tree expectations) or
    #: "exact-samples" (``n_samples`` exact junction-tree draws per step).
    _gradient = "mcmc"

    def __init__(
        self,
        graph="chain",
        *,
        max_coupling=None,
        projection="box",
        alpha="auto",
        lipschitz=None,
        n_iter="auto",
        n_samples="auto",
        n_sweeps="auto",
        eps=1.0,
        delta=0.1,
        init="uniform",
        persistent=False,
        average=True,
        score_method="auto",
        max_bytes=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.graph = graph
        self.max_coupling = max_coupling
        self.projection = projection
        self.alpha = alpha
        self.lipschitz = lipschitz
        self.n_iter = n_iter
        self.n_samples = n_samples
        self.n_sweeps = n_sweeps
        self.eps = eps
        self.delta = delta
        self.init = init
        self.persistent = persistent
        self.average = average
        self.score_method = score_method
        self.max_bytes = max_bytes
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit by Algorithm 1 (projected gradient with MCMC gradients).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary states 0/1; never modified.
        y : None
            Ignored.

        Returns
        -------
        self : MCMCMaxLikelihood
            The fitted estimator.

        Raises
        ------
        ValueError
            For non-binary data or non-pairwise graphs, a ``max_coupling``
            outside the fast-mixing range, or a schedule whose work exceeds
            :data:`~skmrf.estimators._fast_mixing.MAX_WORK`.
        """
        log = ProgressLog(type(self).__name__, self.verbose)
        Xi = self._validate_fit_data(X)
        self._check_binary_pairwise(Xi, f"MCMCMaxLikelihood's fast-mixing sets ({self.projection!r}) are defined")
        self._ridge(Xi.shape[0])
        positions = _pairwise_positions(self.model_.layout)
        n, edges = Xi.shape[1], positions.edges
        geometry = fast_mixing_set(self.projection, self.max_coupling, n, edges, self.graph_.max_degree)
        mean_stats = _mean_statistics(Xi.astype(np.float64), edges)
        auto, sched, L, R2, D = self._schedule(mean_stats[:n], len(edges), geometry)
        self.schedule_auto_, self.schedule_, self.edges_ = auto, sched, edges
        self.max_coupling_, self.mixing_constant_, self.mixing_rate_ = geometry[:3]
        self.lipschitz_, self.suff_stat_bound_, self.distance_bound_ = L, R2, D

        rng = check_generator(self.random_state)
        n_workers = workers_for(self.n_jobs, sched.n_samples * sched.n_sweeps * n, MCMC_MIN_WORK_PER_WORKER)
        with parallel_or_serial(n_workers, verbose=max(0, self.verbose - 1)) as parallel:
            last, mean = projected_gradient(
                self._expectation(Xi, positions, sched, rng, parallel),
                mean_stats,
                partial(_project_couplings, n_variables=n, project=geometry.project),
                lipschitz=L,
                ridge=self.alpha_,
                n_iter=sched.n_iter,
                callback=partial(_report, log, n) if self.verbose else None,
            )
        self.n_iter_ = sched.n_iter
        self._set_parameters(mean if self.average else last, geometry.project, positions)
        self._resolve_score_method(self.random_state)
        return self

    def _schedule(self, mean_x, n_edges, geometry):
        """``(schedule_auto, schedule, L, R2, D)``: the given or theoretical K/M/v and its inputs."""
        n = len(mean_x)
        R2 = math.sqrt(n + n_edges)
        L = float(self.lipschitz) if self.lipschitz is not None else 4 * R2**2 + self.alpha_
        D = distance_bound(self.projection, geometry.bound, mean_x, n_edges, self.graph_.max_degree, self.alpha_)
        given = (self.n_iter, self.n_samples, self.n_sweeps)
        auto = None
        if any(isinstance(g, str) for g in given):
            if not np.isfinite(D):
                j = int(np.argmax(np.abs(mean_x)))
                raise ValueError(
                    f"The schedule needs a bound on ||theta_0 - theta*||, but column {j} is constant, so "
                    "with alpha=0 its field has no finite optimum. Set alpha > 0, drop the column, or give "
                    "n_iter, n_samples and n_sweeps explicitly."
                )
            auto = fast_mixing_schedule(
                self.eps,
                lipschitz=L,
                suff_stat_bound=R2,
                mixing_constant=geometry.mixing_constant,
                mixing_rate=geometry.mixing_rate,
                distance_bound=D,
                ridge=self.alpha_,
                delta=self.delta,
                n_variables=n,
            )
        sched = FastMixingSchedule(*(a if isinstance(g, str) else int(g) for g, a in zip(given, auto or given)))
        _check_work(sched, n)
        return auto, sched, L, R2, D

    def _expectation(self, Xi, positions, sched, rng, parallel):
        """The estimate of ``E_phi[t(x)]`` each step uses: Gibbs chains, or a test reference."""
        if self._gradient == "exact":
            return _ExactExpectation(self.model_, *positions)
        if self._gradient == "exact-samples":
            return _ExactSampleExpectation(self.model_, *positions, sched.n_samples, rng)
        colours = colour_classes(self.graph_)
        return _MCMCExpectation(
            Xi, positions.edges, colours, sched.n_samples, sched.n_sweeps, self.init, self.persistent, rng, parallel
        )

    def _set_parameters(self, phi, project, positions):
        """Store ``phi = (h, J)`` as ``ising_fields_``, ``ising_couplings_`` and, in ``{0, 1}``, ``model_``."""
        n = self.model_.n_variables
        if self.average and self.projection == "spectral":
            # The set is convex, so the average is inside it; project away round-off.
            phi[n:] = project(phi[n:])
        self.ising_fields_, self.ising_couplings_ = phi[:n].copy(), phi[n:].copy()
        theta = _binary_theta(phi, self.model_, *positions)
        self.model_.theta = theta
        if not np.all(np.isfinite(theta)):
            warn_not_converged(
                type(self).__name__,
                f"in {self.n_iter_} steps: the parameters diverged (non-finite)",
                "Increase lipschitz (smaller steps) or alpha.",
                stacklevel=4,
            )
