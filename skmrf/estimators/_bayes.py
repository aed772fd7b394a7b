"""Bayesian learning of the agreement model by random-walk Metropolis-Hastings.

The MLE-induced likelihood paper (Liu and Zheng), Section 3.1: the chain moves over the edge
parameters ``theta in (0, 1)^p`` of the agreement model (binary pairwise, edge potential
``theta_j`` when the ends agree and ``1 - theta_j`` when not, no node potentials), with a
Gaussian random-walk proposal and the likelihood term of the MH ratio (Eq. 10) supplied by a
plug-in (:mod:`skmrf._kernels.likelihoods`): exact, pseudo, MLE-induced, Laplace,
persistent Markov chains or the exchange algorithm, or a user's callable.
The chain runners are in :mod:`skmrf._kernels.metropolis`.
"""

from __future__ import annotations

from functools import partial
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from scipy.special import logit
from sklearn.base import BaseEstimator
from sklearn.frozen import FrozenEstimator

from .._kernels.likelihoods import (
    AgreementData,
    CallableLikelihood,
    ExactLikelihood,
    ExchangeLikelihood,
    LaplaceLikelihood,
    PersistentMCLikelihood,
    PseudoLikelihood,
    check_log_density,
)
from .._kernels.metropolis import run_chains, run_chains_speculative, uniform_log_prior
from .._solvers._convergence import warn_not_converged
from .._utils._docstrings import fill_doc
from .._utils._mcmc_diagnostics import RHAT_MAX, effective_sample_size, split_rhat
from .._utils._parallel import parallel_or_serial
from .._utils._progress import Progress
from .._utils._sklearn_compat import Hidden, Interval, StrOptions, check_is_fitted, delayed
from .._utils._verbose import ProgressLog
from .._utils._warnings import warn
from .._utils.validation import check_generator
from ..inference._junction_tree import DEFAULT_MAX_BYTES
from ..model import DiscreteMRF
from ..model._agreement import agreement_matrix, check_agreement_parameters
from ._base import N_JOBS_CONSTRAINT, BaseDiscreteMRF
from ._likelihood_options import ExchangeAlgorithm, LaplaceApproximation, PersistentChains
from ._mle_induced import MLEInducedLikelihood
from ._mle_induced_fit import fit_mle_induced, parameter_edges, without_degenerate_edges
from ._protocol import Trace

__all__ = ["MetropolisHastingsMRF"]


LIKELIHOODS = ("exact", "pseudo", "mle_induced", "laplace", "persistent_mc", "exchange")

#: The likelihood of each parameter object.
_KINDS = {
    MLEInducedLikelihood: "mle_induced",
    LaplaceApproximation: "laplace",
    PersistentChains: "persistent_mc",
    ExchangeAlgorithm: "exchange",
}

#: The constructor settings that belong to a likelihood object, deprecated in 0.1, and the values
#: they stand for when not given.
_DEPRECATED = {"copula": "independent", "rho": 0.0, "mle": None, "n_particles": 1000, "n_sweeps": 1}
_DEPRECATED_OPTION = Hidden(StrOptions({"deprecated"}))


def _is_deprecated(value):
    return isinstance(value, str) and value == "deprecated"


#: Kept draws per chain, at least: split R-hat cuts each chain in halves of two draws or more,
#: and the effective sample size sums autocorrelations in pairs.
MIN_KEPT_DRAWS = 4
#: ``fit`` warns when an effective sample size is below this (Vehtari et al. 2021: about 100
#: effective draws make the posterior mean's Monte Carlo error a tenth of the posterior sd).
ESS_MIN = 100


def _checked_log_prior(prior, theta):
    """A user's log-prior at ``theta``, refused when of the wrong shape, NaN or +inf."""
    return check_log_density(prior(theta), theta, "prior", prior)


