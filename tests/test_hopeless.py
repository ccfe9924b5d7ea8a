"""The best-case figure (``skprivpred._hopeless``) and the warning when it is poor.

The figure depends on public quantities only, so the warning fires (or not) with
the same text on neighbouring data sets; it is silent on the main benchmark's
default configurations and fires on the one-release estimator on digits at its
defaults.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skprivpred import (
    HopelessSettingWarning,
    StableERMRegressor,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SufficientStatisticClassifier,
)
from skprivpred._hopeless import (
    BEST_CASE_THRESHOLD,
    best_case,
    best_case_record,
    soft_majority_best_case,
)
from skprivpred.ensemble import project_to_simplex
from skprivpred.ensemble._averaging import _unanimous_proba
from skprivpred.mechanisms import (
    agnostic_n_partitions,
    exponential_mechanism_proba,
    pac_n_partitions,
)

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _fit_recording(estimator, X, y):
    """Fit under an ``always`` filter; the texts of the HopelessSettingWarnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return [str(w.message) for w in caught if issubclass(w.category, HopelessSettingWarning)]


def _neighbour(X, y, new_label):
    """The data set with its first row replaced (another value, another label)."""
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = -3.0 * X[0] + 1.0, new_label
    return X2, y2


def _multiclass(n=2000, k=10, seed=0):
    return make_classification(
        n_samples=n, n_features=6, n_informative=5, n_redundant=0, n_classes=k, random_state=seed
    )


# -- the soft-majority vote ----------------------------------------------------------------
def test_soft_majority_best_case_is_the_law_of_a_unanimous_vote():
    for epsilon, r, k in [(1.0, 23, 2), (0.5, 3, 10), (0.1, 5, 4)]:
        counts = np.zeros(k)
        counts[0] = r
        law = exponential_mechanism_proba(counts, epsilon)
        assert soft_majority_best_case(epsilon, r, k).value == pytest.approx(law[0])


def test_few_teachers_on_ten_classes_warn_identically_on_neighbouring_data_sets():
    X, y = _multiclass()
    est = SubsampleAggregateClassifier(
        epsilon=0.5, n_teachers=3, classes=list(range(10)), random_state=0
    )
    first = _fit_recording(est, X, y)
    second = _fit_recording(
        SubsampleAggregateClassifier(**est.get_params()), *_neighbour(X, y, (y[0] + 1) % 10)
    )
    assert len(first) == 1 and first == second  # public quantities only: the same text
    # 1 / (1 + 9 exp(-0.75)) = 0.19; 0.9 needs epsilon * r >= 2 ln(81) = 8.79
    assert best_case(est) == pytest.approx(1.0 / (1.0 + 9.0 * np.exp(-0.75)))
    assert "is 0.19, below 0.9" in first[0]
    assert "epsilon = 0.5 per answered row, 3 teachers, 10 classes, 2000 training rows" in first[0]
    assert "at least 2.93 with 3 teachers, or at least 18 teachers" in first[0]


def test_subsample_aggregate_defaults_are_silent_on_two_and_ten_classes():
    for k in (2, 10):
        X, y = _multiclass(k=k)
        est = SubsampleAggregateClassifier(classes=list(range(k)), random_state=0)
        assert _fit_recording(est, X, y) == []
        assert best_case(est) > 0.999


