"""SubsampleAggregateClassifier: exact law, privacy audit, budget, RNG hygiene, sklearn, errors."""

import copy
import pickle
import threading
import warnings

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import binomtest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, RidgeClassifier, SGDClassifier
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from skprivpred import (
    BudgetExhaustedError,
    InvalidParameterError,
    PrivacyAccountant,
    PrivacyGuarantee,
    PrivacyWarning,
    SubsampleAggregateClassifier,
)
from skprivpred.audit import audit_epsilon, flip_teacher_neighbour
from skprivpred.mechanisms import exponential_mechanism_proba

# A false-alarm rate this small per statistical assertion keeps the suite
# reliable while each assertion still fails on any real deviation.
P_FALSE_ALARM = 1e-6


@pytest.fixture(scope="module")
def binary_data():
    X, y = make_classification(n_samples=600, n_features=5, random_state=0)
    return X, y


def _rng_state(clf):
    return copy.deepcopy(clf._query_stream.rng.bit_generator.state)


# -- exact law (Dwork & Feldman (2018), Theorem 4.1) ----------------------------------
SPEC_TABLE = [0.075858, 0.182426, 0.377541, 0.622459, 0.817574, 0.924142]


def _controlled_votes(n_ones, r=5, epsilon=1.0, seed=0):
    """r rows, one per teacher: every part has one label, so votes are exact."""
    X = np.arange(r, dtype=float).reshape(-1, 1)
    y = np.array([1] * n_ones + [0] * (r - n_ones))
    return SubsampleAggregateClassifier(
        epsilon=epsilon, n_teachers=r, classes=[0, 1], random_state=seed
    ).fit(X, y)


@pytest.mark.parametrize("n_ones", range(6))
def test_exact_law_matches_the_table(n_ones):
    clf = _controlled_votes(n_ones)
    assert len(clf._ensemble._constant) == 5  # each one-row part is a constant teacher
    np.testing.assert_array_equal(clf._vote_counts([[0.0]]), [[5 - n_ones, n_ones]])
    p1 = clf._output_distribution([[0.0]])[0, 1]
    assert p1 == pytest.approx(SPEC_TABLE[n_ones], abs=1e-6)
    assert p1 == pytest.approx(expit(1.0 * (2 * n_ones - 5) / 2), abs=1e-15)
    n = 100_000
    answers = clf.predict(np.zeros((n, 1)))
    test = binomtest(int((answers == 1).sum()), n, SPEC_TABLE[n_ones])
    assert test.pvalue > P_FALSE_ALARM


def test_multiclass_law_is_exponential_mechanism():
    X = np.arange(6, dtype=float).reshape(-1, 1)
    y = np.array([0, 1, 1, 2, 2, 2])
    clf = SubsampleAggregateClassifier(
        epsilon=0.7, n_teachers=6, classes=[0, 1, 2], random_state=0
    ).fit(X, y)
    law = clf._output_distribution([[0.0]])[0]
    weights = np.exp(0.7 * np.array([1, 2, 3]) / 2)
    np.testing.assert_allclose(law, weights / weights.sum(), rtol=1e-12)
    n = 60_000
    answers = clf.predict(np.zeros((n, 1)))
    for k in range(3):
        assert binomtest(int((answers == k).sum()), n, law[k]).pvalue > P_FALSE_ALARM


def test_unanimous_and_tied_votes():
    clf = _controlled_votes(5, r=5, epsilon=0.4)
    assert clf._output_distribution([[0.0]])[0, 1] == pytest.approx(expit(0.4 * 5 / 2))
    tie = _controlled_votes(2, r=4, epsilon=3.0)
    assert tie._output_distribution([[0.0]])[0, 1] == pytest.approx(0.5)


def test_no_overflow_at_large_epsilon_and_many_teachers():
    X = np.arange(1000, dtype=float).reshape(-1, 1)
    y = np.ones(1000, dtype=int)
    clf = SubsampleAggregateClassifier(
        epsilon=50.0, n_teachers=1000, classes=[0, 1], random_state=0
    ).fit(X, y)
    law = clf._output_distribution([[0.0]])
    assert np.all(np.isfinite(law)) and law[0, 1] == 1.0
    assert set(clf.predict(np.zeros((100, 1)))) == {1}


