"""One BLAS thread around small batched linear algebra."""

from __future__ import annotations

from threadpoolctl import ThreadpoolController

_CONTROLLER = None


def single_blas_thread():
    """Context manager limiting every loaded BLAS to one thread.

    For batched products and solves of small matrices, where a multi-threaded
    OpenBLAS was measured up to 10x slower on a 2-core machine. The
    controller (which scans the loaded libraries, about 4 ms) is created once
    per process; entering the limit then costs microseconds. The limit is
    process-wide: hold it around a whole thread pool, not inside each thread.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")
