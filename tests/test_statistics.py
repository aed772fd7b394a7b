"""Statistics of maximum-likelihood fits: deviance, AIC, BIC, standard errors, likelihood-ratio tests.

References: finite differences of the log-likelihood (every standard error is the square root of
a diagonal entry of the inverse negative Hessian), hand computations of the saturated model, and
R (``MASS::loglm`` / ``glm`` on ``HairEyeColor``, ``ggm::fitConGraph`` on ``marks``), whose
printed values are copied below with the call that printed them.

Finite-difference tolerances: a central second difference with step ``h`` has truncation error
``O(h^2)`` times the fourth derivative (cumulants of indicators: of order ``N``) and rounding
error ``eps |f| / h^2``; at ``h = 1e-4`` and ``|f| ~ 1e3`` both are below ``1e-6`` of the
Hessian's entries (of order ``N / 10``), so standard errors agree to ``1e-5`` relative.
"""

import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2

from skmrf import (
    DecomposedEM,
    ExactMaxLikelihood,
    GaussianMaxLikelihood,
    LAPEstimator,
    PseudoLikelihoodEstimator,
    covariance_selection,
    grid_graph,
)
from skmrf._kernels.gaussian.max_likelihood import pattern_unknowns
from skmrf.datasets import make_random_mrf
from skmrf.exceptions import DiscreteDataWarning, PenalisedFitWarning
from skmrf.metrics import likelihood_ratio_test

FD_RTOL = 1e-5
H = 1e-4
GRAPH = [(0, 1), (1, 2), (2, 3), (0, 3)]


def hessian_fd(f, x0):
    """Central second differences of ``f`` at ``x0``."""
    n = len(x0)
    out = np.empty((n, n))
    for a in range(n):
        for b in range(a, n):
            ea, eb = np.eye(n)[a] * H, np.eye(n)[b] * H
            out[a, b] = out[b, a] = (f(x0 + ea + eb) - f(x0 + ea - eb) - f(x0 - ea + eb) + f(x0 - ea - eb)) / (
                4 * H * H
            )
    return out


def inverse_sd(hess):
    return np.sqrt(np.diag(np.linalg.inv(-hess)))


@pytest.fixture(scope="module")
def data():
    model = make_random_mrf(GRAPH, [2, 3, 2, 3], n_variables=4, random_state=0)
    X = model.sample(600, random_state=1, method="exact")
    weight = np.random.default_rng(2).integers(1, 4, len(X)).astype(float)
    return X, weight


def test_exact_standard_errors_are_the_inverse_hessian(data):
    X, weight = data
    est = ExactMaxLikelihood(GRAPH, alpha=0, tol=1e-10).fit(X, sample_weight=weight)
    theta = est.theta_.copy()

    def ll(t):
        est.model_.theta = t
        return weight @ est.model_.log_prob(X)

    ref = inverse_sd(hessian_fd(ll, theta))
    est.model_.theta = theta
    np.testing.assert_allclose(est.standard_errors(X, sample_weight=weight), ref, rtol=FD_RTOL)


def test_incomplete_standard_errors_are_the_inverse_hessian(data):
    X, _ = data
    Xm = X.astype(float)
    Xm[np.random.default_rng(3).random(X.shape) < 0.25] = np.nan
    est = DecomposedEM(GRAPH, alpha=0, tol=1e-10).fit(Xm)
    theta = est.theta_.copy()

    def ll(t):
        est.model_.theta = t
        est.log_partition_ = est.model_.log_partition()
        return est.score_samples(Xm).sum()

    ref = inverse_sd(hessian_fd(ll, theta))
    est.model_.theta, est.log_partition_ = theta, est.model_.log_partition()
    se = est.standard_errors(Xm)
    np.testing.assert_allclose(se, ref, rtol=FD_RTOL)
    # Missing entries lose information: every error is larger than with the complete rows.
    full = ExactMaxLikelihood(GRAPH, alpha=0, tol=1e-10).fit(X)
    assert np.all(se > full.standard_errors(X))


