"""The agreement model of Liu and Zheng: one parameter ``theta_j`` in ``(0, 1)`` per edge.

A binary pairwise MRF with edge potentials
``theta_j ** I[x_u == x_v] * (1 - theta_j) ** I[x_u != x_v]`` and no node potentials
(MLE-induced likelihood paper, Section 2.2; its experiments use exactly this model).

With ``eta_j = logit(theta_j)`` the log-potential of edge ``j = (u, v)`` is, up to the
constant ``log(1 - theta_j)``, ``eta_j I[x_u == x_v] = eta_j (1 - x_u - x_v + 2 x_u x_v)``.
Normalised with respect to zero (the package's parametrisation) that is a pair parameter
``2 eta_j`` and a contribution ``-eta_j`` to each end's unary parameter; in Ising
coordinates ``J_j = eta_j / 2`` and no field. The map is linear in ``eta``, so a whole
batch of parameter vectors converts with one matrix product.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from ._discrete import DiscreteMRF

__all__ = ["agreement_matrix", "agreement_to_mrf", "mrf_to_agreement"]


def _edge_positions(model, edges):
    """Parameter index of each edge's pair block and of each variable's unary block."""
    layout = model.layout
    lookup = {c: k for k, c in enumerate(layout.cliques)}
    pair = []
    for u, v in edges:
        key = (min(u, v), max(u, v))
        if key not in lookup:
            raise ValueError(f"Edge {(int(u), int(v))} is not a clique of the model.")
        pair.append(layout.block_offsets[lookup[key]])
    unary = np.array([layout.block_offsets[lookup[(i,)]] for i in range(model.n_variables)])
    return np.asarray(pair, dtype=np.int64), unary


def agreement_matrix(model, edges):
    """The matrix ``A`` with ``model.theta = A @ logit(theta)`` for agreement parameters ``theta``.

    Parameters
    ----------
    model : DiscreteMRF
        A binary pairwise model whose cliques include every edge.
    edges : array-like of int, shape (p, 2)
        The edges, in the order of the agreement parameters.

    Returns
    -------
    ndarray of shape (model.n_params, p)
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if np.any(model.n_states != 2):
        raise ValueError("The agreement model is binary: every variable must have 2 states.")
    pair, unary = _edge_positions(model, edges)
    A = np.zeros((model.n_params, len(edges)))
    j = np.arange(len(edges))
    A[pair, j] = 2.0
    np.subtract.at(A, (unary[edges[:, 0]], j), 1.0)
    np.subtract.at(A, (unary[edges[:, 1]], j), 1.0)
    return A


def agreement_to_mrf(theta, graph, n_variables=None, edges=None):
    """The :class:`DiscreteMRF` of agreement parameters ``theta``.

    Parameters
    ----------
    theta : array-like of shape (p,)
        One parameter in the open interval ``(0, 1)`` per edge.
    graph : graph form accepted by :class:`DiscreteMRF`
        A pairwise graph.
    n_variables : int, optional
        Needed when ``graph`` does not fix it (a list of edges).
    edges : array-like of shape (p, 2), optional
        The edge of each parameter; ``model.graph.edges`` (sorted) by default.

    Returns
    -------
    DiscreteMRF
        Binary, normalised with respect to zero: pair parameter ``2 logit(theta_j)``,
        unary parameter ``-sum_{j at u} logit(theta_j)``.
    """
    model = DiscreteMRF(graph, 2, n_variables=n_variables)
    edges = model.graph.edges if edges is None else edges
    theta = check_agreement_parameters(theta, len(edges))
    model.theta = agreement_matrix(model, edges) @ logit(theta)
    return model


def mrf_to_agreement(model, edges=None, atol=1e-9):
    """The agreement parameters of a :class:`DiscreteMRF` that is an agreement model.

    Parameters
    ----------
    model : DiscreteMRF
        Binary and pairwise.
    edges : array-like of shape (p, 2), optional
        The edge order of the result; ``model.graph.edges`` by default.
    atol : float, default=1e-9
        Largest difference allowed between a unary parameter and the one the
        couplings imply (``-sum_{j at u} theta_uv / 2``).

    Returns
    -------
    ndarray of shape (p,)
        ``expit(theta_uv / 2)`` per edge.

    Raises
    ------
    ValueError
        If a unary parameter is not the one an agreement model has (the model has
        node potentials), naming the variable.
    """
    edges = np.asarray(model.graph.edges if edges is None else edges, dtype=np.int64).reshape(-1, 2)
    if any(len(c) > 2 for c in model.cliques):
        raise ValueError("The agreement model is pairwise; this model has cliques of more than 2 variables.")
    A = agreement_matrix(model, edges)
    pair, unary = _edge_positions(model, edges)
    eta = model.theta[pair] / 2
    gap = model.theta[unary] - (A @ eta)[unary]
    bad = np.flatnonzero(np.abs(gap) > atol)
    if bad.size:
        i = int(bad[np.argmax(np.abs(gap[bad]))])
        raise ValueError(
            f"Variable {i} has unary parameter {model.theta[unary[i]]:.6g}, but an agreement model "
            f"with these couplings has {(A @ eta)[unary[i]]:.6g} (no node potentials). "
            "Only models without node potentials have agreement parameters."
        )
    return expit(eta)


def check_agreement_parameters(theta, p, name="theta"):
    """``theta`` as a float array whose last axis has length ``p``, all in ``(0, 1)``."""
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim == 0 or theta.shape[-1] != p:
        raise ValueError(f"{name} must have {p} entries (one per edge) on its last axis; got shape {theta.shape}.")
    bad = ~((theta > 0) & (theta < 1))
    if bad.any():
        idx = tuple(int(i) for i in np.unravel_index(np.flatnonzero(bad)[0], theta.shape))
        raise ValueError(
            f"{name}{list(idx)} = {float(theta[idx])!r} is outside the open interval (0, 1) of the agreement "
            "parameters (edge potential theta if the ends agree, 1 - theta if not)."
        )
    return theta
