"""Shared validation, scoring and sampling for the discrete MRF estimators."""

from __future__ import annotations

from numbers import Integral, Real

import networkx as nx
import numpy as np
from sklearn.base import BaseEstimator, clone

from .._data import Rows, is_chunked, reduce_row_chunks, scan_states, summable_weights
from .._penalty import CentredRidge
from .._utils._atomic import atomic_fit
from .._utils._memory import LBFGS_VECTORS, check_fit_memory
from .._utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from .._utils._warnings import warn
from .._utils.validation import (
    MAX_STATES,
    check_column_labels,
    check_count_weights,
    check_data_array,
    check_n_states,
    check_states,
    column_names,
    fit_column_labels,
)
from ..exceptions import EstimatedLikelihoodWarning, ImpossibleLikelihoodError, TreewidthError
from ..graphs import MRFGraph, resolve_graph
from ..inference._gibbs import is_pairwise
from ..model import DiscreteMRF
from ._log_partition import (
    AIS_BUDGET,
    AIS_CHAINS,
    AIS_STEPS,
    LOG_Z_INTERVAL_MAX,
    LOG_Z_KEYS,
    TREE_BOUND_ITER,
    announce_estimate,
    estimate_log_partition,
    refuse_impossible,
)
from ._score import MeanScoreMixin

__all__ = [
    "AIS_BUDGET",
    "AIS_CHAINS",
    "AIS_STEPS",
    "ALPHA_CONSTRAINT",
    "BaseDiscreteMRF",
    "EstimatedLikelihoodWarning",
    "ImpossibleLikelihoodError",
    "LBFGS_VECTORS",
    "LOG_Z_INTERVAL_MAX",
    "MAX_TABLE_SIZE",
    "TREE_BOUND_ITER",
    "check_fit_memory",
    "model_of",
]

#: Largest joint-state table of a single clique (entries) before ``fit`` refuses.
MAX_TABLE_SIZE = MAX_STATES

#: ``n_jobs`` as scikit-learn reads it: None, a positive count, or -1, -2, ... (all CPUs, all
#: but one, ...). 0 means nothing, so it is refused by name (as ``joblib.Parallel`` would, later).
N_JOBS_CONSTRAINT = [
    Interval(Integral, 1, None, closed="left"),
    Interval(Integral, None, -1, closed="right"),
    None,
]

#: ``alpha``: a ridge ``>= 0``, or ``"auto"`` for ``1 / n_samples`` (:meth:`BaseDiscreteMRF._ridge`).
ALPHA_CONSTRAINT = [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})]


def model_of(obj, name):
    """The ``model_`` of an skmrf estimator given as parameter ``name``, or ``obj`` itself otherwise.

    An unfitted estimator is refused with a ``NotFittedError`` (a ``ValueError``) naming ``name``,
    instead of an ``AttributeError`` about ``model_`` later.
    """
    if not isinstance(obj, BaseDiscreteMRF):
        return obj
    check_is_fitted(
        obj,
        msg=(
            f"{name}={type(obj).__name__}(...) is not fitted; {name} uses the fitted model_ of an "
            f"estimator. Call fit on it first, or pass {name}=None."
        ),
    )
    return obj.model_


def _refuse_sample_tuple(X):
    """A TypeError for ``fit(sample_random_mrf(...))``: the pair, not its data."""
    if isinstance(X, tuple) and any(isinstance(v, DiscreteMRF) for v in X):
        raise TypeError(
            "X got a tuple holding a DiscreteMRF; sample_random_mrf returns (X, model): pass its "
            "X (result.X, or X, model = sample_random_mrf(...))."
        )


def _masked_to_nan(X):
    """A masked array as floats with NaN at the masked entries (a new array); anything else as is."""
    if isinstance(X, np.ma.MaskedArray):
        return np.ma.filled(X.astype(np.float64), np.nan)
    return X


def _deferred(key, doc, settable=True):
    """A fitted attribute stored under ``key`` and computed at first read when it was deferred
    (:meth:`BaseDiscreteMRF._log_partition_attribute`)."""

    def get(self):
        return self._log_partition_attribute(key)

    def set_(self, value):
        self.__dict__[key] = value

    return property(get, set_ if settable else None, doc=doc)


