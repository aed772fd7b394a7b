"""Warnings that point at the user's line, wherever in the package they are raised.

A warning's ``stacklevel`` counted by hand breaks whenever a call moves (#41: twelve places had 5
or 6 written in, one inside a kernel). :func:`warn` counts it: the first frame outside skmrf,
scikit-learn (``fit``'s decorator, pipelines, ``cross_val_score``) and joblib is the line the
warning names. Python 3.12's ``warnings.warn(skip_file_prefixes=...)`` does the same natively.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path

import joblib
import sklearn

__all__ = ["user_stacklevel", "warn"]

#: Folders whose frames are never the user's.
_INTERNAL = tuple(
    str(Path(module.__file__).resolve().parent) + os.sep
    for module in (sys.modules[__name__.partition(".")[0]], sklearn, joblib)
) + (str(Path(contextlib.__file__).resolve()),)


def _internal(frame):
    return str(Path(frame.f_code.co_filename).resolve()).startswith(_INTERNAL)


def user_stacklevel():
    """The ``stacklevel`` for a :func:`warnings.warn` in the calling function that names the first
    frame outside skmrf, scikit-learn and joblib (the outermost frame when every frame is theirs,
    as in a worker thread)."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and _internal(frame):
        frame = frame.f_back
        level += 1
    return level


def warn(message, category=UserWarning):
    """:func:`warnings.warn` at the user's line (see :func:`user_stacklevel`)."""
    warnings.warn(message, category, stacklevel=user_stacklevel())
