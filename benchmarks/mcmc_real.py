"""MCMC maximum likelihood on the cases of issue #42: its default against PL, LAP and exact ML.

One run, one table, to quote before and after a change of ``MCMCMaxLikelihood``'s defaults. Every
MCMC fit runs in a forked child process with a wall-clock cap (``--cap``, ``--potts-cap``): a fit
that does not finish is killed and recorded as "did not finish in N s" instead of hanging the run.
CPU seconds are the child's (all its threads); wall seconds include the fork. One BLAS thread.

1. ``grid12``: a 12 x 12 binary grid, parameters uniform on [-1, 1] (``make_random_mrf(scale=1)``,
   seed 0), 10^4 exact draws (as part n of ``mcmc_defaults.py``); the relative distance
   ``||theta - theta_ML|| / ||theta_ML||`` of each fit to ``ExactMaxLikelihood``'s, and the time.
   ``grid14``, ``grid16`` (any ``gridN``): the same on an N x N grid, where exact ML's junction tree
   grows as ``2^N`` per clique (about a minute at N = 16).
2. ``digits20``: scikit-learn's digits upsampled to 20 x 20 by bilinear interpolation of the grey
   levels, then binarised at > 7 (``zoom20`` of ``ais_log_partition.py``), 1437 rows to fit and 360 to
   test (``train_test_split(..., test_size=360, random_state=0)``). Held-out log-likelihood per row,
   ``mean(theta . t(x)) - log Z``, with the exact ``log Z`` of each fitted model by a transfer matrix
   over the grid's columns (``grid_log_partition`` of ``ais_log_partition.py``, 2^20 numbers).
3. ``weights``: 4 binary columns, 200 exact draws of a random chain model (seed 0), every row weighted
   1e6 (issue #40's case): the default MCMC fit's time and its distance to exact ML on the same weights,
   next to PL and exact ML.
4. ``potts``: generative Potts models, q = 21, ``alpha`` 1e-4, plmc's sequence weights (identity 0.8).
   DHFR (plmc's example alignment, the first 75 columns of its focus sequence, duplicates dropped, as
   ``potts_moments.py`` reads it) with ``MomentMatchingSchedule()``, with the anchor's schedule
   (adabmDCA: 10 sweeps a step, learning rate 0.05, plain steps) and with ``n_sweeps="auto"``; the
   chorismate mutase family (adabmDCA's ``CM_130530_MC.fasta``, 1259 x 96, every row, non-standard
   letters read as gaps) with ``MomentMatchingSchedule()``; and, with ``--potts dhfr159``, DHFR's 159
   focus columns with the default under ``--potts-cap-159`` (``--potts-n-iter`` sets the cm and dhfr159
   fits' ``n_iter``). For each: fit time, steps, the r on the fit's own chains (from ``trace_``) and the
   fresh-chain r: Pearson r of the connected correlations ``C_ij(a, b)`` (pairs i < j, all states) of
   ``--n-check`` new Gibbs chains against the data's weighted ones (``potts_moments.criterion``), after
   ``--fresh-sweeps`` sweeps from uniform random states and from data rows drawn by weight. The noise
   ceiling (``--n-check`` rows drawn from the data by weight) says how high r can go with that many
   samples; ``--long-sweeps N`` adds the r from uniform states after N sweeps (a model that mixes
   slowly scores low after 100). Beside them pseudo-likelihood at plmc's ridge, and on DHFR the
   precision of each model's top-ranked pairs against the crystal structure's contacts.

The alignments are not in the repository (nothing is downloaded at run time); give their paths:

- ``--dhfr``: ``example/protein/DHFR.a2m`` of https://github.com/debbiemarkslab/plmc (720 KB);
- ``--cm``: ``example_data/CM_130530_MC.fasta`` of https://github.com/spqb/adabmDCApy, in its
  history (commit 85ad50b, ``git show 85ad50b:example_data/CM_130530_MC.fasta``; 412 KB).

Both default to ``~/.cache/skmrf-bench/``; a case whose file is missing is listed as skipped.
``PYTHONPATH`` picks the skmrf measured (the header names its folder and commit): for a checkout's own
code run ``PYTHONPATH=/path/to/checkout python benchmarks/mcmc_real.py``.

Usage::

    python benchmarks/mcmc_real.py [--cases grid12,digits20,weights,potts] [--potts dhfr75,cm,dhfr159] [--cap 150]
        [--potts-cap 300] [--potts-cap-159 900] [--potts-n-iter N] [--potts-chains N]
        [--dhfr PATH] [--cm PATH] [--n-check 4000] [--fresh-sweeps 100] [--long-sweeps 0] [--n-jobs 1]
        [--verbose 0] [--out]

``--out`` writes ``benchmarks/results/mcmc_real.txt`` (``--out-name`` to change it). ``--quick``: every
case small (a 6 x 6 grid of 1000 rows, 10 x 10 digits, 4 columns of 200 rows with a 20 s cap,
synthetic alignments of 10 and 12 columns with 200 fresh chains): a smoke run whose numbers mean
nothing, under two minutes.
"""

