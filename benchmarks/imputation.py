"""MRFImputer and MRFClassifier against scikit-learn's imputers and classifiers.

Three parts, each one table per setting (accuracy; time per fit + transform):

1. **digits** (``--parts digits``): scikit-learn's ``load_digits`` binarised at ``> 7``
   (1797 rows x 64 pixels; 10 pixels are 0 in every image). 5-fold
   ``KFold(shuffle=True, random_state=0)``; in every test fold 10-50 % of the entries are
   hidden at random (seeded by fold and fraction; the same mask for every imputer), and the
   accuracy is the fraction of hidden test entries imputed correctly, pooled over the folds.
   Two training settings: (a) training rows complete; (b) training rows with the same
   fraction hidden (seeded apart). In (b) DecomposedEM fits the incomplete rows; the other
   skmrf estimators need complete rows, and below 1 % of the rows have none missing at 10 %.
   scikit-learn: ``SimpleImputer(most_frequent)``, ``KNNImputer`` (default ``n_neighbors=5``,
   and the best ``n_neighbors`` of ``KNN_GRID`` chosen *on the test folds*, an optimistic
   figure), ``IterativeImputer`` with ``BayesianRidge`` (its default) and with a logistic
   regression (a regressor returning ``P(x_j = 1 | rest)``, for IterativeImputer needs
   ``predict``), both rounded and clipped to 0/1.
   skmrf: ``MRFImputer()`` (its default, DecomposedEM on a chain), ``MRFImputer(estimator)``
   with ExactMaxLikelihood / DecomposedEM on the 4-neighbour grid and the 8-neighbour grid,
   and PseudoLikelihoodEstimator / LAPEstimator on wider neighbourhoods ``rN`` (pixels joined
   when their squared distance is at most N: r1 = the 4-neighbour grid, r2 = the 8-neighbour
   "king" grid, r5 = up to 20 neighbours, r18 = up to 56) and the complete graph, at several
   ``alpha`` (``"auto"`` = 1/1437 unless named); ``method="marginal"`` unless ``map`` is
   named. LAPEstimator on r5 is refused (NeighbourhoodTooLargeError: 2^18 joint states of a
   1-neighbourhood, over ``max_neighbourhood_states``), so it stops at r2. Queries run at
   MRFImputer's default ``max_bytes`` (16 MiB per component since f031263; wider components
   of missing pixels go to clamped Gibbs chains with an ApproximateInferenceWarning): under
   the former 2 GiB default a complete-graph row with 24 missing pixels took 16 s and one with
   26 took 70 s exactly; ``--query-scaling`` times one row both ways by missing count.
   ``latent K`` (``--latent``, not in the default run) is a
   mixture of Bernoullis written as an MRF: a column of K states, never observed, joined to
   every pixel and fitted by ``DecomposedEM(init="random")``; DecomposedEM refuses a column
   with no observed entry, so K rows of weight 1e-6 observe only it (a workaround).
   An imputer whose fit + transform took more than ``--budget`` seconds per fold at one
   fraction is skipped at the larger ones (``skip``).
2. **tables** (``--parts tables``): R's ``datasets::Titanic`` (Class, Sex, Age, Survived;
   2201 people) and ``MASS::housing`` (Sat, Infl, Type, Cont; 1681 people), both expanded to
   one row per person with ordinal codes (counts written out below, printed by
   ``Rscript -e 'as.data.frame(Titanic)'`` and ``Rscript -e 'library(MASS); housing'``).
   The same protocol (5 folds, 10-50 % of the test entries hidden, settings a and b).
   skmrf: ExactMaxLikelihood / DecomposedEM on the complete pairwise graph, DecomposedEM
   on a chain and a star (hub: Survived / Sat), and the saturated model (one clique of all
   four columns: the empirical contingency table with a ridge) as a reference.
3. **classify** (``--parts classify``): binarised digits, 5-fold CV accuracy (the same
   folds) and fit time: MRFClassifier on the star (naive Bayes; alpha 0 and "auto"), on the
   grid (exact ML) and on wider graphs (``estimator="pl"``), against BernoulliNB,
   CategoricalNB and LogisticRegression.

Warnings are recorded per imputer / classifier and printed after each table (category,
count, first message); an exception is a cell ``err`` and its message is printed.

Usage::

    python benchmarks/imputation.py [--parts digits,tables,classify] [--fractions 0.1,0.2,0.3,0.4,0.5]
        [--folds 5] [--settings a,b] [--budget 120] [--query-scaling] [--latent 30,150] [--mrf REGEX]
        [--quick] [--out DIR] [--out-name imputation.txt]

``--quick`` runs two folds, the fraction 0.3, two MRF imputers and four classifiers (a smoke test).
The committed runs: ``--query-scaling --out benchmarks/results`` (``imputation.txt``) and
``--parts digits --fractions 0.3 --latent 150 --mrf latent --out benchmarks/results
--out-name imputation_latent.txt``.
``--out benchmarks/results`` writes ``imputation.txt``. BLAS is held to one thread
(threadpoolctl), as in the other benchmarks on this shared 2-core machine; timings are wall
seconds and depend on the load average printed at the start and at the end.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import time
import warnings

import numpy as np
import sklearn
from _harness import header, limit_blas, load_average
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.datasets import load_digits
from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
from sklearn.naive_bayes import BernoulliNB, CategoricalNB

from skmrf import (
    DecomposedEM,
    ExactMaxLikelihood,
    LAPEstimator,
    MRFClassifier,
    MRFImputer,
    PseudoLikelihoodEstimator,
)

FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)
KNN_GRID = (1, 3, 5, 7, 10, 15, 20, 30)

# R's datasets::Titanic, as.data.frame order (Class fastest, then Sex, Age, Survived).
TITANIC_LEVELS = {
    "Class": ("1st", "2nd", "3rd", "Crew"),
    "Sex": ("Male", "Female"),
    "Age": ("Child", "Adult"),
    "Survived": ("No", "Yes"),
}
TITANIC_FREQ = (
    0, 0, 35, 0, 0, 0, 17, 0, 118, 154, 387, 670, 4, 13, 89, 3,
    5, 11, 13, 0, 1, 13, 14, 0, 57, 14, 75, 192, 140, 80, 76, 20,
)  # fmt: skip
# MASS::housing (Sat fastest, then Infl, Type, Cont).
HOUSING_LEVELS = {
    "Sat": ("Low", "Medium", "High"),
    "Infl": ("Low", "Medium", "High"),
    "Type": ("Tower", "Apartment", "Atrium", "Terrace"),
    "Cont": ("Low", "High"),
}
HOUSING_FREQ = (
    21, 21, 28, 34, 22, 36, 10, 11, 36, 61, 23, 17, 43, 35, 40, 26, 18, 54,
    13, 9, 10, 8, 8, 12, 6, 7, 9, 18, 6, 7, 15, 13, 13, 7, 5, 11,
    14, 19, 37, 17, 23, 40, 3, 5, 23, 78, 46, 43, 48, 45, 86, 15, 25, 62,
    20, 23, 20, 10, 22, 24, 7, 10, 21, 57, 23, 13, 31, 21, 13, 5, 6, 13,
)  # fmt: skip


# ----------------------------------------------------------------------------- data


def binarised_digits():
    """load_digits binarised at > 7: (1797, 64) int64 and the labels."""
    d = load_digits()
    return (d.data > 7).astype(np.int64), d.target


def expand_table(levels, freq):
    """One row per person, ordinal codes, from counts in R's as.data.frame order (first factor fastest)."""
    shape = tuple(len(v) for v in levels.values())
    assert len(freq) == int(np.prod(shape)) == len(freq)
    cells = np.array(np.unravel_index(np.arange(len(freq)), shape[::-1])).T[:, ::-1]  # first factor fastest
    return np.repeat(cells, np.asarray(freq), axis=0).astype(np.int64)


