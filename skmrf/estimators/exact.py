"""Exact maximum likelihood with junction-tree inference: the baseline estimator."""

from __future__ import annotations

import time
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from ..utils._sklearn_compat import Interval, StrOptions, _fit_context
from ._base import GRAPH_DOC, N_STATES_DOC, BaseDiscreteMRF

__all__ = ["ExactMaxLikelihood", "THETA_BOUND"]

#: Box bound on every parameter: where the maximum-likelihood estimate does not
#: exist (a state never observed, a constant column) the fit is clipped here.
THETA_BOUND = 30.0
#: Newton polish (exact Hessian) only for models with at most this many parameters.
NEWTON_MAX_PARAMS = 1000
NEWTON_STEPS = 8


def fit_max_likelihood(model, mean_stats, alpha, max_iter, tol, max_bytes=None, callback=None):
    """Minimise ``log Z(theta) - theta . s + alpha/2 ||theta||^2`` by L-BFGS-B.

    Parameters
    ----------
    model : DiscreteMRF
        Its ``theta`` is the starting point and receives the result.
    mean_stats : ndarray of shape (n_params,)
        Empirical feature means ``s``.
    alpha : float
    max_iter : int
    tol : float
        Stop when the largest projected-gradient component is below ``tol``.
        If L-BFGS stalls above it, up to ``NEWTON_STEPS`` Newton steps with
        the exact Hessian follow (models with at most ``NEWTON_MAX_PARAMS``
        parameters).
    max_bytes : int, optional
    callback : callable, optional
        Called as ``callback(iteration, objective, grad_max)``.

    Returns
    -------
    result : scipy.optimize.OptimizeResult
        ``nit`` counts L-BFGS iterations plus Newton steps.
    grad_max : float
        Largest projected-gradient component at the solution.
    """
    tree, layout = model.get_junction_tree(max_bytes), model.layout
    state = {"it": 0, "f": np.nan, "g": np.nan}

    def objective(theta):
        cal = tree.calibrate(layout.full_tables(theta), layout, max_bytes=max_bytes)
        mu = cal.clique_marginals()[layout.theta_pos]
        f = cal.log_z - theta @ mean_stats + 0.5 * alpha * theta @ theta
        g = mu - mean_stats + alpha * theta
        state["f"], state["g"] = f, _projected_max(theta, g)
        return f, g

    def on_iter(intermediate_result):
        state["it"] += 1
        if callback is not None:
            callback(state["it"], state["f"], state["g"])

    res = minimize(
        objective,
        model.theta,
        jac=True,
        method="L-BFGS-B",
        bounds=[(-THETA_BOUND, THETA_BOUND)] * len(model.theta),
        callback=on_iter,
        options={"maxiter": max_iter, "gtol": tol, "ftol": 0.0, "maxcor": 20},
    )
    theta = res.x
    _, g = objective(theta)
    # L-BFGS stalls near |grad| ~ 1e-9 (the line search meets float64's
    # precision on the objective); Newton steps on the gradient finish the
    # job for models small enough for an exact Hessian.
    n_newton = 0
    for _ in range(NEWTON_STEPS if res.nit < max_iter else 0):
        if _projected_max(theta, g) <= tol or len(theta) > NEWTON_MAX_PARAMS:
            break
        if np.any(np.abs(theta) >= THETA_BOUND):
            break
        H = exact_hessian(model, theta, max_bytes) + alpha * np.eye(len(theta))
        step = np.linalg.lstsq(H, -g, rcond=None)[0]
        new = np.clip(theta + step, -THETA_BOUND, THETA_BOUND)
        _, g_new = objective(new)
        if _projected_max(new, g_new) >= _projected_max(theta, g):
            break
        theta, g = new, g_new
        n_newton += 1
    model.theta = theta
    res.nit += n_newton
    return res, _projected_max(theta, g)


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


def _projected_max(theta, g):
    """Largest gradient component that the box bounds do not block."""
    blocked = ((theta <= -THETA_BOUND) & (g > 0)) | ((theta >= THETA_BOUND) & (g < 0))
    return float(np.max(np.abs(np.where(blocked, 0.0, g)), initial=0.0))


