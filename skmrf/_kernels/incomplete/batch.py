"""Batches of the data term: patterns of one tree shape, their gather matrices and their E-step.

A *unit* (:class:`Unit`) is a set of patterns of some cliques summed over some variables: a
sub-network's distinct rows, the undecomposed network's, or the components of the row-wise
split. Units of one *shape* (states of the tree variables and the reduced scopes of the
cliques, :func:`tree_shape`) share one :class:`~skmrf.inference._evidence.BatchedJunctionTree`
(:class:`TreeCache`) and are calibrated together as one :class:`Group`, chunk by chunk
(:func:`e_step_chunk`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.sparse import csr_matrix, vstack

from ..._data import c_order_strides
from ...inference._evidence import BatchedJunctionTree
from .cost import CHUNK_FLOATS, FLAT_MAX_MEMORY_RATIO, evaluation_cost, flat_cost

__all__ = [
    "FlatGroup",
    "Group",
    "TreeCache",
    "Unit",
    "by_shape",
    "distinct_tuples",
    "e_step_chunk",
    "fold_rows",
    "flat_sizes",
    "tree_shape",
]


def fold_rows(codes):
    """One int64 key per row of small non-negative integer codes, equal exactly for equal rows.

    The columns are folded in mixed radix, re-ranked whenever the next fold could overflow:
    ``O(n_rows log n_rows)`` per re-ranking, no loop over rows.
    """
    key = np.zeros(codes.shape[0], dtype=np.int64)
    if not len(key):
        return key
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


def distinct_tuples(codes, weight=None):
    """Distinct rows of small non-negative integer codes: a first row, count (summed ``weight``) and inverse."""
    _, first, inverse, counts = np.unique(fold_rows(codes), return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    if weight is not None:
        return first, np.bincount(inverse, weights=weight, minlength=len(first)), inverse
    return first, counts.astype(np.float64), inverse


@functools.lru_cache(maxsize=1 << 12)
def _maximal_scopes(scopes):
    """The maximal ones among distinct sorted scopes, and the first maximal scope holding each."""
    sets = [frozenset(sc) for sc in scopes]
    maximal = tuple(sorted(sc for sc, f in zip(scopes, sets) if not any(f < t for t in sets)))
    return maximal, {sc: next(m for m in maximal if f.issubset(m)) for sc, f in zip(scopes, sets)}


def tree_shape(layout, cliques, tree_vars):
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


class Unit:
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
        ``tree_shape(layout, cliques, tree_vars)`` if already known.
    """

    def __init__(self, layout, cliques, tree_vars, rows, counts, active=None, shape=None):
        self.layout, self.cliques, self.rows, self.counts, self.active = layout, list(cliques), rows, counts, active
        self.tree_vars = np.asarray(tree_vars, dtype=np.int64)
        shape = tree_shape(layout, self.cliques, self.tree_vars) if shape is None else shape
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


class Group:
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
        # The transposes, built once: scipy builds a new matrix object at every ``.T``.
        self.scatters = [m.T.tocsr() for m in self.gathers]

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


def e_step_chunk(group, k, full, need_gradient=True):
    """``sum_p n_p log Z(d_p)``, per-pattern ``log Z(d_p)`` and expected table counts of a chunk."""
    if isinstance(group, FlatGroup):
        return group.e_step(k, full, need_gradient)
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
        grad = group.scatters[k] @ weights
    return float(counts @ log_z), log_z, grad


class TreeCache:
    """One :class:`~skmrf.inference._evidence.BatchedJunctionTree` per tree shape, built once.

    Parameters
    ----------
    max_bytes : int, optional
        Memory budget of one calibration of a tree (one pattern).
    """

    def __init__(self, max_bytes=None):
        self.max_bytes = max_bytes
        self._trees = {}

    def __call__(self, key):
        """The tree of shape ``key = (states of the tree variables, scopes)``."""
        if key not in self._trees:
            n_states, scopes = key
            self._trees[key] = BatchedJunctionTree(n_states, scopes, max_bytes=self.max_bytes)
        return self._trees[key]

    def cost(self, units):
        """Predicted cost of one evaluation of ``units`` (:meth:`batches`)."""
        return self.batches(units)[2]

    def batches(self, units):
        """How ``units`` are batched, and the predicted cost of one evaluation.

        Units of one shape share a tree (:func:`evaluation_cost`), unless enumerating their
        patterns' joint states in the one :class:`FlatGroup` of all enumerated units is
        cheaper (:func:`flat_cost`, its fixed cost paid once) and takes at most
        :data:`~.cost.FLAT_MAX_MEMORY_RATIO` times the trees' floats.

        Returns
        -------
        trees : dict
            Shape key -> its units, calibrated on trees.
        flat : list of Unit
            The units enumerated.
        cost : float
        """
        trees, flat, total, sizes = {}, [], 0.0, np.zeros(3)
        for key, us in by_shape(units).items():
            n = sum(len(u) for u in us)
            index_floats = sum(len(u) * u.index_floats for u in us) / n
            n_evidence = int(np.logical_or.reduce([u.observed for u in us]).sum())
            tree_cost = evaluation_cost(self(key), index_floats, n_evidence, n)
            size = np.sum([flat_sizes(u) for u in us], axis=0)
            small = size[0] + size[1] <= FLAT_MAX_MEMORY_RATIO * n * (self(key).entries + index_floats)
            if small and flat_cost(*size, n_chunks=0) < tree_cost:
                flat.extend(us)
                sizes += size
            else:
                trees[key] = us
                total += tree_cost
        if flat:
            total += flat_cost(*sizes, n_chunks=max(1, math.ceil((sizes[0] + sizes[1]) / CHUNK_FLOATS)))
        return trees, flat, total


