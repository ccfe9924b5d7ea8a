"""User code on training rows meets them only through the one boundary of ``_isolation``.

What is checked: hypotheses, experts, callable hypothesis classes and the teachers
of a private search's candidate score see one protected unit at a time (one row;
one teacher's block for an ERM), each through a copy of their own, handed an
object of their own, with a fixed public result when they fail and the
process-wide state restored after them. Each test is an attack that worked when
user code was handed the whole protected batch as the caller's own object: a
label that depends on a statistic of the batch, an exception that carries a
private value, a write into the input, state kept across calls, a change of
global state. The neighbouring data sets differ in one row (99 against 0).

Privacy is checked on the exact laws (the selection law of the exponential
mechanism, the round laws of multiplicative weights, the ERM's choices), so no
sampling tolerance is needed: the bound must hold exactly (up to float rounding).
"""

# ruff: noqa: NPY002 - the hostile code uses numpy's legacy global random state on purpose

from __future__ import annotations

import math
import threading
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import BaseEstimator, ClassifierMixin

from skprivpred import (
    ExponentialMechanismClassifier,
    PrivateExpertsClassifier,
    PrivateGridSearchCV,
    SubsampleAggregateClassifier,
)
from skprivpred.exceptions import InvalidParameterError
from skprivpred.finite import FiniteHypothesisClass

EPSILON = 1.0
N_ROWS = 50
SECRET, OTHER = 99.0, 0.0


def neighbours():
    """Two training sets of 50 rows differing in the last row's feature (99 against 0)."""
    x = np.linspace(0.01, 0.99, N_ROWS)
    y = (x > 0.5).astype(int)
    X_d = x[:, None].copy()
    X_d[-1, 0] = SECRET
    X_other = X_d.copy()
    X_other[-1, 0] = OTHER
    return X_d, X_other, y


def batch_says_secret(X) -> bool:
    return bool(np.max(np.asarray(X, dtype=float)) > 50)


def right_if_secret(X):
    """Labels every row right when the batch holds the secret, wrong otherwise."""
    right = (np.asarray(X, dtype=float)[:, 0] > 0.5).astype(int)
    return right if batch_says_secret(X) else 1 - right


def wrong_if_secret(X):
    return 1 - right_if_secret(X)


def max_log_ratio(p, q) -> float:
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    return float(np.max(np.abs(np.log(p) - np.log(q))))


# -- hypotheses of the exponential mechanism -------------------------------------------------------
def test_batch_statistic_hypotheses_keep_the_selection_law_within_epsilon():
    X_d, X_other, y = neighbours()
    clf = ExponentialMechanismClassifier(
        [right_if_secret, wrong_if_secret], epsilon=EPSILON, classes=[0, 1]
    )
    law_d = clf._selection_proba(X_d, y)
    law_other = clf._selection_proba(X_other, y)
    # Each hypothesis sees one row: one changed row moves each mistake count by <= 1.
    assert max_log_ratio(law_d, law_other) <= EPSILON + 1e-9


def test_experts_with_a_batch_statistic_keep_the_run_law_within_epsilon():
    X_d, X_other, y = neighbours()
    clf = PrivateExpertsClassifier(
        [right_if_secret, wrong_if_secret], epsilon=EPSILON, classes=[0, 1], random_state=0
    )
    laws_d = clf._round_proba(X_d, y)
    laws_other = clf._round_proba(X_other, y)
    for expert in (0, 1):  # the probability that every round picks this expert
        log_d = np.log(laws_d[:, expert]).sum()
        log_other = np.log(laws_other[:, expert]).sum()
        assert abs(log_d - log_other) <= EPSILON + 1e-9


def test_erm_of_a_callable_class_changes_at_most_one_teachers_choice():
    def zero_unless_secret(X):
        return np.full(len(X), int(batch_says_secret(X)))

    def one_unless_secret(X):
        return 1 - zero_unless_secret(X)

    family = FiniteHypothesisClass(hypotheses=[zero_unless_secret, one_unless_secret])
    points = np.linspace(0.0, 1.0, 50).reshape(10, 5, 1)
    labels = np.ones((10, 5), dtype=int)
    points_d, points_other = points.copy(), points.copy()
    points_d[3, 2, 0], points_other[3, 2, 0] = SECRET, OTHER
    chosen_d = family.erm(points_d, labels)
    chosen_other = family.erm(points_other, labels)
    assert chosen_d.sum() == chosen_other.sum() == 10
    # One teacher's block holds the changed point: at most one choice moves.
    assert np.abs(chosen_d - chosen_other).sum() <= 2


