"""``project_spectral`` (sparse rank-one dual) against the previous dense Dykstra iteration.

Tolerances:

- agreement with Dykstra, 1e-9: Dykstra converges linearly and stops when a step moves less
  than its ``tol`` (1e-13 here), so its distance to the limit is that step times
  ``rho / (1 - rho)``; over 100 random cases (grids, random and complete graphs, up to 4 c)
  it was at most 2.4e-10 from the new result, whose Newton phase converges quadratically
  (differences of 1e-13 to 1e-12 where Dykstra converges fast).
- feasibility, ``||R||_2 <= c + 1e-12``: the result is scaled by ``c`` over an upper bound of
  its norm, so only the rounding of the dense ``eigvalsh`` check (about 1e-15) remains.
- variational inequality, ``<J - P, Y - P> <= 1e-9``: zero or negative for the exact
  projection ``P``; an error ``e`` in ``P`` moves it by about ``|J - P| |e|``, with
  ``|e| <= 1e-12``.
- dense and sparse eigenvalue paths, 1e-10: the same iterations, only the eigensolver
  (start vector, final norm) differs, each to about 1e-14.
"""

import itertools

import networkx as nx
import numpy as np
import pytest

import skmrf._kernels.mcmc.spectral as fm
from skmrf import grid_graph
from skmrf._kernels.mcmc.spectral import _project_spectral, _project_spectral_dykstra, project_spectral
from skmrf._utils._threads import single_blas_thread

C = 0.8


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # The checks' dense eigvalsh calls are small: threaded BLAS is many times slower on a busy machine.
    with single_blas_thread():
        yield


def _grid_edges(r, c):
    return np.array(sorted(tuple(sorted(e)) for e in grid_graph(r, c).edges))


def _dense(J, edges, n):
    A = np.zeros((n, n))
    A[edges[:, 0], edges[:, 1]] = A[edges[:, 1], edges[:, 0]] = np.abs(J)
    return A


def _norm(J, edges, n):
    return np.abs(np.linalg.eigvalsh(_dense(J, edges, n))).max()


def _outside(J, edges, n, c=C):
    """Number of eigenvalues of R(J) outside [-c, c] (what Dykstra's ball step clips)."""
    return int((np.abs(np.linalg.eigvalsh(_dense(J, edges, n))) > c).sum())


def _couplings(edges, n, scale, seed):
    """Uniform(-0.3, 0.3) couplings scaled so that ||R||_2 = scale * C."""
    J = np.random.default_rng(seed).uniform(-0.3, 0.3, len(edges))
    return J * scale * C / _norm(J, edges, n)


def _graph(name):
    if name == "grid4":
        return _grid_edges(4, 4), 16
    if name == "grid6":
        return _grid_edges(6, 6), 36
    if name == "gnp20":  # random, non-bipartite
        return np.array(sorted(nx.gnp_random_graph(20, 0.25, seed=3).edges)), 20
    if name == "complete8":
        return np.array(list(itertools.combinations(range(8), 2))), 8
    if name == "two_grids":  # disconnected, both parts bipartite
        return np.r_[_grid_edges(3, 3), _grid_edges(3, 3) + 9], 18
    raise ValueError(name)


def _check_projection(J, P, edges, n, c=C, seed=0):
    """Feasible, signs kept, and the variational inequality of the projection onto a convex set."""
    assert _norm(P, edges, n) <= c + 1e-12
    assert np.all((P == 0) | (np.sign(P) == np.sign(J)))
    rng = np.random.default_rng(seed)
    for _ in range(100):
        y = rng.normal(0, 0.3, len(edges))
        y *= rng.uniform(0, 1) * c / _norm(y, edges, n)
        assert (J - P) @ (y - P) <= 1e-9


# (graph, ||R||_2 / c, seed, eigenvalues of R outside [-c, c]): one outside (non-bipartite,
# slightly out), two (bipartite: +-lambda), several; all with a fast-converging Dykstra.
CASES = [
    ("complete8", 1.05, 0, 1),
    ("gnp20", 1.05, 0, 1),
    ("gnp20", 2.0, 1, "several"),
    ("grid4", 1.05, 0, 2),
    ("grid4", 1.2, 1, 2),
    ("grid4", 4.0, 0, "several"),
    ("grid6", 1.2, 0, "several"),
    ("grid6", 2.0, 2, "several"),
    ("two_grids", 1.2, 0, "several"),
    ("two_grids", 2.0, 1, "several"),
]


