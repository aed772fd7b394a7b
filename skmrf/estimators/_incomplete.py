"""The data term of incomplete data, decomposed on always-observed variables and compressed.

Refaat and Darwiche (Section 4, Theorem 1): with ``Z(d)`` the partition function summed
over the states compatible with the observed part of row ``d``, the log-likelihood is

    l(theta) = sum_i log Z(d_i) - N log Z                                    (Eq. 1)
             = sum_s sum_i n_i^s log Z^s(d_i) - N log Z                       (Eq. 2)

where ``s`` runs over *sub-networks*: the connected components of the graph of factors
after deleting every link whose shared variables are always observed. Within a row the
sub-networks only meet in observed variables, so ``Z(d)`` is a product over them, and each
sub-network needs the data projected on its own variables, compressed to its distinct
patterns ``d_i^s`` with counts ``n_i^s``: far fewer than the distinct rows.

Here every clique of the parametrisation is a factor. A clique whose variables are all
always observed is a sub-network on its own whose ``log Z^s(d)`` is its log-potential at the
observed state: it is counted once, like complete data. Every other sub-network is
calibrated for all its patterns at once (:class:`~skmrf.inference.evidence.BatchedJunctionTree`)
over its *free* variables, the ones missing somewhere in the data; its always-observed
variables are sliced into each pattern's tables. Sub-networks of the same shape (free
states and reduced cliques) share one batch.

With ``decompose=False`` all the cliques that hold a free variable form a single network
whose patterns are the distinct rows: the same algorithm on the undecomposed data with
duplicate rows merged (the paper's baseline), for measuring what the decomposition buys.
"""

from __future__ import annotations

import numpy as np

from ..data import c_order_strides, distinct_projections, subnetworks
from ..inference.evidence import BatchedJunctionTree
from ..utils._sklearn_compat import delayed

__all__ = ["IncompleteDataTerm", "compatible_counts"]

#: Floats (pattern x table entries) per batched calibration: one task of the E-step.
CHUNK_FLOATS = 1 << 20


def compatible_counts(layout, X):
    """Rows compatible with each cell of each clique table (a missing entry matches any state).

    A cell no row is compatible with must get probability zero at the supremum of the
    likelihood, so with ``alpha=0`` there is no finite maximum (the check is sufficient, not
    necessary). Returns flat tables in ``layout`` order; ``O(n_rows * n_table)``.
    """
    indicator = {}
    for v in {v for c in layout.cliques for v in c}:
        K = int(layout.n_states[v])
        x = X[:, v]
        indicator[v] = np.where((x < 0)[:, None], 1.0, x[:, None] == np.arange(K)[None, :])
    out = np.zeros(layout.n_table)
    for c, clique in enumerate(layout.cliques):
        axes = "abcdefghijklmnopqrstuvwxy"[: len(clique)]
        table = np.einsum(",".join("z" + a for a in axes) + "->" + axes, *(indicator[v] for v in clique))
        out[layout.table_offsets[c] : layout.table_offsets[c + 1]] = table.ravel()
    return out


