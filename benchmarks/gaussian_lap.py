"""Gaussian LAP: Figure 8 of the exact-inference paper and the performance targets.

Two precision matrices ``Q`` (the true ``Sigma^{-1}``), as in the paper's Figure 7:

``laplacian``
    ``Q = L L^T`` with ``L`` the 5-point Dirichlet Laplacian on an ``r x r``
    grid, so the pattern of ``Q`` (the graph given to the estimators) is the
    13-point stencil (every variable within two grid steps). Samples are
    ``x = L^{-1} z`` computed with the type-I DST (``L`` is diagonal in that
    basis), so sampling costs ``O(n p log p)`` even at ``p = 10^5``.
``laplacian5``
    ``Q = L`` itself, the 5-point Laplacian (condition number about 2500 at
    78 x 78 against about 6e6 for ``L L^T``): a grid MRF of moderate
    conditioning, sampled through the same DST (``sparse_ml`` only).
``random``
    A random sparse SPD matrix: an Erdos-Renyi pattern with mean degree 4,
    off-diagonal values uniform in ``+-[0.5, 1]``, and the diagonal shifted
    so that the condition number is 100. Sampled through a dense Cholesky
    factor (``p <= 6084``).

Parts (each prints a table; times are wall-clock on this machine):

``fig8``
    Relative Frobenius error ``||Q_hat - Q||_F / ||Q||_F`` versus ``n`` (log
    scale) for GaussianLAP (two curves: "LAP (paper, uncorrected)" with
    ``bias_correction=False``, the paper's estimate, and "LAP" with the
    default inverse-Wishart bias correction), GaussianMaxLikelihood,
    scikit-learn's GraphicalLasso (alpha=0.01, max_iter=100, what a user
    would pick today) and the inverse sample covariance (``n > p`` only).
    GraphicalLasso is fitted on standardised columns and its precision mapped
    back, ``Theta = D^{-1/2} Theta_std D^{-1/2}`` with ``D`` the diagonal of
    the column variances: on the raw Laplacian-squared data (variances from
    about 0.01 to 5) it raises FloatingPointError. When a method still fails,
    the table prints the reason. At the paper's size
    (78 x 78 grid, p = 6084) only the methods that finish in reasonable time
    run: LAP and the junction-tree baseline on both patterns (the latter only
    when its cliques are small enough), ML (regression solver) on the random
    pattern. The junction-tree baseline is the paper's: maximum likelihood on
    a chordal embedding of the graph (closed form, more non-zeros than the
    graph, so it needs more samples than its largest clique).
    A 20 x 20 companion (p = 400) runs every method. The LAP columns are the
    unrepaired estimates (their error is what Figure 8 shows); the notes say
    when one was not positive definite. Saves ``results/gaussian_lap.png``.
``timing``
    Fit time of GaussianLAP versus GraphicalLasso and EmpiricalCovariance on
    the same data (n = 1000) at p = 400, 1600, 6084. Each baseline fit runs in
    a subprocess stopped after ``--budget`` seconds (default 300).
    GraphicalLasso keeps alpha=0.01, max_iter=100 and is standardised as in
    ``fig8`` (the standardisation is part of its timed fit).
``big``
    GaussianLAP on the 316 x 316 Laplacian (p = 99,856, n = 1000) and on the
    78 x 78 one: raw fit; fit with ``repair="shrink"`` plus ``score`` (the
    raw estimate is not positive definite, so ``score`` needs the repair).
    Each runs in a fresh subprocess whose peak resident memory (``VmHWM``,
    including the data) is reported.
``sparse_ml``
    Issue #14's table: fit time, peak memory, iterations and held-out mean
    log-likelihood of GaussianLAP (raw, ``repair="shrink"``, ``newton_steps``
    3, 10, 30) and of GaussianMaxLikelihood (``solver="sparse"``) on the
    three problems at p = 400, 6084 and (Laplacians) 99,856, n = 1000, each fit
    in a fresh subprocess stopped after ``--budget`` seconds; plus the size
    of the chordal embedding each pattern needs. ``--max-p 1000000`` adds
    the 1000 x 1000 Laplacian.
``ml_peers``
    Maximum likelihood with a known pattern at p = 400 and 1600, side by side
    in one run: sparse Newton-CG, dense Newton, the regression solver and
    scikit-learn's GraphicalLasso, as ratios to the sparse time.

``precond``
    Why the sparse ML is slow on ``L L^T``: the condition number of the
    Newton system at the solution (p = 400), unpreconditioned, with Jacobi,
    and with the chordal preconditioner, and how many of its eigenvalues the
    preconditioner leaves spread out (each costs about one CG iteration).

``--quick`` runs a smoke version of every part in about a minute and writes no file (tables are
printed only). ``--replot`` redraws the figure from ``results/gaussian_lap_fig8.json``. The logs of
the verbose p = 10^6 fits go to ``--logs`` (default ``~/.cache/skmrf-bench``), not to ``results/``.
The part ``research28`` (issue #28's preconditioner experiments) is a research record in
``benchmarks/research/gaussian_lap_research28.py``.
``--blas-threads`` (default 1) limits the BLAS threads of every method in the
run, baselines included: on this 2-core machine multi-threaded OpenBLAS was
measured slower than one thread (for example ``GaussianMaxLikelihood``'s
Newton system took 3.4 s instead of 0.6 s); pass 0 to leave BLAS alone.

Usage::

    python benchmarks/gaussian_lap.py [fig8] [timing] [big] [sparse_ml] [ml_peers] [precond] [scale28] [peers28]
        [--quick] [--budget 300]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp
from _harness import header, limit_blas

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


# ---------------------------------------------------------------------------
# Models and data
# ---------------------------------------------------------------------------
def laplacian(r):
    """5-point Dirichlet Laplacian on an r x r grid (CSR)."""
    t = sp.diags([-np.ones(r - 1), 2 * np.ones(r), -np.ones(r - 1)], [-1, 0, 1])
    eye = sp.identity(r)
    return sp.csr_array(sp.kron(eye, t) + sp.kron(t, eye))


def laplacian_precision(r):
    L = laplacian(r)
    return sp.csr_array(L @ L.T)


def sample_laplacian(r, n, seed, power=1.0):
    """n samples of N(0, (L L^T)^-power): x = L^-power z through the orthonormal DST-I.

    ``power=0.5`` samples N(0, L^-1), the 5-point Laplacian itself as the precision.
    """
    from scipy.fft import dstn, idstn

    k = np.arange(1, r + 1)
    lam1 = 2 - 2 * np.cos(np.pi * k / (r + 1))
    lam = (lam1[:, None] + lam1[None, :]) ** power
    rng = np.random.default_rng(seed)
    X = np.empty((n, r * r))
    for s in range(0, n, 100):
        z = rng.standard_normal((min(100, n - s), r, r))
        X[s : s + len(z)] = idstn(
            dstn(z, type=1, axes=(1, 2), norm="ortho") / lam, type=1, axes=(1, 2), norm="ortho"
        ).reshape(len(z), -1)
    return X


def random_pattern(p, degree=4, seed=0):
    """The symmetric Erdos-Renyi pattern of ``random_sparse_spd`` (no diagonal), with its values (CSR)."""
    rng = np.random.default_rng(seed)
    m = int(p * degree / 2)
    i = rng.integers(0, p, 3 * m)
    j = rng.integers(0, p, 3 * m)
    key = np.unique(np.minimum(i, j)[i != j] * p + np.maximum(i, j)[i != j])
    key = rng.permutation(key)[:m]
    r, c = np.divmod(key, p)
    v = rng.uniform(0.5, 1.0, m) * rng.choice([-1.0, 1.0], m)
    return sp.csr_array((np.r_[v, v], (np.r_[r, c], np.r_[c, r])), shape=(p, p))


def random_sparse_spd(p, degree=4, cond=100.0, seed=0):
    """Random sparse SPD precision with an Erdos-Renyi pattern and a given condition number."""
    import scipy.sparse.linalg as spla

    A = random_pattern(p, degree, seed)
    if p <= 2000:
        ev = np.linalg.eigvalsh(A.toarray())
        lo, hi = ev[0], ev[-1]
    else:
        lo = spla.eigsh(A, k=1, which="SA", return_eigenvectors=False)[0]
        hi = spla.eigsh(A, k=1, which="LA", return_eigenvectors=False)[0]
    shift = (hi - cond * lo) / (cond - 1)  # (hi + s) / (lo + s) = cond
    return sp.csr_array(A + shift * sp.identity(p, format="csr"))


def sample_dense(Q, n, seed):
    import scipy.linalg as sla

    C = np.linalg.cholesky(Q.toarray())  # Q = C C^T, x = C^-T z has covariance Q^-1
    z = np.random.default_rng(seed).standard_normal((Q.shape[0], n))
    return sla.solve_triangular(C.T, z, lower=False).T.copy()


def make_problem(pattern, p, n, seed=0):
    """(Q, X) for a pattern, p (a square number for 'laplacian') and n."""
    if pattern == "laplacian":
        r = int(round(np.sqrt(p)))
        return laplacian_precision(r), sample_laplacian(r, n, seed)
    if pattern == "laplacian5":
        r = int(round(np.sqrt(p)))
        return laplacian(r), sample_laplacian(r, n, seed, power=0.5)
    Q = random_sparse_spd(p, seed=seed)
    return Q, sample_dense(Q, n, seed + 1)


_JT_CACHE = {}


def elimination_cliques(Q):
    """Elimination cliques ``{v} u N+(v)`` of a chordal embedding of the pattern of ``Q``.

    The embedding is the fill of a sparse factorisation with SuperLU's
    minimum-degree ordering (symmetric pivoting), i.e. the triangulation a
    junction tree would use.
    """
    import scipy.sparse.linalg as spla

    key = (Q.shape, Q.nnz, float(abs(Q).sum()))
    if key not in _JT_CACHE:
        p = Q.shape[0]
        A = sp.csc_matrix(abs(sp.csr_array(Q)) + p * sp.identity(p))  # same pattern, safely SPD
        lu = spla.splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options=dict(SymmetricMode=True))
        assert np.array_equal(lu.perm_r, lu.perm_c)
        L = sp.csc_matrix(lu.L)
        original = np.empty(p, dtype=np.int64)
        original[lu.perm_c] = np.arange(p)
        _JT_CACHE[key] = [original[L.indices[L.indptr[k] : L.indptr[k + 1]]] for k in range(p)]
    return _JT_CACHE[key]


def junction_tree_ml(Q, X):
    r"""The paper's junction-tree baseline: the ML precision of the chordal embedding.

    For a chordal graph with perfect elimination order and cliques
    ``C_v = {v} u N+(v)`` the ML estimate is closed-form,
    ``sum_v [S_{C_v}^-1]^0 - [S_{C_v \ v}^-1]^0`` (Lauritzen, 1996, Section 5.3);
    it has more non-zeros than ``Q`` (the fill), so it needs more samples
    than the largest clique.
    """
    cliques = elimination_cliques(Q)
    n, p = X.shape
    biggest = max(len(c) for c in cliques)
    if n - 1 < biggest:
        raise ValueError(f"needs n > {biggest} (largest clique)")
    Xc = X - X.mean(axis=0)
    S = Xc.T @ Xc / n
    rows, cols, vals = [], [], []
    for C in cliques:
        for B, sign in ((C, 1.0), (C[1:], -1.0)):
            if len(B):
                rows.append(np.repeat(B, len(B)))
                cols.append(np.tile(B, len(B)))
                vals.append(sign * np.linalg.inv(S[np.ix_(B, B)]).ravel())
    return sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(p, p))


def rel_error(P, Q):
    P = P.toarray() if sp.issparse(P) else np.asarray(P)
    Qd = Q.toarray()
    return float(np.linalg.norm(P - Qd) / np.linalg.norm(Qd))


def rel_error_sparse(P, Q):
    return float(sp.linalg.norm(sp.csr_array(P) - Q) / sp.linalg.norm(Q))


# ---------------------------------------------------------------------------
# Fitting (in-process and in a subprocess with a time budget)
# ---------------------------------------------------------------------------
def fit_method(method, Q, X):
    """Fit one method; return (seconds, relative error, extra info)."""
    from sklearn.covariance import EmpiricalCovariance, GraphicalLasso
    from sklearn.exceptions import ConvergenceWarning

    from skmrf.estimators.gaussian import GaussianLAP, GaussianMaxLikelihood
    from skmrf.exceptions import NotPositiveDefiniteWarning

    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        warnings.simplefilter("always", ConvergenceWarning)
        if method in ("lap", "lap_raw"):
            est = GaussianLAP(Q, bias_correction=method == "lap").fit(X)
            dt = time.perf_counter() - t
            return dt, rel_error_sparse(est.precision_, Q), {"pd": est.is_positive_definite_}
        if method == "ml":
            # Newton reaches its default tol in < 20 iterations; the regression solver
            # (used above 6000 unknowns) converges linearly, so it gets tol=1e-7
            # (far below the statistical error) and up to 300 sweeps.
            est = GaussianMaxLikelihood(Q, tol=1e-7, max_iter=300).fit(X)
            dt = time.perf_counter() - t
            converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
            info = {"solver": est.solver_, "n_iter": est.n_iter_, "converged": converged}
            return dt, rel_error_sparse(est.precision_, Q), info
        if method == "jt":
            P = junction_tree_ml(Q, X)
            dt = time.perf_counter() - t
            return dt, rel_error_sparse(P, Q), {"max_clique": max(len(c) for c in elimination_cliques(Q))}
        if method == "glasso":
            # Standardised columns (the raw Laplacian-squared data make it raise
            # FloatingPointError); Theta = D^-1/2 Theta_std D^-1/2, D = diag of the variances.
            sd = X.std(axis=0)
            est = GraphicalLasso(alpha=0.01, max_iter=100).fit((X - X.mean(axis=0)) / sd)
            precision = est.precision_ / np.outer(sd, sd)
            dt = time.perf_counter() - t
            converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
            return dt, rel_error(precision, Q), {"n_iter": est.n_iter_, "converged": converged}
        if method == "empirical":
            est = EmpiricalCovariance().fit(X)
            dt = time.perf_counter() - t
            return dt, rel_error(est.precision_, Q), {}
    raise ValueError(method)


def run_budgeted(method, data_path, budget, blas_threads):
    """Fit in a subprocess; return dict(time, error, status)."""
    cmd = [sys.executable, os.path.abspath(__file__), "_worker", method, data_path, str(blas_threads)]
    t = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return {"status": f"> {budget:.0f} s (stopped)", "time": None}
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        return {"status": f"{last.split(':')[0][:20]} after {time.perf_counter() - t:.0f} s", "time": None}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _worker(method, data_path, blas_threads):
    _limit_blas(int(blas_threads))
    d = np.load(data_path, allow_pickle=False)
    Q = sp.csr_array((d["data"], d["indices"], d["indptr"]), shape=tuple(d["shape"]))
    X = d["X"]
    try:  # warm-up: lazy imports and first-call costs are not part of the fit time
        fit_method(method, sp.csr_array(Q[:20, :20]), X[:, :20])
    except Exception:  # noqa: BLE001
        pass
    dt, err, info = fit_method(method, Q, X)
    print(json.dumps({"status": "ok", "time": dt, "error": err, **info}))


def peak_rss():
    """Peak resident memory of this process in bytes.

    ``VmHWM`` of the current address space: unlike ``ru_maxrss``, it does not
    inherit the parent's resident size at ``fork`` (which it keeps across
    ``exec``), so a subprocess reports its own peak.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def _limit_blas(n):
    """Limit every BLAS library of the process (load them all first: numpy and scipy ship their own)."""
    if n > 0:
        import scipy.sparse.linalg  # noqa: F401
        import sklearn.covariance  # noqa: F401

        import skmrf.estimators.gaussian  # noqa: F401

        limit_blas(n)


