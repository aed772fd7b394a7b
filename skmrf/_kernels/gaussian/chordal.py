"""Sparse covariance selection on a chordal embedding, with no dense ``p x p`` matrix.

Dahl, Vandenberghe and Roychowdhury (2008): the pattern ``V`` of the precision
is embedded in a chordal pattern ``E`` (the pattern of its sparse Cholesky
factor), on which the factorisation, the projected inverse ``P_E(Theta^{-1})``
(the gradient needs ``inv(Theta)`` only on ``V``) and the Hessian mapping
``U -> P_E(Theta^{-1} U Theta^{-1})`` and its inverse are sparse, multifrontal
computations (``chompack``, by the same authors, on ``cvxopt``'s CHOLMOD-style
supernodal storage). When ``V`` is itself chordal the maximum-likelihood
precision has a closed form, the inverse of the maximum-determinant completion
of the sample covariance (Dempster, 1972).

The library was chosen by measurement: ``scikit-sparse`` has no binary wheel
(it needs the SuiteSparse system library) and scipy's SuperLU has no selected
inverse; ``cvxopt`` and ``chompack`` install from wheels.
"""

from __future__ import annotations

import ctypes
import importlib
import sys
from contextlib import contextmanager

import numpy as np

from ..._data.gaussian import _shrink_diagonal, covariance_on_pattern, gram_statistic


class _ImportedOnFirstUse:
    """A stand-in for an optional solver's module, imported when an attribute is first read.

    ``import skmrf`` stays free of cvxopt and chompack (4 ms and two C extensions) for the users who
    never fit a Gaussian model on a sparse pattern (#41). Importing chompack imports the cvxopt
    submodules it needs (``cvxopt.amd``).
    """

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        importlib.import_module("chompack")
        return getattr(sys.modules[self._name], attr)


chompack = _ImportedOnFirstUse("chompack")
cvxopt = _ImportedOnFirstUse("cvxopt")

__all__ = [
    "ChordalPattern",
    "chordal_max_likelihood",
    "covariance_on_embedding",
    "dual_bound",
    "embedding_start",
    "likelihood_shrink",
    "likelihood_start",
    "objective",
    "pattern_covariance",
]

#: Supernodal amalgamation (chompack's ``merge_size_fill(16, 16)``): merge a supernode into its
#: parent when both have at most 16 columns or the merge adds at most 16 entries. Measured on
#: the 5-point lattice (unloaded figures in the CHANGELOG): fewer, larger dense blocks make the
#: symbolic step and the Hessian products faster at the price of about 1.8 times the storage.
MERGE_SIZE, MERGE_FILL = 16, 16

_decref = ctypes.pythonapi.Py_DecRef
_decref.argtypes, _decref.restype = [ctypes.py_object], None

#: Whether reference counts are exact (CPython with its GIL), so a leaked one can be given back.
_EXACT_REFCOUNTS = hasattr(sys, "getrefcount") and getattr(sys, "_is_gil_enabled", lambda: True)()


def _hessian(L, Y, U, adj, inv):
    """``chompack.hessian(L, Y, U, adj=adj, inv=inv)``, giving back the references it leaks.

    Both flags are always passed: ``chessian`` leaves an omitted ``adj`` or ``inv`` uninitialised
    and tests it against ``True``, so an omitted ``inv`` can read as true from whatever the stack
    held (seen: the inverse Hessian's factored updates, 100 times slower, from a call with
    ``adj`` only).

    chompack's C ``hessian`` (``chessian`` in src/C/cbase.c, 2.3.4) takes a new reference to
    ``L.blkval`` and ``Y.blkval`` and never releases it, so every factor and projected inverse a
    Hessian product sees stays allocated: 37 MB per Newton step at p = 40,000 (148 MB per fit of
    4 steps, kept after the estimator is deleted), 2 x 643 MB per step at p = 10^6. The excess
    of each count over its value before the call is released; a fixed chompack leaves none.
    """
    if not _EXACT_REFCOUNTS:
        chompack.hessian(L, Y, U, adj=adj, inv=inv)
        return
    # Plain locals, counted the same way before and after (a zip's reused result tuple would hold one).
    l_blocks, y_blocks = L.blkval, Y.blkval
    l_count, y_count = sys.getrefcount(l_blocks), sys.getrefcount(y_blocks)
    chompack.hessian(L, Y, U, adj=adj, inv=inv)
    for _ in range(sys.getrefcount(l_blocks) - l_count):
        _decref(l_blocks)
    for _ in range(sys.getrefcount(y_blocks) - y_count):
        _decref(y_blocks)


