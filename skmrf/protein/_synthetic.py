"""Synthetic alignments: a Potts model with known contacts, sampled by Gibbs, and the bundled one."""

from __future__ import annotations

from importlib import resources
from typing import NamedTuple

import numpy as np

from .._utils.validation import check_generator
from ..model import DiscreteMRF
from ._alignment import ALPHABET, read_alignment

__all__ = [
    "SyntheticAlignment",
    "load_synthetic_alignment",
    "make_contact_potts",
    "make_synthetic_alignment",
    "write_fasta",
]

#: The call that drew the bundled alignment (``skmrf/protein/data/synthetic_potts.fasta.gz``):
#: ``make_synthetic_alignment(**BUNDLED)``.
BUNDLED = {
    "n_sequences": 500,
    "n_columns": 20,
    "n_contacts": 16,
    "coupling_scale": 0.6,
    "field_scale": 1.0,
    "min_separation": 5,
    "n_sweeps": 1000,
    "random_state": 26,
}
_DATA = "data"
_FASTA = "synthetic_potts.fasta.gz"
_CONTACTS = "synthetic_potts_contacts.txt"


class SyntheticAlignment(NamedTuple):
    """What :func:`make_synthetic_alignment` and :func:`load_synthetic_alignment` return."""

    X: np.ndarray
    """ndarray of int64 of shape (n_sequences, n_columns): states in :data:`ALPHABET` (0 is the gap)."""
    contacts: np.ndarray
    """ndarray of int64 of shape (n_edges, 2): every edge ``(i, j)``, ``i < j``, of the true model, sorted."""
    model: DiscreteMRF
    """The Potts model the sequences were drawn from."""


def make_contact_potts(
    n_columns, n_states=21, n_contacts=None, coupling_scale=0.6, field_scale=1.0, min_separation=5, random_state=None
):
    """Draw a Potts model on a protein-like contact graph, with random parameters.

    The graph has the backbone ``(i, i + 1)`` and ``n_contacts`` distinct pairs drawn
    uniformly among those with ``j - i >= min_separation`` (the long-range contacts
    that contact prediction is scored on). Every parameter of skmrf's parametrisation
    (normalised with respect to state 0, the gap) is drawn from a normal distribution:
    fields with standard deviation ``field_scale``, couplings with ``coupling_scale``.

    Parameters
    ----------
    n_columns : int
        Number of columns (variables), at least ``min_separation + 1``.
    n_states : int, default=21
        States per column (21: the gap and the 20 amino acids of :data:`ALPHABET`).
    n_contacts : int, optional
        Long-range contacts; ``n_columns`` if omitted.
    coupling_scale : float, default=0.6
        Standard deviation of the coupling parameters.
    field_scale : float, default=1.0
        Standard deviation of the field parameters.
    min_separation : int, default=5
        Smallest ``j - i`` of a long-range contact.
    random_state : int, RandomState, Generator or None
        Seeds the graph and the parameters.

    Returns
    -------
    DiscreteMRF
        The model; its edges are ``model.graph.edges``.

    Raises
    ------
    ValueError
        If there are fewer than ``n_contacts`` pairs at ``min_separation`` or more.
    """
    rng = check_generator(random_state)
    L = int(n_columns)
    far = [(i, j) for i in range(L) for j in range(i + int(min_separation), L)]
    n_contacts = L if n_contacts is None else int(n_contacts)
    if n_contacts > len(far) or n_contacts < 0:
        raise ValueError(
            f"n_contacts={n_contacts}: there are {len(far)} pairs with j - i >= {min_separation} among {L} columns."
        )
    chosen = rng.choice(len(far), size=n_contacts, replace=False)
    edges = sorted({(i, i + 1) for i in range(L - 1)} | {far[k] for k in chosen})
    model = DiscreteMRF(edges, n_states, n_variables=L)
    unary = np.repeat([len(c) == 1 for c in model.cliques], model.layout.block_sizes)
    scale = np.where(unary, float(field_scale), float(coupling_scale))
    model.theta = rng.normal(size=model.n_params) * scale
    return model


