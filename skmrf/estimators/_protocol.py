"""The protocol between the estimators and :mod:`skmrf.io` and :mod:`skmrf.plotting` (#25, item 5).

As scikit-learn reads what it needs of an estimator through ``__sklearn_tags__``, skmrf's
io and plotting read the estimators through a few dunder members and their public fitted
attributes, never through their classes or private methods. An estimator io can save
implements

``__skmrf_kind__`` (class attribute)
    ``"discrete"`` or ``"gaussian"``: which state it has (the ``kind`` of a model file).
``__skmrf_state__(self) -> dict``
    The fitted model's defining arrays and fields (:data:`STATE_FIELDS`), the estimator's own
    arrays (not copies: read them, do not modify them). Discrete: ``n_states`` (int64,
    ``(n_features,)``), ``theta`` (float64, ``(n_params,)``, blocks in the order of
    ``model_.cliques``), ``factors`` (the maximal factors of ``graph_``, tuples of column
    indices), ``names`` (``graph_.names``: node labels or None), and ``log_partition`` /
    ``log_partition_std`` (floats) where the estimator has them. Gaussian: ``location``,
    ``scale`` (float64, ``(n_features,)``), ``precision`` (``standardized_precision_``) and
    ``adjacency`` (``adjacency_``) as :class:`scipy.sparse.csr_array`,
    ``is_positive_definite`` (bool) and ``log_partition`` (float, NaN when not positive
    definite).
``__skmrf_set_state__(self, state) -> self``
    The inverse, on an estimator whose parameters are set: builds the attributes of
    :data:`STATE_ATTRIBUTES` from ``state``, exactly (a state read back gives the same scores,
    bit for bit). It trusts ``state``: :func:`skmrf.io.load_model` checks a file's fields
    before it calls it. The other fitted attributes (``n_features_in_``, ``score_method_``,
    ``n_iter_``, ...) are public and set as attributes.

and an estimator that records a convergence trace implements ``__skmrf_trace__(self)``,
returning a :class:`Trace` (or None when it kept none, as a model read from a file), which
:func:`skmrf.plotting.plot_trace` draws.

A fitted discrete estimator exposes ``model_`` (a :class:`~skmrf.model.DiscreteMRF`) and a
Gaussian one ``precision_``: plotting reads those attributes, whatever the class.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["KINDS", "STATE_ATTRIBUTES", "STATE_FIELDS", "Trace"]

#: The values of ``__skmrf_kind__``.
KINDS = ("discrete", "gaussian")

#: The keys ``__skmrf_state__`` returns, by kind (the discrete ``log_partition`` and
#: ``log_partition_std`` only where the estimator has them).
STATE_FIELDS = {
    "discrete": ("n_states", "theta", "factors", "names", "log_partition", "log_partition_std"),
    "gaussian": ("location", "scale", "precision", "adjacency", "is_positive_definite", "log_partition"),
}

#: The fitted attributes ``__skmrf_set_state__`` sets, by kind: what the state determines.
STATE_ATTRIBUTES = {
    "discrete": frozenset({"model_", "graph_", "n_states_", "log_partition_", "log_partition_std_"}),
    "gaussian": frozenset(
        {
            "location_",
            "scale_",
            "standardized_precision_",
            "precision_",
            "covariance_",
            "adjacency_",
            "is_positive_definite_",
            "log_partition_",
        }
    ),
}


class Trace(NamedTuple):
    """A convergence trace, as ``__skmrf_trace__`` returns it and :func:`~skmrf.plotting.plot_trace` draws it.

    Parameters
    ----------
    series : dict
        ``{key: ndarray of shape (n_chains, n_steps)}``: one line per chain and key.
    xlabel : str
        What a step is (``"step"``, ``"iteration"``, ``"kept draw"``).
    ylabel : str or None, default=None
        What the values are.
    log_scale : bool, default=False
        Draw the values on a log scale.
    keys_from : str or None, default=None
        The attribute the keys come from, for messages: string keys name entries of it
        (``"trace_"``), integer keys are indices of its rows (``"edges_"``, one parameter a
        row). None: the keys are not chosen (``plot_trace`` ignores ``keys`` and draws no legend).
    default_keys : tuple, default=()
        The keys drawn when ``keys`` is None (all of ``series`` when empty).
    labels : dict or None, default=None
        The legend label of each key (None: the key itself).
    first_step : int, default=0
        The x value of the first step.
    marker : str or None, default=None
        A matplotlib marker for every point (for short traces).
    """

    series: dict
    xlabel: str
    ylabel: str | None = None
    log_scale: bool = False
    keys_from: str | None = None
    default_keys: tuple = ()
    labels: dict | None = None
    first_step: int = 0
    marker: str | None = None
