"""Row-chunk reduction: sufficient statistics of data larger than memory.

Every statistic an estimator takes from the rows (clique counts, LAP's local counts, the
column maxima of validation) is a sum (or a maximum) over rows, so it can be computed chunk
by chunk and combined. :func:`reduce_row_chunks` is the one place that does this for the
three kinds of input:

- an ordinary ``ndarray``: one call on the whole array (today's in-memory path, unchanged);
- a ``numpy.memmap``: chunks of rows read one at a time, never the whole file;
- a ``dask.array``: one task per block of rows, run where the block lives (on the workers
  of a ``dask.distributed`` client when one is active), the results combined by a tree of
  tasks; only the statistics travel.
"""

from __future__ import annotations

import re

import numpy as np

from .._utils._budgets import CHUNK_BYTES
from .._utils.validation import check_states

__all__ = ["count_dtype", "is_chunked", "reduce_row_chunks", "scan_states"]


def _is_dask(X):
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")


def is_chunked(X) -> bool:
    """Whether ``X`` is read by row chunks: a ``numpy.memmap`` or a ``dask.array``."""
    return isinstance(X, np.memmap) or _is_dask(X)


def _combine(a, b, op, inplace=False):
    """``op`` applied leaf by leaf to two results (arrays, or tuples/lists of them); with
    ``inplace``, into the arrays of ``a`` (the memmap loop owns them; dask tasks stay pure)."""
    if isinstance(a, (tuple, list)):
        ops = op if isinstance(op, (tuple, list)) else [op] * len(a)
        return type(a)(_combine(x, y, o, inplace) for x, y, o in zip(a, b, ops))
    if inplace and isinstance(a, np.ndarray):
        return op(a, b, out=a)
    return op(a, b)


def count_dtype(n_rows):
    """The narrowest of uint16, uint32 and float64 that holds counts up to ``n_rows``: for the
    counts of the chunks of a memmap or a dask array, a quarter of float64's bytes to keep
    and to send when there are fewer than 65,536 rows."""
    return np.uint16 if n_rows < 1 << 16 else np.uint32 if n_rows < 1 << 32 else np.float64


