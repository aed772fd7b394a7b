"""MCMC maximum likelihood: the practical (adaptive) schedule and Domke's (2015) provable one.

- ``schedule="adaptive"`` (the default): persistent Gibbs chains, a constant step, a stopping
  rule on the gradient's noise level and the average of the last half of the iterates
  (:func:`skmrf.solvers.stochastic_gradient.stochastic_gradient`), in the package's
  parametrisation, for pairwise models with any numbers of states (:class:`_PersistentChains`);
- ``schedule="theory"``: Algorithm 1 of Domke (2015) inside a fast-mixing set, with the K/M/v
  schedule of its theorems (:mod:`skmrf.estimators._fast_mixing`), for binary models. The
  paper's model is the Ising model over ``x in {-1, +1}``; everything it bounds (the set,
  ``R_2``, the Lipschitz constant) is stated in those coordinates, so Algorithm 1 runs there
  (:class:`_MCMCExpectation`) and the result is converted at the end
  (:func:`skmrf.model.ising.ising_to_binary`);
- expectations from the junction tree and from exact samples (test references).
"""

from __future__ import annotations

import math
import time
import warnings
from functools import partial
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..inference.gibbs import (
    BinaryGibbsKernel,
    CategoricalGibbsKernel,
    GibbsSampler,
    colour_classes,
    is_binary_pairwise,
    run_chains,
)
from ..model.ising import binary_to_ising, ising_statistics, ising_to_binary
from ..solvers._convergence import warn_not_converged
from ..solvers.projected_gradient import projected_gradient
from ..solvers.stochastic_gradient import stochastic_gradient
from ..utils._docstrings import fill_doc
from ..utils._parallel import parallel_or_serial, workers_for
from ..utils._sklearn_compat import Interval, StrOptions, _fit_context
from ..utils._verbose import ProgressLog
from ..utils.validation import check_generator
from ._base import ALPHA_CONSTRAINT, N_JOBS_CONSTRAINT, BaseDiscreteMRF
from ._existence import NoFiniteEstimateWarning, warn_if_unbounded
from ._fast_mixing import (
    MAX_WORK,
    FastMixingSchedule,
    FastMixingSet,
    distance_bound,
    fast_mixing_schedule,
    fast_mixing_set,
    project_spectral,
)
from .pseudo import PseudoLikelihoodEstimator

__all__ = ["MCMCMaxLikelihood", "MCMCSchedule", "MixingBoundWarning"]

#: Chains per Gibbs block. Blocks are the unit of parallel work and each has
#: its own random stream, drawn up front, so results do not depend on n_jobs.
CHAIN_BLOCK = 4096

#: Work of one step (single-site Gibbs updates: chains x sweeps x variables) each worker
#: needs before the chain blocks run in parallel (loky processes). Measured
#: (benchmarks/results/parallel_threshold.txt): t(2 jobs) / t(1 job) was 15 at 1.8e3, 2.0 at
#: 4.1e6, 0.87 at 2.1e7, 0.68 at 8.4e7, so two workers start at 1.6e7.
MCMC_MIN_WORK_PER_WORKER = 8e6

#: The adaptive schedule's "auto" values come from :func:`adaptive_defaults` (its docstring has
#: the rule and the measurements behind it). Its inputs: the Monte-Carlo error of the averaged
#: iterate is held to ADAPTIVE_MC_FRACTION of the statistical error of maximum likelihood,
#: over ADAPTIVE_AVERAGE averaged steps, with at least ADAPTIVE_MIN_CHAINS chains and at most
#: ADAPTIVE_MAX_SWEEPS sweeps per step; a step's statistics and natural step cost about
#: ADAPTIVE_STEP_COST sweeps.
ADAPTIVE_MC_FRACTION = 0.1
ADAPTIVE_AVERAGE = 200
ADAPTIVE_MIN_CHAINS = 1000
ADAPTIVE_MAX_SWEEPS = 50
ADAPTIVE_STEP_COST = 1.0
#: Beyond this many bytes of chain states (8 per variable and chain) the averaging grows instead.
ADAPTIVE_MAX_STATE_BYTES = 1 << 28
#: The fixed parts: most steps, fewest steps before the stopping rule may fire, the rule's
#: window, the sweeps that bring the chains (started at data rows) to the start parameters,
#: and the probe that measures the sweeps' autocorrelation there (chains and sweeps).
ADAPTIVE_MAX_ITER = 2000
ADAPTIVE_MIN_ITER = 50
ADAPTIVE_WINDOW = 20
ADAPTIVE_BURN_IN = 20
ADAPTIVE_PROBE_CHAINS = 1000
ADAPTIVE_PROBE_SWEEPS = 20
#: The measured autocorrelation is capped here (an autocorrelation time of about 2000 sweeps).
ADAPTIVE_MAX_CORRELATION = 0.999

#: The natural-gradient step: damping added to the chains' feature covariance (it bounds the
#: step in directions the chains barely see), conjugate-gradient iterations and tolerance per step.
NATURAL_DAMPING = 1e-2
NATURAL_CG_ITER = 50
NATURAL_CG_RTOL = 1e-2
#: The natural step's largest change of one parameter (a trust region).
NATURAL_MAX_STEP = 1.0
#: Steps between rebuilds of the natural step's covariance from the chains (the most costly part).
NATURAL_REFRESH = 10
#: Chains the natural step's covariance is measured on (the first ones): three per parameter,
#: at least NATURAL_FISHER_MIN_CHAINS and at most NATURAL_FISHER_CHAINS. Any fixed preconditioner
#: keeps the fixed point, and the cap keeps the step's cost independent of the number of chains;
#: but the preconditioner sets how fast the averaged iterate settles. On a 12x12 grid with 3
#: states (1344 parameters) and 10^4 rows: 1.2 % from exact ML with 4096 of 7189 chains or with
#: all of them, 2.5 % with 1024 (then the step is diagonal: ``rho = 1``); binary (408
#: parameters), 1000 of 4000 chains did as well as all 4000.
NATURAL_FISHER_CHAINS = 4096
NATURAL_FISHER_MIN_CHAINS = 1024
#: The fraction of the natural step taken. A full step (1) leaves a bias of order 1 / n_chains in
#: the averaged iterate (constant-step stochastic approximation on a curved objective): on a
#: 12x12 grid with 10^4 rows and 1000 chains, 1.6 % from exact ML for the mean of four fits
#: against 0.75 % with 0.5, where the error is the averaged noise alone.
NATURAL_STEP = 0.5


class MixingBoundWarning(UserWarning):
    """The parameter set is outside the fast-mixing set: a constraint, not a mixing guarantee."""


class MCMCSchedule(NamedTuple):
    """The schedule a fit ran.

    ``kind`` is ``"theory"`` (Domke's Algorithm 1) or ``"adaptive"``; ``n_iter`` the steps
    allowed (the adaptive rule may stop earlier: see ``n_iter_``), ``n_samples`` the chains,
    ``n_sweeps`` the Gibbs sweeps per chain and step; ``fast_mixing`` whether the parameter
    set is inside a fast-mixing set, so that the mixing bound of the theory holds.
    """

    kind: str
    n_iter: int
    n_samples: int
    n_sweeps: int
    fast_mixing: bool


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


def _gibbs_kernel(layout, theta, colours):
    """The Gibbs kernel of a pairwise model at ``theta`` (binary or categorical fast path)."""
    if is_binary_pairwise(layout):
        return BinaryGibbsKernel.from_layout(layout, theta, colours)
    return CategoricalGibbsKernel.from_layout(layout, theta, colours)


