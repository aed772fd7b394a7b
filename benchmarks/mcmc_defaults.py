"""MCMCMaxLikelihood with its defaults (the adaptive schedule) against exact maximum likelihood.

Side by side in one run:

1. **6x6 grids** (``--seeds`` seeds; binary and 3 states): parameters uniform on [-1, 1]
   (``make_random_mrf(scale=1)``), 1,000 exact draws; the relative error
   ``||theta - theta_ML|| / ||theta_ML||`` of ``MCMCMaxLikelihood(graph)`` and of the
   pseudo-likelihood estimate it starts from, both against ``ExactMaxLikelihood`` (same
   ``alpha="auto"``), and the seconds of each fit. Target (#13): within 10 %% in at least 9 of
   10 seeds, under 10 s each.
2. **Binarised digits** (scikit-learn's ``load_digits`` at ``>= 8``, 8x8 grid): held-out
   ``score`` per variable (exact) of the defaults against exact ML, 5-fold. Target: within
   0.01 nats per variable.
3. **Wide box**: ``max_coupling=2.0`` with an explicit schedule on a 3x3 grid (strong
   couplings, so the unconstrained optimum is inside the box): relative error to exact ML.
   Target: within 5 %%.
4. **32x32 grid**, 10^4 rows (exact ML does not fit: treewidth 32): seconds, peak memory and
   the error against the true parameters, next to pseudo-likelihood's.
5. **12x12 grids at n = 10^3, 10^4, 10^5** (#27 item 2; ``--nseeds`` seeds, binary and 3
   states, parameters uniform on [-1, 1], exact draws, the first n of 10^5): the distance to
   exact ML of the default fit and of pseudo-likelihood, the seconds of each, and the
   Monte-Carlo error against the statistical error, ``||theta - theta_ML|| / ||theta_ML -
   theta_true||``, which the defaults' rule (``adaptive_defaults``) holds near 0.1. Target:
   the default fit closer to exact ML than PL in every seed. Exact ML: ``ExactMaxLikelihood``
   (binary); for 3 states its L-BFGS kernel (``fit_max_likelihood``, tol 1e-7) on a transfer
   matrix (``_grid_transfer.py``), since the junction tree needs 3-15 GB and 15 s per
   calibration there. References are cached with ``--cache DIR``.
6. **Digits upsampled to 16x16** (#24 item 5: ``np.kron`` of each binarised 8x8 image with a
   2x2 block, 1797 rows): the default fit's node and edge frequencies (``P(x_i = 1)``,
   ``P(x_i = x_j = 1)``) against the data's, from long Gibbs chains started at uniform random
   states (split R-hat over the chains checks they mixed) and exactly (transfer matrix), next
   to pseudo-likelihood's and LAP's. Target: within 0.02.

Usage (``--out`` writes ``mcmc_defaults_n.txt`` for ``--parts n`` alone, else ``mcmc_defaults.txt``)::

    python benchmarks/mcmc_defaults.py [--seeds 10] [--nseeds 5] [--parts grid,digits,box,big,n,digits16]
        [--cache DIR] [--out DIR] [--quick]

``--quick`` runs every part small: one seed, 2 folds, a 100-step box, a 12x12 "big" grid of 1000
rows, part n at n = 1000 (binary, one seed), 100 long chains of 200 sweeps (a smoke run).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np
from _grid_transfer import check_against_junction_tree, with_transfer
from _harness import best_of, header, load_average, peak_rss_mib

from skmrf import (
    AdaptiveSchedule,
    ExactMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    PseudoLikelihoodEstimator,
    TheorySchedule,
    grid_graph,
)
from skmrf._utils._mcmc_diagnostics import split_rhat
from skmrf.datasets import make_random_mrf
from skmrf.estimators._exact import fit_max_likelihood
from skmrf.inference._gibbs import GibbsSampler


def timed(est, X):
    """``(est fitted to X, wall seconds)``, warnings hidden."""
    _, wall, _ = best_of(lambda: est.fit(X), 1)
    return est, wall


def relative(theta, ref):
    return float(np.linalg.norm(theta - ref) / np.linalg.norm(ref))


def grids(seeds):
    lines = [f"== 6x6 grid, 1000 rows, defaults vs exact ML (load {load_average()}) =="]
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
    lines = [
        f"== binarised digits (n = {len(X)}, 8x8 grid), {n_folds}-fold held-out score / 64 (load {load_average()}) =="
    ]
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


def box(n_iter=400, n_chains=4000):
    graph = grid_graph(3, 3)
    lines = [f"== wide box: 3x3 grid, max_coupling=2.0, explicit schedule (load {load_average()}) =="]
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
        dict(schedule=TheorySchedule(n_iter=n_iter, n_chains=n_chains, n_sweeps=20, lipschitz=5.0)),
        dict(schedule=AdaptiveSchedule(n_iter=n_iter, n_chains=n_chains, n_sweeps=5)),
    ):
        est, t = timed(MCMCMaxLikelihood(graph, max_coupling=2.0, random_state=0, **kw), X)
        lines.append(
            f"{kw['schedule'].kind:>8}: rel err to exact ML {relative(est.theta_, ml.theta_):.4f}, max |J| "
            f"{np.abs(est.ising_couplings_).max():.3f}, fast_mixing={est.schedule_.fast_mixing}, {t:.1f} s"
        )
        print(lines[-1], flush=True)
    return lines


def big(side=32, n=10_000):
    graph = grid_graph(side, side)
    model = make_random_mrf(graph, scale=0.5, random_state=0)
    X = model.sample(n, 1, method="gibbs", n_sweeps=200)
    rows = "10^4" if n == 10_000 else n
    lines = [
        f"== {side}x{side} grid, {rows} rows (Gibbs, 200 sweeps), parameters U(-0.5, 0.5) (load {load_average()}) =="
    ]
    pl, t_pl = timed(PseudoLikelihoodEstimator(graph), X)
    est, t = timed(MCMCMaxLikelihood(graph, random_state=0, score_method="pseudo"), X)
    peak = peak_rss_mib()
    lines.append(
        f"defaults: {t:.1f} s, {est.n_iter_} steps, converged {est.converged_}, rel err to the true "
        f"parameters {relative(est.theta_, model.theta):.4f}, "
        f"to pseudo-likelihood's {relative(est.theta_, pl.theta_):.4f}"
    )
    lines.append(f"pseudo-likelihood: {t_pl:.1f} s, rel err {relative(pl.theta_, model.theta):.4f}")
    lines.append(f"peak resident memory {peak:.0f} MiB")
    print("\n".join(lines[-3:]), flush=True)
    return lines


def _reference(K, n, seed, X, pl_theta, cache):
    """Exact ML on the 12x12 grid (``ExactMaxLikelihood``; its kernel on a transfer matrix for 3 states)."""
    path = None if cache is None else os.path.join(cache, f"ml12_K{K}_n{n}_seed{seed}.npz")
    if path is not None and os.path.exists(path):
        with np.load(path) as f:
            return f["theta"], float(f["seconds"])
    t = time.perf_counter()
    if K == 2:
        theta = ExactMaxLikelihood(grid_graph(12, 12)).fit(X).theta_
    else:
        model = with_transfer(make_random_mrf(grid_graph(12, 12), n_states=K), 12, 12)
        model.theta = pl_theta  # the start; the result is the optimum to tol = 1e-7 (max |gradient|)
        _, gmax = fit_max_likelihood(model, model.sufficient_statistics(X) / len(X), 1.0 / len(X), 2000, 1e-7)
        assert gmax <= 1e-7, gmax
        theta = model.theta.copy()
    seconds = time.perf_counter() - t
    if path is not None:
        np.savez(path, theta=theta, seconds=seconds)
    return theta, seconds


def scaling(seeds, sizes, cache, states=(2, 3)):
    graph = grid_graph(12, 12)
    worst = check_against_junction_tree()
    lines = [
        f"== 12x12 grids, n rows, parameters U(-1, 1), exact draws: distance to exact ML (load {load_average()}) ==",
        f"transfer matrix against the junction tree on small grids: log Z {worst[0]:.1e}, marginals {worst[1]:.1e}",
        "MC = default MCMCMaxLikelihood, PL = pseudo-likelihood; dist = ||theta - theta_ML|| / ||theta_ML||;",
        "MC/stat = ||theta_MC - theta_ML|| / ||theta_ML - theta_true|| (the rule aims at 0.1); s = seconds per fit",
        f"{'K':>2} {'n':>6} {'seed':>4} {'MC dist':>8} {'PL dist':>8} {'MC/PL':>6} {'MC/stat':>7} {'MC s':>7} "
        f"{'PL s':>6} {'s ratio':>7} {'chains':>6} {'sweeps':>6} {'steps':>5} {'rho':>5} {'ML s':>6} {'load':>5}",
    ]
    print("\n".join(lines), flush=True)
    summary = []
    for K in states:
        wins = {n: [] for n in sizes}
        for seed in seeds:
            truth = with_transfer(make_random_mrf(graph, n_states=K, scale=1.0, random_state=seed), 12, 12)
            X_all = truth.sample(max(sizes), seed, method="exact")
            for n in sizes:
                X = X_all[:n]
                pl, t_pl = timed(PseudoLikelihoodEstimator(graph, n_states=K), X)
                ml, t_ml = _reference(K, n, seed, X, pl.theta_, cache)
                est, t = timed(MCMCMaxLikelihood(graph, n_states=K, random_state=seed), X)
                d_mc, d_pl = relative(est.theta_, ml), relative(pl.theta_, ml)
                wins[n].append((d_mc < d_pl, d_mc / d_pl, t / t_pl, t))
                sched = est.schedule_
                lines.append(
                    f"{K:>2} {n:>6} {seed:>4} {d_mc:8.4f} {d_pl:8.4f} {d_mc / d_pl:6.2f} "
                    f"{np.linalg.norm(est.theta_ - ml) / np.linalg.norm(ml - truth.theta):7.3f} {t:7.1f} {t_pl:6.1f} "
                    f"{t / t_pl:7.1f} {sched.n_chains:>6} {sched.n_sweeps:>6} {est.n_iter_:>5} "
                    f"{est.sweep_autocorrelation_:5.2f} {t_ml:6.0f} {os.getloadavg()[0]:5.2f}"
                )
                print(lines[-1], flush=True)
        for n in sizes:
            w = np.array(wins[n])
            summary.append(
                f"K={K} n={n:>6}: MC closer to exact ML than PL in {int(w[:, 0].sum())} of {len(w)} seeds "
                f"(MC/PL distance {w[:, 1].min():.2f}-{w[:, 1].max():.2f}); seconds per fit {np.median(w[:, 3]):.1f} "
                f"(median), {np.median(w[:, 2]):.1f} x PL's"
            )
    lines += summary
    print("\n".join(summary), flush=True)
    return lines


def _frequencies(states, pos_edges):
    """``P(x_i = 1)`` per node and ``P(x_i = x_j = 1)`` per edge of 0/1 rows."""
    return states.mean(axis=0), (states[:, pos_edges[:, 0]] * states[:, pos_edges[:, 1]]).mean(axis=0)


def _long_chains(model, n_chains, n_sweeps, n_checks, seed):
    """Gibbs chains from uniform random states: frequencies and split R-hat (energy, ink).

    Both over the states at ``n_checks`` evenly spaced points of the second half of the sweeps.
    """
    rng = np.random.default_rng(seed)
    sampler = GibbsSampler(model)
    states = sampler.run(sampler.random_states(n_chains, rng), n_sweeps // 2, rng)
    segment = (n_sweeps - n_sweeps // 2) // n_checks
    trace = np.empty((n_chains, n_checks, 2))
    node = edge = 0.0
    edges = np.array([c for c in model.cliques if len(c) == 2])
    for t in range(n_checks):
        states = sampler.run(states, segment, rng)
        trace[:, t, 0] = model.layout.energy(states, model.theta)
        trace[:, t, 1] = states.mean(axis=1)
        a, b = _frequencies(states, edges)
        node, edge = node + a / n_checks, edge + b / n_checks
    return node, edge, split_rhat(trace)


def digits16(n_chains=1000, n_sweeps=4000, n_checks=40):
    from sklearn.datasets import load_digits

    X8 = (load_digits().data >= 8).astype(np.int64)
    X = np.array([np.kron(r.reshape(8, 8), np.ones((2, 2), dtype=np.int64)).ravel() for r in X8])
    graph = grid_graph(16, 16)
    lines = [
        f"== digits upsampled to 16x16 (np.kron with 2x2 ones), n = {len(X)}: model frequencies against the data's "
        f"(load {load_average()}) ==",
        f"long chains: {n_chains} Gibbs chains from uniform random states, {n_sweeps} sweeps, frequencies over the "
        f"states at {n_checks} points of the second half; exact: transfer-matrix marginals",
        f"{'fit':>8} {'s':>6} {'node exact':>10} {'edge exact':>10} {'node chains':>11} {'edge chains':>11} "
        f"{'R-hat E':>7} {'R-hat ink':>9} {'chain s':>7}",
    ]
    print("\n".join(lines), flush=True)
    edges = np.array([c for c in with_transfer(make_random_mrf(graph), 16, 16).cliques if len(c) == 2])
    d_node, d_edge = _frequencies(X.astype(np.float64), edges)
    fits = [
        ("defaults", MCMCMaxLikelihood(graph, random_state=0)),
        ("PL", PseudoLikelihoodEstimator(graph)),
        ("LAP", LAPEstimator(graph)),
    ]
    for name, est in fits:
        est, t = timed(est, X)
        model = with_transfer(est.model_, 16, 16)
        mu = model.calibrate().clique_marginals()
        node_pos = model.layout.table_offsets[: model.n_variables] + 1  # the (x_i = 1) cell of each node table
        edge_pos = model.layout.table_offsets[model.n_variables : -1] + 3  # the (1, 1) cell of each edge table
        assert list(model.cliques[: model.n_variables]) == [(v,) for v in range(model.n_variables)]
        t_chain = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c_node, c_edge, rhat = _long_chains(model, n_chains, n_sweeps, n_checks, 0)
        t_chain = time.perf_counter() - t_chain
        exact = np.abs(mu[node_pos] - d_node).max(), np.abs(mu[edge_pos] - d_edge).max()
        lines.append(
            f"{name:>8} {t:6.1f} {exact[0]:10.4f} {exact[1]:10.4f} "
            f"{np.abs(c_node - d_node).max():11.4f} {np.abs(c_edge - d_edge).max():11.4f} {rhat[0]:7.3f} "
            f"{rhat[1]:9.3f} {t_chain:7.1f}"
        )
        if name == "defaults":
            lines.append(
                f"{'':>8} chains {est.schedule_.n_chains}, sweeps per step {est.schedule_.n_sweeps} (rho "
                f"{est.sweep_autocorrelation_:.3f}), steps {est.n_iter_}; long chains against exact marginals: node "
                f"{np.abs(c_node - mu[node_pos]).max():.4f}, edge {np.abs(c_edge - mu[edge_pos]).max():.4f}"
            )
        print("\n".join(lines[-2 if name == "defaults" else -1 :]), flush=True)
    lines.append("target: the default fit within 0.02 of the data's node and edge frequencies")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--nseeds", type=int, default=5)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--states", default="2,3", help="numbers of states of part n's grids")
    ap.add_argument("--first-seed", type=int, default=0, help="part n runs seeds first-seed..nseeds-1")
    ap.add_argument("--parts", default="grid,digits,box,big,n,digits16")
    ap.add_argument("--long-sweeps", type=int, default=4000, help="sweeps of part digits16's long chains")
    ap.add_argument("--cache", default=None, help="directory for the exact-ML references of part n")
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="every part small (a smoke run); print only unless --out")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.nseeds, args.sizes, args.states, args.long_sweeps = 1, 1, "1000", "2", 200
    lines = [
        f"# python benchmarks/mcmc_defaults.py --seeds {args.seeds} --nseeds {args.nseeds} --parts {args.parts} "
        f"--sizes {args.sizes} --states {args.states} --first-seed {args.first_seed} --long-sweeps {args.long_sweeps}"
        + (" --quick" if args.quick else ""),
        header("mcmc_defaults.py: MCMCMaxLikelihood's defaults against exact maximum likelihood"),
        f"# python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}",
    ]
    print("\n".join(lines), flush=True)
    parts = args.parts.split(",")
    if "grid" in parts:
        lines += grids(args.seeds)
    if "digits" in parts:
        lines += digits(2 if args.quick else 5)
    if "box" in parts:
        lines += box(*((100, 500) if args.quick else ()))
    if "big" in parts:
        lines += big(*((12, 1000) if args.quick else ()))
    if "n" in parts:
        if args.cache:
            os.makedirs(args.cache, exist_ok=True)
        sizes, states = [int(v) for v in args.sizes.split(",")], [int(v) for v in args.states.split(",")]
        lines += scaling(range(args.first_seed, args.nseeds), sizes, args.cache, states)
    if "digits16" in parts:
        lines += digits16(n_sweeps=args.long_sweeps, **(dict(n_chains=100, n_checks=10) if args.quick else {}))
    lines.append(
        f"# peak resident memory of the run {peak_rss_mib():.0f} MiB; load average at the end {load_average()}"
    )
    print(lines[-1])
    if args.out:
        # Part n (hours, with the exact-ML references) keeps its own file.
        name = "mcmc_defaults_n.txt" if parts == ["n"] else "mcmc_defaults.txt"
        with open(os.path.join(args.out, name), "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
