"""Newton-CG for covariance selection on a chordal embedding, stopped at statistical precision.

Minimises ``f(Theta) = -log det Theta + tr(S Theta)`` over precisions with
entries ``x`` on a pattern ``V`` (Dahl, Vandenberghe and Roychowdhury, 2008):
the gradient ``S - P_V(inv(Theta))`` comes from the projected inverse of a
sparse Cholesky factor on the chordal embedding ``E`` of ``V``, and each
Newton system ``P_V(W D W) = -g`` (``W = inv(Theta)``) is solved by
preconditioned conjugate gradients (:func:`skmrf._solvers.cg.conjugate_gradient`)
with Hessian products from the multifrontal Hessian mapping.

Preconditioners: on a lattice pattern, the inverse Newton operator of a
stationary torus model (:class:`.lattice.TorusPreconditioner`), whose quality
does not degrade with the grid size; otherwise the exact inverse Hessian of
the embedding restricted to ``V`` (exact when ``V`` is chordal).

Stopping: the Newton decrement ``lambda^2 = g^T H^{-1} g`` predicts the
distance to the optimum, ``f - f* ~ lambda^2 / 2``. The objective's own
sampling noise is about ``q / n`` (``q`` unknowns, ``n`` samples: twice the
log-likelihood ratio of the estimate and the truth is ``chi^2_q``, and ``f`` is
``-2 / n`` times the log-likelihood), so iterating once ``lambda^2 / 2`` is a
small fraction of it changes nothing a user can measure. The certificate is a
duality gap (:func:`.chordal.dual_bound`).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ..._solvers.cg import conjugate_gradient
from ..._solvers.line_search import backtrack
from ..._utils._warnings import warn
from ...exceptions import CostWarning
from .lattice import TorusPreconditioner

__all__ = ["DECREMENT_TOL", "NewtonResult", "newton_cg_covsel"]

#: The default statistical precision: stop when ``lambda^2 / 2 <= DECREMENT_TOL * q / n``,
#: a thousandth of the objective's sampling noise ``q / n``.
DECREMENT_TOL = 1e-3

#: CG forcing term of the final decrement check: below it the decrement is known to
#: within a factor ``1 + CONFIRM_RTOL^2 kappa`` (``kappa`` the preconditioned condition number).
CONFIRM_RTOL = 1e-2


class NewtonResult(NamedTuple):
    """The outcome of :func:`newton_cg_covsel`.

    Attributes
    ----------
    x : ndarray of shape (q,)
        The precision on the pattern.
    n_iter : int
        Newton steps taken.
    residual : float
        ``max |inv(Theta) - S|`` over the pattern divided by ``max S_ii`` at ``x``.
    decrement : float
        ``lambda^2 / 2`` of the last Newton system (a lower bound, see
        :func:`newton_cg_covsel`), NaN when not measured (stopped on
        ``residual`` before a CG solve). On a stop by ``decrement_tol`` it is
        the decrement of the iterate before the final full Newton step, which
        leaves ``x`` closer still.
    objective : float
        ``f(x)``.
    log_det : float
        ``log det Theta``.
    cg_iterations : list of int
        CG iterations of each Newton system.
    L, Y : chompack.cspmatrix
        The Cholesky factor of ``Theta`` and its projected inverse on the embedding.
    newton_dual : ndarray of shape (n_stored,) or None
        The dual point the last Newton system predicts
        (:meth:`.chordal.ChordalPattern.newton_dual`), kept when the run
        stopped right after solving it (statistical precision, ``max_iter``
        or ``max_time``): a second candidate for the certificate.
    """

    x: np.ndarray
    n_iter: int
    residual: float
    decrement: float
    objective: float
    log_det: float
    cg_iterations: list
    L: object
    Y: object
    newton_dual: object = None


def _newton_direction(pattern, L, Y, g, precondition, rtol, max_cg, x0=None):
    """CG on ``H d = -g`` in the trace inner product; ``(d, lambda^2 lower bound, iterations)``.

    The trace inner product ``<a, b> = sum(weight a b)`` makes ``H`` symmetric;
    CG runs on the equivalent system ``(weight H) d = -weight g``.
    """
    weight = pattern.weight

    def matvec(v):
        return weight * pattern.hessian(L, Y, v)

    d, info = conjugate_gradient(
        matvec, -weight * g, precondition=lambda r: precondition(r / weight), x0=x0, rtol=rtol, max_iter=max_cg
    )
    if x0 is None:
        # From zero, -g^T d_k = d_k^T H d_k grows monotonically towards lambda^2.
        return d, -float(np.dot(weight * g, d)), info.n_iter
    # From a warm start: lambda^2 >= d^T (2 b - H d) with b = -g, for any d.
    Hd = matvec(d)
    return d, float(np.dot(d, -2.0 * weight * g - Hd)), info.n_iter + 1


#: The verbose line of a Newton step (the decrement and residual of the iterate it started from).


#: Stencil offsets (the diagonal included) of the nearest-neighbour lattice: only there is the
#: torus model matched to the diagonal of ``inv(Theta)`` (see :func:`_preconditioner`).
NEAREST_NEIGHBOUR_OFFSETS = 3

#: Relative accuracy of the smallest eigenvalue that shifts the torus model.
EIGENVALUE_RTOL = 1e-3


def _preconditioner(pattern, lattice, L, Y, x, w=None, start=None):
    """``r -> M^{-1} r``: the torus model's inverse Newton operator on a lattice, else the embedding's.

    ``w``: ``inv(Theta)`` on the pattern (from ``Y`` if not given). ``start``: a first vector for
    the smallest eigenvalue (the last one is left in ``pattern.last_eigenvector``).
    """
    if lattice is not None:
        # Theta = D C D with D = sqrt(diag Theta) and C modelled as stationary; the model's smallest
        # eigenvalue is C's own (inverse iteration, a few triangular solves). Measured at the ML
        # solution (n = 1000): the condition number of the preconditioned system on L L^T at 12 x 12
        # and 16 x 16 is 152 and 316 (1.5e3 and 4.8e3 unscaled; the median stencil's Dirichlet
        # minimum as the shift: not positive definite); on the 5-point 200 x 200 lattice the Dirichlet
        # shift took 84 CG iterations over 5 Newton steps, the iterate's eigenvalue 35.
        d = np.empty(pattern.p)
        d[pattern.rows[pattern.diagonal]] = np.sqrt(x[pattern.diagonal])
        # Warm-started from the previous iterate's eigenvector, stopped at 1e-3 (the shift matters to
        # a factor of 2, not to 1e-3): 3-6 steps instead of 30 (60 triangular solves, 7 % of the fit on
        # the 500 x 500 5-point lattice).
        minimum = pattern.smallest_eigenvalue(L, scale=d, start=start, rtol=EIGENVALUE_RTOL)
        # The model's inverse has the diagonal of inv(Theta) (variance): the torus' variance is uniform,
        # while a Dirichlet field's falls towards the boundary. At the true 5-point precision of 8 x 8
        # to 24 x 24 grids the condition number is about the same (3.3 against 3.0, 5.6 against 5.7),
        # but along the fits (n = 1000): on the 316 x 316 lattice the same CG counts gave a certified
        # gap of 0.0037 instead of 73 (q / n = 299), on 500 x 500 4 Newton steps and 34 CG iterations
        # instead of 5 and 56, and a gap of 44 instead of 6310 (q / n = 749).
        # On wider stencils the match makes the model worse: on L L^T (13 points, n = 1000) the
        # 40 x 40 fit took 2003 CG iterations in 10 steps and 13.7 s CPU to a gap of 73 with it,
        # 251 in 11 steps and 2.4 s to a gap of 0.39 without; at 78 x 78 the CG solves hit their cap.
        variance = None
        if len(lattice.offsets) <= NEAREST_NEIGHBOUR_OFFSETS:
            if w is None:
                w = pattern.values(Y)
            variance = np.empty(pattern.p)
            variance[pattern.rows[pattern.diagonal]] = w[pattern.diagonal]
        return TorusPreconditioner(lattice, x, minimum=minimum, scale=d, variance=variance)
    return lambda r: pattern.hessian(L, Y, r, inverse=True)


def _warn_cost(step, max_cg, elapsed, seconds_per_cg, lattice):
    """The fit's :class:`~skmrf.exceptions.CostWarning`: a Newton system took ``max_cg`` CG iterations."""
    preconditioner = "stationary-torus" if lattice is not None else "chordal"
    warn(
        f"Newton-CG covariance selection: the Newton system of step {step} needed the cap of {max_cg} "
        f"conjugate-gradient iterations, {elapsed:.3g} s into the iterations ({seconds_per_cg:.2g} s an "
        f"iteration): the {preconditioner} preconditioner fits this pattern poorly (an ill-conditioned "
        f"precision, or a stencil wider than nearest neighbours), so each further step may cost up to "
        f"{2 * max_cg * seconds_per_cg:.3g} s and many steps may follow. Pass max_time to stop at a "
        "certified duality gap (duality_gap_ reports it), or a larger decrement_tol.",
        CostWarning,
    )


