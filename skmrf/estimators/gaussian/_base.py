"""The base class of the Gaussian MRF estimators: validation, storage, scoring.

A zero-mean Gaussian ``N(mu, Sigma)`` is an MRF whose neighbourhoods are the
non-zero pattern of the precision ``Theta = Sigma^{-1}`` (LAP paper, Section 6,
equations (10)-(11)). Both estimators take that pattern as ``graph`` and store a
sparse precision with zeros outside it; this class holds what they share: the
parameters and their validation, the resolved pattern ``adjacency_``, the
centring, the sample-size checks and the scikit-learn covariance-estimator API
(``score``, ``score_samples``, ``mahalanobis``, ``error_norm``, ``get_precision``).
"""

from __future__ import annotations

from numbers import Real

import networkx as nx
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from ..._data import is_chunked
from ..._data.gaussian import NON_FINITE_ADVICE, standardise
from ..._utils._atomic import atomic_fit
from ..._utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from ..._utils._verbose import ProgressLog
from ..._utils._warnings import warn
from ..._utils.validation import (
    check_count_weights,
    check_data_array,
    check_real,
    column_names,
    fit_column_labels,
)
from ...exceptions import DiscreteDataWarning, NotPositiveDefiniteWarning, ScaleWarning
from ...graphs import MRFGraph, resolve_adjacency
from .._score import MeanScoreMixin
from ._fitted import DENSE_MAX_FEATURES, FittedGaussianMixin

__all__ = ["DENSE_MAX_FEATURES", "DENSE_PRECISION_MAX_FEATURES", "NotPositiveDefiniteWarning", "ScaleWarning"]

# Entries of a standardised quantity mapped back below this are reported as underflowing.
_TINY = np.finfo(np.float64).tiny


_NON_FINITE_ADVICE = NON_FINITE_ADVICE


#: A Gaussian fit warns (:class:`~skmrf.exceptions.DiscreteDataWarning`) when every column of X
#: holds integers spanning at most this many consecutive values (0/1 pixels, Likert scales, counts).
DISCRETE_MAX_VALUES = 16

#: Entries scanned at once by :func:`_few_integer_values` (a few temporaries of 256 KB: the scan
#: of a memmap stays within the fit's chunk memory; real-valued data stops at the first block).
_SCAN_ENTRIES = 1 << 15


def _is_dask(X):
    return type(X).__module__.startswith("dask")


