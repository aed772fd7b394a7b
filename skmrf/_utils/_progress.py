"""One progress bar for every long loop of a fit (issue #27 item 4).

With ``verbose >= 1`` an estimator wraps its long loop (LAP's subproblem batches, PL, EM and
Gaussian Newton iterations, MCMC and Metropolis-Hastings steps, AIS) in :class:`Progress`. It
draws a `tqdm <https://tqdm.github.io>`_ bar when tqdm is installed (``pip install
skmrf[progress]``; ``tqdm.auto`` renders in Jupyter too), else plain lines on stderr at most once
every ``PLAIN_INTERVAL`` seconds with the time left. ``verbose=0`` prints nothing and imports
nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import sys
import time

__all__ = ["PLAIN_INTERVAL", "Progress", "shown", "write"]

#: Seconds between two plain-text progress lines (the first and the last are always written).
PLAIN_INTERVAL = 5.0
#: Iterations over which the convergence measure's rate of decrease is taken (``Progress(tol=...)``).
RATE_WINDOW = 10

#: Bars drawing now: while one is, verbose lines go through ``tqdm.write`` so they do not break it.
_ACTIVE = []

#: True inside :func:`shown`: bars draw at ``verbose=0`` too.
_SHOWN = contextvars.ContextVar("skmrf_progress_shown", default=False)


@contextlib.contextmanager
def shown():
    """Show the progress bars of the fits run inside, even at ``verbose=0`` (no verbose lines).

    The command line wraps its work in it when stderr is a terminal (unless ``--quiet``): a
    user who starts a long fit there sees its bar without asking.
    """
    token = _SHOWN.set(True)
    try:
        yield
    finally:
        _SHOWN.reset(token)


def _tqdm():
    """``tqdm.auto.tqdm``, or None when tqdm is not installed or ``SKMRF_PROGRESS=plain``."""
    if os.environ.get("SKMRF_PROGRESS", "").lower() == "plain":
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def write(text, file=None):
    """Print one verbose line without breaking a progress bar that is drawing."""
    if _ACTIVE and hasattr(_ACTIVE[-1], "write"):
        _ACTIVE[-1].write(text, file=file)
    else:
        print(text, file=file, flush=True)


class Progress:
    """Progress of one loop of ``total`` units, shown when ``verbose >= 1``.

    Use as a context manager and call :meth:`update` after each unit (or batch of units)::

        with Progress(n_steps, "MCMCMaxLikelihood", self.verbose) as bar:
            for ...:
                ...
                bar.update()

    Parameters
    ----------
    total : int or None
        Units the loop will run (None: unknown, e.g. a loop with a stopping rule: only the
        count and the rate are shown). A loop that stops early ends the bar where it stopped.
    desc : str
        Who runs: the estimator's name (the unit says what runs).
    verbose : int
        Nothing is shown unless positive (or inside :func:`shown`).
    unit : str, default="step"
        The name of one unit.
    file : file-like, default=sys.stderr
        Where the bar or lines go.
    tol : float, optional
        The loop stops once a convergence measure (the metric :meth:`reporter` is told to
        watch: a largest gradient component) falls to ``tol``. The time left is then estimated
        from the measure's recent rate of decrease (:data:`RATE_WINDOW` iterations, geometric)
        rather than from ``total``, which is only the cap (#40: "4/500 iterations, about 1030 s
        left" for a fit that ended at 6).
    """

    def __init__(self, total, desc, verbose, unit="step", file=None, tol=None):
        self.tol = tol
        self._measures = []
        self.total = None if total is None else int(total)
        self.desc, self.unit, self.n = desc, unit, 0
        self.enabled = (bool(verbose) and verbose > 0) or _SHOWN.get()
        self.verbose = int(verbose or 0)
        self.file = file
        self._bar = None
        self._start = self._last = time.perf_counter()
        if self.enabled:
            tqdm = _tqdm()
            if tqdm is not None:
                self._bar = tqdm(total=self.total, desc=desc, unit=unit, file=file or sys.stderr, leave=True)
                _ACTIVE.append(self._bar)
            else:
                self._line()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n=1):
        """Count ``n`` more units done."""
        if not self.enabled:
            return
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif time.perf_counter() - self._last >= PLAIN_INTERVAL:
            self._line()

    def reporter(self, log, line, measure=None):
        """The callback a kernel reports its steps to, ``callback(step, **metrics)``: the bar moves
        to ``step`` (the count of units the loop ran) and, at ``verbose >= 2``, ``log`` prints
        ``line % {"step": step, **metrics}``, or ``line(step, **metrics)`` for a callable ``line``
        (at 1 the bar shows the progress; #40:
        ``verbose=1`` printed 316 lines for one exact fit). ``measure`` names the metric that
        falls to ``tol`` at convergence, from which the time left is estimated. The one way the
        package reports progress (#41): kernels report numbers, never formatted lines, so
        rewording a line cannot stop the bar."""

        def callback(step, /, **metrics):
            if self.verbose >= 2:
                log("%s", line(step, **metrics) if callable(line) else line % {"step": step, **metrics})
            if measure is not None and self.tol is not None and self.enabled:  # no time left to show when hidden
                self._measures.append(float(metrics[measure]))
                self._expect()
            self.update(int(step) - self.n)

        return callback

    def remaining(self):
        """Iterations still expected: from the convergence measure's recent geometric rate of
        decrease when ``tol`` is given (None while it does not decrease), else ``total - n``."""
        if self.tol is None or not self._measures:
            return None if self.total is None else self.total - self.n
        m = [v for v in self._measures[-RATE_WINDOW:] if v > 0 and math.isfinite(v)]
        if len(m) < 2 or m[-1] <= self.tol:
            return 0 if m and m[-1] <= self.tol else None
        rate = (math.log(m[0]) - math.log(m[-1])) / (len(m) - 1)
        if rate <= 0:
            return None
        left = math.ceil(math.log(m[-1] / self.tol) / rate)
        return left if self.total is None else min(left, self.total - self.n)

    def _expect(self):
        """Give tqdm the expected end (its own time-left estimate follows)."""
        left = self.remaining()
        if self._bar is not None and left is not None:
            self._bar.total = self.n + 1 + left
            self._bar.refresh()

    def close(self):
        """End the bar (the last line says how many units ran, in how long)."""
        if not self.enabled:
            return
        self.enabled = False
        if self._bar is not None:
            self._bar.close()
            _ACTIVE.remove(self._bar)
        else:
            elapsed = time.perf_counter() - self._start
            total = f"/{self.total}" if self.total is not None else ""
            self._print(f"{self.desc}: {self.n}{total} {self.unit}s in {elapsed:.1f} s")

    def _print(self, text):
        print(text, file=self.file or sys.stderr, flush=True)

    def _line(self):
        now = time.perf_counter()
        self._last = now
        elapsed = now - self._start
        left = self.remaining()
        if self.tol is not None and self.n:
            eta = (
                ", time left unknown (the convergence measure is not decreasing)"
                if left is None
                else f", about {elapsed / self.n * left:.0f} s left at the recent rate of convergence"
            )
            text = f"{self.desc}: {self.n} {self.unit}s (at most {self.total}), {elapsed:.0f} s{eta}"
        elif self.total:
            eta = f", about {elapsed / self.n * (self.total - self.n):.0f} s left" if self.n else ""
            share = f"{100 * self.n / self.total:.0f} %"
            text = f"{self.desc}: {self.n}/{self.total} {self.unit}s ({share}), {elapsed:.0f} s{eta}"
        else:
            text = f"{self.desc}: {self.n} {self.unit}s, {elapsed:.0f} s"
        self._print(text)
