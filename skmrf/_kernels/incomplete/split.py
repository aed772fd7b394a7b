"""The row-wise split of ``decompose="auto"``: sub-networks' patterns cut into the components of their missing entries.

Within one row, the cliques of a sub-network linked only through entries observed *in that
row* are independent given the row, so the row's ``log Z^s(d)`` is the sum of the
log-potentials of the cliques it fills completely (counted once, like complete data,
:func:`filled_counts`) and of ``log Z_C(d)`` over the connected components ``C`` of its
missing entries (:func:`component_patterns`). :func:`plan_split` builds the units of that
plan: each sub-network whose component patterns are fewer than its own is split; a shape of
component that pays for a batch of its own gets one (:func:`_promote`), the others are
calibrated on their sub-network's tree with the other cliques inactive.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

from ..._data import c_order_strides
from ..._data.decompose import missing_components
from .batch import Unit, distinct_tuples, tree_shape
from .cost import evaluation_cost, min_fixed_cost, per_pattern_cost

__all__ = ["canonical_order", "component_patterns", "filled_counts", "plan_split"]


def canonical_order(layout, cliques, variables):
    """An order of a component's variables that gives components of one shape the same key.

    Breadth-first from the variable of fewest neighbours (then fewest states, then index),
    neighbours visited in the same order: a path is numbered from one end along the path, a
    square around it, whatever the variables' indices, so that such components share one
    batch (:func:`~.batch.tree_shape`). Not a canonical form of every graph: two orders of one shape
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


def plan_split(layout, trees, parts, coarse, force=False):
    """The row-wise split: component units per sub-network where it is cheaper.

    Parameters
    ----------
    layout : CliqueLayout
    trees : TreeCache
    parts : list of tuple of int
        The cliques of each sub-network.
    coarse : list of Unit
        Each sub-network's patterns.
    force : bool, default=False
        Split every sub-network that has a component (for tests).

    Returns
    -------
    units : list of Unit
    split : ndarray of bool, shape (len(parts),)
        The sub-networks split.
    constant : ndarray of float64, shape (layout.n_table,)
        Table counts of the cliques that the split sub-networks' patterns fill completely
        (counted like complete data).
    """
    fine = component_patterns(layout, parts, coarse)
    n_fine = np.bincount(fine["owner"], minlength=len(parts))
    # A sub-network is split when its components, calibrated on its own tree (the other
    # cliques inactive), are fewer than its patterns: the same cost per pattern.
    split = np.array([(n < len(u) or force) and n > 0 for n, u in zip(n_fine, coarse)], dtype=bool)
    take = split[fine["owner"]]
    fine = {k: (v[take] if k != "cliques" else v) for k, v in fine.items()}
    per_host = np.array([per_pattern_cost(trees(u.key), u.index_floats) for u in coarse])
    units, promoted = _promote(layout, trees, fine, per_host)
    constant = np.zeros(layout.n_table)
    position = {c: k for k, c in enumerate(fine["cliques"].tolist())}
    for s, (net, unit) in enumerate(zip(parts, coarse)):
        if not split[s]:
            units.append(unit)
            continue
        rest = (fine["owner"] == s) & ~promoted
        if rest.any():
            active = fine["touch"][rest][:, [position[c] for c in net]]
            units.append(Unit(layout, net, unit.tree_vars, fine["rows"][rest], fine["counts"][rest], active))
        constant += filled_counts(layout, net, unit.rows, unit.counts)
    return units, split, constant


