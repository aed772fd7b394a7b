"""scikit-learn estimators of MRF parameters."""

from .exact import ExactMaxLikelihood
from .lap import LAPEstimator
from .mcmc import MCMCMaxLikelihood, fast_mixing_schedule
from .pseudo import PseudoLikelihoodEstimator

__all__ = [
    "ExactMaxLikelihood",
    "LAPEstimator",
    "MCMCMaxLikelihood",
    "PseudoLikelihoodEstimator",
    "fast_mixing_schedule",
]
