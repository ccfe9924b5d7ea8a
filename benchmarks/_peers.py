"""The measurements of ``benchmarks/peers.py`` (runs inside the peers environment).

Everything here works on the public design matrix of ``_design.py`` (fixed
transforms from the published schemas, fitted to no row), so diffprivlib can be
given public bounds: the row-norm bound ``data_norm`` of :data:`_design.PUBLIC_NORM_BOUND`
and per-column ``bounds`` from the schema (Adult: every column in [0, 1];
MAGIC: every column in (-1, 1)); the label set ``classes=[0, 1]`` is public too.
diffprivlib clips rows and columns to the bounds it is given, so bounds that are
chosen from the schema, not from the data, are enough for its guarantee.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import load_dataset
from _design import PUBLIC_NORM_BOUND, public_design
from sklearn.base import ClassifierMixin
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from skprivpred import SubsampleAggregateClassifier
from skprivpred.accounting import per_query_epsilon
from skprivpred.mechanisms import exponential_mechanism_proba

CLASSES = [0, 1]

#: Public per-column bounds of the public design, from the schema: Adult's
#: numeric columns are fixed divisions (age / 100, log1p(gain) / 12, ...) that
#: land in [0, 1] for every documented value and its one-hot columns are 0/1;
#: MAGIC's columns pass through tanh, so they lie in (-1, 1).
COLUMN_BOUNDS = {"adult": (0.0, 1.0), "magic": (-1.0, 1.0)}

#: Shape of diffprivlib's random forest (its defaults), used for the non-private
#: forest too, so that the gap is the price of privacy and not of the shape.
FOREST = {"n_estimators": 10, "max_depth": 5}


@dataclass(frozen=True)
class Design:
    """Public design matrices of one data set's train/test split."""

    name: str
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    @property
    def majority(self) -> float:
        """Test accuracy of the training majority class."""
        values, counts = np.unique(self.y, return_counts=True)
        return float(np.mean(self.y_test == values[np.argmax(counts)]))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = COLUMN_BOUNDS[self.name]
        d = self.X.shape[1]
        return np.full(d, lo), np.full(d, hi)


def load_design(name: str) -> Design:
    """The public design of ``name`` ("adult": published split; "magic": run.py's split)."""
    data = load_dataset(name)
    return Design(
        name,
        public_design(data.X_train),
        np.asarray(data.y_train, dtype=int),
        public_design(data.X_test),
        np.asarray(data.y_test, dtype=int),
    )


# -- the peers (private training) and the non-private models -------------------------------
def diffprivlib_model(key: str, design: Design, epsilon: float, seed: int) -> Any:
    """A diffprivlib model configured for a private run (public bounds and classes)."""
    from diffprivlib import models

    if key == "dp-lr":
        return models.LogisticRegression(
            epsilon=epsilon,
            data_norm=PUBLIC_NORM_BOUND[design.name],
            max_iter=1000,
            random_state=seed,
        )
    if key == "dp-nb":
        return models.GaussianNB(epsilon=epsilon, bounds=design.bounds(), random_state=seed)
    if key == "dp-rf":
        return models.RandomForestClassifier(
            epsilon=epsilon,
            bounds=design.bounds(),
            classes=CLASSES,
            random_state=seed,
            **FOREST,
        )
    raise KeyError(key)


def nonprivate_model(key: str, seed: int) -> ClassifierMixin:
    """The non-private counterpart of a peer, on the same public design."""
    if key == "lr":
        return LogisticRegression(max_iter=1000, random_state=seed)
    if key == "nb":
        return GaussianNB()
    if key == "rf":
        return RandomForestClassifier(random_state=seed, **FOREST)
    raise KeyError(key)


def teacher() -> Pipeline:
    """The teachers of the many-query mode: scaling + LR."""
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


PEERS = ("dp-lr", "dp-nb", "dp-rf")
NONPRIVATE = ("lr", "nb", "rf")