def _warn_if_no_mle(model, counts):
    """Warn when an empirical clique table has an empty cell: no MLE exists then."""
    lay = model.layout
    empty = np.add.reduceat(counts == 0, lay.table_offsets[:-1]) > 0
    if empty.any():
        cliques = [model.cliques[b] for b in np.flatnonzero(empty)]
        warnings.warn(
            f"The maximum-likelihood estimate does not exist: for cliques {cliques[:10]}"
            f"{'...' if len(cliques) > 10 else ''} some state (combination) never occurs in the "
            f"data (e.g. a constant column), so their parameters diverge; they are returned "
            f"where the fit stopped, within +-{THETA_BOUND:g}. Set alpha > 0 for a finite "
            "regularised estimate.",
            UserWarning,
            stacklevel=4,
        )


class ExactMaxLikelihood(BaseDiscreteMRF):
    """Maximum-likelihood MRF parameters with exact junction-tree inference.

    The objective is convex; the model term (``log Z`` and the clique
    marginals) comes from one junction-tree calibration per evaluation, the
    data term from sufficient statistics computed once. This is the baseline
    every other estimator is judged against; it is feasible while the graph's
    treewidth is small (see ``max_bytes``).

    Parameters
    ----------
    {graph}
    {n_states}
    alpha : float, default=0.0
        Ridge penalty ``alpha / 2 * ||theta||^2`` added to the negative mean
        log-likelihood.
    max_iter : int, default=1000
        Maximum L-BFGS iterations.
    tol : float, default=1e-7
        Convergence when no gradient component exceeds ``tol`` (the largest
        gap between a model and an empirical clique marginal, plus the ridge
        term).
    score_method : {{"auto", "exact", "pseudo"}}, default="auto"
        How :meth:`score_samples` scores (exact whenever the fit is possible).
    max_bytes : int, default=None
        Memory budget of one junction-tree calibration (default 2 GiB);
        ``fit`` refuses wider graphs with a message giving the treewidth.
    verbose : int, default=0
        Print one line per iteration when positive.

    Attributes
    ----------
    graph_ : MRFGraph
        The resolved graph.
    n_states_ : ndarray of shape (n_features,)
    model_ : DiscreteMRF
        The fitted model; ``model_.theta`` holds the parameters.
    theta_ : ndarray of shape (n_params,)
        Alias of ``model_.theta``.
    log_partition_ : float
        ``log Z`` at the fitted parameters.
    score_method_ : str
    n_iter_ : int
        L-BFGS iterations plus Newton polishing steps run.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when X has string column names.

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
    combination of states never observed, e.g. a constant column), a warning
    names the cliques; their parameters diverge and are returned where the
    fit stopped, within ``+-30``. Set
    ``alpha > 0`` for a finite, regularised estimate.

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
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        graph="chain",
        *,
        n_states="auto",
        alpha=0.0,
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
    def fit(self, X, y=None):
        """Fit the parameters by exact maximum likelihood.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states ``0..K-1``; never modified.
        y : None
            Ignored.

        Returns
        -------
        self : ExactMaxLikelihood
        """
        Xi = self._validate_fit_data(X)
        model = self.model_
        model.get_junction_tree(self.max_bytes)
        lay = model.layout
        counts = lay.table_counts(Xi)
        mean_stats = counts[lay.theta_pos] / Xi.shape[0]
        if self.alpha == 0:
            _warn_if_no_mle(model, counts)
        start = time.perf_counter()
        name = type(self).__name__

        def report(it, f, g):
            if self.verbose:
                print(
                    "[%s] Iteration %d, negative log-likelihood = %.8f, max |grad| = %.2e, time = %.2fs"
                    % (name, it, f, g, time.perf_counter() - start)
                )

        res, gmax = fit_max_likelihood(model, mean_stats, self.alpha, self.max_iter, self.tol, self.max_bytes, report)
        self.n_iter_ = int(res.nit)
        if gmax > self.tol and not (self.alpha == 0 and np.any(counts == 0)):
            warnings.warn(
                f"{name} did not converge in {self.n_iter_} iterations: the largest gradient "
                f"component is {gmax:.2e} > tol={self.tol:g}. Increase max_iter or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        self._resolve_score_method()
        return self


ExactMaxLikelihood.__doc__ = ExactMaxLikelihood.__doc__.format(graph=GRAPH_DOC, n_states=N_STATES_DOC)
