"""Sparse covariance selection (#14): the chordal-embedding solver against the dense one and closed forms.

Every comparison is in standardised units (``standardized_precision_``), where
the dense Newton solver is converged to its default residual 1e-10; 1e-8 leaves
two orders of magnitude for the conditioning of the precision (the entries are
compared relative to the largest).
"""

import tracemalloc
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from skmrf import GaussianLAP, GaussianMaxLikelihood
from skmrf._kernels.gaussian.chordal import ChordalPattern, likelihood_start, pattern_covariance
from skmrf.exceptions import NotPositiveDefiniteWarning
from skmrf.graphs import grid_graph

from .test_gaussian import laplacian_precision, sample


def _data(graph, n, seed=0):
    """Samples of a diagonally dominant precision on the graph (so the ML exists with moderate n)."""
    A = nx.to_scipy_sparse_array(graph, format="csr")
    p = A.shape[0]
    Q = sp.csr_array(sp.eye(p) * (1.0 + np.asarray(A.sum(axis=1)).ravel().max() * 0.3) - 0.3 * A)
    return sample(Q, n, seed=seed)


PATTERNS = {
    "chain": nx.path_graph(12),
    "cycle": nx.cycle_graph(11),
    "grid": grid_graph(7, 6),
    "random": nx.gnp_random_graph(40, 0.08, seed=3),
    "star": nx.star_graph(11),
    "empty": nx.empty_graph(9),
    "complete": nx.complete_graph(7),
    "tree": nx.random_labeled_tree(30, seed=1),
}


def _standardised_dense(est):
    return est.standardized_precision_.toarray()


def _sample_covariance(X):
    Xc = X - X.mean(axis=0)
    return Xc.T @ Xc / len(X)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_sparse_equals_dense_newton(name):
    graph = PATTERNS[name]
    X = _data(graph, 200, seed=1)
    dense = GaussianMaxLikelihood(graph, solver="newton", decrement_tol=None).fit(X)
    sparse = GaussianMaxLikelihood(graph, solver="sparse", decrement_tol=None).fit(X)
    assert sparse.solver_ in ("sparse", "chordal")
    a, b = _standardised_dense(dense), _standardised_dense(sparse)
    # Both Newton solvers stop at a residual <= tol = 1e-10 in standardised units (or are the chordal
    # closed form); the standardised precisions (condition < 10 here) then differ by ~1e-9 at most, and
    # the scores by less (the score is stationary at the optimum). 1e-8 covers the condition.
    assert np.max(np.abs(a - b)) <= 1e-8 * np.max(np.abs(a))
    assert abs(dense.score(X) - sparse.score(X)) <= 1e-8 * abs(dense.score(X))


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_sparse_solution_satisfies_the_optimality_conditions(name):
    # [inv(Theta)]_ij = S_ij on the diagonal and every edge; zero outside the graph.
    graph = PATTERNS[name]
    X = _data(graph, 150, seed=2)
    est = GaussianMaxLikelihood(graph, solver="sparse", sparse=False, decrement_tol=None).fit(X)
    S = _sample_covariance(X)
    W = np.linalg.inv(est.precision_)
    A = nx.to_numpy_array(graph) != 0
    on = A | np.eye(len(A), dtype=bool)
    d = np.sqrt(np.diag(S))
    # The solver's residual is W - S on the pattern in standardised units, stopped at tol = 1e-10; the
    # explicit inverse adds eps x condition (< 10 here): 1e-8 leaves 100x.
    assert np.max(np.abs((W - S) / np.outer(d, d))[on]) <= 1e-8
    assert np.all(est.precision_[~on] == 0)


def _closed_form(S, graph):
    """Lauritzen's formula: sum of inverse clique blocks minus inverse separator blocks (a clique tree)."""
    p = len(S)
    cliques = [tuple(sorted(c)) for c in nx.chordal_graph_cliques(graph)]
    if not cliques:
        cliques = [(i,) for i in range(p)]
    covered = set().union(*map(set, cliques))
    cliques += [(i,) for i in range(p) if i not in covered]
    tree = nx.Graph()
    tree.add_nodes_from(range(len(cliques)))
    for a in range(len(cliques)):
        for b in range(a + 1, len(cliques)):
            tree.add_edge(a, b, weight=len(set(cliques[a]) & set(cliques[b])))
    Theta = np.zeros((p, p))
    for c in cliques:
        Theta[np.ix_(c, c)] += np.linalg.inv(S[np.ix_(c, c)])
    for a, b in nx.maximum_spanning_tree(tree).edges():
        sep = sorted(set(cliques[a]) & set(cliques[b]))
        if sep:
            Theta[np.ix_(sep, sep)] -= np.linalg.inv(S[np.ix_(sep, sep)])
    return Theta


