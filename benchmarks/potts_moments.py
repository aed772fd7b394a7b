"""How well MCMC maximum likelihood reproduces an alignment's statistics (#26 item 5).

adabmDCA's criterion for a generative Potts model: the Pearson correlation of the model's and the
data's weighted two-site connected correlations ``C_ij(a, b) = f_ij(a, b) - f_i(a) f_j(b)``
(pairs i < j, all q x q states) at least 0.95, and of the one-site frequencies at least 0.99.

Fits ``MCMCMaxLikelihood`` (complete graph, q = 21, plmc's sequence weights at identity 0.8) on
the first L focus columns of plmc's DHFR example alignment (``example/protein/DHFR.a2m`` in
https://github.com/debbiemarkslab/plmc; give its path, nothing is downloaded), with the
moment-matching schedule (bmDCA's fit) or the adaptive one, and measures the criterion three ways:

- ``chains``: on the fit's own persistent chains (what the schedule stops on, and what adabmDCA
  reports), read from ``trace_`` (its entries: states other than 0, pairs on the graph);
- ``fresh from data``: new chains started at data rows drawn by weight, run 10, 100 and 1000
  sweeps under the fitted model (``GibbsSampler``): whether the statistics hold as the chains
  run towards the model's equilibrium;
- ``fresh from uniform``: the same from uniformly random states;
- ``noise ceiling``: the criterion of ``M`` rows drawn from the data by weight, what a perfect
  model's ``M`` independent samples would score (the target is out of reach with fewer chains).

The benchmark also fits pseudo-likelihood with the same ridge and prints the precision of each fit's
top-k APC pairs: on DHFR against the contacts of its crystal structure (``data/dhfr_4dfr_contacts.txt``:
PDB 4DFR chain A, C-beta < 8 A, ``|i - j| >= 5``; k = L/5, L/2, L). With ``synthetic`` in place of the
path the alignment is drawn instead from a Potts model with known contacts
(:func:`skmrf.protein.make_synthetic_alignment`, L columns, q = 21; k = the true contacts).

Usage: ``python benchmarks/potts_moments.py (DHFR.a2m | synthetic) L [--schedule moments]
[--n-iter N] [--n-chains M] [--n-sweeps V] [--learning-rate R] [--alpha A]`` (CPU seconds, wall
seconds and peak memory are printed; run with OPENBLAS_NUM_THREADS=1 on a shared machine).
``python benchmarks/potts_moments.py --quick``: the synthetic alignment, L = 10, a 5-step fit of 200 chains,
200 fresh chains, noise ceiling up to 2000 rows, one BLAS thread (a smoke run).
"""

import argparse
import os
import sys
import time

import numpy as np
from _harness import header, limit_blas, load_average, peak_rss_mib

from skmrf import AdaptiveSchedule, MCMCMaxLikelihood, MomentMatchingSchedule, PseudoLikelihoodEstimator
from skmrf.inference import GibbsSampler
from skmrf.protein import coupling_scores, make_synthetic_alignment, read_alignment, sequence_weights

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from protein_dca import MIN_SEP, Q  # noqa: E402
from protein_dca import _moments as moments  # noqa: E402

#: DHFR's contacts in its crystal structure (PDB 4DFR chain A, C-beta < 8 A), on the focus columns.
DHFR_CONTACTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "dhfr_4dfr_contacts.txt")


def load(a):
    if a.alignment == "synthetic":
        aln = make_synthetic_alignment(500 if a.quick else 3000, a.L, n_states=Q, n_contacts=a.L, random_state=0)
        true = {(int(i), int(j)) for i, j in aln.contacts if j - i >= MIN_SEP}
        return aln.X, np.ones(len(aln.X)), true, f"synthetic Potts model, {a.L} columns, {len(true)} contacts"
    X, names, _ = read_alignment(a.alignment, nonstandard="drop")
    focus = [k for k, name in enumerate(names) if name.startswith("DYR_ECOLI")][0]
    X = X[:, X[focus] != 0][:, : a.L]
    X = X[np.sort(np.unique(X, axis=0, return_index=True)[1])]
    pairs = np.loadtxt(DHFR_CONTACTS, dtype=np.int64)
    true = {(int(i), int(j)) for i, j in pairs if j < a.L and j - i >= MIN_SEP}
    return X, sequence_weights(X, 0.8), true, f"DHFR (plmc's example), first {a.L} focus columns"


