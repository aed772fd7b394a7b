"""Graph input normalisation: every graph form the estimators accept, resolved into
:class:`MRFGraph` (and sparse adjacency patterns for the Gaussian family), and :func:`subgraph`."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ._families import grid_graph

__all__ = ["MRFGraph", "resolve_adjacency", "resolve_graph", "subgraph"]


@dataclass(frozen=True)
class MRFGraph:
    """Resolved structure of a Markov random field.

    Parameters
    ----------
    n_variables : int
        Number of variables (columns of ``X``).
    factors : tuple of tuple of int
        The maximal factors, each a sorted tuple of variable indices. A factor
        is kept only if it is not contained in another factor.
    names : tuple, optional
        The label of each variable (node label or column name), for messages.

    Attributes
    ----------
    cliques : tuple of tuple of int
        Downward closure of ``factors`` plus every singleton: the potential
        blocks of the model, ordered by size and then lexicographically.
    neighbours : tuple of frozenset
        ``neighbours[i]`` are the variables sharing a factor with ``i``.
    """

    n_variables: int
    factors: tuple
    names: tuple = None
    cliques: tuple = field(init=False, repr=False)
    neighbours: tuple = field(init=False, repr=False)

    def __post_init__(self):
        closure = {(i,) for i in range(self.n_variables)}
        nbrs = [set() for _ in range(self.n_variables)]
        for f in self.factors:
            for size in range(2, len(f) + 1):
                closure.update(itertools.combinations(f, size))
            for i in f:
                nbrs[i].update(f)
        for i, s in enumerate(nbrs):
            s.discard(i)
        object.__setattr__(self, "cliques", tuple(sorted(closure, key=lambda c: (len(c), c))))
        object.__setattr__(self, "neighbours", tuple(frozenset(s) for s in nbrs))

    @property
    def edges(self) -> list:
        """Pairs ``(i, j)``, ``i < j``, of variables that share a factor."""
        return [c for c in self.cliques if len(c) == 2]

    @property
    def max_degree(self) -> int:
        return max((len(s) for s in self.neighbours), default=0)

    def name(self, i: int):
        """The user's label of variable ``i`` (its column index if none)."""
        return i if self.names is None else self.names[i]

    def clique_names(self, clique) -> tuple:
        """The user's labels of the variables of ``clique`` (its indices if the data had no names)."""
        return tuple(self.name(v) for v in clique)

    def one_neighbourhood(self, clique) -> tuple:
        """The 1-neighbourhood ``A_q``: ``q`` and every variable adjacent to ``q``.

        This is the union of all cliques meeting ``q`` (LAP paper, Section 3).
        """
        out = set(clique)
        for i in clique:
            out |= self.neighbours[i]
        return tuple(sorted(out))

    def to_networkx(self) -> nx.Graph:
        """The variable adjacency graph (nodes ``0..n-1``)."""
        g = nx.Graph()
        g.add_nodes_from(range(self.n_variables))
        g.add_edges_from(self.edges)
        return g


def _maximal(factors) -> tuple:
    """Sorted, de-duplicated factors with those contained in another removed.

    Only factors sharing the first variable are compared: ``O(F * degree)``.
    """
    uniq = {tuple(sorted(f)) for f in factors}
    by_var = {}
    for f in uniq:
        for v in f:
            by_var.setdefault(v, []).append(f)
    kept = [f for f in uniq if not f or not any(len(g) > len(f) and set(f).issubset(g) for g in by_var[f[0]])]
    return tuple(sorted(kept, key=lambda c: (len(c), c)))


