"""Research record, not a maintained benchmark: issue #28's preconditioner and start experiments.

Moved out of ``benchmarks/gaussian_lap.py`` (its part ``research28``) by #41 item 5: it monkeypatches
the private ``skmrf._kernels.gaussian.newton_cg._preconditioner`` and calls kernel internals, so a
refactor of the sparse ML may break it; it is kept as the record of how
``benchmarks/results/gaussian_lap_research28.txt`` was made, not run by the tests.

(a) CG iterations per Newton step against the grid width for each preconditioner (the package's
torus one, a Dirichlet-shifted torus one, the chordal one); (b) positive definite starts for
``L L^T``; (c) the chordal preconditioner on random sparse patterns.

    python benchmarks/research/gaussian_lap_research28.py [--quick] [--budget 300] [--blas-threads 1]

Writes ``benchmarks/results/gaussian_lap_research28.txt`` (``--quick``: prints only).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/
from gaussian_lap import _limit_blas, _load, _results, make_problem  # noqa: E402


def _research_problem(pattern, p, n=1000, seed=0):
    """Standardised data (one row per variable), the chordal pattern, s on the embedding and the pattern."""
    from skmrf._kernels.gaussian.chordal import ChordalPattern, covariance_on_embedding
    from skmrf._kernels.gaussian.lattice import detect_lattice

    Q, X = make_problem(pattern, p, n, seed)
    Z = X - X.mean(axis=0)
    Z /= np.sqrt((Z**2).mean(axis=0))
    lo = sp.coo_array(sp.tril(sp.csr_array(Q)))
    if pattern == "random":
        lo = sp.coo_array(sp.tril(sp.csr_array(Q)) + sp.identity(p))  # the diagonal is in the pattern
    rows, cols = lo.row.astype(np.int64), lo.col.astype(np.int64)
    cp = ChordalPattern(rows, cols, p)
    s_stored = covariance_on_embedding(np.ascontiguousarray(Z.T), cp, float(n))
    return cp, s_stored, detect_lattice(rows, cols, p)


def _research_newton(cp, s, x0, lattice, variant, n, budget):
    """Newton-CG to statistical precision with one preconditioner variant; (steps, CG list, cpu s, f)."""
    from skmrf._kernels.gaussian import newton_cg
    from skmrf._kernels.gaussian.lattice import TorusPreconditioner

    original = newton_cg._preconditioner
    if variant == "torus-dirichlet":
        newton_cg._preconditioner = lambda pattern, lat, L, Y, x, *rest: TorusPreconditioner(lat, x)
    try:
        c = time.process_time()
        res = newton_cg.newton_cg_covsel(
            cp,
            s,
            x0,
            max_iter=60,
            decrement_tol=1e-3 * len(s) / n,
            lattice=None if variant == "chordal" else lattice,
            max_time=budget,
        )
        return res.n_iter, res.cg_iterations, time.process_time() - c, res.objective, res.decrement
    finally:
        newton_cg._preconditioner = original


def part_research28(args):
    """CG iterations per Newton step against the grid width for each preconditioner, and starts for L L^T."""
    from skmrf._kernels.gaussian.chordal import embedding_start, likelihood_start, objective
    from skmrf._kernels.gaussian.lattice import stationary_fit
    from skmrf._kernels.gaussian.sparse_ml import choose_start, rescale

    out = _results("gaussian_lap_research28", args)
    n = 1000
    widths = [12, 20] if args.quick else [20, 40, 78]
    budget = 30.0 if args.quick else args.budget
    out(f"\n== research28 (a): CG iterations per Newton step against the grid width, n = {n} ==")
    out("   start: the package's (best of rescaled stationary, embedding, diagonal); stop at lambda^2/2 <= 1e-3 q/n;")
    out("   torus-eig = the package's lattice preconditioner (shift to the iterate's smallest eigenvalue),")
    out("   torus-dirichlet = shift to the median stencil's Dirichlet minimum,")
    out("   chordal = the chordal embedding's inverse Hessian restricted to the pattern;")
    out(f"   '!' = stopped by a {budget:.0f} s budget; the last CG count includes the confirmation solve")
    head = f"  {'pattern':>10} {'r':>4} {'precond':>16} {'steps':>5} {'CG per step':>40}"
    out(head + f" {'CG':>6} {'cpu s':>7} {'load':>5}")
    for pattern in ("laplacian5", "laplacian"):
        for r in widths:
            cp, s_stored, lattice = _research_problem(pattern, r * r, n)
            s = s_stored[cp.index]
            x_e, _ = embedding_start(cp, s_stored)
            x_st = rescale(cp, s, stationary_fit(lattice, s)[lattice.kind])
            _, x0, _ = choose_start(cp, s, {"embedding": x_e, "stationary": x_st})
            for variant in ("torus-eig", "torus-dirichlet", "chordal"):
                try:
                    steps, cg, cpu, f, dec = _research_newton(cp, s, x0, lattice, variant, n, budget)
                except np.linalg.LinAlgError:  # the Dirichlet-shifted torus model is singular on L L^T
                    out(f"  {pattern:>10} {r:>4} {variant:>16}     - the torus model is singular (not PD)")
                    continue
                done = dec <= 1e-3 * len(s) / n
                cgs = "+".join(map(str, cg))
                cgs = cgs if len(cgs) <= 40 else cgs[:37] + "..."
                out(
                    f"  {pattern:>10} {r:>4} {variant:>16} {steps:>4}{'' if done else '!'} {cgs:>40} {sum(cg):>6} "
                    f"{cpu:>7.2f} {_load():>5}"
                )
    out(f"\n== research28 (b): positive definite starts, n = {n}: objective f0 (inf = not positive definite) ==")
    out("   and Newton steps / CG iterations from it to statistical precision with the torus-eig preconditioner")
    out(f"  {'pattern':>10} {'r':>4} {'start':>22} {'f0':>14} {'steps':>5} {'CG':>6} {'cpu s':>7} {'f':>14}")
    for pattern in ("laplacian5", "laplacian"):
        for r in widths:
            cp, s_stored, lattice = _research_problem(pattern, r * r, n)
            s = s_stored[cp.index]
            x_e, bound = embedding_start(cp, s_stored)
            stationary = stationary_fit(lattice, s)[lattice.kind]
            diagonal = np.where(cp.diagonal, 1.0 / np.where(cp.diagonal, s, 1.0), 0.0)
            starts = {
                "diagonal": diagonal,
                "embedding (fill 0)": x_e,
                "stationary": stationary,
                "stationary rescaled": rescale(cp, s, stationary),
                "diag->embedding seg.": likelihood_start(cp, s, _embedding_raw(cp, s_stored))[0],
            }
            for name, x0 in starts.items():
                f0 = objective(cp, s, x0) if x0 is not None else np.inf
                if not np.isfinite(f0):
                    out(f"  {pattern:>10} {r:>4} {name:>22} {'inf':>14}")
                    continue
                steps, cg, cpu, f, dec = _research_newton(cp, s, x0, lattice, "torus-eig", n, budget)
                done = dec <= 1e-3 * len(s) / n
                out(
                    f"  {pattern:>10} {r:>4} {name:>22} {f0:>14.3f} {steps:>4}{'' if done else '!'} {sum(cg):>6} "
                    f"{cpu:>7.2f} {f:>14.3f}"
                )
            out(f"  {pattern:>10} {r:>4} {'embedding bound':>22} {bound:>14.3f}")
    out(f"\n== research28 (c): the chordal preconditioner on random sparse patterns (mean degree 4), n = {n} ==")
    out(f"  {'p':>6} {'fill':>9} {'steps':>5} {'CG per step':>40} {'CG':>6} {'cpu s':>7}")
    for p in [100, 400] if args.quick else [400, 1600, 3000]:
        cp, s_stored, _ = _research_problem("random", p, n)
        s = s_stored[cp.index]
        x_e, _ = embedding_start(cp, s_stored)
        _, x0, _ = choose_start(cp, s, {"embedding": x_e})
        steps, cg, cpu, f, dec = _research_newton(cp, s, x0, None, "chordal", n, budget)
        done = dec <= 1e-3 * len(s) / n
        cgs = "+".join(map(str, cg))
        out(f"  {p:>6} {cp.n_fill:>9} {steps:>4}{'' if done else '!'} {cgs[:40]:>40} {sum(cg):>6} {cpu:>7.2f}")
    out.save()


def _embedding_raw(cp, s_stored):
    """The embedding ML on the pattern with its fill zeroed, positive definite or not."""
    import chompack
    import cvxopt

    X = chompack.cspmatrix(cp.symb, blkval=cvxopt.matrix(s_stored.copy()))
    try:
        chompack.completion(X)
    except ArithmeticError:
        return np.where(cp.diagonal, 1.0, 0.0)
    chompack.llt(X)
    return cp.values(X)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller grids, a 30 s budget")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds of Newton-CG per run")
    ap.add_argument("--blas-threads", type=int, default=1, help="BLAS threads; 0 = leave alone")
    args = ap.parse_args()
    _limit_blas(args.blas_threads)
    part_research28(args)


if __name__ == "__main__":
    main()
