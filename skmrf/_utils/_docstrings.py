"""Text shared by several docstrings, filled in by ``%``-substitution.

A docstring writes ``%(graph)s`` where the shared entry goes; :func:`fill_doc`
substitutes it once at import. Literal percent signs in such a docstring are written ``%%``.
:func:`fill_doc` decorates methods too.

An entry's first line takes the indentation of the ``%(key)s`` it replaces; its later
lines carry their own: 4 spaces (names) and 8 (descriptions) for the class docstrings'
parameters and attributes, 8 and 12 for the method docstrings' (``fit_*``, ``model_X``).
"""

from __future__ import annotations

__all__ = ["DOCS", "fill_doc"]

# The end of the ``fit`` sections, after the description of X (discrete or real data).
_FIT_Y_RETURNS = """y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted estimator."""

DOCS = {
    "gaussian_sparse": """sparse : bool or "auto", default="auto"
        Type of ``precision_`` (and of :meth:`get_precision`): ``"auto"``
        gives a dense ndarray for at most 5000 features, as scikit-learn's
        covariance estimators do, and a ``scipy.sparse.csr_array`` above;
        True or False force one type. ``standardized_precision_`` is always
        sparse and ``covariance_`` always dense (when stored).""",
    # The continuation of every discrete estimator's ``alpha`` entry (#10: one default).
    # MLEInducedLikelihood's and MetropolisHastingsMRF's (#40: a graph that can follow the data).
    "degenerate_edges": """degenerate_edges : {"raise", "drop"}, default="raise"
        An edge whose ends agree (or disagree) in every row has ``lambda_hat``
        0 or 1, where Eq. 5 of the MLE-induced likelihood is undefined:
        ``"raise"`` refuses the data, naming the edge; ``"drop"`` leaves every
        such edge out of the graph (``graph_``, ``edges_``) with a warning
        that names them (binarised images have many: pixels that are 0 in
        every image). To drop edges or variables yourself, see
        :func:`skmrf.graphs.subgraph`.""",
    "alpha_auto": """``"auto"`` (the default of every discrete estimator) is a ridge of
        weight ``1 / n_samples`` (the rows given to ``fit``; the value used is
        ``alpha_``) on the *centred* parameters: the components of the
        energy under the uniform distribution, which no relabelling of a
        variable's states changes (for binary variables the couplings and
        the fields ``theta_i + sum_j theta_ij / 2`` of ``x - 1/2``;
        :ref:`alpha_score`). A number is the ridge on ``theta`` itself. For
        the summed log-likelihood ``"auto"`` is a standard normal prior on
        each centred parameter (scikit-learn's ``C=1``), so the penalty fades
        as data grow. The same weight on ``theta`` tips a model without a
        field into one phase: on the 16 x 16 Ising torus at its critical
        coupling with 1000 rows it put the all-ones state 10.9 (PL) and 23.4
        (LAP) nats above the all-zeros one and lost 3.9 and 9.5 nats per
        held-out row against the truth; centred, -0.4 and -0.8 nats and a
        loss of 0.3 and none (``benchmarks/ising_exact.py --part fit``).
        Held-out log-likelihood against the best constant ``alpha`` of each
        cell (``benchmarks/alpha_default.py``; 1e-3 nats per variable, exact
        ML / LAP / PL): on binarised digits (5-fold) 0.45 / -0.21 / 0.50
        (the ridge ``1 / N`` on ``theta``: 1.37 / 0.44 / -0.02); on R's
        Titanic and housing tables 0.13 on average (``1 / N`` on ``theta``:
        0.17); on random 4 x 4 (two states) and 3 x 3 (three) grids, mean
        over N = 30 to 10^4 rows, with every full-table entry drawn uniform on
        [-1, 1] (a prior no relabelling changes) -0.6 / -0.7 / -1.4 and -3.7
        / -3.7 / -3.4 (``1 / N`` on ``theta``: 0.4 / 0.4 / -0.7 and -1.4 /
        -1.5 / -2.0), with ``theta`` drawn uniform on [-1, 1] (a prior on
        ``theta``, which favours its ridge) 1.1 / 1.1 / 2.1 and 6.1 / 6.2 /
        10.7 (0.5 / 0.5 / 1.4 and 3.4 / 3.4 / 6.7), the gaps at N <= 100. ``alpha=0`` is the unpenalised fit,
        which has no finite optimum when a clique state never occurs (a
        ``NoFiniteEstimateWarning`` says which).""",
    "gaussian_scale_": """scale_ : ndarray of shape (n_features,)
        The unit of each column in the fit: its standard deviation (about
        ``location_``), or with ``shrinkage > 0`` the square root of its shrunk
        variance. The fit runs on ``(X - location_) / scale_``, which makes it
        scale-equivariant and free of under- and overflow.

    standardized_precision_ : scipy.sparse.csr_array of shape (n_features, n_features)
        The precision in those units: ``precision_ = standardized_precision_ /
        outer(scale_, scale_)``. ``score``, ``score_samples`` and
        ``mahalanobis`` use it, so they stay exact when ``precision_`` under-
        or overflows float64 (a :class:`ScaleWarning` says so at ``fit``).""",
    "graph": """graph : networkx.Graph, list of tuples, array-like, sparse matrix or str, default="chain"
        The structure: a networkx graph (nodes map to columns in
        ``list(G.nodes)`` order, or by name for a DataFrame), a list of edges
        or cliques of any size, a square adjacency matrix, or one of
        ``"chain"``, ``"complete"``, ``"grid:RxC"``. Resolved in ``fit`` into
        ``graph_``. For a DataFrame X with string column names, or labels
        other than ``0..n-1`` (such as ``[2, 0, 1]``), the nodes of an edge
        list or a list of cliques name columns by label, and so do a networkx
        graph's nodes when they are labels (with labels that are not strings,
        they must be). The shorthands and adjacency matrices always number
        columns by position, as every form does for ``X.to_numpy()``.""",
    "n_states": """n_states : "auto", int or array-like of int, default="auto"
        States per variable. ``"auto"`` takes ``max + 1`` of each column in
        the training data (at least 2); give it explicitly when the training
        data may miss a state that later data takes.""",
    "score_method": """score_method : {"auto", "exact", "pseudo", "ais", "bound"}, default="auto"
        How :meth:`score_samples` scores. ``"exact"``: the log-likelihood,
        with ``log Z`` from the junction tree (``fit`` raises
        ``TreewidthError`` when it exceeds ``max_bytes``). ``"pseudo"``: the
        log pseudo-likelihood ``sum_i log p(x_i | x_-i)`` (not a
        log-likelihood). ``"ais"``: the log-likelihood with ``log Z``
        estimated by adaptive annealed importance sampling
        (:func:`skmrf.inference.adaptive_annealed_importance_sampling`: 100
        chains from 100 steps, doubled until two runs and the two annealing
        paths agree, within 400,000 chain sweeps; seeded by ``random_state``;
        standard error, its bias included, in ``log_partition_std_``), for
        graphs too wide for the junction tree.
        ``"auto"``: ``"exact"`` when the junction tree fits, else ``"ais"``,
        chosen and computed once, at the first ``score``, ``score_samples``,
        ``sample`` or read of ``score_method_`` or ``log_partition_`` (``fit``
        does not try the junction tree), and cached; a first score with the
        AIS estimate warns that it is an estimate. ``"bound"`` (pairwise models): the log-likelihood
        with ``log Z`` replaced by its tree-reweighted upper bound
        (:func:`skmrf.inference.tree_upper_bound`), so every score is a
        guaranteed lower bound on the log-likelihood: the conservative choice
        for model selection on wide graphs (deterministic, loose on strongly
        coupled models). A pseudo-likelihood is only given when asked for by
        name, so ``score`` never silently changes meaning.""",
    "max_bytes_scoring": """max_bytes : int, default=None
        Memory budget of the junction tree used for exact scoring.""",
    "random_state_ais": """random_state : int, RandomState instance or None, default=None
        Seeds the AIS estimate of ``log Z`` when scoring uses it
        (``score_method="ais"``, or ``"auto"`` on a graph too wide for the
        junction tree);
        unused otherwise (the fit is deterministic).""",
    # -- attributes of the discrete estimators
    "discrete_model_": """graph_ : MRFGraph
        The resolved graph.
    n_states_ : ndarray of shape (n_features,)
        Number of states of each variable (``n_states`` resolved in ``fit``).
    model_ : DiscreteMRF
        The fitted model; ``model_.theta`` holds the parameters.
    theta_ : ndarray of shape (n_params,)
        Alias of ``model_.theta``.""",
    "alpha_": """alpha_ : float
        The ridge's weight: ``alpha``, or ``1 / n_samples`` for ``"auto"``
        (on the centred parameters).""",
    "log_partition_ais_": """log_partition_ : float or None
        ``log Z`` when scoring is exact, its AIS estimate when it is
        ``"ais"`` (made at the first score, by
        :func:`skmrf.inference.adaptive_annealed_importance_sampling`), the
        tree bound for ``"bound"``, None for ``"pseudo"``.
    log_partition_std_ : float
        Standard error of the AIS estimate, the bias seen between its runs
        included (only when ``score_method_`` is ``"ais"``).
    log_partition_lower_ : float or None
        With ``score_method_ == "ais"``: the lower end of the interval for
        ``log Z``, the AIS estimate less its noise margin (AIS is a
        stochastic lower bound); None otherwise.
    log_partition_upper_ : float or None
        With ``score_method_`` ``"ais"`` or ``"bound"``: a guaranteed upper
        bound on ``log Z`` (tree-reweighted,
        :func:`skmrf.inference.tree_upper_bound`) for a pairwise model, None
        otherwise. The first score quotes ``[log_partition_lower_,
        log_partition_upper_]`` in nats per row and warns when it is wider
        than 1 nat (the scores cannot rank models).
    log_partition_budget_exhausted_ : bool or None
        With ``score_method_ == "ais"``: whether the adaptive AIS ran out of
        its budget before two runs agreed (the first score then says so).""",
    "score_method_": """score_method_ : str
        How :meth:`score_samples` scores: ``score_method``, with ``"auto"``
        resolved at its first use (``score``, ``sample``, reading this or
        ``log_partition_``): ``"exact"`` where the junction tree fits within
        ``max_bytes``, else ``"ais"``. The fit itself does not try the
        junction tree.""",
    # -- attributes of every estimator (set by scikit-learn's data validation)
    "n_features_in_": """n_features_in_ : int
        Number of features seen during fit.""",
    "feature_names_in_": """feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit. Defined only when X has feature
        names that are all strings.
    feature_labels_in_ : ndarray of object of shape (`n_features_in_`,)
        Labels of the columns of a DataFrame X whose labels are not strings
        and not ``0..n_features - 1`` (such as ``[2, 0, 1]``): the graph names
        columns by these labels, and ``score`` finds them again by label.
        Defined only for such X.""",
    # -- the Parameters and Returns sections of ``fit`` (method docstrings)
    "fit_states": """Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Integer states ``0..K-1``; never modified.
        """
    + _FIT_Y_RETURNS,
    "fit_real": """Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite real values).
        """
    + _FIT_Y_RETURNS,
    # -- the data of the DiscreteMRF methods (method docstrings)
    # skmrf.plotting: what every view takes and returns.
    "plot_obj": """obj : fitted estimator or DiscreteMRF
        A fitted discrete or Gaussian skmrf estimator, or a discrete model.""",
    "plot_kind": """kind : {"maxabs", "norm", "partial_correlation", "precision"} or None, default=None
        How an edge's parameters become one number: the signed entry of
        largest magnitude of a discrete block or its Frobenius norm; the
        partial correlation or the precision entry of a Gaussian edge. None
        means ``"maxabs"`` (discrete) or ``"partial_correlation"`` (Gaussian).""",
    "plot_ax": """ax : matplotlib Axes, default=None
        Where to draw (the current Axes when None).""",
    "plot_cmap": """cmap : str or Colormap, default="RdBu_r"
        A diverging colormap, centred on zero.
    colorbar : bool, default=True
        Add a colorbar.""",
    "plot_returns": """Returns
    -------
    ax : matplotlib Axes
        The Axes drawn on.""",
    # The first lines of the plotting functions' examples: a backend without a display.
    "plot_example_setup": """>>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np""",
    "model_X": """X : array-like of int of shape (n_samples, n_variables)
            States ``0..K_i-1`` of each variable, one row per sample.""",
}


def fill_doc(obj):
    """Class or function decorator: substitute :data:`DOCS` into ``obj.__doc__``."""
    if obj.__doc__:
        obj.__doc__ = obj.__doc__ % DOCS
    return obj
