"""Validation of categorical data and random states."""

from __future__ import annotations

import numbers

import numpy as np

from ._sklearn_compat import _check_sample_weight

__all__ = [
    "MAX_STATES",
    "check_column_labels",
    "check_data_array",
    "check_finite",
    "check_generator",
    "check_n_samples",
    "check_n_states",
    "check_real",
    "check_states",
    "column_names",
    "fit_column_labels",
]

#: Largest number of states of one variable (and of one clique's joint-state table): a
#: state at or above it cannot be modelled, so ``check_states`` refuses it by name
#: rather than casting it (a float 1e20 overflows int64) or failing later.
MAX_STATES = 1 << 24


def check_generator(random_state) -> np.random.Generator:
    """A :class:`numpy.random.Generator` from None, an int, a RandomState or a Generator.

    A ``RandomState`` seeds the generator with one draw from it, so it
    advances as scikit-learn users expect.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, numbers.Integral):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    raise ValueError(f"{random_state!r} cannot be used to seed a numpy.random.Generator.")


def _label(j, names):
    return f"column {j}" if names is None else f"column {j} ({names[j]!r})"


def _column_label_start(j, names):
    """``_label`` at the start of a sentence (``str.capitalize`` would lower-case the name)."""
    return "C" + _label(j, names)[1:]


def _check_not_huge(X, values, names):
    """Refuse states no model can hold, naming the first one (``values`` is X as numbers)."""
    if values.dtype.kind in "iu" and np.iinfo(values.dtype).max < MAX_STATES:
        return  # uint8, int16, ...: nothing to look at
    if not values.size or values.max() < MAX_STATES:
        return
    huge = values >= MAX_STATES
    if huge.any():
        r, j = np.argwhere(huge)[0]
        raise ValueError(
            f"{_column_label_start(j, names)} has state {_show(X[r, j])} at row {r}, more than any "
            f"model can hold (states must be integers 0..K-1 with K <= {MAX_STATES:,}). Encode "
            "categories with sklearn.preprocessing.OrdinalEncoder."
        )


def _show(v):
    """A value for a message: floats in %g form, anything else by repr."""
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):g}"
    if isinstance(v, (numbers.Integral, np.integer)):
        return str(int(v))
    return repr(v)


def _is_missing(v):
    """Whether an entry of an object array is a missing-value marker: None, ``pd.NA`` or ``pd.NaT``."""
    return v is None or type(v).__name__ in ("NAType", "NaTType")


_missing_mask = np.frompyfunc(_is_missing, 1, 1)

_STATES = "X must hold integer-coded states 0..K-1"
_ENCODE = "Encode categories with sklearn.preprocessing.OrdinalEncoder."
_COMPLETE = (
    "Complete-data estimators need every value observed: fit skmrf.DecomposedEM, which takes discrete data "
    "with missing entries (on the command line, skmrf fit --method em), fill them with skmrf.MRFImputer, or "
    "drop the rows."
)
_COMPLETE_REAL = (
    "The Gaussian estimators need every value observed: impute the missing values (sklearn.impute) or drop the rows."
)


def _check_object(X, feature_names, allow_nan, expected=_STATES, advice=_ENCODE, missing_advice=_COMPLETE):
    """An object or string array checked entry by entry where needed; missing markers as NaN.

    None, ``pd.NA`` and ``pd.NaT`` are missing values: NaN with ``allow_nan``, else a
    ``ValueError`` naming the column and row (``float()`` would raise a TypeError about
    ``NAType``). A value that does not convert to float is named too: a ``ValueError`` for a
    string, numpy's ``TypeError`` for any other object (a dict, a list). ``expected`` starts the
    message, ``advice`` ends it.
    """
    if X.dtype.kind == "O":
        missing = _missing_mask(X).astype(bool)
        if missing.any():
            if not allow_nan:
                r, j = np.argwhere(missing)[0]
                raise ValueError(
                    f"{expected}, but {_label(j, feature_names)} has the non-numeric value {X[r, j]!r} at "
                    f"row {r} (a missing value). {missing_advice}"
                )
            X = np.where(missing, np.nan, X)
    # The per-entry scan (a Python loop) only runs when a value will not convert, to find it.
    bad = _first_non_numeric(X) if _needs_scan(X) else None
    if bad is not None:
        r, j, v = bad
        shown = repr(str(v)) if isinstance(v, (str, np.str_, bytes)) else repr(v)
        where = f"{_label(j, feature_names)} has the non-numeric value {shown} at row {r}"
        if not isinstance(v, str):  # a dict, a list, ...: numpy's TypeError
            raise TypeError(
                f"{expected}, but {where}: float() argument must be a string or a real number, not "
                f"{type(v).__name__!r}."
            )
        raise ValueError(
            f"{expected}, but {where}" + (f". {advice}" if advice else f": could not convert string to float: {shown}.")
        )
    return X


def _needs_scan(X):
    """Whether an object/string array holds a value that does not convert to float (vectorised)."""
    try:
        np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        return True
    return False


def _first_non_numeric(X):
    """``(row, column, value)`` of the first entry of an object/string array that is not a number, or None."""
    for (r, j), v in np.ndenumerate(X):
        if v is None:
            return r, j, v
        if isinstance(v, (bool, np.bool_, numbers.Real)):
            continue
        try:
            float(v)
        except (TypeError, ValueError):
            return r, j, v
    return None


def _check_integer_states(X, n_states, names, keep_dtype):
    low = X.min(axis=0) if X.size else np.zeros(X.shape[1], dtype=X.dtype)
    if np.any(low < 0):
        j = int(np.argmax(low < 0))
        r = int(np.argmax(X[:, j] < 0))
        raise ValueError(
            f"Negative values in data: {_label(j, names)} has {X[r, j]} at row {r}; states must be integers 0..K-1."
        )
    _check_not_huge(X, X, names)
    if n_states is not None and X.size:
        high = X.max(axis=0) >= np.asarray(n_states)
        if high.any():
            j = int(np.argmax(high))
            r = int(np.argmax(X[:, j] >= n_states[j]))
            raise ValueError(
                f"{_column_label_start(j, names)} has state {X[r, j]} at row {r}, but the "
                f"model has {n_states[j]} states for it (0..{n_states[j] - 1}). Fit with "
                "n_states set to cover every state the data can take."
            )
    return X if keep_dtype else np.asarray(X, dtype=np.int64)


def check_states(X, n_states=None, feature_names=None, allow_nan=False, keep_dtype=False) -> np.ndarray:
    """Check that X holds integer states and return them as a new int64 array.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Already validated for shape by ``validate_data``; never modified.
    n_states : ndarray of int, optional
        If given, every value of column ``j`` must be below ``n_states[j]``.
    feature_names : sequence of str, optional
        Used to name columns in messages.
    allow_nan : bool, default=False
        If True, NaN marks a missing value and is returned as ``-1``.
    keep_dtype : bool, default=False
        If True, integer input is returned as is, in its own dtype (no copy;
        converting 10^8 uint8 states to int64 took 2.7 s and 800 MB).

    Returns
    -------
    ndarray of int64 (missing values, if allowed, as -1)
        ``X`` itself when it is already int64, or any integer dtype with
        ``keep_dtype`` (callers only read it), otherwise a new array.

    Raises
    ------
    ValueError
        Naming the first offending column, row and value.
    """
    X = np.asarray(X)
    if X.dtype.kind in "iu":  # integers: range checks only, no copy for int64
        return _check_integer_states(X, n_states, feature_names, keep_dtype)
    if X.dtype.kind in "OUS":  # objects or strings: name the first entry that is not a number
        X = _check_object(X, feature_names, allow_nan)
    try:
        xf = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "X must hold integer-coded states 0..K-1; it contains non-numeric values. "
            "Encode categories with sklearn.preprocessing.OrdinalEncoder."
        ) from None
    nan = check_finite(xf, feature_names, allow_nan=allow_nan)
    ok = ~nan
    neg = ok & (xf < 0)
    if neg.any():
        r, j = np.argwhere(neg)[0]
        raise ValueError(
            f"Negative values in data: {_label(j, feature_names)} has {xf[r, j]:g} at row {r}; "
            "states must be integers 0..K-1."
        )
    frac = ok & (xf != np.floor(np.where(ok, xf, 0)))
    if frac.any():
        r, j = np.argwhere(frac)[0]
        raise ValueError(
            f"States must be integers 0..K-1, but {_label(j, feature_names)} has the value "
            f"{xf[r, j]:g} at row {r}. Encode categories with sklearn.preprocessing.OrdinalEncoder."
        )
    _check_not_huge(xf, np.where(ok, xf, 0), feature_names)
    if n_states is not None:
        high = ok & (xf >= np.asarray(n_states)[None, :])
        if high.any():
            r, j = np.argwhere(high)[0]
            raise ValueError(
                f"{_column_label_start(j, feature_names)} has state {xf[r, j]:g} at row {r}, but the "
                f"model has {n_states[j]} states for it (0..{n_states[j] - 1}). Fit with "
                "n_states set to cover every state the data can take."
            )
    out = np.where(ok, xf, -1).astype(np.int64)
    return out


#: Entries checked at once by :func:`check_real`.
_FINITE_BLOCK = 1 << 20


def check_finite(xf, feature_names=None, allow_nan=False, advice=None) -> np.ndarray:
    """Refuse infinity (and NaN unless ``allow_nan``) in the float array ``xf``, naming the first.

    Returns the NaN mask. The ``ValueError`` names the column, the value and its row; ``advice``
    ends it (by default, what a complete-data estimator needs).
    """
    nan = np.isnan(xf)
    bad = np.isinf(xf) | (nan & (not allow_nan))
    if bad.any():
        r, j = np.argwhere(bad)[0]
        advice = advice or _COMPLETE
        what = "NaN" if nan[r, j] else "infinity"
        raise ValueError(f"Input X contains {what}: {_label(j, feature_names)} has {xf[r, j]} at row {r}. {advice}")
    return nan


def check_real(X, feature_names=None, advice=None) -> np.ndarray:
    """X (validated for shape) as finite float64, naming the first entry that is not.

    Missing values (None, ``pd.NA``, ``pd.NaT``, NaN) and infinity are refused with a
    ``ValueError`` naming the column and the row, as are strings that are not numbers; other
    objects raise numpy's ``TypeError``. ``advice`` ends the message about missing values.
    """
    X = np.asarray(X)
    if X.dtype.kind in "OUS":
        X = _check_object(X, feature_names, False, "X must hold real numbers", "", advice or _COMPLETE_REAL)
    xf = np.asarray(X, dtype=np.float64)
    # Blocks of rows: the masks of the whole array would be fresh arrays of its size (0.6 s of
    # page faults at 1000 x 10^5 against 0.06 s); the whole array is checked again only to
    # name the first bad entry.
    step = max(1, _FINITE_BLOCK // max(1, xf[:1].size))
    if not all(np.isfinite(xf[a : a + step]).all() for a in range(0, len(xf), step)):
        check_finite(xf, feature_names, advice=advice or _COMPLETE_REAL)
    return xf


def check_data_array(X, min_samples=1, estimator=None):
    """Refuse an X of the wrong shape or dtype: the one check of an in-memory array, a memmap and a dask array.

    ``validate_data`` makes these checks for in-memory data; a memmap or a dask array, read by
    row chunks, never goes through it, so this function repeats them on the whole array's shape
    and dtype (no data is read), with the same exception and the culprit named.

    Parameters
    ----------
    X : ndarray, numpy.memmap or dask.array
        The data.
    min_samples : int, default=1
        Fewest rows accepted.
    estimator : str, optional
        The estimator's name, for the messages.

    Raises
    ------
    ValueError
        For a dask DataFrame (not an array), a dask array whose number of rows is unknown, an
        array that is not 2-D, no column, fewer than ``min_samples`` rows, or a complex or
        non-numeric dtype (datetimes, structured records).
    """
    by = f" by {estimator}" if estimator else ""
    kind = type(X).__name__
    if type(X).__module__.split(".")[0] == "dask" and hasattr(X, "columns"):
        raise ValueError(
            f"X is a dask {kind}; pass a dask array with known chunk sizes: X.to_dask_array(lengths=True) "
            "(the columns are then numbered by position, in the DataFrame's order)."
        )
    shape = tuple(X.shape)
    if any(isinstance(s, float) and np.isnan(s) for s in shape) or any(
        np.isnan(c) for c in getattr(X, "chunks", ((),))[0]
    ):
        raise ValueError(
            f"X ({type(X).__module__.split('.')[0]}.{kind}) has shape {shape}: the sizes of its row chunks "
            "are unknown (NaN), so its rows cannot be counted or numbered. Compute them first: "
            "X.compute_chunk_sizes(), or ddf.to_dask_array(lengths=True) for an array taken from a dask DataFrame."
        )
    if len(shape) != 2:
        raise ValueError(
            f"Expected a 2D array, got a {len(shape)}D {kind} of shape {shape}. Reshape your data with "
            "X.reshape(-1, 1) for a single column or X.reshape(1, -1) for a single row."
        )
    if shape[1] < 1:
        raise ValueError(f"Found array with 0 feature(s) (shape={shape}) while a minimum of 1 is required{by}.")
    if shape[0] < min_samples:
        raise ValueError(
            f"Found array with {shape[0]} sample(s) (shape={shape}) while a minimum of {min_samples} is required{by}."
        )
    dtype = np.dtype(X.dtype)
    if dtype.kind == "c":
        raise ValueError(
            f"Complex data not supported: X has dtype {dtype} ({kind}). Pass its real part (X.real) if "
            "the imaginary part is zero."
        )
    if dtype.kind not in "biufOUS":
        raise ValueError(f"X has dtype {dtype} ({kind}); expected numbers (integer states, or reals).")


def check_n_states(n_states, n_features) -> np.ndarray:
    """The number of states of each column from an int or a list of ints, checked.

    Parameters
    ----------
    n_states : int or array-like of int
        One number for every column, or one per column.
    n_features : int
        Number of columns of X.

    Returns
    -------
    ndarray of int64 of shape (n_features,)

    Raises
    ------
    ValueError
        Naming the entry that is not an integer, is below 2 or above
        :data:`MAX_STATES`, or the length when it is not ``n_features``.
    """
    arr = np.asarray(n_states, dtype=object if np.ndim(n_states) else None)
    if arr.ndim > 1:
        raise ValueError(f"n_states must be an int or a 1-D list with one int per column; got shape {arr.shape}.")
    flat = arr.reshape(-1)
    if arr.ndim == 1 and len(flat) != n_features:
        raise ValueError(
            f"n_states has {len(flat)} entries but X has {n_features} columns; give one number of "
            "states per column (or one int for all)."
        )
    for j, k in enumerate(flat):
        label = "n_states" if arr.ndim == 0 else f"n_states[{j}]"
        is_bool = isinstance(k, (bool, np.bool_))
        is_int = isinstance(k, (numbers.Integral, np.integer)) and not is_bool
        if not is_int and not is_bool and isinstance(k, (numbers.Real, np.floating)) and float(k).is_integer():
            is_int = True  # 3.0 is 3
        if not is_int:
            raise ValueError(f"{label} is {_show(k)}; numbers of states must be integers.")
        if not 2 <= k <= MAX_STATES:
            raise ValueError(f"{label} is {_show(k)}; every column needs between 2 and {MAX_STATES:,} states.")
    return np.broadcast_to(flat.astype(np.int64), (n_features,)).copy()


def check_n_samples(n_samples, name="n_samples") -> int:
    """``n_samples`` as a non-negative int: a TypeError for a non-integer, a ValueError below 0."""
    if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be a non-negative integer; got {n_samples!r}.")
    if n_samples < 0:
        raise ValueError(f"{name} must be a non-negative integer; got {n_samples}.")
    return int(n_samples)


# -- column labels of a DataFrame -----------------------------------------------------------
#
# scikit-learn keeps ``feature_names_in_`` only for all-string column names. A DataFrame whose
# labels are other values (integers that are not ``range(n)``, floats, dates, ...) would then be
# wired by position while the user names its columns by label in the graph: its labels are kept
# in ``feature_labels_in_`` instead, and the graph's nodes name columns by label, as they do for
# string names.


def _label_kind(v):
    if isinstance(v, str):
        return "str"
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (numbers.Integral, np.integer)):
        return "int"
    if isinstance(v, (numbers.Real, np.floating)):
        return "float"
    return type(v).__name__


def _column_labels(X):
    """The labels of a DataFrame's columns when they are read by label, else None.

    None for anything without ``columns``, for all-string labels (scikit-learn's
    ``feature_names_in_`` holds those) and for labels exactly ``0..n-1`` (label and position
    agree). Raises a ``ValueError`` for duplicated labels or labels of mixed types.
    """
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "shape") or len(getattr(X, "shape", ())) != 2:
        return None
    labels = list(columns)
    seen, dups = set(), []
    for v in labels:
        try:
            if v in seen and v not in dups:
                dups.append(v)
            seen.add(v)
        except TypeError:  # an unhashable label: pandas cannot produce one, keep the type check
            pass
    if dups:
        raise ValueError(
            f"X has duplicated column labels {dups[:10]}: each column must have its own label, for the "
            "graph to name it. Rename the columns (or pass X.to_numpy() to number them by position)."
        )
    kinds = {}
    for v in labels:
        kinds.setdefault(_label_kind(v), v)
    if len(kinds) > 1:
        shown = ", ".join(f"{k} {v!r}" for k, v in kinds.items())
        raise ValueError(
            f"X's column labels mix types ({shown}): the graph names columns by label, and labels of "
            "different types are ambiguous. Give every column a string name "
            "(X.columns = X.columns.astype(str)), or pass X.to_numpy() to number the columns by position."
        )
    if not labels or "str" in kinds:
        return None
    if "int" in kinds and [int(v) for v in labels] == list(range(len(labels))):
        return None
    out = np.empty(len(labels), dtype=object)
    out[:] = labels
    return out


def fit_column_labels(estimator, X):
    """At ``fit``: set ``estimator.feature_labels_in_`` from a DataFrame X read by label (or drop it).

    ``feature_labels_in_`` holds the labels of X's columns when they are not strings and not
    ``0..n-1`` (scikit-learn keeps string names in ``feature_names_in_``). Raises a ``ValueError``
    for duplicated labels or labels of mixed types.
    """
    labels = _column_labels(X)
    if labels is None:
        estimator.__dict__.pop("feature_labels_in_", None)
    else:
        estimator.feature_labels_in_ = labels


def check_column_labels(estimator, X):
    """At ``score`` / ``predict``: refuse a DataFrame whose columns are not those of ``fit``, by label.

    With ``feature_labels_in_``, a DataFrame must have the same labels in the same order (an
    array is read by position, as ``X.to_numpy()`` of the training frame would be). Without it
    (and without string ``feature_names_in_``), a DataFrame labelled other than ``0..n-1`` is
    refused: the fit numbered the columns by position, so its labels cannot be matched.
    """
    labels = _column_labels(X)
    fitted = getattr(estimator, "feature_labels_in_", None)
    name = type(estimator).__name__
    if fitted is None:
        if labels is not None and getattr(estimator, "feature_names_in_", None) is None:
            raise ValueError(
                f"X has columns labelled {_shown_labels(labels)}, but {name} was fitted on columns "
                "numbered by position, so its columns cannot be matched by label. Pass X.to_numpy() "
                "with the columns in the order of fit."
            )
        return
    if labels is not None and list(labels) == list(fitted):
        return
    if labels is None and getattr(X, "columns", None) is None:
        return  # an array: by position
    got = list(X.columns)
    missing = [v for v in fitted if v not in got]
    extra = [v for v in got if v not in list(fitted)]
    if missing or extra:
        what = (f"labels {missing[:10]} are missing" if missing else "") + (
            (" and " if missing and extra else "") + (f"labels {extra[:10]} were not seen at fit" if extra else "")
        )
        raise ValueError(
            f"X's columns {_shown_labels(got)} are not those {name} was fitted on "
            f"({_shown_labels(fitted)}): {what}. Give the same columns."
        )
    raise ValueError(
        f"X's columns are labelled {_shown_labels(got)}, but {name} was fitted with them in the order "
        f"{_shown_labels(fitted)}; select them in that order (X[{list(fitted)[:10]!r}])."
    )


def _shown_labels(labels):
    labels = list(labels)
    return f"{labels[:10]}{'...' if len(labels) > 10 else ''}"


def column_names(estimator):
    """The fitted columns' names or labels as a list (``feature_names_in_`` or ``feature_labels_in_``), or None."""
    for attr in ("feature_names_in_", "feature_labels_in_"):
        names = getattr(estimator, attr, None)
        if names is not None:
            return list(names)
    return None


