"""Gaussian MRFs with a known sparsity pattern: LAP and maximum likelihood.

A zero-mean Gaussian ``N(mu, Sigma)`` is an MRF whose neighbourhoods are the
non-zero pattern of the precision ``Theta = Sigma^{-1}`` (LAP paper, Section 6,
equations (10)-(11)): the node potentials are ``Theta_ii x_i^2 / 2`` and the
edge potentials ``Theta_ij x_i x_j``. Both estimators below take that pattern
as ``graph`` and return a precision with zeros outside it.

* :class:`GaussianLAP` reads every entry off a small marginal model:
  ``Theta_ij`` from the inverse sample covariance of the 1-neighbourhood
  ``A = {i, j} u N(i) u N(j)`` and ``Theta_ii`` from that of ``{i} u N(i)``
  (Section 6.1, equations (12)-(14)). No iteration, one small inversion per
  entry, linear in the number of variables for bounded degree (Section 6.2).
* :class:`GaussianMaxLikelihood` solves covariance selection (Dempster, 1972):
  the maximum-likelihood precision with the same zeros, by Newton's method or
  by the modified regression algorithm of Hastie, Tibshirani & Friedman. It is
  the accuracy baseline.

Layering follows ``sklearn/covariance``: kernels on plain arrays, then the
estimators, which validate and store. The kernels live in
:mod:`skmrf._kernels.gaussian` (the LAP plan and block solves, the dense Newton
and regression solvers, the chordal closed form, sparse Newton-CG and the
lattice preconditioner); the row statistics in :mod:`skmrf._data.gaussian`; the
positive-definiteness checks in :mod:`skmrf._solvers.spd`. This package holds
``_BaseGaussianMRF`` (validation, storage, scoring) and the estimators.

The graph is resolved by :func:`skmrf.graphs.resolve_adjacency`.
Large problems stay sparse: no ``p x p`` dense matrix is formed by
:class:`GaussianLAP` unless ``store_covariance`` asks for it, and the sample
covariance is only evaluated on the blocks that LAP needs.
"""

from ...exceptions import _moved
from ._from_covariance import CovarianceSelection, covariance_selection
from ._lap import GaussianLAP
from ._max_likelihood import GaussianMaxLikelihood

__all__ = ["CovarianceSelection", "GaussianLAP", "GaussianMaxLikelihood", "covariance_selection"]


#: Warnings and errors exported here before skmrf.exceptions held them all (deprecated).
__getattr__ = _moved(__name__, ("NotPositiveDefiniteWarning", "ScaleWarning"))
