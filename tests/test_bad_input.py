"""Bad input and silent wrong answers: every class of case raises or warns, naming the culprit."""

import warnings
from functools import partial

import networkx as nx
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from skmrf import (
    AdaptiveSchedule,
    ExactMaxLikelihood,
    GaussianLAP,
    GaussianMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    PseudoLikelihoodEstimator,
    TheorySchedule,
    grid_graph,
)
from skmrf.datasets import sample_random_mrf
from skmrf.estimators._base import EstimatedLikelihoodWarning

# -- a catalogue of bad input: every case raises, naming the culprit (#10, items 3 and 5) -----
#
# Each row: (estimator, constructor parameters, what to do, expected exception, message pattern).
# The message must name the culprit: the column (index or name), the value, the clique or the
# parameter. Rows are built by ``bad(...)``, which expands one kind of bad input over the
# estimators it applies to; the test ids read "<case>-<estimator>".

DISCRETE = ("exact", "lap", "pl", "mcmc")
MULTI = ("exact", "lap", "pl")  # the discrete estimators with an n_states parameter
GAUSS = ("glap", "gml", "glap_newton", "gml_sparse")  # the sparse paths of #14 get the same checks
ALL = DISCRETE + GAUSS

FACTORIES = {
    "exact": ExactMaxLikelihood,
    "lap": LAPEstimator,
    "pl": PseudoLikelihoodEstimator,
    "mcmc": lambda **kw: MCMCMaxLikelihood(
        **{"schedule": AdaptiveSchedule(n_iter=5, n_chains=20, n_sweeps=2), "random_state": 0, **kw}
    ),
    "glap": GaussianLAP,
    "gml": GaussianMaxLikelihood,
    "glap_newton": partial(GaussianLAP, newton_steps=2),
    "gml_sparse": partial(GaussianMaxLikelihood, solver="sparse"),
}

_rng = np.random.default_rng(0)
XB = _rng.integers(0, 2, size=(40, 4))  # binary states, 4 columns
XG = _rng.normal(size=(40, 4))  # Gaussian data, 4 columns


def data(kind):
    return XG if kind in GAUSS else XB


def with_value(X, r, j, v):
    X = X.astype(np.result_type(X, type(v)) if isinstance(v, (int, float)) else object)
    X[r, j] = v
    return X


def fit(X=None, **fit_kw):
    """Fit on ``X`` (a callable of the estimator key, or an array)."""
    return lambda est, key: est.fit(X(key) if callable(X) else (data(key) if X is None else X))


def fitted_then(action):
    """Fit on good data, then ``action(est, key)``."""

    def run(est, key):
        est.fit(data(key))
        return action(est, key)

    return run


def bad(name, estimators, do, exc, match, params=None):
    return [
        pytest.param(
            key,
            params or {},
            do,
            exc,
            match,
            id=f"{name}-{key}",
        )
        for key in estimators
    ]


def _df(X, columns):
    pd = pytest.importorskip("pandas")
    return pd.DataFrame(X, columns=columns)


def _graph(nodes, edges):
    g = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return g


def _directed():
    return nx.DiGraph([(0, 1), (1, 2), (2, 3)])


def _self_loop():
    return _graph(range(4), [(0, 1), (1, 1), (2, 3)])


NOT_SYMMETRIC = np.triu(np.ones((4, 4)), 1)

