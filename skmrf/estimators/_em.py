"""Maximum likelihood from incomplete data: EM or L-BFGS with the data term decomposed.

Refaat and Darwiche, "Data Compression for Learning MRF Parameters": the log-likelihood of
rows with missing entries is ``sum_i log Z(d_i) - N log Z`` (Eq. 1). Its data term needs an
inference conditioned on every distinct row; decomposing the factors on the always-observed
variables and compressing the data of each sub-network (Eq. 2, Theorem 1) makes that far
fewer inferences, with no change to the result (:mod:`skmrf._kernels.incomplete`); ``decompose="auto"``
prices that, the undecomposed data and a finer row-wise split by a measured cost model and
takes the cheapest. The model term is one junction-tree calibration per iteration.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .._data import Rows
from .._kernels.exact import fit_max_likelihood
from .._kernels.incomplete.em import M_STEP_MAX_ITER, fit_incomplete
from .._kernels.incomplete.term import IncompleteDataTerm, compatible_counts
from .._kernels.information import incomplete_information
from .._solvers import THETA_BOUND, warn_if_not_converged
from .._utils._docstrings import fill_doc
from .._utils._progress import Progress
from .._utils._sklearn_compat import Interval, StrOptions, check_is_fitted
from .._utils._verbose import ProgressLog
from .._utils.validation import check_generator, check_mean_weights
from ..model import DiscreteMRF
from ._base import ALPHA_CONSTRAINT, N_JOBS_CONSTRAINT, BaseDiscreteMRF, model_of
from ._existence import empty_cell_cliques, warn_no_finite_estimate
from ._protocol import Trace
from ._statistics import DiscreteStatisticsMixin

__all__ = ["DecomposedEM"]

#: Ridge of the ``init="complete_rows"`` fit, at least: a starting point must be finite and
#: moderate even when the complete rows leave some clique state unseen.
COMPLETE_ROWS_MIN_ALPHA = 1e-2
#: Standard deviation of the ``init="random"`` parameters.
RANDOM_INIT_SCALE = 0.1


@fill_doc
class DecomposedEM(DiscreteStatisticsMixin, BaseDiscreteMRF):
    """Maximum-likelihood MRF parameters from data with missing entries.

    Maximises the likelihood of the observed part of each row,
    ``sum_i log Z(d_i) - N log Z`` (Refaat and Darwiche, Eq. 1), where
    ``Z(d_i)`` sums over the completions of row ``i``. The data term is
    decomposed on the always-observed variables and compressed (Eq. 2):
    factors linked only through variables observed in every row are
    separated, each resulting sub-network sees the data projected on its
    own variables, reduced to distinct patterns with counts, and all the
    patterns of sub-networks of one shape are calibrated in one batched
    junction-tree pass. This changes the cost, not the result. The model
    term (``log Z`` and the clique marginals) is one junction-tree
    calibration per iteration, so the graph must be narrow enough for exact
    inference (see ``max_bytes``).

    Parameters
    ----------
    %(graph)s
    method : {"em", "gradient"}, default="em"
        ``"em"``: expectation-maximisation; the E-step computes the expected
        clique counts given each distinct pattern, the M-step solves the
        complete-data maximum-likelihood problem on them (the solver of
        :class:`ExactMaxLikelihood`, warm-started). The penalised
        log-likelihood never decreases. ``"gradient"``: L-BFGS-B on the
        incomplete-data log-likelihood directly (data term minus model term).
        Both find a local maximum: with missing data the likelihood need not
        be concave.
    decompose : {"auto", True, False}, default="auto"
        How the data term is computed; the fit is the same whichever is
        chosen (the same objective summed in another order). True: the
        paper's decomposition (Section 4) into sub-networks cut at the
        always-observed variables, each one's projected data compressed to
        distinct patterns. False: the undecomposed data with duplicate rows
        merged (the paper's baseline), for measuring the speed-up. "auto":
        the cheapest, by a measured cost model of one evaluation (patterns
        times the size of their junction trees, plus a fixed cost per batched
        calibration), of those two and of the row-wise split, which cuts each
        row at its own observed entries into the connected components of its
        missing ones (see Notes). The choice is ``decompose_``.
    alpha : float or "auto", default="auto"
        Ridge penalty ``alpha / 2 * ||theta||^2`` added to the negative mean
        log-likelihood (of the observed parts of the rows).
        %(alpha_auto)s
        Here ``n_samples`` counts the rows with at least one observed entry.
    max_iter : int, default=500
        EM iterations (``"em"``) or L-BFGS iterations (``"gradient"``).
    tol : float, default=1e-6
        Stop when the largest component of the gradient of the penalised
        mean log-likelihood is at most ``tol`` (inside the box
        ``|theta| <= 30``).
    init : None, "complete_rows", "random", DiscreteMRF or fitted estimator, default=None
        Starting parameters. None: zeros (the uniform model).
        ``"complete_rows"``: maximum likelihood on the rows without missing
        entries, with a ridge of at least ``1e-2`` so the start is finite
        (an error if there are no such rows). ``"random"``: independent
        normal parameters with standard deviation 0.1, seeded by
        ``random_state`` (for restarts). A :class:`~skmrf.DiscreteMRF` with
        the same cliques and states, or a fitted skmrf estimator (its
        ``model_``): its parameters.
    %(n_states)s
    random_state : int, RandomState instance or None, default=None
        Seeds ``init="random"``; unused otherwise (the fit is deterministic).
    n_jobs : int, default=None
        Parallel jobs (threads, or the active joblib backend) over batches of
        patterns in each E-step; one pool per fit. ``None`` means 1.
    max_bytes : int, default=None
        Memory budget of one junction-tree calibration (2 GiB if None).
    verbose : int, default=0
        A progress bar of the iterations at 1; at 2 or more also one line per iteration
        with the log-likelihood.

    Attributes
    ----------
    %(discrete_model_)s
    %(alpha_)s
    n_iter_ : int
        Iterations run (EM or L-BFGS).
    converged_ : bool
        Whether the gradient reached ``tol``.
    log_likelihood_ : float
        Log-likelihood of the observed data at the fit, per row with at
        least one observed entry (the definition of :meth:`score`, so
        ``score(X_train)`` equals it up to ``tol``).
    log_likelihood_trace_ : ndarray of shape (`n_iter_` + 1,)
        ``log_likelihood_`` at the start and after every iteration
        (without the ridge term: EM never decreases the penalised one,
        ``log_likelihood_trace_ - alpha / 2 * ||theta||^2``).
    decompose_ : {"none", "subnetworks", "components"}
        How the data term was computed: undecomposed (``decompose=False``),
        the paper's sub-networks (``decompose=True``), or sub-networks whose
        rows are cut further into the components of their missing entries
        (chosen by ``decompose="auto"`` when cheaper).
    n_subnetworks_ : int
        Sub-networks holding a variable that is missing somewhere (each one's
        data term needs inference; 1 for ``decompose_="none"``, the whole
        network); cliques whose variables are always observed are counted
        like complete data.
    n_distinct_rows_ : ndarray of shape (`n_subnetworks_`,)
        Distinct patterns of the data projected on each sub-network.
    inferences_per_iteration_ : int
        Conditional calibrations per evaluation of the likelihood (the
        patterns, ``n_distinct_rows_.sum()``, or the distinct components'
        patterns with ``decompose_="components"``) plus one for ``log Z``.
    log_partition_ : float
        ``log Z`` of the fitted model.
    score_method_ : str
        Always ``"exact"``.
    %(n_features_in_)s
    %(feature_names_in_)s

    See Also
    --------
    ExactMaxLikelihood : The same estimate from complete data.

    Notes
    -----
    With ``alpha=0``, a clique state that no row shows, even with its
    missing entries filled in, has no finite maximum-likelihood parameter:
    ``fit`` warns (``NoFiniteEstimateWarning``) naming the cliques. A column
    entirely missing is refused (no data identifies its parameters).

    A row entirely missing is the empty event, of probability 1: its
    log-likelihood (:meth:`score_samples`) is exactly 0, and it changes
    neither the fit (``alpha="auto"`` counts only the rows with an observed
    entry) nor the score: :meth:`score` and ``log_likelihood_`` are the sum
    of the rows' log-likelihoods divided by the number of rows with at
    least one observed entry, so appending empty rows changes nothing.

    Missing entries are ``np.nan`` (or ``None``) in a float or
    object array, masked entries of a ``numpy.ma.MaskedArray``, or pandas
    missing values.

    The row-wise split (``decompose_="components"``) applies Theorem 1 of
    the paper row by row: within one row, cliques linked only through
    entries observed in that row are independent given the row, so the
    row's data term is the sum of the log-potentials of the cliques it fills
    completely (counted once, like complete data) and of ``log Z_C(d)``
    over the connected components ``C`` of its missing entries. A
    component's pattern is its missing variables and the observed states
    next to them, nothing else: one large sub-network whose patterns are
    nearly all distinct compresses to a few hundred component patterns, on
    junction trees of a few variables. The model term gathers the node
    tables of the junction tree by one sparse product instead of a loop over
    the cliques.

    ``sample_weight`` weights the rows: a pattern's count is the sum of
    its rows' weights, so integer weights give the fit on the rows
    repeated, bit for bit, under every plan.

    Measured (``benchmarks/decomposition_speedup.py``, results in
    ``benchmarks/results/decomposition_speedup.txt``): ``decompose="auto"``
    against the faster of ``False`` and ``True`` on every network of the
    paper's Table 1 with 4 seeds each and at 50-95 %% of the variables
    always observed.

    References
    ----------
    K. S. Refaat and A. Darwiche, "Data Compression for Learning MRF
    Parameters", IJCAI 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf import DecomposedEM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 2, size=(200, 5)).astype(float)
    >>> X[rng.random(X.shape) < 0.2] = np.nan
    >>> est = DecomposedEM(graph="chain", alpha=0.01).fit(X)
    >>> bool(est.converged_)
    True
    """

    _parameter_constraints: dict = {
        **BaseDiscreteMRF._parameter_constraints,
        "method": [StrOptions({"em", "gradient"})],
        "decompose": [StrOptions({"auto"}), "boolean"],
        "alpha": ALPHA_CONSTRAINT,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "init": [None, StrOptions({"complete_rows", "random"}), DiscreteMRF, BaseDiscreteMRF],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }
    _parameter_constraints.pop("score_method")

    def __init__(
        self,
        graph="chain",
        *,
        method="em",
        decompose="auto",
        alpha="auto",
        max_iter=500,
        tol=1e-6,
        init=None,
        n_states="auto",
        random_state=None,
        n_jobs=None,
        max_bytes=None,
        verbose=0,
    ):
        self.graph = graph
        self.method = method
        self.decompose = decompose
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.n_states = n_states
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.max_bytes = max_bytes
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    _allow_missing = True
    #: A memmap or a dask array is compressed to its distinct rows with counts by row chunks.
    _reads_chunks = True

    def _fit_theta(self, rows):
        Xi, weight = rows.distinct() if rows.chunked else rows.dense()
        self._check_missing(Xi)
        seen = ~(Xi < 0).all(axis=1)  # an all-missing row contributes log Z(d) - log Z = 0
        rows = Rows(Xi[seen], rows.n_states, None if weight is None else weight[seen])
        Xi = rows.X
        self._ridge(rows.total)  # so alpha="auto" counts the rows with an observed entry only
        model = self.model_
        model.get_junction_tree(self.max_bytes)  # a treewidth too large is refused before any work
        if self.alpha_ == 0:
            empty = empty_cell_cliques(model, compatible_counts(model.layout, Xi))
            if empty:
                outcome = (
                    "(Here: no row, with its missing entries filled in any way, shows that state.) "
                    f"Their parameters diverge and are returned where the fit stopped, within +-{THETA_BOUND:g}."
                )
                warn_no_finite_estimate(type(self).__name__, empty, outcome, graph=model.graph)
        model.theta = self._initial_theta(rows)
        log = ProgressLog(type(self).__name__, self.verbose)
        with Progress(self.max_iter, type(self).__name__, self.verbose, unit="iteration", tol=self.tol) as bar:
            line = {
                "em": "EM iteration %(step)d, mean log-likelihood = %(log_likelihood).8f (penalised: "
                "%(penalised).8f, never decreases), max |grad| = %(grad_max).2e",
                "gradient": "Iteration %(step)d, mean log-likelihood = %(log_likelihood).8f, "
                "max |grad| = %(grad_max).2e",
            }[self.method]
            report = bar.reporter(log, line, measure="grad_max")

            theta, info = fit_incomplete(
                model,
                rows,
                self._ridge_penalty(),
                method=self.method,
                decompose=self.decompose,
                max_iter=self.max_iter,
                tol=self.tol,
                max_bytes=self.max_bytes,
                n_jobs=self.n_jobs,
                verbose=max(0, self.verbose - 1),
                callback=report,
            )
        self.decompose_ = info.plan
        self.n_subnetworks_ = info.n_subnetworks
        self.n_distinct_rows_ = info.n_distinct_rows
        self.inferences_per_iteration_ = info.inferences_per_iteration
        self.n_iter_ = info.n_iter
        self.log_likelihood_trace_ = info.trace
        self.log_likelihood_ = float(info.trace[-1])
        self.converged_ = bool(info.grad_max <= self.tol)
        warn_if_not_converged(type(self).__name__, info.n_iter, info.grad_max, self.tol, self.max_iter)
        return theta

    def __skmrf_trace__(self):
        """``log_likelihood_trace_`` for :func:`~skmrf.plotting.plot_trace`: the mean log-likelihood
        per row at the start and after every iteration."""
        check_is_fitted(self)
        trace = np.asarray(self.log_likelihood_trace_, dtype=np.float64).reshape(1, -1)
        return Trace({"log_likelihood": trace}, "iteration", "mean log-likelihood per row", marker=".")

    def _resolve_score_method(self, random_state=None):
        """Scores are always exact: the fit itself calibrates the junction tree."""
        model = self.model_
        self.score_method_ = "exact"
        self.log_partition_ = (
            model.get_junction_tree(self.max_bytes)
            .calibrate(model.layout.full_tables(model.theta), model.layout, max_bytes=self.max_bytes)
            .log_z
        )

    # -- validation and initialisation -------------------------------------
    def _check_missing(self, Xi):
        empty = np.flatnonzero((Xi < 0).all(axis=0))
        if empty.size:
            names = self._feature_names()
            j = int(empty[0])
            label = f"column {j}" + (f" ({names[j]!r})" if names else "")
            raise ValueError(
                f"X has no observed value in {label}"
                + (f" (and {empty.size - 1} more columns)" if empty.size > 1 else "")
                + ": no data identify its parameters. Drop the column (and its variable from the "
                "graph) or supply observations."
            )

    def _initial_theta(self, rows):
        model, init = self.model_, self.init
        Xi = rows.X
        if init is None:
            return np.zeros(model.n_params)
        if isinstance(init, str) and init == "random":
            return RANDOM_INIT_SCALE * check_generator(self.random_state).standard_normal(model.n_params)
        if isinstance(init, str):  # "complete_rows"
            full = (Xi >= 0).all(axis=1)
            complete = Xi[full]
            if complete.shape[0] == 0:
                raise ValueError(
                    "init='complete_rows' needs rows without missing entries, and X has none. "
                    "Use init=None or init='random'."
                )
            start = DiscreteMRF(self.graph_, self.n_states_)
            if rows.weight is None:
                stats = start.layout.table_counts(complete)[start.layout.theta_pos] / complete.shape[0]
            else:
                w = rows.weight[full]
                stats = start.layout.table_counts(complete, w)[start.layout.theta_pos] / w.sum()
            alpha = max(self.alpha_, COMPLETE_ROWS_MIN_ALPHA)
            fit_max_likelihood(start, stats, alpha, M_STEP_MAX_ITER, 1e-6, self.max_bytes)
            return start.theta
        source = model_of(init, "init")
        if not isinstance(source, DiscreteMRF):
            raise TypeError(
                f"init must be None, 'complete_rows', 'random', a DiscreteMRF or a fitted estimator; got {init!r}."
            )
        if source.cliques != model.cliques or not np.array_equal(source.n_states, model.n_states):
            raise ValueError(
                "init has a different structure from this fit: its cliques or states differ from "
                f"those of graph_ and n_states_ ({len(source.cliques)} vs {len(model.cliques)} "
                f"cliques). Fit the initial model with the same graph and n_states."
            )
        return np.clip(source.theta, -THETA_BOUND, THETA_BOUND)

    # -- scoring -------------------------------------------------------------
    def score(self, X, y=None, sample_weight=None):
        """Log-likelihood of the observed entries per row that has one; higher is better.

        The sum of :meth:`score_samples` over the rows, divided by the number
        of rows with at least one observed entry: a row entirely missing
        (log-likelihood exactly 0) counts in neither, so appending empty rows
        changes nothing. On the training data this is ``log_likelihood_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states within the fitted ``n_states_``, missing entries
            as NaN (as in :meth:`fit`).
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights: a row of weight ``w`` counts as ``w`` rows, in the sum and in the
            number of rows with an observed entry.

        Returns
        -------
        float
            ``sum(w * score_samples(X)) / sum(w over the rows with an observed entry)``.

        Raises
        ------
        ValueError
            If every row of ``X`` is entirely missing (or has weight 0): there is nothing to score.
        """
        Xi = self._validate_score_data(X, allow_nan=True)
        seen = ~(Xi < 0).all(axis=1)
        weight = np.ones(len(Xi))
        if sample_weight is not None:
            weight = check_mean_weights(sample_weight, len(Xi), f"{type(self).__name__}.score")
        n_seen = float(weight[seen].sum())
        if n_seen == 0:
            raise ValueError(
                f"Every one of the {Xi.shape[0]} rows of X is entirely missing, so there is nothing to score (an "
                "empty row has log-likelihood 0 and is not counted, nor is a row of weight 0). Give rows with at "
                "least one observed entry."
            )
        return float(weight @ self._row_scores(Xi) / n_seen)

    def score_samples(self, X):
        """Log-likelihood of the observed part of each row under the fitted model.

        Exact: ``log Z(d) - log Z``, with the missing entries summed out by
        the same decomposed computation as the fit. A row entirely missing
        scores 0.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states within the fitted ``n_states_``, missing entries
            as NaN (as in :meth:`fit`).

        Returns
        -------
        ndarray of shape (n_samples,)
            The log-likelihood of each row's observed entries.
        """
        return self._row_scores(self._validate_score_data(X, allow_nan=True))

    def _information(self, Xi, weight, total):
        """The observed information of the rows (Louis' formula) plus ``N`` times the ridge's Hessian."""
        data = IncompleteDataTerm(self.model_.layout, Xi, max_bytes=self.max_bytes, weight=weight)
        return incomplete_information(self.model_, data, total, self._ridge_penalty(), self.max_bytes)

    def _row_scores(self, Xi):
        """``log Z(d) - log Z`` of each validated row (0 for a row entirely missing)."""
        out = np.zeros(Xi.shape[0])
        seen = ~(Xi < 0).all(axis=1)
        if seen.any():
            lay = self.model_.layout
            data = IncompleteDataTerm(lay, Xi[seen], max_bytes=self.max_bytes, keep_rows=True)
            out[seen] = data.row_log_evidence(lay.full_tables(self.model_.theta)) - self.log_partition_
        return out
