"""The annealing path of AIS: the unary offset and the shifted Gibbs kernels, against enumeration."""

import numpy as np
import pytest

from skmrf.datasets import make_random_mrf
from skmrf.graphs import grid_graph
from skmrf.inference import AnnealingPath
from skmrf.inference._annealing import unary_offset
from skmrf.model import DiscreteMRF

from . import brute_force as bf

TRIPLES = [(0, 1, 2), (2, 3), (3, 4), (4, 5, 0)]


def _models():
    """A binary grid, a 3-state grid and triple cliques with 2-4 states: one model per kernel."""
    binary = make_random_mrf(grid_graph(3, 3), 2, 2.0, random_state=0)
    potts = make_random_mrf(grid_graph(3, 3), 3, 1.5, random_state=1)
    general = DiscreteMRF(TRIPLES, np.array([2, 3, 4, 2, 3, 2]))
    general.theta = np.random.default_rng(2).uniform(-1.5, 1.5, general.n_params)
    return {"binary": binary, "categorical": potts, "general": general}


def _main_effects(model):
    """``M[i, a]`` by brute force: every clique's block, looked up state by state
    (``DiscreteMRF.potential``), averaged uniformly over the other variables' states."""
    kmax = int(model.n_states.max())
    M = np.zeros((model.n_variables, kmax))
    for c in model.cliques:
        if len(c) < 2:
            continue
        block = model.potential(c)
        table = np.zeros([int(model.n_states[i]) for i in c])
        table[(slice(1, None),) * len(c)] = block
        for p, i in enumerate(c):
            others = tuple(q for q in range(len(c)) if q != p)
            main = table.mean(axis=others)
            M[i, : len(main)] += main - main[0]
    return M


def _energies_at(model, beta, M):
    """Log-potential of every state under ``p_beta = exp(unary + (1 - beta) M + beta I)``."""
    xs = bf.states(model.n_states)
    unary = np.zeros(len(xs))
    for c in model.cliques:
        if len(c) == 1:
            unary += np.r_[0.0, model.potential(c)][xs[:, c[0]]]
    inter = bf.energies(model, xs) - unary
    shift = M[np.arange(model.n_variables), xs].sum(axis=1)
    return xs, unary + (1 - beta) * shift + beta * inter


@pytest.mark.parametrize("kind", ["binary", "categorical", "general"])
def test_the_centred_offset_is_the_main_effects(kind):
    model = _models()[kind]
    M = unary_offset(model, "centred")
    # Means of a few dozen table entries: rounding only.
    np.testing.assert_allclose(M, _main_effects(model), rtol=0, atol=1e-12)
    assert np.all(unary_offset(model, "unary") == 0)
    with pytest.raises(ValueError, match="path must be one of"):
        unary_offset(model, "linear")


def test_binary_centred_path_anneals_the_ising_couplings():
    # With x = (1 + s) / 2: theta_ij x_i x_j = theta_ij / 4 (s_i s_j + s_i + s_j + 1), so the centred
    # offset of x_i = 1 is sum_j theta_ij / 2 and what is annealed is theta_ij / 4 s_i s_j.
    model = _models()["binary"]
    expect = np.zeros(model.n_variables)
    for c in model.cliques:
        if len(c) == 2:
            expect[list(c)] += model.potential(c)[0, 0] / 2
    np.testing.assert_allclose(unary_offset(model)[:, 1], expect, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["binary", "categorical", "general"])
def test_the_path_ends_at_the_model(kind):
    # log p_0 + A = the model's energy (up to log Z_0), for every state: the path is exact at beta = 1.
    model = _models()[kind]
    path = AnnealingPath(model)
    xs = bf.states(model.n_states)
    base = path.base_logits[np.arange(model.n_variables), xs].sum(axis=1)
    total = base + path.annealed_energy(path.kernel.to_internal(xs))
    # The binary kernel keeps its pair weights in float32 (each rounded by 2^-24 relative) and sums
    # a variable's at most 4 neighbours in float32: at most 5 * 2^-24 * sum |theta_ij| off. The
    # other kernels work in float64: rounding of a few dozen terms.
    pair = np.abs(model.theta[np.repeat([len(c) >= 2 for c in model.cliques], model.layout.block_sizes)]).sum()
    atol = 5 * 2.0**-24 * pair if kind == "binary" else 1e-12
    np.testing.assert_allclose(total, bf.energies(model, xs), rtol=0, atol=atol)
    # log Z_0 is the base model's own normaliser
    assert path.log_z0 == pytest.approx(np.logaddexp.reduce(base), abs=1e-9)


