"""DecomposedEM against brute-force enumeration of the incomplete-data likelihood (tests/brute_force.py)."""

import warnings

import networkx as nx
import numpy as np
import pytest
from scipy.special import logsumexp

from skmrf import DecomposedEM, ExactMaxLikelihood, grid_graph
from skmrf._data.decompose import missing_components
from skmrf._kernels.incomplete import batch as _incomplete_batch
from skmrf._kernels.incomplete import cost as _incomplete_cost
from skmrf._kernels.incomplete import em as em_kernel
from skmrf._kernels.incomplete import term as _incomplete
from skmrf._kernels.incomplete.term import IncompleteDataTerm, ModelTerm
from skmrf._solvers.lbfgs import GRADIENT_FLOOR
from skmrf.datasets import make_random_mrf, sample_random_mrf
from skmrf.estimators._existence import NoFiniteEstimateWarning
from skmrf.exceptions import TreewidthError
from skmrf.inference._evidence import BatchedJunctionTree
from skmrf.model import DiscreteMRF

from . import brute_force as bf
from .brute_force import incomplete_log_likelihood


def hide(X, rng, columns, rate=0.4):
    """Float copy of X with entries of ``columns`` hidden at ``rate`` (NaN)."""
    Xf = X.astype(float)
    mask = (rng.random(X.shape) < rate) & np.isin(np.arange(X.shape[1]), columns)[None, :]
    Xf[mask] = np.nan
    return Xf


def as_states(Xf):
    return np.where(np.isnan(Xf), -1, Xf).astype(np.int64)


def cases():
    """(name, graph, n_states, X with NaN): binary, 3-state, triple clique, all-missing rows."""
    rng = np.random.default_rng(0)
    g = nx.cycle_graph(6)
    g.add_edge(1, 4)
    X, _ = sample_random_mrf(g, 150, n_states=2, random_state=1)
    yield "binary-cycle", g, 2, hide(X, rng, [0, 2, 3])
    ns = np.array([2, 3, 2, 3, 2, 2])
    X, _ = sample_random_mrf(g, 150, n_states=ns, random_state=2)
    yield "three-state", g, ns, hide(X, rng, [1, 3, 4])
    tri = [(0, 1, 2), (2, 3), (3, 4, 5), (0, 5)]
    X, _ = sample_random_mrf(tri, 150, n_states=2, n_variables=6, random_state=3)
    Xf = hide(X, rng, [0, 2, 4], rate=0.5)
    Xf[:5] = np.nan  # rows with everything missing
    Xf[5:8, [1, 3, 5]] = np.nan  # and rows missing variables that are otherwise observed
    yield "triple-clique", tri, 2, Xf
    g4 = grid_graph(3, 3)
    X, _ = sample_random_mrf(g4, 200, n_states=2, random_state=4)
    yield "grid-few-missing", g4, 2, hide(X, rng, [4], rate=0.5)


CASES = list(cases())
IDS = [c[0] for c in CASES]


def distance_bound(est, Xf, grad_max, h=1e-5):
    """How far a fit whose gradient has no component above ``grad_max`` can be from the optimum.

    ``|theta - theta*|_inf <= sqrt(d) grad_max / lambda_min``, with ``lambda_min`` the smallest curvature of
    the penalised mean log-likelihood at the fit (central differences of the brute-force gradient; the
    incomplete-data likelihood is not concave, so the ridge alone does not bound it). A tolerance from the
    solver's stopping rule and the problem's curvature, not from one machine's result.
    """
    X = as_states(Xf)
    X = X[~(X < 0).all(axis=1)]
    model = est.model_
    theta0 = model.theta.copy()

    def grad(theta):
        model.theta = theta
        return incomplete_log_likelihood(model, X)[1] / len(X) - est.alpha_ * theta

    d = len(theta0)
    H = np.column_stack([(grad(theta0 + h * e) - grad(theta0 - h * e)) / (2 * h) for e in np.eye(d)])
    model.theta = theta0
    return np.sqrt(d) * grad_max / np.linalg.eigvalsh(-(H + H.T) / 2).min()


