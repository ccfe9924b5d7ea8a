"""Black-box audit of a private predictor's per-query epsilon.

The audit fits an estimator on two neighbouring training sets with the same
fit randomness, asks each query point many times (fresh noise every time) and
compares the two output frequency tables. For every query and every outcome it
reports the observed log-ratio of frequencies and a lower confidence bound on
the true log-ratio built from Clopper–Pearson intervals; the largest lower
bound is a statistically valid lower bound on the epsilon the estimator spends
per query on these neighbours. If it exceeds the claimed epsilon, the claim is
refuted (at the stated confidence); otherwise the audit found no violation,
which is evidence, not proof.

The audit never touches the estimator it is given: it works on clones with no
accountant attached, so it spends nobody's budget.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta
from sklearn.base import BaseEstimator, clone

from ._teachers._rows import take_rows
from .accounting._guarantee import PrivacyGuarantee
from .utils._deprecation import DEPRECATED
from .utils._param_validation import Interval, check_param, validate_parameter_constraints
from .utils._typing import MatrixLike, VectorLike

__all__ = ["AuditReport", "audit_epsilon", "clopper_pearson", "flip_teacher_neighbour"]


def clopper_pearson(
    k: ArrayLike, n: int, alpha: float | str = DEPRECATED, *, confidence_level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper–Pearson interval for a binomial proportion.

    Parameters
    ----------
    k : array-like of int
        Successes.
    n : int
        Trials.
    alpha : float, default="deprecated"
        One minus the coverage, in (0, 1): the old way to ask for the coverage.

        .. deprecated:: 0.4
            ``alpha`` (the significance) was replaced by ``confidence_level``
            (``= 1 - alpha``, as in :func:`scipy.stats.binomtest`'s
            ``proportion_ci``) in 0.4 and will be removed in 0.6. Given (by
            position or by name), it keeps its meaning, with a ``FutureWarning``.
    confidence_level : float, default=0.95
        Coverage of the two-sided interval, in (0, 1).

    Returns
    -------
    lower, upper : ndarray
        Exact (conservative) bounds with coverage at least ``confidence_level``.

    Examples
    --------
    >>> lower, upper = clopper_pearson(7, 50, confidence_level=0.99)
    >>> f"{float(lower):.3f} {float(upper):.3f}"
    '0.042 0.309'
    """
    if isinstance(alpha, str) and alpha == DEPRECATED:
        check_param(confidence_level, "confidence_level", _UNIT, caller_name="clopper_pearson")
        return _clopper_pearson(k, n, 1.0 - float(confidence_level))
    if confidence_level != 0.95:
        raise TypeError(
            "clopper_pearson() got both 'confidence_level' and its deprecated predecessor "
            "'alpha' (= 1 - confidence_level); pass only 'confidence_level'."
        )
    warnings.warn(
        "`alpha` of clopper_pearson was replaced by `confidence_level` (= 1 - alpha) in 0.4 "
        "and will be removed in 0.6; use clopper_pearson(k, n, confidence_level=1 - alpha) "
        "instead.",
        FutureWarning,
        stacklevel=2,
    )
    return _clopper_pearson(k, n, float(alpha))


_UNIT = Interval(Real, 0, 1, closed="neither")


