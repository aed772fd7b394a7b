"""Exact maximum likelihood with junction-tree inference: the baseline estimator."""

from __future__ import annotations

from numbers import Integral, Real

from .._kernels.exact import exact_hessian, fit_exact, fit_max_likelihood
from .._kernels.information import exact_information
from .._solvers import THETA_BOUND, warn_if_not_converged
from .._solvers.ipf import ZERO_LOG_GAP
from .._utils._docstrings import fill_doc
from .._utils._progress import Progress
from .._utils._sklearn_compat import Interval, StrOptions
from .._utils._verbose import ProgressLog
from ._base import ALPHA_CONSTRAINT, LBFGS_VECTORS, BaseDiscreteMRF, check_fit_memory
from ._existence import empty_cell_cliques, table_counts, warn_no_finite_estimate
from ._statistics import DiscreteStatisticsMixin

__all__ = ["ExactMaxLikelihood", "exact_hessian", "fit_max_likelihood"]


@fill_doc
class ExactMaxLikelihood(DiscreteStatisticsMixin, BaseDiscreteMRF):
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
        A progress bar of the iterations at 1; at 2 or more also one line per iteration.

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
    on the junction tree (:func:`skmrf._solvers.ipf.extended_max_likelihood`;
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

    _reads_chunks = True

    def _fit_theta(self, rows):
        model = self.model_
        check_fit_memory(
            type(self).__name__,
            8.0 * LBFGS_VECTORS * model.n_params,
            f"L-BFGS over {model.n_params:,} parameters",
            "Recode the columns with fewer states or use a sparser graph.",
        )
        model.get_junction_tree(self.max_bytes)
        counts = table_counts(model.layout, rows)
        empty = empty_cell_cliques(model, counts) if self.alpha_ == 0 else []
        log = ProgressLog(type(self).__name__, self.verbose)

        with Progress(self.max_iter, type(self).__name__, self.verbose, unit="iteration", tol=self.tol) as bar:
            report = bar.reporter(
                log,
                "Iteration %(step)d, negative log-likelihood = %(objective).8f, max |grad| = %(grad_max).2e",
                measure="grad_max",
            )
            theta, info = fit_exact(
                model,
                counts,
                rows.total,
                self._ridge_penalty(),
                extended=bool(empty),
                max_iter=self.max_iter,
                tol=self.tol,
                max_bytes=self.max_bytes,
                callback=report,
            )
        self.n_iter_ = info.n_iter
        if empty:
            self._warn_extended(empty, info)
        else:
            warn_if_not_converged(type(self).__name__, info.n_iter, info.grad_max, self.tol, self.max_iter)
        return theta

    def _information(self, Xi, weight, total):
        """``N (Cov(phi) + alpha_ I)``: the Hessian of the objective summed over the rows."""
        return exact_information(self.model_, total, self._ridge_penalty(), self.max_bytes)

    def _warn_extended(self, empty, info):
        """No finite MLE (alpha=0, empty cells): say that the extended MLE was returned, and how close."""
        outcome = (
            "Returned the extended MLE, the limit the likelihood approaches, computed by iterative "
            f"proportional fitting: the cells no row shows get probability zero (log-potentials "
            f"{ZERO_LOG_GAP:g} nats below the rest, so some parameters exceed +-{THETA_BOUND:g})."
        )
        if info.grad_max > self.tol:
            outcome += (
                f" It stopped after max_iter={self.max_iter} sweeps with a largest marginal gap of "
                f"{info.grad_max:.2e} > tol={self.tol:g}: the last sweep raised the mean log-likelihood by "
                f"{info.gain:.2e}, and IPF can approach this limit as slowly as 1/sweeps, so the fit may be "
                f"up to about {info.n_iter * info.gain:.2e} nats per row below its supremum. Increase max_iter."
            )
        warn_no_finite_estimate(type(self).__name__, empty, outcome, graph=self.model_.graph)
