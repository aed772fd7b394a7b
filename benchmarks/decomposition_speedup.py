"""Speed-up of decomposing the data term on always-observed variables (Refaat and Darwiche, Section 5).

Reproduces Table 1 and Figures 2-3 of "Data Compression for Learning MRF Parameters"
(IJCAI 2015) with :class:`skmrf.DecomposedEM` (``method="gradient"``, the paper's Table 1
method): the same L-BFGS fit from the same start (zeros) with ``decompose=False`` (the
baseline: duplicate rows merged, the data term calibrated once per distinct row) and with
``decompose=True`` (the data term split into sub-networks cut at the always-observed
variables, each sub-network's projected data compressed). The two must return the same
parameters; the table shows the largest difference.

Networks: random chains (path graphs over a random order of the variables), random binary
trees (each new node hangs under a random node with fewer than two children), 4-neighbour
grids, all binary with data drawn exactly from a random MRF on the structure (parameters
uniform on [-1, 1], :func:`skmrf.datasets.sample_random_mrf`); and the alarm and win95pts
Bayesian networks bundled with pgmpy (optional dependency: ``pip install pgmpy``), data
forward-sampled from the network itself, states recoded to ``0..K-1``, the MRF structure
being the maximal cliques of the moral graph. Missing data as in the paper: a random
``--hidden`` fraction (20 %) of the variables "have missing values"; each of their
entries is hidden with probability ``--p-missing`` (0.5; the paper does not say), the
other variables are always observed.

Timing: our baseline is already vectorised over the distinct rows and slices the
always-observed variables into the tables, so the speed-ups are far below the paper's,
whose baseline ran one full inference per distinct example. When the baseline fit would
take longer than ``--budget`` seconds (estimated from a 3-iteration probe), both fits are
capped at the same number of iterations and the speed-up is the ratio of their times at
that cap (marked ``*``); the full baseline time is then extrapolated from its time per
iteration and the decomposed fit's iteration count (marked ``~``). Fits that take under
``--repeat-below`` seconds are timed twice and the faster run kept (the shared 2-core
machine varies by up to 40 %). BLAS is limited to ``--blas-threads`` threads.

Writes ``decomposition_speedup.txt`` (the tables), ``decomposition_speedup.json`` (raw
results), ``decomposition_speedup_fig2.png`` and ``decomposition_speedup_fig3.png``.

Usage::

    PYTHONPATH=. python benchmarks/decomposition_speedup.py --out benchmarks/results
    PYTHONPATH=. python benchmarks/decomposition_speedup.py --quick --out /tmp
    PYTHONPATH=. python benchmarks/decomposition_speedup.py --parts table1 --out benchmarks/results
    PYTHONPATH=. python benchmarks/decomposition_speedup.py --replot --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
import tracemalloc
import warnings

import numpy as np

from skmrf import DecomposedEM, grid_graph
from skmrf.datasets import sample_random_mrf

#: Ridge of every fit (the paper gives none). Keeps the alarm/win95pts fits finite where a
#: rare clique state is never seen; identical for both fits, so it does not bias the ratio.
ALPHA = 1e-3
TOL = 1e-6
MAX_ITER = 500
#: Iterations of the baseline probe that decides whether (and where) to cap.
PROBE_ITERS = 3

#: The paper's Table 1 (t_grad, t_d-grad, speed-up), for the rows we reproduce.
PAPER_TABLE1 = {
    "chain-50": ("4.7 min", "1.7 s", 165),
    "chain-100": ("12.2 min", "2.9 s", 253),
    "tree-63": ("6 min", "2.36 s", 152),
    "tree-127": ("18 min", "5.77 s", 187),
    "tree-255": ("53 min", "13 s", 236),
    "grid-9x9": ("61 min", "73 s", 50),
    "grid-10x10": ("74 min", "34 s", 130),
    "alarm": ("3.4 min", "13.6 s", 15),
    "win95pts": ("4.3 min", "7.8 s", 33),
}
#: Network, data size (as in the paper's Table 1).
TABLE1 = [
    ("chain-50", 4096),
    ("chain-100", 4096),
    ("tree-63", 4096),
    ("tree-127", 4096),
    ("tree-255", 4096),
    ("grid-9x9", 8192),
    ("grid-10x10", 8192),
    ("alarm", 4096),
    ("win95pts", 1024),
]
FIG_NETWORKS = ["grid-9x9", "alarm", "chain-50", "tree-63"]


# ---------------------------------------------------------------------------
# Networks and data
# ---------------------------------------------------------------------------
class Network:
    """A structure with its states and a seeded sampler of complete rows."""

    def __init__(self, name, graph, n_states, sampler):
        self.name, self.graph, self.n_states, self._sampler = name, graph, np.asarray(n_states), sampler

    @property
    def n_variables(self):
        return len(self.n_states)

    def sample(self, n, seed):
        return self._sampler(n, seed)


def _binary_network(name, edges, n, seed):
    """Rows drawn exactly from a random MRF on ``edges`` (parameters uniform on [-1, 1]).

    :func:`sample_random_mrf` draws the model first from the seeded generator, so every
    data size gets the same model.
    """

    def sampler(n_samples, s):
        return sample_random_mrf(edges, n_samples, 2, 1.0, n_variables=n, random_state=np.random.default_rng([seed, s])).X

    return Network(name, edges, np.full(n, 2), sampler)


def chain(n, seed):
    order = np.random.default_rng(seed).permutation(n)
    return [tuple(sorted((int(a), int(b)))) for a, b in zip(order[:-1], order[1:])]


def binary_tree(n, seed):
    """Random binary tree: node ``order[i]`` hangs under a random earlier node with < 2 children."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    children = {int(order[0]): 0}
    edges = []
    for v in order[1:]:
        open_ = [u for u, k in children.items() if k < 2]
        u = open_[rng.integers(len(open_))]
        children[u] += 1
        children[int(v)] = 0
        edges.append(tuple(sorted((u, int(v)))))
    return edges


