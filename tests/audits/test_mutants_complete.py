"""Every public estimator has a mutant test (issue: audits that catch a real regression).

Each ``tests/test_mutants_<part>.py`` declares the estimator classes its mutant test covers in
a module-level ``MUTANT_CLASSES``. This test loads every such file by path, unions those sets
and checks them against the estimator classes of ``skprivpred.__all__`` (the enumeration of
``tests/test_common.py``): a new public estimator without a mutant fails here.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

from sklearn.base import BaseEstimator

import skprivpred

TESTS = Path(__file__).parent


def _estimator_names() -> set[str]:
    return {
        obj.__name__
        for obj in (getattr(skprivpred, name) for name in skprivpred.__all__)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator)
    }


def _declared_mutants(directory: Path) -> dict[str, frozenset[str]]:
    """``MUTANT_CLASSES`` of every ``test_mutants_*.py`` in ``directory`` (but this file)."""
    declared = {}
    for path in sorted(directory.glob("test_mutants_*.py")):
        if path.name == Path(__file__).name:
            continue
        spec = importlib.util.spec_from_file_location(f"_mutant_declarations_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        classes = getattr(module, "MUTANT_CLASSES", None)
        assert isinstance(classes, frozenset), f"{path.name} must define MUTANT_CLASSES"
        declared[path.name] = classes
    return declared


def _missing(directory: Path) -> tuple[set[str], set[str]]:
    """(estimators without a mutant, declared names that are not public estimators)."""
    covered = set().union(*_declared_mutants(directory).values())
    names = _estimator_names()
    return names - covered, covered - names


def test_every_public_estimator_has_a_mutant():
    uncovered, unknown = _missing(TESTS)
    assert not uncovered, f"public estimators without a mutant test: {sorted(uncovered)}"
    assert not unknown, f"MUTANT_CLASSES names that are not public estimators: {sorted(unknown)}"


def test_a_missing_mutant_is_reported(tmp_path):
    """The check itself can fail: a mutant file that leaves one estimator out is caught."""
    names = sorted(_estimator_names())
    (tmp_path / "test_mutants_partial.py").write_text(
        f"MUTANT_CLASSES = frozenset({names[1:]!r})\n"
    )
    (tmp_path / "test_mutants_typo.py").write_text(
        "MUTANT_CLASSES = frozenset({'NoSuchClassifier'})\n"
    )
    assert _missing(tmp_path) == ({names[0]}, {"NoSuchClassifier"})
