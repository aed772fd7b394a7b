"""MLE-induced likelihood (Liu and Zheng): coin-tossing marginals of an agreement model, linked by a copula.

The model is the agreement model of :mod:`skmrf.model.agreement`: a binary pairwise MRF with
one parameter ``theta_j`` in ``(0, 1)`` per edge ``j = (u, v)``, potential
``theta_j ** I[x_u == x_v] * (1 - theta_j) ** I[x_u != x_v]`` and no node potentials.

- the agreement counts (Eq. 6) and the external effect induced by the MLE (Eq. 5):
  :func:`agreement_counts`, :func:`induced_eta`;
- the marginal likelihood of each ``theta_j`` (Eq. 3), its CDF and the copula's normal scores
  (Eq. 8) are kernels of :mod:`skmrf.estimators._coin_tossing`;
- :class:`MLEInducedLikelihood` validates, counts, fits the MLE and evaluates the joint
  likelihood with the independent (Eq. 7) or the exchangeable Gaussian copula (Eq. 9).
"""

from __future__ import annotations

import warnings
from numbers import Real
from typing import NamedTuple

import networkx as nx
import numpy as np
from scipy.special import expit, gammaln, logit, ndtr
from sklearn.base import BaseEstimator, clone
from sklearn.frozen import FrozenEstimator

from ..graphs import MRFGraph, resolve_graph
from ..inference.junction_tree import TreewidthError
from ..model.agreement import agreement_matrix, check_agreement_parameters
from ..solvers import THETA_BOUND
from ..utils._sklearn_compat import StrOptions, _fit_context, check_is_fitted, validate_data
from ..utils.validation import check_states, column_names, fit_column_labels
from ._base import BaseDiscreteMRF
from ._coin_tossing import marginal_log_likelihood_kernel, normal_scores, score_tables
from ._existence import NoFiniteEstimateWarning
from .exact import ExactMaxLikelihood
from .lap import LAPEstimator

__all__ = ["MLEInducedLikelihood", "agreement_counts", "induced_eta", "parameter_edges"]

#: Largest gap between a fitted model's unary parameters and those its couplings imply before
#: ``fit`` warns that the model has node potentials.
UNARY_ATOL = 1e-6
_MIN = np.minimum.reduce  # the ufunc's own reduce: ndarray.min adds a Python-level wrapper
#: ``fit`` warns that the MLE does not exist when an estimate's odds ``theta / (1 - theta)`` exceed
#: ``BOUNDARY_ODDS * (n + 1)`` (or are below the inverse): more extreme, by this factor, than any
#: agreement rate of ``n`` rows. Where the data lie on a face of the model's marginal polytope the
#: likelihood grows towards the boundary and the solver stops wherever its gradient is small:
#: there the odds come out far beyond this (1e5 * n and more); a finite MLE does not.
BOUNDARY_ODDS = 100.0
#: ... or when a coupling ``J = 2 logit(theta)`` is within this of the solvers' box ``|J| <= THETA_BOUND``,
#: where a divergent parameter stops (for ``n`` so large that the odds above are out of reach).
BOX_MARGIN = 2.0
#: Variables up to which the warning names an unobserved agreement pattern (by enumeration).
PATTERN_MAX_VARIABLES = 16


def agreement_counts(X, edges):
    """Number of rows in which the two ends of each edge agree (``alpha_0`` of Eq. 6).

    Parameters
    ----------
    X : ndarray of shape (..., n_samples, n_features)
        Binary states (any leading batch axes).
    edges : ndarray of int of shape (p, 2)
        Column indices of the ends of each edge.

    Returns
    -------
    ndarray of int64 of shape (..., p)
        ``sum_i I[x_u^i == x_v^i]`` per edge.
    """
    edges = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
    return np.count_nonzero(X[..., edges[:, 0]] == X[..., edges[:, 1]], axis=-2).astype(np.int64)


