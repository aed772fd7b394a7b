"""The default ridge and LAP's reads keep the model's symmetry under relabelling states (#39).

``alpha="auto"`` penalises the centred (ANOVA) components of the energy, not ``theta``
normalised with respect to state 0, and LAP reads each auxiliary problem's centred components.
Checked against an independent enumeration of the ANOVA decomposition, against brute-force
penalised maximum likelihood, by fitting relabelled data (the fit must be the relabelled fit),
and on Ising tori, where the all-ones and all-zeros states must keep the same energy.
"""

import itertools

import numpy as np
import pytest

from skmrf import DecomposedEM, ExactMaxLikelihood, LAPEstimator, PseudoLikelihoodEstimator
from skmrf._anova import Components, component_matrix, theta_from_own_components
from skmrf._parametrisation import CliqueLayout
from skmrf._penalty import CentredRidge
from skmrf.datasets import make_ising_torus, sample_random_mrf
from skmrf.model import DiscreteMRF

from . import brute_force as bf

TRIANGLE = [(0, 1, 2), (2, 3), (3, 4), (1, 4)]
TRIANGLE_STATES = [3, 2, 4, 3, 2]


def _anova_penalty_matrix(model):
    """``B^T W B`` by enumeration: the energy of every state for each unit ``theta``, split into
    its ANOVA components by inclusion-exclusion of means (nothing of the package's coding)."""
    shape = tuple(int(k) for k in model.n_states)
    F = bf.features(model, bf.states(shape))  # (n_states_total, n_params), C order
    n = len(shape)
    rows = []
    for r in range(1, n + 1):
        for S in itertools.combinations(range(n), r):
            weight = np.prod([shape[v] / (shape[v] - 1) for v in S])
            comp = np.zeros((int(np.prod([shape[v] for v in S])), F.shape[1]))
            for u in range(r + 1):
                for U in itertools.combinations(S, u):
                    others = tuple(v for v in range(n) if v not in U)
                    mean = F.reshape(*shape, -1).mean(axis=others, keepdims=True)
                    full = np.broadcast_to(mean, (*shape, F.shape[1]))
                    idx = tuple(slice(None) if v in S else 0 for v in range(n))
                    comp += (-1) ** (r - u) * full[idx].reshape(-1, F.shape[1])
            rows.append(np.sqrt(weight) * comp)
    B = np.concatenate(rows)
    return B.T @ B


def test_penalty_is_the_anova_norm_of_the_energy():
    model = DiscreteMRF(TRIANGLE, TRIANGLE_STATES)
    ridge = CentredRidge(model.layout, 0.7)
    # Both are sums of a few hundred products of O(1) terms: agreement to rounding.
    np.testing.assert_allclose(ridge.matrix().toarray(), 0.7 * _anova_penalty_matrix(model), atol=1e-12)
    theta = np.random.default_rng(0).normal(size=model.n_params)
    P = ridge.matrix().toarray()
    np.testing.assert_allclose(ridge.gradient(theta), P @ theta, atol=1e-12)
    np.testing.assert_allclose(ridge.value(theta), 0.5 * theta @ P @ theta, rtol=1e-12)
    assert np.linalg.eigvalsh(P).min() > 0  # a ridge: positive definite on theta


@pytest.mark.parametrize("tables", [False, True])
def test_sparse_map_and_table_operations_give_the_same_penalty(monkeypatch, tables):
    # Small models apply the components' map as a sparse matrix (a 12 x 12 grid's gradient 330 -> 30
    # us), many-state ones by table operations (a 21-state pair's map holds 441 x 400 entries). Both
    # sum the same few products per entry in another order: agreement to rounding.
    from skmrf import _penalty

    model = DiscreteMRF(TRIANGLE, TRIANGLE_STATES)
    theta = np.random.default_rng(3).normal(size=model.layout.n_table if tables else model.n_params)
    sparse = CentredRidge(model.layout, 0.7, tables=tables)
    assert sparse._sparse_map is not None
    monkeypatch.setattr(_penalty, "SPARSE_MAP_MAX_ENTRIES", 0)
    monkeypatch.setattr(_penalty, "SPARSE_MAP_ENTRIES_PER_PARAM", 0)
    by_tables = CentredRidge(model.layout, 0.7, tables=tables)
    assert by_tables._sparse_map is None
    value, gradient = by_tables.value_and_gradient(theta)
    np.testing.assert_allclose(sparse.gradient(theta), gradient, rtol=1e-13, atol=1e-15)
    assert sparse.value(theta) == pytest.approx(value, rel=1e-13)
    monkeypatch.undo()
    potts = DiscreteMRF(list(itertools.combinations(range(8), 2)), [21] * 8)
    assert CentredRidge(potts.layout, 1.0, tables=tables)._sparse_map is None


