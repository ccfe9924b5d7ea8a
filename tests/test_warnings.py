"""Warnings reach the user once per process and call site, at the user's line (issue 41, item 7).

Teachers fit inside ``warnings.catch_warnings`` (skprivpred/_teachers/_isolation.py), which resets
Python's per-module warning registries: the same PrivacyWarning came back on every call
from one line (5 seeded fits, 10 warnings). Under ``n_jobs=2`` the warnings pointed at
``multiprocessing/process.py`` instead of the user's line.
"""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skprivpred import PrivacyWarning, SubsampleAggregateClassifier, _base, _warnings, audit


@pytest.fixture
def fresh_registry(monkeypatch):
    monkeypatch.setattr(_warnings, "_SHOWN", set())


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] > 0).astype(int)


def test_seeded_fits_warn_once_per_line(fresh_registry):
    X, y = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own default: once per location
        for seed in range(5):
            clf = SubsampleAggregateClassifier(
                LogisticRegression(), classes=[0, 1], n_teachers=5, random_state=seed
            )
            clf.fit(X, y)  # one line, five fits (each fit's teachers reset the registry)
            clf.predict(X[:2])
    privacy = [w for w in caught if issubclass(w.category, PrivacyWarning)]
    assert len(privacy) == 1, [str(w.message)[:60] for w in privacy]
    assert privacy[0].filename == __file__
    assert "an integer random_state seeds the noise" in str(privacy[0].message)


def test_always_filter_still_shows_every_warning(fresh_registry):
    X, y = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for seed in range(3):
            SubsampleAggregateClassifier(
                LogisticRegression(), classes=[0, 1], n_teachers=5, random_state=seed
            ).fit(X, y)
    assert len([w for w in caught if issubclass(w.category, PrivacyWarning)]) == 3


def test_error_filter_raises(fresh_registry):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        with pytest.raises(PrivacyWarning):
            SubsampleAggregateClassifier(
                LogisticRegression(), classes=[0, 1], n_teachers=5, random_state=0
            ).fit(X, y)


def test_parallel_cross_validation_points_at_the_users_line(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(
        textwrap.dedent(
            """
            import warnings
            import numpy as np
            from sklearn.linear_model import LogisticRegression
            from sklearn.model_selection import cross_val_score
            from skprivpred import SubsampleAggregateClassifier
            warnings.simplefilter("default")
            rng = np.random.default_rng(0)
            X = rng.normal(size=(300, 3))
            y = (X[:, 0] > 0).astype(int)
            est = SubsampleAggregateClassifier(
                LogisticRegression(), classes=[0, 1], n_teachers=5, random_state=0
            )
            scores = cross_val_score(est, X, y, n_jobs=2, cv=4)  # THE USER'S LINE
            """
        )
    )
    line = next(
        i for i, text in enumerate(script.read_text().splitlines(), 1) if "THE USER'S LINE" in text
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True
    )
    locations = [
        text.split(": PrivacyWarning")[0]
        for text in result.stderr.splitlines()
        if ": PrivacyWarning:" in text
    ]
    assert locations, result.stderr
    assert set(locations) == {f"{script}:{line}"}, result.stderr
    # once per process and message: at most one seed warning and one score warning per worker
    assert len(locations) <= 4, result.stderr


def test_score_warning_site_is_the_users_line(fresh_registry, monkeypatch):
    monkeypatch.setitem(_base._score_warning, "shown", False)
    X, y = _data()
    clf = SubsampleAggregateClassifier(LogisticRegression(), classes=[0, 1], n_teachers=5)
    clf.fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        clf.score(X[:5], y[:5])
    assert [w.filename for w in caught if issubclass(w.category, PrivacyWarning)] == [__file__]


def test_audit_report_with_empty_outcomes_warns_nothing():
    # Outcome 2 never occurs for either data set: log 0 - log 0 used to warn.
    c1 = np.array([[60, 40, 0]])
    c2 = np.array([[55, 45, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = audit._report([c1, c2], np.array([0, 1, 2]), 100, 1.0, 0.95)
    assert report.max_observed_log_ratio == pytest.approx(np.log(45 / 40))
