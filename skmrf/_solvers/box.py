"""The box ``|theta_k| <= THETA_BOUND`` every discrete solver works in."""

from __future__ import annotations

import numpy as np

__all__ = ["THETA_BOUND", "projected_max"]

#: Box bound on every parameter: where the maximum-likelihood estimate does not exist (a
#: state never observed, a constant column) the fit is clipped here.
THETA_BOUND = 30.0


def projected_max(theta, g, axis=None):
    """Largest gradient component that the box bounds do not block.

    A component pushing a parameter that sits on a bound further out does not count.
    ``axis=1`` gives one value per row of a batch; ``None`` a float over everything.
    """
    blocked = ((theta <= -THETA_BOUND) & (g > 0)) | ((theta >= THETA_BOUND) & (g < 0))
    out = np.max(np.abs(np.where(blocked, 0.0, g)), axis=axis, initial=0.0)
    return float(out) if axis is None else out
