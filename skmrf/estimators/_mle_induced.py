"""MLE-induced likelihood (Liu and Zheng): the estimator; the kernel is :mod:`skmrf._kernels.mle_induced`.

:class:`MLEInducedLikelihood` validates the binary data once, resolves the graph and the edge
order, counts agreements (Eq. 6), fits the MLE with the exact or LAP kernel on the
flip-symmetrised rows, and evaluates the likelihood of the kernel's
:class:`~skmrf._kernels.mle_induced.MLEInducedModel` (Eqs. 3, 7-9).
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import ndtr
from sklearn.base import BaseEstimator
from sklearn.frozen import FrozenEstimator

from .._data import is_chunked
from .._kernels.mle_induced import agreement_counts, induced_eta
from .._utils._atomic import atomic_fit
from .._utils._docstrings import fill_doc
from .._utils._sklearn_compat import StrOptions, _fit_context, check_is_fitted
from .._utils.validation import column_names
from ..graphs import resolve_graph
from ..model._agreement import check_agreement_parameters
from ._base import BaseDiscreteMRF, validate_row_chunks, validate_rows
from ._mle_induced_fit import fit_mle_induced, parameter_edges, without_degenerate_edges

__all__ = ["MLEInducedLikelihood", "agreement_counts", "induced_eta", "parameter_edges"]  # the kernels re-exported

_MIN = np.minimum.reduce  # the ufunc's own reduce: ndarray.min adds a Python-level wrapper


@fill_doc
class MLEInducedLikelihood(BaseEstimator):
    """MLE-induced likelihood of the agreement model of a binary pairwise MRF (Liu and Zheng).

    The likelihood of an MRF is intractable; this approximation replaces it by a product of
    one-dimensional marginal likelihoods, one per edge parameter, linked by a copula. The
    marginal of ``theta_j`` is the likelihood of a coin tossed under an external effect
    ``eta0_j`` (Eq. 3), where ``eta0_j`` is set so that the marginal peaks at the MLE
    ``theta_hat_j`` (Eq. 5). Its cost is linear in the number of edges and independent of the
    graph's structure, which makes it cheap enough for Metropolis-Hastings.

    The model is the agreement model (:mod:`skmrf.model._agreement`): edge ``j = (u, v)`` has
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
        flip-invariant when it is a number, so its node potentials are then small but not zero
        and only its couplings are used; the default ``"auto"``, centred, is flip-invariant). A
        fitted estimator (or a :class:`sklearn.frozen.FrozenEstimator` of one): used as it is,
        through its couplings ``theta_j = expit(J_j / 2)``; ``fit`` warns if its unary
        parameters are not those of an agreement model. :func:`sklearn.base.clone`
        un-fits a plain fitted estimator (it clones parameters), a ``FrozenEstimator`` stays
        fitted.
    %(degenerate_edges)s

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
    (:mod:`skmrf._kernels.coin_tossing`). At fit it is integrated by 8-point
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

    ``fit`` reads the rows only through sums over them: the agreement counts and the MLE's
    statistics of ``[X; 1 - X]`` (the exact kernel's clique counts, each chunk's plus its flip's;
    the LAP kernel's, or a given unfitted ``mle``'s, from the flip-symmetrised rows as a lazy dask
    array). From a ``numpy.memmap`` or a ``dask.array`` they are summed by row chunks, so memory
    is a chunk plus these statistics, and the fit is the in-memory one bit for bit (float weights
    are rounded to the grid on which their sums are exact, at most ``2^-52`` of their sum).
    A memmap with ``mle`` not None, or with a junction tree beyond its limit, needs dask installed
    (otherwise its rows are held in one byte per entry).

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
        "degenerate_edges": [StrOptions({"raise", "drop"})],
    }

    def __init__(self, graph="chain", copula="independent", rho=0.0, mle=None, degenerate_edges="raise"):
        self.graph = graph
        self.copula = copula
        self.rho = rho
        self.mle = mle
        self.degenerate_edges = degenerate_edges

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        tags.input_tags.allow_nan = False
        return tags

    @atomic_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Count agreements, fit the MLE and derive the marginal likelihoods (Eqs. 3, 5, 6).

        Parameters
        ----------
        X : array-like, numpy.memmap or dask.array of shape (n_samples, n_features)
            Binary states 0/1; never modified. A ``numpy.memmap`` or a ``dask.array`` is read by
            row chunks (on the workers for dask), never whole: only the agreement counts and the
            MLE's statistics of the flip-symmetrised rows are kept (see Notes).
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
        self.graph_, self.edges_ = without_degenerate_edges(self, rows, self.graph_, self.edges_)
        fit = fit_mle_induced(self, rows, self.edges_, self.graph_, self.mle, self.copula, self.rho)
        self.n_samples_, self.n_agree_, self.lambda_hat_ = fit.n_samples, fit.n_agree, fit.lambda_hat
        self.mle_, self.mle_source_, self.theta_hat_ = fit.mle, fit.mle_source, fit.theta_hat
        self._likelihood = fit.likelihood
        self.eta0_ = fit.likelihood.eta0
        return self

    # -- the stages of fit ----------------------------------------------------------------
    def _validate_binary(self, X, sample_weight):
        if is_chunked(X):  # checked by row chunks (a state above 1 is named with its column and row)
            return validate_row_chunks(self, X, sample_weight, n_states=2)
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
