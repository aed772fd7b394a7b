"""The validated rows of one fit and their weights: what every discrete kernel reads.

An estimator's ``fit`` validates ``X`` and ``sample_weight`` once and hands the kernels a
:class:`Rows`. The kernels take every statistic they need from it through :meth:`Rows.reduce`
(a sum over row chunks, so a memmap or a dask array is never read whole) or, where a method
still needs the rows themselves, :meth:`Rows.dense`. A row with weight ``w`` counts as ``w``
rows: integer weights give exactly the statistics of the data with each row repeated.
"""

from __future__ import annotations

import numpy as np

from . import chunks
from .chunks import _is_dask, _memmap_chunks, default_chunk_rows, is_chunked, reduce_row_chunks
from .compress import distinct_rows, finish_distinct_rows, merge_distinct_rows, state_dtype

__all__ = ["Rows", "on_grid", "over_blocks", "summable_weights"]


def on_grid(values, bound, out=None):
    """``values`` rounded to the nearest multiple of ``q = 2^(e - 52)``, where ``bound < 2^e``.

    If the absolute values of some terms sum to at most ``bound`` (per entry when ``bound`` is an
    array), every partial sum of the rounded terms is an integer multiple of ``q`` no larger than
    ``2^53 q``, which float64 holds exactly: the terms then add up to the same number bit for
    bit in any order and any grouping (by chunks, on dask workers, by a tree of tasks). A term
    moves by at most ``q / 2 <= 2^-52 bound``, the rounding of one float64 addition of the total.
    Returns a new array, or ``out`` (which may be ``values`` itself, a float64 array).
    """
    _, e = np.frexp(bound)  # bound < 2^e
    q = np.ldexp(1.0, np.asarray(e, dtype=np.int64) - 52)
    out = np.divide(values, q, out=out)  # exact: a power of two
    np.round(out, out=out)
    out *= q
    return out


def summable_weights(weight):
    """Non-negative float64 ``weight`` rounded onto the grid of :func:`on_grid` for their sum.

    Every partial sum of the rounded weights is then exact, so a count or a moment summed over
    any grouping of the rows (by chunks, on dask workers, by ``bincount`` or BLAS) is the same
    number bit for bit. A weight moves by at most ``2^-52 sum(weight)``, below the resolution of
    the weighted objective. Integer weights summing to less than ``2^52`` lie on the grid and are
    returned unchanged. Returns a new array (never the caller's).
    """
    return on_grid(weight, float(np.sum(weight)))


def _weighted_chunk(chunk, start, func, weight, *args):
    """``func(chunk, weights of its rows, *args)``: the chunk's slice of ``weight`` (or None)."""
    w = None if weight is None else weight[start : start + chunk.shape[0]]
    return func(chunk, w, *args)


def over_blocks(chunk, start, func, weight, block_rows, bound, op, args):
    """``func(block, its weights, *args)`` over the blocks of ``block_rows`` rows of a chunk
    (starting at a multiple of it), combined by ``op``; each rounded :func:`on_grid` for
    ``bound`` first unless it is None."""
    total = None
    for a in range(0, chunk.shape[0], block_rows):
        w = None if weight is None else weight[start + a : start + a + block_rows]
        part = func(chunk[a : a + block_rows], w, *args)
        if bound is not None:
            part = on_grid(part, bound, out=part)  # func's own new array
        total = part if total is None else op(total, part, out=total)  # on the grid, a sum is exact
    return total


#: Entries (rows x columns) of a memmap chunk compressed to distinct rows at once: its copy in the
#: memmap's dtype, the states plus one (one byte each up to 255 states) and the sort of the rows.
DISTINCT_CHUNK_ENTRIES = 1 << 24


def _distinct_chunk(chunk, weight, n_states):
    """The :class:`~skmrf._data.DistinctRows` of one (validated) chunk, NaN read as missing (-1)."""
    X = np.asarray(chunk)
    if X.dtype.kind == "f":  # validated: integral states or NaN
        X = np.where(np.isnan(X), -1, X)
    return distinct_rows(X, n_states, weight)


