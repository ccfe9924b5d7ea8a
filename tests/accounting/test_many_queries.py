"""Many queries under one total budget: zCDP accounting, the horizon, the student."""

import copy
import itertools
import math
import pickle
import threading
import uuid
import warnings

import numpy as np
import pytest
from _audit_power import law_power
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier

from skprivpred import (
    BudgetExhaustedError,
    InvalidParameterError,
    PrivacyAccountant,
    PrivacyGuarantee,
    SubsampleAggregateClassifier,
)
from skprivpred.accounting import eps_of_rho, max_queries, per_query_epsilon, rho_cap
from skprivpred.audit import audit_epsilon, clopper_pearson, flip_teacher_neighbour
from skprivpred.mechanisms import exponential_mechanism_proba, pac_n_partitions


# -- accounting oracles (tight Renyi conversion, Balle et al. 2020) -----------------------
@pytest.mark.parametrize(
    "epsilon, expected", [(0.5, 0.0066415), (1.0, 0.0243560), (2.0, 0.0881527), (4.0, 0.3110650)]
)
def test_rho_cap_reference_values(epsilon, expected):
    assert rho_cap(epsilon, 1e-6) == pytest.approx(expected, rel=1e-4)
    assert eps_of_rho(rho_cap(epsilon, 1e-6), 1e-6) <= epsilon


@pytest.mark.parametrize(
    "q, expected",
    [
        (1, 1.0),
        (2, 0.5),
        (5, 0.2),
        (10, 0.1396),
        (100, 0.04414),
        (1000, 0.013959),
        (10000, 0.004414),
    ],
)
def test_per_query_epsilon_table(q, expected):
    assert per_query_epsilon(1.0, 1e-6, q) == pytest.approx(expected, rel=5e-4)


def test_conversion_and_max_queries_oracles():
    assert eps_of_rho(1000 * 0.01**2 / 8, 1e-6) == pytest.approx(0.7002, abs=1e-4)
    assert max_queries(1.0, 1e-6, 0.1) == 19
    assert per_query_epsilon(1.0, 0.0, 50) == 0.02  # delta = 0: basic composition only
    # monotone in every argument
    assert rho_cap(1.0, 1e-6) < rho_cap(1.2, 1e-6) and rho_cap(1.0, 1e-6) < rho_cap(1.0, 1e-5)
    assert eps_of_rho(0.01, 1e-6) < eps_of_rho(0.02, 1e-6)
    assert per_query_epsilon(1.0, 1e-6, 100) > per_query_epsilon(1.0, 1e-6, 200)
    assert max_queries(1.0, 1e-6, 0.01) > max_queries(1.0, 1e-6, 0.02)


def test_every_order_is_a_valid_conversion():
    # eps_of_rho is the minimum over orders; a loose order never gives less.
    rho, delta = 0.02, 1e-6
    for alpha in (1.5, 5.0, 22.0, 100.0):
        bound = (
            rho * alpha
            + np.log((alpha - 1) / alpha)
            - (np.log(delta) + np.log(alpha)) / (alpha - 1)
        )
        assert eps_of_rho(rho, delta) <= bound + 1e-12


# -- bounded range: exact Renyi divergences (Cesar & Rogers 2021) -------------------------
def _renyi(p, q, alpha):
    return logsumexp(alpha * np.log(p) + (1 - alpha) * np.log(q)) / (alpha - 1)


def _worst_renyi_ratio(weight_factor, seed=0):
    rng = np.random.default_rng(seed)
    worst = 0.0
    for n_classes in range(2, 6):
        for _ in range(400):
            eps0 = rng.choice([0.01, 0.1, 0.5, 1.0])
            counts = rng.integers(0, 30, size=n_classes).astype(float)
            i, j = rng.choice(n_classes, size=2, replace=False)
            if counts[i] == 0:
                continue
            moved = counts.copy()
            moved[i] -= 1
            moved[j] += 1  # one teacher changes its vote
            p = exponential_mechanism_proba(counts, weight_factor * eps0)
            q = exponential_mechanism_proba(moved, weight_factor * eps0)
            for alpha in (1.5, 2.0, 5.0, 20.0, 100.0):
                worst = max(
                    worst, max(_renyi(p, q, alpha), _renyi(q, p, alpha)) / (alpha * eps0**2 / 8)
                )
    return worst


