"""LAP: linear and parallel learning of discrete MRFs from 1-neighbourhood marginals.

For every maximal clique ``q`` an *auxiliary MRF* over its 1-neighbourhood
``A_q`` is fitted by maximum likelihood from the counts of the joint states of
``X[:, A_q]`` alone, and ``theta_q`` is read off it (LAP paper, Algorithm 1;
valid because both models are normalised with respect to zero, Proposition 3).

The auxiliary problems are solved in batches: problems whose auxiliary model
has the same structure after relabelling ``A_q`` in sorted order (every
interior edge of a grid, say) share one enumerated feature matrix and are fitted
together by a vectorised damped Newton method (:func:`fit_auxiliary_batch`);
chunks of such batches run through ``joblib.Parallel``.
"""

from __future__ import annotations

import itertools
import time
import warnings
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..data import c_order_strides, count_joint_states, transposed_states
from ..graphs import MRFGraph
from ..inference.enumerate import Enumerator
from ..utils._sklearn_compat import Interval, Parallel, StrOptions, _fit_context, delayed
from ..utils._threads import single_blas_thread
from ._base import GRAPH_DOC, N_STATES_DOC, SCORE_METHOD_DOC, BaseDiscreteMRF
from .exact import THETA_BOUND

__all__ = ["LAPEstimator", "LAPSubproblem", "auxiliary_factors", "fit_auxiliary_batch", "NeighbourhoodTooLargeError"]

#: Default limit on the joint states of one 1-neighbourhood (enumerated exactly).
MAX_NEIGHBOURHOOD_STATES = 1 << 16
# Floats of the largest temporary (problems x configurations x parameters) of one batch.
_BATCH_FLOATS = 1 << 23
# Added to the Newton system only (not the objective) so that it is never singular.
_JITTER = 1e-10


class NeighbourhoodTooLargeError(ValueError):
    """A 1-neighbourhood has too many joint states for an auxiliary problem."""


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


# ---------------------------------------------------------------------------
# Structure of the auxiliary MRFs
# ---------------------------------------------------------------------------
def _outside_boundaries(graph, A):
    """Boundaries in ``A`` of the connected components of ``S \\ A`` (Proposition 9).

    Two variables of ``A`` are path-connected through ``S \\ A`` iff they
    border a common component, and marginalising a component leaves one
    factor over its boundary. Costs ``O(n_variables)``.
    """
    inside = set(A)
    seen = set()
    out = []
    for a in A:
        for start in graph.neighbours[a]:
            if start in inside or start in seen:
                continue
            stack, boundary = [start], set()
            seen.add(start)
            while stack:
                v = stack.pop()
                for u in graph.neighbours[v]:
                    if u in inside:
                        boundary.add(u)
                    elif u not in seen:
                        seen.add(u)
                        stack.append(u)
            out.append(tuple(sorted(boundary)))
    return out


def auxiliary_factors(graph, clique, strategy, neighbourhood=None, factors_of=None):
    """Factors of the auxiliary MRF of ``clique`` over its 1-neighbourhood.

    Parameters
    ----------
    graph : MRFGraph
    clique : tuple of int
        The clique ``q``.
    strategy : {"exact", "dense", "pairwise"}
        ``"exact"``: the structure of the true marginal (exact-inference
        paper, Proposition 9): the original factors inside ``A_q`` plus, for
        each connected component of ``S \\ A_q``, one fully parametrised factor
        over the variables of ``A_q`` it borders (the pairs of ``A_q``
        path-connected through ``S \\ A_q`` and every higher-order term
        marginalising that component creates). ``"dense"``: the original
        factors inside ``A_q`` plus one fully parametrised factor over
        ``A_q \\ q``. ``"pairwise"``: the original factors inside ``A_q`` plus
        every pair of ``A_q \\ q`` (LAP paper, Section 3.1).
    neighbourhood : tuple of int, optional
        ``A_q`` if already known.
    factors_of : list of list of tuple, optional
        The factors containing each variable (speeds up many calls).

    Returns
    -------
    A : tuple of int
        The 1-neighbourhood, sorted.
    factors : list of tuple of int
        Maximal factors of the auxiliary MRF (global variable indices).
    """
    A = graph.one_neighbourhood(clique) if neighbourhood is None else neighbourhood
    if strategy not in ("exact", "dense", "pairwise"):
        raise ValueError(f"strategy must be 'exact', 'dense' or 'pairwise'; got {strategy!r}.")
    inside = _factors_inside(A, graph.factors if factors_of is None else None, factors_of)
    if strategy == "exact":
        extra = [b for b in _outside_boundaries(graph, A) if b]
    else:
        extra = _extra_factors(set(A) - set(clique), strategy)
    return A, _maximal_small(inside + extra + [(v,) for v in A])