#: The plans of the data term: the undecomposed baseline, the paper's sub-networks, the choice of
#: the cost model, and the row-wise split forced, its components either all on their sub-network's
#: tree ("hosted": a batch of their own never pays) or on trees of their own wherever smaller ("own").
#: Each batch is calibrated on a tree or enumerated (FlatGroup) by the cost model; the "-trees" and
#: "-flat" variants force one kernel for every batch, "-chunks" cuts the enumerated batch into chunks
#: of a few patterns. Values: (decompose, COST_MODEL overrides, FLAT_COST_MODEL overrides, chunk floats).
NO_FLAT = {"call": 1e3}  # and no memory allowed for it (below)
ALL_FLAT = {k: 0.0 for k in _incomplete_cost.FLAT_COST_MODEL}
PLANS = {
    "none": (False, {}, {}, None),
    "none-flat": (False, {}, ALL_FLAT, None),
    "subnetworks": (True, {}, {}, None),
    "subnetworks-trees": (True, {}, NO_FLAT, None),
    "subnetworks-flat-chunks": (True, {}, ALL_FLAT, 40),
    "auto": ("auto", {}, {}, None),
    "components": ("components", {}, {}, None),
    "components-hosted": ("components", {"call": 1e3, "node": 1e3}, NO_FLAT, None),
    "components-hosted-flat": ("components", {"call": 1e3, "node": 1e3}, ALL_FLAT, None),
    "components-own": ("components", {k: 0.0 for k in _incomplete.COST_MODEL if k != "entry"}, NO_FLAT, None),
}


def _plan_case(plan, graph, n_states, Xf, monkeypatch, seed):
    """``(decompose, model with random theta, the rows with something observed, rng)`` of one case,
    with the cost model set so that ``decompose`` takes ``plan``."""
    decompose, costs, flat_costs, chunk = PLANS[plan]
    for k, v in costs.items():
        monkeypatch.setitem(_incomplete.COST_MODEL, k, v)
    for k, v in flat_costs.items():
        monkeypatch.setitem(_incomplete_cost.FLAT_COST_MODEL, k, v)
    if flat_costs is ALL_FLAT:  # enumerate whatever the memory
        monkeypatch.setattr(_incomplete_batch, "FLAT_MAX_MEMORY_RATIO", np.inf)
    if flat_costs is NO_FLAT:  # never enumerate, even patterns with nothing to sum
        monkeypatch.setattr(_incomplete_batch, "FLAT_MAX_MEMORY_RATIO", -1.0)
    if chunk is not None:
        monkeypatch.setattr(_incomplete_batch, "CHUNK_FLOATS", chunk)
    rng = np.random.default_rng(seed)
    model = DiscreteMRF(graph, n_states if np.ndim(n_states) else np.full(Xf.shape[1], n_states))
    model.theta = rng.normal(size=model.n_params)
    X = as_states(Xf)
    return decompose, model, X[~(X < 0).all(axis=1)], rng


def _check_kernels(plan, term):
    """The batches use the kernel the plan forces (trees, or one enumerated batch, in chunks if asked)."""
    flat = [isinstance(g, _incomplete_batch.FlatGroup) for g in term.groups]
    if PLANS[plan][2] is NO_FLAT:
        assert not any(flat)
    if PLANS[plan][2] is ALL_FLAT:
        assert flat == [True]
        if PLANS[plan][3] is not None:
            assert len(term.groups[0].bounds) > 1


@pytest.mark.parametrize("name, graph, n_states, Xf", CASES, ids=IDS)
@pytest.mark.parametrize("plan", list(PLANS))
def test_data_term_and_gradient_equal_enumeration(name, graph, n_states, Xf, plan, monkeypatch):
    decompose, model, X, rng = _plan_case(plan, graph, n_states, Xf, monkeypatch, seed=5)
    values, grad = incomplete_log_likelihood(model, X)
    lay = model.layout
    full = lay.full_tables(model.theta)
    term = IncompleteDataTerm(lay, X, decompose=decompose)
    _check_kernels(plan, term)
    if decompose == "components":
        assert term.plan == "components" and term.split.all()
        hosted = [u.active is not None for u in term._units]
        if plan.startswith("components-hosted"):
            assert all(hosted)
        if plan == "components-own" and name == "triple-clique":
            assert not all(hosted)  # components on trees of their own (others stay hosted)
    value, table_grad = term.evaluate(full)
    cal = model.calibrate()
    mu = cal.clique_marginals()[lay.theta_pos]
    # Sums of ~150 log-probabilities of size ~5: agreement to 1e-10 relative is float64 rounding.
    np.testing.assert_allclose(value - len(X) * cal.log_z, values.sum(), rtol=1e-10)
    np.testing.assert_allclose(table_grad[lay.theta_pos] - len(X) * mu, grad, atol=1e-9)
    rows = IncompleteDataTerm(lay, X, decompose=decompose, keep_rows=True)
    assert rows.plan in ("none", "subnetworks")  # per-row log-evidence needs one pattern per network
    np.testing.assert_allclose(rows.row_log_evidence(full) - cal.log_z, values, atol=1e-10)
    # The model term through the node tables: the same calibration, rounding apart (values of size ~10).
    log_z, marginals = ModelTerm(lay, model.get_junction_tree())(full)
    assert log_z == pytest.approx(cal.log_z, abs=1e-12)
    np.testing.assert_allclose(marginals, cal.clique_marginals(), atol=1e-13)


