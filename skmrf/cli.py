"""The ``skmrf`` command line: ``fit``, ``score``, ``sample`` and ``info``.

Run as ``python -m skmrf`` or through the ``skmrf`` console script::

    skmrf fit --method lap --graph grid:28x28 data.npy --out model.npz
    skmrf score model.npz test.csv --per-row scores.npy
    skmrf sample model.npz -n 1000 --out samples.csv --random-state 0
    skmrf info model.npz

Data files are ``.npy`` (a 2-D array), ``.csv`` / ``.tsv`` (a header row of column
names, then one row per sample; empty cells and ``NA`` are missing values) or
``.parquet`` (needs pandas with pyarrow). Column names map graph nodes by name. Models
are written by :func:`skmrf.io.save_model` (format documented in :mod:`skmrf.io`).

CSV and TSV files are read as UTF-8 (a byte-order mark is dropped). Every line holds one
field per column: a row with more or fewer fields is refused with its line number (a
missing value is an empty field, ``1,,0``, not a missing one). The first non-blank line is
the header unless ``--no-header`` is given, in which case every line is data and the
columns are numbered 0..n-1; a header whose names are all numbers (other than ``0,1,...,n-1``
in order, which ``skmrf sample`` writes) is refused as a row of data. When column names
are numbers, a graph file's numbers name columns, not positions.

Errors in the input (a missing or unreadable file, a graph that does not match the data,
an unknown method, a missing column, data an estimator refuses, a file that cannot be
written) are one line on stderr, ``skmrf: error: ...``, and exit code 2. Any other
exception is a bug: one line ``skmrf: internal error: ...`` and exit code 1; ``skmrf
--debug ...`` or ``SKMRF_DEBUG=1`` shows its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import re
import sys
import threading
import time
import warnings
from dataclasses import dataclass

import numpy as np

from . import __version__
from . import estimators as _estimators
from .io import load_model, read_header, save_model
from .utils._atomic import replacing

__all__ = ["METHODS", "main"]

#: ``--method`` names and the estimator each one fits.
METHODS = {
    "exact": "ExactMaxLikelihood",
    "lap": "LAPEstimator",
    "pseudo": "PseudoLikelihoodEstimator",
    "mcmc": "MCMCMaxLikelihood",
    "em": "DecomposedEM",
    "gaussian-lap": "GaussianLAP",
    "gaussian-ml": "GaussianMaxLikelihood",
}

#: An environment variable: set (to anything but "" or "0"), errors show their traceback, as ``--debug`` does.
DEBUG_ENV = "SKMRF_DEBUG"
_SHORTHAND = re.compile(r"chain|complete|grid:\d+x\d+")
_DATA_SUFFIXES = (".npy", ".csv", ".tsv", ".parquet")
_MISSING = {"", "na", "nan", "n/a", "null", "none"}


class CLIError(Exception):
    """A usage or data error: printed as one line and exit code 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (raised, so ``main`` prints them)."""

    def error(self, message):
        command = self.prog.removeprefix("skmrf").strip()
        raise CLIError(f"{command + ': ' if command else ''}{message} (see '{self.prog} --help')")


# -- data files --------------------------------------------------------------------
@dataclass
class Table:
    """Numbers read from a data file: ``values`` (2-D float or int array) and column names, if any."""

    values: np.ndarray
    columns: list | None
    path: str


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _suffix(path):
    return os.path.splitext(path)[1].lower()


def _check_exists(path, what="data file"):
    if not os.path.exists(path):
        raise CLIError(f"{path}: no such {what}.")
    if os.path.isdir(path):
        raise CLIError(f"{path} is a directory; give a {what}.")


def _number(cell):
    """A CSV or parquet cell as a float (NaN when missing) or None when it is not a number."""
    if not isinstance(cell, str):
        try:
            return float(cell)
        except (TypeError, ValueError):
            return None
    t = cell.strip()
    if t.lower() in _MISSING:
        return math.nan
    try:
        return float(t)
    except ValueError:
        return None


def _numeric_columns(path, columns, cells, lines=None):
    """A float array from cells (rows of lists), naming the first cell that is not a number.

    ``columns`` are the names (None: columns are numbered); ``lines`` the file's line number
    of each row, for the message (None: rows are counted from 1).
    """
    n_columns = len(columns) if columns is not None else (len(cells[0]) if len(cells) else 0)
    try:  # the fast path: every cell a number
        return np.asarray(cells, dtype=np.float64).reshape(len(cells), n_columns)
    except (TypeError, ValueError):
        pass
    out = np.empty((len(cells), n_columns))
    for r, row in enumerate(cells):
        for j, cell in enumerate(row):
            v = _number(cell)
            if v is None:
                where = f"line {lines[r]}" if lines is not None else f"data row {r + 1}"
                raise CLIError(
                    f"{path}: {_column_name(columns, j)} has the non-numeric value {cell!r} at {where}; "
                    "give integer states (discrete methods) or numbers (Gaussian methods)."
                )
            out[r, j] = v
    return out


def _column_name(columns, j):
    return f"column {columns[j]!r}" if columns is not None else f"column {j}"


def _csv_rows(path, delimiter):
    """``(line number, fields)`` of every non-blank line of a CSV file (a UTF-8 byte-order mark is dropped)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f, delimiter=delimiter, skipinitialspace=True)
        for row in reader:
            if row and not (len(row) == 1 and not row[0].strip()):
                yield reader.line_num, row


