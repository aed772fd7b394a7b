"""Direct coupling analysis on a protein family: skmrf against plmc and pydca, side by side.

One alignment, the same sequences and columns for every tool, each tool run as its own
subprocess under ``/usr/bin/time -v`` (CPU time = user + system, wall time, peak resident
memory):

- **plmc** (C; Marks lab), symmetric pseudo-likelihood, L2 ``lambda_h`` on fields and
  ``lambda_J`` on couplings, ``theta = 1 - identity`` reweighting;
- **pydca** ``PlmDCA`` (Python + C++; Zerihun et al.), the same objective;
- **skmrf** ``PseudoLikelihoodEstimator(graph="complete", n_states=21, alpha=...)``;
- **skmrf** ``MCMCMaxLikelihood`` (a short run; ``--skip-mcmc`` leaves it out).

Reported: Spearman correlation of the APC scores of all pairs with each peer's, the overlap
of the top-L/5 and top-L/2 pairs at ``|i - j| >= 5``, the sequence weights against plmc's,
and for the skmrf models the Pearson r of the weighted connected correlations
``C_ij(a, b) = f_ij(a, b) - f_i(a) f_j(b)`` (and of the one-site frequencies) of Gibbs samples
of the fitted model against the data's. With ``--synthetic`` the alignment is drawn from a
Potts model with known contacts (:func:`skmrf.protein.make_synthetic_alignment`) and the
precision of each tool's top-k pairs (k = the number of true contacts at ``|i - j| >= 5``)
is reported too.

Where to get the inputs (nothing is downloaded at run time):

- the alignment: plmc's repository, ``example/protein/DHFR.a2m`` (3629 sequences, 171 columns;
  159 match columns of its focus sequence ``DYR_ECOLI``);
- plmc: build it from the same repository with ``make all-openmp`` (or ``make all`` without
  OpenMP) and pass ``--plmc path/to/bin/plmc``;
- pydca: ``pip install pydca`` does not install on Python 3.11 (it pins numpy <= 1.15.4,
  scipy 1.3.1, numba 0.46). It builds and runs with its pins ignored: in a virtual
  environment, ``pip install numpy scipy numba biopython requests`` then
  ``pip install --no-deps pydca``; pass that environment's interpreter as ``--pydca-python``.

The alignment is read by :func:`skmrf.protein.read_alignment`; sequences with letters outside
the 21-letter alphabet are dropped (plmc's rule); with ``--focus NAME`` only the columns where
that sequence is not a gap are kept (plmc's focus mode); duplicate sequences are removed
(pydca's rule), so that every tool sees the same rows; ``--columns A:B`` keeps a window of
columns. The cleaned alignment is written once, one sequence per line (pydca needs that), and
given to every tool.

Regularisation, matched (derivation in ``doc/user_guide/protein.rst``): plmc and pydca minimise
``sum_n w_n PLL_n + lambda_h ||h||^2 + lambda_J ||J||^2`` with EVcouplings' default
``lambda_h = 0.01`` and ``lambda_J = 0.01 (q - 1)(L - 1)``; skmrf minimises the mean
``-(1/M_eff) sum_n w_n PLL_n + alpha/2 ||theta||^2``, so the same problem has
``alpha_J = 2 lambda_J / M_eff`` and ``alpha_h = 2 lambda_h / M_eff``: skmrf PL is fitted with
``alpha={1: alpha_h, 2: alpha_J}``, ``ridge="tables"`` (the ridge on every entry of the full
q-state tables, as plmc and pydca penalise them) and ``sample_weight`` = the sequence weights
(``--emulate-weights`` adds a fit on rows resampled with probabilities proportional to them).
The skmrf tools run first, then the peers.

Run:
``python benchmarks/protein_dca.py --alignment DHFR.a2m --focus DYR_ECOLI --columns 0:40 \\
--plmc /path/plmc --pydca-python /path/venv/bin/python [--threads 1] [--skip-mcmc]``,
``python benchmarks/protein_dca.py --synthetic --plmc ... --pydca-python ...``,
``python benchmarks/protein_dca.py --quick`` (the synthetic alignment, 300 x 12, 6 contacts, 3 MCMC steps; the
peers only if given).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
from _harness import header

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIN_SEP = 5  # contacts are scored at |i - j| >= 5
#: DHFR's contacts in its crystal structure (PDB 4DFR chain A, C-beta < 8 A) on DYR_ECOLI's focus columns.
DHFR_CONTACTS = os.path.join(HERE, "data", "dhfr_4dfr_contacts.txt")
Q = 21


# -- workers: each tool in its own process --------------------------------------------------------


def _worker_pydca(a):
    """Runs under pydca's interpreter: no skmrf import."""
    from pydca.plmdca import plmdca

    L = int(a.n_columns)
    inst = plmdca.PlmDCA(
        a.fasta,
        "protein",
        seqid=a.identity,
        lambda_h=a.lambda_h,
        lambda_J=a.lambda_J,
        max_iterations=a.max_iter,
        num_threads=a.threads,
    )
    S = np.zeros((L, L))
    for (i, j), s in inst.compute_sorted_FN_APC():
        S[i, j] = S[j, i] = s
    np.save(a.out, S)


