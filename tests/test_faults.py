"""Faults during a fit: a Dask worker killed mid-fit, and a fit interrupted by Ctrl-C.

A killed worker's tasks are run again by the scheduler; every task of a chunked fit is a pure
function of its block, so the fit finishes with the same parameters, bit for bit. A fit
interrupted by SIGINT raises KeyboardInterrupt and leaves no worker processes and no temporary
files behind.
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from joblib import parallel_config

from skmrf import ExactMaxLikelihood, GaussianLAP, LAPEstimator, PseudoLikelihoodEstimator

from . import test_chunks
from .conftest import SERIAL_FALLBACK_THRESHOLDS

psutil = pytest.importorskip("psutil")

# The data and the 2-worker cluster of the chunked fits' tests (module-scoped: a cluster per module).
data, gaussian_data, two_workers = test_chunks.data, test_chunks.gaussian_data, test_chunks.two_workers
GRID = test_chunks.GRID

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
@pytest.mark.parametrize(
    "make",
    [lambda: LAPEstimator(GRID, score_method="exact"), lambda: ExactMaxLikelihood(GRID, alpha=0.01)],
    ids=["lap", "exact_ml"],
)
def test_discrete_dask_worker_killed_mid_fit_same_result(two_workers, data, tmp_path, make):
    da = pytest.importorskip("dask.array")
    X = da.from_array(data, chunks=(100, 12))
    disturbed, undisturbed = _fit_with_a_worker_killed(two_workers, make, X, tmp_path)
    # Integer counts: bit for bit the in-memory fit, and so the undisturbed one.
    np.testing.assert_array_equal(disturbed.theta_, make().fit(data).theta_)
    np.testing.assert_array_equal(disturbed.theta_, undisturbed.theta_)
    assert disturbed.log_partition_ == undisturbed.log_partition_


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


# -- a fit interrupted by Ctrl-C ------------------------------------------------------------------


def _workers(proc, before=(), only=""):
    """The processes started by ``proc`` (a psutil.Process) whose pid is not in ``before`` and
    whose command line holds ``only``, but its resource trackers (one each for multiprocessing
    and loky, per process by design, ended when the process ends)."""
    found = []
    for kid in proc.children(recursive=True):
        try:
            cmd = " ".join(kid.cmdline())
            if kid.pid not in before and only in cmd and "resource_tracker" not in cmd:
                found.append(kid)
        except psutil.NoSuchProcess:
            pass
    return found


def _loky_workers(before):
    """This process's loky workers not in ``before`` (not the Dask workers a nanny restarts)."""
    return _workers(psutil.Process(), before, only="loky")


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


#: Starting 2 loky processes (each imports skmrf) took 9 s on the shared 2-core machine.
SPAWNS = pytest.mark.slow


@pytest.mark.parametrize("backend", ["threading", pytest.param("loky", marks=SPAWNS)])
def test_keyboard_interrupt_in_a_worker_propagates(data, monkeypatch, parallel_always, backend):
    """Raised in a worker thread or process, a KeyboardInterrupt comes out of ``fit`` as itself,
    and no process worker is left."""
    monkeypatch.setattr("skmrf._kernels.lap._solve_chunk", _interrupt)
    before = {c.pid for c in psutil.Process().children(recursive=True)}
    with parallel_config(backend=backend), pytest.raises(KeyboardInterrupt):
        LAPEstimator(GRID, n_jobs=2).fit(data)
    _, alive = psutil.wait_procs(_loky_workers(before), timeout=10)
    assert not alive


@SPAWNS
def test_keyboard_interrupt_between_pool_calls_kills_process_workers(data, monkeypatch, parallel_always):
    """Ctrl-C landing while the fit's pool is idle (here between two L-BFGS steps) kills the
    reusable pool's workers too: joblib itself kills them only when it lands in a pool call."""
    before = {c.pid for c in psutil.Process().children(recursive=True)}
    started = []

    def interrupted_after_one_step(fun, x0, *args, **kwargs):
        fun(x0)  # one parallel evaluation: the pool's workers are started
        started.extend(_loky_workers(before))
        raise KeyboardInterrupt

    monkeypatch.setattr("skmrf._kernels.pseudo.minimize_in_box", interrupted_after_one_step)
    with parallel_config(backend="loky"), pytest.raises(KeyboardInterrupt):
        PseudoLikelihoodEstimator(GRID, n_jobs=2).fit(data)
    assert started, "the fit started no worker process"
    _, alive = psutil.wait_procs(started, timeout=10)
    assert not alive, f"workers left after the interrupt: {alive}"


