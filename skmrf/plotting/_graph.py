"""The graph drawn with its edges coloured and widened by their couplings."""

from __future__ import annotations

from collections.abc import Mapping

import networkx as nx
import numpy as np

from .._utils._docstrings import fill_doc
from ._common import TITLES, axes, check_kind, contains, labels, n_features, pyplot, source, symmetric_limit
from ._couplings import edge_couplings
from ._grid import cells_of

__all__ = ["plot_graph"]


# Over 60 lines only by its numpydoc docstring (parameters, errors, a doctest); the code is about 30.
@fill_doc
def plot_graph(obj, kind=None, pos=None, ax=None, cmap="RdBu_r", colorbar=True, with_labels=True):
    """Draw the graph with edges coloured (and widened) by their learned coupling.

    Parameters
    ----------
    %(plot_obj)s
    %(plot_kind)s
    pos : dict, default=None
        Node positions ``{column index: (x, y)}``, or ``{node name: (x, y)}`` for a model
        whose columns have names (a DataFrame's labels, a networkx graph's nodes): names are
        used when ``pos`` holds any of them, so integer names are read as names. Every node
        needs a position. None: the cells of a grid (see :func:`plot_grid`), else
        ``networkx.spring_layout`` seeded with 0.
    %(plot_ax)s
    %(plot_cmap)s
    with_labels : bool, default=True
        Label the nodes with the column names (or indices).

    %(plot_returns)s

    Raises
    ------
    ValueError
        If ``pos`` misses a node (naming the missing ones) or a position is not two finite
        numbers, or ``kind`` does not apply to the model.

    Examples
    --------
    %(plot_example_setup)s
    >>> from skmrf import ExactMaxLikelihood
    >>> from skmrf.plotting import plot_graph
    >>> X = np.random.default_rng(0).integers(0, 2, size=(200, 4))
    >>> fig, ax = plt.subplots()
    >>> ax = plot_graph(ExactMaxLikelihood("chain").fit(X), ax=ax)
    >>> len(ax.collections[0].get_segments())  # LineCollection of the 3 chain edges
    3
    """
    from matplotlib.collections import LineCollection

    ax = axes(ax)
    family, _, _ = source(obj)
    kind = check_kind(kind, family)
    edges, values = edge_couplings(obj, kind)
    n = n_features(obj)
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(map(tuple, edges))
    pos = _layout(obj, graph, n) if pos is None else _positions(obj, pos, n)
    limit = symmetric_limit(values)
    lines = LineCollection(
        [(pos[i], pos[j]) for i, j in edges],
        cmap=cmap,
        norm=pyplot().Normalize(0.0 if kind == "norm" else -limit, limit),
        linewidths=0.5 + 3.0 * np.abs(values) / limit,
        zorder=1,
    )
    lines.set_array(values)
    ax.add_collection(lines)
    nx.draw_networkx_nodes(graph, pos, node_color="white", edgecolors="black", node_size=300, ax=ax)
    if with_labels:
        nx.draw_networkx_labels(graph, pos, labels=dict(enumerate(labels(obj))), font_size=8, ax=ax)
    if colorbar:
        ax.figure.colorbar(lines, ax=ax)
    ax.set_title(TITLES[kind])
    ax.set_axis_off()
    return ax


def _layout(obj, graph, n):
    """Node positions when none are given: the cells of a grid, else a spring layout seeded with 0."""
    grid, cells = cells_of(obj, None)
    if grid is not None:
        return {i: (float(cells[1][i]), -float(cells[0][i])) for i in range(n)}
    return nx.spring_layout(graph, seed=0)


def _positions(obj, pos, n):
    """``pos`` as ``{column index: (x, y)}``, keyed in ``pos`` by node name or by column index.

    Names win when the model has them and ``pos`` holds any of them (so integer names that
    are not ``0..n-1`` in order are read as names, as the estimators read them); every node
    needs a pair of finite numbers.
    """
    if not isinstance(pos, Mapping):
        raise ValueError(f"pos must be a dict {{node: (x, y)}}; got {type(pos).__name__}.")
    _, _, names = source(obj)
    names = None if names is None else list(names)
    by_name = names is not None and names != list(range(n)) and any(contains(pos, v) for v in names)
    keys = names if by_name else list(range(n))
    missing = [k for k in keys if not contains(pos, k)]
    if missing:
        what = "node names" if by_name else "column indices"
        shown = ", ".join(map(repr, missing[:10])) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise ValueError(
            f"pos has no position for the {what} {shown} (of {n} nodes); give (x, y) for every node, "
            f"keyed by column index 0..{n - 1}" + (" or by node name." if names is not None else ".")
        )
    out = {}
    for i, key in enumerate(keys):
        try:
            xy = np.asarray(pos[key], dtype=np.float64)
        except (TypeError, ValueError):
            xy = None
        if xy is None or xy.shape != (2,) or not np.isfinite(xy).all():
            raise ValueError(f"pos[{key!r}] = {pos[key]!r}; give two finite numbers (x, y).")
        out[i] = (float(xy[0]), float(xy[1]))
    return out
