"""The estimated ``log Z`` of the discrete estimators' scores: its interval, warnings and refusals (#24).

:class:`~skmrf.estimators._base.BaseDiscreteMRF` defers ``log Z`` to the first score when the
junction tree does not fit; this module makes that estimate (adaptive AIS, tree-reweighted upper
bound), words the warnings of the first score, and refuses scores that prove the estimate wrong.
It holds no estimator state: the estimator stores what :func:`estimate_log_partition` returns.
"""

from __future__ import annotations

import numpy as np

from .._utils._warnings import warn
from ..exceptions import EstimatedLikelihoodWarning, ImpossibleLikelihoodError
from ..inference._adaptive_ais import AIS_BUDGET, INTERVAL_SIGMAS, adaptive_annealed_importance_sampling, budget_message
from ..inference._gibbs import is_pairwise
from ..inference._tree_bound import tree_upper_bound

__all__ = [
    "AIS_BUDGET",
    "AIS_CHAINS",
    "AIS_STEPS",
    "LOG_Z_INTERVAL_MAX",
    "LOG_Z_KEYS",
    "TREE_BOUND_ITER",
    "announce_estimate",
    "estimate_log_partition",
    "refuse_impossible",
]

#: Chains and annealing steps of the first run of the adaptive AIS of ``score_method="ais"``
#: (:func:`~skmrf.inference.adaptive_annealed_importance_sampling`, path ``"auto"``): it doubles
#: the steps until two runs agree, within ``AIS_BUDGET`` chain sweeps (from
#: :mod:`skmrf.inference._adaptive_ais`; 400,000: runs of 100 to 1600 steps). Measured
#: (``benchmarks/ais_log_partition.py``): random grids and the 16 x 16 and 20 x 20 digits stop
#: after 200 to 1600 steps; the 64 x 64 digits spend the budget (about 11 s of Gibbs sweeps on
#: one core) and say so.
AIS_CHAINS, AIS_STEPS = 100, 100
#: ``score`` warns that scores from an estimated ``log Z`` cannot rank models when the interval
#: ``[log_partition_lower_, log_partition_upper_]`` is wider than this many nats (the same for
#: every row's score, so nats per row). Differences between estimators on the digits are a nat
#: or two per row at 8 x 8; the interval is 2.5 to 3.1 nats wide there, 12 to 35 at 16 x 16 and
#: 20 x 20 and 46 to 204 at 64 x 64, the looseness of the tree bound
#: (``benchmarks/ais_log_partition.py``, ``benchmarks/log_partition_bounds.py``).
LOG_Z_INTERVAL_MAX = 1.0
#: L-BFGS iterations of the tree-reweighted bound at the first score (every iterate is a valid
#: bound). On the LAP model of the 64x64 digits: 10 give 2394.4 in 8.6 s, 25 give 2365.0 in
#: 17 s, and 160 (converged) 2355.9 in 106 s.
TREE_BOUND_ITER = 25
#: The estimator's private keys that hold the deferred ``log Z`` and what comes with it; cleared
#: by every fit and every restored state, so nothing of an earlier fit survives.
LOG_Z_KEYS = (
    "_log_partition",
    "_log_partition_std",
    "_log_partition_upper",
    "_log_partition_lower",
    "_log_partition_budget_exhausted",
    "_ais_budget_message",
    "_ais_random_state",
    "_estimate_announced",
    "_score_method_pending",
)


def estimate_log_partition(model, score_method, random_state, verbose=0):
    """The deferred ``log Z`` of a fitted model, as the estimator's private keys.

    ``"ais"``: the adaptive AIS estimate (#24, item 2), its standard error with the bias seen
    between its runs, the lower end of the interval (AIS less its noise margin) and whether its
    budget ran out. Both methods, pairwise models: the tree-reweighted upper bound on ``log Z``
    (#24, item 1), which ``"bound"`` scores with. There are no exact draws of a model this wide,
    so no reverse-AIS bound: the interval is ``[AIS, tree bound]``.
    """
    d = dict.fromkeys(("_log_partition_lower", "_log_partition_budget_exhausted", "_ais_budget_message"))
    if score_method == "ais":  # first: it draws from random_state as it did in fit
        res = adaptive_annealed_importance_sampling(
            model, AIS_BUDGET, AIS_CHAINS, AIS_STEPS, random_state=random_state, warn=False, verbose=verbose
        )
        d.update(_log_partition=res.log_z, _log_partition_std=res.std_err, _log_partition_lower=res.lower)
        d["_log_partition_budget_exhausted"] = res.budget_exhausted
        d["_ais_budget_message"] = budget_message(res) if res.budget_exhausted else None
    upper = None
    if is_pairwise(model.layout):
        upper = tree_upper_bound(model, max_iter=TREE_BOUND_ITER, random_state=random_state).bound
    d["_log_partition_upper"] = upper
    if score_method == "bound":
        d["_log_partition"] = upper
    return d


