"""skmrf.plotting (issue #15, item 6): what each view draws, on the Agg backend."""

import subprocess
import sys
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from skmrf import (
    AdaptiveSchedule,
    DecomposedEM,
    ExactMaxLikelihood,
    GaussianLAP,
    GaussianMaxLikelihood,
    MCMCMaxLikelihood,
    MetropolisHastingsMRF,
    MLEInducedLikelihood,
    PseudoLikelihoodEstimator,
    grid_graph,
)
from skmrf import plotting as skplt
from skmrf.datasets import sample_random_mrf
from skmrf.model import DiscreteMRF


def test_importing_skmrf_does_not_import_matplotlib():
    code = "import sys, skmrf, skmrf.plotting; print(sorted(m for m in sys.modules if m.startswith('matplotlib')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.fixture(autouse=True)
def plt():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


@pytest.fixture
def ax(plt):
    return plt.subplots()[1]


def binary_model():
    # Chain 0-1-2: fields 0.5, -0.2, 0.1; couplings 1.0 and -2.0.
    return DiscreteMRF([(0, 1), (1, 2)], n_states=2, n_variables=3, theta=[0.5, -0.2, 0.1, 1.0, -2.0])


@pytest.fixture(scope="module")
def grid_fit():
    X, _ = sample_random_mrf(grid_graph(3, 4), 300, n_states=3, random_state=0)
    return PseudoLikelihoodEstimator("grid:3x4").fit(X)


