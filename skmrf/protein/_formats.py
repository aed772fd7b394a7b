"""Coupling-score files the DCA tools exchange: plmc's ranked pair list and CCMpred's matrix."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from ._scores import CouplingScores

__all__ = [
    "PlmcCouplings",
    "read_ccmpred_matrix",
    "read_plmc_couplings",
    "write_ccmpred_matrix",
    "write_plmc_couplings",
]


class PlmcCouplings(NamedTuple):
    """What :func:`read_plmc_couplings` returns."""

    matrix: np.ndarray
    """ndarray of shape (L, L): symmetric scores, ``matrix[a, b]`` for ``positions[a]``, ``positions[b]``;
    zero on the diagonal and for pairs the file does not list."""
    positions: np.ndarray
    """ndarray of int64 of shape (L,): the position numbers the file uses (plmc counts from 1; in focus
    mode they are the focus sequence's numbering), sorted."""
    sequence: str
    """The letter of every position (``-`` where the file gives none)."""


@contextmanager
def _text(path_or_file, mode):
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, mode) as fh:
            yield fh
    else:
        yield path_or_file


def _matrix_of(scores):
    S = scores.matrix if isinstance(scores, CouplingScores) else np.asarray(scores, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"scores must be a CouplingScores or a square matrix; got shape {S.shape}.")
    if not np.all(np.isfinite(S)):
        raise ValueError("The scores hold NaN or inf.")
    return S


def write_plmc_couplings(path_or_file, scores, sequence=None, positions=None, ranked=False):
    """Write pair scores as plmc's coupling-scores file (``plmc -c``).

    One line per pair ``i < j``: ``i a_i j a_j 0 score``, positions counted from 1, the
    letters of the positions (``-`` without a sequence), and the score with six decimals
    (plmc's ``"%d %c %d %c 0 %f"``).

    Parameters
    ----------
    path_or_file : str, path-like or text file
        Where to write.
    scores : CouplingScores or array-like of shape (L, L)
        What :func:`coupling_scores` returns, or a symmetric matrix.
    sequence : str of length L, optional
        The letters of the columns (a focus sequence, plmc's ``-f``); ``-`` if omitted.
    positions : array-like of int of shape (L,), optional
        The number of every column; ``1..L`` if omitted (plmc's numbering without focus).
    ranked : bool, default=False
        ``False``: pairs in plmc's order (``i`` then ``j`` increasing), so the file diffs
        against plmc's. ``True``: highest score first (ties by position), the ranked list.

    Raises
    ------
    ValueError
        If ``scores`` is not square or not finite, or ``sequence`` / ``positions`` do not
        have one entry per column.

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from skmrf.protein import write_plmc_couplings
    >>> out = io.StringIO()
    >>> write_plmc_couplings(out, np.array([[0, 0.5, 0.1], [0.5, 0, 0.2], [0.1, 0.2, 0]]), sequence="MKV")
    >>> print(out.getvalue(), end="")
    1 M 2 K 0 0.500000
    1 M 3 V 0 0.100000
    2 K 3 V 0 0.200000
    """
    S = _matrix_of(scores)
    L = S.shape[0]
    if sequence is None:
        sequence = "-" * L
    if len(sequence) != L:
        raise ValueError(f"sequence has {len(sequence)} letters for {L} columns.")
    positions = np.arange(1, L + 1) if positions is None else np.asarray(positions, dtype=np.int64)
    if positions.shape != (L,):
        raise ValueError(f"positions has shape {positions.shape} for {L} columns.")
    i, j = np.triu_indices(L, k=1)
    if ranked:
        order = np.lexsort((j, i, -S[i, j]))
        i, j = i[order], j[order]
    letters = np.array(list(sequence))
    lines = [
        f"{pi} {ai} {pj} {aj} 0 {s:f}\n"
        for pi, ai, pj, aj, s in zip(positions[i].tolist(), letters[i], positions[j].tolist(), letters[j], S[i, j])
    ]
    with _text(path_or_file, "w") as fh:
        fh.writelines(lines)


