"""Property-based checks over small random data sets, graphs, states and scales (hypothesis).

For every estimator: no NaN or inf in the parameters or the score unless an error is raised,
the input is never modified, the same seed gives the same result, and pickling round-trips
exactly. The default run keeps to a few examples per estimator; the slow variant runs many more.
"""

import pickle
import warnings
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skmrf import (
    AdaptiveSchedule,
    DecomposedEM,
    ExactMaxLikelihood,
    GaussianLAP,
    GaussianMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    MetropolisHastingsMRF,
    MLEInducedLikelihood,
    PseudoLikelihoodEstimator,
)
from skmrf.estimators._bayes import LIKELIHOODS

DISCRETE = {
    "exact": lambda g: ExactMaxLikelihood(g, alpha=0.01),
    "exact_a0": lambda g: ExactMaxLikelihood(g, alpha=0.0, max_iter=200),
    "lap": lambda g: LAPEstimator(g, strategy="exact", random_state=0),
    "pl": lambda g: PseudoLikelihoodEstimator(g, random_state=0),
    "mcmc": lambda g: MCMCMaxLikelihood(
        g, schedule=AdaptiveSchedule(n_iter=5, n_chains=30, n_sweeps=2), random_state=0
    ),
    "em": lambda g: DecomposedEM(g, alpha=0.01, max_iter=20),
    "em_a0_gradient": lambda g: DecomposedEM(g, method="gradient", max_iter=50),
}
# Estimators for incomplete data: their problems get missing entries (NaN) too.
INCOMPLETE = {"em", "em_a0_gradient"}
GAUSSIAN = {"glap": GaussianLAP, "glap_shrink": lambda g: GaussianLAP(g, shrinkage=0.1), "gml": GaussianMaxLikelihood}
FAST = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAST_MH = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY_MH = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def discrete_problems(draw, binary=False):
    n_vars = draw(st.integers(2, 5))
    n_rows = draw(st.integers(1, 40))
    k = 2 if binary else draw(st.integers(2, 3))
    kind = draw(st.sampled_from(["chain", "complete", "triples", "edges"]))
    if kind == "triples" and n_vars >= 3 and not binary:
        graph = [(0, 1, 2)] + [(i, i + 1) for i in range(2, n_vars - 1)]
    elif kind == "edges":
        pairs = [(i, j) for i in range(n_vars) for j in range(i + 1, n_vars)]
        graph = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))
    else:
        graph = "complete" if kind == "complete" else "chain"
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = rng.integers(0, k, size=(n_rows, n_vars))
    dtype = draw(st.sampled_from([np.int64, np.uint8, np.float64]))
    missing = draw(st.sampled_from([0.0, 0.2, 0.6]))
    X_missing = np.where(rng.random(X.shape) < missing, np.nan, X)
    # Rows and columns entirely missing too: empty rows change nothing, an empty column is refused.
    empty = draw(st.sampled_from(["none", "none", "rows", "column"]))
    if empty == "rows":
        X_missing[rng.random(n_rows) < 0.3] = np.nan
    elif empty == "column":
        X_missing[:, draw(st.integers(0, n_vars - 1))] = np.nan
    return graph, X.astype(dtype), X_missing


def _check_discrete(make, graph, X):
    before = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no-MLE and convergence warnings are allowed
        try:
            est = make(graph).fit(X)
        except ValueError as exc:  # a refusal must say something, never crash obscurely
            assert str(exc)
            return
        again = make(graph).fit(X)
        score = est.score(X)
    np.testing.assert_array_equal(X, before)  # input never modified
    assert np.all(np.isfinite(est.theta_)) and np.isfinite(score)
    np.testing.assert_array_equal(est.theta_, again.theta_)  # same seed, same result
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.theta_, est.theta_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert clone.score(X) == score