_BN_CACHE = {}


def _bayesian_network(name, seed):
    """pgmpy's bundled BN: moral-graph maximal cliques, states recoded 0..K-1, forward samples."""
    if name in _BN_CACHE:
        return _BN_CACHE[name]
    import networkx as nx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgmpy.sampling import BayesianModelSampling
        from pgmpy.utils import get_example_model

        bn = get_example_model(name)
    nodes = sorted(bn.nodes())
    index = {v: i for i, v in enumerate(nodes)}
    moral = nx.Graph()
    moral.add_nodes_from(nodes)
    moral.add_edges_from(bn.moralize().edges())
    cliques = sorted(tuple(sorted(index[v] for v in c)) for c in nx.find_cliques(moral))
    states = {v: list(bn.get_cpds(v).state_names[v]) for v in nodes}
    n_states = [len(states[v]) for v in nodes]

    def sampler(n_samples, s):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = BayesianModelSampling(bn).forward_sample(
                size=n_samples, seed=int(np.random.default_rng([seed, s]).integers(2**31)), show_progress=False
            )
        X = np.empty((n_samples, len(nodes)), dtype=np.int64)
        for v in nodes:
            code = {st: k for k, st in enumerate(states[v])}
            X[:, index[v]] = df[v].map(code).to_numpy()
        return X

    _BN_CACHE[name] = Network(name, cliques, n_states, sampler)
    return _BN_CACHE[name]


def network(name, seed=0):
    kind, _, arg = name.partition("-")
    if kind == "chain":
        return _binary_network(name, chain(int(arg), seed), int(arg), seed)
    if kind == "tree":
        return _binary_network(name, binary_tree(int(arg), seed), int(arg), seed)
    if kind == "grid":
        r, c = map(int, arg.split("x"))
        return _binary_network(name, sorted(grid_graph(r, c).edges()), r * c, seed)
    return _bayesian_network(name, seed)


def make_incomplete(X, hidden, p_missing, seed):
    """Float copy of ``X`` with each entry of the ``hidden`` columns set to NaN with ``p_missing``."""
    rng = np.random.default_rng(seed)
    Xf = X.astype(float)
    mask = rng.random((X.shape[0], len(hidden))) < p_missing
    block = Xf[:, hidden]
    block[mask] = np.nan
    Xf[:, hidden] = block
    return Xf


def hidden_order(n_variables, seed):
    """A random order of the variables; the first ``k`` have missing values (nested sets)."""
    return np.random.default_rng([seed, 7]).permutation(n_variables)