def _indicator_matrix(layout, S):
    """The features ``phi(x)`` of every row of integer states ``S``: sparse ``(n_rows, n_params)``."""
    column = np.full(layout.n_table, -1, dtype=np.int64)
    column[layout.theta_pos] = np.arange(layout.n_params)
    rows, cols = [], []
    for _, codes in layout.iter_codes(S):
        c = column[codes]
        keep = c >= 0
        rows.append(np.broadcast_to(np.arange(len(S))[:, None], c.shape)[keep])
        cols.append(c[keep])
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(S), layout.n_params))


def _largest_covariance_eigenvalue(T, n_iter=50, seed=0):
    """The largest eigenvalue of the covariance of the rows of ``T`` (power iteration).

    The covariance of ``phi(x)`` under the model is the Hessian of the log-partition function,
    so this is the local Lipschitz constant of the gradient (its step is ``1 / L``).
    """
    m = T.shape[0]
    mu = np.asarray(T.mean(axis=0)).ravel()
    v = np.random.default_rng(seed).standard_normal(T.shape[1])
    value = 0.0
    for _ in range(n_iter):
        norm = np.linalg.norm(v)
        if not norm > 0:  # no variance on the chains at all
            return 0.0
        v /= norm
        w = T.T @ (T @ v) / m - mu * (mu @ v)
        value = float(v @ w)
        v = w
    return value


def _binary_feature_sums(S, order, edge_rows, positions):
    """Feature sums of binary chains ``S`` (internal layout) in ``theta`` order."""
    node_pos, edge_pos = positions
    out = np.empty(len(node_pos) + len(edge_pos))
    out[node_pos], out[edge_pos] = _chain_sums(S, order, edge_rows)
    return out


def _feature_sums(S, layout, kernel):
    """Feature sums of chains ``S`` (``kernel``'s internal layout) in ``theta`` order."""
    return layout.table_counts(kernel.to_external(S))[layout.theta_pos].astype(np.float64)


