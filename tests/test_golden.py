"""Results must not change when code moves: compare a fresh run with the recorded golden file.

Tolerance: 1e-12 relative (and 1e-12 absolute for entries near zero). The arithmetic of a
restructuring is meant to be identical, so any larger difference is a changed result; the
slack only absorbs reassociated floating-point sums (about 1e-15 relative per operation).
Integer outputs (iteration counts, samples) must match exactly.
"""

import numpy as np
import pytest

from .golden import GOLDEN_PATH, compute


@pytest.fixture(scope="module")
def fresh():
    return compute()


def test_golden_outputs_unchanged(fresh):
    golden = np.load(GOLDEN_PATH)
    assert sorted(fresh) == sorted(golden.files)
    bad = []
    for key in golden.files:
        want, got = golden[key], np.asarray(fresh[key])
        if want.dtype.kind in "iub":
            ok = want.shape == got.shape and np.array_equal(want, got)
        else:
            ok = want.shape == got.shape and np.allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
        if not ok:
            bad.append(key)
    assert not bad, f"{len(bad)} golden outputs changed: {bad[:20]}"
