"""Subsample averaging: exact laws, grid noise, privacy audits, sklearn use and errors."""

import copy
import warnings

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.datasets import load_diabetes, make_classification
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from skprivpred import (
    BudgetExhaustedError,
    InvalidParameterError,
    PrivacyAccountant,
    PrivacyGuarantee,
)
from skprivpred.audit import audit_epsilon
from skprivpred.ensemble import (
    GRID_STEPS,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
    default_tree_depth,
    project_to_simplex,
)
from skprivpred.mechanisms import laplace_clip_bernoulli_proba, laplace_positive_proba

P_FALSE_ALARM = 1e-6


def _one_row_per_teacher(labels, **params):
    """r rows and r teachers: each part has one row, so each teacher is a constant."""
    X = np.arange(len(labels), dtype=float).reshape(-1, 1)
    params.setdefault("classes", sorted(set(labels) | {0, 1}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # one row per teacher, on purpose
        return SubsampleAverageClassifier(n_teachers=len(labels), random_state=0, **params).fit(
            X, np.array(labels)
        )


def _discrete_laplace_p(z, scale):
    return np.tanh(1 / (2 * scale)) * np.exp(-abs(z) / scale)


# -- exact laws ----------------------------------------------------------------------
@pytest.mark.parametrize("n_ones", [0, 2, 5])
@pytest.mark.parametrize("rule", ["sample", "threshold"])
def test_predict_law_is_the_closed_form(n_ones, rule):
    r, epsilon = 5, 1.0
    clf = _one_row_per_teacher([1] * n_ones + [0] * (r - n_ones), epsilon=epsilon, label_rule=rule)
    v = n_ones / r
    b = 1 / (r * epsilon)
    expected = (
        laplace_clip_bernoulli_proba(v, b)
        if rule == "sample"
        else laplace_positive_proba(v - 0.5, b)
    )
    assert clf.noise_scale_ == pytest.approx(b)
    assert clf._output_distribution([[0.0]])[0, 1] == pytest.approx(float(expected), rel=1e-12)
    n = 100_000
    answers = clf.predict(np.zeros((n, 1)))
    assert binomtest(int(answers.sum()), n, float(expected)).pvalue > P_FALSE_ALARM


def test_predict_law_ratio_between_neighbours_is_at_most_epsilon():
    r, epsilon = 6, 0.8
    largest = {}
    for rule in ("sample", "threshold"):
        laws = [
            _one_row_per_teacher(
                [1] * c + [0] * (r - c), epsilon=epsilon, label_rule=rule
            )._output_distribution([[0.0]])[0]
            for c in range(r + 1)
        ]
        ratios = [np.max(np.abs(np.log(a) - np.log(b))) for a, b in zip(laws, laws[1:])]
        assert max(ratios) <= epsilon + 1e-9
        largest[rule] = max(ratios)
    # The bound is exercised, not vacuous: one vote moves the sampled law by ~0.9 epsilon.
    assert largest["sample"] > 0.85 * epsilon


@pytest.mark.parametrize("method", ["predict_proba", "decision_function"])
def test_real_valued_release_is_grid_noise_of_the_stated_scale(method):
    epsilon = 0.5
    clf = _one_row_per_teacher([1, 1, 0, 0], epsilon=epsilon)
    n = 100_000
    out = getattr(clf, method)(np.zeros((n, 1)))
    values = out[:, 1] if method == "predict_proba" else out + 0.5
    grid = clf.sensitivity_ / GRID_STEPS
    steps = np.rint((values - 0.5) / grid)
    np.testing.assert_allclose(values, 0.5 + steps * grid, atol=1e-9)
    scale = (GRID_STEPS + 1) / epsilon  # steps + 1 grid steps of index sensitivity
    inside = (values > 0) & (values < 1)
    for z in (0, 7, -150, 900):
        p = _discrete_laplace_p(z, scale)
        assert binomtest(int(((steps == z) & inside).sum()), n, p).pvalue > P_FALSE_ALARM
    if method == "predict_proba":
        assert out.min() >= 0 and out.max() <= 1
        np.testing.assert_allclose(out.sum(axis=1), 1.0)


def test_multiclass_noise_per_coordinate_and_projection():
    epsilon = 1.0
    clf = _one_row_per_teacher([0, 1, 1, 2, 2, 2], epsilon=epsilon, classes=[0, 1, 2])
    assert clf.sensitivity_ == pytest.approx(2 / 6)
    n = 50_000
    scores = clf.decision_function(np.zeros((n, 1)))
    grid = clf.sensitivity_ / GRID_STEPS
    steps = np.rint((scores - np.array([1, 2, 3]) / 6) / grid)
    scale = (GRID_STEPS + 3) / epsilon  # steps + K grid steps of L1 index sensitivity
    for k in range(3):
        assert (
            binomtest(int((steps[:, k] == 0).sum()), n, _discrete_laplace_p(0, scale)).pvalue
            > P_FALSE_ALARM
        )
    proba = clf.predict_proba(np.zeros((1000, 1)))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert proba.min() >= 0
    answers = clf.predict(np.zeros((20_000, 1)))
    freq = np.bincount(answers, minlength=3) / 20_000
    assert freq[2] > freq[1] > freq[0]


def test_project_to_simplex_is_the_euclidean_projection():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(200, 4)) * 2
    P = project_to_simplex(V)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert P.min() >= 0
    # optimality: no random point of the simplex is closer
    for _ in range(50):
        Q = rng.dirichlet(np.ones(4), size=200)
        assert np.all(((V - P) ** 2).sum(1) <= ((V - Q) ** 2).sum(1) + 1e-12)
    np.testing.assert_allclose(project_to_simplex([[0.2, 0.3, 0.5]]), [[0.2, 0.3, 0.5]])


def test_proba_teachers_are_aligned_and_averaged():
    X, y = make_classification(
        n_samples=400, n_features=5, n_classes=3, n_informative=3, random_state=0
    )
    clf = SubsampleAverageClassifier(
        LogisticRegression(), base_output="proba", n_teachers=40, classes=[0, 1, 2], random_state=0
    ).fit(X, y)
    v = clf._raw_score(X[:50])
    expected = np.zeros((50, 3))
    for teacher in clf._teachers:
        if hasattr(teacher, "predict_proba"):
            expected[:, teacher.classes_] += teacher.predict_proba(X[:50])
        else:
            expected[:, teacher.label_index] += 1
    np.testing.assert_allclose(v, expected / 40)


# -- privacy audits -------------------------------------------------------------------
class _HalfSensitivity(SubsampleAverageClassifier):
    """Broken on purpose: calibrated to half the sensitivity (twice the epsilon)."""

    def _set_noise(self, epsilon, delta, sensitivity):
        super()._set_noise(epsilon, delta, sensitivity / 2)


def _audit_neighbours(r=5):
    X = np.arange(r, dtype=float).reshape(-1, 1)
    y = np.zeros(r, dtype=int)
    y2 = y.copy()
    y2[0] = 1  # one teacher's vote moves: v changes by exactly 1/r
    return X, y, X, y2


@pytest.mark.parametrize(
    "method, bins", [("predict", None), ("predict_proba", np.linspace(-0.05, 0.65, 15))]
)
def test_audit_passes_and_flags_half_the_noise(method, bins):
    X, y, X2, y2 = _audit_neighbours()
    kwargs = dict(n_teachers=5, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        good = audit_epsilon(
            SubsampleAverageClassifier(**kwargs),
            X,
            y,
            X2,
            y2,
            X[:1],
            n_trials=100_000,
            method=method,
            bins=bins,
            random_state=0,
        )
        bad = audit_epsilon(
            _HalfSensitivity(**kwargs),
            X,
            y,
            X2,
            y2,
            X[:1],
            n_trials=100_000,
            method=method,
            bins=bins,
            random_state=0,
        )
    assert good.passed, str(good)
    assert not bad.passed, str(bad)


def test_regressor_audit_passes_and_flags_half_the_noise():
    class HalfRegressor(SubsampleAverageRegressor):
        def _set_noise(self, epsilon, delta, sensitivity):
            super()._set_noise(epsilon, delta, sensitivity / 2)

    X = np.arange(4, dtype=float).reshape(-1, 1)
    y = np.zeros(4)
    y2 = y.copy()
    y2[0] = 1.0
    kwargs = dict(n_teachers=4, y_bounds=(0.0, 1.0), clip_output=False)
    bins = np.linspace(-1.0, 1.25, 19)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        good = audit_epsilon(
            SubsampleAverageRegressor(**kwargs),
            X,
            y,
            X,
            y2,
            X[:1],
            n_trials=100_000,
            bins=bins,
            random_state=0,
        )
        bad = audit_epsilon(
            HalfRegressor(**kwargs), X, y, X, y2, X[:1], n_trials=100_000, bins=bins, random_state=0
        )
    assert good.passed, str(good)
    assert not bad.passed, str(bad)


# -- regressor ------------------------------------------------------------------------
def test_regressor_noise_scale_and_clipping():
    X, y = load_diabetes(return_X_y=True)
    reg = SubsampleAverageRegressor(Ridge(), n_teachers=10, y_bounds=(25, 346), random_state=0).fit(
        X, y
    )
    assert reg.sensitivity_ == pytest.approx(32.1)
    assert reg.noise_scale_ == pytest.approx(32.1)
    out = reg.predict(np.repeat(X[:1], 50_000, axis=0))
    assert out.min() >= 25 and out.max() <= 346
    raw = reg._raw_score(X[:1])[0]
    grid = reg.sensitivity_ / GRID_STEPS
    steps = np.rint((out - grid * np.rint(raw / grid)) / grid)
    inside = (out > 25) & (out < 346)
    for z in (0, 500, -1500):
        p = _discrete_laplace_p(z, (GRID_STEPS + 1) / 1.0)
        assert binomtest(int(((steps == z) & inside).sum()), 50_000, p).pvalue > P_FALSE_ALARM
    teacher_mean = np.mean([np.clip(t.predict(X[:5]), 25, 346) for t in reg._teachers], axis=0)
    np.testing.assert_allclose(reg._raw_score(X[:5]), teacher_mean)


# -- the default tree's public depth cap -----------------------------------------------
@pytest.mark.parametrize(
    "n_samples, n_teachers, depth",
    [
        (294, 10, 3),
        (20_000, 200, 4),
        (10, 10, 1),
        (5, 10, 1),
        (3, 1, 1),
        (4, 1, 1),
        (1 << 20, 1, 10),
    ],
)
def test_default_tree_depth_is_the_public_formula(n_samples, n_teachers, depth):
    # max(1, ceil(log2(n_samples // n_teachers) / 2)), written out here by hand.
    assert default_tree_depth(n_samples, n_teachers) == depth


def _tree_data(kind: str, n: int = 2000):
    X = np.random.default_rng(0).normal(size=(n, 3))
    if kind == "noise":  # uncapped trees grow until their leaves hold single rows
        return X, np.random.default_rng(1).uniform(0.0, 1.0, n)
    return X, np.where(X[:, 0] > 0, 1.0, 0.0)  # one split explains everything


@pytest.mark.parametrize("kind", ["noise", "step"])
def test_default_regressor_tree_depth_is_public(kind):
    """The default teachers, and the stacked descent, stop at the public cap."""
    X, y = _tree_data(kind)
    reg = SubsampleAverageRegressor(n_teachers=20, y_bounds=(0.0, 1.0), random_state=0).fit(X, y)
    cap = default_tree_depth(2000, 20)  # 100 rows per teacher: 4
    assert cap == 4
    assert reg.estimator is None  # the parameter is left as passed
    assert all(type(t) is DecisionTreeRegressor and t.max_depth == cap for t in reg._teachers)
    fitted = max(t.get_depth() for t in reg._teachers)
    assert fitted == (cap if kind == "noise" else 1)
    # Every row descends the cap's levels, whatever depth the trees reached on their rows.
    assert reg._outputs._stacked._nodes.levels == cap


def test_user_tree_keeps_its_own_depth():
    """A tree passed by the user is not capped: its depth (and its answer time) is its own."""
    X, y = _tree_data("noise")
    reg = SubsampleAverageRegressor(
        DecisionTreeRegressor(), n_teachers=20, y_bounds=(0.0, 1.0), random_state=0
    ).fit(X, y)
    assert all(t.max_depth is None for t in reg._teachers)
    assert reg._outputs._stacked._nodes.levels > default_tree_depth(2000, 20)


@pytest.mark.parametrize(
    "y_bounds, match",
    [
        (None, "y_bounds=None: .* needs the public output range"),
        ((5, 1), "'y_bounds' parameter .* low < high"),
        ((0, np.inf), "'y_bounds' parameter .* finite"),
        ("ab", "'y_bounds' parameter"),
        ((0, 1, 2), "'y_bounds' parameter"),
    ],
)
def test_regressor_bad_y_bounds(y_bounds, match):
    X, y = load_diabetes(return_X_y=True)
    with pytest.raises(InvalidParameterError, match=match):
        SubsampleAverageRegressor(y_bounds=y_bounds).fit(X, y)


def test_regressor_guarantee():
    X, y = load_diabetes(return_X_y=True)
    reg = SubsampleAverageRegressor(y_bounds=(25, 346), random_state=0).fit(X, y)
    guarantee = reg.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee)
    assert (guarantee.epsilon, guarantee.delta) == (1.0, 0.0)
    assert guarantee.theorem.startswith("Dwork & Feldman (2018), Lemma 4.5")
    assert guarantee.details["n_teachers"] == 10
    assert guarantee.details["sensitivity"] == pytest.approx(32.1)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_teachers": None}, "'n_teachers' parameter"),
        ({"clip_output": 1}, "'clip_output' parameter .* a bool"),
        ({"delta": 1e-6}, "delta=1e-06 with noise='laplace'"),
        ({"estimator": "tree"}, "'estimator' parameter"),
    ],
)
def test_regressor_bad_parameters(params, match):
    X, y = load_diabetes(return_X_y=True)
    with pytest.raises(InvalidParameterError, match=match):
        SubsampleAverageRegressor(y_bounds=(25, 346), **params).fit(X, y)


