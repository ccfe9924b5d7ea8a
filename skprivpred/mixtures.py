"""Learning halfspaces from a mixture of private and public populations (spec-003).

:class:`PrivateHalfspacePPM` implements Algorithm 2 (``A_LearnHalf``) of Bassily,
Moran and Nandi, "Learning from Mixtures of Private and Public Populations"
(NeurIPS 2020), with its sub-routine Algorithm 1 (``A_ConstrHalf``):

1. a finite family of candidate halfspaces is built from the **public** rows only
   (their feature vectors; labels and private rows are never looked at);
2. the finite class ``G`` holds every hypothesis "label ``public_label`` inside the
   intersection of at most ``j_max`` candidate halfspaces and the affine hull of
   the public points, the other label outside", plus the constant hypothesis
   (empty region) and the region "whole affine hull";
3. one hypothesis is drawn by the exponential mechanism with weight
   ``exp(-epsilon * mistakes / 2)`` over integer mistake counts on **all** rows,
   sampled exactly; the drawn hypothesis is the released model.

The pure helpers :func:`build_candidates`, :func:`mistake_counts`,
:func:`selection_log_probs` and :func:`em_excess_bound` are what ``fit`` is made
of. ``build_candidates`` is public-only; the other two read private rows and are
**not private**: they are for tests and analysis, never for release.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from itertools import chain, combinations
from numbers import Real
from typing import Any

import numpy as np
from scipy.spatial import ConvexHull
from scipy.special import log_softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_consistent_length, check_is_fitted, validate_data

from ._base import (
    check_accountant,
    check_epsilon,
    check_positive_int,
    reject_fit_params,
    spawn_streams,
    unchanged_on_error,
)
from ._typing import MatrixLike, RandomStateLike, Self, VectorLike
from .accounting import PrivacyAccountant
from .finite import sample_fewest_mistakes

__all__ = [
    "PrivateHalfspacePPM",
    "build_candidates",
    "em_excess_bound",
    "mistake_counts",
    "selection_log_probs",
]

#: Candidate strategies of spec §3.3 / §4.1.
STRATEGIES = ("auto", "exact", "hull", "sample")

# Indices of the two hypotheses every class holds, before the intersections.
_EMPTY, _WHOLE_AFF = 0, 1

# Elements per block of a (rows x halfspaces) matrix (bounds memory to ~ 32 MB).
_BLOCK = 4_000_000


def _comb(n: int, k: int) -> int:
    return math.comb(n, k) if 0 <= k <= n else 0


def _class_size(n_halfspaces: int, j_max: int) -> int:
    """|G| = 2 + sum_{j=1..j_max} C(m, j): empty region, whole Aff, intersections."""
    return 2 + sum(_comb(n_halfspaces, j) for j in range(1, j_max + 1))


def _unrank_combination(rank: int, m: int, j: int) -> list[int]:
    """The ``rank``-th ``j``-subset of ``range(m)`` in lexicographic order."""
    combo, start = [], 0
    for position in range(j):
        for c in range(start, m):
            count = _comb(m - c - 1, j - position - 1)
            if rank < count:
                combo.append(c)
                start = c + 1
                break
            rank -= count
    return combo


@dataclass
class CandidateFamily:
    """The finite class ``G``, built from public points only.

    Hypothesis indices: 0 is the empty region (constant ``1 - public_label``),
    1 the whole affine hull, then the intersections. For ``"exact"`` and
    ``"hull"``: the ``C(m, 1)`` single halfspaces, then the ``C(m, 2)`` pairs
    in lexicographic order, and so on up to ``j_max``. For ``"sample"``: pool
    member ``i`` (index ``2 + i``) intersects the pool halfspaces
    ``i, i+1, ..., i+window_sizes[i]-1`` (indices modulo the pool size).

    Attributes
    ----------
    strategy : {"exact", "hull", "sample"}
    origin : ndarray of shape (d,)
        Mean of the distinct public points.
    basis : ndarray of shape (d, k)
        Orthonormal basis of the directions of their affine hull ``Aff``.
    scale : float
        Size of the public point cloud; tolerances are ``tol * scale``.
    tol : float
    normals, offsets : ndarray of shape (m, k) and (m,)
        Candidate halfspaces ``{z : normals[i] . z >= offsets[i]}`` in Aff coordinates.
    j_max : int
        Largest number of intersected halfspaces.
    size : int
        ``|G|``.
    window_sizes : ndarray of shape (M,) or None
        ``"sample"`` only: number of halfspaces of each pool member.
    """

    strategy: str
    origin: np.ndarray
    basis: np.ndarray
    scale: float
    tol: float
    normals: np.ndarray
    offsets: np.ndarray
    j_max: int
    size: int
    window_sizes: np.ndarray | None = None

    @property
    def slack(self) -> float:
        return self.tol * self.scale

    def to_affine(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Aff coordinates ``z = V^T (x - c)`` and the distance of each row to Aff."""
        centred = X - self.origin
        Z = centred @ self.basis
        if self.basis.shape[1] == X.shape[1]:
            return Z, np.zeros(X.shape[0])
        return Z, np.linalg.norm(centred - Z @ self.basis.T, axis=1)

    def members(self, index: int) -> np.ndarray | None:
        """Halfspace indices of hypothesis ``index``; None for the empty region."""
        if index == _EMPTY:
            return None
        rank = index - 2
        if rank < 0:
            return np.zeros(0, dtype=int)
        m = self.normals.shape[0]
        if self.strategy == "sample":
            assert self.window_sizes is not None  # always set for the "sample" strategy
            return (rank + np.arange(self.window_sizes[rank])) % m
        for j in range(1, self.j_max + 1):
            count = _comb(m, j)
            if rank < count:
                return np.array(_unrank_combination(rank, m, j), dtype=int)
            rank -= count
        raise IndexError(f"hypothesis index {index} is outside a class of {self.size}.")


