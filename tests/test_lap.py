import warnings

import networkx as nx
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skmrf import ExactMaxLikelihood, chimera_graph, grid_graph, lattice_graph
from skmrf._solvers import batched_newton
from skmrf.datasets import sample_random_mrf
from skmrf.estimators._lap import (
    LAPEstimator,
    NeighbourhoodTooLargeError,
    auxiliary_factors,
)
from skmrf.graphs import resolve_graph
from skmrf.inference._enumerate import Enumerator
from skmrf.model import DiscreteMRF

from . import brute_force as bf
from .test_exact import tree_closed_form


@pytest.mark.parametrize("n_states", [2, 3])
@pytest.mark.parametrize("node_rule", ["mean", "first", "own"])
def test_exact_strategy_on_a_tree_is_the_closed_form_ml(n_states, node_rule):
    tree = nx.random_labeled_tree(12, seed=3)
    X, _ = sample_random_mrf(tree, 20000, n_states=n_states, random_state=2)
    est = LAPEstimator(tree, strategy="exact", node_rule=node_rule, alpha=0.0, tol=1e-11).fit(X)
    # On a tree the marginal of A_q is a tree containing every edge at q's
    # nodes, so the auxiliary ML reproduces the closed-form edge and node
    # potentials exactly; 1e-6 leaves room for the Newton tolerance 1e-11.
    np.testing.assert_allclose(est.theta_, tree_closed_form(est.model_, X), atol=1e-6)
    assert all(s.converged for s in est.subproblems_)


def _brute_force_aux(graph, q, strategy, X, n_states, alpha):
    """Fit the auxiliary MRF of q by the brute-force reference ML; return {clique: block}."""
    A, factors = auxiliary_factors(graph, q, strategy)
    loc = {v: i for i, v in enumerate(A)}
    aux = DiscreteMRF([tuple(loc[v] for v in f) for f in factors], n_states[list(A)])
    aux.theta = bf.max_likelihood(aux, X[:, list(A)], alpha=alpha)
    return {c: aux.potential(tuple(loc[v] for v in c)).copy() for c in _subsets(q)}


def _subsets(q):
    import itertools

    return [s for r in range(1, len(q) + 1) for s in itertools.combinations(q, r)]


@pytest.mark.parametrize(
    "strategy, alpha, n_states",
    [
        ("pairwise", 0.05, [2, 3, 2, 2, 3, 2, 2]),
        ("pairwise", 0.0, [2, 3, 2, 2, 3, 2, 2]),
        ("exact", 0.05, 2),
        ("dense", 0.0, 2),
        ("exact", 0.0, [2, 3, 2, 2, 2, 2, 2]),
    ],
)
def test_reads_off_the_brute_force_auxiliary_fit(strategy, alpha, n_states):
    # A cycle with a chord and a triangle factor: non-trivial marginals.
    cliques = [(0, 1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 0), (1, 4)]
    X, _ = sample_random_mrf(cliques, 30000, n_states=n_states, n_variables=7, random_state=0)
    est = LAPEstimator(cliques, strategy=strategy, alpha=alpha, node_rule="first", read="theta", tol=1e-11).fit(X)
    graph = resolve_graph(cliques, 7)
    n_checked = 0
    for q in graph.factors:
        sub = next(s for s in est.subproblems_ if s.clique == q)
        if sub.profiled and alpha > 0:
            continue  # the ridge then covers only the blocks meeting q (documented)
        n_checked += 1
        ref = _brute_force_aux(graph, q, strategy, X, est.n_states_, alpha)
        # 1e-6: Newton stops at gradient 1e-11, BFGS at 1e-11; the smallest
        # Fisher eigenvalue of these auxiliary models is ~1e-2 to 1e-3.
        # With alpha = 0 and a profiled factor the read-off blocks are the
        # conditional ML, which equals the joint auxiliary ML exactly.
        np.testing.assert_allclose(est.model_.potential(q), ref[q], atol=1e-6, err_msg=str(q))
        for c in _subsets(q):
            if est.block_sources_[c][0] == est.subproblems_.index(sub):  # node_rule="first"
                np.testing.assert_allclose(est.model_.potential(c), ref[c], atol=1e-6, err_msg=str(c))
    assert n_checked >= 3


