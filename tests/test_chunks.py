"""Row-chunk reduction: fits from a numpy.memmap and a dask array equal the in-memory fits."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import skmrf._data.chunks as chunks
from skmrf import (
    AdaptiveSchedule,
    DecomposedEM,
    ExactMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    PersistentChains,
    PseudoLikelihoodEstimator,
    TheorySchedule,
)
from skmrf._data import count_dtype, is_chunked, reduce_row_chunks, scan_states
from skmrf.datasets import sample_random_mrf
from skmrf.estimators._existence import NoFiniteEstimateWarning

from .test_em import cases as em_cases

GRID = "grid:3x4"
EM_CASES = list(em_cases())


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
@pytest.mark.parametrize("scan_rows", [None, 7])
def test_memmap_errors_name_column_value_and_row(
    data, tmp_path, small_chunks, monkeypatch, value, n_states, message, scan_rows
):
    if scan_rows:  # each chunk checked 7 rows at a time: the row is still counted from the start
        monkeypatch.setattr(chunks, "SCAN_ENTRIES", scan_rows * data.shape[1])
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


def test_gaussian_max_likelihood_memmap_and_dask_match_in_memory(gaussian_data, tmp_path, monkeypatch):
    """GaussianMaxLikelihood reads S on the pattern (and on its chordal embedding, for the start and
    the certificate) by row chunks: sums in another order than in memory, ~1e-14 relative (see
    _assert_glap_close). Newton-CG from the same start takes the same steps (asserted), and its
    iterates are smooth functions of S whose Jacobian is bounded by the condition of the Newton
    systems (~10 on this 4x4 grid), so the estimates agree to 1e-12 (5e-16 measured)."""
    from skmrf import GaussianMaxLikelihood

    da = pytest.importorskip("dask.array")
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 37 * 16 * 8)  # 37-row chunks
    ref = GaussianMaxLikelihood("grid:4x4").fit(gaussian_data)
    for X in (as_memmap(gaussian_data, tmp_path), da.from_array(gaussian_data, chunks=(37, 16))):
        est = GaussianMaxLikelihood("grid:4x4").fit(X)
        _assert_glap_close(est, ref)
        assert est.n_iter_ == ref.n_iter_ and est.n_features_in_ == 16


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
def test_gaussian_lap_dask_on_a_two_worker_cluster_matches_in_memory(gaussian_data, two_workers, monkeypatch):
    from skmrf import GaussianLAP
    from skmrf._kernels.gaussian import lap as lap_kernel

    # The clusters' Gram blocks, not the dense covariance that 16 columns would take (decided here),
    # over blocks of 100 rows (the sums' fixed grid; by default one block of 256 MB holds all 400 rows).
    monkeypatch.setattr(lap_kernel, "_DENSE_GRAM_MAX_FEATURES", 0)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 100 * 16 * 8)
    da = pytest.importorskip("dask.array")
    X = da.from_array(gaussian_data, chunks=(100, 16))
    est, n_tasks = tasks_run(two_workers, lambda: GaussianLAP("grid:4x4", shrinkage=0.05).fit(X), "_gram_chunk")
    assert n_tasks == 4  # the Gram blocks of the 4 row blocks were made on the workers
    _assert_glap_close(est, GaussianLAP("grid:4x4", shrinkage=0.05).fit(gaussian_data))


# -- Pseudo-likelihood and MCMC from row chunks ---------------------------------------------------


def peak_bytes(fit):
    """``fit()`` and the peak of the Python and numpy allocations (tracemalloc) while it ran.

    numpy reports its array buffers to tracemalloc; a memmap's mapped file pages are not
    allocations, so a fit that reads a memmap by chunks shows only its chunks and statistics.
    """
    import tracemalloc

    tracemalloc.start()
    try:
        out = fit()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak


@pytest.fixture(scope="module")
def potts_data():
    """A complete graph of 8 four-state columns: the pseudo-likelihood takes the one-hot path."""
    X, _ = sample_random_mrf("complete", 600, n_states=4, n_variables=8, random_state=0)
    return X.astype(np.uint8)


def _weights(kind, n):
    rng = np.random.default_rng(1)
    if kind == "integer":
        return rng.integers(0, 3, n).astype(np.float64)  # zeros included: those rows are dropped
    return None if kind is None else rng.random(n)


PL_CASES = {
    "records": ("grid:3x4", {}),
    "records-tables": ("grid:3x4", {"ridge": "tables"}),
    "one-hot": ("complete", {"tol": 1e-6}),  # float32 products: their rounding must match too
    "asymmetric": ("grid:3x4", {"symmetric": False}),
}


def _assert_same_pl_fit(est, ref):
    np.testing.assert_array_equal(est.theta_, ref.theta_)
    assert est.n_iter_ == ref.n_iter_ and est.n_records_ == ref.n_records_
    assert est.pseudo_log_likelihood_ == ref.pseudo_log_likelihood_


@pytest.mark.parametrize("weights", [None, "integer", "float"])
@pytest.mark.parametrize("case", list(PL_CASES))
def test_pseudo_likelihood_memmap_and_dask_equal_in_memory(
    data, potts_data, tmp_path, small_chunks, monkeypatch, case, weights
):
    """Bit for bit, wherever the counts are integers: the records path merges the chunks' records
    (integer counts, exact in any order) into the in-memory records, in their order; the one-hot
    and asymmetric paths read every row, in order, so their arithmetic is the in-memory one
    whatever the weights. Float weights lie on a grid where their sums are exact (next test), so
    the records' weights are the same whatever the chunks."""
    da = pytest.importorskip("dask.array")
    graph, kw = PL_CASES[case]
    X = potts_data if graph == "complete" else data
    w = _weights(weights, len(X))
    if case == "one-hot":  # forced: this small model sits near choose_path's boundary
        from skmrf._kernels import pseudo as kernel

        monkeypatch.setattr(kernel, "choose_path", lambda *a, **k: kernel.PathChoice("one-hot", 0.0, 0.0))
    ref = PseudoLikelihoodEstimator(graph, score_method="pseudo", **kw).fit(X, sample_weight=w)
    assert (ref.n_records_ == len(X) * X.shape[1]) == (case in ("one-hot", "asymmetric")) or weights
    for chunked in (as_memmap(X, tmp_path), da.from_array(X, chunks=(150, 5))):
        est = PseudoLikelihoodEstimator(graph, score_method="pseudo", **kw).fit(chunked, sample_weight=w)
        _assert_same_pl_fit(est, ref)


