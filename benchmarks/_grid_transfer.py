"""Exact inference on an R x C grid by a transfer matrix: a reference where the junction tree is too slow.

A pairwise model on a row-major R x C grid is a chain over its *frontier*, the last C variables
visited. Adding a variable multiplies the frontier's table by the variable's potentials and
sums out the variable above it: ``O(K^(C+1))`` per variable, ``O(R C K^(C+1))`` per
calibration, with every frontier table kept for the marginals and for sampling (``R C K^C``
numbers). On the 12x12 grid with 3 states that is 144 tables of 531,441 entries (612 MB) and
about a second per calibration, where skmrf's junction tree, even with the row-major order
(its min-fill/min-degree orders reach treewidth 16, 4.7 GB), takes 15 s.

:class:`GridTransfer` stands in for a model's junction tree (``model._junction_tree``), so
``model.calibrate()``, ``model.expected_statistics()``, ``model.sample(method="exact")`` and
:func:`skmrf.estimators._exact.fit_max_likelihood` use it. :func:`check_against_junction_tree`
compares it with the junction tree on small grids (log Z, every marginal, and the sample's
frequencies).
"""

from __future__ import annotations

import numpy as np

__all__ = ["GridTransfer", "check_against_junction_tree", "with_transfer"]


class GridTransfer:
    """Exact calibration of a pairwise model on the row-major ``rows x cols`` grid (``K`` states)."""

    def __init__(self, rows, cols, n_states):
        self.R, self.C, self.K = int(rows), int(cols), int(n_states)

    def check_memory(self, max_bytes=None):
        """No budget: the caller sized the grid."""

    def calibrate(self, full, layout, evidence=None, max_bytes=None):
        if evidence:
            raise NotImplementedError("GridTransfer does not take evidence.")
        return _TransferCalibration(self, np.asarray(full, dtype=float), layout)


def with_transfer(model, rows, cols):
    """``model`` with a :class:`GridTransfer` as its junction tree (in place); returns it."""
    model._junction_tree = GridTransfer(rows, cols, int(model.n_states[0]))
    return model