def _sample_weight(sample_weight, X, what):
    """``sample_weight`` validated (:func:`~skmrf._utils.validation.check_count_weights`; None stays
    None) and rounded to the grid on which every sum of them is exact
    (:func:`~skmrf._data.summable_weights`): a fit by row chunks then equals the in-memory fit bit
    for bit, whatever the weights."""
    if sample_weight is None:
        return None
    return summable_weights(check_count_weights(sample_weight, X.shape[0], what))


def validate_rows(estimator, X, sample_weight=None, n_states="auto", allow_missing=False, keep_dtype=False):
    """Validate in-memory discrete data and its weights for ``estimator``'s fit: a :class:`~skmrf._data.Rows`.

    Sets ``n_features_in_`` and the column names or labels (scikit-learn's ``validate_data``);
    checks every entry is an integer state (within ``n_states`` when given), naming the column,
    the value and its row; missing entries (NaN, None, pandas NA, masked) are ``-1`` where
    ``allow_missing``. ``n_states="auto"`` takes ``max + 1`` per column (at least 2).
    """
    _refuse_sample_tuple(X)
    X = _masked_to_nan(X)
    fit_column_labels(estimator, X)
    X = validate_data(estimator, X, reset=True, dtype=None, ensure_all_finite=False, ensure_min_samples=1)
    check_data_array(X, 1, type(estimator).__name__)
    names = column_names(estimator)
    given = None if isinstance(n_states, str) else check_n_states(n_states, X.shape[1])
    Xi = check_states(X, given, names, allow_nan=allow_missing, keep_dtype=keep_dtype)
    states = np.maximum(Xi.max(axis=0).astype(np.int64) + 1, 2) if given is None else given
    if given is None:
        _warn_if_counts(estimator, states, len(Xi), names)
    weight = _sample_weight(sample_weight, Xi, type(estimator).__name__)
    if weight is not None and not weight.all():  # rows of weight 0 count for nothing: drop them
        keep = weight > 0
        Xi, weight = Xi[keep], weight[keep]
    return Rows(Xi, states, weight)


#: A column whose "auto" number of states exceeds both this and the number of rows is more likely a
#: count, a value or an identifier than a categorical variable (#40: a table's Freq column, up to
#: 670 over 32 cells, was fitted as a fifth variable of 671 states with only a
#: NoFiniteEstimateWarning).
COUNT_COLUMN_STATES = 20


def _warn_if_counts(estimator, states, n_rows, names):
    """Warn, naming the column, when ``n_states="auto"`` gives a column more states than rows."""
    wide = np.flatnonzero((states > n_rows) & (states > COUNT_COLUMN_STATES))
    if wide.size:
        j = int(wide[0])
        label = repr(names[j]) if names is not None else str(j)
        warn(
            f"{type(estimator).__name__}: column {label} takes values up to {int(states[j]) - 1}, so n_states='auto' "
            f"gives it {int(states[j])} states over {n_rows} rows: most of its states never occur. If it holds "
            "counts of the rows (a contingency table's Freq), pass it as sample_weight and drop it from X; if it "
            "is a measurement or an identifier, drop it or bin it.",
            UserWarning,
        )


def validate_row_chunks(estimator, X, sample_weight=None, n_states="auto", allow_missing=False):
    """Validate a memmap or a dask array by row chunks for ``estimator``'s fit; set its
    ``n_features_in_`` and ``graph_`` (its ``graph`` resolved); return the :class:`~skmrf._data.Rows`.

    Every chunk is checked as an in-memory X would be (the error names the column, the value
    and its row); the chunks' column maxima give ``n_states="auto"``. ``X`` is kept as it is.
    """
    check_data_array(X, 1, type(estimator).__name__)
    estimator.n_features_in_ = n_features = X.shape[1]
    estimator.__dict__.pop("feature_names_in_", None)
    estimator.__dict__.pop("feature_labels_in_", None)
    estimator.graph_ = resolve_graph(estimator.graph, n_features, None)
    given = None if isinstance(n_states, str) else check_n_states(n_states, n_features)
    high = reduce_row_chunks(X, scan_states, given, None, allow_missing, op=np.maximum)
    weight = _sample_weight(sample_weight, X, type(estimator).__name__)
    return Rows(X, np.maximum(high + 1, 2) if given is None else given, weight)


