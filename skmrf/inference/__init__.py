"""Exact and approximate inference for discrete MRFs."""

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
from .junction_tree import DEFAULT_MAX_BYTES, JunctionTree, TreewidthError, elimination_order

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
    "TreewidthError",
    "all_states",
    "annealed_importance_sampling",
    "colour_classes",
    "run_chains",
    "elimination_order",
]
