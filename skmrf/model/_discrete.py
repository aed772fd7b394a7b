"""The discrete MRF normalised with respect to zero (see :mod:`skmrf._parametrisation`)."""

from __future__ import annotations

import numbers
from functools import cached_property

import networkx as nx
import numpy as np

from .._parametrisation import CliqueLayout
from .._utils._docstrings import fill_doc
from .._utils._mcmc_diagnostics import RHAT_MAX, split_rhat
from .._utils._warnings import warn
from .._utils.validation import check_generator, check_n_samples
from ..exceptions import SamplingWarning
from ..graphs import MRFGraph, resolve_graph
from ..inference._conditionals import ConditionalPlan
from ..inference._gibbs import GibbsSampler
from ..inference._junction_tree import JunctionTree
from . import _queries

__all__ = ["DiscreteMRF", "SamplingWarning"]

#: ``sample(method="gibbs")`` checks that its chains mixed when it draws at least this many
#: samples (one chain each) with at least ``2 * MIX_CHECKS`` sweeps: split R-hat over fewer
#: chains fluctuates too much to tell. Measured on random 5x5 models (scale 0.3 to 1.0, 2 and 3
#: states, 100 seeds each): no warning at 20 or 50 chains; with 8 chains and 10 checkpoints,
#: 5 to 8 % of the samplings of well-mixing models warned.
MIX_MIN_CHAINS = 20
#: Checkpoints over the second half of the sweeps at which the chains' statistics are recorded.
MIX_CHECKS = 20