CATALOGUE = [
    # shapes
    *bad("1d-X", ALL, fit(lambda k: data(k)[:, 0]), ValueError, "Expected 2D array"),
    *bad("3d-X", ALL, fit(lambda k: data(k)[None]), ValueError, "dim 3"),
    *bad("zero-rows", ALL, fit(lambda k: data(k)[:0]), ValueError, r"0 sample\(s\)"),
    *bad("zero-columns", ALL, fit(lambda k: data(k)[:, :0]), ValueError, r"0 feature\(s\)"),
    # dtypes
    *bad(
        "strings",
        DISCRETE,
        fit(with_value(XB, 3, 2, "b")),
        ValueError,
        r"column 2 has the non-numeric value 'b' at row 3",
    ),
    *bad("strings", GAUSS, fit(with_value(XG, 3, 2, "b")), ValueError, "could not convert string to float: 'b'"),
    *bad(
        "none",
        DISCRETE,
        fit(with_value(XB, 3, 2, None)),
        ValueError,
        r"column 2 has the non-numeric value None at row 3 \(a missing value\)",
    ),
    *bad(
        "numpy-strings",
        DISCRETE,
        fit(np.where(XB == 1, "yes", "no")),
        ValueError,
        r"column 0 has the non-numeric value '(yes|no)' at row 0",
    ),
    *bad(
        "object-dict",
        DISCRETE,
        fit(with_value(XB, 3, 2, {"a": 1})),
        TypeError,
        r"column 2 has the non-numeric value \{'a': 1\} at row 3",
    ),
    *bad("complex", ALL, fit(lambda k: data(k) + 1j), ValueError, "Complex data not supported"),
    # values
    *bad("nan", DISCRETE, fit(with_value(XB, 5, 1, np.nan)), ValueError, r"column 1 has nan at row 5"),
    *bad("nan", GAUSS, fit(with_value(XG, 5, 1, np.nan)), ValueError, "Input X contains NaN"),
    *bad("inf", DISCRETE, fit(with_value(XB, 5, 1, np.inf)), ValueError, r"column 1 has inf at row 5"),
    *bad("inf", GAUSS, fit(with_value(XG, 5, 1, np.inf)), ValueError, "Input X contains infinity"),
    *bad("negative", DISCRETE, fit(with_value(XB, 7, 3, -1)), ValueError, r"column 3 has -1 at row 7"),
    *bad("fractional", DISCRETE, fit(with_value(XB, 7, 3, 0.5)), ValueError, r"column 3 has the value 0.5 at row 7"),
    *bad("float-1e20", DISCRETE, fit(with_value(XB, 2, 0, 1e20)), ValueError, r"Column 0 has state 1e\+20 at row 2"),
    *bad("int-1e15", DISCRETE, fit(with_value(XB, 2, 0, 10**15)), ValueError, r"Column 0 has state 1000000000000000 "),
    *bad(
        "beyond-n_states",
        MULTI,
        fit(with_value(XB, 4, 1, 2)),
        ValueError,
        r"[Cc]olumn 1 has state 2 at row 4",
        params={"n_states": 2},
    ),
    *bad(  # the adaptive schedule fits any number of states; Domke's theory is binary
        "non-binary",
        ("mcmc",),
        fit(with_value(XB, 4, 1, 2)),
        ValueError,
        r"[Cc]olumn 1 has state 2 at row 4",
        params={"schedule": "theory"},
    ),
    *bad(
        "tuple-from-sample_random_mrf",
        DISCRETE,
        fit(lambda k: sample_random_mrf("chain", 10, n_variables=4)),
        TypeError,
        r"sample_random_mrf returns \(X, model\)",
    ),
    *bad(
        "negative-in-dataframe",
        DISCRETE,
        fit(lambda k: _df(with_value(XB, 7, 1, -1), ["a", "Bc", "c", "d"])),
        ValueError,
        r"column 1 \('Bc'\) has -1 at row 7",
    ),
    *bad(
        "beyond-n_states-in-dataframe",
        MULTI,
        fit(lambda k: _df(with_value(XB, 4, 1, 3), ["a", "Bc", "c", "d"])),
        ValueError,
        r"Column 1 \('Bc'\) has state 3 at row 4, but the model has 2 states",
        params={"n_states": 2},
    ),
    # graphs
    *bad("unknown-shorthand", ALL, fit(), ValueError, "Unknown graph shorthand 'ring'", {"graph": "ring"}),
    *bad(
        "wrong-grid-size",
        ALL,
        fit(),
        ValueError,
        r"graph='grid:2x3' has 6 variables but X has 4",
        {"graph": "grid:2x3"},
    ),
    *bad("bad-node", ALL, fit(), ValueError, r"variable 7 in clique \(0, 7\)", {"graph": [(0, 7)]}),
    *bad(
        "repeated-variable",
        ALL,
        fit(),
        ValueError,
        r"Clique \(1, 1\) repeats a variable: 1 appears twice",
        {"graph": [(0, 1), (1, 1)]},
    ),
    *bad("empty-clique", ALL, fit(), ValueError, r"Clique 1 of the graph is empty", {"graph": [(0, 1), ()]}),
    *bad("non-symmetric-adjacency", ALL, fit(), ValueError, r"not symmetric: entry \(0, 1\)", {"graph": NOT_SYMMETRIC}),
    *bad(
        "adjacency-wrong-shape",
        ALL,
        fit(),
        ValueError,
        r"shape \(3, 3\) but X has 4 columns",
        {"graph": np.ones((3, 3))},
    ),
    *bad("directed", ALL, fit(), ValueError, "undirected.*got a DiGraph", {"graph": _directed()}),
    *bad("self-loop", ALL, fit(), ValueError, "self-loop at node 1", {"graph": _self_loop()}),
    *bad(
        "networkx-node-count",
        ALL,
        fit(),
        ValueError,
        "3 nodes but X has 4 columns",
        {"graph": _graph(range(3), [(0, 1)])},
    ),
    *bad("graph-type", ALL, fit(), ValueError, "'graph' parameter", {"graph": 3.5}),
    *bad(
        "dataframe-node-not-a-column",
        ALL,
        fit(lambda k: _df(data(k), list("abcd"))),
        ValueError,
        r"nodes \['z'\] are not columns of X.*columns \['d'\] have no node",
        {"graph": _graph(list("abcz"), [("a", "b"), ("c", "z")])},
    ),
    *bad(
        "dataframe-missing-columns",
        ALL,
        fit(lambda k: _df(data(k), list("abcd"))),
        ValueError,
        r"nodes \['y', 'z'\] are not columns of X.*columns \['c', 'd'\] have no node",
        {"graph": _graph(list("abyz"), [("a", "b"), ("y", "z")])},
    ),
    *bad(
        "dataframe-clique-names-unknown-column",
        ALL,
        fit(lambda k: _df(data(k), list("abcd"))),
        ValueError,
        r"variable 'z' in clique \('a', 'z'\)",
        {"graph": [("a", "z")]},
    ),
    # hyper-parameters
    *bad("alpha-negative", DISCRETE, fit(), ValueError, "'alpha' parameter", {"alpha": -1.0}),
    *bad("tol-zero", MULTI, fit(), ValueError, "'tol' parameter", {"tol": 0.0}),
    *bad("tol-negative", ("gml",), fit(), ValueError, "'tol' parameter", {"tol": -1.0}),
    *bad("tol-zero", ("gml",), fit(), ValueError, "'tol' parameter", {"tol": 0.0}),
    *bad("max_iter-zero", (*MULTI, "gml"), fit(), ValueError, "'max_iter' parameter", {"max_iter": 0}),
    *bad("n_iter-zero", ("mcmc",), fit(), ValueError, "'n_iter' parameter", {"schedule": AdaptiveSchedule(n_iter=0)}),
    *bad("n_states-one", MULTI, fit(), ValueError, "'n_states' parameter", {"n_states": 1}),
    *bad("n_states-entry-one", MULTI, fit(), ValueError, r"n_states\[1\] is 1", {"n_states": [2, 1, 2, 2]}),
    *bad("n_states-fractional", MULTI, fit(), ValueError, r"n_states\[1\] is 2.5", {"n_states": [2, 2.5, 2, 2]}),
    *bad(
        "n_states-wrong-length",
        MULTI,
        fit(),
        ValueError,
        "n_states has 3 entries but X has 4 columns",
        {"n_states": [2, 2, 2]},
    ),
    *bad("n_states-2d", MULTI, fit(), ValueError, r"n_states must be .* 1-D", {"n_states": [[2, 2], [2, 2]]}),
    *bad("n_states-huge", MULTI, fit(), ValueError, r"n_states\[0\] is 1099511627776", {"n_states": [2**40, 2, 2, 2]}),
    *bad("n_states-bool", MULTI, fit(), ValueError, r"n_states\[2\] is True", {"n_states": [2, 2, True, 2]}),
    *bad("n_states-string", MULTI, fit(), ValueError, "'n_states' parameter", {"n_states": "many"}),
    *bad(
        "n_jobs-zero",
        ("lap", "pl", "mcmc", "glap"),
        fit(),
        ValueError,
        "'n_jobs' parameter",
        {"n_jobs": 0},
    ),
    *bad("n_jobs-float", ("lap", "pl", "mcmc", "glap"), fit(), ValueError, "'n_jobs' parameter", {"n_jobs": 1.5}),
    *bad("strategy", ("lap",), fit(), ValueError, "'strategy' parameter", {"strategy": "bogus"}),
    *bad("node_rule", ("lap",), fit(), ValueError, "'node_rule' parameter", {"node_rule": "bogus"}),
    *bad("score_method", DISCRETE, fit(), ValueError, "'score_method' parameter", {"score_method": "bogus"}),
    *bad("score_method-ais", ("exact",), fit(), ValueError, "'score_method' parameter", {"score_method": "ais"}),
    *bad("max_bytes-zero", DISCRETE, fit(), ValueError, "'max_bytes' parameter", {"max_bytes": 0}),
    *bad("projection", ("mcmc",), fit(), ValueError, "'projection' parameter", {"projection": "bogus"}),
    *bad("init", ("mcmc",), fit(), ValueError, "'init' parameter", {"schedule": AdaptiveSchedule(init="bogus")}),
    *bad("delta-one", ("mcmc",), fit(), ValueError, "'delta' parameter", {"schedule": TheorySchedule(delta=1.0)}),
    *bad("max_coupling-zero", ("mcmc",), fit(), ValueError, "'max_coupling' parameter", {"max_coupling": 0.0}),
    *bad("non-pairwise-graph", ("mcmc",), fit(), ValueError, r"factor \(0, 1, 2\)", {"graph": [(0, 1, 2)]}),
    *bad(
        "random_state", ("lap", "pl", "mcmc"), fit(), ValueError, "'random_state' parameter", {"random_state": "seed"}
    ),
    *bad("verbose-negative", ALL, fit(), ValueError, "'verbose' parameter", {"verbose": -1}),
    *bad("newton_steps-negative", ("glap",), fit(), ValueError, "'newton_steps' parameter", {"newton_steps": -1}),
    *bad("sparse", GAUSS, fit(), ValueError, "'sparse' parameter", {"sparse": "yes"}),
    *bad("shrinkage-above-one", GAUSS, fit(), ValueError, "'shrinkage' parameter", {"shrinkage": 2.0}),
    *bad("repair", ("glap",), fit(), ValueError, "'repair' parameter", {"repair": "bogus"}),
    *bad("solver", ("gml",), fit(), ValueError, "'solver' parameter", {"solver": "bogus"}),
    # prediction-time mismatches
    *bad(
        "score-wrong-n-columns",
        ALL,
        fitted_then(lambda e, k: e.score(data(k)[:, :3])),
        ValueError,
        "X has 3 features, but .* is expecting 4 features",
    ),
    *bad(
        "score-state-beyond-fitted",
        DISCRETE,
        fitted_then(lambda e, k: e.score(with_value(XB, 6, 2, 5))),
        ValueError,
        r"Column 2 has state 5 at row 6, but the model has 2 states",
    ),
    *bad(
        "score_samples-fractional",
        DISCRETE,
        fitted_then(lambda e, k: e.score_samples(with_value(XB, 6, 2, 0.25))),
        ValueError,
        r"column 2 has the value 0.25 at row 6",
    ),
    *bad(
        "score-nan",
        DISCRETE,
        fitted_then(lambda e, k: e.score(with_value(XB, 6, 2, np.nan))),
        ValueError,
        r"column 2 has nan at row 6",
    ),
    *bad(
        "score-other-column-names",
        ALL,
        lambda e, k: e.fit(_df(data(k), list("abcd"))).score(_df(data(k), list("abce"))),
        ValueError,
        r"Feature names unseen at fit time:\n- e",
    ),
    # calls before fit
    *bad("score-before-fit", ALL, lambda e, k: e.score(data(k)), NotFittedError, "is not fitted yet"),
    *bad("score_samples-before-fit", ALL, lambda e, k: e.score_samples(data(k)), NotFittedError, "is not fitted yet"),
    *bad("sample-before-fit", DISCRETE, lambda e, k: e.sample(3), NotFittedError, "is not fitted yet"),
    *bad("theta_-before-fit", DISCRETE, lambda e, k: e.theta_, NotFittedError, "is not fitted yet"),
    *bad("get_precision-before-fit", GAUSS, lambda e, k: e.get_precision(), NotFittedError, "is not fitted yet"),
    # sample(n)
    *bad(
        "sample-negative-n",
        DISCRETE,
        fitted_then(lambda e, k: e.sample(-1)),
        ValueError,
        "n_samples must be a non-negative integer; got -1",
    ),
    *bad(
        "sample-float-n",
        DISCRETE,
        fitted_then(lambda e, k: e.sample(2.5)),
        TypeError,
        "n_samples must be a non-negative integer; got 2.5",
    ),
    *bad(
        "sample-string-n",
        DISCRETE,
        fitted_then(lambda e, k: e.sample("10")),
        TypeError,
        "n_samples must be a non-negative integer; got '10'",
    ),
    *bad("sample-bool-n", DISCRETE, fitted_then(lambda e, k: e.sample(True)), TypeError, "n_samples .* got True"),
    *bad(
        "sample-method",
        DISCRETE,
        fitted_then(lambda e, k: e.sample(3, method="bogus")),
        ValueError,
        "method must be .*; got 'bogus'",
    ),
    *bad(
        "sample-n_sweeps-zero",
        DISCRETE,
        fitted_then(lambda e, k: e.sample(3, method="gibbs", n_sweeps=0)),
        ValueError,
        "n_sweeps must be a positive integer; got 0",
    ),
]


