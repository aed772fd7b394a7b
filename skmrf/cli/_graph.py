"""``--graph`` and ``--set graph=...``: a shorthand, or factors naming the data's columns."""

from __future__ import annotations

import os
import re

from ._common import CLIError, warn
from ._tables import check_exists

_SHORTHAND = re.compile(r"chain|complete|grid:\d+x\d+")


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
    check_exists(spec, "graph file")
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
            warn(f"graph file {spec}: line {number} {text!r} names no column of {table.path}; skipped as a header.")
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


def set_graph(value, table, by_name):
    """``--set graph=VALUE``: a JSON list of factors resolved as a graph file's lines are; else as given."""
    if not (isinstance(value, list) and value and all(isinstance(f, list) for f in value)):
        return value
    return [_factor([str(t) for t in f], table, by_name, f"--set graph, factor {k}") for k, f in enumerate(value, 1)]


def _first_content_line(lines):
    return next((k for k, line in enumerate(lines, start=1) if line.split("#", 1)[0].strip()), 0)
