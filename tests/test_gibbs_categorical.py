"""CategoricalGibbsKernel (pairwise models, any numbers of states) against brute force."""

import networkx as nx
import numpy as np
import pytest
from scipy.special import logsumexp

from skmrf.datasets import make_random_mrf
from skmrf.graphs import grid_graph
from skmrf.inference import CategoricalGibbsKernel, GeneralGibbsKernel, GibbsSampler, colour_classes
from skmrf.model import DiscreteMRF

from . import brute_force as bf

# A wheel (hub of degree 6, odd cycles: three colours by the greedy colouring, neighbour groups
# padded for the rim) plus an isolated variable (a site with no neighbour at all).
WHEEL = [tuple(e) for e in nx.wheel_graph(7).edges()] + [(7,)]

MODELS = {  # name: (graph, n_states, n_variables)
    "grid-K3": (grid_graph(3, 3), 3, None),
    "grid-mixed": (grid_graph(3, 3), [2, 3, 4, 3, 2, 4, 4, 3, 2], None),
    "grid-K2": (grid_graph(3, 3), 2, None),  # binary, forced through the categorical kernel
    "wheel-K3": (WHEEL, 3, 8),
    "wheel-mixed": (WHEEL, [4, 2, 3, 4, 3, 2, 3, 2], None),
    "chain-K300": ([(0, 1), (1, 2)], [300, 2, 5], None),  # more than 256 states: uint16 states
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


def _kernel(model):
    return CategoricalGibbsKernel.from_layout(model.layout, model.theta, colour_classes(model.graph))


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("beta", [1.0, 0.4])
def test_conditionals_match_brute_force(name, beta):
    model = _model(name, seed=1)
    kernel = _kernel(model)
    X = _random_states(model, 13, seed=2)
    S = kernel.to_internal(X)
    np.testing.assert_array_equal(kernel.to_external(S), X)
    for ci, colour in enumerate(kernel.colours):
        got = kernel.conditional_log_probs(S, ci, beta=beta)
        ref = _brute_conditionals(model, X, colour, beta)
        assert np.array_equal(np.isneginf(got), np.isneginf(ref))  # exactly the missing states
        # float32 products: each probability is resolved to about K * 2^-24 relative;
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
