"""Bad data and graphs (issue 23): every class of case raises or is handled, naming the culprit.

Classes: columns named by label (DataFrames whose labels are not strings), dask arrays of
unknown chunk sizes and dask DataFrames, the chunked path (memmap, dask) validating exactly like
the in-memory path, missing-value markers in object columns, structures too large to build, and
estimators given as parameters before they are fitted.
"""

import pickle
import warnings
from functools import partial

import networkx as nx
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

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
)
from skmrf._kernels.lap_structure import NeighbourhoodTooLargeError
from skmrf._utils import _memory

pd = pytest.importorskip("pandas")

FACTORIES = {
    "exact": ExactMaxLikelihood,
    "lap": LAPEstimator,
    "pl": PseudoLikelihoodEstimator,
    "mcmc": lambda **kw: MCMCMaxLikelihood(
        **{"schedule": AdaptiveSchedule(n_iter=5, n_chains=20, n_sweeps=2), "random_state": 0, **kw}
    ),
    "em": partial(DecomposedEM, max_iter=5),
    "mle_induced": MLEInducedLikelihood,
    "mh": partial(MetropolisHastingsMRF, n_steps=20, burn_in=0, random_state=0),
    "glap": GaussianLAP,
    "gml": GaussianMaxLikelihood,
}
GAUSS = ("glap", "gml")
SCORING = tuple(k for k in FACTORIES if k != "mle_induced")  # every estimator with score_samples

_rng = np.random.default_rng(0)
XB = _rng.integers(0, 2, size=(60, 3))  # binary states, 3 columns
XG = _rng.normal(size=(60, 3))  # Gaussian data, 3 columns
LABELS = [2, 0, 1]
# A DataFrame reaches the estimator column-major and its array row-major: sums over rows (the
# Gaussian means and covariances) may round in another order, a few ulps apart on 60 rows.
LAYOUT_RTOL = 1e-12


def data(key):
    return XG if key in GAUSS else XB


def wired_edges(est):
    """The edges of the fitted graph as pairs of column positions."""
    if hasattr(est, "adjacency_"):
        a = est.adjacency_.tocoo()
        return {(int(i), int(j)) for i, j in zip(a.row, a.col) if i < j}
    return set(est.graph_.edges)


