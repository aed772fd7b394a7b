"""Sub-networks of a set of factors, cut at the variables that are always observed.

Refaat and Darwiche (Section 4): link two factors when they share a variable that is missing
in some row; the connected components are the sub-networks. Within any row the sub-networks
only meet in observed variables, so the data term of the likelihood is a sum over them
(Theorem 1). Linear in the size of the structure.

The same argument holds row by row (:func:`missing_components`): within one row, factors
linked only through variables observed *in that row* are independent given the row, so each
row's data term is a sum over the connected components of its missing entries. Cutting at
the observed entries of each row, not only at the variables observed in every row, is the
pruning of the network given each example that the paper's Section 3 starts from
(Shachter's barren-node and evidence pruning).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

__all__ = ["missing_component_labels", "missing_components", "subnetworks"]

#: Rows x variable pairs looked at once when linking missing entries (bools).
_PAIR_CHUNK = 1 << 24


def subnetworks(cliques, free):
    """Group factors into sub-networks linked through free (sometimes missing) variables.

    Parameters
    ----------
    cliques : sequence of tuple of int
        The variables of each factor.
    free : ndarray of bool, shape (n_variables,)
        Variables missing in at least one row.

    Returns
    -------
    list of tuple of int
        The factors (indices into ``cliques``) of each sub-network, ordered by their first
        factor; factors without a free variable are left out (their data are complete).
    """
    linked = [i for i, c in enumerate(cliques) if free[list(c)].any()]
    if not linked:
        return []
    rows = [i for i, c in enumerate(linked) for v in cliques[c] if free[v]]
    cols = [v for c in linked for v in cliques[c] if free[v]]
    n = len(linked)
    incidence = coo_matrix((np.ones(len(rows)), (rows, np.array(cols) + n)), shape=(n + len(free),) * 2)
    _, label = connected_components(incidence, directed=False)
    label = label[:n]
    order = np.argsort(label, kind="stable")
    split = np.flatnonzero(np.diff(label[order])) + 1
    linked = np.array(linked)
    return sorted((tuple(linked[part].tolist()) for part in np.split(order, split)), key=lambda t: t[0])


def missing_component_labels(missing, cliques):
    """The component of every missing entry, components linked through shared factors.

    Two entries missing in the same row are linked when one factor holds both variables; an
    entry missing in a row is then in exactly one component of that row, and every factor
    holding a missing entry of the row holds the entries of one component only.

    Parameters
    ----------
    missing : ndarray of bool, shape (n_rows, n_variables)
        Which entries are missing.
    cliques : sequence of tuple of int
        The variables of each factor.

    Returns
    -------
    label : ndarray of int64, shape (n_missing,)
        The component of each missing entry, the entries in row-major order
        (``np.nonzero(missing)``); components are numbered in order of their first entry, so
        by row.
    row : ndarray of int64, shape (n_components,)
        The row of each component, ascending.

    Notes
    -----
    One sparse graph over the missing entries of all rows, one
    :func:`scipy.sparse.csgraph.connected_components` call: ``O(n_rows * n_pairs)`` for
    ``n_pairs`` pairs of sometimes-missing variables that share a factor, vectorised over both
    (no loop over rows or pairs).
    """
    missing = np.asarray(missing, dtype=bool)
    n_nodes = int(missing.sum())
    if n_nodes == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    node = np.full(missing.shape, -1, dtype=np.int64)
    node[missing] = np.arange(n_nodes)
    free = missing.any(axis=0)
    pairs = set()
    for c in cliques:
        f = [int(v) for v in c if free[v]]
        pairs.update((f[i], f[j]) for i in range(len(f)) for j in range(i + 1, len(f)))
    pairs = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    heads, tails = [], []
    step = max(1, _PAIR_CHUNK // max(1, len(pairs)))
    for a in range(0, missing.shape[0], step):  # rows x pairs at a time, bounded
        both = missing[a : a + step, pairs[:, 0]] & missing[a : a + step, pairs[:, 1]]
        r, k = np.nonzero(both)
        heads.append(node[a + r, pairs[k, 0]])
        tails.append(node[a + r, pairs[k, 1]])
    heads, tails = np.concatenate(heads), np.concatenate(tails)
    graph = coo_matrix((np.ones(len(heads)), (heads, tails)), shape=(n_nodes, n_nodes))
    n_comp, label = connected_components(graph, directed=False)
    # Nodes are numbered row by row, so first occurrences put the components in row order.
    _, first = np.unique(label, return_index=True)
    rank = np.empty(n_comp, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(n_comp)
    label = rank[label].astype(np.int64)
    r = np.nonzero(missing)[0]
    row = np.zeros(n_comp, dtype=np.int64)
    row[label] = r
    return label, row


def missing_components(missing, cliques):
    """Connected components of the missing entries of every row, linked through shared factors
    (:func:`missing_component_labels`), as a dense membership matrix.

    Parameters
    ----------
    missing, cliques
        As in :func:`missing_component_labels`.

    Returns
    -------
    row : ndarray of int64, shape (n_components,)
        The row of each component, ascending.
    member : ndarray of bool, shape (n_components, n_variables)
        The variables of each component (missing in its row).
    """
    missing = np.asarray(missing, dtype=bool)
    label, row = missing_component_labels(missing, cliques)
    member = np.zeros((len(row), missing.shape[1]), dtype=bool)
    member[label, np.nonzero(missing)[1]] = True
    return row, member
