"""Exact inference by a junction tree with log-space (Hugin) message passing.

The tree is built from the cheapest of three elimination orders (reverse Cuthill-McKee, and the
greedy min-fill and min-degree): eliminating ``v`` creates the clique ``{v} | N(v)``; its parent
is the clique of the neighbour eliminated first, and a clique contained in a child's clique is
merged into it. One collect and one distribute pass give ``log Z`` and the
marginal of every clique (Koller & Friedman, Section 10.3).
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from .._utils._budgets import DEFAULT_MAX_BYTES
from ..exceptions import TreewidthError

__all__ = ["elimination_order", "JunctionTree", "Calibration", "TreewidthError", "DEFAULT_MAX_BYTES"]

#: Largest spread (nats) of a table exponentiated in one piece (exp(-700) > 1e-305).
_SAFE_SPREAD = 700.0

#: With heuristic="auto", min-fill is retried after min-degree fails only up to this size.
_MIN_FILL_RETRY_MAX = 2000
#: The banded (reverse Cuthill-McKee) order is taken only where its tree has fewer table entries
#: than the best greedy one's divided by this (see :func:`_choose_order`).
BANDED_MARGIN = 2.0
#: ... and only tried where the greedy order's elimination cliques have more table entries than
#: this (or none fits): below it a calibration takes milliseconds, less than the banded order
#: costs to build (5-8 ms on 12 x 12 and 14 x 14 grids).
BANDED_MIN_ENTRIES = 1 << 22


_ADVICE = (
    "Use an approximate method instead: LAPEstimator or PseudoLikelihoodEstimator to fit, "
    "score_method='pseudo' to score, method='gibbs' to sample (or raise max_bytes if you "
    "have the memory)."
)


def _count(n):
    """An integer count for a message: with thousands separators up to 10^15, else as 10^k
    (a table of 21^500 entries does not convert to a float)."""
    return f"{n:,}" if n < 10**15 else f"about 10^{len(str(n)) - 1}"


def _logsumexp(a, axis):
    """``log(sum(exp(a)))`` over ``axis``, finite-safe when all entries are -inf."""
    if not axis:
        return a
    m = np.max(a, axis=axis, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis)


def elimination_order(neighbours, heuristic="min_fill", n_states=None, max_entries=None):
    """Greedy elimination order (see :func:`_greedy` for the work it shares)."""
    return _greedy(neighbours, heuristic, n_states, max_entries)[0]


def _greedy(neighbours, heuristic="min_fill", n_states=None, max_entries=None):
    """Greedy elimination order, its elimination cliques and their total table size.

    Parameters
    ----------
    neighbours : sequence of set of int
        Adjacency of variables ``0..n-1``.
    heuristic : {"min_fill", "min_degree"}
        Eliminate next the variable adding the fewest fill edges (ties by
        degree, then index), or of smallest degree (ties by index).
    n_states : array-like of int, optional
        States per variable; needed with ``max_entries``.
    max_entries : int, optional
        Stop with :class:`TreewidthError` as soon as an elimination clique's
        table would have more entries, so that a graph far too wide is
        refused in a fraction of the time a full order takes.

    Returns
    -------
    order : list of int
    cliques : dict {variable: frozenset}
        The clique ``{v} | N(v)`` created when eliminating ``v``.
    cost : float
        Total entries of those cliques' tables (the calibration cost).

    Notes
    -----
    Scores are updated only around the eliminated variable, with a lazy heap:
    ``O(n d^3 log n)`` for maximum induced degree ``d``.
    """
    if heuristic not in ("min_fill", "min_degree"):
        raise ValueError(f"heuristic must be 'min_fill' or 'min_degree'; got {heuristic!r}.")
    adj = [set(s) for s in neighbours]
    n = len(adj)

    def score(v):
        nb = adj[v]
        if heuristic == "min_degree":
            return (len(nb), v)
        d = len(nb)
        # fill = missing edges among the neighbours = d(d-1)/2 - present edges
        present = sum(len(adj[a] & nb) for a in nb) // 2
        return (d * (d - 1) // 2 - present, d, v)

    ks = [2] * n if n_states is None else [int(k) for k in n_states]
    cliques, cost = {}, 0.0
    current = [score(v) for v in range(n)]
    heap = [(s, v) for v, s in enumerate(current)]
    heapq.heapify(heap)
    done = np.zeros(n, dtype=bool)
    order = []
    while heap:
        s, v = heapq.heappop(heap)
        if done[v] or s != current[v]:
            continue
        nb = list(adj[v])
        entries = math.prod(ks[u] for u in nb) * ks[v]
        if max_entries is not None and entries > max_entries:
            raise _too_wide(heuristic, len(nb) + 1, entries)
        done[v] = True
        order.append(v)
        cliques[v] = frozenset(nb + [v])
        cost += entries
        for a in nb:
            adj[a].discard(v)
            adj[a].update(b for b in nb if b != a)
        touched = set(nb)
        if heuristic == "min_fill":
            for a in nb:
                touched |= adj[a]
        for u in touched:
            if not done[u]:
                current[u] = score(u)
                heapq.heappush(heap, (current[u], u))
    return order, cliques, cost


def _too_wide(name, size, entries):
    """The :class:`TreewidthError` of an elimination order that reaches a clique of ``size``
    variables and ``entries`` table entries."""
    return TreewidthError(
        f"Exact inference is too large: the {name} elimination order reaches a clique of {size} "
        f"variables whose table alone has {_count(entries)} entries ({_count(8 * entries // 1024**2)} MiB), "
        f"so the treewidth is at least about {size - 1} for this order. " + _ADVICE
    )


def _eliminate(neighbours, order, n_states=None, max_entries=None, name="given"):
    """Elimination cliques ``{v: {v} | N(v)}`` of a given order and their total table entries,
    stopping with :class:`TreewidthError` at a table of more than ``max_entries`` (as
    :func:`_greedy` does)."""
    adj = [set(s) for s in neighbours]
    ks = [2] * len(adj) if n_states is None else [int(k) for k in n_states]
    cliques, cost = {}, 0.0
    for v in order:
        nb = adj[v]
        entries = math.prod(ks[u] for u in nb) * ks[v]
        if max_entries is not None and entries > max_entries:
            raise _too_wide(name, len(nb) + 1, entries)
        cliques[v] = frozenset(nb | {v})
        cost += entries
        for a in nb:
            adj[a].discard(v)
            adj[a].update(b for b in nb if b != a)
    return cliques, cost


def _bandwidth_order(neighbours):
    """The reverse Cuthill-McKee order of the graph (scipy): its band is narrow, so eliminating
    along it keeps every clique within the band. On a grid it sweeps row by row (the cliques
    have side + 1 variables, the treewidth), where the greedy orders reach side + 6 to side + 7:
    on a 16 x 16 grid 7.5e6 table entries against min-fill's 4.4e7, on 18 x 18 3.4e7 against
    2.4e8."""
    n = len(neighbours)
    rows = np.repeat(np.arange(n), [len(s) for s in neighbours])
    cols = np.fromiter((u for s in neighbours for u in s), dtype=np.int64, count=len(rows))
    graph = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n))
    return reverse_cuthill_mckee(graph, symmetric_mode=True).tolist()


def _adjacency(n, cliques):
    """Neighbour sets of variables ``0..n-1`` in the graph of ``cliques``."""
    nbrs = [set() for _ in range(n)]
    for c in cliques:
        for i in c:
            nbrs[i].update(c)
    for i in range(n):
        nbrs[i].discard(i)
    return nbrs


def _choose_order(nbrs, n_states, order, heuristic, max_bytes):
    """The elimination order (given, or the cheapest greedy one) and its elimination cliques."""
    n = len(nbrs)
    if order is not None:
        order = [int(v) for v in order]
        if sorted(order) != list(range(n)):
            raise ValueError("order must be a permutation of the variables.")
        return order, _eliminate(nbrs, order)[0]
    # One table may take at most half the budget (beliefs + a temporary).
    limit = (DEFAULT_MAX_BYTES if max_bytes is None else max_bytes) / 16
    found, errors = [], []
    for h in ("min_degree", "min_fill") if heuristic == "auto" else (heuristic,):
        if h == "min_fill" and heuristic == "auto" and errors and n > _MIN_FILL_RETRY_MAX:
            break  # min-degree already failed; min-fill would take long to fail too
        try:
            found.append(_greedy(nbrs, h, n_states, limit))
        except TreewidthError as exc:
            errors.append(exc)
    best = min(found, key=lambda r: r[2]) if found else None
    if heuristic == "auto" and n and (best is None or best[2] > BANDED_MIN_ENTRIES):
        # Tried last and taken only where its tree has under 1 / BANDED_MARGIN of the greedy
        # tree's table entries (contained cliques merged: the elimination cliques' sum over-counts
        # the greedy orders' many nested ones). Its nodes are all wide, so each clique is added and
        # marginalised on a wide table: on 14 x 14, 1.6e6 entries against min-fill's 1.9e6 and
        # exact ML 4.9 s against 4.3; on 16 x 16, 7.3e6 against 2.2e7 and 23 s against 85. Where
        # the greedy tree is kept, so are the exact samples drawn through it.
        try:
            rcm = _bandwidth_order(nbrs)
            banded = (rcm, *_eliminate(nbrs, rcm, n_states, limit, "reverse Cuthill-McKee"))
            if best is None or BANDED_MARGIN * _tree_entries(*banded[:2], n_states) < _tree_entries(
                *best[:2], n_states
            ):
                best = banded
        except TreewidthError as exc:
            errors.append(exc)
    if best is None:
        raise errors[-1]
    return best[0], best[1]


def _tree_entries(order, elim, n_states):
    """Entries of all tables of the junction tree of an elimination order."""
    nodes, _ = _tree_from_elimination(order, elim)
    return sum(math.prod(int(n_states[v]) for v in nd) for nd in nodes)


def _tree_from_elimination(order, elim):
    """Junction-tree nodes and parents from an elimination order and its cliques.

    A clique's parent is that of its first-eliminated neighbour (the elimination tree); a
    clique contained in a child's clique is merged into it.
    """
    pos = {v: i for i, v in enumerate(order)}
    eparent = {}
    for v in order:
        nb = elim[v] - {v}
        eparent[v] = min(nb, key=lambda u: pos[u]) if nb else None
    rep = {u: u for u in order}
    children = {v: [] for v in order}
    for v in order:
        if eparent[v] is not None:
            children[eparent[v]].append(v)
    for u in order:  # children are eliminated (and resolved) before u
        for v in children[u]:
            if len(elim[v]) == len(elim[u]) + 1:
                rep[u] = rep[v]
                break
    node_ids = {}
    for v in order:
        if rep[v] == v:
            node_ids[v] = len(node_ids)
    nodes = [tuple(sorted(elim[v])) for v in node_ids]
    node_of = {v: node_ids[rep[v]] for v in order}
    parent = np.full(len(nodes), -1, dtype=np.int64)
    for v in order:
        p = eparent[v]
        if p is not None and node_of[v] != node_of[p]:
            parent[node_of[v]] = node_of[p]
    return nodes, parent


def _assign_cliques(nodes, sizes, cliques, n):
    """The node holding each model clique: the smallest node containing it (cheapest to
    marginalise); the node of its first-eliminated variable always does."""
    holders = [set() for _ in range(n)]
    for k, nd in enumerate(nodes):
        for v in nd:
            holders[v].add(k)
    return np.array(
        [min(set.intersection(*(holders[v] for v in c)), key=lambda k: (sizes[k], k)) for c in cliques],
        dtype=np.int64,
    )


class JunctionTree:
    """Junction tree of a discrete MRF with given cliques.

    Parameters
    ----------
    n_states : array-like of int
        States per variable.
    cliques : sequence of tuple of int
        The model's potential cliques (sorted tuples).
    order : sequence of int, optional
        Elimination order; by default a greedy one from ``heuristic``.
    heuristic : {"auto", "min_fill", "min_degree"}, default="auto"
        Greedy elimination heuristic; ``"auto"`` runs both and the reverse
        Cuthill-McKee order (a narrow band: row by row on a grid, where the
        greedy orders' cliques are 6 or 7 variables wider) and keeps the
        order with fewest table entries (the calibration cost). When the fast
        min-degree order exceeds the budget, min-fill is tried only on graphs
        of at most 2000 variables (on a 100 x 100 grid it takes 5 s to fail).
    max_bytes : int, optional
        Memory budget (default ``DEFAULT_MAX_BYTES``); construction stops with
        :class:`TreewidthError` as soon as one table would need half of it.

    Attributes
    ----------
    nodes : list of tuple of int
        The junction-tree cliques (sorted variables).
    parent : ndarray of int
        Parent node of each node, ``-1`` for the root of each component.
    schedule : list of int
        Nodes ordered children-before-parents (collect order).
    assign : ndarray of int
        The node containing each model clique.
    treewidth : int
        Largest node size minus one.
    table_entries : int
        Total number of entries of all node tables.
    """

    def __init__(self, n_states, cliques, order=None, heuristic="auto", max_bytes=None):
        self.n_states = np.asarray(n_states, dtype=np.int64)
        nbrs = _adjacency(len(self.n_states), cliques)
        order, elim = _choose_order(nbrs, self.n_states, order, heuristic, max_bytes)
        self.nodes, self.parent = _tree_from_elimination(order, elim)
        self.schedule = self._collect_order()
        self.shapes = [tuple(int(self.n_states[i]) for i in nd) for nd in self.nodes]
        sizes = [int(np.prod(s)) for s in self.shapes]
        self.assign = _assign_cliques(self.nodes, sizes, cliques, len(self.n_states))
        self._node_members = {}  # {node: [model cliques it holds]}
        for c, k in enumerate(self.assign):
            self._node_members.setdefault(int(k), []).append(c)
        self._placement_cache = None  # (layout, placement) of node_log_tables
        self.table_entries = int(sum(sizes))
        self.max_table = max(sizes, default=0)
        self.treewidth = max((len(nd) for nd in self.nodes), default=1) - 1
        self.cliques = [tuple(c) for c in cliques]
        self._edges = [self._edge(k) for k in range(len(self.nodes))]
        self.root_of = np.arange(len(self.nodes))
        for k in reversed(self.schedule):
            if self.parent[k] >= 0:
                self.root_of[k] = self.root_of[self.parent[k]]

    def _collect_order(self):
        """Nodes ordered so that every child comes before its parent."""
        children = [[] for _ in self.nodes]
        for k, p in enumerate(self.parent):
            if p >= 0:
                children[p].append(k)
        pre = []
        stack = [k for k, p in enumerate(self.parent) if p < 0]
        while stack:
            k = stack.pop()
            pre.append(k)
            stack.extend(children[k])
        return pre[::-1]

    def _edge(self, k):
        """Axes bookkeeping for the separator between node k and its parent."""
        p = self.parent[k]
        if p < 0:
            return None
        child, par = self.nodes[k], self.nodes[p]
        sep = set(child) & set(par)
        child_sum = tuple(a for a, v in enumerate(child) if v not in sep)
        par_sum = tuple(a for a, v in enumerate(par) if v not in sep)
        in_par = tuple(int(self.n_states[v]) if v in sep else 1 for v in par)
        in_child = tuple(int(self.n_states[v]) if v in sep else 1 for v in child)
        return child_sum, par_sum, in_par, in_child

    def memory_bytes(self) -> int:
        """Bytes used by one calibration (beliefs, messages and temporaries)."""
        return 8 * (2 * self.table_entries + 2 * self.max_table)

    def check_memory(self, max_bytes=None):
        """Raise :class:`TreewidthError` if a calibration would exceed ``max_bytes``."""
        max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
        need = self.memory_bytes()
        if need > max_bytes:
            raise TreewidthError(
                f"Exact inference is too large: the junction tree has treewidth "
                f"{self.treewidth}, its largest table has {self.max_table:,} entries and a "
                f"calibration needs about {need / 1024**2:,.0f} MiB, over the budget of "
                f"{max_bytes / 1024**2:,.0f} MiB. " + _ADVICE
            )

    def node_log_tables(self, full, layout):
        """Log-potential table of every node from the flat clique tables.

        A node's cliques are summed on the union of their variables first and broadcast into the
        node's table once (on a 14 x 14 grid's banded tree, nodes of 15 variables holding about
        three cliques each); the shapes are worked out once per tree and layout.
        """
        tables = [np.zeros(s) for s in self.shapes]
        for k, union, parts, into_node in self._clique_placement(layout):
            if union is None:  # one clique: straight into the node's table
                ((lo, hi, shape),) = parts
                tables[k] += full[lo:hi].reshape(shape)
                continue
            local = np.zeros(union)
            for lo, hi, shape in parts:
                local += full[lo:hi].reshape(shape)
            tables[k] += local.reshape(into_node)
        return tables

    def _clique_placement(self, layout):
        """Per node: ``(node, union shape or None, [(lo, hi, shape)], union-in-node shape)`` for
        :meth:`node_log_tables` (cached for the last layout)."""
        cached = self._placement_cache
        if cached is not None and cached[0] is layout:
            return cached[1]
        ns, placement = self.n_states, []
        for k, members in self._node_members.items():
            node, offsets = self.nodes[k], layout.table_offsets
            if len(members) == 1:
                clique = set(layout.cliques[members[0]])
                shape = tuple(int(ns[v]) if v in clique else 1 for v in node)
                placement.append((k, None, [(offsets[members[0]], offsets[members[0] + 1], shape)], None))
                continue
            union = tuple(v for v in node if any(v in layout.cliques[c] for c in members))
            parts = []
            for c in members:
                clique = set(layout.cliques[c])
                parts.append((offsets[c], offsets[c + 1], tuple(int(ns[v]) if v in clique else 1 for v in union)))
            into_node = tuple(int(ns[v]) if v in union else 1 for v in node)
            placement.append((k, tuple(int(ns[v]) for v in union), parts, into_node))
        self._placement_cache = (layout, placement)
        return placement

    def calibrate(self, full, layout, evidence=None, max_bytes=None):
        """Calibrate with the clique tables ``full`` (flat, ``layout`` order).

        Parameters
        ----------
        full : ndarray
            Flat log-potential tables, see :class:`skmrf._parametrisation.CliqueLayout`.
        layout : skmrf._parametrisation.CliqueLayout
        evidence : dict {variable: state}, optional
            Observed values; the result is then conditioned on them and
            ``log_z`` is the log of the unnormalised evidence mass.
        max_bytes : int, optional
            Memory budget; :class:`TreewidthError` before allocating if exceeded.

        Returns
        -------
        Calibration
        """
        self.check_memory(max_bytes)
        beliefs = self.node_log_tables(full, layout)
        for var, state in (evidence or {}).items():
            var, state = int(var), int(state)
            if not 0 <= state < self.n_states[var]:
                raise ValueError(f"Evidence state {state} for variable {var} is outside 0..{self.n_states[var] - 1}.")
            k = next(k for k, nd in enumerate(self.nodes) if var in nd)
            ax = self.nodes[k].index(var)
            mask = np.full(self.n_states[var], -np.inf)
            mask[state] = 0.0
            shape = [1] * len(self.nodes[k])
            shape[ax] = -1
            beliefs[k] = beliefs[k] + mask.reshape(shape)
        n_nodes = len(self.nodes)
        up = [None] * n_nodes
        shift = [None] * n_nodes  # log-scale of a table exponentiated during collect
        log_z_root = {}
        for k in self.schedule:  # collect: children before parents
            b = beliefs[k]
            hi, lo = float(b.max()), float(b.min())
            e = self._edges[k]
            if hi - lo < _SAFE_SPREAD:
                # Every entry is within exp(-700) of the largest, so exp(b - hi)
                # cannot underflow: exponentiate once and keep the table.
                np.subtract(b, hi, out=b)
                np.exp(b, out=b)
                shift[k] = hi
                total = b.sum(axis=e[0]) if e is not None else b.sum()
                msg = np.log(total) + hi
            else:  # wide spread or -inf (evidence): per-configuration log-sum-exp
                msg = _logsumexp(b, e[0] if e is not None else tuple(range(b.ndim)))
            if e is None:
                log_z_root[k] = float(msg)
            else:
                up[k] = msg.reshape(e[2])
                beliefs[self.parent[k]] += up[k]
        marg = [None] * n_nodes
        for k in reversed(self.schedule):  # distribute: parents are final first
            e = self._edges[k]
            log_z = log_z_root[self.root_of[k]]
            if e is None:
                msg = np.zeros(())
            else:
                _, par_sum, in_par, in_child = e
                with np.errstate(divide="ignore", invalid="ignore"):
                    # Downward message log(sum of the parent's marginal) + log Z,
                    # divided by the upward message (Hugin update).
                    down = np.log(marg[self.parent[k]].sum(axis=par_sum)).reshape(in_par)
                    msg = down + log_z - up[k]
                msg[np.isneginf(down)] = -np.inf  # 0/0 in probability space is 0
                msg = msg.reshape(in_child)
            if shift[k] is not None:
                marg[k] = beliefs[k] * np.exp(msg + (shift[k] - log_z))
            else:
                marg[k] = np.exp(beliefs[k] + (msg - log_z))
            beliefs[k] = None  # only the normalised marginal is kept
        return Calibration(self, layout, marg, log_z_root)


class Calibration:
    """A calibrated junction tree: ``log Z``, marginals and exact sampling.

    Attributes
    ----------
    log_z : float
        Log partition function (sum over tree components).
    node_marginals : list of ndarray
        Normalised joint probability table of every junction-tree node.
    """

    def __init__(self, tree, layout, node_marginals, log_z_root):
        self.tree = tree
        self.layout = layout
        self.node_marginals = node_marginals
        self.log_z = float(sum(log_z_root.values()))

    def clique_marginals(self):
        """Flat marginal tables of all model cliques (``layout`` order)."""
        tree, lay = self.tree, self.layout
        out = np.empty(lay.n_table)
        for k, members in tree._node_members.items():
            p = self.node_marginals[k]
            node = tree.nodes[k]
            union = {v for c in members for v in lay.cliques[c]}
            if len(members) > 1 and len(union) < len(node):  # one pass over the node's table
                p = p.sum(axis=tuple(a for a, v in enumerate(node) if v not in union))
                node = tuple(v for v in node if v in union)
            for c in members:
                clique = set(lay.cliques[c])
                axes = tuple(a for a, v in enumerate(node) if v not in clique)
                out[lay.table_offsets[c] : lay.table_offsets[c + 1]] = p.sum(axis=axes).ravel()
        return out

    def sample(self, n_samples, rng):
        """Exact independent samples by forward sampling from the roots."""
        tree = self.tree
        ns = tree.n_states
        x = np.zeros((n_samples, len(ns)), dtype=np.int64)
        for k in reversed(tree.schedule):  # parents before children
            node = tree.nodes[k]
            prob = self.node_marginals[k]
            p = tree.parent[k]
            sep = [] if p < 0 else [v for v in node if v in set(tree.nodes[p])]
            rest = [v for v in node if v not in sep]
            ax_sep = [node.index(v) for v in sep]
            ax_rest = [node.index(v) for v in rest]
            table = np.transpose(prob, ax_sep + ax_rest)
            n_sep = int(np.prod([ns[v] for v in sep])) if sep else 1
            table = table.reshape(n_sep, -1)
            if sep:
                code = np.ravel_multi_index(tuple(x[:, v] for v in sep), tuple(ns[sep]))
            else:
                code = np.zeros(n_samples, dtype=np.int64)
            cdf = np.cumsum(table, axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                cdf /= cdf[:, -1:]  # separator states of probability 0 are never drawn
            u = rng.random(n_samples)
            if n_sep == 1:
                draw = np.searchsorted(cdf[0], u, side="right")
            else:  # inverse CDF row by row, in chunks of samples
                draw = np.empty(n_samples, dtype=np.int64)
                step = max(1, (1 << 22) // cdf.shape[1])
                for a in range(0, n_samples, step):
                    b = slice(a, a + step)
                    draw[b] = (cdf[code[b]] <= u[b, None]).sum(axis=1)
            np.minimum(draw, cdf.shape[1] - 1, out=draw)
            vals = np.unravel_index(draw, tuple(ns[rest]))
            for v, val in zip(rest, vals):
                x[:, v] = val
        return x
