"""Domke (2015), Section 6 and Figure 2: MCMC maximum likelihood on a 4x4 Ising grid.

The paper's example: ``p(x) ~ exp(sum_(i,j) J_ij x_i x_j)``, ``x in {-1, +1}^16``
on a 4x4 grid (24 pairs, no fields), 5 random training vectors, the box set
``|J_ij| <= 0.2`` (Dobrushin: 4 tanh 0.2 = 0.79 < 1), ``lambda = 1``,
``eps_theta = 2``, ``delta = 0.1``, ``L = 10``, ``beta = (0.01, 0.9, 0.09)``.

Mapping to the package: a training vector ``x`` is stored as ``s = (x + 1) / 2``
in {0, 1}; the couplings map to the package's parameters as
``theta_ij = 4 J_ij`` and ``theta_i = -2 sum_j J_ij`` (no fields in the paper's
model; see ``skmrf.model._ising.ising_to_binary``). The optimisation,
projection and distances below are all in the paper's ``J`` coordinates.

Prints the schedule (both readings of Corollary 9's M, see ERRATA.md), then for
5 runs of Algorithm 1 the objective gap ``f(theta_k) - f(theta*)`` and the
distance ``||theta_k - theta*||_2``, where ``theta*`` is computed exactly by
projected gradient with junction-tree gradients; saves the three panels of
Figure 2 to ``benchmarks/results/mcmc_domke.png``.

Run: ``python benchmarks/mcmc_domke.py [--quick]``. ``--quick`` runs Algorithm 1 twice with M = 200
(the schedule table and K as in the full run), without the run at M as written and without
the figure.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import pathlib  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from _harness import header  # noqa: E402

from skmrf import grid_graph  # noqa: E402
from skmrf._data import Rows  # noqa: E402
from skmrf._kernels.mcmc.chains import Chains, IsingExpectation  # noqa: E402
from skmrf._kernels.mcmc.expectations import ExactIsingExpectation  # noqa: E402
from skmrf._kernels.mcmc.fast_mixing import (  # noqa: E402
    dobrushin_mixing_constants,
    fast_mixing_schedule,
    project_box,
    schedule_values,
)
from skmrf._solvers.projected_gradient import projected_gradient  # noqa: E402
from skmrf._utils._sklearn_compat import Parallel  # noqa: E402
from skmrf.inference._gibbs import colour_classes  # noqa: E402
from skmrf.model import DiscreteMRF  # noqa: E402
from skmrf.model._ising import ising_statistics, ising_to_binary  # noqa: E402

N, BETA, LAM, EPS, DELTA, L = 16, 0.2, 1.0, 2.0, 0.1, 10.0
BETAS = (0.01, 0.9, 0.09)
N_RUNS = 5
RESULTS = pathlib.Path(__file__).parent / "results"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 runs with M = 200; no figure")
    args = ap.parse_args()
    n_runs = 2 if args.quick else N_RUNS
    print(header("mcmc_domke.py: Domke (2015) Section 6, MCMC maximum likelihood on a 4x4 Ising grid", 1))
    model = DiscreteMRF(grid_graph(4, 4), 2)
    lay = model.layout
    sizes = np.array([len(c) for c in lay.cliques])
    node_pos = lay.block_offsets[np.flatnonzero(sizes == 1)]
    eb = np.flatnonzero(sizes == 2)
    edge_pos = lay.block_offsets[eb]
    edges = np.array([lay.cliques[k] for k in eb])
    E = len(edges)

    # -- schedule ----------------------------------------------------------
    R2 = math.sqrt(E)
    D = math.sqrt(E * (2 * BETA) ** 2)
    alpha_mix = math.exp(-(1 - 4 * math.tanh(BETA)) / N)
    common = dict(
        lipschitz=L, suff_stat_bound=R2, mixing_rate=alpha_mix, distance_bound=D, ridge=LAM, delta=DELTA, betas=BETAS
    )
    print(
        "Section 6 schedule (Corollary 9): L=10, lambda=1, eps=2, delta=0.1, R2=sqrt(24), "
        "D=sqrt(24*(2*0.2)^2), alpha=exp(-(1-4tanh .2)/16), beta=(.01,.9,.09)"
    )
    for C, cname in [(math.log(16), "C=log 16 (paper)"), (dobrushin_mixing_constants(N, 4, BETA)[0], "C=16 (derived)")]:
        for mf, mname in [("paper_example", "R2 unsquared in M"), ("as_written", "R2^2 in M (as written)")]:
            K, M, v = schedule_values(EPS, mixing_constant=C, m_formula=mf, **common)
            s = fast_mixing_schedule(EPS, mixing_constant=C, m_formula=mf, **common)
            print(
                f"  {cname:17s} {mname:24s}: K={K:7.2f} -> {s.n_iter:3d}  M={M:8.2f} -> {s.n_samples:5d}  "
                f"v={v:7.2f} -> {s.n_sweeps}"
            )
    print("  -> K=46, M=1533, v=561 are reproduced with C=log 16 and R2 unsquared in M (the paper's reading);")
    print("     the formula as written gives M=7506. beta3=0.1 (the text) is rejected: betas must sum to 1.")
    sched = fast_mixing_schedule(EPS, mixing_constant=math.log(16), m_formula="paper_example", **common)
    if args.quick:
        sched = sched._replace(n_samples=200)
    sweeps = math.ceil(sched.n_sweeps / N)
    print(f"  v={sched.n_sweeps} single-site transitions -> {sweeps} chromatic sweeps of 16 sites per sample")

    # -- data and theta* -----------------------------------------------------
    rng = np.random.default_rng(2015)
    x = rng.choice([-1, 1], size=(5, N))
    X01 = (x + 1) // 2  # the package's coding
    xf = x.astype(float)
    tbar = np.r_[xf.mean(0), (xf[:, edges[:, 0]] * xf[:, edges[:, 1]]).mean(0)]
    assert np.allclose(tbar, ising_statistics(X01.mean(0), (X01[:, edges[:, 0]] * X01[:, edges[:, 1]]).mean(0), edges))

    def project(phi):
        # The paper's model has no fields: the set is {h = 0} x {|J_ij| <= beta}.
        return np.r_[np.zeros(N), project_box(phi[N:], BETA)]

    exact = ExactIsingExpectation(model)
    t0 = time.perf_counter()
    star, _ = projected_gradient(exact, tbar, project, lipschitz=L, ridge=LAM, n_iter=500)
    t_star = time.perf_counter() - t0

    def objective(phi):
        h, J = phi[:N], phi[N:]
        theta = np.zeros(model.n_params)
        theta[node_pos], theta[edge_pos] = ising_to_binary(h, J, edges, N)
        model.theta = theta
        # A(phi) = log Z_01(theta) + sum J - sum h (the constants of x = 2s - 1).
        A = model.log_partition() + J.sum() - h.sum()
        return A - phi @ tbar + 0.5 * LAM * phi @ phi

    f_star = objective(star)
    print(
        f"\ntheta* by 500 exact projected-gradient steps ({t_star:.2f} s): {np.sum(np.abs(star[N:]) >= BETA - 1e-12)}"
        f" of {E} couplings at the bound; f(theta*) = {f_star:.6f}"
    )

    # -- Algorithm 1, 5 runs ---------------------------------------------------
    def run(seed, n_samples):
        its = []
        chains = Chains(
            model.layout,
            colour_classes(model.graph),
            Rows(X01, model.n_states),
            n_samples,
            sweeps,
            "uniform",
            False,
            np.random.default_rng(seed),
            Parallel(n_jobs=1),
        )
        exp = IsingExpectation(chains)
        t0 = time.perf_counter()
        last, mean = projected_gradient(
            exp,
            tbar,
            project,
            lipschitz=L,
            ridge=LAM,
            n_iter=sched.n_iter,
            callback=lambda k, x, gradient: its.append(x.copy()),
        )
        return np.array(its), mean, time.perf_counter() - t0

    runs = [run(seed, sched.n_samples) for seed in range(n_runs)]
    gaps = np.array([[objective(p) - f_star for p in its] for its, _, _ in runs])
    dists = np.array([np.linalg.norm(its - star, axis=1) for its, _, _ in runs])
    print(
        f"\nAlgorithm 1, {n_runs} runs, K={sched.n_iter}, M={sched.n_samples}, {sweeps} sweeps "
        f"({sched.n_iter * sched.n_samples * sweeps * N:.3g} site updates per run)"
    )
    print(
        "   k   "
        + "  ".join(f"f-f* run{r}" for r in range(n_runs))
        + "   "
        + "  ".join(f"|t-t*| run{r}" for r in range(n_runs))
    )
    for k in sorted({k for k in [0, 1, 2, 4, 9, 19, 29, 39] if k < sched.n_iter} | {sched.n_iter - 1}):
        print(
            f"  {k + 1:3d} "
            + "  ".join(f"{g:10.2e}" for g in gaps[:, k])
            + "   "
            + "  ".join(f"{d:11.4f}" for d in dists[:, k])
        )
    for r, (_its, mean, dt) in enumerate(runs):
        print(
            f"  run {r}: {dt:5.2f} s; ||theta_K - theta*|| = {dists[r, -1]:.4f}, "
            f"||mean theta_k - theta*|| = {np.linalg.norm(mean - star):.4f}  (eps_theta = {EPS})"
        )
    if args.quick:
        return
    _, _, dt = run(99, fast_mixing_schedule(EPS, mixing_constant=math.log(16), **common).n_samples)
    print(f"  one run with M as written (7506): {dt:.2f} s")

    # -- Figure 2 ----------------------------------------------------------------
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no figure")
        return
    RESULTS.mkdir(exist_ok=True)
    k = np.arange(1, sched.n_iter + 1)
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    for r in range(n_runs):
        ax[0].semilogy(k, np.maximum(gaps[r], 1e-12))
        ax[1].semilogy(k, dists[r])
    ax[0].set(xlabel="iterations k", title=r"$f(\theta_k) - f(\theta^*)$")
    ax[1].set(xlabel="iterations k", title=r"$\|\theta_k - \theta^*\|_2$")
    its = runs[0][0]
    for e in range(E):
        ax[2].semilogx(k, its[:, e + N], lw=0.8)
    ax[2].scatter(np.full(E, sched.n_iter * 1.6), star[N:], marker="_", s=80, c="k")
    ax[2].set(xlabel="iterations k", title=r"couplings $J_{ij}$ (run 0) and $\theta^*$ (right)")
    fig.suptitle("Domke (2015) Figure 2: 4x4 Ising grid, |J| <= 0.2, K=46, M=1533, v=561")
    fig.tight_layout()
    out = RESULTS / "mcmc_domke.png"
    fig.savefig(out, dpi=120)
    print(f"\nfigure saved to {out}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total time {time.perf_counter() - t0:.1f} s")
