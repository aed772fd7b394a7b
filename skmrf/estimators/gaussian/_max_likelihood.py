"""GaussianMaxLikelihood: covariance selection, the maximum-likelihood precision with a known pattern.

The accuracy baseline for :class:`~skmrf.estimators.gaussian.GaussianLAP`
(Dempster, 1972); the solvers are in :mod:`skmrf._kernels.gaussian`.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from ..._kernels.gaussian.max_likelihood import (
    CollinearColumns,
    EmbeddingTooLarge,
    NoMaximum,
    ZeroVariance,
    fit_covariance_selection,
    pattern_unknowns,
)
from ..._solvers import warn_not_converged
from ..._utils._docstrings import fill_doc
from ..._utils._progress import Progress
from ..._utils._sklearn_compat import Interval, StrOptions
from ..._utils._warnings import warn
from ...exceptions import NotPositiveDefiniteWarning
from ._base import _BaseGaussianMRF, _column_name, gaussian_step_line
from ._statistics import GaussianStatisticsMixin

__all__ = ["GaussianMaxLikelihood"]


@fill_doc
class GaussianMaxLikelihood(GaussianStatisticsMixin, _BaseGaussianMRF):
    """Maximum-likelihood precision of a Gaussian MRF with a known zero pattern.

    Covariance selection (Dempster, 1972): maximise the Gaussian likelihood
    over precision matrices that are zero outside the graph. The solution
    ``Theta`` is characterised by ``inv(Theta)`` equalling the sample
    covariance on the diagonal and on every edge. This is the accuracy
    baseline for :class:`GaussianLAP`. Chordal patterns (trees, chains,
    complete graphs) get the closed form; large patterns are solved on a
    sparse chordal embedding with no dense ``p x p`` matrix.

    Parameters
    ----------
    graph : networkx.Graph, list of tuples, array-like, sparse matrix or str, default="chain"
        The zero pattern of the precision, in any form accepted by
        :class:`GaussianLAP`. Resolved in ``fit`` into ``adjacency_``.

    assume_centered : bool, default=False
        If True, the data are not centred and ``location_`` is zero.

    shrinkage : float in [0, 1), default=0.0
        Fit to ``(1 - shrinkage) * S + shrinkage * mu * I`` (``mu`` the mean
        sample variance) instead of the sample covariance ``S``.

    solver : {"auto", "sparse", "newton", "regression"}, default="auto"
        ``"sparse"``: the closed form when the pattern is chordal (the
        inverse of the maximum-determinant completion of ``S``, no
        iteration), else Newton-CG on a sparse chordal embedding of the
        pattern (Dahl, Vandenberghe & Roychowdhury, 2008): the gradient needs
        ``inv(Theta)`` only on the pattern (a projected inverse from a sparse
        Cholesky factor), Hessian-vector products are sparse multifrontal
        computations, and the sample covariance is formed on the pattern
        only. Memory and time grow with the fill of the Cholesky factor:
        near-linear on lattices and other local graphs, prohibitive on
        random graphs with many variables (refused, with the figures, beyond
        300 million stored entries).
        ``"newton"``: dense Newton's method on the non-zeros with the exact
        Hessian (quadratic convergence; ``O(q^2)`` memory and ``O(q^3)``
        time per iteration for ``q = p + n_edges`` unknowns).
        ``"regression"``: the modified regression algorithm of Hastie,
        Tibshirani & Friedman on dense ``p x p`` matrices (``O(p^2 d)`` per
        sweep for degree ``d``, linear convergence: fast on well-conditioned
        problems, slow on ill-conditioned ones such as lattice Laplacians).
        The dense solvers refuse more than 20,000 variables.
        ``"auto"``: the closed form on chordal patterns, ``"newton"`` when
        ``q <= 300``, ``"regression"`` from 2500 to 8192 variables when the
        chordal embedding stores at least a tenth of the lower triangle
        (random graphs, not lattices), else ``"sparse"`` (measured:
        the fastest, or within 1.2x of it, on lattice and random patterns
        from 50 to 6084 variables; ``solver_`` says which ran).

    max_iter : int, default=200
        Maximum Newton iterations or regression sweeps.

    tol : float, default=1e-10
        Measured in standardised units (``|A_ij| / (scale_i scale_j)``, see
        ``scale_``), so that every entry converges whatever the scales of the
        columns. Newton (dense or sparse): stop when ``max |inv(Theta) - S|``
        over the diagonal and the edges is at most ``tol``. Regression: stop when a sweep
        changes no entry of the working covariance by more than ``tol``.
        With the default ``decrement_tol`` Newton usually stops earlier, at
        statistical precision.

    decrement_tol : float or None, default=1e-3
        Newton (dense or sparse) also stops when the Newton decrement
        ``lambda`` satisfies ``lambda^2 / 2 <= decrement_tol * q / n`` (``q``
        unknowns: variables plus edges; ``n`` rows, or the sum of the weights).
        ``lambda^2 / 2`` estimates how far the objective is from its optimum,
        and ``q / n`` is the objective's own sampling noise (see Notes), so the
        default stops at a thousandth of what the data can resolve. None: stop
        on ``tol`` only (the exact optimum). Not used by the regression solver.

    max_time : float or None, default=None
        Sparse solver: stop at the first Newton iterate reached more than
        this many seconds after the iterations began (a CG solve is cut short
        to end near the limit too); regression solver: after the first sweep
        that ends past it. Either with a
        :class:`~sklearn.exceptions.ConvergenceWarning` quoting the certified
        ``duality_gap_`` unless a stopping rule was met. None: no limit.

    store_covariance : bool or "auto", default="auto"
        Keep ``covariance_ = inv(precision_)`` (dense). ``"auto"``: for at
        most 2000 features.

    %(gaussian_sparse)s

    verbose : int, default=0
        Print the objective and the optimality residual at each iteration.

    Attributes
    ----------
    location_ : ndarray of shape (n_features,)
        Estimated mean.

    precision_ : ndarray or scipy.sparse.csr_array of shape (n_features, n_features)
        The ML precision, zero outside the graph.

    covariance_ : ndarray of shape (n_features, n_features) or None
        ``inv(precision_)`` if stored.

    adjacency_ : scipy.sparse.csr_array of bool, shape (n_features, n_features)
        The resolved graph.

    is_positive_definite_ : bool
        True unless the iterations stopped (with a warning) at a matrix that
        is not positive definite.

    log_partition_ : float
        ``(p log(2 pi) - log det precision_) / 2``.

    %(gaussian_scale_)s

    solver_ : str
        The solver used: ``"chordal"`` (closed form), ``"sparse"``,
        ``"newton"`` or ``"regression"``.

    n_iter_ : int
        Newton iterations or regression sweeps run (0 for the closed form).

    residual_ : float
        The optimality residual reached: ``max |inv(Theta) - S|`` over the
        diagonal and the edges, in standardised units (for the regression
        solver, the largest change of its last sweep).

    decrement_ : float or None
        ``lambda^2 / 2`` of the last Newton system (None when not measured:
        the closed form, the regression solver, or a stop on ``tol``). On a
        stop at statistical precision it is that of the iterate before the
        final, full Newton step, which leaves the estimate closer still. For the sparse
        solver a lower bound, within a factor ``1 + 1e-4 kappa`` (``kappa``:
        the condition number of the preconditioned Newton system).

    objective_ : float or None
        ``f(Theta) = -log det Theta + tr(S Theta)`` at the estimate, in
        standardised units (the mean log-likelihood per row is
        ``-(f + p log(2 pi)) / 2 - sum(log scale_)``); None if not positive definite.

    lower_bound_ : float or None
        A certified lower bound on the optimum of ``f``: the larger of
        ``embedding_bound_`` and the dual bound ``p + log det W`` of one
        positive definite completion ``W`` of ``S`` (see Notes).

    duality_gap_ : float or None
        ``objective_ - lower_bound_``: the estimate is at most this far from
        the optimum of ``f`` (twice the mean log-likelihood per row). Zero up to
        rounding at the exact optimum; None when no bound could be computed.

    embedding_bound_ : float or None
        ``p - log det Theta_E``, ``Theta_E`` the maximum-likelihood precision on
        the chordal embedding of the pattern (a larger pattern, so its optimum
        is lower); None when not computed (dense solvers, chordal patterns)
        or when the embedding has a clique larger than the sample.

    cg_iterations_ : ndarray of int64
        Sparse solver: the conjugate-gradient iterations of each Newton system
        (empty for the other solvers).

    %(n_features_in_)s

    %(feature_names_in_)s

    See Also
    --------
    GaussianLAP : Non-iterative, linear-cost estimate with the same pattern.

    Notes
    -----
    The problem (LAP paper, Section 6, equation (8) with the pattern of
    equation (11)) is

    .. math::

        \\hat\\Theta = \\arg\\min_{\\Theta \\succ 0,\\ \\Theta_{ij} = 0
        \\ \\forall (i, j) \\notin E} \\; -\\log\\det\\Theta + \\operatorname{tr}(S\\Theta),

    convex, with optimality conditions ``[Theta^{-1}]_ij = S_ij`` for
    ``i = j`` and every edge. It has a solution when ``S`` has a positive
    definite completion from its entries on the pattern (always when
    ``n > p``; for sparse graphs often much earlier); otherwise the
    iterations diverge and a :class:`~sklearn.exceptions.ConvergenceWarning`
    is raised.

    The fit runs on standardised columns (``scale_``) and is mapped back
    exactly: the estimate for ``X D`` (``D`` diagonal) is
    ``D^{-1} Theta D^{-1}``. With ``shrinkage`` the covariance-scale target
    ``mean(diag(S)) I`` is kept; it is not equivariant under per-column
    scaling (only under a common factor).

    Dense Newton starts from the LAP estimate when that is positive definite
    and from ``diag(1 / S_ii)`` otherwise; the regression solver starts from
    ``S``. The sparse solver forms the sample covariance on the whole chordal
    embedding ``E`` of the pattern (one pass over the data by row chunks; X is
    never copied whole, so a ``numpy.memmap`` or a ``dask.array`` is read chunk
    by chunk); the closed-form ML on ``E`` gives ``embedding_bound_`` and,
    with its fill zeroed, a candidate start. On a lattice pattern (a stencil
    on a grid, variables in row-major order: see
    :func:`~skmrf._kernels.gaussian.lattice.detect_lattice`) a second
    candidate is the stationary stencil of highest likelihood on the torus,
    rescaled so that its inverse has the sample variances on its diagonal. The
    start is the positive definite candidate of lowest objective, else
    ``diag(1 / S_ii)``.

    Each sparse Newton system ``P_V(W D W) = -g`` (``W = inv(Theta)``) is
    solved by preconditioned conjugate gradients. On a lattice the
    preconditioner is the inverse Newton operator of a stationary torus model
    of the current ``Theta = D C D`` (``D = sqrt(diag Theta)``; the median of
    ``C``'s entries per lattice offset, wrapped periodically and shifted so
    that its smallest eigenvalue is ``C``'s), applied with 2-D FFTs: at the
    ML solution (``n = 1000``) the condition number of the preconditioned
    system was 3.7 and 4.8 on the 5-point 8 x 8 and 16 x 16 lattices, where
    the chordal preconditioner gives 11 and 37, and 152 and 316 on ``L L^T``
    at 12 x 12 and 16 x 16, where it gives 7.7e4 and 3.7e5
    (``benchmarks/gaussian_lap.py precond``). Elsewhere it is the exact
    inverse Hessian of the chordal embedding restricted to the pattern. On
    ill-conditioned precisions (the squared lattice Laplacian ``L L^T``) both
    leave many CG iterations per step. A :class:`~skmrf.exceptions.CostWarning`
    says so: before the Newton steps on a lattice stencil wider than nearest
    neighbours above 2500 variables (on ``L L^T`` the default took 3.9 s at
    p = 2500, 120 s at 3600, more than 300 s at 4900), else with the seconds
    an iteration costs the first time a Newton system reaches the cap of 250
    iterations; ``max_time`` then bounds the work and ``duality_gap_`` says
    how far the estimate is from the optimum.

    Statistical precision: twice the log-likelihood ratio of the estimate
    and the truth is about ``chi^2_q``, so the objective ``f`` (``-2 / n``
    times the log-likelihood, up to a constant) has sampling noise of about
    ``q / n``; near the optimum ``f - f* ~ lambda^2 / 2``, and the iterations
    stop once that is ``decrement_tol`` times the noise.

    Certified gap: every positive definite ``W`` equal to ``S`` on the pattern
    gives ``f(Theta) >= p + log det W`` for every feasible ``Theta``
    (Fenchel's inequality for ``-log det``). For the Newton solvers ``W`` is the
    maximum-determinant completion of ``S`` on the pattern and of
    ``inv(Theta)`` on the fill of the embedding: one chordal completion, about
    the cost of a Cholesky factorisation. For the regression solver ``W`` is its
    dense working covariance with ``S`` written back on the pattern: one dense
    Cholesky factorisation.

    References
    ----------
    Dempster, A. P. "Covariance selection." Biometrics 28(1), 1972.

    Dahl, J., Vandenberghe, L. and Roychowdhury, V. "Covariance selection
    for nonchordal graphs via chordal embedding." Optimization Methods and
    Software 23(4), 2008.

    Hastie, T., Tibshirani, R. and Friedman, J. "The Elements of Statistical
    Learning", 2nd ed., Section 17.3.1, Algorithm 17.1. Springer, 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.estimators.gaussian import GaussianMaxLikelihood
    >>> rng = np.random.default_rng(0)
    >>> precision = np.array([[2.0, -0.8, 0.0], [-0.8, 2.0, -0.8], [0.0, -0.8, 2.0]])
    >>> X = rng.multivariate_normal(np.zeros(3), np.linalg.inv(precision), size=5000)
    >>> est = GaussianMaxLikelihood(graph=[(0, 1), (1, 2)]).fit(X)
    >>> S = np.cov(X.T, bias=True)
    >>> bool(np.allclose(est.covariance_[0, 1], S[0, 1]))
    True
    """

    _parameter_constraints: dict = {
        **_BaseGaussianMRF._parameter_constraints,
        "solver": [StrOptions({"auto", "newton", "regression", "sparse"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "decrement_tol": [Interval(Real, 0, None, closed="left"), None],
        "max_time": [Interval(Real, 0, None, closed="neither"), None],
    }

    #: ``solver="auto"`` uses dense Newton up to this many unknowns, the sparse solver above: measured
    #: by benchmarks/gaussian_solver_choice.py (#41; one BLAS thread, n = 1000): dense Newton is up
    #: to 1.3x faster at 133-275 unknowns (p = 49) and 2-16x slower from 560 (p = 196) on the 5-point,
    #: 13-point and random patterns. Was 6000, where dense Newton is 40-200x slower.
    AUTO_NEWTON_MAX_UNKNOWNS = 300

    #: ``solver="newton"`` refuses more unknowns than this (a dense q x q Hessian of 4.3 GiB).
    NEWTON_MAX_UNKNOWNS = 24000

    #: The dense solvers refuse more variables than this (``p x p`` matrices of 3 GiB).
    DENSE_MAX_FEATURES = 20000

    #: The sparse solver refuses chordal embeddings storing more entries than this (2.4 GB a matrix).
    SPARSE_MAX_STORED = 300_000_000

    def __init__(
        self,
        graph="chain",
        *,
        assume_centered=False,
        shrinkage=0.0,
        solver="auto",
        max_iter=200,
        tol=1e-10,
        decrement_tol=1e-3,
        max_time=None,
        store_covariance="auto",
        sparse="auto",
        verbose=0,
    ):
        self.graph = graph
        self.assume_centered = assume_centered
        self.shrinkage = shrinkage
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.decrement_tol = decrement_tol
        self.max_time = max_time
        self.store_covariance = store_covariance
        self.sparse = sparse
        self.verbose = verbose

    _pd_advice = "more samples, shrinkage > 0, or a larger max_iter"

    def _choose_solver(self, q, p):
        """The solver for ``q`` unknowns on ``p`` variables; raise when a dense problem is too large."""
        solver = self.solver
        if solver == "auto" and q <= self.AUTO_NEWTON_MAX_UNKNOWNS:
            return "newton"
        if solver == "auto":  # the kernel picks sparse or regression from the embedding, if dense is allowed
            return "auto" if p <= self.DENSE_MAX_FEATURES else "sparse"
        if solver == "sparse":
            return solver
        if solver == "newton" and q > self.NEWTON_MAX_UNKNOWNS:
            raise ValueError(
                f"solver='newton' would build a dense {q} x {q} Hessian "
                f"({8 * q * q / 2**30:.1f} GiB) for {p} variables and {q - p} edges; use "
                "solver='sparse' (or 'auto')."
            )
        if p > self.DENSE_MAX_FEATURES:
            raise ValueError(
                f"solver={solver!r} works with dense {p} x {p} matrices "
                f"({8 * p * p / 2**30:.1f} GiB each); use solver='sparse' (or 'auto')."
            )
        return solver

    def _explain(self, exc, n_samples):
        """The message of a kernel failure, with the columns named as in X."""
        names = getattr(self, "feature_names_in_", None)
        if isinstance(exc, CollinearColumns):
            pairs = [f"({_column_name(a, names)}, {_column_name(b, names)})" for a, b in zip(exc.i[:10], exc.j[:10])]
            return (
                f"GaussianMaxLikelihood: the sample covariance of neighbouring columns "
                f"{', '.join(pairs)}{', ...' if len(exc.i) > 10 else ''} is singular (the first pair has "
                f"correlation {exc.correlation:.17g}): one is (numerically) a multiple of the other in this "
                "sample, so the likelihood is unbounded and has no maximum. Remove duplicated or collinear "
                "columns, collect more samples, or set shrinkage > 0."
            )
        if isinstance(exc, ZeroVariance):
            return (
                f"Column {_column_name(exc.column, names)} has zero variance; remove constant columns or set "
                "shrinkage > 0."
            )
        if isinstance(exc, EmbeddingTooLarge):
            pattern = exc.pattern
            return (
                f"GaussianMaxLikelihood(solver='sparse'): the sparse Cholesky factor of this pattern "
                f"({pattern.p} variables, {len(pattern.rows) - pattern.p} edges) has {pattern.n_fill} fill-in "
                f"entries and stores {pattern.n_stored} numbers ({8 * pattern.n_stored / 2**30:.1f} GiB per "
                "matrix, several matrices are needed): the graph has no narrow elimination order (random "
                "graphs do not). Use GaussianLAP, or a sparser or more local graph."
            )
        columns = ", ".join(_column_name(int(j), names) for j in exc.columns[:10])
        what = exc.what.replace("{columns}", columns + (", ..." if len(exc.columns) > 10 else ""))
        if exc.singular is not None:
            return (
                f"GaussianMaxLikelihood: {what}, and the maximum-likelihood estimate probably does not "
                f"exist: {exc.singular}"
            )
        return (
            f"GaussianMaxLikelihood: {what}; the maximum-likelihood estimate probably does not exist "
            f"with this sample (n = {n_samples}). Collect more samples or set shrinkage > 0."
        )

    def _warn_not_converged(self, info):
        """ConvergenceWarning for a solver that stopped above ``tol`` (and above the decrement rule)."""
        measure = (
            "the largest change of the working covariance in the last sweep (in standardised units) is"
            if info.solver == "regression"
            else "the optimality residual max |inv(Theta) - S| over the pattern (in standardised units) is"
        )
        gap = f"; the certified duality gap is {info.duality_gap:.3g}" if np.isfinite(info.duality_gap) else ""
        warn_not_converged(
            f"GaussianMaxLikelihood (solver={info.solver!r})",
            f"in {info.n_iter} iterations: {measure} {info.residual:.3g} > tol={self.tol:g}{gap}",
            "Increase max_iter, loosen tol, or add samples or shrinkage (the maximum-likelihood "
            "estimate may not exist when n is small).",
        )

    def _fit_precision(self, data, n_div, mu, log):
        p = data.shape[0]
        rows, _ = pattern_unknowns(self.adjacency_)
        solver = self._choose_solver(len(rows), p)
        n_samples = _count(n_div)
        degree = np.diff(self.adjacency_.indptr)
        self._check_enough_samples(
            n_samples, int(degree.max()) + 1 if p else 0, "the largest closed neighbourhood {i} u N(i)"
        )
        try:
            with Progress(self.max_iter, type(self).__name__, self.verbose, unit="iteration") as bar:
                precision, info = fit_covariance_selection(
                    data,
                    self.adjacency_,
                    n_div,
                    solver=solver,
                    chordal=self.solver in ("auto", "sparse"),
                    shrinkage=self.shrinkage,
                    mu=mu,
                    tol=self.tol,
                    max_iter=self.max_iter,
                    decrement_tol=self.decrement_tol,
                    max_time=self.max_time,
                    max_stored=self.SPARSE_MAX_STORED,
                    log=log,
                    callback=bar.reporter(log, gaussian_step_line),
                )
        except (CollinearColumns, ZeroVariance, NoMaximum, EmbeddingTooLarge) as exc:
            raise ValueError(self._explain(exc, n_samples)) from None
        self.solver_ = info.solver
        self.n_iter_ = info.n_iter
        self.residual_ = info.residual
        self.cg_iterations_ = info.cg_iterations
        # Not measured or not available: None (a saved model round-trips it, unlike NaN).
        for name in ("decrement", "objective", "lower_bound", "duality_gap", "embedding_bound"):
            value = getattr(info, name)
            setattr(self, name + "_", float(value) if np.isfinite(value) else None)
        if not info.converged:
            self._warn_not_converged(info)
        if not info.is_positive_definite:
            warn(
                "The maximum-likelihood iterations ended at a precision that is not positive "
                "definite; is_positive_definite_ is False.",
                NotPositiveDefiniteWarning,
            )
        return precision, info.is_positive_definite, info.log_det, info.covariance


def _count(n_div):
    """The number of rows (the sum of the weights) for messages: an int when it is one."""
    return int(n_div) if float(n_div).is_integer() else float(n_div)
