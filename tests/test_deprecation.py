"""The shared helper for renamed parameters (skprivpred/utils/_deprecation.py)."""

import inspect
import warnings
from numbers import Real

import pytest
from sklearn.base import BaseEstimator, clone

from skprivpred import InvalidParameterError
from skprivpred.utils import Interval, validate_parameter_constraints
from skprivpred.utils._deprecation import (
    DEPRECATED,
    deprecated_constraints,
    renamed_kwargs,
    renamed_message,
    renamed_param,
)

TARGET = [Interval(Real, 0, 1, closed="neither")]


class _Est(BaseEstimator):
    _parameter_constraints = {
        "target_error": TARGET,
        "alpha": deprecated_constraints(TARGET, "target_error"),
    }

    def __init__(self, target_error=0.1, *, alpha=DEPRECATED):
        self.target_error = target_error
        self.alpha = alpha

    def fit(self):
        validate_parameter_constraints(
            self._parameter_constraints, self.get_params(deep=False), type(self).__name__
        )
        self.target_error_ = renamed_param(self, "alpha", "target_error")
        return self


def test_new_name_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _Est(target_error=0.3).fit().target_error_ == 0.3
        assert _Est().fit().target_error_ == 0.1


def test_old_name_warns_and_is_used():
    with pytest.warns(FutureWarning) as record:
        assert _Est(alpha=0.3).fit().target_error_ == 0.3
    (warning,) = record
    assert str(warning.message) == (
        "`alpha` was renamed `target_error` in 0.4 and will be removed in 0.6; "
        "use _Est(target_error=...) instead."
    )
    # The warning points at the caller of the method that read the parameter.
    assert warning.filename == __file__


def test_old_name_given_with_the_new_default_is_not_both():
    with pytest.warns(FutureWarning):
        assert _Est(target_error=0.1, alpha=0.3).fit().target_error_ == 0.3


def test_both_names_set_is_an_error_naming_both():
    with pytest.raises(InvalidParameterError, match="'target_error'.*'alpha'"):
        _Est(target_error=0.2, alpha=0.3).fit()


def test_old_name_keeps_get_params_set_params_and_clone():
    est = _Est(alpha=0.3)
    assert est.get_params() == {"target_error": 0.1, "alpha": 0.3}
    assert clone(est).get_params() == est.get_params()
    assert _Est().set_params(alpha=0.4).alpha == 0.4
    assert repr(_Est()) == "_Est()"
    assert repr(est) == "_Est(alpha=0.3)"


def test_old_name_is_validated_like_the_new_one():
    with pytest.raises(InvalidParameterError, match="'alpha' parameter of _Est") as info:
        _Est(alpha=2.0).fit()
    assert "'deprecated' (not set: use 'target_error')" in str(info.value)
    assert deprecated_constraints(TARGET)[-1].is_satisfied_by(DEPRECATED)
    assert not deprecated_constraints(TARGET)[-1].is_satisfied_by("other")


@renamed_kwargs({"alpha": "target_error", "beta": "failure_probability"})
def _plan(target_error, failure_probability=0.05, *, epsilon=1.0):
    return (target_error, failure_probability, epsilon)


def test_renamed_kwargs_keep_the_new_signature():
    assert list(inspect.signature(_plan).parameters) == [
        "target_error",
        "failure_probability",
        "epsilon",
    ]
    assert _plan.__name__ == "_plan"


def test_renamed_kwargs_new_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _plan(0.2, 0.1, epsilon=2.0) == (0.2, 0.1, 2.0)
        assert _plan(target_error=0.2, failure_probability=0.1) == (0.2, 0.1, 1.0)


def test_renamed_kwargs_old_names_warn_and_give_the_same_result():
    with pytest.warns(FutureWarning) as record:
        assert _plan(alpha=0.2, beta=0.1, epsilon=2.0) == _plan(0.2, 0.1, epsilon=2.0)
    assert len(record) == 2
    assert {warning.filename for warning in record} == {__file__}
    assert [str(warning.message) for warning in record] == [
        renamed_message("alpha", "target_error", "_plan"),
        renamed_message("beta", "failure_probability", "_plan"),
    ]


@pytest.mark.parametrize(
    "call",
    [
        lambda: _plan(0.2, alpha=0.3),
        lambda: _plan(target_error=0.2, alpha=0.3),
        lambda: _plan(0.2, 0.1, beta=0.3),
    ],
)
def test_renamed_kwargs_both_names_is_an_error_naming_both(call):
    with pytest.raises(TypeError, match="got both '(target_error|failure_probability)'"):
        call()


def test_renamed_kwargs_refuses_a_wrong_table():
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        renamed_kwargs({"alpha": "nope"})(_plan)
    with pytest.raises(ValueError, match="still has the old parameter 'target_error'"):
        renamed_kwargs({"target_error": "epsilon"})(_plan)
