"""Fit times of the estimators that used to fit other estimators, for #25's before/after table.

Run it on two checkouts in one session (``PYTHONPATH`` decides which ``skmrf`` is timed),
alternately, and compare the minima; the calls use only parameters both APIs share.

    PYTHONPATH=/path/to/before python benchmarks/restructure_timings.py
    PYTHONPATH=/path/to/after  python benchmarks/restructure_timings.py

Each line: the best CPU time (``time.process_time``, less sensitive to the other processes on a
shared machine than wall time) and the best wall time of ``--repeat`` fits.
"""

import argparse
import os
import time
import warnings

import skmrf
from skmrf import MCMCMaxLikelihood, MetropolisHastingsMRF, MLEInducedLikelihood, grid_graph
from skmrf.datasets import sample_random_mrf


def best(fit, repeat):
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def cases():
    for side, rows in ((4, 300), (30, 500)):
        graph = grid_graph(side, side)
        X, _ = sample_random_mrf(graph, rows, method="gibbs", random_state=0)
        yield (
            f"MCMCMaxLikelihood(score_method='pseudo') {side}x{side} n={rows}",
            lambda g=graph, X=X: MCMCMaxLikelihood(g, score_method="pseudo", random_state=0).fit(X),
        )
        yield f"MLEInducedLikelihood {side}x{side} n={rows}", lambda g=graph, X=X: MLEInducedLikelihood(g).fit(X)
        if side == 4:
            yield (
                f"MetropolisHastingsMRF (mle_induced, 2000 steps) {side}x{side} n={rows}",
                lambda g=graph, X=X: MetropolisHastingsMRF(g, n_steps=2000, score_method="pseudo", random_state=0).fit(
                    X
                ),
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"# skmrf from {os.path.dirname(skmrf.__file__)}; load {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, fit in cases():
        cpu, wall = best(fit, args.repeat)
        print(f"{name:60s} cpu {cpu:8.3f} s   wall {wall:8.3f} s")


if __name__ == "__main__":
    main()
