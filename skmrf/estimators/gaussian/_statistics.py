"""Deviance, AIC, BIC and standard errors of a Gaussian maximum-likelihood precision.

With ``S`` the maximum-likelihood covariance of ``n`` rows (divisor ``n``, centred at their
mean) and ``K`` the fitted precision, the deviance against the saturated (complete graph)
model is ``n (tr(S K) - log det(S K) - p)``: ``ggm::fitConGraph``'s ``dev``, which does not
change when ``S`` is scaled (an ``n - 1`` divisor gives ``K`` scaled back), and its degrees of
freedom are the absent edges. The observed information of the free entries of ``K`` (the
diagonal and the edges; canonical parameters, so it is the expected one) is
``I_ab = n/2 tr(Sigma E_a Sigma E_b)`` with ``Sigma = inv(K)`` and ``E_a`` the symmetric unit
matrix of entry ``a``; the mean is orthogonal to it and does not change the errors.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..._kernels.gaussian.max_likelihood import pattern_unknowns
from ..._utils._sklearn_compat import check_is_fitted
from .._statistics import LikelihoodStatisticsMixin, covariance_from_information

__all__ = ["GaussianStatisticsMixin", "MAX_INFORMATION_UNKNOWNS", "gaussian_information", "saturated_gaussian"]

#: ``standard_errors`` builds and inverts the dense information matrix of the free entries:
#: refused above this many (a 3,000 x 3,000 matrix is 72 MB and a second to invert).
MAX_INFORMATION_UNKNOWNS = 3000


def gaussian_information(Sigma, rows, cols, n):
    """``n/2 tr(Sigma E_a Sigma E_b)`` for the free entries ``a = (rows[a], cols[a])`` (``rows <= cols``)."""
    i, j = rows[:, None], cols[:, None]
    k, l = rows[None, :], cols[None, :]
    trace = (
        Sigma[j, k] * Sigma[l, i] + Sigma[j, l] * Sigma[k, i] + Sigma[i, k] * Sigma[l, j] + Sigma[i, l] * Sigma[k, j]
    )
    # E_a is e_i e_j^T + e_j e_i^T off the diagonal and e_i e_i^T on it: the four terms count a
    # diagonal entry's single unit twice.
    d = np.where(rows == cols, 2.0, 1.0)
    return 0.5 * n * trace / (d[:, None] * d[None, :])


def saturated_gaussian(X, weight, assume_centered, name):
    """The maximised Gaussian log-likelihood of the rows of X (their own mean and ML covariance), and ``n``."""
    n = float(len(X)) if weight is None else float(np.sum(weight))
    w = np.ones(len(X)) if weight is None else weight
    mean = np.zeros(X.shape[1]) if assume_centered else (w @ X) / n
    centred = X - mean
    S = (centred * w[:, None]).T @ centred / n
    sign, logdet = np.linalg.slogdet(S)
    if sign <= 0 or not np.isfinite(logdet):
        raise ValueError(
            f"{name}: the sample covariance of these {n:g} rows is singular (fewer rows than columns, or "
            "collinear columns), so the saturated Gaussian model has an unbounded likelihood and the deviance "
            "is infinite. Give more rows."
        )
    p = X.shape[1]
    return -0.5 * n * (p * np.log(2 * np.pi) + logdet + p), n


class GaussianStatisticsMixin(LikelihoodStatisticsMixin):
    """The statistics of a Gaussian maximum-likelihood precision (module docstring).

    ``standard_errors`` returns a ``(n_features, n_features)`` array: the standard error of every
    free entry of ``precision_`` at its place (both triangles), zero where the graph fixes the
    precision at zero.
    """

    @property
    def n_params_(self):
        """Free parameters: the diagonal and edges of the precision, plus the mean unless ``assume_centered``."""
        check_is_fitted(self)
        p = self.adjacency_.shape[0]
        return int(len(pattern_unknowns(self.adjacency_)[0]) + (0 if self.assume_centered else p))

    def _penalty(self):
        return None if not self.shrinkage else f"shrinkage={self.shrinkage!r}"

    def _saturated(self, X, weight):
        return saturated_gaussian(self._centred(X), weight, self.assume_centered, type(self).__name__)

    def _standard_errors(self, X, sample_weight):
        X = self._centred(X)
        n = float(len(X)) if sample_weight is None else float(np.sum(sample_weight))
        rows, cols = pattern_unknowns(self.adjacency_)
        if len(rows) > MAX_INFORMATION_UNKNOWNS:
            raise ValueError(
                f"{type(self).__name__}: standard errors need the dense information matrix of the "
                f"{len(rows):,} free entries of the precision, over the limit of {MAX_INFORMATION_UNKNOWNS:,}."
            )
        if not self.is_positive_definite_:
            raise ValueError(f"{type(self).__name__}: the fitted precision is not positive definite.")
        Sigma = np.linalg.inv(sp.csr_array(self.standardized_precision_).toarray())
        information = gaussian_information(Sigma, rows, cols, n)
        names = self.feature_names_in_ if hasattr(self, "feature_names_in_") else np.arange(Sigma.shape[0])
        cov = covariance_from_information(
            information,
            lambda a: f"precision entry ({names[rows[a]]}, {names[cols[a]]})",
            type(self).__name__,
        )
        se = np.zeros(Sigma.shape)
        se[rows, cols] = se[cols, rows] = np.sqrt(np.diag(cov)) / (self.scale_[rows] * self.scale_[cols])
        return se
