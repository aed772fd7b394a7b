"""The command line (``skmrf.cli``) and the model files it writes (``skmrf.io``).

Commands run in-process through ``main(argv)``; two tests run ``python -m skmrf`` in a
subprocess to check the entry point, the exit code and that stderr holds one line.
"""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from skmrf import (
    AdaptiveSchedule,
    DecomposedEM,
    ExactMaxLikelihood,
    GaussianLAP,
    GaussianMaxLikelihood,
    LAPEstimator,
    MCMCMaxLikelihood,
    PseudoLikelihoodEstimator,
    TheorySchedule,
)
from skmrf.cli import METHODS, build_parser, main
from skmrf.io import FORMAT_VERSION, ModelFileError, load_model, read_header, save_model

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(0)
    return rng.integers(0, 2, size=(300, 6))


@pytest.fixture(scope="module")
def gaussian():
    rng = np.random.default_rng(1)
    return rng.standard_normal((200, 5)) @ np.triu(np.ones((5, 5))) * 0.5


def run(capsys, *argv):
    """``(exit code, stdout, stderr)`` of one in-process command."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def check_error(capsys, argv, *fragments):
    """The command fails with exit code 2 and one stderr line containing every fragment."""
    code, out, err = run(capsys, *argv)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skmrf: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


# -- round trips ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "method, graph, cls",
    [
        ("lap", "grid:2x3", LAPEstimator),
        ("exact", "chain", ExactMaxLikelihood),
        ("pseudo", "complete", PseudoLikelihoodEstimator),
    ],
)
def test_fit_save_load_score_equals_python_api(tmp_path, capsys, binary, method, graph, cls):
    data, model = tmp_path / "train.npy", tmp_path / "model.npz"
    np.save(data, binary)
    assert run(capsys, "fit", "--method", method, "--graph", graph, data, "--out", model)[0] == 0
    reference = cls(graph=graph).fit(binary)
    loaded = load_model(model)
    assert type(loaded) is cls
    # Bit for bit: the CLI runs the same fit in this process, the file stores float64 exactly and the
    # score is printed with repr (round-trip digits).
    assert loaded.score(binary) == reference.score(binary)
    np.testing.assert_array_equal(loaded.score_samples(binary), reference.score_samples(binary))
    np.testing.assert_array_equal(loaded.model_.theta, reference.model_.theta)
    code, out, _ = run(capsys, "score", model, data)
    assert code == 0 and float(out) == reference.score(binary)
    np.testing.assert_array_equal(
        loaded.sample(20, random_state=3), reference.sample(20, random_state=3)
    )  # same seed, same draws


def test_gaussian_lap_round_trip(tmp_path, capsys, gaussian):
    data, model = tmp_path / "x.npy", tmp_path / "g.npz"
    np.save(data, gaussian)
    assert run(capsys, "fit", "-m", "gaussian-lap", "-g", "chain", data, "-o", model)[0] == 0
    # The CLI maps .npy files (mmap_mode="r"), and GaussianLAP sums a memmap by row chunks (equal
    # to the in-memory fit to about 1e-15, not bit for bit): the Python reference reads it the same way.
    reference = GaussianLAP(graph="chain").fit(np.load(data, mmap_mode="r"))
    loaded = load_model(model)
    assert loaded.score(gaussian) == reference.score(gaussian)
    np.testing.assert_array_equal(np.asarray(loaded.log_partition_), np.asarray(reference.log_partition_))
    P, Q = loaded.precision_, reference.precision_
    np.testing.assert_array_equal(getattr(P, "toarray", lambda: P)(), getattr(Q, "toarray", lambda: Q)())
    code, out, _ = run(capsys, "score", model, data)
    assert code == 0 and float(out) == reference.score(gaussian)


@pytest.mark.parametrize(
    "est",
    [
        GaussianMaxLikelihood(graph=[(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]),
        GaussianLAP(graph="complete", shrinkage=0.1),
    ],
    ids=["ml-cycle", "lap-shrunk"],
)
def test_save_model_gaussian_python(tmp_path, gaussian, est):
    est.fit(gaussian)
    loaded = load_model(save_model(est, tmp_path / "m.npz"))
    np.testing.assert_array_equal(loaded.score_samples(gaussian), est.score_samples(gaussian))
    assert loaded.get_params() == {**est.get_params(), "graph": loaded.graph} and loaded.is_positive_definite_


def test_em_round_trip_with_missing_values(tmp_path, capsys, binary):
    X = binary.astype(float)
    X[np.random.default_rng(2).random(X.shape) < 0.1] = np.nan
    data, model = tmp_path / "x.npy", tmp_path / "em.npz"
    np.save(data, X)
    assert run(capsys, "fit", "-m", "em", data, "-o", model, "--random-state", 0)[0] == 0
    reference = DecomposedEM(random_state=0).fit(X)
    assert load_model(model).score(X) == reference.score(X)


def test_networkx_graph_is_saved_as_named_factors(tmp_path, binary):
    pd = pytest.importorskip("pandas")
    import networkx as nx
    from sklearn.base import clone

    df = pd.DataFrame(binary, columns=list("abcdef"))
    graph = nx.Graph([("a", "b"), ("b", "f"), ("f", "a"), ("c", "d"), ("e", "d")])
    est = ExactMaxLikelihood(graph=graph).fit(df)
    path = save_model(est, tmp_path / "m.npz")
    assert read_header(path)["params"]["graph"] == [["a", "b"], ["a", "f"], ["b", "f"], ["c", "d"], ["d", "e"]]
    loaded = load_model(path)
    assert loaded.score(df) == est.score(df)
    assert clone(loaded).fit(df).score(df) == est.score(df)  # the saved graph refits


def test_pseudo_score_method_and_header(tmp_path, binary):
    est = LAPEstimator(score_method="pseudo").fit(binary)
    path = save_model(est, tmp_path / "m.npz")
    header = read_header(path)
    assert header["format"] == "skmrf-model" and header["format_version"] == FORMAT_VERSION
    assert header["estimator"] == "LAPEstimator" and header["params"]["score_method"] == "pseudo"
    loaded = load_model(path)
    assert loaded.log_partition_ is None
    np.testing.assert_array_equal(loaded.score_samples(binary), est.score_samples(binary))
    with np.load(path, allow_pickle=False) as npz:  # no object arrays anywhere
        assert all(npz[k].dtype.kind != "O" for k in npz.files)


def test_ais_log_partition_round_trips(tmp_path, binary):
    est = LAPEstimator(score_method="ais", random_state=0).fit(binary)
    loaded = load_model(save_model(est, tmp_path / "m.npz"))
    assert loaded.score_method_ == "ais" and loaded.log_partition_std_ == est.log_partition_std_
    assert loaded.score(binary) == est.score(binary)


def test_parquet_round_trip(tmp_path, capsys, binary):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    df = pd.DataFrame(binary, columns=list("abcdef"))
    df.to_parquet(tmp_path / "x.parquet")
    assert run(capsys, "fit", "-m", "exact", tmp_path / "x.parquet", "-o", tmp_path / "m.npz")[0] == 0
    code, out, _ = run(capsys, "score", tmp_path / "m.npz", tmp_path / "x.parquet")
    assert code == 0 and float(out) == ExactMaxLikelihood().fit(df).score(df)


def test_unknown_format_version_is_refused(tmp_path, binary):
    path = save_model(ExactMaxLikelihood().fit(binary), tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = json.loads(str(arrays.pop("header")[()]))
    header["format_version"] = FORMAT_VERSION + 1
    future = tmp_path / "future.npz"
    np.savez(future, header=np.array(json.dumps(header)), **arrays)
    with pytest.raises(ModelFileError, match=f"format version {FORMAT_VERSION + 1}.*upgrade skmrf"):
        load_model(future)


# -- CSV: names map graph nodes ----------------------------------------------------------
def test_csv_header_maps_graph_nodes_by_name(tmp_path, capsys, binary):
    pd = pytest.importorskip("pandas")
    names = ["a", "b", "c", "d", "e", "f"]
    df = pd.DataFrame(binary, columns=names)
    df.to_csv(tmp_path / "x.csv", index=False)
    edges = [("f", "a"), ("a", "c"), ("c", "e")]
    (tmp_path / "edges.csv").write_text("source,target\n" + "".join(f"{u},{v}\n" for u, v in edges))
    model = tmp_path / "m.npz"
    argv = ("fit", "-m", "exact", "-g", tmp_path / "edges.csv", tmp_path / "x.csv", "-o", model)
    assert run(capsys, *argv)[0] == 0
    loaded = load_model(model)
    reference = ExactMaxLikelihood(graph=edges).fit(df)
    assert list(loaded.feature_names_in_) == names
    assert loaded.model_.cliques == reference.model_.cliques
    assert sorted(loaded.graph_.edges) == [(0, 2), (0, 5), (2, 4)]
    assert loaded.score(df) == reference.score(df)
    # Columns are matched by name: a file with its columns shuffled scores the same.
    df[names[::-1]].to_csv(tmp_path / "shuffled.csv", index=False)
    code, out, _ = run(capsys, "score", model, tmp_path / "shuffled.csv", "--per-row", tmp_path / "rows.npy")
    assert code == 0 and float(out) == reference.score(df)
    np.testing.assert_array_equal(np.load(tmp_path / "rows.npy"), reference.score_samples(df))
    # ... and a file without one of them names it.
    df.drop(columns="c").to_csv(tmp_path / "short.csv", index=False)
    check_error(capsys, ["score", model, tmp_path / "short.csv"], "short.csv", "no column 'c'")


def test_csv_without_pandas(tmp_path, capsys, binary, monkeypatch):
    """Without pandas, CSV files are still read (csv module) and edge files still map names."""
    monkeypatch.setattr("skmrf.cli._common.pandas", lambda: None)
    lines = ["a,b,c,d,e,f"] + [",".join(map(str, row)) for row in binary]
    (tmp_path / "x.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "edges.csv").write_text("f,a\na,c\n")
    model = tmp_path / "m.npz"
    assert run(capsys, "fit", "-m", "exact", "-g", tmp_path / "edges.csv", tmp_path / "x.csv", "-o", model)[0] == 0
    reference = ExactMaxLikelihood(graph=[(5, 0), (0, 2)]).fit(binary)
    code, out, _ = run(capsys, "score", model, tmp_path / "x.csv")
    assert code == 0 and float(out) == reference.score(binary)


def test_edge_file_with_indices_and_info(tmp_path, capsys, binary):
    np.save(tmp_path / "x.npy", binary)
    (tmp_path / "edges.txt").write_text("# a comment\n0 1\n1 2\n\n2 3 4\n")
    model = tmp_path / "m.npz"
    assert run(capsys, "fit", "-g", tmp_path / "edges.txt", tmp_path / "x.npy", "-o", model, "--alpha", 0.01)[0] == 0
    loaded = load_model(model)
    assert loaded.graph_.factors == ((0, 1), (1, 2), (2, 3, 4))
    assert loaded.alpha_ == 0.01
    code, out, _ = run(capsys, "info", model)
    assert code == 0
    for fragment in [
        "LAPEstimator",
        f"format version {FORMAT_VERSION}",
        "variables: 6",
        "of size 3",
        "theta:",
        "alpha=0.01",
    ]:
        assert fragment in out


# -- sample ----------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".npy", ".csv"])
def test_sample_writes_the_right_shape(tmp_path, capsys, binary, suffix):
    np.save(tmp_path / "x.npy", binary)
    model, out = tmp_path / "m.npz", tmp_path / f"s{suffix}"
    assert run(capsys, "fit", "-m", "exact", tmp_path / "x.npy", "-o", model)[0] == 0
    assert run(capsys, "sample", model, "-n", 7, "-o", out, "--random-state", 0)[0] == 0
    if suffix == ".npy":
        drawn = np.load(out)
    else:
        lines = out.read_text().splitlines()
        assert lines[0] == ",".join(str(j) for j in range(6))
        drawn = np.array([[int(v) for v in line.split(",")] for line in lines[1:]])
    assert drawn.shape == (7, 6)
    np.testing.assert_array_equal(drawn, load_model(model).sample(7, random_state=0))


def test_sample_writes_csv_to_standard_output(tmp_path, capsys, binary):
    # #40: `skmrf sample` could not write to stdout. Without --out (or with -o -) it writes CSV there.
    np.save(tmp_path / "x.npy", binary)
    model = tmp_path / "m.npz"
    assert run(capsys, "fit", "-m", "exact", tmp_path / "x.npy", "-o", model)[0] == 0
    for extra in ([], ["-o", "-"]):
        code, out, err = run(capsys, "sample", model, "-n", 4, "--random-state", 0, *extra)
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0] == ",".join(str(j) for j in range(6))
        drawn = np.array([[int(v) for v in line.split(",")] for line in lines[1:]])
        np.testing.assert_array_equal(drawn, load_model(model).sample(4, random_state=0))


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path, capsys, binary):
    # #40: `skmrf info m.npz | head -1` printed "error: Broken pipe" and exited 2.
    np.save(tmp_path / "x.npy", binary)
    model = tmp_path / "m.npz"
    assert run(capsys, "fit", "-m", "exact", tmp_path / "x.npy", "-o", model)[0] == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "skmrf", "sample", str(model), "-n", "200000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline().startswith(b"0,1,2")
    proc.stdout.close()  # as `head -1` does
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""


def test_sample_refuses_a_gaussian_model(tmp_path, capsys, gaussian):
    np.save(tmp_path / "x.npy", gaussian)
    assert run(capsys, "fit", "-m", "gaussian-ml", tmp_path / "x.npy", "-o", tmp_path / "g.npz")[0] == 0
    check_error(capsys, ["sample", tmp_path / "g.npz", "-o", tmp_path / "s.npy"], "GaussianMaxLikelihood", "discrete")


# -- --set NAME__PARAM=VALUE: parameters of parameter objects -------------------------------
def test_nested_set_builds_the_default_schedule_and_sets_its_parameters(tmp_path, capsys, npy, binary):
    model = tmp_path / "m.npz"
    argv = ["fit", "-m", "mcmc", npy, "-o", model, "--random-state", 0]
    assert run(capsys, *argv, "--set", "schedule__n_chains=60", "--set", "schedule__n_iter=8")[0] == 0
    loaded = load_model(model)  # the file keeps the object and its parameters
    assert type(loaded.schedule) is AdaptiveSchedule
    assert loaded.schedule.get_params() == AdaptiveSchedule(n_chains=60, n_iter=8).get_params()
    # The same fit as the Python API with the same object, bit for bit (same process, same seed).
    reference = MCMCMaxLikelihood(schedule=AdaptiveSchedule(n_chains=60, n_iter=8), random_state=0).fit(binary)
    np.testing.assert_array_equal(loaded.model_.theta, reference.model_.theta)


def test_nested_set_after_a_schedule_string_builds_that_schedule(tmp_path, capsys, npy):
    model = tmp_path / "m.npz"
    nested = ["--set", "schedule__n_iter=3", "--set", "schedule__n_chains=20", "--set", "schedule__n_sweeps=1"]
    # The string is read first wherever it stands: every NAME__PARAM applies to its object.
    argv = ["fit", "-m", "mcmc", npy, "-o", model, "--alpha", 1, *nested[:2], "--set", "schedule=theory", *nested[2:]]
    assert run(capsys, *argv)[0] == 0
    params = load_model(model).get_params()
    assert type(params["schedule"]) is TheorySchedule
    assert (params["schedule__n_iter"], params["schedule__n_chains"], params["schedule__n_sweeps"]) == (3, 20, 1)


def test_nested_set_refuses_unknown_names_with_the_valid_ones(tmp_path, capsys, npy):
    out = tmp_path / "m.npz"
    line = check_error(capsys, ["fit", "-m", "mcmc", npy, "-o", out, "--set", "schedule__bogus=1"], "schedule__bogus")
    assert "AdaptiveSchedule (the schedule 'adaptive') has no parameter 'bogus'; its parameters are average, " in line
    argv = ["fit", "-m", "mcmc", npy, "-o", out, "--set", "schedule=theory", "--set", "schedule__start_iter=5"]
    check_error(capsys, argv, "TheorySchedule (the schedule 'theory') has no parameter 'start_iter'", "eps")
    argv = ["fit", "-m", "mcmc", npy, "-o", out, "--set", "schedule=fast", "--set", "schedule__eps=1"]
    check_error(capsys, argv, "schedule='fast' is not one of ['adaptive', 'moments', 'theory']")
    check_error(capsys, ["fit", npy, "-o", out, "--set", "alpha__x=1"], "'alpha' is not a parameter object")
    check_error(capsys, ["fit", npy, "-o", out, "--set", "nothing__x=1"], "expected NAME=VALUE with NAME a parameter")
    # A value the schedule refuses is refused by its own validation, at fit, as any parameter is.
    check_error(capsys, ["fit", "-m", "mcmc", npy, "-o", out, "--set", "schedule__n_chains=-3"], "n_chains")
    assert not out.exists()


# -- help and errors ---------------------------------------------------------------------
def test_help_lists_every_command(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ["fit", "score", "sample", "info"]:
        assert f"    {command} " in out
    code, out, _ = run(capsys, "fit", "--help")
    assert code == 0 and all(m in out for m in METHODS)


def test_every_method_is_an_estimator():
    import skmrf

    for name in METHODS.values():
        assert hasattr(skmrf, name)
    assert set(build_parser()._subparsers._group_actions[0].choices) == {"fit", "score", "sample", "info"}


@pytest.fixture()
def npy(tmp_path, binary):
    path = tmp_path / "x.npy"
    np.save(path, binary)
    return path


def test_bad_file_is_one_line_exit_2(tmp_path, capsys, npy):
    bad = tmp_path / "bad.npy"
    bad.write_text("not an array")
    check_error(capsys, ["fit", bad, "-o", tmp_path / "m.npz"], "bad.npy")
    check_error(capsys, ["fit", tmp_path / "missing.csv", "-o", tmp_path / "m.npz"], "missing.csv", "no such")
    check_error(capsys, ["score", npy, npy], "x.npy", "not a saved skmrf model")
    (tmp_path / "bad.csv").write_text("a,b\n1,0\n1,red\n")
    check_error(capsys, ["fit", tmp_path / "bad.csv", "-o", tmp_path / "m.npz"], "bad.csv", "column 'b'", "'red'")
    (tmp_path / "x.xlsx").write_text("")
    check_error(capsys, ["fit", tmp_path / "x.xlsx", "-o", tmp_path / "m.npz"], "x.xlsx", ".npy")


def test_graph_not_matching_data_is_one_line_exit_2(tmp_path, capsys, npy):
    out = tmp_path / "m.npz"
    check_error(capsys, ["fit", npy, "-g", "grid:3x3", "-o", out], "x.npy", "grid:3x3", "6 columns")
    (tmp_path / "edges.csv").write_text("0,1\n1,9\n")
    check_error(capsys, ["fit", npy, "-g", tmp_path / "edges.csv", "-o", out], "edges.csv", "line 2", "'9'")
    check_error(capsys, ["fit", npy, "-g", "ring", "-o", out], "'ring'", "grid:RxC")
    assert not out.exists()


def test_unknown_method_is_one_line_exit_2(tmp_path, capsys, npy):
    check_error(capsys, ["fit", npy, "--method", "magic", "-o", tmp_path / "m.npz"], "--method", "'magic'", "lap")


def test_data_errors_name_the_column(tmp_path, capsys):
    (tmp_path / "x.csv").write_text("u,v\n0,1\n1,\n")
    check_error(capsys, ["fit", tmp_path / "x.csv", "-o", tmp_path / "m.npz"], "x.csv", "column 1 ('v')", "NaN")
    check_error(
        capsys, ["fit", tmp_path / "x.csv", "-m", "gaussian-lap", "--alpha", "1", "-o", tmp_path / "m.npz"], "--alpha"
    )


def _python_m(*argv, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "skmrf", *map(str, argv)], capture_output=True, text=True, env=env, cwd=cwd
    )


def test_python_m_skmrf_round_trip(tmp_path, binary):
    np.save(tmp_path / "x.npy", binary)
    fit = _python_m("fit", "--method", "lap", "--graph", "grid:2x3", "x.npy", "--out", "m.npz", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert fit.stdout == "" and fit.stderr == ""
    assert load_model(tmp_path / "m.npz").score(binary) == LAPEstimator(graph="grid:2x3").fit(binary).score(binary)


def test_python_m_skmrf_error_exit_code(tmp_path):
    res = _python_m("fit", "nothing.npy", "--method", "lap", "--out", "m.npz", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == ["skmrf: error: nothing.npy: no such data file."]
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_warnings_are_one_line(tmp_path, capsys, npy):
    with warnings.catch_warnings():
        code, _, err = run(capsys, "fit", npy, "-m", "exact", "--n-jobs", 2, "-o", tmp_path / "m.npz")
    assert code == 0
    assert err.strip() == "skmrf: warning: --n-jobs is ignored: ExactMaxLikelihood has no 'n_jobs' parameter."


def test_verbose_progress_goes_to_stderr(tmp_path, capsys, npy):
    code, out, err = run(capsys, "fit", npy, "-m", "lap", "-v", "-o", tmp_path / "m.npz")
    assert code == 0 and out == ""
    assert "fitting LAPEstimator on" in err and "done in" in err and "saved LAPEstimator" in err
    code, out, err = run(capsys, "fit", npy, "-m", "lap", "-vv", "-o", tmp_path / "m.npz")
    assert code == 0 and out == "" and "[LAPEstimator]" in err  # the estimator's own lines, on stderr
    assert load_model(tmp_path / "m.npz").verbose == 1


def test_a_terminal_shows_the_fit_progress_by_default(tmp_path, capsys, npy, monkeypatch):
    # #27 item 4: on a terminal the fit's bar shows without -v (plain lines here: no tqdm needed)
    monkeypatch.setenv("SKMRF_PROGRESS", "plain")
    code, _, err = run(capsys, "fit", npy, "-m", "lap", "-o", tmp_path / "m.npz")
    assert code == 0 and err == ""  # not a terminal: silent
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, _, err = run(capsys, "fit", npy, "-m", "lap", "-o", tmp_path / "m.npz")
    assert code == 0 and "LAPEstimator: 0/" in err and " problems in " in err, err
    assert "[LAPEstimator]" not in err  # the bar only: the estimator's lines need -vv
    assert load_model(tmp_path / "m.npz").verbose == 0
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, _, err = run(capsys, "fit", npy, "-m", "lap", "-q", "-o", tmp_path / "m.npz")
    assert code == 0 and err == ""


ALIGNMENT = """>s1
ACDE-A
>s2
ACDEYA
>s3
AcCDE-W
>s4
WCDEYA
>s5
ACKE-A
>s6
ACDQ-A
"""


def test_fit_an_alignment_writes_the_model_and_the_ranked_couplings(tmp_path, capsys):
    """``fit --method pl --alignment F --weights 0.8``: the fit and the scores equal the Python API's."""
    from skmrf import PseudoLikelihoodEstimator
    from skmrf.io import load_model
    from skmrf.protein import coupling_scores, read_alignment, read_plmc_couplings, sequence_weights

    fasta = tmp_path / "family.a2m"
    fasta.write_text(ALIGNMENT)
    out = tmp_path / "m.npz"
    argv = ["fit", "--method", "pl", "--alignment", fasta, "--weights", 0.8, "--alpha", 0.1, "-o", out]
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    X = read_alignment(fasta).X  # the lower-case insertion of s3 dropped: 6 columns
    w = sequence_weights(X, identity=0.8)
    ref = PseudoLikelihoodEstimator("complete", n_states=21, alpha=0.1).fit(X, sample_weight=w)
    est = load_model(out)
    np.testing.assert_array_equal(est.theta_, ref.theta_)  # the same computation
    path = tmp_path / "m_couplings.txt"
    with pytest.warns(UserWarning, match=r"Columns \[1\] of the alignment hold one state"):
        expected = coupling_scores(ref, alignment=X)  # column 1 (C) never varies: no pairs
    # plmc's format has six decimals: half a unit of the last one.
    np.testing.assert_allclose(read_plmc_couplings(path).matrix, expected.matrix, atol=5e-7)
    ranked = [float(line.split()[-1]) for line in path.read_text().splitlines()]
    assert len(ranked) == 15 and ranked == sorted(ranked, reverse=True)  # every pair, highest first
    assert not expected.matrix[1].any()  # column 1's pairs score 0


