"""n_jobs=1 versus n_jobs=2 on the four parallel paths, tiny to large: where does the pool pay?

Every parallel call site sizes its work in a unit of its own and asks
``skmrf._utils._parallel.workers_for`` how many workers that work keeps busy; below its
``*_MIN_WORK_PER_WORKER`` threshold the site runs serially. This script measures, for each
site, whole ``fit`` times with ``n_jobs=1`` and ``n_jobs=2`` over a range of problem sizes,
so that the threshold can be read where the ratio ``t(2 jobs) / t(1 job)`` crosses 1, and
checked afterwards (below it the two settings run the same serial code; above it two jobs
still gain).

Paths and their work units (read from the library's own call of ``workers_for``):

``pl``
    ``PseudoLikelihoodEstimator``, threads over chunks of records, once per objective
    evaluation. Work: ``PseudoLikelihoodObjective.work`` = (record, clique) pairs x states,
    per evaluation. Binary G x G grids, Gibbs data, ``max_iter=50`` so that large fits stay
    short (small ones converge before that).
``lap``
    ``LAPEstimator(strategy="pairwise")``, threads over chunks of batched Newton tasks,
    once per fit. Work: ``lap._solve_work``, the floats of the batches' temporaries.
``mcmc``
    ``MCMCMaxLikelihood``, joblib's default backend (loky processes) over blocks of 4096
    chains, once per step. Work: single-site updates per step, chains x sweeps x variables.
    5 steps, ``max_coupling=0.2``.
``em``
    ``DecomposedEM``, threads over batched calibrations of the E-step, once per iteration.
    Work: ``IncompleteDataTerm.work`` (floats of one E-step). Binary grids, 30% of the
    entries missing at random, 5 EM iterations.
``glap``
    ``GaussianLAP``, threads over chunks of the plan, once per fit. Work:
    ``LapPlan.cost`` (``sum u^2 n + sum |A|^3``). The chunked cluster-Gram path is forced
    (``_DENSE_GRAM_MAX_FEATURES = 0``; ``fit`` otherwise reads small problems off the dense
    covariance, where ``n_jobs`` plays no part), ``store_covariance=False``.

Times are the minimum over repeats that alternate the two settings (single runs on the
shared 2-core machine vary by up to 40 %); small fits get more repeats (enough for about
``--budget`` seconds per setting, at least ``--repeat``). One untimed fit of each setting
comes first (imports, loky's worker processes). ``workers`` is what the library chose for
``n_jobs=2``.

    PYTHONPATH=/path/to/checkout python benchmarks/parallel_threshold.py [pl] [lap] [mcmc] [glap]

``--quick``: the two smallest sizes of each path, one repeat (a smoke run).
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import numpy as np
from _harness import best_of, header, load_average

from skmrf import TheorySchedule
from skmrf._utils import _parallel

PATHS = ("pl", "lap", "mcmc", "glap", "em")


def binary_grid_data(G, n, n_sweeps=20, seed=0):
    """``n`` rows of a random binary G x G grid MRF (chromatic Gibbs, ``n_sweeps`` sweeps)."""
    from skmrf import grid_graph
    from skmrf.datasets import make_random_mrf

    model = make_random_mrf(grid_graph(G, G), 2, 1.0, random_state=seed)
    return model.sample(n, random_state=seed + 1, method="gibbs", n_sweeps=n_sweeps)


def gaussian_grid_data(J, n, seed=0):
    """``n`` rows of a chain-correlated Gaussian on J x J variables."""
    Z = np.random.default_rng(seed).standard_normal((n, J * J))
    Z[:, 1:] += 0.5 * Z[:, :-1]
    return Z


def pl_cases():
    from skmrf import PseudoLikelihoodEstimator

    for G, n in [(3, 300), (5, 500), (8, 1000), (12, 1000), (16, 2000), (24, 2000), (32, 5000), (50, 5000)]:
        X = binary_grid_data(G, n)
        yield (
            f"{G}x{G} N={n}",
            "skmrf._kernels.pseudo",
            lambda nj, X=X, G=G: PseudoLikelihoodEstimator(
                f"grid:{G}x{G}", max_iter=50, n_jobs=nj, score_method="pseudo"
            ).fit(X),
        )


def lap_cases():
    from skmrf import LAPEstimator

    for G, n in [(3, 300), (5, 500), (8, 1000), (12, 1000), (16, 2000), (24, 2000), (32, 5000), (50, 5000)]:
        X = binary_grid_data(G, n)
        yield (
            f"{G}x{G} N={n}",
            "skmrf._kernels.lap",
            lambda nj, X=X, G=G: LAPEstimator(
                f"grid:{G}x{G}", strategy="pairwise", n_jobs=nj, score_method="pseudo"
            ).fit(X),
        )
    path = os.path.expanduser("~/.cache/skmrf-bench/grid100_N10000_sweeps50.npz")
    if os.path.exists(path):  # cached by benchmarks/lap_scaling.py big
        X = np.load(path)["X"]
        yield (
            "100x100 N=10000",
            "skmrf._kernels.lap",
            lambda nj: LAPEstimator("grid:100x100", strategy="pairwise", n_jobs=nj, score_method="pseudo").fit(X),
        )


def mcmc_cases():
    from skmrf import MCMCMaxLikelihood

    for G, M, v in [
        (3, 100, 2),
        (5, 1000, 5),
        (10, 4096, 10),
        (5, 8192, 2),
        (10, 8192, 5),
        (16, 8192, 10),
        (32, 8192, 10),
        (32, 16384, 10),
    ]:
        X = binary_grid_data(G, 500)
        yield (
            f"{G}x{G} M={M} v={v}",
            "skmrf.estimators._mcmc",
            lambda nj, X=X, G=G, M=M, v=v: MCMCMaxLikelihood(
                f"grid:{G}x{G}",
                schedule=TheorySchedule(n_iter=5, n_chains=M, n_sweeps=v),
                max_coupling=0.2,
                n_jobs=nj,
                random_state=0,
                score_method="pseudo",
            ).fit(X),
        )


def glap_cases():
    from skmrf import GaussianLAP

    for J, n in [(4, 50), (8, 100), (12, 200), (20, 200), (20, 1000), (32, 1000), (50, 1000), (78, 1000), (100, 2000)]:
        X = gaussian_grid_data(J, n)
        yield (
            f"{J}x{J} n={n}",
            "skmrf._kernels.gaussian.lap",
            lambda nj, X=X, J=J: GaussianLAP(f"grid:{J}x{J}", store_covariance=False, n_jobs=nj).fit(X),
        )


def em_cases():
    from skmrf import DecomposedEM

    for G, n in [(4, 200), (6, 500), (8, 1000), (9, 4096), (9, 16384)]:
        X = binary_grid_data(G, n).astype(float)
        X[np.random.default_rng(1).random(X.shape) < 0.3] = np.nan  # 30% of the entries missing
        yield (
            f"{G}x{G} N={n} 30% missing",
            "skmrf._kernels.incomplete.em",
            lambda nj, X=X, G=G: DecomposedEM(f"grid:{G}x{G}", max_iter=5, tol=1e-12, n_jobs=nj).fit(X),
        )


def second_core(repeat=5):
    """Ratio of 2 threads to 1 on an ideal workload (``np.exp`` of two 1M-element arrays, GIL
    released): 0.5 when a second core is free, 1 when other load has taken it."""
    a = np.random.default_rng(0).random((2, 1 << 20))

    def work(i):
        for _ in range(10):
            np.exp(a[i])

    t1, t2 = [], []
    with ThreadPoolExecutor(2) as ex:
        for _ in range(repeat):
            t = time.perf_counter()
            work(0)
            work(1)
            t1.append(time.perf_counter() - t)
            t = time.perf_counter()
            list(ex.map(work, (0, 1)))
            t2.append(time.perf_counter() - t)
    return min(t2) / min(t1)


def machine_state():
    return f"load average {load_average()}; ideal 2-thread ratio {second_core():.2f} (0.5: a free second core)"


def timed(fit, nj):
    """Wall seconds of one ``fit(nj)``."""
    return best_of(lambda: fit(nj), 1, quiet=False)[1]


def measure(module, fit, repeat, budget):
    """``(work, workers, t1, t2)``: the site's work units, its workers for n_jobs=2, minimum times."""
    calls = []
    real = _parallel.workers_for

    def recording(n_jobs, work, min_work_per_worker, **kwargs):
        out = real(n_jobs, work, min_work_per_worker, **kwargs)
        calls.append((n_jobs, work, out))
        return out

    with mock.patch(f"{module}.workers_for", recording):
        warm = [timed(fit, 1), timed(fit, 2)]  # untimed: imports, loky's processes
    work = calls[-1][1] if calls else float("nan")
    workers = calls[-1][2] if calls else 0
    n = max(repeat, min(40, int(budget / max(min(warm), 1e-3))))
    t1, t2 = [], []
    for _ in range(n):
        t1.append(timed(fit, 1))
        t2.append(timed(fit, 2))
    return work, workers, min(t1), min(t2), n


