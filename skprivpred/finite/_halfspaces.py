"""The candidate halfspaces of private prediction by mixtures (PPM).

How the candidates are built from public rows (exact, hull or sampled strategies),
ranked and counted; only :mod:`._ppm` uses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain, combinations

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial import ConvexHull

from ..utils._typing import MatrixLike
from ._hypotheses import _log2_bound

__all__ = ["CANDIDATE_STRATEGIES", "CandidateFamily", "build_candidates", "mistake_counts"]


# -- the candidate class of the public/private halfspace learner ----------------------------------
#: How :func:`build_candidates` builds the class ``G`` (Bassily, Moran & Nandi 2020,
#: Algorithm 1, and two cheaper variants).
CANDIDATE_STRATEGIES = ("auto", "exact", "hull", "sample")

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
    """The finite class ``G`` of the PPM halfspace learner, built from public points only.

    Each hypothesis predicts the public population's label inside a region
    (an intersection of candidate halfspaces with the affine hull ``Aff`` of
    the public points) and the other label outside (Bassily, Moran & Nandi
    2020, Algorithm 2). Labels are 0/1 as in :class:`HypothesisClass`:
    ``public_label`` below is 0 or 1, the public population's position in the
    learner's ``classes_``.

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
        """Absolute tolerance ``tol * scale`` of membership tests."""
        return self.tol * self.scale

    @property
    def n_hypotheses(self) -> int:
        """``|G|``."""
        return int(self.size)

    def default_vc_dim(self) -> int:
        """``max(1, floor(log2 |G|))``: a valid bound for a class of ``|G|`` hypotheses."""
        return _log2_bound(self.n_hypotheses)

    def prepare(self, X: MatrixLike) -> np.ndarray:
        """``X`` as a float array of shape (n, d) (membership is tested in Aff coordinates)."""
        return np.asarray(X, dtype=float)

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


