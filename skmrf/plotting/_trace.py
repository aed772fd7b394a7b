"""Convergence traces: what an estimator's ``__skmrf_trace__`` returns, drawn one line per chain and key."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._utils._docstrings import fill_doc
from ..estimators._protocol import Trace
from ._common import axes, contains, is_index, pyplot

__all__ = ["Trace", "plot_trace"]


# Over 60 lines only by its numpydoc docstring (parameters, errors, a doctest); the code is about 30.
@fill_doc
def plot_trace(estimator, keys=None, ax=None):
    """Draw the convergence trace an estimator recorded during ``fit``.

    What is drawn depends on what the estimator keeps:

    - :class:`~skmrf.MCMCMaxLikelihood`: ``trace_`` (the values its ``verbose`` lines print),
      one line per key against the step, log scale (default keys: all but ``"time"``);
    - :class:`~skmrf.DecomposedEM`: ``log_likelihood_trace_``, the mean log-likelihood per row
      at the start and after every iteration;
    - :class:`~skmrf.MetropolisHastingsMRF`: the kept posterior draws ``samples_`` of the
      parameters ``keys`` (indices into ``edges_``; default the first five), one line per chain.

    Any object with a method ``__skmrf_trace__()`` returning a :class:`Trace` is drawn the
    same way.

    Parameters
    ----------
    estimator : fitted estimator
        One of the three above.
    keys : list, default=None
        Which series to draw, a non-empty list: trace names for MCMCMaxLikelihood,
        integer parameter indices for MetropolisHastingsMRF (a float such as 1.0 is
        refused, not truncated); ignored for DecomposedEM.
    %(plot_ax)s

    %(plot_returns)s

    Raises
    ------
    ValueError
        If the estimator keeps no trace (the other estimators record only ``n_iter_``; their
        ``verbose`` lines are printed, not kept), ``keys`` is not a non-empty list, or a
        key is not in the trace (a name it lacks, an index that is not an integer or out
        of range).

    Examples
    --------
    %(plot_example_setup)s
    >>> from skmrf import DecomposedEM
    >>> from skmrf.plotting import plot_trace
    >>> X = np.random.default_rng(0).integers(0, 2, size=(100, 3)).astype(float)
    >>> X[::4, 1] = np.nan
    >>> fig, ax = plt.subplots()
    >>> ax = plot_trace(DecomposedEM("chain").fit(X), ax=ax)
    >>> ax.get_ylabel()
    'mean log-likelihood per row'
    """
    name = type(estimator).__name__
    trace = _trace_of(estimator, name)
    keys = _selected(name, trace, keys)
    ax = axes(ax)
    colours = pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
    for n, key in enumerate(keys):
        draws = np.asarray(trace.series[key])
        x = np.arange(trace.first_step, trace.first_step + draws.shape[1])
        label = key if trace.labels is None else trace.labels[key]
        style = {} if draws.shape[0] == 1 else {"color": colours[n % len(colours)], "alpha": 0.7}
        for chain in range(draws.shape[0]):
            ax.plot(x, draws[chain], label=label if chain == 0 else None, marker=trace.marker, **style)
    if trace.log_scale:
        ax.set_yscale("log")
    ax.set_xlabel(trace.xlabel)
    if trace.ylabel is not None:
        ax.set_ylabel(trace.ylabel)
    if trace.keys_from is not None:
        ax.legend()
    ax.set_title(f"{name} trace")
    return ax


def _trace_of(estimator, name):
    """The estimator's :class:`Trace` (``__skmrf_trace__``), or the error saying it keeps none."""
    method = getattr(estimator, "__skmrf_trace__", None)
    trace = method() if method is not None else None  # raises NotFittedError before fit
    if method is None:
        check_is_fitted(estimator)
        raise ValueError(
            f"{name} keeps no convergence trace (it records n_iter_ only; verbose=1 prints its "
            "iterations). plot_trace draws MCMCMaxLikelihood.trace_, DecomposedEM.log_likelihood_trace_ "
            "and MetropolisHastingsMRF.samples_."
        )
    if trace is None:
        raise ValueError(
            f"This {name} has no convergence trace: a model read by load_model has none (model files do not "
            "store diagnostics such as trace_). Draw the trace before saving the model, or fit it again."
        )
    return trace


def _trace_keys(name, keys):
    """``keys`` as a list, refusing a lone string or number and an empty list."""
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Iterable):
        raise ValueError(f"keys={keys!r} is not a list; give a list such as [{keys!r}].")
    keys = list(keys)
    if not keys:
        raise ValueError(f"keys=[] selects nothing to draw from {name}; give at least one key or None.")
    return keys


def _selected(name, trace, keys):
    """The keys of ``trace.series`` to draw: ``keys`` checked against the trace, or its defaults."""
    series = trace.series
    if trace.keys_from is None:  # one choice only: keys are ignored
        return list(series)
    if keys is None:
        return list(trace.default_keys or series)
    keys = _trace_keys(name, keys)
    if not all(is_index(k) for k in series):  # named series
        unknown = [k for k in keys if not contains(series, k)]
        if unknown:
            raise ValueError(f"{name}.{trace.keys_from} has no {unknown}; its keys are {list(series)}.")
        return keys
    last, rows = len(series) - 1, f"(one per row of {trace.keys_from})"
    not_int = [k for k in keys if not is_index(k)]
    if not_int:
        raise ValueError(f"keys {not_int} are not integers; {name} keys are parameter indices 0..{last} {rows}.")
    bad = [int(k) for k in keys if not 0 <= k <= last]
    if bad:
        raise ValueError(f"Parameter indices {bad} are not in 0..{last} {rows}.")
    return keys
