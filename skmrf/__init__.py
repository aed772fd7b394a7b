"""skmrf: learn the parameters of Markov random fields, as scikit-learn estimators."""

from ._renamed_modules import install as _install_renamed_modules
from .estimators import (
    AdaptiveSchedule,
    DecomposedEM,
    ExactMaxLikelihood,
    ExchangeAlgorithm,
    GaussianLAP,
    GaussianMaxLikelihood,
    LAPEstimator,
    LaplaceApproximation,
    MCMCMaxLikelihood,
    MetropolisHastingsMRF,
    MLEInducedLikelihood,
    MomentMatchingSchedule,
    MRFClassifier,
    MRFImputer,
    PersistentChains,
    PseudoLikelihoodEstimator,
    TheorySchedule,
    covariance_selection,
    fast_mixing_schedule,
)
from .graphs import (
    chain_graph,
    chimera_graph,
    grid_graph,
    lattice_graph,
    resolve_graph,
    skip_chain_graph,
    torus_graph,
)
from .model import DiscreteMRF

_install_renamed_modules()

__version__ = "0.1.0.dev0"

__all__ = [
    "AdaptiveSchedule",
    "MomentMatchingSchedule",
    "TheorySchedule",
    "DecomposedEM",
    "DiscreteMRF",
    "ExactMaxLikelihood",
    "GaussianLAP",
    "GaussianMaxLikelihood",
    "LAPEstimator",
    "MCMCMaxLikelihood",
    "MLEInducedLikelihood",
    "MRFClassifier",
    "MRFImputer",
    "MetropolisHastingsMRF",
    "LaplaceApproximation",
    "PersistentChains",
    "ExchangeAlgorithm",
    "PseudoLikelihoodEstimator",
    "covariance_selection",
    "fast_mixing_schedule",
    "chain_graph",
    "chimera_graph",
    "grid_graph",
    "lattice_graph",
    "resolve_graph",
    "skip_chain_graph",
    "torus_graph",
]