def radius_edges(radius2, rows=8, cols=8):
    """Pixel pairs of an rows x cols image whose squared distance is at most ``radius2``."""
    r, c = np.divmod(np.arange(rows * cols), cols)
    d2 = (r[:, None] - r[None, :]) ** 2 + (c[:, None] - c[None, :]) ** 2
    i, j = np.nonzero(np.triu((d2 <= radius2) & (d2 > 0)))
    return list(zip(i.tolist(), j.tolist()))


def hide(X, frac, seed):
    """X as float with a seeded fraction ``frac`` of its entries set to NaN, and the mask."""
    mask = np.random.default_rng(seed).random(X.shape) < frac
    Xm = X.astype(np.float64)
    Xm[mask] = np.nan
    return Xm, mask


# ----------------------------------------------------------------------------- imputers


class LogisticProba(RegressorMixin, BaseEstimator):
    """A logistic regression that predicts ``P(y = 1)``: a classifier IterativeImputer can use.

    Columns with one value in the training rows predict that value.
    """

    def __init__(self, C=1.0, max_iter=1000):
        self.C = C
        self.max_iter = max_iter

    def fit(self, X, y):
        y = np.rint(np.asarray(y)).astype(int)
        self.constant_ = None
        if np.unique(y).size < 2:
            self.constant_ = float(y[0]) if y.size else 0.0
        else:
            self.clf_ = LogisticRegression(C=self.C, max_iter=self.max_iter).fit(X, y)
        return self

    def predict(self, X):
        if self.constant_ is not None:
            return np.full(len(X), self.constant_)
        return self.clf_.predict_proba(X)[:, list(self.clf_.classes_).index(1)]