def by_shape(units):
    """The non-empty units grouped by tree shape, in order of first appearance."""
    out = {}
    for u in units:
        if len(u):
            out.setdefault(u.key, []).append(u)
    return out


def missing_states(unit):
    """Per pattern of ``unit``: which tree variables it sums over, and the number of their joint states."""
    missing = unit.rows[:, unit.tree_vars] < 0
    n_states = np.asarray(unit.n_states, dtype=np.float64)
    return missing, np.prod(np.where(missing, n_states[None, :], 1.0), axis=1)


def touching(unit, missing):
    """Which of the unit's active cliques hold a variable each pattern sums over, shape ``(P, n_cliques)``."""
    local = {int(v): i for i, v in enumerate(unit.tree_vars)}
    incidence = np.zeros((len(unit.tree_vars), len(unit.cliques)))
    for k, c in enumerate(unit.cliques):
        for v in unit.layout.cliques[c]:
            if v in local:
                incidence[local[v], k] = 1.0
    touch = (missing.astype(np.float64) @ incidence) > 0
    return touch if unit.active is None else touch & unit.active


def flat_sizes(unit):
    """The sizes of ``unit``'s patterns enumerated (:class:`FlatGroup`): ``(gather entries, rows, segments)``.

    A pattern with ``J`` joint states of its missing tree variables takes ``J`` rows, and
    ``J`` entries per clique that holds one of them; a pattern with none missing takes none.
    """
    missing, joint = missing_states(unit)
    touch = touching(unit, missing)
    has = missing.any(axis=1)
    return float(joint[has] @ touch[has].sum(axis=1)), float(joint[has].sum()), int(has.sum())


