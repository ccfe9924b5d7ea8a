"""Finite classes on Adult: private conjunctions and private multiplicative weights.

What is measured
----------------
**Conjunctions.** Adult is binarised by the public rules of
:data:`BINARY_FEATURES` (thresholds and category sets written from the data
set's documentation and ordinary census cut-offs, never computed from the
rows), giving ``d = 20`` binary features and ``2**20`` monotone conjunctions
predicting ``>50K``. For each ``epsilon`` and seed,
:class:`~skprivpred.ExponentialMechanismClassifier` is fitted on the training
split (one release of ``epsilon``) and the released conjunction is scored on
the test split. The non-private baseline is the best conjunction on the
training split (fewest mistakes, computed with the same exact transform); the
table also gives the excess training error of the private draw over it.

**Experts.** The private stream is the Adult training split in a fixed order
(a seeded permutation: a public choice). The experts are the public rules of
:data:`EXPERTS`. :class:`~skprivpred.PrivateExpertsClassifier` runs
multiplicative weights over the whole stream for each setting of
:data:`EXPERT_SETTINGS` and seed; the plot shows the cumulative regret against
the best expert in hindsight (exact expectation from the round laws, and the
realised regret averaged over seeds) next to the notes' bound
``a t + ln K / a`` (Theorem 2). Each test row is then answered once by
``predict`` (a fresh expert per row); its accuracy is reported next to the best
expert's. The regret computation reads the rewards: it is an evaluation, not a
private release.

Outputs, in ``--out`` (default ``benchmarks/results/``): ``finite_results.json``
(configuration, environment, every run and the summary), and the plots
``finite_conjunctions.png`` and ``finite_regret.png``, written to
``docs/_static/`` instead with ``--docs-figures``.

Usage
-----
From the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/finite.py            # default, ~5 s
    PYTHONPATH=. .venv/bin/python benchmarks/finite.py --quick    # smoke test
    PYTHONPATH=. .venv/bin/python benchmarks/finite.py --docs-figures
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from _common import DEFAULT_OUT, environment, format_table, load_dataset, timed, write_json

from skprivpred.finite import (
    ExponentialMechanismClassifier,
    PrivateExpertsClassifier,
    mw_round_proba,
)
from skprivpred.hypotheses import binary_patterns, conjunction_mistakes

DOCS_STATIC = Path(__file__).resolve().parents[1] / "docs" / "_static"

#: The public label set: 1 is ">50K".
CLASSES = [0, 1]

DEFAULT_EPSILONS = (0.001, 0.003, 0.01, 0.03, 0.1, 1.0)
QUICK_EPSILONS = (0.01, 1.0)
DEFAULT_N_SEEDS = 10
QUICK_N_SEEDS = 2

#: Seed of the public permutation that orders the stream of training rows.
STREAM_ORDER_SEED = 0

MARRIED = ("Married-civ-spouse", "Married-AF-spouse")
PROFESSIONAL = ("Exec-managerial", "Prof-specialty")
WHITE_COLLAR = PROFESSIONAL + ("Tech-support", "Sales", "Protective-serv")
GOVERNMENT_OR_OWN_COMPANY = ("Federal-gov", "Local-gov", "State-gov", "Self-emp-inc")

#: Public binarisation of Adult: (name, rule). Thresholds follow the documented
#: meaning of each column (education-num 10 = some college, 13 = bachelor's,
#: 14 = master's; 40 hours = full time), not the data.
BINARY_FEATURES: list[tuple[str, Callable[[pd.DataFrame], pd.Series]]] = [
    ("age>=30", lambda d: d["age"] >= 30),
    ("age>=40", lambda d: d["age"] >= 40),
    ("age<60", lambda d: d["age"] < 60),
    ("some-college", lambda d: d["education-num"] >= 10),
    ("bachelors+", lambda d: d["education-num"] >= 13),
    ("masters+", lambda d: d["education-num"] >= 14),
    ("full-time", lambda d: d["hours-per-week"] >= 40),
    ("hours>=50", lambda d: d["hours-per-week"] >= 50),
    ("capital-gain", lambda d: d["capital-gain"] > 0),
    ("capital-loss", lambda d: d["capital-loss"] > 0),
    ("married", lambda d: d["marital-status"].isin(MARRIED)),
    ("ever-married", lambda d: d["marital-status"] != "Never-married"),
    ("spouse", lambda d: d["relationship"].isin(("Husband", "Wife"))),
    ("male", lambda d: d["sex"] == "Male"),
    ("white", lambda d: d["race"] == "White"),
    ("us-born", lambda d: d["native-country"] == "United-States"),
    ("private-sector", lambda d: d["workclass"] == "Private"),
    ("gov-or-own-company", lambda d: d["workclass"].isin(GOVERNMENT_OR_OWN_COMPANY)),
    ("professional", lambda d: d["occupation"].isin(PROFESSIONAL)),
    ("white-collar", lambda d: d["occupation"].isin(WHITE_COLLAR)),
]


def binarise(frame: pd.DataFrame) -> np.ndarray:
    """The public binary features of Adult rows, shape (n_rows, 20), values 0/1."""
    return np.column_stack([rule(frame).to_numpy() for _, rule in BINARY_FEATURES]).astype(np.int8)


def _rule(condition: Callable[[pd.DataFrame], pd.Series]) -> Callable[[pd.DataFrame], np.ndarray]:
    def expert(frame: pd.DataFrame) -> np.ndarray:
        return condition(frame).to_numpy().astype(int)

    return expert


#: Public experts for the stream: rules of thumb about who earns more than $50K.
EXPERTS: dict[str, Callable[[pd.DataFrame], np.ndarray]] = {
    "married": _rule(lambda d: d["marital-status"].isin(MARRIED)),
    "bachelors+": _rule(lambda d: d["education-num"] >= 13),
    "married & some-college": _rule(
        lambda d: d["marital-status"].isin(MARRIED) & (d["education-num"] >= 10)
    ),
    "capital-gain >= 5000": _rule(lambda d: d["capital-gain"] >= 5000),
    "professional & full-time": _rule(
        lambda d: d["occupation"].isin(PROFESSIONAL) & (d["hours-per-week"] >= 40)
    ),
    "always <=50K": _rule(lambda d: pd.Series(False, index=d.index)),
}


@dataclass(frozen=True)
class ExpertSetting:
    """One way of setting the multiplicative-weights rate.

    ``epsilon=None`` is the tuned rate ``a = sqrt(ln K / T)`` of the regret bound
    (Arora, Hazan & Kale 2012, Theorem 2.4),
    run as pure DP with ``epsilon = 2 a T = 2 sqrt(T ln K)``: a near non-private
    reference.
    """

    name: str
    epsilon: float | None
    delta: float
    composition: str = "zcdp"

    def resolved_epsilon(self, n_rounds: int, n_experts: int) -> float:
        if self.epsilon is not None:
            return self.epsilon
        return 2.0 * math.sqrt(n_rounds * math.log(n_experts))


#: Privacy settings of the experts run (the rate follows from them and T).
EXPERT_SETTINGS = (
    ExpertSetting("pure, eps=1", 1.0, 0.0),
    ExpertSetting("advanced, eps=1, delta=1e-6", 1.0, 1e-6, "advanced"),
    ExpertSetting("zCDP, eps=1, delta=1e-6", 1.0, 1e-6, "zcdp"),
    ExpertSetting("advanced, eps=5, delta=1e-6", 5.0, 1e-6, "advanced"),
    ExpertSetting("zCDP, eps=5, delta=1e-6", 5.0, 1e-6, "zcdp"),
    ExpertSetting("tuned a=sqrt(ln K/T) (eps=2 sqrt(T ln K))", None, 0.0),
)


@dataclass
class Config:
    """Everything a run depends on (stored in the results file)."""

    epsilons: list[float]
    seeds: list[int]
    n_rounds: int | None
    mode: str
    out: Path
    figures: Path


# -- conjunctions ----------------------------------------------------------------------
def best_conjunction(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Features of the conjunction with the fewest training mistakes (non-private)."""
    mistakes = conjunction_mistakes(binary_patterns(X), y == 1, X.shape[1])
    index = int(np.argmin(mistakes))
    return np.flatnonzero((index >> np.arange(X.shape[1])) & 1)


