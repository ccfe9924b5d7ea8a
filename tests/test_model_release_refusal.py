"""A refused fit-time release says it is one (epsilon, delta) release (issue 41, item 4).

SufficientStatisticClassifier(accountant=PrivacyAccountant(epsilon=1.0)) used to fail
with the per-query message "answering 1 more query row at epsilon=1.0, delta=1e-06 per
row ... 0 rows at that cost still fit".
"""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skprivpred import (
    BudgetExhaustedError,
    DPValidatedLogisticRegression,
    ExponentialMechanismClassifier,
    PrivacyAccountant,
    PrivateGridSearchCV,
    SubsampleAggregateClassifier,
    SufficientStatisticClassifier,
)


def _data(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    return X, y


def test_delta_zero_accountant_is_told_to_take_a_delta():
    X, y = _data()
    y = y.copy()
    y[:200] = -1
    accountant = PrivacyAccountant(epsilon=1.0)
    clf = SufficientStatisticClassifier(classes=[0, 1], accountant=accountant)
    # The budget is checked before any row is read (issue 40: before any graph over
    # a dask collection runs), so no count of public rows is warned about first.
    with pytest.raises(BudgetExhaustedError) as info:
        clf.fit(X, y)
    message = str(info.value)
    assert "query row" not in message.replace("not per query row", "")
    assert "SufficientStatisticClassifier.fit is one release of the model" in message
    assert "epsilon=1.0, delta=1e-06" in message
    assert "the accountant has delta=0" in message
    assert "delta of at least the estimator's delta=1e-06" in message
    assert accountant.queries_answered == 0  # nothing charged
    assert info.value.budget == accountant.name


def _sufficient(acc):
    return SufficientStatisticClassifier(classes=[0, 1], accountant=acc)


def _validated(acc):
    return DPValidatedLogisticRegression(classes=[0, 1], accountant=acc, feature_norm_bound=3.0)


def _exponential(acc):
    return ExponentialMechanismClassifier(classes=[0, 1], accountant=acc)


def _search(acc):
    return PrivateGridSearchCV(
        SubsampleAggregateClassifier(LogisticRegression(), classes=[0, 1]),
        {"n_teachers": [5, 10]},
        accountant=acc,
    )


@pytest.mark.parametrize("make", [_sufficient, _validated, _exponential, _search])
def test_every_model_release_is_refused_as_a_release(make):
    X, y = _data()
    if make is _sufficient:
        y = y.copy()
        y[:200] = -1
    if make is _exponential:
        X = (X > 0).astype(int)  # conjunctions of binary features
    accountant = PrivacyAccountant(epsilon=1e-3, delta=1e-3)  # too small for any fit
    with pytest.raises(BudgetExhaustedError) as info:
        make(accountant).fit(X, y)
    message = str(info.value)
    assert ".fit is one release of the model at epsilon=" in message
    assert "answering 1 more query row" not in message
    assert accountant.queries_answered == 0


def test_second_fit_on_a_spent_accountant_says_fits_add_up():
    X, y = _data()
    y = y.copy()
    y[:200] = -1
    accountant = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    _sufficient(accountant).fit(X, y)
    with pytest.raises(BudgetExhaustedError, match="size the accountant for all the fits"):
        _sufficient(accountant).fit(X, y)
