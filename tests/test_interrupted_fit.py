"""A fit that fails or is interrupted leaves the estimator as it was (#40).

Ctrl-C during ``ExactMaxLikelihood``, ``MCMCMaxLikelihood``, ``DecomposedEM`` or
``MetropolisHastingsMRF`` ``fit`` left a half-fitted estimator: ``check_is_fitted`` passed, then
``score`` raised ``AttributeError`` (no ``score_method_``) and ``theta_`` was all zeros. Every
estimator is interrupted here inside its kernel, after validation has set the first fitted
attributes: an unfitted estimator must be unfitted again (``NotFittedError``), a fitted one exactly
as before (the same attributes, the same scores).
"""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import skmrf
from skmrf.datasets import sample_random_mrf

GRAPH = skmrf.grid_graph(3, 3)
DISCRETE = {
    "ExactMaxLikelihood": {},
    "LAPEstimator": {},
    "PseudoLikelihoodEstimator": {},
    "MCMCMaxLikelihood": {"random_state": 0},
    "DecomposedEM": {"max_iter": 10},
    "MetropolisHastingsMRF": {"n_steps": 40, "random_state": 0},
}


@pytest.fixture(scope="module")
def data():
    X, _ = sample_random_mrf(GRAPH, 120, random_state=0)
    return X, X + 0.3 * np.random.default_rng(1).standard_normal(X.shape)


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def _cases():
    for name in DISCRETE:
        yield name, "_fit_theta"
    yield "GaussianMaxLikelihood", "_fit_precision"
    yield "GaussianLAP", "_fit_precision"
    yield "MRFImputer", None  # its estimator's kernel (DecomposedEM._fit_theta) is interrupted
    yield "MRFClassifier", None  # its joint model's kernel (ExactMaxLikelihood._fit_theta)


def _make(name):
    if name in DISCRETE:
        return getattr(skmrf, name)(GRAPH, **DISCRETE[name])
    if name.startswith("Gaussian"):
        return getattr(skmrf, name)(GRAPH)
    if name == "MRFImputer":
        return skmrf.MRFImputer(skmrf.DecomposedEM(GRAPH, max_iter=10))
    return skmrf.MRFClassifier()


def _fit(est, name, X, Xg):
    if name == "MRFClassifier":
        return est.fit(X[:, 1:], X[:, 0])
    if name == "MRFImputer":
        Xm = X.astype(float)
        Xm[::7, 2] = np.nan
        return est.fit(Xm)
    return est.fit(Xg if name.startswith("Gaussian") else X)


def _result(est, name, X, Xg):
    if name == "MRFClassifier":
        return est.predict_proba(X[:, 1:])
    if name == "MRFImputer":
        Xm = X.astype(float)
        Xm[::5, 3] = np.nan
        return est.transform(Xm)
    return est.score_samples(Xg if name.startswith("Gaussian") else X)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name, method", list(_cases()))
def test_an_interrupted_fit_leaves_the_estimator_as_it_was(name, method, data, monkeypatch):
    X, Xg = data
    target = getattr(skmrf, name) if method else None
    if name == "MRFImputer":
        target, method = skmrf.DecomposedEM, "_fit_theta"
    elif name == "MRFClassifier":
        target, method = skmrf.ExactMaxLikelihood, "_fit_theta"
    # An unfitted estimator is unfitted again.
    est = _make(name)
    with monkeypatch.context() as m:
        m.setattr(target, method, _interrupt)
        with pytest.raises(KeyboardInterrupt):
            _fit(est, name, X, Xg)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]
    # A fitted estimator keeps its fit: the same attributes, the same results.
    _fit(est, name, X, Xg)
    results = _result(est, name, X, Xg)  # first: it makes what the fit deferred (the score method, log Z)
    before = dict(vars(est))
    with monkeypatch.context() as m:
        m.setattr(target, method, _interrupt)
        with pytest.raises(KeyboardInterrupt):
            _fit(est, name, X[:60], Xg[:60])  # other data: a fit would change everything
    assert set(vars(est)) == set(before) and all(vars(est)[k] is before[k] for k in before)
    np.testing.assert_array_equal(_result(est, name, X, Xg), results)
