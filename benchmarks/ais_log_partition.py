"""Accuracy, honesty and cost of the AIS estimate of log Z, and of the interval around it (#24).

Two parts, both against the exact ``log Z``:

``random``
    Random binary J x J grids (parameters uniform on [-1, 1], as in the LAP paper's
    experiments) and a 3-state grid: one AIS run of 100 chains on the two annealing paths
    (``unary``, the path before; ``centred``, the default) for 100 and 1000 steps, and the
    adaptive AIS with its defaults. The 100 x 100 grid has no exact value.
``images``
    Strongly coupled grids from real binarised images, where the exact ``log Z`` is still
    computable: scikit-learn's digits binarised (pixel > 7) and upsampled to 16 x 16 by a 2 x 2
    block (``kron16``: neighbouring pixels of a block always agree, the strongest couplings),
    upsampled to 16 x 16 and 20 x 20 by bilinear interpolation of the grey levels and then
    binarised (``zoom16``, ``zoom20``). Models fitted with default parameters by LAP,
    pseudo-likelihood and MCMC maximum likelihood (``random_state=0``). The exact ``log Z`` comes
    from a transfer matrix over the grid's rows (``grid_log_partition`` below: a frontier of
    ``rows`` binary variables, ``2^rows`` numbers, width 20 at 20 x 20), checked against the
    junction tree (width 22 with its min-fill order) at 16 x 16. Last, the data-generating model
    of simulated data: the LAP model of ``kron16`` sampled exactly (junction tree), with reverse
    AIS started from the simulated rows themselves.

For each model of ``images``: the old default (one run of 100 chains x 1000 steps on the unary
path) and the adaptive AIS (defaults of ``score_method="ais"``: 100 chains from 100 steps, a
budget of 400,000 sweeps, centred path), each with its error, its reported standard error and
their ratio ``z``; the interval ``[AIS lower end, tree bound]`` that a wide fitted model gets
(tree bound with ``TREE_BOUND_ITER`` = 25 L-BFGS iterations, as at the first score) and the one
with reverse AIS from exact draws (bidirectional Monte Carlo) where they exist, whether each
contains the exact value, their widths, and the time of each piece.

Usage::

    python benchmarks/ais_log_partition.py [--part random|images|all] [--jmax 100] [--out-dir benchmarks/results]

``--quick``: the random 8 x 8 grids and a 12 x 12 one; the ``kron16`` images with LAP and PL only.
"""

from __future__ import annotations

import argparse
import os
import platform
import warnings

import numpy as np
from _harness import best_of, header, load_average, peak_rss_mib
from scipy.ndimage import zoom
from sklearn.datasets import load_digits

from skmrf import LAPEstimator, MCMCMaxLikelihood, PseudoLikelihoodEstimator
from skmrf.datasets import make_random_mrf
from skmrf.estimators._log_partition import AIS_BUDGET, AIS_CHAINS, AIS_STEPS, TREE_BOUND_ITER
from skmrf.exceptions import TreewidthError
from skmrf.graphs import grid_graph, resolve_graph
from skmrf.inference import (
    adaptive_annealed_importance_sampling,
    annealed_importance_sampling,
    reverse_annealed_importance_sampling,
    tree_upper_bound,
)
from skmrf.inference._adaptive_ais import INTERVAL_SIGMAS

ESTIMATORS = {"LAP": LAPEstimator, "PL": PseudoLikelihoodEstimator, "MCMC": MCMCMaxLikelihood}


def grid_log_partition(model, rows, cols):
    """Exact ``log Z`` of a binary pairwise model on ``grid_graph(rows, cols)``, by a transfer matrix.

    Sites are added column by column; the frontier holds the last ``rows`` sites (one per row),
    ``2^rows`` numbers in the linear domain, rescaled after every site. Adding site ``(r, c)``
    sums out the frontier's ``(r, c - 1)`` with its coupling to the new site and multiplies in
    the new site's unary term and its coupling to ``(r - 1, c)``: ``O(2^rows)`` per site.
    """
    lay = model.layout
    unary = np.zeros(rows * cols)
    pair = {}
    for b, c in enumerate(lay.cliques):
        value = model.theta[lay.block_offsets[b]]
        if len(c) == 1:
            unary[c[0]] = value
        else:
            pair[c] = value
    v = np.zeros((2,) * rows)
    v[(0,) * rows] = 1.0  # the frontier before column 0: dummy sites fixed at 0, no coupling
    log_scale = 0.0
    for c in range(cols):
        for r in range(rows):
            i = r * cols + c
            left = pair.get((i - 1, i), 0.0) if c > 0 else 0.0
            v0, v1 = v.take(0, axis=r), v.take(1, axis=r)
            new0 = v0 + v1
            new1 = (v0 + np.exp(left) * v1) * np.exp(unary[i])
            if r > 0:
                at = [slice(None)] * (rows - 1)
                at[r - 1] = 1
                new1[tuple(at)] *= np.exp(pair.get((i - cols, i), 0.0))
            v = np.stack([new0, new1], axis=r)
            s = v.max()
            v /= s
            log_scale += np.log(s)
    return float(log_scale + np.log(v.sum()))


