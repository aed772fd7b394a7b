"""The modified coin-tossing likelihood of Liu and Zheng (MLE-induced likelihood paper, Eq. 3).

Kernels on plain arrays, vectorised over edges and over any leading axes of the queries:

- :func:`marginal_log_likelihood_kernel`: ``log L(theta)`` of Eq. 3;
- the CDF ``F`` of ``L`` normalised over ``(0, 1)``, which the Gaussian copula needs (Eq. 8):
  computed accurately by Gauss-Legendre quadrature on tabulated panels
  (:func:`quadrature_tables`, :func:`log_tail`), and turned at fit into a piecewise polynomial
  of the normal score ``u = Phi^{-1}(F)`` (:func:`score_tables`) that :func:`normal_scores`
  evaluates per query with a few dozen array operations.

Everything is computed in ``z = logit(theta)``. There ``L(theta) dtheta`` has the density
``exp(l(z))`` (up to a constant) with

    l(z) = (a + 1) z - n softplus(z + c) - 2 softplus(z),    c = logit(eta0),

because ``lambda = expit(z + c)`` (Eq. 1) and ``dtheta = theta (1 - theta) dz``. It is
log-concave, with a unique mode ``z*``, and analytic in the strip ``|Im z| < pi`` whatever
``eta0``. Positions are measured by the signed root ``y = sign(z - z*) sqrt(2 (l(z*) - l(z)))``
(``y = (z - z*) / sigma`` for a Gaussian; ``-y**2 / 2`` nats below the peak in general).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.polynomial.legendre import leggauss
from scipy.special import expit, gammaln, logit, ndtri_exp

from .._utils._budgets import EDGE_BLOCK as _EDGE_BLOCK

__all__ = [
    "ScoreTables",
    "log_tail",
    "marginal_log_likelihood_kernel",
    "normal_scores",
    "quadrature_tables",
    "score_tables",
]

#: Half-width of the tabulated range in ``y``: the density is 800 nats below its peak at the
#: ends, so ``F`` (or ``1 - F``) beyond them is below ``exp(-790)``, far under ``Phi(-U_CLIP)``.
Y_MAX = 40.0
#: Quadrature panels, uniform in ``y``: across one the log-density changes by at most
#: ``Y_MAX * Y_STEP + Y_STEP**2 / 2 = 2`` nats, so 8-point Gauss-Legendre is exact to rounding
#: there (its relative error for ``exp`` of a linear function changing by 2 nats is ~2e-18).
Y_STEP = 0.05
N_PANELS = int(round(2 * Y_MAX / Y_STEP))
GAUSS_NODES = 8
_RULE = leggauss(GAUSS_NODES)
#: The interpolant of ``u``: a polynomial of degree ``DEGREE`` per ``y``-interval of width
#: ``Y_STEP * STRIDE``, interpolating at its Chebyshev points. Over such an interval ``u``
#: changes by about ``0.25`` and is smooth; degree 6 reproduces the quadrature's ``u`` to
#: about 5e-12 (the quadrature's own accuracy) on every case tried (``tests/test_mle_induced.py``).
STRIDE, DEGREE = 5, 6
N_PIECES = N_PANELS // STRIDE
_CHEBYSHEV = np.cos(np.pi * (np.arange(DEGREE + 1) + 0.5) / (DEGREE + 1))
#: Normal scores are clipped to ``[-U_CLIP, U_CLIP]``: ``Phi(-37.5) = 4.6e-308`` is about the
#: smallest normal double, so a CDF (or survival function) below it is zero in double precision.
U_CLIP = 37.5
#: ``exp`` overflows above about 709: the tabulated range must stay below this in ``z`` and
#: ``z + c``, so that ``log1p(exp(.))`` (8x faster than ``np.logaddexp``) is exact per query.
Z_LIMIT = 700.0


def marginal_log_likelihood_kernel(theta, n_agree, n_samples, eta0):
    """Log of the modified coin-tossing likelihood of ``theta`` (Eq. 3), elementwise.

    Parameters
    ----------
    theta : array-like of float
        Agreement parameters in ``(0, 1)`` (not checked).
    n_agree : array-like of int
        ``alpha_0``, broadcastable with ``theta``.
    n_samples : int
        ``n``.
    eta0 : array-like of float
        The external effect, broadcastable with ``theta``.

    Returns
    -------
    ndarray of float
        ``log binom(n, alpha_0) + alpha_0 log(eta0 theta) + (n - alpha_0) log((1 - eta0)(1 - theta))
        - n log(eta0 theta + (1 - eta0)(1 - theta))``. Every logarithm is of a product or sum
        of positive terms (``1 - theta`` is exact for ``theta >= 1/2``), so each carries an
        absolute error of a few units in the last place whatever ``theta``.
    """
    theta = np.asarray(theta, dtype=np.float64)
    a = np.asarray(n_agree, dtype=np.float64)
    b = n_samples - a
    eta = np.asarray(eta0, dtype=np.float64)
    rest = 1.0 - theta
    log_binom = gammaln(n_samples + 1.0) - gammaln(a + 1.0) - gammaln(b + 1.0)
    return (
        log_binom
        + a * (np.log(eta) + np.log(theta))
        + b * (np.log1p(-eta) + np.log(rest))
        - n_samples * np.log(eta * theta + (1.0 - eta) * rest)
    )


# -- the accurate CDF (fit time) ---------------------------------------------------------------


def _softplus(x):
    """``log(1 + exp(x))`` for any ``x``."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _log_density(z, a, n, c):
    """``l(z)`` up to its constant: ``(a + 1) z - n softplus(z + c) - 2 softplus(z)``."""
    return (a + 1.0) * z - n * _softplus(z + c) - 2.0 * _softplus(z)


