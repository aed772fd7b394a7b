"""Where a GaussianMaxLikelihood fit spends its time on the 5-point lattice (issue #28, the p = 10^6 target).

One fit in this process (run it with ``OPENBLAS_NUM_THREADS=1``): the data of
``benchmarks/gaussian_lap.py`` (``laplacian5``, n = 1000 rows, seed 0; cached in
``--cache`` as .npy so that repeated runs skip the DST sampler), the fit under
cProfile, and one JSON line with wall and CPU seconds, the fit's own peak
resident memory (``VmHWM`` reset after the data are loaded), the Newton steps,
CG iterations, decrement, residual, objective and certified gap::

    OPENBLAS_NUM_THREADS=1 python benchmarks/gaussian_ml_profile.py 250000 --profile 30
    OPENBLAS_NUM_THREADS=1 python benchmarks/gaussian_ml_profile.py 6084 99856

``--profile K`` prints the K most expensive functions (cumulative and own time).
The profile's times are wall-clock: on a loaded machine quote the CPU seconds.
``--quick`` profiles one fit at p = 400 (no sizes needed, nothing cached).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time

import numpy as np
from _harness import header, limit_blas

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def vm_hwm():
    """Peak resident memory of this process in bytes (``VmHWM``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def reset_hwm():
    """Reset ``VmHWM`` to the current resident size (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def data(p, n, cache):
    import gaussian_lap as gl

    r = int(round(np.sqrt(p)))
    path = os.path.join(cache, f"laplacian5_{p}_{n}.npy") if cache else None
    if path and os.path.exists(path):
        return gl.laplacian(r), np.load(path)
    X = gl.make_problem("laplacian5", p, n, seed=0)[1]
    if path:
        os.makedirs(cache, exist_ok=True)
        np.save(path, X)
    return gl.laplacian(r), X


def main():
    from skmrf.estimators.gaussian import GaussianMaxLikelihood

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sizes", nargs="*", type=int, help="numbers of variables (squares)")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--profile", type=int, default=0, help="print the K most expensive functions")
    ap.add_argument("--verbose", type=int, default=1)
    ap.add_argument("--cache", default=os.environ.get("TMPDIR", "/tmp"), help="folder for the .npy data ('' = none)")
    ap.add_argument("--quick", action="store_true", help="p = 400 only, --profile 10, no cache")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.profile, args.cache, args.verbose = [400], 10, "", 0
    if not args.sizes:
        ap.error("give the numbers of variables (or --quick)")
    limit_blas(1)
    print(header(f"gaussian_ml_profile.py: one GaussianMaxLikelihood fit per size, laplacian5, n = {args.n}", 1))
    for p in args.sizes:
        Q, X = data(p, args.n, args.cache)
        base = vm_hwm()
        reset = reset_hwm()
        est = GaussianMaxLikelihood(Q, verbose=args.verbose)
        prof = cProfile.Profile() if args.profile else None
        t, c = time.perf_counter(), time.process_time()
        if prof:
            prof.enable()
        est.fit(X)
        if prof:
            prof.disable()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        out = {
            "p": p,
            "n": args.n,
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "X_GB": round(X.nbytes / 2**30, 3),
            "rss_at_start_GB": round(base / 2**30, 3),
            "peak_rss_in_fit_GB": round(vm_hwm() / 2**30, 3) if reset else None,
            "n_iter": int(est.n_iter_),
            "cg": [int(k) for k in est.cg_iterations_],
            "decrement": est.decrement_,
            "threshold": 1e-3 * ((p + int(Q.nnz)) // 2) / args.n,
            "residual": est.residual_,
            "objective": est.objective_,
            "lower_bound": est.lower_bound_,
            "gap": est.duality_gap_,
            "q_over_n": ((p + int(Q.nnz)) // 2) / args.n,
            "load": round(os.getloadavg()[0], 2),
        }
        print(json.dumps(out), flush=True)
        if prof:
            stats = pstats.Stats(prof)
            stats.sort_stats("cumulative").print_stats(args.profile)
            stats.sort_stats("tottime").print_stats(args.profile)
        del X


if __name__ == "__main__":
    main()