def conjunction_accuracy(features: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.all(X[:, features] == 1, axis=1).astype(int) == y))


def run_conjunctions(data, config: Config) -> tuple[list[dict], dict]:
    """One private fit per (epsilon, seed); the non-private best conjunction as baseline."""
    X_train, X_test = binarise(data.X_train), binarise(data.X_test)
    best = best_conjunction(X_train, data.y_train)
    names = [name for name, _ in BINARY_FEATURES]
    baseline = {
        "features": [names[j] for j in best],
        "train_accuracy": conjunction_accuracy(best, X_train, data.y_train),
        "test_accuracy": conjunction_accuracy(best, X_test, data.y_test),
        "n_features": X_train.shape[1],
    }
    runs = []
    for epsilon in config.epsilons:
        for seed in config.seeds:
            clf = ExponentialMechanismClassifier(
                epsilon=epsilon, classes=CLASSES, random_state=seed
            )
            _, seconds = timed(lambda clf=clf: clf.fit(X_train, data.y_train))
            runs.append(
                {
                    "epsilon": epsilon,
                    "seed": seed,
                    "features": [names[j] for j in clf.selected_features_],
                    "train_accuracy": clf.score(X_train, data.y_train),
                    "test_accuracy": clf.score(X_test, data.y_test),
                    "fit_seconds": seconds,
                }
            )
    return runs, baseline


