import itertools
import re
import warnings

import networkx as nx
import numpy as np
import pytest

from skmrf import ExactMaxLikelihood, LAPEstimator, PseudoLikelihoodEstimator, chain_graph, grid_graph
from skmrf.datasets import make_random_mrf, sample_random_mrf
from skmrf.estimators._existence import NoFiniteEstimateWarning
from skmrf.exceptions import TreewidthError

from . import brute_force as bf


def distance_bound(model, theta, grad_max, alpha=0.0):
    """How far a point whose gradient has no component above ``grad_max`` can be from the optimum.

    ``|theta - theta*|_inf <= |theta - theta*|_2 <= sqrt(d) grad_max / lambda_min``, with ``lambda_min``
    the smallest eigenvalue of the Hessian there (the Fisher information plus the ridge): a tolerance
    from the solver's stopping rule and the problem's curvature, not from one machine's result.
    """
    from skmrf.estimators._exact import exact_hessian

    lam = np.linalg.eigvalsh(exact_hessian(model, theta)).min() + alpha
    return np.sqrt(len(theta)) * grad_max / lam


def brute_force_grad_max(model, theta, X, alpha=0.0):
    """Largest component of the brute-force gradient at ``theta`` (scipy's BFGS may stop short of gtol)."""
    xs = bf.states(model.n_states)
    F = bf.features(model, xs)
    e = F @ theta
    p = np.exp(e - e.max())
    p /= p.sum()
    return np.abs(F.T @ p - bf.features(model, np.asarray(X)).mean(axis=0) + alpha * theta).max()


def test_moment_matching_and_brute_force_ml():
    cliques = [(0, 1, 2), (2, 3), (3, 4), (4, 5, 6), (6, 0), (1, 7), (7, 8)]
    X, _ = sample_random_mrf(cliques, 3000, n_states=2, n_variables=9, random_state=0)
    est = ExactMaxLikelihood(cliques, alpha=0.0, tol=1e-10).fit(X)
    # Moment matching: model clique marginals minus the empirical ones are the gradient (alpha = 0),
    # which the fit brings below tol = 1e-10 (Newton polish); plus the rounding of the marginals (~1e-15).
    # (It was 1e-6, four orders above what the fit guarantees.)
    emp = est.model_.layout.table_counts(X) / len(X)
    np.testing.assert_allclose(est.model_.calibrate().clique_marginals(), emp, rtol=0, atol=1e-10 + 1e-13)
    # Same estimate as an independent brute-force ML fit: both gradients (tol = 1e-10, and what BFGS
    # reached, ~2e-9) divided by the smallest Fisher eigenvalue (~4e-3 here), times sqrt(d): ~2e-6 (was 1e-5).
    ref = bf.max_likelihood(est.model_, X)
    bound = distance_bound(est.model_, ref, 1e-10) + distance_bound(
        est.model_, ref, brute_force_grad_max(est.model_, ref, X)
    )
    np.testing.assert_allclose(est.theta_, ref, rtol=0, atol=bound)


def test_three_states_with_ridge_matches_brute_force():
    cliques = [(0, 1), (1, 2), (2, 0), (2, 3)]
    X, _ = sample_random_mrf(cliques, 400, n_states=3, n_variables=4, random_state=1)
    est = ExactMaxLikelihood(cliques, alpha=0.05, tol=1e-10).fit(X)
    ref = bf.max_likelihood(est.model_, X, alpha=0.05)
    # Both stopping gradients over the curvature (>= alpha = 0.05), times sqrt(d) (was 1e-6 flat).
    g_ref = brute_force_grad_max(est.model_, ref, X, alpha=0.05)
    bound = distance_bound(est.model_, ref, 1e-10 + g_ref, alpha=0.05)
    np.testing.assert_allclose(est.theta_, ref, rtol=0, atol=bound)


