"""Atomic file writes (write beside the target under a temporary name, then rename over it), and
atomic fits (a failed or interrupted ``fit`` leaves the estimator as it was)."""

import contextlib
import functools
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


def atomic_fit(fit):
    """Decorate an estimator's ``fit`` so that a failed or interrupted call leaves it as it was.

    A ``fit`` sets its fitted attributes one by one; an exception or a Ctrl-C between two of them
    left an estimator that passed ``check_is_fitted`` and then failed in ``score`` (#40:
    ``ExactMaxLikelihood``, ``MCMCMaxLikelihood``, ``DecomposedEM`` and ``MetropolisHastingsMRF``
    kept ``theta_`` at zeros and lacked ``score_method_``). The attributes before the call are
    kept and restored, whatever was raised: an estimator fitted before is fitted as before, an
    unfitted one is unfitted again.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    return wrapper