def _save_problem(Q, X, folder, name):
    path = os.path.join(folder, name + ".npz")
    np.savez(path, data=Q.data, indices=Q.indices, indptr=Q.indptr, shape=np.array(Q.shape), X=X)
    return path


# ---------------------------------------------------------------------------
# Parts
# ---------------------------------------------------------------------------
def part_fig8(args):
    ns = [50, 200, 1000] if args.quick else [30, 50, 100, 200, 500, 1000, 2000, 5000, 10000]
    sizes = [100] if args.quick else [6084, 400]
    results, failures = {}, {}
    print("\n== fig8: relative Frobenius error ||Q_hat - Q||_F / ||Q||_F versus n ==")
    for pattern in ("laplacian", "random"):
        for p in sizes:
            methods = ["lap_raw", "lap", "ml", "jt", "glasso", "empirical"]
            if p > 2000:
                methods = ["lap_raw", "lap", "jt"] + (["ml"] if pattern == "random" else [])
            Q, Xall = make_problem(pattern, p, max(ns), seed=0)
            biggest = max(len(c) for c in elimination_cliques(Q))
            if biggest > 400:  # the paper: impractical, cliques too large
                methods.remove("jt")
            print(
                f"\n{pattern}, p = {p}, nnz(Q) = {Q.nnz}, largest clique of the min-degree chordal embedding "
                f"(junction tree) = {biggest}; methods: {', '.join(methods)}",
                flush=True,
            )
            if p > 2000:
                skipped = {
                    "laplacian": "ML, GraphicalLasso, EmpiricalCovariance",
                    "random": "GraphicalLasso, EmpiricalCovariance" + ("" if "jt" in methods else ", junction tree"),
                }
                print(f"  (not run at this size: {skipped[pattern]}; see the timing part and the p = 400 panel)")
            print(f"  {'n':>6} " + " ".join(f"{m:>16}" for m in methods) + "   notes")
            for n in ns:
                X = Xall[:n]
                row, notes = [], []
                for m in methods:
                    if m == "empirical" and n <= p:
                        row.append(None)
                        continue
                    try:
                        dt, err, info = fit_method(m, Q, X)
                        row.append(err)
                        if m in ("lap", "lap_raw") and not info["pd"]:
                            notes.append(f"{m} not PD")
                        if m == "ml":
                            conv = "" if info["converged"] else " NOT CONVERGED"
                            notes.append(f"ML {info['solver']} {info['n_iter']} it {dt:.1f}s{conv}")
                        if m == "glasso":
                            conv = "" if info["converged"] else " not converged"
                            notes.append(f"GL {dt:.1f}s{conv}")
                        if m == "jt":
                            notes.append(f"JT {dt:.1f}s")
                    except Exception as exc:  # noqa: BLE001 - record and go on, saying why
                        row.append(None)
                        reason = str(exc).splitlines()[0][:80] if str(exc) else ""
                        notes.append(f"{m} FAILED: {type(exc).__name__}: {reason}")
                        failures[f"{pattern} p={p} {m} n={n}"] = f"{type(exc).__name__}: {reason}"
                    results.setdefault((pattern, p, m), []).append((n, row[-1]))
                cells = " ".join(f"{'-':>16}" if e is None else f"{e:16.4f}" for e in row)
                print(f"  {n:>6} {cells}   {'; '.join(notes)}", flush=True)
    if args.quick:  # a smoke run: printed only
        return results
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "gaussian_lap_fig8.json"), "w") as f:
        json.dump({"sizes": sizes, "results": [[*k, v] for k, v in results.items()], "failures": failures}, f)
    _plot_fig8(results, sizes, args)
    return results