def test_an_alignment_gets_the_direct_coupling_defaults(tmp_path, capsys):
    # #40: the README's command ran an AIS estimate of log Z at save (163 of 204 CPU s) and its
    # default alpha overlapped plmc's top-L/2 at 0.67. With --alignment, PL defaults to plmc's
    # objective (per-order ridge on the tables, as the protein guide derives) and a pseudo score;
    # what the user gives wins, and --set takes a JSON object with integer keys.
    from skmrf import PseudoLikelihoodEstimator
    from skmrf.io import load_model
    from skmrf.protein import read_alignment, sequence_weights

    fasta = tmp_path / "family.a2m"
    fasta.write_text(ALIGNMENT)
    out = tmp_path / "m.npz"
    code, _, err = run(capsys, "fit", "--method", "pl", "--alignment", fasta, "--weights", 0.8, "-o", out)
    assert code == 0, err
    est = load_model(out)
    X = read_alignment(fasta).X
    m_eff, length = sequence_weights(X, identity=0.8).sum(), X.shape[1]
    assert est.ridge == "tables" and est.score_method_ == "pseudo"
    assert est.alpha == pytest.approx({1: 0.02 / m_eff, 2: 0.02 * 20 * (length - 1) / m_eff}, rel=1e-12)
    ref = PseudoLikelihoodEstimator("complete", n_states=21, alpha=est.alpha, ridge="tables")
    np.testing.assert_array_equal(est.theta_, ref.fit(X, sample_weight=sequence_weights(X, identity=0.8)).theta_)
    given = ["--set", 'alpha={"1": 0.001, "2": 0.01}', "--score-method", "bound"]
    code, _, err = run(capsys, "fit", "--method", "pl", "--alignment", fasta, "-o", out, *given)
    assert code == 0, err
    est = load_model(out)
    assert est.alpha == {1: 0.001, 2: 0.01} and est.ridge == "parameters" and est.score_method_ == "bound"