def test_soft_majority_is_eps0_squared_over_8_zcdp():
    assert _worst_renyi_ratio(1.0) <= 1.0 + 1e-9


def test_weight_eps0_per_vote_breaks_the_zcdp_charge():
    assert _worst_renyi_ratio(2.0) > 1.5  # what the broken variant would really cost


# -- the estimator in many-query mode --------------------------------------------------------
def _session(labels, n_queries, total_epsilon=1.0, total_delta=1e-6, **params):
    """One training row per teacher: every teacher is a constant, votes are exact."""
    X = np.arange(len(labels), dtype=float).reshape(-1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return SubsampleAggregateClassifier(
            n_teachers=len(labels),
            classes=[0, 1],
            n_queries=n_queries,
            total_epsilon=total_epsilon,
            total_delta=total_delta,
            random_state=0,
            **params,
        ).fit(X, np.array(labels))


def test_per_row_law_uses_the_derived_epsilon():
    clf = _session([1, 1, 1, 0, 0], n_queries=100)
    eps0 = per_query_epsilon(1.0, 1e-6, 100)
    assert clf.epsilon_per_query_ == pytest.approx(eps0)
    assert clf.rho_per_query_ == pytest.approx(eps0**2 / 8)
    expected = 1 / (1 + np.exp(-eps0 * (2 * 3 - 5) / 2))
    assert clf._output_distribution([[0.0]])[0, 1] == pytest.approx(expected, rel=1e-12)
    guarantee = clf.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee)
    assert guarantee.epsilon == 1.0 and guarantee.delta == 1e-6 and guarantee.rho is None
    assert guarantee.unit == "all answers, under one total budget"
    assert guarantee.details["epsilon_per_query"] == pytest.approx(eps0)
    assert guarantee.details["rho_per_query"] == pytest.approx(eps0**2 / 8)
    assert guarantee.details["n_queries"] == 100
    for cited in ("Dwork & Feldman (2018), Theorem 4.1", "Cesar & Rogers", "Bun & Steinke"):
        assert cited in guarantee.theorem
    assert clf.queries_remaining_ == 100


def test_refusal_at_the_horizon_changes_nothing():
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5, composition="zcdp")
    clf = _session([1, 0, 1, 0], n_queries=10, accountant=acc)
    clf.predict(np.zeros((7, 1)))
    state = copy.deepcopy(clf._query_stream.rng.bit_generator.state)
    spent = acc.spent()
    with pytest.raises(BudgetExhaustedError, match="3 rows remain"):
        clf.predict(np.zeros((4, 1)))
    assert clf._query_stream.rng.bit_generator.state == state
    assert acc.spent() == spent and acc.queries_answered == 7 and clf.queries_remaining_ == 3
    assert clf.predict(np.zeros((3, 1))).shape == (3,)
    assert clf.queries_remaining_ == 0
    with pytest.raises(BudgetExhaustedError):
        clf.predict(np.zeros((1, 1)))


def test_batch_equals_sequential_calls():
    one = _session([1, 0, 1, 0], n_queries=300)
    batch = one.predict(np.zeros((300, 1)))
    two = _session([1, 0, 1, 0], n_queries=300)
    sequential = np.array([two.predict([[0.0]])[0] for _ in range(300)])
    np.testing.assert_array_equal(batch, sequential)
    assert 0 < batch.sum() < 300


def test_horizon_holds_across_threads_and_pickling():
    clf = _session([1, 0, 1, 0], n_queries=500)
    answered = []

    def work():
        while True:
            try:
                answered.append(len(clf.predict(np.zeros((3, 1)))))
            except BudgetExhaustedError:
                return

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(answered) == 498 and clf.queries_remaining_ == 2  # 500 is not a multiple of 3
    copy_ = pickle.loads(pickle.dumps(clf))
    assert copy_.queries_remaining_ == 2
    with pytest.raises(BudgetExhaustedError):
        copy_.predict(np.zeros((3, 1)))