def _index_factors(factors, n_variables, names):
    """Map factors given by labels (or indices) to sorted tuples of indices."""
    lookup = None if names is None else {name: i for i, name in enumerate(names)}
    out = []
    for k, f in enumerate(factors):
        if np.ndim(f) == 0 or isinstance(f, str):
            f = (f,)
        if len(f) == 0:
            raise ValueError(
                f"Clique {k} of the graph is empty; every clique needs at least one variable "
                "(node potentials are implicit, so leave the clique out)."
            )
        idx = []
        for v in f:
            if lookup is not None and v in lookup:
                idx.append(lookup[v])
            elif (
                not _by_label(names)  # positions: no names, or string names an integer cannot be
                and isinstance(v, (int, np.integer))
                and not isinstance(v, (bool, np.bool_))
                and 0 <= v < n_variables
            ):
                idx.append(int(v))
            else:
                raise ValueError(
                    f"The graph names variable {v!r} in clique {tuple(f)!r}, but X has "
                    f"{n_variables} columns"
                    + (
                        f" named {list(names)[:10]}{'...' if n_variables > 10 else ''}."
                        if lookup is not None
                        else " (indices 0 to %d)." % (n_variables - 1)
                    )
                    + (
                        " The columns of a DataFrame are matched by label; pass X.to_numpy() to number "
                        "them by position."
                        if _by_label(names)
                        else f" Name the variables by position (0 to {n_variables - 1})"
                        + (" or by column name." if lookup is not None else ".")
                    )
                )
        if len(set(idx)) != len(idx):
            k = next(i for i, v in enumerate(idx) if idx.index(v) != i)
            raise ValueError(
                f"Clique {tuple(f)!r} repeats a variable: {f[k]!r} appears twice; a clique lists distinct variables "
                "(node potentials are implicit, so leave self-loops out)."
            )
        out.append(tuple(sorted(idx)))
    return out


def _by_label(names) -> bool:
    """Whether columns named ``names`` are DataFrame labels other than strings (integers that are
    not ``0..n-1``, dates, ...): the graph then names them by label only, never by position."""
    return names is not None and not all(isinstance(v, str) for v in names)


def _from_string(spec: str, n_features: int) -> list:
    if spec == "chain":
        return [(i, i + 1) for i in range(n_features - 1)]
    if spec == "complete":
        return list(itertools.combinations(range(n_features), 2))
    m = re.fullmatch(r"grid:(\d+)x(\d+)", spec)
    if m:
        rows, cols = int(m.group(1)), int(m.group(2))
        if rows * cols != n_features:
            raise ValueError(
                f"graph={spec!r} has {rows * cols} variables but X has {n_features} "
                f"columns; use 'grid:RxC' with R*C == {n_features}."
            )
        return list(grid_graph(rows, cols).edges)
    raise ValueError(f"Unknown graph shorthand {spec!r}; expected 'chain', 'complete' or 'grid:RxC'.")


def _networkx_column_order(graph, n_features, names=None) -> list:
    """The nodes of a networkx graph in column order, after checking the graph against X.

    Nodes map to columns by name when any node is one of ``names`` (the
    DataFrame's columns), else in ``list(graph.nodes)`` order. Raises a
    ``ValueError`` for a directed or multi-graph, a self-loop, a node count
    that differs from ``n_features``, or, when matching by name, nodes that
    are not columns (naming them, and the columns without a node).
    """
    if graph.is_directed() or graph.is_multigraph():
        raise ValueError(
            f"graph must be an undirected simple networkx.Graph; got a {type(graph).__name__}. "
            "Convert it with G.to_undirected() (and nx.Graph(G) for a multigraph)."
        )
    loop = next(iter(nx.selfloop_edges(graph)), None)
    if loop is not None:
        raise ValueError(f"The graph has a self-loop at node {loop[0]!r}; remove it (node potentials are implicit).")
    nodes = list(graph.nodes)
    if names is not None:
        columns = set(names)
        named = [v for v in nodes if v in columns]
        if named:  # matched by name: every node must be a column and every column a node
            strangers = [v for v in nodes if v not in columns]
            missing = [c for c in names if c not in graph]
            if strangers:
                raise ValueError(
                    f"Graph nodes are matched to the DataFrame's columns by name, but nodes "
                    f"{strangers[:10]}{'...' if len(strangers) > 10 else ''} are not columns of X"
                    + (
                        f", and columns {missing[:10]}{'...' if len(missing) > 10 else ''} have no node"
                        if missing
                        else ""
                    )
                    + ". Rename the nodes (nx.relabel_nodes) to the column names."
                )
            if missing:
                raise ValueError(
                    f"The graph has {len(nodes)} nodes but X has {n_features} columns; "
                    f"columns without a node: {missing[:10]}. Add them as isolated nodes."
                )
            return list(names)
        if _by_label(names):
            raise ValueError(
                f"Graph nodes are matched to the DataFrame's columns by label, but no node is a column "
                f"label: nodes {nodes[:10]}{'...' if len(nodes) > 10 else ''}, labels "
                f"{list(names)[:10]}{'...' if n_features > 10 else ''}. Rename the nodes "
                "(nx.relabel_nodes) to the column labels, or pass X.to_numpy() to map nodes to columns "
                "in list(G.nodes) order."
            )
    if len(nodes) != n_features:
        raise ValueError(
            f"The networkx graph has {len(nodes)} nodes but X has {n_features} "
            "columns; nodes are mapped to columns in list(G.nodes) order, so "
            "the counts must agree (add isolated nodes for unconnected columns)."
        )
    return nodes