def _mode(a, n, c, max_iter=100):
    """The mode of ``l`` and ``sigma = (-l''(z*))^(-1/2)``, per edge.

    ``l'(z) = a + 1 - n expit(z + c) - 2 expit(z)`` decreases from ``a + 1`` to ``a - n - 1``,
    so the root is unique; Newton's method with steps capped at 1.
    """
    z = logit(a / n) - c  # where lambda = alpha_0 / n: within O(1/n) of the mode
    for _ in range(max_iter):
        s, t = expit(z + c), expit(z)
        step = np.clip((a + 1.0 - n * s - 2.0 * t) / (n * s * (1.0 - s) + 2.0 * t * (1.0 - t)), -1.0, 1.0)
        z = z + step
        if np.all(np.abs(step) <= 1e-14 * (1.0 + np.abs(z))):
            break
    s, t = expit(z + c), expit(z)
    return z, 1.0 / np.sqrt(n * s * (1.0 - s) + 2.0 * t * (1.0 - t))


def _breakpoints(a, n, c, z_mode, l_mode, sigma, max_iter=100):
    """``z`` where ``l(z) = l(z*) - y**2 / 2`` on the grid of ``y``: shape (p, N_PANELS + 1).

    Newton's method from the Gaussian guess ``z* + y sigma``: ``l`` is concave, so after the
    first step every iterate lies beyond the root and converges to it monotonically. The
    breakpoints need not be exact (the tables are built on whatever they are), only increasing.
    """
    ys = np.linspace(-Y_MAX, Y_MAX, N_PANELS + 1)
    target = l_mode[:, None] - 0.5 * ys**2
    a, c = a[:, None], c[:, None]
    z = z_mode[:, None] + ys * sigma[:, None]
    mid = N_PANELS // 2
    for _ in range(max_iter):
        gap = _log_density(z, a, n, c) - target
        slope = a + 1.0 - n * expit(z + c) - 2.0 * expit(z)
        gap[:, mid], slope[:, mid] = 0.0, 1.0  # the mode itself, where l' = 0
        step = gap / slope
        z = z - step
        if np.all(np.abs(step) <= 1e-9 * sigma[:, None]):
            break
    z[:, mid] = z_mode
    if np.any(np.diff(z, axis=1) <= 0) or not np.all(np.isfinite(z)):
        raise RuntimeError("The CDF panels of the MLE-induced marginal likelihoods are not increasing.")
    return z, ys


