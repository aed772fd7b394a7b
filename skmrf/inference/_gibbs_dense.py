"""Single-site Gibbs sweeps for dense pairwise graphs: each field a sparse one-hot product.

On a complete (or nearly complete) graph every colour class holds one variable, so a sweep
is ``n`` sequential single-site updates, and the field of site ``i``,
``h_i[k] = u_i[k] + beta * sum_j W_ij[k, x_j]``, sums one row of every other site's coupling
table. :class:`DenseFields` computes it for every chain as one product of the chains'
one-hot states (a CSR matrix with ``n`` entries per chain, whose column indices are the
codes ``j * K_max + x_j``, updated in place as the chains move) with a float32 coupling
table laid out as the product wants: rows ``(j, x_j)``, columns ``(i, k)``. It is the
gather-and-sum of the ``n`` rows in compiled code, with no temporary per neighbour. The
conditional is then one ``exp`` of the field shifted by its maximum (so nothing can
underflow, whatever the size of the parameters), a cumulative sum and an inverse-CDF draw
with 24-bit uniforms, as in :class:`~skmrf.inference.CategoricalGibbsKernel`.

Sites are updated ``block`` at a time: one product gives the fields of the block's sites
from the current states of all sites (the product's rows are ``block * K_max`` floats long,
where its inner loop runs faster than at ``K_max``); after each site of the block is drawn,
one gathered row per chain of a precomputed difference table (``old * K_max + new``) brings
the fields of the block's later sites up to date, so every draw sees the current states of
all other sites: exact single-site Gibbs in the kernel's site order.

Cost: the product is ``n * K_max`` float32 additions per site update (the gather-and-sum of
one table row per other site, which exact Gibbs on a complete graph cannot avoid), measured at
about 250-320 ns per update at ``n = 75, K_max = 21`` on one core of the reference machine
(scipy's CSR kernel, about 6e9 floats/s); the draw (one ``exp`` of ``K_max`` floats, their
cumulative sum, the comparison with a uniform) about 60-80 ns more.
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp

from .._utils._budgets import DENSE_MAX_TABLE_BYTES

__all__ = ["DENSE_MAX_TABLE_BYTES", "DenseFields", "uniform_bits24"]

#: Held while a kernel builds its tables, so threads running blocks of chains build them once.
_TABLES_LOCK = threading.Lock()


def uniform_bits24(raw, n):
    """``n`` uniform 24-bit integers (uint32, below ``2^24``) from ``raw``'s 64-bit output, two per draw.

    ``u / 2^24`` is a uniform on ``[0, 1)`` resolved to ``2^-24``, as
    ``Generator.random(dtype=float32)`` makes it, without its per-value overhead.
    """
    u = raw.random_raw((n + 1) // 2).view(np.uint32)[:n]
    np.right_shift(u, 8, out=u)
    return u


class DenseFields:
    """Sequential Gibbs sweeps of a pairwise model with every field computed from all sites.

    States are the internal ``(n_variables, n_chains)`` small-int array of
    :class:`~skmrf.inference.CategoricalGibbsKernel`; sites are updated in its row order.

    Parameters
    ----------
    unary : ndarray of shape (n_variables, K_max)
        Log-potentials in internal order, ``-inf`` on the states a site does not have.
    edges : ndarray of shape (n_edges, 2)
        Internal indices ``(a, b)``.
    pair : ndarray of shape (n_edges, K_max, K_max)
        ``pair[e, x_a, x_b]``, zero beyond a site's states.

    Notes
    -----
    Cost per site update: ``n * K_max`` float32 additions (the product), ``O(K_max)`` for the
    draw and ``O(block * K_max)`` for the in-block update; memory: the tables, ``4 (n K_max)^2``
    bytes plus ``2 (block - 1) K_max^3 n`` bytes of differences (4 MiB at ``n = 75``, 11 MiB at
    ``n = 200``, ``K_max = 21``), and ``4 n`` bytes of codes per chain. The field is summed in
    float32 (``n`` terms: a relative rounding of about ``n * 2^-24`` on each log-potential sum,
    far below Monte-Carlo error).
    """

    #: Floats per row of the block product (``block * K_max``), read at construction. Measured at
    #: ``K = 21``, 4096 chains, one sweep, CPU time, load average 11 on 2 cores (one run, the
    #: variants interleaved): updates/s with blocks of 2, 3, 4, 6, 8 sites: 2.05, 1.83, 2.21, 2.14,
    #: 2.23e6 at ``n = 75``; 0.83, -, 0.98, 0.89, 0.92e6 at ``n = 200``.
    block_floats = 96

    def __init__(self, unary, edges, pair):
        n, kmax = unary.shape
        self.n, self.kmax = n, kmax
        self.unary_t = np.ascontiguousarray(unary.T, dtype=np.float32)  # (K_max, n): column i is site i's
        self.block = b = max(1, min(n, self.block_floats // kmax))
        self.starts = list(range(0, n, b))
        self.offsets = np.arange(n, dtype=np.int32) * kmax
        self._source = (np.asarray(edges, dtype=np.int64).reshape(-1, 2), pair)
        self._blocks = None

    def _tables(self):
        """Every block's tables (:meth:`_block_tables`), built at the first sweep (so a kernel sent to
        a worker process travels without them) and kept."""
        with _TABLES_LOCK:
            if self._blocks is None:
                edges, pair = self._source
                pair = np.asarray(pair, dtype=np.float32).reshape(-1, self.kmax, self.kmax)
                self._blocks = [self._block_tables(a0, min(self.n, a0 + self.block), edges, pair) for a0 in self.starts]
        return self._blocks

    def _block_tables(self, a0, a1, edges, pair):
        """The block's tables ``(T, D)``. ``T`` ``(n K, nb K)``: row ``(j, x)``, column ``(s, k)`` holds
        ``W_ij[k, x]`` for ``i = a0 + s`` (zero for ``j = i``), so the one-hot states times ``T`` are the
        pair fields of the block's sites. ``D[s]`` ``(K^2, (nb - s - 1) K)``, ``s < nb - 1``: row
        ``old * K + new`` is the change of the fields of the block's later sites when site ``a0 + s``
        moves from ``old`` to ``new`` (zero when ``old == new``)."""
        n, kmax, nb = self.n, self.kmax, a1 - a0
        T = np.zeros((n, kmax, nb, kmax), dtype=np.float32)  # [j, x_j, s, k]
        for site, other, flip in ((0, 1, True), (1, 0, False)):
            e = np.flatnonzero((edges[:, site] >= a0) & (edges[:, site] < a1))
            w = pair[e]  # [e, x_a, x_b]; the site's state is the column of T
            T[edges[e, other], :, edges[e, site] - a0, :] = w.transpose(0, 2, 1) if flip else w
        D = []
        for s in range(nb - 1):
            rest = T[a0 + s, :, s + 1 :, :].reshape(kmax, -1)  # [x_s, (t, k)], t > s
            D.append(np.ascontiguousarray((rest[None, :, :] - rest[:, None, :]).reshape(kmax * kmax, -1)))
        return T.reshape(n * kmax, nb * kmax), D

    def _one_hot(self, S):
        """The chains' one-hot states as a CSR matrix ``(n_chains, n K_max)`` (float32 ones) and its
        codes ``(n_chains, n)``: a view of the matrix's column indices, updated in place as chains move."""
        n, m = self.n, S.shape[1]
        codes = np.empty((m, n), dtype=np.int32)
        np.add(S.T, self.offsets, out=codes)
        X = sp.csr_array(
            (np.ones(m * n, dtype=np.float32), codes.reshape(-1), np.arange(0, m * n + 1, n, dtype=np.int32)),
            shape=(m, n * self.kmax),
        )
        return X, X.indices.reshape(m, n)  # the matrix's own indices, whatever their dtype

    def _logits(self, h, i, beta, out):
        """Logits ``(K_max, n_chains)`` of site ``i`` into ``out``, from its pair fields ``h`` ``(n_chains, K_max)``."""
        if beta != 1.0:
            np.multiply(h.T, np.float32(beta), out=out)
            out += self.unary_t[:, i, None]
        else:
            np.add(h.T, self.unary_t[:, i, None], out=out)
        return out

    def _draw(self, h, i, beta, raw, work, out):
        """New states of site ``i`` for every chain into ``out``: inverse CDF of ``exp(logits - max)``,
        one 24-bit uniform per chain."""
        cdf, top, t, below = work
        kmax, m = cdf.shape
        self._logits(h, i, beta, out=cdf)
        np.maximum.reduce(cdf, axis=0, out=top)
        np.subtract(cdf, top, out=cdf)
        np.exp(cdf, out=cdf)
        for k in range(1, kmax):  # cumulative sum over the states, one contiguous row at a time
            np.add(cdf[k], cdf[k - 1], out=cdf[k])
        np.copyto(t, uniform_bits24(raw, m), casting="unsafe")  # exact: below 2^24
        np.multiply(cdf[kmax - 1], np.float32(1.0 / (1 << 24)), out=top)
        np.multiply(t, top, out=t)
        np.less_equal(cdf[: kmax - 1], t, out=below)
        np.sum(below, axis=0, dtype=out.dtype, out=out)

    def run(self, S, n_sweeps, rng, beta=1.0):
        """Run ``n_sweeps`` sweeps in place on internal states ``S``; ``beta`` scales the pair terms.

        Per block: one product gives the pair fields of its sites from the current states of all
        sites; after each of its sites is drawn, one gathered row of ``D`` per chain brings the
        fields of the block's later sites up to date.
        """
        m, kmax = S.shape[1], self.kmax
        if m == 0 or kmax < 2:
            return S
        blocks = self._tables()
        X, codes = self._one_hot(S)
        work = (
            np.empty((kmax, m), dtype=np.float32),
            np.empty(m, dtype=np.float32),
            np.empty(m, dtype=np.float32),
            np.empty((kmax - 1, m), dtype=bool),
        )
        move = np.empty(m, dtype=np.intp)
        delta = np.empty(m * max(1, self.block - 1) * kmax, dtype=np.float32)
        raw = rng.bit_generator
        for _ in range(n_sweeps):
            for a0, (T, D) in zip(self.starts, blocks):
                G = X @ T  # (chains, nb K_max): the block's pair fields
                for s in range(len(D) + 1):
                    x = S[a0 + s]
                    np.multiply(x, kmax, out=move, dtype=move.dtype)  # old row of D[s]; intp: 20 * 21 > 255
                    self._draw(G[:, s * kmax : (s + 1) * kmax], a0 + s, beta, raw, work, out=x)
                    np.add(x, self.offsets[a0 + s], out=codes[:, a0 + s], casting="unsafe")
                    if s < len(D):
                        np.add(move, x, out=move)
                        d = delta[: m * D[s].shape[1]].reshape(m, -1)
                        np.take(D[s], move, axis=0, out=d, mode="clip")  # in range by construction
                        G[:, (s + 1) * kmax :] += d
        return S

    def conditional_log_probs(self, S, sites, beta=1.0):
        """``log p(x_i = k | x_-i)`` of internal ``sites`` for every chain, ``(len(sites), n_chains, K_max)``."""
        m, kmax = S.shape[1], self.kmax
        blocks = self._tables()
        X, _ = self._one_hot(S)
        out = np.empty((len(sites), m, kmax))
        logits = np.empty((kmax, m), dtype=np.float32)
        for r, i in enumerate(sites):
            blk, s = divmod(int(i), self.block)
            h = X @ blocks[blk][0][:, s * kmax : (s + 1) * kmax]
            lg = self._logits(h, int(i), beta, out=logits).T.astype(np.float64)
            lg -= lg.max(axis=1, keepdims=True)
            with np.errstate(divide="ignore"):
                out[r] = lg - np.log(np.exp(lg).sum(axis=1, keepdims=True))
        return out
