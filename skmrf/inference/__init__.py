"""Exact and approximate inference for discrete MRFs."""

from .enumerate import Enumerator, all_states
from .gibbs import GibbsSampler, colour_classes
from .junction_tree import DEFAULT_MAX_BYTES, JunctionTree, TreewidthError, elimination_order

__all__ = [
    "DEFAULT_MAX_BYTES",
    "Enumerator",
    "GibbsSampler",
    "JunctionTree",
    "TreewidthError",
    "all_states",
    "colour_classes",
    "elimination_order",
]