def _check_empty_rows_change_nothing(make, graph, X, est):
    """DecomposedEM: appending as many entirely missing rows changes neither the fit nor the score."""
    padded = np.vstack([X, np.full(X.shape, np.nan)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        more = make(graph).fit(padded)
        # Empty rows are dropped before anything is computed (alpha="auto" counts the others):
        # the same arithmetic, so the same fit exactly. The score sums more (zero) terms, which
        # numpy's pairwise summation may group differently: equal to a few ulps.
        np.testing.assert_array_equal(more.theta_, est.theta_)
        assert more.log_likelihood_ == est.log_likelihood_
        np.testing.assert_allclose(more.score(padded), est.score(X), rtol=1e-13)


def _fitted_arrays(est):
    """The fitted float array attributes (name ending in ``_``) of ``est``."""
    out = {}
    for name, value in vars(est).items():
        if name.endswith("_") and isinstance(value, (np.ndarray, float)) and np.asarray(value).dtype.kind == "f":
            out[name] = np.asarray(value)
    return out


def _check_all_finite(est, allowed_inf=()):
    for name, value in _fitted_arrays(est).items():
        ok = np.isfinite(value) | (np.isposinf(value) if name in allowed_inf else False)
        assert np.all(ok), f"{name} = {value}"


def _check_same(a, b):
    arrays_a, arrays_b = _fitted_arrays(a), _fitted_arrays(b)
    assert arrays_a.keys() == arrays_b.keys()
    for name in arrays_a:
        np.testing.assert_array_equal(arrays_a[name], arrays_b[name], err_msg=name)


@st.composite
def binary_pairwise_problems(draw):
    """Binary data with a pairwise graph of at least one edge (the agreement model's domain)."""
    n_vars = draw(st.integers(2, 5))
    n_rows = draw(st.integers(1, 40))
    kind = draw(st.sampled_from(["chain", "complete", "edges"]))
    if kind == "edges":
        pairs = [(i, j) for i in range(n_vars) for j in range(i + 1, n_vars)]
        graph = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))
    else:
        graph = kind
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    # Rows from a random agreement-like mixture: copies of a random row with flips, so that
    # edges agree often (as in real data) but boundary cases (never/always agree) occur too.
    base = rng.integers(0, 2, size=n_vars)
    flip = rng.random((n_rows, n_vars)) < draw(st.sampled_from([0.05, 0.2, 0.5]))
    X = np.where(flip, 1 - base, base)
    dtype = draw(st.sampled_from([np.int64, np.uint8, np.float64]))
    return graph, X.astype(dtype)