def _interval_sentence(low, upper):
    if upper is None:
        return (
            f"log Z is at least {low:.6g} (log_partition_lower_), but no upper bound on it was computed "
            "(a model with cliques of three or more variables, or one loaded from a file)"
        )
    return (
        f"log Z lies in [{low:.6g}, {upper:.6g}] (log_partition_lower_: AIS less its noise margin; "
        f"log_partition_upper_: tree-reweighted bound), so every row's score, and the mean score, "
        f"is uncertain by {upper - low:.3g} nats per row"
    )


def announce_estimate(name, score_method, d, estimate, std):
    """The first AIS score's warnings (``d``: the estimator's ``__dict__``).

    With ``score_method="auto"`` that the scores are estimates at all, quoting the interval
    ``[log_partition_lower_, log_partition_upper_]`` in nats per row; with ``"auto"`` or
    ``"ais"``, that AIS ran out of its budget when it did, and that the scores cannot rank models
    when the interval is wider than :data:`LOG_Z_INTERVAL_MAX` nats, or (no upper bound) when
    two standard errors of the estimate are (#39: differences below them are noise).
    """
    low, upper = d.get("_log_partition_lower"), d.get("_log_partition_upper")
    if low is None:  # a model loaded from a file: the estimate less its noise margin
        low = estimate - INTERVAL_SIGMAS * std
    interval = _interval_sentence(low, upper)
    if score_method == "auto":
        warn(
            f"{name}(score_method='auto') scores with log Z estimated by annealed importance sampling "
            f"(adaptive: {AIS_CHAINS} chains from {AIS_STEPS} steps, doubled until two runs agree, within "
            f"{AIS_BUDGET:,} chain sweeps): log Z = {estimate:.6g} with standard error {std:.3g} "
            f"(log_partition_std_, its bias included), because the junction tree of this graph exceeds "
            f"max_bytes; {interval}. The scores are log-likelihood estimates; set score_method='ais' to "
            "silence this warning.",
            EstimatedLikelihoodWarning,
        )
    if d.get("_ais_budget_message"):
        warn(f"{name}: {d['_ais_budget_message']}", EstimatedLikelihoodWarning)
    noise = (
        f"The estimate's own standard error is {std:.3g} nats (log_partition_std_, the bias seen between its runs "
        f"included), so score differences below {2 * std:.3g} nats per row between this model and another are "
        "within it. "
    )
    if upper is not None and upper - low > LOG_Z_INTERVAL_MAX:
        warn(
            f"{name}: {interval}. The interval is wider than {LOG_Z_INTERVAL_MAX:g} nat per row, so these "
            "scores cannot rank models (AIS underestimates log Z when its chains do not follow the model; "
            "the tree bound is loose on strongly coupled models: 0.075 to 0.114 nats per variable above the "
            f"exact value on periodic Ising grids, benchmarks/results/ising_exact_ais.txt). {noise}For a conservative "
            "comparison use score_method='bound' (scores with the upper end: a guaranteed lower bound on the mean "
            "log-likelihood).",
            EstimatedLikelihoodWarning,
        )
    elif 2 * std > LOG_Z_INTERVAL_MAX:
        warn(
            f"{name}: {noise}These scores cannot rank models whose scores differ by less.",
            EstimatedLikelihoodWarning,
        )


def refuse_impossible(name, scores, log_z, std):
    """Refuse AIS scores of rows more probable than certain (#24, item 3).

    ``log Z >= energy(x)`` for every state ``x``, so a row with ``energy(x) > log Z`` proves the
    AIS estimate too small by at least the difference (AIS underestimates ``log Z`` when its
    chains do not mix). Returning the score would rank the model by that error.
    """
    worst = int(np.argmax(scores)) if len(scores) else 0
    if len(scores) and scores[worst] > 0:
        raise ImpossibleLikelihoodError(
            f"{name}: row {worst} would have log-probability {scores[worst]:.4g} > 0 with the AIS estimate "
            f"log Z = {log_z:.6g} (standard error {std:.3g}): its energy proves log Z >= "
            f"{log_z + scores[worst]:.6g}, so the estimate is at least {scores[worst]:.4g} nats too small and "
            "every score from it is too high. AIS did not reach this model's mass (its chains do not mix at "
            "these couplings); do not rank models by it. Use score_method='bound' (pairwise models: a guaranteed "
            "lower bound on every row's log-likelihood) or 'pseudo', or estimate log Z with a larger budget "
            "(skmrf.inference.log_partition_interval) and compare."
        )
