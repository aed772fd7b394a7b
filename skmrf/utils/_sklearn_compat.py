"""Private scikit-learn helpers, imported in one place so a change upstream is fixed once."""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["Interval", "Parallel", "StrOptions", "_fit_context", "check_is_fitted", "delayed", "validate_data"]