def test_zcdp_accountant_total_matches_the_theorem():
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6, composition="zcdp")
    clf = _session([1, 0, 1, 0], n_queries=700, accountant=acc)
    clf.predict(np.zeros((700, 1)))
    eps0 = clf.epsilon_per_query_
    expected = min(700 * eps0, eps_of_rho(700 * eps0**2 / 8, 1e-6))
    assert acc.epsilon_spent == pytest.approx(expected, rel=1e-9)
    assert acc.epsilon_spent <= 1.0 * (1 + 1e-12)
    # the same rows charged as generic pure-DP releases would not have fitted
    generic = PrivacyAccountant(epsilon=1.0, delta=1e-6, composition="zcdp")
    assert not generic.can_charge(700, eps0)


def test_adaptive_adversary_cannot_pass_the_horizon():
    clf = _session([1, 1, 0, 0, 1], n_queries=40)
    rng = np.random.default_rng(1)
    asked = 0
    last = 1
    while True:
        batch = int(rng.integers(1, 6)) + last  # next request depends on the last answer
        try:
            last = int(clf.predict(np.zeros((batch, 1))).sum() % 3)
            asked += batch
        except BudgetExhaustedError:
            break
    assert asked <= 40 and clf.queries_answered_ == asked


# -- the whole transcript: exact and black-box checks ------------------------------------------
def _transcript_laws(q):
    """Worst-case neighbours: one constant teacher flips, which moves every row's vote."""
    S = _session([1, 1, 1, 1, 1], n_queries=q)
    S2 = _session([0, 1, 1, 1, 1], n_queries=q)
    return S, S2


def test_exact_transcript_delta_is_within_the_claim():
    q = 8
    S, S2 = _transcript_laws(q)
    p = S._output_distribution(np.zeros((1, 1)))[0]
    p2 = S2._output_distribution(np.zeros((1, 1)))[0]
    outcomes = np.array(list(itertools.product([0, 1], repeat=q)))
    log_p = np.log(p[outcomes]).sum(axis=1)
    log_p2 = np.log(p2[outcomes]).sum(axis=1)
    for a, b in ((log_p, log_p2), (log_p2, log_p)):
        delta = np.sum(np.maximum(0.0, np.exp(a) - np.exp(1.0 + b)))  # hockey stick at eps = 1
        assert delta <= 1e-6


def _audit_transcripts(clf_a, clf_b, q, n_trials, weight=None):
    codes = []
    for clf in (clf_a, clf_b):
        counts = np.zeros(2**q, dtype=int)
        for _ in range(n_trials):
            session = copy.deepcopy(clf)  # a fresh query stream per session
            # ... and, for this simulation only, a horizon of its own: copies of one fitted
            # estimator share their horizon in the ledger, so without this reset only the
            # first simulated session could answer.
            session._horizon = (uuid.uuid4().hex, q)
            if weight is not None:
                session.epsilon_per_query_ = weight * clf.epsilon_per_query_
            answers = session.predict(np.zeros((q, 1)))
            counts[int("".join(map(str, answers)), 2)] += 1
        codes.append(counts)
    alpha = 1e-3 / (2 * 2**q)
    lo_a, hi_a = clopper_pearson(codes[0], n_trials, confidence_level=1 - alpha)
    lo_b, hi_b = clopper_pearson(codes[1], n_trials, confidence_level=1 - alpha)
    with np.errstate(divide="ignore"):
        bound = np.maximum(np.log(lo_a) - np.log(hi_b), np.log(lo_b) - np.log(hi_a))
    return float(bound.max())


def _transcript_law(clf, q, weight=1):
    """Exact law of a q-row transcript (rows are independent): NOT PRIVATE, a diagnostic."""
    session = copy.deepcopy(clf)
    session.epsilon_per_query_ = weight * clf.epsilon_per_query_
    p = session._output_distribution(np.zeros((1, 1)))[0]
    return {o: float(np.prod(p[list(o)])) for o in itertools.product([0, 1], repeat=q)}