def test_summable_weights_sum_exactly_in_any_grouping():
    """The fit's float weights (``_sample_weight``) lie on a grid where every sum of them is exact:
    sums of the same weights by chunks, in reverse, by bincount and by BLAS are equal bit for bit
    (the raw weights' are not), each weight moved by at most 2^-52 of their sum, integer weights
    unchanged, the caller's array untouched."""
    from skmrf._data import summable_weights
    from skmrf.estimators._base import _sample_weight

    rng = np.random.default_rng(0)
    raw = rng.random(100_000) ** 3 * 7.3  # spread over several binades
    given = raw.copy()
    w = _sample_weight(raw, np.empty((len(raw), 1)), "test")
    np.testing.assert_array_equal(raw, given)
    assert np.abs(w - raw).max() <= 2.0**-52 * raw.sum()
    groups = rng.integers(0, 50, len(w))

    def sums(v):
        parts = [np.bincount(groups[a : a + 999], weights=v[a : a + 999], minlength=50) for a in range(0, len(v), 999)]
        chunked = sum(parts)
        reverse = np.bincount(groups[::-1], weights=v[::-1], minlength=50)
        blas = np.eye(50)[groups].T @ v
        return chunked, reverse, blas

    for other in sums(w)[1:]:
        np.testing.assert_array_equal(other, sums(w)[0])
    assert any((other != sums(raw)[0]).any() for other in sums(raw)[1:])  # what the grid is for
    integers = rng.integers(0, 5, 1000).astype(np.float64)
    np.testing.assert_array_equal(summable_weights(integers), integers)


