"""BetweenThresholds (Bun, Steinke & Ullman 2016; Naor et al. 2023, Appendix C.2): exact output
law, restarts, halting, privacy formulas."""

import math

import numpy as np
import pytest
from _audit_power import law_power
from scipy.integrate import quad
from scipy.stats import chisquare

from skprivpred.audit import clopper_pearson
from skprivpred.mechanisms import (
    BT_ABOVE,
    BT_BELOW,
    BT_TOP,
    LOG_BASE,
    BetweenThresholds,
    between_thresholds_composition,
    between_thresholds_conditional_proba,
    between_thresholds_gap,
    between_thresholds_proba,
    between_thresholds_scales,
)

# False-alarm rate of each statistical assertion (fixed seeds make each run deterministic;
# the threshold keeps the assertion meaningful for any seed).
P_FALSE_ALARM = 1e-6


def _rule(value, lower_noisy, upper_noisy, nu):
    """The paper's rule on explicit noise, L tested first (an independent implementation)."""
    c = value + nu
    return np.where(c < lower_noisy, BT_BELOW, np.where(c > upper_noisy, BT_ABOVE, BT_TOP))


def _counts(outcomes):
    return np.bincount(outcomes, minlength=3)


def test_worked_example_law():
    law = between_thresholds_proba(0.5, 0.4, 0.6, 0.5, 1 / 60)[0]
    np.testing.assert_allclose(law, [0.327, 0.299, 0.373], atol=5e-4)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)


def test_scales():
    assert between_thresholds_scales(0.5, 1 / 60) == pytest.approx((2 / 30, 6 / 30))


@pytest.mark.parametrize("value", [0.1, 0.45, 0.5, 0.62, 0.9])
def test_marginal_below_matches_direct_integral(value):
    """The closed form of P(L) equals E_mu[F_nu(t_l + mu - q)] integrated numerically."""
    b_mu, b_nu = between_thresholds_scales(0.5, 1 / 60)

    def integrand(mu):
        z = 0.4 + mu - value
        cdf = 0.5 * math.exp(z / b_nu) if z < 0 else 1 - 0.5 * math.exp(-z / b_nu)
        return cdf * math.exp(-abs(mu) / b_mu) / (2 * b_mu)

    direct = sum(quad(integrand, a, b, epsabs=1e-13)[0] for a, b in [(-np.inf, 0), (0, np.inf)])
    assert between_thresholds_proba(value, 0.4, 0.6, 0.5, 1 / 60)[0, BT_BELOW] == pytest.approx(
        direct, abs=1e-9
    )


@pytest.mark.parametrize(
    "lower_noisy, upper_noisy, value",
    [
        (0.4, 0.6, 0.5),
        (0.45, 0.55, 0.6),
        (0.58, 0.42, 0.5),
        (0.58, 0.42, 0.62),
    ],  # last two: crossed
)
def test_conditional_law_matches_explicit_noise(lower_noisy, upper_noisy, value):
    epsilon, sensitivity = 0.5, 1 / 60
    _, b_nu = between_thresholds_scales(epsilon, sensitivity)
    rng = np.random.default_rng(1)
    n = 100_000
    observed = _counts(_rule(value, lower_noisy, upper_noisy, rng.laplace(0, b_nu, n)))
    law = between_thresholds_conditional_proba(
        value, lower_noisy, upper_noisy, epsilon, sensitivity
    )[0]
    if law[BT_TOP] == 0:
        assert observed[BT_TOP] == 0
        observed, law = observed[:2], law[:2]
    assert chisquare(observed, n * law).pvalue > P_FALSE_ALARM


def _first_answers(value, lower, upper, epsilon, sensitivity, n, seed):
    """First outcome of n fresh instances (each draws its own mu)."""
    rng = np.random.default_rng(seed)
    return np.array(
        [
            BetweenThresholds(lower, upper, epsilon, sensitivity, 1).answer([value], rng)[0]
            for _ in range(n)
        ]
    )


@pytest.mark.parametrize("value", [0.5, 0.57])
def test_sampler_matches_marginal_law(value):
    """A fresh instance's first answer follows the integral law (thresholds cross w.p. ~0.11)."""
    n = 20_000
    observed = _counts(_first_answers(value, 0.4, 0.6, 0.5, 1 / 60, n, seed=2))
    law = between_thresholds_proba(value, 0.4, 0.6, 0.5, 1 / 60)[0]
    assert chisquare(observed, n * law).pvalue > P_FALSE_ALARM
    # The same data reject a law with 30% more noise: the test has power.
    wrong = between_thresholds_proba(value, 0.4, 0.6, 0.5 / 1.3, 1 / 60)[0]
    assert chisquare(observed, n * wrong).pvalue < P_FALSE_ALARM


