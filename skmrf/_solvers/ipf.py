"""Iterative proportional fitting on the junction tree: the extended maximum-likelihood estimate.

When an empirical clique table has an empty cell and there is no ridge, the likelihood has no
finite maximiser: its supremum is reached only in the limit where the data force some cell
probabilities to exactly zero (the extended MLE). Iterative proportional fitting (Deming and
Stephan 1940; Bishop, Fienberg and Holland 1975, Chapter 3) reaches that limit: starting from the
uniform model, each factor's log-potential table is corrected by ``log p_hat_c - log p_c`` in
turn, and an empty cell's potential becomes ``-inf`` at once. The junction tree calibrates with
``-inf`` log-potentials, so every step is exact.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ZERO_LOG_GAP", "extended_max_likelihood"]

#: In the returned finite parameters, a cell of probability zero gets a log-potential this many
#: nats below the smallest finite entry of its table (relative probability below e^-60).
ZERO_LOG_GAP = 60.0


def extended_max_likelihood(model, counts, factors, max_iter, tol, max_bytes=None):
    """Fit ``model`` to the empirical clique tables by iterative proportional fitting.

    Parameters
    ----------
    model : DiscreteMRF
        Receives the fitted parameters (finite: see :data:`ZERO_LOG_GAP`).
    counts : ndarray of shape (n_table,)
        Counts of every joint state of every clique (``model.layout.table_counts``).
    factors : sequence of int
        The cliques (indices into ``model.cliques``) whose tables are fitted: the maximal
        factors of the graph and every variable in none.
    max_iter : int
        Maximum number of sweeps over the factors.
    tol : float
        Stop when no factor's marginal differs from its empirical table by more than ``tol``.
    max_bytes : int, optional
        Memory budget of one junction-tree calibration.

    Returns
    -------
    n_sweeps : int
        Sweeps run.
    gap : float
        Largest difference between a model and an empirical factor marginal at the end.
    ll_gain : float
        Increase of the mean log-likelihood in the last sweep (an estimate of how far below
        the supremum the fit stopped when ``gap > tol``).

    Notes
    -----
    One sweep costs one calibration per run of consecutive factors held by the same
    junction-tree node (one in all for a model whose tree is a single node). On a decomposable model (a chordal graph
    whose factors are its maximal cliques) one sweep reaches the limit.
    """
    lay = model.layout
    tree = model.get_junction_tree(max_bytes)
    slices = [slice(lay.table_offsets[k], lay.table_offsets[k + 1]) for k in factors]
    emp = counts / counts[slices[0]].sum()
    with np.errstate(divide="ignore"):
        log_emp = np.log(emp)
    log_psi = np.zeros(lay.n_table)
    ll = _mean_log_likelihood(tree, lay, log_psi, emp, slices, max_bytes)
    gap, ll_gain, n_sweeps = np.inf, np.inf, 0
    runs = _runs_by_node(tree, lay, factors)
    for sweep in range(1, max_iter + 1):
        n_sweeps = sweep
        for node, members in runs:
            # One calibration per run of factors held by the same junction-tree node: updating a
            # factor c inside node N multiplies p(x_N) by exp(update(x_c)) exactly, so the node's
            # marginal, and from it the next factor's, is kept without calibrating again.
            p = tree.calibrate(log_psi, lay, max_bytes=max_bytes).node_marginals[node]
            for s, axes, shape in members:
                with np.errstate(divide="ignore", invalid="ignore"):
                    update = log_emp[s] - np.log(p.sum(axis=axes).ravel())
                update[np.isneginf(log_emp[s])] = -np.inf  # an empty cell: probability zero
                log_psi[s] += update
                p = p * np.exp(update).reshape(shape)
                p /= p.sum()
        cal = tree.calibrate(log_psi, lay, max_bytes=max_bytes)
        marg = cal.clique_marginals()
        gap = max(float(np.abs(marg[s] - emp[s]).max()) for s in slices)
        new_ll = _mean_log_likelihood(tree, lay, log_psi, emp, slices, max_bytes, cal)
        ll_gain, ll = new_ll - ll, new_ll
        if gap <= tol:
            break
    model.theta = lay.normalise(_finite(log_psi, lay, factors))
    return n_sweeps, gap, ll_gain


def _runs_by_node(tree, lay, factors):
    """``[(node, [(table slice, axes summed out, broadcast shape), ...]), ...]``: the factors in
    order, consecutive factors held by the same junction-tree node grouped in one run."""
    runs = []
    for k in factors:
        node = int(tree.assign[k])
        members = set(lay.cliques[k])
        variables = tree.nodes[node]
        axes = tuple(a for a, v in enumerate(variables) if v not in members)
        shape = tuple(int(tree.n_states[v]) if v in members else 1 for v in variables)
        entry = (slice(lay.table_offsets[k], lay.table_offsets[k + 1]), axes, shape)
        if runs and runs[-1][0] == node:
            runs[-1][1].append(entry)
        else:
            runs.append((node, [entry]))
    return runs


def _mean_log_likelihood(tree, lay, log_psi, emp, slices, max_bytes, cal=None):
    """``sum_x p_hat(x) log p(x)`` from the factor tables (empty cells contribute nothing)."""
    cal = tree.calibrate(log_psi, lay, max_bytes=max_bytes) if cal is None else cal
    energy = sum(float(np.sum(emp[s][emp[s] > 0] * log_psi[s][emp[s] > 0])) for s in slices)
    return energy - cal.log_z


def _finite(log_psi, lay, factors):
    """``log_psi`` with every ``-inf`` replaced by :data:`ZERO_LOG_GAP` nats below its table's minimum."""
    out = log_psi.copy()
    for k in factors:
        t = out[lay.table_offsets[k] : lay.table_offsets[k + 1]]
        zero = np.isneginf(t)
        if zero.any():
            t[zero] = t[~zero].min() - ZERO_LOG_GAP
    return out