def replot(args):
    """Redraw the figure from the saved fig8 results (``--replot``)."""
    with open(os.path.join(RESULTS, "gaussian_lap_fig8.json")) as f:
        d = json.load(f)
    _plot_fig8({(pat, p, m): [tuple(x) for x in v] for pat, p, m, v in d["results"]}, d["sizes"], args)


def _plot_fig8(results, sizes, args):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no figure)")
        return
    labels = {
        "lap_raw": "LAP (paper, uncorrected)",
        "lap": "LAP",
        "ml": "GaussianMaxLikelihood",
        "jt": "junction-tree ML (chordal embedding)",
        "glasso": "GraphicalLasso(alpha=0.01)",
        "empirical": "inverse sample covariance",
    }
    styles = {"lap_raw": "o:", "lap": "o-", "ml": "s--", "jt": "d-", "glasso": "^:", "empirical": "x-."}
    colours = {"lap_raw": "C5", "lap": "C0", "ml": "C1", "jt": "C2", "glasso": "C3", "empirical": "C4"}
    fig, axes = plt.subplots(2, len(sizes), figsize=(5.5 * len(sizes), 8), squeeze=False)
    for row, pattern in enumerate(("laplacian", "random")):
        for col, p in enumerate(sizes):
            ax = axes[row, col]
            for m in ("lap_raw", "lap", "ml", "jt", "glasso", "empirical"):
                pts = [(n, e) for n, e in results.get((pattern, p, m), []) if e is not None]
                if pts:
                    ax.loglog(*zip(*pts), styles[m], color=colours[m], label=labels[m])
            title = "Q = L L^T (2-D Laplacian)" if pattern == "laplacian" else "random sparse SPD Q"
            ax.set_title(f"{title}, p = {p}")
            ax.set_xlabel("number of samples n")
            ax.set_ylabel("relative Frobenius error")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, "gaussian_lap.png")
    fig.savefig(path, dpi=110)
    print(f"\nsaved {os.path.relpath(path)}")


