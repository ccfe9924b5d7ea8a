"""The row-wise hypothesis-class protocol of the everlasting predictors.

How a hypothesis class given by the user (or one of the library's) is resolved,
checked, and called one row at a time through the isolation boundary.
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np

from .._teachers._isolation import call_user_code, call_user_code_by_row, freeze_rows, user_code
from ..exceptions import (
    InvalidParameterError,
)
from ..finite._hypotheses import (
    FiniteHypothesisClass,
    LabelBoostCandidates,
    ThresholdClass,
    _positive_labels,
)
from ..utils._param_validation import (
    HasMethods,
    StrOptions,
    UserCodeParam,
)
from ..utils._typing import MatrixLike

#: The library's classes that the everlasting predictors take as they are (exact types: a
#: subclass may compute anything from the pools its methods are handed).
LIBRARY_CLASSES = (ThresholdClass, FiniteHypothesisClass)

#: The methods of a user hypothesis class in the row-wise protocol (see the Notes of
#: :class:`~skprivpred.finite.HypothesisClass`): one teacher's block per ERM call,
#: one point per label call.
ROWWISE_CLASS_METHODS = ("erm_block", "labels_at")


_HYPOTHESIS_CLASS_CONSTRAINTS: list = [
    StrOptions({"thresholds"}),
    *(UserCodeParam(cls, kind="hypothesis_class") for cls in LIBRARY_CLASSES),
    UserCodeParam(HasMethods(ROWWISE_CLASS_METHODS), kind="hypothesis_class"),
]


def _refuse_hypothesis_class(hypothesis_class: Any, owner: str, why: str) -> InvalidParameterError:
    return InvalidParameterError(
        f"The 'hypotheses' parameter of {owner} must be 'thresholds', a ThresholdClass or "
        "a FiniteHypothesisClass (exactly those classes, not subclasses), or a class of your own "
        "in the row-wise protocol: an int n_hypotheses and the methods erm_block(points, labels) "
        "(one teacher's block per call) and labels_at(point) (one point per call); see "
        f"skprivpred.finite.HypothesisClass. Got {hypothesis_class!r} (of type "
        f"{type(hypothesis_class).__name__}) instead: {why}"
    )


def _resolve_hypothesis_class(hypothesis_class: Any, owner: str = "the predictor") -> Any:
    """The class the predictor uses: ``"thresholds"`` is ``ThresholdClass()``.

    The library's classes (exact types) are used as given; a class of the
    row-wise protocol is wrapped in :class:`_RowwiseClass` (pickled once
    here, before anything is read or charged); anything else is refused with
    :class:`~skprivpred.exceptions.InvalidParameterError`.
    """
    if isinstance(hypothesis_class, str):
        return ThresholdClass()
    if isinstance(hypothesis_class, _RowwiseClass) or type(hypothesis_class) in LIBRARY_CLASSES:
        return hypothesis_class
    if all(callable(getattr(hypothesis_class, m, None)) for m in ROWWISE_CLASS_METHODS):
        return _RowwiseClass(hypothesis_class, owner)
    why = (
        "a subclass of a library class may compute anything from the whole pools its methods "
        "are handed"
        if isinstance(hypothesis_class, LIBRARY_CLASSES)
        else "its methods would be handed whole pools of protected rows"
    )
    raise _refuse_hypothesis_class(
        hypothesis_class, owner, why + ", which a query or training row must not reach."
    )


class _CheckedIndex:
    """The check of ``erm_block``'s output: an integer index in ``[0, n_hypotheses)``."""

    def __init__(self, n_hypotheses: int) -> None:
        self.n_hypotheses = n_hypotheses

    def __call__(self, output: Any) -> int:
        value = np.asarray(output)
        if value.shape != () or value.dtype.kind not in "iu":
            raise ValueError("erm_block returns one integer index.")
        index = int(value)
        if not 0 <= index < self.n_hypotheses:
            raise ValueError("erm_block returned an index outside [0, n_hypotheses).")
        return index


class _CheckedLabels:
    """The check of ``labels_at``'s output: ``n_hypotheses`` entries, 1 where an entry is 1."""

    def __init__(self, n_hypotheses: int) -> None:
        self.n_hypotheses = n_hypotheses

    def __call__(self, output: Any) -> np.ndarray:
        values = np.asarray(output)
        if values.shape != (self.n_hypotheses,):
            raise ValueError("labels_at returns one label per hypothesis.")
        return _positive_labels(values).astype(np.int8)


def _erm_block(hclass: Any, points: np.ndarray, labels: np.ndarray) -> Any:
    return hclass.erm_block(points, labels)


def _labels_at(hclass: Any, row: np.ndarray) -> Any:
    return hclass.labels_at(row[0])


