"""Scale-out of the data: LAP pairwise from a memmap and from a dask array on a LocalCluster.

A J x J binary grid (default 1000 x 1000, 10^6 variables) with N rows (default 1,000) is
written to a ``numpy.memmap`` file: each 100 x 100 tile holds rows of the cached 100 x 100
Gibbs samples of ``lap_scaling.py`` (``grid100_N10000_sweeps50.npz``, drawn again if absent),
a different random choice of rows per tile, so the file is made in seconds. Then:

``slice``
    The 100 x 100 top-left block of the grid (1,000 rows) fitted in memory, from a memmap
    read in chunks of 100 rows, and from a dask array (chunks of 250 rows) on a 2-worker
    ``LocalCluster``: the three ``theta_`` must be equal bit for bit.
``memmap``
    ``LAPEstimator("grid:JxJ", score_method="pseudo")`` on the whole memmap, in a fresh
    process: wall time, its peak resident memory (``ru_maxrss``, the mapped file pages
    included).
``dask``
    The same from a dask array whose blocks (250 rows each) are read from the file by the
    workers of a 2-worker ``LocalCluster`` (one thread each), counted there, and only the
    counts sent back: wall time, peak memory of the client and of each worker, and whether
    ``theta_`` equals the memmap fit's bit for bit.

``compare``
    Old code against this code: ``LAPEstimator("grid:JxJ", n_jobs=--n-jobs)`` from the memmap
    at each of ``--sizes`` (default 200 500), each fit in a fresh process whose source is
    either ``--old-src`` (a copy of the old package, made by ``git archive REV skmrf | tar -x
    -C DIR``) or this checkout: wall time, CPU time (user + system of the process and its
    threads, from ``wait4``), peak resident memory (``ru_maxrss`` from ``wait4``, the mapped
    file pages included), the 1-minute load average before and after, and whether the two
    ``theta_`` are equal bit for bit. Written to ``benchmarks/results/lap_big_memmap.txt``.

``pl``
    ``PseudoLikelihoodEstimator("grid:PxP")`` (``--pl-J``, default 200: 40,000 variables) on a
    file made as above with N rows (``--pl-n``, default 10,000; a uint8 file of 400 MB), and
    ``DecomposedEM("grid:4x4")`` on 10^7 rows (``--em-n``) of a random 4x4 grid with columns 0,
    5, 10 and 15 missing (NaN) in 30 % of the rows (a float32 file of 640 MB; dask blocks of
    10^6 rows), each fitted in a fresh process from an in-memory array (read from the file
    first), from the memmap (``CHUNK_BYTES``
    as shipped) and from a dask array read by the workers of a 2-worker ``LocalCluster`` (blocks
    of ``--pl-block`` rows): wall and CPU time (``wait4``: the process and its threads), peak
    resident memory (``ru_maxrss`` of the process: the in-memory array and, for a memmap, the
    file pages it mapped; for dask the client's and each worker's), the 1-minute load average,
    and whether ``theta_`` equals the in-memory fit's bit for bit. Its table is written below
    the LAP table of ``benchmarks/results/scale_out.txt`` (replacing its own earlier run).

``bayes``
    ``MetropolisHastingsMRF("grid:4x4")`` (the MLE-induced likelihood, 2,000 steps) on 10^7 rows
    (``--bayes-n``, drawn from 10^5 samples of the agreement model on a 4x4 grid: a uint8 file of
    160 MB; dask blocks of 10^6 rows), from memory, a memmap and a dask array as in ``pl``: its own table in
    ``benchmarks/results/scale_out.txt`` (replacing its own earlier run).

``score_method="pseudo"``: the default would estimate ``log Z`` of 10^6 variables by AIS,
which is not what is measured here. The table is printed and written to
``benchmarks/results/scale_out.txt``.

Usage::

    nice -n 10 python benchmarks/scale_out.py [--J 1000] [--n 1000] [--parts slice memmap dask]
    python benchmarks/scale_out.py --parts compare --old-src DIR [--sizes 200 500 1000] [--n-jobs 2]
    OPENBLAS_NUM_THREADS=1 python benchmarks/scale_out.py --parts pl [--pl-J 200] [--pl-n 10000]
    OPENBLAS_NUM_THREADS=1 python benchmarks/scale_out.py --parts bayes [--bayes-n 10000000]
    python benchmarks/scale_out.py --quick   # slice, memmap and dask on a 40 x 40 grid of 200 rows

``--quick`` builds its files from 20 x 20 tiles (1000 cached rows) in a temporary folder and writes
no results file.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
from _harness import header

HERE = os.path.dirname(os.path.abspath(__file__))
#: The side of the tiles the big grid is made of, and the rows of cached Gibbs samples they are
#: drawn from (``--quick``: 20 and 1000).
TILE = 100
TILE_ROWS = 10000


def tile_rows(n, cache):
    """``n`` x 10^4 Gibbs samples of a random 100 x 100 grid (uint8)."""
    sys.path.insert(0, HERE)
    from lap_scaling import cached_data

    X, _ = cached_data(TILE, max(n, TILE_ROWS), cache)
    return X


def make_file(J, n, cache):
    """The J x J grid's data as a uint8 memmap file of shape (n, J * J), made once."""
    path = os.path.join(cache, f"scale_grid{J}_N{n}.u8")
    if os.path.exists(path) and os.path.getsize(path) == n * J * J:
        return path
    base = tile_rows(n, cache)
    rng = np.random.default_rng(0)
    out = np.memmap(path + ".part", dtype=np.uint8, mode="w+", shape=(n, J * J))
    grid = out.reshape(n, J, J)
    for r in range(0, J, TILE):
        for c in range(0, J, TILE):
            rows = rng.choice(len(base), n, replace=False)
            h, w = min(TILE, J - r), min(TILE, J - c)
            grid[:, r : r + h, c : c + w] = base[rows].reshape(n, TILE, TILE)[:, :h, :w]
    out.flush()
    del grid, out
    os.replace(path + ".part", path)
    return path


