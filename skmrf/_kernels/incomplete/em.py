"""Maximum likelihood from incomplete data: the EM and gradient loops on the decomposed data term.

The objective is the mean observed-data log-likelihood ``(sum_i log Z(d_i)) / N - log Z`` (Refaat
and Darwiche, Eq. 1) less the ridge. Its data term is :class:`~.term.IncompleteDataTerm` (Eq. 2,
decomposed and compressed); the model term one junction-tree calibration per evaluation
(:class:`~.term.ModelTerm`). EM's M-step is the exact kernel on the expected statistics.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..._penalty import ridge_value_and_gradient
from ..._solvers import minimize_in_box, projected_max
from ..._utils._budgets import EM_MIN_WORK_PER_WORKER
from ..._utils._parallel import parallel_or_serial, workers_for
from ..exact import fit_max_likelihood
from .term import IncompleteDataTerm, ModelTerm

__all__ = ["M_STEP_MAX_ITER", "IncompleteFit", "fit_incomplete"]

#: L-BFGS iterations of one M-step (warm-started, so usually a handful).
M_STEP_MAX_ITER = 200


class IncompleteFit(NamedTuple):
    """What :func:`fit_incomplete` ran: its iterations and the plan of the data term."""

    n_iter: int
    #: Mean log-likelihood per row at the start and after every iteration.
    trace: np.ndarray
    #: Largest projected gradient of the penalised objective at the end.
    grad_max: float
    #: The data term's decomposition plan (``IncompleteDataTerm.plan``).
    plan: object
    n_subnetworks: int
    n_distinct_rows: int
    inferences_per_iteration: int


def fit_incomplete(
    model, rows, penalty, *, method, decompose, max_iter, tol, max_bytes=None, n_jobs=None, verbose=0, callback=None
):
    """Penalised maximum likelihood of ``rows`` (missing entries coded -1), from ``model.theta``.

    Parameters
    ----------
    model : DiscreteMRF
        Its ``theta`` is the start; on return it holds the estimate.
    rows : Rows
        Rows with at least one observed entry each, and their weights.
    penalty : float or CentredRidge
        The ridge, as the exact kernel takes it.
    method : {"em", "gradient"}
        Generalised EM (M-step: the exact kernel on the expected statistics), or L-BFGS-B on the
        observed-data log-likelihood directly.
    decompose, max_bytes
        As :class:`~.term.IncompleteDataTerm` takes them.
    n_jobs : int or None
        Workers for the data term (threads), below a measured work per worker run serially.
    verbose : int
        joblib's verbosity for that pool.
    callback : callable, optional
        ``callback(n_iter, log_likelihood=..., penalised=..., grad_max=...)`` after every iteration
        (no ``penalised`` for ``method="gradient"``).

    Returns
    -------
    theta : ndarray
    info : IncompleteFit
    """
    lay = model.layout
    data = IncompleteDataTerm(lay, rows.X, decompose=decompose, max_bytes=max_bytes, weight=rows.weight)
    model_term = ModelTerm(lay, model.get_junction_tree(max_bytes), max_bytes)
    n_rows = rows.total

    def evaluate(theta, parallel):
        """Mean log-likelihood, its gradient and the expected mean statistics at theta."""
        full = lay.full_tables(theta)
        value, expected = data.evaluate(full, parallel)
        log_z, marginals = model_term(full)
        stats = expected[lay.theta_pos] / n_rows
        return value / n_rows - log_z, stats - marginals[lay.theta_pos], stats

    report = callback or (lambda step, **metrics: None)
    n_workers = workers_for(n_jobs, data.work, EM_MIN_WORK_PER_WORKER, prefer="threads")
    with parallel_or_serial(n_workers, prefer="threads", verbose=verbose) as pool:
        loop = _em if method == "em" else _gradient
        trace, gmax, n_iter = loop(model, evaluate, penalty, pool, max_iter, tol, max_bytes, report)
    info = IncompleteFit(
        n_iter,
        np.asarray(trace),
        gmax,
        data.plan,
        len(data.networks),
        data.n_patterns,
        data.n_calibrations + 1,
    )
    return model.theta, info


def _penalised(penalty, theta, ll, grad):
    ridge, ridge_g = ridge_value_and_gradient(penalty, theta)
    return ll - ridge, grad - ridge_g


def _em(model, evaluate, penalty, pool, max_iter, tol, max_bytes, report):
    theta = model.theta
    ll, grad, stats = evaluate(theta, pool)
    trace = [ll]
    gmax = projected_max(theta, -_penalised(penalty, theta, ll, grad)[1])
    n_iter = 0
    while gmax > tol and n_iter < max_iter:
        # Generalised EM: far from the optimum an M-step solved to a tenth of the current
        # gradient is enough; it still increases Q (L-BFGS descends from theta), so the
        # likelihood still never decreases, and the tolerance tightens to tol at the end.
        fit_max_likelihood(model, stats, penalty, M_STEP_MAX_ITER, max(tol, 0.1 * gmax), max_bytes)
        theta = model.theta
        ll, grad, stats = evaluate(theta, pool)
        trace.append(ll)
        penalised, penalised_grad = _penalised(penalty, theta, ll, grad)
        gmax = projected_max(theta, -penalised_grad)
        n_iter += 1
        report(n_iter, log_likelihood=ll, penalised=penalised, grad_max=gmax)
    return trace, gmax, n_iter


def _gradient(model, evaluate, penalty, pool, max_iter, tol, max_bytes, report):
    trace = []

    def objective_and_gradient(theta):
        ll, grad, _ = evaluate(theta, pool)
        f, g = _penalised(penalty, theta, ll, grad)
        objective_and_gradient.ll = ll
        return -f, -g

    def step(it, objective, grad_max):
        trace.append(objective_and_gradient.ll)
        report(it, log_likelihood=objective_and_gradient.ll, grad_max=grad_max)

    objective_and_gradient(model.theta)
    trace.append(objective_and_gradient.ll)
    theta, _, g, n_iter = minimize_in_box(objective_and_gradient, model.theta, max_iter, tol, step)
    model.theta = theta
    trace[-1] = objective_and_gradient.ll  # minimize_in_box evaluates the returned point last
    return trace, projected_max(theta, g), n_iter
