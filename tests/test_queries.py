"""Queries given evidence (conditional marginals, imputation) and the estimators built on them.

Every exact answer is checked against enumeration of all joint states (``tests/brute_force.py``):
the conditional of a row is the model's distribution restricted to the states that agree with
its observed entries. Tolerances: both sides sum at most a few thousand exponentials of
log-potentials of order one, so they agree to a few hundred ulps of 1 (``1e-12``).
"""

import warnings

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.naive_bayes import CategoricalNB
from sklearn.pipeline import Pipeline

import skmrf.inference._queries as queries
from skmrf import DecomposedEM, ExactMaxLikelihood, MRFClassifier, MRFImputer, grid_graph
from skmrf.datasets import make_random_mrf
from skmrf.exceptions import ApproximateInferenceWarning
from skmrf.model import DiscreteMRF

from . import brute_force as bf

EXACT = 1e-12

# Models with 2 to 5 states per variable, cliques of three variables, and a grid.
MODELS = {
    "triangles": ([(0, 1, 2), (2, 3), (3, 4, 5), (1, 4), (5, 6), (6, 7, 0)], [3, 2, 4, 3, 2, 5, 3, 2]),
    "grid3x4": (grid_graph(3, 4), [2] * 12),
    "potts": ([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (3, 4), (4, 5)], [4, 3, 5, 3, 4, 3]),
}


def model_of(name, seed=0):
    graph, states = MODELS[name]
    return make_random_mrf(graph, states, n_variables=len(states), random_state=seed)


def evidence(model, n_rows, p_missing, seed=1):
    """Rows drawn from the model with entries hidden at random (NaN), some rows repeated."""
    rng = np.random.default_rng(seed)
    X = model.sample(n_rows, random_state=seed, method="exact").astype(float)
    X[rng.random(X.shape) < p_missing] = np.nan
    X[-3:] = X[:3]  # repeated rows share a calibration
    return X


def enumerate_conditionals(model, X):
    """Conditional marginals and the most probable completion of every row, by enumeration."""
    xs = bf.states(model.n_states)
    energy = bf.energies(model, xs)
    kmax = int(model.n_states.max())
    marg = np.zeros((len(X), model.n_variables, kmax))
    best = np.zeros(X.shape, dtype=np.int64)
    best_log = np.zeros(len(X))
    for r, row in enumerate(X):
        ok = np.all(np.isnan(row) | (xs == row), axis=1)
        w = np.exp(energy[ok] - energy[ok].max())
        w /= w.sum()
        for v in range(model.n_variables):
            marg[r, v, : model.n_states[v]] = np.bincount(xs[ok, v], weights=w, minlength=model.n_states[v])
        best[r] = xs[ok][np.argmax(energy[ok])]
        best_log[r] = energy[ok].max()
    return marg, best, best_log


@pytest.fixture(params=["enumerated", "tree"])
def engine(request, monkeypatch):
    """Both exact paths: every component enumerated, or every one on a junction tree."""
    monkeypatch.setattr(queries, "ENUMERATE_MAX_STATES", 1 << 20 if request.param == "enumerated" else 1)
    return request.param


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("p_missing", [0.3, 0.7, 1.0])
def test_conditional_marginals_equal_enumeration(name, p_missing, engine):
    model = model_of(name)
    X = evidence(model, 40, p_missing)
    ref, _, _ = enumerate_conditionals(model, X)
    got, std = model.conditional_marginals(X, return_std=True)
    np.testing.assert_allclose(got, ref, rtol=0, atol=EXACT)
    assert not std.any()  # exact: no Monte-Carlo error
    query = queries.EvidenceQuery(model.layout, model.theta, np.where(np.isnan(X), -1, X).astype(np.int64))
    assert (len(query.trees) > 0) == (engine == "tree" and p_missing > 0)


