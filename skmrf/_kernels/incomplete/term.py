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
calibrated for all its patterns at once (:class:`~skmrf.inference._evidence.BatchedJunctionTree`)
over its *free* variables, the ones missing somewhere in the data; its always-observed
variables are sliced into each pattern's tables. Sub-networks of the same shape (free
states and reduced cliques) share one batch.

Three plans compute the same sum (``plan``):

- ``"none"`` (``decompose=False``): all the cliques that hold a free variable form a single
  network whose patterns are the distinct rows: the same algorithm on the undecomposed data
  with duplicate rows merged (the paper's baseline).
- ``"subnetworks"`` (``decompose=True``): the paper's decomposition, Eq. 2.
- ``"components"`` (chosen by ``decompose="auto"`` when cheaper): the same cut made row by
  row (:func:`~skmrf._data.decompose.missing_components`). Within one row, the cliques of a
  sub-network linked only through entries observed *in that row* are independent given the
  row, so ``log Z^s(d)`` is the sum of the log-potentials of the cliques the row fills
  completely (counted once, like complete data) and of ``log Z_C(d)`` over the connected
  components ``C`` of the row's missing entries. A component's pattern is its missing
  variables and the observed states next to them, nothing else: one large sub-network whose
  patterns are nearly all distinct compresses to a few hundred component patterns, each
  calibrated on a tree over its own missing variables. Components of the same shape share a
  batch; a shape too rare to pay for a batch of its own is calibrated on its sub-network's
  tree with the other cliques' tables set to zero and the other variables clamped.

Whatever the plan, the patterns of a shape whose joint states are few are not calibrated on a
tree but enumerated, all shapes in one batch (:class:`~.batch.FlatGroup`): a
pattern's ``log Z(d)`` is a log-sum-exp over the joint states of its missing variables of the
tables of the cliques that hold one of them, and the cliques that hold none come out of it
and are counted once, like complete data. A tree's fixed cost per shape and chunk (some
ten numpy calls per node) outweighs the arithmetic of a few hundred small patterns; the cost
model (:data:`~.cost.FLAT_COST_MODEL`) chooses per shape.

``decompose="auto"`` prices each plan with a cost model of one evaluation
(:func:`evaluation_cost`: patterns times the floats of a calibration, plus a fixed cost per
batched call, both measured) and keeps the cheapest, per sub-network for the row-wise split.

