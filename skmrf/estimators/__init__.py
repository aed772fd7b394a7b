"""scikit-learn estimators of MRF parameters."""

from .._kernels.mcmc.fast_mixing import fast_mixing_schedule
from ..exceptions import _moved
from ._bayes import MetropolisHastingsMRF
from ._classifier import MRFClassifier
from ._em import DecomposedEM
from ._exact import ExactMaxLikelihood
from ._imputer import MRFImputer
from ._lap import LAPEstimator, LAPSubproblem
from ._likelihood_options import ExchangeAlgorithm, LaplaceApproximation, PersistentChains
from ._mcmc import AdaptiveSchedule, MCMCMaxLikelihood, MomentMatchingSchedule, TheorySchedule
from ._mle_induced import MLEInducedLikelihood
from ._pseudo import PseudoLikelihoodEstimator
from ._schedules import MCMCSchedule
from .gaussian import CovarianceSelection, GaussianLAP, GaussianMaxLikelihood, covariance_selection

__all__ = [
    "AdaptiveSchedule",
    "CovarianceSelection",
    "MomentMatchingSchedule",
    "TheorySchedule",
    "DecomposedEM",
    "ExactMaxLikelihood",
    "ExchangeAlgorithm",
    "GaussianLAP",
    "GaussianMaxLikelihood",
    "LAPEstimator",
    "LAPSubproblem",
    "LaplaceApproximation",
    "MCMCSchedule",
    "MRFClassifier",
    "MRFImputer",
    "MCMCMaxLikelihood",
    "MLEInducedLikelihood",
    "MetropolisHastingsMRF",
    "PersistentChains",
    "PseudoLikelihoodEstimator",
    "covariance_selection",
    "fast_mixing_schedule",
]


#: Warnings and errors exported here before skmrf.exceptions held them all (deprecated).
__getattr__ = _moved(
    __name__,
    (
        "EstimatedLikelihoodWarning",
        "ImpossibleLikelihoodError",
        "MixingBoundWarning",
        "NeighbourhoodTooLargeError",
        "NoFiniteEstimateWarning",
        "NotPositiveDefiniteWarning",
        "ScaleWarning",
    ),
)
