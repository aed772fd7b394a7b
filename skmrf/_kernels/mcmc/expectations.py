"""Exact expectations that replace the chains of MCMC maximum likelihood: references for tests
and benchmarks (the kernels take them as their ``expectation`` argument)."""

from __future__ import annotations

import numpy as np

from ...model._ising import ising_statistics
from .chains import binary_theta, pairwise_positions

__all__ = ["ExactFeatures", "ExactIsingExpectation", "ExactSampleIsingExpectation"]


class ExactFeatures:
    """``theta -> (E_theta[phi(x)], ones)`` by the junction tree: for :func:`.adaptive.fit_adaptive`."""

    def __init__(self, model):
        self.model = model

    def __call__(self, theta):
        self.model.theta = theta
        return self.model.expected_statistics(), np.ones(len(theta))


class ExactIsingExpectation:
    """``phi -> E_phi[t(x)]`` in ``{-1, +1}`` coordinates by the junction tree: for :func:`.theory.fit_theory`."""

    def __init__(self, model):
        self.model = model
        self.positions = pairwise_positions(model.layout)

    def _set(self, phi):
        self.model.theta = binary_theta(phi, self.model.n_params, self.positions)

    def __call__(self, phi):
        self._set(phi)
        mu = self.model.expected_statistics()
        node_pos, edge_pos, edges = self.positions
        return ising_statistics(mu[node_pos], mu[edge_pos], edges)


class ExactSampleIsingExpectation(ExactIsingExpectation):
    """``E_phi[t(x)]`` estimated from ``n_samples`` exact junction-tree draws (the theory's ``v = infinity``)."""

    def __init__(self, model, n_samples, rng):
        super().__init__(model)
        self.n_samples, self.rng = n_samples, rng

    def __call__(self, phi):
        self._set(phi)
        S = self.model.sample(self.n_samples, self.rng, method="exact").astype(np.float64)
        edges = self.positions.edges
        return ising_statistics(S.mean(axis=0), (S[:, edges[:, 0]] * S[:, edges[:, 1]]).mean(axis=0), edges)
