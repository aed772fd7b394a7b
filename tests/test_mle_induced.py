"""MLEInducedLikelihood (Liu and Zheng, Sections 2.1-2.3), checked against independent references:
scipy's binomial, dense linear algebra, adaptive quadrature of Eq. 3 and the agreement model's
likelihood enumerated state by state."""

import itertools
import pickle
import warnings

import networkx as nx
import numpy as np
import pytest
from scipy.integrate import IntegrationWarning, quad
from scipy.optimize import minimize, minimize_scalar
from scipy.special import expit, log_expit, log_ndtr, logit, logsumexp
from scipy.stats import binom
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.utils import estimator_checks

from skmrf import ExactMaxLikelihood, LAPEstimator, MLEInducedLikelihood
from skmrf._kernels import coin_tossing as ct
from skmrf.inference._junction_tree import TreewidthError
from skmrf.model import DiscreteMRF, agreement_to_mrf

CYCLE = [(0, 1), (1, 2), (2, 3), (3, 0)]  # the last edge against the sorted order
CHAIN6 = [(i, i + 1) for i in range(5)]  # p = 5


def sample(edges, theta, n, seed=0, n_variables=None):
    """Exact samples of the agreement model with parameters ``theta`` on ``edges``."""
    n_variables = n_variables or 1 + max(max(e) for e in edges)
    model = agreement_to_mrf(theta, edges, n_variables=n_variables, edges=edges)
    return model.sample(n, random_state=seed, method="exact")


@pytest.fixture(scope="module")
def cycle_data():
    return sample(CYCLE, [0.7, 0.6, 0.8, 0.65], 400)


@pytest.fixture(scope="module")
def chain_data():
    return sample(CHAIN6, [0.7, 0.3, 0.8, 0.6, 0.55], 300, seed=1)


@pytest.fixture(scope="module")
def cycle_fit(cycle_data):
    return MLEInducedLikelihood(CYCLE).fit(cycle_data)


# -- Eq. 3 --------------------------------------------------------------------------------------


def test_eta_one_half_is_the_binomial_likelihood():
    # eta0 = 1/2: lambda = theta (Eq. 1), Eq. 3 is the binomial pmf of alpha_0 in n tosses.
    theta = np.array([1e-9, 0.01, 0.3, 0.5, 0.77, 0.999, 1 - 1e-12])
    for a, n in [(0, 5), (3, 10), (600, 1000), (1000, 1000)]:
        got = ct.marginal_log_likelihood_kernel(theta, a, n, 0.5)
        # 1e-12 relative: both are a handful of logs and gammaln terms.
        np.testing.assert_allclose(got, binom.logpmf(a, n, theta), rtol=1e-12, atol=1e-12)


def test_marginal_log_likelihood_equals_the_lambda_form(cycle_fit):
    # Eq. 3 as written in theta (the package) and as log binom + a log lambda + (n - a) log(1 - lambda)
    # with lambda from Eq. 1 in logit form (log_expit), over the whole open interval.
    est = cycle_fit
    theta = np.array([1e-300, 1e-12, 1e-3, 0.2, 0.5, 0.7, 0.9, 1 - 1e-9, np.nextafter(1, 0)])
    j = np.arange(4)[:, None]
    got = est.marginal_log_likelihood(j, theta)
    a, n, eta = est.n_agree_[:, None], est.n_samples_, est.eta0_[:, None]
    w = logit(theta) + logit(eta)  # logit(lambda), Eq. 1
    log_binom = binom.logpmf(a, n, 0.5) + n * np.log(2)
    ref = log_binom + a * log_expit(w) + (n - a) * log_expit(-w)
    # The values reach -3e5; both forms carry an absolute error of a few n * 1e-16.
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-10)