def _looks_like_data(columns):
    """Whether a header row reads as numbers (or missing values), other than the indices 0..n-1 in order."""
    values = [_number(c) for c in columns]
    if any(v is None for v in values) or all(math.isnan(v) for v in values):
        return False
    return columns != [str(j) for j in range(len(columns))]


def _csv_header(path, delimiter):
    """The column names of a CSV file's first non-blank row and its line number, checked.

    Refuses a header with a duplicate or an empty name, and one that looks like a row of
    data (every name a number), which ``--no-header`` reads as data.
    """
    line, header = next(_csv_rows(path, delimiter), (0, None))
    if header is None:
        raise CLIError(f"{path} is empty; expected a header row of column names, then one row per sample.")
    columns = [c.strip() for c in header]
    other = next((sep for sep in (",", "\t", ";", "|") if sep != delimiter and sep in columns[0]), None)
    if len(columns) == 1 and other is not None:
        raise CLIError(
            f"{path}: the header {_short(columns[0])} is one column: its fields seem separated by {other!r}; "
            "skmrf reads .csv files separated by commas and .tsv files by tabs."
        )
    if _looks_like_data(columns):
        raise CLIError(
            f"{path}: the first line {_short(delimiter.join(columns))} looks like data, not column names "
            "(they are numbers); if the file has no header row, give --no-header."
        )
    if "" in columns:
        raise CLIError(
            f"{path}: column {columns.index('') + 1} of the header (line {line}) has no name; "
            "give every column a name, or give --no-header if the first line is data."
        )
    if len(set(columns)) != len(columns):
        dup = next(c for k, c in enumerate(columns) if c in columns[:k])
        raise CLIError(f"{path}: column name {dup!r} appears twice in the header; give each column its own name.")
    return line, columns


def _data_rows(path, delimiter, skip, n_columns, header):
    """``(line number, fields)`` of every data row after line ``skip``, refusing a row of another length."""
    for number, row in _csv_rows(path, delimiter):
        if number <= skip:
            continue
        if len(row) != n_columns:
            fields = f"{len(row)} field{'s' if len(row) != 1 else ''}"
            expected = f"the header has {n_columns}" if header else f"the first row has {n_columns}"
            raise CLIError(
                f"{path}: line {number} has {fields} but {expected}; every row needs one field per column "
                "(a missing value is an empty field, as in 1,,0)."
            )
        yield number, row


def _fast_csv_body(path, delimiter, skip, n_columns, n_rows):
    """The ``n_rows`` rows of numbers after line ``skip`` by a C parser (pandas, else numpy), or None.

    The caller has checked that every row has ``n_columns`` fields (these parsers would
    pad a short row with missing values). None when a cell is not a number (numpy: or is
    missing) or the parser counts other rows: the caller then reads the file cell by cell.
    """
    pd = _pandas()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # numpy's "input contained no data": the caller says it
            if pd is not None:
                values = pd.read_csv(
                    path,
                    sep=delimiter,
                    header=None,
                    names=range(n_columns),
                    skiprows=skip,
                    dtype=np.float64,
                    na_values=sorted(_MISSING | {v.upper() for v in _MISSING}),
                    keep_default_na=False,
                    skipinitialspace=True,
                    encoding="utf-8-sig",
                ).to_numpy()
            else:
                values = np.loadtxt(
                    path, delimiter=delimiter, skiprows=skip, quotechar='"', comments=None, encoding="utf-8-sig"
                )
    except ValueError:
        return None
    return values.reshape(-1, n_columns) if values.size == n_rows * n_columns else None


def _read_csv(path, delimiter, header=True):
    """``(columns, float array)`` of a CSV file; missing cells are NaN.

    With ``header=False`` every line is data and ``columns`` is None. Every row must
    have as many fields as the header (or the first row): a short or long row is refused
    with its line number, as a missing value is an empty field, not a missing one.
    """
    if header:
        skip, columns = _csv_header(path, delimiter)
        n_columns = len(columns)
    else:
        skip, first = next(_csv_rows(path, delimiter), (0, None))
        if first is None:
            raise CLIError(f"{path} is empty; expected one row per sample.")
        skip, columns, n_columns = skip - 1, None, len(first)
    n_rows = sum(1 for _ in _data_rows(path, delimiter, skip, n_columns, header))
    values = _fast_csv_body(path, delimiter, skip, n_columns, n_rows)
    if values is not None:
        return columns, values
    lines, cells = [], []
    for number, row in _data_rows(path, delimiter, skip, n_columns, header):
        lines.append(number)
        cells.append(row)
    return columns, _numeric_columns(path, columns, cells, lines).reshape(-1, n_columns)


