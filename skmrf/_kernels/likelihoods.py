"""Likelihood plug-ins of :class:`~skmrf.MetropolisHastingsMRF`, on the agreement model.

Every plug-in answers one question for a batch of chains: the log of the likelihood ratio
``L(theta*) / L(theta)`` of a proposal ``theta*`` against the current ``theta`` (MLE-induced
likelihood paper, Eq. 10), exactly or estimated. Deterministic approximations are functions
of ``theta`` alone; :class:`CallableLikelihood` turns any such function (a callable on an
``(n_chains, p)`` batch returning ``(n_chains,)`` log-likelihoods, the public plug-in
interface) into a plug-in that remembers the current value. The sampling-based ones
(:class:`PersistentMCLikelihood`, :class:`ExchangeLikelihood`) carry a state per chain that
follows the accepted moves.

The data enter through the agreement counts ``A_j`` (rows whose ends of edge ``j`` agree): the
unnormalised log-likelihood is ``sum_j A_j log theta_j + (n - A_j) log(1 - theta_j)``. The
pseudo-likelihood reads the distinct agreement patterns around each variable, with counts; only
the exchange algorithm's Gibbs fallback reads the rows themselves. Every statistic is a sum over
rows, taken from :class:`~skmrf._data.Rows` by row chunks for a memmap or a dask array.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, logit, logsumexp

from .._data import Rows, blanket_records, merge_records
from ..exceptions import TreewidthError
from ..inference._evidence import BatchedJunctionTree
from ..inference._gibbs import colour_classes
from .mle_induced import agreement_counts, agreement_statistics

__all__ = [
    "AgreementData",
    "CallableLikelihood",
    "ExactLikelihood",
    "ExchangeLikelihood",
    "LaplaceLikelihood",
    "PersistentMCLikelihood",
    "PseudoLikelihood",
]


class AgreementData:
    """Binary data seen through the agreement model's statistics.

    Parameters
    ----------
    X : ndarray of int of shape (n_samples, n_variables), or Rows
        0/1 states, or validated :class:`~skmrf._data.Rows` (a memmap or a dask array is
        read by row chunks: :func:`~skmrf._kernels.mle_induced.agreement_statistics`).
    edges : ndarray of int, shape (p, 2)
    graph : MRFGraph
        The resolved graph (for the junction tree and the colouring).
    weight : ndarray of shape (n_samples,), optional
        Row weights: ``n`` is then their sum and the agreement counts are sums of weights
        (ignored when ``X`` is a Rows, which holds its own).
    """

    def __init__(self, X, edges, graph, weight=None):
        self.edges, self.graph = edges, graph
        rows = as_rows(X, weight)
        self.n_variables = rows.n_columns
        self.n_samples, self.n_agree = agreement_statistics(rows, edges)

    def unnormalised(self, theta, n_agree=None, n_rows=None):
        """``sum_j A_j log theta_j + (n - A_j) log(1 - theta_j)`` for each row of ``theta``."""
        A = self.n_agree if n_agree is None else n_agree
        n = self.n_samples if n_rows is None else n_rows
        return (A * np.log(theta) + (n - A) * np.log1p(-theta)).sum(axis=-1)

    def junction_tree(self, max_bytes=None):
        """A :class:`BatchedJunctionTree` over the edges (plus isolated variables)."""
        covered = set(self.edges.ravel().tolist())
        scopes = [tuple(sorted(map(int, e))) for e in self.edges]
        scopes += [(v,) for v in range(self.n_variables) if v not in covered]
        return BatchedJunctionTree(np.full(self.n_variables, 2), scopes, max_bytes=max_bytes), len(scopes)

    def tables(self, theta, n_scopes):
        """Log-potential tables of a batch of ``theta``: ``log theta`` on the diagonal."""
        c, p = theta.shape
        t = np.empty((p, c, 2, 2))
        t[:, :, 0, 0] = t[:, :, 1, 1] = np.log(theta).T
        t[:, :, 0, 1] = t[:, :, 1, 0] = np.log1p(-theta).T
        return list(t) + [np.zeros((c, 2))] * (n_scopes - p)


def as_rows(X, weight=None):
    """``X`` as binary :class:`~skmrf._data.Rows` (a Rows is returned as it is)."""
    return X if isinstance(X, Rows) else Rows(X, np.full(X.shape[1], 2), weight)


def callable_name(function):
    """How a user's callable is named in messages: its qualified name, else its repr."""
    return getattr(function, "__qualname__", None) or repr(function)


