"""
=====================================================================
Model selection on real data: binarised digits on the 8 x 8 grid
=====================================================================

scikit-learn's handwritten digits (:func:`sklearn.datasets.load_digits`,
1797 images of 8 x 8 pixels, intensities 0-16) binarised at ``pixel >= 8``
and modelled by a binary pairwise Markov random field on the 4-neighbour
pixel grid. The grid is 8 wide, so its treewidth is 8 (the junction tree
skmrf builds by a greedy elimination order is a little wider: ``model_.treewidth``
is 10, cliques of 11 pixels) and the junction tree gives the exact
log-likelihood: every estimator's ``score`` is the exact mean
held-out log-likelihood per image, and the estimators can be compared with
plain :func:`~sklearn.model_selection.cross_validate`.

Compared: exact maximum likelihood, LAP with each auxiliary structure and
each node rule, pseudo-likelihood, MCMC maximum likelihood, and the
posterior mean of Metropolis-Hastings with the MLE-induced likelihood.
Then the ridge ``alpha`` of LAP is chosen with
:class:`~sklearn.model_selection.GridSearchCV`, the learned couplings are
drawn on the pixel grid, and images are sampled from the fitted models.
"""

# %%
# The data, and the pixels that are never inked
# ---------------------------------------------
# Ten border pixels are 0 in all 1797 images. For such a pixel the
# maximum-likelihood estimate is at infinity (``p(x_i = 1) = 0``): with
# ``alpha=0`` the estimators warn (``NoFiniteEstimateWarning``), and with the
# default ridge they return a large finite negative field. The agreement model
# of the Bayesian estimator has no node potentials and needs every edge to
# disagree at least once, so it refuses the full grid outright:
import os
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import patheffects
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skmrf import (
    ExactMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    MetropolisHastingsMRF,
    MLEInducedLikelihood,
    PseudoLikelihoodEstimator,
    grid_graph,
)

t_start = time.perf_counter()
FIGURES = Path(os.environ.get("SKMRF_FIGURES", "figures"))  # where the scripts save their figures
FIGURES.mkdir(parents=True, exist_ok=True)

images = (load_digits().data >= 8).astype(np.int64)  # 1797 x 64, row-major 8 x 8
blank = np.flatnonzero(images.max(axis=0) == 0)
print(f"{images.shape[0]} images; pixels 0 in every image: {blank.tolist()}")
try:
    MLEInducedLikelihood("grid:8x8").fit(images)
except ValueError as err:
    print(f"MLEInducedLikelihood on all 64 pixels: {err}")

# %%
# These pixels carry no information, so they are dropped for every method:
# the graph becomes the grid restricted to the 54 other pixels (91 edges).
# This changes no comparison: a dropped pixel is 0 in every held-out image
# too, and the maximum-likelihood model gives it probability one, so the
# log-likelihood of a 64-pixel image is that of its 54 kept pixels. (The
# choice looks at all images, not only the training folds, but it uses no
# label and no held-out score.)
# Near-empty pixels remain (four have 1 to 4 inked images), so some training
# folds still miss a state of some edge: the default ridge ``alpha="auto"``
# (``1 / n_samples``) keeps those parameters finite.
kept = np.flatnonzero(images.max(axis=0) > 0)
column = {pixel: k for k, pixel in enumerate(kept)}
edges = [(column[u], column[v]) for u, v in grid_graph(8, 8).edges if u in column and v in column]
X = images[:, kept]
assert {i for e in edges for i in e} == set(range(X.shape[1]))  # no kept pixel is isolated
print(f"kept {X.shape[1]} pixels, {len(edges)} grid edges")

# %%
# The estimators
# --------------
# All use the default ridge except the Bayesian one. LAP is run with each
# auxiliary structure (``strategy``) and each rule for reading the node
# potentials (``node_rule``); see :class:`~skmrf.LAPEstimator`.
#
# :class:`~skmrf.MetropolisHastingsMRF` samples the posterior of the
# *agreement model* (edge ``j`` contributes ``theta_j`` when its ends agree,
# ``1 - theta_j`` when they differ; uniform prior) under the MLE-induced
# likelihood; its MLE comes from LAP on the flip-symmetrised data, which is
# fast. The agreement model has **no node potentials**: it gives an image and
# its negative the same probability, so every pixel is inked with probability
# 1/2. Digits are mostly background, so expect it to score far below the full
# pairwise model; its row measures the model family, not the sampler. The
# random-walk step is ``2.38 / sqrt(p)`` times the rough posterior standard
# deviation ``0.45 / sqrt(n)`` (the estimator's docstring), and the chains
# are **short** (2 x 15000 steps) to fit the time budget; their diagnostics
# are printed below.
n_train = X.shape[0] * 4 // 5
proposal_scale = 2.38 / np.sqrt(len(edges)) * 0.45 / np.sqrt(n_train)
methods = {"exact ML": ExactMaxLikelihood(edges)}
for strategy in ["pairwise", "dense", "exact"]:
    for node_rule in ["mean", "first", "own"]:
        methods[f"LAP {strategy}/{node_rule}"] = LAPEstimator(edges, strategy=strategy, node_rule=node_rule)
