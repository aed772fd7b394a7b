"""Covariance selection on validated, standardised data: the solver run, its certificate and the
diagnosis of a likelihood without a maximum.

:func:`fit_covariance_selection` is GaussianMaxLikelihood's kernel: it forms the sample covariance
it needs (dense, on the pattern, or on its chordal embedding), runs the closed form (chordal
patterns), sparse Newton-CG, dense Newton or the regression algorithm, certifies the estimate by a
duality gap where it can and returns ``precision, info``. Failures are exceptions carrying column
indices (:class:`CollinearColumns`, :class:`NoMaximum`, :class:`ZeroVariance`,
:class:`EmbeddingTooLarge`); the estimator words them with the data's column names.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..._data.gaussian import covariance_on_pattern, dense_covariance_rows
from ..._solvers.spd import logdet_spd, logdet_spd_dense
from .chordal import ChordalPattern, chordal_max_likelihood, dual_bound
from .covariance_selection import newton_covsel, regression_covsel
from .lap import _SINGULAR_RTOL, LapPlan, assemble_symmetric, lap_from_covariance, lap_from_data, pattern_unknowns
from .lattice import detect_lattice
from .sparse_ml import sparse_max_likelihood

__all__ = [
    "CollinearColumns",
    "CovarianceSelectionFit",
    "EmbeddingTooLarge",
    "NoMaximum",
    "ZeroVariance",
    "fit_covariance_selection",
    "pattern_unknowns",
]


#: ``solver="auto"`` (above dense Newton's range) takes the regression solver where the chordal
#: embedding is dense in all but name: it stores at least this share of the lower triangle, on this
#: many variables. Measured (benchmarks/results/gaussian_solver_choice.txt, one BLAS thread, n =
#: 1000): on Erdos-Renyi patterns of mean degree 4 (embedding density 0.12-0.15 from p = 2500) the
#: regression solver took 5.7, 13.9 and 39.4 s at p = 2500, 3600 and 6084, the sparse one 6.6, 15.6
#: and 71.5 s; at p = 1024 (density 0.20) 1.08 s against 0.61 s. Lattices store less (the 13-point
#: pattern 0.03-0.06 from p = 2500, the 5-point 0.016-0.034), and there the regression solver
#: is far slower (the 13-point: not converged in 200 sweeps, 12.8-80 s); a recognised lattice keeps
#: the sparse solver whatever its density. The upper limit keeps the regression solver's peak of
#: about five dense p x p matrices near 2.5 GiB.
AUTO_REGRESSION_MIN_DENSITY = 0.1
AUTO_REGRESSION_MIN_FEATURES = 2500
AUTO_REGRESSION_MAX_FEATURES = 8192


class CovarianceSelectionFit(NamedTuple):
    """What :func:`fit_covariance_selection` ran and certified (NaN or -inf: not measured)."""

    solver: str
    n_iter: int
    residual: float
    converged: bool
    is_positive_definite: bool
    log_det: float
    #: The dense ``inv(precision)`` of dense Newton, else None.
    covariance: np.ndarray | None
    decrement: float
    objective: float
    lower_bound: float
    duality_gap: float
    embedding_bound: float
    cg_iterations: np.ndarray


class CollinearColumns(ValueError):
    """Neighbouring columns ``i[k], j[k]`` whose 2 x 2 sample covariance is singular."""

    def __init__(self, i, j, correlation):
        super().__init__(f"collinear neighbouring columns {list(zip(i.tolist(), j.tolist()))[:10]}")
        self.i, self.j, self.correlation = i, j, correlation


class ZeroVariance(ValueError):
    """Column ``column`` has zero sample variance."""

    def __init__(self, column):
        super().__init__(f"Column {column} has zero variance")
        self.column = column


class NoMaximum(ValueError):
    """The solver failed, or ended where the likelihood has no maximum.

    ``what`` says how; ``columns`` are those the fitted precision makes (numerically) linear
    combinations of the others (``what`` then ends where their names go); ``singular`` is the
    LAP error naming a singular 1-neighbourhood block when there is one, the likely cause.
    """

    def __init__(self, what, singular=None, columns=()):
        super().__init__(what)
        self.what, self.singular, self.columns = what, singular, columns


class EmbeddingTooLarge(ValueError):
    """The chordal embedding of the pattern stores more numbers than allowed."""

    def __init__(self, pattern):
        super().__init__(f"the chordal embedding stores {pattern.n_stored} numbers")
        self.pattern = pattern


def _check_collinear(d, i, j, s_ij):
    """Raise :class:`CollinearColumns` when two neighbours are (numerically) collinear.

    ``[inv(Theta)]_ij = S_ij`` on an edge needs the 2 x 2 block of ``S`` on ``{i, j}`` (a clique
    of the graph) to be positive definite; with ``|corr(x_i, x_j)| = 1`` the likelihood is
    unbounded. Same relative threshold as the singular blocks of GaussianLAP.
    """
    bad = ~(d[i] * d[j] - s_ij**2 > _SINGULAR_RTOL * d[i] * d[j])
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise CollinearColumns(i[bad], j[bad], s_ij[k] / np.sqrt(d[i[k]] * d[j[k]]))


def _check_edges(pattern, s):
    """:func:`_check_collinear` from the sample covariance ``s`` on the (lower) pattern."""
    upper = pattern.rows != pattern.cols
    _check_collinear(s[pattern.diagonal], pattern.cols[upper], pattern.rows[upper], s[upper])


class _Run:
    """One fit's inputs and the LAP diagnosis of a failure, computed once when needed."""

    def __init__(self, data, adjacency, n_unknowns, n_div, shrinkage, mu, tol, max_iter, decrement_tol, log, callback):
        self.data, self.adjacency, self.n_div, self.shrinkage, self.mu = data, adjacency, n_div, shrinkage, mu
        self.tol, self.max_iter, self.decrement_tol, self.log = tol, max_iter, decrement_tol, log
        self.callback = callback
        # The decrement rule on the dense solvers' scale: decrement_tol per unknown and row.
        self.threshold = None if decrement_tol is None else decrement_tol * n_unknowns / n_div
        self.singular = None
        self.solver = None
        self.n_iter = 0
        self.decrement = np.nan

    def singular_neighbourhood(self, S):
        """The GaussianLAP error naming a singular 1-neighbourhood block, or None.

        ``S`` is None on the sparse path: the LAP blocks are then read from the data.
        """
        if self.singular is None:
            try:
                plan = LapPlan(self.adjacency)
                if S is not None:
                    lap_from_covariance(S, plan)
                else:
                    lap_from_data(self.data, plan, self.n_div, self.shrinkage, self.mu)
            except ValueError as exc:
                self.singular = exc
            except np.linalg.LinAlgError:  # pragma: no cover - singular blocks raise ValueError
                pass
        return self.singular

    def fail(self, S, what, columns=()):
        raise NoMaximum(what, self.singular_neighbourhood(S), columns)

    def converged(self, resid):
        """Whether the solver stopped on ``tol`` or on the decrement rule."""
        if resid <= self.tol:
            return True
        return self.threshold is not None and self.decrement <= self.threshold

    def check_solution(self, S, theta_diag, s_diag, resid, is_pd):
        """Refuse a solution that is numerically singular, or failed where a neighbourhood is singular.

        With ``inv(Theta)_ii = S_ii`` at the optimum, ``Theta_ii S_ii`` is ``1 / (1 - R_i^2)`` for
        the fitted regression of ``x_i`` on the others: at ``1 / _SINGULAR_RTOL`` (GaussianLAP's
        threshold) ``x_i`` is (numerically) a linear combination of the others and the likelihood
        has no maximum.
        """
        bad = np.flatnonzero(~(theta_diag * s_diag < 1.0 / _SINGULAR_RTOL))
        if len(bad):
            self.fail(
                S,
                f"the fitted precision makes column{'s' if len(bad) > 1 else ''} {{columns}} (numerically) "
                "a linear combination of the others (Theta_ii * S_ii above 1e10)",
                bad,
            )
        converged = self.converged(resid)
        if (not converged or not is_pd) and self.singular_neighbourhood(S) is not None:
            solver = {"regression": "the regression solver"}.get(self.solver, "Newton's method")
            how = "did not converge" if not converged else "ended at a matrix that is not positive definite"
            self.fail(S, f"{solver} {how} in {self.n_iter} iterations")