def parameter_edges(graph, resolved, owner="The estimator"):
    """The edges of the agreement parameters, in order, as column pairs.

    An edge list keeps the order (and orientation) given, a networkx graph the order of
    ``G.edges``; other forms (shorthands, adjacency matrices, ``MRFGraph``) the sorted edges of
    ``resolved``.

    Parameters
    ----------
    graph : the ``graph`` parameter as given
    resolved : MRFGraph
        ``graph`` resolved against the data.
    owner : str
        Named in the error messages.

    Returns
    -------
    ndarray of int of shape (p, 2)

    Raises
    ------
    ValueError
        If an edge repeats, or there is none.
    """
    if isinstance(graph, (str, MRFGraph)) or not isinstance(graph, (nx.Graph, list, tuple)):
        edges = resolved.edges
    else:
        pairs = graph.edges if isinstance(graph, nx.Graph) else [e for e in graph if np.ndim(e) and len(e) == 2]
        labels = resolved.names
        column = (lambda v: int(v)) if labels is None else {v: i for i, v in enumerate(labels)}.__getitem__
        edges, seen = [], {}
        for u, v in pairs:
            e = (column(u), column(v))
            key = (min(e), max(e))
            if key in seen:
                raise ValueError(f"Edge {(u, v)!r} repeats edge {seen[key]!r}; give each edge once.")
            seen[key] = (u, v)
            edges.append(e)
    if not edges:
        raise ValueError(
            f"The graph has no edges, so the agreement model has no parameters; {owner} needs at least one edge."
        )
    return np.array(edges, dtype=np.intp).reshape(-1, 2)


def induced_eta(lambda_hat, theta_hat):
    """The external effect ``eta0`` that the MLEs of ``lambda`` and ``theta`` induce (Eq. 5).

    Parameters
    ----------
    lambda_hat : array-like of float
        Agreement rates (Eq. 6), in ``(0, 1)``.
    theta_hat : array-like of float
        Maximum-likelihood agreement parameters, in ``(0, 1)``.

    Returns
    -------
    ndarray of float
        ``lambda (1 - theta) / (lambda + theta - 2 lambda theta)``, written as
        ``lambda (1 - theta) / (lambda (1 - theta) + theta (1 - lambda))`` (a sum of
        positive terms, so no cancellation).
    """
    lam = np.asarray(lambda_hat, dtype=np.float64)
    th = np.asarray(theta_hat, dtype=np.float64)
    num = lam * (1.0 - th)
    return num / (num + th * (1.0 - lam))


def _exchangeable_gaussian_constants(rho, p):
    """``(log det R / 2, rho / (2 (1 - rho)), k / (2 (1 - rho)))`` with ``k = rho / (1 + (p - 1) rho)``.

    For the exchangeable correlation matrix ``R = (1 - rho) I + rho 1 1^T``:
    ``det R = (1 - rho)^(p - 1) (1 + (p - 1) rho)`` and
    ``R^{-1} = (I - k 1 1^T) / (1 - rho)``, so
    ``u^T (R^{-1} - I) u = (rho sum(u^2) - k sum(u)^2) / (1 - rho)``.
    """
    half_log_det = 0.5 * ((p - 1) * np.log1p(-rho) + np.log1p((p - 1) * rho))
    k = rho / (1.0 + (p - 1) * rho)
    return half_log_det, 0.5 * rho / (1.0 - rho), 0.5 * k / (1.0 - rho)


# -- the estimator ----------------------------------------------------------------------------


class _LikelihoodConstants(NamedTuple):
    """What :meth:`MLEInducedLikelihood.log_likelihood` needs, fixed at fit."""

    p: int
    eta: np.ndarray
    rest: np.ndarray  # 1 - eta0
    coef: np.ndarray  # (3 p,): alpha_0, n - alpha_0, -n against log theta, log(1 - theta), log D
    const: float  # sum_j log binom(n, alpha_0j) + alpha_0j log eta0_j + (n - alpha_0j) log(1 - eta0_j)
    copula: tuple  # (half log det R, c2, c1) for copula="gaussian", else None
    # The CDF's log-density l(z) at z = logit(theta), from the same three logarithms:
    # l = (alpha_0 + 1) log theta + (n - alpha_0 + 1) log(1 - theta) - n log D + n log(1 - eta0) + off.
    coef_density: np.ndarray  # (3, p)
    const_density: np.ndarray  # (p,)


def _is_fitted(est):
    return hasattr(est, "model_")