def per_row_gradients(model, X):
    """Each row's gradient of ``log p(observed part)`` in theta, by enumeration (as brute_force's sum)."""
    xs = bf.states(model.n_states)
    e, F = bf.energies(model, xs), bf.features(model, xs)
    mu = np.exp(e - logsumexp(e)) @ F
    out = np.empty((len(X), model.n_params))
    for r, row in enumerate(X):
        ok = np.all((row < 0) | (xs == row), axis=1)
        out[r] = np.exp(e[ok] - logsumexp(e[ok])) @ F[ok] - mu
    return out


@pytest.mark.parametrize("name, graph, n_states, Xf", CASES, ids=IDS)
@pytest.mark.parametrize("plan", list(PLANS))
def test_weighted_data_term_equals_repeated_rows_and_enumeration(name, graph, n_states, Xf, plan, monkeypatch):
    decompose, model, X, rng = _plan_case(plan, graph, n_states, Xf, monkeypatch, seed=6)
    full = model.layout.full_tables(model.theta)
    weight = rng.integers(1, 5, len(X)).astype(np.float64)
    weighted = IncompleteDataTerm(model.layout, X, decompose=decompose, weight=weight)
    repeated = IncompleteDataTerm(model.layout, np.repeat(X, weight.astype(int), axis=0), decompose=decompose)
    assert weighted.plan == repeated.plan
    # Integer weights: every count is a sum of small integers, exact in float64, and the patterns
    # and their order are those of the repeated rows, so the sums are the same floats.
    value, grad = weighted.evaluate(full)
    want_value, want_grad = repeated.evaluate(full)
    assert value == want_value
    np.testing.assert_array_equal(grad, want_grad)
    # Fractional weights against enumeration: sum_r w_r log Z(d_r), sums of ~150 terms of size ~5
    # (1e-10 relative is float64 rounding, as for the unweighted data term).
    fractional = rng.random(len(X)) + 0.1
    values = incomplete_log_likelihood(model, X)[0]
    row_grads = per_row_gradients(model, X)
    cal = model.calibrate()
    term = IncompleteDataTerm(model.layout, X, decompose=decompose, weight=fractional)
    value, grad = term.evaluate(full)
    lay = model.layout
    np.testing.assert_allclose(value - fractional.sum() * cal.log_z, fractional @ values, rtol=1e-10)
    mu = cal.clique_marginals()[lay.theta_pos]
    np.testing.assert_allclose(grad[lay.theta_pos] - fractional.sum() * mu, fractional @ row_grads, atol=1e-9)


@pytest.mark.parametrize("plan", [False, True, "auto", "components"])
def test_weighted_fit_equals_repeated_rows_for_every_plan(plan, monkeypatch):
    # The fit with integer sample weights is the fit on the rows repeated, bit for bit, whatever
    # the plan (the row-wise split forced at fit level as in check_plans_agree).
    name, graph, n_states, Xf = CASES[2]
    weight = np.random.default_rng(7).integers(0, 4, len(Xf))
    kw = dict(method="gradient", alpha=0.01, max_iter=15, tol=1e-12)
    if plan == "components":
        force_components(monkeypatch)
        plan = "auto"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # not converged, on purpose
        a = DecomposedEM(graph, decompose=plan, **kw).fit(Xf, sample_weight=weight)
        b = DecomposedEM(graph, decompose=plan, **kw).fit(np.repeat(Xf, weight, axis=0))
    assert a.decompose_ == b.decompose_
    np.testing.assert_array_equal(a.theta_, b.theta_)
    np.testing.assert_array_equal(a.log_likelihood_trace_, b.log_likelihood_trace_)


