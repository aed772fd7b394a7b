"""Every module of skmrf imports on its own, with no import cycle and no lazy skmrf imports.

A module that only imports after some other module was imported first (an
order-dependent cycle) fails in a fresh interpreter; the static checks find the
cycle even when today's import order happens to hide it.
"""

import ast
import importlib.util
import pkgutil
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import skmrf

PACKAGE = "skmrf"
ROOT = Path(skmrf.__file__).resolve().parent


def _modules():
    """``{module name: source path}`` for the package and every submodule."""
    mods = {PACKAGE: ROOT / "__init__.py"}
    for info in pkgutil.walk_packages([str(ROOT)], prefix=PACKAGE + "."):
        spec = importlib.util.find_spec(info.name)
        mods[info.name] = Path(spec.origin)
    return mods


MODULES = _modules()

# Runs in one fresh interpreter, which imports skmrf's third-party dependencies once (about 2 s;
# their import order is not ours to test) and then imports each skmrf module in its own forked
# child, which starts with no skmrf module loaded. Without fork: one interpreter per module.
_RUNNER = """
import importlib, os, subprocess, sys
names = sys.argv[1:]
def report(name, error):
    print(name, "->", error, flush=True)
if not hasattr(os, "fork"):
    for name in names:
        r = subprocess.run([sys.executable, "-c", "import " + name], capture_output=True, text=True)
        if r.returncode:
            report(name, (r.stderr.strip().splitlines() or ["?"])[-1])
    sys.exit(0)
import joblib, networkx, numpy, scipy.optimize, scipy.sparse, scipy.special, sklearn.base, sklearn.utils
assert not any(m == "skmrf" or m.startswith("skmrf.") for m in sys.modules)
for name in names:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            report(name, f"{type(exc).__name__}: {exc}")
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status and os.waitstatus_to_exitcode(status) != 1:
        report(name, f"child exited with status {os.waitstatus_to_exitcode(status)}")
"""


