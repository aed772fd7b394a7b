"""Accuracy of LAP and pseudo-likelihood against exact ML (LAP paper, Section 4, Figs. 2-4).

For a 4x4 Ising grid, a 4x4x4 Ising lattice and a Chimera 3x3x3 model with
parameters uniform on [-1, 1], draw N exact samples, fit exact ML, PL and LAP
with the exact (LAP_E), dense (LAP_D) and pairwise (LAP_P) auxiliary MRFs,
and report the mean relative error ``||theta - theta_ML|| / ||theta_ML||``
(with its standard deviation over seeds) and the variance of each estimator
(per parameter across seeds, averaged over parameters). Writes a table
(stdout and ``lap_accuracy.txt``) and a figure (``lap_accuracy.png``).

Also measures LAP's ``node_rule`` options on the binarised 8x8 digits data
(scikit-learn's ``load_digits``): held-out exact log-likelihood per variable,
averaged over a 5-fold split.

Usage::

    python benchmarks/lap_accuracy.py [--seeds 5] [--sizes 100,300,1000,3000,10000] [--digits-only] [--out DIR]
    python benchmarks/lap_accuracy.py --read   # LAP's read="centred" against read="theta" on digits
    python benchmarks/lap_accuracy.py --quick  # 2 seeds, N = 100 and 300, 2-fold digits, one BLAS thread; print only
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _harness import header, limit_blas

from skmrf import ExactMaxLikelihood, chimera_graph, grid_graph, lattice_graph
from skmrf.datasets import make_random_mrf
from skmrf.estimators._lap import LAPEstimator
from skmrf.estimators._pseudo import PseudoLikelihoodEstimator
from skmrf.metrics import mean_parameter_variance, relative_error

MODELS = {
    "grid 4x4": lambda: grid_graph(4, 4),
    "lattice 4x4x4": lambda: lattice_graph((4, 4, 4)),
    "chimera 3x3x3": lambda: chimera_graph(3, 3, 3),
}
# One small ridge for every estimator (ML included): at N = 100 some clique
# states go unobserved and the unpenalised estimates would diverge.
ALPHA = 1e-3
ESTIMATORS = {
    "PL": lambda g: PseudoLikelihoodEstimator(g, alpha=ALPHA, tol=1e-6, score_method="pseudo"),
    "LAP_E": lambda g: LAPEstimator(g, strategy="exact", alpha=ALPHA, score_method="pseudo"),
    "LAP_D": lambda g: LAPEstimator(g, strategy="dense", alpha=ALPHA, score_method="pseudo"),
    "LAP_P": lambda g: LAPEstimator(g, strategy="pairwise", alpha=ALPHA, score_method="pseudo"),
}


def accuracy(sizes, seeds, out):
    """The accuracy table (and figure), written to ``out`` unless it is None."""
    rows = []
    curves = {}
    for name, make in MODELS.items():
        graph = make()
        for n in sizes:
            errs = {k: [] for k in ESTIMATORS}
            ests = {k: [] for k in [*ESTIMATORS, "ML"]}
            times = {k: 0.0 for k in [*ESTIMATORS, "ML"]}
            # One generating model per topology; seeds vary the samples, so the
            # variance is that of each estimator (LAP paper, Section 4).
            model = make_random_mrf(graph, 2, 1.0, random_state=0)
            for seed in range(seeds):
                X = model.sample(n, random_state=1000 + seed, method="exact")
                with warnings.catch_warnings():
                    # Small N: some clique states may be unobserved (clipped estimates).
                    warnings.simplefilter("ignore")
                    t = time.perf_counter()
                    ml = ExactMaxLikelihood(graph, alpha=ALPHA, tol=1e-6, score_method="pseudo").fit(X).theta_
                    times["ML"] += time.perf_counter() - t
                    ests["ML"].append(ml)
                    for k, make_est in ESTIMATORS.items():
                        t = time.perf_counter()
                        th = make_est(graph).fit(X).theta_
                        times[k] += time.perf_counter() - t
                        ests[k].append(th)
                        errs[k].append(relative_error(th, ml))
            for k in ESTIMATORS:
                rows.append(
                    (name, n, k, np.mean(errs[k]), np.std(errs[k]), mean_parameter_variance(ests[k]), times[k] / seeds)
                )
                curves.setdefault((name, k), []).append((n, np.mean(errs[k]), np.std(errs[k]), rows[-1][5]))
            rows.append((name, n, "ML", 0.0, 0.0, mean_parameter_variance(ests["ML"]), times["ML"] / seeds))
            curves.setdefault((name, "ML"), []).append((n, 0.0, 0.0, rows[-1][5]))
            v_ml = rows[-1][5]
            for r in rows[-len(ESTIMATORS) - 1 :]:
                print(
                    f"  {r[0]:<15} {r[1]:>6} {r[2]:<6} rel.err {r[3]:.4f} ({r[4]:.4f}) var {r[5]:.5f} "
                    f"var/var_ML {r[5] / v_ml:.3f} fit {r[6]:.2f} s",
                    flush=True,
                )
    lines = [
        f"{'model':<15} {'N':>6} {'est':<6} {'rel.err vs ML':>14} {'(std)':>8} {'variance':>10} "
        f"{'var/var_ML':>10} {'fit s':>7}"
    ]
    var_ml = {(r[0], r[1]): r[5] for r in rows if r[2] == "ML"}
    for r in rows:
        lines.append(
            f"{r[0]:<15} {r[1]:>6} {r[2]:<6} {r[3]:>14.4f} {r[4]:>8.4f} {r[5]:>10.5f} "
            f"{r[5] / var_ml[(r[0], r[1])]:>10.3f} {r[6]:>7.3f}"
        )
    text = "\n".join(lines)
    print(text)
    if out is None:
        return
    with open(os.path.join(out, "lap_accuracy.txt"), "w") as fh:
        fh.write(text + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no figure")
        return
    fig, axes = plt.subplots(2, len(MODELS), figsize=(4 * len(MODELS), 7))
    for j, name in enumerate(MODELS):
        for k in [*ESTIMATORS, "ML"]:
            c = np.array(curves[(name, k)])
            if k != "ML":
                axes[0, j].errorbar(c[:, 0], c[:, 1], yerr=c[:, 2], label=k, capsize=2)
            axes[1, j].plot(c[:, 0], c[:, 3], marker="o", label=k)
        axes[0, j].set(xscale="log", yscale="log", title=name, xlabel="N", ylabel="relative error vs ML")
        axes[1, j].set(xscale="log", yscale="log", xlabel="N", ylabel="mean parameter variance")
        axes[0, j].legend()
        axes[1, j].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "lap_accuracy.png"), dpi=100)
    print("figure written to", os.path.join(out, "lap_accuracy.png"))


def _held_out(X, folds, **params):
    """Held-out exact log-likelihood per variable of LAP on the 8x8 grid, one value per fold."""
    values = []
    for tr, te in folds:
        est = LAPEstimator("grid:8x8", n_states=2, **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X[tr])
        values.append(est.score(X[te]) / X.shape[1])
    return np.array(values)


def digits_node_rule(alphas=(1e-4, 1e-2), n_folds=5, strategies=("pairwise", "exact")):
    """Held-out exact log-likelihood per variable of each node_rule on binarised digits."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import KFold

    X = (load_digits().data >= 8).astype(np.int64)
    print(f"\nDigits: {X.shape[0]} images, 8x8 grid, binarised at >= 8; {n_folds}-fold held-out log-likelihood")
    head = f"{'strategy':<9} {'alpha':>7} {'node_rule':<9} {'LL/var (mean)':>14} {'(std)':>8}"
    print(head + f" {'vs mean':>9} {'(std)':>8}")
    folds = list(KFold(n_folds, shuffle=True, random_state=0).split(X))
    for strategy in strategies:
        for alpha in alphas:
            res = {
                rule: _held_out(X, folds, strategy=strategy, node_rule=rule, alpha=alpha)
                for rule in ("mean", "first", "own")
            }
            for rule, v in res.items():
                print(
                    f"{strategy:<9} {alpha:>7.0e} {rule:<9} {v.mean():>14.5f} {v.std():>8.5f} "
                    f"{(v - res['mean']).mean():>+9.5f} {(v - res['mean']).std():>8.5f}"
                )
    ml = []
    for tr, te in folds:
        ml.append(ExactMaxLikelihood("grid:8x8", n_states=2, alpha=1e-2).fit(X[tr]).score(X[te]) / X.shape[1])
    print(f"exact ML (alpha=1e-2): {np.mean(ml):.5f} ({np.std(ml):.5f})")


