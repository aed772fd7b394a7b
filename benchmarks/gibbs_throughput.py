"""Gibbs throughput (single-site updates per second), binary and categorical pairwise models.

A 100 x 100 grid (10,000 variables, 19,800 edges) with 1,000 chains, on one core.

Binary (K = 2): ``GibbsSampler.run`` (binary pairwise fast path, including the conversion
to and from its layout), the ``BinaryGibbsKernel`` itself (float32 states, colour classes
as contiguous row blocks, ``u * (1 + exp(-f)) < 1`` written straight into the state rows;
what ``MCMCMaxLikelihood`` runs), and the general path. Target: 1e8 updates/s.

Categorical (Potts-type, K = 3, 5, 21; parameters uniform on [-0.5, 0.5]):
``GibbsSampler.run`` (which picks ``CategoricalGibbsKernel``), the kernel's own ``run`` in
place, and the general path (``GeneralGibbsKernel``, what these models took before) on the
same model and chains, as a ratio. For K <= 5 the row "one-hot sparse product only" times
the alternative formulation (conditional logits as one sparse product of the colour
class's coupling rows with one-hot float32 states, as the binary kernel does); it is the
product alone, before any exp or draw, so a lower bound on that kernel's cost. Targets
(issue #13): at least 5e7 updates/s at K = 3 and 1e7 at K = 21 on one core (adabmDCA 2.0
reports about 6e7 on a GPU at K = 21).

Complete graphs at K = 21 (issue #26 item 5: the Potts models of direct coupling analysis on
protein alignments, n = 75 and 200 columns, 4096 chains = one MCMC chain block): the table path
(``CategoricalGibbsKernel(..., dense=False)``, the code every categorical model ran before the
dense path, bit for bit) against the dense path (``dense="auto"`` picks it there), same model,
same chains, same run; fields uniform on [-1, 1] and couplings uniform on [-s, s] with s = 0.1
and 0.5 (the table path's float32 product underflows when the couplings of ~n neighbours add
up to more than ~44 nats, and then goes through float64 for those sites: its rate at s = 0.5
is measured on fewer chains). "2 processes" runs two blocks of 4096 chains through
``run_chains`` with a two-worker joblib pool (wall time: meaningful only on a quiet machine).
Rates here are per second of CPU time of this process (``time.process_time``), which a shared
machine disturbs less than wall time; the load average is printed beside them.
``--dense-crossover`` prints the measurements behind ``dense="auto"`` instead.

Memory ("mem MiB") is the peak of the memory allocated (``tracemalloc``, numpy arrays
included) while a fresh ``GibbsSampler`` is built and runs one sweep from the external
start states: tables, buffers, the internal and returned states (the start states, 1,000 x
10,000 int64 = 76 MiB, are not counted).

Run: ``python benchmarks/gibbs_throughput.py [--rows 100] [--chains 1000] [--sweeps 20] [--complete 75 200]
[--complete-only] [--dense-crossover] [--quick]``. ``--quick``: a 20 x 20 grid, 100 chains, 2 sweeps,
K = 3 only, one complete graph of 75 sites with 256 chains (a smoke run).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from _harness import best_of, header, load_average, peak_rss_mib  # noqa: E402
from sklearn.utils.parallel import Parallel  # noqa: E402

from skmrf import grid_graph  # noqa: E402
from skmrf.inference import CategoricalGibbsKernel, run_chains  # noqa: E402
from skmrf.inference._gibbs import BinaryGibbsKernel, GibbsSampler, colour_classes  # noqa: E402
from skmrf.model import DiscreteMRF, ising_to_binary  # noqa: E402

TARGETS = {2: 1e8, 3: 5e7, 21: 1e7}


def peak_mib(run):
    """Peak memory allocated (numpy arrays included) while ``run()`` builds a sampler and sweeps once, MiB.

    A separate, untimed pass: ``tracemalloc`` slows allocation.
    """
    gc.collect()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def timed(run, n_sweeps, work_per_sweep, repeats, clock=time.perf_counter):
    """Best of ``repeats``: (updates per second, seconds); ``clock=time.process_time`` for CPU seconds."""
    cpu, wall, _ = best_of(lambda: run(n_sweeps), repeats, quiet=False)
    best = cpu if clock is time.process_time else wall
    return work_per_sweep * n_sweeps / best, best


def general_path(model, start, sweeps, work, repeats, rng):
    """The general path (``GeneralGibbsKernel``) on the same model and chains: (rate, s, MiB)."""
    general = GibbsSampler(model, kernel="general")
    rate, t = timed(lambda s: general.run(start, s, rng), sweeps, work, repeats)
    return rate, t, peak_mib(lambda: GibbsSampler(model, kernel="general").run(start, 1, rng))


class Table:
    def __init__(self):
        cols = f"{'sweeps':>6} {'time s':>8} {'updates/s':>10} {'vs general':>10} {'mem MiB':>8}"
        print(f"  {'K':>2} {'path':<44} " + cols)

    def row(self, k, path, sweeps, t, rate, general, mem):
        ratio = f"{rate / general:9.1f}x" if general else f"{'':>10}"
        print(f"  {k:>2} {path:<44} {sweeps:>6} {t:8.3f} {rate:10.3g} {ratio} {mem:8.0f}", flush=True)


def binary_rows(model, m, sweeps, repeats, table, rng):
    n = model.n_variables
    lay = model.layout
    sizes = np.array([len(c) for c in lay.cliques])
    node_pos = lay.block_offsets[np.flatnonzero(sizes == 1)]
    eb = np.flatnonzero(sizes == 2)
    edges = np.array([lay.cliques[k] for k in eb])
    # A model inside the box set of the paper: |J| <= 0.2 (4 tanh 0.2 < 1), fields in [-0.5, 0.5].
    h, J = rng.uniform(-0.5, 0.5, n), rng.uniform(-0.2, 0.2, len(edges))
    tu, tp = ising_to_binary(h, J, edges, n)
    theta = np.zeros(model.n_params)
    theta[node_pos], theta[lay.block_offsets[eb]] = tu, tp
    model.theta = theta
    work = n * m
    start = GibbsSampler(model, kernel="general").random_states(m, rng)
    gen_sweeps = max(1, sweeps // 10)
    slow, t_gen, mem_gen = general_path(model, start, gen_sweeps, work, repeats, rng)
    sampler = GibbsSampler(model)  # binary pairwise: the BinaryGibbsKernel fast path
    public, t_pub = timed(lambda k: sampler.run(start, k, rng), sweeps, work, repeats)
    kernel = BinaryGibbsKernel(tu, tp, edges, colour_classes(model.graph))
    S = kernel.to_internal(start)
    raw, t_raw = timed(lambda k: kernel.run(S, k, rng), sweeps, work, repeats)
    mem = peak_mib(lambda: GibbsSampler(model).run(start, 1, rng))
    table.row(2, "GibbsSampler.run (binary kernel, with layout)", sweeps, t_pub, public, slow, mem)
    table.row(2, "BinaryGibbsKernel.run (in place)", sweeps, t_raw, raw, slow, mem)
    table.row(2, "general path", gen_sweeps, t_gen, slow, slow, mem_gen)
    return raw


def one_hot_product(model, kernel, m, rng):
    """Seconds per sweep of the one-hot formulation's sparse products (both colour classes)."""
    n, k1 = model.n_variables, int(model.n_states.max()) - 1
    edges = kernel.edges
    O = np.zeros((n * k1, m), dtype=np.float32)
    x = rng.integers(0, k1 + 1, (n, m))
    for s in range(1, k1 + 1):
        O[np.arange(n) * k1 + s - 1] = x == s
    mats = []
    for colour in kernel.colours:
        pos = np.full(n, -1)
        pos[colour] = np.arange(len(colour))
        d = np.r_[edges, edges[:, ::-1]]
        d = d[pos[d[:, 0]] >= 0]
        a, b = np.meshgrid(np.arange(k1), np.arange(k1), indexing="ij")
        rows = (pos[d[:, 0], None, None] * k1 + a).ravel()
        cols = (d[:, 1, None, None] * k1 + b).ravel()
        vals = rng.uniform(-0.5, 0.5, rows.size).astype(np.float32)
        mats.append(sp.csr_matrix((vals, (rows, cols)), shape=(len(colour) * k1, n * k1)))
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for W in mats:
            W @ O
        best = min(best, time.perf_counter() - t0)
    return best