def tree_closed_form(model, X):
    """Normalised potentials of the ML tree model p = prod p_ij / prod p_i^(d_i - 1)."""
    n, k = X.shape[1], model.n_states
    deg = np.zeros(n, dtype=int)
    theta = np.zeros(model.n_params)
    pair = {}
    for c in model.cliques:
        if len(c) == 2:
            i, j = c
            deg[i] += 1
            deg[j] += 1
            t = np.zeros((k[i], k[j]))
            np.add.at(t, (X[:, i], X[:, j]), 1)
            pair[c] = np.log(t / len(X))
    lay = model.layout
    for b, c in enumerate(model.cliques):
        block = theta[lay.block_offsets[b] : lay.block_offsets[b + 1]]
        if len(c) == 2:
            lp = pair[c]
            block[:] = (lp[1:, 1:] - lp[1:, :1] - lp[:1, 1:] + lp[0, 0]).ravel()
        else:
            (i,) = c
            lpi = np.log(np.bincount(X[:, i], minlength=k[i]) / len(X))
            val = -(deg[i] - 1) * (lpi[1:] - lpi[0])
            for e, lp in pair.items():
                if e[0] == i:
                    val += lp[1:, 0] - lp[0, 0]
                elif e[1] == i:
                    val += lp[0, 1:] - lp[0, 0]
            block[:] = val
    return theta


@pytest.mark.parametrize("n_states", [2, 3])
def test_tree_estimate_equals_closed_form(n_states):
    tree = nx.random_labeled_tree(12, seed=3)
    X, _ = sample_random_mrf(tree, 20000, n_states=n_states, random_state=2)
    est = ExactMaxLikelihood(tree, alpha=0.0, tol=1e-10).fit(X)
    # The closed form is exact (to ~1e-13: logs of counts); the iterative fit stops at gradient 1e-10,
    # so within sqrt(d) 1e-10 / lambda_min of it (3e-8 binary, 2e-7 three states; was 1e-6).
    expected = tree_closed_form(est.model_, X)
    np.testing.assert_allclose(est.theta_, expected, rtol=0, atol=distance_bound(est.model_, expected, 1e-10) + 1e-12)


def test_score_is_exact_mean_log_likelihood():
    X, _ = sample_random_mrf(grid_graph(3, 3), 500, random_state=0)
    est = ExactMaxLikelihood(grid_graph(3, 3), alpha=0.01).fit(X)
    xs = bf.states(est.n_states_)
    lp = bf.energies(est.model_, xs) - bf.log_partition(est.model_)
    lookup = dict(zip(map(tuple, xs), lp))
    expected = np.array([lookup[tuple(x)] for x in X[:50]])
    # 1e-12: the same parameters scored by the junction tree and by enumeration of 512 states (rounding).
    np.testing.assert_allclose(est.score_samples(X[:50]), expected, rtol=1e-12)
    assert est.score(X[:50]) == pytest.approx(expected.mean(), rel=1e-12)
    assert est.score_method_ == "exact"


def test_pseudo_scoring_on_request():
    X, _ = sample_random_mrf(grid_graph(3, 3), 200, random_state=0)
    est = ExactMaxLikelihood(grid_graph(3, 3), alpha=0.1, score_method="pseudo").fit(X)
    assert est.score_method_ == "pseudo" and est.log_partition_ is None
    # The same function of the same parameters (default rtol=1e-7 was far looser than rounding).
    np.testing.assert_allclose(est.score_samples(X), est.model_.log_pseudo_likelihood(X), rtol=1e-12)


def test_x_is_never_modified_and_dataframe_names_map_the_graph():
    pd = pytest.importorskip("pandas")
    X, _ = sample_random_mrf(chain_graph(4), 300, random_state=0)
    frame = pd.DataFrame(X, columns=["d", "c", "b", "a"])
    before = frame.copy()
    g = nx.Graph([("a", "b"), ("b", "c"), ("c", "d")])
    est = ExactMaxLikelihood(g, alpha=0.01, tol=1e-10).fit(frame)
    pd.testing.assert_frame_equal(frame, before)
    assert est.graph_.edges == [(0, 1), (1, 2), (2, 3)]
    ref = ExactMaxLikelihood("chain", alpha=0.01, tol=1e-10).fit(X)
    # The same problem with the columns reversed: both fits stop at gradient <= tol = 1e-10, so each is
    # within sqrt(d) tol / lambda_min of the optimum (~1e-8). At the default tol = 1e-7 the old flat
    # 1e-7 was below what tol guarantees (1.4e-5).
    bound = 2 * distance_bound(ref.model_, ref.theta_, 1e-10, alpha=0.01)
    np.testing.assert_allclose(est.theta_, ref.theta_, rtol=0, atol=bound)


