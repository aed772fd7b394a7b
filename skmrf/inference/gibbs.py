"""Chromatic Gibbs sampling, vectorised over chains and colour classes.

The variable graph is coloured (two colours by BFS when it is bipartite, as
grids, lattices and Chimera graphs are; greedy largest-first otherwise);
variables of one colour are conditionally independent given the others, so
each colour class is resampled at once in every chain.

Binary pairwise models take a fast path (:class:`BinaryGibbsKernel`): the
conditional log-odds of a colour class is one sparse-times-dense product on
float32 states, compared with 24-bit uniforms (probabilities resolved to
2^-24, far below Monte-Carlo error). Other models use
the general path (:class:`GeneralGibbsKernel`), which gathers every clique's
table entries for each candidate state of the updated variable. Every caller
drives its chains through :func:`run_chains`.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ..utils._sklearn_compat import delayed
from .conditionals import ConditionalPlan

__all__ = [
    "BinaryGibbsKernel",
    "GeneralGibbsKernel",
    "GibbsSampler",
    "colour_classes",
    "is_binary_pairwise",
    "run_chains",
]

_TWO24 = np.float32(1 << 24)


def colour_classes(graph) -> list:
    """Colour classes (arrays of variables) of a proper colouring of ``graph``."""
    g = graph.to_networkx()
    try:  # bipartite (grids, lattices, Chimera, trees): two colours by BFS, O(n + m)
        colouring = nx.bipartite.color(g)
    except nx.NetworkXError:
        colouring = nx.coloring.greedy_color(g, strategy="largest_first")
    n_col = max(colouring.values(), default=-1) + 1
    classes = [[] for _ in range(n_col)]
    for v, c in colouring.items():
        classes[c].append(v)
    return [np.array(sorted(c), dtype=np.int64) for c in classes]


class GibbsSampler:
    """Chromatic Gibbs sampler for a :class:`~skmrf.model.DiscreteMRF`.

    Parameters
    ----------
    model : DiscreteMRF
        The model; its parameters are read once, at construction.
    kernel : {"auto", "binary", "general"}, default="auto"
        ``"auto"`` takes :class:`BinaryGibbsKernel` for binary pairwise models and
        :class:`GeneralGibbsKernel` otherwise; ``"general"`` forces the general path.

    Attributes
    ----------
    colours : list of ndarray
        The colour classes, updated in this order in each sweep.
    kernel : BinaryGibbsKernel or GeneralGibbsKernel
        The sweep kernel (see :func:`~skmrf.inference.run_chains`).
    binary_pairwise : bool
        Whether the fast binary kernel is used.
    """

    def __init__(self, model, kernel="auto"):
        if kernel not in ("auto", "binary", "general"):
            raise ValueError(f"kernel must be 'auto', 'binary' or 'general'; got {kernel!r}.")
        lay = model.layout
        self.n_states = model.n_states
        self.colours = colour_classes(model.graph)
        self.binary_pairwise = is_binary_pairwise(lay) and kernel != "general"
        if kernel == "binary" and not self.binary_pairwise:
            raise ValueError("kernel='binary' needs binary variables and cliques of at most two variables.")
        if self.binary_pairwise:
            self.kernel = BinaryGibbsKernel.from_layout(lay, model.theta, self.colours)
        else:
            self.kernel = GeneralGibbsKernel(lay, model.theta, self.colours)

    def random_states(self, n_chains, rng) -> np.ndarray:
        """Uniformly random states, shape ``(n_chains, n_variables)``."""
        return np.floor(rng.random((n_chains, len(self.n_states))) * self.n_states).astype(np.int64)

    def run(self, states, n_sweeps, rng) -> np.ndarray:
        """Run ``n_sweeps`` sweeps of every chain; returns the new states.

        Parameters
        ----------
        states : ndarray of shape (n_chains, n_variables)
            Start states (not modified).
        n_sweeps : int
        rng : numpy.random.Generator

        Returns
        -------
        ndarray of shape (n_chains, n_variables), dtype int64
        """
        k = self.kernel
        ((S, _),) = run_chains(k, [k.to_internal(states)], n_sweeps, [rng])
        return k.to_external(S)


def is_binary_pairwise(layout) -> bool:
    """Whether every variable is binary and every clique has at most two variables."""
    return bool(np.all(layout.n_states == 2)) and all(len(c) <= 2 for c in layout.cliques)


def run_chains(kernel, starts, n_sweeps, rngs, *, beta=1.0, parallel=None, statistic=None, keep_states=True):
    """Advance blocks of chains by ``n_sweeps`` sweeps each: the one chain driver.

    Sampling, MCMC maximum likelihood and annealed importance sampling all run their chains
    through this function.

    Parameters
    ----------
    kernel : BinaryGibbsKernel or GeneralGibbsKernel
    starts : list of ndarray
        Blocks of chains in the kernel's internal layout (``kernel.to_internal``); advanced in
        place when run in this process.
    n_sweeps : int
    rngs : list of numpy.random.Generator
        One stream per block. Draw them up front (``rng.spawn(len(starts))``) so that the
        result does not depend on how the blocks are scheduled.
    beta : float, default=1.0
        Inverse temperature of the interaction terms (unary terms unscaled), for annealing.
    parallel : joblib.Parallel, optional
        Runs one task per block; None runs them here, in order.
    statistic : callable, optional
        ``statistic(S)`` computed where the block ran, so only the summary travels back.
    keep_states : bool, default=True
        Return the blocks' final states (False saves sending them back from workers).

    Returns
    -------
    list of (states or None, statistic or None)
        One pair per block.
    """
    tasks = zip(starts, rngs)
    if parallel is None:
        return [_advance(kernel, S, n_sweeps, rng, beta, statistic, keep_states) for S, rng in tasks]
    return parallel(delayed(_advance)(kernel, S, n_sweeps, rng, beta, statistic, keep_states) for S, rng in tasks)


def _advance(kernel, S, n_sweeps, rng, beta, statistic, keep_states):
    """Worker: one block of chains; a pure function of its arguments."""
    if not S.flags.writeable:  # a process backend passes blocks over 1 MB as read-only memmaps
        S = S.copy()
    S = kernel.run(S, n_sweeps, rng, beta=beta)
    return (S if keep_states else None), (None if statistic is None else statistic(S))


class GeneralGibbsKernel:
    """Chromatic Gibbs sweeps for any numbers of states and cliques of any size.

    States are int64 arrays of shape ``(n_chains, n_variables)`` (the internal layout is the
    external one). Each colour class is redrawn from its full conditionals, gathered from
    every clique's table entries for each candidate state (:class:`ConditionalPlan`).

    Parameters
    ----------
    layout : skmrf.parametrisation.CliqueLayout
    theta : ndarray of shape (n_params,)
    colours : list of ndarray
        Colour classes (a proper colouring of the graph).
    """

    def __init__(self, layout, theta, colours):
        self.layout = layout
        self.colours = colours
        self.full = layout.full_tables(theta)
        theta_unary, self.theta_interaction = layout.split_unary(theta)
        self.full_unary = layout.full_tables(theta_unary)
        self.full_interaction = layout.full_tables(self.theta_interaction)
        self.plans = [ConditionalPlan(layout, u) for u in colours]

    def to_internal(self, states):
        """A new int64 copy of ``(n_chains, n_variables)`` states."""
        return np.array(states, dtype=np.int64)

    def to_external(self, S):
        return S

    def interaction_energy(self, S):
        """Energy of the cliques of two or more variables for every chain, float64."""
        return self.layout.energy(S, self.theta_interaction)

    def run(self, S, n_sweeps, rng, beta=1.0):
        """Run ``n_sweeps`` sweeps in place on ``S``; ``beta`` scales the interaction terms."""
        full = self.full if beta == 1.0 else self.full_unary + beta * self.full_interaction
        for _ in range(n_sweeps):
            for u, plan in zip(self.colours, self.plans):
                S[:, u] = plan.draw(full, S, rng)
        return S


class BinaryGibbsKernel:
    """Chromatic Gibbs sweeps on ``{0, 1}`` states stored transposed and colour-sorted.

    States are a float32 array of shape ``(n_variables, n_chains)`` whose rows
    are permuted so that every colour class is a contiguous block of rows; a
    colour update is then one sparse product into a preallocated buffer, one
    ``exp``, one uniform draw and one comparison written straight into the
    state rows (no gathers, no scatters). ``x = 1`` with probability
    ``sigmoid(f)``, i.e. when ``u * (1 + exp(-f)) < 1`` for ``u`` uniform on
    ``[0, 1)`` (24-bit, from the generator's raw 64-bit output).

    Parameters
    ----------
    theta_unary : ndarray of shape (n_variables,)
    theta_pair : ndarray of shape (n_edges,)
        ``{0, 1}`` parameters (package parametrisation).
    edges : ndarray of shape (n_edges, 2)
    colours : list of ndarray
        Colour classes (a proper colouring of the graph).
    """

    def __init__(self, theta_unary, theta_pair, edges, colours):
        n = len(theta_unary)
        self.perm = np.concatenate(colours) if colours else np.zeros(0, dtype=np.int64)
        self.inv = np.empty_like(self.perm)
        self.inv[self.perm] = np.arange(n)
        self.bounds = np.concatenate([[0], np.cumsum([len(c) for c in colours])])
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        pi, pj = self.inv[edges[:, 0]], self.inv[edges[:, 1]]
        W = sp.csr_matrix(
            (np.r_[theta_pair, theta_pair].astype(np.float32), (np.r_[pi, pj], np.r_[pj, pi])), shape=(n, n)
        )
        W.sort_indices()
        self.W = W  # symmetric pair weights in the internal (colour-sorted) order
        bias = np.asarray(theta_unary, dtype=np.float32)[self.perm]
        # Negated, so that one product gives -field, ready for exp.
        # keyed by the first row of each colour block.
        self.neg_rows = {int(a): -W[a:b] for a, b in zip(self.bounds[:-1], self.bounds[1:])}
        self.neg_bias = {int(a): -bias[a:b, None] for a, b in zip(self.bounds[:-1], self.bounds[1:])}

    def to_internal(self, states):
        """``(n_chains, n_variables)`` 0/1 states to the internal float32 layout."""
        return np.ascontiguousarray(np.asarray(states).T[self.perm], dtype=np.float32)

    def to_external(self, S):
        return S[self.inv].T.astype(np.int64)

    @classmethod
    def from_layout(cls, layout, theta, colours):
        """The kernel of a binary pairwise model given in the package's parametrisation."""
        sizes = np.array([len(c) for c in layout.cliques])
        pair = np.flatnonzero(sizes == 2)
        uni = np.flatnonzero(sizes == 1)
        unary = np.zeros(len(layout.n_states))
        unary[[layout.cliques[k][0] for k in uni]] = theta[layout.block_offsets[uni]]
        edges = np.array([layout.cliques[k] for k in pair], dtype=np.int64).reshape(-1, 2)
        return cls(unary, theta[layout.block_offsets[pair]], edges, colours)

    def interaction_energy(self, S):
        """``sum_(i,j) theta_ij x_i x_j`` of every chain (internal states ``S``), float64."""
        return 0.5 * np.einsum("vc,vc->c", S, self.W @ S, dtype=np.float64)

    def run(self, S, n_sweeps, rng, beta=1.0):
        """Run ``n_sweeps`` sweeps in place on internal states ``S``.

        ``beta`` scales the pair weights (not the unary terms): the chain then
        leaves ``p_beta(x) ~ exp(unary . x + beta * pair_energy(x))`` invariant,
        as annealed importance sampling needs.
        """
        n_chains = S.shape[1]
        spans = [(a, b) for a, b in zip(self.bounds[:-1], self.bounds[1:]) if b > a]
        bufs = [np.empty((b - a, n_chains), dtype=np.float32) for a, b in spans]
        ubuf = np.empty(max((f.size for f in bufs), default=0), dtype=np.float32)
        raw = rng.bit_generator
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(n_sweeps):
                for (a, b), f in zip(spans, bufs):
                    if beta == 1.0:
                        np.add(self.neg_rows[a] @ S, self.neg_bias[a], out=f)  # -field
                    else:
                        np.multiply(self.neg_rows[a] @ S, np.float32(beta), out=f)
                        f += self.neg_bias[a]
                    np.exp(f, out=f)
                    f += 1
                    # 24-bit uniforms u / 2^24 from raw 64-bit draws (two per draw), as
                    # Generator.random(dtype=float32) makes them but without its per-value overhead.
                    u = raw.random_raw((f.size + 1) // 2).view(np.uint32)[: f.size]
                    np.right_shift(u, 8, out=u)
                    uf = ubuf[: f.size].reshape(f.shape)
                    np.copyto(uf, u.reshape(f.shape), casting="unsafe")  # exact: u < 2^24
                    f *= uf
                    np.less(f, _TWO24, out=S[a:b])
        return S
