"""Chromatic Gibbs sampling, vectorised over chains and colour classes.

The variable graph is coloured (two colours by BFS when it is bipartite, as
grids, lattices and Chimera graphs are; greedy largest-first otherwise);
variables of one colour are conditionally independent given the others, so
each colour class is resampled at once in every chain.

Binary pairwise models take a fast path (:class:`BinaryGibbsKernel`): the
conditional log-odds of a colour class is one sparse-times-dense product on
float32 states, compared with 24-bit uniforms (probabilities resolved to
2^-24, far below Monte-Carlo error). Pairwise models with more states
(Potts-type) take :class:`CategoricalGibbsKernel`: a site's conditional is the
product of one gathered row of exponentiated couplings per group of
neighbours, drawn by inverse CDF with the same 24-bit uniforms; on nearly
complete graphs (direct coupling analysis of protein alignments), where every
colour class is one variable, it sums each site's field by one sparse one-hot
product instead (``_gibbs_dense``). Models with
cliques of three or more variables use the general path
(:class:`GeneralGibbsKernel`), which gathers every clique's table entries for
each candidate state of the updated variable. Every caller drives its chains
through :func:`run_chains`.

The kernels live in ``_gibbs_binary``, ``_gibbs_categorical`` (with ``_gibbs_dense``) and
``_gibbs_general``; this module keeps the colouring, :class:`GibbsSampler` and the driver, and
re-exports the kernels.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from .._utils._sklearn_compat import delayed
from ._gibbs_binary import BinaryGibbsKernel
from ._gibbs_categorical import CategoricalGibbsKernel
from ._gibbs_general import GeneralGibbsKernel

__all__ = [
    "BinaryGibbsKernel",
    "CategoricalGibbsKernel",
    "GeneralGibbsKernel",
    "GibbsSampler",
    "colour_classes",
    "is_binary_pairwise",
    "is_pairwise",
    "run_chains",
]


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
    kernel : {"auto", "binary", "categorical", "general"}, default="auto"
        ``"auto"`` takes :class:`BinaryGibbsKernel` for binary pairwise models,
        :class:`CategoricalGibbsKernel` for other pairwise models (cliques of at most two
        variables, any numbers of states) and :class:`GeneralGibbsKernel` otherwise; a name
        forces that kernel (``"binary"`` and ``"categorical"`` raise ``ValueError`` on models
        they cannot run).

    Attributes
    ----------
    colours : list of ndarray
        The colour classes, updated in this order in each sweep.
    kernel : BinaryGibbsKernel, CategoricalGibbsKernel or GeneralGibbsKernel
        The sweep kernel (see :func:`~skmrf.inference.run_chains`).
    kernel_name : {"binary", "categorical", "general"}
        Which kernel was chosen.
    binary_pairwise : bool
        Whether the fast binary kernel is used.
    """

    def __init__(self, model, kernel="auto"):
        if kernel not in ("auto", "binary", "categorical", "general"):
            raise ValueError(f"kernel must be 'auto', 'binary', 'categorical' or 'general'; got {kernel!r}.")
        lay = model.layout
        self.n_states = model.n_states
        self.colours = colour_classes(model.graph)
        if kernel == "auto":
            kernel = "binary" if is_binary_pairwise(lay) else "categorical" if is_pairwise(lay) else "general"
        if kernel == "binary" and not is_binary_pairwise(lay):
            raise ValueError("kernel='binary' needs binary variables and cliques of at most two variables.")
        if kernel == "categorical" and not is_pairwise(lay):
            raise ValueError("kernel='categorical' needs cliques of at most two variables; use 'general'.")
        self.kernel_name = kernel
        self.binary_pairwise = kernel == "binary"
        if kernel == "binary":
            self.kernel = BinaryGibbsKernel.from_layout(lay, model.theta, self.colours)
        elif kernel == "categorical":
            self.kernel = CategoricalGibbsKernel.from_layout(lay, model.theta, self.colours)
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
    return bool(np.all(layout.n_states == 2)) and is_pairwise(layout)


def is_pairwise(layout) -> bool:
    """Whether every clique has at most two variables (any numbers of states)."""
    return all(len(c) <= 2 for c in layout.cliques)


def run_chains(kernel, starts, n_sweeps, rngs, *, beta=1.0, parallel=None, statistic=None, keep_states=True):
    """Advance blocks of chains by ``n_sweeps`` sweeps each: the one chain driver.

    Sampling, MCMC maximum likelihood and annealed importance sampling all run their chains
    through this function.

    Parameters
    ----------
    kernel : BinaryGibbsKernel, CategoricalGibbsKernel or GeneralGibbsKernel
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
