"""Teacher fits grouped into few joblib tasks: the same teachers, validated once per task.

What is checked: :func:`skprivpred._teachers._fit.fit_teachers` groups many small
fits into about ``FIT_TASKS_PER_JOB`` joblib tasks per job; the fitted teachers
do not depend on the grouping or on the backend, and are those of one clone per
block seeded from the fit stream in block order (as one task per teacher gave);
scikit-learn's parameter validation runs in the first successful fit of each
task only, and a teacher whose fit fails still becomes the fallback constant.
"""

from __future__ import annotations

import joblib
import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from skprivpred._teachers import _fit as _teachers
from skprivpred._teachers._fit import ConstantTeacher, fit_teachers
from skprivpred._teachers._partition import random_partition


def data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def fit(estimator, n_teachers=200, seed=1, n_jobs=None, fallback=None):
    X, y = data()
    rng = np.random.default_rng(seed)
    parts = random_partition(y.size, n_teachers, rng)
    return fit_teachers(estimator, X, y, y, parts, rng, n_jobs, fallback), parts, rng


def same_teachers(a, b):
    assert len(a) == len(b)
    probe = np.random.default_rng(9).normal(size=(200, 3))
    for s, t in zip(a, b):
        assert type(s) is type(t)
        if isinstance(s, ConstantTeacher):
            assert s.label_index == t.label_index
        else:
            assert s.get_params() == t.get_params()
            np.testing.assert_array_equal(s.predict_proba(probe), t.predict_proba(probe))


@pytest.mark.parametrize("tasks_per_job", [1, 3, 10_000])
@pytest.mark.parametrize("backend", ["sequential", "threading"])
def test_teachers_do_not_depend_on_the_grouping_or_the_backend(monkeypatch, tasks_per_job, backend):
    base = DecisionTreeClassifier(max_depth=2, max_features=1)  # random: seeded per teacher
    reference, parts, _ = fit(base)
    monkeypatch.setattr(_teachers, "FIT_TASKS_PER_JOB", tasks_per_job)
    with joblib.parallel_config(backend=backend, n_jobs=2):
        teachers, _, _ = fit(base, n_jobs=2)
    same_teachers(teachers, reference)


def test_teachers_are_one_seeded_clone_per_block_in_block_order():
    base = DecisionTreeClassifier(max_depth=3, max_features=1)
    teachers, parts, rng_after = fit(base)
    X, y = data()
    rng = np.random.default_rng(1)
    random_partition(y.size, len(parts), rng)
    expected = []
    for part in parts:
        seeded = clone(base).set_params(random_state=int(rng.integers(0, 2**31 - 1)))
        single = np.unique(y[part]).size == 1
        expected.append(ConstantTeacher(y[part][0]) if single else seeded.fit(X[part], y[part]))
    same_teachers(teachers, expected)
    assert rng.integers(2**31) == rng_after.integers(2**31)  # the stream advanced alike


class _RecordingTree(DecisionTreeClassifier):
    """Records whether scikit-learn validates its parameters in this fit."""

    validated: list[bool] = []

    def fit(self, X, y, sample_weight=None, check_input=True):
        _RecordingTree.validated.append(not sklearn.get_config()["skip_parameter_validation"])
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)


def test_every_fit_validates_its_parameters(monkeypatch):
    # No fit's configuration depends on whether an earlier block of its task fitted.
    monkeypatch.setattr(_RecordingTree, "validated", [])
    monkeypatch.setattr(_teachers, "FIT_TASKS_PER_JOB", 4)
    teachers, _, _ = fit(_RecordingTree(max_depth=1), n_teachers=400, n_jobs=1)
    fitted = [t for t in teachers if not isinstance(t, ConstantTeacher)]
    assert len(_RecordingTree.validated) == len(fitted) > 200
    assert all(_RecordingTree.validated)
    assert not sklearn.get_config()["skip_parameter_validation"]  # restored


def test_invalid_parameters_are_still_refused():
    with pytest.raises(ValueError, match="max_depth"):
        fit(DecisionTreeClassifier(max_depth=-1))
    teachers, parts, _ = fit(DecisionTreeClassifier(max_depth=-1), fallback=1)
    _, y = data()
    assert all(isinstance(t, ConstantTeacher) for t in teachers)
    assert all(t.label_index == 1 for t, p in zip(teachers, parts) if np.unique(y[p]).size > 1)


class _FailsOnSmallBlocks(LogisticRegression):
    def fit(self, X, y, sample_weight=None):
        if len(y) < 6:
            raise RuntimeError("too few rows")
        return super().fit(X, y, sample_weight=sample_weight)


def test_a_failing_fit_becomes_the_fallback_and_the_next_fits_go_on():
    X, y = data(n=300)
    rng = np.random.default_rng(3)
    parts = [np.arange(k, k + 4) if k % 2 else np.arange(k, k + 8) for k in range(0, 200, 10)]
    teachers = fit_teachers(_FailsOnSmallBlocks(), X, y, y, parts, rng, fallback=0)
    for part, teacher in zip(parts, teachers):
        if np.unique(y[part]).size == 1:
            assert isinstance(teacher, ConstantTeacher)
        elif len(part) < 6:
            assert isinstance(teacher, ConstantTeacher) and teacher.label_index == 0
        else:
            assert isinstance(teacher, _FailsOnSmallBlocks)
