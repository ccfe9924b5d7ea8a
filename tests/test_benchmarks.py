"""The benchmark scripts' pure pieces (seconds), and one smoke run of the main job."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
RUN = BENCHMARKS / "run.py"

pytest.importorskip("pandas")
sys.path.insert(0, str(BENCHMARKS))

import _common  # noqa: E402
import _peers_env  # noqa: E402


# -- crossover finding -------------------------------------------------------------------------
def test_crossings_finds_a_fall_below_the_line_on_log_x():
    # 0.9 at q=10, 0.7 at q=1000: on log10 q the line 0.8 is crossed half-way, at q=100.
    (crossing,) = _common.crossings([10, 1000], [0.9, 0.7], 0.8)
    assert crossing["direction"] == "down"
    assert crossing["x"] == pytest.approx(100.0)


def test_crossings_linear_x_and_both_directions():
    out = _common.crossings([0, 1, 2, 3], [0.5, 1.0, 0.5, 1.0], 0.75, log_x=False)
    assert [(c["direction"], c["x"]) for c in out] == [("up", 0.5), ("down", 1.5), ("up", 2.5)]


def test_crossings_none_when_the_curve_stays_on_one_side():
    assert _common.crossings([1, 10, 100], [0.9, 0.85, 0.81], 0.8) == []
    assert _common.crossings([1, 10, 100], [0.7, 0.75, 0.79], 0.8) == []


def test_crossings_point_on_the_line_counts_as_above():
    # Touching the line and staying there is no crossing; leaving it downwards is one.
    out = _common.crossings([1, 10, 100], [0.8, 0.8, 0.7], 0.8)
    assert len(out) == 1 and out[0]["direction"] == "down" and out[0]["x"] == pytest.approx(10.0)


def test_crossings_rejects_bad_grids():
    with pytest.raises(ValueError, match="increasing"):
        _common.crossings([10, 1], [0.9, 0.7], 0.8)
    with pytest.raises(ValueError, match="same length"):
        _common.crossings([1, 10], [0.9], 0.8)


def test_last_grid_point_at_or_above():
    assert _common.last_at_or_above([10, 100, 1000], [0.85, 0.80, 0.75], 0.80) == 100
    assert _common.last_at_or_above([10, 100], [0.7, 0.6], 0.8) is None


# -- readable labels ---------------------------------------------------------------------------
def test_every_benchmarked_estimator_has_a_readable_label():
    run = pytest.importorskip("run")
    for key in run.ESTIMATORS:
        assert key in _common.LABELS, key
        assert _common.label(key) != key
        assert " " in _common.label(key)  # words, not a code
    assert _common.label("not-registered") == "not-registered"


def test_estimators_sharing_a_base_share_one_named_baseline():
    run = pytest.importorskip("run")
    by_base: dict = {}
    for key, spec in run.ESTIMATORS.items():
        by_base.setdefault(spec.make_base, []).append(key)
        assert run.baseline_name(spec.make_base) in run.BASELINE_NAMES.values()
    # LR teachers of subsample-aggregate and of subsample averaging: one baseline
    assert set(by_base[run.logistic_pipeline]) == {"sa-lr", "avg-lr"}
    assert len(set(run.BASELINE_NAMES.values())) == len(run.BASELINE_NAMES)


# -- the tie rule at a figure's resolution -----------------------------------------------------
@pytest.mark.parametrize(
    ("ci", "want", "strict", "expected"),
    [
        ((0.0008, -0.0005, 0.0020), ">", True, "tie"),  # below 0.01: the figure cannot show it
        ((-0.0030, -0.0050, -0.0010), ">", True, "tie"),
        ((0.0200, 0.0150, 0.0250), ">", True, "yes"),
        ((0.0200, -0.0010, 0.0400), ">", True, "no"),  # visible but not resolved by the folds
        ((0.0200, -0.0010, 0.0400), ">", False, "yes"),  # sign of the mean
        ((-0.0200, -0.0300, -0.0100), ">", True, "no"),
        ((-0.0200, -0.0300, -0.0100), "<", True, "yes"),
        ((0.0050, 0.0010, 0.0090), "~", True, "yes"),
        ((0.0167, 0.0100, 0.0230), "~", True, "no"),
        ((0.0026, 0.0015, 0.0039), "<=", True, "yes"),  # "not above": a tie is what is claimed
        ((0.0200, 0.0100, 0.0300), "<=", True, "no"),
    ],
)
def test_judge_difference(ci, want, strict, expected):
    assert _common.judge_difference(ci, want, 0.01, strict=strict) == expected


def test_judge_difference_rejects_an_unknown_claim():
    with pytest.raises(ValueError, match="want"):
        _common.judge_difference((0.0, 0.0, 0.0), "!=", 0.01)


def test_claim_verdicts():
    assert _common.claim_verdict(["yes", "yes"]) == "REPRODUCED"
    assert _common.claim_verdict(["yes", "tie", "no"]) == "NOT REPRODUCED"
    assert _common.claim_verdict(["tie", "tie"]) == "TIED AT THE FIGURE'S RESOLUTION"
    assert _common.claim_verdict(["yes", "tie", "yes"]).startswith(
        "REPRODUCED WHERE RESOLVED (1 of 3"
    )
    assert _common.claim_verdict([]) == "n/a"


# -- peers.py: its environment and its report ----------------------------------------------------
def test_peers_environment_pins_a_scikit_learn_that_diffprivlib_supports():
    assert "diffprivlib==0.6.6" in _peers_env.REQUIREMENTS
    assert "scikit-learn==1.7.2" in _peers_env.REQUIREMENTS
    assert _peers_env.VENV.parent == BENCHMARKS
    assert not _peers_env.inside()  # the tests run in the project's own environment


def _fake_results():
    accuracy: list[dict] = [
        {"dataset": "adult", "model": m, "epsilon": e, "seed": s, "accuracy": acc + 0.001 * s}
        for m, acc in (("dp-lr", 0.78), ("sa-lr", 0.84))
        for e in (1.0, 2.0)
        for s in (0, 1)
    ]
    accuracy += [{"dataset": "adult", "model": "lr", "epsilon": None, "seed": 0, "accuracy": 0.85}]
    accuracy[4]["n_teachers"] = accuracy[5]["n_teachers"] = 23
    accuracy[6]["n_teachers"] = accuracy[7]["n_teachers"] = 12
    curve = [
        {"n_queries": q, "epsilon_per_query": 1.0 / q, "n_teachers": 400, "expected_accuracy": a}
        for q, a in ((10, 0.84), (100, 0.82), (1000, 0.78), (10000, 0.70))
    ]
    return {
        "accuracy": accuracy,
        "dp_levels": [
            {"dataset": "adult", "budget": [1.0, 1e-6], "seed": s, "accuracy": 0.80} for s in (0, 1)
        ],
        "curves": [
            {
                "dataset": "adult",
                "budget": [1.0, 1e-6],
                "rule": "default",
                "seed": 0,
                "curve": curve,
            }
        ],
        "students": [
            {
                "dataset": "adult",
                "budget": [1.0, 1e-6],
                "n_queries": 1000,
                "seed": 0,
                "n_teachers": 400,
                "live_accuracy": 0.79,
                "student_accuracy": 0.81,
                "student_queries": 15000,
            }
        ],
    }


class _Design:
    majority = 0.76


def test_peers_summary_and_markdown():
    report = pytest.importorskip("_peers_report")
    summary = report.summarize(_fake_results(), {"adult": _Design()})
    (cross,) = summary["crossover"]
    assert cross["dp_lr_mean"] == pytest.approx(0.80)
    (down,) = cross["crossings"]
    assert down["direction"] == "down" and 100 < down["x"] < 1000
    assert cross["last_grid_q_at_or_above"] == 100
    (student,) = summary["students"]
    assert student["student_beats_dp_lr"]
    sa = [s for s in summary["accuracy"] if s["model"] == "sa-lr"]
    assert {s["n_teachers"] for s in sa} == {23, 12}
    text = report.markdown(summary, quick=True, wall=1.0)
    assert "diffprivlib LogisticRegression" in text
    assert "private prediction, eps per query" in text
    assert "dp-lr" not in text and "sa-lr" not in text  # readable labels only


# -- the main job still runs ---------------------------------------------------------------------
def test_quick_run_on_the_bundled_regression_data(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("tqdm")
    # diabetes ships with scikit-learn: no download, every regression estimator runs.
    result = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--datasets", "diabetes", "--n-jobs", "1"]
        + ["--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    payload = json.loads((tmp_path / "run_results.json").read_text())
    estimators = {row["estimator"] for row in payload["summary"]}
    assert estimators == {"avg-ridge", "erm-ridge", "psgd-ridge"}
    assert all(row["metric"] == "rmse" and row["score_mean"] > 0 for row in payload["summary"])
    assert all(row["label"] == _common.label(row["estimator"]) for row in payload["summary"])
    # two regressors share the ridge-on-public-design baseline: fitted once per seed
    assert len({row["baseline"] for row in payload["summary"]}) == 2
    assert np.isfinite([row["baseline_score_mean"] for row in payload["summary"]]).all()
    assert (tmp_path / "score_vs_epsilon_diabetes.png").exists()