def check_mean_weights(sample_weight, n_rows, what):
    """``sample_weight`` of a weighted mean over ``n_rows`` rows, divided by its largest weight.

    A weighted mean depends only on the weights' ratios, so this scaling changes no result while
    keeping ``sum(w)`` finite and normal whatever the weights' scale (weights of 1e307 summed to
    inf and gave a NaN score; subnormal ones lose the sum's precision). scikit-learn's checks refuse
    negative, non-finite and wrongly sized weights; here an all-zero ``sample_weight`` is refused
    too, naming ``what`` (the mean would be 0 / 0).
    """
    weight = _check_sample_weight(sample_weight, np.empty((n_rows, 0)), dtype=np.float64, ensure_non_negative=True)
    top = float(weight.max(initial=0.0))
    if not top > 0:
        raise ValueError(
            f"{what}: every sample_weight is 0, so the weighted mean is 0 / 0. Give at least one row a positive weight."
        )
    return weight / top


def check_weight_sum(total, largest, what="sample_weight"):
    """Refuse weights whose sum is not a finite, normal, positive float (a fit divides by it).

    A row of weight ``w`` counts as ``w`` rows; ``alpha="auto"`` is ``1 / sum(w)``. A sum that
    overflows, or one below the smallest normal float (about 2.2e-308, where ``1 / sum``
    overflows and the per-row means lose their precision: LAP returned NaN parameters, PL and EM
    zeros, exact ML an SVD failure, #40), is refused with the figures and the two remedies: with
    an explicit ``alpha`` only the weights' ratios matter, so a common factor is harmless; with
    ``alpha="auto"`` their sum sets the ridge, so they should be rescaled to the number of rows
    they stand for.
    """
    if np.isfinite(total) and total >= np.finfo(np.float64).tiny:
        return
    where = "overflows" if not np.isfinite(total) else "is below the smallest normal float (2.2e-308)"
    raise ValueError(
        f"{what} sums to {total:g} (largest weight {largest:g}), which {where}. A row of weight w counts as w "
        "rows: with an explicit alpha only the weights' ratios matter, so multiply or divide them by a common "
        "factor (for example divide by their maximum); with alpha='auto' (1 / the sum of the weights) the sum "
        "sets the ridge, so rescale them to the number of rows they stand for."
    )


def check_count_weights(sample_weight, n_rows, what):
    """``sample_weight`` for ``n_rows`` rows, each counting as its weight in rows (every fit, a
    deviance, standard errors): scikit-learn's checks (non-negative, finite, the right length, not
    all zero; they name the problem), then :func:`check_weight_sum`. The one weight validator of
    the package; float64."""
    weight = _check_sample_weight(sample_weight, np.empty((n_rows, 0)), dtype=np.float64, ensure_non_negative=True)
    with np.errstate(over="ignore"):
        total = float(weight.sum())
    if total > 0:
        check_weight_sum(total, float(weight.max()), f"{what}: sample_weight")
    return weight
