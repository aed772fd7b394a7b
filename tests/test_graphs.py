import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from skmrf.estimators import GaussianLAP, GaussianMaxLikelihood
from skmrf.graphs import (
    MRFGraph,
    chain_graph,
    chimera_graph,
    grid_graph,
    lattice_graph,
    resolve_adjacency,
    resolve_graph,
    skip_chain_graph,
)


def test_all_forms_resolve_to_the_same_structure():
    edges = [(0, 1), (1, 2), (2, 3)]
    adj = np.zeros((4, 4))
    for i, j in edges:
        adj[i, j] = adj[j, i] = 1
    forms = [edges, chain_graph(4), adj, sp.csr_matrix(adj), "chain", [(1, 0), (2, 1), (3, 2)]]
    resolved = [resolve_graph(g, 4) for g in forms]
    assert all(r.cliques == resolved[0].cliques for r in resolved)
    assert resolved[0].cliques == ((0,), (1,), (2,), (3,), (0, 1), (1, 2), (2, 3))


def test_downward_closure_and_neighbourhoods():
    g = resolve_graph([(0, 1, 2), (2, 3)], 5)
    assert g.factors == ((2, 3), (0, 1, 2))
    assert (0, 1, 2) in g.cliques and (0, 2) in g.cliques and (4,) in g.cliques
    assert g.neighbours[2] == {0, 1, 3}
    assert g.one_neighbourhood((2, 3)) == (0, 1, 2, 3)
    # A factor contained in another is not a separate factor.
    assert resolve_graph([(0, 1), (0, 1, 2)], 3).factors == ((0, 1, 2),)


def test_string_shorthands():
    assert len(resolve_graph("complete", 4).edges) == 6
    assert resolve_graph("grid:2x3", 6).edges == sorted(grid_graph(2, 3).edges)
    with pytest.raises(ValueError, match="R\\*C == 5"):
        resolve_graph("grid:2x3", 5)
    with pytest.raises(ValueError, match="Unknown graph shorthand"):
        resolve_graph("ring", 5)


def test_named_nodes_map_by_dataframe_column_name():
    g = nx.Graph([("b", "c"), ("a", "b")])
    r = resolve_graph(g, 3, feature_names=["a", "b", "c"])
    assert r.edges == [(0, 1), (1, 2)]
    # Without names, list(G.nodes) order: b=0, c=1, a=2.
    assert resolve_graph(g, 3).edges == [(0, 1), (0, 2)]


@pytest.mark.parametrize(
    "graph, match",
    [
        ([(0, 5)], "names variable 5"),
        ([(0, -1)], "names variable -1"),
        (chain_graph(3), "3 nodes but X has 4"),
        (np.ones((3, 3)), "shape \\(3, 3\\)"),
        (np.triu(np.ones((4, 4)), 1), "not symmetric"),
        ([(1, 1)], "repeats a variable"),
        (3.5, "graph must be"),
    ],
)
def test_graph_that_does_not_match_the_data(graph, match):
    with pytest.raises(ValueError, match=match):
        resolve_graph(graph, 4)


def test_missing_named_column():
    with pytest.raises(ValueError, match="names variable 'z'"):
        resolve_graph([("a", "z")], 2, feature_names=["a", "b"])


def test_builders():
    g = grid_graph(3, 4)
    assert g.number_of_nodes() == 12 and g.number_of_edges() == 3 * 3 + 2 * 4
    assert g.has_edge(0, 1) and g.has_edge(0, 4) and not g.has_edge(3, 4)
    lat = lattice_graph((4, 4, 4))
    assert lat.number_of_edges() == 3 * 4 * 4 * 3
    assert max(d for _, d in lat.degree) == 6
    ch = chimera_graph(3, 3, 3)  # the LAP paper's Chimera 3x3x3
    assert ch.number_of_nodes() == 54
    assert ch.number_of_edges() == 9 * 9 + 2 * 3 * 2 * 3  # K33 cells + inter-cell couplers
    assert nx.is_bipartite(ch) and nx.is_connected(ch)
    assert chain_graph(5).number_of_edges() == 4
    sk = skip_chain_graph(6, skips=(2, 3))
    assert sk.number_of_edges() == 5 + 4 + 3 and sk.has_edge(0, 3)


def test_mrfgraph_is_passed_through_and_checked():
    g = resolve_graph("chain", 3)
    assert resolve_graph(g, 3) is g
    with pytest.raises(ValueError, match="3 variables but X has 4"):
        resolve_graph(g, 4)
    assert isinstance(g, MRFGraph) and g.max_degree == 2


def _bad_graphs():
    """Graphs that do not match data with 4 columns, one per error of the resolver."""
    one_way = np.zeros((4, 4))
    one_way[0, 1] = one_way[1, 0] = one_way[2, 3] = 1
    return {
        "index too large": [(0, 5)],
        "negative index": [(0, -1)],
        "index too large, cliques": [(0, 1, 7)],
        "self-loop in an edge list": [(1, 1)],
        "non-integer node": [(0, 1.5)],
        "networkx with other nodes": chain_graph(3),
        "directed networkx": nx.DiGraph([(0, 1), (1, 2), (2, 3)]),
        "networkx self-loop": nx.Graph([(0, 0), (0, 1), (2, 3)]),
        "matrix of the wrong shape": np.ones((3, 3)),
        "edge array read as a matrix": np.array([(0, 1), (1, 2), (2, 3)]),
        "non-symmetric matrix": one_way,
        "non-symmetric sparse matrix": sp.csr_array(np.triu(np.ones((4, 4)), 1)),
        "grid of the wrong size": "grid:2x3",
        "unknown shorthand": "ring",
        "MRFGraph of the wrong size": resolve_graph("chain", 3),
        "not a graph": 3.5,
    }


