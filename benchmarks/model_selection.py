"""Private hyper-parameter search on Adult: how good is the private pick?

What is measured
----------------
The grid: logistic-regression teachers with ``C`` in {0.01, 0.1, 1, 10} and
``n_teachers`` (r) in {23, 100, 400} for ``SubsampleAggregateClassifier`` at
``epsilon = 1`` per answered row, on the public design matrix of
``_design.py`` (Adult published split).

* The accuracy of each candidate, ``acc_k``: the candidate refitted on the whole
  training split, its *exact expected* accuracy on the test split (the mean
  probability of the true label under its answer law, from the non-private
  diagnostic ``_output_distribution``).
* For each of ``--repetitions`` searches (fresh split, partitions and seeds): the
  candidates' held-out scores, then the exact law of the selected index
  (``PrivateGridSearchCV._selection_law``), hence the exact expected accuracy of
  the pick ``sum_k P(k) acc_k`` and its regret ``max_k acc_k - sum_k P(k) acc_k``.
  Reported: the mean over repetitions, for the full grid and for tuning ``r`` at
  ``C = 1``, at several selection budgets, next to a uniformly random pick and
  the non-private pick (the argmax of the same held-out scores).
* Once: scikit-learn's ``GridSearchCV`` (3 folds, accuracy of the private answers,
  not accounted) on the same grid, and the accuracy of its choice.

Targets: tuning r at C = 1 with ``selection_epsilon = 2``: mean regret <= 0.004;
the full grid at ``selection_epsilon = 5``: mean regret <= 0.008.

Usage
-----
From the repository root::

    .venv/bin/python benchmarks/model_selection.py        # about 5 minutes
    .venv/bin/python benchmarks/model_selection.py --repetitions 5 --no-sklearn
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from _common import DEFAULT_OUT, environment, format_table, load_dataset, verdict, write_json
from _design import public_design
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, ParameterGrid

from skprivpred import PrivateGridSearchCV, SubsampleAggregateClassifier

C_VALUES = [0.01, 0.1, 1.0, 10.0]
R_VALUES = [23, 100, 400]
GRID = {"estimator__C": C_VALUES, "n_teachers": R_VALUES}
SETTINGS = [  # (label, sub-grid filter, selection epsilon, selection, target regret)
    ("full grid", None, 1.0, "exponential", None),
    ("full grid", None, 2.0, "exponential", None),
    ("full grid", None, 5.0, "exponential", 0.008),
    ("full grid", None, 5.0, "noisy_max", None),
    ("r at C = 1", 1.0, 1.0, "exponential", None),
    ("r at C = 1", 1.0, 2.0, "exponential", 0.004),
    ("r at C = 1", 1.0, 2.0, "noisy_max", None),
    ("r at C = 1", 1.0, 5.0, "exponential", None),
]


def template() -> SubsampleAggregateClassifier:
    return SubsampleAggregateClassifier(
        LogisticRegression(max_iter=1000), epsilon=1.0, classes=[0, 1]
    )


def expected_accuracy(clf, X, y) -> float:
    """Exact expected accuracy of the private answers (non-private diagnostic)."""
    law = clf._output_distribution(X)
    return float(np.mean(law[np.arange(y.size), y]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--no-sklearn", action="store_true", help="skip GridSearchCV")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # seeded experiment: the seed warnings are expected

    data = load_dataset("adult")
    X, X_test = public_design(data.X_train), public_design(data.X_test)
    y, y_test = data.y_train, data.y_test
    candidates = list(ParameterGrid(GRID))
    started = time.perf_counter()

    acc = np.array(
        [
            expected_accuracy(
                template().set_params(**c, random_state=args.seed).fit(X, y), X_test, y_test
            )
            for c in candidates
        ]
    )
    print(
        format_table(
            [[c["estimator__C"], c["n_teachers"], f"{a:.4f}"] for c, a in zip(candidates, acc)],
            ["C", "r", "expected accuracy"],
        )
    )

    search = PrivateGridSearchCV(template(), GRID, n_jobs=args.n_jobs)
    assert [dict(c) for c in search._check_params()] == candidates
    rng = np.random.default_rng(args.seed)
    rep_scores, rep_m = [], []
    for _ in range(args.repetitions):
        split = search._split(y.size, search.validation_size, rng)
        r = search._public_teachers(candidates, split[0].size)
        rep_scores.append(search._scores(X, y, candidates, split, r, rng))
        rep_m.append(split[1].size)

    rows, results = [], []
    for label, c_fixed, epsilon, selection, target in SETTINGS:
        search.set_params(selection=selection)
        keep = np.array([c_fixed is None or c["estimator__C"] == c_fixed for c in candidates])
        sub_acc = acc[keep]
        r = [c["n_teachers"] for c, k in zip(candidates, keep) if k]
        picks, nonprivate = [], []
        for scores, m in zip(rep_scores, rep_m):
            law = search._selection_law(scores[keep], epsilon, search._sensitivities(r, m))
            picks.append(float(law @ sub_acc))
            nonprivate.append(float(sub_acc[np.argmax(scores[keep])]))
        best = float(sub_acc.max())
        regret = best - float(np.mean(picks))
        row = {
            "setting": label,
            "selection_epsilon": epsilon,
            "selection": selection,
            "best_candidate": best,
            "private_pick": float(np.mean(picks)),
            "regret": regret,
            "random_pick_regret": best - float(sub_acc.mean()),
            "non_private_pick_regret": best - float(np.mean(nonprivate)),
            "target": target,
            "passed": None if target is None else regret <= target,
        }
        results.append(row)
        rows.append(
            [
                label,
                epsilon,
                selection,
                f"{best:.4f}",
                f"{row['private_pick']:.4f}",
                f"{regret:.4f}",
                f"{row['random_pick_regret']:.4f}",
                f"{row['non_private_pick_regret']:.4f}",
                verdict(row["passed"]),
            ]
        )
    print(
        f"\n{args.repetitions} private searches (validation_size=0.2), exact expected "
        "accuracy of the pick on the Adult test split"
    )
    print(
        format_table(
            rows,
            [
                "grid",
                "eps_sel",
                "selection",
                "best",
                "private pick",
                "regret",
                "random pick regret",
                "non-private pick regret",
                "target",
            ],
        )
    )

    sklearn_result = None
    if not args.no_sklearn:
        grid_search = GridSearchCV(template(), GRID, cv=3, n_jobs=args.n_jobs, refit=False)
        grid_search.fit(X, y)
        chosen = candidates.index(grid_search.best_params_)
        answered = len(candidates) * y.size  # every row is scored once per candidate
        sklearn_result = {
            "best_params": grid_search.best_params_,
            "accuracy": acc[chosen],
            "rows_answered_unaccounted": answered,
        }
        print(
            f"\nnon-private GridSearchCV (3 folds): picks {grid_search.best_params_}, "
            f"expected accuracy {acc[chosen]:.4f} (regret {acc.max() - acc[chosen]:.4f}); "
            f"it answered {answered:,} rows at epsilon = 1 each, none accounted"
        )

    path = write_json(
        args.out / "model_selection_results.json",
        {
            "grid": GRID,
            "candidate_accuracy": dict(zip(map(str, candidates), acc.tolist())),
            "repetitions": args.repetitions,
            "settings": results,
            "sklearn_grid_search": sklearn_result,
            "seconds": time.perf_counter() - started,
            "environment": environment(),
        },
    )
    print(f"wrote {path} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
