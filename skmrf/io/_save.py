"""Write a fitted estimator: its state (``__skmrf_state__``), parameters and public fitted attributes."""

from __future__ import annotations

import json
import os

import numpy as np
import scipy.sparse as sp

from .. import __version__
from .._utils._atomic import replacing
from .._utils._sklearn_compat import check_is_fitted
from ._format import (
    CLASSES,
    FITTED_DICTS,
    FORMAT_NAME,
    FORMAT_VERSION,
    OWN,
    PARAMETER_OBJECTS,
    dict_entry,
    digest,
    is_numeric_array,
    labels_entry,
    parameter_object,
    to_json,
)

__all__ = ["save_model"]


# Over 60 lines only by its numpydoc docstring (parameters, errors, a doctest); the code is about 30.
def save_model(estimator, path):
    """Save a fitted skmrf estimator to a versioned ``.npz`` file (no pickle).

    The file is written to a temporary file in the same directory and renamed over
    ``path`` only when complete, so a failed or interrupted write leaves any existing
    file at ``path`` unchanged.

    Parameters
    ----------
    estimator : estimator
        A fitted discrete estimator (``LAPEstimator``, ``ExactMaxLikelihood``,
        ``PseudoLikelihoodEstimator``, ``MCMCMaxLikelihood``, ``DecomposedEM``,
        ``MetropolisHastingsMRF``) or Gaussian one (``GaussianLAP``,
        ``GaussianMaxLikelihood``).
    path : str or os.PathLike
        The file to write. ``.npz`` is appended when the name has another suffix.

    Returns
    -------
    str
        The path written (with the suffix that may have been added).

    Raises
    ------
    TypeError
        If ``estimator`` is not one of the classes above.
    sklearn.exceptions.NotFittedError
        If it is not fitted.
    ValueError
        If ``path`` names a directory (ends with a separator, or is an existing
        directory with or without the ``.npz`` suffix).
    FileNotFoundError
        If the directory of ``path`` does not exist.
    OSError
        If writing fails (the disk is full, ...); no file is left behind.

    See Also
    --------
    load_model : Read the file back into a fitted estimator.

    Notes
    -----
    The format is described in the module docstring (:mod:`skmrf.io`). The estimator's
    model is read through its ``__skmrf_state__`` (:mod:`skmrf.estimators._protocol`),
    everything else from its parameters and public fitted attributes.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from skmrf import LAPEstimator
    >>> from skmrf.io import load_model, save_model
    >>> X = np.random.default_rng(0).integers(0, 2, size=(200, 4))
    >>> est = LAPEstimator().fit(X)
    >>> path = save_model(est, os.path.join(tempfile.mkdtemp(), "model.npz"))
    >>> load_model(path).score(X) == est.score(X)
    True
    """
    name = type(estimator).__name__
    if CLASSES.get(name) is not type(estimator):
        raise TypeError(
            f"save_model saves the estimators of skmrf ({', '.join(sorted(CLASSES))}); got {name}. "
            "Save other objects with joblib or pickle."
        )
    check_is_fitted(estimator)
    final = _target(path)
    kind = estimator.__skmrf_kind__
    state = estimator.__skmrf_state__()
    params, not_saved = _params(estimator, kind, state)
    arrays = _state_arrays(kind, state)
    fitted = _fitted(estimator, kind, arrays)
    names = getattr(estimator, "feature_names_in_", None)
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "skmrf_version": __version__,
        "estimator": name,
        "kind": kind,
        "params": params,
        "params_not_saved": not_saved,
        "n_features": int(estimator.n_features_in_),
        "feature_names": None if names is None else [to_json(c) for c in names],
        "graph": _graph_entry(kind, state),
        **fitted,
    }
    text = json.dumps(header)
    _write_atomic(final, {"header": np.array(text), **arrays, "checksum": np.array(digest(text, arrays))})
    return final


def _params(estimator, kind, state):
    """``(params, params_not_saved)``: ``get_params(deep=False)`` as JSON, and the names JSON cannot hold."""
    params, not_saved = {}, []
    for key, value in estimator.get_params(deep=False).items():
        try:
            if type(value) in PARAMETER_OBJECTS.values():
                params[key] = parameter_object(value)
            else:
                params[key] = dict_entry(value) if type(value) is dict else to_json(value)
        except TypeError:
            if key == "graph":
                params[key] = _resolved_graph_param(estimator, kind, state)
            else:
                not_saved.append(key)
    return params, not_saved


