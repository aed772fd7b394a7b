"""What every part of the command line shares: its error, its warnings, pandas when installed."""

from __future__ import annotations

import sys

#: An environment variable: set (to anything but "" or "0"), errors show their traceback, as ``--debug`` does.
DEBUG_ENV = "SKMRF_DEBUG"


class CLIError(Exception):
    """A usage or data error: printed as one line and exit code 2."""


def pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def one_line(text):
    return " ".join(str(text).split())


def warn(message):
    print(f"skmrf: warning: {one_line(message)}", file=sys.stderr)


def short(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
