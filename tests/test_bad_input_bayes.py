"""Bad input to MetropolisHastingsMRF, MLEInducedLikelihood and DecomposedEM (#23): no silent answer.

Every case raises a ValueError naming the culprit (the callable, the parameter, the column) or
warns saying what to change; none returns a meaningless posterior, MLE or score quietly.
"""

import warnings

import numpy as np
import pytest
from sklearn import config_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression

from skmrf import (
    DecomposedEM,
    ExactMaxLikelihood,
    LaplaceApproximation,
    MetropolisHastingsMRF,
    MLEInducedLikelihood,
    PersistentChains,
)
from skmrf.estimators._existence import NoFiniteEstimateWarning
from skmrf.model import agreement_to_mrf

CYCLE = [(0, 1), (1, 2), (2, 3), (3, 0)]


@pytest.fixture(scope="module")
def X():
    return agreement_to_mrf([0.7, 0.6, 0.8, 0.7], CYCLE, 4, edges=CYCLE).sample(200, random_state=0)


def _mh(**params):
    return MetropolisHastingsMRF(CYCLE, **{"n_steps": 200, "random_state": 0, **params})


def nan_likelihood(theta):
    return np.full(theta.shape[0], np.nan)


def nan_prior(theta):
    return np.full(theta.shape[0], np.nan)


def nan_away_from_start(theta):
    """Finite at the start (theta_0 = 0.5 exactly), NaN once the chain has moved away."""
    return np.where(np.abs(theta[:, 0] - 0.5) < 1e-3, 0.0, np.nan)


def minus_inf(theta):
    return np.full(theta.shape[0], -np.inf)


def plus_inf(theta):
    return np.full(theta.shape[0], np.inf)


# -- 1. a chain that cannot be a posterior: errors naming the callable, or warnings ------------


@pytest.mark.parametrize(
    "params, match",
    [
        ({"likelihood": nan_likelihood}, r"likelihood callable nan_likelihood returned nan at theta = \["),
        ({"likelihood": plus_inf}, r"likelihood callable plus_inf returned inf at theta"),
        ({"likelihood": "exact", "prior": nan_prior}, r"prior callable nan_prior returned nan at theta = \["),
        # Found only after the start: by the speculative runner (callable) and the plain one (exchange).
        ({"likelihood": nan_away_from_start, "init": [0.5] * 4}, "likelihood callable nan_away_from_start"),
        ({"likelihood": "exchange", "prior": nan_away_from_start, "init": [0.5] * 4}, "prior callable nan_away"),
        ({"likelihood": "exact", "prior": lambda t: np.zeros(3)}, r"prior callable .*<lambda> returned shape \(3,\)"),
        ({"likelihood": "exact", "prior": lambda t: 0.0}, r"returned shape \(\) for a batch of 1 .*shape \(1,\)"),
    ],
)
def test_callable_nan_inf_or_wrong_shape_is_an_error_naming_it(X, params, match):
    with pytest.raises(ValueError, match=match):
        _mh(**params).fit(X)


@pytest.mark.parametrize(
    "params, what",
    [({"likelihood": minus_inf}, "likelihood"), ({"likelihood": "exact", "prior": minus_inf}, "prior")],
)
def test_minus_inf_at_the_start_is_an_error(X, params, what):
    with pytest.raises(ValueError, match=rf"log-{what} is -inf at the start of chain 0, theta = \[.*init='mle'"):
        _mh(**params).fit(X)


