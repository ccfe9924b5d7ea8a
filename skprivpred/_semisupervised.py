"""The semi-supervised convention: which training rows are unlabelled public rows.

One vocabulary for every estimator that learns from labelled private rows and
unlabelled public rows, following scikit-learn's semi-supervised estimators
(:class:`sklearn.semi_supervised.SelfTrainingClassifier`): in ``fit(X, y)``

- a classifier's unlabelled rows have ``y == -1`` (so ``-1`` cannot be a class:
  remap the labels);
- a regressor's unlabelled rows have ``y`` NaN (the library's choice:
  scikit-learn has no semi-supervised regressor).

Which rows are public, and how many rows there are, is public information; the
guarantee of such an estimator covers its labelled rows only.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from ._warnings import warn_user
from .exceptions import UnlabelledRowsWarning

__all__ = [
    "UNLABELLED",
    "check_classes_exclude_marker",
    "check_labelled_classes",
    "check_row_kinds",
    "classification_rows",
    "labelled_mask_for_score",
    "regression_rows",
    "unlabelled_mask",
    "warn_ignored_at_score",
    "warn_unlabelled_at_fit",
]

#: The label that marks an unlabelled (public) row of a classifier's ``y``.
UNLABELLED = -1


def unlabelled_mask(y: np.ndarray) -> np.ndarray:
    """Mask of the rows of a classification target that hold the marker ``-1``."""
    y = np.asarray(y)
    if y.dtype.kind in "iuf":
        return np.asarray(y == UNLABELLED)
    if y.dtype.kind == "b":
        return np.zeros(y.shape, dtype=bool)
    if y.dtype == object:
        return np.array(
            [isinstance(v, int | float | np.integer | np.floating) and v == -1 for v in y],
            dtype=bool,
        )
    return np.zeros(y.shape, dtype=bool)  # strings: no row can carry the numeric marker


def _check_both_kinds(labelled: np.ndarray, marker: str) -> None:
    check_row_kinds(int(labelled.sum()), labelled.size, marker)


def check_row_kinds(n_labelled: int, n_rows: int, marker: str) -> None:
    """Refuse rows that are all labelled or all unlabelled (counts: public)."""
    if n_labelled == 0:
        raise ValueError(
            f"y has no labelled row: every row is marked unlabelled ({marker}). The private "
            "statistic is computed from labelled rows; pass at least one."
        )
    if n_labelled == n_rows:
        raise ValueError(
            f"y has no unlabelled public row (none is marked {marker}). The features and "
            "the post-processing are built from public rows only; mark the public rows of "
            f"the same population with {marker}."
        )


def classification_rows(y, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A classifier's target and the mask of its labelled rows.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Labels; ``-1`` marks an unlabelled public row.
    n_rows : int
        Number of rows of ``X``.

    Returns
    -------
    y : ndarray of shape (n_samples,)
    labelled : ndarray of bool of shape (n_samples,)

    Raises
    ------
    ValueError
        When ``y`` is not 1-D with one entry per row, holds NaN or infinity,
        or has no labelled row or no unlabelled row.
    """
    y = column_or_1d(y, warn=True)
    if y.shape[0] != n_rows:
        raise ValueError(f"y has {y.shape[0]} entries but X has {n_rows} rows.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(
            "y must not contain NaN or infinity (a classifier marks its unlabelled rows with -1)."
        )
    labelled = ~unlabelled_mask(y)
    if labelled.any():
        check_classification_targets(y[labelled])
    _check_both_kinds(labelled, "y == -1")
    return y, labelled


def check_classes_exclude_marker(classes: np.ndarray) -> None:
    """Refuse a label set that holds the unlabelled marker ``-1``."""
    if unlabelled_mask(np.asarray(classes)).any():
        raise ValueError(
            "classes contains -1, which marks unlabelled public rows in y (scikit-learn's "
            "semi-supervised convention); remap the labels so that no class is -1."
        )