def test_relabelling_gives_the_same_law(binary_data):
    X, y = binary_data
    numeric = SubsampleAggregateClassifier(n_teachers=7, classes=[0, 1], random_state=3).fit(X, y)
    labels = np.array(["a", "b"])[y]
    strings = SubsampleAggregateClassifier(n_teachers=7, classes=["a", "b"], random_state=3).fit(
        X, labels
    )
    np.testing.assert_allclose(numeric._output_distribution(X), strings._output_distribution(X))
    assert set(strings.predict(X[:50])) <= {"a", "b"}


# -- privacy: neighbours and black-box audit -------------------------------------------------
def _audit_case(n_classes):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 2))
    y = (X[:, 0] > 0).astype(int) if n_classes == 2 else np.digitize(X[:, 0], [-0.5, 0.5])
    query = np.array([[2.5, 0.0]])  # far from every boundary: all teachers agree
    est = SubsampleAggregateClassifier(
        KNeighborsClassifier(n_neighbors=1),
        epsilon=1.0,
        n_teachers=3,
        classes=list(range(n_classes)),
    )
    return est, X, y, query


class _DoubledWeight(SubsampleAggregateClassifier):
    """Broken on purpose: weight epsilon per vote (the paper's prose), i.e. 2 epsilon-DP."""

    def _answer_law(self, counts):
        return exponential_mechanism_proba(counts, 2 * self.epsilon_per_query_)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_neighbours_differ_in_one_vote_and_ratio_is_bounded(n_classes):
    est, X, y, query = _audit_case(n_classes)
    X2, y2, info = flip_teacher_neighbour(est, X, y, query, random_state=1)
    assert np.sum(np.any(X != X2, axis=1) | (y != y2)) == 1
    a = clone(est).set_params(random_state=1).fit(X, y)
    b = clone(est).set_params(random_state=1).fit(X2, y2)
    grid = np.random.default_rng(1).normal(size=(400, 2)) * 2
    votes_a, votes_b = a._ensemble.votes(grid), b._ensemble.votes(grid)
    assert np.all((votes_a != votes_b).sum(axis=1) <= 1)
    assert np.all((votes_a != votes_b)[:, [j for j in range(3) if j != info["teacher"]]] == 0)
    log_ratio = np.abs(np.log(a._output_distribution(grid)) - np.log(b._output_distribution(grid)))
    assert log_ratio.max() <= 1.0 + 1e-12
    assert log_ratio.max() > 0.5  # the flip did move the law


@pytest.mark.parametrize("n_classes", [2, 3])
def test_audit_passes_estimator_and_flags_doubled_weight(n_classes):
    est, X, y, query = _audit_case(n_classes)
    X2, y2, _ = flip_teacher_neighbour(est, X, y, query, random_state=1)
    report = audit_epsilon(est, X, y, X2, y2, query, n_trials=100_000, random_state=1)
    assert report.passed, str(report)
    broken = _DoubledWeight(**est.get_params(deep=False))
    report_broken = audit_epsilon(broken, X, y, X2, y2, query, n_trials=100_000, random_state=1)
    assert not report_broken.passed, str(report_broken)
    assert report_broken.epsilon_lower_bound > 1.2


# -- budget and accountant ---------------------------------------------------------------
def test_budget_refusal_changes_nothing(binary_data):
    X, y = binary_data
    acc = PrivacyAccountant(epsilon=10.0)
    clf = SubsampleAggregateClassifier(
        epsilon=1.0, n_teachers=5, classes=[0, 1], accountant=acc, random_state=0
    ).fit(X, y)
    clf.predict(X[:8])
    state = _rng_state(clf)
    with pytest.raises(BudgetExhaustedError, match="budget"):
        clf.predict(X[:3])
    assert _rng_state(clf) == state
    assert acc.queries_answered == 8 and acc.epsilon_spent == pytest.approx(8.0)
    assert clf.queries_answered_ == 8
    assert clf.predict(X[:2]).shape == (2,)
    assert acc.epsilon_spent == pytest.approx(10.0)
    with pytest.raises(BudgetExhaustedError):
        clf.score(X[:1], y[:1])


def test_pickle_round_trip_keeps_spending(binary_data):
    X, y = binary_data
    acc = PrivacyAccountant(epsilon=100.0)
    clf = SubsampleAggregateClassifier(
        n_teachers=5, classes=[0, 1], accountant=acc, random_state=0
    ).fit(X, y)
    clf.predict(X[:30])
    restored = pickle.loads(pickle.dumps(clf))
    assert restored.accountant.epsilon_spent == pytest.approx(30.0)
    assert restored.queries_answered_ == 30
    np.testing.assert_allclose(restored._output_distribution(X), clf._output_distribution(X))
    restored.predict(X[:5])
    assert restored.accountant.queries_answered == 35