def gaussian_chain(p, seed):
    """200 rows of a Gaussian chain (an AR(1) process along the columns)."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(200, p))
    for j in range(1, p):
        Z[:, j] += 0.8 * Z[:, j - 1]
    return Z


@pytest.fixture(scope="module")
def gaussian_fit():
    return GaussianLAP("chain").fit(gaussian_chain(5, 0))


# -- values -------------------------------------------------------------------------------------


def test_binary_couplings_are_the_pair_parameters():
    edges, values = skplt.edge_couplings(binary_model())
    assert edges.tolist() == [[0, 1], [1, 2]]
    np.testing.assert_array_equal(values, [1.0, -2.0])
    np.testing.assert_array_equal(skplt.node_values(binary_model()), [0.5, -0.2, 0.1])
    M = skplt.coupling_matrix(binary_model())
    assert M[0, 1] == M[1, 0] == 1.0 and M[1, 2] == M[2, 1] == -2.0
    assert np.isnan(M[0, 2]) and np.isnan(np.diag(M)).all()  # not an edge; the diagonal


def test_multistate_blocks_reduce_to_signed_largest_entry_or_norm():
    m = DiscreteMRF([(0, 1)], n_states=3, n_variables=2)
    m.potential((0, 1))[:] = [[0.5, -3.0], [1.0, 2.0]]
    assert skplt.edge_couplings(m)[1].tolist() == [-3.0]
    # approx's default rel=1e-6 on a Frobenius norm of 4 entries (a few ulp): it could be 1e-14.
    assert skplt.edge_couplings(m, kind="norm")[1] == pytest.approx([np.sqrt(0.25 + 9 + 1 + 4)], rel=1e-14)


def test_a_fitted_estimator_gives_its_model_couplings(grid_fit):
    for kind in ["maxabs", "norm"]:
        np.testing.assert_array_equal(
            skplt.coupling_matrix(grid_fit, kind), skplt.coupling_matrix(grid_fit.model_, kind)
        )


@pytest.mark.parametrize("cls", [GaussianLAP, GaussianMaxLikelihood])
def test_gaussian_partial_correlations_from_dense_or_sparse_precision(cls):
    est = cls("chain").fit(gaussian_chain(4, 1))
    P = est.precision_.toarray() if sp.issparse(est.precision_) else np.array(est.precision_)
    expected = -P / np.sqrt(np.outer(np.diag(P), np.diag(P)))
    edges, values = skplt.edge_couplings(est)
    assert edges.tolist() == [[0, 1], [1, 2], [2, 3]]
    # 1e-12: both sides read the same precision_ in this process; a division and a square root (a few ulp).
    np.testing.assert_allclose(values, expected[edges[:, 0], edges[:, 1]], rtol=1e-12)
    np.testing.assert_allclose(skplt.edge_couplings(est, "precision")[1], P[edges[:, 0], edges[:, 1]], rtol=1e-12)
    # The other storage of precision_ (dense for p <= 5000, sparse above) gives the same values.
    est.precision_ = np.array(P) if sp.issparse(est.precision_) else sp.csr_array(P)
    np.testing.assert_allclose(skplt.edge_couplings(est)[1], values, rtol=1e-12)
    np.testing.assert_allclose(skplt.node_values(est), np.diag(P), rtol=1e-12)


def test_kind_must_fit_the_model(gaussian_fit):
    with pytest.raises(ValueError, match=r"kind='norm' does not apply to a gaussian model; use one of"):
        skplt.edge_couplings(gaussian_fit, kind="norm")
    with pytest.raises(ValueError, match=r"kind='precision' does not apply to a discrete model"):
        skplt.plot_couplings(binary_model(), kind="precision")


def test_unfitted_or_foreign_objects_are_refused():
    with pytest.raises(NotFittedError):
        skplt.plot_graph(ExactMaxLikelihood())
    with pytest.raises(NotFittedError):
        skplt.plot_couplings(GaussianLAP())
    with pytest.raises(ValueError, match="Gaussian skmrf estimator or a DiscreteMRF; got ndarray"):
        skplt.coupling_matrix(np.eye(3))
    with pytest.raises(ValueError, match="got MLEInducedLikelihood"):  # a likelihood, not a model of X
        skplt.plot_graph(MLEInducedLikelihood())


class _Wrapper:
    """Not an skmrf class: a fitted model held by another object (a pipeline step, a user's class)."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)


def test_any_object_with_a_model_is_drawn_by_its_attributes(ax, grid_fit):
    """Duck typing (#25, item 5): plotting reads model_ and feature_names_in_, not the class."""
    wrapped = _Wrapper(model_=grid_fit.model_, graph="grid:3x4")
    for kind in ["maxabs", "norm"]:
        np.testing.assert_array_equal(skplt.coupling_matrix(wrapped, kind), skplt.coupling_matrix(grid_fit, kind))
    np.testing.assert_array_equal(skplt.node_values(wrapped), skplt.node_values(grid_fit))
    image = skplt.plot_grid(wrapped, "horizontal", ax=ax).images[0].get_array()  # shape from its graph
    np.testing.assert_array_equal(image, skplt.plot_grid(grid_fit, "horizontal").images[0].get_array())
    named = _Wrapper(model_=binary_model(), feature_names_in_=np.array(["a", "b", "c"], dtype=object))
    skplt.plot_graph(named, ax=ax)
    assert [t.get_text() for t in ax.texts] == ["a", "b", "c"]


def test_any_object_with_a_precision_is_drawn_by_its_attributes(ax):
    """A scikit-learn GraphicalLasso has precision_ and no adjacency_: its graph is the non-zeros."""
    from sklearn.covariance import GraphicalLasso

    glasso = GraphicalLasso(alpha=0.3).fit(gaussian_chain(5, 2))
    P = glasso.precision_
    rows, cols = np.nonzero(np.triu(P, k=1))
    assert 0 < len(rows) < 10  # some pairs shrunk to zero: the pattern is not the complete graph
    edges, values = skplt.edge_couplings(glasso)
    assert edges.tolist() == np.column_stack([rows, cols]).tolist()
    # 1e-12: the same division and square root of the same entries (a few ulp).
    np.testing.assert_allclose(values, -P[rows, cols] / np.sqrt(P[rows, rows] * P[cols, cols]), rtol=1e-12)
    assert skplt.plot_couplings(glasso, ax=ax).get_title() == "partial correlations"
    with pytest.raises(ValueError, match="got _Wrapper"):  # not square: not a precision
        skplt.edge_couplings(_Wrapper(precision_=np.ones(3)))


# -- views --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "draw",
    [skplt.plot_couplings, skplt.plot_graph, lambda obj, ax=None: skplt.plot_grid(obj, shape=(1, 3), ax=ax)],
    ids=["couplings", "graph", "grid"],
)
def test_every_view_draws_on_the_given_axes_or_the_current_one(draw, plt, ax):
    assert draw(binary_model(), ax=ax) is ax
    fig, current = plt.subplots()
    assert draw(binary_model()) is current


