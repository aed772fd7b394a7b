"""The agreement model's conversions (MLE-induced likelihood paper, Section 2.2), checked
against the agreement model written out state by state."""

import itertools

import numpy as np
import pytest

from skmrf.model import DiscreteMRF, agreement_to_mrf, mrf_to_agreement

CYCLE = [(0, 1), (1, 2), (2, 3), (3, 0)]  # the last edge given against the sorted order


def _agreement_log_prob(theta, edges, X):
    """``log p(x)`` of the agreement model by enumeration (no package code)."""
    logp = np.array([sum(np.log(t if x[u] == x[v] else 1 - t) for t, (u, v) in zip(theta, edges)) for x in X])
    return logp - np.log(np.exp(logp).sum())


@pytest.mark.parametrize("seed", range(5))
def test_round_trip_and_distribution(seed):
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0.02, 0.98, len(CYCLE))
    model = agreement_to_mrf(theta, CYCLE, n_variables=4, edges=CYCLE)
    X = np.array(list(itertools.product([0, 1], repeat=4)))
    # 1e-12: sums of four logs and one log-sum-exp over 16 states (|log p| < 20: ~20 ops x 1e-16 x 20).
    np.testing.assert_allclose(model.log_prob(X), _agreement_log_prob(theta, CYCLE, X), atol=1e-12)
    # 1e-12: a logit and its inverse, closed forms; theta >= 0.02 keeps 1 - theta well conditioned (~50 ulp).
    np.testing.assert_allclose(mrf_to_agreement(model, edges=CYCLE), theta, rtol=1e-12)
    # And the other way: a DiscreteMRF built from couplings only, converted and back (same closed forms).
    back = agreement_to_mrf(mrf_to_agreement(model, edges=CYCLE), CYCLE, n_variables=4, edges=CYCLE)
    np.testing.assert_allclose(back.theta, model.theta, atol=1e-12)


def test_default_edge_order_is_the_sorted_graph_edges():
    theta = np.array([0.6, 0.7, 0.8, 0.9])
    model = agreement_to_mrf(theta, CYCLE, n_variables=4)
    assert model.graph.edges == [(0, 1), (0, 3), (1, 2), (2, 3)]
    # 1e-12: a logit and its inverse, closed forms (a few ulp).
    np.testing.assert_allclose(mrf_to_agreement(model), theta, rtol=1e-12)


def test_a_model_with_node_potentials_is_refused_by_variable():
    model = agreement_to_mrf([0.6, 0.7, 0.8, 0.9], CYCLE, n_variables=4)
    model.theta[2] += 0.5  # variable 2's unary parameter
    with pytest.raises(ValueError, match="Variable 2 has unary parameter"):
        mrf_to_agreement(model)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, np.nan])
def test_parameters_outside_the_open_interval_are_refused(bad):
    with pytest.raises(ValueError, match=r"theta\[2\].*outside the open interval"):
        agreement_to_mrf([0.6, 0.7, bad, 0.9], CYCLE, n_variables=4)


def test_wrong_number_of_parameters_and_non_binary_models():
    with pytest.raises(ValueError, match="4 entries"):
        agreement_to_mrf([0.6, 0.7], CYCLE, n_variables=4)
    with pytest.raises(ValueError, match="binary"):
        mrf_to_agreement(DiscreteMRF(CYCLE, 3, n_variables=4))
    with pytest.raises(ValueError, match="pairwise"):
        mrf_to_agreement(DiscreteMRF([(0, 1, 2)], 2, n_variables=3))
