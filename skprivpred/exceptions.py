"""Every exception and warning skprivpred raises, in one place.

This module imports nothing from the package, so that every other module
(including the leaf :mod:`skprivpred.utils._param_validation`) can use it.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BudgetExhaustedError",
    "ConvergenceError",
    "ForkedStateError",
    "HopelessSettingWarning",
    "HorizonExhaustedError",
    "InsufficientSampleError",
    "InvalidParameterError",
    "LedgerError",
    "PhaseDataError",
    "PredictorHaltedError",
    "PrivacyParameterError",
    "PrivacyWarning",
    "UnlabelledRowsWarning",
]


class PrivacyWarning(UserWarning):
    """Warns that something about the training data was, or may be, disclosed.

    Raised for example when a public parameter (the label set, a norm bound)
    is inferred from the training data because it was not given: the inferred
    value is itself information about the data.
    """


class HopelessSettingWarning(UserWarning):
    """Warns at ``fit`` that the public setting leaves the answers mostly noise, on any data.

    Emitted when an estimator's best-case figure
    (:func:`skprivpred._hopeless.best_case`: for example the probability that an
    answer is the teachers' vote when they are unanimous) is below
    ``BEST_CASE_THRESHOLD`` (0.9). The figure is computed from public quantities
    only (``epsilon``, ``delta``, the numbers of rows, columns, classes and
    teachers, the basis size), so the warning reads no row and fires
    identically on neighbouring data sets. Its message says what to change
    (more epsilon, more rows, fewer columns, more or fewer teachers), with
    figures. Shown once per process and call site.
    """


class UnlabelledRowsWarning(UserWarning):
    """Says how many rows were read as unlabelled public rows (``y == -1``, or NaN).

    The semi-supervised estimators (:class:`~skprivpred.SufficientStatisticClassifier`,
    :class:`~skprivpred.SufficientStatisticRegressor`) take rows marked ``-1``
    (classifier) or NaN (regressor) as *public*: their features are not
    protected. ``fit`` says how many rows it took so, and ``score`` how many it
    ignored, so that a label convention mistaken for the marker (a class
    ``-1``) is seen. Their count is public; the warning is shown once per
    process and call site.
    """


class InvalidParameterError(ValueError, TypeError):
    """A constructor parameter has a value or a type that is not allowed.

    Raised at the top of ``fit`` (before anything is drawn, fitted or
    charged); the message names the parameter, the value and what is allowed.
    It subclasses both ``ValueError`` and ``TypeError``, so that code catching
    either keeps working.
    """


class PrivacyParameterError(InvalidParameterError):
    """Privacy or accuracy parameters for which the stated guarantee does not hold."""


class BudgetExhaustedError(RuntimeError):
    """Raised when answering a query would exceed the privacy budget.

    When it is raised nothing has been charged and no noise has been drawn:
    the estimator and its accountant are exactly as before the call, and a
    smaller call may still succeed.

    Attributes
    ----------
    budget : str or None
        The ``name`` of the budget that refused, when an accountant refused:
        among budgets charged together
        (:meth:`~skprivpred.PrivacyAccountant.charging_also`), the one that
        said no.
    """

    budget: str | None = None


class HorizonExhaustedError(BudgetExhaustedError):
    """Raised when a call would cross a fitted estimator's public query horizon.

    The horizon (``n_queries``) is counted in the accountant's ledger, so every
    copy of the fitted estimator (``copy.deepcopy``, pickle, joblib workers,
    other processes) draws on the same rows. Nothing is charged when it is
    raised.
    """


class LedgerError(RuntimeError):
    """The ledger that holds a privacy budget cannot be used.

    Raised when the ledger is missing (a deleted file, a pickled accountant
    opened on a machine that does not have its file), unreadable, read-only,
    corrupt, locked for longer than the accountant's ``timeout``, or when its
    server cannot be reached. Nothing has been charged and no noise drawn when
    it is raised; an accountant never starts again from zero.
    """


class ConvergenceError(RuntimeError):
    """The ERM solver could not certify its accuracy, so no model was fitted.

    The privacy guarantee of :class:`~skprivpred.StableERMClassifier` and
    :class:`~skprivpred.StableERMRegressor` counts the solver's distance to the
    exact minimiser (``tol``) in the sensitivity; a model whose distance is
    not certified would have no guarantee, so ``fit`` raises instead and
    leaves the estimator unchanged. Increase ``max_iter``, or ``tol`` (which
    adds ``2 * tol * ||x~||`` to the sensitivity).
    """


class PredictorHaltedError(RuntimeError):
    """The everlasting predictor has halted (its BetweenThresholds TOP budget ran out).

    The paper answers the halting query before halting, so the error carries
    the answers given by the failing call, up to and including the halting row.
    Every later call raises at once, with no predictions.

    Attributes
    ----------
    predictions : ndarray
        Labels of the rows answered by the call that raised (empty once halted).
    """

    def __init__(self, message: str, predictions=None) -> None:
        super().__init__(message)
        self.predictions = np.asarray([] if predictions is None else predictions)


class ForkedStateError(RuntimeError):
    """A copy of an everlasting predictor was asked to answer; only the fitted original answers.

    The phase state of :class:`~skprivpred.PrivateEverlastingClassifier` and
    :class:`~skprivpred.GenericBBLClassifier` (the teachers, the secret
    sub-samples, the queries kept for the next phase, how many of the phase's
    answers were given) lives in the object that ``fit`` returned, in the
    process that ran it, and nowhere else. A copy of it (the same object in a
    child made by ``os.fork``, such as a worker of a fork-based
    ``multiprocessing.Pool`` or of a pre-forking server; an object restored
    by pickle, joblib or ``copy.deepcopy``, in any process) would answer from
    the same state: it would answer more queries in a phase than the
    guarantee allows and re-use the phase's secrets. ``predict``, ``query``
    and ``score`` of a copy raise this error before anything is validated,
    charged or drawn; refitting the copy starts a new predictor, which it
    then owns (and which spends its privacy again).
    """


class InsufficientSampleError(ValueError):
    """The training set is smaller than the schedule requires.

    Attributes
    ----------
    required_samples : int
        The number of labelled rows the schedule needs.
    n_samples : int
        The number of rows given.
    """

    def __init__(self, message: str, required_samples: int, n_samples: int) -> None:
        super().__init__(message)
        self.required_samples = required_samples
        self.n_samples = n_samples


class PhaseDataError(ValueError):
    """A phase's unlabelled pool cannot fill the next phase's teachers.

    Raised when the queries of a phase are too few to train every teacher of
    the next phase (Naor, Nissim, Stemmer & Yan 2023, Appendix D, Claim D.6).
    """
