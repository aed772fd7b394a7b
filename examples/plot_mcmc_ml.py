"""
=================================================================
MCMC maximum likelihood in a fast-mixing parameter set
=================================================================

Fit a binary 8x8 grid with :class:`~skmrf.estimators.mcmc.MCMCMaxLikelihood`
(Domke, 2015): projected gradient descent whose model expectations come from
Gibbs chains, with the couplings kept inside a set where Gibbs sampling is
guaranteed to mix fast (``|J_ij| <= beta`` with ``4 tanh(beta) < 1``).

We compare the estimate with the exact constrained optimum (the same
projected gradient with junction-tree expectations, feasible here because the
8x8 grid has treewidth 8) and with the true parameters, and print the
theoretical K/M/v schedule next to the cheaper one used.
"""

# %%
import os
import time

import numpy as np

from skmrf import grid_graph
from skmrf.estimators.mcmc import MCMCMaxLikelihood
from skmrf.model import DiscreteMRF
from skmrf.model.ising import ising_to_binary

rows = cols = 8
graph = grid_graph(rows, cols)
n = rows * cols
rng = np.random.default_rng(0)

# A true model inside the box set |J| <= 0.2 (in the {-1, +1} coordinates of
# the paper); the package's {0, 1} parameters are theta_ij = 4 J_ij and
# theta_i = 2 h_i - 2 sum_j J_ij.
true = DiscreteMRF(graph, 2)
lay = true.layout
sizes = np.array([len(c) for c in lay.cliques])
edge_blocks = np.flatnonzero(sizes == 2)
edges = np.array([lay.cliques[k] for k in edge_blocks])
h_true, J_true = rng.uniform(-0.3, 0.3, n), rng.uniform(-0.2, 0.2, len(edges))
theta = np.zeros(true.n_params)
theta[lay.block_offsets[np.flatnonzero(sizes == 1)]], theta[lay.block_offsets[edge_blocks]] = ising_to_binary(
    h_true, J_true, edges, n
)
true.theta = theta
X = true.sample(2000, rng, method="exact")

common = dict(schedule="theory", max_coupling=0.2, alpha=0.1, lipschitz=10.0, average=False)

# %%
# The theoretical schedule (Corollary 9, with ``eps`` in parameter distance)
# is conservative; here we use far fewer samples per step.
est = MCMCMaxLikelihood(graph, n_iter=100, n_samples=2000, n_sweeps=10, eps=1.0, random_state=0, **common)
start = time.perf_counter()
est.fit(X)
elapsed = time.perf_counter() - start
theory = MCMCMaxLikelihood(graph, n_sweeps=10, eps=1.0, random_state=0, **common)
try:
    theory.fit(X)
    print(f"theoretical schedule for eps=1: {theory.schedule_auto_}")
except ValueError as err:  # over the work budget
    print(f"theoretical schedule refused: {err}")
print(f"used: {est.schedule_}, fit in {elapsed:.2f} s")

# %%
# The exact constrained optimum: the same projected gradient with exact
# (junction-tree) expectations. ``_gradient`` is a private test hook.
ref = MCMCMaxLikelihood(graph, n_iter=300, n_samples=1, n_sweeps=1, **common)
ref._gradient = "exact"
ref.fit(X)
phi = np.r_[est.ising_fields_, est.ising_couplings_]
phi_star = np.r_[ref.ising_fields_, ref.ising_couplings_]
print(f"||theta_MCMC - theta*||_2 = {np.linalg.norm(phi - phi_star):.4f}")
print(f"||theta*  - theta_true||_2 = {np.linalg.norm(phi_star - np.r_[h_true, J_true]):.4f}")
print(
    f"mean log-likelihood: MCMC {est.score(X):.4f}, exact constrained {ref.score(X):.4f}, "
    f"true {true.log_prob(X).mean():.4f}"
)

# %%
# Learned couplings against the exact constrained optimum and the truth.
try:
    import matplotlib.pyplot as plt
except ImportError:  # pragma: no cover
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(J_true, ref.ising_couplings_, s=12, label="exact constrained ML")
    ax.scatter(J_true, est.ising_couplings_, s=12, marker="x", label="MCMCMaxLikelihood")
    ax.plot([-0.25, 0.25], [-0.25, 0.25], "k:", lw=1)
    ax.axhline(0.2, c="grey", lw=0.5)
    ax.axhline(-0.2, c="grey", lw=0.5)
    ax.set(xlabel="true coupling $J_{ij}$", ylabel="estimate", title="8x8 grid, |J| <= 0.2")
    ax.legend()
    figures = os.environ.get("SKMRF_FIGURES", "figures")  # where the scripts save their figures
    os.makedirs(figures, exist_ok=True)
    fig.savefig(os.path.join(figures, "mcmc_ml_couplings.png"))