def test_auto_takes_the_cheapest_priced_plan(monkeypatch):
    monkeypatch.setattr(_incomplete, "SPLIT_MIN_COST", 0.0)  # plan the split however cheap the data term
    X, _ = sample_random_mrf(grid_graph(5, 5), 2000, n_states=2, random_state=0)
    Xi = as_states(hide(X, np.random.default_rng(0), [0, 1, 2, 6, 8, 12, 24], rate=0.5))
    lay = DiscreteMRF(grid_graph(5, 5), np.full(25, 2)).layout
    term = IncompleteDataTerm(lay, Xi, decompose="auto")
    assert set(term.predicted_cost) == {"none", "subnetworks", "components"}
    assert term.plan == min(term.predicted_cost, key=term.predicted_cost.get)
    # The built batches are the plan that was priced.
    assert term.cost == pytest.approx(term.predicted_cost[term.plan], rel=1e-9)
    for decompose, plan in ((False, "none"), (True, "subnetworks")):
        forced = IncompleteDataTerm(lay, Xi, decompose=decompose)
        assert forced.plan == plan and set(forced.predicted_cost) == {plan}
    # A sub-network is split only into fewer patterns than it has: never more calibrations.
    split = IncompleteDataTerm(lay, Xi, decompose="components")
    assert split.n_calibrations <= split.n_patterns.sum()


def test_batched_calibration_rescues_underflowing_patterns(monkeypatch):
    # Tables spread over thousands of nats: in probability space some patterns' messages would
    # underflow, and those must be calibrated again in log space (checked to happen) so that
    # every log Z and marginal still equals enumeration.
    rng = np.random.default_rng(0)
    scopes = [(0, 1), (1, 2), (2, 3), (1, 4), (4,)]
    n_states = np.array([2, 3, 2, 2, 3])
    tree = BatchedJunctionTree(n_states, scopes)
    P = 40
    tables = [300.0 * rng.standard_normal((P,) + tuple(n_states[list(sc)])) for sc in scopes]
    evidence = np.where(rng.random((P, 5)) < 0.3, rng.integers(0, 2, (P, 5)), -1)
    calls = []
    log_space = BatchedJunctionTree._log_space
    monkeypatch.setattr(
        BatchedJunctionTree, "_log_space", lambda self, b: calls.append(len(b[0])) or log_space(self, b)
    )
    log_z, marginals = tree.calibrate(tables, evidence)
    assert calls and 0 < calls[0] < P  # some patterns, not all, were redone in log space
    grid = np.indices(n_states).reshape(5, -1).T
    for p in range(P):
        energy = sum(t[p][tuple(grid[:, list(sc)].T)] for t, sc in zip(tables, scopes))
        ok = np.all((evidence[p] < 0) | (grid == evidence[p]), axis=1)
        lz = np.logaddexp.reduce(energy[ok])
        # log Z of size ~1e3: relative rounding of the sums (1e-13 relative).
        assert log_z[p] == pytest.approx(lz, rel=1e-13)
        prob = np.zeros(len(energy))
        prob[ok] = np.exp(energy[ok] - lz)
        for sc, m in zip(scopes, marginals):
            want = np.zeros(tuple(n_states[list(sc)]))
            np.add.at(want, tuple(grid[:, list(sc)].T), prob)
            # Probabilities: exp of energies known to ~1e-13 relative at size 1e3, so 1e-10 absolute.
            np.testing.assert_allclose(m[p], want, atol=1e-10)


def test_missing_components_match_connected_components_row_by_row():
    rng = np.random.default_rng(3)
    cliques = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4, 5), (5, 6), (6,), (7,)]
    missing = rng.random((200, 8)) < 0.45
    row, member = missing_components(missing, cliques)
    assert np.all(np.diff(row) >= 0)
    expected = []
    for r in range(len(missing)):
        g = nx.Graph()
        g.add_nodes_from(np.flatnonzero(missing[r]).tolist())
        g.add_edges_from((u, v) for c in cliques for u in c for v in c if u < v and missing[r, u] and missing[r, v])
        expected += sorted((r, tuple(sorted(comp))) for comp in nx.connected_components(g))
    got = sorted((int(r), tuple(np.flatnonzero(m).tolist())) for r, m in zip(row, member))
    assert got == sorted(expected)


@pytest.mark.parametrize("name, graph, n_states, Xf", CASES, ids=IDS)
@pytest.mark.parametrize("method", ["em", "gradient"])
def test_fit_is_a_stationary_point_of_the_brute_force_likelihood(name, graph, n_states, Xf, method):
    est = DecomposedEM(graph, method=method, n_states=n_states, alpha=0.01, tol=1e-8).fit(Xf)
    X = as_states(Xf)
    values, grad = incomplete_log_likelihood(est.model_, X)
    n = (~(X < 0).all(axis=1)).sum()
    penalised_grad = grad / n - est.alpha * est.theta_
    assert est.converged_
    # The fit stops at a (mean) gradient <= tol = 1e-8; the brute-force gradient adds only the rounding of
    # a sum over 150 rows (~1e-14). (It was < 1e-6, 100 times what the solver guarantees.)
    assert np.abs(penalised_grad).max() < 1e-8 + 1e-12
    # The reported log-likelihood is the brute-force one (all-missing rows contribute 0).
    # 1e-10: the same parameters evaluated two ways (junction tree vs enumeration): rounding only.
    assert est.log_likelihood_ == pytest.approx(values.sum() / n, abs=1e-10)
    np.testing.assert_allclose(est.score_samples(Xf), values, atol=1e-10)