def image_data():
    """``{name: (X, rows)}``: the binarised digits upsampled three ways (see the module docstring)."""
    digits = load_digits().data.reshape(-1, 8, 8)
    X8 = (digits > 7).astype(np.int64)
    kron = np.array([np.kron(x, np.ones((2, 2), dtype=np.int64)) for x in X8])
    out = {"kron16": (kron.reshape(len(kron), -1), 16)}
    for size in (16, 20):
        z = np.array([zoom(x, size / 8, order=1) for x in digits])
        out[f"zoom{size}"] = ((z > 7).astype(np.int64).reshape(len(z), -1), size)
    return out


def _timed(f, *args, **kwargs):
    """``(f(*args, **kwargs), wall seconds)`` of one call."""
    _, wall, out = best_of(lambda: f(*args, **kwargs), 1, quiet=False)
    return out, wall


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


def part_random(out, jmax, quick=False):
    out(header("ais_log_partition.py random: AIS against the exact log Z on random grids"))
    out(f"load average before: {load_average()}; python {platform.python_version()}; one thread")
    out("Random grids, parameters uniform on [-1, 1]; one AIS run of 100 chains on each path, then the adaptive AIS")
    out()
    head = f"{'grid':>9} {'K':>2} {'method':<24} {'log Z exact':>12} {'AIS':>12} {'error':>8} {'std err':>8}"
    head += f" {'z':>6} {'s':>7}"
    out(head)
    out("-" * len(head))
    for J, K in [(8, 2), (8, 3), (jmax, 2)] if quick else [(8, 2), (16, 2), (8, 3), (jmax, 2)]:
        model = make_random_mrf(resolve_graph(grid_graph(J, J), J * J), K, 1.0, random_state=J)
        try:
            exact = model.log_partition()
        except TreewidthError:
            exact = None
        runs = [(f"{p} {t} steps", dict(path=p, steps=t)) for p in ("unary", "centred") for t in (100, 1000)]
        for label, spec in runs + [("adaptive (defaults)", None)]:
            if spec is None:
                res, dt = _timed(adaptive_annealed_importance_sampling, model, random_state=0)
                label = f"adaptive: {res.n_steps} steps"
            else:
                res, dt = _timed(annealed_importance_sampling, model, 100, spec["steps"], 0, spec["path"])
            if exact is None:
                cols = f"{'-':>12} {res.log_z:>12.3f} {'-':>8} {res.std_err:>8.4f} {'-':>6}"
            else:
                err = res.log_z - exact
                cols = f"{exact:>12.3f} {res.log_z:>12.3f} {err:>8.4f} {res.std_err:>8.4f} {err / res.std_err:>6.2f}"
            out(f"{J:>4}x{J:<4} {K:>2} {label:<24} {cols} {dt:>7.2f}")
    out()
    out(f"load average after: {load_average()}; peak memory {peak_rss_mib():.0f} MiB")


