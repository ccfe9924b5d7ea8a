"""Tests every public estimator shares: scikit-learn's checks and one vocabulary.

``test_sklearn_compatible`` runs ``parametrize_with_checks`` over every estimator class in
``skprivpred.__all__`` with its default parameters, and over a few non-default instances that
the defaults do not cover. The expected failures come from the public table
``skprivpred.utils.expected_failed_checks`` (each with its reason): every other check must pass.
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

import skprivpred
from skprivpred import PrivacyGuarantee
from skprivpred.utils import expected_failed_checks

ESTIMATOR_CLASSES = sorted(
    {
        obj
        for obj in (getattr(skprivpred, name) for name in skprivpred.__all__)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator)
    },
    key=lambda cls: cls.__name__,
)


class FeaturePositive:
    """A public expert: label 1 when one feature is positive (picklable, stable repr for ids)."""

    def __init__(self, column: int) -> None:
        self.column = column

    def __call__(self, X):
        return (np.asarray(X, dtype=float)[:, self.column] > 0).astype(int)

    def __repr__(self) -> str:
        return f"FeaturePositive({self.column})"


PUBLIC_RULES = [FeaturePositive(0), FeaturePositive(-1)]

# The main object of the estimators that cannot be built without one: the smallest sensible
# instance, every other parameter left at its default.
MAIN_OBJECTS = {
    # A grid of two candidates over the teacher count of the default subsample-and-aggregate
    # classifier, with teacher counts that the checks' data sets (10 to 30 rows) can hold.
    "PrivateGridSearchCV": lambda cls: cls(
        skprivpred.SubsampleAggregateClassifier(), {"n_teachers": [2, 3]}
    ),
    # Two public rules fixed in advance (an expert is a function of X alone).
    "PrivateExpertsClassifier": lambda cls: cls(PUBLIC_RULES),
    # The base learner the user guide uses.
    "PrivateEverlastingClassifier": lambda cls: cls(LogisticRegression()),
    # The same two public rules (used only if the constructor has no default hypothesis
    # class: today its default, monotone conjunctions, is checked).
    "ExponentialMechanismClassifier": lambda cls: cls(PUBLIC_RULES),
}


def _default_instance(cls):
    """``cls`` with its defaults, or with its smallest main object if it needs one.

    A main object listed in ``MAIN_OBJECTS`` with the default ``None`` is required all the
    same (PrivateExpertsClassifier's ``hypotheses`` keeps a default only so that its
    deprecated old name ``experts`` can stand in for it).
    """
    first = next(iter(inspect.signature(cls).parameters.values()), None)
    required = first is not None and (
        first.default is inspect.Parameter.empty
        or (first.default is None and cls.__name__ in MAIN_OBJECTS)
    )
    if not required:
        return cls()
    return MAIN_OBJECTS[cls.__name__](cls)


DEFAULT_INSTANCES = [_default_instance(cls) for cls in ESTIMATOR_CLASSES]

# Instances the defaults do not cover (another base learner, loss, hypothesis family or
# bound), at the sizes suited to the checks' small data sets (a few dozen rows).
OTHER_INSTANCES = [
    skprivpred.SubsampleAggregateClassifier(n_teachers=3, random_state=0),
    skprivpred.SubsampleAggregateClassifier(
        DecisionTreeClassifier(max_depth=3), n_teachers=2, random_state=0
    ),
    skprivpred.SubsampleAverageClassifier(n_teachers=3, random_state=0),
    skprivpred.SubsampleAverageRegressor(y_bounds=(-10.0, 10.0), n_teachers=3, random_state=0),
    # Bounds suited to the checks' unscaled data (rows above the feature bound are clipped).
    skprivpred.StableERMClassifier(feature_norm_bound=5.0, radius=10.0, random_state=0),
    skprivpred.StableERMClassifier(
        loss="huberized_hinge", lam=0.1, feature_norm_bound=5.0, random_state=0
    ),
    skprivpred.StableERMRegressor(
        feature_norm_bound=5.0, radius=10.0, y_bounds=(-10.0, 10.0), random_state=0
    ),
    skprivpred.StableERMRegressor(loss="huber", lam=0.1, feature_norm_bound=5.0, random_state=0),
    skprivpred.AveragedPSGDClassifier(feature_norm_bound=5.0, radius=10.0, random_state=0),
    skprivpred.AveragedPSGDRegressor(
        feature_norm_bound=5.0, radius=10.0, y_bounds=(-10.0, 10.0), random_state=0
    ),
    # The walk on one chosen column of the checks' multi-column data.
    skprivpred.ExpProjectedWalkClassifier(feature=0, random_state=0),
    # Large budgets: the checks train on a few dozen rows.
    skprivpred.ExponentialMechanismClassifier(
        "thresholds", epsilon=20.0, grid=np.linspace(-4, 4, 33), random_state=0
    ),
    skprivpred.ExponentialMechanismClassifier(PUBLIC_RULES, epsilon=20.0, random_state=0),
    skprivpred.PrivateExpertsClassifier(PUBLIC_RULES, epsilon=1.0, n_rounds=10_000, random_state=0),
    skprivpred.DPValidatedLogisticRegression(epsilon=50.0, lam_grid=(0.01, 0.1), random_state=0),
    skprivpred.DPValidatedHistogramDensity(
        epsilon=200.0, n_bins_grid=(1, 2), bounds=(-5.0, 5.0), random_state=0
    ),
    # The search over the other subsample-and-aggregate classifier, seeded throughout.
    skprivpred.PrivateGridSearchCV(
        skprivpred.SubsampleAverageClassifier(n_teachers=3, random_state=0),
        {"n_teachers": [2, 3]},
        random_state=0,
    ),
]


# Strict: an expected failure that passes fails the test, so the table lists only checks
# that do fail. scikit-learn >= 1.8 takes `xfail_strict`; before it, its xfail marks carry
# no `strict` and pytest's `xfail_strict = true` (pyproject.toml) makes them strict too.
_STRICT = (
    {"xfail_strict": True}
    if "xfail_strict" in inspect.signature(parametrize_with_checks).parameters
    else {}
)


@parametrize_with_checks(
    [*DEFAULT_INSTANCES, *OTHER_INSTANCES],
    expected_failed_checks=expected_failed_checks,
    **_STRICT,
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        # Most checks omit `classes`: the PrivacyWarning is expected there.
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


def test_every_estimator_class_is_checked():
    assert {type(est) for est in DEFAULT_INSTANCES} == set(ESTIMATOR_CLASSES)
    names = {cls.__name__ for cls in ESTIMATOR_CLASSES}
    assert {"GenericBBLClassifier", "PrivateEverlastingClassifier"} <= names


def test_expected_failures_have_reasons():
    for estimator in [*DEFAULT_INSTANCES, *OTHER_INSTANCES]:
        expected = expected_failed_checks(estimator)
        assert isinstance(expected, dict)
        for check, reason in expected.items():
            assert check.startswith("check_"), check
            assert isinstance(reason, str) and len(reason) > 20, (type(estimator), check)


# -- One vocabulary -------------------------------------------------------------------------

# Names of the "main object" a constructor may take positionally (DESIGN §6).
MAIN_OBJECT_NAMES = {"estimator", "hypotheses", "experts", "hypothesis_class"}
RETIRED_NAMES = {
    "base_estimator": "estimator",
    "opt_tol": "tol",
    "y_bound": "y_bounds=(lo, hi)",
    "y_range": "y_bounds=(lo, hi)",
    "norm_bound": "feature_norm_bound",
    "T": "n_queries",
    "max_queries": "n_queries",
    "lambdas": "lam_grid",
}


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda cls: cls.__name__)
def test_constructor_vocabulary(cls):
    parameters = inspect.signature(cls).parameters
    for old, new in RETIRED_NAMES.items():
        assert old not in parameters, f"{cls.__name__}: `{old}` is named `{new}`"
    positional = [
        name for name, p in parameters.items() if p.kind is not inspect.Parameter.KEYWORD_ONLY
    ]
    if cls.__name__ == "PrivateGridSearchCV":
        assert positional == ["estimator", "param_grid"]
    else:
        assert len(positional) <= 1 and set(positional) <= MAIN_OBJECT_NAMES, (
            f"{cls.__name__}: only the main object may be positional, got {positional}"
        )
    if "classes" in parameters:
        assert parameters["classes"].default is None, f"{cls.__name__}: classes=None"
    for name in parameters:
        if "horizon" in name or name in {"n_predictions", "max_n_queries"}:
            pytest.fail(f"{cls.__name__}.{name}: the query horizon is named `n_queries`")


@pytest.mark.parametrize("estimator", DEFAULT_INSTANCES, ids=lambda est: type(est).__name__)
def test_parameter_constraints_cover_every_parameter(estimator):
    constraints = getattr(type(estimator), "_parameter_constraints", None)
    assert isinstance(constraints, dict), f"{type(estimator).__name__}: no _parameter_constraints"
    assert set(constraints) == set(estimator.get_params(deep=False))


def _binary_task(n, n_features=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    return X, (X[:, 0] > 0).astype(int)


def _fit_recipes():
    """Class name -> (estimator, X, y, fit params): a small data set that suits each one."""
    X, y = _binary_task(400)
    X1 = X[:, :1]
    Xb = (X > 0).astype(int)
    X_reg = X
    y_reg = X @ np.array([0.5, -0.25])
    is_public = np.arange(400) < 200
    x_unit = np.random.default_rng(1).random((8000, 1))
    y_unit = (x_unit[:, 0] >= 0.3).astype(int)
    common = {"random_state": 0}
    return {
        "AveragedPSGDClassifier": (skprivpred.AveragedPSGDClassifier(**common), X, y, {}),
        "AveragedPSGDRegressor": (
            skprivpred.AveragedPSGDRegressor(y_bounds=(-3.0, 3.0), **common),
            X_reg,
            y_reg,
            {},
        ),
        "DPValidatedHistogramDensity": (
            skprivpred.DPValidatedHistogramDensity(epsilon=200.0, n_bins_grid=(1, 2), **common),
            x_unit,
            None,
            {},
        ),
        "DPValidatedLogisticRegression": (
            skprivpred.DPValidatedLogisticRegression(lam_grid=(0.01, 0.1), **common),
            X,
            y,
            {},
        ),
        "ExpProjectedWalkClassifier": (
            skprivpred.ExpProjectedWalkClassifier(**common),
            X1,
            y,
            {},
        ),
        "ExponentialMechanismClassifier": (
            skprivpred.ExponentialMechanismClassifier(**common),
            Xb,
            y,
            {},
        ),
        "GenericBBLClassifier": (
            skprivpred.GenericBBLClassifier(
                alpha=0.05, beta=0.05, mode="simulation", random_state=0
            ),
            x_unit,
            y_unit,
            {},
        ),
        "PrivateEverlastingClassifier": (
            skprivpred.PrivateEverlastingClassifier(
                DecisionTreeClassifier(max_depth=1), n_teachers=100, **common
            ),
            x_unit,
            y_unit,
            {},
        ),
        "PrivateExpertsClassifier": (
            skprivpred.PrivateExpertsClassifier(PUBLIC_RULES, **common),
            X,
            y,
            {},
        ),
        "PrivateGridSearchCV": (
            skprivpred.PrivateGridSearchCV(
                skprivpred.SubsampleAggregateClassifier(classes=[0, 1]),
                {"n_teachers": [5, 10]},
                **common,
            ),
            X,
            y,
            {},
        ),
        "PrivateHalfspacePPMClassifier": (
            skprivpred.PrivateHalfspacePPMClassifier(**common),
            X,
            y,
            {"is_public": is_public},
        ),
        "StableERMClassifier": (skprivpred.StableERMClassifier(**common), X, y, {}),
        "StableERMRegressor": (
            skprivpred.StableERMRegressor(y_bounds=(-3.0, 3.0), **common),
            X_reg,
            y_reg,
            {},
        ),
        "SubsampleAggregateClassifier": (
            skprivpred.SubsampleAggregateClassifier(**common),
            X,
            y,
            {},
        ),
        "SubsampleAverageClassifier": (
            skprivpred.SubsampleAverageClassifier(**common),
            X,
            y,
            {},
        ),
        "SubsampleAverageRegressor": (
            skprivpred.SubsampleAverageRegressor(y_bounds=(-3.0, 3.0), **common),
            X_reg,
            y_reg,
            {},
        ),
        # Unlabelled public rows: y == -1 (classifier) or NaN (regressor).
        "SufficientStatisticClassifier": (
            skprivpred.SufficientStatisticClassifier(classes=[0, 1], **common),
            X,
            np.where(is_public, -1, y),
            {},
        ),
        "SufficientStatisticRegressor": (
            skprivpred.SufficientStatisticRegressor(y_bounds=(-3.0, 3.0), **common),
            X_reg,
            np.where(is_public, np.nan, y_reg),
            {},
        ),
    }


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda cls: cls.__name__)
def test_privacy_guarantee_is_a_privacy_guarantee(cls):
    recipes = _fit_recipes()
    assert cls.__name__ in recipes, f"add a small data set for {cls.__name__} to _fit_recipes"
    estimator, X, y, fit_params = recipes[cls.__name__]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fitted = clone(estimator).fit(X, y, **fit_params)
    guarantee = fitted.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee), (cls.__name__, guarantee)
    assert "spec" not in guarantee.theorem.lower(), guarantee.theorem


def test_expected_failed_checks_refuses_other_estimators():
    with pytest.raises(TypeError, match="skprivpred estimator"):
        expected_failed_checks(LogisticRegression())


def test_expected_failed_checks_of_a_subclass():
    class Seeded(skprivpred.SubsampleAggregateClassifier):
        pass

    assert expected_failed_checks(Seeded(n_teachers=3)) == expected_failed_checks(
        skprivpred.SubsampleAggregateClassifier(n_teachers=3)
    )
