"""
=================================================================
MCMC maximum likelihood in a fast-mixing parameter set
=================================================================

Fit a binary 8x8 grid with :class:`~skmrf.MCMCMaxLikelihood` and its :class:`~skmrf.TheorySchedule`
(Domke, 2015): projected gradient descent whose model expectations come from
Gibbs chains, with the couplings kept inside a set where Gibbs sampling is
guaranteed to mix fast (``|J_ij| <= beta`` with ``4 tanh(beta) < 1``).

We compare the estimate with the exact constrained optimum (the same
projected gradient with junction-tree expectations, feasible here because the
8x8 grid has treewidth 8; skmrf's junction tree, from a greedy elimination
order, has width 10) and with the true parameters, and print the
theoretical K/M/v schedule next to the cheaper one used.
"""

# %%
import os
import time

import numpy as np
from scipy.optimize import minimize

from skmrf import MCMCMaxLikelihood, TheorySchedule, grid_graph
from skmrf.model import DiscreteMRF, ising_statistics, ising_to_binary

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

common = dict(max_coupling=0.2, alpha=0.1)
schedule = dict(lipschitz=10.0, average=False, eps=1.0)

# %%
# The theoretical schedule (Corollary 9, with ``eps`` in parameter distance)
# is conservative; here we use far fewer samples per step.
est = MCMCMaxLikelihood(
    graph, schedule=TheorySchedule(n_iter=100, n_chains=2000, n_sweeps=10, **schedule), random_state=0, **common
)
start = time.perf_counter()
est.fit(X)
elapsed = time.perf_counter() - start
theory = MCMCMaxLikelihood(graph, schedule=TheorySchedule(n_sweeps=10, **schedule), random_state=0, **common)
try:
    theory.fit(X)
    print(f"theoretical schedule for eps=1: {theory.schedule_auto_}")
except ValueError as err:  # over the work budget
    print(f"theoretical schedule refused: {err}")
print(f"used: {est.schedule_}, fit in {elapsed:.2f} s")

# %%
# The exact constrained optimum: the same objective in the ``{-1, +1}``
# coordinates, ``log Z`` and its gradient from the junction tree, minimised by
# L-BFGS-B inside the box.
node_pos, edge_pos = lay.block_offsets[np.flatnonzero(sizes == 1)], lay.block_offsets[edge_blocks]
S = X.astype(float)
tbar = ising_statistics(S.mean(0), (S[:, edges[:, 0]] * S[:, edges[:, 1]]).mean(0), edges)
model = DiscreteMRF(graph, 2)


def objective(phi, alpha=common["alpha"]):
    h, J = phi[:n], phi[n:]
    theta = np.zeros(model.n_params)
    theta[node_pos], theta[edge_pos] = ising_to_binary(h, J, edges, n)
    model.theta = theta
    mu = model.expected_statistics()
    log_z = model.log_partition() + J.sum() - h.sum()  # the constants of x = 2 s - 1
    grad = ising_statistics(mu[node_pos], mu[edge_pos], edges) - tbar + alpha * phi
    return log_z - phi @ tbar + 0.5 * alpha * phi @ phi, grad


bounds = [(None, None)] * n + [(-common["max_coupling"], common["max_coupling"])] * len(edges)
phi_star = minimize(objective, np.zeros(n + len(edges)), jac=True, method="L-BFGS-B", bounds=bounds).x
phi = np.r_[est.ising_fields_, est.ising_couplings_]
print(f"||theta_MCMC - theta*||_2 = {np.linalg.norm(phi - phi_star):.4f}")
print(f"||theta*  - theta_true||_2 = {np.linalg.norm(phi_star - np.r_[h_true, J_true]):.4f}")
print(f"mean log-likelihood: MCMC {est.score(X):.4f}, true {true.log_prob(X).mean():.4f}")

# %%
# Learned couplings against the exact constrained optimum and the truth.
try:
    import matplotlib.pyplot as plt
except ImportError:  # pragma: no cover
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(J_true, phi_star[n:], s=12, label="exact constrained ML")
    ax.scatter(J_true, est.ising_couplings_, s=12, marker="x", label="MCMCMaxLikelihood")
    ax.plot([-0.25, 0.25], [-0.25, 0.25], "k:", lw=1)
    ax.axhline(0.2, c="grey", lw=0.5)
    ax.axhline(-0.2, c="grey", lw=0.5)
    ax.set(xlabel="true coupling $J_{ij}$", ylabel="estimate", title="8x8 grid, |J| <= 0.2")
    ax.legend()
    figures = os.environ.get("SKMRF_FIGURES", "figures")  # where the scripts save their figures
    os.makedirs(figures, exist_ok=True)
    fig.savefig(os.path.join(figures, "mcmc_ml_couplings.png"))