def categorical_rows(n_side, k, m, sweeps, repeats, table, rng):
    model = DiscreteMRF(grid_graph(n_side, n_side), k)
    model.theta = rng.uniform(-0.5, 0.5, model.n_params)
    n = model.n_variables
    work = n * m
    start = GibbsSampler(model, kernel="general").random_states(m, rng)
    slow, t_gen, mem_gen = general_path(model, start, 1, work, 1, rng)
    t0 = time.perf_counter()
    sampler = GibbsSampler(model)
    kernel = sampler.kernel
    kernel._table(1.0)
    t_build = time.perf_counter() - t0
    assert sampler.kernel_name == "categorical"
    public, t_pub = timed(lambda s: sampler.run(start, s, rng), sweeps, work, repeats)
    S = kernel.to_internal(start)
    raw, t_raw = timed(lambda s: kernel.run(S, s, rng), sweeps, work, repeats)
    mem = peak_mib(lambda: GibbsSampler(model).run(start, 1, rng))
    table.row(k, "GibbsSampler.run (categorical, with layout)", sweeps, t_pub, public, slow, mem)
    table.row(k, f"CategoricalGibbsKernel.run (in place, g={kernel.group})", sweeps, t_raw, raw, slow, mem)
    if k <= 5:
        t_hot = one_hot_product(model, kernel, m, rng)
        table.row(k, "one-hot sparse product only (lower bound)", 1, t_hot, work / t_hot, slow, float("nan"))
    table.row(k, "general path (GeneralGibbsKernel)", 1, t_gen, slow, slow, mem_gen)
    print(f"     (kernel built in {t_build:.2f} s; table {kernel._table(1.0).nbytes / 2**20:.0f} MiB)", flush=True)
    return raw


