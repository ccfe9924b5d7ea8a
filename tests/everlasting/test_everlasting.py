"""Private everlasting prediction (Naor, Nissim, Stemmer & Yan 2023): formulas, LabelBoost,
streams, halting, errors.

The Figure-1 privacy-game harness and black-box audits live in
tests/everlasting/test_everlasting_privacy.py.
"""

import copy
import math
import multiprocessing
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import sparse
from scipy.stats import binomtest, cauchy, chisquare, norm
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.tree import DecisionTreeClassifier

from skprivpred import PrivacyAccountant, PrivacyGuarantee, PrivacyWarning
from skprivpred.accounting import eps_of_rho, zcdp_rho
from skprivpred.everlasting import (
    GenericBBLClassifier,
    PrivateEverlastingClassifier,
    amplification_denominator,
    genericbbl_plan,
    label_boost,
    labelboost_law,
    practical_plan,
    practical_schedule,
    relabel_law,
    relabel_through_class,
)
from skprivpred.exceptions import (
    BudgetExhaustedError,
    ForkedStateError,
    InsufficientSampleError,
    InvalidParameterError,
    PhaseDataError,
    PredictorHaltedError,
    PrivacyParameterError,
)
from skprivpred.finite import FiniteHypothesisClass, ThresholdClass

P_FALSE_ALARM = 1e-6
THRESHOLD = 0.3  # the target concept 1[x >= 0.3] of the synthetic task


def _task(n, rng):
    x = rng.random(n)
    return x, (x >= THRESHOLD).astype(int)


def _simulated(**kwargs):
    params = dict(
        target_error=0.05,
        failure_probability=0.05,
        constants="simulation",
        random_state=0,
        classes=(0, 1),
    )
    params.update(kwargs)
    return GenericBBLClassifier(**params)


def _fit_quietly(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return estimator.fit(X, y)


def linear_threshold(threshold: float, n_features: int = 1) -> LogisticRegression:
    """``1[x >= threshold]`` on the first feature as a fitted ``LogisticRegression`` (score
    ``x - t'``, ``t'`` the float just below ``threshold``: ``x - t' > 0`` exactly when
    ``x >= threshold``).

    The library votes such a teacher from its coefficients (row-wise by construction, one
    stacked product), so streams of thousands of queries stay fast; a teacher answering
    through its own ``predict`` answers each query row alone, through the boundary
    (tests/audits/test_everlasting_user_code.py).
    """
    model = LogisticRegression()
    model.classes_ = np.array([0, 1])
    model.coef_ = np.eye(1, n_features)
    model.intercept_ = np.array([-float(np.nextafter(threshold, -np.inf))])
    model.n_features_in_ = n_features
    return model


class MidpointThreshold(ClassifierMixin, BaseEstimator):
    """A fast 1-D teacher: ERM threshold at the midpoint (the one-sided rule biases accuracy).

    ``fit`` returns the fitted rule as an exact ``LogisticRegression``
    (:func:`linear_threshold`), which the library votes from its coefficients; inside a
    ``Pipeline`` (which keeps the step itself) the step answers through ``predict``.
    """

    def fit(self, X, y):
        x, y = np.asarray(X)[:, 0], np.asarray(y)
        self.classes_ = np.array([0, 1])
        negative, positive = x[y == 0], x[y == 1]
        if negative.size and positive.size:
            self.threshold_ = 0.5 * (negative.max() + positive.min())
        else:
            self.threshold_ = np.inf if negative.size else -np.inf
        if not np.isfinite(self.threshold_):  # (a block with one label gets no fit at all)
            return self
        return linear_threshold(self.threshold_, np.shape(X)[1])

    def predict(self, X):
        return (np.asarray(X)[:, 0] >= self.threshold_).astype(int)


class RecordingMidpoint(MidpointThreshold):
    """Records every training set it sees (class-level log, survives clone)."""

    log = []

    def fit(self, X, y):
        RecordingMidpoint.log.append((np.asarray(X)[:, 0].copy(), np.asarray(y).copy()))
        return super().fit(X, y)


# -- formula oracles -----------------------------------------------------------------------
def _independent_phase1(base, d, alpha, eps=1.0, delta=1e-6, beta=0.05, tau=1.1e10):
    """Algorithm GenericBBL's formulas written out again, independently of the library."""
    log = lambda v: math.log(v) / math.log(base)  # noqa: E731
    m = 3 + math.exp(eps + 4)
    big_a = 8 * d * log(26 / alpha) + 4 * log(4 / beta)
    n = (
        8
        * tau
        / (alpha**3 * eps**2)
        * big_a**2
        * log(1 / delta)
        * log(8 * big_a / (eps * alpha**2 * beta * delta)) ** 2
        * m
    )
    a1, b1 = alpha / 2, beta / 2
    lam = math.ceil((8 * d * log(13 / a1) + 4 * log(2 / b1)) / a1)
    teachers = tau * lam * log(1 / delta) * log(lam / (eps * a1 * b1 * delta)) ** 2 / (a1 * eps)
    return n, lam, teachers, 25600 * lam * teachers / eps


# (log base, d, alpha): (n, lambda_1, T_1, R_1), the paper's formulas worked out by hand
PLAN_TABLE = {
    (2, 1, 0.05): (3.6e25, 3899, 6.2e19, 6.2e27),
    (2, 1, 1 / 60): (1.5e27, 13218, 7.3e20, 2.5e29),
    (2, 10, 0.05): (2.4e27, 29883, 5.4e20, 4.1e29),
    (2, 10, 1 / 60): (1.0e29, 104865, 6.6e21, 1.8e31),
    (math.e, 1, 0.05): (5.7e24, 2702, 1.4e19, 9.6e26),
    (math.e, 10, 1 / 60): (1.6e28, 72687, 1.5e21, 2.8e30),
}


def _two_digits(value):
    return float(f"{value:.1e}")


@pytest.mark.parametrize("scenario", list(PLAN_TABLE))
def test_plan_matches_worked_table(scenario):
    base, d, alpha = scenario
    plan = genericbbl_plan(1.0, 1e-6, alpha, 0.05, d, log_base=base)
    phase = plan["phases"][0]
    n, lam, teachers, queries = PLAN_TABLE[scenario]
    assert phase["teacher_size"] == pytest.approx(
        lam, rel=1e-3
    )  # the table rounds to nearest; the code up
    assert [_two_digits(v) for v in (plan["n"], phase["n_teachers"], phase["phase_length"])] == [
        n,
        teachers,
        queries,
    ]
    oracle = _independent_phase1(base, d, alpha)
    assert plan["n"] == pytest.approx(oracle[0], rel=1e-3)
    assert phase["teacher_size"] == oracle[1]
    assert phase["n_teachers"] == pytest.approx(oracle[2], rel=1e-3)
    assert phase["phase_length"] == pytest.approx(oracle[3], rel=1e-3)
    assert plan["guarantee"] == {"error": 6 * alpha, "failure": 0.2, "epsilon": 1.0, "delta": 1e-6}


def test_worked_example_4_1():
    plan = genericbbl_plan(1.0, 1e-6, 0.05, 0.05, 1)
    p1 = plan["phases"][0]
    assert plan["m"] == pytest.approx(151.41, abs=5e-3) == amplification_denominator(1.0)
    assert plan["n"] == pytest.approx(3.65e25, rel=2e-3)
    assert p1["alpha"] == p1["beta"] == 0.025
    assert p1["n_teachers"] == pytest.approx(6.18e19, rel=1e-3)
    assert p1["pool_size"] == pytest.approx(2.41e23, rel=2e-3)
    assert p1["top_budget"] == pytest.approx(9.9e27, rel=5e-3)
    assert p1["bt_epsilon"] == pytest.approx(8.8e-16, rel=5e-3)
    assert p1["bt_delta"] == pytest.approx(5.07e-35, rel=1e-3)
    assert p1["required_gap"] == pytest.approx(0.037, rel=5e-3) and p1["gap_condition_holds"]
    assert p1["threshold_gap"] == 0.05
    assert p1["next_pool_size"] == pytest.approx(2.8e24, rel=1e-2)
    phases = plan["phases"]
    assert phases[1]["pool_size"] / phases[0]["pool_size"] == pytest.approx(11.6, abs=0.1)
    assert phases[2]["pool_size"] / phases[1]["pool_size"] == pytest.approx(11.3, abs=0.1)


@pytest.mark.parametrize("scenario", list(PLAN_TABLE))
def test_plan_identities(scenario):
    base, d, alpha = scenario
    plan = genericbbl_plan(1.0, 1e-6, alpha, 0.05, d, log_base=base, phases=4)
    m = plan["m"]
    first = plan["phases"][0]
    assert first["pool_size"] == first["teacher_size"] * first["n_teachers"]
    assert first["pool_size"] == pytest.approx(plan["n"] / m, rel=1e-3)  # |S_1| = n eps / m
    assert plan["required_samples"] >= plan["n"]
    assert plan["required_samples"] * 1.0 / m >= first["pool_size"] * (1 - 1e-12)
    for phase in plan["phases"]:
        assert phase["unlabelled_size"] == pytest.approx(25600 * phase["pool_size"] / m, rel=1e-9)
        assert phase["labelled_size"] == pytest.approx(phase["pool_size"] / m, rel=1e-9)
        assert phase["unlabelled_size"] >= phase["next_pool_size"]  # Claim D.6
        eps, delta = phase["bt_composed"]
        assert eps <= 1.0 and delta == pytest.approx(1e-6)  # Claim D.1
        assert phase["top_budget"] == pytest.approx(
            64 * phase["alpha"] * phase["phase_length"], rel=1e-12
        )


def test_gap_condition_needs_tau():
    holds = genericbbl_plan(1.0, 1e-6, 0.05, 0.05, 1, phases=4)["phases"]
    fails = genericbbl_plan(1.0, 1e-6, 0.05, 0.05, 1, tau=1e9, phases=4)["phases"]
    assert all(p["gap_condition_holds"] for p in holds)
    assert not any(p["gap_condition_holds"] for p in fails)


def test_practical_plan_table():
    # rho and T / lambda for z = 3, margin = 0.4, worked out by hand
    for eps, rho, ratio in [
        (0.5, 0.0044, 6329),
        (1, 0.0175, 1610),
        (2, 0.068, 416),
        (4, 0.254, 111),
    ]:
        plan = practical_plan(eps, 1e-6, 20)
        assert plan["rho"] == pytest.approx(rho, rel=2e-2)
        assert plan["teachers_per_row"] == pytest.approx(ratio, abs=1.0)
        assert plan["n_samples"] == 20 * plan["n_teachers"]
        assert plan["sigma"] == pytest.approx(math.sqrt(plan["n_samples"] / (2 * plan["rho"])))
        assert plan["sigma"] <= 0.4 * plan["n_teachers"] / 3 + 1e-9
    assert practical_plan(1, 1e-6, 20)["n_samples"] == pytest.approx(6.4e5, rel=1e-2)
    rho = zcdp_rho(1.0, 1e-6)
    assert rho + 2 * math.sqrt(rho * math.log(1e6)) == pytest.approx(1.0, rel=1e-12)


# -- LabelBoost -------------------------------------------------------------------------------
def test_labelboost_threshold_dichotomies_collapse_duplicates():
    labelled = np.array([0.1, 0.2, 0.2, 0.5])
    unlabelled = np.array([0.5, 0.7, 0.9, 0.9, 0.1])
    errors, proba = labelboost_law(ThresholdClass(), labelled, [0, 0, 1, 1], unlabelled)
    assert errors.size == 5 + 1  # distinct values {0.1, 0.2, 0.5, 0.7, 0.9}
    # cut k labels the first k distinct values 0: errors on the labelled part
    np.testing.assert_array_equal(errors, [2, 1, 1, 2, 2, 2])
    np.testing.assert_allclose(proba, np.exp(-errors / 2) / np.exp(-errors / 2).sum())


def test_labelboost_unlabelled_points_change_only_the_candidates():
    labelled, labels = np.array([0.1, 0.4, 0.6]), np.array([0, 1, 1])
    few, _ = labelboost_law(ThresholdClass(), labelled, labels, np.array([0.5]))
    many, _ = labelboost_law(ThresholdClass(), labelled, labels, np.array([0.05, 0.5, 0.55, 0.9]))
    assert many.size == few.size + 3
    assert sorted(set(few)) == sorted(set(many))  # scores come from the labelled part only


def test_labelboost_sampling_law_and_monotone_output():
    labelled = np.array([0.1, 0.3, 0.35, 0.6, 0.8])
    labels = np.array([0, 1, 0, 1, 1])
    unlabelled = np.array([0.2, 0.5, 0.7])
    errors, proba = labelboost_law(ThresholdClass(), labelled, labels, unlabelled)
    rng = np.random.default_rng(0)
    values = np.unique(np.r_[labelled, unlabelled])
    n = 20_000
    counts = np.zeros(errors.size, dtype=int)
    for _ in range(n):
        new_labelled, new_unlabelled = label_boost(
            ThresholdClass(), labelled, labels, unlabelled, rng
        )
        every = np.r_[labelled, unlabelled]
        new = np.r_[new_labelled, new_unlabelled]
        order = np.argsort(every, kind="stable")
        assert np.all(np.diff(new[order]) >= 0)  # realised by an increasing threshold
        counts[np.sum(values < every[new == 1].min()) if new.any() else values.size] += 1
    assert chisquare(counts, n * proba).pvalue > P_FALSE_ALARM
    uniform = np.full(errors.size, 1 / errors.size)
    assert chisquare(counts, n * uniform).pvalue < P_FALSE_ALARM  # the test has power


def test_labelboost_finite_class_deduplicates_hypotheses():
    matrix = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1]])
    hclass = FiniteHypothesisClass(predictions=matrix)
    labelled, labels = np.array([0, 2]), np.array([0, 1])
    errors, proba = labelboost_law(hclass, labelled, labels, np.array([1, 3]))
    assert errors.size == 4  # rows 0 and 1 are one dichotomy
    assert sorted(errors) == [0, 0, 1, 1]
    rng = np.random.default_rng(1)
    for _ in range(50):
        on_labelled, on_unlabelled = label_boost(hclass, labelled, labels, np.array([1, 3]), rng)
        row = np.empty(4, dtype=int)
        row[[0, 2]], row[[1, 3]] = on_labelled, on_unlabelled
        assert any(np.array_equal(row, h) for h in matrix)
    # callables describe the same class
    callables = FiniteHypothesisClass(
        hypotheses=[lambda X, h=h: h[X[:, 0].astype(int)] for h in matrix]
    )
    same, _ = labelboost_law(
        callables, labelled.reshape(-1, 1).astype(float), labels, np.array([[1.0], [3.0]])
    )
    assert sorted(same) == sorted(errors)


