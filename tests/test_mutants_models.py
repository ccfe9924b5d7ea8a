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
its gradient by at most ``2 L X / n``; the pair of ``_erm_pair`` attains it). Noise for
2 epsilon therefore still spends at most epsilon, and no valid audit can reject it; the ERM
mutants draw noise for 3 epsilon, the smallest integer factor that breaks the claim.

``MUTANT_CLASSES`` names the classes covered here; ``tests/test_mutants_complete.py`` checks
that the mutant files together cover every public estimator.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _audit_power import law_power
from sklearn.base import clone

from skprivpred import PrivacyAccountant, mechanisms
from skprivpred import linear as linear_module
from skprivpred.audit import audit_epsilon
from skprivpred.linear import (
    GRID_STEPS,
    AveragedPSGDClassifier,
    AveragedPSGDRegressor,
    StableERMClassifier,
    StableERMRegressor,
)

AUDIT_CONFIDENCE = 1 - 1e-6
TARGET_POWER = 0.99
N_SIMULATED = 100_000  # draws of a real release for its simulated law
# E|Z| of the simulated noise: standard error below 0.32% of the mean with N_SIMULATED draws
# (the standard deviation of |Z| is below its mean for a discrete Laplace law), so a 2%
# margin is over six standard errors; the honest law's mean is ``factor`` times larger.
MEAN_NOISE_MARGIN = 0.02

MUTANT_CLASSES = frozenset(
    {
        "AveragedPSGDClassifier",
        "AveragedPSGDRegressor",
        "StableERMClassifier",
        "StableERMRegressor",
    }
)


# -- linear estimators: Laplace noise on a public grid, labels from its closed form ----------
def _patch_linear(monkeypatch, factor):
    """Noise for ``factor * epsilon`` in every Laplace release of :mod:`skprivpred.linear`.

    Real values (``predict`` of the regressors, ``decision_function`` and ``predict_proba``
    of the classifiers) go through ``grid_laplace_release``; labels (``predict`` of the
    classifiers) through ``laplace_positive_proba`` at scale ``sensitivity / epsilon``.
    The charge and ``privacy_guarantee_`` read the fitted epsilon, which is untouched.
    """
    calls = []

    def release(values, sensitivity, epsilon, rng, steps=mechanisms.DEFAULT_GRID_STEPS, **kw):
        calls.append(epsilon)
        return mechanisms.grid_laplace_release(
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


_CASES = {
    "AveragedPSGDClassifier": _case_averaged_psgd_classifier,
    "AveragedPSGDRegressor": _case_averaged_psgd_regressor,
    "StableERMClassifier": _case_stable_erm_classifier,
    "StableERMRegressor": _case_stable_erm_regressor,
}


@pytest.mark.mutant
@pytest.mark.filterwarnings("ignore::skprivpred.PrivacyWarning")
@pytest.mark.parametrize("name", sorted(MUTANT_CLASSES))
def test_mutant_is_caught(name, monkeypatch):
    _CASES[name](monkeypatch)