def test_binary_penalty_is_the_ridge_in_centred_coordinates():
    edges = [(0, 1), (1, 2), (0, 2), (2, 3)]
    layout = CliqueLayout([(i,) for i in range(4)] + edges, [2] * 4)
    theta = np.random.default_rng(1).normal(size=layout.n_params)
    b = theta[:4].copy()
    for e, (i, j) in enumerate(edges):
        b[[i, j]] += theta[4 + e] / 2
    expected = 0.5 * (b @ b + theta[4:] @ theta[4:])
    assert CentredRidge(layout, 1.0).value(theta) == pytest.approx(expected, rel=1e-14)


def _relabelled_theta(model, theta, variable, perm):
    """``theta`` of the energy ``E(x)`` with ``x_variable`` relabelled by ``perm``, by least squares
    on the enumerated energies (exact: the parametrisation represents every such energy)."""
    xs = bf.states(model.n_states)
    moved = xs.copy()
    moved[:, variable] = np.asarray(perm)[xs[:, variable]]
    F = bf.features(model, xs)
    target = bf.features(model, moved) @ theta
    design = np.c_[F, np.ones(len(xs))]
    return np.linalg.lstsq(design, target, rcond=None)[0][:-1]


def test_penalty_is_unchanged_by_relabelling_any_variables_states():
    model = DiscreteMRF(TRIANGLE, TRIANGLE_STATES)
    ridge = CentredRidge(model.layout, 1.0)
    theta = np.random.default_rng(2).normal(size=model.n_params)
    plain = []
    for variable, perm in [(0, [2, 0, 1]), (2, [3, 1, 0, 2]), (1, [1, 0])]:
        moved = _relabelled_theta(model, theta, variable, perm)
        # lstsq of an exactly representable energy: rounding of a 72 x 50 solve.
        assert ridge.value(moved) == pytest.approx(ridge.value(theta), rel=1e-10)
        plain.append(abs(moved @ moved - theta @ theta))
    assert max(plain) > 0.1  # the ridge on theta is not symmetric: the check can fail


def test_theta_is_solved_back_from_the_own_components():
    layout = CliqueLayout([(0,), (1,), (2,), (3,), (0, 1), (1, 2), (0, 2), (0, 1, 2), (2, 3)], [3, 2, 4, 3])
    theta = np.random.default_rng(3).normal(size=layout.n_params)
    comp = Components(layout)
    E = comp(theta)
    own = np.zeros_like(theta)
    for cols, sub, shape, R, rows, _, is_own in comp.parts:
        if is_own:
            own[cols] = E[sub][rows] @ np.linalg.pinv(component_matrix(shape, R)).T
    np.testing.assert_allclose(theta_from_own_components(layout, own), theta, atol=1e-12)


def test_exact_ml_minimises_the_brute_force_centred_objective():
    X, _ = sample_random_mrf(TRIANGLE, 300, n_states=TRIANGLE_STATES, n_variables=5, random_state=0)
    est = ExactMaxLikelihood(TRIANGLE, tol=1e-10).fit(X)
    model = DiscreteMRF(TRIANGLE, est.n_states_)
    P = _anova_penalty_matrix(model) / len(X)  # alpha="auto" is 1 / n_samples
    xs = bf.states(model.n_states)
    F, s = bf.features(model, xs), bf.features(model, X).mean(axis=0)
    e = F @ est.theta_
    p = np.exp(e - e.max())
    p /= p.sum()
    gradient = F.T @ p - s + P @ est.theta_
    # The fit stops at max |gradient| <= tol = 1e-10; enumeration adds rounding only.
    assert np.abs(gradient).max() < 1e-8


def test_pseudo_likelihood_is_stationary_with_the_brute_force_penalty():
    X, _ = sample_random_mrf(TRIANGLE, 300, n_states=TRIANGLE_STATES, n_variables=5, random_state=1)
    est = PseudoLikelihoodEstimator(TRIANGLE, tol=1e-10, score_method="pseudo").fit(X)
    model = DiscreteMRF(TRIANGLE, est.n_states_, theta=est.theta_)
    P = _anova_penalty_matrix(model) / len(X)
    h = 1e-6

    def mean_pll(theta):
        model.theta = theta
        return model.log_pseudo_likelihood(X).mean()

    theta = est.theta_
    grad = np.array([(mean_pll(theta + h * u) - mean_pll(theta - h * u)) / (2 * h) for u in np.eye(len(theta))])
    # Central differences of an O(1) smooth function: error ~ h^2 + eps / h ~ 1e-10; the fit's tol 1e-10.
    assert np.abs(-grad + P @ theta).max() < 1e-7


