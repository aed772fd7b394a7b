"""
======================================================
Learning a grid MRF from images with hidden pixels
======================================================

Fit a binary 8x8 grid MRF to the binarised scikit-learn digits when some
pixels are hidden, with :class:`skmrf.DecomposedEM`: maximum likelihood of the
*observed* part of every image, the hidden pixels summed out exactly.

We compare its two optimisers (``method="em"`` and ``method="gradient"``) and
its two ways of computing the same likelihood (``decompose=True``, which splits
the grid at the pixels observed in every image and compresses the data of
each piece, and ``decompose=False``, which does one inference per distinct
image). Then we use the fitted model to fill in the hidden pixels of held-out
images.
"""

# %%
# Digits with hidden pixels
# -------------------------
# Each 8x8 image is one row of 64 binary variables, pixel ``(r, c)`` in column
# ``8 * r + c``: the node order of :func:`skmrf.grid_graph`. We choose 13
# pixel positions (20%) and hide each of their entries in about half of the
# images: a hidden entry is ``np.nan`` in a float array. The other 51 pixels
# are observed in every image.
import os
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from skmrf import DecomposedEM, grid_graph

X = (load_digits().data >= 8).astype(float)
n_images, n_pixels = X.shape
rng = np.random.default_rng(0)

# Hide pixels where the ink varies: a pixel that is blank in every image (the
# left and right borders, mostly) has nothing to reconstruct.
varying = np.flatnonzero(X.std(axis=0) > 0)
hidden_positions = np.sort(rng.choice(varying, size=13, replace=False))
X_missing = X.copy()
hide = rng.random((n_images, hidden_positions.size)) < 0.5
X_missing[:, hidden_positions] = np.where(hide, np.nan, X[:, hidden_positions])

order = rng.permutation(n_images)
train, test = order[:1500], order[1500:]
X_train, X_test = X_missing[train], X_missing[test]
print(f"{n_images} images of {n_pixels} pixels; hidden positions {hidden_positions.tolist()}")
print(
    f"{np.isnan(X_train).mean():.1%} of the training entries hidden, "
    f"{np.isnan(X_train).any(axis=1).mean():.0%} of the training images have one"
)

# %%
# Four fits of the same model
# ---------------------------
# ``alpha`` is a small ridge penalty, and it is needed here: some pixels are 0
# in every image (``X.std(axis=0) == 0`` for 10 of the 64 columns), so the
# likelihood keeps increasing as their probability of being 1 goes to 0, i.e.
# as their parameters go to -infinity. With ``alpha=0`` the maximum-likelihood
# estimate does not exist: ``fit`` warns (``NoFiniteEstimateWarning``), those
# parameters grow large and the fit is many times slower. ``alpha=0.01`` makes
# the estimate finite.
#
# ``tol=1e-5`` (the default is ``1e-6``) stops a little earlier, halving the
# EM time for a change of about ``1e-5`` in the mean log-likelihood.
graph = grid_graph(8, 8)
fits, times = {}, {}
for method in ("em", "gradient"):
    for decompose in (True, False):
        est = DecomposedEM(graph, method=method, decompose=decompose, alpha=0.01, tol=1e-5)
        start = time.perf_counter()
        est.fit(X_train)
        times[method, decompose] = time.perf_counter() - start
        fits[method, decompose] = est

print(f"\n{'method':<9} {'decompose':<9} {'fit s':>6} {'iters':>5} {'mean LL':>11} {'inferences/iter':>15}")
for (method, decompose), est in fits.items():
    print(
        f"{method:<9} {str(decompose):<9} {times[method, decompose]:>6.2f} {est.n_iter_:>5d} "
        f"{est.log_likelihood_:>11.6f} {est.inferences_per_iteration_:>15d}"
    )

# ``decompose`` changes the cost, not the result: the same optimiser reaches
# the same parameters.
for method in ("em", "gradient"):
    diff = np.abs(fits[method, True].theta_ - fits[method, False].theta_).max()
    print(f"{method}: max |theta(decompose=True) - theta(decompose=False)| = {diff:.1e}")

# Where the saving comes from. Without decomposition every distinct image needs
# its own inference per iteration (with hidden pixels, all 1500 images are
# distinct). With it, the 51 always-observed pixels cut the grid into small
# sub-networks around the hidden ones; each sub-network only sees the data
# projected on its own pixels, which takes few distinct values. This saving is
# in the data term only: an EM iteration here spends most of its time in the
# M-step (a complete-data fit, which ``decompose`` does not change), so the
# gradient method gains more from it than EM.
dec = fits["em", True]
print(
    f"\ndecompose=True: {dec.n_subnetworks_} sub-networks holding hidden pixels, "
    f"distinct patterns per sub-network {dec.n_distinct_rows_.tolist()} "
    f"(total {dec.n_distinct_rows_.sum()})"
)
print(f"decompose=False: {fits['em', False].n_distinct_rows_.sum()} distinct rows")