def test_exact_structure_is_proposition_9():
    # The running example of the exact-inference paper (3x3 grid, nodes 1..9
    # there, 0..8 here): q = {7, 8} -> {6, 7}; A_q = {3, 4, 6, 7, 8}; path
    # connected pairs through S \ A_q = {0, 1, 2, 5}: {3, 8} and {4, 8}.
    g = resolve_graph(grid_graph(3, 3), 9)
    A, factors = auxiliary_factors(g, (6, 7), "exact")
    assert A == (3, 4, 6, 7, 8)
    assert set(factors) == {(3, 4, 8), (3, 6), (4, 7), (6, 7), (7, 8)}
    _, dense = auxiliary_factors(g, (6, 7), "dense")
    assert set(dense) == {(3, 4, 8), (3, 6), (4, 7), (6, 7), (7, 8)}
    _, pair = auxiliary_factors(g, (6, 7), "pairwise")
    assert set(pair) == {(3, 4), (3, 8), (4, 8), (3, 6), (4, 7), (6, 7), (7, 8)}


def test_batched_newton_matches_enumerated_ml_with_several_contexts():
    # A random model, one context (joint ML) vs brute force; and a batch of 5.
    cliques = [(0, 1), (1, 2), (0, 2), (2, 3)]
    enum = Enumerator(resolve_graph(cliques, 4).cliques, [2, 3, 2, 2])
    rng = np.random.default_rng(0)
    freq = rng.dirichlet(np.ones(enum.states.shape[0]), size=5)
    theta, n_iter, conv = batched_newton(enum.features[None], freq[:, None, :], 0.01, tol=1e-12)
    assert conv.all()
    model = DiscreteMRF(cliques, [2, 3, 2, 2])
    for b in range(5):
        # Reference: BFGS on the same objective (weighted rows = the frequencies).
        from scipy.optimize import minimize
        from scipy.special import logsumexp

        F, s = enum.features, freq[b] @ enum.features

        def f(t, F=F, s=s):
            e = F @ t
            lz = logsumexp(e)
            return lz - t @ s + 0.005 * t @ t, F.T @ np.exp(e - lz) - s + 0.01 * t

        res = minimize(f, np.zeros(model.n_params), jac=True, method="BFGS", options={"gtol": 1e-12})
        # Newton stops at gradient 1e-12, BFGS where it stops (often short of gtol); the ridge 0.01 bounds
        # the Hessian's smallest eigenvalue, so each is within sqrt(d) |g|_inf / 0.01 of the optimum.
        bound = np.sqrt(len(res.x)) * (1e-12 + np.abs(res.jac).max()) / 0.01
        np.testing.assert_allclose(theta[b], res.x, rtol=0, atol=bound)


def test_consistent_and_close_to_ml_on_a_grid():
    X, model = sample_random_mrf(grid_graph(4, 4), 20000, random_state=0)
    ml = ExactMaxLikelihood(grid_graph(4, 4)).fit(X)
    for strategy in ("exact", "dense", "pairwise"):
        est = LAPEstimator(grid_graph(4, 4), strategy=strategy).fit(X)
        rel = np.linalg.norm(est.theta_ - ml.theta_) / np.linalg.norm(ml.theta_)
        # LAP paper, Figs. 2-4: at large N all variants are within a few
        # percent of ML (measured ~0.5% here).
        assert rel < 0.03, (strategy, rel)


@pytest.mark.parametrize("graph", [lattice_graph((2, 2, 3)), chimera_graph(1, 2, 2)])
def test_other_topologies_run(graph):
    X, _ = sample_random_mrf(graph, 2000, random_state=0)
    for strategy in ("exact", "dense", "pairwise"):
        est = LAPEstimator(graph, strategy=strategy).fit(X)
        assert np.all(np.isfinite(est.theta_))


def test_node_rules_and_sources():
    X, _ = sample_random_mrf(grid_graph(3, 3), 3000, random_state=1)
    fits = {r: LAPEstimator(grid_graph(3, 3), node_rule=r).fit(X) for r in ("mean", "first", "own")}
    # Edge blocks come from the same problems whatever the node rule.
    for r in ("first", "own"):
        for c in fits["mean"].graph_.edges:
            # 1e-12: the same subproblems solved by the same code (bit-identical in practice).
            np.testing.assert_allclose(fits[r].model_.potential(c), fits["mean"].model_.potential(c), atol=1e-12)
    mean = fits["mean"]
    srcs = mean.block_sources_[(4,)]
    assert len(srcs) == 4 and all(4 in mean.subproblems_[i].clique for i in srcs)
    first = fits["first"]
    assert first.block_sources_[(4,)] == (srcs[0],)
    own = fits["own"]
    (i,) = own.block_sources_[(4,)]
    assert own.subproblems_[i].clique == (4,) and own.subproblems_[i].neighbourhood == (1, 3, 4, 5, 7)
    assert len(own.subproblems_) == 12 + 9