@fill_doc
class MetropolisHastingsMRF(BaseDiscreteMRF):
    """Posterior samples of the agreement model's edge parameters by Metropolis-Hastings.

    The model is the MLE-induced likelihood paper's (Liu and Zheng, Section 2.2 and the
    experiments of Section 3): binary pairwise, edge ``j = (u, v)`` with potential
    ``theta_j ** I[x_u == x_v] * (1 - theta_j) ** I[x_u != x_v]``, ``theta_j in (0, 1)``,
    and no node potentials. The chain is a random walk ``theta* = theta + N(0,
    proposal_scale^2 I)`` (Section 3.1, Eq. 10); the likelihood in the MH ratio comes from
    ``likelihood``.

    ``fit`` accepts ``X`` as an array, a ``numpy.memmap`` or a ``dask.array``; the last two are
    read by row chunks (on the workers for dask), never whole. Every likelihood reads the rows
    only through sums over them: the agreement counts, the pseudo-likelihood's records (each
    variable's agreement pattern, with counts), the MLE-induced fit's statistics (see
    :class:`MLEInducedLikelihood`). The one exception is the exchange algorithm's Gibbs
    fallback (a junction tree beyond ``max_bytes``), whose chains start at the rows: it reads
    them into one byte per entry, as its own state holds them ``n_chains`` times. Without
    weights or with integer weights the fit is the in-memory one bit for bit (the same draws).

    Parameters
    ----------
    %(graph)s
        Pairwise. The parameters follow the edges in ``edges_`` (see Attributes).
    likelihood : str, likelihood object or callable, default="mle_induced"
        The likelihood term; a string stands for the object with its defaults:

        - ``"exact"``: ``log Z`` by the junction tree, built once; each step only
          recomputes its tables, for all chains in one batched calibration.
        - ``"pseudo"``: the pseudo-likelihood, on records compressed with their counts.
        - ``"mle_induced"`` or :class:`MLEInducedLikelihood` ``(copula=..., rho=..., mle=...)``:
          the MLE-induced likelihood (its ``graph`` and ``degenerate_edges`` are this
          estimator's: leave them at their defaults).
        - ``"laplace"`` or :class:`LaplaceApproximation` ``(n_particles=...)``: a Gaussian at
          the agreement-model MLE with the Fisher information, exact by the junction tree
          where it fits, else from ``n_particles`` Gibbs draws.
        - ``"persistent_mc"`` or :class:`PersistentChains` ``(n_particles=..., n_sweeps=...)``:
          persistent particles advanced ``n_sweeps`` sweeps under the proposal (Supplement
          Eq. 15); an approximation.
        - ``"exchange"`` or :class:`ExchangeAlgorithm` ``(n_sweeps=...)``: the single-variable
          exchange algorithm (Eq. 14 with one draw of an auxiliary data set), with exact draws
          from the junction tree's forward sampler (the chain then targets the exact
          posterior); where the treewidth is too large, draws from ``100 * n_sweeps`` Gibbs
          sweeps started at the data, an approximation.
        - a callable ``f(theta) -> log_likelihood``, ``theta`` of shape ``(m, p)`` in
          ``(0, 1)``, returning shape ``(m,)``; a deterministic function of ``theta``.

        The deterministic ones (all but ``"persistent_mc"`` and ``"exchange"``) are
        evaluated ahead of the chain: until a chain accepts, its next proposals are known,
        so a window of them is evaluated in one call (prefetching, Brockwell 2006). The
        chain is the same as one step at a time; only the speed differs.
    n_steps : int, default=10000
        MH steps per chain. With ``burn_in`` and ``thin`` it must keep at least 4 draws
        per chain (R-hat and the effective sample size need them), and the kept draws
        (``8 * n_chains * n_kept * p`` bytes) must fit in ``max_bytes`` or 2 GiB, whichever
        is larger: ``fit`` refuses before allocating them.
    proposal_scale : float, default=0.0316
        Standard deviation of the random-walk proposal (the paper's ``sigma_Q^2 = 0.001``).
        Tune it to the posterior: about ``2.38 / sqrt(p)`` times the posterior standard
        deviation (roughly ``0.45 / sqrt(n_samples)`` for theta near 0.65). The paper's value
        is too wide for many edges and rows: on the 4x4 grid (p = 24) it accepted 11%% of the
        moves at 100 rows and none at 500 (``benchmarks/results/bayes_mh_paper.txt``).
    prior : "uniform" or callable, default="uniform"
        Uniform on ``(0, 1)^p``, or a log-prior ``f(theta) -> (m,)`` for ``theta`` of
        shape ``(m, p)``; proposals outside ``(0, 1)^p`` are always rejected. A log-prior
        or log-likelihood callable may return ``-inf`` (density zero: the move is rejected),
        but not at the start of a chain; a wrong shape, NaN or ``+inf`` is an error naming
        the callable and the parameter vector.
    burn_in : int or "auto", default="auto"
        Steps dropped from the start of each chain; ``"auto"`` is ``n_steps // 10``.
    n_chains : int, default=1
        Chains, advanced together (vectorised).
    thin : int, default=1
        Keep every ``thin``-th step after the burn-in.
    init : "mle", "prior" or array-like, default="mle"
        Start of every chain: the agreement-model MLE (``MLEInducedLikelihood``'s
        ``theta_hat_``, by the likelihood object's ``mle`` when one is given), a draw from
        the uniform prior (each chain its own; use it with several chains for a meaningful
        R-hat), or given values of shape ``(p,)`` or ``(n_chains, p)``.
    copula, rho, mle, n_particles, n_sweeps : deprecated
        Deprecated in 0.1, removed in 0.2: the settings of the likelihood objects above
        (``MLEInducedLikelihood(copula, rho, mle)``, ``LaplaceApproximation(n_particles)``,
        ``PersistentChains(n_particles, n_sweeps)``, ``ExchangeAlgorithm(n_sweeps)``). Until
        then they still apply to the likelihood named by a string, with a ``FutureWarning``;
        ``mle`` also chooses the MLE of ``init="mle"``.
    %(degenerate_edges)s
    %(score_method)s
    %(max_bytes_scoring)s
    random_state : int, RandomState instance or None, default=None
        Seeds: one per chain is drawn up front, so the result does not depend on ``n_jobs``.
    n_jobs : int, default=None
        Jobs over blocks of chains (joblib); ``None`` means 1.
    verbose : int, default=0
        Progress every 1024 steps.

    Attributes
    ----------
    %(discrete_model_)s
        ``model_`` holds the posterior mean, converted.
    edges_ : ndarray of shape (p, 2)
        The edge of each parameter: a list of pairs keeps the order given, a networkx
        graph the order of ``G.edges``, other forms the sorted edges.
    samples_ : ndarray of shape (n_chains * n_kept, p)
        Kept draws, chain after chain (``samples_.reshape(n_chains, -1, p)``).
    posterior_mean_, posterior_std_ : ndarray of shape (p,)
    acceptance_rate_ : float
        Over all chains and steps (per chain in ``chain_acceptance_rate_``).
    rhat_ : ndarray of shape (p,)
        Split R-hat over the kept draws of all chains; ``inf`` for a parameter whose
        draws do not change within any half-chain (no within-chain variance).
    ess_ : ndarray of shape (p,)
        Effective sample size over all chains; 1 for a parameter whose draws never changed.
    likelihood_ : object
        The plug-in used (for ``"mle_induced"``, ``likelihood_.mle_induced_`` is the
        fitted :class:`MLEInducedLikelihood`).
    %(score_method_)s
    %(log_partition_ais_)s
    %(n_features_in_)s
    %(feature_names_in_)s

    Warns
    -----
    ConvergenceWarning
        When a chain accepted none of its proposals (its draws are its start repeated),
        when a split R-hat exceeds 1.1 (``RHAT_MAX``: the chains, or the halves of one,
        disagree), or when an effective sample size is below 100 (``ESS_MIN``). The
        message says what to change: ``proposal_scale``, ``n_steps``, ``n_chains`` or
        ``init``.

    Examples
    --------
    >>> from skmrf import MetropolisHastingsMRF
    >>> from skmrf.model import agreement_to_mrf
    >>> cycle = [(0, 1), (1, 2), (2, 3), (3, 0)]
    >>> X = agreement_to_mrf([0.7, 0.6, 0.8, 0.7], cycle, 4, edges=cycle).sample(500, random_state=0)
    >>> est = MetropolisHastingsMRF(cycle, likelihood="exact", n_steps=3000, random_state=0).fit(X)
    >>> est.posterior_mean_.shape
    (4,)
    """

    _parameter_constraints: dict = {
        **BaseDiscreteMRF._parameter_constraints,
        "likelihood": [
            StrOptions(set(LIKELIHOODS)),
            MLEInducedLikelihood,
            LaplaceApproximation,
            PersistentChains,
            ExchangeAlgorithm,
            callable,
        ],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "proposal_scale": [Interval(Real, 0, None, closed="neither")],
        "prior": [StrOptions({"uniform"}), callable],
        "burn_in": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "n_chains": [Interval(Integral, 1, None, closed="left")],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"mle", "prior"}), "array-like"],
        "copula": [StrOptions({"independent", "gaussian"}), _DEPRECATED_OPTION],
        "rho": [Interval(Real, None, None, closed="neither"), _DEPRECATED_OPTION],
        "mle": [None, BaseDiscreteMRF, FrozenEstimator, _DEPRECATED_OPTION],
        "n_particles": [Interval(Integral, 1, None, closed="left"), _DEPRECATED_OPTION],
        "n_sweeps": [Interval(Integral, 1, None, closed="left"), _DEPRECATED_OPTION],
        "degenerate_edges": [StrOptions({"raise", "drop"})],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "verbose": ["verbose"],
    }

    _needs_pairwise = True
    #: A memmap or a dask array is read by row chunks: the agreement counts, the pseudo-likelihood's
    #: records and the MLE-induced fit's statistics are sums over rows.
    _reads_chunks = True
    _binary_subject = "MetropolisHastingsMRF's agreement model is defined"

    def __init__(
        self,
        graph="chain",
        *,
        likelihood="mle_induced",
        n_steps=10_000,
        proposal_scale=0.0316,
        prior="uniform",
        burn_in="auto",
        n_chains=1,
        thin=1,
        init="mle",
        copula="deprecated",
        rho="deprecated",
        mle="deprecated",
        n_particles="deprecated",
        n_sweeps="deprecated",
        degenerate_edges="raise",
        score_method="auto",
        max_bytes=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.graph = graph
        self.likelihood = likelihood
        self.n_steps = n_steps
        self.proposal_scale = proposal_scale
        self.prior = prior
        self.burn_in = burn_in
        self.n_chains = n_chains
        self.thin = thin
        self.init = init
        self.copula = copula
        self.rho = rho
        self.mle = mle
        self.n_particles = n_particles
        self.n_sweeps = n_sweeps
        self.degenerate_edges = degenerate_edges
        self.score_method = score_method
        self.max_bytes = max_bytes
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _likelihood_term(self):
        """``(kind, options)``: the likelihood's name and its parameter object (a string stands for
        the object with its defaults, or with the deprecated constructor settings)."""
        given = {name: getattr(self, name) for name in _DEPRECATED if not _is_deprecated(getattr(self, name))}
        if given:
            warn(
                f"MetropolisHastingsMRF's {', '.join(given)} {'are' if len(given) > 1 else 'is'} deprecated in 0.1 "
                "and will be removed in 0.2: they are the likelihood's own settings. Pass "
                "likelihood=MLEInducedLikelihood(copula=..., rho=..., mle=...), LaplaceApproximation(n_particles=...), "
                "PersistentChains(n_particles=..., n_sweeps=...) or ExchangeAlgorithm(n_sweeps=...) instead.",
                FutureWarning,
            )
        old = {**_DEPRECATED, **given}
        like = self.likelihood
        if isinstance(like, str):
            objects = {
                "mle_induced": lambda: MLEInducedLikelihood(copula=old["copula"], rho=old["rho"], mle=old["mle"]),
                "laplace": lambda: LaplaceApproximation(old["n_particles"]),
                "persistent_mc": lambda: PersistentChains(old["n_particles"], old["n_sweeps"]),
                "exchange": lambda: ExchangeAlgorithm(old["n_sweeps"]),
            }
            return like, objects[like]() if like in objects else None
        if isinstance(like, BaseEstimator):
            if given:
                raise ValueError(
                    f"MetropolisHastingsMRF got {', '.join(given)} and likelihood={like!r}: give the settings on "
                    "the likelihood object only (the constructor's are deprecated)."
                )
            like._validate_params()
            return _KINDS[type(like)], like
        return "callable", like

    def _check_mle_induced_options(self, options):
        """MLEInducedLikelihood's ``graph`` and ``degenerate_edges`` are this estimator's: refuse others."""
        defaults = MLEInducedLikelihood().get_params()
        for name, mine in (("graph", self.graph), ("degenerate_edges", self.degenerate_edges)):
            theirs = getattr(options, name)
            same = theirs is mine or (isinstance(theirs, (str, list, tuple)) and theirs == mine)
            if not same and not (isinstance(theirs, str) and theirs == defaults[name]):
                raise ValueError(
                    f"likelihood=MLEInducedLikelihood({name}={theirs!r}) differs from this estimator's "
                    f"{name}={mine!r}: the likelihood is fitted on this estimator's graph and edges. Leave its {name} "
                    "at the default."
                )

    def _mle_induced(self, rows, options):
        """The MLE-induced likelihood's fit (its MLE, its checks and its kernel), once per fit."""
        if self._mle_fit is None:
            self._mle_fit = fit_mle_induced(
                self, rows, self.edges_, self.graph_, options.mle, options.copula, options.rho
            )
        return self._mle_fit

    def _plugin(self, rows, data, rng, kind, options, mle_options):
        if kind == "callable":
            return CallableLikelihood(options)
        if kind == "exact":
            return ExactLikelihood(data, self.max_bytes)
        if kind == "pseudo":
            return PseudoLikelihood(data, rows)
        if kind == "mle_induced":
            fitted = self._mle_induced(rows, mle_options)
            plugin = CallableLikelihood(fitted.likelihood.log_likelihood)
            plugin.mle_induced_ = fitted
            return plugin
        if kind == "laplace":
            theta_hat = self._mle_induced(rows, mle_options).theta_hat
            return LaplaceLikelihood(data, theta_hat, self.max_bytes, options.n_particles, 1000, rng)
        if kind == "persistent_mc":
            return PersistentMCLikelihood(data, options.n_particles, options.n_sweeps)
        _check_whole_weights(rows.weight)
        return ExchangeLikelihood(data, partial(_repeated_rows, rows), self.max_bytes, 100 * options.n_sweeps)

    def _initial(self, rows, p, rng, mle_options):
        init = self.init
        if isinstance(init, str) and init == "mle":
            return np.tile(self._mle_induced(rows, mle_options).theta_hat, (self.n_chains, 1))
        if isinstance(init, str):  # "prior"
            return rng.uniform(size=(self.n_chains, p))
        theta = check_agreement_parameters(init, p, name="init")
        if theta.ndim == 1:
            theta = np.tile(theta, (self.n_chains, 1))
        if theta.shape != (self.n_chains, p):
            raise ValueError(f"init has shape {theta.shape}; give ({p},) or (n_chains, {p}) = ({self.n_chains}, {p}).")
        return theta.copy()

    def _burn_in(self, p):
        """The burn-in in steps; refused when fewer than ``MIN_KEPT_DRAWS`` draws per chain would be kept,
        or when the kept draws of ``p`` parameters would not fit in ``max_bytes``."""
        burn_in = self.n_steps // 10 if self.burn_in == "auto" else int(self.burn_in)
        n_kept = len(range(burn_in, self.n_steps, self.thin))
        n_bytes = 8 * self.n_chains * n_kept * p
        budget = max(DEFAULT_MAX_BYTES, self.max_bytes or 0)
        if n_bytes > budget:
            raise ValueError(
                f"The kept draws would take {n_bytes / 2**30:.3g} GiB (8 bytes x {self.n_chains} chains x {n_kept} "
                f"draws x {p} parameters), more than {budget / 2**30:.3g} GiB (max_bytes, at least 2 GiB). Raise thin, "
                "lower n_steps or n_chains, or raise max_bytes."
            )
        if n_kept < MIN_KEPT_DRAWS:
            raise ValueError(
                f"n_steps={self.n_steps} with burn_in={self.burn_in!r} ({burn_in} steps) and thin={self.thin} keeps "
                f"{n_kept} draws per chain; R-hat and the effective sample size need at least {MIN_KEPT_DRAWS}. "
                "Raise n_steps, or lower burn_in or thin."
            )
        return burn_in

    def _check_start(self, plugin, log_prior, theta0):
        """Refuse a start of zero posterior density: the chain could not leave it (every ratio is undefined)."""
        parts = [] if log_prior is uniform_log_prior else [("prior", log_prior(theta0))]
        if isinstance(plugin, CallableLikelihood):
            parts.append(("likelihood", plugin._evaluate(theta0)))
        for what, value in parts:
            stuck = np.flatnonzero(np.isneginf(value))
            if stuck.size:
                k = int(stuck[0])
                raise ValueError(
                    f"The log-{what} is -inf at the start of chain {k}, theta = "
                    f"{np.array2string(theta0[k], precision=6)} (init={self.init!r}): a chain cannot move from a "
                    f"point of zero density. Start where the {what} is positive (pass init), or fix the {what}."
                )

    def __skmrf_trace__(self):
        """``samples_`` by parameter (key: its row of ``edges_``) and chain, for :func:`~skmrf.plotting.plot_trace`."""
        check_is_fitted(self)
        p, edges = len(self.edges_), self.edges_
        draws = self.samples_.reshape(len(self.chain_acceptance_rate_), -1, p)  # the fitted chains, not n_chains
        labels = {k: f"edge ({edges[k][0]}, {edges[k][1]})" for k in range(p)}
        series = {k: draws[:, :, k] for k in range(p)}
        return Trace(series, "kept draw", "agreement parameter", False, "edges_", tuple(range(min(5, p))), labels)

    def _warn_if_not_converged(self):
        """One ConvergenceWarning naming every failed check: chains that never moved, R-hat, ESS."""
        problems, advice = [], []
        stuck = np.flatnonzero(self.chain_acceptance_rate_ == 0)
        if stuck.size:
            which = "every chain" if stuck.size == self.n_chains else f"chains {stuck.tolist()[:10]}"
            problems.append(
                f"{which} accepted none of the {self.n_steps} proposals, so their draws repeat their start "
                "and are not posterior draws"
            )
            advice.append(
                f"Lower proposal_scale (now {self.proposal_scale:g}; about 2.38 / sqrt(p) posterior standard "
                "deviations is a good scale), or start where the posterior has its mass (init)."
            )
        high = np.flatnonzero(self.rhat_ > RHAT_MAX)
        if high.size and stuck.size < self.n_chains:
            j = int(high[np.argmax(self.rhat_[high])])
            problems.append(
                f"split R-hat is {self.rhat_[j]:.3g} > {RHAT_MAX} for {high.size} of {len(self.rhat_)} parameters "
                f"(largest: edge {tuple(int(v) for v in self.edges_[j])})"
            )
            advice.append("Run longer chains (n_steps) or more of them (n_chains, with init='prior').")
        low = np.flatnonzero(self.ess_ < ESS_MIN)
        if low.size and stuck.size < self.n_chains:
            j = int(low[np.argmin(self.ess_[low])])
            problems.append(
                f"the effective sample size is {self.ess_[j]:.3g} < {ESS_MIN} for {low.size} of {len(self.ess_)} "
                f"parameters (smallest: edge {tuple(int(v) for v in self.edges_[j])}; acceptance rate "
                f"{self.acceptance_rate_:.3g})"
            )
            advice.append(
                "Raise n_steps or n_chains, or tune proposal_scale (an acceptance rate near 0.23 mixes best)."
            )
        if problems:
            unique = list(dict.fromkeys(advice))
            warn_not_converged(type(self).__name__, "(" + "; ".join(problems) + ")", " ".join(unique))

    def _fit_theta(self, rows):
        self._mle_fit = None
        kind, options = self._likelihood_term()
        if kind == "mle_induced":
            self._check_mle_induced_options(options)
        # The MLE behind init="mle" and the Laplace approximation: the MLE-induced likelihood's own.
        old_mle = None if _is_deprecated(self.mle) else self.mle
        mle_options = options if kind == "mle_induced" else MLEInducedLikelihood(mle=old_mle)
        self.edges_ = parameter_edges(self.graph, self.graph_, type(self).__name__)
        graph, self.edges_ = without_degenerate_edges(self, rows, self.graph_, self.edges_)
        if graph is not self.graph_:  # edges left out: the model on the rest
            self.graph_, self.model_ = graph, DiscreteMRF(graph, self.model_.n_states)
        p = len(self.edges_)
        burn_in = self._burn_in(p)
        rng = check_generator(self.random_state)
        seeds = rng.integers(0, 2**63 - 1, size=self.n_chains)
        data = AgreementData(rows, self.edges_, self.graph_)
        plugin = self._plugin(rows, data, rng, kind, options, mle_options)
        theta0 = self._initial(rows, p, rng, mle_options)
        log_prior = uniform_log_prior if self.prior == "uniform" else partial(_checked_log_prior, self.prior)
        self._check_start(plugin, log_prior, theta0)
        log = ProgressLog(type(self).__name__, self.verbose)
        blocks = np.array_split(np.arange(self.n_chains), min(self.n_chains, effective_n_jobs(self.n_jobs)))
        args = (self.n_steps, self.proposal_scale, burn_in, self.thin, partial(_log_step, log))
        run = run_chains_speculative if isinstance(plugin, CallableLikelihood) else run_chains
        with parallel_or_serial(len(blocks), verbose=max(0, self.verbose - 1)) as pool:
            if pool is None:  # the bar follows the chains here (not in worker processes)
                with Progress(self.n_steps, type(self).__name__, self.verbose) as bar:
                    results = [run(plugin, log_prior, theta0, seeds, *args[:-1], bar.reporter(log, _STEP_LINE))]
            else:
                results = pool(delayed(run)(plugin, log_prior, theta0[b], seeds[b], *args) for b in blocks)
        kept = np.concatenate([r[0] for r in results])
        n_accepted = np.concatenate([r[1] for r in results])
        self.likelihood_ = plugin
        self.samples_ = kept.reshape(-1, p)
        self.posterior_mean_ = self.samples_.mean(axis=0)
        # Draws that never changed have sd 0 exactly (np.std leaves ~1e-16 of rounding).
        std = self.samples_.std(axis=0, ddof=1)
        self.posterior_std_ = np.where(np.ptp(self.samples_, axis=0) == 0, 0.0, std)
        self.chain_acceptance_rate_ = n_accepted / self.n_steps
        self.acceptance_rate_ = float(self.chain_acceptance_rate_.mean())
        self.rhat_ = split_rhat(kept)
        self.ess_ = effective_sample_size(kept)
        self._warn_if_not_converged()
        return agreement_matrix(self.model_, self.edges_) @ logit(self.posterior_mean_)


#: The verbose line of a block of Metropolis-Hastings steps.
_STEP_LINE = "step %(step)d of %(n_steps)d, acceptance rate %(acceptance_rate).3f"


def _log_step(log, step, **metrics):
    """A worker's line per block of steps (no bar follows chains in other processes)."""
    log("%s", _STEP_LINE % {"step": step, **metrics})


def _check_whole_weights(weight):
    """Refuse non-integer weights for the exchange algorithm: it draws auxiliary data sets of as
    many rows as the data stand for, so the weights must be whole numbers."""
    if weight is not None and not np.all(weight == np.round(weight)):
        raise ValueError(
            "likelihood='exchange' draws auxiliary data sets of as many rows as the data stand for, so its "
            "sample_weight must be whole numbers (counts); got non-integer weights. Use another likelihood."
        )


def _repeated_rows(rows):
    """The rows each repeated ``weight`` times, in order (the exchange algorithm's Gibbs chains start
    at them). A memmap or a dask array is read into one byte per entry (:meth:`~skmrf._data.Rows.compact`):
    the chains' own state is that large, ``n_chains`` times over."""
    X, weight = rows.compact(), rows.weight
    if weight is None:
        return X
    _check_whole_weights(weight)
    return np.repeat(X, weight.astype(np.int64), axis=0)