def fit_quietly(est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence or estimate notes: only the wiring matters here
        return est.fit(X)


# -- 1. columns named by label --------------------------------------------------------------
#
# Integer labels [2, 0, 1] are not positions: graph=[(0, 1)] names the columns labelled 0 and 1,
# at positions 1 and 2. Before the fix every estimator wired positions 0 and 1.


@pytest.mark.parametrize("key", FACTORIES)
def test_integer_labels_are_resolved_by_label(key):
    df = pd.DataFrame(data(key), columns=LABELS)
    est = fit_quietly(FACTORIES[key](graph=[(0, 1)]), df)
    assert wired_edges(est) == {(1, 2)}
    assert list(est.feature_labels_in_) == LABELS


@pytest.mark.parametrize("key", FACTORIES)
def test_a_node_that_is_no_label_is_refused_by_name(key):
    df = pd.DataFrame(data(key), columns=LABELS)
    with pytest.raises(ValueError, match=r"variable 5 .*\[2, 0, 1\].*to_numpy"):
        fit_quietly(FACTORIES[key](graph=[(0, 5)]), df)


@pytest.mark.parametrize("key", ("lap", "glap"))
def test_labelled_fit_equals_the_positional_fit(key):
    df = pd.DataFrame(data(key), columns=LABELS)
    by_label = fit_quietly(FACTORIES[key](graph=[(0, 1)]), df)
    by_position = fit_quietly(FACTORIES[key](graph=[(1, 2)]), df.to_numpy())
    np.testing.assert_allclose(by_label.score_samples(df), by_position.score_samples(df.to_numpy()), rtol=LAYOUT_RTOL)


@pytest.mark.parametrize("key", ("lap", "glap"))
def test_shorthands_and_matrices_stay_positional(key):
    df = pd.DataFrame(data(key), columns=LABELS)
    assert wired_edges(fit_quietly(FACTORIES[key](graph="chain"), df)) == {(0, 1), (1, 2)}
    adjacency = np.zeros((3, 3))
    adjacency[0, 1] = adjacency[1, 0] = 1
    assert wired_edges(fit_quietly(FACTORIES[key](graph=adjacency), df)) == {(0, 1)}


@pytest.mark.parametrize("key", ("lap", "glap"))
def test_networkx_nodes_name_labels(key):
    df = pd.DataFrame(data(key), columns=LABELS)
    est = fit_quietly(FACTORIES[key](graph=nx.Graph([(0, 1), (1, 2)])), df)
    assert wired_edges(est) == {(1, 2), (0, 2)}  # label 0-1 is positions 1-2, label 1-2 is 2-0
    with pytest.raises(ValueError, match=r"no node is a column label.*to_numpy"):
        fit_quietly(FACTORIES[key](graph=nx.Graph([(5, 6), (6, 7)])), df)


@pytest.mark.parametrize(
    ("columns", "match"),
    [([1, "a", 2], r"mix types \(int 1, str 'a'\)"), (["a", "a", "b"], r"duplicated column labels \['a'\]")],
)
@pytest.mark.parametrize("key", ("lap", "glap", "mle_induced"))
def test_mixed_or_duplicated_labels_are_refused(key, columns, match):
    with pytest.raises(ValueError, match=match):
        FACTORIES[key]().fit(pd.DataFrame(data(key), columns=columns))


@pytest.mark.parametrize("key", SCORING)
def test_score_finds_the_columns_by_label_again(key):
    df = pd.DataFrame(data(key), columns=LABELS)
    est = fit_quietly(FACTORIES[key](graph=[(0, 1)]), df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = est.score_samples(df)
        np.testing.assert_allclose(est.score_samples(df.to_numpy()), expected, rtol=LAYOUT_RTOL)  # by position
        with pytest.raises(ValueError, match=r"in the order \[2, 0, 1\].*X\[\[2, 0, 1\]\]"):
            est.score_samples(df[[0, 1, 2]])
        with pytest.raises(ValueError, match=r"labels \[2\] are missing and labels \[3\] were not seen"):
            est.score_samples(df.rename(columns={2: 3}))
        clone = pickle.loads(pickle.dumps(est))  # the labels survive a pickle round trip
        np.testing.assert_array_equal(clone.score_samples(df), expected)


@pytest.mark.parametrize("key", ("lap", "glap"))
def test_cross_validation_keeps_the_labels(key):
    from sklearn.model_selection import cross_val_score

    df = pd.DataFrame(data(key), columns=LABELS)
    by_label = cross_val_score(FACTORIES[key](graph=[(0, 1)]), df, cv=3)
    by_position = cross_val_score(FACTORIES[key](graph=[(1, 2)]), df.to_numpy(), cv=3)
    np.testing.assert_allclose(by_label, by_position, rtol=LAYOUT_RTOL)


@pytest.mark.parametrize("key", ("lap", "glap"))
def test_labelled_frame_scored_by_a_positional_fit_is_refused(key):
    est = fit_quietly(FACTORIES[key](), data(key))
    with pytest.raises(ValueError, match=r"labelled \[2, 0, 1\].*numbered by position.*to_numpy"):
        est.score(pd.DataFrame(data(key), columns=LABELS))
    est.score(pd.DataFrame(data(key)))  # labels 0..n-1: label and position agree


# -- 2. dask arrays of unknown chunk sizes, dask DataFrames ---------------------------------

CHUNKED = ("exact", "lap", "glap")


@pytest.mark.parametrize("key", CHUNKED)
def test_dask_unknown_chunk_sizes_are_refused(key):
    dd = pytest.importorskip("dask.dataframe")
    ddf = dd.from_pandas(pd.DataFrame(data(key), columns=["a", "b", "c"]), npartitions=3)
    with pytest.raises(ValueError, match=r"unknown \(NaN\).*to_dask_array\(lengths=True\)"):
        FACTORIES[key]().fit(ddf.values)  # was: 26 of 26 LAP parameters NaN with a ConvergenceWarning
    with pytest.raises(ValueError, match=r"dask DataFrame.*to_dask_array\(lengths=True\)"):
        FACTORIES[key]().fit(ddf)
    est = FACTORIES[key]().fit(ddf.to_dask_array(lengths=True))  # the way the messages give
    assert np.all(np.isfinite(est.theta_ if hasattr(est, "theta_") else est.precision_))


# -- 3. the chunked path validates exactly like the in-memory path --------------------------
#
# The same bad array, in memory, as a memmap and as a dask array: the same exception type and
# the same culprit in the message. (A memmap cannot hold objects or have zero size.)


def _with(X, r, j, v, dtype=None):
    X = X.astype(dtype or np.result_type(X, type(v)))
    X[r, j] = v
    return X


BAD = {
    "complex": (lambda X: X.astype(complex) + 1j, ValueError, r"[Cc]omplex data not supported", "all"),
    "nan": (lambda X: _with(X, 7, 1, np.nan), ValueError, r"NaN: column 1 has nan at row 7", "all"),
    "inf": (lambda X: _with(X, 7, 1, np.inf), ValueError, r"infinity: column 1 has inf at row 7", "all"),
    "negative": (lambda X: _with(X, 7, 1, -1), ValueError, r"column 1 has -1 at row 7", "discrete"),
    "non_integer": (lambda X: _with(X, 7, 1, 0.5), ValueError, r"column 1 has the value 0.5 at row 7", "discrete"),
    "string": (
        lambda X: _with(X, 7, 1, "x", "U8"),
        ValueError,
        r"column 1 has the non-numeric value 'x' at row 7",
        "all",
    ),
    "datetime": (lambda X: X.astype(np.int64).astype("datetime64[D]"), ValueError, r"dtype datetime64\[D\]", "all"),
    "one_d": (lambda X: X[:, 0], ValueError, r"2D array", "all"),
    "no_column": (lambda X: X[:, :0], ValueError, r"0 feature\(s\)", "all"),
    "no_row": (lambda X: X[:0], ValueError, r"0 sample\(s\)", "all"),
    "object": (
        lambda X: _with(X, 7, 1, "x", object),
        ValueError,
        r"column 1 has the non-numeric value 'x' at row 7",
        "all",
    ),
}


def _as(kind, X, tmp_path):
    if kind == "memory":
        return X
    if kind == "memmap":
        if X.dtype == object or X.size == 0:
            pytest.skip("a memmap cannot hold objects or be empty")
        path = tmp_path / "x.dat"
        mm = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
        mm[:] = X
        mm.flush()
        return np.memmap(path, dtype=X.dtype, mode="r", shape=X.shape)
    da = pytest.importorskip("dask.array")
    return da.from_array(X, chunks=(5,) + X.shape[1:])  # the bad row 7 is in the second block


@pytest.mark.parametrize("kind", ("memory", "memmap", "dask"))
@pytest.mark.parametrize("case", BAD)
@pytest.mark.parametrize("key", CHUNKED)
def test_chunked_path_validates_like_memory(key, case, kind, tmp_path):
    make, exc, match, applies = BAD[case]
    if applies == "discrete" and key in GAUSS:
        pytest.skip("real data may be negative or fractional")
    X = make(data(key).astype(np.float64) if case != "negative" else data(key))
    with pytest.raises(exc, match=match):
        FACTORIES[key]().fit(_as(kind, X, tmp_path))


@pytest.mark.parametrize("key", CHUNKED)
def test_dask_reports_the_first_bad_row_whatever_finishes_first(key):
    da = pytest.importorskip("dask.array")
    X = data(key).astype(np.float64)
    X[[3, 23, 43], 2] = np.nan  # one bad row in three of the twelve blocks
    with pytest.raises(ValueError, match=r"column 2 has nan at row 3\."):
        FACTORIES[key]().fit(da.from_array(X, chunks=(5, 3)))


# -- 4. missing-value markers in object columns ---------------------------------------------


def _with_na(key, marker):
    df = pd.DataFrame(data(key), columns=["a", "b", "c"]).astype(object)
    df.iloc[4, 1] = marker
    return df


@pytest.mark.parametrize("marker", [pd.NA, pd.NaT, None], ids=["NA", "NaT", "None"])
@pytest.mark.parametrize("key", ("exact", "lap", "pl", "mle_induced", "glap", "gml"))
def test_missing_marker_is_named_at_fit(key, marker):
    # was: TypeError "float() argument must be a string or a real number, not 'NAType'"
    with pytest.raises(ValueError, match=r"column 1 \('b'\) has the non-numeric value .* at row 4 \(a missing value\)"):
        FACTORIES[key]().fit(_with_na(key, marker))


@pytest.mark.parametrize("key", ("lap", "glap"))
def test_missing_marker_is_named_at_score(key):
    est = fit_quietly(FACTORIES[key](), pd.DataFrame(data(key), columns=["a", "b", "c"]))
    with pytest.raises(
        ValueError, match=r"column 1 \('b'\) has the non-numeric value <NA> at row 4 \(a missing value\)"
    ):
        est.score(_with_na(key, pd.NA))


@pytest.mark.parametrize("marker", [pd.NA, pd.NaT, None], ids=["NA", "NaT", "None"])
def test_decomposed_em_reads_missing_markers_as_missing(marker):
    with_nan = pd.DataFrame(XB.astype(float), columns=["a", "b", "c"])
    with_nan.iloc[4, 1] = np.nan
    expected = fit_quietly(DecomposedEM(max_iter=5), with_nan).theta_
    np.testing.assert_array_equal(fit_quietly(DecomposedEM(max_iter=5), _with_na("em", marker)).theta_, expected)


def test_mixed_type_node_names():
    graph = nx.Graph([(1, "a"), ("a", 2)])
    assert LAPEstimator(graph).fit(XB).graph_.edges == [(0, 1), (1, 2)]  # list(G.nodes) order
    with pytest.raises(ValueError, match=r"nodes \['a'\] are not columns"):
        LAPEstimator(graph).fit(pd.DataFrame(XB, columns=LABELS))


# -- 5. structures too large to build are refused before allocating -------------------------


def test_lap_one_variable_of_ten_thousand_states_is_refused_with_figures():
    # was: MemoryError allocating 11.9 GiB (10^4 states x 9,999 parameters, and Newton's Hessian)
    with pytest.raises(NeighbourhoodTooLargeError, match=r"10,000 joint states and 9,999 parameters.*GiB"):
        LAPEstimator(graph=[], n_states=10**4).fit(np.array([[0], [1]]))


@pytest.mark.parametrize("score_method", ("auto", "ais"))
def test_lap_empty_graph_with_states_never_seen(score_method):
    # was: "cannot reshape array of size 0" in the Gibbs kernel of AIS
    X = np.zeros((5, 3), dtype=int)
    est = LAPEstimator(graph=[], n_states=3, score_method=score_method, random_state=0).fit(X)
    exact = LAPEstimator(graph=[], n_states=3, score_method="exact").fit(X)
    # Independent variables: every AIS weight is the same (no interaction energy), so the
    # estimate equals the exact log Z up to float64 rounding of sums of a few terms.
    np.testing.assert_allclose(est.score(X), exact.score(X), rtol=1e-12)
    assert est.sample(4, random_state=0, method="gibbs").shape == (4, 3)


@pytest.mark.parametrize("key", ("exact", "pl"))
def test_fit_larger_than_memory_is_refused_with_figures(key, monkeypatch):
    monkeypatch.setattr(_memory, "physical_memory", lambda: 2**20)  # a machine of 1 MiB
    X = np.array([[0, 1, 2], [1, 2, 0]])
    with pytest.raises(ValueError, match=r"L-BFGS over [\d,]+ parameters.* GiB, more than this machine's"):
        FACTORIES[key](n_states=60).fit(X)  # 2 x 59^2 + 3 x 59 parameters: about 2.4 MiB of L-BFGS


# -- 6. estimators given as parameters must be fitted ---------------------------------------


def test_unfitted_init_estimator_is_named():
    # was: AttributeError: 'LAPEstimator' object has no attribute 'model_'
    with pytest.raises(NotFittedError, match=r"init=LAPEstimator\(\.\.\.\) is not fitted"):
        DecomposedEM(init=LAPEstimator()).fit(XB)
    fitted = LAPEstimator().fit(XB)
    assert np.all(np.isfinite(DecomposedEM(init=fitted, max_iter=5).fit(XB).theta_))


def test_a_count_column_left_in_x_is_named():
    # #40: a contingency table passed with its Freq column still in X (values up to 670 over 32
    # cells) was fitted as a fifth variable of 671 states, with only a NoFiniteEstimateWarning. A
    # column with more "auto" states than rows (and more than 20) is named, with the remedy.
    import pandas as pd

    from skmrf import ExactMaxLikelihood

    rng = np.random.default_rng(0)
    freq = rng.integers(0, 671, 32)
    freq[0] = 670
    df = pd.DataFrame(np.c_[rng.integers(0, 2, (32, 4)), freq], columns=["Class", "Sex", "Age", "Survived", "Freq"])
    with pytest.warns(
        UserWarning, match=r"column 'Freq' takes values up to 670.*671 states over 32 rows.*sample_weight"
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=RuntimeWarning)
            ExactMaxLikelihood("chain", max_iter=5).fit(df)
    with warnings.catch_warnings():  # the four binary columns alone: nothing to say
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", message=".*(converge|finite).*")
        ExactMaxLikelihood("chain").fit(df.drop(columns="Freq"))


def test_hints_name_the_fix():
    # #40: hints that did not name the fix. NaN given to a complete-data estimator now names
    # DecomposedEM (and --method em) and MRFImputer; a Gaussian one names imputation;
    # coupling_scores of a fitted GaussianLAP said it "is not fitted".
    from skmrf import ExactMaxLikelihood, GaussianLAP
    from skmrf.protein import coupling_scores

    X = np.random.default_rng(0).integers(0, 2, (20, 3)).astype(float)
    X[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"column 1 has nan at row 4.*skmrf.DecomposedEM.*--method em.*MRFImputer"):
        ExactMaxLikelihood().fit(X)
    with pytest.raises(ValueError, match=r"Gaussian MRF needs every value observed.*impute"):
        GaussianLAP().fit(X)
    fitted = GaussianLAP().fit(np.random.default_rng(1).normal(size=(50, 3)))
    with pytest.raises(ValueError, match=r"got GaussianLAP, a model of real-valued data"):
        coupling_scores(fitted)
    with pytest.raises(ValueError, match=r"got GaussianLAP that is not fitted"):
        coupling_scores(GaussianLAP())


def test_potential_takes_the_variables_names():
    # #40: model_.potential(("p27", "p28")) on a DataFrame fit raised "invalid literal for int()"
    # although model_.graph.names held the names. Names and indices both work; an unknown name is
    # refused with the model's names.
    import pandas as pd

    from skmrf import PseudoLikelihoodEstimator

    X = np.random.default_rng(0).integers(0, 2, (50, 4))
    model = PseudoLikelihoodEstimator("chain").fit(pd.DataFrame(X, columns=["p0", "p1", "p2", "p3"])).model_
    np.testing.assert_array_equal(model.potential(("p2", "p1")), model.potential((1, 2)))
    with pytest.raises(ValueError, match=r"\('q1', 'p2'\) names no variables.*'p0', 'p1', 'p2', 'p3'"):
        model.potential(("q1", "p2"))
    with pytest.raises(ValueError, match=r"\('p0', 'p2'\) is not a clique"):
        model.potential(("p0", "p2"))


def test_gaussian_lap_hints_name_what_works():
    # #40: GaussianLAP on zero-variance columns suggested shrinkage, after which the LAP estimate of
    # scikit-learn's digits is not positive definite, and that warning suggested shrinkage again;
    # what works is newton_steps=1 (or repair="shrink"), which both messages now name.
    from sklearn.datasets import load_digits

    from skmrf.exceptions import NotPositiveDefiniteWarning

    X = load_digits().data
    with pytest.raises(ValueError, match=r"columns 0, 32, 39 have zero variance.*VarianceThreshold.*newton_steps=1"):
        GaussianLAP("grid:8x8").fit(X)
    with pytest.warns(NotPositiveDefiniteWarning, match="newton_steps=1") as caught:
        GaussianLAP("grid:8x8", shrinkage=0.1).fit(X)
    assert "shrinkage > 0" not in str(caught[0].message)  # already set
    assert GaussianLAP("grid:8x8", shrinkage=0.1, newton_steps=1).fit(X).is_positive_definite_


def test_a_dataframe_takes_cliques_by_position_or_name_and_warnings_use_the_names():
    # #40: integer cliques with a DataFrame were refused with "Give cliques as column indices", and
    # warnings named cliques by index although the data had names. Positions are accepted when the
    # columns are named by strings (an integer cannot be one); warnings and refusals name columns.
    import pandas as pd

    from skmrf.exceptions import NoFiniteEstimateWarning

    X = np.random.default_rng(0).integers(0, 2, (40, 4))
    X[:, 3] = 0
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    by_position = ExactMaxLikelihood([(0, 1), (1, 2), (2, 3)]).fit(df)
    by_name = ExactMaxLikelihood([("a", "b"), ("b", "c"), ("c", "d")]).fit(df)
    np.testing.assert_array_equal(by_position.theta_, by_name.theta_)
    with pytest.raises(ValueError, match=r"variable 7 in clique \(0, 7\).*by position \(0 to 3\) or by column name"):
        ExactMaxLikelihood([(0, 7)]).fit(df)
    for est in (ExactMaxLikelihood, PseudoLikelihoodEstimator, LAPEstimator):
        with pytest.warns(NoFiniteEstimateWarning, match=r"\[\('d',\), \('c', 'd'\)\]"):
            est("chain", alpha=0).fit(df)
    with pytest.warns(NoFiniteEstimateWarning, match=r"\[\('d',\), \('c', 'd'\)\]"):
        DecomposedEM("chain", alpha=0).fit(df.astype(float))
    agree = df.assign(b=df["a"])
    with pytest.raises(ValueError, match=r"The ends of edge \('a', 'b'\) agree in all 40 rows"):
        MLEInducedLikelihood("chain").fit(agree)


def test_estimators_that_need_it_drop_degenerate_edges_when_asked():
    # #40: on binarised digits MLEInducedLikelihood("grid:8x8") and MetropolisHastingsMRF raised
    # "The ends of edge (0, 8) agree in all 1797 rows ... Remove the edge" with no way to remove an
    # edge from a shorthand. degenerate_edges="drop" leaves such edges out, naming them.
    import pandas as pd
    from sklearn.datasets import load_digits

    X = pd.DataFrame((load_digits().data >= 8).astype(int), columns=[f"p{i}" for i in range(64)])
    with pytest.raises(ValueError, match=r"edge \('p0', 'p8'\) agree in all 1797 rows.*degenerate_edges='drop'"):
        MLEInducedLikelihood("grid:8x8").fit(X)
    with pytest.warns(UserWarning, match=r"left out 7 of 112 edges.*\('p0', 'p8'\), \('p8', 'p16'\)"):
        est = MLEInducedLikelihood("grid:8x8", degenerate_edges="drop").fit(X)
    assert len(est.edges_) == 105 and len(est.graph_.edges) == 105 and np.all(np.isfinite(est.theta_hat_))
    with pytest.warns(UserWarning, match=r"left out 7 of 112 edges"):
        mh = MetropolisHastingsMRF("grid:8x8", degenerate_edges="drop", n_steps=20, random_state=0).fit(X)
    assert len(mh.edges_) == 105 and mh.model_.n_params == 64 + 105 and np.all(np.isfinite(mh.theta_))
    constant = np.zeros((20, 3), dtype=int)
    constant[::2] = 1  # every edge agrees in every row: nothing would be left to fit
    for cls in (MLEInducedLikelihood, MetropolisHastingsMRF):
        with pytest.raises(ValueError, match=r"every one of the 2 edges agree.*\(0, 1\), \(1, 2\).*leaves no edge"):
            cls("chain", degenerate_edges="drop").fit(constant)


def test_a_constant_column_gets_no_coupling_scores():
    # #40: with the user guide's recipe, a constant column's pairs ranked 10, 13 and 17 of 66 after
    # APC: its couplings are set by the penalty alone. Given the alignment, coupling_scores scores
    # them 0, leaves them out of the APC and of the ranked pairs, and names the column.
    from skmrf.protein import coupling_scores, make_synthetic_alignment

    X = make_synthetic_alignment(n_sequences=300, n_columns=8, n_contacts=4, random_state=1).X.copy()
    X[:, 5] = 3
    est = PseudoLikelihoodEstimator("complete", n_states=21, score_method="pseudo").fit(X)
    plain = coupling_scores(est)
    assert len(plain.pairs) == 28 and plain.matrix[5].max() > 0  # what the recipe gave
    with pytest.warns(UserWarning, match=r"Columns \[5\] of the alignment hold one state"):
        scores = coupling_scores(est, alignment=X)
    assert len(scores.pairs) == 21 and not scores.matrix[5].any() and not scores.matrix[:, 5].any()
    assert not np.isin([5], np.r_[scores.pairs["i"], scores.pairs["j"]]).any()
    with pytest.raises(ValueError, match="alignment must hold the model's 8 columns"):
        coupling_scores(est, alignment=X[:, :7])


def test_a_guessed_a2m_says_why_it_was_guessed(tmp_path):
    # #40: a '.' gap in a file without a FASTA extension made the reader guess A2M and blame the
    # column counts without saying why.
    from skmrf.protein import read_alignment

    path = tmp_path / "family.txt"
    path.write_text(">a\nAC.DE\n>b\nACKDE\n")
    with pytest.raises(ValueError, match=r"read as A2M because its sequences hold '\.'.*format='fasta'"):
        read_alignment(path)
    assert read_alignment(path, format="fasta").X.shape == (2, 5)
    (tmp_path / "family.a2m").write_text(">a\nAC.DE\n>b\nACKDE\n")
    with pytest.raises(ValueError, match="not aligned") as info:  # named A2M: nothing was guessed
        read_alignment(tmp_path / "family.a2m")
    assert "was read as A2M because" not in str(info.value)


def test_an_alignment_of_another_kind_is_refused():
    # #40 (detect the alphabet or refuse): amino acids read with a nucleotide alphabet were turned
    # into gaps with a warning. Letters outside the alphabet that make up most of the residues are
    # refused, naming the alphabet to read them with; a frequent one is still warned about.
    import io

    from skmrf.protein import ALPHABET, RNA_ALPHABET, make_synthetic_alignment, read_alignment, write_fasta

    buffer = io.StringIO()
    write_fasta(buffer, make_synthetic_alignment(n_sequences=20, n_columns=15, random_state=0).X)
    with pytest.raises(ValueError, match=r"of the residues are letters outside.*alphabet='-ACDEFGHIKLMNPQRSTVWY'"):
        read_alignment(io.StringIO(buffer.getvalue()), alphabet=RNA_ALPHABET)
    rna = ">r1\nACGU-AUGC\n>r2\nACGUUAUGC\n>r3\nACG--AUGA\n"
    with pytest.warns(UserWarning, match=r"'U'.*alphabet='-ACGU'"):
        read_alignment(io.StringIO(rna), alphabet=ALPHABET)
    assert read_alignment(io.StringIO(rna), alphabet=RNA_ALPHABET).X.shape == (3, 9)