def read_plmc_couplings(path_or_file):
    """Read plmc's coupling-scores file (``plmc -c``) into a matrix.

    Parameters
    ----------
    path_or_file : str, path-like or text file
        Lines ``i a_i j a_j 0 score``, as :func:`write_plmc_couplings` and plmc write them.

    Returns
    -------
    PlmcCouplings
        A named tuple ``(matrix, positions, sequence)``.

    Raises
    ------
    ValueError
        If a line does not have six fields, pairs a position with itself, or scores a pair that
        another line scores differently, naming the lines.

    Examples
    --------
    >>> import io
    >>> from skmrf.protein import read_plmc_couplings
    >>> r = read_plmc_couplings(io.StringIO("1 M 2 K 0 0.5\\n1 M 3 V 0 0.1\\n2 K 3 V 0 0.2\\n"))
    >>> float(r.matrix[0, 1]), r.positions, r.sequence
    (0.5, array([1, 2, 3]), 'MKV')
    """
    with _text(path_or_file, "r") as fh:
        rows = [line.split() for line in fh if line.strip()]
    for n, fields in enumerate(rows):
        if len(fields) != 6:
            raise ValueError(f"Line {n + 1} has {len(fields)} fields, plmc writes 6 (i a_i j a_j 0 score): {fields}.")
    if not rows:
        raise ValueError("The file lists no pair.")
    cols = list(zip(*rows))
    pi, pj = np.array(cols[0], dtype=np.int64), np.array(cols[2], dtype=np.int64)
    score = np.array(cols[5], dtype=np.float64)
    infinite = np.flatnonzero(~np.isfinite(score))
    if infinite.size:
        n = int(infinite[0])
        raise ValueError(f"Line {n + 1} scores the pair ({pi[n]}, {pj[n]}) with {cols[5][n]!r}, not a finite number.")
    self_pair = np.flatnonzero(pi == pj)
    if self_pair.size:
        n = int(self_pair[0])
        raise ValueError(
            f"Line {n + 1} pairs position {pi[n]} with itself: a coupling-scores file lists pairs of two "
            "positions (its matrix has a zero diagonal)."
        )
    positions = np.unique(np.concatenate([pi, pj]))
    a, b = np.searchsorted(positions, pi), np.searchsorted(positions, pj)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pair = lo * len(positions) + hi
    order = np.argsort(pair, kind="stable")
    same = np.flatnonzero(pair[order][1:] == pair[order][:-1])
    clash = same[score[order][same + 1] != score[order][same]]
    if clash.size:
        first, second = int(order[clash[0]]), int(order[clash[0] + 1])
        raise ValueError(
            f"Lines {first + 1} and {second + 1} both score the pair ({pi[first]}, {pj[first]}), with "
            f"{score[first]:g} and {score[second]:g}: a coupling-scores file lists each pair once."
        )
    S = np.zeros((len(positions), len(positions)))
    S[a, b] = S[b, a] = score
    letters = np.full(len(positions), "-")
    letters[a], letters[b] = cols[1], cols[3]
    return PlmcCouplings(S, positions, "".join(letters))


def write_ccmpred_matrix(path_or_file, scores):
    """Write pair scores as CCMpred's L x L matrix text file.

    Every row on one line, each value as ``"%.20e"`` followed by a tab (CCMpred's
    ``write_matrix``), so tools that read CCMpred's output (``numpy.loadtxt``, ConKit's
    ``ccmpred`` parser) read it.

    Parameters
    ----------
    path_or_file : str, path-like or text file
        Where to write.
    scores : CouplingScores or array-like of shape (L, L)
        What :func:`coupling_scores` returns, or a square matrix.

    Raises
    ------
    ValueError
        If ``scores`` is not square or not finite.
    """
    S = _matrix_of(scores)
    with _text(path_or_file, "w") as fh:
        fh.writelines("".join(f"{v:.20e}\t" for v in row) + "\n" for row in S.tolist())


def read_ccmpred_matrix(path_or_file):
    """Read CCMpred's L x L matrix text file.

    Parameters
    ----------
    path_or_file : str, path-like or text file
        A file of ``L`` lines of ``L`` numbers each (tabs or spaces).

    Returns
    -------
    ndarray of shape (L, L)
        The matrix, as written.

    Raises
    ------
    ValueError
        If the matrix is not square, or holds a value that is not a finite number.
    """
    with _text(path_or_file, "r") as fh:
        S = np.loadtxt(fh, ndmin=2)
    if S.shape[0] != S.shape[1]:
        raise ValueError(f"The matrix is {S.shape[0]} x {S.shape[1]}, not square.")
    infinite = np.argwhere(~np.isfinite(S))
    if len(infinite):
        r, c = (int(v) for v in infinite[0])
        raise ValueError(f"Row {r + 1}, column {c + 1} of the matrix is {S[r, c]}, not a finite number.")
    return S
