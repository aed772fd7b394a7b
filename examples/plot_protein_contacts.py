"""
================================================================
Predicting contacts from an alignment (direct coupling analysis)
================================================================

Direct coupling analysis (DCA) fits a 21-state Potts model (the gap and the 20 amino
acids) on the complete graph over the columns of a multiple sequence alignment, and
predicts residue contacts from the strongest couplings: the Frobenius norm of each
coupling block in the zero-sum gauge, with the average-product correction (APC).

This example runs it on the small synthetic alignment bundled with skmrf: 500 sequences
of 20 columns drawn by Gibbs sampling from a Potts model whose graph (the backbone
``(i, i + 1)`` and 16 long-range contacts) is known, so the predicted contact map can be
checked against the truth. For real protein families (plmc's DHFR alignment) and the
comparison with plmc and pydca, see ``benchmarks/protein_dca.py``.
"""

# %%
import os
import time

import numpy as np

from skmrf import PseudoLikelihoodEstimator
from skmrf.protein import coupling_scores, load_synthetic_alignment, sequence_weights

X, contacts, true_model = load_synthetic_alignment()
n_sequences, L = X.shape
weights = sequence_weights(X, identity=0.8)
print(f"{n_sequences} sequences x {L} columns, effective number of sequences {weights.sum():.1f}")

# %%
# Fit the Potts model on the complete graph by pseudo-likelihood, each sequence weighted by
# one over the number of its neighbours at 80 % identity, as in every DCA fit (the synthetic
# sequences are independent draws, so most weights here are 1).
start = time.perf_counter()
est = PseudoLikelihoodEstimator(graph="complete", n_states=21, alpha=0.01, tol=1e-5, score_method="pseudo")
est.fit(X, sample_weight=weights)
print(f"{est.model_.n_params} parameters fitted in {time.perf_counter() - start:.1f} s ({est.n_iter_} iterations)")

# %%
# Score the pairs and rank them; contacts are scored at a sequence separation of 5 or more.
min_separation = 5
scores = coupling_scores(est, gauge="zero-sum", apc=True, min_separation=min_separation)
true = {(int(i), int(j)) for i, j in contacts if j - i >= min_separation}
top = scores.pairs[: len(true)]
hits = np.array([(int(i), int(j)) in true for i, j, _ in top])
print(f"precision of the top {len(true)} pairs: {hits.mean():.2f}")
own = coupling_scores(est, gauge="model", apc=False, min_separation=min_separation).pairs[: len(true)]
print(f"same, scored in skmrf's own gauge without APC: {np.mean([(int(i), int(j)) in true for i, j, _ in own]):.2f}")

# %%
# The contact map: true contacts as grey squares, the top-ranked pairs as dots (blue when
# they are true contacts, red when not), the APC scores in the lower triangle.
try:
    import matplotlib.pyplot as plt
except ImportError:  # matplotlib is optional
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(5, 5))
    lower = np.tril(scores.matrix, -1)
    ax.imshow(np.where(lower != 0, lower, np.nan), cmap="Greys", origin="upper")
    far = contacts[contacts[:, 1] - contacts[:, 0] >= min_separation]
    ax.scatter(far[:, 1], far[:, 0], s=120, marker="s", color="0.8", label="true contact")
    ax.scatter(top["j"][hits], top["i"][hits], s=30, color="tab:blue", label="predicted, true")
    ax.scatter(top["j"][~hits], top["i"][~hits], s=30, color="tab:red", label="predicted, false")
    ax.set(xlabel="column j", ylabel="column i", title=f"Top {len(true)} DCA pairs (|i - j| >= {min_separation})")
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    figures = os.environ.get("SKMRF_FIGURES", "figures")  # where the scripts save their figures
    os.makedirs(figures, exist_ok=True)
    fig.savefig(os.path.join(figures, "protein_contacts.png"))
