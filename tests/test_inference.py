"""Junction tree, enumeration and samplers against independent brute force."""

import numpy as np
import pytest

from skmrf.datasets import make_random_mrf
from skmrf.exceptions import TreewidthError
from skmrf.graphs import grid_graph
from skmrf.inference import Enumerator, JunctionTree, elimination_order
from skmrf.model import DiscreteMRF

from . import brute_force as bf


def random_cliques(n, n_pairs, n_triples, rng):
    cl = {tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(n_pairs)}
    cl |= {tuple(sorted(rng.choice(n, 3, replace=False))) for _ in range(n_triples)}
    return sorted(cl)


CASES = [  # (n_variables, n_states, pairs, triples, seed)
    (8, 2, 10, 3, 0),
    (12, 2, 16, 4, 1),
    (16, 2, 22, 5, 2),
    (10, 3, 12, 3, 3),
    (12, 3, 14, 3, 4),
    (9, [2, 3, 4, 2, 3, 2, 4, 3, 2], 10, 3, 5),
]


@pytest.mark.parametrize("n, k, pairs, triples, seed", CASES)
def test_junction_tree_matches_enumeration(n, k, pairs, triples, seed):
    rng = np.random.default_rng(seed)
    model = make_random_mrf(random_cliques(n, pairs, triples, rng), k, scale=1.5, n_variables=n, random_state=seed)
    lz = bf.log_partition(model)
    # 1e-10 relative: both are sums of at most 4^16 positive terms in float64;
    # observed differences are ~1e-15.
    assert model.log_partition() == pytest.approx(lz, rel=1e-10)
    ref = bf.clique_marginals(model)
    for c, table in model.marginals().items():
        np.testing.assert_allclose(table, ref[c], rtol=1e-10, atol=1e-14)
    # The batched enumerator agrees too (it is what LAP uses).
    en = Enumerator(model.cliques, model.n_states)
    assert en.log_partition(np.stack([model.theta, 0 * model.theta])) == pytest.approx(
        [lz, np.log(en.states.shape[0])], rel=1e-10
    )
    np.testing.assert_allclose(
        en.expected_statistics(model.theta)[0], model.expected_statistics(), rtol=1e-9, atol=1e-14
    )


def test_log_prob_matches_enumeration():
    model = make_random_mrf([(0, 1, 2), (2, 3), (3, 4)], 3, n_variables=5, random_state=0)
    xs = bf.states(model.n_states)
    expected = bf.energies(model, xs) - bf.log_partition(model)
    # 1e-12: the junction tree's log Z and enumeration's (243 states), sums of a few terms: rounding only.
    np.testing.assert_allclose(model.log_prob(xs), expected, rtol=1e-12)
    assert np.exp(model.log_prob(xs)).sum() == pytest.approx(1.0, rel=1e-12)


def test_evidence_gives_the_conditional():
    model = make_random_mrf(grid_graph(3, 3), 3, random_state=1)
    xs = bf.states(model.n_states)
    e = bf.energies(model, xs)
    keep = (xs[:, 4] == 2) & (xs[:, 0] == 1)
    cal = model.calibrate(evidence={4: 2, 0: 1})
    # log of the unnormalised evidence mass; 1e-10 as above: exact inference against enumeration
    assert cal.log_z == pytest.approx(np.log(np.exp(e[keep]).sum()), rel=1e-10)
    p = np.exp(e[keep] - np.log(np.exp(e[keep]).sum()))
    flat = cal.clique_marginals()
    k = model.cliques.index((1, 2))
    lay = model.layout
    table = flat[lay.table_offsets[k] : lay.table_offsets[k + 1]].reshape(3, 3)
    ref = np.zeros((3, 3))
    np.add.at(ref, (xs[keep, 1], xs[keep, 2]), p)
    np.testing.assert_allclose(table, ref, rtol=1e-10, atol=1e-15)
    with pytest.raises(ValueError, match="outside 0..2"):
        model.calibrate(evidence={0: 3})


def test_forest_and_isolated_variables():
    model = make_random_mrf([(0, 1), (2, 3, 4)], 2, n_variables=6, random_state=3)
    # 1e-12: exact against enumeration of 64 states (a few ulp of log Z).
    assert model.log_partition() == pytest.approx(bf.log_partition(model), rel=1e-12)


def test_elimination_order_is_a_permutation_and_grid_width():
    g = grid_graph(6, 6)
    nbrs = [set(g[v]) for v in range(36)]
    for h in ("min_fill", "min_degree"):
        order = elimination_order(nbrs, h)
        assert sorted(order) == list(range(36))
    tree = JunctionTree(np.full(36, 2), [(v,) for v in range(36)] + list(g.edges))
    assert 6 <= tree.treewidth <= 8  # the 6x6 grid has treewidth 6; greedy orders are near it
    with pytest.raises(ValueError, match="heuristic"):
        elimination_order(nbrs, "best")


def test_too_wide_is_refused_before_allocating():
    model = DiscreteMRF(grid_graph(30, 30), 2)
    with pytest.raises(TreewidthError, match=r"treewidth is at least about \d+.*LAPEstimator"):
        model.log_partition()
    small = DiscreteMRF(grid_graph(4, 4), 2)
    with pytest.raises(TreewidthError, match="budget"):
        small.calibrate(max_bytes=1000)


def _standardised_errors(model, X):
    """(empirical - exact) / binomial standard error for every clique table cell."""
    exact = model.calibrate().clique_marginals()
    emp = model.layout.table_counts(X) / len(X)
    se = np.sqrt(exact * (1 - exact) / len(X))
    keep = se > 0
    return (emp[keep] - exact[keep]) / se[keep]


