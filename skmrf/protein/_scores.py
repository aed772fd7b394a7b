"""The zero-sum gauge of a pairwise Potts model, coupling scores and the average-product correction."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._utils._budgets import SCORE_CHUNK_ENTRIES as _CHUNK_ENTRIES
from .._utils._warnings import warn
from ..model import DiscreteMRF

__all__ = ["CouplingScores", "PottsParameters", "average_product_correction", "coupling_scores", "zero_sum_gauge"]


PAIR_DTYPE = np.dtype([("i", np.int64), ("j", np.int64), ("score", np.float64)])


class PottsParameters(NamedTuple):
    """A pairwise Potts model in the zero-sum gauge (what :func:`zero_sum_gauge` returns)."""

    fields: np.ndarray
    """ndarray of shape (n_variables, q): ``h_i(a)``, ``sum_a h_i(a) = 0``."""
    couplings: np.ndarray
    """ndarray of shape (n_edges, q, q): ``J_ij(a, b)`` of edge ``edges[e] = (i, j)``, rows ``a`` the
    state of ``i``, columns ``b`` the state of ``j``; every row and column sums to zero."""
    edges: np.ndarray
    """ndarray of int64 of shape (n_edges, 2): the pairs ``(i, j)``, ``i < j``, in the model's order."""


class CouplingScores(NamedTuple):
    """What :func:`coupling_scores` returns."""

    matrix: np.ndarray
    """ndarray of shape (n_variables, n_variables): symmetric scores, zero on the diagonal."""
    pairs: np.ndarray
    """Structured ndarray with fields ``i``, ``j`` (``i < j``) and ``score``: the edges of the model with
    ``j - i >= min_separation``, highest score first (ties by ``i`` then ``j``)."""


def _potts_model(model):
    """The :class:`DiscreteMRF` of ``model`` (a model or a fitted estimator), checked to be pairwise."""
    if not isinstance(model, DiscreteMRF):
        inner = getattr(model, "model_", None)
        if not isinstance(inner, DiscreteMRF):
            fitted = (
                any(k.endswith("_") and not k.startswith("_") for k in vars(model)) if hasattr(model, "fit") else False
            )
            why = (
                ", a model of real-valued data: coupling scores rank the couplings of a discrete (Potts) model"
                if fitted
                else " that is not fitted: call fit first."
                if hasattr(model, "fit")
                else "."
            )
            raise ValueError(
                f"Expected a skmrf.model.DiscreteMRF or a fitted discrete estimator (with model_); got "
                f"{type(model).__name__}{why}"
            )
        model = inner
    big = [c for c in model.cliques if len(c) > 2]
    if big:
        raise ValueError(
            f"The model has a clique of {len(big[0])} variables {big[0]}: the zero-sum gauge and coupling scores "
            "are defined here for pairwise (Potts) models only."
        )
    return model


