"""How many workers a parallel call site gets: none beyond the first until the work pays for them.

A pool costs something before it computes anything (threads or processes to start or wake,
one dispatch per task, the results to gather), and on small problems that cost exceeded the
whole computation: ``PseudoLikelihoodEstimator(n_jobs=2)`` was 17x slower than ``n_jobs=1``
on a 3x3 grid. Every call site therefore measures its work in a unit of its own and asks
:func:`workers_for` how many workers that work can keep busy; below the site's measured
threshold the answer is 1 and the site runs its serial path, without a pool
(``benchmarks/parallel_threshold.py`` measures the thresholds).
"""

from __future__ import annotations

from contextlib import nullcontext

from joblib import effective_n_jobs

from ._sklearn_compat import Parallel

__all__ = ["parallel_or_serial", "workers_for"]


def workers_for(n_jobs, work, min_work_per_worker):
    """The number of workers for ``work`` units: ``n_jobs`` resolved, capped by the work.

    Parameters
    ----------
    n_jobs : int or None
        As the estimator's ``n_jobs`` (resolved by :func:`joblib.effective_n_jobs`, so a
        ``joblib.parallel_config`` context applies).
    work : float
        The work of the call, in the call site's unit.
    min_work_per_worker : float
        The work each worker needs to pay for its share of the pool; 0 caps nothing.

    Returns
    -------
    int
        ``min(effective_n_jobs(n_jobs), max(1, work // min_work_per_worker))``: 1 below
        ``2 * min_work_per_worker``, so small problems run serially whatever ``n_jobs`` or
        the backend (a Dask cluster included).
    """
    n = effective_n_jobs(n_jobs)
    if n <= 1 or min_work_per_worker <= 0:
        return max(1, n)
    return int(max(1, min(n, work // min_work_per_worker)))


def parallel_or_serial(n_workers, **kwargs):
    """Context manager giving a :class:`joblib.Parallel` of ``n_workers``, or None for one.

    With one worker no pool is made: the caller runs its serial path on None.
    ``kwargs`` go to :class:`joblib.Parallel` (``prefer``, ``verbose``).
    """
    if n_workers <= 1:
        return nullcontext(None)
    return Parallel(n_jobs=n_workers, **kwargs)