class _PersistentChains:
    """``E_theta[phi(x)]`` in the package's parametrisation from persistent Gibbs chains.

    Pairwise models with any numbers of states. Calling it with ``theta`` advances the chains
    ``n_sweeps`` sweeps under ``theta`` and returns the mean features and the variance of that
    mean, ``p (1 - p) / M`` per feature (features are indicators), floored at ``1 / M^2``. The
    chains run in blocks of :data:`CHAIN_BLOCK`, each with its own stream spawned up front, so
    the result does not depend on ``n_jobs``. ``persistent=False`` restarts them every call
    (from data rows with ``init="data"``, else uniformly).
    """

    def __init__(self, model, colours, X, n_samples, n_sweeps, init, persistent, rng, parallel):
        self.layout, self.colours, self.X = model.layout, colours, X
        self.n_states = model.n_states
        self.n_samples, self.n_sweeps = n_samples, n_sweeps
        self.init, self.persistent, self.rng, self.parallel = init, persistent, rng, parallel
        self.binary = is_binary_pairwise(self.layout)
        if self.binary:
            self.positions = _pairwise_positions(self.layout)
        self.pool = None
        self.features, self.calls = None, 0  # the natural step's feature matrix, and its age

    def _start(self, kernel, m, rng):
        if self.init == "data":
            return kernel.to_internal(self.X[rng.integers(0, len(self.X), m)])
        return kernel.to_internal(np.floor(rng.random((m, len(self.n_states))) * self.n_states).astype(np.int64))

    def _features(self, kernel):
        """Per-block statistic (picklable, for process workers): the chains' feature sums."""
        if self.binary:
            node_pos, edge_pos, edges = self.positions
            edge_rows = (kernel.inv[edges[:, 0]], kernel.inv[edges[:, 1]])
            return partial(_binary_feature_sums, order=kernel.inv, edge_rows=edge_rows, positions=(node_pos, edge_pos))
        return partial(_feature_sums, layout=self.layout, kernel=kernel)

    def advance(self, theta, n_sweeps, statistic=True):
        """Advance the chains ``n_sweeps`` sweeps under ``theta``; the feature sums, or None."""
        kernel = _gibbs_kernel(self.layout, theta, self.colours)
        sizes = [min(CHAIN_BLOCK, self.n_samples - a) for a in range(0, self.n_samples, CHAIN_BLOCK)]
        if self.persistent and self.pool is not None:
            starts = self.pool  # the internal layout depends on the colouring only
        else:
            starts = [self._start(kernel, m, r) for m, r in zip(sizes, self.rng.spawn(len(sizes)))]
        out = run_chains(
            kernel,
            starts,
            n_sweeps,
            self.rng.spawn(len(sizes)),
            parallel=self.parallel,
            statistic=self._features(kernel) if statistic else None,
            keep_states=True,
        )
        self.pool = [S for S, _ in out]
        self.kernel = kernel
        return sum(f for _, f in out) if statistic else None

    def states(self, limit=None):
        """The current states of the chains (the first ``limit``), ``(n_chains, n_variables)`` integers."""
        blocks = self.pool if limit is None else self.pool[: -(-limit // CHAIN_BLOCK)]
        return np.concatenate([self.kernel.to_external(S) for S in blocks])[:limit]

    def natural_step(self, gradient, free, damping):
        """Solve ``(F + damping I) s = g`` on the ``free`` features: a natural-gradient step.

        ``F`` is the Fisher information (the Hessian of ``log Z``, the covariance of the
        features) estimated on the chains and shrunk towards its diagonal: ``F = (1 - rho) C
        + rho D`` with ``C`` the chains' covariance, ``D`` its diagonal ``p (1 - p)`` (floored
        at ``1 / M``) and ``rho = min(1, n_free / M)``, since ``M`` chains give ``C`` a rank
        below ``M``; with ``rho = 1`` the step is diagonal. It is solved by conjugate
        gradients. Features outside ``free`` (active bounds) take the plain gradient step, as
        in Bertsekas' two-metric projection, so the projected iteration keeps the constrained
        optimum as its fixed point.
        """
        if self.calls % NATURAL_REFRESH == 0 or self.features is None:
            # Any fixed positive-definite preconditioner keeps the fixed point: refreshed now and then.
            limit = min(NATURAL_FISHER_CHAINS, max(NATURAL_FISHER_MIN_CHAINS, 3 * self.layout.n_params))
            self.features = _indicator_matrix(self.layout, self.states(limit))
        self.calls += 1
        T = self.features if free.all() else self.features[:, free]
        m, mu = T.shape[0], np.asarray(T.mean(axis=0)).ravel()
        rho = min(1.0, T.shape[1] / m)
        diagonal = rho * np.maximum(mu * (1 - mu), 1.0 / m) + damping
        g = gradient[free]
        if rho == 1.0:
            s = g / diagonal
        else:
            s = _conjugate_gradients(lambda v: (1 - rho) * (T.T @ (T @ v) / m - mu * (mu @ v)) + diagonal * v, g)
        out = gradient.copy()
        out[free] = s
        # A trust region: directions the chains barely see get steps of up to 1 / damping
        # times the gradient; no parameter moves more than NATURAL_MAX_STEP at once.
        largest = np.abs(out).max(initial=0.0)
        return out * (NATURAL_MAX_STEP / largest) if largest > NATURAL_MAX_STEP else out

    def __call__(self, theta):
        mean = self.advance(theta, self.n_sweeps) / self.n_samples
        m = self.n_samples
        return mean, np.maximum(mean * (1 - mean), 1.0 / m) / m


def _conjugate_gradients(matvec, b, rtol=NATURAL_CG_RTOL, max_iter=NATURAL_CG_ITER):
    """Solve ``A x = b`` for symmetric positive definite ``A`` (given by ``matvec``), from 0.

    Loose by design: the solution is a step direction, and any positive-definite approximation
    of the Newton step keeps the iteration's fixed point.
    """
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = r @ r
    stop = (rtol * np.linalg.norm(b)) ** 2
    for _ in range(max_iter):
        if rr <= stop:
            break
        Ap = matvec(p)
        a = rr / (p @ Ap)
        x += a * p
        r -= a * Ap
        rr, rr_old = r @ r, rr
        p = r + (rr / rr_old) * p
    return x


def _natural_direction(x, gradient, chains, box, damping):
    """:data:`NATURAL_STEP` times the natural step of ``chains``; with a box, plain on the pair entries held at it.

    ``box`` is ``(pair, bound)`` or None. An entry at its bound whose gradient points out of
    the box is active (two-metric projection, Bertsekas 1982).
    """
    free = np.ones(len(x), dtype=bool)
    if box is not None:
        pair, bound = box
        xp, gp = x[pair], gradient[pair]
        free[pair] = ~(((xp >= bound * (1 - 1e-12)) & (gp < 0)) | ((xp <= -bound * (1 - 1e-12)) & (gp > 0)))
    return NATURAL_STEP * chains.natural_step(gradient, free, damping)


class _ExactFeatures:
    """Exact ``E_theta[phi(x)]`` by the junction tree (test reference); variance 1."""

    def __init__(self, model):
        self.model = model

    def __call__(self, theta):
        self.model.theta = theta
        return self.model.expected_statistics(), np.ones(len(theta))


def _pair_box(theta, max_entry, pair):
    """Clip the pair entries ``theta[pair]`` to ``[-max_entry, max_entry]``; the rest is free."""
    out = theta.copy()
    out[pair] = np.clip(theta[pair], -max_entry, max_entry)
    return out


def _pair_spectral(theta, pair, edges, n_variables, max_norm):
    """The spectral projection of binary couplings ``J = theta_ij / 4``, in ``theta``."""
    out = theta.copy()
    out[pair] = 4.0 * project_spectral(theta[pair] / 4.0, edges, n_variables, max_norm)
    return out


def _work(schedule, n_variables):
    return float(schedule.n_iter) * schedule.n_samples * schedule.n_sweeps * n_variables


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


def _check_work(schedule, n_variables, alternatives=()):
    """Refuse a schedule over :data:`~skmrf.estimators._fast_mixing.MAX_WORK` single-site updates.

    ``alternatives`` are ``(change, schedule)`` pairs; the message quotes those whose work is
    lower, with their figures, so that its advice is advice that helps.
    """
    n = n_variables
    work = _work(schedule, n)
    if work <= MAX_WORK:
        return
    better = sorted(((_work(s, n), change) for change, s in alternatives if _work(s, n) < work))
    advice = (
        "Settings that lower it (work): " + "; ".join(f"{change} ({w:.3g})" for w, change in better) + ". "
        if better
        else ""
    )
    raise ValueError(
        f"The theory schedule K={schedule.n_iter} steps, M={schedule.n_samples} samples, v={schedule.n_sweeps} "
        f"sweeps ({schedule.n_sweeps * n} single-site transitions) of {n} variables is K*M*v*n = {work:.3g} "
        f"single-site updates, over the budget MAX_WORK={MAX_WORK:.3g}. {advice}"
        "Or use schedule='adaptive' (the default: persistent chains and a stopping rule, no guarantee), "
        "or give n_iter, n_samples and n_sweeps explicitly."
    )


def _report(log, k, x, grad, ratio=None, step=None):
    """One progress line per step: the gradient estimate (its noise ratio, the step's length)."""
    if ratio is None:
        log("Iteration %d, |grad| = %.4g", k, np.linalg.norm(grad))
    else:
        norm = np.linalg.norm(grad)
        log("Iteration %d, |grad| = %.4g, mean grad^2 / noise = %.3g, |step| = %.3g", k, norm, ratio, step)


def _project_couplings(phi, n_variables, project):
    """Project the couplings ``J = phi[n_variables:]`` of ``phi = (h, J)``; the fields are free."""
    return np.concatenate([phi[:n_variables], project(phi[n_variables:])])


# ---------------------------------------------------------------------------
# The adaptive schedule's defaults
# ---------------------------------------------------------------------------
class AdaptiveDefaults(NamedTuple):
    """The adaptive schedule's "auto" values (:func:`adaptive_defaults`).

    ``n_chains`` persistent chains, ``n_sweeps`` Gibbs sweeps per chain and step, ``n_average``
    steps averaged once the stopping rule has fired, and ``step_autocorrelation_time``, the
    autocorrelation time in steps of the chains' statistics that the chains were sized for.
    """

    n_chains: int
    n_sweeps: int
    n_average: int
    step_autocorrelation_time: float


def adaptive_defaults(
    n_rows,
    n_variables,
    sweep_correlation=0.0,
    *,
    n_sweeps=None,
    fraction=ADAPTIVE_MC_FRACTION,
    n_average=ADAPTIVE_AVERAGE,
    min_chains=ADAPTIVE_MIN_CHAINS,
    max_sweeps=ADAPTIVE_MAX_SWEEPS,
    step_cost=ADAPTIVE_STEP_COST,
    max_state_bytes=ADAPTIVE_MAX_STATE_BYTES,
):
    """The adaptive schedule's chains, sweeps per step and averaged steps for ``n_rows`` rows.

    **The rule.** The estimate is the mean of ``K`` iterates taken after the run reached its
    noise level. There each step moves ``theta`` by the chains' noise, so the averaged iterate
    is off maximum likelihood by about ``F^-1 e``, with ``e`` the chains' feature noise averaged
    over the ``K`` steps and ``F`` the Fisher information (the features' covariance). ``M``
    chains whose statistics have an autocorrelation time of ``tau`` steps give ``e`` the
    covariance ``tau F / (M K)``, so the Monte-Carlo covariance of the estimate is ``tau F^-1 /
    (M K)``, while maximum likelihood's own sampling covariance is ``F^-1 / n``: the ratio
    ``tau n / (M K)`` is the same for every parameter. The rule holds it at ``fraction^2``:

    ``M K >= tau n / fraction^2``,

    i.e. the Monte-Carlo error is ``fraction`` (0.1) of the statistical error whatever ``n``,
    which adds ``sqrt(1 + 0.01) - 1 = 0.5 %%`` to the fit's error. ``K`` is ``n_average``
    (200) and ``M`` grows with ``n`` (at least ``min_chains``), until the chains' states would
    exceed ``max_state_bytes`` (8 bytes per variable and chain); from there ``K`` grows instead.

    **Sweeps per step.** With a lag-one autocorrelation ``rho`` per sweep
    (:func:`sweep_autocorrelation`, measured at the start parameters), ``v`` sweeps per step
    leave ``rho^v`` between steps and ``tau(v) = (1 + rho^v) / (1 - rho^v)`` steps of
    autocorrelation (a first-order autoregression). A step costs about ``v + step_cost``
    sweeps (``step_cost``: the chains' statistics and the natural step), so the work per
    effective draw is ``(v + step_cost) tau(v)``; ``v`` minimises it, up to ``max_sweeps``.
    Weakly coupled models take one sweep (``rho`` = 0.11 on a 12x12 grid with parameters
    uniform on [-1, 1]: ``tau`` = 1.2); the 8x8 binarised digits 4 (``rho`` = 0.78); the digits
    upsampled to 16x16, whose 2x2 blocks are one pixel each, 12 (``rho`` = 0.965, ``tau`` =
    4.8 steps). More sweeps per step also shrink the lag of persistent chains behind the
    parameters, the bias that one sweep per step left on the 16x16 digits (node frequencies
    of the fitted model up to 0.14 from the data's).

    **Measured** (``benchmarks/mcmc_defaults.py``; the ratio of the two errors, ``tau n / (M
    K)``, predicted ``fraction^2``): see the Notes of :class:`MCMCMaxLikelihood`.

    Parameters
    ----------
    n_rows : int or float
        Rows of the data (their total weight with weights).
    n_variables : int
        Variables of the model (for the chains' memory).
    sweep_correlation : float, default=0.0
        Lag-one autocorrelation per sweep of the chains' statistics, in ``[0, 1)``.
    n_sweeps : int, optional
        Sweeps per step, if given (then only ``M`` and ``K`` follow the rule).
    fraction : float, default=ADAPTIVE_MC_FRACTION
        The Monte-Carlo error's share of the statistical error.
    n_average : int, default=ADAPTIVE_AVERAGE
        The averaged steps ``K`` (more when the chains hit ``max_state_bytes``).
    min_chains : int, default=ADAPTIVE_MIN_CHAINS
        The fewest chains.
    max_sweeps : int, default=ADAPTIVE_MAX_SWEEPS
        The most sweeps per step.
    step_cost : float, default=ADAPTIVE_STEP_COST
        The cost of a step beyond its sweeps, in sweeps.
    max_state_bytes : int, default=ADAPTIVE_MAX_STATE_BYTES
        The chains' states (8 bytes per variable and chain) beyond which ``K`` grows instead.

    Returns
    -------
    AdaptiveDefaults
        ``(n_chains, n_sweeps, n_average, step_autocorrelation_time)``.
    """
    rho = min(max(float(sweep_correlation), 0.0), ADAPTIVE_MAX_CORRELATION)

    def tau(v):
        return (1 + rho**v) / (1 - rho**v)

    if n_sweeps is None:
        n_sweeps = min(range(1, max_sweeps + 1), key=lambda v: (v + step_cost) * tau(v))
    t = tau(n_sweeps)
    draws = t * n_rows / fraction**2  # M K
    max_chains = max(min_chains, int(max_state_bytes // (8 * max(n_variables, 1))))
    n_chains = min(max(min_chains, math.ceil(draws / n_average)), max_chains)
    n_average = max(n_average, math.ceil(draws / n_chains))
    return AdaptiveDefaults(n_chains, int(n_sweeps), n_average, t)


def sweep_autocorrelation(model, X, rng, n_chains=ADAPTIVE_PROBE_CHAINS, n_sweeps=ADAPTIVE_PROBE_SWEEPS):
    """Lag-one autocorrelation per Gibbs sweep of ``model``'s chains: the slower of two statistics.

    ``n_chains`` chains start at rows of ``X`` drawn with replacement and run ``n_sweeps``
    sweeps; after each, every chain's energy and fraction of non-zero states are recorded (the
    statistics :meth:`~skmrf.model.DiscreteMRF.sample` checks R-hat on). Each sweep's mean over
    the chains is subtracted, which removes the common drift of chains that start from the data
    rather than from the model, and the lag-one autocorrelation of the rest is pooled over
    chains and sweeps. Returns the larger of the two, in ``[0, ADAPTIVE_MAX_CORRELATION]`` (0
    when neither statistic varies).

    Measured at the pseudo-likelihood start: 0.11 on a 12x12 grid with 10^4 rows from
    parameters uniform on [-1, 1]; 0.78 on the 8x8 binarised digits; 0.965 on the digits
    upsampled to 16x16. Twenty sweeps from the data rows gave the same values within 0.01 as
    100 sweeps after 20 of burn-in.

    Parameters
    ----------
    model : DiscreteMRF
        The model at the parameters to measure.
    X : ndarray of shape (n_rows, n_variables)
        Integer states; the chains start at its rows.
    rng : numpy.random.Generator
        Draws the start rows and every Gibbs update.
    n_chains : int, default=ADAPTIVE_PROBE_CHAINS
        Chains.
    n_sweeps : int, default=ADAPTIVE_PROBE_SWEEPS
        Sweeps of each chain.

    Returns
    -------
    float
        The lag-one autocorrelation per sweep.
    """
    sampler = GibbsSampler(model)
    states = np.asarray(X)[rng.integers(0, len(X), n_chains)]
    trace = np.empty((n_chains, n_sweeps, 2))
    for t in range(n_sweeps):
        states = sampler.run(states, 1, rng)
        trace[:, t, 0] = model.layout.energy(states, model.theta)
        trace[:, t, 1] = (states > 0).mean(axis=1)
    r = trace - trace.mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (r[:, 1:] * r[:, :-1]).sum(axis=(0, 1)) / (r[:, :-1] ** 2).sum(axis=(0, 1))
    rho = rho[np.isfinite(rho)]
    return float(np.clip(rho.max(), 0.0, ADAPTIVE_MAX_CORRELATION)) if len(rho) else 0.0


# ---------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------
@fill_doc
class MCMCMaxLikelihood(BaseDiscreteMRF):
    """Maximum likelihood by projected gradient with MCMC gradients.

    Two schedules share one estimator:

    - ``schedule="adaptive"`` (default): persistent Gibbs chains started at data rows, as many
      as keep the Monte-Carlo error at a tenth of the statistical error (they grow with the
      rows), as many sweeps per step as the chains' measured autocorrelation calls for,
      natural-gradient steps (the Fisher information measured on the chains), a start at the
      pseudo-likelihood estimate, a stopping rule on the gradient's noise level and the
      average of the iterates after it (:func:`adaptive_defaults`). It works in the
      package's parametrisation, for pairwise models with any numbers of states, with or
      without a constraint set. No guarantee comes with it.
    - ``schedule="theory"``: Algorithm 1 of Domke (2015) for binary pairwise models, with the
      K/M/v schedule of its theorems (:func:`fast_mixing_schedule`), inside a fast-mixing set:
      the result is within ``eps`` of the best parameters in the set with probability
      ``1 - delta``. The theory's constants are conservative, so its schedules are often
      astronomically long; fits over ``MAX_WORK`` single-site updates are refused with the
      settings that would shorten them.

    Parameters
    ----------
    %(graph)s
        Pairwise only: every factor must be a node or an edge.
    %(n_states)s
    schedule : {"adaptive", "theory"}, default="adaptive"
        The algorithm and the meaning of ``"auto"`` in ``n_iter``, ``n_samples`` and
        ``n_sweeps`` (see above and the Notes).
    max_coupling : float or None, default=None
        A constraint set on the couplings. With ``projection="box"``: ``|J_ij| <= beta`` on
        the ``{-1, +1}`` couplings of a binary model (``theta_ij = 4 J_ij``), and
        ``|theta_ij(s, t)| <= beta`` on every pair entry of a model with more states. Either
        way the Dobrushin influence of a neighbour is at most ``tanh(beta)`` (Notes), so the
        set is fast-mixing when ``max_degree * tanh(beta) < 1``. With ``"spectral"``
        (binary only): ``||R(J)||_2 <= c``, fast-mixing when ``c < 1``. None: no constraint
        with the adaptive schedule; the default fast-mixing set (``artanh(0.8 / max_degree)``
        or ``0.8``) with the theory schedule. Outside the fast-mixing range the set is a
        constraint, not a guarantee: a ``MixingBoundWarning`` says so and
        ``schedule_.fast_mixing`` is False (the theory schedule's "auto" values refuse it).
    projection : {"box", "spectral"}, default="box"
        The constraint set's shape. The spectral projection is Dykstra's algorithm
        (Domke & Liu 2013).
    alpha : float or "auto", default="auto"
        Ridge penalty ``alpha / 2 * ||theta||^2`` added to the mean negative log-likelihood:
        on the package's parameters with the adaptive schedule (as every discrete estimator),
        on the paper's ``{-1, +1}`` parameters ``(h, J)`` with the theory schedule (its
        ``lambda``: ``alpha > 0`` selects the strongly convex analysis, Corollary 9,
        ``alpha = 0`` the convex one, Theorem 5).
        %(alpha_auto)s
    lipschitz : float, default=None
        ``L``; the step is ``gradient / L``. None: natural-gradient steps (adaptive; with the
        spectral set, ``L`` is the largest eigenvalue of the chains' feature covariance);
        Theorem 1's ``4 R2^2 + alpha`` with ``R2^2 = n_features + n_edges`` (theory).
    n_iter : int or "auto", default="auto"
        Gradient steps ``K``. Adaptive "auto": the stopping rule fires (after at least 50
        steps, within the first 1000), then 200 more steps (or as many as before, if more)
        are averaged; at most 2000 in all. An integer runs exactly that many and averages the
        last half.
    n_samples : int or "auto", default="auto"
        Chains ``M``. Adaptive "auto": ``max(1000, tau n / (0.1^2 200))`` for ``n`` rows and
        the chains' autocorrelation time ``tau`` in steps (:func:`adaptive_defaults`), so
        that the Monte-Carlo error stays a tenth of maximum likelihood's statistical error.
    n_sweeps : int or "auto", default="auto"
        Gibbs sweeps per chain and step (theory: ``ceil(v / n_features)``). Adaptive "auto":
        from the autocorrelation per sweep measured at the start
        (``sweep_autocorrelation_``): 1 for weakly coupled models, more for strongly coupled
        ones (:func:`adaptive_defaults`).
    tol : float, default=0.5
        The adaptive stopping rule: stop when the gradient estimates averaged over the last
        20 steps, squared and divided by their Monte-Carlo variance, are below ``1 + tol`` on
        average over the features (about 1 or less at the optimum, where only noise is left).
    eps : float, default=1.0
        Target accuracy of the theory schedule: ``eps_theta`` (parameter distance,
        ``alpha > 0``) or ``eps_f`` (objective, ``alpha = 0``).
    delta : float, default=0.1
        Allowed probability of missing ``eps`` (theory).
    init : {"uniform", "data"} or None, default=None
        Start states of the chains: uniform (the paper's ``r``), or training rows (contrastive
        divergence). None: ``"data"`` (adaptive), ``"uniform"`` (theory).
    persistent : bool or None, default=None
        Keep the chains between steps (persistent contrastive divergence; outside the theory's
        guarantee, whose proof needs fresh chains at every step, Section 7). None: True
        (adaptive), False (theory).
    average : bool, default=True
        Return the average of the iterates (theory: of all ``K``, Theorem 2's output;
        adaptive: of the last half); False returns the last iterate (Corollary 9's).
    %(score_method)s
    max_bytes : int, default=None
        Memory budget of one junction-tree calibration for exact scoring.
    random_state : int, RandomState instance or None, default=None
        Seeds the start states and every Gibbs update. The streams of the chain blocks are
        drawn up front, so the result does not depend on ``n_jobs``.
    n_jobs : int, default=None
        Parallel jobs over blocks of 4096 chains (joblib). With one block, or steps too small
        to pay for the pool (under ``2 * MCMC_MIN_WORK_PER_WORKER`` single-site updates,
        measured by ``benchmarks/parallel_threshold.py``), the chains run serially, whatever
        ``n_jobs`` and backend (a Dask cluster included).
    verbose : int, default=0
        Print one line per step (the gradient estimate, its noise ratio, the time) when
        positive; ``trace_`` keeps them.

    Attributes
    ----------
    graph_ : MRFGraph
    n_states_ : ndarray of shape (n_features,)
    model_ : DiscreteMRF
        The fitted model in the package's parametrisation.
    %(alpha_)s
    theta_ : ndarray of shape (n_params,)
        Alias of ``model_.theta``.
    edges_ : ndarray of shape (n_edges, 2)
    ising_fields_ : ndarray of shape (n_features,)
        Binary models: the fitted ``{-1, +1}`` fields ``h``.
    ising_couplings_ : ndarray of shape (n_edges,)
        Binary models: the fitted ``{-1, +1}`` couplings ``J``.
    schedule_ : MCMCSchedule
        ``(kind, n_iter, n_samples, n_sweeps, fast_mixing)``.
    schedule_auto_ : FastMixingSchedule or None
        The theoretical schedule (theory with an "auto" entry; else None).
    max_coupling_ : float or None
        The constraint's size (None: unconstrained).
    mixing_constant_, mixing_rate_ : float
        ``C`` and ``alpha`` of Eq. 2 for the set (theory schedule only).
    lipschitz_ : float or None
        ``L`` of the steps ``gradient / L`` (None for natural-gradient steps).
    suff_stat_bound_, distance_bound_ : float
        ``R2`` and ``D`` of the theory schedule.
    n_iter_ : int
        Steps run.
    n_averaged_ : int or None
        Iterates in the average (adaptive schedule; None for the theory schedule).
    sweep_autocorrelation_ : float or None
        Lag-one autocorrelation per Gibbs sweep of the chains' energy or magnetisation at the
        pseudo-likelihood start (:func:`sweep_autocorrelation`), which sets the "auto" sweeps
        and chains; None when both were given or with the theory schedule.
    converged_ : bool
        Whether the adaptive stopping rule fired (True for fixed schedules).
    trace_ : dict
        One value per step: ``"gradient_norm"``, ``"noise_ratio"`` and ``"step_norm"``
        (adaptive) and ``"time"`` (seconds since the first step).
    log_partition_ : float or None
        ``log Z`` when scoring is exact, its AIS estimate when it is ``"ais"``, None for
        ``"pseudo"``.
    log_partition_std_ : float
        Standard error of the AIS estimate (only with ``score_method="ais"``).
    score_method_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
    feature_labels_in_ : ndarray of object of shape (`n_features_in_`,)
        Labels of a DataFrame's columns that are not strings and not
        ``0..n_features - 1``; the graph names columns by them.

    See Also
    --------
    ExactMaxLikelihood : exact (junction tree) maximum likelihood.

    Notes
    -----
    **Adaptive schedule.** Every step advances ``n_samples`` persistent chains ``n_sweeps``
    sweeps and moves ``theta -= s / 2`` where ``(F + d I) s = g``: ``g = E_chains[phi] -
    mean_data[phi] + alpha theta`` is the gradient estimate and ``F`` the Fisher information
    (the covariance of the features, the Hessian of ``log Z``) measured every 10 steps on up to
    ``max(1024, 3 n_params)`` chains (at most 4096) and shrunk towards its diagonal by ``rho =
    min(1, n_params / chains)``; ``d = 0.01 + alpha``. ``s`` is found by conjugate gradients and
    capped at 1 per parameter; the step is half of it, because a full one leaves a bias of order
    ``1 / n_samples`` in the average. At a bound of the box the step is the plain gradient
    (two-metric projection), so the constrained optimum stays the fixed point; with
    ``lipschitz`` or the spectral set the steps are ``g / L``. The features are indicators, so
    the Monte-Carlo variance of their chain mean is ``p (1 - p) / M``; the first phase ends when
    the gradient averaged over 20 steps is as small as that noise (``tol``, after at least 50
    steps), and the estimate is the mean of the next ``max(200, k)`` iterates.

    The "auto" chains and sweeps come from :func:`adaptive_defaults`: the Monte-Carlo covariance
    of that mean is ``tau F^-1 / (M K)`` for ``M`` chains, ``K`` averaged steps and an
    autocorrelation time of ``tau`` steps, against maximum likelihood's own ``F^-1 / n``, so
    ``M K = tau n / 0.1^2`` holds the Monte-Carlo error at a tenth of the statistical error for
    every ``n`` (``M`` grows with ``n``, ``K = 200``). The sweeps per step follow the chains'
    autocorrelation per sweep, measured at the start (``sweep_autocorrelation_``): one on
    weakly coupled models, 10-20 on the upsampled digits.

    Measured (``benchmarks/mcmc_defaults.py``, results in ``benchmarks/results/``):

    - 12x12 grids, parameters uniform on [-1, 1], ``n`` = 10^3, 10^4, 10^5 rows, 5 seeds each:
      MCMC_N_FIGURES
    - the binarised digits upsampled to 16x16 (``np.kron`` with 2x2 blocks, 1797 rows):
      DIGITS16_FIGURES
    - OTHER_FIGURES

    **The box for any number of states.** For ``p ~ exp(f)`` and ``q ~ exp(f + d)`` on the
    same states, ``TV(p, q) <= tanh(osc(d) / 4)`` with ``osc(d) = max d - min d``. Changing
    neighbour ``j`` from ``a`` to ``b`` adds ``d_s = W_ij[s, a] - W_ij[s, b]`` to site
    ``i``'s conditional, so the Dobrushin influence is at most ``tanh(sigma_ij / 4)`` with
    ``sigma_ij`` the largest such oscillation ("spread") of the coupling block. Pair entries
    normalised with respect to zero and bounded by ``beta`` give ``sigma_ij <= 4 beta`` (any
    ``K >= 3``; row and column 0 are zero), and a binary ``|theta_ij| = 4 |J_ij| <= 4 beta``
    gives ``sigma_ij <= 4 beta``: the influence is at most ``tanh(beta)`` and Dobrushin's
    condition is ``max_degree * tanh(beta) < 1`` for every ``K``.

    **Theory schedule (Domke 2015).** The paper's model (Section 3.1) is the Ising model over
    ``x in {-1, +1}``, ``p(x) ~ exp(sum J_ij x_i x_j + sum h_i x_i)``. With ``x = 2 s - 1``
    it is the package's model over ``s in {0, 1}`` with ``theta_ij = 4 J_ij`` and
    ``theta_i = 2 h_i - 2 sum_j J_ij``. The fast-mixing sets, ``R2`` (``|x_i|, |x_i x_j| <=
    1``) and the Lipschitz bound are defined on ``(h, J)``, so the optimisation, the
    projection and the ridge all act on ``(h, J)``; ``model_`` receives the converted
    parameters. Fields are not constrained.

    .. math::

        f(\\phi) = A(\\phi) - \\phi\\cdot\\bar t + \\frac{\\lambda}{2}\\|\\phi\\|^2,\\qquad
        \\phi_{k} = \\Pi_\\Theta\\Bigl[\\phi_{k-1} - \\frac1L\\Bigl(\\frac1M\\sum_i t(x_i)
            - \\bar t + \\lambda\\phi_{k-1}\\Bigr)\\Bigr].

    ``C = n_features`` and ``alpha = exp(-(1 - rho) / n_features)`` with ``rho = max_degree
    tanh(beta)`` (box) or ``c`` (spectral). ``D`` bounds ``||phi*||`` (``phi_0 = 0``): ``2
    beta`` per edge (the paper's diameter convention), ``artanh(|mean x_i|) + max_degree beta``
    per field, and with ``alpha > 0`` at most ``sqrt(2 n_features log 2 / alpha)`` overall. For
    the spectral set the couplings contribute ``sqrt(2 n_features) c`` and a field's neighbours
    ``sqrt(max_degree) c``. One Gibbs sweep counts as ``n_features`` single-site transitions:
    under the Dobrushin condition a systematic sweep contracts by at least ``rho <= exp(-(1 -
    rho))`` (Dyer, Goldberg and Jerrum 2009).

    References
    ----------
    J. Domke, "Maximum likelihood learning with arbitrary treewidth via fast-mixing parameter
    sets", NIPS 2015.
    J. Domke and X. Liu, "Projecting Ising model parameters for fast mixing", NIPS 2013.
    T. Tieleman, "Training restricted Boltzmann machines using approximations to the
    likelihood gradient", ICML 2008 (persistent chains).

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf import MCMCMaxLikelihood
    >>> X = np.random.default_rng(0).integers(0, 2, size=(200, 4))
    >>> est = MCMCMaxLikelihood("chain", random_state=0).fit(X)
    >>> est.schedule_.kind, est.converged_
    ('adaptive', True)
    >>> theory = MCMCMaxLikelihood("chain", schedule="theory", alpha=1.0, lipschitz=5.0,
    ...                            random_state=0).fit(X[:50])
    >>> theory.schedule_auto_
    FastMixingSchedule(n_iter=14, n_samples=3005, n_sweeps=34)
    >>> bool(np.all(np.abs(theory.ising_couplings_) <= theory.max_coupling_))
    True
    """

    _parameter_constraints: dict = {
        "graph": BaseDiscreteMRF._parameter_constraints["graph"],
        "n_states": BaseDiscreteMRF._parameter_constraints["n_states"],
        "score_method": BaseDiscreteMRF._parameter_constraints["score_method"],
        "max_bytes": BaseDiscreteMRF._parameter_constraints["max_bytes"],
        "schedule": [StrOptions({"adaptive", "theory"})],
        "max_coupling": [Interval(Real, 0, None, closed="neither"), None],
        "projection": [StrOptions({"box", "spectral"})],
        "alpha": ALPHA_CONSTRAINT,
        "lipschitz": [Interval(Real, 0, None, closed="neither"), None],
        "n_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_samples": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_sweeps": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "eps": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "init": [StrOptions({"uniform", "data"}), None],
        "persistent": ["boolean", None],
        "average": ["boolean"],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    #: Test hook: "mcmc" (chains), "exact" (junction-tree expectations) or "exact-samples"
    #: (``n_samples`` exact junction-tree draws per step; theory schedule).
    _gradient = "mcmc"

    def __init__(
        self,
        graph="chain",
        *,
        n_states="auto",
        schedule="adaptive",
        max_coupling=None,
        projection="box",
        alpha="auto",
        lipschitz=None,
        n_iter="auto",
        n_samples="auto",
        n_sweeps="auto",
        tol=0.5,
        eps=1.0,
        delta=0.1,
        init=None,
        persistent=None,
        average=True,
        score_method="auto",
        max_bytes=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.graph = graph
        self.n_states = n_states
        self.schedule = schedule
        self.max_coupling = max_coupling
        self.projection = projection
        self.alpha = alpha
        self.lipschitz = lipschitz
        self.n_iter = n_iter
        self.n_samples = n_samples
        self.n_sweeps = n_sweeps
        self.tol = tol
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
        """Fit by projected gradient with MCMC gradients (see ``schedule``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states (0/1 for ``schedule="theory"``); never modified.
        y : None
            Ignored.

        Returns
        -------
        self : MCMCMaxLikelihood
            The fitted estimator.

        Raises
        ------
        ValueError
            For non-pairwise graphs, non-binary data with the theory schedule or the spectral
            set, a fast-mixing set the theory schedule cannot use, or a theory schedule
            whose work exceeds :data:`~skmrf.estimators._fast_mixing.MAX_WORK`.
        """
        log = ProgressLog(type(self).__name__, self.verbose)
        Xi = self._validate_fit_data(X)
        theory = self.schedule == "theory"
        if theory or self.projection == "spectral":
            subject = "MCMCMaxLikelihood's theory schedule is" if theory else "The spectral set is"
            self._check_binary_pairwise(Xi, f"{subject} defined")
        else:
            self._check_pairwise()
        self._ridge(Xi.shape[0])
        positions = _pairwise_positions(self.model_.layout)
        self.edges_ = positions.edges
        rng = check_generator(self.random_state)
        self._trace = {"gradient_norm": [], "time": []}
        if theory:
            phi = self._fit_theory(Xi, positions, rng, log)
            self._set_ising(phi, positions)
        else:
            theta = self._fit_adaptive(Xi, positions, rng, log)
            self.model_.theta = theta
            if is_binary_pairwise(self.model_.layout):
                self.ising_fields_, self.ising_couplings_ = binary_to_ising(
                    theta[positions.node_pos], theta[positions.edge_pos], positions.edges, Xi.shape[1]
                )
        if not np.all(np.isfinite(self.model_.theta)):
            warn_not_converged(
                type(self).__name__,
                f"in {self.n_iter_} steps: the parameters diverged (non-finite)",
                "Increase lipschitz (smaller steps) or alpha.",
                stacklevel=3,
            )
        self._resolve_score_method(self.random_state)
        return self

    # -- the constraint set ----------------------------------------------------
    def _constraint(self, n, edges, required):
        """``(bound, FastMixingSet or None, fast_mixing)`` of ``max_coupling`` and ``projection``.

        ``required``: the theory schedule computes K/M/v from the set, so it must be
        fast-mixing (the error names the limit); otherwise a set outside the range only warns.
        """
        max_degree = self.graph_.max_degree
        if self.max_coupling is None and self.schedule == "adaptive":
            return None, None, False
        try:
            geometry = fast_mixing_set(self.projection, self.max_coupling, n, edges, max_degree)
            return geometry.bound, geometry, True
        except ValueError as err:
            if required:
                raise
            warnings.warn(
                f"{err} Used as given: a constraint, not a guarantee; the mixing bound does not hold "
                "(schedule_.fast_mixing is False).",
                MixingBoundWarning,
                stacklevel=4,
            )
        bound = float(self.max_coupling)
        if self.projection == "box":
            project = partial(np.clip, a_min=-bound, a_max=bound)
        else:
            project = partial(project_spectral, edges=edges, n_variables=n, max_norm=bound)
        return bound, FastMixingSet(bound, math.nan, math.nan, project), False

    # -- adaptive schedule -------------------------------------------------------
    def _fit_adaptive(self, Xi, positions, rng, log):
        """Persistent chains, natural-gradient steps, noise-level stopping rule, averaged iterates."""
        model, (_, edge_pos, edges) = self.model_, positions
        n = Xi.shape[1]
        binary = is_binary_pairwise(model.layout)
        bound, geometry, fast = self._constraint(n, edges, required=False)
        self.max_coupling_ = bound
        offsets = model.layout.block_offsets
        pair = np.concatenate(
            [np.arange(offsets[k], offsets[k + 1]) for k, c in enumerate(model.cliques) if len(c) == 2] + [[]]
        ).astype(np.int64)  # every pair entry (K - 1)^2 per edge
        if geometry is None:
            project = np.asarray
        elif self.projection == "box":
            project = partial(_pair_box, max_entry=4 * bound if binary else bound, pair=pair)
        else:
            project = partial(_pair_spectral, pair=edge_pos, edges=edges, n_variables=n, max_norm=bound)
        self.schedule_auto_ = self.mixing_constant_ = self.mixing_rate_ = None
        self.suff_stat_bound_ = self.distance_bound_ = None
        if self.alpha_ == 0:
            warn_if_unbounded(self, Xi)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NoFiniteEstimateWarning)  # said above, by this estimator
            # One job: the parallel PL sums its chunks in an n_jobs-dependent order (last bits).
            start = PseudoLikelihoodEstimator(self.graph_, n_states=self.n_states_, alpha=self.alpha_).fit(Xi)
        theta0 = project(start.theta_)
        n_iter, n_samples, n_sweeps, n_average = self._adaptive_values(Xi, theta0, rng)
        self.schedule_ = MCMCSchedule("adaptive", n_iter, n_samples, n_sweeps, fast)
        mean_stats = model.sufficient_statistics(Xi) / Xi.shape[0]
        n_workers = workers_for(self.n_jobs, n_samples * n_sweeps * n, MCMC_MIN_WORK_PER_WORKER)
        with parallel_or_serial(n_workers, verbose=max(0, self.verbose - 1)) as parallel:
            if self._gradient == "exact":
                features = _ExactFeatures(model)
            else:
                features = _PersistentChains(
                    model,
                    colour_classes(self.graph_),
                    Xi,
                    n_samples,
                    n_sweeps,
                    "data" if self.init is None else self.init,
                    True if self.persistent is None else self.persistent,
                    rng,
                    parallel,
                )
                features.advance(theta0, ADAPTIVE_BURN_IN, statistic=False)
            L, direction = self.lipschitz, None
            natural = L is None and self._gradient == "mcmc" and (geometry is None or self.projection == "box")
            if natural:
                box = None if geometry is None else (pair, 4 * bound if binary else bound)
                direction = partial(_natural_direction, chains=features, box=box, damping=NATURAL_DAMPING + self.alpha_)
            elif L is None and self._gradient == "mcmc":
                # Floored at a fair coin's variance: a few chains can see next to no variance.
                L = max(_largest_covariance_eigenvalue(_indicator_matrix(model.layout, features.states())), 0.25)
                L += self.alpha_
            elif L is None:
                L = 1.0 + self.alpha_
            stopping = isinstance(self.n_iter, str) and self._gradient == "mcmc"
            result = stochastic_gradient(
                features,
                mean_stats,
                project,
                theta0,
                lipschitz=L,
                direction=direction,
                ridge=self.alpha_,
                n_iter=n_iter,
                min_iter=ADAPTIVE_MIN_ITER if stopping else 0,
                tol=self.tol if stopping else None,
                window=ADAPTIVE_WINDOW,
                n_average=n_average,
                callback=partial(_report, log) if self.verbose else None,
            )
        self.lipschitz_ = None if L is None else float(L)
        self.n_iter_, self.converged_ = result.n_iter, result.converged or not stopping
        self.n_averaged_ = result.n_averaged
        self.trace_ = result.trace
        if not self.converged_:
            ratio = result.trace["noise_ratio"][max(ADAPTIVE_MIN_ITER, ADAPTIVE_WINDOW) - 1 : n_iter // 2]
            warn_not_converged(
                type(self).__name__,
                f"in {n_iter} steps: in its first {n_iter // 2} the mean gradient of the last {ADAPTIVE_WINDOW} "
                f"steps stayed at least {ratio.min(initial=np.inf):.3g} times its Monte-Carlo variance (the rule "
                f"needs below {1 + self.tol:g}); the estimate averages the last half of the steps",
                "Raise n_iter, or n_samples for less noise.",
                stacklevel=4,
            )
        return result.x_mean if self.average else result.x_last

    def _adaptive_values(self, Xi, theta0, rng):
        """``(n_iter, n_samples, n_sweeps, n_average)``: the given values, the others from :func:`adaptive_defaults`.

        The sweeps' autocorrelation is measured at ``theta0`` (``sweep_autocorrelation_``)
        unless both ``n_samples`` and ``n_sweeps`` are given.
        """
        given_sweeps = None if isinstance(self.n_sweeps, str) else int(self.n_sweeps)
        rho = None
        if self._gradient == "mcmc" and (isinstance(self.n_samples, str) or given_sweeps is None):
            self.model_.theta = theta0
            rho = sweep_autocorrelation(self.model_, Xi, rng)
        self.sweep_autocorrelation_ = rho
        auto = adaptive_defaults(Xi.shape[0], Xi.shape[1], 0.0 if rho is None else rho, n_sweeps=given_sweeps)
        # The rule must fire within the first half, and the averaging fit in the second.
        n_iter = max(ADAPTIVE_MAX_ITER, 2 * auto.n_average) if isinstance(self.n_iter, str) else int(self.n_iter)
        n_samples = auto.n_chains if isinstance(self.n_samples, str) else int(self.n_samples)
        return n_iter, n_samples, auto.n_sweeps, auto.n_average

    # -- theory schedule ---------------------------------------------------------
    def _fit_theory(self, Xi, positions, rng, log):
        """Algorithm 1 of Domke (2015) in the ``{-1, +1}`` coordinates; returns ``phi = (h, J)``."""
        n, edges = Xi.shape[1], positions.edges
        given = (self.n_iter, self.n_samples, self.n_sweeps)
        needs_theory = any(isinstance(g, str) for g in given)
        bound, geometry, fast = self._constraint(n, edges, required=needs_theory)
        mean_stats = _mean_statistics(Xi.astype(np.float64), edges)
        auto, sched, L, R2, D = self._theory_schedule(mean_stats[:n], len(edges), geometry)
        self.schedule_auto_, self.schedule_ = auto, MCMCSchedule("theory", *sched, fast)
        self.max_coupling_, self.mixing_constant_, self.mixing_rate_ = geometry[:3]
        self.lipschitz_, self.suff_stat_bound_, self.distance_bound_ = L, R2, D
        n_workers = workers_for(self.n_jobs, sched.n_samples * sched.n_sweeps * n, MCMC_MIN_WORK_PER_WORKER)
        trace, start = self._trace, time.perf_counter()

        def callback(k, x, grad):
            trace["gradient_norm"].append(float(np.linalg.norm(grad)))
            trace["time"].append(time.perf_counter() - start)
            if self.verbose:
                _report(log, k, x, grad)

        with parallel_or_serial(n_workers, verbose=max(0, self.verbose - 1)) as parallel:
            last, mean = projected_gradient(
                self._expectation(Xi, positions, sched, rng, parallel),
                mean_stats,
                partial(_project_couplings, n_variables=n, project=geometry.project),
                lipschitz=L,
                ridge=self.alpha_,
                n_iter=sched.n_iter,
                callback=callback,
            )
        self.n_iter_, self.converged_ = sched.n_iter, True
        self.n_averaged_ = self.sweep_autocorrelation_ = None
        self.trace_ = {key: np.array(value) for key, value in trace.items()}
        phi = mean if self.average else last
        if self.average and self.projection == "spectral":
            # The set is convex, so the average is inside it; project away round-off.
            phi[n:] = geometry.project(phi[n:])
        return phi

    def _theory_schedule(self, mean_x, n_edges, geometry):
        """``(schedule_auto, schedule, L, R2, D)``: the given or theoretical K/M/v and its inputs."""
        n = len(mean_x)
        R2 = math.sqrt(n + n_edges)
        max_degree = self.graph_.max_degree

        def theory(eps, alpha, lipschitz):
            L = float(lipschitz) if lipschitz is not None else 4 * R2**2 + alpha
            D = distance_bound(self.projection, geometry.bound, mean_x, n_edges, max_degree, alpha)
            if not (np.isfinite(D) and np.isfinite(geometry.mixing_constant)):
                return L, D, None  # no bound on the distance, or no mixing bound: no schedule
            schedule = fast_mixing_schedule(
                eps,
                lipschitz=L,
                suff_stat_bound=R2,
                mixing_constant=geometry.mixing_constant,
                mixing_rate=geometry.mixing_rate,
                distance_bound=D,
                ridge=alpha,
                delta=self.delta,
                n_variables=n,
            )
            return L, D, schedule

        L, D, auto = theory(self.eps, self.alpha_, self.lipschitz)
        given = (self.n_iter, self.n_samples, self.n_sweeps)
        if not any(isinstance(g, str) for g in given):
            sched = FastMixingSchedule(*map(int, given))
            _check_work(sched, n)
            return None, sched, L, R2, D
        if auto is None:
            j = int(np.argmax(np.abs(mean_x)))
            raise ValueError(
                f"The schedule needs a bound on ||theta_0 - theta*||, but column {j} is constant, so "
                "with alpha=0 its field has no finite optimum. Set alpha > 0, drop the column, or give "
                "n_iter, n_samples and n_sweeps explicitly."
            )
        sched = FastMixingSchedule(*(a if isinstance(g, str) else int(g) for g, a in zip(given, auto)))
        if _work(sched, n) > MAX_WORK:
            changes = [(f"eps={self.eps * f:g}", self.eps * f, self.alpha_, self.lipschitz) for f in (10, 100)]
            changes += [(f"alpha={self.alpha_ * f:g}", self.eps, self.alpha_ * f, self.lipschitz) for f in (10, 100)]
            changes += (
                [("alpha=0", self.eps, 0.0, self.lipschitz)]
                if self.alpha_ > 0
                else [(f"alpha={a:g}", self.eps, a, self.lipschitz) for a in (0.1, 1.0)]
            )
            changes += [(f"lipschitz={L / f:.3g}", self.eps, self.alpha_, L / f) for f in (10, 100)]
            alternatives = []
            for change, eps, alpha, lipschitz in changes:
                other = theory(eps, alpha, lipschitz)[2]
                if other is not None:
                    alternatives.append(
                        (
                            change,
                            FastMixingSchedule(*(a if isinstance(g, str) else int(g) for g, a in zip(given, other))),
                        )
                    )
            _check_work(sched, n, alternatives)
        return auto, sched, L, R2, D

    def _expectation(self, Xi, positions, sched, rng, parallel):
        """The estimate of ``E_phi[t(x)]`` each step uses: Gibbs chains, or a test reference."""
        if self._gradient == "exact":
            return _ExactExpectation(self.model_, *positions)
        if self._gradient == "exact-samples":
            return _ExactSampleExpectation(self.model_, *positions, sched.n_samples, rng)
        colours = colour_classes(self.graph_)
        init = "uniform" if self.init is None else self.init
        return _MCMCExpectation(
            Xi, positions.edges, colours, sched.n_samples, sched.n_sweeps, init, bool(self.persistent), rng, parallel
        )

    def _set_ising(self, phi, positions):
        """Store ``phi = (h, J)`` as ``ising_fields_``, ``ising_couplings_`` and, in ``{0, 1}``, ``model_``."""
        n = self.model_.n_variables
        self.ising_fields_, self.ising_couplings_ = phi[:n].copy(), phi[n:].copy()
        self.model_.theta = _binary_theta(phi, self.model_, *positions)
