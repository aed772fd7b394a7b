"""The sparse maximum-likelihood kernel: statistics, start, Newton-CG, certified bounds.

:func:`sparse_max_likelihood` runs the whole non-chordal fit on plain arrays
(and a :class:`~skmrf._data.gaussian.StandardisedRows` for the data), for
:class:`~skmrf.estimators.gaussian.GaussianMaxLikelihood`:

1. the sample covariance on the chordal embedding ``E`` of the pattern ``V``
   (one pass over the data by row chunks; its restriction to ``V`` is the
   covariance the likelihood needs);
2. the closed-form ML on ``E``, which bounds the optimum from below
   (:func:`.chordal.embedding_start`) and, fill zeroed, is a candidate start;
3. on a lattice, the stationary stencil of highest likelihood on the torus
   (:func:`.lattice.stationary_fit`) rescaled so that its inverse has the
   sample variances on its diagonal (:func:`rescale`), another candidate; the
   start is the positive definite candidate of lowest objective
   (``diag(1 / S_ii)`` at worst);
4. Newton-CG (:func:`.newton_cg.newton_cg_covsel`) with the torus preconditioner
   on lattices, stopped at statistical precision;
5. a dual bound from one completion (:func:`.chordal.dual_bound`) of ``S`` on
   the pattern and, on the fill, the iterate's ``inv(Theta)`` or the dual point
   of the last Newton system (the larger bound): the certified gap.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..._data.gaussian import covariance_on_pattern
from ..._utils._budgets import WIDE_STENCIL_WARN_P
from ..._utils._warnings import warn
from ...exceptions import CostWarning
from .chordal import ChordalPattern, covariance_on_embedding, dual_bound, embedding_start, likelihood_start, objective
from .lap import assemble_symmetric, pattern_unknowns
from .lattice import detect_lattice, stationary_fit
from .newton_cg import DECREMENT_TOL, NEAREST_NEIGHBOUR_OFFSETS, NewtonResult, newton_cg_covsel

#: What GaussianMaxLikelihood's default took on L L^T's 13-point pattern, n = 1000
#: (benchmarks/results/gaussian_wide_stencil.txt): the figures of the wide-stencil CostWarning.
WIDE_STENCIL_COST = "0.41 s at p = 900, 3.9 s at p = 2500, 120 s at p = 3600 and more than 300 s at p = 4900 and 6084"

__all__ = [
    "LapRefinement",
    "SparseFit",
    "choose_start",
    "lattice_start",
    "refine_lap",
    "rescale",
    "sparse_max_likelihood",
]


class SparseFit(NamedTuple):
    """The outcome of :func:`sparse_max_likelihood` (objective values in the fit's units).

    Attributes
    ----------
    newton : NewtonResult
        The Newton-CG run: its ``x`` is the precision on the pattern (``pattern.rows``,
        ``pattern.cols`` order), its ``Y`` the projected inverse of ``x`` on the embedding.
    s : ndarray of shape (q,)
        The sample covariance on the pattern.
    lower_bound : float
        A certified lower bound on the optimum: the larger of the dual bound
        and the embedding bound.
    embedding_bound : float
        ``p - log det Theta_E`` (``-inf`` when ``S`` has no completion on ``E``).
    start : str
        The start used: ``"stationary"``, ``"embedding"``, ``"given"`` or ``"diagonal"``.
    start_objective : float
    lattice : bool
        Whether the torus preconditioner was used.
    """

    newton: NewtonResult
    s: np.ndarray
    lower_bound: float
    embedding_bound: float
    start: str
    start_objective: float
    lattice: bool


def rescale(pattern, s, x):
    """``D Theta D`` with ``D`` making the diagonal of its inverse equal ``S_ii`` (``x`` positive definite).

    ``inv(D Theta D)_ii = inv(Theta)_ii / D_i^2``: one projected inverse. Measured on
    the stationary start of the 5-point 200 x 200 lattice: objective 822.6 against
    3 times more (start), and 3 Newton steps with 23 CG iterations against 4 and 35.
    """
    L = pattern.cholesky(x)[0]
    if L is None:
        return None
    w = pattern.inverse_on_pattern(L)[1]
    diag = pattern.diagonal
    d = np.empty(pattern.p)
    d[pattern.rows[diag]] = np.sqrt(w[diag] / s[diag])
    return x * d[pattern.rows] * d[pattern.cols]


def lattice_start(pattern, s):
    """``(lattice, x)``: the lattice of a stencil pattern and the stationary fit on it, rescaled
    (:func:`rescale`; None when not positive definite), or ``(None, None)`` off a lattice."""
    lattice = detect_lattice(pattern.rows, pattern.cols, pattern.p)
    if lattice is None:
        return None, None
    return lattice, rescale(pattern, s, stationary_fit(lattice, s)[lattice.kind])


def choose_start(pattern, s, candidates):
    """The positive definite candidate of lowest objective, else ``diag(1 / S_ii)``: ``(name, x, f)``.

    Parameters
    ----------
    pattern : ChordalPattern
    s : ndarray of shape (q,)
        Sample covariance on the pattern.
    candidates : dict of str to ndarray or None
        Starting precisions on the pattern (None: unavailable).
    """
    diagonal = np.where(pattern.diagonal, 1.0 / np.where(pattern.diagonal, s, 1.0), 0.0)
    best = ("diagonal", diagonal, objective(pattern, s, diagonal))
    for name, x in candidates.items():
        if x is not None:
            f = objective(pattern, s, x)
            if f < best[2]:
                best = (name, x, f)
    return best


def sparse_max_likelihood(
    data,
    pattern,
    n_div,
    shrinkage=0.0,
    mu=1.0,
    tol=1e-10,
    max_iter=100,
    decrement_tol=None,
    preconditioner="auto",
    extra_start=None,
    check=None,
    max_time=None,
    log=None,
    callback=None,
):
    """Maximum-likelihood precision on a non-chordal pattern (see the module docstring).

    Parameters
    ----------
    data : ndarray of shape (p, n) or StandardisedRows
        Standardised data (one row per variable), or read by row chunks.
    pattern : ChordalPattern
        With ``pattern.chordal`` False.
    n_div : float
        The number of samples (the sum of the weights).
    shrinkage, mu
        As in :func:`skmrf._data.gaussian.covariance_on_pattern`.
    tol, max_iter
        As in :func:`.newton_cg.newton_cg_covsel`.
    decrement_tol : float, optional
        Stop when ``lambda^2 / 2 <= decrement_tol * q / n_div`` (``q`` unknowns).
    preconditioner : {"auto", "lattice", "chordal"}, default="auto"
        ``"auto"``: the torus preconditioner when the pattern is a lattice.
    extra_start : callable, optional
        ``extra_start(s)`` returns another candidate start on the pattern (or None).
    check : callable, optional
        Called as ``check(s)`` on the sample covariance on the pattern before
        anything else (the estimator's refusal of collinear neighbours).
    max_time : float, optional
        Seconds for the Newton iterations (see :func:`.newton_cg.newton_cg_covsel`).
    log : callable, optional

    Returns
    -------
    SparseFit
    """
    q = len(pattern.rows)
    log = log or (lambda *args: None)
    s_stored = covariance_on_embedding(data, pattern, n_div, shrinkage, mu)
    s = s_stored[pattern.index]
    log("sample covariance on the embedding: %d stored entries", pattern.n_stored)
    if check is not None:
        check(s)
    x_embedding, embedding_bound = embedding_start(pattern, s_stored)
    del s_stored
    log("embedding start: %s", "positive definite" if x_embedding is not None else "not positive definite")
    lattice, x_stationary = lattice_start(pattern, s)
    if lattice is None and preconditioner == "lattice":
        raise ValueError("preconditioner='lattice' needs a stencil pattern on a grid (see detect_lattice).")
    candidates = {"embedding": x_embedding}
    if lattice is not None:
        candidates["stationary"] = x_stationary
    if preconditioner == "chordal":
        lattice = None
    if extra_start is not None:
        candidates["given"] = extra_start(s)
    start, x0, f0 = choose_start(pattern, s, candidates)
    log(
        "start: %s, objective %.10g (embedding bound %.10g; %s preconditioner)",
        start,
        f0,
        embedding_bound,
        "torus" if lattice is not None else "chordal",
    )
    threshold = None if decrement_tol is None else decrement_tol * q / n_div
    warned = max_time is None and _warn_wide_stencil(lattice, pattern.p)
    result = newton_cg_covsel(
        pattern,
        s,
        x0,
        tol=tol,
        max_iter=max_iter,
        decrement_tol=threshold,
        lattice=lattice,
        max_time=max_time,
        callback=callback,
        warn_cost=not warned,
    )
    lower = max(dual_bound(pattern, s, result.Y), embedding_bound)
    if result.newton_dual is not None:
        lower = max(lower, dual_bound(pattern, s, result.newton_dual))
    log("certified gap %.4g (objective %.10g, bound %.10g)", result.objective - lower, result.objective, lower)
    return SparseFit(result, s, lower, embedding_bound, start, f0, lattice is not None)


def _warn_wide_stencil(lattice, p):
    """Say before the Newton steps what they may cost on a stencil wider than nearest neighbours
    (a :class:`~skmrf.exceptions.CostWarning`); True if it warned."""
    if lattice is None or lattice.n_offsets <= NEAREST_NEIGHBOUR_OFFSETS or p <= WIDE_STENCIL_WARN_P:
        return False
    warn(
        f"GaussianMaxLikelihood: the pattern is a {2 * lattice.n_offsets - 1}-point stencil on a "
        f"{lattice.shape[0]} x {lattice.shape[1]} grid, wider than nearest neighbours, where the "
        "stationary-torus preconditioner of the Newton systems fits poorly and the cost grows much faster "
        "than p: on the 13-point pattern of L L^T (L the 5-point Laplacian, n = 1000) the fit took "
        f"{WIDE_STENCIL_COST}, against 0.40 s at p = 6084 on the 5-point lattice. Pass max_time (seconds) "
        "to stop at a certified duality gap (duality_gap_ reports it), or a larger decrement_tol.",
        CostWarning,
    )
    return True


class LapRefinement(NamedTuple):
    """What :func:`refine_lap` ran: the start it chose, the repair of the LAP estimate, its steps."""

    start: str
    repair_factor: float
    n_iter: int


def refine_lap(data, adjacency, n_div, precision, *, shrinkage, mu, newton_steps, log, callback=None):
    """``newton_steps`` Newton-CG steps of the ML problem from the LAP estimate (made positive definite).

    Fewer when the statistical precision of GaussianMaxLikelihood (``decrement_tol=1e-3``) is
    reached first; on a lattice pattern with the stationary-torus preconditioner, and from the
    stationary fit when its objective is lower. Returns ``(precision, log det, LapRefinement)``.
    """
    p = data.shape[0]
    cols, rows = pattern_unknowns(adjacency)  # the lower triangle, as the chordal embedding stores it
    pattern = ChordalPattern(rows, cols, p)
    s = covariance_on_pattern(data, rows, cols, n_div, shrinkage, mu)
    x = np.asarray(precision[rows, cols]).ravel()
    repair_factor = 1.0
    # Measured on the 316 x 316 5-point lattice (n = 1000): the repaired LAP estimate (t = 0.91) took
    # damped steps of 105-230 CG iterations (objective -5612 after 3 steps, 271 s), the stationary
    # start steps of 3 and 5 (-6251 after 2, ML's optimum -6255).
    lattice, x_stationary = lattice_start(pattern, s)
    candidates = {} if lattice is None else {"stationary": x_stationary}
    if pattern.cholesky(x)[0] is not None:
        candidates["lap"] = x
    elif candidates.get("stationary") is None:
        # The repair's line search of factorisations (12 s at p = 10^5) only where no lattice start exists.
        x, repair_factor = likelihood_start(pattern, s, x)
        log("the LAP estimate is not positive definite; start at off-diagonal scale %.6g", repair_factor)
        candidates["lap"] = x
    start, x, f0 = choose_start(pattern, s, candidates)
    log("Newton start: %s, objective %.10g", start, f0)
    result = newton_cg_covsel(
        pattern,
        s,
        x,
        max_iter=newton_steps,
        decrement_tol=DECREMENT_TOL * len(rows) / n_div,
        lattice=lattice,
        callback=callback,
        certify=False,  # GaussianLAP reports no duality gap
    )
    refined = assemble_symmetric(rows, cols, result.x, p)
    return refined, result.log_det, LapRefinement(start, repair_factor, result.n_iter)
