"""Kaufman's exact ``log Z`` of the periodic Ising model against three independent computations.

``skmrf.datasets.ising_torus_log_partition`` (Kaufman 1949, four products of cosh / sinh over
``cols`` angles) is checked against

(a) brute-force enumeration of the 3x3, 3x4 and 4x4 tori, in spins ``s = +-1`` (Kaufman's own
    definition, then ``- K |E|`` by hand), vectorised over the ``2^16`` states;
(b) a row-to-row transfer matrix in the package's ``{0, 1}`` parametrisation
    (``theta_ij = 4K``, ``theta_i = -8K``): ``Z = trace(T^rows)``, ``2^cols`` states per row;
(c) Onsager's free energy of the infinite lattice: off the critical point the finite-size
    correction of the torus is exponentially small in ``L``, so at ``L = 64, 128`` ``log Z`` is
    ``N f_inf`` plus ``log 2`` in the ordered phase (the two phases) and plus 0 above ``T_c``;
(d) the junction tree of ``make_ising_torus(L, K)`` (4x4, 5x5), which also checks the model.

Every reference here is written from scratch (no skmrf code), the torus's edges included.

Tolerances. All the values are differences of large logs: ``log Z = log Z_Ising - K |E|`` where
``|log Z_Ising| <= N (log 2 + 2K)`` and ``K |E| = 2 K N`` (and, at small ``K``, Kaufman's prefactor
``N/2 log(2 sinh 2K)`` cancels products of the same size). Rounding a quantity of size ``S`` costs
``eps S`` (``eps = 2.2e-16``), and each method sums at most a few dozen such roundings of
quantities no larger than ``S = N (log 2 + 4K + |log(2 sinh 2K)| / 2)``: Kaufman adds four sums of
``cols`` logs, each sum at most ``S``; the enumeration rounds ``K * E(s)`` (``|E(s)| <= |E|``) and
sums ``2^N`` positive exponentials pairwise (``log2(2^N) = N`` roundings); the transfer matrix
exponentiates entries with arguments up to ``12 K cols`` (relative error ``eps * 12 K cols`` per
entry) and multiplies ``rows`` positive matrices (relative error at most ``2^cols eps`` per product,
no cancellation). :func:`tolerance` adds these bounds; they are worst cases, the observed errors are
a few ``eps S`` (about 1e-14 at 4x4, 1e-12 at 128x128 and K = 2).
"""

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import logsumexp

from skmrf import DiscreteMRF, torus_graph
from skmrf.datasets import ising_torus_log_partition, make_ising_torus

EPS = np.finfo(float).eps
K_C = math.log1p(math.sqrt(2)) / 2
COUPLINGS = [0.1, 0.3, 0.4407, 0.5, 0.6, 1.0, 2.0]


def torus_edges(rows, cols):
    """``(2 rows cols, 2)`` array of the torus's edges, row-major nodes, written independently."""
    r, c = np.divmod(np.arange(rows * cols), cols)
    right = np.stack([r * cols + c, r * cols + (c + 1) % cols], axis=1)
    down = np.stack([r * cols + c, ((r + 1) % rows) * cols + c], axis=1)
    return np.concatenate([right, down])


def tolerance(rows, cols, K, extra=0.0):
    """Bound on the rounding of Kaufman's value and a reference's (see the module docstring).

    ``extra`` is the reference's own bound beyond ``eps * S``, in units of ``eps``.
    """
    # S, the largest intermediate: |log Z_Ising| <= N (log 2 + 2K) and K |E| = 2 K N; and at
    # small K Kaufman's prefactor N/2 log(2 sinh 2K) cancels products of the same size.
    prefactor = abs(2 * K + math.log(-math.expm1(-4 * K))) / 2 if K > 0 else 0.0
    scale = rows * cols * (math.log(2) + 4 * K + prefactor)
    # Kaufman: four sums of cols logs (each sum <= S, pairwise: log2(cols) roundings of S, and
    # each log carries the relative error of its gamma_k), then three additions of terms <= S.
    kaufman = (math.log2(cols) + 4) * scale
    return EPS * (kaufman + scale + extra)


def brute_force_log_partition(rows, cols, K):
    """``log sum_s exp(K sum_(ij) s_i s_j) - K |E|`` over every ``s in {-1, +1}^N``."""
    n = rows * cols
    edges = torus_edges(rows, cols)
    s = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(np.int8) * 2 - 1
    energy = (s[:, edges[:, 0]] * s[:, edges[:, 1]]).sum(axis=1, dtype=np.int64)  # exact integers
    return float(logsumexp(K * energy) - K * len(edges))


