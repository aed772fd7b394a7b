"""scikit-learn's common estimator checks for every public estimator."""

import inspect

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import skmrf.estimators as est_module
from skmrf.estimators._base import BaseDiscreteMRF

# Parameter sets checked per estimator (by class name); default: one instance with defaults.
INIT_PARAMS = {
    "LAPEstimator": [{}, {"strategy": "exact", "node_rule": "own"}],
    # The default schedule is Theorem 1's (far over the work budget on the checks' data).
    "MCMCMaxLikelihood": [{"n_iter": 10, "n_samples": 50, "n_sweeps": 2, "random_state": 0}],
}

# Checks that cannot apply, with the reason.
BINARY_ONLY = "the check's data is not binary; the fast-mixing sets are defined for 0/1 data only"
_MCMC_XFAIL = {
    name: BINARY_ONLY
    for name in [
        "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self",
        "check_readonly_memmap_input",
        "check_n_features_in_after_fitting",
        "check_estimators_dtypes",
        "check_f_contiguous_array_estimator",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_fit2d_1sample",
        "check_fit2d_1feature",
        "check_dict_unchanged",
        "check_fit_idempotent",
        "check_fit_check_is_fitted",
        "check_n_features_in",
        "check_fit2d_predict1d",
    ]
}


PER_ESTIMATOR_XFAIL_CHECKS = {"MCMCMaxLikelihood": _MCMC_XFAIL}


def all_estimators():
    for name in est_module.__all__:
        obj = getattr(est_module, name)
        if inspect.isclass(obj) and hasattr(obj, "fit"):
            for params in INIT_PARAMS.get(name, [{}]):
                yield obj(**params)


# The checks fit on tiny random data where some state combination is missing,
# so the MLE does not exist; that warning is documented and tested elsewhere.
@pytest.mark.filterwarnings("ignore:The maximum-likelihood estimate does not exist")
@pytest.mark.filterwarnings("ignore::skmrf.estimators.gaussian.NotPositiveDefiniteWarning")
@parametrize_with_checks(
    list(all_estimators()),
    expected_failed_checks=lambda est: PER_ESTIMATOR_XFAIL_CHECKS.get(type(est).__name__, {}),
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_discrete_estimators_share_the_base():
    for est in all_estimators():
        if "graph" in est.get_params():
            assert isinstance(est, BaseDiscreteMRF) or not hasattr(est, "model_")
