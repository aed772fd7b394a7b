"""Synthetic models and data for tests, examples and benchmarks."""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from ._utils.validation import check_generator
from .graphs import torus_graph
from .model import DiscreteMRF

__all__ = [
    "RandomMRFSample",
    "make_random_mrf",
    "sample_random_mrf",
    "make_ising_torus",
    "ising_torus_log_partition",
]


class RandomMRFSample(NamedTuple):
    """What :func:`sample_random_mrf` returns: the data and the model that drew it.

    It unpacks as ``X, model = sample_random_mrf(...)``; ``sample_random_mrf(...).X``
    is the data. Passing the pair itself to an estimator's ``fit`` raises a
    ``TypeError`` that says so.
    """

    X: np.ndarray
    """ndarray of shape (n_samples, n_variables): integer states, one row per sample."""
    model: DiscreteMRF
    """The model with random parameters that the rows were drawn from."""


def make_random_mrf(graph, n_states=2, scale=1.0, n_variables=None, random_state=None) -> DiscreteMRF:
    """A model with parameters drawn uniformly from ``[-scale, scale]``.

    Parameters
    ----------
    graph : any graph form accepted by :class:`~skmrf.model.DiscreteMRF`
    n_states : int or array-like of int, default=2
    scale : float, default=1.0
        The LAP paper's experiments use ``scale=1``.
    n_variables : int, optional
        Needed when ``graph`` is a list of cliques and ``n_states`` an int.
    random_state : int, RandomState, Generator or None

    Returns
    -------
    DiscreteMRF
    """
    model = DiscreteMRF(graph, n_states, n_variables=n_variables)
    model.theta = check_generator(random_state).uniform(-scale, scale, model.n_params)
    return model


def sample_random_mrf(graph, n_samples, n_states=2, scale=1.0, n_variables=None, method="exact", random_state=None):
    """Draw a random model (see :func:`make_random_mrf`) and ``n_samples`` rows from it.

    Returns
    -------
    RandomMRFSample
        A named tuple ``(X, model)``: ``X``, an int64 ndarray of shape
        ``(n_samples, n_variables)``, and ``model``, the :class:`DiscreteMRF`
        it was drawn from. Unpack it (``X, model = sample_random_mrf(...)``)
        or take ``.X``; the pair itself is not data.
    """
    rng = check_generator(random_state)
    model = make_random_mrf(graph, n_states, scale, n_variables, rng)
    return RandomMRFSample(model.sample(n_samples, rng, method=method), model)


def _check_torus_size(value, name: str) -> int:
    """``value`` as an int, after checking that it is an integer of at least 3."""
    if not isinstance(value, (numbers.Integral, np.integer)) or isinstance(value, (bool, np.bool_)) or value < 3:
        raise ValueError(
            f"{name} must be an integer of at least 3 (the side of the torus); got {value!r}. With 2 the "
            "wrap-around edge repeats an edge of the grid, which a simple graph cannot hold."
        )
    return int(value)


def _check_coupling(K) -> float:
    """``K`` as a float, after checking that it is a finite real number of at least 0."""
    if not isinstance(K, (numbers.Real, np.floating, np.integer)) or isinstance(K, (bool, np.bool_)):
        raise ValueError(f"K must be a finite real number >= 0 (the ferromagnetic coupling); got {K!r}.")
    K = float(K)
    if not (np.isfinite(K) and K >= 0):
        raise ValueError(f"K must be a finite real number >= 0 (the ferromagnetic coupling); got {K!r}.")
    return K


