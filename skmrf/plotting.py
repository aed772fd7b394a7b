"""Optional matplotlib views of fitted MRFs: graphs, couplings, grids and traces.

Every plotting function takes a fitted estimator (discrete or Gaussian) or a
:class:`~skmrf.model.DiscreteMRF`, draws on ``ax`` (the current Axes when None) and returns
the Axes. matplotlib is imported inside the functions, so ``import skmrf`` does not need it;
install it with ``pip install skmrf[plot]``.

What a coupling is:

- discrete models: the parameter block of edge ``(i, j)`` (one value per pair of non-zero
  states, the package's parametrisation normalised with respect to zero), reduced to one
  number: its entry of largest magnitude, with its sign (``kind="maxabs"``, the coupling itself
  for binary variables), or its Frobenius norm (``kind="norm"``);
- Gaussian models: the partial correlation ``-P_ij / sqrt(P_ii P_jj)`` of the precision matrix
  ``P`` (``kind="partial_correlation"``) or the precision entry ``P_ij`` itself
  (``kind="precision"``). ``precision_`` may be a dense array or a scipy.sparse array.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from .estimators._base import BaseDiscreteMRF
from .estimators.gaussian._base import _BaseGaussianMRF
from .model import DiscreteMRF
from .utils._docstrings import fill_doc

__all__ = [
    "coupling_matrix",
    "edge_couplings",
    "node_values",
    "plot_couplings",
    "plot_graph",
    "plot_grid",
    "plot_trace",
]

DISCRETE_KINDS = ("maxabs", "norm")
GAUSSIAN_KINDS = ("partial_correlation", "precision")
#: Above this many variables :func:`plot_couplings` draws the edges as points instead of an image.
MAX_IMAGE_FEATURES = 500


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError("skmrf.plotting needs matplotlib: pip install 'skmrf[plot]'.") from exc
    return plt


def _axes(ax):
    if ax is None:
        return _pyplot().gca()
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise ValueError(f"ax must be a matplotlib Axes (such as plt.subplots()[1]) or None; got {type(ax).__name__}.")
    return ax


def _source(obj):
    """``("discrete", DiscreteMRF, names)`` or ``("gaussian", estimator, names)`` of ``obj``."""
    if isinstance(obj, DiscreteMRF):
        return "discrete", obj, obj.graph.names
    if isinstance(obj, BaseDiscreteMRF):
        check_is_fitted(obj, "model_")
        return "discrete", obj.model_, getattr(obj, "feature_names_in_", obj.model_.graph.names)
    if isinstance(obj, _BaseGaussianMRF):
        check_is_fitted(obj, "precision_")
        return "gaussian", obj, getattr(obj, "feature_names_in_", None)
    raise ValueError(
        f"Expected a fitted discrete or Gaussian skmrf estimator or a DiscreteMRF; got {type(obj).__name__}. "
        "Pass an MRF estimator after fit (or its model_)."
    )


def _check_kind(kind, family):
    allowed = DISCRETE_KINDS if family == "discrete" else GAUSSIAN_KINDS
    if kind is None:
        return allowed[0]
    if kind not in allowed:
        raise ValueError(f"kind={kind!r} does not apply to a {family} model; use one of {list(allowed)}.")
    return kind


def _reduce(block, kind):
    block = np.asarray(block).ravel()
    if kind == "norm":
        return float(np.linalg.norm(block))
    return float(block[np.argmax(np.abs(block))])


def _precision_entries(P, rows, cols):
    """``P[rows, cols]`` as a flat float array, for a dense or a scipy.sparse ``P``."""
    if sp.issparse(P):
        P = sp.csr_array(P)
    return np.asarray(P[rows, cols], dtype=np.float64).ravel()


@fill_doc
def edge_couplings(obj, kind=None):
    """Return the edges of a fitted MRF and one coupling value per edge.

    Parameters
    ----------
    %(plot_obj)s
    %(plot_kind)s

    Returns
    -------
    edges : ndarray of shape (n_edges, 2)
        Column indices ``(i, j)``, ``i < j``.
    values : ndarray of shape (n_edges,)
        The coupling of each edge.

    Raises
    ------
    ValueError
        If ``obj`` is neither, or ``kind`` does not apply to its kind of model.

    Examples
    --------
    >>> from skmrf.model import DiscreteMRF
    >>> from skmrf.plotting import edge_couplings
    >>> m = DiscreteMRF([(0, 1)], n_states=2, n_variables=2, theta=[0.5, -0.2, 1.0])
    >>> edge_couplings(m)
    (array([[0, 1]]), array([1.]))
    """
    family, source, _ = _source(obj)
    kind = _check_kind(kind, family)
    if family == "discrete":
        edges = np.array([c for c in source.cliques if len(c) == 2], dtype=np.int64).reshape(-1, 2)
        values = np.array([_reduce(source.potential(tuple(e)), kind) for e in edges], dtype=np.float64)
        return edges, values
    upper = sp.triu(sp.coo_array(source.adjacency_), k=1).tocoo()
    edges = np.column_stack([upper.row, upper.col]).astype(np.int64)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    edges = edges[order]
    values = _precision_entries(source.precision_, edges[:, 0], edges[:, 1])
    if kind == "partial_correlation":
        diag = np.asarray(source.precision_.diagonal(), dtype=np.float64)
        values = -values / np.sqrt(diag[edges[:, 0]] * diag[edges[:, 1]])
    return edges, values


@fill_doc
def node_values(obj, kind=None):
    """Return one value per variable: the node parameters, reduced as edges are.

    Discrete models give the field block ``potential((i,))`` reduced by ``kind``; Gaussian
    models give the diagonal of the precision (the conditional precision of each variable
    given the others), whatever ``kind``.

    Parameters
    ----------
    %(plot_obj)s
    %(plot_kind)s

    Returns
    -------
    ndarray of shape (n_features,)
        The value of each variable, in column order.

    Examples
    --------
    >>> from skmrf.model import DiscreteMRF
    >>> from skmrf.plotting import node_values
    >>> m = DiscreteMRF([(0, 1)], n_states=2, n_variables=2, theta=[0.5, -0.2, 1.0])
    >>> node_values(m)
    array([ 0.5, -0.2])
    """
    family, source, _ = _source(obj)
    kind = _check_kind(kind, family)
    if family == "discrete":
        return np.array([_reduce(source.potential((i,)), kind) for i in range(source.n_variables)])
    return np.asarray(source.precision_.diagonal(), dtype=np.float64)


@fill_doc
def coupling_matrix(obj, kind=None):
    """Return the couplings as a symmetric square array, NaN off the graph.

    Parameters
    ----------
    %(plot_obj)s
    %(plot_kind)s

    Returns
    -------
    ndarray of shape (n_features, n_features)
        Entry ``(i, j)`` is the coupling of edge ``{i, j}``; pairs that are not edges and the
        diagonal are NaN (so an image leaves them blank and a zero coupling stays visible).

    Examples
    --------
    >>> from skmrf.model import DiscreteMRF
    >>> from skmrf.plotting import coupling_matrix
    >>> m = DiscreteMRF([(0, 1)], n_states=2, n_variables=2, theta=[0.5, -0.2, 1.0])
    >>> coupling_matrix(m)
    array([[nan,  1.],
           [ 1., nan]])
    """
    edges, values = edge_couplings(obj, kind)
    n = _n_features(obj)
    out = np.full((n, n), np.nan)
    out[edges[:, 0], edges[:, 1]] = values
    out[edges[:, 1], edges[:, 0]] = values
    return out


def _n_features(obj):
    family, source, _ = _source(obj)
    return source.n_variables if family == "discrete" else source.precision_.shape[0]


def _labels(obj):
    _, _, names = _source(obj)
    return [str(i) for i in range(_n_features(obj))] if names is None else [str(v) for v in names]


def _symmetric_limit(values):
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


@fill_doc
def plot_couplings(obj, kind=None, ax=None, cmap="RdBu_r", colorbar=True):
    """Draw the coupling matrix as an image, coloured symmetrically about zero.

    Parameters
    ----------
    %(plot_obj)s
    %(plot_kind)s
    %(plot_ax)s
    %(plot_cmap)s

    %(plot_returns)s

    Notes
    -----
    Pairs that are not edges are left blank. Above ``MAX_IMAGE_FEATURES`` variables the
    edges are drawn as points (both triangles) instead of a dense image, so a large sparse
    precision is never made dense.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from skmrf import GaussianLAP
    >>> from skmrf.plotting import plot_couplings
    >>> X = np.random.default_rng(0).normal(size=(100, 4))
    >>> fig, ax = plt.subplots()
    >>> ax = plot_couplings(GaussianLAP("chain").fit(X), ax=ax)
    >>> ax.get_title()
    'partial correlations'
    """
    ax = _axes(ax)
    family, _, _ = _source(obj)
    kind = _check_kind(kind, family)
    n = _n_features(obj)
    edges, values = edge_couplings(obj, kind)
    limit = _symmetric_limit(values)
    norm = {"vmin": 0.0 if kind == "norm" else -limit, "vmax": limit}
    if n <= MAX_IMAGE_FEATURES:
        artist = ax.imshow(coupling_matrix(obj, kind), cmap=cmap, interpolation="nearest", **norm)
        if n <= 30:
            labels = _labels(obj)
            ax.set_xticks(range(n), labels, rotation=90)
            ax.set_yticks(range(n), labels)
    else:
        rows = np.concatenate([edges[:, 0], edges[:, 1]])
        cols = np.concatenate([edges[:, 1], edges[:, 0]])
        artist = ax.scatter(cols, rows, c=np.concatenate([values, values]), s=1, marker="s", cmap=cmap, **norm)
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_aspect("equal")
    if colorbar:
        ax.figure.colorbar(artist, ax=ax)
    ax.set_title(_TITLES[kind])
    return ax


_TITLES = {
    "maxabs": "couplings (largest entry)",
    "norm": "coupling norms",
    "partial_correlation": "partial correlations",
    "precision": "precision entries",
}


def _grid_shape(obj, shape):
    """``(rows, cols)`` of a grid-shaped model, or ``None`` when unknown."""
    if shape is not None:
        rows, cols = _check_shape(shape)
        n = _n_features(obj)
        if rows * cols != n:
            raise ValueError(f"shape={tuple(shape)} has {rows * cols} cells but the model has {n} variables.")
        return rows, cols
    graph = getattr(obj, "graph", None)
    if isinstance(graph, str):
        match = re.fullmatch(r"grid:(\d+)x(\d+)", graph)
        if match:
            return int(match.group(1)), int(match.group(2))
    return None


def _is_index(value):
    """Whether ``value`` is an integer (Python or NumPy), not a bool or a float."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_shape(shape):
    """``(rows, cols)`` of a ``shape`` argument: two positive integers, refused by name otherwise."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) != 2:
        raise ValueError(f"shape={shape!r} is not a pair (rows, cols); give two positive integers.")
    if not all(_is_index(v) and v > 0 for v in shape):
        raise ValueError(f"shape={tuple(shape)!r} must be two positive integers (rows, cols).")
    return int(shape[0]), int(shape[1])


def _cell_of(obj, shape):
    """Row-major cells ``(rows, cols)`` of every variable: the ``shape`` argument, a
    ``"grid:RxC"`` graph, or node labels that are ``(row, col)`` pairs."""
    grid = _grid_shape(obj, shape)
    if grid is not None:
        rows, cols = grid
        return grid, np.divmod(np.arange(rows * cols), cols)
    _, _, names = _source(obj)
    if names is not None and all(
        isinstance(v, tuple) and len(v) == 2 and all(_is_index(k) and k >= 0 for k in v) for v in names
    ):
        cells = np.array(names, dtype=np.int64)
        return tuple(cells.max(axis=0) + 1), (cells[:, 0], cells[:, 1])
    return None, None


@fill_doc
def plot_grid(obj, values="fields", shape=None, kind=None, ax=None, cmap="RdBu_r", colorbar=True):
    """Draw grid-shaped parameters as an image: node fields or one direction of couplings.

    Parameters
    ----------
    obj : fitted estimator or DiscreteMRF
        A model whose variables are the cells of a grid.
    values : {"fields", "horizontal", "vertical"}, default="fields"
        ``"fields"``: one pixel per cell (discrete: the node parameters reduced by ``kind``;
        Gaussian: the diagonal of the precision). ``"horizontal"``: the coupling between each
        cell and its right neighbour, an image of shape ``(rows, cols - 1)``. ``"vertical"``:
        the coupling with the cell below, ``(rows - 1, cols)``. Missing edges are blank.
    shape : tuple of (int, int), default=None
        ``(rows, cols)``, two positive integers whose product is the number of variables,
        with variables in row-major order (as :func:`skmrf.grid_graph`).
        None: read from a ``"grid:RxC"`` graph, or from node labels that are ``(row, col)``
        pairs (``networkx.grid_2d_graph``).
    %(plot_kind)s
    %(plot_ax)s
    %(plot_cmap)s

    %(plot_returns)s

    Raises
    ------
    ValueError
        If the grid's shape cannot be found (give ``shape``), ``shape`` is not two positive
        integers, or it does not match the model.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from skmrf import PseudoLikelihoodEstimator, grid_graph
    >>> from skmrf.datasets import sample_random_mrf
    >>> from skmrf.plotting import plot_grid
    >>> X, _ = sample_random_mrf(grid_graph(3, 4), 200, random_state=0)
    >>> est = PseudoLikelihoodEstimator("grid:3x4").fit(X)
    >>> fig, ax = plt.subplots()
    >>> plot_grid(est, "horizontal", ax=ax).images[0].get_array().shape
    (3, 3)
    """
    if values not in ("fields", "horizontal", "vertical"):
        raise ValueError(f"values={values!r}; use 'fields', 'horizontal' or 'vertical'.")
    family, _, _ = _source(obj)
    kind = _check_kind(kind, family)
    grid, cells = _cell_of(obj, shape)
    if grid is None:
        raise ValueError(
            "Cannot tell the grid's shape from the graph; give shape=(rows, cols) "
            "(variables in row-major order, as skmrf.grid_graph numbers them)."
        )
    rows, cols = grid
    r, c = cells
    if values == "fields":
        image = np.full(grid, np.nan)
        image[r, c] = node_values(obj, kind)
    else:
        dr, dc = (0, 1) if values == "horizontal" else (1, 0)
        image = np.full((rows - dr, cols - dc), np.nan)
        edges, vals = edge_couplings(obj, kind)
        for (i, j), v in zip(edges, vals):
            (ri, ci), (rj, cj) = (r[i], c[i]), (r[j], c[j])
            if (ri, ci) > (rj, cj):
                (ri, ci), (rj, cj) = (rj, cj), (ri, ci)
            if (rj - ri, cj - ci) == (dr, dc):
                image[ri, ci] = v
    ax = _axes(ax)
    limit = _symmetric_limit(image)
    low = 0.0 if kind == "norm" or (values == "fields" and family == "gaussian") else -limit
    artist = ax.imshow(image, cmap=cmap, vmin=low, vmax=limit, interpolation="nearest")
    ax.set_xticks(range(image.shape[1]) if image.shape[1] <= 30 else [])
    ax.set_yticks(range(image.shape[0]) if image.shape[0] <= 30 else [])
    ax.set_xlabel("column of the grid")
    ax.set_ylabel("row of the grid")
    if colorbar:
        ax.figure.colorbar(artist, ax=ax)
    what = "diagonal precision" if values == "fields" and family == "gaussian" else values
    ax.set_title(f"{what} ({rows} x {cols} grid)")
    return ax


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
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from skmrf import ExactMaxLikelihood
    >>> from skmrf.plotting import plot_graph
    >>> X = np.random.default_rng(0).integers(0, 2, size=(200, 4))
    >>> fig, ax = plt.subplots()
    >>> ax = plot_graph(ExactMaxLikelihood("chain").fit(X), ax=ax)
    >>> len(ax.collections[0].get_segments())  # LineCollection of the 3 chain edges
    3
    """
    import networkx as nx
    from matplotlib.collections import LineCollection

    plt = _pyplot()
    ax = _axes(ax)
    family, _, _ = _source(obj)
    kind = _check_kind(kind, family)
    edges, values = edge_couplings(obj, kind)
    n = _n_features(obj)
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(map(tuple, edges))
    if pos is None:
        grid, cells = _cell_of(obj, None)
        if grid is not None:
            pos = {i: (float(cells[1][i]), -float(cells[0][i])) for i in range(n)}
        else:
            pos = nx.spring_layout(graph, seed=0)
    else:
        pos = _positions(obj, pos, n)
    limit = _symmetric_limit(values)
    low = 0.0 if kind == "norm" else -limit
    lines = LineCollection(
        [(pos[i], pos[j]) for i, j in edges],
        cmap=cmap,
        norm=plt.Normalize(low, limit),
        linewidths=0.5 + 3.0 * np.abs(values) / limit,
        zorder=1,
    )
    lines.set_array(values)
    ax.add_collection(lines)
    nx.draw_networkx_nodes(graph, pos, node_color="white", edgecolors="black", node_size=300, ax=ax)
    if with_labels:
        nx.draw_networkx_labels(graph, pos, labels=dict(enumerate(_labels(obj))), font_size=8, ax=ax)
    if colorbar:
        ax.figure.colorbar(lines, ax=ax)
    ax.set_title(_TITLES[kind])
    ax.set_axis_off()
    return ax


