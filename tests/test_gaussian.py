"""Tests of GaussianLAP and GaussianMaxLikelihood (skmrf.estimators.gaussian).

Tolerances. Every LAP entry is an entry of the inverse of a small sample
covariance block; computing it through a Schur complement instead of
``np.linalg.inv`` changes only the rounding, so comparisons with the explicit
block inverse use ``rtol=1e-9`` on well-conditioned data (condition numbers
below 1e3, so the rounding is around 1e-13). The maximum-likelihood
conditions are checked to 1e-8 relative to ``max S_ii``: the Newton solver
stops at a residual of 1e-10 (quadratic convergence makes the last step
land far below that) and inverting the fitted precision (condition number
below 1e4 here) adds at most about 1e-12.
"""

import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import multivariate_normal
from sklearn.base import clone
from sklearn.covariance import EmpiricalCovariance, empirical_covariance, log_likelihood
from sklearn.exceptions import ConvergenceWarning

from skmrf._kernels.gaussian import lap as lap_kernel
from skmrf._solvers import spd
from skmrf.estimators.gaussian import GaussianLAP, GaussianMaxLikelihood, _base
from skmrf.exceptions import NotPositiveDefiniteWarning
from skmrf.graphs import grid_graph, resolve_adjacency


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def laplacian_precision(rows, cols):
    """L @ L for the 2-D Dirichlet Laplacian: SPD with a 13-point stencil pattern."""
    tr = sp.diags([-np.ones(rows - 1), 2 * np.ones(rows), -np.ones(rows - 1)], [-1, 0, 1])
    tc = sp.diags([-np.ones(cols - 1), 2 * np.ones(cols), -np.ones(cols - 1)], [-1, 0, 1])
    L = sp.kron(sp.identity(rows), tc) + sp.kron(tr, sp.identity(cols))
    return sp.csr_array(L @ L)


def chain_precision(p, rho=0.4):
    return np.diag(np.ones(p)) + np.diag(-rho * np.ones(p - 1), 1) + np.diag(-rho * np.ones(p - 1), -1)


def sample(precision, n, seed=0, mean=None):
    """n draws from N(mean, precision^-1) through the Cholesky factor of the precision.

    (``Generator.multivariate_normal`` factorises the covariance by SVD, whose
    basis for the clustered eigenvalues of these precisions depends on the
    BLAS build and thread count, so its draws are not reproducible.)
    """
    precision = precision.toarray() if sp.issparse(precision) else np.asarray(precision)
    p = precision.shape[0]
    C = np.linalg.cholesky(precision)  # precision = C C^T, x = C^-T z has covariance precision^-1
    z = np.random.default_rng(seed).standard_normal((p, n))
    x = np.linalg.solve(C.T, z).T
    return x if mean is None else x + mean


def brute_force_lap(X, adjacency, assume_centered=False, shrinkage=0.0, bias_correction=False):
    """LAP by its definition: one explicit inverse per entry (Section 6.1).

    With ``bias_correction`` (and no shrinkage) each entry of a block of
    ``|A|`` variables is multiplied by ``(n - |A| - 2) / n`` (``- 1`` when
    ``assume_centered``), the inverse-Wishart factor.
    """
    n, p = X.shape
    dof = n if assume_centered else n - 1

    def factor(A):
        return (dof - len(A) - 1) / n if bias_correction and not shrinkage else 1.0

    Xc = X if assume_centered else X - X.mean(axis=0)
    S = Xc.T @ Xc / n
    if shrinkage:
        S = (1 - shrinkage) * S + shrinkage * np.trace(S) / p * np.eye(p)
    G = nx.from_scipy_sparse_array(sp.csr_array(adjacency))
    P = np.zeros((p, p))
    for i in range(p):
        A = sorted({i} | set(G[i]))
        P[i, i] = np.linalg.inv(S[np.ix_(A, A)])[A.index(i), A.index(i)] * factor(A)
    for i, j in G.edges:
        A = sorted({i, j} | set(G[i]) | set(G[j]))
        P[i, j] = P[j, i] = np.linalg.inv(S[np.ix_(A, A)])[A.index(i), A.index(j)] * factor(A)
    return P


# The paper's Figure 6 (1-based): N_2 = {1, 5} and N_5 = {1, 2}; the rest of
# the 7-node graph only has to keep those neighbourhoods. 0-based edges:
PAPER_EDGES = [(0, 1), (0, 4), (1, 4), (0, 2), (2, 3), (3, 5), (5, 6), (2, 6)]


