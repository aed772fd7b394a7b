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

# The command line's parts, importable from here as from the single module it was.
from ._commands import describe as describe
from ._common import DEBUG_ENV as DEBUG_ENV
from ._common import CLIError as CLIError
from ._graph import read_graph as read_graph
from ._main import build_parser as build_parser
from ._main import main
from ._params import METHODS
from ._tables import Table as Table
from ._tables import read_table as read_table
from ._tables import write_table as write_table

__all__ = ["METHODS", "main"]
