"""The import paths of the modules made private in 0.1, kept for one release with a FutureWarning.

skmrf's public names are those of its packages (``skmrf``, ``skmrf.estimators``, ``skmrf.inference``,
``skmrf.model``, ...) and of the modules ``skmrf.graphs``, ``skmrf.datasets``, ``skmrf.metrics`` and
``skmrf.exceptions``; every other module starts with an underscore or lives in a package that does.
Code or pickles that name an old path (``skmrf.estimators.lap``, ``skmrf.kernels.pseudo``, ...)
still import it: a finder placed first on :data:`sys.meta_path` answers only for the old names and
hands back a thin alias of the renamed module, so the module is never loaded twice.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

#: Internal packages renamed as a whole: their submodules follow.
PACKAGES = {
    "skmrf.data": "skmrf._data",
    "skmrf.kernels": "skmrf._kernels",
    "skmrf.solvers": "skmrf._solvers",
    "skmrf.utils": "skmrf._utils",
}

#: Modules of the public packages renamed with a leading underscore.
MODULES = (
    {"skmrf.parametrisation": "skmrf._parametrisation"}
    | {
        f"{package}.{name}": f"{package}._{name}"
        for package, names in {
            "skmrf.estimators": "bayes em exact lap mcmc mle_induced pseudo",
            "skmrf.estimators.gaussian": "lap max_likelihood",
            "skmrf.inference": (
                "adaptive_ais ais annealing conditionals enumerate evidence gibbs junction_tree tree_bound"
            ),
            "skmrf.model": "agreement discrete ising",
        }.items()
        for name in names.split()
    }
    | {  # the Gaussian kernels, moved to the kernel layer after 0.1 (#41). Not covariance_selection:
        # importing a module under that path made skmrf.estimators.gaussian.covariance_selection,
        # the public function, that module.
        f"skmrf.estimators.gaussian.{old}": new
        for old, new in {
            "chordal": "skmrf._kernels.gaussian.chordal",
            "lap_kernel": "skmrf._kernels.gaussian.lap",
            "lattice": "skmrf._kernels.gaussian.lattice",
            "newton_cg": "skmrf._kernels.gaussian.newton_cg",
            "sparse_ml": "skmrf._kernels.gaussian.sparse_ml",
            "spd": "skmrf._solvers.spd",
        }.items()
    }
)


def renamed(fullname):
    """The new name of an old module path, or None if ``fullname`` was not renamed."""
    if fullname in MODULES:
        return MODULES[fullname]
    for old, new in PACKAGES.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


class _Alias(types.ModuleType):
    """A module object under an old name that reads every attribute from the renamed module."""

    def __init__(self, name, target):
        super().__init__(name, target.__doc__)
        self.__dict__["_target"] = target
        if hasattr(target, "__path__"):
            # Submodules of an old package name come through the finder too, never from this path.
            self.__path__ = []

    def __getattr__(self, attr):
        return getattr(self.__dict__["_target"], attr)

    def __dir__(self):
        return dir(self.__dict__["_target"])


class _RenamedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        new = renamed(fullname)
        spec = None if new is None else importlib.util.find_spec(new)
        if spec is None:  # not renamed, or no such module under the new name either: the usual error
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=spec.submodule_search_locations is not None)

    def create_module(self, spec):
        new = renamed(spec.name)
        warnings.warn(
            f"{spec.name} is private and was renamed {new}; import the names you use from the public "
            "package (see the API reference): the old path goes in the next release.",
            FutureWarning,
            stacklevel=2,
        )
        return _Alias(spec.name, importlib.import_module(new))

    def exec_module(self, module):
        pass


def install():
    """Put the finder first on :data:`sys.meta_path` (once)."""
    if not any(isinstance(finder, _RenamedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RenamedModuleFinder())
