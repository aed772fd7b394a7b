"""The discrete MRF in the log-linear parametrisation normalised with respect to zero.

For a clique ``c`` with states ``K_i`` per variable, the potential block holds
one parameter per joint assignment in which every variable of ``c`` is
non-zero (shape ``(K_i - 1 for i in c)``); its feature is the indicator of
that assignment. Any positive distribution that factorises on the graph has
exactly one such representation (LAP paper, Theorem 2), which is what makes
reading parameters off an auxiliary model valid. For binary variables,

    log p(x) = sum_i t_i x_i + sum_ij t_ij x_i x_j + ... - log Z.

Internally each clique also has a *full table* of shape ``(K_i for i in c)``,
with zeros wherever a variable is in state 0, stored C-order in one flat array
(``_Layout``); data, energies and marginals are all handled through codes into
that array, so no computation loops over rows.
"""

from __future__ import annotations

import math
from functools import cached_property

import networkx as nx
import numpy as np

from .graphs import MRFGraph, resolve_graph

__all__ = ["DiscreteMRF"]

# Rows x clique-columns per chunk when coding data (bounds temporary memory to
# about 8 * _CHUNK bytes per array).
_CHUNK = 1 << 22


class _Layout:
    """Index bookkeeping for the blocks and full tables of a set of cliques."""

    def __init__(self, cliques, n_states):
        self.cliques = tuple(tuple(int(i) for i in c) for c in cliques)
        self.n_states = np.asarray(n_states, dtype=np.int64)
        k = self.n_states
        kl = k.tolist()
        self.table_shapes = [tuple(kl[i] for i in c) for c in self.cliques]
        self.block_shapes = [tuple(s - 1 for s in ts) for ts in self.table_shapes]
        self.table_sizes = np.array([math.prod(s) for s in self.table_shapes], dtype=np.int64)
        self.block_sizes = np.array([math.prod(s) for s in self.block_shapes], dtype=np.int64)
        self.table_offsets = np.concatenate([[0], np.cumsum(self.table_sizes)])
        self.block_offsets = np.concatenate([[0], np.cumsum(self.block_sizes)])
        self.n_params = int(self.block_offsets[-1])
        self.n_table = int(self.table_offsets[-1])
        # Position in the flat full tables of every parameter (C-order blocks),
        # computed once per distinct table shape.
        self.theta_pos = np.empty(self.n_params, dtype=np.int64)
        by_shape = {}
        for c, ts in enumerate(self.table_shapes):
            by_shape.setdefault(ts, []).append(c)
        for ts, members in by_shape.items():
            members = np.array(members)
            idx = np.arange(int(np.prod(ts))).reshape(ts)
            pattern = idx[(slice(1, None),) * len(ts)].ravel()
            dest = self.block_offsets[members][:, None] + np.arange(pattern.size)
            self.theta_pos[dest] = self.table_offsets[members][:, None] + pattern
        # Cliques grouped by size for vectorised coding: variables, C-order
        # strides and table offsets of each clique.
        self.groups = []
        sizes = np.array([len(c) for c in self.cliques])
        for s in np.unique(sizes):
            members = np.flatnonzero(sizes == s)
            var = np.array([self.cliques[m] for m in members], dtype=np.int64)
            kk = k[var]
            strides = np.ones_like(kk)
            for j in range(s - 2, -1, -1):
                strides[:, j] = strides[:, j + 1] * kk[:, j + 1]
            self.groups.append((members, var, strides, self.table_offsets[members]))

    def full_tables(self, theta):
        """Flat full tables (zeros where a state is 0) from the parameter vector."""
        full = np.zeros(self.n_table)
        full[self.theta_pos] = theta
        return full

    def iter_codes(self, X):
        """Yield ``(members, codes)``: codes of X's rows into the flat tables.

        ``codes`` has shape ``(n_rows, len(members))``; chunked over cliques.
        """
        n = max(X.shape[0], 1)
        for members, var, strides, offsets in self.groups:
            step = max(1, _CHUNK // (n * var.shape[1]))
            for a in range(0, len(members), step):
                b = slice(a, a + step)
                codes = np.einsum("nms,ms->nm", X[:, var[b]], strides[b]) + offsets[b]
                yield members[b], codes

    def table_counts(self, X):
        """Counts of every joint state of every clique (flat tables, int64)."""
        counts = np.zeros(self.n_table, dtype=np.int64)
        for members, codes in self.iter_codes(X):
            lo, hi = self.table_offsets[members[0]], self.table_offsets[members[-1] + 1]
            counts[lo:hi] += np.bincount(codes.ravel() - lo, minlength=hi - lo)
        return counts

    def energy(self, X, theta):
        """``sum_c theta_c . phi_c(x)`` for every row of X."""
        full = self.full_tables(theta)
        out = np.zeros(X.shape[0])
        for _, codes in self.iter_codes(X):
            out += full[codes].sum(axis=1)
        return out


class DiscreteMRF:
    """A discrete Markov random field normalised with respect to zero.

    Parameters
    ----------
    graph : MRFGraph or any graph form accepted by :func:`skmrf.graphs.resolve_graph`
        The structure; resolved against ``len(n_states)`` variables.
    n_states : int or array-like of int
        Number of states of each variable (at least 2; an int means all).
    theta : array-like of shape (n_params,), optional
        Parameters, blocks in :attr:`cliques` order, each block C-order over
        the non-zero states. Zero (the uniform distribution) if omitted.
    n_variables : int, optional
        Needed only when ``n_states`` is an int and ``graph`` is not an
        :class:`~skmrf.graphs.MRFGraph`.

    Attributes
    ----------
    graph : MRFGraph
    cliques : tuple of tuple of int
        The potential blocks, in parameter order.
    n_states : ndarray of shape (n_variables,)
    theta : ndarray of shape (n_params,)

    Examples
    --------
    >>> from skmrf.model import DiscreteMRF
    >>> m = DiscreteMRF([(0, 1)], n_states=2, n_variables=2, theta=[0.5, -0.2, 1.0])
    >>> m.cliques
    ((0,), (1,), (0, 1))
    >>> round(float(m.log_partition()), 6)
    1.965257
    """

    def __init__(self, graph, n_states, theta=None, n_variables=None):
        if np.ndim(n_states) == 0:
            if n_variables is None:
                if isinstance(graph, MRFGraph):
                    n_variables = graph.n_variables
                elif isinstance(graph, nx.Graph):
                    n_variables = graph.number_of_nodes()
                else:
                    raise ValueError("Give n_variables or one n_states per variable.")
            n_states = np.full(n_variables, n_states)
        n_states = np.asarray(n_states, dtype=np.int64)
        if n_states.ndim != 1 or np.any(n_states < 1):
            raise ValueError("n_states must be positive integers, one per variable.")
        self.n_states = n_states
        self.graph = resolve_graph(graph, len(n_states))
        self._layout = _Layout(self.graph.cliques, n_states)
        if theta is None:
            theta = np.zeros(self._layout.n_params)
        theta = np.array(theta, dtype=np.float64)
        if theta.shape != (self._layout.n_params,):
            raise ValueError(f"theta has shape {theta.shape}; this model has {self._layout.n_params} parameters.")
        if not np.all(np.isfinite(theta)):
            raise ValueError("theta contains NaN or inf.")
        self.theta = theta

    # -- structure ---------------------------------------------------------
    @property
    def cliques(self):
        return self.graph.cliques

    @property
    def n_variables(self) -> int:
        return len(self.n_states)

    @property
    def n_params(self) -> int:
        return self._layout.n_params

    def _clique_index(self, clique) -> int:
        key = tuple(sorted(int(i) for i in clique))
        try:
            return self._clique_lookup[key]
        except KeyError:
            raise ValueError(f"{tuple(clique)!r} is not a clique of this model.") from None

    @cached_property
    def _clique_lookup(self):
        return {c: i for i, c in enumerate(self.cliques)}

    def potential(self, clique):
        """The parameter block of ``clique``, axes in sorted variable order.

        Returns a view: writing into it changes :attr:`theta`.
        """
        k = self._clique_index(clique)
        lo, hi = self._layout.block_offsets[k], self._layout.block_offsets[k + 1]
        return self.theta[lo:hi].reshape(self._layout.block_shapes[k])

    def get_junction_tree(self, max_bytes=None):
        """The :class:`~skmrf.inference.JunctionTree` of this structure, built once.

        Raises :class:`~skmrf.inference.TreewidthError` (a ``ValueError``)
        when exact inference would exceed ``max_bytes`` (default 2 GiB); on a
        graph far too wide this is found early in the elimination.
        """
        from .inference.junction_tree import JunctionTree

        tree = self.__dict__.get("_junction_tree")
        if tree is None:
            tree = JunctionTree(self.n_states, self.cliques, max_bytes=max_bytes)
            self._junction_tree = tree
        tree.check_memory(max_bytes)
        return tree

    @property
    def junction_tree(self):
        """The junction tree within the default memory budget (see :meth:`get_junction_tree`)."""
        return self.get_junction_tree()

    @property
    def treewidth(self) -> int:
        """Treewidth of the elimination order used by :attr:`junction_tree`."""
        return self.junction_tree.treewidth

    # -- statistics --------------------------------------------------------
    def sufficient_statistics(self, X):
        """Feature counts ``sum_n phi(x_n)`` of integer data X (int64, one pass)."""
        X = np.asarray(X)
        return self._layout.table_counts(X)[self._layout.theta_pos]

    # -- inference ---------------------------------------------------------
    def calibrate(self, evidence=None, max_bytes=None):
        """Calibrate the junction tree at the current parameters.

        Returns
        -------
        skmrf.inference.junction_tree.Calibration
        """
        return self.get_junction_tree(max_bytes).calibrate(
            self._layout.full_tables(self.theta), self._layout, evidence=evidence, max_bytes=max_bytes
        )

    def log_partition(self) -> float:
        """``log Z`` by the junction tree."""
        return self.calibrate().log_z

    def marginals(self) -> dict:
        """Joint marginal table of every clique, ``{clique: array of shape (K_i for i in c)}``."""
        flat = self.calibrate().clique_marginals()
        lay = self._layout
        return {
            c: flat[lay.table_offsets[k] : lay.table_offsets[k + 1]].reshape(lay.table_shapes[k])
            for k, c in enumerate(self.cliques)
        }

    def expected_statistics(self):
        """Model expectation of the features, ``E[phi(x)]`` (the gradient of ``log Z``)."""
        return self.calibrate().clique_marginals()[self._layout.theta_pos]

    def log_prob(self, X):
        """Exact log-probability of every row of integer data X."""
        X = np.asarray(X)
        return self._layout.energy(X, self.theta) - self.log_partition()

    def log_pseudo_likelihood(self, X):
        """``sum_i log p(x_i | x_-i)`` for every row of integer data X (Besag)."""
        X = np.asarray(X)
        plan = ConditionalPlan(self._layout, np.arange(self.n_variables))
        return plan.log_conditionals(self._layout.full_tables(self.theta), X).sum(axis=1)

    def sample(self, n_samples, random_state=None, method="gibbs", n_sweeps=200):
        """Draw samples.

        Parameters
        ----------
        n_samples : int
        random_state : int, RandomState or Generator, optional
        method : {"gibbs", "exact"}
            ``"exact"``: forward sampling on the calibrated junction tree
            (independent exact draws). ``"gibbs"``: ``n_samples`` independent
            chains from uniform random states, each run ``n_sweeps`` sweeps of
            the chromatic Gibbs sampler.
        n_sweeps : int, default=200
            Sweeps per Gibbs chain.

        Returns
        -------
        ndarray of shape (n_samples, n_variables), dtype int64
        """
        from .utils.validation import check_generator

        rng = check_generator(random_state)
        if method == "exact":
            return self.calibrate().sample(n_samples, rng)
        if method == "gibbs":
            from .inference.gibbs import GibbsSampler

            sampler = GibbsSampler(self)
            states = sampler.random_states(n_samples, rng)
            return sampler.run(states, n_sweeps, rng)
        raise ValueError(f"method must be 'gibbs' or 'exact'; got {method!r}.")

    def __repr__(self):
        return f"DiscreteMRF(n_variables={self.n_variables}, n_cliques={len(self.cliques)}, n_params={self.n_params})"


class ConditionalPlan:
    """Full conditionals ``log p(x_i = k | x_-i)`` (up to a constant) of chosen variables.

    For every clique containing a target variable, the table entry of each
    candidate state is gathered from the flat full tables; a sparse matrix sums
    them per variable. Used for pseudo-likelihood and the general Gibbs path.

    Parameters
    ----------
    layout : _Layout
    targets : array-like of int
        The variables whose conditionals are computed.
    """

    def __init__(self, layout, targets):
        import scipy.sparse as sp

        self.targets = np.asarray(targets, dtype=np.int64)
        k = layout.n_states
        self.kmax = int(k.max())
        slot_of = {int(v): s for s, v in enumerate(self.targets)}
        groups = {}
        for _, var, strides, offsets in layout.groups:
            for vars_, st, off in zip(var.tolist(), strides.tolist(), offsets.tolist()):
                for j, v in enumerate(vars_):
                    if v not in slot_of:
                        continue
                    g = groups.setdefault(len(vars_) - 1, ([], [], [], [], []))
                    g[0].append(slot_of[v])
                    g[1].append(vars_[:j] + vars_[j + 1 :])
                    g[2].append(st[:j] + st[j + 1 :])
                    g[3].append(st[j])
                    g[4].append(off)
        self.plan = []
        n_t = len(self.targets)
        for size, (slot, others, ostr, own, off) in groups.items():
            slot = np.array(slot, dtype=np.int64)
            kk = np.minimum(np.arange(self.kmax)[None, :], k[self.targets[slot]][:, None] - 1)
            self.plan.append(
                (
                    np.array(others, dtype=np.int64).reshape(len(slot), size),
                    np.array(ostr, dtype=np.int64).reshape(len(slot), size),
                    np.array(off, dtype=np.int64)[:, None] + kk * np.array(own)[:, None],
                    sp.csr_matrix((np.ones(len(slot)), (slot, np.arange(len(slot)))), shape=(n_t, len(slot))),
                )
            )
        self.n_entries = sum(p[2].shape[0] for p in self.plan)
        self.invalid = np.arange(self.kmax)[None, :] >= k[self.targets][:, None]

    def chunks(self, n_rows):
        """Row slices bounding temporaries to about ``_CHUNK`` floats."""
        step = max(1, _CHUNK // (max(self.n_entries, len(self.targets)) * self.kmax))
        return [slice(a, a + step) for a in range(0, n_rows, step)]

    def logits(self, full, X):
        """Conditional log-potentials, shape ``(len(targets), n_rows, kmax)``.

        Entries for states a variable does not have are ``-inf``. Call on row
        chunks from :meth:`chunks` to bound memory.
        """
        out = np.zeros((len(self.targets), X.shape[0] * self.kmax))
        for others, ostr, idx, summer in self.plan:
            base = np.einsum("nej,ej->ne", X[:, others], ostr)
            vals = full[base[:, :, None] + idx[None]]  # rows, entries, states
            out += summer @ vals.transpose(1, 0, 2).reshape(idx.shape[0], -1)
        out = out.reshape(len(self.targets), X.shape[0], self.kmax)
        out[np.broadcast_to(self.invalid[:, None, :], out.shape)] = -np.inf
        return out

    def log_conditionals(self, full, X):
        """``log p(x_i | x_-i)`` of the observed value of every target, shape ``(n_rows, len(targets))``."""
        from scipy.special import logsumexp

        out = np.empty((X.shape[0], len(self.targets)))
        for b in self.chunks(X.shape[0]):
            lg = self.logits(full, X[b])
            own = np.take_along_axis(lg, X[b][:, self.targets].T[:, :, None], axis=2)[:, :, 0]
            out[b] = (own - logsumexp(lg, axis=2)).T
        return out

    def draw(self, full, X, rng):
        """New values of the targets drawn from their full conditionals, ``(n_rows, len(targets))``."""
        out = np.empty((X.shape[0], len(self.targets)), dtype=np.int64)
        for b in self.chunks(X.shape[0]):
            lg = self.logits(full, X[b])
            cdf = np.cumsum(np.exp(lg - lg.max(axis=2, keepdims=True)), axis=2)
            r = rng.random(cdf.shape[:2] + (1,)) * cdf[:, :, -1:]
            out[b] = (cdf <= r).sum(axis=2).T
        return out
