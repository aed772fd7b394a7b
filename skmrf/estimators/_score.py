"""``score`` as the mean of ``score_samples``, shared by every estimator."""

from __future__ import annotations

import numpy as np
from sklearn.base import DensityMixin

from .._utils.validation import check_mean_weights

__all__ = ["MeanScoreMixin"]


class MeanScoreMixin(DensityMixin):
    """Density estimators whose ``score`` is the mean of ``score_samples`` over the rows."""

    def score(self, X, y=None, sample_weight=None):
        """Mean log-likelihood per row (see :meth:`score_samples`); higher is better.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to score.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights: the mean is then weighted (a row with weight ``w`` counts as ``w`` rows).

        Returns
        -------
        float
            ``mean(score_samples(X))``, weighted by ``sample_weight``.
        """
        scores = self.score_samples(X)
        if sample_weight is None:
            return float(np.mean(scores))
        weight = check_mean_weights(sample_weight, len(scores), f"{type(self).__name__}.score")
        return float(weight @ scores / weight.sum())