def test_threshold_erm_midpoint_rule():
    points = np.array(
        [[0.1, 0.2, 0.5, 0.7], [0.1, 0.1, 0.3, 0.3], [0.4, 0.5, 0.6, 0.7], [0.4, 0.5, 0.6, 0.7]]
    )
    labels = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1]])
    thresholds = ThresholdClass.erm(points, labels)
    np.testing.assert_allclose(thresholds, sorted([0.35, 0.2, np.nextafter(0.7, 1), 0.4]))
    # non-realizable: the middle of the optimal range
    noisy = ThresholdClass.erm(np.array([[0.1, 0.2, 0.3, 0.4, 0.5]]), np.array([[0, 1, 0, 1, 1]]))
    assert noisy[0] == pytest.approx(0.15) or noisy[0] == pytest.approx(0.35)


# -- the estimators: schedule, stream semantics, halting -----------------------------------------
@pytest.fixture(scope="module")
def threshold_data():
    return _task(8000, np.random.default_rng(0))


def test_simulation_warns_and_has_no_guarantee(threshold_data):
    x, y = threshold_data
    with pytest.warns(PrivacyWarning, match="NO privacy guarantee"):
        clf = _simulated().fit(x, y)
    guarantee = clf.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee)
    assert guarantee.epsilon == math.inf and guarantee.delta == 1.0
    assert guarantee.theorem.startswith("none") and "per_query_epsilon" not in guarantee.details
    assert clf.phase_ == 1 and clf.queries_in_phase_ == 0 and clf.status_ == "active"
    first = clf.phase_schedule_[0]
    assert (first["n_teachers"], first["teacher_size"], first["phase_length"]) == (200, 20, 16000)
    assert first["labelled_size"] == 2000 and first["unlabelled_size"] == 8000
    assert first["top_budget"] == math.ceil(64 * 0.025 * 16000) and first["threshold_gap"] == 0.05
    assert clf.required_samples_ == 8000
    with pytest.raises(AttributeError):
        clf.phase_ = 3  # read-only


def test_generic_bbl_accuracy_over_phases(threshold_data, monkeypatch):
    """Simulation sizes: multi-phase error <= 5%, LabelBoost pools monotone."""
    x, y = threshold_data

    pools = []
    erm = ThresholdClass.erm

    def recording_erm(points, labels):  # the library's class, its ERM recorded (a subclass
        pools.append((points.ravel().copy(), labels.ravel().copy()))  # would be refused)
        return erm(points, labels)

    monkeypatch.setattr(ThresholdClass, "erm", staticmethod(recording_erm))
    clf = _fit_quietly(_simulated(hypotheses=ThresholdClass(), random_state=1), x, y)
    rng = np.random.default_rng(2)
    queries = []
    for phase in range(1, 5):
        q = rng.random(16000)
        answers = clf.predict(q)
        queries.append(q)
        assert np.mean(answers != (q >= THRESHOLD)) <= 0.05
        assert clf.phase_ == phase + 1 and clf.queries_in_phase_ == 0
    assert len(pools) == 5
    for phase, (points, labels) in enumerate(pools[1:]):
        assert points.size == 4000
        assert np.all(np.isin(points, queries[phase]))  # S_{i+1} is made of phase i's queries
        # one LabelBoost draw labels the whole pool: realised by a threshold
        assert points[labels == 0].max(initial=-np.inf) < points[labels == 1].min(initial=np.inf)


def test_stream_crosses_phase_boundaries_in_one_call(threshold_data):
    x, y = threshold_data
    clf = _fit_quietly(_simulated(overrides={"phase_length": 9000, "n_teachers": 100}), x, y)
    q = np.random.default_rng(3).random(20_000)
    answers = clf.predict(q)
    assert answers.shape == (20_000,)
    assert clf.phase_ == 3 and clf.queries_in_phase_ == 2000
    assert clf.queries_answered_ == 20_000
    assert [p["phase"] for p in clf.phase_schedule_] == [1, 2, 3]
    assert np.mean(answers != (q >= THRESHOLD)) <= 0.05


def test_schedule_is_data_independent():
    rng = np.random.default_rng(4)
    schedules = []
    for t_star in (0.2, 0.7):
        x = rng.random(8000)
        clf = _fit_quietly(_simulated(random_state=None), x, (x >= t_star).astype(int))
        clf.predict(rng.random(40_000))
        schedules.append((clf.phase_, clf.queries_in_phase_, clf.phase_schedule_))
    assert schedules[0] == schedules[1]


