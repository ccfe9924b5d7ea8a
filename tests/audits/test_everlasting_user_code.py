"""User code on the everlasting predictors' protected rows: queries, pools and the dry run.

The everlasting predictors protect their queries (and the answers to them) as
they protect their training rows. So every piece of user code that meets a
query or a pool row (a teacher that is not stacked, a callable hypothesis, a
user hypothesis class) sees one protected unit at a time: one row for labels
and votes, one teacher's block for an ERM. The reproduction of every test
below is exact: it compares, through a non-private diagnostic, the law of the
answer that the adversary reads in two worlds that differ in one hidden row,
instead of sampling the answers.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier

from skprivpred import PrivacyWarning
from skprivpred.everlasting import GenericBBLClassifier, PrivateEverlastingClassifier
from skprivpred.exceptions import InvalidParameterError
from skprivpred.finite import FiniteHypothesisClass, ThresholdClass

#: The hidden query of the two worlds: a large value in world 1, a small one in world 0.
SECRETS = (0.0, 99.0)


def _calls(secret: float) -> np.ndarray:
    """A call of two rows: the adversary reads row 0's answer; row 1 is the hidden query."""
    return np.array([[0.5], [secret]])


class _BatchStatisticTeacher(ClassifierMixin, BaseEstimator):
    """A teacher whose label depends on the batch it is handed: 1 iff some row exceeds 50."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return np.full(len(X), int(np.max(np.asarray(X, dtype=float)) > 50))


def _batch_statistic(X):
    """A callable hypothesis that labels every row 1 iff some row of the batch exceeds 50."""
    return np.full(len(X), int(np.max(np.asarray(X, dtype=float)) > 50))


def _everlasting(estimator, seed=0, **params):
    rng = np.random.default_rng(7)
    X = rng.random((400, 1))
    y = (X[:, 0] >= 0.3).astype(int)
    params = {"n_teachers": 40, "classes": [0, 1], "random_state": seed, **params}
    return PrivateEverlastingClassifier(estimator, **params).fit(X, y)


def test_a_batch_statistic_teacher_gives_row_zero_the_same_law_in_both_worlds():
    """The law of row 0's answer does not depend on the hidden row 1 (exact diagnostic)."""
    clf = _everlasting(_BatchStatisticTeacher())
    laws = [clf._output_distribution(_calls(secret))[0] for secret in SECRETS]
    votes = [clf._vote_counts(_calls(secret))[0] for secret in SECRETS]
    assert votes == [0, 0]  # row 0 alone: 0.5 is not above 50
    np.testing.assert_array_equal(laws[0], laws[1])
    # ... and the hidden row is still answered by its own value.
    assert clf._vote_counts(_calls(99.0))[1] == 40


def test_a_batch_statistic_teacher_gives_row_zero_the_same_answers_in_both_worlds():
    """With the same seed, row 0's answers are equal draw for draw (one uniform per row)."""
    answers = []
    for secret in SECRETS:
        clf = _everlasting(_BatchStatisticTeacher(), seed=3)
        answers.append([int(clf.predict(_calls(secret))[0]) for _ in range(30)])
    assert answers[0] == answers[1]


class _RecordingKNN(KNeighborsClassifier):
    """A k-NN teacher that records how many rows each answering call is handed."""

    handed: list = []

    def predict(self, X):
        _RecordingKNN.handed.append(len(X))
        return super().predict(X)


def test_a_teacher_answering_through_its_own_predict_sees_one_row_at_a_time(monkeypatch):
    monkeypatch.setattr(_RecordingKNN, "handed", [])
    clf = _everlasting(_RecordingKNN(n_neighbors=1), n_teachers=10)
    _RecordingKNN.handed.clear()
    queries = np.array([[0.1], [0.9], [0.1], [0.5]])
    clf.predict(queries)
    # One row per call; the two identical rows share one evaluation per teacher.
    assert set(_RecordingKNN.handed) == {1}
    assert len(_RecordingKNN.handed) == 10 * 3


def test_stacked_teachers_keep_their_batched_votes():
    """Linear teachers are voted by the library from their coefficients: row-wise already."""
    clf = _everlasting(LogisticRegression(), n_teachers=20)
    ensemble = clf._state["ensemble"]
    assert ensemble._stack is not None and not ensemble._other
    queries = np.linspace(-1, 2, 50).reshape(-1, 1)
    batched = clf._vote_counts(queries)
    one_by_one = np.concatenate([clf._vote_counts(queries[[k]]) for k in range(50)])
    np.testing.assert_array_equal(batched, one_by_one)