def test_regressor_refuses_multi_output():
    X, y = load_diabetes(return_X_y=True)
    with pytest.raises(ValueError):
        SubsampleAverageRegressor(y_bounds=(0, 400)).fit(X, np.column_stack([y, y]))


# -- budget, errors, sklearn use ------------------------------------------------------------
def test_every_query_method_charges_per_row_and_refusal_changes_nothing():
    X, y = make_classification(n_samples=300, random_state=1)
    acc = PrivacyAccountant(epsilon=25.0)
    clf = SubsampleAverageClassifier(
        n_teachers=5, classes=[0, 1], accountant=acc, random_state=0
    ).fit(X, y)
    clf.predict(X[:5])
    clf.predict_proba(X[:5])
    clf.decision_function(X[:5])
    assert acc.queries_answered == 15 and acc.epsilon_spent == pytest.approx(15.0)
    state = copy.deepcopy(clf._query_stream.rng.bit_generator.state)
    with pytest.raises(BudgetExhaustedError):
        clf.predict_proba(X[:11])
    assert acc.queries_answered == 15 and clf._query_stream.rng.bit_generator.state == state


def test_gaussian_option_charges_delta():
    X, y = make_classification(n_samples=300, random_state=1)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    clf = SubsampleAverageClassifier(
        n_teachers=5, classes=[0, 1], noise="gaussian", delta=1e-5, accountant=acc, random_state=0
    ).fit(X, y)
    clf.predict_proba(X[:3])
    assert acc.delta_spent == pytest.approx(3e-5)
    assert clf.privacy_guarantee_.delta == 1e-5
    assert clf.privacy_guarantee_.details["noise"] == "gaussian"


