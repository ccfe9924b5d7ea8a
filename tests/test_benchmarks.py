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


#: The entry points a user runs (benchmarks/README.md lists them): a dozen at most.
ENTRY_POINTS = [
    "run",
    "perf",
    "ledger",
    "serving",
    "scaleout",
    "many_queries",
    "everlasting",
    "peers",
    "own_data",
    "reproduce_cv13",
]


def test_the_entry_points_are_the_ones_listed():
    scripts = {p.stem for p in BENCHMARKS.glob("*.py") if not p.stem.startswith("_")}
    assert scripts == set(ENTRY_POINTS)
    assert len(ENTRY_POINTS) <= 12
    readme = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    for name in ENTRY_POINTS:
        assert f"| `{name}.py` |" in readme, name


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_every_entry_point_imports_and_parses_its_options(name, capsys):
    # An entry point that no longer imports (a renamed or moved name) or whose options
    # no longer parse fails here, in-process, without running it.
    module = __import__(name)
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_the_default_run_leaves_out_the_opt_in_studies():
    run = pytest.importorskip("run")
    opt_in = {name for name, spec in run.ESTIMATORS.items() if not spec.default}
    assert opt_in == {"dpv-lr", "gs-lr"}
    assert run.parse_args([]).estimators == run.DEFAULT_ESTIMATORS
    assert not opt_in & set(run.DEFAULT_ESTIMATORS)
    assert run.parse_args(["--estimators", "gs-lr", "dpv-lr"]).estimators == ["gs-lr", "dpv-lr"]


@pytest.mark.parametrize("name", ["sa-lr", "avg-ridge", "erm-lr", "erm-ridge", "dpv-lr", "gs-lr"])
def test_every_registered_estimator_is_seeded_by_the_run_and_clones(name):
    from sklearn.base import clone

    run = pytest.importorskip("run")
    spec = run.ESTIMATORS[name]
    task = "regression" if spec.task == "regression" else "classification"
    data = _common.Dataset(
        name="adult" if task == "classification" else "diabetes",
        X_train=np.zeros((4, 2)),
        y_train=np.zeros(4),
        X_test=np.zeros((2, 2)),
        y_test=np.zeros(2),
        split="none",
        task=task,
        y_range=(0.0, 400.0) if task == "regression" else None,
    )
    estimator = spec.make_private(spec.make_base(None), 0.5, 7, 1, data)
    # The seed reaches the private estimator (the base pipeline gets None: each teacher
    # draws its own seed from the fit stream).
    params = clone(estimator).get_params(deep=True)
    seeds = {key: value for key, value in params.items() if key.endswith("random_state")}
    assert 7 in seeds.values(), seeds


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


def test_peers_summary_shows_the_one_release_line():
    report = pytest.importorskip("_peers_report")
    results = _fake_results()
    results["sufficient"] = [
        {
            "dataset": "adult",
            "budget": [1.0, 1e-6],
            "public": 0.25,
            "split": split,
            "draw": 0,
            "accuracy": accuracy,
            "fit_seconds": 0.5,
        }
        for split, accuracy in enumerate((0.85, 0.86, 0.84))
    ]
    summary = report.summarize(results, {"adult": _Design()})
    (line,) = summary["sufficient"]
    assert line["mean"] == pytest.approx(0.85) and line["worst"] == pytest.approx(0.84)
    assert line["dp_lr_mean"] == pytest.approx(0.80)  # diffprivlib of the same run
    text = report.markdown(summary, quick=True, wall=1.0)
    assert "One release, unlimited answers" in text and "0.850 ± 0.010" in text


# -- run.py's progress estimate ------------------------------------------------------------------
class _FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _run_tasks(weights, costs):
    clock = _FakeClock()
    progress = _common.WeightedProgress(weights, clock=clock)
    estimates = []
    for cost in costs:
        clock.now += cost
        progress.task_done()
        estimates.append(progress.estimate())
    return progress, estimates


def test_weighted_progress_is_exact_when_costs_follow_the_weights():
    # Costly fits first (epsilon 0.05 before 1, as a stage used to run them): a count-based
    # estimate would say 3 x 60 s = 180 s left after the first fit; the weights say 12 s.
    weights = [463.0, 120.0, 43.0, 463.0, 120.0, 43.0]
    progress, estimates = _run_tasks(weights, [w / 10 for w in weights])
    assert estimates[0] == pytest.approx(sum(weights[1:]) / 10)
    assert estimates[-1] == pytest.approx(0.0)
    check = progress.check()
    assert check["ratio"] == pytest.approx(1.0) and check["passed"]
    assert check["actual_seconds"] == pytest.approx(sum(weights[3:]) / 10)  # half after 3 of 6
    assert progress.remaining_text() == "about 0:00 left"