class LatentClassImputer(BaseEstimator):
    """A mixture of categorical distributions as an MRF: one never-observed column of ``K`` states
    joined to every column (plus ``extra_edges``), fitted by DecomposedEM from a random start.

    DecomposedEM refuses a column with no observed entry, so ``K`` rows of weight ``1e-6`` observe
    only the latent column (one per state) and nothing else.
    """

    def __init__(self, K=30, extra_edges=(), random_state=0, max_iter=500):
        self.K = K
        self.extra_edges = extra_edges
        self.random_state = random_state
        self.max_iter = max_iter

    def _with_latent(self, X):
        return np.column_stack([X, np.full(len(X), np.nan)])

    def fit(self, X):
        X = np.asarray(X, dtype=np.float64)
        p, K = X.shape[1], self.K
        anchors = np.full((K, p + 1), np.nan)
        anchors[:, p] = np.arange(K)
        Xa = np.vstack([self._with_latent(X), anchors])
        weight = np.r_[np.ones(len(X)), np.full(K, 1e-6)]
        states = np.r_[np.maximum(np.nanmax(X, axis=0) + 1, 2), K].astype(int)
        est = DecomposedEM(
            [(j, p) for j in range(p)] + list(self.extra_edges),
            init="random",
            random_state=self.random_state,
            max_iter=self.max_iter,
            n_states=states,
        )
        self.imputer_ = MRFImputer(est).fit(Xa, sample_weight=weight)
        return self

    def transform(self, X):
        return self.imputer_.transform(self._with_latent(np.asarray(X, dtype=np.float64)))[:, :-1]


def sklearn_imputers(levels_max):
    """The scikit-learn imputers: name -> factory (KNN tuned separately)."""
    return {
        "Simple most_frequent": lambda: SimpleImputer(strategy="most_frequent"),
        "KNN k=5 (default)": lambda: KNNImputer(),
        "Iterative BayesianRidge": lambda: IterativeImputer(random_state=0, min_value=0, max_value=levels_max),
        "Iterative logistic P(x=1)": lambda: IterativeImputer(
            estimator=LogisticProba(), random_state=0, min_value=0, max_value=levels_max
        ),
    }


