"""Accuracy and cost of the AIS estimate of log Z used by ``score_method="ais"``.

Random binary J x J grids (parameters uniform on [-1, 1], as in the LAP
paper's experiments) and a 3-state grid: the AIS estimate with the default
100 chains against the junction tree where it fits (J <= 16), for several
numbers of annealing steps; the error is in nats of ``log Z`` (so of the
mean log-likelihood per row), ``z`` is the error over the reported standard
error. The 100 x 100 grid has no exact value: the spread of the estimate
across steps and its standard error show how far to trust it.

Usage::

    python benchmarks/ais_log_partition.py [--jmax 100]
"""

from __future__ import annotations

import argparse
import time

from skmrf.datasets import make_random_mrf
from skmrf.exceptions import TreewidthError
from skmrf.graphs import grid_graph, resolve_graph
from skmrf.inference import annealed_importance_sampling


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jmax", type=int, default=100)
    args = ap.parse_args()
    head = f"{'grid':>9} {'K':>2} {'steps':>6} {'log Z exact':>12} {'AIS':>12} {'error':>8} {'std err':>8}"
    print(head + f" {'z':>6} {'s':>7}")
    for J, K in [(8, 2), (16, 2), (8, 3), (args.jmax, 2)]:
        model = make_random_mrf(resolve_graph(grid_graph(J, J), J * J), K, 1.0, random_state=J)
        try:
            exact = model.log_partition()
        except TreewidthError:
            exact = None
        for steps in (100, 1000, 3000):
            t = time.perf_counter()
            res = annealed_importance_sampling(model, 100, steps, random_state=0)
            dt = time.perf_counter() - t
            if exact is None:
                cols = f"{'-':>12} {res.log_z:>12.3f} {'-':>8} {res.std_err:>8.4f} {'-':>6}"
            else:
                err = res.log_z - exact
                cols = f"{exact:>12.3f} {res.log_z:>12.3f} {err:>8.4f} {res.std_err:>8.4f} {err / res.std_err:>6.2f}"
            print(f"{J:>4}x{J:<4} {K:>2} {steps:>6} {cols} {dt:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
