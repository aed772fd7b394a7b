"""MRFClassifier: a joint MRF over the features and the target, predicting with the exact p(y | x)."""

from __future__ import annotations

from numbers import Integral

import networkx as nx
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets

from .._utils._atomic import atomic_fit
from .._utils._docstrings import fill_doc
from .._utils._sklearn_compat import Interval, StrOptions, _fit_context, check_is_fitted, validate_data
from .._utils.validation import check_n_states, check_states, column_names, fit_column_labels
from ..graphs import MRFGraph, resolve_graph
from ._base import ALPHA_CONSTRAINT, _sample_weight
from ._exact import ExactMaxLikelihood
from ._lap import LAPEstimator
from ._pseudo import PseudoLikelihoodEstimator

__all__ = ["MRFClassifier"]

#: ``estimator`` names and the estimator each fits the joint model with.
ESTIMATORS = {"exact": ExactMaxLikelihood, "pl": PseudoLikelihoodEstimator, "lap": LAPEstimator}


@fill_doc
class MRFClassifier(ClassifierMixin, BaseEstimator):
    """Classify categorical data with a Markov random field over the features and the target.

    ``fit`` learns one joint MRF over the feature columns and the class (the target is one more
    variable, with one state per class); ``predict_proba`` is its exact conditional
    ``p(y | x)``, which for a fully observed row involves only the cliques that hold the target
    (no partition function, whatever the graph's width).

    Parameters
    ----------
    graph : "star" or any graph form over the features, default="star"
        ``"star"``: the target linked to every feature and no feature to another; with
        ``alpha=0`` this is naive Bayes (the maximum-likelihood fit of a tree is its empirical
        edge marginals, so ``p(y | x)`` equals :class:`~sklearn.naive_bayes.CategoricalNB`'s
        with a vanishing pseudo-count). Any other graph (an edge or clique list, a networkx
        graph, an adjacency matrix, ``"chain"``, ``"grid:RxC"``, ...) is over the feature
        columns, and the target is linked to every feature as well.
    estimator : {"exact", "pl", "lap"}, default="exact"
        The fit of the joint model: :class:`ExactMaxLikelihood`,
        :class:`PseudoLikelihoodEstimator` (graphs too wide for the junction tree) or
        :class:`LAPEstimator` (few features only: the target is linked to every feature, so the
        1-neighbourhood of each of its edges holds all the features).
    alpha : float or "auto", default="auto"
        The estimator's ridge (``"auto"``: one over the number of rows).
    n_states : "auto", int or array-like of int, default="auto"
        States of each feature (``"auto"``: ``max + 1`` per column at fit); the target has
        one state per class.
    max_bytes : int, default=None
        Memory budget of one junction-tree calibration of the fit (default 2 GiB).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    estimator_ : skmrf estimator
        The fitted joint model (``estimator_.model_``); the target is its last variable.
    %(n_features_in_)s
    %(feature_names_in_)s

    See Also
    --------
    sklearn.naive_bayes.CategoricalNB : The ``graph="star"``, ``alpha=0`` case.
    skmrf.model.DiscreteMRF.conditional_marginals : The query behind ``predict_proba``.

    Notes
    -----
    ``p(y = c | x)`` is proportional to ``exp`` of the sum of the target's unary parameter and
    of every clique holding the target at ``(x, c)``: the cliques without the target are the
    same for every class and cancel. It is computed exactly, for every row at once.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf import MRFClassifier
    >>> X = np.array([[0, 1], [0, 0], [1, 1], [1, 0], [0, 1], [1, 1]])
    >>> y = np.array(["a", "a", "b", "b", "a", "b"])
    >>> clf = MRFClassifier(alpha=0.1).fit(X, y)
    >>> clf.predict([[0, 0], [1, 0]])
    array(['a', 'b'], dtype='<U1')
    """

    _parameter_constraints: dict = {
        "graph": [str, nx.Graph, MRFGraph, "array-like", "sparse matrix"],
        "estimator": [StrOptions(set(ESTIMATORS))],
        "alpha": ALPHA_CONSTRAINT,
        "n_states": [StrOptions({"auto"}), Interval(Integral, 2, None, closed="left"), "array-like"],
        "max_bytes": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, graph="star", *, estimator="exact", alpha="auto", n_states="auto", max_bytes=None):
        self.graph = graph
        self.estimator = estimator
        self.alpha = alpha
        self.n_states = n_states
        self.max_bytes = max_bytes

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        return tags

    def _joint_graph(self, n_features):
        """The factors over the features and the target (variable ``n_features``)."""
        hub = [(j, n_features) for j in range(n_features)]
        if isinstance(self.graph, str) and self.graph == "star":
            return hub
        features = resolve_graph(self.graph, n_features, column_names(self))
        return list(features.factors) + hub

    @atomic_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the joint model of the features and the class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states ``0..K-1`` of each feature.
        y : array-like of shape (n_samples,)
            Class labels (any hashable values).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, passed to the estimator's ``fit``.

        Returns
        -------
        self : object
            The fitted classifier.
        """
        fit_column_labels(self, X)
        X, y = validate_data(self, X, y, reset=True, dtype=None, ensure_all_finite=True)
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        sample_weight = _sample_weight(sample_weight, X, type(self).__name__)
        weighted = encoder.classes_ if sample_weight is None else np.unique(y[sample_weight > 0])
        if len(weighted) < 2:
            raise ValueError(
                f"MRFClassifier needs at least two classes in y (with positive weight); got one class, {weighted[0]!r}."
            )
        p = X.shape[1]
        names = column_names(self)
        given = None if isinstance(self.n_states, str) else check_n_states(self.n_states, p)
        Xi = check_states(X, given, names)
        states = np.maximum(Xi.max(axis=0) + 1, 2) if given is None else given
        joint = np.column_stack([Xi, encoder.transform(y)])
        est = ESTIMATORS[self.estimator](
            graph=self._joint_graph(p),
            alpha=self.alpha,
            n_states=np.append(states, len(self.classes_)),
            max_bytes=self.max_bytes,
        )
        self.estimator_ = est.fit(joint, sample_weight=sample_weight)
        return self

    def predict_proba(self, X):
        """The exact class probabilities ``p(y | x)`` of every row under the fitted model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states within those of ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=None, ensure_all_finite=True)
        model = self.estimator_.model_
        Xi = check_states(X, model.n_states[:-1], column_names(self))
        evidence = np.column_stack([Xi, np.full(len(Xi), np.nan)])
        return model.conditional_marginals(evidence)[:, -1, : len(self.classes_)]

    def predict(self, X):
        """The most probable class of every row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states within those of ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``classes_[argmax p(y | x)]``.
        """
        check_is_fitted(self)
        return self.classes_[self.predict_proba(X).argmax(axis=1)]
