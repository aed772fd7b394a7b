"""Property-based checks over small random data sets, graphs, states and scales (hypothesis).

For every estimator: no NaN or inf in the parameters or the score unless an error is raised,
the input is never modified, the same seed gives the same result, and pickling round-trips
exactly. The default run keeps to a few examples per estimator; the slow variant runs many more.
"""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skmrf import (
    DecomposedEM,
    ExactMaxLikelihood,
    GaussianLAP,
    GaussianMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    PseudoLikelihoodEstimator,
)

DISCRETE = {
    "exact": lambda g: ExactMaxLikelihood(g, alpha=0.01),
    "exact_a0": lambda g: ExactMaxLikelihood(g, alpha=0.0, max_iter=200),
    "lap": lambda g: LAPEstimator(g, strategy="exact", random_state=0),
    "pl": lambda g: PseudoLikelihoodEstimator(g, random_state=0),
    "mcmc": lambda g: MCMCMaxLikelihood(g, n_iter=5, n_samples=30, n_sweeps=2, random_state=0),
    "em": lambda g: DecomposedEM(g, alpha=0.01, max_iter=20),
    "em_a0_gradient": lambda g: DecomposedEM(g, method="gradient", max_iter=50),
}
# Estimators for incomplete data: their problems get missing entries (NaN) too.
INCOMPLETE = {"em", "em_a0_gradient"}
GAUSSIAN = {"glap": GaussianLAP, "glap_shrink": lambda g: GaussianLAP(g, shrinkage=0.1), "gml": GaussianMaxLikelihood}


@st.composite
def discrete_problems(draw, binary=False):
    n_vars = draw(st.integers(2, 5))
    n_rows = draw(st.integers(1, 40))
    k = 2 if binary else draw(st.integers(2, 3))
    kind = draw(st.sampled_from(["chain", "complete", "triples", "edges"]))
    if kind == "triples" and n_vars >= 3 and not binary:
        graph = [(0, 1, 2)] + [(i, i + 1) for i in range(2, n_vars - 1)]
    elif kind == "edges":
        pairs = [(i, j) for i in range(n_vars) for j in range(i + 1, n_vars)]
        graph = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))
    else:
        graph = "complete" if kind == "complete" else "chain"
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = rng.integers(0, k, size=(n_rows, n_vars))
    dtype = draw(st.sampled_from([np.int64, np.uint8, np.float64]))
    missing = draw(st.sampled_from([0.0, 0.2, 0.6]))
    return graph, X.astype(dtype), np.where(rng.random(X.shape) < missing, np.nan, X)


def _check_discrete(make, graph, X):
    before = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no-MLE and convergence warnings are allowed
        try:
            est = make(graph).fit(X)
        except ValueError as exc:  # a refusal must say something, never crash obscurely
            assert str(exc)
            return
        again = make(graph).fit(X)
        score = est.score(X)
    np.testing.assert_array_equal(X, before)  # input never modified
    assert np.all(np.isfinite(est.theta_)) and np.isfinite(score)
    np.testing.assert_array_equal(est.theta_, again.theta_)  # same seed, same result
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.theta_, est.theta_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert clone.score(X) == score


def _check_gaussian(make, X, graph):
    before = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est = make(graph).fit(X)
        except ValueError as exc:
            assert str(exc)
            return
        again = make(graph).fit(X)
    np.testing.assert_array_equal(X, before)
    P = est.precision_
    assert np.all(np.isfinite(P))
    np.testing.assert_array_equal(P, again.precision_)
    if est.is_positive_definite_:
        assert np.isfinite(est.score(X))
        assert pickle.loads(pickle.dumps(est)).score(X) == est.score(X)


@st.composite
def gaussian_problems(draw):
    p = draw(st.integers(2, 6))
    n = draw(st.integers(p + 4, 60))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    seed = draw(st.integers(0, 2**31 - 1))
    X = np.random.default_rng(seed).standard_normal((n, p)) * scale
    return draw(st.sampled_from(["chain", "complete"])), X


FAST = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", sorted(DISCRETE))
@FAST
@given(problem=discrete_problems())
def test_discrete_properties(name, problem):
    graph, X, X_missing = problem
    if name in INCOMPLETE:
        X = X_missing
    if name == "mcmc":
        X = (X > 0).astype(X.dtype)
        graph = "chain" if not isinstance(graph, list) or any(len(c) > 2 for c in graph) else graph
    _check_discrete(DISCRETE[name], graph, X)


@pytest.mark.parametrize("name", sorted(GAUSSIAN))
@FAST
@given(problem=gaussian_problems())
def test_gaussian_properties(name, problem):
    graph, X = problem
    _check_gaussian(GAUSSIAN[name], X, graph)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DISCRETE))
@MANY
@given(problem=discrete_problems())
def test_discrete_properties_many(name, problem):
    test_discrete_properties.hypothesis.inner_test(name=name, problem=problem)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GAUSSIAN))
@MANY
@given(problem=gaussian_problems())
def test_gaussian_properties_many(name, problem):
    test_gaussian_properties.hypothesis.inner_test(name=name, problem=problem)