def _image_case(name, est_name, X, rows):
    """One fitted model of part ``images``: its two table rows, whether its intervals hold, the model."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ESTIMATORS[est_name](f"grid:{rows}x{rows}", random_state=0).fit(X).model_
    exact, t_exact = _timed(grid_log_partition, model, rows, rows)
    if rows <= 16:  # the junction tree fits: the transfer matrix must agree with it
        jt = model.log_partition()
        assert abs(jt - exact) <= 1e-9 * (1 + abs(exact)), (name, est_name, jt, exact)
    pair = np.abs(model.theta[np.repeat([len(c) == 2 for c in model.cliques], model.layout.block_sizes)])
    old = annealed_importance_sampling(model, 100, 1000, 0, path="unary")
    ad, t_ad = _timed(adaptive_annealed_importance_sampling, model, random_state=0, warn=False)
    tree, t_tree = _timed(tree_upper_bound, model, max_iter=TREE_BOUND_ITER, random_state=0)
    lower = ad.lower
    inside = lower <= exact <= tree.bound
    row2 = (
        f"{name:<7} {est_name:<5} {lower - exact:>7.3f} {tree.bound - exact:>8.3f} {tree.bound - lower:>10.3f} "
        f"{'yes' if inside else 'NO':>3}"
    )
    if rows <= 16:  # exact draws from the junction tree: reverse AIS, a tight upper end
        draws = model.sample(ad.n_chains, random_state=1, method="exact")
        rev, t_rev = _timed(reverse_annealed_importance_sampling, model, draws, ad.n_steps, 0)
        upper = min(tree.bound, rev.log_z + INTERVAL_SIGMAS * rev.std_err)
        inside &= lower <= exact <= upper
        row2 += (
            f" {rev.log_z - exact:>7.3f} {rev.std_err:>6.3f} {upper - lower:>10.3f}"
            f" {'yes' if lower <= exact <= upper else 'NO':>3} {t_tree:>6.2f} {t_rev:>6.2f}"
        )
    else:
        row2 += f" {'-':>7} {'-':>6} {'-':>10} {'-':>3} {t_tree:>6.2f} {'-':>6}"
    e_old, e_ad = old.log_z - exact, ad.log_z - exact
    row1 = (
        f"{name:<7} {est_name:<5} {exact:>9.3f} {pair.max():>6.2f} {e_old:>8.3f} {e_old / old.std_err:>7.1f} "
        f"{e_ad:>7.3f} {ad.std_err:>6.3f} {e_ad / ad.std_err:>5.2f} {ad.n_steps:>5} {ad.sweeps:>8,} "
        f"{'yes' if ad.converged else 'no':>4} {t_ad:>6.2f} {t_exact:>7.2f}"
    )
    print(row1, "|", row2, flush=True)
    return row1, row2, inside, model


def _generator_case(generator):
    """The data-generating model of simulated data: its simulated rows are exact draws of it."""
    X_sim = generator.sample(1437, random_state=2, method="exact")
    exact = generator.log_partition()
    ad = adaptive_annealed_importance_sampling(generator, random_state=3, warn=False)
    rev, t_rev = _timed(reverse_annealed_importance_sampling, generator, X_sim[: ad.n_chains], ad.n_steps, 4)
    upper = rev.log_z + INTERVAL_SIGMAS * rev.std_err
    inside = ad.lower <= exact <= upper
    line = (
        f"kron16 generator (LAP model), reverse AIS from {ad.n_chains} of its 1437 simulated rows: "
        f"AIS lower {ad.lower - exact:+.3f}, reverse {rev.log_z - exact:+.3f} (se {rev.std_err:.3f}), "
        f"interval width {upper - ad.lower:.3f}, contains: {'yes' if inside else 'NO'}, {t_rev:.2f} s"
    )
    return line, inside


def part_images(out, quick=False):
    out(header("ais_log_partition.py images: AIS and its interval on models fitted to binarised images"))
    out(f"load average before: {load_average()}; python {platform.python_version()}; one thread")
    out(
        f"adaptive AIS: {AIS_CHAINS} chains from {AIS_STEPS} steps, budget {AIS_BUDGET:,} sweeps, path auto; "
        f"old: one run of 100 chains x 1000 steps, unary path; tree bound: {TREE_BOUND_ITER} L-BFGS iterations; "
        f"interval ends {INTERVAL_SIGMAS:g} standard errors beyond a stochastic estimate"
    )
    out()
    h1 = (
        f"{'data':<7} {'est':<5} {'exact':>9} {'max|J|':>6} {'old err':>8} {'old z':>7} {'ad err':>7} {'ad se':>6} "
        f"{'ad z':>5} {'steps':>5} {'sweeps':>8} {'conv':>4} {'t ad':>6} {'t exact':>7}"
    )
    h2 = (
        f"{'data':<7} {'est':<5} {'low-ex':>7} {'tree-ex':>8} {'[AIS,tree]':>10} {'in':>3} {'rev-ex':>7} {'rev se':>6} "
        f"{'[AIS,BDMC]':>10} {'in':>3} {'t tree':>6} {'t rev':>6}"
    )
    first, second = [h1, "-" * len(h1)], [h2, "-" * len(h2)]
    all_in, models = True, {}
    data = image_data()
    for name, (X, rows) in ({"kron16": data["kron16"]} if quick else data).items():
        for est_name in ("LAP", "PL") if quick else ESTIMATORS:
            row1, row2, inside, models[name, est_name] = _image_case(name, est_name, X, rows)
            first.append(row1)
            second.append(row2)
            all_in &= inside
    generator_line, inside = _generator_case(models["kron16", "LAP"])
    all_in &= inside
    out("Estimates of log Z (err = estimate - exact, z = err / reported standard error)")
    out()
    for line in first:
        out(line)
    out()
    out("Intervals (ends minus the exact log Z; widths in nats, the same for every row's score)")
    out()
    for line in second + [generator_line, ""]:
        out(line)
    out(f"every interval contains the exact log Z: {'yes' if all_in else 'NO'}")
    out("max|J|: largest |pair parameter|; old: 100 x 1000 unary path; ad: adaptive AIS (defaults);")
    out("low: AIS lower end; tree: tree-reweighted bound; rev: reverse AIS from exact draws (junction tree)")
    out("on the adaptive's last schedule;")
    out("[AIS,BDMC]: [low, min(tree, rev + 3 se)]; times in seconds (t exact: transfer matrix)")
    out(f"load average after: {load_average()}; peak memory {peak_rss_mib():.0f} MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["random", "images", "all"], default="all")
    ap.add_argument("--jmax", type=int, default=100)
    ap.add_argument("--out-dir", default=None, help="also write the tables to this directory")
    ap.add_argument("--quick", action="store_true", help="8x8 and 12x12 random grids; kron16 with LAP and PL")
    args = ap.parse_args()
    if args.quick:
        args.jmax = 12
    for part in ["random", "images"] if args.part == "all" else [args.part]:
        name = "ais_log_partition" if part == "random" else "ais_log_partition_images"
        out = _Table(None if args.out_dir is None else os.path.join(args.out_dir, f"{name}.txt"))
        part_random(out, args.jmax, args.quick) if part == "random" else part_images(out, args.quick)
        out.save()


if __name__ == "__main__":
    main()