@pytest.mark.parametrize("name", list(_bad_graphs()))
def test_discrete_and_gaussian_resolvers_word_errors_identically(name):
    graph = _bad_graphs()[name]
    with pytest.raises(ValueError) as discrete:
        resolve_graph(graph, 4)
    with pytest.raises(ValueError) as gaussian:
        resolve_adjacency(graph, 4)
    assert str(gaussian.value) == str(discrete.value)


@pytest.mark.parametrize("Est", [GaussianLAP, GaussianMaxLikelihood])
@pytest.mark.parametrize("name", ["index too large", "non-symmetric matrix", "networkx with other nodes"])
def test_gaussian_estimators_raise_the_resolver_error(Est, name):
    graph = _bad_graphs()[name]
    with pytest.raises(ValueError) as discrete:
        resolve_graph(graph, 4)
    X = np.random.default_rng(0).standard_normal((50, 4))
    with pytest.raises(ValueError) as gaussian:
        Est(graph).fit(X)
    assert str(gaussian.value) == str(discrete.value)


def test_named_node_errors_are_worded_identically():
    for graph in ([("a", "z")], nx.Graph([("a", "b"), ("b", "z")])):
        with pytest.raises(ValueError) as discrete:
            resolve_graph(graph, 2, feature_names=["a", "b"])
        with pytest.raises(ValueError) as gaussian:
            resolve_adjacency(graph, 2, feature_names=["a", "b"])
        assert str(gaussian.value) == str(discrete.value)


def test_resolve_adjacency_matches_resolve_graph():
    forms = [
        "chain",
        "complete",
        "grid:2x3",
        [(0, 1), (1, 2), (3, 4)],
        [(0, 1, 2), (2, 5)],
        grid_graph(2, 3),
        nx.to_numpy_array(grid_graph(2, 3)),
        sp.csr_matrix(nx.to_numpy_array(grid_graph(2, 3))),
        resolve_graph([(0, 1, 2), (4, 5)], 6),
        [],
    ]
    for graph in forms:
        adj = resolve_adjacency(graph, 6)
        assert adj.dtype == bool and adj.has_sorted_indices and (adj != adj.T).nnz == 0
        rows, cols = sp.triu(adj, k=1).nonzero()
        assert sorted(zip(rows.tolist(), cols.tolist())) == resolve_graph(graph, 6).edges


def test_only_the_gaussian_resolver_accepts_unequal_mirror_values():
    # A weighted matrix with a symmetric pattern, unequal mirror values and a diagonal
    # (e.g. a precision estimate) is its own pattern for the Gaussian estimators; the
    # discrete estimators, whose graph is an adjacency matrix, reject it.
    w = np.array([[5.0, 1.0, 0.0], [2.0, 5.0, -1.0], [0.0, -3.0, 5.0]])
    adj = resolve_adjacency(w, 3)
    np.testing.assert_array_equal(adj.toarray(), (w != 0) & ~np.eye(3, dtype=bool))
    with pytest.raises(ValueError, match=r"not symmetric: entry \(0, 1\) is 1 but \(1, 0\) is 2"):
        resolve_graph(w, 3)


def test_subgraph_keeps_variables_and_drops_edges():
    # #40: after VarianceThreshold dropped 3 of 64 columns, "grid:8x8" could not follow the data.
    from skmrf.graphs import subgraph

    mask = np.array([True, True, False, True, True, True])  # grid 2x3, variable 2 dropped
    assert subgraph("grid:2x3", mask) == [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]
    assert subgraph("grid:2x3", [0, 1, 3, 4, 5], n_variables=6) == subgraph("grid:2x3", mask)
    assert subgraph("chain", np.ones(4, bool), drop_edges=[(1, 2)]) == [(0, 1), (2, 3)]
    # A factor holding both ends of a dropped edge splits into its two factors without one end.
    assert subgraph([(0, 1, 2)], np.ones(3, bool), drop_edges=[(0, 1)]) == [(0, 2), (1, 2)]
    with pytest.raises(ValueError, match=r"drop_edges names \(0, 2\), which is not an edge"):
        subgraph("chain", np.ones(4, bool), drop_edges=[(0, 2)])
    with pytest.raises(ValueError, match="needs n_variables"):
        subgraph("grid:2x3", [0, 1])
    with pytest.raises(ValueError, match="increasing variable indices"):
        subgraph("chain", [2, 1], n_variables=4)
    with pytest.raises(ValueError, match="a mask of 3 entries for a graph of 4 variables"):
        subgraph("chain", np.ones(3, bool), n_variables=4)


def test_subgraph_follows_a_feature_selection_on_real_data():
    from sklearn.datasets import load_digits
    from sklearn.feature_selection import VarianceThreshold

    from skmrf import PseudoLikelihoodEstimator
    from skmrf.graphs import subgraph

    X = (load_digits().data >= 8).astype(int)
    selector = VarianceThreshold().fit(X)
    kept = selector.transform(X)
    graph = subgraph("grid:8x8", selector.get_support())
    assert kept.shape[1] == 54 and len(graph) == 112 - 21  # the 10 constant pixels' 21 grid edges go
    est = PseudoLikelihoodEstimator(graph, score_method="pseudo").fit(kept)
    assert est.model_.n_variables == 54 and np.isfinite(est.score(kept))
