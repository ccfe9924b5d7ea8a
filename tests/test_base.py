"""Random streams and validators shared by every private predictor."""

from numbers import Integral, Real

import numpy as np
import pytest

from skprivpred import InvalidParameterError
from skprivpred._base import spawn_streams
from skprivpred.utils import Interval, StrOptions, check_param, validate_parameter_constraints


@pytest.mark.parametrize(
    "random_state",
    [0, 123, np.random.SeedSequence(5), np.random.default_rng(1), np.random.RandomState(2)],
    ids=["int0", "int123", "seedseq", "generator", "randomstate"],
)
def test_fit_and_query_streams_are_distinct(random_state):
    fit_rng, query_rng = spawn_streams(random_state)
    assert not np.array_equal(fit_rng.random(8), query_rng.random(8))


def test_integer_seed_is_reproducible_and_none_is_not():
    a = [g.random(4) for g in spawn_streams(7)]
    b = [g.random(4) for g in spawn_streams(7)]
    np.testing.assert_array_equal(a, b)
    c = [g.random(4) for g in spawn_streams(None)]
    d = [g.random(4) for g in spawn_streams(None)]
    assert not np.array_equal(c, d)


@pytest.mark.parametrize("bad, error", [(-1, ValueError), ("seed", TypeError), (1.5, TypeError)])
def test_bad_random_state(bad, error):
    with pytest.raises(error, match="random_state"):
        spawn_streams(bad)


def test_validators_name_parameter_and_value():
    positive = Interval(Real, 0, None, closed="neither")
    with pytest.raises(ValueError, match=r"'epsilon' parameter must be a float in the range"):
        check_param(-2.0, "epsilon", positive)
    with pytest.raises(TypeError, match="epsilon.*Got True"):
        check_param(True, "epsilon", positive)
    with pytest.raises(InvalidParameterError, match="n_teachers"):
        check_param(3.0, "n_teachers", Interval(Integral, 1, None, closed="left"))
    assert check_param(None, "n_teachers", None) is None


@pytest.mark.parametrize(
    "value, constraints",
    [
        (float("inf"), [Interval(Real, 0, None, closed="neither")]),
        (float("nan"), [Interval(Real, 0, 1, closed="both")]),
        (0, [Interval(Real, 0, 1, closed="neither")]),
        (1, [Interval(Real, 0, 1, closed="left")]),
        (True, [Interval(Integral, 0, None, closed="left")]),
        ("lapalce", [StrOptions({"laplace", "gaussian"})]),
        (None, [Interval(Real, 0, None, closed="neither")]),
    ],
)
def test_constraints_refuse_what_they_exclude(value, constraints):
    with pytest.raises(InvalidParameterError, match="The 'p' parameter of Est must be"):
        validate_parameter_constraints({"p": constraints}, {"p": value}, "Est")


def test_constraints_accept_what_they_include():
    constraints = {
        "a": [Interval(Real, 0, 1, closed="both")],
        "b": [StrOptions({"x", "y"}), None],
        "c": [Interval(Integral, 1, None, closed="left")],
    }
    validate_parameter_constraints(constraints, {"a": 1, "b": None, "c": 3}, "Est")
    validate_parameter_constraints(constraints, {"a": 0.0, "b": "y", "c": 10**12}, "Est")


def test_show_versions_prints_the_main_packages(capsys):
    import skprivpred

    skprivpred.show_versions()
    out = capsys.readouterr().out
    assert f"skprivpred: {skprivpred.__version__}" in out and "scikit-learn:" in out


# -- score() spends budget: one PrivacyWarning per process -------------------------------------
def _spending_warnings(caught) -> list:
    return [w for w in caught if "score() answers every row of X" in str(w.message)]


@pytest.fixture
def score_warning_not_shown(monkeypatch):
    """Reset the once-per-process flag (the suite's first scoring test consumed it)."""
    from skprivpred import _base

    monkeypatch.setitem(_base._score_warning, "shown", False)


