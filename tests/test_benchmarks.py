"""The benchmark scripts still run (#41 item 5): nothing else runs them, so a refactor of the
package could break one unnoticed until someone needs its numbers.

Every public script in ``benchmarks/`` has a ``--quick`` mode, a small version of itself that runs
end to end in about a minute and writes no results file; the slow test runs each in a fresh
process, from ``benchmarks/`` as the scripts' own imports expect. The fast test checks that every
script keeps that flag and is listed in ``benchmarks/README.md``, which maps each script to what it
measures and where its results are.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_quick_run(script):
    # 300 s: a --quick run takes under a minute on a quiet 2-core machine; the margin is for a loaded one.
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, script, "--quick"], cwd=BENCHMARKS, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, f"{script} --quick exited with {done.returncode}:\n{done.stderr[-5000:]}"


def test_every_script_has_quick_and_a_readme_row():
    assert SCRIPTS, "no benchmark scripts found"
    readme = (BENCHMARKS / "README.md").read_text()
    without_quick = [s for s in SCRIPTS if "--quick" not in (BENCHMARKS / s).read_text()]
    assert not without_quick, f"scripts without a --quick mode: {without_quick}"
    unlisted = [s for s in SCRIPTS if s not in readme]
    assert not unlisted, f"scripts missing from benchmarks/README.md: {unlisted}"
