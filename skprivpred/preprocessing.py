"""Preprocessing that reads nothing from the data, so it may sit outside a private estimator.

Fitted preprocessing (``StandardScaler``, ``OneHotEncoder``) fitted on the whole
training set couples every answer to every row, which voids the guarantee of a
private estimator placed after it in a pipeline. The transformers here take
everything they use from their parameters, a public description of the columns
(category lists, units), and read only the *shape and column names* of what
they are fitted on: the same transform whatever the rows. They are therefore
safe anywhere, inside or outside a private estimator, and outside they run once
per query batch instead of once per teacher.

:func:`public_preprocessor` builds a ``ColumnTransformer`` of them from a schema
(:func:`skprivpred.datasets.adult_schema`, :func:`skprivpred.datasets.magic_schema`,
or your own), :meth:`PublicScaler.from_bounds` declares the public range of each
numeric column in one line (data without a schema), and :func:`row_norm_bound`
states, from the parameters alone, the largest Euclidean norm a row of its
output can have: the public ``feature_norm_bound`` of the linear estimators.
"""

# Authors: The skprivpred developers
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.validation import check_is_fitted, validate_data

from ._teachers._dask import refuse_dask_collection
from .utils._typing import MatrixLike, Self

__all__ = [
    "PublicOneHotEncoder",
    "PublicScaler",
    "is_public",
    "public_preprocessor",
    "row_norm_bound",
]

_NUMERIC_KEYS = {"center", "scale", "log", "squash", "clip"}


class PublicOneHotEncoder(TransformerMixin, BaseEstimator):
    """One-hot encoding over public category lists: ``fit`` reads no row.

    Parameters
    ----------
    categories : list of array-like
        The public category list of every column, in column order (required:
        never read from the data). A value outside its list, a missing value
        included, encodes as all zeros in that column's block.
    missing_values : list of array-like, default=None
        The values that the public schema declares as markers of a missing
        value, per column, in column order (``[]`` for a column without one;
        ``None``: no column has one). They are not categories: they encode as
        all zeros, like any value outside the list. They say which values the
        schema allows besides the categories: a service
        (:mod:`skprivpred.serving`) answers them and refuses every other value
        outside the list.
    dtype : dtype, default=np.float64
        Type of the output.

    Attributes
    ----------
    categories_ : list of ndarray
        The category lists.
    n_features_in_ : int
        Number of columns seen by ``fit`` (its only use of the data, with the names).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names seen by ``fit`` (only for data frames with string names).

    Examples
    --------
    >>> import pandas as pd
    >>> from skprivpred.preprocessing import PublicOneHotEncoder
    >>> enc = PublicOneHotEncoder(categories=[["a", "b"]]).fit(pd.DataFrame({"c": ["b"]}))
    >>> enc.transform(pd.DataFrame({"c": ["a", "z"]}))
    array([[1., 0.],
           [0., 0.]])
    """

    def __init__(
        self, categories: list, *, missing_values: list | None = None, dtype: Any = np.float64
    ) -> None:
        self.categories = categories
        self.missing_values = missing_values
        self.dtype = dtype

    def fit(self, X: MatrixLike, y: Any = None) -> Self:
        """Record the number and names of the columns (nothing else is read).

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Only its shape and column names are used.
        y : None
            Ignored.

        Returns
        -------
        self : PublicOneHotEncoder
        """
        refuse_dask_collection(self, X, "fit")
        validate_data(self, X, reset=True, dtype=None, ensure_all_finite=False)
        if not isinstance(self.categories, list | tuple) or len(self.categories) != (
            self.n_features_in_
        ):
            raise ValueError(
                f"categories must hold one public category list per column: X has "
                f"{self.n_features_in_} column(s), categories has "
                f"{len(self.categories) if isinstance(self.categories, list | tuple) else 'no'} "
                "list(s)."
            )
        lists = [np.asarray(c) for c in self.categories]
        if any(c.ndim != 1 or c.size == 0 or np.unique(c).size != c.size for c in lists):
            raise ValueError("every category list must be non-empty, flat and without repeats.")
        _check_missing_values(self.missing_values, self.categories)
        # The encoder is fitted on a synthetic table made of the category lists themselves.
        n_rows = max(c.size for c in lists)
        synthetic = np.empty((n_rows, len(lists)), dtype=object)
        for i, c in enumerate(lists):
            synthetic[:, i] = np.resize(c, n_rows)  # each list, cycled
        self._encoder = OneHotEncoder(
            categories=lists, handle_unknown="ignore", sparse_output=False, dtype=self.dtype
        ).fit(synthetic)
        self.categories_ = lists
        return self

    def transform(self, X: MatrixLike) -> np.ndarray:
        """One-hot blocks of the public categories; unknown values are all zeros.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, sum of the category list lengths)
        """
        refuse_dask_collection(self, X, "transform")
        check_is_fitted(self, "categories_")
        X = validate_data(self, X, reset=False, dtype=None, ensure_all_finite=False)
        values = np.asarray(X, dtype=object)
        if all(c.dtype.kind in "US" for c in self.categories_):
            values = values.astype(str)  # categorical dtypes and objects alike
        return self._encoder.transform(values)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Output names ``column_category``.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Input names (``feature_names_in_`` by default).

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self, "categories_")
        if input_features is None:
            input_features = getattr(self, "feature_names_in_", None)
        if input_features is None:
            input_features = [f"x{i}" for i in range(self.n_features_in_)]
        return np.asarray(
            [f"{name}_{c}" for name, cats in zip(input_features, self.categories_) for c in cats],
            dtype=object,
        )


