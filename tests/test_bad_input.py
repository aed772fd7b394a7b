"""Bad input and silent wrong answers: every class of case raises or warns, naming the culprit."""

import warnings

import numpy as np
import pytest

from skmrf import LAPEstimator, MCMCMaxLikelihood, PseudoLikelihoodEstimator, grid_graph
from skmrf.datasets import sample_random_mrf
from skmrf.estimators._base import EstimatedLikelihoodWarning


# -- score never changes meaning silently (#10, item 1) --------------------------------------
@pytest.fixture(scope="module")
def grid_data():
    X, _ = sample_random_mrf(grid_graph(5, 5), 300, random_state=0)
    return X


# A budget of 2000 bytes refuses the junction tree of a 5x5 grid (a calibration needs ~8 kB),
# standing in for a graph too wide for the default 2 GiB.
NARROW = 2000


@pytest.mark.parametrize(
    "make",
    [
        lambda: LAPEstimator(grid_graph(5, 5), max_bytes=NARROW, random_state=0),
        lambda: PseudoLikelihoodEstimator(grid_graph(5, 5), max_bytes=NARROW, random_state=0),
        lambda: MCMCMaxLikelihood(
            grid_graph(5, 5), n_iter=5, n_samples=50, n_sweeps=2, max_bytes=NARROW, random_state=0
        ),
    ],
    ids=["lap", "pl", "mcmc"],
)
def test_auto_score_is_a_likelihood_estimate_not_a_pseudo_likelihood(make, grid_data):
    X = grid_data
    est = make().fit(X)
    assert est.score_method_ == "ais"
    exact_log_z = est.model_.log_partition()  # the default budget fits a 5x5 grid
    # AIS with 100 chains x 1000 steps on 25 variables: the error is a few standard errors at most.
    assert abs(est.log_partition_ - exact_log_z) < 5 * est.log_partition_std_ + 0.05
    exact = np.mean(est.model_.log_prob(X))
    with pytest.warns(EstimatedLikelihoodWarning, match="annealed importance sampling"):
        score = est.score(X)
    assert score == pytest.approx(exact, abs=5 * est.log_partition_std_ + 0.05)
    # It is the likelihood, not the pseudo-likelihood (0.38 nats apart here): much closer to the first.
    assert abs(score - exact) < abs(score - np.mean(est.model_.log_pseudo_likelihood(X))) / 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", EstimatedLikelihoodWarning)  # only the first score warns
        assert est.score(X) == score
    # Seeded: the same random_state gives the same estimate.
    assert make().fit(X).log_partition_ == est.log_partition_


def test_pseudo_score_only_when_asked_for_by_name(grid_data):
    est = LAPEstimator(grid_graph(5, 5), max_bytes=NARROW, score_method="pseudo").fit(grid_data)
    assert est.score_method_ == "pseudo" and est.log_partition_ is None
    np.testing.assert_allclose(est.score_samples(grid_data), est.model_.log_pseudo_likelihood(grid_data))


def test_exact_score_method_refuses_a_wide_graph(grid_data):
    with pytest.raises(ValueError, match="treewidth"):
        LAPEstimator(grid_graph(5, 5), max_bytes=NARROW, score_method="exact").fit(grid_data)