def pattern_covariance(XT, rows, cols, n_div, shrinkage=0.0, mu=1.0):
    """Sample covariance on the pattern only, ``S[rows, cols]``, from standardised data.

    See :func:`skmrf._data.gaussian.covariance_on_pattern` (``XT`` in memory or read by row chunks).
    """
    return covariance_on_pattern(XT, rows, cols, n_div, shrinkage, mu)


def _triplets(A):
    """``(I, J, V)`` of a cvxopt sparse matrix as numpy arrays."""
    return (
        np.asarray(A.I, dtype=np.int64).ravel(),
        np.asarray(A.J, dtype=np.int64).ravel(),
        np.asarray(A.V, dtype=np.float64).ravel(),
    )


def _spmatrix(values, rows, cols, size):
    return cvxopt.spmatrix(cvxopt.matrix(values), cvxopt.matrix(rows), cvxopt.matrix(cols), size)


def _fast_perm(A, p):
    """``A[p, p]`` for a cvxopt sparse matrix, by relabelling its triplets (cvxopt's indexing is quadratic)."""
    p = np.asarray(p, dtype=np.int64).ravel()
    ip = np.empty_like(p)
    ip[p] = np.arange(len(p))
    rows, cols, values = _triplets(A)
    return _spmatrix(values, ip[rows], ip[cols], A.size)


def _fast_tril(A):
    """The lower triangle of a cvxopt sparse matrix (``chompack.misc.tril`` loops in Python)."""
    rows, cols, values = _triplets(A)
    keep = rows >= cols
    return _spmatrix(values[keep], rows[keep], cols[keep], A.size)


def _fast_symmetrize(A):
    """The symmetric matrix with the lower triangle of ``A`` (``chompack.misc.symmetrize``, vectorised)."""
    rows, cols, values = _triplets(A)
    lower, strict = rows >= cols, rows > cols
    return _spmatrix(
        np.r_[values[lower], values[strict]], np.r_[rows[lower], cols[strict]], np.r_[cols[lower], rows[strict]], A.size
    )


@contextmanager
def _fast_symbolic_permutation():
    """Let ``chompack.symbolic`` permute, symmetrise and take triangles through numpy.

    Measured on the 13-point stencil of a 220 x 220 grid: 8.3 of the 11.1 s of
    the symbolic factorisation went into cvxopt's ``A[p, p]``; with the
    relabelling the 316 x 316 grid takes 4.3 s instead of 34 s. Adding the
    pattern to the embedding (the index map) permutes again: 12.1 of 19.7 s on
    the 5-point 316 x 316 grid, before ``tril`` and ``symmetrize`` were also
    vectorised.
    """
    module = importlib.import_module("chompack.symbolic")
    fast = {"perm": _fast_perm, "tril": _fast_tril, "symmetrize": _fast_symmetrize}
    original = {name: getattr(module, name) for name in fast}
    for name, function in fast.items():
        setattr(module, name, function)
    try:
        yield
    finally:
        for name, function in original.items():
            setattr(module, name, function)


