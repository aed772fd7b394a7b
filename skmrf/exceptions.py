"""Every warning and error skmrf raises, importable in one place to filter or catch them.

Every error is a ``ValueError`` (bad input, or a computation this machine cannot do as asked);
non-convergence is scikit-learn's :class:`~sklearn.exceptions.ConvergenceWarning`.
"""

from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "ConvergenceWarning",
    "EstimatedLikelihoodWarning",
    "ImpossibleLikelihoodError",
    "MixingBoundWarning",
    "ModelFileError",
    "NeighbourhoodTooLargeError",
    "NoFiniteEstimateWarning",
    "NotPositiveDefiniteWarning",
    "SamplingWarning",
    "ScaleWarning",
    "TreewidthError",
]


class EstimatedLikelihoodWarning(UserWarning):
    """``score`` is a log-likelihood with an estimated (not exact) ``log Z``."""


class ImpossibleLikelihoodError(ValueError):
    """An estimated ``log Z`` is provably too small: a row would get a probability above one."""


class MixingBoundWarning(UserWarning):
    """The parameter set is outside the fast-mixing set: a constraint, not a mixing guarantee."""


class ModelFileError(ValueError):
    """A file that is not a saved skmrf model, is damaged, or that this version cannot read."""


class NeighbourhoodTooLargeError(ValueError):
    """A 1-neighbourhood has too many joint states for an auxiliary problem."""


class NoFiniteEstimateWarning(UserWarning):
    """With ``alpha=0`` the data leave some parameters without a finite optimum."""


class NotPositiveDefiniteWarning(UserWarning):
    """The fitted precision matrix is not positive definite."""


class SamplingWarning(UserWarning):
    """Gibbs chains of :meth:`~skmrf.model.DiscreteMRF.sample` did not mix: the samples are not model draws."""


class ScaleWarning(UserWarning):
    """A fitted quantity in the data's units under- or overflows float64."""


class TreewidthError(ValueError):
    """The model is too wide for exact inference within the memory budget."""
