"""scikit-learn estimators of MRF parameters."""

from ._fast_mixing import fast_mixing_schedule
from .bayes import MetropolisHastingsMRF
from .em import DecomposedEM
from .exact import ExactMaxLikelihood
from .gaussian import GaussianLAP, GaussianMaxLikelihood
from .lap import LAPEstimator
from .mcmc import MCMCMaxLikelihood
from .mle_induced import MLEInducedLikelihood
from .pseudo import PseudoLikelihoodEstimator

__all__ = [
    "DecomposedEM",
    "ExactMaxLikelihood",
    "GaussianLAP",
    "GaussianMaxLikelihood",
    "LAPEstimator",
    "MCMCMaxLikelihood",
    "MLEInducedLikelihood",
    "MetropolisHastingsMRF",
    "PseudoLikelihoodEstimator",
    "fast_mixing_schedule",
]
