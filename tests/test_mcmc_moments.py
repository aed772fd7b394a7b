"""The moment-matching schedule of MCMC maximum likelihood (bmDCA's fit, #26 item 5).

Its centred coordinates are checked exactly (a change of coordinates of the same model, and
the chain rule of its gradient) by enumeration; the fit against brute-force maximum likelihood
and the data's moments.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skmrf import ExactMaxLikelihood, MCMCMaxLikelihood, MomentMatchingSchedule
from skmrf._kernels.mcmc.moments import (
    CONFIRM_SPACING,
    CONFIRM_SWEEPS,
    Centred,
    connected_pearson,
    decorrelation,
    independent_start,
)
from skmrf.model import DiscreteMRF
from skmrf.protein import make_synthetic_alignment
from tests import brute_force

N_STATES = np.array([2, 3, 4, 3])
EDGES = [(0, 1), (1, 2), (2, 3), (0, 3), (1, 3)]


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    m = DiscreteMRF(EDGES, N_STATES)
    m.theta = rng.normal(size=m.n_params)
    return m


def _mu(model, seed=1):
    """Unary-feature means of some distribution (any values in (0, 1) summing below 1 per site)."""
    mu = np.zeros(model.n_params)
    rng = np.random.default_rng(seed)
    for k, c in enumerate(model.layout.cliques):
        if len(c) == 1:
            lo, hi = model.layout.block_offsets[k : k + 2]
            mu[lo:hi] = rng.dirichlet(np.ones(hi - lo + 1))[1:]
    return mu


def test_centred_coordinates_are_the_same_model(model):
    """``to_theta(c)`` is the model ``sum b x + sum (x - mu)' J (x - mu)`` up to a constant."""
    layout, mu = model.layout, _mu(model)
    centred = Centred(layout, mu)
    c = centred.from_theta(model.theta)
    np.testing.assert_allclose(centred.to_theta(c), model.theta, rtol=0, atol=1e-12)  # a sum of 5 products
    xs = brute_force.states(N_STATES)
    phi = brute_force.features(model, xs)  # 0/1 features, theta order
    u, pair = centred.unary, centred.pair
    products = (phi[:, centred.row] - mu[centred.row]) * (phi[:, centred.col] - mu[centred.col])
    centred_energy = phi[:, u] @ c[u] + products @ c[pair]
    difference = phi @ model.theta - centred_energy
    np.testing.assert_allclose(difference, difference[0], rtol=0, atol=1e-12)  # rounding of ~100 terms of size 1


def test_centred_gradient_is_the_chain_rule(model):
    """``gradient(g)`` is ``A' g`` for the linear map ``theta = A c``: exact, by columns of ``A``."""
    centred = Centred(model.layout, _mu(model))
    n = model.n_params
    A = np.column_stack([centred.to_theta(e) for e in np.eye(n)])
    g = np.random.default_rng(2).normal(size=n)
    np.testing.assert_allclose(centred.gradient(g), A.T @ g, rtol=0, atol=1e-12)
    assert np.all(centred.preconditioner(0.01) > 0)


def test_connected_pearson_of_equal_moments_is_one(model):
    centred = Centred(model.layout, _mu(model))
    marginals = brute_force.features(model, brute_force.states(N_STATES))
    p = np.exp(marginals @ model.theta)
    mean = p @ marginals / p.sum()
    assert connected_pearson(centred, mean, mean) == pytest.approx((1.0, 1.0), abs=1e-12)