class _Group:
    """Sub-networks of one shape: their patterns, batched.

    ``index[j]`` has shape ``(P, m_j, size_j)``: for each pattern, the positions in the
    flat full tables (plus a zero slot at ``n_table``) of the ``m_j`` cliques that reduce
    to scope ``j``, at every joint state of the scope; their sum is the scope's table.
    """

    def __init__(self, tree, index, evidence, counts):
        self.tree, self.index, self.evidence, self.counts = tree, index, evidence, counts

    @property
    def floats_per_pattern(self):
        """Floats one pattern's calibration touches: its tree's tables and its table indices."""
        return self.tree.entries + sum(ix.shape[1] * ix.shape[2] for ix in self.index)

    def chunks(self):
        per = max(1, CHUNK_FLOATS // max(1, self.floats_per_pattern))
        n = len(self.counts)
        return [(self, a, min(a + per, n)) for a in range(0, n, per)]


def _e_step_chunk(group, a, b, full_ext, n_table, need_gradient=True):
    """``sum_p n_p log Z(d_p)``, per-pattern ``log Z(d_p)`` and expected table counts."""
    tables = [full_ext[ix[a:b]].sum(axis=1) for ix in group.index]
    shaped = [t.reshape((b - a,) + s) for t, s in zip(tables, group.tree.scope_shapes)]
    log_z, marginals = group.tree.calibrate(shaped, group.evidence[a:b])
    counts = group.counts[a:b]
    grad = None
    if need_gradient:
        grad = np.zeros(n_table + 1)
        for ix, marg in zip(group.index, marginals):
            w = counts[:, None, None] * marg.reshape(b - a, 1, -1)
            weights = np.broadcast_to(w, ix[a:b].shape).ravel()
            grad += np.bincount(ix[a:b].ravel(), weights=weights, minlength=n_table + 1)
    return float(counts @ log_z), log_z, grad


class IncompleteDataTerm:
    """``sum_i log Z(d_i)`` over the rows of incomplete data, and its gradient.

    Parameters
    ----------
    layout : skmrf.parametrisation.CliqueLayout
    X : ndarray of int64, shape (n_rows, n_variables)
        States, ``-1`` where missing; no row entirely missing.
    decompose : bool
        Sub-networks on always-observed variables (True) or one network (False).
    max_bytes : int, optional
        Memory budget of one calibration of a sub-network's tree (one pattern).
    keep_rows : bool, default=False
        Keep which pattern each row shows, for :meth:`row_log_evidence`.
    weight : ndarray of float64 of shape (n_rows,), optional
        Row weights: a pattern's count is the sum of its rows' weights.

    Attributes
    ----------
    n_rows : int
    free : ndarray of bool, shape (n_variables,)
        Variables missing in at least one row.
    networks : list of tuple of int
        The cliques (layout indices) of each sub-network with a free variable.
    n_patterns : ndarray of int64, shape (n_networks,)
        Distinct patterns (inferences per evaluation) of each sub-network.
    observed_counts : ndarray of float64, shape (n_table,)
        Table counts of the cliques without a free variable (zeros elsewhere).
    """

    def __init__(self, layout, X, decompose=True, max_bytes=None, keep_rows=False, weight=None):
        self.layout = layout
        self.n_rows, n_var = X.shape
        missing = X < 0
        self.free = missing.any(axis=0)
        has_free = np.array([self.free[list(c)].any() for c in layout.cliques], dtype=bool)
        self.observed_cliques = np.flatnonzero(~has_free)
        self.observed_counts = self._observed_counts(X, weight)
        if decompose:
            self.networks = subnetworks(layout.cliques, self.free)
        else:
            self.networks = [tuple(np.flatnonzero(has_free).tolist())] if has_free.any() else []
        variables = [tuple(sorted({v for c in net for v in layout.cliques[c]})) for net in self.networks]
        self.groups, self.n_patterns = [], np.zeros(len(self.networks), dtype=np.int64)
        self._X = X if keep_rows else None
        self._row_patterns = np.zeros((self.n_rows, 0), dtype=np.int64)
        if not self.networks:
            return
        k_missing = layout.n_states + 1  # "missing" is one more state, so patterns compress as states
        Xc = np.where(missing, layout.n_states, X)
        sub, row, count, inverse = distinct_projections(Xc, variables, k_missing, return_inverse=True, weight=weight)
        self.n_patterns = np.bincount(sub, minlength=len(self.networks))
        starts = np.concatenate([[0], np.cumsum(self.n_patterns)])
        by_shape = {}
        for s, net in enumerate(self.networks):
            rows = row[starts[s] : starts[s + 1]]
            key, parts = self._reduce(net, X[rows], count[starts[s] : starts[s + 1]])
            by_shape.setdefault(key, []).append((s, parts))
        self._pattern_of = {}
        for key, members in by_shape.items():
            n_states, scopes = key
            tree = BatchedJunctionTree(n_states, scopes, max_bytes=max_bytes)
            index = [self._stack([p["index"][j] for _, p in members]) for j in range(len(scopes))]
            evidence = np.concatenate([p["evidence"] for _, p in members])
            counts = np.concatenate([p["counts"] for _, p in members])
            offset = 0
            for s, p in members:  # where sub-network s's patterns sit in this group's batch
                self._pattern_of[s] = (len(self.groups), offset)
                offset += len(p["counts"])
            self.groups.append(_Group(tree, index, evidence, counts))
        if keep_rows:
            self._row_patterns = inverse - starts[:-1][None, :]

    def _observed_codes(self, X):
        """Codes into the flat tables of the cliques with no free variable, in chunks."""
        obs = np.zeros(len(self.layout.cliques), dtype=bool)
        obs[self.observed_cliques] = True
        for members, codes in self.layout.iter_codes(np.maximum(X, 0)):
            if obs[members].any():
                yield codes[:, obs[members]]

    def _observed_counts(self, X, weight=None):
        """Table counts (summed weights) of the cliques with no free variable (complete data there)."""
        counts = np.zeros(self.layout.n_table)
        for codes in self._observed_codes(X):
            w = None if weight is None else np.repeat(weight, codes.shape[1])
            counts += np.bincount(codes.ravel(), weights=w, minlength=self.layout.n_table)
        return counts

    def _reduce(self, net, rows_X, counts):
        """The shape key of a sub-network and its patterns' gather indices and evidence."""
        lay = self.layout
        free_vars = sorted({v for c in net for v in lay.cliques[c] if self.free[v]})
        local = {v: i for i, v in enumerate(free_vars)}
        by_scope = {}
        for c in net:
            scope = tuple(local[v] for v in lay.cliques[c] if self.free[v])
            by_scope.setdefault(scope, []).append(c)
        scopes = sorted(by_scope)
        n_states = tuple(int(lay.n_states[v]) for v in free_vars)
        index = []
        for scope in scopes:
            per_clique = []
            for c in by_scope[scope]:
                clique = lay.cliques[c]
                strides = c_order_strides(lay.n_states[list(clique)])
                is_free = self.free[list(clique)]
                base = lay.table_offsets[c] + np.maximum(rows_X[:, list(clique)], 0)[:, ~is_free] @ strides[~is_free]
                grid = np.indices(tuple(n_states[i] for i in scope)).reshape(len(scope), -1)
                offsets = strides[is_free] @ grid
                per_clique.append(base[:, None] + offsets[None, :])
            index.append(np.stack(per_clique, axis=1))
        evidence = rows_X[:, free_vars]
        return (n_states, tuple(scopes)), {"index": index, "evidence": evidence, "counts": counts}

    def _stack(self, arrays):
        """Stack index arrays of several sub-networks, padding cliques with the zero slot."""
        m = max(a.shape[1] for a in arrays)
        pad = self.layout.n_table
        return np.concatenate([np.pad(a, ((0, 0), (0, m - a.shape[1]), (0, 0)), constant_values=pad) for a in arrays])

    # -- evaluation ----------------------------------------------------------
    @property
    def work(self):
        """Work of one evaluation: the floats of all the batched calibrations."""
        return sum(len(g.counts) * g.floats_per_pattern for g in self.groups)

    def tasks(self):
        """Independent pieces of one evaluation (one batched calibration each)."""
        return [t for g in self.groups for t in g.chunks()]

    def evaluate(self, full, parallel=None):
        """``sum_i log Z(d_i)`` and its gradient in the flat full tables (expected counts).

        Parameters
        ----------
        full : ndarray of shape (n_table,)
            Flat log-potential tables (``layout.full_tables(theta)``).
        parallel : joblib.Parallel, optional
            Runs the batched calibrations; serial when omitted.
        """
        n_table = self.layout.n_table
        full_ext = np.append(full, 0.0)
        if parallel is None:
            results = [_e_step_chunk(*t, full_ext, n_table) for t in self.tasks()]
        else:
            results = parallel(delayed(_e_step_chunk)(*t, full_ext, n_table) for t in self.tasks())
        value = float(self.observed_counts @ full)
        grad = self.observed_counts.copy()
        for v, _, g in results:
            value += v
            grad += g[:n_table]
        return value, grad

    def row_log_evidence(self, full):
        """``log Z(d_r)`` of every row (needs ``keep_rows=True``)."""
        lay = self.layout
        full_ext = np.append(full, 0.0)
        per_group = [
            np.concatenate([_e_step_chunk(*t, full_ext, lay.n_table, need_gradient=False)[1] for t in g.chunks()])
            for g in self.groups
        ]
        out = np.zeros(self.n_rows)
        for codes in self._observed_codes(self._X):
            out += full[codes].sum(axis=1)
        for s in range(len(self.networks)):
            g, offset = self._pattern_of[s]
            out += per_group[g][offset + self._row_patterns[:, s]]
        return out
