"""MCMC maximum likelihood (Domke 2015): the estimator; the kernels are in :mod:`skmrf._kernels.mcmc`.

:class:`MCMCMaxLikelihood` validates once and hands the fit to its schedule object
(:class:`AdaptiveSchedule`, :class:`TheorySchedule` or :class:`MomentMatchingSchedule`), whose
``_run`` builds its constraint set, calls its kernel (:func:`~skmrf._kernels.mcmc.adaptive.fit_adaptive`
started at the pseudo-likelihood kernel's estimate, :func:`~skmrf._kernels.mcmc.theory.fit_theory`
or :func:`~skmrf._kernels.mcmc.moments.fit_moments`), warns as its method needs, and returns one
record (:class:`~skmrf.estimators._schedules.ScheduleFit`) that the estimator stores.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from .._kernels.mcmc import chains
from .._kernels.mcmc.chains import pairwise_positions
from .._kernels.pseudo import fit_pseudo_likelihood
from .._utils._budgets import MOMENTS_MIN_WORK_PER_THREAD
from .._utils._docstrings import fill_doc
from .._utils._parallel import parallel_or_serial, workers_for
from .._utils._sklearn_compat import Interval, StrOptions, check_is_fitted
from .._utils._threads import single_blas_thread
from ..exceptions import MixingBoundWarning
from ..inference._gibbs import is_binary_pairwise
from ..model._ising import binary_to_ising
from ._base import ALPHA_CONSTRAINT, N_JOBS_CONSTRAINT, BaseDiscreteMRF
from ._protocol import Trace
from ._schedules import AdaptiveSchedule, MCMCSchedule, MomentMatchingSchedule, ScheduleFit, TheorySchedule

__all__ = [
    "AdaptiveSchedule",
    "MCMCMaxLikelihood",
    "MCMCSchedule",
    "MixingBoundWarning",
    "MomentMatchingSchedule",
    "TheorySchedule",
]

_SCHEDULES = {"adaptive": AdaptiveSchedule, "theory": TheorySchedule, "moments": MomentMatchingSchedule}

#: Tolerance of the pseudo-likelihood start (its L-BFGS projected gradient).
START_TOL = 1e-8


@fill_doc
class MCMCMaxLikelihood(BaseDiscreteMRF):
    """Maximum likelihood by projected gradient with MCMC gradients.

    Three schedules share one estimator, each a parameter object that owns its settings:

    - :class:`AdaptiveSchedule` (default, ``schedule="adaptive"``): persistent Gibbs chains
      started at data rows, as many as hold the Monte-Carlo error at a tenth of the
      statistical error (they grow with the rows), as many sweeps per step as the chains'
      autocorrelation measured at the start calls for, natural-gradient steps (the Fisher
      information measured on the chains), a start at the pseudo-likelihood estimate, a
      stopping rule on the gradient's noise level and the average of the iterates after it
      (:func:`~skmrf._kernels.mcmc.defaults.adaptive_defaults`). It works in the package's
      parametrisation, for pairwise models with any numbers of states, with or without a
      constraint set. No guarantee comes with it.
    - :class:`TheorySchedule` (``schedule="theory"``): Algorithm 1 of Domke (2015) for binary
      pairwise models, with the K/M/v schedule of its theorems (:func:`fast_mixing_schedule`),
      inside a fast-mixing set: the result is within ``eps`` of the best parameters in the set
      with probability ``1 - delta``.
    - :class:`MomentMatchingSchedule` (``schedule="moments"``): what Boltzmann-machine DCA
      (bmDCA, adabmDCA) runs to make a Potts model generative: a start at the independent-site
      model, centred preconditioned steps at a constant rate, and a stop when the persistent
      chains reproduce the data's connected correlations and frequencies (Pearson r, adabmDCA's
      criterion); the estimate is the model those chains ran under. Unconstrained.

    Parameters
    ----------
    %(graph)s
        Pairwise only: every factor must be a node or an edge.
    %(n_states)s
    schedule : AdaptiveSchedule, TheorySchedule, MomentMatchingSchedule or str, default="adaptive"
        The algorithm and its settings (chains, sweeps, steps, stopping rule, ``eps``...); a
        string (``"adaptive"``, ``"theory"`` or ``"moments"``) stands for the schedule object
        with its defaults.
    max_coupling : float or None, default=None
        A constraint set on the couplings. With ``projection="box"``: ``|J_ij| <= beta`` on
        the ``{-1, +1}`` couplings of a binary model (``theta_ij = 4 J_ij``), and
        ``|theta_ij(s, t)| <= beta`` on every pair entry of a model with more states. Either
        way the Dobrushin influence of a neighbour is at most ``tanh(beta)`` (Notes), so the
        set is fast-mixing when ``max_degree * tanh(beta) < 1``. With ``"spectral"``
        (binary only): ``||R(J)||_2 <= c``, fast-mixing when ``c < 1``. None: no constraint
        with the adaptive schedule; the default fast-mixing set (``artanh(0.8 / max_degree)``
        or ``0.8``) with the theory schedule. Outside the fast-mixing range the set is a
        constraint, not a guarantee: a ``MixingBoundWarning`` says so and
        ``schedule_.fast_mixing`` is False (the theory schedule's "auto" values refuse it).
    projection : {"box", "spectral"}, default="box"
        The constraint set's shape. The spectral projection is Dykstra's algorithm
        (Domke & Liu 2013).
    alpha : float or "auto", default="auto"
        Ridge penalty ``alpha / 2 * ||theta||^2`` added to the mean negative log-likelihood:
        on the package's parameters with the adaptive schedule (as every discrete estimator),
        on the paper's ``{-1, +1}`` parameters ``(h, J)`` with the theory schedule (its
        ``lambda``: ``alpha > 0`` selects the strongly convex analysis, Corollary 9,
        ``alpha = 0`` the convex one, Theorem 5). With the theory schedule ``"auto"`` is
        the weight ``1 / n_samples`` on ``(h, J)``, parameters that ``x -> 1 - x`` only
        changes in sign.
        %(alpha_auto)s
    %(score_method)s
    max_bytes : int, default=None
        Memory budget of one junction-tree calibration for exact scoring.
    random_state : int, RandomState instance or None, default=None
        Seeds the start states and every Gibbs update. The streams of the chain blocks are
        drawn up front, so the result does not depend on ``n_jobs``.
    n_jobs : int, default=None
        Parallel jobs over blocks of 4096 chains (joblib). With one block, or steps too small
        to pay for the pool (under ``2 * MCMC_MIN_WORK_PER_WORKER`` single-site updates,
        measured by ``benchmarks/parallel_threshold.py``), the chains run serially, whatever
        ``n_jobs`` and backend (a Dask cluster included).
    verbose : int, default=0
        A progress bar of the steps at 1; at 2 or more also one line per step (the gradient
        estimate, its noise ratio, the time); ``trace_`` keeps them.

    Attributes
    ----------
    graph_ : MRFGraph
    n_states_ : ndarray of shape (n_features,)
    model_ : DiscreteMRF
        The fitted model in the package's parametrisation.
    %(alpha_)s
    theta_ : ndarray of shape (n_params,)
        Alias of ``model_.theta``.
    edges_ : ndarray of shape (n_edges, 2)
    ising_fields_ : ndarray of shape (n_features,)
        Binary models: the fitted ``{-1, +1}`` fields ``h``.
    ising_couplings_ : ndarray of shape (n_edges,)
        Binary models: the fitted ``{-1, +1}`` couplings ``J``.
    schedule_ : MCMCSchedule
        ``(kind, n_iter, n_chains, n_sweeps, fast_mixing)``: what ran, every "auto" value
        resolved (``n_iter`` the steps allowed; ``n_iter_`` those run).
    schedule_auto_ : FastMixingSchedule or None
        The theoretical schedule (theory with an "auto" entry; else None).
    max_coupling_ : float or None
        The constraint's size (None: unconstrained).
    mixing_constant_, mixing_rate_ : float
        ``C`` and ``alpha`` of Eq. 2 for the set (theory schedule only).
    lipschitz_ : float or None
        ``L`` of the steps ``gradient / L`` (None for natural-gradient steps).
    suff_stat_bound_, distance_bound_ : float
        ``R2`` and ``D`` of the theory schedule.
    n_iter_ : int
        Steps run.
    n_averaged_ : int
        Iterates in the returned average: those after the adaptive stopping rule fired (at
        least ``max(200, k)`` for the rule firing at step ``k``, fewer only when ``n_iter``
        cuts them), the last half of a fixed or unconverged run, all ``K`` of the theory
        schedule, those since the first step whose chains met the targets for the moment-matching
        schedule; 1 with ``average=False``.
    sweep_autocorrelation_ : float or None
        Lag-one autocorrelation per Gibbs sweep of the chains' energy or fraction of non-zero
        states at the pseudo-likelihood start
        (:func:`~skmrf._kernels.mcmc.defaults.sweep_autocorrelation`), which sets the adaptive
        schedule's "auto" sweeps and chains; None when both were given, and for the theory
        schedule.
    converged_ : bool
        Whether the adaptive stopping rule ended the run (True for fixed schedules) and, for the
        adaptive schedule, the moment conditions hold on fresh chains at the estimate
        (``moment_ratio_``); for the moment-matching schedule, whether fresh chains of the
        estimate met the targets.
    moment_ratio_ : float or None
        Adaptive schedule: the mean over the parameters of ``g_j^2 / var_j`` at the returned
        estimate, for the gradient ``g = E_theta[t] - t_bar + alpha theta`` measured on fresh
        chains (started at data rows, ``20 + n_sweeps`` sweeps under the estimate alone), with
        ``var_j`` its Monte-Carlo variance plus the data's sampling variance of ``t_bar_j``: at
        most about 1 at the maximum-likelihood estimate. Above 2 (or the 0.1 %%
        tail of ``chi2(d) / d`` for few parameters) the fit warns and ``converged_`` is False.
        None for the other schedules and spectral constraint sets.
    mc_error_fraction_ : float or None
        Adaptive schedule with "auto" chains: the Monte-Carlo error of ``theta_`` as a fraction
        of maximum likelihood's statistical error that the chains and averaged steps were sized
        for (:func:`~skmrf._kernels.mcmc.defaults.adaptive_defaults`): 0.1, or more where the
        work budget cut them (the fit then warns). ``n (theta_ - theta_ML)^T F (theta_ -
        theta_ML)``, ``F`` the Fisher information, is then about ``mc_error_fraction_^2`` times
        the number of parameters (measured 0.4 to 0.8 of that on 4 x 4 grids). None when the
        chains were given.
    trace_ : dict
        One value per step: ``"gradient_norm"``, ``"noise_ratio"``, ``"step_noise_ratio"`` and
        ``"step_norm"`` (adaptive); ``"pearson_connected"`` and ``"pearson_frequencies"`` (moments: the
        chains' criterion), ``"n_sweeps"``, ``"overlap_self"``, ``"overlap_between"`` and
        ``"decorrelated"`` (moments: the sweeps of the step, the chains' mean overlap with their
        own states of the step before and with other chains' states of the step before, and
        whether they forgot those states), ``"fresh_connected"`` and ``"fresh_frequencies"``
        (moments: the r of fresh chains from random states where a step was checked, NaN elsewhere),
        ``"step_scale"`` (moments: the steps' factor, 1 until the chains first met the targets); and
        ``"time"`` (seconds since the first step).
    log_partition_ : float or None
        ``log Z`` when scoring is exact, its AIS estimate when it is ``"ais"``, None for
        ``"pseudo"``.
    log_partition_std_ : float
        Standard error of the AIS estimate (only with ``score_method="ais"``).
    score_method_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
    feature_labels_in_ : ndarray of object of shape (`n_features_in_`,)
        Labels of a DataFrame's columns that are not strings and not
        ``0..n_features - 1``; the graph names columns by them.

    See Also
    --------
    AdaptiveSchedule, TheorySchedule : the schedules and their settings.
    ExactMaxLikelihood : exact (junction tree) maximum likelihood.

    Notes
    -----
    **Adaptive schedule.** Every step advances ``n_chains`` persistent chains ``n_sweeps``
    sweeps and moves ``theta -= s / 2`` where ``(F + d I) s = g``: ``g = E_chains[phi] -
    mean_data[phi] + alpha theta`` is the gradient estimate and ``F`` the Fisher information
    (the covariance of the features, the Hessian of ``log Z``) measured every 10 steps on the
    first ``max(1024, 3 n_params)`` chains (at most 4096) and shrunk towards its diagonal by
    ``rho = min(1, n_params / chains)`` (``m`` chains give a covariance of rank below ``m``);
    ``d = 0.01 + alpha``. ``s`` is found by conjugate gradients and no parameter moves more
    than 1 per step; half of it is taken, because a full step leaves a bias of order ``1 /
    n_chains`` in the average. At a bound of the box the step is the plain gradient
    (two-metric projection), so the constrained optimum stays the fixed point; with the
    schedule's ``lipschitz`` or the spectral set the steps are ``g / L``. The features are
    indicators, so the Monte-Carlo variance of their chain mean is ``p (1 - p) / M``; the
    first phase ends when the gradient averaged over 20 steps is as small as that noise
    (``tol``, after at least 50 steps), and the estimate is the mean of the next ``max(K,
    k)`` iterates (``n_averaged_``).

    The "auto" chains and sweeps (:func:`~skmrf._kernels.mcmc.defaults.adaptive_defaults`):
    the Monte-Carlo covariance of that mean is ``tau F^-1 / (M K)`` for ``M`` chains, ``K``
    averaged steps and an autocorrelation time of ``tau`` steps, against maximum likelihood's
    own ``F^-1 / n`` for ``n`` rows (the sum of the sample weights), so ``M K = tau n /
    0.1^2`` holds the Monte-Carlo error at a tenth of the statistical error for every ``n``
    (``M`` grows with ``n``, ``K = 200``). The sweeps per step follow the chains'
    autocorrelation per sweep measured at the start (``sweep_autocorrelation_``): one on
    weakly coupled models, 18 on the binarised digits upsampled to 16x16. Measured in
    ``benchmarks/mcmc_defaults.py`` (``benchmarks/results/mcmc_defaults.txt``): on 12x12
    grids with parameters uniform on [-1, 1], closer to exact ML than pseudo-likelihood in
    every seed run at ``n`` = 10^3, 10^4 and 10^5 (binary: 5 seeds, 3 states: 3), the
    Monte-Carlo error 0.07-0.12 of the statistical one, at 2-14 times pseudo-likelihood's
    time (binary at 10^5 rows: about 150 s on a loaded machine).

    **The box for any number of states.** For ``p ~ exp(f)`` and ``q ~ exp(f + d)`` on the
    same states, ``TV(p, q) <= tanh(osc(d) / 4)`` with ``osc(d) = max d - min d``. Changing
    neighbour ``j`` from ``a`` to ``b`` adds ``d_s = W_ij[s, a] - W_ij[s, b]`` to site
    ``i``'s conditional, so the Dobrushin influence is at most ``tanh(sigma_ij / 4)`` with
    ``sigma_ij`` the largest such oscillation ("spread") of the coupling block. Pair entries
    normalised with respect to zero and bounded by ``beta`` give ``sigma_ij <= 4 beta`` (any
    ``K >= 3``; row and column 0 are zero), and a binary ``|theta_ij| = 4 |J_ij| <= 4 beta``
    gives ``sigma_ij <= 4 beta``: the influence is at most ``tanh(beta)`` and Dobrushin's
    condition is ``max_degree * tanh(beta) < 1`` for every ``K``.

    **Theory schedule (Domke 2015).** The paper's model (Section 3.1) is the Ising model over
    ``x in {-1, +1}``, ``p(x) ~ exp(sum J_ij x_i x_j + sum h_i x_i)``. With ``x = 2 s - 1``
    it is the package's model over ``s in {0, 1}`` with ``theta_ij = 4 J_ij`` and
    ``theta_i = 2 h_i - 2 sum_j J_ij``. The fast-mixing sets, ``R2`` (``|x_i|, |x_i x_j| <=
    1``) and the Lipschitz bound are defined on ``(h, J)``, so the optimisation, the
    projection and the ridge all act on ``(h, J)``; ``model_`` receives the converted
    parameters. Fields are not constrained.

    .. math::

        f(\\phi) = A(\\phi) - \\phi\\cdot\\bar t + \\frac{\\lambda}{2}\\|\\phi\\|^2,\\qquad
        \\phi_{k} = \\Pi_\\Theta\\Bigl[\\phi_{k-1} - \\frac1L\\Bigl(\\frac1M\\sum_i t(x_i)
            - \\bar t + \\lambda\\phi_{k-1}\\Bigr)\\Bigr].

    ``C = n_features`` and ``alpha = exp(-(1 - rho) / n_features)`` with ``rho = max_degree
    tanh(beta)`` (box) or ``c`` (spectral). ``D`` bounds ``||phi*||`` (``phi_0 = 0``): ``2
    beta`` per edge (the paper's diameter convention), ``artanh(|mean x_i|) + max_degree beta``
    per field, and with ``alpha > 0`` at most ``sqrt(2 n_features log 2 / alpha)`` overall. For
    the spectral set the couplings contribute ``sqrt(2 n_features) c`` and a field's neighbours
    ``sqrt(max_degree) c``. One Gibbs sweep counts as ``n_features`` single-site transitions:
    under the Dobrushin condition a systematic sweep contracts by at least ``rho <= exp(-(1 -
    rho))`` (Dyer, Goldberg and Jerrum 2009).

    References
    ----------
    J. Domke, "Maximum likelihood learning with arbitrary treewidth via fast-mixing parameter
    sets", NIPS 2015.
    J. Domke and X. Liu, "Projecting Ising model parameters for fast mixing", NIPS 2013.
    T. Tieleman, "Training restricted Boltzmann machines using approximations to the
    likelihood gradient", ICML 2008 (persistent chains).

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf import MCMCMaxLikelihood, TheorySchedule
    >>> X = np.random.default_rng(0).integers(0, 2, size=(200, 4))
    >>> est = MCMCMaxLikelihood("chain", random_state=0).fit(X)
    >>> est.schedule_.kind, est.converged_
    ('adaptive', True)
    >>> theory = MCMCMaxLikelihood("chain", schedule=TheorySchedule(lipschitz=5.0), alpha=1.0,
    ...                            random_state=0).fit(X[:50])
    >>> theory.schedule_auto_
    FastMixingSchedule(n_iter=14, n_samples=3005, n_sweeps=34)
    >>> bool(np.all(np.abs(theory.ising_couplings_) <= theory.max_coupling_))
    True
    """

    _parameter_constraints: dict = {
        **BaseDiscreteMRF._parameter_constraints,
        "schedule": [StrOptions(set(_SCHEDULES)), AdaptiveSchedule, TheorySchedule, MomentMatchingSchedule],
        "max_coupling": [Interval(Real, 0, None, closed="neither"), None],
        "projection": [StrOptions({"box", "spectral"})],
        "alpha": ALPHA_CONSTRAINT,
        "random_state": ["random_state"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    _needs_pairwise = True
    #: A memmap or a dask array is read by row chunks: the data moments and the pseudo-likelihood
    #: start are sums over them, and chains start at rows read one by one (``Rows.take``).
    _reads_chunks = True

    def __init__(
        self,
        graph="chain",
        *,
        n_states="auto",
        schedule="adaptive",
        max_coupling=None,
        projection="box",
        alpha="auto",
        score_method="auto",
        max_bytes=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.graph = graph
        self.n_states = n_states
        self.schedule = schedule
        self.max_coupling = max_coupling
        self.projection = projection
        self.alpha = alpha
        self.score_method = score_method
        self.max_bytes = max_bytes
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _schedule(self):
        """The schedule object (a string stands for the object with its defaults)."""
        if isinstance(self.schedule, str):
            return _SCHEDULES[self.schedule]()
        return self.schedule

    def _binary_requirement(self):
        if (subject := self._schedule()._binary_only) is not None:
            return subject
        if self.projection == "spectral":
            return "The spectral set is defined"
        return None

    def _fit_theta(self, rows):
        schedule = self._schedule()
        schedule._validate_params()
        model = self.model_
        positions = pairwise_positions(model.layout)
        self.edges_ = positions.edges
        # One BLAS thread: the steps' linear algebra is small and interleaved with the sweeps, and
        # threaded BLAS only spins. Two cores, BLAS unlimited -> one thread: a 12 x 12 grid's
        # adaptive fit 2.7 -> 1.9 s (its Fisher Cholesky 16 -> 2 ms); 30 moment-matching steps on
        # DHFR's 75 columns 29.0 -> 25.3 CPU s at the same wall time.
        with single_blas_thread():
            fit = schedule._run(self, rows, positions)
        if not np.all(np.isfinite(fit.theta)):
            raise ValueError(
                f"{type(self).__name__}: the parameters diverged to non-finite values in {fit.n_iter} "
                f"steps of the {fit.schedule.kind} schedule. Give the schedule {schedule._smaller_steps} (smaller "
                "steps) or the estimator a larger alpha."
            )
        for name in ScheduleFit._fields[1:-1]:
            setattr(self, name + "_", getattr(fit, name))
        if fit.ising is not None:
            self.ising_fields_, self.ising_couplings_ = fit.ising
        elif is_binary_pairwise(model.layout):
            self.ising_fields_, self.ising_couplings_ = binary_to_ising(
                fit.theta[positions.node_pos], fit.theta[positions.edge_pos], positions.edges, model.n_variables
            )
        return fit.theta

    def _pool(self, n_chains, n_sweeps, threads=False):
        """Workers for the chain blocks: loky processes, or threads (the moment-matching fit: its
        dense Gibbs kernel releases the GIL, and a thread needs far less work to pay for itself)."""
        work = n_chains * n_sweeps * self.n_features_in_
        minimum = MOMENTS_MIN_WORK_PER_THREAD if threads else chains.MCMC_MIN_WORK_PER_WORKER
        prefer = "threads" if threads else None
        n_workers = workers_for(self.n_jobs, work, minimum, prefer=prefer)
        return parallel_or_serial(n_workers, verbose=max(0, self.verbose - 1), prefer=prefer)

    def _start(self, rows, max_iter, log):
        """The pseudo-likelihood estimate (the PL kernel, with this fit's ridge, ``max_iter``
        iterations), or zero when ``max_iter`` is 0."""
        if max_iter == 0:
            return np.zeros(self.model_.n_params)

        def report(it, objective, grad_max):
            log("Start (pseudo-likelihood) iteration %d, objective = %.8f, max |grad| = %.2e", it, objective, grad_max)

        theta, _ = fit_pseudo_likelihood(
            self.model_.layout,
            self.graph_,
            rows,
            self._ridge_penalty(),
            max_iter=max_iter,
            tol=START_TOL,
            callback=report,
        )
        return theta

    def __skmrf_trace__(self):
        """``trace_`` for :func:`~skmrf.plotting.plot_trace`: one series per key (all but ``"time"``
        by default) against the step, log scale; None for a model read from a file (no ``trace_``)."""
        check_is_fitted(self)
        trace = getattr(self, "trace_", None)
        if trace is None:
            return None
        series = {key: np.asarray(values, dtype=np.float64).reshape(1, -1) for key, values in trace.items()}
        defaults = tuple(key for key in trace if key != "time")
        return Trace(series, "step", None, True, "trace_", defaults, first_step=1)