class QuadratureTables(NamedTuple):
    """``F`` of each edge on panels, for :func:`log_tail` (arrays over edges, or gathered).

    ``l(z) + off`` is 0 at the mode; ``cum`` and ``edge`` are flat, row ``base[j]`` for edge ``j``.
    """

    a1: np.ndarray  # alpha_0 + 1
    n: float
    ec: np.ndarray  # exp(c) = eta0 / (1 - eta0)
    off: np.ndarray  # -l(z*)
    z_mode: np.ndarray
    log_norm: np.ndarray  # log of the integral of exp(l + off)
    base: np.ndarray  # j * N_PANELS
    edge: np.ndarray  # (p * N_PANELS,): the end of the panel each query integrates from
    cum: np.ndarray  # (p * N_PANELS,): log of the normalised mass beyond that end, on the query's side
    breakpoints: np.ndarray  # (p, N_PANELS + 1)

    def take(self, j):
        """The tables of edges ``j`` (an integer array shaped like the queries)."""
        return self._replace(
            a1=self.a1[j], ec=self.ec[j], off=self.off[j], z_mode=self.z_mode[j], log_norm=self.log_norm[j],
            base=self.base[j],
        )  # fmt: skip


def quadrature_tables(n_agree, n_samples, eta0):
    """Tabulate ``F`` for every edge: panel masses by Gauss-Legendre, accumulated from both ends.

    The masses are kept as logarithms and accumulated from the left (for ``F``) and from the
    right (for ``1 - F``), so both tails keep their relative precision down to ``exp(-800)``.

    Parameters
    ----------
    n_agree : ndarray of shape (p,)
        ``alpha_0`` per edge.
    n_samples : int
        ``n``.
    eta0 : ndarray of shape (p,)
        The external effect per edge.

    Returns
    -------
    QuadratureTables
    """
    a = np.asarray(n_agree, dtype=np.float64)
    n = float(n_samples)
    c = logit(np.asarray(eta0, dtype=np.float64))
    z_mode, sigma = _mode(a, n, c)
    l_mode = _log_density(z_mode, a, n, c)
    zb, ys = _breakpoints(a, n, c, z_mode, l_mode, sigma)
    if np.max(zb[:, -1]) > Z_LIMIT or np.max(zb[:, -1] + c) > Z_LIMIT:
        raise ValueError(
            "A marginal likelihood is too wide to tabulate in double precision (its upper tail "
            f"reaches logit(theta) > {Z_LIMIT:g}); the estimates are too close to the boundary."
        )
    t, w = _RULE
    lo, hi = zb[:, :-1], zb[:, 1:]
    half = 0.5 * (hi - lo)
    nodes = (lo + half)[..., None] + half[..., None] * t
    ref = np.maximum(-0.5 * ys[:-1] ** 2, -0.5 * ys[1:] ** 2)  # l - l(z*) at the larger panel end
    dens = np.exp(_log_density(nodes, a[:, None, None], n, c[:, None, None]) - l_mode[:, None, None] - ref[:, None])
    log_mass = ref + np.log(half * (dens @ w))
    none = np.full((len(a), 1), -np.inf)
    below = np.concatenate([none, np.logaddexp.accumulate(log_mass, axis=1)], axis=1)
    above = np.concatenate([np.logaddexp.accumulate(log_mass[:, ::-1], axis=1)[:, ::-1], none], axis=1)
    log_norm = below[:, -1]
    # A query in the lower half integrates up from its panel's left end and adds the mass below
    # it (log F); in the upper half, down from the right end, adding the mass above (log(1 - F)).
    lower = np.arange(N_PANELS) < N_PANELS // 2
    edge = np.where(lower, lo, hi)
    cum = np.where(lower, below[:, :-1], above[:, 1:]) - log_norm[:, None]
    return QuadratureTables(
        a1=a + 1.0,
        n=n,
        ec=np.exp(c),
        off=-l_mode,
        z_mode=z_mode,
        log_norm=log_norm,
        base=np.arange(len(a), dtype=np.intp) * N_PANELS,
        edge=edge.ravel(),
        cum=cum.ravel(),
        breakpoints=zb,
    )