def summarize_conjunctions(runs: list[dict], baseline: dict) -> list[dict]:
    summary = []
    for epsilon in sorted({r["epsilon"] for r in runs}):
        group = [r for r in runs if r["epsilon"] == epsilon]
        test = [r["test_accuracy"] for r in group]
        summary.append(
            {
                "epsilon": epsilon,
                "test_accuracy_mean": statistics.fmean(test),
                "test_accuracy_sd": statistics.stdev(test) if len(test) > 1 else 0.0,
                "excess_train_error_mean": baseline["train_accuracy"]
                - statistics.fmean(r["train_accuracy"] for r in group),
                "best_test_accuracy": baseline["test_accuracy"],
                "fit_seconds_mean": statistics.fmean(r["fit_seconds"] for r in group),
            }
        )
    return summary


# -- experts ----------------------------------------------------------------------------
def expert_rewards(frame: pd.DataFrame, y: np.ndarray) -> np.ndarray:
    """Reward matrix (n_rows, K) of the public experts. Non-private: for evaluation only."""
    return np.column_stack([expert(frame) == y for expert in EXPERTS.values()]).astype(float)


def cumulative_regret(rewards: np.ndarray, collected: np.ndarray) -> np.ndarray:
    """Best expert's cumulative reward in hindsight minus the collected one, per prefix."""
    return np.cumsum(rewards, axis=0).max(axis=1) - np.cumsum(collected)


def run_experts(data, config: Config) -> tuple[list[dict], dict]:
    """One multiplicative-weights run per (setting, seed) over the ordered training stream."""
    order = np.random.default_rng(STREAM_ORDER_SEED).permutation(data.X_train.shape[0])
    if config.n_rounds is not None:
        order = order[: config.n_rounds]
    stream_X = data.X_train.iloc[order].reset_index(drop=True)
    stream_y = data.y_train[order]
    rewards = expert_rewards(stream_X, stream_y)
    test_rewards = expert_rewards(data.X_test, data.y_test)
    n_rounds, n_experts = rewards.shape
    curves, runs = {}, []
    for setting in EXPERT_SETTINGS:
        realised = []
        for seed in config.seeds:
            clf = PrivateExpertsClassifier(
                list(EXPERTS.values()),
                epsilon=setting.resolved_epsilon(n_rounds, n_experts),
                delta=setting.delta,
                composition=setting.composition,
                n_rounds=n_rounds,
                classes=CLASSES,
                random_state=seed,
            )
            _, fit_seconds = timed(lambda clf=clf: clf.fit(stream_X, stream_y))
            answers, predict_seconds = timed(lambda clf=clf: clf.predict(data.X_test))
            collected = rewards[np.arange(n_rounds), clf.chosen_experts_]
            realised.append(cumulative_regret(rewards, collected))
            runs.append(
                {
                    "setting": setting.name,
                    "epsilon": clf.epsilon,
                    "delta": clf.delta,
                    "seed": seed,
                    "learning_rate": clf.learning_rate_,
                    "final_regret": float(realised[-1][-1]),
                    "test_accuracy": float(np.mean(answers == data.y_test)),
                    "query_epsilon": clf.privacy_guarantee_.epsilon,
                    "fit_seconds": fit_seconds,
                    "predict_seconds": predict_seconds,
                }
            )
        rate = runs[-1]["learning_rate"]
        expected = cumulative_regret(rewards, (mw_round_proba(rewards, rate) * rewards).sum(axis=1))
        t = np.arange(1, n_rounds + 1)
        curves[setting.name] = {
            "rate": rate,
            "expected": expected,
            "realised_mean": np.mean(realised, axis=0),
            "bound": rate * t + math.log(n_experts) / rate,
        }
    info = {
        "n_rounds": n_rounds,
        "experts": list(EXPERTS),
        "expert_train_accuracy": dict(zip(EXPERTS, rewards.mean(axis=0).round(4).tolist())),
        "expert_test_accuracy": dict(zip(EXPERTS, test_rewards.mean(axis=0).round(4).tolist())),
        "stream_order": f"numpy.random.default_rng({STREAM_ORDER_SEED}).permutation(n_train)",
    }
    return runs, {"info": info, "curves": curves}


