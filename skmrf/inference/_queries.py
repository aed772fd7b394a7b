"""Queries given evidence, batched over rows: conditional marginals, most probable completions, draws.

Given the observed entries of a row, its missing entries split into connected components,
linked when one clique holds two of them (:func:`~skmrf._data.decompose.missing_component_labels`).
Components meet only at observed variables, so they are independent given the row, and the
conditional distribution of one involves only the cliques that hold one of its variables, with
the observed states sliced in (the evidence pruning that Refaat and Darwiche's Section 3 starts
from). Each component is computed in one of three ways:

- **enumerated** (:class:`EnumeratedComponents`) when its joint states are at most
  ``ENUMERATE_MAX_STATES``: every component of every row in one flat batch, one row per
  component and joint state, its log-potential one ``bincount`` of gathered table entries; exact.
- **junction tree** (:class:`TreeComponents`) over its own variables otherwise, batched over
  the components (of any rows) that have the same variables: one
  :class:`~skmrf.inference.BatchedJunctionTree` per variable set; exact.
- **clamped Gibbs chains** (:mod:`._conditional_gibbs`) when that tree would exceed the memory
  budget: approximate, with a Monte-Carlo standard error per entry.

Distinct rows are computed once.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._data import c_order_strides
from .._data.decompose import missing_component_labels
from .._utils._budgets import ENUMERATE_MAX_STATES, QUERY_CHUNK_FLOATS
from ..exceptions import TreewidthError
from ._evidence import BatchedJunctionTree

__all__ = ["ENUMERATE_MAX_STATES", "EnumeratedComponents", "EvidenceQuery", "TreeComponents"]


def _incidence(layout):
    """The 0/1 matrix ``(n_variables, n_cliques)`` of which clique holds which variable (CSR)."""
    cols = [k for k, c in enumerate(layout.cliques) for _ in c]
    rows = [v for c in layout.cliques for v in c]
    n = len(layout.n_states)
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, len(layout.cliques)))


class EvidenceQuery:
    """Rows of evidence, planned once: distinct rows, the components of their missing entries,
    and how each component is computed (module docstring).

    Parameters
    ----------
    layout : skmrf._parametrisation.CliqueLayout
    theta : ndarray of shape (n_params,)
    E : ndarray of int64, shape (n_rows, n_variables)
        Validated states, ``-1`` where missing.
    max_bytes : int, optional
        Memory budget of one junction-tree calibration of one component (2 GiB if omitted);
        a component whose tree needs more is left to Gibbs chains (:attr:`wide`).
    distinct : bool, default=True
        Compute equal rows once. False for draws: equal rows then get independent draws.

    Attributes
    ----------
    E : ndarray of int64, shape (n_distinct, n_variables)
        The distinct rows.
    inverse : ndarray of int64, shape (n_rows,)
        The distinct row of each row.
    enumerated : list of EnumeratedComponents
        Chunks of enumerated components.
    trees : list of TreeComponents
        One per variable set of the components calibrated on a tree.
    wide : ndarray of bool, shape (n_distinct, n_variables)
        Entries in components whose tree exceeds ``max_bytes``.
    widest : int
        Variables of the largest such component (0 if none).
    """

    def __init__(self, layout, theta, E, max_bytes=None, distinct=True):
        self.layout = layout
        self.full = layout.full_tables(theta)
        if distinct:
            self.E, self.inverse = np.unique(E, axis=0, return_inverse=True)
            self.inverse = self.inverse.ravel()
        else:
            self.E, self.inverse = E, np.arange(len(E))
        E = self.E
        K = layout.n_states
        missing = E < 0
        label, comp_row = missing_component_labels(missing, layout.cliques)
        r, v = np.nonzero(missing)
        order = np.lexsort((v, label))
        entry_comp, entry_var, entry_row = label[order], v[order], r[order]
        n_comp = len(comp_row)
        size = np.bincount(entry_comp, minlength=n_comp)
        first = np.concatenate([[0], np.cumsum(size)])
        log_states = np.add.reduceat(np.log(K[entry_var].astype(np.float64)), first[:-1]) if n_comp else np.zeros(0)
        small = log_states <= math.log(ENUMERATE_MAX_STATES) + 1e-9
        self.incidence = _incidence(layout)
        self.enumerated = []
        comps = np.flatnonzero(small)
        if comps.size:
            sizes = np.exp(log_states[comps]) * (size[comps] + self._touching(comps, entry_var, first).astype(float))
            for part in _chunks(comps, sizes, QUERY_CHUNK_FLOATS):
                take = _entries(first, part)
                self.enumerated.append(
                    EnumeratedComponents(layout, E, entry_comp[take], entry_var[take], entry_row[take], self.incidence)
                )
        self.trees, self.wide, self.widest = [], np.zeros(E.shape, dtype=bool), 0
        groups = {}
        for c in np.flatnonzero(~small):
            groups.setdefault(tuple(entry_var[first[c] : first[c + 1]].tolist()), []).append(int(comp_row[c]))
        for variables, rows in groups.items():
            try:
                self.trees.append(TreeComponents(layout, E, variables, np.array(rows), self.incidence, max_bytes))
            except TreewidthError:
                self.wide[np.ix_(rows, variables)] = True
                self.widest = max(self.widest, len(variables))

    def _touching(self, comps, entry_var, first):
        """Cliques touching each of ``comps`` (a count per component)."""
        take = _entries(first, comps)
        local = np.repeat(np.arange(len(comps)), first[comps + 1] - first[comps])
        member = sp.csr_matrix((np.ones(len(take)), (local, entry_var[take])), shape=(len(comps), self.E.shape[1]))
        return np.diff((member @ self.incidence).indptr)

    def marginals(self, out):
        """Fill the exact conditional marginals into ``out`` ``(n_distinct, n_variables, K_max)``,
        observed entries one-hot; entries of :attr:`wide` are left to the caller."""
        r, v = np.nonzero(self.E >= 0)
        out[r, v, self.E[r, v]] = 1.0
        for part in self.enumerated + self.trees:
            part.marginals(self.full, self.E, out)
        return out

    def most_probable(self, out):
        """Fill the most probable completion of every distinct row into ``out`` (int64, a copy of
        :attr:`E`); entries of :attr:`wide` are left to the caller."""
        for part in self.enumerated + self.trees:
            part.most_probable(self.full, self.E, out)
        return out

    def sample(self, out, rng):
        """Fill one exact draw from every distinct row's conditional into ``out`` (as above)."""
        for part in self.enumerated + self.trees:
            part.sample(self.full, self.E, out, rng)
        return out