class _RowwiseClass:
    """A user hypothesis class in the row-wise protocol, asked only through the boundary.

    Every call of the user's class meets one protected unit
    (:func:`~skprivpred._teachers._isolation.call_user_code`): ``erm_block`` one
    teacher's block, ``labels_at`` one point (identical points share one
    call), each on a copy of the class of its own (one ``cloudpickle``
    payload, made here), with a fixed public result whatever it does
    (hypothesis 0; label 0 under every hypothesis). The votes, LabelBoost's
    dichotomies and the relabelling's candidates are computed by the library
    from the labels, through :class:`~skprivpred.finite.FiniteHypothesisClass`
    on a prediction matrix over the distinct points. The points are the
    validated rows (float, finite, 2-D): the user's ``prepare`` is not called.

    Raises
    ------
    InvalidParameterError
        If ``n_hypotheses`` is not an integer >= 1, ``default_vc_dim()`` (when
        present) not an integer >= 1, or the class cannot be pickled.
    """

    def __init__(self, hclass: Any, owner: str) -> None:
        n_hypotheses = getattr(hclass, "n_hypotheses", None)
        if isinstance(n_hypotheses, bool) or not isinstance(n_hypotheses, Integral | np.integer):
            raise _refuse_hypothesis_class(hclass, owner, "n_hypotheses is not an integer.")
        if n_hypotheses < 1:
            raise _refuse_hypothesis_class(hclass, owner, "n_hypotheses is below 1.")
        self.user_class = hclass
        self.n_hypotheses = int(n_hypotheses)
        bound = max(1, int(math.floor(math.log2(self.n_hypotheses))))
        if callable(getattr(hclass, "default_vc_dim", None)):
            bound = hclass.default_vc_dim()
            if isinstance(bound, bool) or not isinstance(bound, Integral) or bound < 1:
                raise _refuse_hypothesis_class(
                    hclass, owner, "default_vc_dim() is not an integer >= 1."
                )
        self._vc_dim = int(bound)
        self._code = user_code(hclass, "hypotheses")

    def __repr__(self) -> str:
        return repr(self.user_class)

    def default_vc_dim(self) -> int:
        """The class's public bound on its VC dimension (``max(1, floor(log2 K))`` by default)."""
        return self._vc_dim

    @staticmethod
    def prepare(X: MatrixLike) -> np.ndarray:
        """The validated rows: 2-D, float, finite (library code; no user code is called)."""
        from sklearn.utils.validation import check_array

        return check_array(X, dtype=np.float64, ensure_all_finite=True)

    def labels_on(self, points: np.ndarray) -> np.ndarray:
        """Labels of every hypothesis on the points, shape (K, n_points), int8; one point a call."""
        zeros = np.zeros(self.n_hypotheses, dtype=np.int8)
        labels = call_user_code_by_row(
            [self._code],
            np.asarray(points, dtype=np.float64).reshape(len(points), -1),
            _labels_at,
            _CheckedLabels(self.n_hypotheses),
            zeros,
            names=["hypotheses"],
            dtype=np.int8,
        )[0]
        return labels.T

    def _on_distinct(self, points: np.ndarray) -> tuple[FiniteHypothesisClass, np.ndarray]:
        """A prediction-matrix class over the distinct points, and each point's index in it."""
        distinct, index = np.unique(
            np.asarray(points, dtype=np.float64).reshape(len(points), -1),
            axis=0,
            return_inverse=True,
        )
        return FiniteHypothesisClass(predictions=self.labels_on(distinct)), index.ravel()

    def erm(self, points: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """How many blocks chose each hypothesis: one ``erm_block`` call per teacher block."""
        units = [
            (
                freeze_rows(np.ascontiguousarray(block, dtype=np.float64).reshape(len(block), -1)),
                freeze_rows(np.asarray(block_labels, dtype=np.intp)),
            )
            for block, block_labels in zip(points, labels)
        ]
        chosen = call_user_code(
            self._code,
            units,
            _erm_block,
            _CheckedIndex(self.n_hypotheses),
            0,
            name="hypotheses",
        )
        return np.bincount(np.asarray(chosen, dtype=np.intp), minlength=self.n_hypotheses)

    def vote_fraction(self, teachers: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Fraction of teachers voting 1 (weighted by multiplicity)."""
        chosen = np.flatnonzero(teachers)
        return (teachers[chosen] @ self.labels_on(points)[chosen]) / teachers.sum()

    def candidates(
        self, labelled: np.ndarray, labels: np.ndarray, unlabelled: np.ndarray
    ) -> LabelBoostCandidates:
        """LabelBoost's distinct dichotomies on the distinct points, scored on the labelled ones."""
        n_labelled = len(labelled)
        finite, index = self._on_distinct(np.concatenate([labelled, unlabelled]))
        return finite.candidates(index[:n_labelled], labels, index[n_labelled:])

    def prior_candidates(self, points: np.ndarray, labels: np.ndarray) -> LabelBoostCandidates:
        """Every hypothesis, equally weighted, with its labels on the points."""
        finite, index = self._on_distinct(points)
        return finite.prior_candidates(index, labels)