def default_chunk_rows(X):
    """Rows of a memmap chunk: about :data:`CHUNK_BYTES` of ``X``'s own bytes."""
    return max(1, CHUNK_BYTES // max(1, X.shape[1] * X.dtype.itemsize))


def block_rows(n_columns):
    """Rows of one block of the fixed grid of :meth:`~skmrf._data.Rows.grid_sum`: about
    :data:`CHUNK_BYTES` of float64 (a memmap's default chunk is a whole number of them)."""
    return max(1, CHUNK_BYTES // (8 * max(1, n_columns)))


def _memmap_chunks(X, chunk_rows, block_rows=None):
    step = chunk_rows or default_chunk_rows(X)
    if block_rows:
        step = max(1, step // block_rows) * block_rows
    for a in range(0, X.shape[0], step):
        yield a, np.array(X[a : a + step])  # a copy of this chunk only, as a plain ndarray


def reduce_row_chunks(X, func, *args, op=np.add, chunk_rows=None, name=None, block_rows=None):
    """``func`` applied to every chunk of rows of ``X``, the results combined by ``op``.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask.array of shape (n_rows, n_columns)
        The data; a dask array is taken block row by block row (its column chunks are
        merged first).
    func : callable
        ``func(chunk, start, *args)`` with ``chunk`` an ndarray of consecutive rows starting
        at row ``start``; returns an array or a tuple/list of arrays. A module-level
        function, so it can be sent to dask workers.
    *args
        Passed to ``func`` (sent once to the dask graph, shared by its tasks).
    op : ufunc or tuple of ufuncs, default=numpy.add
        Combines two results leaf by leaf (``numpy.maximum`` for maxima); a tuple gives one
        per element of a tuple result.
    chunk_rows : int, optional
        Rows per memmap chunk; by default about :data:`CHUNK_BYTES` of data.
    name : str, optional
        The name the dask tasks' keys start with (default ``func.__name__``): a wrapper
        passes the name of the function it wraps, so the task stream shows the real work.
    block_rows : int, optional
        Every chunk but the last is a whole number of blocks of this many rows, so each chunk
        starts at a multiple of ``block_rows``: memmap chunks are rounded down to a multiple
        (at least one block), and a dask array whose row chunks are not multiples is rechunked
        to the multiple nearest its first chunk (its data move between the workers once).

    Returns
    -------
    The combined result. For an ndarray, ``func(X, 0, *args)`` itself. Sums of integer
    counts (even in float64, below ``2^53``) do not depend on the chunking.
    """
    if _is_dask(X):
        if block_rows and any(c % block_rows for c in X.chunks[0][:-1]):
            X = X.rechunk({0: max(1, round(X.chunks[0][0] / block_rows)) * block_rows})
        return _reduce_dask(X, func, args, op, name or func.__name__)
    if isinstance(X, np.memmap):
        out = None
        for start, chunk in _memmap_chunks(X, chunk_rows, block_rows):
            part = func(chunk, start, *args)
            out = part if out is None else _combine(out, part, op, inplace=True)
            del part
        return out
    return func(X, 0, *args)


def _reduce_dask(X, func, args, op, name):
    import dask
    from dask.base import tokenize

    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).tolist()
    # One graph key per argument, shared by every task (not a copy embedded in each).
    # Functions (the one a wrapper applies) travel inside each task, as the task's own function does.
    shared = [a if a is None or np.isscalar(a) or callable(a) else dask.delayed(a, traverse=False) for a in args]
    blocks = zip(X.to_delayed()[:, 0], starts)
    tokens = [getattr(a, "key", a) for a in shared]
    parts = [
        # Keys keep the name of the function the task runs (the task stream shows "_count_chunk-...").
        dask.delayed(_guarded, pure=True)(
            func, block, start, *shared, dask_key_name=f"{name}-{tokenize(func, block.key, start, tokens)}"
        )
        for block, start in blocks
    ]
    while len(parts) > 1:  # a binary tree of combinations, run on the workers too
        pairs = [dask.delayed(_combine_guarded, pure=True)(a, b, op) for a, b in zip(parts[::2], parts[1::2])]
        parts = pairs + ([parts[-1]] if len(parts) % 2 else [])
    (out,) = dask.compute(parts[0])
    if isinstance(out, _ChunkError):
        raise out.error
    return out


class _ChunkError:
    """The exception a dask task raised on the block starting at row ``start``, kept as a value:
    the reduction then raises the one of the first block, as the in-memory and memmap paths
    would (dask would raise whichever task failed first in time)."""

    def __init__(self, start, error):
        self.start, self.error = start, error


def _guarded(func, block, start, *args):
    try:
        return func(block, start, *args)
    except Exception as err:  # noqa: BLE001 - raised again by _reduce_dask, after the earlier blocks
        return _ChunkError(start, err)


def _combine_guarded(a, b, op):
    errors = [x for x in (a, b) if isinstance(x, _ChunkError)]
    if errors:
        return min(errors, key=lambda e: e.start)
    return _combine(a, b, op)


def shift_rows(err, start):
    """The ValueError ``err`` with its row numbers counted from the start of the data."""
    if not start:
        return err
    msg = re.sub(r"at row (\d+)", lambda m: f"at row {int(m.group(1)) + start}", str(err))
    return type(err)(msg)


#: Entries checked at once by :func:`scan_states`: a chunk's int64 copy and masks take about ten
#: bytes per entry (2.5 GB more for a 256 MB chunk of float32 before it was split; 40 MB now).
SCAN_ENTRIES = 1 << 22


def scan_states(chunk, start, n_states, names, allow_nan):
    """Check one chunk's states (as :func:`~skmrf._utils.validation.check_states`) and return
    the column maxima (int64, ``-1`` for a column with no value).

    A ``ValueError`` names the column, the value and its row in the whole data. The chunk is
    checked :data:`SCAN_ENTRIES` entries at a time.
    """
    step = max(1, SCAN_ENTRIES // max(1, chunk.shape[1]))
    if chunk.shape[0] > step:
        parts = [
            scan_states(chunk[a : a + step], start + a, n_states, names, allow_nan) for a in range(0, len(chunk), step)
        ]
        return np.maximum.reduce(parts)
    try:
        Xi = check_states(chunk, n_states, names, allow_nan=allow_nan, keep_dtype=True)
    except ValueError as err:
        raise shift_rows(err, start) from None
    if not Xi.shape[0]:
        return np.full(Xi.shape[1], -1, dtype=np.int64)
    return Xi.max(axis=0).astype(np.int64)