def _confirmed(pattern, s, x, dx, f, decrement_tol):
    """The full step ``(L, log det, f)`` if it lowers ``f`` by at most ``2 decrement_tol``, else None.

    Near the optimum it lowers ``f`` by about ``lambda^2 / 2``; a much larger
    fall means the computed decrement was wrong (an ill-conditioned system, or a
    likelihood without a maximum). A step that leaves the cone does not confirm.
    One Cholesky factorisation.
    """
    L, log_det = pattern.cholesky(x + dx)
    if L is None:
        return None
    f_new = -log_det + float(np.dot(pattern.weight * s, x + dx))
    return (L, log_det, f_new) if f_new >= f - 2 * decrement_tol else None


def _line_search(pattern, s, x, dx, f, decrement):
    """Backtracking (Armijo) along ``dx``; ``(t, f, (L, log det))`` or None when no step descends.

    A step whose Cholesky factorisation fails is too long. Below a decrement of
    ``1e-12 |f|`` the change of ``f`` is lost in its rounding, so Armijo's test is
    noise: the full positive definite step is taken.
    """
    weight = pattern.weight

    def evaluate(t):
        L_new, logdet_new = pattern.cholesky(x + t * dx)
        if L_new is None:
            return None, None
        return -logdet_new + float(np.dot(weight * s, x + t * dx)), (L_new, logdet_new)

    return backtrack(evaluate, f, decrement, full_step=decrement <= 1e-12 * max(1.0, abs(f)))


