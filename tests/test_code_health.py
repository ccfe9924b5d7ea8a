"""Code health: ruff (lint and format), mypy, annotated public API, no internal citations.

The settings live in ``pyproject.toml`` (``[tool.ruff]``, ``[tool.mypy]``).
To fix a failure locally, from the repository root::

    .venv/bin/ruff check --fix . && .venv/bin/ruff format .
    .venv/bin/mypy
"""

import ast
import importlib
import inspect
import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Modules whose ``__all__`` is the public API, annotated and checked by mypy.
PUBLIC_MODULES = [
    "skprivpred",
    "skprivpred.accounting",
    "skprivpred.audit",
    "skprivpred.datasets",
    "skprivpred.mechanisms",
    "skprivpred.model_selection",
    "skprivpred.utils",
    "skprivpred.finite",
    "skprivpred.ensemble",
    "skprivpred.linear_model",
    "skprivpred.density",
    "skprivpred.everlasting",
]


def _tool(name):
    """Command that runs ``name`` from this interpreter's environment, or skip."""
    pytest.importorskip(name)
    executable = Path(sys.executable).parent / name
    if executable.exists():
        return [str(executable)]
    found = shutil.which(name)
    return [found] if found else [sys.executable, "-m", name]


def _run(command):
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, (
        f"`{' '.join(command)}` failed (exit {result.returncode}):\n"
        f"{result.stdout[-8000:]}\n{result.stderr[-4000:]}"
    )


@pytest.mark.code_health
def test_ruff_lint():
    _run([*_tool("ruff"), "check", "--no-cache", "."])


@pytest.mark.code_health
def test_ruff_format():
    _run([*_tool("ruff"), "format", "--check", "--no-cache", "."])


@pytest.mark.code_health
def test_mypy():
    # Files and settings come from [tool.mypy] in pyproject.toml.
    _run([*_tool("mypy"), "--no-incremental", "--cache-dir", "/dev/null"])


def _public_callables():
    """(qualified name, function) for every public function and public method."""
    seen = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                functions = [(f"{obj.__module__}.{obj.__qualname__}", obj)]
            elif inspect.isclass(obj) and not issubclass(obj, BaseException):
                functions = []
                for klass in obj.__mro__:
                    if not klass.__module__.startswith("skprivpred"):
                        continue
                    for attr, member in vars(klass).items():
                        if attr.startswith("_") and attr != "__init__":
                            continue
                        member = getattr(member, "fget", member)  # properties
                        # (typing.Protocol's generated __init__ is not ours)
                        if inspect.isfunction(member) and member.__module__.startswith(
                            "skprivpred"
                        ):
                            functions.append((f"{obj.__module__}.{obj.__name__}.{attr}", member))
            else:
                continue
            for qualified, function in functions:
                if function not in seen:
                    seen.add(function)
                    yield qualified, function


def test_public_api_is_annotated():
    """Every public function and method annotates its parameters and its return."""
    missing = []
    for qualified, function in _public_callables():
        signature = inspect.signature(function)
        if function.__name__ != "__init__" and (
            signature.return_annotation is inspect.Signature.empty
        ):
            missing.append(f"{qualified}: return")
        for name, parameter in signature.parameters.items():
            if name in ("self", "cls"):
                continue
            if parameter.annotation is inspect.Parameter.empty:
                missing.append(f"{qualified}: {name}")
    assert not missing, "missing type annotations:\n" + "\n".join(missing)


# -- No user-facing text cites the internal design specs ------------------------------------
# The specs are not shipped: every docstring, message, guarantee and page cites the paper and
# its result instead (for example "Dwork & Feldman (2018), Theorem 4.1").
SPEC_CITATION = re.compile(r"\bspec-\d{3}\b|\bspecs?\s*§", re.IGNORECASE)
PACKAGE = ROOT / "skprivpred"


def _spec_citations(text):
    return sorted({match.group(0) for match in SPEC_CITATION.finditer(text or "")})


def _package_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        yield path, module.removesuffix(".__init__")


def _public_objects():
    """(qualified name, object) for every public module, class, function, method and property."""
    for _, module_name in _package_modules():
        if any(part.startswith("_") for part in module_name.split(".")) or (
            module_name.endswith("__main__")
        ):
            continue
        module = importlib.import_module(module_name)
        yield module_name, module
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            yield f"{module_name}.{name}", obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if not attr.startswith("_") or attr == "__init__":
                        yield f"{module_name}.{name}.{attr}", getattr(member, "fget", member)


def test_public_docstrings_cite_papers_not_specs():
    found, seen = [], set()
    for name, obj in _public_objects():
        if id(obj) in seen:  # a re-exported name: report it once
            continue
        seen.add(id(obj))
        if hits := _spec_citations(inspect.getdoc(obj)):
            found.append(f"{name}: {', '.join(hits)}")
    assert not found, "docstrings citing an internal spec (cite the paper):\n" + "\n".join(found)


def test_package_strings_and_comments_cite_papers_not_specs():
    """String literals (messages, warnings, guarantees) and comments of skprivpred/**/*.py."""
    found = []
    for path, _ in _package_modules():
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for hit in _spec_citations(node.value):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {hit}")
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        for token in tokens:
            if token.type == tokenize.COMMENT:
                for hit in _spec_citations(token.string):
                    found.append(f"{path.relative_to(ROOT)}:{token.start[0]}: {hit} (comment)")
    assert not found, "internal spec citations (cite the paper):\n" + "\n".join(found)


def test_rendered_docs_cite_papers_not_specs():
    """The pages (docs/**/*.rst), the example gallery (examples/*.py) and the README."""
    paths = [
        *sorted((ROOT / "docs").rglob("*.rst")),
        *sorted((ROOT / "examples").glob("*.py")),
        ROOT / "README.md",
    ]
    found = []
    for path in paths:
        if any(part in {"_build", "generated", "auto_examples"} for part in path.parts):
            continue  # build output
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for hit in _spec_citations(line):
                found.append(f"{path.relative_to(ROOT)}:{lineno}: {hit}")
    assert not found, "pages citing an internal spec (cite the paper):\n" + "\n".join(found)


# -- tests are named by what they check ---------------------------------------------------------
# A regression test's name says the behaviour it checks; the issue that found it may be cited
# in a comment. Issue numbers in names ("test_38_1_...", "test_..._issue41_...") and files named
# after a history of fixes are refused.
_ISSUE_NAME = re.compile(r"^test_\d|_(?:i|issue)?\d{2}_|issue_?\d|_fix(?:es)?$")


def _issue_named(tests: Path) -> list[str]:
    found = []
    for path in sorted(tests.rglob("*.py")):
        if _ISSUE_NAME.search(path.stem):
            found.append(str(path.relative_to(tests)))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("test") and _ISSUE_NAME.search(node.name):
                    found.append(f"{path.relative_to(tests)}:{node.lineno}: {node.name}")
    return found


def test_no_test_file_or_test_name_carries_an_issue_number():
    found = _issue_named(ROOT / "tests")
    assert not found, "tests named after an issue (name the behaviour):\n" + "\n".join(found)


def test_the_issue_number_check_can_fail(tmp_path):
    (tmp_path / "test_isolation_fixes.py").write_text("def test_38_1_a_view(): pass\n")
    (tmp_path / "test_fine.py").write_text(
        "def test_a_view_is_frozen(): pass\ndef test_bound_for_issue_41(): pass\n"
    )
    assert _issue_named(tmp_path) == [
        "test_fine.py:2: test_bound_for_issue_41",
        "test_isolation_fixes.py",
        "test_isolation_fixes.py:1: test_38_1_a_view",
    ]