def test_main_benchmark_default_teacher_configurations_are_silent():
    """benchmarks/run.py's sa-* and avg-lr at every default epsilon: two classes, alpha 0.1."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import run
    finally:
        sys.path.remove(str(BENCHMARKS))
    for epsilon in run.DEFAULT_EPSILONS + run.FULL_EPSILONS:
        r = pac_n_partitions(0.1, epsilon)
        assert soft_majority_best_case(epsilon, r, 2).value >= 0.9999
        r = agnostic_n_partitions(0.1, epsilon)
        assert _unanimous_proba("laplace", "sample", epsilon, 0.0, r, 2) == pytest.approx(0.975)


# -- noisy teacher averages -----------------------------------------------------------------
def test_subsample_average_best_case_is_its_exact_law_at_unanimous_teachers():
    X, y = make_classification(n_samples=600, random_state=0)
    est = SubsampleAverageClassifier(n_teachers=3, classes=[0, 1], random_state=0)
    (message,) = _fit_recording(est, X, y)
    assert best_case(est) == pytest.approx(est._label_law(np.array([[0.0, 1.0]]))[0, 1])
    assert best_case(est) == pytest.approx(0.8416, abs=1e-4)
    assert "teachers' label when they are unanimous is 0.842" in message
    assert "epsilon of at least 1.66 with 3 teachers, or at least 5 teachers" in message
    silent = SubsampleAverageClassifier(classes=[0, 1], random_state=0)  # 20 teachers
    assert _fit_recording(silent, X, y) == []
    assert best_case(silent) == pytest.approx(0.975)


@pytest.mark.parametrize("rule", ["threshold", "sample"])
def test_many_class_average_best_case_agrees_with_draws_of_its_noise(rule):
    """``K = 5`` labels, Laplace noise of scale 2 / (r epsilon) on each average."""
    k, r, epsilon, n = 5, 4, 1.0, 200_000
    rng = np.random.default_rng(1)
    noisy = rng.laplace(scale=2.0 / (r * epsilon), size=(n, k))
    noisy[:, 0] += 1.0
    if rule == "threshold":
        hits = np.argmax(noisy, axis=1) == 0
        drawn, sd = hits.mean(), hits.std() / np.sqrt(n)
    else:
        weight = project_to_simplex(noisy)[:, 0]
        drawn, sd = weight.mean(), weight.std() / np.sqrt(n)
    figure = _unanimous_proba("laplace", rule, epsilon, 0.0, r, k)
    tolerance = 5.0 * sd + (0.0 if rule == "threshold" else 5.0 * 0.5 / np.sqrt(4000))
    assert figure == pytest.approx(drawn, abs=tolerance)


# -- the one-release estimator ----------------------------------------------------------------
def _digits(seed=0):
    """Digits as the issue ran it: a 3/4 training split, a quarter of it unlabelled public rows."""
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=seed)
    semi = y_train.copy()
    semi[np.random.default_rng(seed).random(semi.size) < 0.25] = -1
    return X_train, semi, X_test, y_test


def test_one_release_on_digits_at_its_defaults_warns_before_the_release():
    X, y, _, _ = _digits()
    est = SufficientStatisticClassifier(classes=list(range(10)), random_state=0)
    (message,) = _fit_recording(est, X, y)
    assert 0.30 < best_case(est) < 0.36  # 0.333: S = 2,461, N = 3,458
    assert "share of the released statistic that is signal" in message
    assert "1018 labelled rows, 446 basis features, a statistic of 4460 values" in message
    assert "epsilon of at least" in message and "labelled rows, or about" in message
    # One labelled row replaced: the same text (no row is read).
    labelled = np.flatnonzero(y != -1)[0]
    X2, y2 = X.copy(), y.copy()
    X2[labelled], y2[labelled] = 16.0 - X[labelled], (y[labelled] + 3) % 10
    again = _fit_recording(SufficientStatisticClassifier(**est.get_params()), X2, y2)
    assert again == [message]


def test_one_release_on_digits_is_silent_at_epsilon_16():
    X, y, _, _ = _digits()
    est = SufficientStatisticClassifier(classes=list(range(10)), epsilon=16.0, random_state=0)
    assert _fit_recording(est, X, y) == []
    assert best_case(est) > 0.98


def test_one_release_docstring_setting_is_silent():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 2))
    y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int)
    y[:1000] = -1
    est = SufficientStatisticClassifier(classes=[0, 1], random_state=0)
    assert _fit_recording(est, X, y) == []
    assert best_case(est) > 0.999


# -- the function and the warning ---------------------------------------------------------------
def test_best_case_reads_through_a_pipeline_and_is_none_without_a_figure():
    X, y = make_classification(n_samples=600, random_state=0)
    pipe = make_pipeline(
        StandardScaler(), SubsampleAggregateClassifier(classes=[0, 1], random_state=0)
    ).fit(X, y)
    assert best_case(pipe) == best_case(pipe[-1]) > 0.99
    assert best_case(SubsampleAggregateClassifier()) is None  # not fitted
    assert best_case(LogisticRegression().fit(X, y)) is None  # not one of ours
    regressor = StableERMRegressor(y_bounds=(-1, 1), feature_norm_bound=5.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        regressor.fit(X, np.clip(y - 0.5, -1, 1))
    assert best_case(regressor) is None and best_case_record(regressor) is None


def test_hopeless_warning_is_a_user_warning_shown_once_per_call_site():
    X, y = _multiclass(n=600, k=4)
    shown = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for seed in range(3):  # one call site, three fits
            est = SubsampleAggregateClassifier(
                epsilon=0.1, n_teachers=2, classes=[0, 1, 2, 3], random_state=seed
            )
            est.fit(X, y)
        shown = [w for w in caught if issubclass(w.category, HopelessSettingWarning)]
    assert issubclass(HopelessSettingWarning, UserWarning)
    assert len(shown) == 1 and shown[0].filename == __file__
    assert BEST_CASE_THRESHOLD == 0.9


@pytest.mark.parametrize("kind", ["binary", "ten classes", "regression"])
def test_one_release_figure_is_its_formula_on_public_fitted_attributes(kind):
    """S = n c (c: B / (2 sqrt 2), B sqrt(K - 1) / K, (hi - lo) B / (2 sqrt 2)); N = sigma sqrt D"""
    from skprivpred import SufficientStatisticRegressor

    X, y, _, _ = _digits()
    if kind == "binary":
        y = np.where(y == -1, -1, y % 2)
        est = SufficientStatisticClassifier(classes=[0, 1], random_state=0)
    elif kind == "ten classes":
        est = SufficientStatisticClassifier(classes=list(range(10)), random_state=0)
    else:
        y = np.where(y == -1, np.nan, y.astype(float))
        est = SufficientStatisticRegressor(y_bounds=(0.0, 9.0), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    n, B, d = est.n_labelled_, est.norm_bound_, est.n_basis_features_
    if kind == "ten classes":
        per_row, size = B * 3.0 / 10.0, 10 * d
    else:
        per_row, size = (1.0 if kind == "binary" else 9.0) * B / (2.0 * np.sqrt(2.0)), d
    signal, noise = n * per_row, est.noise_sigma_ * np.sqrt(size)
    assert best_case(est) == pytest.approx(signal**2 / (signal**2 + noise**2))