def open_rows(path, shape, a, b, dtype=np.uint8):
    """Rows ``a:b`` of the memmap file, read by whoever calls it (a dask worker)."""
    return np.array(np.memmap(path, dtype=dtype, mode="r", shape=shape)[a:b])


def dask_array(path, shape, rows, dtype=np.uint8):
    """A dask array whose blocks of ``rows`` rows each are read from the file on the workers."""
    import dask
    import dask.array as da

    blocks = [
        da.from_delayed(
            dask.delayed(open_rows)(path, shape, a, min(a + rows, shape[0]), dtype),
            (min(a + rows, shape[0]) - a, shape[1]),
            dtype,
        )
        for a in range(0, shape[0], rows)
    ]
    return da.concatenate(blocks, axis=0)


def peak_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _cluster():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    return cluster, Client(cluster)


def run_slice(path, J, n, cache):
    """In-memory, memmap and dask fits of the top-left 100 x 100 block: equal?"""
    import skmrf._data.chunks as chunks
    from skmrf import LAPEstimator

    full = np.memmap(path, dtype=np.uint8, mode="r", shape=(n, J, J))
    X = np.ascontiguousarray(full[:, :TILE, :TILE].reshape(n, TILE * TILE))
    spath = os.path.join(cache, f"scale_slice{TILE}_N{n}.u8")
    mm = np.memmap(spath, dtype=np.uint8, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    mm = np.memmap(spath, dtype=np.uint8, mode="r", shape=X.shape)
    graph = f"grid:{TILE}x{TILE}"
    t = time.perf_counter()
    ref = LAPEstimator(graph, score_method="pseudo").fit(X).theta_
    t_mem = time.perf_counter() - t
    chunks.CHUNK_BYTES = 100 * X.shape[1]  # 100 rows per chunk
    t = time.perf_counter()
    th_mm = LAPEstimator(graph, score_method="pseudo").fit(mm).theta_
    t_mm = time.perf_counter() - t
    cluster, client = _cluster()
    with cluster, client:
        t = time.perf_counter()
        th_da = LAPEstimator(graph, score_method="pseudo").fit(dask_array(spath, X.shape, 250)).theta_
        t_da = time.perf_counter() - t
    return [
        f"slice {TILE}x{TILE}, N={n}: in-memory {t_mem:.1f} s, memmap (100-row chunks) {t_mm:.1f} s, "
        f"dask 2 workers (250-row blocks) {t_da:.1f} s",
        f"  theta equal to in-memory: memmap {np.array_equal(ref, th_mm)}, dask {np.array_equal(ref, th_da)} "
        f"(max |diff| {np.abs(ref - th_mm).max():.1e}, {np.abs(ref - th_da).max():.1e})",
    ]


def worker_memmap(path, J, n, out, n_jobs=None):
    from skmrf import LAPEstimator

    X = np.memmap(path, dtype=np.uint8, mode="r", shape=(n, J * J))
    t = time.perf_counter()
    est = LAPEstimator(f"grid:{J}x{J}", score_method="pseudo", n_jobs=n_jobs).fit(X)
    wall = time.perf_counter() - t
    np.save(out, est.theta_)
    print(f"RESULT {wall:.1f} {peak_gib():.2f} {os.getloadavg()[0]:.2f}", flush=True)


def worker_dask(path, J, n, out):
    from skmrf import LAPEstimator

    cluster, client = _cluster()
    with cluster, client:
        X = dask_array(path, (n, J * J), 250)
        t = time.perf_counter()
        est = LAPEstimator(f"grid:{J}x{J}", score_method="pseudo").fit(X)
        wall = time.perf_counter() - t
        workers = client.run(peak_gib)
    np.save(out, est.theta_)
    peaks = " ".join(f"{v:.2f}" for v in workers.values())
    print(f"RESULT {wall:.1f} {peak_gib():.2f} {os.getloadavg()[0]:.2f} {peaks}", flush=True)


def in_fresh_process(kind, path, J, n, out):
    cmd = [sys.executable, __file__, "--worker", kind, "--J", str(J), "--n", str(n), "--file", path, "--out", out]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT")]
    if not lines:
        raise RuntimeError(f"{kind} fit failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return lines[0].split()[1:]


def measured_fit(src, path, J, n, n_jobs, out):
    """``worker_memmap`` in a fresh process importing skmrf from ``src``: its RESULT line, and CPU
    seconds and peak GiB from ``wait4`` (the process with its threads)."""
    cmd = [sys.executable, __file__, "--worker", "memmap", "--J", str(J), "--n", str(n), "--file", path]
    cmd += ["--out", out, "--n-jobs", str(n_jobs)]
    env = {**os.environ, "PYTHONPATH": src, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True, env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage (RUSAGE_CHILDREN sums all)
        proc.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0), fe.seek(0)
        stdout, stderr = fo.read(), fe.read()
    lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT")]
    if not lines:
        raise RuntimeError(f"fit from {src} failed:\n{stdout[-3000:]}\n{stderr[-3000:]}")
    wall = float(lines[0].split()[1])
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 2**20, load, os.getloadavg()[0]


def run_compare(old_src, sizes, n, n_jobs, cache):
    """Old against new LAP from the memmap at each size: the table's lines."""
    lines = [
        f"LAP pairwise from a uint8 memmap, N={n} rows, n_jobs={n_jobs}, each fit in a fresh process; "
        f"old = {old_src}, new = {os.path.dirname(HERE)}",
        f"{'grid':>9} {'code':<4} {'wall s':>8} {'cpu s':>8} {'peak GiB':>8} {'load':>11} {'theta equal':>11}",
    ]
    print("\n".join(lines), flush=True)
    for J in sizes:
        path = make_file(J, n, cache)
        res = {}
        for code, src in (("old", old_src), ("new", os.path.dirname(HERE))):
            out = os.path.join(cache, f"compare_theta_{code}_{J}_{n}.npy")
            res[code] = measured_fit(src, path, J, n, n_jobs, out)
            wall, cpu, peak, l0, l1 = res[code]
            eq = "" if code == "old" else str(np.array_equal(np.load(out), np.load(out.replace("_new_", "_old_"))))
            lines.append(f"{J}x{J:<5} {code:<4} {wall:>8.1f} {cpu:>8.1f} {peak:>8.2f} {l0:>5.1f}/{l1:<5.1f} {eq:>11}")
            print(lines[-1], flush=True)
        o, w = res["old"], res["new"]
        lines.append(f"{'':>9} new/old: wall x{w[0] / o[0]:.2f}, cpu x{w[1] / o[1]:.2f}, peak x{w[2] / o[2]:.2f}")
        print(lines[-1], flush=True)
    return lines


# -- pl: PL and EM from memory, a memmap and a dask array ------------------------------------------

EM_GRID, EM_MISSING = 4, (0, 5, 10, 15)
PL_EM_TITLE = "PL and EM fits from memory, a memmap and a dask array"


def em_file(n, cache):
    """``n`` rows of a random 4x4 grid (float32), some columns missing (NaN) in 30 % of the rows."""
    from skmrf.datasets import sample_random_mrf

    p = EM_GRID * EM_GRID
    path = os.path.join(cache, f"scale_em{EM_GRID}_N{n}.f4")
    if not (os.path.exists(path) and os.path.getsize(path) == 4 * n * p):
        X, _ = sample_random_mrf(f"grid:{EM_GRID}x{EM_GRID}", n, n_variables=p, random_state=0)
        X = X.astype(np.float32)
        X[(np.random.default_rng(1).random(X.shape) < 0.3) & np.isin(np.arange(p), EM_MISSING)] = np.nan
        X.tofile(path + ".part")
        os.replace(path + ".part", path)
    return path, (n, p), "float32"


BAYES_GRID = 4
BAYES_TITLE = "MetropolisHastingsMRF (MLE-induced likelihood) from memory, a memmap and a dask array"
LABELS = {"pl": "PL", "em": "EM", "mh": "MH"}


def bayes_file(n, cache):
    """``n`` rows of the agreement model on a 4x4 grid (theta 0.65 on every edge), uint8: rows drawn
    at random from 10^5 exact samples (sampling 10^7 exactly takes over 10 minutes and 6 GB)."""
    from skmrf.graphs import resolve_graph
    from skmrf.model import agreement_to_mrf

    p = BAYES_GRID * BAYES_GRID
    path = os.path.join(cache, f"scale_bayes{BAYES_GRID}_N{n}.u1")
    if not (os.path.exists(path) and os.path.getsize(path) == n * p):
        edges = resolve_graph(f"grid:{BAYES_GRID}x{BAYES_GRID}", p).edges
        model = agreement_to_mrf(np.full(len(edges), 0.65), edges, p, edges=edges)
        draws = model.sample(min(n, 10**5), random_state=0).astype(np.uint8)
        rng = np.random.default_rng(0)
        with open(path + ".part", "wb") as f:
            for a in range(0, n, 10**6):
                draws[rng.integers(0, len(draws), min(10**6, n - a))].tofile(f)
        os.replace(path + ".part", path)
    return path, (n, p), "uint8"


def _estimator(name, graph):
    from skmrf import DecomposedEM, MetropolisHastingsMRF, PseudoLikelihoodEstimator

    if name == "pl":
        return PseudoLikelihoodEstimator(graph, score_method="pseudo")
    if name == "mh":  # posterior sd ~ 0.5 / sqrt(10^7): a proposal of that order
        return MetropolisHastingsMRF(graph, n_steps=2000, proposal_scale=1e-4, random_state=0)
    return DecomposedEM(graph, alpha=0.01)


def worker_fit(name, graph, kind, path, shape, dtype, block, out):
    """One fit of ``name`` from ``kind`` input; prints ``RESULT wall peak_gib load [worker GiB...]``."""
    mm = np.memmap(path, dtype=dtype, mode="r", shape=shape)
    workers = {}
    if kind == "dask":
        cluster, client = _cluster()
        with cluster, client:
            t = time.perf_counter()
            est = _estimator(name, graph).fit(dask_array(path, shape, block, np.dtype(dtype)))
            wall = time.perf_counter() - t
            workers = client.run(peak_gib)
    else:
        X = np.array(mm) if kind == "memory" else mm  # in memory: the file read whole first
        t = time.perf_counter()
        est = _estimator(name, graph).fit(X)
        wall = time.perf_counter() - t
    np.save(out, est.theta_)
    peaks = " ".join(f"{v:.2f}" for v in workers.values())
    print(f"RESULT {wall:.1f} {peak_gib():.2f} {os.getloadavg()[0]:.2f} {peaks}", flush=True)


def _measured(cmd, env):
    """Run ``cmd``; its RESULT fields, CPU seconds and peak GiB (``wait4``: this child and its threads)."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        fo.seek(0), fe.seek(0)
        stdout, stderr = fo.read(), fe.read()
    lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT")]
    if not lines or os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{cmd} failed:\n{stdout[-3000:]}\n{stderr[-3000:]}")
    return lines[0].split()[1:], usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 2**20


def run_pl_em(n, P, block, em_n, cache):
    """PL and EM from memory, a memmap and a dask array, each in a fresh process: the table's lines."""
    cases = [
        ("em", f"grid:{EM_GRID}x{EM_GRID}", *em_file(em_n, cache), 10**6),
        ("pl", f"grid:{P}x{P}", make_file(P, n, cache), (n, P * P), "uint8", block),
    ]
    return run_fits(PL_EM_TITLE, cases, cache)


def run_bayes(n, cache):
    """Metropolis-Hastings from memory, a memmap and a dask array, each in a fresh process: the table's lines."""
    cases = [("mh", f"grid:{BAYES_GRID}x{BAYES_GRID}", *bayes_file(n, cache), 10**6)]
    return run_fits(BAYES_TITLE, cases, cache)


def replace_table(path, title, lines):
    """Write ``lines`` into ``path`` in place of the table that starts with ``title`` (tables are
    separated by a blank line); the other tables stay."""
    tables = open(path).read().strip("\n").split("\n\n") if os.path.exists(path) else []
    tables = [t for t in tables if not t.startswith(title)] + ["\n".join(lines)]
    with open(path, "w") as f:
        f.write("\n\n".join(tables) + "\n")


def run_fits(title, cases, cache):
    """Each case from memory, a memmap and a dask array, each in a fresh process: the table's lines."""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(HERE), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    lines = [
        f"{title} (2 workers, 1 thread each), each in a fresh process; "
        f"{os.cpu_count()} cores; OPENBLAS_NUM_THREADS=1; peak = ru_maxrss",
        f"{'estimator':<34} {'input':<7} {'wall s':>7} {'cpu s':>7} {'peak GiB':>8} {'workers GiB':>11} "
        f"{'load':>11} {'theta equal':>11}",
    ]
    print("\n".join(lines), flush=True)
    for name, graph, path, shape, dtype, blk in cases:
        label = f"{LABELS[name]} {graph} N={shape[0]:,} {dtype}"
        base = None
        for kind in ("memory", "memmap", "dask"):
            out = os.path.join(cache, f"scale_{name}_theta_{kind}.npy")
            cmd = [sys.executable, __file__, "--worker", "fit", "--estimator", name, "--graph", graph, "--input", kind]
            cmd += ["--file", path, "--shape", str(shape[0]), str(shape[1]), "--dtype", dtype, "--block", str(blk)]
            cmd += ["--out", out]
            load = os.getloadavg()[0]
            res, cpu, peak = _measured(cmd, env)
            theta = np.load(out)
            base = theta if base is None else base
            eq = "-" if kind == "memory" else str(np.array_equal(theta, base))
            workers = "/".join(res[3:]) if len(res) > 3 else "-"
            lines.append(
                f"{label:<34} {kind:<7} {float(res[0]):>7.1f} {cpu:>7.1f} {peak:>8.2f} {workers:>11} "
                f"{load:>5.2f}/{float(res[2]):<5.2f} {eq:>11}"
            )
            print(lines[-1], flush=True)
        size = np.prod(shape) * np.dtype(dtype).itemsize / 2**30
        lines.append(f"{'':<34} (file {size:.2f} GiB)")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--J", type=int, default=1000)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--parts", nargs="+", default=["slice", "memmap", "dask"])
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/skmrf-bench"))
    p.add_argument("--worker")
    p.add_argument("--file")
    p.add_argument("--out")
    p.add_argument("--results", default=None)
    p.add_argument("--old-src", help="compare: directory holding the old skmrf package")
    p.add_argument("--sizes", type=int, nargs="+", default=[200, 500])
    p.add_argument("--n-jobs", type=int, default=None)
    p.add_argument("--pl-J", type=int, default=200, help="pl: the PL grid's side")
    p.add_argument("--pl-n", type=int, default=10000, help="pl: the PL data's rows (at most 10,000)")
    p.add_argument("--pl-block", type=int, default=500, help="pl: rows per dask block of the PL data")
    p.add_argument("--em-n", type=int, default=10**7, help="pl: the EM data's rows")
    p.add_argument("--bayes-n", type=int, default=10**7, help="bayes: the Metropolis-Hastings data's rows")
    p.add_argument("--estimator")
    p.add_argument("--graph")
    p.add_argument("--input")
    p.add_argument("--shape", type=int, nargs=2)
    p.add_argument("--dtype")
    p.add_argument("--block", type=int)
    p.add_argument(
        "--quick", action="store_true", help="a 40 x 40 grid of 200 rows from 20 x 20 tiles; no results file"
    )
    a = p.parse_args()
    if a.worker == "fit":
        worker_fit(a.estimator, a.graph, a.input, a.file, tuple(a.shape), a.dtype, a.block, a.out)
        return
    if a.worker:
        run = worker_memmap if a.worker == "memmap" else worker_dask
        run(a.file, a.J, a.n, a.out, *([a.n_jobs] if a.worker == "memmap" else []))
        return
    if a.quick:
        global TILE, TILE_ROWS
        TILE, TILE_ROWS, a.J, a.n = 20, 1000, 40, 200
        tmp = tempfile.TemporaryDirectory()
        a.cache = tmp.name
    os.makedirs(a.cache, exist_ok=True)
    print(header(f"scale_out.py {' '.join(a.parts)}: fits from a memmap and from a dask array"), flush=True)
    if a.parts == ["compare"]:
        lines = run_compare(a.old_src, a.sizes, a.n, a.n_jobs or 2, a.cache)
        with open(a.results or os.path.join(HERE, "results", "lap_big_memmap.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        return
    if a.parts in (["pl"], ["bayes"]):
        if a.parts == ["pl"]:
            title, lines = PL_EM_TITLE, run_pl_em(a.pl_n, a.pl_J, a.pl_block, a.em_n, a.cache)
        else:
            title, lines = BAYES_TITLE, run_bayes(a.bayes_n, a.cache)
        # The other tables stay; this one replaces its own earlier run.
        replace_table(a.results or os.path.join(HERE, "results", "scale_out.txt"), title, lines)
        return
    if not a.quick:
        a.results = a.results or os.path.join(HERE, "results", "scale_out.txt")
    t = time.perf_counter()
    path = make_file(a.J, a.n, a.cache)
    lines = [
        f"LAP pairwise, {a.J}x{a.J} binary grid ({a.J * a.J:,} variables), N={a.n} rows, uint8 memmap "
        f"{os.path.getsize(path) / 2**30:.2f} GiB (made in {time.perf_counter() - t:.0f} s); "
        f"{os.cpu_count()} cores; peak = ru_maxrss",
    ]
    print(lines[0], flush=True)

    def emit(line):
        lines.append(line)
        print(line, flush=True)

    if "slice" in a.parts:
        for line in run_slice(path, a.J, a.n, a.cache):
            emit(line)
    thetas = {}
    head = f"{'input':<8} {'wall s':>8} {'client GiB':>10} {'worker GiB':>16} {'load avg':>8}"
    for kind in [k for k in ("memmap", "dask") if k in a.parts]:
        out = os.path.join(a.cache, f"scale_theta_{kind}_{a.J}_{a.n}.npy")
        r = in_fresh_process(kind, path, a.J, a.n, out)
        thetas[kind] = np.load(out)
        if head:
            emit(head)
            head = None
        workers = "/".join(r[3:]) if len(r) > 3 else "-"
        emit(f"{kind:<8} {float(r[0]):>8.1f} {float(r[1]):>10.2f} {workers:>16} {float(r[2]):>8.2f}")
    if len(thetas) == 2:
        eq = np.array_equal(thetas["memmap"], thetas["dask"])
        emit(f"dask theta equal to memmap theta (all {len(thetas['dask']):,} parameters): {eq}")
    if a.results:
        with open(a.results, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
