"""One number per edge and per variable, and the coupling matrix drawn as an image."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._utils._docstrings import fill_doc
from ._common import (
    TITLES,
    axes,
    check_kind,
    labels,
    n_features,
    precision_entries,
    precision_pattern,
    source,
    symmetric_limit,
)

__all__ = ["MAX_IMAGE_FEATURES", "coupling_matrix", "edge_couplings", "node_values", "plot_couplings"]

#: Above this many variables :func:`plot_couplings` draws the edges as points instead of an image.
MAX_IMAGE_FEATURES = 500


def _reduce(block, kind):
    block = np.asarray(block).ravel()
    if kind == "norm":
        return float(np.linalg.norm(block))
    return float(block[np.argmax(np.abs(block))])


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
    family, model, _ = source(obj)
    kind = check_kind(kind, family)
    if family == "discrete":
        edges = np.array([c for c in model.cliques if len(c) == 2], dtype=np.int64).reshape(-1, 2)
        values = np.array([_reduce(model.potential(tuple(e)), kind) for e in edges], dtype=np.float64)
        return edges, values
    upper = sp.triu(precision_pattern(model), k=1).tocoo()
    edges = np.column_stack([upper.row, upper.col]).astype(np.int64)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    edges = edges[order]
    values = precision_entries(model.precision_, edges[:, 0], edges[:, 1])
    if kind == "partial_correlation":
        diag = np.asarray(model.precision_.diagonal(), dtype=np.float64)
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
    family, model, _ = source(obj)
    kind = check_kind(kind, family)
    if family == "discrete":
        return np.array([_reduce(model.potential((i,)), kind) for i in range(model.n_variables)])
    return np.asarray(model.precision_.diagonal(), dtype=np.float64)


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
    n = n_features(obj)
    out = np.full((n, n), np.nan)
    out[edges[:, 0], edges[:, 1]] = values
    out[edges[:, 1], edges[:, 0]] = values
    return out


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
    %(plot_example_setup)s
    >>> from skmrf import GaussianLAP
    >>> from skmrf.plotting import plot_couplings
    >>> X = np.random.default_rng(0).normal(size=(100, 4))
    >>> fig, ax = plt.subplots()
    >>> ax = plot_couplings(GaussianLAP("chain").fit(X), ax=ax)
    >>> ax.get_title()
    'partial correlations'
    """
    ax = axes(ax)
    family, _, _ = source(obj)
    kind = check_kind(kind, family)
    n = n_features(obj)
    edges, values = edge_couplings(obj, kind)
    limit = symmetric_limit(values)
    norm = {"vmin": 0.0 if kind == "norm" else -limit, "vmax": limit}
    if n <= MAX_IMAGE_FEATURES:
        artist = ax.imshow(coupling_matrix(obj, kind), cmap=cmap, interpolation="nearest", **norm)
        if n <= 30:
            names = labels(obj)
            ax.set_xticks(range(n), names, rotation=90)
            ax.set_yticks(range(n), names)
    else:
        rows = np.concatenate([edges[:, 0], edges[:, 1]])
        cols = np.concatenate([edges[:, 1], edges[:, 0]])
        artist = ax.scatter(cols, rows, c=np.concatenate([values, values]), s=1, marker="s", cmap=cmap, **norm)
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_aspect("equal")
    if colorbar:
        ax.figure.colorbar(artist, ax=ax)
    ax.set_title(TITLES[kind])
    return ax