def test_crossing_makes_the_law_asymmetric():
    """L is tested first: at the midpoint, P(L) > P(R) (the worked example's (0.327, 0.299))."""
    law = between_thresholds_proba(0.5, 0.4, 0.6, 0.5, 1 / 60)[0]
    assert law[BT_BELOW] - law[BT_ABOVE] > 0.02


class _RecordingRng:
    """A Generator wrapper that records every mu draw."""

    def __init__(self, seed):
        self._rng = np.random.default_rng(seed)
        self.mus = []

    def laplace(self, loc, scale):
        value = self._rng.laplace(loc, scale)
        self.mus.append(float(value))
        return value

    def random(self, size=None):
        return self._rng.random(size)


def test_mu_redrawn_after_each_top_only():
    # mu's scale 0.004 is far below the half gap 0.05: the noisy thresholds never cross, and
    # a value at the lower threshold gives L or TOP about equally often.
    rng = _RecordingRng(3)
    bt = BetweenThresholds(0.45, 0.55, 1.0, 1 / 500, top_budget=1000)
    outcomes = np.concatenate([bt.answer([0.45], rng) for _ in range(400)])
    n_tops = int((outcomes == BT_TOP).sum())
    assert n_tops >= 5
    # One instance per TOP, plus the one still running (started lazily, after the last TOP).
    still_running = outcomes[-1] != BT_TOP
    assert len(rng.mus) == n_tops + int(still_running)
    assert len(set(rng.mus)) == len(rng.mus)
    assert bt.tops_used == n_tops


def test_batch_answers_restart_after_top():
    """Within one batch call, every TOP also starts a new instance."""
    rng = _RecordingRng(4)
    bt = BetweenThresholds(0.45, 0.55, 1.0, 1 / 500, top_budget=10_000)
    outcomes = bt.answer(np.full(5000, 0.45), rng)
    assert outcomes.size == 5000
    n_tops = int((outcomes == BT_TOP).sum())
    assert len(rng.mus) == n_tops + int(outcomes[-1] != BT_TOP)


@pytest.mark.parametrize("budget", [1, 3, 7])
def test_halts_exactly_at_budget(budget):
    rng = np.random.default_rng(5)
    bt = BetweenThresholds(0.45, 0.55, 1.0, 1 / 500, top_budget=budget)
    outcomes = bt.answer(np.full(100_000, 0.45), rng)
    tops = np.flatnonzero(outcomes == BT_TOP)
    assert tops.size == budget
    assert tops[-1] == outcomes.size - 1  # the halting query is answered (TOP), then nothing
    assert bt.halted and bt.tops_used == budget
    assert bt.answer([0.5, 0.1], rng).size == 0


def test_crossed_instance_never_tops():
    """An instance whose noisy thresholds crossed answers only L or R (L tested first)."""
    bt = BetweenThresholds(0.45, 0.55, 1.0, 1 / 50, top_budget=1)
    bt._mu = 0.08  # t_l + mu = 0.53 > t_u - mu = 0.47
    outcomes = bt.answer(np.linspace(0.3, 0.7, 2001), np.random.default_rng(7))
    assert outcomes.size == 2001 and not bt.halted and bt.tops_used == 0


def test_clear_values_rarely_top():
    rng = np.random.default_rng(6)
    bt = BetweenThresholds(0.45, 0.55, 1.0, 1 / 200, top_budget=10)
    outcomes = bt.answer(np.r_[np.zeros(2000), np.ones(2000)], rng)
    assert outcomes.size == 4000 and bt.tops_used == 0
    assert np.all(outcomes[:2000] == BT_BELOW) and np.all(outcomes[2000:] == BT_ABOVE)


def test_gap_condition_formula():
    # GenericBBL's phase 1 at d = 1, alpha = 0.05 (base-2 logs): eps'_1 = 8.81e-16,
    # delta'_1 = 5.07e-35, T_1 = 6.18e19 need a gap of 0.037 (Lemma C.3).
    assert between_thresholds_gap(8.8105e-16, 5.0681e-35, 1 / 6.1775e19) == pytest.approx(
        0.0371, rel=1e-3
    )
    # 12 s / eps * (log(10/eps) + log(1/delta) + 1), base 2 by default
    expected = 12 * 0.01 / 0.5 * (math.log2(20) + math.log2(1e6) + 1)
    assert between_thresholds_gap(0.5, 1e-6, 0.01) == pytest.approx(expected, rel=1e-12)
    natural = 12 * 0.01 / 0.5 * (math.log(20) + math.log(1e6) + 1)
    assert between_thresholds_gap(0.5, 1e-6, 0.01, base=math.e) == pytest.approx(natural, rel=1e-12)
    assert LOG_BASE == 2