def criterion(X, w, S):
    """Pearson r of the connected correlations (pairs i < j, all states) and of the frequencies."""
    L = X.shape[1]
    f1d, Cd = moments(X, w)
    f1m, Cm = moments(S, np.ones(len(S)))
    iu = np.triu_indices(L, 1)
    return np.corrcoef(Cd[iu].ravel(), Cm[iu].ravel())[0, 1], np.corrcoef(f1d.ravel(), f1m.ravel())[0, 1]


def noise_ceiling(X, w, sizes=(1000, 2000, 4000, 8000, 16000)):
    """The criterion of ``M`` rows drawn from the data by weight: what a perfect model's ``M``
    independent samples would score (their only error is Monte-Carlo noise)."""
    rng = np.random.default_rng(0)
    return [(m, *criterion(X, w, X[rng.choice(len(X), m, p=w / w.sum())])) for m in sizes]


def start_states(sampler, X, w, n_chains, start, rng):
    """``n_chains`` start states: data rows drawn by weight (``start="data"``) or uniform random states."""
    if start == "data":
        return X[rng.choice(len(X), size=n_chains, p=w / w.sum())]
    return sampler.random_states(n_chains, rng)


def fresh_chains(model, X, w, n_chains, start):
    """Criterion of new chains after 10, 100 and 1000 sweeps from data rows or uniform states."""
    rng = np.random.default_rng(1)
    sampler = GibbsSampler(model)
    S = start_states(sampler, X, w, n_chains, start, rng)
    out, done = [], 0
    for total in (10, 100, 1000):
        S = sampler.run(S, total - done, rng)
        done = total
        r_C, r_f = criterion(X, w, S)
        out.append(f"{total} sweeps: C r {r_C:.3f}, f1 r {r_f:.4f}, gap fraction {np.mean(S == 0):.3f}")
    return out


