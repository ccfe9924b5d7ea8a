"""Tables, plots and progress of ``benchmarks/peers.py`` (no estimator is fitted here)."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from _common import crossings, label, last_at_or_above

#: How each kind of model spends epsilon, for tables and legends.
KINDS = {
    "dp-lr": "private training, total eps",
    "dp-nb": "private training, total eps",
    "dp-rf": "private training, total eps",
    "sa-lr": "private prediction, eps per query",
    "lr": "non-private",
    "nb": "non-private",
    "rf": "non-private",
}
LABELS = {
    "sa-lr": "skprivpred SubsampleAggregateClassifier (LR teachers)",
    "default": "skprivpred many-query mode, default teacher rule",
}
#: Horizons at which the crossover table shows the expected accuracy.
SHOWN_HORIZONS = (100, 1000, 2500, 10000)


def name(key: str) -> str:
    """Readable label of a model or teacher rule."""
    if key in LABELS:
        return LABELS[key]
    if key.endswith("rows/teacher"):
        return f"skprivpred many-query mode, {key}"
    return label(key)


class Stage:
    """Progress of one stage: a tqdm counter of its steps and its wall time at the end.

    Steps of different stages cost very different amounts of time, so no ETA
    across stages is shown; each stage reports its own count and rate.
    """

    def __init__(self, title: str) -> None:
        self.title = title

    def __enter__(self) -> Stage:
        from tqdm.auto import tqdm

        self.start = time.perf_counter()
        self.bar = tqdm(desc=self.title, unit="step", dynamic_ncols=True, leave=False)
        return self

    def tick(self, what: str) -> None:
        self.bar.set_postfix_str(what, refresh=False)
        self.bar.update()

    def __exit__(self, *exc: Any) -> None:
        self.bar.close()
        print(f"[{time.perf_counter() - self.start:6.0f} s] {self.title}", flush=True)


def _mean_sd(values) -> tuple[float, float]:
    values = list(values)
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def summarize(results: dict, designs: dict) -> dict[str, Any]:
    """Means over seeds, the diffprivlib levels and every crossover."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in results["accuracy"]:
        groups[(r["dataset"], r["model"], r["epsilon"])].append(r)
    accuracy = []
    for (dataset, model, epsilon), rows in groups.items():
        mean, sd = _mean_sd(r["accuracy"] for r in rows)
        teachers = sorted({r["n_teachers"] for r in rows if "n_teachers" in r})
        accuracy.append(
            {
                "dataset": dataset,
                "model": model,
                "label": name(model),
                "kind": KINDS[model],
                "epsilon": epsilon,
                "accuracy_mean": mean,
                "accuracy_sd": sd,
                "n_seeds": len(rows),
                "n_teachers": teachers[0] if len(teachers) == 1 else (teachers or None),
            }
        )
    levels: dict[tuple, list] = defaultdict(list)
    for r in results["dp_levels"]:
        levels[(r["dataset"], tuple(r["budget"]))].append(r["accuracy"])
    dp = {key: _mean_sd(v) + (len(v),) for key, v in levels.items()}
    crossover = []
    for c in results["curves"]:
        key = (c["dataset"], tuple(c["budget"]))
        level = dp[key][0]
        q = [p["n_queries"] for p in c["curve"]]
        acc = [p["expected_accuracy"] for p in c["curve"]]
        teachers = [p["n_teachers"] for p in c["curve"]]
        cross = crossings(q, acc, level)
        for x in cross:  # teachers used at the grid point just before the crossing
            x["n_teachers"] = teachers[max(0, int(np.searchsorted(q, x["x"])) - 1)]
        crossover.append(
            {
                "dataset": c["dataset"],
                "budget": c["budget"],
                "rule": c["rule"],
                "label": name(c["rule"]),
                "dp_lr_mean": level,
                "dp_lr_sd": dp[key][1],
                "dp_lr_seeds": dp[key][2],
                "n_queries": q,
                "expected_accuracy": acc,
                "n_teachers": teachers,
                "crossings": cross,
                "last_grid_q_at_or_above": last_at_or_above(q, acc, level),
                "at": {
                    int(h): float(np.interp(np.log(h), np.log(q), acc))
                    for h in SHOWN_HORIZONS
                    if q[0] <= h <= q[-1]
                },
            }
        )
    sgroups: dict[tuple, list] = defaultdict(list)
    for s in results["students"]:
        sgroups[(s["dataset"], tuple(s["budget"]), s["n_queries"])].append(s)
    students = []
    for (dataset, budget, q), rows in sorted(sgroups.items()):
        level = dp[(dataset, budget)][0]
        student, student_sd = _mean_sd(r["student_accuracy"] for r in rows)
        students.append(
            {
                "dataset": dataset,
                "budget": list(budget),
                "n_queries": q,
                "n_teachers": rows[0]["n_teachers"],
                "live_accuracy_mean": statistics.fmean(r["live_accuracy"] for r in rows),
                "student_accuracy_mean": student,
                "student_accuracy_sd": student_sd,
                "student_queries": rows[0]["student_queries"],
                "n_seeds": len(rows),
                "dp_lr_mean": level,
                "student_beats_dp_lr": student > level,
            }
        )
    one_release = []
    if results.get("sufficient"):
        from _sufficient import summary as sufficient_summary

        for row in sufficient_summary(results["sufficient"]):
            level = dp.get((row["dataset"], tuple(row["budget"])))
            one_release.append({**row, "dp_lr_mean": None if level is None else level[0]})
    return {
        "accuracy": accuracy,
        "majority": {n: d.majority for n, d in designs.items()},
        "crossover": crossover,
        "students": students,
        "sufficient": one_release,
    }