def test_eta0_reproduces_lambda_hat_at_theta_hat(cycle_fit):
    # Eq. 5 inverts Eq. 4: at theta_hat the effect eta0 gives back lambda_hat.
    est = cycle_fit
    lam, th = est.lambda_hat_, est.theta_hat_
    eta = est.eta0_
    # 1e-12: Eq. 5 and Eq. 4 are closed forms of a few operations on numbers in (0, 1) (a few ulp).
    np.testing.assert_allclose(est.eta0_, lam * (1 - th) / (lam + th - 2 * lam * th), rtol=1e-12)
    np.testing.assert_allclose(eta * th / (eta * th + (1 - eta) * (1 - th)), lam, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(est.lambda_hat_, est.n_agree_ / 400)


def test_marginal_likelihood_peaks_at_theta_hat(cycle_fit):
    est = cycle_fit
    for j in range(4):
        res = minimize_scalar(
            lambda t, j=j: -est.marginal_log_likelihood(j, t), bounds=(1e-6, 1 - 1e-6), method="bounded",
            options={"xatol": 1e-12},
        )  # fmt: skip
        # Brent's bounded search on a smooth peak of width ~0.02: its argmax to ~1e-8.
        assert res.x == pytest.approx(est.theta_hat_[j], abs=1e-7)
        # And the peak itself: lower on both sides, flat (zero slope) at theta_hat.
        th = est.theta_hat_[j]
        peak = est.marginal_log_likelihood(j, th)
        assert peak > est.marginal_log_likelihood(j, th - 1e-4)
        assert peak > est.marginal_log_likelihood(j, th + 1e-4)
        h = 1e-6
        slope = (est.marginal_log_likelihood(j, th + h) - est.marginal_log_likelihood(j, th - h)) / (2 * h)
        assert abs(slope) < 1e-4  # vs ~400 per unit of theta at 0.02 from the peak


# -- Eqs. 7-9 -------------------------------------------------------------------------------------


def test_independent_copula_is_the_sum_of_the_marginals(chain_data):
    est = MLEInducedLikelihood(CHAIN6).fit(chain_data)
    theta = np.random.default_rng(0).uniform(0.05, 0.95, (6, 5))
    ref = est.marginal_log_likelihood(np.arange(5), theta).sum(axis=1)
    # A sum of 5 marginal log-likelihoods computed two ways (rounding only).
    np.testing.assert_allclose(est.log_likelihood(theta), ref, rtol=1e-13)


def test_gaussian_copula_with_rho_zero_is_the_independent_copula(chain_data):
    ind = MLEInducedLikelihood(CHAIN6).fit(chain_data)
    gau = MLEInducedLikelihood(CHAIN6, copula="gaussian", rho=0.0).fit(chain_data)
    theta = np.random.default_rng(1).uniform(0.01, 0.99, (10, 5))
    # rho = 0: the copula term is exactly log det(I) = 0 plus u' (I - I) u; rounding only.
    np.testing.assert_allclose(gau.log_likelihood(theta), ind.log_likelihood(theta), rtol=0, atol=1e-12)


@pytest.mark.parametrize("rho", [-0.24, -0.1, 0.05, 0.3, 0.9])
def test_gaussian_copula_against_dense_linear_algebra(chain_data, rho):
    ind = MLEInducedLikelihood(CHAIN6).fit(chain_data)
    gau = MLEInducedLikelihood(CHAIN6, copula="gaussian", rho=rho).fit(chain_data)
    theta = np.random.default_rng(2).uniform(0.05, 0.95, (8, 5))
    u = gau.normal_scores(theta)
    R = np.full((5, 5), rho) + (1 - rho) * np.eye(5)
    log_c = -0.5 * np.linalg.slogdet(R)[1] - 0.5 * np.einsum("ki,ij,kj->k", u, np.linalg.inv(R) - np.eye(5), u)
    # Closed forms against LU and an explicit inverse (condition number <= 50 here): rounding only.
    np.testing.assert_allclose(gau.log_likelihood(theta) - ind.log_likelihood(theta), log_c, rtol=1e-11, atol=1e-11)


# -- F_j and the normal scores -----------------------------------------------------------------


def _log_l(s, a, n, eta, upper):
    """Eq. 3 without its binomial coefficient, in s = theta, or in s = 1 - theta when ``upper``
    (then 1 - theta is the argument itself, exact however close theta is to 1)."""
    t, r = (1 - s, s) if upper else (s, 1 - s)
    return a * np.log(t) + (n - a) * np.log(r) - n * np.log(eta * t + (1 - eta) * r)


def _d_log_l(s, a, n, eta, upper):
    t, r = (1 - s, s) if upper else (s, 1 - s)
    d = a / t - (n - a) / r - n * (2 * eta - 1) / (eta * t + (1 - eta) * r)
    return -d if upper else d


def reference_log_tail(theta, a, n, eta):
    """``log F(theta)`` below the mode and ``log(1 - F(theta))`` above it, by scipy's adaptive
    quadrature of Eq. 3 over theta (no package code). Each integrand is scaled by its peak on
    the interval; ``quad`` gets breakpoints at the mode, at 1..40 widths around it, and at
    geometrically growing distances below the query, where the integrand rises to its peak."""
    mode = expit(logit(a / n) - logit(eta))  # Eq. 3 peaks where lambda = a / n
    upper = theta > mode
    s_q, s_m = (1 - theta, 1 - mode) if upper else (theta, mode)
    width = mode * (1 - mode) / np.sqrt(n * (a / n) * (1 - a / n) + 1)

    def integral(lo, hi, at, extra=()):
        pts = np.concatenate([s_m + width * np.arange(-40, 41), list(extra)])
        pts = np.unique(pts[(pts > lo) & (pts < hi)])[:100]
        ref = _log_l(at, a, n, eta, upper)
        f = lambda s: np.exp(_log_l(s, a, n, eta, upper) - ref)  # noqa: E731
        return ref + np.log(quad(f, lo, hi, points=pts if len(pts) else None, epsabs=0, epsrel=1e-13, limit=2000)[0])

    log_z = np.logaddexp(integral(0, s_m, s_m), integral(s_m, 1, s_m))
    slope = abs(_d_log_l(s_q, a, n, eta, upper))
    below = s_q - 2.0 ** np.arange(0, 40) / slope if slope > 0 else ()
    return integral(0, s_q, s_q, below) - log_z, not upper


# (alpha_0, n, eta0): the sizes of the paper's experiments, and the extremes (one agreement,
# one disagreement, n = 2, eta0 near 0 and 1).
CDF_CASES = [
    (600, 1000, 0.3),
    (700, 1000, 0.97),
    (500, 1000, 0.001),
    (5000, 10000, 0.5),
    (3, 1000, 0.9),
    (1, 50, 0.5),
    (49, 50, 0.2),
    (10, 20, 0.6),
    (1, 2, 0.5),
]


@pytest.mark.parametrize("a,n,eta", CDF_CASES)
def test_cdf_against_adaptive_quadrature(a, n, eta):
    tab = ct.score_tables(np.array([a]), n, np.array([eta]))
    z_mode = tab.z_mode[0]
    c = logit(eta)
    sigma = 1 / np.sqrt(n * expit(z_mode + c) * (1 - expit(z_mode + c)) + 2 * expit(z_mode) * (1 - expit(z_mode)))
    z = z_mode + sigma * np.concatenate([np.linspace(-6, 6, 13), [-30, -20, -12, 12, 20, 30]])
    theta = expit(z)
    theta = theta[(theta > 0) & (theta < 1)]
    u = ct.normal_scores(logit(theta), tab, clip=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)  # epsrel=1e-13 is at quad's limit
        ref = [reference_log_tail(t, a, n, eta) for t in theta]
    for t, ui, (log_tail, lower) in zip(theta, u, ref):
        if log_tail < -700:
            continue  # beyond Phi(-37.5): clipped
        got = log_ndtr(ui) if lower else log_ndtr(-ui)
        # Absolute error in log(tail) = relative error of F (or 1 - F). The reference is good to
        # ~1e-12; the interpolated u to ~5e-12, i.e. ~(|u| + 1) 5e-12 relative in the tail: in the
        # body (tail >= 1e-9) 1e-10 leaves a margin of ten, in the far tails 1e-9.
        tol = 1e-10 if log_tail > np.log(1e-9) else 1e-9
        assert abs(got - log_tail) <= tol, (t, got, log_tail)


def test_public_marginal_cdf_against_quadrature(cycle_fit):
    est = cycle_fit
    theta = np.linspace(0.45, 0.9, 10)
    F = est.marginal_cdf(np.arange(4)[:, None], theta)
    assert F.shape == (4, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        for j in range(4):
            for t, f in zip(theta, F[j]):
                log_tail, lower = reference_log_tail(t, est.n_agree_[j], est.n_samples_, est.eta0_[j])
                ref = np.exp(log_tail) if lower else -np.expm1(log_tail)
                # Relative error of the smaller of F and 1 - F below 1e-10 (see above), so F itself
                # is within 1e-10 relative (or absolute where F is near 1).
                assert f == pytest.approx(ref, rel=1e-10, abs=1e-12 if lower else 1e-10)


@pytest.mark.parametrize("a,n,eta", CDF_CASES)
def test_interpolated_scores_match_the_quadrature(a, n, eta):
    # The per-query polynomial against the fit-time quadrature it interpolates, at many points
    # (the quadrature itself is checked against scipy above).
    tab = ct.score_tables(np.array([a]), n, np.array([eta]))
    quad_tab = ct.quadrature_tables(np.array([a]), n, np.array([eta]))
    zb = quad_tab.breakpoints[0]
    z = np.sort(np.random.default_rng(0).uniform(zb[0], zb[-1], 4000))
    z = np.concatenate([z, tab.z_mode + np.linspace(-1e-7, 1e-7, 21)])[:, None]  # around the mode
    u = ct.normal_scores(z, tab, clip=False)
    exact = ct._exact_scores(z, quad_tab)
    inside = np.abs(exact) < ct.U_CLIP
    # Measured max 5e-12 over these cases (the rounding of the quadrature's log F at |u| ~ 37).
    np.testing.assert_allclose(u[inside], exact[inside], rtol=0, atol=2e-11)


def test_normal_scores_are_finite_and_monotone_on_the_open_interval(cycle_fit):
    est = cycle_fit
    tiny = np.nextafter(0, 1)
    theta = np.concatenate([[tiny, 1e-300, 1e-100, 1e-20], np.linspace(1e-6, 1 - 1e-6, 2001), [1 - 1e-12, 1 - 1e-16]])
    theta = np.append(theta, np.nextafter(1, 0))
    u = est.normal_scores(np.repeat(theta[:, None], 4, axis=1))
    assert np.all(np.isfinite(u))
    assert np.all(np.abs(u) <= 37.5)
    assert np.all(np.diff(u, axis=0) >= -1e-12)  # F is increasing
    assert u[0].tolist() == [-37.5] * 4 and u[-1].tolist() == [37.5] * 4
    F = est.marginal_cdf(np.arange(4), np.array([tiny, np.nextafter(1, 0)])[:, None])
    assert F[0].tolist() == [0.0] * 4 and F[1].tolist() == [1.0] * 4


@pytest.mark.parametrize("copula,rho", [("independent", 0.0), ("gaussian", 0.1), ("gaussian", -0.2)])
def test_log_likelihood_is_vectorised_over_leading_axes(cycle_fit, cycle_data, copula, rho):
    est = cycle_fit if copula == "independent" else MLEInducedLikelihood(CYCLE, copula=copula, rho=rho).fit(cycle_data)
    theta = np.random.default_rng(3).uniform(0.02, 0.98, (3, 7, 4))
    got = est.log_likelihood(theta)
    assert got.shape == (3, 7)
    loop = np.array([[est.log_likelihood(theta[i, k]) for k in range(7)] for i in range(3)])
    np.testing.assert_allclose(got, loop, rtol=1e-14)  # summation order at most
    assert np.ndim(est.log_likelihood(theta[0, 0])) == 0
    assert est.log_likelihood(theta[:0]).shape == (0, 7)


# -- the MLE --------------------------------------------------------------------------------------


def brute_force_agreement_mle(X, edges):
    """Maximise sum_j n_agree_j logit(theta_j) + n sum_j log(1 - theta_j) - n log Z(theta) over
    the 2^d states, in eta = logit(theta) (no package code)."""
    n, d = X.shape
    states = np.array(list(itertools.product([0, 1], repeat=d)))
    agree = np.array([[s[u] == s[v] for u, v in edges] for s in states], dtype=float)  # (2^d, p)
    counts = np.array([np.sum(X[:, u] == X[:, v]) for u, v in edges], dtype=float)

    def negative(eta):
        log_rest = log_expit(-eta)  # log(1 - theta)
        log_z = logsumexp(agree @ eta) + log_rest.sum()
        f = counts @ eta + n * log_rest.sum() - n * log_z
        p = np.exp(agree @ eta - logsumexp(agree @ eta))
        return -f, -(counts - n * agree.T @ p)

    res = minimize(negative, np.zeros(len(edges)), jac=True, method="BFGS", options={"gtol": 1e-10})
    return expit(res.x)


def mle_distance_bound(est):
    """How far the fitted MLE's parameters can be from the optimum: sqrt(d) tol / lambda_min.

    The exact kernel stops at a gradient (of the mean log-likelihood) <= tol = MLE_TOL = 1e-7; with the
    smallest Hessian eigenvalue lambda_min (~0.02 here) that is ~1e-5 in the couplings, and theta =
    expit(J / 2) moves by at most 1/8 of it. A tolerance from the stopping rule, not from one machine's result.
    """
    from skmrf._kernels.exact import exact_hessian
    from skmrf._kernels.mle_induced import MLE_TOL

    model = est.mle_
    lam = np.linalg.eigvalsh(exact_hessian(model, model.theta)).min()
    return np.sqrt(model.n_params) * MLE_TOL / lam


def test_default_mle_is_the_agreement_model_mle(cycle_data, cycle_fit):
    # The full binary pairwise MLE on [X; 1 - X] is the agreement-model MLE of X (flip symmetry
    # and uniqueness). ExactMaxLikelihood stops at a gradient of 1e-7, so theta_hat within
    # mle_distance_bound / 8 (~1.6e-6; a flat 1e-6 was below that); BFGS's gtol=1e-10 adds nothing.
    assert cycle_fit.mle_source_ == "exact"
    bound = mle_distance_bound(cycle_fit)
    ref = brute_force_agreement_mle(cycle_data, CYCLE)
    np.testing.assert_allclose(cycle_fit.theta_hat_, ref, rtol=0, atol=bound / 8)
    # On the symmetrised data the fitted model has (to solver precision) no node potentials: both sides
    # are couplings-scale parameters of the fit, within the bound of the optimum where they agree.
    model = cycle_fit.mle_
    unary = np.array([model.potential((i,)).item() for i in range(4)])
    implied = -np.array([sum(logit(t) for t, e in zip(cycle_fit.theta_hat_, CYCLE) if i in e) for i in range(4)])
    np.testing.assert_allclose(unary, implied, rtol=0, atol=3 * bound)  # a unary and two couplings


def test_on_a_tree_the_mle_is_the_agreement_rate(chain_data):
    # A tree's agreement indicators are independent Bernoulli(theta_j): theta_hat = lambda_hat, eta0 = 1/2.
    # theta_hat within mle_distance_bound / 8 of lambda_hat (~1.8e-6; a flat 1e-6 was below that), and
    # eta0 = lambda (1 - theta) / (lambda + theta - 2 lambda theta) moves by 1 / (4 lambda (1 - lambda))
    # <= 1.2 times theta's error for these rates (0.3 to 0.8).
    est = MLEInducedLikelihood(CHAIN6).fit(chain_data)
    bound = mle_distance_bound(est) / 8
    np.testing.assert_allclose(est.theta_hat_, est.lambda_hat_, rtol=0, atol=bound)
    np.testing.assert_allclose(est.eta0_, 0.5, rtol=0, atol=1.2 * bound)


def test_a_fitted_estimator_with_node_potentials_warns(cycle_data):
    X = cycle_data.copy()
    X[:150, 0] = 0  # column 0 biased towards 0: the full-family MLE has node potentials
    fitted = ExactMaxLikelihood(CYCLE, alpha=0.0).fit(X)
    with pytest.warns(UserWarning, match="node potentials.*Only its couplings are used.*flip-symmetrised"):
        est = MLEInducedLikelihood(CYCLE, mle=fitted).fit(X)
    assert est.mle_ is fitted.model_ and est.mle_source_ == "fitted"
    couplings = np.array([fitted.model_.potential(e).item() for e in CYCLE])
    # The same formula on the same couplings in this process (a few ulp at most).
    np.testing.assert_allclose(est.theta_hat_, expit(couplings / 2), rtol=1e-15)
    # Fitted on the symmetrised data it is an agreement model: no warning, same theta_hat as mle=None.
    sym = ExactMaxLikelihood(CYCLE, alpha=0.0).fit(np.vstack([X, 1 - X]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est2 = MLEInducedLikelihood(CYCLE, mle=sym).fit(X)
    # The same ExactMaxLikelihood fit on the same symmetrised data as mle=None runs: rounding only.
    np.testing.assert_allclose(est2.theta_hat_, MLEInducedLikelihood(CYCLE).fit(X).theta_hat_, atol=1e-9)


def test_unfitted_and_frozen_estimators(cycle_data, cycle_fit):
    lap = LAPEstimator("chain", alpha=0.0)  # its graph is replaced by the estimator's
    est = MLEInducedLikelihood(CYCLE, mle=lap).fit(cycle_data)
    assert est.mle_source_ == "LAPEstimator"
    assert not hasattr(lap, "model_")
    assert est.mle_.graph.edges == cycle_fit.graph_.edges
    # LAP's 1-neighbourhoods of a 4-cycle are the whole graph: the exact MLE, each fit within its
    # stopping rule of it (LAP's Newton at 1e-8, ExactMaxLikelihood's bound / 8 ~ 1.6e-6; a flat 1e-6 was below).
    np.testing.assert_allclose(est.theta_hat_, cycle_fit.theta_hat_, rtol=0, atol=2 * mle_distance_bound(cycle_fit) / 8)
    fitted = ExactMaxLikelihood(CYCLE, alpha=0.0).fit(np.vstack([cycle_data, 1 - cycle_data]))
    frozen = FrozenEstimator(fitted)
    est = clone(MLEInducedLikelihood(CYCLE, mle=frozen)).fit(cycle_data)  # clone keeps it fitted
    np.testing.assert_array_equal(est.theta_hat_, cycle_fit.theta_hat_)


def test_lap_when_the_junction_tree_does_not_fit(cycle_data, monkeypatch):
    def too_wide(self, max_bytes=None):
        raise TreewidthError("too wide")

    monkeypatch.setattr(DiscreteMRF, "get_junction_tree", too_wide)
    est = MLEInducedLikelihood(CYCLE).fit(cycle_data)
    assert est.mle_source_ == "lap"


# -- edges and their order --------------------------------------------------------------------------


def test_edge_order_follows_the_graph():
    X = sample([(0, 1), (1, 2), (2, 3)], [0.7, 0.6, 0.8], 200)
    given = [(2, 3), (1, 0), (1, 2)]
    est = MLEInducedLikelihood(given).fit(X)
    assert est.edges_.tolist() == [[2, 3], [1, 0], [1, 2]]
    assert est.n_agree_.tolist() == [int(np.sum(X[:, u] == X[:, v])) for u, v in given]
    ref = MLEInducedLikelihood("chain").fit(X)  # sorted: (0, 1), (1, 2), (2, 3)
    perm = [2, 0, 1]
    # The same graph once resolved, so the same fit; only the order of the reported edges differs.
    np.testing.assert_allclose(est.theta_hat_, ref.theta_hat_[perm], atol=1e-9)
    theta = np.array([0.6, 0.7, 0.65])
    assert est.log_likelihood(theta[perm]) == pytest.approx(ref.log_likelihood(theta), rel=1e-12)
    G = nx.Graph()
    G.add_nodes_from("abcd")
    G.add_edges_from([("c", "d"), ("b", "a"), ("c", "b")])
    est = MLEInducedLikelihood(G).fit(X)
    col = {v: i for i, v in enumerate("abcd")}
    assert est.edges_.tolist() == [[col[u], col[v]] for u, v in G.edges]
    adjacency = nx.to_numpy_array(nx.path_graph(4))
    assert MLEInducedLikelihood(adjacency).fit(X).edges_.tolist() == [[0, 1], [1, 2], [2, 3]]


def test_dataframe_columns_name_the_edges():
    pd = pytest.importorskip("pandas")
    X = sample([(0, 1), (1, 2)], [0.7, 0.6], 100)
    df = pd.DataFrame(X, columns=["x", "y", "z"])
    est = MLEInducedLikelihood([("z", "y"), ("x", "y")]).fit(df)
    assert est.edges_.tolist() == [[2, 1], [0, 1]]
    assert list(est.feature_names_in_) == ["x", "y", "z"]


# -- bad input ----------------------------------------------------------------------------------------


def test_rho_outside_the_positive_definite_range(chain_data):
    for rho in [-0.25, -0.3, 1.0, 1.5, np.nan]:
        with pytest.raises(ValueError, match=r"rho=.* is outside \(-1/\(p-1\), 1\) = \(-0\.25, 1\) for p=5 edges"):
            MLEInducedLikelihood(CHAIN6, copula="gaussian", rho=rho).fit(chain_data)
    with pytest.raises(ValueError, match="rho=0.1 .*needs copula='gaussian'"):
        MLEInducedLikelihood(CHAIN6, rho=0.1).fit(chain_data)
    with pytest.raises(ValueError, match="The 'copula' parameter of MLEInducedLikelihood must be"):
        MLEInducedLikelihood(CHAIN6, copula="clayton").fit(chain_data)
    with pytest.raises(ValueError, match="The 'rho' parameter"):
        MLEInducedLikelihood(CHAIN6, copula="gaussian", rho="0.1").fit(chain_data)


def test_theta_outside_the_open_interval(cycle_fit):
    est = cycle_fit
    for bad in [0.0, 1.0, -0.2, 1.5, np.nan, np.inf]:
        with pytest.raises(ValueError, match=r"theta\[2\] = .* outside the open interval \(0, 1\)"):
            est.log_likelihood([0.5, 0.6, bad, 0.7])
    batch = np.full((2, 3, 4), 0.5)
    batch[1, 2, 3] = 1.0
    with pytest.raises(ValueError, match=r"theta\[1, 2, 3\]"):
        est.log_likelihood(batch)
    with pytest.raises(ValueError, match=r"theta\[0\] = 0\.0"):
        est.normal_scores([0.0, 0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match=r"theta_j\[1\] = 1\.5"):
        est.marginal_log_likelihood([0, 1], [0.5, 1.5])
    with pytest.raises(ValueError, match=r"theta_j\[0\]"):
        est.marginal_cdf(1, 0.0)
    with pytest.raises(ValueError, match="4 entries"):
        est.log_likelihood([0.5, 0.5])
    with pytest.raises(ValueError, match="Edge index 4 is out of range: there are 4 edges"):
        est.marginal_log_likelihood(4, 0.5)
    with pytest.raises(ValueError, match="integer edge index"):
        est.marginal_cdf(1.0, 0.5)


def test_non_binary_data_names_the_column(cycle_data):
    X = cycle_data.copy()
    X[7, 3] = 2
    with pytest.raises(ValueError, match="binary data .*column 3 has the value 2 at row 7"):
        MLEInducedLikelihood(CYCLE).fit(X)
    with pytest.raises(ValueError, match=r"column 1 has the value 0\.5 at row 0"):
        MLEInducedLikelihood(CYCLE).fit(np.where(np.arange(4) == 1, 0.5, cycle_data.astype(float)))


def test_graph_errors(cycle_data):
    with pytest.raises(ValueError, match=r"pairwise graph .*clique \(0, 1, 2\) has 3 variables"):
        MLEInducedLikelihood([(0, 1, 2), (2, 3)]).fit(cycle_data)
    with pytest.raises(ValueError, match=r"Edge \(1, 0\) repeats edge \(0, 1\)"):
        MLEInducedLikelihood([(0, 1), (1, 2), (1, 0)]).fit(cycle_data)
    with pytest.raises(ValueError, match="no edges"):
        MLEInducedLikelihood().fit(cycle_data[:, :1])


def test_an_edge_whose_ends_always_agree_or_disagree(cycle_data):
    X = cycle_data.copy()
    X[:, 2] = X[:, 1]
    with pytest.raises(ValueError, match=r"edge \(1, 2\) agree in all 400 rows.*boundary.*Eq\. 5"):
        MLEInducedLikelihood(CYCLE).fit(X)
    X[:, 2] = 1 - X[:, 1]
    with pytest.raises(ValueError, match=r"edge \(1, 2\) disagree in all 400 rows"):
        MLEInducedLikelihood(CYCLE).fit(X)


def test_mle_errors(cycle_data):
    with pytest.raises(ValueError, match="The 'mle' parameter"):
        MLEInducedLikelihood(CYCLE, mle="exact").fit(cycle_data)
    chain = ExactMaxLikelihood("chain").fit(cycle_data)
    with pytest.raises(ValueError, match=r"graph differs.*edges \[\(0, 3\)\] are missing"):
        MLEInducedLikelihood(CYCLE, mle=chain).fit(cycle_data)
    with pytest.raises(ValueError, match="FrozenEstimator of an unfitted"):
        MLEInducedLikelihood(CYCLE, mle=FrozenEstimator(ExactMaxLikelihood())).fit(cycle_data)


# -- scikit-learn conventions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [
        estimator_checks.check_no_attributes_set_in_init,
        estimator_checks.check_parameters_default_constructible,
        estimator_checks.check_get_params_invariance,
        estimator_checks.check_set_params,
        estimator_checks.check_estimator_cloneable,
        estimator_checks.check_estimator_repr,
        estimator_checks.check_do_not_raise_errors_in_init_or_set_params,
    ],
)
def test_sklearn_checks_that_apply(check):
    check("MLEInducedLikelihood", MLEInducedLikelihood(CYCLE, copula="gaussian", rho=0.1))


def test_clone_get_params_and_refit(cycle_data, cycle_fit):
    est = MLEInducedLikelihood(CYCLE, copula="gaussian", rho=0.05, mle=LAPEstimator(alpha=0.0))
    assert set(est.get_params(deep=False)) == {"graph", "copula", "rho", "mle", "degenerate_edges"}
    twin = clone(est)
    assert twin.get_params(deep=False)["rho"] == 0.05 and twin.mle is not est.mle
    with pytest.raises(NotFittedError):
        twin.log_likelihood([0.5] * 4)
    first = twin.fit(cycle_data)
    assert first is twin
    theta = np.array([[0.6, 0.5, 0.7, 0.6], [0.3, 0.9, 0.5, 0.55]])
    before = twin.log_likelihood(theta)
    np.testing.assert_array_equal(twin.fit(cycle_data).log_likelihood(theta), before)


@pytest.mark.parametrize("kind", ["int", "float", "readonly"])
def test_fit_does_not_modify_X(cycle_data, kind):
    X = cycle_data.astype(np.float64) if kind == "float" else cycle_data.copy()
    if kind == "readonly":
        X.flags.writeable = False
    before = X.copy()
    MLEInducedLikelihood(CYCLE, copula="gaussian", rho=0.1).fit(X)
    np.testing.assert_array_equal(X, before)
    assert X.dtype == before.dtype


@pytest.mark.parametrize("copula,rho", [("independent", 0.0), ("gaussian", 0.2)])
def test_pickle_round_trip(cycle_data, copula, rho):
    est = MLEInducedLikelihood(CYCLE, copula=copula, rho=rho).fit(cycle_data)
    back = pickle.loads(pickle.dumps(est))
    theta = np.random.default_rng(4).uniform(0.05, 0.95, (5, 4))
    np.testing.assert_array_equal(back.log_likelihood(theta), est.log_likelihood(theta))
    np.testing.assert_array_equal(back.theta_hat_, est.theta_hat_)