def test_weighted_progress_check_flags_weights_that_miss_the_costs():
    # Equal weights, but the second half costs 5x the first: the half-way estimate is 5x low.
    progress, _ = _run_tasks([1.0] * 4, [10.0, 10.0, 50.0, 50.0])
    check = progress.check()
    assert check["ratio"] == pytest.approx(0.2) and check["passed"] is False
    # Too short to judge: a few seconds of timer noise say nothing.
    short, _ = _run_tasks([1.0] * 4, [1.0, 1.0, 4.0, 4.0])
    assert short.check()["passed"] is None


def test_weighted_progress_has_no_check_before_the_end_or_without_a_half_way():
    progress, _ = _run_tasks([1.0, 1.0, 1.0], [20.0, 20.0])
    assert progress.check() is None  # still running
    single, _ = _run_tasks([1.0], [30.0])
    assert single.check() is None  # half of the weight is reached only by the last task
    with pytest.raises(ValueError, match="> 0"):
        _common.WeightedProgress([1.0, 0.0])


def test_expected_cost_grows_with_the_public_number_of_teachers():
    run = pytest.importorskip("run")
    data = _common.Dataset(
        "adult", pd_frame(), pd_frame(), np.repeat([0, 1], 50), np.repeat([0, 1], 50), "toy"
    )  # the label set is public: never read from the rows (here the first rows are all 0)
    sa = run.ESTIMATORS["sa-lr"]
    costs = {eps: run.expected_cost(sa, data, eps) for eps in (0.05, 1.0)}
    assert costs[0.05] == run.FIXED_COST_IN_TEACHERS + 443  # ceil(...) teachers at alpha=0.1
    assert costs[1.0] == run.FIXED_COST_IN_TEACHERS + 23
    linear = run.expected_cost(run.ESTIMATORS["erm-lr"], data, 0.05)
    assert (
        linear
        == run.FIXED_COST_IN_TEACHERS
        == run.expected_cost(run.ESTIMATORS["erm-lr"], data, 1.0)
    )


def pd_frame():
    pandas = pytest.importorskip("pandas")
    return pandas.DataFrame({"a": np.arange(100.0)})


def test_baselines_interleave_their_dashes():
    run = pytest.importorskip("run")
    styles = [run.baseline_dashes(j, 3) for j in range(3)]
    offsets = [offset for offset, _ in styles]
    assert len(set(offsets)) == 3  # each starts at its own place ...
    assert {sum(pattern) for _, pattern in styles} == {3 * run.BASELINE_DASH}  # ... same period


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
    # The progress check is recorded for each stage with a half-way point, and printed.
    for check in payload["progress_estimates"]:
        assert check["passed"] in (True, False, None)  # None: too short to judge
    assert "Progress estimates" in result.stdout
    # Without a terminal (captured output): plain lines, one per finished fit and per stage,
    # no progress-bar cursor codes or carriage returns.
    output = result.stdout + result.stderr
    assert "\r" not in output and "\x1b[" not in output
    finished = [line for line in result.stdout.splitlines() if " fits, " in line]
    assert len(finished) == 5  # 2 baselines (one shared) + 3 private fits
    assert sum(line.endswith(" done (stage 3/3)") for line in result.stdout.splitlines()) == 1


def test_warnings_are_printed_on_their_own_lines(capsys):
    import warnings

    run = pytest.importorskip("run")
    with run.warnings_on_their_own_lines(), warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("first", UserWarning, stacklevel=1)
        print("a progress line", flush=True)
        warnings.warn("second", UserWarning, stacklevel=1)
    err = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 1)[1] for line in err if ": UserWarning: " in line] == [
        "UserWarning: first",
        "UserWarning: second",
    ]