def transfer_matrix_log_partition(rows, cols, K):
    """``log trace(T^rows)`` with ``T[x, y] = exp(4K x.y + 4K sum_j y_j y_(j+1) - 8K sum_j y_j)``.

    ``x, y in {0, 1}^cols`` are consecutive rows of the torus (columns wrap within a row, rows
    wrap through the trace). The product is rescaled after every factor, its logs accumulated.
    """
    x = (np.arange(2**cols)[:, None] >> np.arange(cols)) & 1
    within = 4 * K * (x * np.roll(x, -1, axis=1)).sum(axis=1) - 8 * K * x.sum(axis=1)
    log_t = 4 * K * (x @ x.T) + within[None, :]
    shift = log_t.max()
    T = np.exp(log_t - shift)
    P, log_scale = np.eye(2**cols), 0.0
    for _ in range(rows):
        P = P @ T
        top = P.max()
        P /= top
        log_scale += math.log(top)
    return float(rows * shift + log_scale + math.log(np.trace(P)))


def onsager_log_partition_per_site(K):
    """Onsager's ``lim log Z / N`` in the package's parametrisation, and quad's error bound.

    ``log 2 + (1 / 2 pi) int_0^pi log[(a + sqrt(a^2 - b^2)) / 2] dtheta - 2K`` with
    ``a = cosh^2 2K - sinh 2K cos theta``, ``b = sinh 2K`` (the inner integral of Onsager's double
    integral done in closed form).
    """
    a0, b = math.cosh(2 * K) ** 2, math.sinh(2 * K)

    def integrand(theta):
        a = a0 - b * math.cos(theta)
        return math.log((a + math.sqrt(a * a - b * b)) / 2)

    value, err = quad(integrand, 0, math.pi, epsabs=0, epsrel=1e-13, limit=200)
    return math.log(2) + value / (2 * math.pi) - 2 * K, err / (2 * math.pi)


# -- torus_graph -------------------------------------------------------------------------------


@pytest.mark.parametrize("rows,cols", [(3, 3), (3, 5), (6, 4)])
def test_torus_graph_edges(rows, cols):
    g = torus_graph(rows, cols)
    assert list(g.nodes) == list(range(rows * cols))
    assert {frozenset(e) for e in g.edges} == {frozenset(e) for e in torus_edges(rows, cols).tolist()}
    assert g.number_of_edges() == 2 * rows * cols
    assert all(d == 4 for _, d in g.degree)


@pytest.mark.parametrize("bad", [2, 0, -3, 3.0, "4", True, None])
@pytest.mark.parametrize("name", ["rows", "cols"])
def test_torus_graph_rejects(name, bad):
    kwargs = {"rows": 4, "cols": 4, name: bad}
    with pytest.raises(ValueError, match=name):
        torus_graph(**kwargs)


# -- the model ---------------------------------------------------------------------------------


def test_make_ising_torus_parameters():
    K = 0.37
    model = make_ising_torus(3, K, cols=4)
    assert isinstance(model, DiscreteMRF)
    assert model.n_variables == 12
    edges = [c for c in model.cliques if len(c) == 2]
    assert {frozenset(e) for e in edges} == {frozenset(e) for e in torus_edges(3, 4).tolist()}
    for c in model.cliques:
        assert model.potential(c).item() == (4 * K if len(c) == 2 else -8 * K)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"L": 2, "K": 0.3}, "L must"),
        ({"L": 4.0, "K": 0.3}, "L must"),
        ({"L": 4, "K": 0.3, "cols": 2}, "cols must"),
        ({"L": 4, "K": -0.1}, "K must"),
        ({"L": 4, "K": float("nan")}, "K must"),
        ({"L": 4, "K": float("inf")}, "K must"),
        ({"L": 4, "K": "0.3"}, "K must"),
        ({"L": 4, "K": 1j}, "K must"),
    ],
)
@pytest.mark.parametrize("func", [make_ising_torus, ising_torus_log_partition])
def test_bad_arguments(func, kwargs, match):
    kwargs = dict(kwargs)
    with pytest.raises(ValueError, match=match):
        func(kwargs.pop("L"), kwargs.pop("K"), **kwargs)


# -- (a) brute force ---------------------------------------------------------------------------