def _check_missing_values(missing_values: list | None, categories: list) -> None:
    """Refuse markers of a missing value that are not one flat list per column, or categories."""
    if missing_values is None:
        return
    if not isinstance(missing_values, list | tuple) or len(missing_values) != len(categories):
        raise ValueError(
            f"missing_values must hold one list per column ({len(categories)}), or be None; got "
            f"{missing_values!r}."
        )
    for markers, allowed in zip(missing_values, categories):
        if isinstance(markers, str) or np.asarray(markers, dtype=object).ndim != 1:
            raise ValueError(f"each entry of missing_values is a list of markers, got {markers!r}.")
        shared = [m for m in markers if m in list(allowed)]
        if shared:
            raise ValueError(
                f"the markers {shared!r} of a missing value are also categories; a marker "
                "encodes as none of the categories, so it cannot be one."
            )


class PublicScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """A fixed map of numeric columns, from public constants: ``fit`` reads no row.

    Each column ``v`` becomes ``clip(v, low, high)`` (if ``clip``), then
    ``log1p`` (if ``log``), then ``(v - center) / scale``, then ``tanh`` (if
    ``squash``). Choose the constants from the columns' documented units or
    ranges, never from their values.

    Parameters
    ----------
    center : float or array-like of shape (n_features,), default=0.0
    scale : float or array-like of shape (n_features,), default=1.0
        Positive.
    log : bool or array-like of bool, default=False
    squash : bool or array-like of bool, default=False
    clip : tuple of (float or array-like, float or array-like), default=None
        Public bounds ``(low, high)``.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only for data frames with string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred.preprocessing import PublicScaler
    >>> PublicScaler(scale=100.0, clip=(0, 120)).fit_transform(np.array([[37.0], [150.0]]))
    array([[0.37],
           [1.2 ]])

    Data without a shipped schema: declare each column's public range in one
    line with :meth:`from_bounds`.

    >>> PublicScaler.from_bounds([0, 10], [100, 20]).fit_transform(np.array([[50.0, 30.0]]))
    array([[0., 1.]])
    """

    @classmethod
    def from_bounds(
        cls,
        lower: Any,
        upper: Any,
        *,
        feature_range: tuple[float, float] = (-1.0, 1.0),
    ) -> PublicScaler:
        """The scaler that clips each column to its public range and maps it onto ``feature_range``.

        ``PublicScaler.from_bounds(lower, upper)`` is the scaler a schema's
        ``{"clip": (low, high), "center": (low + high) / 2, "scale": (high - low)
        / 2}`` entries build (:func:`public_preprocessor`): every value is
        clipped to ``[lower, upper]``, then mapped linearly so that ``lower``
        goes to ``feature_range[0]`` and ``upper`` to ``feature_range[1]``. The
        default range ``[-1, 1]`` is the scale the linear estimators' defaults
        are set for. Its output is publicly bounded, so :func:`row_norm_bound`
        gives their tightest ``feature_norm_bound``.

        Take the ranges from the data's documentation, its units or domain
        knowledge (a percentage lies in ``[0, 100]``), never from the private
        rows: a minimum or maximum of the training data is a statistic of it.

        Parameters
        ----------
        lower, upper : float or array-like of shape (n_features,)
            Public range of every column (scalars apply to all columns),
            finite, with ``lower < upper``.
        feature_range : tuple (min, max), default=(-1.0, 1.0)
            The output range, with ``min < max`` (``(0.0, 1.0)`` is the range
            of :func:`~skprivpred.datasets.adult_schema`'s numeric columns).

        Returns
        -------
        PublicScaler
            Unfitted (fitting reads only the number of columns).

        Raises
        ------
        ValueError
            If a bound is not finite, if ``lower >= upper`` for some column,
            if ``lower`` and ``upper`` have incompatible shapes, or if
            ``feature_range`` is not an increasing pair of finite numbers.

        Examples
        --------
        >>> from skprivpred.preprocessing import PublicScaler
        >>> scaler = PublicScaler.from_bounds([0.0, 10.0], [100.0, 20.0])
        >>> scaler.center, scaler.scale, scaler.clip
        ([50.0, 15.0], [50.0, 5.0], ([0.0, 10.0], [100.0, 20.0]))
        """
        try:
            low = np.asarray(lower, dtype=float)
            high = np.asarray(upper, dtype=float)
            low, high = np.broadcast_arrays(low, high)
        except (TypeError, ValueError):
            raise ValueError(
                "lower and upper must be numbers or array-likes of one number per column, of the "
                f"same length; got lower={lower!r}, upper={upper!r}."
            ) from None
        if low.ndim > 1:
            raise ValueError(
                f"lower and upper must be scalars or 1-D (one value per column), got shape "
                f"{low.shape}."
            )
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError(
                f"lower and upper must be finite, got lower={lower!r}, upper={upper!r}."
            )
        bad = np.flatnonzero(np.atleast_1d(low >= high))
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"lower must be below upper for every column: column {i} has lower="
                f"{float(np.atleast_1d(low)[i])!r} >= upper={float(np.atleast_1d(high)[i])!r}."
            )
        try:
            out_low, out_high = (float(v) for v in feature_range)
        except (TypeError, ValueError):
            out_low = out_high = math.nan
        if not (math.isfinite(out_low) and math.isfinite(out_high) and out_low < out_high):
            raise ValueError(
                "feature_range must be a pair (min, max) of finite numbers with min < max, got "
                f"{feature_range!r}."
            )
        # v -> (v - center) / scale sends lower to out_low and upper to out_high.
        scale = (high - low) / (out_high - out_low)
        center = low - out_low * scale

        def constant(values: np.ndarray) -> Any:
            return float(values) if values.ndim == 0 else values.tolist()

        return cls(
            center=constant(center),
            scale=constant(scale),
            clip=(constant(low), constant(high)),
        )

    def __init__(
        self,
        *,
        center: Any = 0.0,
        scale: Any = 1.0,
        log: Any = False,
        squash: Any = False,
        clip: tuple | None = None,
    ) -> None:
        self.center = center
        self.scale = scale
        self.log = log
        self.squash = squash
        self.clip = clip

    def _constant(self, value, name: str, n: int, dtype=float) -> np.ndarray:
        array = np.broadcast_to(np.asarray(value, dtype=dtype), (n,))
        if dtype is float and not np.all(np.isfinite(array)):
            raise ValueError(f"{name} must be finite, got {value!r}.")
        return array

    def fit(self, X: MatrixLike, y: Any = None) -> Self:
        """Check the constants against the number of columns (nothing else is read).

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Only its shape and column names are used.
        y : None
            Ignored.

        Returns
        -------
        self : PublicScaler
        """
        refuse_dask_collection(self, X, "fit")
        validate_data(self, X, reset=True, dtype=None, ensure_all_finite=False)
        n = self.n_features_in_
        try:
            scale = self._constant(self.scale, "scale", n)
            self._constant(self.center, "center", n)
            self._constant(self.log, "log", n, dtype=bool)
            self._constant(self.squash, "squash", n, dtype=bool)
            if self.clip is not None:
                low, high = self.clip
                if np.any(self._constant(low, "clip", n) > self._constant(high, "clip", n)):
                    raise ValueError(f"clip must be (low, high) with low <= high, got {self.clip}.")
        except (TypeError, ValueError) as exc:
            if "broadcast" in str(exc):
                raise ValueError(
                    f"the constants of PublicScaler must be scalars or hold one value per column "
                    f"({n}): {exc}"
                ) from None
            raise
        if np.any(scale <= 0):
            raise ValueError(f"scale must be > 0, got {self.scale!r}.")
        return self

    def transform(self, X: MatrixLike) -> np.ndarray:
        """Apply the fixed map.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Numeric, finite.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        refuse_dask_collection(self, X, "transform")
        check_is_fitted(self, "n_features_in_")
        X = validate_data(self, X, reset=False, dtype=np.float64, copy=True)
        return self._map(X, self.n_features_in_)

    def _map(self, X: np.ndarray, n: int) -> np.ndarray:
        """The fixed map on a float array of ``n`` columns (modified in place)."""
        if self.clip is not None:
            low, high = self.clip
            X = np.clip(X, self._constant(low, "clip", n), self._constant(high, "clip", n))
        log = self._constant(self.log, "log", n, dtype=bool)
        if log.any():
            X[:, log] = np.log1p(X[:, log])
        X = (X - self._constant(self.center, "center", n)) / self._constant(self.scale, "scale", n)
        squash = self._constant(self.squash, "squash", n, dtype=bool)
        if squash.any():
            X[:, squash] = np.tanh(X[:, squash])
        return X

    def _column_bounds(self, n: int) -> np.ndarray:
        """Largest ``|output|`` of each of ``n`` columns, from the constants alone (inf: none).

        Every step of the map (clip, ``log1p``, ``(v - center) / scale`` with
        ``scale > 0``, ``tanh``) is non-decreasing, so over the clip interval
        ``[low, high]`` a column's output lies between the images of ``low`` and
        ``high``, computed here by the same code as :meth:`transform`. A column
        without clip bounds is bounded by 1 if squashed, else not at all.
        """
        squash = self._constant(self.squash, "squash", n, dtype=bool)
        if self.clip is None:
            return np.where(squash, 1.0, np.inf)
        low, high = self.clip
        ends = np.vstack([self._constant(low, "clip", n), self._constant(high, "clip", n)])
        with np.errstate(invalid="ignore", divide="ignore"):  # log1p below -1: NaN
            images = self._map(ends.astype(np.float64), n)
        largest = np.max(np.abs(images), axis=0)
        # A log of a value below -1 is undefined (NaN): no bound, unless squashed.
        largest = np.where(np.isnan(largest), np.inf, largest)
        return np.where(squash, np.minimum(largest, 1.0), largest)


def public_preprocessor(schema: dict) -> ColumnTransformer:
    """A ``ColumnTransformer`` of public transformers built from a declared schema.

    Numeric columns first (one :class:`PublicScaler`), then the one-hot blocks of
    the categorical columns (one :class:`PublicOneHotEncoder`); other columns are
    dropped. The output is always dense (``sparse_threshold=0``: a data-dependent
    output format would say something about the rows).

    Parameters
    ----------
    schema : dict
        ``{"numeric": {column: {"scale", "center", "log", "squash", "clip"}},
        "categorical": {column: [category, ...]}, "missing": {column: [marker,
        ...]}}``; see :func:`skprivpred.datasets.adult_schema`. ``"missing"``
        (optional) names, for categorical columns, the values the data's
        documentation uses for a missing value (Adult's ``"?"``): they encode
        as none of the categories (``missing_values`` of the
        :class:`PublicOneHotEncoder`).

    Returns
    -------
    sklearn.compose.ColumnTransformer
        Unfitted; fitting it reads only column names and counts.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from skprivpred import SubsampleAggregateClassifier
    >>> from skprivpred.datasets import adult_schema
    >>> from skprivpred.preprocessing import public_preprocessor
    >>> model = make_pipeline(
    ...     public_preprocessor(adult_schema()),  # safe outside: it reads no row
    ...     SubsampleAggregateClassifier(LogisticRegression(), classes=[0, 1]),
    ... )
    """
    if not isinstance(schema, dict) or set(schema) - {"numeric", "categorical", "missing"}:
        raise ValueError(
            'schema must be a dict with the keys "numeric" and/or "categorical" (and '
            f'optionally "missing"), got '
            f"{sorted(schema) if isinstance(schema, dict) else type(schema).__name__}."
        )
    numeric = dict(schema.get("numeric", {}))
    categorical = dict(schema.get("categorical", {}))
    missing = dict(schema.get("missing", {}))
    if set(missing) - set(categorical):
        raise ValueError(
            f"schema['missing'] names columns that are not categorical: "
            f"{sorted(set(missing) - set(categorical))}."
        )
    transformers: list = []
    if numeric:
        for column, spec in numeric.items():
            unknown = set(spec) - _NUMERIC_KEYS
            if unknown:
                raise ValueError(
                    f"schema['numeric'][{column!r}] has unknown keys {sorted(unknown)}; allowed: "
                    f"{sorted(_NUMERIC_KEYS)}."
                )
        specs = list(numeric.values())
        clips = [s.get("clip") for s in specs]
        if any(c is not None for c in clips) and not all(c is not None for c in clips):
            raise ValueError("give clip bounds for every numeric column of the schema, or none.")
        scaler = PublicScaler(
            center=[s.get("center", 0.0) for s in specs],
            scale=[s.get("scale", 1.0) for s in specs],
            log=[bool(s.get("log", False)) for s in specs],
            squash=[bool(s.get("squash", False)) for s in specs],
            clip=None if clips[0] is None else tuple(map(list, zip(*clips))),
        )
        transformers.append(("numeric", scaler, list(numeric)))
    if categorical:
        encoder = PublicOneHotEncoder(
            categories=[list(v) for v in categorical.values()],
            missing_values=[list(missing.get(c, [])) for c in categorical] if missing else None,
        )
        transformers.append(("categorical", encoder, list(categorical)))
    if not transformers:
        raise ValueError("schema declares no column.")
    return ColumnTransformer(
        transformers, remainder="drop", sparse_threshold=0.0, verbose_feature_names_out=False
    )


def is_public(transformer: Any) -> bool:
    """Whether a fitted transformer is data-independent: made of public transformers only.

    True for :class:`PublicOneHotEncoder`, :class:`PublicScaler`, and a
    ``Pipeline`` or ``ColumnTransformer`` built only of them, ``"passthrough"``
    and ``"drop"`` (each of exactly that class, never a subclass). Such a
    transformer computes the same function whatever rows it was fitted on,
    given the columns it resolved, so clones of it with equal parameters and
    equal resolved columns are interchangeable, and the ensemble applies it
    once per query batch.

    Parameters
    ----------
    transformer : object
        A fitted transformer (or ``"passthrough"``/``"drop"``).

    Returns
    -------
    bool
    """
    from sklearn.pipeline import Pipeline

    if isinstance(transformer, str):
        return transformer in ("passthrough", "drop")
    # Exact types: a user's subclass may compute anything from the rows it saw.
    if type(transformer) in (PublicOneHotEncoder, PublicScaler):
        return True
    if type(transformer) is Pipeline:
        return all(is_public(step) for _, step in transformer.steps)
    if type(transformer) is ColumnTransformer:
        fitted = getattr(transformer, "transformers_", None)
        return fitted is not None and all(is_public(step) for _, step, _ in fitted)
    return False


# A relative margin on the computed bound: the norm of a row, computed in floating
# point, may round a few units in the last place above the exact bound.
_ROUNDING_MARGIN = 1e-12


def row_norm_bound(transformer: Any) -> float:
    """The largest Euclidean norm a row of a public transformer's output can have.

    Computed from the transformer's parameters alone (its constants, its
    category lists, the number of its columns), never from data: the value to
    pass as ``feature_norm_bound`` to the linear estimators
    (:class:`~skprivpred.StableERMClassifier`,
    :class:`~skprivpred.AveragedPSGDClassifier` and their regressors), so that
    no row is clipped and the noise is calibrated to the tightest public bound.

    - :class:`PublicOneHotEncoder`: each column becomes one block with at most
      one 1 (all zeros for a value outside its list), so ``sqrt(n_columns)``.
    - :class:`PublicScaler`: each step of its map is non-decreasing, so a
      clipped column lies between the images of its clip bounds; a squashed
      column lies in ``(-1, 1)``; a column neither clipped nor squashed has no
      bound (``ValueError``).
    - ``ColumnTransformer``: the blocks side by side, ``sqrt(sum of the
      squared bounds)``; ``"drop"`` adds nothing, ``"passthrough"`` has no
      bound.
    - ``Pipeline``: the bound of its last step.

    The result is a true bound with a relative margin of ``1e-12`` against
    rounding.

    Parameters
    ----------
    transformer : object
        A public transformer (see :func:`is_public`), fitted or not; for example
        ``public_preprocessor(schema)``. An unfitted :class:`PublicScaler` whose
        constants are all scalars must be fitted first (its number of columns is
        unknown), unless it sits in a ``ColumnTransformer`` with a column list.

    Returns
    -------
    float
        The bound.

    Raises
    ------
    TypeError
        If ``transformer`` is not made of public transformers only (the output
        of preprocessing fitted to data has no public bound).
    ValueError
        If some output column is unbounded.

    Examples
    --------
    >>> from skprivpred.datasets import adult_schema, magic_schema
    >>> from skprivpred.preprocessing import public_preprocessor, row_norm_bound
    >>> round(row_norm_bound(public_preprocessor(adult_schema())) ** 2, 6)  # 6 numbers, 8 one-hots
    14.0
    >>> round(row_norm_bound(public_preprocessor(magic_schema())) ** 2, 6)  # 10 squashed numbers
    10.0
    """
    squared = _squared_bound(transformer, columns=None, where="")
    return math.sqrt(squared) * (1.0 + _ROUNDING_MARGIN)


def _squared_bound(transformer: Any, columns: list | None, where: str) -> float:
    """Largest squared norm of an output row of ``transformer`` (its input ``columns`` if known)."""
    from sklearn.pipeline import Pipeline

    if isinstance(transformer, str) or transformer is None:
        if transformer == "drop":
            return 0.0
        raise ValueError(
            f"{where or 'the transformer'} passes its columns through unchanged: their values "
            "have no public bound; map them with a PublicScaler (clip bounds or squash) or drop "
            "them."
        )
    if isinstance(transformer, PublicOneHotEncoder):
        categories = getattr(transformer, "categories_", transformer.categories)
        return float(len(categories))
    if isinstance(transformer, PublicScaler):
        bounds = transformer._column_bounds(_scaler_width(transformer, columns, where))
        unbounded = np.flatnonzero(~np.isfinite(bounds))
        if unbounded.size:
            names = [columns[i] if columns is not None else i for i in unbounded.tolist()]
            raise ValueError(
                f"{where or 'PublicScaler'}: column(s) {names} are neither clipped nor squashed, "
                "so their values have no public bound; give them clip bounds (from their "
                "documented ranges) or squash=True."
            )
        return float(np.sum(np.square(bounds)))
    if isinstance(transformer, Pipeline):
        steps = [step for _, step in transformer.steps if step not in (None, "passthrough")]
        if not steps:
            return _squared_bound("passthrough", columns, where)
        return _squared_bound(steps[-1], None, f"{where} (last step of a Pipeline)")
    if isinstance(transformer, ColumnTransformer):
        return _column_transformer_bound(transformer, where)
    raise TypeError(
        f"row_norm_bound knows the public transformers only (PublicOneHotEncoder, PublicScaler "
        f"and Pipelines or ColumnTransformers of them), got {type(transformer).__name__}: the "
        "output of preprocessing fitted to data has no public bound."
    )


def _scaler_width(scaler: PublicScaler, columns: list | None, where: str) -> int:
    """Number of columns of a PublicScaler: fitted, given by its block, or by its constants."""
    if hasattr(scaler, "n_features_in_"):
        return int(scaler.n_features_in_)
    if columns is not None:
        return len(columns)
    constants = (scaler.center, scaler.scale, scaler.log, scaler.squash, *(scaler.clip or ()))
    sizes = {np.size(value) for value in constants if np.ndim(value) > 0}
    if len(sizes) != 1:
        raise ValueError(
            f"{where or 'PublicScaler'}: the number of columns of an unfitted PublicScaler with "
            "scalar constants is unknown; fit it first (fitting reads no row)."
        )
    return int(sizes.pop())


def _column_transformer_bound(transformer: ColumnTransformer, where: str) -> float:
    fitted = getattr(transformer, "transformers_", None)
    blocks = list(fitted if fitted is not None else transformer.transformers)
    if fitted is None and transformer.remainder != "drop":
        blocks.append(("remainder", transformer.remainder, None))
    total = 0.0
    for name, step, selection in blocks:
        columns = None
        if selection is not None and not callable(selection) and np.ndim(selection) == 1:
            selected = np.asarray(selection)
            columns = (np.flatnonzero(selected) if selected.dtype == bool else selected).tolist()
        if fitted is not None and name == "remainder" and columns == []:
            continue  # no column left over
        total += _squared_bound(step, columns, f"{where}block {name!r} of a ColumnTransformer")
    return total