def digits_mrf_imputers(quick=False):
    """The MRF imputers on digits: name -> (factory, settings it runs in)."""
    grid = "grid:8x8"
    king = radius_edges(2)

    def pl(g, alpha="auto"):
        return PseudoLikelihoodEstimator(g, alpha=alpha, score_method="pseudo")

    def lap(g, alpha="auto"):
        return LAPEstimator(g, alpha=alpha, score_method="pseudo")

    both, complete = ("a", "b"), ("a",)
    out = {
        "MRFImputer() (DecomposedEM chain)": (lambda: MRFImputer(), both),
        "MRF ExactML grid": (lambda: MRFImputer(ExactMaxLikelihood(grid)), both),
        "MRF DecomposedEM grid": (lambda: MRFImputer(DecomposedEM(grid)), both),
        "MRF DecomposedEM r2 (king)": (lambda: MRFImputer(DecomposedEM(king)), both),
        "MRF PL grid": (lambda: MRFImputer(pl(grid)), complete),
        "MRF ExactML r2 (king)": (lambda: MRFImputer(ExactMaxLikelihood(king)), complete),
        "MRF PL r2 (king)": (lambda: MRFImputer(pl(king)), complete),
        "MRF LAP r2 (king)": (lambda: MRFImputer(lap(king)), complete),
        "MRF LAP r2 (king) a=1e-2": (lambda: MRFImputer(lap(king, 1e-2)), complete),
        "MRF PL r5": (lambda: MRFImputer(pl(radius_edges(5))), complete),
        "MRF PL r5 a=1e-4": (lambda: MRFImputer(pl(radius_edges(5), 1e-4)), complete),
        "MRF PL r5 a=1e-2": (lambda: MRFImputer(pl(radius_edges(5), 1e-2)), complete),
        "MRF PL r5 map": (lambda: MRFImputer(pl(radius_edges(5)), method="map"), complete),
        "MRF PL r18": (lambda: MRFImputer(pl(radius_edges(18)), random_state=0), complete),
        "MRF PL complete": (lambda: MRFImputer(pl("complete"), random_state=0), complete),
    }
    if quick:
        keep = ("MRF DecomposedEM grid", "MRF PL r2 (king)")
        out = {k: v for k, v in out.items() if k in keep}
    return out


# ----------------------------------------------------------------------------- running


class Record:
    """Accuracies, times, warnings and errors of one table."""

    def __init__(self):
        self.hits = {}  # (name, frac) -> [correct, total] pooled over folds
        self.fold_acc = {}  # (name, frac) -> [per-fold accuracy]
        self.fit_s = {}  # (name, frac) -> [s]
        self.transform_s = {}
        self.warns = {}  # name -> {(category, message head): count}
        self.errors = {}  # name -> message
        self.skipped = {}  # name -> first fraction skipped


def _head(message, n=240):
    return " ".join(str(message).split())[:n]


def _tally(caught):
    """Warnings by category and message with its numbers masked: {key: [count, first message]}."""
    seen = {}
    for w in caught:
        msg = _head(w.message)
        key = (w.category.__name__, re.sub(r"\d[\d.,]*", "#", msg))
        entry = seen.setdefault(key, [0, msg])
        entry[0] += 1
    return seen


def _merge(into, seen):
    for key, (count, msg) in seen.items():
        entry = into.setdefault(key, [0, msg])
        entry[0] += count


