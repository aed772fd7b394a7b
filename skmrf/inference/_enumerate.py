"""Exact inference by enumeration for small models, batched over parameter vectors.

Every joint state is listed once and the 0/1 feature matrix ``F`` (states x
parameters) is built once, so that for a batch of parameter vectors ``Theta``
(batch x parameters) the energies are one matrix product ``Theta @ F.T``. This
is the kernel LAP uses for many same-shaped auxiliary problems, and the
independent brute-force reference the tests check the junction tree against.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from .._parametrisation import CliqueLayout

__all__ = ["all_states", "Enumerator", "MAX_ENUMERATION_STATES"]

#: Largest number of joint states enumerated before refusing.
MAX_ENUMERATION_STATES = 1 << 22


def all_states(n_states) -> np.ndarray:
    """Every joint state of variables with ``n_states`` states, C-order rows."""
    n_states = tuple(int(k) for k in n_states)
    total = int(np.prod(n_states, dtype=np.float64)) if n_states else 1
    if total > MAX_ENUMERATION_STATES:
        raise ValueError(
            f"Enumeration of {total:,} joint states (over {len(n_states)} variables) "
            f"exceeds the limit of {MAX_ENUMERATION_STATES:,}; use the junction tree."
        )
    grids = np.indices(n_states).reshape(len(n_states), -1).T
    return np.ascontiguousarray(grids, dtype=np.int64)


class Enumerator:
    """Brute-force inference for a small log-linear model.

    Parameters
    ----------
    cliques : sequence of tuple of int
        Potential blocks (as in :class:`skmrf.model.DiscreteMRF`).
    n_states : array-like of int
        States per variable.

    Attributes
    ----------
    states : ndarray of shape (n_configs, n_variables)
    features : ndarray of shape (n_configs, n_params)
        The 0/1 feature matrix.
    """

    def __init__(self, cliques, n_states):
        self.layout = CliqueLayout(cliques, n_states)
        self.states = all_states(self.layout.n_states)
        n = self.states.shape[0]
        cols = np.concatenate([codes for _, codes in self.layout.iter_codes(self.states)], axis=1)
        full = sp.csr_matrix(
            (np.ones(cols.size), (np.repeat(np.arange(n), cols.shape[1]), cols.ravel())),
            shape=(n, self.layout.n_table),
        )
        self.features = full[:, self.layout.theta_pos].toarray()

    def energies(self, theta):
        """Unnormalised log-probabilities, shape ``(batch, n_configs)``."""
        return np.atleast_2d(theta) @ self.features.T

    def log_partition(self, theta):
        """``log Z`` for each parameter vector of the batch, shape ``(batch,)``."""
        return logsumexp(self.energies(theta), axis=1)

    def probabilities(self, theta):
        """Joint distribution over :attr:`states`, shape ``(batch, n_configs)``."""
        e = self.energies(theta)
        return np.exp(e - logsumexp(e, axis=1, keepdims=True))

    def expected_statistics(self, theta):
        """``E[phi(x)]`` for each parameter vector, shape ``(batch, n_params)``."""
        return self.probabilities(theta) @ self.features

    def clique_marginals(self, theta):
        """Flat marginal tables of all cliques (``layout`` order), shape ``(batch, n_table)``."""
        p = self.probabilities(theta)
        out = np.zeros((p.shape[0], self.layout.n_table))
        for _, codes in self.layout.iter_codes(self.states):
            for j in range(codes.shape[1]):
                np.add.at(out.T, codes[:, j], p.T)
        return out
