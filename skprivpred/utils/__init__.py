"""Utilities for users of skprivpred: constraint objects and scikit-learn's checks.

:func:`expected_failed_checks` returns, for any skprivpred estimator, the
scikit-learn estimator checks that are expected to fail and why, for use with
``sklearn.utils.estimator_checks.check_estimator``.
"""

from ._estimator_checks import expected_failed_checks
from ._param_validation import (
    Bounds,
    Data,
    HasMethods,
    Interval,
    Options,
    RealNotInt,
    StrOptions,
    UserCodeParam,
    check_param,
    user_code_parameters,
    validate_parameter_constraints,
)

__all__ = [
    "Bounds",
    "Data",
    "HasMethods",
    "Interval",
    "Options",
    "RealNotInt",
    "StrOptions",
    "UserCodeParam",
    "check_param",
    "expected_failed_checks",
    "user_code_parameters",
    "validate_parameter_constraints",
]
