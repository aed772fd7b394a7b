"""Accuracy measures used in the papers' experiments."""

from __future__ import annotations

import numpy as np

__all__ = ["relative_error", "mean_parameter_variance"]


def relative_error(theta, theta_ref) -> float:
    """``||theta - theta_ref|| / ||theta_ref||`` (LAP paper, Section 4)."""
    theta, theta_ref = np.asarray(theta, dtype=float), np.asarray(theta_ref, dtype=float)
    return float(np.linalg.norm(theta - theta_ref) / np.linalg.norm(theta_ref))


def mean_parameter_variance(estimates) -> float:
    """Variance of each parameter across runs, averaged over parameters.

    Parameters
    ----------
    estimates : array-like of shape (n_runs, n_params)
    """
    return float(np.mean(np.var(np.asarray(estimates, dtype=float), axis=0)))
