"""The fit of the MLE-induced likelihood, shared by :class:`~skmrf.MLEInducedLikelihood` and
:class:`~skmrf.MetropolisHastingsMRF`: the parameters' edges, the agreement counts (Eq. 6), the
MLE (exact or LAP kernel, or a given estimator's model) and the checks that it exists (Eq. 5).
"""

from __future__ import annotations

from typing import NamedTuple

import networkx as nx
import numpy as np
from scipy.special import expit, logit
from sklearn.frozen import FrozenEstimator

from .._kernels.mle_induced import MLEInducedModel, agreement_mle, agreement_statistics, symmetrised
from .._solvers import THETA_BOUND
from .._utils._warnings import warn
from .._utils.validation import column_names
from ..exceptions import NoFiniteEstimateWarning
from ..graphs import MRFGraph
from ..model._agreement import agreement_matrix
from ._base import BaseDiscreteMRF

__all__ = ["MLEInducedFit", "fit_mle_induced", "parameter_edges"]

#: Largest gap between a fitted model's unary parameters and those its couplings imply before
#: ``fit`` warns that the model has node potentials.
UNARY_ATOL = 1e-6
#: ``fit`` warns that the MLE does not exist when an estimate's odds ``theta / (1 - theta)`` exceed
#: ``BOUNDARY_ODDS * (n + 1)`` (or are below the inverse): more extreme, by this factor, than any
#: agreement rate of ``n`` rows. Where the data lie on a face of the model's marginal polytope the
#: likelihood grows towards the boundary and the solver stops wherever its gradient is small:
#: there the odds come out far beyond this (1e5 * n and more); a finite MLE does not.
BOUNDARY_ODDS = 100.0
#: ... or when a coupling ``J = 2 logit(theta)`` is within this of the solvers' box ``|J| <= THETA_BOUND``,
#: where a divergent parameter stops (for ``n`` so large that the odds above are out of reach).
BOX_MARGIN = 2.0
#: Variables up to which the warning names an unobserved agreement pattern (by enumeration).
PATTERN_MAX_VARIABLES = 16


def parameter_edges(graph, resolved, owner="The estimator"):
    """The edges of the agreement parameters, in order, as column pairs.

    An edge list keeps the order (and orientation) given, a networkx graph the order of
    ``G.edges``; other forms (shorthands, adjacency matrices, ``MRFGraph``) the sorted edges of
    ``resolved``.

    Parameters
    ----------
    graph : the ``graph`` parameter as given
    resolved : MRFGraph
        ``graph`` resolved against the data.
    owner : str
        Named in the error messages.

    Returns
    -------
    ndarray of int of shape (p, 2)

    Raises
    ------
    ValueError
        If an edge repeats, or there is none.
    """
    if isinstance(graph, (str, MRFGraph)) or not isinstance(graph, (nx.Graph, list, tuple)):
        edges = resolved.edges
    else:
        pairs = graph.edges if isinstance(graph, nx.Graph) else [e for e in graph if np.ndim(e) and len(e) == 2]
        labels = resolved.names
        column = (lambda v: int(v)) if labels is None else {v: i for i, v in enumerate(labels)}.__getitem__
        edges, seen = [], {}
        for u, v in pairs:
            e = (column(u), column(v))
            key = (min(e), max(e))
            if key in seen:
                raise ValueError(f"Edge {(u, v)!r} repeats edge {seen[key]!r}; give each edge once.")
            seen[key] = (u, v)
            edges.append(e)
    if not edges:
        raise ValueError(
            f"The graph has no edges, so the agreement model has no parameters; {owner} needs at least one edge."
        )
    return np.array(edges, dtype=np.intp).reshape(-1, 2)


# -- the fit, shared with MetropolisHastingsMRF ------------------------------------------------


