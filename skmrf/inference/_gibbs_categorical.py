"""Chromatic Gibbs sweeps for pairwise models with any numbers of states (Potts-type)."""

from __future__ import annotations

import numpy as np

from ._gibbs_dense import DENSE_MAX_TABLE_BYTES, DenseFields

__all__ = ["CategoricalGibbsKernel"]

#: Totals of the float32 product below this are recomputed in float64 (see CategoricalGibbsKernel).
_TINY = np.float32(2.0**-64)

#: ``dense="auto"`` takes the dense path when ``K_max`` reaches this, the largest site has at least
#: ``DENSE_MIN_GROUPS`` neighbour groups and at least ``DENSE_MIN_SINGLETONS`` of the colour classes
#: per variable (on a complete graph every class is one variable, so the table path cannot update
#: several sites at once). Measured, CPU time, 1,000 chains, complete graphs, dense / table
#: updates per second (benchmarks/results/gibbs_dense_crossover.txt, load 12 on 2 cores): K = 21:
#: 0.91 at n = 15 (14 groups), 1.03 at n = 20, 1.22 at 30, 1.59 at 75; K = 12: 0.93 at n = 20,
#: 1.24 at 40 (20 groups); K = 8: 0.79 at n = 20, 1.12 at 40 (20 groups); K = 5: 1.05 at n = 40,
#: 1.31 at 75 (25 groups); K = 3: 0.59-1.08 up to n = 40, 1.17 at 75 (19 groups); graphs with
#: half of all pairs as edges, n = 75: 0.41-0.75. Small K on large complete graphs would gain a
#: little from the dense path; the rule keeps them on the table path.
DENSE_MIN_STATES = 8
DENSE_MIN_GROUPS = 20
DENSE_MIN_SINGLETONS = 0.9