def _query_log_density(z, tab):
    """``l(z) + off`` (0 at the mode) for ``z`` below ``Z_LIMIT``, where ``log1p(exp(.))`` is exact."""
    E = np.exp(z)
    return tab.a1 * z - tab.n * np.log1p(E * tab.ec) - 2.0 * np.log1p(E) + tab.off


def log_tail(z, tab):
    """``log F(z)`` below the mode and ``log(1 - F(z))`` above it, by quadrature.

    The mass beyond the query's panel comes from the tables; the partial panel from its end
    to ``z`` from Gauss-Legendre on ``exp(l - l(z))`` (at most ``e**2`` there). The integral
    is signed, so a query that rounding near the mode put one panel off still gets the right
    total.

    Parameters
    ----------
    z : ndarray
        ``logit(theta)``, broadcastable with the arrays of ``tab``.
    tab : QuadratureTables

    Returns
    -------
    log_tail : ndarray
        ``log F`` where ``lower``, else ``log(1 - F)``; ``-inf`` beyond the tabulated range.
    lower : ndarray of bool
        Whether ``z`` is in the lower half of the table (below the mode, up to rounding).
    """
    j_rows = tab.base // N_PANELS
    z = np.clip(z, tab.breakpoints[j_rows, 0], tab.breakpoints[j_rows, -1])
    l_z = _query_log_density(z, tab)
    y = np.copysign(np.sqrt(np.maximum(-2.0 * l_z, 0.0)), z - tab.z_mode)
    k = np.clip(((y + Y_MAX) / Y_STEP).astype(np.intp), 0, N_PANELS - 1)
    lower = k < N_PANELS // 2
    end, cum = tab.edge[k + tab.base], tab.cum[k + tab.base]
    t, w = _RULE
    half = 0.5 * (z - end)
    nodes = t.reshape((-1,) + (1,) * half.ndim) * half + (end + half)  # nodes first: contiguous last axis
    E = np.exp(nodes)
    ln = tab.a1 * nodes - tab.n * np.log1p(E * tab.ec) - 2.0 * np.log1p(E) + (tab.off - l_z)
    part = half * (w @ np.exp(ln).reshape(len(w), -1)).reshape(half.shape)
    part = np.where(lower, part, -part)
    r = l_z - tab.log_norm
    with np.errstate(divide="ignore"):
        return r + np.log(np.maximum(np.exp(cum - r) + part, 0.0)), lower


# -- the normal scores (per query) -----------------------------------------------------------


class ScoreTables(NamedTuple):
    """Piecewise-polynomial normal scores ``u(z)`` of each edge (arrays over edges, or gathered).

    Piece ``k`` of edge ``j`` (flat row ``base[j] + k``) covers ``y`` in
    ``[-Y_MAX + k h, -Y_MAX + (k + 1) h]``, ``h = Y_STEP * STRIDE``: there
    ``u = sum_i coef[i] s**i`` with ``s = (z - center) * inv_half`` in ``[-1, 1]``.
    """

    a1: np.ndarray  # alpha_0 + 1
    n: float
    ec: np.ndarray  # eta0 / (1 - eta0)
    off: np.ndarray  # -l(z*): l(z) + off is 0 at the mode
    z_mode: np.ndarray
    base: np.ndarray  # j * N_PIECES
    center: np.ndarray  # (p * N_PIECES,)
    inv_half: np.ndarray  # (p * N_PIECES,)
    coef: np.ndarray  # (DEGREE + 1, p * N_PIECES)

    def take(self, j):
        """The tables of edges ``j`` (an integer array shaped like the queries)."""
        return self._replace(a1=self.a1[j], ec=self.ec[j], off=self.off[j], z_mode=self.z_mode[j], base=self.base[j])


def _exact_scores(z, tab):
    """``Phi^{-1}(F(z))`` by quadrature (unclipped; ``-inf``/``inf`` beyond the table)."""
    lt, lower = log_tail(z, tab)
    u = ndtri_exp(lt)
    return np.where(lower, u, -u)


