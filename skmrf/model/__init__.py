"""The fitted model every discrete estimator exposes, and its Ising coordinates."""

from .agreement import agreement_matrix, agreement_to_mrf, mrf_to_agreement
from .discrete import DiscreteMRF, SamplingWarning
from .ising import binary_to_ising, ising_statistics, ising_to_binary

__all__ = [
    "DiscreteMRF",
    "SamplingWarning",
    "agreement_matrix",
    "agreement_to_mrf",
    "binary_to_ising",
    "ising_statistics",
    "ising_to_binary",
    "mrf_to_agreement",
]
