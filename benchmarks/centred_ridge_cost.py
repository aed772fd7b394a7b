"""What the centred default ridge costs: fit time of ``alpha="auto"`` against ``alpha=1/N`` on theta.

``alpha="auto"`` penalises the centred parameters (``skmrf._penalty.CentredRidge``, #39); a
number ``1 / N`` is the same weight on ``theta``, the default before. Same data, same session,
side by side, each fit run ``--repeat`` times (the best time kept):

- binarised digits on the 8 x 8 grid (1797 rows);
- Gibbs samples of the 64 x 64 Ising torus at K = 0.4407 (2000 rows, 50 sweeps: not at equilibrium, a
  timing input only);
- coin flips on a 150 x 150 grid (2000 rows; the optimum is near zero, the problem ill-posed);
- a synthetic 21-state Potts alignment, 1000 sequences x 30 columns, complete graph (PL only).

Usage::

    python benchmarks/centred_ridge_cost.py [--repeat 2] [--out benchmarks/results/centred_ridge_cost.txt]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits

import skmrf
from skmrf import LAPEstimator, PseudoLikelihoodEstimator
from skmrf.datasets import make_ising_torus
from skmrf.protein import make_synthetic_alignment


def data_sets():
    digits = (load_digits().data >= 8).astype(np.int8)
    ising = make_ising_torus(64, 0.4407)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 50 sweeps do not mix at K_c; the rows are a timing input
        ising_rows = ising.sample(2000, random_state=0, n_sweeps=50)
    coins = (np.random.default_rng(0).random((2000, 150 * 150)) < 0.5).astype(np.int8)
    potts = make_synthetic_alignment(n_sequences=1000, n_columns=30, n_contacts=30, coupling_scale=0.5, random_state=0)
    return [
        ("digits 8x8", digits, "grid:8x8", 2, True),
        ("Ising 64x64 K_c", ising_rows, ising.graph, 2, True),
        ("coins 150x150", coins, "grid:150x150", 2, True),
        ("Potts 30 x 21", potts.X, "complete", 21, False),
    ]


def best_time(cls, params, X, repeat):
    times = []
    for _ in range(repeat):
        est = cls(**params)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X)
        times.append(time.perf_counter() - t)
    return min(times), est


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    load = os.getloadavg()
    out(f"# python benchmarks/centred_ridge_cost.py --repeat {a.repeat}")
    out(f"# skmrf {skmrf.__version__}, {os.cpu_count()} CPUs, load average at start {load[0]:.2f} {load[1]:.2f}")
    out(f"{'data':<16} {'estimator':<10} {'auto s':>8} {'iter':>5} {'1/N s':>8} {'iter':>5} {'ratio':>6}")
    for name, X, graph, k, with_lap in data_sets():
        kinds = [("PL", PseudoLikelihoodEstimator)] + ([("LAP", LAPEstimator)] if with_lap else [])
        for label, cls in kinds:
            row = []
            for alpha in ("auto", 1.0 / len(X)):
                params = dict(graph=graph, n_states=k, alpha=alpha, score_method="pseudo")
                seconds, est = best_time(cls, params, X, a.repeat)
                row.append((seconds, getattr(est, "n_iter_", "-")))
            (t_auto, i_auto), (t_inv, i_inv) = row
            ratio = t_auto / t_inv
            out(f"{name:<16} {label:<10} {t_auto:>8.2f} {i_auto!s:>5} {t_inv:>8.2f} {i_inv!s:>5} {ratio:>6.2f}")
    load = os.getloadavg()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out(f"# load average at end {load[0]:.2f}; peak RSS {peak:.0f} MiB")
    if a.out:
        with open(a.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
