"""Independent brute-force references for small models.

Written without the package's coding layer: energies come from
``DiscreteMRF.potential`` blocks looked up state by state, and the ML fit
optimises the brute-force log-likelihood directly.
"""

import itertools

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp


def states(n_states):
    return np.array(list(itertools.product(*[range(k) for k in n_states])), dtype=np.int64)


def energies(model, xs):
    out = np.zeros(len(xs))
    for c in model.cliques:
        block = model.potential(c)
        sub = xs[:, list(c)]
        nz = np.all(sub > 0, axis=1)
        out[nz] += block[tuple((sub[nz] - 1).T)]
    return out


def log_partition(model):
    return logsumexp(energies(model, states(model.n_states)))


def clique_marginals(model):
    xs = states(model.n_states)
    e = energies(model, xs)
    p = np.exp(e - logsumexp(e))
    out = {}
    for c in model.cliques:
        table = np.zeros([model.n_states[i] for i in c])
        np.add.at(table, tuple(xs[:, list(c)].T), p)
        out[c] = table
    return out


def features(model, xs):
    """0/1 feature matrix, built by setting each parameter to one in turn."""
    saved = model.theta.copy()
    cols = []
    for k in range(model.n_params):
        model.theta = np.zeros(model.n_params)
        model.theta[k] = 1.0
        cols.append(energies(model, xs))
    model.theta = saved
    return np.array(cols).T


def max_likelihood(model, X, alpha=0.0, bounds=None):
    """Brute-force ML by BFGS (L-BFGS-B with ``bounds``) with the exact enumerated gradient."""
    xs = states(model.n_states)
    F = features(model, xs)
    s = features(model, np.asarray(X)).mean(axis=0)

    def f(theta):
        e = F @ theta
        lz = logsumexp(e)
        p = np.exp(e - lz)
        return lz - theta @ s + 0.5 * alpha * theta @ theta, F.T @ p - s + alpha * theta

    if bounds is not None:
        options = {"gtol": 1e-13, "ftol": 0, "maxiter": 10000, "maxcor": 30}
        res = minimize(f, np.zeros(model.n_params), jac=True, method="L-BFGS-B", bounds=bounds, options=options)
        return res.x
    res = minimize(f, np.zeros(model.n_params), jac=True, method="BFGS", options={"gtol": 1e-11, "maxiter": 10000})
    return res.x


def incomplete_log_likelihood(model, X):
    """Per-row ``log p(observed part)`` and the gradient of their sum in theta, by enumeration.

    ``X`` holds states with ``-1`` where missing; a row is summed over its completions.
    """
    xs = states(model.n_states)
    e = energies(model, xs)
    F = features(model, xs)
    log_z = logsumexp(e)
    mu = np.exp(e - log_z) @ F
    values, grad = [], np.zeros(model.n_params)
    for row in X:
        ok = np.all((row < 0) | (xs == row), axis=1)
        lz = logsumexp(e[ok])
        values.append(lz - log_z)
        grad += np.exp(e[ok] - lz) @ F[ok] - mu
    return np.array(values), grad
