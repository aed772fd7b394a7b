"""
Bayesian learning of an MRF: posteriors under approximate likelihoods
======================================================================

The MLE-induced likelihood paper (Liu and Zheng) learns the edge parameters of a binary
pairwise MRF by Metropolis-Hastings, with the intractable likelihood replaced by a cheap
approximation. On a 4x4 grid the exact likelihood is still affordable (the junction tree), so
the approximations can be compared with the exact posterior: here the posterior histograms of
three couplings under the exact likelihood, the MLE-induced likelihood and the
pseudo-likelihood, from the same chain settings.
"""

import os

import matplotlib.pyplot as plt
import numpy as np

from skmrf import MetropolisHastingsMRF, grid_graph
from skmrf.model import agreement_to_mrf

graph = grid_graph(4, 4)
rng = np.random.default_rng(0)
theta_true = rng.uniform(0.5, 0.8, len(graph.edges))  # edge j: theta_j if its ends agree
X = agreement_to_mrf(theta_true, graph).sample(300, random_state=1, method="exact")

settings = dict(n_steps=40_000, n_chains=2, proposal_scale=0.01, random_state=0)
fits = {
    name: MetropolisHastingsMRF(graph, likelihood=likelihood, **settings).fit(X)
    for name, likelihood in [("exact", "exact"), ("MLE-induced", "mle_induced"), ("pseudo", "pseudo")]
}
for name, est in fits.items():
    print(
        f"{name:>12}: acceptance {est.acceptance_rate_:.2f}, max R-hat {np.nanmax(est.rhat_):.3f}, "
        f"min ESS {np.nanmin(est.ess_):.0f}, training score {est.score(X):.3f}"
    )

shown = [0, 5, 17]
fig, axes = plt.subplots(1, len(shown), figsize=(12, 3.5))
for ax, j in zip(axes, shown):
    for name, est in fits.items():
        ax.hist(est.samples_[:, j], bins=50, density=True, histtype="step", lw=1.5, label=name)
    ax.axvline(theta_true[j], color="k", lw=1, ls="--", label="true")
    u, v = fits["exact"].edges_[j]
    ax.set_title(f"edge ({u}, {v})")
    ax.set_xlabel("theta")
axes[0].set_ylabel("posterior density")
axes[0].legend(fontsize=8)
fig.tight_layout()
figures = os.environ.get("SKMRF_FIGURES", "figures")  # where the scripts save their figures
os.makedirs(figures, exist_ok=True)
fig.savefig(os.path.join(figures, "bayesian_mrf_posteriors.png"))
