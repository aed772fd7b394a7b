"""LAP: linear and parallel learning of discrete MRFs (the kernel: :mod:`skmrf._kernels.lap`)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .._kernels.lap import MAX_NEIGHBOURHOOD_STATES, LAPSubproblem, fit_lap
from .._kernels.lap_structure import NeighbourhoodTooLargeError, auxiliary_factors
from .._solvers import warn_not_converged
from .._utils._docstrings import fill_doc
from .._utils._sklearn_compat import Interval, StrOptions
from .._utils._verbose import ProgressLog
from ._base import ALPHA_CONSTRAINT, N_JOBS_CONSTRAINT, BaseDiscreteMRF
from ._existence import warn_if_unbounded

__all__ = ["LAPEstimator", "LAPSubproblem", "NeighbourhoodTooLargeError", "auxiliary_factors"]


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
    read : {"centred", "theta"}, default="centred"
        What each auxiliary problem gives the model: ``"theta"`` reads the
        blocks of ``theta`` off it (the paper's Proposition 3);
        ``"centred"`` reads the centred (ANOVA) component of each block,
        from which ``theta`` is solved once all problems are read. Both are
        the same estimate when the problems agree (on trees, or with exact
        auxiliary models). They differ when a block is read with one
        problem's couplings and assembled with another's: ``theta_i`` is a
        log-odds at all neighbours in state 0, so ``"theta"`` favours the
        labelling's state 0 while ``"centred"`` treats every labelling
        alike: on 4 x 4 Ising tori at K = 0.6 (no field; 20 samples of 100
        rows), ``"theta"`` put the all-ones state 8.9 nats above the
        all-zeros one on average, ``"centred"`` 0.02 (+- 0.17). On binarised
        digits (5-fold held-out exact log-likelihood,
        ``benchmarks/lap_accuracy.py --read``) ``"centred"`` was ahead by
        0.0086 (pairwise) and 0.0093 (exact) nats per variable at
        ``alpha="auto"`` and 0.010 at ``1e-4`` (fold standard deviation of
        the difference 0.0005 to 0.0009), and within -0.003 to +0.002 at
        ``1e-2``.
    alpha : float or "auto", default="auto"
        Ridge penalty ``alpha / 2 * ||alpha_aux||^2`` added to each auxiliary
        problem's negative mean log-likelihood. When a factor
        of the auxiliary model covers ``A_q \\ q`` it is profiled out (always
        for ``"dense"``; for ``"exact"`` when one component of ``S \\ A_q``
        borders all of ``A_q \\ q``; for ``"pairwise"`` when
        ``|A_q \\ q| <= 2``) and only the blocks meeting ``q`` are penalised
        (with ``"auto"``, the centred components meeting ``q``: the others
        belong to the free distribution of ``A_q \\ q``).
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
        Progress lines (the problems and groups, then one per pass) when
        positive; ``> 1`` also joblib's.

    Attributes
    ----------
    %(discrete_model_)s
    %(alpha_)s
    subproblems_ : sequence of LAPSubproblem
        Every auxiliary problem solved: clique, 1-neighbourhood, number of
        free parameters, whether profiled, Newton iterations, convergence.
        A read-only sequence backed by arrays (its ``n_iter`` and
        ``converged`` arrays cover every problem); each record is built when
        indexed, so 2 x 10^6 problems do not hold 2 x 10^6 tuples.
    block_sources_ : mapping
        ``{block clique: tuple of indices into subproblems_}``: the
        auxiliary problems each potential block was read from (averaged when
        more than one). A read-only mapping backed by arrays.
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
    solved by a vectorised damped Newton method (:func:`~skmrf._solvers.batched_newton`)
    with a shared feature matrix; with ``C`` joint states of ``A_q`` and ``P``
    parameters a Newton step costs ``O(C P^2)`` per problem. For graphs of
    bounded degree the total is linear in the number of cliques. Memory is
    bounded: the problems are counted, solved and read off in passes of at
    most 2^25 frequencies, each reading only the columns it needs (3.44 GiB
    peak on a 1000x1000 grid from a memmap, 9.1 GiB before). The
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
    >>> from skmrf.estimators._lap import LAPEstimator
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
        "read": [StrOptions({"centred", "theta"})],
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
        read="centred",
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
        self.read = read
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.max_neighbourhood_states = max_neighbourhood_states
        self.n_jobs = n_jobs
        self.score_method = score_method
        self.max_bytes = max_bytes
        self.random_state = random_state
        self.verbose = verbose

    _reads_chunks = True
    _keep_dtype = True

    def _fit_theta(self, rows):
        log = ProgressLog(type(self).__name__, self.verbose)
        if self.alpha_ == 0:
            warn_if_unbounded(self, rows)
        theta, info = fit_lap(
            self.model_,
            rows,
            self._ridge_penalty(),
            strategy=self.strategy,
            node_rule=self.node_rule,
            read=self.read,
            max_neighbourhood_states=self.max_neighbourhood_states,
            max_iter=self.max_iter,
            tol=self.tol,
            n_jobs=self.n_jobs,
            verbose=self.verbose,
            log=log,
        )
        self.block_sources_, self.subproblems_, self.n_groups_ = info
        self.n_iter_ = int(self.subproblems_.n_iter.max(initial=0))
        self._warn_unconverged()
        log("done")
        return theta

    def _warn_unconverged(self):
        bad = [self.subproblems_[i].clique for i in np.flatnonzero(~self.subproblems_.converged)]
        if bad:
            warn_not_converged(
                f"{len(bad)} of {len(self.subproblems_)} LAP auxiliary problems",
                f"in max_iter={self.max_iter} Newton iterations (tol={self.tol:g}), for cliques {bad[:10]}"
                f"{'...' if len(bad) > 10 else ''}",
                "Their estimates may be inaccurate: increase alpha (a state or combination never "
                "observed has no finite estimate at alpha=0) or max_iter.",
            )

    def standard_errors(self, X, sample_weight=None):
        """Not available for LAP: refuses, saying what to use instead.

        Each clique's parameters are read off a different auxiliary likelihood (its
        1-neighbourhood's), so their joint covariance is a sandwich over all the auxiliary
        problems at once (their scores share the rows); LAP does not keep the auxiliary fits
        that it needs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training data (unused).
        sample_weight : array-like of shape (n_samples,), default=None
            Unused.

        Raises
        ------
        NotImplementedError
            Always, naming the alternatives.
        """
        raise NotImplementedError(
            "LAPEstimator has no standard errors: each clique's parameters come from its own auxiliary "
            "likelihood, and their joint (sandwich) covariance needs every auxiliary fit at once. Use "
            "PseudoLikelihoodEstimator(...).standard_errors (sandwich), ExactMaxLikelihood(...).standard_errors "
            "(inverse information) where the junction tree fits, or refit LAP on bootstrap resamples of the rows."
        )
