"""The fitted model every discrete estimator exposes, and its Ising coordinates."""

from ..exceptions import _moved
from ._agreement import agreement_matrix, agreement_to_mrf, mrf_to_agreement
from ._discrete import DiscreteMRF
from ._ising import binary_to_ising, ising_statistics, ising_to_binary

__all__ = [
    "DiscreteMRF",
    "agreement_matrix",
    "agreement_to_mrf",
    "binary_to_ising",
    "ising_statistics",
    "ising_to_binary",
    "mrf_to_agreement",
]


#: Warnings and errors exported here before skmrf.exceptions held them all (deprecated).
__getattr__ = _moved(__name__, ("SamplingWarning",))