def run(path, repeat, budget, n_cases=None):
    """The table of one path: its cases (the first ``n_cases`` of them, all if None)."""
    cases = {"pl": pl_cases, "lap": lap_cases, "mcmc": mcmc_cases, "glap": glap_cases, "em": em_cases}[path]
    print(f"\n{path}: {machine_state()}")
    head = ("size", "work units", "workers", "t(1 job) s", "t(2 jobs) s", "ratio", "best of")
    print("".join(f"{h:>{w}}" for h, w in zip(head, (20, 13, 8, 12, 12, 7, 8))))
    ctx = mock.patch("skmrf._kernels.gaussian.lap._DENSE_GRAM_MAX_FEATURES", 0) if path == "glap" else None
    if ctx is not None:
        ctx.start()
    try:
        for label, module, fit in itertools.islice(cases(), n_cases):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                work, workers, t1, t2, n = measure(module, fit, repeat, budget)
            print(f"{label:>20} {work:12.3g} {workers:7d} {t1:11.4f} {t2:11.4f} {t2 / t1:6.2f} {n:7d}", flush=True)
    finally:
        if ctx is not None:
            ctx.stop()
    print(f"{'':>20} after: {machine_state()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", help=f"any of {', '.join(PATHS)} (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="at least this many alternating repeats")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds per setting for small fits")
    ap.add_argument("--quick", action="store_true", help="the two smallest sizes of each path, one repeat")
    args = ap.parse_args()
    unknown = set(args.paths) - set(PATHS)
    if unknown:
        ap.error(f"unknown paths {sorted(unknown)}; choose from {PATHS}")
    n_cases = None
    if args.quick:
        args.repeat, args.budget, n_cases = 1, 0.0, 2
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(header("parallel_threshold.py: n_jobs=1 against n_jobs=2 on the parallel paths"))
    print(f"uptime: {uptime}")
    print("ratio = t(2 jobs) / t(1 job), minima over alternating repeats; workers = the library's choice for n_jobs=2")
    print("each path's header and footer: load and the 2-thread ratio of an ideal workload at that moment")
    for path in args.paths or PATHS:
        run(path, args.repeat, args.budget, n_cases)
    print(f"\nuptime at the end: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
