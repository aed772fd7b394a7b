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
    n_enumerated_chunks : int
        Chunks of enumerated components (:class:`EnumeratedComponents`, built when used).
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
        self._enumerated = []  # the entries of each chunk, built when used: one chunk in memory at a time
        comps = np.flatnonzero(small)
        if comps.size:
            sizes = np.exp(log_states[comps]) * (size[comps] + self._touching(comps, entry_var, first).astype(float))
            for part in _chunks(comps, sizes, QUERY_CHUNK_FLOATS):
                take = _entries(first, part)
                self._enumerated.append((entry_comp[take], entry_var[take], entry_row[take]))
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

    @property
    def n_enumerated_chunks(self):
        """Chunks of enumerated components (each built, used and dropped in turn)."""
        return len(self._enumerated)

    def _parts(self):
        """The enumerated chunks (built one at a time), then the trees."""
        for entries in self._enumerated:
            yield EnumeratedComponents(self.layout, self.E, *entries, self.incidence)
        yield from self.trees

    def marginals(self, out):
        """Fill the exact conditional marginals into ``out`` ``(n_distinct, n_variables, K_max)``,
        observed entries one-hot; entries of :attr:`wide` are left to the caller."""
        r, v = np.nonzero(self.E >= 0)
        out[r, v, self.E[r, v]] = 1.0
        for part in self._parts():
            part.marginals(self.full, self.E, out)
        return out

    def most_probable(self, out):
        """Fill the most probable completion of every distinct row into ``out`` (int64, a copy of
        :attr:`E`); entries of :attr:`wide` are left to the caller."""
        for part in self._parts():
            part.most_probable(self.full, self.E, out)
        return out

    def sample(self, out, rng):
        """Fill one exact draw from every distinct row's conditional into ``out`` (as above)."""
        for part in self._parts():
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
    """Components with few joint states, enumerated together as dense arrays.

    Components whose variables have the same numbers of states (in their order: ascending
    variable) share one array ``(n_components, K_0, ..., K_{m-1})`` of log-potentials, so
    marginals, modes and draws are reductions over its axes. The log-potentials are gathered in
    two steps, each one ``bincount`` for the whole batch: every clique holding a variable of a
    component is first *reduced* to a table over those of its variables in the component, the
    observed ones sliced at the row's states, and the tables of equal reduced scopes are summed
    (a grid pixel's four edges to observed neighbours become one table of its two states); then
    each joint state takes one entry of each reduced table of its component, so the step that
    grows with the joint states costs the reduced scopes (the component's variables and the
    edges between them), not every clique that touches the component.

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

    # Longer than 60 lines: the two steps (reduce every (component, clique) pair to a table, then
    # index each table by the components' joint states) share a dozen arrays of the same entries;
    # split, each would take most of them as arguments.
    def __init__(self, layout, E, entry_comp, entry_var, entry_row, incidence):
        K = layout.n_states
        _, comp = np.unique(entry_comp, return_inverse=True)
        comp = comp.ravel()
        n_comp = int(comp.max()) + 1
        m = np.bincount(comp, minlength=n_comp)
        first = np.concatenate([[0], np.cumsum(m)])
        self.var, self.row, self.comp = entry_var, entry_row, comp
        comp_row = entry_row[first[:-1]]
        at = np.full(E.shape, -1, dtype=np.int64)  # the entry of each missing (row, variable)
        at[entry_row, entry_var] = np.arange(len(comp))
        member = sp.csr_matrix((np.ones(len(comp)), (comp, entry_var)), shape=(n_comp, E.shape[1]))
        pc, pq = (member @ incidence).nonzero()
        # Step 1: every (component, clique) pair reduced to a table over its members' states (C
        # order over the members); pairs with the same members (the same reduced scope) summed.
        width = max(len(c) for c in layout.cliques)
        keys, bases, strides_m = [], [], []
        group_of, row_of = _group_rows(layout)
        for g, (_, gvar, gstrides, goffsets) in enumerate(layout.groups):
            pick = group_of[pq] == g
            if not pick.any():
                continue
            c, k = pc[pick], row_of[pq[pick]]
            var, strides, row = gvar[k], gstrides[k], comp_row[c]
            e = at[row[:, None], var]
            inside = e >= 0
            bases.append(goffsets[k] + (strides * np.where(inside, 0, E[row[:, None], var])).sum(axis=1))
            order = np.argsort(~inside, axis=1, kind="stable")  # members first, in clique order
            pad = ((0, 0), (0, width - e.shape[1]))
            e = np.take_along_axis(np.where(inside, e, -1), order, axis=1)
            keys.append(np.column_stack([c, np.pad(e, pad, constant_values=-1)]))
            strides_m.append(np.pad(np.take_along_axis(np.where(inside, strides, 0), order, axis=1), pad))
        keys, base, strides = np.concatenate(keys), np.concatenate(bases), np.concatenate(strides_m)
        members = keys[:, 1:]
        states = np.where(members >= 0, K[entry_var][np.maximum(members, 0)], 1)
        size = np.prod(states, axis=1)  # at most the component's joint states
        step = np.cumprod(states[:, ::-1], axis=1)[:, ::-1] // states
        scope_keys, first_pair, scope_of = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        scope_of = scope_of.ravel()
        scope_start = np.concatenate([[0], np.cumsum(size[first_pair])])
        pair, u, _ = _segments(size)
        offsets = np.zeros(len(pair), dtype=np.int64)
        for i in range(width):
            offsets += strides[pair, i] * ((u // step[pair, i]) % states[pair, i])
        self.table_source = base[pair] + offsets
        self.table_target = scope_start[scope_of[pair]] + u
        self.n_table_entries = int(scope_start[-1])
        # Step 2, per group of components with the same states: each joint state's entry of each
        # reduced table, from the digits of the joint states (C order over the variables).
        scope_comp, local = scope_keys[:, 0], scope_keys[:, 1:] - first[scope_keys[:, 0]][:, None]
        local[scope_keys[:, 1:] < 0] = -1
        scope_step = step[first_pair]
        signature = np.zeros((n_comp, int(m.max())), dtype=np.int64)  # states of each variable, 0-padded
        signature[comp, np.arange(len(comp)) - first[comp]] = K[entry_var]
        kinds, kind_of = np.unique(signature, axis=0, return_inverse=True)
        kind_of = kind_of.ravel()
        self.groups = []
        for g, kind in enumerate(kinds):
            comps = np.flatnonzero(kind_of == g)
            shape = tuple(int(k) for k in kind if k > 0)
            digits = np.indices(shape).reshape(len(shape), -1)
            position = np.full(n_comp, -1, dtype=np.int64)
            position[comps] = np.arange(len(comps))
            mine = np.flatnonzero(position[scope_comp] >= 0)
            combo = scope_start[mine][:, None] + np.zeros(digits.shape[1], dtype=np.int64)
            for i in range(width):
                t = local[mine, i]
                combo += np.where(t >= 0, scope_step[mine, i], 0)[:, None] * digits[np.maximum(t, 0)]
            entries = first[comps][:, None] + np.arange(len(shape))[None, :]  # (components, variables)
            self.groups.append((comps, shape, position[scope_comp[mine]], combo, entries))

    def _log_potentials(self, full):
        """Per group: its components' log-potentials, shape ``(n_components, J)``."""
        tables = np.bincount(self.table_target, weights=full[self.table_source], minlength=self.n_table_entries)
        for comps, shape, scope_row, combo, entries in self.groups:
            J = combo.shape[1]
            target = (scope_row[:, None] * J + np.arange(J)[None, :]).ravel()
            logits = np.bincount(target, weights=tables[combo].ravel(), minlength=len(comps) * J)
            yield logits.reshape(len(comps), J), shape, entries

    def _probabilities(self, full):
        for logits, shape, entries in self._log_potentials(full):
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            yield p, shape, entries

    def marginals(self, full, E, out):
        """Write every variable's conditional marginal into ``out[row, var, :K]``."""
        for p, shape, entries in self._probabilities(full):
            p = p.reshape((len(p),) + shape)
            for t in range(len(shape)):
                e = entries[:, t]
                axes = tuple(1 + a for a in range(len(shape)) if a != t)
                out[self.row[e], self.var[e], : shape[t]] = p.sum(axis=axes) if axes else p

    def _decode(self, best, shape, entries, out):
        """Write joint states ``best`` (flat, one per component) into the components' variables."""
        for t, digit in enumerate(np.unravel_index(best, shape)):
            e = entries[:, t]
            out[self.row[e], self.var[e]] = digit

    def most_probable(self, full, E, out):
        """Write each component's most probable joint state (the first of equal ones)."""
        for logits, shape, entries in self._log_potentials(full):
            self._decode(logits.argmax(axis=1), shape, entries, out)

    def sample(self, full, E, out, rng):
        """Write one exact draw of each component, by inverse CDF."""
        for p, shape, entries in self._probabilities(full):
            cdf = np.cumsum(p, axis=1)
            draw = (cdf[:, :-1] <= rng.random((len(p), 1)) * cdf[:, -1:]).sum(axis=1)
            self._decode(draw, shape, entries, out)


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
        cliques = np.unique(incidence[self.variables].indices)
        local_of = np.full(len(K), -1, dtype=np.int64)
        local_of[self.variables] = np.arange(len(variables))
        width = max(len(c) for c in layout.cliques)
        keys, obs_var, obs_stride, in_stride, offset = [], [], [], [], []
        group_of, row_of = _group_rows(layout)
        for g in np.unique(group_of[cliques]):
            _, gvar, gstrides, goffsets = layout.groups[g]
            k = row_of[cliques[group_of[cliques] == g]]
            var, strides = gvar[k], gstrides[k]
            loc = local_of[var]
            inside = loc >= 0
            order = np.argsort(~inside, axis=1, kind="stable")  # members first, in clique order
            pad = ((0, 0), (0, width - var.shape[1]))
            keys.append(np.pad(np.take_along_axis(np.where(inside, loc, -1), order, axis=1), pad, constant_values=-1))
            in_stride.append(np.pad(np.take_along_axis(np.where(inside, strides, 0), order, axis=1), pad))
            obs_var.append(np.pad(np.where(inside, 0, var), pad))
            obs_stride.append(np.pad(np.where(inside, 0, strides), pad))
            offset.append(goffsets[k])
        keys, inside_strides = np.concatenate(keys), np.concatenate(in_stride)
        obs_var, obs_stride, offset = np.concatenate(obs_var), np.concatenate(obs_stride), np.concatenate(offset)
        index = {}  # a few dozen cliques: a dict is cheaper than np.unique(axis=0)
        scope_of = np.array([index.setdefault(tuple(t for t in key if t >= 0), len(index)) for key in keys.tolist()])
        self.scopes = list(index)
        self.tree = BatchedJunctionTree(K[self.variables], self.scopes, max_bytes=max_bytes, heuristic="min_fill")
        self.tree.tree.check_memory(max_bytes)
        # Gather plan: per scope, its cliques' observed variables and strides, and the offsets of
        # the scope's joint states in each clique's table.
        self.plan = []
        for s, scope in enumerate(self.scopes):
            shape = tuple(int(K[variables[t]]) for t in scope)
            grid = np.indices(shape).reshape(len(scope), -1)
            mine = np.flatnonzero(scope_of == s)
            offsets = offset[mine][:, None] + inside_strides[mine, : len(scope)] @ grid
            self.plan.append((shape, obs_var[mine], obs_stride[mine], offsets))
        self.singleton = [self.scopes.index((t,)) for t in range(len(variables))]
        per = max(1, QUERY_CHUNK_FLOATS // max(1, 4 * self.tree.entries))
        self.bounds = [(a, min(a + per, len(rows))) for a in range(0, len(rows), per)]

    def _tables(self, full, E_rows):
        """The scope tables ``[(P, *shape)]`` of the components of ``E_rows``."""
        tables = []
        for shape, observed, strides, offsets in self.plan:
            base = np.einsum("pqw,qw->pq", E_rows[:, observed], strides)  # (P, cliques of the scope)
            table = full[base[:, :, None] + offsets[None]].sum(axis=1)
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
