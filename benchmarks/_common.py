"""Shared helpers of the benchmark scripts: data splits, timing, tables, JSON.

Nothing here is fitted to data. The train/test splits are the published one
for Adult and a fixed, seeded, stratified split for MAGIC (which has no
published split); how the benchmark splits its data is not a privacy matter.
"""

from __future__ import annotations

import json
import math
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


#: Readable names of the benchmarked estimators (command-line key -> label for
#: tables, legends and titles). Keys not listed are shown as they are.
LABELS = {
    "sa-lr": "Subsample-aggregate (LR teachers)",
    "sa-hgb": "Subsample-aggregate (boosted-tree teachers)",
    "avg-lr": "Subsample averaging (LR teachers)",
    "avg-ridge": "Subsample averaging (ridge teachers)",
    "erm-lr": "Stable ERM (logistic)",
    "psgd-lr": "Averaged projected SGD (logistic)",
    "erm-ridge": "Stable ERM (squared loss)",
    "psgd-ridge": "Averaged projected SGD (squared loss)",
    "dpv-lr": "Validated logistic regression (one release)",
    "gs-lr": "Private grid search (subsample-aggregate, LR teachers)",
    "dp-lr": "diffprivlib LogisticRegression",
    "dp-nb": "diffprivlib GaussianNB",
    "dp-rf": "diffprivlib RandomForestClassifier",
    "lr": "LogisticRegression (non-private)",
    "nb": "GaussianNB (non-private)",
    "rf": "RandomForestClassifier (non-private)",
}


def label(key: str) -> str:
    """The readable name of an estimator key (the key itself if it has none)."""
    return LABELS.get(key, key)


