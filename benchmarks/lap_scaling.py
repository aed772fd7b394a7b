"""Scaling of LAP: Figure 5 of the exact-inference paper and the performance targets.

Parts (each prints a table; times are wall-clock on this machine):

``fig5``
    Exact ML (junction tree) versus LAP (pairwise) on J x J binary grids,
    J = 4..14, the same data (N exact samples) for both, best of ``--repeat`` fits each: fit
    times, their ratio, LAP's time per clique (linear total means roughly
    constant) and LAP's relative error to ML. J = 12 is the "50x faster,
    within 5% of ML at N = 10,000" target.
``big``
    LAP pairwise on a 100x100 grid with N = 10,000 (target: < 60 s, < 4 GB),
    PL on the same data (LAP no slower, error to the true parameters no
    worse), and a 316x316 grid (~10^5 variables) compared per clique with
    the 100x100 grid at the same N. Each fit runs in a fresh subprocess whose
    peak resident memory (``ru_maxrss``, including the data) is reported.
    Data come from the chromatic Gibbs sampler and are cached in
    ``--cache`` (default ``~/.cache/skmrf-bench``).

Usage::

    python benchmarks/lap_scaling.py [fig5] [big] [--n 10000] [--jmin 4] [--jmax 14] [--n-jobs 1]
    python benchmarks/lap_scaling.py --quick   # fig5 for J = 4..6 at N = 1000; big on 12x12 and 20x20 grids

``--quick`` caches its data in a temporary folder, not in ``--cache``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from _harness import best_of, header, peak_rss_mib


def grid_mrfgraph(J):
    """The J x J grid, resolved once."""
    from skmrf.graphs import grid_graph, resolve_graph

    return resolve_graph(grid_graph(J, J), J * J)


def cached_data(J, n, cache, n_sweeps=50):
    """Gibbs samples (uint8) and true parameters of a random J x J grid, cached on disk."""
    from skmrf.datasets import make_random_mrf

    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"grid{J}_N{n}_sweeps{n_sweeps}.npz")
    if os.path.exists(path):
        d = np.load(path)
        return d["X"], d["theta"]
    model = make_random_mrf(grid_mrfgraph(J), 2, 1.0, random_state=0)
    t = time.perf_counter()
    X = model.sample(n, random_state=1, method="gibbs", n_sweeps=n_sweeps).astype(np.uint8)
    print(f"  (sampled {J}x{J} grid, N={n}, {n_sweeps} Gibbs sweeps in {time.perf_counter() - t:.0f} s)", flush=True)
    np.savez(path, X=X, theta=model.theta)
    return X, model.theta


def fig5(n, jmax, n_jobs, jmin=4, repeat=3):
    from skmrf import ExactMaxLikelihood
    from skmrf.datasets import make_random_mrf
    from skmrf.estimators._lap import LAPEstimator
    from skmrf.metrics import relative_error

    print(f"\nFigure 5: exact ML (junction tree) vs LAP pairwise, J x J grids, N = {n}, best of {repeat} runs each")
    head = (
        f"{'J':>3} {'cliques':>7} {'tw':>3} {'ML s':>9} {'LAP s':>8} {'ML/LAP':>8} {'LAP ms/clique':>13} "
        f"{'LAP vs ML rel.err':>17} {'ML vs true':>10}"
    )
    print(head)
    for J in range(jmin, jmax + 1):
        g = grid_mrfgraph(J)
        model = make_random_mrf(g, 2, 1.0, random_state=J)
        X = model.sample(n, random_state=100 + J, method="exact")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, t_ml, ml = best_of(
                lambda g=g, X=X: ExactMaxLikelihood(g, tol=1e-6, score_method="pseudo").fit(X), repeat
            )
            _, t_lap, lap = best_of(
                lambda g=g, X=X: LAPEstimator(g, n_jobs=n_jobs, score_method="pseudo").fit(X), repeat
            )
        n_cl = len(g.factors)
        print(
            f"{J:>3} {n_cl:>7} {ml.model_.treewidth:>3} {t_ml:>9.2f} {t_lap:>8.3f} {t_ml / t_lap:>8.1f} "
            f"{1e3 * t_lap / n_cl:>13.3f} {relative_error(lap.theta_, ml.theta_):>17.4f} "
            f"{relative_error(ml.theta_, model.theta):>10.4f}",
            flush=True,
        )


def _worker(args):
    """Fit one estimator in this (fresh) process; print a JSON line with time, error and peak memory."""
    from skmrf.estimators._lap import LAPEstimator
    from skmrf.estimators._pseudo import PseudoLikelihoodEstimator
    from skmrf.metrics import relative_error

    X, theta = cached_data(args.J, args.data_n, args.cache)
    X = X[: args.n]
    g = grid_mrfgraph(args.J)
    if args.worker == "lap":
        est = LAPEstimator(g, strategy="pairwise", n_jobs=args.n_jobs, score_method="pseudo")
    else:
        est = PseudoLikelihoodEstimator(g, n_jobs=args.n_jobs, score_method="pseudo")
    t, c = time.perf_counter(), time.process_time()
    est.fit(X)
    elapsed, cpu = time.perf_counter() - t, time.process_time() - c
    peak = peak_rss_mib() / 1024
    print(
        json.dumps(
            {
                "time": elapsed,
                "cpu": cpu,
                "peak_gib": peak,
                "rel_err_true": relative_error(est.theta_, theta),
                "n_cliques": len(g.factors),
                "n_iter": int(est.n_iter_),
            }
        )
    )


def run_worker(est, J, n, data_n, cache, n_jobs):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", est, "--J", str(J), "--n", str(n)]
    cmd += ["--data-n", str(data_n), "--cache", cache, "--n-jobs", str(n_jobs)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    for line in out.stdout.splitlines():
        if line.startswith("  (sampled"):
            print(line, flush=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def big(n, cache, n_jobs, sides=(100, 316)):
    """The large-grid table; ``sides``: the grid and the ~10^5-variable grid (``--quick``: smaller)."""
    J1, J2 = sides
    print(f"\nLarge grids (binary, pairwise; each fit in a fresh process; n_jobs={n_jobs})")
    print("(wall-clock 'fit s' depends on the machine's load; 'cpu s' is this process's CPU time,")
    print(" which excludes joblib workers, so it is shown for n_jobs=1 only)")
    head = f"{'grid':>9} {'N':>6} {'est':<7} {'cliques':>7} {'fit s':>8} {'cpu s':>8} {'us/clique':>9}"
    print(head + f" {'peak GiB':>8} {'rel.err true':>12}")
    res = {}
    for J, N, data_n, est, jobs in [
        (J1, n, n, "lap", n_jobs),
        (J1, n, n, "lap", 2),
        (J1, n, n, "pl", n_jobs),
        (J1, 1000, n, "lap", n_jobs),
        (J2, 1000, 1000, "lap", n_jobs),
    ]:
        if J == J2:
            cached_data(J2, 1000, cache, n_sweeps=20)
        r = run_worker(est, J, N, data_n, cache, jobs) if J != J2 else run_316(N, cache, jobs, J2)
        res.setdefault((J, N, est), r)
        if jobs == 2:
            res[(J, N, est, 2)] = r
        print(
            f"{J}x{J:<5} {N:>6} {est + ('/2j' if jobs == 2 else ''):<7} {r['n_cliques']:>7} {r['time']:>8.2f} "
            f"{r['cpu'] if jobs == 1 else float('nan'):>8.2f} "
            f"{1e6 * r['time'] / r['n_cliques']:>9.1f} {r['peak_gib']:>8.2f} {r['rel_err_true']:>12.4f}",
            flush=True,
        )
    a, b = res[(J1, n, "lap")], res[(J1, n, "pl")]
    c, d = res[(J1, 1000, "lap")], res[(J2, 1000, "lap")]
    a2 = res[(J1, n, "lap", 2)]
    print(
        f"\n{J1}x{J1}, N={n}: LAP {a['time']:.1f} s with n_jobs={n_jobs}, {a2['time']:.1f} s with n_jobs=2 "
        f"(target < 60 s); peak {max(a['peak_gib'], a2['peak_gib']):.2f} GiB (target < 4 GB)"
    )
    print(
        f"LAP vs PL at {J1}x{J1}: time ratio PL/LAP = {b['time'] / a['time']:.2f} wall, "
        f"{b['cpu'] / a['cpu']:.2f} CPU (target >= 1), "
        f"rel.err to truth LAP {a['rel_err_true']:.4f} vs PL {b['rel_err_true']:.4f}"
    )
    ratio = (d["time"] / d["n_cliques"]) / (c["time"] / c["n_cliques"])
    cratio = (d["cpu"] / d["n_cliques"]) / (c["cpu"] / c["n_cliques"])
    print(f"{J2}x{J2} vs {J1}x{J1} at N=1000: time per clique ratio = {ratio:.2f} wall, {cratio:.2f} CPU (target <= 2)")


def run_316(N, cache, n_jobs, J=316):
    # The 316x316 data have 20 sweeps (sampling 10^5 variables is the slow part here).
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "lap", "--J", str(J), "--n", str(N)]
    cmd += ["--data-n", "1000", "--cache", cache, "--n-jobs", str(n_jobs), "--sweeps", "20"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("parts", nargs="*", default=["fig5", "big"])
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--jmin", type=int, default=4)
    p.add_argument("--jmax", type=int, default=14)
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3, help="fig5: best of this many fits of each estimator")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/skmrf-bench"))
    p.add_argument("--worker", choices=["lap", "pl"])
    p.add_argument("--J", type=int)
    p.add_argument("--data-n", type=int)
    p.add_argument("--sweeps", type=int, default=50)
    p.add_argument("--quick", action="store_true", help="fig5 J = 4..6, N = 1000, one fit; big on 12x12 and 20x20")
    a = p.parse_args()
    if a.worker:
        if a.sweeps != 50:
            global cached_data
            base = cached_data
            cached_data = lambda J, n, cache: base(J, n, cache, n_sweeps=a.sweeps)  # noqa: E731
        _worker(a)
        return
    sides = (100, 316)
    tmp = tempfile.TemporaryDirectory() if a.quick else None
    if a.quick:
        a.n, a.jmin, a.jmax, a.repeat, a.cache, sides = 1000, 4, 6, 1, tmp.name, (12, 20)
    print(header(f"lap_scaling.py {' '.join(a.parts)}: LAP against exact ML and PL, wall seconds", a.n_jobs))
    if "fig5" in a.parts:
        fig5(a.n, a.jmax, a.n_jobs, a.jmin, a.repeat)
    if "big" in a.parts:
        big(a.n, a.cache, a.n_jobs, sides)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