def force_components(monkeypatch):
    """Make DecomposedEM's data term the row-wise split whatever its cost (the plan auto may take)."""

    def term(*args, decompose=None, **kwargs):
        return IncompleteDataTerm(*args, decompose="components", **kwargs)

    monkeypatch.setattr(em_kernel, "IncompleteDataTerm", term)


@pytest.mark.parametrize("name, graph, n_states, Xf", CASES, ids=IDS)
@pytest.mark.parametrize(
    "method, plan",
    [
        ("gradient", True),
        ("gradient", "auto"),
        ("gradient", "components"),
        ("em", "auto"),
        pytest.param("em", True, marks=pytest.mark.slow),
        pytest.param("em", "components", marks=pytest.mark.slow),
    ],
)
def test_decompose_changes_nothing_but_the_cost(name, graph, n_states, Xf, method, plan, monkeypatch):
    check_plans_agree(graph, n_states, Xf, method, (plan,), monkeypatch)


def check_plans_agree(graph, n_states, Xf, method, plans, monkeypatch):
    # Each plan (decompose=True, "auto", or the row-wise split that auto may take, forced) against
    # the undecomposed baseline (decompose=False): the same objective summed in another order.
    # L-BFGS: 15 iterations, unconverged on purpose. EM's M-steps stop at a tolerance that
    # follows the outer gradient, so a 1e-13 difference in the expected counts can move an
    # inner stopping decision mid-run (5e-8 observed after 15 iterations): EM is compared at
    # its fixed point instead, to the 1e-8. At tol = 1e-10 that fixed point is only
    # guaranteed to sqrt(d) tol / lambda_min ~ 3e-8 (curvature ~0.015, d <= 21), so EM runs to
    # tol = 1e-11 (25 to 66 iterations), which guarantees ~4e-9 per fit.
    unconverged = method == "gradient"
    kw = dict(method=method, n_states=n_states, alpha=0.01, max_iter=15 if unconverged else 500)
    kw["tol"] = 1e-12 if unconverged else 1e-11
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # not converged, on purpose
        b = DecomposedEM(graph, decompose=False, **kw).fit(Xf)
        fits = {d: DecomposedEM(graph, decompose=d, **kw).fit(Xf) for d in plans if d != "components"}
        if "components" in plans:
            force_components(monkeypatch)
            fits["components"] = DecomposedEM(graph, **kw).fit(Xf)
    assert b.decompose_ == "none" and b.n_subnetworks_ <= 1
    for d, a in fits.items():
        assert a.decompose_ == {True: "subnetworks", "components": "components"}.get(d, a.decompose_)
    if not unconverged:
        assert distance_bound(b, Xf, kw["tol"]) < 5e-9
    for a in fits.values():
        if unconverged:
            assert a.n_iter_ == b.n_iter_
            # Only the summation order differs (the observed difference is ~1e-13).
            np.testing.assert_allclose(a.log_likelihood_trace_, b.log_likelihood_trace_, atol=1e-10)
        # 1e-8: L-BFGS takes the same 15 steps (rounding apart); each EM run is within distance_bound of
        # the same fixed point (checked to be below 5e-9, so the pair is within the 1e-8).
        np.testing.assert_allclose(a.theta_, b.theta_, atol=1e-8)
        # At the fixed point the unpenalised log-likelihood has gradient alpha * theta: first order in the
        # parameter difference, alpha * |theta|_1 * 1e-8 (~6e-10; was 1e-12, tighter than the solver allows).
        assert a.log_likelihood_ == pytest.approx(b.log_likelihood_, abs=0.01 * np.abs(b.theta_).sum() * 1e-8 + 1e-13)