def test_connected_correlations_cover_every_pair_of_states(model):
    """``Centred.connected`` and ``frequencies`` from the non-zero features equal the full tables
    ``f_ij - f_i f_j`` and ``f_i`` computed by enumeration (as multisets: the orders differ)."""
    xs = brute_force.states(N_STATES)
    phi = brute_force.features(model, xs)
    p = np.exp(phi @ model.theta)
    p /= p.sum()
    marginals = brute_force.clique_marginals(model)
    full_C = np.concatenate(
        [(marginals[(i, j)] - np.outer(marginals[(i,)], marginals[(j,)])).ravel() for i, j in sorted(EDGES)]
    )
    full_f = np.concatenate([marginals[(i,)] for i in range(len(N_STATES))])
    centred = Centred(model.layout, _mu(model))
    mean = p @ phi
    # sums of at most 12 probabilities: rounding far below 1e-12
    np.testing.assert_allclose(np.sort(centred.connected(mean)), np.sort(full_C), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.sort(centred.frequencies(mean)), np.sort(full_f), rtol=0, atol=1e-12)


def test_independent_start_reproduces_the_frequencies(model):
    """Couplings zero and fields the log ratios: the model's one-site marginals are the data's, up to
    the one pseudo-row the start adds (exact enumeration)."""
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.integers(0, k, 400) for k in N_STATES])
    X[:, 2] = np.minimum(X[:, 2], 2)  # state 3 of column 2 never seen: its field must stay finite
    mean_stats = model.layout.table_counts(X)[model.layout.theta_pos] / len(X)
    theta = independent_start(model.layout, mean_stats, len(X))
    assert np.all(np.isfinite(theta))
    start = DiscreteMRF(EDGES, N_STATES, theta=theta)
    xs = brute_force.states(N_STATES)
    phi = brute_force.features(start, xs)
    p = np.exp(phi @ theta)
    exact = p @ phi / p.sum()
    unary = Centred(model.layout, mean_stats).unary
    # (f n + 1/K) / (n + 1) differs from f by at most 1 / (n + 1)
    np.testing.assert_allclose(exact[unary], mean_stats[unary], rtol=0, atol=1 / (len(X) + 1) + 1e-12)


def test_fit_reaches_maximum_likelihood():
    """With the stop switched off, the last iterate is close to exact penalised ML (its fixed point):
    far closer than the independent-site start."""
    graph = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4)]
    truth = DiscreteMRF(graph, [3] * 5)
    truth.theta = np.random.default_rng(4).normal(scale=0.8, size=truth.n_params)
    X = truth.sample(3000, random_state=5, method="exact")
    exact = ExactMaxLikelihood(graph, n_states=3, alpha=1e-3).fit(X)
    schedule = MomentMatchingSchedule(n_chains=8000, n_sweeps=2, n_iter=300, target=1.0)
    with pytest.warns(ConvergenceWarning, match="target 1"):
        est = MCMCMaxLikelihood(graph, n_states=3, schedule=schedule, alpha=1e-3, random_state=0).fit(X)
    assert not est.converged_ and est.n_iter_ == 300
    layout = est.model_.layout
    mean_stats = layout.table_counts(X)[layout.theta_pos] / len(X)
    start = independent_start(layout, mean_stats, len(X))
    error, start_error = np.linalg.norm(est.theta_ - exact.theta_), np.linalg.norm(start - exact.theta_)
    # Constant-step noise of the last iterate (target 1 never starts the average): about
    # learning_rate * sqrt(f / n_chains) per step, a few hundredths per coordinate here; the start is
    # one unit away. The per-coordinate rates shrink where the gradient is noise (RATE_DOWN), which
    # slows the approach (0.12 of the start's distance after 300 steps at rate 1). A wrong sign or
    # chain rule diverges or stalls near the start.
    assert error < 0.15 * start_error, (error, start_error)


def test_stops_at_the_target_and_records_it():
    X = make_synthetic_alignment(1000, 10, n_states=4, n_contacts=4, coupling_scale=1.0, random_state=0).X
    schedule = MomentMatchingSchedule(n_chains=2000, target=0.9, target_frequencies=0.99)
    est = MCMCMaxLikelihood("complete", n_states=4, schedule=schedule, random_state=0).fit(X)
    assert est.converged_ and est.n_iter_ < schedule.n_iter
    assert est.schedule_.kind == "moments"
    assert est.trace_["pearson_connected"][-1] >= 0.9 and est.trace_["pearson_frequencies"][-1] >= 0.99
    checked, passed = _checks_follow_the_rule(est.trace_, schedule)
    assert passed and checked[-1] == est.n_iter_ - 1  # the first step whose fresh chains met both ended the run
    assert est.n_averaged_ == est.n_iter_ - checked[0]  # the iterates from the first check on
    assert np.all(np.isfinite(est.theta_))


