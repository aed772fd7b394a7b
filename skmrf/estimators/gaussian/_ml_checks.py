"""The checks and diagnostics of GaussianMaxLikelihood: collinear columns, singular neighbourhoods,
solutions that are not a maximum, sizes, convergence.

A mixin of :class:`~skmrf.estimators.gaussian.GaussianMaxLikelihood`, kept apart so that the
estimator's module holds its parameters, its solvers' calls and its docstring.
"""

from __future__ import annotations

import numpy as np

from ..._kernels.gaussian.lap import _SINGULAR_RTOL, LapPlan, lap_from_covariance, lap_from_data
from ..._solvers import warn_not_converged
from ..._solvers.spd import logdet_spd_dense
from ..._utils._warnings import warn
from ._base import NotPositiveDefiniteWarning, _column_name

__all__ = []


class _MaxLikelihoodChecks:
    """Refusals, failure explanations and warnings of the maximum-likelihood fit."""

    def _check_collinear_edges(self, d, i, j, s_ij):
        """Raise when two neighbours are (numerically) collinear: no maximum-likelihood estimate.

        ``[inv(Theta)]_ij = S_ij`` on an edge needs the 2 x 2 block of ``S`` on
        ``{i, j}`` (a clique of the graph) to be positive definite; with
        ``|corr(x_i, x_j)| = 1`` the likelihood is unbounded. Same relative
        threshold as the singular blocks of GaussianLAP.
        """
        bad = ~(d[i] * d[j] - s_ij**2 > _SINGULAR_RTOL * d[i] * d[j])
        if not bad.any():
            return
        names = getattr(self, "feature_names_in_", None)
        pairs = [f"({_column_name(a, names)}, {_column_name(b, names)})" for a, b in zip(i[bad][:10], j[bad][:10])]
        k = int(np.flatnonzero(bad)[0])
        corr = s_ij[k] / np.sqrt(d[i[k]] * d[j[k]])
        raise ValueError(
            f"GaussianMaxLikelihood: the sample covariance of neighbouring columns "
            f"{', '.join(pairs)}{', ...' if bad.sum() > 10 else ''} is singular (the first pair has "
            f"correlation {corr:.17g}): one is (numerically) a multiple of the other in this sample, so "
            "the likelihood is unbounded and has no maximum. Remove duplicated or collinear columns, "
            "collect more samples, or set shrinkage > 0."
        )

    def _singular_neighbourhood(self, S):
        """The GaussianLAP error naming a singular 1-neighbourhood block of ``S``, or None.

        ``S`` is None on the sparse path: the LAP blocks are then read from the data.
        """
        if self._singular is None:
            try:
                plan = LapPlan(self.adjacency_)
                if S is not None:
                    lap_from_covariance(S, plan)
                else:
                    data, n_div, mu = self._data
                    lap_from_data(data, plan, n_div, self.shrinkage, mu)
            except ValueError as exc:
                self._singular = exc
            except np.linalg.LinAlgError:  # pragma: no cover - singular blocks raise ValueError
                pass
        return self._singular

    def _fail(self, S, what):
        """Raise the error explaining a failed fit: a singular neighbourhood if there is one."""
        singular = self._singular_neighbourhood(S)
        if singular is not None:
            raise ValueError(
                f"GaussianMaxLikelihood: {what}, and the maximum-likelihood estimate probably does not "
                f"exist: {singular}"
            ) from None
        raise ValueError(
            f"GaussianMaxLikelihood: {what}; the maximum-likelihood estimate probably does not exist "
            f"with this sample (n = {self._n_samples}). Collect more samples or set shrinkage > 0."
        )

    def _converged(self, resid):
        """Whether the solver stopped on ``tol`` or on the decrement rule."""
        if resid <= self.tol:
            return True
        return self._threshold is not None and self.decrement_ <= self._threshold

    def _check_solution(self, S, theta_diag, s_diag, resid, is_pd):
        """Refuse a solution that is numerically singular, or failed where a neighbourhood is singular.

        With ``inv(Theta)_ii = S_ii`` at the optimum, ``Theta_ii S_ii`` is
        ``1 / (1 - R_i^2)`` for the fitted regression of ``x_i`` on the
        others: at ``1 / _SINGULAR_RTOL`` (GaussianLAP's threshold) ``x_i`` is
        (numerically) a linear combination of the others and the likelihood
        has no maximum.
        """
        ratio = theta_diag * s_diag
        bad = np.flatnonzero(~(ratio < 1.0 / _SINGULAR_RTOL))
        if len(bad):
            names = getattr(self, "feature_names_in_", None)
            cols = ", ".join(_column_name(int(j), names) for j in bad[:10]) + (", ..." if len(bad) > 10 else "")
            self._fail(
                S,
                f"the fitted precision makes column{'s' if len(bad) > 1 else ''} {cols} (numerically) a "
                "linear combination of the others (Theta_ii * S_ii above 1e10)",
            )
        converged = self._converged(resid)
        if not converged or not is_pd:
            if self._singular_neighbourhood(S) is not None:
                solver = {"regression": "the regression solver"}.get(self.solver_, "Newton's method")
                how = "did not converge" if not converged else "ended at a matrix that is not positive definite"
                self._fail(S, f"{solver} {how} in {self.n_iter_} iterations")

    def _warn_if_not_converged(self, resid):
        """ConvergenceWarning when the solver stopped above ``tol`` (and above the decrement rule)."""
        if self._converged(resid):
            return
        measure = (
            "the largest change of the working covariance in the last sweep (in standardised units) is"
            if self.solver_ == "regression"
            else "the optimality residual max |inv(Theta) - S| over the pattern (in standardised units) is"
        )
        gap = f"; the certified duality gap is {self.duality_gap_:.3g}" if np.isfinite(self.duality_gap_) else ""
        warn_not_converged(
            f"GaussianMaxLikelihood (solver={self.solver_!r})",
            f"in {self.n_iter_} iterations: {measure} {resid:.3g} > tol={self.tol:g}{gap}",
            "Increase max_iter, loosen tol, or add samples or shrinkage (the maximum-likelihood "
            "estimate may not exist when n is small).",
        )

    @staticmethod
    def _positive_definite(Theta):
        """``(is_pd, logdet)`` of the dense solution; warn when it is not positive definite."""
        is_pd, logdet = logdet_spd_dense(Theta)
        if not is_pd:
            warn(
                "The maximum-likelihood iterations ended at a precision that is not positive "
                "definite; is_positive_definite_ is False.",
                NotPositiveDefiniteWarning,
            )
        return is_pd, logdet

    def _check_dense_size(self, p):
        """Refuse a dense problem that does not fit (after ``solver="auto"`` chose a dense solver)."""
        if p > self.DENSE_MAX_FEATURES:  # pragma: no cover - _choose_solver refuses first
            raise ValueError(f"{p} variables are too many for the dense solvers; use solver='sparse'.")

    def _check_sparse_size(self, pattern):
        """Refuse a chordal embedding too large to store (a pattern with a wide elimination order)."""
        if pattern.n_stored > self.SPARSE_MAX_STORED:
            raise ValueError(
                f"GaussianMaxLikelihood(solver='sparse'): the sparse Cholesky factor of this pattern "
                f"({pattern.p} variables, {len(pattern.rows) - pattern.p} edges) has {pattern.n_fill} fill-in "
                f"entries and stores {pattern.n_stored} numbers ({8 * pattern.n_stored / 2**30:.1f} GiB per "
                "matrix, several matrices are needed): the graph has no narrow elimination order (random "
                "graphs do not). Use GaussianLAP, or a sparser or more local graph."
            )

    def _check_edges(self, pattern, s):
        """Refuse collinear neighbours, from the sample covariance ``s`` on the (lower) pattern."""
        upper = pattern.rows != pattern.cols
        self._check_collinear_edges(s[pattern.diagonal], pattern.cols[upper], pattern.rows[upper], s[upper])
