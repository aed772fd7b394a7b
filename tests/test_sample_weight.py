"""``sample_weight``: a row with weight ``w`` counts as ``w`` rows, in every estimator (DESIGN.md).

Integer weights must give the fit on the rows repeated. Every discrete method takes its data
through sums of integer-valued weights (clique and 1-neighbourhood counts, blanket records,
agreement counts, EM's patterns), which are exact in float64, and MCMC's chains start at rows
drawn by position in the repeated data (:meth:`skmrf._data.Rows.draw`): so the fits are equal
bit for bit, and the tests compare with ``assert_array_equal``.
"""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skmrf import (
    AdaptiveSchedule,
    DecomposedEM,
    ExactMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    MetropolisHastingsMRF,
    MLEInducedLikelihood,
    PseudoLikelihoodEstimator,
    TheorySchedule,
    grid_graph,
)
from skmrf.datasets import sample_random_mrf

GRAPH = grid_graph(3, 3)

DISCRETE = {
    "exact": lambda: ExactMaxLikelihood(GRAPH),
    "exact_a0": lambda: ExactMaxLikelihood(GRAPH, alpha=0.0),
    "lap": lambda: LAPEstimator(GRAPH),
    "lap_exact": lambda: LAPEstimator(GRAPH, strategy="exact", alpha=0.01),
    "pl": lambda: PseudoLikelihoodEstimator(GRAPH),
    "mcmc": lambda: MCMCMaxLikelihood(
        GRAPH, schedule=AdaptiveSchedule(n_iter=30, n_chains=200, n_sweeps=2), random_state=0
    ),
    "mcmc_theory": lambda: MCMCMaxLikelihood(
        GRAPH, schedule=TheorySchedule(n_iter=10, n_chains=100, n_sweeps=2, init="data"), alpha=0.1, random_state=0
    ),
    "em": lambda: DecomposedEM(GRAPH, max_iter=20),
    "mh": lambda: MetropolisHastingsMRF(GRAPH, n_steps=200, random_state=0),
    "mh_pseudo": lambda: MetropolisHastingsMRF(GRAPH, likelihood="pseudo", n_steps=200, random_state=0),
}


@pytest.fixture(scope="module")
def data():
    X, _ = sample_random_mrf(GRAPH, 60, random_state=0)
    weight = np.random.default_rng(1).integers(0, 4, len(X))  # zeros included: such rows count for nothing
    return X, weight, np.repeat(X, weight, axis=0)


def _incomplete(X, seed=2):
    Xf = X.astype(float)
    Xf[np.random.default_rng(seed).random(X.shape) < 0.2] = np.nan
    return Xf


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short MH chains, on purpose
@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_integer_weights_equal_repeated_rows(name, data):
    X, weight, repeated = data
    if name == "em":
        X = _incomplete(X)
        repeated = np.repeat(X, weight, axis=0)
    weighted = DISCRETE[name]().fit(X, sample_weight=weight)
    plain = DISCRETE[name]().fit(repeated)
    np.testing.assert_array_equal(weighted.theta_, plain.theta_)
    assert getattr(weighted, "alpha_", None) == getattr(plain, "alpha_", None)  # "auto": 1 / sum of weights


def test_mle_induced_weights_equal_repeated_rows(data):
    X, weight, repeated = data
    weighted = MLEInducedLikelihood(GRAPH).fit(X, sample_weight=weight)
    plain = MLEInducedLikelihood(GRAPH).fit(repeated)
    np.testing.assert_array_equal(weighted.theta_hat_, plain.theta_hat_)
    np.testing.assert_array_equal(weighted.n_agree_, plain.n_agree_)
    theta = np.full(len(weighted.edges_), 0.6)
    assert weighted.log_likelihood(theta) == plain.log_likelihood(theta)


def test_fractional_weights_scale_freely(data):
    # Multiplying every weight by c changes nothing but alpha="auto" (one over their sum): with
    # alpha fixed, the weighted mean objective is the same function, so the same fit.
    X, weight, _ = data
    a = ExactMaxLikelihood(GRAPH, alpha=0.01).fit(X, sample_weight=weight)
    b = ExactMaxLikelihood(GRAPH, alpha=0.01).fit(X, sample_weight=weight * 0.37)
    # Mean statistics counts / total rounded differently (a relative 1e-16 each), then the solver
    # stops within tol = 1e-7 of the optimum: well inside 1e-5 of each other (the Hessian is
    # bounded below by alpha = 0.01, so parameter gaps are at most tol / alpha = 1e-5).
    np.testing.assert_allclose(a.theta_, b.theta_, rtol=0, atol=1e-5)
    assert b.alpha_ == 0.01


