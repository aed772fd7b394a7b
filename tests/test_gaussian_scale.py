"""Gaussian estimators at extreme data scales and on collinear columns (issue #10, item 4).

Scale equivariance. For ``X D`` with ``D = diag(d)`` the sample covariance is
``D S D`` and both estimators give ``D^-1 Theta D^-1`` exactly: maximum
likelihood on a fixed pattern because ``log det`` and ``tr(S Theta)`` only
shift, LAP because every entry is an entry of the inverse of a neighbourhood
block of ``S``. The log-density of ``x D`` is that of ``x`` minus
``sum(log d)`` (the Jacobian), so ``score`` shifts by exactly that.

Tolerances. The estimators fit standardised data ``(x - mean) / scale_``,
which for ``X D`` differs from that of ``X`` only by the rounding of the
division and of ``scale_`` (a few units of ``eps = 2.2e-16`` per entry). The
blocks and the Newton Hessian here have condition numbers below 100, so the
standardised estimates agree to about ``1e-13``; ``rtol=1e-11`` leaves a
margin. Newton stops far below ``tol`` (quadratic convergence) and both runs
stop at the same criterion in standardised units, so ML obeys the same
bound. ``score`` includes ``-sum(log d)`` (up to about 2800 for ``d = 1e200``
and six columns), which is rounded at ``eps * |sum(log d)|``; the comparison
allows ``1e-12 * (|score| + |sum(log d)|)``.
"""

import warnings

import numpy as np
import pytest

from skmrf._kernels.gaussian import lap as lap_kernel
from skmrf.estimators.gaussian import GaussianLAP, GaussianMaxLikelihood
from skmrf.exceptions import NotPositiveDefiniteWarning, ScaleWarning

P = 6
RTOL = 1e-11
TINY = np.finfo(np.float64).tiny
ESTIMATORS = [
    pytest.param(GaussianLAP, {}, id="lap"),
    pytest.param(GaussianLAP, {"shrinkage": 0.1}, id="lap-shrinkage"),
    pytest.param(GaussianMaxLikelihood, {"solver": "newton"}, id="ml-newton"),
    pytest.param(GaussianMaxLikelihood, {"solver": "regression"}, id="ml-regression"),
]
UNIFORM = [1e-100, 1e-8, 1.0, 1e8, 1e200]
# Per-column scales, including columns 1e300 apart in the same fit.
PER_COLUMN = {
    "mixed-moderate": 10.0 ** np.array([-8, -3, 0, 2, 5, 8]),
    "mixed-extreme": 10.0 ** np.array([-100, 0, 200, -50, 100, 8]),
}


def chain_data(n=200, seed=0, rho=0.4):
    """n draws of a Gaussian chain MRF (precision tridiagonal) with a non-zero mean."""
    precision = np.eye(P) + np.diag(-rho * np.ones(P - 1), 1) + np.diag(-rho * np.ones(P - 1), -1)
    C = np.linalg.cholesky(precision)
    z = np.random.default_rng(seed).standard_normal((P, n))
    return np.linalg.solve(C.T, z).T + np.arange(P)


def fit_recording(est, X):
    """Fit, recording every warning; return ``(est, warnings)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    return est, caught


def expected_precision(reference, d):
    """``D^-1 Theta D^-1`` in the estimators' order of division (so under/overflow matches)."""
    T = reference.standardized_precision_.toarray() / np.outer(reference.scale_, np.ones(P))
    T = T / reference.scale_[None, :]  # the reference precision, entry by entry
    i, j = np.meshgrid(np.arange(P), np.arange(P), indexing="ij")
    with np.errstate(over="ignore", under="ignore"):
        return T / d[np.minimum(i, j)] / d[np.maximum(i, j)]