class ChordalPattern:
    """A sparsity pattern, its chordal embedding, and where each entry is stored.

    Parameters
    ----------
    rows, cols : ndarray of int64 of shape (q,)
        The lower-triangular pattern (``rows >= cols``), diagonal included.
    p : int
        Number of variables.
    merge : bool, default=True
        Amalgamate supernodes (``merge_size_fill(MERGE_SIZE, MERGE_FILL)``).
        A chordal pattern is never merged: its closed form needs the
        embedding to be the pattern itself.

    Attributes
    ----------
    symb : chompack.symbolic
        Symbolic factorisation with an approximate minimum-degree ordering.
    chordal : bool
        Whether the ordering has no fill (the pattern is chordal: the ML has a
        closed form).
    n_fill : int
        Entries of the embedding outside the pattern (amalgamation included).
    n_stored : int
        Length of the block storage (what one matrix on the embedding costs, in float64).
    """

    def __init__(self, rows, cols, p, merge=True):
        q = len(rows)
        self.rows, self.cols, self.p = rows, cols, p
        # Mark each entry with its number, 1-based, to find it in the block storage.
        marks = cvxopt.spmatrix(
            cvxopt.matrix(np.arange(1, q + 1, dtype=np.float64)), cvxopt.matrix(rows), cvxopt.matrix(cols), (p, p)
        )
        merging = chompack.merge_size_fill(MERGE_SIZE, MERGE_FILL) if merge else None
        with _fast_symbolic_permutation():
            self.symb = chompack.symbolic(marks, p=cvxopt.amd.order, merge_function=merging)
            self.chordal = self.symb.fill[0] == 0
            if self.chordal and self.symb.fill[1]:
                self.symb = chompack.symbolic(marks, p=cvxopt.amd.order)
            stored = np.asarray((chompack.cspmatrix(self.symb) + marks).blkval).ravel()
        where = np.flatnonzero(stored)
        self.index = np.empty(q, dtype=np.int64)
        self.index[stored[where].astype(np.int64) - 1] = where
        self.n_stored = len(stored)
        self.diagonal_slots = self._diagonal_slots(self.symb)
        self.n_fill = int(sum(self.symb.fill))
        self.diagonal = rows == cols
        # <a, b> = tr(A B) for symmetric matrices given by their lower triangles.
        self.weight = np.where(self.diagonal, 1.0, 2.0)
        self.blocks = self._blocks(self.symb)

    @property
    def upper_slots(self):
        """Where the block storage keeps the strict upper triangles of the diagonal blocks.

        chompack reads them (its completion gives wrong results unless they are
        zero), so a matrix filled block by block must have them cleared.
        """
        if not hasattr(self, "_upper_slots"):
            parts = []
            for offset, R, width in self.blocks:
                c, r = np.triu_indices(width, 1)  # row r < column c, column-major: offset + c |R| + r
                parts.append(offset + r * len(R) + c)
            self._upper_slots = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        return self._upper_slots

    @staticmethod
    def _blocks(symb):
        """The dense blocks of the storage: ``(offset, variables, n_columns)`` per supernode.

        Supernode ``k`` stores ``A[R, J]`` column-major at ``offset``, ``R`` its
        row variables (original numbering) and ``J = R[:n_columns]`` its columns.
        """
        snptr, sncolptr, blkptr = (
            np.asarray(a, dtype=np.int64).ravel() for a in (symb.snptr, symb.sncolptr, symb.blkptr)
        )
        perm = np.asarray(symb.p, dtype=np.int64).ravel()
        rowidx = perm[np.asarray(symb.snrowidx, dtype=np.int64).ravel()]
        width = np.diff(snptr)
        return [(int(blkptr[k]), rowidx[sncolptr[k] : sncolptr[k + 1]], int(width[k])) for k in range(len(width))]

    @staticmethod
    def _diagonal_slots(symb):
        """Where the block storage keeps the diagonal (``cspmatrix.diag`` loops over every column in Python)."""
        snptr, sncolptr, blkptr = (
            np.asarray(a, dtype=np.int64).ravel() for a in (symb.snptr, symb.sncolptr, symb.blkptr)
        )
        width = np.diff(snptr)  # columns of each supernode
        column = np.arange(width.sum()) - np.repeat(snptr[:-1], width)  # column within its supernode
        return np.repeat(blkptr[:-1], width) + column * (np.repeat(np.diff(sncolptr), width) + 1)

    def log_det(self, L):
        """``log det`` of the matrix whose Cholesky factor is ``L``; nan if a pivot is not positive."""
        d = np.asarray(L.blkval).ravel()[self.diagonal_slots]
        return 2.0 * float(np.log(d).sum()) if np.all(d > 0) else np.nan

    def matrix(self, x):
        """The chordal matrix with entries ``x`` on the pattern and zero on the fill."""
        values = np.zeros(self.n_stored)
        values[self.index] = x
        return chompack.cspmatrix(self.symb, blkval=cvxopt.matrix(values))

    def values(self, A):
        """The entries of the chordal matrix ``A`` on the pattern."""
        return np.asarray(A.blkval).ravel()[self.index]

    def cholesky(self, x):
        """``(L, log det)`` of the matrix with entries ``x``, or ``(None, nan)`` if it is not positive definite."""
        L = self.matrix(x)
        try:
            chompack.cholesky(L)
        except ArithmeticError:
            return None, np.nan
        log_det = self.log_det(L)
        if np.isnan(log_det):  # pragma: no cover - cholesky raises first
            return None, np.nan
        return L, log_det

    def smallest_eigenvalue(self, L, n_iter=30, seed=0, scale=None, start=None, rtol=None):
        """The smallest eigenvalue of ``Theta`` (Cholesky factor ``L``), or of ``D^{-1} Theta D^{-1}``.

        Power iteration on ``inv(Theta)`` (``D inv(Theta) D`` with ``scale = diag(D)``):
        two triangular solves a step. On lattice-like precisions the lowest
        eigenvalues are well separated in ratio (``m1^2 + m2^2`` for the
        Laplacian's), so a few steps suffice; the Rayleigh quotient converges
        from above (an overestimate).

        ``start``: the first vector (default a random one from ``seed``), for
        example the previous Newton iterate's, which :attr:`last_eigenvector`
        keeps. ``rtol``: stop early once a step changes the value by at most
        this fraction of it. The Rayleigh quotient's error falls by
        ``(lambda_1 / lambda_2)^2`` a step, so on a stop it is about ``rtol``
        times that ratio over one minus it.
        """
        # chompack.trsm permutes B itself: vectors stay in the variables' order.
        d = None if scale is None else cvxopt.matrix(np.asarray(scale, dtype=np.float64))
        if start is None:
            start = np.random.default_rng(seed).standard_normal(self.p)
        v = cvxopt.matrix(np.array(start, dtype=np.float64))
        value = np.nan
        for _ in range(n_iter):
            v /= float(np.linalg.norm(np.asarray(v)))
            w = cvxopt.matrix(v) if d is None else cvxopt.mul(v, d)
            chompack.trsm(L, w)
            chompack.trsm(L, w, trans="T")
            if d is not None:
                w = cvxopt.mul(w, d)
            previous, value = value, 1.0 / float(np.dot(np.asarray(v).ravel(), np.asarray(w).ravel()))
            v = w
            if rtol is not None and abs(previous - value) <= rtol * value:
                break
        self.last_eigenvector = np.asarray(v).ravel()
        return value

    def inverse_on_pattern(self, L):
        """``(Y, inv(Theta)[rows, cols])``: the projected inverse on the embedding and its pattern values."""
        Y = L.copy()
        chompack.projected_inverse(Y)
        return Y, self.values(Y)

    def hessian(self, L, Y, v, inverse=False, embedding=False):
        """``P_V(W U W)`` (or the chordal inverse Hessian restricted to ``V``) for ``U`` with entries ``v``.

        ``U`` is written into one storage kept between calls (cleared, then
        filled on the pattern): one matrix on the embedding is not allocated
        and copied per product (a tenth of a product's time on the 500 x 500
        5-point lattice). ``embedding=True`` returns that whole block storage,
        ``P_E(W U W)`` on the embedding ``E``, instead: a view, valid until the
        next call.
        """
        work = getattr(self, "_work", None)
        if work is None:
            work = self._work = cvxopt.matrix(0.0, (self.n_stored, 1))
        values = np.asarray(work).ravel()
        values[:] = 0.0
        values[self.index] = v
        U = chompack.cspmatrix(self.symb, blkval=work)
        if inverse:
            _hessian(L, Y, U, adj=True, inv=True)
            _hessian(L, Y, U, adj=False, inv=True)
        else:
            _hessian(L, Y, U, adj=False, inv=False)
            _hessian(L, Y, U, adj=True, inv=False)
        return values if embedding else values[self.index]

    def newton_dual(self, L, Y, dx):
        """``W - P_E(W D W)`` on the embedding (block storage), ``W = inv(Theta)``, ``D`` the Newton step ``dx``.

        The dual point that a Newton step predicts: ``inv(Theta + D)`` to first
        order. On the pattern it equals ``S`` up to the residual of the Newton
        system (``P_V(W D W) = W - S`` on ``V``), where ``inv(Theta)`` itself is
        off by the whole gradient; and ``W - W D W`` is positive definite when
        ``D``'s local norm (the Newton decrement) is below one. So near the
        optimum its fill completes where ``inv(Theta)``'s may not
        (:func:`dual_bound`).
        """
        return np.asarray(Y.blkval).ravel() - self.hessian(L, Y, dx, embedding=True)