def _promote(layout, trees, fine, per_host):
    """Units of their own for the component shapes that pay for a batch (:func:`plan_split`).

    A shape of component gets a batch on a tree of its own where that is cheaper than its
    patterns' share of their hosts' calibrations (``per_host``: a host's cost per pattern).
    Returns those units and which component patterns they took.
    """
    owner, member, touch = fine["owner"], fine["member"], fine["touch"]
    first, _, which = distinct_tuples(np.column_stack([owner, member]))
    order = np.argsort(which, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(which, minlength=len(first)))])
    entries = {}  # shape key -> [(patterns, cliques, component variables, shape)]
    for m in range(len(first)):
        sel = order[bounds[m] : bounds[m + 1]]
        cliques = fine["cliques"][touch[first[m]]].tolist()
        comp = canonical_order(layout, cliques, np.flatnonzero(member[first[m]]))
        shape = tree_shape(layout, cliques, comp)
        entries.setdefault(shape[0], []).append((sel, cliques, comp, shape))
    promoted = np.zeros(len(owner), dtype=bool)
    units = []
    for key, members in entries.items():
        n = sum(len(sel) for sel, *_ in members)
        hosted = sum(float(per_host[owner[sel]].sum()) for sel, *_ in members)
        if hosted <= min_fixed_cost(key):
            continue  # too rare to pay for a batch: stays on its host's tree
        index_floats = max(shape[2] for *_, shape in members)
        if evaluation_cost(trees(key), index_floats, 0, n) >= hosted:
            continue
        for sel, cliques, comp, shape in members:
            units.append(Unit(layout, cliques, comp, fine["rows"][sel], fine["counts"][sel], shape=shape))
            promoted[sel] = True
    return units, promoted


def component_patterns(layout, parts, coarse):
    """The distinct components of the missing entries of every sub-network's patterns.

    A component's pattern is its sub-network, its variables and the observed states of
    the variables it shares a clique with; nothing else of the row enters its
    calibration. All sub-networks at once (components never cross them).

    Returns
    -------
    dict
        Arrays over the distinct component patterns: ``owner`` (sub-network), ``member``
        (its variables), ``rows`` (a row showing it: the component ``-1``, every other
        variable at a state, the other missing entries at 0, their cliques being inactive),
        ``counts`` (summed over the patterns that show it), ``touch`` (which of ``cliques``,
        the cliques of all the sub-networks, hold one of its variables) and ``cliques``.
    """
    n_var = len(layout.n_states)
    rows = np.concatenate([u.rows for u in coarse])
    counts = np.concatenate([u.counts for u in coarse])
    owner = np.repeat(np.arange(len(parts)), [len(u) for u in coarse])
    in_net = np.zeros((len(parts), n_var), dtype=bool)
    for s, net in enumerate(parts):
        in_net[s, [v for c in net for v in layout.cliques[c]]] = True
    cliques = np.array([c for net in parts for c in net], dtype=np.int64)
    row_of, member = missing_components((rows < 0) & in_net[owner], [layout.cliques[c] for c in cliques])
    incidence = _incidence(layout, cliques, n_var)
    touch = csr_matrix(member.astype(np.float64)) @ incidence.T
    closure = (touch @ incidence).toarray() > 0
    touch = touch.toarray() > 0
    states = rows[row_of]
    ns = layout.n_states
    code = np.where(member, ns, np.where(closure, states, ns + 1))
    comp_owner = owner[row_of]
    rep, _, inverse = distinct_tuples(np.column_stack([comp_owner, code]))
    return {
        "owner": comp_owner[rep],
        "member": member[rep],
        "rows": np.where(member[rep], -1, np.maximum(states[rep], 0)),
        "counts": np.bincount(inverse, weights=counts[row_of], minlength=len(rep)),
        "touch": touch[rep],
        "cliques": cliques,
    }


def _incidence(layout, cliques, n_var):
    """The 0/1 matrix of shape ``(len(cliques), n_var)``: which variables each clique holds."""
    sizes = [len(layout.cliques[c]) for c in cliques]
    rows = np.repeat(np.arange(len(cliques)), sizes)
    cols = np.concatenate([layout.cliques[c] for c in cliques])
    return csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(cliques), n_var))


def filled_counts(layout, net, rows, counts):
    """Table counts (summed ``counts``) of the cliques of ``net`` that each pattern in ``rows`` fills completely."""
    out = np.zeros(layout.n_table)
    for c in net:
        clique = list(layout.cliques[c])
        x = rows[:, clique]
        full = (x >= 0).all(axis=1)
        if full.any():
            codes = layout.table_offsets[c] + x[full] @ c_order_strides(layout.n_states[clique])
            out += np.bincount(codes, weights=counts[full], minlength=layout.n_table)
    return out
