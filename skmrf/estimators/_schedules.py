"""The schedules of :class:`~skmrf.MCMCMaxLikelihood`, as parameter objects.

Each schedule owns exactly the settings that mean something to it, so none is silently
ignored; both are scikit-learn parameter objects (``get_params(deep=True)``, ``clone`` and
``GridSearchCV`` over ``schedule__eps`` work), the way scikit-learn passes kernels.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import NamedTuple

from sklearn.base import BaseEstimator

from .._utils._sklearn_compat import Interval, StrOptions

__all__ = ["AdaptiveSchedule", "MCMCSchedule", "MomentMatchingSchedule", "TheorySchedule"]

_AUTO_COUNT = [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})]


class MCMCSchedule(NamedTuple):
    """The schedule a fit ran (``schedule_`` of :class:`~skmrf.MCMCMaxLikelihood`).

    ``kind`` is ``"theory"`` (Domke's Algorithm 1) or ``"adaptive"``; ``n_iter`` the steps
    allowed (the adaptive rule may stop earlier: see ``n_iter_``), ``n_chains`` the chains,
    ``n_sweeps`` the Gibbs sweeps per chain and step; ``fast_mixing`` whether the parameter
    set is inside a fast-mixing set, so that the mixing bound of the theory holds.
    """

    kind: str
    n_iter: int
    n_chains: int
    n_sweeps: int
    fast_mixing: bool


class AdaptiveSchedule(BaseEstimator):
    """The default schedule of :class:`~skmrf.MCMCMaxLikelihood`: practical, with no guarantee.

    Persistent Gibbs chains started at data rows, natural-gradient steps (the Fisher
    information measured on the chains), a start at the pseudo-likelihood estimate, a stopping
    rule on the gradient's noise level and the average of the iterates after it fired, in the
    package's parametrisation, for pairwise models with any numbers of states.

    The "auto" values follow the data (:func:`~skmrf._kernels.mcmc.defaults.adaptive_defaults`,
    whose docstring derives the rule): ``M`` chains and ``K`` averaged steps with ``M K >= tau
    n / 0.1^2``, so that the Monte-Carlo error of the estimate is a tenth of maximum
    likelihood's statistical error for ``n`` rows (the sum of the sample weights), ``tau``
    being the chains' autocorrelation time in steps; sweeps per step from the chains'
    autocorrelation per sweep measured at the start.

    Parameters
    ----------
    n_chains : int or "auto", default="auto"
        Chains ``M``. "auto": ``max(1000, tau n / (0.01 K))`` for ``K = 200`` averaged steps
        (fewer when the chains' states would pass 256 MiB; then ``K`` grows instead).
    n_sweeps : int or "auto", default="auto"
        Gibbs sweeps per chain and step. "auto": the ``v`` that minimises ``(v + 1) tau(v)``
        for the autocorrelation per sweep ``rho`` measured at the start (``tau(v) = (1 +
        rho^v) / (1 - rho^v)``, at most 50): one on weakly coupled models, 17-18 on the
        digits upsampled to 16x16.
    n_iter : int or "auto", default="auto"
        Gradient steps. "auto": at most ``max(2000, 2 K)``; the first phase ends by the
        stopping rule (after at least 50 steps) and the estimate averages the next ``max(K,
        k)`` iterates after the rule fired at step ``k``. An integer runs exactly that many
        (no stopping rule) and averages their last half.
    tol : float, default=0.5
        The stopping rule: stop when the gradient estimates averaged over the last 20 steps,
        squared and divided by their Monte-Carlo variance, are below ``1 + tol`` on average
        over the features (about 1 or less at the optimum, where only noise is left).
    init : {"data", "uniform"}, default="data"
        Start states of the chains: training rows (drawn by weight), or uniform.
    persistent : bool, default=True
        Keep the chains between steps (persistent contrastive divergence); False restarts
        them from ``init`` at every step.
    average : bool, default=True
        Return the average of the iterates after the stopping rule fired (of the last half
        without the rule); False returns the last one.
    lipschitz : float, default=None
        Plain gradient steps ``gradient / lipschitz``. None: natural-gradient steps (with the
        spectral set, ``L`` is the largest eigenvalue of the chains' feature covariance).
    start_iter : int, default=1000
        L-BFGS iterations of the pseudo-likelihood estimate the run starts from (the
        pseudo-likelihood kernel, run to ``tol=1e-8`` or these many iterations); 0 starts at
        zero.

    See Also
    --------
    TheorySchedule : Domke's provable schedule inside a fast-mixing set.

    Examples
    --------
    >>> from skmrf import AdaptiveSchedule, MCMCMaxLikelihood
    >>> est = MCMCMaxLikelihood("chain", schedule=AdaptiveSchedule(n_chains=2000, n_sweeps=5))
    >>> est.get_params()["schedule__n_chains"]
    2000
    """

    kind = "adaptive"

    _parameter_constraints: dict = {
        "n_chains": _AUTO_COUNT,
        "n_sweeps": _AUTO_COUNT,
        "n_iter": _AUTO_COUNT,
        "tol": [Interval(Real, 0, None, closed="neither")],
        "init": [StrOptions({"uniform", "data"})],
        "persistent": ["boolean"],
        "average": ["boolean"],
        "lipschitz": [Interval(Real, 0, None, closed="neither"), None],
        "start_iter": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(
        self,
        n_chains="auto",
        n_sweeps="auto",
        n_iter="auto",
        tol=0.5,
        init="data",
        persistent=True,
        average=True,
        lipschitz=None,
        start_iter=1000,
    ):
        self.n_chains = n_chains
        self.n_sweeps = n_sweeps
        self.n_iter = n_iter
        self.tol = tol
        self.init = init
        self.persistent = persistent
        self.average = average
        self.lipschitz = lipschitz
        self.start_iter = start_iter

    def _given(self):
        """``(n_iter, n_chains, n_sweeps)`` as given (ints or ``"auto"``); the "auto" ones are
        resolved from the data by :func:`~skmrf._kernels.mcmc.defaults.plan_adaptive`."""
        return self.n_iter, self.n_chains, self.n_sweeps


class TheorySchedule(BaseEstimator):
    """Domke's (2015) Algorithm 1 with the K/M/v schedule of its theorems, for binary models.

    Inside a fast-mixing set the result is within ``eps`` of the best parameters in the set
    with probability ``1 - delta``. The theory's constants are conservative, so its schedules
    are often astronomically long; fits over ``MAX_WORK`` single-site updates are refused with
    the settings that would shorten them.

    Parameters
    ----------
    eps : float, default=1.0
        Target accuracy: ``eps_theta`` (parameter distance, ``alpha > 0``) or ``eps_f``
        (objective, ``alpha = 0``).
    delta : float, default=0.1
        Allowed probability of missing ``eps``.
    n_iter : int or "auto", default="auto"
        Gradient steps ``K``; "auto": the theory's.
    n_chains : int or "auto", default="auto"
        Samples (chains) ``M`` per step; "auto": the theory's.
    n_sweeps : int or "auto", default="auto"
        Gibbs sweeps per chain and step; "auto": ``ceil(v / n_features)`` with the theory's
        ``v`` single-site transitions.
    init : {"uniform", "data"}, default="uniform"
        Start states of the chains: uniform (the paper's ``r``), or training rows (contrastive
        divergence).
    persistent : bool, default=False
        Keep the chains between steps (outside the theory's guarantee, whose proof needs
        fresh chains at every step, Section 7).
    average : bool, default=True
        Return the average of all ``K`` iterates (Theorem 2's output); False returns the last
        one (Corollary 9's).
    lipschitz : float, default=None
        ``L``; the step is ``gradient / L``. None: Theorem 1's ``4 R2^2 + alpha`` with
        ``R2^2 = n_features + n_edges``.

    See Also
    --------
    AdaptiveSchedule : the default, practical schedule.
    skmrf.fast_mixing_schedule : the K/M/v schedule on plain numbers.

    Examples
    --------
    >>> from skmrf import MCMCMaxLikelihood, TheorySchedule
    >>> est = MCMCMaxLikelihood("chain", schedule=TheorySchedule(eps=0.5), alpha=1.0)
    >>> est.get_params()["schedule__eps"]
    0.5
    """

    kind = "theory"

    _parameter_constraints: dict = {
        "eps": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "n_iter": _AUTO_COUNT,
        "n_chains": _AUTO_COUNT,
        "n_sweeps": _AUTO_COUNT,
        "init": [StrOptions({"uniform", "data"})],
        "persistent": ["boolean"],
        "average": ["boolean"],
        "lipschitz": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(
        self,
        eps=1.0,
        delta=0.1,
        n_iter="auto",
        n_chains="auto",
        n_sweeps="auto",
        init="uniform",
        persistent=False,
        average=True,
        lipschitz=None,
    ):
        self.eps = eps
        self.delta = delta
        self.n_iter = n_iter
        self.n_chains = n_chains
        self.n_sweeps = n_sweeps
        self.init = init
        self.persistent = persistent
        self.average = average
        self.lipschitz = lipschitz

    def _given(self):
        """``(n_iter, n_chains, n_sweeps)`` as given (ints or ``"auto"``)."""
        return self.n_iter, self.n_chains, self.n_sweeps


class MomentMatchingSchedule(BaseEstimator):
    """Moment matching, as Boltzmann-machine DCA (bmDCA, adabmDCA) fits generative Potts models.

    Persistent Gibbs chains, a start at the independent-site model (couplings zero, fields the
    log frequencies), constant-rate gradient steps in centred coordinates with a fixed diagonal
    preconditioner, and a stop as soon as the chains reproduce the data's connected
    correlations and one-site frequencies (adabmDCA's criterion): the estimate is the model
    whose chains met it (:func:`~skmrf._kernels.mcmc.moments.fit_moments`). For pairwise models
    with any numbers of states, unconstrained.

    The chains are persistent, so they follow the model as it is learned; the criterion is
    measured on them, as adabmDCA measures it. Chains that lag the model can meet it while the
    model's own equilibrium does not: every step therefore also tests whether the chains forgot
    their states of the step before (adabmDCA's overlap test), and a fit that stops on chains
    that did not warns. ``n_sweeps="auto"`` doubles the sweeps until they do and stops only on
    such chains, at a cost that grows with the model's mixing time. ``benchmarks/potts_moments.py``
    measures both, and the statistics of fresh chains run to equilibrium.

    Parameters
    ----------
    n_chains : int, default=4000
        Persistent chains; their moments are the model's in the gradient and the criterion
        (``M`` chains leave a noise of about ``sqrt(f (1 - f) / M)`` on a frequency ``f``, which
        lowers the measured r: more chains, an earlier stop). Even a perfect model's ``M``
        samples fall short of the data's r: on 75 columns of a protein alignment, ``M`` rows
        drawn from the data itself gave connected r 0.91, 0.95, 0.975 and 0.99 for ``M`` = 1000,
        2000, 4000 and 8000 (``benchmarks/results/potts_moments.txt``), so a target of 0.95 needs
        some 4000 chains there; in practice the model's own error adds to the noise, and there
        4000 chains plateaued at r 0.93 where 8000 reached 0.95.
    n_sweeps : int or "auto", default=5
        Gibbs sweeps per chain and step. "auto": 5 at first, doubled after every step whose
        chains still agree with their own states of the step before more than with other
        chains' (by more than 3 standard errors), up to 1280; the run then stops only on a step
        whose chains had decorrelated.
    n_iter : int, default=2000
        Steps at most; a run that ends there without meeting the targets warns.
    learning_rate : float, default=0.1
        The step on each centred coordinate is ``learning_rate`` times its gradient divided by
        the variance of its centred feature under the independent-site model (plus
        ``damping``), and at most ``learning_rate``.
    target : float, default=0.95
        Pearson r of the chains' and the data's connected correlations ``f_ij(a, b) - f_i(a)
        f_j(b)`` over the graph's edges and all pairs of states (adabmDCA's criterion) at which
        the run stops.
    target_frequencies : float, default=0.99
        Pearson r of the one-site frequencies (all states) also required to stop.
    damping : float, default=0.01
        Added to every centred feature's variance in the preconditioner: it bounds the step of
        features the data barely show.

    See Also
    --------
    AdaptiveSchedule : the default schedule, for parameter accuracy.

    Examples
    --------
    >>> from skmrf import MCMCMaxLikelihood, MomentMatchingSchedule
    >>> from skmrf.protein import make_synthetic_alignment
    >>> X = make_synthetic_alignment(1000, 10, n_states=4, n_contacts=4, coupling_scale=1.0, random_state=0).X
    >>> schedule = MomentMatchingSchedule(n_chains=2000)
    >>> est = MCMCMaxLikelihood("complete", n_states=4, schedule=schedule, random_state=0).fit(X)
    >>> est.schedule_.kind, est.converged_, bool(est.trace_["pearson_connected"][-1] >= 0.95)
    ('moments', True, True)
    """

    kind = "moments"

    _parameter_constraints: dict = {
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "n_sweeps": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "target": [Interval(Real, -1, 1, closed="both")],
        "target_frequencies": [Interval(Real, -1, 1, closed="both")],
        "damping": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        n_chains=4000,
        n_sweeps=5,
        n_iter=2000,
        learning_rate=0.1,
        target=0.95,
        target_frequencies=0.99,
        damping=0.01,
    ):
        self.n_chains = n_chains
        self.n_sweeps = n_sweeps
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.target = target
        self.target_frequencies = target_frequencies
        self.damping = damping
