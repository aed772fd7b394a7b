"""Structure of LAP's auxiliary MRFs and their grouping into same-shaped batches.

For a clique ``q`` the auxiliary MRF lives on the 1-neighbourhood ``A_q``; which factors it
has is the ``strategy`` (LAP paper, Section 3.1; exact-inference paper, Proposition 9).
Problems whose auxiliary model has the same structure after relabelling ``A_q`` in sorted
order share one :class:`AuxiliaryStructure` (its enumerated features) and are solved together.
"""

from __future__ import annotations

import itertools
import math
from array import array

import numpy as np

from .._data import c_order_strides
from .._utils._budgets import MAX_FEATURE_ENTRIES
from ..exceptions import NeighbourhoodTooLargeError
from ..graphs import MRFGraph
from ..inference._enumerate import Enumerator

__all__ = ["AuxiliaryStructure", "NeighbourhoodTooLargeError", "auxiliary_factors", "group_by_structure"]


def _outside_boundaries(graph, A):
    """Boundaries in ``A`` of the connected components of ``S \\ A`` (Proposition 9).

    Two variables of ``A`` are path-connected through ``S \\ A`` iff they
    border a common component, and marginalising a component leaves one
    factor over its boundary. Costs ``O(n_variables)``.
    """
    inside = set(A)
    seen = set()
    out = []
    for a in A:
        for start in graph.neighbours[a]:
            if start in inside or start in seen:
                continue
            stack, boundary = [start], set()
            seen.add(start)
            while stack:
                v = stack.pop()
                for u in graph.neighbours[v]:
                    if u in inside:
                        boundary.add(u)
                    elif u not in seen:
                        seen.add(u)
                        stack.append(u)
            out.append(tuple(sorted(boundary)))
    return out


def auxiliary_factors(graph, clique, strategy, neighbourhood=None, factors_of=None):
    """Factors of the auxiliary MRF of ``clique`` over its 1-neighbourhood.

    Parameters
    ----------
    graph : MRFGraph
    clique : tuple of int
        The clique ``q``.
    strategy : {"exact", "dense", "pairwise"}
        ``"exact"``: the structure of the true marginal (exact-inference
        paper, Proposition 9): the original factors inside ``A_q`` plus, for
        each connected component of ``S \\ A_q``, one fully parametrised factor
        over the variables of ``A_q`` it borders (the pairs of ``A_q``
        path-connected through ``S \\ A_q`` and every higher-order term
        marginalising that component creates). ``"dense"``: the original
        factors inside ``A_q`` plus one fully parametrised factor over
        ``A_q \\ q``. ``"pairwise"``: the original factors inside ``A_q`` plus
        every pair of ``A_q \\ q`` (LAP paper, Section 3.1).
    neighbourhood : tuple of int, optional
        ``A_q`` if already known.
    factors_of : list of list of tuple, optional
        The factors containing each variable (speeds up many calls).

    Returns
    -------
    A : tuple of int
        The 1-neighbourhood, sorted.
    factors : list of tuple of int
        Maximal factors of the auxiliary MRF (global variable indices).
    """
    A = graph.one_neighbourhood(clique) if neighbourhood is None else neighbourhood
    if strategy not in ("exact", "dense", "pairwise"):
        raise ValueError(f"strategy must be 'exact', 'dense' or 'pairwise'; got {strategy!r}.")
    inside = _factors_inside(A, graph.factors if factors_of is None else None, factors_of)
    if strategy == "exact":
        extra = [b for b in _outside_boundaries(graph, A) if b]
    else:
        extra = _extra_factors(set(A) - set(clique), strategy)
    return A, _maximal_small(inside + extra + [(v,) for v in A])


def _factors_inside(A, factors=None, factors_of=None):
    """The factors of the graph whose variables all lie in ``A`` (from ``factors_of`` when given)."""
    aset = set(A)
    cand = factors if factors_of is None else {f for v in A for f in factors_of[v]}
    return [f for f in cand if aset.issuperset(f)]


def _extra_factors(rest, strategy):
    """The factors ``"pairwise"`` or ``"dense"`` add over ``rest = A_q \\ q``."""
    rest = sorted(rest)
    if strategy == "pairwise":
        return list(itertools.combinations(rest, 2))
    return [tuple(rest)] if rest else []


def _maximal_small(factors):
    """Distinct factors not contained in another, sorted by size then lexicographically."""
    uniq = {tuple(sorted(f)) for f in factors}
    big = sorted((frozenset(f) for f in uniq if len(f) > 2), key=len, reverse=True)
    kept = [f for f in uniq if len(f) > 1 and not any(b > frozenset(f) for b in big)]
    covered = set().union(*kept) if kept else set()
    kept += [f for f in uniq if len(f) == 1 and f[0] not in covered]
    return sorted(kept, key=lambda c: (len(c), c))


