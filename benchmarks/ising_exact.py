"""AIS and fitted models on the periodic Ising model, against Kaufman's exact ``log Z``.

The ferromagnetic Ising model without field on the ``L x L`` torus, ``p(s) ~ exp(K sum_(ij) s_i
s_j)`` (``skmrf.datasets.make_ising_torus``: ``theta_ij = 4K``, ``theta_i = -8K``), has an exact
``log Z`` at every size (``skmrf.datasets.ising_torus_log_partition``, Kaufman 1949; checked in
``tests/test_ising_exact.py`` against enumeration, a transfer matrix, Onsager's limit and the
junction tree), and a critical point ``K_c = log(1 + sqrt 2) / 2 = 0.4407`` where single-site
Gibbs chains mix slowly and, above it, two phases that Gibbs chains do not cross. So it measures
what the random-grid benchmarks (``ais_log_partition.py``) cannot: AIS at sizes where nothing
else is exact, in the hardest regime.

Part ``ais``. ``skmrf.inference.adaptive_annealed_importance_sampling(model, random_state=seed)``
(its defaults: within ``AIS_BUDGET`` sweeps, path ``"auto"``) and the tree-reweighted upper bound as
the estimators' first score computes it (``TREE_BOUND_ITER`` iterations, once per cell: at ``L =
64`` it costs more than the AIS runs) on ``make_ising_torus(L, K)`` for every ``L`` of ``--sizes``,
``K`` of ``--couplings`` and seed ``0..--seeds - 1``. Per ``(L, K)``: the exact ``log Z``; the mean
error of the AIS estimate ``ais.log_z - exact``; the mean reported ``ais.std_err``; ``rms z``, the
root mean square of ``(est - exact) / std_err`` (1 for honest errors); the fraction of seeds with
``|est - exact|`` above 1 and 3 reported standard errors (0.317 and 0.0027 for normal errors of that
standard deviation); the fraction converged and budget-exhausted; the mean sweeps; whether every
interval ``[lower, upper]`` holds the exact value (and how many miss it); the mean interval width
and ``tree_bound - exact``; the mean wall seconds per call. A last row pools every cell.

Part ``fit``. Data drawn from the ``--L`` torus (default 16) at ``--K`` (default ``K_c``) by a
Swendsen-Wang sampler written here (numpy and ``scipy.sparse.csgraph.connected_components``
only, no skmrf; chains vectorised as one graph of ``chains * n`` nodes; equal-spin edges bonded
with probability ``1 - exp(-2K)``, every cluster flipped with probability 1/2). First it is
checked: the mean energy per site of its chains against Kaufman's, ``-d log Z_Ising / dK / N``
by a central difference, within the chains' Monte-Carlo error (standard error over independent
chains of the per-chain means), at ``K`` in ``{0.3, K_c, 0.6}`` and the fit's ``K``; and the
integrated autocorrelation time (Sokal's window, ``c = 5``) of ``|m|``, ``m^2`` and the energy is
reported, against the thinning used. Then ``--n-train`` rows (from ``--chains`` chains after
``--burn-in`` sweeps, one row every ``--thin`` sweeps; the smaller training sets are the first
rows of the largest) and ``--n-test`` held-out rows from other chains. ``PseudoLikelihoodEstimator``,
``LAPEstimator`` and ``MCMCMaxLikelihood`` (``--skip-mcmc`` leaves it out) are fitted with
``graph=torus_graph(L, L)``, ``score_method="pseudo"`` (so that the fit time holds no ``log Z``
estimate), ``random_state=0``, and ``alpha`` at its default and at 0. For each fitted model:
the held-out mean log-likelihood minus the truth's (the truth's ``log Z`` by Kaufman; the fitted
model's by ``log_partition_interval(model_, samples=None, random_state=0).ais.log_z``, whose
reported standard error is the error of the difference, printed beside it); the exact junction
tree's where it fits (``model_.log_partition()``; at ``L = 16`` it does not: treewidth ~ 2L);
the mean coupling ``J = theta_ij / 4`` (``K`` in the truth), the mean spin field
``h_i = theta_i / 2 + sum_j theta_ij / 4`` (0 in the truth), the energy of the all-ones state
minus the all-zeros one (0 in the truth: the model's spin-flip symmetry), and the fit seconds
with their ratio to pseudo-likelihood's. The truth itself is scored the same way once, so the
AIS error of a model of this size can be read beside the fits.

``--quick``: ``L = 16`` only, 2 seeds, ``K`` in ``{0.4407, 0.6}`` (and the fit part with 1000
training and 1000 held-out rows, without MCMC); it prints only, unless ``--out`` is given.

Usage::

    python benchmarks/ising_exact.py --part ais [--sizes 16 32 64] [--couplings 0.3 0.4407 0.5 0.6]
        [--seeds 10] [--quick] [--out FILE] [--no-save]
    python benchmarks/ising_exact.py --part fit [--L 16] [--K 0.4407] [--n-train 1000 10000]
        [--n-test 2000] [--chains 200] [--burn-in 200] [--thin 8] [--skip-mcmc] [--quick]
    python benchmarks/ising_exact.py --part all    # both, one file

Tables are printed and saved to ``benchmarks/results/ising_exact.txt`` (``--part all``) or
``benchmarks/results/ising_exact_<part>.txt`` (one part), the command line on the first line.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
import warnings

import numpy as np
import scipy
import scipy.sparse as sp
from _harness import commit, header, load_average, peak_rss_mib
from scipy.sparse.csgraph import connected_components

from skmrf import LAPEstimator, MCMCMaxLikelihood, PseudoLikelihoodEstimator, torus_graph
from skmrf.datasets import ising_torus_log_partition, make_ising_torus
from skmrf.estimators._log_partition import TREE_BOUND_ITER
from skmrf.exceptions import TreewidthError
from skmrf.inference import AIS_BUDGET, adaptive_annealed_importance_sampling, log_partition_interval, tree_upper_bound

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
K_C = math.log1p(math.sqrt(2)) / 2

# -- Output ---------------------------------------------------------------------------------------


class _Tee:
    """Print to the terminal and keep the lines for a results file."""

    def __init__(self, path):
        self.path, self.lines = path, []

    def __call__(self, text=""):
        print(text, flush=True)
        self.lines.append(text)

    def save(self):
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        print(f"saved {os.path.relpath(self.path)}")


def _header(out, argv):
    out(f"# python benchmarks/ising_exact.py {' '.join(argv)}".rstrip())
    out(header("ising_exact.py: AIS and fitted models on the periodic Ising model, against Kaufman's log Z"))
    out(f"# numpy {np.__version__}, scipy {scipy.__version__}, python {platform.python_version()}")
    return commit()


def _footer(out, source):
    out(f"# load average (1/5/15 min) at end {load_average()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    out(f"# process max RSS {peak_rss_mib():.0f} MiB")
    if commit() != source:
        out(f"# WARNING: skmrf's source changed during the run (now {commit()}); rerun for a clean table.")


# -- Kaufman's energy -----------------------------------------------------------------------------


def ising_log_partition(L, K):
    """Kaufman's ``log Z_Ising = log sum_s exp(K sum_(ij) s_i s_j)``: the package's ``log Z`` + ``K |E|``."""
    return ising_torus_log_partition(L, K) + K * 2 * L * L


def kaufman_energy_per_site(L, K, h=1e-4):
    """``-d log Z_Ising / dK / N`` by a central difference.

    Truncation ``h^2 / 6 |d^3 log Z / dK^3| / N`` (below 1e-6 per site at ``L <= 64``, even at
    ``K_c`` where the specific heat grows as ``log L``) and rounding ``eps |log Z_Ising| / h / N``
    (about 1e-11): far below the Monte-Carlo errors it is compared with (1e-3).
    """
    return -(ising_log_partition(L, K + h) - ising_log_partition(L, K - h)) / (2 * h) / (L * L)


# -- Swendsen-Wang (independent of skmrf) ---------------------------------------------------------


def torus_edges(L):
    """``(2 L^2, 2)`` edges of the ``L x L`` torus, row-major nodes (written here, not skmrf's)."""
    r, c = np.divmod(np.arange(L * L), L)
    right = np.stack([r * L + c, r * L + (c + 1) % L], axis=1)
    down = np.stack([r * L + c, ((r + 1) % L) * L + c], axis=1)
    return np.concatenate([right, down])


class SwendsenWang:
    """``chains`` independent Swendsen-Wang chains of the zero-field Ising model on the ``L x L`` torus.

    All chains form one graph of ``chains * n`` nodes (node ``chain * n + i``): one call of
    ``connected_components`` labels every chain's clusters at once.
    """

    def __init__(self, L, K, chains, rng):
        self.L, self.K, self.chains, self.rng = L, K, chains, rng
        self.n = L * L
        self.edges = torus_edges(L)
        offset = (np.arange(chains) * self.n)[:, None]
        self.u = (offset + self.edges[:, 0]).ravel()  # (chains * E,) global endpoints, chain-major
        self.v = (offset + self.edges[:, 1]).ravel()
        self.p_bond = -math.expm1(-2 * K)
        self.s = rng.choice(np.array([-1, 1], dtype=np.int8), size=(chains, self.n))  # hot start

    def sweep(self):
        """One Swendsen-Wang update of every chain."""
        s = self.s.ravel()
        bond = (s[self.u] == s[self.v]) & (self.rng.random(self.u.size) < self.p_bond)
        graph = sp.coo_array(
            (np.ones(int(bond.sum()), dtype=np.int8), (self.u[bond], self.v[bond])), shape=(s.size, s.size)
        ).tocsr()
        n_clusters, label = connected_components(graph, directed=False)
        flip = np.where(self.rng.random(n_clusters) < 0.5, -1, 1).astype(np.int8)
        self.s = (s * flip[label]).reshape(self.chains, self.n)

    def energy_per_site(self):
        """``-sum_(ij) s_i s_j / N`` of each chain."""
        s = self.s.astype(np.int32)
        return -(s[:, self.edges[:, 0]] * s[:, self.edges[:, 1]]).sum(axis=1) / self.n

    def magnetisation(self):
        return self.s.mean(axis=1, dtype=np.float64)


def run_swendsen_wang(L, K, chains, burn_in, n_keep, thin, seed):
    """Rows and traces of ``chains`` Swendsen-Wang chains.

    Returns ``(X, energy, mag)``: ``X`` the ``{0, 1}`` states kept (one every ``thin`` sweeps
    after ``burn_in``, ``n_keep`` per chain; rows ordered sweep-major, so the first ``k * chains``
    rows are the first ``k`` draws of every chain), and the per-sweep energy per site and
    magnetisation of every chain after the burn-in, shape ``(sweeps, chains)``.
    """
    sw = SwendsenWang(L, K, chains, np.random.default_rng(seed))
    for _ in range(burn_in):
        sw.sweep()
    kept, energy, mag = [], [], []
    for t in range(n_keep * thin):
        sw.sweep()
        energy.append(sw.energy_per_site())
        mag.append(sw.magnetisation())
        if (t + 1) % thin == 0:
            kept.append((sw.s > 0).astype(np.int64))
    return np.concatenate(kept), np.array(energy), np.array(mag)


def integrated_autocorrelation_time(series, c=5.0):
    """Sokal's windowed estimate of ``tau_int`` (in sweeps) of ``series`` of shape ``(T, chains)``.

    The autocovariance is averaged over chains (about the grand mean); the window is the first
    ``W`` with ``W >= c tau(W)``. ``tau = 1/2`` for independent draws.
    """
    x = series - series.mean()
    T = len(x)
    var = np.mean(x * x)
    if var == 0:
        return 0.5
    tau = 0.5
    for t in range(1, T // 2):
        tau += np.mean(x[t:] * x[:-t]) / var
        if t >= c * tau:
            break
    return float(tau)


def energy_check(energy, L, K):
    """``(mean, standard error, Kaufman's, z)`` of the per-site energy of independent chains."""
    per_chain = energy.mean(axis=0)
    mean = float(per_chain.mean())
    se = float(per_chain.std(ddof=1) / math.sqrt(per_chain.size))
    exact = kaufman_energy_per_site(L, K)
    return mean, se, exact, (mean - exact) / se


# -- Part ais -------------------------------------------------------------------------------------


def part_ais(args, out):
    seeds = range(args.seeds)
    out(
        f"# adaptive_annealed_importance_sampling(make_ising_torus(L, K), random_state=seed) with its defaults "
        f"(budget {AIS_BUDGET:,} sweeps, path 'auto', cluster_moves={args.cluster_moves!r}), "
        f"seeds 0..{args.seeds - 1}; the interval "
        f"[ais.lower, tree bound] as the estimators' score computes it (tree_upper_bound with {TREE_BOUND_ITER} "
        "L-BFGS iterations, once per cell); "
        "exact log Z by Kaufman (package's parametrisation: log Z_Ising - 2 K L^2)"
    )
    out("# err = ais.log_z - exact (mean over seeds); se = reported ais.std_err (mean); rms z = sqrt(mean z^2),")
    out("# z = err / se per seed (1 when the reported error is honest); >1se, >3se: fraction of seeds with |z| above")
    out("# 1 and 3 (0.317 and 0.0027 for normal errors of standard deviation se); conv, exh: fraction converged /")
    out("# budget exhausted; sweeps: mean (thousands); in [lo,up]: seeds whose interval holds the exact value;")
    out("# width = upper - lower, tree - exact (both means); s: mean wall seconds per call; warn: warnings raised.")
    out()
    head = (
        f"{'L':>4} {'K':>7} {'exact logZ':>12} {'err':>9} {'se':>8} {'rms z':>7} {'>1se':>5} {'>3se':>5} "
        f"{'conv':>5} {'exh':>5} {'sweeps k':>8} {'in [lo,up]':>10} {'width':>8} {'tree-exact':>10} "
        f"{'s':>7} {'warn':>4}"
    )
    out(head)
    out("-" * len(head))
    pooled = {k: [] for k in ("z", "conv", "exh", "inside", "s")}

    def row(label_l, label_k, exact_txt, err, se, z, conv, exh, sweeps, inside, width, tree, secs, n_warn):
        z = np.asarray(z)
        out(
            f"{label_l:>4} {label_k:>7} {exact_txt:>12} {err:>9.4f} {se:>8.4f} {np.sqrt(np.mean(z**2)):>7.2f} "
            f"{np.mean(np.abs(z) > 1):>5.2f} {np.mean(np.abs(z) > 3):>5.2f} {np.mean(conv):>5.2f} {np.mean(exh):>5.2f} "
            f"{sweeps / 1e3:>8.0f} {f'{int(np.sum(inside))}/{len(inside)}':>10} {width:>8.2f} {tree:>10.2f} "
            f"{secs:>7.2f} {n_warn:>4d}"
        )

    for L in args.sizes:
        for K in args.couplings:
            exact = ising_torus_log_partition(L, K)
            model = make_ising_torus(L, K)
            rec = {k: [] for k in ("err", "se", "conv", "exh", "sweeps", "inside", "width", "tree", "s")}
            n_warn = 0
            # The upper end: the tree-reweighted bound as the estimators' first score computes it
            # (TREE_BOUND_ITER L-BFGS iterations), once per cell: it does not depend on the seed's AIS.
            t = time.perf_counter()
            tree = tree_upper_bound(model, max_iter=TREE_BOUND_ITER, random_state=0).bound
            tree_s = time.perf_counter() - t
            for seed in seeds:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    t = time.perf_counter()
                    ais = adaptive_annealed_importance_sampling(
                        model, random_state=seed, cluster_moves=args.cluster_moves
                    )
                    rec["s"].append(time.perf_counter() - t)
                n_warn += len(caught)
                rec["err"].append(ais.log_z - exact)
                rec["se"].append(ais.std_err)
                rec["conv"].append(ais.converged)
                rec["exh"].append(ais.budget_exhausted)
                rec["sweeps"].append(ais.sweeps)
                rec["inside"].append(ais.lower <= exact <= tree)
                rec["width"].append(tree - ais.lower)
                rec["tree"].append(tree - exact)
                print(
                    f"  L={L} K={K} seed={seed}: err {rec['err'][-1]:+.4f}, se {rec['se'][-1]:.4f}, "
                    f"converged {ais.converged}, {ais.sweeps} sweeps ({ais.path}), {rec['s'][-1]:.1f} s "
                    f"(tree bound {tree_s:.1f} s once per cell)",
                    flush=True,
                )
            err, se = np.array(rec["err"]), np.array(rec["se"])
            z = err / se
            row(
                L,
                f"{K:g}",
                f"{exact:.4f}",
                err.mean(),
                se.mean(),
                z,
                rec["conv"],
                rec["exh"],
                np.mean(rec["sweeps"]),
                rec["inside"],
                np.mean(rec["width"]),
                np.mean(rec["tree"]),
                np.mean(rec["s"]),
                n_warn,
            )
            pooled["z"] += list(z)
            pooled["conv"] += rec["conv"]
            pooled["exh"] += rec["exh"]
            pooled["inside"] += rec["inside"]
            pooled["s"] += rec["s"]
    out("-" * len(head))
    z = np.array(pooled["z"])
    inside = f"{int(np.sum(pooled['inside']))}/{len(pooled['inside'])}"
    out(
        f"{'all':>4} {'':>7} {'':>12} {'':>9} {'':>8} {np.sqrt(np.mean(z**2)):>7.2f} {np.mean(np.abs(z) > 1):>5.2f} "
        f"{np.mean(np.abs(z) > 3):>5.2f} {np.mean(pooled['conv']):>5.2f} {np.mean(pooled['exh']):>5.2f} {'':>8} "
        f"{inside:>10} {'':>8} {'':>10} "
        f"{np.sum(pooled['s']):>7.0f}"
    )
    out("# (the 'all' row's s column is the total wall seconds)")


# -- Part fit -------------------------------------------------------------------------------------


def _binary_pairwise(model):
    """``(unary, edges, pair)`` of a binary pairwise ``DiscreteMRF`` (one parameter per clique)."""
    if model.n_params != len(model.cliques) or any(len(c) > 2 for c in model.cliques):
        raise ValueError("expected a binary pairwise model")
    size = np.array([len(c) for c in model.cliques])
    unary = np.zeros(model.n_variables)
    unary[[c[0] for c, k in zip(model.cliques, size) if k == 1]] = model.theta[size == 1]
    edges = np.array([c for c in model.cliques if len(c) == 2], dtype=np.int64)
    return unary, edges, model.theta[size == 2]


def unnormalised_log_prob(unary, edges, pair, X):
    """``x . unary + sum_(ij) pair_ij x_i x_j`` of every row of ``X``."""
    return X @ unary + (X[:, edges[:, 0]] * X[:, edges[:, 1]]) @ pair


def summarise(unary, edges, pair, n):
    """Mean coupling ``J``, mean spin field ``h`` and ``E(all ones) - E(all zeros)``."""
    J = pair / 4
    h = unary / 2 + (np.bincount(edges[:, 0], J, n) + np.bincount(edges[:, 1], J, n))
    return J.mean(), h.mean(), unary.sum() + pair.sum()


def score_log_partition(model, seed=0):
    """``(AIS log Z, its std_err, converged, exact log Z or None, note, warnings)`` of a fitted model."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        iv = log_partition_interval(model, samples=None, random_state=seed)
    exact, note = None, ""
    try:
        exact = model.log_partition()
    except (TreewidthError, MemoryError) as exc:
        note = f"jt: {type(exc).__name__}"
    return iv.ais.log_z, iv.ais.std_err, iv.ais.converged, exact, note, caught


def part_fit(args, out):
    L, K = args.L, args.K
    n = L * L
    n_train_max = max(args.n_train)
    # -- the sampler's check
    out(f"# Swendsen-Wang check on the {L} x {L} torus: {args.chains} chains, {args.burn_in} sweeps of burn-in, then")
    out("# the per-site energy of every sweep; se: standard error over chains of the per-chain means; Kaufman:")
    out("# -d log Z_Ising / dK / L^2 (central difference, h = 1e-4); tau: integrated autocorrelation time (sweeps,")
    out("# Sokal's window c = 5) of |m|, m^2 and the energy.")
    out()
    head = (
        f"{'K':>7} {'sweeps':>6} {'SW energy':>10} {'se':>8} {'Kaufman':>10} {'z':>6} "
        f"{'tau |m|':>7} {'tau m^2':>7} {'tau E':>6} {'s':>6}"
    )
    out(head)
    out("-" * len(head))
    check_sweeps = max(200, 4 * args.thin * 10)
    bad = []
    for Kc in sorted({0.3, round(K_C, 4), 0.6, K}):
        t = time.perf_counter()
        _, energy, mag = run_swendsen_wang(L, Kc, args.chains, args.burn_in, check_sweeps, 1, seed=10_000)
        secs = time.perf_counter() - t
        mean, se, exact, z = energy_check(energy, L, Kc)
        taus = [integrated_autocorrelation_time(s) for s in (np.abs(mag), mag**2, energy)]
        out(
            f"{Kc:>7.4f} {check_sweeps:>6d} {mean:>10.5f} {se:>8.5f} {exact:>10.5f} {z:>6.2f} "
            f"{taus[0]:>7.2f} {taus[1]:>7.2f} {taus[2]:>6.2f} {secs:>6.1f}"
        )
        if abs(z) > 4:  # P(|z| > 4) = 6e-5 per K for a correct sampler
            bad.append(Kc)
    out(
        "# check: "
        + (f"FAILED at K = {bad} (|z| > 4)" if bad else "passed (|z| <= 4 at every K: the sampler draws the model)")
    )
    out()

    # -- the data
    t = time.perf_counter()
    per_chain = math.ceil(n_train_max / args.chains)
    X_train, e_train, m_train = run_swendsen_wang(L, K, args.chains, args.burn_in, per_chain, args.thin, seed=1)
    X_test, _, _ = run_swendsen_wang(
        L, K, args.chains, args.burn_in, math.ceil(args.n_test / args.chains), args.thin, seed=2
    )
    X_train, X_test = X_train[:n_train_max], X_test[: args.n_test]
    tau = max(integrated_autocorrelation_time(s) for s in (np.abs(m_train), m_train**2, e_train))
    mean, se, exact_u, z = energy_check(e_train, L, K)
    out(
        f"# data: {L} x {L} torus at K = {K:g}; training rows from {args.chains} chains (seed 1), held-out rows "
        f"from {args.chains} others (seed 2); burn-in {args.burn_in} sweeps, one row every {args.thin} sweeps "
        f"(max tau_int {tau:.2f} sweeps{': thinning below 2 tau!' if args.thin < 2 * tau else ''}); "
        f"{time.perf_counter() - t:.1f} s"
    )
    out(f"# training chains' energy per site {mean:.5f} +- {se:.5f}, Kaufman {exact_u:.5f} (z = {z:.2f})")
    out(
        f"# training |m| = {np.abs(X_train.mean(axis=1) * 2 - 1).mean():.3f}, "
        f"fraction of ones {X_train.mean():.4f} (0.5 by symmetry)"
    )

    # -- the truth
    log_z_true = ising_torus_log_partition(L, K)
    true_model = make_ising_torus(L, K)
    t_unary, t_edges, t_pair = _binary_pairwise(true_model)
    ll_true = float(unnormalised_log_prob(t_unary, t_edges, t_pair, X_test).mean() - log_z_true)
    t = time.perf_counter()
    ais_true, se_true, conv_true, _, _, w_true = score_log_partition(true_model)
    t_true = time.perf_counter() - t
    out(f"# truth: exact log Z {log_z_true:.4f}, held-out mean log-likelihood {ll_true:.4f} per row")
    out()
    out("# dLL: held-out mean log-likelihood minus the truth's, the fitted model's log Z by AIS")
    out("# (log_partition_interval(model_, samples=None, random_state=0).ais.log_z); se: its reported std_err,")
    out("# conv: AIS converged; dLL jt: the same with the junction tree's log Z where it fits (- where it does not;")
    out("# for the truth, Kaufman's);")
    out(f"# J: mean theta_ij / 4 (truth {K:.4f}); J/K: its ratio to the truth; h: mean spin field theta_i / 2 +")
    out("# sum_j theta_ij / 4 (truth 0); E1-E0: energy of all ones minus all zeros (truth 0); fit s, x PL: fit")
    out("# seconds and their ratio to pseudo-likelihood's at the same n and alpha; AIS s: the log Z estimate's.")
    out()
    head = (
        f"{'n_train':>7} {'model':>6} {'alpha':>7} {'dLL':>9} {'se':>7} {'conv':>5} {'dLL jt':>8} {'J':>7} "
        f"{'J/K':>6} {'h':>8} {'E1-E0':>8} {'fit s':>7} {'x PL':>5} {'AIS s':>6}"
    )
    out(head)
    out("-" * len(head))
    out(
        f"{'-':>7} {'truth':>6} {'-':>7} {-(ais_true - log_z_true):>9.4f} {se_true:>7.4f} {str(conv_true):>5} "
        f"{0.0:>8.4f} {K:>7.4f} {1.0:>6.3f} {0.0:>8.4f} {0.0:>8.3f} {'-':>7} {'-':>5} {t_true:>6.1f}"
    )
    estimators = {"PL": PseudoLikelihoodEstimator, "LAP": LAPEstimator}
    if not args.skip_mcmc:
        estimators["MCMC"] = MCMCMaxLikelihood
    graph = torus_graph(L, L)
    notes, n_warn = set(), 0

    def record(source, caught):
        nonlocal n_warn
        n_warn += len(caught)
        for w in caught:
            notes.add(f"{source}: {w.category.__name__}: {str(w.message).splitlines()[0][:150]}")

    record("truth log Z", w_true)
    for n_train in sorted(args.n_train):
        X = X_train[:n_train]
        for alpha in ("auto", 0.0):
            pl_time = None
            for name, cls in estimators.items():
                est = cls(graph, alpha=alpha, score_method="pseudo", random_state=0)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    t = time.perf_counter()
                    est.fit(X)
                    fit_s = time.perf_counter() - t
                record(f"{name} alpha={alpha} fit", caught)
                pl_time = fit_s if name == "PL" else pl_time
                unary, edges, pair = _binary_pairwise(est.model_)
                energy = float(unnormalised_log_prob(unary, edges, pair, X_test).mean())
                t = time.perf_counter()
                log_z, se, conv, exact, note, w = score_log_partition(est.model_)
                ais_s = time.perf_counter() - t
                record(f"{name} alpha={alpha} log Z", w)
                if note:
                    notes.add(note)
                J, h, e10 = summarise(unary, edges, pair, n)
                jt = f"{energy - exact - ll_true:>8.4f}" if exact is not None else f"{'-':>8}"
                out(
                    f"{n_train:>7d} {name:>6} {str(alpha):>7} {energy - log_z - ll_true:>9.4f} {se:>7.4f} "
                    f"{str(conv):>5} {jt} {J:>7.4f} {J / K:>6.3f} {h:>8.4f} {e10:>8.3f} {fit_s:>7.1f} "
                    f"{fit_s / pl_time:>5.1f} {ais_s:>6.1f}"
                )
    out("-" * len(head))
    out(f"# {n_warn} warnings; distinct ones and notes:")
    for note in sorted(notes):
        out(f"#   {note}")


# -- Main -----------------------------------------------------------------------------------------


def main():
    argv = sys.argv[1:]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="all", choices=["ais", "fit", "all"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 64], help="ais: torus sides L")
    parser.add_argument("--couplings", type=float, nargs="+", default=[0.3, 0.4407, 0.5, 0.6], help="ais: K")
    parser.add_argument("--seeds", type=int, default=10, help="ais: seeds 0..seeds-1")
    parser.add_argument("--L", type=int, default=16, help="fit: torus side")
    parser.add_argument("--K", type=float, default=0.4407, help="fit: coupling")
    parser.add_argument("--n-train", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--n-test", type=int, default=2000)
    parser.add_argument("--chains", type=int, default=200, help="fit: Swendsen-Wang chains")
    parser.add_argument("--burn-in", type=int, default=200, help="fit: sweeps before the first row")
    parser.add_argument(
        "--thin", type=int, default=8, help="fit: sweeps between rows of a chain (tau_int is ~3.3 at K_c, L=16)"
    )
    parser.add_argument(
        "--cluster-moves",
        default=False,
        type=lambda v: {"auto": "auto", "false": False, "true": True}[v.lower()],
        help="ais: the cluster_moves of adaptive AIS (auto: Swendsen-Wang moves on these ferromagnets)",
    )
    parser.add_argument("--skip-mcmc", action="store_true", help="fit: leave MCMCMaxLikelihood out")
    parser.add_argument(
        "--quick", action="store_true", help="L=16, 2 seeds, K in {0.4407, 0.6}; 1000 rows, no MCMC; print only"
    )
    parser.add_argument("--out", default=None, help="results file (default: see the module docstring)")
    parser.add_argument("--no-save", dest="save", action="store_false", help="print only")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.seeds, args.couplings, args.L = [16], 2, [0.4407, 0.6], 16
        args.n_train, args.n_test, args.skip_mcmc = [1000], 1000, True
        args.save = args.save and args.out is not None
    name = "ising_exact.txt" if args.part == "all" else f"ising_exact_{args.part}.txt"
    out = _Tee(args.out or os.path.join(RESULTS, name))
    source = _header(out, argv)
    if args.part in ("ais", "all"):
        out()
        out("## Part ais: AIS and the interval on make_ising_torus(L, K) against Kaufman's log Z")
        part_ais(args, out)
    if args.part in ("fit", "all"):
        out()
        out("## Part fit: estimators on Swendsen-Wang samples, held-out log-likelihood against the truth's")
        part_fit(args, out)
    out()
    _footer(out, source)
    if args.save:
        out.save()


if __name__ == "__main__":
    main()