def _resolved_graph_param(estimator, kind, state):
    """The resolved structure as lists of columns, for a ``graph`` parameter JSON cannot hold.

    Columns are named when the estimator was fitted on named or labelled columns (so a clone
    refits on the same DataFrame), else numbered.
    """
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        names = getattr(estimator, "feature_labels_in_", None)
    if kind == "discrete":
        factors = [list(f) for f in state["factors"]]
    else:
        adj = sp.triu(state["adjacency"], k=1).tocoo()
        factors = np.column_stack([adj.row, adj.col]).tolist()
    return factors if names is None else [[to_json(names[i]) for i in f] for f in factors]


def _state_arrays(kind, state):
    """The model arrays of a file (see the docstring of :mod:`skmrf.io`) from ``__skmrf_state__``."""
    if kind == "discrete":
        arrays = {"n_states": np.asarray(state["n_states"], dtype=np.int64), "theta": state["theta"]}
        for key in ("log_partition", "log_partition_std"):
            if state.get(key) is not None:
                arrays[key] = np.float64(state[key])
        return arrays
    P, A = sp.csr_array(state["precision"]), sp.csr_array(state["adjacency"])
    return {
        "location": state["location"],
        "scale": state["scale"],
        "precision_data": P.data,
        "precision_indices": P.indices,
        "precision_indptr": P.indptr,
        "adjacency_indices": A.indices,
        "adjacency_indptr": A.indptr,
        "is_positive_definite": np.bool_(state["is_positive_definite"]),
        "log_partition": np.float64(state["log_partition"]),
    }


def _graph_entry(kind, state):
    """The header's ``graph``: the discrete factors and names (Gaussian: null, the pattern is an array)."""
    if kind != "discrete":
        return None
    names = state["names"]
    return {"factors": [list(f) for f in state["factors"]], "names": None if names is None else to_json(list(names))}


def _fitted(estimator, kind, arrays):
    """The header's ``fitted``, ``fitted_labels``, ``fitted_arrays`` and ``fitted_not_saved``: every
    public fitted attribute the state does not hold, by the form a file can hold it in (numeric
    arrays are added to ``arrays`` as ``fitted.<name>``)."""
    fitted, labels, fitted_arrays, not_saved = {}, {}, [], []
    public = {k: v for k, v in vars(estimator).items() if k.endswith("_") and not k.startswith("_")}
    for key, value in public.items():
        if key in OWN[kind]:
            continue
        if is_numeric_array(value):
            arrays[f"fitted.{key}"] = value
            fitted_arrays.append(key)
        elif value is None or isinstance(value, (bool, str, int, float, np.generic)):
            fitted[key] = to_json(value)
        elif key in FITTED_DICTS and type(value) is dict:
            fitted[key] = dict_entry(value)
        elif (entry := labels_entry(value)) is not None:
            labels[key] = entry
        else:
            not_saved.append(key)
    return {"fitted": fitted, "fitted_labels": labels, "fitted_arrays": fitted_arrays, "fitted_not_saved": not_saved}


def _target(path):
    """The file ``save_model`` writes for ``path`` (``.npz`` appended), refusing directories."""
    path = os.fsdecode(os.fspath(path))
    seps = tuple(s for s in (os.sep, os.altsep) if s)
    if not path or path.endswith(seps) or os.path.isdir(path):
        raise ValueError(
            f"save_model: {path!r} is a directory, not a file name; give the file to write, "
            f"such as {os.path.join(path, 'model.npz')!r}."
        )
    final = path if path.endswith(".npz") else path + ".npz"
    if os.path.isdir(final):
        raise ValueError(f"save_model: {final!r} (the name with .npz appended) is a directory; choose another name.")
    folder = os.path.dirname(final) or os.curdir
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"save_model: the directory {folder!r} of {final!r} does not exist; create it first.")
    return final


def _write_atomic(final, entries):
    """Write ``entries`` as an ``.npz`` beside ``final``, synced, then renamed over it (:func:`replacing`)."""
    with replacing(final) as tmp:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except OSError as exc:  # name the file asked for, not the temporary one (OSError picks the subclass)
            raise OSError(exc.errno, exc.strerror, final) from None
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, **entries)
            f.flush()
            os.fsync(f.fileno())