@pytest.mark.filterwarnings("ignore::UserWarning")  # non-existent MLE etc.: only the errors matter here
@pytest.mark.parametrize(("key", "params", "do", "exc", "match"), CATALOGUE)
def test_bad_input_names_the_culprit(key, params, do, exc, match):
    est = FACTORIES[key](**params)
    with pytest.raises(exc, match=match):
        do(est, key)


def test_catalogue_size():
    assert len(CATALOGUE) >= 80


def test_sample_random_mrf_returns_named_fields():
    res = sample_random_mrf("chain", 5, n_variables=3, random_state=0)
    X, model = res  # still unpacks as before
    assert res.X is X and res.model is model
    assert X.shape == (5, 3)


def test_sample_zero_rows_is_an_empty_sample():
    est = ExactMaxLikelihood().fit(XB)
    assert est.sample(0).shape == (0, 4)


# -- score never changes meaning silently (#10, item 1) --------------------------------------
@pytest.fixture(scope="module")
def grid_data():
    X, _ = sample_random_mrf(grid_graph(5, 5), 300, random_state=0)
    return X


# A budget of 2000 bytes refuses the junction tree of a 5x5 grid (a calibration needs ~8 kB),
# standing in for a graph too wide for the default 2 GiB.
NARROW = 2000