def test_string_schedule_and_refused_constraint():
    X = np.random.default_rng(0).integers(0, 2, size=(100, 4))
    resolved = MCMCMaxLikelihood("chain", schedule="moments")._schedule()
    assert resolved.get_params() == MomentMatchingSchedule().get_params()
    with pytest.raises(ValueError, match="max_coupling=0.5"):
        MCMCMaxLikelihood("chain", schedule=MomentMatchingSchedule(n_iter=2), max_coupling=0.5).fit(X)


def test_weights_equal_repeated_rows():
    """Chains start at rows drawn by position in the repeated data, so integer weights give the
    repeated-row fit bit for bit (as every estimator, tests/test_sample_weight.py)."""
    X = make_synthetic_alignment(200, 6, n_states=3, n_contacts=1, random_state=1).X
    weight = np.random.default_rng(2).integers(0, 4, len(X))
    schedule = MomentMatchingSchedule(n_chains=300, n_iter=15, target=1.0)
    kw = dict(n_states=3, schedule=schedule, random_state=0)
    with pytest.warns(ConvergenceWarning):
        weighted = MCMCMaxLikelihood("complete", **kw).fit(X, sample_weight=weight)
    with pytest.warns(ConvergenceWarning):
        plain = MCMCMaxLikelihood("complete", **kw).fit(np.repeat(X, weight, axis=0))
    np.testing.assert_array_equal(weighted.theta_, plain.theta_)


def test_model_file_round_trip(tmp_path):
    """A moment-matching fit saves and loads with its schedule object (the trace, as every per-run
    diagnostic, is not saved: skmrf.io)."""
    from skmrf.io import load_model, save_model

    X = make_synthetic_alignment(300, 6, n_states=3, n_contacts=1, random_state=1).X
    schedule = MomentMatchingSchedule(n_chains=300, target=0.5, target_frequencies=0.5)
    est = MCMCMaxLikelihood("complete", n_states=3, schedule=schedule, random_state=0).fit(X)
    loaded = load_model(save_model(est, tmp_path / "m.npz"))
    assert type(loaded.schedule) is MomentMatchingSchedule
    assert loaded.schedule.get_params() == schedule.get_params()
    np.testing.assert_array_equal(loaded.theta_, est.theta_)


def test_decorrelation_overlaps():
    """Overlaps by hand: a chain equal to its earlier state has q_self = 1; independent uniform
    chains are decorrelated (under the null the test fails with probability 0.0013 at 3 sigmas; the
    seed is fixed), the same chains unchanged are not."""
    before = [np.array([[0, 1, 2], [1, 1, 0]]), np.array([[2, 0], [0, 1]])]  # 2 sites, 5 chains
    after = [np.array([[0, 2, 2], [1, 0, 0]]), np.array([[2, 0], [1, 1]])]
    q_self, q_between, _ = decorrelation(before, after)
    # chain by chain (columns (0, 1), (2, 0), (2, 0), (2, 1), (0, 1) after; (0, 1), (1, 1), (2, 0),
    # (2, 0), (0, 1) before): agreements with its own earlier state 2, 0, 2, 1, 2 of 2 sites; with the
    # previous chain's earlier state (np.roll by one: chain 0 with chain 4) 2, 0, 0, 1, 0
    assert q_self == pytest.approx(7 / 10) and q_between == pytest.approx(3 / 10)
    rng = np.random.default_rng(0)
    S, T = rng.integers(0, 21, (2, 75, 4000))
    assert decorrelation([S], [T])[2]
    assert not decorrelation([S], [S.copy()])[2]


