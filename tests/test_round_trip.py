"""Every fitted estimator, with every string-valued option, saves, loads and scores as it was (#40).

A saved ``GaussianLAP(newton_steps=1)`` could not be loaded (its ``newton_start_ = 'lap'`` was not a
string the loader knew), while a hand-written round-trip test passed. So this test enumerates: for
each estimator, each parameter whose constraints hold a ``StrOptions``, each of its strings (the
other parameters at their defaults, small fits), it fits, saves with :func:`skmrf.io.save_model`,
loads with :func:`skmrf.io.load_model`, and compares every fitted attribute and the scores. A
combination that ``fit`` refuses (``ValueError``, ``NotImplementedError``: a documented refusal)
is skipped; the test fails if a refusal happens at save or load instead.
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._param_validation import StrOptions

import skmrf
from skmrf.datasets import sample_random_mrf
from skmrf.exceptions import PenalisedFitWarning
from skmrf.io import load_model, save_model

GRAPH = skmrf.grid_graph(3, 3)
SMALL = {  # keep the Monte-Carlo estimators quick; these are not string options
    "MCMCMaxLikelihood": {"random_state": 0},
    "MetropolisHastingsMRF": {"n_steps": 60, "random_state": 0},
    "DecomposedEM": {"max_iter": 20},
}
DENSITY = [
    "DecomposedEM",
    "ExactMaxLikelihood",
    "GaussianLAP",
    "GaussianMaxLikelihood",
    "LAPEstimator",
    "MCMCMaxLikelihood",
    "MetropolisHastingsMRF",
    "PseudoLikelihoodEstimator",
]


#: Options that are not strings but switch a fit onto another path with fitted attributes of its
#: own (GaussianLAP's Newton steps store newton_start_, the string the loader refused).
OTHER_OPTIONS = {"GaussianLAP": [("newton_steps", 1)], "GaussianMaxLikelihood": [("store_covariance", True)]}


def _cases():
    for name in DENSITY:
        cls = getattr(skmrf, name)
        yield name, None, None
        for param, value in OTHER_OPTIONS.get(name, []):
            yield name, param, value
        params = inspect.signature(cls).parameters
        for param, constraints in cls._parameter_constraints.items():
            if param not in params:  # a constraint inherited for a parameter this class does not take
                continue
            for c in constraints:
                if isinstance(c, StrOptions):
                    for option in sorted(c.options):
                        yield name, param, option


@pytest.fixture(scope="module")
def data():
    X, _ = sample_random_mrf(GRAPH, 150, random_state=0)
    Xg = X + 0.3 * np.random.default_rng(1).standard_normal(X.shape)
    return X, Xg


def _same(a, b, path):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, path
        if a.dtype.kind in "fc":
            # Stored arrays come back exactly; derived ones (a Gaussian covariance_ recomputed from the
            # stored precision by a solve) differ by the solve's rounding: a few ulps times the
            # condition number (under 10 for these 9-variable models), far below 1e-12 relative.
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15, err_msg=path)
        else:
            assert np.array_equal(a, b), path
    elif isinstance(a, float) and isinstance(b, float):
        assert a == b or (np.isnan(a) and np.isnan(b)), path
    elif hasattr(a, "toarray") and hasattr(b, "toarray"):
        _same(a.toarray(), b.toarray(), path)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name, param, option", list(_cases()))
def test_every_string_option_round_trips(name, param, option, data, tmp_path):
    X, Xg = data
    cls = getattr(skmrf, name)
    kwargs = dict(SMALL.get(name, {}))
    if "graph" in inspect.signature(cls).parameters:
        kwargs["graph"] = GRAPH
    if param is not None:
        kwargs[param] = option
    est = cls(**kwargs)
    Xfit = Xg if name.startswith("Gaussian") else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(Xfit)
        except (ValueError, NotImplementedError) as exc:  # a documented refusal of this combination
            pytest.skip(f"fit refuses {param}={option!r}: {str(exc)[:80]}")
        before = est.score_samples(Xfit)
    path = tmp_path / "model.npz"
    save_model(est, path)
    loaded = load_model(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        after = loaded.score_samples(Xfit)
    np.testing.assert_array_equal(after, before)  # the same parameters and log Z: the same arithmetic
    fitted = [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]
    for key in fitted:
        if hasattr(loaded, key):
            _same(getattr(est, key), getattr(loaded, key), f"{name}({param}={option!r}).{key}")


def test_a_per_order_alpha_round_trips(tmp_path):
    # #40 (found here): a dict alpha (one ridge per clique order, the DCA setting) was listed in
    # params_not_saved and loaded back as alpha="auto", and its alpha_ was dropped.
    from skmrf import PseudoLikelihoodEstimator

    X = np.random.default_rng(0).integers(0, 3, (60, 4))
    est = PseudoLikelihoodEstimator("chain", alpha={1: 1e-3, 2: "auto"}, score_method="pseudo").fit(X)
    save_model(est, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    assert back.alpha == {1: 1e-3, 2: "auto"} and back.alpha_ == est.alpha_ == {1: 1e-3, 2: 1 / 60}
    np.testing.assert_array_equal(clone(back).fit(X).theta_, est.theta_)
    with pytest.warns(PenalisedFitWarning):  # alpha > 0: said, and the same errors after the round trip
        np.testing.assert_array_equal(back.standard_errors(X), est.standard_errors(X))