def _fit_quietly(make, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary and convergence warnings are allowed
        return make().fit(X)


def _check_bayes(make, X, score):
    """Fit twice, compare, check finiteness, the input and a pickle round trip; ``score(est)``."""
    before = X.copy()
    try:
        est = _fit_quietly(make, X)
    except ValueError as exc:  # a refusal must say something, never crash obscurely
        assert str(exc)
        np.testing.assert_array_equal(X, before)
        return None
    np.testing.assert_array_equal(X, before)  # input never modified
    again = _fit_quietly(make, X)
    _check_same(est, again)  # same seed, same result
    value = score(est)
    assert np.all(np.isfinite(value))
    clone = pickle.loads(pickle.dumps(est))
    _check_same(clone, est)
    np.testing.assert_array_equal(score(clone), value)
    np.testing.assert_array_equal(X, before)
    return est


@st.composite
def mh_settings(draw):
    """Small chains: too few kept draws (refused), scales that never move and ones that always do."""
    return {
        "n_steps": draw(st.sampled_from([4, 9, 16, 30])),
        "n_chains": draw(st.integers(1, 3)),
        "thin": draw(st.integers(1, 2)),
        "init": draw(st.sampled_from(["mle", "prior"])),
        "proposal_scale": draw(st.sampled_from([1e-3, 0.03, 0.3, 1e3])),
        "copula": draw(st.sampled_from(["independent", "gaussian"])),
        # A tiny budget sends Laplace and exchange to their sampled fallbacks (and exact to a refusal).
        "max_bytes": draw(st.sampled_from([None, None, 1])),
        "n_particles": draw(st.sampled_from([1, 8])),
    }


def _mh(graph, likelihood, params):
    params = dict(params)
    rho = 0.05 if params["copula"] == "gaussian" else 0.0

    def make():
        return MetropolisHastingsMRF(graph, likelihood=likelihood, random_state=0, rho=rho, **params)

    return make


def _quiet_score(est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the AIS estimate of log Z is announced by a warning
        return est.score(X)


@pytest.mark.parametrize("likelihood", LIKELIHOODS)
@FAST_MH
@given(problem=binary_pairwise_problems(), params=mh_settings())
def test_metropolis_hastings_properties(likelihood, problem, params):
    graph, X = problem
    est = _check_bayes(_mh(graph, likelihood, params), X, lambda est: _quiet_score(est, X))
    if est is not None:
        n_chains = params["n_chains"]
        # As documented: R-hat is inf exactly where no half-chain's draws change (no within-chain
        # variance), the effective sample size 1 where no chain's draws change.
        kept = est.samples_.reshape(n_chains, -1, len(est.edges_))
        half = kept.shape[1] // 2
        halves = np.concatenate([kept[:, :half], kept[:, half : 2 * half]])
        assert np.array_equal(np.isinf(est.rhat_), (np.ptp(halves, axis=1) == 0).all(axis=0))
        assert np.all(est.ess_[(np.ptp(kept, axis=1) == 0).all(axis=0)] == 1)
        _check_all_finite(est, allowed_inf={"rhat_"})
        burn_in = params["n_steps"] // 10
        assert kept.shape[1] == len(range(burn_in, params["n_steps"], params["thin"]))


@pytest.mark.parametrize("copula", ["independent", "gaussian"])
@FAST
@given(problem=binary_pairwise_problems())
def test_mle_induced_properties(copula, problem):
    graph, X = problem
    rho = 0.05 if copula == "gaussian" else 0.0

    def make():
        return MLEInducedLikelihood(graph, copula=copula, rho=rho)

    def score(est):
        return est.log_likelihood(np.stack([est.theta_hat_, np.full(len(est.edges_), 0.5)]))

    est = _check_bayes(make, X, score)
    if est is not None:
        _check_all_finite(est)


def _check_gaussian(make, X, graph):
    before = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est = make(graph).fit(X)
        except ValueError as exc:
            assert str(exc)
            return
        again = make(graph).fit(X)
    np.testing.assert_array_equal(X, before)
    P = est.precision_
    assert np.all(np.isfinite(P))
    np.testing.assert_array_equal(P, again.precision_)
    if est.is_positive_definite_:
        assert np.isfinite(est.score(X))
        assert pickle.loads(pickle.dumps(est)).score(X) == est.score(X)


@st.composite
def gaussian_problems(draw):
    p = draw(st.integers(2, 6))
    n = draw(st.integers(p + 4, 60))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    seed = draw(st.integers(0, 2**31 - 1))
    X = np.random.default_rng(seed).standard_normal((n, p)) * scale
    return draw(st.sampled_from(["chain", "complete"])), X


@pytest.mark.parametrize("name", sorted(DISCRETE))
@FAST
@given(problem=discrete_problems())
def test_discrete_properties(name, problem):
    graph, X, X_missing = problem
    if name in INCOMPLETE:
        X = X_missing
        if not np.isnan(X).all(axis=0).any():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    est = DISCRETE[name](graph).fit(X)
                except ValueError:
                    est = None
            if est is not None:
                _check_empty_rows_change_nothing(DISCRETE[name], graph, X, est)
    if name == "mcmc":
        X = (X > 0).astype(X.dtype)
        graph = "chain" if not isinstance(graph, list) or any(len(c) > 2 for c in graph) else graph
    _check_discrete(DISCRETE[name], graph, X)


@pytest.mark.parametrize("name", sorted(GAUSSIAN))
@FAST
@given(problem=gaussian_problems())
def test_gaussian_properties(name, problem):
    graph, X = problem
    _check_gaussian(GAUSSIAN[name], X, graph)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DISCRETE))
@MANY
@given(problem=discrete_problems())
def test_discrete_properties_many(name, problem):
    test_discrete_properties.hypothesis.inner_test(name=name, problem=problem)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GAUSSIAN))
