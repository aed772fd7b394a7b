"""Conditional marginals given evidence: skmrf's ``conditional_marginals`` against peers, and the
enumerate-or-tree crossover (``ENUMERATE_MAX_STATES``).

Part ``compare`` (the default). J x J binary grids (``make_random_mrf(grid_graph(J, J), 2,
scale=1.0, random_state=0)``), evidence rows drawn from the model (Gibbs, seeded), and two
patterns of unobserved entries:

- ``random30``: each entry hidden independently with probability 0.3 (an imputation workload:
  many small components of missing entries per row, a few larger ones);
- ``bottom-half``: the bottom J // 2 rows of the grid hidden in every row (one shared pattern,
  one component of J * J / 2 variables, its observed boundary different in every row).

skmrf computes ``model.conditional_marginals(X)`` for all ``--rows`` rows at once (best of
``--repeat``; its peak traced memory from one more, separate call). Each peer runs the same rows
one at a time, as many as fit in ``--peer-budget`` seconds (at least ``--min-peer-rows``), and
its marginals are checked against skmrf's on the rows it ran ("max |diff|"; ~1e-15 expected):

- pyAgrum: ``ShaferShenoyMRFInference`` (C++), one object for all rows (compiled once, untimed,
  before the first row); per row the evidence is changed in place (``eraseEvidence`` for the
  variables no longer observed, ``updateEvidence`` for the rest: for a shared pattern this is a
  change of values only, 1.5x faster than ``eraseAllEvidence`` + ``setEvidence``), then
  ``makeInference`` and ``posterior`` of every missing variable. Node potentials are folded
  into an edge factor of the node (pyAgrum keeps one factor per edge); pyAgrum's ``fillWith``
  takes the *first* variable fastest, hence the Fortran-order ravel.
- pgmpy: ``VariableElimination`` on a ``DiscreteMarkovNetwork``, one query per missing variable
  (``query([v], evidence, elimination_order="greedy")``: an opt_einsum contraction; a given
  row-major elimination order was 1.3x slower). A single ``query(missing, joint=False)`` is
  not usable: for a Markov network pgmpy builds the joint table over *all* query variables
  before marginalising (2^18 entries at J = 8 random30: 1.2 s per row, 25x the per-variable
  queries; 2^32 at J = 8 bottom-half). pgmpy returns unnormalised factors for Markov
  networks; they are normalised here.

Rows per second are wall time; "ratio" is skmrf rows/s divided by the peer's (above 1: skmrf
faster). The conversion of the model for a peer is not timed.

Part ``crossover``. ``model.conditional_marginals`` on workloads with medium-size components
(binary 10 x 10 and 16 x 16 grids with 40, 50 and 60 % of the entries hidden at random, a
3-state 10 x 10 grid at 40 and 50 %; ``--rows`` rows each), timed with
``skmrf.inference._queries.ENUMERATE_MAX_STATES`` patched to 2**k for each k of ``--ks``
(best of ``--repeat``), with the peak traced memory of one more call. Components with at most
that many joint states are enumerated, larger ones calibrated on a junction tree.

Usage::

    python benchmarks/queries.py [compare] [--sizes 8 10 12 14 16] [--rows 1000]
        [--peer-budget 60] [--min-peer-rows 5] [--repeat 3] [--no-save]
    python benchmarks/queries.py crossover [--rows 1000] [--ks 2 4 6 8 10 12 14 16] [--repeat 3]

Tables are printed and saved to ``benchmarks/results/queries.txt`` and
``benchmarks/results/queries_crossover.txt`` (the command line on the first line).
``--quick``: J = 6 and 8, 50 rows, peers for 1 s, one skmrf call (crossover: the first two
workloads, k = 2, 8, 16); print only.
"""

import argparse
import gc
import logging
import os
import platform
import sys
import time
import tracemalloc
import warnings

import numpy as np
from _harness import commit, header, load_average, peak_rss_mib

