"""The constraint set of MCMC maximum likelihood, set up once for both schedules.

The set bounds the couplings: a box ``|J_ij| <= beta`` on binary ``{-1, +1}`` couplings
(``theta_ij = 4 J_ij``) and ``|theta_ij(s, t)| <= beta`` on every pair entry of a model with
more states, or the spectral set ``||R(J)||_2 <= c`` (binary). :func:`constraint_set` resolves
it and gives its projection in both coordinates: on the package's ``theta`` (the adaptive
schedule) and on the Ising couplings ``J`` (Domke's Algorithm 1).
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import numpy as np

from ..._utils._warnings import warn
from ...exceptions import MixingBoundWarning
from .fast_mixing import FastMixingSet, fast_mixing_set, project_box
from .spectral import project_spectral

__all__ = ["Constraint", "constraint_set"]


class Constraint(NamedTuple):
    """A resolved constraint set (``bound`` None: unconstrained)."""

    bound: float | None
    """``beta`` (box) or ``c`` (spectral)."""
    geometry: FastMixingSet | None
    """The set with its mixing constants (NaN outside the fast-mixing range) and its projection of ``J``."""
    fast_mixing: bool
    """Whether the set is inside the fast-mixing range, so that the mixing bound holds."""
    project_theta: object
    """Projection of a package parameter vector ``theta`` (identity when unconstrained)."""
    box: tuple | None
    """``(pair entries, bound in theta)`` of a box, for the two-metric natural step; else None."""


def _pair_entries(layout):
    """Indices of every pair entry of ``theta`` ((K_i - 1)(K_j - 1) per edge)."""
    offsets = layout.block_offsets
    parts = [np.arange(offsets[k], offsets[k + 1]) for k, c in enumerate(layout.cliques) if len(c) == 2]
    return np.concatenate(parts + [[]]).astype(np.int64)


def _pair_box(theta, max_entry, pair):
    """Clip the pair entries ``theta[pair]`` to ``[-max_entry, max_entry]``; the rest is free."""
    out = theta.copy()
    out[pair] = np.clip(theta[pair], -max_entry, max_entry)
    return out


def _pair_spectral(theta, pair, edges, n_variables, max_norm):
    """The spectral projection of binary couplings ``J = theta_ij / 4``, in ``theta``."""
    out = theta.copy()
    out[pair] = 4.0 * project_spectral(theta[pair] / 4.0, edges, n_variables, max_norm)
    return out


def constraint_set(projection, max_coupling, layout, positions, max_degree, *, binary, required, unconstrained):
    """Resolve the constraint set of a fit.

    Parameters
    ----------
    projection : {"box", "spectral"}
    max_coupling : float or None
        The set's size; None with ``unconstrained`` means no set, otherwise the default
        fast-mixing set (:func:`~.fast_mixing.fast_mixing_set`).
    layout : CliqueLayout
    positions : Positions
        The model's unary and pair positions and edges.
    max_degree : int
    binary : bool
        A binary model: a box bounds ``J`` (so ``theta_ij`` by ``4 beta``).
    required : bool
        The set must be fast-mixing (the theory schedule derives K/M/v from it): a set outside
        the range raises the ``ValueError`` naming its limit; otherwise it only warns
        (``MixingBoundWarning``) and is used as a constraint.
    unconstrained : bool
        ``max_coupling=None`` means no constraint (the adaptive schedule).

    Returns
    -------
    Constraint
    """
    n, edges = len(layout.n_states), positions.edges
    if max_coupling is None and unconstrained:
        return Constraint(None, None, False, np.asarray, None)
    try:
        geometry = fast_mixing_set(projection, max_coupling, n, edges, max_degree)
        fast = True
    except ValueError as err:
        if required:
            raise
        warn(
            f"{err} Used as given: a constraint, not a guarantee; the mixing bound does not hold "
            "(schedule_.fast_mixing is False).",
            MixingBoundWarning,
        )
        bound = float(max_coupling)
        project = (
            partial(project_box, max_coupling=bound)
            if projection == "box"
            else partial(project_spectral, edges=edges, n_variables=n, max_norm=bound)
        )
        geometry, fast = FastMixingSet(bound, math.nan, math.nan, project), False
    bound = geometry.bound
    if projection == "box":
        pair = _pair_entries(layout)
        entry = 4 * bound if binary else bound
        return Constraint(bound, geometry, fast, partial(_pair_box, max_entry=entry, pair=pair), (pair, entry))
    spectral = partial(_pair_spectral, pair=positions.edge_pos, edges=edges, n_variables=n, max_norm=bound)
    return Constraint(bound, geometry, fast, spectral, None)
