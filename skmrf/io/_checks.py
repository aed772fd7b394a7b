"""The checks of a read file: header fields, arrays, and each kind's state before it reaches an estimator.

Every check raises :class:`~skmrf.io._format.Bad` naming the field; :func:`~skmrf.io.load_model`
turns it into a :class:`~skmrf.exceptions.ModelFileError`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._solvers.spd import logdet_spd
from .._utils.validation import MAX_STATES
from ..estimators._base import MAX_TABLE_SIZE
from ..exceptions import TreewidthError
from ..graphs import MRFGraph
from ..graphs._resolve import _maximal
from ._format import Bad

__all__ = [
    "array",
    "discrete_state",
    "field",
    "finite",
    "gaussian_state",
    "labels",
    "log_partition_state",
    "verify_log_partition",
]


# -- header fields and arrays ----------------------------------------------------------
def field(header, key, types, what):
    """``header[key]`` if its type is exactly one of ``types`` (so never a bool for an int)."""
    if key not in header:
        raise Bad(key, "is missing from the header")
    value = header[key]
    if type(value) not in types:
        raise Bad(key, f"is {value!r}, not {what}")
    return value


def labels(values, name, length=None):
    """A list of labels (strings or integers, never booleans), of ``length`` if given."""
    if type(values) is not list or not all(type(v) in (str, int) for v in values):
        raise Bad(name, f"is {values!r}, not a list of column labels (strings or integers)")
    if length is not None and len(values) != length:
        raise Bad(name, f"has {len(values)} labels for {length} columns")
    return values


def array(arrays, name, dtype, shape):
    """``arrays[name]`` checked: exactly ``dtype`` (same byte order) and ``shape`` (None: any length)."""
    if name not in arrays:
        raise Bad(name, "is missing")
    a = arrays[name]
    if (
        a.dtype != np.dtype(dtype)
        or a.ndim != len(shape)
        or any(s is not None and s != t for s, t in zip(shape, a.shape))
    ):
        raise Bad(name, f"is {a.dtype} of shape {a.shape}, expected {np.dtype(dtype)} of shape {shape}")
    return a


def finite(a, name):
    if not np.all(np.isfinite(a)):
        raise Bad(name, "holds NaN or infinity")
    return a


# -- the discrete state ------------------------------------------------------------------
def _graph(header, n):
    """The ``MRFGraph`` of a discrete file: factors of valid, sorted, distinct columns, maximal."""
    graph = field(header, "graph", (dict,), "an object")
    factors = graph.get("factors")
    if type(factors) is not list or not all(
        type(f) is list and f and all(type(i) is int and 0 <= i < n for i in f) for f in factors
    ):
        raise Bad("graph.factors", f"is not a list of non-empty lists of column indices 0..{n - 1}")
    factors = tuple(tuple(f) for f in factors)
    if _maximal(factors) != factors:
        raise Bad("graph.factors", "are not the sorted maximal factors save_model writes (repeated or reordered)")
    names = graph.get("names")
    if names is not None:
        scalar = (str, int, float, bool, type(None))  # networkx node labels, tuples stored as lists
        if (
            type(names) is not list
            or len(names) != n
            or not all(type(v) in scalar or (type(v) is list and all(type(u) in scalar for u in v)) for v in names)
        ):
            raise Bad("graph.names", f"is not null or a list of {n} labels (scalars or lists of scalars)")
        names = tuple(tuple(v) if isinstance(v, list) else v for v in names)
    return MRFGraph(n, factors, names)


def discrete_state(header, arrays, n):
    """``n_states``, ``factors``, ``names`` and ``theta`` of a discrete file, checked against each other."""
    n_states = array(arrays, "n_states", np.int64, (n,))  # first: the file's own size bounds n
    if np.any(n_states < 2) or np.any(n_states > MAX_STATES):
        raise Bad("n_states", f"is {n_states.tolist()}, not numbers of states from 2 to {MAX_STATES:,}")
    graph = _graph(header, n)
    n_params = 0
    for c in graph.cliques:
        size = math.prod(int(n_states[i]) for i in c)
        if size > MAX_TABLE_SIZE:
            raise Bad("n_states", f"give clique {c} {size:,} joint states, over the limit of {MAX_TABLE_SIZE:,}")
        n_params += math.prod(int(n_states[i]) - 1 for i in c)
    theta = finite(array(arrays, "theta", np.float64, (n_params,)), "theta")
    return {"n_states": n_states, "theta": theta, "factors": graph.factors, "names": graph.names}


def log_partition_state(method, arrays):
    """``log_partition`` (and ``log_partition_std``) as ``score_method_`` needs them, each checked on
    its own; :func:`verify_log_partition` checks them against the model."""
    if method is None:
        raise Bad("fitted.score_method_", "is missing")
    has_std = "log_partition_std" in arrays
    if method == "pseudo":
        if "log_partition" in arrays or has_std:
            raise Bad("log_partition", "is present, but a pseudo-likelihood score has no log Z")
        return {}
    if has_std != (method == "ais"):
        raise Bad("log_partition_std", f"is {'present' if has_std else 'missing'}, but score_method_ is {method!r}")
    state = {"log_partition": float(finite(array(arrays, "log_partition", np.float64, ()), "log_partition"))}
    if method == "ais":
        std = float(finite(array(arrays, "log_partition_std", np.float64, ()), "log_partition_std"))
        if std < 0:
            raise Bad("log_partition_std", f"is {std!r}, a negative standard error")
        state["log_partition_std"] = std
    return state


def verify_log_partition(model, method, state, max_bytes):
    """Check the state's ``log Z`` against ``model``: recomputed when scored exactly, else within bounds."""
    if method == "pseudo":
        return
    log_z = state["log_partition"]
    if method == "exact":
        try:
            exact = model.calibrate(max_bytes=max_bytes).log_z
        except TreewidthError as exc:
            raise Bad("fitted.score_method_", f"is 'exact', but {exc}") from None
        # The junction tree sums exp over the cliques in the same order as at fit: the same
        # bits on the same machine, and a few rounding errors per clique on another.
        tol = 1e-9 * (len(model.cliques) + abs(exact))
        if not abs(log_z - exact) <= tol:
            raise Bad("log_partition", f"is {log_z!r}, but the model's log Z is {exact!r}")
        return
    std = state.get("log_partition_std", 0.0)  # "bound": a deterministic upper bound, within the same bounds
    lower, upper = _log_z_bounds(model)
    # AIS estimates log Z with standard error std (and tends to underestimate it); the
    # bounds are exact up to rounding.
    slack = 10.0 * std + 1e-9 * (len(model.cliques) + abs(lower) + abs(upper))
    if not lower - slack <= log_z <= upper + slack:
        raise Bad("log_partition", f"is {log_z!r}, outside the bounds [{lower!r}, {upper!r}] of the model's log Z")