def test_threads_charge_exactly_the_rows_answered(binary_data):
    X, y = binary_data
    acc = PrivacyAccountant()
    clf = SubsampleAggregateClassifier(
        n_teachers=5, classes=[0, 1], accountant=acc, random_state=0
    ).fit(X, y)
    answered = []

    def work(seed):
        rows = np.random.default_rng(seed).integers(1, 6, size=50)
        for m in rows:
            answered.append(len(clf.predict(X[:m])))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answered) == 400
    assert acc.queries_answered == sum(answered) == clf.queries_answered_
    assert acc.epsilon_spent == pytest.approx(float(sum(answered)))


def test_clone_and_deepcopy_share_the_accountant(binary_data):
    X, y = binary_data
    acc = PrivacyAccountant(epsilon=50.0)
    clf = SubsampleAggregateClassifier(n_teachers=5, classes=[0, 1], accountant=acc, random_state=0)
    assert clone(clf).accountant is acc
    fitted = clf.fit(X, y)
    twin = copy.deepcopy(fitted)
    assert twin.accountant is acc
    twin.predict(X[:4])
    fitted.predict(X[:4])
    assert acc.queries_answered == 8


def test_grid_search_charges_the_shared_accountant(binary_data):
    X, y = binary_data
    acc = PrivacyAccountant()
    clf = SubsampleAggregateClassifier(n_teachers=3, classes=[0, 1], accountant=acc, random_state=0)
    search = GridSearchCV(clf, {"epsilon": [0.5, 1.0]}, cv=3).fit(X, y)
    # every scored validation row was a query: 2 settings x 600 rows
    assert acc.queries_answered == 2 * 600
    assert search.best_estimator_.accountant is acc


# -- randomness hygiene -------------------------------------------------------------------
def test_calls_advance_one_stream_and_refit_reproduces():
    clf = _controlled_votes(2, r=4, epsilon=1.0, seed=7)  # tie: P(1) = 1/2
    one_by_one = np.array([clf.predict([[0.0]])[0] for _ in range(400)])
    assert 0 < one_by_one.sum() < 400  # an integer seed is not re-applied per call
    batch = _controlled_votes(2, r=4, epsilon=1.0, seed=7).predict(np.zeros((400, 1)))
    np.testing.assert_array_equal(one_by_one, batch)
    again = clf.fit(np.arange(4.0).reshape(-1, 1), np.array([1, 1, 0, 0]))
    np.testing.assert_array_equal(again.predict(np.zeros((400, 1))), batch)


def test_copies_never_replay_noise():
    clf = _controlled_votes(2, r=4, epsilon=1.0, seed=7)
    twin = pickle.loads(pickle.dumps(clf))
    deep = copy.deepcopy(clf)
    a, b, c = (m.predict(np.zeros((200, 1))) for m in (clf, twin, deep))
    assert not np.array_equal(a, b) and not np.array_equal(a, c)


def test_fit_stream_is_independent_of_the_data(binary_data):
    X, y = binary_data
    a = SubsampleAggregateClassifier(n_teachers=7, classes=[0, 1], random_state=5).fit(X, y)
    b = SubsampleAggregateClassifier(n_teachers=7, classes=[0, 1], random_state=5).fit(
        X[::-1], 1 - y
    )
    for pa, pb in zip(a._partition, b._partition):
        np.testing.assert_array_equal(pa, pb)
    sizes = sorted(len(p) for p in a._partition)
    assert sizes[0] >= 600 // 7 and sizes[-1] <= 600 // 7 + 1
    assert np.array_equal(np.sort(np.concatenate(a._partition)), np.arange(600))


# -- teachers: stacking, constants, parallel fits ----------------------------------------------
@pytest.mark.parametrize(
    "base",
    [
        LogisticRegression(),
        RidgeClassifier(),
        LinearSVC(),
        SGDClassifier(random_state=0),
    ],
    ids=lambda b: type(b).__name__,
)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_stacked_linear_votes_equal_teachers_own_predict(base, n_classes):
    X, y = make_classification(
        n_samples=400, n_features=6, n_informative=4, n_classes=n_classes, random_state=1
    )
    # 3-class: some small parts miss a class, so binary and 3-class teachers mix.
    clf = SubsampleAggregateClassifier(
        base, n_teachers=40, classes=list(range(n_classes)), random_state=0
    ).fit(X, y)
    assert clf._ensemble._stack is not None and not clf._ensemble._other
    Q = np.random.default_rng(2).normal(size=(300, 6)) * 2
    votes = clf._ensemble.votes(Q)
    # Refit each part alone (same seed as the fit gave it) and compare.
    for j, part in enumerate(clf._partition):
        if np.unique(y[part]).size == 1:
            assert np.all(votes[:, j] == y[part][0])
            continue
        own = clone(base).fit(X[part], y[part]).predict(Q)
        np.testing.assert_array_equal(votes[:, j], own)


