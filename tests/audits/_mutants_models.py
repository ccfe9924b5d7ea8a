"""Mutants of the model-releasing and linear estimators: each one's audit catches it.

For one test only (``monkeypatch``), the estimator's module is patched where it uses a
mechanism (estimator modules import mechanisms by name, so the name is replaced in the
estimator's module) so that the REAL estimator draws its noise for ``factor`` times the
epsilon it claims (``factor = 2``), while it still charges and reports that epsilon. Each
case checks that the patch took effect (the patched estimator's exact law is the law of
``factor * epsilon``; for real-valued releases, a simulated law within a stated Monte Carlo
margin), that ``privacy_guarantee_`` and the accountant's charge are those of epsilon,
computes the exact power of the estimator's own audit against the patched estimator's exact
law on the audited pair (asserted >= 0.99), and runs that audit, which must reject it.

One exception, computed and asserted in its cases: regularized ERM calibrates its noise for
a move of ``4 L X / (lam n)`` while its minimisers move by at most ``2 L X / (lam n)``
(``mean loss + (lam / 2) ||w||^2`` is ``lam``-strongly convex and one replaced row changes
its gradient by at most ``2 L X / n``; the pair of ``_e1_pair`` attains it). Noise for
2 epsilon therefore still spends at most epsilon, and no valid audit can reject it; the ERM
mutants draw noise for 3 epsilon, the smallest integer factor that breaks the claim.

Each ``_case_*`` is one row of the mutant table of ``test_mutants.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _audit_power import detection_power, law_power
from scipy import stats
from sklearn.base import clone
from test_ppm import _exact_released_law, _released
from test_stability import _histogram_event_law, _histogram_release_bound

from skprivpred import (
    ExponentialMechanismClassifier,
    PrivacyAccountant,
    PrivateExpertsClassifier,
    PrivateHalfspacePPMClassifier,
)
from skprivpred.audit import audit_epsilon, clopper_pearson
from skprivpred.density import _histogram as validated_module
from skprivpred.finite import _learners as finite_module
from skprivpred.finite import _ppm as mixtures_module
from skprivpred.linear_model import (
    AveragedPSGDClassifier,
    AveragedPSGDRegressor,
    StableERMClassifier,
    StableERMRegressor,
)
from skprivpred.linear_model import _linear as linear_module
from skprivpred.linear_model._linear import GRID_STEPS
from skprivpred.mechanisms import _closed_forms as mechanisms
from skprivpred.mechanisms import _exact as mechanisms_exact
from skprivpred.model_selection import DPValidatedHistogramDensity

AUDIT_CONFIDENCE = 1 - 1e-6
TARGET_POWER = 0.99
N_SIMULATED = 100_000  # draws of a real release for its simulated law
# E|Z| of the simulated noise: standard error below 0.32% of the mean with N_SIMULATED draws
# (the standard deviation of |Z| is below its mean for a discrete Laplace law), so a 2%
# margin is over six standard errors; the honest law's mean is ``factor`` times larger.
MEAN_NOISE_MARGIN = 0.02
# Total false-alarm level of the refit audits (Bonferroni over their intervals), as in
# tests/finite/test_ppm.py and tests/model_selection/test_stability.py.
REFIT_FALSE_ALARM = 1e-3


# -- linear estimators: Laplace noise on a public grid, labels from its closed form ----------
def _patch_linear(monkeypatch, factor):
    """Noise for ``factor * epsilon`` in every Laplace release of :mod:`skprivpred.linear_model`.

    Real values (``predict`` of the regressors, ``decision_function`` and ``predict_proba``
    of the classifiers) go through ``grid_laplace_release``; labels (``predict`` of the
    classifiers) through ``laplace_positive_proba`` at scale ``sensitivity / epsilon``.
    The charge and ``privacy_guarantee_`` read the fitted epsilon, which is untouched.
    """
    calls = []

    def release(values, sensitivity, epsilon, rng, steps=mechanisms_exact.DEFAULT_GRID_STEPS, **kw):
        calls.append(epsilon)
        return mechanisms_exact.grid_laplace_release(
            values, sensitivity, factor * epsilon, rng, steps=steps, **kw
        )

    def positive_proba(a, b):
        return mechanisms.laplace_positive_proba(a, b / factor)

    monkeypatch.setattr(linear_module, "grid_laplace_release", release)
    monkeypatch.setattr(linear_module, "laplace_positive_proba", positive_proba)
    return calls


def _discrete_laplace_cdf(z, scale):
    """``P(Z <= z)`` for ``P(Z = k)`` proportional to ``exp(-|k| / scale)``."""
    p = math.exp(-1.0 / scale)
    return p ** (-z) / (1 + p) if z < 0 else 1 - p ** (z + 1) / (1 + p)


def _grid_release_bin_law(model, query, edges, epsilon):
    """Exact law of the audit's bins for the grid-Laplace release of ``model`` at ``query``.

    The release is ``c + step * (index + Z)`` with ``step = gamma / GRID_STEPS``, ``index``
    the nearest grid index of the score and ``Z`` discrete Laplace of scale
    ``(GRID_STEPS + 1) / epsilon`` (:func:`skprivpred.mechanisms.grid_laplace_release`);
    the audit puts values below the first inner edge in bin 0 and so on.
    """
    step = model._query_sensitivity(query)[0] / GRID_STEPS
    index = np.rint(model._raw_score(query)[0] / step)
    centre = getattr(model, "_y_centre", 0.0)
    scale = (GRID_STEPS + 1) / epsilon
    below = [
        _discrete_laplace_cdf(math.ceil((e - centre) / step - index) - 1, scale)
        for e in edges[1:-1]
    ]
    cumulative = np.array([0.0, *below, 1.0])
    return dict(enumerate(np.diff(cumulative)))


def _linear_case(monkeypatch, est, data, neighbour, query, method, edges, n_trials, factor=2.0):
    epsilon = float(est.epsilon)
    honest = clone(est).set_params(random_state=0).fit(*data)
    calls = _patch_linear(monkeypatch, factor)
    accountant = PrivacyAccountant(epsilon=1e7)
    mutant = clone(est).set_params(random_state=0, accountant=accountant).fit(*data)
    assert mutant.privacy_guarantee_ == honest.privacy_guarantee_
    assert mutant.privacy_guarantee_.epsilon == epsilon
    sensitivity = mutant._query_sensitivity(query)[0]
    score = mutant._raw_score(query)[0]
    if hasattr(mutant, "decision_function"):  # labels: the exact law is the doubled one
        doubled = [
            mechanisms.laplace_positive_proba(-score, sensitivity / (factor * epsilon)),
            mechanisms.laplace_positive_proba(score, sensitivity / (factor * epsilon)),
        ]
        np.testing.assert_allclose(mutant._output_distribution(query)[0], doubled, rtol=1e-12)
        mutant.predict(query)
        assert accountant.epsilon_spent == pytest.approx(epsilon)
    # Real values: simulated law, mean |noise| in grid steps against the exact one.
    real_method = "decision_function" if hasattr(mutant, "decision_function") else "predict"
    spent = accountant.epsilon_spent
    answers = getattr(mutant, real_method)(np.repeat(query, N_SIMULATED, axis=0))
    assert accountant.epsilon_spent == pytest.approx(spent + N_SIMULATED * epsilon)
    assert calls[-1] == epsilon  # the estimator asked for epsilon; the patch drew for more
    step = sensitivity / GRID_STEPS
    noise = np.rint((answers - getattr(mutant, "_y_centre", 0.0)) / step) - np.rint(score / step)
    p = math.exp(-factor * epsilon / (GRID_STEPS + 1))
    assert np.mean(np.abs(noise)) == pytest.approx(2 * p / (1 - p * p), rel=MEAN_NOISE_MARGIN)

    # Exact power of the audit against the patched estimator's exact law on this pair.
    fits = [clone(est).set_params(random_state=0).fit(*d) for d in (data, neighbour)]
    if method == "predict" and edges is None:
        laws = [dict(enumerate(f._output_distribution(query)[0])) for f in fits]
        n_outcomes = 2
    else:
        laws = [_grid_release_bin_law(f, query, edges, factor * epsilon) for f in fits]
        n_outcomes = len(edges) - 1
    alpha_each = (1 - AUDIT_CONFIDENCE) / (2 * n_outcomes)  # audit_epsilon's Bonferroni level
    assert law_power(n_trials, *laws, epsilon, alpha_each) >= TARGET_POWER
    report = audit_epsilon(
        est,
        *data,
        *neighbour,
        query,
        n_trials=n_trials,
        method=method,
        confidence=AUDIT_CONFIDENCE,
        bins=edges,
        random_state=0,
    )
    assert not report.passed, str(report)


def _e1_pair(n, labels):
    """``n`` rows: row 0 is ``e1`` with label ``labels[0]`` (``labels[1]`` in the neighbour),
    every other row ``e2`` with label 0 (regression) or alternating labels (classification),
    so that only row 0 moves the ``e1`` coefficient: the extremal pair of both stability
    proofs (Dwork & Feldman 2018, Theorems 4.9 and 4.12)."""
    X = np.tile([0.0, 1.0], (n, 1))
    X[0] = [1.0, 0.0]
    classification = isinstance(labels[0], int)
    y = np.arange(n) % 2 if classification else np.zeros(n)
    y[0] = labels[0]
    y2 = y.copy()
    y2[0] = labels[1]
    return (X, y), (X, y2)


QUERY = np.array([[1.0, 0.0]])
_LINEAR_PARAMS = dict(feature_norm_bound=1.0, fit_intercept=False, random_state=0)


def _lower_tail_edges(est, neighbour, factor, width=5.0):
    """Two bins split one noise scale (of the mutant) below the smaller mean."""
    low = clone(est).fit(*neighbour)
    mean = low._raw_score(QUERY)[0] + getattr(low, "_y_centre", 0.0)
    return [-width, mean - low.noise_scale_ / factor, width]


def _case_averaged_psgd_regressor(monkeypatch):
    """Audit: the PSGD counterexample (moves 0.998 of the sensitivity), lower-tail bins."""
    est = AveragedPSGDRegressor(loss="huber", radius=1.0, shuffle=False, **_LINEAR_PARAMS)
    data, neighbour = _e1_pair(400, (1.0, -1.0))
    edges = _lower_tail_edges(est, neighbour, 2.0)
    _linear_case(monkeypatch, est, data, neighbour, QUERY, "predict", edges, 20_000)


def _case_averaged_psgd_classifier(monkeypatch):
    """Audit: labels on the counterexample with labels (moves 0.99 of the sensitivity)."""
    est = AveragedPSGDClassifier(
        loss="huberized_hinge", radius=1.0, shuffle=False, classes=[0, 1], **_LINEAR_PARAMS
    )
    data, neighbour = _e1_pair(400, (1, 0))
    _linear_case(monkeypatch, est, data, neighbour, QUERY, "predict", None, 5_000)


def _erm_factor_two_spends_at_most_epsilon(est, data, neighbour):
    """Exact largest log-ratio of the 2-epsilon ERM release on the extremal pair: <= epsilon.

    Both releases are discrete Laplace of scale ``(GRID_STEPS + 1) / (2 epsilon)`` around
    grid indices ``d`` apart; the largest log-ratio of any event is ``2 epsilon d /
    (GRID_STEPS + 1)``.
    """
    a, b = (clone(est).fit(*d) for d in (data, neighbour))
    step = a._query_sensitivity(QUERY)[0] / GRID_STEPS
    d = abs(np.rint(a._raw_score(QUERY)[0] / step) - np.rint(b._raw_score(QUERY)[0] / step))
    worst = 2 * est.epsilon * d / (GRID_STEPS + 1)
    assert 0.9 * est.epsilon < worst <= est.epsilon
    return worst


def _case_stable_erm_regressor(monkeypatch):
    """Audit: the extremal pair (Huber loss in its linear zone), lower-tail bins, 3 epsilon."""
    est = StableERMRegressor(loss="huber", lam=0.05, **_LINEAR_PARAMS)
    data, neighbour = _e1_pair(200, (5.0, -5.0))
    _erm_factor_two_spends_at_most_epsilon(est, data, neighbour)
    edges = _lower_tail_edges(est, neighbour, 3.0)
    _linear_case(monkeypatch, est, data, neighbour, QUERY, "predict", edges, 20_000, factor=3.0)


def _case_stable_erm_classifier(monkeypatch):
    """Audit: ``decision_function`` on the extremal pair with labels, 3 epsilon."""
    est = StableERMClassifier(loss="huberized_hinge", lam=0.05, classes=[0, 1], **_LINEAR_PARAMS)
    data, neighbour = _e1_pair(200, (1, 0))
    _erm_factor_two_spends_at_most_epsilon(est, data, neighbour)
    edges = _lower_tail_edges(est, neighbour, 3.0)
    _linear_case(
        monkeypatch, est, data, neighbour, QUERY, "decision_function", edges, 20_000, factor=3.0
    )


# -- exponential-mechanism learners: the hypothesis is the release ---------------------------------
def _squared_law(law):
    """The exponential mechanism's law at twice the epsilon: ``p^2 / sum p^2``.

    Weights ``exp(-epsilon u / 2)`` squared are ``exp(-2 epsilon u / 2)``: doubling epsilon
    squares each probability up to normalisation, whatever the (secret) utilities.
    """
    law = np.asarray(law, dtype=float) ** 2
    return law / law.sum()


def _refit_bound(make, data, neighbour, release, n_fits, alpha_total, fit=None):
    """Lower confidence bound on ``max |ln P(o) / P'(o)|`` from ``n_fits`` refits per data set.

    Distinct integer seeds (fresh fit and release streams) on each data set; Clopper-Pearson
    intervals at level ``alpha_total / (2 * number of outcomes)`` each (Bonferroni): the
    audit of ``release_epsilon_lower_bound`` in ``tests/finite/test_learners.py``. ``fit(model, d)``
    fits a model on one data set (default ``model.fit(*d)``).
    """
    fit = fit or (lambda model, d: model.fit(*d))
    runs = [
        [release(fit(make(seed), d)) for seed in range(k * n_fits, (k + 1) * n_fits)]
        for k, d in enumerate((data, neighbour))
    ]
    outcomes = sorted(set(runs[0]) | set(runs[1]))
    counts = [np.array([run.count(o) for o in outcomes]) for run in runs]
    alpha = alpha_total / (2 * len(outcomes))
    (lo1, hi1), (lo2, hi2) = (
        clopper_pearson(c, n_fits, confidence_level=1 - alpha) for c in counts
    )
    with np.errstate(divide="ignore"):
        bound = np.maximum(np.log(lo1) - np.log(hi2), np.log(lo2) - np.log(hi1))
    return float(np.max(bound)), counts, outcomes


def _patch_fewest_mistakes(monkeypatch, module, factor=2.0):
    """The module's exponential-mechanism sampler and its exact law at ``factor * epsilon``."""
    calls = []

    def sample(mistakes, epsilon, rng):
        calls.append(epsilon)
        return mechanisms.sample_fewest_mistakes(mistakes, factor * epsilon, rng)

    monkeypatch.setattr(module, "sample_fewest_mistakes", sample)
    return calls