@pytest.mark.parametrize("wide", [False, True])
def test_records_merged_from_any_chunks_equal_the_whole(monkeypatch, wide):
    """The records of row chunks, merged in any grouping, are the records of all the rows: same
    arrays, same order (variable, then configuration). ``wide``: every blanket counts as too wide to
    code (the limit lowered to 2), so they are compressed and merged by their values instead."""
    import skmrf._data.compress as compress
    from skmrf._data import blanket_records, merge_records

    if wide:
        monkeypatch.setattr(compress, "_MAX_CODE", 2)
    X, _ = sample_random_mrf([(0, 1, 2), (2, 3), (3, 4, 5), (5, 0)], 300, n_states=3, n_variables=6, random_state=2)
    blankets = [(0, 1, 2, 5), (0, 1, 2), (0, 1, 2, 3), (2, 3, 4, 5), (3, 4, 5), (0, 3, 4, 5)]
    k = np.full(6, 3)
    whole = blanket_records(X, blankets, k)
    assert (whole.code is None) == wide
    parts = [blanket_records(X[a:b], blankets, k) for a, b in [(0, 7), (7, 7), (7, 150), (150, 151), (151, 300)]]
    for merged in (
        merge_records(merge_records(merge_records(parts[0], parts[1]), parts[2]), merge_records(parts[3], parts[4])),
        merge_records(parts[4], merge_records(parts[2], merge_records(parts[0], merge_records(parts[3], parts[1])))),
    ):
        for name in ("var", "values", "count", "code"):
            got, want = getattr(merged, name), getattr(whole, name)
            assert (got is None) == (want is None)
            if want is not None:
                np.testing.assert_array_equal(got, want)
                assert got.dtype == want.dtype
    # The records hold each variable's blanket configurations as the rows show them.
    for r in range(0, len(whole), 37):
        blanket = blankets[whole.var[r]]
        shows = (X[:, blanket] == whole.values[r, : len(blanket)]).all(axis=1)
        assert shows.sum() == whole.count[r]


@pytest.fixture(scope="module")
def ising_data():
    X, _ = sample_random_mrf("grid:3x3", 500, n_states=2, n_variables=9, random_state=0)
    return X.astype(np.uint8)


MCMC_SCHEDULES = {
    # The default: a pseudo-likelihood start, chains started at data rows, "auto" chains and sweeps
    # (from a probe of chains started at data rows too).
    "adaptive": ({}, {}),
    "theory": ({"lipschitz": 5.0, "n_iter": 20, "n_chains": 500, "n_sweeps": 5}, {"max_coupling": 0.2, "alpha": 1.0}),
}


@pytest.mark.parametrize("weights", [None, "integer", "float"])
@pytest.mark.parametrize("kind", list(MCMC_SCHEDULES))
def test_mcmc_memmap_and_dask_equal_in_memory(ising_data, tmp_path, small_chunks, kind, weights):
    """Bit for bit: the data moments are sums of 0/1 values times weights on the grid where sums
    are exact, in any order; the pseudo-likelihood start is bit for bit (test above); the chains
    start at the same rows, drawn by the same generator and read one by one (Rows.take)."""
    da = pytest.importorskip("dask.array")
    settings, kw = MCMC_SCHEDULES[kind]
    schedule = AdaptiveSchedule(**settings) if kind == "adaptive" else TheorySchedule(**settings)
    w = _weights(weights, len(ising_data))

    def fit(X):
        return MCMCMaxLikelihood("grid:3x3", schedule=schedule, random_state=0, **kw).fit(X, sample_weight=w)

    ref = fit(ising_data)
    for chunked in (as_memmap(ising_data, tmp_path), da.from_array(ising_data, chunks=(150, 5))):
        est = fit(chunked)
        np.testing.assert_array_equal(est.theta_, ref.theta_)
        assert est.n_iter_ == ref.n_iter_ and est.schedule_ == ref.schedule_


