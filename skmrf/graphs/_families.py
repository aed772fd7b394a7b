"""Builders of common MRF topologies: grids, tori, lattices, Chimera, chains and skip-chains."""

from __future__ import annotations

import networkx as nx
import numpy as np

__all__ = ["chain_graph", "chimera_graph", "grid_graph", "lattice_graph", "skip_chain_graph", "torus_graph"]


def _from_edges(n: int, edges) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    return g


def grid_graph(rows: int, cols: int) -> nx.Graph:
    """A ``rows x cols`` 4-neighbour grid; node ``r * cols + c`` is cell ``(r, c)``.

    Parameters
    ----------
    rows : int
        Number of rows of cells.
    cols : int
        Number of columns of cells.

    Returns
    -------
    networkx.Graph
        The grid with nodes ``0..rows * cols - 1``, each cell joined to the
        cells above, below, left and right of it (no wrap-around).

    See Also
    --------
    lattice_graph : The same for any number of dimensions.
    """
    return lattice_graph((rows, cols))


def torus_graph(rows: int, cols: int) -> nx.Graph:
    """A ``rows x cols`` periodic 4-neighbour lattice; node ``r * cols + c`` is cell ``(r, c)``.

    The grid of :func:`grid_graph` with wrap-around: cell ``(r, c)`` is joined to
    ``((r + 1) % rows, c)`` and ``(r, (c + 1) % cols)``, so every node has exactly four
    neighbours and the graph has ``2 * rows * cols`` edges.

    Parameters
    ----------
    rows : int
        Number of rows of cells, at least 3.
    cols : int
        Number of columns of cells, at least 3.

    Returns
    -------
    networkx.Graph
        The torus with nodes ``0..rows * cols - 1`` in row-major order, like
        :func:`grid_graph`.

    Raises
    ------
    ValueError
        If ``rows`` or ``cols`` is not an integer of at least 3 (with 2 the
        wrap-around edge would repeat the edge inside the grid, and a simple
        graph cannot hold the double coupling).

    See Also
    --------
    grid_graph : The same lattice without wrap-around.
    skmrf.datasets.make_ising_torus : The Ising model on this graph.

    Examples
    --------
    >>> from skmrf.graphs import torus_graph
    >>> g = torus_graph(3, 4)
    >>> g.number_of_nodes(), g.number_of_edges()
    (12, 24)
    >>> sorted(g.neighbors(0))
    [1, 3, 4, 8]
    """
    for name, value in (("rows", rows), ("cols", cols)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)) or value < 3:
            raise ValueError(
                f"torus_graph needs {name} to be an integer of at least 3; got {value!r}. "
                "(With 2 the wrap-around edge repeats an edge of the grid; use grid_graph for an open lattice.)"
            )
    rows, cols = int(rows), int(cols)
    idx = np.arange(rows * cols).reshape(rows, cols)
    right = np.stack([idx, np.roll(idx, -1, axis=1)], axis=-1).reshape(-1, 2)
    down = np.stack([idx, np.roll(idx, -1, axis=0)], axis=-1).reshape(-1, 2)
    edges = np.sort(np.concatenate([right, down]), axis=1)
    return _from_edges(rows * cols, map(tuple, edges[np.lexsort(edges.T[::-1])].tolist()))


def lattice_graph(shape) -> nx.Graph:
    """A hyper-cubic lattice of any dimension with ``2 * d`` neighbours (no wrap).

    Nodes are the C-order (row-major) indices of the cells.

    Parameters
    ----------
    shape : sequence of int
        Number of cells along each of the ``d`` axes.

    Returns
    -------
    networkx.Graph
        The lattice with nodes ``0..prod(shape) - 1``, each cell joined to
        the cells one step away along one axis (no wrap-around).
    """
    shape = tuple(int(s) for s in shape)
    idx = np.arange(int(np.prod(shape))).reshape(shape)
    edges = []
    for axis in range(len(shape)):
        a = np.take(idx, range(shape[axis] - 1), axis=axis).ravel()
        b = np.take(idx, range(1, shape[axis]), axis=axis).ravel()
        edges.extend(zip(a.tolist(), b.tolist()))
    return _from_edges(idx.size, sorted(edges))


def chimera_graph(m: int, n: int | None = None, t: int = 4) -> nx.Graph:
    """The D-Wave Chimera graph ``C(m, n, t)``.

    An ``m x n`` grid of unit cells, each a complete bipartite graph ``K_{t,t}``.
    Node ``((i * n + j) * 2 + u) * t + k`` is the ``k``-th node of side ``u`` of
    cell ``(i, j)``; side-0 nodes couple to the same node of the cells above and
    below, side-1 nodes to the cells left and right (the numbering of
    ``dwave_networkx.chimera_graph``).

    Parameters
    ----------
    m : int
        Number of rows of unit cells.
    n : int, optional
        Number of columns of unit cells; ``m`` if omitted.
    t : int, default=4
        Number of nodes on each side of a unit cell.

    Returns
    -------
    networkx.Graph
        The Chimera graph with ``2 * m * n * t`` nodes.
    """
    n = m if n is None else n

    def lab(i, j, u, k):
        return ((i * n + j) * 2 + u) * t + k

    edges = []
    for i in range(m):
        for j in range(n):
            edges += [(lab(i, j, 0, a), lab(i, j, 1, b)) for a in range(t) for b in range(t)]
            for k in range(t):
                if i + 1 < m:
                    edges.append((lab(i, j, 0, k), lab(i + 1, j, 0, k)))
                if j + 1 < n:
                    edges.append((lab(i, j, 1, k), lab(i, j + 1, 1, k)))
    return _from_edges(2 * m * n * t, edges)


def chain_graph(n: int) -> nx.Graph:
    """A chain: each node ``i`` joined to ``i + 1``.

    Parameters
    ----------
    n : int
        Number of nodes.

    Returns
    -------
    networkx.Graph
        The path with nodes ``0..n-1`` and the ``n - 1`` edges ``(i, i + 1)``.
    """
    return _from_edges(n, [(i, i + 1) for i in range(n - 1)])


def skip_chain_graph(n: int, skips=(2,)) -> nx.Graph:
    """A chain plus an edge ``(i, i + s)`` for every ``s`` in ``skips``.

    Parameters
    ----------
    n : int
        Number of nodes.
    skips : int or sequence of int, default=(2,)
        The skip lengths ``s``; each adds the edges ``(i, i + s)`` for
        ``i = 0..n-s-1``.

    Returns
    -------
    networkx.Graph
        The graph with nodes ``0..n-1``, the chain edges ``(i, i + 1)`` and
        the skip edges.
    """
    if np.ndim(skips) == 0:
        skips = (skips,)
    edges = [(i, i + 1) for i in range(n - 1)]
    edges += [(i, i + s) for s in skips for i in range(n - s)]
    return _from_edges(n, edges)