def n_hidden(n_variables, fraction):
    return max(1, int(round(fraction * n_variables)))


def distinct_rows(Xf):
    """Distinct rows of the data (NaN as its own value), all-missing rows excluded."""
    Xi = np.where(np.isnan(Xf), -1, Xf).astype(np.int64)
    Xi = Xi[~(Xi < 0).all(axis=1)]
    return len(np.unique(Xi, axis=0))


# ---------------------------------------------------------------------------
# Fits
# ---------------------------------------------------------------------------
def fit(net, Xf, decompose, max_iter, repeat=1, init=None):
    """Fit (best of ``repeat`` timed runs); the estimator and the fastest time."""
    best, est = np.inf, None
    for _ in range(repeat):
        e = DecomposedEM(
            net.graph,
            method="gradient",
            decompose=decompose,
            alpha=ALPHA,
            max_iter=max_iter,
            tol=TOL,
            init=init,
            n_states=net.n_states,
        )
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning when capped
            e.fit(Xf)
        best, est = min(best, time.perf_counter() - t), e
    return est, best


#: Results of :func:`compare` by (network, rows, hidden variables, seed): the parts share points.
_RESULTS = {}
#: Iterations over which the two fits' log-likelihood traces are compared (before rounding
#: differences, amplified by L-BFGS on a flat objective, can move the iterates apart).
EARLY_ITERS = 10


def compare_cached(name, n_rows, hidden_fraction, args, budget, seed=None):
    seed = args.seed if seed is None else seed
    net, Xf = dataset(name, n_rows, hidden_fraction, args.p_missing, seed)
    key = (name, n_rows, n_hidden(net.n_variables, hidden_fraction), seed)
    if key in _RESULTS:
        r = dict(_RESULTS[key])
        print(f"  {name:<10} N={n_rows:>6}: measured above (x{r['speedup']:.1f})", flush=True)
        return r
    _RESULTS[key] = compare(net, Xf, budget, args.repeat_below)
    return dict(_RESULTS[key])


def penalised(est):
    """The objective the fit maximises: mean log-likelihood minus the ridge."""
    theta = est.model_.theta
    return est.log_likelihood_ - 0.5 * ALPHA * theta @ theta


