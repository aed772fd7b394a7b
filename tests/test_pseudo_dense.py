"""The one-hot (DCA-scale) pseudo-likelihood path, per-order alpha and the low-memory L-BFGS (#26 items 2-3)."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

import skmrf._kernels.pseudo as kernel
import skmrf._kernels.pseudo_dense as dense
from skmrf._kernels.pseudo_dense import DensePseudoLikelihood
from skmrf._penalty import CentredRidge
from skmrf._solvers import THETA_BOUND
from skmrf._solvers.lbfgs import minimize_low_memory
from skmrf.datasets import sample_random_mrf
from skmrf.estimators._pseudo import PseudoLikelihoodEstimator

from . import brute_force as bf
from .test_pseudo import brute_force_pl

L, Q = 5, 3
COMPLETE = [(i, j) for i in range(L) for j in range(i + 1, L)]


@pytest.fixture(scope="module")
def potts():
    X, _ = sample_random_mrf(COMPLETE, 300, n_states=Q, n_variables=L, random_state=0)
    w = np.random.default_rng(0).integers(1, 4, size=len(X)).astype(float)
    return X, w


def _fit(monkeypatch, path, X, w=None, **params):
    """A complete-graph fit with the evaluation path forced."""
    monkeypatch.setattr(kernel, "choose_path", lambda *a, **k: kernel.PathChoice(path, 0.0, 0.0))
    est = PseudoLikelihoodEstimator(graph="complete", n_states=Q, **params).fit(X, sample_weight=w)
    assert est.n_iter_ < est.max_iter
    return est


@pytest.mark.filterwarnings("ignore:PseudoLikelihoodEstimator did not converge")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("chunk_entries, block_width", [(1 << 18, 512), (1, 1), (7, 4)])
def test_one_hot_objective_equals_brute_force_pl(monkeypatch, potts, dtype, chunk_entries, block_width):
    # (1, 1): one row per chunk and one column per block; (7, 4): chunks of 3 rows, blocks of 2 columns.
    monkeypatch.setattr(dense, "CHUNK_ENTRIES", chunk_entries)
    monkeypatch.setattr(dense, "BLOCK_WIDTH", block_width)
    X, _ = potts
    est = PseudoLikelihoodEstimator(graph="complete", n_states=Q, max_iter=1).fit(X)
    theta = np.random.default_rng(1).normal(scale=0.7, size=est.model_.n_params)
    f_ref, g_ref = brute_force_pl(est.model_, X, 0.0)(theta)
    f, g = DensePseudoLikelihood(est.model_.layout, X, 0.0, dtype=dtype)(theta)
    # float64: rounding of sums of ~L * Q terms of size ~3 (1e-13); float32 products: logits rounded to
    # 2^-24 of ~3 summed over L columns, ~1e-6 on each log-probability and on each gradient mean.
    tol = 1e-11 if dtype == np.float64 else 1e-5
    assert abs(f - f_ref) < tol * L
    np.testing.assert_allclose(g, g_ref, atol=tol)


@pytest.mark.parametrize("alpha", [0.01, {1: 0.001, 2: 0.02}, "auto"])
def test_one_hot_path_reaches_the_records_optimum(monkeypatch, potts, alpha):
    X, w = potts
    tol = 1e-8
    a = _fit(monkeypatch, "records", X, w, alpha=alpha, tol=tol)
    b = _fit(monkeypatch, "one-hot", X, w, alpha=alpha, tol=tol)
    assert b.n_records_ == X.shape[0] * L
    # The objective is alpha_min-strongly convex, so two points whose gradients are each below tol in
    # every component are within 2 tol sqrt(n_params) / alpha_min of the optimum and of each other.
    if alpha == "auto":  # the centred ridge: its smallest curvature
        alpha_min = np.linalg.eigvalsh(CentredRidge(a.model_.layout, a.alpha_).matrix().toarray()).min()
    else:
        alpha_min = min(alpha.values()) if isinstance(alpha, dict) else alpha
    bound = 2 * tol * np.sqrt(a.model_.n_params) / alpha_min
    np.testing.assert_allclose(b.theta_, a.theta_, rtol=0, atol=bound)
    assert abs(a.pseudo_log_likelihood_ - b.pseudo_log_likelihood_) < 1e-8


def test_one_hot_path_with_ridge_on_tables_and_float32(monkeypatch, potts):
    X, w = potts
    a = _fit(monkeypatch, "records", X, w, alpha={1: 0.01, 2: 0.02}, ridge="tables", tol=1e-8)
    b = _fit(monkeypatch, "one-hot", X, w, alpha={1: 0.01, 2: 0.02}, ridge="tables", tol=1e-6)
    # In table coordinates both are within tol sqrt(n_table) / alpha_min of the optimum (b's tol, float32
    # products, rounding ~1e-7 on the gradient, below tol); theta adds at most 2 L table entries per field
    # (4 per coupling), so its components are within 2 L times that.
    n_table = a.model_.layout.n_table
    bound = 2 * L * 2 * 1e-6 * np.sqrt(n_table) / 0.01
    np.testing.assert_allclose(b.theta_, a.theta_, rtol=0, atol=bound)


def test_integer_weights_equal_repeated_rows_on_the_one_hot_path(monkeypatch, potts):
    X, w = potts
    tol = 1e-9
    a = _fit(monkeypatch, "one-hot", X, w, alpha=0.01, tol=tol)
    b = _fit(monkeypatch, "one-hot", np.repeat(X, w.astype(int), axis=0), alpha=0.01, tol=tol)
    # Not bit for bit: the one-hot products sum a weighted row once and its repetitions w times (another
    # rounding order). The objectives are equal, so the solutions are within 2 tol sqrt(p) / alpha.
    bound = 2 * tol * np.sqrt(a.model_.n_params) / 0.01
    np.testing.assert_allclose(a.theta_, b.theta_, rtol=0, atol=bound)


@pytest.mark.parametrize(
    "alpha, match",
    [
        ({0: 0.1, 2: 0.1}, r"got the key 0"),
        ({"fields": 0.1}, r"got the key 'fields'"),
        ({True: 0.1}, r"got the key True"),
        ({1: -0.1, 2: 0.1}, r"alpha\[1\] must be a float >= 0"),
        ({1: 0.1, 2: np.nan}, r"alpha\[2\] must be a float >= 0"),
        ({1: 0.1, 2: "big"}, r"alpha\[2\] must be a float >= 0"),
        ({1: 0.1}, r"cliques of order \[2\]"),
    ],
)
def test_bad_alpha_dict_is_refused(potts, alpha, match):
    X, _ = potts
    with pytest.raises(ValueError, match=match):
        PseudoLikelihoodEstimator(graph="complete", n_states=Q, alpha=alpha).fit(X)


def test_alpha_dict_auto_and_float_equivalence(potts):
    X, w = potts
    est = PseudoLikelihoodEstimator(graph="complete", n_states=Q, alpha={1: "auto", 2: 0.05}, tol=1e-9).fit(
        X, sample_weight=w
    )
    assert est.alpha_ == {1: 1.0 / w.sum(), 2: 0.05}
    one = PseudoLikelihoodEstimator(graph="complete", n_states=Q, alpha=0.05, tol=1e-9).fit(X, sample_weight=w)
    same = PseudoLikelihoodEstimator(graph="complete", n_states=Q, alpha={1: 0.05, 2: 0.05}, tol=1e-9).fit(
        X, sample_weight=w
    )
    # The same objective (one alpha per order equal to the float): both stop below tol, 2 tol sqrt(p) / alpha.
    np.testing.assert_allclose(one.theta_, same.theta_, rtol=0, atol=2e-9 * np.sqrt(one.model_.n_params) / 0.05)


def test_low_memory_lbfgs_converges_and_respects_the_box():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 20))
    H = A.T @ A / 30 + 0.1 * np.eye(20)
    c = rng.normal(size=20)

    def quad(x):
        return 0.5 * x @ H @ x - c @ x, H @ x - c

    x, f, g, it = minimize_low_memory(quad, np.zeros(20), 500, 1e-10)
    assert np.abs(g).max() <= 1e-10 and it < 500
    # The minimiser solves H x = c; the residual g bounds the error by ||g|| / lambda_min(H) >= 0.1.
    np.testing.assert_allclose(x, np.linalg.solve(H, c), rtol=0, atol=1e-10 * np.sqrt(20) / 0.1)

    def outside(x):  # minimum at 40 in every component, outside the box
        return 0.5 * np.sum((x - 40.0) ** 2), x - 40.0

    x, _, g, _ = minimize_low_memory(outside, np.zeros(3), 200, 1e-8)
    np.testing.assert_array_equal(x, THETA_BOUND)


def test_low_memory_lbfgs_leaves_x0_alone_and_undoes_a_failed_line_search():
    x0 = np.full(4, 0.5)
    x, _, _, _ = minimize_low_memory(lambda x: (0.5 * x @ x, x.copy()), x0, 50, 1e-10)
    np.testing.assert_array_equal(x0, 0.5)  # moved in place, but on a copy
    assert np.abs(x).max() <= 1e-10

    calls = []

    def cliff(x):  # finite at the start only: every one of the 30 trial steps fails
        calls.append(x.copy())
        return (0.5 if len(calls) == 1 else np.inf), np.full_like(x, 1.0)

    y0 = np.full(4, 0.5)
    y, f, _, it = minimize_low_memory(cliff, y0, 50, 1e-10, overwrite_x0=True)
    assert it == 0 and len(calls) == 31 and y is y0 and f == 0.5
    assert calls[1][0] < 0.5  # the trials moved x in place ...
    # ... and were undone: 0.5 - t1 d + t1 d - (t2 - t1) d ... + t30 d, each step's rounding ~1e-16.
    np.testing.assert_allclose(y, 0.5, rtol=0, atol=1e-14)


def test_alpha_dict_with_an_order_the_graph_lacks_is_refused(potts):
    X, _ = potts
    with pytest.raises(ValueError, match=r"clique order 3.*Remove alpha\[3\]"):
        PseudoLikelihoodEstimator(graph="complete", n_states=Q, alpha={1: 0.1, 2: 0.1, 3: 0.1}).fit(X)


def _column_objective(model, X, v, alpha_h, alpha_j):
    """Brute-force ``-mean log p(x_v | x_-v)`` plus the ridge of column ``v``'s own regression: its
    field at ``alpha_h``, each of its couplings at ``alpha_j / 2`` (fitted by both columns)."""
    K = int(model.n_states.max())
    F = np.stack([bf.features(model, np.where(np.arange(L) == v, k, X)) for k in range(K)], axis=1)
    layout = model.layout
    ridge = np.zeros(model.n_params)
    for c, clique in enumerate(layout.cliques):
        if v in clique:
            block = slice(layout.block_offsets[c], layout.block_offsets[c] + layout.block_sizes[c])
            ridge[block] = alpha_h if len(clique) == 1 else alpha_j / 2
    rows = np.arange(len(X))

    def objective(theta):
        e = F @ theta
        lse = logsumexp(e, axis=1)
        p = np.exp(e - lse[:, None])
        f = -np.mean(e[rows, X[:, v]] - lse) + 0.5 * theta @ (ridge * theta)
        g = -np.mean(F[rows, X[:, v]] - np.einsum("nk,nkp->np", p, F), axis=0) + ridge * theta
        return f, g

    return objective, ridge > 0


def test_asymmetric_pl_averages_brute_force_column_regressions(potts):
    X, _ = potts
    est = PseudoLikelihoodEstimator(graph="complete", n_states=Q, alpha={1: 0.02, 2: 0.05}, symmetric=False, tol=1e-9)
    est.fit(X)
    layout = est.model_.layout
    expected = np.zeros(est.model_.n_params)
    for v in range(L):
        objective, own = _column_objective(est.model_, X, v, 0.02, 0.05)
        ref = minimize(objective, np.zeros(est.model_.n_params), jac=True, method="BFGS", options={"gtol": 1e-10})
        for c, clique in enumerate(layout.cliques):
            if v in clique:
                block = slice(layout.block_offsets[c], layout.block_offsets[c] + layout.block_sizes[c])
                expected[block] += ref.x[block] / len(clique)
        assert np.abs(ref.x[~own]).max() < 1e-12  # parameters outside the column's regression stay at 0
    # Each column's regression is (alpha_j / 2)-strongly convex; both stop at gradients below 1e-9
    # (the kernel's tol; BFGS at 1e-10), so each estimate is within 2e-9 sqrt(p) / (alpha_j / 2).
    np.testing.assert_allclose(est.theta_, expected, rtol=0, atol=2e-9 * np.sqrt(est.model_.n_params) / 0.025)


@pytest.mark.parametrize("n_jobs, block_bytes", [(2, 1 << 26), (1, 1000), (2, 1000)])
def test_one_hot_path_in_blocks_of_columns(monkeypatch, potts, n_jobs, block_bytes):
    X, w = potts
    monkeypatch.setattr(kernel, "DENSE_MIN_WORK_PER_WORKER", 0.0)  # threads even on this small model
    tol = 1e-8
    a = _fit(monkeypatch, "one-hot", X, w, alpha=0.01, tol=tol)
    monkeypatch.setattr(dense, "DENSE_BLOCK_BYTES", block_bytes)  # 1000: one column per block
    b = _fit(monkeypatch, "one-hot", X, w, alpha=0.01, tol=tol, n_jobs=n_jobs)
    # Two blocks of columns sum the gradient in another order; both stop below tol: 2 tol sqrt(p) / alpha.
    np.testing.assert_allclose(b.theta_, a.theta_, rtol=0, atol=2 * tol * np.sqrt(a.model_.n_params) / 0.01)