def _factors_inside(A, factors=None, factors_of=None):
    """The factors of the graph whose variables all lie in ``A`` (from ``factors_of`` when given)."""
    aset = set(A)
    cand = factors if factors_of is None else {f for v in A for f in factors_of[v]}
    return [f for f in cand if aset.issuperset(f)]


def _extra_factors(rest, strategy):
    """The factors ``"pairwise"`` or ``"dense"`` add over ``rest = A_q \\ q``."""
    rest = sorted(rest)
    if strategy == "pairwise":
        return list(itertools.combinations(rest, 2))
    return [tuple(rest)] if rest else []


def _maximal_small(factors):
    """Distinct factors not contained in another, sorted by size then lexicographically."""
    uniq = {tuple(sorted(f)) for f in factors}
    big = sorted((frozenset(f) for f in uniq if len(f) > 2), key=len, reverse=True)
    kept = [f for f in uniq if len(f) > 1 and not any(b > frozenset(f) for b in big)]
    covered = set().union(*kept) if kept else set()
    kept += [f for f in uniq if len(f) == 1 and f[0] not in covered]
    return sorted(kept, key=lambda c: (len(c), c))


class _GroupSpec:
    """Shared enumeration of one auxiliary structure (local variables 0..m-1).

    Builds the feature matrix ``F3`` of shape ``(n_contexts, n_q_states,
    n_free)``. Without profiling there is one context and ``F3[0]`` is the
    enumerator's feature matrix; with profiling (a factor of the auxiliary
    model covers ``A_q \\ q``), contexts are the joint states of ``A_q \\ q``,
    the free parameters are the blocks meeting ``q``, and the fit is the
    conditional likelihood of ``x_q`` given ``x_{A_q \\ q}``.
    """

    def __init__(self, local_factors, local_states, local_q, profiled):
        m = len(local_states)
        qset = set(local_q)
        if profiled:
            # Blocks not meeting q are absorbed into the free marginal of
            # A_q \ q: enumerate only the factors meeting q (all of A_q's states).
            local_factors = [f for f in local_factors if qset & set(f)]
            covered = {v for f in local_factors for v in f}
            local_factors += [(j,) for j in range(m) if j not in covered]
        g = MRFGraph(m, tuple(local_factors))
        self.cliques = g.cliques
        self.n_states = np.asarray(local_states, dtype=np.int64)
        enum = Enumerator(self.cliques, self.n_states)
        lay = enum.layout
        self.layout = lay
        n_conf = enum.states.shape[0]
        self.n_configs = n_conf
        self.profiled = profiled
        if profiled:
            meet = [b for b, c in enumerate(self.cliques) if qset & set(c)]
            cols = np.concatenate([np.arange(lay.block_offsets[b], lay.block_offsets[b + 1]) for b in meet])
            rpos = [j for j in range(m) if j not in qset]
            qpos = list(local_q)
            ctx = np.ravel_multi_index(enum.states[:, rpos].T, self.n_states[rpos])
            qc = np.ravel_multi_index(enum.states[:, qpos].T, self.n_states[qpos])
            n_q = int(np.prod(self.n_states[qpos]))
            self.perm = np.argsort(ctx * n_q + qc, kind="stable")
            self.F3 = np.ascontiguousarray(enum.features[self.perm][:, cols].reshape(-1, n_q, len(cols)))
            self.free_blocks = meet
        else:
            cols = np.arange(lay.n_params)
            self.perm = None
            self.F3 = enum.features[None]
            self.free_blocks = list(range(len(self.cliques)))
        # Position of each free block in the free parameter vector.
        self.free_offset = {}
        off = 0
        for b in self.free_blocks:
            self.free_offset[self.cliques[b]] = off
            off += int(lay.block_sizes[b])
        self.n_free = off
        self.block_size = {c: int(lay.block_sizes[b]) for b, c in enumerate(self.cliques)}
        self.strides = c_order_strides(self.n_states)

    def frequencies(self, counts):
        """``(batch, n_contexts, n_q_states)`` empirical frequencies from joint-state counts."""
        total = counts.sum(axis=1, keepdims=True)
        freq = counts / np.maximum(total, 1)
        if self.perm is not None:
            freq = freq[:, self.perm]
        return freq.reshape((len(counts),) + self.F3.shape[:2])


