"""Fitting the teachers: one clone per disjoint part, in parallel, seeded publicly."""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from scipy import sparse
from sklearn import linear_model
from sklearn.base import clone
from sklearn.svm import LinearSVC

from ._isolation import RAISE, UserCode, call_user_code, holds_warnings_lock, user_code
from ._rows import FALLBACK_LABEL_INDEX, take_rows

# Public scikit-learn classifiers whose ``predict`` is exactly
# ``classes_[argmax(X @ coef_.T + intercept_)]`` (binary: sign of the one score).
# Looked up by name so that a class a scikit-learn release removes
# (PassiveAggressiveClassifier is deprecated) simply drops out.
LINEAR_TEACHER_TYPES = tuple(
    getattr(linear_model, name)
    for name in (
        "LogisticRegression",
        "LogisticRegressionCV",
        "PassiveAggressiveClassifier",
        "Perceptron",
        "RidgeClassifier",
        "RidgeClassifierCV",
        "SGDClassifier",
    )
    if hasattr(linear_model, name)
) + (LinearSVC,)


# Teacher fits are grouped into about this many joblib tasks per effective job
# (one teacher per task when there are fewer teachers): thousands of small fits
# then share a task's overhead, and the tasks still balance over the workers.
FIT_TASKS_PER_JOB = 64


class ConstantTeacher:
    """A teacher whose output is fixed whatever the query: a label index or a value.

    A classification block with a single label gets one (it always votes that
    label), and so does a block whose fit raised, when the caller passes a
    ``fallback`` to :func:`fit_teachers`.

    Parameters
    ----------
    label_index : int, default=None
        Classification: the index, in the public label set, that it always votes.
    value : float, default=None
        Regression: the value that it always predicts. Exactly one of
        ``label_index`` and ``value`` is given.
    """

    def __init__(self, label_index: int | None = None, *, value: float | None = None) -> None:
        if (label_index is None) == (value is None):
            raise ValueError("a ConstantTeacher has a label_index or a value, not both or neither.")
        self.label_index = FALLBACK_LABEL_INDEX if label_index is None else int(label_index)
        self.value = None if value is None else float(value)


def realign(data):
    """``data`` with its buffers aligned in memory (copied only if they are not).

    A remote joblib backend (dask, ray) can deliver arrays at unaligned
    addresses; numpy then cannot use BLAS and ``X @ w`` runs many times slower.
    Arrays and CSR/CSC matrices are realigned; other inputs are returned as
    they are.
    """
    if isinstance(data, np.ndarray):
        return data if data.flags.aligned else np.require(data, requirements="A")
    if sparse.issparse(data) and hasattr(data, "indptr"):
        if not all(a.flags.aligned for a in (data.data, data.indices, data.indptr)):
            return data.copy()
    return data


def _fit_copy(teacher, X_part, y_part, seeds: dict):
    """Fit one teacher (a copy of its own, from the boundary) on its own copy of its block.

    The block is handed by the boundary as an object of its own; a DataFrame's
    dtypes are re-inferred from its own rows (``DataFrame.infer_objects``): a
    column that is ``object`` in the whole training set only because of rows of
    another block becomes numeric again, so no dtype depends on rows outside
    the block.
    """
    if seeds:
        teacher.set_params(**seeds)
    X_part = X_part.infer_objects() if hasattr(X_part, "iloc") else realign(X_part)
    return teacher.fit(X_part, realign(y_part))


def _fitted(output):
    """The output of a teacher's ``fit``: a fitted object (``None`` is a failure)."""
    if output is None:
        raise ValueError("fit returned None")
    return output


def _seed_keys(estimator) -> list[str]:
    """Parameters of ``estimator`` named ``random_state`` (at any depth) that are unset."""
    return [
        key
        for key, value in estimator.get_params(deep=True).items()
        if (key == "random_state" or key.endswith("__random_state")) and value is None
    ]


def teacher_code(estimator) -> UserCode:
    """An unfitted clone of ``estimator``, pickled once: every teacher is a copy of its own.

    Raises ``InvalidParameterError`` if it cannot be pickled (see
    :func:`~skprivpred._teachers._isolation.user_code`): call it before any charge.
    """
    if isinstance(estimator, UserCode):
        return estimator
    return user_code(clone(estimator), "estimator")