def _read_parquet(path):
    pd = _pandas()
    if pd is None:
        raise CLIError(f"{path}: reading .parquet files needs pandas (pip install pandas pyarrow).")
    try:
        df = pd.read_parquet(path)
    except ImportError as exc:
        raise CLIError(f"{path}: reading .parquet files needs pyarrow or fastparquet ({exc}).") from None
    except Exception as exc:  # the engines raise their own classes for a damaged file
        raise CLIError(f"{path} cannot be read as .parquet: {type(exc).__name__}: {exc}") from exc
    columns = [str(c) for c in df.columns]
    for name, dtype in zip(columns, df.dtypes):
        if dtype.kind in "mM":
            raise CLIError(
                f"{path}: column {name!r} holds dates or durations ({dtype}), not numbers; give integer states "
                "(discrete methods) or numbers (Gaussian methods), or drop the column."
            )
    cells = df.to_numpy(dtype=object, na_value=math.nan)
    return columns, _numeric_columns(path, columns, cells)


def read_table(path, header=True):
    """Read a data file (``.npy``, ``.csv``, ``.tsv``, ``.parquet``) into a :class:`Table`.

    Parameters
    ----------
    path : str
        The file; its suffix gives the format.
    header : bool, default=True
        Whether the first non-blank line of a ``.csv`` / ``.tsv`` file holds the column
        names. False: every line is data and the columns are numbered. Only for text files.

    Returns
    -------
    Table
        The values (float64 for text formats, missing cells NaN; the stored dtype
        for ``.npy``) and the column names (None for ``.npy`` and without a header).

    Raises
    ------
    CLIError
        Naming the file (and the column, line or value) when it cannot be read: a header
        that looks like data (every name a number, other than ``0, 1, ..., n-1``), a row
        with more or fewer fields than the header, a cell that is not a number, no rows.
    """
    _check_exists(path)
    suffix = _suffix(path)
    if not header and suffix not in (".csv", ".tsv"):
        raise CLIError(f"--no-header applies to .csv and .tsv files; {path} is a {suffix or 'file without suffix'}.")
    try:
        if suffix == ".npy":
            values = np.load(path, mmap_mode="r", allow_pickle=False)  # read lazily: it may be large
            if values.ndim != 2:
                raise CLIError(f"{path} holds a {values.ndim}-D array of shape {values.shape}; give a 2-D array.")
            if values.dtype.kind not in "biuf":
                raise CLIError(f"{path} holds an array of dtype {values.dtype}; give numbers.")
            columns = None
        elif suffix in (".csv", ".tsv"):
            columns, values = _read_csv(path, "\t" if suffix == ".tsv" else ",", header)
        elif suffix == ".parquet":
            columns, values = _read_parquet(path)
        else:
            raise CLIError(f"{path}: unknown data file type {suffix or '(none)'!r}; give {', '.join(_DATA_SUFFIXES)}.")
    except UnicodeDecodeError as exc:
        raise CLIError(f"{path} is not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8.") from None
    except (ValueError, OSError) as exc:
        raise CLIError(f"{path} cannot be read as {suffix or 'data'}: {exc}") from None
    if values.shape[0] == 0:
        raise CLIError(f"{path} has no rows of data" + (" below its header." if columns is not None else "."))
    if values.shape[1] == 0:
        raise CLIError(f"{path} has no columns.")
    return Table(values, columns, path)