@pytest.mark.parametrize("weights", [None, "integer", "float"])
@pytest.mark.parametrize("plan", ["auto", False])
@pytest.mark.parametrize("case", EM_CASES, ids=[c[0] for c in EM_CASES])
def test_em_memmap_and_dask_equal_in_memory(tmp_path, small_chunks, case, plan, weights):
    """Bit for bit: a memmap or a dask array (NaN for missing) is compressed to its distinct rows
    with counts, exact in any chunking (integers, or float weights on their grid of exact sums);
    the sub-networks' patterns and their counts, the
    plan and every sum of the data term are then those of the rows in memory (tests/test_em.py's
    cases: binary, 3-state, a triple clique, all-missing rows)."""
    da = pytest.importorskip("dask.array")
    _, graph, n_states, Xf = case
    w = _weights(weights, len(Xf))
    kw = dict(n_states=n_states, alpha=0.01, decompose=plan, max_iter=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 30 iterations: the same in every fit
        ref = DecomposedEM(graph, **kw).fit(Xf, sample_weight=w)
        for chunked in (as_memmap(Xf, tmp_path), da.from_array(Xf, chunks=(45, 4))):
            est = DecomposedEM(graph, **kw).fit(chunked, sample_weight=w)
            np.testing.assert_array_equal(est.theta_, ref.theta_)
            np.testing.assert_array_equal(est.n_distinct_rows_, ref.n_distinct_rows_)
            assert est.decompose_ == ref.decompose_ and est.log_likelihood_ == ref.log_likelihood_


@pytest.mark.parametrize("weights", [None, "integer", "float"])
def test_distinct_rows_by_chunks(tmp_path, small_chunks, weights):
    """Rows.distinct: the distinct rows (NaN read as -1, ascending) and their counts, as np.unique
    gives them in memory; rows of weight 0 dropped. Float weights as a fit takes them (on the grid
    of exact sums): the same counts bit for bit."""
    from skmrf._data import Rows, summable_weights

    da = pytest.importorskip("dask.array")
    Xf = EM_CASES[2][3]  # all-missing rows and a triple clique's missing columns
    w = _weights(weights, len(Xf))
    w = None if w is None else summable_weights(w)
    Xi = np.where(np.isnan(Xf), -1, Xf).astype(np.int64)
    keep = slice(None) if w is None else w > 0
    want, inverse = np.unique(Xi[keep], axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=None if w is None else w[keep])
    for chunked in (as_memmap(Xf, tmp_path), da.from_array(Xf, chunks=(45, 4))):
        values, count = Rows(chunked, np.full(6, 2), w).distinct()
        np.testing.assert_array_equal(values, want)
        assert values.dtype == np.int64 and count.dtype == np.float64
        np.testing.assert_array_equal(count, counts)


def _binary_rows(n):
    """``n`` uniform rows of 64 binary columns (uint8): every blanket configuration of an 8x8 grid
    (at most 2^5 per variable) shows in a few thousand rows, so the records stop growing."""
    return (np.random.default_rng(0).random((n, 64)) < 0.5).astype(np.uint8)


def _rows_with_missing(n):
    """``n`` rows of a 3x3 binary grid (float64) with columns 0 and 4 missing (NaN) in 30 % of the
    rows: at most 2^7 x 3^2 = 1,152 distinct rows (997 in 16,000 rows, 1,122 in 64,000)."""
    X, _ = sample_random_mrf("grid:3x3", n, n_states=2, n_variables=9, random_state=0)
    X = X.astype(np.float64)
    X[(np.random.default_rng(0).random(X.shape) < 0.3) & np.isin(np.arange(9), [0, 4])] = np.nan
    return X


def _gaussian_rows(n):
    """``n`` rows of 64 correlated Gaussian columns (float64: 33 MB at 64,000 rows)."""
    X = np.random.default_rng(0).standard_normal((n, 64))
    X[:, 1:] += 0.4 * X[:, :-1]
    return X


MEMORY_CASES = {
    # The largest temporary is the coding of a chunk, 250 x 64 x 5 blanket members x 8 bytes =
    # 0.64 MB; the 1,568 records (at most 2^5 per variable) and their objective take 0.2 MB.
    "pseudo-likelihood": (_binary_rows, lambda: PseudoLikelihoodEstimator("grid:8x8", score_method="pseudo")),
    # The same records for the start, then 200 chains and their statistics (below 0.5 MB).
    "mcmc": (
        _binary_rows,
        lambda: MCMCMaxLikelihood(
            "grid:8x8", schedule=AdaptiveSchedule(n_iter=20, n_chains=200, n_sweeps=2), random_state=0
        ),
    ),
    # Chunks of 222 rows (16 kB), the distinct rows (10 kB), the patterns of its sub-networks.
    "em": (_rows_with_missing, lambda: DecomposedEM("grid:3x3", alpha=0.01, max_iter=20)),
    # The agreement model on the 12 edges of a 3x3 grid among the 64 columns: the agreement counts and
    # the clique counts of [X; 1 - X] of each chunk (250 x 64 x 8 bytes of int64 states, twice), the MLE,
    # and the likelihood's tables (23 kB per edge kept, about 1.1 MB of temporaries per block of edges,
    # built one edge at a time here: statistics whose size does not depend on the rows).
    "mle-induced": (_binary_rows, lambda: _mle_induced_estimator()),
    # The same MLE (the chains' start), then the pseudo-likelihood's records (at most 2^4 agreement
    # patterns per variable) and 200 kept draws of 12 parameters.
    "metropolis-hastings": (_binary_rows, lambda: _metropolis_hastings_estimator()),
    # A chunk of 31 rows in the fit's units (16 kB), S on the 8x8 grid's chordal embedding and the
    # Newton-CG work on it (1.45 MB measured, 1.37 MB at a quarter of the rows).
    "gaussian-ml": (_gaussian_rows, lambda: _gaussian_estimator("GaussianMaxLikelihood")),
    # The chunk and the neighbourhoods' Gram blocks (0.26 MB), then two Newton steps on the pattern.
    "gaussian-lap": (_gaussian_rows, lambda: _gaussian_estimator("GaussianLAP", newton_steps=2)),
}


def _gaussian_estimator(name, **kw):
    import skmrf

    return getattr(skmrf, name)("grid:8x8", **kw)


#: The agreement model's edges in the memory test (a 3x3 grid on columns 0-8 of 64).
AGREEMENT_EDGES = [(3 * r + c, 3 * r + c + 1) for r in range(3) for c in range(2)] + [
    (3 * r + c, 3 * r + c + 3) for r in range(2) for c in range(3)
]


def _mle_induced_estimator():
    from skmrf import MLEInducedLikelihood

    return MLEInducedLikelihood(AGREEMENT_EDGES)


def _metropolis_hastings_estimator():
    from skmrf import MetropolisHastingsMRF

    return MetropolisHastingsMRF(
        AGREEMENT_EDGES, likelihood="pseudo", n_steps=220, proposal_scale=0.0005, random_state=0, score_method="pseudo"
    )


@pytest.mark.parametrize("case", list(MEMORY_CASES))
def test_memmap_fit_memory_is_the_chunk_plus_the_statistics(tmp_path, monkeypatch, case):
    """A memmap of 64,000 rows (4.1 MB of uint8 for PL and MCMC, 4.6 MB of float64 for EM, 33 MB of
    float64 for the Gaussian fits) fitted within a budget of 2 MB, with chunks of 16 kB (what
    each case holds is beside it above). In memory, the int64 copy of X alone would be 33 MB
    (PL, MCMC) or 4.6 MB (EM), and the Gaussian fits' transposed copy 33 MB. The peak does not
    follow the rows: a fit of a quarter of them peaks at least two thirds as high (an allocation
    per row would make it a quarter; EM's distinct rows still grow a little with the rows)."""
    from skmrf._kernels import coin_tossing

    monkeypatch.setattr(chunks, "CHUNK_BYTES", 16000)
    monkeypatch.setattr(coin_tossing, "_EDGE_BLOCK", 1)  # the MLE-induced likelihood's tables edge by edge
    budget = 2e6
    rows, make = MEMORY_CASES[case]
    X = rows(64000)
    mm_all, mm_quarter = as_memmap(X, tmp_path, "all.dat"), as_memmap(X[:16000], tmp_path, "quarter.dat")
    assert X.nbytes > 2 * budget
    del X
    make().fit(mm_quarter)  # first calls allocate caches (imports, docstrings) that are not the fit's
    _, peak = peak_bytes(lambda: make().fit(mm_all))
    _, peak_quarter = peak_bytes(lambda: make().fit(mm_quarter))
    assert peak < budget, f"peak {peak / 1e6:.2f} MB"
    assert peak < 1.5 * peak_quarter, f"peak {peak / 1e6:.2f} MB, of a quarter of the rows {peak_quarter / 1e6:.2f} MB"


@pytest.mark.slow
def test_pseudo_likelihood_dask_on_a_two_worker_cluster_equals_in_memory(data, two_workers):
    """The records of each block are made on the workers (one task per block); only they travel."""
    da = pytest.importorskip("dask.array")
    X = da.from_array(data, chunks=(100, 12))
    est, n_tasks = tasks_run(two_workers, lambda: PseudoLikelihoodEstimator(GRID).fit(X), "_records_chunk")
    assert n_tasks == 7
    _assert_same_pl_fit(est, PseudoLikelihoodEstimator(GRID).fit(data))


@pytest.mark.slow
def test_mcmc_dask_on_a_two_worker_cluster_equals_in_memory(ising_data, two_workers):
    """The pseudo-likelihood start's records and the data moments are made on the workers."""
    da = pytest.importorskip("dask.array")
    X = da.from_array(ising_data, chunks=(100, 9))
    est, n_tasks = tasks_run(
        two_workers, lambda: MCMCMaxLikelihood("grid:3x3", random_state=0).fit(X), "_records_chunk"
    )
    assert n_tasks == 5
    np.testing.assert_array_equal(est.theta_, MCMCMaxLikelihood("grid:3x3", random_state=0).fit(ising_data).theta_)


# -- The Bayesian learner and the MLE-induced likelihood from row chunks --------------------------

AGREEMENT_GRID = "grid:3x3"


@pytest.fixture(scope="module")
def agreement_data():
    """700 rows of the agreement model on the 3x3 grid (theta 0.65 on every edge), as uint8."""
    from skmrf.graphs import resolve_graph
    from skmrf.model import agreement_to_mrf

    edges = resolve_graph(AGREEMENT_GRID, 9).edges
    model = agreement_to_mrf(np.full(len(edges), 0.65), edges, 9, edges=edges)
    return model.sample(700, random_state=0).astype(np.uint8)


def _force_lap_mle(monkeypatch):
    """The MLE-induced likelihood's default MLE by its LAP kernel (as where the junction tree is too wide)."""
    from skmrf.exceptions import TreewidthError
    from skmrf.model import DiscreteMRF

    def too_wide(self, max_bytes=None):
        raise TreewidthError("forced by the test")

    monkeypatch.setattr(DiscreteMRF, "get_junction_tree", too_wide)


MLE_CASES = {
    "exact-kernel": lambda: None,
    "lap-kernel": lambda: None,
    "exact-ml": lambda: ExactMaxLikelihood(AGREEMENT_GRID, alpha=0.01),
    "pseudo": lambda: PseudoLikelihoodEstimator(AGREEMENT_GRID, alpha=0.01),
}


@pytest.mark.parametrize("weights", [None, "integer", "float"])
@pytest.mark.parametrize("case", list(MLE_CASES))
def test_mle_induced_memmap_and_dask_equal_in_memory(
    agreement_data, tmp_path, small_chunks, monkeypatch, case, weights
):
    """Bit for bit: the agreement counts are sums of 0/1 values times weights (integers, or floats on
    their grid of exact sums), exact in any chunking; the default MLE's clique counts of [X; 1 - X]
    (each chunk's plus its flip's) too, and the LAP kernel and a given unfitted estimator read
    the flip-symmetrised rows by chunks (a lazy dask array), so every fit runs the in-memory
    arithmetic on the same statistics."""
    from skmrf import MLEInducedLikelihood

    da = pytest.importorskip("dask.array")
    if case == "lap-kernel":
        _force_lap_mle(monkeypatch)
    X = agreement_data
    w = _weights(weights, len(X))

    def fit(data):
        return MLEInducedLikelihood(AGREEMENT_GRID, copula="gaussian", rho=0.1, mle=MLE_CASES[case]()).fit(
            data, sample_weight=w
        )

    ref = fit(X)
    assert ref.mle_source_ == {"exact-kernel": "exact", "lap-kernel": "lap"}.get(case, ref.mle_source_)
    theta = np.linspace(0.55, 0.75, len(ref.edges_))
    for chunked in (as_memmap(X, tmp_path), da.from_array(X, chunks=(150, 5))):
        est = fit(chunked)
        for name in ("n_samples_", "n_agree_", "lambda_hat_", "theta_hat_", "eta0_"):
            np.testing.assert_array_equal(getattr(est, name), getattr(ref, name))
        assert est.mle_source_ == ref.mle_source_ and est.n_features_in_ == 9
        np.testing.assert_array_equal(est.mle_.theta, ref.mle_.theta)
        assert est.log_likelihood(theta) == ref.log_likelihood(theta)


def test_mle_induced_memmap_refuses_a_third_state(agreement_data, tmp_path, small_chunks):
    from skmrf import MLEInducedLikelihood

    bad = agreement_data.copy()
    bad[345, 7] = 2
    with pytest.raises(ValueError, match="Column 7 has state 2 at row 345"):
        MLEInducedLikelihood(AGREEMENT_GRID).fit(as_memmap(bad, tmp_path))
    with pytest.raises(ValueError, match="binary variables, but column 7 has 3 states"):
        from skmrf import MetropolisHastingsMRF

        MetropolisHastingsMRF(AGREEMENT_GRID).fit(as_memmap(bad, tmp_path, "y.dat"))


MH_CASES = {
    "mle_induced": {},
    "exact": {},
    "pseudo": {},
    "laplace": {},
    "persistent_mc": {"likelihood": PersistentChains(n_particles=50)},
    "exchange": {},
    # The exchange algorithm's Gibbs fallback (a junction tree over max_bytes): its chains start at the rows
    # (100 sweeps of them per step: few steps).
    "exchange-gibbs": {"max_bytes": 64, "n_steps": 12},
}


@pytest.mark.parametrize("weights", [None, "integer", "float"])
@pytest.mark.parametrize("case", list(MH_CASES))
def test_metropolis_hastings_memmap_and_dask_equal_in_memory(agreement_data, tmp_path, small_chunks, case, weights):
    """Bit for bit: every likelihood reads sums over rows that are exact in any chunking (agreement
    counts, the pseudo-likelihood's records merged in the in-memory order, the MLE-induced fit
    above; float weights on their grid of exact sums), or, for the exchange algorithm's Gibbs
    fallback, every row in order (one byte per entry); the chains then draw from the same generators."""
    from skmrf import MetropolisHastingsMRF

    da = pytest.importorskip("dask.array")
    X = agreement_data
    w = _weights(weights, len(X))
    likelihood = case.split("-")[0]
    if likelihood == "exchange" and weights == "float":
        pytest.skip("the exchange algorithm takes whole-number weights only (it refuses others)")
    kw = dict(likelihood=likelihood, n_steps=120, n_chains=2, proposal_scale=0.01, random_state=0)
    kw.update(MH_CASES[case])

    def fit(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # short chains: the same in every fit
            return MetropolisHastingsMRF(AGREEMENT_GRID, **kw).fit(data, sample_weight=w)

    ref = fit(X)
    if case == "exchange-gibbs":
        assert ref.likelihood_.sampler == "gibbs"
    for chunked in (as_memmap(X, tmp_path), da.from_array(X, chunks=(150, 5))):
        est = fit(chunked)
        np.testing.assert_array_equal(est.samples_, ref.samples_)
        np.testing.assert_array_equal(est.theta_, ref.theta_)
        assert est.acceptance_rate_ == ref.acceptance_rate_


def test_mle_induced_memmap_without_dask(agreement_data, tmp_path, small_chunks, monkeypatch):
    """Without dask, a given unfitted mle reads [X; 1 - X] from the memmap's rows held in one byte per
    entry (Rows.compact): the same rows, so the same fit, bit for bit."""
    import sys

    from skmrf import MLEInducedLikelihood

    ref = MLEInducedLikelihood(AGREEMENT_GRID, mle=ExactMaxLikelihood(AGREEMENT_GRID, alpha=0.01)).fit(agreement_data)
    monkeypatch.setitem(sys.modules, "dask.array", None)  # "import dask.array" raises ImportError
    est = MLEInducedLikelihood(AGREEMENT_GRID, mle=ExactMaxLikelihood(AGREEMENT_GRID, alpha=0.01))
    est.fit(as_memmap(agreement_data, tmp_path))
    np.testing.assert_array_equal(est.theta_hat_, ref.theta_hat_)
