"""Gibbs chains for MCMC maximum likelihood: the one chain runner both schedules use.

:class:`Chains` advances blocks of chains of a pairwise model under a given parameter vector
(in the package's parametrisation) and returns their feature sums. The adaptive schedule reads
them as ``E_theta[phi]`` directly; Domke's Algorithm 1 converts them to the Ising statistics of
its ``{-1, +1}`` coordinates (:class:`IsingExpectation`). The natural-gradient step of the
adaptive schedule (:meth:`Chains.natural_step`) measures the Fisher information on the chains.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve

from ..._solvers.cg import conjugate_gradient
from ..._utils._budgets import CHAIN_BLOCK, MCMC_MIN_WORK_PER_WORKER
from ...inference._gibbs import BinaryGibbsKernel, CategoricalGibbsKernel, is_binary_pairwise, run_chains
from ...model._ising import ising_statistics, ising_to_binary

__all__ = [
    "CHAIN_BLOCK",
    "MCMC_MIN_WORK_PER_WORKER",
    "Chains",
    "IsingExpectation",
    "Positions",
    "binary_theta",
    "indicator_matrix",
    "largest_covariance_eigenvalue",
    "pairwise_positions",
]


#: The natural-gradient step: conjugate-gradient iterations and tolerance per step.
NATURAL_CG_ITER = 50
NATURAL_CG_RTOL = 1e-2
#: The natural step's largest change of one parameter (a trust region).
NATURAL_MAX_STEP = 1.0
#: Steps between rebuilds of the natural step's covariance from the chains (the most costly part).
NATURAL_REFRESH = 10
#: Up to this many free parameters the natural step factorises the dense Fisher matrix at each
#: rebuild and solves exactly; above it, conjugate gradients on the sparse features. Measured with
#: 200 steps: 1.5x faster on an 8 x 8 grid with 3 states (576), even on an 18 x 18 binary grid (936),
#: grid12 (408) 2.4 s -> 1.7 s with the float32 pair sums.
NATURAL_DENSE_MAX = 1024
#: Chains the natural step's covariance is measured on (the first ones): three per parameter,
#: at least NATURAL_FISHER_MIN_CHAINS and at most NATURAL_FISHER_CHAINS. Any fixed preconditioner
#: keeps the fixed point, and the cap keeps the step's cost independent of the number of chains;
#: but the preconditioner sets how fast the averaged iterate settles. On a 12x12 grid with 3
#: states (1344 parameters) and 10^4 rows: 1.2 % from exact ML with 4096 of 7189 chains or with
#: all of them, 2.5 % with 1024 (then the step is diagonal: ``rho = 1``); binary (408
#: parameters), 1000 of 4000 chains did as well as all 4000.
NATURAL_FISHER_CHAINS = 4096
NATURAL_FISHER_MIN_CHAINS = 1024


class Positions(NamedTuple):
    """Where a binary pairwise model keeps its unary and pair parameters, and its edges."""

    node_pos: np.ndarray
    edge_pos: np.ndarray
    edges: np.ndarray


def pairwise_positions(layout):
    """The :class:`Positions` of a pairwise :class:`~skmrf._parametrisation.CliqueLayout`."""
    sizes = np.array([len(c) for c in layout.cliques])
    edge_blocks = np.flatnonzero(sizes == 2)
    edges = np.array([layout.cliques[k] for k in edge_blocks], dtype=np.int64).reshape(-1, 2)
    return Positions(layout.block_offsets[np.flatnonzero(sizes == 1)], layout.block_offsets[edge_blocks], edges)


def binary_theta(phi, n_params, positions):
    """The package's ``{0, 1}`` parameter vector for Ising ``phi = (h, J)`` of a binary pairwise model."""
    node_pos, edge_pos, edges = positions
    n = len(node_pos)
    theta = np.zeros(n_params)
    theta[node_pos], theta[edge_pos] = ising_to_binary(phi[:n], phi[n:], edges, n)
    return theta


