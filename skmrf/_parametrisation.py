"""The log-linear parametrisation normalised with respect to zero: blocks, tables, codes.

For a clique ``c`` with states ``K_i`` per variable, the potential block holds one parameter
per joint assignment in which every variable of ``c`` is non-zero (shape
``(K_i - 1 for i in c)``); its feature is the indicator of that assignment. Any positive
distribution that factorises on the graph has exactly one such representation (LAP paper,
Theorem 2), which is what makes reading parameters off an auxiliary model valid. For binary
variables,

    log p(x) = sum_i t_i x_i + sum_ij t_ij x_i x_j + ... - log Z.

Each clique also has a *full table* of shape ``(K_i for i in c)``, with zeros wherever a
variable is in state 0, stored C-order in one flat array; data, energies and marginals are
all handled through codes into that array (:class:`CliqueLayout`), so no computation loops
over rows.
"""

from __future__ import annotations

import itertools
import math
from functools import cached_property

import numpy as np

from ._data import c_order_strides, count_joint_states, encode_rows, transposed_states
from ._utils._budgets import LAYOUT_CHUNK_ENTRIES as CHUNK_ENTRIES

__all__ = ["CHUNK_ENTRIES", "CliqueLayout"]


class CliqueLayout:
    """Index bookkeeping for the parameter blocks and full tables of a set of cliques.

    Parameters
    ----------
    cliques : sequence of tuple of int
        The potential blocks, in parameter order.
    n_states : array-like of int
        States of every variable.

    Attributes
    ----------
    cliques : tuple of tuple of int
    n_states : ndarray of int64
    table_shapes, block_shapes : list of tuple
        ``(K_i for i in c)`` and ``(K_i - 1 for i in c)`` per clique.
    table_sizes, block_sizes : ndarray of int64
    table_offsets, block_offsets : ndarray of int64, shape (n_cliques + 1,)
        Where each clique's full table (block) starts in the flat tables (``theta``).
    n_params, n_table : int
        Lengths of ``theta`` and of the flat full tables.
    theta_pos : ndarray of int64, shape (n_params,)
        Position of every parameter in the flat full tables.
    groups : list of tuple
        Cliques grouped by size for vectorised coding: ``(members, variables, strides,
        table offsets)``, each an array with one row per clique.
    """

    def __init__(self, cliques, n_states):
        self.cliques = tuple(tuple(int(i) for i in c) for c in cliques)
        self.n_states = np.asarray(n_states, dtype=np.int64)
        k = self.n_states
        kl = k.tolist()
        self.table_shapes = [tuple(kl[i] for i in c) for c in self.cliques]
        self.block_shapes = [tuple(s - 1 for s in ts) for ts in self.table_shapes]
        self.table_sizes = np.array([math.prod(s) for s in self.table_shapes], dtype=np.int64)
        self.block_sizes = np.array([math.prod(s) for s in self.block_shapes], dtype=np.int64)
        self.table_offsets = np.concatenate([[0], np.cumsum(self.table_sizes)])
        self.block_offsets = np.concatenate([[0], np.cumsum(self.block_sizes)])
        self.n_params = int(self.block_offsets[-1])
        self.n_table = int(self.table_offsets[-1])
        self.groups = []
        sizes = np.array([len(c) for c in self.cliques])
        for s in np.unique(sizes):
            members = np.flatnonzero(sizes == s)
            var = np.array([self.cliques[m] for m in members], dtype=np.int64)
            self.groups.append((members, var, c_order_strides(k[var]), self.table_offsets[members]))

    @cached_property
    def theta_pos(self):
        """Position in the flat full tables of every parameter, built once on first use (8 bytes per
        parameter that a fit which never maps ``theta`` to the tables, like the one-hot
        pseudo-likelihood, does not hold)."""
        theta_pos = np.empty(self.n_params, dtype=np.int64)
        by_shape = {}
        for c, ts in enumerate(self.table_shapes):
            by_shape.setdefault(ts, []).append(c)
        for ts, members in by_shape.items():
            members = np.array(members)
            idx = np.arange(int(np.prod(ts))).reshape(ts)
            pattern = idx[(slice(1, None),) * len(ts)].ravel()
            dest = self.block_offsets[members][:, None] + np.arange(pattern.size)
            theta_pos[dest] = self.table_offsets[members][:, None] + pattern
        return theta_pos

    def full_tables(self, theta):
        """Flat full tables (zeros where a state is 0) from the parameter vector."""
        full = np.zeros(self.n_table)
        full[self.theta_pos] = theta
        return full

    def normalise(self, full):
        """The parameters ``theta`` of arbitrary (finite) log-potential tables of the cliques.

        ``full`` holds one table per clique (flat, as :meth:`full_tables` lays them out) with
        any entries; the model ``sum_c full_c(x_c)`` equals the one of the returned ``theta``
        up to a constant (the normalisation with respect to zero, LAP paper Theorem 2). Each
        table is split by Moebius inversion: its part on a sub-clique ``S`` at an assignment
        with every variable of ``S`` non-zero is
        ``sum_{U subset of S} (-1)^{|S \\ U|} T(x_U, 0_{c \\ U})``.
        ``normalise(full_tables(theta)) == theta``.
        """
        full = np.asarray(full, dtype=np.float64)
        index = {c: k for k, c in enumerate(self.cliques)}
        theta = np.zeros(self.n_params)
        for k, c in enumerate(self.cliques):
            T = full[self.table_offsets[k] : self.table_offsets[k + 1]].reshape(self.table_shapes[k])
            if not T.any():
                continue
            for r in range(1, len(c) + 1):
                for S in itertools.combinations(range(len(c)), r):
                    b = index[tuple(c[p] for p in S)]
                    part = sum(
                        (-1) ** (r - u) * T[_corner(len(c), S, U)]
                        for u in range(r + 1)
                        for U in itertools.combinations(S, u)
                    )
                    lo, hi = self.block_offsets[b], self.block_offsets[b + 1]
                    theta[lo:hi] += np.broadcast_to(part, self.block_shapes[b]).ravel()
        return theta

    def split_unary(self, theta):
        """``(theta_unary, theta_interaction)``: ``theta`` split into its single-variable blocks
        and the rest (zeros elsewhere in each), with ``theta_unary + theta_interaction == theta``."""
        theta = np.asarray(theta, dtype=np.float64)
        unary = np.repeat(np.array([len(c) == 1 for c in self.cliques]), self.block_sizes)
        theta_unary = np.where(unary, theta, 0.0)
        return theta_unary, theta - theta_unary

    def block(self, theta, k):
        """The block of clique number ``k`` in ``theta`` (a view, axes in clique order)."""
        return theta[self.block_offsets[k] : self.block_offsets[k + 1]].reshape(self.block_shapes[k])

    def iter_codes(self, X):
        """Yield ``(members, codes)``: codes of X's rows into the flat tables.

        ``codes`` has shape ``(n_rows, len(members))``; chunked over cliques.
        """
        n = max(X.shape[0], 1)
        for members, var, strides, offsets in self.groups:
            step = max(1, CHUNK_ENTRIES // (n * var.shape[1]))
            for a in range(0, len(members), step):
                b = slice(a, a + step)
                yield members[b], encode_rows(X, var[b], strides[b]) + offsets[b]

    def table_counts(self, X, weight=None):
        """Counts of every joint state of every clique (flat tables): int64, or with ``weight``
        (one per row) the sums of the rows' weights in float64."""
        X = np.asarray(X)
        XT = transposed_states(X, int(self.n_states.max(initial=2)))
        dtype = np.int64 if weight is None else np.float64
        counts = np.zeros(self.n_table, dtype=dtype)
        for members, var, strides, offsets in self.groups:
            sizes = self.table_sizes[members]
            per = count_joint_states(XT, var, strides, int(sizes.max()), weight=weight)
            keep = np.arange(per.shape[1])[None, :] < sizes[:, None]
            dest = offsets[:, None] + np.arange(per.shape[1])[None, :]
            counts[dest[keep]] = per[keep].astype(dtype)
        return counts

    def energy(self, X, theta):
        """``sum_c theta_c . phi_c(x)`` for every row of X."""
        full = self.full_tables(theta)
        out = np.zeros(X.shape[0])
        for _, codes in self.iter_codes(X):
            out += full[codes].sum(axis=1)
        return out


def _corner(m, S, U):
    """Index of ``T(x_U, 0_{c \\ U})`` for the axes of ``S`` (length-1 axes for ``S \\ U``)."""
    return tuple(slice(1, None) if p in U else slice(0, 1) if p in S else 0 for p in range(m))