@pytest.mark.parametrize(
    "weight,match",
    [
        (-np.ones(60), "Negative values"),
        (np.full(60, np.nan), "NaN"),
        (np.ones(59), "shape"),
        (np.zeros(60), "zero"),
        (np.full(60, 1e307), "sums to inf.*overflows.*explicit alpha.*alpha='auto'"),  # sum overflows
    ],
)
def test_bad_weights_are_refused(weight, match, data):
    X = data[0]
    with pytest.raises(ValueError, match=match):
        PseudoLikelihoodEstimator(GRAPH).fit(X, sample_weight=weight)


def test_weights_through_pipeline_gridsearch_and_cross_val_score(data):
    X, weight, repeated = data
    pipe = make_pipeline(FunctionTransformer(), LAPEstimator(GRAPH))
    pipe.fit(X, lapestimator__sample_weight=weight)
    np.testing.assert_array_equal(pipe[-1].theta_, LAPEstimator(GRAPH).fit(repeated).theta_)
    # GridSearchCV slices the weights with the rows of each split, for fit and score alike: the
    # weighted held-out mean log-likelihood equals the plain one on the repeated rows.
    search = GridSearchCV(LAPEstimator(GRAPH), {"alpha": [0.01, 0.1]}, cv=KFold(3))
    search.fit(X, sample_weight=weight)
    assert search.best_params_["alpha"] in (0.01, 0.1)
    est = LAPEstimator(GRAPH).fit(X[:40], sample_weight=weight[:40])
    held_out = est.score(X[40:], sample_weight=weight[40:])
    # The same rows' log-likelihoods averaged in another order: rounding of a mean of ~50 terms.
    np.testing.assert_allclose(held_out, est.score(np.repeat(X[40:], weight[40:], axis=0)), rtol=1e-13)
    scores = cross_val_score(LAPEstimator(GRAPH), X, cv=KFold(3), params={"sample_weight": weight})
    assert np.all(np.isfinite(scores))


SUBNORMAL = np.full(60, 1e-320)  # every weight and their sum (6e-319) below the smallest normal float


@pytest.mark.parametrize("name", sorted(DISCRETE) + ["mle_induced", "gaussian"])
def test_a_subnormal_weight_sum_is_refused_with_its_figures(name, data):
    # #40: LAP returned all-NaN theta_, PL and EM all zeros, exact ML, MH and the MLE-induced
    # likelihood "SVD did not converge", MCMC "cannot convert float NaN to integer". The refusal
    # names the sum, its largest weight and both remedies (alpha fixed: a common factor; "auto":
    # the sum sets the ridge).
    from skmrf import GaussianMaxLikelihood

    X = data[0]
    make = {
        **DISCRETE,
        "mle_induced": lambda: MLEInducedLikelihood(GRAPH),
        "gaussian": lambda: GaussianMaxLikelihood(GRAPH),
    }[name]
    Xfit = X.astype(float) + 0.1 * np.random.default_rng(0).normal(size=X.shape) if name == "gaussian" else X
    with pytest.raises(
        ValueError, match=r"sums to [0-9.]+e-319 .*largest weight [0-9.]+e-32[01]\).*smallest normal.*alpha='auto'"
    ):
        make().fit(Xfit, sample_weight=SUBNORMAL)
    # weights of 1e-300 are normal: with a fixed alpha only their ratios matter (the unit-weight fit)
    if name == "pl":
        a = PseudoLikelihoodEstimator(GRAPH, alpha=0.01).fit(X)
        b = PseudoLikelihoodEstimator(GRAPH, alpha=0.01).fit(X, sample_weight=np.full(60, 1e-300))
        np.testing.assert_allclose(a.theta_, b.theta_, rtol=0, atol=1e-6)  # two solves to tol 1e-8 / alpha


@pytest.mark.parametrize("name", ["pl", "em", "gaussian"])
def test_score_weights_get_the_checks_of_fit(name, data):
    # #40: weights of 1e307 (their sum overflows) gave a NaN score. A weighted mean depends on the
    # weights' ratios only: scaled by their maximum, huge and subnormal weights give the plain mean;
    # all-zero weights (0 / 0) are refused.
    from skmrf import GaussianMaxLikelihood

    X = data[0]
    if name == "gaussian":
        X = X.astype(float) + 0.1 * np.random.default_rng(0).normal(size=X.shape)
        est = GaussianMaxLikelihood(GRAPH).fit(X)
    else:
        est = {"pl": PseudoLikelihoodEstimator, "em": DecomposedEM}[name](GRAPH).fit(X)
    plain = est.score(X)
    for w in (1e307, 1e-320):
        # the same mean of 60 terms, summed in another order: rounding of a few 1e-16 relative
        np.testing.assert_allclose(est.score(X, sample_weight=np.full(60, w)), plain, rtol=1e-13)
    with pytest.raises(ValueError, match="zero"):
        est.score(X, sample_weight=np.zeros(60))
    if name == "em":  # routed through a meta-estimator's metadata as well
        import sklearn

        with sklearn.config_context(enable_metadata_routing=True):
            est.set_score_request(sample_weight=True)
            assert est.get_metadata_routing().consumes("score", ["sample_weight"]) == {"sample_weight"}
