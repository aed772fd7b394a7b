"""numpydoc validation of the public API: ``skmrf.__all__`` and the public methods of its estimators."""

import inspect

import pytest

import skmrf

validate = pytest.importorskip("numpydoc.validate").validate

# The checks enforced (numpydoc.validate codes). Left out on purpose: ES01 (extended summary:
# short methods need none), SA01/EX01 (See Also and Examples on every method is too much; the
# classes have them), GL01/GL02 (blank-line layout of the opening quotes), RT02 (return name:
# unnamed returns are fine), YD01 (no generators), SA02-SA04 (See Also layout), PR06 (allows
# "str" vs "string" as the project writes it).
CHECKS = {
    "GL08",  # the object has a docstring
    "SS01",  # a summary line,
    "SS02",  # starting with a capital letter,
    "SS03",  # ending with a period,
    "SS04",  # without leading whitespace,
    "SS05",  # in the imperative for functions ("Return", not "Returns"),
    "SS06",  # and on one line
    "PR01",  # every parameter documented
    "PR02",  # no documented parameter that does not exist
    "PR03",  # parameters documented in signature order
    "PR04",  # each parameter has a type
    "PR05",  # the type does not end with a period
    "PR07",  # each parameter has a description
    "PR08",  # starting with a capital letter
    "PR09",  # and ending with a period
    "PR10",  # "name : type" with a space before the colon
    "RT01",  # a Returns section when the function returns something
    "RT03",  # each returned value has a description
    "RT04",  # starting with a capital letter
    "RT05",  # and ending with a period
    "GL03",  # no double blank lines
    "GL05",  # no tabs
    "GL06",  # only known section names
    "GL07",  # sections in numpydoc order
    "GL09",  # deprecation warning in the right place
    "GL10",  # reST directives end with a double colon
}

# Public methods inherited from scikit-learn (BaseEstimator, DensityMixin) are documented there.
SKLEARN_METHODS = {"get_params", "set_params", "get_metadata_routing", "set_output", "__sklearn_tags__"}


def _public_objects():
    """``[(name, object)]``: each name of ``skmrf.__all__``, and the public methods and properties
    of its classes, reported once under the (skmrf) class that defines them."""
    found = {}
    for name in skmrf.__all__:
        obj = getattr(skmrf, name)
        found[f"skmrf.{name}"] = obj
        if not inspect.isclass(obj):
            continue
        for attr in dir(obj):
            if attr.startswith("_") or attr in SKLEARN_METHODS:
                continue
            owner = next(base for base in obj.__mro__ if attr in vars(base))
            member = vars(owner)[attr]
            if owner.__module__.startswith("skmrf.") and (
                inspect.isfunction(member) or isinstance(member, (property, classmethod, staticmethod))
            ):
                found[f"{owner.__module__}.{owner.__qualname__}.{attr}"] = None
    return sorted(found.items())


OBJECTS = _public_objects()


def _import_path(qualname, obj):
    """A name numpydoc can import: the defining module for methods, ``skmrf.X`` otherwise."""
    if obj is None:  # a method, already named through its defining module
        return qualname
    return f"{obj.__module__}.{obj.__qualname__}"


@pytest.mark.parametrize("qualname,obj", OBJECTS, ids=[q for q, _ in OBJECTS])
def test_docstring(qualname, obj):
    result = validate(_import_path(qualname, obj))
    errors = [f"{code}: {msg}" for code, msg in result["errors"] if code in CHECKS]
    assert not errors, f"{qualname}:\n" + "\n".join(errors)