def test_single_class_parts_become_constant_teachers():
    X = np.arange(40, dtype=float).reshape(-1, 1)
    y = np.array([0] * 39 + [1])
    clf = SubsampleAggregateClassifier(n_teachers=10, classes=[0, 1], random_state=0).fit(X, y)
    assert len(clf._ensemble._constant) >= 9
    assert clf.predict(X).shape == (40,)


@pytest.mark.parametrize("seed", range(10))
def test_an_entry_no_teacher_can_read_fails_whatever_the_partition(seed):
    # Row 0's block may have a single label (a constant teacher that never
    # calls fit): the error must not depend on that draw.
    X = np.arange(40, dtype=float).reshape(-1, 1).astype(object)
    y = np.array([0] * 39 + [1])
    X[0, 0] = {"foo": "bar"}
    clf = SubsampleAggregateClassifier(n_teachers=10, classes=[0, 1], random_state=seed)
    with pytest.raises(TypeError, match="argument must be a string.* number"):
        clf.fit(X, y)
    assert not hasattr(clf, "classes_")


@pytest.mark.parametrize("first", ["a", None])
def test_strings_and_missing_values_in_an_object_array_reach_the_encoder(first):
    # Whatever entry comes first (a string or a missing value), only
    # containers are refused: the rest is the base estimator's to read.
    X = np.array([[first], ["a"], ["b"], [None]] * 10, dtype=object)
    y = np.array([0, 1, 1, 0] * 10)
    base = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression())
    clf = SubsampleAggregateClassifier(base, n_teachers=2, epsilon=50, random_state=0)
    clf.fit(X, y)
    assert set(clf.predict(X)) <= {0, 1}
    with pytest.raises(TypeError, match="X holds a list as an entry"):
        clf.predict(np.array([["a"], [[1, 2]]], dtype=object))
    assert clf.queries_answered_ == X.shape[0]  # the refused batch charged nothing


def test_parallel_fit_equals_sequential(binary_data):
    X, y = binary_data
    base = DecisionTreeClassifier(max_depth=4)
    one = SubsampleAggregateClassifier(base, n_teachers=6, classes=[0, 1], random_state=2).fit(X, y)
    two = SubsampleAggregateClassifier(
        base, n_teachers=6, classes=[0, 1], random_state=2, n_jobs=2
    ).fit(X, y)
    np.testing.assert_array_equal(one._vote_counts(X), two._vote_counts(X))


def test_pandas_pipeline_teachers_and_feature_names():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"age": rng.integers(18, 80, 300), "job": rng.choice(["a", "b", "c"], 300)}
    )
    y = ((frame["age"] > 45) ^ (frame["job"] == "c")).astype(int).to_numpy()
    teacher = make_pipeline(
        ColumnTransformer(
            [
                ("num", StandardScaler(), ["age"]),
                ("cat", OneHotEncoder(handle_unknown="ignore"), ["job"]),
            ]
        ),
        LogisticRegression(),
    )
    clf = SubsampleAggregateClassifier(teacher, n_teachers=5, classes=[0, 1], random_state=0)
    clf.fit(frame, y)
    assert list(clf.feature_names_in_) == ["age", "job"]
    assert clf.predict(frame).shape == (300,)
    scores = cross_val_score(clf, frame, y, cv=3)
    assert scores.shape == (3,)
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(frame[["job", "age"]])