class MLEInducedFit(NamedTuple):
    """What :func:`fit_mle_induced` found: the statistics, the MLE and the likelihood's kernel."""

    n_samples: float
    n_agree: np.ndarray
    lambda_hat: np.ndarray
    mle: object
    mle_source: str
    theta_hat: np.ndarray
    likelihood: MLEInducedModel


def fit_mle_induced(owner, rows, edges, graph, mle, copula, rho):
    """Count agreements (Eq. 6), fit the MLE and build the likelihood (Eqs. 3, 5, 7-9).

    ``owner`` is the estimator whose ``fit`` this is (named in messages; its column names and
    ``n_features_in_`` are read); ``rows`` are validated binary :class:`~skmrf._data.Rows`,
    ``edges`` the parameters' edges and ``graph`` the resolved graph. Refuses a copula ``rho``
    outside its range and an edge whose ends always (or never) agree; warns when the MLE does
    not exist or a fitted ``mle`` has node potentials.

    The rows are read only through sums over them (the agreement counts, the MLE kernel's
    statistics of the flip-symmetrised rows), by row chunks for a memmap or a dask array.
    """
    name = type(owner).__name__
    _check_copula(copula, rho, len(edges))
    n, n_agree = agreement_statistics(rows, edges)
    lambda_hat = n_agree / n
    _check_interior(n_agree, n, lambda_hat, edges, graph)
    model, source = _mle_model(owner, mle, rows, graph, edges)
    theta_hat = _agreement_theta(model, source, edges)
    _warn_if_on_boundary(name, rows, edges, theta_hat, lambda_hat, n, graph)
    likelihood = MLEInducedModel(n_agree, n, theta_hat, copula, rho)
    return MLEInducedFit(n, n_agree, lambda_hat, model, source, theta_hat, likelihood)


def _check_copula(copula, rho_given, p):
    rho = float(rho_given)
    if copula == "independent":
        if rho != 0.0:
            raise ValueError(
                f"rho={rho_given!r} is the correlation of the Gaussian copula; it needs "
                "copula='gaussian' (the independent copula has rho=0)."
            )
        return
    low = -1.0 / (p - 1) if p > 1 else -np.inf
    if not low < rho < 1.0:
        raise ValueError(
            f"rho={rho_given!r} is outside (-1/(p-1), 1) = ({low:.6g}, 1) for p={p} edges: the "
            "exchangeable correlation matrix R (1 on the diagonal, rho off it) is positive "
            "definite only there."
        )


def without_degenerate_edges(owner, rows, graph, edges):
    """``(graph, edges)`` without the edges whose ends agree or disagree in every row, with a
    warning naming them (``degenerate_edges="drop"``); unchanged otherwise."""
    if owner.degenerate_edges != "drop":
        return graph, edges
    n, n_agree = agreement_statistics(rows, edges)
    bad = (n_agree == 0) | (n_agree == n)
    if not bad.any():
        return graph, edges
    named = [_edge_name(graph, e) for e in edges[bad]]
    if bad.all():
        raise ValueError(
            f"{type(owner).__name__}: the ends of every one of the {len(edges)} edges agree (or disagree) in all "
            f"{n:g} rows ({', '.join(named[:10])}{', ...' if len(named) > 10 else ''}), so degenerate_edges='drop' "
            "leaves no edge to fit. The data hold no evidence on the couplings: add rows that vary."
        )
    warn(
        f"{type(owner).__name__} left out {int(bad.sum())} of {len(edges)} edges whose ends agree (or "
        f"disagree) in every one of the {n:g} rows (degenerate_edges='drop'): {', '.join(named[:10])}"
        f"{', ...' if len(named) > 10 else ''}. graph_ and edges_ hold the rest.",
        UserWarning,
    )
    gone = {tuple(sorted(int(v) for v in e)) for e in edges[bad]}
    factors = tuple(f for f in graph.factors if f not in gone)
    return MRFGraph(graph.n_variables, factors, graph.names), edges[~bad]


