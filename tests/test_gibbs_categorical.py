"""CategoricalGibbsKernel (pairwise models, any numbers of states) against brute force."""

import itertools

import networkx as nx
import numpy as np
import pytest
from scipy.special import logsumexp

from skmrf.datasets import make_random_mrf
from skmrf.graphs import grid_graph
from skmrf.inference import CategoricalGibbsKernel, GeneralGibbsKernel, GibbsSampler, colour_classes
from skmrf.inference._gibbs_dense import DenseFields, uniform_bits24
from skmrf.model import DiscreteMRF

from . import brute_force as bf

# A wheel (hub of degree 6, odd cycles: three colours by the greedy colouring, neighbour groups
# padded for the rim) plus an isolated variable (a site with no neighbour at all).
WHEEL = [tuple(e) for e in nx.wheel_graph(7).edges()] + [(7,)]

# Complete graphs on five variables: the dense path (every colour class a single variable).
COMPLETE5 = list(itertools.combinations(range(5), 2))

MODELS = {  # name: (graph, n_states, n_variables)
    "grid-K3": (grid_graph(3, 3), 3, None),
    "grid-mixed": (grid_graph(3, 3), [2, 3, 4, 3, 2, 4, 4, 3, 2], None),
    "grid-K2": (grid_graph(3, 3), 2, None),  # binary, forced through the categorical kernel
    "wheel-K3": (WHEEL, 3, 8),
    "wheel-mixed": (WHEEL, [4, 2, 3, 4, 3, 2, 3, 2], None),
    "chain-K300": ([(0, 1), (1, 2)], [300, 2, 5], None),  # more than 256 states: uint16 states
    "complete-K4": (COMPLETE5, 4, 5),
    "complete-mixed": (COMPLETE5, [3, 4, 2, 4, 3], None),
}


def _model(name, scale=1.0, seed=0):
    graph, k, n = MODELS[name]
    return make_random_mrf(graph, k, scale=scale, n_variables=n, random_state=seed)


def _random_states(model, n_chains, seed):
    rng = np.random.default_rng(seed)
    return np.floor(rng.random((n_chains, model.n_variables)) * model.n_states).astype(np.int64)


def _split(model):
    """The model's unary part and interaction part as two models (for brute-force energies)."""
    theta_unary, theta_pair = model.layout.split_unary(model.theta)
    return (DiscreteMRF(model.graph, model.n_states, theta) for theta in (theta_unary, theta_pair))


def _brute_conditionals(model, X, sites, beta=1.0):
    """``log p_beta(x_i = k | x_-i)`` by enumerating the states of each site, ``(sites, rows, K_max)``."""
    unary, pair = _split(model)
    kmax = int(model.n_states.max())
    out = np.full((len(sites), len(X), kmax), -np.inf)
    for s, i in enumerate(sites):
        for k in range(model.n_states[i]):
            Xk = X.copy()
            Xk[:, i] = k
            out[s, :, k] = bf.energies(unary, Xk) + beta * bf.energies(pair, Xk)
        out[s] -= logsumexp(out[s], axis=1, keepdims=True)
    return out


def _kernel(model, dense="auto"):
    return CategoricalGibbsKernel.from_layout(model.layout, model.theta, colour_classes(model.graph), dense=dense)


@pytest.fixture(params=[96, 8, 12], ids=["one-block", "blocks-of-2", "blocks-of-3"])
def block_floats(request, monkeypatch):
    """The dense path with its default blocks (one block of sites on these small graphs: every
    field after the first brought up to date by the in-block differences), with blocks of two
    sites at K = 4 (a product per block) and of three (blocks 3 + 2: two in-block updates, then a
    shorter last block)."""
    monkeypatch.setattr(DenseFields, "block_floats", request.param)
    return request.param


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("beta", [1.0, 0.4])
@pytest.mark.parametrize("dense", [False, True])
def test_conditionals_match_brute_force(name, beta, dense, block_floats):
    if block_floats != 96 and not dense:
        pytest.skip("blocks only matter on the dense path")
    model = _model(name, seed=1)
    kernel = _kernel(model, dense=dense)
    assert kernel.dense == dense
    X = _random_states(model, 13, seed=2)
    S = kernel.to_internal(X)
    np.testing.assert_array_equal(kernel.to_external(S), X)
    for ci, colour in enumerate(kernel.colours):
        got = kernel.conditional_log_probs(S, ci, beta=beta)
        ref = _brute_conditionals(model, X, colour, beta)
        assert np.array_equal(np.isneginf(got), np.isneginf(ref))  # exactly the missing states
        # float32 products (table path): each probability is resolved to about K * 2^-24 relative;
        # float32 sums of at most 8 log-potentials in [-1, 1] (dense path): logits to about 8 * 8 * 2^-24;
        # with parameters in [-1, 1] the smallest probability here is above 1e-3.
        np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], atol=2e-5)