#: A fit of several seconds on 2 loky processes (forced: the estimators prefer threads), every
#: array argument of a task memmapped into joblib's temporary folder (``max_nbytes=1``). Starts
#: the pool first (Ctrl-C while its processes start is not tested), prints "fitting"; with
#: "survive", catches the KeyboardInterrupt as an interactive session would, prints
#: "interrupted" and waits for its standard input to close.
CHILD = """
import importlib, signal, sys
# A test run started in the background (``nohup ... &``) passes SIGINT on ignored; Ctrl-C is the point here.
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
from joblib import Parallel, delayed, parallel_config
from skmrf import GaussianLAP, LAPEstimator, MCMCMaxLikelihood, PseudoLikelihoodEstimator
for target in sys.argv[3:]:  # the serial-fallback thresholds, at 0
    module, name = target.rsplit(".", 1)
    setattr(importlib.import_module(module), name, 0)
rng = np.random.default_rng(0)
if sys.argv[1] == "gaussian_lap":
    X, est = rng.standard_normal((2000, 1600)), GaussianLAP("grid:40x40", n_jobs=2)
else:
    X = rng.integers(0, 3, size=(2000, 400)).astype(np.uint8)
    kw = dict(n_jobs=2, score_method="pseudo")
    if sys.argv[1] == "lap":
        est = LAPEstimator("grid:20x20", strategy="exact", **kw)
    elif sys.argv[1] == "pseudo":
        est = PseudoLikelihoodEstimator("grid:20x20", **kw)
    else:  # MCMC's chains run on processes by default
        X, est = X % 2, MCMCMaxLikelihood("grid:20x20", random_state=0, **kw)
with parallel_config(backend="loky", max_nbytes=1):
    Parallel(n_jobs=2)(delayed(abs)(i) for i in range(2))  # start the pool, which the fit reuses
    print("fitting", flush=True)
    try:
        est.fit(X)
    except KeyboardInterrupt:
        if sys.argv[2] != "survive":
            raise
        print("interrupted", flush=True)
        sys.stdin.read()
        sys.exit(0)
print("done", flush=True)
"""


def _marked(marker):
    """The processes whose environment holds ``SKMRF_FAULT_TEST=marker``: a child and every
    process it started, even those whose parent has exited."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("SKMRF_FAULT_TEST") == marker:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


@SPAWNS
@pytest.mark.parametrize("kind", ["lap", "pseudo", "mcmc", "gaussian_lap"])
@pytest.mark.parametrize("session", ["terminal", "survive"])
def test_ctrl_c_leaves_no_worker_and_no_temporary_file(tmp_path, kind, session):
    """Ctrl-C during a fit on 2 loky processes with memmapped arguments.

    "terminal": SIGINT to the whole process group, as a terminal's Ctrl-C; the fit exits with
    KeyboardInterrupt, and no process it started remains. "survive": SIGINT to the process
    alone, as Jupyter's interrupt, which carries on; its workers are gone while it lives.
    Either way joblib's temporary folder is empty.
    """
    temp = tmp_path / "temp"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp), JOBLIB_TEMP_FOLDER=str(temp), SKMRF_FAULT_TEST=str(temp))
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-c", CHILD, kind, session, *SERIAL_FALLBACK_THRESHOLDS]
    # stderr to a file: a process left behind would hold a pipe open, and reading it would wait.
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as f:
        pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=f, text=True)
        child = subprocess.Popen(cmd, env=env, start_new_session=True, **pipes)
    try:
        assert child.stdout.readline() == "fitting\n", stderr.read_text()
        parent = psutil.Process(child.pid)
        # Wait until the fit's tasks go to the workers with memmapped arguments (a bound, not a timing assertion).
        for _ in range(1200):
            assert child.poll() is None, f"the fit ended before it was interrupted: {stderr.read_text()}"
            started = _workers(parent)
            if len(started) >= 2 and any(p.is_file() for p in temp.rglob("*")):
                break
            time.sleep(0.05)
        else:
            pytest.fail("no memmapped task on 2 workers within 60 s")
        if session == "terminal":
            os.killpg(child.pid, signal.SIGINT)
            child.wait(timeout=60)
            err = stderr.read_text()
            # Python ends on an uncaught KeyboardInterrupt by SIGINT itself.
            assert child.returncode == -signal.SIGINT and "KeyboardInterrupt" in err, err
            _, alive = psutil.wait_procs(_marked(str(temp)), timeout=10)
        else:
            child.send_signal(signal.SIGINT)
            assert child.stdout.readline() == "interrupted\n", stderr.read_text()
            _, alive = psutil.wait_procs(started + _workers(parent), timeout=10)
        assert not alive, f"processes left after Ctrl-C: {[p.cmdline() for p in alive]}"
        # The memmapped arrays are unlinked by joblib's resource tracker once the workers release
        # them, a moment after the interrupt: wait for it, as for the processes. joblib may leave
        # the call's *empty* folder behind (it skips a folder whose files are still in use, and
        # nobody removes it once they are gone: seen in about 1 of 5 runs under load), so the
        # check is on files; an empty folder holds no data. The wait is a bound, not a timing
        # assertion: once, in a CI run of the whole slow suite, the LAP case's pickled arguments
        # were still there after 10 s (and gone in 60 later runs), so it is 30 s.
        deadline = time.monotonic() + 30
        while [p for p in temp.rglob("*") if not p.is_dir()] and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [p for p in temp.rglob("*") if not p.is_dir()]
        assert not left, f"temporary files left after Ctrl-C: {left}"
    finally:
        child.kill()
        child.wait()
        for proc in _marked(str(temp)):  # what a failed check left
            proc.kill()