def crossings(
    x: Sequence[float], y: Sequence[float], level: float, *, log_x: bool = True
) -> list[dict[str, Any]]:
    """Where the curve ``(x, y)`` crosses the horizontal line ``y = level``.

    The curve is read as piecewise linear between its points (in ``log x`` if
    ``log_x``). A point exactly on the line counts once.

    Parameters
    ----------
    x : sequence of float
        Increasing abscissae (for example the number of queries answered).
    y : sequence of float
        The curve's values at ``x``.
    level : float
        The flat line (for example the accuracy of a privately trained model).

    Returns
    -------
    list of dict
        One ``{"x": crossing abscissa, "direction": "down" | "up"}`` per
        crossing, in order of ``x``: ``"down"`` when the curve goes from at or
        above ``level`` to below it, ``"up"`` the other way.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float) - level
    if xs.shape != ys.shape or xs.ndim != 1:
        raise ValueError("x and y must be 1-D sequences of the same length.")
    if np.any(np.diff(xs) <= 0):
        raise ValueError("x must be strictly increasing.")
    t = np.log(xs) if log_x else xs
    out = []
    for i in range(len(xs) - 1):
        a, b = ys[i], ys[i + 1]
        if (a >= 0) == (b >= 0):
            continue
        frac = a / (a - b)
        at = t[i] + frac * (t[i + 1] - t[i])
        out.append(
            {"x": float(np.exp(at) if log_x else at), "direction": "down" if a >= 0 else "up"}
        )
    return out


def last_at_or_above(x: Sequence[float], y: Sequence[float], level: float) -> float | None:
    """The largest grid ``x`` whose ``y`` is still >= ``level`` (``None`` if none is)."""
    ok = [float(xi) for xi, yi in zip(x, y) if yi >= level]
    return max(ok) if ok else None


def judge_difference(
    ci: Sequence[float], want: str, resolution: float, *, strict: bool = True
) -> str:
    """Judge one claimed ordering of a paired difference ``a - b`` at a figure's resolution.

    Parameters
    ----------
    ci : (mean, low, high)
        The mean difference and its 95% interval.
    want : {">", "<", "~", "<="}
        What the claim says: a above b, a below b, no visible difference, a not
        visibly above b.
    resolution : float
        The smallest difference the figure behind the claim can show (about a
        tenth of its tick spacing). A smaller one is a *tie*: it neither
        confirms nor contradicts an ordering, and it is what "~" and "<=" claim.
    strict : bool, default=True
        Outside the tie band, ask for the interval to exclude 0; otherwise the
        sign of the mean decides.

    Returns
    -------
    {"yes", "tie", "no"}
    """
    mean, lo, hi = (float(v) for v in ci)
    tie = abs(mean) < resolution
    if want == "~":
        return "yes" if tie else "no"
    if want == "<=":
        return "yes" if tie or mean < 0 or (strict and lo <= 0) else "no"
    if want not in (">", "<"):
        raise ValueError(f"want must be one of '>', '<', '~', '<=', got {want!r}.")
    if tie:
        return "tie"
    if strict:
        return "yes" if (lo > 0 if want == ">" else hi < 0) else "no"
    return "yes" if (mean > 0 if want == ">" else mean < 0) else "no"


def claim_verdict(points: Sequence[str]) -> str:
    """The verdict of a claim from the judgements of its points ("yes", "tie", "no")."""
    points = list(points)
    if not points:
        return "n/a"
    if "no" in points:
        return "NOT REPRODUCED"
    ties = points.count("tie")
    if ties == 0:
        return "REPRODUCED"
    if ties == len(points):
        return "TIED AT THE FIGURE'S RESOLUTION"
    return (
        f"REPRODUCED WHERE RESOLVED ({ties} of {len(points)} points tied at the "
        "figure's resolution)"
    )


def verdict(passed: bool | None) -> str:
    """``PASS``, ``MISS`` or ``n/a`` (not measured)."""
    if passed is None:
        return "n/a"
    return "PASS" if passed else "MISS"


class WeightedProgress:
    """Remaining-time estimate over tasks of unequal expected cost, with its own check.

    The tasks run in the order of ``weights`` (each task's expected cost, in any
    unit). After each task the estimate is ``elapsed * (weight left) / (weight
    done)``: exact when the costs are proportional to the weights, whatever the
    machine's speed. The first time half of the weight is done (with tasks still
    to run), the estimate is kept; :meth:`check` then compares it with the time
    the rest really took.

    Parameters
    ----------
    weights : sequence of float
        Expected cost of each task, > 0, in the order they run.
    clock : callable, default=time.perf_counter
        Seconds, monotone (a fake clock in tests).
    """

    #: The estimate at half-way passes when it is within this factor of the real remaining time.
    TOLERANCE = 2.0
    #: Below this real remaining time (seconds) the check is not judged: timer noise and
    #: one-off costs (a first import, a cache) dominate, and nobody waits for a bar.
    MIN_SECONDS = 10.0

    def __init__(self, weights: Sequence[float], clock: Callable[[], float] = time.perf_counter):
        self.weights = [float(w) for w in weights]
        if any(not w > 0 for w in self.weights):
            raise ValueError(f"every weight must be > 0, got {weights!r}.")
        self.total = sum(self.weights)
        self.clock = clock
        self.start = clock()
        self.n_done = 0
        self.weight_done = 0.0
        self.halfway: tuple[float, float] | None = None  # (time, estimated remaining seconds)

    def estimate(self) -> float | None:
        """Estimated seconds left (``None`` before the first task is done)."""
        if self.weight_done <= 0:
            return None
        elapsed = self.clock() - self.start
        return elapsed * (self.total - self.weight_done) / self.weight_done

    def task_done(self) -> None:
        """Record that the next task in order has finished."""
        self.weight_done += self.weights[self.n_done]
        self.n_done += 1
        if (
            self.halfway is None
            and self.weight_done >= self.total / 2
            and self.n_done < len(self.weights)
        ):
            self.halfway = (self.clock(), float(self.estimate() or 0.0))

    def remaining_text(self) -> str:
        """``"about m:ss left"`` (empty before the first task is done)."""
        estimate = self.estimate()
        if estimate is None:
            return ""
        minutes, seconds = divmod(round(estimate), 60)
        return f"about {minutes}:{seconds:02d} left"

    def check(self) -> dict[str, Any] | None:
        """At the end: the half-way estimate against the real remaining time (or ``None``).

        ``passed`` when the ratio estimate / real is within ``[1 / TOLERANCE, TOLERANCE]``;
        ``None`` (not judged) when the rest took less than ``MIN_SECONDS``.
        """
        if self.halfway is None or self.n_done < len(self.weights):
            return None
        at, estimate = self.halfway
        actual = self.clock() - at
        ratio = estimate / actual if actual > 0 else math.inf
        return {
            "estimate_seconds": estimate,
            "actual_seconds": actual,
            "ratio": ratio,
            "passed": (
                None if actual < self.MIN_SECONDS else 1 / self.TOLERANCE <= ratio <= self.TOLERANCE
            ),
        }
