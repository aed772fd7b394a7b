"""Row-chunk reduction: fits from a numpy.memmap and a dask array equal the in-memory fits."""

import numpy as np
import pytest

import skmrf._data.chunks as chunks
from skmrf import ExactMaxLikelihood, LAPEstimator
from skmrf._data import count_dtype, is_chunked, reduce_row_chunks, scan_states
from skmrf.datasets import sample_random_mrf
from skmrf.estimators._existence import NoFiniteEstimateWarning

GRID = "grid:3x4"


@pytest.fixture(scope="module")
def data():
    X, _ = sample_random_mrf("grid:3x4", 700, n_states=3, n_variables=12, random_state=0)
    return X.astype(np.uint8)


@pytest.fixture
def small_chunks(monkeypatch):
    """Memmaps read by chunks of 64 rows (so the 700 rows make 11 chunks, the last short)."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 64 * 12)


def as_memmap(X, tmp_path, name="x.dat"):
    path = tmp_path / name
    mm = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    return np.memmap(path, dtype=X.dtype, mode="r", shape=X.shape)


def _sum_chunk(chunk, start):
    return chunk.sum(axis=0, dtype=np.int64), np.array([chunk.shape[0], start])


def test_reduce_row_chunks_sums_every_row_once(data, tmp_path, small_chunks):
    mm = as_memmap(data, tmp_path)
    total, (n, last_start) = reduce_row_chunks(mm, _sum_chunk)
    np.testing.assert_array_equal(total, data.sum(axis=0))
    assert n == len(data) and last_start == sum(range(0, 700, 64))
    # An ndarray takes today's path: one call on the whole array.
    total, (n, start) = reduce_row_chunks(data, _sum_chunk)
    assert n == 700 and start == 0 and not is_chunked(data) and is_chunked(mm)


def test_scan_states_maximum_over_chunks(data, tmp_path, small_chunks):
    high = reduce_row_chunks(as_memmap(data, tmp_path), scan_states, None, None, False, op=np.maximum)
    np.testing.assert_array_equal(high, data.max(axis=0))


def test_count_dtype_holds_the_rows():
    assert count_dtype(65535) is np.uint16 and count_dtype(65536) is np.uint32
    assert count_dtype(1 << 40) is np.float64


@pytest.mark.parametrize("strategy", ["pairwise", "dense", "exact"])
def test_lap_memmap_equals_in_memory(data, tmp_path, small_chunks, strategy):
    ref = LAPEstimator(GRID, strategy=strategy, score_method="exact").fit(data)
    est = LAPEstimator(GRID, strategy=strategy, score_method="exact").fit(as_memmap(data, tmp_path))
    # Bit for bit: chunks only add integer counts (exact), so both fits run the same float arithmetic.
    np.testing.assert_array_equal(est.theta_, ref.theta_)
    np.testing.assert_array_equal(est.n_states_, ref.n_states_)
    assert est.n_features_in_ == 12 and est.log_partition_ == ref.log_partition_
    assert est.score(data) == ref.score(data)


def test_lap_memmap_alpha_zero_warns_from_chunk_counts(data, tmp_path, small_chunks):
    X = data.copy()
    X[:, 0] = 0  # column 0 never shows state 1 (of 2): no finite estimate at alpha=0
    with pytest.warns(NoFiniteEstimateWarning, match=r"cliques \[\(0,\)"):
        ref = LAPEstimator(GRID, alpha=0.0).fit(X)
    with pytest.warns(NoFiniteEstimateWarning, match=r"cliques \[\(0,\)"):
        est = LAPEstimator(GRID, alpha=0.0).fit(as_memmap(X, tmp_path))
    np.testing.assert_array_equal(est.theta_, ref.theta_)


def test_lap_memmap_of_floats_with_given_states(data, tmp_path, small_chunks):
    ref = LAPEstimator(GRID, n_states=3, node_rule="first").fit(data)
    est = LAPEstimator(GRID, n_states=3, node_rule="first").fit(as_memmap(data.astype(np.float32), tmp_path))
    np.testing.assert_array_equal(est.theta_, ref.theta_)


def test_exact_ml_memmap_equals_in_memory(data, tmp_path, small_chunks):
    ref = ExactMaxLikelihood(GRID, alpha=0.01).fit(data)
    est = ExactMaxLikelihood(GRID, alpha=0.01).fit(as_memmap(data, tmp_path))
    np.testing.assert_array_equal(est.theta_, ref.theta_)


@pytest.mark.parametrize(
    "value, n_states, message",
    [
        (2.5, "auto", "column 7 has the value 2.5 at row 345"),
        (-1.0, "auto", "column 7 has -1 at row 345"),
        (3.0, 3, "Column 7 has state 3 at row 345"),
    ],
)
def test_memmap_errors_name_column_value_and_row(data, tmp_path, small_chunks, value, n_states, message):
    bad = data.astype(np.float64)
    bad[345, 7] = value
    with pytest.raises(ValueError, match=message):
        LAPEstimator(GRID, n_states=n_states).fit(as_memmap(bad, tmp_path))


def test_memmap_is_read_only_and_unchanged(data, tmp_path, small_chunks):
    mm = as_memmap(data, tmp_path)
    before = np.array(mm)
    LAPEstimator(GRID).fit(mm)
    ExactMaxLikelihood(GRID).fit(mm)
    np.testing.assert_array_equal(np.asarray(mm), before)


def test_dask_array_local_scheduler_equals_in_memory(data):
    da = pytest.importorskip("dask.array")
    X = da.from_array(data, chunks=(150, 5))  # row blocks of 150 rows, columns merged
    np.testing.assert_array_equal(LAPEstimator(GRID).fit(X).theta_, LAPEstimator(GRID).fit(data).theta_)
    bad = data.astype(np.float64)
    bad[345, 7] = 2.5
    with pytest.raises(ValueError, match="column 7 has the value 2.5 at row 345"):
        LAPEstimator(GRID).fit(da.from_array(bad, chunks=(100, 12)))


@pytest.fixture(scope="module")
def two_workers():
    """A client of a 2-worker ``LocalCluster`` (processes, one thread each), as in doc/scale_out.rst."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl,
        distributed.Client(cl) as client,
    ):
        yield client


