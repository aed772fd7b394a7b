"""Exact and approximate inference for discrete MRFs."""

from ..exceptions import _moved
from .adaptive_ais import (
    AIS_BUDGET,
    AdaptiveAISResult,
    LogPartitionInterval,
    adaptive_annealed_importance_sampling,
    log_partition_interval,
)
from .ais import (
    AISResult,
    BDMCResult,
    annealed_importance_sampling,
    bidirectional_monte_carlo,
    reverse_annealed_importance_sampling,
)
from .annealing import AnnealingPath
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
    "AIS_BUDGET",
    "AISResult",
    "AdaptiveAISResult",
    "AnnealingPath",
    "BDMCResult",
    "LogPartitionInterval",
    "BinaryGibbsKernel",
    "CategoricalGibbsKernel",
    "ConditionalPlan",
    "GeneralGibbsKernel",
    "DEFAULT_MAX_BYTES",
    "Enumerator",
    "GibbsSampler",
    "JunctionTree",
    "TreeBoundResult",
    "adaptive_annealed_importance_sampling",
    "all_states",
    "annealed_importance_sampling",
    "bidirectional_monte_carlo",
    "log_partition_interval",
    "reverse_annealed_importance_sampling",
    "colour_classes",
    "run_chains",
    "elimination_order",
    "tree_upper_bound",
]


#: Warnings and errors exported here before skmrf.exceptions held them all (deprecated).
_MOVED = ("TreewidthError",)


def __getattr__(name):
    return _moved(__name__, _MOVED, name)