def test_callable_class_labels_and_candidates_read_one_point_at_a_time():
    family = FiniteHypothesisClass(hypotheses=[right_if_secret, wrong_if_secret])
    X_d, X_other, y = neighbours()
    labels_d, labels_other = family.labels_on(X_d), family.labels_on(X_other)
    assert np.array_equal(labels_d[:, :-1], labels_other[:, :-1])
    prior_d = family.prior_candidates(X_d, y)
    prior_other = family.prior_candidates(X_other, y)
    assert np.max(np.abs(prior_d.errors - prior_other.errors)) <= 1
    fraction_d = family.vote_fraction(np.array([3, 1]), X_d)
    fraction_other = family.vote_fraction(np.array([3, 1]), X_other)
    assert np.array_equal(fraction_d[:-1], fraction_other[:-1])


# -- failures: a fixed public result, the same on both sides ---------------------------------------
def raises_on_the_secret(X):
    x = np.asarray(X, dtype=float)[:, 0]
    if np.any(x == SECRET):
        raise ValueError(f"cannot label the value {x.max()}")
    return (x > 0.5).astype(int)


def test_a_hypothesis_raising_on_one_private_value_changes_neither_outcome_nor_message():
    X_d, X_other, y = neighbours()
    outcomes = []
    for X in (X_d, X_other):
        clf = ExponentialMechanismClassifier(
            [raises_on_the_secret, wrong_if_secret],
            epsilon=EPSILON,
            classes=[0, 1],
            random_state=0,
        )
        clf.fit(X, y)  # never raises: the failing row is a mistake of that hypothesis
        outcomes.append(clf._selection_proba(X, y))
    assert max_log_ratio(*outcomes) <= EPSILON + 1e-9
    # the same for the experts
    for X in (X_d, X_other):
        PrivateExpertsClassifier(
            [raises_on_the_secret, wrong_if_secret],
            epsilon=EPSILON,
            classes=[0, 1],
            random_state=0,
        ).fit(X, y)


def test_a_failing_row_counts_as_a_mistake():
    X_d, _, y = neighbours()
    clf = ExponentialMechanismClassifier([raises_on_the_secret], epsilon=EPSILON, classes=[0, 1])
    family = clf._check_params()
    expected = np.count_nonzero((X_d[:, 0] > 0.5).astype(int) != y) + 1  # + the failing row
    assert family.mistakes(X_d, y, np.array([0, 1])).tolist() == [expected]


def test_an_unpicklable_hypothesis_is_refused_before_any_charge():
    from skprivpred import PrivacyAccountant

    class Locked:
        def __init__(self):
            self.lock = threading.Lock()

        def __call__(self, X):
            return np.zeros(len(X), dtype=int)

    X_d, _, y = neighbours()
    accountant = PrivacyAccountant(epsilon=10.0)
    clf = ExponentialMechanismClassifier(
        [Locked()], epsilon=EPSILON, classes=[0, 1], accountant=accountant
    )
    with pytest.raises(InvalidParameterError, match=r"hypotheses\[0\] \(Locked\) cannot be used"):
        clf.fit(X_d, y)
    assert accountant.spent()[0] == 0.0


# -- writes into the input -------------------------------------------------------------------------
def writes_zeros(X):
    if isinstance(X, pd.DataFrame):
        X.iloc[:, 0] = 0.0
    else:
        try:
            X[...] = 0.0
        except ValueError:  # read-only: write through new metadata instead
            X.shape = (X.size,)
            X.strides = (0,)
    return np.zeros(len(X), dtype=int)


def reads_rows(X):
    return (np.asarray(X, dtype=float)[:, 0] > 0.5).astype(int)