def make_ising_torus(L, K, *, cols=None) -> DiscreteMRF:
    """The ferromagnetic Ising model without field on the periodic ``L x cols`` lattice.

    In spins ``s = 2 x - 1`` it is ``p(s) ~ exp(K sum_(ij) s_i s_j)`` over the edges of
    :func:`~skmrf.graphs.torus_graph`; in the package's parametrisation (normalised with
    respect to zero, ``x in {0, 1}``) every edge has ``theta_ij = 4 K`` and every node, having
    four neighbours, ``theta_i = -8 K``.

    Parameters
    ----------
    L : int
        Number of rows of the torus, at least 3.
    K : float
        The coupling, finite and at least 0 (``log(1 + sqrt(2)) / 2 = 0.4407`` is the critical
        point of the infinite lattice).
    cols : int, optional
        Number of columns, at least 3; ``L`` if omitted.

    Returns
    -------
    DiscreteMRF
        The binary model on ``torus_graph(L, cols)`` (nodes row-major).

    Raises
    ------
    ValueError
        If ``L`` or ``cols`` is not an integer of at least 3, or ``K`` is not a finite real
        number of at least 0.

    See Also
    --------
    ising_torus_log_partition : Its exact ``log Z``, for any size.
    skmrf.model.ising_to_binary : The change of coordinates for any fields and couplings.

    Examples
    --------
    >>> from skmrf.datasets import make_ising_torus
    >>> model = make_ising_torus(4, 0.25)
    >>> model.n_variables, model.potential((0, 1)).item(), model.potential((0,)).item()
    (16, 1.0, -2.0)
    """
    L = _check_torus_size(L, "L")
    cols = L if cols is None else _check_torus_size(cols, "cols")
    K = _check_coupling(K)
    model = DiscreteMRF(torus_graph(L, cols), 2)
    size = np.array([len(c) for c in model.cliques])  # binary: one parameter per block
    model.theta = np.where(size == 1, -8.0 * K, 4.0 * K)
    return model


def _log_2cosh(y):
    """``log(2 cosh y)`` without overflow."""
    y = np.abs(y)
    return y + np.log1p(np.exp(-2 * y))


def _log_2sinh(y):
    """``log(2 sinh y)`` for ``y > 0``, without overflow (``-inf`` at 0)."""
    with np.errstate(divide="ignore"):
        return y + np.log(-np.expm1(-2 * y))