def run_one(factory, Xtr, Xte_missing, truth, mask, levels_max):
    """Fit on Xtr, impute Xte_missing; (correct, total, fit s, transform s, warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        imp = factory()
        t0 = time.perf_counter()
        imp.fit(Xtr)
        t1 = time.perf_counter()
        out = np.asarray(imp.transform(Xte_missing), dtype=np.float64)
        t2 = time.perf_counter()
    filled = np.clip(np.rint(out[mask]), 0, np.broadcast_to(levels_max, truth.shape)[mask])
    correct = int((filled == truth[mask]).sum())
    return correct, int(mask.sum()), t1 - t0, t2 - t1, _tally(caught)


def impute_table(X, levels_max, imputers, setting, fractions, folds, budget, out, knn_grid=KNN_GRID):
    """Run every imputer over the folds and fractions of one training setting; a Record."""
    rec = Record()
    splits = list(KFold(folds, shuffle=True, random_state=0).split(X))
    knn = {k: (lambda k=k: KNNImputer(n_neighbors=k)) for k in knn_grid}
    for frac in fractions:
        t_frac = time.perf_counter()
        for f, (tr, te) in enumerate(splits):
            Xte, mask = hide(X[te], frac, seed=1000 * f + round(100 * frac))
            if setting == "b":
                Xtr, _ = hide(X[tr], frac, seed=50000 + 1000 * f + round(100 * frac))
            else:
                Xtr = X[tr].astype(np.float64)
            for name, factory in list(imputers.items()) + [(f"KNN k={k}", g) for k, g in knn.items()]:
                if name in rec.skipped or name in rec.errors:
                    continue
                try:
                    c, n, tf, tt, seen = run_one(factory, Xtr, Xte, X[te], mask, levels_max)
                except Exception as ex:  # noqa: BLE001 - a benchmark reports, never stops
                    rec.errors[name] = f"frac {frac} fold {f}: {type(ex).__name__}: {_head(ex, 400)}"
                    continue
                h = rec.hits.setdefault((name, frac), [0, 0])
                h[0] += c
                h[1] += n
                rec.fold_acc.setdefault((name, frac), []).append(c / max(n, 1))
                rec.fit_s.setdefault((name, frac), []).append(tf)
                rec.transform_s.setdefault((name, frac), []).append(tt)
                _merge(rec.warns.setdefault(name, {}), seen)
        for name in imputers if frac != fractions[-1] else ():  # a skip needs a larger fraction to skip
            s = rec.fit_s.get((name, frac))
            if s and np.mean(s) + np.mean(rec.transform_s[(name, frac)]) > budget and name not in rec.skipped:
                rec.skipped[name] = frac
        out(f"  [{setting}: fraction {frac:.0%} done in {time.perf_counter() - t_frac:.0f} s]")
    return rec


def _acc(rec, name, frac):
    h = rec.hits.get((name, frac))
    return None if not h or len(rec.fold_acc[(name, frac)]) == 0 else h[0] / h[1]


def _cell_acc(rec, name, frac, folds):
    a = _acc(rec, name, frac)
    if a is None:
        return "skip" if name in rec.skipped else ("err" if name in rec.errors else "-")
    partial = len(rec.fold_acc[(name, frac)]) < folds
    return f"{a:.4f}" + ("*" if partial else " ")


def _cell_time(rec, name, frac):
    s = rec.fit_s.get((name, frac))
    if not s:
        return "-"
    return f"{np.mean(s):.2f}+{np.mean(rec.transform_s[(name, frac)]):.2f}"


def print_table(rec, names, fractions, folds, title, out, baseline_names, knn_grid=KNN_GRID):
    """Accuracy and time tables, best-k KNN, best MRF vs best scikit-learn, warnings, errors."""
    out(f"\n== {title} ==")
    # KNN tuned on the test folds.
    best_k = {}
    for frac in fractions:
        accs = {k: _acc(rec, f"KNN k={k}", frac) for k in knn_grid}
        accs = {k: a for k, a in accs.items() if a is not None}
        if accs:
            best_k[frac] = max(accs, key=accs.get)
    tuned = "KNN k=best (tuned on test)"
    for frac, k in best_k.items():
        for d in (rec.hits, rec.fold_acc, rec.fit_s, rec.transform_s):
            d[(tuned, frac)] = d[(f"KNN k={k}", frac)]
    rows = list(baseline_names[:2]) + [tuned] + list(baseline_names[2:]) + list(names)
    width = max(len(r) for r in rows) + 1
    head = f"{'imputer':<{width}}" + "".join(f"{f'{frac:.0%} hidden':>12}" for frac in fractions)
    out(
        "accuracy on the hidden test entries (pooled over folds; * = not every fold ran; err = raised here or at "
        "a smaller fraction, message below; skip = over --budget)"
    )
    out(head)
    out("-" * len(head))
    for r in rows:
        out(f"{r:<{width}}" + "".join(f"{_cell_acc(rec, r, frac, folds):>12}" for frac in fractions))
    out(f"{'  KNN best k':<{width}}" + "".join(f"{best_k.get(frac, '-'):>12}" for frac in fractions))
    out("KNN n_neighbors accuracy (the tuning grid):")
    for k in knn_grid:
        cells = "".join(f"{_cell_acc(rec, f'KNN k={k}', frac, folds):>12}" for frac in fractions)
        out(f"{f'  k={k}':<{width}}" + cells)
    out("\nseconds per fold, fit + transform (mean over folds)")
    out(head)
    out("-" * len(head))
    for r in rows:
        out(f"{r:<{width}}" + "".join(f"{_cell_time(rec, r, frac):>12}" for frac in fractions))
    # Best MRF vs best scikit-learn (KNN tuned included), paired over folds.
    out("\nbest MRF vs best scikit-learn at each fraction (difference of pooled accuracies; fold-paired sd)")
    sk_rows = list(baseline_names[:2]) + [tuned] + list(baseline_names[2:])
    for frac in fractions:
        mrf = {r: _acc(rec, r, frac) for r in names if _acc(rec, r, frac) is not None}
        sk = {r: _acc(rec, r, frac) for r in sk_rows if _acc(rec, r, frac) is not None}
        if not mrf or not sk:
            continue
        bm, bs = max(mrf, key=mrf.get), max(sk, key=sk.get)
        fa, fb = rec.fold_acc[(bm, frac)], rec.fold_acc[(bs, frac)]
        sd = np.std(np.subtract(fa, fb), ddof=1) if len(fa) == len(fb) > 1 else float("nan")
        verdict = "MRF ahead" if mrf[bm] > sk[bs] else "scikit-learn ahead"
        out(
            f"  {frac:.0%}: {bm} {mrf[bm]:.4f} ({_cell_time(rec, bm, frac)} s) vs {bs} {sk[bs]:.4f} "
            f"({_cell_time(rec, bs, frac)} s): {mrf[bm] - sk[bs]:+.4f} (sd {sd:.4f}) {verdict}"
        )
    if rec.skipped:
        out("skipped (fit + transform over --budget s per fold at the fraction before): " + str(rec.skipped))
    for name, msg in rec.errors.items():
        out(f"error {name}: {msg}")
    for name in rows:
        for (cat, _), (count, msg) in rec.warns.get(name, {}).items():
            out(f"warning {name}: {count} x {cat}, first: {msg}")


def digits_part(a, out):
    X, _ = binarised_digits()
    out(f"\n#### 1. binarised digits: {X.shape[0]} x {X.shape[1]}, {int((X.max(axis=0) == 0).sum())} pixels always 0")
    out(
        "graph rN: pixels joined when squared distance <= N; edges per graph: "
        + ", ".join(f"r{n}: {len(radius_edges(n))}" for n in (1, 2, 5, 18, 32))
        + ", complete: 2016"
    )
    sk = sklearn_imputers(1)
    mrf = digits_mrf_imputers(a.quick)
    if a.latent:
        for K in a.latent:
            mrf[f"MRF latent K={K} (mixture)"] = (lambda K=K: LatentClassImputer(K), ("a", "b"))
    if a.mrf:
        mrf = {n: v for n, v in mrf.items() if re.search(a.mrf, n)}
    for setting in a.settings:
        chosen = {n: f for n, (f, s) in mrf.items() if setting in s}
        t = time.perf_counter()
        rec = impute_table(X, 1, {**sk, **chosen}, setting, a.fractions, a.folds, a.budget, out, a.knn_grid)
        title = {
            "a": "digits, setting (a): training rows complete",
            "b": "digits, setting (b): training rows with the same fraction hidden",
        }[setting]
        print_table(rec, list(chosen), a.fractions, a.folds, title, out, list(sk), a.knn_grid)
        out(f"[digits setting {setting}: {time.perf_counter() - t:.0f} s]")


def query_scaling(out, sizes=(16, 18, 20, 22, 23, 24, 25, 26, 27)):
    """Seconds of one conditional query on the complete-graph PL model, by missing entries: with a
    2 GiB budget (exact up to 26 binary variables) and with the default one (16 MiB)."""
    X, _ = binarised_digits()
    tr, te = next(iter(KFold(5, shuffle=True, random_state=0).split(X)))
    model = PseudoLikelihoodEstimator("complete", score_method="pseudo").fit(X[tr]).model_
    out("\n== query cost on the complete graph (PL fit, fold 0): one row, m missing pixels, model_.impute ==")
    out(f"{'m':>4} {'2 GiB s':>9} {'default s':>10}  how (2 GiB / default)")
    rng = np.random.default_rng(0)
    for m in sizes:
        x = X[te][:1].astype(np.float64)
        x[0, rng.choice(64, m, replace=False)] = np.nan
        times, notes = [], []
        for mb in (2 * 1024**3, None):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t = time.perf_counter()
                model.impute(x, max_bytes=mb, random_state=0)
                times.append(time.perf_counter() - t)
            notes.append("gibbs" if caught else "exact")
        out(f"{m:>4} {times[0]:>9.2f} {times[1]:>10.2f}  {notes[0]} / {notes[1]}")


def tables_part(a, out):
    datasets = {
        "Titanic": (expand_table(TITANIC_LEVELS, TITANIC_FREQ), TITANIC_LEVELS, 3),
        "housing": (expand_table(HOUSING_LEVELS, HOUSING_FREQ), HOUSING_LEVELS, 0),
    }
    for title, (X, levels, hub) in datasets.items():
        p = X.shape[1]
        levels_max = np.array([len(v) - 1 for v in levels.values()])
        star = [(j, hub) if j < hub else (hub, j) for j in range(p) if j != hub]
        chain = "chain"
        sat = [tuple(range(p))]
        out(
            f"\n#### 2. {title}: {X.shape[0]} rows, columns {list(levels)} with "
            f"{[len(v) for v in levels.values()]} states (star hub: {list(levels)[hub]})"
        )
        sk = sklearn_imputers(levels_max)
        sk.pop("Iterative logistic P(x=1)")  # binary columns only
        both, complete = ("a", "b"), ("a",)
        mrf = {
            "MRF ExactML complete": (lambda: MRFImputer(ExactMaxLikelihood("complete")), both),
            "MRF DecomposedEM complete": (lambda: MRFImputer(DecomposedEM("complete")), both),
            "MRF DecomposedEM chain": (lambda chain=chain: MRFImputer(DecomposedEM(chain)), both),
            "MRF DecomposedEM star": (lambda star=star: MRFImputer(DecomposedEM(star)), both),
            "MRF PL complete": (
                lambda: MRFImputer(PseudoLikelihoodEstimator("complete", score_method="pseudo")),
                complete,
            ),
            "MRF DecomposedEM complete map": (lambda: MRFImputer(DecomposedEM("complete"), method="map"), both),
            "MRF DecomposedEM saturated": (lambda sat=sat: MRFImputer(DecomposedEM(sat)), both),
        }
        for setting in a.settings:
            chosen = {n: f for n, (f, s) in mrf.items() if setting in s}
            grid = (1, 5, 10, 30)
            rec = impute_table(X, levels_max, {**sk, **chosen}, setting, a.fractions, a.folds, a.budget, out, grid)
            what = {"a": "training rows complete", "b": "training rows with the same fraction hidden"}[setting]
            heading = f"{title}, setting ({setting}): {what}"
            print_table(rec, list(chosen), a.fractions, a.folds, heading, out, list(sk), grid)


def classify_part(a, out):
    X, y = binarised_digits()
    splits = list(KFold(a.folds, shuffle=True, random_state=0).split(X))
    models = {
        "BernoulliNB (alpha=1)": lambda: BernoulliNB(),
        "CategoricalNB (alpha=1)": lambda: CategoricalNB(min_categories=2),
        "LogisticRegression": lambda: LogisticRegression(max_iter=5000),
        "MRFClassifier star alpha=0": lambda: MRFClassifier("star", alpha=0.0),
        "MRFClassifier star alpha=auto": lambda: MRFClassifier("star"),
        "MRFClassifier star alpha=1e-2": lambda: MRFClassifier("star", alpha=1e-2),
        "MRFClassifier grid exact": lambda: MRFClassifier("grid:8x8"),
        "MRFClassifier grid pl": lambda: MRFClassifier("grid:8x8", estimator="pl"),
        "MRFClassifier grid lap": lambda: MRFClassifier("grid:8x8", estimator="lap"),
        "MRFClassifier r2 (king) pl": lambda: MRFClassifier(radius_edges(2), estimator="pl"),
        "MRFClassifier r5 pl": lambda: MRFClassifier(radius_edges(5), estimator="pl"),
        "MRFClassifier r5 pl alpha=1e-2": lambda: MRFClassifier(radius_edges(5), estimator="pl", alpha=1e-2),
        "MRFClassifier complete pl": lambda: MRFClassifier("complete", estimator="pl"),
    }
    if a.quick:
        keep = ("BernoulliNB (alpha=1)", "LogisticRegression", "MRFClassifier star alpha=auto", "MRFClassifier grid pl")
        models = {k: v for k, v in models.items() if k in keep}
    out(f"\n#### 3. classification, binarised digits, {a.folds}-fold CV (KFold shuffle, random_state=0)")
    width = max(len(n) for n in models) + 1
    head = f"{'classifier':<{width}} {'accuracy':>9} {'(sd)':>8} {'fit s':>8} {'predict s':>10}"
    out(head)
    out("-" * len(head))
    notes = []
    for name, factory in models.items():
        accs, fit_s, pred_s, seen = [], [], [], {}
        try:
            for tr, te in splits:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    clf = factory()
                    t0 = time.perf_counter()
                    clf.fit(X[tr], y[tr])
                    t1 = time.perf_counter()
                    pred = clf.predict(X[te])
                    t2 = time.perf_counter()
                accs.append(float((pred == y[te]).mean()))
                fit_s.append(t1 - t0)
                pred_s.append(t2 - t1)
                _merge(seen, _tally(caught))
        except Exception as ex:  # noqa: BLE001
            out(f"{name:<{width}} {'err':>9}")
            notes.append(f"error {name}: {type(ex).__name__}: {_head(ex, 400)}")
            continue
        out(
            f"{name:<{width}} {np.mean(accs):>9.4f} {np.std(accs, ddof=1):>8.4f} {np.mean(fit_s):>8.2f} "
            f"{np.mean(pred_s):>10.3f}"
        )
        notes += [f"warning {name}: {c} x {cat}, first: {m}" for (cat, _), (c, m) in seen.items()]
    for n in notes:
        out(n)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", default="digits,tables,classify")
    p.add_argument("--fractions", default=",".join(str(f) for f in FRACTIONS))
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--settings", default="a,b", help="a: training rows complete; b: as hidden as the test rows")
    p.add_argument("--budget", type=float, default=120.0, help="skip an imputer at larger fractions past this s/fold")
    p.add_argument("--query-scaling", action="store_true", help="time exact complete-graph queries by missing count")
    p.add_argument("--latent", default="", help="latent-class mixtures to add on digits, e.g. 30,100 (slow)")
    p.add_argument("--mrf", default="", help="regular expression: run only the digits MRF imputers it matches")
    p.add_argument("--quick", action="store_true", help="2 folds, fraction 0.3, fewer imputers and classifiers")
    p.add_argument("--out", default=None, help="directory for the results")
    p.add_argument("--out-name", default="imputation.txt", help="file name of the results in --out")
    a = p.parse_args()
    a.fractions = [float(f) for f in a.fractions.split(",")]
    a.settings = a.settings.split(",")
    a.latent = [int(k) for k in a.latent.split(",") if k]
    a.knn_grid = KNN_GRID
    if a.quick:
        a.folds, a.fractions, a.knn_grid = 2, [0.3], (5, 10)
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    t0, c0 = time.perf_counter(), time.process_time()
    out(f"# python benchmarks/imputation.py {' '.join(sys.argv[1:])}".rstrip())
    out(header("imputation.py: MRFImputer and MRFClassifier against scikit-learn", 1))
    out(f"# scikit-learn {sklearn.__version__}, numpy {np.__version__}, python {platform.python_version()}")
    out(f"# {a.folds}-fold KFold(shuffle=True, random_state=0); hidden fractions {a.fractions}; settings {a.settings}")
    out("# BLAS held to one thread (threadpoolctl); times are wall seconds on a shared machine.")
    parts = a.parts.split(",")
    with limit_blas(1):
        for part, fn in (("digits", digits_part), ("tables", tables_part), ("classify", classify_part)):
            if part in parts:
                t = time.perf_counter()
                fn(a, out)
                wall = time.perf_counter() - t
                out(f"[{part}: {wall:.0f} s; load average {load_average()}]")
        if a.query_scaling:
            query_scaling(out)
    out(
        f"\n# total {time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU of this process; "
        f"load average at end {load_average()}"
    )
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, a.out_name), "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
