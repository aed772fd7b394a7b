"""The shared progress helper (#27 item 4): silent at verbose=0, the right totals otherwise."""

import io
import sys
import types
import warnings

import numpy as np
import pytest

from skmrf._utils import _progress
from skmrf._utils._progress import Progress, write
from skmrf._utils._verbose import ProgressLog


class FakeTqdm:
    """Records what a tqdm bar is given."""

    made = []

    def __init__(self, total, desc, unit, file, leave):
        self.total, self.desc, self.unit, self.n, self.closed, self.lines = total, desc, unit, 0, False, []
        self.updates = []
        FakeTqdm.made.append(self)

    def update(self, n):
        self.n += n
        self.updates.append(n)

    def close(self):
        self.closed = True

    def refresh(self):
        self.refreshed = True

    def write(self, text, file=None):
        self.lines.append(text)


@pytest.fixture
def fake_tqdm(monkeypatch):
    FakeTqdm.made = []
    monkeypatch.setattr(_progress, "_tqdm", lambda: FakeTqdm)
    return FakeTqdm


def test_silent_at_verbose_zero(monkeypatch, capsys):
    monkeypatch.setattr(_progress, "_tqdm", lambda: pytest.fail("tqdm looked up at verbose=0"))
    with Progress(10, "X", 0) as bar:
        for _ in range(10):
            bar.update()
    assert capsys.readouterr() == ("", "")


def test_tqdm_bar_gets_the_total_and_every_unit(fake_tqdm):
    with Progress(7, "X", 1, unit="batch") as bar:
        for _ in range(3):
            bar.update(2)
        bar.update()
    (made,) = fake_tqdm.made
    assert (made.total, made.n, made.unit, made.closed) == (7, 7, "batch", True)
    assert _progress._ACTIVE == []


def test_verbose_lines_go_through_the_active_bar(fake_tqdm, capsys):
    log = ProgressLog("X", 1)
    with Progress(2, "X", 1):
        log("Iteration %d", 1)
    log("done")
    (made,) = fake_tqdm.made
    assert made.lines[0].startswith("[X] Iteration 1, time = ")
    assert capsys.readouterr().out.startswith("[X] done, time = ")


def test_plain_lines_without_tqdm(monkeypatch):
    monkeypatch.setattr(_progress, "_tqdm", lambda: None)
    monkeypatch.setattr(_progress, "PLAIN_INTERVAL", 0.0)  # a line per update
    out = io.StringIO()
    with Progress(4, "X", 1, file=out) as bar:
        for _ in range(4):
            bar.update()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("X: 0/4 steps (0 %)")
    assert lines[2].startswith("X: 2/4 steps (50 %)") and "s left" in lines[2]
    assert lines[-1].startswith("X: 4/4 steps in ")
    assert len(lines) == 6  # the first line, one per update, the last


def test_unknown_total_and_an_early_stop(monkeypatch):
    monkeypatch.setattr(_progress, "_tqdm", lambda: None)
    out = io.StringIO()
    with Progress(None, "X", 1, unit="iteration", file=out) as bar:
        bar.update(3)
    assert out.getvalue().splitlines()[-1].startswith("X: 3 iterations in ")


