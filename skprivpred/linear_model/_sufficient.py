"""One release, unlimited answers: a private model from one noisy sufficient statistic
(:class:`SufficientStatisticClassifier`, :class:`SufficientStatisticRegressor`).
"""

from __future__ import annotations

import copy
import functools
import math
from numbers import Real
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import PrivatePredictorMixin, QueryPlan, answer
from .._hopeless import BestCase, statistic_best_case, warn_if_hopeless
from .._semisupervised import (
    check_classes_exclude_marker,
    labelled_mask_for_score,
    warn_ignored_at_score,
)
from .._teachers._dask import is_dask_collection
from .._teachers._dry_run import check_numeric_rows
from ..accounting._accountant import PrivacyAccountant
from ..accounting._composition import rho_cap
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..exceptions import InvalidParameterError
from ..mechanisms._exact import discrete_gaussian_noise
from ..utils._param_validation import Data, HasMethods, Interval, StrOptions, UserCodeParam
from ..utils._typing import MatrixLike, RandomStateLike, Self, VectorLike
from ._basis import (
    GRID_STEPS,
    _copy_payloads,
    _features,
    _fit_basis,
    _schema_layout,
    detect_groups,
    public_sample_ranks,
)
from ._sufficient_rows import _DaskRows, _MemoryRows

__all__ = ["SufficientStatisticClassifier", "SufficientStatisticRegressor"]


_THEOREM = (
    "one release of a linear statistic of the labelled rows, rounded to a public grid, with "
    "integer discrete Gaussian noise: rho-zCDP for the grid sensitivity (Canonne, Kamath & "
    "Steinke 2020, the multivariate discrete Gaussian; Bun & Steinke 2016), converted to "
    "(epsilon, delta) by the tight Renyi conversion (Balle et al. 2020)"
)


def _query_rows(model, X) -> np.ndarray:
    """The public checks of a query call (shape, finiteness, numeric entries).

    The ``check`` of the answering path's plan, and its ``check_block`` on a
    dask collection (``model`` is the released model without accountant or
    query stream, so the function ships to the workers).
    """
    return model._validate_X(X, reset=False)


def _model_answers(model, method: str, rows: np.ndarray, n_jobs: int | None) -> np.ndarray:
    """The released model's answers of ``method`` to checked rows (free post-processing)."""
    return model._answers(rows, method)


# -- post-processing (free) -----------------------------------------------------------------------
def _newton(objective, hessp, x0, tol):
    """Minimise a smooth strictly convex objective by truncated Newton (Newton-CG)."""
    result = minimize(
        objective, x0, jac=True, hessp=hessp, method="Newton-CG", options={"xtol": tol}
    )
    return result.x


def _compact(phi: np.ndarray):
    """``phi`` as a CSR matrix when most entries are zero (splines and one-hot groups)."""
    return sparse.csr_array(phi) if np.count_nonzero(phi) < 0.4 * phi.size else phi


def _logistic_weights(phi_public, t, c, lam, tol=1e-8):
    """Minimise ``c sum_j log(1 + e^{w.phi_j}) - w.t + (lam/2)||w[1:]||^2``."""
    d = phi_public.shape[1]
    phi_public = _compact(phi_public)
    penalty = np.ones(d)
    penalty[0] = 0.0
    state: dict = {}

    def objective(w):
        z = phi_public @ w
        p = expit(z)
        state["curvature"] = c * p * (1.0 - p)
        value = -c * np.sum(log_expit(-z)) - w @ t + 0.5 * lam * np.sum(penalty * w * w)
        grad = c * (phi_public.T @ p) - t + lam * penalty * w
        return value, grad

    def hessp(w, v):
        return phi_public.T @ (state["curvature"] * (phi_public @ v)) + lam * penalty * v

    return _newton(objective, hessp, np.zeros(d), tol)