@pytest.mark.filterwarnings("ignore:DecomposedEM did not converge")
def test_decomposition_compresses_a_grid():
    X, _ = sample_random_mrf(grid_graph(5, 5), 2000, n_states=2, random_state=0)
    rng = np.random.default_rng(0)
    Xf = hide(X, rng, [0, 8, 12, 24], rate=0.5)
    a = DecomposedEM(grid_graph(5, 5), alpha=0.01, max_iter=2, decompose=True).fit(Xf)
    b = DecomposedEM(grid_graph(5, 5), alpha=0.01, max_iter=2, decompose=False).fit(Xf)
    c = DecomposedEM(grid_graph(5, 5), alpha=0.01, max_iter=2).fit(Xf)
    assert a.n_subnetworks_ == 4  # the four hidden variables are not neighbours
    # Each sub-network sees a variable and its <= 4 neighbours: at most 3 * 2^4 patterns.
    assert a.n_distinct_rows_.max() <= 48
    assert b.n_distinct_rows_[0] > 10 * a.n_distinct_rows_.sum()
    assert a.inferences_per_iteration_ == a.n_distinct_rows_.sum() + 1
    # auto: its plan's calibrations, never more than the sub-networks' patterns (a sub-network is
    # split into its rows' components only when they are fewer). Here each component is one missing
    # variable, whose pattern is its observed neighbours: at most 2^4 per variable, not 3 * 2^4.
    assert c.decompose_ in ("none", "subnetworks", "components")
    assert c.inferences_per_iteration_ <= a.inferences_per_iteration_
    if c.decompose_ == "components":
        assert c.inferences_per_iteration_ - 1 <= 4 * 16


def test_em_log_likelihood_never_decreases():
    _, graph, n_states, Xf = CASES[1]
    est = DecomposedEM(graph, n_states=n_states, tol=1e-9).fit(Xf)
    trace = est.log_likelihood_trace_
    assert len(trace) == est.n_iter_ + 1 > 3
    # EM's monotonicity: each M-step starts at the previous parameters and only descends, so the
    # likelihood never decreases; 1e-12 is the rounding of a mean log-likelihood of size ~5.
    assert np.all(np.diff(trace) >= -1e-12)


def test_em_and_gradient_reach_the_same_optimum():
    # Few entries missing and a ridge: the penalised likelihood has one maximum here.
    _, graph, n_states, Xf = CASES[3]
    a = DecomposedEM(graph, method="em", alpha=0.05, tol=1e-9).fit(Xf)
    b = DecomposedEM(graph, method="gradient", alpha=0.05, tol=1e-9).fit(Xf)
    # Both stop at gradient <= 1e-9: each within distance_bound (sqrt(d) 1e-9 / lambda_min, ~8e-8 with
    # curvature ~0.05 and d = 20) of the optimum (was a flat 1e-7).
    bound = 2 * distance_bound(b, Xf, 1e-9)
    np.testing.assert_allclose(a.theta_, b.theta_, rtol=0, atol=bound)
    # The unpenalised log-likelihood has gradient alpha * theta there: first order in the parameter
    # difference, alpha * |theta|_1 * bound (~4e-8; it was 1e-9, below what the solvers guarantee).
    assert a.log_likelihood_ == pytest.approx(b.log_likelihood_, abs=0.05 * np.abs(b.theta_).sum() * bound)


@pytest.mark.parametrize("method", ["em", "gradient"])
def test_complete_data_gives_exact_max_likelihood(method):
    X, _ = sample_random_mrf(grid_graph(3, 3), 300, n_states=3, random_state=0)
    # tol=1e-10: at 1e-8 the stopping rule only guarantees ~6e-6 here (below). EM's M-step and
    # ExactMaxLikelihood reach it with Newton steps; L-BFGS ("gradient") stalls around 1e-8, where exactly
    # depends on the BLAS kernel (4e-9 under SkylakeX, 1.1e-8 under Haswell; converged_ False, and no
    # warning below GRADIENT_FLOOR = 1e-5), so its bound uses the gradient it reached.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = DecomposedEM(grid_graph(3, 3), method=method, alpha=0.01, tol=1e-10).fit(X)
    b = ExactMaxLikelihood(grid_graph(3, 3), alpha=0.01, tol=1e-10).fit(X)
    assert a.n_subnetworks_ == 0
    # Each fit is within sqrt(d) |grad|_inf / lambda_min of the optimum, with the gradient it actually
    # reached and lambda_min the smallest eigenvalue of the (concave, complete-data) Hessian plus alpha
    # (~0.013, d = 66). The score has gradient alpha * theta there: alpha * |theta|_1 times the gap.
    # (Was a flat 1e-6 and 1e-7 at tol=1e-8, which guaranteed neither.)
    from skmrf.estimators._exact import exact_hessian

    emp = b.model_.layout.table_counts(X)[b.model_.layout.theta_pos] / len(X)

    def grad_max(est):
        mu = est.model_.calibrate().clique_marginals()[est.model_.layout.theta_pos]
        return np.abs(mu - emp + 0.01 * est.theta_).max()

    assert grad_max(b) <= 1e-10 + 1e-13 and grad_max(a) <= (1e-10 + 1e-13 if method == "em" else GRADIENT_FLOOR)
    lam = np.linalg.eigvalsh(exact_hessian(b.model_, b.theta_)).min() + 0.01
    bound = np.sqrt(len(b.theta_)) * (grad_max(a) + grad_max(b)) / lam
    np.testing.assert_allclose(a.theta_, b.theta_, rtol=0, atol=bound)
    assert a.score(X) == pytest.approx(b.score(X), abs=0.01 * np.abs(b.theta_).sum() * bound)


