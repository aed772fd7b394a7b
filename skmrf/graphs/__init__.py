"""Graph input normalisation and builders for common MRF topologies.

Every graph form accepted by the estimators (see ``DESIGN.md``) is resolved by
:func:`resolve_graph` into one internal structure, :class:`MRFGraph`: variables
numbered ``0..n-1`` (the columns of ``X``), the factors, their downward closure
(the potential blocks of the model), the neighbour sets and the 1-neighbourhood
``A_q`` of any clique. The builders (:func:`grid_graph`, :func:`torus_graph`, ...)
return networkx graphs.
"""

from ._families import chain_graph, chimera_graph, grid_graph, lattice_graph, skip_chain_graph, torus_graph
from ._resolve import MRFGraph, resolve_adjacency, resolve_graph, subgraph

__all__ = [
    "MRFGraph",
    "resolve_graph",
    "resolve_adjacency",
    "grid_graph",
    "torus_graph",
    "lattice_graph",
    "chimera_graph",
    "chain_graph",
    "skip_chain_graph",
    "subgraph",
]

# Fitted estimators hold an MRFGraph: pickles name it by its public path.
MRFGraph.__module__ = __name__
