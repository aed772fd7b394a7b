"""MLE-induced likelihood (Liu and Zheng): the estimator; the kernel is :mod:`skmrf.kernels.mle_induced`.

:class:`MLEInducedLikelihood` validates the binary data once, resolves the graph and the edge
order, counts agreements (Eq. 6), fits the MLE with the exact or LAP kernel on the
flip-symmetrised rows, and evaluates the likelihood of the kernel's
:class:`~skmrf.kernels.mle_induced.MLEInducedModel` (Eqs. 3, 7-9).
"""

from __future__ import annotations

import warnings
from numbers import Real
from typing import NamedTuple

import networkx as nx
import numpy as np
from scipy.special import expit, logit, ndtr
from sklearn.base import BaseEstimator
from sklearn.frozen import FrozenEstimator

from ..exceptions import NoFiniteEstimateWarning
from ..graphs import MRFGraph, resolve_graph
from ..kernels.mle_induced import MLEInducedModel, agreement_counts, agreement_mle, induced_eta, symmetrised
from ..model.agreement import agreement_matrix, check_agreement_parameters
from ..solvers import THETA_BOUND
from ..utils._sklearn_compat import StrOptions, _fit_context, check_is_fitted
from ..utils.validation import column_names
from ._base import BaseDiscreteMRF, validate_rows

__all__ = ["MLEInducedLikelihood", "agreement_counts", "induced_eta", "parameter_edges"]  # the kernels re-exported

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


# -- the fit, shared with MetropolisHastingsMRF ------------------------------------------------


class MLEInducedFit(NamedTuple):
    """What :func:`fit_mle_induced` found: the statistics, the MLE and the likelihood's kernel."""

    n_samples: float
    n_agree: np.ndarray
    lambda_hat: np.ndarray
    mle: object
    mle_source: str
    theta_hat: np.ndarray
    likelihood: MLEInducedModel


def fit_mle_induced(owner, rows, edges, graph, mle, copula, rho):
    """Count agreements (Eq. 6), fit the MLE and build the likelihood (Eqs. 3, 5, 7-9).

    ``owner`` is the estimator whose ``fit`` this is (named in messages; its column names and
    ``n_features_in_`` are read); ``rows`` are validated binary :class:`~skmrf.data.Rows`,
    ``edges`` the parameters' edges and ``graph`` the resolved graph. Refuses a copula ``rho``
    outside its range and an edge whose ends always (or never) agree; warns when the MLE does
    not exist or a fitted ``mle`` has node potentials.
    """
    name = type(owner).__name__
    _check_copula(copula, rho, len(edges))
    X, weight = rows.dense()
    n = X.shape[0] if weight is None else rows.total
    n_agree = agreement_counts(X, edges, weight)
    lambda_hat = n_agree / n
    _check_interior(n_agree, n, lambda_hat, edges)
    model, source = _mle_model(owner, mle, rows, graph, edges)
    theta_hat = _agreement_theta(model, source, edges)
    _warn_if_on_boundary(name, X, edges, theta_hat, lambda_hat, n)
    likelihood = MLEInducedModel(n_agree, n, theta_hat, copula, rho)
    return MLEInducedFit(n, n_agree, lambda_hat, model, source, theta_hat, likelihood)


def _check_copula(copula, rho_given, p):
    rho = float(rho_given)
    if copula == "independent":
        if rho != 0.0:
            raise ValueError(
                f"rho={rho_given!r} is the correlation of the Gaussian copula; it needs "
                "copula='gaussian' (the independent copula has rho=0)."
            )
        return
    low = -1.0 / (p - 1) if p > 1 else -np.inf
    if not low < rho < 1.0:
        raise ValueError(
            f"rho={rho_given!r} is outside (-1/(p-1), 1) = ({low:.6g}, 1) for p={p} edges: the "
            "exchangeable correlation matrix R (1 on the diagonal, rho off it) is positive "
            "definite only there."
        )


def _check_interior(n_agree, n, lambda_hat, edges):
    bad = np.flatnonzero((n_agree == 0) | (n_agree == n))
    if bad.size:
        j = int(bad[0])
        u, v = (int(x) for x in edges[j])
        always = "agree" if n_agree[j] else "disagree"
        raise ValueError(
            f"The ends of edge ({u}, {v}) {always} in all {n:g} rows, so "
            f"lambda_hat = {lambda_hat[j]:g}: the agreement-model MLE is on the boundary "
            "(theta = 0 or 1) and Eq. 5 is undefined. Remove the edge or add data."
        )


