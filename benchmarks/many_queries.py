"""Many queries under one total budget, on Adult (issue 9).

What is measured
----------------
``SubsampleAggregateClassifier`` with logistic-regression teachers (one-hot
encoding and scaling fitted *inside* each teacher) and a public rule for the
number of teachers (``min_samples_per_teacher``), for total budgets
``(epsilon, delta) = (1, 1e-6)`` and ``(2, 1e-6)``:

1. **Horizon at accuracy >= 0.80, per accounting.** For a horizon ``q`` each
   accounting gives a per-row epsilon: basic composition ``epsilon / q``;
   advanced composition (Dwork–Rothblum–Vadhan with ``delta' = delta``, or
   basic if better); zCDP of the bounded-range vote (``rho = eps0^2/8`` per row,
   tight conversion). The expected accuracy of an answer to a random test row
   is computed exactly from the teachers' votes (the non-private diagnostic
   ``_output_distribution``, fine in a benchmark); the largest ``q`` with
   expected accuracy >= 0.80 is reported for each.
2. **A live session.** A fresh estimator with the zCDP horizon answers that many
   test rows (real noisy answers), then hands off to a student
   (logistic regression on the released pairs), which answers every other test
   row at no further cost. Target: >= 700 live answers at >= 0.80 under
   ``(1, 1e-6)`` and a student at >= 0.82.
3. **Private training**, for comparison: diffprivlib's DP logistic regression at
   the same total budget, if it imports with the installed scikit-learn
   (diffprivlib 0.6.6 needs scikit-learn < 1.8; ``benchmarks/peers.py`` runs the
   full comparison in an environment of its own). It is configured for a private
   run as in ``peers.py``: the public design matrix of ``_design.py`` (fitted to
   no row), the public row-norm bound ``data_norm``; a ``PrivacyLeakWarning``
   is an error.

4. **One release, unlimited answers** (issue 34):
   ``SufficientStatisticClassifier`` behind ``public_preprocessor(schema)`` on
   Adult and MAGIC at ``(1, 1e-6)`` in all, with 25 % of the training file as
   unlabelled public rows (a random split per seed), mean, sd and worst run
   over 5 splits x 2 release draws; a second table for 10 % and 5 % public
   (5 splits); fit time on Adult and answers per second in batches of 10,000
   rows; the regressor's R^2 on diabetes and on a synthetic target
   (``benchmarks/_sufficient.py`` states the protocol). Targets: MAGIC >= 0.845
   and Adult >= 0.85 mean, every run >= 0.835 / 0.845; fit <= 2 s on Adult;
   >= 100,000 answers per second. diffprivlib's line in the same run is in
   ``benchmarks/peers.py`` (its own environment).

Outputs: a table, ``many_queries_results.json`` and ``accuracy_vs_queries.png``
(expected accuracy against the horizon, one line per accounting) in ``--out``.

Usage
-----
From the repository root::

    .venv/bin/python benchmarks/many_queries.py            # ~2 min
    .venv/bin/python benchmarks/many_queries.py --quick    # smaller, for a smoke test
    .venv/bin/python benchmarks/many_queries.py --sufficient-only   # part 4 only, ~3 min
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from _common import DEFAULT_OUT, environment, format_table, load_dataset, verdict, write_json
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits

from skprivpred import SubsampleAggregateClassifier
from skprivpred.accounting import advanced_composition_epsilon, per_query_epsilon
from skprivpred.mechanisms import exponential_mechanism_proba

CLASSES = [0, 1]
BUDGETS = ((1.0, 1e-6), (2.0, 1e-6))
MIN_ACCURACY = 0.80
TARGET_QUERIES = 700
TARGET_STUDENT = 0.82
HORIZONS = np.unique(np.round(np.logspace(0, 5, 400)).astype(int))


def teacher_pipeline() -> Pipeline:
    """One-hot + scaling + logistic regression, fitted on each teacher's rows only."""
    preprocess = ColumnTransformer(
        [
            (
                "categorical",
                OneHotEncoder(handle_unknown="ignore"),
                make_column_selector(dtype_include=["category", "object", "string"]),
            ),
            ("numeric", StandardScaler(), make_column_selector(dtype_include="number")),
        ]
    )
    return Pipeline([("preprocess", preprocess), ("classify", LogisticRegression(max_iter=1000))])