@pytest.mark.parametrize(
    "X, graph, match",
    [
        (np.zeros((5, 3), dtype=int), [(0, 1), (1, 3)], "names variable 3"),
        (np.zeros((5, 3), dtype=int), chain_graph(4), "4 nodes but X has 3"),
        (np.array([[0, 1], [1, -1]]), "chain", "Negative values in data: column 1 has -1 at row 1"),
        (np.array([[0, 1.5], [1, 0]]), "chain", "column 1 has the value 1.5 at row 0"),
        (np.array([[0, np.nan], [1, 0]]), "chain", "column 1 has nan at row 0"),
        (np.zeros((0, 3)), "chain", "0 sample"),
        (np.array([["a", "b"], ["b", "a"]]), "chain", "non-numeric"),
        (np.zeros((5, 30), dtype=int), "complete", "treewidth is at least about 29"),
    ],
)
def test_bad_input_is_refused_clearly(X, graph, match):
    with pytest.raises(ValueError, match=match):
        ExactMaxLikelihood(graph).fit(X)


def test_states_out_of_range():
    X = np.array([[0, 1], [1, 2], [1, 0]])
    with pytest.raises(ValueError, match="Column 1 has state 2 at row 1, but the model has 2 states"):
        ExactMaxLikelihood(n_states=2).fit(X)
    est = ExactMaxLikelihood(alpha=0.1).fit(X)
    with pytest.raises(ValueError, match="Column 0 has state 2 at row 0"):
        est.score(np.array([[2, 0]]))
    with pytest.raises(ValueError, match="Clique \\(0, 1\\) has 5000 x 5000"):
        ExactMaxLikelihood(n_states=5000).fit(X)


def test_constant_column_and_single_row_give_the_extended_mle_with_a_warning():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(200, 4))
    X[:, 2] = 0
    Xc = X.copy()
    with pytest.warns(UserWarning, match=r"does not exist: for cliques \[\(2,\), \(1, 2\), \(2, 3\)\]"):
        est = ExactMaxLikelihood(alpha=0.0).fit(X)
    np.testing.assert_array_equal(X, Xc)
    # The extended MLE: state 1 of column 2 gets probability zero (60 nats below state 0).
    assert np.all(np.isfinite(est.theta_)) and est.model_.potential((2,))[0] < -50
    assert np.isfinite(est.score(X))
    assert est.model_.marginals()[(2,)][1] < 1e-20
    # With a ridge the estimate is finite and no warning is raised.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = ExactMaxLikelihood(alpha=0.1).fit(X)
    assert est.model_.potential((2,))[0] < -1
    with pytest.warns(UserWarning, match="does not exist"):
        one = ExactMaxLikelihood(alpha=0.0).fit(X[:1])
    assert np.all(np.isfinite(one.theta_))


def test_too_wide_graph_is_refused_with_advice():
    X = np.zeros((10, 20 * 20), dtype=int)
    with pytest.raises(TreewidthError, match="PseudoLikelihoodEstimator"):
        ExactMaxLikelihood(grid_graph(20, 20), max_bytes=10**8).fit(X)


def test_verbose_and_convergence_warning(capsys):
    X, _ = sample_random_mrf(grid_graph(3, 3), 300, random_state=0)
    with pytest.warns(Warning, match="did not converge in 2 iterations"):
        ExactMaxLikelihood(grid_graph(3, 3), max_iter=2, verbose=2).fit(X)
    assert "[ExactMaxLikelihood] Iteration 1, negative log-likelihood" in capsys.readouterr().out
    # #40: verbose=1 printed a line per iteration (316 for one fit); now the bar alone
    with pytest.warns(Warning, match="did not converge in 2 iterations"):
        ExactMaxLikelihood(grid_graph(3, 3), max_iter=2, verbose=1).fit(X)
    assert "Iteration 1" not in capsys.readouterr().out