def test_black_box_transcript_audit_passes_and_flags_an_undivided_budget():
    """Sizes and powers from the exact transcript laws (``_audit_power.law_power``).

    On this pair the honest transcript's largest log-ratio is 0.5, half the claimed total
    (asserted). So the audit catches only gross regressions: at 4,500 sessions, rows that
    spend 3 times their share (the broken variant below: no division by the horizon)
    are caught with probability >= 0.99, while the estimator calibrated for twice its
    epsilon (every row at ``2 eps0``) is caught with probability below 1e-6; rows at 4
    times their share need 1,250 sessions. The per-row calibration at twice epsilon is
    the mutant of ``tests/audits/test_mutants_teachers.py``. The honest sessions pass with
    probability at least 1 - 1e-3 whatever their number.
    """
    q, n_trials = 3, 4_500
    S = _session([1, 1, 0], n_queries=q, accountant=PrivacyAccountant(ledger=":memory:"))
    # one teacher's vote moves on every row
    S2 = _session([0, 1, 0], n_queries=q, accountant=PrivacyAccountant(ledger=":memory:"))
    alpha = 1e-3 / (2 * 2**q)  # as in _audit_transcripts
    law, law_neighbour = _transcript_law(S, q), _transcript_law(S2, q)
    loss = max(abs(math.log(law[o] / law_neighbour[o])) for o in law)
    assert loss == pytest.approx(0.5, abs=1e-3)

    def power(weight, n):
        laws = _transcript_law(S, q, weight), _transcript_law(S2, q, weight)
        return law_power(n, *laws, 1.0, alpha)

    assert power(4, 1_250) >= 0.99
    assert power(q, n_trials) >= 0.99
    assert power(2, n_trials) < 1e-6
    assert _audit_transcripts(S, S2, q, n_trials) <= 1.0
    # broken on purpose: every row spends the whole total (no division by the horizon)
    assert _audit_transcripts(S, S2, q, n_trials, weight=q) > 1.0


def test_per_row_audit_at_eps0_on_flip_neighbours():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    est = SubsampleAggregateClassifier(
        KNeighborsClassifier(n_neighbors=1),
        n_teachers=3,
        classes=[0, 1],
        n_queries=4,
        total_epsilon=4.0,
        total_delta=0.0,
    )
    query = np.array([[2.5, 0.0]])
    X2, y2, _ = flip_teacher_neighbour(est, X, y, query, random_state=1)
    report = audit_epsilon(
        clone(est).set_params(n_queries=200_000),
        X,
        y,
        X2,
        y2,
        query,
        n_trials=100_000,
        random_state=1,
    )
    assert report.claimed_epsilon == pytest.approx(4.0 / 200_000)  # eps0 of that horizon
    assert report.passed, str(report)


# -- the student hand-off --------------------------------------------------------------------
def _student_session(on_exhausted="raise", accountant=None):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    clf = SubsampleAggregateClassifier(
        n_teachers=20,
        classes=[0, 1],
        n_queries=100,
        total_epsilon=2.0,
        total_delta=1e-6,
        student=LogisticRegression(),
        on_exhausted=on_exhausted,
        accountant=accountant,
        random_state=0,
    ).fit(X, y)
    return clf, rng.normal(size=(300, 3))


def test_student_learns_exactly_the_released_answers():
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-5, composition="zcdp")
    clf, Q = _student_session(accountant=acc)
    released = np.concatenate([clf.predict(Q[:60]), clf.predict(Q[60:90])])
    clf.fit_student()
    reference = LogisticRegression().fit(Q[:90], released)
    np.testing.assert_allclose(clf._student.coef_, reference.coef_)
    spent, answered = acc.spent(), acc.queries_answered
    clf._ensemble = None  # the teachers are not needed any more
    first = clf.predict(Q)
    np.testing.assert_array_equal(first, clf.predict(Q))  # deterministic
    assert acc.spent() == spent and acc.queries_answered == answered
    assert clf.mode_ == "student" and clf.predict_proba(Q[:5]).shape == (5, 2)


def test_on_exhausted_student_splits_the_call_at_the_horizon():
    clf, Q = _student_session(on_exhausted="student")
    clf.predict(Q[:95])
    out = clf.predict(Q[95:130])  # 5 rows from the teachers, 30 from the student
    assert out.shape == (35,) and clf.mode_ == "student" and clf.queries_remaining_ == 0
    assert sum(len(labels) for _, labels in clf._buffer) == 100
    np.testing.assert_array_equal(out[5:], clf._student.predict(Q[100:130]))


