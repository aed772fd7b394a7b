"""Grid-shaped models drawn as images: node fields, or the couplings of one direction."""

from __future__ import annotations

import re

import numpy as np

from .._utils._docstrings import fill_doc
from ._common import axes, check_kind, is_index, n_features, source, symmetric_limit
from ._couplings import edge_couplings, node_values

__all__ = ["cells_of", "plot_grid"]


def _grid_shape(obj, shape):
    """``(rows, cols)`` of a grid-shaped model, or ``None`` when unknown."""
    if shape is not None:
        rows, cols = _check_shape(shape)
        n = n_features(obj)
        if rows * cols != n:
            raise ValueError(f"shape={tuple(shape)} has {rows * cols} cells but the model has {n} variables.")
        return rows, cols
    graph = getattr(obj, "graph", None)
    if isinstance(graph, str):
        match = re.fullmatch(r"grid:(\d+)x(\d+)", graph)
        if match:
            return int(match.group(1)), int(match.group(2))
    return None


def _check_shape(shape):
    """``(rows, cols)`` of a ``shape`` argument: two positive integers, refused by name otherwise."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) != 2:
        raise ValueError(f"shape={shape!r} is not a pair (rows, cols); give two positive integers.")
    if not all(is_index(v) and v > 0 for v in shape):
        raise ValueError(f"shape={tuple(shape)!r} must be two positive integers (rows, cols).")
    return int(shape[0]), int(shape[1])


def cells_of(obj, shape):
    """Row-major cells ``(rows, cols)`` of every variable: the ``shape`` argument, a
    ``"grid:RxC"`` graph, or node labels that are ``(row, col)`` pairs."""
    grid = _grid_shape(obj, shape)
    if grid is not None:
        rows, cols = grid
        return grid, np.divmod(np.arange(rows * cols), cols)
    _, _, names = source(obj)
    if names is not None and all(
        isinstance(v, tuple) and len(v) == 2 and all(is_index(k) and k >= 0 for k in v) for v in names
    ):
        cells = np.array(names, dtype=np.int64)
        return tuple(cells.max(axis=0) + 1), (cells[:, 0], cells[:, 1])
    return None, None


def _direction_image(obj, kind, grid, cells, values):
    """The couplings between each cell and its right (``"horizontal"``) or lower neighbour, NaN
    where there is no edge."""
    rows, cols = grid
    r, c = cells
    dr, dc = (0, 1) if values == "horizontal" else (1, 0)
    image = np.full((rows - dr, cols - dc), np.nan)
    edges, vals = edge_couplings(obj, kind)
    for (i, j), v in zip(edges, vals):
        (ri, ci), (rj, cj) = (r[i], c[i]), (r[j], c[j])
        if (ri, ci) > (rj, cj):
            (ri, ci), (rj, cj) = (rj, cj), (ri, ci)
        if (rj - ri, cj - ci) == (dr, dc):
            image[ri, ci] = v
    return image


# Over 60 lines only by its numpydoc docstring (parameters, errors, a doctest); the code is about 30.
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
    family, _, _ = source(obj)
    kind = check_kind(kind, family)
    grid, cells = cells_of(obj, shape)
    if grid is None:
        raise ValueError(
            "Cannot tell the grid's shape from the graph; give shape=(rows, cols) "
            "(variables in row-major order, as skmrf.grid_graph numbers them)."
        )
    if values == "fields":
        image = np.full(grid, np.nan)
        image[cells] = node_values(obj, kind)
    else:
        image = _direction_image(obj, kind, grid, cells, values)
    ax = axes(ax)
    limit = symmetric_limit(image)
    low = 0.0 if kind == "norm" or (values == "fields" and family == "gaussian") else -limit
    artist = ax.imshow(image, cmap=cmap, vmin=low, vmax=limit, interpolation="nearest")
    ax.set_xticks(range(image.shape[1]) if image.shape[1] <= 30 else [])
    ax.set_yticks(range(image.shape[0]) if image.shape[0] <= 30 else [])
    ax.set_xlabel("column of the grid")
    ax.set_ylabel("row of the grid")
    if colorbar:
        ax.figure.colorbar(artist, ax=ax)
    what = "diagonal precision" if values == "fields" and family == "gaussian" else values
    ax.set_title(f"{what} ({grid[0]} x {grid[1]} grid)")
    return ax