def complete_model(n, k, scale, rng):
    """A Potts model on the complete graph: fields uniform on [-1, 1], couplings on [-scale, scale]."""
    model = DiscreteMRF("complete", k, n_variables=n)
    sizes = np.array([len(c) for c in model.layout.cliques])
    widths = np.asarray(model.layout.block_sizes)
    pair = np.repeat(sizes == 2, widths)
    theta = rng.uniform(-1.0, 1.0, model.n_params)
    theta[pair] *= scale
    model.theta = theta
    return model


def _complete_row(scale, path, chains, sweeps, seconds, rate, ratio, mem):
    ratio = f"{ratio:9.2f}x" if ratio else f"{'':>10}"
    mem = f"{mem:8.0f}" if mem else f"{'':>8}"
    print(f"  21 {scale:<6} {path:<36} {chains:>6} {sweeps:>6} {seconds:8.3f} {rate:10.3g} {ratio} {mem}", flush=True)


def _sweeps_of(kernel, S, rng):
    """``run(n_sweeps)`` for :func:`timed`: ``kernel`` advances the chains ``S`` in place."""
    return lambda n_sweeps: kernel.run(S, n_sweeps, rng)


def _built_and_swept(model, colours, start, dense, rng):
    """``run()`` for :func:`peak_mib`: build a kernel and sweep once from the external ``start``."""

    def run():
        kernel = CategoricalGibbsKernel.from_layout(model.layout, model.theta, colours, dense=dense)
        kernel.run(kernel.to_internal(start), 1, rng)

    return run