def test_pseudo_likelihood_sandwich_equals_finite_differences(data):
    X, weight = data
    est = PseudoLikelihoodEstimator(GRAPH, alpha=0, tol=1e-10).fit(X, sample_weight=weight)
    theta = est.theta_.copy()

    def rows(t):
        est.model_.theta = t
        return est.model_.log_pseudo_likelihood(X)

    hess = hessian_fd(lambda t: weight @ rows(t), theta)
    grads = np.column_stack([(rows(theta + e) - rows(theta - e)) / (2 * H) for e in np.eye(len(theta)) * H])
    est.model_.theta = theta
    J = grads.T @ (weight[:, None] * grads)
    Hinv = np.linalg.inv(-hess)
    ref = np.sqrt(np.diag(Hinv @ J @ Hinv))
    np.testing.assert_allclose(est.standard_errors(X, sample_weight=weight), ref, rtol=FD_RTOL)


def test_pseudo_likelihood_sandwich_matches_the_spread_of_estimates():
    # On a 3 x 3 grid, 40 fits of 1000 fresh rows: the sandwich's standard error against the
    # standard deviation of the estimates. Each sd from 40 replicates has a relative standard
    # error of 1 / sqrt(78) = 0.11; their mean ratio over 21 parameters is within 3 of those.
    model = make_random_mrf(grid_graph(3, 3), 2, scale=0.5, random_state=0)
    fits, errors = [], []
    for seed in range(40):
        X = model.sample(1000, random_state=seed, method="exact")
        est = PseudoLikelihoodEstimator(grid_graph(3, 3), alpha=0).fit(X)
        fits.append(est.theta_.copy())
        errors.append(est.standard_errors(X))
    ratio = np.std(fits, axis=0, ddof=1) / np.mean(errors, axis=0)
    assert abs(ratio.mean() - 1) < 3 * 0.11 / np.sqrt(len(ratio)) + 0.05


def test_gaussian_standard_errors_are_the_inverse_hessian():
    rng = np.random.default_rng(0)
    P = np.array([[2, -0.8, 0, -0.3], [-0.8, 2, -0.8, 0], [0, -0.8, 2, -0.5], [-0.3, 0, -0.5, 2.0]])
    X = rng.multivariate_normal(np.zeros(4), np.linalg.inv(P), 400) * [1, 3, 0.5, 2]
    edges = [(0, 1), (1, 2), (2, 3), (0, 3)]
    est = GaussianMaxLikelihood(edges, tol=1e-12, decrement_tol=None).fit(X)
    K0 = np.asarray(est.precision_)
    rows, cols = pattern_unknowns(est.adjacency_)
    S = np.cov(X.T, bias=True)

    def ll(x):
        K = np.zeros((4, 4))
        K[rows, cols] = K[cols, rows] = x
        return 0.5 * len(X) * (np.linalg.slogdet(K)[1] - np.trace(S @ K))

    se = est.standard_errors(X)
    ref = inverse_sd(hessian_fd(ll, K0[rows, cols]))
    np.testing.assert_allclose(se[rows, cols], ref, rtol=FD_RTOL)
    np.testing.assert_array_equal(se, se.T)
    assert se[0, 2] == 0 and se[1, 3] == 0  # fixed at zero by the graph


def test_deviance_aic_bic_and_n_params_by_hand(data):
    X, weight = data
    est = ExactMaxLikelihood(GRAPH, alpha=0, tol=1e-10).fit(X, sample_weight=weight)
    counts = Counter()
    for row, w in zip(map(tuple, X), weight):
        counts[row] += w
    N = weight.sum()
    saturated = sum(n * np.log(n / N) for n in counts.values())
    ll = weight @ est.score_samples(X)
    assert est.n_params_ == (1 + 2 + 1 + 2) + (2 + 2 + 2 + 2) == len(est.theta_)  # states 2, 3, 2, 3
    assert est.deviance(X, weight) == pytest.approx(2 * (saturated - ll), rel=1e-12)
    assert est.aic(X, weight) == pytest.approx(-2 * ll + 2 * est.n_params_, rel=1e-12)
    assert est.bic(X, weight) == pytest.approx(-2 * ll + est.n_params_ * np.log(N), rel=1e-12)
    # Integer weights are repeated rows.
    repeated = np.repeat(X, weight.astype(int), axis=0)
    assert est.deviance(repeated) == pytest.approx(est.deviance(X, weight), rel=1e-10)


