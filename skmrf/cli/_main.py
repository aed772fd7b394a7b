"""The argument parser and the entry point, which turns every error into one line and an exit code."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings

from .. import __version__
from .._utils._progress import shown
from ._commands import cmd_fit, cmd_info, cmd_sample, cmd_score
from ._common import DEBUG_ENV, CLIError, one_line, warn
from ._params import ALIASES, METHODS, SEED, integer, number_or_auto


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (raised, so ``main`` prints them)."""

    def error(self, message):
        command = self.prog.removeprefix("skmrf").strip()
        raise CLIError(f"{command + ': ' if command else ''}{message} (see '{self.prog} --help')")


# -- parser and entry point -----------------------------------------------------------
def build_parser():
    """The ``skmrf`` argument parser (its help lists every command).

    Returns
    -------
    argparse.ArgumentParser
        With one sub-parser per command; ``args.run(args)`` runs the parsed one.
    """
    parser = _Parser(
        prog="skmrf",
        description="Learn Markov random field parameters from data files, score, sample and inspect saved models.",
        epilog=(
            "Run 'skmrf COMMAND --help' for the options of a command. An error is one line on stderr: exit code 2 "
            "for a problem with the input (arguments, files, data, a full disk), 1 for an internal error (a bug "
            f"in skmrf: --debug or {DEBUG_ENV}=1 shows its traceback), 130 when interrupted."
        ),
    )
    parser.add_argument("--version", action="version", version=f"skmrf {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help=f"show the traceback of an error (as does {DEBUG_ENV}=1); before COMMAND"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in (_add_fit, _add_score, _add_sample, _add_info):
        add(sub)
    return parser


def _command(sub, name, run, summary, description, verbose=True):
    """The sub-parser of one command (with ``-v`` unless ``verbose`` is False)."""
    p = sub.add_parser(name, help=summary, description=description)
    p.set_defaults(run=run, verbose=0, quiet=False)
    if verbose:
        p.add_argument(
            "-v", "--verbose", action="count", default=0, help="progress on stderr; -vv adds the estimator's lines"
        )
        p.add_argument(
            "-q", "--quiet", action="store_true", help="no progress bars (shown by default when stderr is a terminal)"
        )
    return p


def _add_fit(sub):
    fit = _command(
        sub,
        "fit",
        cmd_fit,
        "fit a model to a data file and save it (.npz)",
        "Fit an MRF to DATA (.npy, .csv with a header, .tsv, .parquet) and save it to --out.",
    )
    fit.add_argument("data", metavar="DATA", nargs="?", help="the training data, one row per sample")
    _add_no_header(fit)
    fit.add_argument("--out", "-o", required=True, metavar="MODEL.npz", help="the model file to write")
    _add_alignment(fit)
    fit.add_argument(
        "--method",
        "-m",
        default="lap",
        choices=[*METHODS, *ALIASES],
        help="the estimator: "
        + ", ".join(f"{k} ({v})" for k, v in METHODS.items())
        + "".join(f"; {a} is {m}" for a, m in ALIASES.items())
        + "; default lap",
    )
    fit.add_argument(
        "--graph",
        "-g",
        help=(
            "'chain' (default; 'complete' with --alignment), 'complete', 'grid:RxC', or a file of edges (one per "
            "line, column names or indices; numbers are names when some column names are numbers)"
        ),
    )
    fit.add_argument("--alpha", type=number_or_auto, help="ridge penalty alpha/2 ||theta||^2, or 'auto'")
    fit.add_argument("--n-states", type=number_or_auto, help="states per variable, or 'auto' (max + 1)")
    fit.add_argument("--max-iter", type=int, help="iteration limit of the solver")
    fit.add_argument("--tol", type=float, help="convergence tolerance of the solver")
    fit.add_argument(
        "--score-method", choices=["auto", "exact", "pseudo", "ais", "bound"], help="how score computes log Z"
    )
    fit.add_argument("--shrinkage", type=float, help="Gaussian methods: covariance shrinkage in [0, 1)")
    fit.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help=(
            'any other estimator parameter (VALUE read as JSON, else as text); repeatable. graph=[["a", "b"], ...] '
            "names columns as a graph file does; NAME__PARAM=VALUE sets a parameter of a parameter object, such "
            "as schedule__n_chains=2000 (--method mcmc)"
        ),
    )
    fit.add_argument("--n-jobs", "-j", type=int, help="parallel workers (-1: all CPUs)")
    fit.add_argument("--random-state", type=SEED, help="seed for the randomised methods (0 to 2**32 - 1)")


def _add_alignment(fit):
    fit.add_argument(
        "--alignment",
        metavar="FAMILY.a2m",
        help=(
            "fit a protein family instead of DATA: a multiple sequence alignment (FASTA, A2M, A3M; lower-case "
            "insertions dropped) read as 21 states (gap + 20 amino acids; see --alphabet), on the complete graph "
            "unless --graph is given; writes the ranked couplings too (see --couplings)"
        ),
    )
    fit.add_argument(
        "--alphabet",
        default=None,
        metavar="ALPHABET",
        help=(
            "with --alignment: 'protein' (default, -ACDEFGHIKLMNPQRSTVWY), 'rna' (-ACGU), 'dna' (-ACGT), or the "
            "letters themselves, one of them the gap '-'; letters outside it are read as gaps, with a warning "
            "when one is frequent"
        ),
    )
    fit.add_argument(
        "--weights",
        type=float,
        metavar="IDENTITY",
        help=(
            "with --alignment: weight each sequence by 1 / (the sequences at least IDENTITY identical to it), the "
            "DCA reweighting (0.8 is usual); default: every sequence counts once"
        ),
    )
    fit.add_argument(
        "--couplings",
        metavar="FILE",
        help=(
            "with --alignment: where to write the ranked coupling scores (zero-sum gauge, APC; plmc's format, "
            "highest first); default MODEL_couplings.txt beside --out"
        ),
    )


