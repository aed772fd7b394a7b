"""The tables the data term gathers from, and the model term of the likelihood.

:func:`factor_tables` sums every clique's table into a maximal clique's, so that a pattern
gathers a few tables instead of dozens; :class:`ModelTerm` computes ``log Z`` and the clique
marginals (Eq. 1's model term) with one sparse product each way.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

from ..._data import c_order_strides
from ..._parametrisation import CliqueLayout
from ...inference import JunctionTree

__all__ = ["ModelTerm", "factor_tables"]


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