def _multinomial_weights(phi_public, t, c, lam, tol=1e-8):
    """Minimise ``c sum_j lse(W phi_j) - sum_k w_k.t_k + (lam/2) sum_k ||w_k[1:]||^2``."""
    n_classes, d = t.shape
    phi_public = _compact(phi_public)
    penalty = np.ones(d)
    penalty[0] = 0.0
    state: dict = {}

    def objective(flat):
        W = flat.reshape(n_classes, d)
        scores = phi_public @ W.T
        proba = softmax(scores, axis=1)
        state["proba"] = proba
        value = (
            c * np.sum(logsumexp(scores, axis=1))
            - np.sum(W * t)
            + 0.5 * lam * np.sum(penalty * W * W)
        )
        grad = c * (phi_public.T @ proba).T - t + lam * penalty * W
        return value, grad.ravel()

    def hessp(flat, v):
        V = v.reshape(n_classes, d)
        proba = state["proba"]
        u = phi_public @ V.T  # (n, K)
        mixed = proba * (u - np.sum(proba * u, axis=1, keepdims=True))
        return (c * (phi_public.T @ mixed).T + lam * penalty * V).ravel()

    flat = _newton(objective, hessp, np.zeros(n_classes * d), tol)
    return flat.reshape(n_classes, d)


def _clip_counts(t0: np.ndarray, total: float, n_labelled: int) -> np.ndarray:
    """Noisy class counts moved inside the simplex of total ``total`` (post-processing).

    Each is raised to at least ``total / (2 n_labelled)`` (half a row), then all are
    rescaled to sum to ``total``: the intercepts' objective is then bounded.
    """
    t0 = np.maximum(np.asarray(t0, dtype=float), total / (2.0 * n_labelled))
    return t0 * (total / t0.sum())


# -- the estimators -------------------------------------------------------------------------------
_POSITIVE = Interval(Real, 0, None, closed="neither")


