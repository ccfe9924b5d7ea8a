"""The package's layout: subpackages by concept, no import cycle, small modules, shims.

Read from the source (``ast``), so a check holds for every import, including the
imports inside functions that run only on some paths. Imports under ``if
TYPE_CHECKING:`` are excluded from the cycle check: they never run.
"""

from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import pytest

import skprivpred

PACKAGE = Path(skprivpred.__file__).parent

#: The root's real modules: what every subpackage shares, and the public modules.
ROOT_MODULES = {
    "__init__",
    "_available",
    "_base",
    "_hopeless",
    "_semisupervised",
    "_stability",
    "_warnings",
    "audit",
    "exceptions",
    "preprocessing",
}
#: Old public module paths kept as deprecation shims -> the public home of their names.
SHIMS = {
    "aggregate": "skprivpred.ensemble",
    "averaging": "skprivpred.ensemble",
    "hypotheses": "skprivpred.finite",
    "linear": "skprivpred.linear_model",
    "mixtures": "skprivpred.finite",
    "sufficient": "skprivpred.linear_model",
    "walk": "skprivpred.finite",
}
#: Public import paths that must keep working (with a name each must still give).
PUBLIC_PATHS = {
    "skprivpred.accounting": "PrivacyAccountant",
    "skprivpred.mechanisms": "pac_n_partitions",
    "skprivpred.audit": "clopper_pearson",
    "skprivpred.everlasting": "genericbbl_plan",
    "skprivpred.finite": "ExponentialMechanismClassifier",
    "skprivpred.model_selection": "PrivateGridSearchCV",
    "skprivpred.preprocessing": "is_public",
    "skprivpred.serving": "save_model",
    "skprivpred.datasets": "load_adult",
    "skprivpred.utils": "expected_failed_checks",
    "skprivpred.ensemble": "SubsampleAggregateClassifier",
    "skprivpred.linear_model": "StableERMClassifier",
    "skprivpred.density": "DPValidatedHistogramDensity",
}
PUBLIC_PACKAGES = [
    "skprivpred",
    "skprivpred.accounting",
    "skprivpred.density",
    "skprivpred.ensemble",
    "skprivpred.everlasting",
    "skprivpred.finite",
    "skprivpred.linear_model",
    "skprivpred.mechanisms",
    "skprivpred.model_selection",
    "skprivpred.serving",
    "skprivpred.datasets",
    "skprivpred.utils",
]
MAX_LINES = 2000


def _modules(root: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(sub) for sub in ast.walk(child))
    return skipped


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """``module -> modules it imports`` inside the package, at any depth of the code."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_nodes(tree)
        out: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = name.split(".") if is_package else name.split(".")[:-1]
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        out.add(f"{base}.{alias.name}")
                    elif base in modules:
                        out.add(base)
            elif isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names if alias.name in modules)
        out.discard(name)
        graph[name] = out
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def test_find_cycles_finds_a_cycle_through_an_import_inside_a_function(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import x\n")
    (package / "b.py").write_text("def f():\n    from .a import y\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import z\n"
    )
    assert find_cycles(import_graph(package)) == [["pkg.a", "pkg.b"]]


def test_no_import_cycle_between_modules():
    assert find_cycles(import_graph()) == []


def test_no_module_over_two_thousand_lines():
    long = {
        name: n
        for name, (path, _) in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_root_holds_only_shared_modules_and_shims():
    root = {p.stem for p in PACKAGE.glob("*.py")}
    assert root - set(SHIMS) == ROOT_MODULES
    assert len(ROOT_MODULES) <= 12
    assert set(SHIMS) <= root


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_shim_is_only_a_shim(old):
    """A shim defines nothing but ``__getattr__``/``__dir__`` and imports only its home."""
    tree = ast.parse((PACKAGE / f"{old}.py").read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert defined <= {"__getattr__", "__dir__"}
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level
    }
    home = SHIMS[old].rsplit(".", 1)[1]
    assert home in imported
    assert all(m == home or m.startswith(home + ".") for m in imported), imported
    assert not any(
        isinstance(node, ast.ImportFrom) and node.level and not node.module
        for node in ast.walk(tree)
    ), "a shim never imports from the package root"


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_old_public_path_warns_and_names_the_new_home(old):
    module = importlib.import_module(f"skprivpred.{old}")
    assert module.__all__
    home = importlib.import_module(SHIMS[old])
    for name in module.__all__:
        with pytest.warns(FutureWarning, match=rf"import {name} from {SHIMS[old]}$"):
            value = getattr(module, name)
        assert value is getattr(home, name)
    for name in sorted(set(dir(module)) - set(module.__all__)):
        with pytest.warns(FutureWarning, match=rf"import {name} from {SHIMS[old]}"):
            getattr(module, name)
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def test_import_skprivpred_imports_no_shim():
    shims = sorted("skprivpred." + s for s in SHIMS)
    code = (
        "import sys, skprivpred, skprivpred.serving, skprivpred.datasets\n"
        f"print(sorted(m for m in sys.modules if m in {shims!r}))"
    )
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("path", sorted(PUBLIC_PATHS))
def test_public_path_imports(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        module = importlib.import_module(path)
        assert getattr(module, PUBLIC_PATHS[path]) is not None


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_exported_name_resolves(package):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        module = importlib.import_module(package)
        assert module.__all__
        for name in module.__all__:
            assert getattr(module, name) is not None, name
