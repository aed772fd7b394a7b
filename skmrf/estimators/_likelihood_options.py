"""The likelihood terms of :class:`~skmrf.MetropolisHastingsMRF` that have settings, as parameter
objects (like the schedules of :class:`~skmrf.MCMCMaxLikelihood`): each owns exactly the settings
that mean something to it, so none is silently ignored, and ``GridSearchCV`` reaches them as
``likelihood__n_particles``. The MLE-induced likelihood's object is
:class:`~skmrf.MLEInducedLikelihood` itself.
"""

from __future__ import annotations

from numbers import Integral

from sklearn.base import BaseEstimator

from .._utils._sklearn_compat import Interval

__all__ = ["ExchangeAlgorithm", "LaplaceApproximation", "PersistentChains"]


class LaplaceApproximation(BaseEstimator):
    """The Laplace approximation of the likelihood, for :class:`~skmrf.MetropolisHastingsMRF`.

    A Gaussian at the agreement-model MLE with the Fisher information: exact by the junction tree
    where it fits, else estimated from ``n_particles`` Gibbs draws.

    Parameters
    ----------
    n_particles : int, default=1000
        Gibbs draws of a sampled Fisher information (used beyond the junction tree's
        ``max_bytes`` only).

    Examples
    --------
    >>> from skmrf import MetropolisHastingsMRF
    >>> from skmrf.estimators import LaplaceApproximation
    >>> est = MetropolisHastingsMRF("chain", likelihood=LaplaceApproximation(n_particles=500))
    >>> est.get_params()["likelihood__n_particles"]
    500
    """

    _parameter_constraints: dict = {"n_particles": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, n_particles=1000):
        self.n_particles = n_particles


class PersistentChains(BaseEstimator):
    """Persistent Markov chains as the likelihood term of :class:`~skmrf.MetropolisHastingsMRF`.

    Particles advanced ``n_sweeps`` Gibbs sweeps under each proposal (the MLE-induced likelihood
    paper's Supplement, Eq. 15); an approximation.

    Parameters
    ----------
    n_particles : int, default=1000
        Particles per chain.
    n_sweeps : int, default=1
        Gibbs sweeps per step (the paper's ``k``).

    Examples
    --------
    >>> from skmrf import MetropolisHastingsMRF
    >>> from skmrf.estimators import PersistentChains
    >>> est = MetropolisHastingsMRF("chain", likelihood=PersistentChains(n_particles=200, n_sweeps=2))
    >>> est.get_params()["likelihood__n_sweeps"]
    2
    """

    _parameter_constraints: dict = {
        "n_particles": [Interval(Integral, 1, None, closed="left")],
        "n_sweeps": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_particles=1000, n_sweeps=1):
        self.n_particles = n_particles
        self.n_sweeps = n_sweeps


class ExchangeAlgorithm(BaseEstimator):
    """The single-variable exchange algorithm, for :class:`~skmrf.MetropolisHastingsMRF`.

    Eq. 14 of the MLE-induced likelihood paper with one auxiliary data set per step, drawn
    exactly by the junction tree's forward sampler (the chain then targets the exact posterior);
    where the treewidth is too large, by ``100 * n_sweeps`` Gibbs sweeps started at the data, an
    approximation.

    Parameters
    ----------
    n_sweeps : int, default=1
        Without the junction tree: the auxiliary data set is ``100 * n_sweeps`` Gibbs sweeps from
        the data.

    Examples
    --------
    >>> from skmrf import MetropolisHastingsMRF
    >>> from skmrf.estimators import ExchangeAlgorithm
    >>> MetropolisHastingsMRF("chain", likelihood=ExchangeAlgorithm()).get_params()["likelihood__n_sweeps"]
    1
    """

    _parameter_constraints: dict = {"n_sweeps": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, n_sweeps=1):
        self.n_sweeps = n_sweeps
