import numpy as np
import pytest

from skmrf.datasets import make_random_mrf
from skmrf.model import DiscreteMRF

from . import brute_force as bf


def test_binary_parametrisation_is_the_ising_form():
    m = DiscreteMRF([(0, 1)], 2, n_variables=2, theta=[0.5, -0.2, 1.0])
    # log p(x) = t0 x0 + t1 x1 + t01 x0 x1 - log Z
    lz = np.log(1 + np.exp(0.5) + np.exp(-0.2) + np.exp(0.5 - 0.2 + 1.0))
    # 1e-14 (~50 ulp): a log-sum-exp of 4 terms, closed form both ways; |log p| >= 0.5 keeps rtol meaningful.
    assert m.log_partition() == pytest.approx(lz, rel=1e-14)
    np.testing.assert_allclose(m.log_prob([[1, 1], [0, 1]]), [1.3 - lz, -0.2 - lz], rtol=1e-14)


def test_block_shapes_and_potential_view():
    m = DiscreteMRF([(0, 1, 2)], [2, 3, 4])
    assert m.cliques == ((0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2))
    assert m.n_params == 1 + 2 + 3 + 2 + 3 + 6 + 6
    assert m.potential((2, 0, 1)).shape == (1, 2, 3)
    m.potential((2, 1))[1, 2] = 7.0  # a view: writes go to theta
    assert m.theta[m.layout.block_offsets[5] + 5] == 7.0
    with pytest.raises(ValueError, match="not a clique"):
        m.potential((0, 3))


def test_sufficient_statistics_match_a_direct_count():
    model = make_random_mrf([(0, 1, 2), (2, 3)], [3, 2, 3, 2], random_state=0)
    X = np.random.default_rng(0).integers(0, [3, 2, 3, 2], size=(500, 4))
    stats = model.sufficient_statistics(X)
    assert stats.dtype == np.int64
    np.testing.assert_array_equal(stats, bf.features(model, X).sum(axis=0).astype(np.int64))


def test_bad_theta():
    with pytest.raises(ValueError, match="3 parameters"):
        DiscreteMRF([(0, 1)], 2, n_variables=2, theta=[1.0])
    with pytest.raises(ValueError, match="NaN"):
        DiscreteMRF([(0, 1)], 2, n_variables=2, theta=[1.0, np.nan, 0])


def test_pseudo_likelihood_matches_brute_force_conditionals():
    model = make_random_mrf([(0, 1, 2), (2, 3)], [3, 2, 3, 2], random_state=4)
    xs = bf.states(model.n_states)
    e = bf.energies(model, xs)
    X = xs[::5]
    expected = np.zeros(len(X))
    for r, x in enumerate(X):
        for i in range(4):
            same = np.all(np.delete(xs, i, axis=1) == np.delete(x, i), axis=1)
            expected[r] += e[np.all(xs == x, axis=1)][0] - np.log(np.exp(e[same]).sum())
    # 1e-12: 4 log-sum-exps of <= 3 terms per row, against enumeration (a few ulp each).
    np.testing.assert_allclose(model.log_pseudo_likelihood(X), expected, rtol=1e-12)


def test_gibbs_sample_warns_when_its_chains_do_not_mix():
    # #24 item 5: a strong symmetric ferromagnet (8x8, J = 3, fields -J deg / 2): chains from
    # uniform starts settle into the all-0 or the all-1 mode and stay there, so their fraction
    # of non-zero states disagrees across chains and split R-hat is far above 1.1.
    import warnings

    import pytest

    from skmrf import grid_graph
    from skmrf.datasets import make_random_mrf
    from skmrf.exceptions import SamplingWarning
    from skmrf.inference._gibbs import GibbsSampler

    g = grid_graph(8, 8)
    model = DiscreteMRF(g, 2)
    nodes, J = list(g.nodes), 3.0
    model.theta = np.array([-J * g.degree(nodes[c[0]]) / 2 if len(c) == 1 else J for c in model.cliques])
    with pytest.warns(SamplingWarning, match="did not mix in 200 sweeps"):
        model.sample(50, random_state=0)
    weak = make_random_mrf(grid_graph(5, 5), 2, 0.3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        drawn = weak.sample(50, random_state=1)
    # The check only reads the chains: the same draws as one uninterrupted run of the sampler.
    rng = np.random.default_rng(1)
    sampler = GibbsSampler(weak)
    np.testing.assert_array_equal(drawn, sampler.run(sampler.random_states(50, rng), 200, rng))