class CategoricalGibbsKernel:
    """Chromatic Gibbs sweeps for pairwise models with any numbers of states (Potts-type).

    For a model whose cliques have at most two variables, the full conditional of site ``i``
    is ``p(x_i = k | x_-i) ~ exp(u_i[k] + sum_j W_ij[k, x_j])``: one row of each neighbour's
    coupling table. The kernel groups each site's neighbours ``g`` at a time (the largest
    ``g`` with ``K_max^g <= max_group_rows``, balanced over the largest degree) and stores,
    for every group and every joint state of its neighbours, the row
    ``exp(sum over the group of W_ij[:, x_j] - max)`` in one float32 table (the unary term
    folded into each site's first group; the shift by the row maximum is constant over the
    site's states, so the conditional is unchanged). The unnormalised conditional of a site
    is then the elementwise product of one gathered row per group: no ``exp`` in the sweep.

    States are a small-int array of shape ``(n_variables, n_chains)`` whose rows are
    permuted so that every colour class is a contiguous block of rows (sorted by degree
    within it). A colour class is updated in chunks of sites and chains sized to stay in
    cache: the neighbours' states are gathered as whole rows, combined into each group's
    row code in small-int arithmetic, one ``np.take`` of table rows per group (groups
    beyond a site's own are padded with rows of ones), a running product, one
    transposition to ``(states, site x chain)``, a cumulative sum over the states and an
    inverse-CDF draw with one 24-bit uniform per site and chain (from the generator's raw
    64-bit output): the count ``#{k < K_max - 1 : cdf_k <= u * cdf_(K_max - 1)}`` is
    written straight into the state rows.

    Variables with fewer states than ``K_max`` get zero probability on the missing states
    (``-inf`` logits).

    Dense graphs (complete ones, as direct coupling analysis fits on protein alignments)
    take another path (:class:`~skmrf.inference._gibbs_dense.DenseFields`): their colour
    classes are single variables, a site has ``n - 1`` neighbours and the product of that
    many scaled rows underflows as soon as the couplings are of order one (every site then
    goes through the float64 path). There the field ``u_i + sum_j W_ij[:, x_j]`` of each
    site is summed in float32 by one sparse one-hot product per block of sites and drawn
    from ``exp(field - max)``. It draws the same distribution from another random stream;
    every other graph keeps the table path above, bit for bit.

    Parameters
    ----------
    n_states : array-like of int, shape (n_variables,)
    unary : ndarray of shape (n_variables, K_max)
        Log-potentials ``u_i[k]`` (entries ``k >= K_i`` are ignored).
    edges : ndarray of shape (n_edges, 2)
    pair : ndarray of shape (n_edges, K_max, K_max)
        Log-potential tables ``W_e[x_i, x_j]`` of the edges ``(i, j)`` (entries beyond
        ``K_i`` or ``K_j`` are ignored).
    colours : list of ndarray
        Colour classes (a proper colouring of the graph).
    dense : {"auto", True, False}, default="auto"
        Whether sweeps take the dense path. ``"auto"`` takes it on nearly complete graphs with
        ``K_max >= 8`` and at least 20 neighbour groups per site, where it was measured faster
        (see ``DENSE_MIN_STATES`` in this module), when its table fits in
        ``DENSE_MAX_TABLE_BYTES`` (:mod:`skmrf.inference._gibbs_dense`).

    Attributes
    ----------
    dense : bool
        Whether the dense path is used.
    group : int
        Neighbours per gathered row (``g`` above).
    perm, inv : ndarray of int64
        Internal row of every variable's state is ``inv[variable]``; ``perm`` is the inverse.

    Notes
    -----
    Resolution: the conditional is computed in float32 and drawn with 24-bit uniforms, so
    each probability is resolved to about ``K_max * 2^-24`` (far below Monte-Carlo error).
    Where the product of scaled rows underflows (the groups disagreeing by more than about
    44 nats on every state: total below ``2^-64``) the conditional of those sites and
    chains is recomputed in float64 from the log-potentials, so large parameters stay
    exact; only their speed suffers.

    Cost per site update: one gathered row of ``width`` floats (4, 8 or ``K_max``) and one
    multiply per group, then ``O(K_max)`` contiguous operations. Memory: the table holds
    ``K_max^g x width`` floats per (site, group) (12 MiB at ``K = 3``, 67 MiB at ``K = 21``
    on a 100 x 100 grid), plus the float64 coupling tables. A new ``beta`` (annealing
    changes it at every step) costs three float32 passes over the table, from a float32
    copy of the pair logs kept after the first such call (the size of a second table).
    """

    #: Floats per chunk buffer ``(sites x chains, width)``: a chunk's working set stays in cache.
    chunk_entries = 1 << 17
    #: Largest number of table rows per (site, group): ``K_max^g`` fits a uint8 code.
    max_group_rows = 256

    def __init__(self, n_states, unary, edges, pair, colours, dense="auto"):
        k = np.asarray(n_states, dtype=np.int64)
        n = len(k)
        self.n_states = k
        self.kmax = kmax = int(k.max(initial=1))
        # Row width of the tables: 16 or 32 bytes hit numpy's fast take paths.
        self.width = 4 if kmax <= 4 else 8 if kmax <= 8 else kmax
        self.dtype = np.uint8 if kmax <= 256 else np.uint16
        states = np.arange(kmax)
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        m = len(edges)
        pair = np.asarray(pair, dtype=np.float64).reshape(m, kmax, kmax)
        ki, kj = k[edges[:, 0]], k[edges[:, 1]]
        beyond = (states[None, :, None] >= ki[:, None, None]) | (states[None, None, :] >= kj[:, None, None])
        self.pair = np.where(beyond, 0.0, pair) if pair[beyond].any() else pair  # copy only if needed
        self.edges = edges
        unary = np.asarray(unary, dtype=np.float64).reshape(n, kmax)
        self.colours = [np.asarray(c, dtype=np.int64) for c in colours]

        deg = np.bincount(edges.ravel(), minlength=n)
        order = [c[np.argsort(-deg[c], kind="stable")] for c in self.colours]
        self.perm = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
        self.inv = np.empty_like(self.perm)
        self.inv[self.perm] = np.arange(n)
        self.bounds = np.concatenate([[0], np.cumsum([len(c) for c in self.colours])]).astype(np.int64)
        self.unary = np.where(states[None, :] < k[self.perm, None], unary[self.perm], -np.inf)  # internal order
        self.own_states = k[self.perm]

        # Neighbours per group: as many as a uint8 code allows, spread evenly over the largest degree.
        d_max = int(deg.max(initial=0))
        g_max = 1
        while kmax >= 2 and g_max < d_max and kmax ** (g_max + 1) <= self.max_group_rows:
            g_max += 1
        n_full = -(-d_max // g_max)  # groups of the largest site
        self.group = g = max(1, -(-d_max // n_full)) if d_max else 1
        self.rows = kmax**g

        self._slots_and_groups(edges, deg[self.perm], g)
        self._tables = {}
        self._shifted = None
        self._plans = {}
        if dense == "auto":
            dense = (
                kmax >= DENSE_MIN_STATES
                and n_full >= DENSE_MIN_GROUPS
                and len(self.colours) >= DENSE_MIN_SINGLETONS * n
                and 4 * (n * kmax) ** 2 <= DENSE_MAX_TABLE_BYTES
            )
        self.dense = bool(dense)
        self._dense = DenseFields(self.unary, self.inv[edges], self.pair) if self.dense else None

    def _slots_and_groups(self, edges, degree, g):
        """Every site's directed slots and neighbour groups (internal indices).

        Slots ``(site, neighbour, edge, flipped)`` are sorted by site; flipped: the site is the
        edge's second variable (its row is ``pair[e, x_j, :]``). Groups: ``ceil(degree / g)``
        per site, at least one (it carries the unary term).
        """
        n, m = len(degree), len(edges)
        site = self.inv[np.r_[edges[:, 0], edges[:, 1]]]
        o = np.argsort(site, kind="stable")
        self.slot_site = site[o]
        self.slot_nbr = self.inv[np.r_[edges[:, 1], edges[:, 0]]][o]
        self.slot_edge = np.r_[np.arange(m), np.arange(m)][o]
        self.slot_flip = np.r_[np.zeros(m, bool), np.ones(m, bool)][o]
        self.degree = degree
        self.slot_ptr = np.concatenate([[0], np.cumsum(self.degree)])
        self.slot_rank = np.arange(2 * m) - self.slot_ptr[self.slot_site]
        self.n_groups = np.maximum(1, -(-self.degree // g))
        self.group_ptr = np.concatenate([[0], np.cumsum(self.n_groups)])
        n_grp = int(self.group_ptr[-1])
        self.group_site = np.repeat(np.arange(n), self.n_groups)
        self.group_slots = np.full((n_grp, g), -1, dtype=np.int64)
        self.group_slots[self.group_ptr[self.slot_site] + self.slot_rank // g, self.slot_rank % g] = np.arange(2 * m)
        self.group_first = np.zeros(n_grp, dtype=bool)
        self.group_first[self.group_ptr[:-1]] = True
        self.ones_group = n_grp  # rows of ones for the groups a site does not have

    @classmethod
    def from_layout(cls, layout, theta, colours, dense="auto"):
        """The kernel of a pairwise model given in the package's parametrisation."""
        if any(len(c) > 2 for c in layout.cliques):
            raise ValueError("CategoricalGibbsKernel needs cliques of at most two variables.")
        k = layout.n_states
        n, kmax = len(k), int(k.max(initial=1))
        full = layout.full_tables(theta)
        unary = np.zeros((n, kmax))
        sizes = np.array([len(c) for c in layout.cliques])
        for b in np.flatnonzero(sizes == 1):
            (i,) = layout.cliques[b]
            unary[i, : k[i]] += full[layout.table_offsets[b] : layout.table_offsets[b + 1]]
        pairs = np.flatnonzero(sizes == 2)
        edges = np.array([layout.cliques[b] for b in pairs], dtype=np.int64).reshape(-1, 2)
        pair = np.zeros((len(pairs), kmax, kmax))
        for shape in {layout.table_shapes[b] for b in pairs}:  # vectorised per table shape
            sel = np.flatnonzero([layout.table_shapes[b] == shape for b in pairs])
            step = max(1, (1 << 18) // (shape[0] * shape[1]))
            for a in range(0, len(sel), step):
                e = sel[a : a + step]
                at = layout.table_offsets[pairs[e]][:, None] + np.arange(shape[0] * shape[1])
                pair[e, : shape[0], : shape[1]] = full[at].reshape(-1, *shape)
        return cls(k, unary, edges, pair, colours, dense=dense)

    # -- tables --------------------------------------------------------------------------
    def _slot_rows(self, slots, beta):
        """``beta * W`` rows of directed slots, ``[s, x_j, k]``; zeros for ``slot == -1``."""
        out = np.zeros((len(slots), self.kmax, self.kmax))
        real = slots >= 0
        w = self.pair[self.slot_edge[slots[real]]]
        out[real] = beta * np.where(self.slot_flip[slots[real], None, None], w, w.transpose(0, 2, 1))
        return out

    def _log_rows(self, groups, beta, unary=True):
        """Log-potential rows of ``groups``, float64 ``(len(groups), K_max^g, K_max)``: row
        ``code`` (the group's neighbour states, first one most significant) holds the
        contribution to each state of the site (its unary term added in its first group
        unless ``unary`` is False)."""
        kmax, g = self.kmax, self.group
        L = np.zeros((len(groups),) + (kmax,) * g + (kmax,))
        for p in range(g):
            shape = [len(groups)] + [1] * g + [kmax]
            shape[1 + p] = kmax
            L += self._slot_rows(self.group_slots[groups, p], beta).reshape(shape)
        if unary:
            first = self.group_first[groups]
            L[first] += self.unary[self.group_site[groups[first]]].reshape((-1,) + (1,) * g + (kmax,))
        return L.reshape(len(groups), self.rows, kmax)

    def _group_chunks(self):
        """Slices of groups whose float64 rows stay within a few MiB."""
        step = max(1, (1 << 18) // (self.rows * self.kmax))
        return [np.arange(a, min(self.ones_group, a + step)) for a in range(0, self.ones_group, step)]

    def _table(self, beta):
        """The float32 table of scaled exponentiated rows at inverse temperature ``beta``.

        ``beta = 1`` (and a negative ``beta``) is computed in float64 from the log-potentials.
        Other values, one per annealing step, come from a stored float32 copy of the pair
        rows' logs, shifted to a maximum of zero so that ``beta`` times them still is
        (``beta >= 0``): ``exp(beta * pair + unary)``, three float32 passes over the table.
        """
        beta = float(beta)
        if beta in self._tables:
            return self._tables[beta]
        kmax, rows, n_grp = self.kmax, self.rows, self.ones_group
        E = np.empty((n_grp + 1, rows, self.width), dtype=np.float32)
        if beta == 1.0 or beta < 0:
            E[:, :, kmax:] = 0.0
            E[n_grp] = 1.0
            for grp in self._group_chunks():
                L = self._log_rows(grp, beta)
                L -= L.max(axis=2, keepdims=True)  # the first state is always finite
                E[grp[0] : grp[-1] + 1, :, :kmax] = np.exp(L)
        else:
            pair, unary = self._shifted_logs()
            for grp in [*self._group_chunks(), np.array([n_grp])]:
                e = E[grp[0] : grp[-1] + 1]
                np.multiply(pair[grp[0] : grp[-1] + 1], np.float32(beta), out=e)
                e += unary[grp[0] : grp[-1] + 1, None, :]
                np.exp(e, out=e)
        E = E.reshape(-1, self.width)
        if beta != 1.0:  # keep the model's own table and the last annealing step's
            self._tables = {b: t for b, t in self._tables.items() if b == 1.0}
        self._tables[beta] = E
        return E

    def _shifted_logs(self):
        """Float32 ``(pair, unary)`` logs for :meth:`_table`, built once: ``pair`` shaped as the
        table, each row shifted to a maximum of zero over the site's states (zero elsewhere);
        ``unary`` one row per group, the site's shifted unary term in its first group, zero in
        the others, ``-inf`` on the states a site does not have."""
        if self._shifted is None:
            kmax, n_grp = self.kmax, self.ones_group
            pair = np.zeros((n_grp + 1, self.rows, self.width), dtype=np.float32)
            unary = np.zeros((n_grp + 1, self.width), dtype=np.float32)
            missing = np.arange(self.width)[None, :] >= self.own_states[self.group_site][:, None]
            unary[:n_grp][missing] = -np.inf
            first = np.flatnonzero(self.group_first)
            u = self.unary[self.group_site[first]]
            unary[first, :kmax] = u - u.max(axis=1, keepdims=True)
            for grp in self._group_chunks():
                L = self._log_rows(grp, 1.0, unary=False)
                L[np.broadcast_to(missing[grp, None, :kmax], L.shape)] = -np.inf
                L -= L.max(axis=2, keepdims=True)
                pair[grp[0] : grp[-1] + 1, :, :kmax] = np.where(np.isfinite(L), L, 0.0)
            self._shifted = (pair, unary)
        return self._shifted

    def _plan(self, n_chains):
        """Chunks ``(a, b, c0, c1, nbr, slot, base)`` of every colour class for ``n_chains`` chains.

        Sites ``a:b`` (internal order) and chains ``c0:c1``; ``nbr`` and ``slot`` (shape
        ``(groups * g, b - a)``) give each neighbour position's internal variable and
        directed slot (the site itself and -1 where the site has fewer neighbours);
        ``base`` (shape ``(groups, b - a)``) each group's first table row.
        """
        if n_chains in self._plans:
            return self._plans[n_chains]
        g, rows = self.group, self.rows
        per = max(1, self.chunk_entries // self.width)  # site x chain pairs per chunk
        c_step = max(1, min(n_chains, per))
        s_step = max(1, per // c_step)
        plan = []
        for lo, hi in zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist()):
            chunks = []
            for a in range(lo, hi, s_step):
                b = min(hi, a + s_step)
                n_g = int(self.n_groups[a:b].max())
                nbr = np.tile(np.arange(a, b), (n_g * g, 1))
                slot = np.full((n_g * g, b - a), -1, dtype=np.int64)
                sl = np.arange(self.slot_ptr[a], self.slot_ptr[b])
                at = (self.slot_rank[sl], self.slot_site[sl] - a)
                nbr[at], slot[at] = self.slot_nbr[sl], sl
                base = np.full((n_g, b - a), self.ones_group * rows, dtype=np.int64)
                q = np.arange(self.group_ptr[a], self.group_ptr[b])
                base[q - self.group_ptr[self.group_site[q]], self.group_site[q] - a] = q * rows
                for c0 in range(0, n_chains, c_step):
                    chunks.append((a, b, c0, min(n_chains, c0 + c_step), nbr, slot, base))
            plan.append(chunks)
        self._plans = {n_chains: plan}
        return plan

    def _buffers(self, n_chains):
        """Work arrays sized for the largest chunk: products (2), neighbour states, row indices."""
        n_pairs = n_rows = n_idx = 1
        for chunks in self._plan(n_chains):
            for a, b, c0, c1, nbr, _, base in chunks:
                n = (b - a) * (c1 - c0)
                n_pairs, n_rows, n_idx = max(n_pairs, n), max(n_rows, n * nbr.shape[0]), max(n_idx, n * base.shape[0])
        return (
            np.empty(n_pairs * self.width, dtype=np.float32),
            np.empty(n_pairs * self.width, dtype=np.float32),
            np.empty(n_rows, dtype=self.dtype),
            np.empty(n_idx, dtype=np.intp),
        )

    # -- layout --------------------------------------------------------------------------
    def to_internal(self, states):
        """``(n_chains, n_variables)`` states to the internal ``(n_variables, n_chains)`` layout."""
        return np.ascontiguousarray(np.asarray(states).T[self.perm], dtype=self.dtype)

    def to_external(self, S):
        return S[self.inv].T.astype(np.int64)

    def interaction_energy(self, S):
        """``sum_(i,j) W_ij[x_i, x_j]`` of every chain (internal states ``S``), float64."""
        out = np.zeros(S.shape[1])
        if not len(self.edges):  # independent variables (an empty graph): no interaction
            return out
        flat = self.pair.reshape(len(self.edges), -1)
        step = max(1, (1 << 22) // max(S.shape[1], 1))
        for a in range(0, len(self.edges), step):
            e = self.edges[a : a + step]
            code = S[self.inv[e[:, 0]]].astype(np.intp) * self.kmax + S[self.inv[e[:, 1]]]
            out += np.take_along_axis(flat[a : a + step], code, axis=1).sum(axis=0)
        return out

    # -- sweeps --------------------------------------------------------------------------
    def _products(self, E, S, chunk, bufs):
        """Unnormalised conditionals of a chunk into ``P`` (sites x chains, width)."""
        P, G, X, I = bufs
        a, b, c0, c1, nbr, _, base = chunk
        n_s, n_c, n_g, g = b - a, c1 - c0, base.shape[0], self.group
        xs = S if (c0, c1) == (0, S.shape[1]) else S[:, c0:c1]
        xr = X[: nbr.size * n_c].reshape(n_g, g, n_s, n_c)
        np.take(xs, nbr, axis=0, out=xr.reshape(n_g * g, n_s, n_c))
        code = xr[:, 0]  # Horner in place: the group's row code, < K_max^g <= 256
        for p in range(1, g):
            np.multiply(code, self.kmax, out=code)
            np.add(code, xr[:, p], out=code)
        ix = I[: base.size * n_c].reshape(n_g, n_s, n_c)
        np.add(code, base[:, :, None], out=ix)
        for q in range(n_g):
            # mode="clip" skips the bounds check (every index is in range by construction).
            np.take(E, ix[q].reshape(-1), axis=0, out=P if q == 0 else G, mode="clip")
            if q:
                np.multiply(P, G, out=P)

    def _exact_cdf(self, S, chunk, rows, beta):
        """Cumulative conditionals (float64, ``(len(rows), K_max)``) of the flat (site, chain)
        entries ``rows`` of a chunk, from the log-potentials: the path taken where the float32
        product underflows."""
        a, b, c0, c1, nbr, slot, _ = chunk
        s, c = np.divmod(rows, c1 - c0)
        logit = self.unary[a + s].copy()
        r = np.arange(len(rows))
        for d in range(nbr.shape[0]):
            logit += self._slot_rows(slot[d, s], beta)[r, S[nbr[d, s], c0 + c]]
        p = np.exp(logit - logit.max(axis=1, keepdims=True))
        return np.cumsum(p, axis=1)

    def conditional_log_probs(self, S, colour_index, beta=1.0):
        """``log p(x_i = k | x_-i)`` of the sites of one colour class, as the sweep computes it.

        Parameters
        ----------
        S : ndarray of shape (n_variables, n_chains)
            Internal states.
        colour_index : int
        beta : float, default=1.0

        Returns
        -------
        ndarray of shape (len(colours[colour_index]), n_chains, K_max), float64
            Sites in the order of ``colours[colour_index]``; ``-inf`` for missing states.
        """
        if self._dense is not None:
            return self._dense.conditional_log_probs(S, self.inv[self.colours[colour_index]], beta)
        E = self._table(beta)
        n_chains, w = S.shape[1], self.width
        lo, hi = self.bounds[colour_index], self.bounds[colour_index + 1]
        out = np.empty((hi - lo, n_chains, self.kmax))
        bufs = self._buffers(n_chains)
        for chunk in self._plan(n_chains)[colour_index]:
            a, b, c0, c1 = chunk[:4]
            N = (b - a) * (c1 - c0)
            P = bufs[0][: N * w].reshape(N, w)
            self._products(E, S, chunk, (P, bufs[1][: N * w].reshape(N, w), *bufs[2:]))
            cdf = np.cumsum(P[:, : self.kmax], axis=1, dtype=np.float64)
            bad = np.flatnonzero(cdf[:, -1] < _TINY)
            if len(bad):
                cdf[bad] = self._exact_cdf(S, chunk, bad, beta)
            prob = np.diff(cdf, axis=1, prepend=0.0) / cdf[:, -1:]
            with np.errstate(divide="ignore"):
                out[a - lo : b - lo, c0:c1] = np.log(prob).reshape(b - a, c1 - c0, -1)
        # internal order (by degree within the class) back to the class's own order
        return out[self.inv[self.colours[colour_index]] - lo]

    def run(self, S, n_sweeps, rng, beta=1.0):
        """Run ``n_sweeps`` sweeps in place on internal states ``S``.

        ``beta`` scales the pair terms (not the unary terms): the chain then leaves
        ``p_beta(x) ~ exp(unary(x) + beta * pair_energy(x))`` invariant, as annealed
        importance sampling needs.
        """
        kmax, w = self.kmax, self.width
        if kmax < 2 or S.shape[1] == 0:
            return S
        if self._dense is not None:
            return self._dense.run(S, n_sweeps, rng, beta)
        E = self._table(beta)
        n_chains = S.shape[1]
        plan = self._plan(n_chains)
        bufs = self._buffers(n_chains)
        n_max = len(bufs[0]) // w
        Q = np.empty((kmax, n_max), dtype=np.float32)
        T = np.empty(n_max, dtype=np.float32)
        B = np.empty((kmax - 1, n_max), dtype=bool)
        raw = rng.bit_generator
        scale = np.float32(1.0 / (1 << 24))
        for _ in range(n_sweeps):
            for chunks in plan:
                for chunk in chunks:
                    a, b, c0, c1 = chunk[:4]
                    N = (b - a) * (c1 - c0)
                    P = bufs[0][: N * w].reshape(N, w)
                    self._products(E, S, chunk, (P, bufs[1][: N * w].reshape(N, w), *bufs[2:]))
                    q = Q[:, :N]
                    np.copyto(q, P[:, :kmax].T)  # (states, site x chain): contiguous from here on
                    for k in range(1, kmax):
                        np.add(q[k], q[k - 1], out=q[k])
                    total = q[kmax - 1]
                    if total.min() < _TINY:
                        bad = np.flatnonzero(total < _TINY)
                        q[:, bad] = self._exact_cdf(S, chunk, bad, beta).T
                    # 24-bit uniforms u / 2^24 from raw 64-bit draws (two per draw).
                    u = raw.random_raw((N + 1) // 2).view(np.uint32)[:N]
                    np.right_shift(u, 8, out=u)
                    t = T[:N]
                    np.copyto(t, u, casting="unsafe")  # exact: u < 2^24
                    np.multiply(total, scale, out=total)
                    np.multiply(t, total, out=t)
                    bb = B[:, :N]
                    np.less_equal(q[: kmax - 1], t, out=bb)
                    np.sum(bb.reshape(kmax - 1, b - a, c1 - c0), axis=0, dtype=S.dtype, out=S[a:b, c0:c1])
        return S