def compare(net, Xf, budget, repeat_below, max_iter=MAX_ITER, log=print):
    """Decomposed vs undecomposed gradient fits from the same start; capped if the baseline is slow.

    The baseline's cost is estimated from a ``PROBE_ITERS``-iteration fit. When it exceeds
    ``budget`` both fits are rerun capped at the same number of iterations; the full
    baseline time is then the capped time plus the marginal cost per iteration (between the
    probe and the capped fit) times the remaining iterations of the full decomposed fit.
    """
    d_full, td_full = fit(net, Xf, True, max_iter)
    if td_full < repeat_below:
        d_full, td_full = fit(net, Xf, True, max_iter, repeat=2)
    n_full = d_full.n_iter_
    probe, tp = fit(net, Xf, False, PROBE_ITERS)
    per_iter = tp / max(1, probe.n_iter_)  # includes setup: errs towards capping
    cap = None
    if per_iter * n_full > budget:
        cap = max(2 * PROBE_ITERS, int(budget / per_iter))
    if cap is not None and cap < n_full:
        d, td = fit(net, Xf, True, cap, repeat=2 if td_full < repeat_below else 1)
        u, tu = fit(net, Xf, False, cap)
        if u.n_iter_ > probe.n_iter_ and tu > tp:
            marginal = (tu - tp) / (u.n_iter_ - probe.n_iter_)
        else:
            marginal = tu / max(1, u.n_iter_)
        t_grad_full = tu + marginal * max(0, n_full - u.n_iter_)
    else:
        cap = None
        d, td = d_full, td_full
        u, tu = fit(net, Xf, False, max_iter, repeat=2 if per_iter * n_full < repeat_below else 1)
        t_grad_full = tu
    diff = float(np.abs(d.model_.theta - u.model_.theta).max())
    res = {
        "network": net.name,
        "n_vars": net.n_variables,
        "n_rows": int(Xf.shape[0]),
        "n_subnetworks": int(d.n_subnetworks_),
        "patterns_decomposed": int(d.n_distinct_rows_.sum()),
        "largest_subnetwork_patterns": int(d.n_distinct_rows_.max()) if d.n_subnetworks_ else 0,
        "patterns_baseline": int(u.n_distinct_rows_.sum()),
        "distinct_rows": distinct_rows(Xf),
        "n_iter_full": int(n_full),
        "converged_full": bool(d_full.converged_),
        "t_dgrad_full": td_full,
        "cap": cap,
        "n_iter_d": int(d.n_iter_),
        "n_iter_u": int(u.n_iter_),
        "converged_d": bool(d.converged_),
        "converged_u": bool(u.converged_),
        "t_probe": tp,
        "t_grad": tu,
        "t_dgrad": td,
        "speedup": tu / td,
        "t_grad_full_est": t_grad_full,
        "speedup_full_est": t_grad_full / td_full,
        "max_abs_theta_diff": diff,
        "ll_diff": float(abs(d.log_likelihood_ - u.log_likelihood_)),
        "objective_diff": float(abs(penalised(d) - penalised(u))),
        "early_ll_diff": float(
            np.abs(d.log_likelihood_trace_[: EARLY_ITERS + 1] - u.log_likelihood_trace_[: EARLY_ITERS + 1]).max()
        ),
    }
    flag = f" (both capped at {cap} it.; full fit ~x{res['speedup_full_est']:.1f})" if cap else ""
    log(
        f"  {net.name:<10} N={res['n_rows']:>6} sub={res['n_subnetworks']:>3} patterns {res['patterns_decomposed']:>6} "
        f"vs {res['patterns_baseline']:>6}  it {res['n_iter_d']:>3}/{res['n_iter_u']:>3}  "
        f"t_grad {tu:7.2f} s  t_d-grad {td:6.2f} s  x{res['speedup']:.1f}{flag}  max|dtheta| {diff:.1e} "
        f"|dLL| {res['ll_diff']:.1e} (first {EARLY_ITERS} it. {res['early_ll_diff']:.1e})",
        flush=True,
    )
    if diff > 1e-6 or res["early_ll_diff"] > 1e-9:
        msg = (
            f"  !! {net.name}: decompose=True and False end {diff:.1e} apart in theta, {res['ll_diff']:.1e} in mean "
            f"log-likelihood, {res['objective_diff']:.1e} in the penalised objective; their traces agree to "
            f"{res['early_ll_diff']:.1e} over the first {EARLY_ITERS} iterations"
        )
        if d.converged_ and u.converged_:
            # Same optimum? Restart the baseline at the decomposed solution.
            r, _ = fit(net, Xf, False, 5, init=d)
            res["restart"] = {"n_iter": int(r.n_iter_), "converged": bool(r.converged_)}
            msg += (
                f"; the baseline restarted at the decomposed solution stops after {r.n_iter_} iterations "
                f"({'converged' if r.converged_ else 'not converged'}), "
                f"{np.abs(r.model_.theta - d.model_.theta).max():.1e} from it"
            )
        log(msg, flush=True)
    return res


def peak_memory(net, Xf, decompose, max_iter=2):
    """Peak traced allocation (bytes) of a short fit: setup and first evaluations set the peak."""
    tracemalloc.start()
    try:
        fit(net, Xf, decompose, max_iter)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def dataset(name, n_rows, hidden_fraction, p_missing, seed):
    net = network(name, seed)
    X = net.sample(n_rows, 1)
    k = n_hidden(net.n_variables, hidden_fraction)
    hidden = np.sort(hidden_order(net.n_variables, seed)[:k])
    return net, make_incomplete(X, hidden, p_missing, [seed, n_rows, k])


# ---------------------------------------------------------------------------
# Parts
# ---------------------------------------------------------------------------
def fmt_time(t):
    return f"{t:.2f} s" if t < 120 else f"{t / 60:.1f} min"


def full_cells(r):
    """t_grad, t_d-grad and speed-up of the full fits; '~' marks an extrapolated baseline."""
    mark = "~" if r["cap"] is not None else ""
    return mark + fmt_time(r["t_grad_full_est"]), fmt_time(r["t_dgrad_full"]), f"{mark}x{r['speedup_full_est']:.1f}"


def capped_cell(r):
    """The speed-up measured with both fits capped at the same iteration count, or '-'."""
    return f"x{r['speedup']:.1f}@{r['n_iter_d']}" if r["cap"] is not None else "-"


