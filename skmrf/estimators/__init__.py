"""scikit-learn estimators of MRF parameters."""

from .exact import ExactMaxLikelihood

__all__ = ["ExactMaxLikelihood"]
