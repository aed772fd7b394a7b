"""Synthetic models and data for tests, examples and benchmarks."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._utils.validation import check_generator
from .model import DiscreteMRF

__all__ = ["RandomMRFSample", "make_random_mrf", "sample_random_mrf"]


class RandomMRFSample(NamedTuple):
    """What :func:`sample_random_mrf` returns: the data and the model that drew it.

    It unpacks as ``X, model = sample_random_mrf(...)``; ``sample_random_mrf(...).X``
    is the data. Passing the pair itself to an estimator's ``fit`` raises a
    ``TypeError`` that says so.
    """

    X: np.ndarray
    """ndarray of shape (n_samples, n_variables): integer states, one row per sample."""
    model: DiscreteMRF
    """The model with random parameters that the rows were drawn from."""


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
    RandomMRFSample
        A named tuple ``(X, model)``: ``X``, an int64 ndarray of shape
        ``(n_samples, n_variables)``, and ``model``, the :class:`DiscreteMRF`
        it was drawn from. Unpack it (``X, model = sample_random_mrf(...)``)
        or take ``.X``; the pair itself is not data.
    """
    rng = check_generator(random_state)
    model = make_random_mrf(graph, n_states, scale, n_variables, rng)
    return RandomMRFSample(model.sample(n_samples, rng, method=method), model)