def test_one_training_row_changes_one_teacher(threshold_data):
    x, y = threshold_data
    changed_x, changed_y = x.copy(), y.copy()
    for row in range(0, 8000, 997):  # rows inside S_1 and rows outside it
        changed_x[row], changed_y[row] = 0.999 - x[row], 1 - y[row]
        a = _fit_quietly(_simulated(random_state=5), x, y)._state["teachers"]
        b = _fit_quietly(_simulated(random_state=5), changed_x, changed_y)._state["teachers"]
        assert np.setdiff1d(a, b).size <= 1 and np.setdiff1d(b, a).size <= 1
        changed_x[row], changed_y[row] = x[row], y[row]


def _halting_predictor(threshold_data, budget=3):
    x, y = threshold_data
    return _fit_quietly(
        _simulated(overrides={"top_budget": budget, "threshold_gap": 0.2}, random_state=6), x, y
    )


def test_halting_raises_with_partial_answers_and_persists(threshold_data):
    clf = _halting_predictor(threshold_data)
    clf.predict(np.full(10, 0.9))
    # x = 0.3 splits the teachers about evenly: TOPs come fast
    with pytest.raises(PredictorHaltedError) as info:
        clf.predict(np.r_[np.full(5, 0.9), np.full(5000, THRESHOLD)])
    predictions = info.value.predictions
    assert 5 < predictions.size < 5005
    assert predictions[-1] == 1  # the halting query is answered (TOP answers 1)
    assert clf.status_ == "halted" and clf._tops_used() == 3
    assert clf.queries_answered_ == 10 + predictions.size
    with pytest.raises(PredictorHaltedError) as again:
        clf.predict(np.array([0.9]))
    assert again.value.predictions.size == 0
    with pytest.raises(PredictorHaltedError):
        clf.query(0.9)
    assert isinstance(info.value, RuntimeError)


def test_schedule_failure_at_a_phase_boundary_halts(threshold_data):
    clf = _fit_quietly(_simulated(), *threshold_data)

    def failing(params, next_params):
        raise PrivacyParameterError("gap condition fails (test)")

    clf._schedule.check_phase = failing
    with pytest.raises(PredictorHaltedError, match="cannot run with a guarantee") as info:
        clf.predict(np.random.default_rng(0).random(16_005))
    assert info.value.predictions.size == 16_000 and clf.status_ == "halted"


def test_query_single_row(threshold_data):
    clf = _fit_quietly(_simulated(), *threshold_data)
    assert clf.query(0.95) == 1 and clf.query(0.01) == 0
    assert clf.queries_in_phase_ == 2


def test_finite_classes_run_in_simulation():
    rng = np.random.default_rng(7)
    grid = np.arange(101)
    matrix = (grid[None, :] >= grid[:, None]).astype(int)  # thresholds on a grid, as a matrix
    x = rng.integers(0, 100, 8000)
    y = matrix[30, x]
    overrides = {"n_teachers": 100, "teacher_size": 20, "phase_length": 8000}
    clf = _fit_quietly(
        _simulated(hypotheses=FiniteHypothesisClass(predictions=matrix), overrides=overrides),
        x,
        y,
    )
    assert clf.phase_schedule_[0]["teacher_size"] == 20
    q = rng.integers(0, 100, 12_000)
    assert np.mean(clf.predict(q) != matrix[30, q]) <= 0.05 and clf.phase_ == 2
    hypotheses = [lambda X, t=t: (X[:, 0] >= t).astype(int) for t in range(0, 101, 5)]
    callables = _fit_quietly(
        _simulated(hypotheses=FiniteHypothesisClass(hypotheses=hypotheses), overrides=overrides),
        x.reshape(-1, 1),
        y,
    )
    q2 = rng.integers(0, 100, (9000, 1))
    assert np.mean(callables.predict(q2) != matrix[30, q2[:, 0]]) <= 0.1
    assert FiniteHypothesisClass(hypotheses=hypotheses).default_vc_dim() == 4


def test_decreasing_direction_and_class_labels():
    rng = np.random.default_rng(8)
    x = rng.random(8000)
    y = np.where(x <= 0.6, "yes", "no")
    clf = _fit_quietly(
        _simulated(hypotheses=ThresholdClass("decreasing"), classes=["no", "yes"]), x, y
    )
    q = rng.random(4000)
    assert np.mean(clf.predict(q) != np.where(q <= 0.6, "yes", "no")) <= 0.05


# -- the practical predictor ------------------------------------------------------------------
def _practical(n_teachers, **kwargs):
    """Constant phases (``phase_growth=1``) unless a test asks for growth."""
    params = dict(n_teachers=n_teachers, random_state=0, classes=(0, 1), phase_growth=1.0)
    params.update(kwargs)
    return PrivateEverlastingClassifier(MidpointThreshold(), **params)


def test_gaussian_vote_exact_law():
    """Constant teachers (one row each) make the vote count known: P(1) = Phi((v - T/2) / sigma)."""
    T, ones = 2000, 1500
    X = np.arange(T, dtype=float).reshape(-1, 1)
    y = (np.arange(T) < ones).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        clf = PrivateEverlastingClassifier(
            DecisionTreeClassifier(), n_teachers=T, phase_length=T, random_state=1, classes=(0, 1)
        ).fit(X, y)
    sigma = math.sqrt(T / (2 * zcdp_rho(1.0, 1e-6)))
    assert clf.noise_sigma_ == pytest.approx(sigma)
    guarantee = clf.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee)
    assert (guarantee.epsilon, guarantee.delta) == (1.0, 1e-6)
    assert guarantee.rho == pytest.approx(zcdp_rho(1.0, 1e-6))
    assert guarantee.protects == "each training row and each query"
    assert "Naor, Nissim, Stemmer & Yan (2023)" in guarantee.theorem
    assert guarantee.details["per_query_rho"] == pytest.approx(1 / (2 * sigma**2))
    expected = norm.cdf((ones - T / 2) / sigma)
    np.testing.assert_allclose(clf._output_distribution(X[:1])[0], [1 - expected, expected])
    answers = clf.predict(X[:T])
    assert binomtest(int(answers.sum()), T, expected).pvalue > P_FALSE_ALARM
    assert binomtest(int(answers.sum()), T, 0.5 + 0.5 * (expected - 0.5)).pvalue < P_FALSE_ALARM


def test_practical_accuracy_and_drift():
    """Multi-phase accuracy at a scale that runs in seconds: eps = 4, lambda = 10.

    Well provisioned (T = 1108 by the sizing rule): error <= 2% in each of 3 phases.
    Under-provisioned (T = 280): larger error, drifting upward (errors compound).
    """
    rng = np.random.default_rng(9)
    errors = {}
    for n_teachers in (None, 280):
        n = 11_080 if n_teachers is None else 2800
        x = rng.random((n, 1))
        clf = _practical(n_teachers, epsilon=4.0).fit(x, (x[:, 0] >= THRESHOLD).astype(int))
        length = clf.phase_schedule_[0]["phase_length"]
        per_phase = []
        for _ in range(3):
            q = rng.random((length, 1))
            per_phase.append(np.mean(clf.predict(q) != (q[:, 0] >= THRESHOLD)))
        errors[clf.n_teachers_] = per_phase
    assert set(errors) == {1108, 280}
    assert max(errors[1108]) <= 0.02
    assert min(errors[280]) > max(errors[1108])


def test_next_phase_trains_on_released_answers():
    """Phase 2's teachers see phase 1's queries with their released answers."""
    rng = np.random.default_rng(10)
    x = rng.random((1000, 1))
    RecordingMidpoint.log = []
    clf = PrivateEverlastingClassifier(
        RecordingMidpoint(),
        epsilon=4.0,
        n_teachers=100,
        phase_growth=1.0,
        random_state=2,
        classes=(0, 1),
    )
    clf.fit(x, (x[:, 0] >= THRESHOLD).astype(int))
    fitted_in_phase_1 = len(RecordingMidpoint.log)
    q = rng.random((1500, 1))
    answers = clf.predict(q)
    assert clf.phase_ == 2 and clf.queries_in_phase_ == 500
    # Blocks with a single label get a constant teacher without a fit call: the fitted
    # blocks must hold distinct phase-1 queries, each with exactly its released answer.
    phase2 = RecordingMidpoint.log[fitted_in_phase_1:]
    assert 80 <= len(phase2) <= 100 and all(entry[0].size == 10 for entry in phase2)
    seen_x = np.concatenate([entry[0] for entry in phase2])
    seen_y = np.concatenate([entry[1] for entry in phase2])
    released = dict(zip(q[:1000, 0], answers[:1000]))
    assert np.unique(seen_x).size == seen_x.size
    assert all(released[value] == label for value, label in zip(seen_x, seen_y))


def test_split_calls_equal_one_call_and_slots_are_coupled():
    """One uniform per query: answers do not depend on how the stream is cut into calls, and
    changing the query at one slot leaves every other answer of its phase bit-identical."""
    rng = np.random.default_rng(11)
    x = rng.random((1000, 1))
    y = (x[:, 0] >= THRESHOLD).astype(int)
    q = rng.random((2500, 1))
    whole = _practical(100, epsilon=2.0).fit(x, y).predict(q)
    split = _practical(100, epsilon=2.0).fit(x, y)
    parts = [split.predict(q[a:b]) for a, b in [(0, 7), (7, 1600), (1600, 2500)]]
    np.testing.assert_array_equal(whole, np.concatenate(parts))
    changed = q.copy()
    changed[1234] = 1 - q[1234]  # slot 234 of phase 2
    other = _practical(100, epsilon=2.0).fit(x, y).predict(changed)
    same = np.ones(2500, dtype=bool)
    same[1234] = False
    np.testing.assert_array_equal(whole[same][1000 : 2000 - 1], other[same][1000 : 2000 - 1])
    np.testing.assert_array_equal(whole[:1000], other[:1000])