class _TransferCalibration:
    """Forward tables of the frontier (newest variable first), ``log_z``, marginals and sampling."""

    def __init__(self, tree, full, layout):
        R, C, K = tree.R, tree.C, tree.K
        self.tree, self.layout, self.N = tree, layout, R * C
        N = self.N
        index = {c: k for k, c in enumerate(layout.cliques)}
        if len(index) != N + R * (C - 1) + (R - 1) * C or any(len(c) > 2 for c in index):
            raise ValueError("GridTransfer needs the row-major grid's nodes and edges as the model's cliques.")

        def table(c):
            k = index[c]
            t = full[layout.table_offsets[k] : layout.table_offsets[k + 1]]
            return t, float(t.max())

        shift = 0.0
        self.node, self.up, self.M = [], [None] * N, [None] * N
        for v in range(N):
            t, s = table((v,))
            self.node.append(np.exp(t - s))
            shift += s
        for v in range(N):
            r, c = divmod(v, C)
            if r > 0:
                t, s = table((v - C, v))
                self.up[v] = np.exp(t.reshape(K, K) - s)  # [x_above, x_v]
                shift += s
            if c > 0:
                t, s = table((v - 1, v))
                self.M[v] = (np.exp(t.reshape(K, K) - s) * self.node[v][None]).T  # [x_v, x_left], node included
                shift += s
        self.F, log_z, f = [], shift, None
        for v in range(N):
            f = self._add(f, v)
            s = f.sum()
            f /= s
            log_z += np.log(s)
            self.F.append(f)
        self.log_z = float(log_z)

    def _local(self, v, g):
        """``g[x_v, x_{v-1}, ...]`` times the left table and the node potential of ``v`` (a new array)."""
        K = self.tree.K
        if self.M[v] is None:
            return (g.reshape(K, -1) * self.node[v][:, None]).ravel()
        return (g.reshape(K, K, -1) * self.M[v][:, :, None]).ravel()

    def _add(self, f, v):
        K, C = self.tree.K, self.tree.C
        if v == 0:
            return self.node[0].copy()
        if v < C:
            return self._local(v, np.broadcast_to(f, (K, len(f))))
        g = np.ascontiguousarray((f.reshape(-1, K) @ self.up[v]).T)  # [x_v, x_{v-1}, ..., x_{v-C+1}]
        return self._local(v, g)

    def clique_marginals(self):
        """Flat marginal tables of the model's cliques (the layout's order), as skmrf's Calibration."""
        K, C, N, lay = self.tree.K, self.tree.C, self.N, self.layout
        index = {c: k for k, c in enumerate(lay.cliques)}
        out = np.empty(lay.n_table)

        def put(c, m):
            k = index[c]
            out[lay.table_offsets[k] : lay.table_offsets[k + 1]] = (m / m.sum()).ravel()

        b = np.ones_like(self.F[N - 1])  # backward table over the frontier after v
        for v in range(N - 1, -1, -1):
            P = self.F[v] * b
            put((v,), P.reshape(K, -1).sum(axis=1))
            if v % C > 0:
                put((v - 1, v), P.reshape(K, K, -1).sum(axis=2).T)
            W = self._local(v, b).reshape(K, -1)  # [x_v, rest]
            if v >= C:
                put((v - C, v), (W @ self.F[v - 1].reshape(-1, K)).T * self.up[v])
                b = np.ascontiguousarray((self.up[v] @ W).T).ravel()  # [rest, x_above]
            else:
                b = W.sum(axis=0)
            b /= b.sum()
        return out

    def sample(self, n_samples, rng):
        """Exact independent draws: the last frontier, then each variable above given the ones below."""
        K, C, N = self.tree.K, self.tree.C, self.N
        x = np.zeros((n_samples, N), dtype=np.int64)
        m = min(N, C)
        p = self.F[N - 1]
        vals = np.unravel_index(rng.choice(len(p), size=n_samples, p=p / p.sum()), (K,) * m)
        for a in range(m):
            x[:, N - 1 - a] = vals[a]
        for v in range(N - 1, C - 1, -1):
            above = v - C
            code = np.zeros(n_samples, dtype=np.int64)
            for u in range(v - 1, above, -1):
                code = code * K + x[:, u]
            f = self.F[v - 1].reshape(-1, K)[code] * self.up[v][:, x[:, v]].T  # (n, K)
            cdf = np.cumsum(f, axis=1)
            u = rng.random(n_samples) * cdf[:, -1]
            x[:, above] = np.minimum((cdf <= u[:, None]).sum(axis=1), K - 1)
        return x


def check_against_junction_tree(n_draws=200_000):
    """Compare with skmrf's junction tree on small grids; returns the largest differences.

    ``(log Z, marginals, sample frequencies)``: the first two are rounding (1e-12 allowed), the
    third a Monte-Carlo error of ``n_draws`` exact draws (at most 4.5 standard errors of a
    frequency, ``4.5 * sqrt(0.25 / n_draws)``, allowed over about 60 cells).
    """
    from skmrf import grid_graph
    from skmrf.datasets import make_random_mrf

    worst = np.zeros(3)
    for rows, cols, K in [(3, 4, 3), (4, 3, 2), (2, 5, 2)]:
        model = make_random_mrf(grid_graph(rows, cols), n_states=K, scale=1.0, random_state=1)
        ref = model.calibrate()
        cal = GridTransfer(rows, cols, K).calibrate(model.layout.full_tables(model.theta), model.layout)
        mu = ref.clique_marginals()
        freq = model.layout.table_counts(cal.sample(n_draws, np.random.default_rng(0))) / n_draws
        got = [abs(ref.log_z - cal.log_z), np.abs(mu - cal.clique_marginals()).max(), np.abs(freq - mu).max()]
        worst = np.maximum(worst, got)
    assert worst[0] < 1e-12 and worst[1] < 1e-12 and worst[2] < 4.5 * np.sqrt(0.25 / n_draws), worst
    return worst
