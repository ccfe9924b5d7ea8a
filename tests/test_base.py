"""Random streams and validators shared by every private predictor."""

import numpy as np
import pytest

from skprivpred._base import check_epsilon, check_positive_int, spawn_streams


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
    with pytest.raises(ValueError, match=r"epsilon must be a finite number > 0, got -2.0"):
        check_epsilon(-2.0)
    with pytest.raises(TypeError, match="epsilon"):
        check_epsilon(True)
    with pytest.raises(TypeError, match="n_teachers"):
        check_positive_int(3.0, "n_teachers")
    assert check_positive_int(None, "n_teachers", allow_none=True) is None


def test_show_versions_prints_the_main_packages(capsys):
    import skprivpred

    skprivpred.show_versions()
    out = capsys.readouterr().out
    assert f"skprivpred: {skprivpred.__version__}" in out and "scikit-learn:" in out
