"""The estimator ``skmrf fit`` builds: ``--method``, the modelling options and ``--set NAME=VALUE``."""

from __future__ import annotations

import argparse
import json

from sklearn.base import BaseEstimator, clone

from .. import estimators as _estimators
from . import _common
from ._common import CLIError, warn
from ._graph import set_graph

#: ``--method`` names and the estimator each one fits.
METHODS = {
    "exact": "ExactMaxLikelihood",
    "lap": "LAPEstimator",
    "pseudo": "PseudoLikelihoodEstimator",
    "mcmc": "MCMCMaxLikelihood",
    "em": "DecomposedEM",
    "gaussian-lap": "GaussianLAP",
    "gaussian-ml": "GaussianMaxLikelihood",
}
#: Other names of methods: ``pl`` is the DCA community's name for pseudo-likelihood.
ALIASES = {"pl": "pseudo"}


def _param_value(text):
    """A ``--set`` value: JSON (numbers, true/false/null, lists, objects) or else the string itself.

    JSON's object keys are strings; those that are integers become ints, so that
    ``--set 'alpha={"1": 1e-4, "2": 0.01}'`` gives the ``{1: ..., 2: ...}`` of the Python API."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict):
        value = {int(k) if k.lstrip("-").isdigit() else k: v for k, v in value.items()}
    return value


def number_or_auto(text):
    if text == "auto":
        return text
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None
    return int(v) if v.is_integer() and "." not in text and "e" not in text.lower() else v


def integer(low, high=None):
    """An argparse type: an integer in ``[low, high]``, refused with the range otherwise."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(
                f"expected an integer {f'from {low} to {high}' if high is not None else f'>= {low}'}, got {value}"
            )
        return value

    return parse


SEED = integer(0, 2**32 - 1)  # what numpy.random.RandomState accepts


def build_estimator(args, graph, table, by_name):
    """The unfitted estimator of ``--method`` with the options and ``--set`` values of ``args``.

    ``--set NAME=VALUE`` sets a parameter; ``--set NAME__PARAM=VALUE`` a parameter of the
    parameter object ``NAME`` (MCMC's ``schedule``), after every plain ``--set``: a string
    such as ``schedule=theory`` (or the default) becomes its object first.
    """
    cls = getattr(_estimators, METHODS[ALIASES.get(args.method, args.method)])
    accepted, own = cls().get_params(), cls().get_params(deep=False)
    params = {"graph": graph, **_modelling(args, cls, accepted)}
    nested = []
    for item in args.set or []:
        name, sep, value = item.partition("=")
        if sep and "__" in name and name.partition("__")[0] in own:
            nested.append((item, name, _param_value(value)))
            continue
        if not sep or name not in accepted:
            raise CLIError(
                f"--set {item!r}: expected NAME=VALUE with NAME a parameter of {cls.__name__} "
                f"({', '.join(sorted(accepted))})."
            )
        if name == "graph" and getattr(args, "graph", None) is not None:
            raise CLIError(f"--set {item!r} and --graph {args.graph!r} both give the graph: give one of them.")
        params[name] = _param_value(value) if name != "graph" else set_graph(_param_value(value), table, by_name)
    for item, name, value in nested:
        head, _, key = name.partition("__")
        params[head] = _set_nested(cls, head, params.get(head, own[head]), key, value, item)
    runtime = {"n_jobs": args.n_jobs, "random_state": args.random_state, "verbose": max(0, args.verbose - 1)}
    for name, value in runtime.items():
        if name in accepted:
            params[name] = value
        elif value not in (None, 0):
            warn(f"--{name.replace('_', '-')} is ignored: {cls.__name__} has no {name!r} parameter.")
    return cls(**params)


