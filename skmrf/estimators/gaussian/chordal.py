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

import sys
from contextlib import contextmanager

import chompack
import cvxopt
import numpy as np

__all__ = [
    "ChordalPattern",
    "chordal_max_likelihood",
    "likelihood_shrink",
    "likelihood_start",
    "newton_cg_covsel",
    "objective",
    "pattern_covariance",
]

# Entries of data gathered at once when forming the sample covariance on the pattern.
_CHUNK_ENTRIES = 1 << 23


def pattern_covariance(XT, rows, cols, n_div, shrinkage=0.0, mu=1.0):
    """Sample covariance on the pattern only, ``S[rows, cols]``, from centred data in chunks.

    Parameters
    ----------
    XT : ndarray of shape (p, n)
        Centred (standardised) data, one row per variable.
    rows, cols : ndarray of int64 of shape (q,)
        Positions of the entries.
    n_div : float
        Divisor (the number of samples).
    shrinkage : float, default=0.0
        Weight of the ridge target.
    mu : float or ndarray of shape (p,), default=1.0
        Ridge target, one per variable or common.

    Returns
    -------
    s : ndarray of shape (q,)
        ``(1 - shrinkage) XT[rows] . XT[cols] / n_div + shrinkage mu delta_{rows, cols}``.
    """
    q, n = len(rows), XT.shape[1]
    s = np.empty(q)
    step = max(1, _CHUNK_ENTRIES // max(1, n))
    for a in range(0, q, step):
        r, c = rows[a : a + step], cols[a : a + step]
        s[a : a + step] = np.einsum("ij,ij->i", XT[r], XT[c])
    s /= n_div
    if shrinkage:
        diag = rows == cols
        s *= 1.0 - shrinkage
        s[diag] += shrinkage * (mu[rows[diag]] if np.ndim(mu) else mu)
    return s


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
    module = sys.modules["chompack.symbolic"]
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

    Attributes
    ----------
    symb : chompack.symbolic
        Symbolic factorisation with an approximate minimum-degree ordering.
    n_fill : int
        Entries of the embedding outside the pattern (0 when the pattern is
        chordal and the ordering perfect: then the ML has a closed form).
    n_stored : int
        Length of the block storage (what one matrix on the embedding costs, in float64).
    """

    def __init__(self, rows, cols, p):
        q = len(rows)
        self.rows, self.cols, self.p = rows, cols, p
        # Mark each entry with its number, 1-based, to find it in the block storage.
        marks = cvxopt.spmatrix(
            cvxopt.matrix(np.arange(1, q + 1, dtype=np.float64)), cvxopt.matrix(rows), cvxopt.matrix(cols), (p, p)
        )
        with _fast_symbolic_permutation():
            self.symb = chompack.symbolic(marks, p=cvxopt.amd.order)
            stored = np.asarray((chompack.cspmatrix(self.symb) + marks).blkval).ravel()
        where = np.flatnonzero(stored)
        self.index = np.empty(q, dtype=np.int64)
        self.index[stored[where].astype(np.int64) - 1] = where
        self.n_stored = len(stored)
        self.diagonal_slots = self._diagonal_slots(self.symb)
        self.n_fill = int(self.symb.nnz) - q
        self.diagonal = rows == cols
        # <a, b> = tr(A B) for symmetric matrices given by their lower triangles.
        self.weight = np.where(self.diagonal, 1.0, 2.0)

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

    def inverse_on_pattern(self, L):
        """``(Y, inv(Theta)[rows, cols])``: the projected inverse on the embedding and its pattern values."""
        Y = L.copy()
        chompack.projected_inverse(Y)
        return Y, self.values(Y)

    def hessian(self, L, Y, v, inverse=False):
        """``P_V(W U W)`` (or the chordal inverse Hessian restricted to ``V``) for ``U`` with entries ``v``."""
        U = self.matrix(v)
        if inverse:
            chompack.hessian(L, Y, U, adj=True, inv=True)
            chompack.hessian(L, Y, U, adj=False, inv=True)
        else:
            chompack.hessian(L, Y, U, adj=False)
            chompack.hessian(L, Y, U, adj=True)
        return self.values(U)


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


def _conjugate_gradients(apply, precondition, b, weight, rtol, max_iter):
    """Preconditioned CG for ``apply(d) = b`` in the inner product ``sum(weight a b)``; ``(d, iterations)``."""
    d = np.zeros_like(b)
    r = b.copy()
    z = precondition(r)
    rz = float(np.dot(weight * r, z))
    stop = rtol * np.sqrt(max(rz, 0.0))
    direction = z.copy()
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        Hd = apply(direction)
        curvature = float(np.dot(weight * direction, Hd))
        if not curvature > 0:  # pragma: no cover - the Hessian is positive definite
            break
        a = rz / curvature
        d += a * direction
        r -= a * Hd
        z = precondition(r)
        rz_new = float(np.dot(weight * r, z))
        if np.sqrt(max(rz_new, 0.0)) <= stop:
            break
        direction = z + (rz_new / rz) * direction
        rz = rz_new
    return d, iterations


def newton_cg_covsel(pattern, s, x0, tol=1e-10, max_iter=100, max_cg=250, log=None):
    """Maximum-likelihood precision on a pattern by Newton-CG on its chordal embedding.

    Minimises ``f(Theta) = -log det Theta + tr(S Theta)`` over ``Theta`` with
    entries ``x`` on the pattern. The gradient ``S - P_V(inv(Theta))`` comes
    from the projected inverse; each Newton system ``P_V(W D W) = -g`` is
    solved by conjugate gradients (truncated with the forcing term
    ``min(0.1, sqrt(residual))``), preconditioned by the exact inverse
    Hessian of the chordal embedding restricted to the pattern (exact when
    the pattern is chordal). A backtracking line search on the Armijo
    condition keeps every iterate positive definite (a failed Cholesky
    factorisation rejects the step).

    Parameters
    ----------
    pattern : ChordalPattern
    s : ndarray of shape (q,)
        Sample covariance on the pattern.
    x0 : ndarray of shape (q,)
        Positive definite starting precision on the pattern.
    tol : float, default=1e-10
        Stop when ``max |inv(Theta) - S|`` over the pattern, divided by
        ``max S_ii``, is at most ``tol``.
    max_iter : int, default=100
        Maximum Newton steps.
    max_cg : int, default=250
        Maximum CG iterations per Newton step.
    log : callable, optional
        Called as ``log(format, *args)`` once per step.

    Returns
    -------
    x : ndarray of shape (q,)
        The precision on the pattern.
    n_iter : int
        Newton steps taken.
    residual : float
        The final optimality residual (as ``tol``).
    log_det : float
        ``log det Theta``.

    Raises
    ------
    ValueError
        If ``x0`` is not positive definite.
    """
    weight = pattern.weight
    scale = float(np.max(s[pattern.diagonal]))
    x = np.array(x0, dtype=np.float64)
    L, logdet = pattern.cholesky(x)
    if L is None:
        raise ValueError("The initial precision for Newton's method is not positive definite.")
    f = -logdet + float(np.dot(weight * s, x))
    n_iter, residual = 0, np.inf
    for n_iter in range(max_iter + 1):
        Y, w = pattern.inverse_on_pattern(L)
        g = s - w
        residual = float(np.max(np.abs(g))) / scale
        if residual <= tol or n_iter == max_iter:
            break
        dx, n_cg = _conjugate_gradients(
            lambda v, L=L, Y=Y: pattern.hessian(L, Y, v),
            lambda v, L=L, Y=Y: pattern.hessian(L, Y, v, inverse=True),
            -g,
            weight,
            min(0.1, np.sqrt(residual)),
            max_cg,
        )
        decrement = -float(np.dot(weight * g, dx))
        # Below this decrement the change of f is lost in its rounding (about 1e-15 |f| per
        # entry summed), so Armijo's test is noise: a full positive definite step is taken
        # (the iterates are then in Newton's quadratic region).
        negligible = decrement <= 1e-12 * max(1.0, abs(f))
        t = 1.0
        while t > 1e-14:
            L_new, logdet_new = pattern.cholesky(x + t * dx)
            if L_new is not None:
                f_new = -logdet_new + float(np.dot(weight * s, x + t * dx))
                if negligible or f_new <= f - 0.25 * t * decrement:
                    break
            t *= 0.5
        else:
            break  # no descent along dx: stop at the current iterate
        x = x + t * dx
        L, logdet, f = L_new, logdet_new, f_new
        if log is not None:
            log(
                "Newton-CG step %d: objective %.12g, residual %.3g, %d CG iterations, step %.3g",
                n_iter + 1,
                f,
                residual,
                n_cg,
                t,
            )
    return x, n_iter, residual, logdet


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
