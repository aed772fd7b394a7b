"""What a statistician reads off a maximum-likelihood fit: deviance, AIC, BIC, standard errors.

scikit-learn's names and signs where it has them (``GaussianMixture.aic`` / ``bic``: lower is
better, ``-2 log L + 2 k`` and ``-2 log L + k log n`` with ``log L`` summed over the rows); R's
where it does not (``deviance`` against the saturated model, as ``glm`` / ``loglm`` /
``ggm::fitConGraph`` report it; ``n_params_`` as ``logLik``'s ``df``). Each family supplies the
per-row log-likelihood (``score_samples``), the saturated log-likelihood of the same rows, its
number of free parameters and its information matrix; every statistic warns when the fit was
penalised, since it is then not maximum likelihood.
"""

from __future__ import annotations

import numpy as np

from .._utils._sklearn_compat import check_is_fitted
from .._utils._warnings import warn
from .._utils.validation import check_count_weights
from ..exceptions import PenalisedFitWarning

__all__ = [
    "DiscreteStatisticsMixin",
    "LikelihoodStatisticsMixin",
    "covariance_from_information",
    "describe_parameter",
    "saturated_log_likelihood",
    "warn_if_penalised",
]


def saturated_log_likelihood(Xi, weight):
    """``sum_r n_r log(n_r / N_m)``: the saturated model of the distinct rows of each missing pattern.

    ``Xi`` holds states with ``-1`` where missing. Rows with the same missing entries form a
    pattern ``m`` of ``N_m`` (summed weight) rows, whose observed parts are a multinomial sample:
    its saturated fit gives each distinct row its frequency ``n_r / N_m``. With complete data this
    is the saturated log-linear model of ``glm`` / ``loglm``; with missing entries it is the
    saturated model of each pattern's observed margin (Little and Rubin, Section 13.4), so the
    deviance stays a likelihood-ratio statistic (non-negative at the maximum likelihood).
    """
    rows, inverse = np.unique(Xi, axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=weight, minlength=len(rows))
    _, pattern = np.unique(rows < 0, axis=0, return_inverse=True)
    pattern = pattern.ravel()
    totals = np.bincount(pattern, weights=counts)
    seen = counts > 0
    return float(np.sum(counts[seen] * np.log(counts[seen] / totals[pattern[seen]])))


def warn_if_penalised(name, penalty, what):
    """Warn that ``what`` of a fit penalised by ``penalty`` (None: not penalised) is not maximum likelihood."""
    if penalty is None:
        return
    knob = "shrinkage" if "shrinkage" in penalty else "alpha"
    warn(
        f"{name} was fitted with {penalty}: a penalised fit, not maximum likelihood, so its {what} "
        f"are not the maximum-likelihood ones (nor are tests built on them). Refit with {knob}=0 for "
        "maximum-likelihood statistics.",
        PenalisedFitWarning,
    )


def covariance_from_information(information, describe, name):
    """``inv(information)``, refusing a singular matrix by naming the least determined parameter.

    ``describe(a)`` names parameter ``a`` in the message.
    """
    values, vectors = np.linalg.eigh(0.5 * (information + information.T))
    scale = max(float(np.abs(values).max()), np.finfo(float).tiny)
    if values[0] <= 1e3 * len(values) * np.finfo(float).eps * scale:
        worst = int(np.argmax(np.abs(vectors[:, 0])))
        raise ValueError(
            f"{name}: the information matrix is singular (smallest eigenvalue {values[0]:.3g}, largest "
            f"{values[-1]:.3g}), so the standard errors are infinite: {describe(worst)} is not determined by "
            "the data (with alpha=0, a state or combination never observed has no finite maximum-likelihood "
            "estimate). Merge rare states, drop the clique, or fit with alpha > 0."
        )
    return (vectors / values) @ vectors.T