def fit_covariance_selection(
    data,
    adjacency,
    n_div,
    *,
    solver,
    chordal,
    shrinkage,
    mu,
    tol,
    max_iter,
    decrement_tol,
    max_time=None,
    max_stored=np.inf,
    log,
    callback=None,
):
    """The maximum-likelihood precision on the pattern of ``adjacency``, standardised units.

    Parameters
    ----------
    data : StandardisedRows
        The validated, standardised rows.
    adjacency : scipy.sparse.csr_array of shape (p, p)
        The pattern (no diagonal).
    n_div : float
        The number of rows (or the sum of the weights).
    solver : {"auto", "sparse", "newton", "regression"}
        The solver; ``chordal=True`` turns ``"sparse"``, ``"newton"`` or ``"auto"`` into the closed
        form on a chordal pattern. ``"auto"`` (with ``chordal=True``): the regression solver where the
        chordal embedding is nearly dense (:func:`_dense_embedding`), else ``"sparse"``.
    chordal : bool
        Whether to look for a chordal pattern (and build the chordal embedding first).
    shrinkage, mu : float
        The ridge target of the sample covariance.
    tol, max_iter, decrement_tol, max_time
        The solvers' stopping rules (GaussianMaxLikelihood's parameters).
    max_stored : float
        The most numbers the chordal embedding may store (:class:`EmbeddingTooLarge` above).
    log : callable
        ``log(message, *args)``: verbose lines (sizes, the start, the certificate).
    callback : callable, optional
        ``callback(n_iter, **metrics)`` after each solver step: ``objective`` and ``kkt`` (dense
        Newton), ``change`` (regression), ``objective``, ``decrement``, ``residual``, ``n_cg``,
        ``cg_seconds`` and ``step_length`` (sparse Newton-CG).

    Returns
    -------
    precision : scipy.sparse.csr_array of shape (p, p)
    info : CovarianceSelectionFit
    """
    p = data.shape[0]
    rows, cols = pattern_unknowns(adjacency)
    run = _Run(data, adjacency, len(rows), n_div, shrinkage, mu, tol, max_iter, decrement_tol, log, callback)
    pattern = None
    if solver == "auto" and not chordal:
        raise ValueError("solver='auto' reads the chordal embedding: pass chordal=True.")
    if chordal:
        # cols >= rows: the lower triangle, as the chordal embedding stores it.
        pattern = ChordalPattern(cols, rows, p)
        log("chordal embedding: %d entries on the pattern, %d fill", len(rows), pattern.n_fill)
        if pattern.chordal:
            solver = "chordal"
    if solver == "auto":
        solver = "regression" if _dense_embedding(pattern) else "sparse"
    run.solver = solver
    if solver in ("chordal", "sparse"):
        return _fit_sparse(run, pattern, max_time, max_stored)
    return _fit_dense(run, rows, cols, pattern, max_time)


