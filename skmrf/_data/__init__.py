"""Integer-coded data: joint-state codes and counts, and compression to distinct patterns.

Every estimator counts joint states and compresses rows through these functions: the
clique tables of the model, LAP's 1-neighbourhood counts, the pseudo-likelihood's Markov
blankets and EM's observed patterns per sub-network (:func:`subnetworks`). Data larger than memory
(a memmap, a dask array) is counted by row chunks (:func:`reduce_row_chunks`).
"""

from .chunks import count_dtype, is_chunked, reduce_row_chunks, scan_states
from .compress import (
    BlanketRecords,
    DistinctRows,
    blanket_records,
    distinct_per_column,
    distinct_projections,
    distinct_rows,
    finish_distinct_rows,
    merge_distinct_rows,
    merge_records,
    padded_blankets,
    state_dtype,
)
from .decompose import subnetworks
from .joint_states import c_order_strides, count_joint_states, encode_rows, transposed_states
from .rows import Rows, summable_weights

__all__ = [
    "BlanketRecords",
    "DistinctRows",
    "Rows",
    "blanket_records",
    "c_order_strides",
    "count_dtype",
    "count_joint_states",
    "distinct_per_column",
    "distinct_projections",
    "distinct_rows",
    "encode_rows",
    "finish_distinct_rows",
    "is_chunked",
    "merge_distinct_rows",
    "merge_records",
    "padded_blankets",
    "reduce_row_chunks",
    "scan_states",
    "summable_weights",
    "state_dtype",
    "subnetworks",
    "transposed_states",
]
