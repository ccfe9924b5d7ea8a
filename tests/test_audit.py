"""The black-box audit: interval maths, discrete and binned outputs, and that it can fail."""

import warnings

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.tree import DecisionTreeClassifier

from skprivpred import (
    InvalidParameterError,
    PrivacyAccountant,
    PrivacyGuarantee,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
)
from skprivpred.audit import AuditReport, audit_epsilon, clopper_pearson, flip_teacher_neighbour


@pytest.mark.parametrize("k, n", [(0, 50), (7, 50), (50, 50), (312, 1000)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n):
    lower, upper = clopper_pearson(k, n, confidence_level=0.99)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.99, method="exact")
    assert float(lower) == pytest.approx(ci.low, abs=1e-12)
    assert float(upper) == pytest.approx(ci.high, abs=1e-12)


def test_clopper_pearson_alpha_was_replaced_by_confidence_level():
    k, n = np.array([0, 7, 50]), 50
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = clopper_pearson(k, n, confidence_level=0.99)
        default = clopper_pearson(k, n)  # 0.95, as scipy's proportion_ci
    np.testing.assert_allclose(default, clopper_pearson(k, n, confidence_level=0.95))
    for call in (lambda: clopper_pearson(k, n, 0.01), lambda: clopper_pearson(k, n, alpha=0.01)):
        with pytest.warns(
            FutureWarning, match="use clopper_pearson\\(k, n, confidence_level=1 - a"
        ):
            old = call()
        np.testing.assert_allclose(old, new, rtol=1e-12)  # the old meaning: significance
    with pytest.raises(TypeError, match="both 'confidence_level' and .* 'alpha'"):
        clopper_pearson(k, n, 0.01, confidence_level=0.9)
    with pytest.raises(InvalidParameterError, match="'confidence_level'"):
        clopper_pearson(k, n, confidence_level=1.0)


class _NoisyMean(RegressorMixin, BaseEstimator):
    """Test double: the mean of labels in [0, 1] plus Laplace noise (sensitivity 1/n)."""

    def __init__(self, epsilon=1.0, scale_factor=1.0, random_state=None, accountant=None):
        self.epsilon = epsilon
        self.scale_factor = scale_factor  # < 1 breaks the guarantee on purpose
        self.random_state = random_state
        self.accountant = accountant

    def fit(self, X, y):
        self.mean_ = float(np.clip(y, 0, 1).mean())  # a test double may expose it
        self.scale_ = self.scale_factor / (len(y) * self.epsilon)
        self.rng_ = np.random.default_rng(self.random_state)
        self.privacy_guarantee_ = PrivacyGuarantee(
            self.epsilon, 0.0, unit="each answered query row", theorem="the Laplace mechanism"
        )
        return self

    def predict(self, X):
        return self.mean_ + self.rng_.laplace(scale=self.scale_, size=len(X))


def _mean_neighbours():
    y = np.zeros(5)
    y2 = y.copy()
    y2[0] = 1.0
    X = np.zeros((5, 1))
    return X, y, X, y2


def test_binned_audit_passes_laplace_and_flags_too_little_noise():
    X, y, X2, y2 = _mean_neighbours()
    bins = np.linspace(-0.5, 0.7, 13)
    fine = audit_epsilon(
        _NoisyMean(), X, y, X2, y2, X[:1], n_trials=50_000, bins=bins, random_state=0
    )
    assert fine.passed, str(fine)
    broken = audit_epsilon(
        _NoisyMean(scale_factor=0.4),
        X,
        y,
        X2,
        y2,
        X[:1],
        n_trials=50_000,
        bins=bins,
        random_state=0,
    )
    assert not broken.passed, str(broken)
    assert broken.epsilon_lower_bound > 1.5


def test_pilot_bins_are_used_when_bins_is_an_integer():
    X, y, X2, y2 = _mean_neighbours()
    report = audit_epsilon(
        _NoisyMean(), X, y, X2, y2, X[:1], n_trials=20_000, bins=15, random_state=0
    )
    assert report.counts[0].shape == (1, 15)
    assert report.counts[0].sum() == report.counts[1].sum() == 20_000


def test_audit_spends_no_budget_and_reports():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    X2, y2 = X.copy(), y.copy()
    y2[0] = 1 - y2[0]
    acc = PrivacyAccountant(epsilon=1.0)
    est = SubsampleAggregateClassifier(n_teachers=4, classes=[0, 1], accountant=acc)
    report = audit_epsilon(est, X, y, X2, y2, X[:3], n_trials=1000, random_state=0)
    assert isinstance(report, AuditReport) and report.n_queries == 3
    assert acc.queries_answered == 0
    assert "claimed epsilon" in str(report)
    assert report.claimed_epsilon == 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_trials": 5}, "'n_trials' parameter of audit_epsilon"),
        ({"confidence": 1.0}, "'confidence'"),
        ({"claimed_epsilon": -1.0}, "'claimed_epsilon'"),
    ],
)
def test_bad_audit_arguments(kwargs, match):
    X, y, X2, y2 = _mean_neighbours()
    with pytest.raises(InvalidParameterError, match=match):
        audit_epsilon(_NoisyMean(), X, y, X2, y2, X[:1], **kwargs)


def test_a_guarantee_that_is_not_a_privacy_guarantee_needs_claimed_epsilon():
    class _DictGuarantee(_NoisyMean):
        def fit(self, X, y):
            super().fit(X, y)
            self.privacy_guarantee_ = {"epsilon": self.epsilon}
            return self

    X, y, X2, y2 = _mean_neighbours()
    with pytest.raises(ValueError, match="PrivacyGuarantee"):
        audit_epsilon(_DictGuarantee(), X, y, X2, y2, X[:1], n_trials=10)
    report = audit_epsilon(
        _DictGuarantee(), X, y, X2, y2, X[:1], n_trials=10, claimed_epsilon=1.0, bins=4
    )
    assert report.claimed_epsilon == 1.0


def test_flip_teacher_neighbour_uses_the_estimators_teacher_votes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    query = np.array([[2.0, 0.0]])
    for estimator in (
        SubsampleAggregateClassifier(DecisionTreeClassifier(), n_teachers=6, classes=[0, 1]),
        SubsampleAverageClassifier(DecisionTreeClassifier(), n_teachers=6, classes=[0, 1]),
    ):
        X2, y2, info = flip_teacher_neighbour(estimator, X, y, query, random_state=3)
        changed = np.flatnonzero((X2 != X).any(axis=1) | (y2 != y))
        assert changed.tolist() == [info["row"]]
        model = clone(estimator).set_params(random_state=3).fit(X, y)
        votes, parts = model._teacher_votes(query)
        assert info["row"] in parts[info["teacher"]]
        assert votes.shape == (1, 6) and sorted(np.concatenate(parts)) == list(range(60))
    regressor = SubsampleAverageRegressor(n_teachers=3, y_bounds=(0, 1), random_state=0)
    with pytest.raises(TypeError, match="no voting teachers"):
        regressor.fit(X, y.astype(float))._teacher_votes(query)
