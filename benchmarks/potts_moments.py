"""How well MCMC maximum likelihood reproduces an alignment's statistics (#26 item 5).

adabmDCA's criterion for a generative Potts model: the Pearson correlation of the model's and the
data's weighted two-site connected correlations ``C_ij(a, b) = f_ij(a, b) - f_i(a) f_j(b)``
(pairs i < j) at least 0.95, and of the one-site frequencies at least 0.99.

Fits ``MCMCMaxLikelihood`` (complete graph, q = 21, plmc's sequence weights at identity 0.8) on
the first L focus columns of plmc's DHFR example alignment (``example/protein/DHFR.a2m`` in
https://github.com/debbiemarkslab/plmc; give its path, nothing is downloaded), then draws 20,000
Gibbs samples (500 sweeps) from the fitted model. ``half r`` is the Pearson r between the
correlations of two halves of those samples: the ceiling the sampling noise leaves.

Usage: ``python benchmarks/potts_moments.py DHFR.a2m N_ITER L [ALPHA]``
(the run quoted in the closing note of stop 32: ``3000 30 1e-4``; CPU seconds and peak memory
are printed; the machine was shared).
"""

import os
import resource
import sys
import time

import numpy as np

from skmrf import AdaptiveSchedule, MCMCMaxLikelihood
from skmrf.protein import read_alignment, sequence_weights

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from protein_dca import Q  # noqa: E402
from protein_dca import _moments as moments  # noqa: E402


def main(path, n_iter, L, alpha=None):
    X, names, _ = read_alignment(path, nonstandard="drop")
    focus = [k for k, name in enumerate(names) if name.startswith("DYR_ECOLI")][0]
    X = X[:, X[focus] != 0][:, :L]
    X = X[np.sort(np.unique(X, axis=0, return_index=True)[1])]
    w = sequence_weights(X, 0.8)
    m_eff = w.sum()
    alpha = 2 * 0.01 * (Q - 1) * (L - 1) / m_eff if alpha is None else alpha  # plmc's lambda_J by default
    print(f"{X.shape[0]} distinct sequences x {L} columns, M_eff {m_eff:.1f}, alpha {alpha:g}, n_iter {n_iter}")
    start = time.process_time()
    est = MCMCMaxLikelihood(
        "complete", n_states=Q, alpha=alpha, schedule=AdaptiveSchedule(n_iter=n_iter), random_state=0
    ).fit(X, sample_weight=w)
    fit_cpu = time.process_time() - start
    f1d, Cd = moments(X, w)
    S = est.model_.sample(20000, random_state=1, method="gibbs", n_sweeps=500)
    f1m, Cm = moments(S, np.ones(len(S)))
    _, Ca = moments(S[::2], np.ones(len(S[::2])))
    _, Cb = moments(S[1::2], np.ones(len(S[1::2])))
    iu = np.triu_indices(L, 1)
    r_C = np.corrcoef(Cd[iu].ravel(), Cm[iu].ravel())[0, 1]
    r_f = np.corrcoef(f1d.ravel(), f1m.ravel())[0, 1]
    half = np.corrcoef(Ca[iu].ravel(), Cb[iu].ravel())[0, 1]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"fit CPU {fit_cpu:.1f} s, converged {est.converged_}; C r {r_C:.3f} (half r {half:.3f}), f1 r {r_f:.4f}")
    print(f"peak {peak:.0f} MiB")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else None)
