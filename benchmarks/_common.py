"""Shared helpers of the benchmark scripts: data splits, timing, tables, JSON.

Nothing here is fitted to data. The train/test splits are the published one
for Adult and a fixed, seeded, stratified split for MAGIC (which has no
published split); how the benchmark splits its data is not a privacy matter.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from skprivpred.datasets import load_adult, load_magic

#: Default folder of the JSON results and plots (ignored by git).
DEFAULT_OUT = Path(__file__).resolve().parent / "results"

#: Fraction of MAGIC (and diabetes) held out for testing, and the seed of that split.
MAGIC_TEST_SIZE = 1 / 3
MAGIC_SPLIT_SEED = 0

#: Public output range of the diabetes target (disease progression), fixed a
#: priori as a round bound, not read from the data.
DIABETES_Y_RANGE = (0.0, 400.0)


@dataclass(frozen=True)
class Dataset:
    """A benchmark data set with its train/test split.

    Attributes
    ----------
    name : str
        Short name used on the command line and in the results.
    X_train, X_test : DataFrame
        Features; categorical columns keep their pandas ``category`` dtype.
    y_train, y_test : ndarray of shape (n_samples,)
        Integer labels in ``{0, 1}`` (classification) or real targets.
    split : str
        How the split was made, for the results file.
    task : {"classification", "regression"}
        What is predicted; the score is accuracy or RMSE.
    y_range : tuple of float or None
        Public output range of a regression target.
    """

    name: str
    X_train: pd.DataFrame
    X_test: pd.DataFrame
    y_train: np.ndarray
    y_test: np.ndarray
    split: str
    task: str = "classification"
    y_range: tuple[float, float] | None = None

    def summary(self) -> dict[str, Any]:
        """Sizes and split of the data set, for the results file."""
        summary = {
            "task": self.task,
            "n_train": int(self.X_train.shape[0]),
            "n_test": int(self.X_test.shape[0]),
            "n_features": int(self.X_train.shape[1]),
            "split": self.split,
        }
        if self.task == "classification":
            summary["positive_rate_train"] = round(float(np.mean(self.y_train)), 4)
        else:
            summary["y_range"] = list(self.y_range)
        return summary


def _adult() -> Dataset:
    X_train, y_train = load_adult(subset="train", as_frame=True, return_X_y=True)
    X_test, y_test = load_adult(subset="test", as_frame=True, return_X_y=True)
    return Dataset(
        "adult",
        X_train,
        X_test,
        y_train.to_numpy(),
        y_test.to_numpy(),
        split="published split: adult.data (train) / adult.test (test)",
    )


def _seeded_split(name: str, X: pd.DataFrame, y: pd.Series, *, stratify: bool, **extra) -> Dataset:
    """A fixed 2/3 - 1/3 train/test split (for data sets without a published one)."""
    X_train, X_test, y_train, y_test = train_test_split(
        X,
        y,
        test_size=MAGIC_TEST_SIZE,
        stratify=y if stratify else None,
        random_state=MAGIC_SPLIT_SEED,
    )
    how = "stratify=y, " if stratify else ""
    return Dataset(
        name,
        X_train.reset_index(drop=True),
        X_test.reset_index(drop=True),
        y_train.to_numpy(),
        y_test.to_numpy(),
        split=(
            f"sklearn.model_selection.train_test_split(test_size=1/3, {how}"
            f"random_state={MAGIC_SPLIT_SEED})"
        ),
        **extra,
    )


def _magic() -> Dataset:
    X, y = load_magic(as_frame=True, return_X_y=True)
    return _seeded_split("magic", X, y, stratify=True)


def _diabetes() -> Dataset:
    # Raw features: the default scaled=True ones are standardised with statistics of
    # all 442 rows, i.e. preprocessing fitted on the data.
    X, y = load_diabetes(as_frame=True, return_X_y=True, scaled=False)
    return _seeded_split(
        "diabetes", X, y, stratify=False, task="regression", y_range=DIABETES_Y_RANGE
    )


#: Data set loaders by command-line name.
DATASETS: dict[str, Callable[[], Dataset]] = {
    "adult": _adult,
    "magic": _magic,
    "diabetes": _diabetes,
}


#: The task of each data set (known without loading it).
DATASET_TASKS = {"adult": "classification", "magic": "classification", "diabetes": "regression"}


def load_dataset(name: str) -> Dataset:
    """Load the benchmark data set ``name`` (a key of :data:`DATASETS`)."""
    return DATASETS[name]()


def timed(func: Callable[[], Any]) -> tuple[Any, float]:
    """Call ``func()`` and return its result and wall time in seconds."""
    start = time.perf_counter()
    result = func()
    return result, time.perf_counter() - start


def environment() -> dict[str, Any]:
    """Versions and machine facts worth keeping next to timings."""
    import joblib
    import scipy
    import sklearn

    import skprivpred

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "pandas": pd.__version__,
        "joblib": joblib.__version__,
        "skprivpred": skprivpred.__version__,
    }


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` as indented JSON to ``path``, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=_to_builtin) + "\n", encoding="utf-8")
    return path


def _to_builtin(value: Any) -> Any:
    """JSON fallback for numpy scalars and arrays."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def format_table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Plain-text table: text columns left-aligned, numbers right-aligned."""
    cells = [[str(h) for h in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[j]) for row in cells) for j in range(len(header))]
    numeric = [
        all(_looks_numeric(row[j]) for row in cells[1:]) if rows else False
        for j in range(len(header))
    ]

    def line(row: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def _looks_numeric(text: str) -> bool:
    head = text.split(" ")[0].rstrip("x%")
    try:
        float(head)
    except ValueError:
        return head in {"-", "nan"}
    return True


def verdict(passed: bool | None) -> str:
    """``PASS``, ``MISS`` or ``n/a`` (not measured)."""
    if passed is None:
        return "n/a"
    return "PASS" if passed else "MISS"