def _fit_pl(X, w, alpha, a, emulate):
    from skmrf import PseudoLikelihoodEstimator

    # plmc's and pydca's objective: per-order ridge on every entry of the full q-state tables
    # (fields lambda_h, couplings lambda_J), weighted rows; alpha = 2 lambda / M_eff on skmrf's mean.
    est = PseudoLikelihoodEstimator(
        graph="complete",
        n_states=Q,
        alpha={1: 2 * a.lambda_h / w.sum(), 2: alpha},
        ridge="tables",
        max_iter=a.max_iter,
        tol=1e-6,
        n_jobs=a.threads,
    )
    info = {}
    if emulate:
        rng = np.random.default_rng(0)
        rows = rng.choice(len(X), size=len(X), p=w / w.sum())
        est.fit(X[rows])
        info["weights"] = "emulated (rows resampled with p proportional to w)"
        return est, info
    est.fit(X, sample_weight=w)
    info["weights"] = "sample_weight"
    info["alpha_h"] = est.alpha_[1]
    return est, info


def _fit_mcmc(X, w, alpha, a):
    from skmrf import AdaptiveSchedule, MCMCMaxLikelihood

    alpha = alpha if a.mcmc_alpha is None else a.mcmc_alpha
    schedule = AdaptiveSchedule(n_iter=a.mcmc_iter)
    est = MCMCMaxLikelihood(
        graph="complete", n_states=Q, alpha=alpha, schedule=schedule, random_state=0, n_jobs=a.threads
    )
    est.fit(X, sample_weight=w)
    return est, {"weights": "sample_weight", "mcmc_alpha": alpha, "n_iter": est.n_iter_}


def _moments(X, w):
    """Weighted one-site frequencies ``(L, q)`` and connected correlations ``(L, L, q, q)``."""
    n, L = X.shape
    O = np.zeros((n, L * Q))
    O[np.arange(n)[:, None], np.arange(L) * Q + X] = 1.0
    w = w / w.sum()
    f1 = w @ O
    C = (O * w[:, None]).T @ O - np.outer(f1, f1)
    return f1.reshape(L, Q), C.reshape(L, Q, L, Q).transpose(0, 2, 1, 3)


def moment_match(model, X, w, n_samples, n_sweeps):
    """Pearson r of the model's connected correlations (pairs i < j) and one-site frequencies with the data's."""
    f1d, Cd = _moments(X, w)
    S = model.sample(n_samples, random_state=1, method="gibbs", n_sweeps=n_sweeps)
    f1m, Cm = _moments(S, np.ones(len(S)))
    iu = np.triu_indices(X.shape[1], 1)
    r2 = np.corrcoef(Cd[iu].ravel(), Cm[iu].ravel())[0, 1]
    r1 = np.corrcoef(f1d.ravel(), f1m.ravel())[0, 1]
    return float(r2), float(r1)


