"""AIS that checks its own schedule, and an interval for ``log Z``.

A single AIS run reports the spread of its importance weights (:class:`AISResult.std_err`),
which cannot see the main error of AIS on strongly coupled models: a schedule too short for the
chains to follow the model biases every weight the same way, so the estimate can be far too low
while the weights agree. :func:`adaptive_annealed_importance_sampling` runs independent AIS
runs on doubling schedules until the last two (the two *independent halves*) agree within their
reported error, up to a budget of Gibbs sweeps, and reports an error that includes the bias
measured between them. :func:`log_partition_interval` pairs the result with upper bounds: the
tree-reweighted bound (deterministic, any pairwise model) and reverse AIS from exact draws
(stochastic, tight, only where exact draws exist).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils._progress import Progress
from .._utils._warnings import warn as warn_at_caller  # "warn" is a parameter here
from .._utils.validation import check_generator
from ._ais import AISResult, _forward, _summary, reverse_annealed_importance_sampling
from ._annealing import PATHS, AnnealingPath, is_flip_symmetric
from ._tree_bound import tree_upper_bound

__all__ = [
    "AIS_BUDGET",
    "AdaptiveAISResult",
    "INTERVAL_SIGMAS",
    "MARKOV_MARGIN",
    "LogPartitionInterval",
    "adaptive_annealed_importance_sampling",
    "log_partition_interval",
]

#: Default budget of :func:`adaptive_annealed_importance_sampling`, in chain sweeps (one Gibbs
#: update of every variable of one chain; a run of ``M`` chains and ``T`` steps costs ``M T``).
#: With 100 chains from 100 steps it allows the runs of 100 to 1600 steps (310,000 sweeps). One
#: sweep of a binary grid costs about ``n_variables / 1.2e8`` s on one core
#: (``benchmarks/results/gibbs_throughput.txt``): 0.2 s for the 8 x 8 digits, 0.7 s at 16 x 16
#: and 11 s at 64 x 64, plus about 30 us of Python per step.
AIS_BUDGET = 400_000
#: ``log_partition_interval`` reaches this many standard errors beyond a stochastic estimate:
#: below AIS's (a lower bound in expectation) and above reverse AIS's. With an honest standard
#: error, a normal error exceeds 3 of them with probability 0.13 % on each side.
INTERVAL_SIGMAS = 3.0
#: ``t`` with ``exp(-t) = 0.00135`` (the one-sided tail of 3 standard errors): AIS's estimate
#: exceeds ``log Z + t`` with probability at most ``exp(-t)``, by Markov's inequality on its
#: unbiased estimate of ``Z``, whatever its weights look like.
MARKOV_MARGIN = float(np.log(1 / 0.00135))


class AdaptiveAISResult(NamedTuple):
    """Estimate of ``log Z`` by AIS on a schedule extended until two independent runs agree."""

    log_z: float
    """Estimate of the last run (the longest schedule): a stochastic lower bound on ``log Z``."""
    std_err: float
    """Standard error of ``log_z``, its bias included: ``sqrt(b^2 + 4 s_2^2 + s_1^2)`` with
    ``s_1``, ``s_2`` the weights' standard errors of the last two runs. When they agreed, ``b``
    is their difference ``d``: if AIS's bias decays as ``1 / T`` it halves with each doubling of
    the schedule, so ``d`` estimates the bias left in the last run, and ``log_z + d`` (Richardson)
    has noise ``2 e_2 - e_1``, of variance ``4 s_2^2 + s_1^2``. When the budget ran out, ``b`` is
    the largest difference between the last run and the two before it (schedules ``T / 2`` and
    ``T / 4``): larger than the bias left in the last run whenever it decays at least as fast as
    ``T^(-1/2)`` (AIS's bias decays as ``1 / T`` once its chains follow the model), but not when
    AIS is stuck on a plateau it has not yet left. Not capped at 1 nat, as the weights' standard
    error is; about 2.5 times it when the bias is negligible."""
    effective_sample_size: float
    """Of the last run's weights."""
    n_chains: int
    """Chains of the last run."""
    n_steps: int
    """Annealing steps of the last run."""
    sweeps: int
    """Chain sweeps spent over all runs (the budget's unit)."""
    budget: int
    """The ``budget`` of the call."""
    converged: bool
    """Whether the last two runs agreed within ``z`` of their combined standard error, with an
    effective sample size of at least ``min_ess`` (and ``std_err <= tol`` when given), on every
    path run, and the paths agreed with each other within ``z`` of their combined errors."""
    budget_exhausted: bool
    """Whether the next run would have exceeded the budget before that happened."""
    min_ess: float
    """The ``min_ess`` of the call."""
    path: str
    """The annealing path of the runs (the one chosen when ``path="auto"``)."""
    runs: tuple
    """Every run's :class:`AISResult` on ``path``, in order."""
    other_paths: tuple = ()
    """``(path, log_z, std_err, settled)`` of each other path run (``path="auto"`` on a model without
    the ``x -> 1 - x`` symmetry): its last estimate, its error and whether its last two runs
    agreed. ``converged`` needs every path to agree with ``log_z``."""

    @property
    def lower(self) -> float:
        """A lower bound on ``log Z`` that fails with probability about 0.13 %: ``log_z`` minus
        ``INTERVAL_SIGMAS`` standard errors (``std_err``, the error seen between runs included),
        or minus ``log(1 / 0.00135) = 6.6`` nats (Markov's inequality on the unbiased ``Z``
        estimate, valid whatever the chains do) when that is smaller or when the last run's
        effective sample size is below the ``min_ess`` used. AIS's bias only lowers ``log_z``;
        the margin covers its noise, which the last run's weights alone understate: with 3 of
        their standard errors, one of 5 runs with Swendsen-Wang moves on the 16 x 16 Ising torus
        at ``K = 0.3`` ended above the exact value (#39)."""
        last = self.runs[-1]
        if last.effective_sample_size >= self.min_ess:
            return self.log_z - min(INTERVAL_SIGMAS * self.std_err, MARKOV_MARGIN)
        return self.log_z - MARKOV_MARGIN


def adaptive_annealed_importance_sampling(
    model,
    budget=AIS_BUDGET,
    n_chains=100,
    n_steps=100,
    *,
    tol=None,
    z=2.0,
    min_ess=10.0,
    path="auto",
    cluster_moves=False,
    random_state=None,
    warn=True,
    verbose=0,
):
    """Estimate ``log Z`` by AIS, doubling the schedule until two independent runs agree.

    Runs of ``n_chains`` chains are made on ``n_steps``, ``2 n_steps``, ``4 n_steps``, ...
    annealing steps, each with fresh chains and its own random stream. After each run it is
    compared with the one before (the two independent *halves* of the evidence): when their
    estimates differ by more than ``z`` combined standard errors, or the new run's weights are
    carried by fewer than ``min_ess`` chains (then their variance, hence the standard error, is
    not measured), the schedule is too short and the next run doubles it. When they agree and
    ``tol`` is given but not reached, the next run doubles the chains instead (the error is then
    noise, not bias). It stops when they agree, or when the next run would exceed ``budget``.

    Parameters
    ----------
    model : DiscreteMRF
    budget : int, default=AIS_BUDGET (400,000)
        Chain sweeps allowed over all runs; a run of ``M`` chains and ``T`` steps costs ``M T``.
        The first two runs are always made (``3 n_chains n_steps`` sweeps, ``4 n_chains n_steps``
        with ``path="auto"``).
    n_chains : int, default=100
    n_steps : int, default=100
        Schedule of the first run.
    tol : float, optional
        Also extend (with more chains) until ``std_err <= tol`` nats.
    z : float, default=2.0
        Agreement threshold, in standard errors of the difference of the two runs: two honest
        estimates of the same value differ by more than 2 of them with probability 4.6 %.
    min_ess : float, default=10.0
        Smallest effective sample size of the last run's weights for its standard error to be
        used. Below it the weights' variance is dominated by the few chains that were drawn in
        its tail, and the delta-method error (at most 1 nat by construction) is meaningless.
    path : {"auto", "centred", "unary"}, default="auto"
        The annealing path (:mod:`skmrf.inference._annealing`). ``"auto"`` makes two runs on each
        path. A path then lower than the centred one by more than ``z`` combined errors is left
        behind (both are stochastic lower bounds: it missed mass the centred path found). Otherwise
        both continue, each doubling its schedule until its own runs agree, and the result converges
        only when the two paths also agree, a lower path being extended again. Neither path is best
        everywhere: on models fitted to binarised digits upsampled to 16 x 16 or 20 x 20 the unary
        path is 8 to 47 nats low after 100 to 1000 steps where the centred path is within 0.5,
        except for the pseudo-likelihood models of the interpolated images, where the unary path is
        within 0.1 at 100 steps and the centred path 4.6 nats low
        (``benchmarks/ais_log_partition.py``). The estimate is the higher path's when the paths
        disagree, and the one whose estimate less its error is higher when they agree. A binary
        pairwise model without fields in spin form is symmetric under ``x -> 1 - x``; there
        ``"auto"`` runs the centred path alone, every one of whose distributions keeps the symmetry,
        while the unary path starts in the all-0 phase and, in the ordered phase, ends there: on the
        periodic Ising torus at ``K = 0.6`` it converged to ``log(Z / 2)``, 0.69 nats low, with a
        standard error of 0.03 (``benchmarks/ising_exact.py``).
    cluster_moves : bool or "auto", default=False
        Precede each Gibbs sweep with a Swendsen-Wang cluster move
        (:class:`~skmrf.inference._annealing.AnnealingPath`): ``"auto"`` where it applies (binary
        pairwise models whose couplings are all ``>= 0``). A move costs 15 to 35 Gibbs sweeps
        (32 x 32 and 64 x 64 tori, 100 chains) and is not counted in ``budget``. On the
        32 x 32 Ising torus, 100 chains x 400 steps of the centred path are 5 to 10 nats low at
        ``K = 0.6`` without it and within 1 with it; at equal time, 3200 steps without it do as
        well, which is why it is not the default.
    random_state : int, RandomState instance, Generator or None, default=None
    warn : bool, default=True
        Warn (``ConvergenceWarning``) when the budget ran out before the runs agreed.
    verbose : int, default=0
        With 1 or more, a progress bar of the chain sweeps out of ``budget`` (the bar stops
        where the runs agree, usually well before the budget).

    Returns
    -------
    AdaptiveAISResult

    Warns
    -----
    ConvergenceWarning
        When the budget ran out first: the estimate may then be far below ``log Z``, and its
        error is an extrapolation.

    Notes
    -----
    The returned ``std_err`` combines the bias measured between the runs with their noise
    (:attr:`AdaptiveAISResult.std_err`). AIS on a model whose chains cannot cross between modes
    can plateau for several doublings and then jump: no run-to-run check sees a bias that no
    run has yet revealed, which is why :func:`log_partition_interval` pairs this estimate with
    an upper bound. The ``"centred"`` path makes such plateaus much rarer on strongly coupled
    models (:mod:`skmrf.inference._annealing`).

    Examples
    --------
    >>> from skmrf.datasets import make_random_mrf
    >>> from skmrf.graphs import grid_graph
    >>> model = make_random_mrf(grid_graph(5, 5), 2, 1.0, random_state=0)
    >>> res = adaptive_annealed_importance_sampling(model, random_state=0)
    >>> res.converged, res.budget_exhausted
    (True, False)
    >>> bool(abs(res.log_z - model.log_partition()) < 4 * res.std_err)
    True
    """
    for name, v in (("n_chains", n_chains), ("n_steps", n_steps), ("budget", budget)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, Integral) or v < 1:
            raise ValueError(f"{name} must be a positive integer; got {v!r}.")
    for name, v in (("z", z), ("min_ess", min_ess), ("tol", tol)):
        if not (v is None and name == "tol") and (not isinstance(v, Real) or not np.isfinite(v) or v <= 0):
            raise ValueError(f"{name} must be a positive number; got {v!r}.")
    if path != "auto" and path not in PATHS:
        raise ValueError(f"path must be 'auto' or one of {PATHS}; got {path!r}.")
    if cluster_moves not in (True, False, "auto"):
        raise ValueError(f"cluster_moves must be True, False or 'auto'; got {cluster_moves!r}.")
    rng = check_generator(random_state)
    with Progress(budget, "AIS", verbose, unit="sweep") as bar:
        result = _adaptive_runs(
            model, budget, int(n_chains), int(n_steps), tol, z, min_ess, path, rng, bar, cluster_moves
        )
    if result.budget_exhausted and warn:
        warn_at_caller(budget_message(result), ConvergenceWarning)
    return result


class _Track:
    """The runs of one annealing path: its schedule for the next run and whether its last two
    runs agreed (``settled``)."""

    def __init__(self, ann, name, m, t):
        self.ann, self.name, self.m, self.t = ann, name, m, t
        self.runs, self.settled = [], False

    @property
    def log_z(self):
        return self.runs[-1].log_z

    @property
    def error(self):
        return _error(self.runs, self.settled)


def _adaptive_runs(model, budget, m, t, tol, z, min_ess, path, rng, bar, cluster_moves):
    """The runs of :func:`adaptive_annealed_importance_sampling` on checked arguments.

    Each path is a :class:`_Track` that doubles its schedule until its last two runs agree. With
    two paths, one lower than the centred path after two runs each is left behind; otherwise the
    result has converged only when both have settled *and* agree with each other: each is a
    stochastic lower bound, so a disagreement beyond their errors says that the lower one missed
    mass (a mode or a phase its chains never reached), and that one is extended again.
    """
    if path == "auto":
        names = ("centred",) if is_flip_symmetric(model) else PATHS
    else:
        names = (path,)
    tracks = [_Track(AnnealingPath(model, p, cluster_moves), p, m, t) for p in names]
    sweeps = 0

    def advance(tr):
        nonlocal sweeps
        tr.runs.append(_summary(_forward(tr.ann, tr.m, tr.t, rng.spawn(1)[0], bar), tr.t))
        sweeps += tr.m * tr.t

    for tr in tracks:  # the first run of every path, then its second on a doubled schedule
        advance(tr)
        tr.t *= 2
    converged = exhausted = False
    behind = []  # other paths dropped after their first two runs
    while True:
        if len(tracks) > 1 and all(len(tr.runs) >= 2 for tr in tracks):
            # After two runs each, a path below the first (centred) by more than z combined errors
            # is left behind: it could only become the estimate by overtaking it, and extending it
            # would spend the budget on a path the model does not suit (the unary path of models
            # of the digits is 8 to 47 nats low; kept, it used every model's budget).
            first = tracks[0]
            behind = [tr for tr in tracks[1:] if first.log_z - tr.log_z > z * np.hypot(first.error, tr.error)]
            tracks = [tr for tr in tracks if tr not in behind]
        pending = [tr for tr in tracks if not tr.settled]
        if not pending:
            low, high, agree = _extremes(tracks, z)
            if agree:
                converged = True
                break
            low.settled = False  # it missed mass the other path found: a longer schedule
            low.t = 2 * low.runs[-1].n_steps
            continue
        tr = min(pending, key=lambda tr: tr.m * tr.t)
        if len(tr.runs) >= 2 and sweeps + tr.m * tr.t > budget:
            exhausted = True
            break
        advance(tr)
        prev, cur = tr.runs[-2], tr.runs[-1]
        measured = min(prev.effective_sample_size, cur.effective_sample_size) >= min_ess
        if measured and abs(cur.log_z - prev.log_z) <= z * np.hypot(prev.std_err, cur.std_err):
            if tol is None or _error(tr.runs, True) <= tol:
                tr.settled = True
            else:
                tr.m *= 2  # noise, not bias: more chains on the same schedule
        else:
            tr.t *= 2
    return _result(tracks, behind, z, sweeps, budget, converged, exhausted, min_ess)


def _result(tracks, behind, z, sweeps, budget, converged, exhausted, min_ess):
    """The :class:`AdaptiveAISResult` of the runs: the estimate of the best path, the others'."""
    # Paths that disagree: the higher (both are stochastic lower bounds; the lower one missed mass).
    # Paths that agree: the one whose estimate less its error is higher, not simply the more precise
    # one: a path that missed a phase is precise and low (the unary path of a nearly symmetric
    # 16 x 16 Ising torus: 1.7 nats low with an error of 0.2), and agreement within the other
    # path's larger error (0.9) does not clear it; nor simply the higher one, which may be the
    # noisy one (4.18 +- 0.90 beside 3.94 +- 0.07 on a 4 x 4 grid).
    _, high, agree = _extremes(tracks, z)
    best = max(tracks, key=lambda tr: tr.log_z - tr.error) if agree else high
    cur = best.runs[-1]
    others = tuple((tr.name, tr.log_z, tr.error, tr.settled) for tr in tracks + behind if tr is not best)
    return AdaptiveAISResult(
        cur.log_z,
        best.error,
        cur.effective_sample_size,
        len(cur.log_weights),
        cur.n_steps,
        sweeps,
        int(budget),
        converged,
        exhausted,
        float(min_ess),
        best.name,
        tuple(best.runs),
        others,
    )


def _extremes(tracks, z):
    """``(lowest, highest, agree)``: the tracks with the lowest and highest estimates, and whether
    those differ by at most ``z`` combined errors."""
    low, high = min(tracks, key=lambda tr: tr.log_z), max(tracks, key=lambda tr: tr.log_z)
    return low, high, high.log_z - low.log_z <= z * np.hypot(low.error, high.error)


def _error(runs, converged):
    """Standard error of the last run's estimate, its bias included (see ``AdaptiveAISResult.std_err``)."""
    prev, cur = runs[-2], runs[-1]
    if converged:
        bias = cur.log_z - prev.log_z
    else:
        bias = max(abs(cur.log_z - r.log_z) for r in runs[-3:-1])
    return float(np.sqrt(bias**2 + 4 * cur.std_err**2 + prev.std_err**2))


def budget_message(result):
    """One sentence on a run whose budget ran out: the last two estimates and what to change."""
    a, b = result.runs[-2], result.runs[-1]
    others = "".join(
        f" The {name} path estimates {log_z:.6g} (error {err:.3g}{'' if settled else ', its runs not yet agreeing'});"
        " two paths that disagree say that the lower one missed mass (a mode or a phase)."
        for name, log_z, err, settled in result.other_paths
    )
    return (
        f"Adaptive AIS did not converge within its budget of {result.budget:,} chain sweeps (it spent "
        f"{result.sweeps:,}; the next run would have exceeded it): the last two {result.path}-path "
        f"runs ({len(a.log_weights)} chains x {a.n_steps} steps, {len(b.log_weights)} x {b.n_steps}) estimate "
        f"log Z = {a.log_z:.6g} and {b.log_z:.6g} (effective sample size {b.effective_sample_size:.3g}), so "
        f"the estimate may be far below log Z; its standard error {result.std_err:.3g} is the largest change "
        f"over its last two doublings.{others} Raise the budget, or bound log Z from above "
        "(skmrf.inference.log_partition_interval)."
    )


class LogPartitionInterval(NamedTuple):
    """An interval for ``log Z``: AIS from below, the tree bound and reverse AIS from above."""

    lower: float
    """``ais.lower``: AIS's estimate less its noise margin (:attr:`AdaptiveAISResult.lower`)."""
    upper: float
    """The smallest upper end available: ``tree_bound`` and ``reverse_upper``; ``inf`` if none."""
    ais: AdaptiveAISResult
    """The adaptive forward AIS estimate."""
    tree_bound: float | None
    """Tree-reweighted upper bound (deterministic; pairwise models), or None."""
    reverse: AISResult | None
    """Reverse AIS from exact draws on the schedule of the last forward run, or None."""
    reverse_upper: float | None
    """``reverse.log_z + INTERVAL_SIGMAS * reverse.std_err``, or None."""

    @property
    def width(self) -> float:
        """``upper - lower``: the uncertainty of every row's log-likelihood, in nats."""
        return self.upper - self.lower


def log_partition_interval(
    model,
    budget=AIS_BUDGET,
    *,
    samples=None,
    tree_max_iter=200,
    path="auto",
    random_state=None,
    warn=True,
):
    """An interval that contains ``log Z``: adaptive AIS below, upper bounds above.

    Parameters
    ----------
    model : DiscreteMRF
    budget : int, default=AIS_BUDGET
        Chain sweeps of :func:`adaptive_annealed_importance_sampling`.
    samples : array-like of shape (n_samples, n_variables) or "exact", optional
        Exact draws of ``model`` for reverse AIS (data simulated from it), or ``"exact"`` to
        draw as many as the last forward run has chains from the junction tree (which must fit).
        None (the default) makes no reverse run: a wide fitted model has no exact draws.
    tree_max_iter : int, default=200
        L-BFGS iterations of :func:`~skmrf.inference.tree_upper_bound` (pairwise models only;
        every iterate is a valid bound).
    path : {"auto", "centred", "unary"}, default="auto"
        Of the AIS runs; reverse AIS takes the path the forward runs took.
    random_state : int, RandomState instance, Generator or None, default=None
    warn : bool, default=True
        Passed to :func:`adaptive_annealed_importance_sampling`.

    Returns
    -------
    LogPartitionInterval

    Notes
    -----
    Where each end applies:

    * **Lower**: AIS is a stochastic lower bound for every model (its ``Z`` estimate is unbiased,
      so ``P(log Z_hat > log Z + t) <= exp(-t)``); the interval reaches ``INTERVAL_SIGMAS``
      of its standard errors below it (at most 6.6 nats) to cover its noise
      (:attr:`AdaptiveAISResult.lower`).
    * **Upper, tree-reweighted** (:func:`~skmrf.inference.tree_upper_bound`): deterministic, for
      every pairwise model, cheap, but loose on strongly coupled models (20 to 24 nats on models
      of the 16 x 16 digits).
    * **Upper, reverse AIS** (bidirectional Monte Carlo): tight (a few hundredths of a nat there)
      but it needs exact draws of the model, which exist only where the junction tree fits (then
      ``log Z`` is known exactly anyway) or for data simulated from a known model. For a wide
      fitted model the interval is therefore ``[AIS, tree bound]``.

    Examples
    --------
    >>> from skmrf.datasets import make_random_mrf
    >>> from skmrf.graphs import grid_graph
    >>> model = make_random_mrf(grid_graph(4, 4), 2, 1.0, random_state=0)
    >>> iv = log_partition_interval(model, samples="exact", random_state=0)
    >>> bool(iv.lower <= model.log_partition() <= iv.upper)
    True
    """
    rng = check_generator(random_state)
    ais_rng, rev_rng, draw_rng, tree_rng = rng.spawn(4)
    ais = adaptive_annealed_importance_sampling(model, budget, path=path, random_state=ais_rng, warn=warn)
    lower = ais.lower
    ends = []
    tree = None
    if all(len(c) <= 2 for c in model.cliques):
        tree = tree_upper_bound(model, max_iter=tree_max_iter, random_state=tree_rng).bound
        ends.append(tree)
    reverse = reverse_upper = None
    if samples is not None:
        if isinstance(samples, str):
            if samples != "exact":
                raise ValueError(f"samples must be an array of exact draws, 'exact' or None; got {samples!r}.")
            samples = model.sample(ais.n_chains, random_state=draw_rng, method="exact")
        reverse = reverse_annealed_importance_sampling(model, samples, ais.n_steps, rev_rng, ais.path)
        reverse_upper = reverse.log_z + INTERVAL_SIGMAS * reverse.std_err
        ends.append(reverse_upper)
    return LogPartitionInterval(lower, min(ends, default=np.inf), ais, tree, reverse, reverse_upper)
