"""Code health: ruff (lint and format), mypy on the package, annotated public API.

The settings live in ``pyproject.toml`` (``[tool.ruff]``, ``[tool.mypy]``).
To fix a failure locally, from the repository root::

    .venv/bin/ruff check --fix . && .venv/bin/ruff format .
    .venv/bin/mypy
"""

import importlib
import inspect
import shutil
import subprocess
import sys
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
    "skprivpred.walk",
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


def test_ruff_lint():
    _run([*_tool("ruff"), "check", "--no-cache", "."])


def test_ruff_format():
    _run([*_tool("ruff"), "format", "--check", "--no-cache", "."])


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
                        if inspect.isfunction(member):
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
