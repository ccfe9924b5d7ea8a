"""What every private predictor shares: random streams, charging, locking, validation.

:class:`PrivatePredictorMixin` gives an estimator

- two independent random streams, created in ``fit`` from ``random_state`` by
  ``SeedSequence.spawn``: a *fit* stream (partitions, teacher seeds) and a
  *query* stream advanced by every answer and never re-seeded by a query (but
  replaced by fresh entropy in every copy: pickle, deepcopy and ``os.fork``);
- :meth:`~PrivatePredictorMixin._release`, which charges the attached
  accountant for all rows of a call *before* any noise is drawn (one committed
  transaction of its ledger, which also counts a public query horizon shared
  by every copy of the fitted estimator), so that a refused call changes
  nothing and concurrent calls are safe;
- **the answering path** (:func:`answer`): every query method declares how it
  answers as a :class:`QueryPlan` (its public checks, its dry run, its
  computation, its mechanism) and hands it to :func:`answer`, which runs one
  sequence: dask edge -> public checks -> dry run -> charge -> computation ->
  mechanism -> post-processing (see docs/contributing/answering_path.rst);
- fit-time atomicity: a ``fit`` that raises leaves the estimator as it was;
- the scikit-learn tags of a randomised predictor.

The module also holds :class:`PrivacyWarning` and the validators that name the
parameter, the value and what is allowed.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import secrets
import threading
import uuid
import weakref
from collections.abc import Callable
from numbers import Integral
from typing import Any

import numpy as np
from sklearn.utils.validation import column_or_1d

from ._teachers import _dask_queries
from ._teachers._dask import install_dask_refusal, is_dask_collection, refusing_dask
from ._warnings import Site, clone_site, user_site, warn_user
from .accounting._accountant import PrivacyAccountant
from .accounting._guarantee import PrivacyGuarantee
from .exceptions import (
    BudgetExhaustedError,
    HorizonExhaustedError,
    InvalidParameterError,
    PrivacyWarning,
)
from .utils._param_validation import validate_parameter_constraints

__all__ = ["PrivacyWarning", "PrivatePredictorMixin", "QueryPlan", "answer"]


def finite_target_column(y) -> np.ndarray:
    """``y`` as a 1-D array, refusing NaN and infinity in numeric targets."""
    y = column_or_1d(y, warn=True)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y must not contain NaN or infinity.")
    return y


def reject_fit_params(estimator, fit_params: dict) -> None:
    """Refuse ``sample_weight`` and any other fit parameter with a clear message."""
    if "sample_weight" in fit_params:
        raise TypeError(
            f"{type(estimator).__name__} does not support sample_weight: a weighted row can "
            "move an answer by more than one row, which voids the privacy guarantee."
        )
    if fit_params:
        names = ", ".join(sorted(fit_params))
        raise TypeError(f"{type(estimator).__name__}.fit got unexpected parameters: {names}.")


def known_label_index(classes: np.ndarray, labels) -> tuple[np.ndarray, np.ndarray]:
    """Index of every label in ``classes`` (sorted), and which labels are in it at all.

    Never raises for labels that numpy can compare with ``classes``: a label
    outside the set (or of another type) is reported in the mask, never by an
    exception whose presence would depend on the teacher.
    """
    labels = np.asarray(labels)
    index = np.clip(np.searchsorted(classes, labels), 0, len(classes) - 1)
    known = np.asarray(classes[index] == labels)
    if known.shape != index.shape:  # numpy could not compare them element by element
        known = np.zeros(index.shape, dtype=bool)
    return index, known


def one_label_index(classes: np.ndarray) -> Callable[[Any], int]:
    """A check of one label (one row's output): its index in ``classes``, or a ``ValueError``.

    The output must hold exactly one label (shape ``(1,)`` or ``(1, 1)``); the
    label is looked up by equality (``1``, ``1.0`` and ``True`` are the same
    label, as numpy compares them in :func:`known_label_index`), in a table
    built once: the check costs a dictionary lookup, for the one-row calls of
    :mod:`skprivpred._teachers._isolation`'s boundary. Anything else raises.
    """
    table: dict = {}
    for k, label in enumerate(np.asarray(classes).tolist()):
        table.setdefault(label, k)

    def check(output: Any) -> int:
        values = np.asarray(output)
        if values.size != 1 or values.ndim not in (1, 2) or values.shape[0] != 1:
            raise ValueError(f"expected one label, got shape {values.shape}.")
        value = values.reshape(-1)[0]
        index = table.get(value.item() if isinstance(value, np.generic) else value)
        if index is None:
            raise ValueError("a label outside classes")
        return index

    return check


def resolve_classes(classes, y, estimator_name: str) -> np.ndarray:
    """The public label set: ``classes`` if given, else the labels of ``y`` with a warning.

    Raises a ``ValueError`` when fewer than two labels result or when ``y`` holds
    labels outside ``classes`` (one constant message: neither the labels nor how many
    rows hold them).
    """
    if classes is None:
        found = np.unique(y)
        if found.size < 2:
            raise ValueError(
                f"y contains only one class and classes=None; {estimator_name} needs at least "
                "two classes: pass the public label set as `classes`."
            )
        warn_user(
            f"{estimator_name}: classes=None, so the label set was read from y; the set of "
            "labels present in the training data is itself information about it. Pass the "
            "public label set as `classes` to avoid this disclosure.",
            PrivacyWarning,
        )
        return found
    values = np.unique(np.asarray(classes))
    if values.size < 2:
        raise ValueError(
            f"classes must hold at least two distinct labels, got {values.size} distinct label(s)."
        )
    y_arr = np.asarray(y)
    if y_arr.dtype.kind != values.dtype.kind and not (
        y_arr.dtype.kind in "iuf" and values.dtype.kind in "iuf"
    ):
        raise ValueError(
            f"y labels (dtype {y_arr.dtype}) and `classes` (dtype {values.dtype}) are not of the "
            "same kind; pass `classes` with the labels y uses."
        )
    outside = ~np.isin(y_arr, values)
    if outside.any():
        raise ValueError(
            "y contains labels outside `classes`; every training label must belong to the "
            "public label set."
        )
    return values


#: What a binary-only estimator's refusal of more labels names instead (one wording).
MULTICLASS_ALTERNATIVES = (
    "For several classes use SubsampleAggregateClassifier (any scikit-learn classifier as "
    "teacher, preprocessing inside it, no public ranges needed), SubsampleAverageClassifier, "
    "SufficientStatisticClassifier (with unlabelled public rows) or "
    "ExponentialMechanismClassifier (with a list of hypotheses)."
)


def binary_only_message(estimator_name: str, found: str, hint: str = "") -> str:
    """The refusal of a binary-only estimator: what it got, and the estimators that take more.

    ``found`` says what was given (``"got 10 classes"``); the message starts with
    the words scikit-learn's estimator checks expect of a binary-only classifier.
    """
    return (
        f"Only binary classification is supported: {estimator_name} is binary-only and needs "
        f"exactly two labels, {found}."
        + (f" {hint}" if hint else "")
        + " "
        + MULTICLASS_ALTERNATIVES
    )


def resolve_binary_classes(classes, y, estimator_name: str, hint: str = "") -> np.ndarray:
    """:func:`resolve_classes` for a binary estimator: exactly two labels, else ``ValueError``.

    ``hint`` is appended to the message (what to do instead, for this estimator); the
    message names the estimators that take several classes.
    """
    classes = resolve_classes(classes, y, estimator_name)
    if classes.size != 2:
        raise ValueError(binary_only_message(estimator_name, f"got {classes.size} classes", hint))
    return classes


def keep_frame(X, X_checked):
    """Teachers get a DataFrame as it was (column names, dtypes), anything else validated."""
    return X if hasattr(X, "iloc") else X_checked


@contextlib.contextmanager
def unchanged_on_error(obj):
    """Context manager: restore every attribute of ``obj`` if the body raises.

    Makes ``fit`` atomic: a failed fit leaves a previously fitted estimator as
    it was.
    """
    saved = dict(obj.__dict__)
    try:
        yield
    except BaseException:
        obj.__dict__.clear()
        obj.__dict__.update(saved)
        raise


def spawn_streams(random_state) -> tuple[np.random.Generator, np.random.Generator]:
    """Create independent (fit, release) generators from ``random_state``.

    The *fit* stream draws structure (partitions, teacher seeds, splits); the
    *release* stream draws the noise of every release. The release stream never
    derives from an object that ``clone``, ``copy.deepcopy`` or pickle would
    duplicate: two copies of an estimator must never share noise.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        - ``None`` (the default): both streams take fresh OS entropy.
        - an ``int``: both streams derive from it, reproducibly, and a
          :class:`PrivacyWarning` says that anyone who knows the seed can
          regenerate the noise (seeds are for tests and experiments).
        - a ``Generator``, ``RandomState`` or ``SeedSequence``: it seeds the fit
          stream only (it is copied along with the estimator); the release
          stream takes fresh OS entropy.

    Returns
    -------
    tuple of numpy.random.Generator
        The fit stream and the release stream.
    """
    if random_state is None:
        fit_seq, release_seq = np.random.SeedSequence(), np.random.SeedSequence()
    elif isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state!r}.")
        fit_seq, release_seq = np.random.SeedSequence(int(random_state)).spawn(2)
        warn_user(
            # One message for every seed, so that it is shown once per process and caller.
            "an integer random_state seeds the noise of the answers: anyone who knows the "
            "seed can regenerate that noise and undo the privacy guarantee. Use integer "
            "seeds for tests and reproducible experiments only; in deployment leave "
            "random_state=None.",
            PrivacyWarning,
        )
    elif isinstance(random_state, np.random.SeedSequence):
        fit_seq, release_seq = random_state.spawn(1)[0], np.random.SeedSequence()
    elif isinstance(random_state, np.random.Generator):
        fit_seq = np.random.SeedSequence(random_state.integers(0, 2**63, size=4).tolist())
        release_seq = np.random.SeedSequence()
    elif isinstance(random_state, np.random.RandomState):
        fit_seq = np.random.SeedSequence(random_state.randint(0, 2**31, size=4).tolist())
        release_seq = np.random.SeedSequence()
    else:
        raise TypeError(
            "random_state must be None, a non-negative int, a numpy SeedSequence, Generator or "
            f"RandomState, got {type(random_state).__name__}."
        )
    return np.random.default_rng(fit_seq), np.random.default_rng(release_seq)


class QueryStream:
    """Query-time state of a fitted predictor: noise generator, lock, answered rows.

    A copy (pickle round trip, ``copy.deepcopy``) gets a *fresh* generator from
    OS entropy and keeps the count: two copies of a fitted estimator must never
    replay the same noise, which would leak differences between their answers.
    A forked process (``os.fork``, a fork-based ``multiprocessing`` pool, a
    pre-forking server) is such a copy too: every live stream takes fresh
    entropy and a new lock in the child (a lock held by another thread at the
    fork would stay held forever there). The count is this object's; a horizon
    shared by copies is counted in the ledger
    (:meth:`PrivatePredictorMixin._start_streams`).
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.lock = threading.Lock()
        self.answered = 0
        _LIVE_STREAMS.add(self)

    def __getstate__(self) -> dict:
        return {"answered": self.answered}

    def __setstate__(self, state: dict) -> None:
        self.answered = state["answered"]
        self.reseed()
        _LIVE_STREAMS.add(self)

    def reseed(self) -> None:
        """A fresh generator from OS entropy and a new lock (in a copy, never in a query)."""
        self.rng = np.random.default_rng()
        self.lock = threading.Lock()


#: Every query stream alive in this process (weakly: a stream lives as long as its estimator).
_LIVE_STREAMS: weakref.WeakSet[QueryStream] = weakref.WeakSet()


#: A random token of this process, replaced in every forked child: it tells a child from
#: its parent even if the child were given a process id that the parent once had.
_PROCESS_TOKEN = secrets.token_hex(16)


def process_identity() -> tuple[int, str]:
    """This process: its id and a random token that every forked child replaces."""
    return os.getpid(), _PROCESS_TOKEN


def _after_fork_in_child() -> None:
    """In a forked child: a new process identity, and no stream may replay the parent's noise."""
    global _PROCESS_TOKEN
    _PROCESS_TOKEN = secrets.token_hex(16)
    for stream in list(_LIVE_STREAMS):
        stream.reseed()


if hasattr(os, "register_at_fork"):  # POSIX; other systems have no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def check_noise_delta(noise: str, delta: float) -> None:
    """The noise family fixes ``delta``: 0 with Laplace noise, in (0, 1) with Gaussian noise.

    Raises
    ------
    InvalidParameterError
        Naming both parameters and what is allowed.
    """
    if noise == "laplace" and delta != 0:
        raise InvalidParameterError(
            f"delta={delta!r} with noise='laplace': Laplace noise is pure epsilon-DP, so "
            "delta must be 0 (or use noise='gaussian' for (epsilon, delta)-DP)."
        )
    if noise == "gaussian" and delta == 0:
        raise InvalidParameterError(
            "delta=0 with noise='gaussian': Gaussian noise needs a delta in (0, 1), for "
            "example delta=1e-6 (or use noise='laplace' for pure epsilon-DP)."
        )


# The caller's location while a ``score`` call of a private predictor runs (None outside one).
_SCORING: contextvars.ContextVar[Site | None] = contextvars.ContextVar(
    "skprivpred_scoring", default=None
)
# Whether this process has shown the warning that ``score`` spends budget (once per process).
_score_warning = {"shown": False}
_score_warning_lock = threading.Lock()

SCORE_SPENDS_MESSAGE = (
    "score() answers every row of X as a private query: each row spends the per-query "
    "privacy budget, for every candidate and every fold when scikit-learn's GridSearchCV, "
    "cross_val_score or cross_validate call it, and their choice between candidates is not "
    "private. For model selection use skprivpred.PrivateGridSearchCV (or "
    "DPValidatedLogisticRegression for its regulariser). This warning is shown once per "
    "process (parallel cross-validation shows it once per worker process, on its stderr)."
)


def _warn_if_scoring() -> None:
    """Warn, once per process, that a ``score`` call is spending privacy budget."""
    where = _SCORING.get()
    if where is None or _score_warning["shown"]:
        return
    with _score_warning_lock:
        if _score_warning["shown"]:
            return
        _score_warning["shown"] = True
    warn_user(SCORE_SPENDS_MESSAGE, PrivacyWarning, site=where)


class PrivatePredictorMixin:
    """Mixin for estimators whose every query answer is a private release.

    Subclasses call :meth:`_start_streams` in ``fit`` (inside
    :meth:`_unchanged_on_error`), and answer queries through :meth:`_release`.
    """

    # Every constructor parameter's constraints, checked by _validate_params.
    _parameter_constraints: dict = {}
    # Constructor parameters of every subclass (declared for type checking only).
    random_state: Any
    accountant: PrivacyAccountant | None
    # Set in fit.
    privacy_guarantee_: PrivacyGuarantee
    _query_stream: QueryStream

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every answering method refuses a dask collection before it reads anything
        # (only the estimators listed in skprivpred._teachers._dask.DASK_METHODS take one).
        super().__init_subclass__(**kwargs)
        install_dask_refusal(cls)

    def _start_streams(self, horizon: int | None = None) -> np.random.Generator:
        """Create the fit and query streams (and the horizon's ledger); returns the fit stream.

        Parameters
        ----------
        horizon : int, default=None
            Public cap on the rows this fitted estimator may ever answer, in
            all its copies. It is counted in the ledger of the accountant
            attached now, or of an accountant of its own (default ledger) when
            none is: so deep copies, pickled copies, joblib workers and other
            processes share one horizon.
        """
        if self.accountant is not None:
            # An in-memory ledger that this process cannot charge (a copy unpickled in a
            # worker process) refuses now, before any fitting, not at the first query.
            self.accountant._check_reachable()
        fit_rng, query_rng = spawn_streams(self.random_state)
        self._query_stream = QueryStream(query_rng)
        self._horizon = None if horizon is None else (uuid.uuid4().hex, int(horizon))
        self._horizon_accountant = None
        if horizon is not None:
            self._horizon_accountant = (
                self.accountant if self.accountant is not None else PrivacyAccountant()
            )
        return fit_rng

    @property
    def queries_answered_(self) -> int:
        """Number of query rows answered since ``fit`` (public: the caller sent them).

        With a horizon, the rows answered by every copy of this fitted
        estimator (read from the ledger); otherwise by this object.
        """
        if "_query_stream" not in self.__dict__:
            raise AttributeError("queries_answered_ exists only after fit.")
        horizon = self.__dict__.get("_horizon")
        if horizon is not None:
            accountant = self._charged_accountant()
            assert accountant is not None  # fit set one with the horizon
            return accountant.horizon_answered(horizon[0])
        return self._query_stream.answered

    def _horizon_remaining(self) -> int:
        """Rows the horizon still allows, counted in the ledger (public: the callers' rows)."""
        horizon = self.__dict__.get("_horizon")
        assert horizon is not None  # called on a path with a horizon only
        return max(horizon[1] - self.queries_answered_, 0)

    def _charged_accountant(self) -> PrivacyAccountant | None:
        """The accountant a query charges: the horizon's, else the attached one."""
        if self.__dict__.get("_horizon") is None:
            return self.accountant
        if self.accountant is not None and self.accountant is not self._horizon_accountant:
            raise ValueError(
                "accountant was replaced after fit, but this estimator's horizon is counted in "
                "the ledger of the accountant it was fitted with; refit to answer under "
                "another accountant."
            )
        return self._horizon_accountant

    def _unchanged_on_error(self):
        """Restore every attribute if the body raises (atomic ``fit``)."""
        return unchanged_on_error(self)

    def _validate_params(self) -> None:
        """Check every constructor parameter against ``_parameter_constraints``.

        Called first thing in ``fit``; raises
        :class:`~skprivpred.InvalidParameterError` (naming the parameter, the
        value and what is allowed) before anything is fitted, drawn or
        charged. Cross-parameter rules live in each estimator's
        ``_check_params`` hook, called right after.
        """
        validate_parameter_constraints(
            self._parameter_constraints,
            self.get_params(deep=False),  # type: ignore[attr-defined]  # BaseEstimator
            caller_name=type(self).__name__,
        )

    def _check_params(self) -> Any:
        """Cross-parameter rules of an estimator (none here); may return resolved values."""
        return None

    def _check_fit_arguments(self, fit_params: dict) -> Any:
        """Everything ``fit`` checks before it reads the data, in order.

        The declared constraints (:meth:`_validate_params`), the estimator's
        cross-parameter hook ``_check_params`` (whose result is returned) and the
        refusal of ``sample_weight`` and other fit parameters.
        """
        self._validate_params()
        checked = self._check_params()
        reject_fit_params(self, fit_params)
        return checked

    def _release(
        self,
        n_rows: int,
        epsilon: float,
        draw,
        delta: float = 0.0,
        rho: float | None = None,
    ):
        """Charge for ``n_rows`` query releases, then draw their noise, atomically.

        Parameters
        ----------
        n_rows : int
            Number of query rows answered by this call.
        epsilon, delta : float
            Per-row guarantee charged to the accountant.
        draw : callable
            ``draw(rng)`` computes the answers from the query stream. It runs
            only after every check and the charge succeeded, under the
            estimator's lock.
        rho : float, default=None
            Per-row zCDP parameter, when the mechanism has a smaller one than
            ``epsilon^2 / 2`` (passed on to the accountant).

        Returns
        -------
        object
            What ``draw`` returns.

        Raises
        ------
        BudgetExhaustedError
            If the accountant refuses, or (:class:`HorizonExhaustedError`) the
            call would cross the horizon set by :meth:`_start_streams`; nothing
            is charged or drawn then.
        """
        return self._charge_then_draw(n_rows, epsilon, delta, rho, draw, count=True)

    def _release_model(self, epsilon: float, draw, delta: float = 0.0, rho: float | None = None):
        """Charge for one release that *is* the model, then draw it, atomically.

        For estimators whose ``fit`` releases its output (the
        exponential-mechanism learner, the validated estimators, the
        public/private halfspace learner, a run of multiplicative weights): the
        attached accountant is charged once, before any noise is drawn from the
        release stream, and the release is not counted as an answered query.
        Call it after :meth:`_start_streams`; a refusal raises
        :class:`BudgetExhaustedError` and draws nothing.
        """
        try:
            return self._charge_then_draw(1, epsilon, delta, rho, draw, count=False)
        except BudgetExhaustedError as refusal:
            raise self._model_refusal(refusal, epsilon, delta) from None

    def _check_model_release(self, epsilon: float, delta: float, rho: float | None) -> None:
        """Refuse, before any row is read, a model release that the budget refuses now.

        The message is that of :meth:`_release_model`'s refusal; nothing is charged
        (the release itself is charged, checked again, by :meth:`_release_model`).
        """
        accountant = self._charged_accountant()
        if accountant is None:
            return
        try:
            accountant._refuse_if_over(1, epsilon, delta, rho)
        except BudgetExhaustedError as refusal:
            raise self._model_refusal(refusal, epsilon, delta) from None

    def _model_refusal(
        self, refusal: BudgetExhaustedError, epsilon: float, delta: float
    ) -> BudgetExhaustedError:
        """The refusal of a model release, said as such: one ``(epsilon, delta)`` release.

        The accountant's own message counts query rows ("answering 1 more query
        row ..."), which misleads for a fit; this one names the release, the
        refusing budget and what would let it fit.
        """
        accountant = self._charged_accountant()
        assert accountant is not None  # only an accountant refuses
        budgets = [accountant, *accountant._linked()]
        refusing = next((b for b in budgets if b.name == refusal.budget), accountant)
        name = type(self).__name__
        head = (
            f"{name}.fit is one release of the model at epsilon={epsilon!r}, delta={delta!r} "
            f"(charged once to the accountant, not per query row), and the budget "
            f"{refusing.name!r} (epsilon={refusing.epsilon!r}, delta={refusing.delta!r}) "
            "refuses it: "
        )
        if delta > 0 and refusing.delta == 0:
            reason = (
                "the accountant has delta=0, so no release with delta > 0 ever fits in it. "
                f"Give the accountant a delta of at least the estimator's delta={delta!r}, "
                f"e.g. PrivacyAccountant(epsilon={refusing.epsilon!r}, delta={delta!r})."
            )
        elif delta > refusing.delta * (1 + 1e-9) and refusing.composition == "basic":
            reason = (
                f"its delta is below the release's delta. Give the accountant a delta of at "
                f"least the estimator's delta={delta!r}."
            )
        elif epsilon > refusing.epsilon * (1 + 1e-9):
            reason = (
                f"its epsilon is below the release's epsilon. Give the accountant an epsilon of "
                f"at least {epsilon!r}, or fit with a smaller epsilon."
            )
        else:
            spent_epsilon, spent_delta = refusing.spent()
            reason = (
                f"it has already spent (epsilon={spent_epsilon:.6g}, delta={spent_delta:.3g}) "
                f"of it ({refusing.queries_answered} release(s) charged), which leaves no room "
                "for this one. Every fit is one such release (cross_val_score and GridSearchCV "
                "refit once per fold and candidate): size the accountant for all the fits, or "
                "use one with budget left."
            )
        error = type(refusal)(head + reason)
        error.budget = refusal.budget
        return error

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy (classifiers) or R^2 (regressors) of private answers to ``X``.

        Every row of ``X`` is answered as one private query (see ``predict``):
        the call spends the per-query budget once per row, like ``predict``.
        The first ``score`` call of a process that spends budget emits a
        :class:`PrivacyWarning`: scikit-learn's ``GridSearchCV``,
        ``cross_val_score`` and ``cross_validate`` call ``score`` once per
        candidate and fold, and their choice is not private (use
        :class:`~skprivpred.PrivateGridSearchCV` for model selection).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query rows.
        y : array-like of shape (n_samples,)
            True labels or targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the comparison (applied to the released answers, so
            they cost no privacy).

        Returns
        -------
        float
            The mean accuracy (classifiers) or the coefficient of determination
            (regressors) of the answers.
        """
        # The warning points at the user's line: the first caller outside skprivpred,
        # scikit-learn and joblib (a GridSearchCV.fit, a cross_val_score, a score call).
        token = _SCORING.set(user_site())
        try:
            return super().score(X, y, sample_weight=sample_weight)  # type: ignore[misc]
        finally:
            _SCORING.reset(token)

    score = refusing_dask(score, "score")

    def _charge_then_draw(self, n_rows, epsilon, delta, rho, draw, *, count: bool):
        if count:
            _warn_if_scoring()
        stream = self._query_stream
        accountant = self._charged_accountant()
        with stream.lock:
            if accountant is not None:
                # Committed to the ledger before any noise is drawn.
                accountant.charge(
                    n_rows,
                    epsilon,
                    delta,
                    rho=rho,
                    horizon=self.__dict__.get("_horizon") if count else None,
                    source=type(self).__name__,
                )
            answers = draw(stream.rng)
            if count:
                stream.answered += n_rows
        return answers

    def __sklearn_clone__(self):
        """An unfitted copy (scikit-learn's ``clone``) that remembers the user's line.

        ``cross_val_score(n_jobs=2)`` and ``GridSearchCV`` fit their clones in
        worker processes, where no frame of the user's code is on the stack:
        a warning raised there points at the line recorded here, in the
        user's process, instead of at ``multiprocessing/process.py``.
        """
        new = super().__sklearn_clone__()  # type: ignore[misc]  # from BaseEstimator
        site = clone_site() or self.__dict__.get("_user_site")
        if site is not None:
            new._user_site = site
        return new

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()  # type: ignore[misc]  # from BaseEstimator
        tags.non_deterministic = True
        if tags.classifier_tags is not None:
            tags.classifier_tags.poor_score = True
        if tags.regressor_tags is not None:
            tags.regressor_tags.poor_score = True
        return tags


# -- the answering path ---------------------------------------------------------------------
def _unchanged(answers: Any) -> Any:
    return answers


@dataclasses.dataclass(frozen=True)
class QueryPlan:
    """How one query method answers: all that an estimator supplies to :func:`answer`.

    An estimator's query method builds its plan (after ``check_is_fitted``: the
    plan reads fitted, public attributes only) and returns
    ``answer(self, X, plan)``. The path calls each hook once, in this order;
    no hook is called before the one above it has returned.

    Attributes
    ----------
    check : callable
        ``check(X) -> rows``: the public checks of the call (shape, finiteness,
        fitted schema, the kind of entries), raising only on public facts;
        returns the rows in the form the computation takes.
    values : callable
        ``values(rows, n_jobs) -> values``: the estimator's own computation
        (vote counts, teacher averages, walk values; the answers themselves
        for free post-processing), one entry per row along the first axis.
        It runs after the charge. On a dask collection it runs where each
        block lives, so it must be picklable and hold the fitted model and
        public constants only (never the accountant or the query stream).
    draw : callable or None, default=None
        ``draw(values, rng) -> drawn``: the mechanism, the only hook that draws
        noise (from the query stream ``rng``). ``None`` declares the answers
        free post-processing of released objects: no charge, no noise, and
        ``values`` gives the answers.
    finish : callable, default=identity
        ``finish(drawn) -> answers``: post-processing of the released values
        (labels from indices, clipping). Never sees secret values.
    epsilon, delta : float, default=0.0
        The per-row charge.
    rho : float, default=None
        The per-row zCDP charge, when smaller than ``epsilon ** 2 / 2``.
    dry_run : callable or None, default=None
        ``dry_run(rows)``: refuses, before the charge, rows that the base
        estimator cannot read at all (:mod:`skprivpred._teachers._dry_run`).
    n_jobs : int or None, default=None
        Passed to ``values`` for an in-memory batch.
    charge_rows : callable or None, default=None
        ``charge_rows(n_rows) -> (epsilon, delta, rho)``: a per-row charge that
        depends on the (public) size of the call (the everlasting phases);
        overrides ``epsilon``, ``delta``, ``rho``.
    released : callable or None, default=None
        ``released(rows, answers)``: called with the answers of the charged
        rows once they are released (a student's training buffer).
    handoff : callable or None, default=None
        With a horizon: ``handoff() -> QueryPlan`` hands the rows beyond the
        horizon to another answerer (the student), called when a call
        crosses it; the returned plan is free post-processing. Without it, a
        call that would cross the horizon is refused.
    check_block : callable or None, default=None
        Dask queries: ``check_block(block) -> rows``, the checks of ``check``
        that read rows, run where each block lives (a pure function).
        ``None``: the plan does not take dask collections.
    dask_refusal : str or None, default=None
        Dask queries: why this configuration refuses them (a ``TypeError``
        before anything is computed or charged).
    row_wise : bool, default=False
        Whether ``draw`` on consecutive blocks, in order, with one stream,
        equals ``draw`` on the whole batch (a fixed number of uniforms per
        row): a dask call then holds one block of secret values at a time.
    answer_meta : tuple, default=(float, ())
        Dask queries with free answers: the dtype and the trailing shape of
        one row's answer.
    """

    check: Callable[[Any], Any]
    values: Callable[[Any, int | None], Any]
    draw: Callable[[Any, np.random.Generator], Any] | None = None
    finish: Callable[[Any], Any] = _unchanged
    epsilon: float = 0.0
    delta: float = 0.0
    rho: float | None = None
    dry_run: Callable[[Any], None] | None = None
    n_jobs: int | None = None
    charge_rows: Callable[[int], tuple[float, float, float | None]] | None = None
    released: Callable[[Any, Any], None] | None = None
    handoff: Callable[[], QueryPlan] | None = None
    check_block: Callable[[Any], Any] | None = None
    dask_refusal: str | None = None
    row_wise: bool = False
    answer_meta: tuple = (float, ())

    @property
    def free(self) -> bool:
        """Whether the answers are free post-processing (no charge, no noise)."""
        return self.draw is None

    def row_charge(self, n_rows: int) -> tuple[float, float, float | None]:
        """The per-row ``(epsilon, delta, rho)`` of a call of ``n_rows`` rows."""
        if self.charge_rows is not None:
            return self.charge_rows(n_rows)
        return self.epsilon, self.delta, self.rho


def answer(estimator, X, plan: QueryPlan):
    """The answering path: answer the query rows ``X`` of ``estimator`` by ``plan``.

    One sequence for every query method of every private predictor:

    1. **The edge.** A dask collection leaves here for
       :mod:`skprivpred._teachers._dask_queries`, which runs the same plan: public
       checks on the schema and the blocks, the dry run on the first rows,
       one charge for all rows in this process, ``values`` mapped over the
       blocks where they live, the noise drawn here.
    2. **Public checks** (``plan.check``) and 3. **the dry run**
       (``plan.dry_run``): refusals that depend on public facts only, before
       anything is charged.
    4. **The charge** for all rows (one committed ledger transaction, under the
       estimator's lock, counting the horizon), then, under the same lock,
       5. **the computation** (``plan.values``) and 6. **the mechanism**
       (``plan.draw``, from the query stream), then 7. **post-processing**
       (``plan.finish``, outside the lock).

    Free post-processing (``plan.draw is None``) skips the charge and the
    mechanism. With ``plan.handoff`` a call that crosses the horizon is split:
    the rows up to it are answered and charged as above, the rest by the plan
    that ``handoff()`` returns (the student), free.

    Returns
    -------
    ndarray
        The answers (a ``dask.array.Array`` for dask queries).
    """
    if is_dask_collection(X):
        return _answer_dask(estimator, X, plan)
    rows = plan.check(X)
    if plan.dry_run is not None:
        plan.dry_run(rows)
    if plan.free:
        return plan.finish(plan.values(rows, plan.n_jobs))
    if plan.handoff is None or estimator.__dict__.get("_horizon") is None:
        return _charge_and_answer(estimator, rows, plan)
    return _answer_then_hand_off(estimator, rows, plan)


def _answer_dask(estimator, X, plan: QueryPlan):
    """The edge: a dask collection of queries, by the same plan (see :func:`answer`)."""
    if plan.dask_refusal is not None:
        raise TypeError(plan.dask_refusal)
    if plan.free:
        return _dask_queries.free_answers(estimator, X, plan)
    return _dask_queries.answer_queries(estimator, X, plan)


def _charge_and_answer(estimator, rows, plan: QueryPlan):
    """Charge for every row, then compute and draw under the lock; post-process outside."""
    assert plan.draw is not None  # a charged plan has a mechanism
    draw, n_jobs = plan.draw, plan.n_jobs
    n_rows = rows.shape[0]
    epsilon, delta, rho = plan.row_charge(n_rows)
    drawn = estimator._charge_then_draw(
        n_rows, epsilon, delta, rho, lambda rng: draw(plan.values(rows, n_jobs), rng), count=True
    )
    answers = plan.finish(drawn)
    if plan.released is not None:
        plan.released(rows, answers)
    return answers


#: How often a call that straddles the horizon recounts when other copies take rows meanwhile.
HORIZON_RETRIES = 8


def _answer_then_hand_off(estimator, rows, plan: QueryPlan):
    """Answer the rows up to the horizon by ``plan``, the rest by ``plan.handoff()``."""
    assert plan.handoff is not None
    n_rows = rows.shape[0]
    for _ in range(HORIZON_RETRIES):
        n_ok = min(n_rows, estimator._horizon_remaining())
        try:
            first = _charge_and_answer(estimator, _take(rows, 0, n_ok), plan) if n_ok else None
            break
        except HorizonExhaustedError:
            continue  # another copy took horizon rows meanwhile: recount
    else:
        raise HorizonExhaustedError(
            f"the horizon kept moving under {HORIZON_RETRIES} attempts to split this call "
            f"between the private answers and the hand-off (other copies of this estimator are "
            "answering); nothing was answered: call again."
        )
    if n_ok == n_rows:
        return first
    after = plan.handoff()
    rest = after.finish(after.values(_take(rows, n_ok, n_rows), after.n_jobs))
    return rest if first is None else np.concatenate([first, rest])


def _take(rows, start: int, stop: int):
    """Rows ``start:stop`` of an array, sparse matrix or DataFrame, by position."""
    return rows.iloc[start:stop] if hasattr(rows, "iloc") else rows[start:stop]