def test_chunks_split_over_sites_and_chains():
    # Buffers of 8 rows: every chunk is one site and a slice of at most 8 of the 20 chains.
    model = _model("wheel-mixed", seed=3)
    kernel = _kernel(model)
    kernel.chunk_entries = 8 * kernel.width
    X = _random_states(model, 20, seed=4)
    S = kernel.to_internal(X)
    for ci, colour in enumerate(kernel.colours):
        got = kernel.conditional_log_probs(S, ci)
        ref = _brute_conditionals(model, X, colour)
        np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], atol=2e-5)
    assert any(c1 - c0 < 20 for chunks in kernel._plan(20) for _, _, c0, c1, *_ in chunks)


def test_huge_parameters_take_the_exact_path(monkeypatch):
    # Parameters up to 120: the scaled float32 product underflows for many sites and chains,
    # which are then recomputed in float64 from the log-potentials.
    model = _model("wheel-K3", scale=120.0, seed=5)
    kernel = _kernel(model)
    calls = []
    exact = kernel._exact_cdf
    monkeypatch.setattr(kernel, "_exact_cdf", lambda *a: calls.append(len(a[2])) or exact(*a))
    X = _random_states(model, 200, seed=6)
    S = kernel.to_internal(X)
    for ci, colour in enumerate(kernel.colours):
        got = kernel.conditional_log_probs(S, ci)
        ref = _brute_conditionals(model, X, colour)
        # Probabilities, not logs (huge parameters put some near 0): float32's K * 2^-24 ~ 2e-7 absolute
        # where the float32 path is kept, float64 elsewhere; 1e-6 is 5 float32 roundings.
        np.testing.assert_allclose(np.exp(got), np.exp(ref), atol=1e-6)
    assert sum(calls) > 0
    kernel.run(S, 3, np.random.default_rng(0))
    assert np.all(kernel.to_external(S) < model.n_states)


def test_beta_scales_the_interactions_as_the_general_kernel_does():
    model = _model("wheel-mixed", seed=7)
    kernel = _kernel(model)
    general = GeneralGibbsKernel(model.layout, model.theta, kernel.colours)
    X = _random_states(model, 11, seed=8)
    S = kernel.to_internal(X)
    for beta in (0.0, 0.3, 1.0, 1.7):
        full = general.full_unary + beta * general.full_interaction
        for ci, plan in enumerate(general.plans):
            lg = plan.logits(full, X)
            ref = lg - logsumexp(lg, axis=2, keepdims=True)
            got = kernel.conditional_log_probs(S, ci, beta=beta)
            np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], atol=2e-5)