def _case_exponential_mechanism(monkeypatch):
    """Audit: refits on the pair of ``test_learners._audit_pair`` (a tie in the neighbour)."""
    X = np.zeros((4, 1), dtype=int)
    y = np.array([0, 0, 0, 1])
    y2 = y.copy()
    y2[0] = 1
    data, neighbour = (X, y), (X, y2)
    # 850 fits per data set: the smallest multiple of 50 with exact power >= 0.99 against
    # the doubled law (0.5 against 0.018 for the constant hypothesis), asserted below.
    epsilon, n_fits = 2.0, 850

    def make(seed, accountant=None):
        return ExponentialMechanismClassifier(
            epsilon=epsilon, classes=[0, 1], random_state=seed, accountant=accountant
        )

    honest = [make(0)._selection_proba(*d) for d in (data, neighbour)]
    calls = _patch_fewest_mistakes(monkeypatch, finite_module)
    monkeypatch.setattr(
        finite_module,
        "exponential_mechanism_proba",
        lambda scores, eps, *a: mechanisms.exponential_mechanism_proba(scores, 2 * eps, *a),
    )
    laws = [make(0)._selection_proba(*d) for d in (data, neighbour)]
    for law, honest_law in zip(laws, honest):
        np.testing.assert_allclose(law, _squared_law(honest_law), rtol=1e-12)
    accountant = PrivacyAccountant(epsilon=10.0)
    mutant = make(0, accountant).fit(*data)
    assert calls == [epsilon]  # the estimator asked for epsilon; the patch drew for 2 epsilon
    assert accountant.epsilon_spent == epsilon == mutant.privacy_guarantee_.epsilon

    alpha_total = REFIT_FALSE_ALARM
    exact = [dict(enumerate(law)) for law in laws]
    assert law_power(n_fits, *exact, epsilon, alpha_total / 4) >= TARGET_POWER
    assert law_power(n_fits - 50, *exact, epsilon, alpha_total / 4) < TARGET_POWER
    bound, counts, outcomes = _refit_bound(
        make, data, neighbour, lambda clf: len(clf.selected_features_), n_fits, alpha_total
    )
    assert bound > epsilon


