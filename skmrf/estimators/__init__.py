"""scikit-learn estimators of MRF parameters."""

from ..kernels.mcmc.fast_mixing import fast_mixing_schedule
from ._base import EstimatedLikelihoodWarning, ImpossibleLikelihoodError
from ._existence import NoFiniteEstimateWarning
from .bayes import MetropolisHastingsMRF
from .em import DecomposedEM
from .exact import ExactMaxLikelihood
from .gaussian import GaussianLAP, GaussianMaxLikelihood, NotPositiveDefiniteWarning, ScaleWarning
from .lap import LAPEstimator, NeighbourhoodTooLargeError
from .mcmc import AdaptiveSchedule, MCMCMaxLikelihood, MixingBoundWarning, TheorySchedule
from .mle_induced import MLEInducedLikelihood
from .pseudo import PseudoLikelihoodEstimator

__all__ = [
    "AdaptiveSchedule",
    "TheorySchedule",
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
    # Warnings and errors the estimators raise, importable to filter or catch them.
    "EstimatedLikelihoodWarning",
    "ImpossibleLikelihoodError",
    "MixingBoundWarning",
    "NeighbourhoodTooLargeError",
    "NoFiniteEstimateWarning",
    "NotPositiveDefiniteWarning",
    "ScaleWarning",
]
