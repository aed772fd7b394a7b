"""The command line under bad input (issue #23, item 4): one line on stderr, never a traceback.

Exit codes: 2 for an error in the input (arguments, files, data, a full disk), 1 for an
internal error (with a hint to report it), 130 when interrupted. CSV edge cases: a
byte-order mark, no header row (``--no-header``), ragged rows, quoted numbers. Graph files
name columns consistently with the data's header.
"""

import errno
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from skmrf import DecomposedEM, ExactMaxLikelihood, LAPEstimator
from skmrf.cli import main
from skmrf.io import load_model

from .test_cli import ROOT, check_error, run


@pytest.fixture(scope="module")
def binary():
    return np.random.default_rng(0).integers(0, 2, size=(120, 4))


@pytest.fixture()
def files(tmp_path, binary):
    """A data file, a fitted model and a Gaussian model in ``tmp_path``."""
    np.save(tmp_path / "x.npy", binary)
    assert main(["fit", "-m", "exact", str(tmp_path / "x.npy"), "-o", str(tmp_path / "m.npz")]) == 0
    gaussian = np.random.default_rng(1).standard_normal((50, 3))
    np.save(tmp_path / "g.npy", gaussian)
    assert main(["fit", "-m", "gaussian-ml", str(tmp_path / "g.npy"), "-o", str(tmp_path / "g.npz")]) == 0
    return tmp_path


def csv_text(rows, header="a,b,c,d"):
    return "".join(
        f"{line}\n" for line in ([header] if header is not None else []) + [",".join(map(str, r)) for r in rows]
    )


def leftovers(folder, before):
    """Files in ``folder`` that were not there ``before`` (temporary files a failed write left)."""
    return sorted(set(os.listdir(folder)) - set(before))


# -- exit codes ------------------------------------------------------------------------------


def _catalogue(d):
    """Bad invocations in folder ``d`` (see ``files``) and a fragment each error line must hold."""
    (d / "ragged.csv").write_text("a,b\n1,0\n1\n")
    (d / "data_header.csv").write_text("1,0\n0,1\n")
    (d / "empty.csv").write_text("")
    (d / "header_only.csv").write_text("a,b\n")
    (d / "latin1.csv").write_bytes("\xe9t\xe9,b\n1,0\n".encode("latin-1"))
    (d / "no_name.csv").write_text(",a,b\n0,1,0\n1,0,1\n")
    (d / "semicolons.csv").write_text("a;b\n0;1\n")
    (d / "commas.tsv").write_text("a,b\n0,1\n")
    (d / "model.npz").write_bytes(b"not a model")
    np.save(d / "three_d.npy", np.zeros((2, 2, 2)))
    np.save(d / "no_rows.npy", np.zeros((0, 4)))
    np.save(d / "complex.npy", np.zeros((3, 4), dtype=complex))
    (d / "dir.npz").mkdir()
    x, m = d / "x.npy", d / "m.npz"
    return [
        (["fit", d / "ragged.csv", "-o", m], "line 3 has 1 field but the header has 2"),
        (["fit", d / "data_header.csv", "-o", m], "--no-header"),
        (["fit", d / "empty.csv", "-o", m], "is empty"),
        (["fit", d / "header_only.csv", "-o", m], "no rows of data"),
        (["fit", d / "latin1.csv", "-o", m], "not UTF-8"),
        (["fit", d / "no_name.csv", "-o", m], "column 1 of the header (line 1) has no name"),
        (["fit", d / "semicolons.csv", "-o", m], "separated by ';'"),
        (["fit", d / "commas.tsv", "-o", m], "separated by ','"),
        (["fit", d / "three_d.npy", "-o", m], "3-D"),
        (["fit", d / "no_rows.npy", "-o", m], "no rows"),
        (["fit", d / "complex.npy", "-o", m], "complex"),
        (["fit", x, "--no-header", "-o", m], "--no-header applies to .csv"),
        (["fit", x, "-o", d / "dir.npz"], "is a directory"),
        (["fit", x, "-o", d / "nowhere" / "m.npz"], "does not exist"),
        (["fit", x, "-o", m, "--set", "alpha=-1"], "'alpha'"),
        (["fit", x, "-o", m, "--n-states", "1"], "'n_states'"),
        (["fit", x, "-o", m, "--max-iter", "0"], "'max_iter'"),
        (["fit", x, "-o", m, "--random-state", "-1"], "--random-state"),
        (["fit", x, "-o", m, "--random-state", str(2**32)], "--random-state"),
        (["fit", x, "-o", m, "-m", "gaussian-lap", "--shrinkage", "2"], "'shrinkage'"),
        (["fit", x, "-o", m, "--set", "nonsense=1"], "--set"),
        (["fit", x], "--out"),
        (["sample", m, "-o", d / "s.csv", "-n", "-1"], "--n-samples"),
        (["sample", m, "-o", d / "s.csv", "-n", "1.5"], "--n-samples"),
        (["sample", m, "-o", d / "s.csv", "--n-sweeps", "0"], "--n-sweeps"),
        (["sample", m, "-o", d / "s.csv", "--random-state", "-5"], "--random-state"),
        (["sample", d / "g.npz", "-o", d / "s.csv"], "cannot sample"),
        (["sample", m, "-o", d / "s.xlsx"], "unknown file type"),
        (["score", d / "model.npz", x], "model.npz"),
        (["score", m, d / "g.npy"], "g.npy"),  # 3 columns, the model has 4
        (["score", m, x, "--per-row", d / "r.txt"], "--per-row"),
        (["info", x], "x.npy"),
        (["info", d / "missing.npz"], "no such model file"),
        (["bogus"], "invalid choice"),
        ([], "COMMAND"),
    ]