def _covariance_powers(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``C^(-1/2)`` and ``C^(1/2)`` of the public points' covariance ``C`` (Aff coordinates)."""
    cov = Z.T @ Z / Z.shape[0]  # Z is centred: the origin is the mean of the points
    eigval, eigvec = np.linalg.eigh(cov)
    root = np.sqrt(np.maximum(eigval, eigval.max() * 1e-12))
    return (eigvec / root) @ eigvec.T, (eigvec * root) @ eigvec.T


def _sampled_halfspaces(
    Z: np.ndarray, pool_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``pool_size`` halfspaces of Algorithm 1's family, drawn from public points only.

    ``ceil(pool_size / 2)`` hyperplanes, each through one public point drawn
    uniformly (a one-point subset of Algorithm 1, step 3) with a random normal
    (the "arbitrary" hyperplane of step 5); both orientations of each are kept
    (step 5's ``h`` and its opposite ``h_-``). The first half of the normals is
    isotropic after whitening by the public covariance ``C`` (``N(0, C^-1)``:
    affine-equivariant, independent of the units of the features); the second
    half is ``N(0, C)``, along the directions in which the public points spread
    (common one-hot categories rather than rare ones). Order: the ``h`` of every
    hyperplane, then every ``h_-`` (the last ``h_-`` is dropped when
    ``pool_size`` is odd).
    """
    n_points, k = Z.shape
    n_planes = (pool_size + 1) // 2
    whiten, spread = _covariance_powers(Z)
    u = rng.standard_normal((n_planes, k))
    half = n_planes // 2  # (W u) . z = u . (W z): W symmetric
    directions = np.concatenate([u[:half] @ whiten, u[half:] @ spread])
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    through = rng.integers(0, n_points, size=n_planes)
    offsets = np.einsum("hk,hk->h", directions, Z[through])
    normals = np.concatenate([directions, -directions])[:pool_size]
    return normals, np.concatenate([offsets, -offsets])[:pool_size]


def _sampled_window_sizes(pool_size: int, j_max: int, rng: np.random.Generator) -> np.ndarray:
    """Halfspaces per pool member: ``j`` in ``1..j_max`` with probability proportional to ``2^-j``.

    Each halfspace through a public point leaves out part of the public points,
    so intersections of many are small regions; small ``j`` are drawn more often.
    """
    weights = 0.5 ** np.arange(1, j_max + 1)
    return rng.choice(np.arange(1, j_max + 1), size=pool_size, p=weights / weights.sum())


def build_candidates(
    X_public: ArrayLike,
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
        See :class:`~skprivpred.PrivateHalfspacePPMClassifier`.
    max_candidates, pool_size, max_halfspaces, tol
        As in :class:`~skprivpred.PrivateHalfspacePPMClassifier`.
    rng : numpy.random.Generator
        The public-only stream (random normals, the sample pool).

    Returns
    -------
    CandidateFamily
        A function of ``X_public``, the parameters and ``rng`` only. For
        ``"sample"``: ``pool_size`` halfspaces of Algorithm 1's family
        (hyperplanes through one public point each, random normals, both
        orientations) and the number of them each pool member intersects
        (``window_sizes``, in ``1..j_max`` with probability proportional to
        ``2^-j``).

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
                f"candidate_strategy='exact' needs a class of {size} hypotheses on these public "
                f"points ({points.shape[0]} distinct, affine dimension {k}, {n_subsets} subsets), "
                f"more than max_candidates={max_candidates}. The class is never truncated: use "
                "candidate_strategy='hull' (low dimension) or 'sample', lower max_halfspaces, or "
                "raise max_candidates if time and memory allow."
            )
    if strategy == "hull" or (strategy == "auto" and k <= 3):
        halfspaces = _dedup(*_hull_halfspaces(Z), scale)
        size = _class_size(halfspaces[0].shape[0], j_max)
        if size <= max_candidates:
            return family("hull", halfspaces, size)
        if strategy == "hull":
            raise ValueError(
                f"candidate_strategy='hull' needs a class of {size} hypotheses "
                f"({halfspaces[0].shape[0]} facets of the public convex hull, intersections of "
                f"up to {j_max}), more than max_candidates={max_candidates}. Use "
                "candidate_strategy='sample', lower max_halfspaces, or raise max_candidates."
            )
    halfspaces = _sampled_halfspaces(Z, pool_size, rng)
    windows = _sampled_window_sizes(pool_size, j_max, rng)
    return family("sample", halfspaces, pool_size + 2, windows)


# -- mistake counts and the mechanism (NOT private: they read private rows) ----------------------
def _packed(bits: np.ndarray) -> np.ndarray:
    """Pack a (rows, m) bool matrix into (m, words) uint64 bit rows."""
    packed = np.packbits(bits.T, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


# The number of set bits of each byte value: the popcount where numpy < 2.0 has no
# ``np.bitwise_count``.
_BYTE_POPCOUNT = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(axis=1)


def _popcount(words: np.ndarray) -> np.ndarray:
    """The number of set bits along the last axis of a uint64 array, as int64."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(words).sum(axis=-1, dtype=np.int64)
    as_bytes = np.ascontiguousarray(words).view(np.uint8)
    return _BYTE_POPCOUNT[as_bytes].sum(axis=-1, dtype=np.int64)


def _sampled_inside_counts(family: CandidateFamily, Z: np.ndarray) -> np.ndarray:
    """For each pool member, how many rows of ``Z`` (Aff coordinates) lie in its region.

    One matrix product over all pool halfspaces per block of rows; member ``i``
    is inside when halfspaces ``i, ..., i + window_sizes[i] - 1`` (modulo the
    pool size) all are.
    """
    A, b, slack = family.normals, family.offsets, family.slack
    windows = family.window_sizes
    assert windows is not None
    m = A.shape[0]
    longer = [(t, np.flatnonzero(windows > t)) for t in range(1, int(windows.max(initial=1)))]
    counts = np.zeros(m, dtype=np.int64)
    step = max(1, _BLOCK // max(m, 1))
    for lo in range(0, Z.shape[0], step):
        halfspace_inside = Z[lo : lo + step] @ A.T >= b - slack  # (rows, m)
        inside = halfspace_inside.copy() if longer else halfspace_inside
        for t, members in longer:
            inside[:, members] &= halfspace_inside[:, (members + t) % m]
        counts += np.count_nonzero(inside, axis=0)
    return counts


def mistake_counts(
    family: CandidateFamily, X: ArrayLike, y: ArrayLike, public_label: int = 0
) -> np.ndarray:
    """Integer number of training rows each hypothesis of ``G`` gets wrong.

    NOT PRIVATE: a function of every row. Replacing one row changes each count
    by at most one (the sensitivity the mechanism relies on).

    Parameters
    ----------
    family : CandidateFamily
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,) with values in {0, 1}
        Labels as positions in the learner's label set (1 means ``classes_[1]``).
    public_label : {0, 1}, default=0
        The public population's label (the one predicted inside the region).

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
        assert family.window_sizes is not None  # always set for the "sample" strategy
        good = _sampled_inside_counts(family, Z[want_aff])
        bad = _sampled_inside_counts(family, Z[~want_aff])
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
