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

Memory ("mem MiB") is the peak of the memory allocated (``tracemalloc``, numpy arrays
included) while a fresh ``GibbsSampler`` is built and runs one sweep from the external
start states: tables, buffers, the internal and returned states (the start states, 1,000 x
10,000 int64 = 76 MiB, are not counted).

Run: ``python benchmarks/gibbs_throughput.py [--rows 100] [--chains 1000] [--sweeps 20]``
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from skmrf import grid_graph  # noqa: E402
from skmrf.inference.gibbs import BinaryGibbsKernel, GibbsSampler, colour_classes  # noqa: E402
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


def timed(run, n_sweeps, work_per_sweep, repeats):
    """Best of ``repeats``: (updates per second, seconds)."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(n_sweeps)
        best = min(best, time.perf_counter() - t0)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--chains", type=int, default=1000)
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--states", type=int, nargs="*", default=[3, 5, 21])
    args = ap.parse_args()
    n_side, m, sweeps = args.rows, args.chains, args.sweeps
    rng = np.random.default_rng(0)
    model = DiscreteMRF(grid_graph(n_side, n_side), 2)
    print(
        f"{n_side}x{n_side} grid: {model.n_variables} variables, {n_side * (n_side - 1) * 2} edges, {m} chains; "
        f"best of {args.repeats} (general path: one run); one thread; load average at start "
        + "/".join(f"{x:.2f}" for x in os.getloadavg())
    )
    table = Table()
    reached = {2: binary_rows(model, m, sweeps, args.repeats, table, rng)}
    del model
    for k in args.states:
        # fewer sweeps as K grows: about the same time per row
        reached[k] = categorical_rows(n_side, k, m, max(2, round(sweeps * 3 / k)), args.repeats, table, rng)
    for k, target in TARGETS.items():
        if k in reached:
            verdict = "met" if reached[k] >= target else f"NOT met ({reached[k] / target:.2f} of it)"
            print(f"  K = {k}: target {target:.0e} site updates/s on one core: {verdict}")
    print(
        f"peak resident memory of the whole run {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; "
        "load average at end " + "/".join(f"{x:.2f}" for x in os.getloadavg())
    )


if __name__ == "__main__":
    main()