def _modelling(args, cls, accepted):
    """The modelling options given (``--alpha``, ...), refused by name when ``cls`` lacks one."""
    params = {}
    modelling = {
        "alpha": args.alpha,
        "n_states": args.n_states,
        "max_iter": args.max_iter,
        "tol": args.tol,
        "score_method": args.score_method,
        "shrinkage": args.shrinkage,
    }
    for name, value in modelling.items():
        if value is None:
            continue
        if name not in accepted:
            raise CLIError(
                f"--{name.replace('_', '-')} does not apply to --method {args.method}: {cls.__name__} has no "
                f"{name!r} parameter (it has {', '.join(sorted(accepted))})."
            )
        choices = _string_choices(cls, name)
        if isinstance(value, str) and choices and value not in choices:
            raise CLIError(
                f"--{name.replace('_', '-')} {value} does not apply to --method {args.method}: {cls.__name__} takes "
                f"{', '.join(sorted(choices))}."
            )
        params[name] = value
    return params


def _string_choices(cls, name):
    """The strings ``cls``'s parameter ``name`` accepts (its ``StrOptions``), or None."""
    from sklearn.utils._param_validation import StrOptions

    for constraint in getattr(cls, "_parameter_constraints", {}).get(name, []):
        if isinstance(constraint, StrOptions):
            return set(constraint.options)
    return None


def _parameter_objects(cls, name):
    """``{string: class}`` of the parameter objects ``cls``'s parameter ``name`` takes: the
    estimator classes among its constraints, by their ``kind`` (the string standing for one)."""
    return {
        c.kind: c
        for c in cls._parameter_constraints.get(name, [])
        if isinstance(c, type) and issubclass(c, BaseEstimator) and isinstance(getattr(c, "kind", None), str)
    }


def _set_nested(cls, head, current, key, value, item):
    """``--set head__key=value``: the parameter object ``head`` (built from a string such as
    ``"theory"``, or a copy of an object) with its parameter ``key`` set, refused by name."""
    choices = _parameter_objects(cls, head)
    if isinstance(current, BaseEstimator):
        obj = clone(current)
    elif isinstance(current, str) and current in choices:
        obj = choices[current]()
    elif choices:
        raise CLIError(
            f"--set {item!r}: {head}={current!r} is not one of {sorted(choices)}, the {head} objects whose "
            f"parameters {head}__PARAM=VALUE sets."
        )
    else:
        raise CLIError(
            f"--set {item!r}: {cls.__name__}'s {head!r} is not a parameter object, so it has no parameter "
            f"{key!r}; NAME__PARAM=VALUE sets a parameter of one, such as schedule__n_chains=2000 (--method mcmc)."
        )
    valid = obj.get_params(deep=True)
    if key not in valid:
        raise CLIError(
            f"--set {item!r}: {type(obj).__name__} (the {head} {current!r}) has no parameter {key!r}; "
            f"its parameters are {', '.join(sorted(valid))}."
        )
    return obj.set_params(**{key: value})


def fit_input(table):
    """What ``fit`` receives: a DataFrame when the file names its columns (and pandas is there)."""
    pd = _common.pandas()
    if table.columns is not None and pd is not None:
        return pd.DataFrame(table.values, columns=table.columns)
    return table.values


def score_input(est, table, model_path):
    """The data in the model's column order (by name when both have names)."""
    names = getattr(est, "feature_names_in_", None)
    values = table.values
    if names is not None and table.columns is not None:
        names = list(names)
        missing = [c for c in names if c not in table.columns]
        if missing:
            raise CLIError(
                f"{table.path} has no column {missing[0]!r}"
                + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else "")
                + f", which the model {model_path} was fitted on; its columns are {names[:10]}"
                + ("..." if len(names) > 10 else "")
                + "."
            )
        extra = [c for c in table.columns if c not in names]
        if extra:
            warn(f"ignoring columns {extra[:10]} of {table.path}, which the model does not have.")
        values = values[:, [table.columns.index(c) for c in names]]
    pd = _common.pandas()
    if names is not None and pd is not None and values.shape[1] == len(names):
        return pd.DataFrame(values, columns=list(names))
    return values
