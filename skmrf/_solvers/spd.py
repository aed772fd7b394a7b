"""Positive definiteness, log-determinant and the shrink-to-positive-definite repair.

Every Gaussian estimator decides positive definiteness and takes ``log det`` of
its precision here, so the dense and the sparse factorisation give the same
answers wherever they are used.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = ["REPAIR_MIN_EIGENVALUE", "logdet_spd", "logdet_spd_dense", "min_eigenvalue", "shrink_to_pd"]

#: Smallest eigenvalue of ``D^{-1/2} Theta D^{-1/2}`` after ``repair="shrink"``.
REPAIR_MIN_EIGENVALUE = 1e-6

# Up to this many variables positive definiteness and log det come from a dense
# Cholesky factorisation; above, from a sparse one (much faster even at p ~ 1000).
_DENSE_FACTOR_MAX_FEATURES = 200

# Up to this many variables the repair's smallest eigenvalue is computed densely.
_DENSE_EIG_MAX_FEATURES = 500


def logdet_spd_dense(A):
    """Positive definiteness and log-determinant of a dense symmetric matrix, by Cholesky.

    Parameters
    ----------
    A : ndarray of shape (p, p)
        Symmetric matrix (only its lower triangle is read).

    Returns
    -------
    is_positive_definite : bool
        Whether the Cholesky factorisation succeeded.
    log_det : float
        ``log det A``; NaN if ``A`` is not positive definite.
    """
    try:
        c = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return False, np.nan
    return True, float(2.0 * np.log(np.diag(c)).sum())


def logdet_spd(P):
    """Positive definiteness and log-determinant of a symmetric sparse matrix.

    Dense Cholesky (:func:`logdet_spd_dense`) for a few hundred variables;
    above, a sparse LU (SuperLU, minimum-degree ordering of ``A + A^T``)
    restricted to diagonal pivots, which is an ``L D L^T`` factorisation: the
    matrix is positive definite exactly when every pivot is positive. No
    dense ``p x p`` matrix is formed.

    Parameters
    ----------
    P : scipy.sparse array of shape (p, p)
        Symmetric matrix.

    Returns
    -------
    is_positive_definite : bool
    log_det : float
        ``log det P``; NaN if ``P`` is not positive definite.
    """
    p = P.shape[0]
    if p == 0:
        return True, 0.0
    if p <= _DENSE_FACTOR_MAX_FEATURES:
        return logdet_spd_dense(P.toarray())
    try:
        lu = spla.splu(
            sp.csc_matrix(P),
            permc_spec="MMD_AT_PLUS_A",
            diag_pivot_thresh=0.0,
            options=dict(SymmetricMode=True),
        )
    except RuntimeError:  # exactly singular
        return False, np.nan
    if not np.array_equal(lu.perm_r, lu.perm_c):
        return False, np.nan
    d = lu.U.diagonal()
    if not np.all(d > 0):
        return False, np.nan
    return True, float(np.log(d).sum())


def min_eigenvalue(R, tol):
    """Smallest eigenvalue of a symmetric sparse matrix and its relative accuracy.

    Dense (exact to rounding) for a few hundred variables; above, Lanczos
    (ARPACK) to relative accuracy about ``tol``.

    Parameters
    ----------
    R : scipy.sparse array of shape (p, p)
        Symmetric matrix.
    tol : float
        Relative accuracy asked of Lanczos.

    Returns
    -------
    eigenvalue : float
    relative_accuracy : float
        0.0 when exact to rounding, else ``tol``.
    """
    p = R.shape[0]
    if p <= _DENSE_EIG_MAX_FEATURES:
        return float(np.linalg.eigvalsh(R.toarray())[0]), 0.0
    try:
        val = spla.eigsh(R, k=1, which="SA", tol=tol, maxiter=20 * p, return_eigenvectors=False)
        return float(val[0]), tol
    except spla.ArpackNoConvergence as exc:  # pragma: no cover - fall back on a bound
        if len(exc.eigenvalues):
            return float(np.min(exc.eigenvalues)), tol
        return -float(abs(R).sum(axis=1).max()), 0.0


def shrink_to_pd(P, tol=1e-4):
    """Shrink the off-diagonal of ``P`` towards zero until it is positive definite.

    The result is ``P_t = D + t (P - D)``, ``D = diag(P)``, with ``t`` in
    ``(0, 1]`` the largest value for which the smallest eigenvalue of
    ``D^{-1/2} P_t D^{-1/2}`` is at least :data:`REPAIR_MIN_EIGENVALUE`. Above
    a few hundred variables the smallest eigenvalue is a Lanczos estimate of
    relative accuracy ``tol`` and ``t`` is lowered by a relative ``2 tol`` to
    cover it; the result is always checked by a factorisation.

    Parameters
    ----------
    P : scipy.sparse.csr_array of shape (p, p)
        Symmetric matrix with a positive diagonal.
    tol : float, default=1e-4
        Relative accuracy of the Lanczos eigenvalue estimate.

    Returns
    -------
    P_t : scipy.sparse.csr_array of shape (p, p)
        The repaired, positive definite matrix (same pattern as ``P``).
    t : float
        The off-diagonal scale.
    log_det : float
        ``log det P_t``.

    Raises
    ------
    ValueError
        If the diagonal of ``P`` is not positive.
    """
    d = P.diagonal()
    if not np.all(d > 0):
        raise ValueError(
            "repair='shrink' needs a positive diagonal, but the fitted precision has "
            f"{int(np.sum(d <= 0))} non-positive diagonal entries."
        )
    s = 1.0 / np.sqrt(d)
    S = sp.csr_array(sp.diags(s, format="csr"))
    R = sp.csr_array(S @ P @ S)
    R.setdiag(0.0)
    R.eliminate_zeros()
    lam, rel = min_eigenvalue(R, tol)
    if lam >= 0:
        t = 1.0
    else:
        t = min(1.0, (1.0 - REPAIR_MIN_EIGENVALUE) / -lam * (1.0 - 2.0 * rel))
    Dm = sp.csr_array(sp.diags(d, format="csr"))
    step = 1e-3
    for _ in range(30):
        Pt = sp.csr_array(Dm + t * (P - Dm))
        Pt.sort_indices()
        ok, logdet = logdet_spd(Pt)
        if ok:
            return Pt, t, logdet
        t *= 1.0 - step
        step = min(0.5, 2 * step)
    raise RuntimeError("repair='shrink' failed to find a positive definite matrix.")  # pragma: no cover
