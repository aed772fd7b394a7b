"""Serial fallback of the parallel paths (#10 item 7): no pool until the work pays for it.

The thresholds are measured (``benchmarks/parallel_threshold.py``); these tests check the
logic around them, never a time.
"""

import multiprocessing
import warnings

import numpy as np
import pytest
from joblib import effective_n_jobs, parallel_config

from skmrf import AdaptiveSchedule, GaussianLAP, LAPEstimator, MCMCMaxLikelihood, PseudoLikelihoodEstimator, grid_graph
from skmrf._utils import _parallel
from skmrf._utils._parallel import parallel_or_serial, workers_for
from skmrf.datasets import sample_random_mrf

from .conftest import SERIAL_FALLBACK_THRESHOLDS


def test_workers_for_caps_the_workers_by_the_work():
    assert workers_for(2, 0, 10) == 1
    assert workers_for(2, 19, 10) == 1  # not enough for two workers
    assert workers_for(2, 20, 10) == 2
    assert workers_for(2, 1e12, 10) == 2  # never more than n_jobs
    assert workers_for(8, 35, 10) == 3
    assert workers_for(-1, 1e12, 10) == effective_n_jobs(-1)


def test_workers_for_resolves_n_jobs_as_joblib_does():
    assert workers_for(None, 1e12, 10) == 1
    assert workers_for(1, 1e12, 10) == 1
    with parallel_config(n_jobs=2):
        assert workers_for(None, 1e12, 10) == 2
        assert workers_for(None, 5, 10) == 1  # the cap holds in a parallel_config context too
    assert workers_for(2, 1, 0) == 2  # threshold 0: no cap


def _workers_in_a_daemon(conn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = workers_for(2, 1e12, 10, prefer="threads")
        thread_warnings = [str(w.message) for w in caught]
        processes = workers_for(2, 1e12, 10)  # joblib rightly warns that its processes get n_jobs=1
    conn.send((threads, processes, thread_warnings))
    conn.close()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method")
def test_thread_sites_keep_their_workers_in_a_daemonic_process():
    # A multiprocessing worker (the benchmarks' capped fits, a user's Pool): joblib's process
    # backend resolves any n_jobs to 1 there, but threads still run; the thread call sites
    # ran serially there until workers_for resolved n_jobs with their preference.
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_workers_in_a_daemon, args=(child,), daemon=True)
    proc.start()
    threads, processes, thread_warnings = parent.recv()
    proc.join()
    assert threads == 2
    assert processes == 1
    assert thread_warnings == []  # joblib's "setting n_jobs=1" was emitted for threads that ran (stop 50)


def test_the_thread_preference_keeps_the_users_configuration():
    with parallel_config(backend="sequential"):
        assert workers_for(2, 1e12, 10, prefer="threads") == 1
    with parallel_config(backend="threading", n_jobs=3):
        assert workers_for(None, 1e12, 10, prefer="threads") == 3
    with parallel_config(n_jobs=2):
        assert workers_for(None, 1e12, 10, prefer="threads") == 2  # the user's n_jobs holds for threads


def test_parallel_or_serial_makes_no_pool_for_one_worker():
    with parallel_or_serial(1, prefer="threads") as pool:
        assert pool is None
    with parallel_or_serial(2, prefer="threads") as pool:
        assert pool is not None


class _NoPool:
    """Stands in for joblib.Parallel: making a pool is an error."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("a pool was made")


def _small_fits():
    """``(threshold, fit(n_jobs))`` of each parallel path, on problems far below its threshold."""
    X, _ = sample_random_mrf(grid_graph(3, 3), 300, n_states=3, random_state=0)
    Xb, _ = sample_random_mrf(grid_graph(3, 3), 300, random_state=0)
    Z = np.random.default_rng(0).normal(size=(400, 64))
    return [
        ("PL_MIN_WORK_PER_WORKER", lambda nj: PseudoLikelihoodEstimator("grid:3x3", n_jobs=nj).fit(X).theta_),
        ("LAP_MIN_WORK_PER_WORKER", lambda nj: LAPEstimator("grid:3x3", n_jobs=nj).fit(X).theta_),
        # Two blocks of chains, so the parallel path has two tasks.
        (
            "MCMC_MIN_WORK_PER_WORKER",
            lambda nj: (
                MCMCMaxLikelihood(
                    "grid:3x3",
                    max_coupling=0.2,
                    schedule=AdaptiveSchedule(n_iter=3, n_chains=5000, n_sweeps=2),
                    n_jobs=nj,
                    random_state=0,
                )
                .fit(Xb)
                .theta_
            ),
        ),
        # 64 features would take the dense-covariance path, which has no n_jobs; the
        # cluster-Gram path is forced below.
        ("GLAP_MIN_WORK_PER_WORKER", lambda nj: GaussianLAP("grid:8x8", n_jobs=nj).fit(Z).precision_),
    ]


PATHS = ["pseudo", "lap", "mcmc", "gaussian-lap"]


@pytest.fixture
def small_fit(request, monkeypatch):
    from skmrf._kernels.gaussian import lap as lap_kernel

    monkeypatch.setattr(lap_kernel, "_DENSE_GRAM_MAX_FEATURES", 0)
    threshold, fit = _small_fits()[PATHS.index(request.param)]
    (target,) = [t for t in SERIAL_FALLBACK_THRESHOLDS if t.rsplit(".", 1)[1] == threshold]
    return target, fit


def _quiet(fit, n_jobs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small data: a missing joint state is warned about elsewhere
        return fit(n_jobs)


@pytest.mark.parametrize("small_fit", PATHS, indirect=True)
def test_small_fit_runs_serially_and_gives_the_same_result(small_fit, monkeypatch):
    _, fit = small_fit
    one = _quiet(fit, 1)
    monkeypatch.setattr(_parallel, "Parallel", _NoPool)
    two = _quiet(fit, 2)
    # The same serial code, chunks included: bit-identical (PL too, whose parallel path
    # sums its chunks in another order).
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("small_fit", PATHS, indirect=True)
def test_each_path_reads_its_own_threshold(small_fit, monkeypatch):
    # At threshold 0 the same small fit asks for a pool: the path is wired to its constant.
    target, fit = small_fit
    monkeypatch.setattr(target, 0)
    monkeypatch.setattr(_parallel, "Parallel", _NoPool)
    with pytest.raises(AssertionError, match="a pool was made"):
        _quiet(fit, 2)
    _quiet(fit, 1)  # n_jobs=1 never makes one
