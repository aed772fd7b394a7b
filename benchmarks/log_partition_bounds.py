"""Bracketing ``log Z`` of fitted models, and ranking the 64 x 64 digits' models by it (#24).

Two parts, on scikit-learn's digits binarised (pixel > 7):

``digits``
    Models fitted with default parameters (``random_state=0``) by LAP, pseudo-likelihood and
    MCMC maximum likelihood, on the 8 x 8 grid and on the 16 x 16 grid of the images upsampled
    by ``np.kron`` with a 2 x 2 block (a junction tree of width 22, which still calibrates in
    about half a second, so the exact ``log Z`` is known). For each: the exact ``log Z``, the
    adaptive AIS estimate (the defaults of ``score_method="ais"``) with its standard error and
    its lower end, the tree-reweighted upper bound before and after optimising the split
    (:func:`skmrf.inference.tree_upper_bound`, 200 iterations), the width of ``[AIS lower end,
    upper]``, and the time of each.
``64``
    The case of issue #24: the images upsampled to 64 x 64 by an 8 x 8 block, ``grid:64x64``,
    1437 rows to fit and 360 to test (``train_test_split(..., test_size=360, random_state=0)``),
    default parameters. The junction tree does not fit, so ``score`` estimates ``log Z``. For
    each estimator: its test ``score`` as a user gets it now (first score: adaptive AIS within
    its budget and the tree bound with 25 iterations) with the interval it quotes, and the
    tightest estimate affordable here: the adaptive AIS with a budget of ``--budget`` sweeps
    (default 10,230,000: runs of 100 chains from 100 to 51,200 steps), the tree bound optimised
    to 200 iterations, and a *heuristic* reverse AIS on the longest schedule from the final
    states of 100 Gibbs chains run ``--gibbs-sweeps`` sweeps from the training rows
    (approximate draws: an estimate, not a bound). The old default (one run of 100 chains x
    1000 steps on the unary path) is shown for comparison. The models are ranked by each.
    ``--cache FILE`` keeps the fitted parameters (the MCMC fit takes several minutes).

``64first``
    Only the first score of each model of ``64`` (from ``--cache``), with the warnings it gives.

Usage::

    python benchmarks/log_partition_bounds.py [--part digits|64|64first|all] [--budget N] [--cache FILE]
        [--out-dir benchmarks/results]

``--quick``: part ``digits`` on the 8 x 8 grid only, and part ``64`` on the images upsampled to
16 x 16 (2 x 2 blocks) with a budget of 50,000 sweeps, 200 Gibbs sweeps and a 25-iteration tree bound
(its first score forced to ``score_method="ais"``: the junction tree of 16 x 16 would give the exact
value).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np
from _harness import best_of, header, load_average, peak_rss_mib
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from skmrf import AdaptiveSchedule, LAPEstimator, MCMCMaxLikelihood, PseudoLikelihoodEstimator
from skmrf.exceptions import EstimatedLikelihoodWarning, ImpossibleLikelihoodError
from skmrf.graphs import grid_graph
from skmrf.inference import (
    GibbsSampler,
    adaptive_annealed_importance_sampling,
    annealed_importance_sampling,
    reverse_annealed_importance_sampling,
    tree_upper_bound,
)
from skmrf.inference._adaptive_ais import INTERVAL_SIGMAS
from skmrf.model import DiscreteMRF

ESTIMATORS = {"LAP": LAPEstimator, "PL": PseudoLikelihoodEstimator, "MCMC": MCMCMaxLikelihood}
#: The side of the upsampled images of part ``64`` (``--quick``: 16), and extra parameters of the
#: estimators whose first score is measured (``--quick``: ``score_method="ais"``, which the junction
#: tree of 16 x 16 would otherwise replace).
SIDE = 64
FIRST_SCORE_PARAMS = {}
#: Iterations of the tree bound of part ``64``'s tightest estimate (``--quick``: 25).
TREE_ITER = 200


def _timed(f, *args, **kwargs):
    """``(f(*args, **kwargs), wall seconds)`` of one call."""
    _, wall, out = best_of(lambda: f(*args, **kwargs), 1, quiet=False)
    return out, wall


def _upsampled(block):
    X8 = (load_digits().data > 7).astype(np.int64)
    return np.array([np.kron(r.reshape(8, 8), np.ones((block, block), dtype=np.int64)).ravel() for r in X8])


class _Table:
    def __init__(self, path=None):
        self.lines, self.path = [], path

    def __call__(self, s=""):
        print(s, flush=True)
        self.lines.append(s)

    def save(self):
        if self.path:
            with open(self.path, "w") as fh:
                fh.write("\n".join(self.lines) + "\n")


def part_digits(out, quick=False):
    out(header("log_partition_bounds.py digits: exact log Z, adaptive AIS and the tree bound of fitted models"))
    out(f"load average before: {load_average()}; python {platform.python_version()}; one thread")
    out("digits: 1797 rows, binarised at > 7; 16x16 = np.kron(8x8 image, 2x2 ones)")
    out()
    head = (
        f"{'data':>5} {'est':<5} {'tw':>3} {'exact':>9} {'AIS':>9} {'AIS se':>6} {'low-ex':>7} {'tree init':>9} "
        f"{'tree opt':>9} {'opt-exact':>9} {'[low,up]':>8} {'in':>3} {'iters':>5} {'t exact':>7} {'t AIS':>6} "
        f"{'t tree':>6}"
    )
    out(head)
    out("-" * len(head))
    cases = [("8x8", _upsampled(1), "grid:8x8"), ("16x16", _upsampled(2), "grid:16x16")]
    for label, X, graph in cases[:1] if quick else cases:
        for name, Est in ESTIMATORS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = Est(graph, random_state=0).fit(X).model_
            exact, t_exact = _timed(model.log_partition)
            ais, t_ais = _timed(adaptive_annealed_importance_sampling, model, random_state=0, warn=False)
            tree, t_tree = _timed(tree_upper_bound, model, random_state=0)
            assert tree.bound >= exact - 1e-9, (name, label, tree.bound, exact)
            inside = ais.lower <= exact <= tree.bound
            out(
                f"{label:>5} {name:<5} {model.treewidth:>3} {exact:>9.3f} {ais.log_z:>9.3f} {ais.std_err:>6.3f} "
                f"{ais.lower - exact:>7.3f} {tree.initial_bound:>9.3f} {tree.bound:>9.3f} {tree.bound - exact:>9.3f} "
                f"{tree.bound - ais.lower:>8.3f} {'yes' if inside else 'NO':>3} {tree.n_iter:>5} {t_exact:>7.2f} "
                f"{t_ais:>6.2f} {t_tree:>6.2f}"
            )
    out()
    out(f"load average after: {load_average()}; peak memory {peak_rss_mib():.0f} MiB")
    out("tw: treewidth of the junction tree; AIS: adaptive (defaults of score_method='ais'); low: its lower end;")
    out("times in seconds; log Z in nats (a score error of the same size per row)")


def _fit_64(cache):
    """``({name: theta}, fit seconds, X_train, X_test)``, from the cache file when it has them."""
    X = _upsampled(SIDE // 8)
    X_train, X_test = train_test_split(X, test_size=360, random_state=0)
    thetas, times = {}, {}
    if cache and os.path.exists(cache):
        with np.load(cache) as f:
            thetas = {k: f[k] for k in ESTIMATORS if k in f.files}
            times = {k: float(f[f"{k}_seconds"]) for k in ESTIMATORS if f"{k}_seconds" in f.files}
    for name, Est in ESTIMATORS.items():
        if name not in thetas:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est, times[name] = _timed(Est(f"grid:{SIDE}x{SIDE}", random_state=0).fit, X_train)
            thetas[name] = est.model_.theta
            print(f"fitted {name} in {times[name]:.1f} s", flush=True)
            if cache:
                np.savez(cache, **thetas, **{f"{k}_seconds": v for k, v in times.items()})
    return thetas, times, X_train, X_test


def _first_score(name, theta, X_train, X_test):
    """The test score a user gets now: the fitted estimator's first ``score``.

    The estimator is fitted again (MCMC with ``AdaptiveSchedule(n_iter=1)``: only its structure
    and ``score_method_`` matter) and given the fitted parameters ``theta``; the first score then
    runs the deferred estimate of ``log Z`` on them, as after the original fit.
    """
    params = {"schedule": AdaptiveSchedule(n_iter=1)} if name == "MCMC" else {}
    params.update(FIRST_SCORE_PARAMS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ESTIMATORS[name](f"grid:{SIDE}x{SIDE}", random_state=0, **params).fit(X_train)
    est.model_.theta = theta
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        t = time.perf_counter()
        try:
            score = est.score(X_test)
        except ImpossibleLikelihoodError as exc:
            score = f"ImpossibleLikelihoodError: {exc}"
        seconds = time.perf_counter() - t
    messages = [str(w.message) for w in record if issubclass(w.category, EstimatedLikelihoodWarning)]
    return est, score, seconds, messages


def _measure_64(name, theta, X_train, X_test, budget, gibbs_sweeps):
    """Everything part ``64`` prints about one fitted model, as a dict."""
    model = DiscreteMRF(grid_graph(SIDE, SIDE), 2, theta=theta)
    energy = float(model.layout.energy(X_test, theta).mean())
    old, t_old = _timed(annealed_importance_sampling, model, 100, 1000, 0, "unary")
    est, score, t_first, messages = _first_score(name, theta, X_train, X_test)
    first = dict(
        score=score,
        log_z=est.log_partition_,
        std=est.log_partition_std_,
        lower=est.log_partition_lower_,
        upper=est.log_partition_upper_,
        exhausted=est.log_partition_budget_exhausted_,
        seconds=t_first,
    )
    print(f"{name}: first score {score} in {t_first:.1f} s; {messages}", flush=True)
    ais, t_ais = _timed(adaptive_annealed_importance_sampling, model, budget, random_state=1, warn=False)
    print(f"{name}: long AIS {[(r.n_steps, round(r.log_z, 3), round(r.std_err, 3)) for r in ais.runs]}", flush=True)
    tree, t_tree = _timed(tree_upper_bound, model, max_iter=TREE_ITER, random_state=0)
    gibbs_rng = np.random.default_rng(2)
    start = X_train[gibbs_rng.choice(len(X_train), ais.n_chains, replace=False)]
    draws, t_gibbs = _timed(GibbsSampler(model).run, start, gibbs_sweeps, gibbs_rng)
    rev, t_rev = _timed(reverse_annealed_importance_sampling, model, draws, ais.n_steps, 3)
    print(f"{name}: tree {tree.bound:.3f} ({tree.n_iter} it), heuristic reverse {rev.log_z:.3f}", flush=True)
    return dict(
        energy=energy,
        old=old.log_z,
        old_se=old.std_err,
        t_old=t_old,
        first=first,
        ais=ais,
        t_ais=t_ais,
        tree=tree,
        t_tree=t_tree,
        rev=rev,
        t_rev=t_rev + t_gibbs,
        messages=messages,
    )


def _table_first_score(out, rows):
    out("1. The test score as a user gets it (first score: adaptive AIS, budget 400,000 sweeps; tree bound, 25 it.)")
    out()
    head = (
        f"{'est':<5} {'mean energy':>11} {'old log Z':>9} {'old score':>9} {'log Z':>9} {'se':>6} {'budget':>6} "
        f"{'score':>9} {'score interval':>21} {'width':>7} {'t s':>5}"
    )
    out(head)
    out("-" * len(head))
    for name, r in rows.items():
        f = r["first"]
        score = "refused" if isinstance(f["score"], str) else f"{f['score']:>9.2f}"
        lo, hi = r["energy"] - f["upper"], r["energy"] - f["lower"]
        out(
            f"{name:<5} {r['energy']:>11.2f} {r['old']:>9.2f} {r['energy'] - r['old']:>9.2f} {f['log_z']:>9.2f} "
            f"{f['std']:>6.2f} {'spent' if f['exhausted'] else 'ok':>6} {score:>9} "
            f"{'[' + f'{lo:.1f}, {hi:.1f}' + ']':>21} {f['upper'] - f['lower']:>7.1f} {f['seconds']:>5.0f}"
        )
    out()


def _table_tightest(out, rows, budget, gibbs_sweeps):
    out(f"2. The tightest estimate affordable here: adaptive AIS with a budget of {budget:,} sweeps, tree bound")
    out(
        f"   ({TREE_ITER} iterations), heuristic reverse AIS from {gibbs_sweeps:,}-sweep Gibbs chains started at "
        "training rows"
    )
    out()
    head = (
        f"{'est':<5} {'log Z':>9} {'se':>6} {'steps':>6} {'conv':>4} {'tree':>9} {'rev (heur.)':>11} {'score':>9} "
        f"{'score interval':>21} {'t AIS':>6} {'t tree':>6} {'t rev':>6}"
    )
    out(head)
    out("-" * len(head))
    for name, r in rows.items():
        ais, tree, rev = r["ais"], r["tree"], r["rev"]
        lo, hi = r["energy"] - tree.bound, r["energy"] - ais.lower
        out(
            f"{name:<5} {ais.log_z:>9.2f} {ais.std_err:>6.2f} {ais.n_steps:>6} {'yes' if ais.converged else 'no':>4} "
            f"{tree.bound:>9.2f} {rev.log_z:>11.2f} {r['energy'] - ais.log_z:>9.2f} "
            f"{'[' + f'{lo:.1f}, {hi:.1f}' + ']':>21} {r['t_ais']:>6.0f} {r['t_tree']:>6.0f} {r['t_rev']:>6.0f}"
        )
    out()
    for name, r in rows.items():
        runs = ", ".join(f"{x.n_steps}: {x.log_z:.2f}" for x in r["ais"].runs)
        out(f"{name} AIS runs (steps: log Z): {runs}")
    out()


def _rankings(out, rows):
    def order(key):
        return " > ".join(sorted(rows, key=key, reverse=True))

    first_ok = all(not isinstance(r["first"]["score"], str) for r in rows.values())
    out("Rankings (best first):")
    out(f"  old default (100 x 1000, unary path):   {order(lambda k: rows[k]['energy'] - rows[k]['old'])}")
    if first_ok:
        out(f"  score as a user gets it now:            {order(lambda k: rows[k]['first']['score'])}")
    out(f"  tightest AIS estimate:                  {order(lambda k: rows[k]['energy'] - rows[k]['ais'].log_z)}")
    out(f"  heuristic reverse AIS (not a bound):    {order(lambda k: rows[k]['energy'] - rows[k]['rev'].log_z)}")
    below = [k for k, r in rows.items() if r["rev"].log_z < r["ais"].lower]
    if below:
        out(
            f"  reverse AIS below the forward lower end for {', '.join(below)}: its Gibbs chains had not reached "
            "the model's distribution (approximate draws void the bound)"
        )
    out(f"  guaranteed lower bounds (tree bound):   {order(lambda k: rows[k]['energy'] - rows[k]['tree'].bound)}")
    positive = [k for k, r in rows.items() if not isinstance(r["first"]["score"], str) and r["first"]["score"] > 0]
    out(f"positive scores returned: {positive or 'none'}")
    out()


def part_64_first(out, cache):
    """Only the first score of each cached 64 x 64 model (table 1 of ``part_64`` without the old default)."""
    out(header("log_partition_bounds.py 64first: the first score of each 64 x 64 model"))
    out(f"load average before: {load_average()}; python {platform.python_version()}; one thread")
    thetas, _, X_train, X_test = _fit_64(cache)
    out(f"grid:{SIDE}x{SIDE} models of {cache}; {len(X_train)} rows fit, {len(X_test)} test; the first score only")
    out()
    head = f"{'est':<5} {'log Z':>9} {'se':>6} {'budget':>6} {'lower':>9} {'upper':>9} {'score':>9} {'width':>7}"
    head += f" {'t s':>5}"
    out(head)
    out("-" * len(head))
    for name, theta in thetas.items():
        est, score, seconds, messages = _first_score(name, theta, X_train, X_test)
        lower, upper = est.log_partition_lower_, est.log_partition_upper_
        shown = "refused" if isinstance(score, str) else f"{score:.2f}"
        out(
            f"{name:<5} {est.log_partition_:>9.2f} {est.log_partition_std_:>6.2f} "
            f"{'spent' if est.log_partition_budget_exhausted_ else 'ok':>6} {lower:>9.2f} {upper:>9.2f} {shown:>9} "
            f"{upper - lower:>7.1f} {seconds:>5.0f}"
        )
        for m in messages:
            out(f"    warning: {m}")
    out(f"load average after: {load_average()}; peak memory {peak_rss_mib():.0f} MiB")


def part_64(out, budget, cache, gibbs_sweeps):
    out(header(f"log_partition_bounds.py 64: ranking the {SIDE} x {SIDE} digits' models by their log Z estimates"))
    out(f"load average before: {load_average()}; python {platform.python_version()}; one thread")
    thetas, fit_times, X_train, X_test = _fit_64(cache)
    out(
        f"digits upsampled to {SIDE}x{SIDE} (np.kron, {SIDE // 8}x{SIDE // 8} blocks), binarised at > 7; "
        f"grid:{SIDE}x{SIDE}; "
        f"{len(X_train)} rows fit, {len(X_test)} test; default parameters, random_state=0"
    )
    fits = ", ".join(f"{k} {v:.0f}" for k, v in fit_times.items())
    out(f"fit seconds: {fits}" + (f" (as recorded in {cache} when fitted)" if cache else ""))
    out()
    rows = {name: _measure_64(name, theta, X_train, X_test, budget, gibbs_sweeps) for name, theta in thetas.items()}
    _table_first_score(out, rows)
    _table_tightest(out, rows, budget, gibbs_sweeps)
    _rankings(out, rows)
    out("mean energy: mean over the test rows of sum theta . phi(x); score = mean energy - log Z; score interval:")
    out(f"[mean energy - upper, mean energy - lower] with lower = AIS less {INTERVAL_SIGMAS:g} of its weights' errors;")
    out("budget 'spent': the adaptive AIS ran out of its budget before two runs agreed; times in seconds")
    out(f"load average after: {load_average()}; peak memory {peak_rss_mib():.0f} MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["digits", "64", "64first", "all"], default="all")
    ap.add_argument("--budget", type=int, default=10_230_000)
    ap.add_argument("--gibbs-sweeps", type=int, default=20_000)
    ap.add_argument("--cache", default=None, help="npz file keeping the 64x64 fits")
    ap.add_argument("--out-dir", default=None, help="also write the tables to this directory")
    ap.add_argument("--quick", action="store_true", help="digits on 8x8; part 64 on 16x16 images, small budgets")
    args = ap.parse_args()
    if args.quick:
        global SIDE, TREE_ITER
        SIDE, args.budget, args.gibbs_sweeps, TREE_ITER = 16, 50_000, 200, 25
        FIRST_SCORE_PARAMS["score_method"] = "ais"
    for part in ["digits", "64"] if args.part == "all" else [args.part]:
        name = {"digits": "log_partition_bounds", "64": "log_partition_bounds_64x64"}.get(
            part, "log_partition_bounds_64x64_first"
        )
        out = _Table(None if args.out_dir is None else os.path.join(args.out_dir, f"{name}.txt"))
        if part == "digits":
            part_digits(out, args.quick)
        elif part == "64first":
            part_64_first(out, args.cache)
        else:
            part_64(out, args.budget, args.cache, args.gibbs_sweeps)
        out.save()


if __name__ == "__main__":
    main()