@pytest.mark.parametrize(
    "graph",
    [nx.path_graph(15), nx.random_labeled_tree(25, seed=4), nx.complete_graph(6), nx.star_graph(8)]
    + [nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3), (1, 3), (3, 4), (4, 5), (3, 5), (5, 6)])],
    ids=["chain", "tree", "complete", "star", "chordal"],
)
def test_chordal_patterns_get_the_closed_form(graph):
    assert nx.is_chordal(graph)
    X = _data(graph, 100, seed=3)
    est = GaussianMaxLikelihood(graph, sparse=False).fit(X)
    assert est.solver_ == "chordal" and est.n_iter_ == 0
    expected = _closed_form(_sample_covariance(X), graph)
    # Closed form against closed form (no iterations): clique inverses of condition < 100, ~1e-13.
    np.testing.assert_allclose(est.precision_, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())


def test_pattern_covariance_is_the_sample_covariance_on_the_pattern():
    rng = np.random.default_rng(0)
    XT = rng.standard_normal((6, 40))
    rows = np.array([0, 1, 5, 3, 2], dtype=np.int64)
    cols = np.array([0, 0, 2, 3, 1], dtype=np.int64)
    S = XT @ XT.T / 40
    # 1e-13: sums of 40 products in another order: 40 x eps x (sum |x_i x_j| / |S_ij| <= 15 here) = 6e-14.
    np.testing.assert_allclose(pattern_covariance(XT, rows, cols, 40.0), S[rows, cols], rtol=1e-13)
    shrunk = pattern_covariance(XT, rows, cols, 40.0, shrinkage=0.25, mu=2.0)
    np.testing.assert_allclose(shrunk, 0.75 * S[rows, cols] + 0.25 * 2.0 * (rows == cols), rtol=1e-13)


def test_pattern_gram_takes_banded_offsets_as_gathered_entries():
    # A 30 x 30 lattice's offsets (0, 1, 30: at least _MIN_BAND entries each, so banded) with some
    # entries given as (row, col) and others as (col, row), shuffled, plus 40 random far entries
    # (gathered), in chunks of 7 rows: every entry equal to the gathered dot product. Both paths
    # take one einsum of the same two length-m rows, so the values are equal bit for bit.
    from skmrf._data.gaussian import _MIN_BAND, pattern_gram

    rng = np.random.default_rng(1)
    r, m = 30, 50
    XT = rng.standard_normal((r * r, m))
    A = sp.coo_array(sp.tril(nx.to_scipy_sparse_array(grid_graph(r, r)) + sp.identity(r * r)))
    far = rng.integers(0, r * r, (2, 40))
    rows, cols = np.concatenate([A.row, far[0]]), np.concatenate([A.col, far[1]])
    swap = rng.random(len(rows)) < 0.5
    rows, cols = np.where(swap, cols, rows), np.where(swap, rows, cols)
    order = rng.permutation(len(rows))
    rows, cols = rows[order].astype(np.int64), cols[order].astype(np.int64)
    assert np.bincount(np.abs(rows - cols))[[0, 1, r]].min() >= _MIN_BAND
    np.testing.assert_array_equal(
        pattern_gram(XT, rows, cols, chunk_entries=7 * m), np.einsum("ij,ij->i", XT[rows], XT[cols])
    )
    assert pattern_gram(XT, rows[:0], cols[:0]).shape == (0,)


def test_auto_uses_the_sparse_solver_above_the_dense_limit(monkeypatch):
    graph = grid_graph(9, 9)
    X = _data(graph, 300, seed=4)
    monkeypatch.setattr(GaussianMaxLikelihood, "AUTO_NEWTON_MAX_UNKNOWNS", 50)
    monkeypatch.setattr(GaussianMaxLikelihood, "DENSE_MAX_FEATURES", 50)
    est = GaussianMaxLikelihood(graph).fit(X)
    assert est.solver_ == "sparse"
    with pytest.raises(ValueError, match="solver='sparse'"):
        GaussianMaxLikelihood(graph, solver="regression").fit(X)