# -- tables ------------------------------------------------------------------------------------
def _md(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def _pm(mean: float, sd: float, n: int) -> str:
    """``mean ± sd``, or the mean alone for one seed."""
    return f"{mean:.3f} ± {sd:.3f}" if n > 1 else f"{mean:.3f}"


def _budget(b) -> str:
    return f"({b[0]:g}, {b[1]:g})"


def markdown(summary: dict, *, quick: bool, wall: float) -> str:
    """Every table of the run, as markdown."""
    parts = ["# skprivpred next to diffprivlib 0.6.6" + (" (QUICK RUN)" if quick else "")]
    parts.append(
        "Test accuracy on the public design matrix (`benchmarks/_design.py`). diffprivlib "
        "models are trained once at *total* epsilon and then answer unlimited queries; "
        "skprivpred's answers each cost *per-query* epsilon. Mean ± sd over seeds."
    )
    for dataset, majority in summary["majority"].items():
        rows = [s for s in summary["accuracy"] if s["dataset"] == dataset]
        epsilons = sorted({s["epsilon"] for s in rows if s["epsilon"] is not None})
        table = []
        for model in dict.fromkeys(s["model"] for s in rows):
            own = {s["epsilon"]: s for s in rows if s["model"] == model}
            if None in own:  # non-private: one value
                cells = [f"{own[None]['accuracy_mean']:.3f}"] * len(epsilons)
            else:
                cells = [
                    _pm(own[e]["accuracy_mean"], own[e]["accuracy_sd"], own[e]["n_seeds"])
                    if e in own
                    else "-"
                    for e in epsilons
                ]
            table.append([name(model), KINDS[model], *cells])
        table.append(["majority class", "-", *[f"{majority:.3f}"] * len(epsilons)])
        n_seeds = max(s["n_seeds"] for s in rows)
        parts.append(f"## {dataset}: accuracy against epsilon ({n_seeds} seed(s))")
        parts.append(_md(table, ["model", "epsilon is", *[f"eps={e:g}" for e in epsilons]]))
        sa = [s for s in rows if s["model"] == "sa-lr"]
        if sa:
            parts.append(
                "Teachers of the subsample-aggregate estimator: "
                + ", ".join(f"{s['n_teachers']} at eps={s['epsilon']:g}" for s in sa)
                + "."
            )
    if summary["crossover"]:
        parts.append("## Crossover: queries answered under one total budget")
        parts.append(
            "Exact expected accuracy of one answer (from the teachers' votes, one partition, "
            "seed 0) against the horizon q; the diffprivlib line is its DP logistic regression "
            "at the same total epsilon (mean over seeds), which answers any number of "
            "queries. *Crossover*: where the curve falls below that line (interpolated on "
            "log q); *last grid q*: the largest horizon on the grid still at or above it."
        )
        table = []
        for c in summary["crossover"]:
            down = [x for x in c["crossings"] if x["direction"] == "down"]
            table.append(
                [
                    c["dataset"],
                    _budget(c["budget"]),
                    f"{c['dp_lr_mean']:.3f} ± {c['dp_lr_sd']:.3f}",
                    name(c["rule"]),
                    ", ".join(f"{x['x']:,.0f} ({x['n_teachers']} teachers)" for x in down)
                    or "none on the grid",
                    "-"
                    if c["last_grid_q_at_or_above"] is None
                    else f"{c['last_grid_q_at_or_above']:,.0f}",
                    *[f"{c['at'][h]:.3f}" if h in c["at"] else "-" for h in SHOWN_HORIZONS],
                ]
            )
        parts.append(
            _md(
                table,
                [
                    "data",
                    "total (eps, delta)",
                    "diffprivlib LR",
                    "our curve",
                    "crossover q",
                    "last grid q",
                    *[f"acc. at q={h:,}" for h in SHOWN_HORIZONS],
                ],
            )
        )
    if summary["students"]:
        parts.append("## Student hand-off (default teacher rule, real answers)")
        parts.append(
            "q test rows answered by the teachers, then the student (scaling + LR on the "
            "released pairs) answers every other test row at no further cost."
        )
        table = [
            [
                s["dataset"],
                _budget(s["budget"]),
                f"{s['n_queries']:,}",
                s["n_teachers"],
                f"{s['live_accuracy_mean']:.3f}",
                _pm(s["student_accuracy_mean"], s["student_accuracy_sd"], s["n_seeds"]),
                f"{s['student_queries']:,}",
                f"{s['dp_lr_mean']:.3f}",
                "yes" if s["student_beats_dp_lr"] else "no",
                s["n_seeds"],
            ]
            for s in summary["students"]
        ]
        parts.append(
            _md(
                table,
                [
                    "data",
                    "total (eps, delta)",
                    "live q",
                    "teachers",
                    "live acc.",
                    "student acc.",
                    "student answers",
                    "diffprivlib LR",
                    "student ahead",
                    "seeds",
                ],
            )
        )
    if summary.get("sufficient"):
        parts.append("## One release, unlimited answers (SufficientStatisticClassifier)")
        parts.append(
            "25 % of the training file as unlabelled public rows (y = -1, a random split per "
            "seed), the rest labelled; one noisy statistic released at the total budget, then "
            "every answer free. diffprivlib LR (all training rows) measured in the same run."
        )
        table = [
            [
                r["dataset"],
                _budget(r["budget"]),
                _pm(r["mean"], r["sd"], r["n_runs"]),
                f"{r['worst']:.4f}",
                f"{r['fit_seconds_median']:.2f}",
                "-" if r["dp_lr_mean"] is None else f"{r['dp_lr_mean']:.4f}",
            ]
            for r in summary["sufficient"]
        ]
        parts.append(
            _md(
                table,
                ["data", "total (eps, delta)", "accuracy", "worst run", "fit s", "diffprivlib LR"],
            )
        )
    parts.append(f"Wall time {wall:.0f} s.")
    return "\n\n".join(parts)


# -- plots -------------------------------------------------------------------------------------
_STYLE = {
    "sa-lr": {"color": "C0", "marker": "o", "linestyle": "-"},
    "dp-lr": {"color": "C1", "marker": "s", "linestyle": "--"},
    "dp-nb": {"color": "C2", "marker": "^", "linestyle": "--"},
    "dp-rf": {"color": "C3", "marker": "v", "linestyle": "--"},
    "lr": {"color": "C1", "linestyle": ":"},
    "nb": {"color": "C2", "linestyle": ":"},
    "rf": {"color": "C3", "linestyle": ":"},
}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_accuracy(summary: dict, path: Path) -> Path:
    """Accuracy against epsilon, one panel per data set, legend below the panels."""
    plt = _pyplot()
    datasets = list(summary["majority"])
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4.6), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        rows = [s for s in summary["accuracy"] if s["dataset"] == dataset]
        for model in dict.fromkeys(s["model"] for s in rows):
            own = sorted((s for s in rows if s["model"] == model), key=lambda s: s["epsilon"] or 0)
            if own[0]["epsilon"] is None:
                ax.axhline(
                    own[0]["accuracy_mean"], linewidth=1.5, label=name(model), **_STYLE[model]
                )
                continue
            ax.errorbar(
                [s["epsilon"] for s in own],
                [s["accuracy_mean"] for s in own],
                yerr=[s["accuracy_sd"] for s in own],
                capsize=3,
                label=f"{name(model)} ({KINDS[model]})",
                **_STYLE[model],
            )
        ax.axhline(
            summary["majority"][dataset],
            color="black",
            linestyle=(0, (1, 3)),
            label="majority class",
        )
        epsilons = sorted({s["epsilon"] for s in rows if s["epsilon"] is not None})
        ax.set_xscale("log")
        ax.set_xticks(epsilons)
        ax.set_xticklabels([f"{e:g}" for e in epsilons])
        ax.minorticks_off()
        ax.set_xlabel("epsilon (total for diffprivlib, per query for skprivpred)")
        ax.set_ylabel("test accuracy")
        ax.set_title(dataset)
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.24, 1, 1))
    return _save(fig, path, plt)