def _entries(first, comps):
    """Indices of the (component-sorted) entries of ``comps``."""
    counts = first[comps + 1] - first[comps]
    starts = np.repeat(first[comps] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return starts + np.arange(int(counts.sum()))


def _chunks(items, sizes, budget):
    """Consecutive groups of ``items`` whose ``sizes`` add up to about ``budget`` (at least one each)."""
    cum = np.cumsum(sizes)
    cuts = [0]
    while cuts[-1] < len(items):
        a = cuts[-1]
        b = int(np.searchsorted(cum, (cum[a - 1] if a else 0.0) + budget, side="right"))
        cuts.append(min(len(items), max(a + 1, b)))
    return [items[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


def _group_rows(layout):
    """For every clique: its group of ``layout.groups`` (cliques of one size) and its row there."""
    group_of = np.empty(len(layout.cliques), dtype=np.int64)
    row_of = np.empty(len(layout.cliques), dtype=np.int64)
    for g, (members, *_) in enumerate(layout.groups):
        group_of[members] = g
        row_of[members] = np.arange(len(members))
    return group_of, row_of


def _segments(J):
    """For segments of lengths ``J``: the segment and the position within it of every element."""
    start = np.concatenate([[0], np.cumsum(J)[:-1]])
    seg = np.repeat(np.arange(len(J)), J)
    return seg, np.arange(int(J.sum())) - start[seg], start


class EnumeratedComponents:
    """Components with few joint states, enumerated together: one row per component and joint state.

    The joint states of a component are numbered in mixed radix over its variables (ascending).
    The log-potential of each is the sum, over the cliques holding one of its variables, of the
    clique table at the state's values and the row's observed states: one ``bincount`` of
    gathered entries for the whole batch, whatever the components' shapes.

    Parameters
    ----------
    layout : CliqueLayout
    E : ndarray of int64, shape (n_rows, n_variables)
        The rows, ``-1`` where missing.
    entry_comp, entry_var, entry_row : ndarray of int64
        The missing entries of the components (their component, variable and row), sorted by
        component and then variable; components numbered in any increasing way.
    incidence : scipy.sparse.csr_matrix
        Which clique holds which variable (:func:`_incidence`).
    """

    def __init__(self, layout, E, entry_comp, entry_var, entry_row, incidence):
        K = layout.n_states
        self.n_kmax = int(K.max())
        _, comp = np.unique(entry_comp, return_inverse=True)
        comp = comp.ravel()
        n_comp = int(comp.max()) + 1
        m = np.bincount(comp, minlength=n_comp)
        first = np.concatenate([[0], np.cumsum(m)])
        pos = np.arange(len(comp)) - first[comp]
        width = np.ones((n_comp, int(m.max())), dtype=np.int64)
        width[comp, pos] = K[entry_var]
        radix = np.cumprod(width[:, ::-1], axis=1)[:, ::-1] // width
        self.J = np.prod(width, axis=1)
        self.var, self.row, self.K = entry_var, entry_row, K[entry_var]
        self.radix = radix[comp, pos]
        self.comp = comp
        self.comp_row = entry_row[first[:-1]]
        # The log-potential of every joint state: gathered table entries, summed by bincount.
        at = np.full(E.shape, -1, dtype=np.int64)
        at[entry_row, entry_var] = np.arange(len(comp))
        member = sp.csr_matrix((np.ones(len(comp)), (comp, entry_var)), shape=(n_comp, E.shape[1]))
        pc, pq = (member @ incidence).nonzero()
        self.seg, self.state, self.start = _segments(self.J)
        targets, positions = [], []
        group_of, row_of = _group_rows(layout)
        for g, (_, gvar, gstrides, goffsets) in enumerate(layout.groups):
            pick = group_of[pq] == g
            if not pick.any():
                continue
            c, k = pc[pick], row_of[pq[pick]]
            var, strides, row = gvar[k], gstrides[k], self.comp_row[c]
            e = at[row[:, None], var]  # the clique's missing entries (their index), -1 where observed
            member = e >= 0
            base = goffsets[k] + (strides * np.where(member, 0, E[row[:, None], var])).sum(axis=1)
            seg, j, _ = _segments(self.J[c])
            position = base[seg]
            for i in np.flatnonzero(member.any(axis=0)):
                on = member[:, i]
                radix = np.where(on, self.radix[e[:, i]], 1)
                states = np.where(on, K[var[:, i]], 1)
                position += np.where(on, strides[:, i], 0)[seg] * ((j // radix[seg]) % states[seg])
            targets.append(self.start[c][seg] + j)
            positions.append(position)
        self.targets, self.positions = np.concatenate(targets), np.concatenate(positions)

    def _probabilities(self, full):
        """The conditional probability of every (component, joint state) row, and each component's ``log Z(d)``."""
        logits = np.bincount(self.targets, weights=full[self.positions], minlength=int(self.J.sum()))
        top = np.maximum.reduceat(logits, self.start)
        shifted = np.exp(logits - top[self.seg])
        total = np.add.reduceat(shifted, self.start)
        return shifted / total[self.seg], logits, top

    def marginals(self, full, E, out):
        """Write every variable's conditional marginal into ``out[row, var, :K]``."""
        p, _, _ = self._probabilities(full)
        entry, j, _ = _segments(self.J[self.comp])
        k = (j // self.radix[entry]) % self.K[entry]
        weights = p[self.start[self.comp][entry] + j]
        flat = np.bincount(entry * self.n_kmax + k, weights=weights, minlength=len(self.comp) * self.n_kmax)
        out[self.row, self.var] = flat.reshape(len(self.comp), self.n_kmax)

    def _decode(self, best, out):
        """Write the joint state ``best`` of each component into its variables of ``out``."""
        out[self.row, self.var] = (best[self.comp] // self.radix) % self.K

    def most_probable(self, full, E, out):
        """Write each component's most probable joint state (the first of equal ones)."""
        _, logits, top = self._probabilities(full)
        index = np.where(logits == top[self.seg], np.arange(len(logits)), len(logits))
        self._decode(np.minimum.reduceat(index, self.start) - self.start, out)

    def sample(self, full, E, out, rng):
        """Write one exact draw of each component, by inverse CDF within its segment."""
        p, _, _ = self._probabilities(full)
        cdf = np.cumsum(p)
        base = np.concatenate([[0.0], cdf])[self.start]
        u = rng.random(len(self.J))
        below = (cdf - base[self.seg]) <= u[self.seg]
        self._decode(np.minimum(np.add.reduceat(below, self.start), self.J - 1), out)


class TreeComponents:
    """Components with the same variables, calibrated on one junction tree over them, batched.

    The tree's tables are the *reduced scopes* of the cliques that hold one of the variables
    (their variables among them, in local numbers); each component brings its own tables, the
    cliques' entries at its row's observed states summed per scope.

    Parameters
    ----------
    layout : CliqueLayout
    E : ndarray of int64, shape (n_rows, n_variables)
    variables : tuple of int
        The component's variables (ascending).
    rows : ndarray of int64
        The row of each component with these variables.
    incidence : scipy.sparse.csr_matrix
    max_bytes : int, optional
        Memory budget of one calibration; :class:`~skmrf.exceptions.TreewidthError` if exceeded.
    """

    def __init__(self, layout, E, variables, rows, incidence, max_bytes=None):
        self.variables, self.rows = np.asarray(variables, dtype=np.int64), rows
        K = layout.n_states
        local = {int(v): t for t, v in enumerate(variables)}
        cliques = np.unique(incidence[self.variables].indices)
        reduced = {}
        for q in cliques:
            clique = layout.cliques[q]
            reduced.setdefault(tuple(local[v] for v in clique if v in local), []).append(int(q))
        self.scopes = sorted(reduced, key=lambda s: (len(s), s))
        self.tree = BatchedJunctionTree(K[self.variables], self.scopes, max_bytes=max_bytes)
        self.tree.tree.check_memory(max_bytes)
        # Gather plan: per scope, per clique, the observed variables' strides and the offsets of
        # the scope's joint states in the clique's table.
        self.plan = []
        for scope in self.scopes:
            shape = tuple(int(K[variables[t]]) for t in scope)
            grid = np.indices(shape).reshape(len(scope), -1)
            parts = []
            for q in reduced[scope]:
                clique = layout.cliques[q]
                strides = c_order_strides(K[list(clique)])
                observed = [v for v in clique if v not in local]
                obs_strides = np.array([s for v, s in zip(clique, strides) if v not in local], dtype=np.int64)
                offsets = layout.table_offsets[q] + sum(
                    s * grid[scope.index(local[v])] for v, s in zip(clique, strides) if v in local
                )
                parts.append((np.array(observed, dtype=np.int64), obs_strides, np.asarray(offsets)))
            self.plan.append((shape, parts))
        self.singleton = [self.scopes.index((t,)) for t in range(len(variables))]
        per = max(1, QUERY_CHUNK_FLOATS // max(1, 4 * self.tree.entries))
        self.bounds = [(a, min(a + per, len(rows))) for a in range(0, len(rows), per)]

    def _tables(self, full, E_rows):
        """The scope tables ``[(P, *shape)]`` of the components of ``E_rows``."""
        tables = []
        for shape, parts in self.plan:
            table = np.zeros((len(E_rows), int(np.prod(shape))))
            for observed, strides, offsets in parts:
                base = E_rows[:, observed] @ strides if len(observed) else np.zeros(len(E_rows), dtype=np.int64)
                table += full[base[:, None] + offsets[None, :]]
            tables.append(table.reshape((len(E_rows),) + shape))
        return tables

    def _batches(self, full, E):
        for a, b in self.bounds:
            rows = self.rows[a:b]
            yield rows, self._tables(full, E[rows])

    def marginals(self, full, E, out):
        """Write every variable's conditional marginal into ``out[row, var, :K]``."""
        for rows, tables in self._batches(full, E):
            evidence = np.full((len(rows), len(self.variables)), -1, dtype=np.int64)
            _, marg = self.tree.calibrate(tables, evidence)
            for t, v in enumerate(self.variables):
                m = marg[self.singleton[t]]
                out[rows, v, : m.shape[1]] = m

    def most_probable(self, full, E, out):
        """Write each component's most probable joint state (max-product)."""
        for rows, tables in self._batches(full, E):
            states, _ = self.tree.most_probable(tables)
            out[np.ix_(rows, self.variables)] = states

    def sample(self, full, E, out, rng):
        """Write one exact draw of each component (forward sampling on the calibrated tree)."""
        for rows, tables in self._batches(full, E):
            evidence = np.full((len(rows), len(self.variables)), -1, dtype=np.int64)
            _, _, nodes = self.tree.calibrate(tables, evidence, return_nodes=True)
            out[np.ix_(rows, self.variables)] = self.tree.sample(nodes, 1, rng)[:, 0, :]