def part_timing(args):
    sizes = [100, 400] if args.quick else [400, 1600, 6084]
    budget = 10 if args.quick else args.budget
    n = 1000
    print(f"\n== timing: fit seconds on the same data, n = {n}; baselines stopped after {budget:.0f} s ==")
    print(
        "   GraphicalLasso(alpha=0.01, max_iter=100) on standardised columns (precision mapped back; "
        "raw data raise FloatingPointError); ratio = baseline time / GaussianLAP time"
    )
    print(
        f"  {'pattern':>9} {'p':>6} {'LAP':>8} {'LAP pd':>6} {'LAP err':>8} "
        f"{'GraphicalLasso':>34} {'ratio':>8} {'Empirical':>34} {'ratio':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for pattern in ("random", "laplacian"):
            for p in sizes:
                Q, X = make_problem(pattern, p, n, seed=0)
                path = _save_problem(Q, X, tmp, f"{pattern}{p}")
                dt_lap, err_lap, info = min(
                    (fit_method("lap", Q, X) for _ in range(3)), key=lambda r: r[0]
                )  # best of 3
                cells = []
                for m in ("glasso", "empirical"):
                    r = run_budgeted(m, path, budget, args.blas_threads)
                    if r["time"] is None:
                        cells += [f"{r['status']:>34}", f"{'-':>8}"]
                    else:
                        txt = f"{r['time']:.2f} s (err {r['error']:.3f})"
                        cells += [f"{txt:>34}", f"{r['time'] / dt_lap:7.0f}x"]
                print(
                    f"  {pattern:>9} {p:>6} {dt_lap:7.3f}s {str(info['pd']):>6} {err_lap:8.3f} " + " ".join(cells),
                    flush=True,
                )


def part_big(args):
    runs = [(78, 1000)] if args.quick else [(78, 1000), (316, 1000)]
    print("\n== big: GaussianLAP on the L L^T Laplacian precision (fresh subprocess per size) ==")
    print(
        f"  {'grid':>9} {'p':>7} {'n':>5} {'sample s':>8} {'fit s':>7} {'PD':>5} {'fit+repair s':>12} "
        f"{'t':>6} {'score s':>7} {'fit+repair+score s':>18} {'rel err':>7} {'peak RSS GB':>11}"
    )
    for r, n in runs:
        cmd = [sys.executable, os.path.abspath(__file__), "_big", str(r), str(n), str(args.blas_threads)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"  {r}x{r} failed: {out.stderr.strip().splitlines()[-1]}")
            continue
        d = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"  {f'{r}x{r}':>9} {r * r:>7} {n:>5} {d['sample']:8.1f} {d['fit']:7.2f} {str(d['pd']):>5} "
            f"{d['fit_repair']:12.2f} {d['t']:6.3f} {d['score']:7.2f} {d['fit_repair'] + d['score']:18.2f} "
            f"{d['error']:7.3f} {d['rss'] / 2**30:11.2f}",
            flush=True,
        )


def _big(r, n, blas_threads):
    _limit_blas(int(blas_threads))
    from skmrf.estimators.gaussian import GaussianLAP
    from skmrf.exceptions import NotPositiveDefiniteWarning

    r, n = int(r), int(n)
    Q = laplacian_precision(r)
    t = time.perf_counter()
    X = sample_laplacian(r, n, seed=0)
    sample_s = time.perf_counter() - t
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        t = time.perf_counter()
        est = GaussianLAP(Q).fit(X)
        fit_s = time.perf_counter() - t
        pd = est.is_positive_definite_
        del est
        t = time.perf_counter()
        est = GaussianLAP(Q, repair="shrink").fit(X)
        fit_repair_s = time.perf_counter() - t
    t = time.perf_counter()
    est.score(X)
    score_s = time.perf_counter() - t
    rss = peak_rss()
    out = dict(
        sample=sample_s,
        fit=fit_s,
        pd=pd,
        fit_repair=fit_repair_s,
        t=est.repair_factor_,
        score=score_s,
        error=rel_error_sparse(est.precision_, Q),
        rss=rss,
    )
    print(json.dumps(out))


# ---------------------------------------------------------------------------
# sparse_ml and ml_peers: every fit in a fresh subprocess that regenerates its data
# ---------------------------------------------------------------------------
TEST_SEED = 12345


def _test_data(pattern, p, n_test, Q):
    if pattern in ("laplacian", "laplacian5"):
        power = 1.0 if pattern == "laplacian" else 0.5
        return sample_laplacian(int(round(np.sqrt(p))), n_test, TEST_SEED, power)
    return sample_dense(Q, n_test, TEST_SEED)


def _heldout_loglik(precision, location, X):
    """Mean Gaussian log-density of the rows of X for a dense precision (GraphicalLasso's)."""
    sign, logdet = np.linalg.slogdet(precision)
    if sign <= 0:
        return None
    Xc = X - location
    quad = np.einsum("ij,ij->i", Xc @ precision, Xc)
    return float(-0.5 * (X.shape[1] * np.log(2 * np.pi) - logdet) - 0.5 * quad.mean())


def _fit_one(method, Q, X, verbose):
    """Fit ``method`` on X; return (estimator or None, info dict). The caller times it."""
    from sklearn.covariance import GraphicalLasso

    from skmrf.estimators.gaussian import GaussianLAP, GaussianMaxLikelihood

    if method == "lap_raw":
        return GaussianLAP(Q).fit(X), {}
    if method == "lap_shrink":
        est = GaussianLAP(Q, repair="shrink").fit(X)
        return est, {"t": est.repair_factor_}
    if method.startswith("lap_newton"):
        est = GaussianLAP(Q, newton_steps=int(method[len("lap_newton") :]), verbose=verbose).fit(X)
        return est, {"t": est.repair_factor_}
    if method.startswith("ml_budget"):  # the sparse solver stopped after a time budget, with its certified gap
        est = GaussianMaxLikelihood(Q, solver="sparse", max_time=float(method[9:]), verbose=verbose).fit(X)
        return est, _ml_info(est)
    if method == "ml_default":
        est = GaussianMaxLikelihood(Q, verbose=verbose).fit(X)
        return est, _ml_info(est)
    if method == "ml_exact":  # the sparse solver run to a residual of 1e-10 (no statistical stopping)
        est = GaussianMaxLikelihood(Q, solver="sparse", decrement_tol=None, verbose=verbose).fit(X)
        return est, _ml_info(est)
    if method.startswith("ml_"):
        est = GaussianMaxLikelihood(Q, solver=method[3:], verbose=verbose).fit(X)
        return est, _ml_info(est)
    if method == "quic":
        return None, _quic(Q, X)
    if method == "glasso":  # standardised, as in fit_method
        sd = X.std(axis=0)
        est = GraphicalLasso(alpha=0.01, max_iter=100).fit((X - X.mean(axis=0)) / sd)
        return None, {"precision": est.precision_ / np.outer(sd, sd), "location": X.mean(axis=0), "n_iter": est.n_iter_}
    raise ValueError(method)