def write_table(path, values, columns=None):
    """Write an array to ``.npy``, ``.csv``/``.tsv`` (with a header row) or ``.parquet``.

    The file is written beside ``path`` under a temporary name and renamed over it when
    complete, so a failed write (a full disk) leaves no partial file.

    Parameters
    ----------
    path : str
        The file; its suffix gives the format.
    values : ndarray of shape (n_rows, n_columns) or (n_rows,)
        What to write; a 1-D array is one column. ``n_rows`` may be 0 (a header alone).
    columns : list of str, optional
        The header; ``"0"``, ``"1"``, ... if omitted (not used for ``.npy``).

    Raises
    ------
    CLIError
        If the file cannot be written (naming it and the reason).
    """
    suffix = _suffix(path)
    values = np.asarray(values)
    table = values if values.ndim == 2 else values.reshape(-1, 1)
    if columns is None:
        columns = [str(j) for j in range(table.shape[1])]
    pd = _pandas() if suffix == ".parquet" else None
    if suffix == ".parquet" and pd is None:
        raise CLIError(f"{path}: writing .parquet files needs pandas (pip install pandas pyarrow).")
    with _replacing(path) as tmp:
        if suffix == ".npy":
            np.save(tmp, values)
        elif suffix == ".parquet":
            try:
                pd.DataFrame(table, columns=columns).to_parquet(tmp)
            except ImportError as exc:
                raise CLIError(f"{path}: writing .parquet files needs pyarrow or fastparquet ({exc}).") from None
        else:
            with open(tmp, "w", newline="") as f:
                w = csv.writer(f, delimiter="\t" if suffix == ".tsv" else ",")
                w.writerow(columns)
                rows = table.tolist() if table.dtype.kind in "iub" else ([repr(float(v)) for v in r] for r in table)
                w.writerows(rows)


@contextlib.contextmanager
def _replacing(path):
    """:func:`~skmrf.utils._atomic.replacing`, with an ``OSError`` (disk full, permission denied) as a CLIError."""
    try:
        with replacing(path) as tmp:
            yield tmp
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _check_output(path, what, suffixes=(".npy", ".csv", ".tsv", ".parquet")):
    """Refuse an output file of an unknown type, a directory or in a folder that does not exist, before the work."""
    suffix = _suffix(path)
    if suffix not in suffixes:
        raise CLIError(f"{what} {path}: unknown file type {suffix or '(none)'!r}; give {', '.join(suffixes)}.")
    if os.path.isdir(path):
        raise CLIError(f"{what} {path} is a directory; give a file name.")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CLIError(f"{what} {path}: the folder {folder} does not exist.")


# -- graphs ----------------------------------------------------------------------
def _resolve_token(token, columns, n_features):
    """Column index of an edge-file token: a column name, else an integer index; None if neither.

    When a column name is itself an integer (a header ``2,0,1``), integers are names only:
    the token ``"0"`` is the column named 0, and an integer that names no column is refused
    rather than read as a position.
    """
    if columns is not None and token in columns:
        return columns.index(token)
    if columns is not None and any(re.fullmatch(r"\d+", c) for c in columns):
        return None
    if re.fullmatch(r"\d+", token) and int(token) < n_features:
        return int(token)
    return None


def read_graph(spec, table, by_name=True):
    """The ``graph`` parameter from ``--graph``: a shorthand, or the factors of an edge file.

    An edge file (``.csv``, ``.tsv``, ``.txt``) lists one factor per line, two or more
    variables separated by commas or tabs (or by spaces on a line with neither); a variable is a column name or a
    column index. Lines starting with ``#`` are comments; a first line naming no
    column (such as ``source,target``) is a header and skipped, with a warning (it may be
    a misspelt edge). The factors are
    returned as column names when the data has them and ``by_name`` (the estimator
    sees a DataFrame and maps them by name), else as column indices.

    Parameters
    ----------
    spec : str
        The ``--graph`` argument.
    table : Table
        The data, whose columns the variables name.
    by_name : bool, default=True
        Return factors as column names when the data has them.

    Returns
    -------
    str or list of tuple
        The shorthand itself, or one tuple per factor.

    Raises
    ------
    CLIError
        Naming the file, line and variable that is not a column of the data.
    """
    if _SHORTHAND.fullmatch(spec):
        return spec
    if not os.path.exists(spec):
        raise CLIError(f"--graph {spec!r} is neither 'chain', 'complete', 'grid:RxC' nor an existing file of edges.")
    _check_exists(spec, "graph file")
    columns, n = table.columns, table.values.shape[1]
    factors = []
    try:
        with open(spec, encoding="utf-8-sig") as f:  # a byte-order mark is not part of the first name
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CLIError(f"graph file {spec} cannot be read: {exc}") from None
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        sep = r"[,\t]" if ("," in text or "\t" in text) else r"\s+"  # names may hold spaces in CSV/TSV
        tokens = [t.strip().strip('"') for t in re.split(sep, text) if t.strip()]
        idx = [_resolve_token(t, columns, n) for t in tokens]
        if not factors and number == _first_content_line(lines) and all(i is None for i in idx):
            _warn(f"graph file {spec}: line {number} {text!r} names no column of {table.path}; skipped as a header.")
            continue  # a header such as "source,target"; said, as it may be a misspelt edge
        factors.append(_factor(tokens, table, by_name, f"graph file {spec}, line {number}"))
    if not factors:
        raise CLIError(f"graph file {spec} lists no edges.")
    return factors


