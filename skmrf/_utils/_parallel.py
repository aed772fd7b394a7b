"""How many workers a parallel call site gets: none beyond the first until the work pays for them.

A pool costs something before it computes anything (threads or processes to start or wake,
one dispatch per task, the results to gather), and on small problems that cost exceeded the
whole computation: ``PseudoLikelihoodEstimator(n_jobs=2)`` was 17x slower than ``n_jobs=1``
on a 3x3 grid. Every call site therefore measures its work in a unit of its own and asks
:func:`workers_for` how many workers that work can keep busy; below the site's measured
threshold the answer is 1 and the site runs its serial path, without a pool
(``benchmarks/parallel_threshold.py`` measures the thresholds).

A pool of processes (joblib's loky backend) is kept after a fit, to be reused by the next
one (a measured speed-up); after a fit interrupted by Ctrl-C its workers are killed instead,
so that none is left computing or waiting (:func:`parallel_or_serial`).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager, nullcontext
from multiprocessing import current_process

from joblib import effective_n_jobs, parallel_config
from joblib.externals.loky import reusable_executor

from ._sklearn_compat import Parallel

__all__ = ["parallel_or_serial", "workers_for"]


def workers_for(n_jobs, work, min_work_per_worker, prefer=None):
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
    prefer : {"threads", "processes"} or None
        The backend preference the call site gives :func:`parallel_or_serial`. In a daemonic
        process (a multiprocessing worker) joblib's default process backend resolves any
        ``n_jobs`` to 1; with ``"threads"`` it is resolved by the thread backend there, which
        runs.

    Returns
    -------
    int
        ``min(effective_n_jobs(n_jobs), max(1, work // min_work_per_worker))``: 1 below
        ``2 * min_work_per_worker``, so small problems run serially whatever ``n_jobs`` or
        the backend (a Dask cluster included).
    """
    threads_in_daemon = prefer == "threads" and current_process().daemon
    with warnings.catch_warnings():
        if threads_in_daemon:  # joblib's "setting n_jobs=1" is about its processes, not these threads
            warnings.filterwarnings("ignore", "Loky-backed parallel loops cannot be called", UserWarning)
        n = effective_n_jobs(n_jobs)
    if n == 1 and threads_in_daemon:
        # joblib's process backend answers 1 in a daemonic process, threads run there. (Not
        # parallel_config(prefer="threads"): joblib then drops a configured n_jobs.)
        with parallel_config(backend="threading"):
            n = effective_n_jobs(n_jobs)
    if n <= 1 or min_work_per_worker <= 0:
        return max(1, n)
    return int(max(1, min(n, work // min_work_per_worker)))


def parallel_or_serial(n_workers, **kwargs):
    """Context manager giving a :class:`joblib.Parallel` of ``n_workers``, or None for one.

    With one worker no pool is made: the caller runs its serial path on None.
    ``kwargs`` go to :class:`joblib.Parallel` (``prefer``, ``verbose``). A KeyboardInterrupt
    in the block (Ctrl-C) kills the workers of joblib's reusable process pool, wherever it
    lands (joblib kills them only when it lands while the pool computes), and propagates.
    """
    if n_workers <= 1:
        return nullcontext(None)
    return _killing_workers_on_interrupt(Parallel(n_jobs=n_workers, **kwargs))


@contextmanager
def _killing_workers_on_interrupt(parallel):
    try:
        with parallel:
            yield parallel
    except KeyboardInterrupt:
        _kill_process_workers()
        raise


def _kill_process_workers():
    """Shut down joblib's reusable process pool (loky's), killing its workers, if it exists.

    Never called on a normal return: the next fit reuses the pool. The pool is read from
    loky's module (it has no public way to ask without making one, and a process with it).
    """
    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)