def advanced_epsilon_per_query(epsilon: float, delta: float, q: int) -> float:
    """Largest per-row epsilon whose q-fold advanced composition (delta' = delta) fits."""
    lo, hi = 0.0, epsilon
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if advanced_composition_epsilon(mid, q, delta) <= epsilon else (lo, mid)
    return max(lo, epsilon / q)


ACCOUNTINGS = {
    "basic": lambda eps, delta, q: eps / q,
    "advanced": advanced_epsilon_per_query,
    "zcdp": per_query_epsilon,
}


def expected_accuracy(counts: np.ndarray, y: np.ndarray, eps0: float) -> float:
    """Exact expected accuracy of one soft-majority answer to a random test row."""
    return float(np.mean(exponential_mechanism_proba(counts, eps0)[np.arange(len(y)), y]))


def largest_horizon(counts, y, epsilon, delta, accounting) -> tuple[int, list[float]]:
    """Largest horizon on the grid whose expected accuracy stays >= MIN_ACCURACY."""
    per_row = ACCOUNTINGS[accounting]
    curve = [expected_accuracy(counts, y, per_row(epsilon, delta, int(q))) for q in HORIZONS]
    ok = [int(q) for q, a in zip(HORIZONS, curve) if a >= MIN_ACCURACY]
    return (max(ok) if ok else 0), curve


def live_session(data, per_teacher, epsilon, delta, horizon, seed) -> dict:
    """Answer ``horizon`` test rows privately, then hand off to a student for the rest."""
    clf = SubsampleAggregateClassifier(
        teacher_pipeline(),
        classes=CLASSES,
        min_samples_per_teacher=per_teacher,
        n_queries=horizon,
        total_epsilon=epsilon,
        total_delta=delta,
        student=teacher_pipeline(),
        n_jobs=2,
        random_state=seed,
    ).fit(data.X_train, data.y_train)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(data.y_test))
    live, later = order[:horizon], order[horizon:]
    answers = clf.predict(data.X_test.iloc[live])
    clf.fit_student()
    student_answers = clf.predict(data.X_test.iloc[later])
    return {
        "live_queries": int(horizon),
        "live_accuracy": float(np.mean(answers == data.y_test[live])),
        "student_queries": int(len(later)),
        "student_accuracy": float(np.mean(student_answers == data.y_test[later])),
        "epsilon_per_query": clf.epsilon_per_query_,
        "n_teachers": int(clf.n_teachers_),
    }


def private_training(data, epsilon, seeds=range(10)) -> dict:
    """diffprivlib's DP logistic regression at the same total budget, if it can be imported.

    Trained on the public design matrix with the public row-norm bound
    (``data_norm``), as in ``benchmarks/peers.py``; mean test accuracy over
    ``seeds``. Anything diffprivlib would read from the data raises.
    """
    try:
        from _peers import diffprivlib_model, load_design
        from diffprivlib.utils import PrivacyLeakWarning
    except Exception as exc:  # not installed, or incompatible with this scikit-learn
        return {
            "available": False,
            "reason": f"{type(exc).__name__}: {exc}; run benchmarks/peers.py for the comparison",
        }
    design = load_design(data.name)
    accuracies = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        for seed in seeds:
            model = diffprivlib_model("dp-lr", design, epsilon, seed).fit(design.X, design.y)
            accuracies.append(float(np.mean(model.predict(design.X_test) == design.y_test)))
    return {"available": True, "accuracy": float(np.mean(accuracies)), "n_seeds": len(accuracies)}


