"""The scikit-learn estimator checks that skprivpred estimators are expected to fail, and why.

One table for the test suite (``tests/test_common.py``) and for users::

    from sklearn.utils.estimator_checks import check_estimator
    from skprivpred import SubsampleAggregateClassifier
    from skprivpred.utils import expected_failed_checks

    est = SubsampleAggregateClassifier()
    check_estimator(est, expected_failed_checks=expected_failed_checks(est))
"""

from __future__ import annotations

from typing import Any

__all__ = ["expected_failed_checks"]

# Checks every randomised private predictor fails for the same reason.
_RANDOMISED_ANSWERS = {
    "check_estimators_pickle": (
        "a pickled copy gets a fresh query stream from OS entropy, so that two copies never "
        "replay the same noise; its answers are new draws, not the original's answers"
    ),
    "check_estimators_pickle(readonly_memmap=True)": (
        "a pickled copy gets a fresh query stream (see check_estimators_pickle)"
    ),
}

# Class name -> {check name: reason}, on top of _RANDOMISED_ANSWERS.
_PER_ESTIMATOR: dict[str, dict[str, str]] = {}


def expected_failed_checks(estimator: Any) -> dict[str, str]:
    """The scikit-learn checks that ``estimator`` is expected to fail, with the reason for each.

    Pass the result to
    ``sklearn.utils.estimator_checks.check_estimator(estimator,
    expected_failed_checks=...)`` or ``parametrize_with_checks``: every other
    check passes for skprivpred estimators with their default parameters.

    Parameters
    ----------
    estimator : estimator instance
        A skprivpred estimator (fitted or not).

    Returns
    -------
    dict
        Check name to the reason it is expected to fail.
    """
    expected = dict(_RANDOMISED_ANSWERS)
    expected.update(_PER_ESTIMATOR.get(type(estimator).__name__, {}))
    return expected
