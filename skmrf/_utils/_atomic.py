"""Atomic file writes: write beside the target under a temporary name, then rename over it."""

import contextlib
import os
import secrets


@contextlib.contextmanager
def replacing(path):
    """Yield a temporary path beside ``path``; rename it over ``path`` when the block succeeds.

    A block that fails or is interrupted (a full disk, Ctrl-C) removes the temporary file and
    leaves ``path`` as it was, so a good file is never replaced by a half-written one. The
    temporary name is hidden, unique, and keeps the suffix of ``path`` (``np.save`` and
    writers that choose a format by suffix see the right one).
    """
    folder, base = os.path.split(os.path.abspath(path))
    suffix = os.path.splitext(base)[1]
    tmp = os.path.join(folder, f".{base}.{secrets.token_hex(6)}.tmp{suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