def _log_z_bounds(model):
    """Bounds on ``log Z`` for any graph, in O(n_params).

    With ``N = prod(K)`` states and energy ``E``: ``log N + mean E <= log Z <= log N + max E``
    (Jensen's inequality under the uniform distribution; the largest term). Under the
    uniform distribution a parameter's indicator has mean ``prod(1 / K_i)`` over its clique;
    ``max E <= sum over blocks of max(0, largest parameter)``.
    """
    lay = model.layout
    log_n = float(np.sum(np.log(model.n_states)))
    mean, top = 0.0, 0.0
    for k, c in enumerate(model.cliques):
        block = model.theta[lay.block_offsets[k] : lay.block_offsets[k + 1]]
        mean += float(block.sum()) / math.prod(int(model.n_states[i]) for i in c)
        top += max(0.0, float(block.max(initial=0.0)))
    return log_n + mean, log_n + top


# -- the Gaussian state ------------------------------------------------------------------
def _csr(arrays, prefix, p, data=None):
    """The CSR arrays ``prefix_indices`` / ``prefix_indptr`` checked: sorted, distinct columns in range."""
    indptr, indices = arrays.get(f"{prefix}_indptr"), arrays.get(f"{prefix}_indices")
    for name, a, length in ((f"{prefix}_indptr", indptr, p + 1), (f"{prefix}_indices", indices, None)):
        if a is None or a.ndim != 1 or a.dtype.kind not in "iu" or length not in (None, len(a)):
            raise Bad(name, f"is missing or not a 1-D integer array{'' if length is None else f' of {length}'}")
    nnz = len(indices)
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
        raise Bad(f"{prefix}_indptr", f"is not the row pointer of {nnz} entries in {p} rows")
    if nnz and (indices.min() < 0 or indices.max() >= p):
        raise Bad(f"{prefix}_indices", f"holds a column outside 0..{p - 1}")
    rows = np.repeat(np.arange(p), np.diff(indptr))
    if np.any((np.diff(indices) <= 0) & (np.diff(rows) == 0)):
        raise Bad(f"{prefix}_indices", "are not sorted and distinct within each row")
    values = np.ones(nnz, dtype=bool) if data is None else data
    if len(values) != nnz:
        raise Bad(f"{prefix}_data", f"has {len(values)} values for {nnz} entries")
    M = sp.csr_array((values, indices, indptr), shape=(p, p))
    if (M != M.T).nnz:
        raise Bad(f"{prefix}_indices" if data is None else f"{prefix}_data", "do not form a symmetric matrix")
    return M