def test_an_alignment_with_a_gaussian_method_is_refused_for_what_it_is(tmp_path, capsys):
    # #40: the CLI blamed --n-states, which the user never gave (it is set from the alphabet).
    fasta = tmp_path / "family.a2m"
    fasta.write_text(ALIGNMENT)
    argv = ["fit", "--method", "gaussian-lap", "--alignment", fasta, "-o", tmp_path / "m.npz"]
    check_error(capsys, argv, "--alignment fits a Potts model", "--method gaussian-lap is a Gaussian model")


def test_alignment_options_are_refused_where_they_mean_nothing(tmp_path, capsys, npy):
    fasta = tmp_path / "family.fasta"
    fasta.write_text(ALIGNMENT.replace("c", ""))
    check_error(capsys, ["fit", npy, "--alignment", fasta, "-o", tmp_path / "m.npz"], "not both")
    check_error(capsys, ["fit", npy, "--weights", "0.8", "-o", tmp_path / "m.npz"], "--weights applies to --alignment")
    check_error(capsys, ["fit", "-o", tmp_path / "m.npz"], "needs a data file")
    check_error(capsys, ["fit", "--alignment", fasta, "--weights", "1.5", "-o", tmp_path / "m.npz"], "identity")


def test_an_output_path_that_is_an_input_is_refused(tmp_path, capsys):
    # #40: `fit --alignment fam.txt --couplings fam.txt` replaced the alignment with coupling scores
    # (the default couplings path can collide too), and `score --per-row d.csv` replaced the data.
    # Every output that names an input of the command is refused before any work; the input is
    # left as it was.
    fasta = tmp_path / "m3_couplings.txt"
    fasta.write_text(ALIGNMENT)
    argv = ["fit", "--method", "pl", "--alignment", fasta, "--couplings", fasta, "-o", tmp_path / "m.npz"]
    check_error(capsys, argv, "--couplings", "is the --alignment file this command reads")
    # the default couplings path, beside -o m3.npz, is the alignment itself
    check_error(capsys, ["fit", "--method", "pl", "--alignment", fasta, "-o", tmp_path / "m3.npz"], "--couplings")
    assert fasta.read_text() == ALIGNMENT
    data = tmp_path / "d.csv"
    X = np.random.default_rng(0).integers(0, 2, (30, 3))
    np.savetxt(data, X, fmt="%d", delimiter=",", header="a,b,c", comments="")
    before = data.read_text()
    model = tmp_path / "m.npz"
    assert run(capsys, "fit", data, "-o", model, "--method", "pl")[0] == 0
    check_error(capsys, ["score", model, data, "--per-row", data], "--per-row", "is the DATA file")
    check_error(capsys, ["sample", model, "-n", 3, "-o", model], "--out", "is the MODEL file")
    assert run(capsys, "fit", data, "-o", tmp_path / "other.npz", "--method", "pl")[0] == 0  # another file: fine
    assert data.read_text() == before