def check_log_density(value, theta, what, function):
    """``value`` (one log-density per row of ``theta``) as float64, refusing a wrong shape, NaN or +inf.

    ``what`` is ``"likelihood"`` or ``"prior"``; the message names it, the callable and the
    first offending parameter vector. ``-inf`` (density zero) is allowed: such a move is rejected.
    """
    value = np.asarray(value, dtype=np.float64)
    name = f"The {what} callable {callable_name(function)}"
    if value.shape != theta.shape[:1]:
        raise ValueError(
            f"{name} returned shape {value.shape} for a batch of {theta.shape[0]} parameter vectors (shape "
            f"{theta.shape}); it must return one log-{what} per row, shape ({theta.shape[0]},)."
        )
    if not (value < np.inf).all():  # NaN or +inf
        i = int(np.flatnonzero(~(value < np.inf))[0])
        raise ValueError(
            f"{name} returned {float(value[i])!r} at theta = {np.array2string(theta[i], precision=6)}: a "
            f"log-{what} must be a number or -inf (zero density), never NaN or +inf. Fix the callable there."
        )
    return value


class CallableLikelihood:
    """A deterministic log-likelihood ``f(theta) -> (n_chains,)`` as a plug-in.

    Every value is checked (:func:`check_log_density`): a wrong shape, NaN or +inf is an
    error naming the function and the parameter vector.
    """

    exact = False

    def __init__(self, function):
        self.function = function

    def _evaluate(self, theta):
        return check_log_density(self.function(theta), theta, "likelihood", self.function)

    def start(self, theta, rngs):
        self.current = self._evaluate(theta)
        self._proposed = None

    def log_ratio(self, theta, proposal, rngs):
        self._proposed = self._evaluate(proposal)
        return self._proposed - self.current

    def accept(self, accepted):
        np.copyto(self.current, self._proposed, where=accepted)


class ExactLikelihood(CallableLikelihood):
    """``log L(theta) = sum_j A_j log theta_j + (n - A_j) log(1 - theta_j) - n log Z(theta)``.

    ``log Z`` by the junction tree, built once; each call only fills its tables with the
    batch's numbers and calibrates them together (one batch axis).
    """

    exact = True

    def __init__(self, data, max_bytes=None):
        self.data = data
        self.tree, self.n_scopes = data.junction_tree(max_bytes)
        super().__init__(self.log_likelihood)

    def log_z(self, theta):
        """``log Z(theta)`` of each row of ``theta``."""
        return self.tree.log_partition(self.data.tables(theta, self.n_scopes))

    def log_likelihood(self, theta):
        return self.data.unnormalised(theta) - self.data.n_samples * self.log_z(theta)


#: Entries (rows x columns) of a memmap chunk compressed to records at once (as the
#: pseudo-likelihood estimator's records: about ten int64 temporaries of this many entries).
RECORDS_CHUNK_ENTRIES = 1 << 22


def _agreement_records_chunk(chunk, weight, edges, subsets):
    """The records of a chunk: each variable's edges' agreement pattern (``subsets`` index the edges)."""
    chunk = np.asarray(chunk)
    T = (chunk[:, edges[:, 0]] == chunk[:, edges[:, 1]]).astype(np.uint8)
    return blanket_records(T, subsets, np.full(len(edges), 2), weight=weight)


