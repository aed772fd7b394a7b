"""The commands ``fit``, ``score``, ``sample`` and ``info``, and the progress line they write."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

import numpy as np

from ..io import load_model, read_header, save_model
from ..protein import (
    ALPHABET,
    DNA_ALPHABET,
    RNA_ALPHABET,
    coupling_scores,
    read_alignment,
    sequence_weights,
    write_plmc_couplings,
)
from ..protein._alignment import _check_alphabet as check_alphabet
from ._common import CLIError, short
from ._graph import read_graph
from ._params import ALIASES, METHODS, build_estimator, fit_input, score_input
from ._tables import Table, check_exists, check_output, read_table, write_table


# -- progress ----------------------------------------------------------------------
class _Progress:
    """``skmrf: <label> ...`` and ``done in <seconds>`` on stderr around a step (when ``-v`` is given).

    The live progress is the estimator's own bar (:class:`skmrf._utils._progress.Progress`, shown on
    a terminal by default), the package's one progress mechanism; ``-vv`` adds its verbose lines.
    """

    def __init__(self, label, verbose, stream=None):
        self.label, self.verbose = label, verbose
        self.stream = stream if stream is not None else sys.stderr

    def __enter__(self):
        self.start = time.perf_counter()
        if self.verbose:
            self.stream.write(f"skmrf: {self.label} ...\n")
            self.stream.flush()
        return self

    def __exit__(self, *exc):
        if self.verbose and exc[0] is None:
            self.stream.write(f"skmrf: {self.label}: done in {time.perf_counter() - self.start:.2f} s\n")
        self.stream.flush()
        return False


# -- commands ----------------------------------------------------------------------
@contextlib.contextmanager
def _user_errors(prefix):
    """A ``ValueError`` (bad data or parameters, a damaged model file) as a CLIError starting with ``prefix``.

    skmrf's estimators and :mod:`skmrf.io` refuse bad input with a ``ValueError`` subclass
    that names the culprit; any other exception is an internal error (see :func:`main`).
    """
    try:
        yield
    except ValueError as exc:
        message = str(exc)
        raise CLIError(message if message.startswith(prefix) else f"{prefix}: {message}") from exc


def _load(path):
    check_exists(path, "model file")
    with _user_errors(path):
        return load_model(path)


def _inputs(args):
    """The files a command reads, as ``(path, option)`` pairs, for :func:`check_output`."""
    named = (("data", "DATA"), ("alignment", "--alignment"), ("model", "MODEL"), ("graph", "--graph"))
    return [(getattr(args, key, None), option) for key, option in named]


def cmd_fit(args):
    check_output(args.out, "--out", (".npz",), inputs=_inputs(args))
    if args.alignment is not None:
        return _fit_alignment(args)
    if args.data is None:
        raise CLIError("fit needs a data file (DATA) or a protein alignment (--alignment FILE).")
    for option in ("weights", "couplings", "alphabet"):
        if getattr(args, option) is not None:
            extra = "; for a data file, weight rows in Python" if option == "weights" else ""
            raise CLIError(f"--{option} applies to --alignment only{extra}.")
    table = read_table(args.data, header=not args.no_header)
    X = fit_input(table)
    by_name = X is not table.values
    est = build_estimator(args, read_graph(args.graph or "chain", table, by_name), table, by_name)
    rows, cols = table.values.shape
    _fit_and_save(est, args, X, None, f"fitting {type(est).__name__} on {args.data} ({rows} rows, {cols} columns)")
    return 0


def _fit_alignment(args):
    """``fit --alignment``: a Potts model of a protein family, and its ranked coupling scores."""
    if args.data is not None:
        raise CLIError(f"give a data file ({args.data}) or --alignment, not both.")
    if METHODS[ALIASES.get(args.method, args.method)].startswith("Gaussian"):
        raise CLIError(
            f"--alignment fits a Potts model of states (--method pl, pseudo, lap, exact, mcmc, em); --method "
            f"{args.method} is a Gaussian model of real values."
        )
    check_exists(args.alignment, "alignment file")
    couplings = args.couplings or os.path.splitext(args.out)[0] + "_couplings.txt"
    check_output(couplings, "--couplings", (".txt", ".csv", ".tsv", ""), inputs=_inputs(args) + [(args.out, "--out")])
    alphabet = {None: ALPHABET, "protein": ALPHABET, "rna": RNA_ALPHABET, "dna": DNA_ALPHABET}.get(
        args.alphabet, args.alphabet
    )
    with _user_errors("--alphabet"):
        check_alphabet(alphabet)
    with _user_errors(args.alignment):
        X = read_alignment(args.alignment, alphabet=alphabet).X
    weight = None
    if args.weights is not None:
        with _user_errors("--weights"):
            weight = sequence_weights(X, identity=args.weights)
    if args.n_states is None:
        args.n_states = len(alphabet)
    _dca_defaults(args, X, weight)
    table = Table(X, None, args.alignment)
    est = build_estimator(args, read_graph(args.graph or "complete", table, False), table, False)
    n, length = X.shape
    effective = f", {weight.sum():.1f} effective" if weight is not None else ""
    label = f"fitting {type(est).__name__} on {args.alignment} ({n} sequences{effective}, {length} columns)"
    _fit_and_save(est, args, X, weight, label)
    with _user_errors(couplings):
        write_plmc_couplings(couplings, coupling_scores(est, alignment=X), ranked=True)
    if args.verbose:
        print(f"skmrf: wrote the ranked coupling scores to {couplings}", file=sys.stderr)
    return 0


#: plmc's default penalties (its -le and -lh), scaled as the protein guide derives: skmrf's mean
#: objective with alpha = 2 lambda / M_eff, and lambda_J = 0.01 (q - 1)(L - 1).
DCA_LAMBDA_H, DCA_LAMBDA_J_PER_QL = 0.01, 0.01


def _dca_defaults(args, X, weight):
    """Pseudo-likelihood on an alignment: the direct-coupling defaults unless given (#40).

    The objective is plmc's (``ridge="tables"``, one ``alpha`` per clique order: top-L/2 overlap
    with plmc 0.92 to 1.00, against 0.67 with the estimator's own default), and the score is the
    pseudo-likelihood: an AIS estimate of ``log Z`` of a 21-state complete graph took 163 of 204
    CPU seconds of the README's command and is not what the scores need.
    """
    if ALIASES.get(args.method, args.method) != "pseudo":
        return
    given = {item.partition("=")[0] for item in args.set or []}
    notes = []
    if args.alpha is None and not {"alpha", "ridge"} & given:
        length = X.shape[1]
        m_eff = float(len(X) if weight is None else weight.sum())
        alpha = {1: 2 * DCA_LAMBDA_H / m_eff, 2: 2 * DCA_LAMBDA_J_PER_QL * (args.n_states - 1) * (length - 1) / m_eff}
        args.set = [*(args.set or []), f"alpha={json.dumps(alpha)}", "ridge=tables"]
        notes.append(f"alpha={{1: {alpha[1]:.3g}, 2: {alpha[2]:.3g}}} on the tables (plmc's objective)")
    if args.score_method is None and "score_method" not in given:
        args.score_method = "pseudo"
        notes.append("score_method='pseudo'")
    if notes and args.verbose:
        print(f"skmrf: direct-coupling defaults for --alignment: {', '.join(notes)}", file=sys.stderr)


def _fit_and_save(est, args, X, weight, label):
    source = args.alignment or args.data
    with _Progress(label, args.verbose), contextlib.redirect_stdout(sys.stderr), _user_errors(source):
        est.fit(X) if weight is None else est.fit(X, sample_weight=weight)
    try:
        with _user_errors(args.out):
            save_model(est, args.out)  # atomic: written beside args.out, then renamed
    except OSError as exc:
        raise CLIError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
    if args.verbose:
        print(f"skmrf: saved {type(est).__name__} to {args.out}", file=sys.stderr)


def cmd_score(args):
    est = _load(args.model)
    if args.per_row:
        check_output(args.per_row, "--per-row", inputs=_inputs(args))
    table = read_table(args.data, header=not args.no_header)
    X = score_input(est, table, args.model)
    with _Progress(f"scoring {args.data}", args.verbose), contextlib.redirect_stdout(sys.stderr):
        with _user_errors(args.data):
            values = est.score_samples(X)
    if args.per_row:
        write_table(args.per_row, values, ["log_likelihood"])
    print(repr(float(np.mean(values))))
    return 0


def cmd_sample(args):
    """Draw ``-n`` samples; ``-n 0`` writes an empty sample (a header alone), as ``sample(0)`` returns one."""
    est = _load(args.model)
    if not hasattr(est, "sample"):
        raise CLIError(f"{args.model} holds a {type(est).__name__}, which cannot sample; sample needs a discrete one.")
    check_output(args.out, "--out", inputs=_inputs(args))
    with _Progress(f"drawing {args.n_samples} samples", args.verbose), contextlib.redirect_stdout(sys.stderr):
        with _user_errors(args.model):
            X = est.sample(args.n_samples, random_state=args.random_state, method=args.method, n_sweeps=args.n_sweeps)
    names = getattr(est, "feature_names_in_", None)
    write_table(args.out, X, None if names is None else [str(c) for c in names])
    return 0


def _summary(values):
    values = np.asarray(values, dtype=float)
    if not values.size:
        return "none"
    return f"{values.size} values, min {values.min():.6g}, max {values.max():.6g}, mean |.| {np.abs(values).mean():.6g}"


def describe(path):
    """The lines ``skmrf info`` prints for a saved model.

    Parameters
    ----------
    path : str
        A file written by :func:`skmrf.io.save_model`.

    Returns
    -------
    list of str
        Format version, estimator, parameters, variables, structure and fitted numbers.
    """
    header = read_header(path)
    est = load_model(path)
    n = header["n_features"]
    names = header.get("feature_names")
    lines = [
        f"file: {path} ({header['format']} format version {header['format_version']}, "
        f"written by skmrf {header.get('skmrf_version')})",
        f"estimator: {header['estimator']} ({header['kind']})",
        "parameters: " + ", ".join(f"{k}={short(v)}" for k, v in sorted(header["params"].items())),
        f"variables: {n}"
        + (f" (columns {', '.join(names[:10])}{', ...' if n > 10 else ''})" if names else " (unnamed columns)"),
    ]
    if header["kind"] == "discrete":
        model = est.model_
        k = model.n_states
        sizes = np.bincount([len(c) for c in model.cliques])
        lines += [
            f"states: {k.min()}" + ("" if k.min() == k.max() else f" to {k.max()}") + " per variable",
            "cliques: " + ", ".join(f"{c} of size {s}" for s, c in enumerate(sizes) if c),
            f"theta: {_summary(model.theta)}",
            f"score_method_: {getattr(est, 'score_method_', None)}, log_partition_: {est.log_partition_!r}",
        ]
    else:
        P = est.standardized_precision_
        lines += [
            f"precision: {n} x {n}, {P.nnz} non-zeros ({(P.nnz - n) // 2} edges), "
            f"positive definite: {'yes' if est.is_positive_definite_ else 'no'}",
            f"log_partition_: {float(est.log_partition_)!r}",
        ]
    fitted = {k: v for k, v in header.get("fitted", {}).items() if k != "score_method_"}
    if fitted:
        lines.append("fitted: " + ", ".join(f"{k}={short(v)}" for k, v in sorted(fitted.items())))
    return lines


def cmd_info(args):
    check_exists(args.model, "model file")
    with _user_errors(args.model):
        lines = describe(args.model)
    print("\n".join(lines))
    return 0