def test_options_that_conflict_or_do_not_apply_are_named(tmp_path, capsys):
    # #40: --graph and --set graph=... conflicted silently; --score-method bound, listed for every
    # method, was refused for exact by a message blamed on the data file.
    data = tmp_path / "d.csv"
    X = np.random.default_rng(0).integers(0, 2, (30, 3))
    np.savetxt(data, X, fmt="%d", delimiter=",", header="a,b,c", comments="")
    out = tmp_path / "m.npz"
    argv = ["fit", data, "-o", out, "--method", "pl", "--graph", "chain", "--set", "graph=complete"]
    check_error(capsys, argv, "--set 'graph=complete' and --graph 'chain' both give the graph")
    argv = ["fit", data, "-o", out, "--method", "exact", "--score-method", "bound"]
    check_error(capsys, argv, "--score-method bound does not apply to --method exact", "auto, exact, pseudo")


def test_fit_an_rna_alignment_with_its_alphabet(tmp_path, capsys):
    # #40: the command line had no alphabet option; `--n-states 5` then failed on "state 6". With
    # --alphabet rna the model has 5 states; without it, the reader's warning says what to give.
    fasta = tmp_path / "rna.fa"
    fasta.write_text(">a\nACGUUACG-U\n>b\nACGUAACG-U\n>c\nACGUAACGAU\n>d\nACGUAAUGAU\n")
    fit = ["fit", "--method", "pl", "--alignment", fasta]
    code, _, err = run(capsys, *fit, "--alphabet", "rna", "-o", tmp_path / "m.npz")
    assert code == 0, err
    from skmrf.io import load_model

    assert list(load_model(tmp_path / "m.npz").n_states_) == [5] * 10
    code, _, err = run(capsys, *fit, "-o", tmp_path / "p.npz")
    assert code == 0 and "alphabet='-ACGU'" in err
    check_error(capsys, [*fit, "--alphabet", "xyz", "-o", tmp_path / "x.npz"], "--alphabet")