def _few_integer_values(X):
    """Whether every column of X (in memory or a memmap) holds integers spanning at most
    :data:`DISCRETE_MAX_VALUES` values: row blocks, stopping at the first block that says no."""
    if X.dtype.kind in "iub":
        low, high = X.min(axis=0), X.max(axis=0)
        return bool(np.all(high.astype(np.float64) - low <= DISCRETE_MAX_VALUES - 1))
    step = max(1, _SCAN_ENTRIES // max(1, X.shape[1]))
    low = high = None
    for a in range(0, X.shape[0], step):
        block = np.asarray(X[a : a + step], dtype=np.float64)
        if not np.all(block == np.round(block)):
            return False
        lo, hi = block.min(axis=0), block.max(axis=0)
        low = lo if low is None else np.minimum(low, lo)
        high = hi if high is None else np.maximum(high, hi)
        if np.any(high - low > DISCRETE_MAX_VALUES - 1):
            return False
    return low is not None


def _column_name(j, names=None):
    """``"3"``, or ``"3 ('height')"`` when the columns have names."""
    return f"{j}" if names is None else f"{j} ({names[j]!r})"


def gaussian_step_line(step, **metrics):
    """The verbose line of one step of a Gaussian solver, from the metrics its kernel reports."""
    if "kkt" in metrics:
        return "Newton iteration %d, objective = %.10g, kkt = %.3g" % (step, metrics["objective"], metrics["kkt"])
    if "change" in metrics:
        return "regression sweep %d, max change = %.3g" % (step, metrics["change"])
    return "Newton-CG step %d: objective %.12g, decrement %.3g, residual %.3g, %d CG (%.1fs), step %s" % (
        step,
        *(metrics[k] for k in ("objective", "decrement", "residual", "n_cg", "cg_seconds", "step_length")),
    )


#: Largest number of variables for which ``sparse="auto"`` returns ``precision_``
#: as a dense ndarray (200 MB), as scikit-learn's covariance estimators do.
DENSE_PRECISION_MAX_FEATURES = 5000


class _BaseGaussianMRF(FittedGaussianMixin, MeanScoreMixin, BaseEstimator):
    """Validation, storage and the covariance-estimator API shared by both estimators.

    A subclass's ``fit`` calls :meth:`_prepare` (validation, graph, centring),
    computes the sparse precision and hands it to :meth:`_store`.
    """

    #: How to obtain a positive definite fit (completes the error message of ``score``).
    _pd_advice = "more samples or shrinkage > 0"

    _parameter_constraints: dict = {
        "graph": [str, nx.Graph, MRFGraph, "array-like", "sparse matrix"],
        "assume_centered": ["boolean"],
        "shrinkage": [Interval(Real, 0, 1, closed="left")],
        "store_covariance": ["boolean", StrOptions({"auto"})],
        "sparse": ["boolean", StrOptions({"auto"})],
        "verbose": ["verbose"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.non_deterministic = False
        return tags

    # -- fit ----------------------------------------------------------------
    @atomic_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Estimate the precision from X (see the class description for the method).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite real values): an array, a ``numpy.memmap``
            or a ``dask.array`` (read by row chunks).
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights: a row of weight ``w`` counts as ``w`` rows
            (weighted mean and covariance, and ``n`` is the sum of the weights
            wherever it enters: sample-size checks, bias correction; integer
            weights give the fit on repeated rows, up to rounding). None: every
            row weighs 1.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            NaN or infinite values; negative, NaN or wrongly sized weights, or
            weights summing to zero; a graph that does not match X; too few
            samples for the method (the largest 1-neighbourhood or closed
            neighbourhood, with ``shrinkage=0``); a column of zero variance
            (with ``shrinkage=0``); collinear columns (a singular neighbourhood
            covariance, or a likelihood without a maximum, named in the
            message); a problem too large for the dense solvers; a precision
            that overflows float64 in the units of X.
        """
        log = ProgressLog(type(self).__name__, self.verbose)
        data, n_div, mu = self._prepare(X, sample_weight)
        precision, is_pd, logdet, covariance = self._fit_precision(data, n_div, mu, log)
        del data
        self._store(precision, is_pd, logdet, covariance)
        return self

    def _fit_precision(self, data, n_div, mu, log):
        """The method's kernel call on the validated, standardised data (:meth:`_prepare`):
        ``(precision, is_positive_definite, log_det, covariance or None)`` in standardised units,
        for :meth:`_store`. Sets the method's own fitted attributes."""
        raise NotImplementedError

    #: Whether ``fit`` wants the standardised data as one transposed in-memory array
    #: (GaussianLAP's kernel gathers variables) rather than read by row chunks.
    _materialise = False

    def _prepare(self, X, sample_weight=None):
        """Validate X and the weights, resolve the pattern, centre and standardise.

        Returns ``(data, n_div, mu)``. ``data`` is the standardised data, a
        :class:`~skmrf._data.gaussian.StandardisedRows` read by blocks of rows (in
        memory, from a memmap or from a dask array: no transposed copy of X), with
        the whole transposed array in memory (``data.XT``) when the subclass sets
        ``_materialise`` and X is in memory. Its sums are the same bit for bit
        whatever the chunking. ``n_div`` is the number of rows, or the sum of the
        weights: a row of weight ``w`` counts as ``w`` rows.

        The fit works in standardised units: every column is divided by its
        (weighted) standard deviation ``scale_`` (after centring), so the
        estimates are scale-equivariant and no product of the data under- or
        overflows. The precision of ``X D`` is ``D^{-1} Theta D^{-1}`` for both
        estimators, so :meth:`_store` maps the standardised fit back exactly.
        ``mu`` is the shrinkage target in standardised units: the
        covariance-scale target ``mean(diag(S)) I`` becomes
        ``mean(diag(S)) / scale_**2`` on the diagonal, so ``shrinkage`` means what
        it does on the covariance scale (with shrinkage, ``scale_`` is the shrunk
        standard deviation).
        """
        if is_chunked(X):
            check_data_array(X, 2, type(self).__name__)
            self.n_features_in_ = X.shape[1]
            self.__dict__.pop("feature_names_in_", None)
            self.__dict__.pop("feature_labels_in_", None)
            names = None
        else:
            fit_column_labels(self, X)
            X = validate_data(self, X, reset=True, dtype=None, ensure_min_samples=2, ensure_all_finite=False)
            check_data_array(X, 2, type(self).__name__)
            names = column_names(self)
            X = check_real(X, names, advice=_NON_FINITE_ADVICE)
        weights = None if sample_weight is None else check_count_weights(sample_weight, X.shape[0], type(self).__name__)
        self.adjacency_ = resolve_adjacency(self.graph, X.shape[1], names)
        # A memmap or a dask array is validated block by block here (an in-memory X is already).
        data, n_div, self.scale_, mu = standardise(
            X,
            weights,
            self.assume_centered,
            lambda peak: self._check_variance(peak, names),
            self._units,
            validate=is_chunked(X),
        )
        self.location_ = data.location
        if self._materialise and not is_chunked(X):
            data.materialise()
        if not _is_dask(X) and _few_integer_values(X):
            warn(
                f"{type(self).__name__} was fitted to integer data spanning at most {DISCRETE_MAX_VALUES} values "
                "per column: its score is a Gaussian log-density (per unit of x), not a log-probability of the "
                "observed values, so it cannot be ranked against the score of a discrete model (a density can "
                "exceed 1: on 0/1 data it often scores above any discrete model). Compare models of one family, "
                "or fit a discrete MRF (ExactMaxLikelihood, PseudoLikelihoodEstimator, ...) to categorical data.",
                DiscreteDataWarning,
            )
        return data, n_div, mu

    def _check_variance(self, peak, names):
        """The columns whose largest centred absolute value ``peak`` is zero; raises for them
        unless ``shrinkage > 0`` (and some column varies)."""
        zero = ~(peak > 0)
        if zero.any() and (not self.shrinkage or zero.all()):
            cols = np.flatnonzero(zero)
            which = ", ".join(_column_name(j, names) for j in cols[:10]) + (", ..." if len(cols) > 10 else "")
            many = len(cols) > 1
            about = "" if self.assume_centered else (" about their mean" if many else " about its mean")
            raise ValueError(
                f"{type(self).__name__}: column{'s' if many else ''} {which} {'have' if many else 'has'} "
                f"zero variance{about}; remove constant columns (sklearn.feature_selection.VarianceThreshold "
                "in a pipeline) or set shrinkage > 0, which gives them the shrinkage target's variance"
                f"{self._zero_variance_note()}."
            )
        return zero

    def _zero_variance_note(self):
        """What else the zero-variance refusal should say for this estimator (none here)."""
        return ""

    def _units(self, peak, rms, zero):
        """``(scale, mu, factor)`` from the columns' largest centred absolute values and the
        root mean squares of the centred data divided by them: the data in the fit's units
        are ``centred / peak / rms * factor`` (``factor`` None without shrinkage)."""
        rms[zero] = 1.0
        if not self.shrinkage:
            return peak * rms, 1.0, None
        # With shrinkage a, the unit is the shrunk standard deviation sqrt((1 - a) v_j + a mu),
        # mu = mean(v), computed relative to the largest sd (no overflow). The shrunk covariance
        # then has a unit diagonal and the ridge target of column j is mu / its shrunk variance,
        # at most 1 / a: columns far below the others are pure ridge, as on the covariance scale.
        sd = np.where(zero, 0.0, peak * rms)
        top = float(np.max(sd))
        w2 = (sd / top) ** 2
        mean_w2 = float(np.mean(w2))
        shrunk = (1.0 - self.shrinkage) * w2 + self.shrinkage * mean_w2
        return top * np.sqrt(shrunk), mean_w2 / shrunk, np.sqrt(w2 / shrunk)

    def _check_enough_samples(self, n, max_size, what, bias_correction=False):
        """Raise when the largest block needs more samples (only with ``shrinkage == 0``).

        A block of ``m`` variables needs ``m <= dof`` (``dof = n - 1``, or ``n``
        with ``assume_centered``) to be invertible, and ``m <= dof - 2`` for
        the inverse-Wishart bias correction (a positive factor).
        """
        if self.shrinkage:
            return
        dof = n if self.assume_centered else n - 1
        samples = f"{n:g} {'' if self.assume_centered else 'centred '}samples"
        if n != round(n):  # a sum of weights: say so, and how to give it its meaning
            samples += (
                " (the sum of sample_weight: a row of weight w counts as w rows; rescale the weights "
                "to the number of rows they stand for)"
            )
        if max_size > dof:
            need = max_size + (0 if self.assume_centered else 1)
            raise ValueError(
                f"{type(self).__name__} needs at least {need} samples (rows) for this graph: "
                f"{what} has {max_size} variables, and the sample covariance of {max_size} "
                f"variables estimated from {samples} "
                "is singular. Collect more samples, use a sparser graph, or set shrinkage > 0 "
                "to fit (1 - shrinkage) * S + shrinkage * mean(diag(S)) * I instead."
            )
        if bias_correction and max_size > dof - 2:
            need = max_size + (2 if self.assume_centered else 3)
            raise ValueError(
                f"{type(self).__name__} with bias_correction=True needs at least {need} samples "
                f"(rows) for this graph: {what} has {max_size} variables, and the inverse-Wishart "
                f"correction factor (n - |A| - {1 if self.assume_centered else 2}) / n is not positive "
                f"with n = {samples}. Collect more samples, set bias_correction=False, "
                "or set shrinkage > 0 (the correction is then not applied)."
            )

    def _store(self, precision, is_pd, logdet, covariance=None):
        """Store the fit, mapping it back from standardised units.

        ``precision``, ``logdet`` and ``covariance`` are those of the
        standardised data; ``precision_ = D^{-1} precision D^{-1}`` and
        ``log det precision_ = logdet - 2 sum(log scale_)`` with
        ``D = diag(scale_)``. Raises when ``precision_`` would overflow and
        warns (:class:`ScaleWarning`) when some of its entries underflow or
        ``covariance_`` would overflow; scoring uses the standardised
        precision, so it is unaffected by either.
        """
        p = precision.shape[0]
        scale = self.scale_
        self.standardized_precision_ = precision
        precision = precision.copy()
        rows = np.repeat(np.arange(p), np.diff(precision.indptr))
        cols = precision.indices
        with np.errstate(over="ignore", under="ignore"):  # dividing in one order keeps the symmetry exact
            precision.data = precision.data / scale[np.minimum(rows, cols)] / scale[np.maximum(rows, cols)]
        name = type(self).__name__
        span = f"column standard deviations from {scale.min():.3g} to {scale.max():.3g}"
        if not np.all(np.isfinite(precision.data)):
            raise ValueError(
                f"{name}: the precision in the units of X overflows float64 ({span}; its entries "
                "are about 1 / (scale_i scale_j)). Multiply X by a constant (the estimate of "
                "X * c is precision / c**2)."
            )
        notes = []
        lost = (np.abs(precision.data) < _TINY) & (self.standardized_precision_.data != 0)
        if lost.any():
            notes.append(f"{int(lost.sum())} entries of precision_ underflow float64 (to zero or subnormal numbers)")
        sparse = self.sparse
        if sparse == "auto":
            sparse = p > DENSE_PRECISION_MAX_FEATURES
        self.precision_ = precision if sparse else precision.toarray()
        self.is_positive_definite_ = bool(is_pd)
        logdet = logdet - 2.0 * float(np.sum(np.log(scale)))
        self.log_partition_ = 0.5 * (p * np.log(2 * np.pi) - logdet) if is_pd else np.nan
        store = self.store_covariance
        if store == "auto":
            store = p <= DENSE_MAX_FEATURES
        self.covariance_ = None
        if store and is_pd:
            if covariance is None:
                covariance = np.linalg.inv(self.standardized_precision_.toarray())
                covariance = 0.5 * (covariance + covariance.T)
            with np.errstate(over="ignore", under="ignore"):
                covariance = covariance * scale[:, None] * scale[None, :]
                covariance = np.triu(covariance) + np.triu(covariance, 1).T
            if np.all(np.isfinite(covariance)):
                self.covariance_ = covariance
            else:
                notes.append("covariance_ overflows float64 and is not stored")
        if notes:
            warn(
                f"{name}: at the scale of X ({span}), " + " and ".join(notes) + ". score, "
                "score_samples and mahalanobis work in standardised units and are exact; "
                "precision_ = standardized_precision_ / outer(scale_, scale_).",
                ScaleWarning,
            )

    # -- the state protocol of skmrf.io (skmrf/estimators/_protocol.py) -------
    __skmrf_kind__ = "gaussian"

    def __skmrf_state__(self):
        """The fitted model's defining arrays: ``location``, ``scale``, ``precision`` (the
        standardised one) and ``adjacency`` as CSR arrays, ``is_positive_definite`` and
        ``log_partition``. The estimator's own arrays, not copies."""
        check_is_fitted(self)
        return {
            "location": self.location_,
            "scale": self.scale_,
            "precision": sp.csr_array(self.standardized_precision_),
            "adjacency": sp.csr_array(self.adjacency_),
            "is_positive_definite": bool(self.is_positive_definite_),
            "log_partition": float(self.log_partition_),
        }

    def __skmrf_set_state__(self, state):
        """Set the fitted attributes from :meth:`__skmrf_state__`'s dict as :meth:`_store` does at
        fit (``precision_`` and ``covariance_`` derived, a :class:`ScaleWarning` or a ValueError as
        there); ``log_partition_`` is the state's, bit for bit."""
        self.location_ = np.array(state["location"], dtype=np.float64)
        self.scale_ = scale = np.array(state["scale"], dtype=np.float64)
        self.adjacency_ = sp.csr_array(state["adjacency"], copy=True)
        is_pd, log_partition = bool(state["is_positive_definite"]), float(state["log_partition"])
        # _store maps log det back with -2 sum(log scale_): give it the standardised one.
        p = len(scale)
        logdet = p * np.log(2 * np.pi) - 2.0 * log_partition + 2.0 * float(np.sum(np.log(scale))) if is_pd else 0.0
        self._store(sp.csr_array(state["precision"], copy=True), is_pd, logdet)
        self.log_partition_ = np.float64(log_partition) if is_pd else np.nan
        return self