CAP_NOTE = (
    "~: the baseline was over the time budget: both fits were rerun capped at the same iteration count "
    "(capped: their measured time ratio @ that count) and the full baseline time is extrapolated (capped time + "
    "marginal time per iteration x the remaining iterations of the full decomposed fit)."
)


def part_table1(args, out):
    print(f"\nTable 1: gradient fits, {args.hidden:.0%} of variables with missing values (p = {args.p_missing})")
    rows = []
    for name, n_rows in args.table1:
        rows.append(compare_cached(name, n_rows, args.hidden, args, args.budget))
    head = (
        f"{'network':<11}{'#vars':>6}{'N':>7}{'#sub':>5}{'patt.dec':>9}{'(max)':>7}{'patt.base':>10}{'distinct':>9}"
        f"{'iters':>6}{'t_grad':>11}{'t_d-grad':>10}{'speed-up':>10}{'capped':>11}  {'paper t_grad':>12}{'t_d-grad':>9}"
        f"{'speed-up':>9}{'max|dθ|':>9}{'|dLL|':>9}"
    )
    lines = [head]
    for r in rows:
        paper = PAPER_TABLE1.get(r["network"], ("-", "-", float("nan")))
        tg, td, sp = full_cells(r)
        lines.append(
            f"{r['network']:<11}{r['n_vars']:>6}{r['n_rows']:>7}{r['n_subnetworks']:>5}{r['patterns_decomposed']:>9}"
            f"{r['largest_subnetwork_patterns']:>7}{r['patterns_baseline']:>10}{r['distinct_rows']:>9}"
            f"{r['n_iter_full']:>6}{tg:>11}{td:>10}{sp:>10}{capped_cell(r):>11}  {paper[0]:>12}{paper[1]:>9}"
            f"{'x%g' % paper[2]:>9}{r['max_abs_theta_diff']:>9.0e}{r['ll_diff']:>9.0e}"
        )
    not_conv = [r["network"] for r in rows if not r["converged_full"]]
    if not_conv:
        lines.append(f"not converged within {MAX_ITER} iterations (tol {TOL:g}): {', '.join(not_conv)}")
    lines.append(
        "iters: L-BFGS iterations of the full decomposed fit. patt.dec: distinct patterns summed over the "
        "sub-networks (max: the largest sub-network's); patt.base: distinct rows the baseline calibrates (projected "
        "on the variables of the cliques holding a missing entry); distinct: distinct full rows. max|dθ|, |dLL|: "
        "between the decompose=True and False fits (same iterations)."
    )
    if any(r["cap"] is not None for r in rows):
        lines.append(CAP_NOTE.replace("budget", f"{args.budget:.0f} s budget"))
    drift = [r for r in rows if r["max_abs_theta_diff"] > 1e-6]
    for r in drift:
        rs = r.get("restart")
        lines.append(
            f"{r['network']}: fits end {r['max_abs_theta_diff']:.0e} apart in θ but agree to {r['objective_diff']:.0e} in the "
            f"penalised objective, and to {r['early_ll_diff']:.0e} over the first {EARLY_ITERS} iterations"
            + (
                f"; the baseline restarted at the decomposed solution stops after {rs['n_iter']} it."
                if rs
                else ""
            )
            + " (rounding differences amplified by L-BFGS on a flat objective, not a different objective)."
        )
    text = "\n".join(lines)
    print(text)
    out["table1"] = {"rows": rows, "text": text}


