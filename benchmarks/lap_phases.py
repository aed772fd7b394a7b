"""Where a LAP fit from a memmap spends its time and memory, phase by phase (#27 item 3).

One ``LAPEstimator("grid:JxJ", score_method="pseudo", n_jobs=...)`` fit of the memmap file of
``scale_out.py`` (``scale_grid{J}_N1000.u8`` in ``--cache``, made by ``scale_out.py``), with
the kernel's phases wrapped: wall and CPU seconds (this process, threads included), resident
memory and its high-water mark (``VmRSS``/``VmHWM``) after each; then the whole fit's wall and
CPU time, its peak (``ru_maxrss``) and the load average. Run under ``/usr/bin/time -v`` for an
outside view of the same peak.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/lap_phases.py J [n_jobs] [theta.npy]
"""

import os
import resource
import sys
import time

import numpy as np

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


def main():
    J = int(sys.argv[1])
    n_jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    for name in ["_problems", "group_by_structure", "_make_groups", "_fit_passes"]:
        setattr(K, name, timed(getattr(K, name), name))
    K._Reads.finish = timed(K._Reads.finish, "finish")
    path = os.path.expanduser(f"~/.cache/skmrf-bench/scale_grid{J}_N1000.u8")
    X = np.memmap(path, dtype=np.uint8, mode="r", shape=(1000, J * J))
    t, c = time.perf_counter(), time.process_time()
    est = LAPEstimator(f"grid:{J}x{J}", score_method="pseudo", n_jobs=n_jobs).fit(X)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"total wall {time.perf_counter() - t:.1f} cpu {time.process_time() - c:.1f} peak {peak:.2f} GiB "
        f"load {os.getloadavg()[0]:.2f}"
    )
    if len(sys.argv) > 3:
        np.save(sys.argv[3], est.theta_)


if __name__ == "__main__":
    main()
