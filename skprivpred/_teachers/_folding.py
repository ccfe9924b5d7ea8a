"""Folding affine preprocessing into a linear teacher, so that it joins the stacked votes.

A teacher ``make_pipeline(StandardScaler(), LogisticRegression())`` computes
``w . ((x - m) / s) + b``, which is the linear function ``(w / s) . x + (b - w . m / s)``
of the raw row. :func:`fold_pipeline` rewrites such a pipeline, fitted, as one
linear model on the raw features, so that :class:`~skprivpred._teachers._votes.TeacherEnsemble`
scores it with all the other linear teachers in one matrix product. The fold uses
the teacher's own fitted parameters only: it is post-processing of that teacher,
and its votes are those of the pipeline's ``predict`` (the same function of the
row, up to floating-point rounding in the last bits of the score).

Affine steps: ``StandardScaler``, ``MinMaxScaler`` (without ``clip``),
``MaxAbsScaler``, ``FunctionTransformer()`` without a function, ``"passthrough"``
(or ``None``), a ``Pipeline`` of those, and a ``ColumnTransformer`` of those over
disjoint columns with ``remainder`` ``"passthrough"`` or ``"drop"``, each of exactly
that class (a user's subclass may compute anything). Anything else (trees,
encoders, non-linear maps, subclasses) is left to the teacher's own ``predict``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, MinMaxScaler, StandardScaler

__all__ = ["FoldedLinear", "fold_pipeline"]


@dataclass
class FoldedLinear:
    """A fitted linear classifier on the raw features (what a folded pipeline computes)."""

    coef_: np.ndarray  # (n_scores, n_features_in)
    intercept_: np.ndarray  # (n_scores,)
    classes_: np.ndarray


@dataclass
class _Affine:
    """``out[:, k] = scale[k] * x[:, source[k]] + shift[k]`` for every output column ``k``."""

    source: np.ndarray
    scale: np.ndarray
    shift: np.ndarray

    @classmethod
    def identity(cls, n: int) -> _Affine:
        return cls(np.arange(n), np.ones(n), np.zeros(n))

    def then(self, other: _Affine) -> _Affine:
        """This map followed by ``other``."""
        return _Affine(
            self.source[other.source],
            other.scale * self.scale[other.source],
            other.scale * self.shift[other.source] + other.shift,
        )


def _step_map(step, n_in: int, names) -> _Affine | None:
    """The affine map of one fitted step on ``n_in`` columns, or None if it is not affine."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return _Affine.identity(n_in)
    if type(step) is Pipeline:
        return _pipeline_map(step.steps, n_in, names)
    if type(step) is FunctionTransformer:
        return _Affine.identity(n_in) if step.func is None else None
    if type(step) is StandardScaler:
        # mean_ is computed even when with_mean=False; only the flags say what transform does.
        scale = 1.0 / np.asarray(step.scale_, float) if step.with_std else np.ones(n_in)
        mean = np.asarray(step.mean_, float) if step.with_mean else np.zeros(n_in)
        return _Affine(np.arange(n_in), scale, -mean * scale)
    if type(step) is MinMaxScaler:
        if step.clip:
            return None
        return _Affine(
            np.arange(n_in), np.asarray(step.scale_, float), np.asarray(step.min_, float)
        )
    if type(step) is MaxAbsScaler:
        return _Affine(np.arange(n_in), 1.0 / np.asarray(step.scale_, float), np.zeros(n_in))
    if type(step) is ColumnTransformer:
        return _column_map(step, n_in, names)
    return None


def _pipeline_map(steps, n_in: int, names) -> _Affine | None:
    result = _Affine.identity(n_in)
    for position, (_, step) in enumerate(steps):
        # Column names refer to the raw input: only the first step may select by name.
        mapped = _step_map(step, result.source.size, names if position == 0 else None)
        if mapped is None:
            return None
        result = result.then(mapped)
    return result


def _column_indices(columns, n_in: int, names) -> np.ndarray | None:
    """Input column indices of a ColumnTransformer column specification, or None."""
    if isinstance(columns, slice):
        return np.arange(n_in)[columns]
    spec = np.atleast_1d(np.asarray(columns))
    if spec.dtype.kind == "b" and spec.size == n_in:
        return np.flatnonzero(spec)
    if spec.dtype.kind in "iu":
        return np.arange(n_in)[spec]
    if spec.dtype.kind in "UO" and names is not None:
        lookup = {str(name): i for i, name in enumerate(names)}
        if all(str(c) in lookup for c in spec):
            return np.array([lookup[str(c)] for c in spec], dtype=np.intp)
    return None


def _column_map(transformer: ColumnTransformer, n_in: int, names) -> _Affine | None:
    parts, used = [], []
    for _, step, columns in transformer.transformers_:
        if isinstance(step, str) and step == "drop":
            continue
        index = _column_indices(columns, n_in, names)
        if index is None:
            return None
        mapped = _step_map(step, index.size, None)
        if mapped is None:
            return None
        parts.append(_Affine(index[mapped.source], mapped.scale, mapped.shift))
        used.append(index)
    if not parts:
        return None
    used_all = np.concatenate(used)
    if np.unique(used_all).size != used_all.size:
        return None  # overlapping columns: not the disjoint layout folded here
    width = sum(part.source.size for part in parts)
    if getattr(transformer, "n_features_out_", width) != width:
        return None
    return _Affine(
        np.concatenate([p.source for p in parts]),
        np.concatenate([p.scale for p in parts]),
        np.concatenate([p.shift for p in parts]),
    )


def fold_pipeline(pipeline: Pipeline, linear_types: tuple) -> FoldedLinear | None:
    """The fitted ``pipeline`` as one linear model on its raw input, or None if it is not one.

    Parameters
    ----------
    pipeline : Pipeline
        A fitted pipeline whose last step is an instance of ``linear_types``.
    linear_types : tuple of type
        The linear classifiers the ensemble stacks (matched by exact type).

    Returns
    -------
    FoldedLinear or None
    """
    final = pipeline.steps[-1][1]
    if type(final) not in linear_types or not hasattr(pipeline, "n_features_in_"):
        return None
    coef = np.atleast_2d(np.asarray(final.coef_))
    if coef.dtype.kind not in "fi":  # a sparse coefficient matrix is left alone
        return None
    n_in = int(pipeline.n_features_in_)
    names = getattr(pipeline, "feature_names_in_", None)
    mapped = _pipeline_map(pipeline.steps[:-1], n_in, names)
    if mapped is None or mapped.source.size != coef.shape[1]:
        return None
    if names is not None and np.unique(mapped.source).size < n_in:
        # A data frame's dropped columns may hold strings, which the stacked product (one
        # float conversion of the whole frame) cannot read: leave it to predict.
        return None
    weights = np.zeros((coef.shape[0], n_in))
    np.add.at(weights.T, mapped.source, (coef * mapped.scale).T)
    intercept = np.broadcast_to(np.asarray(final.intercept_, float), (coef.shape[0],))
    return FoldedLinear(weights, intercept + coef @ mapped.shift, np.asarray(final.classes_))