def part_curve(args, out, key):
    """Figure 2 (speed-up vs % always observed) or Figure 3 (speed-up vs data size)."""
    if key == "fig2":
        xs = args.fig2_observed
        title = f"Figure 2: speed-up vs % of variables always observed, N = {args.fig2_rows}"
    else:
        xs = args.fig3_log2
        title = f"Figure 3: speed-up vs data size, {args.hidden:.0%} of variables with missing values"
    print(f"\n{title} (p = {args.p_missing}, budget {args.fig_budget:.0f} s per baseline fit)")
    rows = []
    for name in args.fig_networks:
        for x in xs:
            if key == "fig2":
                r = compare_cached(name, args.fig2_rows, 1 - x / 100, args, args.fig_budget)
            else:
                r = compare_cached(name, 2**x, args.hidden, args, args.fig_budget)
            r["x"] = x
            rows.append(r)
    lines = [
        f"{'network':<11}"
        + "".join(f"{x:>10}" if key == "fig2" else f"{'2^%d' % x:>10}" for x in xs)
        + ("   (% observed)" if key == "fig2" else "   (N)")
    ]
    for name in args.fig_networks:
        rs = [next(r for r in rows if r["network"] == name and r["x"] == x) for x in xs]
        lines.append(f"{name:<11}" + "".join(f"{full_cells(r)[2]:>10}" for r in rs))
        if any(r["cap"] is not None for r in rs):
            lines.append(f"{'  capped':<11}" + "".join(f"{capped_cell(r):>10}" for r in rs))
        lines.append(f"{'  t_grad':<11}" + "".join(f"{full_cells(r)[0]:>10}" for r in rs))
        lines.append(f"{'  t_d-grad':<11}" + "".join(f"{full_cells(r)[1]:>10}" for r in rs))
        lines.append(f"{'  iters':<11}" + "".join(f"{r['n_iter_full']:>10}" for r in rs))
        lines.append(f"{'  patt.dec':<11}" + "".join(f"{r['patterns_decomposed']:>10}" for r in rs))
        lines.append(f"{'  patt.base':<11}" + "".join(f"{r['patterns_baseline']:>10}" for r in rs))
    lines.append(
        "speed-up = t_grad / t_d-grad of the full fits. patt.dec / patt.base: distinct patterns the decomposed fit / "
        "the baseline calibrates per evaluation."
    )
    if any(r["cap"] is not None for r in rows):
        lines.append(CAP_NOTE.replace("budget", f"{args.fig_budget:.0f} s budget"))
    worst = max(rows, key=lambda r: r["max_abs_theta_diff"])
    lines.append(
        f"largest max|dθ| between decompose=True and False: {worst['max_abs_theta_diff']:.1e} ({worst['network']}, "
        f"x = {worst['x']}; penalised objectives {worst['objective_diff']:.0e} apart)"
    )
    text = "\n".join(lines)
    print(text)
    out[key] = {"rows": rows, "text": text, "xs": list(xs)}


def part_headline(args, out):
    n_rows = 2**args.headline_log2
    print(f"\nHeadline: grid-9x9, N = 2^{args.headline_log2}, {args.hidden:.0%} hidden (paper: ~3 min vs ~17 h)")
    r = compare_cached("grid-9x9", n_rows, args.hidden, args, args.budget)
    lines = [
        "Headline (paper: 9x9 grid, 2^16 rows, 20% hidden: ~3 min decomposed vs ~17 h, ~x340)",
        f"grid-9x9, N = {n_rows}: decomposed fit {fmt_time(r['t_dgrad_full'])} ({r['n_iter_full']} it., "
        f"{'converged' if r['converged_full'] else 'not converged'})",
    ]
    if r["cap"] is not None:
        lines.append(
            f"baseline capped at {r['cap']} it. (over the {args.budget:.0f} s budget): {fmt_time(r['t_grad'])} "
            f"vs {fmt_time(r['t_dgrad'])} decomposed at the same cap (x{r['speedup']:.1f}); "
            f"baseline extrapolated to {r['n_iter_full']} it.: ~{fmt_time(r['t_grad_full_est'])} "
            f"(~x{r['speedup_full_est']:.1f})"
        )
    else:
        lines.append(f"baseline fit {fmt_time(r['t_grad'])} ({r['n_iter_u']} it.): x{r['speedup']:.1f}")
    lines.append(
        f"patterns: {r['patterns_decomposed']} over {r['n_subnetworks']} sub-networks (largest {r['largest_subnetwork_patterns']}) "
        f"vs {r['patterns_baseline']} for the baseline; max|dθ| {r['max_abs_theta_diff']:.1e}"
    )
    text = "\n".join(lines)
    print(text)
    out["headline"] = {"row": r, "text": text}


