"""Integer-coded data: joint-state codes and counts, and compression to distinct patterns.

Every estimator counts joint states and compresses rows through these functions: the
clique tables of the model, LAP's 1-neighbourhood counts, the pseudo-likelihood's Markov
blankets and EM's observed patterns per sub-network (:func:`subnetworks`).
"""

from .compress import distinct_per_column, distinct_projections
from .decompose import subnetworks
from .joint_states import c_order_strides, count_joint_states, encode_rows, transposed_states

__all__ = [
    "c_order_strides",
    "count_joint_states",
    "distinct_per_column",
    "distinct_projections",
    "encode_rows",
    "subnetworks",
    "transposed_states",
]
