"""scikit-learn estimators of MRF parameters."""

from ..exceptions import _moved
from ..kernels.mcmc.fast_mixing import fast_mixing_schedule
from .bayes import MetropolisHastingsMRF
from .em import DecomposedEM
from .exact import ExactMaxLikelihood
from .gaussian import GaussianLAP, GaussianMaxLikelihood
from .lap import LAPEstimator
from .mcmc import AdaptiveSchedule, MCMCMaxLikelihood, TheorySchedule
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
]


#: Warnings and errors exported here before skmrf.exceptions held them all (deprecated).
_MOVED = (
    "EstimatedLikelihoodWarning",
    "ImpossibleLikelihoodError",
    "MixingBoundWarning",
    "NeighbourhoodTooLargeError",
    "NoFiniteEstimateWarning",
    "NotPositiveDefiniteWarning",
    "ScaleWarning",
)


def __getattr__(name):
    return _moved(__name__, _MOVED, name)
