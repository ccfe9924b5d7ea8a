"""Random streams and validators shared by every private predictor."""

from numbers import Integral, Real

import numpy as np
import pytest

from skprivpred import InvalidParameterError
from skprivpred._base import spawn_streams
from skprivpred.utils import Interval, StrOptions, check_param, validate_parameter_constraints


@pytest.mark.parametrize(
    "random_state",
    [0, 123, np.random.SeedSequence(5), np.random.default_rng(1), np.random.RandomState(2)],
    ids=["int0", "int123", "seedseq", "generator", "randomstate"],
)
def test_fit_and_query_streams_are_distinct(random_state):
    fit_rng, query_rng = spawn_streams(random_state)
    assert not np.array_equal(fit_rng.random(8), query_rng.random(8))


def test_integer_seed_is_reproducible_and_none_is_not():
    a = [g.random(4) for g in spawn_streams(7)]
    b = [g.random(4) for g in spawn_streams(7)]
    np.testing.assert_array_equal(a, b)
    c = [g.random(4) for g in spawn_streams(None)]
    d = [g.random(4) for g in spawn_streams(None)]
    assert not np.array_equal(c, d)


@pytest.mark.parametrize("bad, error", [(-1, ValueError), ("seed", TypeError), (1.5, TypeError)])
def test_bad_random_state(bad, error):
    with pytest.raises(error, match="random_state"):
        spawn_streams(bad)


def test_validators_name_parameter_and_value():
    positive = Interval(Real, 0, None, closed="neither")
    with pytest.raises(ValueError, match=r"'epsilon' parameter must be a float in the range"):
        check_param(-2.0, "epsilon", positive)
    with pytest.raises(TypeError, match="epsilon.*Got True"):
        check_param(True, "epsilon", positive)
    with pytest.raises(InvalidParameterError, match="n_teachers"):
        check_param(3.0, "n_teachers", Interval(Integral, 1, None, closed="left"))
    assert check_param(None, "n_teachers", None) is None


@pytest.mark.parametrize(
    "value, constraints",
    [
        (float("inf"), [Interval(Real, 0, None, closed="neither")]),
        (float("nan"), [Interval(Real, 0, 1, closed="both")]),
        (0, [Interval(Real, 0, 1, closed="neither")]),
        (1, [Interval(Real, 0, 1, closed="left")]),
        (True, [Interval(Integral, 0, None, closed="left")]),
        ("lapalce", [StrOptions({"laplace", "gaussian"})]),
        (None, [Interval(Real, 0, None, closed="neither")]),
    ],
)
def test_constraints_refuse_what_they_exclude(value, constraints):
    with pytest.raises(InvalidParameterError, match="The 'p' parameter of Est must be"):
        validate_parameter_constraints({"p": constraints}, {"p": value}, "Est")


def test_constraints_accept_what_they_include():
    constraints = {
        "a": [Interval(Real, 0, 1, closed="both")],
        "b": [StrOptions({"x", "y"}), None],
        "c": [Interval(Integral, 1, None, closed="left")],
    }
    validate_parameter_constraints(constraints, {"a": 1, "b": None, "c": 3}, "Est")
    validate_parameter_constraints(constraints, {"a": 0.0, "b": "y", "c": 10**12}, "Est")


def test_show_versions_prints_the_main_packages(capsys):
    import skprivpred

    skprivpred.show_versions()
    out = capsys.readouterr().out
    assert f"skprivpred: {skprivpred.__version__}" in out and "scikit-learn:" in out