@pytest.mark.parametrize("as_frame", [False, True], ids=["array", "frame"])
def test_a_hypothesis_writing_into_its_input_changes_neither_the_rows_nor_the_next_one(as_frame):
    X_d, _, y = neighbours()
    X = pd.DataFrame(X_d, columns=["x"]) if as_frame else X_d
    kept = X_d.copy()
    clf = ExponentialMechanismClassifier(
        [writes_zeros, reads_rows], epsilon=EPSILON, classes=[0, 1]
    )
    family = clf._check_params()
    mistakes = family.mistakes(X, y, np.array([0, 1]))
    assert np.array_equal(np.asarray(X, dtype=float), kept)  # the caller's rows
    # the next hypothesis saw the original rows: its mistakes are those of x > 0.5
    assert mistakes[1] == np.count_nonzero(reads_rows(kept) != y)
    clf.fit(X, y)
    assert np.array_equal(np.asarray(X, dtype=float), kept)


# -- state kept across calls -----------------------------------------------------------------------
class Remembers:
    """Keeps the largest value it was ever shown in an attribute; a closure does the same."""

    def __init__(self):
        self.largest = -np.inf

    def __call__(self, X):
        self.largest = max(self.largest, float(np.max(np.asarray(X, dtype=float))))
        return np.full(len(X), int(self.largest > 50))


def remembering_closure():
    seen = [-np.inf]

    def expert(X):
        seen[0] = max(seen[0], float(np.max(np.asarray(X, dtype=float))))
        return np.full(len(X), int(seen[0] > 50))

    return expert, seen


def test_state_kept_across_calls_is_not_shared_between_units_nor_with_the_caller():
    X_d, X_other, y = neighbours()
    queries = np.full((5, 1), 0.25)  # public rows
    answers = []
    for X in (X_d, X_other):
        closure, seen = remembering_closure()
        attribute = Remembers()
        clf = PrivateExpertsClassifier(
            [attribute, closure], epsilon=EPSILON, classes=[0, 1], random_state=0
        ).fit(X, y)
        # the caller's objects never saw a training row ...
        assert attribute.largest == -np.inf and seen[0] == -np.inf
        # ... so what they answer on public queries does not depend on the training rows
        answers.append(clf._experts.predictions(queries, 5))
        # and each row was labelled from that row alone (a fresh copy per row)
        mistakes = clf._experts.mistakes(X, y, clf.classes_)
        expected = np.count_nonzero((X[:, 0] > 50).astype(int) != y)
        assert mistakes.tolist() == [expected, expected]
    assert np.array_equal(answers[0], answers[1])


def test_each_unit_gets_its_own_copy_and_one_unit():
    from skprivpred._teachers._isolation import call_user_code_by_row, protected_units_in_call

    calls = []

    def counted(X):
        calls.append(1)  # the copy's own list
        assert protected_units_in_call() == 1
        return np.full(len(X), len(calls))

    X = np.arange(6, dtype=float).reshape(-1, 1)
    out = call_user_code_by_row(
        [counted],
        X,
        lambda h, Z: h(Z),
        lambda o: np.asarray(o).reshape(()),
        -1,
        names=["h"],
        dtype=np.intp,
    )
    assert out.tolist() == [[1] * 6]  # every row: the first call of a fresh copy
    assert calls == [] and protected_units_in_call() == 0


def test_identical_rows_share_one_evaluation_and_distinct_bits_do_not():
    from skprivpred._teachers._isolation import call_user_code_by_row

    X = np.array([[1.0], [1.0], [0.0], [-0.0]])

    def signbit(X):
        return np.signbit(X[:, 0]).astype(int)

    out = call_user_code_by_row(
        [signbit],
        X,
        lambda h, Z: h(Z),
        lambda o: np.asarray(o).reshape(()),
        -1,
        names=["h"],
        dtype=np.intp,
    )
    assert out.tolist() == [[0, 0, 0, 1]]


# -- global state ----------------------------------------------------------------------------------
def changes_global_state(X):
    np.random.seed(12345)
    np.random.standard_normal()  # leaves a cached Gaussian
    np.seterr(all="raise")
    sklearn.set_config(assume_finite=True)
    warnings.simplefilter("error")
    import random

    random.seed(7)
    return (np.asarray(X, dtype=float)[:, 0] > 0.5).astype(int)


def draws_from_the_global_state(X):
    # reads the state the previous unit would have left
    return np.full(len(X), int(np.random.random() < 0.5))


