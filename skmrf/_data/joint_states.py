"""Codes of joint states of variable subsets, and their counts.

The joint state of variables ``(v_1, ..., v_s)`` with ``K_j`` states each is coded in C order,
``sum_j x_{v_j} * stride_j`` with ``stride_j = prod_{l > j} K_l``, so that a flat table of
shape ``(K_1, ..., K_s)`` is indexed by the code.
"""

from __future__ import annotations

import numpy as np

from .._utils._budgets import COUNT_CHUNK as _COUNT_CHUNK

__all__ = ["c_order_strides", "count_joint_states", "encode_rows", "transposed_states"]


def c_order_strides(n_states) -> np.ndarray:
    """C-order strides of joint states, ``stride[..., j] = prod(n_states[..., j + 1:])``.

    Parameters
    ----------
    n_states : array-like of int, shape (..., s)
        States of each variable of one subset (1-D) or of several subsets (one per row).

    Returns
    -------
    ndarray of int64, same shape as ``n_states``
    """
    k = np.asarray(n_states, dtype=np.int64)
    strides = np.ones_like(k)
    for j in range(k.shape[-1] - 2, -1, -1):
        strides[..., j] = strides[..., j + 1] * k[..., j + 1]
    return strides


def encode_rows(X, variables, strides) -> np.ndarray:
    """Codes of the rows of ``X`` on each subset, shape ``(n_rows, n_subsets)``.

    Parameters
    ----------
    X : ndarray of int, shape (n_rows, n_variables)
    variables : ndarray of int, shape (n_subsets, s)
        One subset of ``s`` variables per row.
    strides : ndarray of int, shape (n_subsets, s)
        From :func:`c_order_strides`.
    """
    return np.einsum("nms,ms->nm", X[:, variables], strides)


def transposed_states(X, max_states) -> np.ndarray:
    """``X.T`` as a C-contiguous array in the narrowest type holding ``max_states`` states.

    Counting gathers whole rows of the transposed data (contiguous reads); uint8 states
    make the gathers 8 times lighter than int64.
    """
    return np.ascontiguousarray(np.asarray(X).T, dtype=np.uint8 if max_states <= 256 else np.int32)


def count_joint_states(XT, variables, strides, n_configs, dtype=np.float64, weight=None) -> np.ndarray:
    """Counts (or weighted counts) of the joint states of ``X[:, variables[b]]`` for every subset ``b``.

    Parameters
    ----------
    XT : ndarray of int, shape (n_variables, n_rows)
        The data transposed and C-contiguous (:func:`transposed_states`).
    variables : ndarray of int, shape (n_subsets, s)
    strides : ndarray of int, shape (s,) or (n_subsets, s)
        C-order strides (:func:`c_order_strides`), shared by every subset or one row each.
    n_configs : int
        Number of joint states of the largest subset (columns of the result).
    dtype : dtype, default=float64
        Of the result; a narrower integer type that holds the number of rows makes the
        counts of a row chunk lighter to keep and to send (:func:`~skmrf._data.reduce_row_chunks`).
    weight : ndarray of float64 of shape (n_rows,), optional
        The weight of each row (``sample_weight``): the counts are sums of weights, in float64.

    Returns
    -------
    ndarray of ``dtype``, shape (n_subsets, n_configs)
        Column ``c`` of row ``b`` counts the rows (sums their weights) whose code on subset ``b`` is ``c``.

    Notes
    -----
    Codes are built in the narrowest unsigned type that holds ``n_configs``, one position
    of the subsets at a time (a loop over ``s``, never over rows), then one ``bincount``
    per subset. Temporaries are bounded by chunking the subsets.
    """
    variables = np.asarray(variables, dtype=np.int64)
    strides = np.asarray(strides, dtype=np.int64)
    n_rows = XT.shape[1]
    out = np.empty((len(variables), n_configs), dtype=dtype)
    dtype = np.uint8 if n_configs <= 1 << 8 else np.uint16 if n_configs <= 1 << 16 else np.int64
    step = max(1, _COUNT_CHUNK // max(1, n_rows))
    for a in range(0, len(variables), step):
        blk = variables[a : a + step]
        codes = np.zeros((len(blk), n_rows), dtype=dtype)
        for j in range(variables.shape[1]):  # loop over the positions of the subsets, not rows
            if strides.ndim == 1:
                stride = dtype(strides[j])
            else:
                stride = strides[a : a + step, j, None].astype(dtype)
            codes += XT[blk[:, j]].astype(dtype, copy=False) * stride
        for b, row in enumerate(codes):  # loop over subsets: one bincount each
            out[a + b] = np.bincount(row, weights=weight, minlength=n_configs)
    return out
