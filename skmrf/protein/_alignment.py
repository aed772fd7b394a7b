"""Multiple sequence alignments: FASTA / A2M / A3M into integer states, and sequence weights."""

from __future__ import annotations

import gzip
import math
import os
from typing import NamedTuple

import numpy as np

from .._utils._warnings import warn

__all__ = ["ALPHABET", "PYDCA_ALPHABET", "Alignment", "read_alignment", "sequence_weights"]

#: The package's 21-letter protein alphabet: state 0 is the gap, then the 20 amino acids in
#: the alphabetical order of their one-letter codes. It is plmc's alphabet (``codesAA`` in
#: plmc's ``plm.c``), so state ``k`` here is state ``k`` in plmc's parameters, and the gap is
#: the reference state of skmrf's parametrisation (normalised with respect to state 0).
ALPHABET = "-ACDEFGHIKLMNPQRSTVWY"
#: pydca's alphabet (``RES_TO_INT_ALL['PROTEIN']`` minus one, as its C++ back end codes it):
#: the 20 amino acids first, the gap last (state 20).
PYDCA_ALPHABET = "ACDEFGHIKLMNPQRSTVWY-"
#: RNA nucleotides, the gap first (state 0), as plmc's ``-a -ACGU``.
RNA_ALPHABET = "-ACGU"
#: DNA nucleotides, the gap first (state 0).
DNA_ALPHABET = "-ACGT"
#: A letter outside the alphabet that makes up more than this fraction of the residues is reported
#: (#40: an RNA family read with the protein alphabet turned every U, 29 % of its residues, into a
#: gap without a word; ``X``, a protein's unknown residue, is typically far below 1 %).
FOREIGN_LETTER_WARN = 0.01
#: Above this share of the residues, letters outside the alphabet are refused, not warned about:
#: the alignment is of another kind (a protein family read with ``"-ACGU"`` has about 75 %).
FOREIGN_LETTERS_REFUSE = 0.5

_GAP = "-"
#: Characters read as the gap besides ``-``: ``.`` (A2M's insert padding, read as a gap in a
#: plain FASTA match column) and ``~`` (used by some aligners for terminal gaps).
_GAP_LIKE = ".~"
_FORMATS = ("auto", "fasta", "a2m", "a3m")
_EXTENSIONS = {
    ".a2m": "a2m",
    ".a3m": "a3m",
    ".fasta": "fasta",
    ".fa": "fasta",
    ".fas": "fasta",
    ".faa": "fasta",
    ".afa": "fasta",
    ".aln": "fasta",
    ".mfa": "fasta",
}


class Alignment(NamedTuple):
    """What :func:`read_alignment` returns; unpacks as ``X, names, alphabet = ...``."""

    X: np.ndarray
    """ndarray of int64 of shape (n_sequences, n_columns): the state of every match column."""
    names: list
    """The sequence names (the header line after ``>``, up to the end of the line), in file order."""
    alphabet: str
    """The alphabet: state ``k`` is ``alphabet[k]``."""


def _check_alphabet(alphabet):
    if not isinstance(alphabet, str) or len(set(alphabet)) != len(alphabet) or alphabet.count(_GAP) != 1:
        raise ValueError(
            f"alphabet must be a string of distinct characters with exactly one gap '-'; got {alphabet!r}."
        )
    if any(c.islower() or c in _GAP_LIKE for c in alphabet):
        raise ValueError(f"alphabet must hold upper-case letters and '-' only; got {alphabet!r}.")
    return alphabet.index(_GAP)


def _open_text(path_or_file):
    """``(text, name)`` of a path (``.gz`` decompressed) or of an open text / binary file."""
    if isinstance(path_or_file, (str, os.PathLike)):
        name = os.fspath(path_or_file)
        opener = gzip.open if name.endswith(".gz") else open
        with opener(name, "rb") as fh:
            data = fh.read()
    else:
        name = getattr(path_or_file, "name", None)
        data = path_or_file.read()
    if isinstance(data, bytes):  # UTF-8 names are kept; a non-ASCII letter in a sequence is refused later
        data = data.decode("utf-8", errors="replace")
    return data, (name if isinstance(name, str) else None)