def test_coupling_image_shows_the_matrix(ax, gaussian_fit):
    skplt.plot_couplings(gaussian_fit, ax=ax)
    image = ax.images[0].get_array()
    np.testing.assert_array_equal(image.filled(np.nan), skplt.coupling_matrix(gaussian_fit))
    low, high = ax.images[0].get_clim()
    assert low == -high == -np.nanmax(np.abs(image))  # centred on zero
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2", "3", "4"]


def test_large_models_are_drawn_as_points_not_a_dense_image(ax, monkeypatch, gaussian_fit):
    monkeypatch.setattr(skplt._couplings, "MAX_IMAGE_FEATURES", 3)
    skplt.plot_couplings(gaussian_fit, ax=ax)
    assert not ax.images
    points = ax.collections[0]
    edges, values = skplt.edge_couplings(gaussian_fit)
    assert len(points.get_offsets()) == 2 * len(edges)  # both triangles
    np.testing.assert_array_equal(points.get_array(), np.concatenate([values, values]))


def test_graph_edges_are_coloured_by_coupling(ax):
    skplt.plot_graph(binary_model(), ax=ax)
    lines = ax.collections[0]
    assert len(lines.get_segments()) == 2
    np.testing.assert_array_equal(lines.get_array(), [1.0, -2.0])
    assert lines.get_clim() == (-2.0, 2.0)
    assert [t.get_text() for t in ax.texts] == ["0", "1", "2"]


def test_graph_of_a_grid_places_nodes_on_their_cells(ax, grid_fit):
    skplt.plot_graph(grid_fit, ax=ax)
    nodes = ax.collections[1].get_offsets()
    rows, cols = np.divmod(np.arange(12), 4)
    np.testing.assert_array_equal(nodes, np.column_stack([cols, -rows]))


def test_graph_labels_nodes_by_column_name(ax):
    pd = pytest.importorskip("pandas")
    X, _ = sample_random_mrf(nx.path_graph(3), 200, random_state=0)
    frame = pd.DataFrame(X, columns=["x", "y", "z"])
    est = ExactMaxLikelihood(nx.Graph([("z", "x"), ("x", "y")])).fit(frame)
    skplt.plot_graph(est, ax=ax)
    assert [t.get_text() for t in ax.texts] == ["x", "y", "z"]


def test_grid_images_hold_fields_and_each_direction_of_couplings(plt, grid_fit):
    M = skplt.coupling_matrix(grid_fit)
    fields = skplt.node_values(grid_fit)
    cell = np.arange(12).reshape(3, 4)
    images = {}
    for values in ["fields", "horizontal", "vertical"]:
        images[values] = skplt.plot_grid(grid_fit, values, ax=plt.subplots()[1]).images[0].get_array()
    np.testing.assert_array_equal(images["fields"], fields.reshape(3, 4))
    np.testing.assert_array_equal(images["horizontal"], M[cell[:, :-1], cell[:, 1:]])
    np.testing.assert_array_equal(images["vertical"], M[cell[:-1, :], cell[1:, :]])


def test_grid_shape_from_row_col_node_labels(ax):
    G = nx.grid_2d_graph(2, 3)  # nodes (r, c), in row-major order
    X, _ = sample_random_mrf(nx.convert_node_labels_to_integers(G), 200, random_state=0)
    est = ExactMaxLikelihood(G).fit(X)
    image = skplt.plot_grid(est, "vertical", ax=ax).images[0].get_array()
    M = skplt.coupling_matrix(est)
    np.testing.assert_array_equal(image, [[M[0, 3], M[1, 4], M[2, 5]]])


def test_grid_shape_must_be_known_and_match(ax):
    with pytest.raises(ValueError, match=r"give shape=\(rows, cols\)"):
        skplt.plot_grid(binary_model(), ax=ax)
    with pytest.raises(ValueError, match=r"shape=\(2, 2\) has 4 cells but the model has 3 variables"):
        skplt.plot_grid(binary_model(), shape=(2, 2), ax=ax)
    with pytest.raises(ValueError, match="values='diagonal'; use 'fields', 'horizontal' or 'vertical'"):
        skplt.plot_grid(binary_model(), "diagonal", shape=(1, 3), ax=ax)