def _agreement_theta(model, source, edges):
    """``theta_hat`` read from the MLE's couplings (warning when a fitted ``mle`` has node potentials)."""
    eta = np.array([model.potential((int(u), int(v))).item() for u, v in edges]) / 2.0
    if source == "fitted":
        gap = float(np.max(np.abs(model.theta - agreement_matrix(model, edges) @ eta)))
        if gap > UNARY_ATOL:
            warnings.warn(
                f"The fitted mle's model has node potentials, which the agreement model lacks: its "
                f"unary parameters differ from those its couplings imply by up to {gap:.3g} (more "
                f"than {UNARY_ATOL:g}). Only its couplings are used (theta_j = expit(J_j / 2)). An "
                "unfitted estimator would be fitted exactly, on the flip-symmetrised data [X; 1 - X].",
                UserWarning,
                stacklevel=5,
            )
    theta = expit(eta)
    bad = np.flatnonzero((theta <= 0) | (theta >= 1))
    if bad.size:
        u, v = (int(x) for x in edges[bad[0]])
        raise ValueError(
            f"The MLE of edge ({u}, {v}) is theta = {theta[bad[0]]!r} (coupling {2 * eta[bad[0]]:.6g}), "
            "on the boundary in double precision; Eq. 5 is undefined."
        )
    return theta


def _warn_if_on_boundary(name, X, edges, theta_hat, lambda_hat, n):
    """Warn (naming the edge and an unobserved agreement pattern) when the MLE does not exist."""
    eta = logit(theta_hat)
    limit = min(np.log(BOUNDARY_ODDS * (n + 1)), (THETA_BOUND - BOX_MARGIN) / 2)
    far = np.flatnonzero(np.abs(eta) > limit)
    if not far.size:
        return
    j = int(far[np.argmax(np.abs(eta[far]))])
    u, v = (int(x) for x in edges[j])
    pattern = _unobserved_pattern(X, edges, theta_hat)
    seen = f" The data never show {pattern}, which the model allows." if pattern else ""
    warnings.warn(
        f"The agreement-model MLE does not exist: the MLE of edge ({u}, {v}) came out as theta_hat = "
        f"{theta_hat[j]:.7g} though its ends agree in {lambda_hat[j]:.3g} of the rows ({far.size} of "
        f"{len(eta)} edges with odds beyond {np.exp(limit):.3g}, more extreme than any agreement rate of "
        f"{n:g} rows or at the solver's box): the likelihood keeps "
        f"growing towards theta = {int(eta[j] > 0)}, and theta_hat_ is where the solver stopped.{seen} The "
        "MLE-induced likelihood is centred on it. Pass an mle with a ridge (e.g. "
        "mle=ExactMaxLikelihood(alpha=0.01)) for a finite estimate, or add data.",
        NoFiniteEstimateWarning,
        stacklevel=5,
    )


def _unobserved_pattern(X, E, theta_hat):
    """The agreement pattern the fitted MLE makes least likely among those no row shows, as text.

    By enumeration of the ``2 ** (d - 1)`` states up to a flip; None beyond
    ``PATTERN_MAX_VARIABLES`` variables or if every possible pattern is observed.
    """
    d = X.shape[1]
    if d > PATTERN_MAX_VARIABLES:
        return None
    states = (np.arange(2 ** (d - 1))[:, None] >> np.arange(d)[None, :]) & 1
    possible = np.unique(states[:, E[:, 0]] == states[:, E[:, 1]], axis=0)
    observed = {row.tobytes() for row in (X[:, E[:, 0]] == X[:, E[:, 1]])}
    unseen = possible[[row.tobytes() not in observed for row in possible]]
    if not len(unseen):
        return None
    log_p = unseen @ np.log(theta_hat) + ~unseen @ np.log1p(-theta_hat)
    t = unseen[int(np.argmin(log_p))]
    name = [f"({int(a)}, {int(b)})" for a, b in E]
    agree = ", ".join(n for n, x in zip(name, t) if x)
    disagree = ", ".join(n for n, x in zip(name, t) if not x)
    parts = ([f"the ends of edges {agree} agree"] if agree else []) + (
        [f"the ends of edges {disagree} disagree"] if disagree else []
    )
    return "a row in which " + " and ".join(parts)


