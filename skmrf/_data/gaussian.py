"""Row statistics of the Gaussian estimators: location, scale, and sample covariances.

Every statistic is a (weighted) sum or a maximum over rows, taken through
:class:`~skmrf._data.Rows` as the discrete estimators take theirs: from an
in-memory array, a ``numpy.memmap`` or a ``dask.array``, block of rows by
block, so peak memory is a block (about ``CHUNK_BYTES``) plus the statistic.

Sums are bit for bit the same whatever the chunking (memmap chunks, dask
blocks, in memory): they are taken over a fixed grid of row blocks
(:meth:`Rows.grid_sum`), each block's sum rounded onto a grid on which any
order of addition is exact (:func:`~skmrf._data.rows.on_grid`). The bound each
grid needs is known before the pass: ``sum |w x| <= sum(w) max |x|`` for the
column sums, one per row for the squares of data divided by their largest
value, and ``sum(w) max factor^2`` for any product of two columns in the
fit's units (Cauchy-Schwarz on the unit diagonal).

A row of weight ``w`` counts as ``w`` rows: sums are weighted, and a block in
the fit's units is ``sqrt(w) (x - location) / peak / rms * factor``, so that
its Gram matrix is the weighted sum of products.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_array

from .._utils.validation import check_real
from .chunks import reduce_row_chunks, shift_rows
from .rows import Rows, over_blocks

__all__ = ["StandardisedRows", "gram_statistic", "standardise"]

#: The end of the message refusing NaN or infinity in X.
NON_FINITE_ADVICE = "A Gaussian MRF needs every value observed and finite; drop or impute missing values."


def checked_chunk(chunk, start=0, validate=True):
    """A chunk of rows (starting at row ``start``) as float64, refused as X is in memory (NaN, infinity).

    ``validate=False``: the chunk is a slice of an in-memory X validated already.
    """
    if not validate:
        return chunk
    chunk = check_array(chunk, dtype=None, ensure_min_samples=1, ensure_all_finite=False)
    try:
        return check_real(chunk, advice=NON_FINITE_ADVICE)
    except ValueError as err:
        raise shift_rows(err, start) from None


def column_ranges(chunk, start, weights, validate, block_rows):
    """``(min, max)`` per column over the rows of positive weight, the chunk validated (if
    ``validate``) ``block_rows`` rows at a time."""
    low, high = np.full(chunk.shape[1], np.inf), np.full(chunk.shape[1], -np.inf)
    for a in range(0, chunk.shape[0], block_rows):
        block = checked_chunk(chunk[a : a + block_rows], start + a, validate)
        if weights is not None:
            block = block[weights[start + a : start + a + len(block)] > 0]
        if len(block):
            np.minimum(low, block.min(axis=0), out=low)
            np.maximum(high, block.max(axis=0), out=high)
    return low, high


def _float_block(block, w):
    """The block as C-contiguous float64 (the same arithmetic whatever the layout of X)."""
    return np.ascontiguousarray(block, dtype=np.float64)


def column_sums(block, w):
    """``sum w x`` per column."""
    block = _float_block(block, w)
    return block.sum(axis=0) if w is None else w @ block


def centred_peak(block, w, location):
    """Largest ``sqrt(w) |x - location|`` per column."""
    Z = _float_block(block, w) - location
    if w is not None:
        Z *= np.sqrt(w)[:, None]
    return np.max(np.abs(Z), axis=0) if len(Z) else np.zeros(Z.shape[1])


def centred_squares(block, w, location, peak):
    """``sum w ((x - location) / peak)^2`` per column."""
    Z = (_float_block(block, w) - location) / peak
    if w is not None:
        Z *= np.sqrt(w)[:, None]
    return np.einsum("ij,ij->j", Z, Z)


class StandardisedRows:
    """Validated rows (:class:`~skmrf._data.Rows`) and the affine map to the fit's units.

    A block of rows, transposed, is centred by ``location``, multiplied by the square
    roots of the row weights (if any), divided by ``peak`` and by ``rms`` and
    multiplied by ``factor`` (if not None).

    Parameters
    ----------
    rows : Rows
        Real-valued rows (``n_states=None``) and their weights.
    location, peak, rms : ndarray of shape (n_features,)
    factor : ndarray of shape (n_features,) or None

    Attributes
    ----------
    XT : ndarray of shape (n_features, n_samples) or None
        The whole data in the fit's units, after :meth:`materialise`.
    bound : float
        A bound on ``sum_t |z_ti z_tj|`` for any two columns ``i, j`` in the fit's units
        (with a factor 2 for rounding): the grid of every Gram statistic.
    """

    def __init__(self, rows, location, peak, rms, factor):
        self.rows, self.location, self.peak, self.rms, self.factor = rows, location, peak, rms, factor
        top = 1.0 if factor is None else max(1.0, float(np.max(factor)) ** 2)
        self.bound = 2.0 * rows.total * top
        self.XT = None

    @property
    def shape(self):
        """``(n_features, n_samples)``, as the transposed data it stands for."""
        return self.rows.n_columns, self.rows.n_rows

    @property
    def params(self):
        """The arguments of :func:`standardised_chunk` after ``chunk, weights``."""
        return self.location, self.peak, self.rms, self.factor

    def materialise(self):
        """Keep the whole data in the fit's units in memory (:attr:`XT`), for a kernel that
        gathers variables; :meth:`reduce` then reads it instead of X."""
        X, weights = self.rows.dense()
        self.XT = standardised_chunk(X, weights, *self.params)
        return self

    def reduce(self, func, *args):
        """``sum over blocks of func(ZT, *args)``, ``ZT`` a block of rows in the fit's units (one row
        per variable), bit for bit whatever the chunking (:meth:`Rows.grid_sum`).

        ``func`` returns products of two columns of ``ZT`` summed over its rows (a Gram statistic,
        bounded by :attr:`bound`).
        """
        if self.XT is None:
            params, name = self.params, func.__name__
            return self.rows.grid_sum(_standardised_apply, func, params, args, bound=self.bound, name=name)
        # The blocks of columns of XT: the same contiguous arrays as the chunks give.
        B = self.rows.block_rows()
        return over_blocks(self.XT.T, 0, _columns_apply, None, B, self.bound, np.add, (func, args))


def _columns_apply(block_t, _, func, args):
    """``func`` of a block of columns of ``XT`` (given as rows of ``XT.T``), as a contiguous array."""
    return func(np.ascontiguousarray(block_t.T), *args)


def standardise(X, weights, assume_centered, check_variance, units, validate):
    """X (in memory, a memmap or a dask array) in the fit's units: ``(data, n_div, scale, mu)``.

    Four passes over the rows, each by blocks: the column ranges (validating each block when
    ``validate``), the column sums (the location), the largest centred absolute values (with
    weights only) and the sums of squares (the scale). ``check_variance(peak)`` returns the columns of zero variance
    (raising for them when they are not allowed); ``units(peak, rms, zero)`` returns
    ``(scale, mu, factor)`` (see the Gaussian estimators' ``_units``). ``data`` is the
    :class:`StandardisedRows` (``data.location`` the location); ``n_div`` is the number of rows,
    or the sum of the weights.
    """
    rows = Rows(X, None, weights)
    n_div = rows.total
    B = rows.block_rows()
    low, high = reduce_row_chunks(X, column_ranges, weights, validate, B, op=(np.minimum, np.maximum), block_rows=B)
    if assume_centered:
        location = np.zeros(rows.n_columns)
    else:
        magnitude = np.where(np.isfinite(low), np.maximum(np.abs(low), np.abs(high)), 0.0)
        location = rows.grid_sum(column_sums, bound=2.0 * n_div * magnitude) / n_div
        # The rounded mean of a constant column c can differ from c, which would leave a constant
        # residue c - mean(c) (variance zero) in the centred data. With weights, "constant" is
        # over the rows of positive weight.
        const = high == low
        location[const] = low[const]
    if weights is None:
        # max |x - location| itself: rounding is monotone and symmetric, so the largest rounded
        # difference is the rounded difference of the extremes (one pass over X fewer).
        peak = np.maximum(high - location, location - low)
    else:
        peak = rows.block_reduce(centred_peak, location, op=np.maximum)
    zero = check_variance(peak)
    peak[zero] = 1.0
    # Each term (sqrt(w) (x - location) / peak)^2 is at most 1.
    rms = np.sqrt(rows.grid_sum(centred_squares, location, peak, bound=2.0 * rows.n_rows) / n_div)
    scale, mu, factor = units(peak, rms, zero)
    return StandardisedRows(rows, location, peak, rms, factor), n_div, scale, mu


def standardised_chunk(chunk, weights, location, peak, rms, factor):
    """Rows in the fit's units, transposed: ``(n_features, rows)``; ``weights`` those of the rows."""
    ZT = np.asarray(chunk, dtype=np.float64).T.copy()
    ZT -= location[:, None]
    if weights is not None:
        ZT *= np.sqrt(weights)[None, :]
    ZT /= peak[:, None]
    ZT /= rms[:, None]
    if factor is not None:
        ZT *= factor[:, None]
    return ZT


def _standardised_apply(block, weights, func, params, args):
    return func(standardised_chunk(block, weights, *params), *args)


def gram_statistic(data, func, *args):
    """``func(ZT, *args)`` summed over the data: :meth:`StandardisedRows.reduce`, or ``func`` of an
    in-memory array of standardised data, one row per variable (tests, research scripts)."""
    return data.reduce(func, *args) if isinstance(data, StandardisedRows) else func(data, *args)


def dense_gram(ZT):
    """``ZT ZT^T``: the (unnormalised) dense sample covariance of a chunk."""
    return ZT @ ZT.T


#: Fewest entries of an offset that :func:`pattern_gram` takes as a band of rows.
_MIN_BAND = 256


def pattern_gram(ZT, rows, cols, chunk_entries=1 << 23):
    """``sum_t z_t[rows] z_t[cols]``: the (unnormalised) sample covariance on a pattern.

    The entries are taken by their offset ``|cols - rows|``: an offset with at least
    ``_MIN_BAND`` entries (so that a random pattern's thousands of offsets are no Python loop)
    that fill at least a third of their span of rows (a lattice's few offsets, the diagonal) is
    one dot product per row of two row ranges of ``ZT``, views that are never copied; the others
    gather their rows (``chunk_entries`` entries at a time). The 5-point lattice at p = 6084,
    n = 1000: 0.011 s against 0.052 s gathering every entry.
    """
    q, m = len(rows), ZT.shape[1]
    out = np.empty(q)
    step = max(1, chunk_entries // max(1, m))
    low = np.minimum(rows, cols)
    offset = np.abs(np.asarray(cols) - np.asarray(rows))
    order = np.lexsort((low, offset))
    first = np.flatnonzero(np.diff(offset[order], prepend=-1))
    count = np.diff(np.append(first, q))
    span = low[order[first + count - 1]] - low[order[first]] + 1
    dense = (3 * count >= span) & (count >= _MIN_BAND)
    banded = np.zeros(q, dtype=bool)
    for f, k in zip(first[dense], count[dense]):
        idx = order[f : f + k]
        d, a, b = int(offset[idx[0]]), int(low[idx[0]]), int(low[idx[-1]]) + 1
        band = np.empty(b - a)
        for c in range(a, b, step):
            e = min(b, c + step)
            band[c - a : e - a] = np.einsum("ij,ij->i", ZT[c:e], ZT[c + d : e + d])
        out[idx] = band[low[idx] - a]
        banded[idx] = True
    rest = np.flatnonzero(~banded)
    for a in range(0, len(rest), step):
        idx = rest[a : a + step]
        out[idx] = np.einsum("ij,ij->i", ZT[rows[idx]], ZT[cols[idx]])
    return out


def _shrink_diagonal(values, slots, variables, n_div, shrinkage, mu):
    """``values / n_div``, then ``(1 - shrinkage) values + shrinkage mu`` at the diagonal ``slots`` (in place)."""
    values /= n_div
    if shrinkage:
        values *= 1.0 - shrinkage
        values[slots] += shrinkage * (mu[variables] if np.ndim(mu) else mu)
    return values


def covariance_on_pattern(data, rows, cols, n_div, shrinkage=0.0, mu=1.0):
    """The (shrunk) sample covariance on a pattern, ``S[rows, cols]``.

    Parameters
    ----------
    data : StandardisedRows or ndarray of shape (p, n)
        Standardised data (an array: one row per variable).
    rows, cols : ndarray of int64 of shape (q,)
        Positions of the entries.
    n_div : float
        Divisor (the number of samples, or the sum of the weights).
    shrinkage : float, default=0.0
        Weight of the ridge target.
    mu : float or ndarray of shape (p,), default=1.0
        Ridge target, one per variable or common.

    Returns
    -------
    ndarray of shape (q,)
    """
    s = gram_statistic(data, pattern_gram, rows, cols)
    diag = np.flatnonzero(rows == cols)
    return _shrink_diagonal(s, diag, rows[diag], n_div, shrinkage, mu)


def dense_covariance_rows(data, n_div, shrinkage=0.0, mu=1.0):
    """The dense (shrunk) sample covariance of standardised data (:class:`StandardisedRows`)."""
    S = gram_statistic(data, dense_gram)
    p = S.shape[0]
    S = _shrink_diagonal(S.reshape(-1), np.arange(p) * (p + 1), np.arange(p), n_div, shrinkage, mu)
    return S.reshape(p, p)