class PseudoLikelihood(CallableLikelihood):
    """Besag's log pseudo-likelihood ``sum_rows sum_i log p(x_i | x_N(i))`` on compressed data.

    For the agreement model, flipping ``x_i`` flips the agreement of every edge at ``i``, so
    ``log p(x_i | rest) = -softplus(sum_{j at i} eta_j (1 - 2 t_j))`` with ``eta = logit theta``.
    The records (a variable and the agreement pattern of its edges) are compressed with their
    counts (:func:`skmrf._data.blanket_records` on the rows' agreement indicators, by row chunks
    for a memmap or a dask array, merged in the in-memory order), so a batch costs one sparse
    product. ``X`` is an ndarray (with ``weight``) or a :class:`~skmrf._data.Rows`.
    """

    def __init__(self, data, X, weight=None):
        edges, d = data.edges, data.n_variables
        incident = [np.flatnonzero((edges == i).any(axis=1)) for i in range(d)]
        subsets = [tuple(e.tolist()) for e in incident if len(e)]
        records = as_rows(X, weight).reduce(
            _agreement_records_chunk, edges, subsets, op=merge_records, max_entries=RECORDS_CHUNK_ENTRIES
        )
        keep = records.count > 0  # patterns only of rows of weight 0 (chunked): an in-memory fit drops those rows
        lengths = np.array([len(subsets[s]) for s in records.var[keep]], dtype=np.int64)
        values = records.values[keep]
        rec = np.repeat(np.arange(len(lengths)), lengths)
        col = np.concatenate([subsets[s] for s in records.var[keep]]) if len(lengths) else np.zeros(0, np.int64)
        sign = 1.0 - 2.0 * values[np.arange(values.shape[1])[None, :] < lengths[:, None]]
        self.design = sp.csr_matrix((sign, (rec, col)), shape=(len(lengths), len(edges)))
        self.count = records.count[keep].astype(np.float64)
        self.n_records = len(lengths)
        super().__init__(self.log_likelihood)

    def log_likelihood(self, theta):
        logits = self.design @ logit(theta).T  # (records, chains)
        return -(self.count @ np.logaddexp(0.0, logits))


class LaplaceLikelihood(CallableLikelihood):
    """Gaussian approximation at the MLE: ``-1/2 (theta - theta_hat)' I (theta - theta_hat)``.

    ``I = n D C D`` is the Fisher information in ``theta``, ``C`` the covariance of the
    agreement indicators at ``theta_hat`` and ``D = diag(1 / (theta_hat (1 - theta_hat)))``.
    ``C`` is exact where the junction tree fits: ``E[t_j t_k] = sum_a P(x_u = x_v = a)
    E[t_k | x_u = x_v = a]``, one batched calibration over the ``2p`` evidence patterns;
    otherwise it is estimated from ``n_particles`` Gibbs draws (``fisher_ = "sampled"``).
    The log-likelihood is returned up to an additive constant (which MH does not need).
    """

    def __init__(self, data, theta_hat, max_bytes=None, n_particles=1000, n_sweeps=1000, rng=None):
        self.data, self.theta_hat = data, np.asarray(theta_hat, dtype=np.float64)
        try:
            cov = self._exact_covariance(max_bytes)
            self.fisher = "exact"
        except TreewidthError:
            cov = self._sampled_covariance(n_particles, n_sweeps, rng)
            self.fisher = "sampled"
        D = 1.0 / (self.theta_hat * (1 - self.theta_hat))
        self.information = data.n_samples * (D[:, None] * cov * D[None, :])
        super().__init__(self.log_likelihood)

    def _exact_covariance(self, max_bytes):
        data, th = self.data, self.theta_hat[None]
        tree, n_scopes = data.junction_tree(max_bytes)
        p, d = len(data.edges), data.n_variables
        free = np.full((1, d), -1)
        log_z, marg = tree.calibrate(data.tables(th, n_scopes), free)
        mean = np.array([m[0, 0, 0] + m[0, 1, 1] for m in marg[:p]])
        evidence = np.full((2 * p, d), -1)
        j = np.repeat(np.arange(p), 2)
        a = np.tile([0, 1], p)
        evidence[np.arange(2 * p), data.edges[j, 0]] = a
        evidence[np.arange(2 * p), data.edges[j, 1]] = a
        tables = data.tables(np.repeat(th, 2 * p, axis=0), n_scopes)
        log_ze, marg_e = tree.calibrate(tables, evidence)
        prob = np.exp(log_ze - log_z[0])  # P(x_u = x_v = a)
        cond = np.stack([m[:, 0, 0] + m[:, 1, 1] for m in marg_e[:p]], axis=1)  # E[t_k | e]
        second = (prob[:, None] * cond).reshape(p, 2, p).sum(axis=1)
        return second - np.outer(mean, mean)

    def _sampled_covariance(self, n_particles, n_sweeps, rng):
        if n_particles < 2:
            raise ValueError(
                f"likelihood='laplace' estimates the Fisher information from n_particles={n_particles} Gibbs draws "
                "here (the junction tree exceeds max_bytes), and a covariance needs at least 2. Raise n_particles "
                "(the default is 1000) or max_bytes."
            )
        gibbs = AgreementGibbs(self.data)
        S = (rng.random((1, n_particles, self.data.n_variables)) < 0.5).astype(np.int8)
        S = gibbs.run(S, self.theta_hat[None], n_sweeps, [rng])
        T = (S[0][:, self.data.edges[:, 0]] == S[0][:, self.data.edges[:, 1]]).astype(np.float64)
        return np.cov(T, rowvar=False).reshape(len(self.data.edges), len(self.data.edges))

    def log_likelihood(self, theta):
        z = theta - self.theta_hat
        return -0.5 * ((z @ self.information) * z).sum(axis=-1)


