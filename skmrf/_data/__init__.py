"""Integer-coded data: joint-state codes and counts, and compression to distinct patterns.

Every estimator counts joint states and compresses rows through these functions: the
clique tables of the model, LAP's 1-neighbourhood counts, the pseudo-likelihood's Markov
blankets and EM's observed patterns per sub-network (:func:`subnetworks`). Data larger than memory
(a memmap, a dask array) is counted by row chunks (:func:`reduce_row_chunks`).
"""

from .chunks import count_dtype, is_chunked, reduce_row_chunks, scan_states
from .compress import distinct_per_column, distinct_projections
from .decompose import subnetworks
from .joint_states import c_order_strides, count_joint_states, encode_rows, transposed_states
from .rows import Rows

__all__ = [
    "Rows",
    "c_order_strides",
    "count_dtype",
    "count_joint_states",
    "distinct_per_column",
    "distinct_projections",
    "encode_rows",
    "is_chunked",
    "reduce_row_chunks",
    "scan_states",
    "subnetworks",
    "transposed_states",
]
