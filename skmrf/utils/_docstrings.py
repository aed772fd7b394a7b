"""Docstring text shared by several estimators, filled in by ``%``-substitution.

A class docstring writes ``%(graph)s`` where the shared entry goes; :func:`fill_doc`
substitutes it once at import. Literal percent signs in such a docstring are written ``%%``.
"""

from __future__ import annotations

__all__ = ["DOCS", "fill_doc"]

DOCS = {
    "graph": """graph : networkx.Graph, list of tuples, array-like, sparse matrix or str, default="chain"
        The structure: a networkx graph (nodes map to columns in
        ``list(G.nodes)`` order, or by name for a DataFrame), a list of edges
        or cliques of any size, a square adjacency matrix, or one of
        ``"chain"``, ``"complete"``, ``"grid:RxC"``. Resolved in ``fit`` into
        ``graph_``.""",
    "n_states": """n_states : "auto", int or array-like of int, default="auto"
        States per variable. ``"auto"`` takes ``max + 1`` of each column in
        the training data (at least 2); give it explicitly when the training
        data may miss a state that later data takes.""",
    "score_method": """score_method : {"auto", "exact", "pseudo", "ais"}, default="auto"
        How :meth:`score_samples` scores. ``"exact"``: the log-likelihood,
        with ``log Z`` from the junction tree (``fit`` raises
        ``TreewidthError`` when it exceeds ``max_bytes``). ``"pseudo"``: the
        log pseudo-likelihood ``sum_i log p(x_i | x_-i)`` (not a
        log-likelihood). ``"ais"``: the log-likelihood with ``log Z``
        estimated by annealed importance sampling (100 chains, 1000 steps,
        seeded by ``random_state``; standard error in
        ``log_partition_std_``), for graphs too wide for the junction tree.
        ``"auto"``: ``"exact"`` when the junction tree fits, else
        ``"pseudo"`` (AIS is random and costs ``10^5`` Gibbs sweeps, so it is
        only used when asked for).""",
}


def fill_doc(obj):
    """Class or function decorator: substitute :data:`DOCS` into ``obj.__doc__``."""
    if obj.__doc__:
        obj.__doc__ = obj.__doc__ % DOCS
    return obj