class AuxiliaryStructure:
    """Shared enumeration of one auxiliary structure (local variables 0..m-1).

    Builds the feature matrix ``F3`` of shape ``(n_contexts, n_q_states,
    n_free)``. Without profiling there is one context and ``F3[0]`` is the
    enumerator's feature matrix; with profiling (a factor of the auxiliary
    model covers ``A_q \\ q``), contexts are the joint states of ``A_q \\ q``,
    the free parameters are the blocks meeting ``q``, and the fit is the
    conditional likelihood of ``x_q`` given ``x_{A_q \\ q}``.

    Parameters
    ----------
    local_factors : sequence of tuple of int
        Maximal factors of the auxiliary MRF over local variables ``0..m-1`` (``A_q`` sorted).
    local_states : sequence of int
        States of the local variables.
    local_q : tuple of int
        The local positions of ``q``.
    profiled : bool
        Whether a factor covers ``A_q \\ q`` (conditional fit).
    """

    def __init__(self, local_factors, local_states, local_q, profiled):
        m = len(local_states)
        qset = set(local_q)
        if profiled:
            # Blocks not meeting q are absorbed into the free marginal of
            # A_q \ q: enumerate only the factors meeting q (all of A_q's states).
            local_factors = [f for f in local_factors if qset & set(f)]
            covered = {v for f in local_factors for v in f}
            local_factors += [(j,) for j in range(m) if j not in covered]
        g = MRFGraph(m, tuple(local_factors))
        self.cliques = g.cliques
        self.n_states = np.asarray(local_states, dtype=np.int64)
        enum = Enumerator(self.cliques, self.n_states)
        lay = enum.layout
        self.layout = lay
        n_conf = enum.states.shape[0]
        self.n_configs = n_conf
        self.profiled = profiled
        self.local_q = tuple(local_q)
        if profiled:
            meet = [b for b, c in enumerate(self.cliques) if qset & set(c)]
            cols = np.concatenate([np.arange(lay.block_offsets[b], lay.block_offsets[b + 1]) for b in meet])
            rpos = [j for j in range(m) if j not in qset]
            qpos = list(local_q)
            ctx = np.ravel_multi_index(enum.states[:, rpos].T, self.n_states[rpos])
            qc = np.ravel_multi_index(enum.states[:, qpos].T, self.n_states[qpos])
            n_q = int(np.prod(self.n_states[qpos]))
            self.perm = np.argsort(ctx * n_q + qc, kind="stable")
            self.F3 = np.ascontiguousarray(enum.features[self.perm][:, cols].reshape(-1, n_q, len(cols)))
            self.free_blocks = meet
        else:
            cols = np.arange(lay.n_params)
            self.perm = None
            self.F3 = enum.features[None]
            self.free_blocks = list(range(len(self.cliques)))
        self.free_cols = cols
        # Position of each free block in the free parameter vector.
        self.free_offset = {}
        off = 0
        for b in self.free_blocks:
            self.free_offset[self.cliques[b]] = off
            off += int(lay.block_sizes[b])
        self.n_free = off
        self.block_size = {c: int(lay.block_sizes[b]) for b, c in enumerate(self.cliques)}
        self.strides = c_order_strides(self.n_states)

    def frequencies(self, counts):
        """``(batch, n_contexts, n_q_states)`` empirical frequencies from joint-state counts."""
        total = counts.sum(axis=1, keepdims=True)
        freq = counts / np.where(total > 0, total, 1)  # weights may sum to less than one
        if self.perm is not None:
            freq = freq[:, self.perm]
        return freq.reshape((len(counts),) + self.F3.shape[:2])


def group_by_structure(graph, n_states, problems, strategy, max_states):
    """Group the auxiliary problems of ``problems`` (cliques) by their relabelled structure.

    Except for ``"exact"`` (which looks outside ``A_q``), the auxiliary structure depends
    only on the factors inside ``A_q`` and the position of ``q``, so it is built once per
    distinct local form.

    Parameters
    ----------
    graph : MRFGraph
    n_states : ndarray of int
    problems : list of tuple of int
        The cliques ``q``, one auxiliary problem each.
    strategy : {"exact", "dense", "pairwise"}
    max_states : int
        Largest number of joint states of one 1-neighbourhood.

    Returns
    -------
    groups : list of (key, members, neighbourhoods)
        One entry per distinct ``key = (local states, local factors, local q, profiled)``, in
        order of first appearance: ``members`` the problem indices (int64, increasing) and
        ``neighbourhoods`` their ``A_q``, one sorted row each (int32 of shape
        ``(len(members), |A_q|)``). Compact arrays, not tuples of Python integers: on a
        1000 x 1000 grid the 2 x 10^6 neighbourhoods take 64 MB instead of 700 MB.

    Raises
    ------
    NeighbourhoodTooLargeError
        When a 1-neighbourhood has more than ``max_states`` joint states.
    """
    factors_of = [[] for _ in range(graph.n_variables)]
    for f in graph.factors:
        for v in f:
            factors_of[v].append(f)
    ks = [int(k) for k in n_states]  # Python integers: per-problem numpy calls cost more than the work
    groups, local_forms = {}, {}
    for idx, q in enumerate(problems):
        A = graph.one_neighbourhood(q)
        states = tuple(map(ks.__getitem__, A))
        if math.prod(states) > max_states:
            _check_size(q, A, n_states, strategy, max_states)
        form = _local_form(graph, q, A, strategy, factors_of)
        lq = form[1]
        if form not in local_forms:
            local_forms[form] = _local_structure(form, len(A), strategy)
        lf, profiled = local_forms[form]
        key = (states, lf, lq, profiled)
        if key not in groups:
            _check_features(q, key[0], lf)
            groups[key] = (array("q"), array("i"))
        members, flat = groups[key]
        members.append(idx)
        flat.extend(A)
    out = []
    for key, (members, flat) in groups.items():
        A = np.frombuffer(flat, dtype=np.int32).reshape(len(members), -1)
        out.append((key, np.array(members, dtype=np.int64), A))
    return out