def _extension(name):
    """The file name's extension, lower case, without a ``.gz``."""
    stem = name[:-3] if name.endswith(".gz") else name
    return os.path.splitext(stem)[1].lower()


def _format_of(format, name, text):
    if format not in _FORMATS:
        raise ValueError(f"format must be one of {_FORMATS}; got {format!r}.")
    if format != "auto":
        return format
    if name is not None and _extension(name) in _EXTENSIONS:
        return _EXTENSIONS[_extension(name)]
    # No telling extension: an insert (lower case or '.') means A2M / A3M, else plain FASTA
    # (the two read the same when there is none).
    body = "".join(line for line in text.splitlines() if not line.startswith((">", "#", ";")))
    return "a2m" if any(c.islower() or c == "." for c in body) else "fasta"


def _records(text):
    """``(names, sequences)``: the FASTA records of ``text``, whitespace removed from sequences."""
    lines = text.splitlines()
    names, chunks = [], []
    for n, line in enumerate(lines):  # a loop over the file's lines: parsing, not numerics
        if line.startswith(">"):
            names.append(line[1:].strip())
            chunks.append([])
        elif line.startswith(("#", ";")) or not line.strip():
            continue  # A3M's '#' header, old FASTA ';' comments, blank lines
        elif not names:
            raise ValueError(f"Line {n + 1} holds sequence data before the first '>' header line: {line[:40]!r}.")
        else:
            chunks[-1].append("".join(line.split()))
    if not names:
        raise ValueError("The alignment holds no sequence (no line starting with '>').")
    return names, ["".join(c) for c in chunks]