def part_seeds(args, out):
    """How much the speed-up depends on which variables are hidden (and on the model and data)."""
    name, n_rows = args.seeds_case
    print(f"\nSeed sensitivity: {name}, N = {n_rows}, {args.hidden:.0%} hidden, seeds {args.seeds}")
    rows = [compare_cached(name, n_rows, args.hidden, args, args.budget, seed=s) for s in args.seeds]
    lines = [
        f"Seed sensitivity: {name}, N = {n_rows}; the seed draws the model, the data and the hidden variables",
        f"{'seed':>5}{'#sub':>6}{'patt.dec':>10}{'(max)':>8}{'patt.base':>10}{'iters':>7}{'t_grad':>11}{'t_d-grad':>10}"
        f"{'speed-up':>10}{'capped':>11}{'max|dθ|':>9}",
    ]
    for s, r in zip(args.seeds, rows):
        tg, td, sp = full_cells(r)
        lines.append(
            f"{s:>5}{r['n_subnetworks']:>6}{r['patterns_decomposed']:>10}{r['largest_subnetwork_patterns']:>8}"
            f"{r['patterns_baseline']:>10}{r['n_iter_full']:>7}{tg:>11}{td:>10}{sp:>10}{capped_cell(r):>11}"
            f"{r['max_abs_theta_diff']:>9.0e}"
        )
    text = "\n".join(lines)
    print(text)
    out["seeds"] = {"rows": rows, "text": text}


