"""Bracketing ``log Z`` of fitted models: AIS (stochastic, low) and the tree bound (deterministic, high).

Models fitted with default parameters (``random_state=0``) by LAP, pseudo-likelihood and MCMC
maximum likelihood on scikit-learn's digits, binarised (pixel > 7), on the 8 x 8 grid and on
the 16 x 16 grid of the images upsampled by ``np.kron`` with a 2 x 2 block (a junction tree of
width about 22 here, which still calibrates in about half a second, so the exact ``log Z`` is
known). For each: the exact ``log Z`` (junction tree), the AIS estimate with its defaults (100
chains, 1000 steps) and its reported standard error, the tree-reweighted upper bound before and
after optimising the split (:func:`skmrf.inference.tree_upper_bound`, defaults), the width of
``[AIS, upper]`` and the time of each. AIS's expectation is a lower bound on ``Z`` (its log is
biased low); the tree bound holds deterministically.

Usage::

    python benchmarks/log_partition_bounds.py [--out benchmarks/results/log_partition_bounds.txt]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from sklearn.datasets import load_digits

from skmrf import LAPEstimator, MCMCMaxLikelihood, PseudoLikelihoodEstimator
from skmrf.inference import annealed_importance_sampling, tree_upper_bound


def _timed(f, *args, **kwargs):
    t = time.perf_counter()
    out = f(*args, **kwargs)
    return out, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="also write the table to this file")
    args = ap.parse_args()
    X8 = (load_digits().data > 7).astype(np.int64)
    X16 = np.array([np.kron(r.reshape(8, 8), np.ones((2, 2), dtype=np.int64)).ravel() for r in X8])
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    out(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; python {platform.python_version()}")
    out(f"digits: {X8.shape[0]} rows, binarised at > 7; 16x16 = np.kron(8x8 image, 2x2 ones)")
    out()
    head = (
        f"{'data':>5} {'estimator':<26} {'tw':>3} {'exact':>9} {'AIS':>9} {'AIS se':>7} {'tree init':>9} "
        f"{'tree opt':>9} {'opt-exact':>9} {'[AIS,up]':>8} {'iters':>5} {'t exact':>7} {'t AIS':>6} {'t tree':>6}"
    )
    out(head)
    out("-" * len(head))
    for label, X, graph in [("8x8", X8, "grid:8x8"), ("16x16", X16, "grid:16x16")]:
        for Est in (LAPEstimator, PseudoLikelihoodEstimator, MCMCMaxLikelihood):
            model = Est(graph, random_state=0).fit(X).model_
            exact, t_exact = _timed(model.log_partition)
            ais, t_ais = _timed(annealed_importance_sampling, model, random_state=0)
            tree, t_tree = _timed(tree_upper_bound, model, random_state=0)
            assert tree.bound >= exact - 1e-9, (Est.__name__, label, tree.bound, exact)
            out(
                f"{label:>5} {Est.__name__:<26} {model.treewidth:>3} {exact:>9.3f} {ais.log_z:>9.3f} "
                f"{ais.std_err:>7.3f} {tree.initial_bound:>9.3f} {tree.bound:>9.3f} {tree.bound - exact:>9.3f} "
                f"{tree.bound - ais.log_z:>8.3f} {tree.n_iter:>5} {t_exact:>7.2f} {t_ais:>6.2f} {t_tree:>6.2f}"
            )
    out()
    out(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    out("tw: treewidth of the junction tree; times in seconds; log Z in nats (a score error of the same size per row)")
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
