"""The binary pairwise MRF in Ising ``{-1, +1}`` coordinates and back.

With ``x = 2 s - 1`` the Ising model ``p(x) ~ exp(sum J_ij x_i x_j + sum h_i x_i)`` is the
package's model over ``s in {0, 1}`` with ``theta_ij = 4 J_ij`` and
``theta_i = 2 h_i - 2 sum_j J_ij``. The MCMC paper states its fast-mixing sets in the Ising
coordinates.
"""

from __future__ import annotations

import numpy as np

__all__ = ["binary_to_ising", "ising_statistics", "ising_to_binary"]


def ising_to_binary(h, J, edges, n_variables):
    """``{-1, +1}`` fields and couplings to the package's ``{0, 1}`` unary and pair parameters.

    With ``x = 2 s - 1``, ``sum J_ij x_i x_j + sum h_i x_i`` equals, up to a
    constant, ``sum 4 J_ij s_i s_j + sum (2 h_i - 2 sum_j J_ij) s_i``.

    Returns
    -------
    theta_unary : ndarray of shape (n_variables,)
    theta_pair : ndarray of shape (n_edges,)
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    row = np.bincount(edges[:, 0], J, n_variables) + np.bincount(edges[:, 1], J, n_variables)
    return 2 * np.asarray(h, dtype=float) - 2 * row, 4 * np.asarray(J, dtype=float)


def binary_to_ising(theta_unary, theta_pair, edges, n_variables):
    """Inverse of :func:`ising_to_binary`: ``J = theta_ij / 4``, ``h_i = theta_i / 2 + sum_j theta_ij / 4``."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    J = np.asarray(theta_pair, dtype=float) / 4
    row = np.bincount(edges[:, 0], J, n_variables) + np.bincount(edges[:, 1], J, n_variables)
    return np.asarray(theta_unary, dtype=float) / 2 + row, J


def ising_statistics(mean_s, mean_ss, edges):
    """Mean ``{-1, +1}`` statistics ``(E x_i, E x_i x_j)`` from ``E s_i`` and ``E s_i s_j``."""
    i, j = edges[:, 0], edges[:, 1]
    return np.concatenate([2 * mean_s - 1, 4 * mean_ss - 2 * mean_s[i] - 2 * mean_s[j] + 1])
