"""Gibbs throughput (single-site updates per second) for a binary pairwise model.

A 100 x 100 grid (10,000 binary variables, 19,800 edges) with 1,000 chains,
on one core: ``GibbsSampler.run`` (binary pairwise fast path, including the
conversion to and from its layout), the ``BinaryGibbsKernel`` itself (float32
states, colour classes as contiguous row blocks, ``u * (1 + exp(-f)) < 1``
written straight into the state rows; what ``MCMCMaxLikelihood`` runs), and
the general path that non-binary or higher-order models take. Target: 5e7
updates/s.

Run: ``python benchmarks/gibbs_throughput.py [--rows 100] [--chains 1000] [--sweeps 20]``
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from skmrf import grid_graph  # noqa: E402
from skmrf.inference.gibbs import BinaryGibbsKernel, GibbsSampler, colour_classes  # noqa: E402
from skmrf.model import DiscreteMRF  # noqa: E402
from skmrf.model.ising import ising_to_binary  # noqa: E402

TARGET = 5e7


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--chains", type=int, default=1000)
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    n_side, m, sweeps = args.rows, args.chains, args.sweeps
    model = DiscreteMRF(grid_graph(n_side, n_side), 2)
    n = model.n_variables
    lay = model.layout
    sizes = np.array([len(c) for c in lay.cliques])
    node_pos = lay.block_offsets[np.flatnonzero(sizes == 1)]
    eb = np.flatnonzero(sizes == 2)
    edges = np.array([lay.cliques[k] for k in eb])
    rng = np.random.default_rng(0)
    # A model inside the box set of the paper: |J| <= 0.2 (4 tanh 0.2 < 1), fields in [-0.5, 0.5].
    h, J = rng.uniform(-0.5, 0.5, n), rng.uniform(-0.2, 0.2, len(edges))
    tu, tp = ising_to_binary(h, J, edges, n)
    theta = np.zeros(model.n_params)
    theta[node_pos], theta[lay.block_offsets[eb]] = tu, tp
    model.theta = theta
    updates = n * m * sweeps
    print(
        f"{n_side}x{n_side} grid: {n} binary variables, {len(edges)} edges, {m} chains, {sweeps} sweeps "
        f"= {updates:.3g} site updates per run; best of {args.repeats}; one thread"
    )

    def timed(run, n_sweeps):
        best = np.inf
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            run(n_sweeps)
            best = min(best, time.perf_counter() - t0)
        return n * m * n_sweeps / best, best

    sampler = GibbsSampler(model)  # binary pairwise: the BinaryGibbsKernel fast path
    start = sampler.random_states(m, rng)
    public, t_pub = timed(lambda k: sampler.run(start, k, rng), sweeps)
    kernel = BinaryGibbsKernel(tu, tp, edges, colour_classes(model.graph))
    S = kernel.to_internal(start)
    raw, t_raw = timed(lambda k: kernel.run(S, k, rng), sweeps)
    general = GibbsSampler(model, kernel="general")  # the path every non-binary or higher-order model takes
    gen_sweeps = max(1, sweeps // 10)
    slow, t_gen = timed(lambda k: general.run(start, k, rng), gen_sweeps)
    print(f"  {'path':<44} {'time s':>8} {'updates/s':>11} {'vs general':>10}")
    print(f"  {'GibbsSampler.run (fast path, with layout)':<44} {t_pub:8.3f} {public:11.3g} {public / slow:9.1f}x")
    print(f"  {'BinaryGibbsKernel.run (in place)':<44} {t_raw:8.3f} {raw:11.3g} {raw / slow:9.1f}x")
    print(f"  {'general path (%d sweeps)' % gen_sweeps:<44} {t_gen:8.3f} {slow:11.3g} {1:9.1f}x")
    print(f"  target {TARGET:.0e} site updates/s on one core: {'met' if raw >= TARGET else 'NOT met'}")


if __name__ == "__main__":
    main()
