"""MRFImputer: fill missing entries from an MRF fitted to the data, as a scikit-learn transformer."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, clone
from sklearn.utils._param_validation import HasMethods

from .._utils._atomic import atomic_fit
from .._utils._docstrings import fill_doc
from .._utils._sklearn_compat import Interval, StrOptions, _fit_context, check_is_fitted, validate_data
from .._utils._warnings import warn
from .._utils.validation import check_states, column_names, fit_column_labels
from ..model._queries import IMPUTE_METHODS
from ._base import BaseDiscreteMRF, _masked_to_nan
from ._em import DecomposedEM

__all__ = ["MRFImputer"]


def _rows(X, keep):
    """The rows ``keep`` of X, a DataFrame kept as one (its column names map the graph)."""
    return X.iloc[keep] if hasattr(X, "iloc") else np.asarray(X)[keep]


@fill_doc
class MRFImputer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Fill missing entries of categorical data with a Markov random field fitted to it.

    ``fit`` fits ``estimator`` (by default :class:`DecomposedEM`, maximum likelihood from the
    incomplete rows themselves) and ``transform`` fills every missing entry of a row from the
    fitted model given the row's observed entries (:meth:`skmrf.model.DiscreteMRF.impute`).
    It takes the place of scikit-learn's ``SimpleImputer`` / ``KNNImputer`` /
    ``IterativeImputer`` in a ``Pipeline`` or a ``ColumnTransformer``.

    Parameters
    ----------
    estimator : discrete skmrf estimator, default=None
        The fit (cloned). None: ``DecomposedEM()``. An estimator that refuses missing entries
        (every one but :class:`DecomposedEM`) is fitted on the rows without any, with a warning
        saying how many that leaves. With ``n_states="auto"`` its states are those seen in any
        row, missing entries aside.
    method : {"marginal", "map", "sample"}, default="marginal"
        ``"marginal"``: each entry's conditional mode (the most accurate entry by entry);
        ``"map"``: the jointly most probable completion of each row; ``"sample"``: a draw from
        the conditional distribution (multiple imputation: transform again with another
        ``random_state``).
    max_bytes : int, default=None
        Memory budget of one junction-tree calibration of a connected group of missing entries
        (16 MiB if None); a larger group is estimated by Gibbs chains, with a warning
        (:meth:`skmrf.model.DiscreteMRF.conditional_marginals`).
    n_chains : int, default=20
        Gibbs chains per row, for such groups only.
    n_sweeps : int, default=400
        Sweeps per chain (the first half discarded), for such groups only.
    random_state : int, RandomState instance or None, default=None
        Seeds ``"sample"`` and the Gibbs chains (the same seed gives the same imputation).

    Attributes
    ----------
    estimator_ : skmrf estimator
        The fitted estimator; its ``model_`` answers the queries.
    %(n_features_in_)s
    %(feature_names_in_)s

    See Also
    --------
    skmrf.model.DiscreteMRF.conditional_marginals : The probabilities behind the imputation.
    sklearn.impute.SimpleImputer, sklearn.impute.KNNImputer, sklearn.impute.IterativeImputer

    Notes
    -----
    The conditional distribution of a row's missing entries is exact (junction tree) whenever
    the connected groups of missing entries fit the memory budget; otherwise it is estimated by
    clamped Gibbs chains, with an :class:`~skmrf.exceptions.ApproximateInferenceWarning`.
    ``transform`` returns int64 states (a DataFrame with ``set_output(transform="pandas")``).

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf import MRFImputer
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, 0, 0], [1, 1, 0], [0, np.nan, 1], [1, np.nan, 0]])
    >>> MRFImputer().fit(X).transform(X)[4:]
    array([[0, 0, 1],
           [1, 1, 0]])
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"]), None],
        "method": [StrOptions(set(IMPUTE_METHODS))],
        "max_bytes": [Interval(Integral, 1, None, closed="left"), None],
        "n_chains": [Interval(Integral, 2, None, closed="left")],
        "n_sweeps": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self, estimator=None, method="marginal", *, max_bytes=None, n_chains=20, n_sweeps=400, random_state=None
    ):
        self.estimator = estimator
        self.method = method
        self.max_bytes = max_bytes
        self.n_chains = n_chains
        self.n_sweeps = n_sweeps
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = []  # states come out as int64, whatever X's dtype
        return tags

    def _states(self, X, reset):
        """X validated as states, ``-1`` where missing."""
        Xv = validate_data(self, _masked_to_nan(X), reset=reset, dtype=None, ensure_all_finite=False)
        return check_states(Xv, None, column_names(self), allow_nan=True)

    @atomic_fit
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, sample_weight=None):
        """Fit ``estimator`` to X (its rows without missing entries if it needs complete data).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states ``0..K-1``; missing entries as NaN, masked entries or pandas missing
            values. Never modified.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, passed to the estimator's ``fit``.

        Returns
        -------
        self : object
            The fitted imputer.
        """
        fit_column_labels(self, X)
        Xi = self._states(X, reset=True)
        est = DecomposedEM() if self.estimator is None else clone(self.estimator)
        if not isinstance(est, BaseDiscreteMRF) or not hasattr(est, "n_states"):
            raise ValueError(
                f"MRFImputer needs a discrete skmrf estimator (DecomposedEM, ExactMaxLikelihood, "
                f"PseudoLikelihoodEstimator, LAPEstimator, ...); got {type(est).__name__}."
            )
        if isinstance(est.n_states, str):  # "auto": the states of every row, missing entries aside
            est.set_params(n_states=np.maximum(Xi.max(axis=0, initial=0) + 1, 2))
        X = _masked_to_nan(X)
        if est._allow_missing:
            est.fit(X, sample_weight=sample_weight)
        else:
            complete = np.flatnonzero((Xi >= 0).all(axis=1))
            if not complete.size:
                raise ValueError(
                    f"{type(est).__name__} needs rows without missing entries, and none of the {len(Xi)} rows of X "
                    "has none. Use estimator=DecomposedEM(), which fits the incomplete rows."
                )
            if len(complete) < len(Xi):
                warn(
                    f"{type(est).__name__} refuses missing entries, so MRFImputer fitted it on the {len(complete)} "
                    f"rows of {len(Xi)} without any. DecomposedEM fits every row.",
                    UserWarning,
                )
            weight = None if sample_weight is None else np.asarray(sample_weight)[complete]
            est.fit(_rows(X, complete), sample_weight=weight)
        self.estimator_ = est
        return self

    def transform(self, X):
        """Fill every missing entry of X from the fitted model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            States within those seen in ``fit``, missing entries as in ``fit``.

        Returns
        -------
        ndarray of int64 of shape (n_samples, n_features)
            X with its missing entries filled (``method``); observed entries unchanged.
        """
        check_is_fitted(self)
        Xi = self._states(X, reset=False)
        return self.estimator_.model_.impute(np.where(Xi < 0, np.nan, Xi), self.method, random_state=self.random_state)