methods["pseudo-likelihood"] = PseudoLikelihoodEstimator(edges)
methods["MCMC ML"] = MCMCMaxLikelihood(edges, random_state=0)
methods["Bayes (agreement)"] = MetropolisHastingsMRF(
    edges, mle=LAPEstimator(), n_steps=15000, n_chains=2, proposal_scale=proposal_scale, random_state=0
)

# %%
# Held-out exact log-likelihood
# -----------------------------
# Five folds, the same for every method. ``score`` is the mean exact
# log-likelihood per image in nats (higher is better); "per pixel" divides it
# by 54. The paired difference to exact ML is taken fold by fold, so its
# standard deviation is much smaller than the spread of the scores across
# folds (which mostly reflects how hard each fold's images are).
cv = KFold(5, shuffle=True, random_state=0)
results = {name: cross_validate(est, X, cv=cv, return_estimator=True) for name, est in methods.items()}
reference = results["exact ML"]["test_score"]
print(f"{'method':<20} {'log-lik / image':>16} {'per pixel':>9} {'vs exact ML':>15} {'fit s':>6}")
for name, res in results.items():
    s, diff = res["test_score"], res["test_score"] - reference
    print(
        f"{name:<20} {s.mean():>8.3f} +- {s.std():.3f} {s.mean() / X.shape[1]:>9.4f} "
        f"{diff.mean():>+7.3f} +- {diff.std():.3f} {res['fit_time'].mean():>6.2f}"
    )

bayes = results["Bayes (agreement)"]["estimator"]
print(
    "Bayes chains per fold: acceptance "
    + ", ".join(f"{b.acceptance_rate_:.2f}" for b in bayes)
    + "; max R-hat "
    + ", ".join(f"{np.nanmax(b.rhat_):.2f}" for b in bayes)
    + "; min ESS "
    + ", ".join(f"{np.nanmin(b.ess_):.0f}" for b in bayes)
)

# %%
# Exact ML is best, as it should be with 1437 training images for 145
# parameters, and MCMC ML, which estimates the same optimum by sampling, ties
# with it (+0.000 +- 0.002). Pseudo-likelihood loses 0.2 nats per image.
# LAP loses 0.58 to 0.65 nats per image (about 0.011 per pixel): it estimates
# each parameter from the counts of a 1-neighbourhood only, which is
# consistent but uses the data less efficiently than the full likelihood.
# The three auxiliary structures are within 0.05 nats of each other;
# ``node_rule="first"`` is ahead of ``"mean"`` by 0.02 to 0.04 nats, about
# one paired standard deviation, and ``"own"`` (node potentials from the
# small star around each pixel alone) is 1.6 to 1.9 nats behind them. The
# Bayesian row is the agreement model discussed above, 4.9 nats per image
# lower: the model family costs far more than any estimation method.
#
# Choosing ``alpha`` by cross-validation
# --------------------------------------
# ``alpha`` has the same meaning in every estimator (a ridge on the *mean*
# negative log-likelihood), so a grid of values carries over between them.
# LAP is cheap enough to search over six values; ``"auto"`` is the default
# ``1 / n_samples``. ``alpha=0`` is left out: with empty edge states in some
# folds it has no finite optimum (see above).
search = GridSearchCV(LAPEstimator(edges), {"alpha": ["auto", 1e-5, 1e-4, 1e-3, 1e-2, 1e-1]}, cv=cv)
search.fit(X)
cv_results = search.cv_results_
for a, m, s in zip(cv_results["param_alpha"], cv_results["mean_test_score"], cv_results["std_test_score"]):
    print(f"LAP alpha = {a!s:>6}: {m:8.3f} +- {s:.3f}")
print(f"chosen alpha: {search.best_params_['alpha']}")

# %%
# ``alpha = 1e-3`` gains 0.04 nats per image over the default (about
# ``7e-4`` here) and too little or too much ridge both cost: with
# ``1e-5`` the parameters of rare edge states grow large, with ``0.1`` every
# coupling is shrunk towards zero.