@pytest.mark.parametrize("method", ["exact", "gibbs"])
def test_samplers_reproduce_marginals_grid(method):
    # 10x10 binary grid, couplings uniform on [-0.5, 0.5].
    model = make_random_mrf(grid_graph(10, 10), 2, scale=0.5, random_state=7)
    X = model.sample(4000, random_state=0, method=method, n_sweeps=100)
    z = _standardised_errors(model, X)
    # Every cell of every node/edge table within 5 standard errors (about
    # 1000 cells, dependent; a 5-sigma excursion has probability ~6e-7 each);
    # the mean squared z must be near 1 for unbiased independent draws (it
    # would grow with bias or with correlated chains).
    assert np.abs(z).max() < 5
    assert 0.6 < np.mean(z**2) < 1.6


def test_gibbs_general_path_three_states_and_triples():
    model = make_random_mrf([(0, 1, 2), (2, 3), (3, 4, 5), (5, 0)], [3, 2, 3, 4, 2, 3], scale=1.0, random_state=2)
    X = model.sample(6000, random_state=1, method="gibbs", n_sweeps=60)
    assert X.max(axis=0).tolist() == [2, 1, 2, 3, 1, 2]
    z = _standardised_errors(model, X)
    assert np.abs(z).max() < 5
    assert 0.6 < np.mean(z**2) < 1.6


def test_sampling_is_seeded():
    model = make_random_mrf(grid_graph(4, 4), 2, random_state=0)
    for method in ("exact", "gibbs"):
        a = model.sample(50, random_state=3, method=method, n_sweeps=5)
        b = model.sample(50, random_state=3, method=method, n_sweeps=5)
        np.testing.assert_array_equal(a, b)


def test_huge_parameters_take_the_log_space_path_exactly():
    # Parameters up to 400 make node tables span more than 700 nats, so the
    # calibration cannot exponentiate them in one piece; it must stay exact.
    rng = np.random.default_rng(11)
    model = make_random_mrf(random_cliques(10, 14, 3, rng), 3, scale=400.0, n_variables=10, random_state=11)
    spreads = [
        np.ptp(t) for t in model.junction_tree.node_log_tables(model.layout.full_tables(model.theta), model.layout)
    ]
    assert max(spreads) > 700
    # Exact in log space: rounding relative to |log Z| ~ 1e3 (1e-12), marginals 1e-9 after the
    # exponentials of differences of such numbers (1e3 x eps ~ 1e-13 absolute in the exponent).
    assert model.log_partition() == pytest.approx(bf.log_partition(model), rel=1e-12)
    ref = bf.clique_marginals(model)
    for c, table in model.marginals().items():
        np.testing.assert_allclose(table, ref[c], rtol=1e-9, atol=1e-12)


def test_batched_junction_tree_samples_and_log_partition_match_enumeration():
    import itertools

    from skmrf.inference._evidence import BatchedJunctionTree

    edges = [(0, 1), (1, 2), (2, 3), (0, 3), (1, 3)]
    tree = BatchedJunctionTree(np.full(4, 2), edges)
    rng = np.random.default_rng(0)
    tables = [rng.normal(size=(3, 2, 2)) for _ in edges]
    log_z, _, nodes = tree.calibrate(tables, np.full((3, 4), -1), return_nodes=True)
    # 1e-12: the same log Z by two exact paths and by a 16-state log-sum-exp (below): rounding only.
    np.testing.assert_allclose(tree.log_partition(tables), log_z, rtol=0, atol=1e-12)
    n = 100_000
    S = tree.sample(nodes, n, rng)
    states = np.array(list(itertools.product([0, 1], repeat=4)))
    for b in range(3):
        energy = np.array([sum(t[b][x[u], x[v]] for t, (u, v) in zip(tables, edges)) for x in states])
        np.testing.assert_allclose(log_z[b], np.logaddexp.reduce(energy), atol=1e-12)
        p = np.exp(energy - log_z[b])
        freq = np.bincount(S[b] @ (2 ** np.arange(3, -1, -1)), minlength=16) / n
        # 5 binomial standard errors per state (16 states x 3 batches: a false alarm is ~1e-5).
        np.testing.assert_array_less(np.abs(freq - p), 5 * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_banded_order_is_taken_where_it_is_much_cheaper():
    # On a 16 x 16 grid the reverse Cuthill-McKee order sweeps row by row (treewidth 16) where the
    # greedy orders reach 22-23 (min-fill's tree: 2.2e7 table entries against 7.3e6; exact ML 85 s
    # against 23 s); it is taken only below half the greedy tree's entries, so a chain keeps its
    # greedy tree (and the exact samples drawn through it). Both trees give the same log Z and
    # marginals: the same sums in another order, rounding of about 1e-16 per term.
    from skmrf.inference._junction_tree import BANDED_MARGIN

    m = make_random_mrf(grid_graph(16, 16), scale=1.0, random_state=0)
    banded, greedy = JunctionTree(m.n_states, m.cliques), JunctionTree(m.n_states, m.cliques, heuristic="min_fill")
    assert banded.treewidth == 16 < greedy.treewidth
    assert greedy.table_entries > BANDED_MARGIN * banded.table_entries
    full = m.layout.full_tables(m.theta)
    a, b = banded.calibrate(full, m.layout), greedy.calibrate(full, m.layout)
    assert a.log_z == pytest.approx(b.log_z, rel=1e-12)
    np.testing.assert_allclose(a.clique_marginals(), b.clique_marginals(), rtol=1e-9, atol=1e-13)
    chain = make_random_mrf("chain", n_variables=30, n_states=3, random_state=0)
    default = JunctionTree(chain.n_states, chain.cliques)
    assert default.nodes == JunctionTree(chain.n_states, chain.cliques, heuristic="min_degree").nodes