def _ml_info(est):
    """What GaussianMaxLikelihood reports about its stop (issue #28): residual, decrement, certified gap."""
    info = {"solver": est.solver_}
    for name in ("residual_", "decrement_", "objective_", "lower_bound_", "duality_gap_", "embedding_bound_"):
        value = getattr(est, name, None)
        if value is not None:
            info[name.rstrip("_")] = float(value)
    info["cg"] = [int(c) for c in getattr(est, "cg_iterations_", [])]
    return info


def _quic(Q, X):
    """QUIC (skggm's ``inverse_covariance.quic``) on the fixed pattern: penalty 0 on it, 1e4 off it.

    In standardised units (the problem GaussianMaxLikelihood solves): an entry off the pattern stays
    zero when ``|W_ij - S_ij| <= lambda_ij``, always true at 1e4 since both are correlations. Its
    stopping rule is its own (default ``tol=1e-6``); the objective it reached is reported.
    """
    import inverse_covariance.quic_graph_lasso as qgl
    from inverse_covariance import quic
    from sklearn.utils import as_float_array

    # skggm2 0.2.10 passes force_all_finite, which scikit-learn 1.8 removed; the values are finite here.
    qgl.as_float_array = lambda a, copy=True, **kwargs: as_float_array(a, copy=copy)
    Xc = X - X.mean(axis=0)
    sd = np.sqrt((Xc**2).mean(axis=0))
    Z = Xc / sd
    S = Z.T @ Z / len(Z)
    mask = (sp.csr_array(Q) != 0).toarray()
    lam = np.where(mask | np.eye(len(S), dtype=bool), 0.0, 1e4)
    Theta, _, _, _, iters, _ = quic(S, lam, tol=1e-6, max_iter=1000)
    Theta = np.where(mask, Theta, 0.0)
    sign, logdet = np.linalg.slogdet(Theta)
    objective = -logdet + float(np.sum(S * Theta)) if sign > 0 else None
    return {
        "precision": Theta / np.outer(sd, sd),
        "location": X.mean(axis=0),
        "n_iter": int(iters),
        "objective": objective,
    }


def _sml_worker(pattern, p, method, n, n_test, blas_threads, verbose):
    """One fit in this (fresh) process; prints READY after the data, then one JSON line."""
    from sklearn.exceptions import ConvergenceWarning

    from skmrf._kernels.gaussian.chordal import ChordalPattern
    from skmrf.exceptions import NotPositiveDefiniteWarning

    _limit_blas(int(blas_threads))
    p, n, n_test, verbose = int(p), int(n), int(n_test), int(verbose)
    if method == "symb":  # the chordal embedding the sparse solver would use (pattern only, no data)
        A = make_problem(pattern, p, 0)[0] if pattern != "random" else random_pattern(p)
        lower = sp.tril(sp.coo_array(A), k=-1)
        rows = np.r_[np.arange(p), lower.row].astype(np.int64)
        cols = np.r_[np.arange(p), lower.col].astype(np.int64)
        print("READY", flush=True)
        t = time.perf_counter()
        cp = ChordalPattern(rows, cols, p)
        out = dict(time=time.perf_counter() - t, q=len(rows), nnz=int(cp.symb.nnz), fill=cp.n_fill)
        print(json.dumps({**out, "stored": cp.n_stored, "rss": peak_rss()}))
        return
    Q, X = make_problem(pattern, p, n, seed=0)
    print("READY", flush=True)
    # warm-up (lazy imports, first calls) on a 20-variable corner, not timed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _fit_one(method, sp.csr_array(Q[:20, :20]), X[:, :20], 0)
        except Exception:  # noqa: BLE001
            pass
    rss_data = peak_rss()
    try:  # reset VmHWM to the current resident size (Linux >= 4.0): the fit's own peak below
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", NotPositiveDefiniteWarning)
        warnings.simplefilter("always", ConvergenceWarning)
        t, c = time.perf_counter(), time.process_time()
        est, info = _fit_one(method, Q, X, verbose)
        info["time"], info["cpu"] = time.perf_counter() - t, time.process_time() - c
    info["rss_data"], info["rss_fit"], info["X_bytes"] = rss_data, peak_rss(), X.nbytes
    info["converged"] = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    del X
    Xt = _test_data(pattern, p, n_test, Q)
    if est is None:
        info["score"] = _heldout_loglik(info.pop("precision"), info.pop("location"), Xt)
    else:
        info["n_iter"] = getattr(est, "n_iter_", 0)
        info["pd"] = bool(est.is_positive_definite_)
        info["score"] = float(est.score(Xt)) if est.is_positive_definite_ else None
    info["rss"] = peak_rss()
    print(json.dumps(info), flush=True)


def _vmhwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def run_sml(pattern, p, method, n, n_test, budget, args, verbose=0, log_path=None):
    """Run ``_sml_worker`` in a fresh process; the budget starts once its data are ready.

    Returns the worker's JSON dict, or ``{"status": ...}`` with the peak memory
    seen from outside (``VmHWM`` polled) and, for a verbose run, its last log line.
    """
    cmd = [sys.executable, os.path.abspath(__file__), "_sml", pattern, str(p), method, str(n), str(n_test)]
    cmd += [str(args.blas_threads), str(verbose)]
    if log_path is not None:
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with tempfile.NamedTemporaryFile("w+", suffix=".log", delete=log_path is None) as tmp:
        path = log_path or tmp.name
        with open(path, "w") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
            start, ready, hwm = time.perf_counter(), None, 0
            while proc.poll() is None:
                time.sleep(0.5)
                hwm = max(hwm, _vmhwm(proc.pid) or 0)
                if ready is None:
                    with open(path) as f:
                        if "READY" in f.read():
                            ready = time.perf_counter()
                elif time.perf_counter() - ready > budget:
                    proc.kill()
                    proc.wait()
                    break
                if hwm > args.mem_limit * 2**30:
                    proc.kill()
                    proc.wait()
                    break
        with open(path) as f:
            lines = f.read().strip().splitlines()
    last_step = next((ln for ln in reversed(lines) if "Newton-CG step" in ln), None)
    if proc.returncode == 0 and lines and lines[-1].startswith("{"):
        return json.loads(lines[-1])
    if proc.returncode == -9 and hwm > args.mem_limit * 2**30:
        status = f"> {args.mem_limit:.0f} GB"
    elif proc.returncode == -9 and ready is not None and time.perf_counter() - ready > budget:
        status = "> budget"
    else:
        status = f"failed: {(lines or ['?'])[-1][:24]}"
    return {"status": status, "rss": hwm, "last": last_step, "data_s": (ready or time.perf_counter()) - start}