def test_incomplete_deviance_uses_each_patterns_saturated_model():
    X = np.array([[0, 1], [0, 1], [1, 1], [0, 0], [1, 0], [1, 1], [0, np.nan], [1, np.nan], [1, np.nan], [np.nan, 0]])
    est = DecomposedEM("chain", alpha=0, tol=1e-10).fit(X)
    # Patterns: complete rows (6: counts 2, 2, 1, 1), x1 missing (3: counts 1, 2), x0 missing (1).
    saturated = 2 * np.log(2 / 6) * 2 + 2 * np.log(1 / 6) + np.log(1 / 3) + 2 * np.log(2 / 3) + 0.0
    assert est.deviance(X) == pytest.approx(2 * (saturated - est.score_samples(X).sum()), rel=1e-10)
    assert est.deviance(X) >= -1e-9
    # A row entirely missing counts in neither the likelihood nor n.
    more = np.vstack([X, [np.nan, np.nan]])
    assert est.bic(more) == pytest.approx(est.bic(X), rel=1e-12)


# R 4.x, MASS 7.3: HairEyeColor as a data frame (Hair, Eye, Sex, Freq), levels in R's order.
HAIR_EYE_SEX_FREQ = [32, 53, 10, 3, 11, 50, 10, 30, 10, 25, 7, 5, 3, 15, 7, 8,
                     36, 66, 16, 4, 9, 34, 7, 64, 5, 29, 7, 5, 2, 14, 7, 8]  # fmt: skip


@pytest.fixture(scope="module")
def hair_eye_color():
    hair, eye, sex = np.meshgrid(np.arange(4), np.arange(4), np.arange(2), indexing="ij")
    X = np.column_stack(
        [hair.transpose(2, 1, 0).ravel(), eye.transpose(2, 1, 0).ravel(), sex.transpose(2, 1, 0).ravel()]
    )
    return X, np.array(HAIR_EYE_SEX_FREQ, dtype=float)


def test_log_linear_analysis_matches_r(hair_eye_color):
    X, freq = hair_eye_color
    big = ExactMaxLikelihood([(0, 1), (0, 2)], alpha=0, tol=1e-10).fit(X, sample_weight=freq)
    small = ExactMaxLikelihood([(0, 1), (2,)], alpha=0, tol=1e-10).fit(X, sample_weight=freq)
    # loglm(~ Hair*Eye + Hair*Sex, data = HairEyeColor): $lrt 11.763722868927, $df 12. glm's
    # deviance converges to ~1e-8 relative (its epsilon); ours to a gradient of 1e-10.
    assert big.deviance(X, freq) == pytest.approx(11.763722868927, rel=1e-8)
    assert 32 - 1 - big.n_params_ == 12
    # anova(glm(Freq ~ Hair*Eye + Sex), glm(Freq ~ Hair*Eye + Hair*Sex), test = "Chisq"):
    # Deviance 8.092838167044, Df 3, Pr(>Chi) 0.0441314845089.
    test = likelihood_ratio_test(small, big, X, freq)
    assert test.statistic == pytest.approx(8.092838167044, rel=1e-8)
    assert test.df == 3
    assert test.pvalue == pytest.approx(0.0441314845089, rel=1e-7)
    assert test.pvalue == chi2.sf(test.statistic, 3)
    # AIC: glm's Poisson AIC counts one more parameter (the total) and a Poisson likelihood that
    # differs from the multinomial by a constant of the data: differences between models agree.
    # AIC(glm(Freq ~ Hair*Eye + Sex)) - AIC(glm(Freq ~ Hair*Eye + Hair*Sex)) = 2.092838167044.
    assert small.aic(X, freq) - big.aic(X, freq) == pytest.approx(2.092838167044, rel=1e-8)
    # summary(glm(Freq ~ Hair*Eye + Hair*Sex))$coefficients[, "Std. Error"]: treatment contrasts
    # are the parametrisation normalised with respect to the first level.
    se = big.standard_errors(X, freq)
    r = {"HairBrown": 0.187626304826368, "HairRed": 0.277655471367091, "HairBlond": 0.424294734003087}
    np.testing.assert_allclose(se[:3], list(r.values()), rtol=1e-6)