from __future__ import annotations

import argparse
import multiprocessing
import platform
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
from _harness import header, limit_blas, load_average, peak_rss_mib
from ais_log_partition import grid_log_partition, image_data
from mcmc_defaults import relative
from potts_moments import criterion, start_states
from potts_moments import load as load_dhfr
from potts_moments import precision as contact_precision
from protein_dca import MIN_SEP
from sklearn.model_selection import train_test_split

from skmrf import (
    ExactMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    MomentMatchingSchedule,
    PseudoLikelihoodEstimator,
    chain_graph,
    grid_graph,
)
from skmrf.datasets import make_random_mrf
from skmrf.inference import GibbsSampler
from skmrf.protein import coupling_scores, make_synthetic_alignment, read_alignment, sequence_weights

HERE = Path(__file__).resolve().parent
CACHE = Path.home() / ".cache" / "skmrf-bench"
Q = 21
POTTS_ALPHA = 1e-4


# -- a fit in a child process, with a wall-clock cap ----------------------------------------------


def _recorded_fit(est, X, fit_kwargs):
    """Fit ``est``: ``(cpu seconds, wall seconds, its warnings' classes and first words)``."""
    c, w = time.process_time(), time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, **fit_kwargs)
    cpu, wall = time.process_time() - c, time.perf_counter() - w
    return cpu, wall, sorted({f"{type(m.message).__name__}: {str(m.message)[:200]}" for m in caught})


def _child(conn, make, X, fit_kwargs, keep):
    try:
        est = make()
        cpu, wall, seen = _recorded_fit(est, X, fit_kwargs)
        conn.send(("ok", cpu, wall, seen, keep(est)))
    except BaseException:  # noqa: BLE001 (reported to the parent, which records it)
        conn.send(("error", 0.0, 0.0, [], traceback.format_exc()[-1500:]))
    finally:
        conn.close()


def capped_fit(make, X, cap, keep=lambda est: est, **fit_kwargs):
    """Fit ``make()`` to X in a forked child for at most ``cap`` wall seconds.

    Returns a dict: ``status`` ("ok", "timeout" or "error"), ``cpu`` and ``wall`` seconds of the fit
    (the cap for a timeout), ``warnings`` (their classes and first words) and ``value`` = ``keep(est)``
    (sent back by pickle) or the error's traceback.
    """
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, make, X, fit_kwargs, keep), daemon=True)
    start = time.perf_counter()
    proc.start()
    child.close()
    try:
        if not parent.poll(cap):
            return {"status": "timeout", "cpu": float("nan"), "wall": float(cap), "warnings": [], "value": None}
        status, cpu, wall, seen, value = parent.recv()
    except EOFError:  # the child died without a word (killed: out of memory?)
        proc.join()
        return {
            "status": "error",
            "cpu": float("nan"),
            "wall": time.perf_counter() - start,
            "warnings": [],
            "value": f"child exited with code {proc.exitcode}",
        }
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        parent.close()
    return {"status": status, "cpu": cpu, "wall": wall, "warnings": seen, "value": value}


def timed_fit(est, X, **fit_kwargs):
    """The same record for a fit in this process (the fast estimators: PL, LAP, exact ML)."""
    cpu, wall, seen = _recorded_fit(est, X, fit_kwargs)
    return {"status": "ok", "cpu": cpu, "wall": wall, "warnings": seen, "value": est}


def mcmc_summary(est):
    """What to keep of a fitted MCMCMaxLikelihood (picklable, small but for theta/model)."""
    s = est.schedule_
    trace = getattr(est, "trace_", None) or {}
    out = {
        "theta": est.theta_.copy(),
        "model": est.model_,
        "n_iter": int(est.n_iter_),
        "converged": bool(est.converged_),
        "schedule": f"{s.kind}: {s.n_chains} chains, {s.n_sweeps} sweeps a step, {s.n_iter} steps allowed",
        "rho": getattr(est, "sweep_autocorrelation_", None),
    }
    if "pearson_connected" in trace:
        out["chains_r"] = float(trace["pearson_connected"][-1])
        out["sweeps_total"] = int(np.sum(trace["n_sweeps"]))
        out["sweeps_last"] = int(trace["n_sweeps"][-1])
    return out


