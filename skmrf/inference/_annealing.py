"""The annealing path of AIS: from an independent (product) model to a discrete MRF.

Every intermediate distribution has the form

.. math::

    p_\\beta(x) \\propto \\exp\\big(U(x) + \\beta A(x)\\big), \\qquad
    U(x) = \\theta_{\\rm unary}(x) + M(x), \\quad A(x) = I(x) - M(x),

with ``I`` the model's interaction energy (every clique of two or more variables), ``theta_unary``
its single-variable terms and ``M(x) = sum_i M_i(x_i)`` a unary *offset* moved from the
interactions into the base model. ``p_0`` is then a product of independent variables (exact
draws and ``log Z_0`` in closed form) and ``p_1`` is the model, for every offset. The Gibbs
sweep at ``beta`` is the model's own chromatic kernel with its interactions scaled by ``beta``
(as :func:`~skmrf.inference.run_chains` runs them) and its unary terms shifted by
``(1 - beta) M``.

Two offsets (``path``):

``"unary"``
    ``M = 0``: the base model is the model's unary terms alone (Neal 2001; the only path
    before). In the package's parametrisation, normalised with respect to state 0, a strongly
    coupled model carries large unary terms that compensate its couplings (``theta_i`` near
    ``-sum_j theta_ij / 2`` on binarised images), so this base puts every variable in state 0
    and the chains meet the couplings abruptly near ``beta = 1``.
``"centred"`` (default)
    ``M_i(a)`` is the main effect of variable ``i`` in every interaction table containing it:
    the table's mean over the other variables' states (uniformly weighted) at ``x_i = a``, minus
    its value at ``a = 0``. What is annealed is then the interaction with its main effects
    removed (for binary pairwise models, exactly the couplings in Ising ``{-1, +1}``
    coordinates, ``theta_ij / 4``, with the fields kept in the base). On models fitted to
    binarised 16 x 16 digits, 100 chains x 1000 steps of the unary path are 0.5 to 9 nats below
    the exact ``log Z``; 100 steps of the centred path are within 0.4
    (``benchmarks/ais_log_partition.py``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ._gibbs import BinaryGibbsKernel, CategoricalGibbsKernel, GeneralGibbsKernel, GibbsSampler, run_chains
from ._swendsen_wang import SwendsenWangMove

__all__ = ["PATHS", "AnnealingPath", "is_flip_symmetric", "unary_offset"]

#: The annealing paths (see the module docstring).
PATHS = ("centred", "unary")


def is_flip_symmetric(model):
    """Whether a binary pairwise model is invariant under ``x -> 1 - x`` (every variable at once).

    In spin form ``s = 2 x - 1`` the model has couplings ``theta_ij / 4`` and fields
    ``h_i = theta_i / 2 + sum_j theta_ij / 4``; it is symmetric when every ``h_i`` is zero, up to
    the rounding of the sum (``1e-12`` of the largest ``|theta|`` per term). The periodic Ising
    model without field is the example: its all-0 and all-1 phases carry equal mass.
    """
    lay = model.layout
    if np.any(np.asarray(model.n_states) != 2) or any(len(c) > 2 for c in lay.cliques):
        return False
    theta = np.asarray(model.theta, dtype=np.float64)
    sizes = np.array([len(c) for c in lay.cliques])
    value = theta[lay.block_offsets[:-1]]  # one parameter per binary clique of one or two
    uni, pair = np.flatnonzero(sizes == 1), np.flatnonzero(sizes == 2)
    ends = np.array([lay.cliques[b] for b in pair], dtype=np.int64).reshape(-1, 2)
    h = np.zeros(model.n_variables)
    terms = np.ones(model.n_variables)
    np.add.at(h, [lay.cliques[b][0] for b in uni], value[uni] / 2)
    np.add.at(h, ends.ravel(), np.repeat(value[pair] / 4, 2))
    np.add.at(terms, ends.ravel(), 1)
    scale = float(np.abs(theta).max(initial=0.0))
    return bool(np.all(np.abs(h) <= 1e-12 * scale * terms))


def unary_offset(model, path="centred"):
    """The unary offset ``M`` of an annealing path, shape ``(n_variables, K_max)``.

    ``M[i, a]`` is added to the base model's log-potential of ``x_i = a`` and removed from the
    annealed part; ``M[i, 0] = 0`` and entries beyond ``K_i`` are 0.

    Parameters
    ----------
    model : DiscreteMRF
    path : {"centred", "unary"}, default="centred"

    Returns
    -------
    ndarray of shape (n_variables, K_max)
    """
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}; got {path!r}.")
    lay = model.layout
    kmax = int(model.n_states.max(initial=1))
    offset = np.zeros((model.n_variables, kmax))
    if path == "unary":
        return offset
    full = lay.full_tables(model.theta)
    by_shape = {}
    for b, c in enumerate(lay.cliques):
        if len(c) >= 2:
            by_shape.setdefault(lay.table_shapes[b], []).append(b)
    for shape, members in by_shape.items():  # vectorised over the cliques of one table shape
        members = np.array(members)
        at = lay.table_offsets[members][:, None] + np.arange(int(np.prod(shape)))
        tables = full[at].reshape(len(members), *shape)
        var = np.array([lay.cliques[b] for b in members])
        for p in range(len(shape)):
            others = tuple(1 + q for q in range(len(shape)) if q != p)
            main = tables.mean(axis=others)  # (n_members, K_p)
            main -= main[:, :1]
            np.add.at(offset, (var[:, p][:, None], np.arange(shape[p])[None, :]), main)
    return offset


class AnnealingPath:
    """The distributions ``p_beta`` of one model and path, and the Gibbs sweep at each ``beta``.

    Parameters
    ----------
    model : DiscreteMRF
    path : {"centred", "unary"}, default="centred"
    cluster_moves : bool or "auto", default=False
        Precede every Gibbs sweep with a Swendsen-Wang move
        (:class:`~skmrf.inference._swendsen_wang.SwendsenWangMove`), which flips whole clusters and
        so carries chains between the phases of a ferromagnet and through its critical point, where
        single-site sweeps slow down as ``L^2.17`` (on the 32 x 32 Ising torus at ``K = 0.6``, 100
        chains x 400 steps of the centred path are 5 to 10 nats low without it and within 1 with
        it; a move costs 15 to 35 sweeps). ``"auto"``: for binary pairwise models whose couplings
        are all ``>= 0``, where the move applies; ``True`` raises ``ValueError`` elsewhere.

    Attributes
    ----------
    kernel : BinaryGibbsKernel, CategoricalGibbsKernel or GeneralGibbsKernel
        The model's chromatic Gibbs kernel (its own copy: its unary terms are shifted in place
        at every ``beta``; at ``beta = 1`` it is the model's kernel again).
    offset : ndarray of shape (n_variables, K_max)
        The unary offset ``M`` (:func:`unary_offset`).
    log_z0 : float
        ``log Z`` of the base model ``p_0``.
    """

    def __init__(self, model, path="centred", cluster_moves=False):
        self.offset = unary_offset(model, path)
        self.kernel = GibbsSampler(model).kernel
        applies = isinstance(self.kernel, BinaryGibbsKernel) and SwendsenWangMove.applies(self.kernel)
        if cluster_moves not in (True, False, "auto"):
            raise ValueError(f"cluster_moves must be True, False or 'auto'; got {cluster_moves!r}.")
        if cluster_moves is True and not applies:
            raise ValueError(
                "cluster_moves=True needs a binary pairwise model whose couplings are all >= 0 (a ferromagnet): "
                "Swendsen-Wang moves do not apply to this model; use cluster_moves='auto' or False."
            )
        self.cluster_moves = bool(applies and cluster_moves in (True, "auto"))
        if self.cluster_moves:
            self._swendsen_wang = SwendsenWangMove(self.kernel)
            # the kernel's unary {0, 1} log-potentials in its internal order, before any offset
            starts = sorted(self.kernel.neg_bias)
            self._unary0 = -np.concatenate([self.kernel.neg_bias[a].ravel() for a in starts]).astype(np.float64)
        self._shifted = bool(np.any(self.offset))
        self._set_unary_offset = _unary_offset_setter(self.kernel) if self._shifted else None
        lay = model.layout
        n, kmax = model.n_variables, self.offset.shape[1]
        logits = np.full((n, kmax), -np.inf)
        theta_unary, _ = lay.split_unary(model.theta)
        full0 = lay.full_tables(theta_unary)
        for b, c in enumerate(lay.cliques):
            if len(c) == 1:
                k = int(model.n_states[c[0]])
                logits[c[0], :k] = full0[lay.table_offsets[b] : lay.table_offsets[b] + k] + self.offset[c[0], :k]
        self.base_logits = logits
        self.log_z0 = float(logsumexp(logits, axis=1).sum())
        # The offset's energy in the kernel's internal layout: ``(n, chains)`` rows permuted by
        # ``perm`` (binary and categorical kernels), or ``(chains, n)`` (general kernel).
        self._perm = getattr(self.kernel, "perm", None)

    def base_draws(self, n_chains, rng):
        """Exact draws from ``p_0``, ``(n_chains, n_variables)`` int64 (Gumbel-max, in blocks of
        chains so that the noise array stays under ``2^24`` floats)."""
        n, kmax = self.base_logits.shape
        x = np.empty((n_chains, n), dtype=np.int64)
        step = max(1, (1 << 24) // max(1, n * kmax))
        for a in range(0, n_chains, step):
            b = min(n_chains, a + step)
            x[a:b] = np.argmax(self.base_logits[None] + rng.gumbel(size=(b - a, n, kmax)), axis=2)
        return x

    def annealed_energy(self, S):
        """``A(x) = I(x) - M(x)`` of every chain (internal states ``S``), float64."""
        energy = self.kernel.interaction_energy(S)
        if not self._shifted:
            return energy
        if self._perm is None:  # general kernel: (chains, n) int64
            return energy - np.take_along_axis(self.offset[None], S[:, :, None], axis=2)[:, :, 0].sum(axis=1)
        off = self.offset[self._perm]
        if isinstance(self.kernel, BinaryGibbsKernel):  # float32 0/1 rows
            return energy - off[:, 1] @ S.astype(np.float64)
        return energy - np.take_along_axis(off, S.astype(np.intp), axis=1).sum(axis=0)

    def sweep(self, S, beta, rng):
        """One Gibbs sweep of every chain at ``beta``, in place on internal states ``S`` (after a
        Swendsen-Wang move when ``cluster_moves``)."""
        if self.cluster_moves:
            unary = self._unary0 + (1.0 - beta) * self.offset[self._perm, 1]
            self._swendsen_wang.move(S, unary, beta, rng)
        if self._shifted:
            self._set_unary_offset((1.0 - beta) * self.offset)
        run_chains(self.kernel, [S], 1, [rng], beta=beta)


def _unary_offset_setter(kernel):
    """A function ``set(offset)`` that makes ``kernel`` sample with its unary log-potentials plus
    ``offset`` (shape ``(n_variables, K_max)``, external variable order), replacing any earlier
    offset. It writes the kernels' unary storage in place (the only place outside
    :mod:`skmrf.inference._gibbs` that does): ``tests/test_annealing.py`` checks, for every kernel,
    that the shifted kernel leaves the shifted model invariant."""
    if isinstance(kernel, BinaryGibbsKernel):
        base = {a: v.copy() for a, v in kernel.neg_bias.items()}
        perm = kernel.perm

        def set_binary(offset):
            shift = offset[perm, 1].astype(np.float32)
            for a, v in base.items():
                kernel.neg_bias[a] = v - shift[a : a + len(v), None]

        return set_binary
    if isinstance(kernel, CategoricalGibbsKernel):
        unary0 = kernel.unary.copy()  # internal order, -inf beyond K_i
        pair, rows0 = kernel._shifted_logs()
        first = np.flatnonzero(kernel.group_first)
        sites = kernel.group_site[first]
        perm, kmax = kernel.perm, kernel.kmax

        def set_categorical(offset):
            u = unary0 + offset[perm]
            kernel.unary = u
            rows = rows0.copy()
            uf = u[sites]
            rows[first, :kmax] = uf - uf.max(axis=1, keepdims=True)
            kernel._shifted = (pair, rows)
            kernel._tables = {}

        return set_categorical
    if isinstance(kernel, GeneralGibbsKernel):
        lay = kernel.layout
        unary0 = kernel.full_unary.copy()
        singles = [(b, c[0]) for b, c in enumerate(lay.cliques) if len(c) == 1]
        at = np.concatenate([lay.table_offsets[b] + np.arange(lay.n_states[i]) for b, i in singles])
        var = np.concatenate([np.full(lay.n_states[i], i) for _, i in singles])
        state = np.concatenate([np.arange(lay.n_states[i]) for _, i in singles])

        def set_general(offset):
            full = unary0.copy()
            full[at] += offset[var, state]
            kernel.full_unary = full
            kernel.full = full + kernel.full_interaction

        return set_general
    raise TypeError(f"no unary offset for a kernel of type {type(kernel).__name__}")
