"""Best-of-N fit times of one checkout, for before/after comparisons on a noisy machine.

Run it alternately on two checkouts (``PYTHONPATH`` decides which ``skmrf`` is timed) and
compare the minima; single runs on the shared 2-core machine vary by up to 40 %.

    PYTHONPATH=/path/to/before python benchmarks/ab_timing.py
    PYTHONPATH=/path/to/after  python benchmarks/ab_timing.py

LAP uses the 100x100, N = 10,000 data cached by ``benchmarks/lap_scaling.py big``.
"""

import argparse
import os
import time
import warnings

import numpy as np

import skmrf
from skmrf import GaussianLAP, LAPEstimator, grid_graph
from skmrf.graphs import resolve_graph


def best(fit, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/skmrf-bench"))
    args = ap.parse_args()
    print(f"skmrf from {os.path.dirname(skmrf.__file__)}; load {os.getloadavg()[0]:.2f}")
    path = os.path.join(args.cache, "grid100_N10000_sweeps50.npz")
    if os.path.exists(path):
        X = np.load(path)["X"]
        g = resolve_graph(grid_graph(100, 100), 10000)
        t = best(lambda: LAPEstimator(g, strategy="pairwise", score_method="pseudo").fit(X), args.repeat)
        print(f"LAPEstimator 100x100 N=10000: best of {args.repeat}: {t:.3f} s")
    else:
        print(f"(no {path}: run benchmarks/lap_scaling.py big once to cache the LAP data)")
    rng = np.random.default_rng(0)
    for J in (20, 78):
        Z = rng.standard_normal((1000, J * J))
        Z[:, 1:] += 0.5 * Z[:, :-1]
        t = best(lambda J=J, Z=Z: GaussianLAP(grid_graph(J, J)).fit(Z), 5)
        print(f"GaussianLAP p={J * J} n=1000: best of 5: {t:.4f} s")


if __name__ == "__main__":
    main()
