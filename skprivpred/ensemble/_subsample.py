"""Fit plumbing shared by the subsample-and-aggregate estimators.

:class:`SubsampleMixin` validates the training data and the public number of
teachers, draws the data-independent partition from the fit stream and fits
one teacher per part (through :mod:`skprivpred._teachers`). The estimators add
only what differs: how teachers' outputs are combined and released. It also
offers :meth:`SubsampleMixin._teacher_votes`, the one non-private view of the
teachers that :func:`skprivpred.audit.flip_teacher_neighbour` needs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils import get_tags
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._base import (
    PrivatePredictorMixin,
    QueryPlan,
    finite_target_column,
    keep_frame,
    resolve_classes,
)
from .._teachers._dask_teachers import (
    DaskTrainingRows,
    dask_training_rows,
    fit_dask_teachers,
    is_dask_input,
)
from .._teachers._dry_run import check_teachers_can_read
from .._teachers._fit import ConstantTeacher, fit_teachers
from .._teachers._input import _SPARSE_FORMATS, _refuse_non_scalar_entries
from .._teachers._partition import random_partition
from .._warnings import warn_user
from ..exceptions import InvalidParameterError


def check_query_block(block, estimator_name: str):
    """One block of dask queries checked where it lives, as an in-memory batch is.

    Finite, scalar entries (:func:`_refuse_non_scalar_entries`); a DataFrame is
    kept as it is. The ``check_block`` of a teacher ensemble's
    :class:`~skprivpred._base.QueryPlan`.
    """
    rows = check_array(
        block,
        accept_sparse=_SPARSE_FORMATS,
        dtype=None,
        ensure_all_finite=True,
        ensure_min_samples=0,
        input_name="X",
        estimator=estimator_name,
    )
    _refuse_non_scalar_entries(rows)
    return keep_frame(block, rows)


class SubsampleMixin(PrivatePredictorMixin):
    """Shared ``fit`` steps and query validation of subsample-and-aggregate estimators.

    Subclasses set ``_default_estimator`` (a zero-argument factory) and have the
    parameters ``estimator``, ``n_jobs``, ``random_state`` and ``accountant``.
    """

    # Set by every subclass: the factory of the default base estimator.
    _default_estimator: Callable[[], Any]

    # Constructor parameters of every subclass (declared for type checking only).
    estimator: Any
    n_jobs: int | None
    classes: Any  # (the classifiers')

    def _base_estimator(self):
        """``estimator``, or the default one (its type is checked by ``_validate_params``)."""
        return self._default_estimator() if self.estimator is None else self.estimator

    def _validate_training_data(self, X, y, *, y_numeric: bool):
        """Check X (finite, consistent) and a 1-D finite y; DataFrames are kept as they are."""
        X_checked, y = validate_data(
            self,
            X,
            y,
            reset=True,
            accept_sparse=_SPARSE_FORMATS,
            dtype=None,
            ensure_all_finite=True,
            y_numeric=y_numeric,
        )
        y = finite_target_column(y)
        _refuse_non_scalar_entries(X_checked)
        return keep_frame(X, X_checked), y

    def _validate_dask_training_data(self, X, y, *, classify: bool, y_numeric: bool = False):
        """Dask training rows checked where they live (:mod:`skprivpred._teachers._dask_teachers`).

        For a classifier the public label set is resolved as in memory
        (``classes``, or the labels present with a :class:`PrivacyWarning`)
        and kept on the returned rows for the teachers' label indices.
        """
        rows = dask_training_rows(self, X, y, classify=classify, y_numeric=y_numeric)
        if classify:
            assert rows.labels is not None
            rows.classes = resolve_classes(self.classes, rows.labels, type(self).__name__)
        return rows

    def _classifier_training_data(self, X, y):
        """A classifier's training rows, in memory or on a cluster, with its public labels.

        Returns ``(X, y, classes, n_samples)``; for dask rows ``X`` is the
        :class:`~skprivpred._teachers._dask_teachers.DaskTrainingRows` and ``y`` is None.
        """
        if is_dask_input(X, y):  # rows on a cluster: checked and fitted where they live
            rows = self._validate_dask_training_data(X, y, classify=True)
            return rows, None, rows.classes, rows.n_samples
        X, y = self._validate_training_data(X, y, y_numeric=False)
        check_classification_targets(y)
        classes = resolve_classes(self.classes, y, type(self).__name__)
        return X, y, classes, y.shape[0]

    @staticmethod
    def _check_n_teachers(n_teachers: int, n_samples: int) -> None:
        if n_teachers > n_samples:
            raise InvalidParameterError(
                f"n_teachers={n_teachers} is larger than the number of training rows "
                f"n_samples={n_samples}; each teacher needs at least one row. Pass a smaller "
                f"n_teachers (or a larger target_error), or train on at least {n_teachers} rows."
            )
        if n_samples // n_teachers < 2:
            warn_user(
                f"n_teachers={n_teachers} leaves fewer than 2 rows per teacher "
                f"(n_samples={n_samples}); the answers will be close to uniform.",
                UserWarning,
            )

    def _fit_teachers(
        self,
        estimator,
        X,
        y,
        y_index,
        n_teachers: int,
        horizon: int | None = None,
        *,
        fallback: ConstantTeacher,
    ) -> list:
        """Partition from the fit stream and fit one teacher per part.

        ``X`` may be :class:`~skprivpred._teachers._dask_teachers.DaskTrainingRows` (from
        :meth:`_validate_dask_training_data`; ``y`` and ``y_index`` are then
        None): the teachers are then fitted on the cluster's workers, each on
        the block the same keyed partition gives it in memory.

        Sets ``_partition`` and ``n_teachers_``, and starts the query stream
        (with the public query ``horizon``, if any, counted in the ledger). A
        teacher whose ``fit`` raises is replaced by ``fallback`` (a constant
        teacher of a public value): whether a fit fails depends on the rows of
        its part, and a service that refits must not show it.
        """
        dask_rows = isinstance(X, DaskTrainingRows)  # rows on a cluster: fitted where they live
        self._check_n_teachers(n_teachers, X.n_samples if dask_rows else y.shape[0])
        fit_rng = self._start_streams(horizon)
        parts: Any
        if dask_rows:
            teachers, parts = fit_dask_teachers(clone(estimator), X, n_teachers, fit_rng, fallback)
        else:
            parts = random_partition(y.shape[0], n_teachers, fit_rng)
            teachers = fit_teachers(
                clone(estimator), X, y, y_index, parts, fit_rng, self.n_jobs, fallback=fallback
            )
        self._partition = parts
        self.n_teachers_ = n_teachers
        self._teacher_template = clone(estimator)  # what the dry run of a query call clones
        return teachers

    def _teacher_plan(self, values, **declared) -> QueryPlan:
        """The :class:`~skprivpred._base.QueryPlan` of a teacher ensemble's query method.

        The public checks (:meth:`_validate_protected_rows`), the dry run
        (:meth:`_check_teachers_can_read`) and the dask block check are the
        family's; ``values`` (the teachers' secret values) and ``declared``
        (the mechanism, its charge, its post-processing) the estimator's.
        Call it after ``check_is_fitted``.
        """
        return QueryPlan(
            check=self._validate_protected_rows,
            values=values,
            dry_run=self._check_teachers_can_read,
            n_jobs=self.n_jobs,
            check_block=functools.partial(check_query_block, estimator_name=type(self).__name__),
            **declared,
        )

    def _validate_queries(self, X):
        rows = self._validate_protected_rows(X)
        # Nothing inferred from the training rows (a column's dtype, its categories, its
        # range) refuses a query: an entry a teacher cannot read is that teacher's fallback.
        # But rows of a kind the base estimator cannot read at all (judged from the queries
        # and public parameters only, by a dry run) are refused, before any charge.
        self._check_teachers_can_read(rows)
        return rows

    def _validate_protected_rows(self, X):
        """Rows in the form the teachers take, checked as queries are, without the dry run.

        For rows that are protected (the validation part of a private search,
        taken from training rows that ``fit`` has already validated): the dry
        run fits the user's estimator on the rows it is given, so it never sees
        protected rows.
        """
        check_is_fitted(self, "n_teachers_")
        X_checked = validate_data(
            self,
            X,
            reset=False,
            accept_sparse=_SPARSE_FORMATS,
            dtype=None,
            ensure_all_finite=True,
        )
        _refuse_non_scalar_entries(X_checked)
        return keep_frame(X, X_checked)

    def _check_teachers_can_read(self, X) -> None:
        """The dry run of :func:`skprivpred._teachers._dry_run.check_teachers_can_read` for these
        queries."""
        template = self.__dict__.get("_teacher_template")
        if template is None or getattr(self, "mode_", None) == "student":
            return  # the student answers (it was fitted on released query rows)
        method = "predict" if getattr(self, "_base_output", "label") == "label" else "predict_proba"
        classes = self.__dict__.get("classes_")
        if classes is not None:
            check_teachers_can_read(self, template, X, classes=classes, method=method)
        else:
            bounds = self.__dict__.get("_y_bounds")
            check_teachers_can_read(self, template, X, y_bounds=bounds, method=method)

    def _teacher_votes(self, X) -> tuple[np.ndarray, list[np.ndarray]]:
        """Each teacher's vote at ``X`` and the training rows it was fitted on.

        NOT PRIVATE: the votes leak the training data. Never charges, never
        advances the query stream. This is what a black-box audit needs to
        build a worst-case neighbour (:func:`skprivpred.audit.flip_teacher_neighbour`):
        the partition itself is data-independent (a random permutation from the
        fit stream), but together with the votes it reveals which rows moved
        which teacher.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_rows, n_features)
            Query rows.

        Returns
        -------
        votes : ndarray of shape (n_rows, n_teachers)
            Index into ``classes_`` of the label each teacher votes for.
        parts : list of ndarray
            ``parts[j]`` holds the indices of the training rows of teacher ``j``.

        Raises
        ------
        TypeError
            For an estimator whose teachers do not vote (a regressor).
        """
        X = self._validate_queries(X)
        ensemble = self.__dict__.get("_ensemble")
        if ensemble is None:
            raise TypeError(f"{type(self).__name__} has no voting teachers.")
        return ensemble.votes(X), [np.array(part) for part in self._partition]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        base = self._default_estimator() if self.estimator is None else self.estimator
        if hasattr(base, "__sklearn_tags__") and not isinstance(base, type):
            # (an invalid estimator is refused by fit; tags must not fail before that)
            tags.input_tags.sparse = get_tags(base).input_tags.sparse
        return tags
