"""One junction tree calibrated for many evidence patterns at once.

Incomplete data needs, for every distinct observed pattern ``d``, the conditional log
partition function ``log Z(d)`` and the clique marginals given ``d`` (Refaat and Darwiche,
Eq. 1). The patterns of one (sub-)network share its structure, so they are calibrated
together: every table carries a leading batch axis (one entry per pattern), each pattern
brings its own log-potential tables (the always-observed variables already sliced in) and
its own evidence on the other variables. The messages are the log-space Hugin updates of
:class:`~skmrf.inference.JunctionTree`, vectorised over the batch; no loop over patterns.
"""

from __future__ import annotations

import numpy as np

from ._junction_tree import JunctionTree, _logsumexp

__all__ = ["BatchedJunctionTree"]

#: Smallest scale (largest entry of a message, sum of a root table) of a pattern calibrated in
#: probability space; below it, digits could be lost to underflow and the pattern is
#: calibrated again in log space.
_SAFE_SCALE = 1e-250


def _max(table, axes):
    """The max-product message: ``table`` maximised over ``axes`` (none: itself)."""
    return table.max(axis=axes) if axes else table


class BatchedJunctionTree:
    """Junction tree over a few variables, calibrated for a batch of evidence patterns.

    Parameters
    ----------
    n_states : array-like of int, shape (n_variables,)
        States of the (local) variables.
    scopes : sequence of tuple of int
        Distinct sorted variable tuples that carry a log-potential table; every
        variable must be in at least one.
    max_bytes : int, optional
        Memory budget of one calibration of the underlying tree (one pattern).
    heuristic : {"auto", "min_fill", "min_degree"}, default="auto"
        The elimination heuristic of the underlying :class:`~skmrf.inference.JunctionTree`.

    Attributes
    ----------
    tree : JunctionTree
    scope_shapes : list of tuple
        ``(K_v for v in scope)`` per scope.
    """

    def __init__(self, n_states, scopes, max_bytes=None, heuristic="auto"):
        self.n_states = np.asarray(n_states, dtype=np.int64)
        self.scopes = [tuple(int(v) for v in s) for s in scopes]
        self.tree = JunctionTree(self.n_states, self.scopes, max_bytes=max_bytes, heuristic=heuristic)
        self.scope_shapes = [tuple(int(self.n_states[v]) for v in s) for s in self.scopes]
        tree = self.tree
        self._home = [next(k for k, nd in enumerate(tree.nodes) if v in nd) for v in range(len(self.n_states))]
        # Shape of each scope's table inside its node (1 on the node's other axes).
        self._in_node = [
            tuple(int(self.n_states[v]) if v in set(s) else 1 for v in tree.nodes[k])
            for s, k in zip(self.scopes, tree.assign)
        ]
        # Axes of each scope inside its node, to sum a node marginal down to the scope.
        self._scope_axes = [
            tuple(1 + a for a, v in enumerate(tree.nodes[k]) if v not in set(s))
            for s, k in zip(self.scopes, tree.assign)
        ]

    @property
    def entries(self) -> int:
        """Table entries of one calibration (per pattern)."""
        return self.tree.table_entries

    def calibrate(self, scope_tables, evidence, return_nodes=False):
        """``log Z(d)`` and the scope marginals given ``d``, for every pattern ``d``.

        Parameters
        ----------
        scope_tables : list of ndarray, one per scope, shape ``(P, *scope_shape)``
            Log-potential table of each scope for each pattern.
        evidence : ndarray of int, shape (P, n_variables)
            Observed state of each variable in each pattern, ``-1`` where missing.

        Returns
        -------
        log_z : ndarray of shape (P,)
            ``log sum_x exp(sum_s table_s(x_s))`` over the states compatible with the evidence.
        marginals : list of ndarray, one per scope, shape ``(P, *scope_shape)``
            The conditional distribution of each scope's variables.
        node_marginals : list of ndarray, one per tree node, shape ``(P, *node_shape)``
            Only with ``return_nodes``: the input of :meth:`sample`.

        Notes
        -----
        Messages are passed in probability space, each node's table scaled by its largest
        entry and each upward message by its own, the scales kept in log space (as
        :meth:`JunctionTree.calibrate` does): one exponential per table entry instead of a
        log-sum-exp per message, half the numpy calls per node. A pattern for which some
        scale falls below ``1e-250`` (so that a product could lose digits to underflow) is
        calibrated again in log space, where nothing underflows.
        """
        tree = self.tree
        n_batch = evidence.shape[0]
        beliefs = self._node_tables(scope_tables)
        for v in np.flatnonzero((evidence >= 0).any(axis=0)):
            k = self._home[v]
            state = evidence[:, v]
            K = int(self.n_states[v])
            mask = np.where((state[:, None] >= 0) & (np.arange(K)[None, :] != state[:, None]), -np.inf, 0.0)
            shape = [n_batch] + [1] * len(tree.nodes[k])
            shape[1 + tree.nodes[k].index(v)] = K
            beliefs[k] += mask.reshape(shape)
        log_z, nodes, ok = self._scaled(beliefs)
        if not ok.all():  # redo the patterns at risk of underflow in log space
            bad = np.flatnonzero(~ok)
            lz, nd = self._log_space([b[bad] for b in beliefs])
            log_z[bad] = lz
            for k in range(len(nodes)):
                nodes[k][bad] = nd[k]
        marginals = []
        for c, k in enumerate(tree.assign):
            axes = self._scope_axes[c]
            marginals.append(nodes[k].sum(axis=axes) if axes else nodes[k])
        if not return_nodes:
            return log_z, marginals
        return log_z, marginals, nodes

    def _scaled(self, beliefs):
        """Hugin in probability space with per-pattern scales: ``log Z``, node marginals, and
        which patterns kept every scale above ``_SAFE_SCALE``."""
        tree = self.tree
        n_batch = beliefs[0].shape[0]
        n_nodes = len(tree.nodes)
        psi, log_z = [None] * n_nodes, np.zeros(n_batch)
        for k, b in enumerate(beliefs):
            top = b.reshape(n_batch, -1).max(axis=1)
            top[~np.isfinite(top)] = 0.0  # a table without a finite entry: flagged below
            psi[k] = np.exp(b - top.reshape((n_batch,) + (1,) * (b.ndim - 1)))
            log_z += top
        worst = np.ones(n_batch)
        up = [None] * n_nodes
        sums = {}
        for k in tree.schedule:  # collect: children before parents
            e = tree._edges[k]
            flat = psi[k].reshape(n_batch, -1)
            if e is None:
                sums[k] = flat.sum(axis=1)
                worst = np.minimum(worst, sums[k])
                continue
            up[k] = psi[k].sum(axis=tuple(1 + a for a in e[0])) if e[0] else psi[k]
            scale = up[k].reshape(n_batch, -1).max(axis=1)
            worst = np.minimum(worst, scale)
            scale = np.where(scale > 0, scale, 1.0)
            psi[tree.parent[k]] *= (up[k] / scale.reshape((n_batch,) + (1,) * (up[k].ndim - 1))).reshape(
                (n_batch,) + e[2]
            )
            log_z += np.log(scale)
        with np.errstate(divide="ignore"):
            log_z += sum(np.log(z) for z in sums.values())
        marg = [None] * n_nodes
        for k in reversed(tree.schedule):  # distribute: parents are final first
            e = tree._edges[k]
            if e is None:
                z = np.where(sums[k] > 0, sums[k], 1.0)
                marg[k] = psi[k] / z.reshape((n_batch,) + (1,) * (psi[k].ndim - 1))
                continue
            _, par_sum, in_par, in_child = e
            down = marg[tree.parent[k]].sum(axis=tuple(1 + a for a in par_sum)) if par_sum else marg[tree.parent[k]]
            down = down.reshape(up[k].shape)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(up[k] > 0, down / up[k], 0.0)  # 0/0 in probability space is 0
            marg[k] = psi[k] * ratio.reshape((n_batch,) + in_child)
        return log_z, marg, (worst > _SAFE_SCALE) & np.isfinite(log_z)

    def _log_space(self, beliefs):
        """Hugin in log space (no underflow): ``log Z`` and the node marginals."""
        tree = self.tree
        n_batch = beliefs[0].shape[0]
        beliefs = [b.copy() for b in beliefs]
        up = [None] * len(tree.nodes)
        log_z_root = {}
        for k in tree.schedule:  # collect: children before parents
            e = tree._edges[k]
            if e is None:
                log_z_root[k] = _logsumexp(beliefs[k], tuple(range(1, beliefs[k].ndim)))
            else:
                up[k] = _logsumexp(beliefs[k], tuple(1 + a for a in e[0])).reshape((n_batch,) + e[2])
                beliefs[tree.parent[k]] += up[k]
        for k in reversed(tree.schedule):  # distribute: parents are final first
            e = tree._edges[k]
            if e is None:
                continue
            _, par_sum, in_par, in_child = e
            down = _logsumexp(beliefs[tree.parent[k]], tuple(1 + a for a in par_sum)).reshape((n_batch,) + in_par)
            with np.errstate(invalid="ignore"):
                # Hugin update; where the child's upward message is -inf so is its belief,
                # and the 0 keeps it so instead of -inf - -inf.
                msg = np.where(np.isneginf(up[k]), 0.0, down - up[k])
            beliefs[k] += msg.reshape((n_batch,) + in_child)
        log_z = sum(log_z_root.values())
        nodes = []
        for k in range(len(tree.nodes)):
            lz = log_z_root[tree.root_of[k]].reshape((n_batch,) + (1,) * len(tree.nodes[k]))
            nodes.append(np.exp(beliefs[k] - lz))
        return log_z, nodes

    def log_partition(self, scope_tables):
        """``log Z`` of every batch entry without evidence: the collect pass only.

        Parameters
        ----------
        scope_tables : list of ndarray, one per scope, shape ``(P, *scope_shape)``

        Returns
        -------
        ndarray of shape (P,)
        """
        return self._collect(scope_tables, _logsumexp)[1]

    def _node_tables(self, scope_tables):
        """Each tree node's log-potential table: the sum of the scope tables assigned to it."""
        n_batch = scope_tables[0].shape[0]
        beliefs = [np.zeros((n_batch,) + s) for s in self.tree.shapes]
        for c, k in enumerate(self.tree.assign):
            beliefs[k] += scope_tables[c].reshape((n_batch,) + self._in_node[c])
        return beliefs

    def _collect(self, scope_tables, reduce):
        """The collect pass, children before parents, with ``reduce(table, axes)`` (log-sum-exp
        or max) as the message: the collected node tables and the sum of the roots' reductions."""
        tree = self.tree
        beliefs = self._node_tables(scope_tables)
        n_batch = beliefs[0].shape[0]
        total = np.zeros(n_batch)
        for k in tree.schedule:
            e = tree._edges[k]
            if e is None:
                total += reduce(beliefs[k], tuple(range(1, beliefs[k].ndim)))
            else:
                beliefs[tree.parent[k]] += reduce(beliefs[k], tuple(1 + a for a in e[0])).reshape((n_batch,) + e[2])
        return beliefs, total

    def _top_down(self, tables):
        """Yield, parents before children, each node ``k`` with variables outside its separator:
        ``(k, separator variables, other variables, table)``, the node's ``tables[k]`` as
        ``(P, separator states, other states)`` (C order over each)."""
        tree, ns = self.tree, self.n_states
        for k in reversed(tree.schedule):
            node = tree.nodes[k]
            p = tree.parent[k]
            sep = [] if p < 0 else [v for v in node if v in set(tree.nodes[p])]
            rest = [v for v in node if v not in sep]
            if rest:
                order = [1 + node.index(v) for v in sep + rest]
                n_sep = int(np.prod(ns[sep])) if sep else 1
                yield k, sep, rest, np.transpose(tables[k], [0] + order).reshape(len(tables[k]), n_sep, -1)

    def most_probable(self, scope_tables):
        """The jointly most probable state of every batch entry, by max-product (Viterbi) passes.

        Parameters
        ----------
        scope_tables : list of ndarray, one per scope, shape ``(P, *scope_shape)``
            Log-potential tables (any evidence already sliced in).

        Returns
        -------
        states : ndarray of int64, shape (P, n_variables)
            An assignment maximising ``sum_s table_s(x_s)``; ties go to the lowest state in
            each node's C order (deterministic).
        log_max : ndarray of shape (P,)
            That maximum.

        Notes
        -----
        The collect pass of :meth:`log_partition` with ``max`` in place of log-sum-exp; then,
        from each root, every node's variables are set to the maximiser of its collected table
        given the states already chosen on its separator (Koller & Friedman, Section 13.3).
        """
        ns = self.n_states
        beliefs, log_max = self._collect(scope_tables, _max)
        n_batch = len(log_max)
        x = np.zeros((n_batch, len(ns)), dtype=np.int64)
        rows = np.arange(n_batch)
        for _, sep, rest, table in self._top_down(beliefs):
            code = np.ravel_multi_index(tuple(x[:, v] for v in sep), tuple(ns[sep])) if sep else 0
            best = table[rows, code].argmax(axis=1)
            for v, val in zip(rest, np.unravel_index(best, tuple(ns[rest]))):
                x[:, v] = val
        return x, log_max

    def sample(self, node_marginals, n_samples, rng):
        """Exact independent draws for every pattern, by forward sampling from the roots.

        Parameters
        ----------
        node_marginals : list of ndarray
            From :meth:`calibrate` with ``return_nodes=True``.
        n_samples : int
            Draws per pattern.
        rng : numpy.random.Generator

        Returns
        -------
        ndarray of int64, shape (P, n_samples, n_variables)
        """
        tree, ns = self.tree, self.n_states
        n_batch = node_marginals[0].shape[0]
        x = np.zeros((n_batch, n_samples, len(ns)), dtype=np.int64)
        u = rng.random((len(tree.nodes), n_batch, n_samples))
        for k, sep, rest, table in self._top_down(node_marginals):
            cdf = np.cumsum(table, axis=2)
            with np.errstate(invalid="ignore", divide="ignore"):
                cdf /= cdf[:, :, -1:]  # separator states of probability 0 are never drawn
            if sep:
                code = np.ravel_multi_index(tuple(x[:, :, v] for v in sep), tuple(ns[sep]))
            else:
                code = np.zeros((n_batch, n_samples), dtype=np.int64)
            rows = np.take_along_axis(cdf, code[:, :, None], axis=1)  # (P, n_samples, n_rest)
            draw = np.minimum((rows <= u[k][:, :, None]).sum(axis=2), rows.shape[2] - 1)
            for v, val in zip(rest, np.unravel_index(draw, tuple(ns[rest]))):
                x[:, :, v] = val
        return x