def _factor(tokens, table, by_name, where):
    """One factor from the tokens naming its columns: column names when ``by_name`` and the data has
    names, else column indices (see :func:`_resolve_token`); a CLIError starting with ``where`` otherwise."""
    columns, n = table.columns, table.values.shape[1]
    idx = [_resolve_token(t, columns, n) for t in tokens]
    bad = next((t for t, i in zip(tokens, idx) if i is None), None)
    if bad is not None:
        shown = f"{columns[:10]}{'...' if n > 10 else ''}" if columns else ""
        if columns is None:
            known = f"column indices 0 to {n - 1}"
        elif any(re.fullmatch(r"\d+", c) for c in columns):
            known = f"named {shown}; some names are numbers, so numbers name columns, not positions"
        else:
            known = f"columns {shown} or indices 0 to {n - 1}"
        raise CLIError(f"{where}: {bad!r} is not a column of {table.path} (it has {n} columns: {known}).")
    if len(tokens) < 2:
        raise CLIError(f"{where}: {', '.join(tokens)!r} names one variable; a factor lists two or more.")
    return tuple(columns[i] for i in idx) if columns and by_name else tuple(idx)


def _set_graph(value, table, by_name):
    """``--set graph=VALUE``: a JSON list of factors resolved as a graph file's lines are; else as given."""
    if not (isinstance(value, list) and value and all(isinstance(f, list) for f in value)):
        return value
    return [_factor([str(t) for t in f], table, by_name, f"--set graph, factor {k}") for k, f in enumerate(value, 1)]


def _first_content_line(lines):
    return next((k for k, line in enumerate(lines, start=1) if line.split("#", 1)[0].strip()), 0)


# -- estimators ------------------------------------------------------------------
def _param_value(text):
    """A ``--set`` value: JSON (numbers, true/false/null, lists) or else the string itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _number_or_auto(text):
    if text == "auto":
        return text
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None
    return int(v) if v.is_integer() and "." not in text and "e" not in text.lower() else v


def _integer(low, high=None):
    """An argparse type: an integer in ``[low, high]``, refused with the range otherwise."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(
                f"expected an integer {f'from {low} to {high}' if high is not None else f'>= {low}'}, got {value}"
            )
        return value

    return parse


_SEED = _integer(0, 2**32 - 1)  # what numpy.random.RandomState accepts


def _build_estimator(args, graph, table, by_name):
    cls = getattr(_estimators, METHODS[args.method])
    accepted = cls().get_params()
    params = {"graph": graph}
    modelling = {
        "alpha": args.alpha,
        "n_states": args.n_states,
        "max_iter": args.max_iter,
        "tol": args.tol,
        "score_method": args.score_method,
        "shrinkage": args.shrinkage,
    }
    for name, value in modelling.items():
        if value is None:
            continue
        if name not in accepted:
            raise CLIError(
                f"--{name.replace('_', '-')} does not apply to --method {args.method}: {cls.__name__} has no "
                f"{name!r} parameter (it has {', '.join(sorted(accepted))})."
            )
        params[name] = value
    for item in args.set or []:
        name, sep, value = item.partition("=")
        if not sep or name not in accepted:
            raise CLIError(
                f"--set {item!r}: expected NAME=VALUE with NAME a parameter of {cls.__name__} "
                f"({', '.join(sorted(accepted))})."
            )
        params[name] = _param_value(value) if name != "graph" else _set_graph(_param_value(value), table, by_name)
    runtime = {"n_jobs": args.n_jobs, "random_state": args.random_state, "verbose": max(0, args.verbose - 1)}
    for name, value in runtime.items():
        if name in accepted:
            params[name] = value
        elif value not in (None, 0):
            _warn(f"--{name.replace('_', '-')} is ignored: {cls.__name__} has no {name!r} parameter.")
    return cls(**params)


def _fit_input(table):
    """What ``fit`` receives: a DataFrame when the file names its columns (and pandas is there)."""
    pd = _pandas()
    if table.columns is not None and pd is not None:
        return pd.DataFrame(table.values, columns=table.columns)
    return table.values


def _score_input(est, table, model_path):
    """The data in the model's column order (by name when both have names)."""
    names = getattr(est, "feature_names_in_", None)
    values = table.values
    if names is not None and table.columns is not None:
        names = list(names)
        missing = [c for c in names if c not in table.columns]
        if missing:
            raise CLIError(
                f"{table.path} has no column {missing[0]!r}"
                + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else "")
                + f", which the model {model_path} was fitted on; its columns are {names[:10]}"
                + ("..." if len(names) > 10 else "")
                + "."
            )
        extra = [c for c in table.columns if c not in names]
        if extra:
            _warn(f"ignoring columns {extra[:10]} of {table.path}, which the model does not have.")
        values = values[:, [table.columns.index(c) for c in names]]
    pd = _pandas()
    if names is not None and pd is not None and values.shape[1] == len(names):
        return pd.DataFrame(values, columns=list(names))
    return values