ESTIMATORS = {
    "exact": lambda g: ExactMaxLikelihood(g, tol=1e-11),
    "pl-records": lambda g: PseudoLikelihoodEstimator(g, tol=1e-11, score_method="pseudo"),
    "lap-pairwise": lambda g: LAPEstimator(g, tol=1e-12),
    "lap-exact": lambda g: LAPEstimator(g, strategy="exact", tol=1e-12),
    "em": lambda g: DecomposedEM(g, tol=1e-9),
}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_fit_of_relabelled_data_is_the_relabelled_fit(name):
    # A 3 x 3 grid with a diagonal: loopy, so LAP's problems disagree and its read matters.
    graph = [(0, 1), (1, 2), (3, 4), (4, 5), (6, 7), (7, 8), (0, 3), (3, 6), (1, 4), (4, 7), (2, 5), (5, 8), (0, 4)]
    X, _ = sample_random_mrf(graph, 400, scale=1.0, n_variables=9, random_state=4)
    if name == "em":
        X = np.where(np.random.default_rng(5).random(X.shape) < 0.1, -1, X).astype(float)
        X[X < 0] = np.nan
    a = ESTIMATORS[name](graph).fit(X)
    b = ESTIMATORS[name](graph).fit(1 - X)  # NaN stays missing
    xs = bf.states([2] * 9)
    ea = a.model_.layout.energy(xs, a.theta_)
    eb = b.model_.layout.energy(1 - xs, b.theta_)
    # Both fits stop at gradient tolerances of 1e-9 to 1e-12 on objectives of curvature > 1e-3
    # (alpha = 1/400 bounds it below): energies agree to ~1e-6 up to a constant.
    np.testing.assert_allclose(ea - ea.mean(), eb - eb.mean(), atol=1e-5)


def test_a_ridge_on_theta_breaks_the_relabelling():
    # The check above can fail: with a numeric alpha (the ridge on theta) it does.
    graph = [(0, 1), (1, 2), (2, 0)]
    X, _ = sample_random_mrf(graph, 200, n_variables=3, random_state=6)
    a = PseudoLikelihoodEstimator(graph, alpha=0.05).fit(X)
    b = PseudoLikelihoodEstimator(graph, alpha=0.05).fit(1 - X)
    xs = bf.states([2] * 3)
    ea, eb = a.model_.layout.energy(xs, a.theta_), b.model_.layout.energy(1 - xs, b.theta_)
    assert np.abs((ea - ea.mean()) - (eb - eb.mean())).max() > 1e-3


@pytest.mark.parametrize("L, K", [(4, 0.6), (4, 1.0), (5, 0.6), (5, 1.0)])
@pytest.mark.parametrize("estimator", [PseudoLikelihoodEstimator, LAPEstimator])
def test_default_fit_keeps_the_ising_symmetry_on_small_tori(L, K, estimator):
    # The zero-field Ising torus gives all-ones and all-zeros the same energy. Over 20 exact
    # samples of 100 rows, the default fit's E(1) - E(0) must average 0 within 4 standard errors
    # of that mean (a normal mean passes with probability 1 - 6e-5); the ridge on theta
    # (alpha = 1 / n, the old default) moves it 9 to 18 nats, 20 to 40 such errors, for PL.
    truth = make_ising_torus(L, K)
    n, repeats = 100, 20
    X = truth.sample(n * repeats, random_state=0, method="exact")
    ones, zeros = np.ones((1, L * L), dtype=int), np.zeros((1, L * L), dtype=int)

    def gaps(alpha):
        out = []
        for r in range(repeats):
            est = estimator(truth.graph, alpha=alpha, score_method="pseudo").fit(X[r * n : (r + 1) * n])
            lay, theta = est.model_.layout, est.theta_
            out.append(lay.energy(ones, theta)[0] - lay.energy(zeros, theta)[0])
        return np.array(out)

    d = gaps("auto")
    assert abs(d.mean()) < 4 * d.std(ddof=1) / np.sqrt(repeats)
    if estimator is PseudoLikelihoodEstimator:
        old = gaps(1.0 / n)
        assert abs(old.mean()) > 4 * old.std(ddof=1) / np.sqrt(repeats)
