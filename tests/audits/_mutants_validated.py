"""Mutant of DPValidatedLogisticRegression: its released model drawn for 3 epsilon is caught.

The estimator makes one release in ``fit``: the selected ``lam`` (report-noisy-max) and the
coefficients retrained with fresh noise. The mutant patches both where the estimator module
uses them (``_fit_with_noise``, which trains every candidate and the final model, and
``_select``), so that the REAL estimator draws its training noise and its selection for
``factor * epsilon`` while it still states and charges ``epsilon``.

Why 3 and not 2: output perturbation calibrates its noise for a move of the minimiser by
``2 / (n lam)`` (two rows' logistic gradients of norm up to 1 each). In one dimension two
rows' gradients differ by at most ``sigma(w) + max_s s sigma(-s w) <= 1.05``, so the minimiser
moves by at most about half the calibrated sensitivity and noise for twice epsilon still
spends at most about ``1.05 epsilon``: no valid audit can reject it on such pairs. The pair
below (one label flipped among identical rows, a large ``lam`` so the curvature of the loss
hardly slows the move) attains a ratio of 0.49 of the calibrated sensitivity, computed and
asserted, so the 3-epsilon mutant loses 1.47 against the claim of 1.

The audit is on the released coefficient of a one-feature model with one ``lam`` (the
selection is then trivial, and every candidate and the final model share the patched
trainer): the event ``coef_ < t`` for a boundary ``t`` of the public snapping grid near the
minimisers, fixed from the exact laws before any fit. Its probabilities on both data sets
are Laplace tails (the split puts the differing row in validation with probability 1/40, a
mixture computed exactly).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from _audit_power import detection_power
from _registry import make_estimator
from scipy import stats

from skprivpred import DPValidatedLogisticRegression, PrivacyAccountant
from skprivpred.audit import clopper_pearson
from skprivpred.linear_model import _validated_logistic as _validated
from skprivpred.linear_model._optim import _certified_logistic

FACTOR = 3.0
EPSILON, SPLIT, N_ROWS = 1.0, 0.99, 40
N_TRAIN = N_ROWS - 1  # validation_size = 1 / N_ROWS keeps one row for validation
#: The mutant's noise scale is just below the grid 2^-14: one grid cell per scale unit.
GRID = 2.0**-14
LAM = 2.0 / (FACTOR * EPSILON * SPLIT * N_TRAIN * GRID) * (1 + 1e-9)
#: Fits per data set: exact power 0.9939 (1,600: 0.981), asserted below.
N_FITS = 1_800
ALPHA = 1e-3 / 4  # two orientations of one event, Bonferroni over four intervals
TARGET_POWER = 0.99


def _estimator(**params) -> DPValidatedLogisticRegression:
    return make_estimator(
        DPValidatedLogisticRegression,
        epsilon=EPSILON,
        epsilon_split=SPLIT,
        lam_grid=(LAM,),
        perturbation="output",
        validation_size=1 / N_ROWS,
        fit_intercept=False,
        classes=(0, 1),
        **params,
    )


def _pair():
    X = np.ones((N_ROWS, 1))
    y = np.ones(N_ROWS, dtype=int)
    y_neighbour = y.copy()
    y_neighbour[0] = 0
    return X, y, y_neighbour


def _event_law(threshold, scale):
    """P(coef_ < threshold) on D and on D' for Laplace noise of ``scale``."""
    signs = np.ones(N_TRAIN)
    flipped = signs.copy()
    flipped[0] = -1.0
    ones = np.ones((N_TRAIN, 1))
    w = _certified_logistic(ones, signs, LAM, np.zeros(1), 1e-12, 1000)[0]
    w_flipped = _certified_logistic(ones, flipped, LAM, np.zeros(1), 1e-12, 1000)[0]
    p = stats.laplace.cdf(threshold, w, scale)
    in_training = N_TRAIN / N_ROWS  # the flipped row is in the training part
    q = in_training * stats.laplace.cdf(threshold, w_flipped, scale) + (1 - in_training) * p
    return float(p), float(q), float(w), float(w_flipped)


def _power(n_fits, p, q):
    """Exact power of the one-event audit below (``coef_ < t``: q on D' above p on D)."""
    return detection_power(n_fits, q, None, EPSILON, ALPHA, q=p)


def released_model_mutant(monkeypatch):
    X, y, y_neighbour = _pair()
    honest_scale = 2.0 / (LAM * EPSILON * SPLIT * N_TRAIN)
    scale = honest_scale / FACTOR
    _, _, w, w_flipped = _event_law(0.0, scale)
    # The pair moves the minimiser by 0.49 of the calibrated sensitivity 2 / (n lam).
    ratio = (w - w_flipped) / (2.0 / (N_TRAIN * LAM))
    assert 0.49 < ratio < 0.5
    assert ratio * EPSILON * SPLIT < EPSILON < FACTOR * ratio * EPSILON * SPLIT - 0.4
    # The event is fixed before any fit, from the exact laws: the grid boundary near the
    # minimisers whose event the audit detects best.
    boundaries = (math.floor(w / GRID) + np.arange(-4, 3) + 0.5) * GRID
    threshold = max(
        boundaries,
        key=lambda t: _power(N_FITS, *_event_law(t, scale)[:2]),
    )
    p, q, _, _ = _event_law(threshold, scale)
    assert _power(N_FITS, p, q) >= TARGET_POWER
    assert _power(N_FITS - 200, p, q) < TARGET_POWER
    assert math.log(q / p) > EPSILON

    fit_with_noise, select = _validated._fit_with_noise, _validated._select
    calls = []

    def tripled_fit(X, y, lam, epsilon, perturbation, R, tol=1e-9, max_iter=1000, **solver):
        calls.append(epsilon)
        return fit_with_noise(X, y, lam, FACTOR * epsilon, perturbation, R, tol, max_iter, **solver)

    monkeypatch.setattr(_validated, "_fit_with_noise", tripled_fit)
    monkeypatch.setattr(
        _validated,
        "_select",
        lambda scores, eps, sensitivity, selection, rng: select(
            scores, FACTOR * eps, sensitivity, selection, rng
        ),
    )
    accountant = PrivacyAccountant(epsilon=10.0)
    mutant = _estimator(accountant=accountant, random_state=0).fit(X, y)
    assert calls == [EPSILON * SPLIT] * 2  # the candidate and the retrained model
    assert accountant.epsilon_spent == EPSILON == mutant.privacy_guarantee_.epsilon
    assert mutant.coef_grid_ == GRID  # the grid of the tripled noise's scale

    hits = []
    for k, labels in enumerate((y, y_neighbour)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            coefs = np.array(
                [
                    _estimator(random_state=seed).fit(X, labels).coef_[0, 0]
                    for seed in range(k * N_FITS, (k + 1) * N_FITS)
                ]
            )
        hits.append(int(np.sum(coefs < threshold)))
    # The patch took effect: the simulated frequencies are the tripled law's (binomial tests).
    for h, prob in zip(hits, (p, q)):
        assert stats.binomtest(h, N_FITS, prob).pvalue > ALPHA
    (lo1, hi1), (lo2, hi2) = (clopper_pearson(h, N_FITS, confidence_level=1 - ALPHA) for h in hits)
    bound = max(math.log(lo1) - math.log(hi2), math.log(lo2) - math.log(hi1))
    assert bound > EPSILON, (hits, bound)