def plot_crossover(summary: dict, dataset: str, path: Path) -> Path:
    """Accuracy against queries answered under one total budget; crossovers marked."""
    plt = _pyplot()
    curves = [c for c in summary["crossover"] if c["dataset"] == dataset]
    budgets = list(dict.fromkeys(tuple(c["budget"]) for c in curves))
    fig, axes = plt.subplots(
        1, len(budgets), figsize=(6 * len(budgets), 4.8), squeeze=False, sharey=True
    )
    styles = ["-", "--", "-."]
    for ax, budget in zip(axes[0], budgets):
        own = [c for c in curves if tuple(c["budget"]) == budget]
        level, sd = own[0]["dp_lr_mean"], own[0]["dp_lr_sd"]
        ax.axhline(
            level,
            color="C1",
            linewidth=2,
            label="diffprivlib LogisticRegression "
            "(trained at the total budget; any number of queries)",
        )
        ax.axhspan(level - sd, level + sd, color="C1", alpha=0.12)
        for r in summary.get("sufficient", []):
            if r["dataset"] == dataset and tuple(r["budget"]) == budget:
                ax.axhline(
                    r["mean"],
                    color="C3",
                    linewidth=2,
                    label="SufficientStatisticClassifier, 25 % unlabelled public rows "
                    "(one release; any number of queries)",
                )
                ax.axhspan(r["mean"] - r["sd"], r["mean"] + r["sd"], color="C3", alpha=0.12)
        for k, c in enumerate(own):
            ax.plot(
                c["n_queries"],
                c["expected_accuracy"],
                styles[k % 3],
                color=f"C{[0, 4, 2][k % 3]}",
                label=f"{c['label']} (exact expected accuracy)",
            )
            for x in c["crossings"]:
                if x["direction"] != "down":
                    continue
                ax.plot([x["x"]], [level], "o", color=f"C{[0, 4, 2][k % 3]}", ms=7, mfc="white")
                ax.annotate(
                    f"{x['x']:,.0f}",
                    (x["x"], level),
                    textcoords="offset points",
                    xytext=(5, -14 - 11 * k),
                    fontsize=8,
                    color=f"C{[0, 4, 2][k % 3]}",
                )
        studs = [
            s
            for s in summary["students"]
            if s["dataset"] == dataset and tuple(s["budget"]) == budget
        ]
        if studs:
            ax.errorbar(
                [s["n_queries"] for s in studs],
                [s["student_accuracy_mean"] for s in studs],
                yerr=[s["student_accuracy_sd"] for s in studs],
                fmt="D",
                color="C5",
                capsize=3,
                label="student hand-off after q answers (then unlimited free answers)",
            )
        ax.set_xscale("log")
        ax.set_xlabel("queries answered under the budget (horizon q)")
        ax.set_ylabel("accuracy per answer")
        ax.set_title(f"{dataset}: total epsilon = {budget[0]:g}, delta = {budget[1]:g}")
        ax.grid(True, alpha=0.3)
        lo = min(min(c["expected_accuracy"]) for c in own)
        ax.set_ylim(max(lo - 0.01, 0.45), None)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=1, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.25, 1, 1))
    return _save(fig, path, plt)


def _save(fig, path: Path, plt) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