@pytest.mark.parametrize(
    "params, match",
    [
        ({"base_output": "votes"}, "'base_output' parameter .* 'label', 'proba'"),
        ({"label_rule": "vote"}, "'label_rule'"),
        ({"noise": "uniform"}, "'noise'"),
        ({"delta": 1e-5}, "delta=1e-05 with noise='laplace'.* must be 0"),
        ({"noise": "gaussian", "delta": 0.0}, "delta=0 with noise='gaussian'"),
        ({"delta": 1.0}, "'delta' parameter"),
        ({"epsilon": -1}, "'epsilon'"),
        ({"target_error": 2}, "'target_error'"),
        ({"n_teachers": 0}, "'n_teachers'"),
        ({"base_output": "proba", "estimator": Ridge()}, "predict_proba"),
    ],
)
def test_bad_parameters(params, match):
    X, y = make_classification(n_samples=100, random_state=1)
    clf = SubsampleAverageClassifier(n_teachers=5, classes=[0, 1], random_state=0).fit(X, y)
    before = clf._raw_score(X[:5])
    with pytest.raises(InvalidParameterError, match=match):
        clf.set_params(**params).fit(X, y)
    np.testing.assert_array_equal(clf._raw_score(X[:5]), before)


def test_sample_weight_nan_and_not_fitted():
    X, y = make_classification(n_samples=100, random_state=1)
    with pytest.raises(TypeError, match="sample_weight"):
        SubsampleAverageClassifier(classes=[0, 1]).fit(X, y, sample_weight=np.ones(100))
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SubsampleAverageRegressor(y_bounds=(0, 1)).fit(X_nan, y)
    with pytest.raises(NotFittedError):
        SubsampleAverageRegressor(y_bounds=(0, 1)).predict(X)