def test_between_thresholds_vote_release():
    rng = np.random.default_rng(12)
    x = rng.random((20_000, 1))
    y = (x[:, 0] >= THRESHOLD).astype(int)
    with pytest.raises(PrivacyParameterError, match="at least"):
        _practical(500, vote_release="between_thresholds", top_budget=5).fit(x, y)
    clf = _practical(2000, vote_release="between_thresholds", epsilon=4.0).fit(x, y)
    first = clf.phase_schedule_[0]
    assert first["top_budget"] == 6 and first["threshold_gap"] == 0.25  # the largest affordable
    assert first["bt_delta"] <= 1e-6 / 6
    guarantee = clf.privacy_guarantee_
    assert (guarantee.epsilon, guarantee.delta) == (4.0, 1e-6)
    assert "own phase" in guarantee.details["caveat"]
    assert guarantee.details["per_query_epsilon"] == first["bt_epsilon"]
    clear = np.r_[np.full((500, 1), 0.05), np.full((500, 1), 0.95)]
    np.testing.assert_array_equal(clf.predict(clear), np.r_[[0] * 500, [1] * 500])
    assert clf._tops_used() == 0
    with pytest.raises(PredictorHaltedError):
        clf.predict(np.full((20_000, 1), THRESHOLD))  # teachers split: TOPs until the halt
    assert clf._tops_used() == 6 and clf.status_ == "halted"


# -- growing phases and relabelling through the class -----------------------------------------
def _schedule_by_hand(eps, delta, n, growth, relabel, phases):
    """The practical schedule written out again: R_1 = ceil(g n), R_{i+1} = ceil(g R_i),
    T_1 = ceil(3 sigma_1 / 0.4), T_i = min(N_i, ceil(T_1 sigma_i / sigma_1))."""
    rho = zcdp_rho(eps, delta)
    length = math.ceil(growth * n)
    sigma_1 = math.sqrt(length / (2 * rho))
    first = min(n, math.ceil(3 * sigma_1 / 0.4))
    rows, pool = [], n
    for i in range(phases):
        if i:
            pool, length = length, math.ceil(growth * length)
        phase_rho = 0.9 * rho if (i and relabel) else rho
        sigma = math.sqrt(length / (2 * phase_rho))
        teachers = first if i == 0 else min(pool, math.ceil(first * sigma / sigma_1))
        rows.append((pool, teachers, pool // teachers, length, sigma, phase_rho))
    return rows


@pytest.mark.parametrize("relabel", [False, True])
def test_practical_schedule_formulas(relabel):
    listed = practical_schedule(4.0, 1e-6, 32561, relabel=relabel, phases=5)
    expected = _schedule_by_hand(4.0, 1e-6, 32561, 2.0, relabel, 5)
    for row, (pool, teachers, size, length, sigma, rho) in zip(listed, expected, strict=True):
        assert (row["pool_size"], row["n_teachers"], row["teacher_size"]) == (pool, teachers, size)
        assert row["phase_length"] == length
        assert row["noise_sigma"] == pytest.approx(sigma, rel=1e-12)
        assert row["rho"] == pytest.approx(rho, rel=1e-12)
    sizes = [row["teacher_size"] for row in listed]
    assert sizes == sorted(sizes) and sizes[-1] >= 2 * sizes[1]  # rows per teacher grow
    assert [row["pool_size"] for row in listed[1:]] == [row["phase_length"] for row in listed[:-1]]
    rho = zcdp_rho(4.0, 1e-6)
    for row in listed[1:]:
        if relabel:  # the relabelling draw and the phase's votes compose to rho exactly
            assert row["relabel_epsilon"] == pytest.approx(math.sqrt(0.8 * rho))
            assert row["rho"] + row["relabel_epsilon"] ** 2 / 8 == pytest.approx(rho, rel=1e-12)
        else:
            assert row["relabel_epsilon"] is None
    assert listed[0]["relabel_epsilon"] is None
    # phase_growth=1 is the constant schedule of version 0.1: T = ceil(3 sqrt(n / (2 rho)) / 0.4)
    constant = practical_schedule(4.0, 1e-6, 32561, phase_growth=1.0, phases=3)
    assert {(r["n_teachers"], r["teacher_size"], r["phase_length"]) for r in constant} == {
        (1900, 17, 32561)
    }
    with pytest.raises(InvalidParameterError, match="'phase_growth' parameter"):
        practical_schedule(4.0, 1e-6, 100, phase_growth=0.5)


def test_growing_schedule_is_data_independent():
    rng = np.random.default_rng(30)
    schedules = []
    for threshold in (0.2, 0.7):
        x = rng.random((300, 1))
        clf = _practical(30, epsilon=2.0, phase_growth=2.0)
        clf.fit(x, (x[:, 0] >= threshold).astype(int))
        clf.predict(rng.random((600 + 1200 + 5, 1)))
        schedules.append(clf.phase_schedule_)
    assert schedules[0] == schedules[1] and len(schedules[0]) == 3
    assert schedules[0] == tuple(practical_schedule(2.0, 1e-6, 300, n_teachers=30, phases=3))


@pytest.mark.parametrize("hypotheses", [None, "thresholds"])
def test_growing_phases_exact_law_in_phase_two(hypotheses):
    rng = np.random.default_rng(31)
    x = rng.random((300, 1))
    clf = _practical(30, epsilon=2.0, phase_growth=2.0, hypotheses=hypotheses).fit(
        x, (x[:, 0] >= THRESHOLD).astype(int)
    )
    first = clf.phase_schedule_[0]
    assert (first["phase_length"], first["n_teachers"]) == (600, 30)
    clf.predict(rng.random((600, 1)))
    assert (clf.phase_, clf.queries_in_phase_) == (2, 0)
    second = clf.phase_schedule_[1]
    rho = zcdp_rho(2.0, 1e-6) * (0.9 if hypotheses else 1.0)
    sigma = math.sqrt(1200 / (2 * rho))
    teachers = min(600, math.ceil(30 * sigma / first["noise_sigma"]))
    assert (second["pool_size"], second["phase_length"], second["n_teachers"]) == (
        600,
        1200,
        teachers,
    )
    assert second["noise_sigma"] == pytest.approx(sigma, rel=1e-12)
    probe = np.linspace(0, 1, 41).reshape(-1, 1)
    votes = clf._vote_counts(probe)  # non-private diagnostic
    assert votes.max() <= teachers
    np.testing.assert_allclose(
        clf._output_distribution(probe)[:, 1], norm.cdf((votes - teachers / 2) / sigma)
    )


def test_growing_phases_charge_each_row_at_its_phase():
    rng = np.random.default_rng(32)
    x = rng.random((400, 1))
    accountant = PrivacyAccountant(delta=0.5, ledger=":memory:")
    clf = _practical(20, epsilon=2.0, phase_growth=2.0, accountant=accountant)
    clf.fit(x, (x[:, 0] >= THRESHOLD).astype(int))
    rho = zcdp_rho(2.0, 1e-6)
    clf.predict(rng.random((800, 1)))  # exactly phase 1 (R_1 = 800)
    spent = accountant.spent()[0]
    assert spent == pytest.approx(800 * eps_of_rho(rho / 800, 1e-6 / 800))
    clf.predict(rng.random((100, 1)))  # phase 2 (R_2 = 1600)
    assert accountant.spent()[0] - spent == pytest.approx(100 * eps_of_rho(rho / 1600, 1e-6 / 1600))
    crossing = _practical(
        20,
        epsilon=2.0,
        phase_growth=2.0,
        accountant=PrivacyAccountant(delta=0.5, ledger=":memory:"),
    ).fit(x, (x[:, 0] >= THRESHOLD).astype(int))
    crossing.predict(rng.random((900, 1)))  # a call reaching two phases: the larger charge
    assert crossing.accountant.spent()[0] == pytest.approx(900 * eps_of_rho(rho / 800, 1e-6 / 800))


def test_threshold_prior_candidates_are_the_prior_masses():
    hclass = ThresholdClass(prior_loc=0.5, prior_scale=0.2)
    points = np.array([0.3, 0.1, 0.3, 0.9, 0.45])
    labels = np.array([1, 0, 0, 1, 1])
    found = hclass.prior_candidates(points, labels)
    values = np.unique(points)
    masses = np.diff(cauchy.cdf(np.r_[-np.inf, values, np.inf], loc=0.5, scale=0.2))
    np.testing.assert_allclose(np.exp(found.log_prior), masses, rtol=1e-12)
    for k in range(values.size + 1):  # candidate k labels the first k distinct values 0
        predicted = np.searchsorted(values, points) >= k
        assert found.errors[k] == np.sum(predicted != labels)
        np.testing.assert_array_equal(found.labels_of(k)[0], predicted)
    # one more point splits one interval: the masses still sum to one
    more = hclass.prior_candidates(np.r_[points, 0.3 + 1e-9], np.r_[labels, 0])
    assert np.exp(more.log_prior).sum() == pytest.approx(1.0, abs=1e-12)
    # far out and close together: no cancellation (arctan b - arctan a = atan2(b - a, 1 + ab))
    far = ThresholdClass().prior_candidates(np.array([1e6, 1e6 + 1.0]), np.array([0, 1]))
    assert np.exp(far.log_prior[1]) == pytest.approx(1 / (math.pi * (1e12 + 1e6)), rel=1e-6)
    # decreasing: the prior is on t in the units of x
    down = ThresholdClass("decreasing", prior_loc=0.5, prior_scale=0.2)
    prepared = down.prepare(points)
    flipped = np.diff(cauchy.cdf(np.r_[-np.inf, np.unique(prepared), np.inf], loc=-0.5, scale=0.2))
    np.testing.assert_allclose(
        np.exp(down.prior_candidates(prepared, labels).log_prior), flipped, rtol=1e-12
    )
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(InvalidParameterError, match="prior_scale"):
            ThresholdClass(prior_scale=bad).prior_candidates(points, labels)


def test_relabel_law_sampling_and_monotone_output():
    hclass = ThresholdClass()
    points = np.array([-1.0, -0.2, 0.1, 0.4, 1.5, 0.1])
    labels = np.array([0, 1, 0, 1, 1, 1])
    epsilon = 1.5
    errors, proba = relabel_law(hclass, points, labels, epsilon)
    values = np.unique(points)
    prior = np.diff(cauchy.cdf(np.r_[-np.inf, values, np.inf]))
    expected = prior * np.exp(-epsilon * errors / 2)
    np.testing.assert_allclose(proba, expected / expected.sum(), rtol=1e-12)
    rng = np.random.default_rng(33)
    n = 20_000
    counts = np.zeros(errors.size, dtype=int)
    for _ in range(n):
        new = relabel_through_class(hclass, points, labels, epsilon, rng)
        order = np.argsort(points, kind="stable")
        assert np.all(np.diff(new[order]) >= 0)  # realised by one increasing threshold
        counts[np.sum(values < points[new == 1].min()) if new.any() else values.size] += 1
    assert chisquare(counts, n * proba).pvalue > P_FALSE_ALARM
    # the prior matters: LabelBoost's equal weights per dichotomy are a different law
    equal = np.exp(-epsilon * errors / 2) / np.exp(-epsilon * errors / 2).sum()
    assert chisquare(counts, n * equal).pvalue < P_FALSE_ALARM


def test_relabel_finite_class_weighs_every_hypothesis():
    matrix = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1]])
    hclass = FiniteHypothesisClass(predictions=matrix)
    points, labels = np.array([0, 2, 1]), np.array([0, 1, 1])
    errors, proba = relabel_law(hclass, points, labels, 2.0)
    np.testing.assert_array_equal(errors, (matrix[:, points] != labels).sum(axis=1))
    np.testing.assert_allclose(proba, np.exp(-errors) / np.exp(-errors).sum(), rtol=1e-12)
    assert proba[0] == proba[1]  # duplicate hypotheses keep their weight: the class is fixed
    rng = np.random.default_rng(34)
    for _ in range(50):
        new = relabel_through_class(hclass, points, labels, 2.0, rng)
        assert any(np.array_equal(new, row[points]) for row in matrix)


