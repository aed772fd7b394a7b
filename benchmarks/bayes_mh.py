"""Simulation 1 of the MLE-induced likelihood paper (Liu and Zheng), Tables 1-2 and Figures 2-3.

Random-walk Metropolis-Hastings over the agreement model's edge parameters with each likelihood
plug-in of ``MetropolisHastingsMRF``, the same chain for every method: uniform prior,
Gaussian proposal of variance 0.001 (``proposal_scale=0.0316``), started at the
agreement-model MLE, the same seed, ``--steps`` steps (the paper: 10^6).

``sim1``: 4x4 grid, 24 parameters drawn uniformly on (0.5, 0.8), n = 100, 500, 1000 rows drawn
exactly; every method's posterior mean and standard deviation against Exact-L's, its cost per
step and that cost as a ratio to MLE-L (rho = 0) in the same run.
``grids``: 6x6 and 8x8 (p = 60, 112), posterior means against the true parameters (the paper
could not run Exact-L there; we can, so it is included).
``speed``: 10^6 MLE-L steps on the 8x8 grid (n = 1000), single chain and 8 chains, with the
deterministic plug-in evaluated ahead of the chain (the default) and, in the same run, one step
at a time (the runner of the sampling-based plug-ins).
``exchange``: the exchange algorithm with exact draws, 10^5 steps on the 4x4 grid (n = 100).

    python benchmarks/bayes_mh.py [sim1] [grids] [speed] [exchange] [--steps N] [--out DIR]

``--quick``: 200 steps, n = 100 only, the 6x6 grid only, 100x fewer steps in ``speed`` and
``exchange``; prints only, unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
import warnings
from unittest import mock

import numpy as np
from _harness import header, load_average, peak_rss_mib

from skmrf import MetropolisHastingsMRF, MLEInducedLikelihood, PersistentChains, grid_graph
from skmrf.estimators import _bayes as bayes
from skmrf.model import agreement_to_mrf

PAPER_TABLE1_MS = {  # the paper's Table 1, n = 1000, 10^6 steps (milliseconds)
    "Exact-L": 1.34e8,
    "Pseudo-L": 4.57e6,
    "Laplace-L": 8.08e3,
    "MLE-L(rho=0)": 1.25e4,
    "MLE-L(rho=0.05)": 6.92e4,
    "MLE-L(rho=0.1)": 6.92e4,
    "Exchange": 5.06e9,
    "PersistMC": 4.00e6,
}

METHODS = {
    "Exact-L": dict(likelihood="exact"),
    "MLE-L(rho=0)": dict(likelihood="mle_induced"),
    "MLE-L(rho=0.05)": dict(likelihood=MLEInducedLikelihood(copula="gaussian", rho=0.05)),
    "MLE-L(rho=0.1)": dict(likelihood=MLEInducedLikelihood(copula="gaussian", rho=0.1)),
    "Pseudo-L": dict(likelihood="pseudo"),
    "Laplace-L": dict(likelihood="laplace"),
    "PersistMC": dict(likelihood=PersistentChains(n_particles=1000, n_sweeps=1)),
    "Exchange": dict(likelihood="exchange"),
}


#: Sizes of the parts: the n of sim1 and grids, the sides of grids, the divisor of speed's and
#: exchange's step counts (``--quick`` changes them).
SIZES = {"ns": (100, 500, 1000), "sides": (6, 8), "divisor": 1}


def grid_problem(side, n, seed=0):
    """True parameters U(0.5, 0.8) on a side x side grid and n exact draws."""
    graph = grid_graph(side, side)
    theta = np.random.default_rng(seed).uniform(0.5, 0.8, len(graph.edges))
    X = agreement_to_mrf(theta, graph).sample(n, random_state=seed + 1, method="exact")
    return graph, theta, X


#: Proposal scale: "paper" is sigma_Q^2 = 0.001 at every n and p; with 24 parameters and
#: n >= 500 it accepts almost nothing (the chains stay at their start), so "tuned" scales it as
#: the usual 2.38 / sqrt(p) times a posterior sd of about 0.45 / sqrt(n), the same for every method.
SCALE = "paper"


def proposal_scale(p, n):
    return 0.0316 if SCALE == "paper" else 2.38 / np.sqrt(p) * 0.45 / np.sqrt(n)


def run(graph, X, steps, method, seed=0, **extra):
    params = {"proposal_scale": proposal_scale(len(graph.edges), X.shape[0]), **METHODS[method], **extra}
    est = MetropolisHastingsMRF(graph, n_steps=steps, random_state=seed, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        est.fit(X)
        # The chain alone: fit minus the one-off set-up (the MLE, compression, the tree).
        total = time.perf_counter() - t
    return est, total


def setup_time(graph, X, method):
    """Seconds of a 4-step fit: the one-off cost (MLE fit, compression, tree) of a method (4 steps:
    the fewest from which R-hat can be computed, which fit requires)."""
    return run(graph, X, 4, method)[1]


def sim1(steps, out):
    lines = [
        f"== sim1: 4x4 grid, 24 parameters U(0.5, 0.8), {steps} MH steps per method, proposal {SCALE!r}, "
        f"load {load_average()} =="
    ]
    lines.append(
        "per-step: chain time / steps (set-up excluded); ratio: to MLE-L(rho=0) in this run; |dmu|, |dsd|: "
        "mean over parameters of |posterior mean - Exact-L's| and |posterior sd - Exact-L's|; acc: acceptance"
    )
    figure = {}
    for n in SIZES["ns"]:
        graph, theta, X = grid_problem(4, n)
        rows, ref, base = [], None, None
        for method in METHODS:
            setup = setup_time(graph, X, method)
            est, total = run(graph, X, steps, method)
            per_step = max(total - setup, 1e-9) / steps
            if method == "Exact-L":
                ref = est
            if method == "MLE-L(rho=0)":
                base = per_step
            rows.append((method, per_step, setup, est))
            figure[(n, method)] = (est.posterior_mean_, est.posterior_std_)
        lines.append(f"-- n = {n} (load {load_average()})")
        lines.append(
            f"{'method':>16} {'us/step':>9} {'ratio':>7} {'set-up s':>9} {'acc':>5} {'|dmu|':>8} {'|dsd|':>8} "
            f"{'max Rhat':>8} {'10^6 steps s':>12} {'paper s':>9}"
        )
        for method, per_step, setup, est in rows:
            dmu = np.abs(est.posterior_mean_ - ref.posterior_mean_).mean()
            dsd = np.abs(est.posterior_std_ - ref.posterior_std_).mean()
            paper = PAPER_TABLE1_MS.get(method, float("nan")) / 1e3 if n == 1000 else float("nan")
            lines.append(
                f"{method:>16} {per_step * 1e6:9.1f} {per_step / base:7.2f} {setup:9.2f} {est.acceptance_rate_:5.2f} "
                f"{dmu:8.4f} {dsd:8.4f} {np.nanmax(est.rhat_):8.3f} {per_step * 1e6:12.1f} {paper:9.3g}"
            )
        print("\n".join(lines[-len(rows) - 2 :]), flush=True)
    if out is not None:
        _figure(figure, os.path.join(out, f"bayes_mh_fig2_{SCALE}.png"))
    return lines


def _figure(figure, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(2, len(SIZES["ns"]), figsize=(4 * len(SIZES["ns"]), 7), squeeze=False)
    for col, n in enumerate(SIZES["ns"]):
        ref_mu, ref_sd = figure[(n, "Exact-L")]
        for method in ("MLE-L(rho=0)", "Pseudo-L", "Laplace-L", "PersistMC", "Exchange"):
            mu, sd = figure[(n, method)]
            axes[0, col].plot(ref_mu, mu, ".", label=method)
            axes[1, col].plot(ref_sd, sd, ".", label=method)
        for row, ref in enumerate((ref_mu, ref_sd)):
            lo, hi = ref.min(), ref.max()
            axes[row, col].plot([lo, hi], [lo, hi], "k-", lw=0.5)
        axes[0, col].set_title(f"n = {n}")
    axes[0, 0].set_ylabel("posterior mean (method)")
    axes[1, 0].set_ylabel("posterior sd (method)")
    for ax in axes[1]:
        ax.set_xlabel("Exact-L")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def grids(steps, out):
    lines = [
        f"== grids: 6x6 and 8x8, {steps} MH steps, proposal {SCALE!r}, posterior mean against the true "
        f"parameters, load {load_average()} =="
    ]
    lines.append(f"{'grid':>5} {'n':>5} {'method':>16} {'us/step':>9} {'ratio':>7} {'acc':>5} {'mean |mu - true|':>17}")
    for side in SIZES["sides"]:
        for n in SIZES["ns"]:
            graph, theta, X = grid_problem(side, n)
            base = None
            for method in ("MLE-L(rho=0)", "MLE-L(rho=0.05)", "MLE-L(rho=0.1)", "Pseudo-L", "Laplace-L", "Exact-L"):
                setup = setup_time(graph, X, method)
                est, total = run(graph, X, steps, method)
                per_step = max(total - setup, 1e-9) / steps
                base = per_step if base is None else base
                err = np.abs(est.posterior_mean_ - theta).mean()
                lines.append(
                    f"{side}x{side} {n:5d} {method:>16} {per_step * 1e6:9.1f} {per_step / base:7.2f} "
                    f"{est.acceptance_rate_:5.2f} {err:17.4f}"
                )
                print(lines[-1], flush=True)
    return lines


def speed(out):
    """10^6 MLE-L steps on the 8x8 grid: evaluated ahead (the default) and one step at a time."""
    graph, theta, X = grid_problem(8, 1000)
    lines = [f"== speed: MLE-L(rho=0), 8x8 grid, n = 1000, proposal {SCALE!r}, load {load_average()} =="]
    sequential = mock.patch.object(bayes, "run_chains_speculative", bayes.run_chains)
    d = SIZES["divisor"]
    for label, chains, steps in (
        ("ahead", 1, 10**6 // d),
        ("ahead", 8, 125_000 // d),
        ("one step at a time", 1, 10**6 // d),
        ("one step at a time", 8, 125_000 // d),
    ):
        with sequential if label != "ahead" else contextlib.nullcontext():
            setup = setup_time(graph, X, "MLE-L(rho=0)")
            est, total = run(graph, X, steps, "MLE-L(rho=0)", n_chains=chains, thin=10)
        chain_steps = chains * steps
        lines.append(
            f"{label:>18}: {chains} chain(s) x {steps} steps = {chain_steps:.0e} chain-steps: {total - setup:.1f} s "
            f"(+ {setup:.2f} s set-up); {(total - setup) / chain_steps * 1e6:.1f} us per chain-step, "
            f"acceptance {est.acceptance_rate_:.3f}"
        )
        print(lines[-1], flush=True)
    return lines


def exchange(out):
    graph, theta, X = grid_problem(4, 100)
    steps = 100_000 // SIZES["divisor"]
    est, total = run(graph, X, steps, "Exchange")
    line = (
        f"== exchange: exact draws, 4x4 grid, n = 100, {steps:.0e} steps: {total:.1f} s, acceptance "
        f"{est.acceptance_rate_:.3f}, sampler {est.likelihood_.sampler!r}, load {load_average()} =="
    )
    print(line, flush=True)
    return [line]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", default=["sim1", "grids", "speed", "exchange"])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--out", default=None, help="directory of the results (default benchmarks/results; --quick: none)")
    ap.add_argument("--scale", choices=["paper", "tuned"], default="paper")
    ap.add_argument("--quick", action="store_true", help="200 steps, n = 100, 6x6, 100x fewer speed/exchange steps")
    args = ap.parse_args()
    global SCALE
    SCALE = args.scale
    if args.quick:
        args.steps = 200
        SIZES.update(ns=(100,), sides=(6,), divisor=100)
    elif args.out is None:
        args.out = "benchmarks/results"
    if args.out is not None:
        os.makedirs(args.out, exist_ok=True)
    head = [
        f"# python benchmarks/bayes_mh.py {' '.join(args.parts)} --steps {args.steps} --scale {args.scale}"
        + (" --quick" if args.quick else ""),
        header("bayes_mh.py: Simulation 1 of the MLE-induced likelihood paper, Metropolis-Hastings"),
    ]
    print("\n".join(head), flush=True)
    lines = list(head)
    for part in args.parts:
        t = time.perf_counter()
        if part == "sim1":
            lines += sim1(args.steps, args.out)
        elif part == "grids":
            lines += grids(args.steps, args.out)
        elif part == "speed":
            lines += speed(args.out)
        elif part == "exchange":
            lines += exchange(args.out)
        lines.append(f"({part}: {time.perf_counter() - t:.0f} s)")
    lines.append(f"peak resident memory {peak_rss_mib():.0f} MiB; load at end {load_average()}")
    print("\n".join(lines[len(head) :][-2:]))
    if args.out is not None:
        with open(os.path.join(args.out, f"bayes_mh_{args.scale}.txt"), "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