def test_works_in_a_pipeline():
    X, y = make_classification(n_samples=600, random_state=2)
    teacher = make_pipeline(StandardScaler(), LogisticRegression())
    clf = SubsampleAverageClassifier(teacher, base_output="proba", classes=[0, 1], random_state=0)
    assert clf.fit(X, y).score(X, y) > 0.7


FRESH_STREAM = "a pickled copy gets a fresh query stream, so its answers are new draws"
INDEPENDENT_RELEASES = (
    "predict, predict_proba and decision_function are independent noisy releases (fresh "
    "noise per call); the check requires them to agree with each other"
)
EXPECTED = {
    "check_estimators_pickle": FRESH_STREAM,
    "check_estimators_pickle(readonly_memmap=True)": FRESH_STREAM,
    "check_classifiers_train": INDEPENDENT_RELEASES,
    "check_classifiers_train(readonly_memmap=True)": INDEPENDENT_RELEASES,
    "check_classifiers_train(readonly_memmap=True,X_dtype=float32)": INDEPENDENT_RELEASES,
    "check_classifiers_classes": INDEPENDENT_RELEASES,
    "check_decision_proba_consistency": INDEPENDENT_RELEASES,
}


@parametrize_with_checks(
    [
        SubsampleAverageClassifier(n_teachers=3, random_state=0),
        SubsampleAverageClassifier(
            DecisionTreeClassifier(max_depth=3), base_output="proba", n_teachers=2, random_state=0
        ),
        SubsampleAverageRegressor(n_teachers=3, y_bounds=(-1000.0, 1000.0), random_state=0),
    ],
    expected_failed_checks=lambda est: (
        EXPECTED
        if hasattr(est, "predict_proba")
        else {k: v for k, v in EXPECTED.items() if "pickle" in k}
    ),
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


def test_gaussian_releases_are_discrete_gaussian_on_the_grid():
    from skprivpred.mechanisms import discrete_gaussian_sigma

    clf = _one_row_per_teacher([1, 0, 0, 0], noise="gaussian", delta=1e-5, epsilon=1.0)
    out = clf.predict_proba(np.zeros((40_000, 1)))[:, 1]
    grid = clf.sensitivity_ / GRID_STEPS
    inside = (out > 0) & (out < 1)
    np.testing.assert_allclose(out[inside] / grid, np.rint(out[inside] / grid), atol=1e-6)
    sigma = discrete_gaussian_sigma(GRID_STEPS + 1, 1.0, 1e-5) * grid
    assert sigma == pytest.approx(clf.noise_scale_, rel=2e-3)
    # with v = 1/4 and sigma ~ 1.3, about 0.4 of the releases are clipped at 0
    law = _one_row_per_teacher([1, 0, 0, 0], noise="gaussian", delta=1e-5)._output_distribution(
        [[0.0]]
    )
    assert 0 < law[0, 1] < 0.5


def test_gaussian_needs_two_labels():
    X, y = make_classification(n_samples=300, n_classes=3, n_informative=3, random_state=0)
    with pytest.raises(ValueError, match="two labels"):
        SubsampleAverageClassifier(noise="gaussian", delta=1e-5, classes=[0, 1, 2]).fit(X, y)


# -- renamed parameters (0.4): `alpha` -> `target_error`, `prediction_rule` -> `label_rule` ------
@pytest.mark.parametrize(
    "old_name, new_name, value, other",
    [("alpha", "target_error", 0.3, 0.2), ("prediction_rule", "label_rule", "threshold", "sample")],
)
def test_renamed_parameters_of_the_average_classifier(old_name, new_name, value, other):
    X, y = make_classification(n_samples=600, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        fitted = SubsampleAverageClassifier(classes=[0, 1], random_state=0, **{new_name: value})
        new_answers = fitted.fit(X, y).predict(X[:200])
    renamed = SubsampleAverageClassifier(classes=[0, 1], random_state=0, **{old_name: value})
    with pytest.warns(FutureWarning, match=f"`{old_name}` was renamed `{new_name}` in 0.4"):
        renamed.fit(X, y)
    assert renamed.n_teachers_ == fitted.n_teachers_
    np.testing.assert_array_equal(renamed.predict(X[:200]), new_answers)
    # The old value is the one used: the other value gives other answers on the same seed.
    default = SubsampleAverageClassifier(classes=[0, 1], random_state=0, **{new_name: other})
    assert not np.array_equal(default.fit(X, y).predict(X[:200]), new_answers)
    # Setting both (the new one away from its default) is refused, naming both.
    changed = 0.2 if new_name == "target_error" else "threshold"
    both = SubsampleAverageClassifier(classes=[0, 1], **{old_name: value, new_name: changed})
    with pytest.raises(InvalidParameterError, match=f"'{new_name}' and .* '{old_name}'"):
        both.fit(X, y)