def read_alignment(path_or_file, format="auto", alphabet=ALPHABET, nonstandard="gap"):
    """Read a multiple sequence alignment (FASTA, A2M or A3M) into integer states.

    Parameters
    ----------
    path_or_file : str, path-like or file object
        A file name (``.gz`` files are decompressed) or an open text or binary file.
    format : {"auto", "fasta", "a2m", "a3m"}, default="auto"
        ``"fasta"``: aligned FASTA, every character is a column (case is ignored; ``.``
        and ``~`` are gaps). ``"a2m"`` and ``"a3m"``: lower-case letters and ``.`` are
        insertions and are dropped; upper-case letters and ``-`` are the match columns
        (A2M pads insertions with ``.``, A3M does not; both read the same way).
        ``"auto"``: by the file extension (``.a2m``, ``.a3m``, ``.fasta``, ``.fa``,
        ``.fas``, ``.faa``, ``.afa``, ``.aln``, ``.mfa``, each optionally ``.gz``),
        otherwise ``"a2m"`` if the sequences hold a lower-case letter or a ``.`` and
        ``"fasta"`` if not.
    alphabet : str, default=ALPHABET
        State ``k`` is the letter ``alphabet[k]``; it must hold one gap ``-``.
        :data:`ALPHABET` (``"-ACDEFGHIKLMNPQRSTVWY"``, the gap is state 0) is plmc's;
        :data:`PYDCA_ALPHABET` (``"ACDEFGHIKLMNPQRSTVWY-"``, the gap is state 20) is
        pydca's; :data:`RNA_ALPHABET` (``"-ACGU"``) and :data:`DNA_ALPHABET` (``"-ACGT"``)
        read nucleotide alignments.
    nonstandard : {"gap", "drop"}, default="gap"
        What to do with a letter that is not in ``alphabet`` (``B``, ``Z``, ``X``,
        ``U``, ``O``, ``J`` for proteins): read it as the gap (pydca's choice), or
        drop every sequence holding one (plmc's choice).

    Returns
    -------
    Alignment
        A named tuple ``(X, names, alphabet)``: ``X``, an int64 array of shape
        ``(n_sequences, n_columns)`` of states, ``names``, the header of every kept
        sequence, and the alphabet.

    Raises
    ------
    ValueError
        If a sequence holds a character that is neither a letter nor a gap (``*``, a
        digit, ...), naming the sequence, the character and its position; if the
        sequences do not all have the same number of match columns, naming the first
        one that differs from the first sequence; if there is no sequence.

    Warns
    -----
    UserWarning
        When a letter outside ``alphabet`` makes up more than 1 % of the residues
        (``FOREIGN_LETTER_WARN``): the alignment is probably of another kind (an RNA family
        read with the protein alphabet has every ``U`` read as a gap); the warning names the
        letter and, for nucleotides, the alphabet to read it with.

    Notes
    -----
    To reproduce plmc's reading of an alignment: ``alphabet=ALPHABET``,
    ``nonstandard="drop"``, and, in plmc's focus mode (``-f NAME``), keep the columns
    where the focus sequence is not a gap, ``X[:, X[k] != 0]`` (plmc also drops the
    columns where the focus sequence is lower case; :func:`read_alignment` drops every
    insert column). To reproduce pydca's: ``alphabet=PYDCA_ALPHABET``, the default
    ``nonstandard="gap"``, and pydca's removal of duplicate sequences, keeping the first
    of each: ``X[np.sort(np.unique(X, axis=0, return_index=True)[1])]``.

    Examples
    --------
    >>> import io
    >>> from skmrf.protein import read_alignment
    >>> text = ">seq1\\nAC-Dx\\n>seq2\\nAcC-Da.\\n"
    >>> X, names, alphabet = read_alignment(io.StringIO(text), format="a2m")
    >>> X
    array([[1, 2, 0, 3],
           [1, 2, 0, 3]])
    >>> names
    ['seq1', 'seq2']
    """
    gap = _check_alphabet(alphabet)
    if nonstandard not in ("gap", "drop"):
        raise ValueError(f"nonstandard must be 'gap' or 'drop'; got {nonstandard!r}.")
    text, name = _open_text(path_or_file)
    fmt = _format_of(format, name, text)
    names, seqs = _records(text)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    raw = np.frombuffer("".join(seqs).encode("ascii", errors="replace"), dtype=np.uint8)

    codes = _letter_codes(alphabet, gap, fmt)[raw]
    bad = np.flatnonzero(codes == -3)
    if bad.size:
        s = int(np.searchsorted(starts, bad[0], side="right")) - 1
        raise ValueError(
            f"Sequence {s} ({names[s]!r}) holds the character {chr(raw[bad[0]])!r} at position {bad[0] - starts[s]}, "
            "which is neither a letter nor a gap ('-', '.', '~'). Remove it (a '*' stop codon, a digit) before reading."
        )
    keep = codes != -1
    n_match = np.zeros(len(seqs), dtype=np.int64)
    full = lengths > 0
    if full.any():
        n_match[full] = np.add.reduceat(keep.view(np.uint8), starts[full], dtype=np.int64)
    _check_aligned(n_match, names, fmt, guessed=format == "auto" and fmt == "a2m" and not _named_fasta(name))
    X = codes[keep].reshape(len(seqs), n_match[0]).astype(np.int64)
    outside = X == -2
    _check_foreign(raw[keep][outside.ravel()], int((X != gap).sum()), alphabet, nonstandard)
    if nonstandard == "drop":
        rows = ~outside.any(axis=1)
        if not rows.any():
            s, j = np.argwhere(outside)[0]
            letter = chr(raw[starts[s] + np.flatnonzero(keep[starts[s] : starts[s] + lengths[s]])[j]])
            raise ValueError(
                f"Every one of the {len(seqs)} sequences holds a letter outside the alphabet {alphabet!r} (sequence "
                f"0, {names[0]!r}, holds {letter!r}), so nonstandard='drop' leaves no sequence. Read with "
                "nonstandard='gap' (such letters become gaps), or with the alphabet the letters belong to."
            )
        X = X[rows]
        names = [nm for nm, r in zip(names, rows) if r]
    else:
        X[outside] = gap
    return Alignment(X, names, alphabet)