def score_tables(n_agree, n_samples, eta0):
    """Build the piecewise-polynomial normal scores of every edge.

    For each piece (every ``STRIDE`` quadrature panels) ``u`` is computed by quadrature at
    the ``DEGREE + 1`` Chebyshev points of its ``z``-interval and interpolated. Built in
    blocks of edges, so the temporaries stay bounded.

    Parameters
    ----------
    n_agree, n_samples, eta0
        As in :func:`quadrature_tables`.

    Returns
    -------
    ScoreTables
    """
    a = np.asarray(n_agree, dtype=np.float64)
    eta0 = np.asarray(eta0, dtype=np.float64)
    p = len(a)
    vander = np.vander(_CHEBYSHEV, DEGREE + 1, increasing=True)
    center = np.empty((p, N_PIECES))
    inv_half = np.empty((p, N_PIECES))
    coef = np.empty((DEGREE + 1, p, N_PIECES))
    z_mode, off = np.empty(p), np.empty(p)
    for start in range(0, p, _EDGE_BLOCK):
        block = slice(start, min(start + _EDGE_BLOCK, p))
        quad = quadrature_tables(a[block], n_samples, eta0[block])
        zb = quad.breakpoints[:, ::STRIDE]
        mid, half = 0.5 * (zb[:, 1:] + zb[:, :-1]), 0.5 * (zb[:, 1:] - zb[:, :-1])
        z = mid[..., None] + half[..., None] * _CHEBYSHEV  # (edges, N_PIECES, DEGREE + 1)
        rows = np.arange(block.stop - block.start)[:, None, None]
        u = _exact_scores(z, quad.take(np.broadcast_to(rows, z.shape)))
        coef[:, block] = np.linalg.solve(vander, u.reshape(-1, DEGREE + 1).T).reshape(DEGREE + 1, -1, N_PIECES)
        center[block], inv_half[block] = mid, 1.0 / half
        z_mode[block], off[block] = quad.z_mode, quad.off
    return ScoreTables(
        a1=a + 1.0,
        n=float(n_samples),
        ec=eta0 / (1.0 - eta0),
        off=off,
        z_mode=z_mode,
        base=np.arange(p, dtype=np.intp) * N_PIECES,
        center=center.ravel(),
        inv_half=inv_half.ravel(),
        coef=coef.reshape(DEGREE + 1, -1),
    )


def normal_scores(z, tab, l_z=None, clip=True):
    """``u = Phi^{-1}(F(z))`` from the piecewise polynomials.

    Parameters
    ----------
    z : ndarray
        ``logit(theta)``, broadcastable with the arrays of ``tab`` (at most ``Z_LIMIT``).
    tab : ScoreTables
    l_z : ndarray, optional
        ``l(z) + off`` when the caller has it (it picks the piece).
    clip : bool, default=True
        Clip to ``[-U_CLIP, U_CLIP]``; else ``-inf``/``inf`` beyond the table.

    Returns
    -------
    ndarray
        The scores, shaped like ``z`` (broadcast).
    """
    if l_z is None:
        l_z = _query_log_density(z, tab)
    # The piece, from y = sign(z - z*) sqrt(-2 l): near the mode rounding may put z one piece
    # off, at most ~1e-6 of its width beyond the end, where the polynomial is still accurate.
    y = np.sqrt(np.maximum(l_z * -2.0, 0.0))
    np.copysign(y, z - tab.z_mode, out=y)
    y += Y_MAX
    y *= 1.0 / (Y_STEP * STRIDE)
    k = y.astype(np.intp)
    beyond = k.view(np.uintp) >= N_PIECES  # negative k wraps around
    any_beyond = beyond.any()
    if any_beyond:
        below = k < 0
        np.clip(k, 0, N_PIECES - 1, out=k)
    k += tab.base
    s = z - tab.center[k]
    s *= tab.inv_half[k]
    if any_beyond:
        s[beyond] = 0.0
    coef = tab.coef[:, k]
    u = coef[DEGREE] * s
    for i in range(DEGREE - 1, 0, -1):
        u += coef[i]
        u *= s
    u += coef[0]
    if any_beyond:
        u[beyond] = np.where(below[beyond], -np.inf, np.inf)
    if clip:
        np.maximum(u, -U_CLIP, out=u)
        np.minimum(u, U_CLIP, out=u)
    return u
