"""Hyper-parameter search whose selection is itself differentially private."""

from __future__ import annotations

import math
import time
from numbers import Integral, Real
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .._base import PrivatePredictorMixin, answer, keep_frame, resolve_classes
from .._hopeless import best_case
from .._teachers._dask import refuse_dask_collection
from .._teachers._isolation import captured_warnings
from .._teachers._rows import take_rows
from ..accounting._accountant import PrivacyAccountant
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..ensemble._aggregate import SubsampleAggregateClassifier
from ..ensemble._averaging import SubsampleAverageClassifier
from ..exceptions import InvalidParameterError
from ..mechanisms._closed_forms import (
    exponential_mechanism_proba,
    noisy_max_proba,
    sample_categorical,
)
from ..utils._param_validation import Interval, StrOptions, UserCodeParam
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike

__all__ = ["PrivateGridSearchCV"]

#: Parameters that set the privacy contract of a candidate: never searched.
FORBIDDEN_KEYS = frozenset(
    {
        "epsilon",
        "total_epsilon",
        "total_delta",
        "n_queries",
        "accountant",
        "random_state",
        "classes",
        "noise",
        "delta",
    }
)


def noisy_vote_score(estimator, teacher_accuracy: float) -> float:
    """The score of a candidate: its teachers' accuracy, less what its answers' noise costs.

    ``teacher_accuracy`` is ``q``, the mean teacher accuracy on the validation
    part; ``b`` is the probability that the candidate's noisy vote answers the
    label of unanimous teachers (its public best case,
    :func:`skprivpred._hopeless.best_case`). The score ``q - (1 - b)`` is the
    expected accuracy of the noisy vote when the teachers are unanimous and
    right on every row, and below it by ``(1 - q)(1 - b + w)`` (``w = (1 - b) /
    (K - 1)``) when they are unanimous and right on a share ``q`` of the rows:
    the teachers' accuracy less what the noise loses even in the best case.
    Mean teacher accuracy alone ignores the answers' noise and so favours the
    fewest teachers (each has the most rows); ``1 - b`` grows exactly when the
    teachers are too few for ``epsilon``. Rows on which the teachers split lose
    more to the noise than this counts. ``b`` is public (``epsilon``, the number
    of teachers, the number of classes), so the score moves exactly as ``q``
    does: the sensitivity ``max(1 / r, 1 / m)`` is unchanged. NOT PRIVATE: the
    score never leaves ``fit``.
    """
    best = best_case(estimator)
    if best is None:  # every candidate of the search has one; keep q if not
        return teacher_accuracy
    return float(teacher_accuracy - (1.0 - best))


def _candidate_score(estimator, X_train, y_train, X_valid, valid_index, n_teachers) -> float:
    """Noise-aware teacher accuracy on the validation part (NOT PRIVATE: never leaves ``fit``).

    A teacher's share of the true label is its vote (0 or 1) or, for
    ``SubsampleAverageClassifier(base_output="proba")``, its probability: in
    [0, 1] either way, so one teacher moves the mean by at most ``1 / r``;
    :func:`noisy_vote_score` subtracts a public constant.

    The validation rows are training rows, hence protected: the teachers that
    answer through their own ``predict`` (or ``predict_proba``) answer each
    validation row alone, through the one boundary of
    :mod:`skprivpred._teachers._isolation` (a copy of the teacher of its own per row,
    identical rows evaluated once), so that one validation row moves each
    teacher's share on that row alone; stacked linear and tree teachers, whose
    votes the library computes itself, are row-wise by construction and vote
    batched. No dry run is made on them (``_protected_teacher_means``).
    """
    with captured_warnings():
        # A teacher's warning (a convergence warning, say) depends on its rows.
        estimator.fit(X_train, y_train)
        means = estimator._protected_teacher_means(X_valid)
    if estimator.n_teachers_ != n_teachers:
        raise RuntimeError("a candidate did not use the public number of teachers.")
    return noisy_vote_score(
        estimator, float(np.mean(means[np.arange(valid_index.size), valid_index]))
    )