def chordal_max_likelihood(pattern, s):
    """Closed-form ML precision on a chordal pattern: the inverse of the max-determinant completion of ``s``.

    Parameters
    ----------
    pattern : ChordalPattern
        With ``n_fill == 0``.
    s : ndarray of shape (q,)
        Sample covariance on the pattern.

    Returns
    -------
    x : ndarray of shape (q,) or None
        The precision on the pattern; None when ``s`` has no positive definite completion.
    log_det : float
        ``log det Theta``.
    """
    X = pattern.matrix(s)
    try:
        chompack.completion(X)  # X := L with L L^T = Theta, P(Theta^{-1}) = s
    except ArithmeticError:
        return None, np.nan
    log_det = pattern.log_det(X)
    chompack.llt(X)
    return pattern.values(X), log_det


def embedding_gram(ZT, blocks, n_stored):
    """``sum_t z_t z_t^T`` on the whole chordal embedding, in its block storage, from rows ``ZT``.

    Parameters
    ----------
    ZT : ndarray of shape (p, m)
        ``m`` (standardised, weighted) samples, one row per variable.
    blocks : list
        :attr:`ChordalPattern.blocks`.
    n_stored : int
        :attr:`ChordalPattern.n_stored`.

    Returns
    -------
    ndarray of shape (n_stored,)
        Each supernode's block ``ZT[R] ZT[J]^T`` column-major (entries above
        the diagonal of a block are computed too: clear them with
        :attr:`ChordalPattern.upper_slots` before chompack reads the matrix).
    """
    out = np.zeros(n_stored)
    for offset, R, width in blocks:
        out[offset : offset + len(R) * width] = (ZT[R[:width]] @ ZT[R].T).ravel()
    return out


