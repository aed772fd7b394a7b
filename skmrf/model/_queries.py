"""What a fitted :class:`~skmrf.model.DiscreteMRF` answers given evidence: conditional marginals and completions.

The computation is :class:`~skmrf.inference._queries.EvidenceQuery` (exact, per component of
each row's missing entries) and, for components too wide for a junction tree,
:func:`~skmrf.inference._conditional_gibbs.clamped_gibbs`; this module validates the evidence,
chooses, warns, and shapes the answers.
"""

from __future__ import annotations

import numpy as np

from .._utils._budgets import QUERY_MAX_BYTES, QUERY_SE_WARN
from .._utils._warnings import warn
from .._utils.validation import check_generator, check_states
from ..exceptions import ApproximateInferenceWarning
from ..inference._conditional_gibbs import clamped_gibbs, iterated_conditional_modes
from ..inference._gibbs import colour_classes
from ..inference._queries import EvidenceQuery

__all__ = ["check_evidence", "conditional_marginals", "impute"]

IMPUTE_METHODS = ("marginal", "map", "sample")


def check_evidence(model, X):
    """Evidence rows as int64 states with ``-1`` where missing (a new array; X is never modified).

    Missing entries are NaN (or None) in an array, masked entries of a ``numpy.ma.MaskedArray``,
    or missing values of a pandas DataFrame. A DataFrame's columns must be the model's variables
    in order when the model knows their names.
    """
    if isinstance(X, np.ma.MaskedArray):
        X = np.ma.filled(X.astype(np.float64), np.nan)
    names = model.graph.names
    columns = getattr(X, "columns", None)
    if columns is not None and names is not None and list(columns) != list(names):
        raise ValueError(
            f"X's columns {list(columns)[:10]} are not the model's variables {list(names)[:10]} in "
            "order; select them in that order."
        )
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != model.n_variables:
        raise ValueError(
            f"X must have shape (n_rows, {model.n_variables}), one column per variable of the model "
            f"(NaN where unobserved); got shape {X.shape}."
            + (" Pass one row as X.reshape(1, -1)." if X.ndim == 1 and X.size == model.n_variables else "")
        )
    label_names = None if names is None else [str(n) for n in names]
    return check_states(X, model.n_states, label_names, allow_nan=True)


def _gibbs_rows(model, query, n_chains, n_sweeps, rng):
    """Clamped Gibbs chains on the rows with a component too wide for a junction tree: their
    rows, marginals, standard errors and last states (or None when there are none)."""
    rows = np.flatnonzero(query.wide.any(axis=1))
    if not rows.size:
        return None
    E = np.maximum(query.E[rows], 0)  # missing entries outside the wide components: independent, any value
    colours = colour_classes(model.graph)
    mean, std, states = clamped_gibbs(model.layout, model.theta, colours, E, query.wide[rows], n_chains, n_sweeps, rng)
    return rows, mean, std, states, colours


def _announce(query, gibbs, n_chains, n_sweeps, max_bytes):
    """Name the approximation: how many entries came from Gibbs chains, and their largest error."""
    rows, _, std, _, _ = gibbs
    wide = query.wide[rows]
    worst = float(std[wide].max())
    budget = (
        f"a query's default max_bytes of {QUERY_MAX_BYTES // 2**20} MiB (give a larger max_bytes for the exact "
        "answer, at about 0.02 s per MiB and distinct component)"
        if max_bytes is None
        else f"max_bytes={max_bytes:,}"
    )
    message = (
        f"{int(wide.sum())} missing entries in {len(rows)} distinct rows lie in components of up to "
        f"{query.widest} connected missing variables whose junction tree exceeds {budget}: their "
        f"conditionals are estimated by {n_chains} clamped Gibbs chains of {n_sweeps} sweeps per row "
        f"(approximate; largest Monte-Carlo standard error {worst:.3g})."
    )
    if worst > QUERY_SE_WARN:
        message += (
            f" That is above {QUERY_SE_WARN}: raise n_sweeps or n_chains (the error falls as one over "
            "the square root of either)."
        )
    warn(message, ApproximateInferenceWarning)


def conditional_marginals(model, X, return_std=False, max_bytes=None, n_chains=20, n_sweeps=400, random_state=None):
    """See :meth:`DiscreteMRF.conditional_marginals`."""
    E = check_evidence(model, X)
    kmax = int(model.n_states.max())
    query = EvidenceQuery(model.layout, model.theta, E, QUERY_MAX_BYTES if max_bytes is None else max_bytes)
    out = query.marginals(np.zeros(query.E.shape + (kmax,)))
    std = np.zeros_like(out)
    gibbs = _gibbs_rows(model, query, n_chains, n_sweeps, check_generator(random_state))
    if gibbs is not None:
        rows, mean, err, _, _ = gibbs
        wide = query.wide[rows]
        r, v = np.nonzero(wide)
        out[rows[r], v] = mean[r, v]
        std[rows[r], v] = err[r, v]
        _announce(query, gibbs, n_chains, n_sweeps, max_bytes)
    out, std = out[query.inverse], std[query.inverse]
    return (out, std) if return_std else out


def impute(model, X, method="marginal", random_state=None, max_bytes=None, n_chains=20, n_sweeps=400):
    """See :meth:`DiscreteMRF.impute`."""
    if method not in IMPUTE_METHODS:
        raise ValueError(f"method must be one of {IMPUTE_METHODS}; got {method!r}.")
    E = check_evidence(model, X)
    rng = check_generator(random_state)
    budget = QUERY_MAX_BYTES if max_bytes is None else max_bytes
    query = EvidenceQuery(model.layout, model.theta, E, budget, distinct=method != "sample")
    out = query.E.copy()
    if method == "marginal":
        marg = query.marginals(np.zeros(out.shape + (int(model.n_states.max()),)))
        missing = out < 0
        out[missing] = marg[missing].argmax(axis=1)
    elif method == "map":
        query.most_probable(out)
    else:
        query.sample(out, rng)
    gibbs = _gibbs_rows(model, query, n_chains, n_sweeps, rng)
    if gibbs is not None:
        rows, mean, _, states, colours = gibbs
        wide = query.wide[rows]
        if method == "marginal":
            fill = mean.argmax(axis=2)
        elif method == "sample":
            fill = states[:, 0]
        else:  # the most probable of the chains' states, then a local maximum (ICM)
            energy = model.layout.energy(states.reshape(-1, states.shape[2]), model.theta).reshape(states.shape[:2])
            best = states[np.arange(len(rows)), energy.argmax(axis=1)]
            fill = iterated_conditional_modes(model.layout, model.theta, colours, best, wide)
        out[rows] = np.where(wide, fill, out[rows])
        _announce(query, gibbs, n_chains, n_sweeps, max_bytes)
        if method == "map":
            warn(
                "impute(method='map') on those rows is approximate: the most probable of the Gibbs chains' "
                "last states, raised to a local maximum by iterated conditional modes (no better completion "
                "differs from it in one entry, but one differing in several may exist).",
                ApproximateInferenceWarning,
            )
    out = out[query.inverse]
    columns = getattr(X, "columns", None)
    if columns is not None and hasattr(X, "index"):
        return type(X)(out, index=X.index, columns=columns)
    return out