def _dense_embedding(pattern):
    """Whether ``solver="auto"`` takes the regression solver: the chordal embedding stores at least
    :data:`AUTO_REGRESSION_MIN_DENSITY` of the lower triangle, on :data:`AUTO_REGRESSION_MIN_FEATURES`
    to :data:`AUTO_REGRESSION_MAX_FEATURES` variables, and the pattern is no stencil on a grid (the
    regression solver converges slowly on lattices, and the sparse solver's torus preconditioner
    and cost warning are for them)."""
    p = pattern.p
    if not AUTO_REGRESSION_MIN_FEATURES <= p <= AUTO_REGRESSION_MAX_FEATURES:
        return False
    dense = pattern.n_stored / (p * (p + 1) / 2) >= AUTO_REGRESSION_MIN_DENSITY
    return dense and detect_lattice(pattern.rows, pattern.cols, p) is None


def _fit_dense(run, rows, cols, pattern=None, max_time=None):
    """Dense Newton or the regression solver on the dense sample covariance (``pattern``: the chordal
    embedding when the caller built one, for the certificate)."""
    p = run.data.shape[0]
    S = dense_covariance_rows(run.data, run.n_div, run.shrinkage, run.mu)
    if np.any(np.diag(S) <= 0):
        raise ZeroVariance(int(np.flatnonzero(np.diag(S) <= 0)[0]))
    upper = sp.triu(run.adjacency, k=1, format="coo")
    i, j = upper.row.astype(np.int64), upper.col.astype(np.int64)
    _check_collinear(np.diag(S), i, j, S[i, j])
    if run.solver == "newton":
        Theta, covariance, resid = _newton(run, S, rows, cols)
    else:
        Theta, W, resid = _regression(run, S, max_time)
        covariance = None
    is_pd, logdet = logdet_spd_dense(Theta)
    if not is_pd:
        bounds = (np.nan, -np.inf, np.nan)
    elif run.solver == "newton":
        bounds = _certificate(
            S[cols, rows], Theta[cols, rows], ChordalPattern(cols, rows, p) if pattern is None else pattern
        )
    else:
        bounds = _dense_certificate(S, Theta, logdet, W, rows, cols)
    run.check_solution(S, np.diag(Theta), np.diag(S), resid, is_pd)
    precision = assemble_symmetric(rows, cols, Theta[rows, cols], p)
    return precision, _info(run, resid, is_pd, logdet, covariance, *bounds, -np.inf, [])