def summarize_experts(runs: list[dict], curves: dict, info: dict) -> list[dict]:
    best_test = max(info["expert_test_accuracy"].values())
    summary = []
    for setting in EXPERT_SETTINGS:
        group = [r for r in runs if r["setting"] == setting.name]
        curve = curves[setting.name]
        summary.append(
            {
                "setting": setting.name,
                "learning_rate": curve["rate"],
                "query_epsilon": group[0]["query_epsilon"],
                "expected_regret": float(curve["expected"][-1]),
                "realised_regret_mean": statistics.fmean(r["final_regret"] for r in group),
                "notes_bound": float(curve["bound"][-1]),
                "test_accuracy_mean": statistics.fmean(r["test_accuracy"] for r in group),
                "best_expert_test_accuracy": best_test,
            }
        )
    return summary


# -- tables and plots -------------------------------------------------------------------
def conjunction_table(summary: list[dict], baseline: dict) -> str:
    header = [
        "epsilon",
        "test accuracy (mean ± sd)",
        "best conjunction",
        "excess train error",
        "fit s",
    ]
    rows = [
        [
            f"{s['epsilon']:g}",
            f"{s['test_accuracy_mean']:.4f} ± {s['test_accuracy_sd']:.4f}",
            f"{s['best_test_accuracy']:.4f}",
            f"{s['excess_train_error_mean']:.4f}",
            f"{s['fit_seconds_mean']:.3f}",
        ]
        for s in summary
    ]
    return format_table(rows, header)


def experts_table(summary: list[dict]) -> str:
    header = [
        "setting",
        "rate a",
        "2a per query",
        "E[regret]",
        "regret (mean)",
        "notes bound",
        "test accuracy",
        "best expert",
    ]
    rows = [
        [
            s["setting"],
            f"{s['learning_rate']:.3g}",
            f"{s['query_epsilon']:.3g}",
            f"{s['expected_regret']:.0f}",
            f"{s['realised_regret_mean']:.0f}",
            f"{s['notes_bound']:.0f}",
            f"{s['test_accuracy_mean']:.4f}",
            f"{s['best_expert_test_accuracy']:.4f}",
        ]
        for s in summary
    ]
    return format_table(rows, header)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_conjunctions(summary: list[dict], baseline: dict, n_seeds: int, path: Path) -> Path:
    """Test accuracy of the released conjunction against epsilon, with the best one."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    eps = [s["epsilon"] for s in summary]
    ax.errorbar(
        eps,
        [s["test_accuracy_mean"] for s in summary],
        yerr=[s["test_accuracy_sd"] for s in summary],
        marker="o",
        capsize=3,
        label="exponential mechanism (private)",
    )
    ax.axhline(
        baseline["test_accuracy"],
        linestyle="--",
        color="C1",
        label="best conjunction (non-private)",
    )
    ax.set_xscale("log")
    ax.set_xlabel("epsilon of the released conjunction")
    ax.set_ylabel("test accuracy")
    ax.set_title(
        f"Adult, {baseline['n_features']} public binary features ({n_seeds} seeds, mean ± sd)",
        fontsize="medium",
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return _save(fig, path)


def plot_regret(curves: dict, n_seeds: int, path: Path) -> Path:
    """Cumulative regret (expected and realised) against the notes' bound, per setting."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for k, (name, curve) in enumerate(curves.items()):
        n_rounds = curve["expected"].shape[0]
        # ~400 log-spaced rounds keep the file small and the early rounds visible.
        at = np.unique(np.geomspace(1, n_rounds, 400).astype(int)) - 1
        t = at + 1
        ax.plot(
            t,
            np.maximum(curve["expected"][at], 0.5),
            color=f"C{k}",
            label=f"{name} (a={curve['rate']:.2g})",
        )
        ax.plot(
            t, np.maximum(curve["realised_mean"][at], 0.5), color=f"C{k}", alpha=0.4, linewidth=0.8
        )
        ax.plot(t, curve["bound"][at], color=f"C{k}", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret")
    ax.set_title(
        "Adult stream, 6 public experts: regret (solid: expected; faint: realised, "
        f"{n_seeds} seeds)\ndashed: notes' bound a t + ln K / a",
        fontsize="small",
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper left")
    fig.tight_layout()
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# -- command line ------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--epsilons",
        nargs="+",
        type=float,
        default=None,
        help="epsilons of the conjunction release (default: "
        f"{', '.join(map(str, DEFAULT_EPSILONS))})",
    )
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=None,
        help=f"random_state values (default: 0 to {DEFAULT_N_SEEDS - 1})",
    )
    parser.add_argument(
        "--n-rounds",
        type=int,
        default=None,
        help="length of the expert stream (default: every training row)",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="results folder (default: %(default)s)"
    )
    parser.add_argument(
        "--docs-figures",
        action="store_true",
        help=f"write the PNGs to {DOCS_STATIC} (for the user guide) instead of --out",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: {QUICK_N_SEEDS} seeds, epsilons {QUICK_EPSILONS}, 5000 rounds",
    )
    return parser.parse_args(argv)


