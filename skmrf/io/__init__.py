"""Save and load fitted estimators: a versioned, checksummed ``.npz`` file, no pickle.

A saved model is a NumPy ``.npz`` archive (:func:`numpy.savez_compressed`). It holds one
JSON text entry, ``header``, plain numeric arrays, and (from version 2) a ``checksum``
entry. :func:`load_model` reads it without pickle and without trusting it: every
entry is checked (see *What loading checks* below), and anything inconsistent is
refused with :class:`ModelFileError` naming the field.

File format, version 2
----------------------
``header`` (a 0-d unicode array holding a JSON object):

``format``
    Always ``"skmrf-model"``.
``format_version``
    The integer ``2``. A reader refuses versions it does not know.
``skmrf_version``
    The version of skmrf that wrote the file (informative).
``estimator``
    The class name, one of the estimators of :mod:`skmrf` (``"LAPEstimator"``, ...).
``kind``
    ``"discrete"`` or ``"gaussian"``: which arrays below are present.
``params``
    ``get_params(deep=False)`` where JSON can hold the value (tuples become lists);
    a ``graph`` that JSON cannot hold (a networkx graph, a matrix) is replaced by its
    resolved list of factors (discrete) or edges (Gaussian), as column names when the
    estimator has ``feature_names_in_``, else as column indices.
    A parameter object (MCMC's ``schedule``) is ``{"object": class name, "params": {...}}``;
    a dict (a per-order ``alpha``) is ``{"object": "dict", "items": [[key, value], ...]}``.
``params_not_saved``
    Names of other parameters JSON cannot hold (an ``init`` estimator, a
    ``RandomState``); the loaded estimator has their default values.
``n_features``, ``feature_names``
    ``n_features_in_`` and ``feature_names_in_`` (a list of column labels, strings or
    integers, or null when the estimator was fitted on an array without names).
``graph``
    Discrete: ``{"factors": [[i, j], ...], "names": [...] or null}``, the maximal
    factors of ``graph_`` as column indices and its variable labels. Gaussian: null
    (the pattern is in the arrays).
``fitted``
    Every other fitted attribute (name ending in ``_``) whose value is a number,
    a string, a boolean or null, such as ``n_iter_``, ``alpha_``, ``score_method_`` (a per-order
    ``alpha_`` as a dict, in the form of ``params``).
``fitted_labels``
    Fitted attributes that are lists, tuples or 1-D object arrays of labels (strings
    or integers), such as column labels: ``{name: {"type": "list" | "tuple" |
    "ndarray", "values": [...]}}``, restored as the same type.
``fitted_arrays``
    Names of the fitted attributes stored as numeric arrays ``fitted.<name>``.
``fitted_not_saved``
    Names of the fitted attributes no form above can hold (diagnostic objects such as
    ``trace_``); they are absent from the loaded estimator.

Arrays of a discrete model (the fitted :class:`~skmrf.model.DiscreteMRF` ``model_``):

``n_states`` (int64, ``(n_features,)``), ``theta`` (float64, ``(n_params,)``, blocks
in the order of ``model_.cliques``, which the factors determine), and
``log_partition`` / ``log_partition_std`` (float64, 0-d) when the estimator has them.

Arrays of a Gaussian model:

``location``, ``scale`` (float64, ``(n_features,)``); ``precision_data``,
``precision_indices``, ``precision_indptr``: ``standardized_precision_`` in CSR form;
``adjacency_indices``, ``adjacency_indptr``: the CSR pattern ``adjacency_``;
``is_positive_definite`` (bool, 0-d); ``log_partition`` (float64, 0-d).

``checksum`` (a 0-d unicode array): the SHA-256 hex digest of the header text (UTF-8)
followed by, for every other entry in sorted name order, its name, dtype, shape and
bytes. It catches a damaged byte that the archive's own CRC-32 does
not cover (such as a changed size or name in the archive's directory).

A loaded estimator scores, and samples with the same seed, exactly as the one that was
saved: every number that ``score_samples`` and ``sample`` read is stored bit for bit.

Version 1 is version 2 without ``checksum`` and ``fitted_labels`` (and with string
column names only); it is still read, with every check below except the checksum.

How io reads an estimator
-------------------------
Through a protocol, not its class (:mod:`skmrf.estimators._protocol`): the model arrays
are the estimator's ``__skmrf_state__()`` and are given back to a new estimator of the
saved class by ``__skmrf_set_state__(state)`` once every field is checked; ``kind`` is its
``__skmrf_kind__``. Everything else comes from its parameters (``get_params``) and its
public fitted attributes.

What loading checks
-------------------
The archive is read entry by entry without pickle (object and structured dtypes are
refused, and an entry whose declared size does not match its bytes is refused before
anything is allocated); the checksum; every header field's type (an integer is never
a boolean) and every enumeration (``kind``, ``score_method_``, ``solver_``, the
estimator's parameters through its own parameter validation); the shapes of the
arrays against the graph and the numbers of states; that the parameters are finite.
``log Z`` of a discrete model scored exactly is recomputed by the junction tree and
must agree with the stored value; one estimated by AIS must lie within the bounds
``log prod(K) + E_uniform[energy] <= log Z <= log prod(K) + max energy``. A Gaussian
precision flagged positive definite is factorised again (Cholesky), and its
log-determinant must agree with ``log_partition``.
"""

from __future__ import annotations

from ..exceptions import ModelFileError
from . import _format
from ._load import load_model, read_header
from ._save import save_model

#: The ``format`` entry of every header.
FORMAT_NAME = _format.FORMAT_NAME
#: The version :func:`save_model` writes; :func:`load_model` reads versions 1 to it.
FORMAT_VERSION = _format.FORMAT_VERSION

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "ModelFileError", "load_model", "read_header", "save_model"]