def _is_matrix(graph) -> bool:
    """Whether ``graph`` is read as an adjacency matrix (sparse, or a 2-D numeric ndarray)."""
    return sp.issparse(graph) or (isinstance(graph, np.ndarray) and graph.ndim == 2 and graph.dtype != object)


def _matrix_entries(graph, n_features, equal_values=True):
    """The off-diagonal non-zeros ``(rows, cols)`` of an adjacency matrix, after checking it.

    Both directions of every edge are returned (int64). The matrix must be
    ``n_features x n_features`` and structurally symmetric; with
    ``equal_values`` its off-diagonal values must also equal their mirror
    entries. The diagonal is ignored.
    """
    p = int(n_features)
    a = sp.coo_array(graph)
    if a.shape != (p, p):
        raise ValueError(
            f"The adjacency matrix has shape {a.shape} but X has {p} columns; expected ({p}, {p}). "
            "(A 2-D array is read as an adjacency matrix; pass an edge list as a list of tuples.)"
        )
    a.sum_duplicates()
    keep = (a.data != 0) & (a.row != a.col)
    r, c = a.row[keep].astype(np.int64), a.col[keep].astype(np.int64)
    fwd = np.sort(r * p + c)
    bwd = np.sort(c * p + r)
    if not np.array_equal(fwd, bwd):
        k = int(np.flatnonzero(fwd != bwd)[0])
        key = min(fwd[k], bwd[k])  # present in one direction only
        i, j = divmod(int(key), p)
        if fwd[k] > bwd[k]:  # (j, i) is non-zero, (i, j) is zero
            i, j = j, i
        raise ValueError(
            f"The adjacency matrix is not symmetric: entry ({i}, {j}) is non-zero but ({j}, {i}) is zero; "
            "pass A + A.T (or abs(A) + abs(A.T)) to use the union of both."
        )
    if equal_values:
        A = sp.csr_array((a.data[keep], (r, c)), shape=(p, p))
        diff = sp.coo_array(A != A.T)
        if diff.nnz:
            k = int(np.argmin(diff.row.astype(np.int64) * p + diff.col))
            i, j = int(diff.row[k]), int(diff.col[k])
            raise ValueError(
                f"The adjacency matrix is not symmetric: entry ({i}, {j}) is {A[i, j]:g} but ({j}, {i}) is "
                f"{A[j, i]:g}; pass a symmetric matrix such as A + A.T."
            )
    return r, c