def test_missing_predict_proba_and_decision_function_say_why_and_name_the_alternative(
    binary_data,
):
    X, y = binary_data
    clf = SubsampleAggregateClassifier(classes=[0, 1], random_state=0).fit(X, y)
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "decision_function")
    with pytest.raises(AttributeError, match="has no attribute 'predict_proba': ") as proba:
        clf.predict_proba(X[:2])
    with pytest.raises(AttributeError, match="has no attribute 'decision_function': ") as score:
        clf.decision_function(X[:2])
    for error in (proba, score):
        assert "disclose the teachers' vote count" in str(error.value)
        assert "SubsampleAverageClassifier releases private" in str(error.value)
    # A student that has no probabilities: the reason names it.
    from sklearn.svm import LinearSVC

    student = SubsampleAggregateClassifier(classes=[0, 1], random_state=0, student=LinearSVC()).fit(
        X, y
    )
    student.predict(X[:50])
    student.fit_student()
    with pytest.raises(AttributeError, match=r"the student \(LinearSVC\) answers now"):
        student.predict_proba(X[:2])
    # With a student that has them, the method is there (and free).
    with_proba = SubsampleAggregateClassifier(
        classes=[0, 1], random_state=0, student=LogisticRegression()
    ).fit(X, y)
    with_proba.predict(X[:50])
    assert with_proba.fit_student().predict_proba(X[:3]).shape == (3, 2)
    assert SubsampleAggregateClassifier.predict_proba.__doc__.startswith("Class probabilities")


def test_default_n_teachers_and_no_predict_proba(binary_data):
    X, y = binary_data
    clf = SubsampleAggregateClassifier(classes=[0, 1], random_state=0).fit(X, y)
    assert clf.n_teachers_ == 23
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "decision_function")
    guarantee = clf.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee)
    assert guarantee.epsilon == 1.0 and guarantee.delta == 0.0 and guarantee.rho == 1.0 / 8
    assert guarantee.unit == "each answered query row" and guarantee.neighbouring == "replace-one"
    assert "Dwork & Feldman (2018), Theorem 4.1" in guarantee.theorem
    assert guarantee.details == {"n_teachers": 23}
    public = {k for k in vars(clf) if not k.startswith("_")}
    assert public - set(clf.get_params()) == {
        "classes_",
        "n_teachers_",
        "n_features_in_",
        "privacy_guarantee_",
        "epsilon_per_query_",
        "rho_per_query_",
        "n_queries_",
        "mode_",
    }


def test_classes_none_warns(binary_data):
    X, y = binary_data
    with pytest.warns(PrivacyWarning, match="classes"):
        SubsampleAggregateClassifier(n_teachers=3).fit(X, y)


# -- bad input: clear error, nothing changed ------------------------------------------------
BAD_PARAMS = [
    ({"epsilon": 0}, InvalidParameterError, "'epsilon' parameter .* range \\(0, inf\\)"),
    ({"epsilon": -1.0}, InvalidParameterError, "'epsilon'"),
    ({"epsilon": float("nan")}, InvalidParameterError, "'epsilon'"),
    ({"epsilon": float("inf")}, InvalidParameterError, "'epsilon'"),
    ({"epsilon": "1"}, InvalidParameterError, "'epsilon'"),
    ({"target_error": 0.0}, InvalidParameterError, "'target_error'"),
    ({"target_error": 1.0}, InvalidParameterError, "'target_error'"),
    ({"n_teachers": 0}, InvalidParameterError, "'n_teachers'"),
    ({"n_teachers": 2.5}, InvalidParameterError, "'n_teachers'"),
    ({"n_teachers": 601}, InvalidParameterError, "n_teachers=601"),
    ({"accountant": 3}, InvalidParameterError, "'accountant'"),
    ({"estimator": "tree"}, InvalidParameterError, "'estimator'.*'fit', 'predict'"),
    ({"estimator": LogisticRegression}, InvalidParameterError, "'estimator'"),
    ({"n_jobs": 1.5}, InvalidParameterError, "'n_jobs'"),
    ({"random_state": -1}, InvalidParameterError, "'random_state'"),
    ({"classes": [0]}, ValueError, "classes"),
    ({"classes": [0, 2]}, ValueError, "outside `classes`"),
]


