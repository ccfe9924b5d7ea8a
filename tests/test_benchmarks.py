"""The README's main job keeps working: a smoke run of benchmarks/run.py on bundled data."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("tqdm")

RUN = Path(__file__).resolve().parents[1] / "benchmarks" / "run.py"


def test_quick_run_on_the_bundled_regression_data(tmp_path):
    # diabetes ships with scikit-learn: no download, every regression estimator runs.
    result = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--datasets", "diabetes", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    payload = json.loads((tmp_path / "run_results.json").read_text())
    estimators = {row["estimator"] for row in payload["summary"]}
    assert estimators == {"avg-ridge", "erm-ridge", "psgd-ridge"}
    assert all(row["metric"] == "rmse" and row["score_mean"] > 0 for row in payload["summary"])
    assert (tmp_path / "score_vs_epsilon_diabetes.png").exists()