def part_memory(args, out):
    print("\nPeak traced memory (tracemalloc, fits of 2 iterations: setup and first evaluations)")
    lines = [
        "Peak traced memory (tracemalloc; fits of 2 iterations, setup and first evaluations; the data "
        "passed in are not counted)",
        f"{'network':<11}{'N':>7}{'decomposed':>14}{'baseline':>14}",
    ]
    for name, n_rows in args.memory:
        net, Xf = dataset(name, n_rows, args.hidden, args.p_missing, args.seed)
        md, mu = peak_memory(net, Xf, True), peak_memory(net, Xf, False)
        lines.append(f"{name:<11}{n_rows:>7}{md / 2**20:>10.1f} MiB{mu / 2**20:>10.1f} MiB")
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    out["memory"] = {"text": text}


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------
def plot(out, folder):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    except ImportError:
        print("matplotlib not installed: no figures")
        return
    labels = {
        "fig2": ("% of variables always observed", "Fig. 2: speed-up vs % observed, N = {n}"),
        "fig3": ("data size N", "Fig. 3: speed-up vs data size, {h} of variables hidden"),
    }
    for key, (xlabel, title) in labels.items():
        if key not in out:
            continue
        rows = out[key]["rows"]
        fig, ax = plt.subplots(figsize=(6, 4.2))
        for name in dict.fromkeys(r["network"] for r in rows):
            rs = [r for r in rows if r["network"] == name]
            line = ax.plot([r["x"] for r in rs], [r["speedup_full_est"] for r in rs], marker="o", label=name)[0]
            capped = [r for r in rs if r["cap"] is not None]
            if capped:
                c = line.get_color()
                ax.plot([r["x"] for r in capped], [r["speedup_full_est"] for r in capped], "o", mfc="white", mec=c)
                ax.plot([r["x"] for r in capped], [r["speedup"] for r in capped], "x", color=c, ms=8)
        ax.axhline(1, color="grey", lw=0.8)
        ax.set(yscale="log", xlabel=xlabel, ylabel="speed-up  t_grad / t_d-grad")
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        xs = out[key]["xs"]
        ax.set_xticks(xs)
        if key == "fig3":
            ax.set_xticklabels([f"$2^{{{x}}}$" for x in xs])
        n = rows[0]["n_rows"]
        ax.set_title(title.format(n=n, h=out.get("hidden", "20%")) + "\n(open: baseline extrapolated; x: both fits capped at equal iterations, measured)", fontsize=10)
        ax.legend()
        fig.tight_layout()
        path = os.path.join(folder, f"decomposition_speedup_{key}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        print("figure written to", path)


def _limit_blas(n):
    if n > 0:
        import scipy.linalg  # noqa: F401
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", nargs="*", default=["table1", "headline", "fig3", "fig2", "seeds", "memory"])
    ap.add_argument("--quick", action="store_true", help="smoke run (under a minute)")
    ap.add_argument("--out", default=".")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hidden", type=float, default=0.2, help="fraction of variables with missing values")
    ap.add_argument("--p-missing", type=float, default=0.5, help="probability that such a variable's entry is hidden")
    ap.add_argument("--budget", type=float, default=180.0, help="seconds per baseline fit (Table 1, headline)")
    ap.add_argument("--fig-budget", type=float, default=20.0, help="seconds per baseline fit (Figures 2-3)")
    ap.add_argument("--repeat-below", type=float, default=15.0, help="time fits shorter than this twice, keep the best")
    ap.add_argument("--blas-threads", type=int, default=1, help="0 = leave alone")
    ap.add_argument("--replot", action="store_true", help="only redraw the figures from the saved JSON in --out")
    args = ap.parse_args()
    if args.replot:
        with open(os.path.join(args.out, "decomposition_speedup.json")) as fh:
            return plot(json.load(fh), args.out)
    args.table1 = TABLE1
    args.fig_networks = FIG_NETWORKS
    args.fig2_observed = [50, 60, 70, 80, 90, 95]
    args.fig2_rows = 2**12
    args.fig3_log2 = [10, 11, 12, 13, 14, 15, 16]
    args.headline_log2 = 16
    args.memory = [("grid-9x9", 2**16), ("tree-255", 4096), ("win95pts", 1024)]
    args.seeds_case, args.seeds = ("grid-9x9", 8192), [0, 1, 2, 3]
    if args.quick:
        args.table1 = [("chain-50", 512), ("grid-9x9", 512), ("alarm", 512)]
        args.fig_networks = ["chain-50", "tree-63"]
        args.fig2_observed = [70, 95]
        args.fig2_rows = 2**9
        args.fig3_log2 = [9, 10]
        args.headline_log2 = 11
        args.memory = [("grid-9x9", 2**11)]
        args.seeds_case, args.seeds = ("chain-50", 512), [0, 1]
        args.budget = min(args.budget, 2.0)
        args.fig_budget = min(args.fig_budget, 1.0)
        args.repeat_below = 0.0
    _limit_blas(args.blas_threads)
    os.makedirs(args.out, exist_ok=True)
    import sklearn

    header = (
        f"decomposition_speedup{' --quick' if args.quick else ''}: python {platform.python_version()}, "
        f"numpy {np.__version__}, scikit-learn {sklearn.__version__}, {os.cpu_count()} CPUs, "
        f"BLAS threads {args.blas_threads or 'default'}, load average at start "
        + "/".join(f"{x:.2f}" for x in os.getloadavg())
        + f"\nDecomposedEM(method='gradient', alpha={ALPHA:g}, tol={TOL:g}, max_iter={MAX_ITER}, init=None); "
        f"{args.hidden:.0%} of the variables have missing values, each of their entries hidden with probability "
        f"{args.p_missing} (our choice: the paper does not give it); the other variables are always observed. "
        f"Seed {args.seed}.\nBaseline (decompose=False) = the same optimiser on the undecomposed data with duplicate "
        "rows merged, vectorised over the distinct rows with the always-observed variables sliced into the tables: "
        "a much stronger baseline than the paper's (one full inference per distinct example), so expect far "
        "smaller speed-ups. Times are wall-clock on a shared machine (+-40 %)."
    )
    print(header)
    out = {"header": header, "hidden": f"{args.hidden:.0%}"}
    t0 = time.perf_counter()
    for part in args.parts:
        if part == "table1":
            part_table1(args, out)
        elif part in ("fig2", "fig3"):
            part_curve(args, out, part)
        elif part == "headline":
            part_headline(args, out)
        elif part == "seeds":
            part_seeds(args, out)
        elif part == "memory":
            part_memory(args, out)
        else:
            ap.error(f"unknown part {part!r}")
    total = time.perf_counter() - t0
    footer = (
        f"total {total:.0f} s; peak resident memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB; "
        "load average at end " + "/".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print("\n" + footer)
    text = "\n\n".join([header] + [out[k]["text"] for k in args.parts if k in out] + [footer])
    with open(os.path.join(args.out, "decomposition_speedup.txt"), "w") as fh:
        fh.write(text + "\n")
    with open(os.path.join(args.out, "decomposition_speedup.json"), "w") as fh:
        json.dump({k: v for k, v in out.items()}, fh, indent=1, default=float)
    plot(out, args.out)


if __name__ == "__main__":
    main()
