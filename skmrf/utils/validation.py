"""Validation of categorical data and random states."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["MAX_STATES", "check_generator", "check_n_samples", "check_n_states", "check_states"]

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


def _needs_scan(X, allow_nan):
    """Whether an object/string array holds a None (when missing values are not allowed) or a
    value that does not convert to float: both vectorised checks."""
    if not allow_nan and np.equal(X, None).any():
        return True
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
        if allow_nan:
            X = np.where(np.equal(X, None), np.nan, X)  # None is a missing value too
        # The per-entry scan (a Python loop) only runs when a value will not convert, to find it.
        bad = _first_non_numeric(X) if _needs_scan(X, allow_nan) else None
        if bad is not None:
            r, j, v = bad
            shown = repr(str(v)) if isinstance(v, (str, np.str_, bytes)) else repr(v)
            where = f"{_label(j, feature_names)} has the non-numeric value {shown} at row {r}"
            if v is not None and not isinstance(v, str):  # a dict, a list, ...: numpy's TypeError
                raise TypeError(
                    f"X must hold integer-coded states 0..K-1, but {where}: float() argument must be a "
                    f"string or a real number, not {type(v).__name__!r}."
                )
            raise ValueError(
                f"X must hold integer-coded states 0..K-1, but {where}"
                f"{' (a missing value)' if v is None else ''}. Encode categories with "
                "sklearn.preprocessing.OrdinalEncoder."
            )
    try:
        xf = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "X must hold integer-coded states 0..K-1; it contains non-numeric values. "
            "Encode categories with sklearn.preprocessing.OrdinalEncoder."
        ) from None
    nan = np.isnan(xf)
    bad = np.isinf(xf) | (nan & (not allow_nan))
    if bad.any():
        r, j = np.argwhere(bad)[0]
        raise ValueError(
            f"Input contains NaN or infinity: {_label(j, feature_names)} has {xf[r, j]} at row {r}. "
            "Complete-data estimators need every value observed; drop or impute missing "
            "values, or use an estimator for incomplete data."
        )
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