def regression_rows(y, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A regressor's float target and the mask of its labelled rows (NaN: unlabelled).

    Raises
    ------
    ValueError
        When ``y`` is not 1-D numeric with one entry per row, holds infinity,
        or has no labelled row or no unlabelled row.
    """
    y = column_or_1d(y, warn=True)
    if y.shape[0] != n_rows:
        raise ValueError(f"y has {y.shape[0]} entries but X has {n_rows} rows.")
    try:
        y = y.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"y must be numeric (NaN marks an unlabelled row), got dtype {y.dtype}."
        ) from None
    if np.isinf(y).any():
        raise ValueError("y must not contain infinity (NaN marks an unlabelled public row).")
    labelled = ~np.isnan(y)
    _check_both_kinds(labelled, "y NaN")
    return y, labelled


def labelled_mask_for_score(y, *, regression: bool) -> np.ndarray:
    """Rows that ``score`` counts: the labelled ones (``-1`` or NaN rows are ignored)."""
    y = column_or_1d(y, warn=True)
    if regression:
        return ~np.isnan(np.asarray(y, dtype=np.float64))
    return ~unlabelled_mask(y)


def check_labelled_classes(y_labelled: np.ndarray, classes) -> None:
    """With ``classes=None``, refuse labelled rows of one class, naming the marker ``-1``.

    Rows with ``y == -1`` are not labels (they mark unlabelled public rows), so
    a ``y`` in ``{-1, 1}`` has one class; say so, instead of a bare "one class".
    """
    if classes is not None:
        return
    found = np.unique(y_labelled)
    if found.size < 2:
        raise ValueError(
            f"y contains only one class among its labelled rows ({found.size} distinct label(s) "
            "besides -1) and classes=None. -1 is not a class: it marks unlabelled public rows "
            "(scikit-learn's semi-supervised convention). If -1 is one of your classes, remap "
            "the labels so that no class is -1 (e.g. y = (y + 1) // 2 for y in {-1, 1}); "
            "otherwise pass the public label set as `classes`."
        )


def warn_unlabelled_at_fit(name: str, n_unlabelled: int, n_rows: int, *, regression: bool) -> None:
    """Say, once per process and call site, how many rows ``fit`` took as public rows.

    The count is public (which rows are public is); the warning lets a label
    convention mistaken for the marker (a class ``-1``) be seen. The counts stay
    out of the once-per-site key: the five fits of a 5-fold cross-validation
    show one warning (with the first fold's counts), not five.
    """
    if regression:
        marker, remedy = "y NaN", "If some of them are labelled, give them their targets."
    else:
        marker = "y == -1"
        remedy = (
            "If -1 is one of your classes, remap the labels so that no class is -1 "
            "(e.g. y = (y + 1) // 2 for y in {-1, 1})."
        )
    warn_user(
        f"{name}.fit took {n_unlabelled} of {n_rows} rows ({marker}) as unlabelled public rows: "
        "their features build the basis and the post-processing, and they are NOT protected "
        f"by the privacy guarantee, which covers the {n_rows - n_unlabelled} labelled rows "
        f"only. {remedy} Filter this warning (UnlabelledRowsWarning) once you have checked it.",
        UnlabelledRowsWarning,
        # Once per call site: the counts differ between folds of a cross-validation.
        key=f"{name}.fit unlabelled rows",
    )


def warn_ignored_at_score(name: str, n_ignored: int, n_rows: int, *, regression: bool) -> None:
    """Say, once per process and call site, how many rows ``score`` ignored (marked rows)."""
    if n_ignored == 0:
        return
    marker = "y NaN" if regression else "y == -1, the unlabelled marker"
    what = "R^2" if regression else "accuracy"
    warn_user(
        f"{name}.score ignored {n_ignored} of {n_rows} rows ({marker}): the {what} counts the "
        f"other {n_rows - n_ignored} rows only."
        + (
            ""
            if regression
            else " If -1 is one of your classes, remap the labels so that no class is -1."
        ),
        UnlabelledRowsWarning,
        key=f"{name}.score ignored rows",  # once per call site, whatever the counts
    )
