"""Fit time of every estimator on one small fixed case each: the before/after table of a
restructuring (#41: no slowdown > 5 %).

Run it on two checkouts in one session, alternately (``PYTHONPATH`` decides which skmrf is timed),
and compare the best CPU times:

    PYTHONPATH=/path/to/before python benchmarks/estimator_timings.py
    PYTHONPATH=/path/to/after  python benchmarks/estimator_timings.py

Each line: best CPU and wall time of ``--repeat`` fits on one BLAS thread, and a checksum of the
fitted parameters (equal checksums: the same result). ``--quick`` runs one repeat of each.
"""

import argparse
import warnings

import numpy as np
from _harness import best_of, header, limit_blas, peak_rss_mib

from skmrf import (
    DecomposedEM,
    ExactMaxLikelihood,
    GaussianLAP,
    GaussianMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    MetropolisHastingsMRF,
    MLEInducedLikelihood,
    MRFClassifier,
    MRFImputer,
    PseudoLikelihoodEstimator,
    covariance_selection,
    grid_graph,
    lattice_graph,
)
from skmrf.datasets import sample_random_mrf


def _gaussian_rows(graph, n, seed):
    """n rows of a Gaussian MRF on ``graph``: precision = I + 0.2 * (laplacian-like couplings)."""
    p = graph.number_of_nodes()
    Q = np.eye(p) * 1.0
    index = {v: k for k, v in enumerate(graph.nodes)}
    for u, v in graph.edges:
        Q[index[u], index[v]] = Q[index[v], index[u]] = -0.2
    Q += np.eye(p) * max(0.0, 0.05 - np.linalg.eigvalsh(Q)[0])
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) @ np.linalg.cholesky(np.linalg.inv(Q)).T


def _checksum(est):
    est = getattr(est, "estimator_", est)
    est = getattr(est, "precision", est)  # covariance_selection's result
    if hasattr(est, "toarray") or isinstance(est, np.ndarray):
        return f"{float(abs(est).sum()):.12e}"
    for name in ("theta_", "precision_", "theta_hat_", "samples_"):
        value = getattr(est, name, None)
        if value is not None:
            value = value.toarray() if hasattr(value, "toarray") else np.asarray(value)
            return f"{float(np.sum(np.abs(value))):.12e}"
    return "-"


def cases():
    g4, g12, g30 = grid_graph(4, 4), grid_graph(12, 12), grid_graph(30, 30)
    X4, _ = sample_random_mrf(g4, 300, random_state=0)
    X12, _ = sample_random_mrf(g12, 2000, method="gibbs", random_state=0)
    X30, _ = sample_random_mrf(g30, 1000, method="gibbs", random_state=0)
    yield "ExactMaxLikelihood 12x12 n=2000", lambda: ExactMaxLikelihood(g12).fit(X12)
    yield "PseudoLikelihoodEstimator 30x30 n=1000", lambda: PseudoLikelihoodEstimator(g30).fit(X30)
    yield "LAPEstimator 30x30 n=1000", lambda: LAPEstimator(g30).fit(X30)
    yield (
        "MCMCMaxLikelihood(score_method='pseudo') 4x4 n=300",
        lambda: MCMCMaxLikelihood(g4, score_method="pseudo", random_state=0).fit(X4),
    )
    yield "MLEInducedLikelihood 30x30 n=1000", lambda: MLEInducedLikelihood(g30).fit(X30)
    yield (
        "MetropolisHastingsMRF(n_steps=100000) 4x4 n=300",
        lambda: MetropolisHastingsMRF(g4, n_steps=100000, score_method="pseudo", random_state=0).fit(X4),
    )
    rng = np.random.default_rng(0)
    g6 = grid_graph(6, 6)
    X6, _ = sample_random_mrf(g6, 1000, random_state=0)
    Xm = X6.astype(float)
    Xm[rng.random(Xm.shape) < 0.1] = np.nan
    Xm[:, :6] = X6[:, :6]  # the first row of the grid always observed
    yield "DecomposedEM 6x6 n=1000, 10% missing", lambda: DecomposedEM(g6, max_iter=100).fit(Xm)
    yield "MRFImputer 6x6 n=1000, 10% missing", lambda: MRFImputer(DecomposedEM(g6, max_iter=100)).fit(Xm)
    y = X12[:, 0]
    yield "MRFClassifier(star) 143 features n=2000", lambda: MRFClassifier().fit(X12[:, 1:], y)
    lat = lattice_graph((30, 30))
    Z = _gaussian_rows(lat, 2000, 0)
    yield "GaussianLAP 30x30 lattice n=2000", lambda: GaussianLAP(lat).fit(Z)
    for solver in ("auto", "sparse", "newton", "regression"):
        yield (
            f"GaussianMaxLikelihood(solver={solver!r}) 30x30 lattice n=2000",
            lambda s=solver: GaussianMaxLikelihood(lat, solver=s).fit(Z),
        )
    S = np.cov(Z, rowvar=False)
    yield "covariance_selection 30x30 lattice", lambda: covariance_selection(S, lat, n_samples=2000)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repeat of each")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--blas-threads", type=int, default=1, help="0 leaves BLAS's default threads, as a user runs")
    args = ap.parse_args()
    repeat = 1 if args.quick else args.repeat
    limit_blas(args.blas_threads)
    threads = f"{args.blas_threads} BLAS thread(s)" if args.blas_threads else "BLAS's default threads"
    print(header(f"estimator_timings.py: best of {repeat} fits, {threads}", blas_threads=args.blas_threads))
    print(f"{'case':62s} {'cpu s':>8s} {'wall s':>8s}  checksum")
    for name, fit in cases():
        if args.only not in name:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpu, wall, est = best_of(fit, repeat)
        print(f"{name:62s} {cpu:8.3f} {wall:8.3f}  {_checksum(est)}", flush=True)
    print(f"# peak memory {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