@MANY
@given(problem=gaussian_problems())
def test_gaussian_properties_many(name, problem):
    test_gaussian_properties.hypothesis.inner_test(name=name, problem=problem)


@pytest.mark.slow
@pytest.mark.parametrize("likelihood", LIKELIHOODS)
@MANY_MH
@given(problem=binary_pairwise_problems(), params=mh_settings())
def test_metropolis_hastings_properties_many(likelihood, problem, params):
    test_metropolis_hastings_properties.hypothesis.inner_test(likelihood=likelihood, problem=problem, params=params)


@pytest.mark.slow
@pytest.mark.parametrize("copula", ["independent", "gaussian"])
@MANY
@given(problem=binary_pairwise_problems())
def test_mle_induced_properties_many(copula, problem):
    test_mle_induced_properties.hypothesis.inner_test(copula=copula, problem=problem)


# -- sample_weight: zero, tiny, huge, subnormal, float, all zero (#40) ---------------------------
#: Discrete estimators with an explicit alpha: only the weights' ratios matter, so weights c * u must
#: give the fit of u (or a refusal that names the weights), whatever the common factor c. The
#: Gaussian ones must give finite estimates or such a refusal.
WEIGHTED = {
    "exact": lambda g: ExactMaxLikelihood(g, alpha=0.01, tol=1e-10),
    "lap": lambda g: LAPEstimator(g, alpha=0.01, tol=1e-10),
    "pl": lambda g: PseudoLikelihoodEstimator(g, alpha=0.01, tol=1e-10),
    "em": lambda g: DecomposedEM(g, alpha=0.01, tol=1e-10, max_iter=500),
    "glap": lambda g: GaussianLAP(g),
    "gml": lambda g: GaussianMaxLikelihood(g),
}
WEIGHT_FACTORS = {"tiny": 1e-300, "subnormal": 1e-320, "huge": 1e300, "one": 1.0}


@st.composite
def weighted_problems(draw):
    graph, X, _ = draw(discrete_problems())
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    base = draw(st.sampled_from(["integers", "floats", "with_zeros"]))
    u = {
        "integers": rng.integers(1, 4, len(X)).astype(float),
        "floats": rng.uniform(0.25, 2.0, len(X)),
        "with_zeros": rng.integers(0, 3, len(X)).astype(float),
    }[base]
    return graph, X, u, draw(st.sampled_from(sorted(WEIGHT_FACTORS)))


def _fit_weighted(make, graph, X, w):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make(graph).fit(X, sample_weight=w)


@pytest.mark.parametrize("name", sorted(WEIGHTED))
@FAST
@given(problem=weighted_problems())
def test_sample_weight_properties(name, problem):
    graph, X, u, factor = problem
    if name in ("glap", "gml"):  # real-valued data of the same shape
        X = X + np.random.default_rng(len(X)).normal(scale=0.3, size=X.shape)
        graph = "chain"
    w = u * WEIGHT_FACTORS[factor]
    before = w.copy()
    try:
        reference = _fit_weighted(WEIGHTED[name], graph, X, u)
    except ValueError as exc:  # refused at unit scale (too few rows, a constant column...): say why
        assert str(exc)
        return
    try:
        est = _fit_weighted(WEIGHTED[name], graph, X, w)
    except ValueError as exc:  # a refusal names the weights and gives the figures
        assert "weight" in str(exc), str(exc)
        return
    finally:
        np.testing.assert_array_equal(w, before)  # the caller's weights are never modified
    attr = "precision_" if name in ("glap", "gml") else "theta_"
    got, want = np.asarray(getattr(est, attr)), np.asarray(getattr(reference, attr))
    assert np.all(np.isfinite(got))
    if name in ("glap", "gml"):
        # A Gaussian fit counts a row of weight w as w rows (its sample-size checks and GaussianLAP's
        # bias correction (n - |A| - 2) / n use the sum), so the scale of the weights matters there.
        return
    # Weights c * u and u give the same objective up to the rounding of c * u and of their sums
    # (relative 1e-13 for normal c; a subnormal c * u keeps ~3 significant digits, whose ratios the
    # fit must then either reproduce within 1e-2 relative or refuse); the solvers stop at 1e-10.
    rel = 1e-6 if factor != "subnormal" else 5e-2
    np.testing.assert_allclose(got, want, rtol=rel, atol=rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            score = est.score(X, sample_weight=w)
        except ValueError as exc:
            assert "weight" in str(exc), str(exc)
        else:
            assert np.isfinite(score)


@pytest.mark.parametrize("name", sorted(WEIGHTED))
def test_all_zero_weights_are_refused_by_name(name):
    X = np.random.default_rng(0).integers(0, 2, (30, 4))
    if name in ("glap", "gml"):
        X = X + np.random.default_rng(1).normal(scale=0.3, size=X.shape)
    with pytest.raises(ValueError, match="weight"):
        _fit_weighted(WEIGHTED[name], "chain", X, np.zeros(len(X)))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WEIGHTED))