def _positions(obj, pos, n):
    """``pos`` as ``{column index: (x, y)}``, keyed in ``pos`` by node name or by column index.

    Names win when the model has them and ``pos`` holds any of them (so integer names that
    are not ``0..n-1`` in order are read as names, as the estimators read them); every node
    needs a pair of finite numbers.
    """
    if not isinstance(pos, Mapping):
        raise ValueError(f"pos must be a dict {{node: (x, y)}}; got {type(pos).__name__}.")
    _, _, names = _source(obj)
    names = None if names is None else list(names)
    by_name = names is not None and names != list(range(n)) and any(_in(v, pos) for v in names)
    keys = names if by_name else list(range(n))
    missing = [k for k in keys if not _in(k, pos)]
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


def _in(key, mapping):
    try:
        return key in mapping
    except TypeError:  # an unhashable name
        return False


def _trace_keys(name, keys):
    """``keys`` as a list, refusing a lone string or number and an empty list."""
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Iterable):
        raise ValueError(f"keys={keys!r} is not a list; give a list such as [{keys!r}].")
    keys = list(keys)
    if not keys:
        raise ValueError(f"keys=[] selects nothing to draw from {name}; give at least one key or None.")
    return keys


@fill_doc
def plot_trace(estimator, keys=None, ax=None):
    """Draw the convergence trace an estimator recorded during ``fit``.

    What is drawn depends on what the estimator keeps:

    - :class:`~skmrf.MCMCMaxLikelihood`: ``trace_`` (the values its ``verbose`` lines print),
      one line per key against the step, log scale (default keys: all but ``"time"``);
    - :class:`~skmrf.DecomposedEM`: ``log_likelihood_trace_``, the mean log-likelihood per row
      at the start and after every iteration;
    - :class:`~skmrf.MetropolisHastingsMRF`: the kept posterior draws ``samples_`` of the
      parameters ``keys`` (indices into ``edges_``; default the first five), one line per chain.

    Parameters
    ----------
    estimator : fitted estimator
        One of the three above.
    keys : list, default=None
        Which series to draw, a non-empty list: trace names for MCMCMaxLikelihood,
        integer parameter indices for MetropolisHastingsMRF (a float such as 1.0 is
        refused, not truncated); ignored for DecomposedEM.
    %(plot_ax)s

    %(plot_returns)s

    Raises
    ------
    ValueError
        If the estimator keeps no trace (the other estimators record only ``n_iter_``; their
        ``verbose`` lines are printed, not kept), ``keys`` is not a non-empty list, or a
        key is not in the trace (a name it lacks, an index that is not an integer or out
        of range).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from skmrf import DecomposedEM
    >>> from skmrf.plotting import plot_trace
    >>> X = np.random.default_rng(0).integers(0, 2, size=(100, 3)).astype(float)
    >>> X[::4, 1] = np.nan
    >>> fig, ax = plt.subplots()
    >>> ax = plot_trace(DecomposedEM("chain").fit(X), ax=ax)
    >>> ax.get_ylabel()
    'mean log-likelihood per row'
    """
    name = type(estimator).__name__
    if hasattr(estimator, "trace_"):
        trace = estimator.trace_
        keys = [k for k in trace if k != "time"] if keys is None else _trace_keys(name, keys)
        unknown = [k for k in keys if not _in(k, trace)]
        if unknown:
            raise ValueError(f"{name}.trace_ has no {unknown}; its keys are {list(trace)}.")
        ax = _axes(ax)
        for key in keys:
            ax.plot(np.arange(1, len(trace[key]) + 1), trace[key], label=key)
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.legend()
    elif hasattr(estimator, "log_likelihood_trace_"):
        ax = _axes(ax)
        ax.plot(np.arange(len(estimator.log_likelihood_trace_)), estimator.log_likelihood_trace_, marker=".")
        ax.set_xlabel("iteration")
        ax.set_ylabel("mean log-likelihood per row")
    elif hasattr(estimator, "samples_"):
        edges = estimator.edges_
        keys = list(range(min(5, len(edges)))) if keys is None else _trace_keys(name, keys)
        not_int = [k for k in keys if not _is_index(k)]
        if not_int:
            raise ValueError(
                f"keys {not_int} are not integers; {name} keys are parameter indices 0..{len(edges) - 1} "
                "(one per row of edges_)."
            )
        bad = [int(k) for k in keys if not 0 <= k < len(edges)]
        if bad:
            raise ValueError(f"Parameter indices {bad} are not in 0..{len(edges) - 1} (one per row of edges_).")
        n_chains = len(estimator.chain_acceptance_rate_)  # fitted: the n_chains parameter may have changed since
        draws = estimator.samples_.reshape(n_chains, -1, len(edges))
        ax = _axes(ax)
        colours = _pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
        for n, k in enumerate(keys):
            for chain in range(draws.shape[0]):
                label = f"edge ({edges[k][0]}, {edges[k][1]})" if chain == 0 else None
                ax.plot(draws[chain, :, k], color=colours[n % len(colours)], alpha=0.7, label=label)
        ax.set_xlabel("kept draw")
        ax.set_ylabel("agreement parameter")
        ax.legend()
    else:
        check_is_fitted(estimator)
        raise ValueError(
            f"{name} keeps no convergence trace (it records n_iter_ only; verbose=1 prints its "
            "iterations). plot_trace draws MCMCMaxLikelihood.trace_, DecomposedEM.log_likelihood_trace_ "
            "and MetropolisHastingsMRF.samples_."
        )
    ax.set_title(f"{name} trace")
    return ax
