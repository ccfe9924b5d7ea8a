"""The unlabelled marker cannot pass for a class in silence (issue 41, item 2).

With y in {-1, 1} and classes=[0, 1], every -1 row was read as an unlabelled public row,
the model always predicted 1 and score() reported 1.0, without a word.
"""

import warnings

import numpy as np
import pytest

from skprivpred import (
    SufficientStatisticClassifier,
    SufficientStatisticRegressor,
    UnlabelledRowsWarning,
    _warnings,
)


def _minus_one_as_a_class(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + rng.normal(size=n) > 0, 1, -1)
    return X, y


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [w for w in caught if issubclass(w.category, UnlabelledRowsWarning)]


def test_fit_says_how_many_rows_were_taken_as_public():
    X, y = _minus_one_as_a_class()
    n_marked = int((y == -1).sum())
    clf = SufficientStatisticClassifier(classes=[0, 1], random_state=0)
    _, caught = _caught(lambda: clf.fit(X, y))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"took {n_marked} of {len(y)} rows (y == -1) as unlabelled public rows" in message
    assert "NOT protected" in message and "remap the labels" in message
    assert caught[0].filename == __file__  # at the user's line


def test_score_warns_with_the_count_of_ignored_rows():
    X, y = _minus_one_as_a_class()
    clf = SufficientStatisticClassifier(classes=[0, 1], random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    score, caught = _caught(lambda: clf.score(X, y))
    assert score == 1.0  # the rows with y == -1 are still ignored, as the guide says...
    assert len(caught) == 1  # ...but no longer in silence
    n_marked = int((y == -1).sum())
    assert f"score ignored {n_marked} of {len(y)} rows (y == -1" in str(caught[0].message)
    assert caught[0].filename == __file__


def test_the_score_warning_is_shown_once_per_call_site(monkeypatch):
    monkeypatch.setattr(_warnings, "_SHOWN", set())  # this process has shown nothing yet
    X, y = _minus_one_as_a_class()
    clf = SufficientStatisticClassifier(classes=[0, 1], random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        clf.fit(X, y)
        for _ in range(3):
            clf.score(X, y)  # one line, three calls
    unlabelled = [w for w in caught if issubclass(w.category, UnlabelledRowsWarning)]
    assert [str(w.message).split(".")[1][:5] for w in unlabelled] == ["fit t", "score"]


def test_regressor_nan_targets():
    X, _ = _minus_one_as_a_class()
    y = X[:, 0].copy()
    y[:300] = np.nan
    reg = SufficientStatisticRegressor(y_bounds=(-3.0, 3.0), random_state=0)
    _, caught = _caught(lambda: reg.fit(X, y))
    assert len(caught) == 1
    assert "took 300 of 2000 rows (y NaN) as unlabelled public rows" in str(caught[0].message)
    _, caught = _caught(lambda: reg.score(X, y))
    assert len(caught) == 1 and "score ignored 300 of 2000 rows (y NaN)" in str(caught[0].message)


def test_classes_none_names_the_marker():
    X, y = _minus_one_as_a_class()
    with pytest.raises(ValueError, match="-1 is not a class: it marks unlabelled public rows"):
        SufficientStatisticClassifier().fit(X, y)


def test_five_fold_cross_validation_shows_each_warning_once_under_default_filters(monkeypatch):
    """Per-fold counts differ; they stay out of the once-per-site key (issue 51, item 4)."""
    from sklearn.model_selection import KFold, cross_val_score

    monkeypatch.setattr(_warnings, "_SHOWN", set())  # this process has shown nothing yet
    X, y = _minus_one_as_a_class()
    clf = SufficientStatisticClassifier(classes=[0, 1], random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()  # Python's default filters: a UserWarning shows once per site
        warnings.simplefilter("default")
        scores = cross_val_score(clf, X, y, cv=KFold(5))
    assert scores.shape == (5,)
    unlabelled = [w for w in caught if issubclass(w.category, UnlabelledRowsWarning)]
    kinds = [str(w.message).split(".")[1][:5] for w in unlabelled]
    assert kinds == ["fit t", "score"]  # one of each, not one per fold
    assert all(w.filename == __file__ for w in unlabelled)  # the cross_val_score line
    # The first fold's counts are shown: a fit took the marked rows of 4/5 of the data.
    assert f"of {len(y) * 4 // 5} rows (y == -1)" in str(unlabelled[0].message)
