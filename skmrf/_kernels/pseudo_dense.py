"""Pseudo-likelihood of pairwise models at the scale of direct coupling analysis (DCA).

The records of :class:`~skmrf._kernels.pseudo.PseudoLikelihoodObjective` (distinct Markov-blanket
configurations) are few on sparse graphs with few states, and as many as the rows times the
columns on a complete graph over a protein alignment (``q = 21`` states), where building and
evaluating them costs ``O(rows x parameters)``. Here the rows are one-hot coded instead
(``O[n, (j, b)] = [x_nj = b]``) and every conditional's logits come from one matrix product
with the symmetric coupling matrix ``W[(i, a), (j, b)] = J_ij(a, b)``:

.. math::

    Z = O W + h, \\qquad
    R_{n,(i,a)} = \\frac{w_n}{W_{tot}} (P_i(a \\mid x_{n,-i}) - [x_{ni} = a]), \\qquad
    \\frac{\\partial f}{\\partial J_{ij}(a, b)} = (R^T O)_{(i,a),(j,b)} + (R^T O)_{(j,b),(i,a)},

two products per evaluation with the one-hot rows ``O`` as a sparse matrix (one entry per
row and column): ``O W`` sums ``L`` rows of ``W`` per row and ``R^T O`` adds each row of ``R``
to ``L`` rows, ``2 n L D`` operations for ``D = L (q - 1)`` one-hot columns (``q`` times fewer
than dense products, and faster than them in BLAS, measured at ``q = 21``: :data:`BLOCK_WIDTH`),
with memory ``O(parameters + rows x columns)``: the rows are taken by chunks and never
expanded to ``rows x parameters``. The columns' conditionals are split into blocks of
columns, evaluated in parallel (threads: numpy and scipy's sparse products release the GIL).

Precision: ``W`` and ``O`` are float32 in the products (exact for ``O``; ``W`` rounded to 24
bits, the logits summed in float32), the softmax is in the products' dtype, the loss and the
accumulation of the gradient over row chunks are float64.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import sparse

from .._solvers import minimize_in_box, projected_max
from .._utils._budgets import DENSE_BLOCK_BYTES, DENSE_CHUNK_BYTES, SCATTER_ENTRIES
from .._utils._sklearn_compat import delayed

__all__ = ["BLOCK_WIDTH", "CHUNK_ENTRIES", "DENSE_CHUNK_BYTES", "DensePseudoLikelihood", "OneHotIndex"]

#: One-hot coordinates of a block of columns, at most (the columns' conditionals are evaluated
#: block by block), and logits of one row chunk of a block, at most: the sparse products run
#: from caches then. Measured on DHFR (3469 rows, 159 columns, q = 21, one core): one evaluation's
#: two products took 0.58-0.67 s CPU with blocks of 12 to 32 columns and chunks of 256 to 768
#: rows, 1.2-1.4 s with one block of all 159 columns and 1200 to 3469 rows.
BLOCK_WIDTH = 512
CHUNK_ENTRIES = 1 << 18


class _Group(NamedTuple):
    """Cliques of one shape: where their blocks are in ``x`` and where they go in ``(H, W)``."""

    first: np.ndarray  # first variable of each clique
    second: np.ndarray | None  # second variable (None for single-variable cliques)
    shape: tuple  # block shape in one-hot coordinates
    start: int | None  # start in x when the blocks are contiguous and in order
    index: np.ndarray | None  # (n_cliques, size) positions in x otherwise


class OneHotIndex:
    """Where the entries of a pairwise model's parameter vector sit in the one-hot coordinates.

    Parameters
    ----------
    layout : CliqueLayout
        A layout with cliques of one or two variables.
    tables : bool
        False: ``x`` is ``theta`` (blocks of states ``>= 1``, one-hot coordinates ``1..K-1``);
        True: ``x`` is the flat full tables (every state, coordinates ``0..K-1``).

    Attributes
    ----------
    first : int
        The first state with a one-hot coordinate (1 for ``theta``, 0 for tables).
    d : int
        Coordinates per column, ``max K - first`` (columns with fewer states are padded).
    D : int
        One-hot width ``n_columns * d``.
    invalid : ndarray of bool of shape (n_columns, d)
        Padding coordinates (states a column does not have).
    size : int
        Length of ``x``.
    """

    def __init__(self, layout, tables):
        k = layout.n_states
        if any(len(c) > 2 for c in layout.cliques):
            raise ValueError("The one-hot pseudo-likelihood handles cliques of one or two variables only.")
        self.first = 0 if tables else 1
        self.L = len(k)
        self.d = int(k.max()) - self.first
        self.D = self.L * self.d
        self.invalid = np.arange(self.d)[None, :] >= (k - self.first)[:, None]
        offsets = layout.table_offsets if tables else layout.block_offsets
        self.size = layout.n_table if tables else layout.n_params
        by_shape = {}
        for c, clique in enumerate(layout.cliques):
            shape = tuple(int(k[v]) - self.first for v in clique)
            by_shape.setdefault(shape, []).append(c)
        self.groups = []
        for shape, members in by_shape.items():
            members = np.array(members)
            var = np.array([layout.cliques[c] for c in members], dtype=np.int64)
            size = int(np.prod(shape))
            starts = offsets[members]
            if np.array_equal(starts, starts[0] + size * np.arange(len(members))):
                start, index = int(starts[0]), None
            else:
                start, index = None, starts[:, None] + np.arange(size)
            second = var[:, 1] if len(shape) == 2 else None
            self.groups.append(_Group(var[:, 0], second, shape, start, index))

    def blocks(self, x, group):
        """The blocks of ``group`` in ``x``, shape ``(n_cliques, *group.shape)`` (a view when contiguous)."""
        n = len(group.first)
        if group.start is not None:
            return x[group.start : group.start + n * int(np.prod(group.shape))].reshape(n, *group.shape)
        return x[group.index].reshape(n, *group.shape)

    def add_blocks(self, g, group, values, select=None):
        """``g[blocks of group (those in select)] += values``."""
        size = int(np.prod(group.shape))
        if select is None:
            select = np.arange(len(group.first))
        if group.start is not None and len(select) and select[-1] - select[0] == len(select) - 1:
            # contiguous cliques: a slice, no index array of the parameters' size
            lo = group.start + size * int(select[0])
            g[lo : lo + size * len(select)] += values.reshape(-1)
            return
        if group.start is not None:
            pos = group.start + size * select[:, None] + np.arange(size)
        else:
            pos = group.index[select]
        g[pos.ravel()] += values.reshape(len(select), size).ravel()

    def fill(self, x, H, W4):
        """Write ``x`` into the fields ``H`` (n_columns, d) and the symmetric couplings ``W4`` (L, d, L, d)."""
        for grp in self.groups:
            blk = self.blocks(x, grp)
            if grp.second is None:
                H[grp.first, : grp.shape[0]] = blk
            else:
                k1, k2 = grp.shape
                W4[grp.first, :k1, grp.second, :k2] = blk
                W4[grp.second, :k2, grp.first, :k1] = blk.transpose(0, 2, 1)

    def codes(self, X):
        """One-hot column of every entry of ``X`` (int32; -1 where the state has no coordinate)."""
        codes = X.astype(np.int32) - self.first + np.arange(self.L, dtype=np.int32) * self.d
        if self.first:
            codes[X < self.first] = -1
        return codes


def one_hot(codes, D, dtype):
    """Dense one-hot rows ``(len(codes), D)`` from :meth:`OneHotIndex.codes` (a view of a
    ``(len(codes), D + 1)`` array whose last column takes the codes -1)."""
    m = codes.shape[0]
    out = np.zeros((m, D + 1), dtype=dtype)
    out[np.arange(m)[:, None], codes] = 1
    return out[:, :D]


def one_hot_chunks(codes, D, dtype, chunk_rows):
    """The one-hot rows of :meth:`OneHotIndex.codes` as sparse matrices, by row chunks:
    ``[(O, O^T, state), ...]`` with ``O`` CSR ``(m, D)`` (one entry per row and column whose state
    has a coordinate), ``O^T`` its transpose in CSR, and ``state`` ``(m, n_columns)`` the coordinate
    of each entry within its column (-1 where it has none)."""
    L = codes.shape[1]
    d = D // max(L, 1)
    out = []
    for r0 in range(0, codes.shape[0], chunk_rows):
        c = codes[r0 : r0 + chunk_rows]
        valid = c >= 0
        indptr = np.zeros(c.shape[0] + 1, dtype=np.int64)
        np.cumsum(valid.sum(axis=1), out=indptr[1:])
        O = sparse.csr_matrix((np.ones(int(indptr[-1]), dtype=dtype), c[valid], indptr), shape=(c.shape[0], D))
        state = np.where(valid, c - np.arange(L, dtype=np.int32) * d, -1)
        out.append((O, O.T.tocsr(), state))
    return out


def _block_terms(index, W, H, chunks, scale, c0, c1, g):
    """Loss of the conditionals of columns ``c0 .. c1 - 1``; their gradient is added to ``g``.

    ``W`` (D, D) is the symmetric coupling matrix in the product dtype, ``H`` (n_columns, d)
    the fields (float64), ``chunks`` the sparse one-hot rows by chunks (:func:`one_hot_chunks`),
    ``scale`` the row weights over their sum. Per chunk, one sparse product ``O @ W[:, block]``
    for the logits (``n L`` rows of ``W`` summed instead of a dense product's ``n D``) and one
    ``O^T @ R`` for the gradient rows of the block, accumulated in float64.
    """
    d, D, first = index.d, index.D, index.first
    lo, hi, B = c0 * d, c1 * d, c1 - c0
    Wt = np.ascontiguousarray(W[lo:hi].T)  # = W[:, lo:hi] (W is symmetric), rows contiguous for the product
    invalid = index.invalid[c0:c1]
    any_invalid = bool(invalid.any())
    GBt = np.zeros((D, hi - lo))
    gh = np.zeros((B, d))
    f = 0.0
    dtype = W.dtype
    Hb = H[c0:c1].astype(dtype)
    r0 = 0
    for O, OT, state in chunks:
        m = O.shape[0]
        s = scale[r0 : r0 + m]
        r0 += m
        st = state[:, c0:c1]
        has = st >= 0  # the own state has a coordinate (not state 0 when first = 1)
        # flat positions of the own states in Z (m, B, d)
        pos = (np.arange(m)[:, None] * (B * d) + np.arange(B) * d + st)[has]
        Z = (O @ Wt).reshape(m, B, d)
        Z += Hb
        own = np.zeros((m, B), dtype=dtype)  # the own state's logit (0 for state 0 when first = 1)
        own[has] = Z.reshape(-1)[pos]
        if any_invalid:
            Z[:, invalid] = -np.inf
        mx = Z[:, :, 0].copy() if d == 1 else Z.max(axis=2)
        if first:  # the logit of state 0 is 0
            np.maximum(mx, 0, out=mx)
        Z -= mx[:, :, None]
        np.exp(Z, out=Z)
        S = Z[:, :, 0].copy() if d == 1 else Z.sum(axis=2)
        if first:
            S += np.exp(-mx)
        Z /= S[:, :, None]  # the conditional probabilities
        lse = np.log(S, dtype=np.float64)
        lse += mx
        f -= float(s @ (own - lse).sum(axis=1))  # in float64
        Z.reshape(-1)[pos] -= 1
        Z *= s.astype(dtype)[:, None, None]  # the residuals
        gh += Z.sum(axis=0, dtype=np.float64)
        GBt += OT @ Z.reshape(m, B * d)
    _gather_gradient(index, GBt.T, gh, c0, c1, g)
    return f


def _gather_gradient(index, GB, gh, c0, c1, g):
    """Add to the gradient vector ``g`` the terms from the one-hot blocks of columns ``c0 .. c1 - 1``:
    ``gh`` (their fields) and ``GB`` (their rows of ``R^T O``), each coupling getting its entry
    from both of its columns' rows when they are in the block."""
    B, d = c1 - c0, index.d
    GB4 = GB.reshape(B, d, index.L, d)
    for grp in index.groups:
        if grp.second is None:
            sel = np.flatnonzero((grp.first >= c0) & (grp.first < c1))
            if len(sel):
                index.add_blocks(g, grp, gh[grp.first[sel] - c0, : grp.shape[0]], sel)
            continue
        k1, k2 = grp.shape
        step = max(1, SCATTER_ENTRIES // (k1 * k2))  # cliques per gather: bounded temporaries
        sel = np.flatnonzero((grp.first >= c0) & (grp.first < c1))
        for s in (sel[a : a + step] for a in range(0, len(sel), step)):
            index.add_blocks(g, grp, GB4[grp.first[s] - c0, :k1, grp.second[s], :k2], s)
        sel = np.flatnonzero((grp.second >= c0) & (grp.second < c1))
        for s in (sel[a : a + step] for a in range(0, len(sel), step)):
            index.add_blocks(g, grp, GB4[grp.second[s] - c0, :k2, grp.first[s], :k1].transpose(0, 2, 1), s)


def _span_terms(args, spans, size):
    """Loss and gradient (one vector of ``size``) of the blocks of columns ``spans``, one after another."""
    g = np.zeros(size)
    f = sum(_block_terms(*args, c0, c1, g) for c0, c1 in spans)
    return f, g


class DensePseudoLikelihood:
    """Negative mean pseudo-log-likelihood plus ridge of a pairwise model, by one-hot products.

    Parameters
    ----------
    layout : CliqueLayout
        A pairwise layout (cliques of one or two variables).
    X : ndarray of int of shape (n_rows, n_columns)
    alpha : float or ndarray of shape (size,)
        Ridge ``alpha / 2 * ||x||^2`` (elementwise when a vector).
    weight : ndarray of shape (n_rows,), optional
    total : float, optional
        What the weighted sum is divided by (``n_rows`` or the sum of the weights).
    tables : bool, default=False
        Whether ``x`` is ``theta`` or the flat full tables (:class:`OneHotIndex`).
    dtype : numpy dtype, default=np.float32
        Of ``W`` and ``O`` in the two products.
    n_workers : int, default=1
        Threads (:meth:`split`).
    """

    def __init__(self, layout, X, alpha, weight=None, total=None, *, tables=False, dtype=np.float32, n_workers=1):
        self.index = index = OneHotIndex(layout, tables)
        self.ridge_runs = _runs(alpha, index.size)
        self.codes = index.codes(X)
        n = X.shape[0]
        total = float(n) if total is None else float(total)
        self.scale = (np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)) / total
        self.H = np.zeros((index.L, index.d))
        self.W = np.zeros((index.D, index.D), dtype=dtype)
        self.split(n_workers)

    @property
    def work(self):
        """Work of one evaluation: the ``2 n L D`` entries its two sparse one-hot products sum."""
        return 2.0 * self.codes.shape[0] * self.index.L * float(self.index.D)

    def split(self, n_workers):
        """Split the columns into blocks, ``n_workers`` groups of them (one per thread): at least
        enough blocks that each one's float64 gradient rows ``(block width, D)`` fit in
        :data:`DENSE_BLOCK_BYTES` and each is at most :data:`BLOCK_WIDTH` wide. Row chunks keep
        each block's temporaries within :data:`DENSE_CHUNK_BYTES` and its logits within
        :data:`CHUNK_ENTRIES`; the sparse one-hot rows of each chunk are built here, once."""
        L, d, D = self.index.L, self.index.d, self.index.D
        n_workers = max(1, min(n_workers, L))
        n_min = max(int(8 * D * D / DENSE_BLOCK_BYTES), -(-D // BLOCK_WIDTH))
        per_worker = max(1, -(-n_min // n_workers))
        n_blocks = min(L, n_workers * per_worker)
        bounds = np.linspace(0, L, n_blocks + 1).astype(np.int64).tolist()
        spans = list(zip(bounds[:-1], bounds[1:]))
        self.groups = [spans[k::n_workers] for k in range(n_workers)]
        widest = max(b - a for a, b in spans) * d
        per_row = 4 * self.W.dtype.itemsize * widest + 16 * (widest // d)
        rows = min(DENSE_CHUNK_BYTES // per_row, CHUNK_ENTRIES // widest)
        self.chunk_rows = int(max(1, min(self.codes.shape[0], rows)))
        self.chunks = one_hot_chunks(self.codes, D, self.W.dtype, self.chunk_rows)

    def ridge_term(self, x):
        """``sum alpha / 2 * x^2``."""
        return sum(0.5 * a * float(x[lo:hi] @ x[lo:hi]) for lo, hi, a in self.ridge_runs)

    def __call__(self, x, parallel=None):
        """Objective and gradient at ``x``."""
        self.index.fill(x, self.H, self.W.reshape(self.index.L, self.index.d, self.index.L, self.index.d))
        args = (self.index, self.W, self.H, self.chunks, self.scale)
        tail = (self.index.size,)
        if parallel is None or len(self.groups) == 1:
            parts = [_span_terms(args, spans, *tail) for spans in self.groups]
        else:
            parts = parallel(delayed(_span_terms)(args, spans, *tail) for spans in self.groups)
        f = sum(p[0] for p in parts)
        g = parts[0][1]
        for p in parts[1:]:
            g += p[1]
        for lo, hi, a in self.ridge_runs:  # by runs of one alpha and slices of 2^20: no x-sized temporaries
            for r in range(lo, hi, 1 << 20):
                xs = x[r : min(hi, r + (1 << 20))]
                f += 0.5 * a * float(xs @ xs)
                g[r : r + len(xs)] += a * xs
        return f, g


def _runs(alpha, size):
    """``alpha`` (a float or a vector of ``size``) as ``[(start, stop, value), ...]`` runs of one value."""
    if np.ndim(alpha) == 0:
        return [(0, size, float(alpha))] if alpha else []
    alpha = np.asarray(alpha, dtype=np.float64)
    cuts = np.flatnonzero(alpha[1:] != alpha[:-1]) + 1
    starts, stops = np.r_[0, cuts], np.r_[cuts, size]
    return [(int(a), int(b), float(alpha[a])) for a, b in zip(starts, stops) if alpha[a]]


def normalise_pairwise(layout, full):
    """``layout.normalise(full)`` for a pairwise layout, vectorised over the cliques of each shape.

    An edge table ``T`` gives ``theta_ij(a, b) = T(a, b) - T(a, 0) - T(0, b) + T(0, 0)`` and adds
    ``T(a, 0) - T(0, 0)`` to the field of its first variable, ``T(0, b) - T(0, 0)`` to the
    second's; a node table gives ``T(a) - T(0)``.
    """
    tab, red = OneHotIndex(layout, tables=True), OneHotIndex(layout, tables=False)
    theta = np.zeros(layout.n_params)
    fields = np.zeros((tab.L, tab.d))
    for gt, gr in zip(tab.groups, red.groups):
        T = tab.blocks(full, gt)
        if gt.second is None:
            fields[gt.first, 1 : gt.shape[0]] += T[:, 1:] - T[:, :1]
            continue
        red.add_blocks(theta, gr, T[:, 1:, 1:] - T[:, 1:, :1] - T[:, :1, 1:] + T[:, :1, :1])
        k1, k2 = gt.shape
        np.add.at(fields[:, 1:k1], gt.first, T[:, 1:, 0] - T[:, :1, 0])
        np.add.at(fields[:, 1:k2], gt.second, T[:, 0, 1:] - T[:, :1, 0])
    for gr in red.groups:
        if gr.second is None:
            red.add_blocks(theta, gr, fields[gr.first, 1 : gr.shape[0] + 1])
    return theta


def start_fields(index, X, scale, total):
    """Fields of the independent-site model, ``(n_columns, d)`` in one-hot coordinates.

    Each field is ``log`` of its state's weighted frequency with a pseudo-count of one row
    spread over the states (plmc's start): rare states start far below the frequent ones
    instead of at 0, where the fit would otherwise spend its first hundreds of iterations
    walking down the nearly flat directions of weakly penalised fields. In ``theta`` (first
    = 1) the fields are relative to state 0; as tables they are centred over the states.
    """
    L, d = index.L, index.d
    K = index.d + index.first - index.invalid.sum(axis=1)  # states per column
    freq = np.zeros((L, d + index.first))
    np.add.at(freq, (np.broadcast_to(np.arange(L), X.shape), X), scale[:, None])
    h = np.log(freq + 1.0 / (total * K)[:, None])
    if index.first:
        h = h[:, 1:] - h[:, :1]
    else:
        valid = np.arange(d)[None, :] < K[:, None]
        h -= np.where(valid, h, 0.0).sum(axis=1, keepdims=True) / K[:, None]
    return np.where(index.invalid, 0.0, h)


def field_start(index, X, scale, total):
    """The parameter vector with the fields of :func:`start_fields` and no couplings."""
    h = start_fields(index, X, scale, total)
    x = np.zeros(index.size)
    for grp in index.groups:
        if grp.second is None:
            index.add_blocks(x, grp, h[grp.first, : grp.shape[0]])
    return x


class _ColumnProblem:
    """The conditional of one column given its neighbours, a multinomial logistic regression.

    Variables ``y = [h (d,), B (len(nbrs) * d, d)]``: logits ``F @ B + h`` with ``F`` the
    one-hot rows of the neighbours; the ridge is ``alpha_h / 2 ||h||^2`` plus, for each
    neighbour's rows of ``B``, half the coupling's ``alpha`` (each coupling is fitted by both of
    its columns, so the columns' objectives sum to the symmetric one when the copies agree).
    """

    def __init__(self, index, X, i, nbrs, scale, alpha_h, alpha_rows, dtype):
        d, first = index.d, index.first
        self.d, self.first, self.dtype = d, first, dtype
        sub = X[:, nbrs]
        codes = sub.astype(np.int32) - first + np.arange(len(nbrs), dtype=np.int32) * d
        if first:
            codes[sub < first] = -1
        self.F = one_hot(codes, len(nbrs) * d, dtype)
        own = X[:, i].astype(np.int64) - first
        self.own = one_hot(np.where(own >= 0, own, -1)[:, None].astype(np.int32), d, dtype)
        self.invalid = index.invalid[i]
        self.scale = scale
        self.alpha = np.concatenate([np.full(d, alpha_h), np.repeat(alpha_rows, d * d)])

    def __call__(self, y):
        d = self.d
        h, B = y[:d], y[d:].reshape(-1, d)
        Z = self.F @ B.astype(self.dtype)
        Z += h.astype(self.dtype)
        own = np.einsum("md,md->m", Z, self.own)
        if self.invalid.any():
            Z[:, self.invalid] = -np.inf
        mx = Z.max(axis=1)
        if self.first:
            np.maximum(mx, 0, out=mx)
        Z -= mx[:, None]
        np.exp(Z, out=Z)
        S = Z.sum(axis=1)
        if self.first:
            S += np.exp(-mx)
        Z /= S[:, None]
        lse = np.log(S, dtype=np.float64) + mx
        f = -float(self.scale @ (own - lse))
        Z -= self.own
        Z *= self.scale.astype(self.dtype)[:, None]
        g = np.concatenate([Z.sum(axis=0, dtype=np.float64), (self.F.T @ Z).astype(np.float64).ravel()])
        ay = self.alpha * y
        return f + 0.5 * float(ay @ y), g + ay


def _fit_columns(index, X, scale, columns, neighbours, alpha_h, alpha_rows, dtype, max_iter, tol, x0_fields):
    """Fit the conditionals of ``columns`` one by one: ``[(h, B, n_iter, grad_max), ...]``."""
    out = []
    for i in columns:
        prob = _ColumnProblem(index, X, i, neighbours[i], scale, alpha_h[i], alpha_rows[i], dtype)
        y0 = np.zeros(len(prob.alpha))
        y0[: index.d] = x0_fields[i]
        y, _, g, n_iter = minimize_in_box(prob, y0, max_iter, tol)
        out.append((y[: index.d], y[index.d :].reshape(-1, index.d), n_iter, projected_max(y, g)))
    return out


def fit_asymmetric(
    layout, X, alpha, weight, total, *, tables, max_iter, tol, n_blocks=1, parallel=None, dtype=np.float32
):
    """Asymmetric pseudo-likelihood: each column's conditional fitted on its own, couplings averaged.

    Column ``i``'s conditional is a multinomial logistic regression on its neighbours
    (:class:`_ColumnProblem`), fitted by L-BFGS-B from the independent-site fields. Each
    regression is put in the reduced form of its conditional (state 0 the reference:
    ``J'(a, b) = T(a, b) - T(a, 0) - T(0, b) + T(0, 0)``, the field absorbing ``T(a, 0) - T(0, 0)``);
    ``theta``'s fields are column ``i``'s, each coupling the mean of its two columns' estimates.

    Returns
    -------
    theta : ndarray of shape (n_params,)
    n_iter : int
        The largest number of L-BFGS iterations of a column.
    grad_max : float
        The largest projected gradient of a column's objective at its solution.
    """
    index = OneHotIndex(layout, tables)
    L = index.L
    n = X.shape[0]
    scale = (np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)) / float(total)
    per_clique = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (len(layout.cliques),))
    alpha_h = np.zeros(L)
    neighbours, alpha_rows = [[] for _ in range(L)], [[] for _ in range(L)]
    for c, clique in enumerate(layout.cliques):
        if len(clique) == 1:
            alpha_h[clique[0]] = per_clique[c]
        else:
            i, j = clique
            neighbours[i].append(j), neighbours[j].append(i)
            alpha_rows[i].append(per_clique[c] / 2), alpha_rows[j].append(per_clique[c] / 2)
    order = [np.argsort(nb) for nb in neighbours]
    neighbours = [np.asarray(nb, dtype=np.int64)[o] for nb, o in zip(neighbours, order)]
    alpha_rows = [np.asarray(a, dtype=np.float64)[o] for a, o in zip(alpha_rows, order)]
    fields0 = start_fields(index, X, scale, total)
    bounds = np.linspace(0, L, max(1, min(n_blocks, L)) + 1).astype(np.int64)
    args = (index, X, scale)
    tail = (neighbours, alpha_h, alpha_rows, dtype, max_iter, tol, fields0)
    spans = [range(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    if parallel is None or len(spans) == 1:
        parts = [_fit_columns(*args, cols, *tail) for cols in spans]
    else:
        parts = parallel(delayed(_fit_columns)(*args, cols, *tail) for cols in spans)
    fits = [fit for part in parts for fit in part]
    theta = _average_reduced(layout, index, fits, neighbours)
    return theta, max(f[2] for f in fits), max(f[3] for f in fits)


def _average_reduced(layout, index, fits, neighbours):
    """``theta`` from the columns' regressions ``fits`` (``(h, B, ...)`` each): every regression in
    the reduced form of its conditional, the fields of its own column, each coupling the mean of
    its two columns' estimates."""
    L, d, first = index.L, index.d, index.first
    # Each column's conditional in reduced form: fields (L, d - 1 + first) and couplings R4[i, a, j, b].
    dr = d - 1 + first
    fields = np.zeros((L, dr))
    R4 = np.zeros((L, dr, L, dr))
    for i, (h, B, _, _) in enumerate(fits):
        T = B.reshape(len(neighbours[i]), d, d)  # [k, b, a] = T_{i, nbr k}(a, b)
        if first:
            fields[i] = h
            R4[i, :, neighbours[i], :] = T.transpose(0, 2, 1)
        else:
            fields[i] = h[1:] - h[0] + (T[:, 0, 1:] - T[:, :1, 0]).sum(axis=0)
            R4[i, :, neighbours[i], :] = (T[:, 1:, 1:] - T[:, :1, 1:] - T[:, 1:, :1] + T[:, :1, :1]).transpose(0, 2, 1)
    red = OneHotIndex(layout, tables=False)
    theta = np.zeros(layout.n_params)
    for grp in red.groups:
        if grp.second is None:
            red.add_blocks(theta, grp, fields[grp.first, : grp.shape[0]])
        else:
            k1, k2 = grp.shape
            both = R4[grp.first, :k1, grp.second, :k2] + R4[grp.second, :k2, grp.first, :k1].transpose(0, 2, 1)
            red.add_blocks(theta, grp, 0.5 * both)
    return theta
