"""When the maximum-likelihood estimate does not exist: empty cells of the data's clique tables."""

from __future__ import annotations

import numpy as np

from .._solvers.box import THETA_BOUND
from .._utils._warnings import warn
from ..exceptions import NoFiniteEstimateWarning

__all__ = [
    "NoFiniteEstimateWarning",
    "empty_cell_cliques",
    "table_counts",
    "warn_if_unbounded",
    "warn_no_finite_estimate",
]


def _table_counts_chunk(chunk, weight, layout):
    return layout.table_counts(chunk, weight)


def table_counts(layout, rows):
    """``layout.table_counts`` of :class:`~skmrf._data.Rows`, summed over the row chunks of a memmap
    or a dask array: int64 counts, identical to the in-memory ones; with weights, float64 sums of them."""
    return rows.reduce(_table_counts_chunk, layout)


def empty_cell_cliques(model, counts):
    """The cliques of ``model`` whose empirical table (``counts``, flat) has an empty cell."""
    lay = model.layout
    empty = np.add.reduceat(counts == 0, lay.table_offsets[:-1]) > 0
    return [model.cliques[b] for b in np.flatnonzero(empty)]


def warn_no_finite_estimate(name, cliques, outcome, graph=None):
    """Warn that ``name``'s objective has no finite optimum because of ``cliques``' empty cells.

    ``outcome`` says what the estimator returns instead;
    with the model's ``graph`` the cliques are named by the data's column names.
    """
    if graph is not None:
        cliques = [graph.clique_names(c) for c in cliques]
    listed = f"{cliques[:10]}{'...' if len(cliques) > 10 else ''}"
    warn(
        f"The maximum-likelihood estimate does not exist: for cliques {listed} some state "
        f"(combination) never occurs in the data (e.g. a constant column), so with alpha=0 the "
        f"objective of {name} has no finite optimum. {outcome} Set alpha > 0 for a finite "
        "regularised estimate.",
        NoFiniteEstimateWarning,
    )


def warn_if_unbounded(estimator, rows):
    """For estimators without an extended estimate (LAP, PL): warn when ``X`` leaves cliques empty.

    Their parameters then diverge and stop at the box ``|theta| <= THETA_BOUND``. Called from
    ``fit`` with ``alpha=0``; costs one count of the clique tables of :class:`~skmrf._data.Rows`
    ``rows`` (by row chunks for a memmap or a dask array).
    """
    model = estimator.model_
    empty = empty_cell_cliques(model, table_counts(model.layout, rows))
    if empty:
        warn_no_finite_estimate(
            type(estimator).__name__,
            empty,
            f"Their parameters diverge and are returned where the fit stopped, within +-{THETA_BOUND:g}.",
            graph=model.graph,
        )
