"""GaussianMaxLikelihood's solvers side by side, and what ``solver="auto"`` picks (#41 item 4).

For each pattern (the 5-point lattice ``laplacian5``, the 13-point pattern of ``L L^T``
``laplacian``, and an Erdos-Renyi pattern of mean degree 4 ``random``; models of
``gaussian_lap.py``) and each ``p``: the best wall time of the sparse Newton-CG, dense Newton and
regression solvers and of ``"auto"``, on one BLAS thread, n = 1000 rows; ``auto/best`` is the
default's time over the fastest solver's. With ``--r`` and R's ``glasso`` installed, also
``glasso(S, rho=0, zero=)`` (covariance selection by the same regression algorithm, in Fortran)
on the same sample covariance, timed inside R.

    python benchmarks/gaussian_solver_choice.py [--quick] [--sizes 49 196 1024 6084] [--r]
        [--patterns laplacian5 laplacian random] [--solvers auto sparse newton regression]

A solver is not run where it would not finish in reason: dense Newton above 6000 unknowns
(a q x q Hessian), dense solvers above 2500 variables in ``--quick``; ``--max-time`` caps the
sparse solver (``max_time``) and R. A time marked ``*`` is a fit that warned it did not converge
(``max_iter`` or ``max_time``): it is never counted as the best.
"""

import argparse
import os
import shutil
import subprocess
import tempfile
import warnings

import numpy as np
from _harness import best_of, header, limit_blas, peak_rss_mib
from gaussian_lap import make_problem
from sklearn.exceptions import ConvergenceWarning

from skmrf import GaussianMaxLikelihood

SOLVERS = ("auto", "sparse", "newton", "regression")


def _r_glasso(X, Q, repeat, timeout):
    """Best seconds of R's glasso(S, rho=0, zero=non-edges) on the sample covariance, None without R,
    inf past ``timeout`` seconds."""
    if shutil.which("Rscript") is None:
        return None
    S = np.cov(X, rowvar=False, bias=True)
    upper = np.triu(np.ones(Q.shape, dtype=bool), 1) & (Q.toarray() == 0)
    zero = np.argwhere(upper) + 1
    with tempfile.TemporaryDirectory() as tmp:
        np.savetxt(os.path.join(tmp, "S.txt"), S)
        np.savetxt(os.path.join(tmp, "zero.txt"), zero, fmt="%d")
        script = (
            "suppressMessages(library(glasso)); S <- as.matrix(read.table(file.path(d, 'S.txt'))); "
            "z <- as.matrix(read.table(file.path(d, 'zero.txt'))); best <- Inf; "
            f"for (k in 1:{repeat}) {{ t <- system.time(glasso(S, rho = 0, zero = z, thr = 1e-8, maxit = 1000))"
            "[['elapsed']]; best <- min(best, t) }; cat(best)"
        )
        try:
            out = subprocess.run(
                ["Rscript", "-e", f"d <- '{tmp}'; {script}"],
                capture_output=True,
                text=True,
                env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return float("inf")
    return float(out.stdout) if out.returncode == 0 and out.stdout else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[49, 196, 1024, 6084])
    ap.add_argument("--patterns", nargs="+", default=["laplacian5", "laplacian", "random"])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--max-time", type=float, default=300.0)
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS, help="auto is always run")
    ap.add_argument("--quick", action="store_true", help="p = 49 and 196 only, best of 2")
    ap.add_argument("--r", action="store_true", help="also time R's glasso(rho=0, zero=)")
    args = ap.parse_args()
    sizes = [s for s in args.sizes if s <= 196] if args.quick else args.sizes
    limit_blas(1)
    timing = "best of 5 (above p = 500: of 3 under 10 s, else one)"
    print(header(f"gaussian_solver_choice.py: wall seconds, {timing}, n = {args.n}", 1))
    print(f"{'pattern':10s} {'p':>6s} {'unknowns':>9s} " + " ".join(f"{s:>11s}" for s in SOLVERS), end="")
    print(f" {'auto picks':>10s} {'auto/best':>9s}" + (f" {'R glasso':>9s}" if args.r else ""))
    for pattern in args.patterns:
        for p in sizes:
            Q, X = make_problem(pattern, p, args.n, seed=0)
            q = p + (Q.nnz - p) // 2
            times, picked = {}, "-"
            for solver in SOLVERS:
                if solver not in args.solvers and solver != "auto":
                    continue
                if solver == "newton" and q > 6000:  # a q x q Hessian: 300 s and more
                    continue
                if solver in ("newton", "regression") and args.quick and p > 2500:
                    continue
                repeat = 1 if p > 500 else (2 if args.quick else 5)
                est = GaussianMaxLikelihood(Q, solver=solver, max_time=args.max_time)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    _, wall, fitted = best_of(lambda e=est, X=X: e.fit(X), repeat, quiet=False)
                    if repeat == 1 and wall < 10:  # the first fit of a size pays for warming up: again
                        wall = min(wall, best_of(lambda e=est, X=X: e.fit(X), 2, quiet=False)[1])
                # A fit that warned it did not converge (max_iter, or max_time for the sparse
                # solver) is not a finished fit: its time is marked, and it is never the best.
                unfinished = any(issubclass(w.category, ConvergenceWarning) for w in caught)
                times[solver] = (wall, unfinished)
                if solver == "auto":
                    picked = fitted.solver_
            finished = [t for s, (t, unfinished) in times.items() if s != "auto" and not unfinished]
            best = min(finished, default=float("nan"))
            cells = " ".join(
                f"{times[s][0]:10.4f}{'*' if times[s][1] else ' '}" if s in times else f"{'-':>11s}" for s in SOLVERS
            )
            ratio = times["auto"][0] / best if not times["auto"][1] else float("inf")
            line = f"{pattern:10s} {p:6d} {q:9d} {cells} {picked:>10s} {ratio:9.2f}"
            if args.r:
                r = _r_glasso(X, Q, 1 if p > 500 else 3, args.max_time)
                line += f" {r:9.4f}" if r is not None else f" {'-':>9s}"
            print(line, flush=True)
    print(
        f"# peak memory {peak_rss_mib():.0f} MiB; *: the fit warned it did not converge (max_iter or --max-time), "
        "never counted as the best; auto/best inf: the default did not converge; R inf: past --max-time"
    )


if __name__ == "__main__":
    main()