class MLEInducedLikelihood(BaseEstimator):
    """MLE-induced likelihood of the agreement model of a binary pairwise MRF (Liu and Zheng).

    The likelihood of an MRF is intractable; this approximation replaces it by a product of
    one-dimensional marginal likelihoods, one per edge parameter, linked by a copula. The
    marginal of ``theta_j`` is the likelihood of a coin tossed under an external effect
    ``eta0_j`` (Eq. 3), where ``eta0_j`` is set so that the marginal peaks at the MLE
    ``theta_hat_j`` (Eq. 5). Its cost is linear in the number of edges and independent of the
    graph's structure, which makes it cheap enough for Metropolis-Hastings.

    The model is the agreement model (:mod:`skmrf.model.agreement`): edge ``j = (u, v)`` has
    potential ``theta_j ** I[x_u == x_v] * (1 - theta_j) ** I[x_u != x_v]``,
    ``0 < theta_j < 1``, and there are no node potentials.

    Parameters
    ----------
    graph : networkx.Graph, list of pairs, array-like, sparse matrix or str, default="chain"
        A pairwise graph: a networkx graph (nodes map to columns in ``list(G.nodes)``
        order, or by name for a DataFrame), a list of edges ``(u, v)``, a square adjacency
        matrix, or one of ``"chain"``, ``"complete"``, ``"grid:RxC"``. Resolved in ``fit``
        into ``graph_``. It also fixes the order of the parameters (``edges_``): the order of
        a list (each pair as given), of ``G.edges`` for a networkx graph, and otherwise the
        sorted edges ``graph_.edges``. Entries of one variable in a list add no parameter
        (the model has no node potentials).
    copula : {"independent", "gaussian"}, default="independent"
        How the marginal likelihoods are linked: their product (Eq. 7), or the product times
        the exchangeable Gaussian copula density (Eqs. 8-9).
    rho : float, default=0.0
        The common off-diagonal correlation of the Gaussian copula. With ``p`` edges it must
        satisfy ``-1 / (p - 1) < rho < 1`` (so that ``R`` is positive definite); with
        ``copula="independent"`` it must be 0.
    mle : estimator or None, default=None
        Where the MLE ``theta_hat_`` comes from. ``None``: :class:`ExactMaxLikelihood`
        (``alpha=0``) when the junction tree fits, else :class:`LAPEstimator` (``alpha=0``),
        fitted on the flip-symmetrised data ``[X; 1 - X]``. An unfitted skmrf discrete
        estimator: cloned, given this estimator's ``graph_`` (and ``n_states=2``), and fitted
        on the same data (its own ``alpha`` is kept; a ridge is not flip-invariant, so with
        ``alpha > 0`` its node potentials are small but not zero and only its couplings are
        used). A fitted estimator (or a :class:`sklearn.frozen.FrozenEstimator` of one): used
        as it is, through its couplings ``theta_j = expit(J_j / 2)``; ``fit`` warns if its
        unary parameters are not those of an agreement model. :func:`sklearn.base.clone`
        un-fits a plain fitted estimator (it clones parameters), a ``FrozenEstimator`` stays
        fitted.

    Attributes
    ----------
    graph_ : MRFGraph
        The resolved graph.
    edges_ : ndarray of int of shape (p, 2)
        The columns of the ends of each edge, in parameter order (see ``graph``).
    n_samples_ : int
        Number of rows ``n``.
    n_agree_ : ndarray of int of shape (p,)
        ``alpha_0``: rows in which the ends of each edge agree.
    lambda_hat_ : ndarray of shape (p,)
        ``n_agree_ / n``, the MLE of ``lambda`` (Eq. 6).
    theta_hat_ : ndarray of shape (p,)
        The MLE of the agreement parameters.
    eta0_ : ndarray of shape (p,)
        The induced external effect of each edge (Eq. 5).
    mle_ : estimator
        The fitted estimator ``theta_hat_`` was read from.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit. Defined only when X has feature
        names that are all strings.

    Warns
    -----
    NoFiniteEstimateWarning
        When the agreement-model MLE does not exist: an estimate's odds
        ``theta / (1 - theta)`` are beyond ``100 * (n + 1)`` (or below the inverse), more
        extreme than any agreement rate ``n`` rows can show by a factor 100, or its coupling
        ``2 logit(theta)`` is within 2 of the solvers' box ``|J| <= 30`` (the data lie
        on a face of what the model can produce: some pattern of agreements it allows never
        occurs, and the likelihood grows towards the boundary). The message names the edge
        and, for up to 16 variables, an unobserved agreement pattern. ``theta_hat_`` is then
        where the solver stopped; an ``mle`` with ``alpha > 0`` gives a finite estimate.

    See Also
    --------
    skmrf.model.agreement_to_mrf : The :class:`DiscreteMRF` of agreement parameters.
    ExactMaxLikelihood, LAPEstimator

    Notes
    -----
    With ``alpha_0`` agreements in ``n`` rows and ``lambda = eta0 theta / (eta0 theta +
    (1 - eta0)(1 - theta))`` (Eqs. 1 and 4), the marginal likelihood of ``theta_j`` (Eq. 3) is

    .. math::

        L_j(\\theta) = \\binom{n}{\\alpha_0} \\lambda^{\\alpha_0} (1 - \\lambda)^{n - \\alpha_0},

    maximised where ``lambda = alpha_0 / n``, which Eq. 5 places at ``theta = theta_hat_j``.
    The independent copula gives ``log L = sum_j log L_j`` (Eq. 7); the exchangeable
    Gaussian copula adds ``-log det(R) / 2 - u^T (R^{-1} - I) u / 2`` with
    ``u_j = Phi^{-1}(F_j(theta_j))``, ``F_j`` the CDF of ``L_j`` normalised over ``(0, 1)``
    (Eqs. 8-9), in O(p) per vector from the closed forms of ``det R`` and ``R^{-1}``.

    The agreement model is the flip-symmetric part of the binary pairwise family (its
    probabilities do not change when every variable is flipped). The full family's
    likelihood on ``[X; 1 - X]`` is invariant under the flip and has a unique maximiser, which
    is therefore flip-symmetric: an agreement model. On that sub-family the likelihood of
    ``[X; 1 - X]`` is twice that of ``X``, so this maximiser is the agreement-model MLE of
    ``X``.

    ``F_j`` is computed in ``z = logit(theta)``, where the density of the normalised
    ``L_j`` is log-concave and analytic in a strip of half-width ``pi`` whatever ``eta0_j``
    (:mod:`skmrf.estimators._coin_tossing`). At fit it is integrated by 8-point
    Gauss-Legendre on 1600 panels per edge, uniform in the signed root
    ``y = sign(z - z*) sqrt(2 (l(z*) - l(z)))`` (at most 2 nats of change per panel), with
    the panel masses accumulated in log form from both ends, so that ``F`` below the mode
    and ``1 - F`` above it keep their relative precision deep into the tails. The scores
    ``u_j`` computed from them at the Chebyshev points of every fifth panel are
    interpolated by polynomials of degree 6, which a query evaluates: ``u`` agrees with
    adaptive quadrature of Eq. 3 to about 1e-11, and ``F`` to a relative 1e-11 in the body.
    ``u`` is clipped to ``+-37.5``: ``Phi(-37.5) = 4.6e-308`` is at the bottom of double
    precision, and the clip only binds where the marginal likelihood is about 700 nats
    below its peak.

    ``fit`` costs one MLE fit plus O(p) tables (23 kB per edge); :meth:`log_likelihood`
    costs O(p) per vector: 3 logarithms per edge for the independent copula, plus a
    polynomial of degree 6 per edge for the Gaussian copula.

    References
    ----------
    Jie Liu and Hao Zheng. MLE-induced likelihood for Markov random fields. 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from skmrf import MLEInducedLikelihood
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0], [1, 0, 1]])
    >>> est = MLEInducedLikelihood(graph="chain").fit(X)
    >>> est.n_agree_
    array([4, 2])
    >>> bool(np.allclose(est.eta0_, 0.5))  # a tree: the MLE is the agreement rate
    True
    >>> round(float(est.log_likelihood([0.6, 0.4])), 4)
    -2.3357
    """

    _parameter_constraints: dict = {
        "graph": BaseDiscreteMRF._parameter_constraints["graph"],
        "copula": [StrOptions({"independent", "gaussian"})],
        "rho": [Real],
        "mle": [None, BaseDiscreteMRF, FrozenEstimator],
    }

    def __init__(self, graph="chain", copula="independent", rho=0.0, mle=None):
        self.graph = graph
        self.copula = copula
        self.rho = rho
        self.mle = mle

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        tags.input_tags.allow_nan = False
        return tags

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Count agreements, fit the MLE and derive the marginal likelihoods (Eqs. 3, 5, 6).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary states 0/1; never modified.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X = self._validate_binary(X)
        self.edges_ = self._parameter_edges(X.shape[1])
        self._check_copula(len(self.edges_))
        self.n_samples_ = X.shape[0]
        self.n_agree_ = agreement_counts(X, self.edges_)
        self.lambda_hat_ = self.n_agree_ / self.n_samples_
        self._check_interior()
        self.mle_, self.theta_hat_ = self._agreement_mle(X)
        self._warn_if_on_boundary(X)
        self.eta0_ = induced_eta(self.lambda_hat_, self.theta_hat_)
        self._precompute()
        return self

    # -- the stages of fit ----------------------------------------------------------------
    def _validate_binary(self, X):
        fit_column_labels(self, X)
        X = validate_data(self, X, reset=True, dtype=None, ensure_all_finite=False, ensure_min_samples=1)
        names = column_names(self)
        Xi = check_states(X, feature_names=names)
        high = Xi > 1
        if high.any():
            r, j = np.argwhere(high)[0]
            label = f"column {j}" if names is None else f"column {j} ({names[j]!r})"
            raise ValueError(
                f"{type(self).__name__} models binary data (states 0 and 1), but {label} has "
                f"the value {Xi[r, j]} at row {r}. Binarise X first."
            )
        return Xi

    def _parameter_edges(self, n_features):
        """Resolve the graph; the edges in parameter order (see the ``graph`` parameter)."""
        self.graph_ = resolve_graph(self.graph, n_features, column_names(self))
        wide = [f for f in self.graph_.factors if len(f) > 2]
        if wide:
            raise ValueError(
                f"{type(self).__name__} needs a pairwise graph (the agreement model has one parameter "
                f"per edge), but clique {wide[0]} has {len(wide[0])} variables."
            )
        return parameter_edges(self.graph, self.graph_, type(self).__name__)

    def _check_copula(self, p):
        rho = float(self.rho)
        if self.copula == "independent":
            if rho != 0.0:
                raise ValueError(
                    f"rho={self.rho!r} is the correlation of the Gaussian copula; it needs "
                    "copula='gaussian' (the independent copula has rho=0)."
                )
            return
        low = -1.0 / (p - 1) if p > 1 else -np.inf
        if not low < rho < 1.0:
            raise ValueError(
                f"rho={self.rho!r} is outside (-1/(p-1), 1) = ({low:.6g}, 1) for p={p} edges: the "
                "exchangeable correlation matrix R (1 on the diagonal, rho off it) is positive "
                "definite only there."
            )

    def _check_interior(self):
        bad = np.flatnonzero((self.n_agree_ == 0) | (self.n_agree_ == self.n_samples_))
        if bad.size:
            j = int(bad[0])
            u, v = (int(x) for x in self.edges_[j])
            always = "agree" if self.n_agree_[j] else "disagree"
            raise ValueError(
                f"The ends of edge ({u}, {v}) {always} in all {self.n_samples_} rows, so "
                f"lambda_hat = {self.lambda_hat_[j]:g}: the agreement-model MLE is on the boundary "
                "(theta = 0 or 1) and Eq. 5 is undefined. Remove the edge or add data."
            )

    def _agreement_mle(self, X):
        """The fitted MLE estimator, and ``theta_hat`` read from its couplings."""
        est, prefit = self._mle_estimator(X)
        model = est.model_
        eta = np.array([model.potential((int(u), int(v))).item() for u, v in self.edges_]) / 2.0
        if prefit:
            gap = float(np.max(np.abs(model.theta - agreement_matrix(model, self.edges_) @ eta)))
            if gap > UNARY_ATOL:
                warnings.warn(
                    f"The fitted mle's model has node potentials, which the agreement model lacks: its "
                    f"unary parameters differ from those its couplings imply by up to {gap:.3g} (more "
                    f"than {UNARY_ATOL:g}). Only its couplings are used (theta_j = expit(J_j / 2)). An "
                    "unfitted estimator would be fitted exactly, on the flip-symmetrised data [X; 1 - X].",
                    UserWarning,
                    stacklevel=4,
                )
        theta = expit(eta)
        bad = np.flatnonzero((theta <= 0) | (theta >= 1))
        if bad.size:
            u, v = (int(x) for x in self.edges_[bad[0]])
            raise ValueError(
                f"The MLE of edge ({u}, {v}) is theta = {theta[bad[0]]!r} (coupling {2 * eta[bad[0]]:.6g}), "
                "on the boundary in double precision; Eq. 5 is undefined."
            )
        return est, theta

    def _warn_if_on_boundary(self, X):
        """Warn (naming the edge and an unobserved agreement pattern) when the MLE does not exist."""
        eta = logit(self.theta_hat_)
        limit = min(np.log(BOUNDARY_ODDS * (self.n_samples_ + 1)), (THETA_BOUND - BOX_MARGIN) / 2)
        far = np.flatnonzero(np.abs(eta) > limit)
        if not far.size:
            return
        j = int(far[np.argmax(np.abs(eta[far]))])
        u, v = (int(x) for x in self.edges_[j])
        pattern = self._unobserved_pattern(X)
        seen = f" The data never show {pattern}, which the model allows." if pattern else ""
        warnings.warn(
            f"The agreement-model MLE does not exist: the MLE of edge ({u}, {v}) came out as theta_hat = "
            f"{self.theta_hat_[j]:.7g} though its ends agree in {self.lambda_hat_[j]:.3g} of the rows ({far.size} of "
            f"{len(eta)} edges with odds beyond {np.exp(limit):.3g}, more extreme than any agreement rate of "
            f"{self.n_samples_} rows or at the solver's box): the likelihood keeps "
            f"growing towards theta = {int(eta[j] > 0)}, and theta_hat_ is where the solver stopped.{seen} The "
            "MLE-induced likelihood is centred on it. Pass an mle with a ridge (e.g. "
            "mle=ExactMaxLikelihood(alpha=0.01)) for a finite estimate, or add data.",
            NoFiniteEstimateWarning,
            stacklevel=4,
        )

    def _unobserved_pattern(self, X):
        """The agreement pattern the fitted MLE makes least likely among those no row shows, as text.

        By enumeration of the ``2 ** (d - 1)`` states up to a flip; None beyond
        ``PATTERN_MAX_VARIABLES`` variables or if every possible pattern is observed.
        """
        d = X.shape[1]
        if d > PATTERN_MAX_VARIABLES:
            return None
        E = self.edges_
        states = (np.arange(2 ** (d - 1))[:, None] >> np.arange(d)[None, :]) & 1
        possible = np.unique(states[:, E[:, 0]] == states[:, E[:, 1]], axis=0)
        observed = {row.tobytes() for row in (X[:, E[:, 0]] == X[:, E[:, 1]])}
        unseen = possible[[row.tobytes() not in observed for row in possible]]
        if not len(unseen):
            return None
        log_p = unseen @ np.log(self.theta_hat_) + ~unseen @ np.log1p(-self.theta_hat_)
        t = unseen[int(np.argmin(log_p))]
        name = [f"({int(a)}, {int(b)})" for a, b in E]
        agree = ", ".join(n for n, x in zip(name, t) if x)
        disagree = ", ".join(n for n, x in zip(name, t) if not x)
        parts = ([f"the ends of edges {agree} agree"] if agree else []) + (
            [f"the ends of edges {disagree} disagree"] if disagree else []
        )
        return "a row in which " + " and ".join(parts)

    def _mle_estimator(self, X):
        """``(fitted estimator, whether it came fitted)``, per the ``mle`` parameter."""
        mle = self.mle
        if mle is not None and not isinstance(mle, (BaseDiscreteMRF, FrozenEstimator)):
            # Validated by _parameter_constraints too, but a caller's fit may skip nested validation.
            raise ValueError(
                f"mle must be None, an skmrf discrete estimator (fitted or not, e.g. ExactMaxLikelihood(alpha=0.01)) "
                f"or a FrozenEstimator of a fitted one; got {mle!r}."
            )
        if mle is not None and _is_fitted(mle):
            inner = mle.estimator if isinstance(mle, FrozenEstimator) else mle
            if not isinstance(inner, BaseDiscreteMRF):
                raise ValueError(f"mle must hold an skmrf discrete estimator; got {type(inner).__name__}.")
            self._check_fitted_graph(mle.model_)
            return mle, True
        if isinstance(mle, FrozenEstimator):
            raise ValueError("mle is a FrozenEstimator of an unfitted estimator; fit it first, or pass it unwrapped.")
        sym = np.vstack([X, 1 - X])  # flip-symmetrised: its MLE is an agreement model (see Notes)
        if mle is None:
            try:
                return ExactMaxLikelihood(self.graph_, alpha=0.0).fit(sym), False
            except TreewidthError:
                return LAPEstimator(self.graph_, alpha=0.0).fit(sym), False
        est = clone(mle)
        params = {"graph": self.graph_}
        if "n_states" in est.get_params():
            params["n_states"] = 2
        return est.set_params(**params).fit(sym), False

    def _check_fitted_graph(self, model):
        if model.n_variables != self.n_features_in_:
            raise ValueError(
                f"The fitted mle has {model.n_variables} variables but X has {self.n_features_in_} columns."
            )
        wide = np.flatnonzero(np.asarray(model.n_states) != 2)
        if wide.size:
            j = int(wide[0])
            names = getattr(self, "feature_names_in_", None)
            label = f"column {j}" if names is None else f"column {j} ({names[j]!r})"
            raise ValueError(
                f"The fitted mle models {label} with {int(model.n_states[j])} states, but the agreement model "
                "(and so the MLE-induced likelihood) is binary. Fit the mle on binary data with n_states=2, or "
                "pass it unfitted."
            )
        ours = {(min(u, v), max(u, v)) for u, v in self.edges_.tolist()}
        theirs = set(model.graph.edges)
        if ours != theirs:
            extra = sorted(theirs - ours)
            missing = sorted(ours - theirs)
            raise ValueError(
                "The fitted mle's graph differs from this estimator's: "
                + (f"edges {missing[:5]} are missing" if missing else "")
                + ("; " if missing and extra else "")
                + (f"it has extra edges {extra[:5]}" if extra else "")
                + ". Fit it on the same graph, or pass it unfitted."
            )

    def _precompute(self):
        """Constants of the likelihood (Eq. 7) and the CDF tables of the copula (Eq. 8)."""
        a = self.n_agree_.astype(np.float64)
        n = float(self.n_samples_)
        eta = self.eta0_
        p = len(a)
        log_binom = gammaln(n + 1.0) - gammaln(a + 1.0) - gammaln(n - a + 1.0)
        const = float(np.sum(log_binom + a * np.log(eta) + (n - a) * np.log1p(-eta)))
        copula = None
        if self.copula == "gaussian":
            copula = _exchangeable_gaussian_constants(float(self.rho), p)
        self._scores = score_tables(a, n, eta)
        self._lik = _LikelihoodConstants(
            p=p,
            eta=eta,
            rest=1.0 - eta,
            coef=np.concatenate([a, n - a, np.full(p, -n)]),
            const=const,
            copula=copula,
            coef_density=np.stack([a + 1.0, n - a + 1.0, np.full(p, -n)]),
            const_density=n * np.log1p(-eta) + self._scores.off,
        )

    # -- evaluation ------------------------------------------------------------------------
    def _edge_queries(self, j, theta_j):
        """``j`` and ``theta_j`` broadcast together and checked."""
        check_is_fitted(self)
        j = np.asarray(j)
        if j.dtype.kind not in "iu":
            raise ValueError(f"j must be an integer edge index (or array of them); got dtype {j.dtype}.")
        p = len(self.edges_)
        if j.size and (j.min() < 0 or j.max() >= p):
            bad = j.min() if j.min() < 0 else j.max()
            raise ValueError(f"Edge index {int(bad)} is out of range: there are {p} edges (0..{p - 1}).")
        theta = np.asarray(theta_j, dtype=np.float64)
        j, theta = np.broadcast_arrays(j, theta)
        flat = np.atleast_1d(theta)
        check_agreement_parameters(flat, flat.shape[-1], name="theta_j")
        return j, theta

    def marginal_log_likelihood(self, j, theta_j):
        """Log marginal likelihood of ``theta_j`` (Eq. 3), with its binomial coefficient.

        Parameters
        ----------
        j : int or array-like of int
            Edge indices (into ``edges_``), broadcastable with ``theta_j``.
        theta_j : float or array-like of float
            Agreement parameters in ``(0, 1)``.

        Returns
        -------
        ndarray of float
            ``log L_j(theta_j)``, of the broadcast shape of ``j`` and ``theta_j``.
        """
        j, theta = self._edge_queries(j, theta_j)
        return marginal_log_likelihood_kernel(theta, self.n_agree_[j], self.n_samples_, self.eta0_[j])

    def marginal_cdf(self, j, theta_j):
        """CDF ``F_j(theta_j)`` of the marginal likelihood normalised over ``(0, 1)`` (Eq. 8).

        Parameters
        ----------
        j : int or array-like of int
            Edge indices (into ``edges_``), broadcastable with ``theta_j``.
        theta_j : float or array-like of float
            Agreement parameters in ``(0, 1)``.

        Returns
        -------
        ndarray of float
            ``int_0^theta L_j / int_0^1 L_j``, of the broadcast shape of ``j`` and
            ``theta_j``: ``Phi(u_j)`` of the unclipped normal score (see
            :meth:`normal_scores`), so relative to ``F`` in the lower tail and to ``1 - F`` in
            the upper one; exactly 0 or 1 beyond ``exp(-790)`` from either end.
        """
        j, theta = self._edge_queries(j, theta_j)
        shape = theta.shape
        j, theta = np.atleast_1d(j), np.atleast_1d(theta)
        return ndtr(normal_scores(logit(theta), self._scores.take(j), clip=False)).reshape(shape)

    def normal_scores(self, theta):
        """The copula's normal scores ``u_j = Phi^{-1}(F_j(theta_j))`` (Eq. 8).

        Parameters
        ----------
        theta : array-like of shape (..., p)
            Agreement parameter vectors in ``(0, 1)``, edges in the order of ``edges_``.

        Returns
        -------
        ndarray of shape (..., p)
            The scores, clipped to ``[-37.5, 37.5]``. They are interpolated from values that
            were computed from ``log F`` below the mode and ``log(1 - F)`` above it, so both
            tails keep their precision.
        """
        check_is_fitted(self)
        theta = check_agreement_parameters(theta, len(self.edges_))
        return normal_scores(logit(theta), self._scores)

    def log_likelihood(self, theta):
        """The MLE-induced log-likelihood of agreement parameter vectors (Eq. 7 or Eq. 9).

        Parameters
        ----------
        theta : array-like of shape (..., p)
            Agreement parameter vectors in ``(0, 1)``, edges in the order of ``edges_``;
            any leading axes are a batch.

        Returns
        -------
        ndarray of shape (...)
            ``sum_j log L_j(theta_j)`` (independent copula, Eq. 7), plus
            ``log c_R(u(theta))`` for the Gaussian copula (Eqs. 8-9).

        Raises
        ------
        ValueError
            If an entry of ``theta`` is outside ``(0, 1)``, naming its index.
        """
        try:
            lik = self._lik
        except AttributeError:
            check_is_fitted(self)
            raise
        theta = np.asarray(theta, dtype=np.float64)
        shape, p = theta.shape, lik.p
        if not shape or shape[-1] != p:
            check_agreement_parameters(theta, p)
        # log theta, log(1 - theta) and log D (D = eta theta + (1 - eta)(1 - theta)) in one call.
        logs = np.empty(shape[:-1] + (3, p))
        logs[..., 0, :] = theta
        rest = np.subtract(1.0, theta, out=logs[..., 1, :])
        if not _MIN(logs[..., :2, :], axis=None, initial=np.inf) > 0:  # theta and 1 - theta > 0, no NaN
            check_agreement_parameters(theta, p)
        den = np.multiply(theta, lik.eta, out=logs[..., 2, :])
        den += rest * lik.rest
        np.log(logs, out=logs)
        out = np.dot(logs.reshape(shape[:-1] + (3 * p,)), lik.coef)
        out += lik.const
        if lik.copula is None:
            return out
        half_log_det, c2, c1 = lik.copula
        l_z = np.einsum("...kp,kp->...p", logs, lik.coef_density)
        l_z += lik.const_density
        u = normal_scores(logs[..., 0, :] - logs[..., 1, :], self._scores, l_z)
        s1 = u.sum(axis=-1)
        return out - half_log_det - c2 * np.einsum("...i,...i->...", u, u) + c1 * s1 * s1
