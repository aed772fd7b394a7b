"""Exact and approximate inference for discrete MRFs."""

from ..exceptions import _moved
from ._adaptive_ais import (
    AIS_BUDGET,
    AdaptiveAISResult,
    LogPartitionInterval,
    adaptive_annealed_importance_sampling,
    log_partition_interval,
)
from ._ais import (
    AISResult,
    BDMCResult,
    annealed_importance_sampling,
    bidirectional_monte_carlo,
    reverse_annealed_importance_sampling,
)
from ._annealing import AnnealingPath
from ._conditionals import ConditionalPlan
from ._enumerate import Enumerator, all_states
from ._evidence import BatchedJunctionTree
from ._gibbs import (
    BinaryGibbsKernel,
    CategoricalGibbsKernel,
    GeneralGibbsKernel,
    GibbsSampler,
    colour_classes,
    run_chains,
)
from ._junction_tree import DEFAULT_MAX_BYTES, JunctionTree, elimination_order
from ._tree_bound import TreeBoundResult, tree_upper_bound

__all__ = [
    "BatchedJunctionTree",
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
__getattr__ = _moved(__name__, ("TreewidthError",))
