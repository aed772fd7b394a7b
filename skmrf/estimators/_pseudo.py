"""Besag's maximum pseudo-likelihood for discrete MRFs (the kernel: :mod:`skmrf._kernels.pseudo`)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .._kernels.information import pseudo_likelihood_information
from .._kernels.pseudo import (
    PL_MIN_WORK_PER_WORKER,
    PseudoLikelihoodObjective,
    choose_path,
    fit_pseudo_likelihood,
    ridge_vector,
)
from .._penalty import CentredRidge, ridge_matrix
from .._solvers import THETA_BOUND, warn_if_not_converged
from .._utils._docstrings import fill_doc
from .._utils._progress import Progress
from .._utils._sklearn_compat import Interval, StrOptions, check_is_fitted
from .._utils._verbose import ProgressLog
from .._utils.validation import check_count_weights
from ._base import ALPHA_CONSTRAINT, N_JOBS_CONSTRAINT, BaseDiscreteMRF
from ._existence import empty_cell_cliques, table_counts, warn_no_finite_estimate
from ._statistics import covariance_from_information, describe_parameter, warn_if_penalised

__all__ = ["PL_MIN_WORK_PER_WORKER", "PseudoLikelihoodEstimator", "PseudoLikelihoodObjective"]


@fill_doc
class PseudoLikelihoodEstimator(BaseDiscreteMRF):
    """Maximum pseudo-likelihood MRF parameters (Besag, 1975).

    Maximises the mean pseudo-log-likelihood ``sum_i log p(x_i | x_-i)``
    (LAP paper, Eq. 6), a convex objective that needs no partition function,
    by L-BFGS-B with an analytic gradient. Any number of states per variable
    and cliques of any size.

    Parameters
    ----------
    %(graph)s
    %(n_states)s
    alpha : float, "auto" or dict, default="auto"
        Ridge penalty ``alpha / 2 * ||theta||^2`` added to the negative mean
        pseudo-log-likelihood.
        %(alpha_auto)s
        With ``ridge="tables"`` ``"auto"`` is the weight ``1 / n_samples`` on
        the full tables (symmetric as well), with ``symmetric=False`` on
        ``theta`` (its column problems are not centred).
        A dict gives one ridge per clique order, ``{1: alpha_fields,
        2: alpha_couplings}`` (values floats >= 0 or ``"auto"``; every order of
        the graph's cliques must be given, and only those). Direct coupling
        analysis (plmc, pydca, plmDCA) minimises ``-sum_n w_n PLL_n +
        lambda_h ||h||^2 + lambda_J ||J||^2`` over the full q-state tables,
        with plmc's ``lambda_h = 0.01`` and ``lambda_J = 0.01 (q - 1)(L - 1)``
        for ``L`` columns; divided by the effective number of sequences
        ``M_eff = sum_n w_n`` it is this objective with
        ``alpha={1: 2 * lambda_h / M_eff, 2: 2 * lambda_J / M_eff}``,
        ``ridge="tables"`` and ``sample_weight=w`` (as in
        ``benchmarks/protein_dca.py``).
    ridge : {"parameters", "tables"}, default="parameters"
        What ``alpha`` penalises: ``theta`` (the parameters normalised with
        respect to state 0), or every entry of every clique's full table (the
        DCA convention; the pseudo-likelihood depends only on the model the
        tables represent, so the ridge picks the tables of least norm, and
        ``theta_`` is their normalisation).
    symmetric : bool, default=True
        True: one coupling per pair, fitted jointly (symmetric PL). False:
        the asymmetric variant of plmDCA and pydca, pairwise graphs only: each
        column's conditional is fitted on its own (a multinomial logistic
        regression on its neighbours with the same ridges, each coupling's
        ``alpha`` halved as it is fitted twice) and each coupling is the mean
        of its two estimates in the reduced form.
    max_iter : int, default=1000
        Maximum L-BFGS iterations.
    tol : float, default=1e-8
        Convergence when no (projected) gradient component exceeds ``tol``.
    n_jobs : int, default=None
        Number of threads evaluating chunks of the objective in parallel
        (``None`` means 1; ``-1`` all processors). The objective is evaluated
        hundreds of times, so only a thread pool, opened once per fit, pays
        off; a user's ``joblib.parallel_config`` still applies. A fit whose
        evaluations are too small to pay for the threads (under
        ``2 * PL_MIN_WORK_PER_WORKER`` logits, a few thousand variables'
        worth, measured by ``benchmarks/parallel_threshold.py``) runs serially,
        whatever ``n_jobs`` and backend (a Dask cluster included).
    %(score_method)s
    %(max_bytes_scoring)s
    %(random_state_ais)s
    verbose : int, default=0
        A progress bar of the iterations at 1; at 2 or more also one line per iteration.

    Attributes
    ----------
    %(discrete_model_)s
    %(alpha_)s
    n_iter_ : int
        L-BFGS iterations run.
    pseudo_log_likelihood_ : float
        Mean pseudo-log-likelihood of the training data at the solution.
    n_records_ : int
        Distinct (variable, Markov-blanket configuration) pairs the data were
        compressed to (the records path), or rows times variables (the
        one-hot path).
    %(log_partition_ais_)s
    %(score_method_)s
    %(n_features_in_)s
    %(feature_names_in_)s

    See Also
    --------
    ExactMaxLikelihood, LAPEstimator

    Notes
    -----
    Minimises

    .. math::

        -\\frac{1}{N} \\sum_{n=1}^N \\sum_{m=1}^M \\log p(x_{mn} | x_{-mn}, \\theta)
        + \\frac{\\alpha}{2} \\|\\theta\\|^2

    (LAP paper, Eq. 6). The full conditional of ``x_m`` depends on the data
    only through ``x_m`` and its Markov blanket, so the rows are compressed
    once into the distinct blanket configurations of each variable with
    their counts; a binary grid variable has at most 32. Each evaluation then
    costs ``O(sum_m R_m * c_m * K)`` for ``R_m`` distinct configurations and
    ``c_m`` cliques containing ``m``, independent of the number of rows once
    ``R_m`` saturates. Parameters are boxed to ``+-30`` so a state never
    observed gives a finite (clipped) estimate when ``alpha = 0``.

    On dense pairwise graphs with many states (a Potts model over a protein
    alignment: complete graph, ``q = 21``) the records are as many as rows
    times variables and cost ``O(rows x parameters)``. There the rows are
    one-hot coded instead and each evaluation is two matrix products with the
    ``(L q) x (L q)`` coupling matrix, by row chunks (memory ``O(parameters +
    rows x variables)``), with columns split over ``n_jobs`` threads
    (:mod:`skmrf._kernels.pseudo_dense`); the path is chosen from the estimated
    cost of each. The products run in float32 when ``tol >= 1e-6``, the loss
    and gradient are summed in float64, and L-BFGS keeps its correction pairs
    in float32.

    References
    ----------
    Besag, J. Statistical analysis of non-lattice data. The Statistician,
    24(3):179-195, 1975.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.estimators._pseudo import PseudoLikelihoodEstimator
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
    >>> est = PseudoLikelihoodEstimator(graph="chain", alpha=0.1).fit(X)
    >>> est.theta_.shape
    (5,)
    """

    _parameter_constraints: dict = {
        **BaseDiscreteMRF._parameter_constraints,
        "random_state": ["random_state"],
        "alpha": [*ALPHA_CONSTRAINT, dict],
        "ridge": [StrOptions({"parameters", "tables"})],
        "symmetric": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }
    #: A memmap or a dask array is read by row chunks: compressed to the records (the records path),
    #: or read into one byte per entry (the one-hot path, which needs every row).
    _reads_chunks = True

    def __init__(
        self,
        graph="chain",
        *,
        n_states="auto",
        alpha="auto",
        ridge="parameters",
        symmetric=True,
        max_iter=1000,
        tol=1e-8,
        n_jobs=None,
        score_method="auto",
        max_bytes=None,
        random_state=None,
        verbose=0,
    ):
        self.graph = graph
        self.n_states = n_states
        self.alpha = alpha
        self.ridge = ridge
        self.symmetric = symmetric
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.score_method = score_method
        self.max_bytes = max_bytes
        self.random_state = random_state
        self.verbose = verbose

    def _ridge(self, n_samples):
        """``alpha_``: as in every estimator, or for a dict one float per clique order
        (``"auto"`` values are ``1 / n_samples``)."""
        if not isinstance(self.alpha, dict):
            return super()._ridge(n_samples)
        resolved = {}
        for order, value in self.alpha.items():
            if isinstance(order, bool) or not isinstance(order, Integral) or order < 1:
                raise ValueError(
                    f"The keys of alpha are clique orders (1 for the fields, 2 for pairwise couplings, ...); "
                    f"got the key {order!r}. Give, for example, alpha={{1: 1e-4, 2: 0.01}}."
                )
            if isinstance(value, str) and value == "auto":
                resolved[int(order)] = 1.0 / n_samples
            elif isinstance(value, Real) and not isinstance(value, bool) and np.isfinite(value) and value >= 0:
                resolved[int(order)] = float(value)
            else:
                raise ValueError(
                    f"alpha[{order!r}] must be a float >= 0 or 'auto'; got {value!r}. Every value of the "
                    "alpha dict is the ridge of the cliques of that order."
                )
        self.alpha_ = dict(sorted(resolved.items()))
        return self.alpha_

    def _ridge_penalty(self, layout=None):
        """As every estimator's, with a dict ``alpha`` as one value per clique."""
        return super()._ridge_penalty(layout) if isinstance(self.alpha, str) else self._clique_alphas()

    def _clique_alphas(self):
        """``alpha_`` as the kernel takes it: a float, or one value per clique of ``model_``."""
        if not isinstance(self.alpha_, dict):
            return self.alpha_
        orders = [len(c) for c in self.model_.cliques]
        extra = sorted(set(self.alpha_) - set(orders))
        if extra:
            raise ValueError(
                f"alpha gives the clique order {extra[0]}, but the graph has cliques of the orders "
                f"{sorted(set(orders))} only. Remove alpha[{extra[0]}]."
            )
        missing = sorted(set(orders) - set(self.alpha_))
        if missing:
            raise ValueError(
                f"alpha gives the clique orders {sorted(self.alpha_)}, but the graph has cliques of order "
                f"{missing}. Give alpha[{missing[0]}] too (1 is the fields, 2 the pairwise couplings)."
            )
        return np.array([self.alpha_[k] for k in orders])

    def _warn_if_unbounded(self, alpha, rows):
        """With a zero ridge on some cliques, warn when the data leave one of them with an empty cell."""
        zero = np.asarray(alpha) == 0
        if not zero.any():
            return
        empty = empty_cell_cliques(self.model_, table_counts(self.model_.layout, rows))
        if zero.ndim:
            position = {c: k for k, c in enumerate(self.model_.cliques)}
            empty = [c for c in empty if zero[position[c]]]
        if empty:
            warn_no_finite_estimate(
                type(self).__name__,
                empty,
                f"Their parameters diverge and are returned where the fit stopped, within +-{THETA_BOUND:g}.",
                graph=self.model_.graph,
            )

    def _fit_theta(self, rows):
        alpha = self._clique_alphas()
        self._warn_if_unbounded(alpha, rows)
        if not self.symmetric and any(len(c) > 2 for c in self.model_.cliques):
            raise ValueError(
                "symmetric=False fits each column's conditional on its own and averages the pairwise "
                f"couplings; the graph has cliques of {max(len(c) for c in self.model_.cliques)} variables. "
                "Use symmetric=True, or a pairwise graph."
            )
        log = ProgressLog(type(self).__name__, self.verbose)
        if self.verbose and self.symmetric:
            choice = choose_path(self.model_.layout, self.graph_, rows.n_rows, self.ridge == "tables")
            log(
                "Pseudo-likelihood by %s (estimated %.3gs per evaluation by records, %.3gs by one-hot products)",
                choice.path,
                choice.records_seconds,
                choice.one_hot_seconds,
            )

        with Progress(self.max_iter, type(self).__name__, self.verbose, unit="iteration", tol=self.tol) as bar:
            report = bar.reporter(
                log,
                "Iteration %(step)d, negative pseudo-log-likelihood = %(objective).8f, max |grad| = %(grad_max).2e",
                measure="grad_max",
            )
            theta, info = fit_pseudo_likelihood(
                self.model_.layout,
                self.graph_,
                rows,
                self._ridge_penalty() if self.symmetric and self.ridge == "parameters" else alpha,
                max_iter=self.max_iter,
                tol=self.tol,
                n_jobs=self.n_jobs,
                callback=report,
                verbose=self.verbose,
                ridge=self.ridge,
                symmetric=self.symmetric,
            )
        self.n_iter_, self.n_records_ = info.n_iter, info.n_records
        self.pseudo_log_likelihood_ = info.pseudo_log_likelihood
        warn_if_not_converged(type(self).__name__, info.n_iter, info.grad_max, self.tol, self.max_iter)
        return theta

    def standard_errors(self, X, sample_weight=None):
        """Sandwich (Godambe) standard errors of ``theta_``, from the rows X the model was fitted to.

        The pseudo-likelihood is not a likelihood, so the inverse of its curvature ``H`` alone
        understates the variance; the sandwich ``H^-1 J H^-1`` corrects it with ``J``, the
        spread of the rows' pseudo-likelihood gradients (Godambe's information: Varin, Reid and
        Firth, 2011, Section 2.3). Both are summed over the rows of X (with their weights) at
        ``theta_``; a ridge adds ``N alpha`` to ``H``'s diagonal.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training data.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, as in ``fit``.

        Returns
        -------
        ndarray of shape (n_params,)
            One standard error per entry of ``theta_``.

        Raises
        ------
        ValueError
            With ``symmetric=False`` or a ridge on the tables (``ridge="tables"`` and
            ``alpha > 0``): other objectives, with no sandwich here; when ``H`` is singular (a
            parameter the data do not determine, named).

        Warns
        -----
        PenalisedFitWarning
            When ``alpha > 0``: the errors are those of the penalised estimate.
        """
        check_is_fitted(self)
        alpha = np.atleast_1d(self._clique_alphas())
        if not self.symmetric or (self.ridge == "tables" and np.any(alpha > 0)):
            raise ValueError(
                "standard_errors is the sandwich of the symmetric pseudo-likelihood with a ridge on theta; "
                f"this fit has symmetric={self.symmetric}, ridge={self.ridge!r}. Refit with the defaults "
                "(alpha=0 for maximum pseudo-likelihood errors)."
            )
        if np.any(alpha > 0):
            warn_if_penalised(type(self).__name__, f"alpha={self.alpha!r} (alpha_={self.alpha_})", "standard errors")
        Xi = self._validate_score_data(X)
        weight = None
        if sample_weight is not None:
            weight = check_count_weights(sample_weight, len(Xi), type(self).__name__)
        total = float(len(Xi) if weight is None else weight.sum())
        model = self.model_
        H, J = pseudo_likelihood_information(model.layout, model.theta, Xi, weight)
        penalty = self._ridge_penalty()
        if not isinstance(penalty, CentredRidge):
            penalty = ridge_vector(model.layout, penalty, False)
        H += total * ridge_matrix(penalty, len(H))
        Hinv = covariance_from_information(H, lambda a: describe_parameter(model, a), type(self).__name__)
        return np.sqrt(np.maximum(np.diag(Hinv @ J @ Hinv), 0.0))