def test_decorrelation_compares_earlier_states_on_both_sides():
    """A fifth of the chains frozen while the model sharpens (the others redrawn with state 0 at
    probability 0.9): two current chains agree far more often (about 0.54 per site) than a frozen
    chain with itself and a moved one with its start (0.2 + 0.8 / 21 = 0.24), so a comparison with
    other chains' current states would pass them; against other chains' earlier states (1 / 21) they
    fail, as they must. Tolerances: 3e5 site comparisons, standard errors below 1e-3."""
    rng = np.random.default_rng(1)
    before = rng.integers(0, 21, (75, 4000))
    sharp = np.where(rng.random((75, 4000)) < 0.9, 0, rng.integers(1, 21, (75, 4000)))
    after = np.where(np.arange(4000) < 800, before, sharp)
    q_self, q_between, decorrelated = decorrelation([before], [after])
    assert q_self == pytest.approx(0.2 + 0.8 / 21, abs=0.01) and q_between == pytest.approx(1 / 21, abs=0.01)
    assert not decorrelated


def _bimodal(seed=0):
    """8 binary columns, each row all 0 or all 1 with 3 % of the entries flipped: single-site Gibbs
    chains started at rows stay in their mode for many sweeps."""
    rng = np.random.default_rng(seed)
    mode = rng.integers(0, 2, 1000)[:, None]
    return (np.repeat(mode, 8, axis=1) ^ (rng.random((1000, 8)) < 0.03)).astype(int)


def _checks_follow_the_rule(trace, schedule):
    """Fresh chains ran only on steps whose own chains met the targets, at least CONFIRM_SPACING times
    their sweeps apart; the run stopped at the first check that met both targets."""
    checked = np.flatnonzero(~np.isnan(trace["fresh_connected"]))
    met = (trace["pearson_connected"] >= schedule.target) & (
        trace["pearson_frequencies"] >= schedule.target_frequencies
    )
    assert met[checked].all()
    sweeps = np.cumsum(trace["n_sweeps"])
    assert np.all(np.diff(sweeps[checked]) >= CONFIRM_SPACING * CONFIRM_SWEEPS)
    passed = (trace["fresh_connected"] >= schedule.target) & (trace["fresh_frequencies"] >= schedule.target_frequencies)
    assert not passed[:-1].any()
    return checked, bool(passed[-1])