@pytest.mark.parametrize("kind", ["binary", "categorical", "general"])
def test_shifted_kernel_samples_the_intermediate_model(kind):
    # The sweep at beta = 0.4 shifts the kernel's unary terms by 0.6 M in place: 3000 chains run
    # 60 sweeps from the base model must have the single-variable marginals of p_0.4 (enumerated).
    # Tolerance: 5 binomial standard errors, sqrt(1/4 / 3000) = 0.0091 each (the chains are
    # independent; 60 sweeps mix these 9-variable models, whose exact marginals differ from the
    # base's by 0.1 or more). The same run without the shift must miss them: the test can fail.
    model = _models()[kind]
    beta, n_chains = 0.4, 3000
    M = _main_effects(model)
    xs, e = _energies_at(model, beta, M)
    p = np.exp(e - e.max())
    p /= p.sum()
    tol = 5 * np.sqrt(0.25 / n_chains)

    def marginals(shifted):
        path = AnnealingPath(model)
        rng = np.random.default_rng(0)
        S = path.kernel.to_internal(path.base_draws(n_chains, rng))
        for _ in range(60):
            if shifted:
                path.sweep(S, beta, rng)
            else:
                path._set_unary_offset(np.zeros_like(path.offset))
                path.kernel.run(S, 1, rng, beta=beta)
        x = path.kernel.to_external(S)
        return [np.bincount(x[:, i], minlength=model.n_states[i]) / n_chains for i in range(model.n_variables)]

    exact = [np.bincount(xs[:, i], weights=p, minlength=model.n_states[i]) for i in range(model.n_variables)]
    got = marginals(True)
    for i in range(model.n_variables):
        np.testing.assert_allclose(got[i], exact[i], rtol=0, atol=tol, err_msg=f"variable {i}")
    unshifted = marginals(False)
    assert max(np.abs(unshifted[i] - exact[i]).max() for i in range(model.n_variables)) > 2 * tol
    # at beta = 1 the kernel is the model's again
    path = AnnealingPath(model)
    path.sweep(path.kernel.to_internal(path.base_draws(2, np.random.default_rng(0))), 1.0, np.random.default_rng(0))
    fresh = AnnealingPath(model).kernel
    if kind == "binary":
        for a in fresh.neg_bias:
            np.testing.assert_array_equal(path.kernel.neg_bias[a], fresh.neg_bias[a])
    elif kind == "categorical":
        np.testing.assert_array_equal(path.kernel.unary, fresh.unary)
    else:
        np.testing.assert_array_equal(path.kernel.full, fresh.full)


@pytest.mark.parametrize("beta", [0.4, 1.0])
def test_swendsen_wang_move_samples_the_intermediate_model(beta):
    # #39: the cluster move alone (no Gibbs sweep) must leave p_beta of a ferromagnet with fields
    # invariant and mix to it: 4000 chains from the base model, 40 moves, must have p_beta's
    # single-variable marginals and its distribution of the number of ones (enumerated).
    # Tolerance: 5 binomial standard errors, sqrt(1/4 / 4000) = 0.0079 (independent chains). A move
    # that forgot the couplings' share of the field, h_i = u_i / 2 + sum_j theta_ij / 4, samples
    # another model: it must miss.
    from skmrf.inference._swendsen_wang import SwendsenWangMove

    rng = np.random.default_rng(3)
    model = make_random_mrf(grid_graph(3, 3), 2, 1.0, random_state=0)
    lay = model.layout
    sizes = np.array([len(c) for c in lay.cliques])
    theta = model.theta.copy()
    theta[lay.block_offsets[:-1][sizes == 2]] = rng.uniform(0.2, 2.0, int((sizes == 2).sum()))
    theta[lay.block_offsets[:-1][sizes == 1]] = rng.uniform(-2.5, 1.0, int((sizes == 1).sum()))
    model.theta = theta
    n_chains = 4000
    M = _main_effects(model)
    xs, e = _energies_at(model, beta, M)
    p = np.exp(e - e.max())
    p /= p.sum()
    tol = 5 * np.sqrt(0.25 / n_chains)
    exact = np.r_[[p @ xs[:, i] for i in range(model.n_variables)], np.bincount(xs.sum(axis=1), weights=p)]

    def statistics(forget_pair_field):
        path = AnnealingPath(model, cluster_moves=True)
        move = path._swendsen_wang
        if forget_pair_field:
            move.pair_field = np.zeros_like(move.pair_field)
        S = path.kernel.to_internal(path.base_draws(n_chains, rng))
        unary = path._unary0 + (1.0 - beta) * path.offset[path._perm, 1]
        for _ in range(40):
            move.move(S, unary, beta, rng)
        x = path.kernel.to_external(S)
        return np.r_[x.mean(axis=0), np.bincount(x.sum(axis=1), minlength=model.n_variables + 1) / n_chains]

    np.testing.assert_allclose(statistics(False), exact, rtol=0, atol=tol)
    assert np.abs(statistics(True) - exact).max() > 2 * tol
    assert SwendsenWangMove.applies(AnnealingPath(model).kernel)
    with pytest.raises(ValueError, match="cluster_moves=True needs a binary pairwise model"):
        AnnealingPath(_models()["binary"], cluster_moves=True)  # couplings of both signs
