"""Sub-networks of a set of factors, cut at the variables that are always observed.

Refaat and Darwiche (Section 4): link two factors when they share a variable that is missing
in some row; the connected components are the sub-networks. Within any row the sub-networks
only meet in observed variables, so the data term of the likelihood is a sum over them
(Theorem 1). Linear in the size of the structure.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

__all__ = ["subnetworks"]


def subnetworks(cliques, free):
    """Group factors into sub-networks linked through free (sometimes missing) variables.

    Parameters
    ----------
    cliques : sequence of tuple of int
        The variables of each factor.
    free : ndarray of bool, shape (n_variables,)
        Variables missing in at least one row.

    Returns
    -------
    list of tuple of int
        The factors (indices into ``cliques``) of each sub-network, ordered by their first
        factor; factors without a free variable are left out (their data are complete).
    """
    linked = [i for i, c in enumerate(cliques) if free[list(c)].any()]
    if not linked:
        return []
    rows = [i for i, c in enumerate(linked) for v in cliques[c] if free[v]]
    cols = [v for c in linked for v in cliques[c] if free[v]]
    n = len(linked)
    incidence = coo_matrix((np.ones(len(rows)), (rows, np.array(cols) + n)), shape=(n + len(free),) * 2)
    _, label = connected_components(incidence, directed=False)
    label = label[:n]
    order = np.argsort(label, kind="stable")
    split = np.flatnonzero(np.diff(label[order])) + 1
    linked = np.array(linked)
    return sorted((tuple(linked[part].tolist()) for part in np.split(order, split)), key=lambda t: t[0])
