"""Shared validation, scoring and sampling for the discrete MRF estimators."""

from __future__ import annotations

import os
import warnings
from numbers import Integral, Real

import networkx as nx
import numpy as np
from sklearn.base import BaseEstimator

from ..data import is_chunked, reduce_row_chunks, scan_states
from ..graphs import MRFGraph, resolve_graph
from ..inference.adaptive_ais import AIS_BUDGET, adaptive_annealed_importance_sampling, budget_message
from ..inference.gibbs import is_pairwise
from ..inference.junction_tree import TreewidthError
from ..inference.tree_bound import tree_upper_bound
from ..model import DiscreteMRF
from ..utils._sklearn_compat import Interval, StrOptions, check_is_fitted, validate_data
from ..utils.validation import (
    MAX_STATES,
    check_column_labels,
    check_data_array,
    check_n_states,
    check_states,
    column_names,
    fit_column_labels,
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
    "MAX_TABLE_SIZE",
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

#: Chains and annealing steps of the first run of the adaptive AIS of ``score_method="ais"``
#: (:func:`~skmrf.inference.adaptive_annealed_importance_sampling`, centred path): it doubles
#: the steps until two runs agree, within ``AIS_BUDGET`` chain sweeps (re-exported from
#: :mod:`skmrf.inference.adaptive_ais`; 400,000: runs of 100 to 1600 steps). Measured
#: (``benchmarks/ais_log_partition.py``): random grids and the 8 x 8 and 16 x 16 digits stop
#: after 200 or 400 steps (30,000 or 70,000 sweeps); the 64 x 64 digits spend the budget
#: (about 11 s of Gibbs sweeps on one core) and say so.
AIS_CHAINS, AIS_STEPS = 100, 100
#: ``score`` warns that scores from an estimated ``log Z`` cannot rank models when the interval
#: ``[log_partition_lower_, log_partition_upper_]`` is wider than this many nats (the same for
#: every row's score, so nats per row). Differences between estimators on the digits are a nat
#: or two per row at 8 x 8; the interval is 2.4 to 3 nats wide there, 20 to 25 at 16 x 16 and
#: about 40 at 64 x 64, the looseness of the tree bound (``benchmarks/log_partition_bounds.py``).
LOG_Z_INTERVAL_MAX = 1.0
#: L-BFGS iterations of the tree-reweighted bound at the first score (every iterate is a valid
#: bound). On the LAP model of the 64x64 digits: 10 give 2394.4 in 8.6 s, 25 give 2365.0 in
#: 17 s, and 160 (converged) 2355.9 in 106 s, against an AIS estimate of 673.
TREE_BOUND_ITER = 25


#: float64 vectors of the parameters' length that L-BFGS-B keeps (``2 * maxcor + 5`` with the
#: ``maxcor=20`` of :func:`~skmrf.solvers.minimize_in_box`).
LBFGS_VECTORS = 45


def _physical_memory():
    """Bytes of this machine's memory (``inf`` where the system does not tell)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return float("inf")


def check_fit_memory(name, n_bytes, what, advice):
    """Refuse, before allocating, a fit whose structure ``what`` needs more than this machine's memory.

    ``n_bytes`` is the estimate; the ``ValueError`` quotes it with the memory and ends with ``advice``.
    """
    limit = _physical_memory()
    if n_bytes > limit:
        raise ValueError(
            f"{name}: {what} needs about {n_bytes / 2**30:,.3g} GiB, more than this machine's "
            f"{limit / 2**30:,.3g} GiB of memory. {advice}"
        )


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


class EstimatedLikelihoodWarning(UserWarning):
    """``score`` is a log-likelihood with an estimated (not exact) ``log Z``."""


class ImpossibleLikelihoodError(ValueError):
    """An estimated ``log Z`` is provably too small: a row would get a probability above one."""


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


class BaseDiscreteMRF(MeanScoreMixin, BaseEstimator):
    """Base class: validation, ``score``, ``score_samples`` and ``sample``.

    Subclasses implement ``_fit_theta(self, X)`` returning the parameter
    vector for ``self.model_`` (already built with zero parameters).
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
        """Set and return ``alpha_``: ``alpha``, or ``1 / n_samples`` when it is ``"auto"``."""
        self.alpha_ = 1.0 / n_samples if isinstance(self.alpha, str) else float(self.alpha)
        return self.alpha_

    # -- validation ----------------------------------------------------------
    def _feature_names(self):
        """The columns' string names (``feature_names_in_``) or labels (``feature_labels_in_``), or None."""
        return column_names(self)

    def _validate_fit_data(self, X, keep_dtype=False, allow_nan=False, chunked=False):
        """Validate X, resolve the graph and states; build ``model_``; return int X.

        The states are int64 unless ``keep_dtype`` and X is already integer
        (then X itself, in its own dtype). With ``allow_nan``, missing entries
        (NaN, None, pandas NA, masked) are returned as ``-1``. With ``chunked`` (an
        estimator that counts through :func:`~skmrf.data.reduce_row_chunks`), a memmap or
        a dask array is validated by row chunks and returned as is.
        """
        _refuse_sample_tuple(X)
        if chunked and is_chunked(X):
            return self._validate_fit_chunks(X, allow_nan)
        X = _masked_to_nan(X)
        fit_column_labels(self, X)
        X = validate_data(self, X, reset=True, dtype=None, ensure_all_finite=False, ensure_min_samples=1)
        check_data_array(X, 1, type(self).__name__)
        names = self._feature_names()
        Xi = check_states(X, feature_names=names, allow_nan=allow_nan, keep_dtype=keep_dtype)
        n_features = Xi.shape[1]
        self.graph_ = resolve_graph(self.graph, n_features, names)
        if isinstance(self.n_states, str):
            n_states = np.maximum(Xi.max(axis=0).astype(np.int64) + 1, 2)
        else:
            n_states = check_n_states(self.n_states, n_features)
            # Range check only (of X itself when missing entries became -1 in Xi).
            check_states(X if allow_nan else Xi, n_states, names, allow_nan=allow_nan, keep_dtype=True)
        self._build_model(n_states)
        return Xi

    def _validate_fit_chunks(self, X, allow_nan=False):
        """:meth:`_validate_fit_data` for a memmap or a dask array, read by row chunks.

        Every chunk is checked as an in-memory X would be (the error names the column, the
        value and its row); the chunks' column maxima give ``n_states="auto"``. Returns X
        itself, for the estimator's counts to read by chunks again
        (:func:`~skmrf.data.reduce_row_chunks`).
        """
        check_data_array(X, 1, type(self).__name__)
        self.n_features_in_ = n_features = X.shape[1]
        self.__dict__.pop("feature_names_in_", None)
        self.__dict__.pop("feature_labels_in_", None)
        self.graph_ = resolve_graph(self.graph, n_features, None)
        given = None if isinstance(self.n_states, str) else check_n_states(self.n_states, n_features)
        high = reduce_row_chunks(X, scan_states, given, None, allow_nan, op=np.maximum)
        self._build_model(np.maximum(high + 1, 2) if given is None else given)
        return X

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

    def _check_binary_pairwise(self, Xi, subject):
        """Refuse states above 1 and cliques of more than two variables, naming the culprit.

        ``subject`` starts the message: "<subject> for binary variables, but ...".
        """
        if Xi.max(initial=0) > 1:
            r, j = np.argwhere(Xi > 1)[0]
            names = self._feature_names()
            label = f"column {j}" if names is None else f"column {j} ({names[j]!r})"
            raise ValueError(
                f"{subject} for binary variables, but {label} has state {Xi[r, j]} at row {r}. Give 0/1 "
                "data (binarise the columns), or use an estimator for multi-state models such as "
                "ExactMaxLikelihood."
            )
        self._check_pairwise()

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
        """Set ``score_method_`` and, for a log-likelihood score, ``log_partition_``.

        ``"auto"`` is exact where the junction tree fits within ``max_bytes``, else AIS
        seeded by ``random_state``; a pseudo-likelihood only when asked for by name. The AIS
        estimate is not made here but at its first use (``score``, ``score_samples``, reading
        ``log_partition_``), and cached: a user who only wants the parameters does not pay
        for it (#24, item 4). It is seeded the same way, so the result is the same.
        """
        method = self.score_method
        for key in (
            "_log_partition",
            "_log_partition_std",
            "_log_partition_upper",
            "_log_partition_lower",
            "_log_partition_budget_exhausted",
            "_ais_budget_message",
            "_ais_random_state",
            "_estimate_announced",
        ):
            self.__dict__.pop(key, None)  # from an earlier fit
        if method in ("auto", "exact"):
            try:
                self.log_partition_ = self.model_.calibrate(max_bytes=self.max_bytes).log_z
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

    def _estimate_log_partition(self):
        """The log Z that :meth:`_resolve_score_method` deferred, and an interval around it.

        ``"ais"``: the adaptive AIS estimate (#24, item 2), its standard error with the bias seen
        between its runs, the lower end of the interval (AIS less its noise margin) and whether
        its budget ran out. Both methods, pairwise models: the tree-reweighted upper bound on
        ``log Z`` (#24, item 1), which ``"bound"`` scores with. There are no exact draws of a
        model this wide, so no reverse-AIS bound: the interval is ``[AIS, tree bound]``.
        """
        d = self.__dict__
        lower = exhausted = d["_ais_budget_message"] = None
        if self.score_method_ == "ais":  # first: it draws from random_state as it did in fit
            res = adaptive_annealed_importance_sampling(
                self.model_, AIS_BUDGET, AIS_CHAINS, AIS_STEPS, random_state=self._ais_random_state, warn=False
            )
            self.log_partition_, self.log_partition_std_ = res.log_z, res.std_err
            lower, exhausted = res.lower, res.budget_exhausted
            d["_ais_budget_message"] = budget_message(res) if exhausted else None
        upper = None
        if is_pairwise(self.model_.layout):
            upper = tree_upper_bound(self.model_, max_iter=TREE_BOUND_ITER, random_state=self._ais_random_state).bound
        d["_log_partition_upper"] = upper
        d["_log_partition_lower"] = lower
        d["_log_partition_budget_exhausted"] = exhausted
        if self.score_method_ == "bound":
            self.log_partition_ = upper

    def _log_partition_attribute(self, key):
        d = self.__dict__
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
        """Warn once per fit that scores rest on an estimated ``log Z``, with its interval.

        With ``score_method="auto"`` that they are estimates at all, quoting the interval
        ``[log_partition_lower_, log_partition_upper_]`` in nats per row; with ``"auto"`` or
        ``"ais"``, that they cannot rank models when it is wider than :data:`LOG_Z_INTERVAL_MAX`
        nats, and that AIS ran out of its budget when it did.
        """
        if self.score_method_ != "ais" or self.__dict__.get("_estimate_announced"):
            return
        self._estimate_announced = True
        d = self.__dict__
        estimate, std = self.log_partition_, self.log_partition_std_
        low, upper = d.get("_log_partition_lower"), d.get("_log_partition_upper")
        if low is None:  # a model loaded from a file: the estimate less 3 of its standard errors
            low = estimate - 3 * std
        if upper is not None:
            interval = (
                f"log Z lies in [{low:.6g}, {upper:.6g}] (log_partition_lower_: AIS less its noise margin; "
                f"log_partition_upper_: tree-reweighted bound), so every row's score, and the mean score, "
                f"is uncertain by {upper - low:.3g} nats per row"
            )
        else:
            interval = (
                f"log Z is at least {low:.6g} (log_partition_lower_), but no upper bound on it was computed "
                "(a model with cliques of three or more variables, or one loaded from a file)"
            )
        budget = d.get("_ais_budget_message")
        if self.score_method == "auto":
            warnings.warn(
                f"{type(self).__name__}(score_method='auto') scores with log Z estimated by annealed "
                f"importance sampling (adaptive: {AIS_CHAINS} chains from {AIS_STEPS} steps, doubled until two "
                f"runs agree, within {AIS_BUDGET:,} chain sweeps): log Z = {estimate:.6g} with standard error "
                f"{std:.3g} (log_partition_std_, its bias included), because the junction tree of this graph "
                f"exceeds max_bytes; {interval}. The scores are log-likelihood estimates; set "
                "score_method='ais' to silence this warning.",
                EstimatedLikelihoodWarning,
                stacklevel=3,
            )
        if budget:
            warnings.warn(f"{type(self).__name__}: {budget}", EstimatedLikelihoodWarning, stacklevel=3)
        if upper is not None and upper - low > LOG_Z_INTERVAL_MAX:
            warnings.warn(
                f"{type(self).__name__}: {interval}. The interval is wider than {LOG_Z_INTERVAL_MAX:g} nat per "
                "row, so these scores cannot rank models (AIS underestimates log Z when its chains do not "
                "follow the model; the tree bound is loose on strongly coupled models). For a conservative "
                "comparison use score_method='bound' (scores with the upper end: a guaranteed lower bound "
                "on the mean log-likelihood).",
                EstimatedLikelihoodWarning,
                stacklevel=3,
            )

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
            if self.score_method_ == "ais":
                self._refuse_impossible(scores)
            return scores
        return self.model_.log_pseudo_likelihood(Xi)

    def _refuse_impossible(self, scores):
        """Refuse AIS scores of rows more probable than certain (#24, item 3).

        ``log Z >= energy(x)`` for every state ``x``, so a row with ``energy(x) > log Z`` proves
        the AIS estimate too small by at least the difference (AIS underestimates ``log Z`` when
        its chains do not mix). Returning the score would rank the model by that error.
        """
        worst = int(np.argmax(scores)) if len(scores) else 0
        if len(scores) and scores[worst] > 0:
            raise ImpossibleLikelihoodError(
                f"{type(self).__name__}: row {worst} would have log-probability {scores[worst]:.4g} > 0 "
                f"with the AIS estimate log Z = {self.log_partition_:.6g} (standard error "
                f"{self.log_partition_std_:.3g}): its energy proves log Z >= "
                f"{self.log_partition_ + scores[worst]:.6g}, so the estimate is at least {scores[worst]:.4g} "
                "nats too small and every score from it is too high. AIS did not reach this model's mass "
                "(its chains do not mix at these couplings); do not rank models by it. Use "
                "score_method='pseudo', or estimate log Z with more chains and steps "
                "(skmrf.inference.annealed_importance_sampling) and compare."
            )

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
