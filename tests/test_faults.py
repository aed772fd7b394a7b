"""Faults during a fit: a Dask worker killed mid-fit, and a fit interrupted by Ctrl-C.

A killed worker's tasks are run again by the scheduler; every task of a chunked fit is a pure
function of its block, so the fit finishes with the same parameters, bit for bit. A fit
interrupted by SIGINT raises KeyboardInterrupt and leaves no worker processes and no temporary
files behind.
"""

import os
import signal

import numpy as np
import pytest

from skmrf import ExactMaxLikelihood, GaussianLAP, LAPEstimator

from . import test_chunks

# The data and the 2-worker cluster of the chunked fits' tests (module-scoped: a cluster per module).
data, gaussian_data, two_workers = test_chunks.data, test_chunks.gaussian_data, test_chunks.two_workers

# -- a Dask worker killed in the middle of a chunked fit ------------------------------------------


def _die_once_at(block, runs, kill_at):
    """Dask task: ``block`` unchanged; the run numbered ``kill_at`` (counted in the file ``runs``,
    over every worker) kills its own worker process, once (``runs + ".killed"`` marks it)."""
    with open(runs, "a") as f:
        f.write(".")
    if kill_at is not None and os.path.getsize(runs) >= kill_at:
        try:
            os.close(os.open(runs + ".killed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return block
        os.kill(os.getpid(), signal.SIGKILL)
    return block


def _fit_with_a_worker_killed(client, make, X, tmp_path):
    """``(disturbed, undisturbed)``: ``make().fit`` on ``X`` on the cluster of ``client`` (whose
    nannies restart a killed worker), with one worker killed by the task that reads a block in
    the middle of the fit's last pass over the blocks, and without.

    Both fits read ``X`` through the same extra task per block (:func:`_die_once_at`), so their
    graphs are the same; the undisturbed fit counts the reads, which places the kill."""
    client.wait_for_workers(2)
    runs = str(tmp_path / "runs")
    undisturbed = make().fit(X.map_blocks(_die_once_at, runs, None, dtype=X.dtype))
    n_runs, n_blocks = os.path.getsize(runs), X.numblocks[0]
    os.remove(runs)
    kill_at = n_runs - n_blocks + n_blocks // 2 + 1  # a block in the middle of the last pass
    client.wait_for_workers(2)
    disturbed = make().fit(X.map_blocks(_die_once_at, runs, kill_at, dtype=X.dtype))
    assert os.path.exists(runs + ".killed"), "no worker was killed"
    assert os.path.getsize(runs) > n_runs  # the killed worker's blocks were read again
    return disturbed, undisturbed


@pytest.mark.slow
def test_lap_dask_worker_killed_mid_fit_same_result(two_workers, data, tmp_path):
    da = pytest.importorskip("dask.array")
    X = da.from_array(data, chunks=(100, 12))

    def make():
        return LAPEstimator("grid:3x4", score_method="exact")

    disturbed, undisturbed = _fit_with_a_worker_killed(two_workers, make, X, tmp_path)
    # Integer counts: bit for bit the in-memory fit, and so the undisturbed one.
    np.testing.assert_array_equal(disturbed.theta_, make().fit(data).theta_)
    np.testing.assert_array_equal(disturbed.theta_, undisturbed.theta_)
    assert disturbed.log_partition_ == undisturbed.log_partition_


@pytest.mark.slow
def test_exact_ml_dask_worker_killed_mid_fit_same_result(two_workers, data, tmp_path):
    da = pytest.importorskip("dask.array")
    X = da.from_array(data, chunks=(100, 12))

    def make():
        return ExactMaxLikelihood("grid:3x4", alpha=0.01)

    disturbed, undisturbed = _fit_with_a_worker_killed(two_workers, make, X, tmp_path)
    np.testing.assert_array_equal(disturbed.theta_, make().fit(data).theta_)
    np.testing.assert_array_equal(disturbed.theta_, undisturbed.theta_)
    assert disturbed.n_iter_ == undisturbed.n_iter_


@pytest.mark.slow
def test_gaussian_lap_dask_worker_killed_mid_fit_same_result(two_workers, gaussian_data, tmp_path):
    da = pytest.importorskip("dask.array")
    X = da.from_array(gaussian_data, chunks=(100, 16))

    def make():
        return GaussianLAP("grid:4x4", shrinkage=0.05)

    disturbed, undisturbed = _fit_with_a_worker_killed(two_workers, make, X, tmp_path)
    # The float sums of the blocks are combined by the same tree of tasks whichever worker
    # runs them: bit for bit the undisturbed fit (not the in-memory one, summed in another order).
    P, R = disturbed.get_precision(), undisturbed.get_precision()
    P, R = (M.toarray() if hasattr(M, "toarray") else M for M in (P, R))
    np.testing.assert_array_equal(P, R)
    np.testing.assert_array_equal(disturbed.location_, undisturbed.location_)
    np.testing.assert_array_equal(disturbed.scale_, undisturbed.scale_)