def test_next_phase_trains_on_relabelled_answers():
    """With a hypothesis class, phase 2's pool is phase 1's queries labelled by one threshold."""
    rng = np.random.default_rng(35)
    x = rng.random((1000, 1))
    RecordingMidpoint.log = []
    clf = PrivateEverlastingClassifier(
        RecordingMidpoint(),
        epsilon=4.0,
        n_teachers=100,
        phase_growth=1.0,
        hypotheses="thresholds",
        random_state=2,
        classes=(0, 1),
    )
    clf.fit(x, (x[:, 0] >= THRESHOLD).astype(int))
    assert clf.relabel_epsilon_ == pytest.approx(math.sqrt(0.8 * zcdp_rho(4.0, 1e-6)))
    assert clf.privacy_guarantee_.details["relabel_epsilon"] == clf.relabel_epsilon_
    fitted_in_phase_1 = len(RecordingMidpoint.log)
    q = rng.random((1500, 1))
    clf.predict(q)
    assert clf.phase_ == 2
    phase2 = RecordingMidpoint.log[fitted_in_phase_1:]
    seen_x = np.concatenate([entry[0] for entry in phase2])
    seen_y = np.concatenate([entry[1] for entry in phase2])
    assert np.isin(seen_x, q[:1000, 0]).all() and np.unique(seen_x).size == seen_x.size
    assert seen_x[seen_y == 0].max() < seen_x[seen_y == 1].min()  # one threshold labels them
    assert "McSherry & Talwar" in clf.privacy_guarantee_.theorem


def test_growing_relabelled_phases_do_not_drift():
    """Thresholds at eps = 4 with midpoint teachers: with growing, relabelled phases the
    error falls from phase to phase (more rows per teacher, labels realised by the class)."""
    rng = np.random.default_rng(36)
    x = rng.random((3000, 1))
    clf = PrivateEverlastingClassifier(
        MidpointThreshold(),
        epsilon=4.0,
        hypotheses="thresholds",
        random_state=3,
        classes=(0, 1),
    ).fit(x, (x[:, 0] >= THRESHOLD).astype(int))
    errors = []
    for params in practical_schedule(4.0, 1e-6, 3000, relabel=True, phases=3):
        q = rng.random((params["phase_length"], 1))
        errors.append(np.mean(clf.predict(q) != (q[:, 0] >= THRESHOLD)))
    assert clf.phase_ == 4
    # measured: 4.8%, 2.9%, 1.8% (rows per teacher 3, 4, 6)
    assert errors[0] <= 0.06 and errors[0] > errors[1] > errors[2], errors


def test_relabelling_errors():
    rng = np.random.default_rng(37)
    X = rng.random((200, 2))
    y = (X[:, 0] > 0.5).astype(int)
    with pytest.raises(InvalidParameterError, match="needs vote_release='gaussian'"):
        _practical(10, hypotheses="thresholds", vote_release="between_thresholds").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'hypotheses' parameter"):
        _practical(10, hypotheses="intervals").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'phase_growth' parameter"):
        _practical(10, phase_growth=0.5).fit(X, y)
    with pytest.raises(ValueError, match="one feature"):
        _practical(10, hypotheses="thresholds").fit(X, y)
    with pytest.raises(InvalidParameterError, match="prior_scale"):
        _practical(10, hypotheses=ThresholdClass(prior_scale=0.0)).fit(X[:, :1], y)
    assert not hasattr(_practical(10), "relabel_epsilon_")


# -- scikit-learn integration ---------------------------------------------------------------
def test_clone_get_params_and_repr(threshold_data):
    clf = _simulated(overrides={"n_teachers": 100})
    assert clone(clf).get_params() == clf.get_params()
    fitted = _fit_quietly(clf, *threshold_data)
    assert not hasattr(clone(fitted), "classes_")
    assert repr(fitted) == repr(clone(fitted))  # no fitted state in the repr
    practical = _practical(10, epsilon=2.0)
    assert clone(practical).get_params()["n_teachers"] == 10
    for estimator in (fitted, practical):
        assert not hasattr(estimator, "predict_proba")
        assert not hasattr(estimator, "decision_function")
        assert not hasattr(estimator, "partial_fit")


