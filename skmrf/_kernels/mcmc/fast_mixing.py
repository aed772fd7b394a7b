"""The fast-mixing parameter sets of Domke (2015) and the K/M/v schedule, on plain numbers.

- the schedule (Theorems 4, 5, 8 and Corollary 9): :func:`fast_mixing_schedule`,
  :func:`schedule_values`;
- the mixing constants ``(C, alpha)`` of Eq. 2 for the box (Dobrushin) and the spectral set:
  :func:`dobrushin_mixing_constants`, :func:`spectral_mixing_constants`;
- the Euclidean projections onto the sets: :func:`project_box`, :func:`project_spectral`;
- the set and the distance bound ``D`` an estimator needs from its options and data:
  :func:`fast_mixing_set`, :func:`distance_bound`.

Everything is stated in the paper's Ising ``{-1, +1}`` coordinates (see
:mod:`skmrf.model._ising`). :mod:`skmrf._kernels.mcmc` uses them. The spectral projection is in :mod:`.spectral`.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import numpy as np

from .spectral import project_spectral

__all__ = [
    "DEFAULT_BETAS_CONVEX",
    "DEFAULT_BETAS_STRONGLY_CONVEX",
    "DEFAULT_MIXING_MARGIN",
    "MAX_WORK",
    "UPDATES_PER_SECOND",
    "FastMixingSchedule",
    "FastMixingSet",
    "distance_bound",
    "dobrushin_mixing_constants",
    "fast_mixing_schedule",
    "fast_mixing_set",
    "project_box",
    "schedule_values",
    "spectral_mixing_constants",
]

#: Budget on the total work of a fit, in single-site Gibbs updates
#: (``n_iter * n_samples * n_sweeps * n_variables``): about two minutes at the
#: 4.3e7 updates per second measured on one core (``UPDATES_PER_SECOND``; #40: 1e11, the budget
#: before, admitted fits of 40 minutes, and one of 2.9e9 updates took 68 s). ``fit`` refuses
#: larger schedules, saying how long they would take.
MAX_WORK = 5e9
UPDATES_PER_SECOND = 4.3e7


#: Default fraction of the Dobrushin / spectral threshold used when
#: ``max_coupling=None``: ``Delta tanh(beta) = 0.8`` (box) or ``||R||_2 = 0.8``.
DEFAULT_MIXING_MARGIN = 0.8

#: Default beta splits: Theorem 4's example (convex) and Theorem 8's (strongly convex).
DEFAULT_BETAS_CONVEX = (0.66, 0.33, 0.01)
_B13 = (1 - 1 / math.sqrt(2)) / 2
DEFAULT_BETAS_STRONGLY_CONVEX = (_B13, 1 / math.sqrt(2), _B13)


# ---------------------------------------------------------------------------
# The schedule (Theorems 4, 5, 8 and Corollary 9)
# ---------------------------------------------------------------------------
class FastMixingSchedule(NamedTuple):
    """Number of gradient steps ``K``, samples per step ``M`` and Gibbs sweeps per sample.

    ``n_sweeps`` is the paper's ``v`` (single-site Markov transitions) when the
    schedule was computed without ``n_variables``, else ``ceil(v / n_variables)``.
    """

    n_iter: int
    n_samples: int
    n_sweeps: int


def _check_betas(betas):
    b = np.asarray(betas, dtype=float)
    if b.shape != (3,) or np.any(b <= 0) or abs(b.sum() - 1) > 1e-9:
        raise ValueError(
            f"betas must be three positive numbers summing to 1 (Theorems 4 and 8); got {tuple(betas)!r} "
            f"(sum {b.sum():.6g})."
        )
    return b


def schedule_values(
    eps,
    *,
    lipschitz,
    suff_stat_bound,
    mixing_constant,
    mixing_rate,
    distance_bound,
    ridge=0.0,
    delta=0.1,
    betas=None,
    m_formula="as_written",
):
    """Unrounded ``(K, M, v)`` of :func:`fast_mixing_schedule` (same parameters)."""
    L, R2, C, a_mix, D = lipschitz, suff_stat_bound, mixing_constant, mixing_rate, distance_bound
    for name, val in [("eps", eps), ("lipschitz", L), ("suff_stat_bound", R2), ("mixing_constant", C)]:
        if not val > 0:
            raise ValueError(f"{name} must be positive; got {val!r}.")
    if not 0 < a_mix < 1:
        raise ValueError(f"mixing_rate must be in (0, 1) (Eq. 2); got {a_mix!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1); got {delta!r}.")
    if not D >= 0:
        raise ValueError(f"distance_bound must be non-negative; got {D!r}.")
    if m_formula not in ("as_written", "paper_example"):
        raise ValueError(f"m_formula must be 'as_written' or 'paper_example'; got {m_formula!r}.")
    if ridge > 0:
        b1, b2, b3 = _check_betas(DEFAULT_BETAS_STRONGLY_CONVEX if betas is None else betas)
        # Corollary 9 (ERRATA.md): gamma = 1 - lambda/L, -log(gamma) >= lambda/L.
        K = L / ridge * math.log(max(D / (b1 * eps), 1.0))
        K = max(K, 1.0)
        r2 = R2**2 if m_formula == "as_written" else R2
        M = L**2 * r2 / (2 * ridge**2 * b2**2 * eps**2) * (1 + math.sqrt(2 * math.log(math.ceil(K) / delta))) ** 2
        v = math.log(max(2 * L * R2 * C / (b3 * eps * ridge), 1.0)) / (1 - a_mix)
    else:
        b1, b2, b3 = _check_betas(DEFAULT_BETAS_CONVEX if betas is None else betas)
        # Theorem 5 through Theorem 4: a = L D / (4 R2) + log(1/delta), b = 1,
        # c = C, eps = eps_f L / (8 R2^2); D >= 4 R2 log(1/delta) / L.
        D = max(D, 4 * R2 / L * math.log(1 / delta))
        a = L * D / (4 * R2) + math.log(1 / delta)
        e = eps * L / (8 * R2**2)
        K = max(a**2 / (b1**2 * e), 1.0)
        # Theorem 4's M, and Theorem 2's condition M >= 3K / log(1/delta).
        M = max((a / (b1 * b2 * e)) ** 2, 3 * math.ceil(K) / math.log(1 / delta))
        v = math.log(max(a * C / (b1 * b3 * e), 1.0)) / (-math.log(a_mix))
    return K, M, v


def fast_mixing_schedule(
    eps,
    *,
    lipschitz,
    suff_stat_bound,
    mixing_constant,
    mixing_rate,
    distance_bound,
    ridge=0.0,
    delta=0.1,
    betas=None,
    n_variables=None,
    m_formula="as_written",
):
    """The K/M/v schedule of Domke (2015) that guarantees ``eps`` accuracy w.p. ``1 - delta``.

    With ``ridge > 0`` (strongly convex case) this is Corollary 9: after ``K``
    steps, ``||theta_K - theta*||_2 <= eps``. With ``ridge = 0`` it is
    Theorem 5 (through Theorem 4): the average of the iterates is within
    ``eps`` of the optimum in the objective ``f``.

    Parameters
    ----------
    eps : float
        ``eps_theta`` (ridge > 0) or ``eps_f`` (ridge = 0).
    lipschitz : float
        ``L``, Lipschitz constant of the gradient of ``f`` (Theorem 1 gives
        ``4 R2^2 + lambda``); the step size is ``1 / L``.
    suff_stat_bound : float
        ``R2`` with ``||t(x)||_2 <= R2`` for every ``x``.
    mixing_constant, mixing_rate : float
        ``C`` and ``alpha`` of Eq. 2: ``||M^v q - p||_TV <= C alpha^v``
        (see :func:`dobrushin_mixing_constants`).
    distance_bound : float
        ``D >= ||theta_0 - theta*||_2``.
    ridge : float, default=0.0
        ``lambda``, the ridge penalty on the mean negative log-likelihood.
    delta : float, default=0.1
        Allowed probability of failure.
    betas : tuple of 3 floats, optional
        The split ``(beta1, beta2, beta3)`` of the error budget between
        optimisation, sampling noise and mixing bias (positive, summing to 1).
        Defaults: ``(0.66, 0.33, 0.01)`` (convex, Theorem 4's example) and
        ``((1 - 1/sqrt 2)/2, 1/sqrt 2, (1 - 1/sqrt 2)/2)`` (strongly convex,
        Theorem 8's example).
    n_variables : int, optional
        If given, ``n_sweeps = ceil(v / n_variables)``: ``v`` counts
        single-site transitions, a sweep updates every variable once.
        If None, ``n_sweeps`` is ``v`` itself.
    m_formula : {"as_written", "paper_example"}, default="as_written"
        ``"as_written"`` uses Corollary 9's ``R2^2`` in ``M``;
        ``"paper_example"`` uses ``R2`` (unsquared), which is what
        reproduces the paper's Section 6 figure ``M = 1533``. Only the
        strongly convex case is affected.

    Returns
    -------
    FastMixingSchedule
        ``(n_iter, n_samples, n_sweeps)``: ``ceil`` of ``K``, ``M`` and ``v``
        (or of ``v / n_variables``).

    Notes
    -----
    Corollary 9 (de-garbled, see ``ERRATA.md``):

    .. math::

        K &\\geq \\frac{L}{\\lambda}\\log\\frac{D}{\\beta_1\\epsilon_\\theta},\\qquad
        M \\geq \\frac{L^2 R_2^2}{2\\lambda^2\\beta_2^2\\epsilon_\\theta^2}
            \\Bigl(1 + \\sqrt{2\\log(K/\\delta)}\\Bigr)^2,\\\\
        v &\\geq \\frac{1}{1-\\alpha}\\log\\frac{2 L R_2 C}{\\beta_3\\epsilon_\\theta\\lambda}.

    Theorem 5 sets Theorem 4's ``K = a^2/(beta1^2 e)``,
    ``M = (a b / (beta1 beta2 e))^2``, ``v = log(a c / (beta1 beta3 e)) / (-log alpha)``
    with ``a = L D / (4 R2) + log(1/delta)``, ``b = 1``, ``c = C`` and
    ``e = eps_f L / (8 R2^2)``; ``M`` is also at least ``3 K / log(1/delta)``
    (Theorem 2) and ``D`` at least ``4 R2 log(1/delta) / L``.

    References
    ----------
    J. Domke, "Maximum likelihood learning with arbitrary treewidth via
    fast-mixing parameter sets", NIPS 2015.

    Examples
    --------
    The paper's Section 6 (with ``beta3 = 0.09`` so that the betas sum to 1):

    >>> import math
    >>> from skmrf import fast_mixing_schedule
    >>> args = dict(lipschitz=10, suff_stat_bound=math.sqrt(24), ridge=1.0, delta=0.1,
    ...             mixing_constant=math.log(16),
    ...             mixing_rate=math.exp(-(1 - 4 * math.tanh(0.2)) / 16),
    ...             distance_bound=math.sqrt(24 * 0.4**2), betas=(0.01, 0.9, 0.09))
    >>> fast_mixing_schedule(2.0, m_formula="paper_example", **args)
    FastMixingSchedule(n_iter=46, n_samples=1533, n_sweeps=561)
    >>> fast_mixing_schedule(2.0, **args).n_samples
    7506
    """
    K, M, v = schedule_values(
        eps,
        lipschitz=lipschitz,
        suff_stat_bound=suff_stat_bound,
        mixing_constant=mixing_constant,
        mixing_rate=mixing_rate,
        distance_bound=distance_bound,
        ridge=ridge,
        delta=delta,
        betas=betas,
        m_formula=m_formula,
    )
    if n_variables is not None:
        v = v / n_variables
    return FastMixingSchedule(int(math.ceil(K)), int(math.ceil(M)), max(1, int(math.ceil(v))))


def dobrushin_mixing_constants(n_variables, max_degree, max_coupling):
    """``(C, alpha)`` of Eq. 2 for Gibbs sampling on the box set ``|J_ij| <= beta``.

    Section 3.1: with maximum degree ``Delta`` and ``Delta tanh(beta) < 1``,
    ``tau(eps) <= N log(N / eps) / (1 - Delta tanh beta)``; writing this as
    ``a + b log(1/eps)`` gives ``C = exp(a / b) = N`` and
    ``alpha = exp(-1 / b) = exp(-(1 - Delta tanh beta) / N)``.

    Parameters
    ----------
    n_variables : int
    max_degree : int
    max_coupling : float
        ``beta``, the bound on the ``{-1, +1}`` couplings.

    Returns
    -------
    C : float
    alpha : float

    Notes
    -----
    The paper's Section 6 writes ``C = log(16)`` for ``N = 16``; the
    derivation above gives ``C = 16``. Pass ``mixing_constant=math.log(16)``
    to :func:`fast_mixing_schedule` to reproduce the paper's ``v = 561``
    (``C = 16`` gives ``v = 694``).
    """
    rho = max_degree * math.tanh(max_coupling)
    if rho >= 1:
        raise ValueError(
            f"The box set |J_ij| <= {max_coupling:g} is not fast-mixing for a graph of maximum degree "
            f"{max_degree}: Delta tanh(beta) = {rho:.4g} >= 1 (Section 3.1). Use max_coupling < "
            f"artanh(1/{max_degree}) = {math.atanh(1 / max_degree) if max_degree > 1 else math.inf:.4g}."
        )
    return float(n_variables), math.exp(-(1 - rho) / n_variables)


def spectral_mixing_constants(n_variables, max_norm):
    """``(C, alpha)`` of Eq. 2 on the spectral set ``||R(J)||_2 <= c`` (Eq. 4), ``c < 1``."""
    if max_norm >= 1:
        raise ValueError(
            f"The spectral set ||R(theta)||_2 <= {max_norm:g} is not fast-mixing (Eq. 4 needs a norm "
            "below 1); use max_coupling < 1."
        )
    return float(n_variables), math.exp(-(1 - max_norm) / n_variables)


# ---------------------------------------------------------------------------
# Projections onto the fast-mixing sets
# ---------------------------------------------------------------------------
def project_box(J, max_coupling):
    """Euclidean projection onto ``{J : |J_ij| <= beta}``: clipping (Section 3.1)."""
    return np.clip(J, -max_coupling, max_coupling)


# ---------------------------------------------------------------------------
# The set and the distance bound of a fit
# ---------------------------------------------------------------------------
class FastMixingSet(NamedTuple):
    """A fast-mixing set: its size, the constants ``(C, alpha)`` of Eq. 2 and its projection."""

    bound: float
    mixing_constant: float
    mixing_rate: float
    project: object


def fast_mixing_set(projection, max_coupling, n_variables, edges, max_degree):
    """The box or spectral set of a pairwise graph, with its mixing constants and projection.

    Parameters
    ----------
    projection : {"box", "spectral"}
        ``|J_ij| <= beta`` (Dobrushin) or ``||R(J)||_2 <= c`` (Eq. 4).
    max_coupling : float or None
        ``beta`` or ``c``; None takes ``artanh(DEFAULT_MIXING_MARGIN / max_degree)`` (box) or
        ``DEFAULT_MIXING_MARGIN`` (spectral).
    n_variables : int
    edges : ndarray of shape (n_edges, 2)
    max_degree : int

    Returns
    -------
    FastMixingSet
        ``project`` maps couplings ``J`` of shape (n_edges,) into the set.
    """
    n = n_variables
    if projection == "box":
        if max_coupling is None:
            beta = math.atanh(DEFAULT_MIXING_MARGIN / max_degree) if max_degree > 0 else 1.0
        else:
            beta = float(max_coupling)
        if max_degree > 0:
            C, a_mix = dobrushin_mixing_constants(n, max_degree, beta)
        else:
            C, a_mix = float(n), math.exp(-1 / n)
        return FastMixingSet(beta, C, a_mix, partial(project_box, max_coupling=beta))
    c = DEFAULT_MIXING_MARGIN if max_coupling is None else float(max_coupling)
    C, a_mix = spectral_mixing_constants(n, c)
    return FastMixingSet(c, C, a_mix, partial(project_spectral, edges=edges, n_variables=n, max_norm=c))


def distance_bound(projection, bound, mean_x, n_edges, max_degree, ridge):
    """``D >= ||phi_0 - phi*||_2`` with ``phi_0 = 0`` for the schedule.

    ``2 beta`` per edge (the paper's diameter convention), ``artanh(|mean x_i|) + max_degree
    beta`` per field and, with ``ridge > 0``, at most ``sqrt(2 n log 2 / ridge)`` overall; on
    the spectral set the couplings contribute ``sqrt(2 n) c`` and a field's neighbours
    ``sqrt(max_degree) c``. Infinite when a column is constant and ``ridge = 0``.

    Parameters
    ----------
    projection : {"box", "spectral"}
    bound : float
        ``beta`` or ``c`` (:attr:`FastMixingSet.bound`).
    mean_x : ndarray of shape (n_variables,)
        Data means of the ``{-1, +1}`` variables.
    n_edges, max_degree : int
    ridge : float

    Returns
    -------
    float
    """
    n = len(mean_x)
    if projection == "box":
        # Paper's convention: the diameter 2 beta per edge; a field's
        # neighbours move its conditional mean by at most max_degree * beta.
        coupling_sq, neighbour = n_edges * (2 * bound) ** 2, max_degree * bound
    else:
        # ||J||_F^2 <= ||R||_F^2 / 2 <= n c^2 / 2 (diameter: twice that norm);
        # a row of R has l1 norm <= sqrt(max_degree) c.
        coupling_sq, neighbour = 2 * n * bound**2, math.sqrt(max_degree) * bound
    with np.errstate(divide="ignore"):
        field = np.arctanh(np.abs(mean_x)) + neighbour
    D = math.sqrt(coupling_sq + float(np.sum(field**2)))
    if ridge > 0:
        D = min(D, math.sqrt(2 * n * math.log(2) / ridge))
    return D