# %%
# Learned couplings on the pixel grid
# -----------------------------------
# Exact ML (default ridge) and the selected LAP, both refitted on all images.
# The parametrisation is normalised at zero, so for binary pixels
# ``log p(x) = sum_i t_i x_i + sum_ij t_ij x_i x_j - log Z``: the image shows
# the node fields ``t_i`` (grey: dropped pixels) and each line joins two
# neighbouring pixel centres, coloured by its coupling ``t_ij``.
ml = ExactMaxLikelihood(edges).fit(X)
lap = search.best_estimator_


def draw_couplings(ax, model, title):
    """Node fields as the pixel image, couplings as lines between pixel centres."""
    field = np.full(64, np.nan)
    field[kept] = [model.potential((k,)).item() for k in range(len(kept))]
    image = ax.imshow(field.reshape(8, 8), cmap="Greys_r", vmin=-6, vmax=2)
    for (a, b), t in zip(edges, [model.potential(e).item() for e in edges]):
        (ra, ca), (rb, cb) = divmod(kept[a], 8), divmod(kept[b], 8)
        width = 1.5 + abs(t)
        outline = [patheffects.withStroke(linewidth=width + 1.5, foreground="k")]
        ax.plot([ca, cb], [ra, rb], color=coupling_cmap(coupling_norm(t)), lw=width, path_effects=outline)
    ax.set_facecolor("tab:olive")  # dropped pixels
    ax.set(title=title, xticks=[], yticks=[])
    return image


coupling_norm, coupling_cmap = plt.Normalize(-4, 4), plt.get_cmap("RdBu_r")
fig, axes = plt.subplots(1, 2, figsize=(9, 5.2), layout="constrained")
for ax, est, title in [(axes[0], ml, "exact ML"), (axes[1], lap, f"LAP, alpha = {lap.alpha_:g}")]:
    fields = draw_couplings(ax, est.model_, title)
fig.colorbar(fields, ax=axes, shrink=0.8, label="node field t_i")
fig.colorbar(
    plt.cm.ScalarMappable(coupling_norm, coupling_cmap),
    ax=axes,
    orientation="horizontal",
    shrink=0.5,
    label="coupling t_ij (line colour; width grows with |t_ij|)",
)
fig.savefig(FIGURES / "digits_couplings.png", dpi=100)
for name, est in [("exact ML", ml), ("LAP", lap)]:
    t_node = np.array([est.model_.potential((k,)).item() for k in range(len(kept))])
    t_edge = np.array([est.model_.potential(e).item() for e in edges])
    print(
        f"{name:>8}: node fields {t_node.min():.2f} to {t_node.max():.2f}, couplings {t_edge.min():.2f} to "
        f"{t_edge.max():.2f} (median {np.median(t_edge):.2f}, {np.sum(t_edge < 0)} negative)"
    )

# %%
# Almost every coupling is positive: neighbouring pixels tend to agree. The
# strongest couplings are where ink is rare (the bottom row, the top right):
# there a pixel is inked almost only together with its neighbour, at the end
# of a stroke. The node fields (log-odds of ink when all neighbours are blank)
# are negative except at the top and bottom of the centre, where most digits
# have ink. LAP's map is the same to the eye, its couplings a little weaker;
# the log-likelihood gap above is in such details.
#
# Sampling digits from the fitted models
# --------------------------------------
# Exact independent draws (forward sampling on the junction tree) from exact
# ML and from the Bayesian posterior mean, next to real images. The pairwise
# grid model reproduces the local texture (strokes two or three pixels wide,
# ink in the middle) but not the global shape of a digit: that needs
# longer-range dependencies than nearest neighbours. The agreement model,
# being symmetric under flipping every pixel, draws inverted images as often
# as normal ones.
posterior_mean = methods["Bayes (agreement)"].fit(X)
rows = {
    "real": X[:: X.shape[0] // 10][:10],
    "exact ML": ml.model_.sample(10, random_state=0, method="exact"),
    "Bayes (agreement)": posterior_mean.model_.sample(10, random_state=0, method="exact"),
}
fig, axes = plt.subplots(len(rows), 10, figsize=(10, 3.3))
for ax_row, (label, draws) in zip(axes, rows.items()):
    for ax, draw in zip(ax_row, draws):
        full = np.zeros(64)
        full[kept] = draw
        ax.imshow(full.reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
        ax.set(xticks=[], yticks=[])
    ax_row[0].set_ylabel(label, rotation=0, ha="right", va="center")
fig.tight_layout()
fig.savefig(FIGURES / "digits_samples.png", dpi=100)
ink = {label: draws.mean() for label, draws in rows.items()}
print("fraction of inked pixels: " + ", ".join(f"{k} {v:.2f}" for k, v in ink.items()))
print(f"total run time {time.perf_counter() - t_start:.0f} s")