def make_synthetic_alignment(
    n_sequences=500,
    n_columns=30,
    n_states=21,
    n_contacts=None,
    coupling_scale=0.6,
    field_scale=1.0,
    min_separation=5,
    n_sweeps=1000,
    random_state=None,
):
    """Draw sequences from a Potts model with known contacts (:func:`make_contact_potts`).

    Every sequence is the end of its own Gibbs chain (``DiscreteMRF.sample``, chromatic
    Gibbs from a uniform random start, ``n_sweeps`` sweeps), so the sequences are
    independent draws once the chains have mixed; ``DiscreteMRF.sample`` warns
    (:class:`~skmrf.exceptions.SamplingWarning`) when the chains' split R-hat says they did not.

    Parameters
    ----------
    n_sequences : int, default=500
        Number of sequences (independent Gibbs chains).
    n_columns : int, default=30
        Number of columns.
    n_states : int, default=21
        As in :func:`make_contact_potts`.
    n_contacts : int, optional
        As in :func:`make_contact_potts`.
    coupling_scale : float, default=0.6
        As in :func:`make_contact_potts`.
    field_scale : float, default=1.0
        As in :func:`make_contact_potts`.
    min_separation : int, default=5
        As in :func:`make_contact_potts`.
    n_sweeps : int, default=1000
        Gibbs sweeps per chain.
    random_state : int, RandomState, Generator or None
        Seeds the model and the chains.

    Returns
    -------
    SyntheticAlignment
        A named tuple ``(X, contacts, model)``.
    """
    rng = check_generator(random_state)
    model = make_contact_potts(n_columns, n_states, n_contacts, coupling_scale, field_scale, min_separation, rng)
    X = model.sample(n_sequences, random_state=rng, method="gibbs", n_sweeps=n_sweeps)
    return SyntheticAlignment(X, np.array(model.graph.edges, dtype=np.int64), model)


def write_fasta(path_or_file, X, names=None, alphabet=ALPHABET):
    """Write integer states as aligned FASTA, one sequence per line (the form pydca needs).

    Parameters
    ----------
    path_or_file : str, path-like or text file
        Where to write.
    X : array-like of int of shape (n_sequences, n_columns)
        States in ``alphabet``.
    names : list of str, optional
        Sequence names; ``seq0``, ``seq1``, ... if omitted.
    alphabet : str, default=ALPHABET
        State ``k`` is written as ``alphabet[k]``.

    Raises
    ------
    ValueError
        If a state has no letter in ``alphabet``, ``names`` has the wrong length, or a name holds a
        line break (the file would read back as other sequences).

    Examples
    --------
    >>> import io
    >>> from skmrf.protein import write_fasta
    >>> out = io.StringIO()
    >>> write_fasta(out, [[1, 0, 2]], names=["s"])
    >>> out.getvalue()
    '>s\\nA-C\\n'
    """
    X = np.asarray(X)
    if X.ndim != 2 or X.dtype.kind not in "iu" or (X.size and (X.min() < 0 or X.max() >= len(alphabet))):
        raise ValueError(f"X must be a 2-d array of states 0..{len(alphabet) - 1} (one per letter of the alphabet).")
    letters = np.frombuffer(alphabet.encode("ascii"), dtype=np.uint8)
    rows = np.ascontiguousarray(letters[X]).view(f"S{X.shape[1]}").ravel()
    names = [f"seq{n}" for n in range(len(X))] if names is None else list(names)
    if len(names) != len(X):
        raise ValueError(f"names has {len(names)} entries for {len(X)} sequences.")
    broken = [n for n, nm in enumerate(names) if "\n" in str(nm) or "\r" in str(nm)]
    if broken:
        raise ValueError(
            f"names[{broken[0]}] = {names[broken[0]]!r} holds a line break: a FASTA header is one line, so the file "
            "would read back with other sequences. Replace the line breaks (for example by spaces)."
        )
    text = "".join(f">{nm}\n{r.decode()}\n" for nm, r in zip(names, rows))
    if hasattr(path_or_file, "write"):
        path_or_file.write(text)
    else:
        with open(path_or_file, "w") as fh:
            fh.write(text)


def load_synthetic_alignment():
    """Load the small synthetic alignment bundled with skmrf, with its true contacts and model.

    500 sequences of 20 columns over :data:`ALPHABET`, drawn by
    ``make_synthetic_alignment(**skmrf.protein._synthetic.BUNDLED)``: a Potts model with
    21 states on the backbone ``(i, i + 1)`` and 16 contacts with ``j - i >= 5``. Small
    enough for a complete-graph pseudo-likelihood fit in seconds.

    Returns
    -------
    SyntheticAlignment
        A named tuple ``(X, contacts, model)``: the sequences read from
        ``skmrf/protein/data/synthetic_potts.fasta.gz``, the true edges from
        ``synthetic_potts_contacts.txt``, and the model (rebuilt from the same seed).

    Examples
    --------
    >>> from skmrf.protein import load_synthetic_alignment
    >>> X, contacts, model = load_synthetic_alignment()
    >>> X.shape, contacts.shape
    ((500, 20), (35, 2))
    """
    data = resources.files(__package__).joinpath(_DATA)
    with resources.as_file(data.joinpath(_FASTA)) as path:
        X = read_alignment(path, format="fasta").X
    contacts = np.loadtxt(data.joinpath(_CONTACTS).open(), dtype=np.int64, ndmin=2)
    p = BUNDLED
    model = make_contact_potts(
        p["n_columns"],
        21,
        p["n_contacts"],
        p["coupling_scale"],
        p["field_scale"],
        p["min_separation"],
        check_generator(p["random_state"]),
    )
    return SyntheticAlignment(X, contacts, model)