def _fit_batch(estimator, jobs: list, fallback=None) -> list:
    """Fit one teacher per job (one joblib task for many teachers), through the boundary.

    ``estimator`` is the template, or its :class:`~skprivpred._teachers._isolation.UserCode`
    (:func:`teacher_code`). Each job is ``(seeds, X_part, y_part,
    y_index_part)``. A block with a single label gets a :class:`ConstantTeacher`
    (no user code runs). Every other block is one protected unit of
    :func:`~skprivpred._teachers._isolation.call_user_code`: a copy of the template of
    its own (unpickled from one payload: no closure, attribute or cache is
    shared between teachers), its ``seeds`` set on its unset ``random_state``
    parameters, fitted on its block handed as an object of its own
    (:func:`_fit_copy`), with its warnings captured, under a fixed
    floating-point state, scikit-learn's configuration and the global random
    states restored after it. Every fit validates its parameters and data (no
    fit's configuration depends on whether another block fitted). A fit that
    raises (or returns None) gives ``fallback`` (``None``: the exception is
    raised).
    """
    code = teacher_code(estimator)
    teachers: list = [None] * len(jobs)
    units, where = [], []
    for k, (seeds, X_part, y_part, y_index_part) in enumerate(jobs):
        if y_index_part is not None and np.unique(y_index_part).size == 1:
            teachers[k] = ConstantTeacher(y_index_part[0])
        else:
            units.append((X_part, y_part, seeds))
            where.append(k)
    fitted = call_user_code(
        code,
        units,
        _fit_copy,
        _fitted,
        RAISE if fallback is None else fallback,
        name="estimator",
    )
    for k, teacher in zip(where, fitted):
        teachers[k] = teacher
    return teachers


def teacher_seeds(estimator, n_teachers: int, rng: np.random.Generator) -> list[dict]:
    """The ``random_state`` parameters of every teacher, drawn from the fit stream ``rng``.

    One draw per unset ``random_state`` parameter of ``estimator`` and per
    teacher, in teacher order: the teachers fitted in memory
    (:func:`fit_teachers`) and on a cluster (:mod:`skprivpred._teachers._dask_teachers`)
    get the same seeds from the same stream.
    """
    keys = _seed_keys(estimator)
    return [{key: int(rng.integers(0, 2**31 - 1)) for key in keys} for _ in range(n_teachers)]


def fit_teachers(
    estimator,
    X,
    y,
    y_index,
    parts,
    rng,
    n_jobs=None,
    fallback: int | ConstantTeacher | None = None,
) -> list:
    """Fit one clone of ``estimator`` per block of ``parts``, in parallel with joblib.

    For classification, ``y_index`` holds each row's index in the public label
    set and blocks with a single label get a :class:`ConstantTeacher`; for
    regression it is None. Teachers with an unset ``random_state`` are seeded
    from ``rng`` (the fit stream), in block order, so a fit is reproducible for
    an integer seed whatever the joblib backend and however the fits are
    grouped into tasks. With ``fallback`` (a :class:`ConstantTeacher`, or an
    index in the public label set for one that votes it), a teacher whose
    ``fit`` raises becomes that constant teacher instead: whether a fit fails
    depends on its block's rows, so the failure must not reach whoever sees the
    estimator's behaviour (the caller of ``predict`` when a phase change fits
    teachers inside it, a service that refits).

    Every fit goes through the one boundary (:func:`_fit_batch`): the
    template is pickled once here (:func:`teacher_code`; one that cannot be
    pickled is refused with an ``InvalidParameterError`` before any block is
    read) and each teacher is a copy of its own, fitted on its block alone.

    The fits are grouped into about ``FIT_TASKS_PER_JOB`` joblib tasks per
    effective job (:func:`_fit_batch`), consecutive blocks together; the
    grouping depends only on the number of teachers and of jobs. Called from
    a section that holds the warnings lock (a candidate of a private search),
    the fits run in the calling thread: a joblib worker thread could never
    take that lock.
    """
    if fallback is not None and not isinstance(fallback, ConstantTeacher):
        fallback = ConstantTeacher(fallback)
    if holds_warnings_lock():  # (a fit inside a captured section: joblib threads would wait)
        n_jobs = 1
    seeds = teacher_seeds(estimator, len(parts), rng)
    code = teacher_code(estimator)  # one payload, before any block is read
    per_task = max(1, len(parts) // (FIT_TASKS_PER_JOB * effective_n_jobs(n_jobs)))

    def jobs(start: int) -> list:
        return [
            (
                seeds[k],
                take_rows(X, parts[k]),
                y[parts[k]],
                None if y_index is None else y_index[parts[k]],
            )
            for k in range(start, min(start + per_task, len(parts)))
        ]

    batches = Parallel(n_jobs=n_jobs)(
        delayed(_fit_batch)(code, jobs(start), fallback) for start in range(0, len(parts), per_task)
    )
    return [teacher for batch in batches for teacher in batch]