def test_every_module_imports_in_a_fresh_interpreter():
    names = sorted(MODULES)
    out = subprocess.run(
        [sys.executable, "-c", _RUNNER, *names], capture_output=True, text=True, cwd=ROOT.parent, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "", "modules that fail to import on their own:\n" + out.stdout


def _resolve(module, node):
    """Absolute module names an ``import`` / ``from ... import`` node of ``module`` refers to."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        is_package = MODULES[module].name == "__init__.py"
        parts = module.split(".")
        base = parts if is_package else parts[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module
    # ``from pkg import name``: name is a submodule or an attribute of pkg.
    return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]


def _owner(name):
    """The skmrf module that ``name`` is (or the closest enclosing one), else None."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module):
    """``(top-level skmrf imports, [(function, imported name, line)] of lazy ones)``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top, lazy = set(), []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # annotations only: not imported at run time
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, getattr(child, "name", "<lambda>"))
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for name in _resolve(module, child):
                    target = _owner(name)
                    if target is None or target == module:
                        continue
                    if function is None:
                        top.add(target)
                    else:
                        lazy.append((function, target, child.lineno))
            else:
                visit(child, function)

    visit(tree, None)
    return top, lazy


def _graph():
    """Top-level import graph; importing ``a.b.c`` also imports its packages ``a.b`` and ``a``."""
    graph = {}
    for module in MODULES:
        top, _ = _imports(module)
        edges = set(top)
        for target in top:
            parent = target.rpartition(".")[0]
            while parent:
                edges.add(parent)
                parent = parent.rpartition(".")[0]
        # A package's own parents are imported before it, not by it: no edge from a package
        # to its parents unless it imports them explicitly.
        graph[module] = sorted(e for e in edges if e != module and (e in top or not module.startswith(e + ".")))
    return graph


def _find_cycle(graph):
    """One cycle as a list of modules (first == last), or None."""
    state, stack = {}, []

    def dfs(node):
        state[node] = "open"
        stack.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := dfs(nxt)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := dfs(node)):
            return cycle
    return None


def test_no_import_cycle_between_modules():
    cycle = _find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_lazy_imports_of_skmrf_modules():
    graph = _graph()
    lazy = []
    for module in sorted(MODULES):
        for function, target, line in _imports(module)[1]:
            # Say which cycle, if any, the import would close at top level (why it was made lazy).
            cycle = _find_cycle({**graph, module: [*graph[module], target]})
            note = f" (at top level: cycle {' -> '.join(cycle)})" if cycle else ""
            lazy.append(f"{module}:{line} in {function}() imports {target}{note}")
    assert not lazy, "imports of skmrf modules inside functions (hide cycles):\n" + "\n".join(lazy)


def _layers(text):
    """The layers of CONTRIBUTING.md's table, top first: lists of module names relative to skmrf
    (``_utils/`` -> ``_utils``). Modules in no row (the package, ``datasets``, ``metrics``, the
    entry points) form a last layer of facades, which no layered module may import."""
    rows = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    return [[name.rstrip("/").replace("/", ".") for name in re.findall(r"`([^`]+)`", row)] for row in rows]


def _layer(module, layers):
    relative = module.partition(".")[2]
    for k, names in enumerate(layers):
        if any(relative == n or relative.startswith(n + ".") for n in names):
            return k
    return len(layers)


def _layer_violations(graph, layers):
    """``module (layer) imports target (layer)`` for every import up the table."""
    return [
        f"{module} (layer {_layer(module, layers)}) imports {target} (layer {_layer(target, layers)})"
        for module, targets in sorted(graph.items())
        if _layer(module, layers) < len(layers)
        for target in targets
        if target != PACKAGE and _layer(target, layers) > _layer(module, layers)
    ]


def test_imports_follow_the_layers_of_contributing():
    # #41 item 6: the layer order written in CONTRIBUTING.md, checked (the graph is the top-level one).
    layers = _layers((ROOT.parent / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert len(layers) >= 8 and ["_utils"] in [[n for n in row if n == "_utils"] for row in layers]
    violations = _layer_violations(_graph(), layers)
    assert not violations, "imports against the layer order of CONTRIBUTING.md:\n" + "\n".join(violations)
    unplaced = [m for m in MODULES if _layer(m, layers) == len(layers) and m.count(".") == 1]
    facades = {"skmrf.__main__", "skmrf._renamed_modules", "skmrf.datasets", "skmrf.metrics"}
    assert set(unplaced) <= facades, f"modules in no layer of CONTRIBUTING.md: {sorted(set(unplaced) - facades)}"


def test_the_static_checks_can_fail():
    assert _find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": ["b"], "b": [], "c": ["a", "b"]}) is None
    assert "skmrf.graphs" in _graph()["skmrf"]  # the package imports its modules
    layers = [["exceptions"], ["graphs"], ["model"]]
    assert _layer_violations({"skmrf.graphs": ["skmrf.model"]}, layers) == [
        "skmrf.graphs (layer 1) imports skmrf.model (layer 2)"
    ]
    assert _layer_violations({"skmrf.model": ["skmrf.graphs", "skmrf.exceptions"]}, layers) == []
    assert _layer_violations({"skmrf.graphs": ["skmrf.metrics"]}, layers)  # a facade, below every layer


@pytest.mark.parametrize(
    "module,name",
    [
        ("skmrf.estimators", "ScaleWarning"),
        ("skmrf.estimators", "MixingBoundWarning"),
        ("skmrf.estimators.gaussian", "NotPositiveDefiniteWarning"),
        ("skmrf.inference", "TreewidthError"),
        ("skmrf.model", "SamplingWarning"),
    ],
)
def test_moved_exceptions_still_import_from_their_old_place_with_a_future_warning(module, name):
    import importlib

    import skmrf.exceptions

    with pytest.warns(FutureWarning, match=f"{module}.{name} moved to skmrf.exceptions.{name}"):
        cls = getattr(importlib.import_module(module), name)
    assert cls is getattr(skmrf.exceptions, name)
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        getattr(importlib.import_module(module), "Nothing")  # noqa: B009


#: The modules users import from; every other module of skmrf is private (#25).
PUBLIC_MODULES = {
    "skmrf",
    "skmrf.cli",
    "skmrf.datasets",
    "skmrf.estimators",
    "skmrf.estimators.gaussian",
    "skmrf.exceptions",
    "skmrf.graphs",
    "skmrf.inference",
    "skmrf.io",
    "skmrf.metrics",
    "skmrf.model",
    "skmrf.plotting",
    "skmrf.protein",
}


def test_every_module_outside_the_public_ones_is_private():
    def private(name):
        return any(part.startswith("_") for part in name.split(".")[1:])

    public = {name for name in MODULES if not private(name)}
    assert public == PUBLIC_MODULES, (
        f"modules without a leading underscore that are not documented as public: {sorted(public - PUBLIC_MODULES)}; "
        "rename them with a leading underscore (or document them and add them here)"
    )


def _old_paths():
    from skmrf._renamed_modules import MODULES as renamed_modules
    from skmrf._renamed_modules import PACKAGES

    return sorted(renamed_modules) + sorted(PACKAGES) + ["skmrf.kernels.mcmc.defaults", "skmrf.data.rows"]


@pytest.mark.parametrize("old", _old_paths())
def test_a_renamed_module_imports_from_its_old_path_with_a_future_warning(old, monkeypatch):
    import importlib

    from skmrf._renamed_modules import renamed

    monkeypatch.delitem(sys.modules, old, raising=False)  # warn again if an earlier test imported it
    new = importlib.import_module(renamed(old))
    with warnings.catch_warnings():  # an old parent package warns too: not what this test checks
        warnings.simplefilter("ignore", FutureWarning)
        importlib.import_module(old.rpartition(".")[0])
    with pytest.warns(FutureWarning, match=f"{old} is private and was renamed {renamed(old)}"):
        alias = importlib.import_module(old)
    for name in getattr(new, "__all__", [])[:5]:
        assert getattr(alias, name) is getattr(new, name)
    # the alias never loads the module a second time under its old name
    assert sys.modules[renamed(old)] is new


def test_importing_every_old_path_leaves_the_public_names_alone():
    # The import system binds a loaded submodule on its parent package: an old module path named
    # like a public function (skmrf.estimators.gaussian.covariance_selection) replaced the function.
    code = (
        "import importlib, warnings\n"
        "from skmrf._renamed_modules import MODULES\n"
        "packages = [importlib.import_module(m) for m in ('skmrf', 'skmrf.estimators', "
        "'skmrf.estimators.gaussian', 'skmrf.inference', 'skmrf.model')]\n"
        "before = {(p.__name__, n): getattr(p, n) for p in packages for n in p.__all__}\n"
        "warnings.simplefilter('ignore')\n"
        "for old in MODULES: importlib.import_module(old)\n"
        "print(sorted(k for k, v in before.items() if getattr(importlib.import_module(k[0]), k[1]) is not v))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_a_pickle_naming_an_old_module_path_loads_with_a_future_warning(monkeypatch):
    import pickle

    monkeypatch.delitem(sys.modules, "skmrf.estimators.lap", raising=False)
    from skmrf import LAPEstimator

    old = pickle.dumps(LAPEstimator(max_iter=7), protocol=0).replace(b"skmrf.estimators._lap", b"skmrf.estimators.lap")
    assert b"skmrf.estimators.lap\n" in old
    with pytest.warns(FutureWarning, match="skmrf.estimators.lap is private"):
        est = pickle.loads(old)
    assert type(est) is LAPEstimator and est.max_iter == 7


def test_an_old_path_that_never_existed_is_the_usual_module_not_found_error():
    import importlib

    with warnings.catch_warnings(), pytest.raises(ModuleNotFoundError, match="skmrf.kernels.nothing"):
        warnings.simplefilter("ignore", FutureWarning)  # the old parent package's warning
        importlib.import_module("skmrf.kernels.nothing")


def test_import_skmrf_loads_no_optional_solver():
    # #41 item 4: cvxopt and chompack (the chordal Gaussian solvers) load on first use only.
    code = "import sys, skmrf; print(sorted(m for m in sys.modules if m.split('.')[0] in ('cvxopt', 'chompack')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
    code = (
        "import sys, numpy as np, skmrf; skmrf.GaussianMaxLikelihood('chain', solver='sparse')"
        ".fit(np.random.default_rng(0).standard_normal((50, 4))); print('chompack' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True", out  # the solver is there when a fit needs it


def test_every_budget_names_the_module_that_uses_it():
    # skmrf/_utils/_budgets.py says beside each value which module uses it; moved code (#41)
    # left three of those notes pointing at the estimators the kernels came from.
    lines = (ROOT / "_utils" / "_budgets.py").read_text(encoding="utf-8").splitlines()
    wrong = []
    for k, line in enumerate(lines):
        if m := re.match(r"# Used by (\S+)\.$", line):
            name = next(l.split(" = ")[0] for l in lines[k + 1 :] if re.match(r"^[A-Z_0-9]+ = ", l))
            user = ROOT.parent / m.group(1)
            if not (user.exists() and re.search(rf"\b{name}\b", user.read_text(encoding="utf-8"))):
                wrong.append(f"{name}: {m.group(1)}")
    assert not wrong, "budgets whose 'Used by' module does not use them:\n" + "\n".join(wrong)


def _long_functions(source, limit=60):
    """``(name, lines)`` of the functions whose body (docstring excluded) is longer than ``limit``
    lines with no ``Longer than 60 lines`` note in the three lines above them."""
    lines, long = source.splitlines(), []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body[1:] if ast.get_docstring(node) is not None and len(node.body) > 1 else node.body
            length = node.end_lineno - body[0].lineno + 1
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            noted = any("Longer than 60 lines" in line for line in lines[max(0, first - 4) : first - 1])
            if length > limit and not noted:
                long.append((node.name, length))
    return long


def test_modules_and_functions_keep_the_sizes_contributing_allows():
    # CONTRIBUTING: modules under 600 lines and functions under 60 unless a reason is written
    # beside them (#41: graphs.py had 724 lines, _mcmc.py branches of 45-76 lines).
    too_long = []
    for path in sorted(ROOT.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT.parent)
        if source.count("\n") > 600:
            too_long.append(f"{where}: {source.count(chr(10))} lines")
        too_long += [f"{where}: {name}() has {n} lines" for name, n in _long_functions(source)]
    assert not too_long, "over CONTRIBUTING's sizes (split it, or write why above the def):\n" + "\n".join(too_long)
    assert _long_functions("def f():\n" + "    x = 1\n" * 61) == [("f", 61)]  # the check can fail
    assert _long_functions("# Longer than 60 lines: one loop.\ndef f():\n" + "    x = 1\n" * 61) == []