def _letter_codes(alphabet, gap, fmt):
    """One lookup table over the 256 byte values (int8: one byte per character of the file): the
    state of each letter, -1 for an insert (dropped), -2 for a letter outside the alphabet, -3 for
    anything else (an error)."""
    lut = np.full(256, -3, dtype=np.int8)
    for c in range(ord("A"), ord("Z") + 1):
        lut[c] = lut[c + 32] = -2
    for k, c in enumerate(alphabet):
        lut[ord(c)] = k
        if c.isalpha():
            lut[ord(c.lower())] = k
    for c in _GAP_LIKE:
        lut[ord(c)] = gap
    if fmt in ("a2m", "a3m"):
        lut[ord("a") : ord("z") + 1] = -1
        lut[ord(".")] = -1
    return lut


def _named_fasta(name):
    """Whether a file name carries a FASTA extension."""
    return name is not None and _extension(name) in _EXTENSIONS


def _check_aligned(n_match, names, fmt, guessed):
    """Refuse sequences of different numbers of match columns, or none (``guessed``: the format was
    taken for A2M from the file's content)."""
    differs = np.flatnonzero(n_match != n_match[0])
    if differs.size:
        s = differs[0]
        what = "match columns (upper case and '-')" if fmt != "fasta" else "columns"
        why = (
            " The file was read as A2M because its sequences hold '.' or lower-case letters and its name has no "
            "FASTA extension (format='auto'): A2M drops them as insertions."
            if guessed
            else ""
        )
        raise ValueError(
            f"Sequence {s} ({names[s]!r}) has {n_match[s]} {what}, the first sequence ({names[0]!r}) has "
            f"{n_match[0]}: the sequences are not aligned.{why}"
            + (
                " If '.' or lower-case letters are aligned columns (a '.' gap), read with format='fasta'."
                if fmt != "fasta"
                else ""
            )
        )
    if n_match[0] == 0:
        raise ValueError(
            "The sequences have no match column. If lower case letters are aligned columns, read with format='fasta'."
        )


def _check_foreign(letters, n_residues, alphabet, nonstandard):
    """Warn when a letter outside ``alphabet`` is frequent, refuse when such letters are most of
    the residues: the alignment is of another kind (nucleotides read as amino acids, DNA read as
    RNA, amino acids read as nucleotides), naming the letter and the alphabet to read it with."""
    if letters.size == 0 or n_residues == 0:
        return
    counts = np.bincount(np.char.upper(letters.view("S1")).view(np.uint8), minlength=256)
    top = int(np.argmax(counts))
    share = counts[top] / n_residues
    if share <= FOREIGN_LETTER_WARN:
        return
    letter = chr(top)
    seen = {chr(c) for c in np.flatnonzero(counts)}
    suggest = {"U": RNA_ALPHABET, "T": DNA_ALPHABET}.get(letter)
    if suggest is None and seen <= set("ACGTUN"):
        suggest = RNA_ALPHABET
    if suggest is None and alphabet != ALPHABET:
        suggest = ALPHABET  # amino acids read with a nucleotide alphabet
    kind = "a nucleotide" if suggest in (RNA_ALPHABET, DNA_ALPHABET) else "a protein"
    hint = f" Is this {kind} alignment? Read it with alphabet={suggest!r}." if suggest else ""
    total = letters.size / n_residues
    if total > FOREIGN_LETTERS_REFUSE:
        raise ValueError(
            f"{total:.0%} of the residues are letters outside the alphabet {alphabet!r} "
            f"({''.join(sorted(seen))}): the alignment is not of this kind.{hint}"
        )
    what = "a gap" if nonstandard == "gap" else "the reason to drop its sequence"
    warn(
        f"The letter {letter!r}, not in the alphabet {alphabet!r}, makes up {share:.1%} of the residues and is "
        f"read as {what}.{hint} Letters outside the alphabet here: {''.join(sorted(seen))}.",
        UserWarning,
    )