def _newton_start(run, S):
    """The LAP estimate when it is positive definite (usually close to the optimum), else ``diag(1 / S_ii)``.

    A singular 1-neighbourhood block is remembered (the error GaussianLAP would raise) to explain
    a failure of Newton's method.
    """
    try:
        plan = LapPlan(run.adjacency)
        lap = assemble_symmetric(plan.ti, plan.tj, lap_from_covariance(S, plan), S.shape[0])
        if logdet_spd(lap)[0]:
            return lap.toarray()
    except ValueError as exc:
        run.singular = exc
    except np.linalg.LinAlgError:
        pass
    return np.diag(1.0 / np.diag(S))


def _newton(run, S, rows, cols):
    """Newton's method; return ``(Theta, covariance, residual)``."""
    theta0 = _newton_start(run, S)
    with warnings.catch_warnings():
        # An ill-conditioned Hessian is a symptom of a likelihood without a maximum,
        # diagnosed below from the result.
        warnings.simplefilter("ignore", sla.LinAlgWarning)
        Theta, W, run.n_iter, resid, run.decrement = newton_covsel(
            S,
            rows,
            cols,
            theta0,
            tol=run.tol,
            max_iter=run.max_iter,
            decrement_tol=run.threshold,
            callback=run.callback,
        )
    if not (np.all(np.isfinite(Theta)) and np.all(np.isfinite(W)) and np.isfinite(resid)):
        run.fail(S, "Newton's method diverged")
    return Theta, 0.5 * (W + W.T), resid


def _regression(run, S, max_time):
    """The modified regression algorithm; return ``(Theta, W, residual)`` (``W`` its working covariance)."""
    adj = run.adjacency
    neighbours = [adj.indices[adj.indptr[i] : adj.indptr[i + 1]] for i in range(S.shape[0])]
    try:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            Theta, W, run.n_iter, resid = regression_covsel(
                S, neighbours, tol=run.tol, max_iter=run.max_iter, max_time=max_time, callback=run.callback
            )
    except np.linalg.LinAlgError:
        run.fail(S, "the regression solver met a singular neighbourhood system")
    if not (np.all(np.isfinite(Theta)) and np.isfinite(resid)):
        run.fail(S, "the regression solver diverged")
    return Theta, W, resid