def _worker_skmrf(a):
    from skmrf.protein import coupling_scores, read_alignment, sequence_weights

    X = read_alignment(a.fasta, format="fasta").X
    t0 = time.process_time()
    w = sequence_weights(X, a.identity)
    info = {"weights_cpu_s": time.process_time() - t0, "m_eff": float(w.sum())}
    alpha = 2 * a.lambda_J / w.sum()
    info["alpha"] = alpha
    try:
        if a.worker == "skmrf-mcmc":
            est, more = _fit_mcmc(X, w, alpha, a)
        else:
            est, more = _fit_pl(X, w, alpha, a, a.worker == "skmrf-pl-emulated")
    except (ValueError, MemoryError) as exc:  # check_fit_memory refuses fits larger than the machine
        info["refused"] = str(exc)[:300]
        with open(a.out + ".json", "w") as fh:
            json.dump(info, fh)
        return
    info.update(more)
    info["n_iter"] = int(est.n_iter_)
    np.save(a.out, coupling_scores(est).matrix)
    np.save(a.out.replace(".npy", "_nogap.npy"), coupling_scores(est, exclude_state=0).matrix)
    if a.moments:
        info["C_pearson"], info["f1_pearson"] = moment_match(est.model_, X, w, a.moment_samples, a.moment_sweeps)
    with open(a.out + ".json", "w") as fh:
        json.dump(info, fh)