Modules: this one plans and evaluates (:class:`IncompleteDataTerm`); the cost model is in
:mod:`.cost`, the batches (units of patterns, their trees and gather matrices,
the E-step of one chunk) in :mod:`.batch`, the row-wise split in
:mod:`.split`, the maximal cliques' tables and the model term in
:mod:`.model`.
"""

from __future__ import annotations

import numpy as np

from ..._data import c_order_strides, count_joint_states, distinct_projections, subnetworks, transposed_states
from ..._utils._sklearn_compat import delayed
from .batch import FlatGroup, Group, TreeCache, Unit, distinct_tuples, e_step_chunk, fold_rows
from .cost import COST_MODEL, SPLIT_MIN_COST, cost_features, evaluation_cost, union_cost
from .model import ModelTerm, factor_tables
from .split import plan_split

__all__ = [
    "COST_MODEL",
    "IncompleteDataTerm",
    "ModelTerm",
    "compatible_counts",
    "cost_features",
    "evaluation_cost",
    "factor_tables",
]


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


class IncompleteDataTerm:
    """``sum_i log Z(d_i)`` over the rows of incomplete data, and its gradient.

    Parameters
    ----------
    layout : skmrf._parametrisation.CliqueLayout
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
        self._factors_t = self._factors.T.tocsr()  # built once: ``.T`` builds a new matrix each time
        self.layout = layout
        self.max_bytes = max_bytes
        self.n_rows = X.shape[0]
        self.free = (X < 0).any(axis=0)
        has_free = np.array([self.free[list(c)].any() for c in layout.cliques], dtype=bool)
        self.observed_cliques = np.flatnonzero(~has_free)
        self._trees = TreeCache(max_bytes)
        self._X = X if keep_rows else None
        self.groups, self.predicted_cost = [], {}
        units, constant, which = self._plan(X, has_free, decompose, keep_rows, weight)
        self.observed_counts = self._observed_counts(X, weight)
        if constant is not None:
            self.observed_counts += constant
        self._build(units)
        self.n_calibrations = int(sum(len(g.counts) for g in self.groups))
        self._row_patterns = which if keep_rows else None

    # -- planning --------------------------------------------------------------
    def _plan(self, X, has_free, decompose, keep_rows, weight):
        """Price the plans that ``decompose`` allows and keep the cheapest.

        Sets ``plan``, ``networks``, ``n_patterns``, ``split`` and ``predicted_cost``. Returns
        the chosen plan's units, the table counts that the row-wise split adds to the
        complete-data ones (None for the other plans), and which pattern each row shows on
        each network.
        """
        lay = self.layout
        parts = subnetworks(lay.cliques, self.free)
        projected, inverse = self._project(X, parts, weight)
        coarse = [Unit(lay, n, self._free_of(n), X[r], c) for n, (r, c) in zip(parts, projected)]
        units = {"subnetworks": coarse}
        whole = self._price(units, inverse, has_free, X, weight, decompose)
        split, constant = np.zeros(len(parts), dtype=bool), None
        worth = self.predicted_cost.get("subnetworks", 0.0) >= SPLIT_MIN_COST
        if parts and not keep_rows and (decompose == "components" or (decompose == "auto" and worth)):
            units["components"], split, constant = plan_split(
                lay, self._trees, parts, coarse, decompose == "components"
            )
            self.predicted_cost["components"] = self._trees.cost(units["components"])
        self.plan = self._choose(decompose, split)
        if self.plan == "none" and whole is None and len(parts) > 1:  # price it exactly before taking it
            whole = self._whole(units, inverse, has_free, X, weight)
            self.plan = self._choose(decompose, split)
        self.networks, which = whole if self.plan == "none" and whole is not None else (parts, inverse)
        units.setdefault("none", coarse)  # one sub-network (or none) is the whole network
        chosen = "none" if self.plan == "none" else "subnetworks"  # the split's units are not patterns
        self.n_patterns = np.array([len(u) for u in units[chosen]], dtype=np.int64)
        self.split = split if self.plan == "components" else np.zeros(len(self.networks), dtype=bool)
        return units[self.plan], constant if self.plan == "components" else None, which

    def _price(self, units, inverse, has_free, X, weight, decompose):
        """Price the sub-networks and the undecomposed network; returns the latter if built (``_whole``)."""
        coarse = units["subnetworks"]
        if decompose is not False or len(coarse) <= 1:
            self.predicted_cost["subnetworks"] = self._trees.cost(coarse)
        if len(coarse) <= 1:
            return None
        if decompose is False:
            return self._whole(units, inverse, has_free, X, weight)
        if decompose is not True:
            # Priced from its sub-networks' trees (its tree is their forest) and its number of
            # distinct rows; built only if it wins.
            n_rows = len(np.unique(fold_rows(inverse)))
            self.predicted_cost["none"] = union_cost([self._trees(u.key) for u in coarse], coarse, n_rows)
        return None

    def _choose(self, decompose, split):
        """The plan: the one asked for, or the cheapest priced for ``decompose="auto"``."""
        if decompose is False:
            return "none"
        if decompose == "components":
            return "components" if split.any() else "subnetworks"
        plan = min(self.predicted_cost, key=self.predicted_cost.get) if self.predicted_cost else "subnetworks"
        return "subnetworks" if plan == "components" and not split.any() else plan  # the same units

    def _whole(self, units, inverse, has_free, X, weight=None):
        """The undecomposed network's unit (its distinct rows) and its exact price.

        A row's pattern on the whole network is the tuple of its patterns on the sub-networks.
        Returns ``(networks, which pattern each row shows)``.
        """
        rows, counts, which = distinct_tuples(inverse, weight)
        net = tuple(np.flatnonzero(has_free).tolist())
        units["none"] = [Unit(self.layout, net, self._free_of(net), X[rows], counts)]
        self.predicted_cost["none"] = self._trees.cost(units["none"])
        return [net], which[:, None]

    def _project(self, X, parts, weight=None):
        """Distinct patterns of the rows projected on each sub-network, in one pass.

        Returns ``[(representative rows, counts)]`` per sub-network and the pattern (local
        index) each row shows on each, shape ``(n_rows, n_parts)``.
        """
        lay = self.layout
        if not parts:
            return [], np.zeros((self.n_rows, 0), dtype=np.int64)
        variables = [tuple(sorted({v for c in net for v in lay.cliques[c]})) for net in parts]
        Xc = np.where(X < 0, lay.n_states, X)  # "missing" is one more state
        sub, row, count, inverse = distinct_projections(
            Xc, variables, lay.n_states + 1, return_inverse=True, weight=weight
        )
        starts = np.concatenate([[0], np.cumsum(np.bincount(sub, minlength=len(parts)))])
        projected = [(row[a:b], count[a:b]) for a, b in zip(starts[:-1], starts[1:])]
        return projected, inverse - starts[:-1][None, :]

    def _free_of(self, cliques):
        return sorted({v for c in cliques for v in self.layout.cliques[c] if self.free[v]})

    # -- building --------------------------------------------------------------
    def _build(self, units):
        """Batch the units: one group per tree shape, one enumerated group for the rest (:meth:`TreeCache.batches`)."""
        self._pattern_of = {}
        by_tree, flat, _ = self._trees.batches(units)
        for key, us in by_tree.items():
            built = [u.build() for u in us]
            evidence = np.concatenate([b[1] for b in built])
            counts = np.concatenate([u.counts for u in us])
            self._place(us)
            tree = self._trees(key)
            self.groups.append(Group(tree, [b[0] for b in built], evidence, counts, self.layout.n_table))
        if flat:
            self._place(flat)
            group = FlatGroup(flat, self.layout.n_table)
            self.observed_counts += group.constant
            self.groups.append(group)
        self._units = units

    def _place(self, units):
        """Record where each unit's patterns sit in the next group's batch."""
        offset = 0
        for u in units:
            self._pattern_of[id(u)] = (len(self.groups), offset)
            offset += len(u)

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
            results = [e_step_chunk(*t, full) for t in self.tasks()]
        else:
            results = parallel(delayed(e_step_chunk)(*t, full) for t in self.tasks())
        value = float(self.observed_counts @ full)
        grad = self.observed_counts.copy()
        for v, _, g in results:
            value += v
            grad += g
        return value, self._factors_t @ grad

    def tables(self, full):
        """The flat tables the batches gather from (the maximal cliques'), from the layout's ``full``."""
        return self._factors @ full

    def row_log_evidence(self, full):
        """``log Z(d_r)`` of every row (needs ``keep_rows=True``)."""
        full = self._factors @ full
        per_group = [
            np.concatenate([e_step_chunk(*t, full, need_gradient=False)[1] for t in g.chunks()]) for g in self.groups
        ]
        out = np.zeros(self.n_rows)
        for codes in self._observed_codes(self._X):
            out += full[codes].sum(axis=1)
        for s, unit in enumerate(self._units):
            g, offset = self._pattern_of[id(unit)]
            out += per_group[g][offset + self._row_patterns[:, s]]
        return out
