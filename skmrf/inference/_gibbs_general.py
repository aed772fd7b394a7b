"""Chromatic Gibbs sweeps for any numbers of states and cliques of any size."""

from __future__ import annotations

import numpy as np

from ._conditionals import ConditionalPlan

__all__ = ["GeneralGibbsKernel"]


class GeneralGibbsKernel:
    """Chromatic Gibbs sweeps for any numbers of states and cliques of any size.

    States are int64 arrays of shape ``(n_chains, n_variables)`` (the internal layout is the
    external one). Each colour class is redrawn from its full conditionals, gathered from
    every clique's table entries for each candidate state (:class:`ConditionalPlan`).

    Parameters
    ----------
    layout : skmrf._parametrisation.CliqueLayout
    theta : ndarray of shape (n_params,)
    colours : list of ndarray
        Colour classes (a proper colouring of the graph).
    """

    def __init__(self, layout, theta, colours):
        self.layout = layout
        self.colours = colours
        self.full = layout.full_tables(theta)
        theta_unary, self.theta_interaction = layout.split_unary(theta)
        self.full_unary = layout.full_tables(theta_unary)
        self.full_interaction = layout.full_tables(self.theta_interaction)
        self.plans = [ConditionalPlan(layout, u) for u in colours]

    def to_internal(self, states):
        """A new int64 copy of ``(n_chains, n_variables)`` states."""
        return np.array(states, dtype=np.int64)

    def to_external(self, S):
        return S

    def interaction_energy(self, S):
        """Energy of the cliques of two or more variables for every chain, float64."""
        return self.layout.energy(S, self.theta_interaction)

    def run(self, S, n_sweeps, rng, beta=1.0):
        """Run ``n_sweeps`` sweeps in place on ``S``; ``beta`` scales the interaction terms."""
        full = self.full if beta == 1.0 else self.full_unary + beta * self.full_interaction
        for _ in range(n_sweeps):
            for u, plan in zip(self.colours, self.plans):
                S[:, u] = plan.draw(full, S, rng)
        return S
