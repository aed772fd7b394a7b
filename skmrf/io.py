"""Save and load fitted estimators: a versioned ``.npz`` file, no pickle.

A saved model is a NumPy ``.npz`` archive (:func:`numpy.savez_compressed`) read back
with ``allow_pickle=False``, so loading a file cannot run code. It holds one JSON
text entry, ``header``, and plain numeric arrays.

File format, version 1
----------------------
``header`` (a 0-d unicode array holding a JSON object):

``format``
    Always ``"skmrf-model"``.
``format_version``
    The integer ``1``. A reader refuses versions it does not know.
``skmrf_version``
    The version of skmrf that wrote the file (informative).
``estimator``
    The class name, one of the estimators of :mod:`skmrf` (``"LAPEstimator"``, ...).
``kind``
    ``"discrete"`` or ``"gaussian"``: which arrays below are present.
``params``
    ``get_params(deep=False)`` where JSON can hold the value (tuples become lists);
    a ``graph`` that JSON cannot hold (a networkx graph, a matrix) is replaced by its
    resolved list of factors (discrete) or edges (Gaussian), as column names when the
    estimator has ``feature_names_in_``, else as column indices.
``params_not_saved``
    Names of other parameters JSON cannot hold (an ``init`` estimator, a
    ``RandomState``); the loaded estimator has their default values.
``n_features``, ``feature_names``
    ``n_features_in_`` and ``feature_names_in_`` (a list of column names, or null
    when the estimator was fitted on an array without names).
``graph``
    Discrete: ``{"factors": [[i, j], ...], "names": [...] or null}``, the maximal
    factors of ``graph_`` as column indices and its variable labels. Gaussian: null
    (the pattern is in the arrays).
``fitted``
    Every other fitted attribute (name ending in ``_``) whose value is a number,
    a string, a boolean or null, such as ``n_iter_``, ``alpha_``, ``score_method_``.
``fitted_arrays``
    Names of the fitted attributes stored as numeric arrays ``fitted.<name>``.
``fitted_not_saved``
    Names of the fitted attributes neither form can hold (diagnostic objects such as
    ``trace_``); they are absent from the loaded estimator.

Arrays of a discrete model (the fitted :class:`~skmrf.model.DiscreteMRF` ``model_``):

``n_states`` (int64, ``(n_features,)``), ``theta`` (float64, ``(n_params,)``, blocks
in the order of ``model_.cliques``, which the factors determine), and
``log_partition`` / ``log_partition_std`` (float64, 0-d) when the estimator has them.

Arrays of a Gaussian model:

``location``, ``scale`` (float64, ``(n_features,)``); ``precision_data``,
``precision_indices``, ``precision_indptr``: ``standardized_precision_`` in CSR form;
``adjacency_indices``, ``adjacency_indptr``: the CSR pattern ``adjacency_``;
``is_positive_definite`` (bool, 0-d); ``log_partition`` (float64, 0-d).

A loaded estimator scores, and samples with the same seed, exactly as the one that was
saved: every number that ``score_samples`` and ``sample`` read is stored bit for bit.
"""

from __future__ import annotations

import json
import os
import warnings
import zipfile

import numpy as np
import scipy.sparse as sp

from . import __version__
from . import estimators as _estimators
from .estimators._base import BaseDiscreteMRF
from .estimators.gaussian._base import ScaleWarning, _BaseGaussianMRF
from .graphs import MRFGraph
from .model import DiscreteMRF
from .utils._sklearn_compat import check_is_fitted

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "ModelFileError", "load_model", "read_header", "save_model"]

#: The ``format`` entry of every header.
FORMAT_NAME = "skmrf-model"
#: The version this module writes; :func:`load_model` reads versions up to it.
FORMAT_VERSION = 1

#: The estimators a file may hold, by class name: every public estimator of skmrf with a
#: density (``MLEInducedLikelihood`` is a likelihood over parameters, not a model of X).
_CLASSES = {
    name: cls
    for name, cls in ((n, getattr(_estimators, n)) for n in _estimators.__all__)
    if isinstance(cls, type) and issubclass(cls, (BaseDiscreteMRF, _BaseGaussianMRF))
}

# Fitted attributes written by their own code below, not by the generic pass.
_DISCRETE_OWN = {"model_", "graph_", "n_states_", "log_partition_", "log_partition_std_"}
_GAUSSIAN_OWN = {
    "location_",
    "scale_",
    "standardized_precision_",
    "precision_",
    "covariance_",
    "adjacency_",
    "is_positive_definite_",
    "log_partition_",
}
_COMMON_OWN = {"n_features_in_", "feature_names_in_"}


class ModelFileError(ValueError):
    """A file that is not a saved skmrf model, or one this version cannot read."""


