"""Compression of rows to their distinct patterns on variable subsets, with counts.

An objective that depends on the data only through the joint states of some subsets of the
variables (a Markov blanket, a sub-network of always-observed variables) needs each distinct
pattern once, weighted by how many rows show it.
"""

from __future__ import annotations

import numpy as np

from .joint_states import c_order_strides, encode_rows

__all__ = [
    "BlanketRecords",
    "DistinctRows",
    "blanket_records",
    "distinct_per_column",
    "distinct_projections",
    "distinct_rows",
    "finish_distinct_rows",
    "merge_distinct_rows",
    "merge_records",
    "padded_blankets",
    "state_dtype",
]

# Integer codes of joint states must stay below this (int64 safety); wider subsets are
# compressed by sorting their rows (np.unique), which is slower.
_MAX_CODE = 2**62
# Rows x subsets coded per chunk.
_CHUNK = 1 << 22


def distinct_per_column(codes, weight=None):
    """Distinct values of every column of an integer array, with counts.

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_columns)
    weight : ndarray of float64 of shape (n_rows,), optional
        Row weights: ``count`` then sums the weights of the rows holding each value.

    Returns
    -------
    column : ndarray of int64
        The column of each distinct value, in column order (values ascending within a column).
    row : ndarray of int64
        The first row (in a stable sort) holding that value in that column.
    count : ndarray of int64 (float64 with ``weight``)
        How many rows hold it (the sum of their weights).
    inverse : ndarray of int64, shape (n_rows, n_columns)
        The distinct value (index into the outputs above) at each entry of ``codes``.
    """
    n_rows = codes.shape[0]
    order = np.argsort(codes, axis=0, kind="stable")
    srt = np.take_along_axis(codes, order, axis=0)
    new = np.ones(srt.shape, dtype=bool)
    new[1:] = srt[1:] != srt[:-1]
    # Column-major flattening keeps each column's values together.
    flat_new = new.T.ravel()
    starts = np.flatnonzero(flat_new)
    if weight is None:
        counts = np.diff(np.append(starts, flat_new.size))
    else:
        counts = np.add.reduceat(weight[order].T.ravel(), starts) if len(starts) else np.zeros(0)
    inverse = np.empty(codes.shape, dtype=np.int64)
    np.put_along_axis(inverse, order, (np.cumsum(flat_new) - 1).reshape(new.T.shape).T, axis=0)
    return starts // n_rows, order.T.ravel()[starts], counts, inverse


def _distinct_rows(Xs, weight=None):
    """:func:`distinct_per_column` for one subset too wide to code: distinct rows by sorting."""
    _, row, inverse, count = np.unique(Xs, axis=0, return_index=True, return_inverse=True, return_counts=True)
    if weight is not None:
        count = np.bincount(inverse.ravel(), weights=weight, minlength=len(row))
    return np.zeros(len(row), dtype=np.int64), row, count, inverse.reshape(-1, 1)