# %%
# The mean log-likelihood per iteration
# -------------------------------------
# ``log_likelihood_trace_`` holds the mean log-likelihood of the observed data
# at the start (the uniform model) and after every iteration. EM takes few,
# expensive iterations (each includes a complete-data maximum-likelihood fit,
# its M-step); L-BFGS takes more, cheaper ones. With ``decompose=False`` the
# curves are the same (dashed, under the solid ones); only the time differs.
#
# The trace is the *unpenalised* log-likelihood, while the fit maximises it
# minus ``alpha / 2 * ||theta||^2``. The zoom on the right shows the
# difference: L-BFGS passes through parameters with a higher likelihood (and a
# larger penalty) before settling where EM does.
final = fits["em", True].log_likelihood_
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for (method, decompose), est in fits.items():
    trace = est.log_likelihood_trace_
    style = dict(
        color="C0" if method == "em" else "C1",
        lw=2.5 if decompose else 1.0,
        ls="-" if decompose else "--",
        label=f"{method}, decompose={decompose} ({times[method, decompose]:.1f} s)",
    )
    axes[0].plot(trace, **style)
    axes[1].plot(trace - final, **style)
axes[0].set(xlabel="iteration", ylabel="mean log-likelihood", title="log_likelihood_trace_")
axes[1].set(
    xlabel="iteration", ylabel="mean log-likelihood - final (EM)", title="zoom near the end", ylim=(-0.05, 0.03)
)
axes[1].axhline(0, color="k", lw=0.5)
axes[0].legend()
fig.tight_layout()
figures = os.environ.get("SKMRF_FIGURES", "figures")  # where the scripts save their figures
os.makedirs(figures, exist_ok=True)
fig.savefig(os.path.join(figures, "missing_data_traces.png"))

# %%
# Filling in hidden pixels
# ------------------------
# The fitted model answers ``p(x_v | observed pixels)`` for every hidden pixel
# of every test image: :meth:`~skmrf.model.DiscreteMRF.conditional_marginals`
# takes the images with NaN where a pixel is hidden and returns one
# distribution per pixel (one-hot where observed). The hidden pixels of an
# image split into groups linked through the grid; each group is computed
# exactly from its observed neighbours. :meth:`~skmrf.model.DiscreteMRF.impute`
# fills each hidden pixel with its most likely value (the gallery example
# :ref:`sphx_glr_auto_examples_plot_impute_pixels.py` does the same with
# :class:`skmrf.MRFImputer` in a scikit-learn pipeline, against scikit-learn's
# imputers).
model = fits["em", True]
img, pix = np.nonzero(np.isnan(X_test))  # one entry per hidden pixel of every test image
start = time.perf_counter()
p1 = model.model_.conditional_marginals(X_test)[img, pix, 1]  # p(pixel = 1 | observed pixels)
X_filled = model.model_.impute(X_test)
print(
    f"\n{img.size} hidden pixels in {X_test.shape[0]} test images, conditionals and imputation in "
    f"{time.perf_counter() - start:.2f} s; p(x = 1) from {p1.min():.3f} to {p1.max():.3f}"
)
truth = X[test][img, pix]
# Baseline ignoring the neighbours: each pixel's most frequent observed value.
majority = np.nanmean(X_train, axis=0) > 0.5
print(
    f"hidden pixels recovered: MRF {np.mean(X_filled[img, pix] == truth):.1%}, "
    f"per-pixel majority {np.mean(majority[pix] == truth):.1%}"
)

# %%
# Original, hidden and reconstructed images, for test images with the most
# hidden pixels. Hidden pixels are blue in the middle row; in the bottom row
# they are filled with the most likely value and framed (green when right, red
# when wrong).
shown = np.argsort(-np.isnan(X_test).sum(axis=1), kind="stable")[:8]
fig, axes = plt.subplots(3, len(shown), figsize=(1.4 * len(shown), 4.6))
for col, i in enumerate(shown):
    original = X[test[i]].reshape(8, 8)
    hidden = np.isnan(X_test[i]).reshape(8, 8)
    masked = np.repeat((1 - original)[:, :, None], 3, axis=2)
    masked[hidden] = (0.3, 0.6, 1.0)
    filled = X_filled[i].reshape(8, 8)
    for row, image in enumerate((1 - original, masked, 1 - filled)):
        ax = axes[row, col]
        ax.imshow(image, cmap="gray", vmin=0, vmax=1)
        ax.set_xticks([])
        ax.set_yticks([])
    for r, c in zip(*np.nonzero(hidden)):
        ok = filled[r, c] == original[r, c]
        axes[2, col].add_patch(
            plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, lw=1.5, ec="tab:green" if ok else "red")
        )
for row, name in enumerate(("original", "hidden", "reconstructed")):
    axes[row, 0].set_ylabel(name)
fig.tight_layout()
figures = os.environ.get("SKMRF_FIGURES", "figures")  # where the scripts save their figures
os.makedirs(figures, exist_ok=True)
fig.savefig(os.path.join(figures, "missing_data_reconstruction.png"))