@pytest.mark.parametrize("name", ["grid-K3", "grid-mixed", "wheel-mixed", "chain-K300"])
def test_interaction_energy(name):
    model = _model(name, seed=9)
    kernel = _kernel(model)
    X = _random_states(model, 17, seed=10)
    unary, pair = _split(model)
    expected = bf.energies(model, X) - bf.energies(unary, X)
    # 1e-12: float64 sums of a few log-potentials of size ~1, computed two ways (rounding only).
    np.testing.assert_allclose(kernel.interaction_energy(kernel.to_internal(X)), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(expected, bf.energies(pair, X), rtol=1e-12, atol=1e-12)


def _standardised_errors(model, X):
    """(empirical - exact) / binomial standard error for every clique table cell."""
    exact = model.calibrate().clique_marginals()
    emp = model.layout.table_counts(X) / len(X)
    se = np.sqrt(exact * (1 - exact) / len(X))
    keep = se > 0
    return (emp[keep] - exact[keep]) / se[keep]


@pytest.mark.parametrize("name, beta", [("grid-K3", 1.0), ("wheel-mixed", 1.0), ("grid-mixed", 0.5)])
def test_long_runs_reproduce_the_exact_marginals(name, beta):
    model = _model(name, seed=11)
    kernel = _kernel(model)
    rng = np.random.default_rng(12)
    S = kernel.to_internal(_random_states(model, 20000, seed=13))
    kernel.run(S, 50, rng, beta=beta)  # couplings in [-1, 1] on 8-9 variables: mixed long before 50 sweeps
    target = model
    if beta != 1.0:
        theta_unary, theta_pair = model.layout.split_unary(model.theta)
        target = DiscreteMRF(model.graph, model.n_states, theta_unary + beta * theta_pair)
    z = _standardised_errors(target, kernel.to_external(S))
    # 20,000 independent chains: every node and edge table cell (60 to 130 cells) within
    # 5 standard errors (a 5-sigma excursion has probability ~6e-7 per cell). The mean squared
    # z grows with a bias or with chains that have not forgotten their start; without either
    # it scattered between 0.66 and 1.67 over 33 seeded runs of this kernel and of the general
    # one on these models (the cells of a small model are strongly dependent, so it spreads
    # more than a chi-square mean would), while a bias of one standard error in every cell
    # would add 1 to it.
    assert np.abs(z).max() < 5
    assert np.mean(z**2) < 2.0


def test_same_generator_same_states():
    model = _model("grid-mixed", seed=14)
    sampler = GibbsSampler(model)
    start = sampler.random_states(30, np.random.default_rng(0))
    a = sampler.run(start, 5, np.random.default_rng(1))
    b = sampler.run(start, 5, np.random.default_rng(1))
    c = sampler.run(start, 5, np.random.default_rng(2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(
        model.sample(40, random_state=3, n_sweeps=4), model.sample(40, random_state=3, n_sweeps=4)
    )


def test_sampler_picks_the_kernel_and_returns_int64_states():
    potts = _model("wheel-mixed")
    sampler = GibbsSampler(potts)
    assert sampler.kernel_name == "categorical" and isinstance(sampler.kernel, CategoricalGibbsKernel)
    start = sampler.random_states(25, np.random.default_rng(0))
    out = sampler.run(start, 3, np.random.default_rng(1))
    assert out.dtype == np.int64 and out.shape == (25, potts.n_variables)
    assert np.all((out >= 0) & (out < potts.n_states))
    np.testing.assert_array_equal(start, sampler.random_states(25, np.random.default_rng(0)))  # start untouched

    binary = _model("grid-K2")
    assert GibbsSampler(binary).kernel_name == "binary"
    forced = GibbsSampler(binary, kernel="categorical")
    assert forced.kernel_name == "categorical" and not forced.binary_pairwise
    assert forced.run(forced.random_states(4, np.random.default_rng(0)), 2, np.random.default_rng(0)).dtype == np.int64

    triples = make_random_mrf([(0, 1, 2), (2, 3)], 3, n_variables=4, random_state=0)
    assert GibbsSampler(triples).kernel_name == "general"
    with pytest.raises(ValueError, match="at most two variables"):
        GibbsSampler(triples, kernel="categorical")
    with pytest.raises(ValueError, match="'categorical'"):
        GibbsSampler(potts, kernel="potts")


# -- the dense path (complete graphs) -----------------------------------------------------------


def test_dense_path_is_chosen_for_large_complete_graphs_only():
    # "auto": complete graphs with K >= 8 and at least 20 neighbour groups per site (g = 1 at K = 21).
    def auto(n, k, graph="complete"):
        return GibbsSampler(make_random_mrf(graph, k, n_variables=n, random_state=0)).kernel.dense

    assert auto(21, 21)  # 20 neighbours, one per group
    assert not auto(20, 21)  # 19 groups
    assert not auto(30, 3)  # K = 3: four neighbours per group, and the table path measured faster
    assert not auto(30, 21, [(i, i + 1) for i in range(29)])  # a chain: two colour classes
    assert not any(_kernel(_model(name)).dense for name in MODELS)  # small graphs keep the table path


def _sweep_distribution(model, order, n_sweeps, beta=1.0):
    """The exact distribution of a chain started uniformly after ``n_sweeps`` single-site sweeps.

    Each update of site ``i`` replaces ``p(x)`` by ``p(x_-i) pi(x_i | x_-i)``, computed on the
    enumerated joint ``pi`` (brute-force energies).
    """
    unary, pair = _split(model)
    xs = bf.states(model.n_states)
    e = bf.energies(unary, xs) + beta * bf.energies(pair, xs)
    shape = tuple(model.n_states)
    pi = np.exp(e - logsumexp(e)).reshape(shape)
    p = np.full(shape, 1.0 / pi.size)
    for _ in range(n_sweeps):
        for i in order:
            p = p.sum(axis=i, keepdims=True) * (pi / pi.sum(axis=i, keepdims=True))
    return p.reshape(-1), pi.reshape(-1), xs


def _cell_z(X, p, xs, model):
    """(empirical - expected) / binomial standard error of every node and edge table cell, where
    the expected frequencies are those of the distribution ``p`` over the states ``xs``."""
    z = []
    for c in model.cliques:
        for cell in itertools.product(*[range(model.n_states[i]) for i in c]):
            hit = np.all(xs[:, list(c)] == cell, axis=1)
            q = p[hit].sum()
            f = np.mean(np.all(X[:, list(c)] == cell, axis=1))
            z.append((f - q) / np.sqrt(q * (1 - q) / len(X)))
    return np.array(z)


@pytest.mark.parametrize("name, beta", [("complete-K4", 1.0), ("complete-mixed", 1.0), ("complete-K4", 0.5)])
def test_dense_kernel_reproduces_the_exact_marginals(name, beta, block_floats):
    model = _model(name, seed=15)
    kernel = _kernel(model, dense=True)
    n_chains, n_sweeps = 20000, 30
    S = kernel.to_internal(_random_states(model, n_chains, seed=16))
    kernel.run(S, n_sweeps, np.random.default_rng(17), beta=beta)
    X = kernel.to_external(S)
    # The chains start uniformly, so after 30 sweeps in the kernel's order each is an exact draw
    # from p_30, computed here by enumeration; it is the stationary pi to within a total variation
    # of 1e-6 (computed, not assumed: 5 variables, parameters in [-1, 1], mixing in a few sweeps).
    p, pi, xs = _sweep_distribution(model, kernel.perm, n_sweeps, beta)
    assert 0.5 * np.abs(p - pi).sum() < 1e-6
    z = _cell_z(X, pi, xs, model)
    # 20,000 independent chains, 130-180 node and edge table cells, binomial standard errors:
    # under a correct kernel P(some |z| > 5) <= 180 * 5.7e-7 ~ 1e-4 (Bonferroni, normal tails;
    # every cell expects more than 40 chains here). A bias of 5 standard errors is 0.012-0.017
    # in a probability; the check below shows a change of beta by 0.3 is far beyond it.
    assert np.abs(z).max() < 5
    _, pi_wrong, _ = _sweep_distribution(model, kernel.perm, 0, beta + 0.3)
    assert np.abs(_cell_z(X, pi_wrong, xs, model)).max() > 5


def test_dense_kernel_after_two_sweeps_is_exact_single_site_gibbs(block_floats):
    # Far from stationarity, the chains' law still is the exact one of two sweeps in the
    # kernel's site order: every single-site update draws from its full conditional.
    model = _model("complete-mixed", scale=2.0, seed=18)
    kernel = _kernel(model, dense=True)
    assert len(kernel._dense.starts) == {96: 1, 8: 3, 12: 2}[block_floats]
    S = kernel.to_internal(_random_states(model, 20000, seed=19))
    kernel.run(S, 2, np.random.default_rng(20))
    p, pi, xs = _sweep_distribution(model, kernel.perm, 2)
    assert 0.5 * np.abs(p - pi).sum() > 0.01  # not yet stationary: the test sees the transient
    # Same 5-sigma Bonferroni bound as above (150 cells).
    assert np.abs(_cell_z(kernel.to_external(S), p, xs, model)).max() < 5


def test_dense_kernel_huge_parameters():
    # Couplings up to 120 on a complete graph: the table path's float32 product underflows and
    # falls back to float64 for most sites; the dense path subtracts each field's maximum first.
    model = _model("complete-mixed", scale=120.0, seed=21)
    kernel = _kernel(model, dense=True)
    X = _random_states(model, 200, seed=22)
    S = kernel.to_internal(X)
    for ci, colour in enumerate(kernel.colours):
        got = kernel.conditional_log_probs(S, ci)
        ref = _brute_conditionals(model, X, colour)
        # Logits of size ~500 summed in float32: absolute rounding ~ 5 * 500 * 2^-24 ~ 1.5e-4 nats,
        # so probabilities agree to 2e-4 absolute.
        np.testing.assert_allclose(np.exp(got), np.exp(ref), atol=2e-4)
    kernel.run(S, 3, np.random.default_rng(0))
    assert np.all(kernel.to_external(S) < model.n_states)


def test_dense_kernel_same_generator_same_states():
    model = make_random_mrf("complete", 21, n_variables=21, scale=0.3, random_state=23)
    sampler = GibbsSampler(model)
    assert sampler.kernel.dense
    start = sampler.random_states(30, np.random.default_rng(0))
    a = sampler.run(start, 5, np.random.default_rng(1))
    np.testing.assert_array_equal(a, sampler.run(start, 5, np.random.default_rng(1)))
    assert not np.array_equal(a, sampler.run(start, 5, np.random.default_rng(2)))
    assert a.dtype == np.int64 and np.all((a >= 0) & (a < model.n_states))


def _reference_sweeps(model, order, X, n_sweeps, rng, beta=1.0):
    """Single-site Gibbs sweeps over ``order`` with the dense path's draw rule (one 24-bit
    uniform ``u`` per chain and site, ``x = #{k < K - 1 : cdf_k <= u 2^-24 cdf_last}``), every
    conditional by brute force in float64."""
    X = X.copy()
    for _ in range(n_sweeps):
        for i in order:
            cdf = np.cumsum(np.exp(_brute_conditionals(model, X, [i], beta)[0]), axis=1)
            t = uniform_bits24(rng.bit_generator, len(X)) * 2.0**-24 * cdf[:, -1]
            X[:, i] = np.sum(cdf[:, :-1] <= t[:, None], axis=1)
    return X


@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_dense_kernel_at_21_states_is_the_reference_sweep(beta):
    # K = 21 (states up to 20: a row code 20 * 21 of the in-block difference tables does not fit
    # the uint8 states), 9 variables: blocks of 4, 4 and 1 sites, so the draws use the product,
    # every in-block difference row and a one-site block. Same uniforms as the float64 reference:
    # a draw can differ only when its uniform falls within the float32 rounding of the fields
    # (about 9 * 2^-24 relative) of one of the 20 CDF boundaries, about 1e-5 per draw, so of
    # 400 chains x 18 draws fewer than 0.1 are expected to differ; at most 4 of 400 chains may
    # (Poisson tail below 1e-7). A wrong field anywhere moves most chains.
    model = make_random_mrf("complete", 21, n_variables=9, random_state=24)
    kernel = _kernel(model, dense=True)
    assert kernel._dense.block == 4 and len(kernel._dense.starts) == 3
    X = _random_states(model, 400, seed=25)
    S = kernel.to_internal(X)
    kernel.run(S, 2, np.random.default_rng(26), beta=beta)
    ref = _reference_sweeps(model, kernel.perm, X, 2, np.random.default_rng(26), beta)
    assert np.mean(np.all(kernel.to_external(S) == ref, axis=1)) >= 0.99
