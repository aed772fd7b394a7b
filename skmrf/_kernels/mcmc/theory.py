"""Domke's (2015) Algorithm 1: projected gradient with MCMC gradients inside a fast-mixing set,
with the K/M/v schedule of its theorems.

The paper's model is the Ising model over ``x in {-1, +1}``; everything it bounds (the set,
``R_2``, the Lipschitz constant) is stated in those coordinates, so the algorithm runs on
``phi = (h, J)`` and the caller converts the result (:func:`~skmrf.model._ising.ising_to_binary`).
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import NamedTuple

import numpy as np

from ..._solvers.projected_gradient import projected_gradient
from ...model._ising import ising_statistics
from .chains import Chains, IsingExpectation
from .fast_mixing import MAX_WORK, UPDATES_PER_SECOND, FastMixingSchedule, distance_bound, fast_mixing_schedule

__all__ = ["TheoryFit", "TheoryPlan", "fit_theory", "ising_data_statistics", "plan_theory"]


class TheoryPlan(NamedTuple):
    """The schedule a theory fit runs and the constants it came from."""

    auto: FastMixingSchedule | None
    """The theoretical K/M/v (None when every entry was given)."""
    schedule: FastMixingSchedule
    """The K/M/v that runs (given entries replace the theoretical ones)."""
    lipschitz: float
    suff_stat_bound: float
    """``R2``."""
    distance_bound: float
    """``D``."""


class TheoryFit(NamedTuple):
    """What :func:`fit_theory` ran: one value per step in ``trace`` (``gradient_norm``, ``time``)."""

    trace: dict


def ising_data_statistics(rows, edges):
    """Mean ``{-1, +1}`` statistics ``(E x_i, E x_i x_j)`` of the 0/1 :class:`~skmrf._data.Rows` (weighted),
    summed by row chunks for a memmap or a dask array (sums of 0/1 values or integer weights are
    exact in any order: the same means as in memory)."""
    ones, pairs = rows.reduce(_ising_chunk, edges, max_entries=STATISTICS_CHUNK_ENTRIES)
    return ising_statistics(ones / rows.total, pairs / rows.total, edges)


#: Entries (rows x columns) of a memmap chunk in :func:`ising_data_statistics`, whose float64 copy
#: and edge products take about ``8 (1 + edges / columns)`` bytes per entry (about 100 MB on a grid).
STATISTICS_CHUNK_ENTRIES = 1 << 22


def _ising_chunk(chunk, weight, edges):
    """Sums (weighted) of ``x_i`` and ``x_i x_j`` over the 0/1 rows of one chunk."""
    S01 = np.asarray(chunk).astype(np.float64)
    pairs = S01[:, edges[:, 0]] * S01[:, edges[:, 1]]
    if weight is None:
        return S01.sum(axis=0), pairs.sum(axis=0)
    return weight @ S01, weight @ pairs


def _work(schedule, n_variables):
    return float(schedule.n_iter) * schedule.n_samples * schedule.n_sweeps * n_variables


def check_work(schedule, n_variables, alternatives=()):
    """Refuse a schedule over :data:`~.fast_mixing.MAX_WORK` single-site updates.

    ``alternatives`` are ``(change, schedule)`` pairs; the message quotes those whose work is
    lower, with their figures, so that its advice is advice that helps.
    """
    n = n_variables
    work = _work(schedule, n)
    if work <= MAX_WORK:
        return
    better = sorted(((_work(s, n), change) for change, s in alternatives if _work(s, n) < work))
    advice = (
        "Settings that lower it (work): " + "; ".join(f"{change} ({w:.3g})" for w, change in better) + ". "
        if better
        else ""
    )
    raise ValueError(
        f"The theory schedule K={schedule.n_iter} steps, M={schedule.n_samples} samples, v={schedule.n_sweeps} "
        f"sweeps ({schedule.n_sweeps * n} single-site transitions) of {n} variables is K*M*v*n = {work:.3g} "
        f"single-site updates (about {work / UPDATES_PER_SECOND:.3g} s on one core at {UPDATES_PER_SECOND:.2g} "
        f"updates per second), over the budget MAX_WORK={MAX_WORK:.3g} (about "
        f"{MAX_WORK / UPDATES_PER_SECOND:.3g} s). {advice}"
        "Or use the adaptive schedule (the default: persistent chains and a stopping rule, no guarantee), "
        "or give n_iter, n_chains and n_sweeps explicitly."
    )


def plan_theory(given, eps, delta, alpha, lipschitz, geometry, projection, mean_x, n_edges, max_degree):
    """The K/M/v schedule of a theory fit: the theoretical one, with the ``given`` entries replacing it.

    ``given`` is ``(n_iter, n_chains, n_sweeps)``, each an int or ``"auto"``. A schedule over
    :data:`~.fast_mixing.MAX_WORK` is refused with the changes of ``eps``, ``alpha`` and
    ``lipschitz`` that would shorten it.
    """
    n = len(mean_x)
    R2 = math.sqrt(n + n_edges)

    def theory(eps, alpha, lipschitz):
        L = float(lipschitz) if lipschitz is not None else 4 * R2**2 + alpha
        D = distance_bound(projection, geometry.bound, mean_x, n_edges, max_degree, alpha)
        if not (np.isfinite(D) and np.isfinite(geometry.mixing_constant)):
            return L, D, None  # no bound on the distance, or no mixing bound: no schedule
        schedule = fast_mixing_schedule(
            eps,
            lipschitz=L,
            suff_stat_bound=R2,
            mixing_constant=geometry.mixing_constant,
            mixing_rate=geometry.mixing_rate,
            distance_bound=D,
            ridge=alpha,
            delta=delta,
            n_variables=n,
        )
        return L, D, schedule

    def merged(auto):
        return FastMixingSchedule(*(a if isinstance(g, str) else int(g) for g, a in zip(given, auto)))

    L, D, auto = theory(eps, alpha, lipschitz)
    if not any(isinstance(g, str) for g in given):
        sched = FastMixingSchedule(*map(int, given))
        check_work(sched, n)
        return TheoryPlan(None, sched, L, R2, D)
    if auto is None:
        j = int(np.argmax(np.abs(mean_x)))
        raise ValueError(
            f"The schedule needs a bound on ||theta_0 - theta*||, but column {j} is constant, so "
            "with alpha=0 its field has no finite optimum. Set alpha > 0, drop the column, or give "
            "n_iter, n_chains and n_sweeps explicitly."
        )
    sched = merged(auto)
    if _work(sched, n) > MAX_WORK:
        changes = [(f"eps={eps * f:g}", eps * f, alpha, lipschitz) for f in (10, 100)]
        changes += [(f"alpha={alpha * f:g}", eps, alpha * f, lipschitz) for f in (10, 100)]
        changes += (
            [("alpha=0", eps, 0.0, lipschitz)]
            if alpha > 0
            else [(f"alpha={a:g}", eps, a, lipschitz) for a in (0.1, 1.0)]
        )
        changes += [(f"lipschitz={L / f:.3g}", eps, alpha, L / f) for f in (10, 100)]
        alternatives = []
        for change, e, a, lip in changes:
            other = theory(e, a, lip)[2]
            if other is not None:
                alternatives.append((change, merged(other)))
        check_work(sched, n, alternatives)
    return TheoryPlan(auto, sched, L, R2, D)


def _project_couplings(phi, n_variables, project):
    """Project the couplings ``J = phi[n_variables:]`` of ``phi = (h, J)``; the fields are free."""
    return np.concatenate([phi[:n_variables], project(phi[n_variables:])])


def fit_theory(
    layout, colours, rows, mean_stats, alpha, plan, geometry, *, init, persistent, average, reproject, rng, parallel,
    callback=None, expectation=None,
):  # fmt: skip
    """Algorithm 1 of Domke (2015) in the ``{-1, +1}`` coordinates; returns ``phi = (h, J)``.

    Parameters
    ----------
    layout : CliqueLayout
        A binary pairwise model's layout.
    colours : list of ndarray
    rows : Rows
        The data (chains started at data rows with ``init="data"``).
    mean_stats : ndarray of shape (n_variables + n_edges,)
        The data's Ising statistics (:func:`ising_data_statistics`).
    alpha : float
        The paper's ``lambda`` on ``(h, J)``.
    plan : TheoryPlan
    geometry : FastMixingSet
        The set; its ``project`` acts on ``J``.
    init, persistent, average
        The chains' start, whether they persist (outside the theory's guarantee), and whether
        to return the average of the iterates (Theorem 2) or the last one (Corollary 9).
    reproject : bool
        Project the average again (the spectral set: convex, so the average is inside it up to
        round-off, which this removes).
    rng, parallel
        As for :func:`.adaptive.fit_adaptive`.
    callback : callable, optional
        ``callback(k, x=phi, gradient=...)`` after each step.
    expectation : callable, optional
        ``expectation(phi) -> E_phi[t]`` replacing the chains (exact references in tests).

    Returns
    -------
    phi : ndarray of shape (n_variables + n_edges,)
    info : TheoryFit
    """
    n = len(layout.n_states)
    sched = plan.schedule
    if expectation is None:
        chains = Chains(layout, colours, rows, sched.n_samples, sched.n_sweeps, init, persistent, rng, parallel)
        expectation = IsingExpectation(chains)
    trace, start = {"gradient_norm": [], "time": []}, time.perf_counter()

    def record(k, x, gradient):
        trace["gradient_norm"].append(float(np.linalg.norm(gradient)))
        trace["time"].append(time.perf_counter() - start)
        if callback is not None:
            callback(k, x=x, gradient=gradient)

    last, mean = projected_gradient(
        expectation,
        mean_stats,
        partial(_project_couplings, n_variables=n, project=geometry.project),
        lipschitz=plan.lipschitz,
        ridge=alpha,
        n_iter=sched.n_iter,
        callback=record,
    )
    phi = mean if average else last
    if average and reproject:
        phi[n:] = geometry.project(phi[n:])
    return phi, TheoryFit({key: np.array(value) for key, value in trace.items()})