def _edge_chunks(model):
    """Yield ``(edge numbers, edges, T)``: full coupling tables of chunks of edges of one shape.

    ``T`` has shape ``(m, K_i, K_j)`` with row and column 0 zero (skmrf's parametrisation).
    """
    lay = model.layout
    pair_k = np.array([k for k, c in enumerate(model.cliques) if len(c) == 2], dtype=np.int64)
    if pair_k.size == 0:
        return
    edges = np.array([model.cliques[k] for k in pair_k], dtype=np.int64)
    K = model.n_states
    shape_key = K[edges[:, 0]] * (int(K.max()) + 1) + K[edges[:, 1]]
    for key in np.unique(shape_key):
        members = np.flatnonzero(shape_key == key)
        ki, kj = int(K[edges[members[0], 0]]), int(K[edges[members[0], 1]])
        step = max(1, _CHUNK_ENTRIES // (ki * kj))
        for lo in range(0, members.size, step):
            e = members[lo : lo + step]
            size = (ki - 1) * (kj - 1)
            vals = model.theta[lay.block_offsets[pair_k[e]][:, None] + np.arange(size)]
            T = np.zeros((e.size, ki, kj))
            T[:, 1:, 1:] = vals.reshape(e.size, ki - 1, kj - 1)
            yield e, edges[e], T


def _double_centre(T):
    """``T`` minus its row and column means plus its mean, over the last two axes."""
    return T - T.mean(axis=2, keepdims=True) - T.mean(axis=1, keepdims=True) + T.mean(axis=(1, 2), keepdims=True)


def zero_sum_gauge(model):
    """Convert a pairwise Potts model to the zero-sum gauge: its fields and couplings.

    Parameters
    ----------
    model : DiscreteMRF or fitted discrete estimator
        A pairwise model (cliques of at most two variables), for example
        ``PseudoLikelihoodEstimator(graph="complete", n_states=21).fit(X)``.

    Returns
    -------
    PottsParameters
        A named tuple ``(fields, couplings, edges)`` with
        ``sum_a h_i(a) = 0`` and ``sum_a J_ij(a, b) = 0 = sum_b J_ij(a, b)``, such that
        ``sum_i h_i(x_i) + sum_(i,j) J_ij(x_i, x_j)`` equals the model's energy up to a
        constant: every log-probability is unchanged. ``q`` is the largest number of states;
        a variable with fewer states ``K_i < q`` has zeros in its entries ``a >= K_i``
        (they are not states of the model and take no part in the sums).

    Raises
    ------
    ValueError
        If ``model`` is not a :class:`~skmrf.model.DiscreteMRF` or a fitted estimator with
        one, or has a clique of more than two variables.

    Notes
    -----
    skmrf's parametrisation is normalised with respect to state 0 (``theta`` holds the
    entries where every variable is non-zero, see :mod:`skmrf._parametrisation`); the
    Potts energy is ``sum_i H_i(x_i) + sum_(i,j) T_ij(x_i, x_j)`` with row and column 0 of
    every table zero. Writing ``r_ij(a)`` and ``c_ij(b)`` for the row and column means of
    ``T_ij`` and ``m_ij`` for its mean,

    .. math::

        J_{ij}(a, b) = T_{ij}(a, b) - r_{ij}(a) - c_{ij}(b) + m_{ij}, \\qquad
        h_i(a) = H_i(a) - \\bar H_i + \\sum_{j} (r_{ij}(a) - m_{ij}),

    the sum over the neighbours ``j`` of ``i`` (with ``c_ji`` where ``i`` is the second
    variable of the edge). The zero-sum gauge is the one in which the Frobenius norm of
    each coupling block is smallest, which is why DCA scores couplings in it.
    ``O(n_edges * q^2)`` time; the returned couplings take ``8 * n_edges * q^2`` bytes.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.model import DiscreteMRF
    >>> from skmrf.protein import zero_sum_gauge
    >>> m = DiscreteMRF([(0, 1)], n_states=3, n_variables=2, theta=np.arange(1.0, 9.0))
    >>> p = zero_sum_gauge(m)
    >>> np.allclose(p.couplings.sum(axis=1), 0), np.allclose(p.fields.sum(axis=1), 0)
    (True, True)
    """
    model = _potts_model(model)
    K = model.n_states
    q = int(K.max())
    L = model.n_variables
    lay = model.layout
    fields = np.zeros((L, q))
    for k, c in enumerate(model.cliques):  # one short row per variable, not per data row
        if len(c) == 1:
            fields[c[0], 1 : K[c[0]]] = lay.block(model.theta, k)
    edges_all = np.array([c for c in model.cliques if len(c) == 2], dtype=np.int64).reshape(-1, 2)
    couplings = np.zeros((len(edges_all), q, q))
    shift = np.zeros((L, q))
    for e, edges, T in _edge_chunks(model):
        ki, kj = T.shape[1:]
        mean = T.mean(axis=(1, 2))
        np.add.at(shift[:, :ki], edges[:, 0], T.mean(axis=2) - mean[:, None])
        np.add.at(shift[:, :kj], edges[:, 1], T.mean(axis=1) - mean[:, None])
        couplings[e, :ki, :kj] = _double_centre(T)
    valid = np.arange(q)[None, :] < K[:, None]
    fields -= np.where(valid, fields, 0.0).sum(axis=1, keepdims=True) / K[:, None]
    fields = np.where(valid, fields + shift, 0.0)
    return PottsParameters(fields, couplings, edges_all)


def _constant_columns(alignment, n_variables):
    """The columns of ``alignment`` with one observed state (warned by index), or none."""
    if alignment is None:
        return np.zeros(0, dtype=np.int64)
    A = np.asarray(alignment)
    if A.ndim != 2 or A.shape[1] != n_variables:
        raise ValueError(
            f"alignment must hold the model's {n_variables} columns, one row per sequence; got shape {A.shape}."
        )
    constant = np.flatnonzero((A == A[:1]).all(axis=0)) if len(A) else np.zeros(0, dtype=np.int64)
    if constant.size:
        warn(
            f"Columns {constant.tolist()[:20]}{' ...' if constant.size > 20 else ''} of the alignment hold one state "
            "in every sequence: no evidence of coupling, so their pairs score 0 and are left out of the APC and "
            "of the ranked pairs.",
            UserWarning,
        )
    return constant


def average_product_correction(S):
    """Apply the average-product correction (APC) to a symmetric score matrix.

    Parameters
    ----------
    S : array-like of shape (n, n)
        Symmetric scores of the pairs; the diagonal is ignored.

    Returns
    -------
    ndarray of shape (n, n)
        ``S_ij - S_i. S_.j / S..`` off the diagonal, zero on it, where ``S_i.`` is the mean of
        row ``i`` over ``j != i`` and ``S..`` the mean over all pairs ``i < j`` (Dunn, Wahl and
        Gloor, 2008; plmc's and pydca's formula). All zeros when ``S..`` is zero.

    Raises
    ------
    ValueError
        If ``S`` is not square, has fewer than 2 rows, is not finite or is not symmetric.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.protein import average_product_correction
    >>> S = np.array([[0.0, 2.0, 1.0], [2.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    >>> np.round(average_product_correction(S), 3)
    array([[ 0.   ,  0.312, -0.125],
           [ 0.312,  0.   , -0.125],
           [-0.125, -0.125,  0.   ]])
    """
    S = np.array(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] < 2:
        raise ValueError(f"S must be a square matrix of at least 2 x 2; got shape {S.shape}.")
    if not np.all(np.isfinite(S)):
        raise ValueError("S holds NaN or inf.")
    off = np.abs(S - S.T)
    scale = np.abs(S).max(initial=0.0)
    if off.max(initial=0.0) > 1e-12 * max(scale, 1.0):  # rounding of a symmetrised matrix passes
        i, j = np.unravel_index(int(np.argmax(off)), off.shape)
        raise ValueError(
            f"S is not symmetric: S[{i}, {j}] = {S[i, j]:.6g} but S[{j}, {i}] = {S[j, i]:.6g}. APC corrects the "
            "scores of pairs, which do not depend on the order of the two columns: symmetrise it first, for "
            "example (S + S.T) / 2."
        )
    n = S.shape[0]
    np.fill_diagonal(S, 0.0)
    row = S.sum(axis=1) / (n - 1)
    total = S.sum() / (n * (n - 1))
    if total == 0:
        return np.zeros_like(S)
    out = S - np.outer(row, row) / total
    np.fill_diagonal(out, 0.0)
    return out


def coupling_scores(model, gauge="zero-sum", apc=True, exclude_state=None, min_separation=1, alignment=None):
    """Score every pair by the Frobenius norm of its coupling block, with APC.

    The direct coupling analysis (DCA) score of a pair of alignment columns, whose
    highest values predict residue contacts.

    Parameters
    ----------
    model : DiscreteMRF or fitted discrete estimator
        A pairwise model, typically fitted on the complete graph.
    gauge : {"zero-sum", "model"}, default="zero-sum"
        ``"zero-sum"``: the norm of each block in the zero-sum gauge (the DCA standard; a
        score that does not depend on how the model is parametrised). ``"model"``: the norm
        of skmrf's own block (normalised with respect to state 0), which depends on the
        choice of the reference state and ranks contacts worse; for comparison only.
    apc : bool, default=True
        Apply :func:`average_product_correction` to the matrix of norms (over all pairs, so
        meant for the complete graph).
    exclude_state : int, optional
        A state left out of the norm (its row and column of each block, after the gauge
        is fixed over all states), such as the gap: ``0`` with :data:`ALPHABET`. ``None``
        (the default) keeps every state: this function scores any pairwise model, whose
        states need not include a gap, and it is plmc's convention (the reference peer of
        ``benchmarks/protein_dca.py``). plmDCA leaves the gap out (Ekeberg et al. 2013);
        pydca leaves it out before centring the block over the 20 amino acids.
    min_separation : int, default=1
        Only pairs with ``j - i >= min_separation`` enter the ranked list (contacts are
        usually scored at 5 or more); the matrix holds every pair.
    alignment : array-like of shape (n_sequences, n_variables), optional
        The states the model was fitted to. A column with one observed state carries no
        evidence of coupling: its couplings are set by the penalty alone, and after APC
        they ranked 10th to 17th of 66 pairs on an alignment of 12 columns (#40). Its pairs
        then score 0, are left out of the APC means and of ``pairs``, and a warning names
        the columns.

    Returns
    -------
    CouplingScores
        A named tuple ``(matrix, pairs)``: the ``(n_variables, n_variables)`` symmetric
        matrix of scores (zero on the diagonal and, before APC, for pairs that are not
        edges of the model), and the ranked structured array of the edges with fields ``i``,
        ``j``, ``score``.

    Raises
    ------
    ValueError
        If ``model`` is not a pairwise model (see :func:`zero_sum_gauge`), or a parameter is
        out of range (``exclude_state`` must be a state of every variable).

    See Also
    --------
    zero_sum_gauge, average_product_correction

    Notes
    -----
    Works block by block, ``O(n_edges * q^2)`` time and ``O(n_variables^2)`` memory besides
    a chunk of blocks: the coupling tables are never all held at once.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf.model import DiscreteMRF
    >>> from skmrf.protein import coupling_scores
    >>> m = DiscreteMRF("complete", n_states=3, n_variables=3, theta=np.linspace(-1, 1, 18))
    >>> s = coupling_scores(m, apc=False)
    >>> s.matrix.shape, s.pairs.dtype.names
    ((3, 3), ('i', 'j', 'score'))
    """
    model = _potts_model(model)
    if gauge not in ("zero-sum", "model"):
        raise ValueError(f"gauge must be 'zero-sum' or 'model'; got {gauge!r}.")
    if exclude_state is not None:
        kmin = int(model.n_states.min())
        if isinstance(exclude_state, bool) or not isinstance(exclude_state, (int, np.integer)):
            raise ValueError(f"exclude_state must be None or an integer state; got {exclude_state!r}.")
        if not 0 <= exclude_state < kmin:
            raise ValueError(f"exclude_state={exclude_state} is not a state of every variable (0 to {kmin - 1}).")
    if isinstance(min_separation, bool) or not isinstance(min_separation, (int, np.integer)) or min_separation < 1:
        raise ValueError(f"min_separation must be a positive integer; got {min_separation!r}.")
    L = model.n_variables
    S = np.zeros((L, L))
    edge_list = []
    for _, edges, T in _edge_chunks(model):
        B = _double_centre(T) if gauge == "zero-sum" else T
        if exclude_state is not None:
            B = np.delete(np.delete(B, exclude_state, axis=1), exclude_state, axis=2)
        norms = np.sqrt(np.einsum("eab,eab->e", B, B))
        S[edges[:, 0], edges[:, 1]] = S[edges[:, 1], edges[:, 0]] = norms
        edge_list.append(edges)
    constant = _constant_columns(alignment, L)
    informative = np.setdiff1d(np.arange(L), constant)
    S[constant, :] = S[:, constant] = 0.0
    if apc and len(informative) >= 2:
        S[np.ix_(informative, informative)] = average_product_correction(S[np.ix_(informative, informative)])
    edges = np.concatenate(edge_list) if edge_list else np.zeros((0, 2), dtype=np.int64)
    edges = edges[(edges[:, 1] - edges[:, 0] >= min_separation) & ~np.isin(edges, constant).any(axis=1)]
    pairs = np.empty(len(edges), dtype=PAIR_DTYPE)
    pairs["i"], pairs["j"] = edges[:, 0], edges[:, 1]
    pairs["score"] = S[edges[:, 0], edges[:, 1]]
    pairs = pairs[np.lexsort((pairs["j"], pairs["i"], -pairs["score"]))]
    return CouplingScores(S, pairs)