def _always_one(X):
    return np.ones(len(X), dtype=int)


def _always_zero(X):
    return np.zeros(len(X), dtype=int)


def _case_private_experts(monkeypatch):
    """Audit: ``predict`` on the stream of ``test_learners`` (always_one 4 rewards ahead on D, 2
    on D'). Both releases use ``mw_round_proba``: the patch doubles the rate of every round
    of the run (``chosen_experts_``) and of every query; the query audit sees the queries."""
    X = np.zeros((4, 1))
    y = np.ones(4, dtype=int)
    y2 = y.copy()
    y2[0] = 0
    epsilon = 4.0  # four rounds: rate a = 0.5, each query 2a = 1

    def make(accountant=None):
        return PrivateExpertsClassifier(
            [_always_one, _always_zero],
            epsilon=epsilon,
            classes=[0, 1],
            random_state=0,
            accountant=accountant,
        )

    honest = make().fit(X, y)
    honest_rounds, honest_query = honest._round_proba(X, y), honest._selection_proba()
    round_proba = finite_module.mw_round_proba
    monkeypatch.setattr(
        finite_module,
        "mw_round_proba",
        lambda rewards, rate, initial=None: round_proba(rewards, 2 * rate, initial=initial),
    )
    accountant = PrivacyAccountant(epsilon=100.0)
    mutant = make(accountant).fit(X, y)
    assert mutant.privacy_guarantee_ == honest.privacy_guarantee_
    assert mutant.privacy_guarantee_.epsilon == 2 * mutant.learning_rate_ == 1.0
    for law, honest_law in zip(mutant._round_proba(X, y), honest_rounds):  # the run
        np.testing.assert_allclose(law, _squared_law(honest_law), rtol=1e-12)
    law = mutant._selection_proba()  # a query: weights exp(2a * cumulative rewards (4, 0))
    np.testing.assert_allclose(law, [1 / (1 + math.exp(-4.0)), 1 / (1 + math.exp(4.0))])
    np.testing.assert_allclose(law, _squared_law(honest_query), rtol=1e-12)
    assert accountant.epsilon_spent == pytest.approx(epsilon)
    mutant.predict(X[:3])
    assert accountant.epsilon_spent == pytest.approx(epsilon + 3 * 1.0)

    # Labels: 1 when always_one answers. The doubled law gives label 0 with probability
    # 0.018 on D and 0.119 on D' (log-ratio 1.89 > 1).
    fits = [make().fit(*d) for d in ((X, y), (X, y2))]
    laws = [{1: f._selection_proba()[0], 0: f._selection_proba()[1]} for f in fits]
    n_trials = 6_000  # exact power 0.9989 (5,000: 0.983)
    alpha_each = (1 - AUDIT_CONFIDENCE) / (2 * 2)
    assert law_power(n_trials, *laws, 1.0, alpha_each) >= TARGET_POWER
    report = audit_epsilon(
        make(), X, y, X, y2, X[:1], n_trials=n_trials, confidence=AUDIT_CONFIDENCE, random_state=0
    )
    assert report.claimed_epsilon == pytest.approx(1.0)
    assert not report.passed, str(report)


