"""Chromatic Gibbs sweeps for binary pairwise models (the fast path)."""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

__all__ = ["BinaryGibbsKernel"]

_TWO24 = np.float32(1 << 24)


class BinaryGibbsKernel:
    """Chromatic Gibbs sweeps on ``{0, 1}`` states stored transposed and colour-sorted.

    States are a float32 array of shape ``(n_variables, n_chains)`` whose rows
    are permuted so that every colour class is a contiguous block of rows; a
    colour update is then one sparse product into a preallocated buffer, one
    ``exp``, one uniform draw and one comparison written straight into the
    state rows (no gathers, no scatters). ``x = 1`` with probability
    ``sigmoid(f)``, i.e. when ``u * (1 + exp(-f)) < 1`` for ``u`` uniform on
    ``[0, 1)`` (24-bit, from the generator's raw 64-bit output).

    Parameters
    ----------
    theta_unary : ndarray of shape (n_variables,)
    theta_pair : ndarray of shape (n_edges,)
        ``{0, 1}`` parameters (package parametrisation).
    edges : ndarray of shape (n_edges, 2)
    colours : list of ndarray
        Colour classes (a proper colouring of the graph).
    """

    def __init__(self, theta_unary, theta_pair, edges, colours):
        n = len(theta_unary)
        self.perm = np.concatenate(colours) if colours else np.zeros(0, dtype=np.int64)
        self.inv = np.empty_like(self.perm)
        self.inv[self.perm] = np.arange(n)
        self.bounds = np.concatenate([[0], np.cumsum([len(c) for c in colours])])
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        pi, pj = self.inv[edges[:, 0]], self.inv[edges[:, 1]]
        # The sparsity pattern once, each stored entry labelled with its index into
        # (theta_pair, theta_pair): new parameters only refill the values (reparametrised).
        labels = np.arange(1, 2 * len(edges) + 1, dtype=np.float64)
        pattern = sp.csr_matrix((labels, (np.r_[pi, pj], np.r_[pj, pi])), shape=(n, n))
        pattern.sort_indices()
        self._pattern = pattern, pattern.data.astype(np.int64) - 1
        self._blocks = {}
        for a, b in zip(self.bounds[:-1], self.bounds[1:]):
            rows = pattern[a:b]
            self._blocks[int(a)] = (b, rows.indices, rows.indptr, rows.data.astype(np.int64) - 1)
        self.layout_positions = None  # (variables, unary positions, pair positions) of from_layout
        self._set_parameters(theta_unary, theta_pair)

    def _set_parameters(self, theta_unary, theta_pair):
        n = len(self.perm)
        values = np.r_[theta_pair, theta_pair].astype(np.float32)
        pattern, slots = self._pattern
        self.W = sp.csr_matrix((values[slots], pattern.indices, pattern.indptr), shape=(n, n))
        self.W.has_sorted_indices = True  # symmetric pair weights in the internal (colour-sorted) order
        bias = np.asarray(theta_unary, dtype=np.float32)[self.perm]
        # Negated, so that one product gives -field, ready for exp.
        # keyed by the first row of each colour block.
        self.neg_rows = {
            a: sp.csr_matrix((-values[slots], indices, indptr), shape=(b - a, n))
            for a, (b, indices, indptr, slots) in self._blocks.items()
        }
        self.neg_bias = {a: -bias[a:b, None] for a, (b, *_) in self._blocks.items()}

    def to_internal(self, states):
        """``(n_chains, n_variables)`` 0/1 states to the internal float32 layout."""
        return np.ascontiguousarray(np.asarray(states).T[self.perm], dtype=np.float32)

    def to_external(self, S):
        return S[self.inv].T.astype(np.int64)

    @classmethod
    def from_layout(cls, layout, theta, colours):
        """The kernel of a binary pairwise model given in the package's parametrisation."""
        sizes = np.array([len(c) for c in layout.cliques])
        pair = np.flatnonzero(sizes == 2)
        uni = np.flatnonzero(sizes == 1)
        variables = np.array([layout.cliques[k][0] for k in uni], dtype=np.int64)
        unary = np.zeros(len(layout.n_states))
        unary[variables] = theta[layout.block_offsets[uni]]
        edges = np.array([layout.cliques[k] for k in pair], dtype=np.int64).reshape(-1, 2)
        kernel = cls(unary, theta[layout.block_offsets[pair]], edges, colours)
        kernel.layout_positions = (variables, layout.block_offsets[uni], layout.block_offsets[pair])
        return kernel

    def reparametrised(self, theta):
        """This kernel (of :meth:`from_layout`) at other parameters ``theta`` of the same layout.

        The colouring, the sparsity pattern and the positions of the parameters are reused; the
        kernel equals ``from_layout(layout, theta, colours)``, and ``self`` is left unchanged.
        """
        variables, unary_pos, pair_pos = self.layout_positions
        unary = np.zeros(len(self.perm))
        unary[variables] = theta[unary_pos]
        kernel = copy.copy(self)
        kernel._set_parameters(unary, theta[pair_pos])
        return kernel

    def interaction_energy(self, S):
        """``sum_(i,j) theta_ij x_i x_j`` of every chain (internal states ``S``), float64."""
        return 0.5 * np.einsum("vc,vc->c", S, self.W @ S, dtype=np.float64)

    def run(self, S, n_sweeps, rng, beta=1.0):
        """Run ``n_sweeps`` sweeps in place on internal states ``S``.

        ``beta`` scales the pair weights (not the unary terms): the chain then
        leaves ``p_beta(x) ~ exp(unary . x + beta * pair_energy(x))`` invariant,
        as annealed importance sampling needs.
        """
        n_chains = S.shape[1]
        spans = [(a, b) for a, b in zip(self.bounds[:-1], self.bounds[1:]) if b > a]
        bufs = [np.empty((b - a, n_chains), dtype=np.float32) for a, b in spans]
        ubuf = np.empty(max((f.size for f in bufs), default=0), dtype=np.float32)
        raw = rng.bit_generator
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(n_sweeps):
                for (a, b), f in zip(spans, bufs):
                    if beta == 1.0:
                        np.add(self.neg_rows[a] @ S, self.neg_bias[a], out=f)  # -field
                    else:
                        np.multiply(self.neg_rows[a] @ S, np.float32(beta), out=f)
                        f += self.neg_bias[a]
                    np.exp(f, out=f)
                    f += 1
                    # 24-bit uniforms u / 2^24 from raw 64-bit draws (two per draw), as
                    # Generator.random(dtype=float32) makes them but without its per-value overhead.
                    u = raw.random_raw((f.size + 1) // 2).view(np.uint32)[: f.size]
                    np.right_shift(u, 8, out=u)
                    uf = ubuf[: f.size].reshape(f.shape)
                    np.copyto(uf, u.reshape(f.shape), casting="unsafe")  # exact: u < 2^24
                    f *= uf
                    np.less(f, _TWO24, out=S[a:b])
        return S
