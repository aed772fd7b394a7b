"""Fresh-chain r against CPU seconds along one moment-matching fit (#42 item 2: the defaults' evidence).

Fits ``MCMCMaxLikelihood("complete", n_states=21, alpha=1e-4)`` with ``MomentMatchingSchedule`` settings
``chains:sweeps:learning_rate:steps:damping`` (target 1: every step runs, no average) on DHFR's first 75
(``dhfr``) or 159 (``dhfr159``) focus columns or the chorismate mutase family (``cm``), keeps the
iterate every ``every`` steps with the CPU seconds so far, and afterwards prints the r of the fit's own
chains and the connected-correlation r of 4000 fresh chains after 100 sweeps from uniform random states
(``mcmc_real.fresh_r``) for each; ``EMA=b`` also for the exponential average of the iterates
(weight ``max(1 / k, b)``) from the start. ``NAME=VALUE`` sets a constant of
``skmrf._kernels.mcmc.moments``. Alignments as in ``mcmc_real.py``.

    python benchmarks/research/potts_schedule_curves.py dhfr 4000:5:1.0:400:1.0 50 EMA=0.02

Research, not part of the suite (no ``--quick``); results in ``results/potts_schedule_probe.txt``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import limit_blas, load_average  # noqa: E402
from mcmc_real import CACHE, POTTS_ALPHA, Q, fresh_r, load_cm  # noqa: E402
from potts_moments import load as load_dhfr  # noqa: E402
from potts_schedule_probe import schedule_of  # noqa: E402

import skmrf._kernels.mcmc.moments as mom  # noqa: E402
import skmrf.estimators._schedules as sch  # noqa: E402
from skmrf import MCMCMaxLikelihood  # noqa: E402
from skmrf.model import DiscreteMRF  # noqa: E402

limit_blas(1)
which, spec, every = sys.argv[1], sys.argv[2], int(sys.argv[3])
EMA = 1.0
for kv in sys.argv[4:]:
    if kv.startswith("EMA="):
        EMA = float(kv[4:])
        continue
    k, v = kv.split("=")
    setattr(mom, k, float(v))
if which == "dhfr":
    X, w, _, _ = load_dhfr(argparse.Namespace(alignment=str(CACHE / "DHFR.a2m"), L=75, quick=False))
elif which == "dhfr159":
    X, w, _, _ = load_dhfr(argparse.Namespace(alignment=str(CACHE / "DHFR.a2m"), L=159, quick=False))
else:
    X, w, _ = load_cm(str(CACHE / "CM_130530_MC.fasta"))
saved = []
orig = sch.fit_moments


def wrapped(*args, **kw):
    cpu0 = time.process_time()
    ema = {}

    def cb(k, theta=None, r_connected=None, **_):
        beta = max(1.0 / k, EMA)
        ema["t"] = theta.copy() if k == 1 else (1 - beta) * ema["t"] + beta * theta
        if k % every == 0:
            saved.append((k, time.process_time() - cpu0, r_connected, theta.copy(), ema["t"].copy()))

    kw["callback"] = cb
    return orig(*args, **kw)


sch.fit_moments = wrapped
schedule = schedule_of(spec)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    est = MCMCMaxLikelihood("complete", n_states=Q, alpha=POTTS_ALPHA, schedule=schedule, random_state=0)
    est.fit(X, sample_weight=w)
print(f"# {which} {spec} {' '.join(sys.argv[4:])} load {load_average()}", flush=True)
for k, cpu, own, theta, avg in saved:
    m = DiscreteMRF(est.model_.graph, est.model_.n_states, theta)
    r, _ = fresh_r(m, X, w, 4000, 100, "uniform")
    extra = ""
    if EMA < 1:
        r2, _ = fresh_r(DiscreteMRF(est.model_.graph, est.model_.n_states, avg), X, w, 4000, 100, "uniform")
        extra = f" ema {r2:.3f}"
    print(f"step {k:5d} cpu {cpu:7.1f} own {own:.3f} fresh {r:.3f}{extra}", flush=True)
