"""Accuracy measures used in the papers' experiments, and the likelihood-ratio test of nested fits."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.stats import chi2

from ._utils._sklearn_compat import check_is_fitted
from ._utils._warnings import warn
from .estimators._statistics import warn_if_penalised

__all__ = ["LikelihoodRatioTest", "likelihood_ratio_test", "mean_parameter_variance", "relative_error"]


def relative_error(theta, theta_ref) -> float:
    """``||theta - theta_ref|| / ||theta_ref||`` (LAP paper, Section 4)."""
    theta, theta_ref = np.asarray(theta, dtype=float), np.asarray(theta_ref, dtype=float)
    return float(np.linalg.norm(theta - theta_ref) / np.linalg.norm(theta_ref))


def mean_parameter_variance(estimates) -> float:
    """Variance of each parameter across runs, averaged over parameters.

    Parameters
    ----------
    estimates : array-like of shape (n_runs, n_params)
    """
    return float(np.mean(np.var(np.asarray(estimates, dtype=float), axis=0)))


class LikelihoodRatioTest(NamedTuple):
    """What :func:`likelihood_ratio_test` returns."""

    statistic: float
    """``2 (log L_big - log L_small)`` on the data."""
    df: int
    """``big.n_params_ - small.n_params_``."""
    pvalue: float
    """``P(chi^2_df >= statistic)``, the asymptotic p-value under the smaller model."""


def _log_likelihood(est, X, sample_weight):
    scores = est.score_samples(X)
    if sample_weight is None:
        return float(scores.sum())
    return float(np.asarray(sample_weight, dtype=np.float64) @ scores)


def _check_nested(small, big):
    """Refuse fits that are not nested, naming the clique or edge of ``small`` that ``big`` lacks."""
    if hasattr(small, "model_") != hasattr(big, "model_"):
        raise ValueError("likelihood_ratio_test compares two discrete fits or two Gaussian fits, not one of each.")
    if small.n_features_in_ != big.n_features_in_:
        raise ValueError(
            f"The fits have {small.n_features_in_} and {big.n_features_in_} columns; nested models are fitted to "
            "the same columns."
        )
    if hasattr(small, "model_"):
        if not np.array_equal(small.n_states_, big.n_states_):
            j = int(np.flatnonzero(small.n_states_ != big.n_states_)[0])
            raise ValueError(
                f"The fits have {small.n_states_[j]} and {big.n_states_[j]} states for column {j}; give both the "
                "same n_states."
            )
        outside = [c for c in small.model_.cliques if c not in set(big.model_.cliques)]
        if outside:
            raise ValueError(
                f"The models are not nested: clique {outside[0]} of small is not a clique of big. Give the "
                "smaller model first, with a graph contained in the bigger one's."
            )
        return
    if small.assume_centered != big.assume_centered:
        raise ValueError("The Gaussian fits differ in assume_centered; nested models estimate the same mean.")
    outside = (abs(small.adjacency_) > abs(big.adjacency_)).nonzero()
    if len(outside[0]):
        i, j = int(outside[0][0]), int(outside[1][0])
        raise ValueError(
            f"The models are not nested: edge ({i}, {j}) of small is not an edge of big. Give the smaller model "
            "first, with a graph contained in the bigger one's."
        )


def likelihood_ratio_test(small, big, X, sample_weight=None):
    """Likelihood-ratio test of a model against a bigger one that contains it.

    Parameters
    ----------
    small, big : fitted ExactMaxLikelihood, DecomposedEM or GaussianMaxLikelihood
        Maximum-likelihood fits of nested models to the same data: every clique (discrete) or
        edge (Gaussian) of ``small`` is one of ``big``'s. Fit both with ``alpha=0`` (or
        ``shrinkage=0``): a penalised fit is not maximum likelihood.
    X : array-like of shape (n_samples, n_features)
        The data both were fitted to.
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights (cell counts of a table, for example).

    Returns
    -------
    LikelihoodRatioTest
        ``(statistic, df, pvalue)``: ``2 (log L_big - log L_small)``, the difference of the
        numbers of free parameters, and the chi-squared p-value (Wilks). With complete data the
        statistic is the difference of the two deviances (``anova(small, big)`` in R).

    Raises
    ------
    ValueError
        Fits that are not nested (naming the clique or edge), of different families or
        columns, or with the same number of parameters; an estimator that is not a
        maximum-likelihood one.

    Warns
    -----
    PenalisedFitWarning
        When either fit was penalised.
    UserWarning
        When the bigger model fits the data worse than the smaller one (a statistic below
        ``-1e-6`` times the log-likelihood): a fit stopped early, so the test is not valid.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf import ExactMaxLikelihood
    >>> from skmrf.metrics import likelihood_ratio_test
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0], [1, 0, 1], [0, 1, 1], [1, 0, 0]] * 20)
    >>> small = ExactMaxLikelihood([(0, 1), (1, 2)], alpha=0).fit(X)
    >>> big = ExactMaxLikelihood([(0, 1, 2)], alpha=0).fit(X)
    >>> test = likelihood_ratio_test(small, big, X)
    >>> test.df
    2
    """
    for name, est in (("small", small), ("big", big)):
        if not (hasattr(est, "n_params_") and hasattr(est, "deviance") and hasattr(est, "score_samples")):
            raise ValueError(
                f"likelihood_ratio_test compares maximum-likelihood fits (ExactMaxLikelihood, DecomposedEM, "
                f"GaussianMaxLikelihood); {name} is a {type(est).__name__}."
            )
        check_is_fitted(est)
        warn_if_penalised(f"{name}={type(est).__name__}", est._penalty(), "likelihood-ratio test")
    _check_nested(small, big)
    df = big.n_params_ - small.n_params_
    if df <= 0:
        raise ValueError(
            f"big has {big.n_params_} free parameters and small {small.n_params_}: the bigger model must have more."
        )
    ll_small, ll_big = _log_likelihood(small, X, sample_weight), _log_likelihood(big, X, sample_weight)
    statistic = 2.0 * (ll_big - ll_small)
    if statistic < -1e-6 * max(1.0, abs(ll_big)):
        warn(
            f"The bigger model fits worse than the smaller one (log-likelihoods {ll_big:.6g} and {ll_small:.6g}): "
            "one of the fits is not at its maximum (not converged, or penalised), so the test is not valid.",
            UserWarning,
        )
    return LikelihoodRatioTest(statistic, int(df), float(chi2.sf(max(statistic, 0.0), df)))