def test_sample_from_fitted_estimator():
    X, model = sample_random_mrf(grid_graph(3, 3), 2000, random_state=0)
    est = ExactMaxLikelihood(grid_graph(3, 3)).fit(X)
    S = est.sample(50, random_state=0)
    assert S.shape == (50, 9) and S.dtype == np.int64
    np.testing.assert_array_equal(S, est.sample(50, random_state=0))


def test_exact_hessian_is_the_feature_covariance():
    from skmrf.estimators._exact import exact_hessian

    model = make_random_mrf([(0, 1, 2), (2, 3)], [3, 2, 2, 3], random_state=0)
    xs = bf.states(model.n_states)
    F = bf.features(model, xs)
    e = bf.energies(model, xs)
    p = np.exp(e - e.max())
    p /= p.sum()
    mu = F.T @ p
    cov = (F * p[:, None]).T @ F - np.outer(mu, mu)
    # 1e-13: a covariance of features in [0, 1] (entries <= 0.25) summed over 36 states, both closed forms.
    np.testing.assert_allclose(exact_hessian(model, model.theta), cov, atol=1e-13)


# -- the extended MLE (#10, item 2) ------------------------------------------------------------
def _ipf_by_enumeration(states, p_hat, factors, n_sweeps=20000, tol=1e-13):
    """Textbook IPF on the full joint table (independent of the package): the extended MLE."""
    p = np.full(len(states), 1.0 / len(states))
    for _ in range(n_sweeps):
        worst = 0.0
        for f in factors:
            keys = np.ravel_multi_index(states[:, f].T, [2] * len(f))
            model = np.bincount(keys, p, minlength=2 ** len(f))
            data = np.bincount(keys, p_hat, minlength=2 ** len(f))
            worst = max(worst, np.abs(model - data).max())
            ratio = np.divide(data, model, out=np.zeros_like(data), where=model > 0)
            p = p * ratio[keys]
        if worst < tol:
            break
    return p


def _table_data(counts, n_variables):
    states = np.array(list(itertools.product([0, 1], repeat=n_variables)))
    return states, np.repeat(states, counts, axis=0)


def test_saturated_model_with_an_empty_cell_reaches_the_entropy_supremum():
    """A real 2^6 table with one empty cell: the saturated model's log-likelihood supremum is the
    empirical negative entropy; the fit must reach it to 1e-8 (float64 rounding is ~1e-15)."""
    counts = np.random.default_rng(0).integers(1, 20, size=64)
    counts[37] = 0
    states, X = _table_data(counts, 6)
    with pytest.warns(NoFiniteEstimateWarning, match=r"cliques \[\(0, 1, 2, 3, 4, 5\)\].*extended MLE"):
        est = ExactMaxLikelihood([tuple(range(6))], alpha=0.0).fit(X)
    p_hat = counts / counts.sum()
    supremum = float(np.sum(p_hat[p_hat > 0] * np.log(p_hat[p_hat > 0])))
    assert abs(est.score(X) - supremum) < 1e-8
    p_ipf = _ipf_by_enumeration(states, p_hat, [list(range(6))])
    # 1e-12: for the saturated model one IPF sweep is exact (p = p_hat), for both sides.
    np.testing.assert_allclose(np.exp(est.model_.log_prob(states)), p_ipf, atol=1e-12)
    # The old behaviour (L-BFGS stopped in the box) was measurably short of it:
    assert np.all(np.isfinite(est.theta_))