class AgreementGibbs:
    """Chromatic Gibbs sweeps of the agreement model with one ``theta`` per chain.

    State ``S`` of shape ``(n_chains, n_particles, n_variables)``; variable ``i`` is 1 with
    probability ``expit(sum_{j at i} eta_j (2 x_other - 1))``. The package's
    :class:`~skmrf.inference._gibbs.BinaryGibbsKernel` holds one parameter vector for all its
    chains; here every MH chain has its own, so the fields are one batched product with the
    edge-incidence matrices.
    """

    def __init__(self, data):
        edges, d = data.edges, data.n_variables
        p = len(edges)
        self.u, self.v = edges[:, 0], edges[:, 1]
        self.Bu = np.zeros((p, d))
        self.Bu[np.arange(p), self.u] = 1.0
        self.Bv = np.zeros((p, d))
        self.Bv[np.arange(p), self.v] = 1.0
        self.classes = colour_classes(data.graph)

    def run(self, S, theta, n_sweeps, rngs):
        eta = logit(theta)[:, None, :]  # (c, 1, p)
        S = S.copy()
        c, s, d = S.shape
        for _ in range(n_sweeps):
            u = np.stack([r.random((s, d)) for r in rngs])
            for cls in self.classes:
                spin = 2.0 * S - 1.0
                field = (eta * spin[..., self.v]) @ self.Bu + (eta * spin[..., self.u]) @ self.Bv
                S[..., cls] = u[..., cls] < expit(field[..., cls])
        return S