class DiscreteMRF:
    """A discrete Markov random field normalised with respect to zero.

    Parameters
    ----------
    graph : MRFGraph or any graph form accepted by :func:`skmrf.graphs.resolve_graph`
        The structure; resolved against ``len(n_states)`` variables.
    n_states : int or array-like of int
        Number of states of each variable (at least 2; an int means all).
    theta : array-like of shape (n_params,), optional
        Parameters, blocks in :attr:`cliques` order, each block C-order over
        the non-zero states. Zero (the uniform distribution) if omitted.
    n_variables : int, optional
        Needed only when ``n_states`` is an int and ``graph`` is not an
        :class:`~skmrf.graphs.MRFGraph`.

    Attributes
    ----------
    graph : MRFGraph
    cliques : tuple of tuple of int
        The potential blocks, in parameter order.
    n_states : ndarray of shape (n_variables,)
    theta : ndarray of shape (n_params,)
    layout : skmrf._parametrisation.CliqueLayout
        Index bookkeeping of the blocks and full tables.

    Examples
    --------
    >>> from skmrf.model import DiscreteMRF
    >>> m = DiscreteMRF([(0, 1)], n_states=2, n_variables=2, theta=[0.5, -0.2, 1.0])
    >>> m.cliques
    ((0,), (1,), (0, 1))
    >>> round(float(m.log_partition()), 6)
    1.965257
    """

    def __init__(self, graph, n_states, theta=None, n_variables=None):
        if np.ndim(n_states) == 0:
            if n_variables is None:
                if isinstance(graph, MRFGraph):
                    n_variables = graph.n_variables
                elif isinstance(graph, nx.Graph):
                    n_variables = graph.number_of_nodes()
                else:
                    raise ValueError("Give n_variables or one n_states per variable.")
            n_states = np.full(n_variables, n_states)
        n_states = np.asarray(n_states, dtype=np.int64)
        if n_states.ndim != 1 or np.any(n_states < 1):
            raise ValueError("n_states must be positive integers, one per variable.")
        self.n_states = n_states
        self.graph = resolve_graph(graph, len(n_states))
        self.layout = CliqueLayout(self.graph.cliques, n_states)
        if theta is None:  # not copied: its pages take no memory until written (a model about to be fitted)
            self.theta = np.zeros(self.layout.n_params)
            return
        theta = np.array(theta, dtype=np.float64)
        if theta.shape != (self.layout.n_params,):
            raise ValueError(f"theta has shape {theta.shape}; this model has {self.layout.n_params} parameters.")
        if not np.all(np.isfinite(theta)):
            raise ValueError("theta contains NaN or inf.")
        self.theta = theta

    # -- structure ---------------------------------------------------------
    @property
    def cliques(self):
        """The potential blocks (``graph.cliques``), in parameter order."""
        return self.graph.cliques

    @property
    def n_variables(self) -> int:
        """Number of variables (``len(n_states)``)."""
        return len(self.n_states)

    @property
    def n_params(self) -> int:
        """Number of parameters: the length of :attr:`theta`."""
        return self.layout.n_params

    def _clique_index(self, clique) -> int:
        """The index of ``clique``, given by variable indices (integers) or by the graph's variable
        names (anything else: the columns of a DataFrame fit)."""
        names = getattr(self.graph, "names", None) or ()
        position = {name: i for i, name in enumerate(names)}
        try:
            key = tuple(sorted(int(v) if isinstance(v, numbers.Integral) else position[v] for v in clique))
        except (TypeError, KeyError):
            known = f"; its variables are named {', '.join(map(repr, names[:8]))}{', ...' if len(names) > 8 else ''}"
            raise ValueError(
                f"{tuple(clique)!r} names no variables of this model: give variable indices"
                + (known if names else "")
                + "."
            ) from None
        try:
            return self._clique_lookup[key]
        except KeyError:
            raise ValueError(f"{tuple(clique)!r} is not a clique of this model.") from None

    @cached_property
    def _clique_lookup(self):
        return {c: i for i, c in enumerate(self.cliques)}

    def potential(self, clique, theta=None):
        """The parameter block of ``clique``, axes in sorted variable order.

        Parameters
        ----------
        clique : sequence of int or of variable names
            The variables of one of :attr:`cliques`, in any order: their indices, or their
            names (``graph.names``: the columns of the DataFrame the model was fitted on).
        theta : ndarray of shape (n_params,), optional
            Any vector laid out like :attr:`theta` (the standard errors of an estimator's
            ``standard_errors``, for example); :attr:`theta` itself if omitted.

        Returns
        -------
        ndarray of shape (K_i - 1 for i in sorted(clique))
            A view of the block over the non-zero states: writing into it changes
            :attr:`theta` (or the vector given).

        Raises
        ------
        ValueError
            If ``clique`` is not a clique of this model, or ``theta`` has the wrong length.
        """
        k = self._clique_index(clique)
        values = self.theta if theta is None else np.asarray(theta)
        if values.shape != (self.n_params,):
            raise ValueError(f"theta has shape {values.shape}; this model has {self.n_params} parameters.")
        lo, hi = self.layout.block_offsets[k], self.layout.block_offsets[k + 1]
        return values[lo:hi].reshape(self.layout.block_shapes[k])

    def get_junction_tree(self, max_bytes=None):
        """The :class:`~skmrf.inference.JunctionTree` of this structure, built once.

        Parameters
        ----------
        max_bytes : int, optional
            Memory budget of one calibration; 2 GiB if omitted.

        Returns
        -------
        skmrf.inference.JunctionTree
            The junction tree, cached on the model after the first call.

        Raises
        ------
        skmrf.exceptions.TreewidthError
            A ``ValueError``, when exact inference would exceed ``max_bytes``;
            on a graph far too wide this is found early in the elimination.
        """
        tree = self.__dict__.get("_junction_tree")
        if tree is None:
            tree = JunctionTree(self.n_states, self.cliques, max_bytes=max_bytes)
            self._junction_tree = tree
        tree.check_memory(max_bytes)
        return tree

    @property
    def junction_tree(self):
        """The junction tree within the default memory budget (see :meth:`get_junction_tree`)."""
        return self.get_junction_tree()

    @property
    def treewidth(self) -> int:
        """Treewidth of the elimination order used by :attr:`junction_tree`."""
        return self.junction_tree.treewidth

    # -- statistics --------------------------------------------------------
    @fill_doc
    def sufficient_statistics(self, X):
        """Feature counts ``sum_n phi(x_n)`` of integer data X, in one pass.

        Parameters
        ----------
        %(model_X)s

        Returns
        -------
        ndarray of int64 of shape (n_params,)
            For every parameter (in :attr:`theta` order), the number of rows
            in which its clique takes its joint state.
        """
        X = np.asarray(X)
        return self.layout.table_counts(X)[self.layout.theta_pos]

    # -- inference ---------------------------------------------------------
    def calibrate(self, evidence=None, max_bytes=None):
        """Calibrate the junction tree at the current parameters.

        Parameters
        ----------
        evidence : dict {variable: state}, optional
            Observed values; the calibration is then conditioned on them and
            its ``log_z`` is the log of the unnormalised evidence mass.
        max_bytes : int, optional
            Memory budget of the calibration; 2 GiB if omitted.

        Returns
        -------
        skmrf.inference._junction_tree.Calibration
            ``log Z`` (``log_z``), the clique marginals and exact sampling.

        Raises
        ------
        skmrf.exceptions.TreewidthError
            When the calibration would exceed ``max_bytes``.
        """
        return self.get_junction_tree(max_bytes).calibrate(
            self.layout.full_tables(self.theta), self.layout, evidence=evidence, max_bytes=max_bytes
        )

    def log_partition(self) -> float:
        """``log Z`` by the junction tree.

        Returns
        -------
        float
            The log partition function at the current :attr:`theta`.
        """
        return self.calibrate().log_z

    def marginals(self) -> dict:
        """Joint marginal table of every clique, by the junction tree.

        Returns
        -------
        dict
            ``{clique: ndarray of shape (K_i for i in clique)}`` for every
            clique of :attr:`cliques`: the probabilities of its joint states,
            axes in sorted variable order.
        """
        flat = self.calibrate().clique_marginals()
        lay = self.layout
        return {
            c: flat[lay.table_offsets[k] : lay.table_offsets[k + 1]].reshape(lay.table_shapes[k])
            for k, c in enumerate(self.cliques)
        }

    def expected_statistics(self):
        """Model expectation of the features, ``E[phi(x)]`` (the gradient of ``log Z``).

        Returns
        -------
        ndarray of shape (n_params,)
            The probability of the joint state of every parameter's clique,
            in :attr:`theta` order.
        """
        return self.calibrate().clique_marginals()[self.layout.theta_pos]

    @fill_doc
    def log_prob(self, X):
        """Exact log-probability of every row of integer data X.

        Parameters
        ----------
        %(model_X)s

        Returns
        -------
        ndarray of shape (n_samples,)
            ``log p(x)`` of each row, with ``log Z`` by the junction tree.
        """
        X = np.asarray(X)
        return self.layout.energy(X, self.theta) - self.log_partition()

    @fill_doc
    def log_pseudo_likelihood(self, X):
        """``sum_i log p(x_i | x_-i)`` for every row of integer data X (Besag).

        Parameters
        ----------
        %(model_X)s

        Returns
        -------
        ndarray of shape (n_samples,)
            The log pseudo-likelihood of each row (not a log-likelihood: no
            partition function is involved).
        """
        X = np.asarray(X)
        plan = ConditionalPlan(self.layout, np.arange(self.n_variables))
        return plan.log_conditionals(self.layout.full_tables(self.theta), X).sum(axis=1)

    # -- queries given evidence ----------------------------------------------
    def conditional_marginals(
        self, X, *, return_std=False, max_bytes=None, n_chains=20, n_sweeps=400, random_state=None
    ):
        """``p(x_j = k | the row's observed entries)`` of every variable of every row.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_variables)
            Evidence: integer states where observed; NaN (or None) where not, the masked
            entries of a ``numpy.ma.MaskedArray``, or missing values of a pandas DataFrame. Never
            modified.
        return_std : bool, default=False
            Also return the Monte-Carlo standard error of every entry (zero where exact).
        max_bytes : int, optional
            Memory budget of one junction-tree calibration of one component of a row's
            missing entries (16 MiB if omitted: at most about 0.35 s of CPU a component);
            a larger component is estimated by Gibbs chains, with a warning.
        n_chains, n_sweeps : int, default=20, 400
            Clamped Gibbs chains per row and sweeps per chain (the first half discarded), for
            components too wide for a junction tree only.
        random_state : int, RandomState, Generator or None
            Seeds those chains.

        Returns
        -------
        probabilities : ndarray of shape (n_rows, n_variables, max(n_states))
            ``probabilities[r, j, k] = p(x_j = k | observed entries of row r)``: one-hot where
            ``x_j`` is observed, zero for states ``k >= n_states[j]``.
        std : ndarray of the same shape
            Only with ``return_std``.

        Raises
        ------
        ValueError
            A state outside ``0..n_states[j] - 1`` or not an integer (naming the column and the
            row), or X of the wrong shape. (With finite parameters every evidence has positive
            probability.)

        Warns
        -----
        ApproximateInferenceWarning
            When some entries were estimated by Gibbs chains, with their largest standard error,
            and what to raise when it is above 0.01.

        Notes
        -----
        A row's missing entries split into the connected components of the graph restricted to
        them; components meet only at observed variables, so they are independent given the
        row, and each involves only the cliques holding one of its variables (Refaat and
        Darwiche's evidence pruning). A component with at most 1024 joint states is enumerated,
        all of them in one vectorised batch; a larger one is calibrated on a junction tree over
        its own variables, batched over the rows whose component has the same variables. Both
        are exact (to rounding). Only a component whose tree exceeds ``max_bytes`` is left to
        ``n_chains`` Gibbs chains per row with its evidence clamped, vectorised over rows and
        chains; their Rao-Blackwellised estimate (the mean of each draw's full conditional over
        the second half of the sweeps) has a standard error from the spread of the chains'
        means. Distinct rows are computed once.

        Examples
        --------
        >>> import numpy as np
        >>> from skmrf.model import DiscreteMRF
        >>> m = DiscreteMRF([(0, 1)], n_states=2, n_variables=2, theta=[0.5, -0.2, 1.0])
        >>> m.conditional_marginals(np.array([[1, np.nan]]))[0, 1].round(4)
        array([0.31, 0.69])
        """
        return _queries.conditional_marginals(self, X, return_std, max_bytes, n_chains, n_sweeps, random_state)

    def impute(self, X, method="marginal", *, random_state=None, max_bytes=None, n_chains=20, n_sweeps=400):
        """Fill the missing entries of every row of X from the model given the row's observed entries.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_variables)
            Evidence, missing entries as in :meth:`conditional_marginals`; never modified.
        method : {"marginal", "map", "sample"}, default="marginal"
            ``"marginal"``: each entry's conditional mode, ``argmax_k p(x_j = k | evidence)``
            (most accurate entry by entry). ``"map"``: the jointly most probable completion
            (max-product on the junction tree; one row's entries chosen together). ``"sample"``:
            one draw from the conditional distribution of the missing entries (multiple
            imputation: call it again for another).
        random_state : int, RandomState, Generator or None
            Seeds ``"sample"`` and the Gibbs chains.
        max_bytes : int, optional
            As in :meth:`conditional_marginals`.
        n_chains, n_sweeps : int, default=20, 400
            As in :meth:`conditional_marginals`.

        Returns
        -------
        ndarray of int64 of shape (n_rows, n_variables), or DataFrame
            X with every missing entry filled (observed entries unchanged); a pandas DataFrame
            with X's index and columns when X is one.

        Warns
        -----
        ApproximateInferenceWarning
            Where components are too wide for a junction tree (see
            :meth:`conditional_marginals`): ``"marginal"`` takes the mode of the Gibbs
            estimate, ``"sample"`` the last state of one chain, and ``"map"`` the most probable
            of the chains' last states raised to a local maximum by iterated conditional modes
            (approximate, said in the warning).

        Examples
        --------
        >>> import numpy as np
        >>> from skmrf.model import DiscreteMRF
        >>> m = DiscreteMRF([(0, 1)], n_states=2, n_variables=2, theta=[0.5, -0.2, 1.0])
        >>> m.impute(np.array([[1, np.nan], [0, np.nan]]))
        array([[1, 1],
               [0, 0]])
        """
        return _queries.impute(self, X, method, random_state, max_bytes, n_chains, n_sweeps)

    def sample(self, n_samples, random_state=None, method="gibbs", n_sweeps=200):
        """Draw samples.

        Parameters
        ----------
        n_samples : int
            Number of samples to draw.
        random_state : int, RandomState or Generator, optional
            Seeds the draws; fresh OS entropy if omitted.
        method : {"gibbs", "exact"}
            ``"exact"``: forward sampling on the calibrated junction tree
            (independent exact draws). ``"gibbs"``: ``n_samples`` independent
            chains from uniform random states, each run ``n_sweeps`` sweeps of
            the chromatic Gibbs sampler.
        n_sweeps : int, default=200
            Sweeps per Gibbs chain.

        Returns
        -------
        ndarray of shape (n_samples, n_variables), dtype int64
            One sampled state of every variable per row.

        Warns
        -----
        SamplingWarning
            With ``"gibbs"``, at least 20 samples and 40 sweeps: when the chains did not
            mix, i.e. the split R-hat over the chains of their energy or of their fraction of
            non-zero states, recorded at 20 points of the second half of the sweeps, exceeds
            1.1 (chains from different starts still disagree). The draws are the same as
            without the check.
        """
        n_samples = check_n_samples(n_samples)
        if method not in ("gibbs", "exact"):
            raise ValueError(f"method must be 'gibbs' or 'exact'; got {method!r}.")
        if method == "gibbs" and (
            isinstance(n_sweeps, (bool, np.bool_)) or not isinstance(n_sweeps, (int, np.integer)) or n_sweeps < 1
        ):
            raise ValueError(f"n_sweeps must be a positive integer; got {n_sweeps!r}.")
        rng = check_generator(random_state)
        if method == "exact":
            return self.calibrate().sample(n_samples, rng)
        sampler = GibbsSampler(self)
        states = sampler.random_states(n_samples, rng)
        if n_samples < MIX_MIN_CHAINS or n_sweeps < 2 * MIX_CHECKS:
            return sampler.run(states, n_sweeps, rng)
        return self._run_checked(sampler, states, n_sweeps, rng)

    def _run_checked(self, sampler, states, n_sweeps, rng):
        """``sampler.run(states, n_sweeps, rng)``, the same draws, and a warning if the chains did not mix.

        The second half of the sweeps runs in :data:`MIX_CHECKS` segments; after each, every
        chain's energy and fraction of non-zero states are recorded, and their split R-hat over
        the chains (one chain per sample, from independent uniform starts) must stay below
        ``RHAT_MAX``: chains stuck in different modes (a strongly coupled model) disagree.
        """
        segment = n_sweeps // 2 // MIX_CHECKS
        states = sampler.run(states, n_sweeps - segment * MIX_CHECKS, rng)
        trace = np.empty((len(states), MIX_CHECKS, 2))
        for t in range(MIX_CHECKS):
            states = sampler.run(states, segment, rng)
            trace[:, t, 0] = self.layout.energy(states, self.theta)
            trace[:, t, 1] = (states > 0).mean(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            rhat = split_rhat(trace)
        # A statistic that never changes within any half-chain has R-hat inf: only a sign of
        # no mixing when the chains also differ (a frozen but common value is a point mass).
        differ = np.ptp(trace[:, -1], axis=0) > 0
        worst = np.where(np.isinf(rhat) & ~differ, 1.0, rhat)
        if np.nanmax(worst) > RHAT_MAX:
            what = ["energy", "fraction of non-zero states"][int(np.nanargmax(worst))]
            warn(
                f"The {len(states)} Gibbs chains of DiscreteMRF.sample did not mix in {n_sweeps} sweeps: the "
                f"split R-hat of their {what} over the last {segment * MIX_CHECKS} sweeps is "
                f"{np.nanmax(worst):.3g} > {RHAT_MAX} (chains from different starts still disagree), so the "
                "samples are not draws from the model. Raise n_sweeps, or sample with method='exact' where "
                "the junction tree fits.",
                SamplingWarning,
            )
        return states

    def __repr__(self):
        return f"DiscreteMRF(n_variables={self.n_variables}, n_cliques={len(self.cliques)}, n_params={self.n_params})"