# -- the table ------------------------------------------------------------------------------------


class Table:
    COLS = ("case", "fit", "status", "CPU s", "wall s", "dist to ML", "held-out ll/row", "fresh C r", "notes")
    WIDTH = (9, 23, 22, 7, 7, 10, 15, 19)

    def __init__(self):
        self.rows, self.notes = [], []

    def add(self, case, fit, rec, dist=None, ll=None, fresh=None, notes=""):
        if rec["status"] == "ok":
            status = "ok"
        elif rec["status"] == "timeout":
            status = f"did not finish in {rec['wall']:.0f} s"
        elif rec["status"] == "skipped":
            status = "skipped"
        else:
            status = "error"
        row = (
            case,
            fit,
            status,
            _f(rec.get("cpu"), 1),
            _f(rec.get("wall"), 1),
            _f(dist, 4),
            _f(ll, 3),
            fresh or "-",
            notes + f" [load {load_average()}]",
        )
        self.rows.append(row)
        print(self.format_row(row), flush=True)
        for w in rec.get("warnings", []):
            self.note(f"{case} / {fit}: warned {w}")
        if rec["status"] == "error":
            self.note(f"{case} / {fit}: {str(rec['value']).strip().splitlines()[-1]}")

    def note(self, text):
        self.notes.append(text)
        print(f"  note: {text}", flush=True)

    def format_row(self, row):
        cells = [f"{str(v):<{w}}" for v, w in zip(row[:-1], self.WIDTH, strict=True)]
        return " ".join(cells) + " " + row[-1]

    def lines(self):
        head = self.format_row(self.COLS)
        out = [head, "-" * len(head)]
        out += [self.format_row(r) for r in self.rows]
        out += ["", "notes:"] + [f"- {n}" for n in self.notes]
        return out


def _f(v, digits):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    return f"{v:.{digits}f}"


# -- case 1: 12 x 12 grid, distance to exact ML ---------------------------------------------------


def case_grid(table, a, side, n):
    from _grid_transfer import with_transfer

    name = f"grid{side}"
    graph = grid_graph(side, side)
    truth = with_transfer(make_random_mrf(graph, scale=1.0, random_state=0), side, side)
    X = truth.sample(n, 0, method="exact")
    print(f"== {name}: {side} x {side} binary grid, {n} exact draws, seed 0 (load {load_average()}) ==", flush=True)
    ml = timed_fit(ExactMaxLikelihood(graph), X)
    ref = ml["value"].theta_
    table.add(name, "exact ML", ml, dist=0.0)
    for label, est in (("PL", PseudoLikelihoodEstimator(graph)), ("LAP", LAPEstimator(graph))):
        rec = timed_fit(est, X)
        table.add(name, label, rec, dist=relative(rec["value"].theta_, ref))
    rec = capped_fit(lambda: MCMCMaxLikelihood(graph, random_state=0, verbose=a.verbose), X, a.cap, keep=mcmc_summary)
    _add_mcmc(table, name, "MCMC default", rec, ref=ref)


def _add_mcmc(table, case, label, rec, ref=None, ll=None, fresh=None):
    v = rec["value"] if rec["status"] == "ok" else None
    notes = ""
    if v is not None:
        rho = "" if v["rho"] is None else f", rho {v['rho']:.3f}"
        notes = f"{v['schedule']}; ran {v['n_iter']} steps, converged {v['converged']}{rho}"
    dist = relative(v["theta"], ref) if v is not None and ref is not None else None
    table.add(case, label, rec, dist=dist, ll=ll, fresh=fresh, notes=notes)


# -- case 2: digits at 20 x 20, held-out log-likelihood -------------------------------------------


