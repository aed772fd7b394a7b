"""One fit for each family: every estimator validates X once and resolves its graph once, and no
estimator fits another or computes a log Z that nobody uses (issue #25).

The data-validation and graph-resolution functions are wrapped wherever skmrf's modules bound
them, and counted over one ``fit``. ``annealed_importance_sampling`` and the score method's
``log Z`` are counted the same way.
"""

import sys
from collections import Counter

import numpy as np
import pytest

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
    PseudoLikelihoodEstimator,
    TheorySchedule,
    grid_graph,
)
from skmrf.datasets import sample_random_mrf
from skmrf.estimators._base import BaseDiscreteMRF
from skmrf.graphs import MRFGraph

GRAPH = grid_graph(3, 3)
FAST = AdaptiveSchedule(n_iter=5, n_chains=50, n_sweeps=1)

DISCRETE = {
    "exact": lambda: ExactMaxLikelihood(GRAPH),
    "lap": lambda: LAPEstimator(GRAPH),
    "pl": lambda: PseudoLikelihoodEstimator(GRAPH),
    "mcmc": lambda: MCMCMaxLikelihood(GRAPH, schedule=FAST, score_method="pseudo", random_state=0),
    "mcmc_theory": lambda: MCMCMaxLikelihood(
        GRAPH, schedule=TheorySchedule(n_iter=3, n_chains=50, n_sweeps=1), score_method="pseudo", random_state=0
    ),
    "em": lambda: DecomposedEM(GRAPH, max_iter=5),
    "mh": lambda: MetropolisHastingsMRF(GRAPH, n_steps=20, score_method="pseudo", random_state=0),
    "mh_laplace": lambda: MetropolisHastingsMRF(GRAPH, likelihood="laplace", n_steps=20, random_state=0),
    "mle_induced": lambda: MLEInducedLikelihood(GRAPH),
    "mle_induced_lap": lambda: MLEInducedLikelihood(GRAPH, mle=LAPEstimator(alpha=0.01)),
}
GAUSSIAN = {
    "glap": lambda: GaussianLAP(GRAPH),
    "gml": lambda: GaussianMaxLikelihood(GRAPH),
}
WATCHED = (
    "validate_data",
    "check_states",
    "resolve_graph",
    "resolve_adjacency",
    "annealed_importance_sampling",
    "adaptive_annealed_importance_sampling",  # what the first AIS score calls (#24)
)


@pytest.fixture
def calls(monkeypatch):
    """Count the calls of the watched functions, wherever an skmrf module bound them."""
    counts = Counter()
    originals = {}
    for name, module in list(sys.modules.items()):
        if not (name == "skmrf" or name.startswith("skmrf.")):
            continue
        for attr in WATCHED:
            fn = getattr(module, attr, None)
            if fn is None or not callable(fn):
                continue
            original = originals.setdefault(attr, fn)

            def counting(*args, _attr=attr, _fn=original, **kwargs):
                # An MRFGraph given to resolve_graph is already resolved: it is returned as it is.
                if not (_attr == "resolve_graph" and isinstance(args[0], MRFGraph)):
                    counts[_attr] += 1
                return _fn(*args, **kwargs)

            monkeypatch.setattr(module, attr, counting)
    for cls in (BaseDiscreteMRF, DecomposedEM):  # DecomposedEM's own: its log Z is always exact

        def counting_score(self, *args, _fn=cls.__dict__["_resolve_score_method"], **kwargs):
            counts["resolve_score_method"] += 1
            return _fn(self, *args, **kwargs)

        monkeypatch.setattr(cls, "_resolve_score_method", counting_score)
    return counts


def _data(name):
    X, _ = sample_random_mrf(GRAPH, 200, random_state=0)
    if name == "em":
        X = X.astype(float)
        X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    return X


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short runs, on purpose
@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_fit_validates_once_and_resolves_the_graph_once(name, calls):
    X, est = _data(name), DISCRETE[name]()
    calls.clear()
    est.fit(X)
    assert calls["validate_data"] == 1, calls
    assert calls["check_states"] == 1, calls
    assert calls["resolve_graph"] == 1, calls
    # No AIS inside a fit, and the score method (with its log Z) once for the outer estimator only:
    # never for an inner fit (MCMC's start, the MLE of the MLE-induced likelihood and of MH).
    assert calls["annealed_importance_sampling"] == 0, calls
    assert calls["adaptive_annealed_importance_sampling"] == 0, calls
    expected = 0 if name.startswith("mle_induced") else 1
    assert calls["resolve_score_method"] == expected, calls


@pytest.mark.parametrize("name", sorted(GAUSSIAN))
def test_gaussian_fit_validates_once_and_resolves_the_pattern_once(name, calls):
    X, est = np.random.default_rng(0).standard_normal((200, 9)), GAUSSIAN[name]()
    calls.clear()
    est.fit(X)
    assert calls["validate_data"] == 1, calls
    assert calls["resolve_adjacency"] == 1, calls


def test_no_estimator_module_builds_another_estimator():
    # The kernels never import the estimators (methods combine by calling kernels).
    import skmrf._kernels

    for name, module in sys.modules.items():
        if name.startswith("skmrf._kernels"):
            for value in vars(module).values():
                assert not (isinstance(value, type) and issubclass(value, skmrf.estimators._base.BaseDiscreteMRF)), (
                    f"{name} holds the estimator class {value.__name__}"
                )
    assert skmrf._kernels is not None