# -- progress ----------------------------------------------------------------------
class _Progress:
    """A plain stderr counter of elapsed seconds while a step runs (when ``-v`` is given).

    On a terminal the line is rewritten every second; elsewhere only the start
    and end lines are written. The estimator's own ``verbose`` lines (``-vv``)
    replace the counter.
    """

    def __init__(self, label, verbose, stream=None):
        self.label, self.verbose = label, verbose
        self.stream = stream if stream is not None else sys.stderr
        self._stop = threading.Event()
        self._thread = None

    def _tick(self):
        while not self._stop.wait(1.0):
            self.stream.write(f"\rskmrf: {self.label} ... {time.perf_counter() - self.start:.0f} s")
            self.stream.flush()

    def __enter__(self):
        self.start = time.perf_counter()
        if self.verbose:
            self.stream.write(f"skmrf: {self.label} ...")
            live = self.verbose == 1 and getattr(self.stream, "isatty", lambda: False)()
            if live:
                self._thread = threading.Thread(target=self._tick, daemon=True)
                self._thread.start()
            else:
                self.stream.write("\n")
            self.stream.flush()
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.stream.write("\r")
        if self.verbose and exc[0] is None:
            self.stream.write(f"skmrf: {self.label}: done in {time.perf_counter() - self.start:.2f} s\n")
        self.stream.flush()
        return False


# -- commands ----------------------------------------------------------------------
@contextlib.contextmanager
def _user_errors(prefix):
    """A ``ValueError`` (bad data or parameters, a damaged model file) as a CLIError starting with ``prefix``.

    skmrf's estimators and :mod:`skmrf.io` refuse bad input with a ``ValueError`` subclass
    that names the culprit; any other exception is an internal error (see :func:`main`).
    """
    try:
        yield
    except ValueError as exc:
        message = str(exc)
        raise CLIError(message if message.startswith(prefix) else f"{prefix}: {message}") from exc


def _load(path):
    _check_exists(path, "model file")
    with _user_errors(path):
        return load_model(path)


def _cmd_fit(args):
    _check_output(args.out, "--out", (".npz",))
    table = read_table(args.data, header=not args.no_header)
    X = _fit_input(table)
    by_name = X is not table.values
    est = _build_estimator(args, read_graph(args.graph, table, by_name), table, by_name)
    rows, cols = table.values.shape
    label = f"fitting {type(est).__name__} on {args.data} ({rows} rows, {cols} columns)"
    with _Progress(label, args.verbose), contextlib.redirect_stdout(sys.stderr), _user_errors(args.data):
        est.fit(X)
    try:
        with _user_errors(args.out):
            save_model(est, args.out)  # atomic: written beside args.out, then renamed
    except OSError as exc:
        raise CLIError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
    if args.verbose:
        print(f"skmrf: saved {type(est).__name__} to {args.out}", file=sys.stderr)
    return 0


def _cmd_score(args):
    est = _load(args.model)
    if args.per_row:
        _check_output(args.per_row, "--per-row")
    table = read_table(args.data, header=not args.no_header)
    X = _score_input(est, table, args.model)
    with _Progress(f"scoring {args.data}", args.verbose), contextlib.redirect_stdout(sys.stderr):
        with _user_errors(args.data):
            values = est.score_samples(X)
    if args.per_row:
        write_table(args.per_row, values, ["log_likelihood"])
    print(repr(float(np.mean(values))))
    return 0


def _cmd_sample(args):
    """Draw ``-n`` samples; ``-n 0`` writes an empty sample (a header alone), as ``sample(0)`` returns one."""
    est = _load(args.model)
    if not hasattr(est, "sample"):
        raise CLIError(f"{args.model} holds a {type(est).__name__}, which cannot sample; sample needs a discrete one.")
    _check_output(args.out, "--out")
    with _Progress(f"drawing {args.n_samples} samples", args.verbose), contextlib.redirect_stdout(sys.stderr):
        with _user_errors(args.model):
            X = est.sample(args.n_samples, random_state=args.random_state, method=args.method, n_sweeps=args.n_sweeps)
    names = getattr(est, "feature_names_in_", None)
    write_table(args.out, X, None if names is None else [str(c) for c in names])
    return 0


def _summary(values):
    values = np.asarray(values, dtype=float)
    if not values.size:
        return "none"
    return f"{values.size} values, min {values.min():.6g}, max {values.max():.6g}, mean |.| {np.abs(values).mean():.6g}"


