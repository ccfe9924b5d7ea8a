"""The cost of asking teachers: stacked votes, one-row answers, the isolation boundary.

Replaces ``benchmarks/isolation.py --before`` and ``benchmarks/boundary_cost.py --before``:
compare two revisions with ``asv continuous`` (``benchmarks/README.md``).
"""

from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from skprivpred import (
    ExponentialMechanismClassifier,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
)

from ._data import classification, quiet


class StackedVotes:
    """One batch answered by 100 teachers whose votes are stacked (linear or depth-6 trees)."""

    params = (["linear", "trees"], [1_000, 20_000])
    param_names = ["teachers", "rows"]
    timeout = 300

    def setup_cache(self):
        quiet()
        X, y = classification(10_000)
        teachers = {"linear": LogisticRegression(), "trees": DecisionTreeClassifier(max_depth=6)}
        return {
            name: SubsampleAverageClassifier(
                teacher, n_teachers=100, epsilon=1.0, classes=[0, 1], random_state=0
            ).fit(X, y)
            for name, teacher in teachers.items()
        }

    def setup(self, fitted, teachers, rows):
        quiet()
        self.queries = classification(rows, seed=1)[0]

    def time_predict(self, fitted, teachers, rows):
        fitted[teachers].predict(self.queries)


class OneRow:
    """What a service answers per request: one row, default teachers or teachers on their own.

    ``own`` teachers (a scaler and a tree, 50 of them) answer through their own ``predict``,
    each in isolation: the boundary's per-teacher cost.
    """

    params = ["default", "own"]
    param_names = ["teachers"]
    timeout = 300

    def setup_cache(self):
        quiet()
        X, y = classification(5_000)
        own = make_pipeline(StandardScaler(), DecisionTreeClassifier(max_depth=4))
        return {
            "default": SubsampleAggregateClassifier(classes=[0, 1], random_state=0).fit(X, y),
            "own": SubsampleAggregateClassifier(
                own, n_teachers=50, classes=[0, 1], random_state=0
            ).fit(X, y),
        }

    def setup(self, fitted, teachers):
        quiet()
        self.row = classification(1, seed=2)[0]

    def time_predict_one_row(self, fitted, teachers):
        fitted[teachers].predict(self.row)


def _threshold(column: int, value: float):
    def hypothesis(X):
        return (X[:, column] >= value).astype(int)

    return hypothesis


class CallableBoundary:
    """``ExponentialMechanismClassifier.fit`` over user callables, each labelling the rows.

    Every callable is user code: it runs behind the isolation boundary, so the cost grows with
    callables x rows.
    """

    params = [100, 400]
    param_names = ["rows"]
    timeout = 300

    def setup(self, rows):
        quiet()
        self.X, self.y = classification(rows, n_features=4)
        self.hypotheses = [_threshold(k % 2, -1.0 + 0.1 * k) for k in range(10)]

    def time_fit(self, rows):
        ExponentialMechanismClassifier(
            self.hypotheses, epsilon=1.0, classes=[0, 1], random_state=0
        ).fit(self.X, self.y)