def test_every_bad_invocation_is_one_line_and_exit_2(files, capsys):
    for argv, fragment in _catalogue(files):
        check_error(capsys, argv, fragment)


def test_a_value_error_from_an_estimator_is_exit_2_and_anything_else_exit_1(files, capsys, monkeypatch):
    def refuse(self, X, y=None):
        raise ValueError("column 3 holds the value 7, which is not a state")

    monkeypatch.setattr(ExactMaxLikelihood, "fit", refuse)
    argv = ["fit", "-m", "exact", files / "x.npy", "-o", files / "n.npz"]
    check_error(capsys, argv, "x.npy: column 3 holds the value 7")
    for bug in (IndexError("index 5 is out of bounds"), TypeError("unsupported operand"), KeyError("k")):

        def fail(self, X, y=None, bug=bug):
            raise bug

        monkeypatch.setattr(ExactMaxLikelihood, "fit", fail)
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith(f"skmrf: internal error: {type(bug).__name__}: "), lines[0]
        assert "bug in skmrf" in lines[0] and "--debug" in lines[0] and "SKMRF_DEBUG=1" in lines[0]
        assert not (files / "n.npz").exists()


def test_a_warning_turned_into_an_error_is_exit_2(files, capsys, monkeypatch):
    from sklearn.exceptions import ConvergenceWarning

    def warn(self, X, y=None):
        warnings.warn("did not converge in 3 iterations; raise max_iter", ConvergenceWarning, stacklevel=2)
        return self

    monkeypatch.setattr(ExactMaxLikelihood, "fit", warn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as python -W error does
        check_error(capsys, ["fit", "-m", "exact", files / "x.npy", "-o", files / "n.npz"], "raise max_iter")


def test_debug_flag_and_environment_show_the_traceback(files, capsys, monkeypatch):
    def fail(self, X, y=None):
        raise IndexError("boom")

    monkeypatch.setattr(ExactMaxLikelihood, "fit", fail)
    argv = ["fit", "-m", "exact", str(files / "x.npy"), "-o", str(files / "n.npz")]
    with pytest.raises(IndexError, match="boom"):
        main(["--debug", *argv])
    monkeypatch.setenv("SKMRF_DEBUG", "1")
    with pytest.raises(IndexError, match="boom"):
        main(argv)
    monkeypatch.setenv("SKMRF_DEBUG", "0")  # "0" and "" leave debugging off
    assert main(argv) == 1


def test_out_of_memory_is_exit_2(files, capsys, monkeypatch):
    def fail(self, X, y=None):
        raise MemoryError("Unable to allocate 11.9 GiB for an array with shape (40000, 39999)")

    monkeypatch.setattr(ExactMaxLikelihood, "fit", fail)
    check_error(capsys, ["fit", "-m", "exact", files / "x.npy", "-o", files / "n.npz"], "out of memory", "11.9 GiB")


def test_interrupt_is_exit_130_and_leaves_no_partial_file(files, capsys, monkeypatch):
    def interrupted(f, **entries):  # save_model's writer, stopped half-way
        f.write(b"PK half a model")
        raise KeyboardInterrupt

    monkeypatch.setattr("skmrf.io._save.np.savez_compressed", interrupted)
    before = os.listdir(files)
    code, out, err = run(capsys, "fit", "-m", "exact", files / "x.npy", "-o", files / "n.npz")
    assert code == 130 and err == "skmrf: interrupted\n" and out == ""
    assert leftovers(files, before) == []


# -- disk full -------------------------------------------------------------------------------


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".tsv"])
def test_disk_full_when_writing_samples_keeps_the_old_file(files, capsys, monkeypatch, suffix):
    out = files / f"s{suffix}"
    out.write_text("the previous samples")
    before = os.listdir(files)
    if suffix == ".npy":
        monkeypatch.setattr("skmrf.cli._tables.np.save", _disk_full)
    else:

        class FullWriter:  # writes the header, then the disk is full
            def __init__(self, f, **kwargs):
                self.f = f

            def writerow(self, row):
                self.f.write(",".join(row) + "\n")

            def writerows(self, rows):
                _disk_full()

        monkeypatch.setattr("skmrf.cli._tables.csv.writer", FullWriter)
    line = check_error(capsys, ["sample", files / "m.npz", "-n", 5, "-o", out], "No space left on device")
    assert f"cannot write {out}" in line
    assert out.read_text() == "the previous samples"  # a failed write leaves the old file whole
    assert leftovers(files, before) == []


