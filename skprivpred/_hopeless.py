"""The best case of a setting, from public quantities only, and the warning when it is poor.

Some parameter choices bound, before any row is read, how well *any* data set
can be answered: the noise an answer or a release carries is fixed by
``epsilon``, ``delta``, the numbers of rows, columns, classes and teachers and
the basis size, and even the most favourable data cannot beat it. Each
estimator that can compute such a bound states it as one *best-case figure*
in ``[0, 1]`` (higher is better), the same on every data set of the same public
size, so that warning about it reads no row and fires identically on
neighbouring data sets:

- the soft-majority vote (:class:`~skprivpred.SubsampleAggregateClassifier`):
  the probability that an answer is the teachers' vote when they are
  unanimous;
- noisy teacher averages (:class:`~skprivpred.SubsampleAverageClassifier`):
  the same probability under its noise and prediction rule;
- the linear classifiers that add noise to each answer
  (:class:`~skprivpred.StableERMClassifier`,
  :class:`~skprivpred.AveragedPSGDClassifier`): the probability that an
  answer is the noiseless model's label on a row at the largest score any
  model within the public radius reaches;
- :class:`~skprivpred.DPValidatedLogisticRegression`: the probability that the
  released coefficients keep the sign of such a row's score, at the best
  ``lam`` of its grid;
- the one-release estimators (:class:`~skprivpred.SufficientStatisticClassifier`,
  :class:`~skprivpred.SufficientStatisticRegressor`): the share ``S^2 / (S^2 +
  N^2)`` of the released statistic that is signal when the signal is as large
  as it can be with equally frequent classes (``S``: that norm; ``N``: the
  noise's expected norm).

:func:`best_case` returns a fitted estimator's figure (``None`` where there is
none); :func:`warn_if_hopeless` emits :class:`~skprivpred.exceptions.HopelessSettingWarning`
at ``fit`` when it is below :data:`BEST_CASE_THRESHOLD`, with what to change,
in public figures. :func:`warn_if_noise_dominates` is the older, weaker test
(the noise at least as large as any score) of the linear regressors, which
have no label to agree with; it warns with the same class.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._warnings import warn_user
from .exceptions import HopelessSettingWarning

__all__ = [
    "BEST_CASE_THRESHOLD",
    "BestCase",
    "best_case",
    "best_case_record",
    "smallest_epsilon",
    "soft_majority_best_case",
    "statistic_best_case",
    "warn_if_hopeless",
    "warn_if_noise_dominates",
]

#: A best-case figure below this warns at ``fit``. At 0.9 a soft-majority answer of
#: unanimous teachers is wrong once in ten, and a one-release statistic is at best
#: one part noise to three parts signal (``N / S = 1/3``).
BEST_CASE_THRESHOLD = 0.9


@dataclass(frozen=True)
class BestCase:
    """A setting's best-case figure and how to describe it (all public).

    Attributes
    ----------
    value : float
        The figure, in ``[0, 1]``; higher is better.
    meaning : str
        What the figure is (a clause: "the probability that ...").
    public : str
        The public quantities it was computed from, with their values.
    remedy : str
        What to change to bring it to :data:`BEST_CASE_THRESHOLD`, with figures.
    """

    value: float
    meaning: str
    public: str
    remedy: str


def best_case_record(estimator: Any) -> BestCase | None:
    """The :class:`BestCase` of a fitted estimator, or ``None`` when it has none.

    A :class:`~sklearn.pipeline.Pipeline` gives its last step's; a fitted search
    (``best_estimator_``) its selected estimator's.
    """
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list) and steps:
        return best_case_record(steps[-1][1])
    inner = estimator.__dict__.get("best_estimator_") if hasattr(estimator, "__dict__") else None
    if inner is not None:
        return best_case_record(inner)
    inner = estimator.__dict__.get("regressor_") if hasattr(estimator, "__dict__") else None
    if inner is not None:  # a TransformedTargetRegressor
        return best_case_record(inner)
    record = getattr(estimator, "_best_case", None)
    return record if isinstance(record, BestCase) else None


def best_case(estimator: Any) -> float | None:
    """The best-case figure of a fitted estimator, in ``[0, 1]``, or ``None``.

    The figure depends on public quantities only (``epsilon``, ``delta``, the
    numbers of rows, columns, classes and teachers, the basis size), never on a
    row: see the module's docstring for what it is for each estimator. The
    estimator warns at ``fit`` (:class:`~skprivpred.exceptions.HopelessSettingWarning`)
    when it is below :data:`BEST_CASE_THRESHOLD`.

    Parameters
    ----------
    estimator : estimator
        A fitted skprivpred estimator, or a ``Pipeline`` ending in one.

    Returns
    -------
    float or None
        ``None`` for an estimator that states no figure, or one not fitted.
    """
    record = best_case_record(estimator)
    return None if record is None else record.value


def warn_if_hopeless(name: str, record: BestCase | None) -> bool:
    """Emit :class:`~skprivpred.exceptions.HopelessSettingWarning` when the figure is poor.

    Once per call site (at the user's line). Returns whether it warned.
    """
    if record is None or record.value >= BEST_CASE_THRESHOLD:
        return False
    warn_user(
        f"{name} cannot answer well in this setting, whatever the data: even in the best "
        f"case, {record.meaning} is {record.value:.3g}, below {BEST_CASE_THRESHOLD}. This "
        f"follows from public quantities only ({record.public}), not from the rows. To "
        f"reach {BEST_CASE_THRESHOLD}: {record.remedy}.",
        HopelessSettingWarning,
    )
    return True


# -- figures shared by several estimators ------------------------------------------------
def soft_majority_best_case(
    epsilon: float, n_teachers: int, n_classes: int, *, n_samples: int | None = None
) -> BestCase:
    """The soft-majority vote's best case: ``P(answer = vote)`` with unanimous teachers.

    Label ``k`` is drawn with weight ``exp(epsilon c_k / 2)``; with all ``r``
    teachers on one label that label has probability ``1 / (1 + (K - 1)
    exp(-epsilon r / 2))``, which reaches ``T`` when ``epsilon r >= 2 ln((K - 1)
    T / (1 - T))``.
    """
    k, r = int(n_classes), int(n_teachers)
    value = 1.0 / (1.0 + (k - 1) * math.exp(-0.5 * epsilon * r))
    product = 2.0 * math.log((k - 1) * BEST_CASE_THRESHOLD / (1.0 - BEST_CASE_THRESHOLD))
    need_r = math.ceil(product / epsilon)
    more = f"at least {need_r} teachers"
    if n_samples is not None:
        more += f" (about {max(1, n_samples // need_r)} rows each on {n_samples} rows)"
    public = f"epsilon = {epsilon:.4g} per answered row, {r} teachers, {k} classes"
    if n_samples is not None:
        public += f", {n_samples} training rows"
    return BestCase(
        value=value,
        meaning="the probability that an answer is the teachers' vote when they are unanimous",
        public=public,
        remedy=f"epsilon per answered row of at least {product / r:.3g} with {r} teachers, "
        f"or {more}",
    )


def statistic_best_case(
    *,
    n_labelled: int,
    row_norm: float,
    sigma: float,
    size: int,
    epsilon: float,
    delta: float,
    rho: float,
    n_basis_features: int,
    rho_of: Callable[[float], float],
) -> BestCase:
    """The one-release best case: ``S^2 / (S^2 + N^2)``.

    ``S = n_labelled * row_norm`` is the largest norm the released statistic can
    have when the classes are equally frequent (``row_norm`` is the caller's:
    every labelled row at the largest norm, each class along its own direction);
    ``N = sigma sqrt(size)`` the expected norm of its noise. ``S / N`` grows
    like ``n_labelled``, like ``sqrt(rho)`` and like ``1 / sqrt(size)``; the
    threshold ``T`` needs ``N / S <= sqrt((1 - T) / T)``.
    """
    signal = n_labelled * row_norm
    noise = sigma * math.sqrt(size)
    value = signal**2 / (signal**2 + noise**2)
    target = math.sqrt((1.0 - BEST_CASE_THRESHOLD) / BEST_CASE_THRESHOLD)
    factor = (noise / signal) / target  # > 1 when below the threshold
    need_rows = math.ceil(n_labelled * factor)
    need_rho = rho * factor**2
    need_epsilon = smallest_epsilon(lambda e: rho_of(e) >= need_rho, epsilon)
    need_basis = max(1, math.floor(n_basis_features / factor**2))
    epsilon_text = (
        f"epsilon of at least {need_epsilon:.3g} (at delta = {delta:.3g})"
        if need_epsilon is not None
        else "a much larger epsilon"
    )
    return BestCase(
        value=value,
        meaning="the share of the released statistic that is signal (S^2 / (S^2 + N^2), S "
        "its largest norm with equally frequent classes, N the noise's expected norm)",
        public=f"epsilon = {epsilon:.4g}, delta = {delta:.3g}, {n_labelled} labelled rows, "
        f"{n_basis_features} basis features, a statistic of {size} values: S = {signal:.4g}, "
        f"N = {noise:.4g}",
        remedy=f"{epsilon_text}, or at least {need_rows} labelled rows, or about "
        f"{need_basis} basis features or fewer (fewer columns, or a smaller basis per "
        "column)",
    )


def smallest_epsilon(good: Callable[[float], bool], epsilon: float) -> float | None:
    """The smallest epsilon (to 3 significant digits) above ``epsilon`` at which ``good`` holds.

    ``good`` must be monotone (false, then true, as epsilon grows); ``None`` when
    it still fails at ``2**20`` times ``epsilon``.
    """
    lo, hi = float(epsilon), float(epsilon)
    for _ in range(21):
        if good(hi):
            break
        lo, hi = hi, hi * 2.0
    else:
        return None
    if hi == lo:
        return hi
    for _ in range(40):
        if hi - lo <= 1e-4 * hi:
            break
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if good(mid) else (mid, hi)
    return hi


def warn_if_noise_dominates(
    name: str,
    *,
    noise: float,
    reach: float,
    what: str,
    detail: str,
    public: str,
    remedy: str,
) -> bool:
    """Emit :class:`~skprivpred.exceptions.HopelessSettingWarning` when ``noise >= reach``.

    At the user's line, once per site. For estimators that have no best-case
    figure (the linear regressors).

    Parameters
    ----------
    name : str
        The estimator's class name.
    noise, reach : float
        The noise scale and the largest signal any model can reach, both
        computed from public quantities only and in the same units.
    what : str
        What is noisy (``"answer"``, ``"release coefficients"``).
    detail : str
        One sentence that states both figures and where they hold.
    public : str
        The public quantities the decision used.
    remedy : str
        What the user can change.
    """
    if noise < reach:
        return False
    warn_user(
        f"{name} will {what} with noise at least as large as any score: {detail} This "
        f"follows from public quantities only ({public}), not from the data: {remedy}.",
        HopelessSettingWarning,
    )
    return True