# -- traces -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def binary_data():
    X, _ = sample_random_mrf(nx.path_graph(4), 300, random_state=0)
    return X


def test_mcmc_trace_draws_each_recorded_series(ax, binary_data):
    est = MCMCMaxLikelihood(schedule=AdaptiveSchedule(n_chains=100, n_iter=20), random_state=0).fit(binary_data)
    skplt.plot_trace(est, ax=ax)
    keys = [k for k in est.trace_ if k != "time"]
    assert [line.get_label() for line in ax.lines] == keys
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), est.trace_[keys[0]])
    assert ax.get_yscale() == "log"
    with pytest.raises(ValueError, match=r"MCMCMaxLikelihood.trace_ has no \['loss'\]; its keys are"):
        skplt.plot_trace(est, keys=["loss"], ax=ax)


def test_em_trace_is_the_log_likelihood_per_iteration(ax, binary_data):
    X = binary_data.astype(float)
    X[::3, 1] = np.nan
    est = DecomposedEM().fit(X)
    skplt.plot_trace(est, ax=ax)
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), est.log_likelihood_trace_)
    assert len(est.log_likelihood_trace_) == est.n_iter_ + 1


def test_posterior_trace_draws_one_line_per_chain_and_parameter(ax, binary_data):
    est = MetropolisHastingsMRF(likelihood="exact", n_steps=60, n_chains=2, random_state=0).fit(binary_data)
    skplt.plot_trace(est, keys=[0, 2], ax=ax)
    assert len(ax.lines) == 4
    draws = est.samples_.reshape(2, -1, len(est.edges_))
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), draws[1, :, 0])
    np.testing.assert_array_equal(ax.lines[2].get_ydata(), draws[0, :, 2])
    with pytest.raises(ValueError, match=r"Parameter indices \[7\] are not in 0..2"):
        skplt.plot_trace(est, keys=[7], ax=ax)


def test_estimators_without_a_trace_are_named(ax, binary_data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ExactMaxLikelihood().fit(binary_data)
    with pytest.raises(ValueError, match="ExactMaxLikelihood keeps no convergence trace"):
        skplt.plot_trace(est, ax=ax)
    with pytest.raises(NotFittedError):
        skplt.plot_trace(MCMCMaxLikelihood(), ax=ax)


def test_any_object_with_a_trace_method_is_drawn(ax):
    """plot_trace draws what __skmrf_trace__ returns, whatever the class; its keys are checked."""
    series = {"loss": np.array([[3.0, 2.0, 1.5], [2.5, 2.2, 1.4]]), "time": np.array([[0.1, 0.2, 0.3]])}
    trace = skplt.Trace(series, "epoch", "loss", keys_from="history_", default_keys=("loss",))
    runner = _Wrapper(__skmrf_trace__=lambda: trace)
    skplt.plot_trace(runner, ax=ax)
    assert len(ax.lines) == 2 and ax.get_xlabel() == "epoch" and ax.get_ylabel() == "loss"
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), series["loss"][1])
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), [0, 1, 2])
    with pytest.raises(ValueError, match=r"_Wrapper.history_ has no \['lr'\]; its keys are \['loss', 'time'\]"):
        skplt.plot_trace(runner, keys=["lr"], ax=ax)


def test_a_loaded_mcmc_model_has_no_trace_and_says_so(ax, binary_data, tmp_path):
    from skmrf.io import load_model, save_model

    est = MCMCMaxLikelihood(schedule=AdaptiveSchedule(n_chains=50, n_iter=5), random_state=0).fit(binary_data)
    loaded = load_model(save_model(est, tmp_path / "m.npz"))
    with pytest.raises(ValueError, match="MCMCMaxLikelihood has no convergence trace: a model read by load_model"):
        skplt.plot_trace(loaded, ax=ax)


# -- docstrings ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", skplt.__all__)
def test_docstring(name):
    from .test_docstrings import CHECKS, validate

    result = validate(f"skmrf.plotting.{name}")
    errors = [f"{code}: {msg}" for code, msg in result["errors"] if code in CHECKS]
    assert not errors, f"skmrf.plotting.{name}:\n" + "\n".join(errors)
