"""skmrf.plotting under bad arguments (issue #23): refused by name, never truncated or a raw KeyError.

Classes: non-integer indices (``plot_trace(keys=[1.7])``), missing keys (``plot_graph`` with
a ``pos`` that lacks nodes), negative or mismatched shapes (``plot_grid(shape=(-2, -2))``, a
chain count changed after ``fit``), unfitted estimators. Drawn on the Agg backend.
"""

import copy

import networkx as nx
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from skmrf import (
    AdaptiveSchedule,
    DecomposedEM,
    ExactMaxLikelihood,
    GaussianLAP,
    MCMCMaxLikelihood,
    MetropolisHastingsMRF,
)
from skmrf import plotting as skplt
from skmrf.datasets import sample_random_mrf

from .test_plotting import binary_model


@pytest.fixture()
def ax():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt.subplots()[1]
    plt.close("all")


@pytest.fixture(scope="module")
def X():
    return sample_random_mrf(nx.path_graph(4), 300, random_state=0)[0]


@pytest.fixture(scope="module")
def mcmc(X):
    return MCMCMaxLikelihood(schedule=AdaptiveSchedule(n_chains=50, n_iter=5), random_state=0).fit(X)


@pytest.fixture(scope="module")
def posterior(X):
    return MetropolisHastingsMRF(likelihood="exact", n_steps=60, n_chains=2, random_state=0).fit(X)


# -- non-integer indices and keys that are not a list ------------------------------------------------


@pytest.mark.parametrize("keys", [[1.7], [1.0], [0, 2.5], [True], np.array([0.0, 1.0])], ids=repr)
def test_posterior_trace_refuses_non_integer_indices(ax, posterior, keys):
    with pytest.raises(ValueError, match=r"keys \[.*\] are not integers; MetropolisHastingsMRF keys are parameter"):
        skplt.plot_trace(posterior, keys=keys, ax=ax)


def test_posterior_trace_takes_numpy_integers(ax, posterior):
    skplt.plot_trace(posterior, keys=np.array([2, 0]), ax=ax)
    draws = posterior.samples_.reshape(2, -1, 3)
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), draws[0, :, 2])


@pytest.mark.parametrize(
    "keys, message",
    [("01", r"keys='01' is not a list"), (1, r"keys=1 is not a list"), ([], r"keys=\[\] selects nothing")],
)
def test_trace_keys_must_be_a_non_empty_list(ax, posterior, keys, message):
    with pytest.raises(ValueError, match=message):
        skplt.plot_trace(posterior, keys=keys, ax=ax)


def test_trace_names_must_be_a_list_too(ax, mcmc):
    name = next(k for k in mcmc.trace_ if k != "time")
    with pytest.raises(ValueError, match=f"keys='{name}' is not a list; give a list such as \\['{name}'\\]"):
        skplt.plot_trace(mcmc, keys=name, ax=ax)  # not read letter by letter


def test_posterior_trace_follows_the_fitted_chains_not_the_parameter(ax, posterior):
    """``set_params(n_chains=4)`` after a 2-chain fit must not split the draws into 4 chains."""
    est = copy.deepcopy(posterior).set_params(n_chains=4)  # 108 kept draws divide by 4: no error would say it
    skplt.plot_trace(est, keys=[0], ax=ax)
    assert len(ax.lines) == 2
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), est.samples_.reshape(2, -1, 3)[1, :, 0])


# -- plot_graph(pos=...) ----------------------------------------------------------------------------------


def node_offsets(ax):
    return ax.collections[1].get_offsets()


def test_pos_missing_nodes_are_named(ax):
    with pytest.raises(ValueError, match=r"pos has no position for the column indices 2 \(of 3 nodes\)"):
        skplt.plot_graph(binary_model(), pos={0: (0, 0), 1: (1, 0)}, ax=ax)
    many = ExactMaxLikelihood("chain").fit(np.random.default_rng(0).integers(0, 2, size=(50, 14)))
    with pytest.raises(ValueError, match=r"column indices 1, 2, .*, 10 and 3 more \(of 14 nodes\)"):
        skplt.plot_graph(many, pos={0: (0, 0)}, ax=ax)


@pytest.mark.parametrize(
    "pos, message",
    [
        ([(0, 0), (1, 0), (2, 0)], "pos must be a dict"),
        ({0: (0, 0), 1: (1, 0), 2: (2,)}, r"pos\[2\] = \(2,\); give two finite numbers"),
        ({0: (0, 0), 1: (1, 0), 2: (np.nan, 0)}, r"pos\[2\] = \(nan, 0\)"),
        ({0: (0, 0), 1: (1, 0), 2: "here"}, r"pos\[2\] = 'here'"),
    ],
)
def test_pos_values_must_be_finite_pairs(ax, pos, message):
    with pytest.raises(ValueError, match=message):
        skplt.plot_graph(binary_model(), pos=pos, ax=ax)


def test_pos_by_column_index(ax):
    pos = {0: (0.0, 1.0), 1: (2.0, 3.0), 2: (4.0, 5.0)}
    skplt.plot_graph(binary_model(), pos=pos, ax=ax)
    np.testing.assert_array_equal(node_offsets(ax), [pos[0], pos[1], pos[2]])
    np.testing.assert_array_equal(ax.collections[0].get_segments()[1], [pos[1], pos[2]])  # edge (1, 2)


