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

Three plans compute the same sum (``plan``):

- ``"none"`` (``decompose=False``): all the cliques that hold a free variable form a single
  network whose patterns are the distinct rows: the same algorithm on the undecomposed data
  with duplicate rows merged (the paper's baseline).
- ``"subnetworks"`` (``decompose=True``): the paper's decomposition, Eq. 2.
- ``"components"`` (chosen by ``decompose="auto"`` when cheaper): the same cut made row by
  row (:func:`~skmrf.data.decompose.missing_components`). Within one row, the cliques of a
  sub-network linked only through entries observed *in that row* are independent given the
  row, so ``log Z^s(d)`` is the sum of the log-potentials of the cliques the row fills
  completely (counted once, like complete data) and of ``log Z_C(d)`` over the connected
  components ``C`` of the row's missing entries. A component's pattern is its missing
  variables and the observed states next to them, nothing else: one large sub-network whose
  patterns are nearly all distinct compresses to a few hundred component patterns, each
  calibrated on a tree over its own missing variables. Components of the same shape share a
  batch; a shape too rare to pay for a batch of its own is calibrated on its sub-network's
  tree with the other cliques' tables set to zero and the other variables clamped.

``decompose="auto"`` prices each plan with a cost model of one evaluation
(:func:`evaluation_cost`: patterns times the floats of a calibration, plus a fixed cost per
batched call, both measured) and keeps the cheapest, per sub-network for the row-wise split.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np
from scipy.sparse import csr_matrix, vstack

from ..data import c_order_strides, count_joint_states, distinct_projections, subnetworks, transposed_states
from ..data.decompose import missing_components
from ..inference import JunctionTree
from ..inference.evidence import BatchedJunctionTree
from ..parametrisation import CliqueLayout
from ..utils._sklearn_compat import delayed

__all__ = [
    "COST_MODEL",
    "IncompleteDataTerm",
    "ModelTerm",
    "compatible_counts",
    "cost_features",
    "evaluation_cost",
    "factor_tables",
]

#: Floats (pattern x table entries) per batched calibration: one task of the E-step.
CHUNK_FLOATS = 1 << 20

#: Predicted seconds per evaluation of the sub-networks' data term below which ``decompose="auto"``
#: does not plan the row-wise split. Planning it took 4 to 11 ms on the networks of Table 1 at
#: 4,096-8,192 rows (37 ms on tree-255's 42 sub-networks), and saved 0.03 ms per evaluation on
#: chain-50 (0.28 ms), 0.1 on chain-100 (0.55 ms), 0.27 on alarm (0.96 ms), 0.38 on grid-10x10 seed 2
#: (0.73 ms): over the 44 to 300 evaluations of a fit the split breaks even around 0.5 ms, and
#: above 0.6 ms it wins several times its planning.
SPLIT_MIN_COST = 0.6e-3

#: Cost model of one evaluation of one batch (:func:`evaluation_cost`), seconds per unit of
#: each feature of :func:`cost_features`: per chunk of patterns, a fixed cost per call, per
#: node of the tree, per scope and per evidence variable (numpy calls whose cost does not
#: depend on the batch); per pattern, a cost per table entry of the tree, per gather index
#: and per scope. Fitted by ``benchmarks/decomposition_speedup.py --parts costmodel``
#: (non-negative least squares on the relative error of the process times of 2,138 batches
#: of every shape and size met in that benchmark's networks; numpy 2.4, scipy 1.17, one
#: thread): 90 % of the predictions are within 0.66-1.15 times the measured time. Only the
#: ratios between plans matter for the choice, and they hold better than the times.
COST_MODEL = {
    "call": 6.39e-05,
    "node": 3.14e-05,
    "scope": 1.29e-05,
    "evidence": 1.01e-05,
    "entry": 5.96e-08,
    "index": 2.83e-09,
    "pattern_scope": 7.53e-08,
}


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


def cost_features(tree, index_floats, n_evidence, n_patterns):
    """The features of :data:`COST_MODEL` for ``n_patterns`` patterns calibrated once on ``tree``.

    Parameters
    ----------
    tree : BatchedJunctionTree
    index_floats : int
        Gather indices per pattern (``sum_j m_j * size_j`` over the scopes).
    n_evidence : int
        Tree variables that some pattern observes (0 when every pattern sums them all).
    n_patterns : int

    Returns
    -------
    dict
        Same keys as :data:`COST_MODEL`.
    """
    n_scopes = len(tree.scopes)
    chunks = math.ceil(n_patterns * (tree.entries + index_floats) / CHUNK_FLOATS) if n_patterns > 0 else 0
    return {
        "call": chunks,
        "node": chunks * len(tree.tree.nodes),
        "scope": chunks * n_scopes,
        "evidence": chunks * n_evidence,
        "entry": n_patterns * tree.entries,
        "index": n_patterns * index_floats,
        "pattern_scope": n_patterns * n_scopes,
    }


def evaluation_cost(tree, index_floats, n_evidence, n_patterns):
    """Predicted seconds of calibrating ``n_patterns`` patterns on ``tree`` once (:data:`COST_MODEL`).

    Parameters are those of :func:`cost_features`.

    Returns
    -------
    float
    """
    features = cost_features(tree, index_floats, n_evidence, n_patterns)
    return float(sum(COST_MODEL[k] * v for k, v in features.items()))


class _Forest:
    """The sizes of several trees calibrated side by side as one (for :func:`evaluation_cost`)."""

    def __init__(self, trees):
        self.entries = sum(t.entries for t in trees)
        self.scopes = [sc for t in trees for sc in t.scopes]
        self.tree = SimpleNamespace(nodes=[nd for t in trees for nd in t.tree.nodes])


def _union_cost(trees, units, n_patterns):
    """Predicted cost of the undecomposed network from its sub-networks' trees and units.

    Its junction tree is the forest of theirs (the always-observed variables that separate
    them are sliced into the tables), its patterns the distinct rows.
    """
    index_floats = sum(u.index_floats for u in units)
    n_evidence = sum(int(u.observed.sum()) for u in units)
    return evaluation_cost(_Forest(trees), index_floats, n_evidence, n_patterns)


def _per_pattern(tree, index_floats):
    """The part of :func:`evaluation_cost` proportional to the number of patterns, per pattern."""
    f = cost_features(tree, index_floats, 0, 1)
    return sum(COST_MODEL[k] * f[k] for k in ("entry", "index", "pattern_scope"))


class _Group:
    """Patterns calibrated on one tree shape, batched, with their gather matrices.

    Parameters
    ----------
    tree : BatchedJunctionTree
    pieces : list of list of ndarray
        Per unit of patterns, one array per scope of shape ``(P_u, m_j, size_j)``: for each
        pattern, the positions in the flat full tables (``n_table`` for none: an inactive
        clique) of the ``m_j`` cliques that enter scope ``j``, at every joint state of the
        scope; their sum is the scope's table.
    evidence : ndarray of int64, shape (P, n_tree_variables)
    counts : ndarray of float64, shape (P,)
    n_table : int

    Attributes
    ----------
    gathers : list of scipy.sparse.csr_matrix
        One per chunk of patterns: the 0/1 matrix taking the flat full tables to the scope
        tables of the chunk's patterns (scopes one after the other, each ``(P_chunk, size_j)``
        in C order). Its transpose takes the weighted scope marginals back to expected table
        counts. One sparse product each way replaces a gather and a ``bincount`` per scope
        (measured 3 to 5 times faster).
    bounds : list of (int, int)
        The patterns of each chunk.
    index_floats : float
        Gather indices per pattern (mean).
    """

    def __init__(self, tree, pieces, evidence, counts, n_table):
        self.tree, self.evidence, self.counts = tree, evidence, counts
        self.sizes = [int(math.prod(sh)) for sh in tree.scope_shapes]
        per_scope = [_gather_matrix([piece[j] for piece in pieces], n_table) for j in range(len(self.sizes))]
        n = len(counts)
        self.index_floats = sum(m.nnz for m in per_scope) / max(1, n)
        per = max(1, int(CHUNK_FLOATS // max(1, self.floats_per_pattern)))
        self.bounds = [(a, min(a + per, n)) for a in range(0, n, per)]
        self.gathers = [
            vstack([m[a * size : b * size] for m, size in zip(per_scope, self.sizes)], format="csr")
            for a, b in self.bounds
        ]

    @property
    def floats_per_pattern(self):
        """Floats one pattern's calibration touches: its tree's tables and its table indices."""
        return self.tree.entries + self.index_floats

    @property
    def cost(self):
        """Predicted cost of one evaluation (:func:`evaluation_cost`)."""
        n_evidence = int((self.evidence >= 0).any(axis=0).sum())
        return evaluation_cost(self.tree, self.index_floats, n_evidence, len(self.counts))

    def chunks(self):
        return [(self, k) for k in range(len(self.bounds))]


def _gather_matrix(arrays, n_table):
    """The 0/1 matrix of shape ``(sum P_u * size, n_table)`` summing the cliques of each ``(P_u, m_u, size)``."""
    rows, cols, offset = [], [], 0
    for ix in arrays:
        n, _, size = ix.shape
        keep = ix < n_table
        rows.append(np.broadcast_to(offset + np.arange(n * size).reshape(n, 1, size), ix.shape)[keep])
        cols.append(ix[keep])
        offset += n * size
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    return csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(offset, n_table))


def _e_step_chunk(group, k, full, need_gradient=True):
    """``sum_p n_p log Z(d_p)``, per-pattern ``log Z(d_p)`` and expected table counts of a chunk."""
    a, b = group.bounds[k]
    gather = group.gathers[k]
    flat = gather @ full
    shaped, offset = [], 0
    for size, shape in zip(group.sizes, group.tree.scope_shapes):
        shaped.append(flat[offset : offset + (b - a) * size].reshape((b - a,) + shape))
        offset += (b - a) * size
    log_z, marginals = group.tree.calibrate(shaped, group.evidence[a:b])
    counts = group.counts[a:b]
    grad = None
    if need_gradient:
        weights = np.concatenate([(counts[:, None] * m.reshape(b - a, -1)).ravel() for m in marginals])
        grad = gather.T @ weights
    return float(counts @ log_z), log_z, grad


def _fold(codes):
    """One int64 key per row of small non-negative integer codes, equal exactly for equal rows.

    The columns are folded in mixed radix, re-ranked whenever the next fold could overflow:
    ``O(n_rows log n_rows)`` per re-ranking, no loop over rows.
    """
    key = np.zeros(codes.shape[0], dtype=np.int64)
    span = 1
    for j in range(codes.shape[1]):
        radix = int(codes[:, j].max()) + 1
        if span * radix >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.ravel().astype(np.int64)
            span = int(key.max()) + 1
        key = key * radix + codes[:, j]
        span *= radix
    return key


def _distinct_tuples(codes, weight=None):
    """Distinct rows of small non-negative integer codes: a first row, count (summed ``weight``) and inverse."""
    _, first, inverse, counts = np.unique(_fold(codes), return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    if weight is not None:
        return first, np.bincount(inverse, weights=weight, minlength=len(first)), inverse
    return first, counts.astype(np.float64), inverse


def _canonical_order(layout, cliques, variables):
    """An order of a component's variables that gives components of one shape the same key.

    Breadth-first from the variable of fewest neighbours (then fewest states, then index),
    neighbours visited in the same order: a path is numbered from one end along the path, a
    square around it, whatever the variables' indices, so that such components share one
    batch (:func:`_shape`). Not a canonical form of every graph: two orders of one shape
    only cost an extra batch.
    """
    variables = [int(v) for v in variables]
    if len(variables) <= 1:
        return np.asarray(variables, dtype=np.int64)
    inside = set(variables)
    nbrs = {v: set() for v in variables}
    for c in cliques:
        members = [v for v in layout.cliques[c] if v in inside]
        for v in members:
            nbrs[v].update(members)
    rank = {v: (len(nbrs[v]), int(layout.n_states[v]), v) for v in variables}
    order, seen = [], set()
    for start in sorted(variables, key=rank.get):
        if start in seen:
            continue
        queue = [start]
        seen.add(start)
        while queue:
            v = queue.pop(0)
            order.append(v)
            for u in sorted(nbrs[v] - seen, key=rank.get):
                seen.add(u)
                queue.append(u)
    return np.asarray(order, dtype=np.int64)


@functools.lru_cache(maxsize=1 << 12)
def _maximal_scopes(scopes):
    """The maximal ones among distinct sorted scopes, and the first maximal scope holding each."""
    sets = [frozenset(sc) for sc in scopes]
    maximal = tuple(sorted(sc for sc, f in zip(scopes, sets) if not any(f < t for t in sets)))
    return maximal, {sc: next(m for m in maximal if f.issubset(m)) for sc, f in zip(scopes, sets)}


def _shape(layout, cliques, tree_vars):
    """The tree shape of some cliques summed over ``tree_vars`` (in that order).

    A clique's table enters the tree on its *reduced scope*, its tree variables (local
    numbers, sorted); each clique goes to the first maximal reduced scope holding its own
    (a unary table is gathered into a pairwise one), so that a calibration has as few
    tables to fill and read back as possible.

    Returns the key ``(states of the tree variables, scopes)``, the cliques of each scope,
    and the gather indices per pattern (``sum_j m_j * size_j``).
    """
    local = {int(v): i for i, v in enumerate(tree_vars)}
    reduced = [tuple(sorted(local[v] for v in layout.cliques[c] if v in local)) for c in cliques]
    maximal, home = _maximal_scopes(tuple(sorted(set(reduced))))
    by_scope = {sc: [] for sc in maximal}
    for c, r in zip(cliques, reduced):
        by_scope[home[r]].append(c)
    n_states = tuple(int(layout.n_states[v]) for v in tree_vars)
    index_floats = sum(len(by_scope[sc]) * math.prod(n_states[i] for i in sc) for sc in maximal)
    return (n_states, maximal), [by_scope[sc] for sc in maximal], index_floats


class _Unit:
    """Patterns of some cliques summed over some variables: the input of one batched tree.

    Parameters
    ----------
    layout : CliqueLayout
    cliques : sequence of int
        The cliques (layout indices) whose tables enter the calibration.
    tree_vars : sequence of int
        The variables the tree sums over (sorted); every other variable of the cliques is
        sliced at the pattern's state.
    rows : ndarray of int64, shape (P, n_variables)
        A row showing each pattern: ``-1`` on the tree variables it sums over, its state on
        the tree variables it observes (evidence) and on every other variable of its active
        cliques.
    counts : ndarray of float64, shape (P,)
    active : ndarray of bool, shape (P, len(cliques)), optional
        Cliques that enter each pattern's tables (all by default); the others point at the
        zero slot.
    shape : tuple, optional
        ``_shape(layout, cliques, tree_vars)`` if already known.
    """

    def __init__(self, layout, cliques, tree_vars, rows, counts, active=None, shape=None):
        self.layout, self.cliques, self.rows, self.counts, self.active = layout, list(cliques), rows, counts, active
        self.tree_vars = np.asarray(tree_vars, dtype=np.int64)
        shape = _shape(layout, self.cliques, self.tree_vars) if shape is None else shape
        self.key, self.by_scope, self.index_floats = shape
        self.n_states, self.scopes = self.key
        self.observed = (rows[:, self.tree_vars] >= 0).any(axis=0)
        if active is not None and len(rows):  # the gather indices of the active cliques only
            size = {c: math.prod(self.n_states[i] for i in sc) for sc, m in zip(self.scopes, self.by_scope) for c in m}
            self.index_floats = float((active @ np.array([size[c] for c in self.cliques])).sum()) / len(rows)

    def __len__(self):
        return len(self.counts)

    def build(self):
        """Gather indices ``[(P, m_j, size_j) per scope]`` and the evidence ``(P, n_tree_vars)``."""
        lay, rows = self.layout, self.rows
        pos = {c: k for k, c in enumerate(self.cliques)}
        local = {int(v): i for i, v in enumerate(self.tree_vars)}
        index = []
        for scope, members in zip(self.scopes, self.by_scope):
            grid = np.indices(tuple(self.n_states[i] for i in scope)).reshape(len(scope), -1)
            axis = {i: a for a, i in enumerate(scope)}
            per_clique = []
            for c in members:
                clique = list(lay.cliques[c])
                strides = c_order_strides(lay.n_states[clique])
                summed = np.array([v in local for v in clique])
                base = lay.table_offsets[c] + np.maximum(rows[:, clique], 0)[:, ~summed] @ strides[~summed]
                offsets = sum(strides[k] * grid[axis[local[v]]] for k, v in enumerate(clique) if summed[k])
                ix = base[:, None] + offsets[None, :]
                if self.active is not None:
                    ix[~self.active[:, pos[c]]] = lay.n_table
                per_clique.append(ix)
            index.append(np.stack(per_clique, axis=1))
        return index, rows[:, self.tree_vars]


def factor_tables(layout):
    """The maximal cliques of ``layout`` and the 0/1 matrix adding every clique's table into one of theirs.

    The parametrisation has a block for every clique of the downward closure of the factors
    (982 cliques for the 45 maximal cliques of win95pts); summed into the maximal ones, the
    log-potential is the same function of the states, so the data term can gather a few
    tables per pattern instead of dozens. The expected counts of the maximal cliques map back
    by the transpose: a clique's counts are the sums of its maximal clique's over the others'
    states.

    Returns
    -------
    factor_layout : CliqueLayout
        Of the maximal cliques.
    gather : scipy.sparse.csr_matrix, shape (factor_layout.n_table, layout.n_table)
        ``gather @ full`` are the maximal cliques' tables.
    """
    cliques = layout.cliques
    holders = {}
    for k, c in enumerate(cliques):
        for v in c:
            holders.setdefault(v, []).append(k)
    sets = [frozenset(c) for c in cliques]
    maximal = [k for k, c in enumerate(cliques) if not any(sets[k] < sets[j] for j in holders[c[0]])]
    factor_layout = CliqueLayout([cliques[k] for k in maximal], layout.n_states)
    index = {k: f for f, k in enumerate(maximal)}
    rows, cols = [], []
    for k, c in enumerate(cliques):
        f = index.get(k)
        if f is None:
            f = index[next(j for j in holders[c[0]] if j in index and sets[k] < sets[j])]
        host = factor_layout.cliques[f]
        grid = np.indices(factor_layout.table_shapes[f]).reshape(len(host), -1)
        strides = c_order_strides(layout.n_states[list(c)])
        cols.append(layout.table_offsets[k] + sum(strides[i] * grid[host.index(v)] for i, v in enumerate(c)))
        rows.append(factor_layout.table_offsets[f] + np.arange(grid.shape[1]))
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    gather = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(factor_layout.n_table, layout.n_table))
    return factor_layout, gather


class ModelTerm:
    """``log Z`` and the clique marginals (the model term of Eq. 1) of the model's junction tree.

    The same calibration as ``tree.calibrate(full, layout)`` followed by
    ``clique_marginals()``, with the Python loops over the cliques replaced by one sparse
    product each way: the flat clique tables are gathered into the tables of the tree's
    nodes (each clique added into the node holding it), the tree is calibrated over its
    nodes, and the node marginals are summed back onto the cliques by the transposed
    product (a clique's marginal is the sum of its node's marginal over the node's other
    variables). With the downward closure of wide factors (982 cliques on 50 nodes for
    win95pts) this is 5 times faster (2.4 ms against 13 ms); on a 9x9 grid (225 cliques
    on 68 nodes) 1.3 times.

    Parameters
    ----------
    layout : CliqueLayout
    tree : JunctionTree
        The model's tree (built on ``layout.cliques``).
    max_bytes : int, optional
    """

    def __init__(self, layout, tree, max_bytes=None):
        self.layout, self.max_bytes = layout, max_bytes
        nodes = [tuple(int(v) for v in nd) for nd in tree.nodes]
        self.node_layout = CliqueLayout(nodes, layout.n_states)
        # The nodes are the maximal cliques of a chordal graph: a greedy order eliminates it
        # without fill, so the tree on them has the same tables (checked; else the original).
        node_tree = JunctionTree(layout.n_states, nodes, max_bytes=max_bytes)
        self.tree = node_tree if node_tree.table_entries <= tree.table_entries else None
        self._fallback = tree
        rows, cols = [], []
        for c, k in enumerate(tree.assign):
            node, clique = nodes[k], layout.cliques[c]
            grid = np.indices(self.node_layout.table_shapes[k]).reshape(len(node), -1)
            strides = c_order_strides(layout.n_states[list(clique)])
            cols.append(layout.table_offsets[c] + sum(strides[i] * grid[node.index(v)] for i, v in enumerate(clique)))
            rows.append(self.node_layout.table_offsets[k] + np.arange(grid.shape[1]))
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        self.gather = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(self.node_layout.n_table, layout.n_table))

    def __call__(self, full):
        """``(log Z, flat clique marginals)`` of the log-potential tables ``full``."""
        if self.tree is None:
            cal = self._fallback.calibrate(full, self.layout, max_bytes=self.max_bytes)
            return cal.log_z, cal.clique_marginals()
        cal = self.tree.calibrate(self.gather @ full, self.node_layout, max_bytes=self.max_bytes)
        return cal.log_z, self.gather.T @ cal.clique_marginals()


class IncompleteDataTerm:
    """``sum_i log Z(d_i)`` over the rows of incomplete data, and its gradient.

    Parameters
    ----------
    layout : skmrf.parametrisation.CliqueLayout
    X : ndarray of int64, shape (n_rows, n_variables)
        States, ``-1`` where missing; no row entirely missing.
    decompose : {"auto", True, False}, default="auto"
        The plan (module docstring): ``False`` one network (``"none"``), ``True`` the
        paper's sub-networks (``"subnetworks"``), ``"auto"`` the cheapest of those and
        the row-wise split (``"components"``) by :func:`evaluation_cost`.
    max_bytes : int, optional
        Memory budget of one calibration of a sub-network's tree (one pattern).
    keep_rows : bool, default=False
        Keep which pattern each row shows, for :meth:`row_log_evidence` (the row-wise split
        is then not considered).
    weight : ndarray of float64 of shape (n_rows,), optional
        Row weights (``sample_weight``): a pattern's count is the sum of its rows' weights, so
        integer weights give the counts of the rows repeated, exactly.

    Attributes
    ----------
    n_rows : int
    free : ndarray of bool, shape (n_variables,)
        Variables missing in at least one row.
    plan : {"none", "subnetworks", "components"}
        What was built.
    networks : list of tuple of int
        The cliques (layout indices) of each sub-network with a free variable (one network
        holding all of them for ``plan="none"``).
    n_patterns : ndarray of int64, shape (n_networks,)
        Distinct patterns of the data projected on each network.
    split : ndarray of bool, shape (n_networks,)
        Networks whose patterns were cut into the components of their missing entries.
    n_calibrations : int
        Patterns calibrated per evaluation (all batches).
    predicted_cost : dict
        :func:`evaluation_cost` of one evaluation under each plan that was priced.
    layout : CliqueLayout
        Of the maximal cliques (:func:`factor_tables`), on which the batches are built;
        ``clique_layout`` is the one given.
    observed_counts : ndarray of float64, shape (layout.n_table,)
        Table counts of the maximal cliques counted like complete data (zeros elsewhere).
    """

    def __init__(self, layout, X, decompose="auto", max_bytes=None, keep_rows=False, weight=None):
        # Everything below runs on the maximal cliques' tables (factor_tables): the same data
        # term, fewer tables to gather per pattern; evaluate() maps the tables and counts.
        self.clique_layout = layout
        layout, self._factors = factor_tables(layout)
        self.layout = layout
        self.max_bytes = max_bytes
        self.n_rows, n_var = X.shape
        missing = X < 0
        self.free = missing.any(axis=0)
        has_free = np.array([self.free[list(c)].any() for c in layout.cliques], dtype=bool)
        self.observed_cliques = np.flatnonzero(~has_free)
        self._trees = {}
        self._X = X if keep_rows else None
        self.groups, self.predicted_cost = [], {}
        parts = subnetworks(layout.cliques, self.free)
        projected, inverse = self._project(X, missing, parts, weight)
        part_units = [_Unit(layout, n, self._free_of(n), X[r], c) for n, (r, c) in zip(parts, projected)]
        units = {"subnetworks": part_units}
        if decompose is not False or len(parts) <= 1:
            self.predicted_cost["subnetworks"] = self._cost(part_units)
        whole = None
        if decompose is False and len(parts) > 1:
            whole = self._whole(units, inverse, has_free, X, weight)
        elif decompose is not True and len(parts) > 1:
            # Priced from its sub-networks' trees (its tree is their forest) and its number of
            # distinct rows; built only if it wins.
            n_rows = len(np.unique(_fold(inverse)))
            self.predicted_cost["none"] = _union_cost([self._tree(u.key) for u in part_units], part_units, n_rows)
        split = np.zeros(len(parts), dtype=bool)
        worth = self.predicted_cost.get("subnetworks", 0.0) >= SPLIT_MIN_COST
        if parts and not keep_rows and (decompose == "components" or (decompose == "auto" and worth)):
            units["components"], split, constant = self._split(parts, part_units, decompose == "components")
            self.predicted_cost["components"] = self._cost(units["components"])
        if decompose is False:
            self.plan = "none"
        elif decompose == "components":
            self.plan = "components" if split.any() else "subnetworks"
        else:
            self.plan = min(self.predicted_cost, key=self.predicted_cost.get) if self.predicted_cost else "subnetworks"
            if self.plan == "none" and "none" not in units:  # price it exactly before taking it
                whole = self._whole(units, inverse, has_free, X, weight)
                self.plan = min(self.predicted_cost, key=self.predicted_cost.get)
            if self.plan == "components" and not split.any():
                self.plan = "subnetworks"  # the same units
        if self.plan == "none" and whole is not None:
            self.networks, which = whole
        else:
            self.networks, which = parts, inverse
        units.setdefault("none", part_units)  # one sub-network (or none) is the whole network
        chosen = "subnetworks" if self.plan == "components" else self.plan
        self.n_patterns = np.array([len(u) for u in units[chosen]], dtype=np.int64)
        self.split = split if self.plan == "components" else np.zeros(len(self.networks), dtype=bool)
        self.observed_counts = self._observed_counts(X, weight)
        if self.plan == "components":
            self.observed_counts += constant
        self._build(units[self.plan])
        self.n_calibrations = int(sum(len(g.counts) for g in self.groups))
        self._row_patterns = which if keep_rows else None

    def _whole(self, units, inverse, has_free, X, weight=None):
        """The undecomposed network's unit (its distinct rows) and its exact price.

        A row's pattern on the whole network is the tuple of its patterns on the sub-networks.
        Returns ``(networks, which pattern each row shows)``.
        """
        rows, counts, which = _distinct_tuples(inverse, weight)
        net = tuple(np.flatnonzero(has_free).tolist())
        units["none"] = [_Unit(self.layout, net, self._free_of(net), X[rows], counts)]
        self.predicted_cost["none"] = self._cost(units["none"])
        return [net], which[:, None]

    def _project(self, X, missing, parts, weight=None):
        """Distinct patterns of the rows projected on each sub-network, in one pass.

        Returns ``[(representative rows, counts)]`` per sub-network and the pattern (local
        index) each row shows on each, shape ``(n_rows, n_parts)``.
        """
        lay = self.layout
        if not parts:
            return [], np.zeros((self.n_rows, 0), dtype=np.int64)
        variables = [tuple(sorted({v for c in net for v in lay.cliques[c]})) for net in parts]
        Xc = np.where(missing, lay.n_states, X)  # "missing" is one more state
        sub, row, count, inverse = distinct_projections(
            Xc, variables, lay.n_states + 1, return_inverse=True, weight=weight
        )
        starts = np.concatenate([[0], np.cumsum(np.bincount(sub, minlength=len(parts)))])
        projected = [(row[a:b], count[a:b]) for a, b in zip(starts[:-1], starts[1:])]
        return projected, inverse - starts[:-1][None, :]

    # -- planning --------------------------------------------------------------
    def _free_of(self, cliques):
        return sorted({v for c in cliques for v in self.layout.cliques[c] if self.free[v]})

    def _tree(self, key):
        """One tree per shape, built once."""
        if key not in self._trees:
            n_states, scopes = key
            self._trees[key] = BatchedJunctionTree(n_states, scopes, max_bytes=self.max_bytes)
        return self._trees[key]

    def _cost(self, units):
        """Predicted cost of one evaluation: units of one shape share a batch."""
        by_key = {}
        for u in units:
            if len(u):
                by_key.setdefault(u.key, []).append(u)
        total = 0.0
        for key, us in by_key.items():
            n = sum(len(u) for u in us)
            index_floats = sum(len(u) * u.index_floats for u in us) / n
            n_evidence = int(np.logical_or.reduce([u.observed for u in us]).sum())
            total += evaluation_cost(self._tree(key), index_floats, n_evidence, n)
        return total

    def _split(self, parts, coarse, force=False):
        """The row-wise split: component units per sub-network where it is cheaper.

        Returns the units, which networks were split, and the table counts of the cliques
        that the split networks' rows fill completely (counted like complete data).
        """
        lay = self.layout
        fine = self._components(parts, coarse)
        n_fine = np.bincount(fine["owner"], minlength=len(parts))
        # A sub-network is split when its components, calibrated on its own tree (the other
        # cliques zeroed), are fewer than its patterns: the same cost per pattern.
        split = np.array([(n < len(u) or force) and n > 0 for n, u in zip(n_fine, coarse)], dtype=bool)
        take = split[fine["owner"]]
        owner, member, prow = fine["owner"][take], fine["member"][take], fine["rows"][take]
        weight, touch = fine["counts"][take], fine["touch"][take]
        # Each shape of component gets a batch on a tree of its own where that is cheaper than
        # its patterns' share of their hosts' calibrations.
        first, _, which = _distinct_tuples(np.column_stack([owner, member]))
        order = np.argsort(which, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(which, minlength=len(first)))])
        cliques_of = fine["cliques"]
        entries = {}  # shape key -> [(patterns, cliques, component variables, shape)]
        for m in range(len(first)):
            sel = order[bounds[m] : bounds[m + 1]]
            cliques = cliques_of[touch[first[m]]].tolist()
            comp = _canonical_order(lay, cliques, np.flatnonzero(member[first[m]]))
            shape = _shape(lay, cliques, comp)
            entries.setdefault(shape[0], []).append((sel, cliques, comp, shape))
        per_host = np.array([_per_pattern(self._tree(u.key), u.index_floats) for u in coarse])
        promoted = np.zeros(len(owner), dtype=bool)
        units = []
        for key, members in entries.items():
            n = sum(len(sel) for sel, *_ in members)
            hosted = sum(float(per_host[owner[sel]].sum()) for sel, *_ in members)
            if hosted <= self._min_fixed(key):
                continue  # too rare to pay for a batch: stays on its host's tree
            index_floats = max(shape[2] for *_, shape in members)
            if evaluation_cost(self._tree(key), index_floats, 0, n) >= hosted:
                continue
            for sel, cliques, comp, shape in members:
                units.append(_Unit(lay, cliques, comp, prow[sel], weight[sel], shape=shape))
                promoted[sel] = True
        constant = np.zeros(lay.n_table)
        position = {c: k for k, c in enumerate(cliques_of.tolist())}
        for s, (net, unit) in enumerate(zip(parts, coarse)):
            if not split[s]:
                units.append(unit)
                continue
            rest = (owner == s) & ~promoted
            if rest.any():
                active = touch[rest][:, [position[c] for c in net]]
                units.append(_Unit(lay, net, unit.tree_vars, prow[rest], weight[rest], active))
            constant += self._filled_counts(net, unit.rows, unit.counts)
        return units, split, constant

    def _components(self, parts, coarse):
        """The distinct components of the missing entries of every sub-network's patterns.

        A component's pattern is its sub-network, its variables and the observed states of
        the variables it shares a clique with; nothing else of the row enters its
        calibration. All sub-networks at once (components never cross them). Returns a dict
        of arrays over the distinct component patterns: ``owner`` (sub-network), ``member``
        (its variables), ``rows`` (a row showing it: the component ``-1``, every other
        variable at a state, the other missing entries at 0, their cliques being inactive),
        ``counts``, ``touch`` (which of ``cliques``, the cliques of all the sub-networks,
        hold one of its variables) and ``cliques``.
        """
        lay = self.layout
        n_var = len(self.free)
        rows = np.concatenate([u.rows for u in coarse])
        counts = np.concatenate([u.counts for u in coarse])
        owner = np.repeat(np.arange(len(parts)), [len(u) for u in coarse])
        in_net = np.zeros((len(parts), n_var), dtype=bool)
        for s, net in enumerate(parts):
            in_net[s, [v for c in net for v in lay.cliques[c]]] = True
        cliques = np.array([c for net in parts for c in net], dtype=np.int64)
        row_of, member = missing_components((rows < 0) & in_net[owner], [lay.cliques[c] for c in cliques])
        incidence = csr_matrix(
            (
                np.ones(sum(len(lay.cliques[c]) for c in cliques)),
                (
                    np.repeat(np.arange(len(cliques)), [len(lay.cliques[c]) for c in cliques]),
                    np.concatenate([lay.cliques[c] for c in cliques]),
                ),
            ),
            shape=(len(cliques), n_var),
        )
        touch = csr_matrix(member.astype(np.float64)) @ incidence.T
        closure = (touch @ incidence).toarray() > 0
        touch = touch.toarray() > 0
        states = rows[row_of]
        ns = lay.n_states
        code = np.where(member, ns, np.where(closure, states, ns + 1))
        comp_owner = owner[row_of]
        rep, _, inverse = _distinct_tuples(np.column_stack([comp_owner, code]))
        weight = np.bincount(inverse, weights=counts[row_of], minlength=len(rep))
        return {
            "owner": comp_owner[rep],
            "member": member[rep],
            "rows": np.where(member[rep], -1, np.maximum(states[rep], 0)),
            "counts": weight,
            "touch": touch[rep],
            "cliques": cliques,
        }

    def _min_fixed(self, key):
        """A lower bound on the fixed cost of a batch of shape ``key`` (without building its tree)."""
        return COST_MODEL["call"] + COST_MODEL["node"] + COST_MODEL["scope"] * len(key[1])

    def _filled_counts(self, net, rows, counts):
        """Table counts of the cliques of ``net`` that each pattern fills completely."""
        lay = self.layout
        out = np.zeros(lay.n_table)
        for c in net:
            clique = list(lay.cliques[c])
            x = rows[:, clique]
            full = (x >= 0).all(axis=1)
            if full.any():
                codes = lay.table_offsets[c] + x[full] @ c_order_strides(lay.n_states[clique])
                out += np.bincount(codes, weights=counts[full], minlength=lay.n_table)
        return out

    def _build(self, units):
        """Batch the units of each shape into one group."""
        by_key = {}
        for u in units:
            if len(u):
                by_key.setdefault(u.key, []).append(u)
        self._pattern_of = {}
        for key, us in by_key.items():
            built = [u.build() for u in us]
            evidence = np.concatenate([b[1] for b in built])
            counts = np.concatenate([u.counts for u in us])
            offset = 0
            for u in us:  # where each unit's patterns sit in this group's batch
                self._pattern_of[id(u)] = (len(self.groups), offset)
                offset += len(u)
            tree = self._tree(key)
            self.groups.append(_Group(tree, [b[0] for b in built], evidence, counts, self.layout.n_table))
        self._units = units

    def _observed_codes(self, X):
        """Codes into the flat tables of the cliques with no free variable, in chunks."""
        obs = np.zeros(len(self.layout.cliques), dtype=bool)
        obs[self.observed_cliques] = True
        for members, codes in self.layout.iter_codes(np.maximum(X, 0)):
            if obs[members].any():
                yield codes[:, obs[members]]

    def _observed_counts(self, X, weight=None):
        """Table counts (summed weights) of the cliques with no free variable (complete data there)."""
        lay = self.layout
        counts = np.zeros(lay.n_table)
        if not len(self.observed_cliques):
            return counts
        XT = transposed_states(np.maximum(X, 0), int(lay.n_states.max()))
        sizes = np.array([len(lay.cliques[c]) for c in self.observed_cliques])
        for size in np.unique(sizes):
            members = self.observed_cliques[sizes == size]
            var = np.array([lay.cliques[c] for c in members], dtype=np.int64)
            n_configs = int(lay.table_sizes[members].max())
            per = count_joint_states(XT, var, c_order_strides(lay.n_states[var]), n_configs, weight=weight)
            keep = np.arange(n_configs)[None, :] < lay.table_sizes[members][:, None]
            dest = lay.table_offsets[members][:, None] + np.arange(n_configs)[None, :]
            counts[dest[keep]] = per[keep]
        return counts

    # -- evaluation ----------------------------------------------------------
    @property
    def work(self):
        """Work of one evaluation: the floats of all the batched calibrations."""
        return sum(len(g.counts) * g.floats_per_pattern for g in self.groups)

    @property
    def cost(self):
        """Predicted cost of one evaluation as built (:func:`evaluation_cost` per batch)."""
        return sum(g.cost for g in self.groups)

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
        full = self._factors @ full
        if parallel is None:
            results = [_e_step_chunk(*t, full) for t in self.tasks()]
        else:
            results = parallel(delayed(_e_step_chunk)(*t, full) for t in self.tasks())
        value = float(self.observed_counts @ full)
        grad = self.observed_counts.copy()
        for v, _, g in results:
            value += v
            grad += g
        return value, self._factors.T @ grad

    def tables(self, full):
        """The flat tables the batches gather from (the maximal cliques'), from the layout's ``full``."""
        return self._factors @ full

    def row_log_evidence(self, full):
        """``log Z(d_r)`` of every row (needs ``keep_rows=True``)."""
        full = self._factors @ full
        per_group = [
            np.concatenate([_e_step_chunk(*t, full, need_gradient=False)[1] for t in g.chunks()]) for g in self.groups
        ]
        out = np.zeros(self.n_rows)
        for codes in self._observed_codes(self._X):
            out += full[codes].sum(axis=1)
        for s, unit in enumerate(self._units):
            g, offset = self._pattern_of[id(unit)]
            out += per_group[g][offset + self._row_patterns[:, s]]
        return out