@MANY
@given(problem=weighted_problems())
def test_sample_weight_properties_many(name, problem):
    test_sample_weight_properties.hypothesis.inner_test(name=name, problem=problem)


# -- the protein readers: every byte of a small file deleted or replaced (#40) -------------------
_REPLACEMENTS = (0x3E, 0x0A, 0x0D, 0x20, 0x2D, 0x2E, 0x2A, 0x58, 0x61, 0x65, 0x39, 0x00, 0xFF)


def _mutations(data):
    for i in range(len(data)):
        yield data[:i] + data[i + 1 :]
        for b in _REPLACEMENTS:
            yield data[:i] + bytes([b]) + data[i + 1 :]


def _read_or_refuse(read, data):
    """``read(file)``, or None for a ValueError with a message; any other exception fails."""
    import io

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the foreign-letter warning is allowed
        try:
            return read(io.BytesIO(data))
        except ValueError as exc:
            assert str(exc)
            return None


def test_alignment_reader_parses_or_refuses_every_damaged_byte():
    from skmrf.protein import read_alignment

    text = b">s1 first\nACDE-FG\n>s2\nAC-EKFG\n>s3 third one\nWCDEYFG\n"
    for fmt in ("auto", "fasta", "a2m"):
        read = partial(read_alignment, format=fmt)
        assert np.array_equal(_read_or_refuse(read, text).X, _read_or_refuse(partial(read_alignment), text).X)
        for data in _mutations(text):
            got = _read_or_refuse(read, data)
            if got is not None:  # a parse: whole sequences of one length, states in the alphabet
                assert got.X.ndim == 2 and got.X.shape[0] == len(got.names) >= 1 and got.X.shape[1] >= 1
                assert 0 <= got.X.min() and got.X.max() < len(got.alphabet)


def test_score_readers_parse_or_refuse_every_damaged_byte():
    import io

    from skmrf.protein import read_ccmpred_matrix, read_plmc_couplings, write_ccmpred_matrix, write_plmc_couplings

    S = np.random.default_rng(0).random((4, 4))
    S = S + S.T
    np.fill_diagonal(S, 0.0)
    # plmc writes 6 decimals (rounding 5e-7); CCMpred's "%.20e" keeps every bit.
    for write, read, symmetric, atol in (
        (write_plmc_couplings, lambda f: read_plmc_couplings(f).matrix, True, 5e-7),
        (write_ccmpred_matrix, read_ccmpred_matrix, False, 0.0),  # "the matrix, as written"
    ):
        buffer = io.StringIO()
        write(buffer, S)
        data = buffer.getvalue().encode()
        np.testing.assert_allclose(_read_or_refuse(read, data), S, rtol=0, atol=atol)
        for damaged in _mutations(data):
            M = _read_or_refuse(read, damaged)
            if M is not None:  # a parse: square and finite; plmc's symmetric with a zero diagonal
                assert M.ndim == 2 and M.shape[0] == M.shape[1] and np.all(np.isfinite(M))
                if symmetric:
                    assert np.array_equal(M, M.T) and not np.diag(M).any()
