"""Compression of rows to their distinct patterns on variable subsets, with counts.

An objective that depends on the data only through the joint states of some subsets of the
variables (a Markov blanket, a sub-network of always-observed variables) needs each distinct
pattern once, weighted by how many rows show it.
"""

from __future__ import annotations

import numpy as np

from .joint_states import c_order_strides, encode_rows

__all__ = ["distinct_per_column", "distinct_projections"]

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
