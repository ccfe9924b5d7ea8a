"""The fitted teacher ensemble and its votes: stacked, answered through the isolation
boundary, counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from scipy import sparse
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_array

from .._base import known_label_index, one_label_index
from ..exceptions import InvalidParameterError
from ..preprocessing import is_public
from ._fit import LINEAR_TEACHER_TYPES, ConstantTeacher, realign
from ._folding import FoldedLinear, fold_pipeline
from ._isolation import (
    ProcessState,
    UserCode,
    call_user_code_by_row,
    freeze_rows,
    handed_rows,
    holds_warnings_lock,
    library_numerics,
    teacher_call,
    teacher_run,
    user_code,
)
from ._rows import FALLBACK_LABEL_INDEX, concat_rows, one_per_row, take_rows
from ._trees import StackedTrees, is_stackable

# Memory for one block of stacked linear scores (rows x score columns, float64):
# large batches are scored block by block so that memory stays bounded.
SCORE_BLOCK_BYTES = 8 * 2**20

# Query rows per joblib task when non-linear teachers vote in parallel (n_jobs > 1):
# a public constant, so the cut never depends on the data.
VOTE_BLOCK_ROWS = 2**16


def label_index(classes: np.ndarray, labels) -> np.ndarray:
    """Index of every label in the public label set ``classes`` (sorted).

    For labels known at fit time (a teacher's ``classes_``); a label outside
    ``classes`` raises. Query-time votes go through :func:`known_label_index`.
    """
    index, known = known_label_index(classes, labels)
    if not np.all(known):
        raise ValueError(
            "a teacher has a label outside the public label set `classes`; pass every "
            "label the base estimator can predict in `classes`."
        )
    return index


def fallback_value(y_bounds) -> float:
    """The output of a regression teacher on a row it cannot answer: the middle of ``y_bounds``."""
    lo, hi = (float(v) for v in y_bounds)
    return lo + (hi - lo) / 2.0


def answered_pieces(
    method: Callable[[Any], Any], X, convert: Callable[[Any, int], Any] | None = None
) -> list[tuple[slice, Any]]:
    """``method`` on the largest blocks of consecutive rows of ``X`` where it succeeds.

    ``method`` (then ``convert(output, n_rows)``, which raises for an output
    that is unusable as a whole, such as one of the wrong length) is called on
    all of ``X``; where that raises, on each half of the failing block, down to
    single rows. Any ``Exception`` counts as a failure.

    Returns
    -------
    list of (slice, object)
        The rows of every block that succeeded, in row order, and what
        ``convert`` (or ``method``) returned for it. A row that no block covers
        failed on its own. When nothing fails: one block, all of ``X``.
    """
    pieces: list[tuple[slice, Any]] = []
    n_rows = X.shape[0]

    def attempt(start: int, stop: int) -> None:
        block = X if (start, stop) == (0, n_rows) else take_rows(X, slice(start, stop))
        try:
            output = method(block)
            if convert is not None:
                output = convert(output, stop - start)
        except Exception:  # noqa: BLE001 - whether a teacher fails depends on its rows
            failed = True
        else:
            failed = False
            pieces.append((slice(start, stop), output))
        if failed and stop - start > 1:  # outside the handler: no chained tracebacks kept
            middle = (start + stop) // 2
            attempt(start, middle)
            attempt(middle, stop)

    attempt(0, n_rows)
    return pieces


def teacher_rows(method, X, convert: Callable[[Any, int], Any], fallback, dtype) -> np.ndarray:
    """One output per row of ``X``, ``fallback`` on the rows the teacher cannot answer.

    ``convert(output, n_rows)`` returns ``(values, usable)``: the per-row
    values (first axis: rows) and a boolean mask of the rows whose value is
    usable; it raises if the output is unusable as a whole.
    """
    n_rows = X.shape[0]
    pieces = answered_pieces(method, X, convert)
    if len(pieces) == 1 and pieces[0][0] == slice(0, n_rows):
        values, usable = pieces[0][1]
        if np.all(usable):  # the fast path: one call, every row answered
            return np.asarray(values, dtype=dtype)
    fill = np.asarray(fallback, dtype=dtype)
    out = np.empty((n_rows, *fill.shape), dtype=dtype)
    out[...] = fill
    for rows, (values, usable) in pieces:
        out[rows][usable] = np.asarray(values, dtype=dtype)[usable]
    return out


def _method(teacher, name: str) -> Callable[[Any], Any]:
    """``teacher.<name>`` called on the teacher's own rows, looked up at each call.

    The attribute lookup happens inside the call, so inside the guard of
    :func:`answered_pieces`: whether a fitted teacher *has* ``predict_proba``
    (a search that chose an estimator without it) depends on its rows, and
    raising there makes the row that teacher's fallback. The teacher is handed
    :func:`~skprivpred._teachers._isolation.handed_rows` of the block, at every call (so
    at every retry of the fallback bisection too): an array object of its own,
    whose values and metadata it can change for neither the caller, another
    teacher nor another call.
    """

    def call(block):
        return getattr(teacher, name)(handed_rows(block))

    return call


def isolated_rows(
    teacher,
    name: str,
    X,
    convert: Callable[[Any, int], Any],
    fallback,
    dtype,
    state: ProcessState | None = None,
) -> np.ndarray:
    """:func:`teacher_rows` of ``teacher.<name>``, the teacher in isolation.

    The batch is frozen once (:func:`~skprivpred._teachers._isolation.freeze_rows`; an
    already frozen batch is used as it is), and the teacher answers inside
    :func:`~skprivpred._teachers._isolation.teacher_call`: its warnings captured, under
    the library's floating-point state, numpy's and scikit-learn's
    process-wide state restored afterwards (to ``state``, a snapshot shared
    by a run of teachers, if given).
    """
    X = freeze_rows(X)
    with teacher_call(state):
        return teacher_rows(_method(teacher, name), X, convert, fallback, dtype)


def teacher_votes(teacher, X, classes: np.ndarray, state: ProcessState | None = None) -> np.ndarray:
    """Index in ``classes`` of the label ``teacher.predict`` gives each row of ``X``.

    A row on which the teacher raises, or predicts a label outside ``classes``,
    gets :data:`FALLBACK_LABEL_INDEX`.
    """
    if isinstance(teacher, ConstantTeacher):
        return np.full(X.shape[0], teacher.label_index, dtype=np.intp)

    def convert(labels, n_rows: int):
        return known_label_index(classes, one_per_row(labels, n_rows))

    return isolated_rows(teacher, "predict", X, convert, FALLBACK_LABEL_INDEX, np.intp, state)


def teacher_proba(teacher, X, classes: np.ndarray, state: ProcessState | None = None) -> np.ndarray:
    """``teacher.predict_proba`` on ``X`` in the columns of ``classes``, shape (n_rows, K).

    Each row is clipped to [0, 1] and normalised (a row that sums to zero
    becomes uniform over the teacher's own labels). A row on which the teacher
    raises, or gives a non-finite probability, gets the uniform distribution
    ``1 / K`` over ``classes``; so does every row when the teacher's labels
    (``classes_``) are not distinct labels of ``classes``.
    """
    n_classes = len(classes)
    uniform = np.full(n_classes, 1.0 / n_classes)
    if isinstance(teacher, ConstantTeacher):
        out = np.zeros((X.shape[0], n_classes))
        out[:, teacher.label_index] = 1.0
        return out
    with teacher_call(state):  # its labels are read in isolation too
        try:
            columns, known = known_label_index(classes, np.asarray(teacher.classes_).reshape(-1))
            usable_labels = (
                columns.size > 0 and known.all() and np.unique(columns).size == columns.size
            )
        except Exception:  # noqa: BLE001 - a custom teacher's labels may not compare at all
            usable_labels = False
    if not usable_labels:
        return np.tile(uniform, (X.shape[0], 1))

    def convert(proba, n_rows: int):
        proba = np.asarray(proba, dtype=float)
        if proba.shape != (n_rows, columns.size):
            raise ValueError(f"expected {columns.size} probabilities per row, got {proba.shape}.")
        usable = np.isfinite(proba).all(axis=1)
        if not usable.all():
            proba = np.where(usable[:, None], proba, 0.0)
        proba = np.clip(proba, 0.0, 1.0)
        sums = proba.sum(axis=1, keepdims=True)
        proba = np.where(sums > 0, proba / np.where(sums > 0, sums, 1.0), 1.0 / columns.size)
        out = np.zeros((n_rows, n_classes))
        out[:, columns] = proba
        return out, usable

    return isolated_rows(teacher, "predict_proba", X, convert, uniform, float, state)


def teacher_values(teacher, X, fallback: float, state: ProcessState | None = None) -> np.ndarray:
    """``teacher.predict`` on ``X`` as one float per row; ``fallback`` where it fails.

    A row on which the teacher raises, or predicts a non-finite value, gets
    ``fallback`` (the midpoint of the public output range:
    :func:`fallback_value`).
    """
    if isinstance(teacher, ConstantTeacher) and teacher.value is not None:
        return np.full(X.shape[0], teacher.value)

    def convert(values, n_rows: int):
        values = one_per_row(np.asarray(values, dtype=float), n_rows)
        return values, np.isfinite(values)

    return isolated_rows(teacher, "predict", X, convert, fallback, float, state)


def protected_proba_sum(teachers: list, X, classes: np.ndarray) -> np.ndarray:
    """Sum over teachers of ``predict_proba`` on PROTECTED rows, in the columns of ``classes``.

    As :func:`teacher_proba` for each teacher (clipped, normalised, the
    uniform distribution where a teacher fails or its labels are unusable),
    but row by row through the one boundary, as :func:`protected_votes` does.
    """
    n_classes = len(classes)
    uniform = np.full(n_classes, 1.0 / n_classes)
    total = np.zeros((X.shape[0], n_classes))
    for teacher in teachers:
        if isinstance(teacher, ConstantTeacher):
            total[:, teacher.label_index] += 1.0
            continue
        with teacher_call():  # its labels are read in isolation too
            try:
                labels = np.asarray(teacher.classes_).reshape(-1)
                columns, known = known_label_index(classes, labels)
                distinct = np.unique(columns).size == columns.size
                usable = columns.size > 0 and known.all() and distinct
            except Exception:  # noqa: BLE001 - a custom teacher's labels may not compare at all
                usable = False
        if not usable:
            total += uniform
            continue

        def check(proba, columns=columns) -> np.ndarray:
            proba = np.asarray(proba, dtype=float)
            if proba.shape != (1, columns.size) or not np.isfinite(proba).all():
                raise ValueError("not one finite row of probabilities")
            proba = np.clip(proba[0], 0.0, 1.0)
            total_mass = proba.sum()
            row = np.zeros(n_classes)
            row[columns] = proba / total_mass if total_mass > 0 else 1.0 / columns.size
            return row

        total += call_user_code_by_row(
            [teacher],
            X,
            lambda t, Z: t.predict_proba(Z),
            check,
            uniform,
            names=["estimator"],
            dtype=float,
        )[0]
    return total


def transform_rows(transform: Callable[[Any], Any], X) -> tuple[Any, np.ndarray | None]:
    """``transform`` of the rows of ``X`` on which it succeeds, and which rows those are.

    Returns ``(transform(X), None)`` when it succeeds on the whole batch;
    otherwise the outputs of the rows on which it succeeded, stacked in row
    order (``None`` if there are none), and the boolean mask of those rows.
    """
    n_rows = X.shape[0]

    def convert(output, n: int):
        if output.shape[0] != n:
            raise ValueError(f"expected {n} rows, got {output.shape[0]}.")
        return output

    pieces = answered_pieces(transform, X, convert)
    if len(pieces) == 1 and pieces[0][0] == slice(0, n_rows):
        return pieces[0][1], None
    answered = np.zeros(n_rows, dtype=bool)
    for rows, _ in pieces:
        answered[rows] = True
    return (concat_rows([output for _, output in pieces]) if pieces else None), answered


def _largest_magnitude(X) -> float:
    """``max |x|`` over the entries of a float array or CSR matrix (NaN if one is NaN)."""
    data = X.data if sparse.issparse(X) else X
    if data.size == 0:
        return 0.0
    with np.errstate(all="ignore"):
        return max(float(data.max()), -float(data.min()))


def finite_rows(X) -> np.ndarray:
    """Boolean mask of the rows of a float array or CSR matrix with only finite entries."""
    if sparse.issparse(X):
        X = sparse.csr_matrix(X)
        bad = ~np.isfinite(X.data)
        finite = np.ones(X.shape[0], dtype=bool)
        if bad.any():
            row_of_entry = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            finite[row_of_entry[bad]] = False
        return finite
    return np.isfinite(X).all(axis=1)


def _count_votes(
    teachers: list, X_block, classes: np.ndarray, protected: bool = False
) -> np.ndarray:
    """Votes per label of ``teachers`` on the rows ``X_block`` (one joblib task).

    With ``protected``, ``teachers`` holds each teacher's :class:`UserCode` (or
    None) and every row is voted alone (:func:`protected_votes`).
    """
    if protected:
        votes = protected_votes(teachers, X_block, classes)
        return np.stack(
            [np.count_nonzero(votes == k, axis=1) for k in range(len(classes))], axis=1
        ).astype(np.int64)
    X_block = freeze_rows(realign(X_block))  # once per task, for all its teachers
    counts = np.zeros((X_block.shape[0], len(classes)), dtype=np.int64)
    rows = np.arange(X_block.shape[0])  # distinct, so fancy "+=" adds once per row
    with teacher_run() as state:  # the lock held for the task; what every teacher answers from
        for teacher in teachers:
            counts[rows, teacher_votes(teacher, X_block, classes, state)] += 1
    return counts


def _predict(teacher, rows):
    """How a teacher is asked on one protected row (inside the boundary's guard)."""
    return teacher.predict(rows)


def teacher_codes(teachers: list) -> list[UserCode | None]:
    """One :class:`UserCode` per fitted teacher (its payload, made here once), or None.

    Pickling a fitted teacher is a contact with it: it runs inside
    :func:`~skprivpred._teachers._isolation.teacher_call`, and a teacher that cannot be
    pickled (whether it can depends on the block it was fitted on) gets None:
    it votes :data:`FALLBACK_LABEL_INDEX` on every protected row.
    """
    codes: list[UserCode | None] = []
    with teacher_run() as state:
        for j, teacher in teachers:
            try:
                with teacher_call(state):
                    codes.append(user_code(teacher, f"estimator (teacher {j})"))
            except InvalidParameterError:
                codes.append(None)
    return codes


def protected_votes(codes: list[UserCode | None], X, classes: np.ndarray) -> np.ndarray:
    """Votes on protected rows (training rows; the everlasting predictors' queries).

    Shape (n_rows, n_teachers), each row voted alone.

    Every teacher's vote on a row comes from a copy of its own, asked on that
    row alone through :func:`~skprivpred._teachers._isolation.call_user_code_by_row`
    (identical rows share one evaluation). A row on which the copy raises, or
    gives a label outside ``classes``, and every row of a teacher whose code
    is None, get :data:`FALLBACK_LABEL_INDEX`.
    """
    votes = np.full((X.shape[0], len(codes)), FALLBACK_LABEL_INDEX, dtype=np.intp)
    live = [k for k, code in enumerate(codes) if code is not None]
    if live and X.shape[0]:
        asked = [codes[k] for k in live]
        votes[:, live] = call_user_code_by_row(
            asked,
            X,
            _predict,
            one_label_index(classes),
            FALLBACK_LABEL_INDEX,
            names=[code.name for code in asked if code is not None],
            dtype=np.intp,
        ).T
    return votes


def _resolved_layout(step) -> Any:
    """What a fitted public step computes besides its parameters: the columns it resolved.

    A ``ColumnTransformer`` resolves its column specifications (a callable
    selector such as ``make_column_selector`` reads the dtypes of the rows it
    is fitted on) into the column lists of ``transformers_``; two clones with
    equal parameters compute the same function only when these lists are
    equal too. Nested pipelines and column transformers are followed.
    """
    if type(step) is Pipeline:
        return [_resolved_layout(sub) for _, sub in step.steps]
    if type(step) is ColumnTransformer:
        return [
            (name, _resolved_layout(sub), np.asarray(columns).tolist())
            for name, sub, columns in step.transformers_
        ]
    return type(step).__qualname__


def _provably_shared_first_step(fitted: list) -> bool:
    """Whether every fitted teacher's first step is the same public function."""
    if not all(type(t) is Pipeline and len(t.steps) > 1 for t in fitted):
        return False
    firsts = [t.steps[0][1] for t in fitted]
    same = repr(firsts[0].get_params(deep=True))
    layout = _resolved_layout(firsts[0])
    return all(
        is_public(step)
        and repr(step.get_params(deep=True)) == same
        and _resolved_layout(step) == layout
        for step in firsts
    )


def _shared_public_prefix(teachers: list) -> tuple[list, Any]:
    """Split off the data-independent first step that every fitted teacher shares.

    When every teacher that is not a constant is a ``Pipeline`` whose first
    step is public (:func:`~skprivpred.preprocessing.is_public`: it computes
    the same function whatever rows it saw), with the same parameters and the
    same resolved columns (:func:`_resolved_layout`), that step is applied
    once per query batch and the teachers keep the rest of their pipeline
    (which may then join the stacked linear votes). Otherwise every teacher
    keeps its own first step: a step shared by all must be provably the same
    for all, never one teacher's. The teachers are read in isolation
    (:func:`~skprivpred._teachers._isolation.teacher_call`); anything raised there means
    no sharing.
    """
    fitted = [t for t in teachers if not isinstance(t, ConstantTeacher)]
    if not fitted:
        return teachers, None
    try:
        with teacher_call():
            shared = _provably_shared_first_step(fitted)
    except Exception:  # noqa: BLE001 - reading a fitted teacher may raise
        shared = False
    if not shared:
        return teachers, None
    rest = [t if isinstance(t, ConstantTeacher) else _tail(t) for t in teachers]
    return rest, fitted[0].steps[0][1]


def _tail(pipeline: Pipeline):
    """A fitted pipeline without its first step (the last step alone if only one is left)."""
    return pipeline.steps[1][1] if len(pipeline.steps) == 2 else pipeline[1:]


@dataclass
class _LinearStack:
    """Columns of all linear teachers stacked into one weight matrix."""

    weights: np.ndarray  # (n_features, n_columns)
    intercepts: np.ndarray  # (n_columns,)
    n_binary: int  # binary teachers come first, one score column each
    binary_labels: np.ndarray  # (n_binary, 2): global label index for score <= 0, > 0
    binary_groups: list  # ((label if <= 0, label if > 0), columns): binary teachers by label pair
    multi_blocks: list  # (first column, global label indices) per multi-class teacher
    teacher_ids: np.ndarray  # teacher of each vote column: binary ones, then multi-class


def _float_rows(X_block):
    """``X_block`` as a float array or CSR matrix (finiteness is tested by the caller)."""
    return check_array(X_block, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False)


class TeacherEnsemble:
    """The fitted teachers of one estimator, and their batched votes.

    Parameters
    ----------
    teachers : list
        Fitted teachers (scikit-learn classifiers or :class:`ConstantTeacher`).
    classes : ndarray
        The public label set (sorted); votes are indices into it.
    """

    def __init__(self, teachers: list, classes: np.ndarray) -> None:
        self.classes = classes
        self.n_teachers = len(teachers)
        teachers, self._prefix = _shared_public_prefix(teachers)
        self._constant = []
        linear: list[tuple[int, Any]] = []
        trees: list[tuple[int, Any]] = []
        self._other: list[tuple[int, Any]] = []
        with teacher_run() as state:  # the lock held; what every teacher is read from
            for j, teacher in enumerate(teachers):
                if isinstance(teacher, ConstantTeacher):
                    self._constant.append((j, teacher.label_index))
                    continue
                try:  # every read of a fitted teacher is in isolation; a failure: own predict
                    with teacher_call(state):
                        kind, model = self._kind(teacher)
                except Exception:  # noqa: BLE001 - reading a fitted teacher may raise
                    kind, model = "other", teacher
                {"linear": linear, "tree": trees, "other": self._other}[kind].append((j, model))
        if linear:  # one width for the stacked product; any other votes by its own predict
            width = linear[0][1].coef_.shape[1]
            self._other += [(j, teachers[j]) for j, t in linear if t.coef_.shape[1] != width]
            linear = [(j, t) for j, t in linear if t.coef_.shape[1] == width]
        self._stack = self._build_stack(linear) if linear else None
        self._trees = None
        if trees:
            try:
                with teacher_call():
                    self._trees = StackedTrees([t for _, t in trees], classes)
            except Exception:  # noqa: BLE001 - the trees then vote through their own predict
                self._other += trees
                trees = []
        self._tree_teachers = trees

    def _kind(self, teacher) -> tuple[str, Any]:
        """How a fitted teacher votes: ``"linear"`` (with a snapshot), ``"tree"`` or ``"other"``.

        By exact type, as :mod:`skprivpred._teachers._trees` does: a user's subclass of a
        linear classifier may compute anything, so it votes through its own
        ``predict``. A linear teacher's parameters are copied here, once, into
        a :class:`~skprivpred._teachers._folding.FoldedLinear`; the stacked votes never
        touch the teacher again. A linear teacher with a label outside
        ``classes`` votes through its own predict, where such a vote becomes
        the fallback.
        """
        folded = None
        if type(teacher) in LINEAR_TEACHER_TYPES and not sparse.issparse(teacher.coef_):
            folded = FoldedLinear(
                np.atleast_2d(np.array(teacher.coef_, dtype=float)),
                np.array(teacher.intercept_, dtype=float).reshape(-1),
                np.array(teacher.classes_),
            )
        elif type(teacher) is Pipeline:
            folded = fold_pipeline(teacher, LINEAR_TEACHER_TYPES)  # affine steps folded in
        if folded is not None:
            n_scores = 1 if len(folded.classes_) == 2 else len(folded.classes_)
            if (
                folded.coef_.shape[0] == n_scores
                and folded.intercept_.size in (1, n_scores)
                and self._knows_labels(folded)
            ):
                return "linear", folded
            return "other", teacher
        if is_stackable(teacher, self.classes):
            return "tree", teacher
        return "other", teacher

    def _label_index(self, labels) -> np.ndarray:
        return label_index(self.classes, labels)

    def _knows_labels(self, teacher) -> bool:
        """Whether every label of a linear teacher is in the public label set."""
        return bool(known_label_index(self.classes, np.asarray(teacher.classes_))[1].all())

    def _build_stack(self, linear: list) -> _LinearStack:
        binary = [(j, t) for j, t in linear if len(t.classes_) == 2]
        multi = [(j, t) for j, t in linear if len(t.classes_) > 2]
        columns, intercepts, multi_blocks = [], [], []
        n_columns = 0
        for _, teacher in binary + multi:
            coef = np.atleast_2d(np.asarray(teacher.coef_, dtype=float))
            intercept = np.broadcast_to(
                np.asarray(teacher.intercept_, dtype=float), (coef.shape[0],)
            )
            if coef.shape[0] > 1:
                multi_blocks.append((n_columns, self._label_index(teacher.classes_)))
            columns.append(coef)
            intercepts.append(intercept)
            n_columns += coef.shape[0]
        binary_labels = np.array(
            [self._label_index(t.classes_) for _, t in binary], dtype=np.intp
        ).reshape(-1, 2)
        pairs = np.unique(binary_labels, axis=0)
        return _LinearStack(
            weights=np.ascontiguousarray(np.vstack(columns).T),
            intercepts=np.concatenate(intercepts),
            n_binary=len(binary),
            binary_labels=binary_labels,
            binary_groups=[
                (tuple(pair), np.flatnonzero((binary_labels == pair).all(axis=1))) for pair in pairs
            ],
            multi_blocks=multi_blocks,
            teacher_ids=np.array([j for j, _ in binary + multi], dtype=np.intp),
        )

    def _linear_input(self, X_block) -> tuple[Any, np.ndarray | None, float]:
        """``X_block`` as floats for the stacked product, the rows it holds (None: all), max |x|.

        A linear teacher's ``predict`` refuses a row that does not convert to
        finite floats (a string in an object array, a non-finite output of the
        shared prefix): such a row is left out, and every linear teacher votes
        :data:`FALLBACK_LABEL_INDEX` for it, as its own ``predict`` would have
        raised. One conversion and one pass (the largest magnitude, finite
        only when every entry is) when every row is fine.
        """
        X_num, answered = transform_rows(_float_rows, X_block)
        if X_num is None:
            return None, answered, 0.0
        largest = _largest_magnitude(X_num)
        if np.isfinite(largest):
            return X_num, answered, largest
        finite = finite_rows(X_num)
        kept = np.flatnonzero(answered) if answered is not None else np.arange(X_block.shape[0])
        answered = np.zeros(X_block.shape[0], dtype=bool)
        answered[kept[finite]] = True
        X_num = X_num[finite]
        return X_num, answered, _largest_magnitude(X_num)

    def _linear_scores(self, X_num, *, with_intercepts: bool = True) -> np.ndarray:
        """Decision scores of all linear teachers at once: one matrix product.

        ``X_num`` comes from :meth:`_linear_input` (float, finite rows). Computed
        under the library's floating-point state
        (:func:`~skprivpred._teachers._isolation.library_numerics`): an overflow gives a
        non-finite score, which is that teacher's fallback for that row, never a
        warning or a ``FloatingPointError``.
        """
        stack = self._stack
        assert stack is not None  # called only when there are linear teachers
        with library_numerics():
            scores = np.asarray(X_num @ stack.weights)
            if with_intercepts:
                scores += stack.intercepts
        return scores

    def _score_scale(self) -> tuple[float, float]:
        """Largest column sum of ``|weights|`` and largest ``|intercept|`` (cached)."""
        scale = self.__dict__.get("_scale")
        if scale is None:
            stack = self._stack
            assert stack is not None  # called only when there are linear teachers
            with library_numerics():
                scale = (
                    float(np.abs(stack.weights).sum(axis=0).max()),
                    float(np.abs(stack.intercepts).max()),
                )
            self._scale = scale
        return scale

    def _scores_finite(self, largest: float, raw: np.ndarray) -> bool:
        """Whether every stacked score (``raw`` plus intercepts) is finite.

        ``|x . w + b| <= max|x| * sum|w| + |b|``, with ``largest`` the rows'
        ``max|x|`` (:meth:`_linear_input`): below ``1e300`` in most batches, it
        proves every score finite without scanning them; otherwise they are
        tested one by one.
        """
        stack = self._stack
        assert stack is not None  # called only when there are linear teachers
        weights, intercept = self._score_scale()
        if largest * weights + intercept < 1e300:  # Python floats: never raises; False if NaN
            return True
        return bool(np.isfinite(raw).all() and np.isfinite(stack.intercepts).all())

    def _linear_votes(self, X_block) -> np.ndarray:
        """Votes of the linear teachers, one column per teacher in ``teacher_ids`` order."""
        stack = self._stack
        assert stack is not None  # called only when there are linear teachers
        X_num, answered, _ = self._linear_input(X_block)
        if answered is None:
            return self._stacked_votes(X_num)
        votes = np.full(
            (X_block.shape[0], len(stack.teacher_ids)), FALLBACK_LABEL_INDEX, dtype=np.intp
        )
        if X_num is not None:
            votes[answered] = self._stacked_votes(X_num)
        return votes

    def _stacked_votes(self, X_num) -> np.ndarray:
        stack = self._stack
        assert stack is not None  # called only when there are linear teachers
        scores = self._linear_scores(X_num)
        finite = np.isfinite(scores)
        votes = np.empty((scores.shape[0], len(stack.teacher_ids)), dtype=np.intp)
        n_binary = stack.n_binary
        positive = scores[:, :n_binary] > 0
        votes[:, :n_binary] = np.where(
            positive, stack.binary_labels[:, 1], stack.binary_labels[:, 0]
        )
        votes[:, :n_binary][~finite[:, :n_binary]] = FALLBACK_LABEL_INDEX
        for k, (first, labels) in enumerate(stack.multi_blocks):
            block = slice(first, first + len(labels))
            votes[:, n_binary + k] = np.where(
                finite[:, block].all(axis=1),
                labels[np.argmax(scores[:, block], axis=1)],
                FALLBACK_LABEL_INDEX,
            )
        return votes

    def _shared(self, X) -> tuple[Any, np.ndarray | None]:
        """``X`` through the public prefix that every fitted teacher shares (once per batch).

        Returns the transformed rows and which rows they are (``None``: all).
        A row that the prefix cannot transform is one on which every fitted
        teacher's own pipeline would have raised: they all vote
        :data:`FALLBACK_LABEL_INDEX` for it.
        """
        if self._prefix is None:
            return X, None
        X = freeze_rows(X)
        with teacher_call():  # a fitted step: read in isolation, handed its own rows
            return transform_rows(_method(self._prefix, "transform"), X)

    @property
    def _fitted_ids(self) -> np.ndarray:
        """The teachers that are not constant (their votes depend on the query)."""
        constant = {j for j, _ in self._constant}
        return np.array([j for j in range(self.n_teachers) if j not in constant], dtype=np.intp)

    def _tree_rows(self, X) -> tuple[Any, list]:
        """Rows for the stacked trees, and the teachers that vote through their own ``predict``.

        The rows are None when there are no tree teachers or when the trees do
        not take this batch on the stacked path (:meth:`StackedTrees.prepare`);
        the tree teachers then join the others.
        """
        X_trees = None if self._trees is None else self._trees.prepare(X)
        if self._trees is None or X_trees is not None:
            return X_trees, self._other
        return None, self._other + self._tree_teachers

    def votes(self, X, *, protected: bool = False) -> np.ndarray:
        """Vote matrix of shape (n_rows, n_teachers): global label index per teacher.

        A teacher that cannot answer a row (see :func:`teacher_votes`) votes
        :data:`FALLBACK_LABEL_INDEX` for it. ``protected``: the rows are
        protected (the everlasting predictors' queries), and every teacher
        that votes through its own ``predict`` answers each row alone
        (:func:`protected_votes`).
        """
        with library_numerics():
            return self._votes(X, protected)

    def __getstate__(self) -> dict:
        """The ensemble without its cache of teacher payloads (:meth:`_codes`).

        The cache holds cloudpickle bytes: never written into a pickle or a model
        file (which is never a pickle); a copy makes its own when it needs them.
        """
        state = self.__dict__.copy()
        state.pop("_user_codes", None)
        return state

    def _codes(self, other: list) -> list[UserCode | None]:
        """The :class:`UserCode` of each teacher of ``other``, made once per ensemble."""
        cache = self.__dict__.setdefault("_user_codes", {})
        missing = [(j, teacher) for j, teacher in other if j not in cache]
        for (j, _), code in zip(missing, teacher_codes(missing)):
            cache[j] = code
        return [cache[j] for j, _ in other]

    def _votes(self, X, protected: bool = False) -> np.ndarray:
        out = np.full((X.shape[0], self.n_teachers), FALLBACK_LABEL_INDEX, dtype=np.intp)
        for j, label in self._constant:
            out[:, j] = label
        X, answered = self._shared(X)
        if X is None:
            return out
        fitted = out if answered is None else np.empty((X.shape[0], self.n_teachers), np.intp)
        if self._stack is not None:
            fitted[:, self._stack.teacher_ids] = self._linear_votes(X)
        X_trees, other = self._tree_rows(X)
        if self._trees is not None and X_trees is not None:
            fitted[:, [j for j, _ in self._tree_teachers]] = self._trees.votes(X_trees)
        if other and protected:
            fitted[:, [j for j, _ in other]] = protected_votes(self._codes(other), X, self.classes)
        elif other:
            X_frozen = freeze_rows(X)  # one read-only copy; each teacher is handed a view
            with teacher_run() as state:  # the lock held; what every teacher answers from
                for j, teacher in other:
                    fitted[:, j] = teacher_votes(teacher, X_frozen, self.classes, state)
        if answered is not None:
            ids = self._fitted_ids
            out[np.ix_(np.flatnonzero(answered), ids)] = fitted[:, ids]
        return out

    def vote_counts(self, X, n_jobs: int | None = None, *, protected: bool = False) -> np.ndarray:
        """Votes per label, shape (n_rows, n_classes).

        Equivalent to counting :meth:`votes` per label, without building the
        (rows x teachers) vote matrix: constant teachers add a fixed vector,
        linear teachers are counted from their stacked scores block by block
        (bounded memory), scikit-learn trees and forests from their stacked
        descent (:class:`~skprivpred._teachers._trees.StackedTrees`, in this process),
        and the other teachers vote through :meth:`_add_other_votes`: in this
        process, or in parallel through joblib when ``n_jobs`` (and the active
        joblib backend) give more than one job. A teacher that cannot answer a
        row votes :data:`FALLBACK_LABEL_INDEX`.

        With ``protected=True`` the rows are protected (training rows: the
        validation part of a private search; the queries of the everlasting
        predictors): the votes the library computes itself (stacked linear
        scores, stacked tree descents, constant teachers) are row-wise by
        construction and stay batched, and every other teacher answers each
        row alone through the one boundary (:func:`protected_votes`, from one
        :class:`~skprivpred._teachers._isolation.UserCode` per teacher made once per
        ensemble), in this process or in blocks of rows through joblib.
        """
        with library_numerics():
            return self._vote_counts(X, n_jobs, protected)

    def _vote_counts(self, X, n_jobs: int | None, protected: bool = False) -> np.ndarray:
        n_rows = X.shape[0]
        counts = np.zeros((n_rows, len(self.classes)), dtype=np.int64)
        for _, label in self._constant:
            counts[:, label] += 1
        X, answered = self._shared(X)
        if answered is not None:  # rows the shared prefix cannot take
            counts[~answered, FALLBACK_LABEL_INDEX] += self.n_teachers - len(self._constant)
        if X is None:
            return counts
        fitted = counts if answered is None else np.zeros((X.shape[0], len(self.classes)), np.int64)
        self._add_fitted_votes(fitted, X, n_jobs, protected)
        if answered is not None:
            counts[answered] += fitted
        return counts

    def _add_fitted_votes(
        self, counts: np.ndarray, X, n_jobs: int | None, protected: bool = False
    ) -> None:
        """Add the votes of the teachers that are not constant on the rows ``X``."""
        n_rows = X.shape[0]
        if self._stack is not None:
            block_rows = max(1, SCORE_BLOCK_BYTES // (8 * self._stack.weights.shape[1]))
            for start in range(0, n_rows, block_rows):
                block = slice(start, min(start + block_rows, n_rows))
                self._add_linear_votes(
                    counts[block], X.iloc[block] if hasattr(X, "iloc") else X[block]
                )
        X_trees, other = self._tree_rows(X)
        if self._trees is not None and X_trees is not None:
            counts += self._trees.vote_counts(X_trees)
        if other:
            self._add_other_votes(counts, X, n_jobs, other, protected)

    def _add_other_votes(
        self, counts: np.ndarray, X, n_jobs: int | None, other: list, protected: bool = False
    ) -> None:
        """Add the votes of ``other`` (``(j, teacher)`` pairs), through joblib if ``n_jobs`` allows.

        A batch of at most ``VOTE_BLOCK_ROWS`` rows, or one effective job (the
        default: ``n_jobs=None`` under the loky backend), is voted here: every
        teacher predicts all rows. A larger batch is cut into blocks of
        ``VOTE_BLOCK_ROWS`` rows, one joblib task each (all teachers), so that
        any joblib backend (loky, dask, ray) spreads it over its workers. The
        counts are exact integers, so they do not depend on the backend or on
        the cut; tasks are consumed in order as they finish, so memory is
        bounded by the blocks in flight, never rows x teachers. With
        ``protected``, each block is voted row by row (:func:`protected_votes`),
        from one :class:`UserCode` per teacher.
        """
        teachers: list = [teacher for _, teacher in other]
        if protected:
            teachers = self._codes(other)
        if holds_warnings_lock():  # (asked inside a captured section: stay in this thread)
            n_jobs = 1
        X = freeze_rows(X)  # one read-only copy; each teacher is handed a view of its own
        n_rows = X.shape[0]
        block_rows = VOTE_BLOCK_ROWS
        if n_rows <= block_rows or effective_n_jobs(n_jobs) == 1:
            counts += _count_votes(teachers, X, self.classes, protected)
            return
        blocks = [
            slice(start, min(start + block_rows, n_rows)) for start in range(0, n_rows, block_rows)
        ]
        results = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_count_votes)(teachers, take_rows(X, block), self.classes, protected)
            for block in blocks
        )
        for block, block_counts in zip(blocks, results):
            counts[block] += block_counts

    def _add_linear_votes(self, counts: np.ndarray, X_block) -> None:
        stack = self._stack
        assert stack is not None  # called only when there are linear teachers
        X_num, answered, largest = self._linear_input(X_block)
        if answered is None:
            self._add_stacked_votes(counts, X_num, largest)
            return
        counts[~answered, FALLBACK_LABEL_INDEX] += len(stack.teacher_ids)
        if X_num is not None:
            answered_counts = np.zeros((X_num.shape[0], counts.shape[1]), dtype=counts.dtype)
            self._add_stacked_votes(answered_counts, X_num, largest)
            counts[answered] += answered_counts

    def _add_stacked_votes(self, counts: np.ndarray, X_num, largest: float) -> None:
        stack = self._stack
        assert stack is not None  # called only when there are linear teachers
        raw = self._linear_scores(X_num, with_intercepts=False)
        if not self._scores_finite(largest, raw):
            # A non-finite score is its teacher's fallback: count the votes one by one.
            votes = self._stacked_votes(X_num)
            for k in range(counts.shape[1]):
                counts[:, k] += np.count_nonzero(votes == k, axis=1)
            return
        # A binary teacher votes its second label where score + intercept > 0.
        positive = raw[:, : stack.n_binary] > -stack.intercepts[: stack.n_binary]
        for (negative_label, positive_label), columns in stack.binary_groups:
            group = positive if len(columns) == stack.n_binary else positive[:, columns]
            # Summing the booleans as bytes is the fastest row count numpy offers.
            n_positive = group.view(np.uint8).sum(axis=1, dtype=np.int64)
            counts[:, positive_label] += n_positive
            counts[:, negative_label] += len(columns) - n_positive
        rows = np.arange(counts.shape[0])
        for first, labels in stack.multi_blocks:
            block = (
                raw[:, first : first + len(labels)] + stack.intercepts[first : first + len(labels)]
            )
            counts[rows, labels[np.argmax(block, axis=1)]] += 1
