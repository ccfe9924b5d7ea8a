"""Accuracy (or RMSE) of private prediction against per-query epsilon.

What is measured
----------------
For every data set, private estimator and per-query ``epsilon``, the estimator
is fitted on the training split and answers every row of the test split once
(one private answer per row, fresh noise per row); the test accuracy
(classification: Adult, MAGIC) or RMSE (regression: scikit-learn's diabetes
data) of those answers is averaged over seeds (``random_state=seed``) and
reported as mean ± standard deviation, next to the score of the non-private
*baseline*: the same base pipeline fitted once on all training rows.

Private estimators (``--estimators``; see :data:`ESTIMATORS`; tables, plots
and targets show them by readable name, ``_common.LABELS``):

``sa-lr``
    :class:`~skprivpred.SubsampleAggregateClassifier` with logistic-regression
    teachers: ``OneHotEncoder`` on the categorical columns and
    ``StandardScaler`` on the numeric ones, fitted *inside* each teacher.
``sa-hgb``
    :class:`~skprivpred.SubsampleAggregateClassifier` with
    ``HistGradientBoostingClassifier`` teachers (native categorical support,
    50 boosting iterations, no early stopping).
``avg-lr``
    :class:`~skprivpred.SubsampleAverageClassifier` with the LR teachers of
    ``sa-lr`` (label votes, the paper's sampling rule).
``avg-ridge``
    :class:`~skprivpred.SubsampleAverageRegressor` with scaled ridge teachers,
    10 teachers, public output range ``(0, 400)`` (regression).
``erm-lr``, ``psgd-lr``, ``erm-ridge``, ``psgd-ridge``
    :class:`~skprivpred.StableERMClassifier`, :class:`~skprivpred.AveragedPSGDClassifier`
    and their regressors: one linear model on all rows, on a design matrix built
    without looking at the data (``_design.public_design``: public category
    lists, fixed transforms from documented units), with public norm bounds and
    radius; regressors fit the target centred on the public range.

Not in the default run (name them with ``--estimators``; they were studies of their own):

``dpv-lr``
    :class:`~skprivpred.DPValidatedLogisticRegression` at its defaults
    (``lam_grid="auto"``) on the public design: one release, so ``epsilon`` is the
    budget of the whole model, every answer free.
``gs-lr``
    :class:`~skprivpred.PrivateGridSearchCV` over subsample-and-aggregate with
    logistic-regression teachers on the public design, their ``C`` in {0.1, 1, 10}
    (exponential mechanism, ``selection_epsilon=1``): the accuracy of the privately
    chosen model's answers.

All preprocessing that is fitted to data lives inside the teacher, so each
teacher sees its own part only. ``n_teachers`` is derived by each estimator
from ``target_error=0.1`` and ``epsilon`` (soft majority: 23 teachers at
``epsilon=1``, 222 at 0.1, 443 at 0.05; averaging: 20, 200, 400); the value
used is reported. The label set ``classes=[0, 1]`` and the regression output
range are public. Integer seeds make the answers' noise reproducible, which is
right for an experiment and wrong for a deployment (see ``random_state`` in
the estimators).

Data: Adult with its published train/test split; MAGIC with a fixed, seeded,
stratified 2/3 train - 1/3 test split (it has no published split); diabetes
with a fixed, seeded 2/3 - 1/3 split. The split is a benchmark choice, not a
privacy matter.

Timing: ``fit`` uses ``--n-jobs`` joblib workers for the teachers; ``predict``
runs in the main process. Native thread pools (BLAS, OpenMP) are limited to
``--threads`` (default 1) per process: parallelism comes from the teachers, and
the tiny per-teacher workloads of tree prediction get several times slower
with more OpenMP threads on a loaded 2-core machine.

Outputs, in ``--out`` (default ``benchmarks/results/``): ``run_results.json``
(configuration, environment, every run, the summary and the targets) and one
``score_vs_epsilon_<dataset>.png`` per data set: one line per distinct
non-private baseline (estimators with the same base pipeline share it), the
legend outside the axes; each baseline in the colour of its estimator, with
interleaved dashes, so two at the same value both show. Progress is shown per
stage (data set x estimator): the stage's fits run seed by seed, each weighted
by its expected cost (a fixed cost plus the public number of teachers), and the
bar shows the remaining time those weights predict; at the end, each stage's
estimate at half-way is compared with the time the rest really took (within 2x
passes). Fits of different stages differ in cost by 100x, so no single estimate
over all stages is given. The bars are drawn only on a terminal (standard error a
TTY); in a log file or a CI job the run prints plain lines instead, one per
finished fit and one per finished stage, with no cursor codes, and every warning
on a line of its own.

Usage
-----
From the repository root::

    .venv/bin/python benchmarks/run.py            # default, ~5 min
    .venv/bin/python benchmarks/run.py --quick    # smoke test, seconds
    .venv/bin/python benchmarks/run.py --full     # 10 seeds, more epsilons
    .venv/bin/python benchmarks/run.py --datasets adult \\
        --estimators sa-lr --epsilons 0.1 1 --seeds 0 1

Adding a private estimator to this benchmark is one new entry in
:data:`ESTIMATORS`.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    DATASET_TASKS,
    DATASETS,
    DEFAULT_OUT,
    Dataset,
    WeightedProgress,
    environment,
    format_table,
    label,
    load_dataset,
    timed,
    verdict,
    write_json,
)
from _design import PUBLIC_NORM_BOUND, public_design
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor, make_column_selector
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from skprivpred import (
    AveragedPSGDClassifier,
    AveragedPSGDRegressor,
    DPValidatedLogisticRegression,
    PrivacyWarning,
    PrivateGridSearchCV,
    StableERMClassifier,
    StableERMRegressor,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
)

#: The public label set of both benchmark tasks.
CLASSES = [0, 1]

DEFAULT_EPSILONS = (0.05, 0.1, 0.5, 1.0, 2.0)
FULL_EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
DEFAULT_N_SEEDS = 3
FULL_N_SEEDS = 10
QUICK_EPSILONS = (1.0,)
QUICK_TEST_ROWS = 2000


# -- base pipelines (the teachers and the non-private baselines) -----------------------
def _categorical_columns() -> Callable:
    return make_column_selector(dtype_include=["category", "object", "string"])


def _numeric_columns() -> Callable:
    return make_column_selector(dtype_include="number")


def logistic_pipeline(random_state: int | None = None) -> Pipeline:
    """One-hot + standard scaling + logistic regression, all fitted on the rows given.

    Columns are chosen by dtype (public schema), never by their values.
    """
    preprocess = ColumnTransformer(
        [
            ("categorical", OneHotEncoder(handle_unknown="ignore"), _categorical_columns()),
            ("numeric", StandardScaler(), _numeric_columns()),
        ]
    )
    classifier = LogisticRegression(max_iter=1000, random_state=random_state)
    return Pipeline([("preprocess", preprocess), ("classify", classifier)])


def boosting_classifier(random_state: int | None = None) -> HistGradientBoostingClassifier:
    """Gradient-boosted trees sized for small teachers (categories from the dtype)."""
    return HistGradientBoostingClassifier(
        max_iter=50,
        early_stopping=False,
        categorical_features="from_dtype",
        random_state=random_state,
    )


def ridge_pipeline(random_state: int | None = None) -> Pipeline:
    """Standard scaling + ridge regression, fitted on the rows given."""
    del random_state  # deterministic
    return Pipeline([("scale", StandardScaler()), ("regress", Ridge(alpha=1.0))])


# -- the registry of benchmarked private estimators --------------------------------------
def subsample_aggregate(
    base: BaseEstimator, epsilon: float, seed: int, n_jobs: int, data: Dataset
) -> SubsampleAggregateClassifier:
    """Subsample-and-aggregate over clones of ``base``, ``n_teachers`` from ``target_error=0.1``."""
    return SubsampleAggregateClassifier(
        base, epsilon=epsilon, classes=CLASSES, n_jobs=n_jobs, random_state=seed
    )


def subsample_average(
    base: BaseEstimator, epsilon: float, seed: int, n_jobs: int, data: Dataset
) -> SubsampleAverageClassifier:
    """Subsample averaging of label votes (the paper's rule), ``r = ceil(2/(alpha eps))``."""
    return SubsampleAverageClassifier(
        base, epsilon=epsilon, classes=CLASSES, n_jobs=n_jobs, random_state=seed
    )


def subsample_average_regression(
    base: BaseEstimator, epsilon: float, seed: int, n_jobs: int, data: Dataset
) -> SubsampleAverageRegressor:
    """Subsample averaging of clipped regression outputs, 10 teachers, public ``y_bounds``."""
    return SubsampleAverageRegressor(
        base, epsilon=epsilon, y_bounds=data.y_range, n_jobs=n_jobs, random_state=seed
    )


# -- linear private models on the public design matrix -------------------------------------
#: Public radius of the linear models' coefficient ball, fixed a priori.
LINEAR_RADIUS = {"classification": 10.0, "regression": 5.0}


def _on_public_design(model: BaseEstimator) -> Pipeline:
    return Pipeline([("design", FunctionTransformer(public_design)), ("model", model)])


def public_logistic(random_state: int | None = None) -> Pipeline:
    """Non-private baseline of the linear models: logistic regression on the public design."""
    return _on_public_design(LogisticRegression(max_iter=2000, random_state=random_state))


def public_ridge(random_state: int | None = None) -> Pipeline:
    """Non-private baseline of the linear regressors: ridge on the public design."""
    del random_state  # deterministic
    return _on_public_design(Ridge(alpha=1.0))


def _linear_bounds(data: Dataset) -> dict:
    return {"feature_norm_bound": PUBLIC_NORM_BOUND[data.name], "radius": LINEAR_RADIUS[data.task]}


def _centred_target(
    model: BaseEstimator, y_range: tuple[float, float]
) -> TransformedTargetRegressor:
    """Fit on ``(y - centre) / half_width`` of the public range (``y_bounds=(-1, 1)``).

    Answers are in y units.
    """
    centre, half_width = (y_range[0] + y_range[1]) / 2, (y_range[1] - y_range[0]) / 2
    return TransformedTargetRegressor(
        _on_public_design(model),
        func=lambda y: (y - centre) / half_width,
        inverse_func=lambda v: v * half_width + centre,
        check_inverse=False,
    )


def stable_erm(base, epsilon: float, seed: int, n_jobs: int, data: Dataset) -> Pipeline:
    """Regularized logistic ERM, ``lam`` from Cor 4.11, on the public design."""
    model = StableERMClassifier(
        epsilon=epsilon, classes=CLASSES, random_state=seed, **_linear_bounds(data)
    )
    return _on_public_design(model)


def averaged_psgd(base, epsilon: float, seed: int, n_jobs: int, data: Dataset) -> Pipeline:
    """One pass of averaged projected SGD, ``eta`` from Thm 4.12, on the public design."""
    model = AveragedPSGDClassifier(
        epsilon=epsilon, classes=CLASSES, random_state=seed, **_linear_bounds(data)
    )
    return _on_public_design(model)


def stable_erm_regression(base, epsilon: float, seed: int, n_jobs: int, data: Dataset):
    """Squared-loss ERM, ``lam`` from Cor 4.11, on the public design and centred target."""
    model = StableERMRegressor(
        epsilon=epsilon, y_bounds=(-1.0, 1.0), random_state=seed, **_linear_bounds(data)
    )
    return _centred_target(model, data.y_range)


def averaged_psgd_regression(base, epsilon: float, seed: int, n_jobs: int, data: Dataset):
    """Averaged projected SGD (squared loss) on the public design and centred target."""
    model = AveragedPSGDRegressor(
        epsilon=epsilon, y_bounds=(-1.0, 1.0), random_state=seed, **_linear_bounds(data)
    )
    return _centred_target(model, data.y_range)


def validated_logistic(base, epsilon: float, seed: int, n_jobs: int, data: Dataset) -> Pipeline:
    """Private validation over its automatic ``lam`` grid, one release, on the public design."""
    model = DPValidatedLogisticRegression(epsilon=epsilon, classes=CLASSES, random_state=seed)
    return _on_public_design(model)


#: The grid of ``gs-lr``: the teachers' regularisation. When a private search pays (and at
#: what selection budget) is measured in docs/user_guide/tuning.rst, "When does it pay?".
SEARCH_GRID = {"estimator__C": [0.1, 1.0, 10.0]}


def grid_search(base, epsilon: float, seed: int, n_jobs: int, data: Dataset) -> Pipeline:
    """Private grid search over subsample-and-aggregate's teachers, on the public design.

    The teachers are bare logistic regressions on the public design matrix, which the
    library votes stacked: teachers that are pipelines answer the validation rows one
    row at a time behind the isolation boundary, minutes per search.
    """
    template = SubsampleAggregateClassifier(
        LogisticRegression(max_iter=1000), epsilon=epsilon, classes=CLASSES
    )
    return _on_public_design(
        PrivateGridSearchCV(template, SEARCH_GRID, random_state=seed, n_jobs=n_jobs)
    )


#: Readable name of each non-private baseline (the base pipeline fitted on all rows).
#: Estimators with the same base share one baseline: it is fitted and drawn once.
BASELINE_NAMES: dict[Callable, str] = {
    logistic_pipeline: "LogisticRegression, one-hot + scaling (non-private)",
    boosting_classifier: "HistGradientBoosting (non-private)",
    ridge_pipeline: "Ridge, scaling (non-private)",
    public_logistic: "LogisticRegression, public design (non-private)",
    public_ridge: "Ridge, public design (non-private)",
}


def baseline_name(make_base: Callable) -> str:
    """Readable name of a base pipeline's non-private baseline."""
    return BASELINE_NAMES.get(
        make_base, f"{getattr(make_base, '__name__', make_base)} (non-private)"
    )


@dataclass(frozen=True)
class EstimatorSpec:
    """How to build one benchmarked private estimator and its non-private baseline.

    Attributes
    ----------
    description : str
        Short human-readable description (the teacher type), for tables and plots.
    make_base : callable
        ``make_base(random_state)`` returns the non-private base pipeline. The
        baseline is ``make_base(seed)`` fitted on all training rows; the private
        estimator gets ``make_base(None)``, so that a subsample-and-aggregate
        estimator gives every teacher its own seed from its fit stream.
    make_private : callable
        ``make_private(base, epsilon, seed, n_jobs, data)`` returns the unfitted
        private estimator; ``seed`` must become its ``random_state``; ``data``
        gives public facts of the data set (such as a regression ``y_range``).
    task : {"classification", "regression"}
        The data sets it runs on (those of the same task).
    default : bool
        Whether the default run (no ``--estimators``) includes it.
    """

    description: str
    make_base: Callable[[int | None], BaseEstimator]
    make_private: Callable[[BaseEstimator, float, int, int, Dataset], BaseEstimator]
    task: str = "classification"
    default: bool = True


#: Benchmarked private estimators by command-line name. Add one entry per estimator.
ESTIMATORS: dict[str, EstimatorSpec] = {
    "sa-lr": EstimatorSpec(
        "subsample-aggregate, LR teachers", logistic_pipeline, subsample_aggregate
    ),
    "sa-hgb": EstimatorSpec(
        "subsample-aggregate, HGB teachers", boosting_classifier, subsample_aggregate
    ),
    "avg-lr": EstimatorSpec(
        "subsample averaging, LR teachers", logistic_pipeline, subsample_average
    ),
    "avg-ridge": EstimatorSpec(
        "subsample averaging, ridge teachers",
        ridge_pipeline,
        subsample_average_regression,
        task="regression",
    ),
    "erm-lr": EstimatorSpec("stable ERM, logistic, public design", public_logistic, stable_erm),
    "psgd-lr": EstimatorSpec(
        "averaged PSGD, logistic, public design", public_logistic, averaged_psgd
    ),
    "erm-ridge": EstimatorSpec(
        "stable ERM, squared loss, public design",
        public_ridge,
        stable_erm_regression,
        task="regression",
    ),
    "psgd-ridge": EstimatorSpec(
        "averaged PSGD, squared loss, public design",
        public_ridge,
        averaged_psgd_regression,
        task="regression",
    ),
    # Opt-in (``--estimators``): the per-estimator studies folded into this job.
    "dpv-lr": EstimatorSpec(
        "validated logistic regression, one release, public design",
        public_logistic,
        validated_logistic,
        default=False,
    ),
    "gs-lr": EstimatorSpec(
        "private grid search over subsample-aggregate, LR teachers, public design",
        public_logistic,
        grid_search,
        default=False,
    ),
}

#: The estimators of the default run.
DEFAULT_ESTIMATORS = [name for name, spec in ESTIMATORS.items() if spec.default]


# -- accuracy targets ---------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """A mean test accuracy to reach for one data set, estimator and epsilon."""

    dataset: str
    estimator: str
    epsilon: float
    min_accuracy: float


TARGETS = (
    Target("adult", "sa-lr", 1.0, 0.85),
    Target("adult", "sa-lr", 0.1, 0.84),
    Target("magic", "sa-hgb", 1.0, 0.86),
)


# -- one measurement ------------------------------------------------------------------
@dataclass
class Config:
    """Everything a run depends on (stored in the results file)."""

    datasets: list[str]
    estimators: list[str]
    epsilons: list[float]
    seeds: list[int]
    n_jobs: int
    threads: int
    max_test_rows: int | None
    mode: str
    out: Path


#: The score of each task: accuracy (higher is better) or RMSE (lower is better).
METRICS = {"classification": "accuracy", "regression": "rmse"}


def _score(data: Dataset, y_pred: np.ndarray) -> float:
    y_pred = np.asarray(y_pred)
    if data.task == "regression":
        return float(np.sqrt(np.mean((y_pred - data.y_test) ** 2)))
    return float(np.mean(y_pred == data.y_test))


def trivial_score(data: Dataset) -> float:
    """The score of the trivial predictor: the training majority class, or the training mean.

    A private model that does not beat it has learned nothing usable.
    """
    if data.task == "regression":
        return _score(data, np.full(data.y_test.shape, float(np.mean(data.y_train))))
    values, counts = np.unique(data.y_train, return_counts=True)
    return _score(data, np.full(data.y_test.shape, values[np.argmax(counts)]))


SEEDED_NOTE = (
    "Every private estimator is seeded with an integer random_state, so that the runs are "
    "reproducible; that voids the privacy of the answers (anyone with the seed can redo the "
    "noise) and is for experiments only: skprivpred's PrivacyWarning about it is silenced here."
)


def run_private(
    spec: EstimatorSpec, data: Dataset, epsilon: float, seed: int, n_jobs: int
) -> dict[str, Any]:
    """Fit one private estimator, answer every test row once, return the measurements."""
    estimator = spec.make_private(spec.make_base(None), epsilon, seed, n_jobs, data)
    with warnings.catch_warnings():
        # Seeded on purpose (a reproducible experiment; see SEEDED_NOTE): one note, not one
        # PrivacyWarning per fit.
        warnings.filterwarnings(
            "ignore", message="an integer random_state", category=PrivacyWarning
        )
        _, fit_seconds = timed(lambda: estimator.fit(data.X_train, data.y_train))
    y_pred, predict_seconds = timed(lambda: estimator.predict(data.X_test))
    n_teachers = getattr(estimator, "n_teachers_", None)
    return {
        "score": _score(data, y_pred),
        "n_teachers": None if n_teachers is None else int(n_teachers),
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
    }


def run_baseline(spec: EstimatorSpec, data: Dataset, seed: int) -> dict[str, Any]:
    """Fit the non-private base pipeline on all training rows and score it."""
    estimator = spec.make_base(seed)
    _, fit_seconds = timed(lambda: estimator.fit(data.X_train, data.y_train))
    y_pred, predict_seconds = timed(lambda: estimator.predict(data.X_test))
    return {
        "score": _score(data, y_pred),
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
    }


def _capped(data: Dataset, max_test_rows: int | None) -> Dataset:
    """The data set with only its first ``max_test_rows`` test rows (smoke tests)."""
    if max_test_rows is None or max_test_rows >= data.X_test.shape[0]:
        return data
    return replace(
        data,
        X_test=data.X_test.iloc[:max_test_rows],
        y_test=data.y_test[:max_test_rows],
        split=f"{data.split}; first {max_test_rows} test rows only",
    )


def warm_up_workers(n_jobs: int) -> None:
    """Start the joblib worker processes once, so the first timed fit does not pay for it."""
    Parallel(n_jobs=n_jobs)(delayed(abs)(-i) for i in range(max(n_jobs, 1)))


#: Fixed cost of one fit (a baseline, a linear model, the overhead of an ensemble), in units
#: of one teacher's fit and votes: a private ensemble of r teachers weighs this plus r. On
#: Adult with LR teachers a fit and its answers took about (8 + r) x 0.3 s on two loaded
#: cores (r = 12 to 443), and a baseline about 8 x 0.3 s.
FIXED_COST_IN_TEACHERS = 8.0


def expected_cost(spec: EstimatorSpec, data: Dataset, epsilon: float) -> float:
    """Expected relative cost of one private fit and its answers, from public quantities.

    Ensembles cost about one teacher per teacher (fit, then votes on the test rows) on
    top of a fixed cost; their number of teachers is a public function of the
    parameters and the number of rows (``n_teachers_for``). Everything else costs the
    fixed cost.
    """
    estimator = spec.make_private(spec.make_base(None), epsilon, 0, 1, data)
    n_teachers_for = getattr(estimator, "n_teachers_for", None)
    if n_teachers_for is None:
        n_teachers = getattr(estimator, "n_teachers", None) or 0
    else:
        n_teachers = n_teachers_for(data.X_train.shape[0], len(CLASSES))  # public label set
    return FIXED_COST_IN_TEACHERS + float(n_teachers)


@contextlib.contextmanager
def warnings_on_their_own_lines():
    """Print warnings through ``tqdm.write``: above the bars on a terminal, whole lines else."""
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        text = warnings.formatwarning(message, category, filename, lineno, line).rstrip("\n")
        tqdm.write(text, file=sys.stderr)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


def run_benchmark(
    config: Config,
) -> tuple[list[dict], list[dict], dict[str, dict], list[dict]]:
    """Every (data set, estimator, epsilon, seed) run and every baseline run.

    Within a stage (data set x estimator) the runs go seed by seed, each seed over
    every epsilon, so that any stretch of the stage mixes cheap and costly fits; the
    stage's bar weighs each fit by :func:`expected_cost` and shows the remaining time
    that those weights predict (:class:`_common.WeightedProgress`), which is checked
    against the real remaining time at half-way.

    Returns
    -------
    runs, baselines : list of dict
        One record per private fit/predict and per baseline fit/predict, sorted by
        data set, estimator, epsilon and seed.
    datasets : dict
        Sizes and split of each data set.
    progress : list of dict
        Per stage, the half-way estimate of the remaining time against the real one.
    """
    tasks = {name: DATASET_TASKS[name] for name in config.datasets}
    stages = [
        (d, e) for d in config.datasets for e in config.estimators if ESTIMATORS[e].task == tasks[d]
    ]
    with warnings_on_their_own_lines():
        return _run_stages(config, stages)


def _run_stages(config: Config, stages: list[tuple[str, str]]):
    runs, baselines, datasets, progress = [], [], {}, []
    fitted_baselines: dict[tuple, dict] = {}  # one fit per (data set, base pipeline, seed)
    # Bars on a terminal only; without one (a log file, CI), plain lines: one per finished
    # fit, one per finished stage, no cursor codes.
    bars = sys.stderr.isatty()
    # One bar counts the stages (data set x estimator); one the fits of the current stage,
    # with the remaining time its cost weights predict. Fits of different estimators differ
    # in cost by 100x, so no single estimate over all stages is given.
    stage_bar = tqdm(
        total=len(stages),
        unit="stage",
        dynamic_ncols=True,
        position=0,
        bar_format="{desc} stage {n_fmt}/{total_fmt} [{elapsed}]",
        disable=not bars,
    )
    stage_bar.set_description("starting workers")
    warm_up_workers(config.n_jobs)
    loaded: dict[str, Dataset] = {}
    for stage_number, (dataset_name, estimator_name) in enumerate(stages, start=1):
        if dataset_name not in loaded:
            stage_bar.set_description(f"loading {dataset_name}")
            data = loaded[dataset_name] = _capped(load_dataset(dataset_name), config.max_test_rows)
            datasets[dataset_name] = {**data.summary(), "trivial_score": trivial_score(data)}
        data = loaded[dataset_name]
        spec = ESTIMATORS[estimator_name]
        stage_bar.set_description(f"{dataset_name}: {label(estimator_name)}")
        key = {"dataset": dataset_name, "estimator": estimator_name}
        start = time.perf_counter()
        # The stage's fits, seed by seed; a baseline fitted by an earlier stage is reused.
        plan: list[tuple[str, int, float | None, float]] = []
        for seed in config.seeds:
            if (dataset_name, spec.make_base, seed) not in fitted_baselines:
                plan.append(("baseline", seed, None, FIXED_COST_IN_TEACHERS))
            plan += [
                ("private", seed, eps, expected_cost(spec, data, eps)) for eps in config.epsilons
            ]
        weighted = WeightedProgress([weight for *_, weight in plan])
        fits = tqdm(
            total=len(plan),
            unit="fit",
            dynamic_ncols=True,
            position=1,
            leave=False,
            bar_format="{desc} {n_fmt}/{total_fmt} fits [{elapsed}{postfix}]",
            disable=not bars,
        )
        for done, (kind, seed, epsilon, _) in enumerate(plan, start=1):
            if kind == "baseline":
                what = f"baseline seed={seed}"
                fits.set_description(what)
                record = fitted_baselines[(dataset_name, spec.make_base, seed)] = run_baseline(
                    spec, data, seed
                )
            else:
                what = f"eps={epsilon:g} seed={seed}"
                fits.set_description(what)
                record = run_private(spec, data, epsilon, seed, config.n_jobs)
                runs.append({**key, "epsilon": epsilon, "seed": seed, **record})
            weighted.task_done()
            fits.set_postfix_str(weighted.remaining_text(), refresh=False)
            fits.update()
            if not bars:
                print(
                    f"[{time.perf_counter() - start:6.1f} s] {dataset_name}: "
                    f"{label(estimator_name)} {what} {METRICS[data.task]} "
                    f"{record['score']:.4f} ({done}/{len(plan)} fits, "
                    f"{weighted.remaining_text() or 'starting'})",
                    flush=True,
                )
        fits.close()
        for seed in config.seeds:
            record = fitted_baselines[(dataset_name, spec.make_base, seed)]
            baselines.append({**key, "seed": seed, **record})
        check = weighted.check()
        if check is not None:
            progress.append({**key, "n_fits": len(plan), **check})
        stage_bar.write(
            f"[{time.perf_counter() - start:6.1f} s] {dataset_name}: {label(estimator_name)} "
            f"done (stage {stage_number}/{len(stages)})"
        )
        sys.stdout.flush()
        stage_bar.update()
    stage_bar.close()
    order = itemgetter("dataset", "estimator", "epsilon", "seed")
    stage_order = {stage: i for i, stage in enumerate(stages)}
    runs.sort(key=lambda r: (stage_order[(r["dataset"], r["estimator"])], *order(r)[2:]))
    return runs, baselines, datasets, progress


def progress_text(progress: list[dict]) -> str:
    """How well each stage's bar predicted its remaining time, at half-way."""
    judged = [p for p in progress if p["passed"] is not None]
    if not judged:
        return (
            "Progress estimates: no stage ran long enough after half-way "
            f"(>= {WeightedProgress.MIN_SECONDS:g} s) to judge its estimate."
        )
    passed = sum(p["passed"] for p in judged)
    lines = [
        f"Progress estimates at half-way of each stage, against the real remaining time: "
        f"{passed} of {len(judged)} within {WeightedProgress.TOLERANCE:g}x "
        f"({verdict(passed == len(judged))}; stages with less than "
        f"{WeightedProgress.MIN_SECONDS:g} s left are not judged)"
    ]
    for p in judged:
        lines.append(
            f"  {verdict(p['passed']):4}  {p['dataset']:8} {label(p['estimator'])}: estimated "
            f"{p['estimate_seconds']:.0f} s, took {p['actual_seconds']:.0f} s "
            f"(x{p['ratio']:.2f})"
        )
    return "\n".join(lines)


# -- summaries, targets, table, plots -----------------------------------------------------
def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    values = list(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), sd


def summarize(runs: list[dict], baselines: list[dict], datasets: dict) -> list[dict]:
    """Mean and standard deviation over seeds, per (data set, estimator, epsilon)."""
    baseline_score = {}
    for key, group in groupby(baselines, key=itemgetter("dataset", "estimator")):
        baseline_score[key] = _mean_sd([r["score"] for r in group])
    summary = []
    for (dataset, estimator, epsilon), group in groupby(
        runs, key=itemgetter("dataset", "estimator", "epsilon")
    ):
        group = list(group)
        score, score_sd = _mean_sd([r["score"] for r in group])
        n_teachers = sorted({r["n_teachers"] for r in group}, key=str)
        summary.append(
            {
                "dataset": dataset,
                "estimator": estimator,
                "label": label(estimator),
                "baseline": baseline_name(ESTIMATORS[estimator].make_base),
                "epsilon": epsilon,
                "n_teachers": n_teachers[0] if len(n_teachers) == 1 else n_teachers,
                "n_seeds": len(group),
                "metric": METRICS[ESTIMATORS[estimator].task],
                "score_mean": score,
                "score_sd": score_sd,
                "baseline_score_mean": baseline_score[(dataset, estimator)][0],
                "baseline_score_sd": baseline_score[(dataset, estimator)][1],
                "trivial_score": datasets[dataset]["trivial_score"],
                "fit_seconds_mean": statistics.fmean(r["fit_seconds"] for r in group),
                "predict_seconds_mean": statistics.fmean(r["predict_seconds"] for r in group),
            }
        )
    return summary


def check_targets(summary: list[dict]) -> list[dict]:
    """Compare mean accuracies with :data:`TARGETS`; also give the best estimator there."""
    results = []
    for target in TARGETS:
        rows = [
            s
            for s in summary
            if s["dataset"] == target.dataset and np.isclose(s["epsilon"], target.epsilon)
        ]
        own = [s for s in rows if s["estimator"] == target.estimator]
        best = max(rows, key=lambda s: s["score_mean"], default=None)
        accuracy = own[0]["score_mean"] if own else None
        best_accuracy = None if best is None else best["score_mean"]
        results.append(
            {
                **asdict(target),
                "accuracy_mean": accuracy,
                "passed": None if accuracy is None else accuracy >= target.min_accuracy,
                "best_estimator": None if best is None else best["estimator"],
                "best_label": None if best is None else label(best["estimator"]),
                "best_accuracy_mean": best_accuracy,
                "best_passed": None if best is None else best_accuracy >= target.min_accuracy,
            }
        )
    return results


def _n_teachers_text(value: Any) -> str:
    if value is None:
        return "-"
    return str(value) if not isinstance(value, list) else "/".join(map(str, value))


def summary_table(summary: list[dict]) -> str:
    """The printed results table."""
    header = [
        "dataset",
        "estimator",
        "epsilon",
        "n_teachers",
        "score (mean ± sd)",
        "baseline",
        "trivial",
        "fit s",
        "predict s",
    ]
    rows = [
        [
            s["dataset"],
            label(s["estimator"]),
            f"{s['epsilon']:g}",
            _n_teachers_text(s["n_teachers"]),
            f"{s['metric']} {s['score_mean']:.4f} ± {s['score_sd']:.4f}",
            f"{s['baseline_score_mean']:.4f}",
            f"{s['trivial_score']:.4f}" + (" !" if _loses_to_trivial(s) else ""),
            f"{s['fit_seconds_mean']:.2f}",
            f"{s['predict_seconds_mean']:.2f}",
        ]
        for s in summary
    ]
    losers = sum(_loses_to_trivial(s) for s in summary)
    note = (
        f"\n'!': {losers} private configuration(s) do no better than the trivial predictor "
        "(majority class; training mean for regression)."
        if losers
        else ""
    )
    return format_table(rows, header) + note


def _loses_to_trivial(s: dict) -> bool:
    """Whether a private configuration scores no better than the trivial predictor."""
    if s["metric"] == "rmse":
        return s["score_mean"] >= s["trivial_score"]
    return s["score_mean"] <= s["trivial_score"]


def targets_text(results: list[dict], note: str = "") -> str:
    """One line per target with PASS/MISS (and the best estimator at that point)."""
    lines = [f"Targets (mean test accuracy over seeds){note}:"]
    for r in results:
        measured = "not run" if r["accuracy_mean"] is None else f"{r['accuracy_mean']:.4f}"
        line = (
            f"  {verdict(r['passed']):4}  {r['dataset']:6} {label(r['estimator'])} "
            f"epsilon={r['epsilon']:<4g} accuracy {measured} (target >= {r['min_accuracy']:.2f})"
        )
        if r["best_estimator"] is not None and r["best_estimator"] != r["estimator"]:
            line += (
                f"; best estimator there: {label(r['best_estimator'])} "
                f"{r['best_accuracy_mean']:.4f} {verdict(r['best_passed'])}"
            )
        lines.append(line)
    return "\n".join(lines)


#: Dash length (points) of the baseline lines.
BASELINE_DASH = 7.0


def baseline_dashes(index: int, count: int) -> tuple[float, tuple[float, float]]:
    """Interleaved dashes: baseline ``index`` of ``count`` draws one dash in every ``count``.

    All baselines share the period ``count * BASELINE_DASH`` and each starts at its own
    offset, so two baselines at the same value alternate their colours along one line
    instead of hiding each other.
    """
    return (index * BASELINE_DASH, (BASELINE_DASH, (count - 1) * BASELINE_DASH or 0.001))


def plot_dataset(summary: list[dict], dataset: str, path: Path) -> Path:
    """Score against epsilon (log scale), mean ± sd, one line per distinct baseline.

    Each baseline is drawn in the colour of the (first) private estimator built on
    it, and its legend entry names the estimators it belongs to; baselines have
    interleaved dashes (:func:`baseline_dashes`), so two at the same value both
    show. The legend sits to the right of the axes, outside the data.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12.0, 4.8))
    rows = [s for s in summary if s["dataset"] == dataset]
    estimators = list(dict.fromkeys(s["estimator"] for s in rows))
    for k, estimator in enumerate(estimators):
        own = sorted((s for s in rows if s["estimator"] == estimator), key=lambda s: s["epsilon"])
        ax.errorbar(
            [s["epsilon"] for s in own],
            [s["score_mean"] for s in own],
            yerr=[s["score_sd"] for s in own],
            marker="os^vDP"[k % 6],
            capsize=3,
            color=f"C{k}",
            label=label(estimator),
        )
    baselines: dict[str, dict[str, Any]] = {}
    for s in rows:  # one line per distinct baseline, whichever estimators share it
        entry = baselines.setdefault(
            s["baseline"], {"score": s["baseline_score_mean"], "estimators": []}
        )
        if s["estimator"] not in entry["estimators"]:
            entry["estimators"].append(s["estimator"])
    metric = rows[0]["metric"]
    for j, (name, entry) in enumerate(baselines.items()):
        score = entry["score"]
        owners = ", ".join(label(e) for e in entry["estimators"])
        value = f"{score:.1f}" if metric == "rmse" else f"{score:.3f}"
        color = f"C{estimators.index(entry['estimators'][0])}"
        ax.axhline(score, linestyle=baseline_dashes(j, len(baselines)), linewidth=2.2, color=color)
        # The legend shows a plain dashed line (an offset dash could fall outside its handle).
        ax.plot(
            [],
            [],
            linestyle=(0, (BASELINE_DASH / 2, BASELINE_DASH / 4)),
            linewidth=2.2,
            color=color,
            label=f"{name}: {value}\n  baseline of {owners}",
        )
    trivial = rows[0]["trivial_score"]
    ax.axhline(
        trivial,
        linestyle=":",
        linewidth=2,
        color="grey",
        label=("constant (training mean)" if metric == "rmse" else "majority class")
        + (f": {trivial:.1f}" if metric == "rmse" else f": {trivial:.3f}"),
    )
    epsilons = sorted({s["epsilon"] for s in rows})
    ax.set_xscale("log")
    ax.set_xticks(epsilons)
    ax.set_xticklabels([f"{e:g}" for e in epsilons])
    ax.minorticks_off()
    ax.set_xlabel("per-query epsilon")
    ax.set_ylabel(f"test {metric}" + (" (lower is better)" if metric == "rmse" else ""))
    n_seeds = max(s["n_seeds"] for s in rows)
    seeds = f"{n_seeds} seed" + ("s" if n_seeds > 1 else "")
    ax.set_title(f"{dataset}: {metric} of private predictions (mean ± sd over {seeds})")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(
        fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        title="private (markers) / non-private baselines (dashed, colour of their estimator)",
        title_fontsize="small",
        handlelength=3.0,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


# -- command line -------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--datasets",
        nargs="+",
        choices=list(DATASETS),
        default=list(DATASETS),
        help="data sets (default: all)",
    )
    parser.add_argument(
        "--estimators",
        nargs="+",
        choices=list(ESTIMATORS),
        default=DEFAULT_ESTIMATORS,
        help="private estimators, see ESTIMATORS in this file (default: all but "
        + ", ".join(name for name in ESTIMATORS if name not in DEFAULT_ESTIMATORS)
        + ")",
    )
    parser.add_argument(
        "--epsilons",
        nargs="+",
        type=float,
        default=None,
        help=f"per-query epsilons (default: {', '.join(map(str, DEFAULT_EPSILONS))})",
    )
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=None,
        help=f"random_state values (default: 0 to {DEFAULT_N_SEEDS - 1})",
    )
    parser.add_argument(
        "--n-jobs", type=int, default=2, help="joblib jobs for teacher fitting (default: 2)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="native (BLAS/OpenMP) threads per process (default: 1)",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="results folder (default: %(default)s)"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--full",
        action="store_true",
        help=(
            f"{FULL_N_SEEDS} seeds and epsilons {', '.join(map(str, FULL_EPSILONS))} (slow); "
            "--epsilons and --seeds still override"
        ),
    )
    mode.add_argument(
        "--quick",
        action="store_true",
        help=(
            f"smoke test: 1 seed, epsilon {', '.join(map(str, QUICK_EPSILONS))}, "
            f"first {QUICK_TEST_ROWS} test rows only"
        ),
    )
    return parser.parse_args(argv)


def make_config(args: argparse.Namespace) -> Config:
    """Resolve the defaults of ``--full`` / ``--quick`` / default mode."""
    if args.full:
        mode, epsilons, n_seeds, max_test_rows = "full", FULL_EPSILONS, FULL_N_SEEDS, None
    elif args.quick:
        mode, epsilons, n_seeds, max_test_rows = "quick", QUICK_EPSILONS, 1, QUICK_TEST_ROWS
    else:
        mode, epsilons, n_seeds, max_test_rows = "default", DEFAULT_EPSILONS, DEFAULT_N_SEEDS, None
    return Config(
        datasets=list(dict.fromkeys(args.datasets)),
        estimators=list(dict.fromkeys(args.estimators)),
        epsilons=sorted(set(args.epsilons or epsilons)),
        seeds=list(dict.fromkeys(args.seeds if args.seeds is not None else range(n_seeds))),
        n_jobs=args.n_jobs,
        threads=args.threads,
        max_test_rows=max_test_rows,
        mode=mode,
        out=args.out,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table and the targets, write JSON and plots."""
    config = make_config(parse_args(argv))
    print(SEEDED_NOTE)
    start = time.perf_counter()
    with threadpool_limits(limits=config.threads):
        runs, baselines, datasets, progress = run_benchmark(config)
    wall_seconds = time.perf_counter() - start

    summary = summarize(runs, baselines, datasets)
    targets = check_targets(summary)
    note = " - QUICK RUN, not meaningful" if config.mode == "quick" else ""
    print()
    print(summary_table(summary))
    print()
    print(targets_text(targets, note))
    print()
    print(progress_text(progress))

    results_dir = config.out
    payload = {
        "benchmark": "accuracy (or RMSE) vs per-query epsilon (benchmarks/run.py)",
        "config": asdict(config),
        "environment": environment(),
        "datasets": datasets,
        "wall_seconds": wall_seconds,
        "summary": summary,
        "targets": targets,
        "progress_estimates": progress,
        "runs": runs,
        "baselines": baselines,
    }
    written = [write_json(results_dir / "run_results.json", payload)]
    for dataset in config.datasets:
        written.append(
            plot_dataset(summary, dataset, results_dir / f"score_vs_epsilon_{dataset}.png")
        )
    print()
    print(f"Wall time {wall_seconds:.0f} s. Wrote: " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
