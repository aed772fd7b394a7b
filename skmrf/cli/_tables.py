"""Data files: read ``.npy``, ``.csv``, ``.tsv`` and ``.parquet`` into a :class:`Table`, write arrays."""

from __future__ import annotations

import contextlib
import csv
import math
import os
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from .._utils._atomic import replacing
from . import _common
from ._common import CLIError, short

_DATA_SUFFIXES = (".npy", ".csv", ".tsv", ".parquet")
_MISSING = {"", "na", "nan", "n/a", "null", "none"}

#: The output path that means standard output (CSV).
STDOUT = "-"


@dataclass
class Table:
    """Numbers read from a data file: ``values`` (2-D float or int array) and column names, if any."""

    values: np.ndarray
    columns: list | None
    path: str


def _suffix(path):
    return os.path.splitext(path)[1].lower()


def check_exists(path, what="data file"):
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
            f"{path}: the header {short(columns[0])} is one column: its fields seem separated by {other!r}; "
            "skmrf reads .csv files separated by commas and .tsv files by tabs."
        )
    if _looks_like_data(columns):
        raise CLIError(
            f"{path}: the first line {short(delimiter.join(columns))} looks like data, not column names "
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
    pd = _common.pandas()
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
    pd = _common.pandas()
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
    check_exists(path)
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
        The file; its suffix gives the format. ``"-"`` writes CSV to standard output.
    values : ndarray of shape (n_rows, n_columns) or (n_rows,)
        What to write; a 1-D array is one column. ``n_rows`` may be 0 (a header alone).
    columns : list of str, optional
        The header; ``"0"``, ``"1"``, ... if omitted (not used for ``.npy``).

    Raises
    ------
    CLIError
        If the file cannot be written (naming it and the reason).
    """
    suffix = ".csv" if path == STDOUT else _suffix(path)
    values = np.asarray(values)
    table = values if values.ndim == 2 else values.reshape(-1, 1)
    if columns is None:
        columns = [str(j) for j in range(table.shape[1])]
    if path == STDOUT:
        _write_delimited(sys.stdout, table, columns, ",")
        sys.stdout.flush()
        return
    pd = _common.pandas() if suffix == ".parquet" else None
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
                _write_delimited(f, table, columns, "\t" if suffix == ".tsv" else ",")


def _write_delimited(f, table, columns, delimiter):
    w = csv.writer(f, delimiter=delimiter, lineterminator="\n" if f is sys.stdout else "\r\n")
    w.writerow(columns)
    w.writerows(table.tolist() if table.dtype.kind in "iub" else ([repr(float(v)) for v in r] for r in table))


@contextlib.contextmanager
def _replacing(path):
    """:func:`~skmrf._utils._atomic.replacing`, with an ``OSError`` (disk full, permission denied) as a CLIError."""
    try:
        with replacing(path) as tmp:
            yield tmp
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _same_file(a, b):
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.abspath(a) == os.path.abspath(b)


def check_output(path, what, suffixes=(".npy", ".csv", ".tsv", ".parquet"), inputs=()):
    """Refuse an output file of an unknown type, a directory, in a folder that does not exist, or one
    of the command's ``inputs`` (``(path, option)`` pairs; a path may be None), before the work.
    ``"-"`` (standard output, CSV) is accepted where ``.csv`` is."""
    if path == STDOUT and ".csv" in suffixes:
        return
    for source, option in inputs:
        if source is not None and isinstance(source, str) and _same_file(path, source):
            raise CLIError(
                f"{what} {path} is the {option} file this command reads: writing it would replace its input. "
                "Give another output path."
            )
    suffix = _suffix(path)
    if suffix not in suffixes:
        raise CLIError(f"{what} {path}: unknown file type {suffix or '(none)'!r}; give {', '.join(suffixes)}.")
    if os.path.isdir(path):
        raise CLIError(f"{what} {path} is a directory; give a file name.")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CLIError(f"{what} {path}: the folder {folder} does not exist.")
