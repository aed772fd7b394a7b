"""The model file's vocabulary: its names, the estimators and fields it may hold, JSON and the checksum."""

from __future__ import annotations

import hashlib

import numpy as np

from .. import estimators as _estimators
from ..estimators._protocol import KINDS, STATE_ATTRIBUTES

#: The ``format`` entry of every header.
FORMAT_NAME = "skmrf-model"
#: The version this module writes; :func:`~skmrf.io.load_model` reads versions 1 to it.
FORMAT_VERSION = 2
#: The oldest version :func:`~skmrf.io.load_model` reads.
OLDEST_VERSION = 1

#: The estimators a file may hold, by class name: every public estimator of skmrf that declares
#: a state (``__skmrf_kind__``; ``MLEInducedLikelihood`` is a likelihood over parameters, not a
#: model of X, and has none).
CLASSES = {
    name: cls
    for name, cls in ((n, getattr(_estimators, n)) for n in _estimators.__all__)
    if isinstance(cls, type) and getattr(cls, "__skmrf_kind__", None) in KINDS
}

#: Fitted attributes that the state holds (written from ``__skmrf_state__``, set by
#: ``__skmrf_set_state__``), by kind, with the two every estimator has, written on their own.
OWN = {kind: STATE_ATTRIBUTES[kind] | {"n_features_in_", "feature_names_in_"} for kind in KINDS}
#: The model arrays of a file, by kind (see the docstring of :mod:`skmrf.io`).
ARRAYS = {
    "discrete": {"n_states", "theta", "log_partition", "log_partition_std"},
    "gaussian": {
        "location",
        "scale",
        "precision_data",
        "precision_indices",
        "precision_indptr",
        "adjacency_indices",
        "adjacency_indptr",
        "is_positive_definite",
        "log_partition",
    },
}

#: The values a string-valued fitted attribute may take. A string attribute not listed
#: here is refused on load (its meaning is unknown, so it cannot be validated): an
#: estimator that adds one adds it here.
FITTED_CHOICES = {
    "score_method_": {"exact", "ais", "bound", "pseudo"},
    "decompose_": {"none", "subnetworks", "components"},
    "solver_": {"newton", "regression", "sparse", "chordal"},
    "newton_start_": {"lap", "stationary"},
}
#: Fitted attributes that are counts (a JSON integer, never a boolean, >= 0).
FITTED_COUNTS = {
    "n_iter_",
    "n_groups_",
    "n_records_",
    "n_subnetworks_",
    "inferences_per_iteration_",
    "max_neighbourhood_size_",
}
#: Fitted attributes that are flags (a JSON boolean).
FITTED_FLAGS = {"converged_"}
#: Fitted attributes that may be a dict (saved by :func:`dict_entry`): a per-order ``alpha_``.
FITTED_DICTS = {"alpha_"}
#: Fitted attributes that are real numbers (a JSON number, never a boolean).
FITTED_REALS = {
    "alpha_",
    "acceptance_rate_",
    "distance_bound_",
    "lipschitz_",
    "log_likelihood_",
    "max_coupling_",
    "mixing_constant_",
    "mixing_rate_",
    "pseudo_log_likelihood_",
    "repair_factor_",
    "suff_stat_bound_",
}

#: Parameter objects a file may hold, by class name (their own parameters are plain JSON).
PARAMETER_OBJECTS = {
    cls.__name__: cls
    for cls in (_estimators.AdaptiveSchedule, _estimators.MomentMatchingSchedule, _estimators.TheorySchedule)
}


class Bad(Exception):
    """A check failed: ``field`` and what is wrong, turned into a ModelFileError by ``load_model``."""

    def __init__(self, field, problem):
        super().__init__(field, problem)
        self.field, self.problem = field, problem


# -- JSON ---------------------------------------------------------------------------
def to_json(value):
    """``value`` as plain JSON types (numpy scalars to Python, tuples to lists); TypeError if impossible."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufU":
        return to_json(value.tolist())
    raise TypeError(type(value).__name__)


def dict_entry(value):
    """``{"object": "dict", "items": [[key, value], ...]}`` of a dict of integer or string keys and
    JSON values (PseudoLikelihoodEstimator's per-order ``alpha``: JSON object keys would be strings)."""
    if type(value) is not dict or not all(isinstance(k, (str, int, np.integer)) for k in value):
        raise TypeError(type(value).__name__)
    return {"object": "dict", "items": [[to_json(k), to_json(v)] for k, v in value.items()]}


def restore_dict(field, entry):
    """The dict saved by :func:`dict_entry`."""
    items = entry.get("items")
    if (
        set(entry) != {"object", "items"}
        or type(items) is not list
        or not all(
            type(p) is list and len(p) == 2 and type(p[0]) in (int, str) and type(p[1]) in (int, float, str)
            for p in items
        )
    ):
        raise Bad(field, f"is {entry!r}, not {{'object': 'dict', 'items': [[key, number or string], ...]}}")
    return {k: v for k, v in items}


def parameter_object(value):
    """``{"object": class name, "params": {...}}`` of a parameter object (TypeError if one is not JSON)."""
    return {"object": type(value).__name__, "params": {k: to_json(v) for k, v in value.get_params().items()}}


def restore_parameter_object(key, entry):
    """The parameter object saved by :func:`parameter_object`, its class and parameters checked."""
    field = f"params.{key}"
    if entry.get("object") == "dict":
        return restore_dict(field, entry)
    if set(entry) != {"object", "params"} or entry["object"] not in PARAMETER_OBJECTS:
        raise Bad(field, f"is {entry!r}, not {{'object': one of {sorted(PARAMETER_OBJECTS)}, 'params': {{...}}}}")
    cls = PARAMETER_OBJECTS[entry["object"]]
    values = entry["params"]
    defaults = cls().get_params()
    if type(values) is not dict or not set(values) <= set(defaults):
        raise Bad(f"{field}.params", f"is not an object of {cls.__name__}'s parameters ({sorted(defaults)})")
    obj = cls(**values)
    try:
        obj._validate_params()  # scikit-learn's parameter validation, as fit runs it
    except (ValueError, TypeError) as exc:
        raise Bad(f"{field}.params", f"are invalid: {exc}") from None
    return obj


def is_numeric_array(value):
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf"


def is_label(value):
    """A column label a file can hold: a string or an integer (never a boolean)."""
    return isinstance(value, (str, int, np.integer)) and not isinstance(value, (bool, np.bool_))


def labels_entry(value):
    """``{"type", "values"}`` for a list, tuple or 1-D object/str array of labels, else None."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.dtype.kind not in "OU":
            return None
        kind = "ndarray"
    elif isinstance(value, (list, tuple)):
        kind = type(value).__name__
    else:
        return None
    values = list(value)
    if not all(is_label(v) for v in values):
        return None
    return {"type": kind, "values": [v if isinstance(v, str) else int(v) for v in values]}


# -- checksum -------------------------------------------------------------------------
def digest(header_text, arrays):
    """SHA-256 hex digest of the header text and every array (name, dtype, shape, bytes), by name."""
    h = hashlib.sha256(header_text.encode("utf-8"))
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()
