"""Why GaussianMaxLikelihood is slow on wide stencils: the spectrum of its preconditioned Newton system (#41).

At the maximum-likelihood precision of the 13-point pattern of ``L L^T`` (``laplacian``) and of
the 5-point lattice (``laplacian5``) on ``r x r`` grids (n = 1000, models of ``gaussian_lap.py``),
the Newton operator ``H: U -> P_V(W U W)`` and the stationary-torus preconditioner ``M^{-1}``
that the sparse solver uses (``newton_cg._preconditioner``) are formed densely, and the table
gives the condition number of ``M^{-1} H`` (CG's iterations grow as its square root), the share
of its eigenvalues below a third of the median, and how much of the mass of those eigenvectors
lies on the entries within one site of the grid's edge (``edge``: the share of all entries there).
``+edge block`` is the condition number when the entries within one site of the edge are also
solved exactly, as a multiplicative Schwarz correction ``B + (I - B H) M^{-1} (I - H B)`` with
``B`` the exact inverse of ``H`` on those entries.

    python benchmarks/gaussian_torus_spectrum.py [--quick] [--sides 10 14 20]

Dense eigenvalues of a ``q x q`` matrix: about a minute at r = 20 (q = 2602), 8 GiB beyond r = 30.
"""

import argparse

import numpy as np
from _harness import header, limit_blas
from gaussian_lap import make_problem

from skmrf import GaussianMaxLikelihood
from skmrf._kernels.gaussian.chordal import ChordalPattern
from skmrf._kernels.gaussian.lap import pattern_unknowns
from skmrf._kernels.gaussian.lattice import detect_lattice
from skmrf._kernels.gaussian.newton_cg import _preconditioner


def spectrum(pattern_name, r):
    """One row of the table: the preconditioned Newton system at the ML estimate on an r x r grid."""
    Q, X = make_problem(pattern_name, r * r, 1000)
    adjacency = (abs(Q) > 0).astype(int).tolil()
    adjacency.setdiag(0)
    theta = GaussianMaxLikelihood(graph=adjacency.toarray()).fit(X).precision_
    cols, rows = pattern_unknowns(adjacency.tocsr())
    pattern = ChordalPattern(rows, cols, r * r)
    x = theta[rows, cols]
    L = pattern.cholesky(x)[0]
    Y, w = pattern.inverse_on_pattern(L)
    precondition = _preconditioner(pattern, detect_lattice(rows, cols, r * r), L, Y, x, w)
    W, q = np.linalg.inv(theta), len(rows)

    def newton(v):
        U = np.zeros_like(W)
        U[rows, cols] = v
        U[cols, rows] = v
        return (W @ U @ W)[rows, cols]

    H = np.stack([newton(e) for e in np.eye(q)], axis=1)
    M = np.stack([precondition(e) for e in np.eye(q)], axis=1)
    values, vectors = np.linalg.eig(M @ H)
    values, vectors = values.real, vectors.real
    i, j = np.divmod(np.r_[rows, cols], r)
    edge = (np.minimum(np.minimum(i, r - 1 - i), np.minimum(j, r - 1 - j)).reshape(2, -1).min(axis=0)) <= 1
    low = values < np.median(values) / 3
    mass = float(np.sum(vectors[edge][:, low] ** 2) / np.sum(vectors[:, low] ** 2)) if low.any() else float("nan")
    B = np.zeros_like(H)
    B[np.ix_(edge, edge)] = np.linalg.inv(H[np.ix_(edge, edge)])
    eye = np.eye(q)
    schwarz = np.linalg.eigvals((B + (eye - B @ H) @ M @ (eye - H @ B)) @ H).real
    return q, values.max() / values.min(), low.mean(), mass, edge.mean(), schwarz.max() / schwarz.min()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sides", type=int, nargs="+", default=[10, 14, 20])
    ap.add_argument("--patterns", nargs="+", default=["laplacian", "laplacian5"])
    ap.add_argument("--quick", action="store_true", help="r = 6 only")
    args = ap.parse_args()
    if args.quick:
        args.sides = [6]
    limit_blas(1)
    print(header("gaussian_torus_spectrum.py: the torus-preconditioned Newton system at the ML estimate, n = 1000", 1))
    columns = ("r", 3), ("q", 6), ("kappa", 8), ("low", 6), ("low on edge", 11), ("edge", 6), ("+edge block", 11)
    print(f"{'pattern':<11} " + " ".join(f"{name:>{width}}" for name, width in columns))
    for name in args.patterns:
        for r in args.sides:
            q, kappa, low, mass, edge, schwarz = spectrum(name, r)
            row = f"{r:>3} {q:>6} {kappa:>8.1f} {low:>6.3f} {mass:>11.2f} {edge:>6.2f} {schwarz:>11.1f}"
            print(f"{name:<11} {row}", flush=True)


if __name__ == "__main__":
    main()