def precision(S, true, k):
    """Fraction of the top-k pairs at ``|i - j| >= MIN_SEP`` by score ``S`` that are in ``true``."""
    L = S.shape[0]
    iu = [(i, j) for i in range(L) for j in range(i + MIN_SEP, L)]
    order = sorted(iu, key=lambda p: -S[p])
    return np.mean([p in true for p in order[:k]])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("alignment", nargs="?", help="path to DHFR.a2m, or 'synthetic'")
    p.add_argument("L", type=int, nargs="?")
    p.add_argument("--schedule", choices=("moments", "adaptive"), default="moments")
    p.add_argument("--n-iter", type=int, default=None)
    p.add_argument("--n-chains", type=int, default=None)
    p.add_argument("--n-sweeps", type=lambda v: v if v == "auto" else int(v), default=None, help="an int or auto")
    p.add_argument("--n-jobs", type=int, default=1, help="threads for the chain blocks (moments schedule)")
    p.add_argument("--verbose", type=int, default=0)
    p.add_argument("--learning-rate", type=float, default=None)
    p.add_argument("--alpha", type=float, default=1e-4)
    p.add_argument("--n-check", type=int, default=5000, help="fresh chains for the equilibrium check")
    p.add_argument("--quick", action="store_true", help="synthetic, L = 10, 5 steps of 200 chains, 200 fresh chains")
    a = p.parse_args()
    sizes = (1000, 2000, 4000, 8000, 16000)
    if a.quick:
        a.alignment, a.L, a.n_iter, a.n_chains, a.n_check, sizes = "synthetic", 10, 5, 200, 200, (1000, 2000)
        limit_blas(1)  # a loaded machine's second BLAS thread slows the small products
    if a.alignment is None or a.L is None:
        p.error("give the alignment (a path or 'synthetic') and L, or --quick")
    X, w, true, source = load(a)
    print(
        header(
            f"potts_moments.py: MCMCMaxLikelihood ({a.schedule}) against the alignment's statistics",
            1 if a.quick else None,
        )
    )
    print(f"# {source}: {X.shape[0]} sequences, M_eff {w.sum():.1f}, alpha {a.alpha:g}; load {load_average()}")
    ceiling = "; ".join(f"M = {m}: C r {r:.3f}, f1 r {f:.4f}" for m, r, f in noise_ceiling(X, w, sizes))
    print(f"  noise ceiling (M rows drawn from the data by weight): {ceiling}")
    if a.schedule == "moments":
        given = {"n_iter": a.n_iter, "n_chains": a.n_chains, "n_sweeps": a.n_sweeps, "learning_rate": a.learning_rate}
        kw = {k: v for k, v in given.items() if v is not None}
        schedule = MomentMatchingSchedule(**kw)
    else:
        schedule = AdaptiveSchedule(n_iter=a.n_iter or "auto")
    cpu, wall = time.process_time(), time.perf_counter()
    est = MCMCMaxLikelihood(
        "complete", n_states=Q, alpha=a.alpha, schedule=schedule, random_state=0, n_jobs=a.n_jobs, verbose=a.verbose
    )
    est.fit(X, sample_weight=w)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = peak_rss_mib()
    print(f"{schedule!r}: {est.n_iter_} steps, converged {est.converged_}, fit {cpu:.1f} s CPU, {wall:.1f} s wall")
    if "pearson_connected" in est.trace_:
        r_C, r_f = est.trace_["pearson_connected"][-1], est.trace_["pearson_frequencies"][-1]
        print(f"  chains (the fit's own, {est.schedule_.n_chains}): C r {r_C:.3f}, f1 r {r_f:.4f}")
        t = est.trace_
        print(
            f"  last step: {t['n_sweeps'][-1]} sweeps, chains decorrelated {bool(t['decorrelated'][-1])} (overlap with "
            f"their states a step before {t['overlap_self'][-1]:.3f}, with other chains' "
            f"{t['overlap_between'][-1]:.3f}); "
            f"{int(t['n_sweeps'].sum())} sweeps in all; best C r {t['pearson_connected'].max():.3f}"
        )
    for start in ("data", "uniform"):
        print(
            f"  fresh from {start} ({a.n_check} chains): " + "; ".join(fresh_chains(est.model_, X, w, a.n_check, start))
        )
    if true:
        pl = PseudoLikelihoodEstimator("complete", n_states=Q, alpha=a.alpha).fit(X, sample_weight=w)
        # plmc's lambda_J = 0.01 (q - 1)(L - 1) on the summed objective is alpha = 2 lambda_J / M_eff here
        dca_alpha = 2 * 0.01 * (Q - 1) * (X.shape[1] - 1) / w.sum()
        pl_dca = PseudoLikelihoodEstimator("complete", n_states=Q, alpha=dca_alpha).fit(X, sample_weight=w)
        L = X.shape[1]
        ks = [len(true)] if a.alignment == "synthetic" else [L // 5, L // 2, L]
        for name, fitted in (("MCMC", est), ("PL", pl), (f"PL, plmc's ridge (alpha {dca_alpha:.3g})", pl_dca)):
            scores = coupling_scores(fitted).matrix
            text = ", ".join(f"top-{k} {precision(scores, true, k):.2f}" for k in ks)
            print(f"  {name}: precision of the APC pairs ({len(true)} true contacts at |i - j| >= {MIN_SEP}): {text}")
    print(f"  peak memory {peak:.0f} MiB (at the end of the fit); load {load_average()}")


if __name__ == "__main__":
    main()