def test_lagging_chains_need_fresh_chains_to_stop_and_auto_sweeps_decorrelate():
    """Persistent chains that keep their modes (2 sweeps a step) meet the targets, but a stop waits
    for fresh chains from uniformly random states to meet them too. A single-site Gibbs chain cannot
    leave the mode its random start leans to, so fresh chains do not reproduce the data's share of
    each mode in their sweeps: the run ends at n_iter and says what the fresh chains reached. With
    n_sweeps="auto" the sweeps double after every step whose chains did not decorrelate (and only
    then), and only decorrelated chains trigger a check."""
    X = _bimodal()
    lagging = MomentMatchingSchedule(n_chains=500, n_sweeps=2, n_iter=60)
    with pytest.warns(ConvergenceWarning, match="fresh chains checked 1 steps"):
        est = MCMCMaxLikelihood("complete", schedule=lagging, random_state=0).fit(X)
    checked, passed = _checks_follow_the_rule(est.trace_, lagging)
    assert not est.converged_ and len(checked) == 1 and not passed
    assert not est.trace_["decorrelated"][checked[0]]
    # Without a confirmation the estimate is the checked one (there the average of one iterate), not the
    # average of every iterate since (fresh chains' r can fall as the fit goes on)
    assert est.n_averaged_ == 1
    auto = MomentMatchingSchedule(n_chains=500, n_sweeps="auto", n_iter=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = MCMCMaxLikelihood("complete", schedule=auto, random_state=0).fit(X)
    trace = est.trace_
    checked, passed = _checks_follow_the_rule(trace, auto)
    assert len(checked) and trace["decorrelated"][checked].all() and est.converged_ == passed
    sweeps, failed = trace["n_sweeps"], ~trace["decorrelated"][:-1]
    np.testing.assert_array_equal(sweeps[1:], np.where(failed, np.minimum(2 * sweeps[:-1], 1280), sweeps[:-1]))
    assert sweeps[-1] > sweeps[0] and est.schedule_.n_sweeps == sweeps[-1]


def test_steps_shrink_from_the_first_step_that_met_the_targets(monkeypatch):
    """From the first step whose chains meet the targets on, the steps shrink as DECAY_STEPS /
    (DECAY_STEPS + n) with n the iterates averaged (#42: constant steps outran the persistent chains);
    the iterates before are those of a run whose steps never shrink."""
    import skmrf._kernels.mcmc.moments as moments

    X = make_synthetic_alignment(300, 8, n_states=3, n_contacts=2, random_state=1).X
    schedule = MomentMatchingSchedule(
        n_chains=200, n_sweeps=CONFIRM_SWEEPS, n_iter=20, target=0.5, target_frequencies=0.5
    )
    runs, chains_class, decay_steps = [], moments.Chains, moments.DECAY_STEPS
    for decay in (decay_steps, 1e300):  # 1e300 / (1e300 + n) is 1.0 exactly
        iterates = []

        class Recording(chains_class):  # keeps the theta each step's chains run under
            record = iterates

            def advance(self, theta, n_sweeps, statistic=True):
                self.record.append(theta.copy()) if statistic else None
                return super().advance(theta, n_sweeps, statistic)

        monkeypatch.setattr(moments, "Chains", Recording)
        monkeypatch.setattr(moments, "_check", lambda *args: (0.5, 0.0))  # fresh chains that never confirm
        monkeypatch.setattr(moments, "DECAY_STEPS", decay)
        with pytest.warns(ConvergenceWarning, match="did not converge"):
            est = MCMCMaxLikelihood("complete", n_states=3, schedule=schedule, random_state=0).fit(X)
        runs.append((est.trace_, np.array(iterates)))
    (trace, iterates), (unshrunk_trace, unshrunk) = runs
    met = (trace["pearson_connected"] >= 0.5) & (trace["pearson_frequencies"] >= 0.5)
    first = int(np.argmax(met))
    assert 0 < first < 18  # the chains of the start do not meet the targets; later ones do
    steps = np.arange(20)
    expected = np.where(steps < first, 1.0, decay_steps / (decay_steps + 1 + steps - first))
    np.testing.assert_array_equal(trace["step_scale"], expected)
    np.testing.assert_array_equal(unshrunk_trace["step_scale"], np.ones(20))
    # theta of step k is the one its chains ran under: the first shrunk step moves the iterate of step first + 2
    np.testing.assert_array_equal(iterates[: first + 1], unshrunk[: first + 1])
    assert not np.array_equal(iterates[first + 1], unshrunk[first + 1])


def test_threads_give_the_serial_result():
    """The chain blocks (MOMENTS_CHAIN_BLOCK chains each, their random streams drawn up front) run in
    threads with n_jobs=2 and give the n_jobs=1 fit bit for bit (2100 chains: three blocks; 2100 x 10
    sweeps x 10 variables is above MOMENTS_MIN_WORK_PER_THREAD, so two threads do run)."""
    X = make_synthetic_alignment(300, 10, n_states=3, n_contacts=2, random_state=3).X
    schedule = MomentMatchingSchedule(n_chains=2100, n_sweeps=10, n_iter=4, target=1.0)
    fits = []
    for n_jobs in (1, 2):
        with pytest.warns(ConvergenceWarning):
            est = MCMCMaxLikelihood("complete", n_states=3, schedule=schedule, random_state=0, n_jobs=n_jobs)
            fits.append(est.fit(X).theta_)
    np.testing.assert_array_equal(fits[0], fits[1])