class _SufficientStatistic(PrivatePredictorMixin, BaseEstimator):
    """What the classifier and the regressor share: features, grid, release, guarantee."""

    _parameter_constraints: dict = {
        "epsilon": [_POSITIVE],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "basis": [
            StrOptions({"spline"}),
            UserCodeParam(HasMethods(["fit", "transform"]), kind="basis"),
        ],
        "schema": [Data(dict), None],
        "lam": [Interval(Real, 0, None, closed="left"), None],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state"],
    }

    def _check_params(self) -> Any:
        if self.delta == 0:
            raise InvalidParameterError(
                f"delta=0 is not supported by {type(self).__name__}: its one release adds "
                "discrete Gaussian noise, which needs a delta in (0, 1), for example the "
                "default delta=1e-6."
            )
        return None

    # -- features ---------------------------------------------------------------------------
    def _validate_X(self, X, *, reset: bool) -> np.ndarray:
        try:
            return validate_data(self, X, reset=reset, dtype=np.float64, ensure_all_finite=True)
        except (TypeError, ValueError):
            check_numeric_rows(self, X)  # string columns: name them and public_preprocessor
            raise

    def _fit_features(self, X_public: np.ndarray) -> None:
        if self.schema is not None:
            numeric, groups = _schema_layout(self.schema, X_public.shape[1])
        else:
            groups = detect_groups(X_public)
            grouped = np.zeros(X_public.shape[1], dtype=bool)
            for g in groups:
                grouped[g] = True
            numeric = np.flatnonzero(~grouped)
        transformers = _fit_basis(self.basis, X_public, numeric)
        self._numeric = numeric
        self._transformers = transformers
        self._groups = groups
        n_blocks = sum(t is not None for t in transformers) + len(groups)
        self.norm_bound_ = math.sqrt(1.0 + n_blocks)
        self.n_groups_ = len(groups)
        self.n_numeric_ = int(sum(t is not None for t in transformers))
        # The default basis and clipped groups are >= 0 in every row (a smaller
        # multiclass sensitivity); a user basis may not be.
        self._nonnegative = isinstance(self.basis, str)

    def _phi(
        self, X: np.ndarray, private: list | None = None, widths: list | None = None
    ) -> np.ndarray:
        return _features(
            X,
            self._numeric,
            self._transformers,
            self._groups,
            self.norm_bound_,
            self._nonnegative,
            private,
            widths,
        )

    def _spec(self, private: list | None) -> tuple:
        """The public feature map as :func:`labelled_statistic` takes it (picklable)."""
        return (
            self._numeric,
            self._transformers,
            self._groups,
            self.norm_bound_,
            self._nonnegative,
            private,
        )

    def _public_features(self, X_public: np.ndarray) -> tuple[np.ndarray, tuple]:
        """Fit the basis on the public rows; their ``phi`` and the labelled rows' feature map.

        The public rows go first, as one batch (a failure there is public and raises);
        a user basis then gives each labelled row's block from that row's value alone
        (:func:`_isolated_block`), each value through its own copy of the transformer
        as fitted on the public rows, with the width of its output on them.
        """
        self._fit_features(X_public)
        if isinstance(self.basis, str):  # row-wise by construction: batched
            return self._phi(X_public), self._spec(None)
        payloads = _copy_payloads(self.basis, self._transformers)  # before any transform
        widths: list = []
        phi_public = self._phi(X_public, widths=widths)
        return phi_public, self._spec(list(zip(payloads, widths)))

    def _prepare(self, X, y, checked):
        """Rows, public basis and exact statistic, in memory or on a cluster (atomic block).

        Returns the statistic (secret), the noise plan, the public rows' features and the
        target description; sets the public fitted attributes and starts the streams.
        """
        regression = isinstance(self, RegressorMixin)
        rows: _MemoryRows | _DaskRows
        if is_dask_collection(X) or is_dask_collection(y):
            rows = _DaskRows(self, X, y, regression)
        else:
            rows = _MemoryRows(self, X, y, regression)
        target = ("bounds", *checked) if regression else ("classes", rows.classes)
        fit_rng = self._start_streams()
        X_public = rows.public_rows(public_sample_ranks(rows.n_public, fit_rng))
        phi_public, spec = self._public_features(X_public)
        statistic = rows.labelled_sum(spec, target)
        self.n_public_ = int(rows.n_public)
        self.n_labelled_ = int(rows.n_labelled)
        B = self.norm_bound_
        if regression:
            sensitivity = (checked[1] - checked[0]) * B
        else:
            k = rows.classes.size
            self.classes_ = rows.classes
            if k == 2:
                sensitivity = B
            else:
                general = 2.0 * B * math.sqrt((k - 1) / k)
                sensitivity = math.sqrt(2.0) * B if self._nonnegative else general
        return statistic, self._noise_plan(sensitivity, statistic.size), phi_public, target

    def _begin_fit(self, fit_params) -> Any:
        """Parameters, then the budget, before any row is read (nothing charged)."""
        checked = self._check_fit_arguments(fit_params)
        self._check_model_release(float(self.epsilon), float(self.delta), self._rho())
        return checked

    def _public_model(self):
        """A copy of the released model to answer on workers (no accountant, no streams)."""
        model = copy.copy(self)
        model.__dict__ = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("_query_stream", "_horizon_accountant", "accountant")
        }
        model.accountant = None
        return model

    def _query_plan(self, method: str) -> QueryPlan:
        """How ``method`` answers: free post-processing of the one release.

        No charge and no noise (``draw=None``): the answers are a function of
        the released model. The public checks run in memory, or where each
        block of a dask collection lives, as do the answers.
        """
        check_is_fitted(self, "privacy_guarantee_")
        model = self._public_model()
        check = functools.partial(_query_rows, model)
        return QueryPlan(
            check=check,
            values=functools.partial(_model_answers, model, method),
            draw=None,
            check_block=check,
            answer_meta=self._answer_meta(method),
        )

    def _answers(self, rows: np.ndarray, method: str) -> np.ndarray:
        """The released model's answers of ``method`` to checked rows (subclasses)."""
        raise NotImplementedError

    def _answer_meta(self, method: str) -> tuple:
        """dtype and trailing shape of one row's answer of ``method`` (subclasses)."""
        raise NotImplementedError

    # -- the one release ----------------------------------------------------------------------
    def _rho(self) -> float:
        rho = rho_cap(float(self.epsilon), float(self.delta))
        if rho <= 0:
            raise InvalidParameterError(
                f"epsilon={self.epsilon!r} with delta={self.delta!r} gives no usable zCDP rho "
                "(the conversion's orders do not reach so small an epsilon); use a larger "
                "epsilon."
            )
        return rho

    def _noise_plan(self, sensitivity: float, size: int) -> dict:
        """Public grid step and integer noise scale for an L2 ``sensitivity`` in ``size`` values."""
        rho = self._rho()
        root = math.sqrt(size)
        step = sensitivity / (GRID_STEPS * root)
        index_sensitivity = (GRID_STEPS + 1) * root  # sensitivity / step + sqrt(size)
        sigma_int = index_sensitivity / math.sqrt(2.0 * rho)
        return {
            "rho": rho,
            "step": step,
            "sigma_int": sigma_int,
            "sigma": step * sigma_int,
            "sensitivity": sensitivity,
            "index_sensitivity": index_sensitivity,
        }

    def _draw_release(self, statistic: np.ndarray, plan: dict, rng) -> np.ndarray:
        """``step * (round(s / step) + Z)``, ``Z`` discrete Gaussian of scale ``sigma_int``."""
        index = np.rint(statistic / plan["step"])
        noise = discrete_gaussian_noise(plan["sigma_int"], rng, size=index.shape)
        return plan["step"] * (index + noise)

    def _release_statistic(self, statistic: np.ndarray, plan: dict) -> np.ndarray:
        """Charge ``(epsilon, delta, rho)`` once, then draw the release (nothing if refused)."""
        return self._release_model(
            float(self.epsilon),
            lambda rng: self._draw_release(statistic, plan, rng),
            delta=float(self.delta),
            rho=plan["rho"],
        )

    def _set_guarantee(self, plan: dict, n_features: int, lam: float, extra: dict) -> None:
        self.noise_sigma_ = plan["sigma"]
        self.grid_step_ = plan["step"]
        self.lam_ = lam
        self.n_basis_features_ = n_features
        self.privacy_guarantee_ = PrivacyGuarantee(
            epsilon=float(self.epsilon),
            delta=float(self.delta),
            unit=GuaranteeUnit.RELEASE,
            rho=plan["rho"],
            scope="one release: the model and every answer it ever gives, together; answers "
            "are free post-processing",
            theorem=_THEOREM,
            neighbouring="replace one labelled row (features and label); the public rows, "
            "which rows are public and the numbers of rows fixed",
            protects="each labelled training row (not the unlabelled public rows)",
            details={
                "statistic_sensitivity": plan["sensitivity"],
                "grid_step": plan["step"],
                "index_sensitivity": plan["index_sensitivity"],
                "noise_sigma_index": plan["sigma_int"],
                "noise_sigma": plan["sigma"],
                "norm_bound": self.norm_bound_,
                "n_basis_features": n_features,
                **extra,
            },
        )

    def _exact_statistic(self, X, y) -> tuple[np.ndarray, dict]:
        """The exact statistic of ``fit(X, y)`` and its noise plan, without releasing anything.

        NOT PRIVATE: the statistic is the secret that ``fit`` releases only with noise.
        For tests and audits; never charges, never changes the estimator (it runs on a
        shallow copy).
        """
        probe = copy.copy(self)
        probe.__dict__ = dict(self.__dict__)
        statistic, plan, _, _ = probe._prepare(X, y, probe._check_fit_arguments({}))
        return statistic, plan

    def _warn_if_hopeless(self, plan: dict, size: int, n_basis_features: int) -> BestCase:
        """The best case of the one release (public quantities only); warns when it is poor.

        ``S`` is the largest norm the statistic can have when the ``K`` classes are
        equally frequent (two halves of the rows at the two ends of ``y_bounds``, for
        regression): every labelled row at norm ``B``, each class along a direction
        of its own. With ``phi >= 0`` that is ``n B sqrt(K - 1) / K`` for ``K > 2``
        classes, ``n B / (2 sqrt 2)`` for two (one block), and ``n (hi - lo) B / (2
        sqrt 2)`` for regression. ``N = sigma sqrt(size)``, the noise's expected norm.
        Called before the release is drawn.
        """
        if isinstance(self, RegressorMixin) or self.classes_.size == 2:
            row_norm = plan["sensitivity"] / (2.0 * math.sqrt(2.0))
        else:
            k = self.classes_.size
            row_norm = self.norm_bound_ * math.sqrt(k - 1) / k
        delta = float(self.delta)
        record = statistic_best_case(
            n_labelled=self.n_labelled_,
            row_norm=row_norm,
            sigma=plan["sigma"],
            size=size,
            epsilon=float(self.epsilon),
            delta=delta,
            rho=plan["rho"],
            n_basis_features=n_basis_features,
            rho_of=lambda e: rho_cap(e, delta),
        )
        warn_if_hopeless(type(self).__name__, record)
        return record

    def _lam(self, sigma: float, d: int, divisor: float) -> float:
        return float(sigma * math.sqrt(d) / divisor) if self.lam is None else float(self.lam)