import skmrf.inference._queries as queries_module
from skmrf import grid_graph
from skmrf._data.decompose import missing_component_labels
from skmrf.datasets import make_random_mrf
from skmrf.exceptions import ApproximateInferenceWarning

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


# -- Output ---------------------------------------------------------------------------------------


class _Tee:
    """Print to the terminal and keep the lines for a results file."""

    def __init__(self, path):
        self.path, self.lines = path, []

    def __call__(self, text=""):
        print(text, flush=True)
        self.lines.append(text)

    def save(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        print(f"saved {os.path.relpath(self.path)}")


def _header(out, argv, title):
    out(f"# python benchmarks/queries.py {' '.join(argv)}".rstrip())
    out(header(title))
    out(f"# numpy {np.__version__}, python {platform.python_version()}")
    return commit()


def _footer(out, source):
    out(f"# load average (1/5/15 min) at end {load_average()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if commit() != source:
        out(f"# WARNING: skmrf's source changed during the run (now {commit()}); rerun for a clean table.")


# -- Models and evidence --------------------------------------------------------------------------


def grid_model(J, n_states=2, seed=0):
    return make_random_mrf(grid_graph(J, J), n_states, scale=1.0, random_state=seed)


def draw_rows(model, n, seed):
    """``n`` evidence rows drawn from the model (independent Gibbs chains, 200 sweeps)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a mixing warning would not change what is timed
        return model.sample(n, method="gibbs", random_state=seed).astype(np.float64)


def hide(S, pattern, J, rng):
    """A copy of ``S`` with NaN where ``pattern`` hides entries."""
    X = S.copy()
    if pattern == "bottom-half":
        X[:, (J - J // 2) * J :] = np.nan  # grid_graph numbers nodes row-major
    elif pattern.startswith("random"):
        X[rng.random(X.shape) < int(pattern[len("random") :]) / 100] = np.nan
    else:
        raise ValueError(pattern)
    return X


def component_stats(model, X):
    """Mean missing entries per row, and the largest component of missing entries (variables)."""
    missing = np.isnan(X)
    label, _ = missing_component_labels(missing, model.cliques)
    size = np.bincount(label) if label.size else np.zeros(1, dtype=int)
    return missing.sum(axis=1).mean(), int(size.max())


def component_histogram(model, X):
    """Components of missing entries by log2 of their joint states: counts in buckets (0,2], (2,4], ..."""
    missing = np.isnan(X)
    label, _ = missing_component_labels(missing, model.cliques)
    r, v = np.nonzero(missing)
    log2 = np.bincount(label, weights=np.log2(model.n_states[v].astype(float)))
    edges = list(range(2, 17, 2)) + [np.inf]
    counts, lo = [], 0
    for hi in edges:
        counts.append(int(np.sum((log2 > lo + 1e-9) & (log2 <= hi + 1e-9))))
        lo = hi
    return counts


def potentials(model):
    """Linear-space tables exp(full table) per clique, axes in the clique's variable order."""
    lay = model.layout
    full = lay.full_tables(model.theta)
    for k, c in enumerate(model.cliques):
        yield tuple(c), np.exp(full[lay.table_offsets[k] : lay.table_offsets[k + 1]].reshape(lay.table_shapes[k]))


# -- skmrf ----------------------------------------------------------------------------------------


def time_skmrf(model, X, repeat):
    """Best wall time of ``conditional_marginals(X)``, the result, and the peak traced memory."""
    best, P = np.inf, None
    for _ in range(repeat):
        gc.collect()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ApproximateInferenceWarning)
            t = time.perf_counter()
            P = model.conditional_marginals(X)
            best = min(best, time.perf_counter() - t)
        if any(issubclass(w.category, ApproximateInferenceWarning) for w in caught):
            print("[note] some entries were estimated by Gibbs chains (max_bytes): not exact")
    gc.collect()
    tracemalloc.start()
    model.conditional_marginals(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return best, P, peak


# -- Peers ----------------------------------------------------------------------------------------


class PyAgrumPeer:
    name, module = "pyAgrum", "pyagrum"

    def __init__(self, model):
        import pyagrum as gum

        n = model.n_variables
        self.names = [f"x{i}" for i in range(n)]
        mrf = gum.MarkovRandomField()
        for i, K in enumerate(model.n_states):
            mrf.add(gum.LabelizedVariable(self.names[i], self.names[i], int(K)))
        pair = {c: t.copy() for c, t in potentials(model) if len(c) == 2}
        if any(len(c) > 2 for c, _ in potentials(model)):
            raise NotImplementedError("pairwise models only")
        # One factor per edge: fold each node potential into an edge of the node.
        for c, t in potentials(model):
            if len(c) == 1:
                i = c[0]
                e = next(e for e in pair if i in e)
                pair[e] = pair[e] * (t[:, None] if e[0] == i else t[None, :])
        for e, t in pair.items():
            # fillWith runs over the first variable fastest: Fortran order of the (e0, e1) table.
            mrf.addFactor([self.names[v] for v in e]).fillWith(t.ravel(order="F").tolist())
        self.ie = gum.ShaferShenoyMRFInference(mrf)
        self.ie.makeInference()  # compile the junction tree once, untimed
        self.observed = set()
        self.threads = self.ie.getNumberOfThreads()

    def row(self, x, out):
        """Posteriors of the missing variables of ``x`` into ``out[j, :K]``."""
        obs = {self.names[j]: int(s) for j, s in enumerate(x) if s == s}
        keys = set(obs)
        for name in self.observed - keys:
            self.ie.eraseEvidence(name)
        self.ie.updateEvidence(obs)
        self.observed = keys
        self.ie.makeInference()
        for j in np.flatnonzero(np.isnan(x)):
            p = self.ie.posterior(self.names[j]).toarray()
            out[j, : len(p)] = p


class PgmpyPeer:
    name, module = "pgmpy", "pgmpy"

    def __init__(self, model):
        logging.getLogger("pgmpy").setLevel(logging.ERROR)
        from pgmpy.factors.discrete import DiscreteFactor
        from pgmpy.inference import VariableElimination
        from pgmpy.models import DiscreteMarkovNetwork

        self.names = [f"x{i}" for i in range(model.n_variables)]
        net = DiscreteMarkovNetwork([(self.names[i], self.names[j]) for i, j in model.graph.edges])
        net.add_nodes_from(self.names)
        K = model.n_states
        for c, t in potentials(model):
            net.add_factors(DiscreteFactor([self.names[i] for i in c], [int(K[i]) for i in c], t.ravel()))
        self.ve = VariableElimination(net)

    def row(self, x, out):
        obs = {self.names[j]: int(s) for j, s in enumerate(x) if s == s}
        for j in np.flatnonzero(np.isnan(x)):
            f = self.ve.query([self.names[j]], evidence=obs, show_progress=False)
            out[j, : f.values.size] = f.values / f.values.sum()


PEERS = [PyAgrumPeer, PgmpyPeer]


def run_peer(peer, X, P, budget, min_rows):
    """Rows per second over the rows done within ``budget`` s (at least ``min_rows``), the number
    of rows done, and the largest absolute difference from skmrf's marginals ``P`` on them."""
    out = np.zeros(P.shape[1:])
    diff, done = 0.0, 0
    t = time.perf_counter()
    for r in range(len(X)):
        out[:] = 0.0
        peer.row(X[r], out)
        miss = np.isnan(X[r])
        diff = max(diff, float(np.abs(out[miss] - P[r, miss]).max(initial=0.0)))
        done += 1
        if done >= min_rows and time.perf_counter() - t > budget:
            break
    return done / (time.perf_counter() - t), done, diff


# -- Parts ----------------------------------------------------------------------------------------


def part_compare(args, argv):
    warnings.filterwarnings("ignore", category=FutureWarning)
    out = _Tee(os.path.join(RESULTS, "queries.txt"))
    source = _header(out, argv, "queries.py compare: conditional marginals, skmrf against peers")
    available = []
    for peer in PEERS:
        try:
            __import__(peer.module)
            available.append(peer)
        except ImportError:
            out(f"# [skip] {peer.name} is not installed (pip install {peer.module})")
    out(
        f"# {args.rows} evidence rows per case (Gibbs draws, 200 sweeps, seed 1); skmrf best of {args.repeat}; "
        f"peers: as many rows as fit in {args.peer_budget:g} s (at least {args.min_peer_rows})"
    )
    out()
    head = f"{'J':>3} {'pattern':>11} {'miss/row':>8} {'max comp':>8} {'skmrf rows/s':>12} {'peak MiB':>8}"
    for peer in available:
        head += f" {peer.name + ' rows/s':>14} {'rows':>5} {'ratio':>8} {'max |diff|':>10}"
    out(head)
    out("-" * len(head))
    threads = None
    for J in args.sizes:
        model = grid_model(J)
        S = draw_rows(model, args.rows, seed=1)
        for p_i, pattern in enumerate(args.patterns):
            X = hide(S, pattern, J, np.random.default_rng(100 * J + p_i))
            miss, largest = component_stats(model, X)
            t_ours, P, peak = time_skmrf(model, X, args.repeat)
            ours = len(X) / t_ours
            line = f"{J:>3} {pattern:>11} {miss:>8.1f} {largest:>8d} {ours:>12.1f} {peak / 2**20:>8.1f}"
            for cls in available:
                try:
                    peer = cls(model)
                    if cls is PyAgrumPeer:
                        threads = peer.threads
                    rate, done, diff = run_peer(peer, X, P, args.peer_budget, args.min_peer_rows)
                except Exception as exc:  # a peer's failure must not stop the others
                    print(f"[skip] {cls.name} failed at J={J} {pattern}: {type(exc).__name__}: {exc}")
                    line += f" {'failed':>14} {'':>5} {'':>8} {'':>10}"
                    continue
                flag = "" if diff < 1e-9 else " !"
                line += f" {rate:>14.2f} {done:>5d} {ours / rate:>8.1f} {diff:>10.1e}{flag}"
                del peer
                gc.collect()
            out(line)
    out()
    _footer(out, source)
    out(f"# process max RSS {peak_rss_mib():.0f} MiB (peers included)")
    out("# miss/row: mean missing entries per row; max comp: variables of the largest component of")
    out("# missing entries over all rows. peak MiB: tracemalloc peak of one skmrf call on all rows.")
    out("# rows: rows the peer ran in its budget; ratio = skmrf rows/s / peer rows/s (above 1: skmrf")
    out("# faster); max |diff|: largest |peer - skmrf| over the marginals of the rows the peer ran")
    out("# ('!' if above 1e-9).")
    if threads is not None:
        out(f"# pyAgrum ran with its default {threads} threads; skmrf and pgmpy on one core.")
    if args.save:
        out.save()


CROSSOVER_WORKLOADS = [
    # (J, n_states, fraction hidden)
    (10, 2, 0.4),
    (10, 2, 0.5),
    (10, 2, 0.6),
    (16, 2, 0.4),
    (16, 2, 0.5),
    (16, 2, 0.6),
    (10, 3, 0.4),
    (10, 3, 0.5),
]


def part_crossover(args, argv):
    out = _Tee(os.path.join(RESULTS, "queries_crossover.txt"))
    source = _header(out, argv, "queries.py crossover: enumerate or calibrate, by ENUMERATE_MAX_STATES")
    original = queries_module.ENUMERATE_MAX_STATES
    out(
        f"# {args.rows} rows per workload (Gibbs draws, seed 1), entries hidden at random; "
        f"best of {args.repeat}; ENUMERATE_MAX_STATES = 2**k (module value {original})"
    )
    out()
    out("# Components of missing entries per workload, by log2 of their joint states:")
    hist_head = f"{'workload':>16} " + " ".join(
        f"{b:>7}" for b in ["<=2", "<=4", "<=6", "<=8", "<=10", "<=12", "<=14", "<=16", ">16"]
    )
    out(hist_head)
    cases = []
    for J, K, frac in CROSSOVER_WORKLOADS[:2] if args.quick else CROSSOVER_WORKLOADS:
        model = grid_model(J, K)
        S = draw_rows(model, args.rows, seed=1)
        X = S.copy()
        X[np.random.default_rng(7).random(X.shape) < frac] = np.nan
        name = f"{J}x{J} K={K} {int(100 * frac)}%"
        cases.append((name, model, X))
        out(f"{name:>16} " + " ".join(f"{c:>7d}" for c in component_histogram(model, X)))
    out()
    head = f"{'workload':>16} " + " ".join(f"{'k=' + str(k):>8}" for k in args.ks) + f" {'best k':>6}"
    times = np.zeros((len(cases), len(args.ks)))
    peaks = np.zeros_like(times)
    try:
        for i, (name, model, X) in enumerate(cases):
            ref = None
            for j, k in enumerate(args.ks):
                queries_module.ENUMERATE_MAX_STATES = 2**k
                t, P, peak = time_skmrf(model, X, args.repeat)
                times[i, j], peaks[i, j] = t, peak
                if ref is None:
                    ref = P
                elif np.abs(P - ref).max() > 1e-9:
                    print(f"[warn] {name} k={k}: marginals differ from k={args.ks[0]} by {np.abs(P - ref).max():.1e}")
            print(f"  {name}: " + " ".join(f"{x:.3f}" for x in times[i]), flush=True)
    finally:
        queries_module.ENUMERATE_MAX_STATES = original
    out("# Time of conditional_marginals on all rows (s), best of the repeats:")
    out(head)
    out("-" * len(head))
    for i, (name, _, _) in enumerate(cases):
        out(f"{name:>16} " + " ".join(f"{x:>8.3f}" for x in times[i]) + f" {args.ks[int(np.argmin(times[i]))]:>6}")
    out("-" * len(head))
    rel = times / times.min(axis=1, keepdims=True)
    out(f"{'total s':>16} " + " ".join(f"{x:>8.3f}" for x in times.sum(axis=0)))
    out(f"{'geomean vs best':>16} " + " ".join(f"{x:>8.3f}" for x in np.exp(np.log(rel).mean(axis=0))))
    out(f"{'worst vs best':>16} " + " ".join(f"{x:>8.3f}" for x in rel.max(axis=0)))
    out()
    out("# Peak traced memory of one call (MiB):")
    out(head[:-7])
    out("-" * len(head[:-7]))
    for i, (name, _, _) in enumerate(cases):
        out(f"{name:>16} " + " ".join(f"{x / 2**20:>8.1f}" for x in peaks[i]))
    out()
    _footer(out, source)
    out("# 'vs best': time / the fastest k's time of the same workload (1 = fastest).")
    if args.save:
        out.save()


def main():
    argv = sys.argv[1:]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", nargs="?", default="compare", choices=["compare", "crossover"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 10, 12, 14, 16])
    parser.add_argument("--patterns", nargs="+", default=["random30", "bottom-half"])
    parser.add_argument("--rows", type=int, default=1000, help="evidence rows (all of them for skmrf)")
    parser.add_argument("--peer-budget", type=float, default=60.0, help="seconds per peer, size and pattern")
    parser.add_argument("--min-peer-rows", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many skmrf calls")
    parser.add_argument("--ks", type=int, nargs="+", default=list(range(2, 17, 2)), help="crossover: 2**k")
    parser.add_argument("--no-save", dest="save", action="store_false", help="print only")
    parser.add_argument("--quick", action="store_true", help="J = 6, 8, 50 rows, peers 1 s, one call; print only")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.rows, args.peer_budget, args.min_peer_rows, args.repeat = [6, 8], 50, 1.0, 2, 1
        args.ks, args.save = [2, 8, 16], False
    (part_compare if args.part == "compare" else part_crossover)(args, argv)


if __name__ == "__main__":
    main()