def test_student_on_public_rows_only():
    clf, Q = _student_session()
    clf.fit_student(Q[:100])  # public unlabelled rows, labelled through the mechanism
    assert clf.queries_remaining_ == 0 and clf.mode_ == "student"
    assert not hasattr(SubsampleAggregateClassifier(), "predict_proba")


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_queries": 0, "total_epsilon": 1.0}, "'n_queries' parameter"),
        ({"n_queries": 2.0, "total_epsilon": 1.0}, "'n_queries' parameter"),
        ({"n_queries": 10, "total_epsilon": 0.0}, "'total_epsilon' parameter"),
        ({"n_queries": 10, "total_epsilon": 1.0, "total_delta": 1.5}, "'total_delta' parameter"),
        ({"n_queries": 10, "total_epsilon": 1.0, "total_delta": -0.1}, "'total_delta' parameter"),
        ({"n_queries": 10, "total_epsilon": 1.0, "epsilon": 0.5}, "epsilon=0.5.*total_epsilon"),
        ({"n_queries": 10}, "n_queries=10 needs .* total_epsilon"),
        ({"total_epsilon": 1.0}, "total_epsilon=1.0 .* n_queries"),
        ({"total_delta": 1e-6}, "total_delta=1e-06 .* n_queries"),
        ({"n_queries": 10, "total_epsilon": 1.0, "on_exhausted": "student"}, "student=None"),
        ({"on_exhausted": "wait"}, "'on_exhausted' parameter .* 'raise', 'student'"),
        ({"student": "tree"}, "'student' parameter"),
        ({"min_samples_per_teacher": 0}, "'min_samples_per_teacher' parameter"),
        ({"n_teachers": 5, "min_samples_per_teacher": 10}, "min_samples_per_teacher=10"),
    ],
)
def test_bad_budget_settings(params, match):
    X = np.random.default_rng(0).normal(size=(100, 2))
    y = (X[:, 0] > 0).astype(int)
    clf = SubsampleAggregateClassifier(classes=[0, 1], **params)
    with pytest.raises(InvalidParameterError, match=match):
        clf.fit(X, y)
    assert not hasattr(clf, "n_teachers_")  # refused before anything was fitted


def test_zero_total_delta_is_basic_composition():
    clf = _session([1, 0], n_queries=4, total_delta=0.0)
    assert clf.epsilon_per_query_ == pytest.approx(1.0 / 4)
    assert clf.privacy_guarantee_.delta == 0.0


def test_min_samples_per_teacher_is_the_public_rule():
    X = np.random.default_rng(0).normal(size=(1000, 2))
    y = (X[:, 0] > 0).astype(int)
    clf = SubsampleAggregateClassifier(classes=[0, 1], min_samples_per_teacher=40).fit(X, y)
    assert clf.n_teachers_ == 25


def test_fit_student_errors():
    clf, Q = _student_session()
    with pytest.raises(ValueError, match="nothing to learn"):
        clf.fit_student()
    plain = _session([1, 0], n_queries=5)
    with pytest.raises(InvalidParameterError, match="student"):
        plain.fit_student()


def test_the_default_rule_keeps_ten_rows_per_class_in_many_query_mode():
    def rule(**params):
        return SubsampleAggregateClassifier(classes=[0, 1], **params).n_teachers_for(32561, 2)

    long_horizon = dict(n_queries=5000, total_epsilon=1.0, total_delta=1e-6)
    eps0 = per_query_epsilon(1.0, 1e-6, 5000)
    assert pac_n_partitions(0.1, eps0, 2) == 3546  # the theory rule alone: 9 rows each
    assert rule(**long_horizon) == 32561 // 20 == 1628
    assert rule(n_queries=500, total_epsilon=1.0, total_delta=1e-6) == 1122  # below the cap
    assert rule(n_teachers=3000, **long_horizon) == 3000  # an explicit choice is kept
    assert rule(min_samples_per_teacher=5, **long_horizon) == 6512
    assert rule(epsilon=0.01) == pac_n_partitions(0.1, 0.01, 2)  # per-row mode: no cap
    three = SubsampleAggregateClassifier(classes=[0, 1, 2], **long_horizon)
    assert three.n_teachers_for(32561, 3) == 32561 // 30
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] > 0).astype(int)
    clf = SubsampleAggregateClassifier(classes=[0, 1], **long_horizon).fit(X, y)
    assert clf.n_teachers_ == 20  # 400 rows, twenty per teacher