def check_equivariant(Est, params, d, shrinkage_exact=True):
    """Fit X and X * d; compare precisions, scales, scores; return the scaled fit's warnings."""
    X = chain_data()
    ref, ref_warnings = fit_recording(Est("chain", **params), X)
    assert not ref_warnings
    est, caught = fit_recording(Est("chain", **params), X * d)
    for w in caught:
        assert "singular" not in str(w.message)
        assert not issubclass(w.category, (NotPositiveDefiniteWarning, RuntimeWarning))
    assert est.is_positive_definite_
    np.testing.assert_allclose(est.scale_, ref.scale_ * d, rtol=1e-14)
    np.testing.assert_allclose(
        est.standardized_precision_.toarray(), ref.standardized_precision_.toarray(), rtol=RTOL, atol=RTOL
    )
    got = est.precision_
    assert np.all(np.isfinite(got))
    want = expected_precision(ref, d)
    normal = np.abs(want) >= TINY / np.finfo(np.float64).eps  # not near the subnormal range
    np.testing.assert_allclose(got[normal], want[normal], rtol=RTOL)
    assert np.array_equal(got != 0, want != 0)  # the same pattern (entries underflow alike)
    assert np.array_equal(got, got.T)
    jacobian = float(np.sum(np.log(d) * np.ones(P)))
    s_ref, s = ref.score(X), est.score(X * d)
    assert np.isfinite(s)
    assert abs(s - (s_ref - jacobian)) <= 1e-12 * (abs(s_ref) + abs(jacobian))
    np.testing.assert_allclose(est.mahalanobis(X * d), ref.mahalanobis(X), rtol=RTOL)
    return caught


@pytest.mark.parametrize("Est, params", ESTIMATORS)
@pytest.mark.parametrize("scale", UNIFORM)
def test_uniform_scale_equivariance(Est, params, scale):
    caught = check_equivariant(Est, params, np.full(P, scale))
    # Precisions near 1e-400 do not exist in float64: said, not silent.
    underflow = scale > 1e150
    assert any(issubclass(w.category, ScaleWarning) for w in caught) == underflow


@pytest.mark.parametrize("Est, params", [p for p in ESTIMATORS if "shrinkage" not in p.id])
@pytest.mark.parametrize("name", list(PER_COLUMN))
def test_per_column_scale_equivariance(Est, params, name):
    # Shrinkage towards mean(diag(S)) * I is not equivariant under per-column scaling by
    # definition (see test_shrinkage_keeps_its_covariance_scale_meaning), so only shrinkage=0.
    check_equivariant(Est, params, PER_COLUMN[name])


@pytest.mark.parametrize("shrinkage", [0.0, 0.1])
def test_lap_cluster_gram_path_agrees_at_extreme_scales(shrinkage, monkeypatch):
    # The per-variable shrinkage target is gathered per block on this path.
    X = chain_data() * PER_COLUMN["mixed-extreme"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScaleWarning)
        dense = GaussianLAP("chain", shrinkage=shrinkage).fit(X)
        monkeypatch.setattr(lap_kernel, "_DENSE_GRAM_MAX_FEATURES", 0)
        gram = GaussianLAP("chain", shrinkage=shrinkage).fit(X)
    np.testing.assert_allclose(
        gram.standardized_precision_.toarray(), dense.standardized_precision_.toarray(), rtol=RTOL, atol=RTOL
    )
    assert np.isfinite(gram.score(X))


@pytest.mark.parametrize("Est", [GaussianLAP, GaussianMaxLikelihood])
def test_shrinkage_keeps_its_covariance_scale_meaning(Est):
    # On the complete graph both estimators give inv((1 - a) S + a mean(diag(S)) I).
    d = PER_COLUMN["mixed-moderate"][[1, 2, 3, 4]]  # variances 1e-6 .. 1e10
    X = chain_data()[:, :4] * d
    Xc = X - X.mean(axis=0)
    S = Xc.T @ Xc / len(X)
    a = 0.2
    want = np.linalg.inv((1 - a) * S + a * np.mean(np.diag(S)) * np.eye(4))
    est = Est("complete", shrinkage=a).fit(X)
    # Relative to the geometric scale of each entry (the shrunk matrix has condition ~1e5).
    rel = np.abs(est.precision_ - want) * np.outer(d, d)
    assert rel.max() <= 1e-9


def test_precision_that_overflows_float64_is_an_error():
    X = chain_data() * 1e-200  # precision about 1e400
    for Est in (GaussianLAP, GaussianMaxLikelihood):
        with pytest.raises(ValueError, match="overflows float64"):
            Est("chain").fit(X)


