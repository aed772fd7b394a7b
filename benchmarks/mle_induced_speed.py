"""Per-call cost of MLEInducedLikelihood.log_likelihood on the 8x8 grid (112 edges, n = 1000).

The Metropolis-Hastings use of the paper (Section 3) evaluates the likelihood once per step
per chain, 10^6 steps: this prints the best-of-N and median per-call times for a batch of 4
vectors and for one vector, for both copulas, and the wall time of 10^6 single-vector calls
of the independent copula. The shared 2-core machine varies by up to 2x between runs, so the
load average is printed with the numbers.

    PYTHONPATH=. python benchmarks/mle_induced_speed.py [--loop] [--quick]

``--quick`` times 20x fewer calls per repeat, 3 repeats (a smoke run).
"""

import argparse
import statistics
import time
import timeit

import numpy as np
from _harness import header, load_average

from skmrf import MLEInducedLikelihood, grid_graph
from skmrf.model import agreement_to_mrf


def per_call(f, number, repeat=15):
    times = [t / number * 1e6 for t in timeit.repeat(f, number=number, repeat=repeat)]
    return min(times), statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loop", action="store_true", help="also time 10^6 single-vector calls")
    ap.add_argument("--quick", action="store_true", help="20x fewer calls per repeat, 3 repeats, no --loop")
    args = ap.parse_args()
    scale, repeat = (20, 3) if args.quick else (1, 15)
    rng = np.random.default_rng(0)
    X = agreement_to_mrf(rng.uniform(0.5, 0.8, 112), grid_graph(8, 8)).sample(1000, random_state=0, method="exact")
    print(header("mle_induced_speed.py: MLEInducedLikelihood.log_likelihood per call, 8x8 grid, n = 1000"))
    print(f"{'copula':12s} {'fit s':>6s} {'(4,112) min/median us':>22s} {'(112,) min/median us':>21s}")
    for copula, rho in [("independent", 0.0), ("gaussian", 0.05)]:
        t = time.perf_counter()
        est = MLEInducedLikelihood("grid:8x8", copula=copula, rho=rho).fit(X)
        fit_s = time.perf_counter() - t
        batch = np.clip(est.theta_hat_ + 0.02 * rng.normal(size=(4, 112)), 0.01, 0.99)
        one = batch[0].copy()
        number = (20000 if copula == "independent" else 5000) // scale
        b = per_call(lambda est=est, batch=batch: est.log_likelihood(batch), number, repeat)
        s = per_call(lambda est=est, one=one: est.log_likelihood(one), number, repeat)
        print(f"{copula:12s} {fit_s:6.2f} {b[0]:10.1f} / {b[1]:8.1f}   {s[0]:9.1f} / {s[1]:8.1f}")
        if args.loop and not args.quick and copula == "independent":
            t = time.perf_counter()
            for _ in range(1_000_000):
                est.log_likelihood(one)
            print(f"  10^6 single-vector calls: {time.perf_counter() - t:.2f} s")
    print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
