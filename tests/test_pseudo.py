import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from skmrf import grid_graph
from skmrf.datasets import sample_random_mrf
from skmrf.estimators._pseudo import PseudoLikelihoodEstimator, PseudoLikelihoodObjective

from . import brute_force as bf


def brute_force_pl(model, X, alpha):
    """Mean pseudo-log-likelihood by re-scoring each row with each variable changed.

    Independent of the estimator's records: features come from
    :func:`brute_force.features` (state-by-state potential look-ups).
    """
    K = model.n_states
    kmax = int(K.max())
    per_var = []
    for v in range(model.n_variables):
        alts = []
        for k in range(kmax):
            Xa = X.copy()
            Xa[:, v] = min(k, K[v] - 1)
            alts.append(bf.features(model, Xa))
        per_var.append(np.stack(alts, axis=1))  # rows, states, params
    rows = np.arange(len(X))

    def objective(theta):
        f, g = 0.5 * alpha * theta @ theta, alpha * theta
        for v, F in enumerate(per_var):
            e = F @ theta
            e[:, K[v] :] = -np.inf
            lse = logsumexp(e, axis=1)
            p = np.exp(e - lse[:, None])
            f -= np.mean(e[rows, X[:, v]] - lse)
            g -= np.mean(F[rows, X[:, v]] - np.einsum("nk,nkp->np", p, F), axis=0)
        return f, g

    return objective


@pytest.mark.parametrize(
    "cliques, n_states, n_var",
    [
        ([(0, 1), (1, 2), (2, 3), (3, 0), (1, 3)], 2, 4),
        ([(0, 1, 2), (2, 3), (3, 4), (1, 4)], [3, 2, 2, 3, 2], 5),
        ([(0, 1, 2, 3), (3, 4)], [2, 3, 2, 2, 4], 5),
    ],
)
def test_matches_brute_force_pseudo_likelihood_optimum(cliques, n_states, n_var):
    X, _ = sample_random_mrf(cliques, 400, n_states=n_states, n_variables=n_var, random_state=0)
    est = PseudoLikelihoodEstimator(cliques, alpha=0.01, tol=1e-10).fit(X)
    objective = brute_force_pl(est.model_, X, 0.01)
    ref = minimize(objective, np.zeros(est.model_.n_params), jac=True, method="BFGS", options={"gtol": 1e-11})
    # Both stop at small gradients (the estimator at tol = 1e-10, BFGS where it stops, often short of
    # gtol); with the ridge the Hessian's smallest eigenvalue is >= alpha = 0.01, so each is within
    # sqrt(d) |g|_inf / alpha of the optimum (~1e-7 here; a flat 1e-6 did not follow the BFGS gradient).
    bound = np.sqrt(len(ref.x)) * (1e-10 + np.abs(ref.jac).max()) / 0.01
    np.testing.assert_allclose(est.theta_, ref.x, rtol=0, atol=bound)
    # The estimator's objective is the brute-force one, value and gradient.
    theta = np.random.default_rng(1).normal(size=est.model_.n_params)
    f_ref, g_ref = objective(theta)
    f, g = PseudoLikelihoodObjective(est.model_.layout, est.graph_, X, 0.01)(theta)
    # 1e-12: the same objective at the same point, sums of 400 x n_var log-conditionals in another order.
    assert f == pytest.approx(f_ref, rel=1e-12)
    np.testing.assert_allclose(g, g_ref, atol=1e-12)
    # The reported pseudo-likelihood is the model's own (ConditionalPlan) value.
    # 1e-10: two evaluations of the same pseudo-likelihood at the same parameters (rounding only).
    assert est.pseudo_log_likelihood_ == pytest.approx(est.model_.log_pseudo_likelihood(X).mean(), rel=1e-10)


def test_records_compress_rows():
    X, _ = sample_random_mrf(grid_graph(3, 3), 5000, random_state=0)
    est = PseudoLikelihoodEstimator("grid:3x3").fit(X)
    # A grid variable has at most 4 neighbours: <= 2^5 blanket configurations each.
    assert est.n_records_ <= 9 * 32


def test_consistent_on_large_sample():
    X, model = sample_random_mrf(grid_graph(3, 3), 40000, random_state=3)
    est = PseudoLikelihoodEstimator("grid:3x3").fit(X)
    # PL is consistent: 40000 exact samples put it within ~0.1 of the truth.
    assert np.max(np.abs(est.theta_ - model.theta)) < 0.15


def test_unseen_state_gives_finite_estimate():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(100, 4))
    X[:, 1] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = PseudoLikelihoodEstimator(n_states=2, alpha=0.1).fit(X)
    assert np.all(np.isfinite(est.theta_)) and est.model_.potential((1,))[0] < -1
    est = PseudoLikelihoodEstimator(n_states=2).fit(X)  # alpha=0: clipped at the box
    assert np.all(np.isfinite(est.theta_)) and np.isfinite(est.score(X))


def test_verbose_and_convergence_warning(capsys):
    X, _ = sample_random_mrf(grid_graph(3, 3), 300, random_state=0)
    with pytest.warns(Warning, match="did not converge in 2 iterations"):
        PseudoLikelihoodEstimator("grid:3x3", max_iter=2, verbose=2).fit(X)
    assert "[PseudoLikelihoodEstimator] Iteration 1, negative pseudo-log-likelihood" in capsys.readouterr().out


def test_bad_parameters_and_data():
    with pytest.raises(ValueError, match="'alpha' parameter of PseudoLikelihoodEstimator"):
        PseudoLikelihoodEstimator(alpha=-1).fit(np.zeros((3, 2), dtype=int))
    with pytest.raises(ValueError, match="column 1 has the value 1.5"):
        PseudoLikelihoodEstimator().fit(np.array([[0, 1.5], [1, 0]]))


def test_score_is_exact_on_small_graph():
    X, _ = sample_random_mrf(grid_graph(3, 3), 500, random_state=0)
    est = PseudoLikelihoodEstimator("grid:3x3", alpha=0.01).fit(X)
    assert est.score_method_ == "exact"
    # 1e-10: the same exact log-probabilities (junction tree) read two ways: rounding only.
    np.testing.assert_allclose(est.score_samples(X[:20]), est.model_.log_prob(X[:20]), rtol=1e-10)
