"""The centred (ANOVA) components of a model's energy, a parametrisation that no labelling favours.

``theta`` is normalised with respect to state 0: relabelling a variable's states changes it by
more than a sign. The energy ``E(x) = sum_c theta_c . phi_c(x_c)`` also decomposes, under the
uniform distribution, as ``E = const + sum_S E_S`` with ``E_S`` a function of ``x_S`` that sums
to zero over each of its variables (the functional ANOVA). Each ``E_S`` is the same function
after a permutation of any variable's states, so what is built on the components (the centred
ridge of :mod:`skmrf._penalty`, LAP's centred reads) treats every labelling alike. ``E_S``
is a sum over the cliques ``C`` containing ``S``: ``theta_C`` embedded in ``C``'s full table
(zeros where a state is 0), averaged over ``C \\ S`` and centred along each variable of ``S``.
For binary variables, ``E_i = +-(theta_i / 2 + sum_j theta_ij / 4)`` and
``E_ij = +-theta_ij / 4``.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp

__all__ = ["Components", "component_matrix", "theta_from_own_components"]


def component_matrix(shape, R, tables=False):
    """The map from a clique's block (``prod(K - 1)`` entries; with ``tables`` its full table,
    ``prod(K)``) to its component on the positions ``R`` (``prod(K_R)`` entries, C order): embed
    in the full table, average over the other positions, centre along each of ``R``."""
    if tables:
        n = int(np.prod(shape))
        T = np.eye(n).reshape(n, *shape)
    else:
        block = tuple(k - 1 for k in shape)
        n = int(np.prod(block))
        T = np.zeros((n, *shape))
        T[(np.arange(n), *(i + 1 for i in np.unravel_index(np.arange(n), block)))] = 1.0
    rest = tuple(1 + p for p in range(len(shape)) if p not in R)
    comp = T.mean(axis=rest) if rest else T
    for a in range(1, comp.ndim):
        comp = comp - comp.mean(axis=a, keepdims=True)
    return comp.reshape(n, -1).T


def _component(block, shape, R, tables=False):
    """:func:`component_matrix` applied to the rows of ``block`` (``(n, prod(K - 1))``, or with
    ``tables`` the full tables ``(n, prod(K))``), by table operations: ``O(prod(K))`` per clique
    instead of the matrix's ``O(prod(K_R) prod(K - 1))``."""
    n, m = len(block), len(shape)
    if tables:
        T = block.reshape(n, *shape)
    else:
        T = np.zeros((n, *shape))
        T[(slice(None),) + (slice(1, None),) * m] = block.reshape(n, *(k - 1 for k in shape))
    rest = tuple(1 + p for p in range(m) if p not in R)
    comp = T.mean(axis=rest) if rest else T
    for a in range(1, comp.ndim):
        comp = comp - comp.mean(axis=a, keepdims=True)
    return comp.reshape(n, -1)


def _component_adjoint(E, shape, R, tables=False):
    """The transpose of :func:`_component`: centre, spread evenly over the other positions, keep
    the block's entries."""
    n, m = len(E), len(shape)
    comp = E.reshape(n, *(shape[p] for p in R))
    for a in range(1, comp.ndim):
        comp = comp - comp.mean(axis=a, keepdims=True)
    spread = float(np.prod([shape[p] for p in range(m) if p not in R]))
    T = np.broadcast_to(comp.reshape(n, *(shape[p] if p in R else 1 for p in range(m))) / spread, (n, *shape))
    return T.reshape(n, -1) if tables else T[(slice(None),) + (slice(1, None),) * m].reshape(n, -1)