def resolve_graph(graph, n_features: int, feature_names=None) -> MRFGraph:
    """Resolve any accepted graph form against data with ``n_features`` columns.

    Parameters
    ----------
    graph : networkx.Graph, list of tuples, array-like, sparse matrix, str or MRFGraph
        A networkx graph (nodes map to columns in ``list(G.nodes)`` order, or
        by name when ``feature_names`` is given), a list of edges or cliques
        of any size, a square symmetric adjacency matrix (dense or sparse;
        its off-diagonal non-zero pattern is used), or one of the shorthands
        ``"chain"``, ``"complete"``, ``"grid:RxC"``.
    n_features : int
        Number of columns of the data.
    feature_names : sequence, optional
        The columns' names (a DataFrame's string names) or labels (a
        DataFrame's other labels, such as integers that are not ``0..n-1``):
        the nodes of an edge list, a list of cliques or a networkx graph then
        name columns by them. With labels that are not strings every node must
        be a label (``X.to_numpy()`` numbers the columns by position instead).
        The string shorthands and adjacency matrices are always positional.

    Returns
    -------
    MRFGraph
        The resolved structure: variables numbered ``0..n_features-1`` in
        column order, the maximal factors, their closure and the neighbour
        sets. An ``MRFGraph`` given as ``graph`` is returned as it is, after
        checking its number of variables.

    Raises
    ------
    ValueError
        If the graph does not match the data: a node or index that is not a
        column, an adjacency matrix of the wrong size or not symmetric, a
        networkx graph with a different number of nodes than columns, or an
        unknown shorthand.

    See Also
    --------
    resolve_adjacency : The same forms resolved into a sparse adjacency pattern
        (for Gaussian MRFs), with the same error messages.
    """
    names = None if feature_names is None else tuple(feature_names)
    if isinstance(graph, MRFGraph):
        if graph.n_variables != n_features:
            raise ValueError(f"The graph has {graph.n_variables} variables but X has {n_features} columns.")
        return graph
    if isinstance(graph, str):  # the shorthands number columns, whatever their names
        return MRFGraph(n_features, _maximal(_index_factors(_from_string(graph, n_features), n_features, None)), names)
    if isinstance(graph, nx.Graph):
        node_names = tuple(_networkx_column_order(graph, n_features, names))
        factors = _index_factors(list(graph.edges), n_features, node_names)
        names = node_names
        return MRFGraph(n_features, _maximal(factors), names)
    elif _is_matrix(graph):
        r, c = _matrix_entries(graph, n_features, equal_values=True)
        upper = r < c
        factors = list(zip(r[upper].tolist(), c[upper].tolist()))
        names = None
    else:
        try:
            factors = list(graph)
        except TypeError:
            raise ValueError(
                f"graph must be a networkx.Graph, a list of cliques, an adjacency "
                f"matrix or a string; got {type(graph).__name__}."
            ) from None
    factors = _index_factors(factors, n_features, names)
    return MRFGraph(n_features, _maximal(factors), names)


