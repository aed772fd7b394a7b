"""Every warning skmrf raises names the user's line (#41 item 6).

Each scenario below calls the public API once, from this file, in a way that warns; every warning
recorded must carry this file as its location, whatever the depth of the code that raised it
(estimator, kernel, solver, a scikit-learn decorator or pipeline in between).
"""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skmrf import (
    AdaptiveSchedule,
    DecomposedEM,
    ExactMaxLikelihood,
    GaussianLAP,
    GaussianMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    MetropolisHastingsMRF,
    MLEInducedLikelihood,
    MomentMatchingSchedule,
    PseudoLikelihoodEstimator,
    grid_graph,
)
from skmrf.datasets import make_random_mrf, sample_random_mrf
from skmrf.inference import adaptive_annealed_importance_sampling

GRAPH = grid_graph(3, 3)
X, _ = sample_random_mrf(GRAPH, 200, random_state=0)
CONSTANT = X.copy()
CONSTANT[:, 4] = 0  # a state never seen: no finite maximum-likelihood estimate at alpha=0
AGREEING = X.copy()
AGREEING[:, [1, 4]] = 0  # the ends of edge (1, 4) agree in every row
MISSING = X.astype(float)
MISSING[np.random.default_rng(0).random(X.shape) < 0.2] = np.nan
MISSING[:, 0] = X[:, 0]
Z = np.random.default_rng(1).standard_normal((12, 9))


def exact_not_converged():
    ExactMaxLikelihood(GRAPH, max_iter=1).fit(X)


def exact_no_finite_estimate():
    ExactMaxLikelihood(GRAPH, alpha=0).fit(CONSTANT)


def pseudo_not_converged():
    PseudoLikelihoodEstimator(GRAPH, max_iter=1).fit(X)


def pseudo_no_finite_estimate():
    PseudoLikelihoodEstimator(GRAPH, alpha=0).fit(CONSTANT)


def lap_no_finite_estimate():
    LAPEstimator(GRAPH, alpha=0).fit(CONSTANT)


def em_not_converged():
    DecomposedEM(GRAPH, max_iter=1).fit(MISSING)


def mcmc_short():
    MCMCMaxLikelihood(
        GRAPH, schedule=AdaptiveSchedule(n_iter=2, n_sweeps=1, n_chains=10), score_method="pseudo", random_state=0
    ).fit(X)


def moment_matching_short():
    schedule = MomentMatchingSchedule(n_iter=3, n_chains=100)
    MCMCMaxLikelihood(GRAPH, schedule=schedule, score_method="pseudo", random_state=0).fit(X)


def metropolis_short():
    MetropolisHastingsMRF(GRAPH, n_steps=40, score_method="pseudo", random_state=0).fit(X)


def mle_induced_degenerate_edge_dropped():
    MLEInducedLikelihood(GRAPH, degenerate_edges="drop").fit(AGREEING)


def penalised_standard_errors():
    ExactMaxLikelihood(GRAPH).fit(X).standard_errors(X)


def gaussian_ml_not_converged():
    GaussianMaxLikelihood("chain", solver="regression", max_iter=1).fit(Z)


def gaussian_lap_not_positive_definite_and_scale():
    GaussianLAP(GRAPH).fit(Z * 1e170)


def gaussian_discrete_data():
    GaussianLAP("chain").fit(X.astype(float))


def adaptive_ais_budget_spent():
    model = make_random_mrf(grid_graph(4, 4), scale=3.0, random_state=0)  # too strong for 300 sweeps
    adaptive_annealed_importance_sampling(model, 300, 100, 1, random_state=0)


def in_a_pipeline():
    make_pipeline(FunctionTransformer(), ExactMaxLikelihood(GRAPH, max_iter=1)).fit(X)


def in_cross_val_score():
    cross_val_score(ExactMaxLikelihood(GRAPH, max_iter=1), X, cv=2)


SCENARIOS = [value for name, value in dict(globals()).items() if callable(value) and value.__module__ == __name__]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_a_warning_names_the_line_that_called_skmrf(scenario):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            scenario()
        except ValueError:
            pass  # a scenario that refuses after warning still counts its warnings
    assert caught, f"{scenario.__name__} raised no warning: the scenario no longer tests anything"
    wrong = [f"{w.category.__name__} at {w.filename}:{w.lineno}: {str(w.message)[:80]}" for w in caught]
    wrong = [line for line, w in zip(wrong, caught) if w.filename != __file__]
    assert not wrong, "warnings that do not point at the caller's line:\n" + "\n".join(wrong)