def test_missing_value_containers_agree():
    pd = pytest.importorskip("pandas")
    _, graph, n_states, Xf = CASES[0]
    ref = DecomposedEM(graph, alpha=0.01).fit(Xf)
    masked = np.ma.masked_invalid(Xf)
    frame = pd.DataFrame(Xf).astype("Int64")  # nullable integers, pd.NA where missing
    objects = np.where(np.isnan(Xf), None, Xf).astype(object)
    for X in (masked, frame, objects):
        est = DecomposedEM(graph, alpha=0.01).fit(X)
        np.testing.assert_array_equal(est.theta_, ref.theta_)
        np.testing.assert_array_equal(est.score_samples(X), ref.score_samples(Xf))


def test_input_is_never_modified_and_all_missing_rows_score_zero():
    _, graph, n_states, Xf = CASES[2]
    before = Xf.copy()
    est = DecomposedEM(graph, alpha=0.01).fit(Xf)
    np.testing.assert_array_equal(Xf, before)
    scores = est.score_samples(Xf)
    np.testing.assert_array_equal(Xf, before)
    empty = np.isnan(Xf).all(axis=1)
    assert empty[:5].all() and np.all(scores[empty] == 0.0) and np.all(scores[~empty] < 0)


@pytest.mark.filterwarnings("ignore:DecomposedEM did not converge")
def test_init_options():
    _, graph, n_states, Xf = CASES[0]
    base = DecomposedEM(graph, alpha=0.01, tol=1e-9).fit(Xf)
    warm = DecomposedEM(graph, alpha=0.01, init=base).fit(Xf)
    assert warm.n_iter_ <= 1  # starts at the optimum
    # base is within distance_bound (sqrt(d) 1e-9 / lambda_min ~ 2e-7) of the optimum; at most one step
    # from there moves it by as much (was a flat 1e-6).
    bound = distance_bound(base, Xf, 1e-9)
    np.testing.assert_allclose(warm.theta_, base.theta_, rtol=0, atol=2 * bound)
    also = DecomposedEM(graph, alpha=0.01, init=base.model_).fit(Xf)
    np.testing.assert_array_equal(also.theta_, warm.theta_)
    complete = DecomposedEM(graph, alpha=0.01, init="complete_rows", tol=1e-9).fit(Xf)
    # The same maximum from another start, both to gradient 1e-9: each within the bound of it.
    np.testing.assert_allclose(complete.theta_, base.theta_, rtol=0, atol=2 * bound)
    r1 = DecomposedEM(graph, alpha=0.01, init="random", random_state=3, max_iter=2).fit(Xf)
    r2 = DecomposedEM(graph, alpha=0.01, init="random", random_state=3, max_iter=2).fit(Xf)
    np.testing.assert_array_equal(r1.theta_, r2.theta_)
    other = DecomposedEM(grid_graph(2, 3), alpha=0.01).fit(Xf)
    with pytest.raises(ValueError, match="different structure"):
        DecomposedEM(graph, init=other).fit(Xf)
    no_complete = Xf.copy()
    no_complete[:, 0] = np.where(np.isnan(no_complete[:, 0]), 0, np.nan)
    no_complete[:, 2] = np.nan
    no_complete[:3, 2] = 1.0
    with pytest.raises(ValueError, match="init='complete_rows' needs rows without missing entries"):
        DecomposedEM(graph, init="complete_rows").fit(no_complete)


def test_n_jobs_gives_the_same_fit():
    X, _ = sample_random_mrf(grid_graph(4, 4), 3000, n_states=2, random_state=0)
    Xf = hide(X, np.random.default_rng(0), [1, 5, 6, 10], rate=0.5)
    a = DecomposedEM(grid_graph(4, 4), alpha=0.01).fit(Xf)
    b = DecomposedEM(grid_graph(4, 4), alpha=0.01, n_jobs=2).fit(Xf)
    # Chunk sums are added in the same order whatever the number of workers.
    np.testing.assert_array_equal(a.theta_, b.theta_)