def test_plain_mode_by_environment(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", types.SimpleNamespace(tqdm=FakeTqdm))
    monkeypatch.setenv("SKMRF_PROGRESS", "plain")
    assert _progress._tqdm() is None
    monkeypatch.delenv("SKMRF_PROGRESS")
    assert _progress._tqdm() is FakeTqdm


def test_write_without_a_bar_prints(capsys):
    write("hello")
    assert capsys.readouterr().out == "hello\n"


def test_shown_draws_bars_at_verbose_zero_inside_only(fake_tqdm):
    with _progress.shown():
        with Progress(3, "X", 0) as bar:
            bar.update(3)
    with Progress(3, "Y", 0) as bar:
        bar.update(3)
    assert [(b.desc, b.n, b.closed) for b in fake_tqdm.made] == [("X", 3, True)]


def test_adaptive_ais_counts_its_chain_sweeps_out_of_the_budget(fake_tqdm):
    from skmrf.datasets import make_random_mrf
    from skmrf.graphs import grid_graph
    from skmrf.inference import adaptive_annealed_importance_sampling

    model = make_random_mrf(grid_graph(3, 3), 2, 1.0, random_state=0)
    # A small budget on purpose (the bar counts what was spent, converged or not): no warning.
    run = dict(budget=20_000, n_chains=10, n_steps=10, random_state=0, warn=False)
    adaptive_annealed_importance_sampling(model, **run)
    assert fake_tqdm.made == []  # verbose=0
    res = adaptive_annealed_importance_sampling(model, **run, verbose=1)
    (bar,) = fake_tqdm.made
    assert (bar.desc, bar.unit, bar.total, bar.n, bar.closed) == ("AIS", "sweep", 20_000, res.sweeps, True)


def _discrete_data():
    from skmrf.datasets import make_random_mrf
    from skmrf.graphs import grid_graph

    model = make_random_mrf(grid_graph(3, 3), 2, 0.5, random_state=0)
    return model.sample(300, random_state=0)


def _gaussian_data():
    from .test_gaussian import laplacian_precision, sample

    precision = laplacian_precision(5, 5)  # not chordal: the sparse solver runs Newton-CG
    return precision, sample(precision, 200, seed=3)


def _fits():
    from skmrf import (
        AdaptiveSchedule,
        DecomposedEM,
        ExactMaxLikelihood,
        GaussianMaxLikelihood,
        MCMCMaxLikelihood,
        MomentMatchingSchedule,
        PseudoLikelihoodEstimator,
    )

    def gaussian(solver):
        precision, X = _gaussian_data()
        return GaussianMaxLikelihood(precision, solver=solver, verbose=1).fit(X)

    def em(method):
        X = _discrete_data().astype(float)
        X[::3, 4] = np.nan
        return DecomposedEM("grid:3x3", method=method, verbose=1).fit(X)

    return {
        "pl": lambda: PseudoLikelihoodEstimator("grid:3x3", verbose=1).fit(_discrete_data()),
        "exact": lambda: ExactMaxLikelihood("grid:3x3", verbose=1).fit(_discrete_data()),
        "em-gradient": lambda: em("gradient"),
        "em": lambda: em("em"),
        "mcmc-moments": lambda: MCMCMaxLikelihood(
            "grid:3x3", schedule=MomentMatchingSchedule(n_chains=200, n_iter=20), verbose=1, random_state=0
        ).fit(_discrete_data()),
        "mcmc-adaptive": lambda: MCMCMaxLikelihood(
            "grid:3x3", schedule=AdaptiveSchedule(n_iter=30, n_chains=100), verbose=1, random_state=0
        ).fit(_discrete_data()),
        "gaussian-sparse": lambda: gaussian("sparse"),
        "gaussian-newton": lambda: gaussian("newton"),
        "gaussian-regression": lambda: gaussian("regression"),
    }


@pytest.mark.parametrize("name", list(_fits()))
def test_each_estimators_bar_counts_its_iterations(name, fake_tqdm, capsys):
    # The bar follows the verbose lines that count steps and no other line with an integer first
    # (GaussianMaxLikelihood's "%d stored entries" moved it to 80 million at p = 10^6).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _fits()[name]()
    bar = fake_tqdm.made[-1]
    assert bar.closed and bar.n == est.n_iter_ > 0
    assert min(bar.updates) >= 0  # never moved back (as it did after a size)


def test_time_left_follows_the_convergence_measure_not_max_iter(capsys):
    # #40: "DecomposedEM: 4/500 iterations, about 1030 s left", then done at 6 iterations. With a
    # tolerance, the expected iterations come from the measure's recent geometric decrease.
    from skmrf._utils._progress import Progress

    with Progress(500, "Fit", verbose=2, unit="iteration", tol=1e-6) as bar:  # closed: no bar left drawing
        report = bar.reporter(lambda *a: None, "Iteration %(step)d, max |grad| = %(grad_max).2e", measure="grad_max")
        for k, g in enumerate([1.0, 0.1, 0.01, 1e-3], start=1):  # tenfold per iteration
            report(k, objective=0.0, grad_max=g)
        assert bar.remaining() == 3  # 1e-3 -> 1e-6
        for k in (5, 6):  # stalls: no rate, no estimate
            report(k, objective=0.0, grad_max=2e-3)
        assert bar.remaining() is None or bar.remaining() > 3
    with Progress(500, "Fit", verbose=2, tol=1e-6) as flat:
        flat_report = flat.reporter(lambda *a: None, "Iteration %(step)d", measure="grad_max")
        for k in (1, 2, 3):
            flat_report(k, grad_max=0.5)
        assert flat.remaining() is None
    assert Progress(500, "Fit", verbose=0).remaining() == 500  # without tol: the cap


def test_a_bar_with_a_tolerance_is_given_the_expected_end(fake_tqdm):
    with Progress(500, "Fit", verbose=1, unit="iteration", tol=1e-6) as bar:
        report = bar.reporter(lambda *a: None, "Iteration %(step)d", measure="grad_max")
        for k, g in enumerate([1.0, 0.1, 0.01], start=1):
            report(k, grad_max=g)
        assert fake_tqdm.made[-1].total == 3 + 1 + 4  # tqdm's own time left now aims at 8, not 500