def _one_hot(X, n_states):
    """Dense float32 one-hot rows, shape ``(len(X), n_columns * n_states)``."""
    n, L = X.shape
    out = np.zeros((n, L * n_states), dtype=np.float32)
    out[np.arange(n)[:, None], np.arange(L) * n_states + X] = 1.0
    return out


def sequence_weights(X, identity=0.8, *, block_bytes=1 << 25):
    """Compute the DCA sequence weights: one over the number of sequences at least ``identity`` identical.

    Parameters
    ----------
    X : array-like of int of shape (n_sequences, n_columns)
        Aligned sequences as states (:func:`read_alignment`).
    identity : float in [0, 1], default=0.8
        Two sequences are neighbours when the fraction of their columns that hold the same
        state is at least ``identity``. Gaps are states like any other: two gaps in the same
        column count as identical, and the fraction is over all ``n_columns`` columns.
    block_bytes : int, default=2**25
        Bytes of each block of one-hot rows (float32), and of the product of two blocks:
        memory stays within a few times this whatever the number of sequences and columns.

    Returns
    -------
    ndarray of float64 of shape (n_sequences,)
        ``w_n = 1 / #{m : identical(n, m) >= identity * n_columns}``, ``n`` itself included,
        so every weight is in ``(0, 1]``. Their sum is the "effective number of sequences"
        ``M_eff``.

    Raises
    ------
    ValueError
        If ``X`` is not a 2-d array of non-negative integers, or ``identity`` is not in [0, 1].

    Notes
    -----
    This is plmc's convention exactly (``-t theta`` is ``1 - identity``: plmc counts
    ``id >= (1 - theta) * L`` identical positions, gaps included, and adds the sequence
    itself). pydca's plmDCA counts neighbours with a strictly larger fraction,
    ``id / L > seqid`` (in float32), after removing duplicate sequences: the weights differ
    only for pairs exactly at the threshold.

    Identity counts come from products of one-hot blocks (float32, exact below 2^24
    columns) in BLAS: ``O(n_sequences^2 * n_columns * n_states)`` operations, ``O(block)``
    memory, no Python loop over sequences.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.protein import sequence_weights
    >>> X = np.array([[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [7, 8, 9, 10, 11]])
    >>> sequence_weights(X, identity=0.8)
    array([0.5, 0.5, 1. ])
    """
    X = np.asarray(X)
    if X.ndim != 2 or X.dtype.kind not in "iu":
        raise ValueError(f"X must be a 2-d array of integer states; got shape {X.shape} and dtype {X.dtype}.")
    if X.size and X.min() < 0:
        raise ValueError(f"X holds the negative state {X.min()}; states are 0, 1, ...")
    if not 0.0 <= float(identity) <= 1.0:
        raise ValueError(f"identity must be in [0, 1]; got {identity!r}.")
    n, L = X.shape
    if n == 0:
        return np.zeros(0)
    n_states = int(X.max()) + 1
    threshold = float(identity) * L  # compared as plmc does: id >= (1 - theta) * L in float64
    # Rows per block: one-hot blocks of at most block_bytes, and so is their float32 product, block x
    # block (#40: short RNA rows made the block every one of 12,594 sequences, and the product 634 MB).
    block = max(1, min(int(block_bytes // (4 * max(1, L * n_states))), math.isqrt(max(1, block_bytes // 4))))
    counts = np.zeros(n, dtype=np.int64)
    for start in range(0, n, block):  # blocks of rows, not rows
        A = _one_hot(X[start : start + block], n_states)
        for other in range(start, n, block):
            B = A if other == start else _one_hot(X[other : other + block], n_states)
            near = (A @ B.T) >= threshold
            counts[start : start + len(A)] += near.sum(axis=1)
            if other != start:
                counts[other : other + len(B)] += near.sum(axis=0)
    return 1.0 / counts