def test_auto_takes_the_regression_solver_where_the_embedding_is_nearly_dense(monkeypatch):
    # The rule of AUTO_REGRESSION_*, moved down to 40 variables: a random pattern's chordal embedding
    # stores most of the lower triangle, a lattice's does not. The regression fit is certified
    # (its dense working covariance gives the bound) and lands where the sparse solver does.
    import skmrf._kernels.gaussian.max_likelihood as kernel

    monkeypatch.setattr(kernel, "AUTO_REGRESSION_MIN_FEATURES", 40)
    monkeypatch.setattr(GaussianMaxLikelihood, "AUTO_NEWTON_MAX_UNKNOWNS", 50)
    rng = np.random.default_rng(3)
    upper = np.triu(rng.random((40, 40)) < 0.1, 1)
    graph = nx.from_numpy_array((upper | upper.T).astype(int))
    X = rng.standard_normal((400, 40))
    auto = GaussianMaxLikelihood(graph).fit(X)
    sparse = GaussianMaxLikelihood(graph, solver="sparse", decrement_tol=None).fit(X)
    assert auto.solver_ == "regression" and auto.duality_gap_ <= 1e-8
    # Both at tol = 1e-10 in standardised units (well conditioned: independent columns): 1e-8 apart.
    dense = [m.toarray() if sp.issparse(m) else m for m in (auto.precision_, sparse.precision_)]
    np.testing.assert_allclose(*dense, atol=1e-8)
    # max_time stops the regression solver after a sweep, certified and warned.
    with pytest.warns(ConvergenceWarning, match="certified duality gap"):
        stopped = GaussianMaxLikelihood(graph, max_time=1e-9).fit(X)
    assert stopped.solver_ == "regression" and stopped.n_iter_ == 1 and np.isfinite(stopped.duality_gap_)
    # A lattice keeps the sparse solver, however dense its embedding (at 7 x 7 most of the triangle),
    # and so does a p above the estimator's dense limit.
    lattice = grid_graph(7, 7)
    assert GaussianMaxLikelihood(lattice).fit(_data(lattice, 300, seed=4)).solver_ == "sparse"
    monkeypatch.setattr(GaussianMaxLikelihood, "DENSE_MAX_FEATURES", 39)
    assert GaussianMaxLikelihood(graph).fit(X).solver_ == "sparse"