def describe(path):
    """The lines ``skmrf info`` prints for a saved model.

    Parameters
    ----------
    path : str
        A file written by :func:`skmrf.io.save_model`.

    Returns
    -------
    list of str
        Format version, estimator, parameters, variables, structure and fitted numbers.
    """
    header = read_header(path)
    est = load_model(path)
    n = header["n_features"]
    names = header.get("feature_names")
    lines = [
        f"file: {path} ({header['format']} format version {header['format_version']}, "
        f"written by skmrf {header.get('skmrf_version')})",
        f"estimator: {header['estimator']} ({header['kind']})",
        "parameters: " + ", ".join(f"{k}={_short(v)}" for k, v in sorted(header["params"].items())),
        f"variables: {n}"
        + (f" (columns {', '.join(names[:10])}{', ...' if n > 10 else ''})" if names else " (unnamed columns)"),
    ]
    if header["kind"] == "discrete":
        model = est.model_
        k = model.n_states
        sizes = np.bincount([len(c) for c in model.cliques])
        lines += [
            f"states: {k.min()}" + ("" if k.min() == k.max() else f" to {k.max()}") + " per variable",
            "cliques: " + ", ".join(f"{c} of size {s}" for s, c in enumerate(sizes) if c),
            f"theta: {_summary(model.theta)}",
            f"score_method_: {getattr(est, 'score_method_', None)}, log_partition_: {est.log_partition_!r}",
        ]
    else:
        P = est.standardized_precision_
        lines += [
            f"precision: {n} x {n}, {P.nnz} non-zeros ({(P.nnz - n) // 2} edges), "
            f"positive definite: {'yes' if est.is_positive_definite_ else 'no'}",
            f"log_partition_: {float(est.log_partition_)!r}",
        ]
    fitted = {k: v for k, v in header.get("fitted", {}).items() if k != "score_method_"}
    if fitted:
        lines.append("fitted: " + ", ".join(f"{k}={_short(v)}" for k, v in sorted(fitted.items())))
    return lines