@pytest.mark.parametrize("rows,cols", [(3, 3), (3, 4), (4, 3), (4, 4)])
@pytest.mark.parametrize("K", [0.0, 1e-8, *COUPLINGS, K_C])
def test_kaufman_against_enumeration(rows, cols, K):
    got = ising_torus_log_partition(rows, K, cols=cols)
    # logsumexp: K * E(s) rounded once (|K E| <= K |E| = 2 K N, inside S), then N pairwise roundings
    want = brute_force_log_partition(rows, cols, K)
    assert abs(got - want) <= tolerance(rows, cols, K, extra=rows * cols), (got, want)


# -- (b) transfer matrix -----------------------------------------------------------------------


@pytest.mark.parametrize("rows,cols", [(3, 7), (4, 5), (5, 5), (6, 6), (8, 8), (9, 6)])
@pytest.mark.parametrize("K", COUPLINGS)
def test_kaufman_against_transfer_matrix(rows, cols, K):
    got = ising_torus_log_partition(rows, K, cols=cols)
    want = transfer_matrix_log_partition(rows, cols, K)
    # rows products of positive matrices, each entry exp'd with relative error eps * 12 K cols
    # and summed over 2^cols positive terms: relative (hence absolute in log) rows * (...) eps
    extra = rows * (2**cols + 12 * K * cols)
    assert abs(got - want) <= tolerance(rows, cols, K, extra=extra), (got, want)


def test_kaufman_is_symmetric_in_rows_and_cols():
    for K in COUPLINGS:
        a, b = ising_torus_log_partition(5, K, cols=8), ising_torus_log_partition(8, K, cols=5)
        assert abs(a - b) <= 2 * tolerance(5, 8, K)


# -- (c) the infinite lattice ------------------------------------------------------------------


@pytest.mark.parametrize("L", [64, 128])
@pytest.mark.parametrize("K", [0.1, 0.3, 0.6, 1.0, 2.0])
def test_kaufman_large_torus_against_onsager(L, K):
    # The correction to N f_inf decays like exp(-L / xi); xi <= 1.8 at these K (Onsager's
    # 1 / xi = 2 |K - K*|, K* the dual coupling), so at L >= 64 it is below 1e-15. In the ordered
    # phase the torus's two phases add log 2.
    n = L * L
    per_site, quad_err = onsager_log_partition_per_site(K)
    got = ising_torus_log_partition(L, K)
    assert np.isfinite(got)
    offset = math.log(2) if K > K_C else 0.0
    assert abs(got - n * per_site - offset) <= tolerance(L, L, K) + 4 * n * (quad_err + EPS * abs(per_site))


def test_kaufman_critical_point_finite_size_correction():
    # At K_c the torus's log Z exceeds N f_inf by a universal constant (Ferdinand and Fisher 1969,
    # 0.6399 for the square torus) up to O(1 / N): the corrections shrink 4x when L doubles.
    per_site, _ = onsager_log_partition_per_site(K_C)
    excess = np.array([ising_torus_log_partition(L, K_C) - L * L * per_site for L in (32, 64, 128)])
    assert np.all(np.abs(excess - 0.63991) < 1e-3)
    ratio = (excess[0] - excess[1]) / (excess[1] - excess[2])
    assert 3.5 < ratio < 4.5


def test_kaufman_extreme_couplings_do_not_overflow():
    # K -> infinity: the two ground states (all 0, all 1) have energy 0 in the package's
    # parametrisation, every other state exp(-8K) or less: log Z -> log 2. K -> 0: log Z =
    # N log 2 + E_uniform[4K sum x_i x_j - 8K sum x_i] + O(K^2 N) = N log 2 - 2 K N + O(K^2 N).
    for L in (64, 128):
        n = L * L
        for K in (50.0, 400.0):
            assert abs(ising_torus_log_partition(L, K) - math.log(2)) <= tolerance(L, L, K)
        for K in (1e-12, 1e-100, 1e-300):
            want = n * math.log(2) - 2 * K * n
            assert abs(ising_torus_log_partition(L, K) - want) <= tolerance(L, L, K) + 4 * K * K * n


# -- (d) the junction tree ---------------------------------------------------------------------


@pytest.mark.parametrize("L", [4, 5])
@pytest.mark.parametrize("K", COUPLINGS)
def test_kaufman_against_junction_tree(L, K):
    model = make_ising_torus(L, K)
    got = ising_torus_log_partition(L, K)
    want = model.log_partition()
    # The junction tree sums at most 2^(width + 1) positive terms per message over N messages,
    # each potential exp'd from arguments up to 8K: relative error N (2^(width + 1) + 8K) eps.
    extra = L * L * (2 ** (model.treewidth + 1) + 8 * K)
    assert abs(got - want) <= tolerance(L, L, K, extra=extra), (got, want)