@pytest.mark.slow
def test_sparse_solver_forms_no_dense_matrix():
    # 20,164 variables, above the dense solvers' limit: one dense p x p matrix would take 3.3 GB.
    # Independent columns and n = 300 > the grid's treewidth + 1, so the ML exists and is well conditioned.
    graph = grid_graph(142, 142)
    X = np.random.default_rng(5).standard_normal((300, 142 * 142))
    tracemalloc.start()
    est = GaussianMaxLikelihood(graph).fit(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    p = X.shape[1]
    assert est.solver_ == "sparse" and sp.issparse(est.precision_) and est.covariance_ is None
    assert peak < 8 * p * p / 10, f"peak {peak / 1e9:.2f} GB"  # a tenth of one dense matrix (data: 0.1 GB)


def test_too_much_fill_is_refused(monkeypatch):
    graph = nx.gnp_random_graph(60, 0.1, seed=0)
    X = _data(graph, 200)
    monkeypatch.setattr(GaussianMaxLikelihood, "SPARSE_MAX_STORED", 100)
    with pytest.raises(ValueError, match="fill-in entries .* no narrow elimination order"):
        GaussianMaxLikelihood(graph, solver="sparse").fit(X)


def test_sparse_path_names_collinear_neighbours():
    graph = nx.path_graph(6)
    X = _data(graph, 50)
    X[:, 3] = 2.0 * X[:, 2] + 1.0
    for solver in ["sparse", "newton"]:
        with pytest.raises(ValueError, match=r"neighbouring columns \(2, 3\) is singular"):
            GaussianMaxLikelihood(graph, solver=solver).fit(X)


@pytest.mark.parametrize("solver", ["sparse", "newton"])
def test_both_paths_refuse_too_few_samples(solver):
    graph = grid_graph(4, 4)
    X = _data(graph, 4)
    with pytest.raises(ValueError, match="needs at least 6 samples"):
        GaussianMaxLikelihood(graph, solver=solver).fit(X)


def test_sparse_solver_with_the_fewest_rows_reaches_the_optimum():
    # A 12-cycle from 4 rows (the fewest its neighbourhoods allow): S has rank 3, yet its entries on
    # the cycle have a positive definite completion (the cycle's chordal cover has cliques of 3),
    # so the ML exists and must satisfy the optimality conditions.
    graph = nx.cycle_graph(12)
    X = _data(graph, 4, seed=7)
    est = GaussianMaxLikelihood(graph, solver="sparse", sparse=False, decrement_tol=None).fit(X)
    assert est.solver_ == "sparse" and est.is_positive_definite_
    S = _sample_covariance(X)
    on = (nx.to_numpy_array(graph) != 0) | np.eye(12, dtype=bool)
    d = np.sqrt(np.diag(S))
    # As in test_sparse_solution_satisfies_the_optimality_conditions: the residual at tol = 1e-10.
    assert np.max(np.abs((np.linalg.inv(est.precision_) - S) / np.outer(d, d))[on]) <= 1e-8


# -- the positive definite LAP ----------------------------------------------------


def test_newton_steps_give_a_positive_definite_lap_that_approaches_ml():
    Q = laplacian_precision(6, 6)
    X = sample(Q, 60, seed=8)
    X_test = sample(Q, 2000, seed=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        raw = GaussianLAP(Q).fit(X)
    assert not raw.is_positive_definite_  # the case the option is for
    ml = GaussianMaxLikelihood(Q, decrement_tol=None).fit(X)
    scores = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotPositiveDefiniteWarning)  # the refined estimate is PD: no warning
        for k in [1, 5, 200]:
            est = GaussianLAP(Q, newton_steps=k).fit(X)
            assert est.is_positive_definite_ and est.n_iter_ <= k
            # a lattice pattern: the stationary start stands in for the repair of the non-PD LAP estimate
            assert est.newton_start_ == "stationary" and est.repair_factor_ == 1.0
            np.linalg.cholesky(est.precision_)
            scores.append(est.score(X))
    # Newton steps with a line search decrease the training objective monotonically ...
    assert scores[0] < scores[1] < scores[2]
    # ... and, run to convergence, reach the ML estimate to statistical precision: they stop when
    # lambda^2 / 2 <= eps = 1e-3 q / n, and then f - f* <= -lambda - log(1 - lambda) = eps (1 + O(sqrt(eps)))
    # (self-concordance) with f = -2 x the mean training log-likelihood + const, so the scores differ by
    # at most eps / 2 (1 + O(sqrt(eps))); eps bounds that with room for the CG estimate of lambda (low by
    # a factor 1 + 1e-4 kappa at most, see newton_cg_covsel).
    eps = 1e-3 * (36 + 60) / 60
    assert 0 <= ml.score(X) - scores[2] <= eps
    assert np.isfinite(est.score(X_test))


def _start_problem(Q, n, seed):
    """(pattern, s, x, S): the pattern of Q, the standardised sample covariance, and raw LAP on it."""
    X = sample(Q, n, seed=seed)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    S = Z.T @ Z / n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        lap = GaussianLAP(Q, sparse=True).fit(X).standardized_precision_.toarray()
    lower = sp.tril(sp.coo_array(Q))
    rows, cols = lower.row.astype(np.int64), lower.col.astype(np.int64)
    return ChordalPattern(rows, cols, Q.shape[0]), S[rows, cols], lap[rows, cols], S


@pytest.mark.parametrize(
    "case, blend_wins",
    [
        # L L^T: LAP's diagonal is far too large for a density, the segment from diag(1/S_ii) wins.
        ((laplacian_precision(8, 8), 200, 1), True),
        # a diagonally dominant grid precision: LAP is nearly positive definite, shrinking wins.
        ((sp.csr_array(sp.eye(64) * 2.2 - 0.5 * nx.to_scipy_sparse_array(grid_graph(8, 8))), 70, 2), False),
    ],
)
def test_likelihood_start_is_the_best_point_of_both_segments(case, blend_wins):
    pattern, s, x, S = _start_problem(*case)
    p = S.shape[0]

    def dense(v):
        M = np.zeros((p, p))
        M[pattern.rows, pattern.cols] = v
        M[pattern.cols, pattern.rows] = v
        return M

    def f(v):  # independent of chompack: dense log-determinant and trace
        sign, logdet = np.linalg.slogdet(dense(v))
        return np.inf if sign <= 0 or np.linalg.eigvalsh(dense(v))[0] <= 0 else -logdet + np.sum(S * dense(v))

    assert f(x) == np.inf  # LAP is not positive definite: the case the start is for
    x0, t = likelihood_start(pattern, s, x)
    assert np.linalg.eigvalsh(dense(x0))[0] > 0 and 0 < t < 1
    own = np.where(pattern.diagonal, x, 0.0)
    ml_diagonal = np.where(pattern.diagonal, 1.0 / s, 0.0)
    grid = np.linspace(0, 1, 401)
    best = min(f(a + g * (x - a)) for a in (own, ml_diagonal) for g in grid)
    # t is bisected to 2**-20, far finer than the grid: the start is at least as likely as any grid point
    # (up to rounding of f, about 1e-12 relative).
    assert f(x0) <= best + 1e-9 * abs(best)
    anchor = ml_diagonal if blend_wins else own
    # The same convex combination of the same vectors (a few ulp; was the default rtol=1e-7).
    np.testing.assert_allclose(x0, anchor + t * (x - anchor), rtol=1e-12)


def test_newton_steps_start_at_lap_when_it_is_positive_definite():
    Q = laplacian_precision(4, 4)
    X = sample(Q, 5000, seed=10)
    raw = GaussianLAP(Q).fit(X)
    assert raw.is_positive_definite_
    est = GaussianLAP(Q, newton_steps=1).fit(X)
    assert est.repair_factor_ == 1.0 and est.n_iter_ == 1
    assert est.score(X) >= raw.score(X)


# -- the type of precision_ -------------------------------------------------------


@pytest.mark.parametrize("cls", [GaussianLAP, GaussianMaxLikelihood])
def test_precision_is_dense_for_small_p_and_sparse_on_request(cls):
    Q = laplacian_precision(3, 4)
    X = sample(Q, 500, seed=11)
    auto = cls(Q).fit(X)
    assert isinstance(auto.precision_, np.ndarray) and auto.get_precision() is auto.precision_
    forced = cls(Q, sparse=True).fit(X)
    assert sp.issparse(forced.precision_) and forced.get_precision() is forced.precision_
    np.testing.assert_array_equal(forced.precision_.toarray(), auto.precision_)
    assert isinstance(auto.covariance_, np.ndarray)
    # An inverse times its matrix: 12 terms x eps x condition (< 100): ~1e-13.
    np.testing.assert_allclose(auto.covariance_ @ auto.precision_, np.eye(12), atol=1e-9)


def test_precision_is_sparse_above_the_threshold(monkeypatch):
    from skmrf.estimators.gaussian import _base

    monkeypatch.setattr(_base, "DENSE_PRECISION_MAX_FEATURES", 10)
    Q = laplacian_precision(3, 4)
    X = sample(Q, 500, seed=11)
    assert sp.issparse(GaussianLAP(Q).fit(X).precision_)
    assert isinstance(GaussianLAP(Q, sparse=False).fit(X).precision_, np.ndarray)


def test_chordal_pattern_stores_every_entry_once():
    graph = grid_graph(5, 5)
    A = nx.to_scipy_sparse_array(graph, format="coo")
    low = A.row > A.col
    rows = np.concatenate([np.arange(25), A.row[low]]).astype(np.int64)
    cols = np.concatenate([np.arange(25), A.col[low]]).astype(np.int64)
    pattern = ChordalPattern(rows, cols, 25)
    x = np.arange(1.0, len(rows) + 1)
    np.testing.assert_array_equal(pattern.values(pattern.matrix(x)), x)
    assert pattern.n_fill > 0  # a grid is not chordal


def test_newton_steps_repair_lap_where_no_lattice_start_exists():
    """The same problem with its variables shuffled is no lattice: the non-PD LAP estimate is repaired
    (off-diagonal scale below 1) and the steps, run to convergence, reach the same optimum."""
    Q = laplacian_precision(6, 6)
    X = sample(Q, 60, seed=8)
    order = np.random.default_rng(0).permutation(36)
    Qs = sp.csr_array(sp.csr_array(Q)[order][:, order])
    lattice = GaussianLAP(Q, newton_steps=200).fit(X)
    shuffled = GaussianLAP(Qs, newton_steps=200).fit(X[:, order])
    assert lattice.newton_start_ == "stationary" and shuffled.newton_start_ in ("lap", "diagonal")
    assert 0 < shuffled.repair_factor_ < 1
    # both stop at statistical precision, f - f* <= eps / 2 (1 + O(sqrt eps)) in the score (see above)
    eps = 1e-3 * (36 + 60) / 60
    assert abs(lattice.score(X) - shuffled.score(X[:, order])) <= eps