def covariance_on_embedding(data, pattern, n_div, shrinkage=0.0, mu=1.0):
    """The (shrunk) sample covariance on the whole chordal embedding, in its block storage.

    ``data`` is standardised data (:class:`skmrf._data.gaussian.StandardisedRows`, or an
    in-memory array with one row per variable). Costs ``n`` times the
    storage of the embedding in multiply-adds, one dense product per supernode.
    """
    s = gram_statistic(data, embedding_gram, pattern.blocks, pattern.n_stored)
    s[pattern.upper_slots] = 0.0
    variables = np.asarray(pattern.symb.p, dtype=np.int64).ravel()
    return _shrink_diagonal(s, pattern.diagonal_slots, variables, n_div, shrinkage, mu)


def embedding_start(pattern, s_stored):
    """The ML precision on the chordal embedding, restricted to the pattern (fill zeroed).

    The embedding ``E`` contains the pattern ``V``, so its maximum-likelihood
    precision ``Theta_E`` (closed form: the inverse of the maximum-determinant
    completion of ``S`` on ``E``) gives the lower bound
    ``f_V* >= f_E* = p - log det Theta_E`` on the optimum over ``V``
    (``tr(S Theta_E) = p`` at the optimum over ``E``). Zeroing its fill gives a
    start for Newton's method when that is positive definite.

    Parameters
    ----------
    pattern : ChordalPattern
    s_stored : ndarray of shape (n_stored,)
        The sample covariance on the whole embedding (block storage).

    Returns
    -------
    x : ndarray of shape (q,) or None
        ``Theta_E`` on the pattern; None when it is not positive definite or
        when ``S`` has no positive definite completion on ``E`` (a clique of the
        embedding with more variables than samples).
    lower_bound : float
        ``p - log det Theta_E``, or ``-inf`` without a completion.
    """
    X = chompack.cspmatrix(pattern.symb, blkval=cvxopt.matrix(np.asarray(s_stored, dtype=np.float64)))
    try:
        chompack.completion(X)  # X := L with L L^T = Theta_E, P_E(inv(Theta_E)) = S_E
    except ArithmeticError:
        return None, -np.inf
    log_det = pattern.log_det(X)
    if np.isnan(log_det):  # pragma: no cover - completion raises first
        return None, -np.inf
    chompack.llt(X)
    x = pattern.values(X)
    return (x if pattern.cholesky(x)[0] is not None else None), pattern.p - log_det