def test_a_quick_run_with_several_fits_per_stage_records_its_progress_check(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("tqdm")
    result = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--datasets", "diabetes", "--n-jobs", "1"]
        + ["--estimators", "psgd-ridge", "--epsilons", "0.5", "1", "2", "--seeds", "0", "1"]
        + ["--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    payload = json.loads((tmp_path / "run_results.json").read_text())
    (check,) = payload["progress_estimates"]
    assert check["estimator"] == "psgd-ridge" and check["n_fits"] == 8  # 2 x (baseline + 3)
    assert check["estimate_seconds"] >= 0 and check["actual_seconds"] > 0
    assert check["passed"] in (True, False, None)  # judged only past MIN_SECONDS
    # the runs come back in (epsilon, seed) order, whatever order they ran in
    assert [(r["epsilon"], r["seed"]) for r in payload["runs"]] == [
        (e, s) for e in (0.5, 1.0, 2.0) for s in (0, 1)
    ]


# -- scaleout.py --data: the verdicts of the data-on-a-cluster section --------------------------
def _cluster_run(rows, client_mb, one_release_s, teachers_s, accuracy):
    return {
        "rows": rows,
        "queries": 10**6,
        "public_fraction": 0.25,
        "client_peak_rss_mb": client_mb,
        "one_release_fit_seconds": one_release_s,
        "teachers_fit_seconds": teachers_s,
        "one_release_accuracy": accuracy,
        "teachers_accuracy": accuracy,
    }


def test_cluster_data_verdicts_judge_memory_growth_and_accuracy():
    cluster_data = pytest.importorskip("_cluster_data")
    scale = _cluster_run(10**8, 471.0, 150.0, 170.0, 0.85)
    small = _cluster_run(10**7, 460.0, 15.0, 20.0, 0.85)
    memory = _cluster_run(10**7, 13000.0, 30.0, 8.5, 0.8502)
    verdicts = cluster_data.compare(scale, small, memory)
    assert verdicts["client_below_1_gb"] and verdicts["client_below_a_tenth_of_the_data"]
    assert verdicts["one_release_fit_per_row_ratio"] == pytest.approx(0.5)
    assert verdicts["one_release_fit_per_row_ratio_cluster"] == pytest.approx(1.0)
    assert verdicts["teachers_fit_per_row_ratio_cluster"] == pytest.approx(0.85)
    # 0.0002 apart at 10**6 queries: within the 99 % bound (about 0.0013); 0.01 apart is not
    assert verdicts["teachers_accuracy_equal_within_noise"]
    assert verdicts["teachers_accuracy_bound"] == pytest.approx(
        2.576 * np.sqrt(2 * 0.8501 * 0.1499 / 10**6), rel=1e-6
    )
    memory["teachers_accuracy"] = 0.86
    assert not cluster_data.compare(scale, small, memory)["teachers_accuracy_equal_within_noise"]
    # a client that held the rows (8.8 GB of them) fails both memory verdicts
    scale["client_peak_rss_mb"] = 9000.0
    verdicts = cluster_data.compare(scale, small, memory)
    assert not verdicts["client_below_1_gb"]
    assert not verdicts["client_below_a_tenth_of_the_data"]
    assert cluster_data.data_bytes(10**8) == 8.8e9


# -- own_data.py: the data sets' public scales and checksums -----------------------------------


def test_own_data_reads_the_published_ranges_and_checks_the_bundled_files(monkeypatch):
    import own_data
    from sklearn.datasets import load_breast_cancer, load_wine

    from skprivpred.datasets._fetch import ChecksumError

    lower, upper = own_data._descr_ranges(load_breast_cancer().DESCR.split("Min")[1], 30)
    # radius (mean) and fractal dimension (worst), as the description prints them
    assert (lower[0], upper[0], lower[-1], upper[-1]) == (6.981, 28.11, 0.055, 0.208)
    lower, upper = own_data._descr_ranges(load_wine().DESCR.split("Min")[1], 13)
    assert (lower[0], upper[0], lower[-1], upper[-1]) == (11.0, 14.8, 278.0, 1680.0)
    X = load_wine().data
    # In column order (the description rounds: 14.83 is printed 14.8; clipping costs no privacy).
    width = np.array(upper) - np.array(lower)
    assert np.all(np.abs(X.min(axis=0) - lower) <= 0.05 * width)
    assert np.all(np.abs(X.max(axis=0) - upper) <= 0.05 * width)
    assert own_data._check_bundled("wine_data.csv") == own_data.SHA256["wine_data.csv"]
    monkeypatch.setitem(own_data.SHA256, "wine_data.csv", "0" * 64)
    with pytest.raises(ChecksumError, match="not the file this benchmark was measured on"):
        own_data._check_bundled("wine_data.csv")
    # Every binary-only estimator is marked so, and only those run on several classes.
    assert {k for k, spec in own_data.ESTIMATORS.items() if spec.binary_only} == {
        "erm",
        "psgd",
        "dpv-lr",
    }
