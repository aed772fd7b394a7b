"""Full conditionals ``log p(x_i = k | x_-i)`` of chosen variables, batched over rows.

Used by the pseudo-likelihood score and by the general (any number of states, any clique
size) Gibbs kernel.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from .._parametrisation import CHUNK_ENTRIES

__all__ = ["ConditionalPlan"]


class ConditionalPlan:
    """Full conditionals ``log p(x_i = k | x_-i)`` (up to a constant) of chosen variables.

    For every clique containing a target variable, the table entry of each
    candidate state is gathered from the flat full tables; a sparse matrix sums
    them per variable. Used for pseudo-likelihood and the general Gibbs path.

    Parameters
    ----------
    layout : skmrf._parametrisation.CliqueLayout
    targets : array-like of int
        The variables whose conditionals are computed.
    """

    def __init__(self, layout, targets):
        self.targets = np.asarray(targets, dtype=np.int64)
        k = layout.n_states
        self.kmax = int(k.max())
        slot_of = {int(v): s for s, v in enumerate(self.targets)}
        groups = {}
        for _, var, strides, offsets in layout.groups:
            for vars_, st, off in zip(var.tolist(), strides.tolist(), offsets.tolist()):
                for j, v in enumerate(vars_):
                    if v not in slot_of:
                        continue
                    g = groups.setdefault(len(vars_) - 1, ([], [], [], [], []))
                    g[0].append(slot_of[v])
                    g[1].append(vars_[:j] + vars_[j + 1 :])
                    g[2].append(st[:j] + st[j + 1 :])
                    g[3].append(st[j])
                    g[4].append(off)
        self.plan = []
        n_t = len(self.targets)
        for size, (slot, others, ostr, own, off) in groups.items():
            slot = np.array(slot, dtype=np.int64)
            kk = np.minimum(np.arange(self.kmax)[None, :], k[self.targets[slot]][:, None] - 1)
            self.plan.append(
                (
                    np.array(others, dtype=np.int64).reshape(len(slot), size),
                    np.array(ostr, dtype=np.int64).reshape(len(slot), size),
                    np.array(off, dtype=np.int64)[:, None] + kk * np.array(own)[:, None],
                    sp.csr_matrix((np.ones(len(slot)), (slot, np.arange(len(slot)))), shape=(n_t, len(slot))),
                )
            )
        self.n_entries = sum(p[2].shape[0] for p in self.plan)
        self.invalid = np.arange(self.kmax)[None, :] >= k[self.targets][:, None]

    def chunks(self, n_rows):
        """Row slices bounding temporaries to about ``CHUNK_ENTRIES`` floats."""
        step = max(1, CHUNK_ENTRIES // (max(self.n_entries, len(self.targets)) * self.kmax))
        return [slice(a, a + step) for a in range(0, n_rows, step)]

    def logits(self, full, X):
        """Conditional log-potentials, shape ``(len(targets), n_rows, kmax)``.

        Entries for states a variable does not have are ``-inf``. Call on row
        chunks from :meth:`chunks` to bound memory.
        """
        out = np.zeros((len(self.targets), X.shape[0] * self.kmax))
        for others, ostr, idx, summer in self.plan:
            base = np.einsum("nej,ej->ne", X[:, others], ostr)
            vals = full[base[:, :, None] + idx[None]]  # rows, entries, states
            out += summer @ vals.transpose(1, 0, 2).reshape(idx.shape[0], -1)
        out = out.reshape(len(self.targets), X.shape[0], self.kmax)
        out[np.broadcast_to(self.invalid[:, None, :], out.shape)] = -np.inf
        return out

    def log_conditionals(self, full, X):
        """``log p(x_i | x_-i)`` of the observed value of every target, shape ``(n_rows, len(targets))``."""
        out = np.empty((X.shape[0], len(self.targets)))
        for b in self.chunks(X.shape[0]):
            lg = self.logits(full, X[b])
            own = np.take_along_axis(lg, X[b][:, self.targets].T[:, :, None], axis=2)[:, :, 0]
            out[b] = (own - logsumexp(lg, axis=2)).T
        return out

    def draw(self, full, X, rng):
        """New values of the targets drawn from their full conditionals, ``(n_rows, len(targets))``."""
        out = np.empty((X.shape[0], len(self.targets)), dtype=np.int64)
        for b in self.chunks(X.shape[0]):
            lg = self.logits(full, X[b])
            cdf = np.cumsum(np.exp(lg - lg.max(axis=2, keepdims=True)), axis=2)
            r = rng.random(cdf.shape[:2] + (1,)) * cdf[:, :, -1:]
            out[b] = (cdf <= r).sum(axis=2).T
        return out
