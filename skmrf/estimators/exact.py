"""Exact maximum likelihood with junction-tree inference: the baseline estimator."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from ..solvers import THETA_BOUND, minimize_in_box, projected_max, warn_if_not_converged
from ..solvers.ipf import ZERO_LOG_GAP, extended_max_likelihood
from ..utils._docstrings import fill_doc
from ..utils._sklearn_compat import Interval, StrOptions, _fit_context
from ..utils._verbose import ProgressLog
from ._base import ALPHA_CONSTRAINT, LBFGS_VECTORS, BaseDiscreteMRF, check_fit_memory
from ._existence import empty_cell_cliques, table_counts, warn_no_finite_estimate

__all__ = ["ExactMaxLikelihood", "exact_hessian", "fit_max_likelihood"]

#: Newton polish (exact Hessian) only for models with at most this many parameters.
NEWTON_MAX_PARAMS = 1000
NEWTON_STEPS = 8


def fit_max_likelihood(model, mean_stats, alpha, max_iter, tol, max_bytes=None, callback=None):
    """Minimise ``log Z(theta) - theta . s + alpha/2 ||theta||^2`` by L-BFGS-B, then Newton.

    Parameters
    ----------
    model : DiscreteMRF
        Its ``theta`` is the starting point and receives the result.
    mean_stats : ndarray of shape (n_params,)
        Empirical feature means ``s``.
    alpha : float
        Ridge penalty.
    max_iter : int
        Maximum L-BFGS iterations.
    tol : float
        Stop when the largest projected-gradient component is below ``tol``.
        If L-BFGS stalls above it, up to ``NEWTON_STEPS`` Newton steps with
        the exact Hessian follow (models with at most ``NEWTON_MAX_PARAMS``
        parameters).
    max_bytes : int, optional
        Memory budget of one junction-tree calibration.
    callback : callable, optional
        Called as ``callback(iteration, objective, grad_max)``.

    Returns
    -------
    n_iter : int
        L-BFGS iterations plus Newton steps.
    grad_max : float
        Largest projected-gradient component at the solution.
    """
    tree, layout = model.get_junction_tree(max_bytes), model.layout

    def objective(theta):
        cal = tree.calibrate(layout.full_tables(theta), layout, max_bytes=max_bytes)
        mu = cal.clique_marginals()[layout.theta_pos]
        f = cal.log_z - theta @ mean_stats + 0.5 * alpha * theta @ theta
        g = mu - mean_stats + alpha * theta
        return f, g

    theta, _, g, n_iter = minimize_in_box(objective, model.theta, max_iter, tol, callback)
    n_newton = 0
    if n_iter < max_iter:
        theta, g, n_newton = _newton_polish(model, objective, theta, g, alpha, tol, max_bytes)
    model.theta = theta
    return n_iter + n_newton, projected_max(theta, g)


def _newton_polish(model, objective, theta, g, alpha, tol, max_bytes):
    """Newton steps with the exact Hessian while they reduce the gradient.

    L-BFGS stalls near ``|grad| ~ 1e-9`` (the line search meets float64's precision on the
    objective); Newton steps on the gradient finish the job for models small enough for an
    exact Hessian. Returns the point, its gradient and the number of steps taken.
    """
    n_newton = 0
    for _ in range(NEWTON_STEPS):
        if projected_max(theta, g) <= tol or len(theta) > NEWTON_MAX_PARAMS:
            break
        if np.any(np.abs(theta) >= THETA_BOUND):
            break
        H = exact_hessian(model, theta, max_bytes) + alpha * np.eye(len(theta))
        step = np.linalg.lstsq(H, -g, rcond=None)[0]
        new = np.clip(theta + step, -THETA_BOUND, THETA_BOUND)
        _, g_new = objective(new)
        if projected_max(new, g_new) >= projected_max(theta, g):
            break
        theta, g = new, g_new
        n_newton += 1
    return theta, g, n_newton


def exact_hessian(model, theta, max_bytes=None):
    """Hessian of ``log Z``: the covariance of the features, computed exactly.

    Row ``a`` is ``mu_a * (E[phi | phi_a = 1] - mu)``; the conditional
    expectation is one junction-tree calibration with the clique of ``a``
    clamped to the assignment of ``a``. Costs ``n_params`` calibrations.
    """
    tree, lay = model.get_junction_tree(max_bytes), model.layout
    full = lay.full_tables(theta)
    mu = tree.calibrate(full, lay, max_bytes=max_bytes).clique_marginals()[lay.theta_pos]
    H = np.empty((len(theta), len(theta)))
    for b, clique in enumerate(lay.cliques):
        for j in range(lay.block_sizes[b]):
            a = lay.block_offsets[b] + j
            states = np.unravel_index(j, lay.block_shapes[b])
            evidence = {v: int(s) + 1 for v, s in zip(clique, states)}
            cond = tree.calibrate(full, lay, evidence=evidence, max_bytes=max_bytes).clique_marginals()
            H[a] = mu[a] * (cond[lay.theta_pos] - mu)
    return 0.5 * (H + H.T)


@fill_doc
class ExactMaxLikelihood(BaseDiscreteMRF):
    """Maximum-likelihood MRF parameters with exact junction-tree inference.

    The objective is convex; the model term (``log Z`` and the clique
    marginals) comes from one junction-tree calibration per evaluation, the
    data term from sufficient statistics computed once. This is the baseline
    every other estimator is judged against; it is feasible while the graph's
    treewidth is small (see ``max_bytes``).

    Parameters
    ----------
    %(graph)s
    %(n_states)s
    alpha : float or "auto", default="auto"
        Ridge penalty ``alpha / 2 * ||theta||^2`` added to the negative mean
        log-likelihood.
        %(alpha_auto)s
    max_iter : int, default=1000
        Maximum L-BFGS iterations.
    tol : float, default=1e-7
        Convergence when no gradient component exceeds ``tol`` (the largest
        gap between a model and an empirical clique marginal, plus the ridge
        term).
    score_method : {"auto", "exact", "pseudo"}, default="auto"
        How :meth:`score_samples` scores (exact whenever the fit is possible).
    max_bytes : int, default=None
        Memory budget of one junction-tree calibration (default 2 GiB);
        ``fit`` refuses wider graphs with a message giving the treewidth.
    verbose : int, default=0
        Print one line per iteration when positive.

    Attributes
    ----------
    %(discrete_model_)s
    %(alpha_)s
    log_partition_ : float
        ``log Z`` at the fitted parameters.
    %(score_method_)s
    n_iter_ : int
        L-BFGS iterations plus Newton polishing steps run.
    %(n_features_in_)s
    %(feature_names_in_)s

    See Also
    --------
    LAPEstimator, PseudoLikelihoodEstimator

    Notes
    -----
    Minimises ``log Z(theta) - theta . s + alpha/2 ||theta||^2`` where ``s``
    holds the mean features of the data; the gradient is the difference of
    model and empirical clique marginals (LAP paper, Eq. 5). At the optimum
    with ``alpha = 0`` every clique marginal of the model equals the
    empirical one (moment matching).

    When the estimate does not exist (with ``alpha = 0``, a state or
    combination of states never observed, e.g. a constant column), a
    ``NoFiniteEstimateWarning`` names the cliques and the *extended* MLE is
    returned: the limit the likelihood approaches, in which the cells no row
    shows have probability zero, computed by iterative proportional fitting
    on the junction tree (:func:`skmrf.solvers.ipf.extended_max_likelihood`;
    ``n_iter_`` then counts its sweeps). Probability zero is represented by
    log-potentials 60 nats below the rest of their table, so such parameters
    exceed ``+-30``; the log-likelihood is at its supremum to about 1e-12.
    Set ``alpha > 0`` for a finite, regularised estimate.

    Each iteration costs one calibration, ``O(sum of junction-tree table
    sizes)``, exponential in the treewidth.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf import ExactMaxLikelihood
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
    >>> est = ExactMaxLikelihood(graph="chain", alpha=0.1).fit(X)
    >>> est.theta_.shape
    (5,)
    >>> round(est.score(X), 4)
    -1.9095
    """

    _parameter_constraints: dict = {
        **BaseDiscreteMRF._parameter_constraints,
        # The fit itself needs the junction tree, so log Z is always exact: no "ais".
        "score_method": [StrOptions({"auto", "exact", "pseudo"})],
        "alpha": ALPHA_CONSTRAINT,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        graph="chain",
        *,
        n_states="auto",
        alpha="auto",
        max_iter=1000,
        tol=1e-7,
        score_method="auto",
        max_bytes=None,
        verbose=0,
    ):
        self.graph = graph
        self.n_states = n_states
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.score_method = score_method
        self.max_bytes = max_bytes
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y=None):
        """Fit the parameters by exact maximum likelihood.

        %(fit_states)s
        """
        Xi = self._validate_fit_data(X, chunked=True)
        model = self.model_
        check_fit_memory(
            type(self).__name__,
            8.0 * LBFGS_VECTORS * model.n_params,
            f"L-BFGS over {model.n_params:,} parameters",
            "Recode the columns with fewer states or use a sparser graph.",
        )
        model.get_junction_tree(self.max_bytes)
        counts = table_counts(model.layout, Xi)
        empty = empty_cell_cliques(model, counts) if self._ridge(Xi.shape[0]) == 0 else []
        if empty:
            self._fit_extended(counts, empty)
        else:
            self._fit_lbfgs(counts[model.layout.theta_pos] / Xi.shape[0])
        self._resolve_score_method()
        return self

    def _fit_lbfgs(self, mean_stats):
        """L-BFGS-B and the Newton polish: the finite maximiser of the (penalised) likelihood."""
        log = ProgressLog(type(self).__name__, self.verbose)

        def report(it, f, g):
            log("Iteration %d, negative log-likelihood = %.8f, max |grad| = %.2e", it, f, g)

        self.n_iter_, gmax = fit_max_likelihood(
            self.model_, mean_stats, self.alpha_, self.max_iter, self.tol, self.max_bytes, report
        )
        warn_if_not_converged(type(self).__name__, self.n_iter_, gmax, self.tol, self.max_iter, stacklevel=4)

    def _fit_extended(self, counts, empty):
        """No finite MLE (alpha=0, empty cells): the extended MLE by iterative proportional fitting."""
        model = self.model_
        graph = self.graph_
        covered = {v for f in graph.factors for v in f}
        factors = [model.cliques.index(f) for f in graph.factors]
        factors += [model.cliques.index((v,)) for v in range(graph.n_variables) if v not in covered]
        self.n_iter_, gap, gain = extended_max_likelihood(
            model, counts, factors, self.max_iter, self.tol, self.max_bytes
        )
        outcome = (
            "Returned the extended MLE, the limit the likelihood approaches, computed by iterative "
            f"proportional fitting: the cells no row shows get probability zero (log-potentials "
            f"{ZERO_LOG_GAP:g} nats below the rest, so some parameters exceed +-{THETA_BOUND:g})."
        )
        if gap > self.tol:
            outcome += (
                f" It stopped after max_iter={self.max_iter} sweeps with a largest marginal gap of "
                f"{gap:.2e} > tol={self.tol:g}: the last sweep raised the mean log-likelihood by "
                f"{gain:.2e}, and IPF can approach this limit as slowly as 1/sweeps, so the fit may be "
                f"up to about {self.n_iter_ * gain:.2e} nats per row below its supremum. Increase max_iter."
            )
        warn_no_finite_estimate(type(self).__name__, empty, outcome, stacklevel=4)