def _check_interior(n_agree, n, lambda_hat, edges, graph):
    bad = np.flatnonzero((n_agree == 0) | (n_agree == n))
    if bad.size:
        j = int(bad[0])
        edge = _edge_name(graph, edges[j])
        always = "agree" if n_agree[j] else "disagree"
        raise ValueError(
            f"The ends of edge {edge} {always} in all {n:g} rows, so "
            f"lambda_hat = {lambda_hat[j]:g}: the agreement-model MLE is on the boundary "
            "(theta = 0 or 1) and Eq. 5 is undefined. Set degenerate_edges='drop' to leave such edges out, "
            "remove the edge (skmrf.graphs.subgraph), or add data."
        )


def _agreement_theta(model, source, edges):
    """``theta_hat`` read from the MLE's couplings (warning when a fitted ``mle`` has node potentials)."""
    eta = np.array([model.potential((int(u), int(v))).item() for u, v in edges]) / 2.0
    if source == "fitted":
        gap = float(np.max(np.abs(model.theta - agreement_matrix(model, edges) @ eta)))
        if gap > UNARY_ATOL:
            warn(
                f"The fitted mle's model has node potentials, which the agreement model lacks: its "
                f"unary parameters differ from those its couplings imply by up to {gap:.3g} (more "
                f"than {UNARY_ATOL:g}). Only its couplings are used (theta_j = expit(J_j / 2)). An "
                "unfitted estimator would be fitted exactly, on the flip-symmetrised data [X; 1 - X].",
                UserWarning,
            )
    theta = expit(eta)
    bad = np.flatnonzero((theta <= 0) | (theta >= 1))
    if bad.size:
        u, v = (int(x) for x in edges[bad[0]])
        raise ValueError(
            f"The MLE of edge ({u}, {v}) is theta = {theta[bad[0]]!r} (coupling {2 * eta[bad[0]]:.6g}), "
            "on the boundary in double precision; Eq. 5 is undefined."
        )
    return theta


def _edge_name(graph, edge):
    """An edge as the user named its variables: ``('p0', 'p8')``, or ``(0, 8)`` without names."""
    names = graph.clique_names(tuple(int(x) for x in edge))
    return f"({', '.join(str(v) if isinstance(v, (int, np.integer)) else repr(v) for v in names)})"


def _warn_if_on_boundary(name, rows, edges, theta_hat, lambda_hat, n, graph):
    """Warn (naming the edge and an unobserved agreement pattern) when the MLE does not exist."""
    eta = logit(theta_hat)
    limit = min(np.log(BOUNDARY_ODDS * (n + 1)), (THETA_BOUND - BOX_MARGIN) / 2)
    far = np.flatnonzero(np.abs(eta) > limit)
    if not far.size:
        return
    j = int(far[np.argmax(np.abs(eta[far]))])
    pattern = _unobserved_pattern(rows, edges, theta_hat, graph)
    seen = f" The data never show {pattern}, which the model allows." if pattern else ""
    warn(
        f"The agreement-model MLE does not exist: the MLE of edge {_edge_name(graph, edges[j])} came out as "
        f"theta_hat = "
        f"{theta_hat[j]:.7g} though its ends agree in {lambda_hat[j]:.3g} of the rows ({far.size} of "
        f"{len(eta)} edges with odds beyond {np.exp(limit):.3g}, more extreme than any agreement rate of "
        f"{n:g} rows or at the solver's box): the likelihood keeps "
        f"growing towards theta = {int(eta[j] > 0)}, and theta_hat_ is where the solver stopped.{seen} The "
        "MLE-induced likelihood is centred on it. Pass an mle with a ridge (e.g. "
        "mle=ExactMaxLikelihood(alpha=0.01)) for a finite estimate, or add data.",
        NoFiniteEstimateWarning,
    )


