"""GaussianLAP: the precision of a Gaussian MRF with a known pattern, read off small marginals.

Every entry of the precision comes from the inverse sample covariance of its
1-neighbourhood (LAP paper, Section 6.1, equations (12)-(14)): no iteration,
one small inversion per entry, linear in the number of variables for bounded
degree (Section 6.2). The kernel is in :mod:`skmrf._kernels.gaussian.lap`.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from ..._kernels.gaussian.lap import LapPlan, assemble_symmetric, lap_from_data
from ..._kernels.gaussian.sparse_ml import refine_lap
from ..._solvers.spd import logdet_spd, shrink_to_pd
from ..._utils._docstrings import fill_doc
from ..._utils._sklearn_compat import Interval, StrOptions
from ..._utils._warnings import warn
from .._base import N_JOBS_CONSTRAINT
from ._base import NotPositiveDefiniteWarning, _BaseGaussianMRF, gaussian_step_line

__all__ = ["GaussianLAP"]


@fill_doc
class GaussianLAP(_BaseGaussianMRF):
    """Precision of a Gaussian MRF with a known zero pattern, by LAP.

    Every non-zero entry of the precision ``Theta`` is read off the inverse
    sample covariance of a small marginal model: for an edge ``(i, j)`` the
    1-neighbourhood ``A = {i, j} u N(i) u N(j)``, for a diagonal entry
    ``A = {i} u N(i)``. The estimate is symmetric by construction and zero
    outside the graph. It is not guaranteed to be positive definite; when it
    is not, ``fit`` warns, sets ``is_positive_definite_ = False`` and, with
    ``repair="shrink"``, repairs it.

    Parameters
    ----------
    graph : networkx.Graph, list of tuples, array-like, sparse matrix or str, default="chain"
        The zero pattern of the precision: variables ``i != j`` are
        neighbours when ``Theta_ij`` may be non-zero. A networkx graph (nodes
        map to columns in ``list(G.nodes)`` order, or by name for a
        DataFrame), a list of edges (or cliques, which contribute all their
        pairs), a square matrix whose non-zero pattern is used (values and
        diagonal ignored; it must be structurally symmetric, so a precision
        matrix can be passed as its own pattern), or one of ``"chain"``,
        ``"complete"``, ``"grid:RxC"``. Resolved in ``fit`` into
        ``adjacency_``.

    assume_centered : bool, default=False
        If True, the data are not centred (``location_`` is zero) and the
        sample covariance is ``X^T X / n``, as in the paper. If False, the
        columns are centred first.

    shrinkage : float in [0, 1), default=0.0
        Use ``(1 - shrinkage) * S + shrinkage * mu * I`` with ``mu`` the mean
        sample variance instead of the sample covariance ``S``. Any positive
        value makes every block invertible, so the fit also works with fewer
        samples than variables in a 1-neighbourhood (without it that is an
        error).

    bias_correction : bool, default=True
        Multiply every entry read off a block of ``|A|`` variables by
        ``(n - |A| - 2) / n`` (``(n - |A| - 1) / n`` with
        ``assume_centered=True``), which makes each entry unbiased under the
        Gaussian model (see Notes). Needs ``n >= |A| + 3`` (``|A| + 2`` with
        ``assume_centered=True``) for the largest block. Not applied when
        ``shrinkage > 0``. ``False`` gives the paper's uncorrected estimate.

    repair : {"shrink"} or None, default=None
        What to do when the estimate is not positive definite. ``None``: keep
        it, warn (:class:`NotPositiveDefiniteWarning`) and set
        ``is_positive_definite_ = False``; ``score`` then raises. ``"shrink"``:
        keep the diagonal ``D`` and scale every off-diagonal entry by the
        largest ``t`` in ``(0, 1]`` for which the smallest eigenvalue of
        ``D^{-1/2} Theta D^{-1/2}`` is at least ``1e-6``; the factor is stored
        in ``repair_factor_`` and a warning still says the raw estimate was
        not positive definite. The repair restores positive definiteness,
        not likelihood: held-out, the repaired estimate can score far below
        maximum likelihood on ill-conditioned precisions (on the example's
        ``12 x 12`` Laplacian with ``n = 1000``, -91.2 against -31.3 for
        :class:`GaussianMaxLikelihood`; no rescaling of the off-diagonal or
        the diagonal did better than -60), because the likelihood is dominated
        by the smallest eigenvalues, which no entry-wise local estimate pins
        down. Use ``newton_steps`` or :class:`GaussianMaxLikelihood` when the
        density matters.

    newton_steps : int, default=0
        Number of Newton steps of the maximum-likelihood problem (see
        :class:`GaussianMaxLikelihood`, same pattern) taken from the LAP
        estimate: a positive definite estimate whose density approaches the
        maximum-likelihood one (the option to use when the density matters).
        On a lattice pattern the start is the more likely of the LAP estimate
        (when positive definite) and :class:`GaussianMaxLikelihood`'s
        stationary start (``newton_start_``). Elsewhere it is the LAP estimate
        when it is positive definite; otherwise
        the positive definite point of highest likelihood on one of two
        segments towards it: ``D + t (Theta - D)`` (``D`` its diagonal) or
        ``diag(1 / S_ii) + t (Theta - diag(1 / S_ii))``, whichever is more
        likely (the second when LAP's diagonal is far too large for a
        density, as on ill-conditioned precisions); its off-diagonal scale
        ``t`` is stored in ``repair_factor_``. Each step is a truncated Newton-CG step on a
        sparse chordal embedding with a backtracking line search that keeps
        every iterate positive definite (on a lattice pattern, with the
        stationary-torus preconditioner of :class:`GaussianMaxLikelihood`); no
        dense ``p x p`` matrix is formed. The steps stop early at statistical
        precision (see ``n_iter_``).
        With ``newton_steps > 0``, ``repair`` is not used and no
        :class:`NotPositiveDefiniteWarning` is raised.

    store_covariance : bool or "auto", default="auto"
        Also store the dense ``covariance_ = inv(precision_)`` (``O(p^2)``
        memory, ``O(p^3)`` time). ``"auto"`` stores it for at most 2000
        features; otherwise ``covariance_`` is None.

    %(gaussian_sparse)s

    n_jobs : int, default=None
        Number of jobs for the block inversions, through :mod:`joblib` (one
        task per chunk of neighbourhoods; threads are preferred, as numpy
        releases the GIL, but ``joblib.parallel_config`` can choose any
        backend). ``None`` means 1 unless in a :obj:`joblib.parallel_config`
        context; ``-1`` uses all processors. BLAS is limited to one thread
        during the block solves (the blocks are small). Plans too small to
        pay for a pool (under ``2 * GLAP_MIN_WORK_PER_WORKER`` of
        ``LapPlan.cost``, measured by ``benchmarks/parallel_threshold.py``)
        and the blocks read off the dense covariance (small ``p``) are
        computed serially, whatever ``n_jobs`` and backend (Dask included).

    verbose : int, default=0
        Print the time of each phase; above 1, also joblib's progress.

    Attributes
    ----------
    location_ : ndarray of shape (n_features,)
        Estimated mean (zeros with ``assume_centered=True``).

    precision_ : ndarray or scipy.sparse.csr_array of shape (n_features, n_features)
        The estimated precision, non-zero only on the diagonal and the edges
        of the graph (dense or sparse, see ``sparse``).

    covariance_ : ndarray of shape (n_features, n_features) or None
        ``inv(precision_)`` if stored (see ``store_covariance``) and the
        precision is positive definite, else None.

    adjacency_ : scipy.sparse.csr_array of bool, shape (n_features, n_features)
        The resolved graph: symmetric, zero diagonal.

    is_positive_definite_ : bool
        Whether ``precision_`` is positive definite (after the repair, if any).

    repair_factor_ : float
        The off-diagonal scale ``t`` applied by ``repair="shrink"``, or at
        the start of ``newton_steps`` (1.0 when no repair was needed or asked
        for, and when a lattice pattern's stationary start stood in for it).

    newton_start_ : str
        With ``newton_steps > 0``: where the Newton steps started, the start of
        lowest objective among ``"lap"`` (the LAP estimate when it is positive
        definite; repaired as above when it is not, unless the pattern is a
        lattice), ``"stationary"`` (on a lattice pattern:
        :class:`GaussianMaxLikelihood`'s stationary start) and ``"diagonal"``
        (``diag(1 / S_ii)``).

    n_iter_ : int
        Newton steps taken (at most ``newton_steps``; fewer when statistical
        precision, ``lambda^2 / 2 <= 1e-3 q / n`` as in
        :class:`GaussianMaxLikelihood`, or the optimality residual 1e-10 was
        reached first).

    log_partition_ : float
        ``(p log(2 pi) - log det precision_) / 2``, the log normaliser of the
        density; NaN if the precision is not positive definite.

    %(gaussian_scale_)s

    max_neighbourhood_size_ : int
        The largest ``|A|``; ``fit`` needs more samples than this (plus one
        when centring) unless ``shrinkage > 0``.

    %(n_features_in_)s

    %(feature_names_in_)s

    See Also
    --------
    GaussianMaxLikelihood : Maximum likelihood with the same zero pattern.
    sklearn.covariance.GraphicalLasso : Sparse precision with an unknown pattern.
    sklearn.covariance.EmpiricalCovariance : The unrestricted estimate.

    Notes
    -----
    For an entry ``q`` (an edge or a node) with 1-neighbourhood ``A``, LAP
    estimates the marginal Gaussian on ``A`` (Section 6.1, equation (12)) by
    its sample covariance ``S_AA`` and pulls out the potential of ``q``
    (equations (13)-(14)):

    .. math::

        \\hat\\Theta_{ij} = \\left[S_{AA}^{-1}\\right]_{ij}, \\qquad
        A = \\{i, j\\} \\cup \\mathcal{N}_i \\cup \\mathcal{N}_j,

    and ``Theta_ii`` likewise from ``A = {i} u N(i)``. Because the potential
    normalised with respect to zero is unique (Theorem 6) and ``A``
    separates ``q`` from the rest of the graph, the marginal on ``A`` has the
    same potential on ``q`` as the full model (Theorems 10 and 12), so each
    estimate is consistent. In the paper's 7-node example (Figure 6)
    ``Theta_25`` comes from the 3 x 3 block on ``{1, 2, 5}``.

    With ``bias_correction=True`` (and ``shrinkage == 0``) each entry is
    multiplied by ``(n - |A| - 2) / n``, or ``(n - |A| - 1) / n`` with
    ``assume_centered=True``. The sample covariance ``S`` uses the ``1/n``
    normalisation, so ``n S_AA`` is Wishart with ``n - 1`` (centred data) or
    ``n`` degrees of freedom and scale ``Sigma_AA``; the inverse-Wishart mean
    then gives ``E[S_AA^{-1}] = n / (n - |A| - 2) Theta^A`` (or
    ``n / (n - |A| - 1) Theta^A``), where ``Theta^A = Sigma_AA^{-1}`` has
    the entry of interest equal to ``Theta_ij``. The factor therefore makes
    every entry exactly unbiased for Gaussian data. This correction is not
    in the paper; with few samples it matters (at ``n = 3 |A|`` the
    uncorrected entries are about 1.5 times too large), and Figure 8 of the
    benchmark shows both.

    The entries are computed as Schur complements:
    ``Theta_ii = 1 / Var(x_i | x_{A \\ i})`` and ``Theta_ij`` is the
    off-diagonal entry of the inverse of the 2 x 2 conditional covariance of
    ``(x_i, x_j)`` given ``x_{A \\ {i, j}}``.

    Complexity (Section 6.2, equation (15)): one ``|A| x |A|`` solve per
    non-zero, ``O(sum_q |A_q|^3)`` in total, plus the sample covariance on
    the blocks. The blocks are never formed one by one from the data: the
    variables are grouped into aggregates (``{i} u N(i)``) and the Gram
    matrix of the union of the neighbourhoods of each aggregate is computed
    once, when that is cheaper than per-variable or per-entry Gram matrices,
    so on a lattice the data cost is ``O(c n p)`` for a small constant ``c``
    (for at most 3000 variables, the dense sample covariance is used instead
    when it costs about as much). The small solves are batched by size and
    the chunks of aggregates run through :mod:`joblib`. Memory is ``O(n p)``
    for the centred data plus bounded work chunks; no ``p x p`` dense matrix
    is formed for large ``p``. Positive definiteness and the
    log-determinant used by :meth:`score` come from a sparse ``L D L^T``
    factorisation (SuperLU with diagonal pivoting and a minimum-degree
    ordering; dense Cholesky for a few hundred variables); the repair needs
    one Lanczos estimate of the smallest eigenvalue and one more
    factorisation.

    The blocks are formed from standardised columns (``scale_``) and the
    estimate is mapped back exactly: each entry is an entry of the inverse of
    a block of ``S``, so the estimate for ``X D`` (``D`` diagonal) is
    ``D^{-1} Theta D^{-1}``. With ``shrinkage`` the covariance-scale target
    ``mean(diag(S)) I`` is kept; it is not equivariant under per-column
    scaling (only under a common factor).

    LAP estimates read off marginals of few variables, so with few samples
    they are more accurate than estimators that fit many more parameters
    (Section 6.3, Figure 8), but the assembled matrix need not be positive
    definite, especially for ill-conditioned precisions.

    References
    ----------
    Mizrahi, Y. D., Denil, M. and de Freitas, N. "Linear and parallel learning
    of Markov random fields." ICML, 2014.

    Mizrahi, Y. D., de Freitas, N. and Tenorio, L. "Efficient learning of
    practical Markov random fields with exact inference." Section 6.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.estimators.gaussian import GaussianLAP
    >>> rng = np.random.default_rng(0)
    >>> precision = np.array([[2.0, -0.8, 0.0], [-0.8, 2.0, -0.8], [0.0, -0.8, 2.0]])
    >>> X = rng.multivariate_normal(np.zeros(3), np.linalg.inv(precision), size=5000)
    >>> est = GaussianLAP(graph=[(0, 1), (1, 2)]).fit(X)
    >>> int(np.count_nonzero(est.precision_))  # zero outside the graph
    7
    >>> bool(np.allclose(est.precision_, precision, atol=0.15))
    True
    """

    _parameter_constraints: dict = {
        **_BaseGaussianMRF._parameter_constraints,
        "bias_correction": ["boolean"],
        "repair": [StrOptions({"shrink"}), None],
        "newton_steps": [Interval(Integral, 0, None, closed="left")],
        "n_jobs": N_JOBS_CONSTRAINT,
    }

    _pd_advice = "repair='shrink', more samples, or shrinkage > 0 (or GaussianMaxLikelihood)"

    def __init__(
        self,
        graph="chain",
        *,
        assume_centered=False,
        shrinkage=0.0,
        bias_correction=True,
        repair=None,
        newton_steps=0,
        store_covariance="auto",
        sparse="auto",
        n_jobs=None,
        verbose=0,
    ):
        self.graph = graph
        self.assume_centered = assume_centered
        self.shrinkage = shrinkage
        self.bias_correction = bias_correction
        self.repair = repair
        self.newton_steps = newton_steps
        self.store_covariance = store_covariance
        self.sparse = sparse
        self.n_jobs = n_jobs
        self.verbose = verbose

    # An in-memory X is standardised into one transposed array (the kernel gathers
    # variables); a memmap or a dask array is standardised and its Gram blocks summed by row chunks.
    _materialise = True

    def _bias_dof(self, n):
        """Wishart degrees of freedom of the bias correction, or None when it is not applied."""
        if not self.bias_correction or self.shrinkage:
            return None
        return n if self.assume_centered else n - 1

    def _plan(self, n, log):
        """The LAP plan of ``adjacency_``, after checking its largest block has enough samples."""
        plan = LapPlan(self.adjacency_)
        self.max_neighbourhood_size_ = plan.max_size
        log("planned %d entries in %d blocks (largest |A| = %d)", plan.n_tasks, plan.n_clusters, plan.max_size)
        b = int(np.argmax(plan.sizes))
        i, j = int(plan.ti[b]), int(plan.tj[b])
        what = f"the 1-neighbourhood of {f'variable {i}' if i == j else f'edge ({i}, {j})'}"
        self._check_enough_samples(n, plan.max_size, what, bias_correction=self._bias_dof(n) is not None)
        return plan

    def _zero_variance_note(self):
        return (
            "; with shrinkage the LAP estimate may not be positive definite (on scikit-learn's digits it is not), "
            "then add newton_steps=1 or repair='shrink'"
        )

    def _positive_definite(self, precision, n):
        """Check (and with ``repair="shrink"`` repair) the estimate; return ``(precision, is_pd, logdet)``.

        Warns with :class:`NotPositiveDefiniteWarning` when the raw estimate is
        not positive definite; sets ``repair_factor_``.
        """
        is_pd, logdet = logdet_spd(precision)
        self.repair_factor_ = 1.0
        if is_pd:
            return precision, is_pd, logdet
        msg = (
            f"The LAP estimate of the precision ({precision.shape[0]} variables, n = {n} samples) is not "
            "positive definite; this happens with few samples or when the data do not follow "
            "a Gaussian MRF on this graph."
        )
        if self.repair == "shrink":
            precision, self.repair_factor_, logdet = shrink_to_pd(precision)
            is_pd = True
            msg += (
                f" repair={self.repair!r} scaled its off-diagonal entries by {self.repair_factor_:.6g}"
                " (see repair_factor_)."
            )
        else:
            more = "" if self.shrinkage else ", shrinkage > 0"
            msg += (
                " is_positive_definite_ is False and score() will raise. Use newton_steps=1 (Newton steps "
                "from the repaired estimate towards maximum likelihood, positive definite), repair='shrink' "
                f"(the estimate with its off-diagonal entries scaled down){more}, more samples, or "
                "GaussianMaxLikelihood."
            )
        warn(msg, NotPositiveDefiniteWarning)  # fit's caller
        return precision, is_pd, logdet

    def _fit_precision(self, data, n_div, mu, log):
        p, n_rows = data.shape
        log("validated %d x %d data", n_rows, p)
        n = int(n_div) if n_div.is_integer() else n_div  # rows, or the sum of the weights
        plan = self._plan(n, log)
        values = lap_from_data(
            data, plan, n_div, self.shrinkage, mu, n_jobs=self.n_jobs, verbose=self.verbose, bias_dof=self._bias_dof(n)
        )
        precision = assemble_symmetric(plan.ti, plan.tj, values, p)
        log("solved the neighbourhood blocks")
        self.n_iter_ = 0
        if self.newton_steps:
            precision, logdet, info = refine_lap(
                data,
                self.adjacency_,
                n_div,
                precision,
                shrinkage=self.shrinkage,
                mu=mu,
                newton_steps=self.newton_steps,
                log=log,
                callback=lambda step, **metrics: log("%s", gaussian_step_line(step, **metrics)),
            )
            self.newton_start_, self.repair_factor_, self.n_iter_ = info
            is_pd = True
        else:
            precision, is_pd, logdet = self._positive_definite(precision, n)
        log("checked positive definiteness")
        return precision, is_pd, logdet, None