def _gaussian_precision(arrays, p, A):
    """The standardised precision: symmetric, within the pattern ``A``, with a positive diagonal."""
    data = finite(array(arrays, "precision_data", np.float64, (None,)), "precision_data")
    P = _csr(arrays, "precision", p, data)
    off = sp.csr_array(P, copy=True)
    off.setdiag(0)
    off.eliminate_zeros()
    if (off.astype(bool) > A).nnz:
        raise Bad("precision_indices", "put a non-zero entry outside the graph's pattern adjacency_")
    if not np.all(P.diagonal() > 0):
        raise Bad("precision_data", "has a diagonal entry that is not positive")
    return P


def gaussian_state(arrays, p):
    """The state of a Gaussian file, every array checked; a precision flagged positive definite is
    factorised again (Cholesky) and its log-determinant must agree with ``log_partition``."""
    location = finite(array(arrays, "location", np.float64, (p,)), "location")
    scale = finite(array(arrays, "scale", np.float64, (p,)), "scale")
    if not np.all(scale > 0):
        raise Bad("scale", "holds a value that is not positive")
    A = _csr(arrays, "adjacency", p)
    if A.diagonal().any():
        raise Bad("adjacency_indices", "put a variable next to itself (the pattern has no diagonal)")
    P = _gaussian_precision(arrays, p, A)
    is_pd = bool(array(arrays, "is_positive_definite", np.bool_, ()))
    log_partition = float(array(arrays, "log_partition", np.float64, ()))
    if is_pd:
        finite(log_partition, "log_partition")
        pd, logdet_std = logdet_spd(P)
        if not pd:
            raise Bad("is_positive_definite", "is true, but the precision is not positive definite (Cholesky fails)")
        # log_partition_ = (p log(2 pi) - logdet) / 2, logdet = logdet_std - 2 sum(log scale_)
        expected = 0.5 * (p * np.log(2 * np.pi) - logdet_std + 2.0 * float(np.sum(np.log(scale))))
        # The fit's factorisation (chordal, sparse or dense) and this one round differently, by
        # about p * eps * cond in log det: 1e-8 (p + |log Z|) leaves room for a condition number
        # of 1e7 (and more at small p); a change the checksum misses is then a deliberate one.
        if not abs(log_partition - expected) <= 1e-8 * (p + abs(expected)):
            raise Bad("log_partition", f"is {log_partition!r}, but the precision gives {expected!r}")
    elif not np.isnan(log_partition):
        raise Bad("log_partition", f"is {log_partition!r}, but a precision that is not positive definite has none")
    return {
        "location": location,
        "scale": scale,
        "precision": P,
        "adjacency": A,
        "is_positive_definite": is_pd,
        "log_partition": log_partition,
    }
