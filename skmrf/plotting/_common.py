"""What every view reads: the model behind an object (by its attributes, not its class), kinds, Axes."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from ..estimators._protocol import KINDS
from ..model import DiscreteMRF

DISCRETE_KINDS = ("maxabs", "norm")
GAUSSIAN_KINDS = ("partial_correlation", "precision")

TITLES = {
    "maxabs": "couplings (largest entry)",
    "norm": "coupling norms",
    "partial_correlation": "partial correlations",
    "precision": "precision entries",
}


def pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError("skmrf.plotting needs matplotlib: pip install 'skmrf[plot]'.") from exc
    return plt


def axes(ax):
    if ax is None:
        return pyplot().gca()
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise ValueError(f"ax must be a matplotlib Axes (such as plt.subplots()[1]) or None; got {type(ax).__name__}.")
    return ax


def _is_square(P):
    shape = getattr(P, "shape", ())
    return len(shape) == 2 and shape[0] == shape[1]


def source(obj):
    """``("discrete", DiscreteMRF, names)`` or ``("gaussian", obj, names)`` of ``obj``.

    Read from public attributes, whatever the class: a :class:`~skmrf.model.DiscreteMRF`
    itself; an object whose ``model_`` is one (a fitted discrete estimator); an object with a
    square ``precision_`` (a fitted Gaussian one). An skmrf estimator before ``fit``
    (``__skmrf_kind__``) raises ``NotFittedError``; anything else a ValueError.
    """
    if isinstance(obj, DiscreteMRF):
        return "discrete", obj, obj.graph.names
    model = getattr(obj, "model_", None)
    if isinstance(model, DiscreteMRF):
        return "discrete", model, getattr(obj, "feature_names_in_", model.graph.names)
    if _is_square(getattr(obj, "precision_", None)):
        return "gaussian", obj, getattr(obj, "feature_names_in_", None)
    kind = getattr(obj, "__skmrf_kind__", None)
    if kind in KINDS:
        check_is_fitted(obj, "model_" if kind == "discrete" else "precision_")
    raise ValueError(
        f"Expected a fitted discrete or Gaussian skmrf estimator or a DiscreteMRF; got {type(obj).__name__}. "
        "Pass an MRF estimator after fit (or its model_), or an object with a DiscreteMRF model_ or a "
        "square precision_."
    )


def check_kind(kind, family):
    allowed = DISCRETE_KINDS if family == "discrete" else GAUSSIAN_KINDS
    if kind is None:
        return allowed[0]
    if kind not in allowed:
        raise ValueError(f"kind={kind!r} does not apply to a {family} model; use one of {list(allowed)}.")
    return kind


def precision_entries(P, rows, cols):
    """``P[rows, cols]`` as a flat float array, for a dense or a scipy.sparse ``P``."""
    if sp.issparse(P):
        P = sp.csr_array(P)
    return np.asarray(P[rows, cols], dtype=np.float64).ravel()


def precision_pattern(gaussian):
    """The graph of a Gaussian model: its ``adjacency_``, else the off-diagonal non-zeros of ``precision_``."""
    adjacency = getattr(gaussian, "adjacency_", None)
    if adjacency is not None:
        return sp.coo_array(adjacency)
    P = gaussian.precision_
    return sp.coo_array(P != 0) if sp.issparse(P) else sp.coo_array(np.asarray(P) != 0)


def n_features(obj):
    family, model, _ = source(obj)
    return model.n_variables if family == "discrete" else model.precision_.shape[0]


def labels(obj):
    _, _, names = source(obj)
    return [str(i) for i in range(n_features(obj))] if names is None else [str(v) for v in names]


def symmetric_limit(values):
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def is_index(value):
    """Whether ``value`` is an integer (Python or NumPy), not a bool or a float."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def contains(mapping, key):
    """``key in mapping``, False for an unhashable key."""
    try:
        return key in mapping
    except TypeError:  # an unhashable name
        return False
