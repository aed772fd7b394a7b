"""Read a model file without trusting it: the archive, the header, the checksum, then the estimator."""

from __future__ import annotations

import io
import json
import math
import os
import warnings
import zipfile

import numpy as np

from .. import __version__
from ..exceptions import ModelFileError, ScaleWarning
from ._checks import (
    discrete_state,
    field,
    gaussian_state,
    labels,
    log_partition_state,
    verify_log_partition,
)
from ._format import (
    ARRAYS,
    CLASSES,
    FITTED_CHOICES,
    FITTED_COUNTS,
    FITTED_DICTS,
    FITTED_FLAGS,
    FITTED_REALS,
    FORMAT_NAME,
    FORMAT_VERSION,
    OLDEST_VERSION,
    OWN,
    Bad,
    digest,
    restore_dict,
    restore_parameter_object,
)

__all__ = ["load_model", "read_header"]

# The deflate format cannot expand data more than about 1032 times: an entry that declares
# more than this (plus room for a tiny entry) lies about its size.
_MAX_DEFLATE_RATIO = 1032
# Entries in a model file: the header, the checksum, a dozen model arrays and the fitted ones.
_MAX_ENTRIES = 10_000


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


def _checked(path, read):
    """``read()``, its failures as a :class:`ModelFileError` naming ``path`` and the field."""
    try:
        return read()
    except Bad as exc:
        raise ModelFileError(f"{os.fspath(path)}: {exc.field} {exc.problem}.") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:  # a check this module lacks
        raise ModelFileError(
            f"{os.fspath(path)}: the saved model is inconsistent ({type(exc).__name__}: {exc})."
        ) from None


# -- the archive ----------------------------------------------------------------------
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
        raise Bad(name, f"is not a readable array ({type(exc).__name__}: {exc})") from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None or dtype.kind not in "biufU":
        raise Bad(name, f"has dtype {dtype} (only numbers and text are read: no objects, no pickle)")
    count = math.prod(shape)
    size, left = count * dtype.itemsize, len(data) - buf.tell()
    if size != left:
        raise Bad(name, f"declares shape {shape} of {dtype} ({size:,} bytes) but holds {left:,} bytes")
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=buf.tell())
    return arr.reshape(shape, order="F" if fortran else "C").copy()


def _read_entries(path):
    """Every entry of the ``.npz`` at ``path`` as ``{name: array}``; ``Bad`` for a damaged archive."""
    try:
        zf = zipfile.ZipFile(path)
    except (FileNotFoundError, PermissionError):
        raise
    except Exception as exc:  # BadZipFile, EOFError, IsADirectoryError, a damaged directory's ValueError, ...
        why = f"{type(exc).__name__}: {exc}"
        raise Bad(
            "file", f"is not a saved skmrf model (not an .npz archive: {why}); write models with save_model"
        ) from None
    entries = {}
    with zf:
        infos = zf.infolist()
        if len(infos) > _MAX_ENTRIES:
            raise Bad("file", f"has {len(infos):,} entries, more than a model file has ({_MAX_ENTRIES:,})")
        for info in infos:
            name = info.filename[:-4] if info.filename.endswith(".npy") else None
            if not name or name in entries:
                raise Bad("file", f"has an entry {info.filename!r} that is not one .npy array of a model")
            if info.file_size > _MAX_DEFLATE_RATIO * info.compress_size + 1024:
                raise Bad(
                    name,
                    f"declares {info.file_size:,} bytes compressed into {info.compress_size:,}, more than "
                    "deflate can expand: the archive's directory is damaged",
                )
            try:
                data = zf.read(info)
            except Exception as exc:  # BadZipFile (CRC), zlib.error, NotImplementedError, EOFError, ...
                raise Bad(name, f"cannot be read from the archive ({type(exc).__name__}: {exc})") from None
            entries[name] = _read_npy(name, data)
    return entries


