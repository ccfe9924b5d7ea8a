"""Mutants of the sufficient-statistic estimators: the refit audit catches each one.

For one test only (``monkeypatch``), :mod:`skprivpred.linear_model` is patched where it uses the
noise sampler (``discrete_gaussian_noise``, imported by name into the module) so that the REAL
estimator draws its discrete Gaussian noise at half the scale (``rho`` four times larger: the
noise of a release at about twice the epsilon), while it still charges and reports the
claimed ``(epsilon, delta, rho)``. Each case checks that the patch took effect (the released
noise's spread is half the honest one, within a stated Monte Carlo margin), that
``privacy_guarantee_`` and the accountant's charge are the claimed ones, computes the exact
power of the audit of ``tests/linear_model/test_sufficient.py`` against the patched law on the
audited pair (asserted >= 0.99), and runs that audit, which must reject it.

The audit (refits on the extremal pair of ``tests/linear_model/test_sufficient.py``, the event
``{u . (index - index(D')) > 0.6 sigma}``) tests the honest mechanism's exact log-ratio on
that event; the patched release, at ``epsilon = 4, delta = 1e-6``, has a true ``delta`` of
about 0.015 at ``epsilon = 4`` (the Gaussian mechanism's privacy profile at twice the shift
over scale), far above the claimed 1e-6.

Each ``_case_*`` is one row of the mutant table of ``test_mutants.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _audit_power import detection_power
from scipy import stats
from test_sufficient import (
    AUDIT_DELTA,
    AUDIT_EPSILON,
    AUDIT_FALSE_ALARM,
    AUDIT_FITS,
    AUDIT_T,
    AUDIT_X,
    AUDIT_Y,
    audit_bound,
    audit_setup,
    event_counts,
    honest_event_log_ratio,
    make_audited,
)

from skprivpred import PrivacyAccountant, SufficientStatisticRegressor
from skprivpred.linear_model import _sufficient as sufficient_module
from skprivpred.mechanisms import _exact as mechanisms

TARGET_POWER = 0.99
# Standard deviation of the released noise over 2,000 coordinates: its relative standard
# error is about 1.6 %; a 10 % margin is six standard errors, and the honest value is twice
# the patched one.
SPREAD_MARGIN = 0.10


def _patch_half_noise(monkeypatch):
    """Discrete Gaussian noise at half the scale the estimator asks for (rho x 4)."""
    calls = []

    def noise(sigma, rng, size=None):
        calls.append(sigma)
        return mechanisms.discrete_gaussian_noise(sigma / 2.0, rng, size=size)

    monkeypatch.setattr(sufficient_module, "discrete_gaussian_noise", noise)
    return calls


def _mutant_power(mu):
    """Exact power of the audit against the half-noise release (two intervals, Bonferroni)."""
    claimed = honest_event_log_ratio(mu)
    p_mutant = stats.norm.sf(2 * AUDIT_T - 2 * mu)
    q_mutant = stats.norm.sf(2 * AUDIT_T)
    return lambda n: detection_power(n, p_mutant, None, claimed, AUDIT_FALSE_ALARM / 2, q=q_mutant)


def _case_classifier(monkeypatch):
    setup = audit_setup(make_audited)
    claimed = honest_event_log_ratio(setup["mu"])
    honest = make_audited(0).fit(AUDIT_X, AUDIT_Y)
    calls = _patch_half_noise(monkeypatch)
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    mutant = make_audited(0, accountant).fit(AUDIT_X, AUDIT_Y)
    assert calls == [pytest.approx(setup["sigma"])]  # asked for the honest scale
    assert mutant.privacy_guarantee_ == honest.privacy_guarantee_
    assert accountant.epsilon_spent == AUDIT_EPSILON == mutant.privacy_guarantee_.epsilon
    assert accountant.delta_spent == AUDIT_DELTA
    # The patch took effect: the noise of the fitted release has half the honest spread.
    step = setup["plan"]["step"]
    noise = np.concatenate(
        [
            np.rint(make_audited(seed).fit(AUDIT_X, AUDIT_Y)._released_statistic / step)
            - setup["index"]
            for seed in range(700)
        ]
    )
    assert abs(noise.std() / (setup["sigma"] / 2) - 1) < SPREAD_MARGIN

    power = _mutant_power(setup["mu"])
    assert power(AUDIT_FITS) >= TARGET_POWER
    hits = event_counts(make_audited, setup, AUDIT_FITS, seed0=10_000)
    assert audit_bound(hits, AUDIT_FITS) > claimed


def _case_regressor(monkeypatch):
    """The same audit on the regressor: the target of row 10 moves from one bound to the other."""
    y = np.r_[[np.nan] * 10, [1.0, -1.0, 1.0, -1.0, 1.0, -1.0]]
    y2 = y.copy()
    y2[10] = -1.0

    def make(seed, accountant=None):
        return SufficientStatisticRegressor(
            y_bounds=(-1.0, 1.0),
            epsilon=AUDIT_EPSILON,
            delta=AUDIT_DELTA,
            random_state=seed,
            accountant=accountant,
        )

    est = make(0)
    s1, plan = est._exact_statistic(AUDIT_X, y)
    s2, _ = est._exact_statistic(AUDIT_X, y2)
    index1, index2 = np.rint(s1 / plan["step"]), np.rint(s2 / plan["step"])
    m = index1 - index2
    u, sigma = m / np.linalg.norm(m), plan["sigma_int"]
    mu = float(np.linalg.norm(m) / sigma)
    claimed = honest_event_log_ratio(mu)
    power = _mutant_power(mu)
    assert power(AUDIT_FITS) >= TARGET_POWER

    calls = _patch_half_noise(monkeypatch)
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    mutant = make(0, accountant).fit(AUDIT_X, y)
    assert calls == [pytest.approx(sigma)]
    assert accountant.epsilon_spent == AUDIT_EPSILON == mutant.privacy_guarantee_.epsilon
    noise = np.concatenate(
        [
            np.rint(make(seed).fit(AUDIT_X, y)._released_statistic / plan["step"]) - index1
            for seed in range(700)
        ]
    )
    assert abs(noise.std() / (sigma / 2) - 1) < SPREAD_MARGIN

    hits = []
    for k, target in enumerate((y, y2)):
        count = 0
        for seed in range(10_000 + k * AUDIT_FITS, 10_000 + (k + 1) * AUDIT_FITS):
            released = np.rint(make(seed).fit(AUDIT_X, target)._released_statistic / plan["step"])
            count += int(u @ (released - index2) > AUDIT_T * sigma)
        hits.append(count)
    assert audit_bound(hits, AUDIT_FITS) > claimed
