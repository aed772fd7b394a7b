"""Besag's maximum pseudo-likelihood for discrete MRFs: the objective and the kernel.

The pseudo-log-likelihood of a row is ``sum_i log p(x_i | x_-i)`` (LAP paper,
Eq. 6). The full conditional of ``x_i`` only depends on ``x_i`` and its Markov
blanket, so the data enter through the distinct configurations of each
variable's blanket and their counts ("records"), computed once; every
objective evaluation is then a gather, a sparse sum and a scatter over these
records, with no Python loop over rows or variables.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from ..data import distinct_projections
from ..solvers import minimize_in_box, projected_max
from ..utils._memory import LBFGS_VECTORS, check_fit_memory
from ..utils._parallel import parallel_or_serial, workers_for
from ..utils._sklearn_compat import delayed

__all__ = ["PseudoLikelihoodFit", "PseudoLikelihoodObjective", "fit_pseudo_likelihood"]

#: Work (:attr:`PseudoLikelihoodObjective.work` of one evaluation) each thread needs before a
#: fit runs its objective in parallel. Measured (benchmarks/results/parallel_threshold.txt):
#: t(2 jobs) / t(1 job) was 34 at 1e3 units, 3.3 at 7e4, 1.0 at 1.7e5, 0.91 at 7.6e5; the
#: per-evaluation dispatch is paid hundreds of times per fit, so two threads start at 8e5.
PL_MIN_WORK_PER_WORKER = 4e5


class PseudoLikelihoodObjective:
    """Negative mean pseudo-log-likelihood plus ridge, with its gradient.

    Parameters
    ----------
    layout : skmrf.parametrisation.CliqueLayout
        Parameter layout of the model.
    graph : MRFGraph
    X : ndarray of int of shape (n_samples, n_variables)
    alpha : float
        Ridge ``alpha / 2 * ||theta||^2``.
    n_chunks : int, default=1
        Records are split into this many chunks, evaluated by ``parallel``
        (:meth:`split` changes it).
    weight : ndarray of shape (n_samples,), optional
        Row weights; a record's weight is then the sum of its rows' weights.
    total : float, optional
        The number of rows the objective averages over: ``n_samples``, or the sum of the weights.

    Notes
    -----
    For a record ``r`` (variable ``v``, blanket configuration, weight
    ``w_r = count / n_samples``) and a candidate state ``k``, the conditional
    logit is the sum of the full-table entries of every clique containing
    ``v`` at the record's configuration with ``x_v = k``. With
    ``P_rk = softmax_k(logit_rk)`` the objective and gradient are

    .. math::

        f = -\\sum_r w_r \\log P_{r, x_r} + \\frac{\\alpha}{2}\\|\\theta\\|^2, \\qquad
        \\frac{\\partial f}{\\partial \\theta_a} = -\\sum_{r,k} w_r ([k = x_r] - P_{rk})
        \\, \\phi_a(x_{r}^{v \\to k}) + \\alpha\\theta_a,

    the multi-state form of the contrastive gradient of Section 2.2 of the
    LAP paper. One evaluation costs ``O(n_pairs * K)`` where ``n_pairs`` is
    the number of (record, clique containing its variable) pairs.
    """

    def __init__(self, layout, graph, X, alpha, n_chunks=1, weight=None, total=None):
        self.layout = layout
        self.alpha = float(alpha)
        k = layout.n_states
        kmax = int(k.max())
        self.kmax = kmax
        blankets = [tuple(sorted({v} | graph.neighbours[v])) for v in range(X.shape[1])]
        rec_var, rec_row, rec_cnt = distinct_projections(X, blankets, k, weight=weight)
        self.n_records = len(rec_var)
        n_var = X.shape[1]
        self._check_memory(graph, rec_var, kmax)
        var_count = np.bincount(rec_var, minlength=n_var)
        var_start = np.concatenate([[0], np.cumsum(var_count)[:-1]])
        pos_parts, rec_parts = [], []
        for _, var, strides, offsets in layout.groups:
            s = var.shape[1]
            for j in range(s):
                tgt = var[:, j]
                rep = var_count[tgt]
                entry = np.repeat(np.arange(len(tgt)), rep)
                first = np.repeat(np.cumsum(rep) - rep, rep)
                rec = var_start[tgt][entry] + (np.arange(len(entry)) - first)
                rows = rec_row[rec]
                others = [o for o in range(s) if o != j]
                base = offsets[entry].copy()
                for o in others:  # loop over clique positions (at most the clique size)
                    base += X[rows, var[entry, o]] * strides[entry, o]
                kk = np.minimum(np.arange(kmax)[None, :], k[tgt][entry][:, None] - 1)
                pos_parts.append(base[:, None] + kk * strides[entry, j][:, None])
                rec_parts.append(rec)
        pos = np.concatenate(pos_parts)
        rec = np.concatenate(rec_parts)
        order = np.argsort(rec, kind="stable")
        pos, rec = pos[order], rec[order]
        x_own = X[rec_row, rec_var]
        invalid = np.arange(kmax)[None, :] >= k[rec_var][:, None]
        weight = rec_cnt / (X.shape[0] if total is None else total)
        self.n_pairs = len(rec)
        self._records = (pos, rec, x_own, invalid, weight)
        self.split(n_chunks)

    def _check_memory(self, graph, rec_var, kmax):
        """Refuse, before building them, records and an L-BFGS history larger than this machine's memory.

        Each (record, clique containing its variable) pair holds ``kmax`` table positions (int64)
        and, per evaluation, as many logits and residuals (float64): 24 bytes per candidate state.
        """
        members = np.concatenate([var.ravel() for _, var, _, _ in self.layout.groups])
        in_cliques = np.bincount(members, minlength=graph.n_variables)
        n_pairs = float(in_cliques[rec_var].sum())
        n_params = float(self.layout.n_params)
        check_fit_memory(
            "PseudoLikelihoodEstimator",
            24.0 * n_pairs * kmax + 8.0 * LBFGS_VECTORS * n_params,
            f"the pseudo-likelihood's {n_pairs:,.0f} (record, clique) pairs of {kmax:,} states each and "
            f"L-BFGS over {n_params:,.0f} parameters",
            "Recode the columns with fewer states, use a sparser graph, or fit on fewer distinct rows.",
        )

    @property
    def work(self):
        """Work of one evaluation: ``n_pairs * kmax``, the logits it gathers and sums.

        Every pass over the records (gather, sparse sums, softmax, gradient scatter) touches
        one logit per (record, clique containing its variable) pair and candidate state.
        """
        return self.n_pairs * self.kmax

    def split(self, n_chunks):
        """Split the records (and their pairs, which are sorted by record) into ``n_chunks`` chunks."""
        pos, rec, x_own, invalid, weight = self._records
        bounds = np.linspace(0, self.n_records, max(1, min(n_chunks, self.n_records)) + 1).astype(np.int64)
        pair_bounds = np.searchsorted(rec, bounds)
        self.chunks = []
        for a, b, pa, pb in zip(bounds[:-1], bounds[1:], pair_bounds[:-1], pair_bounds[1:]):
            r = rec[pa:pb] - a
            summer = sp.csr_matrix((np.ones(len(r)), (r, np.arange(len(r)))), shape=(b - a, len(r)))
            self.chunks.append((pos[pa:pb], summer, x_own[a:b], invalid[a:b], weight[a:b]))

    def __call__(self, theta, parallel=None):
        """Objective and gradient at ``theta``."""
        full = self.layout.full_tables(theta)
        if parallel is None or len(self.chunks) == 1:
            parts = [_pl_chunk(full, *c, self.layout.n_table) for c in self.chunks]
        else:
            parts = parallel(delayed(_pl_chunk)(full, *c, self.layout.n_table) for c in self.chunks)
        f = sum(p[0] for p in parts) + 0.5 * self.alpha * theta @ theta
        gfull = parts[0][1]
        for p in parts[1:]:
            gfull = gfull + p[1]
        return f, gfull[self.layout.theta_pos] + self.alpha * theta


def _pl_chunk(full, pos, summer, x_own, invalid, weight, n_table):
    """Negative weighted pseudo-log-likelihood of a chunk of records and its full-table gradient."""
    logits = summer @ full[pos]
    logits[invalid] = -np.inf
    lse = logsumexp(logits, axis=1)
    own = np.take_along_axis(logits, x_own[:, None], axis=1)[:, 0]
    f = -float(weight @ (own - lse))
    resid = -np.exp(logits - lse[:, None])
    resid[np.arange(len(x_own)), x_own] += 1.0
    resid *= -weight[:, None]
    g = summer.T @ resid
    return f, np.bincount(pos.ravel(), weights=g.ravel(), minlength=n_table)


class PseudoLikelihoodFit(NamedTuple):
    """What :func:`fit_pseudo_likelihood` ran."""

    n_iter: int
    """L-BFGS iterations."""
    grad_max: float
    """Largest projected-gradient component at the solution."""
    pseudo_log_likelihood: float
    """Mean pseudo-log-likelihood of the rows at the solution (the ridge term excluded)."""
    n_records: int
    """Distinct (variable, Markov-blanket configuration) pairs the rows were compressed to."""


def fit_pseudo_likelihood(layout, graph, rows, alpha, *, max_iter, tol, n_jobs=None, callback=None, verbose=0):
    """Maximum pseudo-likelihood parameters by L-BFGS-B from zero.

    Parameters
    ----------
    layout : CliqueLayout
        The model's parameter layout.
    graph : MRFGraph
        The resolved graph (its Markov blankets).
    rows : Rows
        The validated rows and their weights.
    alpha : float
        Ridge ``alpha / 2 * ||theta||^2`` on the mean negative pseudo-log-likelihood.
    max_iter, tol : int, float
        L-BFGS iterations and projected-gradient tolerance.
    n_jobs : int, optional
        Threads evaluating chunks of the objective (serial below :data:`PL_MIN_WORK_PER_WORKER`
        per thread).
    callback : callable, optional
        ``callback(iteration, objective, grad_max)`` after each iteration.
    verbose : int, default=0
        joblib's verbosity is ``verbose - 1``.

    Returns
    -------
    theta : ndarray of shape (n_params,)
    info : PseudoLikelihoodFit
    """
    X, weight = rows.dense()
    obj = PseudoLikelihoodObjective(layout, graph, X, alpha, weight=weight, total=rows.total)
    n_workers = workers_for(n_jobs, obj.work, PL_MIN_WORK_PER_WORKER)
    if n_workers > 1:
        obj.split(n_workers)
    with parallel_or_serial(n_workers, prefer="threads", verbose=max(0, verbose - 1)) as parallel:
        theta, f, g, n_iter = minimize_in_box(
            partial(obj, parallel=parallel), np.zeros(layout.n_params), max_iter, tol, callback
        )
    pll = float(-(f - 0.5 * alpha * theta @ theta))
    return theta, PseudoLikelihoodFit(n_iter, projected_max(theta, g), pll, obj.n_records)