def _dense_certificate(S, Theta, logdet, W, rows, cols):
    """``(objective, lower_bound, duality_gap)`` of the regression solver's ``Theta`` (``log det`` given)
    from its working covariance ``W``: ``W`` with ``S`` put back on the pattern, when positive definite,
    is a completion of ``S`` and gives the bound ``p + log det`` of :func:`.chordal.dual_bound` (``W``
    is overwritten). One dense Cholesky factorisation: the certificate at any ``p`` the dense solver
    runs at, where the chordal embedding's fill can cost more than the solve.
    """
    weight = np.where(rows == cols, 1.0, 2.0)
    objective = -logdet + float(np.dot(weight * S[cols, rows], Theta[cols, rows]))
    W[rows, cols] = S[rows, cols]
    W[cols, rows] = S[cols, rows]
    is_pd, logdet = logdet_spd_dense(W)
    lower_bound = S.shape[0] + logdet if is_pd else -np.inf
    return objective, lower_bound, objective - lower_bound


def _certificate(s, x, pattern, Y=None, lower_bound=-np.inf):
    """``(objective, lower_bound, duality_gap)`` of the estimate ``x`` on ``pattern`` (NaN if none)."""
    if pattern is None:
        return np.nan, lower_bound, np.nan
    L, logdet = pattern.cholesky(x)
    if L is None:
        return np.nan, lower_bound, np.nan
    if Y is None:
        Y = pattern.inverse_on_pattern(L)[0]
    objective = -logdet + float(np.dot(pattern.weight * s, x))
    lower_bound = max(lower_bound, dual_bound(pattern, s, Y))
    return objective, lower_bound, objective - lower_bound


def _fit_sparse(run, pattern, max_time, max_stored):
    """The closed form (chordal pattern) or the sparse Newton-CG kernel."""
    if pattern.n_stored > max_stored:
        raise EmbeddingTooLarge(pattern)
    p = pattern.p
    embedding_bound, cg_iterations = -np.inf, []
    if run.solver == "chordal":
        s = covariance_on_pattern(run.data, pattern.rows, pattern.cols, run.n_div, run.shrinkage, run.mu)
        _check_edges(pattern, s)
        x, logdet = chordal_max_likelihood(pattern, s)
        if x is None:
            run.fail(None, "the sample covariance has no positive definite completion on this chordal graph")
        L = pattern.cholesky(x)[0]
        Y, w = pattern.inverse_on_pattern(L)
        resid = float(np.max(np.abs(w - s))) / float(np.max(s[pattern.diagonal]))
        bounds = _certificate(s, x, pattern, Y)
    else:
        fit = sparse_max_likelihood(
            run.data,
            pattern,
            run.n_div,
            run.shrinkage,
            run.mu,
            tol=run.tol,
            max_iter=run.max_iter,
            decrement_tol=run.decrement_tol,
            check=lambda s: _check_edges(pattern, s),
            max_time=max_time,
            log=run.log,
            callback=run.callback,
        )
        newton = fit.newton
        x, s, resid, logdet, run.n_iter = newton.x, fit.s, newton.residual, newton.log_det, newton.n_iter
        run.decrement, embedding_bound, cg_iterations = newton.decrement, fit.embedding_bound, newton.cg_iterations
        if not (np.all(np.isfinite(x)) and np.isfinite(resid)):  # pragma: no cover - steps keep definiteness
            run.fail(None, "Newton's method diverged")
        # The kernel certified its estimate already (a factorisation and a completion at p = 10^6).
        bounds = newton.objective, fit.lower_bound, newton.objective - fit.lower_bound
    run.check_solution(None, x[:p], s[:p], resid, True)
    precision = assemble_symmetric(pattern.cols, pattern.rows, x, p)
    return precision, _info(run, resid, True, logdet, None, *bounds, embedding_bound, cg_iterations)


def _info(run, resid, is_pd, logdet, covariance, objective, lower_bound, gap, embedding_bound, cg_iterations):
    return CovarianceSelectionFit(
        run.solver,
        run.n_iter,
        resid,
        run.converged(resid),
        is_pd,
        logdet,
        covariance,
        run.decrement,
        objective,
        lower_bound,
        gap,
        embedding_bound,
        np.asarray(cg_iterations, dtype=np.int64),
    )