def dual_bound(pattern, s, Y):
    """A certified lower bound on the optimum ``f*``: ``p + log det W`` for a completion ``W`` of ``S``.

    Every positive definite ``W`` with ``W = S`` on the pattern gives
    ``f(Theta) = -log det Theta + tr(W Theta) >= p + log det W`` for every
    feasible ``Theta`` (Fenchel's inequality for ``-log det``), so
    ``f(Theta) - (p + log det W)`` bounds the distance to the optimum. ``W`` is
    the maximum-determinant completion of ``S`` on the pattern and of the
    current ``inv(Theta)`` (its projected inverse ``Y``) on the fill: one
    completion, about one Cholesky factorisation. At the optimum the bound is
    exact (``W = inv(Theta*)``).

    Parameters
    ----------
    pattern : ChordalPattern
    s : ndarray of shape (q,)
        Sample covariance on the pattern.
    Y : chompack.cspmatrix or ndarray of shape (n_stored,)
        The projected inverse of the current iterate, or another matrix on the
        embedding whose fill to use (:meth:`ChordalPattern.newton_dual`).

    Returns
    -------
    float
        The bound, or ``-inf`` when that partial matrix has no positive
        definite completion (far from the optimum).
    """
    values = np.array(getattr(Y, "blkval", Y), dtype=np.float64).ravel()
    values[pattern.upper_slots] = 0.0
    values[pattern.index] = s
    X = chompack.cspmatrix(pattern.symb, blkval=cvxopt.matrix(values))
    try:
        chompack.completion(X)  # L L^T = inv(W)
    except ArithmeticError:
        return -np.inf
    log_det = pattern.log_det(X)
    return -np.inf if np.isnan(log_det) else pattern.p - log_det


def objective(pattern, s, x):
    """``-log det Theta + tr(S Theta)`` for the entries ``x``, or ``inf`` when they are not positive definite."""
    L, log_det = pattern.cholesky(x)
    return np.inf if L is None else -log_det + float(np.dot(pattern.weight * s, x))


def likelihood_shrink(pattern, s, x, anchor=None, n_bisections=20):
    """The positive definite ``A + t (Theta - A)`` of highest likelihood, ``t`` in ``[0, 1]``.

    ``f(t) = -log det(A + t (Theta - A)) + tr(S (A + t (Theta - A)))`` is
    convex in ``t`` and infinite outside the positive definite interval, so
    its minimiser is found by bisection on
    ``f'(t) = tr((S - inv(Theta_t)) (Theta - A))``, a step counting as "too
    far" when ``Theta_t`` is not positive definite. The anchor ``A`` (``t = 0``)
    must be positive definite: by default the diagonal ``D`` of ``Theta``, so
    that only the off-diagonal part is scaled.

    Parameters
    ----------
    pattern : ChordalPattern
    s : ndarray of shape (q,)
        Sample covariance on the pattern.
    x : ndarray of shape (q,)
        The estimate on the pattern, with a positive diagonal.
    anchor : ndarray of shape (q,), optional
        A positive definite matrix on the pattern; default the diagonal of ``x``.
    n_bisections : int, default=20
        Bisection steps (``t`` to within ``2**-n_bisections``).

    Returns
    -------
    x_t : ndarray of shape (q,)
        The positive definite ``A + t (Theta - A)`` on the pattern.
    t : float
    """
    if anchor is None:
        anchor = np.where(pattern.diagonal, x, 0.0)
    direction = x - anchor
    lo, hi = 0.0, 1.0
    for _ in range(n_bisections):
        t = 0.5 * (lo + hi)
        L, _ = pattern.cholesky(anchor + t * direction)
        if L is None:
            hi = t
            continue
        w = pattern.inverse_on_pattern(L)[1]
        if float(np.dot(pattern.weight * (s - w), direction)) < 0:
            lo = t
        else:
            hi = t
    return anchor + lo * direction, lo


def likelihood_start(pattern, s, x):
    """A positive definite start for Newton's method near an estimate ``x`` that is not: ``(x_0, t)``.

    The better, in likelihood, of two segments towards ``x``: from its own
    diagonal (:func:`likelihood_shrink`, which keeps the estimate's
    diagonal) and from ``diag(1 / S_ii)``, the maximum-likelihood diagonal
    precision. The first wins when ``x`` is nearly positive definite; the
    second when its diagonal is far too large for a density, as for LAP on
    ill-conditioned precisions (the squared 20 x 20 lattice Laplacian:
    objective -276 against 238 for the first; after 30 Newton steps,
    held-out log-likelihood -92.37 against -100.54, maximum likelihood
    -92.38). Either way the off-diagonal part of ``x`` is scaled by ``t``.
    """
    best = likelihood_shrink(pattern, s, x)
    diagonal = np.where(pattern.diagonal, 1.0 / np.where(pattern.diagonal, s, 1.0), 0.0)
    blend = likelihood_shrink(pattern, s, x, anchor=diagonal)
    return blend if objective(pattern, s, blend[0]) < objective(pattern, s, best[0]) else best