class BaseDiscreteMRF(MeanScoreMixin, BaseEstimator):
    """Base class: the one ``fit``, validation, ``score``, ``score_samples`` and ``sample``.

    :meth:`fit` validates ``X`` and ``sample_weight`` once, resolves the graph once and builds
    ``model_`` (zero parameters), sets ``alpha_``, then calls ``_fit_theta(rows)``, the
    subclass's kernel call, and sets the score method. What differs between estimators in
    what they accept is declared by class attributes (``_allow_missing``, ``_reads_chunks``,
    ``_keep_dtype``, ``_needs_pairwise``, ``_binary_subject``), not written into their own fit.
    """

    _parameter_constraints: dict = {
        "graph": [str, nx.Graph, MRFGraph, "array-like", "sparse matrix"],
        "n_states": [StrOptions({"auto"}), Interval(Integral, 2, None, closed="left"), "array-like"],
        "score_method": [StrOptions({"auto", "exact", "pseudo", "ais", "bound"})],
        "max_bytes": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        tags.input_tags.allow_nan = False
        tags.non_deterministic = False
        return tags

    def _ridge(self, n_samples):
        """Set and return ``alpha_``: ``alpha``, or ``1 / n_samples`` when it is ``"auto"``
        (``n_samples`` is the sum of the weights). Estimators without a ridge (Metropolis-Hastings
        samples a posterior) have no ``alpha`` and get no ``alpha_``."""
        if not hasattr(self, "alpha"):
            return None
        self.alpha_ = 1.0 / n_samples if isinstance(self.alpha, str) else float(self.alpha)
        return self.alpha_

    def _ridge_penalty(self, layout=None):
        """The ridge the kernels apply: ``alpha_`` on ``theta``, or for ``alpha="auto"`` the
        centred ridge of weight ``alpha_`` (:class:`~skmrf._penalty.CentredRidge`, symmetric under
        relabelling any variable's states) on ``layout`` (default ``model_.layout``)."""
        if isinstance(self.alpha, str) and self.alpha_ > 0:
            return CentredRidge(self.model_.layout if layout is None else layout, self.alpha_)
        return self.alpha_

    # -- validation ----------------------------------------------------------
    def _feature_names(self):
        """The columns' string names (``feature_names_in_``) or labels (``feature_labels_in_``), or None."""
        return column_names(self)

    # -- the one fit ------------------------------------------------------------
    #: What the shared :meth:`fit` accepts, declared by each estimator (never a parameter):
    #: missing entries (NaN, None, pandas NA, masked), returned as ``-1``;
    _allow_missing = False
    #: a memmap or a dask array read by row chunks (never whole);
    _reads_chunks = False
    #: integer X kept in its own dtype (no int64 copy; the kernel only reads it);
    _keep_dtype = False
    #: a pairwise graph only;
    _needs_pairwise = False
    #: binary states only: the start of the refusal, "<subject> for binary variables, but ...".
    _binary_subject = None

    @atomic_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Fit the parameters to ``X`` (see the class description for the method).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states ``0..K-1``, one column per variable; never modified.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights: a row with weight ``w`` counts as ``w`` rows (integer
            weights give exactly the fit on the rows repeated), and ``alpha="auto"`` is one over
            their sum. Float weights are rounded to multiples of ``2^-52`` of their sum, where
            every sum of them is exact (so a memmap or dask array fits as the array in memory, bit
            for bit). None: every row counts once.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        rows = self._validate_fit_data(X, sample_weight)
        self._ridge(rows.total)
        self.model_.theta = self._fit_theta(rows)
        self._resolve_score_method(getattr(self, "random_state", None))
        return self

    def _fit_theta(self, rows):
        """The kernel call: the parameters fitted to :class:`~skmrf._data.Rows` ``rows`` (validated;
        ``model_``, ``graph_``, ``n_states_`` and ``alpha_`` set). Stores the method's own fitted
        attributes and returns ``theta``."""
        raise NotImplementedError

    def _fit_kernel(self, rows, graph):
        """The model this estimator's method fits to already validated ``rows`` on the resolved
        ``graph``: how another method uses an unfitted estimator given as a parameter (the MLE of
        :class:`~skmrf.MLEInducedLikelihood`). Nothing is validated or resolved again and no
        ``log Z`` is computed; the kernel runs on a copy of the parameters (:func:`~sklearn.base.clone`),
        so ``self`` stays unfitted."""
        est = clone(self)
        est.graph_ = graph
        est._build_model(rows.n_states)
        est._ridge(rows.total)
        est.model_.theta = est._fit_theta(rows)
        return est.model_

    def _binary_requirement(self):
        """``_binary_subject``, or what the parameters make binary-only (None: any states)."""
        return self._binary_subject

    def _validate_fit_data(self, X, sample_weight=None):
        """Validate X and ``sample_weight``, resolve the graph and the states, build ``model_``.

        Runs once per fit, whatever the estimator (:func:`validate_rows`, then the graph). The
        states are int64 unless the class keeps integer dtypes (``_keep_dtype``); missing
        entries, where allowed, are ``-1``; a memmap or a dask array is validated by row chunks
        and kept as is where the class reads chunks. Returns a :class:`~skmrf._data.Rows`.
        """
        # Estimators without an ``n_states`` parameter (binary-only ones) take "auto".
        n_states = getattr(self, "n_states", "auto")
        if self._reads_chunks and is_chunked(X):
            rows = self._validate_fit_chunks(X, n_states, sample_weight)
        else:
            rows = validate_rows(self, X, sample_weight, n_states, self._allow_missing, self._keep_dtype)
            self.graph_ = resolve_graph(self.graph, rows.n_columns, self._feature_names())
        self._build_model(rows.n_states)
        if self._needs_pairwise:
            self._check_pairwise()
        subject = self._binary_requirement()
        if subject is not None:
            self._check_binary(rows.X, rows.n_states, subject)
        return rows

    def _validate_fit_chunks(self, X, n_states, sample_weight):
        """Validate a memmap or a dask array by row chunks (:func:`validate_row_chunks`); set
        ``graph_``; return the Rows."""
        return validate_row_chunks(self, X, sample_weight, n_states, self._allow_missing)

    def _build_model(self, n_states):
        """Set ``n_states_`` and ``model_`` (zero parameters), refusing clique tables too large."""
        self.n_states_ = n_states
        for c in self.graph_.cliques:
            size = int(np.prod(n_states[list(c)], dtype=np.float64))
            if size > MAX_TABLE_SIZE:
                raise ValueError(
                    f"Clique {c} has {' x '.join(str(n_states[i]) for i in c)} = {size:,} joint "
                    f"states, over the limit of {MAX_TABLE_SIZE:,}. Recode the columns with "
                    "fewer states or use a sparser graph."
                )
        self.model_ = DiscreteMRF(self.graph_, n_states)

    def _check_binary(self, Xi, n_states, subject):
        """Refuse states above 1, naming the column (and, in memory, the row and the value).

        ``subject`` starts the message: "<subject> for binary variables, but ...".
        """
        wide = np.flatnonzero(np.asarray(n_states) > 2)
        if not wide.size:
            return
        names = self._feature_names()
        j = int(wide[0])
        label = f"column {j}" if names is None else f"column {j} ({names[j]!r})"
        if isinstance(Xi, np.ndarray) and not is_chunked(Xi) and Xi.max(initial=0) > 1:
            r, j = np.argwhere(Xi > 1)[0]
            label = f"column {j}" if names is None else f"column {j} ({names[j]!r})"
            found = f"{label} has state {Xi[r, j]} at row {r}"
        else:
            found = f"{label} has {int(n_states[j])} states"
        raise ValueError(
            f"{subject} for binary variables, but {found}. Give 0/1 "
            "data (binarise the columns), or use an estimator for multi-state models such as "
            "ExactMaxLikelihood."
        )

    def _check_pairwise(self):
        """Refuse factors of more than two variables, naming the first."""
        big = [c for c in self.graph_.factors if len(c) > 2]
        if big:
            raise ValueError(
                f"{type(self).__name__} needs a pairwise graph, but factor {big[0]} has {len(big[0])} "
                "variables. Give the graph as a list of edges or a networkx graph."
            )

    def _validate_score_data(self, X, allow_nan=False):
        check_is_fitted(self)
        _refuse_sample_tuple(X)
        check_column_labels(self, X)
        X = validate_data(self, _masked_to_nan(X), reset=False, dtype=None, ensure_all_finite=False)
        return check_states(X, self.n_states_, self._feature_names(), allow_nan=allow_nan)

    def _resolve_score_method(self, random_state=None):
        """Set ``score_method_`` and, for a log-likelihood score, ``log_partition_``; with
        ``"auto"``, defer both to their first use.

        ``"auto"`` is exact where the junction tree fits within ``max_bytes``, else AIS seeded by
        ``random_state``; a pseudo-likelihood only when asked for by name. Neither the junction
        tree's attempt nor the AIS estimate is made here but at their first use (``score``,
        ``score_samples``, ``sample``, reading ``score_method_`` or ``log_partition_``), and cached:
        a user who only wants the parameters does not pay for them (#24, item 4; the attempt alone
        took 0.26 s of a 0.66 s LAP fit of a 30 x 30 grid, 42 s on 1000 x 1000). They use the
        ``max_bytes`` and ``random_state`` of the fit, so the result is the same.
        """
        for key in LOG_Z_KEYS:
            self.__dict__.pop(key, None)  # from an earlier fit
        self.__dict__.pop("score_method_", None)
        if self.score_method == "auto":
            self._score_method_pending = (self.max_bytes, random_state)
        else:
            self._settle_score_method(self.score_method, self.max_bytes, random_state)

    def _settle_score_method(self, method, max_bytes, random_state):
        """:meth:`_resolve_score_method`'s choice, made: ``score_method_`` set, ``log_partition_``
        too where exact or pseudo (AIS and the bound stay deferred to their first use)."""
        if method in ("auto", "exact"):
            try:
                self.log_partition_ = self.model_.calibrate(max_bytes=max_bytes).log_z
                self.score_method_ = "exact"
                return
            except TreewidthError:
                if method == "exact":
                    raise
        if method in ("auto", "ais", "bound"):
            if method == "bound" and not is_pairwise(self.model_.layout):
                wide = next(c for c in self.model_.cliques if len(c) > 2)
                raise ValueError(
                    f"score_method='bound' needs a pairwise model (the tree-reweighted bound on log Z), but "
                    f"clique {wide} has {len(wide)} variables; use score_method='ais' or 'pseudo'."
                )
            self.score_method_ = method if method == "bound" else "ais"
            self._ais_random_state = random_state
            return
        self.score_method_ = "pseudo"
        self.log_partition_ = None

    def _score_method_attribute(self):
        d = self.__dict__
        if "_score_method_pending" in d:
            self._settle_score_method("auto", *d["_score_method_pending"])
            del d["_score_method_pending"]
        if "score_method_" not in d:
            raise AttributeError(f"{type(self).__name__} has no score_method_ (not fitted)")
        return d["score_method_"]

    score_method_ = property(
        _score_method_attribute,
        lambda self, value: self.__dict__.__setitem__("score_method_", value),
        doc='How ``score_samples`` scores (``score_method`` with ``"auto"`` resolved at first use).',
    )

    def _estimate_log_partition(self):
        """The log Z that :meth:`_resolve_score_method` deferred, and its interval
        (:func:`~skmrf.estimators._log_partition.estimate_log_partition`)."""
        self.__dict__.update(
            estimate_log_partition(self.model_, self.score_method_, self._ais_random_state, getattr(self, "verbose", 0))
        )

    def _log_partition_attribute(self, key):
        d = self.__dict__
        if "_score_method_pending" in d:
            self._score_method_attribute()
        if key not in d and "_ais_random_state" in d and d.get("score_method_") in ("ais", "bound"):
            self._estimate_log_partition()
        if key not in d:
            raise AttributeError(f"{type(self).__name__} has no {key[1:]}_ (not fitted, or not this score_method_)")
        return d[key]

    log_partition_ = _deferred("_log_partition", "``log Z`` as ``score`` uses it (AIS and bound: at first use).")
    log_partition_std_ = _deferred("_log_partition_std", "Standard error of the AIS estimate of ``log Z``.")
    log_partition_upper_ = _deferred(
        "_log_partition_upper", "Tree-reweighted upper bound on ``log Z`` (pairwise models, else None).", settable=False
    )
    log_partition_lower_ = _deferred(
        "_log_partition_lower", "Lower end of the interval for ``log Z`` (AIS less its noise margin).", settable=False
    )
    log_partition_budget_exhausted_ = _deferred(
        "_log_partition_budget_exhausted", "Whether AIS ran out of its budget before its runs agreed.", settable=False
    )

    def _announce_estimate(self):
        """Warn once per fit that scores rest on an estimated ``log Z``, with its interval
        (:func:`~skmrf.estimators._log_partition.announce_estimate`)."""
        if self.score_method_ != "ais" or self.__dict__.get("_estimate_announced"):
            return
        self._estimate_announced = True
        estimate, std = self.log_partition_, self.log_partition_std_
        announce_estimate(type(self).__name__, self.score_method, self.__dict__, estimate, std)

    # -- scoring and sampling ----------------------------------------------
    def score_samples(self, X):
        """Log-likelihood of each row under the fitted model.

        Exact (junction tree) when ``score_method_ == "exact"``; with the AIS
        estimate of ``log Z`` when it is ``"ais"`` (with ``score_method="auto"``
        the first call warns that the score is an estimate); the log
        pseudo-likelihood ``sum_i log p(x_i | x_-i)`` when it is ``"pseudo"``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states ``0..K-1`` within the fitted ``n_states_``.

        Returns
        -------
        ndarray of shape (n_samples,)
            The score of each row: its log-likelihood, or its log
            pseudo-likelihood when ``score_method_ == "pseudo"``.

        Raises
        ------
        ImpossibleLikelihoodError
            With the AIS estimate, when a row would get a log-probability above 0: the
            estimate is then provably too small, and no score is returned.
        """
        Xi = self._validate_score_data(X)
        self._announce_estimate()
        if self.score_method_ in ("exact", "ais", "bound"):
            scores = self.model_.layout.energy(Xi, self.model_.theta) - self.log_partition_
            if self.score_method_ == "ais":  # #24 item 3: a score > 0 proves the estimate wrong
                refuse_impossible(type(self).__name__, scores, self.log_partition_, self.log_partition_std_)
            return scores
        return self.model_.log_pseudo_likelihood(Xi)

    def sample(self, n_samples=1, random_state=None, method="auto", n_sweeps=200):
        """Draw samples from the fitted model.

        Parameters
        ----------
        n_samples : int, default=1
            Number of samples to draw.
        random_state : int, RandomState instance or None, default=None
            Seeds the draws (independently of the estimator's own state).
        method : {"auto", "exact", "gibbs"}, default="auto"
            ``"auto"`` samples exactly when scoring is exact, else by Gibbs.
        n_sweeps : int, default=200
            Sweeps per Gibbs chain.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Integer states (int64), one sample per row.
        """
        check_is_fitted(self)
        if method not in ("auto", "exact", "gibbs"):
            raise ValueError(f"method must be 'auto', 'exact' or 'gibbs'; got {method!r}.")
        if method == "auto":
            method = "exact" if self.score_method_ == "exact" else "gibbs"
        return self.model_.sample(n_samples, random_state, method=method, n_sweeps=n_sweeps)

    @property
    def theta_(self):
        """The fitted parameter vector (``model_.theta``)."""
        check_is_fitted(self)
        return self.model_.theta

    # -- the state protocol of skmrf.io (skmrf/estimators/_protocol.py) -------
    __skmrf_kind__ = "discrete"

    def __skmrf_state__(self):
        """The fitted model's defining arrays: ``n_states``, ``theta``, ``factors``, ``names`` and,
        where the estimator has them, ``log_partition`` and ``log_partition_std`` (read here, so a
        deferred AIS estimate is made). The estimator's own arrays, not copies."""
        check_is_fitted(self)
        state = {
            "n_states": np.asarray(self.n_states_, dtype=np.int64),
            "theta": self.model_.theta,
            "factors": self.graph_.factors,
            "names": self.graph_.names,
        }
        for key in ("log_partition", "log_partition_std"):
            value = getattr(self, key + "_", None)
            if value is not None:
                state[key] = float(value)
        return state

    def __skmrf_set_state__(self, state):
        """Set ``graph_``, ``n_states_``, ``model_`` and ``log_partition_`` (None when ``state`` has
        none), and ``log_partition_std_`` where given, from :meth:`__skmrf_state__`'s dict."""
        for key in LOG_Z_KEYS:
            self.__dict__.pop(key, None)  # of an earlier fit: nothing is estimated later
        n_states = np.array(state["n_states"], dtype=np.int64)
        self.graph_ = MRFGraph(len(n_states), tuple(tuple(f) for f in state["factors"]), state["names"])
        self.n_states_ = n_states
        self.model_ = DiscreteMRF(self.graph_, n_states, state["theta"])
        self.log_partition_ = state.get("log_partition")
        if "log_partition_std" in state:
            self.log_partition_std_ = state["log_partition_std"]
        return self