def test_pos_by_node_name(ax, X):
    pd = pytest.importorskip("pandas")
    est = ExactMaxLikelihood("chain").fit(pd.DataFrame(X[:, :3], columns=["x", "y", "z"]))
    pos = {"z": (4.0, 5.0), "x": (0.0, 1.0), "y": (2.0, 3.0)}
    skplt.plot_graph(est, pos=pos, ax=ax)
    np.testing.assert_array_equal(node_offsets(ax), [pos["x"], pos["y"], pos["z"]])
    with pytest.raises(ValueError, match=r"pos has no position for the node names 'z' \(of 3 nodes\).*or by node name"):
        skplt.plot_graph(est, pos={"x": (0, 0), "y": (1, 0)}, ax=ax)


def test_pos_by_integer_node_names_follows_the_names(ax, X):
    """Nodes named 2, 0, 1 (in column order): pos[2] is the position of column 0, as the estimator wires it."""
    G = nx.Graph()
    G.add_nodes_from([2, 0, 1])
    G.add_edges_from([(2, 0), (0, 1)])
    est = ExactMaxLikelihood(G).fit(X[:, :3])
    pos = {0: (0.0, 0.0), 1: (1.0, 0.0), 2: (2.0, 0.0)}
    skplt.plot_graph(est, pos=pos, ax=ax)
    np.testing.assert_array_equal(node_offsets(ax), [pos[2], pos[0], pos[1]])


# -- plot_grid(shape=...) ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, message",
    [
        ((-1, -3), r"shape=\(-1, -3\) must be two positive integers"),
        ((-3, -1), r"shape=\(-3, -1\) must be two positive integers"),
        ((0, 3), r"shape=\(0, 3\) must be two positive integers"),
        ((3.0, 1), r"shape=\(3.0, 1\) must be two positive integers"),
        ((1.5, 2), r"shape=\(1.5, 2\) must be two positive integers"),
        ((True, 3), r"shape=\(True, 3\) must be two positive integers"),
        ("13", r"shape='13' is not a pair"),
        (3, r"shape=3 is not a pair"),
        ((1, 3, 1), r"shape=\(1, 3, 1\) is not a pair"),
    ],
)
def test_grid_shape_must_be_two_positive_integers(ax, shape, message):
    with pytest.raises(ValueError, match=message):
        skplt.plot_grid(binary_model(), shape=shape, ax=ax)


def test_grid_shape_takes_numpy_integers(ax):
    image = skplt.plot_grid(binary_model(), shape=np.array([1, 3]), ax=ax).images[0].get_array()
    np.testing.assert_array_equal(image, [skplt.node_values(binary_model())])


def test_negative_cell_labels_are_not_a_grid(ax, X):
    """Nodes labelled (-1, 0), (-1, 1), (0, 0), (0, 1) would index the image from its end: give shape."""
    G = nx.relabel_nodes(nx.grid_2d_graph(2, 2), lambda rc: (rc[0] - 1, rc[1]))
    est = ExactMaxLikelihood(G).fit(X)
    with pytest.raises(ValueError, match=r"give shape=\(rows, cols\)"):
        skplt.plot_grid(est, ax=ax)
    image = skplt.plot_grid(est, shape=(2, 2), ax=ax).images[0].get_array()
    np.testing.assert_array_equal(image, skplt.node_values(est).reshape(2, 2))


# -- unfitted estimators ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "draw",
    [
        skplt.edge_couplings,
        skplt.node_values,
        skplt.coupling_matrix,
        skplt.plot_couplings,
        skplt.plot_graph,
        lambda est: skplt.plot_grid(est, shape=(1, 3)),
    ],
    ids=["edge_couplings", "node_values", "coupling_matrix", "plot_couplings", "plot_graph", "plot_grid"],
)
@pytest.mark.parametrize("est", [ExactMaxLikelihood(), GaussianLAP()], ids=["discrete", "gaussian"])
def test_every_view_refuses_an_unfitted_estimator(ax, draw, est):
    with pytest.raises(NotFittedError):
        draw(est)


@pytest.mark.parametrize("est", [MetropolisHastingsMRF(), DecomposedEM(), MCMCMaxLikelihood()])
def test_trace_refuses_an_unfitted_estimator(ax, est):
    with pytest.raises(NotFittedError):
        skplt.plot_trace(est, ax=ax)


# -- ax that is not an Axes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "draw",
    [
        skplt.plot_couplings,
        skplt.plot_graph,
        lambda obj, ax: skplt.plot_grid(obj, shape=(1, 3), ax=ax),
    ],
    ids=["plot_couplings", "plot_graph", "plot_grid"],
)
def test_ax_must_be_an_axes(ax, draw):
    with pytest.raises(ValueError, match="ax must be a matplotlib Axes .* got Figure"):
        draw(binary_model(), ax=ax.figure)


def test_trace_ax_must_be_an_axes_and_keys_hashable(ax, posterior, mcmc):
    with pytest.raises(ValueError, match="ax must be a matplotlib Axes .* got str"):
        skplt.plot_trace(posterior, ax="left")
    with pytest.raises(ValueError, match=r"MCMCMaxLikelihood.trace_ has no \[\['loss'\]\]"):
        skplt.plot_trace(mcmc, keys=[["loss"]], ax=ax)