@pytest.fixture(params=["dense-covariance", "cluster-gram"])
def kernel_path(request, monkeypatch):
    """Run a test through both ways of forming the blocks (see ``lap_kernel.lap_from_data``)."""
    if request.param == "cluster-gram":
        monkeypatch.setattr(lap_kernel, "_DENSE_GRAM_MAX_FEATURES", 0)
    return request.param


# ---------------------------------------------------------------------------
# GaussianLAP: exactness
# ---------------------------------------------------------------------------
def test_paper_example_entry_25_uses_block_on_1_2_5(kernel_path):
    X = sample(chain_precision(7), 500, seed=1)
    est = GaussianLAP(PAPER_EDGES, bias_correction=False).fit(X)
    S = np.cov(X.T, bias=True)
    A = [0, 1, 4]  # {1, 2, 5} in the paper's numbering
    expected = np.linalg.inv(S[np.ix_(A, A)])[1, 2]  # (Q^{-1})_{2,3}, equation (13)
    assert est.precision_[1, 4] == pytest.approx(expected, rel=1e-9)
    assert est.precision_[4, 1] == est.precision_[1, 4]
    # Only x_1, x_2, x_5 matter: changing every other column leaves it unchanged.
    X2 = X.copy()
    X2[:, [2, 3, 5, 6]] = np.random.default_rng(5).standard_normal((500, 4))
    assert GaussianLAP(PAPER_EDGES, bias_correction=False).fit(X2).precision_[1, 4] == pytest.approx(expected, rel=1e-9)
    # The default bias correction multiplies it by (n - |A| - 2) / n, |A| = 3.
    corrected = GaussianLAP(PAPER_EDGES).fit(X).precision_[1, 4]
    assert corrected == pytest.approx(expected * (500 - 3 - 2) / 500, rel=1e-9)  # rounding only


def test_complete_graph_gives_inverse_sample_covariance(kernel_path):
    # Every 1-neighbourhood is the whole variable set.
    X = sample(chain_precision(6), 300, seed=2)
    est = GaussianLAP("complete", bias_correction=False).fit(X)
    expected = EmpiricalCovariance().fit(X).precision_
    np.testing.assert_allclose(est.precision_, expected, rtol=1e-9, atol=1e-12)
    assert est.is_positive_definite_