def test_in_pipeline():
    rng = np.random.default_rng(13)
    X = rng.random((600, 2))
    y = (X[:, 0] >= 0.5).astype(int)
    pipe = make_pipeline(StandardScaler(), _practical(20, epsilon=4.0))
    assert pipe.fit(X, y).predict(X[:5]).shape == (5,)
    assert 0.0 <= pipe.score(X[:100], y[:100]) <= 1.0  # consumes 100 queries
    assert pipe[-1].queries_in_phase_ == 105
    first = FunctionTransformer(lambda Z: Z[:, :1])
    generic = make_pipeline(first, _simulated())
    x, labels = _task(8000, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        generic.fit(np.c_[x, x], labels)
    assert generic.predict(np.c_[x[:3], x[:3]]).shape == (3,)


# -- one live copy: copies and forked children refuse to answer ----------------------------------
def _practical_with_ledger(tmp_path, **kwargs):
    """A fitted practical predictor charging a file ledger (readable from every process)."""
    rng = np.random.default_rng(40)
    X = rng.random((400, 1))
    accountant = PrivacyAccountant(delta=0.5, ledger=str(tmp_path / "budget.db"))
    clf = _practical(20, epsilon=2.0, accountant=accountant, **kwargs)
    return clf.fit(X, (X[:, 0] >= THRESHOLD).astype(int)), accountant


@pytest.mark.parametrize(
    "make_copy",
    [copy.deepcopy, copy.copy, lambda est: pickle.loads(pickle.dumps(est))],
    ids=["deepcopy", "copy", "pickle"],
)
def test_copies_refuse_to_answer_and_charge_nothing(threshold_data, tmp_path, make_copy):
    """Regression: a copy answered from the same phase state (only a PrivacyWarning)."""
    clf, accountant = _practical_with_ledger(tmp_path)
    clf.predict(np.full((3, 1), 0.9))
    state = (clf.phase_, clf.queries_in_phase_, clf.queries_answered_)
    twin = make_copy(clf)
    with pytest.raises(ForkedStateError, match="is a copy of a fitted predictor"):
        twin.predict(np.full((5, 1), 0.9))
    with pytest.raises(ForkedStateError):  # before any validation of the rows
        twin.query(np.nan)
    with pytest.raises(ForkedStateError):
        twin.score(np.full((5, 1), 0.9), np.ones(5))
    assert accountant.queries_answered == 3
    assert (twin.phase_, twin.queries_in_phase_, twin.status_) == (1, 3, "active")  # readable
    assert (clf.phase_, clf.queries_in_phase_, clf.queries_answered_) == state
    assert clf.predict(np.full((2, 1), 0.9)).shape == (2,)  # the original still answers
    assert accountant.queries_answered == 5
    twin.fit(np.random.default_rng(41).random((400, 1)), np.arange(400) % 2)  # a new predictor
    assert twin.predict(np.full((2, 1), 0.9)).shape == (2,) and twin.queries_in_phase_ == 2
    generic = _fit_quietly(_simulated(), *threshold_data)
    with pytest.raises(ForkedStateError, match="GenericBBLClassifier is a copy"):
        make_copy(generic).predict([0.9])
    assert generic.predict([0.9]).shape == (1,)


def _outcome_of(clf, rows) -> str:
    """What ``clf.predict(rows)`` does here: ``"answered"`` or the exception's name."""
    try:
        clf.predict(rows)
    except Exception as error:  # noqa: BLE001 - reported to the parent process
        return f"{type(error).__name__}: {error}"
    return "answered"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
@pytest.mark.parametrize("estimator", ["practical", "generic"])
def test_a_forked_child_refuses_to_answer_and_charges_nothing(threshold_data, tmp_path, estimator):
    """Regression: a child forked after fit answered from the parent's phase state."""
    if estimator == "practical":
        clf, accountant = _practical_with_ledger(tmp_path)
        rows = np.full((5, 1), 0.9)
    else:
        clf, accountant = _fit_quietly(_simulated(), *threshold_data), None
        rows = np.full(5, 0.9)
    clf.predict(rows[:3])
    parent = os.getpid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what predict does, then leave at once
        try:
            os.close(read)
            outcomes = [_outcome_of(clf, rows)]
            os.getpid = lambda: parent  # as if the child had been given the parent's id
            outcomes.append(_outcome_of(clf, rows))
            os.write(write, "\n".join(outcomes).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        outcome, same_id = pipe.read().split("\n")
    os.waitpid(pid, 0)
    assert outcome.startswith("ForkedStateError") and f"fitted in process {parent}" in outcome
    assert same_id.startswith("ForkedStateError")  # the fork is told by a token, too
    assert clf.queries_in_phase_ == 3
    assert clf.predict(rows[:2]).shape == (2,)  # the parent still answers
    if accountant is not None:
        assert accountant.queries_answered == 5  # the child charged nothing


#: The predictor a fork-based pool's workers inherit (a module global, as in a real program).
_INHERITED: dict = {}


def _ask_inherited(rows):
    return _outcome_of(_INHERITED["predictor"], rows).split(":")[0]


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method"
)
def test_fork_pool_workers_refuse_to_answer(tmp_path):
    clf, accountant = _practical_with_ledger(tmp_path)
    _INHERITED["predictor"] = clf
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            outcomes = pool.map(_ask_inherited, [np.full((5, 1), 0.9)] * 4)
    finally:
        _INHERITED.clear()
    assert outcomes == ["ForkedStateError"] * 4
    assert accountant.queries_answered == 0 and clf.queries_in_phase_ == 0
    assert clf.predict(np.full((5, 1), 0.9)).shape == (5,)


def test_a_pickled_copy_refuses_in_another_process(tmp_path):
    rng = np.random.default_rng(42)
    X = rng.random((400, 1))
    accountant = PrivacyAccountant(delta=0.5, ledger=str(tmp_path / "budget.db"))
    clf = PrivateEverlastingClassifier(
        DecisionTreeClassifier(max_depth=1),
        n_teachers=20,
        epsilon=2.0,
        classes=(0, 1),
        accountant=accountant,
    ).fit(X, (X[:, 0] >= THRESHOLD).astype(int))
    path = tmp_path / "predictor.pkl"
    path.write_bytes(pickle.dumps(clf))
    script = (
        "import pickle, sys, numpy as np\n"
        "clf = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "try:\n"
        "    clf.predict(np.full((5, 1), 0.9)); print('answered')\n"
        "except Exception as error:\n"
        "    print(type(error).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.stdout.strip() == "ForkedStateError", done.stderr
    assert accountant.queries_answered == 0
    assert clf.predict(np.full((5, 1), 0.9)).shape == (5,)


# -- bad input ----------------------------------------------------------------------------------
def test_paper_mode_needs_the_data(threshold_data):
    x, y = threshold_data
    clf = GenericBBLClassifier(
        target_error=0.05, failure_probability=0.05, random_state=0, classes=(0, 1)
    )
    with pytest.raises(InsufficientSampleError, match="needs at least") as info:
        clf.fit(x, y)
    plan = genericbbl_plan(1.0, 1e-6, 0.05, 0.05, 1)
    assert info.value.required_samples == plan["required_samples"]
    assert info.value.n_samples == 8000
    assert isinstance(info.value, ValueError)
    assert not hasattr(clf, "classes_")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(epsilon=1.5), PrivacyParameterError, "epsilon must be <= 1"),
        (dict(target_error=0.1), PrivacyParameterError, "target_error must be < 1/16"),
        (dict(failure_probability=0.07), PrivacyParameterError, "failure_probability"),
        (dict(delta=0.1), PrivacyParameterError, "delta"),
        (dict(overrides={"m": 2.0}), PrivacyParameterError, "only with constants='simulation'"),
        (dict(overrides={"n_teachers": 100}), PrivacyParameterError, "gap condition"),
        (dict(overrides={"bogus": 1}), InvalidParameterError, "unknown overrides"),
        (dict(overrides={"top_budget": 0}), InvalidParameterError, "'top_budget' parameter"),
        (
            dict(constants="fast"),
            InvalidParameterError,
            "'constants' parameter of GenericBBLClassifier",
        ),
        (dict(hypotheses="intervals"), InvalidParameterError, "'hypotheses'"),
        (dict(hypotheses=ThresholdClass("sideways")), InvalidParameterError, "direction"),
        (dict(vc_dim=0), InvalidParameterError, "'vc_dim' parameter"),
        (dict(log_base=1.0), InvalidParameterError, "'log_base' parameter"),
        (dict(epsilon=float("nan")), InvalidParameterError, "'epsilon' parameter"),
        (dict(accountant="ledger"), InvalidParameterError, "'accountant' parameter"),
        (
            dict(constants="simulation", accountant=PrivacyAccountant(1.0, ledger=":memory:")),
            InvalidParameterError,
            "simulation",
        ),
    ],
)
def test_paper_mode_parameter_errors(kwargs, error, match, threshold_data):
    params = dict(target_error=0.05, failure_probability=0.05, classes=(0, 1))
    params.update(kwargs)
    with pytest.raises(error, match=match):
        GenericBBLClassifier(**params).fit(*threshold_data)


def test_simulation_phase_data_error(threshold_data):
    with pytest.raises(PhaseDataError, match="Claim D.6"):
        _simulated(overrides={"phase_length": 7000}).fit(*threshold_data)


@pytest.mark.parametrize(
    "X_change, y_change, error, match",
    [
        (
            None,
            lambda y: np.where(np.arange(y.size) % 3 == 0, 2, y),
            ValueError,
            "two labels|outside",
        ),
        (lambda x: np.where(np.arange(x.size) == 5, np.nan, x), None, ValueError, "NaN"),
        (lambda x: np.c_[x, x], None, ValueError, "one feature|features"),
    ],
)
def test_bad_data_leaves_estimator_unchanged(threshold_data, X_change, y_change, error, match):
    x, y = threshold_data
    clf = _fit_quietly(_simulated(), x, y)
    clf.predict(x[:10])
    before = (clf.phase_, clf.queries_in_phase_, clf._state["teachers"].copy(), clf.n_features_in_)
    bad_x = x if X_change is None else X_change(x)
    bad_y = y if y_change is None else y_change(y)
    with pytest.raises(error, match=match):
        _fit_quietly(clf, bad_x, bad_y)
    after = (clf.phase_, clf.queries_in_phase_, clf._state["teachers"], clf.n_features_in_)
    assert before[:2] == after[:2] and np.array_equal(before[2], after[2]) and before[3] == after[3]


def test_query_errors(threshold_data):
    with pytest.raises(NotFittedError):
        _simulated().predict([0.5])
    clf = _fit_quietly(_simulated(), *threshold_data)
    with pytest.raises(ValueError, match="NaN"):
        clf.predict([0.2, np.nan])
    assert clf.queries_in_phase_ == 0
    with pytest.raises(TypeError, match="sample_weight"):
        _simulated().fit(*threshold_data, sample_weight=np.ones(8000))


def test_practical_errors():
    rng = np.random.default_rng(14)
    X = rng.random((100, 1))
    y = (X[:, 0] > 0.5).astype(int)
    with pytest.raises(ValueError, match="n_teachers=200 is larger"):
        _practical(200).fit(X, y)
    with pytest.raises(InvalidParameterError, match="'vote_release' parameter"):
        _practical(10, vote_release="laplace").fit(X, y)
    with pytest.raises(InvalidParameterError, match="phase_length=5 must be at least"):
        _practical(10, phase_length=5).fit(X, y)
    with pytest.raises(InvalidParameterError, match="'n_teachers' parameter"):
        _practical(0).fit(X, y)
    with pytest.raises(ValueError, match="two labels"):
        _practical(10, classes=[0, 1, 2]).fit(X, np.arange(100) % 3)
    with pytest.raises(TypeError, match="sample_weight"):
        _practical(10).fit(X, y, sample_weight=np.ones(100))
    with pytest.raises(InvalidParameterError, match="'estimator' parameter"):
        PrivateEverlastingClassifier("tree").fit(X, y)
    with pytest.raises(ValueError, match="Only binary classification"):
        _practical(10, classes=None).fit(X, np.arange(100) % 3)
    with pytest.raises(NotFittedError):
        _practical(10).predict(X)
    with pytest.warns(UserWarning, match="fewer than 2 rows"):
        _practical(60).fit(X, y)


