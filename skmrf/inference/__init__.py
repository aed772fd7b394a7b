"""Exact and approximate inference for discrete MRFs."""

from ..exceptions import _moved
from .ais import AISResult, annealed_importance_sampling
from .conditionals import ConditionalPlan
from .enumerate import Enumerator, all_states
from .gibbs import (
    BinaryGibbsKernel,
    CategoricalGibbsKernel,
    GeneralGibbsKernel,
    GibbsSampler,
    colour_classes,
    run_chains,
)
from .junction_tree import DEFAULT_MAX_BYTES, JunctionTree, elimination_order
from .tree_bound import TreeBoundResult, tree_upper_bound

__all__ = [
    "AISResult",
    "BinaryGibbsKernel",
    "CategoricalGibbsKernel",
    "ConditionalPlan",
    "GeneralGibbsKernel",
    "DEFAULT_MAX_BYTES",
    "Enumerator",
    "GibbsSampler",
    "JunctionTree",
    "TreeBoundResult",
    "all_states",
    "annealed_importance_sampling",
    "colour_classes",
    "run_chains",
    "elimination_order",
    "tree_upper_bound",
]


#: Warnings and errors exported here before skmrf.exceptions held them all (deprecated).
_MOVED = ("TreewidthError",)


def __getattr__(name):
    return _moved(__name__, _MOVED, name)
