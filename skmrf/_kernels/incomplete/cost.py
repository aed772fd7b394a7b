"""The cost model of ``decompose="auto"``: predicted seconds of one evaluation of a data term.

:class:`~skmrf._kernels.incomplete.term.IncompleteDataTerm` prices each plan (undecomposed,
sub-networks, row-wise split) by the sum over its batches of :func:`evaluation_cost`, a
linear model in the sizes of the batch (patterns, table entries of its tree, gather indices,
scopes, chunks), and builds the cheapest. Only the ratios between plans matter for the choice.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from ..._utils._budgets import EM_CHUNK_FLOATS as CHUNK_FLOATS

__all__ = [
    "CHUNK_FLOATS",
    "COST_MODEL",
    "SPLIT_MIN_COST",
    "cost_features",
    "FLAT_COST_MODEL",
    "FLAT_MAX_MEMORY_RATIO",
    "evaluation_cost",
    "flat_cost",
    "min_fixed_cost",
    "per_pattern_cost",
    "union_cost",
]


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
#: (non-negative least squares on the relative error of the process times of 2,042 batches
#: of every shape and size met in that benchmark's networks; numpy 2.4, scipy 1.17, one
#: thread): 90 % of the predictions are within 0.91-1.06 times the measured time. Refitted
#: after the data term moved to the maximal cliques' tables, which the old values
#: overpredicted 1.4-2.1 times; the enumerated batch's model (:data:`FLAT_COST_MODEL`),
#: fitted on that code, is compared with this one. Gather indices get no cost of their own
#: (fitted at zero: they move with the table entries).
COST_MODEL = {
    "call": 2.09e-05,
    "node": 2.19e-05,
    "scope": 1.16e-05,
    "evidence": 8.72e-06,
    "entry": 3.06e-08,
    "index": 0.0,
    "pattern_scope": 1.59e-07,
}


#: Cost model of the enumerated batch (:class:`~.batch.FlatGroup`), seconds: per
#: chunk (a sparse product each way, two ``reduceat`` and a few vectorised calls), per gather
#: entry (the two products), per row (a pattern's joint state: exponential, subtraction,
#: product) and per segment (a pattern: its log and weight). Fitted like :data:`COST_MODEL`
#: (non-negative least squares on the relative error) on the process times of 70 enumerated
#: batches of 20 to 2.5e7 gather entries from the plans of that benchmark's networks at 60-95 %
#: observed (numpy 2.4, scipy 1.17, one thread): 80 % of the predictions within 0.95-1.05 times
#: the measured time.
FLAT_COST_MODEL = {
    "call": 1.6e-05,
    "entry": 2.0e-09,
    "row": 1.05e-08,
    "segment": 4.0e-08,
}

#: Enumerating a shape's patterns is considered only while its gather entries and rows are at
#: most this many times the floats of its trees' calibration (tables and gather indices), so
#: that the cheaper plan is never one that takes much more memory.
FLAT_MAX_MEMORY_RATIO = 4.0


def flat_cost(n_gather, n_rows, n_segments, n_chunks=1):
    """Predicted seconds of one evaluation of an enumerated batch (:data:`FLAT_COST_MODEL`)."""
    m = FLAT_COST_MODEL
    return m["call"] * n_chunks + m["entry"] * n_gather + m["row"] * n_rows + m["segment"] * n_segments


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


def union_cost(trees, units, n_patterns):
    """Predicted cost of the undecomposed network from its sub-networks' trees and units.

    Its junction tree is the forest of theirs (the always-observed variables that separate
    them are sliced into the tables), its patterns the distinct rows.
    """
    index_floats = sum(u.index_floats for u in units)
    n_evidence = sum(int(u.observed.sum()) for u in units)
    return evaluation_cost(_Forest(trees), index_floats, n_evidence, n_patterns)


def per_pattern_cost(tree, index_floats):
    """The part of :func:`evaluation_cost` proportional to the number of patterns, per pattern."""
    f = cost_features(tree, index_floats, 0, 1)
    return sum(COST_MODEL[k] * f[k] for k in ("entry", "index", "pattern_scope"))


def min_fixed_cost(key):
    """A lower bound on the fixed cost of one batch of tree shape ``key`` (without building its tree)."""
    return COST_MODEL["call"] + COST_MODEL["node"] + COST_MODEL["scope"] * len(key[1])