def _case_halfspace_ppm(monkeypatch):
    """Audit: refits, released hypothesis as outcome, on a pair found by a search over small
    one-dimensional pairs with the exact laws (2 public, 3 private rows; the last private
    row (3.1, 0) becomes (2.6, 1)). The doubled law puts 0.0156 on D and 0.4566 on D' on
    the released threshold at -2 (log-ratio 3.37 > 2); the estimator's, 0.081 and 0.361."""
    x = np.array([0.0, 2.0, -3.2, 0.7, 3.1])
    is_public = np.arange(5) < 2
    y = np.array([0, 0, 1, 0, 0])
    X2, y2 = x[:, None].copy(), y.copy()
    X2[-1], y2[-1] = 2.6, 1
    data, neighbour = (x[:, None], y, is_public), (X2, y2, is_public)
    # 950 fits per data set: exact power 0.991 (900: 0.984), asserted below.
    epsilon, n_fits = 2.0, 950

    def make(seed, accountant=None):
        return PrivateHalfspacePPMClassifier(
            epsilon=epsilon, candidate_strategy="exact", random_state=seed, accountant=accountant
        )

    doubled = [
        _exact_released_law(PrivateHalfspacePPMClassifier, d, 2 * epsilon)
        for d in (data, neighbour)
    ]
    honest_log_law, _ = make(0)._selection_log_proba(*data)
    calls = _patch_fewest_mistakes(monkeypatch, mixtures_module)
    monkeypatch.setattr(
        mixtures_module,
        "fewest_mistakes_log_proba",
        lambda mistakes, eps: mechanisms.fewest_mistakes_log_proba(mistakes, 2 * eps),
    )
    log_law, _ = make(0)._selection_log_proba(*data)
    np.testing.assert_allclose(np.exp(log_law), _squared_law(np.exp(honest_log_law)), rtol=1e-10)
    laws = [
        _exact_released_law(PrivateHalfspacePPMClassifier, d, epsilon) for d in (data, neighbour)
    ]
    for law, expected in zip(laws, doubled):
        assert law.keys() == expected.keys()
        np.testing.assert_allclose([law[o] for o in expected], list(expected.values()), rtol=1e-10)
    accountant = PrivacyAccountant(epsilon=10.0)
    X, y, is_public = data
    mutant = make(0, accountant).fit(X, y, is_public=is_public)
    assert calls == [epsilon]
    assert accountant.epsilon_spent == epsilon == mutant.privacy_guarantee_.epsilon

    alpha_each = REFIT_FALSE_ALARM / (2 * len(set(laws[0]) | set(laws[1])))
    assert law_power(n_fits, *laws, epsilon, alpha_each) >= TARGET_POWER
    assert law_power(n_fits - 50, *laws, epsilon, alpha_each) < TARGET_POWER

    bound, _, outcomes = _refit_bound(
        make,
        data,
        neighbour,
        _released,
        n_fits,
        REFIT_FALSE_ALARM,
        fit=lambda model, d: model.fit(d[0], d[1], is_public=d[2]),
    )
    assert set(outcomes) <= set(laws[0]) | set(laws[1])
    assert bound > epsilon