def _clopper_pearson(k: ArrayLike, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The interval of coverage ``1 - alpha`` (``alpha / 2`` in each tail)."""
    k = np.asarray(k, dtype=float)
    lower = np.where(k > 0, beta.ppf(alpha / 2, k, n - k + 1), 0.0)
    upper = np.where(k < n, beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return lower, upper


@dataclass
class AuditReport:
    """Result of :func:`audit_epsilon`.

    Attributes
    ----------
    claimed_epsilon : float
        The per-query epsilon the estimator claims.
    epsilon_lower_bound : float
        Largest lower confidence bound on ``|ln P_S(o) / P_S'(o)|`` over queries
        and outcomes, simultaneous at level ``confidence`` (Bonferroni). It is 0
        when no ratio is significantly different from 1.
    max_observed_log_ratio : float
        Largest observed ``|ln(freq_S(o) / freq_S'(o))|`` over outcomes seen in
        both runs (a point estimate, not a bound).
    confidence : float
        Simultaneous confidence of the lower bound.
    n_trials : int
        Answers drawn per query point and per data set.
    n_queries : int
        Number of query points.
    worst : dict
        Query index, outcome and frequencies where the lower bound was largest.
    passed : bool
        True when ``epsilon_lower_bound <= claimed_epsilon``: no violation found.
    counts : tuple of ndarray
        Outcome counts, each of shape (n_queries, n_outcomes), for the two data
        sets, and the outcome values (for plots and further analysis).
    """

    claimed_epsilon: float
    epsilon_lower_bound: float
    max_observed_log_ratio: float
    confidence: float
    n_trials: int
    n_queries: int
    worst: dict
    counts: tuple = field(repr=False)

    @property
    def passed(self) -> bool:
        """Whether no violation of the claimed epsilon was detected."""
        return self.epsilon_lower_bound <= self.claimed_epsilon

    def __str__(self) -> str:
        verdict = "no violation found" if self.passed else "VIOLATION: claimed epsilon refuted"
        return (
            f"privacy audit: {verdict}\n"
            f"  claimed epsilon per query       {self.claimed_epsilon:.4g}\n"
            f"  lower bound ({self.confidence:.0%} confidence)    {self.epsilon_lower_bound:.4g}\n"
            f"  largest observed log-ratio      {self.max_observed_log_ratio:.4g}\n"
            f"  {self.n_queries} query point(s) x {self.n_trials} answers on each data set"
        )


_AUDIT_CONSTRAINTS = {
    "n_trials": [Interval(Integral, 10, None, closed="left")],
    "confidence": [Interval(Real, 0, 1, closed="neither")],
    "claimed_epsilon": [Interval(Real, 0, None, closed="neither"), None],
}


def _claimed_epsilon(estimator) -> float:
    """The per-query epsilon a fitted estimator claims in its ``privacy_guarantee_``."""
    guarantee = getattr(estimator, "privacy_guarantee_", None)
    if not isinstance(guarantee, PrivacyGuarantee):
        raise ValueError(
            "claimed_epsilon=None needs an estimator whose privacy_guarantee_ is a "
            "skprivpred.PrivacyGuarantee after fit; pass claimed_epsilon."
        )
    # A guarantee for all answers under one total budget states each row's epsilon apart.
    return float(guarantee.details.get("epsilon_per_query", guarantee.epsilon))


def _fit_pair(estimator, X, y, X_neighbour, y_neighbour, seed: int):
    fitted = []
    for X_, y_ in ((X, y), (X_neighbour, y_neighbour)):
        model = clone(estimator)
        params: dict[str, Any] = {"random_state": seed}
        if "accountant" in model.get_params(deep=False):
            params["accountant"] = None
        fitted.append(model.set_params(**params).fit(X_, y_))
    return fitted


def _draw_answers(model, queries, n_trials: int, method: str, block: int = 200_000) -> np.ndarray:
    """Answers of shape (n_queries, n_trials), each row repeated, fresh noise each time."""
    n_queries = queries.shape[0]
    answer = getattr(model, method)
    out = None
    for q in range(n_queries):
        row = take_rows(queries, np.array([q]))
        parts = []
        for start in range(0, n_trials, block):
            size = min(block, n_trials - start)
            batch = take_rows(row, np.zeros(size, dtype=int))
            parts.append(np.asarray(answer(batch)))
        values = np.concatenate(parts)
        if out is None:
            out = np.empty((n_queries, n_trials), dtype=values.dtype)
        out[q] = values.reshape(n_trials, -1)[:, 0] if values.ndim > 1 else values
    assert out is not None  # there is at least one query
    return out


def audit_epsilon(
    estimator: BaseEstimator,
    X: MatrixLike,
    y: VectorLike,
    X_neighbour: MatrixLike,
    y_neighbour: VectorLike,
    queries: MatrixLike,
    *,
    n_trials: int = 20_000,
    method: str = "predict",
    claimed_epsilon: float | None = None,
    confidence: float = 0.95,
    bins: int | ArrayLike | None = None,
    random_state: int | None = None,
) -> AuditReport:
    """Estimate a lower bound on the per-query epsilon of a private predictor.

    Parameters
    ----------
    estimator : estimator
        An unfitted private estimator with a ``random_state`` parameter. It is
        cloned (twice) with the same integer ``random_state``, so both fits share
        the fit randomness, and with ``accountant=None``.
    X, y : array-like
        A training set.
    X_neighbour, y_neighbour : array-like
        A neighbouring training set (for replace-one neighbours: the same rows
        with one row replaced, at the same index).
    queries : array-like of shape (n_queries, n_features)
        Query points; each is answered ``n_trials`` times on each data set.
    n_trials : int, default=20000
        Answers per query point and per data set.
    method : str, default="predict"
        The query method to audit.
    claimed_epsilon : float, default=None
        The per-query epsilon to test; ``None`` reads the fitted clone's
        ``privacy_guarantee_``: its ``details["epsilon_per_query"]`` when it
        has one (a guarantee for all answers under one total budget), else its
        ``epsilon``.
    confidence : float, default=0.95
        Simultaneous confidence level of the lower bound, in (0, 1).
    bins : None, int or array-like, default=None
        ``None``: outputs are discrete (labels) and compared value by value.
        An int or an array of edges: real outputs are binned by
        ``numpy.histogram_bin_edges`` edges computed from a separate pilot run
        (so that the bins do not depend on the counted answers).
    random_state : int, default=None
        Seed for both fits; ``None`` draws one. Fixing it makes the audit
        reproducible.

    Returns
    -------
    AuditReport
        The report; ``report.passed`` is False when the claimed epsilon is
        refuted at the given confidence.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred import SubsampleAggregateClassifier
    >>> from skprivpred.audit import audit_epsilon
    >>> X = np.arange(10.0).reshape(-1, 1); y = np.array([0] * 5 + [1] * 5)
    >>> X2, y2 = X.copy(), y.copy(); y2[0] = 1
    >>> clf = SubsampleAggregateClassifier(n_teachers=10, classes=[0, 1])
    >>> report = audit_epsilon(clf, X, y, X2, y2, X[:1], n_trials=2000, random_state=0)
    >>> report.passed
    True
    """
    validate_parameter_constraints(
        _AUDIT_CONSTRAINTS,
        {"n_trials": n_trials, "confidence": confidence, "claimed_epsilon": claimed_epsilon},
        caller_name="audit_epsilon",
    )
    if not hasattr(queries, "shape"):
        queries = np.asarray(queries)
    if queries.shape[0] < 1:
        raise ValueError("queries must hold at least one row.")
    seed = (
        int(np.random.default_rng().integers(0, 2**31 - 1))
        if random_state is None
        else int(random_state)
    )
    model, model_neighbour = _fit_pair(estimator, X, y, X_neighbour, y_neighbour, seed)
    claimed = _claimed_epsilon(model) if claimed_epsilon is None else float(claimed_epsilon)

    if bins is not None:
        if np.ndim(bins) == 0:
            pilot = np.concatenate(
                [
                    _draw_answers(m, queries, max(n_trials // 10, 10), method)
                    for m in (model, model_neighbour)
                ],
                axis=1,
            ).astype(float)
            edges = np.histogram_bin_edges(pilot, bins=int(np.asarray(bins)))
        else:
            edges = np.asarray(bins, dtype=float)

    answers = [_draw_answers(m, queries, n_trials, method) for m in (model, model_neighbour)]
    if bins is None:
        outcomes, codes = np.unique(np.concatenate(answers, axis=1), return_inverse=True)
        codes = codes.reshape(queries.shape[0], 2 * n_trials)
        coded = [codes[:, :n_trials], codes[:, n_trials:]]
    else:
        outcomes = edges
        coded = [
            np.clip(np.searchsorted(edges, a.astype(float), side="right") - 1, 0, len(edges) - 2)
            for a in answers
        ]
    n_outcomes = len(outcomes) if bins is None else len(edges) - 1
    counts = [np.stack([np.bincount(row, minlength=n_outcomes) for row in c]) for c in coded]
    return _report(counts, outcomes, n_trials, claimed, confidence)


def _report(counts, outcomes, n_trials, claimed, confidence) -> AuditReport:
    c1, c2 = counts
    n_tests = c1.size
    # Two intervals per (query, outcome), Bonferroni over all of them.
    alpha_each = (1.0 - confidence) / (2 * n_tests)
    lo1, hi1 = _clopper_pearson(c1, n_trials, alpha_each)
    lo2, hi2 = _clopper_pearson(c2, n_trials, alpha_each)
    with np.errstate(divide="ignore"):  # a lower bound of 0 has log -inf: no evidence there
        bound = np.maximum(np.log(lo1) - np.log(hi2), np.log(lo2) - np.log(hi1))
    # The observed ratio only where both counts are positive (log 0 - log 0 is undefined).
    both = (c1 > 0) & (c2 > 0)
    observed = np.zeros(c1.shape)
    observed[both] = np.abs(np.log(c1[both].astype(float)) - np.log(c2[both].astype(float)))
    bound = np.maximum(bound, 0.0)
    q, o = np.unravel_index(int(np.argmax(bound)), bound.shape)
    worst = {
        "query": int(q),
        "outcome": outcomes[o] if len(outcomes) == c1.shape[1] else (outcomes[o], outcomes[o + 1]),
        "frequency": float(c1[q, o] / n_trials),
        "frequency_neighbour": float(c2[q, o] / n_trials),
    }
    return AuditReport(
        claimed_epsilon=claimed,
        epsilon_lower_bound=float(bound[q, o]),
        max_observed_log_ratio=float(observed.max()),
        confidence=confidence,
        n_trials=n_trials,
        n_queries=c1.shape[0],
        worst=worst,
        counts=(c1, c2, outcomes),
    )


def flip_teacher_neighbour(
    estimator: BaseEstimator,
    X: MatrixLike,
    y: VectorLike,
    query: MatrixLike,
    *,
    candidates: Sequence[tuple[Any, Any]] | None = None,
    random_state: int = 0,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Build a worst-case replace-one neighbour for a subsample-and-aggregate estimator.

    The estimator is fitted with ``random_state`` to learn its (data-independent)
    partition and its teachers' votes at ``query`` (through the estimator's
    non-private diagnostic ``_teacher_votes``, which every subsample-and-aggregate
    classifier provides); a teacher that votes for the plurality label is
    chosen, and one row of *its* part is replaced so that, refitted, this
    teacher votes for the runner-up label instead. Replacing a row at the same
    index keeps the partition (same seed, same size), so exactly one vote moves:
    the largest change the guarantee allows.

    Parameters
    ----------
    estimator : estimator
        An unfitted subsample-and-aggregate classifier
        (:class:`~skprivpred.SubsampleAggregateClassifier` or
        :class:`~skprivpred.SubsampleAverageClassifier`).
    X, y : array-like
        The training set.
    query : array-like of shape (1, n_features)
        The query point at which a vote should flip.
    candidates : list of (x_row, label), default=None
        Replacement rows to try, in order, after the default candidate
        ``(query, runner-up label)``.
    random_state : int, default=0
        The seed used for both fits in the subsequent audit.

    Returns
    -------
    X_neighbour, y_neighbour : ndarray
        The neighbouring training set (one row differs).
    info : dict
        ``row`` (replaced index), ``teacher``, ``from_label``, ``to_label``.

    Raises
    ------
    ValueError
        When no candidate row flips the chosen teacher's vote.
    """
    X = np.asarray(X)
    y = np.asarray(y)
    query = np.asarray(query).reshape(1, -1)
    model = clone(estimator).set_params(random_state=random_state, accountant=None).fit(X, y)
    classes = model.classes_
    all_votes, parts = model._teacher_votes(query)
    votes = all_votes[0]
    counts = np.bincount(votes, minlength=len(classes))
    order = np.argsort(-counts, kind="stable")
    top, runner_up = order[0], order[1]
    teacher = int(np.flatnonzero(votes == top)[0])
    row = int(parts[teacher][0])  # any row of the teacher's part will do
    for x_new, label in [(query[0], classes[runner_up])] + list(candidates or []):
        X2, y2 = X.copy(), y.copy()
        X2[row], y2[row] = x_new, label
        refit = clone(model).fit(X2, y2)
        new_vote = refit._teacher_votes(query)[0][0, teacher]
        if new_vote != top:
            info = {
                "row": row,
                "teacher": teacher,
                "from_label": classes[top],
                "to_label": classes[new_vote],
            }
            return X2, y2, info
    raise ValueError(
        "no candidate replacement flipped the chosen teacher's vote at the query; pass "
        "`candidates` with rows that pull the base estimator towards another label."
    )