def tasks_run(client, fit, name):
    """``fit()`` and how many tasks whose key holds ``name`` the cluster ran for it."""
    from distributed import get_task_stream

    with get_task_stream(client) as tasks:
        est = fit()
    return est, sum(name in str(t["key"]) for t in tasks.data)


@pytest.mark.slow
def test_dask_array_on_a_two_worker_cluster_equals_in_memory(data, two_workers):
    """The recipe of doc/scale_out.rst: counts made on the workers, only they travel."""
    da = pytest.importorskip("dask.array")
    X = da.from_array(data, chunks=(100, 12))
    for strategy in ["pairwise", "exact"]:
        est, n_tasks = tasks_run(two_workers, lambda s=strategy: LAPEstimator(GRID, strategy=s).fit(X), "_count_chunk")
        ref = LAPEstimator(GRID, strategy=strategy).fit(data)
        np.testing.assert_array_equal(est.theta_, ref.theta_)
        assert n_tasks == 7  # the 7 blocks were counted on the workers, one task each
    np.testing.assert_array_equal(ExactMaxLikelihood(GRID).fit(X).theta_, ExactMaxLikelihood(GRID).fit(data).theta_)


@pytest.fixture(scope="module")
def gaussian_data():
    rng = np.random.default_rng(0)
    mix = np.triu(rng.standard_normal((16, 16)) * 0.2 + np.eye(16))
    return rng.standard_normal((400, 16)) @ mix + 5.0


def _assert_glap_close(est, ref):
    """Sums over chunks are added in another order: equal to about 1e-12 (documented).

    GaussianLAP is closed form (no iterative solver): a Gram matrix summed over 400 rows in another
    order differs by ~log2(n) x 1e-16 x (mean^2 / variance ~ 26) ~ 2e-14 relative, then local
    inversions of condition ~10 give ~1e-13 (3e-14 measured under 4 OpenBLAS kernels); P entries near 0
    are compared against the largest entry. location_ and scale_ are a mean and an sd (~1e-15).
    """
    P, R = est.get_precision(), ref.get_precision()
    P, R = (M.toarray() if hasattr(M, "toarray") else M for M in (P, R))
    np.testing.assert_allclose(P, R, rtol=1e-12, atol=1e-12 * np.abs(R).max())
    np.testing.assert_allclose(est.location_, ref.location_, rtol=1e-12)
    np.testing.assert_allclose(est.scale_, ref.scale_, rtol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"shrinkage": 0.1}, {"assume_centered": True}, {"bias_correction": True}])
def test_gaussian_lap_memmap_matches_in_memory(gaussian_data, tmp_path, monkeypatch, kw):
    from skmrf import GaussianLAP

    monkeypatch.setattr(chunks, "CHUNK_BYTES", 37 * 16 * 8)  # 37-row chunks
    X = gaussian_data - 5.0 if kw.get("assume_centered") else gaussian_data
    ref = GaussianLAP("grid:4x4", **kw).fit(X)
    est = GaussianLAP("grid:4x4", **kw).fit(as_memmap(X, tmp_path))
    _assert_glap_close(est, ref)
    assert est.n_features_in_ == 16 and est.is_positive_definite_ == ref.is_positive_definite_


def test_gaussian_lap_memmap_refuses_nan_and_constant_columns(gaussian_data, tmp_path):
    from skmrf import GaussianLAP

    X = gaussian_data.copy()
    X[:, 3] = 2.0
    with pytest.raises(ValueError, match="column 3 has zero variance"):
        GaussianLAP("grid:4x4").fit(as_memmap(X, tmp_path, "c.dat"))
    X[250, 5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        GaussianLAP("grid:4x4").fit(as_memmap(X, tmp_path, "n.dat"))


@pytest.mark.slow
def test_gaussian_lap_dask_on_a_two_worker_cluster_matches_in_memory(gaussian_data, two_workers):
    from skmrf import GaussianLAP

    da = pytest.importorskip("dask.array")
    X = da.from_array(gaussian_data, chunks=(100, 16))
    est, n_tasks = tasks_run(two_workers, lambda: GaussianLAP("grid:4x4", shrinkage=0.05).fit(X), "_gram_chunk")
    assert n_tasks == 4  # the Gram blocks of the 4 row blocks were made on the workers
    _assert_glap_close(est, GaussianLAP("grid:4x4", shrinkage=0.05).fit(gaussian_data))
