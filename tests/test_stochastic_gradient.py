"""The stochastic-gradient solver of MCMCMaxLikelihood's adaptive schedule: its average and its memory."""

import tracemalloc

import numpy as np
import pytest

from skmrf._solvers.stochastic_gradient import stochastic_gradient

EPS = np.finfo(float).eps


def _noisy_quadratic(n, seed, scale=0.1, variance=1e-2):
    """``A(x) = ||x||^2 / 2`` (so ``E_x[t] = x``) with seeded noise: a deterministic sequence per seed."""
    rng = np.random.default_rng(seed)

    def expectation(x):
        return x + scale * rng.standard_normal(n), np.full(n, variance)

    return expectation


def _recorded(**kw):
    """Run the solver and keep every iterate (through the callback) for an explicit mean."""
    path = []
    result = stochastic_gradient(callback=lambda k, x, **metrics: path.append(x.copy()), **kw)
    return result, np.array(path)


def _rounding(path):
    # A running sum of K terms and numpy's pairwise mean each differ from the exact mean by at
    # most K * eps * max |x| (the running sum's bound; pairwise is tighter).
    return len(path) * EPS * np.abs(path).max()


@pytest.mark.parametrize("n_iter", [1, 2, 7, 200])
def test_fixed_run_averages_exactly_the_last_half(n_iter):
    b = np.linspace(-1, 1, 5)
    box = lambda x: np.clip(x, -0.8, 0.8)  # noqa: E731 - binds for two of the five coordinates
    result, path = _recorded(
        expectation=_noisy_quadratic(5, 0), mean_stats=b, project=box, x0=np.zeros(5), lipschitz=2.0, n_iter=n_iter
    )
    assert result.n_iter == len(path) == n_iter and not result.converged
    assert result.n_averaged == n_iter - n_iter // 2
    np.testing.assert_allclose(result.x_mean, box(path[n_iter // 2 :].mean(axis=0)), rtol=0, atol=_rounding(path))
    np.testing.assert_array_equal(result.x_last, path[-1])
    assert all(len(v) == n_iter for v in result.trace.values())


@pytest.mark.parametrize("n_average", [0, 50])
def test_stopping_rule_averages_the_steps_after_it_fired(n_average):
    # The noise is 0.1 per coordinate and the declared variance 0.01: at the optimum the ratio
    # is about 1 or less (steps of 1/20 of the gradient leave the iterates correlated), so it
    # falls below 1 + tol = 3 once the drift from x0 (a factor 0.95 per step) is gone.
    b = np.linspace(-1, 1, 5)
    kw = dict(expectation=_noisy_quadratic(5, 1), mean_stats=b, project=np.asarray, x0=np.full(5, 3.0), lipschitz=20.0)
    result, path = _recorded(n_iter=1000, min_iter=10, tol=2.0, window=10, n_average=n_average, **kw)
    ratio = result.trace["noise_ratio"]
    fired = 10 + int(np.argmax(ratio[9:] < 3.0))  # the first step from min_iter on with a ratio below 3
    assert result.converged and fired > 20 and (ratio[9 : fired - 1] >= 3.0).all()
    assert result.n_iter == len(path) == fired + max(n_average, fired)
    assert result.n_averaged == max(n_average, fired)
    np.testing.assert_allclose(result.x_mean, path[fired:].mean(axis=0), rtol=0, atol=_rounding(path))


def test_rule_that_never_fires_averages_the_last_half():
    # The box holds x at 0.5 while the optimum is at 1: the gradient stays at 0.5 against a
    # declared variance of 1e-2, a ratio near 25 * w, so the rule never fires.
    b = np.ones(3)
    box = lambda x: np.clip(x, -0.5, 0.5)  # noqa: E731
    result, path = _recorded(
        expectation=_noisy_quadratic(3, 2), mean_stats=b, project=box, x0=np.zeros(3), lipschitz=2.0,
        n_iter=101, min_iter=10, tol=0.5, n_average=20,
    )  # fmt: skip
    assert not result.converged and result.n_iter == 101 and result.n_averaged == 51
    np.testing.assert_allclose(result.x_mean, box(path[50:].mean(axis=0)), rtol=0, atol=_rounding(path))


def test_memory_does_not_grow_with_the_number_of_steps():
    # The solver keeps a running sum and a ring of `window` gradients and variances: O(n_params)
    # memory for any n_iter. Keeping every iterate (as it did) would add 250 vectors of 80 KB
    # between the two runs; the per-step trace adds 4 floats per step (about 32 KB here).
    n = 10_000
    vector = 8 * n

    def peak(n_iter):
        expectation = _noisy_quadratic(n, 3)
        tracemalloc.start()
        stochastic_gradient(expectation, np.zeros(n), np.asarray, np.zeros(n), lipschitz=2.0, n_iter=n_iter, window=5)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    short, long = peak(50), peak(300)
    assert long - short < vector
    # The ring (2 x window), the sum, x, and about a dozen temporaries of one step (measured 22
    # vectors in all): far below the 300 + 50 vectors that keeping the iterates needs.
    assert long < 40 * vector