# ---------------------------------------------------------------------------
# collinear and constant columns
# ---------------------------------------------------------------------------
def collinear_chain():
    X = chain_data()
    X[:, 3] = -2.5 * X[:, 2] + 7.0
    return X


@pytest.mark.parametrize("solver", ["newton", "regression"])
@pytest.mark.parametrize("scale", [1e-100, 1.0, 1e200])
def test_ml_collinear_neighbours_named(solver, scale):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning or NaN on the way
        with pytest.raises(ValueError, match=r"neighbouring columns \(2, 3\) is singular"):
            GaussianMaxLikelihood("chain", solver=solver).fit(collinear_chain() * scale)


def test_ml_collinear_neighbours_named_by_feature_name():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(collinear_chain(), columns=list("abcdef"))
    with pytest.raises(ValueError, match=r"\(2 \('c'\), 3 \('d'\)\)"):
        GaussianMaxLikelihood("chain").fit(X)


@pytest.mark.parametrize("scale", [1e-100, 1.0, 1e200])
def test_lap_collinear_columns_named(scale):
    with pytest.raises(ValueError, match=r"1-neighbourhood of variable 2 \(3 variables: \[1, 2, 3\]\) is singular"):
        GaussianLAP("chain").fit(collinear_chain() * scale)


@pytest.mark.parametrize("solver", ["newton", "regression"])
def test_ml_collinear_clique_named(solver):
    # x2 = x0 + x1 on a triangle: every pair is fine, the 3 x 3 block is singular.
    X = chain_data()[:, :3]
    X[:, 2] = X[:, 0] + X[:, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning on the way is allowed; the result is not
        with pytest.raises(ValueError, match=r"does not exist.*variables: \[0, 1, 2\]\) is singular"):
            GaussianMaxLikelihood("complete", solver=solver).fit(X)


@pytest.mark.parametrize("solver", ["newton", "regression"])
def test_ml_collinear_non_neighbours_still_fit(solver):
    # On a star, x3 = x1 + x2 among the leaves leaves the MLE well defined (the pattern's
    # cliques are the edges); GaussianLAP refuses (its hub block is singular), ML does not.
    X = chain_data()[:, :4]
    X[:, 3] = X[:, 1] + X[:, 2]
    star = [(0, 1), (0, 2), (0, 3)]
    with pytest.raises(ValueError, match="is singular"):
        GaussianLAP(star).fit(X)
    est, caught = fit_recording(GaussianMaxLikelihood(star, solver=solver, decrement_tol=None), X)
    assert not caught
    assert est.is_positive_definite_ and np.all(np.isfinite(est.precision_))
    # The ML condition W_ii = S_ii holds to the solver's stopping rule (tol = 1e-10 on the residual, or on
    # a sweep's change for regression, in standardised units where S_ii = 1); 1e-8 leaves 100x for the
    # regression's linear convergence and the inverse's rounding (condition ~10).
    np.testing.assert_allclose(np.diag(est.covariance_), X.var(axis=0), rtol=1e-8)


@pytest.mark.parametrize("Est", [GaussianLAP, GaussianMaxLikelihood])
@pytest.mark.parametrize("value", [0.0, 0.1, 1e200, -3e-150])
def test_constant_column_named(Est, value):
    X = chain_data()
    X[:, 4] = value  # 0.1 * 200 / 200 is not 0.1: centring leaves a constant residue
    with pytest.raises(ValueError, match="column 4 has zero variance"):
        Est("chain").fit(X)
    est = Est("chain", shrinkage=0.1).fit(X)  # the documented alternative
    assert np.all(np.isfinite(est.precision_)) and np.isfinite(est.score(X))


# ---------------------------------------------------------------------------
# score is never NaN or infinite
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("Est, params", ESTIMATORS)
@pytest.mark.parametrize("d", [np.full(P, s) for s in UNIFORM] + list(PER_COLUMN.values()))
def test_score_never_nan_or_inf(Est, params, d):
    X = chain_data(n=40, seed=3) * d
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScaleWarning)
        est = Est("chain", **params).fit(X)
    assert np.all(np.isfinite(est.precision_))
    assert np.isfinite(est.score(X))
    assert np.all(np.isfinite(est.score_samples(X)))
    assert np.isfinite(est.log_partition_)
