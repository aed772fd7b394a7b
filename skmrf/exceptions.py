"""Every warning and error skmrf raises, importable in one place to filter or catch them.

Every error is a ``ValueError`` (bad input, or a computation this machine cannot do as asked);
non-convergence is scikit-learn's :class:`~sklearn.exceptions.ConvergenceWarning`.
"""

__all__ = [
    "ApproximateInferenceWarning",
    "CostWarning",
    "DiscreteDataWarning",
    "EstimatedLikelihoodWarning",
    "ImpossibleLikelihoodError",
    "MixingBoundWarning",
    "ModelFileError",
    "NeighbourhoodTooLargeError",
    "NoFiniteEstimateWarning",
    "NotPositiveDefiniteWarning",
    "PenalisedFitWarning",
    "SamplingWarning",
    "ScaleWarning",
    "TreewidthError",
]


class ApproximateInferenceWarning(UserWarning):
    """A conditional query was answered by Monte-Carlo chains, not exactly (the junction tree did not fit)."""


class CostWarning(UserWarning):
    """A fit found, while running, that it costs far more than the size of its problem suggests
    (the warning says what was measured, and how to bound the work)."""


class DiscreteDataWarning(UserWarning):
    """A Gaussian model fitted to integer data with few values: its score is a density, not a log-probability."""


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


class PenalisedFitWarning(UserWarning):
    """A maximum-likelihood statistic (deviance, AIC, BIC, standard errors, a test) asked of a penalised fit."""


class SamplingWarning(UserWarning):
    """Gibbs chains of :meth:`~skmrf.model.DiscreteMRF.sample` did not mix: the samples are not model draws."""


class ScaleWarning(UserWarning):
    """A fitted quantity in the data's units under- or overflows float64."""


class TreewidthError(ValueError):
    """The model is too wide for exact inference within the memory budget."""


def _moved(module, names):
    """The ``__getattr__`` of a package that exported the warnings and errors ``names`` before this
    module held them all: ``module.name`` gives the class here, with a FutureWarning (kept for one
    release)."""

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        import warnings

        warnings.warn(
            f"{module}.{name} moved to skmrf.exceptions.{name}; import it from there (the old name goes "
            "in the next release).",
            FutureWarning,
            stacklevel=2,
        )
        return globals()[name]

    return __getattr__
