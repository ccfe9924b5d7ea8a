"""The timing audit's own pieces (``tests/audits/timing_probe.py``), in seconds, no service.

The audit itself starts the real service and takes minutes (run it by hand, see its
docstring); here its classifier and its command line are checked, so that a change that
breaks them fails the suite.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import timing_probe  # noqa: E402


def test_the_threshold_tells_apart_response_times_that_differ():
    rng = np.random.default_rng(0)
    is_d = rng.permutation(np.arange(400) < 200)
    times = np.where(is_d, 0.030, 0.040) + rng.uniform(0, 0.005, size=400)
    figures = timing_probe.threshold_accuracy(times, is_d)
    assert figures["accuracy"] == 1.0 and figures["held_out"] == 200
    low, high = figures["interval_95"]
    assert low > 0.95 and high == 1.0
    assert 30.0 < figures["threshold_ms"] < 40.0


def test_the_threshold_finds_nothing_in_times_of_one_law():
    # The same law on both sides: the held-out accuracy is a binomial(200, 1/2) proportion;
    # with this seed the 95 % Clopper-Pearson interval covers 1/2, as it does 95 % of the time.
    rng = np.random.default_rng(1)
    is_d = rng.permutation(np.arange(400) < 200)
    figures = timing_probe.threshold_accuracy(rng.uniform(0, 0.005, size=400), is_d)
    low, high = figures["interval_95"]
    assert low <= 0.5 <= high


def test_the_audit_keeps_its_command_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        timing_probe.main(["--help"])
    assert exit_.value.code == 0
    usage = capsys.readouterr().out
    for option in ("--only", "--timing-requests", "--timing-conditions", "--busy"):
        assert option in usage
    for option in ("--background-rate", "--probe-runs", "--probe-release", "--quick"):
        assert option in usage
