"""The privately validated histogram density (Chaudhuri & Vinterbo 2013):
:class:`DPValidatedHistogramDensity` and its stability constants.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import PrivatePredictorMixin, QueryPlan, answer
from .._stability import _FRACTION, _VALIDATED_CONSTRAINTS, _positive_grid, _split
from ..accounting._accountant import PrivacyAccountant
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import InvalidParameterError
from ..mechanisms._closed_forms import noisy_max_sample
from ..mechanisms._exact import discrete_laplace_noise
from ..utils._typing import MatrixLike, RandomStateLike, Self

__all__ = ["DPValidatedHistogramDensity", "histogram_stability_constants"]


# -- histogram density estimation with bin-count selection (Chaudhuri & Vinterbo 2013, Sec. 4.2) --
def histogram_stability_constants(
    n_bins_grid: ArrayLike,
    n_train: int,
    n_validation: int,
    epsilon_train: float,
    delta: float,
    n_features: int = 1,
) -> tuple[float, float, float]:
    """``(beta1, beta2, beta)`` of Chaudhuri & Vinterbo (2013), Theorem 6.

    ``h_min = 1 / max(n_bins_grid)^n_features`` is the smallest cell volume in
    the unit cube; ``nu = 2 ln(4k / delta) / (n epsilon sqrt(h_min))``, ``beta1 =
    6 / ((1 - nu) h_min)``, ``beta2 = 2 / h_min``, ``beta = max(beta1 / n, beta2 /
    m)``. Requires the n-condition ``n >= 1 + 2 ln(4k / delta) / (epsilon
    sqrt(h_min))`` (``ValueError``).

    The proof of Theorem 6 uses the cells only through their number ``1 / h``
    and their common volume ``h`` (the density is ``n~_i / (h n~)`` on cell
    ``i``), never the geometry of the line, so it holds verbatim for the
    product grid of ``b`` bins per feature on a box, with ``h = b^-d``.
    """
    grid = np.asarray(n_bins_grid, dtype=float)
    k = grid.size
    h_min = float(grid.max()) ** -n_features
    log_term = 2.0 * math.log(4.0 * k / delta)
    needed = 1.0 + log_term / (epsilon_train * math.sqrt(h_min))
    if n_train < needed:
        raise ValueError(
            f"the training part has {n_train} rows; Theorem 6 needs at least {math.ceil(needed)} "
            "for this grid, epsilon and delta (use fewer bins, more data or a larger epsilon)."
        )
    nu = log_term / (n_train * epsilon_train * math.sqrt(h_min))
    beta1 = 6.0 / ((1.0 - nu) * h_min)
    beta2 = 2.0 / h_min
    return beta1, beta2, max(beta1 / n_train, beta2 / n_validation)


def _cell_index(u: np.ndarray, n_bins: int) -> np.ndarray:
    """Flat cell of points in ``[0, 1]^d`` on ``n_bins`` bins per axis.

    Bins are ``[(i-1)h, ih)``, the last one closed at 1 (the paper's Algorithm 5).
    """
    per_axis = np.minimum((u * n_bins).astype(np.int64), n_bins - 1)
    return np.ravel_multi_index(tuple(per_axis.T), (n_bins,) * u.shape[1])


def _to_unit_cube(X: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Rows mapped to the unit cube by the public box ``[low, high]`` (clipped into it)."""
    return np.clip((X - low) / (high - low), 0.0, 1.0)


def _noisy_histogram(u: np.ndarray, n_bins: int, epsilon: float, rng) -> np.ndarray:
    """Algorithm 5 on integers: ``max(0, n_i + Z_i)``, ``Z_i`` discrete Laplace, scale ``2/eps``.

    One count per cell of the product grid (flat order). ``P(Z = z) ∝
    exp(-epsilon |z| / 2)``: exactly ``epsilon``-DP for the count vector, whose
    L1 sensitivity is 2 under replace-one, and every released count is an
    integer, so no noisy float is released. Theorem 6's proof needs only the tail bound of Lemma
    3, ``P(sum of s noise terms <= -theta t sqrt(s)) <= 4 exp(-theta)`` for
    scale ``t``; it is a Chernoff bound at ``u = 1 / (t sqrt(s))``, and the
    discrete law's moment generating function ``1 / (1 - sinh^2(u / 2) /
    sinh^2(1 / (2 t)))`` is at most the continuous one, ``1 / (1 - t^2 u^2)``,
    for every ``|u| < 1 / t`` (``sinh(x) / x`` increases), so the bound and the
    constants ``beta1``, ``beta2`` carry over unchanged. (For one cell the tail
    ``exp(-ceil(x) / t) / (1 + exp(-1 / t))`` is below the bound directly.)
    """
    n_cells = n_bins ** u.shape[1]
    counts = np.bincount(_cell_index(u, n_bins), minlength=n_cells)
    noise = discrete_laplace_noise(2.0 / epsilon, rng, size=n_cells)
    return np.maximum(0, counts + noise).astype(float)


def _heights(noisy: np.ndarray) -> np.ndarray:
    """Density heights on the unit cube: ``n~_i / (h n~)``; uniform if every count is 0."""
    total = noisy.sum()
    if total <= 0:
        return np.ones_like(noisy)
    return noisy * noisy.size / total


def _l2_score(heights: np.ndarray, z: np.ndarray, n_bins: int) -> float:
    """``q = -integral f^2 + (2 / m) sum_j f(z_j)`` on the unit cube (eq. 6)."""
    return float(-np.mean(heights**2) + 2.0 * np.mean(heights[_cell_index(z, n_bins)]))


class DPValidatedHistogramDensity(PrivatePredictorMixin, DensityMixin, BaseEstimator):
    """Differentially private histogram density with a privately validated bin count.

    Chaudhuri & Vinterbo's second instance (Algorithm 5): ``fit`` splits the
    rows, builds one private histogram (exact integer noise on the counts) per
    bin count of a public grid on the public box ``bounds``, selects one
    privately by its validation L2 score, and rebuilds it with fresh noise.
    That histogram is **the released object**; ``density``,
    ``score_samples`` and ``score`` are free post-processing.

    **Guarantee** (Theorems 1, 2 and 6). Under replace-one neighbours the
    released histogram and every fitted attribute are ``(epsilon, delta)``-DP,
    with ``delta > 0`` required. One ``fit`` is charged once, before any noise
    is drawn.

    See the user guide: :ref:`tuning`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total privacy parameter, > 0.
    epsilon_split : float, default=0.5
        Fraction of ``epsilon`` for training, in (0, 1).
    n_bins_grid : sequence of int, default=(4, 8, 16, 32)
        Public candidate numbers of bins per feature (each >= 1); keep the
        largest number of cells moderate.
    bounds : array-like of shape (2,) or (n_features, 2), default=(0.0, 1.0)
        Public ``(low, high)`` of every feature, or one pair per feature
        (never estimated from the data); values outside are clipped into it.
    validation_size : float, default=0.2
        Fraction of rows in the validation part, in (0, 1).
    delta : float, default=1e-6
        Total ``delta``, in (0, 1).
    accountant : PrivacyAccountant, default=None
        Charged ``(epsilon, delta)`` once per ``fit``, before any noise is drawn.
    random_state : int, Generator or None, default=None
        Seeds the split and the noise; use ``None`` in deployment.

    Attributes
    ----------
    n_bins_ : int
        The selected number of bins per feature.
    bin_edges_ : list of ndarray of shape (`n_bins_` + 1,)
        Bin edges of each feature.
    bin_volume_ : float
        Volume of one cell in the units of ``bounds``.
    noisy_counts_ : ndarray of shape (`n_bins_`,) * n_features
        The released noisy counts (integers).
    density_ : ndarray of shape (`n_bins_`,) * n_features
        Density heights in the units of ``bounds`` (integrates to 1).
    best_index_ : int
        Index of the selected bin count.
    n_train_, n_validation_ : int
        Sizes of the training and validation parts.
    epsilon_train_, epsilon_select_, epsilon_spent_, delta_spent_ : float
        The budget's split and what the release spent.
    beta1_, beta2_, selection_sensitivity_ : float
        Stability constants and the selection's sensitivity.
    n_features_in_ : int
        Number of features seen during ``fit``.
    privacy_guarantee_ : PrivacyGuarantee
        ``(epsilon, delta)`` for the released histogram.

    References
    ----------
    K. Chaudhuri and S. Vinterbo. A Stability-based Validation Procedure for
    Differentially Private Machine Learning. NeurIPS 2013.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred.model_selection import DPValidatedHistogramDensity
    >>> x = np.random.default_rng(0).beta(2, 5, size=(20000, 1))
    >>> est = DPValidatedHistogramDensity(epsilon=1.0, random_state=0).fit(x)
    >>> est.n_bins_ in (4, 8, 16, 32)
    True
    """

    _parameter_constraints: dict = {
        **_VALIDATED_CONSTRAINTS,
        "n_bins_grid": ["array-like"],
        "bounds": ["array-like"],
        "delta": [_FRACTION],
    }

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        epsilon_split: float = 0.5,
        n_bins_grid: Sequence[int] = (4, 8, 16, 32),
        bounds: ArrayLike = (0.0, 1.0),
        validation_size: float = 0.2,
        delta: float = 1e-6,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.epsilon_split = epsilon_split
        self.n_bins_grid = n_bins_grid
        self.bounds = bounds
        self.validation_size = validation_size
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state

    def _box(self, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` arrays of shape (n_features,) from the public ``bounds``.

        The one check of ``bounds`` that needs the number of features (its
        constraint is checked by ``_validate_params``).
        """
        try:
            box = np.asarray(self.bounds, dtype=float)
        except (TypeError, ValueError):
            box = np.empty(0)
        if box.shape == (2,):
            box = np.tile(box, (n_features, 1))
        if box.shape != (n_features, 2) or not (
            np.all(np.isfinite(box)) and np.all(box[:, 0] < box[:, 1])
        ):
            raise InvalidParameterError(
                "bounds must be one finite pair (low, high) with low < high, or one such pair "
                f"per feature (shape ({n_features}, 2)), got {self.bounds!r}."
            )
        return box[:, 0], box[:, 1]

    def _check_params(self) -> tuple[np.ndarray, float, float]:
        """Cross-parameter rules (after ``_validate_params``): the grid and the budget split."""
        grid = _positive_grid(self.n_bins_grid, "n_bins_grid", integer=True).astype(np.int64)
        epsilon, split = float(self.epsilon), float(self.epsilon_split)
        return grid, split * epsilon, (1.0 - split) * epsilon

    def fit(self, X: MatrixLike, y: None = None, **fit_params: Any) -> Self:
        """Select the bin count privately and release a freshly built histogram.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows, finite; values outside ``bounds`` are clipped into them.
        y : None
            Ignored.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : DPValidatedHistogramDensity
        """
        grid, eps_train, eps_select = self._check_fit_arguments(fit_params)
        epsilon, delta = float(self.epsilon), float(self.delta)
        with self._unchanged_on_error():
            X = validate_data(self, X, reset=True, dtype=np.float64, ensure_all_finite=True)
            low, high = self._box(X.shape[1])
            u = _to_unit_cube(X, low, high)
            fit_rng = self._start_streams()
            train, valid = _split(u.shape[0], float(self.validation_size), fit_rng)
            beta1, beta2, beta = histogram_stability_constants(
                grid, train.size, valid.size, eps_train, delta, X.shape[1]
            )
            uT, uV = u[train], u[valid]

            def release(release_rng):
                """Build every candidate, select one, rebuild it: the one release of fit."""
                select_rng, final_rng, *candidate_rngs = release_rng.spawn(grid.size + 2)
                scores = np.array(
                    [
                        _l2_score(
                            _heights(_noisy_histogram(uT, int(b), eps_train, rng)), uV, int(b)
                        )
                        for b, rng in zip(grid, candidate_rngs)
                    ]
                )
                index = self._select(scores, eps_select, beta, select_rng)
                del scores  # never stored
                return index, _noisy_histogram(uT, int(grid[index]), eps_train, final_rng)

            index, noisy = self._release_model(epsilon, release, delta=delta)
            n_bins = int(grid[index])
            shape = (n_bins,) * X.shape[1]
            self.n_bins_ = n_bins
            self.bin_edges_ = [np.linspace(a, b, n_bins + 1) for a, b in zip(low, high)]
            self.bin_volume_ = float(np.prod((high - low) / n_bins))
            self.noisy_counts_ = noisy.reshape(shape)
            self.density_ = (_heights(noisy) / np.prod(high - low)).reshape(shape)
            self.best_index_ = int(index)
            self.n_train_, self.n_validation_ = int(train.size), int(valid.size)
            self.epsilon_train_, self.epsilon_select_ = eps_train, eps_select
            self.epsilon_spent_, self.delta_spent_ = epsilon, delta
            self.beta1_, self.beta2_, self.selection_sensitivity_ = beta1, beta2, beta
            self.privacy_guarantee_ = PrivacyGuarantee(
                epsilon=epsilon,
                delta=delta,
                unit=GuaranteeUnit.RELEASE,
                scope="the released histogram (the selected bin count and its noisy counts); "
                "densities and scores are free post-processing",
                theorem="Chaudhuri & Vinterbo (2013), Theorems 1, 2 and 6 (Algorithm 5)",
                details={
                    "epsilon_train": eps_train,
                    "epsilon_select": eps_select,
                    "selection_sensitivity": beta,
                    "beta1": beta1,
                    "beta2": beta2,
                },
            )
        return self

    def _select(self, scores, epsilon_select, sensitivity, rng) -> int:
        return noisy_max_sample(scores, epsilon_select, sensitivity, rng)

    def density(self, X: MatrixLike) -> np.ndarray:
        """Density of the released histogram at each row (0 outside ``bounds``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return answer(self, X, self._query_plan("density"))

    def _query_plan(self, method: str) -> QueryPlan:
        """How ``method`` answers: free post-processing of the released histogram.

        No charge and no noise (``draw=None``).
        """
        check_is_fitted(self, "privacy_guarantee_")
        return QueryPlan(
            check=lambda X: validate_data(
                self, X, reset=False, dtype=np.float64, ensure_all_finite=True
            ),
            values=lambda rows, n_jobs: self._answers(rows, method),
            draw=None,
        )

    def _answers(self, rows: np.ndarray, method: str) -> np.ndarray:
        """The released histogram's density (``"density"``) or its log at checked rows."""
        low, high = self._box(rows.shape[1])
        inside = np.all((rows >= low) & (rows <= high), axis=1)
        cells = _cell_index(_to_unit_cube(rows, low, high), self.n_bins_)
        density = np.where(inside, self.density_.ravel()[cells], 0.0)
        if method == "density":
            return density
        with np.errstate(divide="ignore"):
            return np.log(density)

    def score_samples(self, X: MatrixLike) -> np.ndarray:
        """Log density at each row (``-inf`` in empty cells and outside ``bounds``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return answer(self, X, self._query_plan("score_samples"))

    # DensityMixin's signature: a density's score, not the query mixin's score of answers.
    def score(self, X: MatrixLike, y: None = None) -> float:  # type: ignore[override]
        """The L2 criterion ``-integral f^2 + (2/m) sum_j f(x_j)`` (higher is better).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        float
        """
        density = answer(self, X, self._query_plan("density"))
        integral = float(np.sum(self.density_**2) * self.bin_volume_)
        return -integral + 2.0 * float(np.mean(density))
