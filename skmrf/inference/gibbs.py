"""Chromatic Gibbs sampling, vectorised over chains and colour classes.

The variable graph is coloured (DSATUR, which uses two colours on bipartite
graphs such as grids); variables of one colour are conditionally independent
given the others, so each colour class is resampled at once in every chain.

Binary pairwise models take a fast path: the conditional log-odds of a colour
class is one sparse-times-dense product ``W[U] @ S + t[U]``. Other models use
the general path, which gathers every clique's table entries for each
candidate state of the updated variable.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ..model import ConditionalPlan

__all__ = ["GibbsSampler", "colour_classes"]


def colour_classes(graph) -> list:
    """Colour classes (arrays of variables) of a proper colouring of ``graph``."""
    colouring = nx.coloring.greedy_color(graph.to_networkx(), strategy="DSATUR")
    n_col = max(colouring.values(), default=-1) + 1
    classes = [[] for _ in range(n_col)]
    for v, c in colouring.items():
        classes[c].append(v)
    return [np.array(sorted(c), dtype=np.int64) for c in classes]


class GibbsSampler:
    """Chromatic Gibbs sampler for a :class:`~skmrf.model.DiscreteMRF`.

    Parameters
    ----------
    model : DiscreteMRF
        The model; its parameters are read once, at construction.

    Attributes
    ----------
    colours : list of ndarray
        The colour classes, updated in this order in each sweep.
    """

    def __init__(self, model):
        lay = model._layout
        self.n_states = model.n_states
        self.colours = colour_classes(model.graph)
        self.full = lay.full_tables(model.theta)
        self.binary_pairwise = bool(np.all(self.n_states == 2)) and all(len(c) <= 2 for c in lay.cliques)
        if self.binary_pairwise:
            self._init_binary(lay, model.theta)
        else:
            self._init_general(lay)

    def _init_binary(self, lay, theta):
        n = len(self.n_states)
        sizes = np.array([len(c) for c in lay.cliques])
        pair = np.flatnonzero(sizes == 2)
        uni = np.flatnonzero(sizes == 1)
        bias = np.zeros(n)
        bias[[lay.cliques[k][0] for k in uni]] = theta[lay.block_offsets[uni]]
        i = np.array([lay.cliques[k][0] for k in pair], dtype=np.int64)
        j = np.array([lay.cliques[k][1] for k in pair], dtype=np.int64)
        w = theta[lay.block_offsets[pair]]
        W = sp.csr_matrix((np.r_[w, w], (np.r_[i, j], np.r_[j, i])), shape=(n, n))
        self._rows = [W[u] for u in self.colours]
        self._bias = [bias[u][:, None] for u in self.colours]

    def _init_general(self, lay):
        self._plans = [ConditionalPlan(lay, u) for u in self.colours]

    def random_states(self, n_chains, rng) -> np.ndarray:
        """Uniformly random states, shape ``(n_chains, n_variables)``."""
        return np.floor(rng.random((n_chains, len(self.n_states))) * self.n_states).astype(np.int64)

    def run(self, states, n_sweeps, rng) -> np.ndarray:
        """Run ``n_sweeps`` sweeps of every chain; returns the new states.

        Parameters
        ----------
        states : ndarray of shape (n_chains, n_variables)
            Start states (not modified).
        n_sweeps : int
        rng : numpy.random.Generator

        Returns
        -------
        ndarray of shape (n_chains, n_variables), dtype int64
        """
        if self.binary_pairwise:
            s = np.ascontiguousarray(states.T, dtype=np.float64)
            for _ in range(n_sweeps):
                for u, rows, bias in zip(self.colours, self._rows, self._bias):
                    field = rows @ s + bias
                    # x = 1 with probability sigmoid(field) <=> logit(U) < field.
                    r = rng.random(field.shape)
                    s[u] = np.log(r) - np.log1p(-r) < field
            return s.T.astype(np.int64)
        x = np.array(states, dtype=np.int64)
        for _ in range(n_sweeps):
            for u, plan in zip(self.colours, self._plans):
                x[:, u] = plan.draw(self.full, x, rng)
        return x
