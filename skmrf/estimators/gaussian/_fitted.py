"""What a fitted Gaussian MRF offers, scikit-learn's covariance-estimator API: the precision,
Mahalanobis distances, per-row log-likelihoods and error norms, all computed in standardised units
by chunks of rows (no transposed copy of X)."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..._data.gaussian import NON_FINITE_ADVICE
from ..._kernels.gaussian.lap import CHUNK_ENTRIES
from ..._solvers.spd import min_eigenvalue
from ..._utils._sklearn_compat import (
    check_is_fitted,
    validate_data,
)
from ..._utils.validation import (
    check_column_labels,
    check_real,
    column_names,
)

__all__ = ["DENSE_MAX_FEATURES", "FittedGaussianMixin"]

#: Largest number of variables for which ``store_covariance="auto"`` keeps the
#: dense covariance.
DENSE_MAX_FEATURES = 2000


class FittedGaussianMixin:
    """Scoring and queries of a fitted ``_BaseGaussianMRF`` (``precision_``, ``location_``, ``scale_``...)."""

    # -- the covariance-estimator API ----------------------------------------
    def get_precision(self):
        """The fitted precision matrix.

        Returns
        -------
        precision : ndarray or scipy.sparse.csr_array of shape (n_features, n_features)
            Same object as ``precision_``: a dense ndarray for at most 5000
            features with ``sparse="auto"`` (or with ``sparse=False``), a
            sparse array otherwise.
        """
        check_is_fitted(self)
        return self.precision_

    def _centred(self, X):
        """Validated X (finite, real), its columns in the fitted model's order."""
        check_is_fitted(self)
        check_column_labels(self, X)
        X = validate_data(self, X, reset=False, dtype=None, ensure_all_finite=False)
        return check_real(X, column_names(self), advice=NON_FINITE_ADVICE)

    def _quadratic_rows(self, X):
        """``z^T Theta_std z`` for every row of the validated X, ``z = (x - location_) / scale_``.

        By chunks of rows (about ``CHUNK_ENTRIES`` values each), each centred, standardised and
        transposed: no transposed copy of the whole of X (as large as X: 8 GB for 1000 rows of
        10^6 variables).
        """
        n, p = X.shape
        out = np.empty(n)
        step = max(1, CHUNK_ENTRIES // max(1, p))
        for a in range(0, n, step):
            XT = X[a : a + step].T.copy()  # C order: one row per variable, as the products want
            XT -= self.location_[:, None]
            with np.errstate(over="ignore", under="ignore"):
                XT /= self.scale_[:, None]
            out[a : a + step] = self._quadratic(XT)
        return out

    def _quadratic(self, XT):
        """``x^T Theta x`` for every column of ``XT`` (standardised), with the sparse precision.

        ``z^T Theta_std z`` with ``z = (x - location_) / scale_``, which equals
        ``(x - location_)^T precision_ (x - location_)`` and stays finite when
        ``precision_`` under- or overflows. Works through blocks of rows of the
        precision, so the temporary memory is bounded; ``O(nnz(Theta) n)`` time.
        """
        p, n = XT.shape
        out = np.zeros(n)
        P = self.standardized_precision_
        step = max(1, CHUNK_ENTRIES // max(1, n))
        for s in range(0, p, step):
            out += np.einsum("ij,ij->j", P[s : s + step] @ XT, XT[s : s + step])
        return out

    def mahalanobis(self, X):
        """Squared Mahalanobis distances of the rows of X under the fitted model.

        ``(x - location_)^T precision_ (x - location_)``, with the sparse
        precision (linear in its number of non-zeros).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations (finite real values); distances are measured from
            ``location_``.

        Returns
        -------
        dist : ndarray of shape (n_samples,)
            Squared Mahalanobis distance of each row.
            Negative values are possible only if ``is_positive_definite_`` is False.
        """
        return self._quadratic_rows(self._centred(X))

    def score_samples(self, X):
        """Gaussian log-density of each row under the fitted model.

        ``-(x - mu)^T Theta (x - mu) / 2 - log_partition_`` with
        ``log_partition_ = (p log(2 pi) - log det Theta) / 2``, the
        log-determinant taken from a sparse factorisation at fit time. Their mean,
        :meth:`score`, equals scikit-learn's ``EmpiricalCovariance.score`` for the
        same ``location_`` and precision: ``X`` is centred by ``location_``, not by
        its own mean.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations to score (finite real values).

        Returns
        -------
        ndarray of shape (n_samples,)
            The log-density of each row.

        Raises
        ------
        ValueError
            If the fitted precision is not positive definite (no density).
        """
        X = self._centred(X)
        if not self.is_positive_definite_:
            raise ValueError(
                f"The precision fitted by {type(self).__name__} is not positive definite "
                f"({self._smallest_eigenvalue()}), so it defines no Gaussian density (exp(-x'Px/2) is not "
                f"integrable) and no log-likelihood. Refit with {self._pd_advice}."
            )
        return -0.5 * self._quadratic_rows(X) - self.log_partition_

    def _smallest_eigenvalue(self):
        """``"smallest eigenvalue ..."`` of ``standardized_precision_`` for the error of :meth:`score_samples`
        (dense to rounding up to 500 variables, Lanczos to 1e-6 relative up to 5000, not computed above)."""
        P = sp.csr_array(self.standardized_precision_)
        if P.shape[0] > 5000:
            return f"its smallest eigenvalue was not computed for {P.shape[0]} variables"
        value, _ = min_eigenvalue(P, 1e-6)
        return f"smallest eigenvalue {value:.4g} of standardized_precision_, the precision of the standardised columns"

    def error_norm(self, comp_cov, norm="frobenius", scaling=True, squared=True):
        """Error between ``comp_cov`` and ``covariance_`` (as ``EmpiricalCovariance.error_norm``).

        Only available when the dense covariance is stored (see
        ``store_covariance``). To compare precisions on large problems,
        use ``scipy.sparse.linalg.norm(est.precision_ - true_precision)``.

        Parameters
        ----------
        comp_cov : array-like of shape (n_features, n_features)
            The covariance to compare with.
        norm : {"frobenius", "spectral"}, default="frobenius"
            The norm of the difference ``comp_cov - covariance_``: the
            Frobenius norm, or the spectral norm (largest singular value).
        scaling : bool, default=True
            Divide the squared norm by ``n_features``.
        squared : bool, default=True
            Return the squared norm.

        Returns
        -------
        float
            The (squared, scaled) norm of ``comp_cov - covariance_``.

        Raises
        ------
        ValueError
            If ``comp_cov`` is not ``n_features x n_features`` or
            ``covariance_`` was not stored.
        """
        check_is_fitted(self)
        comp_cov = np.asarray(comp_cov, dtype=np.float64)
        p = self.n_features_in_
        if comp_cov.shape != (p, p):
            raise ValueError(f"comp_cov has shape {comp_cov.shape}; expected ({p}, {p}) (n_features_in_ = {p}).")
        if self.covariance_ is None:
            raise ValueError(
                "covariance_ was not stored (store_covariance=False, more than "
                f"{DENSE_MAX_FEATURES} features with store_covariance='auto', or a precision "
                "that is not positive definite); error_norm compares dense covariances."
            )
        error = comp_cov - self.covariance_
        if norm == "frobenius":
            sq = float(np.sum(error**2))
        elif norm == "spectral":
            sq = float(np.amax(sla.svdvals(error.T @ error)))
        else:
            raise NotImplementedError("Only spectral and frobenius norms are implemented")
        if scaling:
            sq /= error.shape[0]
        return sq if squared else float(np.sqrt(sq))