def complete_rows(n, m, sweeps, repeats, rng):
    """Table path (before) against the dense path (after) on a complete graph at K = 21: the dense rate."""
    print(f"  complete graph, n = {n}, K = 21, {m} chains; load average {load_average()}")
    reached = None
    for scale in (0.1, 0.5):
        model = complete_model(n, 21, scale, rng)
        colours = colour_classes(model.graph)
        start = np.floor(rng.random((m, n)) * 21).astype(np.int64)
        t0 = time.process_time()
        dense = CategoricalGibbsKernel.from_layout(model.layout, model.theta, colours)
        dense._dense._tables()  # built at the first sweep otherwise
        t_build = time.process_time() - t0
        assert dense.dense
        table = CategoricalGibbsKernel.from_layout(model.layout, model.theta, colours, dense=False)
        # At s = 0.5 the table path goes through float64 for most sites: a few chains suffice.
        m_tab = m if scale <= 0.1 else 64
        S_tab = table.to_internal(start[:m_tab])
        r_tab, t_tab = timed(_sweeps_of(table, S_tab, rng), 1, n * m_tab, 1, time.process_time)
        r_dense, t_dense = timed(
            _sweeps_of(dense, dense.to_internal(start), rng), sweeps, n * m, repeats, time.process_time
        )
        mem_tab = peak_mib(_built_and_swept(model, colours, start[:m_tab], False, rng))
        mem = peak_mib(_built_and_swept(model, colours, start, "auto", rng))
        _complete_row(scale, "table path (before, dense=False)", m_tab, 1, t_tab, r_tab, 1.0, mem_tab)
        _complete_row(scale, "dense path (after)", m, sweeps, t_dense, r_dense, r_dense / r_tab, mem)
        if scale <= 0.1:
            reached = r_dense
            starts = [dense.to_internal(start), dense.to_internal(start[::-1])]
            with Parallel(n_jobs=2) as parallel:
                run_chains(dense, [b.copy() for b in starts], 1, rng.spawn(2), parallel=parallel)  # warm the pool
                t0 = time.perf_counter()
                run_chains(dense, starts, sweeps, rng.spawn(2), parallel=parallel)
                t2 = time.perf_counter() - t0
            _complete_row(
                scale, "dense path, 2 processes (wall time)", 2 * m, sweeps, t2, 2 * n * m * sweeps / t2, 0, 0
            )
        table_mib = sum(T.nbytes + sum(d.nbytes for d in D) for T, D in dense._dense._tables()) / 2**20
        block = dense._dense.block
        print(f"     (dense kernel built in {t_build:.2f} s CPU; tables {table_mib:.0f} MiB; blocks of {block} sites)")
    return reached


def complete_table(sizes, m, repeats, rng):
    """The complete-graph rows for every ``n`` in ``sizes`` and the verdicts on issue #26's target."""
    if not sizes:
        return
    print("Complete graphs (CPU time per run; ratios against the table path)")
    cols = f"{'chains':>6} {'sweeps':>6} {'time s':>8} {'updates/s':>10} {'vs table':>10} {'mem MiB':>8}"
    print(f"  {'K':>2} {'scale':<6} {'path':<36} " + cols)
    complete = {n: complete_rows(n, m, max(1, round(150 / n)), repeats, rng) for n in sizes}
    for n, rate in complete.items():
        verdict = "met" if rate >= 3e7 else f"NOT met ({rate / 3e7:.2f} of it)"
        print(f"  complete n = {n}, K = 21: target 3e+07 site updates/s (issue #26): {verdict}")
    print(f"peak resident memory {peak_rss_mib():.0f} MiB; load average at end {load_average()}")