def test_disk_full_when_saving_a_model_or_scores(files, capsys, monkeypatch):
    def half_then_full(f, **entries):  # save_model's writer, out of space half-way
        f.write(b"PK")
        _disk_full()

    monkeypatch.setattr("skmrf.io._save.np.savez_compressed", half_then_full)
    before = os.listdir(files)
    check_error(capsys, ["fit", "-m", "exact", files / "x.npy", "-o", files / "n.npz"], "n.npz", "No space left")
    assert leftovers(files, before) == []
    monkeypatch.setattr("skmrf.cli._tables.np.save", _disk_full)
    check_error(capsys, ["score", files / "m.npz", files / "x.npy", "--per-row", files / "r.npy"], "r.npy", "No space")
    assert leftovers(files, before) == []


# -- sample -n 0 -----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".parquet"])
def test_sample_zero_writes_an_empty_sample(files, capsys, suffix):
    """``DiscreteMRF.sample(0)`` returns an empty sample; ``skmrf sample -n 0`` writes one."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    out = files / f"s{suffix}"
    code, _, err = run(capsys, "sample", files / "m.npz", "-n", 0, "-o", out)
    assert code == 0 and err == ""
    expected = load_model(files / "m.npz").sample(0, random_state=0)
    assert expected.shape == (0, 4)
    if suffix == ".npy":
        assert np.load(out).shape == (0, 4)
    elif suffix == ".csv":
        assert out.read_text() == "0,1,2,3\n"  # the header alone
    else:
        import pandas as pd

        assert pd.read_parquet(out).shape == (0, 4)


# -- data files ------------------------------------------------------------------------------


def test_parquet_dates_and_other_non_numbers_name_the_column(tmp_path, capsys, binary):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    df = pd.DataFrame(binary, columns=list("abcd"))
    out = tmp_path / "m.npz"
    cases = {
        "when": (pd.date_range("2020-01-01", periods=len(df)), "dates or durations"),
        "zone": (pd.date_range("2020-01-01", periods=len(df), tz="UTC"), "dates or durations"),
        "wait": (pd.to_timedelta(np.arange(len(df)), unit="s"), "dates or durations"),
        "nested": ([[1, 2]] * len(df), "non-numeric value array([1, 2])"),
        "text": (["yes"] * len(df), "'yes'"),
    }
    for name, (column, fragment) in cases.items():
        path = tmp_path / f"{name}.parquet"
        df.assign(**{name: column}).to_parquet(path)
        check_error(capsys, ["fit", path, "-o", out], f"{name}.parquet", f"column {name!r}", fragment)
    (tmp_path / "damaged.parquet").write_bytes(b"PAR1 not really")
    check_error(capsys, ["fit", tmp_path / "damaged.parquet", "-o", out], "damaged.parquet", "cannot be read")


@pytest.mark.parametrize("suffix, sep", [(".csv", ","), (".tsv", "\t")])
def test_byte_order_mark_is_not_part_of_the_first_name(tmp_path, capsys, binary, suffix, sep):
    text = sep.join("abcd") + "\n" + "".join(sep.join(map(str, r)) + "\n" for r in binary)
    data = tmp_path / f"x{suffix}"
    data.write_bytes(b"\xef\xbb\xbf" + text.encode())
    edges = tmp_path / "edges.csv"
    edges.write_bytes(b"\xef\xbb\xbfa,b\nb,d\n")  # a BOM in the graph file, too: 'a,b' is an edge, not a header
    assert run(capsys, "fit", "-m", "exact", "-g", edges, data, "-o", tmp_path / "m.npz")[0] == 0
    model = load_model(tmp_path / "m.npz")
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]
    assert sorted(model.graph_.edges) == [(0, 1), (1, 3)]
    np.testing.assert_array_equal(
        model.model_.theta, ExactMaxLikelihood(graph=[(0, 1), (1, 3)]).fit(binary).model_.theta
    )


def test_a_file_without_header_needs_no_header(tmp_path, capsys, binary):
    data = tmp_path / "x.csv"
    data.write_text(csv_text(binary, header=None))
    first = ",".join(map(str, binary[0]))
    check_error(
        capsys, ["fit", data, "-o", tmp_path / "m.npz"], f"the first line '{first}' looks like data", "--no-header"
    )
    assert run(capsys, "fit", "--no-header", "-m", "exact", data, "-o", tmp_path / "m.npz")[0] == 0
    model = load_model(tmp_path / "m.npz")
    assert model.n_features_in_ == 4 and not hasattr(model, "feature_names_in_")
    reference = ExactMaxLikelihood().fit(binary)  # every row, the first one too
    np.testing.assert_array_equal(model.model_.theta, reference.model_.theta)
    code, out, _ = run(capsys, "score", "--no-header", tmp_path / "m.npz", data)
    assert code == 0 and float(out) == reference.score(binary)


def test_a_header_of_column_indices_is_a_header(tmp_path, capsys, binary):
    """``skmrf sample`` writes the header 0,1,...,n-1: it reads back as names, not as a row."""
    data = tmp_path / "x.csv"
    data.write_text(csv_text(binary, header="0,1,2,3"))
    assert run(capsys, "fit", "-m", "exact", data, "-o", tmp_path / "m.npz")[0] == 0
    model = load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(model.model_.theta, ExactMaxLikelihood().fit(binary).model_.theta)
    assert run(capsys, "sample", tmp_path / "m.npz", "-n", 3, "-o", tmp_path / "s.csv")[0] == 0
    code, out, _ = run(capsys, "score", tmp_path / "m.npz", tmp_path / "s.csv")
    assert code == 0 and np.isfinite(float(out))


@pytest.mark.parametrize("method", ["exact", "lap", "em"])
@pytest.mark.parametrize("line, fields", [("1,0,1", 3), ("1,0,1,0,1", 5), ("", None)])
def test_a_ragged_row_is_refused_with_its_line_number(tmp_path, capsys, binary, method, line, fields):
    lines = csv_text(binary[:5]).splitlines()
    if fields is None:  # a trailing delimiter: five fields, the last empty
        line, fields = "1,0,1,0,", 5
    lines[3:3] = ["", line]  # a blank line is skipped but counted: the ragged row is line 5
    data = tmp_path / "x.csv"
    data.write_text("\n".join(lines) + "\n")
    fragment = f"line 5 has {fields} fields but the header has 4"
    check_error(capsys, ["fit", "-m", method, data, "-o", tmp_path / "m.npz"], "x.csv", fragment, "empty field")
    check_error(capsys, ["fit", "--no-header", "-m", method, data, "-o", tmp_path / "m.npz"], "line 5", "first row has")


def test_a_missing_value_is_an_empty_field(tmp_path, capsys, binary):
    X = binary.astype(float)
    X[::7, 2] = np.nan
    X[::11, 0] = np.nan
    rows = [",".join("" if np.isnan(v) else str(int(v)) for v in row) for row in X]
    rows[1] = rows[1].replace(",", ", ", 1)  # whitespace around a field is not a value
    data = tmp_path / "x.csv"
    data.write_text("a,b,c,d\n" + "\n".join(rows) + "\n")
    assert run(capsys, "fit", "-m", "em", "--random-state", 0, data, "-o", tmp_path / "m.npz")[0] == 0
    reference = DecomposedEM(random_state=0).fit(X)
    np.testing.assert_array_equal(load_model(tmp_path / "m.npz").model_.theta, reference.model_.theta)


def test_quoted_numbers_and_whitespace_read_as_numbers(tmp_path, capsys, binary):
    plain, fancy = tmp_path / "plain.csv", tmp_path / "fancy.csv"
    plain.write_text(csv_text(binary))
    rows = [", ".join(f' "{v}" ' if k % 2 else f" {v} " for k, v in enumerate(r)) for r in binary]
    fancy.write_text('"a", b ,c,"d"\r\n' + "\r\n".join(rows) + "\r\n")
    for path in (plain, fancy):
        assert run(capsys, "fit", "-m", "exact", path, "-o", tmp_path / f"{path.stem}.npz")[0] == 0
    a, b = load_model(tmp_path / "plain.npz"), load_model(tmp_path / "fancy.npz")
    assert list(b.feature_names_in_) == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(a.model_.theta, b.model_.theta)


# -- graph files name columns as the header does -------------------------------------------------


@pytest.mark.parametrize(
    "header, edges, expected",
    [
        ("c,a,d,b", "a b\nb c\n", [(1, 3), (3, 0)]),  # a is column 1, b column 3, c column 0
        (None, "2 0\n0 3\n", [(2, 0), (0, 3)]),  # --no-header: numbers are positions
        ("2,0,1,x", "0 1\n1 x\n", [(1, 2), (2, 3)]),  # numeric names are names: 0 is position 1
        ("0,1,2,3", "3 0\n0 2\n", [(3, 0), (0, 2)]),  # the header skmrf sample writes
    ],
    ids=["names", "no-header", "numeric-names", "index-names"],
)
@pytest.mark.parametrize("via", ["file", "set"])
def test_graph_names_columns_as_the_header_does(tmp_path, capsys, binary, header, edges, expected, via):
    """An edge file (--graph) and a JSON list (--set graph=) name columns alike; numbers are JSON integers."""
    data = tmp_path / "x.csv"
    data.write_text(csv_text(binary, header=header))
    (tmp_path / "edges.txt").write_text(edges)
    factors = [[int(t) if t.isdigit() else t for t in line.split()] for line in edges.splitlines()]
    graph = ["-g", tmp_path / "edges.txt"] if via == "file" else ["--set", f"graph={json.dumps(factors)}"]
    flags = ["--no-header"] if header is None else []
    assert run(capsys, "fit", *flags, "-m", "exact", *graph, data, "-o", tmp_path / "m.npz")[0] == 0
    model = load_model(tmp_path / "m.npz")
    assert sorted(model.graph_.edges) == sorted(tuple(sorted(e)) for e in expected)
    np.testing.assert_array_equal(model.model_.theta, ExactMaxLikelihood(graph=expected).fit(binary).model_.theta)


def test_a_skipped_graph_header_is_said(tmp_path, capsys, binary):
    """A first line naming no column is skipped as a header, with a warning: it may be a misspelt edge."""
    data = tmp_path / "x.csv"
    data.write_text(csv_text(binary))
    (tmp_path / "edges.csv").write_text("A,B\nb,c\n")
    code, _, err = run(capsys, "fit", "-m", "exact", "-g", tmp_path / "edges.csv", data, "-o", tmp_path / "m.npz")
    assert code == 0
    assert err.splitlines() == [
        f"skmrf: warning: graph file {tmp_path / 'edges.csv'}: line 1 'A,B' names no column "
        f"of {data}; skipped as a header."
    ]
    assert sorted(load_model(tmp_path / "m.npz").graph_.edges) == [(1, 2)]


def test_a_number_that_names_no_column_is_refused_when_names_are_numbers(tmp_path, capsys, binary):
    """With a header 2,0,1,x the token 3 is not read as a position: some names are numbers."""
    data = tmp_path / "x.csv"
    data.write_text(csv_text(binary, header="2,0,1,x"))
    (tmp_path / "bad.txt").write_text("0 1\n3 x\n")
    check_error(
        capsys,
        ["fit", "-g", tmp_path / "bad.txt", data, "-o", tmp_path / "m.npz"],
        "bad.txt, line 2: '3' is not a column",
        "numbers name columns",
    )
    argv = ["fit", "--set", 'graph=[[0, 1], [3, "x"]]', data, "-o", tmp_path / "m.npz"]
    check_error(capsys, argv, "--set graph, factor 2: '3' is not a column", "numbers name columns")


# -- through the interpreter -------------------------------------------------------------------


def _python(*argv, cwd, env=None):
    inherited = {k: v for k, v in os.environ.items() if k != "SKMRF_DEBUG"}
    env = {**inherited, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, *map(str, argv)], capture_output=True, text=True, env=env, cwd=cwd)


def test_python_m_skmrf_errors_are_one_line(tmp_path, binary):
    np.save(tmp_path / "x.npy", binary)
    (tmp_path / "ragged.csv").write_text("a,b\n1,0\n1\n")
    res = _python("-m", "skmrf", "fit", "ragged.csv", "-o", "m.npz", cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines() == [
        "skmrf: error: ragged.csv: line 3 has 1 field but the header has 2; every row needs one field per column "
        "(a missing value is an empty field, as in 1,,0)."
    ]
    assert _python("-m", "skmrf", "fit", "x.npy", "-o", "m.npz", cwd=tmp_path).returncode == 0
    res = _python("-m", "skmrf", "sample", "m.npz", "-n", "0", "-o", "s.npy", cwd=tmp_path)
    assert res.returncode == 0 and res.stderr == "" and np.load(tmp_path / "s.npy").shape == (0, 4)


def test_an_internal_error_through_the_interpreter(tmp_path, binary):
    """A bug is exit code 1 and one line; SKMRF_DEBUG=1 shows Python's traceback instead."""
    np.save(tmp_path / "x.npy", binary)
    code = (
        "import sys, skmrf.cli as cli, skmrf.cli._commands as commands\n"
        "def bug(*args, **kwargs):\n"
        "    raise IndexError('index 9 is out of bounds')\n"
        "commands.read_table = bug\n"
        "sys.exit(cli.main(['fit', 'x.npy', '-o', 'm.npz']))\n"
    )
    res = _python("-c", code, cwd=tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr and res.stdout == ""
    assert len(res.stderr.splitlines()) == 1
    assert res.stderr.startswith("skmrf: internal error: IndexError: index 9 is out of bounds -- this is a bug")
    res = _python("-c", code, cwd=tmp_path, env={"SKMRF_DEBUG": "1"})
    assert res.returncode == 1 and "Traceback" in res.stderr and "IndexError" in res.stderr


def test_lap_fit_on_csv_equals_the_python_api(tmp_path, capsys, binary):
    """The new CSV reader gives the same numbers as the .npy path (a fit that reads every row)."""
    data = tmp_path / "x.csv"
    data.write_text(csv_text(binary))
    assert run(capsys, "fit", "-m", "lap", data, "-o", tmp_path / "m.npz")[0] == 0
    reference = LAPEstimator().fit(binary)
    np.testing.assert_array_equal(load_model(tmp_path / "m.npz").model_.theta, reference.model_.theta)
