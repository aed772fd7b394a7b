"""Compact records of a LAP fit: ``subproblems_`` and ``block_sources_`` backed by arrays.

On a 1000 x 1000 grid LAP solves 2 x 10^6 auxiliary problems and reads 3 x 10^6 blocks. As a
list of named tuples of Python integers and a dict of tuples these records took about 1.2 GB
(measured by tracemalloc at 200 x 200, scaled by 25); here they are arrays (int32 variable
indices, int32 iteration counts), and the named tuples are built only when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["BlockIndex", "BlockSources", "LAPSubproblem", "Subproblems"]


class LAPSubproblem(NamedTuple):
    """One auxiliary problem of a fitted :class:`LAPEstimator`."""

    clique: tuple
    """The clique ``q`` whose block(s) are read off."""
    neighbourhood: tuple
    """Its 1-neighbourhood ``A_q`` (sorted variables)."""
    n_params: int
    """Free parameters of the auxiliary fit."""
    profiled: bool
    """True when a saturated clique over ``A_q \\ q`` was profiled out (conditional fit)."""
    n_iter: int
    """Newton iterations run."""
    converged: bool


class Subproblems(Sequence):
    """The :class:`LAPSubproblem` of every auxiliary problem, in problem order (a read-only sequence).

    Indexing builds the named tuple of one problem; ``n_iter`` and ``converged`` are arrays over
    all problems, for summaries without building them. Compares equal to a list of the same records.
    """

    def __init__(self, problems, groups):
        self._problems = problems
        n = len(problems)
        self._group = np.empty(n, dtype=np.int32)
        self._row = np.empty(n, dtype=np.int64)
        self._groups = [(g.neighbourhoods, g.structure.n_free, g.structure.profiled) for g in groups]
        self.n_iter = np.empty(n, dtype=np.int32)
        self.converged = np.empty(n, dtype=bool)
        for k, g in enumerate(groups):
            self._group[g.members] = k
            self._row[g.members] = np.arange(len(g.members))
            self.n_iter[g.members] = g.n_iter
            self.converged[g.members] = g.converged

    def __len__(self):
        return len(self._problems)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]  # negative indices, IndexError
        neighbourhoods, n_free, profiled = self._groups[self._group[i]]
        A = tuple(int(v) for v in neighbourhoods[self._row[i]])
        n_iter, converged = int(self.n_iter[i]), bool(self.converged[i])
        return LAPSubproblem(self._problems[i], A, int(n_free), bool(profiled), n_iter, converged)

    def __eq__(self, other):
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None

    def __repr__(self):
        return f"<{len(self)} LAP subproblems; {int((~self.converged).sum())} not converged>"


class BlockIndex:
    """Index of each clique in a sorted tuple of cliques (by size, then lexicographically).

    Per clique size ``s``, cliques are coded ``sum_j c_j n^(s-1-j)``, which orders them as
    tuples; codes are looked up by binary search. Sizes whose codes would overflow int64 use a dict.
    """

    def __init__(self, cliques, n_variables):
        self.n = int(n_variables)
        self.by_size = {}
        start = 0
        while start < len(cliques):
            s = len(cliques[start])
            stop = _next_size(cliques, start, s)
            members = cliques[start:stop]
            if s * np.log2(max(self.n, 2)) < 62:
                table = self.encode(np.array(members, dtype=np.int64).reshape(len(members), s))
            else:
                table = {c: j for j, c in enumerate(members)}
            self.by_size[s] = (start, table)
            start = stop

    def encode(self, C):
        codes = np.zeros(len(C), dtype=np.int64)
        for j in range(C.shape[1]):
            codes = codes * self.n + C[:, j]
        return codes

    def find(self, C):
        """Indices of the cliques given as the rows of ``C`` (int array of shape ``(m, s)``)."""
        C = np.asarray(C, dtype=np.int64)
        start, table = self.by_size[C.shape[1]]
        if isinstance(table, dict):
            return start + np.array([table[tuple(int(v) for v in c)] for c in C], dtype=np.int64)
        codes = self.encode(C)
        pos = np.searchsorted(table, codes)
        if np.any(pos >= len(table)) or np.any(table[np.minimum(pos, len(table) - 1)] != codes):
            raise KeyError("a clique is not a block of the model")
        return start + pos


def _next_size(cliques, start, s):
    """End of the run of cliques of size ``s`` starting at ``start`` (binary search on the sizes)."""
    lo, hi = start, len(cliques)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(cliques[mid]) == s:
            lo = mid + 1
        else:
            hi = mid
    return lo


class BlockSources(Mapping):
    """``{block clique: tuple of indices into subproblems_}`` backed by arrays (a read-only mapping).

    ``indptr`` (one entry per block plus one) delimits each block's sources in ``sources``.
    """

    def __init__(self, cliques, index, indptr, sources):
        self._cliques, self._index, self._indptr, self._sources = cliques, index, indptr, sources

    def __getitem__(self, clique):
        try:
            (b,) = self._index.find(np.asarray(clique, dtype=np.int64).reshape(1, -1))
        except (KeyError, ValueError, TypeError):
            raise KeyError(clique) from None
        return tuple(int(v) for v in self._sources[self._indptr[b] : self._indptr[b + 1]])

    def __iter__(self):
        return iter(self._cliques)

    def __len__(self):
        return len(self._cliques)

    def __repr__(self):
        return f"<sources of {len(self)} LAP blocks>"
