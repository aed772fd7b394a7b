"""Gaussian fits are the same bit for bit whatever the chunking of X (#41).

The statistics are sums over a fixed grid of row blocks, each block's sum rounded onto a grid on
which addition is exact (``skmrf._data.rows.on_grid``), so an in-memory X, a memmap and dask
arrays cut into any row chunks give the same numbers. Blocks of 12 rows (``CHUNK_BYTES``
patched) make 200 rows 17 blocks, so the sums over blocks are exercised.
"""

import numpy as np
import pytest

from skmrf import GaussianLAP, GaussianMaxLikelihood
from skmrf._data import chunks
from skmrf._data.rows import on_grid
from skmrf._kernels.gaussian import lap as lap_kernel

from .test_gaussian import laplacian_precision, sample

BLOCK = 12

# 200 rows of 16 variables: the LAP estimate need not be positive definite, which does not matter here.
pytestmark = pytest.mark.filterwarnings("ignore::skmrf.exceptions.NotPositiveDefiniteWarning")


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks (and memmap chunks) of 12 rows of the 16 columns below."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", BLOCK * 16 * 8)


@pytest.fixture(scope="module")
def data():
    Q = laplacian_precision(4, 4)
    X = sample(Q, 200, seed=3) * np.linspace(0.5, 40.0, 16) + np.linspace(-3.0, 1e3, 16)
    weights = np.random.default_rng(4).uniform(0.0, 3.0, 200)
    weights[::17] = 0.0
    return Q, X, weights


def _as_memmap(X, tmp_path):
    mm = np.memmap(tmp_path / "x.dat", dtype=X.dtype, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    return np.memmap(tmp_path / "x.dat", dtype=X.dtype, mode="r", shape=X.shape)


def _inputs(X, tmp_path):
    da = pytest.importorskip("dask.array")
    return {
        "memmap": _as_memmap(X, tmp_path),
        "dask-7": da.from_array(X, chunks=(7, 16)),  # rechunked onto the 12-row blocks
        "dask-50": da.from_array(X, chunks=(50, 5)),
        "fortran": np.asfortranarray(X),
    }


def _fitted(est):
    names = ["location_", "scale_", "precision_", "covariance_", "log_det_"]
    out = {name: getattr(est, name) for name in names if getattr(est, name, None) is not None}
    return {k: v.toarray() if hasattr(v, "toarray") else np.asarray(v) for k, v in out.items()}


def _assert_bit_for_bit(a, b, case):
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=f"{case}: {name}")


ESTIMATORS = {
    "ml-newton": lambda Q: GaussianMaxLikelihood(Q, solver="newton"),
    "ml-sparse": lambda Q: GaussianMaxLikelihood(Q, solver="sparse"),
    "ml-regression": lambda Q: GaussianMaxLikelihood(Q, solver="regression"),
    "ml-shrunk": lambda Q: GaussianMaxLikelihood(Q, solver="sparse", shrinkage=0.2),
    "lap": lambda Q: GaussianLAP(Q),
    "lap-refined": lambda Q: GaussianLAP(Q, newton_steps=3),
    "lap-shrunk": lambda Q: GaussianLAP(Q, shrinkage=0.1, assume_centered=True),
}


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_fit_is_bit_for_bit_across_chunking(small_blocks, data, tmp_path, name, weighted):
    Q, X, weights = data
    w = weights if weighted else None
    reference = _fitted(ESTIMATORS[name](Q).fit(X, sample_weight=w))
    for case, Xc in _inputs(X, tmp_path).items():
        _assert_bit_for_bit(reference, _fitted(ESTIMATORS[name](Q).fit(Xc, sample_weight=w)), case)


def test_lap_cluster_grams_are_bit_for_bit_across_chunking(small_blocks, data, tmp_path, monkeypatch):
    """The clusters' Gram path (in memory: parallel chunks of clusters over the whole data)."""
    monkeypatch.setattr(lap_kernel, "_DENSE_GRAM_MAX_FEATURES", 0)
    Q, X, weights = data
    reference = _fitted(GaussianLAP(Q, n_jobs=2).fit(X, sample_weight=weights))
    for case, Xc in _inputs(X, tmp_path).items():
        _assert_bit_for_bit(reference, _fitted(GaussianLAP(Q).fit(Xc, sample_weight=weights)), case)


def test_blocked_statistics_agree_with_the_plain_sums(small_blocks, data):
    """The grid moves each block's sum by at most half a step (2^-52 times the bound): the fit
    agrees with one computed by plain float64 sums to rounding."""
    Q, X, weights = data
    est = GaussianMaxLikelihood(Q, solver="newton").fit(X, sample_weight=weights)
    location = weights @ X / weights.sum()
    np.testing.assert_allclose(est.location_, location, rtol=1e-13, atol=0)
    Z = X - location
    sd = np.sqrt(weights @ (Z * Z) / weights.sum())
    np.testing.assert_allclose(est.scale_, sd, rtol=1e-13)


def test_on_grid_sums_exactly_in_any_order():
    rng = np.random.default_rng(0)
    terms = rng.standard_normal((300, 5)) * np.array([1e-8, 1.0, 1e3, 1e8, 0.0])
    bound = 2 * np.abs(terms).sum(axis=0)
    rounded = on_grid(terms, bound)
    forward = np.zeros(5)
    for t in rounded:
        forward += t
    assert np.array_equal(forward, rounded[::-1].sum(axis=0))
    assert np.array_equal(forward, rounded.reshape(20, 15, 5).sum(axis=1).sum(axis=0))
    # Each term moves by at most half a step of the grid, 2^-52 of its bound (2^(e-1) <= bound < 2^e).
    assert np.all(np.abs(rounded - terms) <= np.ldexp(1.0, np.frexp(bound)[1] - 53))