def _worker_memory(a):
    """A complete-graph q = 21 PL fit of ``--memory-probe L,N,ITERS`` on uniform random sequences,
    stopped after ITERS iterations (peak memory does not grow with iterations once L-BFGS holds its
    pairs, which it does after 2-5; the products' temporaries are bounded per row chunk)."""
    import warnings

    from skmrf import PseudoLikelihoodEstimator

    L, n, iters = (int(v) for v in a.memory_probe.split(","))
    X = np.random.default_rng(0).integers(0, Q, size=(n, L), dtype=np.int8)
    alpha = {1: 2 * a.lambda_h / n, 2: 2 * a.lambda_J_per_Lq * (Q - 1) * (L - 1) / n}
    est = PseudoLikelihoodEstimator(
        graph="complete", n_states=Q, alpha=alpha, ridge="tables", max_iter=iters, tol=1e-6, score_method="pseudo"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # not converged, by design
        est.fit(X)
    print(f"n_params={est.model_.n_params} n_iter={est.n_iter_}")


def memory_probe(a):
    """Peak memory of :func:`_worker_memory` in its own process."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    load = os.getloadavg()
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "memory", "--memory-probe", a.memory_probe]
    log, cpu, wall, mem, rc = timed(cmd, env)
    L, n, iters = a.memory_probe.split(",")
    text = (
        f"# python benchmarks/protein_dca.py --memory-probe {a.memory_probe}: skmrf PL, complete graph, q = {Q}, "
        f"L = {L}, {n} uniform random sequences, ridge='tables', tol=1e-6, max_iter={iters} (stopped early on "
        f"purpose: memory only)\n# {log.strip().splitlines()[0] if rc == 0 else 'FAILED ' + log[-300:]}\n"
        f"# peak {mem:.0f} MiB, CPU {cpu:.1f} s, wall {wall:.1f} s; load average {load[0]:.2f}/{load[1]:.2f}/"
        f"{load[2]:.2f} at start, {os.getloadavg()[0]:.2f} at end"
    )
    print(text)
    if a.out:
        with open(a.out, "a") as fh:
            fh.write(text + "\n\n")


# -- the driver ----------------------------------------------------------------------------------


def timed(cmd, env=None):
    """Run ``cmd`` under /usr/bin/time -v: (stdout+stderr text, cpu s, wall s, peak MiB, return code)."""
    full = ["/usr/bin/time", "-v", *cmd]
    r = subprocess.run(full, capture_output=True, text=True, env=env)
    err = r.stderr

    def field(name):
        m = re.search(re.escape(name) + r": (.*)", err)
        return m.group(1).strip() if m else "nan"

    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    parts = [float(p) for p in wall.split(":")] if wall != "nan" else [np.nan]
    wall_s = sum(p * 60**k for k, p in enumerate(reversed(parts)))
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    mem = float(field("Maximum resident set size (kbytes)")) / 1024
    return r.stdout + err, cpu, wall_s, mem, r.returncode


def prepare(a, workdir):
    """The cleaned alignment (and the true contacts with --synthetic), written once for every tool."""
    from skmrf.protein import make_synthetic_alignment, read_alignment, write_fasta

    contacts = None
    if a.synthetic:
        X, contacts, _ = make_synthetic_alignment(
            a.n_sequences,
            a.n_columns_synthetic,
            n_contacts=a.n_contacts,
            coupling_scale=a.coupling_scale,
            min_separation=MIN_SEP,
            random_state=a.seed,
        )
        source = (
            f"synthetic Potts model: {a.n_sequences} x {a.n_columns_synthetic}, {a.n_contacts} contacts at |i - j| >= "
            f"{MIN_SEP} plus the backbone, coupling scale {a.coupling_scale}, seed {a.seed}"
        )
    else:
        X, names, _ = read_alignment(a.alignment, nonstandard="drop")
        source = f"{a.alignment}: {len(X)} sequences without non-standard letters, {X.shape[1]} columns"
        if a.focus:
            k = [n for n, nm in enumerate(names) if nm.startswith(a.focus)][0]
            X = X[:, X[k] != 0]
            source += f", {X.shape[1]} focus columns ({a.focus})"
        lo, hi = (int(v) for v in a.columns.split(":")) if a.columns else (0, X.shape[1])
        if a.columns:
            X = X[:, lo:hi]
            source += f", columns {lo}:{hi}"
        if a.focus and a.focus.startswith("DYR_ECOLI"):  # the structure's contacts on these columns
            pairs = np.loadtxt(DHFR_CONTACTS, dtype=np.int64)
            contacts = pairs[(pairs[:, 0] >= lo) & (pairs[:, 1] < hi)] - lo
            source += ", contacts of PDB 4DFR chain A (C-beta < 8 A)"
    keep = np.sort(np.unique(X, axis=0, return_index=True)[1])
    X = X[keep]
    source += f"; {len(X)} distinct sequences"
    fasta = os.path.join(workdir, "aln.fasta")
    write_fasta(fasta, X)
    return X, contacts, fasta, source


def top_pairs(S, k):
    L = len(S)
    i, j = np.triu_indices(L, MIN_SEP)
    order = np.lexsort((j, i, -S[i, j]))[:k]
    return set(zip(i[order].tolist(), j[order].tolist()))


def spearman(A, B):
    from scipy.stats import spearmanr

    i, j = np.triu_indices(len(A), 1)
    return float(spearmanr(A[i, j], B[i, j]).statistic)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--alignment", help="FASTA / A2M / A3M file (plmc's example/protein/DHFR.a2m)")
    p.add_argument("--focus", help="keep the columns where this sequence (name prefix) is not a gap")
    p.add_argument("--columns", help="a window of columns A:B (after --focus)")
    p.add_argument("--synthetic", action="store_true", help="a Potts model with known contacts instead")
    p.add_argument("--n-sequences", type=int, default=2000)
    p.add_argument("--n-columns-synthetic", type=int, default=40)
    p.add_argument("--n-contacts", type=int, default=40)
    p.add_argument("--coupling-scale", type=float, default=0.6, help="of the synthetic model (smaller is harder)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plmc", help="plmc binary (built from its repository with make)")
    p.add_argument("--pydca-python", help="interpreter of an environment where pydca is installed")
    p.add_argument("--threads", type=int, default=1, help="threads of every tool (plmc -n, pydca, n_jobs)")
    p.add_argument("--identity", type=float, default=0.8)
    p.add_argument("--lambda-h", type=float, default=0.01)
    p.add_argument("--lambda-J-per-Lq", type=float, default=0.01, help="lambda_J / ((q - 1)(L - 1))")
    p.add_argument("--max-iter", type=int, default=500)
    p.add_argument("--skip-skmrf", action="store_true")
    p.add_argument("--emulate-weights", action="store_true", help="also fit skmrf PL on rows resampled by weight")
    p.add_argument("--skip-mcmc", action="store_true")
    p.add_argument("--mcmc-iter", type=int, default=30, help="MCMC steps (AdaptiveSchedule(n_iter=...))")
    p.add_argument("--mcmc-alpha", type=float, help="MCMC ridge (default: PL's coupling ridge 2 lambda_J / M_eff)")
    p.add_argument("--moments", action="store_true", help="connected-correlation r of the skmrf models (sampling)")
    p.add_argument("--moment-samples", type=int, default=5000)
    p.add_argument("--moment-sweeps", type=int, default=200)
    p.add_argument("--out", help="also write the table to this file")
    # Internal: run one tool in this process.
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--fasta", help=argparse.SUPPRESS)
    p.add_argument("--n-columns", type=int, help=argparse.SUPPRESS)
    p.add_argument("--lambda-J", type=float, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", dest="out_worker", help=argparse.SUPPRESS)
    p.add_argument("--memory-probe", help="L,N,ITERS: peak memory of a synthetic complete-graph PL fit only")
    p.add_argument("--quick", action="store_true", help="--synthetic, 300 sequences x 12 columns, 3 MCMC steps")
    a = p.parse_args()
    if a.quick:
        a.synthetic, a.n_sequences, a.n_columns_synthetic, a.n_contacts, a.mcmc_iter = True, 300, 12, 6, 3
    if a.worker:
        a.out = a.out_worker
        {"pydca": _worker_pydca, "memory": _worker_memory}.get(a.worker, _worker_skmrf)(a)
        return
    if a.memory_probe:
        memory_probe(a)
        return
    if not a.synthetic and not a.alignment:
        p.error("give --alignment (plmc's example/protein/DHFR.a2m) or --synthetic")

    load_start = os.getloadavg()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    workdir = tempfile.mkdtemp(prefix="protein_dca_")
    X, contacts, fasta, source = prepare(a, workdir)
    n, L = X.shape
    lambda_J = a.lambda_J_per_Lq * (Q - 1) * (L - 1)
    from skmrf.protein import read_plmc_couplings, sequence_weights

    w = sequence_weights(X, a.identity)
    # pydca's rule: neighbours at a strictly larger identity fraction, id / L > identity.
    w_strict = sequence_weights(X, (np.floor(a.identity * L) + 1) / L)
    lines = [
        header("protein_dca.py: direct coupling analysis, skmrf against plmc and pydca", a.threads),
        f"# {source}",
        f"# q = {Q}, identity {a.identity} (plmc theta {1 - a.identity:.2f}), M_eff = {w.sum():.1f}, "
        f"lambda_h = {a.lambda_h}, lambda_J = {lambda_J:.4g} = {a.lambda_J_per_Lq} (q-1)(L-1); skmrf alpha = "
        f"2 lambda_J / M_eff = {2 * lambda_J / w.sum():.4g}; {a.threads} thread(s) per tool; max_iter {a.max_iter}",
        f"# M_eff with pydca's strict rule (id / L > {a.identity}): {w_strict.sum():.1f}; weights differ for "
        f"{np.sum(w != w_strict)} of {n} sequences",
        f"# load average at start {load_start[0]:.2f}/{load_start[1]:.2f}/{load_start[2]:.2f}",
    ]
    common = ["--fasta", fasta, "--n-columns", str(L), "--identity", str(a.identity), "--lambda-h", str(a.lambda_h)]
    common += ["--lambda-J", str(lambda_J), "--max-iter", str(a.max_iter), "--threads", str(a.threads)]
    runs = {}  # name -> (scores matrix or None, cpu, wall, MiB, info)

    workers = [] if a.skip_skmrf else ["skmrf-pl"] + (["skmrf-pl-emulated"] if a.emulate_weights else [])
    if not a.skip_skmrf and not a.skip_mcmc:
        workers.append("skmrf-mcmc")
    for name in workers:
        out = os.path.join(workdir, name + ".npy")
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, "--worker-out", out, *common]
        cmd += ["--mcmc-iter", str(a.mcmc_iter), "--moment-samples", str(a.moment_samples)]
        cmd += ["--mcmc-alpha", str(a.mcmc_alpha)] if a.mcmc_alpha is not None else []
        cmd += ["--moment-sweeps", str(a.moment_sweeps)] + (["--moments"] if a.moments else [])
        log, cpu, wall, mem, rc = timed(cmd, env)
        info = json.load(open(out + ".json")) if os.path.exists(out + ".json") else {"rc": rc}
        if rc != 0:
            print(log[-3000:], file=sys.stderr)
        label = {"skmrf-pl": "skmrf PL", "skmrf-pl-emulated": "skmrf PL, weights emulated"}.get(name, "skmrf MCMC ML")
        if os.path.exists(out):
            runs[label] = (np.load(out), cpu, wall, mem, info)
            runs[label + " [gap out]"] = (np.load(out.replace(".npy", "_nogap.npy")), cpu, wall, mem, info)
        else:
            runs[label] = (None, cpu, wall, mem, info)

    if a.plmc:
        out = os.path.join(workdir, "plmc.txt")
        wfile = os.path.join(workdir, "plmc_weights.txt")
        cmd = [a.plmc, "-c", out, "--save-weights", wfile, "-le", str(lambda_J), "-lh", str(a.lambda_h)]
        cmd += ["-t", f"{1 - a.identity:.12g}", "-m", str(a.max_iter), "-n", str(a.threads), fasta]
        log, cpu, wall, mem, rc = timed(cmd, env)
        info = {"rc": rc}
        if rc == 0:
            pw = np.loadtxt(wfile)
            info["weights_max_abs_diff"] = float(np.max(np.abs(pw - w)))
            info["log_tail"] = log.strip().splitlines()[-1][:100] if log.strip() else ""
            runs["plmc"] = (read_plmc_couplings(out).matrix, cpu, wall, mem, info)
        else:
            print(log[-2000:], file=sys.stderr)
    if a.pydca_python:
        out = os.path.join(workdir, "pydca.npy")
        cmd = [a.pydca_python, os.path.abspath(__file__), "--worker", "pydca", "--worker-out", out, *common]
        log, cpu, wall, mem, rc = timed(cmd, env)
        info = {"rc": rc}
        if rc == 0:
            runs["pydca plmDCA"] = (np.load(out), cpu, wall, mem, info)
        else:
            print(log[-2000:], file=sys.stderr)
    peers = [k for k in ("plmc", "pydca plmDCA") if k in runs]
    true = None
    if contacts is not None:
        true = {(int(i), int(j)) for i, j in contacts if j - i >= MIN_SEP}
    k5, k2 = max(1, L // 5), max(1, L // 2)
    head = f"{'tool':34s} {'CPU s':>8s} {'wall s':>8s} {'peak MiB':>9s}"
    for peer in peers:
        short = peer.split()[0][:5]
        head += f" {'rho ' + short:>11s} {'L/5 ' + short:>10s} {'L/2 ' + short:>10s}"
    ks = ([len(true)] if a.synthetic else [k5, k2, L]) if true else []
    for k in ks:
        head += f" {'prec top-' + str(k):>12s}"
    head += "  notes"
    lines.append(head)
    base_cpu = runs[peers[0]][1] if peers else np.nan
    for name, (S, cpu, wall, mem, info) in runs.items():
        row = f"{name:34s} {cpu:8.1f} {wall:8.1f} {mem:9.0f}"
        for peer in peers:
            P = runs[peer][0]
            if S is None:
                row += f" {'-':>11s} {'-':>10s} {'-':>10s}"
                continue
            row += f" {spearman(S, P):11.3f}"
            row += f" {len(top_pairs(S, k5) & top_pairs(P, k5)) / k5:10.2f}"
            row += f" {len(top_pairs(S, k2) & top_pairs(P, k2)) / k2:10.2f}"
        for k in ks:
            row += f" {len(top_pairs(S, k) & true) / k:12.2f}" if S is not None else f" {'-':>12s}"
        if name.endswith("[gap out]"):
            lines.append(row + "  the same fit")
            continue
        notes = [f"CPU {cpu / base_cpu:.2f}x {peers[0]}" if peers and name != peers[0] else ""]
        for key in (
            "weights",
            "alpha",
            "alpha_h",
            "n_iter",
            "m_eff",
            "weights_max_abs_diff",
            "C_pearson",
            "f1_pearson",
        ):
            if key in info:
                v = info[key]
                notes.append(f"{key}={v:.4g}" if isinstance(v, float) else f"{key}={v}")
        if "refused" in info:
            notes.append("REFUSED: " + info["refused"][:160])
        row += "  " + "; ".join(x for x in notes if x)
        lines.append(row)
    load_end = os.getloadavg()
    lines.append(
        f"# rho: Spearman correlation of the APC scores of all pairs i < j; L/5, L/2: overlap of the top-L/5 "
        f"({k5}) and top-L/2 ({k2}) pairs at |i - j| >= {MIN_SEP}"
        + (f"; prec top-k: fraction of the top-k pairs that are contacts ({len(true)} in all)" if true else "")
    )
    lines.append(
        "# skmrf scores: zero-sum gauge, APC, every state in the norm (plmc's convention); '[gap out]': "
        "the gap row and column left out after the gauge (plmDCA's). pydca leaves the gap out and re-centres."
    )
    lines.append(f"# load average at end {load_end[0]:.2f}/{load_end[1]:.2f}/{load_end[2]:.2f}")
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "a") as fh:
            fh.write(text + "\n\n")


if __name__ == "__main__":
    main()
