"""pytest configuration: ``--runslow`` runs the tests marked ``slow`` (skipped by default)."""

import pytest


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run the tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: give --runslow to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


#: The serial-fallback thresholds of the parallel call sites (``skmrf._utils._parallel.workers_for``).
SERIAL_FALLBACK_THRESHOLDS = [
    "skmrf._kernels.pseudo.PL_MIN_WORK_PER_WORKER",
    "skmrf._kernels.lap.LAP_MIN_WORK_PER_WORKER",
    "skmrf._kernels.mcmc.chains.MCMC_MIN_WORK_PER_WORKER",
    "skmrf._kernels.gaussian.lap.GLAP_MIN_WORK_PER_WORKER",
    "skmrf._kernels.incomplete.em.EM_MIN_WORK_PER_WORKER",
]


@pytest.fixture
def parallel_always(monkeypatch):
    """Every threshold at 0: ``n_jobs > 1`` takes the parallel path even on small test data."""
    for target in SERIAL_FALLBACK_THRESHOLDS:
        monkeypatch.setattr(target, 0)