@pytest.mark.parametrize(
    "graph",
    [
        nx.gnp_random_graph(40, 0.08, seed=3),  # irregular: per-entry / per-variable blocks
        grid_graph(7, 6),  # lattice: aggregate blocks
        nx.star_graph(11),  # a hub
        nx.empty_graph(9),  # no edges
    ],
    ids=["random", "grid", "star", "empty"],
)
@pytest.mark.parametrize("bias_correction", [False, True])
def test_lap_matches_definition(graph, kernel_path, bias_correction):
    p = graph.number_of_nodes()
    rng = np.random.default_rng(4)
    X = rng.standard_normal((120, p)) @ (np.eye(p) + 0.3 * rng.standard_normal((p, p)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        est = GaussianLAP(graph, bias_correction=bias_correction).fit(X)
    adj = nx.to_scipy_sparse_array(graph)
    expected = brute_force_lap(X, adj, bias_correction=bias_correction)
    np.testing.assert_allclose(est.precision_, expected, rtol=1e-9, atol=1e-12)
    # Zero outside the graph, symmetric by construction.
    P = est.precision_
    assert np.array_equal(P, P.T)
    pattern = (adj != 0).toarray() | np.eye(p, dtype=bool)
    assert np.all(P[~pattern] == 0)


def test_lap_shrinkage_and_assume_centered_match_definition(kernel_path):
    G = grid_graph(4, 5)
    X = sample(laplacian_precision(4, 5), 60, seed=6, mean=np.full(20, 3.0))
    adj = nx.to_scipy_sparse_array(G)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        est = GaussianLAP(G, shrinkage=0.2).fit(X)
        np.testing.assert_allclose(est.precision_, brute_force_lap(X, adj, shrinkage=0.2), rtol=1e-9)
        est = GaussianLAP(G, assume_centered=True).fit(X)
        raw = GaussianLAP(G, assume_centered=True, bias_correction=False).fit(X)
    np.testing.assert_array_equal(est.location_, 0.0)
    # rtol=1e-9: the same arithmetic up to rounding in differently ordered solves.
    expected = brute_force_lap(X, adj, assume_centered=True, bias_correction=True)
    np.testing.assert_allclose(est.precision_, expected, rtol=1e-9)
    expected = brute_force_lap(X, adj, assume_centered=True)
    np.testing.assert_allclose(raw.precision_, expected, rtol=1e-9)


def test_lap_converges_to_truth():
    Q = laplacian_precision(6, 6)
    X = sample(Q, 200_000, seed=7)
    est = GaussianLAP(Q).fit(X)
    err = np.linalg.norm(est.precision_ - Q.toarray()) / np.linalg.norm(Q.toarray())
    assert err < 0.02  # O(1/sqrt(n)) statistical error


# ---------------------------------------------------------------------------
# GaussianLAP: bias correction
# ---------------------------------------------------------------------------
def _entry_factors(adjacency, n, assume_centered=False):
    """Dense matrix of the inverse-Wishart factor ``(dof - |A| - 1) / n`` of every LAP entry."""
    plan = lap_kernel.LapPlan(sp.csr_array(adjacency))
    dof = n if assume_centered else n - 1
    return lap_kernel.assemble_symmetric(plan.ti, plan.tj, (dof - plan.sizes - 1.0) / n, adjacency.shape[0]).toarray()


@pytest.mark.parametrize("assume_centered", [False, True])
def test_bias_correction_is_the_inverse_wishart_factor(kernel_path, assume_centered):
    Q = laplacian_precision(5, 6)
    X = sample(Q, 80, seed=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        raw = GaussianLAP(Q, assume_centered=assume_centered, bias_correction=False).fit(X).precision_
        est = GaussianLAP(Q, assume_centered=assume_centered).fit(X)
    F = _entry_factors(resolve_adjacency(Q, 30), 80, assume_centered)
    assert len(np.unique(F[F != 0])) > 2  # blocks of several sizes: the factor is per entry
    # rtol=1e-12: one multiplication of the same numbers, so equal up to rounding.
    np.testing.assert_allclose(est.precision_, raw * F, rtol=1e-12, atol=0)
    # Not applied with shrinkage > 0.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        a = GaussianLAP(Q, shrinkage=0.1).fit(X).precision_
        b = GaussianLAP(Q, shrinkage=0.1, bias_correction=False).fit(X).precision_
    np.testing.assert_array_equal(a, b)


def test_bias_correction_makes_entries_unbiased():
    # A 6-node chain (|A| from 2 to 4) with n = 20: the uncorrected entries have
    # mean n / (n - |A| - 2) * Theta_ij, i.e. 11% to 43% too large.
    p, n, reps = 6, 20, 400
    Q = chain_precision(p)
    graph = [(i, i + 1) for i in range(p - 1)]
    rng = np.random.default_rng(31)
    C = np.linalg.cholesky(Q)
    corrected, raw = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)  # common at n = 20; irrelevant here
        for _ in range(reps):
            X = np.linalg.solve(C.T, rng.standard_normal((p, n))).T
            raw.append(GaussianLAP(graph, bias_correction=False).fit(X).precision_)
            corrected.append(GaussianLAP(graph).fit(X).precision_)
    pattern = Q != 0
    corrected, raw = np.array(corrected)[:, pattern], np.array(raw)[:, pattern]
    truth = Q[pattern]
    # Standard error of the mean over the replicates, per entry. The corrected
    # mean is exactly unbiased, so its deviation is a standard normal times the
    # SE: 4 SE keeps the chance of a false failure over the 16 entries below
    # 1e-3 (and the seed is fixed). The uncorrected bias (at least 11%, about
    # 30 SE for the diagonal) is far outside that band.
    se = corrected.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(corrected.mean(axis=0) - truth) < 4 * se)
    z_raw = np.abs(raw.mean(axis=0) - truth) / (raw.std(axis=0, ddof=1) / np.sqrt(reps))
    is_diag = np.eye(p, dtype=bool)[pattern]
    assert np.all(z_raw[is_diag] > 8)
    assert np.all(np.abs(raw.mean(axis=0)) > np.abs(corrected.mean(axis=0)))


def test_bias_correction_needs_three_more_samples_than_the_block():
    Q = laplacian_precision(4, 4)
    m = GaussianLAP(Q).fit(sample(Q, 100, seed=32)).max_neighbourhood_size_  # largest |A| (14)
    # m + 2 centred samples invert the largest block (needs n >= m + 1) but the
    # factor (n - |A| - 2) / n is 0: the correction needs n >= m + 3.
    X = sample(Q, m + 2, seed=32)
    with pytest.raises(
        ValueError, match=rf"bias_correction=True needs at least {m + 3} samples.*bias_correction=False"
    ):
        GaussianLAP(Q).fit(X)
    with pytest.raises(ValueError, match=rf"bias_correction=True needs at least {m + 2} samples.*shrinkage > 0"):
        GaussianLAP(Q, assume_centered=True).fit(X[: m + 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        GaussianLAP(Q, bias_correction=False).fit(X)
        GaussianLAP(Q, assume_centered=True).fit(X)
        GaussianLAP(Q, shrinkage=0.1).fit(X[:5])
        est = GaussianLAP(Q).fit(sample(Q, m + 3, seed=32))
    assert np.all(np.isfinite(est.precision_))


@pytest.mark.parametrize("bias_correction", [False, True])
def test_star_edges_and_hub_are_inverse_sample_covariance_entries(kernel_path, bias_correction):
    # On a star the 1-neighbourhood of every edge (and of the hub) is the whole
    # variable set, so those entries are entries of inv(S); a leaf's diagonal
    # entry comes from its 2-block {leaf, hub}: 1 / Var(x_leaf | x_hub).
    p, n = 7, 200
    X = sample(chain_precision(p), n, seed=33)
    est = GaussianLAP(nx.star_graph(p - 1), bias_correction=bias_correction).fit(X)
    S = np.cov(X.T, bias=True)
    K = np.linalg.inv(S)
    full = (n - p - 2) / n if bias_correction else 1.0
    pair = (n - 2 - 2) / n if bias_correction else 1.0
    P = est.precision_
    # rtol=1e-9: Schur complements versus an explicit inverse, rounding only (cond(S) < 100).
    np.testing.assert_allclose(P[0, 1:], K[0, 1:] * full, rtol=1e-9)
    assert P[0, 0] == pytest.approx(K[0, 0] * full, rel=1e-9)
    leaf = 1.0 / (S.diagonal()[1:] - S[0, 1:] ** 2 / S[0, 0])
    np.testing.assert_allclose(P.diagonal()[1:], leaf * pair, rtol=1e-9)


def test_shrink_repair_is_positive_definite_and_keeps_the_pattern():
    # The example's 12 x 12 Laplacian-squared precision at n = 1000: the raw
    # LAP estimate is not positive definite; "shrink" makes it so, with the
    # same zeros, and then scores (worse than ML, as documented).
    Q = laplacian_precision(12, 12)
    X = sample(Q, 1000, seed=0)
    X_test = sample(Q, 1000, seed=1)
    with pytest.warns(NotPositiveDefiniteWarning, match="scaled its off-diagonal entries"):
        est = GaussianLAP(Q, repair="shrink").fit(X)
    assert 0 < est.repair_factor_ < 1 and est.is_positive_definite_
    np.linalg.cholesky(est.precision_)
    assert np.count_nonzero(est.precision_) == Q.nnz  # still zero outside the graph
    assert np.isfinite(est.score(X_test))
    assert est.score(X_test) < GaussianMaxLikelihood(Q).fit(X).score(X_test)


def test_score_advice_depends_on_the_class():
    Q, X = _indefinite_fit_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        est = GaussianLAP(Q).fit(X)
    with pytest.raises(ValueError, match="repair='shrink', more samples"):
        est.score(X)
    assert "repair" not in GaussianMaxLikelihood._pd_advice  # it has no repair parameter


def test_error_norm_checks_the_shape():
    X = sample(chain_precision(4), 100, seed=35)
    est = GaussianLAP("chain").fit(X)
    with pytest.raises(ValueError, match=r"shape \(3, 3\); expected \(4, 4\)"):
        est.error_norm(np.eye(3))
    assert est.error_norm(est.covariance_) == 0.0


# ---------------------------------------------------------------------------
# Positive definiteness, repair, scoring
# ---------------------------------------------------------------------------
def _indefinite_fit_data():
    # A 10 x 10 Laplacian-squared precision is very ill-conditioned; with few
    # samples the LAP estimate is indefinite.
    Q = laplacian_precision(10, 10)
    return Q, sample(Q, 60, seed=9)


def test_not_positive_definite_warns_and_score_raises():
    Q, X = _indefinite_fit_data()
    with pytest.warns(NotPositiveDefiniteWarning, match="not positive definite"):
        est = GaussianLAP(Q).fit(X)
    assert not est.is_positive_definite_
    assert np.isnan(est.log_partition_)
    assert est.covariance_ is None
    assert est.repair_factor_ == 1.0
    with pytest.raises(ValueError, match="not positive definite"):
        est.score(X)
    assert np.linalg.eigvalsh(est.precision_)[0] < 0  # the warning is not a false alarm


@pytest.mark.parametrize("eigensolver", ["dense", "lanczos"])
def test_repair_shrink(eigensolver, monkeypatch):
    if eigensolver == "lanczos":
        monkeypatch.setattr(spd, "_DENSE_EIG_MAX_FEATURES", 10)
    Q, X = _indefinite_fit_data()
    with pytest.warns(NotPositiveDefiniteWarning, match="repair='shrink'"):
        est = GaussianLAP(Q, repair="shrink").fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        raw = GaussianLAP(Q).fit(X).precision_
    t = est.repair_factor_
    assert 0 < t < 1 and est.is_positive_definite_
    D = np.diag(np.diag(raw))
    # rtol=1e-12: the same shrinkage of the same raw matrix (one multiply-add per entry, a few ulp).
    np.testing.assert_allclose(est.precision_, D + t * (raw - D), rtol=1e-12)
    # The smallest eigenvalue of D^-1/2 P D^-1/2 is REPAIR_MIN_EIGENVALUE (dense
    # eigensolver: to rounding, 1e-12 here) or up to about 2e-4 above it (Lanczos:
    # t is lowered by 2 * tol = 2e-4 relative to cover the estimate's error).
    d = 1 / np.sqrt(np.diag(raw))
    lam = np.linalg.eigvalsh(d[:, None] * est.precision_ * d[None, :])[0]
    target = spd.REPAIR_MIN_EIGENVALUE
    if eigensolver == "dense":
        assert lam == pytest.approx(target, abs=1e-12)
    else:
        assert target - 1e-12 < lam < 1e-3
    assert np.isfinite(est.score(X))


def test_repair_not_applied_when_positive_definite():
    Q = laplacian_precision(5, 5)
    X = sample(Q, 100_000, seed=10)
    est = GaussianLAP(Q, repair="shrink").fit(X)
    assert est.repair_factor_ == 1.0 and est.is_positive_definite_


@pytest.mark.parametrize("Est", [GaussianLAP, GaussianMaxLikelihood])
def test_score_matches_scikit_learn_and_scipy(Est):
    P = chain_precision(8)
    X = sample(P, 3000, seed=11, mean=np.arange(8.0))
    Xtest = sample(P, 50, seed=12, mean=np.arange(8.0))
    est = Est("chain").fit(X)
    dense = est.precision_
    ref = log_likelihood(empirical_covariance(Xtest - est.location_, assume_centered=True), dense)
    # rel=1e-10 here and below: closed forms (log-determinant, quadratic forms) of a chain precision with
    # condition number < 10, against scikit-learn's and scipy's; rounding is ~1e-14.
    assert est.score(Xtest) == pytest.approx(ref, rel=1e-10)
    logpdf = multivariate_normal(est.location_, np.linalg.inv(dense)).logpdf(Xtest)
    np.testing.assert_allclose(est.score_samples(Xtest), logpdf, rtol=1e-10)
    emp = EmpiricalCovariance().fit(X)
    emp.location_, emp.precision_ = est.location_, dense
    np.testing.assert_allclose(est.mahalanobis(Xtest), emp.mahalanobis(Xtest), rtol=1e-10)
    emp.covariance_ = est.covariance_
    C = np.cov(Xtest.T)
    for norm in ("frobenius", "spectral"):
        for scaling in (True, False):
            assert est.error_norm(C, norm=norm, scaling=scaling, squared=False) == pytest.approx(
                emp.error_norm(C, norm=norm, scaling=scaling, squared=False), rel=1e-10
            )
    assert est.get_precision() is est.precision_


def test_sparse_factorisation_path(monkeypatch):
    # Above the thresholds the log-determinant comes from SuperLU and the dense
    # covariance is not stored; both must agree with dense algebra.
    monkeypatch.setattr(_base, "DENSE_MAX_FEATURES", 10)
    monkeypatch.setattr(spd, "_DENSE_FACTOR_MAX_FEATURES", 10)
    Q = laplacian_precision(6, 5)
    X = sample(Q, 50_000, seed=13)
    est = GaussianLAP(Q).fit(X)
    assert est.covariance_ is None
    dense = est.precision_
    sign, logdet = np.linalg.slogdet(dense)
    assert sign > 0
    # rel=1e-10, rtol=1e-9: a sparse LU log-determinant against a dense one (30 x 30, condition < 100:
    # ~1e-13); the log-densities subtract it from quadratic forms, so 1e-9 relative leaves room.
    assert est.log_partition_ == pytest.approx(0.5 * (30 * np.log(2 * np.pi) - logdet), rel=1e-10)
    logpdf = multivariate_normal(est.location_, np.linalg.inv(dense)).logpdf(X[:20])
    np.testing.assert_allclose(est.score_samples(X[:20]), logpdf, rtol=1e-9)
    with pytest.raises(ValueError, match="covariance_ was not stored"):
        est.error_norm(np.eye(30))
    # An indefinite matrix is detected by the sparse path too.
    indefinite = sp.csr_array(Q.toarray() - (np.linalg.eigvalsh(Q.toarray())[0] + 1e-3) * np.eye(30))
    assert spd.logdet_spd(indefinite)[0] is False
    assert spd.logdet_spd(Q)[0] is True


def test_store_covariance():
    P = chain_precision(5)
    X = sample(P, 500, seed=14)
    assert GaussianLAP(store_covariance=False).fit(X).covariance_ is None
    est = GaussianLAP(store_covariance=True).fit(X)
    # atol=1e-10: an inverse times its matrix, eps x condition number (< 10) x 5 terms: ~1e-14.
    np.testing.assert_allclose(est.covariance_ @ est.precision_, np.eye(5), atol=1e-10)


# ---------------------------------------------------------------------------
# GaussianMaxLikelihood
# ---------------------------------------------------------------------------
def _check_ml_conditions(est, X, adjacency, assume_centered=False):
    S = X.T @ X / len(X) if assume_centered else np.cov(X.T, bias=True)
    W = np.linalg.inv(est.precision_)
    rows, cols = np.nonzero(adjacency.toarray() + np.eye(X.shape[1]))
    np.testing.assert_allclose(W[rows, cols], S[rows, cols], rtol=0, atol=1e-8 * S.diagonal().max())
    P = est.precision_
    assert np.all(P[(adjacency.toarray() == 0) & ~np.eye(X.shape[1], dtype=bool)] == 0)


@pytest.mark.parametrize("solver", ["newton", "regression"])
def test_ml_optimality_conditions(solver):
    Q = laplacian_precision(5, 6)
    X = sample(Q, 2000, seed=15)
    est = GaussianMaxLikelihood(Q, solver=solver, max_iter=5000, decrement_tol=None).fit(X)
    assert est.solver_ == solver
    _check_ml_conditions(est, X, resolve_adjacency(Q, 30))
    if solver == "newton":
        # rtol=1e-9: the stored covariance is inv(precision_) up to rounding: eps x condition (~250)
        # over the smallest |entry| relative to the largest (~2e-2): ~1e-12.
        np.testing.assert_allclose(est.covariance_, np.linalg.inv(est.precision_), rtol=1e-9)


@pytest.mark.parametrize("solver", ["newton", "regression"])
def test_ml_optimality_conditions_assume_centered(solver):
    Q = laplacian_precision(4, 5)
    X = sample(Q, 1000, seed=40, mean=np.full(20, 0.5))  # a non-zero mean: centring would matter
    est = GaussianMaxLikelihood(Q, assume_centered=True, solver=solver, max_iter=5000, decrement_tol=None).fit(X)
    np.testing.assert_array_equal(est.location_, 0.0)
    _check_ml_conditions(est, X, resolve_adjacency(Q, 20), assume_centered=True)


def test_ml_regression_stores_covariance_only_when_asked():
    Q = laplacian_precision(4, 4)
    X = sample(Q, 500, seed=41)
    est = GaussianMaxLikelihood(Q, solver="regression", max_iter=5000, store_covariance=False).fit(X)
    assert est.covariance_ is None and est.is_positive_definite_
    est = GaussianMaxLikelihood(Q, solver="regression", max_iter=5000, store_covariance=True).fit(X)
    # rtol=1e-9: the stored covariance is inv(precision_) up to rounding (condition number < 1e4).
    np.testing.assert_allclose(est.covariance_, np.linalg.inv(est.precision_), rtol=1e-9)


def test_ml_regression_not_converged_warning_names_the_sweep_change():
    X = sample(laplacian_precision(4, 4), 500, seed=42)
    with pytest.warns(ConvergenceWarning, match="largest change of the working covariance"):
        GaussianMaxLikelihood(laplacian_precision(4, 4), solver="regression", max_iter=1).fit(X)


def test_ml_random_graph_and_auto_solver():
    G = nx.gnp_random_graph(30, 0.1, seed=16)
    adj = nx.to_scipy_sparse_array(G)
    P = np.eye(30) * 2 + 0.3 * adj.toarray()
    X = sample(P, 500, seed=17)
    est = GaussianMaxLikelihood(G, decrement_tol=None).fit(X)
    assert est.solver_ == "newton"
    _check_ml_conditions(est, X, adj)


def test_ml_chordal_graph_closed_form():
    # On a chain (decomposable) graph the MLE is
    # sum over edges of [S_e^-1]^0 minus sum over inner nodes of [S_ii^-1]^0.
    X = sample(chain_precision(6), 400, seed=18)
    S = np.cov(X.T, bias=True)
    expected = np.zeros((6, 6))
    for i in range(5):
        expected[i : i + 2, i : i + 2] += np.linalg.inv(S[i : i + 2, i : i + 2])
    for i in range(1, 5):
        expected[i, i] -= 1 / S[i, i]
    est = GaussianMaxLikelihood("chain").fit(X)
    # The chordal solver is this closed form (solver_ "chordal", no iterations): rounding only, as above.
    assert est.solver_ == "chordal"
    np.testing.assert_allclose(est.precision_, expected, rtol=1e-9, atol=1e-12)


def test_ml_complete_graph_is_inverse_sample_covariance():
    X = sample(chain_precision(5), 300, seed=19)
    est = GaussianMaxLikelihood("complete").fit(X)
    # A closed form (the chordal solver), like scikit-learn's inverse: rounding x condition (~5) only,
    # so the rtol=1e-9 of the closed forms above (was 1e-8).
    assert est.solver_ == "chordal"
    np.testing.assert_allclose(est.precision_, EmpiricalCovariance().fit(X).precision_, rtol=1e-9)


def test_ml_not_converged_warns():
    Q = laplacian_precision(4, 4)
    X = sample(Q, 200, seed=20)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        GaussianMaxLikelihood(Q, solver="regression", max_iter=1).fit(X)


def test_ml_more_accurate_than_lap_with_many_samples_both_consistent():
    Q = laplacian_precision(5, 5)
    X = sample(Q, 50_000, seed=21)
    Qd = Q.toarray()
    for Est in (GaussianLAP, GaussianMaxLikelihood):
        P = Est(Q).fit(X).precision_
        assert np.linalg.norm(P - Qd) / np.linalg.norm(Qd) < 0.05


# ---------------------------------------------------------------------------
# Graph input forms
# ---------------------------------------------------------------------------
def test_graph_forms_agree():
    p = 12
    G = grid_graph(3, 4)
    edges = list(G.edges)
    adj = nx.to_numpy_array(G)
    X = sample(nx.laplacian_matrix(G).toarray() + 0.5 * np.eye(p), 2000, seed=22)  # pattern = G
    forms = [G, edges, [list(e) for e in edges], adj, sp.csr_array(adj), sp.csr_matrix(adj), "grid:3x4"]
    ref = GaussianLAP(G).fit(X).precision_
    for g in forms:
        est = GaussianLAP(g).fit(X)
        np.testing.assert_array_equal(est.precision_, ref)
        assert est.adjacency_.shape == (p, p) and est.adjacency_.nnz == 2 * len(edges)
    # A weighted, value-asymmetric matrix with a symmetric pattern and a
    # diagonal (e.g. a precision matrix) is used for its off-diagonal pattern.
    weighted = adj * np.random.default_rng(0).uniform(1, 2, adj.shape) + 5 * np.eye(p)
    np.testing.assert_array_equal(GaussianLAP(weighted).fit(X).precision_, ref)
    # A 2-D array is an adjacency matrix (as everywhere in skmrf), not an edge list.
    with pytest.raises(ValueError, match="list of tuples"):
        GaussianLAP(np.array(edges)).fit(X)
    # Cliques contribute all their pairs.
    tri = GaussianLAP([(0, 1, 2)]).fit(X[:, :3])
    assert tri.adjacency_.nnz == 6


def test_graph_by_dataframe_column_names():
    pd = pytest.importorskip("pandas")
    X = sample(chain_precision(4), 300, seed=23)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    G = nx.Graph([("c", "d"), ("a", "b"), ("b", "c")])  # node order differs from the columns
    est = GaussianLAP(G).fit(df)
    ref = GaussianLAP("chain").fit(X)
    # 1e-12: the same graph once resolved, so the same closed-form arithmetic on the same columns.
    np.testing.assert_allclose(est.precision_, ref.precision_, rtol=1e-12)
    assert est.score(df) == pytest.approx(ref.score(X), rel=1e-12)


def test_large_graph_resolves_fast_enough_and_correctly():
    # 100 x 100 lattice from a sparse pattern: vectorised path, no Python loop per edge.
    Q = laplacian_precision(100, 100)
    adj = resolve_adjacency(Q, 10_000)
    assert adj.nnz == Q.nnz - 10_000 and (adj != adj.T).nnz == 0


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("Est", [GaussianLAP, GaussianMaxLikelihood])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_inf_rejected(Est, bad):
    X = sample(chain_precision(5), 50, seed=24)
    X[3, 2] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        Est().fit(X)
    est = Est().fit(sample(chain_precision(5), 50, seed=25))
    with pytest.raises(ValueError, match="NaN|infinity"):
        est.score(X)


@pytest.mark.parametrize("Est", [GaussianLAP, GaussianMaxLikelihood])
def test_too_few_rows(Est):
    Q = laplacian_precision(4, 4)  # largest |A| is 14 (LAP), largest N[i] is 11 (ML)
    X = sample(Q, 8, seed=26)
    with pytest.raises(ValueError, match=r"needs at least \d+ samples"):
        Est(Q).fit(X)
    # Documented alternative: shrinkage makes every block invertible.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = Est(Q, shrinkage=0.5).fit(X)
    assert np.all(np.isfinite(est.precision_))


def test_singular_block_named_in_error(kernel_path):
    X = sample(chain_precision(6), 100, seed=27)
    X[:, 3] = 2 * X[:, 2]  # collinear neighbours
    with pytest.raises(ValueError, match="is singular"):
        GaussianLAP("chain").fit(X)
    X[:, 3] = 1.0  # constant column
    with pytest.raises(ValueError, match="singular|zero variance"):
        GaussianLAP("chain").fit(X)
    with pytest.raises(ValueError, match="zero variance"):
        GaussianMaxLikelihood("chain").fit(X)


@pytest.mark.parametrize("Est", [GaussianLAP, GaussianMaxLikelihood])
def test_graph_does_not_match_X(Est):
    X = sample(chain_precision(5), 50, seed=28)
    with pytest.raises(ValueError, match="shape"):
        Est(np.ones((4, 4))).fit(X)
    with pytest.raises(ValueError, match="nodes but X has 5 columns"):
        Est(nx.path_graph(6)).fit(X)
    with pytest.raises(ValueError, match="X has 5 columns"):
        Est([(0, 7)]).fit(X)
    with pytest.raises(ValueError, match="grid:2x2"):
        Est("grid:2x2").fit(X)
    est = Est().fit(X)
    with pytest.raises(ValueError, match="features"):
        est.score(X[:, :4])


def test_non_symmetric_adjacency():
    X = sample(chain_precision(4), 50, seed=29)
    A = np.zeros((4, 4))
    A[0, 1] = A[1, 0] = A[2, 3] = 1
    with pytest.raises(ValueError, match=r"not symmetric: entry \(2, 3\) is non-zero but \(3, 2\) is zero"):
        GaussianLAP(A).fit(X)
    with pytest.raises(ValueError, match="not symmetric"):
        GaussianMaxLikelihood(sp.csr_array(A)).fit(X)
    with pytest.raises(ValueError, match="undirected"):
        GaussianLAP(nx.DiGraph([(0, 1)])).fit(X[:, :2])


def test_invalid_parameters():
    X = sample(chain_precision(4), 50, seed=30)
    with pytest.raises(ValueError, match="shrinkage"):
        GaussianLAP(shrinkage=1.0).fit(X)
    with pytest.raises(ValueError, match="repair"):
        GaussianLAP(repair="clip").fit(X)
    with pytest.raises(ValueError, match="solver"):
        GaussianMaxLikelihood(solver="glasso").fit(X)


def test_clone_keeps_graph():
    G = nx.path_graph(4)
    est = clone(GaussianLAP(G, shrinkage=0.1))
    assert sorted(est.graph.edges) == sorted(G.edges) and est.shrinkage == 0.1
