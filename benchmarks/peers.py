"""Side by side with the peers: skprivpred against diffprivlib 0.6.6.

diffprivlib (IBM) trains a model privately and then answers any number of
queries for free; skprivpred keeps the model and makes every *answer* private.
This script measures both on the same public design matrix (``_design.py``:
fixed transforms from the published schemas, fitted to no row; Adult with its
published split, MAGIC with ``run.py``'s seeded stratified split).

What is measured
----------------
1. **Accuracy against epsilon** (Adult, MAGIC). diffprivlib's
   ``LogisticRegression``, ``GaussianNB`` and ``RandomForestClassifier`` at
   *total* epsilon (then unlimited queries), configured as its documentation
   says for a private run: public ``data_norm`` (the schema's row-norm bound),
   per-column ``bounds`` (from the schema), ``classes=[0, 1]``. Next to them
   ``SubsampleAggregateClassifier`` with LR teachers at *per-query* epsilon
   (each test row answered once, real noisy answers) and the non-private
   models (diffprivlib's forest shape, 10 trees of depth 5, for the forest).
2. **The crossover** (Adult and MAGIC). Under one total
   budget (epsilon = 1 and 2, delta = 1e-6), the exact expected accuracy of one
   answer against the number of queries ``q`` the session answers (the
   horizon ``n_queries``), for ``SubsampleAggregateClassifier(n_queries=q,
   total_epsilon=..., total_delta=...)`` with its default teacher rule and with
   a fixed number of rows per teacher (80 and 40: 407 and 814 teachers on
   Adult); the answer law is the estimator's own, computed from the teachers'
   votes through its non-private diagnostic (fine in a benchmark, never in a
   deployment), so the curves carry no sampling noise beyond the one random
   partition (seed 0). diffprivlib's DP logistic regression at the same total
   budget is flat (mean over 6 trainings, 20 in the default run). The **student
   hand-off** (live sessions with real answers, then a scaling + LR student
   fitted on the released pairs answers every other test row for free) is
   shown at a few horizons. Each crossing of a curve with the diffprivlib
   line is marked and tabulated.
3. **One release, unlimited answers** (issue 34). ``SufficientStatisticClassifier``
   behind ``public_preprocessor(schema)`` at the same total budgets, with 25 % of
   the training file as unlabelled public rows (random split per seed; mean, sd
   and worst over splits x release draws, ``benchmarks/_sufficient.py``): a flat
   line on the crossover plot (every answer is free), beside diffprivlib's line
   measured in the same run.

A ``PrivacyLeakWarning`` from diffprivlib is an error: the run stops.

Outputs, in ``--out`` (default ``benchmarks/results/peers/``):
``peers_results.md`` (the tables), ``peers_results.json`` (configuration,
versions, every measurement), ``peers_accuracy_vs_epsilon.png`` and
``peers_crossover_<dataset>.png``.

Usage
-----
From the repository root (any Python >= 3.10; the script builds and re-runs
itself in ``benchmarks/.peers-venv``: scikit-learn 1.7.2, diffprivlib 0.6.6,
skprivpred from this checkout)::

    python benchmarks/peers.py --quick   # 4.5 min on two busy cores (+1 min to build the venv)
    python benchmarks/peers.py           # the default run, 13 min
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peers_env  # noqa: E402  (standard library only)

QUICK: dict[str, Any] = {
    "sufficient": (5, 1),  # (splits, release draws) of the one-release estimator
    "epsilons": (0.1, 0.5, 1.0, 2.0, 5.0),
    "seeds": (0, 1),
    "dp_seeds": 6,
    "crossover_datasets": ("adult", "magic"),
    "horizons": 15,
    "student_horizons": (1000, 5000),
    "student_seeds": (0,),
}
DEFAULT: dict[str, Any] = {
    "sufficient": (5, 2),  # (splits, release draws) of the one-release estimator
    "epsilons": (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0),
    "seeds": (0, 1, 2, 3, 4),
    "dp_seeds": 20,
    "crossover_datasets": ("adult", "magic"),
    "horizons": 31,
    "student_horizons": (250, 1000, 2500, 5000, 10000),
    "student_seeds": (0, 1),
}
#: A smoke test of the whole script (about a minute; numbers not meaningful).
SMOKE: dict[str, Any] = {
    "sufficient": (1, 1),  # (splits, release draws) of the one-release estimator
    "epsilons": (1.0, 2.0),
    "seeds": (0,),
    "dp_seeds": 2,
    "crossover_datasets": ("adult",),
    "horizons": 4,
    "student_horizons": (1000,),
    "student_seeds": (0,),
}
BUDGETS = ((1.0, 1e-6), (2.0, 1e-6))
ROWS_PER_TEACHER = (80, 40)
DATASETS = ("adult", "magic")


def parse_args(argv):
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help="2 seeds, coarser horizon grid, 2 student sessions"
    )
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help="results folder")
    parser.add_argument("--n-jobs", type=int, default=1, help="joblib jobs for teacher fits")
    parser.add_argument(
        "--rebuild-venv", action="store_true", help="rebuild benchmarks/.peers-venv first"
    )
    parser.add_argument(
        "--no-venv",
        action="store_true",
        help="run in this interpreter (it must have diffprivlib and a scikit-learn it supports)",
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if not args.no_venv and (args.rebuild_venv or not _peers_env.inside()):
        rest = [a for a in argv if a != "--rebuild-venv"]
        _peers_env.reexec_inside(Path(__file__), rest, rebuild=args.rebuild_venv)
    return run(args)


def run(args) -> int:
    import time
    import warnings

    import _peers
    import _peers_report as report
    import numpy as np
    from _common import DEFAULT_OUT, environment, write_json
    from diffprivlib.utils import PrivacyLeakWarning
    from threadpoolctl import threadpool_limits

    # A private run must not read any bound from the data: a leak stops the run.
    warnings.filterwarnings("error", category=PrivacyLeakWarning)
    # Seeded on purpose (a reproducible experiment); the estimators warn about it each fit.
    warnings.filterwarnings("ignore", message="an integer random_state seeds the noise")
    settings = SMOKE if args.smoke else QUICK if args.quick else DEFAULT
    out = args.out or DEFAULT_OUT / "peers"
    horizons = np.unique(np.round(np.logspace(1, 5, settings["horizons"])).astype(int)).tolist()
    start = time.perf_counter()
    stages: dict[str, float] = {}
    results: dict = {
        "accuracy": [],
        "dp_levels": [],
        "curves": [],
        "students": [],
        "sufficient": [],
    }
    with threadpool_limits(1):
        designs = {}
        for name in DATASETS:
            t0 = time.perf_counter()
            designs[name] = design = _peers.load_design(name)
            with report.Stage(f"{name}: accuracy vs epsilon") as stage:
                results["accuracy"] += _peers.accuracy_vs_epsilon(
                    design,
                    settings["epsilons"],
                    settings["seeds"],
                    n_jobs=args.n_jobs,
                    tick=stage.tick,
                )
            stages[f"{name} accuracy vs epsilon"] = time.perf_counter() - t0
        for name in settings["crossover_datasets"]:
            design = designs[name]
            t0 = time.perf_counter()
            with report.Stage(f"{name}: diffprivlib LR at the total budgets") as stage:
                for budget in BUDGETS:
                    for seed in range(settings["dp_seeds"]):
                        stage.tick(f"eps={budget[0]:g} seed={seed}")
                        model = _peers.diffprivlib_model("dp-lr", design, budget[0], 1000 + seed)
                        accuracy = float(
                            np.mean(
                                model.fit(design.X, design.y).predict(design.X_test)
                                == design.y_test
                            )
                        )
                        results["dp_levels"].append(
                            {
                                "dataset": name,
                                "budget": list(budget),
                                "seed": 1000 + seed,
                                "accuracy": accuracy,
                            }
                        )
            with report.Stage(f"{name}: crossover curves (exact)") as stage:
                results["curves"] += _peers.crossover_curves(
                    design,
                    BUDGETS,
                    horizons,
                    ROWS_PER_TEACHER,
                    0,
                    n_jobs=args.n_jobs,
                    tick=stage.tick,
                )
            with report.Stage(f"{name}: student hand-off") as stage:
                results["students"] += _peers.student_sessions(
                    design,
                    BUDGETS,
                    settings["student_horizons"],
                    settings["student_seeds"],
                    n_jobs=args.n_jobs,
                    tick=stage.tick,
                )
            with report.Stage(f"{name}: one release (SufficientStatisticClassifier)") as stage:
                import _sufficient

                data = _sufficient.preprocessed(name)
                splits, draws = settings["sufficient"]
                for budget in BUDGETS:
                    results["sufficient"] += _sufficient.classifier_runs(
                        data, budget, 0.25, splits, draws, tick=stage.tick
                    )
            stages[f"{name} crossover"] = time.perf_counter() - t0
    wall = time.perf_counter() - start

    import diffprivlib

    summary = report.summarize(results, designs)
    markdown = report.markdown(summary, quick=args.quick or args.smoke, wall=wall)
    print("\n" + markdown)
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers_results.md").write_text(markdown + "\n", encoding="utf-8")
    written = [out / "peers_results.md"]
    payload = {
        "benchmark": "skprivpred next to diffprivlib (benchmarks/peers.py)",
        "mode": "smoke" if args.smoke else "quick" if args.quick else "default",
        "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()},
        "budgets": [list(b) for b in BUDGETS],
        "rows_per_teacher": list(ROWS_PER_TEACHER),
        "horizons": horizons,
        "privacy_leak_warning": "error",
        "environment": {**environment(), "diffprivlib": diffprivlib.__version__},
        "wall_seconds": wall,
        "stage_seconds": stages,
        "summary": summary,
        **results,
    }
    written.append(write_json(out / "peers_results.json", payload))
    written.append(report.plot_accuracy(summary, out / "peers_accuracy_vs_epsilon.png"))
    for name in settings["crossover_datasets"]:
        written.append(report.plot_crossover(summary, name, out / f"peers_crossover_{name}.png"))
    print(f"\nWall time {wall:.0f} s. Wrote: " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
