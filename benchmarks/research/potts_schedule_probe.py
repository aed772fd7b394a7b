"""Probe for #42 item 2: moment matching's fresh-chain quality against its step preconditioner.

Fits ``MCMCMaxLikelihood("complete", n_states=21, alpha=1e-4)`` with ``MomentMatchingSchedule``
settings given as ``chains:sweeps:learning_rate:steps[:damping]`` (the target set to 1, so every run
takes all its steps) on DHFR (75 columns) or the chorismate mutase family, and prints its CPU seconds,
the r of its own persistent chains and the connected-correlation r of 4000 fresh chains after 100
sweeps from uniform random states (``mcmc_real.fresh_r``). The alignments as in ``mcmc_real.py``.

    python benchmarks/research/potts_schedule_probe.py dhfr 1000:5:0.05:1300:1.0 1000:10:0.1:650

Research, not part of the suite (no ``--quick``); results in ``results/potts_schedule_probe.txt``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _harness import limit_blas, load_average  # noqa: E402
from mcmc_real import CACHE, POTTS_ALPHA, Q, fresh_r, load_cm  # noqa: E402
from potts_moments import load as load_dhfr  # noqa: E402

from skmrf import MCMCMaxLikelihood, MomentMatchingSchedule  # noqa: E402


def schedule_of(spec):
    """The schedule of ``chains:sweeps:learning_rate:steps[:damping]`` (damping 0.01 if absent), target 1."""
    chains, sweeps, lr, steps, *rest = spec.split(":")
    return MomentMatchingSchedule(
        n_chains=int(chains),
        n_sweeps=int(sweeps),
        learning_rate=float(lr),
        n_iter=int(steps),
        target=1.0,
        target_frequencies=1.0,
        damping=float(rest[0]) if rest else 0.01,
    )


def main():
    limit_blas(1)
    which, specs = sys.argv[1], sys.argv[2:]
    if which == "dhfr":
        X, w, _, _ = load_dhfr(argparse.Namespace(alignment=str(CACHE / "DHFR.a2m"), L=75, quick=False))
    else:
        X, w, _ = load_cm(str(CACHE / "CM_130530_MC.fasta"))
    for spec in specs:
        schedule = schedule_of(spec)
        cpu = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = MCMCMaxLikelihood("complete", n_states=Q, alpha=POTTS_ALPHA, schedule=schedule, random_state=0)
            est.fit(X, sample_weight=w)
        cpu = time.process_time() - cpu
        fresh, _ = fresh_r(est.model_, X, w, 4000, 100, "uniform")
        own = est.trace_["pearson_connected"][-1]
        print(f"{which} {spec}: CPU {cpu:.0f} s, own chains' r {own:.3f}, fresh r {fresh:.3f} (load {load_average()})")


if __name__ == "__main__":
    main()