def _short(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cmd_info(args):
    _check_exists(args.model, "model file")
    with _user_errors(args.model):
        lines = describe(args.model)
    print("\n".join(lines))
    return 0


# -- parser and entry point -----------------------------------------------------------
def build_parser():
    """The ``skmrf`` argument parser (its help lists every command).

    Returns
    -------
    argparse.ArgumentParser
        With one sub-parser per command; ``args.run(args)`` runs the parsed one.
    """
    parser = _Parser(
        prog="skmrf",
        description="Learn Markov random field parameters from data files, score, sample and inspect saved models.",
        epilog=(
            "Run 'skmrf COMMAND --help' for the options of a command. An error is one line on stderr: exit code 2 "
            "for a problem with the input (arguments, files, data, a full disk), 1 for an internal error (a bug "
            f"in skmrf: --debug or {DEBUG_ENV}=1 shows its traceback), 130 when interrupted."
        ),
    )
    parser.add_argument("--version", action="version", version=f"skmrf {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help=f"show the traceback of an error (as does {DEBUG_ENV}=1); before COMMAND"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name, run, summary, description, verbose=True):
        p = sub.add_parser(name, help=summary, description=description)
        p.set_defaults(run=run, verbose=0)
        if verbose:
            p.add_argument(
                "-v", "--verbose", action="count", default=0, help="progress on stderr; -vv adds the estimator's lines"
            )
        return p

    fit = command(
        "fit",
        _cmd_fit,
        "fit a model to a data file and save it (.npz)",
        "Fit an MRF to DATA (.npy, .csv with a header, .tsv, .parquet) and save it to --out.",
    )
    fit.add_argument("data", metavar="DATA", help="the training data, one row per sample")
    _add_no_header(fit)
    fit.add_argument("--out", "-o", required=True, metavar="MODEL.npz", help="the model file to write")
    fit.add_argument(
        "--method",
        "-m",
        default="lap",
        choices=list(METHODS),
        help="the estimator: " + ", ".join(f"{k} ({v})" for k, v in METHODS.items()) + "; default lap",
    )
    fit.add_argument(
        "--graph",
        "-g",
        default="chain",
        help=(
            "'chain' (default), 'complete', 'grid:RxC', or a file of edges (one per line, column names or indices; "
            "numbers are names when some column names are numbers)"
        ),
    )
    fit.add_argument("--alpha", type=_number_or_auto, help="ridge penalty alpha/2 ||theta||^2, or 'auto'")
    fit.add_argument("--n-states", type=_number_or_auto, help="states per variable, or 'auto' (max + 1)")
    fit.add_argument("--max-iter", type=int, help="iteration limit of the solver")
    fit.add_argument("--tol", type=float, help="convergence tolerance of the solver")
    fit.add_argument(
        "--score-method", choices=["auto", "exact", "pseudo", "ais", "bound"], help="how score computes log Z"
    )
    fit.add_argument("--shrinkage", type=float, help="Gaussian methods: covariance shrinkage in [0, 1)")
    fit.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help=(
            'any other estimator parameter (VALUE read as JSON, else as text); repeatable. graph=[["a", "b"], ...] '
            "names columns as a graph file does"
        ),
    )
    fit.add_argument("--n-jobs", "-j", type=int, help="parallel workers (-1: all CPUs)")
    fit.add_argument("--random-state", type=_SEED, help="seed for the randomised methods (0 to 2**32 - 1)")

    score = command(
        "score",
        _cmd_score,
        "print the mean log-likelihood of a data file under a model",
        "Print the mean log-likelihood per row of DATA under MODEL (as estimator.score).",
    )
    score.add_argument("model", metavar="MODEL.npz")
    score.add_argument("data", metavar="DATA")
    _add_no_header(score)
    score.add_argument("--per-row", metavar="FILE", help="also write each row's log-likelihood (.npy, .csv)")

    sample = command(
        "sample",
        _cmd_sample,
        "draw samples from a discrete model into a data file",
        "Draw samples from the discrete MODEL and write them to --out (.npy, .csv, .tsv, .parquet).",
    )
    sample.add_argument("model", metavar="MODEL.npz")
    sample.add_argument("--out", "-o", required=True, metavar="FILE")
    sample.add_argument(
        "--n-samples",
        "-n",
        type=_integer(0),
        default=100,
        help="number of samples (default 100; 0 writes an empty file)",
    )
    sample.add_argument("--method", choices=["auto", "exact", "gibbs"], default="auto", help="sampler (default auto)")
    sample.add_argument("--n-sweeps", type=_integer(1), default=200, help="Gibbs sweeps per chain (default 200)")
    sample.add_argument("--random-state", type=_SEED, help="seed of the draws (0 to 2**32 - 1)")

    info = command(
        "info",
        _cmd_info,
        "describe a saved model",
        "Print a saved model's class, parameters, variables, cliques and format version.",
        verbose=False,
    )
    info.add_argument("model", metavar="MODEL.npz")
    return parser


def _add_no_header(parser):
    parser.add_argument(
        "--no-header",
        action="store_true",
        help=(
            "the .csv/.tsv file has no header row: every line is data and the columns are numbered 0..n-1 "
            "(a graph file names them by number). Without it the first line must name the columns; a first line "
            "of numbers (other than 0,1,...,n-1 in order) is refused as data. Every line needs one field per "
            "column; a missing value (--method em) is an empty field or NA, as in 1,,0"
        ),
    )


def _one_line(text):
    return " ".join(str(text).split())


def _warn(message):
    print(f"skmrf: warning: {_one_line(message)}", file=sys.stderr)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    _warn(message)


def _debug_from_env():
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def _error_line(exc):
    """``(exit code, one line)`` for an exception that reached :func:`main`."""
    if isinstance(exc, CLIError):
        return 2, f"skmrf: error: {_one_line(exc)}"
    if isinstance(exc, OSError):  # a file that cannot be read or written, a full disk
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return 2, f"skmrf: error: {_one_line(where + (exc.strerror or str(exc)))}"
    if isinstance(exc, Warning):  # raised because the warnings filter says "error" (python -W error)
        return 2, f"skmrf: error: {_one_line(exc)} ({type(exc).__name__}, an error by the warnings filter)"
    if isinstance(exc, MemoryError):
        return 2, (
            f"skmrf: error: out of memory ({_one_line(exc) or 'MemoryError'}); use fewer rows or variables, "
            "a sparser graph or a method that needs less memory."
        )
    return 1, (
        f"skmrf: internal error: {type(exc).__name__}: {_one_line(exc)} -- this is a bug in skmrf {__version__}; "
        f"please report it with the command you ran ('skmrf --debug ...' or {DEBUG_ENV}=1 shows the traceback)."
    )


def main(argv=None):
    """Run the ``skmrf`` command line.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; ``sys.argv[1:]`` if omitted.

    Returns
    -------
    int
        The exit code: 0 on success; 2 for an error in the input (arguments, data or
        model files, data the estimator refuses, a file that cannot be written, no memory
        left), printed as one line ``skmrf: error: ...`` on stderr; 1 for an internal
        error (any other exception: a bug), printed as one line ``skmrf: internal error:
        ...`` asking for a report; 130 when interrupted (Ctrl-C).

    Notes
    -----
    With ``--debug`` (before the command) or the environment variable ``SKMRF_DEBUG=1``
    the exception is raised instead, so Python prints its traceback.
    """
    debug = _debug_from_env()
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            args = build_parser().parse_args(argv)
            debug = debug or args.debug
            return args.run(args)
        except SystemExit as exc:  # --help, --version
            return exc.code if isinstance(exc.code, int) else 0
        except KeyboardInterrupt:
            print("skmrf: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:
            if debug:
                raise
            code, line = _error_line(exc)
            print(line, file=sys.stderr)
            return code