def _local_form(graph, q, A, strategy, factors_of):
    """``(factors, local q)`` of ``q``'s auxiliary problem in the local labels of ``A`` (sorted):
    the exact structure's factors for ``"exact"``, else the graph's factors inside ``A``."""
    loc = dict(zip(A, range(len(A))))
    lq = tuple(map(loc.__getitem__, q))
    if strategy == "exact":
        facs = auxiliary_factors(graph, q, "exact", A, factors_of)[1]
        return tuple(tuple(loc[v] for v in f) for f in facs), lq
    return _local_inside(A, loc, factors_of), lq


def _local_inside(A, loc, factors_of):
    """The factors inside ``A`` in local labels, sorted (as :func:`_factors_inside`, faster).

    A factor (a sorted tuple) inside ``A`` is met once, at its first variable.
    """
    aset = set(A)
    return tuple(
        sorted(tuple(map(loc.__getitem__, f)) for v in A for f in factors_of[v] if f[0] == v and aset.issuperset(f))
    )


def _local_structure(form, m, strategy):
    """Maximal local factors of one local form, and whether ``A_q \\ q`` is profiled out."""
    lf, lq = form
    if strategy != "exact":
        extra = _extra_factors(set(range(m)) - set(lq), strategy)
        lf = tuple(_maximal_small(list(lf) + extra + [(v,) for v in range(m)]))
    rest = set(range(m)) - set(lq)
    return lf, bool(rest) and any(rest <= set(f) for f in lf)


def _check_features(q, local_states, local_factors):
    """Refuse an auxiliary structure whose features and Hessian exceed :data:`MAX_FEATURE_ENTRIES`.

    The enumerated features are ``joint states x parameters`` float64 entries and damped Newton
    builds a ``parameters x parameters`` Hessian: one variable of 10^4 states alone needs 10^4 x
    9,999 features (800 MB) and a Hessian as large, so it is refused with the figures rather
    than failing in the allocation.
    """
    k = np.asarray(local_states, dtype=np.float64)
    n_configs = float(np.prod(k))
    n_params = sum(float(np.prod(k[list(c)] - 1)) for c in MRFGraph(len(k), tuple(local_factors)).cliques)
    entries = n_configs * n_params + n_params**2
    if entries > MAX_FEATURE_ENTRIES:
        raise NeighbourhoodTooLargeError(
            f"The auxiliary problem of clique {q} has {n_configs:,.0f} joint states and {n_params:,.0f} "
            f"parameters: its enumerated features and Newton Hessian need {entries:,.0f} float64 entries "
            f"({entries * 8 / 2**30:.3g} GiB), over the limit of {MAX_FEATURE_ENTRIES:,} "
            f"({MAX_FEATURE_ENTRIES * 8 / 2**30:.3g} GiB). Recode the columns with fewer states (n_states), "
            "use strategy='pairwise' (fewest parameters), or use PseudoLikelihoodEstimator."
        )


def _check_size(q, A, n_states, strategy, max_states):
    size = float(np.prod(n_states[list(A)], dtype=np.float64))
    if size > max_states:
        advice = (
            "Use strategy='pairwise' (fewest parameters)"
            if strategy != "pairwise"
            else "Raise max_neighbourhood_states if memory allows"
        )
        raise NeighbourhoodTooLargeError(
            f"Clique {q} has a 1-neighbourhood of |A_q| = {len(A)} variables with {size:,.0f} "
            f"joint states, over max_neighbourhood_states={max_states:,}: LAP enumerates every "
            f"auxiliary MRF. {advice}, or, for a graph this dense (an RBM, a complete graph), use "
            "PseudoLikelihoodEstimator."
        )
