"""The schedules of :class:`~skmrf.MCMCMaxLikelihood`, as parameter objects.

Each schedule owns exactly the settings that mean something to it (none is silently ignored) and is a
scikit-learn parameter object, as a kernel is: ``clone`` and ``GridSearchCV`` over ``schedule__eps`` work.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator

from .._kernels.mcmc.adaptive import ADAPTIVE_MIN_ITER, ADAPTIVE_WINDOW, fit_adaptive
from .._kernels.mcmc.chains import binary_theta
from .._kernels.mcmc.constraint import constraint_set
from .._kernels.mcmc.defaults import budget_notes, plan_adaptive
from .._kernels.mcmc.moments import AUTO_START_SWEEPS, confirmations, fit_moments
from .._kernels.mcmc.theory import fit_theory, ising_data_statistics, plan_theory
from .._solvers._convergence import warn_not_converged
from .._utils._progress import Progress
from .._utils._sklearn_compat import Interval, StrOptions
from .._utils._verbose import ProgressLog
from .._utils._warnings import warn
from .._utils.validation import check_generator
from ..inference._gibbs import colour_classes, is_binary_pairwise
from ._existence import table_counts, warn_if_unbounded

__all__ = ["AdaptiveSchedule", "MCMCSchedule", "MomentMatchingSchedule", "ScheduleFit", "TheorySchedule"]

_AUTO_COUNT = [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})]


class MCMCSchedule(NamedTuple):
    """The schedule a fit ran (``schedule_`` of :class:`~skmrf.MCMCMaxLikelihood`).

    ``kind`` is ``"adaptive"``, ``"theory"`` (Domke's Algorithm 1) or ``"moments"``; ``n_iter`` the steps
    allowed (the adaptive rule may stop earlier: see ``n_iter_``), ``n_chains`` the chains,
    ``n_sweeps`` the Gibbs sweeps per chain and step; ``fast_mixing`` whether the parameter
    set is inside a fast-mixing set, so that the mixing bound of the theory holds.
    """

    kind: str
    n_iter: int
    n_chains: int
    n_sweeps: int
    fast_mixing: bool


class ScheduleFit(NamedTuple):
    """What every schedule's run returns; :class:`~skmrf.MCMCMaxLikelihood` stores each field as
    the fitted attribute of its name plus ``_`` (None: the schedule has no such figure)."""

    theta: np.ndarray
    schedule: MCMCSchedule
    n_iter: int
    converged: bool
    n_averaged: int
    trace: dict
    max_coupling: float | None = None
    lipschitz: float | None = None
    sweep_autocorrelation: float | None = None
    moment_ratio: float | None = None
    schedule_auto: tuple | None = None
    mixing_constant: float | None = None
    mixing_rate: float | None = None
    suff_stat_bound: float | None = None
    distance_bound: float | None = None
    mc_error_fraction: float | None = None
    #: ``(fields, couplings)`` in the ``{-1, +1}`` coordinates when the schedule works in them.
    ising: tuple | None = None


def _step_line(k, gradient, noise_ratio=None, step_norm=None, **_):
    """One progress line per step: the gradient estimate (its noise ratio, the step's length)."""
    if noise_ratio is None:
        return "Iteration %d, |grad| = %.4g" % (k, np.linalg.norm(gradient))
    norm = np.linalg.norm(gradient)
    return "Iteration %d, |grad| = %.4g, mean grad^2 / noise = %.3g, |step| = %.3g" % (k, norm, noise_ratio, step_norm)


def _moments_line(k, gradient, r_connected, r_frequencies, n_sweeps, decorrelated, r_fresh, **_):
    line = "Iteration %d, |grad| = %.4g, connected r = %.4f, frequencies r = %.4f, %d sweeps, %s"
    state = "decorrelated" if decorrelated else "not decorrelated"
    line = line % (k, np.linalg.norm(gradient), r_connected, r_frequencies, n_sweeps, state)
    return line if np.isnan(r_fresh) else f"{line}, fresh chains' connected r = {r_fresh:.4f}"


def _constraint(est, positions, theory, given=()):
    """The constraint set of ``est`` (``max_coupling``, ``projection``) for a projected schedule."""
    layout = est.model_.layout
    return constraint_set(
        est.projection,
        est.max_coupling,
        layout,
        positions,
        est.graph_.max_degree,
        binary=is_binary_pairwise(layout),
        required=theory and any(isinstance(g, str) for g in given),
        unconstrained=not theory,
    )


class _ChainSchedule(BaseEstimator):
    def _given(self):
        """``(n_iter, n_chains, n_sweeps)`` as given: ints, or ``"auto"`` for the plan to resolve."""
        return self.n_iter, self.n_chains, self.n_sweeps


class AdaptiveSchedule(_ChainSchedule):
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

    #: The advice of the fit's refusal of non-finite parameters, and what is defined for binary
    #: variables only (None: nothing).
    _smaller_steps, _binary_only = "a larger lipschitz", None

    def _run(self, est, rows, positions):
        """Persistent chains, natural-gradient steps, noise-level stopping rule, averaged iterates."""
        model, colours, name = est.model_, colour_classes(est.graph_), type(est).__name__
        constraint = _constraint(est, positions, theory=False)
        rng = check_generator(est.random_state)
        log = ProgressLog(name, est.verbose)
        if est.alpha_ == 0:
            warn_if_unbounded(est, rows)
        theta0 = constraint.project_theta(est._start(rows, self.start_iter, log))
        plan = plan_adaptive(self._given(), self.tol, model.layout, theta0, colours, rows, rng)
        n_iter, n_chains, n_sweeps = plan.n_iter, plan.n_chains, plan.n_sweeps
        chains_cut, steps_cut = budget_notes(plan, rows.total)
        if chains_cut is not None:
            warn(f"{name}: {chains_cut}", UserWarning)
        mean_stats = table_counts(model.layout, rows)[model.layout.theta_pos] / rows.total
        with est._pool(n_chains, n_sweeps) as parallel, Progress(n_iter, name, est.verbose) as bar:
            theta, info = fit_adaptive(
                model.layout,
                colours,
                rows,
                mean_stats,
                est._ridge_penalty(),
                theta0,
                constraint,
                n_chains=n_chains,
                n_sweeps=n_sweeps,
                n_iter=n_iter,
                tol=plan.tol,
                n_average=plan.n_average,
                init=self.init,
                persistent=self.persistent,
                lipschitz=self.lipschitz,
                average=self.average,
                rng=rng,
                parallel=parallel,
                callback=bar.reporter(log, _step_line) if est.verbose else None,
            )
        _warn_if_adaptive_not_converged(name, info, n_chains, n_iter, self.tol, steps_cut or "")
        return ScheduleFit(
            theta,
            MCMCSchedule(self.kind, n_iter, n_chains, n_sweeps, constraint.fast_mixing),
            info.n_iter,
            info.converged,
            info.n_averaged,
            info.trace,
            max_coupling=constraint.bound,
            lipschitz=info.lipschitz,
            sweep_autocorrelation=plan.sweep_autocorrelation,
            moment_ratio=info.moment_ratio,
            mc_error_fraction=plan.mc_fraction,
        )


def _warn_if_adaptive_not_converged(name, info, n_chains, n_iter, tol, budget):
    """The adaptive schedule's warnings: moments of fresh chains far from the data's, or no stop by
    the noise-level rule (``budget``: a sentence on the steps the work budget cut, or "")."""
    if info.moment_ratio is not None and info.moment_ratio > info.moment_ratio_max:
        steps = info.trace["step_noise_ratio"][-ADAPTIVE_WINDOW:]
        warn_not_converged(
            name,
            f"to the maximum-likelihood estimate: at the returned parameters, {n_chains} fresh chains give "
            f"model moments whose squared distance from the data's is {info.moment_ratio:.3g} times its "
            "variance (Monte-Carlo and the data's sampling) on average over the parameters (at most about 1 "
            f"at the estimate; accepted up to "
            f"{info.moment_ratio_max:.3g}, moment_ratio_), and over the last {len(steps)} steps each gradient "
            f"was {steps.mean():.3g} times its noise (1.3 to 3.3 measured where the iterates settled; larger "
            "means the steps oscillate or drift)",
            "Do not use these parameters as maximum-likelihood estimates. Raise the schedule's n_chains (more "
            "chains estimate the natural step's Fisher matrix better: on the 32 x 32 Ising torus with 1000 rows, "
            "1063 chains oscillated and 4000 converged) and n_iter, or compare with PseudoLikelihoodEstimator, "
            "whose estimate is consistent and needs no chains." + budget,
        )
    elif not info.converged:
        ratio = info.trace["noise_ratio"][max(ADAPTIVE_MIN_ITER, ADAPTIVE_WINDOW) - 1 : n_iter // 2]
        warn_not_converged(
            name,
            f"in {n_iter} steps: in its first {n_iter // 2} the mean gradient of the last {ADAPTIVE_WINDOW} "
            f"steps stayed at least {ratio.min(initial=np.inf):.3g} times its Monte-Carlo variance (the rule "
            f"needs below {1 + tol:g}); the estimate averages the last half of the steps",
            "Raise the schedule's n_iter, or n_chains for less noise." + budget,
        )


class TheorySchedule(_ChainSchedule):
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

    _smaller_steps, _binary_only = "a larger lipschitz", "MCMCMaxLikelihood's theory schedule is defined"

    def _run(self, est, rows, positions):
        """Algorithm 1 of Domke (2015) in the ``{-1, +1}`` coordinates, converted to ``theta``."""
        model, n, edges, name = est.model_, est.model_.n_variables, positions.edges, type(est).__name__
        constraint = _constraint(est, positions, theory=True, given=self._given())
        rng = check_generator(est.random_state)
        log = ProgressLog(name, est.verbose)
        mean_stats = ising_data_statistics(rows, edges)
        geometry = constraint.geometry
        plan = plan_theory(
            self._given(),
            self.eps,
            self.delta,
            est.alpha_,
            self.lipschitz,
            geometry,
            est.projection,
            mean_stats[:n],
            len(edges),
            est.graph_.max_degree,
        )
        steps = plan.schedule
        with est._pool(steps.n_samples, steps.n_sweeps) as parallel, Progress(steps.n_iter, name, est.verbose) as bar:
            phi, info = fit_theory(
                model.layout,
                colour_classes(est.graph_),
                rows,
                mean_stats,
                est.alpha_,
                plan,
                geometry,
                init=self.init,
                persistent=self.persistent,
                average=self.average,
                reproject=est.projection == "spectral",
                rng=rng,
                parallel=parallel,
                callback=bar.reporter(log, _step_line) if est.verbose else None,
            )
        max_coupling, mixing_constant, mixing_rate = geometry[:3]
        lipschitz, suff_stat_bound, distance_bound = plan[2:]
        return ScheduleFit(
            binary_theta(phi, model.n_params, positions),
            MCMCSchedule(self.kind, *steps, constraint.fast_mixing),
            steps.n_iter,
            True,
            steps.n_iter if self.average else 1,
            info.trace,
            max_coupling=max_coupling,
            lipschitz=lipschitz,
            schedule_auto=plan.auto,
            mixing_constant=mixing_constant,
            mixing_rate=mixing_rate,
            suff_stat_bound=suff_stat_bound,
            distance_bound=distance_bound,
            ising=(phi[:n].copy(), phi[n:].copy()),
        )


class MomentMatchingSchedule(BaseEstimator):
    """Moment matching, as Boltzmann-machine DCA (bmDCA, adabmDCA) fits generative Potts models.

    Persistent Gibbs chains, a start at the independent-site model (couplings zero, fields the
    log frequencies), gradient steps in centred coordinates (constant, then shrinking), a stop when the
    model reproduces the data's connected correlations and one-site frequencies (adabmDCA's
    criterion) (:func:`~skmrf._kernels.mcmc.moments.fit_moments`). For pairwise models with any
    numbers of states, unconstrained.

    The chains are persistent, so they follow the model as it is learned, and the criterion is
    first measured on them, as adabmDCA measures it. Chains that lag the model can meet it while
    the model's own equilibrium does not, so a stop must be confirmed: ``n_chains`` fresh chains
    from uniformly random states run 100 sweeps under the estimate, and the run stops only when
    they meet the criterion too (``trace_["fresh_connected"]``); confirmations take at most a
    fifth of the run's sweeps. From the first step whose chains meet the criterion on, the steps
    shrink as ``20 / (20 + j)`` after ``j`` steps (``trace_["step_scale"]``): constant steps
    outrun the persistent chains, and on a diverse family fresh chains' r then falls as the fit
    goes on. A run that ends at ``n_iter`` unconfirmed warns and returns the checked estimate
    whose fresh chains came closest. ``n_sweeps="auto"`` also doubles the sweeps
    per step until the persistent chains forget their states of the step before (adabmDCA's
    overlap test).
    ``benchmarks/mcmc_real.py`` measures the default on two protein families and
    ``benchmarks/research/potts_schedule_probe.py`` the choices behind it.

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
    learning_rate : float, default=1.0
        The step on each centred coordinate is ``learning_rate`` times its gradient divided by
        the variance of its centred feature under the independent-site model plus ``damping``,
        and at most ``learning_rate``, until the first step whose chains meet the targets; from
        there on the steps shrink (above) and the estimate is the average of the iterates (over
        about the last 50 steps), which takes the steps' noise out of it. Measured on 75 columns
        of DHFR (4000 chains, fresh chains' r after 100 sweeps,
        ``benchmarks/results/potts_schedule_probe.txt``, constant rates): 0.93 after about 250
        steps at rate 1, 350-400 at 0.6; at 0.1, 0.92 after 1000 steps.
    target : float, default=0.93
        Pearson r of the chains' and the data's connected correlations ``f_ij(a, b) - f_i(a)
        f_j(b)`` over the graph's edges and all pairs of states (adabmDCA's criterion) at which
        the run stops, on the persistent chains and then on fresh ones. adabmDCA's 0.95 is
        measured on its persistent chains only: on DHFR its models' fresh chains gave 0.930-0.937,
        the quality this default asks of fresh chains.
    target_frequencies : float, default=0.99
        Pearson r of the one-site frequencies (all states) also required to stop.
    damping : float, default=1.0
        Added to every centred feature's variance in the preconditioner. At 1 the steps are about
        the plain gradient's, as adabmDCA takes them; smaller values give rare pairs of states
        larger steps, which persistent chains follow but the model's own equilibrium does not (at
        0.01, fresh chains' r 0.09-0.13 on DHFR where the persistent chains gave 0.90-0.92).

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
    >>> est.schedule_.kind, est.converged_, bool(est.trace_["fresh_connected"][-1] >= 0.93)
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
        learning_rate=1.0,
        target=0.93,
        target_frequencies=0.99,
        damping=1.0,
    ):
        self.n_chains = n_chains
        self.n_sweeps = n_sweeps
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.target = target
        self.target_frequencies = target_frequencies
        self.damping = damping

    _smaller_steps, _binary_only = "a smaller learning_rate", None

    def _run(self, est, rows, positions):
        """Moment matching from the independent-site model (bmDCA's fit), unconstrained."""
        if est.max_coupling is not None:
            raise ValueError(
                "MCMCMaxLikelihood's moment-matching schedule is unconstrained, but "
                f"max_coupling={est.max_coupling!r} was given: leave max_coupling=None, or use "
                "schedule='adaptive' for a constrained fit."
            )
        model, name = est.model_, type(est).__name__
        if est.alpha_ == 0:
            warn_if_unbounded(est, rows)
        n_iter, n_chains, n_sweeps = self.n_iter, self.n_chains, self.n_sweeps
        mean_stats = table_counts(model.layout, rows)[model.layout.theta_pos] / rows.total
        log = ProgressLog(name, est.verbose)
        with (
            est._pool(n_chains, AUTO_START_SWEEPS if n_sweeps == "auto" else n_sweeps, threads=True) as parallel,
            Progress(n_iter, name, est.verbose) as bar,
        ):
            theta, info = fit_moments(
                model.layout,
                colour_classes(est.graph_),
                rows,
                mean_stats,
                est._ridge_penalty(),
                n_chains=n_chains,
                n_sweeps=n_sweeps,
                n_iter=n_iter,
                learning_rate=self.learning_rate,
                target=self.target,
                target_frequencies=self.target_frequencies,
                damping=self.damping,
                rng=check_generator(est.random_state),
                parallel=parallel,
                callback=bar.reporter(log, _moments_line) if est.verbose else None,
            )
        last_sweeps = int(info.trace["n_sweeps"][-1])
        if not info.converged:
            warn_not_converged(
                name,
                f"in {n_iter} steps: the chains' connected correlations reached Pearson r "
                f"{info.trace['pearson_connected'].max():.3f} at best (target {self.target:g}), the frequencies "
                f"{info.trace['pearson_frequencies'].max():.4f} (target {self.target_frequencies:g}); "
                f"{confirmations(info.trace['fresh_connected'])}",
                "Raise the schedule's n_iter, or its n_chains for less noise in the measured r.",
            )
        schedule = MCMCSchedule(self.kind, n_iter, n_chains, last_sweeps, False)
        return ScheduleFit(theta, schedule, info.n_iter, info.converged, info.n_averaged, info.trace)