@pytest.mark.parametrize("name", MODELS)
def test_impute_methods_equal_enumeration(name, engine):
    model = model_of(name, seed=3)
    X = evidence(model, 40, 0.5, seed=4)
    marg, _, best_log = enumerate_conditionals(model, X)
    missing = np.isnan(X)
    marginal = model.impute(X, "marginal")
    expected = np.where(missing, marg.argmax(axis=2), X)
    np.testing.assert_array_equal(marginal, expected)
    most = model.impute(X, "map")
    # The completion's log-potential is the largest of all completions (ties would allow another).
    np.testing.assert_allclose(model.layout.energy(most, model.theta), best_log, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(most[~missing], X[~missing])


def test_impute_sample_draws_from_the_conditional(engine):
    model = model_of("triangles", seed=5)
    row = model.sample(1, random_state=6, method="exact").astype(float)
    row[0, [0, 2, 3, 6]] = np.nan
    n = 4000
    draws = model.impute(np.repeat(row, n, axis=0), "sample", random_state=0)
    ref, _, _ = enumerate_conditionals(model, row)
    for v in (0, 2, 3, 6):
        freq = np.bincount(draws[:, v], minlength=ref.shape[2]) / n
        # Each frequency is binomial: within 5 standard errors sqrt(p (1 - p) / n) of p (a fixed seed).
        se = np.sqrt(ref[0, v] * (1 - ref[0, v]) / n)
        assert np.all(np.abs(freq - ref[0, v]) <= 5 * se + 1e-12), v
    assert len(np.unique(draws, axis=0)) > 1  # repeated rows get independent draws
    np.testing.assert_array_equal(
        model.impute(row, "sample", random_state=1), model.impute(row, "sample", random_state=1)
    )


def test_wide_components_use_gibbs_within_their_reported_error():
    model = make_random_mrf(grid_graph(4, 4), 2, scale=0.5, random_state=0)
    X = evidence(model, 12, 0.8, seed=2)
    exact = model.conditional_marginals(X)
    with pytest.warns(ApproximateInferenceWarning, match="clamped Gibbs chains") as record:
        approx, std = model.conditional_marginals(X, return_std=True, max_bytes=2000, n_sweeps=400, random_state=0)
    assert "largest Monte-Carlo standard error" in str(record[0].message)
    wide = std > 0
    assert wide.sum() > 50
    z = (approx - exact)[wide] / std[wide]
    # The standard error comes from 20 independent chains (19 degrees of freedom): |t| > 5 has
    # probability ~1e-4 per entry; the root mean square of z must be about one.
    assert np.abs(z).max() < 5
    assert 0.5 < np.sqrt(np.mean(z**2)) < 2.0
    np.testing.assert_array_equal(approx[~wide], exact[~wide])  # small components stay exact
    np.testing.assert_allclose(approx.sum(axis=2), 1.0, atol=1e-12)


def test_gibbs_warns_when_the_error_is_above_the_threshold():
    model = make_random_mrf(grid_graph(4, 4), 2, scale=1.5, random_state=0)
    X = np.full((2, 16), np.nan)
    with pytest.warns(ApproximateInferenceWarning, match="raise n_sweeps or n_chains"):
        model.conditional_marginals(X, max_bytes=2000, n_chains=4, n_sweeps=10, random_state=0)


@pytest.mark.parametrize("method", ["marginal", "map", "sample"])
def test_wide_impute_names_the_approximation_and_keeps_the_evidence(method):
    model = make_random_mrf(grid_graph(4, 4), 2, scale=0.5, random_state=0)
    X = evidence(model, 12, 0.8, seed=2)
    with pytest.warns(ApproximateInferenceWarning):
        filled = model.impute(X, method, max_bytes=2000, random_state=0)
    observed = ~np.isnan(X)
    np.testing.assert_array_equal(filled[observed], X[observed])
    assert set(np.unique(filled)) <= {0, 1}
    if method == "map":  # iterated conditional modes: no single change raises the probability
        energy = model.layout.energy(filled, model.theta)
        for r, v in zip(*np.nonzero(~observed)):
            flipped = filled[r].copy()
            flipped[v] = 1 - flipped[v]
            assert model.layout.energy(flipped[None], model.theta)[0] <= energy[r] + 1e-12


def test_missing_markers_and_frames_give_the_same_answers():
    pd = pytest.importorskip("pandas")
    model = model_of("potts")
    X = evidence(model, 20, 0.4)
    ref = model.conditional_marginals(X)
    masked = np.ma.masked_invalid(X)
    np.testing.assert_array_equal(model.conditional_marginals(masked), ref)
    frame = pd.DataFrame(X, columns=list("abcdef")).astype("Int64")  # pandas NA
    np.testing.assert_array_equal(model.conditional_marginals(frame), ref)
    filled = model.impute(frame)
    assert isinstance(filled, pd.DataFrame) and list(filled.columns) == list("abcdef")
    assert filled.index.equals(frame.index)
    np.testing.assert_array_equal(filled.to_numpy(), model.impute(X))
    before = X.copy()
    model.impute(X, "sample", random_state=0)
    np.testing.assert_array_equal(X, before)  # never modified


def test_bad_evidence_is_refused_by_name():
    model = model_of("potts")
    X = evidence(model, 5, 0.3)
    X[2, 1] = 7
    with pytest.raises(ValueError, match=r"Column 1 has state 7 at row 2, but the model has 3 states"):
        model.conditional_marginals(X)
    with pytest.raises(ValueError, match=r"shape \(n_rows, 6\).*reshape\(1, -1\)"):
        model.impute(np.zeros(6))
    X[2, 1] = 0.5
    with pytest.raises(ValueError, match="must be integers 0..K-1, but column 1 has the value 0.5 at row 2"):
        model.impute(X)
    with pytest.raises(ValueError, match="method must be one of"):
        model.impute(X, method="mode")


def test_doc_example_values():
    m = DiscreteMRF([(0, 1)], n_states=2, n_variables=2, theta=[0.5, -0.2, 1.0])
    # p(x1 = 1 | x0 = 1) = e^(-0.2 + 1.0) / (1 + e^(-0.2 + 1.0)).
    np.testing.assert_allclose(m.conditional_marginals(np.array([[1, np.nan]]))[0, 1, 1], 1 / (1 + np.exp(-0.8)))


# -- MRFImputer --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def incomplete():
    model = make_random_mrf(grid_graph(3, 3), 3, scale=1.0, random_state=1)
    X = model.sample(300, random_state=2, method="exact").astype(float)
    X[np.random.default_rng(3).random(X.shape) < 0.2] = np.nan
    return X


def test_imputer_fills_with_the_fitted_models_conditional_modes(incomplete):
    imp = MRFImputer(DecomposedEM(grid_graph(3, 3), alpha=0.01)).fit(incomplete)
    filled = imp.transform(incomplete)
    np.testing.assert_array_equal(filled, imp.estimator_.model_.impute(incomplete))
    assert filled.dtype == np.int64 and not np.isnan(filled).any()
    assert imp.get_feature_names_out().tolist() == [f"x{j}" for j in range(9)]


def test_imputer_with_a_complete_data_estimator_fits_the_complete_rows(incomplete):
    complete = ~np.isnan(incomplete).any(axis=1)
    with pytest.warns(UserWarning, match=rf"fitted it on the {complete.sum()} rows of 300 without any"):
        imp = MRFImputer(ExactMaxLikelihood(grid_graph(3, 3))).fit(incomplete)
    alone = ExactMaxLikelihood(grid_graph(3, 3), n_states=3).fit(incomplete[complete])
    np.testing.assert_array_equal(imp.estimator_.theta_, alone.theta_)
    with pytest.raises(ValueError, match="none of the 2 rows"):
        MRFImputer(ExactMaxLikelihood()).fit(np.array([[0, np.nan], [np.nan, 1]]))


def test_imputer_in_pipelines_column_transformers_and_searches(incomplete):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(incomplete, columns=[f"c{j}" for j in range(9)])
    imp = MRFImputer(DecomposedEM("chain", alpha=0.01)).set_output(transform="pandas")
    out = imp.fit_transform(frame)
    assert list(out.columns) == list(frame.columns)
    # A ColumnTransformer imputing two groups of columns with two imputers.
    ct = ColumnTransformer(
        [
            ("mrf", MRFImputer(DecomposedEM(alpha=0.01)), [0, 1, 2, 3]),
            ("mode", SimpleImputer(strategy="most_frequent"), [4, 5]),
        ]
    )
    assert ct.fit_transform(incomplete[:, :6]).shape == (300, 6)
    # A pipeline imputing for a density estimator, searched over the imputation method.
    pipe = Pipeline(
        [
            ("impute", MRFImputer(DecomposedEM(grid_graph(3, 3), alpha=0.01))),
            ("mrf", ExactMaxLikelihood(grid_graph(3, 3), n_states=3)),
        ]
    )
    search = GridSearchCV(pipe, {"impute__method": ["marginal", "map"]}, cv=KFold(3)).fit(incomplete)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    scores = cross_val_score(pipe, incomplete, cv=KFold(3), n_jobs=2)
    np.testing.assert_array_equal(scores, cross_val_score(pipe, incomplete, cv=KFold(3), n_jobs=1))


# -- MRFClassifier -----------------------------------------------------------------------------


def test_star_classifier_at_alpha_zero_is_categorical_naive_bayes():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (2000, 5))
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, 2000)) % 3
    clf = MRFClassifier(alpha=0).fit(X, y)
    nb = CategoricalNB(alpha=1e-10, force_alpha=True).fit(X, y)
    # ExactMaxLikelihood stops when no mean-gradient entry exceeds tol = 1e-7; with cell
    # probabilities of at least 1 / 30 here the parameters are then within ~1e-5 of the optimum,
    # and a class's log-odds sums six of them.
    np.testing.assert_allclose(clf.predict_proba(X), nb.predict_proba(X), atol=1e-4)
    np.testing.assert_array_equal(clf.classes_, nb.classes_)
    assert clf.score(X, y) == pytest.approx(nb.score(X, y), abs=1e-3)