# Longer than 60 lines: one Newton-CG loop whose three stopping rules (tolerance, certified
# decrement, time budget) share its state; split, each part would need most of it passed in.
def newton_cg_covsel(
    pattern,
    s,
    x0,
    tol=1e-10,
    max_iter=100,
    max_cg=250,
    decrement_tol=None,
    lattice=None,
    max_time=None,
    callback=None,
    certify=True,
    warn_cost=True,
):
    """Maximum-likelihood precision on a pattern by Newton-CG on its chordal embedding.

    Each Newton system is solved by preconditioned CG truncated at the
    forcing term ``min(0.1, sqrt(residual))``; a backtracking line search
    keeps every iterate positive definite (a failed Cholesky factorisation
    rejects the step).

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
    decrement_tol : float, optional
        Also stop when ``lambda^2 / 2 <= decrement_tol``, after taking the full
        Newton step (when it descends).
        The CG estimate of ``lambda^2`` is a lower bound, short by at most a
        factor ``1 + rtol^2 kappa`` (``kappa`` the condition number of the
        preconditioned system); before stopping, the system is re-solved to
        ``rtol = CONFIRM_RTOL``, and the full Newton step must not lower the
        objective by more than ``2 decrement_tol`` (one more factorisation;
        near the optimum the step lowers it by about ``lambda^2 / 2``).
    lattice : Lattice, optional
        Use the stationary-torus preconditioner of this lattice (else the
        chordal one).
    max_time : float, optional
        Stop at the first iterate reached this many seconds (wall clock) after
        the start; a CG solve is cut short to end near it too (its iterations
        capped by the time the previous ones took).
    callback : callable, optional
        ``callback(n_iter, objective=..., decrement=..., residual=..., n_cg=..., cg_seconds=...,
        step_length=...)`` once per step (the line search's ``t``, or the full step taken at
        statistical precision).
    certify : bool, default=True
        Keep the last Newton system's dual point (``newton_dual`` of the
        result, one more Hessian product) for the caller's certificate.
    warn_cost : bool, default=True
        Warn (a :class:`~skmrf.exceptions.CostWarning`, once) when a Newton system
        reaches ``max_cg``; never with ``max_time``, which bounds the cost already.

    Returns
    -------
    NewtonResult

    Raises
    ------
    ValueError
        If ``x0`` is not positive definite.
    """
    weight = pattern.weight
    scale = float(np.max(s[pattern.diagonal]))
    began = time.perf_counter()
    deadline = None if max_time is None else began + max_time
    x = np.array(x0, dtype=np.float64)
    L, logdet = pattern.cholesky(x)
    if L is None:
        raise ValueError("The initial precision for Newton's method is not positive definite.")
    f = -logdet + float(np.dot(weight * s, x))
    residual, cg_iterations, n_iter, seconds_per_cg, eigenvector = np.inf, [], 0, None, None
    dual, warned = None, max_time is not None or not warn_cost  # a time limit bounds the cost already
    while True:
        decrement = np.nan
        Y, w = pattern.inverse_on_pattern(L)
        g = s - w
        residual = float(np.max(np.abs(g))) / scale
        if residual <= tol or n_iter == max_iter or (deadline is not None and time.perf_counter() > deadline):
            break
        precondition = _preconditioner(pattern, lattice, L, Y, x, w, eigenvector)
        eigenvector = getattr(pattern, "last_eigenvector", None) if lattice is not None else None
        rtol = min(0.1, np.sqrt(residual))
        cap = max_cg
        if deadline is not None and seconds_per_cg:
            # A CG solve can take longer than all the Newton steps before it: keep it within the budget.
            cap = int(min(max_cg, max(1, (deadline - time.perf_counter()) / seconds_per_cg)))
        started = time.perf_counter()
        dx, lam2, n_cg = _newton_direction(pattern, L, Y, g, precondition, rtol, cap)
        cg_seconds = time.perf_counter() - started
        seconds_per_cg = cg_seconds / max(n_cg, 1)
        capped = n_cg >= max_cg
        decrement = lam2 / 2
        if decrement_tol is not None and decrement <= decrement_tol and rtol > CONFIRM_RTOL:
            dx, lam2, more = _newton_direction(pattern, L, Y, g, precondition, CONFIRM_RTOL, max_cg, x0=dx)
            n_cg += more
            capped = capped or more > max_cg  # more counts the one product of the warm start
            decrement = lam2 / 2
        if capped and not warned:
            warned = True
            _warn_cost(n_iter + 1, max_cg, time.perf_counter() - began, seconds_per_cg, lattice)
        cg_iterations.append(n_cg)
        final = None
        if decrement_tol is not None and decrement <= decrement_tol:
            final = _confirmed(pattern, s, x, dx, f, decrement_tol)
        # The run may end after this step: keep the dual point this Newton system predicts (one more
        # Hessian product). inv(Theta)'s own fill can fail to complete where it does not: at p = 10^6
        # on the 5-point lattice the stopped fit's gradient reached 0.6 at one entry.
        cg_figures = dict(decrement=decrement, residual=residual, n_cg=n_cg, cg_seconds=cg_seconds)
        dual = None
        if certify and (final is not None or deadline is not None or n_iter + 1 == max_iter):
            dual = pattern.newton_dual(L, Y, dx)
        if final is not None:
            # Statistical precision: take the (already factorised) full step when it descends, which
            # leaves the iterate quadratically closer (a tighter certified gap), and stop.
            if final[2] < f:
                x = x + dx
                L, logdet, f = final
                n_iter += 1
                if callback is not None:
                    callback(n_iter, objective=f, step_length="1 (statistical precision)", **cg_figures)
                Y, w = pattern.inverse_on_pattern(L)
                residual = float(np.max(np.abs(s - w))) / scale
            break
        step = _line_search(pattern, s, x, dx, f, lam2)
        if step is None:
            break  # no descent along dx: stop at the current iterate
        t, f, (L, logdet) = step
        x = x + t * dx
        n_iter += 1
        if callback is not None:
            callback(n_iter, objective=f, step_length=f"{t:.3g}", **cg_figures)
    return NewtonResult(x, n_iter, residual, decrement, f, logdet, cg_iterations, L, Y, dual)