def case_digits(table, a, side):
    name = f"digits{side}"
    if side == 20:
        X, rows = image_data()["zoom20"]
    else:  # --quick: the same construction at another size
        from scipy.ndimage import zoom
        from sklearn.datasets import load_digits

        digits = load_digits().data.reshape(-1, 8, 8)
        z = np.array([zoom(x, side / 8, order=1) for x in digits])
        X, rows = (z > 7).astype(np.int64).reshape(len(z), -1), side
    X_train, X_test = train_test_split(X, test_size=360, random_state=0)
    graph = grid_graph(rows, rows)
    print(
        f"== {name}: digits upsampled to {rows} x {rows} (bilinear) and binarised, {len(X_train)} rows to fit, "
        f"{len(X_test)} to test (load {load_average()}) ==",
        flush=True,
    )

    def held_out(model):
        t = time.perf_counter()
        log_z = grid_log_partition(model, rows, rows)
        return float(model.layout.energy(X_test, model.theta).mean() - log_z), time.perf_counter() - t

    t_z = []
    for label, est in (("PL", PseudoLikelihoodEstimator(graph)), ("LAP", LAPEstimator(graph))):
        rec = timed_fit(est, X_train)
        ll, t = held_out(rec["value"].model_)
        t_z.append(t)
        table.add(name, label, rec, ll=ll)
    rec = capped_fit(
        lambda: MCMCMaxLikelihood(graph, random_state=0, verbose=a.verbose), X_train, a.cap, keep=mcmc_summary
    )
    ll = None
    if rec["status"] == "ok":
        ll, t = held_out(rec["value"]["model"])
        t_z.append(t)
    _add_mcmc(table, name, "MCMC default", rec, ll=ll)
    table.note(
        f"{name}: held-out ll/row = mean over the {len(X_test)} test rows of log p(x), exact log Z by the transfer "
        f"matrix over columns ({np.mean(t_z):.1f} s a model)"
    )


# -- case 3: 4 columns, weights 1e6 ----------------------------------------------------------------


def case_weights(table, a, n_rows, cap):
    name = "weights"
    graph = chain_graph(4)
    X = make_random_mrf(graph, scale=1.0, random_state=0).sample(n_rows, 0, method="exact")
    w = np.full(len(X), 1e6)
    print(f"== {name}: 4 binary columns (chain), {n_rows} exact draws, sample_weight 1e6 each (load {load_average()})")
    ml = timed_fit(ExactMaxLikelihood(graph), X, sample_weight=w)
    ref = ml["value"].theta_
    table.add(name, "exact ML", ml, dist=0.0)
    pl = timed_fit(PseudoLikelihoodEstimator(graph), X, sample_weight=w)
    table.add(name, "PL", pl, dist=relative(pl["value"].theta_, ref))
    rec = capped_fit(
        lambda: MCMCMaxLikelihood(graph, random_state=0, verbose=a.verbose), X, cap, keep=mcmc_summary, sample_weight=w
    )
    _add_mcmc(table, name, "MCMC default", rec, ref=ref)


# -- case 4: Potts, fresh-chain r ------------------------------------------------------------------


def fresh_r(model, X, w, n_chains, n_sweeps, start):
    """Connected-correlation r of ``n_chains`` new chains after ``n_sweeps`` sweeps, and their seconds."""
    t = time.perf_counter()
    rng = np.random.default_rng(1)
    sampler = GibbsSampler(model)
    S = sampler.run(start_states(sampler, X, w, n_chains, start, rng), n_sweeps, rng)
    return criterion(X, w, S)[0], time.perf_counter() - t


def load_cm(path):
    X, _, _ = read_alignment(path, nonstandard="gap")
    return X, sequence_weights(X, 0.8), f"chorismate mutase (adabmDCA's CM_130530_MC.fasta), {X.shape[1]} columns"


def potts_fit(table, a, name, label, X, w, schedule, cap, starts):
    rec = capped_fit(
        lambda: MCMCMaxLikelihood(
            "complete",
            n_states=Q,
            alpha=POTTS_ALPHA,
            schedule=schedule,
            random_state=0,
            n_jobs=a.n_jobs,
            verbose=a.verbose,
        ),
        X,
        cap,
        keep=mcmc_summary,
        sample_weight=w,
    )
    fresh, extra = None, ""
    if rec["status"] == "ok":
        v = rec["value"]
        parts, secs = [], 0.0
        for start in starts:
            r, t = fresh_r(v["model"], X, w, a.n_check, a.fresh_sweeps, start)
            parts.append(f"{start[:4]} {r:.3f}")
            secs += t
        if a.long_sweeps:
            r, t = fresh_r(v["model"], X, w, a.n_check, a.long_sweeps, "uniform")
            parts.append(f"unif@{a.long_sweeps} {r:.3f}")
            secs += t
        fresh = ", ".join(parts)
        if "chains_r" in v:
            extra = (
                f"; own chains' r {v['chains_r']:.3f}, last step {v['sweeps_last']} sweeps, "
                f"{v['sweeps_total']} sweeps in all; fresh chains {secs:.0f} s"
            )
    _add_mcmc(table, name, label, rec, fresh=fresh)
    if extra:
        table.rows[-1] = table.rows[-1][:-1] + (table.rows[-1][-1].replace(" [load", extra + " [load", 1),)
    return rec["value"]["model"] if rec["status"] == "ok" else None