def _add_score(sub):
    score = _command(
        sub,
        "score",
        cmd_score,
        "print the mean log-likelihood of a data file under a model",
        "Print the mean log-likelihood per row of DATA under MODEL (as estimator.score).",
    )
    score.add_argument("model", metavar="MODEL.npz")
    score.add_argument("data", metavar="DATA")
    _add_no_header(score)
    score.add_argument("--per-row", metavar="FILE", help="also write each row's log-likelihood (.npy, .csv)")


def _add_sample(sub):
    sample = _command(
        sub,
        "sample",
        cmd_sample,
        "draw samples from a discrete model into a data file",
        "Draw samples from the discrete MODEL and write them to --out (.npy, .csv, .tsv, .parquet), "
        "or as CSV to standard output.",
    )
    sample.add_argument("model", metavar="MODEL.npz")
    sample.add_argument(
        "--out", "-o", default="-", metavar="FILE", help="where to write (default '-': CSV on standard output)"
    )
    sample.add_argument(
        "--n-samples",
        "-n",
        type=integer(0),
        default=100,
        help="number of samples (default 100; 0 writes an empty file)",
    )
    sample.add_argument("--method", choices=["auto", "exact", "gibbs"], default="auto", help="sampler (default auto)")
    sample.add_argument("--n-sweeps", type=integer(1), default=200, help="Gibbs sweeps per chain (default 200)")
    sample.add_argument("--random-state", type=SEED, help="seed of the draws (0 to 2**32 - 1)")


def _add_info(sub):
    info = _command(
        sub,
        "info",
        cmd_info,
        "describe a saved model",
        "Print a saved model's class, parameters, variables, cliques and format version.",
        verbose=False,
    )
    info.add_argument("model", metavar="MODEL.npz")


def _add_no_header(parser):
    parser.add_argument(
        "--no-header",
        action="store_true",
        help=(
            "the .csv/.tsv file has no header row: every line is data and the columns are numbered 0..n-1 "
            "(a graph file names them by number). Without it the first line must name the columns; a first line "
            "of numbers (other than 0,1,...,n-1 in order) is refused as data. Every line needs one field per "
            "column; a missing value (--method em) is an empty field or NA, as in 1,,0"
        ),
    )


def _show_warning(message, category, filename, lineno, file=None, line=None):
    warn(message)


def _debug_from_env():
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def _error_line(exc):
    """``(exit code, one line)`` for an exception that reached :func:`main`."""
    if isinstance(exc, CLIError):
        return 2, f"skmrf: error: {one_line(exc)}"
    if isinstance(exc, OSError):  # a file that cannot be read or written, a full disk
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return 2, f"skmrf: error: {one_line(where + (exc.strerror or str(exc)))}"
    if isinstance(exc, Warning):  # raised because the warnings filter says "error" (python -W error)
        return 2, f"skmrf: error: {one_line(exc)} ({type(exc).__name__}, an error by the warnings filter)"
    if isinstance(exc, MemoryError):
        return 2, (
            f"skmrf: error: out of memory ({one_line(exc) or 'MemoryError'}); use fewer rows or variables, "
            "a sparser graph or a method that needs less memory."
        )
    return 1, (
        f"skmrf: internal error: {type(exc).__name__}: {one_line(exc)} -- this is a bug in skmrf {__version__}; "
        f"please report it with the command you ran ('skmrf --debug ...' or {DEBUG_ENV}=1 shows the traceback)."
    )


def _progress_bars(args):
    """The fits' progress bars, shown by default when stderr is a terminal (#27 item 4): not with
    ``--quiet``, nor with ``-v`` (its own counter, and the estimator's lines at ``-vv``)."""
    if args.verbose or args.quiet or not getattr(sys.stderr, "isatty", lambda: False)():
        return contextlib.nullcontext()
    return shown()


def _silence_stdout():
    """Point standard output at the null device, so that the interpreter's last flush of a
    closed pipe raises nothing (Python's documented recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (captured by a test)
        pass


def main(argv=None):
    """Run the ``skmrf`` command line.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; ``sys.argv[1:]`` if omitted.

    Returns
    -------
    int
        The exit code: 0 on success; 2 for an error in the input (arguments, data or
        model files, data the estimator refuses, a file that cannot be written, no memory
        left), printed as one line ``skmrf: error: ...`` on stderr; 1 for an internal
        error (any other exception: a bug), printed as one line ``skmrf: internal error:
        ...`` asking for a report; 130 when interrupted (Ctrl-C). A reader that closes
        standard output early (``skmrf sample MODEL | head``) ends the command quietly with 0.

    Notes
    -----
    With ``--debug`` (before the command) or the environment variable ``SKMRF_DEBUG=1``
    the exception is raised instead, so Python prints its traceback.
    """
    debug = _debug_from_env()
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            args = build_parser().parse_args(argv)
            debug = debug or args.debug
            with _progress_bars(args):
                return args.run(args)
        except SystemExit as exc:  # --help, --version
            return exc.code if isinstance(exc.code, int) else 0
        except KeyboardInterrupt:
            print("skmrf: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:  # the reader stopped reading (skmrf sample ... | head): not an error
            _silence_stdout()
            return 0
        except Exception as exc:
            if debug:
                raise
            code, line = _error_line(exc)
            print(line, file=sys.stderr)
            return code