@pytest.mark.parametrize(
    "make",
    [
        lambda: LAPEstimator(grid_graph(5, 5), max_bytes=NARROW, random_state=0),
        lambda: PseudoLikelihoodEstimator(grid_graph(5, 5), max_bytes=NARROW, random_state=0),
        lambda: MCMCMaxLikelihood(
            grid_graph(5, 5),
            schedule=AdaptiveSchedule(n_iter=5, n_chains=50, n_sweeps=2),
            max_bytes=NARROW,
            random_state=0,
        ),
    ],
    ids=["lap", "pl", "mcmc"],
)
def test_auto_score_is_a_likelihood_estimate_not_a_pseudo_likelihood(make, grid_data):
    X = grid_data
    est = make().fit(X)
    assert est.score_method_ == "ais"
    exact_log_z = est.model_.log_partition()  # the default budget fits a 5x5 grid
    # AIS with 100 chains x 1000 steps on 25 variables: the error is a few standard errors at most.
    assert abs(est.log_partition_ - exact_log_z) < 5 * est.log_partition_std_ + 0.05
    exact = np.mean(est.model_.log_prob(X))
    with pytest.warns(EstimatedLikelihoodWarning, match="annealed importance sampling"):
        score = est.score(X)
    assert score == pytest.approx(exact, abs=5 * est.log_partition_std_ + 0.05)
    # It is the likelihood, not the pseudo-likelihood (0.38 nats apart here): much closer to the first.
    assert abs(score - exact) < abs(score - np.mean(est.model_.log_pseudo_likelihood(X))) / 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", EstimatedLikelihoodWarning)  # only the first score warns
        assert est.score(X) == score
    # Seeded: the same random_state gives the same estimate.
    assert make().fit(X).log_partition_ == est.log_partition_


def test_pseudo_score_only_when_asked_for_by_name(grid_data):
    est = LAPEstimator(grid_graph(5, 5), max_bytes=NARROW, score_method="pseudo").fit(grid_data)
    assert est.score_method_ == "pseudo" and est.log_partition_ is None
    np.testing.assert_allclose(est.score_samples(grid_data), est.model_.log_pseudo_likelihood(grid_data))


def test_exact_score_method_refuses_a_wide_graph(grid_data):
    with pytest.raises(ValueError, match="treewidth"):
        LAPEstimator(grid_graph(5, 5), max_bytes=NARROW, score_method="exact").fit(grid_data)