def _generic(hypothesis_class, **overrides):
    sizes = {"n_teachers": 10, "teacher_size": 20, "phase_length": 800, **overrides}
    x = np.random.default_rng(1).random(400).reshape(-1, 1)
    clf = GenericBBLClassifier(
        hypothesis_class,
        target_error=0.05,
        failure_probability=0.05,
        constants="simulation",
        random_state=0,
        classes=(0, 1),
        overrides=sizes,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return clf.fit(x, np.zeros(400, dtype=int))


def test_generic_bbl_vote_fraction_on_callables_gives_row_zero_the_same_fraction():
    # Every training label is 0 and the batch statistic labels the training blocks 0: every
    # teacher chooses it (the lowest index among the consistent hypotheses).
    clf = _generic(FiniteHypothesisClass(hypotheses=[_batch_statistic, lambda X: np.ones(len(X))]))
    assert clf._state["teachers"].tolist() == [10, 0]
    fractions = [clf._vote_fraction(_calls(secret)) for secret in SECRETS]
    assert [f[0] for f in fractions] == [0.0, 0.0]
    assert fractions[1][1] == 1.0  # the hidden row is labelled by its own value


# -- the dry run -----------------------------------------------------------------------------


class _Echo(ClassifierMixin, BaseEstimator):
    """Cannot read strings, and says which ones it saw; reads numbers."""

    seen: list = []

    def fit(self, X, y):
        values = [v for v in np.asarray(X, dtype=object).ravel() if isinstance(v, str)]
        _Echo.seen.extend(values)
        if values:
            raise ValueError("cannot read " + ", ".join(sorted(set(values))))
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.zeros(len(X), dtype=int)


def _text_frame(values, n=None):
    values = list(values) if n is None else [values[k % len(values)] for k in range(n)]
    return pd.DataFrame({"colour": values, "size": np.arange(len(values), dtype=float)})


@pytest.mark.parametrize("kind", ["aggregate", "everlasting"])
def test_a_later_call_never_gets_a_refusal_text_computed_from_an_earlier_calls_rows(
    kind, monkeypatch
):
    from skprivpred import SubsampleAggregateClassifier

    monkeypatch.setattr(_Echo, "seen", [])
    X = _text_frame(["red", "blue"], n=200)
    y = np.arange(200) % 2
    if kind == "aggregate":
        clf = SubsampleAggregateClassifier(_Echo(), classes=[0, 1], n_teachers=10).fit(X, y)
    else:
        clf = PrivateEverlastingClassifier(_Echo(), classes=[0, 1], n_teachers=10).fit(X, y)
    messages = []
    for rows in (["secret-one", "red"], ["other", "blue"]):
        with pytest.raises(ValueError, match="cannot read column 'colour'") as info:
            clf.predict(_text_frame(rows))
        messages.append(str(info.value))
    assert "secret-one" not in messages[1]  # nothing of the earlier caller's rows
    assert messages[0] == messages[1]  # the signature decides, never the values
    assert not {"secret-one", "other"} & set(_Echo.seen)  # no query value reached user code


class _Poisoned(_Echo):
    """Reads strings, except the value ``"poison"``."""

    def fit(self, X, y):
        values = {v for v in np.asarray(X, dtype=object).ravel() if isinstance(v, str)}
        if "poison" in values:
            raise ValueError("poisoned")
        self.classes_ = np.unique(y)
        return self


def test_whether_an_everlasting_call_is_refused_does_not_depend_on_a_hidden_query():
    X = _text_frame(["red", "blue"], n=200)
    y = np.arange(200) % 2
    outcomes = []
    for hidden in ("poison", "green"):
        clf = PrivateEverlastingClassifier(_Poisoned(), classes=[0, 1], n_teachers=10)
        clf.fit(X, y)
        try:
            clf.predict(_text_frame(["red", hidden]))
            outcomes.append("answered")
        except ValueError:
            outcomes.append("refused")
    assert outcomes == ["answered", "answered"]


# -- a user hypothesis class -----------------------------------------------------------------


class _WholePools:
    """The old protocol: methods that take whole pools (refused)."""

    n_hypotheses = 2

    def default_vc_dim(self):
        return 1

    def prepare(self, X):
        return np.asarray(X, dtype=float)

    def erm(self, points, labels):
        return np.array([points.shape[0], 0])

    def vote_fraction(self, teachers, points):
        return _batch_statistic(points).astype(float)

    def candidates(self, labelled, labels, unlabelled):
        raise NotImplementedError

    def prior_candidates(self, points, labels):
        raise NotImplementedError


class _Subclassed(FiniteHypothesisClass):
    """A library class with a method of the user's: the library's guarantees do not hold."""

    def labels_on(self, points):
        return np.vstack([_batch_statistic(points)] * len(self.hypotheses)).astype(np.int8)


@pytest.mark.parametrize(
    "make",
    [
        lambda h: GenericBBLClassifier(h, constants="simulation", classes=(0, 1)),
        lambda h: PrivateEverlastingClassifier(LogisticRegression(), n_teachers=10, hypotheses=h),
    ],
)
@pytest.mark.parametrize("hclass", [_WholePools(), _Subclassed(hypotheses=[_batch_statistic])])
def test_a_hypothesis_class_taking_whole_pools_is_refused(make, hclass):
    x = np.random.default_rng(0).random(400).reshape(-1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        with pytest.raises(InvalidParameterError) as info:
            make(hclass).fit(x, (x[:, 0] > 0.3).astype(int))
    message = str(info.value)
    assert "'hypotheses'" in message
    assert type(hclass).__name__ in message
    for allowed in ("ThresholdClass", "FiniteHypothesisClass", "erm_block", "labels_at"):
        assert allowed in message


#: What the row-wise user class below saw: (method, protected units in the call, shape, calls).
SEEN: list = []


class _RowwiseThresholds:
    """``1[x >= t]`` for ``t`` on a public grid, in the row-wise protocol; records what it sees."""

    grid = np.linspace(0.0, 1.0, 11)
    n_hypotheses = 11

    def __init__(self):
        self.calls = 0  # state: every call runs on a copy of its own, so this stays 1

    def erm_block(self, points, labels):
        from skprivpred._teachers._isolation import protected_units_in_call

        self.calls += 1
        SEEN.append(("erm_block", protected_units_in_call(), points.shape, self.calls))
        errors = [np.sum((points[:, 0] >= t).astype(int) != labels) for t in self.grid]
        return int(np.argmin(errors))

    def labels_at(self, point):
        from skprivpred._teachers._isolation import protected_units_in_call

        self.calls += 1
        SEEN.append(("labels_at", protected_units_in_call(), np.shape(point), self.calls))
        if np.max(point) > 50:  # on one row, a batch statistic is the row's own value
            return np.ones(self.n_hypotheses, dtype=int)
        return (point[0] >= self.grid).astype(int)


def test_a_row_wise_hypothesis_class_sees_one_block_per_erm_and_one_row_per_label():
    SEEN.clear()
    clf = _generic(_RowwiseThresholds(), teacher_size=20)
    erm = [s for s in SEEN if s[0] == "erm_block"]
    assert len(erm) == 10  # one call per teacher block
    assert {s[1:] for s in erm} == {(1, (20, 1), 1)}
    SEEN.clear()
    fractions = [clf._vote_fraction(_calls(secret)) for secret in SECRETS]
    assert fractions[0][0] == fractions[1][0]
    assert {s[1:] for s in SEEN} == {(1, (1,), 1)}
    assert clf.predict(np.linspace(0, 1, 801).reshape(-1, 1)).shape == (801,)  # phase 2
    assert clf.phase_ == 2


def test_a_row_wise_hypothesis_class_relabels_the_practical_pools():
    SEEN.clear()
    rng = np.random.default_rng(0)
    X = rng.random((200, 1))
    clf = PrivateEverlastingClassifier(
        LogisticRegression(),
        n_teachers=10,
        phase_length=40,
        hypotheses=_RowwiseThresholds(),
        classes=[0, 1],
        random_state=0,
    ).fit(X, (X[:, 0] >= 0.3).astype(int))
    assert clf.predict(rng.random((50, 1))).shape == (50,) and clf.phase_ == 2
    labels = [s for s in SEEN if s[0] == "labels_at"]
    assert labels and {s[1:] for s in labels} == {(1, (1,), 1)}


@pytest.mark.parametrize("library_class", [ThresholdClass(), FiniteHypothesisClass([[0, 1]])])
def test_the_library_classes_are_accepted(library_class):
    X = np.array([[0.0], [1.0]] * 100)
    y = X[:, 0].astype(int)
    clf = PrivateEverlastingClassifier(
        LogisticRegression(), n_teachers=10, hypotheses=library_class, classes=[0, 1]
    )
    assert clf.fit(X, y).predict(X[:3]).shape == (3,)


def test_the_teacher_payload_cache_never_leaves_in_a_copy():
    # The everlasting predictors cache one cloudpickle payload per teacher for their
    # protected votes; a pickle (or a model file) of the ensemble never holds them.
    import pickle

    from skprivpred._teachers._votes import TeacherEnsemble

    rng = np.random.default_rng(0)
    X = rng.random((40, 2))
    y = (X[:, 0] > 0.5).astype(int)
    teachers = [KNeighborsClassifier(3).fit(X[k::4], y[k::4]) for k in range(4)]
    ensemble = TeacherEnsemble(teachers, np.array([0, 1]))
    votes = ensemble.votes(X[:5], protected=True)
    assert ensemble.__dict__.get("_user_codes")
    copy = pickle.loads(pickle.dumps(ensemble))
    assert "_user_codes" not in copy.__dict__
    np.testing.assert_array_equal(copy.votes(X[:5], protected=True), votes)