class _Tee:
    """Print to the terminal and to a results file."""

    def __init__(self, path):
        self.path, self.lines = path, []

    def __call__(self, text=""):
        print(text, flush=True)
        self.lines.append(text)

    def save(self):
        if self.path is None:  # --quick: printed only
            return
        os.makedirs(RESULTS, exist_ok=True)
        with open(self.path, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        print(f"saved {os.path.relpath(self.path)}")


def _header(out, args, name):
    import platform

    import sklearn

    out(header(f"gaussian_lap.py {name}", args.blas_threads))
    out(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}")


def _results(name, args):
    """The table printer of a part, saving to ``results/<name>.txt`` (``--quick``: printed only), with the
    run's header printed."""
    out = _Tee(None if args.quick else os.path.join(RESULTS, name + ".txt"))
    _header(out, args, name)
    return out


def _load():
    return f"{os.getloadavg()[0]:.1f}"


def _fmt(r, gap_to=None):
    """Cells: time, peak RSS, iterations, held-out log-likelihood (and its gap to ML)."""
    rss = f"{r['rss'] / 2**30:.2f}" if r.get("rss") else "-"
    if "status" in r:
        return [r["status"], rss, "-", "-", "-"]
    it = str(r.get("n_iter", "-")) + ("" if r.get("converged", True) else "!")
    if r.get("score") is None:
        score, gap = "not PD", "-"
    else:
        score = f"{r['score']:.2f}"
        gap = f"{100 * (r['score'] - gap_to) / abs(gap_to):+.2f}%" if gap_to is not None else "-"
    return [f"{r['time']:.2f}", rss, it, score, gap]


def part_sparse_ml(args):
    name = "gaussian_lap_sparse_ml"
    if args.runs:  # e.g. the 10^6 run on its own: its own file
        name += "_" + "_".join(r.replace(":", "") for r in args.runs)
    out = _results(name, args)
    steps = [int(k) for k in args.newton_steps.split(",")]
    if args.quick:
        runs = [("laplacian", 400), ("random", 400)]
    else:
        runs = [(pattern, size) for size in (400, 6084) for pattern in ("laplacian", "laplacian5", "random")]
        runs += [("laplacian", 99856), ("laplacian5", 99856)]
        runs = [r for r in runs if r[1] <= args.max_p] + ([("laplacian", 10**6)] if args.max_p >= 10**6 else [])
    if args.runs:
        runs = [(r.split(":")[0], int(r.split(":")[1])) for r in args.runs]
    n, budget = 1000, (20 if args.quick else args.budget)
    out(f"\n== sparse_ml: n = {n} training rows; held-out mean log-likelihood (score) on {args.n_test} new rows ==")
    out(f"   each fit in a fresh subprocess, stopped {budget:.0f} s after its data are ready ('> budget');")
    out("   peak RSS = VmHWM of that process (data included); it = n_iter_ ('!' = ConvergenceWarning);")
    out("   gap = (score - ML score) / |ML score|; load = 1-min load average after the fit")
    methods = ["lap_raw", "lap_shrink"] + [f"lap_newton{k}" for k in steps] + ["ml_sparse"]
    out(
        f"  {'pattern':>9} {'p':>7} {'method':>13} {'fit s':>9} {'RSS GB':>7} {'it':>5} {'score':>12} "
        f"{'gap':>8} {'load':>5}  notes"
    )
    for pattern, p in runs:
        symb = run_sml(pattern, p, "symb", n, 0, budget, args)
        if "status" in symb:
            out(f"  {pattern:>9} {p:>7} chordal embedding: {symb['status']}")
        else:
            out(
                f"  {pattern:>9} {p:>7} chordal embedding (AMD): {symb['q']} entries on the pattern, "
                f"nnz {symb['nnz']} (fill {symb['fill']}), {symb['time']:.1f} s, RSS {symb['rss'] / 2**30:.2f} GB"
            )
        n_test = args.n_test if p < 10**6 else args.n_test_big
        todo = ["ml_sparse"] if p >= 10**6 else methods
        if p >= 10**6:
            out(f"  {pattern:>9} {p:>7} n = {args.n_big} training rows, {n_test} held-out rows (memory)")
        results = {}
        for m in ["ml_sparse"] + [m for m in todo if m != "ml_sparse"]:
            log_path = os.path.join(args.logs, "gaussian_lap_sparse_ml_1e6.log") if p >= 10**6 else None
            results[m] = run_sml(
                pattern,
                p,
                m,
                args.n_big if p >= 10**6 else n,
                n_test,
                args.budget_big if p >= 10**6 else budget,
                args,
                1,
                log_path,
            )
            results[m]["load"] = _load()
        ml = results["ml_sparse"].get("score")
        for m in todo:
            r = results[m]
            cells = _fmt(r, None if m == "ml_sparse" else ml)
            notes = []
            if "solver" in r:
                notes.append(f"solver_={r['solver']}")
            if m != "lap_raw" and r.get("t", 1.0) < 1.0:
                notes.append(f"off-diagonal scale t={r['t']:.3g}")
            if r.get("last"):
                notes.append("last: " + r["last"].split("] ")[-1])
            if "data_s" in r:
                notes.append(f"data {r['data_s']:.0f} s")
            out(
                f"  {pattern:>9} {p:>7} {m:>13} {cells[0]:>9} {cells[1]:>7} {cells[2]:>5} {cells[3]:>12} "
                f"{cells[4]:>8} {r['load']:>5}  {'; '.join(notes)}"
            )
        if ml is not None:
            within = [
                m
                for m in methods[2:-1]
                if results.get(m, {}).get("score") is not None and abs(results[m]["score"] - ml) <= 0.01 * abs(ml)
            ]
            out(f"  {'':>9} {'':>7} smallest newton_steps within 1 % of ML: {within[0] if within else 'none'}")
    if not args.quick and not args.runs:
        for p in args.random_symb:
            symb = run_sml("random", p, "symb", n, 0, budget, args)
            if "status" in symb:
                out(
                    f"     random {p:>7} chordal embedding (AMD): {symb['status']}, "
                    f"peak RSS {symb['rss'] / 2**30:.2f} GB"
                )
            else:
                out(
                    f"     random {p:>7} chordal embedding (AMD): {symb['q']} entries on the pattern, "
                    f"nnz {symb['nnz']} "
                    f"(fill {symb['fill']}), {symb['time']:.1f} s, RSS {symb['rss'] / 2**30:.2f} GB"
                )
    out.save()


def part_ml_peers(args):
    out = _results("gaussian_lap_ml_peers", args)
    n, budget = 1000, (20 if args.quick else args.budget)
    sizes = [100, 400] if args.quick else [400, 1600]
    out(f"\n== ml_peers: maximum likelihood with a known pattern vs GraphicalLasso, n = {n}, one run ==")
    out(f"   fresh subprocess per fit, stopped after {budget:.0f} s; ratio = time / sparse ML time;")
    out("   GraphicalLasso(alpha=0.01, max_iter=100) on standardised columns (precision mapped back);")
    out(f"   score = held-out mean log-likelihood on {args.n_test} new rows; load = 1-min load average after the fit")
    out(
        f"  {'pattern':>9} {'p':>5} {'method':>15} {'fit s':>9} {'ratio':>8} {'RSS GB':>7} {'it':>5} "
        f"{'score':>10} {'load':>5}"
    )
    for pattern in ("laplacian", "random"):
        for p in sizes:
            rows = {}
            for m in ("ml_sparse", "ml_newton", "ml_regression", "glasso"):
                rows[m] = run_sml(pattern, p, m, n, args.n_test, budget, args)
                rows[m]["load"] = _load()
            base = rows["ml_sparse"].get("time")
            for m, r in rows.items():
                cells = _fmt(r)
                ratio = f"{r['time'] / base:7.2f}x" if "time" in r and base else "-"
                name = "GraphicalLasso" if m == "glasso" else m.replace("ml_", "ML ")
                out(
                    f"  {pattern:>9} {p:>5} {name:>15} {cells[0]:>9} {ratio:>8} {cells[1]:>7} {cells[2]:>5} "
                    f"{cells[3]:>10} {r['load']:>5}"
                )
    out.save()


def part_precond(args):
    """Spectrum of the Newton system at the ML solution: no, Jacobi, chordal and torus preconditioners."""
    from skmrf._kernels.gaussian.chordal import ChordalPattern
    from skmrf._kernels.gaussian.lattice import detect_lattice
    from skmrf._kernels.gaussian.newton_cg import _preconditioner
    from skmrf.estimators.gaussian import GaussianMaxLikelihood

    out = _results("gaussian_lap_precond", args)
    n = 1000
    out(f"\n== precond: the Newton system P_V(W U W) = -g of the sparse ML at its solution, n = {n} ==")
    out("   H = the Hessian on the pattern (q x q, built column by column), J = its diagonal,")
    out("   M = the chordal preconditioner (the embedding's inverse Hessian restricted to the pattern),")
    out("   T = the torus preconditioner (lattices; issue #28), as the solver builds it at that point;")
    out("   kappa = largest / smallest eigenvalue; '>10 min' = eigenvalues of M H above 10 x its smallest")
    out(
        f"  {'pattern':>10} {'r':>3} {'q':>6} {'fill':>7} {'kappa(H)':>10} {'kappa(J^-1 H)':>14} {'kappa(M H)':>11} "
        f"{'>10 min':>8} {'kappa(T H)':>11}"
    )
    widths = [8, 12] if args.quick else [8, 12, 16, 20]
    cases = [(pattern, r) for pattern in ("laplacian5", "laplacian") for r in widths] + [("random", 20)]
    for pattern, r in cases:
        p = r * r
        Q, X = make_problem(pattern, p, n, seed=0)
        est = GaussianMaxLikelihood(Q, solver="sparse", decrement_tol=None, tol=1e-8).fit(X)
        theta = sp.coo_array(sp.tril(sp.csr_array(est.standardized_precision_)))
        rows, cols = theta.row.astype(np.int64), theta.col.astype(np.int64)
        cp = ChordalPattern(rows, cols, p)
        L, _ = cp.cholesky(theta.data)
        Y, _ = cp.inverse_on_pattern(L)
        eye = np.eye(len(theta.data))
        H = np.column_stack([cp.hessian(L, Y, e) for e in eye])
        M = np.column_stack([cp.hessian(L, Y, e, inverse=True) for e in eye])
        kappa = []
        for P in (eye, np.diag(1.0 / np.diag(H)), M):
            ev = np.sort(np.linalg.eigvals(P @ H).real)  # similar to a symmetric positive definite matrix
            kappa.append(ev[-1] / ev[0])
        outliers = int(np.sum(ev > 10 * ev[0]))
        lattice = detect_lattice(rows, cols, p)
        torus = "-"
        if lattice is not None:
            T = _preconditioner(cp, lattice, L, Y, theta.data)
            ev = np.sort(np.linalg.eigvals(np.column_stack([T(e) for e in eye]) @ H).real)
            torus = f"{ev[-1] / ev[0]:.3g}"
        out(
            f"  {pattern:>10} {r:>3} {len(eye):>6} {cp.n_fill:>7} {kappa[0]:>10.3g} {kappa[1]:>14.3g} "
            f"{kappa[2]:>11.3g} {outliers:>8} {torus:>11}"
        )
    out.save()


# ---------------------------------------------------------------------------
# Issue #28: maximum likelihood at scale, stopped at statistical precision
# ---------------------------------------------------------------------------
def _q(pattern, p):
    """Unknowns (variables plus edges) of a problem's pattern."""
    Q = make_problem(pattern, p, 0)[0] if pattern != "random" else random_pattern(p)
    return (sp.csr_array(Q).nnz + (p if pattern == "random" else 0) + p) // 2


def _ml_cells(r):
    """Cells of an ML row: wall, CPU, RSS, it, CG, decrement, residual, gap."""
    if "status" in r:
        return [r["status"], "-", f"{r['rss'] / 2**30:.2f}" if r.get("rss") else "-", "-", "-", "-", "-", "-"]
    cg = r.get("cg") or []
    cgs = "+".join(str(c) for c in cg) if len(cg) <= 8 else f"{sum(cg)} in {len(cg)}"
    dec = r.get("decrement")
    gap = r.get("duality_gap")
    return [
        f"{r['time']:.2f}",
        f"{r['cpu']:.2f}",
        f"{r['rss'] / 2**30:.2f}",
        str(r.get("n_iter", "-")) + ("" if r.get("converged", True) else "!"),
        cgs or "-",
        f"{dec:.3g}" if isinstance(dec, float) else "-",
        f"{r['residual']:.2g}" if isinstance(r.get("residual"), float) else "-",
        f"{gap:.3g}" if isinstance(gap, float) else str(gap or "-"),
    ]


def part_scale28(args):
    """Issue #28's table: ML to statistical precision on the 5-point lattice, L L^T with a budget, newton_steps."""
    name = "gaussian_lap_scale28" + ("_" + "_".join(r.replace(":", "") for r in args.runs) if args.runs else "")
    out = _results(name, args)
    n = 1000
    runs = [("laplacian5", 6084), ("laplacian5", 99856), ("laplacian", 6084)]
    if args.quick:
        runs = [("laplacian5", 400), ("laplacian", 400)]
    if args.max_p >= 10**6:
        runs.append(("laplacian5", 10**6))
    if args.runs:
        runs = [(r.split(":")[0], int(r.split(":")[1])) for r in args.runs]
    out(f"\n== scale28: GaussianMaxLikelihood (default: stop at lambda^2/2 <= 1e-3 q/n), n = {n} rows ==")
    out("   fresh subprocess per fit; wall and CPU seconds of the fit; RSS = peak resident memory (data included);")
    out("   CG = CG iterations per Newton step (the last includes the confirmation of the decrement);")
    out("   dec = lambda^2/2 at the estimate; resid = max |inv(Theta) - S| on the pattern (standardised);")
    out("   gap = certified duality gap (objective - lower bound); q/n = the noise level of the objective;")
    out("   score = held-out mean log-likelihood; L L^T gets max_time=60 (ml_budget60) and the gap it certifies")
    head = f"  {'pattern':>10} {'p':>7} {'method':>13} {'wall s':>8} {'cpu s':>7} {'RSS GB':>6} {'it':>4} {'CG':>16}"
    out(head + f" {'dec':>8} {'resid':>7} {'gap':>8} {'q/n':>6} {'score':>11} {'vs ML':>7} {'load':>5}")
    for pattern, p in runs:
        qn = _q(pattern, p) / n
        big = p >= 10**6
        # L L^T: 60 s of Newton iterations; 10^6: --budget-big seconds of them (the kill comes an hour later).
        ml_name = "ml_budget60" if pattern == "laplacian" else f"ml_budget{args.budget_big:.0f}" if big else "ml_sparse"
        lap = ["lap_raw", "lap_newton1", "lap_newton2", "lap_newton3"]
        methods = [ml_name] + ([] if big or pattern == "laplacian" else lap)
        results = {}
        for m in methods:
            budget = args.budget_big + 3600 if big else args.budget
            log_path = os.path.join(args.logs, "gaussian_lap_scale28_1e6.log") if big else None
            results[m] = run_sml(pattern, p, m, n, args.n_test_big if big else args.n_test, budget, args, 1, log_path)
            results[m]["load"] = _load()
        ml = results[ml_name]
        for m in methods:
            r = results[m]
            cells = _ml_cells(r)
            score = r.get("score")
            vs = "-"
            if score is not None and ml.get("score") is not None and m != ml_name:
                vs = f"{100 * (score - ml['score']) / abs(ml['score']):+.2f}%"
            sc = "-" if score is None else f"{score:.3f}"
            out(
                f"  {pattern:>10} {p:>7} {m:>13} {cells[0]:>8} {cells[1]:>7} {cells[2]:>6} {cells[3]:>4} "
                f"{cells[4]:>16} {cells[5]:>8} {cells[6]:>7} {cells[7]:>8} {qn:>6.1f} {sc:>11} {vs:>7} {r['load']:>5}"
            )
        if "time" in ml:
            for m in methods[1:]:
                r = results[m]
                if "time" in r:
                    wall, cpu = r["time"] / ml["time"], r["cpu"] / ml["cpu"]
                    out(f"  {'':>10} {'':>7} {m}: {wall:.2f} of ML's wall time, {cpu:.2f} of its CPU")
            if ml.get("lower_bound") is not None:
                out(
                    f"  {'':>10} {'':>7} certified: f* in [{ml['lower_bound']:.1f}, {ml['objective']:.1f}] "
                    f"(gap {ml['duality_gap']:.3g} = {ml['duality_gap'] / qn:.2g} x q/n); embedding bound "
                    f"{ml.get('embedding_bound')}"
                )
    out.save()


def part_peers28(args):
    """Maximum likelihood on the 5-point lattice, side by side: sparse (default), dense Newton, regression, QUIC."""
    out = _results("gaussian_lap_peers28", args)
    n, budget = 1000, (30 if args.quick else args.budget)
    sizes = [100, 400] if args.quick else [400, 1600, 6084]
    out(f"\n== peers28: ML with the 5-point lattice pattern, n = {n}, one run; ratio = time / sparse time ==")
    out("   sparse = GaussianMaxLikelihood() (stops at statistical precision); exact = the same to residual 1e-10;")
    out("   newton/regression = the dense solvers (tol 1e-10, statistical stop for newton);")
    out("   QUIC = skggm's quic, penalty 0 on the pattern and 1e4 off it (the same problem, dense; its tol 1e-6);")
    out(f"   f = -log det + tr(S Theta) in standardised units; fresh subprocess each, stopped after {budget:.0f} s")
    out(
        f"  {'p':>5} {'method':>14} {'wall s':>8} {'cpu s':>7} {'ratio':>8} {'RSS GB':>6} {'it':>5} {'f':>14} "
        f"{'score':>10} {'load':>5}"
    )
    for p in sizes:
        rows = {}
        for m in ("ml_sparse", "ml_exact", "ml_newton", "ml_regression", "quic"):
            rows[m] = run_sml("laplacian5", p, m, n, args.n_test, budget, args)
            rows[m]["load"] = _load()
        base = rows["ml_sparse"].get("time")
        for m, r in rows.items():
            if "status" in r:
                out(f"  {p:>5} {m:>14} {r['status']:>8}")
                continue
            ratio = f"{r['time'] / base:7.2f}x" if base else "-"
            f = r.get("objective")
            score = r.get("score")
            out(
                f"  {p:>5} {m:>14} {r['time']:>8.2f} {r['cpu']:>7.2f} {ratio:>8} {r['rss'] / 2**30:>6.2f} "
                f"{r.get('n_iter', '-')!s:>5} {f if f is None else f'{f:.6f}':>14} "
                f"{score if score is None else f'{score:.3f}':>10} {r['load']:>5}"
            )
    out.save()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        return _worker(*sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "_big":
        return _big(*sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "_sml":
        return _sml_worker(*sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parts", nargs="*", help="any of fig8, timing, big (default: all)")
    ap.add_argument("--quick", action="store_true", help="smoke run (about a minute)")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per baseline fit (timing)")
    ap.add_argument("--blas-threads", type=int, default=1, help="BLAS threads for every method; 0 = leave alone")
    ap.add_argument("--newton-steps", default="3,10,30", help="GaussianLAP newton_steps values (sparse_ml)")
    ap.add_argument("--n-test", type=int, default=1000, help="held-out rows (sparse_ml, ml_peers)")
    ap.add_argument("--n-test-big", type=int, default=100, help="held-out rows at p = 10^6 (memory)")
    ap.add_argument("--max-p", type=int, default=99856, help="largest p of sparse_ml; 1000000 adds the 10^6 run")
    ap.add_argument("--budget-big", type=float, default=1500.0, help="seconds for ML at p = 10^6")
    ap.add_argument("--runs", nargs="*", default=[], help="sparse_ml only these pattern:p, e.g. laplacian:1000000")
    ap.add_argument("--n-big", type=int, default=1000, help="training rows at p = 10^6")
    ap.add_argument("--mem-limit", type=float, default=18.0, help="GB of peak RSS at which a worker is stopped")
    ap.add_argument(
        "--random-symb",
        type=lambda s: [int(v) for v in s.split(",") if v],
        default=[20000, 99856],
        help="sizes of the random pattern whose chordal embedding alone is measured (sparse_ml)",
    )
    ap.add_argument("--replot", action="store_true", help="only redraw the figure from the saved fig8 results")
    ap.add_argument(
        "--logs", default=os.path.expanduser("~/.cache/skmrf-bench"), help="folder of the p = 10^6 fits' logs"
    )
    args = ap.parse_args()
    if args.replot:
        return replot(args)
    parts = {"fig8": part_fig8, "timing": part_timing, "big": part_big, "sparse_ml": part_sparse_ml}
    parts["ml_peers"] = part_ml_peers
    parts["precond"] = part_precond
    parts["scale28"] = part_scale28
    parts["peers28"] = part_peers28
    unknown = set(args.parts) - set(parts)
    if unknown:
        ap.error(f"unknown parts {sorted(unknown)}; choose from {', '.join(parts)}")
    _limit_blas(args.blas_threads)
    import platform

    import sklearn

    print(header(f"gaussian_lap.py {' '.join(args.parts or ['fig8', 'timing', 'big'])}", args.blas_threads))
    print(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}")
    t = time.perf_counter()
    for part in args.parts or ["fig8", "timing", "big"]:
        parts[part](args)
    print(f"\ntotal {time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
