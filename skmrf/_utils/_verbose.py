"""One progress-line format for every estimator's ``verbose`` output."""

from __future__ import annotations

import time

from ._progress import write

__all__ = ["ProgressLog"]


class ProgressLog:
    """Print ``[Name] message, time = 1.23s`` lines when ``verbose`` is positive.

    The clock starts at construction (the start of ``fit``).

    Parameters
    ----------
    name : str
        The estimator's class name.
    verbose : int
        Nothing is printed unless positive.
    """

    def __init__(self, name, verbose):
        self.name = name
        self.verbose = verbose
        self.start = time.perf_counter()

    def __call__(self, message, *args):
        """Print ``message % args`` with the elapsed time (when verbose)."""
        if self.verbose:
            text = message % args if args else message
            write("[%s] %s, time = %.2fs" % (self.name, text, time.perf_counter() - self.start))