def test_minus_inf_away_from_the_start_is_a_rejected_move(X):
    def half_box(theta):  # a prior of zero density where theta_0 > 0.8
        return np.where(theta[:, 0] > 0.8, -np.inf, 0.0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a short chain
        est = _mh(likelihood="exact", prior=half_box, init=[0.79, 0.6, 0.8, 0.7], proposal_scale=0.05).fit(X)
    assert est.acceptance_rate_ > 0 and est.samples_[:, 0].max() <= 0.8


@pytest.mark.parametrize(
    "params", [{"proposal_scale": 1e300}, {"proposal_scale": 5.0, "likelihood": "exact"}], ids=["huge", "wide"]
)
def test_a_chain_that_never_moves_warns_and_reports_no_spread(X, params):
    with pytest.warns(ConvergenceWarning, match=r"every chain accepted none of the 200 proposals.*proposal_scale"):
        est = _mh(**params).fit(X)
    assert est.acceptance_rate_ == 0
    # Not the 1e-15 of rounding: the draws are one point repeated.
    np.testing.assert_array_equal(est.posterior_std_, 0.0)
    assert np.all(np.isposinf(est.rhat_)) and np.all(est.ess_ == 1)


def test_a_short_chain_warns_with_rhat_and_ess(X):
    with pytest.warns(ConvergenceWarning, match=r"effective sample size is .* < 100 .*Raise n_steps or n_chains"):
        est = _mh(likelihood="exact", n_steps=60, proposal_scale=0.02).fit(X)
    assert est.acceptance_rate_ > 0 and np.all(np.isfinite(est.rhat_))
    with pytest.warns(ConvergenceWarning, match=r"split R-hat is .* > 1.1"):
        # Two chains from opposite corners that have not met after 60 small steps.
        _mh(likelihood="exact", n_steps=60, n_chains=2, proposal_scale=0.005, init=[[0.2] * 4, [0.95] * 4]).fit(X)


def test_a_well_mixed_chain_does_not_warn(X):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = _mh(likelihood="exact", n_steps=6000, n_chains=2, proposal_scale=0.05, init="prior").fit(X)
    assert np.all(est.rhat_ < 1.1) and np.all(est.ess_ >= 100)


@pytest.mark.parametrize("n_steps, burn_in, thin", [(1, "auto", 1), (3, 0, 1), (11, 2, 3), (40, 38, 1)])
def test_too_few_kept_draws_are_refused(X, n_steps, burn_in, thin):
    with pytest.raises(ValueError, match=rf"n_steps={n_steps} .* keeps \d draws per chain; .* at least 4"):
        _mh(n_steps=n_steps, burn_in=burn_in, thin=thin).fit(X)


def test_draws_larger_than_max_bytes_are_refused_before_allocating(X):
    with pytest.raises(ValueError, match=r"kept draws would take 596 GiB \(8 bytes x 2 chains x 10000000000 draws"):
        _mh(n_steps=10**10, burn_in=0, n_chains=2).fit(X)
    with pytest.raises(ValueError, match=r"x 4 parameters\), more than 4 GiB \(max_bytes, at least 2 GiB\)"):
        _mh(n_steps=2 * 10**8, burn_in=0, max_bytes=4 * 2**30).fit(X)


# -- 2. the MLE-induced likelihood centred on a boundary point --------------------------------


@pytest.fixture(scope="module")
def X_on_a_face(X):
    """Rows on a face of the 4-cycle's agreement polytope: whenever edge (0, 1) agrees, all agree,
    and no row has all four edges disagreeing. The MLE runs off to the boundary."""
    T = X[:, [0, 1, 2, 3]] == X[:, [1, 2, 3, 0]]
    return X[~((T[:, 0] & (T.sum(axis=1) < 4)) | (T.sum(axis=1) == 0))]


def test_a_boundary_mle_warns_naming_the_edge_and_an_unseen_pattern(X_on_a_face):
    with pytest.warns(NoFiniteEstimateWarning) as record:
        est = MLEInducedLikelihood(CYCLE).fit(X_on_a_face)
    message = str(record[0].message)
    assert "MLE of edge (2, 3)" in message and "agree in 0.925 of the rows" in message
    assert "never show a row in which the ends of edges (0, 1), (1, 2), (2, 3), (3, 0) disagree" in message
    assert "mle=ExactMaxLikelihood(alpha=0.01)" in message
    assert est.theta_hat_[2] > 0.9999  # what the warning is about
    # A ridge gives a finite MLE, with no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ridge = MLEInducedLikelihood(CYCLE, mle=ExactMaxLikelihood(CYCLE, alpha=0.01)).fit(X_on_a_face)
    assert np.all(ridge.theta_hat_ < 0.999)


def test_a_boundary_mle_warns_with_many_rows_too(X_on_a_face):
    # 133000 rows: the odds criterion alone (beyond 1.3e7) would miss the solver stopped at the box.
    with pytest.warns(NoFiniteEstimateWarning, match=r"MLE of edge \(2, 3\) .* of 133000 rows or at the solver's box"):
        MLEInducedLikelihood(CYCLE).fit(np.repeat(X_on_a_face, 1000, axis=0))


def test_an_interior_mle_does_not_warn(X):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MLEInducedLikelihood(CYCLE).fit(X)


def test_metropolis_hastings_passes_the_boundary_warning_on(X_on_a_face):
    with pytest.warns(NoFiniteEstimateWarning, match="MLE of edge"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _mh(likelihood="mle_induced").fit(X_on_a_face)


# -- 3. obscure errors made clear ----------------------------------------------------------------


@pytest.mark.parametrize("mle", [LinearRegression(), "exact"], ids=["LinearRegression", "str"])
@pytest.mark.parametrize("owner", ["mh", "mle_induced"])
def test_an_mle_that_is_not_an_skmrf_estimator(X, mle, owner):
    est = _mh(mle=mle) if owner == "mh" else MLEInducedLikelihood(CYCLE, mle=mle)
    with pytest.raises(ValueError, match=r"The 'mle' parameter of \w+ must be None, an instance of .*BaseDiscreteMRF"):
        est.fit(X)
    # Also when a caller's fit skips nested parameter validation.
    with config_context(skip_parameter_validation=True), pytest.raises(ValueError, match="mle must be None, an skmrf"):
        MLEInducedLikelihood(CYCLE, mle=mle).fit(X)


@pytest.mark.parametrize("likelihood", ["exact", "laplace", "exchange", "pseudo", "mle_induced", "persistent_mc"])
def test_a_column_in_no_edge(X, likelihood):
    """An isolated variable adds a constant to the log-likelihood: the deterministic chains are unchanged."""
    X5 = np.hstack([X, X[:, :1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        few = {"laplace": LaplaceApproximation(n_particles=20), "persistent_mc": PersistentChains(n_particles=20)}
        est = _mh(likelihood=few.get(likelihood, likelihood), n_steps=100).fit(X5)
        assert est.posterior_mean_.shape == (4,) and np.all(np.isfinite(est.samples_))
        if likelihood in ("exact", "laplace", "pseudo", "mle_induced"):
            ref = _mh(likelihood=likelihood, n_steps=100).fit(X)
            # The same decisions: the log-ratios differ by rounding only (n log 2 cancels).
            np.testing.assert_allclose(est.samples_, ref.samples_, rtol=0, atol=1e-12)


def test_a_sampled_fisher_information_needs_two_particles(X):
    # max_bytes=1: no junction tree fits, so the Laplace information comes from Gibbs draws.
    with pytest.raises(ValueError, match=r"likelihood='laplace' .* n_particles=1 Gibbs draws .* at least 2"):
        _mh(likelihood=LaplaceApproximation(n_particles=1), max_bytes=1).fit(X)


def test_a_fitted_mle_with_three_states_is_refused_naming_the_column(X):
    X3 = X.copy()
    X3[0, 2] = 2
    fitted = ExactMaxLikelihood(CYCLE).fit(X3)
    with pytest.raises(ValueError, match=r"models column 2 with 3 states, but the agreement model .* is binary"):
        MLEInducedLikelihood(CYCLE, mle=fitted).fit(X)


# -- 5. DecomposedEM: an empty row is the empty event, not a free point of log-likelihood ------


@pytest.fixture(scope="module")
def X_missing():
    rng = np.random.default_rng(0)
    Xf = rng.integers(0, 2, size=(120, 4)).astype(float)
    Xf[rng.random(Xf.shape) < 0.3] = np.nan
    Xf[:3] = np.nan  # three rows entirely missing already
    return Xf


@pytest.mark.parametrize("method", ["em", "gradient"])
@pytest.mark.parametrize("alpha", [0.01, "auto"])
def test_empty_rows_change_neither_the_fit_nor_the_score(X_missing, method, alpha):
    est = DecomposedEM("chain", method=method, alpha=alpha, tol=1e-9).fit(X_missing)
    padded = np.vstack([X_missing, np.full((500, 4), np.nan)])
    more = DecomposedEM("chain", method=method, alpha=alpha, tol=1e-9).fit(padded)
    # Empty rows are dropped before anything is computed: the same fit, bit for bit.
    np.testing.assert_array_equal(more.theta_, est.theta_)
    assert more.alpha_ == est.alpha_ and more.log_likelihood_ == est.log_likelihood_
    assert more.score(padded) == pytest.approx(est.score(X_missing), rel=1e-13, abs=0)  # summation order only
    # score is the training log-likelihood_: the same sums at the same theta, to rounding.
    assert est.score(X_missing) == pytest.approx(est.log_likelihood_, rel=1e-12, abs=0)
    # ... and the sum over the rows divided by the rows with an observed entry.
    seen = ~np.isnan(X_missing).all(axis=1)
    assert est.score(X_missing) == pytest.approx(est.score_samples(X_missing).sum() / seen.sum(), rel=1e-13)
    np.testing.assert_array_equal(est.score_samples(X_missing)[~seen], 0.0)


def test_scoring_only_empty_rows_is_refused(X_missing):
    est = DecomposedEM("chain", alpha=0.01).fit(X_missing)
    with pytest.raises(ValueError, match="Every one of the 7 rows of X is entirely missing, so there is nothing"):
        est.score(np.full((7, 4), np.nan))
    np.testing.assert_array_equal(est.score_samples(np.full((7, 4), np.nan)), 0.0)  # exact: probability 1
