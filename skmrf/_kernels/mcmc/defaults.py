"""The "auto" values of the adaptive schedule: chains, sweeps and averaged steps from the data.

:func:`plan_adaptive` is what :class:`~skmrf.AdaptiveSchedule`'s ``"auto"`` entries resolve to:
the chains hold the Monte-Carlo error of the averaged iterate at a tenth of maximum
likelihood's statistical error whatever the number of rows (:func:`adaptive_defaults`), and the
sweeps per step follow the chains' autocorrelation per sweep, measured at the start parameters
(:func:`sweep_autocorrelation`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._utils._budgets import ADAPTIVE_MAX_STATE_BYTES
from ...inference._gibbs import run_chains
from .chains import gibbs_kernel

__all__ = [
    "ADAPTIVE_AVERAGE",
    "ADAPTIVE_MAX_ITER",
    "ADAPTIVE_MAX_TOTAL_WORK",
    "ADAPTIVE_MC_FRACTION",
    "AdaptiveDefaults",
    "AdaptivePlan",
    "adaptive_defaults",
    "budget_notes",
    "plan_adaptive",
    "sweep_autocorrelation",
]

#: The Monte-Carlo error of the averaged iterate is held to ADAPTIVE_MC_FRACTION of the
#: statistical error of maximum likelihood, over ADAPTIVE_AVERAGE averaged steps, with at least
#: ADAPTIVE_MIN_CHAINS chains and at most ADAPTIVE_MAX_SWEEPS sweeps per step; a step's
#: statistics and natural step cost about ADAPTIVE_STEP_COST sweeps.
ADAPTIVE_MC_FRACTION = 0.1
ADAPTIVE_AVERAGE = 200
ADAPTIVE_MIN_CHAINS = 1000
ADAPTIVE_MAX_SWEEPS = 50
ADAPTIVE_STEP_COST = 1.0
#: Most steps of an "auto" run (at least twice the averaged steps: the rule must fire in the
#: first half and the average fit in the second).
ADAPTIVE_MAX_ITER = 2000
#: Budget of the averaged phase of an "auto" schedule, in single-site updates (``M K (v + 1) n``):
#: about 50 s at the 4e7 updates per second of the theory schedule's chains on one core, 5 s at the
#: 4e8 of the adaptive schedule's binary chains (#42, 20 x 20 digits) (#40: a
#: chain model with weights summing to 2e8 asked for 1,058,253 chains and ran past 150 s). Beyond
#: it the chains and steps are cut to fit, and the fit warns with the Monte-Carlo error it gets.
ADAPTIVE_MAX_WORK = 2e9
#: Budget of a whole "auto" run, in single-site updates (``M n_iter (v + 1) n``): the "auto" steps
#: are cut to fit it (not below twice the averaged steps). #42: on the 20 x 20 binarised digits the
#: chains barely mix (autocorrelation 0.999 a sweep), the stopping rule never fires, and 2000 steps of
#: 1000 chains x 50 sweeps took 92 s (held-out log-likelihood -64.6 per row, exact log Z); 490 steps,
#: the 1e10 updates of this budget, take 23 s at the binary chains' 4.4e8 updates a second on one
#: core (-64.8; pseudo-likelihood -116.3). A run whose rule fires early never meets it.
ADAPTIVE_MAX_TOTAL_WORK = 1e10
#: The probe that measures the sweeps' autocorrelation at the start: chains and sweeps.
ADAPTIVE_PROBE_CHAINS = 1000
ADAPTIVE_PROBE_SWEEPS = 20
#: The measured autocorrelation is capped here (an autocorrelation time of about 2000 sweeps).
ADAPTIVE_MAX_CORRELATION = 0.999


class AdaptiveDefaults(NamedTuple):
    """The adaptive schedule's "auto" values (:func:`adaptive_defaults`).

    ``n_chains`` persistent chains, ``n_sweeps`` Gibbs sweeps per chain and step, ``n_average``
    steps averaged once the stopping rule has fired, and ``step_autocorrelation_time``, the
    autocorrelation time in steps of the chains' statistics that the chains were sized for.
    """

    n_chains: int
    n_sweeps: int
    n_average: int
    step_autocorrelation_time: float
    mc_fraction: float = ADAPTIVE_MC_FRACTION
    """The Monte-Carlo error over the statistical error that these chains and steps give:
    ``fraction``, or more where ``max_work`` cut them."""


# Over 60 lines by its docstring (the parameters, and the rule's derivation); the body is under 40.
def adaptive_defaults(
    n_rows,
    n_variables,
    sweep_correlation=0.0,
    *,
    n_sweeps=None,
    fraction=ADAPTIVE_MC_FRACTION,
    n_average=ADAPTIVE_AVERAGE,
    min_chains=ADAPTIVE_MIN_CHAINS,
    max_sweeps=ADAPTIVE_MAX_SWEEPS,
    step_cost=ADAPTIVE_STEP_COST,
    max_state_bytes=ADAPTIVE_MAX_STATE_BYTES,
    max_work=ADAPTIVE_MAX_WORK,
):
    """The adaptive schedule's chains, sweeps per step and averaged steps for ``n_rows`` rows.

    **The rule.** The estimate is the mean of ``K`` iterates taken after the run reached its
    noise level. There each step moves ``theta`` by the chains' noise, so the averaged iterate
    is off maximum likelihood by about ``F^-1 e``, with ``e`` the chains' feature noise averaged
    over the ``K`` steps and ``F`` the Fisher information (the features' covariance). ``M``
    chains whose statistics have an autocorrelation time of ``tau`` steps give ``e`` the
    covariance ``tau F / (M K)``, so the Monte-Carlo covariance of the estimate is ``tau F^-1 /
    (M K)``, while maximum likelihood's own sampling covariance is ``F^-1 / n``: the ratio
    ``tau n / (M K)`` is the same for every parameter. The rule holds it at ``fraction^2``:

    ``M K >= tau n / fraction^2``,

    i.e. the Monte-Carlo error is ``fraction`` (0.1) of the statistical error whatever ``n``,
    which adds ``sqrt(1 + 0.01) - 1 = 0.5 %`` to the fit's error. ``K`` is ``n_average``
    (200) and ``M`` grows with ``n`` (at least ``min_chains``), until the chains' states would
    exceed ``max_state_bytes`` (8 bytes per variable and chain); from there ``K`` grows instead.
    With sample weights ``n`` is their sum (a weight counts as that many repeated rows).

    **Sweeps per step.** With a lag-one autocorrelation ``rho`` per sweep
    (:func:`sweep_autocorrelation`, measured at the start parameters), ``v`` sweeps per step
    leave ``rho^v`` between steps and ``tau(v) = (1 + rho^v) / (1 - rho^v)`` steps of
    autocorrelation (a first-order autoregression). A step costs about ``v + step_cost``
    sweeps (``step_cost``: the chains' statistics and the natural step), so the work per
    effective draw is ``(v + step_cost) tau(v)``; ``v`` minimises it, up to ``max_sweeps``.
    Weakly coupled models take one sweep (``rho`` = 0.11 on a 12x12 grid with parameters
    uniform on [-1, 1]: ``tau`` = 1.25 steps); the 8x8 binarised digits 5 (``rho`` = 0.78); the
    digits upsampled to 16x16, whose 2x2 blocks are one pixel each, 17-18 (``rho`` =
    0.965-0.969, ``tau`` = 3.4-3.6 steps). More sweeps per step also shrink the lag of persistent chains behind the
    parameters, the bias that one sweep per step left on the 16x16 digits (node frequencies
    of the fitted model up to 0.14 from the data's).

    Parameters
    ----------
    n_rows : int or float
        Rows of the data (the sum of their weights with weights).
    n_variables : int
        Variables of the model (for the chains' memory).
    sweep_correlation : float, default=0.0
        Lag-one autocorrelation per sweep of the chains' statistics, in ``[0, 1)``.
    n_sweeps : int, optional
        Sweeps per step, if given (then only ``M`` and ``K`` follow the rule).
    fraction : float, default=ADAPTIVE_MC_FRACTION
        The Monte-Carlo error's share of the statistical error.
    n_average : int, default=ADAPTIVE_AVERAGE
        The averaged steps ``K`` (more when the chains hit ``max_state_bytes``).
    min_chains : int, default=ADAPTIVE_MIN_CHAINS
        The fewest chains.
    max_sweeps : int, default=ADAPTIVE_MAX_SWEEPS
        The most sweeps per step.
    step_cost : float, default=ADAPTIVE_STEP_COST
        The cost of a step beyond its sweeps, in sweeps.
    max_state_bytes : int, default=ADAPTIVE_MAX_STATE_BYTES
        The chains' states (8 bytes per variable and chain) beyond which ``K`` grows instead.
    max_work : float, default=ADAPTIVE_MAX_WORK
        Most single-site updates ``M K (v + step_cost) n`` of the averaged phase: beyond it ``M K``
        is cut (not below ``min_chains`` times ``n_average``) and ``mc_fraction`` says what that
        leaves.

    Returns
    -------
    AdaptiveDefaults
        ``(n_chains, n_sweeps, n_average, step_autocorrelation_time, mc_fraction)``.
    """
    rho = min(max(float(sweep_correlation), 0.0), ADAPTIVE_MAX_CORRELATION)

    def tau(v):
        return (1 + rho**v) / (1 - rho**v)

    if n_sweeps is None:
        n_sweeps = min(range(1, max_sweeps + 1), key=lambda v: (v + step_cost) * tau(v))
    t = tau(n_sweeps)
    draws = t * n_rows / fraction**2  # M K
    # the averaged phase's work M K (v + step_cost) n, cut to max_work (at least min_chains x n_average)
    affordable = max_work / ((n_sweeps + step_cost) * max(n_variables, 1))
    draws = min(draws, max(affordable, min_chains * n_average))
    max_chains = max(min_chains, int(max_state_bytes // (8 * max(n_variables, 1))))
    n_chains = min(max(min_chains, math.ceil(draws / n_average)), max_chains)
    n_average = max(n_average, math.ceil(draws / n_chains))
    achieved = max(fraction, math.sqrt(t * n_rows / (n_chains * n_average)))
    return AdaptiveDefaults(n_chains, int(n_sweeps), n_average, t, achieved)


def sweep_autocorrelation(
    layout, theta, colours, rows, rng, n_chains=ADAPTIVE_PROBE_CHAINS, n_sweeps=ADAPTIVE_PROBE_SWEEPS
):
    """Lag-one autocorrelation per Gibbs sweep of the chains at ``theta``: the slower of two statistics.

    ``n_chains`` chains start at rows drawn by weight (:meth:`~skmrf._data.Rows.draw`) and run
    ``n_sweeps`` sweeps; after each, every chain's energy and fraction of non-zero states are
    recorded (the statistics :meth:`~skmrf.model.DiscreteMRF.sample` checks R-hat on). Each
    sweep's mean over the chains is subtracted, which removes the common drift of chains that
    start from the data rather than from the model, and the lag-one autocorrelation of the rest
    is pooled over chains and sweeps. Returns the larger of the two, in ``[0,
    ADAPTIVE_MAX_CORRELATION]`` (0 when neither statistic varies).

    Measured at the pseudo-likelihood start: 0.11 on a 12x12 grid with 10^4 rows from
    parameters uniform on [-1, 1]; 0.78 on the 8x8 binarised digits; 0.965 on the digits
    upsampled to 16x16. Twenty sweeps from the data rows gave the same values within 0.01 as
    100 sweeps after 20 of burn-in.

    Parameters
    ----------
    layout : CliqueLayout
        The (pairwise) model's layout.
    theta : ndarray of shape (n_params,)
        The parameters to measure at.
    colours : list of ndarray
        Colour classes of the graph, for the chromatic sweeps.
    rows : Rows
        The data; the chains start at its rows.
    rng : numpy.random.Generator
        Draws the start rows and every Gibbs update.
    n_chains : int, default=ADAPTIVE_PROBE_CHAINS
    n_sweeps : int, default=ADAPTIVE_PROBE_SWEEPS

    Returns
    -------
    float
        The lag-one autocorrelation per sweep.
    """
    kernel = gibbs_kernel(layout, theta, colours)
    S = kernel.to_internal(rows.take(rows.draw(rng, n_chains)))
    trace = np.empty((n_chains, n_sweeps, 2))
    for t, stream in enumerate(rng.spawn(n_sweeps)):
        ((S, _),) = run_chains(kernel, [S], 1, [stream])
        states = kernel.to_external(S)
        trace[:, t, 0] = layout.energy(states, theta)
        trace[:, t, 1] = (states > 0).mean(axis=1)
    r = trace - trace.mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (r[:, 1:] * r[:, :-1]).sum(axis=(0, 1)) / (r[:, :-1] ** 2).sum(axis=(0, 1))
    rho = rho[np.isfinite(rho)]
    return float(np.clip(rho.max(), 0.0, ADAPTIVE_MAX_CORRELATION)) if len(rho) else 0.0


class AdaptivePlan(NamedTuple):
    """The adaptive schedule a fit runs (:func:`plan_adaptive`): every "auto" entry filled in."""

    n_iter: int
    n_chains: int
    n_sweeps: int
    n_average: int
    """Fewest steps averaged after the stopping rule fired."""
    tol: float | None
    """The stopping rule's tolerance; None (a fixed number of steps) when ``n_iter`` is given."""
    sweep_autocorrelation: float | None
    """The measured lag-one autocorrelation per sweep; None when chains and sweeps were given."""
    mc_fraction: float | None = None
    """The Monte-Carlo error over the statistical error of "auto" chains (above
    ``ADAPTIVE_MC_FRACTION`` where ``ADAPTIVE_MAX_WORK`` cut them); None when chains were given."""
    work_cut: bool = False
    """Whether ``ADAPTIVE_MAX_TOTAL_WORK`` cut the "auto" steps below ``ADAPTIVE_MAX_ITER``."""


def plan_adaptive(given, tol, layout, theta0, colours, rows, rng, measure=True):
    """Resolve the adaptive schedule's ``given = (n_iter, n_chains, n_sweeps)`` (ints or "auto").

    "auto" chains and sweeps come from :func:`adaptive_defaults` for ``rows.total`` rows, with
    the autocorrelation per sweep measured at ``theta0`` (:func:`sweep_autocorrelation`, which
    draws from ``rng``) unless both are given or ``measure`` is False (then taken as 0). "auto"
    ``n_iter`` is at most ``max(ADAPTIVE_MAX_ITER, 2 n_average)`` steps, and no more than the
    whole run's ``ADAPTIVE_MAX_TOTAL_WORK`` single-site updates allow (at least ``2 n_average``),
    ended by the stopping rule with ``tol``; an integer runs exactly that many steps and averages
    their last half.
    """
    n_iter, n_chains, n_sweeps = given
    given_sweeps = None if isinstance(n_sweeps, str) else int(n_sweeps)
    rho = None
    if measure and (isinstance(n_chains, str) or given_sweeps is None):
        rho = sweep_autocorrelation(layout, theta0, colours, rows, rng)
    auto = adaptive_defaults(rows.total, len(layout.n_states), 0.0 if rho is None else rho, n_sweeps=given_sweeps)
    fixed = not isinstance(n_iter, str)
    chains = auto.n_chains if isinstance(n_chains, str) else int(n_chains)
    steps, cut = int(n_iter) if fixed else max(ADAPTIVE_MAX_ITER, 2 * auto.n_average), False
    if not fixed:
        step_work = chains * (auto.n_sweeps + ADAPTIVE_STEP_COST) * len(layout.n_states)
        affordable = int(ADAPTIVE_MAX_TOTAL_WORK // step_work)
        cut = affordable < steps
        steps = max(2 * auto.n_average, min(steps, affordable))
    return AdaptivePlan(
        steps,
        chains,
        auto.n_sweeps,
        auto.n_average,
        None if fixed else tol,
        rho,
        auto.mc_fraction if isinstance(n_chains, str) else None,
        cut,
    )


def budget_notes(plan, n_rows):
    """``(chains, steps)``: what the work budgets cut in an adaptive plan, as sentences for the fit's
    warnings (None where nothing was cut). ``n_rows``: the rows (sum of weights) the chains follow."""
    chains = steps = None
    if plan.mc_fraction is not None and plan.mc_fraction > ADAPTIVE_MC_FRACTION * (1 + 1e-9):
        chains = (
            f"the adaptive schedule's auto chains were cut to {plan.n_chains} chains x {plan.n_average} averaged "
            f"steps of {plan.n_sweeps} sweeps, the work of about {ADAPTIVE_MAX_WORK:.3g} single-site updates "
            f"(ADAPTIVE_MAX_WORK), so the estimate's Monte-Carlo error is {plan.mc_fraction:.3g} of its "
            f"statistical error instead of {ADAPTIVE_MC_FRACTION:g} ({n_rows:.6g} rows, or the sum of the "
            "weights, ask for that many). Give the schedule's n_chains and n_iter to spend more, or weights "
            "that sum to the number of rows they stand for."
        )
    if plan.work_cut:
        steps = (
            f" The run was cut to the {plan.n_iter} steps that ADAPTIVE_MAX_TOTAL_WORK "
            f"({ADAPTIVE_MAX_TOTAL_WORK:.3g} single-site updates) allows; give the schedule's n_iter to run more."
        )
    return chains, steps