def _chain_sums(S, order, edge_rows, chunk=1 << 22):
    """Sums over the chains of ``s_i`` and of ``s_i s_j`` per edge, from internal states ``S``.

    ``S`` has one row per variable in the kernel's internal order (``order`` maps variables
    to rows) and one column per chain; ``edge_rows`` holds the rows of the edges' ends. The
    sums are exact counts. With numpy >= 2 the states are packed 64 chains to a word and the
    pairs counted by ``popcount(a & b)``: a 12 x 12 grid's 4096 chains in 0.4 ms instead of 1.3.
    """
    if not hasattr(np, "bitwise_count"):  # numpy < 2
        return _chain_sums_float(S, order, edge_rows, chunk)
    pi, pj = edge_rows
    bits = np.packbits(S != 0, axis=1)  # the chains' last byte padded with zero bits
    words = np.pad(bits, ((0, 0), (0, -bits.shape[1] % 8))).view(np.uint64)
    sum_s = np.bitwise_count(words).sum(axis=1, dtype=np.int64)[order].astype(np.float64)
    sum_ss = np.empty(len(pi))
    step = max(1, chunk // max(words.shape[1], 1))
    for a in range(0, len(pi), step):
        b = slice(a, a + step)
        sum_ss[b] = np.bitwise_count(words[pi[b]] & words[pj[b]]).sum(axis=1, dtype=np.int64)
    return sum_s, sum_ss


def _chain_sums_float(S, order, edge_rows, chunk):
    """:func:`_chain_sums` in float32 arithmetic (numpy < 2, without ``bitwise_count``)."""
    pi, pj = edge_rows
    sum_s = S.sum(axis=1, dtype=np.float64)[order]
    sum_ss = np.empty(len(pi))
    step = max(1, chunk // max(S.shape[1], 1))
    # 0/1 products: their sums are integers, exact in S's float32 while below 2^24 chains.
    dtype = np.result_type(S.dtype, np.float32) if S.shape[1] < 1 << 24 else np.float64
    for a in range(0, len(pi), step):
        b = slice(a, a + step)
        sum_ss[b] = np.einsum("em,em->e", S[pi[b]], S[pj[b]], dtype=dtype)
    return sum_s, sum_ss


def _binary_feature_sums(S, order, edge_rows, positions):
    """Feature sums of binary chains ``S`` (internal layout) in ``theta`` order."""
    node_pos, edge_pos = positions
    out = np.empty(len(node_pos) + len(edge_pos))
    out[node_pos], out[edge_pos] = _chain_sums(S, order, edge_rows)
    return out


def _feature_sums(S, layout, kernel):
    """Feature sums of chains ``S`` (``kernel``'s internal layout) in ``theta`` order."""
    return layout.table_counts(kernel.to_external(S))[layout.theta_pos].astype(np.float64)


def gibbs_kernel(layout, theta, colours, like=None):
    """The Gibbs kernel of a pairwise model at ``theta`` (binary or categorical fast path).

    ``like``: a kernel built here earlier for the same layout and colours; a binary one is
    reparametrised (its pattern reused: on a 12 x 12 grid 0.1 ms instead of 0.4 ms, a tenth of
    an MCMC step).
    """
    if isinstance(like, BinaryGibbsKernel) and like.layout_positions is not None:
        return like.reparametrised(theta)
    if is_binary_pairwise(layout):
        return BinaryGibbsKernel.from_layout(layout, theta, colours)
    return CategoricalGibbsKernel.from_layout(layout, theta, colours)


def indicator_matrix(layout, S):
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


def _feature_mean(T):
    """The column means of the 0/1 features ``T``, sparse or a dense float32 array (the entries
    times ``1 / m`` summed down the rows, as scipy's sparse mean does: the same bits for both)."""
    if isinstance(T, np.ndarray):
        return np.multiply(T, 1.0 / T.shape[0], dtype=np.float64).sum(axis=0)
    return np.asarray(T.mean(axis=0)).ravel()


def _feature_covariance(T, mu):
    """The covariance of the rows of the 0/1 features ``T`` (dense; ``mu`` their mean). ``T^T T``
    holds counts below ``2^24`` (``m <= NATURAL_FISHER_CHAINS`` rows), exact in float32."""
    m = T.shape[0]
    D = np.asarray(T, dtype=np.float32) if isinstance(T, np.ndarray) else T.toarray().astype(np.float32)
    return (D.T @ D).astype(np.float64) / m - np.outer(mu, mu)


def _fisher_solver(T, damping, covariance=None):
    """``g -> (F + damping I)^{-1} g`` for the shrunk Fisher matrix ``F`` of the 0/1 features ``T``
    (:meth:`Chains.natural_step`): a diagonal, a dense Cholesky factor, or conjugate gradients.
    ``covariance``: the covariance of ``T``'s columns when known (:func:`_feature_covariance`)."""
    m, mu = T.shape[0], _feature_mean(T)
    rho = min(1.0, T.shape[1] / m)
    diagonal = rho * np.maximum(mu * (1 - mu), 1.0 / m) + damping
    if rho == 1.0:
        return lambda g: g / diagonal
    if T.shape[1] <= NATURAL_DENSE_MAX:
        F = (1 - rho) * (_feature_covariance(T, mu) if covariance is None else covariance)
        F[np.diag_indices_from(F)] += diagonal
        factor = cho_factor(F, lower=True, check_finite=False)
        return lambda g: cho_solve(factor, g, check_finite=False)
    # Loose by design: any positive-definite approximation of the Newton step keeps the fixed point.
    return lambda g: conjugate_gradient(
        lambda v: (1 - rho) * (T.T @ (T @ v) / m - mu * (mu @ v)) + diagonal * v,
        g,
        rtol=NATURAL_CG_RTOL,
        max_iter=NATURAL_CG_ITER,
    )[0]


def largest_covariance_eigenvalue(T, n_iter=50, seed=0):
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


class Chains:
    """Blocks of Gibbs chains of a pairwise model, advanced under the ``theta`` of each call.

    Parameters
    ----------
    layout : CliqueLayout
        The model's parameter layout (pairwise; any numbers of states).
    colours : list of ndarray
        Colour classes of the graph (:func:`~skmrf.inference.colour_classes`).
    rows : Rows or None
        The data, for chains started at data rows (``init="data"``; rows drawn by weight).
    n_chains : int
        Chains ``M``; run in blocks of ``block`` chains, each with its own random stream
        spawned up front, so the result does not depend on ``n_jobs``.
    n_sweeps : int
        Sweeps per call (:meth:`__call__`).
    init : {"data", "uniform"}
        Start states: data rows (contrastive divergence) or uniformly random states.
    persistent : bool
        Keep the chains between calls (persistent contrastive divergence); otherwise restart
        them from ``init`` at every call.
    rng : numpy.random.Generator
    parallel : joblib.Parallel or None
        Runs the blocks (None: here, in order).
    block : int, default=CHAIN_BLOCK
        Chains per block.
    """

    def __init__(self, layout, colours, rows, n_chains, n_sweeps, init, persistent, rng, parallel, block=CHAIN_BLOCK):
        self.layout, self.colours = layout, colours
        self.n_states = layout.n_states
        self.n_chains, self.n_sweeps = n_chains, n_sweeps
        self.init, self.persistent, self.rng, self.parallel = init, persistent, rng, parallel
        self.X = None if rows is None or init != "data" else rows
        self.binary = is_binary_pairwise(layout)
        if self.binary:
            self.positions = pairwise_positions(layout)
        self.pool, self.block, self.kernel = None, block, None
        self.features, self.calls = None, 0  # the natural step's feature matrix, and its age
        self.solver = None  # solves with its Fisher matrix, keyed by the free features and damping
        self.covariance = None  # the dense covariance of all the features, once per refresh

    def _start(self, kernel, m, rng):
        if self.init == "data":
            return kernel.to_internal(self.X.take(self.X.draw(rng, m)))
        if self.binary:  # uniform 0/1 states, directly in the binary kernel's float32 layout
            return (rng.random((len(self.n_states), m), dtype=np.float32) < 0.5).astype(np.float32)
        return kernel.to_internal(np.floor(rng.random((m, len(self.n_states))) * self.n_states).astype(np.int64))

    def _statistic(self, kernel):
        """Per-block statistic (picklable, for process workers): the chains' feature sums."""
        if self.binary:
            node_pos, edge_pos, edges = self.positions
            edge_rows = (kernel.inv[edges[:, 0]], kernel.inv[edges[:, 1]])
            return partial(_binary_feature_sums, order=kernel.inv, edge_rows=edge_rows, positions=(node_pos, edge_pos))
        return partial(_feature_sums, layout=self.layout, kernel=kernel)

    def advance(self, theta, n_sweeps, statistic=True):
        """Advance the chains ``n_sweeps`` sweeps under ``theta``; their feature sums, or None."""
        kernel = gibbs_kernel(self.layout, theta, self.colours, like=self.kernel)
        sizes = [min(self.block, self.n_chains - a) for a in range(0, self.n_chains, self.block)]
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
            statistic=self._statistic(kernel) if statistic else None,
            keep_states=True,
        )
        self.pool = [S for S, _ in out]
        self.kernel = kernel
        return sum(f for _, f in out) if statistic else None

    def states(self, limit=None):
        """The current states of the chains (the first ``limit``), ``(n_chains, n_variables)`` integers."""
        blocks = self.pool if limit is None else self.pool[: -(-limit // self.block)]
        return np.concatenate([self.kernel.to_external(S) for S in blocks])[:limit]

    def natural_step(self, gradient, free, damping):
        """Solve ``(F + damping I) s = g`` on the ``free`` features: a natural-gradient step.

        ``F`` is the Fisher information (the Hessian of ``log Z``, the covariance of the
        features) estimated on the first ``min(NATURAL_FISHER_CHAINS, max(NATURAL_FISHER_MIN_CHAINS,
        3 n_params))`` chains (``M`` below) and shrunk towards its diagonal: ``F = (1 - rho) C
        + rho D`` with ``C`` the chains' covariance, ``D`` its diagonal ``p (1 - p)`` (floored
        at ``1 / M``) and ``rho = min(1, n_free / M)``, since ``M`` chains give ``C`` a rank
        below ``M``; with ``rho = 1`` the step is diagonal. It is solved exactly by a dense
        Cholesky factor up to ``NATURAL_DENSE_MAX`` free features, loosely by conjugate
        gradients above. Features outside ``free`` (active bounds) take the plain gradient step, as
        in Bertsekas' two-metric projection, so the projected iteration keeps the constrained
        optimum as its fixed point.
        """
        if self.calls % NATURAL_REFRESH == 0 or self.features is None:
            # Any fixed positive-definite preconditioner keeps the fixed point: refreshed now and then.
            limit = min(NATURAL_FISHER_CHAINS, max(NATURAL_FISHER_MIN_CHAINS, 3 * self.layout.n_params))
            self.features, self.solver = self._fisher_features(limit), None
            self.covariance = None
        self.calls += 1
        key = (free.tobytes(), damping)
        if self.solver is None or self.solver[0] != key:
            self.solver = (key, self._fisher_solver(free, damping))
        s = self.solver[1](gradient[free])
        out = gradient.copy()
        out[free] = s
        # A trust region: directions the chains barely see get steps of up to 1 / damping
        # times the gradient; no parameter moves more than NATURAL_MAX_STEP at once.
        largest = np.abs(out).max(initial=0.0)
        return out * (NATURAL_MAX_STEP / largest) if largest > NATURAL_MAX_STEP else out

    def _fisher_features(self, limit):
        """The features of the first ``limit`` chains: sparse indicators, or for a binary model
        solved densely (up to ``NATURAL_DENSE_MAX`` parameters) a float32 array read straight
        off the chains' internal states (on a 12 x 12 grid 1 ms instead of 11 ms a refresh)."""
        if not self.binary or self.layout.n_params > NATURAL_DENSE_MAX:
            return indicator_matrix(self.layout, self.states(limit))
        blocks = self.pool[: -(-limit // self.block)]
        S = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)
        S = S[:, :limit]
        node_pos, edge_pos, edges = self.positions
        inv = self.kernel.inv
        T = np.empty((S.shape[1], self.layout.n_params), dtype=np.float32)
        T[:, node_pos] = S[inv].T
        T[:, edge_pos] = (S[inv[edges[:, 0]]] * S[inv[edges[:, 1]]]).T
        return T

    def _fisher_solver(self, free, damping):
        """:func:`_fisher_solver` on the ``free`` features. A box constraint changes ``free`` from
        step to step: the covariance of all the features is formed once per refresh, and each new
        set of free features only takes its submatrix and a factorisation."""
        T = self.features if free.all() else self.features[:, free]
        if self.layout.n_params > NATURAL_DENSE_MAX:
            return _fisher_solver(T, damping)
        if self.covariance is None:
            self.covariance = _feature_covariance(self.features, _feature_mean(self.features))
        return _fisher_solver(T, damping, self.covariance[np.ix_(free, free)])

    def __call__(self, theta):
        """``(mean features, variance of that mean)`` after ``n_sweeps`` sweeps under ``theta``.

        The features are indicators, so the Monte-Carlo variance of their chain mean is
        ``p (1 - p) / M``, floored at ``1 / M^2``.
        """
        m = self.n_chains
        mean = self.advance(theta, self.n_sweeps) / m
        return mean, np.maximum(mean * (1 - mean), 1.0 / m) / m


class IsingExpectation:
    """``E_phi[t(x)]`` in Domke's ``{-1, +1}`` coordinates from :class:`Chains` of a binary model.

    Calling it with ``phi = (h, J)`` advances the chains their ``n_sweeps`` sweeps under the
    equivalent package parameters and returns the Ising statistics ``(E x_i, E x_i x_j)``
    of their states.
    """

    def __init__(self, chains):
        self.chains = chains
        self.n_params = chains.layout.n_params
        self.positions = chains.positions

    def __call__(self, phi):
        node_pos, edge_pos, edges = self.positions
        sums = self.chains.advance(binary_theta(phi, self.n_params, self.positions), self.chains.n_sweeps)
        m = self.chains.n_chains
        return ising_statistics(sums[node_pos] / m, sums[edge_pos] / m, edges)