class LikelihoodStatisticsMixin:
    """``aic``, ``bic``, ``deviance`` and ``standard_errors`` of a maximum-likelihood fit.

    The class provides ``score_samples(X)`` (per-row log-likelihood), ``n_params_``,
    ``_saturated(X, weight)`` (the saturated log-likelihood of the same rows and the number
    of rows ``n`` for BIC), ``_information_covariance(X, weight)`` (the inverse information,
    and the shape of the standard errors) and ``_penalty()`` (None for maximum likelihood, else
    the penalty named as the user set it).
    """

    def _warn_if_penalised(self, what):
        warn_if_penalised(type(self).__name__, self._penalty(), what)

    def _log_likelihood(self, X, sample_weight):
        """``sum_i w_i log p(x_i)``, the weights and the per-row scores."""
        scores = self.score_samples(X)
        if sample_weight is None:
            return float(scores.sum()), None
        weight = check_count_weights(sample_weight, len(scores), type(self).__name__)
        return float(weight @ scores), weight

    def deviance(self, X, sample_weight=None):
        """Twice the log-likelihood ratio of the saturated model and the fit, on X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data (the training data for the goodness-of-fit deviance R reports).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights (counts of a contingency table's cells, for example).

        Returns
        -------
        float
            ``2 (log L_saturated(X) - log L(X))``: ``G^2`` of a log-linear model (discrete;
            ``glm`` / ``loglm``'s deviance), ``n (tr(S K) - log det(S K) - p)`` of a Gaussian
            one (``ggm::fitConGraph``'s ``dev``). Differences between nested fits are
            likelihood-ratio statistics.

        Warns
        -----
        PenalisedFitWarning
            When the fit was penalised (then it is not maximum likelihood).
        """
        check_is_fitted(self)
        self._warn_if_penalised("deviance and its tests")
        ll, weight = self._log_likelihood(X, sample_weight)
        saturated, _ = self._saturated(X, weight)
        return 2.0 * (saturated - ll)

    def aic(self, X, sample_weight=None):
        """Compute Akaike's information criterion on X: ``-2 log L + 2 n_params_`` (lower is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.

        Returns
        -------
        float
            The criterion, ``log L`` the (weighted) sum of :meth:`score_samples`.

        Warns
        -----
        PenalisedFitWarning
            When the fit was penalised.
        """
        check_is_fitted(self)
        self._warn_if_penalised("AIC values")
        ll, _ = self._log_likelihood(X, sample_weight)
        return -2.0 * ll + 2.0 * self.n_params_

    def bic(self, X, sample_weight=None):
        """Compute Schwarz's Bayesian information criterion on X: ``-2 log L + n_params_ log n`` (lower is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights; ``n`` is their sum (the rows with an observed entry, for
            incomplete data).

        Returns
        -------
        float
            The criterion.

        Warns
        -----
        PenalisedFitWarning
            When the fit was penalised.
        """
        check_is_fitted(self)
        self._warn_if_penalised("BIC values")
        ll, weight = self._log_likelihood(X, sample_weight)
        _, n = self._saturated(X, weight)
        return -2.0 * ll + self.n_params_ * np.log(n)

    def standard_errors(self, X, sample_weight=None):
        """Standard errors of the fitted parameters: the inverse observed information of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data the model was fitted to (their number of rows scales the information).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, as in ``fit``.

        Returns
        -------
        ndarray
            One standard error per parameter (see the class's documentation for the shape).

        Raises
        ------
        ValueError
            When the information matrix is singular (a parameter the data do not determine,
            named in the message).

        Warns
        -----
        PenalisedFitWarning
            When the fit was penalised: the errors then come from the curvature of the
            penalised objective (the Laplace approximation of the posterior under the Gaussian
            prior that the ridge is), not from the likelihood alone.
        """
        check_is_fitted(self)
        self._warn_if_penalised("standard errors")
        return self._standard_errors(X, sample_weight)


def describe_parameter(model, a):
    """``"the parameter of clique (0, 2) at states (1, 1)"`` for entry ``a`` of ``theta``."""
    lay = model.layout
    b = int(np.searchsorted(lay.block_offsets, a, side="right")) - 1
    states = tuple(int(s) + 1 for s in np.unravel_index(a - lay.block_offsets[b], lay.block_shapes[b]))
    clique = tuple(model.graph.name(v) for v in lay.cliques[b])
    return f"the parameter of clique {clique} at states {states}"


class DiscreteStatisticsMixin(LikelihoodStatisticsMixin):
    """The statistics of a discrete maximum-likelihood fit (``theta_`` normalised with respect to zero).

    ``standard_errors`` returns one per entry of ``theta_`` (same order); the information of
    ``N`` rows is the class's ``_information(Xi, weight, total)``.
    """

    @property
    def n_params_(self):
        """Free parameters of the fitted model (``len(theta_)``; the ``df`` of R's ``logLik``)."""
        check_is_fitted(self)
        return int(self.model_.n_params)

    def _penalty(self):
        if self.alpha_ == 0:
            return None
        centred = ", a ridge on the centred parameters" if isinstance(self.alpha, str) else ""
        return f"alpha={self.alpha!r} (alpha_={self.alpha_:.3g}{centred})"

    def _rows(self, X, weight):
        """Validated states (``-1`` where missing), their weights, and which rows have an observed entry."""
        Xi = self._validate_score_data(X, allow_nan=self._allow_missing)
        weight = np.ones(len(Xi)) if weight is None else weight
        return Xi, weight, ~(Xi < 0).all(axis=1)

    def _saturated(self, X, weight):
        Xi, weight, seen = self._rows(X, weight)
        return saturated_log_likelihood(Xi[seen], weight[seen]), float(weight[seen].sum())

    def _standard_errors(self, X, sample_weight):
        Xi, weight, seen = self._rows(X, None)
        if sample_weight is not None:
            weight = check_count_weights(sample_weight, len(Xi), type(self).__name__)
        information = self._information(Xi[seen], weight[seen], float(weight[seen].sum()))
        cov = covariance_from_information(
            information, lambda a: describe_parameter(self.model_, a), type(self).__name__
        )
        return np.sqrt(np.diag(cov))