def distinct_projections(X, subsets, n_states, return_inverse=False, weight=None):
    """Distinct joint states of ``X`` projected on each subset of variables, with counts.

    Parameters
    ----------
    X : ndarray of int, shape (n_rows, n_variables)
    subsets : sequence of tuple of int
        The variable subsets (any sizes).
    n_states : ndarray of int, shape (n_variables,)
    return_inverse : bool, default=False
        Also return which pattern each row shows on each subset.
    weight : ndarray of float64 of shape (n_rows,), optional
        Row weights (``sample_weight``); ``count`` then sums them.

    Returns
    -------
    subset : ndarray of int64, shape (n_patterns,)
        The subset of each pattern, ascending.
    row : ndarray of int64, shape (n_patterns,)
        A row of ``X`` holding the pattern on that subset.
    count : ndarray of float64, shape (n_patterns,)
        How many rows share it (the sum of their weights). Integer weights give the counts of
        the data with each row repeated that many times, exactly.
    inverse : ndarray of int64, shape (n_rows, n_subsets)
        Only with ``return_inverse``: the pattern (index into the outputs above) of each
        row on each subset.

    Notes
    -----
    Subsets of equal size are coded together (:func:`~skmrf._data.encode_rows`) in chunks of
    about ``2^22`` codes and each column is sorted once: ``O(n_rows log n_rows)`` per subset,
    no loop over rows. A subset with ``2^62`` joint states or more is compressed by sorting
    its rows (``np.unique``), one subset at a time.
    """
    n_rows = X.shape[0]
    sizes = np.array([len(s) for s in subsets])
    out_sub, out_row, out_cnt, out_inv, out_cols = [], [], [], [], []
    n_found = 0
    for s in np.unique(sizes):
        members = np.flatnonzero(sizes == s)
        var = np.array([subsets[m] for m in members], dtype=np.int64)
        total = np.prod(n_states[var].astype(np.float64), axis=1)
        strides = c_order_strides(n_states[var])
        step = max(1, _CHUNK // (n_rows * s))
        for a in range(0, len(members), step):
            b = slice(a, a + step)
            if total[b].max() < _MAX_CODE:
                parts = [(members[b], distinct_per_column(encode_rows(X, var[b], strides[b]), weight))]
            else:
                wide = range(a, min(a + step, len(members)))
                parts = [(members[m : m + 1], _distinct_rows(X[:, var[m]], weight)) for m in wide]
            for cols, (column, row, count, inverse) in parts:
                out_sub.append(cols[column])
                out_row.append(row)
                out_cnt.append(count.astype(np.float64))
                out_inv.append(inverse + n_found)
                out_cols.append(cols)
                n_found += len(row)
    sub = np.concatenate(out_sub)
    order = np.argsort(sub, kind="stable")
    result = sub[order], np.concatenate(out_row)[order], np.concatenate(out_cnt)[order]
    if not return_inverse:
        return result
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    inverse = np.empty((n_rows, len(subsets)), dtype=np.int64)
    for cols, inv in zip(out_cols, out_inv):
        inverse[:, cols] = position[inv]
    return (*result, inverse)


# -- Statistics accumulated by row chunks -------------------------------------------------------
#
# The pseudo-likelihood's records path reads its data only through the distinct configurations
# of every variable's Markov blanket and their counts, and EM through its distinct rows and their
# counts: sums over rows. Each row chunk of a memmap or a dask array is compressed on its own (on
# the worker that holds it), and two chunks' results are merged by :func:`merge_records` or
# :func:`merge_distinct_rows` (``op`` of :func:`~skmrf._data.reduce_row_chunks`), so only the
# compressed statistics are ever kept or sent.


def state_dtype(max_states):
    """The narrowest native integer type holding states ``0..max_states - 1``."""
    return np.uint8 if max_states <= 1 << 8 else np.uint16 if max_states <= 1 << 16 else np.int32


def _as_states(chunk, dtype):
    """A chunk's (validated, integral) states as ``dtype`` (a float memmap's values included)."""
    return np.asarray(chunk).astype(dtype, copy=False)


def padded_blankets(blankets, n_states):
    """The blankets as one int64 matrix ``(n_variables, width)`` (padded with variable 0), a mask of
    the real entries, and their C-order strides (0 on the padding), or None when some blanket has
    ``2^62`` joint states or more (its configurations are then ordered by their values)."""
    width = max(len(b) for b in blankets)
    real = np.arange(width)[None, :] < np.array([len(b) for b in blankets])[:, None]
    B = np.zeros((len(blankets), width), dtype=np.int64)
    B[real] = np.concatenate([np.asarray(b, dtype=np.int64) for b in blankets])
    k = np.where(real, np.asarray(n_states, dtype=np.int64)[B], 1)
    total = np.prod(k.astype(np.float64), axis=1)
    strides = np.where(real, c_order_strides(k), 0) if total.max() < _MAX_CODE else None
    return B, real, strides


class BlanketRecords:
    """Distinct configurations of every variable's Markov blanket in some rows, with counts.

    Record ``r`` is variable ``var[r]`` with its blanket (``{v}`` and its neighbours, ascending)
    in the states ``values[r, :len(blanket)]``; ``count[r]`` rows show it (int64), or the sum of
    their weights (float64). Records are ordered by variable, then by configuration (its C-order
    code, i.e. lexicographically), as :func:`distinct_projections` orders them, so that the
    records of the whole data are the same arrays, in the same order, whether they were made at
    once or merged from row chunks in any grouping.

    Attributes
    ----------
    var : ndarray of int64, shape (n_records,)
    values : ndarray of int, shape (n_records, width)
        The blanket's states, in the narrowest integer type (0 beyond the blanket's length).
    count : ndarray of int64 or float64, shape (n_records,)
    code : ndarray of int64, shape (n_records,), or None
        The configuration's C-order code (the sort key within a variable), or None when some
        blanket is too wide to code.
    """

    __slots__ = ("var", "values", "count", "code")

    def __init__(self, var, values, count, code):
        self.var, self.values, self.count, self.code = var, values, count, code

    def __len__(self):
        return len(self.var)


def blanket_records(X, blankets, n_states, weight=None):
    """The :class:`BlanketRecords` of the rows ``X`` (in memory, or one chunk of a memmap or a dask array).

    Parameters
    ----------
    X : ndarray of int, shape (n_rows, n_variables)
    blankets : sequence of tuple of int
        Each variable's blanket, ascending and containing the variable.
    n_states : ndarray of int, shape (n_variables,)
    weight : ndarray of float64 of shape (n_rows,), optional
        Row weights (``count`` then sums them, in float64).
    """
    n_states = np.asarray(n_states)
    X = _as_states(X, X.dtype if np.issubdtype(X.dtype, np.integer) else np.int64)
    if not X.shape[0]:  # an empty block of a dask array
        B, _, strides = padded_blankets(blankets, n_states)
        none = np.zeros(0, dtype=np.int64)
        values = np.zeros((0, B.shape[1]), dtype=state_dtype(int(n_states.max())))
        return BlanketRecords(
            none, values, none if weight is None else none.astype(np.float64), None if strides is None else none
        )
    var, row, count = distinct_projections(X, blankets, n_states, weight=weight)
    B, real, strides = padded_blankets(blankets, n_states)
    values = np.where(real[var], X[row[:, None], B[var]], 0).astype(state_dtype(int(n_states.max())))
    code = None if strides is None else np.einsum("rs,rs->r", values, strides[var], dtype=np.int64)
    count = count.astype(np.int64) if weight is None else count  # integer counts: exact in any grouping
    return BlanketRecords(var, values, count, code)


def merge_records(a, b):
    """The :class:`BlanketRecords` of the union of two sets of rows (``op`` of the row-chunk reduction)."""
    var = np.concatenate([a.var, b.var])
    code = None if a.code is None else np.concatenate([a.code, b.code])
    span = float(code.max(initial=0)) + 1.0 if code is not None else np.inf
    if float(var.max(initial=0)) * span + span < _MAX_CODE:
        # One int64 key, ordered as (variable, code); each input is sorted, and a stable sort of
        # two sorted runs is a merge (timsort).
        key = var * int(span) + code
        order = np.argsort(key, kind="stable")
        key = key[order]
        new = np.ones(len(key), dtype=bool)
        new[1:] = key[1:] != key[:-1]
    else:  # by the variable, then the values (or the code)
        values = np.concatenate([a.values, b.values])
        keys = (code,) if code is not None else tuple(values.T[::-1])
        order = np.lexsort((*keys, var))
        new = np.zeros(len(var), dtype=bool)
        new[:1] = True
        for k in (var, *keys):
            k = k[order]
            new[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(new)
    first = order[starts]
    count = np.add.reduceat(np.concatenate([a.count, b.count])[order], starts) if len(starts) else a.count[:0]
    values = np.concatenate([a.values, b.values])[first]
    return BlanketRecords(var[first], values, count, None if code is None else code[first])


class DistinctRows:
    """Distinct rows with counts, while they are accumulated by row chunks: ``values`` are the
    rows' states plus one (0 for a missing entry) in the narrowest unsigned type, ascending
    lexicographically; ``count`` how many rows show each (int64), or the sums of their weights
    (float64). :func:`finish_distinct_rows` gives the states back."""

    __slots__ = ("values", "count")

    def __init__(self, values, count):
        self.values, self.count = values, count

    def __len__(self):
        return len(self.values)


def _unique_rows(shifted, count=None):
    """Distinct rows of ``shifted`` (states + 1, unsigned) and the sums of ``count`` (or the rows)."""
    # Big-endian unsigned integers compare byte by byte (memcmp) in the order of their values.
    key = np.ascontiguousarray(shifted.astype(shifted.dtype.newbyteorder(">"), copy=False))
    key = key.view(np.dtype((np.void, key.dtype.itemsize * max(1, key.shape[1])))).ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if count is None:
        total = np.bincount(inverse, minlength=len(first)).astype(np.int64)
    elif count.dtype.kind == "f":
        total = np.bincount(inverse, weights=count, minlength=len(first))
    else:  # integer counts summed exactly (bincount would sum them in float64)
        total = np.zeros(len(first), dtype=np.int64)
        np.add.at(total, inverse, count)
    return DistinctRows(shifted[first], total)


def distinct_rows(X, n_states, weight=None):
    """The distinct rows of integer ``X`` (``-1`` for missing), with counts (summed ``weight``):
    one chunk's share of :func:`merge_distinct_rows`. ``values`` are kept as the states plus one,
    in the narrowest unsigned type, until :func:`finish_distinct_rows`."""
    shifted = (np.asarray(X) + 1).astype(state_dtype(int(np.max(n_states)) + 1))
    return _unique_rows(shifted, weight)


def merge_distinct_rows(a, b):
    """The distinct rows of the union of two sets of rows (``op`` of the row-chunk reduction)."""
    return _unique_rows(np.concatenate([a.values, b.values]), np.concatenate([a.count, b.count]))


def finish_distinct_rows(distinct):
    """``(values, count)`` of merged distinct rows: int64 states with ``-1`` for missing, float64
    counts, rows of count 0 (all their rows had weight 0) dropped."""
    keep = distinct.count > 0
    return distinct.values[keep].astype(np.int64) - 1, distinct.count[keep].astype(np.float64)