def test_dataframe_queries_cross_a_phase_boundary():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(15)
    frame = pd.DataFrame({"x": rng.random(1000), "noise": rng.random(1000)})
    y = (frame["x"] >= THRESHOLD).astype(int)
    # The teacher reads its column by name, so only a DataFrame reaches it. It is called on
    # every block of query rows: one column as a Series (``df["x"]``) costs pandas a tenth of
    # a millisecond where a one-column frame (``df[["x"]]``) cost several, about 40% of this
    # test's time; the values, and so every vote and answer, are the same.
    teacher = make_pipeline(
        FunctionTransformer(lambda df: df["x"].to_numpy()[:, None]), MidpointThreshold()
    )
    # epsilon = 50 keeps the noise (sigma = 5 votes) small enough for 100 teachers
    clf = PrivateEverlastingClassifier(
        teacher, epsilon=50.0, n_teachers=100, phase_growth=1.0, random_state=0, classes=(0, 1)
    )
    clf.fit(frame, y)
    assert list(clf.feature_names_in_) == ["x", "noise"]
    queries = pd.DataFrame({"x": rng.random(1500), "noise": rng.random(1500)})
    answers = clf.predict(queries)
    assert clf.phase_ == 2
    assert np.mean(answers != (queries["x"] >= THRESHOLD)) <= 0.05


def test_a_phase_may_mix_dataframe_and_array_queries():
    """Regression: a phase fed both DataFrame and NumPy queries trains the next phase."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(16)
    frame = pd.DataFrame({"x": rng.random(40)})
    y = (frame["x"] >= THRESHOLD).astype(int)
    clf = PrivateEverlastingClassifier(
        DecisionTreeClassifier(max_depth=1),
        epsilon=50.0,
        n_teachers=4,
        phase_growth=1.0,
        random_state=0,
        classes=(0, 1),
    ).fit(frame, y)
    clf.predict(frame.iloc[:38])
    clf.query(frame.iloc[0])  # a Series keeps its column name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the teachers saw feature names
        clf.predict(frame.to_numpy()[:1])  # the 40th query ends phase 1, as a NumPy row
    assert clf.phase_ == 2 and clf.queries_answered_ == 40
    answers = clf.predict(frame.iloc[:5])
    assert answers.shape == (5,) and set(answers) <= {0, 1}


# -- nothing raises beside the answer: queries are checked before the charge ---------------------
class _AnythingTeacher(ClassifierMixin, BaseEstimator):
    """A teacher that fits and answers on any rows (strings included): votes ``classes_[0]``."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return np.zeros(X.shape[0], dtype=int)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _domain_predictor(hypothesis_class, accountant=None):
    x = np.repeat(np.arange(20, dtype=float), 20).reshape(-1, 1)
    clf = PrivateEverlastingClassifier(
        DecisionTreeClassifier(max_depth=1),
        epsilon=50.0,
        n_teachers=20,
        phase_length=100,
        phase_growth=1.0,
        hypotheses=hypothesis_class,
        classes=(0, 1),
        random_state=0,
        accountant=accountant,
    )
    return clf.fit(x, (x[:, 0] >= 5).astype(int))


def test_a_query_outside_the_class_domain_is_refused_before_the_charge():
    """Regression: it was answered (and charged), and the call that crossed the phase
    boundary then raised, every time, for whoever made it."""
    accountant = PrivacyAccountant(delta=0.5, ledger=":memory:")
    grid = np.arange(20)
    matrix = FiniteHypothesisClass(predictions=(grid[None, :] >= grid[:, None]).astype(int))
    clf = _domain_predictor(matrix, accountant)
    draw = clf._query_stream.rng.bit_generator.state
    for outside in ([[25.0]], [[2.5]], [[-1.0]]):
        with pytest.raises(ValueError, match=r"integer domain indices in \[0, 20\)"):
            clf.predict(np.array(outside))
    assert accountant.queries_answered == 0 and clf.queries_in_phase_ == 0
    assert clf._query_stream.rng.bit_generator.state == draw
    queries = np.random.default_rng(43).integers(0, 20, (150, 1)).astype(float)
    assert clf.predict(queries).shape == (150,) and clf.phase_ == 2  # across the boundary
    generic = _fit_quietly(
        _simulated(
            hypotheses=matrix,
            overrides={"n_teachers": 10, "teacher_size": 20, "phase_length": 800},
        ),
        np.repeat(grid, 400),
        np.repeat(grid >= 5, 400).astype(int),
    )
    with pytest.raises(ValueError, match="integer domain indices"):
        generic.predict([3, 25])
    assert generic.queries_in_phase_ == 0 and generic.predict([3, 7]).tolist() == [0, 1]


def test_a_query_without_a_binary_label_is_answered_with_the_fallback_label():
    """Regression: a callable's label outside {0, 1} raised after the charge (GenericBBL:
    in the answer; the practical predictor: when the pool was relabelled)."""
    grid = np.arange(20)

    def odd(X):  # 1[x >= 5], but 2 (not a label) at x = 19 and an error on x = 18
        x = X[:, 0]
        if np.any(x == 18):
            raise ValueError("no label at 18")
        return np.where(x == 19, 2, (x >= 5).astype(int))

    # odd() comes first: ERM takes the lowest index among the consistent hypotheses
    hypotheses = [odd] + [lambda X, t=t: (X[:, 0] >= t).astype(int) for t in range(20)]
    callables = FiniteHypothesisClass(hypotheses=hypotheses)
    x = np.repeat(grid[:18], 400).reshape(-1, 1).astype(float)
    generic = _fit_quietly(
        _simulated(
            hypotheses=callables,
            overrides={"n_teachers": 10, "teacher_size": 20, "phase_length": 800},
        ),
        x,
        (x[:, 0] >= 5).astype(int),
    )
    assert generic._state["teachers"][0] == 10  # every teacher chose odd()
    votes = generic._vote_fraction(np.array([[17.0], [18.0], [19.0]]))  # not private
    assert votes.tolist() == [1.0, 0.0, 0.0]  # no label at 18 and 19: the fallback 0
    assert generic.predict([[19.0], [18.0], [17.0]]).tolist() == [0, 0, 1]
    assert generic.queries_in_phase_ == 3
    assert generic.predict(np.full((800, 1), 19.0)).shape == (800,) and generic.phase_ == 2
    accountant = PrivacyAccountant(delta=0.5, ledger=":memory:")
    clf = _domain_predictor(callables, accountant)
    clf.predict(np.array([[19.0], [18.0]]))
    assert clf.predict(np.full((98, 1), 3.0)).shape == (98,) and clf.phase_ == 2
    assert accountant.queries_answered == 100