class SufficientStatisticClassifier(ClassifierMixin, _SufficientStatistic):
    """Private classifier from one noisy sufficient statistic and unlabelled public rows.

    ``fit(X, y)`` takes labelled private rows and unlabelled public rows of the
    same population, marked ``y == -1`` (scikit-learn's semi-supervised
    convention). It builds a feature basis ``phi`` from the public rows only,
    releases the one statistic ``sum_labelled (y - 1/2) phi(x)`` (one block per
    class for more classes) with exact discrete Gaussian noise, and fits a
    logistic regression whose labels enter only through that release. ``X``
    and ``y`` may be dask collections (see ``fit``).

    **Guarantee.** One release: the model, with every answer it ever gives, is
    ``(epsilon, delta)``-DP for each labelled row (replace-one), charged once
    in ``fit`` before the noise is drawn; answers are free. **Unlabelled
    public rows get no protection**, and every step before this estimator
    must be public.

    See the user guide: :ref:`sufficient_statistic`.

    Parameters
    ----------
    classes : array-like, default=None
        The public label set (``-1`` is not allowed: it marks unlabelled rows).
        ``None`` reads it from the labelled rows with a
        :class:`~skprivpred.PrivacyWarning`.
    epsilon : float, default=1.0
        Epsilon of the whole model and its answers, > 0.
    delta : float, default=1e-6
        Delta of the whole model, in (0, 1) (discrete Gaussian noise needs one).
    basis : "spline" or transformer, default="spline"
        The basis of each numeric column: cubic B-splines with knots at
        quantiles of the public rows, or a transformer fitted on each numeric
        column of the public rows. A transformer sees one labelled value at a
        time, in isolation; a value on which it fails gets the zero block.
    schema : dict, default=None
        The public schema that built the columns (the format of
        :func:`~skprivpred.preprocessing.public_preprocessor`), which tells
        one-hot groups from numeric columns; ``None`` finds the groups in the
        public rows. Privacy does not depend on the grouping.
    lam : float, default=None
        Ridge penalty of the post-processing (intercept not penalised).
        ``None``: ``sigma sqrt(d) / 8``, public.
    accountant : PrivacyAccountant, default=None
        Charged ``(epsilon, delta)`` (with ``rho``) once per ``fit``, before the
        release is drawn.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the streams. Use ``None`` (OS entropy) in deployment: a known
        seed voids the guarantee.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The public label set.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    norm_bound_ : float
        ``B``, the bound on ``||phi(x)||`` (public).
    n_numeric_, n_groups_ : int
        Numeric blocks and one-hot groups of the basis.
    n_basis_features_ : int
        ``d``, the length of ``phi(x)``.
    noise_sigma_ : float
        Scale of the noise on the statistic's scale.
    grid_step_ : float
        The public grid step of the release.
    lam_ : float
        The ridge penalty used.
    privacy_guarantee_ : PrivacyGuarantee
        ``(epsilon, delta)`` and ``rho`` for the one release.

    See Also
    --------
    SufficientStatisticRegressor : The same design for regression.

    References
    ----------
    C. L. Canonne, G. Kamath and T. Steinke. The Discrete Gaussian for
    Differential Privacy. NeurIPS 2020. M. Bun and T. Steinke. Concentrated
    Differential Privacy. TCC 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred import SufficientStatisticClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4000, 2))
    >>> y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int)
    >>> y[:1000] = -1  # unlabelled public rows
    >>> clf = SufficientStatisticClassifier(classes=[0, 1], random_state=0).fit(X, y)
    >>> bool(clf.score(X[1000:], y[1000:]) > 0.85)
    True
    """

    _parameter_constraints: dict = {
        **_SufficientStatistic._parameter_constraints,
        "classes": ["array-like", None],
    }

    def __init__(
        self,
        *,
        classes: VectorLike | None = None,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        basis: Any = "spline",
        schema: dict | None = None,
        lam: float | None = None,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.classes = classes
        self.epsilon = epsilon
        self.delta = delta
        self.basis = basis
        self.schema = schema
        self.lam = lam
        self.accountant = accountant
        self.random_state = random_state

    def _check_params(self) -> Any:
        super()._check_params()
        if self.classes is not None:
            check_classes_exclude_marker(np.unique(np.asarray(self.classes)))
        return None

    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Build the public basis, release the noisy statistic once, post-process it.

        Parameters
        ----------
        X : {array-like, DataFrame, dask array, dask DataFrame} of shape (n_samples, n_features)
            Real-valued, finite rows: labelled private rows and unlabelled public rows.
            A dask collection is read where it lives, partition by partition (``y``
            must then be a dask collection partitioned alike): the client receives
            counts, at most ``MAX_PUBLIC_ROWS`` public rows (a seeded sample, the
            same as in memory) and one statistic per partition, never a labelled
            row. See "Data on a cluster" in the user guide.
        y : array-like or dask collection of shape (n_samples,)
            Labels in ``classes`` for the private rows, ``-1`` for the public rows.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : SufficientStatisticClassifier
            The fitted estimator (the released model).
        """
        with self._unchanged_on_error():
            checked = self._begin_fit(fit_params)
            statistic, plan, phi_public, _ = self._prepare(X, y, checked)
            k = self.classes_.size
            record = self._warn_if_hopeless(plan, statistic.size, phi_public.shape[1])
            released = self._release_statistic(statistic, plan)
            self._released_statistic = released
            n_labelled, d = self.n_labelled_, phi_public.shape[1]
            c = n_labelled / phi_public.shape[0]
            public_sum = phi_public.sum(axis=0)
            lam = self._lam(plan["sigma"], d, 8.0)
            total = c * public_sum[0]
            if k == 2:
                t = released + 0.5 * c * public_sum
                t0 = _clip_counts(np.array([total - t[0], t[0]]), total, n_labelled)
                t[0] = t0[1]
                self._coef = _logistic_weights(phi_public, t, c, lam)
            else:
                centred = released - released.mean(axis=0)
                t = centred + (c / k) * public_sum
                t[:, 0] = _clip_counts(t[:, 0], total, n_labelled)
                self._coef = _multinomial_weights(phi_public, t, c, lam)
            self._set_guarantee(plan, d, lam, {"n_classes": int(k)})
            self._best_case = record
        return self

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """``phi(x) . w`` (binary) or one score per class (free post-processing).

        Parameters
        ----------
        X : {array-like, DataFrame, dask array, dask DataFrame} of shape (n_queries, n_features)
            Query rows. For a dask collection the answer is a lazy dask array with
            its row partitioning (free: the released model's post-processing).

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_classes)
            Scores; nothing is charged.
        """
        return answer(self, X, self._query_plan("decision_function"))

    def predict_proba(self, X: MatrixLike) -> np.ndarray:
        """Class probabilities of the released model (free post-processing).

        Parameters
        ----------
        X : {array-like, DataFrame, dask array, dask DataFrame} of shape (n_queries, n_features)
            Query rows. For a dask collection the answer is a lazy dask array with
            its row partitioning (free: the released model's post-processing).

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
        """
        return answer(self, X, self._query_plan("predict_proba"))

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Labels of the released model (free, deterministic post-processing).

        Parameters
        ----------
        X : {array-like, DataFrame, dask array, dask DataFrame} of shape (n_queries, n_features)
            Query rows. For a dask collection the answer is a lazy dask array with
            its row partitioning (free: the released model's post-processing).

        Returns
        -------
        ndarray of shape (n_queries,)
            Labels from ``classes_``; nothing is charged.
        """
        return answer(self, X, self._query_plan("predict"))

    def _answers(self, rows: np.ndarray, method: str) -> np.ndarray:
        phi = self._phi(rows)
        scores = phi @ self._coef if self._coef.ndim == 1 else phi @ self._coef.T
        if method == "decision_function":
            return scores
        if method == "predict_proba":
            if scores.ndim == 1:
                p = expit(scores)
                return np.column_stack([1.0 - p, p])
            return softmax(scores, axis=1)
        index = (scores > 0).astype(np.intp) if scores.ndim == 1 else np.argmax(scores, axis=1)
        return self.classes_[index]

    def _answer_meta(self, method: str) -> tuple:
        if method == "predict":
            return self.classes_.dtype, ()
        if method == "decision_function" and self._coef.ndim == 1:
            return np.float64, ()
        return np.float64, (self.classes_.size,)

    def score(self, X: MatrixLike, y: VectorLike, sample_weight: Any = None) -> float:
        """Accuracy on the labelled rows (rows with ``y == -1`` are ignored); free.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows.
        y : array-like of shape (n_samples,)
            Their labels, ``-1`` for rows to ignore.
        sample_weight : None
            Not supported (a weighted row would count more than one).

        Returns
        -------
        float
        """
        if sample_weight is not None:
            raise TypeError("score does not support sample_weight.")
        keep = labelled_mask_for_score(y, regression=False)
        if not keep.any():
            raise ValueError("score needs at least one labelled row (y != -1).")
        warn_ignored_at_score(type(self).__name__, int((~keep).sum()), keep.size, regression=False)
        predicted = self.predict(X)
        return float(accuracy_score(np.asarray(y)[keep], predicted[keep]))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.classifier_tags.poor_score = True
        return tags


class SufficientStatisticRegressor(RegressorMixin, _SufficientStatistic):
    """Private regressor from one noisy sufficient statistic and unlabelled public rows.

    ``fit(X, y)`` takes labelled private rows and unlabelled public rows of the
    same population, marked ``y`` NaN. It builds the basis ``phi`` of
    :class:`SufficientStatisticClassifier` from the public rows only, releases
    the one statistic ``sum_labelled (clip(y) - m) phi(x)`` (``m`` the midpoint
    of ``y_bounds``) with exact discrete Gaussian noise, and solves a ridge
    regression with the public Gram matrix. ``X`` and ``y`` may be dask
    collections (see ``fit``).

    **Guarantee.** One release: the model, with every answer it ever gives, is
    ``(epsilon, delta)``-DP for each labelled row (replace-one), charged once
    in ``fit`` before the noise is drawn; answers are free. Unlabelled public
    rows get no protection, and every step before this estimator must be
    public.

    See the user guide: :ref:`sufficient_statistic`.

    Parameters
    ----------
    y_bounds : tuple of float, default=None
        Public ``(lo, hi)`` range of the target (required); labels are clipped
        into it and answers too.
    epsilon : float, default=1.0
        Epsilon of the whole model and its answers, > 0.
    delta : float, default=1e-6
        Delta of the whole model, in (0, 1) (discrete Gaussian noise needs one).
    basis : "spline" or transformer, default="spline"
        The basis of each numeric column, as for
        :class:`SufficientStatisticClassifier`.
    schema : dict, default=None
        The public schema that built the columns; ``None`` finds the one-hot
        groups in the public rows.
    lam : float, default=None
        Ridge penalty of the post-processing (intercept not penalised).
        ``None``: ``sigma sqrt(d) / 2``, public.
    accountant : PrivacyAccountant, default=None
        Charged ``(epsilon, delta)`` (with ``rho``) once per ``fit``, before the release.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the streams; use ``None`` in deployment.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (string column names only).
    norm_bound_ : float
        ``B``, the bound on ``||phi(x)||`` (public).
    n_numeric_, n_groups_ : int
        Numeric blocks and one-hot groups of the basis.
    n_basis_features_ : int
        ``d``, the length of ``phi(x)``.
    noise_sigma_ : float
        Scale of the noise on the statistic's scale.
    grid_step_ : float
        The public grid step of the release.
    lam_ : float
        The ridge penalty used.
    privacy_guarantee_ : PrivacyGuarantee
        ``(epsilon, delta)`` and ``rho`` for the one release.

    See Also
    --------
    SufficientStatisticClassifier : The same design for classification.

    References
    ----------
    C. L. Canonne, G. Kamath and T. Steinke. The Discrete Gaussian for
    Differential Privacy. NeurIPS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred import SufficientStatisticRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 1))
    >>> y = np.sin(3 * X[:, 0])
    >>> y[:5000] = np.nan  # unlabelled public rows
    >>> reg = SufficientStatisticRegressor(y_bounds=(-1, 1), random_state=0).fit(X, y)
    >>> bool(reg.score(X[5000:], y[5000:]) > 0.9)
    True
    """

    _parameter_constraints: dict = {
        **_SufficientStatistic._parameter_constraints,
        "y_bounds": [Data(tuple), Data(list), None],
    }

    def __init__(
        self,
        *,
        y_bounds: tuple[float, float] | None = None,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        basis: Any = "spline",
        schema: dict | None = None,
        lam: float | None = None,
        accountant: PrivacyAccountant | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.y_bounds = y_bounds
        self.epsilon = epsilon
        self.delta = delta
        self.basis = basis
        self.schema = schema
        self.lam = lam
        self.accountant = accountant
        self.random_state = random_state

    def _check_params(self) -> tuple[float, float]:
        super()._check_params()
        bounds = self.y_bounds
        if bounds is None:
            raise InvalidParameterError(
                "y_bounds is required: pass the public range (lo, hi) of the target, fixed "
                "without looking at the training data."
            )
        try:
            lo, hi = (float(v) for v in bounds)
        except (TypeError, ValueError):
            lo = hi = float("nan")
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise InvalidParameterError(
                f"y_bounds must be two finite numbers lo < hi, got y_bounds={bounds!r}."
            )
        return lo, hi

    def fit(self, X: MatrixLike, y: VectorLike, **fit_params: Any) -> Self:
        """Build the public basis, release the noisy statistic once, post-process it.

        Parameters
        ----------
        X : {array-like, DataFrame, dask array, dask DataFrame} of shape (n_samples, n_features)
            Real-valued, finite rows: labelled private rows and unlabelled public rows.
            A dask collection is read where it lives, partition by partition (``y``
            must then be a dask collection partitioned alike): the client receives
            counts, at most ``MAX_PUBLIC_ROWS`` public rows (a seeded sample, the
            same as in memory) and one statistic per partition, never a labelled
            row. See "Data on a cluster" in the user guide.
        y : array-like or dask collection of shape (n_samples,)
            Targets for the private rows, NaN for the public rows.
        **fit_params : dict
            Not supported (``sample_weight`` is refused).

        Returns
        -------
        self : SufficientStatisticRegressor
            The fitted estimator (the released model).
        """
        with self._unchanged_on_error():
            checked = self._begin_fit(fit_params)
            statistic, plan, phi_public, (_, lo, hi) = self._prepare(X, y, checked)
            record = self._warn_if_hopeless(plan, statistic.size, phi_public.shape[1])
            released = self._release_statistic(statistic, plan)
            self._released_statistic = released
            d = phi_public.shape[1]
            c = self.n_labelled_ / phi_public.shape[0]
            lam = self._lam(plan["sigma"], d, 2.0)
            penalty = np.full(d, lam)
            penalty[0] = 0.0
            gram = c * (phi_public.T @ phi_public) + np.diag(penalty)
            self._coef = np.linalg.lstsq(gram, released, rcond=None)[0]
            self._y_centre, self._y_range = 0.5 * (lo + hi), (lo, hi)
            self._set_guarantee(plan, d, lam, {"y_bounds": (lo, hi)})
            self._best_case = record
        return self

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Predictions of the released model, clipped to ``y_bounds`` (free).

        Parameters
        ----------
        X : {array-like, DataFrame, dask array, dask DataFrame} of shape (n_queries, n_features)
            Query rows. For a dask collection the answer is a lazy dask array with
            its row partitioning (free: the released model's post-processing).

        Returns
        -------
        ndarray of shape (n_queries,)
            Nothing is charged.
        """
        return answer(self, X, self._query_plan("predict"))

    def _answers(self, rows: np.ndarray, method: str) -> np.ndarray:
        return np.clip(self._y_centre + self._phi(rows) @ self._coef, *self._y_range)

    def _answer_meta(self, method: str) -> tuple:
        return np.float64, ()

    def score(self, X: MatrixLike, y: VectorLike, sample_weight: Any = None) -> float:
        """R^2 on the labelled rows (rows with NaN targets are ignored); free.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Rows.
        y : array-like of shape (n_samples,)
            Their targets, NaN for rows to ignore.
        sample_weight : None
            Not supported.

        Returns
        -------
        float
        """
        if sample_weight is not None:
            raise TypeError("score does not support sample_weight.")
        keep = labelled_mask_for_score(y, regression=True)
        if not keep.any():
            raise ValueError("score needs at least one labelled row (y not NaN).")
        warn_ignored_at_score(type(self).__name__, int((~keep).sum()), keep.size, regression=True)
        predicted = self.predict(X)
        return float(r2_score(np.asarray(y, dtype=float)[keep], predicted[keep]))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.regressor_tags.poor_score = True
        return tags