def test_non_decomposable_model_with_empty_cells_matches_textbook_ipf():
    """Three pairwise factors on a triangle (no closed form) with an empty pair cell: the fit's
    likelihood equals the limit of IPF on the full joint table to 1e-8."""
    rng = np.random.default_rng(1)
    counts = rng.integers(1, 15, size=8)
    counts[[0, 1]] = 0  # the pair (x0, x1) = (0, 0) never occurs
    states, X = _table_data(counts, 3)
    factors = [(0, 1), (0, 2), (1, 2)]
    with pytest.warns(NoFiniteEstimateWarning, match="extended MLE"):
        est = ExactMaxLikelihood(factors, alpha=0.0, tol=1e-12, max_iter=5000).fit(X)
    p_hat = counts / counts.sum()
    p_ipf = _ipf_by_enumeration(states, p_hat, [list(f) for f in factors])
    keep = p_hat > 0
    supremum = float(np.sum(p_hat[keep] * np.log(p_ipf[keep])))
    # 1e-8: both IPFs stop at a marginal gap <= 1e-12 / 1e-13; the distance to their common limit is
    # the gap over IPF's linear convergence rate, far below 1e-8 unless max_iter runs out (then it warns).
    assert abs(est.score(X) - supremum) < 1e-8
    np.testing.assert_allclose(np.exp(est.model_.log_prob(states)), p_ipf, atol=1e-8)


@pytest.mark.parametrize("cls", [PseudoLikelihoodEstimator, LAPEstimator])
def test_pl_and_lap_warn_like_exact_ml_when_no_finite_estimate_exists(cls):
    X = np.random.default_rng(0).integers(0, 2, size=(200, 4))
    X[:, 2] = 0
    with pytest.warns(NoFiniteEstimateWarning, match=r"for cliques \[\(2,\), \(1, 2\), \(2, 3\)\].*within \+-30"):
        cls(n_states=2, alpha=0.0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoFiniteEstimateWarning)
        cls(n_states=2, alpha=0.01).fit(X)


def test_slow_extended_mle_says_how_far_it_stopped_from_the_supremum():
    """With an empty joint cell that no pair table shows (110 here), the limit needs parameters
    that diverge in a coordinated way and IPF approaches it slowly: the warning must quote the
    remaining gap, and the quoted bound must really cover the distance to the limit."""
    counts = np.random.default_rng(1).integers(1, 15, size=8)
    counts[[0, 1, 6]] = 0
    states, X = _table_data(counts, 3)
    factors = [(0, 1), (0, 2), (1, 2)]
    with pytest.warns(NoFiniteEstimateWarning, match=r"stopped after max_iter=200 sweeps") as record:
        est = ExactMaxLikelihood(factors, alpha=0.0, tol=1e-12, max_iter=200).fit(X)
    quoted = float(re.search(r"up to about ([0-9.e+-]+) nats", str(record[0].message)).group(1))
    p_hat = counts / counts.sum()
    p_ipf = _ipf_by_enumeration(states, p_hat, [list(f) for f in factors], n_sweeps=20000)
    keep = p_hat > 0
    supremum = float(np.sum(p_hat[keep] * np.log(p_ipf[keep])))
    assert 0 < supremum - est.score(X) <= quoted


def test_extended_mle_calibrates_once_per_junction_tree_node_and_sweep(monkeypatch):
    """The fuzz case of #23 (alpha=0, 4 states on the complete graph of 8 columns, 21 rows) ran
    1000 IPF sweeps of 29 calibrations each (11 min): factors held by the same junction-tree node
    are now updated from one calibration, so a sweep of the complete graph (one node) costs one
    calibration plus the one that measures the gap."""
    from skmrf.inference._junction_tree import JunctionTree

    calls = []
    original = JunctionTree.calibrate
    monkeypatch.setattr(JunctionTree, "calibrate", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    X = np.random.default_rng(99).integers(0, 3, size=(15, 5))
    with pytest.warns(NoFiniteEstimateWarning, match="extended MLE"):
        ExactMaxLikelihood("complete", alpha=0.0, max_iter=6).fit(X)
    assert len(calls) <= 6 * 2 + 3  # before: 6 * (10 edges + 1) + 2 = 68