def digits_read(alphas=("auto", 1e-4, 1e-2), n_folds=5):
    """Held-out exact log-likelihood per variable of LAP's two reads on binarised digits, paired by fold."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import KFold

    X = (load_digits().data >= 8).astype(np.int64)
    print(f"\nDigits, LAP's read: {n_folds}-fold held-out log-likelihood per variable (load {os.getloadavg()[0]:.2f})")
    print(f"{'strategy':<9} {'alpha':>7} {'centred':>10} {'theta':>10} {'centred - theta':>16} {'(std)':>8}")
    folds = list(KFold(n_folds, shuffle=True, random_state=0).split(X))
    for strategy in ("pairwise", "exact"):
        for alpha in alphas:
            res = {
                read: _held_out(X, folds, strategy=strategy, read=read, alpha=alpha) for read in ("centred", "theta")
            }
            d = res["centred"] - res["theta"]
            print(
                f"{strategy:<9} {alpha!s:>7} {res['centred'].mean():>10.5f} {res['theta'].mean():>10.5f} "
                f"{d.mean():>+16.5f} {d.std():>8.5f}"
            )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--sizes", default="100,300,1000,3000,10000")
    p.add_argument("--digits-only", action="store_true")
    p.add_argument("--no-digits", action="store_true")
    p.add_argument("--read", action="store_true", help="only LAP's read='centred' against read='theta' on digits")
    p.add_argument("--out", default=None, help="directory for lap_accuracy.txt and .png (default: . ; --quick: none)")
    p.add_argument("--quick", action="store_true", help="2 seeds, N = 100 and 300, 2-fold digits (pairwise, one alpha)")
    a = p.parse_args()
    if a.out is None and not a.quick:
        a.out = "."
    if a.quick:
        a.seeds, a.sizes = 2, "100,300"
        limit_blas(1)  # a loaded machine's second BLAS thread slows the small products
    print(header("lap_accuracy.py: LAP and PL against exact ML (LAP paper, Section 4)", 1 if a.quick else None))
    if a.read:
        digits_read()
        return
    if not a.digits_only:
        accuracy([int(s) for s in a.sizes.split(",")], a.seeds, a.out)
    if not a.no_digits:
        digits_node_rule(**(dict(alphas=(1e-2,), n_folds=2, strategies=("pairwise",)) if a.quick else {}))


if __name__ == "__main__":
    main()
