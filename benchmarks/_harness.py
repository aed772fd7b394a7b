"""What every benchmark needs, written once: best-of timing, peak memory, the load average, a
BLAS thread limit and a results header that names the code measured.

    from _harness import best_of, header, limit_blas, peak_rss_mib

Scripts in ``benchmarks/`` import it by its bare name (Python puts the script's folder first on
``sys.path``).
"""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import time
import warnings
from pathlib import Path

import skmrf


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, ``"1.23/1.10/0.98"``: quote it beside every timing."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def peak_rss_mib() -> float:
    """The process's peak resident memory so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def limit_blas(n_threads: int | None):
    """Limit BLAS (and OpenMP) to ``n_threads`` for the rest of the process; None or 0 leaves it."""
    if n_threads:
        import scipy.linalg  # noqa: F401  (loads the BLAS that threadpoolctl then finds)
        from threadpoolctl import threadpool_limits

        return threadpool_limits(n_threads)
    return None


def best_of(fit, repeat: int = 3, *, quiet: bool = True):
    """``(best CPU s, best wall s, last result)`` of ``repeat`` calls of ``fit()``.

    CPU time (``time.process_time``, all threads of the process) is the figure to compare on a
    shared machine; the wall time shows what parallel code gained. ``quiet`` hides warnings.
    """
    cpu, wall, out = [], [], None
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore")
            out = fit()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall), out


def commit() -> str:
    """The commit of the skmrf measured (``+dirty`` with uncommitted changes), or ``"unknown"``."""
    root = Path(skmrf.__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = ["git", "-C", str(root), "status", "--porcelain", "skmrf"]
        dirty = subprocess.run(status, capture_output=True, text=True)
        return head + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def header(title: str, blas_threads: int | None = None) -> str:
    """The first lines of a results table: what ran, on which code and machine, under which load."""
    return "\n".join(
        [
            f"# {title}",
            f"# skmrf {commit()} ({Path(skmrf.__file__).parent}); {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
            f"# {os.cpu_count()} CPUs ({platform.machine()}), BLAS threads {blas_threads or 'default'}, "
            f"load {load_average()} at start",
        ]
    )
