"""Save and load fitted estimators: a versioned, checksummed ``.npz`` file, no pickle.

A saved model is a NumPy ``.npz`` archive (:func:`numpy.savez_compressed`). It holds one
JSON text entry, ``header``, plain numeric arrays, and (from version 2) a ``checksum``
entry. :func:`load_model` reads it without pickle and without trusting it: every
entry is checked (see *What loading checks* below), and anything inconsistent is
refused with :class:`ModelFileError` naming the field.

File format, version 2
----------------------
``header`` (a 0-d unicode array holding a JSON object):

``format``
    Always ``"skmrf-model"``.
``format_version``
    The integer ``2``. A reader refuses versions it does not know.
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
    A parameter object (MCMC's ``schedule``) is ``{"object": class name, "params": {...}}``.
``params_not_saved``
    Names of other parameters JSON cannot hold (an ``init`` estimator, a
    ``RandomState``); the loaded estimator has their default values.
``n_features``, ``feature_names``
    ``n_features_in_`` and ``feature_names_in_`` (a list of column labels, strings or
    integers, or null when the estimator was fitted on an array without names).
``graph``
    Discrete: ``{"factors": [[i, j], ...], "names": [...] or null}``, the maximal
    factors of ``graph_`` as column indices and its variable labels. Gaussian: null
    (the pattern is in the arrays).
``fitted``
    Every other fitted attribute (name ending in ``_``) whose value is a number,
    a string, a boolean or null, such as ``n_iter_``, ``alpha_``, ``score_method_``.
``fitted_labels``
    Fitted attributes that are lists, tuples or 1-D object arrays of labels (strings
    or integers), such as column labels: ``{name: {"type": "list" | "tuple" |
    "ndarray", "values": [...]}}``, restored as the same type.
``fitted_arrays``
    Names of the fitted attributes stored as numeric arrays ``fitted.<name>``.
``fitted_not_saved``
    Names of the fitted attributes no form above can hold (diagnostic objects such as
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

``checksum`` (a 0-d unicode array): the SHA-256 hex digest of the header text (UTF-8)
followed by, for every other entry in sorted name order, its name, dtype, shape and
bytes (:func:`_digest`). It catches a damaged byte that the archive's own CRC-32 does
not cover (such as a changed size or name in the archive's directory).

A loaded estimator scores, and samples with the same seed, exactly as the one that was
saved: every number that ``score_samples`` and ``sample`` read is stored bit for bit.

Version 1 is version 2 without ``checksum`` and ``fitted_labels`` (and with string
column names only); it is still read, with every check below except the checksum.

What loading checks
-------------------
The archive is read entry by entry without pickle (object and structured dtypes are
refused, and an entry whose declared size does not match its bytes is refused before
anything is allocated); the checksum; every header field's type (an integer is never
a boolean) and every enumeration (``kind``, ``score_method_``, ``solver_``, the
estimator's parameters through its own parameter validation); the shapes of the
arrays against the graph and the numbers of states; that the parameters are finite.
``log Z`` of a discrete model scored exactly is recomputed by the junction tree and
must agree with the stored value; one estimated by AIS must lie within the bounds
``log prod(K) + E_uniform[energy] <= log Z <= log prod(K) + max energy``. A Gaussian
precision flagged positive definite is factorised again (Cholesky), and its
log-determinant must agree with ``log_partition``.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import warnings
import zipfile

import numpy as np
import scipy.sparse as sp

from . import __version__
from . import estimators as _estimators
from .estimators._base import MAX_TABLE_SIZE, BaseDiscreteMRF
from .estimators.gaussian._base import ScaleWarning, _BaseGaussianMRF
from .estimators.gaussian.spd import logdet_spd
from .exceptions import ModelFileError
from .graphs import MRFGraph, _maximal
from .inference.junction_tree import TreewidthError
from .model import DiscreteMRF
from .utils._atomic import replacing
from .utils._sklearn_compat import check_is_fitted
from .utils.validation import MAX_STATES

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "ModelFileError", "load_model", "read_header", "save_model"]

#: The ``format`` entry of every header.
FORMAT_NAME = "skmrf-model"
#: The version this module writes; :func:`load_model` reads versions 1 to it.
FORMAT_VERSION = 2
#: The oldest version :func:`load_model` reads.
_OLDEST_VERSION = 1

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
_DISCRETE_ARRAYS = {"n_states", "theta", "log_partition", "log_partition_std"}
_GAUSSIAN_ARRAYS = {
    "location",
    "scale",
    "precision_data",
    "precision_indices",
    "precision_indptr",
    "adjacency_indices",
    "adjacency_indptr",
    "is_positive_definite",
    "log_partition",
}

#: The values a string-valued fitted attribute may take. A string attribute not listed
#: here is refused on load (its meaning is unknown, so it cannot be validated): an
#: estimator that adds one adds it here.
_FITTED_CHOICES = {
    "score_method_": {"exact", "ais", "bound", "pseudo"},
    "solver_": {"newton", "regression", "sparse", "chordal"},
}
#: Fitted attributes that are counts (a JSON integer, never a boolean, >= 0).
_FITTED_COUNTS = {
    "n_iter_",
    "n_groups_",
    "n_records_",
    "n_subnetworks_",
    "inferences_per_iteration_",
    "max_neighbourhood_size_",
}
#: Fitted attributes that are flags (a JSON boolean).
_FITTED_FLAGS = {"converged_"}
#: Fitted attributes that are real numbers (a JSON number, never a boolean).
_FITTED_REALS = {
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

# The deflate format cannot expand data more than about 1032 times: an entry that declares
# more than this (plus room for a tiny entry) lies about its size.
_MAX_DEFLATE_RATIO = 1032
# Entries in a model file: the header, the checksum, a dozen model arrays and the fitted ones.
_MAX_ENTRIES = 10_000


class _Bad(Exception):
    """A check failed: ``field`` and what is wrong, turned into a ModelFileError by ``load_model``."""

    def __init__(self, field, problem):
        super().__init__(field, problem)
        self.field, self.problem = field, problem


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


#: Parameter objects a file may hold, by class name (their own parameters are plain JSON).
_PARAMETER_OBJECTS = {"AdaptiveSchedule": _estimators.AdaptiveSchedule, "TheorySchedule": _estimators.TheorySchedule}


def _parameter_object(value):
    """``{"object": class name, "params": {...}}`` of a parameter object (TypeError if one is not JSON)."""
    return {"object": type(value).__name__, "params": {k: _to_json(v) for k, v in value.get_params().items()}}


def _restore_parameter_object(key, entry):
    """The parameter object saved by :func:`_parameter_object`, its class and parameters checked."""
    field = f"params.{key}"
    if set(entry) != {"object", "params"} or entry["object"] not in _PARAMETER_OBJECTS:
        raise _Bad(field, f"is {entry!r}, not {{'object': one of {sorted(_PARAMETER_OBJECTS)}, 'params': {{...}}}}")
    cls = _PARAMETER_OBJECTS[entry["object"]]
    values = entry["params"]
    defaults = cls().get_params()
    if type(values) is not dict or not set(values) <= set(defaults):
        raise _Bad(f"{field}.params", f"is not an object of {cls.__name__}'s parameters ({sorted(defaults)})")
    obj = cls(**values)
    try:
        obj._validate_params()
    except (ValueError, TypeError) as exc:
        raise _Bad(f"{field}.params", f"are invalid: {exc}") from None
    return obj


def _is_numeric_array(value):
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf"


def _is_label(value):
    """A column label a file can hold: a string or an integer (never a boolean)."""
    return isinstance(value, (str, int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _labels_entry(value):
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
    if not all(_is_label(v) for v in values):
        return None
    return {"type": kind, "values": [v if isinstance(v, str) else int(v) for v in values]}


def _public_fitted(est):
    """The public fitted attributes of ``est`` (instance attributes ending in ``_``)."""
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _resolved_graph_param(est):
    """The resolved structure as lists of columns, for a ``graph`` parameter JSON cannot hold.

    Columns are named when the estimator was fitted on named or labelled columns (so a clone
    refits on the same DataFrame), else numbered.
    """
    names = getattr(est, "feature_names_in_", None)
    if names is None:
        names = getattr(est, "feature_labels_in_", None)
    if isinstance(est, BaseDiscreteMRF):
        factors = [list(f) for f in est.graph_.factors]
    else:
        adj = sp.triu(est.adjacency_, k=1).tocoo()
        factors = np.column_stack([adj.row, adj.col]).tolist()
    return factors if names is None else [[_to_json(names[i]) for i in f] for f in factors]


def _digest(header_text, arrays):
    """SHA-256 hex digest of the header text and every array (name, dtype, shape, bytes), by name."""
    h = hashlib.sha256(header_text.encode("utf-8"))
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


# -- save -----------------------------------------------------------------------
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
    final = _target(path)
    discrete = isinstance(estimator, BaseDiscreteMRF)
    params, not_saved = {}, []
    for key, value in estimator.get_params(deep=False).items():
        try:
            params[key] = _parameter_object(value) if type(value) in _PARAMETER_OBJECTS.values() else _to_json(value)
        except TypeError:
            if key == "graph":
                params[key] = _resolved_graph_param(estimator)
            else:
                not_saved.append(key)
    arrays = _discrete_arrays(estimator) if discrete else _gaussian_arrays(estimator)
    own = _COMMON_OWN | (_DISCRETE_OWN if discrete else _GAUSSIAN_OWN)
    fitted, labels, fitted_arrays, fitted_not_saved = {}, {}, [], []
    for key, value in _public_fitted(estimator).items():
        if key in own:
            continue
        if _is_numeric_array(value):
            arrays[f"fitted.{key}"] = value
            fitted_arrays.append(key)
        elif value is None or isinstance(value, (bool, str, int, float, np.generic)):
            fitted[key] = _to_json(value)
        elif (entry := _labels_entry(value)) is not None:
            labels[key] = entry
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
        "feature_names": None if names is None else [_to_json(c) for c in names],
        "graph": graph,
        "fitted": fitted,
        "fitted_labels": labels,
        "fitted_arrays": fitted_arrays,
        "fitted_not_saved": fitted_not_saved,
    }
    text = json.dumps(header)
    _write_atomic(final, {"header": np.array(text), **arrays, "checksum": np.array(_digest(text, arrays))})
    return final


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


# -- read -----------------------------------------------------------------------
def _read_npy(name, data):
    """The array in the ``.npy`` bytes ``data`` of entry ``name``, without pickle.

    Only boolean, numeric and unicode dtypes are read; the declared shape must match
    the bytes exactly (checked before anything is allocated).
    """
    buf = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(buf)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in read_header:
            raise ValueError(f"unknown .npy version {version}")
        shape, fortran, dtype = read_header[version](buf)
    except Exception as exc:  # a damaged .npy header: ValueError, SyntaxError, KeyError, ...
        raise _Bad(name, f"is not a readable array ({type(exc).__name__}: {exc})") from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None or dtype.kind not in "biufU":
        raise _Bad(name, f"has dtype {dtype} (only numbers and text are read: no objects, no pickle)")
    count = math.prod(shape)
    size, left = count * dtype.itemsize, len(data) - buf.tell()
    if size != left:
        raise _Bad(name, f"declares shape {shape} of {dtype} ({size:,} bytes) but holds {left:,} bytes")
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=buf.tell())
    return arr.reshape(shape, order="F" if fortran else "C").copy()


def _read_entries(path):
    """Every entry of the ``.npz`` at ``path`` as ``{name: array}``; ``_Bad`` for a damaged archive."""
    try:
        zf = zipfile.ZipFile(path)
    except (FileNotFoundError, PermissionError):
        raise
    except Exception as exc:  # BadZipFile, EOFError, IsADirectoryError, a damaged directory's ValueError, ...
        why = f"{type(exc).__name__}: {exc}"
        raise _Bad(
            "file", f"is not a saved skmrf model (not an .npz archive: {why}); write models with save_model"
        ) from None
    entries = {}
    with zf:
        infos = zf.infolist()
        if len(infos) > _MAX_ENTRIES:
            raise _Bad("file", f"has {len(infos):,} entries, more than a model file has ({_MAX_ENTRIES:,})")
        for info in infos:
            name = info.filename[:-4] if info.filename.endswith(".npy") else None
            if not name or name in entries:
                raise _Bad("file", f"has an entry {info.filename!r} that is not one .npy array of a model")
            if info.file_size > _MAX_DEFLATE_RATIO * info.compress_size + 1024:
                raise _Bad(
                    name,
                    f"declares {info.file_size:,} bytes compressed into {info.compress_size:,}, more than "
                    "deflate can expand: the archive's directory is damaged",
                )
            try:
                data = zf.read(info)
            except Exception as exc:  # BadZipFile (CRC), zlib.error, NotImplementedError, EOFError, ...
                raise _Bad(name, f"cannot be read from the archive ({type(exc).__name__}: {exc})") from None
            entries[name] = _read_npy(name, data)
    return entries


def _check_version(version, header):
    written = header.get("skmrf_version")
    by = f" (written by skmrf {written})" if isinstance(written, str) else ""
    if type(version) is not int:
        raise _Bad("format_version", f"is {version!r}{by}, not an integer: the header is damaged")
    if version > FORMAT_VERSION:
        raise _Bad(
            "format_version",
            f"is {version}{by}: model format version {version} is newer than this skmrf ({__version__}) reads "
            f"(versions {_OLDEST_VERSION} to {FORMAT_VERSION}); upgrade skmrf to read it",
        )
    if version < _OLDEST_VERSION:
        raise _Bad(
            "format_version",
            f"is {version}{by}: model format version {version} is older than this skmrf ({__version__}) reads "
            f"(versions {_OLDEST_VERSION} to {FORMAT_VERSION}); refit the model and save it again (or load it "
            "with the skmrf that wrote it)",
        )


def _read(path):
    """``(header, arrays)`` of a model file: the archive, the header and the checksum checked."""
    entries = _read_entries(path)
    text = entries.pop("header", None)
    if text is None:
        raise _Bad("header", "is missing: this is not a saved skmrf model; save models with save_model")
    if text.shape != () or text.dtype.kind != "U":
        raise _Bad("header", f"is a {text.dtype} array of shape {text.shape}, not one JSON text")
    text = str(text[()])
    try:
        text.encode("utf-8")  # the checksum reads it so
        header = json.loads(text)
    except (ValueError, RecursionError) as exc:  # UnicodeEncodeError, JSONDecodeError
        raise _Bad("header", f"is not JSON text ({type(exc).__name__}: {exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise _Bad("format", f"is not {FORMAT_NAME!r}: this is not a saved skmrf model")
    version = header.get("format_version")
    _check_version(version, header)
    checksum = entries.pop("checksum", None)
    if version >= 2:
        if checksum is None or checksum.shape != () or checksum.dtype.kind != "U":
            raise _Bad("checksum", "is missing or not one text: the file is damaged")
        if str(checksum[()]) != _digest(text, entries):
            raise _Bad("checksum", "does not match the contents: the file is damaged or was modified; save it again")
    elif checksum is not None:
        raise _Bad("checksum", f"is present in a version {version} file, which has none: the file is damaged")
    if header.get("estimator") not in _CLASSES:
        raise _Bad("estimator", f"is {header.get('estimator')!r}, not one of {sorted(_CLASSES)}")
    return header, entries


def _checked(path, read):
    """``read()``, its failures as a :class:`ModelFileError` naming ``path`` and the field."""
    try:
        return read()
    except _Bad as exc:
        raise ModelFileError(f"{os.fspath(path)}: {exc.field} {exc.problem}.") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:  # a check this module lacks
        raise ModelFileError(
            f"{os.fspath(path)}: the saved model is inconsistent ({type(exc).__name__}: {exc})."
        ) from None


def read_header(path):
    """The JSON header of a saved model, checked (format name, version and checksum).

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
    FileNotFoundError
        If there is no such file.
    ModelFileError
        If the file is not a saved skmrf model, is damaged (its checksum does not
        match), or has a format version this skmrf cannot read.
    """
    return _checked(path, lambda: _read(path)[0])


def load_model(path):
    """Load an estimator saved by :func:`save_model`, fitted and ready to score.

    The file is not trusted: it is read without pickle, its checksum and every field
    are checked, and ``log Z`` and positive definiteness are verified (see
    :mod:`skmrf.io`, *What loading checks*).

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save_model`.

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
        If the file is not a saved skmrf model, is damaged, has a format version
        this skmrf cannot read, or any of its fields is invalid or inconsistent
        with the others (the message names the field).

    See Also
    --------
    save_model : Write the file.
    """
    return _checked(path, lambda: _restore(*_read(path)))


# -- checks and restore ------------------------------------------------------------
def _field(header, key, types, what):
    """``header[key]`` if its type is exactly one of ``types`` (so never a bool for an int)."""
    if key not in header:
        raise _Bad(key, "is missing from the header")
    value = header[key]
    if type(value) not in types:
        raise _Bad(key, f"is {value!r}, not {what}")
    return value


def _labels(values, field, length=None):
    """A list of labels (strings or integers, never booleans), of ``length`` if given."""
    if type(values) is not list or not all(type(v) in (str, int) for v in values):
        raise _Bad(field, f"is {values!r}, not a list of column labels (strings or integers)")
    if length is not None and len(values) != length:
        raise _Bad(field, f"has {len(values)} labels for {length} columns")
    return values


def _array(arrays, name, dtype, shape):
    """``arrays[name]`` checked: exactly ``dtype`` (same byte order) and ``shape`` (None: any length)."""
    if name not in arrays:
        raise _Bad(name, "is missing")
    a = arrays[name]
    if (
        a.dtype != np.dtype(dtype)
        or a.ndim != len(shape)
        or any(s is not None and s != t for s, t in zip(shape, a.shape))
    ):
        raise _Bad(name, f"is {a.dtype} of shape {a.shape}, expected {np.dtype(dtype)} of shape {shape}")
    return a


def _finite(a, name):
    if not np.all(np.isfinite(a)):
        raise _Bad(name, "holds NaN or infinity")
    return a


def _restore(header, arrays):
    """The fitted estimator of a read file, every field checked (``_Bad`` names the first wrong one)."""
    cls = _CLASSES[header["estimator"]]
    discrete = issubclass(cls, BaseDiscreteMRF)
    kind = _field(header, "kind", (str,), "a string")
    if kind != ("discrete" if discrete else "gaussian"):
        raise _Bad("kind", f"is {kind!r}, but {cls.__name__} is {'discrete' if discrete else 'Gaussian'}")
    expected = (_DISCRETE_ARRAYS if discrete else _GAUSSIAN_ARRAYS) | {
        f"fitted.{k}" for k in _field(header, "fitted_arrays", (list,), "a list")
    }
    extra = sorted(set(arrays) - expected)
    if extra:
        raise _Bad(extra[0], "is an entry this kind of model does not have")
    est = _estimator(cls, header)
    est.n_features_in_ = n = _field(header, "n_features", (int,), "an integer")
    if n < 1:
        raise _Bad("n_features", f"is {n}, not a positive number of columns")
    names = _field(header, "feature_names", (list, type(None)), "a list or null")
    if names is not None:
        est.feature_names_in_ = np.asarray(_labels(names, "feature_names", n), dtype=object)
    _restore_fitted(est, header, arrays, discrete)
    if discrete:
        _restore_discrete(est, header, arrays)
    else:
        _restore_gaussian(est, arrays)
    return est


def _estimator(cls, header):
    """``cls(**params)`` with the parameters validated as ``fit`` validates them."""
    params = _field(header, "params", (dict,), "an object")
    defaults = cls().get_params(deep=False)
    for key, value in params.items():
        if key not in defaults:
            raise _Bad(f"params.{key}", f"is not a parameter of {cls.__name__}")
        constraints = cls._parameter_constraints.get(key, [])
        if type(value) is bool and not any(c in ("boolean", "verbose", bool) for c in constraints):
            raise _Bad(f"params.{key}", f"is {value!r}, a boolean, which {cls.__name__}({key}=...) does not take")
    for key in _field(header, "params_not_saved", (list,), "a list"):
        if key not in defaults:
            raise _Bad("params_not_saved", f"names {key!r}, not a parameter of {cls.__name__}")
    params = {k: _restore_parameter_object(k, v) if type(v) is dict else v for k, v in params.items()}
    est = cls(**params)
    try:
        est._validate_params()
    except (ValueError, TypeError) as exc:
        raise _Bad("params", f"are invalid: {exc}") from None
    return est


def _restore_fitted(est, header, arrays, discrete):
    """The generic fitted attributes: scalars (types and enumerations checked), labels, arrays."""
    own = _COMMON_OWN | (_DISCRETE_OWN if discrete else _GAUSSIAN_OWN)
    fitted = _field(header, "fitted", (dict,), "an object")
    labels = header.get("fitted_labels", {}) if header["format_version"] >= 2 else {}
    if type(labels) is not dict:
        raise _Bad("fitted_labels", f"is {labels!r}, not an object")
    arrays_named = header["fitted_arrays"]
    for key in [*fitted, *labels, *arrays_named, *_field(header, "fitted_not_saved", (list,), "a list")]:
        if type(key) is not str or not key.endswith("_") or key.startswith("_") or key in own:
            raise _Bad("fitted", f"names {key!r}, not a fitted attribute this file may set")
    for key, value in fitted.items():
        field = f"fitted.{key}"
        if type(value) not in (type(None), bool, int, float, str):
            raise _Bad(field, f"is {value!r}, not a number, string, boolean or null")
        if key in _FITTED_CHOICES and value not in _FITTED_CHOICES[key]:
            raise _Bad(field, f"is {value!r}, not one of {sorted(_FITTED_CHOICES[key])}")
        if type(value) is str and key not in _FITTED_CHOICES:
            raise _Bad(field, f"is the string {value!r}, but {key} is not a known string attribute")
        if key in _FITTED_COUNTS and value is not None and (type(value) is not int or value < 0):
            raise _Bad(field, f"is {value!r}, not a count (an integer >= 0)")
        if key in _FITTED_FLAGS and type(value) not in (bool, type(None)):
            raise _Bad(field, f"is {value!r}, not true or false")
        if key in _FITTED_REALS and type(value) not in (int, float, type(None)):
            raise _Bad(field, f"is {value!r}, not a number")
        setattr(est, key, value)
    for key, entry in labels.items():
        field = f"fitted_labels.{key}"
        if (
            type(entry) is not dict
            or set(entry) != {"type", "values"}
            or entry["type"] not in ("list", "tuple", "ndarray")
        ):
            raise _Bad(field, f"is {entry!r}, not {{'type': 'list' | 'tuple' | 'ndarray', 'values': [...]}}")
        values = _labels(entry["values"], field)
        kind = entry["type"]
        setattr(
            est,
            key,
            np.asarray(values, dtype=object) if kind == "ndarray" else (tuple if kind == "tuple" else list)(values),
        )
    for key in arrays_named:
        a = arrays.get(f"fitted.{key}")
        if a is None or a.dtype.kind not in "biuf":
            raise _Bad(f"fitted.{key}", "is missing or not a numeric array")
        setattr(est, key, a)


def _graph(header, n):
    """The ``MRFGraph`` of a discrete file: factors of valid, sorted, distinct columns, maximal."""
    graph = _field(header, "graph", (dict,), "an object")
    factors = graph.get("factors")
    if type(factors) is not list or not all(
        type(f) is list and f and all(type(i) is int and 0 <= i < n for i in f) for f in factors
    ):
        raise _Bad("graph.factors", f"is not a list of non-empty lists of column indices 0..{n - 1}")
    factors = tuple(tuple(f) for f in factors)
    if _maximal(factors) != factors:
        raise _Bad("graph.factors", "are not the sorted maximal factors save_model writes (repeated or reordered)")
    names = graph.get("names")
    if names is not None:
        scalar = (str, int, float, bool, type(None))  # networkx node labels, tuples stored as lists
        if (
            type(names) is not list
            or len(names) != n
            or not all(type(v) in scalar or (type(v) is list and all(type(u) in scalar for u in v)) for v in names)
        ):
            raise _Bad("graph.names", f"is not null or a list of {n} labels (scalars or lists of scalars)")
        names = tuple(tuple(v) if isinstance(v, list) else v for v in names)
    return MRFGraph(n, factors, names)


def _restore_discrete(est, header, arrays):
    n = est.n_features_in_
    n_states = _array(arrays, "n_states", np.int64, (n,))  # first: the file's own size bounds n
    if np.any(n_states < 2) or np.any(n_states > MAX_STATES):
        raise _Bad("n_states", f"is {n_states.tolist()}, not numbers of states from 2 to {MAX_STATES:,}")
    est.graph_ = _graph(header, n)
    n_params = 0
    for c in est.graph_.cliques:
        size = math.prod(int(n_states[i]) for i in c)
        if size > MAX_TABLE_SIZE:
            raise _Bad("n_states", f"give clique {c} {size:,} joint states, over the limit of {MAX_TABLE_SIZE:,}")
        n_params += math.prod(int(n_states[i]) - 1 for i in c)
    theta = _finite(_array(arrays, "theta", np.float64, (n_params,)), "theta")  # before building the model
    est.n_states_ = n_states
    est.model_ = DiscreteMRF(est.graph_, n_states, theta)
    _check_log_partition(est, arrays)


def _check_log_partition(est, arrays):
    """``log_partition_`` (and ``log_partition_std_``) as ``score_method_`` needs them, verified."""
    method = getattr(est, "score_method_", None)
    if method is None:
        raise _Bad("fitted.score_method_", "is missing")
    has_std = "log_partition_std" in arrays
    if method == "pseudo":
        if "log_partition" in arrays or has_std:
            raise _Bad("log_partition", "is present, but a pseudo-likelihood score has no log Z")
        est.log_partition_ = None
        return
    if has_std != (method == "ais"):
        raise _Bad("log_partition_std", f"is {'present' if has_std else 'missing'}, but score_method_ is {method!r}")
    log_z = float(_finite(_array(arrays, "log_partition", np.float64, ()), "log_partition"))
    model = est.model_
    if method == "exact":
        try:
            exact = model.calibrate(max_bytes=est.max_bytes).log_z
        except TreewidthError as exc:
            raise _Bad("fitted.score_method_", f"is 'exact', but {exc}") from None
        # The junction tree sums exp over the cliques in the same order as at fit: the same
        # bits on the same machine, and a few rounding errors per clique on another.
        tol = 1e-9 * (len(model.cliques) + abs(exact))
        if not abs(log_z - exact) <= tol:
            raise _Bad("log_partition", f"is {log_z!r}, but the model's log Z is {exact!r}")
    else:
        std = 0.0  # "bound": a deterministic upper bound, within the same bounds
        if method == "ais":
            std = float(_finite(_array(arrays, "log_partition_std", np.float64, ()), "log_partition_std"))
        if std < 0:
            raise _Bad("log_partition_std", f"is {std!r}, a negative standard error")
        lower, upper = _log_z_bounds(model)
        # AIS estimates log Z with standard error std (and tends to underestimate it); the
        # bounds are exact up to rounding.
        slack = 10.0 * std + 1e-9 * (len(model.cliques) + abs(lower) + abs(upper))
        if not lower - slack <= log_z <= upper + slack:
            raise _Bad("log_partition", f"is {log_z!r}, outside the bounds [{lower!r}, {upper!r}] of the model's log Z")
        if method == "ais":
            est.log_partition_std_ = std
    est.log_partition_ = log_z


def _log_z_bounds(model):
    """Bounds on ``log Z`` for any graph, in O(n_params).

    With ``N = prod(K)`` states and energy ``E``: ``log N + mean E <= log Z <= log N + max E``
    (Jensen's inequality under the uniform distribution; the largest term). Under the
    uniform distribution a parameter's indicator has mean ``prod(1 / K_i)`` over its clique;
    ``max E <= sum over blocks of max(0, largest parameter)``.
    """
    lay = model.layout
    log_n = float(np.sum(np.log(model.n_states)))
    mean, top = 0.0, 0.0
    for k, c in enumerate(model.cliques):
        block = model.theta[lay.block_offsets[k] : lay.block_offsets[k + 1]]
        mean += float(block.sum()) / math.prod(int(model.n_states[i]) for i in c)
        top += max(0.0, float(block.max(initial=0.0)))
    return log_n + mean, log_n + top


def _csr(arrays, prefix, p, data=None):
    """The CSR arrays ``prefix_indices`` / ``prefix_indptr`` checked: sorted, distinct columns in range."""
    indptr, indices = arrays.get(f"{prefix}_indptr"), arrays.get(f"{prefix}_indices")
    for name, a, length in ((f"{prefix}_indptr", indptr, p + 1), (f"{prefix}_indices", indices, None)):
        if a is None or a.ndim != 1 or a.dtype.kind not in "iu" or length not in (None, len(a)):
            raise _Bad(name, f"is missing or not a 1-D integer array{'' if length is None else f' of {length}'}")
    nnz = len(indices)
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
        raise _Bad(f"{prefix}_indptr", f"is not the row pointer of {nnz} entries in {p} rows")
    if nnz and (indices.min() < 0 or indices.max() >= p):
        raise _Bad(f"{prefix}_indices", f"holds a column outside 0..{p - 1}")
    rows = np.repeat(np.arange(p), np.diff(indptr))
    if np.any((np.diff(indices) <= 0) & (np.diff(rows) == 0)):
        raise _Bad(f"{prefix}_indices", "are not sorted and distinct within each row")
    values = np.ones(nnz, dtype=bool) if data is None else data
    if len(values) != nnz:
        raise _Bad(f"{prefix}_data", f"has {len(values)} values for {nnz} entries")
    M = sp.csr_array((values, indices, indptr), shape=(p, p))
    if (M != M.T).nnz:
        raise _Bad(f"{prefix}_indices" if data is None else f"{prefix}_data", "do not form a symmetric matrix")
    return M


def _restore_gaussian(est, arrays):
    """Rebuild a Gaussian estimator's fitted state through its own ``_store``, every array checked.

    ``_store`` derives ``precision_`` (and ``covariance_``) from the standardised
    precision; ``log_partition_`` is then set to the saved value, bit for bit, after it is
    checked against a new factorisation of the precision.
    """
    p = est.n_features_in_
    est.location_ = _finite(_array(arrays, "location", np.float64, (p,)), "location")
    scale = _finite(_array(arrays, "scale", np.float64, (p,)), "scale")
    if not np.all(scale > 0):
        raise _Bad("scale", "holds a value that is not positive")
    est.scale_ = scale
    A = _csr(arrays, "adjacency", p)
    if A.diagonal().any():
        raise _Bad("adjacency_indices", "put a variable next to itself (the pattern has no diagonal)")
    est.adjacency_ = A
    data = _finite(_array(arrays, "precision_data", np.float64, (None,)), "precision_data")
    P = _csr(arrays, "precision", p, data)
    off = sp.csr_array(P, copy=True)
    off.setdiag(0)
    off.eliminate_zeros()
    if (off.astype(bool) > A).nnz:
        raise _Bad("precision_indices", "put a non-zero entry outside the graph's pattern adjacency_")
    if not np.all(P.diagonal() > 0):
        raise _Bad("precision_data", "has a diagonal entry that is not positive")
    is_pd = _array(arrays, "is_positive_definite", np.bool_, ())
    is_pd = bool(is_pd)
    log_partition = float(_array(arrays, "log_partition", np.float64, ()))
    logdet_std = 0.0
    if is_pd:
        _finite(log_partition, "log_partition")
        pd, logdet_std = logdet_spd(P)
        if not pd:
            raise _Bad("is_positive_definite", "is true, but the precision is not positive definite (Cholesky fails)")
        # log_partition_ = (p log(2 pi) - logdet) / 2, logdet = logdet_std - 2 sum(log scale_)
        expected = 0.5 * (p * np.log(2 * np.pi) - logdet_std + 2.0 * float(np.sum(np.log(scale))))
        # The fit's factorisation (chordal, sparse or dense) and this one round differently, by
        # about p * eps * cond in log det: 1e-8 (p + |log Z|) leaves room for a condition number
        # of 1e7 (and more at small p); a change the checksum misses is then a deliberate one.
        if not abs(log_partition - expected) <= 1e-8 * (p + abs(expected)):
            raise _Bad("log_partition", f"is {log_partition!r}, but the precision gives {expected!r}")
        logdet_std = p * np.log(2 * np.pi) - 2.0 * log_partition + 2.0 * float(np.sum(np.log(scale)))
    elif not np.isnan(log_partition):
        raise _Bad("log_partition", f"is {log_partition!r}, but a precision that is not positive definite has none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScaleWarning)  # said once, at fit
        try:
            est._store(P, is_pd, logdet_std)
        except ValueError as exc:  # the precision in the units of X overflows
            raise _Bad("scale", f"does not fit the precision: {exc}") from None
    est.log_partition_ = np.float64(log_partition) if is_pd else np.nan