def make_config(args: argparse.Namespace) -> Config:
    """Resolve the defaults of ``--quick`` and the default mode."""
    if args.quick:
        mode, epsilons, n_seeds, n_rounds = "quick", QUICK_EPSILONS, QUICK_N_SEEDS, 5000
    else:
        mode, epsilons, n_seeds, n_rounds = "default", DEFAULT_EPSILONS, DEFAULT_N_SEEDS, None
    return Config(
        epsilons=sorted(set(args.epsilons or epsilons)),
        seeds=list(dict.fromkeys(args.seeds if args.seeds is not None else range(n_seeds))),
        n_rounds=args.n_rounds if args.n_rounds is not None else n_rounds,
        mode=mode,
        out=args.out,
        figures=DOCS_STATIC if args.docs_figures else args.out,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run both parts, print the tables, write JSON and the plots."""
    config = make_config(parse_args(argv))
    start = time.perf_counter()
    data = load_dataset("adult")
    conj_runs, baseline = run_conjunctions(data, config)
    conj_summary = summarize_conjunctions(conj_runs, baseline)
    expert_runs, experts = run_experts(data, config)
    expert_summary = summarize_experts(expert_runs, experts["curves"], experts["info"])
    wall_seconds = time.perf_counter() - start

    print(
        f"Conjunctions on binarised Adult (d={baseline['n_features']}, "
        f"{len(config.seeds)} seeds); best conjunction: {' & '.join(baseline['features'])}"
    )
    print(conjunction_table(conj_summary, baseline))
    print()
    print(
        f"Private multiplicative weights, {experts['info']['n_rounds']} rounds, "
        f"{len(EXPERTS)} public experts ({len(config.seeds)} seeds)"
    )
    print(experts_table(expert_summary))

    payload = {
        "benchmark": "finite classes on Adult (benchmarks/finite.py)",
        "config": asdict(config),
        "environment": environment(),
        "wall_seconds": wall_seconds,
        "conjunctions": {"baseline": baseline, "summary": conj_summary, "runs": conj_runs},
        "experts": {"info": experts["info"], "summary": expert_summary, "runs": expert_runs},
    }
    written = [write_json(config.out / "finite_results.json", payload)]
    written.append(
        plot_conjunctions(
            conj_summary, baseline, len(config.seeds), config.figures / "finite_conjunctions.png"
        )
    )
    written.append(
        plot_regret(experts["curves"], len(config.seeds), config.figures / "finite_regret.png")
    )
    print()
    print(f"Wall time {wall_seconds:.0f} s. Wrote: " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