def _separable(n=400):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2)) / 2
    return X, (X[:, 0] > 0).astype(int)


def test_grid_search_warns_once_per_process_at_first_spending_score(score_warning_not_shown):
    import warnings

    from sklearn.model_selection import GridSearchCV

    from skprivpred import PrivacyWarning, StableERMClassifier

    X, y = _separable()
    search = GridSearchCV(
        StableERMClassifier(classes=[0, 1], random_state=np.random.SeedSequence(0)),
        {"epsilon": [1.0, 2.0]},
        cv=2,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)  # 2 candidates x 2 folds of scoring, then a refit
        first = _spending_warnings(caught)
        search.fit(X, y)
        score = search.best_estimator_.score(X, y)
        again = _spending_warnings(caught)
    assert 0.0 <= score <= 1.0
    assert len(first) == 1 and len(again) == 1  # once per process, not once per call
    warning = first[0]
    assert warning.category is PrivacyWarning
    assert "PrivateGridSearchCV" in str(warning.message)
    assert "once per worker process" in str(warning.message)
    assert warning.filename == __file__  # the user's line, not scikit-learn's or joblib's


def test_score_that_spends_nothing_neither_warns_nor_uses_up_the_warning(score_warning_not_shown):
    import warnings

    from skprivpred import DPValidatedLogisticRegression, StableERMClassifier

    X, y = _separable()
    released = DPValidatedLogisticRegression(
        classes=[0, 1], random_state=np.random.SeedSequence(1)
    ).fit(X, y)
    queried = StableERMClassifier(classes=[0, 1], random_state=np.random.SeedSequence(2)).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        released.score(X, y)  # the model is released: its predictions are free
        queried.predict(X)  # spends, but is not a score call
        assert _spending_warnings(caught) == []
        queried.score(X, y)
        assert len(_spending_warnings(caught)) == 1


# -- binary-only estimators name the ones that take several classes (issue 51, item 4) ----------
def _binary_only_cases():
    from sklearn.linear_model import LogisticRegression

    import skprivpred as sp

    return [
        (sp.StableERMClassifier, {"classes": [0, 1, 2]}, "labels"),
        (sp.AveragedPSGDClassifier, {"classes": [0, 1, 2]}, "labels"),
        (sp.DPValidatedLogisticRegression, {"classes": [0, 1, 2]}, "labels"),
        (sp.GenericBBLClassifier, {"classes": [0, 1, 2]}, "labels"),
        (sp.PrivateHalfspacePPMClassifier, {"classes": [0, 1, 2]}, "labels"),
        (sp.ExpProjectedWalkClassifier, {"classes": [0, 1, 2]}, "labels"),
        (sp.ExponentialMechanismClassifier, {"classes": [0, 1, 2]}, "labels"),
        (
            lambda **kw: sp.PrivateEverlastingClassifier(LogisticRegression(), **kw),
            {},  # classes=None: refused before the label set is read from y
            "more than two classes",
        ),
    ]


@pytest.mark.parametrize("index", range(8))
def test_binary_only_estimators_say_so_and_name_the_multiclass_estimators(index):
    from sklearn.datasets import make_classification

    from skprivpred._base import MULTICLASS_ALTERNATIVES

    make, params, found = _binary_only_cases()[index]
    X, y = make_classification(
        n_samples=300, n_features=4, n_informative=3, n_redundant=0, n_classes=3, random_state=0
    )
    if make.__name__ in ("ExpProjectedWalkClassifier",):
        X = X[:, :1]
    if make.__name__ == "ExponentialMechanismClassifier":
        X = (X > 0).astype(int)
    with pytest.raises(ValueError, match="Only binary classification is supported") as error:
        make(**params).fit(X, y)
    message = str(error.value)
    assert MULTICLASS_ALTERNATIVES in message
    assert "SubsampleAggregateClassifier" in message and "SufficientStatisticClassifier" in message
    assert found in message
    assert "binary-only" in message or "hypotheses=" in message