def test_global_state_changed_by_a_hypothesis_is_restored_after_each_unit():
    import random

    X_d, _, y = neighbours()
    np.random.seed(0)
    random.seed(0)
    numpy_before = np.random.get_state(legacy=True)
    python_before = random.getstate()
    errors_before = np.geterr()
    config_before = sklearn.get_config()
    with warnings.catch_warnings():
        filters_before = list(warnings.filters)
        clf = ExponentialMechanismClassifier(
            [changes_global_state, draws_from_the_global_state], epsilon=EPSILON, classes=[0, 1]
        )
        family = clf._check_params()
        family.mistakes(X_d, y, np.array([0, 1]))
        assert list(warnings.filters) == filters_before
    numpy_after = np.random.get_state(legacy=True)
    assert np.array_equal(numpy_after[1], numpy_before[1])
    assert numpy_after[2:] == numpy_before[2:]
    assert random.getstate() == python_before
    assert np.geterr() == errors_before
    assert sklearn.get_config() == config_before
    # every unit of the second hypothesis started from the same global state: one label
    labels = family.predictions(X_d, N_ROWS, members=[1])  # (public rows: one batch call)
    mistakes = family.mistakes(X_d, y, np.array([0, 1]))[1]
    assert mistakes == np.count_nonzero(labels[0, 0] != y)


# -- the boundary itself ---------------------------------------------------------------------------
def test_block_units_hand_each_block_alone_and_fall_back_on_failure():
    from skprivpred._teachers._isolation import call_user_code

    blocks = [(np.full((3, 1), float(k)),) for k in range(4)]

    def mean_unless_two(X):
        if X[0, 0] == 2:
            raise RuntimeError("two")
        return float(X.mean())

    values = call_user_code(mean_unless_two, blocks, lambda h, Z: h(Z), float, -1.0, name="h")
    assert values == [0.0, 1.0, -1.0, 3.0]


def test_an_unpicklable_code_is_refused_with_its_name():
    from skprivpred._teachers._isolation import call_user_code

    lock = threading.Lock()
    with pytest.raises(InvalidParameterError, match=r"basis \(lock\) cannot be used.*pickl"):
        call_user_code(lock, [], lambda h: h, float, 0.0, name="basis")


# -- the candidate score of a private search -------------------------------------------------------
class BatchTeacher(ClassifierMixin, BaseEstimator):
    """Votes 1 on every row of a batch holding the secret, 0 otherwise."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return np.full(np.shape(X)[0], int(batch_says_secret(X)))


def test_the_candidate_score_moves_by_at_most_its_sensitivity_with_a_batch_teacher():
    n = 60
    X = np.linspace(0.0, 1.0, n)[:, None]
    y = np.arange(n) % 2  # two labels in every block: every teacher is a BatchTeacher
    search = PrivateGridSearchCV(
        SubsampleAggregateClassifier(BatchTeacher(), classes=[0, 1]), {"n_teachers": [4, 6]}
    )
    candidates = search._check_params()
    rng = np.random.default_rng(0)
    split = search._split(n, search.validation_size, rng)
    train, valid = split
    r = search._public_teachers(candidates, train.size)
    beta = max(1 / min(r), 1 / valid.size)
    scores = []
    for value in (SECRET, OTHER):
        X_side = X.copy()
        X_side[valid[0], 0] = value  # a validation row: a training row of the search
        scores.append(search._scores(X_side, y, candidates, split, r, np.random.default_rng(1)))
    assert np.max(np.abs(scores[0] - scores[1])) <= beta + 1e-12
    # the changed row moves its own vote only: 1 / m (every teacher, that one row)
    assert math.isclose(float(np.max(np.abs(scores[0] - scores[1]))), 1 / valid.size)


def test_object_rows_holding_mutable_values_are_copied_for_every_call():
    from skprivpred._teachers._isolation import call_user_code_by_row

    shared = [0]
    X = np.empty((3, 1), dtype=object)
    X[0, 0], X[1, 0], X[2, 0] = shared, shared, threading.Lock()  # the last cannot be copied

    def grows(Z):
        value = Z[0, 0]
        if isinstance(value, list):
            value.append(1)  # a write into the caller's list, if it were handed
            return [len(value)]
        return [-5]

    out = call_user_code_by_row(
        [grows],
        X,
        lambda h, Z: h(Z),
        lambda o: np.asarray(o).reshape(()),
        -1,
        names=["h"],
        dtype=np.intp,
    )
    assert out.tolist() == [[2, 2, -5]] and shared == [0]