def test_batches_group_identical_structures():
    X, _ = sample_random_mrf(grid_graph(6, 6), 500, random_state=0)
    est = LAPEstimator(grid_graph(6, 6)).fit(X)
    # 60 edges; interior horizontal and vertical edges each share one structure.
    assert len(est.subproblems_) == 60 and est.n_groups_ < 30


def test_too_large_neighbourhood_is_refused_up_front():
    # An RBM-like complete bipartite graph: A_q is everything.
    rbm = nx.complete_bipartite_graph(10, 10)
    X = np.zeros((5, 20), dtype=int)
    with pytest.raises(NeighbourhoodTooLargeError, match=r"Clique \(0, 10\) has a 1-neighbourhood of \|A_q\| = 20"):
        LAPEstimator(rbm).fit(X)
    with pytest.raises(ValueError, match="PseudoLikelihoodEstimator"):
        LAPEstimator(rbm).fit(X)


def test_unseen_state_is_finite_with_default_alpha():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(200, 5))
    X[:, 2] = np.minimum(X[:, 2], 1)  # state 2 of column 2 never observed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = LAPEstimator(n_states=3, strategy="exact").fit(X)
    assert np.all(np.isfinite(est.theta_))
    # Pushed down but finite: the default ridge alpha = 1 / 200 holds it at about -2.5.
    assert est.model_.potential((2,))[1] < -2
    assert np.isfinite(est.score(X))


def test_narrow_integer_input_is_used_without_conversion():
    # uint8 data are read in place (no int64 copy); the fit must not depend on the dtype,
    # including a state of 255, whose "max + 1" would overflow in uint8.
    X, _ = sample_random_mrf(grid_graph(3, 3), 300, random_state=0)
    X8 = X.astype(np.uint8)
    a = LAPEstimator("grid:3x3").fit(X)
    b = LAPEstimator("grid:3x3").fit(X8)
    np.testing.assert_array_equal(a.theta_, b.theta_)
    X8[0, 4] = 255
    est = LAPEstimator("chain").fit(X8[:, [3, 4]])
    assert est.n_states_.tolist() == [2, 256]
    assert X8[0, 4] == 255  # the caller's array is untouched


def test_non_converged_subproblem_warns_with_its_clique():
    X, _ = sample_random_mrf(grid_graph(2, 3), 500, random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"did not converge .* for cliques \[\(0, 1\)"):
        est = LAPEstimator("grid:2x3", max_iter=1).fit(X)
    assert not any(s.converged for s in est.subproblems_)


def test_verbose_reports_the_auxiliary_problems(capsys):
    # n_jobs invariance is in test_estimator_contract.py.
    X, _ = sample_random_mrf(grid_graph(5, 5), 1000, random_state=0)
    LAPEstimator("grid:5x5", n_jobs=2, verbose=1).fit(X)
    assert "[LAPEstimator] 40 auxiliary problems" in capsys.readouterr().out


def test_bad_parameters():
    X = np.zeros((4, 3), dtype=int)
    with pytest.raises(ValueError, match="'strategy' parameter of LAPEstimator"):
        LAPEstimator(strategy="bogus").fit(X)
    with pytest.raises(ValueError, match="'alpha' parameter of LAPEstimator"):
        LAPEstimator(alpha=-1.0).fit(X)


def test_runs_on_a_dask_cluster(parallel_always):
    # About 2 s with a local in-process cluster, so not marked slow. parallel_always: a
    # problem this small would otherwise run serially, off the cluster.
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    X, _ = sample_random_mrf(grid_graph(4, 4), 500, random_state=0)
    ref = LAPEstimator("grid:4x4").fit(X)
    with distributed.Client(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None) as client:
        with distributed.get_task_stream(client) as stream, parallel_config(backend="dask"):
            est = LAPEstimator("grid:4x4", n_jobs=2).fit(X)
        assert len(stream.data) > 0  # the chunks really ran on the cluster
    # 1e-10: the same Newton iterations on the same counts, only BLAS threads may round differently
    # (~1e-15, times the conditioning); a stopping decision would have to land within rounding of tol.
    np.testing.assert_allclose(est.theta_, ref.theta_, atol=1e-10)