# -- JSON helpers ---------------------------------------------------------------
def _to_json(value):
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
        return [_to_json(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufU":
        return _to_json(value.tolist())
    raise TypeError(type(value).__name__)


def _is_numeric_array(value):
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf"


def _public_fitted(est):
    """The public fitted attributes of ``est`` (instance attributes ending in ``_``)."""
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _resolved_graph_param(est):
    """The resolved structure as lists of columns, for a ``graph`` parameter JSON cannot hold.

    Columns are named when the estimator was fitted on named columns (so a clone refits
    on the same DataFrame), else numbered.
    """
    names = getattr(est, "feature_names_in_", None)
    if isinstance(est, BaseDiscreteMRF):
        factors = [list(f) for f in est.graph_.factors]
    else:
        adj = sp.triu(est.adjacency_, k=1).tocoo()
        factors = np.column_stack([adj.row, adj.col]).tolist()
    return factors if names is None else [[str(names[i]) for i in f] for f in factors]


# -- save -----------------------------------------------------------------------
def save_model(estimator, path):
    """Save a fitted skmrf estimator to a versioned ``.npz`` file (no pickle).

    Parameters
    ----------
    estimator : estimator
        A fitted discrete estimator (``LAPEstimator``, ``ExactMaxLikelihood``,
        ``PseudoLikelihoodEstimator``, ``MCMCMaxLikelihood``, ``DecomposedEM``,
        ``MetropolisHastingsMRF``) or Gaussian one (``GaussianLAP``,
        ``GaussianMaxLikelihood``).
    path : str or os.PathLike
        The file to write. NumPy appends ``.npz`` when the name has another suffix.

    Returns
    -------
    str
        The path written (with the suffix NumPy may have added).

    Raises
    ------
    TypeError
        If ``estimator`` is not one of the classes above.
    sklearn.exceptions.NotFittedError
        If it is not fitted.

    See Also
    --------
    load_model : Read the file back into a fitted estimator.

    Notes
    -----
    The format is described in the module docstring (:mod:`skmrf.io`).

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
    if _CLASSES.get(name) is not type(estimator):
        raise TypeError(
            f"save_model saves the estimators of skmrf ({', '.join(sorted(_CLASSES))}); got {name}. "
            "Save other objects with joblib or pickle."
        )
    check_is_fitted(estimator)
    discrete = isinstance(estimator, BaseDiscreteMRF)
    params, not_saved = {}, []
    for key, value in estimator.get_params(deep=False).items():
        try:
            params[key] = _to_json(value)
        except TypeError:
            if key == "graph":
                params[key] = _resolved_graph_param(estimator)
            else:
                not_saved.append(key)
    arrays = _discrete_arrays(estimator) if discrete else _gaussian_arrays(estimator)
    own = _COMMON_OWN | (_DISCRETE_OWN if discrete else _GAUSSIAN_OWN)
    fitted, fitted_arrays, fitted_not_saved = {}, [], []
    for key, value in _public_fitted(estimator).items():
        if key in own:
            continue
        if _is_numeric_array(value):
            arrays[f"fitted.{key}"] = value
            fitted_arrays.append(key)
            continue
        if value is None or isinstance(value, (bool, str, int, float, np.generic)):
            fitted[key] = _to_json(value)
        else:
            fitted_not_saved.append(key)
    names = getattr(estimator, "feature_names_in_", None)
    graph = None
    if discrete:
        g = estimator.graph_
        graph = {"factors": [list(f) for f in g.factors], "names": None if g.names is None else _to_json(list(g.names))}
    header = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "skmrf_version": __version__,
        "estimator": name,
        "kind": "discrete" if discrete else "gaussian",
        "params": params,
        "params_not_saved": not_saved,
        "n_features": int(estimator.n_features_in_),
        "feature_names": None if names is None else [str(c) for c in names],
        "graph": graph,
        "fitted": fitted,
        "fitted_arrays": fitted_arrays,
        "fitted_not_saved": fitted_not_saved,
    }
    path = os.fspath(path)
    np.savez_compressed(path, header=np.array(json.dumps(header)), **arrays)
    return path if path.endswith(".npz") else path + ".npz"


def _discrete_arrays(est):
    arrays = {"n_states": np.asarray(est.n_states_, dtype=np.int64), "theta": est.model_.theta}
    for key in ("log_partition_", "log_partition_std_"):
        value = getattr(est, key, None)
        if value is not None:
            arrays[key.rstrip("_")] = np.float64(value)
    return arrays


def _gaussian_arrays(est):
    """The arrays of a Gaussian model: what ``score_samples`` reads (see the module docstring)."""
    P = sp.csr_array(est.standardized_precision_)
    A = sp.csr_array(est.adjacency_)
    return {
        "location": est.location_,
        "scale": est.scale_,
        "precision_data": P.data,
        "precision_indices": P.indices,
        "precision_indptr": P.indptr,
        "adjacency_indices": A.indices,
        "adjacency_indptr": A.indptr,
        "is_positive_definite": np.bool_(est.is_positive_definite_),
        "log_partition": np.float64(est.log_partition_),
    }


# -- load -----------------------------------------------------------------------
def _read(path):
    """``(header, arrays)`` of a model file, or a :class:`ModelFileError` naming the file."""
    path = os.fspath(path)
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise ModelFileError(f"{path} is not a saved skmrf model (not an .npz archive); write models with save_model.")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except FileNotFoundError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ModelFileError(f"{path} is not a saved skmrf model (not a readable .npz file: {exc}).") from None
    if not isinstance(arrays, dict) or "header" not in arrays:
        raise ModelFileError(f"{path} is not a saved skmrf model: it has no 'header' entry. Save models with skmrf.")
    try:
        header = json.loads(str(arrays.pop("header")[()]))
    except (ValueError, TypeError) as exc:
        raise ModelFileError(f"{path}: the 'header' entry is not valid JSON ({exc}).") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ModelFileError(f"{path} is not a saved skmrf model (its header has no format {FORMAT_NAME!r}).")
    version = header.get("format_version")
    if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise ModelFileError(
            f"{path} has model format version {version!r}, but this skmrf reads versions 1 to "
            f"{FORMAT_VERSION}. It was written by skmrf {header.get('skmrf_version')}; upgrade skmrf to read it."
        )
    if header.get("estimator") not in _CLASSES:
        raise ModelFileError(
            f"{path} holds an unknown estimator {header.get('estimator')!r}; expected one of {sorted(_CLASSES)}."
        )
    return header, arrays


def read_header(path):
    """The JSON header of a saved model, checked (format name and version).

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save_model`.

    Returns
    -------
    dict
        The header described in :mod:`skmrf.io`.

    Raises
    ------
    ModelFileError
        If the file is not a saved skmrf model or has an unknown format version.
    """
    return _read(path)[0]


def load_model(path):
    """Load an estimator saved by :func:`save_model`, fitted and ready to score.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save_model`. Read with ``allow_pickle=False``.

    Returns
    -------
    estimator
        A fitted estimator of the saved class whose ``score``,
        ``score_samples`` and (discrete) ``sample`` give the same numbers as the
        saved one.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ModelFileError
        If the file is not a saved skmrf model, has a format version this skmrf
        cannot read, or its arrays do not fit together.

    See Also
    --------
    save_model : Write the file.
    """
    header, arrays = _read(path)
    cls = _CLASSES[header["estimator"]]
    try:
        est = cls(**header["params"])
        est.n_features_in_ = int(header["n_features"])
        if header.get("feature_names") is not None:
            est.feature_names_in_ = np.asarray(header["feature_names"], dtype=object)
        if header["kind"] == "discrete":
            _restore_discrete(est, header, arrays)
        else:
            _restore_gaussian(est, arrays)
        for key, value in header.get("fitted", {}).items():
            setattr(est, key, value)
        for key in header.get("fitted_arrays", []):
            setattr(est, key, arrays[f"fitted.{key}"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(
            f"{os.fspath(path)}: the saved model is inconsistent ({type(exc).__name__}: {exc})."
        ) from None
    return est


def _restore_discrete(est, header, arrays):
    n = est.n_features_in_
    graph = header["graph"]
    names = graph.get("names")
    est.graph_ = MRFGraph(
        n, tuple(tuple(int(i) for i in f) for f in graph["factors"]), None if names is None else tuple(names)
    )
    est.n_states_ = arrays["n_states"]
    est.model_ = DiscreteMRF(est.graph_, est.n_states_, arrays["theta"])
    est.log_partition_ = float(arrays["log_partition"]) if "log_partition" in arrays else None
    if "log_partition_std" in arrays:
        est.log_partition_std_ = float(arrays["log_partition_std"])


def _restore_gaussian(est, arrays):
    """Rebuild a Gaussian estimator's fitted state through its own ``_store``.

    ``_store`` derives ``precision_`` (and ``covariance_``) from the standardised
    precision; ``log_partition_`` is then set to the saved value, bit for bit.
    """
    p = est.n_features_in_
    P = sp.csr_array((arrays["precision_data"], arrays["precision_indices"], arrays["precision_indptr"]), shape=(p, p))
    est.adjacency_ = sp.csr_array(
        (
            np.ones(len(arrays["adjacency_indices"]), dtype=bool),
            arrays["adjacency_indices"],
            arrays["adjacency_indptr"],
        ),
        shape=(p, p),
    )
    est.location_ = arrays["location"]
    est.scale_ = arrays["scale"]
    is_pd = bool(arrays["is_positive_definite"])
    log_partition = float(arrays["log_partition"])
    # log_partition_ = (p log(2 pi) - logdet) / 2, logdet = logdet_std - 2 sum(log scale_)
    logdet_std = p * np.log(2 * np.pi) - 2.0 * log_partition + 2.0 * float(np.sum(np.log(est.scale_))) if is_pd else 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScaleWarning)  # said once, at fit
        est._store(P, is_pd, logdet_std)
    est.log_partition_ = np.float64(log_partition) if is_pd else np.nan