def test_saturated_model_has_zero_deviance(hair_eye_color):
    X, freq = hair_eye_color
    est = ExactMaxLikelihood([(0, 1, 2)], alpha=0, tol=1e-10).fit(X, sample_weight=freq)
    assert est.n_params_ == 31
    assert abs(est.deviance(X, freq)) < 1e-6  # R: loglm(~ Hair*Eye*Sex)$lrt is 0


def test_penalised_fits_warn_by_name(hair_eye_color):
    X, freq = hair_eye_color
    est = ExactMaxLikelihood([(0, 1), (0, 2)]).fit(X, sample_weight=freq)
    for statistic in (est.deviance, est.aic, est.bic, est.standard_errors):
        with pytest.warns(
            PenalisedFitWarning, match=r"alpha='auto' \(alpha_=0.00169, a ridge on the centred parameters\)"
        ):
            statistic(X, freq)
    small = ExactMaxLikelihood([(0, 1), (2,)], alpha=0).fit(X, sample_weight=freq)
    with pytest.warns(PenalisedFitWarning, match="big=ExactMaxLikelihood"):
        likelihood_ratio_test(small, est, X, freq)
    g = GaussianMaxLikelihood(shrinkage=0.1).fit(np.random.default_rng(0).normal(size=(50, 3)))
    with pytest.warns(PenalisedFitWarning, match="shrinkage=0.1"):
        g.aic(np.random.default_rng(1).normal(size=(5, 3)))


def test_likelihood_ratio_test_refuses_what_it_cannot_compare(hair_eye_color):
    X, freq = hair_eye_color
    a = ExactMaxLikelihood([(0, 1), (2,)], alpha=0).fit(X, sample_weight=freq)
    b = ExactMaxLikelihood([(0, 2), (1,)], alpha=0).fit(X, sample_weight=freq)
    with pytest.raises(ValueError, match=r"not nested: clique \(0, 1\) of small is not a clique of big"):
        likelihood_ratio_test(a, b, X, freq)
    with pytest.raises(ValueError, match="small is a PseudoLikelihoodEstimator"):
        likelihood_ratio_test(PseudoLikelihoodEstimator([(0, 1)]).fit(X), b, X)
    with pytest.raises(ValueError, match="must have more"):
        likelihood_ratio_test(a, a, X, freq)
    g1 = GaussianMaxLikelihood([(0, 1)]).fit(np.random.default_rng(0).normal(size=(50, 3)))
    with pytest.raises(ValueError, match="one of each"):
        likelihood_ratio_test(a, g1, X)


def test_standard_errors_refuse_an_undetermined_parameter():
    X = np.array([[0, 0], [1, 1], [0, 0], [1, 1], [0, 0]])  # (0, 1) and (1, 0) never seen
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ExactMaxLikelihood("chain", alpha=0).fit(X)
    with pytest.raises(ValueError, match="information matrix is singular.*clique"):
        est.standard_errors(X)
    with pytest.raises(NotImplementedError, match="PseudoLikelihoodEstimator"):
        LAPEstimator().fit(X).standard_errors(X)


MARKS = Path(__file__).parent / "data" / "marks.csv"
MARK_NAMES = ["mechanics", "vectors", "algebra", "analysis", "statistics"]


@pytest.fixture(scope="module")
def marks():
    return np.loadtxt(MARKS, delimiter=",", skiprows=2)


