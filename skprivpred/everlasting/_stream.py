"""The query stream shared by the everlasting predictors: phases, query batches and
the hand-off from one phase's teachers to the next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

from .._base import (
    PrivatePredictorMixin,
    QueryPlan,
    answer,
    binary_only_message,
    finite_target_column,
    process_identity,
    resolve_binary_classes,
)
from .._teachers._rows import take_rows
from ..exceptions import (
    ForkedStateError,
    PhaseDataError,
    PredictorHaltedError,
    PrivacyParameterError,
)
from ..mechanisms._sparse_vector import BetweenThresholds
from ..utils._typing import MatrixLike
from ._plan import (
    _OPEN_UNIT,
    _POSITIVE,
    _POSITIVE_INT,
    GenericBBLPhase,
    PracticalPhase,
    _answers_or_halt,
)

# -- the stream engine shared by both estimators ------------------------------------------------
STATUS_ACTIVE, STATUS_HALTED = "active", "halted"


def _dense(X_checked):
    """Validated rows as a dense array (a sparse matrix is densified)."""
    return X_checked.toarray() if sparse.issparse(X_checked) else X_checked


def _pool_form(X, X_checked) -> Any:
    """The public form of a training set: ``("frame", columns)``, ``"sparse"`` or ``"array"``."""
    if hasattr(X, "iloc"):
        return ("frame", X.columns)
    return "sparse" if sparse.issparse(X_checked) else "array"


@dataclass(frozen=True)
class _QueryBatch:
    """Query rows as the teachers take them, and as the hypothesis class takes them (or None).

    Sliced like an array (``take_rows``), so that the stream engine cuts it at
    phase boundaries as one block.
    """

    rows: Any
    points: np.ndarray | None
    shape: tuple[int, ...] = field(init=False)  # the rows' (read by the answering path)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", self.rows.shape)

    def __getitem__(self, index: Any) -> _QueryBatch:
        points = None if self.points is None else self.points[index]
        return _QueryBatch(take_rows(self.rows, index), points)


class _EverlastingStream(PrivatePredictorMixin, ClassifierMixin, BaseEstimator):
    """Phases, stream order, halting and the public stream attributes.

    A subclass provides, for the current phase: ``_prepare_queries(X)``
    (validation, before anything is charged: whatever the phase boundary will
    need of a query is checked here, so that nothing raises after the charge),
    optionally ``_dry_run(rows)`` (the refusal of rows no teacher can read),
    ``_answer_block(block, rng)`` (answers, as indices into ``classes_``, for
    a prefix of the block; shorter only when the mechanism halted),
    ``_record(block, answers, first_slot)`` (keep what the next phase needs)
    and ``_next_phase()`` (train the next phase's teachers). ``predict`` answers
    through the answering path (:func:`skprivpred._base.answer`, one charge for
    the call); the engine cuts every call at phase boundaries, in row order,
    under the query lock.

    The fitted state has one owner: the object ``fit`` returned, in the
    process that ran ``fit`` (:meth:`_own_stream`). A copy (pickle, joblib,
    ``copy.deepcopy``) or the same object in a forked child refuses to answer
    with :class:`~skprivpred.exceptions.ForkedStateError`.
    """

    # -- public, read-only stream attributes --------------------------------------------------
    def _stream(self) -> dict:
        check_is_fitted(self, "classes_")
        return self._state

    @property
    def phase_(self) -> int:
        """Index of the current phase (from 1). Public: a function of the number of queries."""
        return self._stream()["params"].phase

    @property
    def queries_in_phase_(self) -> int:
        """Queries answered in the current phase."""
        return self._stream()["queries_in_phase"]

    @property
    def phase_schedule_(self) -> tuple:
        """Sizes of every phase started so far, one dict per phase (data-independent)."""
        return tuple(asdict(params) for params in self._stream()["history"])

    def _tops_used(self) -> int:
        """TOP outcomes of BetweenThresholds in the current phase (0 for the Gaussian vote).

        NOT PRIVATE for queries, hence not a public attribute: it depends on
        the data and reveals whether a query hidden from the adversary hit TOP,
        even when the predictor does not halt, which the released answers do
        not. For tests and diagnostics only.
        """
        mechanism = self._stream()["bt"]
        return 0 if mechanism is None else mechanism.tops_used

    @property
    def status_(self) -> str:
        """``"active"`` or ``"halted"`` (a halt is observable anyway).

        A predictor that went on with a default label after its halt would
        give a constant answer stream, just as observable as the halt.
        """
        return self._stream()["status"]

    # -- stream mechanics --------------------------------------------------------------------
    def _start_phase_state(
        self, params: GenericBBLPhase | PracticalPhase, bt: BetweenThresholds | None
    ) -> None:
        state = self._state
        state["params"] = params
        state["history"].append(params)
        state["queries_in_phase"] = 0
        state["bt"] = bt

    def _row_guarantee(self, n_rows: int) -> tuple[float, float, float | None]:
        """Per-row ``(epsilon, delta, rho)`` charged for the next ``n_rows`` queries."""
        raise NotImplementedError

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Answer each row as one query, in row order, consuming the stream.

        Rows after a phase boundary are answered by the next phase's teachers,
        which are trained (inside this call) on the finished phase's queries.
        Calling ``predict`` twice on the same rows asks new queries: the
        answers are new draws. ``score`` calls ``predict`` and consumes queries
        too. An attached ``accountant`` is charged for every row of the call
        at the per-query guarantee (``privacy_guarantee_.details``) before
        any noise is drawn; if it refuses, nothing changes.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows (no NaN or infinity).

        Returns
        -------
        ndarray of shape (n_queries,)
            One label per row, from ``classes_``.

        Raises
        ------
        PredictorHaltedError
            When the TOP budget runs out (the error carries the answers of this
            call, the halting row included), and at once on every later call.
            The rows after the halting one were charged but not answered.
        BudgetExhaustedError
            If the accountant refuses the charge; nothing is answered then.
        ForkedStateError
            If this object is a copy of the fitted predictor (pickle, joblib,
            ``copy.deepcopy``) or is used in a process forked from the one
            that fitted it; nothing is charged or answered then.
        """
        return answer(self, X, self._query_plan())

    def _query_plan(self) -> QueryPlan:
        """How ``predict`` answers: one charge for the call, then the phases in row order.

        The public checks are the stream's (its owner, whether it halted) and
        the queries' (:meth:`_prepare_queries`); the dry run is the
        subclass's (:attr:`_dry_run`); the per-row charge is the largest
        guarantee among the phases the call reaches (:meth:`_row_guarantee`,
        public: a function of the number of queries). The phases interleave
        their computation (the teachers' votes) and their mechanism
        (BetweenThresholds or the Gaussian vote, then the next phase's
        training at a boundary), so the plan's computation passes the checked
        rows on and its mechanism is :meth:`_answer_stream`, under the query
        lock; its post-processing raises the halt, if the call halted.
        """
        self._stream()  # NotFittedError before fit
        return QueryPlan(
            check=self._check_queries,
            dry_run=self._dry_run,
            charge_rows=self._row_guarantee,
            values=self._phase_rows,
            draw=self._answer_stream,
            finish=_answers_or_halt,
        )

    def _phase_rows(self, rows: Any, n_jobs: int | None) -> Any:
        """The plan's computation: the checked rows, as the phases take them."""
        return rows

    #: The dry run of a query call on its checked rows (``None``: the subclass has none).
    _dry_run: Callable[[Any], None] | None = None

    def _check_queries(self, X: MatrixLike) -> Any:
        """The public checks of a query call, before anything is charged or drawn."""
        self._check_stream_owner()
        self._raise_if_halted()
        return self._prepare_queries(X)

    def _raise_if_halted(self) -> None:
        if self._stream()["status"] == STATUS_HALTED:
            raise PredictorHaltedError(
                f"{type(self).__name__} has halted; it answers no more queries."
            )

    def _answer_stream(
        self, X: MatrixLike, rng: np.random.Generator
    ) -> tuple[np.ndarray, PredictorHaltedError | None]:
        """Answer the rows in order, phase by phase; runs under the query lock.

        Returns the answers and, if the predictor halted during the call, the
        error to raise (outside the lock). The release path counts every
        charged row as answered; rows after a halt are uncounted here.
        """
        n_rows = X.shape[0]
        answered: list[np.ndarray] = []
        start = 0
        state = self._state
        halt: PredictorHaltedError | None = None
        if state["status"] == STATUS_HALTED:  # another thread halted the stream meanwhile
            halt = PredictorHaltedError(
                f"{type(self).__name__} has halted; it answers no more queries."
            )
        while start < n_rows and halt is None:
            params = state["params"]
            stop = min(n_rows, start + params.phase_length - state["queries_in_phase"])
            block = take_rows(X, np.arange(start, stop))
            answers = self._answer_block(block, rng)
            if answers.size < stop - start:
                block = take_rows(block, np.arange(answers.size))
            self._record(block, answers, state["queries_in_phase"])
            state["queries_in_phase"] += answers.size
            answered.append(answers)
            start += answers.size
            if state["bt"] is not None and state["bt"].halted:
                state["status"] = STATUS_HALTED
                halt = PredictorHaltedError(
                    f"{type(self).__name__} halted: the BetweenThresholds TOP budget of phase "
                    f"{params.phase} ran out after {state['queries_in_phase']} queries of the "
                    "phase. "
                    "The error's .predictions hold this call's answers, the halting row included.",
                    predictions=self.classes_[np.concatenate(answered)],
                )
            elif state["queries_in_phase"] == params.phase_length:
                halt = self._start_next_phase_or_halt(answered)
        # The release path adds n_rows to the answered count: rows after a halt were not.
        self._query_stream.answered -= n_rows - start
        labels = self.classes_[np.concatenate(answered) if answered else np.empty(0, dtype=np.intp)]
        return labels, halt

    def _start_next_phase_or_halt(self, answered: list) -> PredictorHaltedError | None:
        """Start the next phase; if its public sizes break a privacy or size condition, halt.

        The schedule is public, so such a halt reveals nothing about the data;
        running on would void the guarantee. Returns the error to raise, if any.
        """
        try:
            self._next_phase()
        except (PrivacyParameterError, PhaseDataError) as error:
            self._state["status"] = STATUS_HALTED
            halt = PredictorHaltedError(
                f"{type(self).__name__} halted at the end of phase {self._state['params'].phase}: "
                f"the next phase cannot run with a guarantee ({error}) The error's .predictions "
                "hold this call's answers.",
                predictions=self.classes_[np.concatenate(answered)],
            )
            halt.__cause__ = error
            return halt
        return None

    def query(self, x: Any) -> Any:
        """Answer one query row (a 1-D row, or a scalar for 1-D inputs).

        Parameters
        ----------
        x : array-like of shape (n_features,), pandas Series or scalar
            The query.

        Returns
        -------
        object
            Its label, from ``classes_``.
        """
        if hasattr(x, "to_frame"):  # a pandas Series: one row that keeps its column names
            return self.predict(x.to_frame().T.infer_objects())[0]
        row = np.asarray(x)
        return self.predict(row.reshape(1, -1))[0]

    # -- one owner of the fitted state ------------------------------------------------------
    def _own_stream(self) -> None:
        """Make this object, in this process, the one that answers from the fitted state."""
        self._stream_owner: tuple[int, str] | None = process_identity()

    def _check_stream_owner(self) -> None:
        """Refuse a copy, or a forked child, before anything is validated, charged or drawn."""
        owner = self.__dict__.get("_stream_owner")
        here = process_identity()
        if owner == here:
            return
        name = type(self).__name__
        if owner is None:
            where = (
                f"this {name} is a copy of a fitted predictor (made by pickle, joblib or "
                "copy.deepcopy)"
            )
        else:
            where = (
                f"this {name} was fitted in process {owner[0]} and is used in process "
                f"{here[0]}, a fork of it (os.fork, a fork-based multiprocessing pool or a "
                "pre-forking server)"
            )
        raise ForkedStateError(
            f"{where}. Its phase state (teachers, secret sub-samples, the count of the phase's "
            "answers) belongs to the object that fit returned, in the process that ran fit: "
            "answering from a copy would answer more queries in a phase than the guarantee "
            "allows. Nothing was charged. Query the original in its own process, or refit "
            "this copy to start a new predictor (which spends its privacy again)."
        )

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        if "_stream_owner" in state:
            state["_stream_owner"] = None  # a copy never owns the fitted state
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.target_tags.single_output = True
        return tags

    # -- shared validation -----------------------------------------------------------------
    def _validate_labels(self, y) -> tuple[np.ndarray, np.ndarray]:
        """Binary public label set and each row's index in it."""
        y = finite_target_column(y)
        check_classification_targets(y)
        if self.classes is None and type_of_target(y) == "multiclass":
            # Checked before the label set is read from y (which warns), with the words
            # scikit-learn's estimator checks expect of a binary-only classifier.
            raise ValueError(
                binary_only_message(
                    type(self).__name__,
                    "but y holds more than two classes",
                    "Pass two public labels as `classes`.",
                )
            )
        classes = resolve_binary_classes(self.classes, y, type(self).__name__)
        return classes, np.searchsorted(classes, y)


#: Constraints of the values in GenericBBLClassifier's ``overrides``.
_OVERRIDE_CONSTRAINTS = {
    "n_teachers": [_POSITIVE_INT],
    "teacher_size": [_POSITIVE_INT],
    "phase_length": [_POSITIVE_INT],
    "top_budget": [_POSITIVE_INT],
    "threshold_gap": [_OPEN_UNIT],
    "m": [_POSITIVE],
    "bt_epsilon": [_POSITIVE],
}


def _as_column_if_1d(X):
    """A 1-D array-like becomes one column; DataFrames, sparse and 2-D inputs are left as they are.

    (A sparse matrix is refused by the input check that follows, with a message that says
    sparse input is not supported; ``np.asarray`` would hide it in a 0-d object array.)
    """
    if hasattr(X, "iloc") or sparse.issparse(X):
        return X
    X = np.asarray(X)
    return X.reshape(-1, 1) if X.ndim == 1 else X