class PrivateGridSearchCV(
    PrivatePredictorMixin, MetaEstimatorMixin, ClassifierMixin, BaseEstimator
):
    """Grid search over a subsample-and-aggregate classifier with a private selection.

    A :class:`~sklearn.model_selection.GridSearchCV` on private data is not
    private: every scored row and the chosen parameters are releases. This
    search splits the rows at random, fits every candidate on the training
    part, scores it on the validation part by its mean teacher accuracy less
    what its answers' noise costs in the best case, releases only the index
    of the chosen candidate, drawn by a differentially private mechanism,
    and refits that candidate on all rows with fresh randomness.

    **Guarantee** (Chaudhuri & Vinterbo 2013, Theorem 1). Under replace-one
    neighbours each score has a public sensitivity ``max(1 / r, 1 / m)`` (``r``
    teachers, ``m`` validation rows), so the selected index is
    ``(selection_epsilon, 0)``-DP, charged once before any candidate is
    fitted. The refitted choice's answers are charged per row as usual.

    See the user guide: :ref:`tuning`.

    Parameters
    ----------
    estimator : SubsampleAggregateClassifier or SubsampleAverageClassifier
        The template. Set its ``classes``: the number of teachers depends on
        the label set, which must be public (``None`` reads it from ``y`` with
        a :class:`~skprivpred.PrivacyWarning`).
    param_grid : dict or list of dict
        As for :class:`~sklearn.model_selection.ParameterGrid`. Keys that set
        the privacy contract (``epsilon``, ``accountant``, ``noise``, ...) are
        refused.
    selection_epsilon : float, default=1.0
        Privacy parameter of the selection, > 0.
    validation_size : float, default=0.2
        Fraction of the rows held out to score the candidates, in (0, 1).
    selection : {"exponential", "noisy_max"}, default="exponential"
        The selection mechanism: the exponential mechanism, or report-noisy-max
        with exponential noise.
    refit : bool, default=True
        Refit the chosen setting on all rows as ``best_estimator_``.
    accountant : PrivacyAccountant, default=None
        Charged ``selection_epsilon`` once per ``fit``, and attached to
        ``best_estimator_``. ``None``: the template's accountant (if any).
    random_state : int, Generator, RandomState, SeedSequence or None, default=None
        Seeds the split, the partitions and the teacher seeds; the selection's
        noise comes from the release stream.
    n_jobs : int, default=None
        joblib jobs for the candidate fits.
    verbose : int, default=0
        Progress messages, as in scikit-learn's searches: counts and times
        only, never a score.

    Attributes
    ----------
    best_params_ : dict
        The selected setting (the release).
    best_index_ : int
        Its index in ``ParameterGrid(param_grid)``.
    best_estimator_ : SubsampleAggregateClassifier or SubsampleAverageClassifier
        The selected setting refitted on all rows, with the accountant attached.
    n_candidates_ : int
        Size of the grid.
    n_teachers_ : list of int
        The public number of teachers of each candidate (on the training part).
    selection_sensitivity_ : float
        ``beta = max(1 / min r, 1 / m)``.
    privacy_guarantee_ : PrivacyGuarantee
        The guarantee of the selection (with ``rho`` for the exponential
        mechanism).
    classes_ : ndarray
        The public label set (of ``best_estimator_``).

    Notes
    -----
    Private selection pays for small grids and a larger selection budget;
    otherwise the theory default (``target_error`` sets the number of
    teachers) costs nothing.

    References
    ----------
    K. Chaudhuri and S. A. Vinterbo. A Stability-based Validation Procedure for
    Differentially Private Machine Learning. NeurIPS 2013, Theorem 1.
    F. McSherry and K. Talwar. Mechanism Design via Differential Privacy.
    FOCS 2007.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skprivpred import PrivateGridSearchCV, SubsampleAggregateClassifier
    >>> X, y = make_classification(n_samples=3000, random_state=0)
    >>> search = PrivateGridSearchCV(
    ...     SubsampleAggregateClassifier(classes=[0, 1]),
    ...     {"n_teachers": [10, 40]},
    ...     selection_epsilon=2.0,
    ... ).fit(X, y)
    >>> search.best_params_ in ({"n_teachers": 10}, {"n_teachers": 40})
    True
    >>> search.predict(X[:3]).shape  # private answers of the refitted choice
    (3,)
    """

    _parameter_constraints: dict = {
        "estimator": [
            UserCodeParam(SubsampleAggregateClassifier, kind="private_estimator"),
            UserCodeParam(SubsampleAverageClassifier, kind="private_estimator"),
        ],
        "param_grid": [
            UserCodeParam(dict, kind="param_grid", each=True),
            UserCodeParam(list, kind="param_grid", each=True),
        ],
        "selection_epsilon": [Interval(Real, 0, None, closed="neither")],
        "validation_size": [Interval(Real, 0, 1, closed="neither")],
        "selection": [StrOptions({"exponential", "noisy_max"})],
        "refit": ["boolean"],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "verbose": [Interval(Integral, 0, None, closed="left"), "boolean"],
    }

    def __init__(
        self,
        estimator: SubsampleAggregateClassifier | SubsampleAverageClassifier,
        param_grid: dict | list,
        *,
        selection_epsilon: float = 1.0,
        validation_size: float = 0.2,
        selection: str = "exponential",
        refit: bool = True,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.selection_epsilon = selection_epsilon
        self.validation_size = validation_size
        self.selection = selection
        self.refit = refit
        self.accountant = accountant
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- validation ---------------------------------------------------------------------------
    def _check_params(self) -> list[dict]:
        """Cross-parameter rules (after ``_validate_params``): the candidates of the grid."""
        try:
            candidates = list(ParameterGrid(self.param_grid))
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(f"param_grid is not a valid grid: {exc}") from None
        for candidate in candidates:
            forbidden = sorted(FORBIDDEN_KEYS & set(candidate))
            if forbidden:
                raise InvalidParameterError(
                    f"param_grid may not search {', '.join(forbidden)}: these set the privacy "
                    "contract (the budget, the horizon, the accountant, the randomness, the "
                    "label set), which must be fixed before the data are looked at."
                )
        valid = self.estimator.get_params()
        unknown = sorted({k for c in candidates for k in c} - set(valid))
        if unknown:
            raise InvalidParameterError(
                f"param_grid names parameters that {type(self.estimator).__name__} does not "
                f"have: {', '.join(unknown)}."
            )
        return candidates

    def _charged_accountant(self) -> PrivacyAccountant | None:
        """The accountant the selection charges: ``accountant``, else the template's."""
        return self.accountant if self.accountant is not None else self.estimator.accountant

    # -- fit ----------------------------------------------------------------------------------
    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Select a candidate privately, then refit it on all rows.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training rows.
        y : array-like of shape (n_samples,)
            Labels, all in ``estimator.classes``.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : PrivateGridSearchCV
        """
        candidates = self._check_fit_arguments(fit_params)
        epsilon = float(self.selection_epsilon)
        # The exponential mechanism is epsilon-bounded-range: epsilon^2 / 8-zCDP.
        rho = epsilon**2 / 8.0 if self.selection == "exponential" else None
        with self._unchanged_on_error():
            X_checked, y = validate_data(
                self,
                X,
                y,
                reset=True,
                accept_sparse=["csr", "csc"],
                dtype=None,
                ensure_all_finite=True,
            )
            X = keep_frame(X, X_checked)  # the teachers get a DataFrame as it was
            y = column_or_1d(y, warn=True)
            if hasattr(X, "tocsr"):
                X = X.tocsr()  # row indexing
            template = self.estimator
            if template.classes is None:  # read from y, with the PrivacyWarning
                classes = resolve_classes(None, y, type(self).__name__)
                template = clone(template).set_params(classes=classes)
            fit_rng = self._start_streams()
            split = self._split(y.shape[0], float(self.validation_size), fit_rng)
            n_teachers = self._public_teachers(candidates, split[0].size, template)
            sensitivities = self._sensitivities(n_teachers, split[1].size)
            beta = float(sensitivities.max())
            self._say(
                f"scoring {len(candidates)} candidate(s) ({', '.join(map(str, n_teachers))} "
                f"teachers) fitted on {split[0].size} rows, on {split[1].size} validation rows"
            )
            start = time.perf_counter()

            def release(release_rng) -> int:
                """Score every candidate and select one: charged before any candidate is fitted."""
                scores = self._scores(X, y, candidates, split, n_teachers, fit_rng, template)
                # the scores are never stored
                return self._select(scores, epsilon, sensitivities, release_rng)

            index = self._release_model(epsilon, release, rho=rho)
            self._say(
                f"selected candidate {index} (best_index_, counting from 0) of "
                f"{len(candidates)} in "
                f"{time.perf_counter() - start:.1f} s"
            )
            self.best_index_ = index
            self.best_params_ = dict(candidates[index])
            self.n_candidates_ = len(candidates)
            self.n_teachers_ = n_teachers
            self.selection_sensitivity_ = beta
            if self.selection == "exponential":
                rule = (
                    "the exponential mechanism (McSherry & Talwar 2007) with one "
                    "sensitivity per candidate, max(1 / r, 1 / m)"
                )
            else:
                rule = (
                    "report-noisy-max (Chaudhuri & Vinterbo 2013, Algorithm 1) at the "
                    "sensitivity max(1 / r_min, 1 / m)"
                )
            self.privacy_guarantee_ = PrivacyGuarantee(
                epsilon=epsilon,
                delta=0.0,
                rho=rho,
                unit=GuaranteeUnit.RELEASE,
                scope="the selected index (best_params_); the answers of best_estimator_ are "
                "charged per row and add up with it",
                theorem=f"Chaudhuri & Vinterbo (2013), Theorem 1, with {rule} over mean "
                "teacher accuracy less the noise's best-case loss",
                details={
                    "selection": self.selection,
                    "selection_sensitivity": beta,
                    "candidate_sensitivities": sensitivities.tolist(),
                    "n_candidates": len(candidates),
                },
            )
            if self.refit:
                best = clone(template).set_params(**self.best_params_)
                accountant = self._charged_accountant()
                if accountant is not None:
                    best.set_params(accountant=accountant)
                refit_start = time.perf_counter()
                self.best_estimator_ = best.fit(X, y)
                self.classes_ = best.classes_
                self._say(
                    f"refitted the selected candidate on all {y.shape[0]} rows in "
                    f"{time.perf_counter() - refit_start:.1f} s"
                )
        return self

    def _say(self, message: str) -> None:
        """One progress line (``verbose >= 1``): counts and times only, never a score."""
        if self.verbose:
            print(f"[PrivateGridSearchCV] {message}", flush=True)

    @staticmethod
    def _split(n_samples: int, validation_size: float, rng) -> tuple[np.ndarray, np.ndarray]:
        """``(train, valid)`` row indices: a random permutation, never the data."""
        m = math.ceil(validation_size * n_samples)
        if m >= n_samples:
            raise ValueError(
                f"validation_size={validation_size!r} leaves no training row among "
                f"{n_samples} rows."
            )
        order = rng.permutation(n_samples)
        return np.sort(order[m:]), np.sort(order[:m])

    def _public_teachers(self, candidates: list[dict], n_train: int, template=None) -> list[int]:
        template = self.estimator if template is None else template
        n_classes = np.unique(np.asarray(template.classes)).size
        counts = [
            clone(template).set_params(**c).n_teachers_for(n_train, n_classes) for c in candidates
        ]
        too_many = [r for r in counts if r > n_train]
        if too_many:
            raise ValueError(
                f"a candidate needs {max(too_many)} teachers, more than the {n_train} rows of "
                "the training part; shrink the grid's n_teachers or validation_size."
            )
        return counts

    @staticmethod
    def _sensitivities(n_teachers: list[int], n_valid: int) -> np.ndarray:
        """Each candidate's score sensitivity ``max(1 / r, 1 / m)`` (public: r and m are).

        A replaced row lies in the training part (it changes one teacher of each
        candidate: ``1 / r``) or in the validation part (``1 / m`` for every candidate).
        """
        return np.maximum(1.0 / np.asarray(n_teachers, dtype=float), 1.0 / n_valid)

    def _scores(self, X, y, candidates, split, n_teachers, rng, template=None) -> np.ndarray:
        """Every candidate's score. NOT PRIVATE: used inside ``fit`` only (and in tests)."""
        train, valid = split
        template = self.estimator if template is None else template
        classes = np.unique(np.asarray(template.classes))
        y_valid = y[valid]
        if not np.all(np.isin(y_valid, classes)):
            raise ValueError("y holds labels outside estimator.classes.")
        valid_index = np.searchsorted(classes, y_valid)
        X_train, y_train, X_valid = take_rows(X, train), y[train], take_rows(X, valid)
        seeds = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist()).spawn(
            len(candidates)
        )
        fitted = [
            clone(template).set_params(**c, accountant=None, random_state=seed)
            for c, seed in zip(candidates, seeds)
        ]
        # joblib reports the count of candidate fits done and the elapsed time only.
        scores = Parallel(n_jobs=self.n_jobs, verbose=max(int(self.verbose) - 1, 0) * 10)(
            delayed(_candidate_score)(est, X_train, y_train, X_valid, valid_index, r)
            for est, r in zip(fitted, n_teachers)
        )
        return np.asarray(scores, dtype=float)

    def _select(self, scores: np.ndarray, epsilon: float, sensitivity, rng) -> int:
        """The selected index, drawn from the exact law of the selection rule."""
        law = self._selection_law(scores, epsilon, sensitivity)
        return int(sample_categorical(law[None, :], rng)[0])

    def _selection_law(self, scores: np.ndarray, epsilon: float, sensitivity) -> np.ndarray:
        """Exact law of the selected index for these scores (NOT PRIVATE given the scores).

        ``sensitivity`` is one bound for all candidates or one per candidate; the
        exponential mechanism uses the per-candidate bounds, report-noisy-max their
        maximum.
        """
        if self.selection == "exponential":
            return exponential_mechanism_proba(scores, epsilon, sensitivity)
        return noisy_max_proba(scores, epsilon, float(np.max(sensitivity)))

    # -- the refitted choice ---------------------------------------------------------------------
    def _refitted(self):
        return getattr(self, "best_estimator_", None) is not None

    @available_if(_refitted)
    def predict(self, X: MatrixLike) -> np.ndarray:
        """Private answers of ``best_estimator_`` (each row charged as usual).

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_queries, n_features)
            Query rows.

        Returns
        -------
        ndarray of shape (n_queries,)
        """
        refuse_dask_collection(self, X, "predict")  # available_if hides it from the mixin's
        check_is_fitted(self, "best_estimator_")
        best = self.best_estimator_  # the refitted candidate answers, by its own plan
        return answer(best, X, best._query_plan("predict"))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if isinstance(self.estimator, (SubsampleAggregateClassifier, SubsampleAverageClassifier)):
            tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        return tags