def test_a_phase_pool_takes_every_query_in_the_training_form():
    """Regression: a query whose form did not fit the training set's (an array with a string
    for a DataFrame, a dense object array for a sparse matrix) was answered, and the call
    that crossed the phase boundary raised when the pool was assembled."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(44)
    frame = pd.DataFrame({"x": rng.random(40)})
    y = (frame["x"] >= THRESHOLD).astype(int)

    def fitted(X):
        accountant = PrivacyAccountant(delta=0.5, ledger=":memory:")
        clf = PrivateEverlastingClassifier(
            _AnythingTeacher(),
            epsilon=50.0,
            n_teachers=4,
            phase_growth=1.0,
            random_state=0,
            classes=(0, 1),
            accountant=accountant,
        )
        return clf.fit(X, y), accountant

    text = np.array([["abc"]], dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # feature names absent or unexpected
        clf, accountant = fitted(frame)  # a DataFrame; an array query with a string
        clf.predict(text)
        assert clf.predict(frame.iloc[:39]).shape == (39,) and clf.phase_ == 2
        clf, accountant = fitted(frame.to_numpy())  # an array; a sparse query, then strings
        clf.predict(sparse.csr_matrix(frame.to_numpy()[:1]))
        assert clf.predict(np.repeat(text, 39, axis=0)).shape == (39,) and clf.phase_ == 2
        clf, accountant = fitted(sparse.csr_matrix(frame.to_numpy()))  # sparse; dense strings
        with pytest.raises(ValueError, match="fitted on a sparse matrix.*must be numeric"):
            clf.predict(text)
        assert accountant.queries_answered == 0
        clf.predict(frame.to_numpy()[:1])  # dense numeric rows are taken
        assert clf.predict(sparse.csr_matrix(frame.to_numpy()[:39])).shape == (39,)
        assert clf.phase_ == 2 and accountant.queries_answered == 40


# -- GenericBBL: the privacy-amplifying sub-samples are secret --------------------------------
def _sub_samples(clf):
    state = clf._state
    return state["kept_slots"].tolist(), state["labelled_points"].tolist()


def test_genericbbl_sub_samples_are_not_reproduced_by_a_generator(threshold_data):
    """Regression: S_1, Shat_1 and the kept query slots came from the fit stream, which a
    Generator passed as random_state reproduces."""
    x, y = threshold_data
    fits = [_fit_quietly(_simulated(random_state=np.random.default_rng(7)), x, y) for _ in range(2)]
    assert _sub_samples(fits[0]) != _sub_samples(fits[1])
    assert not np.array_equal(fits[0]._state["teachers"], fits[1]._state["teachers"])
    seeded = [_fit_quietly(_simulated(random_state=8), x, y) for _ in range(2)]
    assert _sub_samples(seeded[0]) == _sub_samples(seeded[1])  # an int seed replays (tests)


def test_genericbbl_copies_would_draw_different_sub_samples(threshold_data):
    """Regression: an unpickled copy replayed the original's future sub-samples (the fit
    stream is copied with it). Copies refuse to answer; had they answered, they would draw
    their own (the release stream of a copy is fresh)."""
    x, y = threshold_data
    clf = _fit_quietly(_simulated(), x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        twins = [clf, copy.deepcopy(clf), pickle.loads(pickle.dumps(clf))]
    queries = np.random.default_rng(9).random(16_000).reshape(-1, 1)
    drawn = []
    for twin in twins:  # the stream engine itself, past the owner check
        twin._answer_stream(twin._prepare_queries(queries), twin._query_stream.rng)
        assert twin.phase_ == 2
        drawn.append(_sub_samples(twin))
    assert drawn[0] != drawn[1] and drawn[0] != drawn[2] and drawn[1] != drawn[2]


# -- the release path: an accountant charged per answered row ------------------------------------
def test_practical_charges_the_accountant_per_row():
    rng = np.random.default_rng(17)
    X = rng.random((400, 1))
    y = (X[:, 0] >= THRESHOLD).astype(int)
    accountant = PrivacyAccountant(delta=0.5, ledger=":memory:")
    clf = _practical(20, epsilon=2.0, accountant=accountant).fit(X, y)
    assert accountant.queries_answered == 0  # fit releases nothing
    details = clf.privacy_guarantee_.details
    rho_row = zcdp_rho(2.0, 1e-6) / 400
    assert details["per_query_rho"] == pytest.approx(rho_row)
    assert details["per_query_delta"] == pytest.approx(1e-6 / 400)
    assert details["per_query_epsilon"] == pytest.approx(eps_of_rho(rho_row, 1e-6 / 400))
    clf.predict(rng.random((450, 1)))  # crosses into phase 2
    assert accountant.queries_answered == 450 and clf.queries_answered_ == 450
    epsilon_spent, delta_spent = accountant.spent()
    assert epsilon_spent == pytest.approx(450 * details["per_query_epsilon"])
    assert delta_spent == pytest.approx(450 * 1e-6 / 400)


def test_refused_charge_changes_nothing():
    rng = np.random.default_rng(18)
    X = rng.random((400, 1))
    y = (X[:, 0] >= THRESHOLD).astype(int)
    probe = _practical(20, epsilon=2.0).fit(X, y)
    per_row = probe.privacy_guarantee_.details["per_query_epsilon"]
    accountant = PrivacyAccountant(epsilon=11.5 * per_row, delta=0.5, ledger=":memory:")
    clf = _practical(20, epsilon=2.0, accountant=accountant).fit(X, y)
    clf.predict(X[:10])
    state = (clf.phase_, clf.queries_in_phase_, clf.queries_answered_, accountant.spent())
    draw = clf._query_stream.rng.bit_generator.state
    with pytest.raises(BudgetExhaustedError):
        clf.predict(X[:5])
    assert (clf.phase_, clf.queries_in_phase_, clf.queries_answered_, accountant.spent()) == state
    assert clf._query_stream.rng.bit_generator.state == draw
    assert clf.predict(X[:1]).shape == (1,)  # a smaller call still fits


def test_halting_call_counts_only_answered_rows():
    rng = np.random.default_rng(19)
    x = rng.random((20_000, 1))
    y = (x[:, 0] >= THRESHOLD).astype(int)
    accountant = PrivacyAccountant(delta=0.5, ledger=":memory:")
    clf = _practical(
        2000, vote_release="between_thresholds", epsilon=4.0, accountant=accountant
    ).fit(x, y)
    with pytest.raises(PredictorHaltedError) as info:
        clf.predict(np.full((1000, 1), THRESHOLD))
    answered = info.value.predictions.size
    assert answered < 1000 and clf.queries_answered_ == answered
    assert accountant.queries_answered == 1000  # charged before answering: over-counts
    details = clf.privacy_guarantee_.details
    assert accountant.spent()[0] == pytest.approx(1000 * details["per_query_epsilon"])


def test_genericbbl_paper_mode_charges_bt_instance_guarantee_per_row():
    overrides = {
        "n_teachers": 3000,
        "teacher_size": 1,
        "top_budget": 1,
        "threshold_gap": 0.5,
        "phase_length": 500_000,
    }
    params = dict(
        epsilon=1.0,
        delta=0.05,
        target_error=0.05,
        failure_probability=0.05,
        overrides=overrides,
    )
    with pytest.raises(InsufficientSampleError) as too_small:
        GenericBBLClassifier(classes=(0, 1), random_state=0, **params).fit(
            *_task(10, rng := np.random.default_rng(20))
        )
    x, y = _task(too_small.value.required_samples, rng)
    accountant = PrivacyAccountant(delta=0.5, ledger=":memory:")
    clf = GenericBBLClassifier(classes=(0, 1), random_state=0, accountant=accountant, **params)
    clf.fit(x, y)
    guarantee = clf.privacy_guarantee_
    assert (guarantee.epsilon, guarantee.delta) == (1.0, 0.05)
    assert guarantee.protects == "each training row and each query"
    assert "Theorem 5.1" in guarantee.theorem and "spec" not in str(guarantee)
    first = clf.phase_schedule_[0]
    assert guarantee.details["per_query_epsilon"] == first["bt_epsilon"]
    clf.predict(np.full(20, 0.9))  # far from the threshold: no TOP
    assert accountant.queries_answered == 20
    assert accountant.spent() == pytest.approx((20 * first["bt_epsilon"], 20 * first["bt_delta"]))


# -- renamed parameters (0.4) ---------------------------------------------------------------------
def test_generic_bbl_renamed_parameters_warn_and_answer_the_same(threshold_data):
    """``hypothesis_class``, ``alpha``, ``beta`` and ``mode`` became ``hypotheses``,
    ``target_error``, ``failure_probability`` and ``constants``: same predictor, same answers."""
    x, y = threshold_data
    queries = np.random.default_rng(5).random(300)
    new_names = dict(
        hypotheses="thresholds", target_error=0.05, failure_probability=0.05, constants="simulation"
    )
    old_names = dict(hypothesis_class="thresholds", alpha=0.05, beta=0.05, mode="simulation")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = _fit_quietly(GenericBBLClassifier(random_state=0, classes=(0, 1), **new_names), x, y)
        new_answers = new.predict(queries)
    old = GenericBBLClassifier(random_state=0, classes=(0, 1), **old_names)
    with pytest.warns(FutureWarning) as record:
        _fit_quietly(old, x, y)
    renamed = {str(w.message).split("`")[1]: str(w.message).split("`")[3] for w in record}
    assert renamed == {
        "hypothesis_class": "hypotheses",
        "alpha": "target_error",
        "beta": "failure_probability",
        "mode": "constants",
    }
    assert {w.filename for w in record} == {__file__}
    assert old.privacy_guarantee_ == new.privacy_guarantee_
    np.testing.assert_array_equal(old.predict(queries), new_answers)
    with pytest.raises(InvalidParameterError, match="'constants' and .* 'mode'"):
        GenericBBLClassifier(constants="simulation", mode="paper").fit(x, y)


def test_genericbbl_plan_renamed_keywords():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = genericbbl_plan(1.0, 1e-6, target_error=0.05, failure_probability=0.04, vc_dim=1)
    with pytest.warns(FutureWarning) as record:
        assert genericbbl_plan(1.0, 1e-6, alpha=0.05, beta=0.04, vc_dim=1) == new
    assert [str(w.message)[:40] for w in record] == [
        "`alpha` was renamed `target_error` in 0.",
        "`beta` was renamed `failure_probability`",
    ]
    assert new["guarantee"]["error"] == 6 * 0.05 and new["guarantee"]["failure"] == 4 * 0.04
    with pytest.raises(TypeError, match="both 'target_error' and .* 'alpha'"):
        genericbbl_plan(1.0, 1e-6, 0.05, 0.05, 1, alpha=0.05)


@pytest.mark.parametrize(
    "old, new",
    [
        ({"hypothesis_class": "thresholds"}, {"hypotheses": "thresholds"}),
        (
            {"aggregator": "between_thresholds", "epsilon": 4.0},
            {"vote_release": "between_thresholds", "epsilon": 4.0},
        ),
    ],
    ids=["hypothesis_class", "aggregator"],
)
def test_everlasting_renamed_parameters_warn_and_answer_the_same(old, new):
    rng = np.random.default_rng(12)
    x = rng.random((20_000, 1))
    y = (x[:, 0] >= THRESHOLD).astype(int)
    queries = np.random.default_rng(13).random((200, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        fitted = _practical(2000, **new).fit(x, y)
        new_answers = fitted.predict(queries)
    renamed = _practical(2000, **old)
    (old_name,) = set(old) - {"epsilon"}
    (new_name,) = set(new) - {"epsilon"}
    with pytest.warns(FutureWarning, match=f"`{old_name}` was renamed `{new_name}` in 0.4"):
        renamed.fit(x, y)
    assert renamed.privacy_guarantee_ == fitted.privacy_guarantee_
    assert renamed.phase_schedule_ == fitted.phase_schedule_
    np.testing.assert_array_equal(renamed.predict(queries), new_answers)
    both_value = {"hypotheses": ThresholdClass(), "vote_release": "between_thresholds"}[new_name]
    both = _practical(2000, **old, **{new_name: both_value})
    with pytest.raises(InvalidParameterError, match=f"'{new_name}' and .* '{old_name}'"):
        both.fit(x, y)
