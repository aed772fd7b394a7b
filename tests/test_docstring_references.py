"""Every Sphinx cross-reference in skmrf's docstrings and ``#:`` comments names something that exists.

#41 item 6: modules moved and references such as ``:mod:`.lap_kernel``` went stale without a
sound. A reference resolves when a name defined in the package (a module, a module-level name, a
class, a method, a class attribute, an attribute assigned on ``self``) has it as a dotted suffix,
as Sphinx's search for a name does, or when it imports (a name re-exported by a package, or one
of numpy, scipy, scikit-learn, ...). So ``:func:`._data.covariance_on_pattern``` fails once the function lives in
``skmrf._data.gaussian``, and ``:attr:`theta``` passes as long as some class stores ``theta``.
"""

import ast
import importlib
import re
from pathlib import Path

import pytest

import skmrf

ROOT = Path(skmrf.__file__).parent
ROLE = re.compile(r":(mod|func|class|meth|data|attr|obj|exc):`([^`]+)`")


def _module_name(path):
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _defined_names():
    """Every qualified name skmrf defines, found in its source (no import needed)."""
    names = set()
    for path in ROOT.rglob("*.py"):
        module = _module_name(path)
        names.add(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(f"{prefix}.{child.name}")
                    visit(child, f"{prefix}.{child.name}" if isinstance(child, ast.ClassDef) else prefix)
                elif isinstance(child, (ast.Assign, ast.AnnAssign)):
                    targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                    for target in targets:
                        for leaf in ast.walk(target):
                            if isinstance(leaf, ast.Name):
                                names.add(f"{prefix}.{leaf.id}")
                            elif isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name):
                                if leaf.value.id == "self":  # attributes assigned in methods
                                    names.add(f"{prefix}.{leaf.attr}")
                elif isinstance(child, (ast.Import, ast.ImportFrom)):
                    for alias in child.names:  # re-exports: skmrf.GaussianLAP, ...
                        names.add(f"{prefix}.{alias.asname or alias.name.split('.')[0]}")
                else:
                    visit(child, prefix)

        visit(tree, module)
    return names


def _references():
    """``(where, role, target)`` of every cross-reference in docstrings and ``#:`` comments."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT.parent)
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                for role, target in ROLE.findall(node.value.value):
                    found.append((f"{where}:{node.lineno}", role, target))
        for k, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("#:"):
                found.extend((f"{where}:{k}", role, target) for role, target in ROLE.findall(line))
    return found


def _target(text):
    """The name a reference points at: ``~a.b`` -> ``a.b``, ``text <a.b>`` -> ``a.b``, ``f()`` -> ``f``."""
    if "<" in text:
        text = text[text.index("<") + 1 : text.rindex(">")]
    return text.strip().lstrip("~!").removesuffix("()").lstrip(".")


def _imports(name):
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        try:
            for attr in parts[k:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _resolves(target, names, suffixes):
    return target in names or "." + target in suffixes or _imports(target)


def _suffixes(names):
    out = set()
    for name in names:
        parts = name.split(".")
        out.update("." + ".".join(parts[k:]) for k in range(len(parts)))
    return out


def test_every_docstring_reference_resolves():
    names = _defined_names()
    suffixes = _suffixes(names)
    stale = [
        f"{where} :{role}:`{target}`"
        for where, role, target in _references()
        if not _resolves(_target(target), names, suffixes)
    ]
    assert not stale, "references to names skmrf does not define:\n" + "\n".join(stale)


@pytest.mark.parametrize(
    "target, ok",
    [
        ("skmrf._kernels.gaussian.lap", True),
        ("_kernels.gaussian.lap.LapPlan", True),
        ("~skmrf.GaussianLAP", True),
        ("numpy.linalg.eigh", True),
        ("theta_", True),  # an attribute some estimator sets on self
        ("._data.covariance_on_pattern", False),  # the module moved to _data.gaussian
        ("skmrf.estimators.gaussian._lap_kernel", False),
        ("skmrf.estimators._coin_tossing", False),
    ],
)
def test_the_resolver_can_fail(target, ok):
    names = _defined_names()
    assert _resolves(_target(target), names, _suffixes(names)) is ok