# -- privately validated estimators: selection and retrained model, one release -------------------
def _case_histogram_density(monkeypatch):
    """Audit: the released histogram on the pair of ``test_stability`` (D: 150 rows in bin 0,
    250 in bin 3; D' moves row 0 to bin 3), event ``{n~_0 <= 148 and n~_3 >= 251}``.

    The patch doubles epsilon in both parts of the release: the histograms (training noise
    ``2 / (2 epsilon_train)``) and the report-noisy-max selection. With a one-value grid the
    selection is trivial, so this audit sees the histogram only. ``epsilon = 2`` with
    ``epsilon_split = 0.99`` puts the honest event's log-ratio at 1.975 (claim 2): the pair
    is at the worst case of the histogram; the doubled noise reaches 3.95.
    """
    epsilon, split, n_fits = 2.0, 0.99, 900
    kwargs = dict(
        epsilon=epsilon,
        epsilon_split=split,
        n_bins_grid=(4,),
        validation_size=1 / 400,
        delta=0.01,
    )
    x = np.repeat([0.1, 0.9], [150, 250])[:, None]
    x2 = x.copy()
    x2[0] = 0.9
    honest_law = _histogram_event_law(2.0, epsilon * split)
    doubled_law = _histogram_event_law(1.0, epsilon * split)
    assert math.log(honest_law[1] / honest_law[0]) == pytest.approx(1.975, abs=1e-3)
    p, q = doubled_law
    # 900 fits per data set: exact power 0.9906 (850: 0.982), asserted.
    alpha = REFIT_FALSE_ALARM / 4
    assert detection_power(n_fits, q, None, epsilon, alpha, q=p) >= TARGET_POWER
    assert detection_power(n_fits - 50, q, None, epsilon, alpha, q=p) < TARGET_POWER

    calls = []
    noisy_histogram, noisy_max_sample = (
        validated_module._noisy_histogram,
        mechanisms.noisy_max_sample,
    )

    def histogram(u, n_bins, eps, rng):
        calls.append(eps)
        return noisy_histogram(u, n_bins, 2 * eps, rng)

    monkeypatch.setattr(validated_module, "_noisy_histogram", histogram)
    monkeypatch.setattr(
        validated_module,
        "noisy_max_sample",
        lambda scores, eps, sensitivity, rng: noisy_max_sample(scores, 2 * eps, sensitivity, rng),
    )
    accountant = PrivacyAccountant(epsilon=10.0, delta=0.1)
    mutant = DPValidatedHistogramDensity(random_state=0, accountant=accountant, **kwargs).fit(x)
    assert calls == [epsilon * split, epsilon * split]  # the candidate and the final histogram
    assert accountant.epsilon_spent == epsilon == mutant.privacy_guarantee_.epsilon

    hits = []
    for k, data in enumerate((x, x2)):
        counts = np.array(
            [
                DPValidatedHistogramDensity(random_state=seed, **kwargs).fit(data).noisy_counts_
                for seed in range(k * n_fits, (k + 1) * n_fits)
            ]
        )
        hits.append(int(np.sum((counts[:, 0] <= 148) & (counts[:, 3] >= 251))))
    # The simulated law is the doubled one (binomial tests at the audit's level).
    for h, prob in zip(hits, doubled_law):
        assert stats.binomtest(h, n_fits, prob).pvalue > alpha
    assert _histogram_release_bound(hits, n_fits) > epsilon