def _contacts(table, name, label, fitted, true, L):
    scores = coupling_scores(fitted).matrix
    text = ", ".join(f"top-{k} {contact_precision(scores, true, k):.2f}" for k in (L // 5, L // 2, L))
    table.note(f"{name} / {label}: precision of the APC pairs at |i - j| >= {MIN_SEP} ({len(true)} contacts): {text}")


def _potts_data(a):
    """``(name, X, w, true contacts or None, source)`` of every Potts case asked for and present."""
    if a.quick:
        for name, L in (("dhfr-syn", 10), ("cm-syn", 12)):
            aln = make_synthetic_alignment(500, L, n_states=Q, n_contacts=L, random_state=0)
            yield name, aln.X, np.ones(len(aln.X)), None, f"synthetic Potts alignment, 500 x {L}"
        return
    for name, path, L in (("dhfr75", a.dhfr, 75), ("cm", a.cm, None), ("dhfr159", a.dhfr, 159)):
        if name not in a.potts.split(","):
            continue
        if not Path(path).exists():
            yield name, None, None, None, f"no alignment at {path} (see the module docstring for where to get it)"
        elif L is None:
            yield name, *load_cm(path)[:2], None, load_cm(path)[2]
        else:
            X, w, true, source = load_dhfr(argparse.Namespace(alignment=path, L=L, quick=False))
            yield name, X, w, true, source


def case_potts(table, a):
    print(f"== potts: q = {Q}, alpha {POTTS_ALPHA:g}, plmc's weights (identity 0.8) (load {load_average()}) ==")
    quick = dict(n_iter=5, n_chains=200) if a.quick else {}
    for name, X, w, true, source in _potts_data(a):
        if X is None:
            table.add(name, "MCMC moments", {"status": "skipped"})
            table.note(f"{name}: {source}")
            continue
        rng = np.random.default_rng(0)
        ceiling = criterion(X, w, X[rng.choice(len(X), a.n_check, p=w / w.sum())])[0]
        table.note(
            f"{name}: {source}: {X.shape[0]} x {X.shape[1]}, M_eff {w.sum():.1f}; noise ceiling of {a.n_check} "
            f"rows drawn from the data by weight C r {ceiling:.3f}"
        )
        cap = a.potts_cap_159 if name == "dhfr159" else a.potts_cap
        steps = {} if name == "dhfr75" or a.potts_n_iter is None else {"n_iter": a.potts_n_iter}
        steps |= {} if a.potts_chains is None else {"n_chains": a.potts_chains}
        runs = [("moments, defaults", MomentMatchingSchedule(**(steps | quick)))]
        if name == "dhfr75":
            runs += [
                ("anchor: 10 sweeps, lr .05", MomentMatchingSchedule(n_sweeps=10, learning_rate=0.05, **quick)),
                ("moments, sweeps auto", MomentMatchingSchedule(n_sweeps="auto", **quick)),
            ]
        for label, schedule in runs:
            model = potts_fit(table, a, name, label, X, w, schedule, cap, ("uniform", "data"))
            if model is not None and true is not None and label == "moments, defaults":
                _contacts(table, name, "MCMC default", model, true, X.shape[1])
        # plmc's lambda_J = 0.01 (q - 1)(L - 1) on the summed objective is alpha = 2 lambda_J / M_eff here
        dca_alpha = 2 * 0.01 * (Q - 1) * (X.shape[1] - 1) / w.sum()
        rec = timed_fit(PseudoLikelihoodEstimator("complete", n_states=Q, alpha=dca_alpha), X, sample_weight=w)
        fresh = ", ".join(
            f"{start[:4]} {fresh_r(rec['value'].model_, X, w, a.n_check, a.fresh_sweeps, start)[0]:.3f}"
            for start in ("uniform", "data")
        )
        table.add(name, "PL, plmc's ridge", rec, fresh=fresh, notes=f"alpha {dca_alpha:.3g}")
        if true is not None:
            _contacts(table, name, "PL, plmc's ridge", rec["value"], true, X.shape[1])
    table.note(
        f"potts: fresh C r = Pearson r of the connected correlations of {a.n_check} new chains after "
        f"{a.fresh_sweeps} sweeps (unif: from uniform random states, data: from data rows drawn by weight) "
        "against the data's weighted ones"
        + (
            f"; unif@{a.long_sweeps}: from uniform states after {a.long_sweeps} sweeps (nearer the model's equilibrium)"
            if a.long_sweeps
            else ""
        )
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="grid12,digits20,weights,potts")
    ap.add_argument("--cap", type=float, default=150.0, help="wall seconds allowed to an MCMC fit (cases 1-3)")
    ap.add_argument("--potts-cap", type=float, default=300.0, help="wall seconds allowed to a Potts fit")
    ap.add_argument("--potts-cap-159", type=float, default=900.0, help="wall seconds allowed to the L = 159 fit")
    ap.add_argument("--potts", default="dhfr75,cm", help="the Potts families of case potts (dhfr75, cm, dhfr159)")
    ap.add_argument(
        "--potts-n-iter", type=int, help="n_iter of the cm and dhfr159 default fits (to end within the cap)"
    )
    ap.add_argument("--dhfr", default=str(CACHE / "DHFR.a2m"))
    ap.add_argument("--cm", default=str(CACHE / "CM_130530_MC.fasta"))
    ap.add_argument("--potts-chains", type=int, default=None, help="n_chains of the default Potts fits (else 4000)")
    ap.add_argument("--n-check", type=int, default=4000, help="fresh chains (and noise-ceiling rows)")
    ap.add_argument("--fresh-sweeps", type=int, default=100)
    ap.add_argument(
        "--long-sweeps", type=int, default=0, help="also r of fresh chains from uniform after this many sweeps"
    )
    ap.add_argument("--n-jobs", type=int, default=1, help="n_jobs of the Potts fits")
    ap.add_argument("--verbose", type=int, default=0, help="verbose of every MCMC fit (printed by the child)")
    ap.add_argument("--out", action="store_true", help="write benchmarks/results/<--out-name>")
    ap.add_argument("--out-name", default="mcmc_real.txt")
    ap.add_argument("--quick", action="store_true", help="every case small (a smoke run)")
    ap.add_argument(
        "--blas-threads", type=int, default=1, help="BLAS threads of every fit; 0 leaves the library's default"
    )
    a = ap.parse_args()
    if a.quick:
        a.cap, a.potts_cap, a.n_check, a.fresh_sweeps = 20.0, 30.0, 200, 20
    limit_blas(a.blas_threads)
    cases = a.cases.split(",")
    lines = [
        f"# python benchmarks/mcmc_real.py --cases {a.cases} --potts {a.potts} --potts-n-iter {a.potts_n_iter} "
        f"--potts-chains {a.potts_chains} --cap {a.cap:g} --potts-cap {a.potts_cap:g} "
        f"--potts-cap-159 {a.potts_cap_159:g} "
        f"--n-check {a.n_check} --fresh-sweeps {a.fresh_sweeps} --long-sweeps {a.long_sweeps} --n-jobs {a.n_jobs}"
        f" --blas-threads {a.blas_threads}" + (" --quick" if a.quick else ""),
        header(
            "mcmc_real.py: MCMCMaxLikelihood's default against PL, LAP and exact ML on the cases of #42", a.blas_threads
        ),
        f"# python {platform.python_version()}; every MCMC fit in a forked child under its wall-clock cap",
    ]
    print("\n".join(lines), flush=True)
    start = time.perf_counter()
    table = Table()
    for side in [int(c[4:]) for c in cases if c.startswith("grid")]:
        case_grid(table, a, *((6, 1000) if a.quick else (side, 10_000)))
    if "digits20" in cases:
        case_digits(table, a, 10 if a.quick else 20)
    if "weights" in cases:
        case_weights(table, a, 200, a.cap)
    if "potts" in cases:
        case_potts(table, a)
    table.note("dist to ML = ||theta - theta_ML|| / ||theta_ML|| against ExactMaxLikelihood on the same data")
    table.note("every fit alpha='auto' but the Potts fits (alpha 1e-4); MCMC fits random_state=0")
    lines += ["", *table.lines()]
    lines.append(
        f"# {time.perf_counter() - start:.0f} s wall in all; peak resident memory of the parent {peak_rss_mib():.0f} "
        f"MiB; load average at the end {load_average()}"
    )
    print("\n" + "\n".join(lines[3:]), flush=True)
    if a.out:
        path = HERE / "results" / a.out_name
        path.write_text("\n".join(lines) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
