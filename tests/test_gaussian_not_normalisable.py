"""#24 item 3 for the Gaussian estimators: a precision that is not positive definite gives no score."""

import numpy as np
import pytest

from skmrf import GaussianLAP
from skmrf.exceptions import NotPositiveDefiniteWarning
from skmrf.graphs import grid_graph


def _few_rows(n=20, p=100, seed=0):
    """Correlated columns, too few rows for LAP's precision to be positive definite on a 10x10 grid."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) @ np.triu(np.ones((p, p))) * 0.3 + rng.standard_normal((n, p))


def test_score_refuses_a_precision_that_is_not_positive_definite_and_names_its_smallest_eigenvalue():
    X = _few_rows()
    with pytest.warns(NotPositiveDefiniteWarning):
        est = GaussianLAP(grid_graph(10, 10), repair=None, bias_correction=False).fit(X)
    assert not est.is_positive_definite_ and np.isnan(est.log_partition_)
    smallest = np.linalg.eigvalsh(est.standardized_precision_.toarray())[0]
    assert smallest < 0
    # The message quotes it to 4 significant digits (the dense eigensolver: rounding only).
    for method in (est.score, est.score_samples):
        with pytest.raises(ValueError, match=rf"not positive definite \(smallest eigenvalue {smallest:.4g} ") as info:
            method(X)
        assert "repair='shrink'" in str(info.value)  # and the fix
    # The documented fix: a positive definite fit with a finite score.
    with pytest.warns(NotPositiveDefiniteWarning):
        fixed = GaussianLAP(grid_graph(10, 10), repair="shrink", bias_correction=False).fit(X)
    assert fixed.is_positive_definite_ and np.isfinite(fixed.score(X))
