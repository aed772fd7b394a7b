"""MCMCMaxLikelihood with its defaults (the adaptive schedule) against exact maximum likelihood.

Issue #13's checks, side by side in one run:

1. **6x6 grids** (``--seeds`` seeds; binary and 3 states): parameters uniform on [-1, 1]
   (``make_random_mrf(scale=1)``), 1,000 exact draws; the relative error
   ``||theta - theta_ML|| / ||theta_ML||`` of ``MCMCMaxLikelihood(graph)`` and of the
   pseudo-likelihood estimate it starts from, both against ``ExactMaxLikelihood`` (same
   ``alpha="auto"``), and the seconds of each fit. Target: within 10 %% in at least 9 of 10
   seeds, under 10 s each.
2. **Binarised digits** (scikit-learn's ``load_digits`` at ``>= 8``, 8x8 grid): held-out
   ``score`` per variable (exact) of the defaults against exact ML, 5-fold. Target: within
   0.01 nats per variable.
3. **Wide box**: ``max_coupling=2.0`` with an explicit schedule on a 3x3 grid (strong
   couplings, so the unconstrained optimum is inside the box): relative error to exact ML.
   Target: within 5 %%.
4. **32x32 grid**, 10^4 rows (exact ML does not fit: treewidth 32): seconds, peak memory and
   the error against the true parameters, next to pseudo-likelihood's (with this many rows
   PL is within about 1 %% of ML: 1.3 %% measured on a 12x12 grid with 10^4 rows).

Usage::

    python benchmarks/mcmc_defaults.py [--seeds 10] [--parts grid,digits,box,big] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
import warnings

import numpy as np

from skmrf import (
    AdaptiveSchedule,
    ExactMaxLikelihood,
    MCMCMaxLikelihood,
    PseudoLikelihoodEstimator,
    TheorySchedule,
    grid_graph,
)
from skmrf.datasets import make_random_mrf


def load():
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def timed(est, X):
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    return est, time.perf_counter() - t


def relative(theta, ref):
    return float(np.linalg.norm(theta - ref) / np.linalg.norm(ref))


def grids(seeds):
    lines = [f"== 6x6 grid, 1000 rows, defaults vs exact ML (load {load()}) =="]
    lines.append(f"{'K':>2} {'seed':>4} {'rel err':>8} {'PL rel':>7} {'steps':>5} {'conv':>5} {'s':>6} {'exact s':>8}")
    graph = grid_graph(6, 6)
    for K in (2, 3):
        ok = 0
        for seed in range(seeds):
            X = make_random_mrf(graph, n_states=K, scale=1.0, random_state=seed).sample(1000, seed, method="exact")
            ml, t_ml = timed(ExactMaxLikelihood(graph, n_states=K), X)
            est, t = timed(MCMCMaxLikelihood(graph, n_states=K, random_state=seed), X)
            pl = PseudoLikelihoodEstimator(graph, n_states=K).fit(X)
            err = relative(est.theta_, ml.theta_)
            ok += err < 0.10 and t < 10
            lines.append(
                f"{K:>2} {seed:>4} {err:8.4f} {relative(pl.theta_, ml.theta_):7.4f} {est.n_iter_:>5} "
                f"{str(est.converged_):>5} {t:6.2f} {t_ml:8.2f}"
            )
            print(lines[-1], flush=True)
        lines.append(f"K={K}: {ok} of {seeds} seeds within 10 % of exact ML in under 10 s")
        print(lines[-1], flush=True)
    return lines


def digits(n_folds=5):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import KFold

    X = (load_digits().data >= 8).astype(np.int64)
    graph = grid_graph(8, 8)
    lines = [f"== binarised digits (n = {len(X)}, 8x8 grid), {n_folds}-fold held-out score / 64 (load {load()}) =="]
    lines.append(f"{'fold':>4} {'exact ML':>9} {'defaults':>9} {'diff':>8} {'steps':>5} {'s':>6}")
    diffs = []
    for fold, (train, test) in enumerate(KFold(n_folds, shuffle=True, random_state=0).split(X)):
        ml, _ = timed(ExactMaxLikelihood(graph), X[train])
        est, t = timed(MCMCMaxLikelihood(graph, random_state=fold, score_method="exact"), X[train])
        a, b = ml.score(X[test]) / 64, est.score(X[test]) / 64
        diffs.append(a - b)
        lines.append(f"{fold:>4} {a:9.5f} {b:9.5f} {a - b:8.5f} {est.n_iter_:>5} {t:6.2f}")
        print(lines[-1], flush=True)
    lines.append(f"mean loss {np.mean(diffs):.5f} nats per variable, worst {np.max(diffs):.5f} (target < 0.01)")
    return lines


def box():
    graph = grid_graph(3, 3)
    lines = [f"== wide box: 3x3 grid, max_coupling=2.0, explicit schedule (load {load()}) =="]
    rng = np.random.default_rng(0)
    model = make_random_mrf(graph, scale=1.0, random_state=0)
    theta = model.theta.copy()
    pair = np.array([len(c) == 2 for c in model.cliques])
    offsets = model.layout.block_offsets
    theta[offsets[:-1][pair]] = rng.choice([-1, 1], pair.sum()) * 2.0  # strong couplings, |J| = 0.5
    model.theta = theta
    X = model.sample(2000, 1, method="exact")
    ml = ExactMaxLikelihood(graph).fit(X)
    for kw in (
        dict(schedule=TheorySchedule(n_iter=400, n_chains=4000, n_sweeps=20, lipschitz=5.0)),
        dict(schedule=AdaptiveSchedule(n_iter=400, n_chains=4000, n_sweeps=5)),
    ):
        est, t = timed(MCMCMaxLikelihood(graph, max_coupling=2.0, random_state=0, **kw), X)
        lines.append(
            f"{kw['schedule'].kind:>8}: rel err to exact ML {relative(est.theta_, ml.theta_):.4f}, max |J| "
            f"{np.abs(est.ising_couplings_).max():.3f}, fast_mixing={est.schedule_.fast_mixing}, {t:.1f} s"
        )
        print(lines[-1], flush=True)
    return lines


def big():
    graph = grid_graph(32, 32)
    model = make_random_mrf(graph, scale=0.5, random_state=0)
    X = model.sample(10_000, 1, method="gibbs", n_sweeps=200)
    lines = [f"== 32x32 grid, 10^4 rows (Gibbs, 200 sweeps), parameters U(-0.5, 0.5) (load {load()}) =="]
    pl, t_pl = timed(PseudoLikelihoodEstimator(graph), X)
    est, t = timed(MCMCMaxLikelihood(graph, random_state=0, score_method="pseudo"), X)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines.append(
        f"defaults: {t:.1f} s, {est.n_iter_} steps, converged {est.converged_}, rel err to the true "
        f"parameters {relative(est.theta_, model.theta):.4f}, "
        f"to pseudo-likelihood's {relative(est.theta_, pl.theta_):.4f}"
    )
    lines.append(f"pseudo-likelihood: {t_pl:.1f} s, rel err {relative(pl.theta_, model.theta):.4f}")
    lines.append(f"peak resident memory {peak:.0f} MiB")
    print("\n".join(lines[-3:]), flush=True)
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--parts", default="grid,digits,box,big")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    lines = [
        f"# python benchmarks/mcmc_defaults.py --seeds {args.seeds} --parts {args.parts}",
        f"# python {platform.python_version()}, {os.cpu_count()} CPUs",
    ]
    parts = args.parts.split(",")
    if "grid" in parts:
        lines += grids(args.seeds)
    if "digits" in parts:
        lines += digits()
    if "box" in parts:
        lines += box()
    if "big" in parts:
        lines += big()
    if args.out:
        with open(os.path.join(args.out, "mcmc_defaults.txt"), "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
