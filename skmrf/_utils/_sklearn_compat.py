"""Private scikit-learn helpers, imported in one place so a change upstream is fixed once."""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

__all__ = [
    "Hidden",
    "Interval",
    "Parallel",
    "StrOptions",
    "_check_sample_weight",
    "_fit_context",
    "check_is_fitted",
    "delayed",
    "validate_data",
]
