"""Besag's maximum pseudo-likelihood for discrete MRFs (the kernel: :mod:`skmrf.kernels.pseudo`)."""

from __future__ import annotations

from numbers import Integral, Real

from ..kernels.pseudo import PL_MIN_WORK_PER_WORKER, PseudoLikelihoodObjective, fit_pseudo_likelihood
from ..solvers import warn_if_not_converged
from ..utils._docstrings import fill_doc
from ..utils._sklearn_compat import Interval
from ..utils._verbose import ProgressLog
from ._base import ALPHA_CONSTRAINT, N_JOBS_CONSTRAINT, BaseDiscreteMRF
from ._existence import warn_if_unbounded

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
    alpha : float or "auto", default="auto"
        Ridge penalty ``alpha / 2 * ||theta||^2`` added to the negative mean
        pseudo-log-likelihood.
        %(alpha_auto)s
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
        Print one line per iteration when positive.

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
        compressed to.
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

    References
    ----------
    Besag, J. Statistical analysis of non-lattice data. The Statistician,
    24(3):179-195, 1975.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.estimators.pseudo import PseudoLikelihoodEstimator
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
    >>> est = PseudoLikelihoodEstimator(graph="chain", alpha=0.1).fit(X)
    >>> est.theta_.shape
    (5,)
    """

    _parameter_constraints: dict = {
        **BaseDiscreteMRF._parameter_constraints,
        "random_state": ["random_state"],
        "alpha": ALPHA_CONSTRAINT,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        graph="chain",
        *,
        n_states="auto",
        alpha="auto",
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
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.score_method = score_method
        self.max_bytes = max_bytes
        self.random_state = random_state
        self.verbose = verbose

    def _fit_theta(self, rows):
        if self.alpha_ == 0:
            warn_if_unbounded(self, rows)
        log = ProgressLog(type(self).__name__, self.verbose)

        def report(it, f, g):
            log("Iteration %d, negative pseudo-log-likelihood = %.8f, max |grad| = %.2e", it, f, g)

        theta, info = fit_pseudo_likelihood(
            self.model_.layout,
            self.graph_,
            rows,
            self.alpha_,
            max_iter=self.max_iter,
            tol=self.tol,
            n_jobs=self.n_jobs,
            callback=report,
            verbose=self.verbose,
        )
        self.n_iter_, self.n_records_ = info.n_iter, info.n_records
        self.pseudo_log_likelihood_ = info.pseudo_log_likelihood
        warn_if_not_converged(type(self).__name__, info.n_iter, info.grad_max, self.tol, self.max_iter, stacklevel=5)
        return theta