def plot(curves: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (budget, accounting), curve in curves.items():
        style = "-" if budget == BUDGETS[0] else "--"
        ax.plot(HORIZONS, curve, style, label=f"{accounting}, total eps={budget[0]:g}")
    ax.axhline(MIN_ACCURACY, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("queries answered (horizon q)")
    ax.set_ylabel("expected accuracy per answer")
    ax.set_title("Adult: soft majority under one total budget (delta = 1e-6)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sufficient_section(quick: bool) -> dict:
    """Part 4: the one-release estimators (tables printed, results returned)."""
    import _sufficient as suff

    splits, draws = (2, 1) if quick else (5, 2)
    budget = BUDGETS[0]
    runs, speed = [], {}
    with threadpool_limits(1):
        for name in ("adult", "magic"):
            data = suff.preprocessed(name)
            runs += suff.classifier_runs(data, budget, 0.25, splits, draws)
            for public in (0.10, 0.05):
                runs += suff.classifier_runs(data, budget, public, splits, 1)
            speed[name] = {
                "answers_per_second": suff.answers_per_second(data),
                "preprocess_rows_per_second": data["preprocess_rows_per_second"],
            }
        regression = suff.regressor_runs(2 if quick else 5)
    table = suff.summary(runs)
    print("\nSufficientStatisticClassifier, (1, 1e-6) in all, public rows unlabelled (y = -1)")
    print(
        format_table(
            [
                [
                    r["dataset"],
                    f"{r['public']:.0%}",
                    f"{r['mean']:.4f}",
                    f"{r['sd']:.4f}",
                    f"{r['worst']:.4f}",
                    r["n_runs"],
                    f"{r['fit_seconds_median']:.2f}",
                ]
                for r in table
            ],
            ["data", "public", "mean acc.", "sd", "worst", "runs", "fit s (median)"],
        )
    )
    verdicts = []
    for r in table:
        if r["public"] == 0.25:
            mean_target, run_target = suff.TARGETS[r["dataset"]]
            verdicts.append(
                f"{verdict(r['mean'] >= mean_target and r['worst'] >= run_target)}  "
                f"{r['dataset']}: mean {r['mean']:.4f} >= {mean_target}, every run "
                f"{r['worst']:.4f} >= {run_target}"
            )
    adult_fit = next(r for r in table if r["dataset"] == "adult" and r["public"] == 0.25)
    verdicts.append(
        f"{verdict(adult_fit['fit_seconds_median'] <= suff.TARGET_FIT_SECONDS)}  fit on Adult "
        f"{adult_fit['fit_seconds_median']:.2f} s <= {suff.TARGET_FIT_SECONDS} s"
    )
    for name, v in speed.items():
        verdicts.append(
            f"{verdict(v['answers_per_second'] >= suff.TARGET_ANSWERS_PER_SECOND)}  {name}: "
            f"{v['answers_per_second']:,.0f} answers/s in batches of {suff.BATCH:,} "
            f"(public preprocessing apart: {v['preprocess_rows_per_second']:,.0f} rows/s)"
        )
    print("\n".join(verdicts))
    print("\nSufficientStatisticRegressor, (1, 1e-6), 25 % public rows (y = NaN)")
    print(
        format_table(
            [
                [r["dataset"], r["n_train"], f"{r['r2_mean']:.3f}", f"{r['r2_sd']:.3f}"]
                for r in regression
            ],
            ["data", "train rows", "R^2 mean", "sd"],
        )
    )
    return {"runs": runs, "summary": table, "speed": speed, "regression": regression}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--min-samples-per-teacher",
        type=int,
        default=80,
        help="public rule for the number of teachers (default: 80 rows each)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true", help="smaller teachers count, for a smoke test"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--sufficient-only",
        action="store_true",
        help="only part 4 (SufficientStatisticClassifier / Regressor)",
    )
    args = parser.parse_args(argv)
    if args.sufficient_only:
        start = time.perf_counter()
        results = sufficient_section(args.quick)
        payload = {
            "benchmark": "one release, unlimited answers (benchmarks/many_queries.py part 4)",
            "environment": environment(),
            "sufficient_statistic": results,
            "wall_seconds": time.perf_counter() - start,
        }
        path = write_json(args.out / "many_queries_sufficient_results.json", payload)
        print(f"\nWrote {path}")
        return 0
    per_teacher = 800 if args.quick else args.min_samples_per_teacher
    start = time.perf_counter()
    data = load_dataset("adult")
    with threadpool_limits(1):
        clf = SubsampleAggregateClassifier(
            teacher_pipeline(),
            classes=CLASSES,
            min_samples_per_teacher=per_teacher,
            n_jobs=2,
            random_state=args.seed,
        ).fit(data.X_train, data.y_train)
        counts = clf._vote_counts(data.X_test)  # non-private diagnostic: benchmark only
        majority = float(np.mean(np.argmax(counts, axis=1) == data.y_test))
        rows, curves, sessions = [], {}, {}
        for budget in BUDGETS:
            for accounting in ACCOUNTINGS:
                q, curves[(budget, accounting)] = largest_horizon(
                    counts, data.y_test, *budget, accounting
                )
                rows.append([f"({budget[0]:g}, {budget[1]:g})", accounting, q])
            q_zcdp = largest_horizon(counts, data.y_test, *budget, "zcdp")[0]
            sessions[budget] = live_session(data, per_teacher, *budget, max(q_zcdp, 1), args.seed)
        baseline = private_training(data, BUDGETS[0][0])
    wall = time.perf_counter() - start

    print(
        f"Adult, {clf.n_teachers_} LR teachers ({per_teacher} rows each); "
        f"exact teacher majority accuracy {majority:.4f}\n"
    )
    print(
        format_table(
            rows, ["total (eps, delta)", "accounting", f"queries at accuracy >= {MIN_ACCURACY}"]
        )
    )
    print()
    live_rows = [
        [
            f"({b[0]:g}, {b[1]:g})",
            s["live_queries"],
            f"{s['epsilon_per_query']:.5f}",
            f"{s['live_accuracy']:.4f}",
            s["student_queries"],
            f"{s['student_accuracy']:.4f}",
        ]
        for b, s in sessions.items()
    ]
    print(
        format_table(
            live_rows,
            [
                "total",
                "live queries",
                "eps0",
                "live accuracy",
                "student queries",
                "student accuracy",
            ],
        )
    )
    first = sessions[BUDGETS[0]]
    print(
        f"\n{verdict(first['live_queries'] >= TARGET_QUERIES)}  >= {TARGET_QUERIES} live queries "
        f"at >= {MIN_ACCURACY} under (1, 1e-6): {first['live_queries']}"
    )
    print(
        f"{verdict(first['student_accuracy'] >= TARGET_STUDENT)}  student accuracy >= "
        f"{TARGET_STUDENT}: {first['student_accuracy']:.4f}"
    )
    if baseline["available"]:
        print(
            "private training (diffprivlib DP logistic regression on the public design, "
            f"public data_norm, eps=1, mean of {baseline['n_seeds']} seeds): "
            f"{baseline['accuracy']:.4f}"
        )
    else:
        print(
            "private training baseline not run: diffprivlib does not import here "
            f"({baseline['reason']})"
        )
    payload = {
        "benchmark": "many queries under one total budget (benchmarks/many_queries.py)",
        "environment": environment(),
        "n_teachers": int(clf.n_teachers_),
        "majority_accuracy": majority,
        "horizons": [{"budget": r[0], "accounting": r[1], "queries": r[2]} for r in rows],
        "sessions": {str(b): s for b, s in sessions.items()},
        "private_training": baseline,
        "wall_seconds": wall,
    }
    written = [
        write_json(args.out / "many_queries_results.json", payload),
        plot(curves, args.out / "accuracy_vs_queries.png"),
    ]
    sufficient = sufficient_section(args.quick)
    payload["sufficient_statistic"] = sufficient
    written[0] = write_json(args.out / "many_queries_results.json", payload)
    print(f"\nWall time {wall:.0f} s. Wrote: {', '.join(map(str, written))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