def _symmetric_pattern(rows, cols, p):
    """CSR boolean adjacency (symmetric, no diagonal, sorted indices) from the pairs ``(rows, cols)``."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    off = rows != cols
    r = np.concatenate([rows[off], cols[off]])
    c = np.concatenate([cols[off], rows[off]])
    adj = sp.csr_array((np.ones(len(r), dtype=bool), (r, c)), shape=(p, p))
    adj.sum_duplicates()
    adj.data[:] = True
    adj.sort_indices()
    return adj


def _valid_edge_array(graph, n_features, names):
    """An edge list given as integer column indices, as an ``(E, 2)`` array; else None.

    None also when an index is out of range or an edge is a self-loop: the
    general path of :func:`resolve_graph` then raises its error.
    """
    if names is not None:
        return None
    try:
        arr = np.asarray(graph)
    except (TypeError, ValueError):
        return None
    if arr.ndim != 2 or arr.shape[1] != 2 or not np.issubdtype(arr.dtype, np.integer):
        return None
    if arr.size and (arr.min() < 0 or arr.max() >= n_features or np.any(arr[:, 0] == arr[:, 1])):
        return None
    return arr


def resolve_adjacency(graph, n_features: int, feature_names=None):
    """Resolve any accepted graph form into a sparse symmetric adjacency pattern.

    The graph forms, and the error messages for a graph that does not match
    the data, are those of :func:`resolve_graph`; cliques of more than two
    variables contribute all their pairs. Networkx graphs, adjacency
    matrices, integer edge lists and the string shorthands take vectorised
    paths, so graphs with millions of edges resolve in seconds. Used by the
    Gaussian estimators, whose parameters are the entries of this pattern.

    Parameters
    ----------
    graph : networkx.Graph, list of tuples, array-like, sparse matrix, str or MRFGraph
        Any form accepted by :func:`resolve_graph`. Unlike there, a matrix
        only needs a structurally symmetric pattern: its values are ignored
        (only which off-diagonal entries are non-zero counts; the diagonal
        is ignored too), so a weighted matrix whose values differ from their
        mirror entries, such as a precision matrix estimate, can be passed
        as its own pattern.
    n_features, feature_names
        As for :func:`resolve_graph`.

    Returns
    -------
    adjacency : scipy.sparse.csr_array of bool, shape (n_features, n_features)
        Symmetric, zero diagonal, sorted indices.

    Raises
    ------
    ValueError
        As :func:`resolve_graph`, except that a matrix with a symmetric
        pattern but unequal mirror values is accepted.
    """
    p = int(n_features)
    names = None if feature_names is None else tuple(feature_names)
    if isinstance(graph, str):
        edges = np.asarray(_from_string(graph, p), dtype=np.int64).reshape(-1, 2)
    elif isinstance(graph, nx.Graph):
        order = _networkx_column_order(graph, p, names)
        a = nx.to_scipy_sparse_array(graph, nodelist=order, weight=None, format="coo")
        return _symmetric_pattern(a.row, a.col, p)
    elif _is_matrix(graph):
        return _symmetric_pattern(*_matrix_entries(graph, p, equal_values=False), p)
    else:
        edges = _valid_edge_array(graph, p, names)
        if edges is None:
            edges = np.asarray(resolve_graph(graph, p, names).edges, dtype=np.int64).reshape(-1, 2)
    return _symmetric_pattern(edges[:, 0], edges[:, 1], p)


def subgraph(graph, keep, n_variables=None, drop_edges=()) -> list:
    """The graph on the kept variables, renumbered ``0..k-1``, without the edges ``drop_edges``.

    For data whose columns were selected after the graph was chosen (a
    :class:`~sklearn.feature_selection.VarianceThreshold` that drops constant pixels from
    ``"grid:8x8"``), and for removing edges a method cannot fit (an edge whose ends always agree,
    which :class:`~skmrf.MLEInducedLikelihood` refuses). Every factor keeps its kept variables;
    a factor holding both ends of a dropped edge is replaced by its two factors without one of
    them. This is the induced subgraph: exact when the dropped variables are constant (the model
    conditioned on them), an approximation otherwise (marginalising a variable out joins its
    neighbours).

    Parameters
    ----------
    graph : str, networkx.Graph, list of tuples, array-like or MRFGraph
        Any graph :func:`resolve_graph` accepts, over the ``n_variables`` original variables
        (numbered by position).
    keep : array-like of bool or of int
        Which variables remain: a mask of length ``n_variables`` (``selector.get_support()``) or
        their indices, in increasing order.
    n_variables : int, optional
        Number of original variables; ``len(keep)`` for a mask (required for indices with a
        string shorthand).
    drop_edges : sequence of pairs of int, default=()
        Edges ``(u, v)`` to remove, in the original numbering.

    Returns
    -------
    list of tuple of int
        The factors, in the new numbering (column ``j`` of the selected data is variable ``j``):
        a graph every estimator takes for data with ``k`` columns.

    Raises
    ------
    ValueError
        If ``keep`` is neither a mask of length ``n_variables`` nor increasing indices below it,
        or an edge of ``drop_edges`` is not an edge of the graph.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.graphs import subgraph
    >>> subgraph("grid:2x3", np.array([True, True, False, True, True, True]))
    [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]
    >>> subgraph("chain", [0, 1, 2, 3], n_variables=4, drop_edges=[(1, 2)])
    [(0, 1), (2, 3)]
    """
    keep = np.asarray(keep)
    if keep.dtype == bool:
        n_variables = len(keep) if n_variables is None else int(n_variables)
        if len(keep) != n_variables:
            raise ValueError(f"keep is a mask of {len(keep)} entries for a graph of {n_variables} variables.")
        kept = np.flatnonzero(keep)
    else:
        kept = keep.astype(np.int64).ravel()
        if n_variables is None:
            if isinstance(graph, str):
                raise ValueError(
                    f"subgraph({graph!r}, keep=indices) needs n_variables, the variables of {graph!r} before "
                    "the selection (or give keep as a mask, whose length says it)."
                )
            n_variables = int(kept.max(initial=-1)) + 1
        if kept.size and (np.any(np.diff(kept) <= 0) or kept[0] < 0 or kept[-1] >= n_variables):
            raise ValueError(
                f"keep must list increasing variable indices in 0..{n_variables - 1}; got {kept.tolist()}."
            )
    full = resolve_graph(graph, int(n_variables))
    factors = [set(f) for f in full.factors]
    for edge in drop_edges:
        u, v = (int(x) for x in edge)
        if not any({u, v} <= f for f in factors):
            raise ValueError(f"drop_edges names ({u}, {v}), which is not an edge of the graph.")
        factors = [g for f in factors for g in ([f - {u}, f - {v}] if {u, v} <= f else [f])]
    new = {int(v): j for j, v in enumerate(kept)}
    out = {tuple(sorted(new[v] for v in f if v in new)) for f in factors}
    return sorted((f for f in out if len(f) >= 2), key=lambda f: (len(f), f))