class PersistentMCLikelihood:
    """Persistent Markov chains (MLE-induced likelihood paper, Supplement Eq. 15).

    Each MH chain keeps ``n_particles`` particles. For a proposal ``theta*`` they are advanced
    ``n_sweeps`` Gibbs sweeps under ``theta*`` and estimate ``Z(theta) / Z(theta*)`` by
    ``mean_t p~(x_t; theta) / p~(x_t; theta*)``; the log ratio of the ``n`` rows adds ``n``
    times its log. The advanced particles replace the old ones when the move is accepted (so
    they follow the chain's current ``theta``) and are dropped when it is rejected. At the
    start they are drawn uniformly and advanced ``n_sweeps_init`` sweeps under ``theta``.
    An approximation: the estimate is biased, and particles a few sweeps from ``theta*`` are
    not draws from it.
    """

    exact = False

    def __init__(self, data, n_particles=1000, n_sweeps=1, n_sweeps_init=1000):
        self.data, self.gibbs = data, AgreementGibbs(data)
        self.n_particles, self.n_sweeps, self.n_sweeps_init = n_particles, n_sweeps, n_sweeps_init

    def start(self, theta, rngs):
        shape = (self.n_particles, self.data.n_variables)
        S = np.stack([(r.random(shape) < 0.5).astype(np.int8) for r in rngs])
        self.particles = self.gibbs.run(S, theta, self.n_sweeps_init, rngs)

    def log_ratio(self, theta, proposal, rngs):
        self._advanced = self.gibbs.run(self.particles, proposal, self.n_sweeps, rngs)
        A = (self._advanced[..., self.data.edges[:, 0]] == self._advanced[..., self.data.edges[:, 1]]).astype(
            np.float64
        )  # (c, s, p) agreement indicators of each particle
        log_w = (
            A @ (np.log(theta) - np.log(proposal))[..., None]
            + (1 - A) @ (np.log1p(-theta) - np.log1p(-proposal))[..., None]
        )
        log_r = logsumexp(log_w[..., 0], axis=1) - np.log(self.n_particles)
        data = self.data
        return data.unnormalised(proposal) - data.unnormalised(theta) + data.n_samples * log_r

    def accept(self, accepted):
        self.particles[accepted] = self._advanced[accepted]


class ExchangeLikelihood:
    """The single-variable exchange algorithm (Murray, Ghahramani and MacKay 2006).

    For a proposal ``theta*`` an auxiliary data set ``y`` of ``n`` rows is drawn from
    ``p(.; theta*)``; the MH ratio uses ``p~(x; theta*) p~(y; theta) / (p~(x; theta)
    p~(y; theta*))``, in which ``Z`` cancels (the paper's Eq. 14 with ``s = 1`` draw of the
    whole data set). With exact draws (the junction tree's forward sampler, batched over the
    chains) the chain targets the exact posterior. Where the junction tree does not fit,
    ``y`` comes from ``n_sweeps`` Gibbs sweeps started at the data, an approximation
    (``sampler == "gibbs"``).

    ``X`` is the data (each row as many times as its weight), or a function of no arguments
    returning them: only the Gibbs fallback reads them (its chains start at the rows, in order),
    so with exact draws they are never read.
    """

    def __init__(self, data, X, max_bytes=None, n_sweeps=100):
        self.data, self.n_sweeps = data, n_sweeps
        try:
            self.tree, self.n_scopes = data.junction_tree(max_bytes)
            self.sampler = "exact"
        except TreewidthError:
            self.gibbs = AgreementGibbs(data)
            self.sampler = "gibbs"
            self.X = X() if callable(X) else X
        self.exact = self.sampler == "exact"

    def start(self, theta, rngs):
        pass

    def _draw(self, theta, rngs):
        # Whole numbers (a float sum of integer weights with weights: the caller checks they are whole).
        n, d = int(self.data.n_samples), self.data.n_variables
        if self.sampler == "exact":
            evidence = np.full((theta.shape[0], d), -1)
            _, _, nodes = self.tree.calibrate(self.data.tables(theta, self.n_scopes), evidence, return_nodes=True)
            return np.concatenate([self.tree.sample([m[c : c + 1] for m in nodes], n, r) for c, r in enumerate(rngs)])
        start = np.broadcast_to(self.X.astype(np.int8), (theta.shape[0], n, d))
        return self.gibbs.run(start, theta, self.n_sweeps, rngs)

    def log_ratio(self, theta, proposal, rngs):
        y_agree = agreement_counts(self._draw(proposal, rngs), self.data.edges)
        data = self.data
        return (
            data.unnormalised(proposal)
            - data.unnormalised(theta)
            + data.unnormalised(theta, y_agree)
            - data.unnormalised(proposal, y_agree)
        )

    def accept(self, accepted):
        pass