class Components:
    """The linear map from ``theta`` to the energy's components ``E_S``, vectorised by shape.

    Parameters
    ----------
    layout : CliqueLayout
    meeting : collection of int, optional
        Only the sets ``S`` that meet these variables.
    tables : bool, default=False
        The map's input is the flat full tables of the cliques (any entries, as
        :meth:`~skmrf._parametrisation.CliqueLayout.normalise` takes them), not ``theta``.

    Attributes
    ----------
    sets : dict
        ``{sub-shape: ndarray (n_sets, len(S))}``: the variable sets of each shape, whose
        components ``__call__`` returns as the rows of one array.
    parts : list of tuple
        ``(cols, sub, shape, R, rows, gather, own)`` per (clique shape, positions ``R``): the
        cliques' parameter columns ``(n, block)``, the sub-shape, the clique shape and ``R``, each
        clique's set row, the sparse sum into the sets' rows, and whether ``R`` is the whole
        clique.
    """

    def __init__(self, layout, meeting=None, tables=False):
        self.layout, self.tables = layout, tables
        keep = None if meeting is None else np.array(sorted(set(meeting)), dtype=np.int64)
        by_shape = {}
        for k, shape in enumerate(layout.table_shapes):
            if layout.block_sizes[k]:
                by_shape.setdefault(shape, []).append(k)
        found, keys = [], {}
        for shape, members in by_shape.items():
            members = np.array(members, dtype=np.int64)
            var = np.array([layout.cliques[k] for k in members], dtype=np.int64).reshape(len(members), len(shape))
            for r in range(1, len(shape) + 1):
                for R in itertools.combinations(range(len(shape)), r):
                    S = var[:, list(R)]
                    mask = np.ones(len(members), dtype=bool) if keep is None else np.isin(S, keep).any(axis=1)
                    if mask.any():
                        found.append((members[mask], shape, R))
                        keys.setdefault(tuple(shape[p] for p in R), []).append(S[mask])
        self.sets, set_rows = {}, {}
        for sub, lists in keys.items():
            self.sets[sub], inverse = np.unique(np.concatenate(lists), axis=0, return_inverse=True)
            set_rows[sub] = np.split(inverse.ravel(), np.cumsum([len(s) for s in lists])[:-1])
        self.parts = []
        for members, shape, R in found:
            sub = tuple(shape[p] for p in R)
            rows = set_rows[sub].pop(0)
            if tables:
                cols = layout.table_offsets[members][:, None] + np.arange(int(np.prod(shape)))
            else:
                cols = layout.block_offsets[members][:, None] + np.arange(int(np.prod([k - 1 for k in shape])))
            gather = sp.csr_array(
                (np.ones(len(rows)), (rows, np.arange(len(rows)))), shape=(len(self.sets[sub]), len(rows))
            )
            self.parts.append((cols, sub, shape, R, rows, gather, len(R) == len(shape)))

    def __call__(self, theta):
        """``{sub-shape: E}``, ``E`` of shape ``(n_sets, prod(sub))``: every ``E_S`` at ``theta``."""
        E = {sub: np.zeros((len(S), int(np.prod(sub)))) for sub, S in self.sets.items()}
        for cols, sub, shape, R, _, gather, _ in self.parts:
            E[sub] += gather @ _component(theta[cols], shape, R, self.tables)
        return E

    def adjoint(self, E):
        """The transpose of the map: ``theta``-shaped, from ``{sub-shape: E}``."""
        out = np.zeros(self.layout.n_table if self.tables else self.layout.n_params)
        for cols, sub, shape, R, rows, _, _ in self.parts:
            out[cols] += _component_adjoint(E[sub][rows], shape, R, self.tables)  # a clique's columns are distinct
        return out

    def sparse(self):
        """The map as a sparse matrix (columns: ``theta``, or the flat full tables with
        ``tables``), rows ordered by sub-shape (as :attr:`sets`), then set, then table entry; and
        ``{sub-shape: first row}``."""
        base, offset = {}, 0
        for sub, S in self.sets.items():
            base[sub] = offset
            offset += len(S) * int(np.prod(sub))
        rows, cols, vals = [], [], []
        for cpos, sub, shape, R, set_rows, _, _ in self.parts:
            A = component_matrix(shape, R, self.tables)
            r = base[sub] + set_rows[:, None, None] * A.shape[0] + np.arange(A.shape[0])[None, :, None]
            r = np.broadcast_to(r, (len(set_rows), *A.shape))
            rows.append(r.ravel())
            cols.append(np.broadcast_to(cpos[:, None, :], r.shape).ravel())
            vals.append(np.broadcast_to(A, r.shape).ravel())
        n_cols = self.layout.n_table if self.tables else self.layout.n_params
        if not rows:
            return sp.csr_array((offset, n_cols)), base
        data = (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols)))
        return sp.csr_array(data, shape=(offset, n_cols)), base


def theta_from_own_components(layout, own):
    """``theta`` from each block's *own* component in the block's coordinates.

    ``own`` holds, for the block of every clique ``C``, ``A_CC^-1 E_C``
    (:func:`component_matrix` of the whole clique is invertible on the fully centred tables),
    which for a clique with no larger clique around it is ``theta_C`` itself. Solved from the
    largest cliques down: ``theta_C = own_C - A_CC^-1 sum_{C' > C} A_{C'C} theta_C'``. For
    binary pairwise models, ``own_i = theta_i + sum_j theta_ij / 2`` and ``own_ij = theta_ij``.
    """
    comp = Components(layout)
    theta = np.zeros(layout.n_params)
    sizes = [len(c) for c in layout.cliques]
    for size in sorted(set(sizes), reverse=True):
        E = comp(theta)  # only the larger cliques are filled in
        for cols, sub, shape, R, rows, _, own_part in comp.parts:
            if own_part and len(sub) == size:
                theta[cols] = own[cols] - E[sub][rows] @ np.linalg.pinv(component_matrix(shape, R)).T
    return theta
