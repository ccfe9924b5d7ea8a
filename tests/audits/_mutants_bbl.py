"""Mutant of GenericBBLClassifier: its LabelBoost drawn for twice its epsilon is caught.

GenericBBL makes three kinds of release: the BetweenThresholds answers of each phase, the
privacy-amplifying sub-samples, and LabelBoost's exponential mechanism at the end of a phase
(epsilon 1, score sensitivity 1; Naor, Nissim, Stemmer & Yan 2023, Lemma C.1). The mutant
doubles LabelBoost's epsilon where ``label_boost`` reads it (``LABELBOOST_EPSILON`` of
``skprivpred.everlasting``), so the REAL estimator's phase change draws the relabelling
dichotomy for epsilon 2 while the estimator still states and charges what it did.

The BetweenThresholds answers carry no mutant here: inside a phase the paper-mode predictor
already fails its own Figure-1 audit (the known gap of Claim E.6, documented and asserted
in ``tests/everlasting/test_everlasting_privacy.py``), so no audit of those answers could
tell a doubled epsilon from the honest estimator.

The audit plays the real estimator's phase change (``_next_phase``) on two labelled pools
``Shat`` that differ in the label of one row, on a pool of unlabelled queries ``Dhat`` that
holds copies of that row's point: the next phase's pool shows which label the drawn
dichotomy gives it. The pair is near the worst case of the exponential mechanism: the point
is the leftmost of the pool, so one dichotomy labels it 1 and every other labels it 0.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _audit_power import law_power
from test_everlasting_privacy import AUDIT_ALPHA, audit_game

from skprivpred import GenericBBLClassifier, PrivacyAccountant
from skprivpred.everlasting import _relabel as everlasting
from skprivpred.everlasting import labelboost_law
from skprivpred.exceptions import InsufficientSampleError
from skprivpred.mechanisms import exponential_mechanism_proba, exponential_mechanism_sample

TARGET_POWER = 0.99
#: Paper mode with sizes small enough to fit in a test; Lemma C.3's gap condition holds.
OVERRIDES = {
    "n_teachers": 3000,
    "teacher_size": 1,
    "top_budget": 1,
    "threshold_gap": 0.5,
    "phase_length": 500_000,
}
PARAMS = dict(
    epsilon=1.0,
    delta=0.05,
    target_error=0.05,
    failure_probability=0.05,
    overrides=OVERRIDES,
    classes=(0, 1),
)
#: The audited row's point (leftmost), and the other points of the unlabelled pool.
POINT, OTHERS = 0.05, np.linspace(0.2, 0.9, 4)
N_GAMES = 2_000


def _fitted(accountant=None) -> GenericBBLClassifier:
    rng = np.random.default_rng(0)
    with pytest.raises(InsufficientSampleError) as too_small:
        GenericBBLClassifier(**PARAMS).fit(rng.random((10, 1)), np.zeros(10, dtype=int))
    x = rng.random(too_small.value.required_samples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the integer seed's PrivacyWarning
        return GenericBBLClassifier(random_state=0, accountant=accountant, **PARAMS).fit(
            x.reshape(-1, 1), (x >= 0.5).astype(int)
        )


def _pools(clf):
    """``Shat`` (every row at the audited point; labels of both worlds) and ``Dhat``."""
    params = clf._state["params"]
    n_labelled, n_unlabelled = params.labelled_size, params.unlabelled_size
    ones = n_labelled // 2
    labels = [
        np.r_[np.ones(ones), np.zeros(n_labelled - ones)].astype(np.intp),
        np.r_[np.ones(ones + 1), np.zeros(n_labelled - ones - 1)].astype(np.intp),
    ]
    labelled = clf._hclass.prepare(np.full((n_labelled, 1), POINT))
    values = np.resize(np.r_[POINT, OTHERS], n_unlabelled)
    unlabelled = clf._hclass.prepare(values.reshape(-1, 1))
    return labelled, labels, unlabelled


def _label_of_point_law(clf, labelled, labels, unlabelled, epsilon):
    """Exact probability that the drawn dichotomy labels the audited point 1."""
    errors, _ = labelboost_law(clf._hclass, labelled, labels, unlabelled)
    found = clf._hclass.candidates(labelled, labels.astype(float), unlabelled)
    proba = exponential_mechanism_proba(-errors, epsilon)
    on_point = np.array([found.labels_of(k)[0][0] for k in range(errors.size)])  # Shat: the point
    return float(proba[on_point == 1].sum())


def labelboost_mutant(monkeypatch):
    clf = _fitted()
    honest_guarantee = clf.privacy_guarantee_
    labelled, labels, unlabelled = _pools(clf)
    honest = [
        _label_of_point_law(clf, labelled, y, unlabelled, everlasting.LABELBOOST_EPSILON)
        for y in labels
    ]
    doubled = [
        _label_of_point_law(clf, labelled, y, unlabelled, 2 * everlasting.LABELBOOST_EPSILON)
        for y in labels
    ]
    # The honest pair loses less than LabelBoost's epsilon; the doubled one far more.
    assert np.log(honest[1] / honest[0]) < everlasting.LABELBOOST_EPSILON
    assert np.log(doubled[1] / doubled[0]) > 1.5 * everlasting.LABELBOOST_EPSILON

    captured = []
    clf._start_phase = lambda params, X, y, rng: captured.append((X, y))  # keep phase 1

    def play(b, seed):
        """The real phase change on world ``b``'s pools; the view is the point's new label."""
        state = clf._state
        state["labelled_points"], state["labelled_labels"] = labelled, labels[b]
        state["kept_queries"] = [unlabelled]
        clf._query_stream.rng = np.random.default_rng(seed)
        clf._next_phase()
        points, new_labels = captured.pop()
        at_point = new_labels[points == labelled[0]]
        return (int(at_point[0]) if at_point.size else -1,)

    event = [lambda view: view[0] == 1]
    # The honest estimator passes the same audit (the pair loses less than epsilon 1).
    honest_audit = audit_game(play, event, ["point labelled 1"], n_games=N_GAMES, delta=0.0)
    assert not honest_audit.refutes(1.0), honest_audit

    monkeypatch.setattr(everlasting, "LABELBOOST_EPSILON", 2 * everlasting.LABELBOOST_EPSILON)
    # The estimator still states and charges what it did: its guarantee and its per-row charge.
    accountant = PrivacyAccountant(delta=0.5, ledger=":memory:")
    patched = _fitted(accountant)
    assert patched.privacy_guarantee_ == honest_guarantee
    patched.predict(np.full(20, 0.9))  # far from the threshold: no TOP
    bt_epsilon = patched.phase_schedule_[0]["bt_epsilon"]
    assert accountant.epsilon_spent == pytest.approx(20 * bt_epsilon, rel=1e-12)

    # The patch took effect: seed for seed, the draw is the exponential mechanism at 2.
    errors, _ = labelboost_law(clf._hclass, labelled, labels[1], unlabelled)
    found = clf._hclass.candidates(labelled, labels[1].astype(float), unlabelled)
    for seed in range(20):
        rng = np.random.default_rng(seed)
        choice = exponential_mechanism_sample(-errors, 2 * 1.0, rng)[0]
        assert play(1, seed) == (int(found.labels_of(choice)[0][0]),)

    alpha = AUDIT_ALPHA / 2  # one event and its complement, Bonferroni in audit_game
    laws = [{1: p, 0: 1.0 - p} for p in doubled]
    assert law_power(N_GAMES, *laws, 1.0, alpha) >= TARGET_POWER
    audit = audit_game(play, event, ["point labelled 1"], n_games=N_GAMES, delta=0.0)
    assert audit.refutes(1.0), audit
