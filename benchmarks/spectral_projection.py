"""Time per Euclidean projection onto the spectral fast-mixing set ``||R(J)||_2 <= c``.

Compares ``project_spectral`` (sparse rank-one dual: L-BFGS then Newton-CG, all on the edges)
with the previous dense Dykstra iteration, kept as ``_project_spectral_dykstra`` (one dense
``eigh`` per iteration, ``O(N^3)``), both at their default ``tol=1e-9``.

Inputs: G x G grids (N = 9, 64, 144, 10^4) and a random 3-regular graph (N = 10^4, not
planar), couplings uniform(-0.3, 0.3) (seed 0) scaled so that ``||R||_2 = s c`` with
``c = 0.8``: ``s = 1.2`` (couplings after a gradient step that slightly leaves the set) and
``s = 2`` (harder: on the 100 x 100 grid, 270 eigenvalues of ``R`` lie outside ``[-c, c]`` at
1.2 c and 2,934 at 2 c).

Columns: time per projection (minimum over repeats, up to ``--budget`` seconds per method and
case), iterations (Dykstra's; quasi-Newton + Newton for the new method), ``||R||_2 - c`` of
each result (dense ``eigvalsh`` up to N = 2500, else ARPACK ``eigsh``, whose value is a lower
bound), the largest difference between the two results, and (N <= 144) between the new result
and Dykstra run to ``tol=1e-13``: at ``tol=1e-9`` Dykstra, which converges linearly, stops
up to about 2e-8 short of its limit.

Dense Dykstra at N = 10^4 is not run: each iteration is a dense eigendecomposition of a
10^4 x 10^4 matrix plus two 10^4 x 10^4 products (about 5 GB of work arrays), and it needs
hundreds of iterations. Its per-iteration time is extrapolated by ``N^3`` from one iteration
timed on the 40 x 40 and 50 x 50 grids (labelled ``extrap.``); the total would be that times
an unknown number of iterations (409 at N = 144, s = 1.2; 1938 at s = 2).

Everything runs on one BLAS thread (both methods limit BLAS to one thread themselves).

    PYTHONPATH=. python benchmarks/spectral_projection.py [--out benchmarks/results] [--quick]

``--quick``: grids 3x3 and 8x8 and a 3-regular graph of 400 nodes, repeats for 0.2 s, the dense
iteration on 10x10 and 12x12 grids (a smoke run).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from _harness import header, load_average, peak_rss_mib  # noqa: E402
from scipy.sparse.linalg import eigsh  # noqa: E402

from skmrf import grid_graph  # noqa: E402
from skmrf._kernels.mcmc.spectral import _project_spectral, _project_spectral_dykstra  # noqa: E402
from skmrf._utils._threads import single_blas_thread  # noqa: E402

C = 0.8


def grid_edges(g):
    return np.array(sorted(tuple(sorted(e)) for e in grid_graph(g, g).edges))


def regular_edges(n, d=3):
    return np.array(sorted(tuple(sorted(e)) for e in nx.random_regular_graph(d, n, seed=0).edges))


def sparse_R(J, edges, n):
    i, j = edges[:, 0], edges[:, 1]
    return sp.csr_matrix((np.abs(np.r_[J, J]), (np.r_[i, j], np.r_[j, i])), shape=(n, n))


def norm(J, edges, n):
    R = sparse_R(J, edges, n)
    if n <= 2500:
        return np.abs(np.linalg.eigvalsh(R.toarray())).max()
    return eigsh(R, k=1, which="LA", v0=np.ones(n), return_eigenvectors=False)[0]


def couplings(edges, n, scale):
    J = np.random.default_rng(0).uniform(-0.3, 0.3, len(edges))
    return J * scale * C / norm(J, edges, n)


def best_time(fn, budget, max_repeat=20):
    """Minimum wall time over repeats (at least one, more while under ``budget`` seconds)."""
    times, out = [], None
    start = time.perf_counter()
    while not times or (time.perf_counter() - start < budget and len(times) < max_repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def dense_iteration_time(edges, n):
    """One Dykstra iteration (ball step by eigh, then the cone step) on the N x N matrices."""
    i, j = edges[:, 0], edges[:, 1]
    x = np.zeros((n, n))
    x[i, j] = x[j, i] = np.abs(couplings(edges, n, 1.2))
    support = x > 0
    p, q = np.zeros_like(x), np.zeros_like(x)
    best = np.inf
    for _ in range(2):
        t = time.perf_counter()
        w, V = np.linalg.eigh(x + p)
        y = (V * np.clip(w, -C, C)) @ V.T
        y = 0.5 * (y + y.T)
        p2 = x + p - y
        x_new = np.where(support, np.maximum(y + q, 0.0), 0.0)
        q2 = y + q - x_new
        np.abs(x_new - x).max()
        best = min(best, time.perf_counter() - t)
    del p2, q2
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="directory for spectral_projection.txt")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of repeats per method and case")
    ap.add_argument("--quick", action="store_true", help="small graphs only, 0.2 s of repeats")
    args = ap.parse_args()
    if args.quick:
        args.budget = 0.2

    lines = []

    def emit(s=""):
        print(s, flush=True)
        lines.append(s)

    emit("# PYTHONPATH=. python benchmarks/spectral_projection.py" + (" --quick" if args.quick else ""))
    emit(header("spectral_projection.py: time per projection onto ||R(J)||_2 <= c", 1))
    emit(f"load average at start {load_average()}; {os.cpu_count()} CPUs; one BLAS thread")
    emit(f"c = {C}; couplings uniform(-0.3, 0.3), seed 0, scaled to ||R||_2 = s c; tol = 1e-9 for both methods")
    emit("time: minimum over repeats; iters: Dykstra iterations / quasi-Newton + Newton iterations")
    emit("max|diff|: new - dense result; vs 1e-13: new - dense Dykstra run to tol = 1e-13 (its stopping error is")
    emit("the rest); norm-c: ||R||_2 - c of the result (the new method scales by an upper bound of the norm, so it")
    emit("may end inside the set by as much as its tol allows)")
    emit("")
    head = (
        f"{'graph':>16} {'N':>6} {'edges':>6} {'s':>4} | {'dense s':>9} {'iters':>6} {'norm-c':>9} | "
        f"{'new s':>9} {'iters':>7} {'norm-c':>9} | {'dense/new':>9} {'max|diff|':>9} {'vs 1e-13':>9}"
    )
    emit(head)
    emit("-" * len(head))

    with single_blas_thread():
        cases = [("grid 3x3", grid_edges(3), 9), ("grid 8x8", grid_edges(8), 64), ("grid 12x12", grid_edges(12), 144)]
        if args.quick:
            cases = cases[:2] + [("3-regular", regular_edges(400), 400)]
        else:
            cases += [("grid 100x100", grid_edges(100), 10_000), ("3-regular", regular_edges(10_000), 10_000)]
        for name, edges, n in cases:
            for scale in (1.2, 2.0):
                J = couplings(edges, n, scale)
                t_new, (P, info) = best_time(
                    lambda J=J, e=edges, n=n: _project_spectral(J, e, n, C, 1e-9, 10000), args.budget
                )
                it_new = f"{info['n_quasi_newton']}+{info['n_newton']}"
                d_new = norm(P, edges, n) - C
                if n <= 144:
                    t_old, (Q, it_old) = best_time(
                        lambda J=J, e=edges, n=n: _project_spectral_dykstra(J, e, n, C, return_n_iter=True), args.budget
                    )
                    d_old = f"{norm(Q, edges, n) - C:9.1e}"
                    cols = f"{t_old:9.4f} {it_old:6d} {d_old} | {t_new:9.4f} {it_new:>7} {d_new:9.1e} | "
                    tight = _project_spectral_dykstra(J, edges, n, C, tol=1e-13, max_iter=10**6)
                    cols += f"{t_old / t_new:9.1f} {np.abs(P - Q).max():9.1e} {np.abs(P - tight).max():9.1e}"
                else:
                    dense = "extrap." if name.startswith("grid") else "-"
                    cols = f"{dense:>9} {'':>6} {'':>9} | {t_new:9.4f} {it_new:>7} {d_new:9.1e} |"
                emit(f"{name:>16} {n:6d} {len(edges):6d} {scale:4.1f} | " + cols)
        peak_table = peak_rss_mib()
        # Extrapolation of one dense iteration to N = 10^4.
        g1, g2 = (10, 12) if args.quick else (40, 50)
        n1, n2 = g1 * g1, g2 * g2
        t40 = dense_iteration_time(grid_edges(g1), n1)
        t50 = dense_iteration_time(grid_edges(g2), n2)
        t10k = t50 * (10_000 / n2) ** 3
    emit("")
    emit(f"peak resident memory after the table: {peak_table:.0f} MiB (before the dense N = {n2} iterations)")
    emit(
        f"dense Dykstra, one iteration: {t40:.2f} s at N = {n1}, {t50:.2f} s at N = {n2} "
        f"(ratio {t50 / t40:.2f}; N^3 predicts {(n2 / n1) ** 3:.2f})"
    )
    emit(
        f"extrap. to N = 10^4 by N^3: {t10k:.0f} s per iteration, i.e. {t10k * 409 / 3600:.0f} h for the 409 "
        "iterations of N = 144 at s = 1.2 (not run: the iteration count at N = 10^4 is unknown and likely higher)"
    )
    emit(f"peak resident memory at the end {peak_rss_mib():.0f} MiB; load average at end {load_average()}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "spectral_projection.txt"), "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
