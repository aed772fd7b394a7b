"""Memory budgets: what a fit may allocate, checked before it allocates."""

from __future__ import annotations

import os

__all__ = ["LBFGS_VECTORS", "check_fit_memory", "physical_memory"]

#: float64 vectors of the parameters' length that L-BFGS-B keeps (``2 * maxcor + 5`` with the
#: ``maxcor=20`` of :func:`~skmrf._solvers.minimize_in_box`).
LBFGS_VECTORS = 45


def physical_memory():
    """Bytes of this machine's memory (``inf`` where the system does not tell)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return float("inf")


def check_fit_memory(name, n_bytes, what, advice):
    """Refuse, before allocating, a fit whose structure ``what`` needs more than this machine's memory.

    ``n_bytes`` is the estimate; the ``ValueError`` quotes it with the memory and ends with ``advice``.
    """
    limit = physical_memory()
    if n_bytes > limit:
        raise ValueError(
            f"{name}: {what} needs about {n_bytes / 2**30:,.3g} GiB, more than this machine's "
            f"{limit / 2**30:,.3g} GiB of memory. {advice}"
        )