def _mle_model(owner, mle, rows, graph, edges):
    """``(the MLE's DiscreteMRF, its source)`` per the ``mle`` parameter (see ``mle_source_``)."""
    if mle is not None and not isinstance(mle, (BaseDiscreteMRF, FrozenEstimator)):
        # Validated by _parameter_constraints too, but a caller's fit may skip nested validation.
        raise ValueError(
            f"mle must be None, an skmrf discrete estimator (fitted or not, e.g. ExactMaxLikelihood(alpha=0.01)) "
            f"or a FrozenEstimator of a fitted one; got {mle!r}."
        )
    if mle is not None and hasattr(mle, "model_"):
        inner = mle.estimator if isinstance(mle, FrozenEstimator) else mle
        if not isinstance(inner, BaseDiscreteMRF):
            raise ValueError(f"mle must hold an skmrf discrete estimator; got {type(inner).__name__}.")
        _check_fitted_graph(owner, mle.model_, edges)
        return mle.model_, "fitted"
    if isinstance(mle, FrozenEstimator):
        raise ValueError("mle is a FrozenEstimator of an unfitted estimator; fit it first, or pass it unwrapped.")
    if mle is None:
        return agreement_mle(graph, rows)
    return mle._fit_kernel(symmetrised(rows), graph), type(mle).__name__


def _check_fitted_graph(owner, model, edges):
    if model.n_variables != owner.n_features_in_:
        raise ValueError(f"The fitted mle has {model.n_variables} variables but X has {owner.n_features_in_} columns.")
    wide = np.flatnonzero(np.asarray(model.n_states) != 2)
    if wide.size:
        j = int(wide[0])
        names = column_names(owner)
        label = f"column {j}" if names is None else f"column {j} ({names[j]!r})"
        raise ValueError(
            f"The fitted mle models {label} with {int(model.n_states[j])} states, but the agreement model "
            "(and so the MLE-induced likelihood) is binary. Fit the mle on binary data with n_states=2, or "
            "pass it unfitted."
        )
    ours = {(min(u, v), max(u, v)) for u, v in edges.tolist()}
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
        Where the MLE ``theta_hat_`` comes from. ``None``: the exact maximum-likelihood kernel
        (``alpha=0``) when the junction tree fits, else the LAP kernel (``alpha=0``), fitted on
        the flip-symmetrised data ``[X; 1 - X]`` (nothing validated again, no ``log Z``). An
        unfitted skmrf discrete estimator: its method's kernel, with its own parameters, on the
        same rows and this estimator's ``graph_`` (its own ``alpha`` is kept; a ridge is not
        flip-invariant, so with ``alpha > 0`` its node potentials are small but not zero and only its couplings are
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
    mle_ : DiscreteMRF
        The fitted full binary pairwise model ``theta_hat_`` was read from (its couplings).
    mle_source_ : str
        Where it came from: ``"exact"`` or ``"lap"`` (the exact or LAP kernel, ``mle=None``),
        ``"fitted"`` (the given fitted estimator's ``model_``), or the class name of the given
        unfitted estimator whose method fitted it.
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

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Count agreements, fit the MLE and derive the marginal likelihoods (Eqs. 3, 5, 6).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary states 0/1; never modified.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights: a row with weight ``w`` counts as ``w`` rows (``n`` is
            then their sum).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        rows = self._validate_binary(X, sample_weight)
        self.edges_ = self._parameter_edges(rows.n_columns)
        fit = fit_mle_induced(self, rows, self.edges_, self.graph_, self.mle, self.copula, self.rho)
        self.n_samples_, self.n_agree_, self.lambda_hat_ = fit.n_samples, fit.n_agree, fit.lambda_hat
        self.mle_, self.mle_source_, self.theta_hat_ = fit.mle, fit.mle_source, fit.theta_hat
        self._likelihood = fit.likelihood
        self.eta0_ = fit.likelihood.eta0
        return self

    # -- the stages of fit ----------------------------------------------------------------
    def _validate_binary(self, X, sample_weight):
        rows = validate_rows(self, X, sample_weight)
        high = rows.X > 1
        if high.any():
            names = column_names(self)
            r, j = np.argwhere(high)[0]
            label = f"column {j}" if names is None else f"column {j} ({names[j]!r})"
            raise ValueError(
                f"{type(self).__name__} models binary data (states 0 and 1), but {label} has "
                f"the value {rows.X[r, j]} at row {r}. Binarise X first."
            )
        rows.n_states = np.full(rows.n_columns, 2)
        return rows

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
        return self._likelihood.marginal_log_likelihood(j, theta)

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
        return ndtr(self._likelihood.marginal_cdf_scores(j, theta)).reshape(shape)

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
        return self._likelihood.normal_scores(theta)

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
            likelihood = self._likelihood
        except AttributeError:
            check_is_fitted(self)
            raise
        return likelihood.log_likelihood(theta)
