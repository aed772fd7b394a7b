"""Synthetic models and data for tests, examples and benchmarks."""

from __future__ import annotations

from .model import DiscreteMRF
from .utils.validation import check_generator

__all__ = ["make_random_mrf", "sample_random_mrf"]


def make_random_mrf(graph, n_states=2, scale=1.0, n_variables=None, random_state=None) -> DiscreteMRF:
    """A model with parameters drawn uniformly from ``[-scale, scale]``.

    Parameters
    ----------
    graph : any graph form accepted by :class:`~skmrf.model.DiscreteMRF`
    n_states : int or array-like of int, default=2
    scale : float, default=1.0
        The LAP paper's experiments use ``scale=1``.
    n_variables : int, optional
        Needed when ``graph`` is a list of cliques and ``n_states`` an int.
    random_state : int, RandomState, Generator or None

    Returns
    -------
    DiscreteMRF
    """
    model = DiscreteMRF(graph, n_states, n_variables=n_variables)
    model.theta = check_generator(random_state).uniform(-scale, scale, model.n_params)
    return model


def sample_random_mrf(graph, n_samples, n_states=2, scale=1.0, n_variables=None, method="exact", random_state=None):
    """Draw a random model (see :func:`make_random_mrf`) and ``n_samples`` rows from it.

    Returns
    -------
    X : ndarray of shape (n_samples, n_variables)
    model : DiscreteMRF
    """
    rng = check_generator(random_state)
    model = make_random_mrf(graph, n_states, scale, n_variables, rng)
    return model.sample(n_samples, rng, method=method), model