# ---------------------------------------------------------------------------
# Batched damped Newton kernel
# ---------------------------------------------------------------------------
def fit_auxiliary_batch(F3, freq, alpha, max_iter=100, tol=1e-8):
    """Fit a batch of same-structure log-linear models by damped Newton.

    Minimises, for every problem ``b`` of the batch,

    .. math::

        f_b(\\theta) = -\\sum_{x, k} \\hat p_b(x, k) \\log p_\\theta(k | x)
        + \\frac{\\alpha}{2}\\|\\theta\\|^2,\\quad
        p_\\theta(k | x) = \\frac{\\exp(F_{xk} \\cdot \\theta)}{\\sum_{k'} \\exp(F_{xk'} \\cdot \\theta)}

    where ``x`` runs over contexts. With a single context this is the
    auxiliary model's negative mean log-likelihood, ``log Z - theta . s``
    (LAP paper, Section 3, gradient ``E[phi] - s``); with several it is a
    conditional likelihood. The gradient is ``sum_x w_x E[F | x] - s +
    alpha theta`` and the Hessian ``sum_x w_x Cov[F | x] + alpha I``
    (``F^T diag(p) F - mu mu^T`` for one context), built for the whole batch by
    batched matrix products and solved by one batched ``np.linalg.solve``;
    backtracking (Armijo) makes the steps monotone.

    Parameters
    ----------
    F3 : ndarray of shape (n_contexts, n_states, n_params)
        Shared 0/1 features.
    freq : ndarray of shape (batch, n_contexts, n_states)
        Empirical frequencies of each problem (summing to one).
    alpha : float
    max_iter : int, default=100
    tol : float, default=1e-8
        Converged when no gradient component exceeds ``tol``.

    Returns
    -------
    theta : ndarray of shape (batch, n_params)
    n_iter : ndarray of int, shape (batch,)
    converged : ndarray of bool, shape (batch,)
    """
    n_ctx, n_k, P = F3.shape
    B = freq.shape[0]
    F2 = F3.reshape(n_ctx * n_k, P)
    w_all = freq.sum(axis=2)
    s_all = freq.reshape(B, -1) @ F2
    theta = np.zeros((B, P))
    n_iter = np.zeros(B, dtype=np.int64)
    converged = np.zeros(B, dtype=bool)
    eye = np.eye(P)
    # For 0/1 features, sum_c p_c F_c F_c^T is one GEMM with the products of
    # feature pairs, when that table is small enough. The products are
    # indicators of joint assignments, and many pairs give the same one
    # (x_i x_j times x_j is x_i x_j), so only the distinct columns are
    # multiplied (160 of 465 for an interior edge of a binary grid) and
    # gathered into the full Hessian.
    FF = None
    iu = np.triu_indices(P)
    if n_ctx * n_k * len(iu[0]) <= 2 * _BATCH_FLOATS:
        FF, which = _distinct_columns(F2[:, iu[0]] * F2[:, iu[1]])
        pos = np.empty((P, P), dtype=np.intp)
        pos[iu] = pos[iu[1], iu[0]] = np.arange(len(iu[0]))
        gather = which[pos.ravel()]

    def objective(th, fr, w):
        logits = (th @ F2.T).reshape(len(th), n_ctx, n_k)
        mx = logits.max(axis=2)
        lse = np.log(np.exp(logits - mx[:, :, None]).sum(axis=2)) + mx
        f = -(fr * logits).sum(axis=(1, 2)) + (w * lse).sum(axis=1) + 0.5 * alpha * (th * th).sum(axis=1)
        return f, logits, lse

    active = np.arange(B)
    f_act, logits, lse = objective(theta, freq, w_all)
    for _ in range(max_iter + 1):
        th, fr, w = theta[active], freq[active], w_all[active]
        p = np.exp(logits - lse[:, :, None])
        wp = (w[:, :, None] * p).reshape(len(active), -1)
        mu = wp @ F2
        g = mu - s_all[active] + alpha * th
        # Projected gradient: components pushing against the box do not count.
        blocked = ((th <= -THETA_BOUND) & (g > 0)) | ((th >= THETA_BOUND) & (g < 0))
        done = np.max(np.abs(np.where(blocked, 0.0, g)), axis=1, initial=0.0) <= tol
        converged[active[done]] = True
        keep = ~done & (n_iter[active] < max_iter)
        if not keep.any():
            break
        active, th, fr, w, g, p, wp, mu = (
            active[keep],
            th[keep],
            fr[keep],
            w[keep],
            g[keep],
            p[keep],
            wp[keep],
            mu[keep],
        )
        f0 = f_act[keep]
        if FF is not None:
            H = np.take(wp @ FF, gather, axis=1).reshape(len(active), P, P)
        else:
            H = np.matmul((wp[:, :, None] * F2[None]).transpose(0, 2, 1), F2)
        if n_ctx == 1:
            H -= mu[:, :, None] * mu[:, None, :]
        else:
            m = np.einsum("bxk,xkp->bxp", p, F3)
            H -= np.matmul((w[:, :, None] * m).transpose(0, 2, 1), m)
        H += (alpha + _JITTER) * eye
        try:
            step = -np.linalg.solve(H, g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = -np.einsum("bpq,bq->bp", np.linalg.pinv(H), g)
        slope = np.einsum("bp,bp->b", g, step)
        bad = ~(slope < 0)
        step[bad] = -g[bad]
        slope[bad] = -np.einsum("bp,bp->b", g[bad], g[bad])
        t = np.ones(len(active))
        new = np.clip(th + step, -THETA_BOUND, THETA_BOUND)
        f_new, lg_new, lse_new = objective(new, fr, w)
        # Near the optimum the predicted decrease (the Newton decrement) is below
        # float64 resolution of f; the full Newton step is then taken as is.
        tiny = -slope < 1e-12 * np.maximum(1.0, np.abs(f0))
        for _ls in range(40):
            fail = ~(f_new <= f0 + 1e-4 * t * slope) & ~tiny
            if not fail.any():
                break
            t[fail] *= 0.5
            new[fail] = np.clip(th[fail] + t[fail, None] * step[fail], -THETA_BOUND, THETA_BOUND)
            f_new[fail], lg_new[fail], lse_new[fail] = objective(new[fail], fr[fail], w[fail])
        theta[active] = new
        n_iter[active] += 1
        f_act, logits, lse = f_new, lg_new, lse_new
    return theta, n_iter, converged


def _distinct_columns(M):
    """Distinct columns of the 0/1 matrix ``M``: ``(U, which)`` with ``M == U[:, which]``."""
    keys = np.ascontiguousarray(np.packbits(M.astype(bool), axis=0).T)
    keys = keys.view(np.dtype((np.void, keys.shape[1]))).ravel()
    _, first, which = np.unique(keys, return_index=True, return_inverse=True)
    return np.ascontiguousarray(M[:, first]), which.ravel()


def _solve_chunk(tasks, alpha, max_iter, tol):
    """Worker: fit every ``(F3, freq)`` batch of a chunk; pure function of arrays.

    BLAS is held to one thread: the products are small (a few hundred
    configurations by tens of parameters) and a 2-thread OpenBLAS made the
    batched Newton method up to 10x slower on a 2-core machine.
    """
    with single_blas_thread():
        return [fit_auxiliary_batch(F3, freq, alpha, max_iter, tol) for F3, freq in tasks]


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
    {graph}
    {n_states}
    strategy : {{"pairwise", "dense", "exact"}}, default="pairwise"
        Structure of the auxiliary MRF over ``A_q`` (LAP paper, Section 3.1);
        every strategy keeps the original factors inside ``A_q``:

        - ``"exact"``: the structure of the marginal on ``A_q`` (Proposition 9
          of the exact-inference paper): for each connected component of
          ``S \\ A_q``, a fully parametrised factor over the variables of
          ``A_q`` it borders.
        - ``"dense"``: a fully parametrised factor over ``A_q \\ q``.
        - ``"pairwise"``: unary and pairwise terms over ``A_q \\ q``.
    node_rule : {{"mean", "first", "own"}}, default="mean"
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
    alpha : float, default=1e-4
        Ridge penalty ``alpha / 2 * ||alpha_aux||^2`` added to each auxiliary
        problem's negative mean log-likelihood. Positive by default so a
        state never seen in the data gives a finite estimate. When a factor
        of the auxiliary model covers ``A_q \\ q`` it is profiled out (always
        for ``"dense"``; for ``"exact"`` when one component of ``S \\ A_q``
        borders all of ``A_q \\ q``; for ``"pairwise"`` when
        ``|A_q \\ q| <= 2``) and only the blocks meeting ``q`` are penalised.
    max_iter : int, default=100
        Maximum Newton iterations per auxiliary problem.
    tol : float, default=1e-8
        An auxiliary problem has converged when no gradient component exceeds
        ``tol``.
    max_neighbourhood_states : int, default=65536
        Largest number of joint states of one 1-neighbourhood (they are
        enumerated); ``fit`` refuses larger ones up front.
    n_jobs : int, default=None
        Number of jobs solving chunks of auxiliary problems in parallel through
        ``joblib.Parallel`` (``None`` means 1 unless in a
        ``joblib.parallel_config`` context; ``-1`` all processors). Threads
        by default, as numpy releases the GIL in the batched Newton steps
        (1.55x faster with 2 threads on a 100x100 grid, where 2 loky
        processes were no faster than one job once their start-up was
        paid); a ``joblib.parallel_config(backend=...)`` chooses any other
        backend, and ``backend="dask"`` runs the chunks on a Dask cluster,
        whose workers receive only local counts.
    {score_method}
    max_bytes : int, default=None
        Memory budget of the junction tree used for exact scoring.
    random_state : int, RandomState instance or None, default=None
        Seeds the AIS estimate of ``log Z`` when ``score_method="ais"``;
        unused otherwise (the fit is deterministic).
    verbose : int, default=0
        Progress lines per structure group when positive; ``> 1`` also
        joblib's.

    Attributes
    ----------
    graph_ : MRFGraph
        The resolved graph.
    n_states_ : ndarray of shape (n_features,)
    model_ : DiscreteMRF
        The fitted model; ``model_.theta`` holds the parameters.
    theta_ : ndarray of shape (n_params,)
        Alias of ``model_.theta``.
    subproblems_ : list of LAPSubproblem
        Every auxiliary problem solved: clique, 1-neighbourhood, number of
        free parameters, whether profiled, Newton iterations, convergence.
    block_sources_ : dict
        ``{{block clique: tuple of indices into subproblems_}}``: the
        auxiliary problems each potential block was read from (averaged when
        more than one).
    n_groups_ : int
        Distinct auxiliary structures (batches).
    n_iter_ : int
        Largest number of Newton iterations of any auxiliary problem.
    log_partition_ : float or None
        ``log Z`` when scoring is exact, its AIS estimate when it is
        ``"ais"``, None for ``"pseudo"``.
    log_partition_std_ : float
        Standard error of the AIS estimate (only with ``score_method="ais"``).
    score_method_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when X has string column names.

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

        \\log Z(\\alpha) - \\alpha \\cdot \\frac{{1}}{{N}}\\sum_n \\phi(x_{{A_q n}})
        + \\frac{{a}}{{2}}\\|\\alpha\\|^2

    over the auxiliary parameters, then set ``theta_q = alpha_q``
    (Proposition 3). Its gradient is the difference of model and empirical
    feature means (the equation of Section 3) and needs only the counts of the
    joint states of ``X[:, A_q]``, computed once (data efficiency).

    When the auxiliary model contains a fully parametrised factor over
    ``A_q \\ q`` the likelihood factorises into the conditional likelihood of
    ``x_q`` given ``x_{{A_q \\ q}}`` and a free marginal of ``x_{{A_q \\ q}}``;
    the blocks meeting ``q`` are then fitted from the conditional likelihood
    alone, which is exact at ``alpha = 0`` and far cheaper (no parameter per
    joint state of ``A_q \\ q``).

    Problems of identical structure (after sorting ``A_q``) are batched and
    solved by a vectorised damped Newton method (:func:`fit_auxiliary_batch`)
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
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_neighbourhood_states": [Interval(Integral, 2, None, closed="left")],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        graph="chain",
        *,
        n_states="auto",
        strategy="pairwise",
        node_rule="mean",
        alpha=1e-4,
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

    def _log(self, start, msg):
        if self.verbose:
            print("[%s] %s, time = %.2fs" % (type(self).__name__, msg, time.perf_counter() - start))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the parameters by LAP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states ``0..K-1``; never modified.
        y : None
            Ignored.

        Returns
        -------
        self : LAPEstimator
        """
        start = time.perf_counter()
        Xi = self._validate_fit_data(X, keep_dtype=True)
        graph, K, model = self.graph_, self.n_states_, self.model_
        kmax = int(K.max())
        # Transposed once: counting gathers whole rows of XT (contiguous).
        XT = transposed_states(Xi, kmax)
        del Xi
        covered = np.zeros(graph.n_variables, dtype=bool)
        for f in graph.factors:
            covered[list(f)] = True
        maximal = list(graph.factors) + [(int(v),) for v in np.flatnonzero(~covered)]
        problems = list(maximal)
        if self.node_rule == "own":
            mset = set(maximal)
            problems += [c for c in model.cliques if c not in mset]
        factors_of = [[] for _ in range(graph.n_variables)]
        for f in graph.factors:
            for v in f:
                factors_of[v].append(f)

        # Structures, grouped by their relabelled (sorted-A_q) form. Except for
        # "exact" (which looks outside A_q), the auxiliary structure depends only
        # on the factors inside A_q and the position of q, so it is built once
        # per distinct local form.
        groups, local_forms = {}, {}
        A_list, prof_list = [], []
        for idx, q in enumerate(problems):
            A = graph.one_neighbourhood(q)
            size = float(np.prod(K[list(A)], dtype=np.float64))
            if size > self.max_neighbourhood_states:
                raise NeighbourhoodTooLargeError(
                    f"Clique {q} has a 1-neighbourhood of |A_q| = {len(A)} variables with {size:,.0f} "
                    f"joint states, over max_neighbourhood_states={self.max_neighbourhood_states:,}: "
                    "LAP enumerates every auxiliary MRF. Use strategy='pairwise' (fewest parameters; "
                    "raise max_neighbourhood_states if memory allows) or, for a graph this dense "
                    "(an RBM, a complete graph), PseudoLikelihoodEstimator."
                )
            loc = {v: i for i, v in enumerate(A)}
            lq = tuple(loc[v] for v in q)
            if self.strategy == "exact":
                facs = auxiliary_factors(graph, q, "exact", A, factors_of)[1]
                form = (tuple(tuple(loc[v] for v in f) for f in facs), lq)
            else:
                inside = tuple(sorted(tuple(loc[v] for v in f) for f in _factors_inside(A, factors_of=factors_of)))
                form = (inside, lq)
            if form not in local_forms:
                lf, lq = form
                m = len(A)
                if self.strategy != "exact":
                    extra = _extra_factors(set(range(m)) - set(lq), self.strategy)
                    lf = tuple(_maximal_small(list(lf) + extra + [(v,) for v in range(m)]))
                rest = set(range(m)) - set(lq)
                local_forms[form] = (lf, bool(rest) and any(rest <= set(f) for f in lf))
            lf, profiled = local_forms[form]
            key = (tuple(K[list(A)].tolist()), lf, lq, profiled)
            groups.setdefault(key, []).append(idx)
            A_list.append(A)
            prof_list.append(profiled)
        self._log(start, "%d auxiliary problems in %d structure groups" % (len(problems), len(groups)))

        # Local counts (computed once, in this process) and task chunks.
        specs, tasks, owners = [], [], []
        for key, members in groups.items():
            local_states, lf, lq, profiled = key
            spec = _GroupSpec(lf, local_states, lq, profiled)
            specs.append((spec, members))
            Amat = np.array([A_list[i] for i in members], dtype=np.int64)
            counts = count_joint_states(XT, Amat, spec.strides, spec.n_configs)
            freq = spec.frequencies(counts)
            per = max(1, _BATCH_FLOATS // max(1, spec.F3.shape[0] * spec.F3.shape[1] * max(spec.n_free, 1)))
            for a in range(0, len(members), per):
                tasks.append((spec.F3, freq[a : a + per]))
                owners.append((len(specs) - 1, a))
        self._log(start, "counted local statistics, %d batches" % len(tasks))

        # Parallel solve: one task per chunk of batches.
        from joblib import effective_n_jobs

        n_jobs = effective_n_jobs(self.n_jobs)
        n_chunks = min(len(tasks), max(1, 4 * n_jobs)) if n_jobs > 1 else 1
        bounds = np.linspace(0, len(tasks), n_chunks + 1).astype(int)
        # Threads by default: numpy releases the GIL in the batched products and
        # solves. The one-BLAS-thread limit is process-wide, so it is held here
        # for every thread; _solve_chunk sets it again in process or Dask workers.
        with single_blas_thread():
            results = Parallel(n_jobs=self.n_jobs, prefer="threads", verbose=max(0, self.verbose - 1))(
                delayed(_solve_chunk)(tasks[a:b], self.alpha, self.max_iter, self.tol)
                for a, b in zip(bounds[:-1], bounds[1:])
            )
        results = [r for chunk in results for r in chunk]
        self._log(start, "solved %d auxiliary problems" % len(problems))

        # Read-off.
        n_prob = len(problems)
        thetas = [None] * n_prob
        n_iter = np.zeros(n_prob, dtype=np.int64)
        conv = np.zeros(n_prob, dtype=bool)
        spec_of = [None] * n_prob
        for (g, a), (th, it, cv) in zip(owners, results):
            spec, members = specs[g]
            for j, idx in enumerate(members[a : a + len(th)]):
                thetas[idx], n_iter[idx], conv[idx] = th[j], it[j], cv[j]
                spec_of[idx] = spec
        lay = model.layout
        block_index = {c: b for b, c in enumerate(model.cliques)}
        sums = np.zeros(lay.n_params)
        hits = np.zeros(len(model.cliques), dtype=np.int64)
        sources = {c: [] for c in model.cliques}
        first_of = {}
        for idx, q in enumerate(maximal):
            for c in _subsets(q):
                first_of.setdefault(c, idx)
        for idx, q in enumerate(problems):
            A, spec, th = A_list[idx], spec_of[idx], thetas[idx]
            loc = {v: i for i, v in enumerate(A)}
            if self.node_rule == "own" or idx >= len(maximal):
                read = [q]
            else:
                read = [c for c in _subsets(q) if c == q or self.node_rule == "mean" or first_of[c] == idx]
            for c in read:
                lc = tuple(loc[v] for v in c)
                off = spec.free_offset[lc]
                b = block_index[c]
                lo, hi = lay.block_offsets[b], lay.block_offsets[b + 1]
                sums[lo:hi] += th[off : off + hi - lo]
                hits[b] += 1
                sources[c].append(idx)
        theta = sums / np.repeat(np.maximum(hits, 1), lay.block_sizes)
        model.theta = theta
        self.subproblems_ = [
            LAPSubproblem(q, A_list[i], spec_of[i].n_free, prof_list[i], int(n_iter[i]), bool(conv[i]))
            for i, q in enumerate(problems)
        ]
        self.block_sources_ = {c: tuple(v) for c, v in sources.items()}
        self.n_groups_ = len(groups)
        self.n_iter_ = int(n_iter.max(initial=0))
        if not conv.all():
            bad = [problems[i] for i in np.flatnonzero(~conv)]
            warnings.warn(
                f"{len(bad)} of {n_prob} LAP auxiliary problems did not converge in max_iter="
                f"{self.max_iter} Newton iterations (tol={self.tol:g}), for cliques {bad[:10]}"
                f"{'...' if len(bad) > 10 else ''}. Their estimates may be inaccurate: increase "
                "alpha (a state or combination never observed has no finite estimate at alpha=0) "
                "or max_iter.",
                ConvergenceWarning,
                stacklevel=3,
            )
        self._resolve_score_method(self.random_state)
        self._log(start, "done")
        return self


def _subsets(q):
    """Every non-empty subset of ``q`` (sorted tuples), i.e. the blocks of ``q``'s downward closure."""
    return [s for r in range(1, len(q) + 1) for s in itertools.combinations(q, r)]


LAPEstimator.__doc__ = LAPEstimator.__doc__.format(
    score_method=SCORE_METHOD_DOC, graph=GRAPH_DOC, n_states=N_STATES_DOC
)