def ising_torus_log_partition(L, K, *, cols=None) -> float:
    r"""Exact ``log Z`` of :func:`make_ising_torus` by Kaufman's formula.

    Kaufman (1949) gives the partition function of the Ising model on an ``m x n`` torus,
    ``Z_Ising = sum_s exp(K sum_(ij) s_i s_j)``, as four products over ``n`` angles. This
    function returns it in the package's parametrisation (the ``log Z`` that
    ``make_ising_torus(L, K, cols=cols).log_partition()`` computes where the junction tree
    fits): ``log Z = log Z_Ising - K |E|`` with ``|E| = 2 L cols`` edges.

    Parameters
    ----------
    L : int
        Number of rows of the torus, at least 3.
    K : float
        The coupling, finite and at least 0.
    cols : int, optional
        Number of columns, at least 3; ``L`` if omitted.

    Returns
    -------
    float
        ``log Z`` of the model ``p(x) ~ exp(4 K sum_(ij) x_i x_j - 8 K sum_i x_i)``,
        ``x in {0, 1}^(L cols)``.

    Raises
    ------
    ValueError
        If ``L`` or ``cols`` is not an integer of at least 3, or ``K`` is not a finite real
        number of at least 0.

    See Also
    --------
    make_ising_torus : The model.

    Notes
    -----
    With ``m = L`` rows and ``n = cols`` columns (the result is symmetric in them),

    .. math::

        Z_{Ising} = \tfrac12 (2 \sinh 2K)^{mn/2} \Big[
            \prod_{k\,odd} 2\cosh\tfrac{m\gamma_k}{2} + \prod_{k\,odd} 2\sinh\tfrac{m\gamma_k}{2}
          + \prod_{k\,even} 2\cosh\tfrac{m\gamma_k}{2} + \prod_{k\,even} 2\sinh\tfrac{m\gamma_k}{2}
        \Big],

    with ``k`` running over ``0..2n-1``, ``cosh gamma_k = cosh 2K coth 2K - cos(pi k / n)``
    (``gamma_k > 0``) for ``k >= 1`` and ``gamma_0 = 2K + log tanh K``, which is negative
    below the critical coupling ``K_c = log(1 + sqrt(2)) / 2`` and positive above it: the
    last product then changes sign. Everything is evaluated in log space:
    ``gamma_k = arccosh(1 + d_k)`` with ``d_k = 2 sinh^2(gamma_0 / 2) + 2 sin^2(pi k / 2n)``
    (no cancellation near ``gamma_0 = 0``; ``gamma_k = |gamma_0| + log1p(...)`` when
    ``|gamma_0| > 30``), ``log 2 cosh`` and ``log 2 sinh`` without overflow, and the four
    products combined by ``logaddexp``, so that ``L = 128`` and ``K = 2`` (``Z`` about
    ``e^{65000}``) are exact to rounding. ``K = 0`` is ``Z = 2^(mn)``. Cost ``O(cols)``.

    References
    ----------
    .. [1] B. Kaufman, "Crystal statistics. II. Partition function evaluated by spinor
       analysis", Phys. Rev. 76, 1232-1243 (1949), equation (41).
    .. [2] P. D. Beale, "Exact distribution of energies in the two-dimensional Ising model",
       Phys. Rev. Lett. 76, 78-81 (1996), equation (3).

    Examples
    --------
    >>> from skmrf.datasets import ising_torus_log_partition, make_ising_torus
    >>> model = make_ising_torus(4, 0.3)
    >>> bool(abs(ising_torus_log_partition(4, 0.3) - model.log_partition()) < 1e-12)
    True

    Per site at the critical point, the 128 x 128 torus is near Onsager's infinite lattice,
    ``log Z_Ising / N = log(2) / 2 + 2 G / pi`` (``G``, Catalan's constant):

    >>> import math
    >>> K_c = math.log1p(math.sqrt(2)) / 2
    >>> per_site = ising_torus_log_partition(128, K_c) / 128**2 + 2 * K_c
    >>> round(per_site, 4), round(math.log(2) / 2 + 2 * 0.915965594177219 / math.pi, 4)
    (0.9297, 0.9297)
    """
    m = _check_torus_size(L, "L")
    n = m if cols is None else _check_torus_size(cols, "cols")
    K = _check_coupling(K)
    n_edges = 2 * m * n
    if K == 0.0:
        return float(m * n * np.log(2.0))
    gamma_0 = 2 * K + np.log(np.tanh(K))
    a = 2 * np.sin(np.pi * np.arange(2 * n) / (2 * n)) ** 2  # cosh gamma_k - cosh gamma_0 = 1 - cos(pi k / n)
    if abs(gamma_0) > 30:  # cosh gamma_0 > 5e12: arccosh(x) = log(2 x) to within 1 / (4 x^2) < 1e-26
        gamma = abs(gamma_0) + np.log1p(np.exp(-2 * abs(gamma_0)) + 2 * a * np.exp(-abs(gamma_0)))
    else:
        d = 2 * np.sinh(gamma_0 / 2) ** 2 + a  # cosh gamma_k - 1
        gamma = np.log1p(d + np.sqrt(d * (d + 2)))
    half = m * gamma / 2
    odd, even = half[1::2], half[0::2]
    log_cosh_odd, log_sinh_odd = _log_2cosh(odd).sum(), _log_2sinh(odd).sum()
    log_cosh_even = _log_2cosh(even).sum()
    log_sinh_even = _log_2sinh(np.abs(even)).sum()  # |Z_4|; its sign is that of gamma_0
    positive = np.logaddexp.reduce([log_cosh_odd, log_sinh_odd, log_cosh_even])
    if gamma_0 > 0:
        log_sum = np.logaddexp(positive, log_sinh_even)
    else:  # 0 < |Z_4| < Z_3: the sum stays positive
        log_sum = positive + np.log1p(-np.exp(log_sinh_even - positive))
    log_z_ising = -np.log(2.0) + m * n / 2 * (np.log(2.0) + _log_sinh_2k(K)) + log_sum
    return float(log_z_ising - K * n_edges)


def _log_sinh_2k(K):
    """``log sinh 2K`` for ``K > 0`` without overflow."""
    return 2 * K + np.log(-np.expm1(-4 * K)) - np.log(2.0)
