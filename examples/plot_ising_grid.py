"""
=====================================================
Learning an Ising grid by exact maximum likelihood
=====================================================

Sample from a 6x6 binary Ising grid with random couplings, fit
:class:`skmrf.ExactMaxLikelihood` on the samples and compare the learned
couplings with the true ones.
"""

# %%
import os
import time

import numpy as np

from skmrf import ExactMaxLikelihood, grid_graph
from skmrf.datasets import make_random_mrf
from skmrf.metrics import relative_error

rows = cols = 6
graph = grid_graph(rows, cols)
true_model = make_random_mrf(graph, n_states=2, scale=1.0, random_state=0)
X = true_model.sample(5000, random_state=1, method="gibbs", n_sweeps=200)

start = time.perf_counter()
est = ExactMaxLikelihood(graph, alpha=1e-4).fit(X)
elapsed = time.perf_counter() - start

print(f"{rows}x{cols} grid, {X.shape[0]} samples, {est.model_.n_params} parameters")
print(f"fit in {elapsed:.2f} s, {est.n_iter_} iterations, treewidth {est.model_.treewidth}")
print(f"relative error to the true parameters: {relative_error(est.theta_, true_model.theta):.3f}")
print(f"mean log-likelihood per row: fitted {est.score(X):.4f}, true {true_model.log_prob(X).mean():.4f}")

# %%
# True vs learned couplings (edge parameters ``theta_ij``).
edges = est.graph_.edges
true_w = np.array([true_model.potential(e)[0, 0] for e in edges])
learned_w = np.array([est.model_.potential(e)[0, 0] for e in edges])
try:
    import matplotlib.pyplot as plt
except ImportError:  # matplotlib is optional
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.scatter(true_w, learned_w, s=12)
    lim = [-1.2, 1.2]
    ax.plot(lim, lim, "k--", lw=0.8)
    ax.set(xlabel="true coupling", ylabel="learned coupling", title="Ising grid, exact ML")
    fig.tight_layout()
    figures = os.environ.get("SKMRF_FIGURES", "figures")  # where the scripts save their figures
    os.makedirs(figures, exist_ok=True)
    fig.savefig(os.path.join(figures, "ising_grid_couplings.png"))