# -- candidate construction (public rows only) ----------------------------------------------------
def _affine_hull(X_pub: np.ndarray, tol: float):
    """Distinct public points, their mean, an orthonormal basis of Aff, the scale."""
    points = np.unique(X_pub, axis=0)
    origin = points.mean(axis=0)
    centred = points - origin
    scale = float(max(np.abs(points).max(), np.linalg.norm(centred, axis=1).max()))
    if not scale > 0:
        scale = 1.0
    if points.shape[0] == 1:
        return points, origin, np.zeros((X_pub.shape[1], 0)), scale
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    rank = int(np.sum(sv > tol * sv[0])) if sv[0] > 0 else 0
    return points, origin, vt[:rank].T.copy(), scale


def _dedup(normals: np.ndarray, offsets: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Drop repeated halfspaces (same unit normal and offset), keeping first occurrences."""
    if normals.shape[0] == 0:
        return normals, offsets
    key = np.round(np.column_stack([normals, offsets / scale]), 9) + 0.0  # -0.0 -> 0.0
    _, first = np.unique(key, axis=0, return_index=True)
    first = np.sort(first)
    return normals[first], offsets[first]


def _n_subsets(n_points: int, k: int) -> int:
    return sum(_comb(n_points, s) for s in range(1, k + 1))


def _subsets(n_points: int, s: int) -> np.ndarray:
    if s == 1:
        return np.arange(n_points)[:, None]
    if s == 2:
        return np.column_stack(np.triu_indices(n_points, 1))
    count = _comb(n_points, s)
    flat = np.fromiter(chain.from_iterable(combinations(range(n_points), s)), int, count * s)
    return flat.reshape(count, s)


def _exact_halfspaces(
    Z: np.ndarray, slack: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 in Aff coordinates: two opposite halfspaces per subset of 1..k points.

    The boundary contains the subset. Its normal is a random Gaussian vector
    (public stream) projected onto the orthogonal complement of the subset's
    direction space inside Aff: for an affinely independent k-subset that
    complement is a line, so the hyperplane is the unique one through the subset.
    """
    n_points, k = Z.shape
    normals, offsets = [], []
    for s in range(1, k + 1):
        subsets = _subsets(n_points, s)
        points = Z[subsets]  # (S, s, k)
        g = rng.standard_normal((subsets.shape[0], k))
        if s > 1:
            diffs = points[:, 1:, :] - points[:, :1, :]
            _, sv, vt = np.linalg.svd(diffs, full_matrices=True)
            rows = vt[:, : s - 1, :]
            coef = np.einsum("sik,sk->si", rows, g) * (sv > slack)
            g = g - np.einsum("si,sik->sk", coef, rows)
        norm = np.linalg.norm(g, axis=1)
        ok = norm > 1e-9
        a = g[ok] / norm[ok, None]
        b = np.einsum("sk,sk->s", a, points[ok, 0, :])
        normals += [a, -a]
        offsets += [b, -b]
    return np.concatenate(normals), np.concatenate(offsets)


def _hull_halfspaces(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inward facet halfspaces of conv(public points) in Aff coordinates."""
    k = Z.shape[1]
    if k == 1:
        return np.array([[1.0], [-1.0]]), np.array([Z[:, 0].min(), -Z[:, 0].max()])
    equations = ConvexHull(Z).equations  # n . z + c <= 0 inside, unit n
    return -equations[:, :k], equations[:, k]


def _sampled_halfspaces(
    Z: np.ndarray, pool_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Supporting halfspaces of the public points in random whitened directions."""
    k = Z.shape[1]
    cov = Z.T @ Z / Z.shape[0]
    eigval, eigvec = np.linalg.eigh(cov)
    eigval = np.maximum(eigval, eigval.max() * 1e-12)
    whiten = (eigvec / np.sqrt(eigval)) @ eigvec.T
    u = rng.standard_normal((pool_size, k))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    directions = u @ whiten  # (M, k): u . (W z) = (W u) . z, W symmetric
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    top = np.full(pool_size, -np.inf)
    step = max(1, _BLOCK // max(pool_size, 1))
    for start in range(0, Z.shape[0], step):
        top = np.maximum(top, (Z[start : start + step] @ directions.T).max(axis=0))
    # {z : d . z <= top}, written as {z : (-d) . z >= -top}; it contains every public point.
    return -directions, -top


def build_candidates(
    X_public,
    strategy: str = "auto",
    *,
    max_candidates: int = 10**6,
    pool_size: int = 10_000,
    max_halfspaces: int | None = None,
    tol: float = 1e-9,
    rng: np.random.Generator | None = None,
) -> CandidateFamily:
    """Build the finite class ``G`` from public feature vectors only (Algorithm 1).

    Parameters
    ----------
    X_public : ndarray of shape (n_public, d)
        Public feature vectors (labels are not used). At least one row.
    strategy : {"auto", "exact", "hull", "sample"}
        See :class:`PrivateHalfspacePPM`.
    max_candidates, pool_size, max_halfspaces, tol
        As in :class:`PrivateHalfspacePPM`.
    rng : numpy.random.Generator
        The public-only stream (random normals, the sample pool).

    Returns
    -------
    CandidateFamily

    Raises
    ------
    ValueError
        ``"exact"`` or ``"hull"`` when ``|G|`` would exceed ``max_candidates``
        (the count is in the message; it depends on public rows only).
    """
    X_public = np.asarray(X_public, dtype=float)
    rng = np.random.default_rng() if rng is None else rng
    points, origin, basis, scale = _affine_hull(X_public, tol)
    Z = (points - origin) @ basis
    k = basis.shape[1]
    j_max = k if max_halfspaces is None else min(int(max_halfspaces), k)
    empty = np.zeros((0, k)), np.zeros(0)

    def family(name, halfspaces, size, window_sizes=None):
        return CandidateFamily(
            name,
            origin,
            basis,
            scale,
            tol,
            halfspaces[0],
            halfspaces[1],
            j_max,
            size,
            window_sizes,
        )

    if k == 0:  # one distinct public point: G = {empty region, the point itself}
        return family(
            "exact" if strategy == "auto" else strategy,
            empty,
            2,
            np.zeros(0, dtype=int) if strategy == "sample" else None,
        )

    if strategy in ("auto", "exact"):
        n_subsets = _n_subsets(points.shape[0], k)
        general = _class_size(2 * n_subsets, j_max)  # general position, before dedup
        # "auto" builds the exact halfspaces only when duplicates could plausibly bring
        # the class under the cap (a public-only, data-independent shortcut).
        worth_trying = strategy == "exact" or general <= 100 * max_candidates
        if n_subsets <= max_candidates and worth_trying:
            halfspaces = _dedup(*_exact_halfspaces(Z, tol * scale, rng), scale)
            size = _class_size(halfspaces[0].shape[0], j_max)
            if size <= max_candidates:
                return family("exact", halfspaces, size)
        else:
            size = general
        if strategy == "exact":
            raise ValueError(
                f"candidates='exact' needs a class of {size} hypotheses on these public points "
                f"({points.shape[0]} distinct, affine dimension {k}, {n_subsets} subsets), more "
                f"than max_candidates={max_candidates}. The class is never truncated: use "
                "candidates='hull' (low dimension) or 'sample', lower max_halfspaces, or raise "
                "max_candidates if time and memory allow."
            )
    if strategy == "hull" or (strategy == "auto" and k <= 3):
        halfspaces = _dedup(*_hull_halfspaces(Z), scale)
        size = _class_size(halfspaces[0].shape[0], j_max)
        if size <= max_candidates:
            return family("hull", halfspaces, size)
        if strategy == "hull":
            raise ValueError(
                f"candidates='hull' needs a class of {size} hypotheses "
                f"({halfspaces[0].shape[0]} facets of the public convex hull, intersections of "
                f"up to {j_max}), more than max_candidates={max_candidates}. Use "
                "candidates='sample', lower max_halfspaces, or raise max_candidates."
            )
    windows = rng.integers(1, j_max + 1, size=pool_size)
    return family("sample", _sampled_halfspaces(Z, pool_size, rng), pool_size + 2, windows)


# -- mistake counts and the mechanism (NOT private: they read private rows) ----------------------
def _packed(bits: np.ndarray) -> np.ndarray:
    """Pack a (rows, m) bool matrix into (m, words) uint64 bit rows."""
    packed = np.packbits(bits.T, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


def _popcount(words: np.ndarray) -> np.ndarray:
    return np.bitwise_count(words).sum(axis=-1, dtype=np.int64)


def mistake_counts(family: CandidateFamily, X, y, public_label: int = 0) -> np.ndarray:
    """Integer number of training rows each hypothesis of ``G`` gets wrong.

    NOT PRIVATE: a function of every row. Replacing one row changes each count
    by at most one (the sensitivity the mechanism relies on).

    Parameters
    ----------
    family : CandidateFamily
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,) with values in {0, 1}
    public_label : {0, 1}

    Returns
    -------
    ndarray of int64 of shape (family.size,)
    """
    X = np.asarray(X, dtype=float)
    want = np.asarray(y) == public_label  # rows whose correct answer is "inside"
    n_want = int(want.sum())
    Z, dist = family.to_affine(X)
    on_aff = dist <= family.slack
    Z, want_aff = Z[on_aff], want[on_aff]
    mistakes = np.empty(family.size, dtype=np.int64)
    mistakes[_EMPTY] = n_want
    mistakes[_WHOLE_AFF] = n_want - int(want_aff.sum()) + int((~want_aff).sum())
    m = family.normals.shape[0]
    if family.size == 2:
        return mistakes
    A, b, slack = family.normals, family.offsets, family.slack
    if family.strategy == "sample":
        windows = family.window_sizes
        assert windows is not None  # always set for the "sample" strategy
        ext = np.concatenate([np.arange(m), np.arange(family.j_max - 1) % m])
        good = np.zeros(m, dtype=np.int64)
        bad = np.zeros(m, dtype=np.int64)
        step = max(1, _BLOCK // (m + family.j_max))
        starts = np.arange(m)
        for lo in range(0, Z.shape[0], step):
            outside = (Z[lo : lo + step] @ A.T < b - slack)[:, ext].astype(np.int32)
            cum = np.concatenate(
                [np.zeros((outside.shape[0], 1), np.int32), np.cumsum(outside, axis=1)], axis=1
            )
            inside = (cum[:, starts + windows] - cum[:, starts]) == 0
            w = want_aff[lo : lo + step]
            good += inside[w].sum(axis=0)
            bad += inside[~w].sum(axis=0)
        mistakes[2:] = n_want - good + bad
        return mistakes
    inside = np.empty((Z.shape[0], m), dtype=bool)
    step = max(1, _BLOCK // max(m, 1))
    for lo in range(0, Z.shape[0], step):
        inside[lo : lo + step] = Z[lo : lo + step] @ A.T >= b - slack
    good_bits, bad_bits = _packed(inside[want_aff]), _packed(inside[~want_aff])
    position = 2
    for j in range(1, family.j_max + 1):
        if j == 1:
            counts = n_want - _popcount(good_bits) + _popcount(bad_bits)
            mistakes[position : position + m] = counts
            position += m
            continue
        for prefix in combinations(range(m - 1), j - 1):
            rest = m - prefix[-1] - 1
            if rest <= 0:
                continue
            idx = list(prefix)
            g = np.bitwise_and.reduce(good_bits[idx], axis=0) & good_bits[prefix[-1] + 1 :]
            h = np.bitwise_and.reduce(bad_bits[idx], axis=0) & bad_bits[prefix[-1] + 1 :]
            mistakes[position : position + rest] = n_want - _popcount(g) + _popcount(h)
            position += rest
    assert position == family.size
    return mistakes


def selection_log_probs(mistakes, epsilon: float) -> np.ndarray:
    """Exact log-law of the exponential mechanism: ``log softmax(-epsilon * mistakes / 2)``.

    NOT PRIVATE: a function of the mistake counts.
    """
    epsilon = check_epsilon(epsilon)
    return log_softmax(-0.5 * epsilon * np.asarray(mistakes, dtype=float))


def em_excess_bound(n_candidates: int, n: int, epsilon: float, beta: float) -> float:
    """Exponential-mechanism excess empirical error: ``2 (ln N + ln(1/beta)) / (epsilon n)``.

    With probability at least ``1 - beta`` the drawn hypothesis's empirical
    error exceeds the best one in ``G`` by at most this much (spec §3.3).
    """
    return 2.0 * (math.log(n_candidates) + math.log(1.0 / beta)) / (epsilon * n)


# -- validation ----------------------------------------------------------------------------------
def _check_is_public(is_public, n_rows: int) -> np.ndarray:
    if is_public is None:
        raise ValueError(
            "is_public is required: pass fit(X, y, is_public=...) with one bool (or 0/1) per "
            "row, True for public rows. The privacy status cannot be inferred from the data. "
            "In a Pipeline or cross_validate, enable metadata routing and call "
            "set_fit_request(is_public=True)."
        )
    status = np.asarray(is_public)
    if status.ndim != 1 or status.shape[0] != n_rows:
        raise ValueError(
            f"is_public must be a 1-D array with one entry per row ({n_rows}), got shape "
            f"{status.shape}."
        )
    if status.dtype == bool:
        return status
    if status.dtype.kind in "iuf" or status.dtype == object:
        try:
            values = status.astype(float)
        except (TypeError, ValueError):
            values = None
        if values is not None and np.all((values == 0) | (values == 1)):
            return values == 1
    raise ValueError(
        "is_public must hold only True/False or 0/1 (no NaN, strings or other numbers)."
    )


def _check_labels(y, n_rows: int) -> np.ndarray:
    if y is None:
        raise ValueError("PrivateHalfspacePPM requires y to be passed, but the target y is None.")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    check_consistent_length(np.empty(n_rows), y)
    message = (
        "Only binary classification is supported: y must hold only the labels 0 and 1 "
        "(bool, int or float); the label set is fixed to [0, 1] and never read from the data."
    )
    if y.dtype == bool:
        return y.astype(np.int64)
    if y.dtype.kind in "iuf" or y.dtype == object:
        try:
            values = y.astype(float)
        except (TypeError, ValueError):
            raise ValueError(message) from None
        if np.all((values == 0) | (values == 1)):
            return values.astype(np.int64)
    raise ValueError(message)


# -- the estimator -------------------------------------------------------------------------------
class PrivateHalfspacePPM(ClassifierMixin, BaseEstimator):
    """Halfspace learner for a mixture of private and public rows (PPM learning).

    Bassily, Moran and Nandi's ``A_LearnHalf``: candidate halfspaces are built
    from the **public** rows' feature vectors only, and the exponential
    mechanism draws one hypothesis of the finite class ``G`` with probability
    proportional to ``exp(-epsilon * mistakes / 2)``, mistakes counted on all
    rows. A hypothesis predicts ``public_label`` inside a region (the
    intersection of at most ``j_max`` candidate halfspaces with the affine hull
    of the public points, or that whole hull, or nothing) and ``1 -
    public_label`` outside: the output is **improper** (the complement of a
    polytope, not one halfspace).

    **The released object is the model.** ``fit`` is the one release: the drawn
    hypothesis and every fitted attribute. ``predict``, ``decision_function``
    and ``score`` apply it (deterministic post-processing) and cost nothing.
    With an ``accountant`` attached, ``fit`` charges it ``epsilon`` once, before
    the draw; every refit is a new release.

    **Privacy guarantee.** ``(epsilon, 0)``-DP with respect to the private rows
    only. Neighbouring training sets have the same status vector ``is_public``
    and the same public rows, and differ in one private row, whose features
    *and* label may be replaced arbitrarily. Each mistake count moves by at most
    one, so the mechanism is ``epsilon``-DP (it is also ``epsilon``-DP under
    adding or removing one private row). **Not protected, by design:** the
    public rows (the model embeds public coordinates verbatim: every chosen
    boundary passes through public points), the status bits and hence the
    numbers of public and private rows. Under the paper's label-determined
    model (private exactly when ``y = 1 - public_label``) the status bit equals
    the label, so the labels are effectively public too; only the private
    feature vectors are protected. Nothing computed from private rows is
    stored, warned about or put in an error message (the only errors they can
    cause are domain checks: shape, finiteness, labels in {0, 1}).

    **Sampling** is exact: the integer mistake counts are grouped by level, a
    level is drawn by inverse CDF from its log-sum-exp normalised law and a
    hypothesis uniformly inside it (:func:`skprivpred.finite.sample_fewest_mistakes`).
    The guarantee is for the mathematical sampler; numpy generators are not
    cryptographic and floating point is not exact arithmetic. An integer
    ``random_state`` known to an attacker voids the guarantee.

    **Candidate strategies** (all keep exact ``epsilon``-DP, since candidates
    never see private rows; they differ in accuracy guarantees and cost):

    - ``"exact"``: the paper's class. Every subset of 1..k distinct public
      points (k = dimension of their affine hull) gives a hyperplane through it
      (the unique one for k affinely independent points; otherwise a random
      normal orthogonal to the subset, inside the hull, from the public stream)
      and its two halfspaces; ``G`` holds the intersections of up to ``j_max``
      distinct ones. Keeps Lemma 4.5 and Theorems 4.9/4.10 (realizable and
      agnostic). ``|G|`` grows like ``n_public^(d^2)``: feasible for d = 1 at
      any n, d = 2 up to roughly 60 public points. Refused with a
      ``ValueError`` carrying the count beyond ``max_candidates``; never
      truncated.
    - ``"hull"``: the inward facets of the convex hull of the public points
      (Qhull). Keeps Lemma 4.5 and the theorems **only in the realizable case
      with every public row carrying** ``public_label``; under label noise or
      public rows of both labels every non-empty region contains all public
      points. Feasible for d <= 3.
    - ``"sample"``: a pool of ``pool_size`` hypotheses drawn from public data
      only. Each uses 1..``j_max`` (uniform) halfspaces supporting the public
      points in random directions (isotropic after whitening by the public
      points' covariance); pool member ``i`` intersects pool halfspaces ``i,
      ..., i + j_i - 1``. **What it keeps:** exact ``epsilon``-DP, and with
      probability ``1 - beta`` an empirical error at most the pool's best plus
      ``em_excess_bound(pool_size + 2, n, epsilon, beta)``. **What it loses:**
      any link to the best halfspace (Lemma 4.5 and both theorems); every
      region contains all public points; utility in high dimension can be
      near chance.
    - ``"auto"``: ``"exact"`` if its class fits in ``max_candidates`` (tried only
      when the public points have at most ``max_candidates`` subsets and the
      class would have at most ``100 * max_candidates`` hypotheses in general
      position), else
      ``"hull"`` if k <= 3 and its class fits, else ``"sample"``. The choice
      uses public rows only and is recorded in ``candidates_used_``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter, finite and > 0. The whole budget goes to the
        mechanism (pure DP, delta = 0).
    candidates : {"auto", "exact", "hull", "sample"}, default="auto"
        How ``G`` is built (see above).
    max_candidates : int, default=10**6
        Largest ``|G|`` that ``"exact"`` or ``"hull"`` agree to enumerate.
    pool_size : int, default=10_000
        Number of sampled hypotheses ``M`` for ``"sample"`` (``|G| = M + 2``).
    max_halfspaces : int or None, default=None
        ``j_max``; ``None`` means ``k`` (Helly's theorem inside the affine hull).
        A smaller cap is faster and weakens Lemma 4.5.
    public_label : {0, 1}, default=0
        Label of the public population: predicted inside the region; the other
        label outside (the paper: public = 0).
    tol : float, default=1e-9
        Relative tolerance (times the size of the public point cloud) for the
        rank of the affine hull, membership of it and halfspace boundaries.
    accountant : PrivacyAccountant, default=None
        Charged ``epsilon`` once per ``fit`` before the draw; a fit that would
        exceed the budget raises :class:`~skprivpred.BudgetExhaustedError` and
        changes nothing.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds two independent streams (``SeedSequence.spawn``): a public one
        (random normals, the sample pool) and the mechanism's. ``None`` (OS
        entropy) in deployment.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Always ``[0, 1]`` (never read from ``y``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only for inputs with string column names.
    candidates_used_ : {"exact", "hull", "sample"}
    n_candidates_ : int
        ``|G|`` (``pool_size + 2`` for ``"sample"``).
    affine_origin_ : ndarray of shape (d,)
        Mean of the distinct public points.
    affine_basis_ : ndarray of shape (d, k)
        Orthonormal basis of the directions of their affine hull.
    halfspaces_ : ndarray of shape (j, d + 1)
        Rows ``(w_0, w_1, ..., w_d)``: a point is inside when ``sum_i w_i x_i >=
        w_0 - tol * scale`` for every row (``j`` may be 0) and it lies on the
        affine hull.
    region_is_empty_ : bool
        True when the drawn hypothesis is the constant ``1 - public_label``.
    privacy_guarantee_ : dict
        ``epsilon``, ``delta``, ``neighbouring``, ``unit`` and ``theorem`` of the
        release (data-independent).

    Notes
    -----
    ``is_public`` is sample-aligned fit metadata. In a
    :class:`~sklearn.pipeline.Pipeline` or :func:`~sklearn.model_selection.cross_validate`
    enable metadata routing (``sklearn.set_config(enable_metadata_routing=True)``)
    and call ``set_fit_request(is_public=True)``. Preprocessing fitted on all
    rows (e.g. ``StandardScaler``) is not private; ``"exact"`` and ``"hull"``
    are affine-equivariant and need no scaling. Cross-validation, grid search
    and scoring on private rows are further releases.

    References
    ----------
    R. Bassily, S. Moran and A. Nandi. Learning from Mixtures of Private and
    Public Populations. NeurIPS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred.mixtures import PrivateHalfspacePPM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(400, 2))
    >>> X = X[np.abs(X.sum(axis=1)) > 0.1]
    >>> y = (X.sum(axis=1) > 0).astype(int)
    >>> clf = PrivateHalfspacePPM(epsilon=1.0, random_state=0)
    >>> clf.fit(X, y, is_public=(y == 0)).candidates_used_
    'hull'
    >>> float(clf.score(X, y)) > 0.95
    True
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        candidates: str = "auto",
        max_candidates: int = 10**6,
        pool_size: int = 10_000,
        max_halfspaces: int | None = None,
        public_label: int = 0,
        tol: float = 1e-9,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.candidates = candidates
        self.max_candidates = max_candidates
        self.pool_size = pool_size
        self.max_halfspaces = max_halfspaces
        self.public_label = public_label
        self.tol = tol
        self.accountant = accountant
        self.random_state = random_state

    # -- validation ---------------------------------------------------------------------------
    def _check_params(self) -> dict:
        if not isinstance(self.epsilon, Real) or isinstance(self.epsilon, bool):
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon!r}.")
        epsilon = check_epsilon(self.epsilon)
        if not isinstance(self.candidates, str) or self.candidates not in STRATEGIES:
            raise ValueError(
                f"candidates must be one of {', '.join(map(repr, STRATEGIES))}, got "
                f"{self.candidates!r}."
            )
        params = {"epsilon": epsilon}
        for name in ("max_candidates", "pool_size", "max_halfspaces"):
            value = getattr(self, name)
            try:
                params[name] = check_positive_int(value, name, allow_none=name == "max_halfspaces")
            except TypeError as exc:
                raise ValueError(str(exc)) from None
        if isinstance(self.public_label, bool) or self.public_label not in (0, 1):
            raise ValueError(f"public_label must be 0 or 1, got {self.public_label!r}.")
        tol = self.tol
        if isinstance(tol, bool) or not isinstance(tol, Real) or not (0 <= tol < math.inf):
            raise ValueError(f"tol must be a finite number >= 0, got {tol!r}.")
        params["tol"] = float(tol)
        check_accountant(self.accountant)
        return params

    def _validated(self, X, y, is_public):
        """Parameters, X, y, status (call in an atomic block: sets n_features_in_)."""
        params = self._check_params()
        X = validate_data(self, X, reset=True, dtype=np.float64, ensure_all_finite=True)
        y = _check_labels(y, X.shape[0])
        status = _check_is_public(is_public, X.shape[0])
        if not status.any():
            raise ValueError(
                "is_public has no public row: the candidate halfspaces are built from public "
                "rows only, so at least one is needed (the paper would return the constant "
                "private label)."
            )
        return params, X, y, status

    def _family(self, X, status, params, public_rng) -> CandidateFamily:
        return build_candidates(
            X[status],
            self.candidates,
            max_candidates=params["max_candidates"],
            pool_size=params["pool_size"],
            max_halfspaces=params["max_halfspaces"],
            tol=params["tol"],
            rng=public_rng,
        )

    # -- fit ------------------------------------------------------------------------------------
    def fit(
        self,
        X: MatrixLike,
        y: VectorLike,
        *,
        is_public: VectorLike | None = None,
        **fit_params: Any,
    ) -> Self:
        """Build candidates from the public rows and draw the released hypothesis.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Real-valued, finite, dense.
        y : array-like of shape (n_samples,)
            Labels in {0, 1}.
        is_public : array-like of shape (n_samples,)
            Required. True (or 1) for public rows, False (or 0) for private ones.
        **fit_params : dict
            Not supported; ``sample_weight`` in particular is refused (a weighted
            row could move a mistake count by more than one).

        Returns
        -------
        self : PrivateHalfspacePPM
        """
        reject_fit_params(self, fit_params)
        with unchanged_on_error(self):
            params, X, y, status = self._validated(X, y, is_public)
            public_rng, mechanism_rng = spawn_streams(self.random_state)
            family = self._family(X, status, params, public_rng)
            if self.accountant is not None:
                self.accountant.charge(1, params["epsilon"])
            index = self._draw(
                mistake_counts(family, X, y, self.public_label), params["epsilon"], mechanism_rng
            )
            self._release(family, index)
            self.privacy_guarantee_ = {
                "epsilon": params["epsilon"],
                "delta": 0.0,
                "neighbouring": "replace one private row (features and label); public rows "
                "and status bits fixed and not protected",
                "unit": "per fit: the released hypothesis (predictions are free post-processing)",
                "theorem": "exponential mechanism with weight exp(-epsilon * mistakes / 2) "
                "over candidates built from public rows (Bassily, Moran, Nandi 2020, Lemma 4.1)",
            }
        return self

    def _draw(self, mistakes: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
        """Index of the released hypothesis, from the exact exponential-mechanism law."""
        return sample_fewest_mistakes(mistakes, epsilon, rng)

    def _log_selection_law(self, mistakes: np.ndarray, epsilon: float) -> np.ndarray:
        """Exact log-law of :meth:`_draw`."""
        return selection_log_probs(mistakes, epsilon)

    def _release(self, family: CandidateFamily, index: int) -> None:
        members = family.members(index)
        chosen = np.zeros(0, dtype=int) if members is None else members
        normals, offsets = family.normals[chosen], family.offsets[chosen]
        w = normals @ family.basis.T  # (j, d): a . z = (V a) . x - (V a) . c
        self.classes_ = np.array([0, 1])
        self.candidates_used_ = family.strategy
        self.n_candidates_ = int(family.size)
        self.affine_origin_ = family.origin
        self.affine_basis_ = family.basis
        self.halfspaces_ = np.column_stack([offsets + w @ family.origin, w]).reshape(
            -1, w.shape[1] + 1
        )
        self.region_is_empty_ = members is None
        self._normals, self._offsets = normals, offsets
        self._slack = family.slack

    # -- predictions ----------------------------------------------------------------------------
    def _inside_score(self, X) -> np.ndarray:
        """``s(x)``: >= 0 exactly when x is inside the released region (spec §4.4)."""
        check_is_fitted(self, "privacy_guarantee_")
        X = validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite=True)
        if self.region_is_empty_:
            return np.full(X.shape[0], -1.0)
        centred = X - self.affine_origin_
        Z = centred @ self.affine_basis_
        slack = self._slack
        score = slack - np.linalg.norm(centred - Z @ self.affine_basis_.T, axis=1)
        if self._normals.shape[0]:
            margins = Z @ self._normals.T - self._offsets + slack
            score = np.minimum(score, margins.min(axis=1))
        return score

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Signed score, larger means more class 1 (free post-processing).

        ``s(x) = min(min_h (a . z - b + tol * scale), tol * scale - dist(x, Aff))``
        is >= 0 exactly inside the region; the method returns ``-s`` when
        ``public_label = 0`` and ``s`` otherwise. The empty region gives the
        constant -1.0 or +1.0 (whichever predicts ``1 - public_label``).
        ``predict`` is authoritative at 0 (boundary points are inside).
        """
        score = self._inside_score(X)
        return -score if self.public_label == 0 else score

    def predict(self, X: MatrixLike) -> np.ndarray:
        """``public_label`` inside the released region, ``1 - public_label`` outside."""
        inside = self._inside_score(X) >= 0
        return np.where(inside, self.public_label, 1 - self.public_label).astype(np.int64)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True
        return tags

    # -- non-private diagnostics (tests and audits only) ------------------------------------------
    def _selection_log_proba(self, X, y, is_public):
        """Exact log-law of ``fit(X, y, is_public=is_public)`` and its class.

        NOT PRIVATE: the law is a function of every mistake count. Never charges,
        never changes the estimator. With an integer ``random_state`` the class
        is the one ``fit`` would build.

        Returns
        -------
        log_proba : ndarray of shape (|G|,)
        family : CandidateFamily
        """
        clone = copy.copy(self)
        params, X, y, status = clone._validated(X, y, is_public)
        public_rng, _ = spawn_streams(self.random_state)
        family = clone._family(X, status, params, public_rng)
        mistakes = mistake_counts(family, X, y, self.public_label)
        return self._log_selection_law(mistakes, params["epsilon"]), family
