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
    python benchmarks/centred_ridge_cost.py --quick   # one fit each, smaller data, one BLAS thread
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _harness import best_of, header, limit_blas, load_average, peak_rss_mib
from sklearn.datasets import load_digits

from skmrf import LAPEstimator, PseudoLikelihoodEstimator
from skmrf.datasets import make_ising_torus
from skmrf.protein import make_synthetic_alignment


def data_sets(quick=False):
    """The four data sets; ``quick``: the Ising torus 16 x 16, coins 20 x 20, Potts 300 x 10."""
    side, coin, (n_seq, n_col) = (16, 20, (300, 10)) if quick else (64, 150, (1000, 30))
    digits = (load_digits().data >= 8).astype(np.int8)
    ising = make_ising_torus(side, 0.4407)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 50 sweeps do not mix at K_c; the rows are a timing input
        ising_rows = ising.sample(2000, random_state=0, n_sweeps=50)
    coins = (np.random.default_rng(0).random((2000, coin * coin)) < 0.5).astype(np.int8)
    potts = make_synthetic_alignment(
        n_sequences=n_seq, n_columns=n_col, n_contacts=n_col, coupling_scale=0.5, random_state=0
    )
    return [
        ("digits 8x8", digits, "grid:8x8", 2, True),
        (f"Ising {side}x{side} K_c", ising_rows, ising.graph, 2, True),
        (f"coins {coin}x{coin}", coins, f"grid:{coin}x{coin}", 2, True),
        (f"Potts {n_col} x 21", potts.X, "complete", 21, False),
    ]


def best_time(cls, params, X, repeat):
    """Best wall seconds of ``repeat`` fits (warnings hidden), and the last fitted estimator."""
    _, wall, est = best_of(lambda: cls(**params).fit(X), repeat)
    return wall, est


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--out", default=None)
    p.add_argument("--quick", action="store_true", help="one fit each on smaller data; print only unless --out")
    a = p.parse_args()
    if a.quick:
        a.repeat = 1
        limit_blas(1)  # a loaded machine's second BLAS thread slows the small products
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    out(f"# python benchmarks/centred_ridge_cost.py --repeat {a.repeat}" + (" --quick" if a.quick else ""))
    out(
        header(
            "centred_ridge_cost.py: fit seconds of alpha='auto' against alpha=1/N, best of --repeat",
            1 if a.quick else None,
        )
    )
    out(f"{'data':<16} {'estimator':<10} {'auto s':>8} {'iter':>5} {'1/N s':>8} {'iter':>5} {'ratio':>6}")
    for name, X, graph, k, with_lap in data_sets(a.quick):
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
    out(f"# load average at end {load_average()}; peak RSS {peak_rss_mib():.0f} MiB")
    if a.out:
        with open(a.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
