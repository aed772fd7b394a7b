"""Exact and approximate inference for discrete MRFs."""

from .ais import AISResult, annealed_importance_sampling
from .enumerate import Enumerator, all_states
from .gibbs import GibbsSampler, colour_classes
from .junction_tree import DEFAULT_MAX_BYTES, JunctionTree, TreewidthError, elimination_order

__all__ = [
    "AISResult",
    "DEFAULT_MAX_BYTES",
    "Enumerator",
    "GibbsSampler",
    "JunctionTree",
    "TreewidthError",
    "all_states",
    "annealed_importance_sampling",
    "colour_classes",
    "elimination_order",
]
