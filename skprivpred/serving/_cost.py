"""The public cost of a served model's answering path: the schedule's base interval.

The release schedule (:class:`~skprivpred.serving.ReleaseSchedule`) must
predict how long an answer takes from public quantities only, and predict it
well: a prediction far above the real time makes every response wait for
nothing, one below it overruns and raises the level. :class:`PathCost` reads
the path the answers take from the model's *structure* (never from what its
teachers learnt): the preprocessing steps of a pipeline in front of the
private estimator and their number of transformers, the number of teachers
and the kind of teacher the estimator was given (its ``estimator`` parameter,
by exact type: a scikit-learn linear classifier is voted in one stacked matrix
product, a tree by a stacked descent, anything else through its own
``predict``), and the rows asked.

The coefficients below are per row and per teacher (or per row and per
preprocessing step), measured on a quiet two-core machine (Python 3.12,
scikit-learn 1.7) on the Adult models of ``benchmarks/serving.py``; the
per-row ones are set about three times above what was measured, so that a
loaded machine still fits them, the per-request cost of a preprocessing step
just above the p99 of the quick-start pipeline's one-record requests, so that
a quiet service keeps to its base level at little cost (its comment gives the
figures; ``benchmarks/serving.py --only cost`` reports what they give). A
teacher of another kind keeps the schedule's ``per_row_teacher`` (1e-04 s by
default), which covers the fallback of a teacher that fails on part of a
batch (its retries on halves).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PathCost"]

#: Seconds per row and teacher of a stacked linear vote (measured: about 0.4 us).
LINEAR_PER_ROW_TEACHER = 1.5e-06
#: Seconds per row and teacher of a stacked tree descent.
TREE_PER_ROW_TEACHER = 5e-06
#: Seconds per request of a preprocessing step in front of the private estimator, and per
#: transformer it holds (a ``ColumnTransformer`` splits, transforms and joins data frames).
#: A one-record request to the Adult quick-start pipeline (``public_preprocessor``, two
#: transformers; 45 teachers) takes about 7 ms at p50 and 8.4 to 9.1 ms at p99 in all
#: (``benchmarks/serving.py --only cost``), under its base interval of 4 + 3.5 + 2 x 1.5 =
#: 10.6 ms.
STEP_PER_REQUEST = 3.5e-03
TRANSFORMER_PER_REQUEST = 1.5e-03
#: Seconds per row asked and per transformer of the preprocessing steps.
TRANSFORMER_PER_ROW = 1e-05
#: Seconds per row of a model without teachers (one private linear model, say).
MODEL_PER_ROW = 5e-06


@dataclass(frozen=True)
class PathCost:
    """The base interval of a ``/predict`` request: ``quantum + per_request + per_row * rows``.

    Attributes
    ----------
    quantum : float
        The schedule's interval of any request (seconds).
    per_request : float
        Seconds added per request (the preprocessing steps).
    per_row : float
        Seconds added per row asked.
    path : str
        The kind of path: ``"linear"``, ``"tree"``, ``"other"`` or ``"model"``
        (no teachers), for the card and the benchmarks.
    """

    quantum: float
    per_request: float
    per_row: float
    path: str

    def interval(self, n_rows: int) -> float:
        """The base interval (level 0) of a request of ``n_rows`` rows, in seconds."""
        return self.quantum + self.per_request + self.per_row * n_rows

    @classmethod
    def of(cls, estimator, schedule) -> PathCost:
        """The cost of ``estimator``'s path under ``schedule`` (public structure only).

        A schedule given an explicit ``per_row_teacher`` keeps its own rule
        (``quantum + per_row_teacher * rows * teachers``) for every model.
        """
        from ._model import final_step

        final = final_step(estimator)
        n_teachers = getattr(final, "n_teachers_", None)
        teachers = 1 if n_teachers is None else max(int(n_teachers), 1)
        if schedule.per_row_teacher is not None:
            return cls(schedule.quantum, 0.0, schedule.per_row_teacher * teachers, "given")
        transformers = [_transformers(step) for step in _preprocessing(estimator)]
        per_request = STEP_PER_REQUEST * len(transformers) + TRANSFORMER_PER_REQUEST * sum(
            transformers
        )
        per_row = TRANSFORMER_PER_ROW * sum(transformers)
        if n_teachers is None:
            return cls(schedule.quantum, per_request, per_row + MODEL_PER_ROW, "model")
        path = _teacher_path(final.get_params(deep=False).get("estimator"))
        coefficient = {
            "linear": LINEAR_PER_ROW_TEACHER,
            "tree": TREE_PER_ROW_TEACHER,
            "other": schedule.default_per_row_teacher,
        }[path]
        return cls(schedule.quantum, per_request, per_row + coefficient * teachers, path)


def _preprocessing(estimator) -> list:
    """The steps of a pipeline in front of its last (none for a bare estimator)."""
    steps = getattr(estimator, "steps", None)
    if not steps:
        return []
    return [s for _, s in steps[:-1] if s is not None and s != "passthrough"]


def _transformers(step: Any) -> int:
    """How many transformers a preprocessing step holds (nested ones counted)."""
    inner = getattr(step, "transformers", None)
    if isinstance(inner, list):
        return max(sum(_transformers(t) for _, t, _ in inner if t not in ("drop",)), 1)
    steps = getattr(step, "steps", None)
    if isinstance(steps, list):
        return max(sum(_transformers(s) for _, s in steps if s not in (None, "passthrough")), 1)
    return 1 if step != "passthrough" else 0


def _teacher_path(template: Any) -> str:
    """How teachers of the type of ``template`` vote (exact types, as the ensemble reads them)."""
    from .._teachers._fit import LINEAR_TEACHER_TYPES
    from .._teachers._trees import TREE_CLASSIFIER_TYPES, TREE_REGRESSOR_TYPES

    if type(template) in LINEAR_TEACHER_TYPES:
        return "linear"
    if type(template) in (*TREE_CLASSIFIER_TYPES, *TREE_REGRESSOR_TYPES):
        return "tree"
    return "other"