class FlatGroup:
    """Patterns of small trees of any shapes, their joint states enumerated, as one batch.

    For a pattern ``d`` summing over the joint states ``x`` of a few missing variables,
    ``log Z(d) = log sum_x exp(sum_c theta_c(x_c, d))``: a clique that holds none of them adds
    the same ``theta_c(d_c)`` to every ``x`` and comes out of the log-sum-exp, so its part
    ``n_d theta_c(d_c)`` is linear in the tables, counted once at build time like complete data
    (:attr:`constant`); the others are summed, for every ``x``, by one sparse product of all
    the patterns of all the units at once (one row per pattern and joint state). The
    log-sum-exp over each pattern's rows and the weights ``n_d p(x | d)`` that its transpose
    takes back to expected table counts are a few vectorised calls for the whole batch,
    whatever the shapes: a tree per shape and per chunk costs more in fixed numpy calls than
    the arithmetic of a few hundred small patterns. Exact; chosen where
    :func:`~.cost.flat_cost` is below the trees'.

    Parameters
    ----------
    units : list of Unit
    n_table : int

    Attributes
    ----------
    constant : ndarray of float64, shape (n_table,)
        Table counts of the cliques that hold no missing variable of a pattern.
    counts : ndarray of float64, shape (P,)
        The patterns' counts, units one after the other.
    bounds : list of (int, int)
        The patterns of each chunk.
    index_floats : float
        Gather entries per pattern (mean).
    """

    tree = None

    def __init__(self, units, n_table):
        self.n_table = n_table
        self.counts = np.concatenate([u.counts for u in units]) if units else np.zeros(0)
        n = len(self.counts)
        g_pat, g_state, g_cols, c_rows, c_cols = [], [], [], [], []
        n_rows = np.zeros(n, dtype=np.int64)  # rows of each pattern in the gather (joint states)
        first = 0
        for u in units:
            _flat_entries(u, first, n_rows, (g_pat, g_state, g_cols), (c_rows, c_cols))
            first += len(u)
        start = np.concatenate([[0], np.cumsum(n_rows)])
        pat, state, cols, crow, ccol = (_cat(x) for x in (g_pat, g_state, g_cols, c_rows, c_cols))
        gather = csr_matrix((np.ones(len(pat)), (start[pat] + state, cols)), shape=(int(start[-1]), n_table))
        self._const = csr_matrix((np.ones(len(crow)), (crow, ccol)), shape=(n, n_table))
        self.constant = self._const.T @ self.counts
        self.n_gather, self.n_rows = gather.nnz, int(start[-1])
        self.n_segments = int((n_rows > 0).sum())
        self.index_floats = self.n_gather / max(1, n)
        # Chunks of consecutive patterns of about CHUNK_FLOATS gather entries and rows each.
        cum = np.concatenate([[0], np.cumsum(np.bincount(pat, minlength=n) + n_rows)])
        cuts = [0]
        while cuts[-1] < n:
            a = cuts[-1]
            b = int(np.searchsorted(cum, cum[a] + CHUNK_FLOATS, side="right")) - 1
            cuts.append(min(n, max(a + 1, b)))
        self.bounds = list(zip(cuts[:-1], cuts[1:]))
        self._chunks = []
        for a, b in self.bounds:
            has = np.flatnonzero(n_rows[a:b] > 0)
            r0, r1 = int(start[a]), int(start[b])
            seg = np.repeat(np.arange(len(has)), n_rows[a:b][has])
            part = gather[r0:r1]
            self._chunks.append((part, part.T.tocsr(), start[a:b][has] - r0, has, seg))

    @property
    def floats_per_pattern(self):
        """Gather entries and rows per pattern (mean)."""
        return (self.n_gather + self.n_rows) / max(1, len(self.counts))

    @property
    def cost(self):
        """Predicted cost of one evaluation (:func:`~.cost.flat_cost`)."""
        return flat_cost(self.n_gather, self.n_rows, self.n_segments, len(self.bounds))

    def chunks(self):
        return [(self, k) for k in range(len(self.bounds))]

    def e_step(self, k, full, need_gradient=True):
        """``sum_p n_p log Z'(d_p)`` (without the constant part), ``log Z(d_p)`` and expected counts of chunk ``k``.

        The per-pattern ``log Z(d_p)`` (constant part included) is computed only when
        ``need_gradient`` is False (for :meth:`IncompleteDataTerm.row_log_evidence`).
        """
        a, b = self.bounds[k]
        gather, scatter, starts, has, seg = self._chunks[k]
        counts = self.counts[a:b]
        lse = np.zeros(b - a)
        grad = None
        if len(starts):
            flat = gather @ full
            top = np.maximum.reduceat(flat, starts)
            shifted = np.exp(flat - top[seg])
            total = np.add.reduceat(shifted, starts)
            lse[has] = top + np.log(total)
            if need_gradient:
                grad = scatter @ (shifted * (counts[has] / total)[seg])
        if grad is None and need_gradient:
            grad = np.zeros(self.n_table)
        value = float(counts @ lse)
        log_z = None if need_gradient else lse + self._const[a:b] @ full
        return value, log_z, grad


def _cat(arrays):
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


def _flat_entries(unit, first, n_rows, summed_out, constant_out):
    """The gather entries of ``unit``'s patterns (numbered from ``first``) for :class:`FlatGroup`.

    Appends the pattern, joint state and table position of every entry of the cliques holding
    a missing variable to the three lists of ``summed_out``, the pattern and table position of
    the other active cliques to the two of ``constant_out``; sets ``n_rows`` (joint states) of
    each pattern with a missing variable. A pattern's joint states are numbered in mixed radix
    over its missing tree variables (in tree order); one vectorised pass per clique.
    """
    lay, rows = unit.layout, unit.rows
    missing, joint = missing_states(unit)
    n_joint = np.where(missing.any(axis=1), joint, 0).astype(np.int64)
    n_rows[first : first + len(unit)] = n_joint
    active = np.ones((len(unit), len(unit.cliques)), dtype=bool) if unit.active is None else unit.active
    K = np.asarray(unit.n_states, dtype=np.int64)
    width = np.where(missing, K[None, :], 1)
    radix = np.cumprod(width[:, ::-1], axis=1)[:, ::-1] // width  # product of the later missing ones' states
    pat = np.repeat(np.arange(len(unit)), n_joint)
    state = np.arange(len(pat)) - np.repeat(np.cumsum(n_joint) - n_joint, n_joint)
    local = {int(v): t for t, v in enumerate(unit.tree_vars)}
    for k, c in enumerate(unit.cliques):
        clique = list(lay.cliques[c])
        strides = c_order_strides(lay.n_states[clique])
        base = lay.table_offsets[c] + np.maximum(rows[:, clique], 0) @ strides  # missing entries are -1: add 0
        in_tree = [(t, local[v]) for t, v in enumerate(clique) if v in local]
        touch = missing[:, [t for _, t in in_tree]].any(axis=1) if in_tree else np.zeros(len(unit), dtype=bool)
        on = active[:, k] & ~touch
        constant_out[0].append(first + np.flatnonzero(on))
        constant_out[1].append(base[on])
        sel = (active[:, k] & touch)[pat]
        p, j = pat[sel], state[sel]
        col = base[p]
        for i, t in in_tree:
            col = col + np.where(missing[p, t], strides[i] * ((j // radix[p, t]) % K[t]), 0)
        summed_out[0].append(first + p)
        summed_out[1].append(j)
        summed_out[2].append(col)