# -- the header -----------------------------------------------------------------------
def _check_version(version, header):
    written = header.get("skmrf_version")
    by = f" (written by skmrf {written})" if isinstance(written, str) else ""
    if type(version) is not int:
        raise Bad("format_version", f"is {version!r}{by}, not an integer: the header is damaged")
    if version > FORMAT_VERSION:
        raise Bad(
            "format_version",
            f"is {version}{by}: model format version {version} is newer than this skmrf ({__version__}) reads "
            f"(versions {OLDEST_VERSION} to {FORMAT_VERSION}); upgrade skmrf to read it",
        )
    if version < OLDEST_VERSION:
        raise Bad(
            "format_version",
            f"is {version}{by}: model format version {version} is older than this skmrf ({__version__}) reads "
            f"(versions {OLDEST_VERSION} to {FORMAT_VERSION}); refit the model and save it again (or load it "
            "with the skmrf that wrote it)",
        )


def _header(entries):
    """The JSON header entry of a read archive, its format name and version checked."""
    text = entries.pop("header", None)
    if text is None:
        raise Bad("header", "is missing: this is not a saved skmrf model; save models with save_model")
    if text.shape != () or text.dtype.kind != "U":
        raise Bad("header", f"is a {text.dtype} array of shape {text.shape}, not one JSON text")
    text = str(text[()])
    try:
        text.encode("utf-8")  # the checksum reads it so
        header = json.loads(text)
    except (ValueError, RecursionError) as exc:  # UnicodeEncodeError, JSONDecodeError
        raise Bad("header", f"is not JSON text ({type(exc).__name__}: {exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise Bad("format", f"is not {FORMAT_NAME!r}: this is not a saved skmrf model")
    _check_version(header.get("format_version"), header)
    return text, header


def _read(path):
    """``(header, arrays)`` of a model file: the archive, the header and the checksum checked."""
    entries = _read_entries(path)
    text, header = _header(entries)
    version = header["format_version"]
    checksum = entries.pop("checksum", None)
    if version >= 2:
        if checksum is None or checksum.shape != () or checksum.dtype.kind != "U":
            raise Bad("checksum", "is missing or not one text: the file is damaged")
        if str(checksum[()]) != digest(text, entries):
            raise Bad("checksum", "does not match the contents: the file is damaged or was modified; save it again")
    elif checksum is not None:
        raise Bad("checksum", f"is present in a version {version} file, which has none: the file is damaged")
    if header.get("estimator") not in CLASSES:
        raise Bad("estimator", f"is {header.get('estimator')!r}, not one of {sorted(CLASSES)}")
    return header, entries


# -- the estimator ----------------------------------------------------------------------
def _restore(header, arrays):
    """The fitted estimator of a read file, every field checked (``Bad`` names the first wrong one)."""
    cls = CLASSES[header["estimator"]]
    kind = cls.__skmrf_kind__
    given = field(header, "kind", (str,), "a string")
    if given != kind:
        raise Bad("kind", f"is {given!r}, but {cls.__name__} is {'discrete' if kind == 'discrete' else 'Gaussian'}")
    expected = ARRAYS[kind] | {f"fitted.{k}" for k in field(header, "fitted_arrays", (list,), "a list")}
    extra = sorted(set(arrays) - expected)
    if extra:
        raise Bad(extra[0], "is an entry this kind of model does not have")
    est = _estimator(cls, header)
    est.n_features_in_ = n = field(header, "n_features", (int,), "an integer")
    if n < 1:
        raise Bad("n_features", f"is {n}, not a positive number of columns")
    names = field(header, "feature_names", (list, type(None)), "a list or null")
    if names is not None:
        est.feature_names_in_ = np.asarray(labels(names, "feature_names", n), dtype=object)
    _restore_fitted(est, header, arrays, kind)
    if kind == "discrete":
        _set_discrete_state(est, header, arrays)
    else:
        _set_gaussian_state(est, arrays)
    return est


def _estimator(cls, header):
    """``cls(**params)`` with the parameters validated as ``fit`` validates them."""
    params = field(header, "params", (dict,), "an object")
    defaults = cls().get_params(deep=False)
    for key, value in params.items():
        if key not in defaults:
            raise Bad(f"params.{key}", f"is not a parameter of {cls.__name__}")
        constraints = cls._parameter_constraints.get(key, [])
        if type(value) is bool and not any(c in ("boolean", "verbose", bool) for c in constraints):
            raise Bad(f"params.{key}", f"is {value!r}, a boolean, which {cls.__name__}({key}=...) does not take")
    for key in field(header, "params_not_saved", (list,), "a list"):
        if key not in defaults:
            raise Bad("params_not_saved", f"names {key!r}, not a parameter of {cls.__name__}")
    params = {k: restore_parameter_object(k, v) if type(v) is dict else v for k, v in params.items()}
    est = cls(**params)
    try:
        est._validate_params()  # scikit-learn's parameter validation, as fit runs it
    except (ValueError, TypeError) as exc:
        raise Bad("params", f"are invalid: {exc}") from None
    return est


def _check_scalar(key, value):
    """A fitted attribute of the header's ``fitted``: its JSON type and, where known, its meaning."""
    name = f"fitted.{key}"
    if type(value) not in (type(None), bool, int, float, str):
        raise Bad(name, f"is {value!r}, not a number, string, boolean or null")
    if key in FITTED_CHOICES and value not in FITTED_CHOICES[key]:
        raise Bad(name, f"is {value!r}, not one of {sorted(FITTED_CHOICES[key])}")
    if type(value) is str and key not in FITTED_CHOICES:
        raise Bad(name, f"is the string {value!r}, but {key} is not a known string attribute")
    if key in FITTED_COUNTS and value is not None and (type(value) is not int or value < 0):
        raise Bad(name, f"is {value!r}, not a count (an integer >= 0)")
    if key in FITTED_FLAGS and type(value) not in (bool, type(None)):
        raise Bad(name, f"is {value!r}, not true or false")
    if key in FITTED_REALS and type(value) not in (int, float, type(None)):
        raise Bad(name, f"is {value!r}, not a number")
    return value


def _label_attribute(key, entry):
    """A fitted attribute of the header's ``fitted_labels``, as the list, tuple or array it was."""
    name = f"fitted_labels.{key}"
    if type(entry) is not dict or set(entry) != {"type", "values"} or entry["type"] not in ("list", "tuple", "ndarray"):
        raise Bad(name, f"is {entry!r}, not {{'type': 'list' | 'tuple' | 'ndarray', 'values': [...]}}")
    values = labels(entry["values"], name)
    kind = entry["type"]
    return np.asarray(values, dtype=object) if kind == "ndarray" else (tuple if kind == "tuple" else list)(values)


def _restore_fitted(est, header, arrays, kind):
    """The generic fitted attributes: scalars (types and enumerations checked), labels, arrays."""
    fitted = field(header, "fitted", (dict,), "an object")
    fitted_labels = header.get("fitted_labels", {}) if header["format_version"] >= 2 else {}
    if type(fitted_labels) is not dict:
        raise Bad("fitted_labels", f"is {fitted_labels!r}, not an object")
    arrays_named = header["fitted_arrays"]
    for key in [*fitted, *fitted_labels, *arrays_named, *field(header, "fitted_not_saved", (list,), "a list")]:
        if type(key) is not str or not key.endswith("_") or key.startswith("_") or key in OWN[kind]:
            raise Bad("fitted", f"names {key!r}, not a fitted attribute this file may set")
    for key, value in fitted.items():
        dict_value = key in FITTED_DICTS and type(value) is dict
        setattr(est, key, restore_dict(f"fitted.{key}", value) if dict_value else _check_scalar(key, value))
    for key, entry in fitted_labels.items():
        setattr(est, key, _label_attribute(key, entry))
    for key in arrays_named:
        a = arrays.get(f"fitted.{key}")
        if a is None or a.dtype.kind not in "biuf":
            raise Bad(f"fitted.{key}", "is missing or not a numeric array")
        setattr(est, key, a)


def _set_discrete_state(est, header, arrays):
    """The discrete state, checked, handed to ``__skmrf_set_state__``; then its ``log Z`` verified."""
    state = discrete_state(header, arrays, est.n_features_in_)
    method = getattr(est, "score_method_", None)
    state.update(log_partition_state(method, arrays))
    est.__skmrf_set_state__(state)
    verify_log_partition(est.model_, method, state, getattr(est, "max_bytes", None))


def _set_gaussian_state(est, arrays):
    """The Gaussian state, checked, handed to ``__skmrf_set_state__``, which derives ``precision_``
    (and ``covariance_``) from the standardised precision and keeps ``log_partition_`` bit for bit."""
    state = gaussian_state(arrays, est.n_features_in_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScaleWarning)  # said once, at fit
        try:
            est.__skmrf_set_state__(state)
        except ValueError as exc:  # the precision in the units of X overflows
            raise Bad("scale", f"does not fit the precision: {exc}") from None