@pytest.mark.parametrize("name, scale, seed, outside", CASES)
def test_equals_dense_dykstra(name, scale, seed, outside):
    edges, n = _graph(name)
    J = _couplings(edges, n, scale, seed)
    k = _outside(J, edges, n)
    assert k == outside if outside != "several" else k > 2
    P, info = _project_spectral(J, edges, n, C, 1e-9, 10000)
    ref = _project_spectral_dykstra(J, edges, n, C, tol=1e-13, max_iter=200_000)
    np.testing.assert_allclose(P, ref, rtol=0, atol=1e-9)
    _check_projection(J, P, edges, n, seed=seed)
    assert info["n_restarts"] == 0
    # Newton's stopping rule: the last full step moved less than tol, so the norm is c to rounding.
    assert abs(_norm(P, edges, n) - C) < 1e-12


def test_existing_optimality_check_complete_graph():
    # The check of tests/test_mcmc.py on K6 with normal couplings, at a tighter tolerance.
    n, edges = 6, np.array(list(itertools.combinations(range(6), 2)))
    J = np.random.default_rng(0).normal(0, 0.6, len(edges))
    P = project_spectral(J, edges, n, 0.7)
    assert _norm(J, edges, n) > 0.7
    _check_projection(J, P, edges, n, c=0.7)


@pytest.mark.parametrize("scale", [0.5, 0.999])
def test_feasible_input_unchanged(scale):
    edges, n = _graph("grid6")
    J = _couplings(edges, n, scale, 0)
    P = project_spectral(J, edges, n, C)
    np.testing.assert_array_equal(P, J)
    # A projection is inside the set: projecting it again leaves it, up to the rounding of the norm check
    # (about n eps = 8e-15 relative for n = 36, so 1e-14).
    P1 = project_spectral(_couplings(edges, n, 2.0, 0), edges, n, C)
    np.testing.assert_allclose(project_spectral(P1, edges, n, C), P1, rtol=1e-14)


def test_zero_couplings_and_a_feasible_component():
    # Exact zeros split the grid; in two_grids the first part is already inside the set, so
    # its w is 0 and the final norm needs the eigenvalue route, not the Collatz-Wielandt bound.
    edges, n = _graph("grid4")
    J = _couplings(edges, n, 2.0, 0)
    J[::3] = 0.0
    P = project_spectral(J, edges, n, C)
    np.testing.assert_allclose(P, _project_spectral_dykstra(J, edges, n, C, tol=1e-13, max_iter=200_000), atol=1e-9)
    assert np.all(P[::3] == 0)
    edges, n = _graph("two_grids")
    J = _couplings(edges, n, 1.5, 0)
    J[:12] *= 0.2  # the first 3x3 grid
    assert _norm(J[:12], edges[:12], 9) < C
    P, info = _project_spectral(J, edges, n, C, 1e-9, 10000)
    assert not info["certified"]
    # Unchanged but for the final scaling by c / ||X||_2 when the eigensolver's ||X||_2 lands above c: its
    # rounding, about n eps relative (|norm / c - 1| was -2e-16..2e-16 under four OpenBLAS kernels; 1e-15
    # held only where the rounding happened to fall below c).
    np.testing.assert_allclose(P[:12], J[:12], rtol=n * np.finfo(float).eps)
    np.testing.assert_allclose(P, _project_spectral_dykstra(J, edges, n, C, tol=1e-13, max_iter=200_000), atol=1e-9)
    _check_projection(J, P, edges, n)