def test_classifier_probabilities_are_the_joint_models_conditional():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, (300, 4))
    y = np.array(["no", "yes"])[(X[:, 0] ^ X[:, 1]) | (rng.random(300) < 0.2)]
    clf = MRFClassifier("chain", estimator="pl", alpha=0.01).fit(X, y)
    model = clf.estimator_.model_
    assert model.n_variables == 5 and (0, 4) in model.cliques and (0, 1) in model.cliques
    ref, _, _ = enumerate_conditionals(model, np.column_stack([X[:10], np.full(10, np.nan)]).astype(float))
    np.testing.assert_allclose(clf.predict_proba(X[:10]), ref[:, 4, :2], rtol=0, atol=EXACT)
    assert set(clf.predict(X)) <= {"no", "yes"}


def test_classifier_refuses_one_class():
    with pytest.raises(ValueError, match="at least two classes"):
        MRFClassifier().fit(np.array([[0, 1], [1, 0]]), [3, 3])


def test_classifier_cross_validated_with_each_estimator():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 2, (200, 6))
    y = X[:, 0] ^ (rng.random(200) < 0.1)
    for name in ("exact", "pl", "lap"):
        scores = cross_val_score(MRFClassifier(estimator=name), X, y, cv=3)
        assert scores.mean() > 0.8, name
    with warnings.catch_warnings():
        warnings.simplefilter("error", ApproximateInferenceWarning)  # p(y | x) is always exact
        MRFClassifier("complete", estimator="pl").fit(X, y).predict_proba(X)


def test_estimator_argument_must_be_discrete():
    with pytest.raises(ValueError, match="needs a discrete skmrf estimator"):
        MRFImputer(SimpleImputer()).fit(np.array([[0.0, 1], [1, 0]]))