@pytest.mark.parametrize(
    "mutate, exc, match",
    [
        (lambda X: X.__setitem__((slice(None), 2), np.nan), ValueError, r"no observed value in column 2"),
        (lambda X: X.__setitem__((4, 1), np.inf), ValueError, r"column 1 has inf at row 4"),
        (lambda X: X.__setitem__((4, 1), 0.5), ValueError, r"column 1 has the value 0.5 at row 4"),
        (lambda X: X.__setitem__((4, 1), -1), ValueError, r"Negative values in data: column 1"),
    ],
    ids=["all-missing-column", "inf", "fraction", "negative"],
)
def test_bad_input_names_the_culprit(mutate, exc, match):
    _, graph, n_states, Xf = CASES[0]
    X = Xf.copy()
    mutate(X)
    with pytest.raises(exc, match=match):
        DecomposedEM(graph).fit(X)


def test_state_out_of_range_and_wide_graph():
    _, graph, n_states, Xf = CASES[0]
    X = Xf.copy()
    X[7, 3] = 2
    with pytest.raises(ValueError, match=r"[Cc]olumn 3 has state 2 at row 7, but the model has 2 states"):
        DecomposedEM(graph, n_states=2).fit(X)
    est = DecomposedEM(graph, alpha=0.01).fit(Xf)
    with pytest.raises(ValueError, match=r"[Cc]olumn 3 has state 2 at row 7"):
        est.score_samples(X)
    wide, _ = sample_random_mrf(grid_graph(3, 3), 10, n_states=2, random_state=0)
    with pytest.raises(TreewidthError, match="LAPEstimator"):
        DecomposedEM(grid_graph(3, 3), max_bytes=1000).fit(wide)


def test_unseen_state_warns_at_alpha_zero_naming_the_clique():
    _, graph, n_states, Xf = CASES[0]
    X = Xf.copy()
    X[:, 1] = 0.0  # state 1 of variable 1 never observed, and never missing
    with pytest.warns(
        NoFiniteEstimateWarning, match=r"does not exist: for cliques \[\(1,\), \(0, 1\), \(1, 2\), \(1, 4\)\]"
    ):
        est = DecomposedEM(graph, alpha=0.0, max_iter=50).fit(X)
    assert np.all(np.isfinite(est.theta_)) and np.abs(est.theta_).max() <= 30
    X[:60, 1] = np.nan  # now rows could show every state: no warning (the check is sufficient only)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", NoFiniteEstimateWarning)
        DecomposedEM(graph, max_iter=1).fit(X)


def test_auto_plan_when_no_subnetwork_is_worth_splitting():
    # The row-wise split is priced, but no sub-network has fewer component patterns than rows
    # (30 % of a 6 x 6 grid hidden: one sub-network, its components as many as its rows); the
    # planner then promoted an empty set of components and failed on a reduction over zero rows.
    model = make_random_mrf(grid_graph(6, 6), 2, random_state=0)
    X = model.sample(200, random_state=1, method="exact").astype(float)
    X[np.random.default_rng(2).random(X.shape) < 0.3] = np.nan
    auto = DecomposedEM(grid_graph(6, 6), max_iter=2).fit(X)
    forced = DecomposedEM(grid_graph(6, 6), max_iter=2, decompose=True).fit(X)
    assert auto.decompose_ == "subnetworks"
    np.testing.assert_array_equal(auto.theta_, forced.theta_)  # the same plan, the same arithmetic


@pytest.mark.parametrize("shape, graph", [((200, 32), "chain"), ((300, 64), "grid:8x8")])
def test_default_plan_fits_binary_data_with_missing_entries(shape, graph):
    # #40 (crash): DecomposedEM() with its default decompose="auto" raised "zero-size array to
    # reduction operation maximum" on seeded random 0/1 data with 20 % NaN (200 x 32, the issue's
    # case) and on 64 binary columns (the digits' shape); decompose=True fitted. The planner
    # promoted an empty set of components (see the test above).
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, shape).astype(float)
    X[rng.random(shape) < 0.2] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence at max_iter=3 is not the point
        est = DecomposedEM(graph, max_iter=3).fit(X)
    assert np.all(np.isfinite(est.theta_)) and est.decompose_ in ("rows", "subnetworks", False, "none")