def test_degenerate_inputs():
    assert project_spectral(np.zeros(0), np.zeros((0, 2), dtype=int), 3, C).shape == (0,)
    np.testing.assert_array_equal(project_spectral(np.array([2.0]), np.array([[0, 1]]), 2, C), [C])
    np.testing.assert_array_equal(project_spectral(np.array([-2.0, 1.0]), np.array([[0, 1], [1, 2]]), 3, 0.0), [0, 0])
    with pytest.raises(ValueError, match="non-negative"):
        project_spectral(np.array([2.0]), np.array([[0, 1]]), 2, -1.0)
    with pytest.raises(ValueError, match="distinct"):
        project_spectral(np.array([2.0, 1.0]), np.array([[0, 1], [1, 0]]), 2, C)


def test_tiny_max_norm():
    # c much smaller than the couplings: the dual weights are large; Dykstra needs about 1e6
    # iterations here, so the check is the optimality conditions only.
    edges, n = _graph("grid4")
    J = np.random.default_rng(1).uniform(-1, 1, len(edges))
    P = project_spectral(J, edges, n, 1e-3)
    # On the boundary to the Collatz-Wielandt bound's slack (scaling allowed to move P by tol).
    assert 1e-3 * (1 - 1e-9) < _norm(P, edges, n) <= 1e-3 * (1 + 1e-12)
    _check_projection(J, P, edges, n, c=1e-3)


def test_restart_from_a_saddle_point(monkeypatch):
    # Without the floor on the start, w is 0 (to rounding) on the second grid, which the Perron
    # vector of |J| misses; that part still exceeds c, so the final check restarts from it.
    monkeypatch.setattr(fm, "_START_FLOOR", 0.0)
    edges, n = _graph("two_grids")
    J = _couplings(edges, n, 2.0, 0)
    J[12:] *= 0.7 * 2.0 * C / _norm(J[12:], edges[12:] - 9, 9)  # second grid at 1.4 c, below the first
    P, info = _project_spectral(J, edges, n, C, 1e-9, 10000)
    assert info["n_restarts"] >= 1
    np.testing.assert_allclose(P, _project_spectral_dykstra(J, edges, n, C, tol=1e-13, max_iter=200_000), atol=1e-9)


@pytest.mark.parametrize("scale", [1.2, 2.0])
def test_sparse_and_dense_eigen_paths_agree(monkeypatch, scale):
    # n = 400 > _DENSE_EIGEN_MAX: eigsh and the Collatz-Wielandt bound; the same problem with
    # the dense eigenvalue path must give the same projection.
    edges, n = _grid_edges(20, 20), 400
    J = _couplings(edges, n, scale, 0)
    P, info = _project_spectral(J, edges, n, C, 1e-9, 10000)
    assert info["certified"]
    monkeypatch.setattr(fm, "_DENSE_EIGEN_MAX", 10**6)
    P_dense, _ = _project_spectral(J, edges, n, C, 1e-9, 10000)
    np.testing.assert_allclose(P, P_dense, rtol=0, atol=1e-10)
    _check_projection(J, P, edges, n)
    # Duality gap of the result and the dual point: ||P - P*||_2 <= sqrt(2 gap).
    assert np.sqrt(2 * info["gap"]) < 1e-5


def test_sparse_path_with_a_feasible_component():
    # n > 200, one 15x15 grid inside the set: w = 0 there, so the final norm comes from eigsh.
    g = _grid_edges(15, 15)
    edges, n = np.r_[g, g + 225], 450
    J = _couplings(edges, n, 1.5, 0)
    J[: len(g)] *= 0.3
    assert _norm(J[: len(g)], g, 225) < C
    P, info = _project_spectral(J, edges, n, C, 1e-9, 10000)
    assert not info["certified"]
    # As in test_zero_couplings_and_a_feasible_component: at most the scaling by c / ||X||_2, whose
    # eigsh rounding is about n eps = 1e-13 relative (norm / c - 1 was -3.8e-15..-2.1e-15 under four
    # OpenBLAS kernels: the old rtol=1e-15 held only because it fell below c).
    np.testing.assert_allclose(P[: len(g)], J[: len(g)], rtol=n * np.finfo(float).eps)
    Q = project_spectral(J[len(g) :], g, 225, C)  # the other grid alone (dense path, certified)
    np.testing.assert_allclose(P[len(g) :], Q, rtol=0, atol=1e-10)
    _check_projection(J, P, edges, n)