@pytest.mark.parametrize("params, error, match", BAD_PARAMS)
def test_bad_parameters_leave_fitted_estimator_unchanged(binary_data, params, error, match):
    X, y = binary_data
    clf = SubsampleAggregateClassifier(n_teachers=5, classes=[0, 1], random_state=0).fit(X, y)
    before_law = clf._output_distribution(X[:20])
    fitted_state = {k: v for k, v in vars(clf).items() if k.endswith("_") or k.startswith("_")}
    with pytest.raises(error, match=match):
        clf.set_params(**params).fit(X, y)
    assert {
        k: v for k, v in vars(clf).items() if k.endswith("_") or k.startswith("_")
    } == fitted_state
    assert all(vars(clf)[k] is v for k, v in fitted_state.items())
    np.testing.assert_array_equal(clf._output_distribution(X[:20]), before_law)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_training_rows_are_rejected(binary_data, bad):
    X, y = binary_data
    X = X.copy()
    X[3, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        SubsampleAggregateClassifier(n_teachers=3, classes=[0, 1]).fit(X, y)


def test_one_class_without_classes_is_an_error():
    with pytest.raises(ValueError, match="only one class"):
        SubsampleAggregateClassifier(n_teachers=2).fit(np.zeros((10, 2)), np.zeros(10))


def test_sample_weight_is_refused(binary_data):
    X, y = binary_data
    with pytest.raises(TypeError, match="sample_weight"):
        SubsampleAggregateClassifier(n_teachers=3, classes=[0, 1]).fit(
            X, y, sample_weight=np.ones(600)
        )


def test_predict_before_fit():
    with pytest.raises(NotFittedError):
        SubsampleAggregateClassifier().predict(np.zeros((2, 2)))


@pytest.mark.parametrize(
    "queries, match",
    [
        (np.zeros((3, 4)), "features"),
        (np.zeros((0, 5)), "0 sample"),
        (np.full((2, 5), np.nan), "NaN"),
        (np.full((2, 5), np.inf), "infinity"),
    ],
    ids=["wrong-width", "empty", "nan", "inf"],
)
def test_bad_queries_charge_nothing_and_draw_nothing(binary_data, queries, match):
    X, y = binary_data
    acc = PrivacyAccountant(epsilon=5.0)
    clf = SubsampleAggregateClassifier(
        n_teachers=5, classes=[0, 1], accountant=acc, random_state=0
    ).fit(X, y)
    state = _rng_state(clf)
    with pytest.raises(ValueError, match=match):
        clf.predict(queries)
    assert acc.queries_answered == 0 and clf.queries_answered_ == 0
    assert _rng_state(clf) == state


def test_vote_counts_equal_counted_votes_across_blocks(monkeypatch):
    from skprivpred._teachers import _fit as _teachers_fit
    from skprivpred._teachers import _votes as _teachers

    # A few dozen rows per block: many blocks, a ragged last one.
    monkeypatch.setattr(_teachers, "SCORE_BLOCK_BYTES", 37 * 8 * 8)
    X, y = make_classification(
        n_samples=300, n_features=5, n_classes=3, n_informative=3, random_state=4
    )
    two = y < 2
    teachers = [
        _teachers_fit.ConstantTeacher(2),
        LogisticRegression().fit(X[two], y[two]),  # binary, labels 0 and 1
        LogisticRegression().fit(X[y > 0], y[y > 0]),  # binary, labels 1 and 2
        LogisticRegression().fit(X, y),  # three classes
        RidgeClassifier().fit(X[two], y[two]),
        DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y),  # voted by predict
    ]
    ens = _teachers.TeacherEnsemble(teachers, np.array([0, 1, 2]))
    votes = ens.votes(X)
    for j in range(1, 6):
        np.testing.assert_array_equal(votes[:, j], teachers[j].predict(X))
    expected = np.stack([(votes == k).sum(axis=1) for k in range(3)], axis=1)
    np.testing.assert_array_equal(ens.vote_counts(X), expected)


# -- renamed parameters (0.4): `alpha` -> `target_error` ----------------------------------------
def test_alpha_was_renamed_target_error():
    X, y = make_classification(n_samples=600, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = SubsampleAggregateClassifier(target_error=0.3, classes=[0, 1], random_state=0)
        new_answers = new.fit(X, y).predict(X[:50])
        assert new.n_teachers_for(600, 2) == new.n_teachers_ == 16
    old = SubsampleAggregateClassifier(alpha=0.3, classes=[0, 1], random_state=0)
    with pytest.warns(FutureWarning, match="`alpha` was renamed `target_error` in 0.4") as record:
        old.fit(X, y)
    assert {warning.filename for warning in record} == {__file__}  # points at the caller
    assert old.n_teachers_ == 16
    np.testing.assert_array_equal(old.predict(X[:50]), new_answers)
    assert clone(old).get_params()["alpha"] == 0.3
    both = SubsampleAggregateClassifier(target_error=0.2, alpha=0.3, classes=[0, 1])
    with pytest.raises(InvalidParameterError, match="'target_error' and .* 'alpha'"):
        both.fit(X, y)