def dense_crossover(m=1000):
    """Dense / table rates (CPU time) on complete graphs and on graphs with half of all pairs as edges."""
    print(f"dense / table path, {m} chains, CPU time, couplings uniform on [-0.2, 0.2]; load average {load_average()}")
    cases = [(3, n, 1.0) for n in (5, 10, 20, 40, 75)] + [(5, n, 1.0) for n in (5, 10, 20, 40, 75)]
    cases += [(8, 20, 1.0), (8, 40, 1.0), (12, 20, 1.0), (12, 40, 1.0)]
    cases += [(21, n, 1.0) for n in (5, 10, 15, 20, 30, 40, 75)] + [(k, 75, 0.5) for k in (3, 5, 21)]
    for k, n, density in cases:
        g = nx.complete_graph(n) if density == 1.0 else nx.gnp_random_graph(n, density, seed=1)
        rng = np.random.default_rng(0)
        model = DiscreteMRF(list(g.edges()), k, n_variables=n)
        model.theta = rng.uniform(-0.2, 0.2, model.n_params)
        colours = colour_classes(model.graph)
        start = np.floor(rng.random((m, n)) * k).astype(np.int64)
        rates = {}
        for dense in (False, True):
            kernel = CategoricalGibbsKernel.from_layout(model.layout, model.theta, colours, dense=dense)
            S = kernel.to_internal(start)
            kernel.run(S, 1, rng)
            rates[dense] = timed(_sweeps_of(kernel, S, rng), 2, n * m, 3, time.process_time)[0]
        auto = "dense" if CategoricalGibbsKernel.from_layout(model.layout, model.theta, colours).dense else "table"
        print(
            f"  K={k:>2} n={n:>3} density={density:.2f}: table {rates[False]:.3g}/s dense {rates[True]:.3g}/s "
            f"dense/table {rates[True] / rates[False]:.2f}  auto: {auto}",
            flush=True,
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--chains", type=int, default=1000)
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--states", type=int, nargs="*", default=[3, 5, 21])
    ap.add_argument("--complete", type=int, nargs="*", default=[75, 200], help="complete-graph sizes at K = 21")
    ap.add_argument("--complete-chains", type=int, default=4096)
    ap.add_argument("--dense-crossover", action="store_true", help="print the measurements behind dense='auto'")
    ap.add_argument("--complete-only", action="store_true", help="only the complete-graph rows")
    ap.add_argument("--quick", action="store_true", help="20x20 grid, 100 chains, 2 sweeps, K = 3, complete n = 75")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.chains, args.sweeps, args.repeats = 20, 100, 2, 1
        args.states, args.complete, args.complete_chains = [3], [75], 256
    print(header("gibbs_throughput.py: Gibbs site updates per second, one thread", 1))
    if args.dense_crossover:
        dense_crossover()
        return
    if args.complete_only:
        complete_table(args.complete, args.complete_chains, args.repeats, np.random.default_rng(0))
        return
    n_side, m, sweeps = args.rows, args.chains, args.sweeps
    rng = np.random.default_rng(0)
    model = DiscreteMRF(grid_graph(n_side, n_side), 2)
    print(
        f"{n_side}x{n_side} grid: {model.n_variables} variables, {n_side * (n_side - 1) * 2} edges, {m} chains; "
        f"best of {args.repeats} (general path: one run); one thread; load average at start {load_average()}"
    )
    table = Table()
    reached = {2: binary_rows(model, m, sweeps, args.repeats, table, rng)}
    del model
    for k in args.states:
        # fewer sweeps as K grows: about the same time per row
        reached[k] = categorical_rows(n_side, k, m, max(2, round(sweeps * 3 / k)), args.repeats, table, rng)
    complete_table(args.complete, args.complete_chains, args.repeats, rng)
    for k, target in TARGETS.items():
        if k in reached:
            verdict = "met" if reached[k] >= target else f"NOT met ({reached[k] / target:.2f} of it)"
            print(f"  K = {k}: target {target:.0e} site updates/s on one core: {verdict}")
    print(f"peak resident memory of the whole run {peak_rss_mib():.0f} MiB; load average at end {load_average()}")


if __name__ == "__main__":
    main()