def accuracy_vs_epsilon(
    design: Design,
    epsilons: Sequence[float],
    seeds: Sequence[int],
    *,
    n_jobs: int = 1,
    tick: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """Test accuracy of every peer and of subsample-and-aggregate, per epsilon and seed.

    The peers are trained privately at total ``epsilon`` and then answer any
    number of queries; ``sa-lr`` answers each test row once at per-query
    ``epsilon`` (real noisy answers).
    """
    records = []
    for key in NONPRIVATE:
        for seed in seeds:
            tick(f"{design.name} {key} seed={seed}")
            model = nonprivate_model(key, seed).fit(design.X, design.y)
            records.append(_record(design, key, None, seed, model.predict(design.X_test)))
    for epsilon in epsilons:
        for seed in seeds:
            for key in PEERS:
                tick(f"{design.name} {key} eps={epsilon:g} seed={seed}")
                model = diffprivlib_model(key, design, epsilon, seed).fit(design.X, design.y)
                records.append(_record(design, key, epsilon, seed, model.predict(design.X_test)))
            tick(f"{design.name} sa-lr eps={epsilon:g} seed={seed}")
            clf = SubsampleAggregateClassifier(
                teacher(), epsilon=epsilon, classes=CLASSES, n_jobs=n_jobs, random_state=seed
            ).fit(design.X, design.y)
            record = _record(design, "sa-lr", epsilon, seed, clf.predict(design.X_test))
            record["n_teachers"] = int(clf.n_teachers_)
            records.append(record)
    return records


def _record(design: Design, key: str, epsilon: float | None, seed: int, y_pred) -> dict:
    return {
        "dataset": design.name,
        "model": key,
        "epsilon": epsilon,
        "seed": seed,
        "accuracy": float(np.mean(np.asarray(y_pred) == design.y_test)),
    }


# -- many queries under one total budget -----------------------------------------------------
def expected_accuracy(counts: np.ndarray, y: np.ndarray, eps0: float) -> float:
    """Exact expected accuracy of one answer to a random test row (votes ``counts``)."""
    return float(np.mean(exponential_mechanism_proba(counts, eps0)[np.arange(y.size), y]))


def session(
    q: int, budget: tuple[float, float], seed: int, n_jobs: int, **rule: Any
) -> SubsampleAggregateClassifier:
    """A many-query session of horizon ``q`` under ``budget`` = (total eps, total delta)."""
    return SubsampleAggregateClassifier(
        teacher(),
        classes=CLASSES,
        n_queries=int(q),
        total_epsilon=budget[0],
        total_delta=budget[1],
        n_jobs=n_jobs,
        random_state=seed,
        **rule,
    )


class VoteCache:
    """Teacher votes on the test split, one fit per distinct number of teachers.

    The teachers depend on the seed and their number only, never on the budget
    or the horizon, so the exact answer law at any per-row epsilon follows from
    the votes of one fit (the estimator's own law, checked against its
    non-private diagnostic ``_output_distribution`` at the fitted horizon).
    """

    def __init__(self, design: Design, seed: int, n_jobs: int, tick=lambda _: None) -> None:
        self.design, self.seed, self.n_jobs, self.tick = design, seed, n_jobs, tick
        self.votes: dict[int, np.ndarray] = {}

    def counts(self, clf: SubsampleAggregateClassifier) -> np.ndarray:
        """The votes of ``clf``'s teachers (``clf`` is fitted here if its count is new)."""
        r = clf.n_teachers_for(self.design.X.shape[0], len(CLASSES))
        if r not in self.votes:
            self.tick(f"{self.design.name} fit {r} teachers")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # tiny teachers may not converge
                clf.fit(self.design.X, self.design.y)
            assert clf.n_teachers_ == r
            votes = clf._vote_counts(self.design.X_test)  # NOT private: benchmark only
            law = exponential_mechanism_proba(votes, clf.epsilon_per_query_)
            if not np.allclose(law, clf._output_distribution(self.design.X_test)):
                raise AssertionError("the answer law differs from the estimator's own")
            self.votes[r] = votes
        return self.votes[r]


def crossover_curves(
    design: Design,
    budgets: Sequence[tuple[float, float]],
    horizons: Sequence[int],
    rows_per_teacher: Sequence[int],
    seed: int,
    *,
    n_jobs: int = 1,
    tick=lambda _: None,
) -> list[dict[str, Any]]:
    """Exact expected accuracy against the horizon, per budget and teacher rule."""
    cache = VoteCache(design, seed, n_jobs, tick)
    out = []
    rules: list[tuple[str, dict]] = [("default", {})]
    rules += [(f"{m} rows/teacher", {"min_samples_per_teacher": m}) for m in rows_per_teacher]
    for budget in budgets:
        for name, rule in rules:
            curve = []
            for q in horizons:
                clf = session(q, budget, seed, n_jobs, **rule)
                counts = cache.counts(clf)
                eps0 = per_query_epsilon(budget[0], budget[1], int(q))
                curve.append(
                    {
                        "n_queries": int(q),
                        "epsilon_per_query": eps0,
                        "n_teachers": int(counts.sum(axis=1)[0]),
                        "expected_accuracy": expected_accuracy(counts, design.y_test, eps0),
                    }
                )
            out.append(
                {
                    "dataset": design.name,
                    "budget": list(budget),
                    "rule": name,
                    "seed": seed,
                    "curve": curve,
                }
            )
    return out


def student_sessions(
    design: Design,
    budgets: Sequence[tuple[float, float]],
    horizons: Sequence[int],
    seeds: Sequence[int],
    *,
    n_jobs: int = 1,
    tick=lambda _: None,
) -> list[dict[str, Any]]:
    """Live sessions (default rule): ``q`` real answers, then the student answers the rest.

    The live queries are ``q`` random test rows; the student (scaling + LR
    fitted on the released pairs) answers every other test row, at no further
    privacy cost.
    """
    out = []
    n_test = design.y_test.size
    for budget in budgets:
        for q in horizons:
            if q >= n_test:
                continue
            for seed in seeds:
                tick(f"{design.name} student after q={q} eps={budget[0]:g} seed={seed}")
                clf = session(q, budget, seed, n_jobs, student=teacher())
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(design.X, design.y)
                order = np.random.default_rng([seed, q]).permutation(n_test)
                live, later = order[:q], order[q:]
                answers = clf.predict(design.X_test[live])
                clf.fit_student()
                student = clf.predict(design.X_test[later])
                out.append(
                    {
                        "dataset": design.name,
                        "budget": list(budget),
                        "n_queries": int(q),
                        "seed": seed,
                        "n_teachers": int(clf.n_teachers_),
                        "live_accuracy": float(np.mean(answers == design.y_test[live])),
                        "student_accuracy": float(np.mean(student == design.y_test[later])),
                        "student_queries": int(later.size),
                    }
                )
    return out