def test_composition_observation_2_and_claim_d1():
    delta = 1e-6
    for c in (1, 10, 10**6, 10**27):
        eps_prime = 1 / (3 * math.sqrt(c * math.log(2 / delta)))
        eps, total_delta = between_thresholds_composition(eps_prime, delta / (2 * c), c)
        bound = math.sqrt(2) / 3 + 2 / (9 * math.log(2 / delta))
        assert eps <= bound + 1e-12 and eps <= 1
        assert total_delta == pytest.approx(delta, rel=1e-12)
    # expm1 keeps the second term exact at eps' ~ 1e-16 (exp(x) - 1 would give 0 or 2.2e-16)
    eps, _ = between_thresholds_composition(1e-16, 1e-40, 10**30)
    assert eps == pytest.approx(1e-16 * math.sqrt(2e30 * math.log(1e10)) + 1e30 * 1e-32, rel=1e-9)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lower=0.6, upper=0.4, epsilon=1.0, sensitivity=0.1, top_budget=1), "lower < upper"),
        (dict(lower=0.4, upper=0.6, epsilon=0.0, sensitivity=0.1, top_budget=1), "epsilon"),
        (dict(lower=0.4, upper=0.6, epsilon=1.0, sensitivity=0.1, top_budget=0), "top_budget"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BetweenThresholds(**kwargs)


# -- black-box audit on neighbouring query values ---------------------------------------------
def _answer_bound(value, n_trials, seed):
    """Clopper–Pearson lower bound on epsilon from one answer of fresh instances.

    Neighbouring inputs: the query value moves by the sensitivity (0.1). Every outcome and
    both directions are tested, with a Bonferroni split of the false-alarm rate.
    """
    rng = np.random.default_rng(seed)
    counts = [
        _counts(
            np.array(
                [
                    BetweenThresholds(0.4, 0.6, 1.0, 0.1, top_budget=1).answer([q], rng)[0]
                    for _ in range(n_trials)
                ]
            )
        )
        for q in (value, value + 0.1)
    ]
    alpha = 1e-3 / 6
    (lo1, hi1), (lo2, hi2) = (
        clopper_pearson(c, n_trials, confidence_level=1 - alpha) for c in counts
    )
    with np.errstate(divide="ignore"):
        return float(np.max(np.maximum(np.log(lo1) - np.log(hi2), np.log(lo2) - np.log(hi1))))


def _neighbour_laws(value, epsilon, sensitivity=0.1):
    """Exact law of one answer (BELOW, TOP, ABOVE) at ``value`` and ``value + sensitivity``."""
    return tuple(
        dict(enumerate(between_thresholds_proba(q, 0.4, 0.6, epsilon, sensitivity)[0]))
        for q in (value, value + sensitivity)
    )


def test_audit_passes_and_flags_eight_times_less_noise(monkeypatch):
    """One answer of an instance is far from BetweenThresholds' worst case.

    The claim (1.0) covers a whole instance's transcript; one answer moves by at most
    epsilon / 6 between neighbouring values (asserted on the exact law), so this audit can
    only catch gross regressions: computed from the exact laws (``_audit_power.law_power``,
    level 1e-3 / 6 per interval), 1,800 answers per value catch an instance calibrated for
    10 times its epsilon with probability >= 0.99, and not one calibrated for 8 times; the
    broken variant (noise scales / 8, i.e. 8 times epsilon) needs 8,250 answers.
    """
    alpha = 1e-3 / 6
    law, law_neighbour = _neighbour_laws(0.3, 1.0)
    loss = max(abs(math.log(law[k] / law_neighbour[k])) for k in law)
    assert loss == pytest.approx(1.0 / 6, rel=1e-9)
    assert law_power(1_800, *_neighbour_laws(0.3, 10.0), 1.0, alpha) >= 0.99
    assert law_power(1_800, *_neighbour_laws(0.3, 8.0), 1.0, alpha) < 0.99
    eightfold = _neighbour_laws(0.3, 8.0)
    assert law_power(8_250, *eightfold, 1.0, alpha) >= 0.99
    assert _answer_bound(0.3, 1_800, seed=30) <= 1.0
    honest_scales = between_thresholds_scales
    monkeypatch.setattr(
        "skprivpred.mechanisms._sparse_vector.between_thresholds_scales",
        lambda epsilon, sensitivity: tuple(b / 8 for b in honest_scales(epsilon, sensitivity)),
    )
    # The patched instance's law is the law at 8 epsilon (the scales are proportional to
    # 1 / epsilon): the broken run draws from what the power above was computed for.
    np.testing.assert_allclose(
        between_thresholds_proba(0.3, 0.4, 0.6, 1.0, 0.1)[0],
        list(eightfold[0].values()),
        rtol=1e-12,
    )
    assert _answer_bound(0.3, 8_250, seed=31) > 1.0
