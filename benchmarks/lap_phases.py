"""Where a LAP fit from a memmap spends its time and memory, phase by phase (#27 item 3).

One ``LAPEstimator("grid:JxJ", score_method="pseudo", n_jobs=...)`` fit of the memmap file of
``scale_out.py`` (``scale_grid{J}_N1000.u8`` in ``--cache``, made by ``scale_out.py``), with
the kernel's phases wrapped: wall and CPU seconds (this process, threads included), resident
memory and its high-water mark (``VmRSS``/``VmHWM``) after each; then the whole fit's wall and
CPU time, its peak (``ru_maxrss``) and the load average. Run under ``/usr/bin/time -v`` for an
outside view of the same peak.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/lap_phases.py J [n_jobs] [theta.npy]
    python benchmarks/lap_phases.py --quick    # a 20 x 20 grid, 1000 Gibbs rows in a temporary memmap
"""

import os
import sys
import tempfile
import time

import numpy as np
from _harness import header, load_average, peak_rss_mib

import skmrf._kernels.lap as K
from skmrf import LAPEstimator


def rss():
    d = dict(ln.split(":", 1) for ln in open("/proc/self/status").read().splitlines() if ":" in ln)
    return int(d["VmRSS"].split()[0]) / 2**20, int(d["VmHWM"].split()[0]) / 2**20


def report(name, t, c):
    now, high = rss()
    print(
        f"  {name:<20} wall {time.perf_counter() - t:8.2f} cpu {time.process_time() - c:8.2f}  "
        f"rss/hwm GiB {now:.2f}/{high:.2f}",
        flush=True,
    )


def timed(f, name):
    def g(*a, **k):
        t, c = time.perf_counter(), time.process_time()
        out = f(*a, **k)
        report(name, t, c)
        return out

    return g


def quick_file(J, folder):
    """A small memmap file like ``scale_out.py``'s: 1000 Gibbs rows of a random J x J grid (``--quick``)."""
    from skmrf.datasets import make_random_mrf

    X = make_random_mrf(f"grid:{J}x{J}", 2, 1.0, n_variables=J * J, random_state=0).sample(
        1000, random_state=1, method="gibbs", n_sweeps=20
    )
    path = os.path.join(folder, f"scale_grid{J}_N1000.u8")
    X.astype(np.uint8).tofile(path)
    return path


def main():
    quick = "--quick" in sys.argv
    argv = [a for a in sys.argv[1:] if a != "--quick"]
    J = 20 if quick else int(argv[0])
    n_jobs = int(argv[1]) if len(argv) > 1 else 2
    for name in ["_problems", "group_by_structure", "_make_groups", "_fit_passes"]:
        setattr(K, name, timed(getattr(K, name), name))
    K._Reads.finish = timed(K._Reads.finish, "finish")
    with tempfile.TemporaryDirectory() as tmp:
        path = quick_file(J, tmp) if quick else os.path.expanduser(f"~/.cache/skmrf-bench/scale_grid{J}_N1000.u8")
        X = np.memmap(path, dtype=np.uint8, mode="r", shape=(1000, J * J))
        print(header(f"lap_phases.py: LAPEstimator grid:{J}x{J} from a memmap, n_jobs={n_jobs}"), flush=True)
        t, c = time.perf_counter(), time.process_time()
        est = LAPEstimator(f"grid:{J}x{J}", score_method="pseudo", n_jobs=n_jobs).fit(X)
        del X
    print(
        f"total wall {time.perf_counter() - t:.1f} cpu {time.process_time() - c:.1f} "
        f"peak {peak_rss_mib() / 1024:.2f} GiB load {load_average()}"
    )
    if len(argv) > 2:
        np.save(argv[2], est.theta_)


if __name__ == "__main__":
    main()
