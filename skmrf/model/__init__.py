"""The fitted model every discrete estimator exposes, and its Ising coordinates."""

from .discrete import DiscreteMRF
from .ising import binary_to_ising, ising_statistics, ising_to_binary

__all__ = ["DiscreteMRF", "binary_to_ising", "ising_statistics", "ising_to_binary"]