class Rows:
    """Validated integer rows and their weights.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask.array of shape (n_rows, n_columns)
        Integer states ``0..K-1`` (``-1`` for a missing entry where an estimator allows them),
        or real values (validated) with ``n_states=None``.
    n_states : ndarray of int of shape (n_columns,) or None
        States of each column; None for real-valued columns (the Gaussian estimators).
    weight : ndarray of float64 of shape (n_rows,), optional
        Non-negative row weights (``sample_weight``); None means every row counts once.

    Attributes
    ----------
    n_rows : int
        Rows of ``X`` (whatever their weights).
    total : float
        Sum of the weights: the number of rows the data stand for (``n_rows`` without weights).
        ``alpha="auto"`` is ``1 / total``.
    """

    def __init__(self, X, n_states, weight=None):
        self.X = X
        self.n_states = None if n_states is None else np.asarray(n_states)
        self.weight = weight
        self.n_rows = int(X.shape[0])
        self.total = float(self.n_rows) if weight is None else float(np.sum(weight))

    @property
    def n_columns(self) -> int:
        return int(self.X.shape[1])

    @property
    def chunked(self) -> bool:
        """Whether ``X`` is read by row chunks (a memmap or a dask array)."""
        return is_chunked(self.X)

    def reduce(self, func, *args, op=np.add, chunk_rows=None, max_entries=None):
        """``func(chunk, chunk_weight, *args)`` over the row chunks, combined by ``op``.

        ``chunk_weight`` is the chunk's slice of the weights, or None without weights; see
        :func:`~skmrf._data.reduce_row_chunks` for the chunking of each kind of input. ``func``
        must be a module-level function (it may be sent to dask workers). ``max_entries`` caps a
        memmap chunk at that many entries (rows x columns), for a ``func`` whose temporaries are
        several words per entry (a dask array's blocks are the caller's).
        """
        if max_entries is not None and isinstance(self.X, np.memmap):
            cap = max(1, int(max_entries) // max(1, self.n_columns))
            chunk_rows = min(chunk_rows or default_chunk_rows(self.X), cap)
        return reduce_row_chunks(
            self.X, _weighted_chunk, func, self.weight, *args, op=op, chunk_rows=chunk_rows, name=func.__name__
        )

    def block_rows(self):
        """Rows of one block of the fixed grid of :meth:`grid_sum` (:func:`~skmrf._data.chunks.block_rows`)."""
        return chunks.block_rows(self.n_columns)

    def grid_sum(self, func, *args, bound, name=None):
        """``sum over blocks of on_grid(func(block, block_weight, *args), bound)``, bit for bit
        whatever the chunking.

        The blocks are the rows ``[k B, (k + 1) B)`` (``B`` = :meth:`block_rows`), the same for an
        in-memory array, a memmap and a dask array (its row chunks are aligned on them), so each
        block's ``func`` sees the same rows; rounded :func:`on_grid`, the block results add up
        exactly in any order. ``bound`` (a float, or an array broadcasting with ``func``'s result)
        must be at least the sum over all rows of the absolute values of their terms, with room
        for the rounding of ``func`` (twice the exact bound is safe). ``func`` must return an
        array (a module-level function, as for :meth:`reduce`) and must not keep its ``block``
        (a view of the chunk). ``name``: the dask tasks' name (default ``func``'s).
        """
        return self._over_blocks(func, args, bound, np.add, name)

    def block_reduce(self, func, *args, op):
        """``func(block, block_weight, *args)`` over the blocks of :meth:`grid_sum`, combined by an
        exact ``op`` (``numpy.maximum``): an in-memory array too is read a block at a time."""
        return self._over_blocks(func, args, None, op)

    def _over_blocks(self, func, args, bound, op, name=None):
        B = self.block_rows()
        return reduce_row_chunks(
            self.X, over_blocks, func, self.weight, B, bound, op, args, op=op, name=name or func.__name__, block_rows=B
        )

    def dense(self):
        """``(X, weight)`` with ``X`` an in-memory ndarray (a memmap or a dask array is read whole)."""
        X = self.X
        if is_chunked(X):
            X = np.asarray(X.compute() if hasattr(X, "compute") else X)
        return X, self.weight

    def compact(self):
        """``X`` in memory as the narrowest integer type holding its states (uint8 up to 256).

        A memmap is read chunk by chunk into that array and a dask array's blocks are cast on
        the workers, so the data are never held in a wider type (an in-memory ndarray is
        returned as it is). For a method that needs every row, in order: its memory is one byte
        per entry instead of the eight of ``int64``, and its arithmetic is the in-memory one.
        """
        X = self.X
        if not is_chunked(X):
            return X
        dtype = state_dtype(int(self.n_states.max()))
        if _is_dask(X):
            return np.asarray(X.astype(dtype).compute())
        out = np.empty(X.shape, dtype=dtype)
        for start, chunk in _memmap_chunks(X, None):
            out[start : start + len(chunk)] = chunk
        return out

    def distinct(self):
        """``(values, count)``: the distinct rows (int64, ``-1`` for a missing entry) and how many
        rows show each (the sum of their weights), in float64, accumulated by row chunks for a
        memmap or a dask array (on the workers for dask: only the distinct rows travel). NaN in
        a float memmap or dask array is a missing entry. Rows of weight 0 are dropped.

        The counts are exact whatever the chunks for integer weights, and for float weights on the
        grid of :func:`summable_weights` (where a fit puts them).
        """
        distinct = self.reduce(
            _distinct_chunk, self.n_states, op=merge_distinct_rows, max_entries=DISTINCT_CHUNK_ENTRIES
        )
        return finish_distinct_rows(distinct)

    def take(self, index):
        """The rows at ``index`` (integers, repeats allowed) in memory, as ``X``'s dtype; from a
        memmap or a dask array only those rows are read."""
        X = self.X
        if not is_chunked(X):
            return X[index]
        if _is_dask(X):
            unique, inverse = np.unique(index, return_inverse=True)
            return np.asarray(X[unique].compute())[inverse.ravel()]
        return np.asarray(X[index])

    def weights_or_ones(self):
        """The weights, or float64 ones when the rows are unweighted."""
        return np.ones(self.n_rows) if self.weight is None else self.weight

    def draw(self, rng, size):
        """Indices of ``size`` rows drawn with replacement, each with probability ``weight / total``.

        Without weights this is ``rng.integers(0, n_rows, size)``. With integer weights it draws
        ``k = rng.integers(0, total, size)`` and returns the row that holds position ``k`` of the
        data with every row repeated ``weight`` times (``np.repeat(X, weight, axis=0)``), so the
        draws are the same rows, bit for bit, as from the repeated data.
        """
        if self.weight is None:
            return rng.integers(0, self.n_rows, size)
        cumulative = np.cumsum(self.weight)
        if np.all(self.weight == np.round(self.weight)) and self.total < 2**53:
            k = rng.integers(0, int(self.total), size)
        else:
            k = rng.random(size) * cumulative[-1]
        return np.minimum(np.searchsorted(cumulative, k, side="right"), self.n_rows - 1)
