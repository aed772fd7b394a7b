"""``score`` as the mean of ``score_samples``, shared by every estimator."""

from __future__ import annotations

import numpy as np
from sklearn.base import DensityMixin

__all__ = ["MeanScoreMixin"]


class MeanScoreMixin(DensityMixin):
    """Density estimators whose ``score`` is the mean of ``score_samples`` over the rows."""

    def score(self, X, y=None):
        """Mean log-likelihood per row (see :meth:`score_samples`); higher is better.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to score.
        y : None
            Ignored.

        Returns
        -------
        float
            ``mean(score_samples(X))``.
        """
        return float(np.mean(self.score_samples(X)))