def test_gaussian_deviance_and_covariance_selection_match_ggm(marks):
    col = {name: j for j, name in enumerate(MARK_NAMES)}
    # fitConGraph(UG(~ mechanics*vectors + vectors*analysis + analysis*statistics +
    #   statistics*mechanics + algebra*mechanics), cov(marks), 88): dev 68.817625361020, df 5.
    # A 5-cycle with a pendant edge: not chordal, so Newton's method (ggm stops at tol 1e-6 on
    # its iterative proportional scaling, ~1e-9 relative on dev).
    edges = [("mechanics", "vectors"), ("vectors", "analysis"), ("analysis", "statistics"),
             ("statistics", "mechanics"), ("algebra", "mechanics")]  # fmt: skip
    fit = covariance_selection(np.cov(marks.T), [(col[a], col[b]) for a, b in edges], 88)
    assert fit.deviance == pytest.approx(68.817625361020, rel=1e-8)
    assert fit.df == 5
    est = GaussianMaxLikelihood([(col[a], col[b]) for a, b in edges], tol=1e-12, decrement_tol=None).fit(marks)
    assert est.deviance(marks) == pytest.approx(68.817625361020, rel=1e-8)
    assert est.n_params_ == 5 + 5 + 5
    # solve(fitConGraph(...)$Shat)[1, 2]: -3.15510930826e-03 (S with divisor n - 1 on both sides).
    assert fit.precision[0, 1] == pytest.approx(-3.15510930826e-03, rel=1e-7)
    # UG(~ mechanics*vectors*algebra + algebra*analysis*statistics): chordal, dev 0.895711999643, df 4.
    chordal = [(0, 1), (0, 2), (1, 2), (2, 3), (2, 4), (3, 4)]
    fit = covariance_selection(np.cov(marks.T), chordal, 88)
    assert fit.deviance == pytest.approx(0.895711999643, rel=1e-8)
    assert (fit.df, fit.n_iter) == (4, 0)
    i, j = np.array(chordal).T
    np.testing.assert_allclose(fit.covariance[i, j], np.cov(marks.T)[i, j], rtol=1e-12)  # closed form: S on the edges


def test_covariance_selection_refuses_bad_matrices():
    with pytest.raises(ValueError, match="square"):
        covariance_selection(np.ones((2, 3)), "chain", 10)
    with pytest.raises(ValueError, match=r"symmetric; S\[0, 1\] = 0.5 but S\[1, 0\] = 0.2"):
        covariance_selection(np.array([[1, 0.5], [0.2, 1]]), "chain", 10)
    with pytest.raises(ValueError, match=r"positive diagonal; S\[1, 1\] = 0"):
        covariance_selection(np.array([[1, 0.0], [0.0, 0]]), "chain", 10)
    with pytest.raises(ValueError, match="n_samples must be a positive"):
        covariance_selection(np.eye(2), "chain", 0)


def test_gaussian_fit_to_binary_data_warns_that_its_score_is_a_density():
    rng = np.random.default_rng(0)
    with pytest.warns(DiscreteDataWarning, match="cannot be ranked against the score of a discrete model"):
        GaussianMaxLikelihood().fit(rng.integers(0, 2, (100, 4)).astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DiscreteDataWarning)
        GaussianMaxLikelihood().fit(rng.normal(size=(100, 4)))
        GaussianMaxLikelihood().fit(rng.integers(0, 40, (100, 4)))  # many values: a count, not categories


def test_potential_reads_any_vector_laid_out_like_theta(hair_eye_color):
    X, freq = hair_eye_color
    est = ExactMaxLikelihood([(0, 1), (0, 2)], alpha=0).fit(X, sample_weight=freq)
    se = est.standard_errors(X, freq)
    block = est.model_.potential((2, 0), theta=se)  # any order of the clique's variables
    assert block.shape == (3, 1)
    lay, k = est.model_.layout, est.model_.cliques.index((0, 2))
    np.testing.assert_array_equal(block.ravel(), se[lay.block_offsets[k] : lay.block_offsets[k + 1]])
    with pytest.raises(ValueError, match="this model has 19 parameters"):
        est.model_.potential((0, 2), theta=se[:-1])
