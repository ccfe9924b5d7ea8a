"""scikit-learn's own estimator checks, with the expected failures and their reasons."""

import warnings

from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from skprivpred import SubsampleAggregateClassifier

# Only checks that randomised answers make inapplicable are expected to fail.
RANDOMISED_ANSWERS = {
    "check_estimators_pickle": (
        "a pickled copy gets a fresh query stream from OS entropy, so that two copies never "
        "replay the same noise; its answers are new draws, not the original's answers"
    ),
    "check_estimators_pickle(readonly_memmap=True)": (
        "a pickled copy gets a fresh query stream (see check_estimators_pickle)"
    ),
}

# Small n_teachers: the checks train on data sets of a few dozen rows.
ESTIMATORS = [
    SubsampleAggregateClassifier(n_teachers=3, random_state=0),
    SubsampleAggregateClassifier(DecisionTreeClassifier(max_depth=3), n_teachers=2, random_state=0),
]


def _expected_failed_checks(estimator):
    return RANDOMISED_ANSWERS


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        # Most checks omit `classes`: the PrivacyWarning is expected there.
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)