@pytest.mark.parametrize(
    "strategy, node_rule, n_states",
    [("pairwise", "mean", [2, 3] * 15), ("pairwise", "first", [2, 3] * 15), ("pairwise", "own", [2, 3] * 15)]
    + [("exact", "mean", 2)],  # binary: the exact structures of 3-state neighbourhoods take seconds
)
def test_passes_give_the_one_pass_fit_bit_for_bit(monkeypatch, tmp_path, strategy, node_rule, n_states):
    """Counting, solving and reading off in many small passes (each reading a band of columns,
    from a memmap in chunks of 70 rows, with weights) changes nothing: the same Newton batches
    and the same sums in problem order, so equality is exact."""
    import skmrf._data.chunks as chunks
    import skmrf._kernels.lap as lap

    X, _ = sample_random_mrf(grid_graph(5, 6), 400, n_states=n_states, random_state=3)
    w = np.random.default_rng(0).integers(1, 4, len(X)).astype(float)
    est = LAPEstimator("grid:5x6", strategy=strategy, node_rule=node_rule, n_states=n_states)
    ref = est.fit(X, sample_weight=w)
    ref_theta, ref_iter = ref.theta_.copy(), ref.subproblems_.n_iter.copy()
    ref_sources = {c: ref.block_sources_[c] for c in ref.model_.cliques}
    path = tmp_path / "x.u8"
    mm = np.memmap(path, dtype=np.uint8, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    seen = []
    count_pass = lap._count_pass
    monkeypatch.setattr(lap, "_count_pass", lambda rows, g, t: seen.append(rows.X.shape[1]) or count_pass(rows, g, t))
    monkeypatch.setattr(lap, "PASS_ENTRIES", 200)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 70 * X.shape[1])
    for data in (X, np.memmap(path, dtype=np.uint8, mode="r", shape=X.shape)):
        seen.clear()
        got = est.fit(data, sample_weight=w)
        assert len(seen) > 5  # many passes
        np.testing.assert_array_equal(got.theta_, ref_theta)
        np.testing.assert_array_equal(got.subproblems_.n_iter, ref_iter)
        assert {c: got.block_sources_[c] for c in got.model_.cliques} == ref_sources


def test_records_are_compact_and_behave_as_a_list_and_a_dict():
    X, _ = sample_random_mrf(grid_graph(3, 4), 500, random_state=0)
    est = LAPEstimator("grid:3x4", node_rule="own").fit(X)
    subs, sources = est.subproblems_, est.block_sources_
    records = list(subs)
    assert subs == records and subs[-1] == records[-1] and subs[2:4] == records[2:4]
    assert len(subs) == 17 + 12 and subs.n_iter.dtype == np.int32 and subs.converged.all()
    assert all(isinstance(v, int) for s in records for v in s.neighbourhood)
    assert subs.index(records[5]) == 5
    with pytest.raises(IndexError):
        subs[len(subs)]
    assert dict(sources) == {c: sources[c] for c in est.model_.cliques} and len(sources) == len(est.model_.cliques)
    assert sources[(0, 1)] == (0,)
    for missing in [(0, 5), (99,), "a", (0, 1, 2)]:
        with pytest.raises(KeyError):
            sources[missing]


def test_memmap_pages_are_released_but_private_writes_kept(tmp_path):
    """A copy-on-write memmap (mode="c") keeps the caller's in-memory writes: LAP drops the
    mapped pages of read-only and shared maps only (MADV_DONTNEED would discard private ones)."""
    X, _ = sample_random_mrf(grid_graph(3, 4), 300, random_state=0)
    path = tmp_path / "x.u8"
    np.memmap(path, dtype=np.uint8, mode="w+", shape=X.shape)[:] = X
    mm = np.memmap(path, dtype=np.uint8, mode="c", shape=X.shape)
    mm[:5] = 1 - mm[:5]  # private writes, not in the file
    changed = np.array(mm)
    got = LAPEstimator("grid:3x4").fit(mm).theta_
    np.testing.assert_array_equal(mm, changed)
    np.testing.assert_array_equal(got, LAPEstimator("grid:3x4").fit(changed).theta_)
    ro = np.memmap(path, dtype=np.uint8, mode="r", shape=X.shape)
    np.testing.assert_array_equal(LAPEstimator("grid:3x4").fit(ro).theta_, LAPEstimator("grid:3x4").fit(X).theta_)