def _unobserved_pattern(rows, E, theta_hat, graph):
    """The agreement pattern the fitted MLE makes least likely among those no row shows, as text.

    By enumeration of the ``2 ** (d - 1)`` states up to a flip; None beyond
    ``PATTERN_MAX_VARIABLES`` variables or if every possible pattern is observed. A memmap or a
    dask array is read as its distinct rows (at most ``2 ** d``), by row chunks.
    """
    d = rows.n_columns
    if d > PATTERN_MAX_VARIABLES:
        return None
    X = rows.distinct()[0] if rows.chunked else rows.X
    states = (np.arange(2 ** (d - 1))[:, None] >> np.arange(d)[None, :]) & 1
    possible = np.unique(states[:, E[:, 0]] == states[:, E[:, 1]], axis=0)
    observed = {row.tobytes() for row in (X[:, E[:, 0]] == X[:, E[:, 1]])}
    unseen = possible[[row.tobytes() not in observed for row in possible]]
    if not len(unseen):
        return None
    log_p = unseen @ np.log(theta_hat) + ~unseen @ np.log1p(-theta_hat)
    t = unseen[int(np.argmin(log_p))]
    name = [_edge_name(graph, e) for e in E]
    agree = ", ".join(n for n, x in zip(name, t) if x)
    disagree = ", ".join(n for n, x in zip(name, t) if not x)
    parts = ([f"the ends of edges {agree} agree"] if agree else []) + (
        [f"the ends of edges {disagree} disagree"] if disagree else []
    )
    return "a row in which " + " and ".join(parts)


def _mle_model(owner, mle, rows, graph, edges):
    """``(the MLE's DiscreteMRF, its source)`` per the ``mle`` parameter (see ``mle_source_``)."""
    if mle is not None and not isinstance(mle, (BaseDiscreteMRF, FrozenEstimator)):
        # Validated by _parameter_constraints too, but a caller's fit may skip nested validation.
        raise ValueError(
            f"mle must be None, an skmrf discrete estimator (fitted or not, e.g. ExactMaxLikelihood(alpha=0.01)) "
            f"or a FrozenEstimator of a fitted one; got {mle!r}."
        )
    if mle is not None and hasattr(mle, "model_"):
        inner = mle.estimator if isinstance(mle, FrozenEstimator) else mle
        if not isinstance(inner, BaseDiscreteMRF):
            raise ValueError(f"mle must hold an skmrf discrete estimator; got {type(inner).__name__}.")
        _check_fitted_graph(owner, mle.model_, edges)
        return mle.model_, "fitted"
    if isinstance(mle, FrozenEstimator):
        raise ValueError("mle is a FrozenEstimator of an unfitted estimator; fit it first, or pass it unwrapped.")
    if mle is None:
        return agreement_mle(graph, rows)
    return mle._fit_kernel(symmetrised(rows), graph), type(mle).__name__


def _check_fitted_graph(owner, model, edges):
    if model.n_variables != owner.n_features_in_:
        raise ValueError(f"The fitted mle has {model.n_variables} variables but X has {owner.n_features_in_} columns.")
    wide = np.flatnonzero(np.asarray(model.n_states) != 2)
    if wide.size:
        j = int(wide[0])
        names = column_names(owner)
        label = f"column {j}" if names is None else f"column {j} ({names[j]!r})"
        raise ValueError(
            f"The fitted mle models {label} with {int(model.n_states[j])} states, but the agreement model "
            "(and so the MLE-induced likelihood) is binary. Fit the mle on binary data with n_states=2, or "
            "pass it unfitted."
        )
    ours = {(min(u, v), max(u, v)) for u, v in edges.tolist()}
    theirs = set(model.graph.edges)
    if ours != theirs:
        extra = sorted(theirs - ours)
        missing = sorted(ours - theirs)
        raise ValueError(
            "The fitted mle's graph differs from this estimator's: "
            + (f"edges {missing[:5]} are missing" if missing else "")
            + ("; " if missing and extra else "")
            + (f"it has extra edges {extra[:5]}" if extra else "")
            + ". Fit it on the same graph, or pass it unfitted."
        )
