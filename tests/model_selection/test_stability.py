"""Stability-based private validation (Chaudhuri & Vinterbo 2013): constants, selection law,
noise laws, retraining, black-box audit of the selected index, histogram, bad input."""

import math
import pickle

import numpy as np
import pytest
from _audit_power import chi_square_power, detection_power
from scipy import integrate, stats
from scipy.special import expit, logsumexp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from skprivpred import (
    HopelessSettingWarning,
    InvalidParameterError,
    PrivacyAccountant,
    PrivacyGuarantee,
)
from skprivpred._base import spawn_streams
from skprivpred._hopeless import BEST_CASE_THRESHOLD, best_case
from skprivpred.audit import clopper_pearson
from skprivpred.density._histogram import _cell_index, _heights, _l2_score, _noisy_histogram
from skprivpred.linear_model._validated_logistic import _fit_with_noise
from skprivpred.mechanisms import (
    discrete_laplace_noise,
    noisy_max_proba,
    noisy_max_sample,
    sample_unit_laplace_vector,
    snap_coefficients,
)
from skprivpred.model_selection import (
    PAPER_LAM_GRID,
    DPValidatedHistogramDensity,
    DPValidatedLogisticRegression,
    auto_lam_grid,
    coefficient_noise_scale,
    histogram_stability_constants,
    logistic_stability_constants,
    objective_perturbation_budget,
    validation_score,
)

P_FALSE_ALARM = 1e-3
DPV = DPValidatedLogisticRegression


@pytest.fixture(scope="module")
def binary_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 3)) / 2.5
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=900) > 0).astype(int)
    return X, y


def _unit_rows(X, bound=1.0):
    return X / np.maximum(np.linalg.norm(X, axis=1), bound)[:, None]


# == stability constants by formula ================================================================
def test_ramp_constants_are_two_over_lambda_min_and_one():
    beta1, beta2, beta = logistic_stability_constants(PAPER_LAM_GRID, 15216, 1902, 10, 0.5)
    assert beta1 == pytest.approx(2 / 0.001)
    assert beta2 == 1.0
    assert beta == pytest.approx(max(2000 / 15216, 1 / 1902))
    assert beta == pytest.approx(0.1314, abs=1e-4)  # the paper's Magic setting


@pytest.mark.parametrize("score, g0", [("hinge", 1.0), ("logistic", math.log(2))])
def test_unbounded_score_beta2_has_factor_two_and_offset(score, g0):
    lambdas, n, m, d, eps, delta = (0.1, 0.5, 1.0), 5000, 600, 4, 1.0, 0.01
    _, beta2, beta = logistic_stability_constants(lambdas, n, m, d, eps, score, "output", delta)
    k = len(lambdas)
    expected = g0 + (1 / 0.1) * (1 + 2 * d * math.log(d * k / delta) / (eps * n))
    assert beta2 == pytest.approx(expected)
    paper = (1 / 0.1) * (
        1 + d * math.log(d * k / delta) / (eps * n)
    )  # the printed, too small value
    assert beta2 > paper
    assert beta == pytest.approx(max(2 / 0.1 / n, beta2 / m))
    # objective perturbation: the effective budget epsilon_p < eps enters W
    _, beta2_obj, _ = logistic_stability_constants(lambdas, n, m, d, eps, score, "objective", delta)
    eps_p = objective_perturbation_budget(eps, n, 0.1)[0]
    assert beta2_obj == pytest.approx(
        g0 + (1 / 0.1) * (1 + 2 * d * math.log(d * k / delta) / (eps_p * n))
    )


def test_estimator_reports_constants_split_and_sensitivity(binary_data):
    X, y = binary_data
    clf = DPV(
        epsilon=2.0, epsilon_split=0.25, lam_grid=PAPER_LAM_GRID, classes=[0, 1], random_state=1
    ).fit(X, y)
    assert clf.n_validation_ == 100 and clf.n_train_ == 800
    assert clf.epsilon_train_ == pytest.approx(0.5) and clf.epsilon_select_ == pytest.approx(1.5)
    assert clf.epsilon_spent_ == 2.0 and clf.delta_spent_ == 0.0
    assert clf.beta1_ == pytest.approx(2000.0) and clf.beta2_ == 1.0
    assert clf.selection_sensitivity_ == pytest.approx(max(2000 / 800 + 2 * clf.tol, 1 / 100))
    assert clf.best_lam_ == PAPER_LAM_GRID[clf.best_index_]
    guarantee = clf.privacy_guarantee_
    assert isinstance(guarantee, PrivacyGuarantee)
    assert (guarantee.epsilon, guarantee.delta) == (2.0, 0.0)
    assert "Chaudhuri & Vinterbo (2013), Theorems 1, 2 and 4" in guarantee.theorem


def test_auto_lam_grid_is_a_public_formula_of_n_d_and_epsilon():
    # centre 2 d / (16 epsilon n): where the expected norm of the coefficient noise is 16
    grid = auto_lam_grid(800, 4, 0.5, "output")
    centre = 2 * 4 / (16 * 0.5 * 800)
    np.testing.assert_allclose(grid, [centre / 2, centre, 2 * centre])
    assert auto_lam_grid(1600, 4, 0.5, "output")[1] == pytest.approx(centre / 2)  # 2x the rows
    assert auto_lam_grid(800, 8, 0.5, "output")[1] == pytest.approx(2 * centre)  # 2x the columns
    assert auto_lam_grid(800, 4, 1.0, "output")[1] == pytest.approx(centre / 2)  # 2x the budget
    # objective perturbation: where the centre is above 2 lam_0, the same grid ...
    np.testing.assert_allclose(
        auto_lam_grid(28943, 106, 0.5), auto_lam_grid(28943, 106, 0.5, "output")
    )
    # ... and below, the floor: the smallest value keeps epsilon / 2 for the noise (no value
    # of the grid falls where the correction would eat nearly all of the budget).
    for n, d, eps in [(800, 4, 0.5), (7111, 4, 0.5), (100_000, 2, 2.0)]:
        low = auto_lam_grid(n, d, eps)[0]
        assert low == pytest.approx(0.25 / (n * np.expm1(eps / 4)))
        assert low > auto_lam_grid(n, d, eps, "output")[0]
        for lam in auto_lam_grid(n, d, eps):
            assert objective_perturbation_budget(eps, n, lam)[0] >= eps / 2 - 1e-12
    with pytest.raises(InvalidParameterError, match="n_samples"):
        auto_lam_grid(0, 4, 0.5)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        auto_lam_grid(800, 4, -1.0)
    with pytest.raises(InvalidParameterError, match="perturbation"):
        auto_lam_grid(800, 4, 0.5, "input")


def test_defaults_learn_a_one_feature_rule_on_few_columns():
    # 3 features, 8,000 rows: the noise formula alone would put lam where the objective
    # perturbation correction leaves ~0.05 of the 0.5 budget; the floor keeps every fit useful.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8000, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    scores = [
        DPV(classes=[0, 1], random_state=np.random.SeedSequence(100 + s)).fit(X, y).score(X, y)
        for s in range(8)
    ]
    assert min(scores) > 0.9, scores


def test_default_grid_is_auto_resolved_from_the_training_part(binary_data):
    X, y = binary_data
    clf = DPV(epsilon=2.0, epsilon_split=0.25, classes=[0, 1], random_state=1).fit(X, y)
    assert clf.get_params()["lam_grid"] == "auto"
    # 800 training rows, 3 features + the intercept's column, epsilon_train = 0.5
    np.testing.assert_allclose(clf.lam_grid_, auto_lam_grid(800, 4, 0.5))
    assert clf.beta1_ == pytest.approx(2.0 / clf.lam_grid_.min())
    assert clf.best_lam_ == clf.lam_grid_[clf.best_index_]
    assert clf.score(X, y) > 0.7  # it learns (classes balanced: one class scores ~0.5)
    no_intercept = DPV(fit_intercept=False, classes=[0, 1], random_state=1).fit(X, y)
    np.testing.assert_allclose(no_intercept.lam_grid_, auto_lam_grid(800, 3, 0.5))


def test_hopeless_parameters_warn_at_fit_from_public_quantities_only(binary_data):
    import warnings

    X, y = binary_data
    hopeless = dict(epsilon=0.01, lam_grid=(1e-5, 1e-4), classes=[0, 1], random_state=0)
    with pytest.warns(HopelessSettingWarning, match="cannot answer well") as record:
        first = DPV(**hopeless).fit(X, y)
    (warning,) = [w for w in record if issubclass(w.category, HopelessSettingWarning)]
    assert warning.filename == __file__  # points at the caller's fit
    assert "keep the sign of a row of norm 1" in str(warning.message)
    assert best_case(first) < BEST_CASE_THRESHOLD
    # Decided before any row is read: the same text with other rows of the same shape ...
    with pytest.warns(HopelessSettingWarning) as again:
        second = DPV(**hopeless).fit(np.zeros_like(X), np.arange(X.shape[0]) % 2)
    assert [str(w.message) for w in again if issubclass(w.category, HopelessSettingWarning)] == [
        str(warning.message)
    ]
    assert best_case(second) == best_case(first)
    # ... and silent at the defaults on this data (900 rows, epsilon 1).
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=HopelessSettingWarning)
        fitted = DPV(classes=[0, 1], random_state=0).fit(X, y)
    assert best_case(fitted) >= BEST_CASE_THRESHOLD
    # A handful of rows at a small epsilon is hopeless even at the automatic grid.
    with pytest.warns(HopelessSettingWarning, match=r"n = 18 training rows, d = 4 coefficients"):
        DPV(epsilon=0.1, classes=[0, 1], random_state=0).fit(X[:20], y[:20])


def test_best_case_is_the_sign_law_of_gamma_norm_noise_of_uniform_direction():
    """The figure's quadrature agrees with draws of the noise (a fixed seed, 200,000 draws)."""
    from skprivpred.linear_model._validated_logistic import _sign_kept_proba

    rng = np.random.default_rng(0)
    for d, reach, scale in [(1, 0.5, 0.4), (2, 1.0, 0.3), (5, 1.0, 0.3), (40, 2.0, 0.2)]:
        norms = rng.gamma(d, scale, size=200_000)
        direction = rng.normal(size=(200_000, d))
        first = direction[:, 0] / np.linalg.norm(direction, axis=1)
        drawn = np.mean(reach + norms * first > 0)
        five_sd = 5.0 * np.sqrt(drawn * (1.0 - drawn) / norms.size)  # binomial: fails 1 in 1.7e6
        assert _sign_kept_proba(reach, scale, d) == pytest.approx(drawn, abs=five_sd + 1e-6)


def test_budget_does_not_depend_on_grid_size(binary_data):
    X, y = binary_data
    small = DPV(lam_grid=(0.1, 1.0), classes=[0, 1], random_state=0).fit(X, y)
    large = DPV(lam_grid=np.linspace(0.1, 1.0, 50), classes=[0, 1], random_state=0).fit(X, y)
    for attr in (
        "epsilon_train_",
        "epsilon_select_",
        "epsilon_spent_",
        "delta_spent_",
        "selection_sensitivity_",
    ):
        assert getattr(small, attr) == pytest.approx(getattr(large, attr)), attr
    acc = PrivacyAccountant(epsilon=10.0)
    DPV(
        epsilon=1.5,
        lam_grid=np.linspace(0.1, 1.0, 50),
        classes=[0, 1],
        accountant=acc,
        random_state=0,
    ).fit(X, y)
    assert acc.epsilon_spent == pytest.approx(1.5)


# == the selection law: noisy max with 2 beta scale ================================================
def _quad_law(scores, epsilon, sensitivity):
    """Independent check: P(i) = int f_i(t) prod_j F_j(t) dt by adaptive quadrature."""
    s = 2 * sensitivity / epsilon
    top = max(scores)
    law = []
    for i, qi in enumerate(scores):

        def integrand(t, i=i, qi=qi):
            val = math.exp(-(t - qi) / s) / s
            for j, qj in enumerate(scores):
                if j != i:
                    val *= max(0.0, 1 - math.exp(-(t - qj) / s))
            return val

        law.append(integrate.quad(integrand, top, top + 60 * s, limit=200)[0])
    return np.array(law)


@pytest.mark.parametrize("seed", range(4))
def test_noisy_max_law_equals_quadrature(seed):
    rng = np.random.default_rng(seed)
    scores = rng.uniform(-1, 0, size=rng.integers(2, 8))
    law = noisy_max_proba(scores, 0.7, 0.1)
    np.testing.assert_allclose(law, _quad_law(scores, 0.7, 0.1), atol=1e-7)
    assert law.sum() == pytest.approx(1.0)


def test_noisy_max_frequencies_match_the_exact_law():
    """Sample size from the bound: the law with noise beta instead of 2 beta spends twice
    epsilon; with 1,000 draws the chi-square test against the exact law rejects draws from
    it with probability > 0.9999, and the test against it rejects draws from the exact law
    at 1e-6 with probability > 0.9999 (noncentral chi-square,
    ``_audit_power.chi_square_power``, asserted below; 350 draws would give 0.99). The
    smallest expected count is 16."""
    scores = np.array([-0.5, -0.3, -0.35, -0.9])
    rng = np.random.default_rng(3)
    clf = DPV(selection="noisy_max")
    n = 1000
    law, wrong = noisy_max_proba(scores, 1.0, 0.1), noisy_max_proba(scores, 1.0, 0.05)
    assert chi_square_power(n, law, wrong, P_FALSE_ALARM) >= 0.9999
    assert chi_square_power(n, wrong, law, 1e-6) >= 0.9999
    draws = np.array([clf._select(scores, 1.0, 0.1, rng) for _ in range(n)])
    counts = np.bincount(draws, minlength=4)
    assert stats.chisquare(counts, law * counts.sum()).pvalue > P_FALSE_ALARM
    # the estimator's noise is 2 beta Exp(mean 1/epsilon): with beta instead, the law differs
    assert stats.chisquare(counts, wrong * counts.sum()).pvalue < 1e-6


def test_exponential_selection_frequencies_match_softmax():
    scores = np.array([-0.5, -0.3, -0.9])
    rng = np.random.default_rng(4)
    clf = DPV(selection="exponential")
    counts = np.bincount([clf._select(scores, 1.0, 0.1, rng) for _ in range(20_000)], minlength=3)
    law = np.exp(scores / 0.2) / np.exp(scores / 0.2).sum()
    assert stats.chisquare(counts, law * counts.sum()).pvalue > P_FALSE_ALARM


def test_noisy_max_is_epsilon_dp_and_half_the_noise_is_not():
    rng = np.random.default_rng(5)
    eps, beta = 0.8, 0.1
    worst = 0.0
    for _ in range(300):
        k = rng.integers(2, 6)
        a = rng.uniform(-1, 0, size=k)
        b = a + beta * rng.choice([-1.0, 1.0], size=k) * rng.uniform(0.5, 1.0, size=k)
        worst = max(
            worst,
            np.max(np.abs(np.log(noisy_max_proba(a, eps, beta) / noisy_max_proba(b, eps, beta)))),
        )
    assert worst <= eps + 1e-9
    # the extreme pair of Lemma 1: scores moving by beta in opposite directions
    a, b = np.array([0.0, 0.0]), np.array([beta, -beta])
    ratio = np.log(noisy_max_proba(a, eps, beta) / noisy_max_proba(b, eps, beta))
    assert np.max(np.abs(ratio)) <= eps + 1e-9
    half = np.log(noisy_max_proba(a, eps, beta / 2) / noisy_max_proba(b, eps, beta / 2))
    assert np.max(np.abs(half)) > eps  # "beta not 2 beta" breaks the guarantee


def test_noisy_max_law_is_the_law_of_the_argmax_of_exponential_noise():
    """The exact-law sampler stands for argmax(q + 2 beta Exp(mean 1/epsilon)): simulate the
    noisy scores here, in floating point, and compare their argmax with the law."""
    eps, beta = 1.0, 0.2
    scores = np.array([0.0, -0.3, -0.1])
    rng = np.random.default_rng(6)
    noisy = scores + 2 * beta * rng.exponential(scale=1 / eps, size=(60_000, 3))
    counts = np.bincount(np.argmax(noisy, axis=1), minlength=3)
    law = noisy_max_proba(scores, eps, beta)
    assert stats.chisquare(counts, law * counts.sum()).pvalue > P_FALSE_ALARM
    # k = 2 closed form: P(1) = exp(-gap / s) / 2 with s = 2 beta / epsilon
    assert noisy_max_proba([0.0, -0.3], eps, beta)[1] == pytest.approx(0.5 * math.exp(-0.3 / 0.4))
    # the estimator-facing sampler draws from that law (one uniform per draw); 2,000 draws:
    # the law with noise beta (twice epsilon) is rejected with probability > 0.9999 (450
    # draws would give 0.99; noncentral chi-square, asserted)
    wrong = noisy_max_proba(scores, eps, beta / 2)
    assert chi_square_power(2_000, law, wrong, P_FALSE_ALARM) > 0.9999
    draws = np.array([noisy_max_sample(scores, eps, beta, rng) for _ in range(2_000)])
    assert stats.chisquare(np.bincount(draws, minlength=3), law * draws.size).pvalue > P_FALSE_ALARM


# == objective / output perturbation =============================================================
def test_cms_correction_values_and_branch():
    n, lam = 15216, 0.001
    correction = 2 * math.log1p(0.25 / (n * lam))
    assert correction == pytest.approx(0.0326, abs=1e-4)  # the paper's Magic setting
    eps_p, extra = objective_perturbation_budget(0.15, n, lam)
    assert eps_p == pytest.approx(0.15 - correction) and extra == 0.0
    eps_p, extra = objective_perturbation_budget(0.03, n, lam)  # alphaSplit at alpha = 0.3
    assert eps_p == pytest.approx(0.015)
    assert extra == pytest.approx(0.25 / (n * math.expm1(0.03 / 4)) - lam) and extra > 0
    # the branch fires iff epsilon <= 2 log(1 + c / (n lam))
    assert objective_perturbation_budget(correction * 1.001, n, lam)[1] == 0.0
    assert objective_perturbation_budget(correction * 0.999, n, lam)[1] > 0.0


def test_unit_laplace_vector_norm_is_gamma_and_direction_uniform():
    rng = np.random.default_rng(7)
    d = 4
    draws = np.array([sample_unit_laplace_vector(d, rng) for _ in range(20_000)])
    norms = np.linalg.norm(draws, axis=1)
    assert stats.kstest(norms, stats.gamma(a=d).cdf).pvalue > P_FALSE_ALARM
    u = draws / norms[:, None]
    assert np.abs(u.mean(axis=0)).max() < 0.03
    np.testing.assert_allclose(u.T @ u / len(u), np.eye(d) / d, atol=0.02)


def _logistic_gradient(X, y, w):
    return -(X.T @ (y * expit(-y * (X @ w)))) / len(y)


@pytest.mark.parametrize("lam, eps", [(0.5, 1.0), (0.001, 0.05)])  # second: correction branch
def test_objective_perturbation_noise_is_recovered_exactly(lam, eps):
    rng = np.random.default_rng(8)
    X = _unit_rows(rng.normal(size=(60, 3)))
    y = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    R = sample_unit_laplace_vector(3, rng)
    w, eps_p, extra = _fit_with_noise(X, y, lam, eps, "objective", R)
    assert (eps_p, extra) == objective_perturbation_budget(eps, 60, lam)
    b = -60 * (_logistic_gradient(X, y, w) + (lam + extra) * w)
    np.testing.assert_allclose(b, (2 / eps_p) * R, rtol=1e-6, atol=1e-8)


def _training_rows(clf_seed, n_rows, validation_size):
    fit_rng, _ = spawn_streams(clf_seed)
    m = int(round(validation_size * n_rows))
    return fit_rng.permutation(n_rows)[m:]


class _Recording(DPV):
    def _train(self, X, y, lam, params, rng, *solved):
        out = super()._train(X, y, lam, params, rng, *solved)
        self.__dict__.setdefault("_calls", []).append((lam, out[0].copy()))
        return out


@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_released_model_noise_law(perturbation):
    """Single-lambda grid: the released model's noise has the documented law."""
    rng = np.random.default_rng(9)
    X = _unit_rows(rng.normal(size=(40, 2)))
    y = (X[:, 0] > 0).astype(int)
    signs = np.where(y == 1, 1.0, -1.0)
    lam, norms = 0.3, []
    for seed in range(400):
        clf = _Recording(
            epsilon=2.0,
            lam_grid=(lam,),
            perturbation=perturbation,
            classes=[0, 1],
            validation_size=0.25,
            random_state=seed,
            fit_intercept=False,
        ).fit(X, y)
        T = _training_rows(seed, 40, 0.25)
        XT, yT, w = X[T], signs[T], clf._calls[-1][1]  # before rounding to the public grid
        if perturbation == "objective":
            b = -len(T) * (_logistic_gradient(XT, yT, w) + (lam + clf.extra_reg_) * w)
            norms.append(np.linalg.norm(b) * clf.epsilon_effective_ / 2)
        else:
            exact = (
                LogisticRegression(
                    C=1 / (lam * len(T)), fit_intercept=False, tol=1e-12, max_iter=10_000
                )
                .fit(XT, yT)
                .coef_[0]
            )
            norms.append(np.linalg.norm(w - exact) * lam * clf.epsilon_train_ * len(T) / 2)
    assert stats.kstest(norms, stats.gamma(a=2).cdf).pvalue > P_FALSE_ALARM


@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_released_coefficients_lie_on_the_public_snapping_grid(binary_data, perturbation):
    X, y = binary_data
    clf = _Recording(
        epsilon=1.0,
        lam_grid=(0.05, 0.5),
        perturbation=perturbation,
        classes=[0, 1],
        random_state=4,
        fit_intercept=False,
    ).fit(X, y)
    n = clf.n_train_
    scale = coefficient_noise_scale(n, clf.best_lam_, clf.epsilon_effective_, clf.extra_reg_)
    if perturbation == "output":
        assert scale == pytest.approx(2 / (clf.best_lam_ * clf.epsilon_train_ * n))
    grid = clf.coef_grid_  # norm_bound = 1
    assert math.log2(grid) == round(math.log2(grid)) and scale <= grid < 2 * scale
    steps = clf.coef_[0] / grid
    np.testing.assert_array_equal(steps, np.round(steps))
    assert np.max(np.abs(clf.coef_[0] - clf._calls[-1][1])) <= grid / 2
    snapped, spacing = snap_coefficients(np.array([0.3, -0.71, 2.0]), 0.2)
    assert spacing == 0.25 and np.array_equal(snapped, [0.25, -0.75, 2.0])


# == retraining with fresh noise ==================================================================
def test_final_model_is_retrained_with_fresh_noise(binary_data):
    X, y = binary_data
    lambdas = (0.05, 0.05, 0.05)  # equal lambdas: only the noise differs between the runs
    clf = _Recording(
        epsilon=1.0, lam_grid=lambdas, classes=[0, 1], random_state=2, fit_intercept=False
    ).fit(X, y)
    calls = clf._calls
    assert len(calls) == len(lambdas) + 1
    final = calls[-1][1]
    grid = clf.coef_grid_
    np.testing.assert_array_equal(clf.coef_[0], np.round(final / grid) * grid)
    assert calls[-1][0] == clf.best_lam_
    for _, candidate in calls[:-1]:
        assert not np.allclose(candidate, final)


def test_large_epsilon_selects_exact_argmax_and_matches_nonprivate_erm(binary_data):
    X, y = binary_data
    lambdas = (0.002, 0.3, 3.0)
    clf = _Recording(
        epsilon=1e7, lam_grid=lambdas, classes=[0, 1], random_state=3, fit_intercept=False
    ).fit(X, y)
    T = _training_rows(3, len(y), 1 / 9)
    V = np.setdiff1d(np.arange(len(y)), T)
    signs = np.where(y == 1, 1.0, -1.0)
    U = _unit_rows(X)  # the estimator clips rows to norm_bound = 1
    exact = [
        LogisticRegression(C=1 / (lam * len(T)), fit_intercept=False, tol=1e-12, max_iter=10_000)
        .fit(U[T], signs[T])
        .coef_[0]
        for lam in lambdas
    ]
    scores = [validation_score(w, U[V], signs[V]) for w in exact]
    assert clf.best_index_ == int(np.argmax(scores))
    np.testing.assert_allclose(clf.coef_[0], exact[clf.best_index_], atol=1e-4)


def test_no_candidate_model_or_score_is_stored(binary_data):
    X, y = binary_data
    clf = DPV(lam_grid=(0.1, 0.2, 0.3, 0.4), classes=[0, 1], random_state=0).fit(X, y)
    for name, value in vars(clf).items():
        if name in ("lam_grid", "lam_grid_"):
            continue
        arr = np.asarray(value) if isinstance(value, (np.ndarray, list, tuple)) else None
        assert arr is None or arr.size % 4 != 0, name  # k = 4 candidates: nothing of that size
    assert not [name for name in vars(clf) if "score" in name and name.endswith("_")]


# == black-box audit of the selected index =========================================================
def _selected_indices(make, data, n_trials):
    return [make(seed).fit(*data).best_index_ for seed in range(n_trials)]


def _release_bound(make, data, neighbour, n_trials, runs=None):
    """Lower confidence bound on the log-ratio of the selected index's law (``runs``: the
    selected indices on D and D' when they are already drawn)."""
    if runs is None:
        runs = [_selected_indices(make, d, n_trials) for d in (data, neighbour)]
    counts = [np.bincount(run, minlength=2) for run in runs]
    alpha = P_FALSE_ALARM / 4
    (lo1, hi1), (lo2, hi2) = (
        clopper_pearson(c, n_trials, confidence_level=1 - alpha) for c in counts
    )
    with np.errstate(divide="ignore"):
        return float(np.max(np.maximum(np.log(lo1) - np.log(hi2), np.log(lo2) - np.log(hi1))))


class _ExactArgmax(DPV):
    """Broken on purpose: selects by the exact validation score (what GridSearchCV does)."""

    def _select(self, scores, epsilon_select, sensitivity, rng):
        best = np.flatnonzero(scores == scores.max())
        return int(rng.choice(best))


def test_selected_index_audit_passes_and_flags_exact_argmax():
    """Sample sizes from the bound (``_audit_power.detection_power``, exact binomial sums).

    Exact argmax selects index 0 with probability 1/2 on D (a tie) and 3/10 * 1/2 + 7/10
    = 0.85 on D', so index 1 has 1/2 against 0.15 (log-ratio 1.20 > 0.3): 360 fits per
    data set flag it with probability >= 0.99. The estimator's own run keeps 1,000 fits:
    its log-ratio here is about 0 (beta is about 67, far above any score gap), so no
    regression of the noise scale could show on this pair; against a law that spends
    2 * 0.3 at the tie (1/2 against exp(-0.6) / 2) 1,000 fits have power 0.48 (2,130
    would be needed), which is why this pair audits the selection rule, not its scale
    (``test_noisy_max_is_epsilon_dp_and_half_the_noise_is_not`` checks the scale exactly).
    """
    # D: ten copies of (x=1, y=+1): both candidates have w >= 1, every validation ramp loss
    # is 0, so the scores tie. D': row 0 becomes (x=0.2, y=+1); when it lands in V the
    # smaller lambda (larger w) wins.
    X = np.ones((10, 1))
    y = np.ones(10, dtype=int)
    y[-1] = 0  # one negative row far away keeps two labels; it sits at x = -1
    X[-1] = -1.0
    X2 = X.copy()
    X2[0] = 0.2
    alpha2 = 0.3
    kwargs = dict(
        epsilon=1000 + alpha2,
        epsilon_split=1000 / (1000 + alpha2),
        lam_grid=(0.01, 0.03),
        validation_size=0.7,
        classes=[0, 1],
        fit_intercept=False,
    )
    honest = _release_bound(lambda s: DPV(random_state=s, **kwargs), (X, y), (X2, y), 1000)
    assert honest <= alpha2
    assert detection_power(360, 0.5, None, alpha2, P_FALSE_ALARM / 4, q=0.15) >= 0.99
    broken = _release_bound(
        lambda s: _ExactArgmax(random_state=10_000 + s, **kwargs), (X, y), (X2, y), 360
    )
    assert broken > alpha2


# == bad input =====================================================================================
@pytest.mark.parametrize(
    "params, match",
    [
        ({"lam_grid": (0.1, -1.0)}, "lam_grid"),
        ({"lam_grid": (0.1, 0.0)}, "lam_grid"),
        ({"lam_grid": ()}, "lam_grid"),
        ({"lam_grid": (0.1, float("nan"))}, "lam_grid"),
        ({"lam_grid": 0.1}, "lam_grid"),
        ({"epsilon_split": 0.0}, "epsilon_split"),
        ({"epsilon_split": 1.0}, "epsilon_split"),
        ({"epsilon_split": 1.5}, "epsilon_split"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"validation_score": "zero_one"}, "validation_score"),
        ({"validation_score": "hinge"}, "delta"),
        ({"validation_score": "foo"}, "validation_score"),
        ({"perturbation": "gradient"}, "perturbation"),
        ({"mechanism": "gradient"}, "mechanism"),
        ({"selection": "argmax"}, "selection"),
        ({"validation_size": 1.0}, "validation_size"),
        ({"feature_norm_bound": 0.0}, "feature_norm_bound"),
        ({"delta": 1.0}, "delta"),
        ({"accountant": "acc"}, "accountant"),
    ],
)
def test_bad_parameters_leave_estimator_and_accountant_unchanged(binary_data, params, match):
    X, y = binary_data
    acc = PrivacyAccountant(epsilon=10.0)
    clf = DPV(classes=[0, 1], accountant=acc, random_state=0).fit(X, y)
    before = (clf.coef_.copy(), clf.best_index_, acc.epsilon_spent)
    clf.set_params(**params)
    with pytest.raises(InvalidParameterError, match=match):
        clf.fit(X, y)
    assert np.array_equal(clf.coef_, before[0]) and clf.best_index_ == before[1]
    assert acc.epsilon_spent == before[2]


def test_bad_data(binary_data):
    X, y = binary_data
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPV(classes=[0, 1]).fit(bad, y)
    with pytest.raises(ValueError, match="binary"):
        DPV(classes=[0, 1, 2]).fit(X, y)
    with pytest.raises(TypeError, match="sample_weight"):
        DPV(classes=[0, 1]).fit(X, y, sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match="empty"):
        DPV(classes=[0, 1], validation_size=0.01).fit(X[:10], y[:10])


def test_rows_above_the_norm_bound_are_clipped(binary_data):
    X, y = binary_data
    X = X.copy()
    X[0] *= 2.0 / np.linalg.norm(X[0])  # norm 2 = the bound
    big = X.copy()
    big[0] *= 10.0  # norm 20: clipped back to the same row
    a = DPV(feature_norm_bound=2.0, classes=[0, 1], random_state=4, fit_intercept=False).fit(X, y)
    b = DPV(feature_norm_bound=2.0, classes=[0, 1], random_state=4, fit_intercept=False).fit(big, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_allclose(a.decision_function(X[1:5]), X[1:5] @ a.coef_[0])


def test_the_intercept_is_a_public_constant_column_inside_the_norm_bound(binary_data):
    """The augmented row [x, c] meets norm_bound; the constant's coefficient is the intercept."""
    X, y = binary_data
    X = X.copy()
    X[0] *= 5.0 / np.linalg.norm(X[0])  # above the bound: clipped
    clf = _Recording(
        epsilon=1e7,
        lam_grid=(0.002,),
        feature_norm_bound=2.0,
        intercept_scaling=1.2,
        classes=[0, 1],
        random_state=3,
    ).fit(X, y)
    augmented, _ = clf._rows(X, reset=False)
    assert augmented.shape == (len(y), X.shape[1] + 1)
    np.testing.assert_allclose(augmented[:, -1], 1.2)
    assert np.linalg.norm(augmented, axis=1).max() <= 2.0 * (1 + 1e-12)
    assert np.linalg.norm(augmented[0]) == pytest.approx(2.0)
    # The released model is the recorded solution on the augmented, rescaled rows.
    w = clf._calls[-1][1] / 2.0
    np.testing.assert_allclose(clf.coef_[0], w[:-1], atol=clf.coef_grid_)
    assert clf.intercept_[0] == pytest.approx(w[-1] * 1.2, abs=2 * clf.coef_grid_)
    np.testing.assert_allclose(
        clf.decision_function(X), augmented[:, :-1] @ clf.coef_[0] + clf.intercept_[0]
    )
    # With a huge epsilon it is the non-private ERM on those rows, intercept included.
    T = _training_rows(3, len(y), 1 / 9)
    signs = np.where(y == 1, 1.0, -1.0)
    exact = (
        LogisticRegression(C=1 / (0.002 * len(T)), fit_intercept=False, tol=1e-12, max_iter=10_000)
        .fit(augmented[T] / 2.0, signs[T])
        .coef_[0]
    )
    np.testing.assert_allclose(clf._calls[-1][1], exact, atol=1e-4)  # on the rescaled rows
    for bad in ({"intercept_scaling": 2.0}, {"fit_intercept": 1}):
        with pytest.raises(InvalidParameterError, match="intercept"):
            DPV(feature_norm_bound=2.0, classes=[0, 1], **bad).fit(X, y)


def test_predictions_are_deterministic_post_processing_and_clone_pickle(binary_data):
    X, y = binary_data
    clf = DPV(epsilon=3.0, classes=[0, 1], random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), clf.predict(X))
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], expit(clf.decision_function(X)))
    assert clf.score(X, y) > 0.7
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.coef_, clf.coef_)
    assert clone(clf).get_params() == clf.get_params()


# == histogram =====================================================================================
def test_histogram_constants_by_formula_and_n_condition():
    grid, n, m, eps, delta = (4, 8, 16), 4000, 1000, 0.5, 0.01
    beta1, beta2, beta = histogram_stability_constants(grid, n, m, eps, delta)
    h = 1 / 16
    nu = 2 * math.log(4 * 3 / delta) / (n * eps * math.sqrt(h))
    assert beta1 == pytest.approx(6 / ((1 - nu) * h)) and beta2 == pytest.approx(2 / h)
    assert beta == pytest.approx(max(beta1 / n, beta2 / m))
    needed = 1 + 2 * math.log(4 * 3 / delta) / (eps * math.sqrt(h))
    with pytest.raises(ValueError, match="Theorem 6"):
        histogram_stability_constants(grid, math.floor(needed) - 1, m, eps, delta)
    histogram_stability_constants(grid, math.ceil(needed), m, eps, delta)


def test_noisy_counts_have_the_discrete_laplace_two_over_epsilon_law():
    u = np.repeat([0.1, 0.4, 0.6, 0.9], 500)[:, None]  # large counts: the clamp never acts
    rng = np.random.default_rng(10)
    eps = 0.7
    released = np.concatenate([_noisy_histogram(u, 4, eps, rng) for _ in range(3000)])
    assert np.array_equal(released, np.round(released))  # integers: no noisy float is released
    noise = (released - 500).astype(int)
    p = math.exp(-eps / 2)
    support = np.arange(-12, 13)
    law = (1 - p) / (1 + p) * p ** np.abs(support)
    expected = np.append(law, 1 - law.sum()) * noise.size  # last cell: |z| > 12
    observed = np.append(
        np.bincount(noise[np.abs(noise) <= 12] + 12, minlength=25), np.sum(np.abs(noise) > 12)
    )
    assert stats.chisquare(observed, expected).pvalue > P_FALSE_ALARM
    # a scale of 1 / epsilon (sensitivity 1 instead of 2) is rejected by the same test
    q = math.exp(-eps)
    wrong = (1 - q) / (1 + q) * q ** np.abs(support)
    wrong = np.append(wrong, 1 - wrong.sum()) * noise.size
    assert stats.chisquare(observed, wrong).pvalue < 1e-6


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.0, 40.0])
def test_discrete_laplace_mgf_is_dominated_so_lemma_3_carries_over(scale):
    """Theorem 6 only uses a Chernoff bound on the noise sum; the discrete law's MGF
    (closed form in ``_noisy_histogram``) is at most the continuous Laplace MGF."""
    p = math.exp(-1 / scale)
    u = np.linspace(-0.999, 0.999, 201) / scale
    inner = u[np.abs(u) < 0.9 / scale]  # the direct sum converges fast enough here
    z = np.arange(-int(500 * scale) - 50, int(500 * scale) + 51)
    log_pmf = math.log((1 - p) / (1 + p)) - np.abs(z) / scale
    direct = np.exp([logsumexp(log_pmf + v * z) for v in inner])
    closed = 1 / (1 - np.sinh(u / 2) ** 2 / np.sinh(1 / (2 * scale)) ** 2)
    np.testing.assert_allclose(direct, closed[np.abs(u) < 0.9 / scale], rtol=1e-8)
    assert np.all(closed <= 1 / (1 - (scale * u) ** 2) * (1 + 1e-12))
    # Lemma 3 at s terms: P(sum <= -theta scale sqrt(s)) <= 4 exp(-theta), by simulation
    s, theta = 8, 2.0
    rng = np.random.default_rng(int(scale * 10))
    sums = discrete_laplace_noise(scale, rng, size=(40_000, s)).sum(axis=1)
    hits = int(np.sum(sums <= -theta * scale * math.sqrt(s)))
    assert clopper_pearson(hits, sums.size, confidence_level=1 - P_FALSE_ALARM)[0] <= 4 * math.exp(
        -theta
    )


def test_histogram_density_integral_and_l2_score_formula():
    rng = np.random.default_rng(11)
    heights = _heights(np.maximum(0, rng.normal(5, 3, size=8)))
    assert heights.sum() / 8 == pytest.approx(1.0)
    grid = (np.arange(80_000) + 0.5) / 80_000
    f = heights[np.minimum((grid * 8).astype(int), 7)]
    z = rng.random((50, 1))
    expected = -np.mean(f**2) + 2 * np.mean(heights[(z[:, 0] * 8).astype(int)])
    assert _l2_score(heights, z, 8) == pytest.approx(expected, rel=1e-9)
    assert np.array_equal(_heights(np.zeros(4)), np.ones(4))  # fallback: uniform


@pytest.mark.parametrize("n_features", [1, 2])
def test_histogram_score_stability_with_the_same_noise(n_features):
    """Theorem 6's bounds with h = b^-d: one training row moves q by <= 6 / (h n~), one
    validation row by <= 2 / (m h)."""
    rng = np.random.default_rng(12 + n_features)
    worst_t, worst_v = 0.0, 0.0
    for trial in range(300):
        b, n, m, eps = int(rng.choice([2, 4, 8])), 200, 50, 1.0
        cells = b**n_features
        u, z = rng.random((n, n_features)), rng.random((m, n_features))
        u2, z2 = u.copy(), z.copy()
        u2[0], z2[0] = rng.random(), rng.random()
        noisy = _noisy_histogram(u, b, eps, np.random.default_rng(trial))
        noisy2 = _noisy_histogram(u2, b, eps, np.random.default_rng(trial))
        if min(noisy.sum(), noisy2.sum()) <= 0:
            continue
        dq = abs(_l2_score(_heights(noisy), z, b) - _l2_score(_heights(noisy2), z, b))
        worst_t = max(worst_t, dq / (6 * cells / min(noisy.sum(), noisy2.sum())))
        dv = abs(_l2_score(_heights(noisy), z, b) - _l2_score(_heights(noisy), z2, b))
        worst_v = max(worst_v, dv / (2 * cells / m))
    assert 0 < worst_t <= 1 and 0 < worst_v <= 1


def test_histogram_estimator_fit_score_and_attributes():
    x = np.random.default_rng(13).beta(2, 5, size=(20_000, 1)) * 10 - 5
    est = DPValidatedHistogramDensity(epsilon=1.0, bounds=(-5.0, 5.0), random_state=0).fit(x)
    assert est.n_bins_ == (4, 8, 16, 32)[est.best_index_]
    assert np.sum(est.density_) * est.bin_volume_ == pytest.approx(1.0)
    np.testing.assert_allclose(est.bin_edges_[0], np.linspace(-5, 5, est.n_bins_ + 1))
    assert np.array_equal(est.noisy_counts_, np.round(est.noisy_counts_))
    assert est.score_samples([[6.0]])[0] == -np.inf
    np.testing.assert_allclose(np.exp(est.score_samples(x[:20])), est.density(x[:20]))
    manual = -np.sum(est.density_**2) * est.bin_volume_ + 2 * np.mean(est.density(x[:100]))
    assert est.score(x[:100]) == pytest.approx(manual)
    assert est.epsilon_spent_ == 1.0 and est.delta_spent_ == 1e-6  # the default delta
    assert est.n_train_ == 16_000 and est.n_validation_ == 4_000
    # the L2 criterion picks more than the coarsest histogram on 20k smooth points at eps = 1
    big = DPValidatedHistogramDensity(epsilon=50.0, bounds=(-5.0, 5.0), random_state=0).fit(x)
    assert big.n_bins_ >= 16


def test_histogram_in_two_dimensions_uses_the_product_grid():
    rng = np.random.default_rng(15)
    x = np.column_stack([rng.beta(2, 5, 30_000), rng.random(30_000) * 4 - 2])
    est = DPValidatedHistogramDensity(
        epsilon=2.0, n_bins_grid=(2, 4, 8), bounds=[(0, 1), (-2, 2)], random_state=0
    ).fit(x)
    b = est.n_bins_
    assert est.noisy_counts_.shape == est.density_.shape == (b, b)
    assert est.bin_volume_ == pytest.approx((1 / b) * (4 / b))
    assert np.sum(est.density_) * est.bin_volume_ == pytest.approx(1.0)
    _, _, beta = histogram_stability_constants(
        (2, 4, 8), est.n_train_, est.n_validation_, 1.0, 0.01, n_features=2
    )
    assert est.selection_sensitivity_ == pytest.approx(beta)
    assert est.density([[0.1, 3.0]])[0] == 0.0  # outside the box
    cell = (min(int(0.3 * b), b - 1), min(int((0.5 + 2) / 4 * b), b - 1))
    assert est.density([[0.3, 0.5]])[0] == est.density_[cell]


@pytest.mark.parametrize(
    "params, match",
    [
        ({"bounds": (1.0, 0.0)}, "bounds"),
        ({"n_bins_grid": (4, 0)}, "n_bins_grid"),
        ({"n_bins_grid": (4, 2.5)}, "n_bins_grid"),
        ({"delta": 0.0}, "delta"),
        ({"epsilon_split": 1.0}, "epsilon_split"),
    ],
)
def test_histogram_bad_parameters(params, match):
    x = np.random.default_rng(14).random((2000, 1))
    est = DPValidatedHistogramDensity(random_state=0).fit(x)
    counts = est.noisy_counts_.copy()
    est.set_params(**params)
    with pytest.raises(InvalidParameterError, match=match):
        est.fit(x)
    np.testing.assert_array_equal(est.noisy_counts_, counts)


def test_histogram_bad_data():
    with pytest.raises(InvalidParameterError, match="bounds must be"):
        DPValidatedHistogramDensity(bounds=[(0, 1), (0, 1), (0, 1)]).fit(np.zeros((100, 2)))
    with pytest.raises(ValueError, match="NaN"):
        DPValidatedHistogramDensity().fit(np.array([[0.1], [np.nan]] * 500))
    with pytest.raises(ValueError, match="2D array"):
        DPValidatedHistogramDensity().fit(np.full(500, 0.5))


def test_selected_index_audit_with_a_data_dependent_selection():
    """Here the honest selection is far from uniform (beta ~ 1.1, epsilon_select = 2) and the
    neighbour (row 0 moved to the other side) shifts it; the shift stays within epsilon_select.

    What this audit can and cannot detect: the pair is far from the worst case (the index
    law moves by a log-ratio of about 0.14 here, against a claim of 2: row 0 changes the
    scores only when it lands in V, and then by less than beta), so it checks that the
    selection stays within its claim; it is not an audit of a 2x regression. (An earlier version
    quoted a power against a law modelled as "log-ratio 4 on this pair", which the real
    doubled estimator never reaches.) The fits on D serve both the uniformity check and the
    audit.
    """
    X = np.full((12, 1), 0.5)
    y = np.ones(12, dtype=int)
    y[-1], X[-1] = 0, -0.5
    X2 = X.copy()
    X2[0] = -1.0
    alpha2 = 2.0
    kwargs = dict(
        epsilon=1000 + alpha2,
        epsilon_split=1000 / (1000 + alpha2),
        lam_grid=(0.2, 2.0),
        validation_size=0.25,
        classes=[0, 1],
    )
    n_trials = 400
    make = lambda s: DPV(random_state=s, **kwargs)  # noqa: E731
    first = _selected_indices(make, (X, y), n_trials)
    lo, hi = clopper_pearson(sum(first), n_trials, confidence_level=1 - P_FALSE_ALARM)
    assert hi < 0.5  # not uniform: the audit below is not vacuous
    runs = [first, _selected_indices(make, (X2, y), n_trials)]
    assert _release_bound(make, (X, y), (X2, y), n_trials, runs=runs) <= alpha2


# == black-box audit of the released histogram =====================================================
def _noisy_histogram_sensitivity_one(u, n_bins, epsilon, rng):
    """Broken on purpose: noise scale 1 / epsilon, as if one row changed one count only."""
    n_cells = n_bins ** u.shape[1]
    counts = np.bincount(_cell_index(u, n_bins), minlength=n_cells)
    return np.maximum(0, counts + discrete_laplace_noise(1.0 / epsilon, rng, size=n_cells)).astype(
        float
    )


def _histogram_release_counts(n_trials):
    """How often the event {n~_0 <= 148 and n~_3 >= 251} occurs in ``n_trials`` fits on D, D'.

    D has 150 rows in bin 0 and 250 in bin 3 (4 bins on [0, 1]); D' moves row 0 to bin 3.
    With a one-value grid the selection is trivial and the release is the training
    histogram; V holds one row, so for the shared split the training counts differ by one
    row moved between the two bins (or not at all). Whichever row is held out, the event's
    probability ratio is exactly exp(epsilon_train) for the honest noise and
    exp(2 epsilon_train) for the broken one.
    """
    x = np.repeat([0.1, 0.9], [150, 250])[:, None]
    x2 = x.copy()
    x2[0] = 0.9
    kwargs = dict(
        epsilon=1.0, epsilon_split=0.9, n_bins_grid=(4,), validation_size=1 / 400, delta=0.01
    )
    hits = []
    for data in (x, x2):
        counts = np.array(
            [
                DPValidatedHistogramDensity(random_state=seed, **kwargs).fit(data).noisy_counts_
                for seed in range(n_trials)
            ]
        )
        hits.append(int(np.sum((counts[:, 0] <= 148) & (counts[:, 3] >= 251))))
    return hits


def _histogram_event_law(scale_times_epsilon, epsilon_train=0.9):
    """Exact probabilities of the event on D and D' (noise scale ``scale_times_epsilon / eps``).

    The held-out row is uniform over the 400 rows: on D it is in bin 0 with probability
    150/400 (training counts (149, 250)), else (150, 249); on D', 149/400 and (148, 251),
    else (149, 250). The noise is discrete Laplace, ``P(z) = (1 - p) / (1 + p) p^|z|``.
    """
    p = math.exp(-epsilon_train / scale_times_epsilon)

    def at_most(z):  # P(Z <= z)
        return p**-z / (1 + p) if z < 0 else 1 - p ** (z + 1) / (1 + p)

    def event(n0, n3):
        return at_most(148 - n0) * (1 - at_most(250 - n3))

    return (
        150 / 400 * event(149, 250) + 250 / 400 * event(150, 249),
        149 / 400 * event(148, 251) + 251 / 400 * event(149, 250),
    )


def _histogram_release_bound(hits, n_trials):
    alpha = P_FALSE_ALARM / 4
    (lo1, hi1), (lo2, hi2) = (
        clopper_pearson(h, n_trials, confidence_level=1 - alpha) for h in hits
    )
    return float(max(np.log(lo1) - np.log(hi2), np.log(lo2) - np.log(hi1)))


def test_histogram_release_audit_passes_and_flags_sensitivity_one(monkeypatch):
    """Sample size from the bound: the sensitivity-one variant spends 2 epsilon_train = 1.8
    on the event (probabilities 0.0400 on D and 0.2407 on D', exact: ``_histogram_event_law``;
    the estimator's: 0.0954 and 0.2340, log-ratio 0.898 <= 1). With 1,800 fits per data set
    the Clopper-Pearson bound exceeds 1 for that variant with probability >= 0.99 (1,750:
    below), computed exactly and asserted below. The observed frequencies also match the
    exact event probabilities (binomial tests)."""
    n_trials = 1800
    honest_law, broken_law = _histogram_event_law(2.0), _histogram_event_law(1.0)
    p, q = broken_law
    assert detection_power(n_trials, q, None, 1.0, P_FALSE_ALARM / 4, q=p) >= 0.99
    for law, broken in ((honest_law, False), (broken_law, True)):
        if broken:
            monkeypatch.setattr(
                "skprivpred.density._histogram._noisy_histogram",
                _noisy_histogram_sensitivity_one,
            )
        hits = _histogram_release_counts(n_trials)
        for h, prob in zip(hits, law):
            assert stats.binomtest(h, n_trials, prob).pvalue > P_FALSE_ALARM / 4
        bound = _histogram_release_bound(hits, n_trials)
        assert bound > 1.0 if broken else bound <= 1.0


# == issue 49, item 4: nothing after the charge raises because of the rows =====================
@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_a_tol_double_precision_cannot_certify_is_refused_before_the_charge(
    binary_data, perturbation
):
    # tol=1e-16 used to charge, then raise ConvergenceError inside the release (objective).
    X, y = binary_data
    accountant = PrivacyAccountant(10.0)
    clf = DPV(
        lam_grid=(0.01, 0.1),
        perturbation=perturbation,
        classes=[0, 1],
        tol=1e-16,
        accountant=accountant,
        random_state=0,
    )
    with pytest.raises(InvalidParameterError, match="tol=1e-16 is below") as error:
        clf.fit(X, y)
    assert "Nothing was charged" in str(error.value)
    assert accountant.epsilon_spent == 0.0
    assert not hasattr(clf, "coef_")


def test_output_perturbation_solves_its_minimisers_before_the_charge(binary_data, monkeypatch):
    from skprivpred import ConvergenceError
    from skprivpred.linear_model import _validated_logistic as _validated

    def never_certified(*args, **kwargs):
        raise ConvergenceError("not certified")

    monkeypatch.setattr(_validated, "_certified_logistic", never_certified)
    X, y = binary_data
    accountant = PrivacyAccountant(10.0)
    clf = DPV(perturbation="output", classes=[0, 1], accountant=accountant, random_state=0)
    with pytest.raises(ConvergenceError):
        clf.fit(X, y)
    assert accountant.epsilon_spent == 0.0  # raised before the charge, nothing spent


def test_objective_perturbation_never_raises_after_the_charge(binary_data, monkeypatch):
    # A certificate out of reach (tol=1e-30, the public floor switched off to get there)
    # used to raise ConvergenceError after the charge; the release now completes.
    from skprivpred.linear_model import _validated_logistic as _validated

    monkeypatch.setattr(_validated, "check_reachable_tol", lambda *a: None, raising=False)
    X, y = binary_data
    accountant = PrivacyAccountant(10.0)
    params = dict(lam_grid=(0.01, 0.1), classes=[0, 1], random_state=0, fit_intercept=False)
    clf = DPV(tol=1e-30, accountant=accountant, **params).fit(X, y)
    assert accountant.epsilon_spent == pytest.approx(1.0)
    reference = DPV(tol=1e-12, **params).fit(X, y)  # the same draws, a reachable tol
    assert clf.best_index_ == reference.best_index_
    np.testing.assert_allclose(clf.coef_, reference.coef_, atol=clf.coef_grid_)


def test_output_noise_is_calibrated_to_the_sensitivity_plus_twice_the_solver_tol(binary_data):
    X, y = binary_data
    U = _unit_rows(X)
    signs = np.where(y == 1, 1.0, -1.0)
    R = sample_unit_laplace_vector(3, np.random.default_rng(1))
    lam, eps, tol = 0.3, 0.5, 1e-3
    solved = np.array([0.5, -0.25, 0.125])
    w, _, _ = _fit_with_noise(U, signs, lam, eps, "output", R, tol, solved=solved)
    np.testing.assert_allclose(w - solved, (2 / (lam * len(y)) + 2 * tol) / eps * R, rtol=1e-12)
    clf = DPV(perturbation="output", lam_grid=(lam,), classes=[0, 1], tol=tol, random_state=0)
    clf.fit(X, y)
    assert clf.privacy_guarantee_.details["coefficient_sensitivity"] == pytest.approx(
        2 / (lam * clf.n_train_) + 2 * tol
    )
    assert clf.privacy_guarantee_.details["solver_accuracy"] == tol


# == renamed parameter: ``mechanism`` is now ``perturbation`` (deprecated in 0.4) ==============
@pytest.mark.parametrize("value", ["objective", "output"])
def test_old_mechanism_name_warns_and_gives_the_same_model(binary_data, value):
    import warnings

    X, y = binary_data
    with pytest.warns(FutureWarning, match="`mechanism` was renamed `perturbation` in 0.4"):
        old = DPV(mechanism=value, classes=[0, 1], random_state=3).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = DPV(perturbation=value, classes=[0, 1], random_state=3).fit(X, y)
    assert np.array_equal(old.coef_, new.coef_) and np.array_equal(old.intercept_, new.intercept_)
    assert old.best_index_ == new.best_index_
    assert old.privacy_guarantee_.theorem == new.privacy_guarantee_.theorem
    assert old.get_params()["mechanism"] == value and new.get_params()["mechanism"] == "deprecated"
    assert clone(old).get_params() == old.get_params()


def test_setting_both_perturbation_names_is_refused(binary_data):
    X, y = binary_data
    with pytest.raises(InvalidParameterError, match="perturbation.*mechanism"):
        DPV(perturbation="output", mechanism="objective", classes=[0, 1]).fit(X, y)


def test_public_functions_accept_the_old_mechanism_keyword_with_a_warning():
    import warnings

    with pytest.warns(FutureWarning, match="`mechanism` was renamed `perturbation`"):
        old = auto_lam_grid(800, 4, 0.5, mechanism="output")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = auto_lam_grid(800, 4, 0.5, perturbation="output")
    assert np.array_equal(old, new)
    args = ((0.01, 0.1), 500, 100, 4, 1.0, "hinge")
    with pytest.warns(FutureWarning, match="`mechanism` was renamed `perturbation`"):
        old = logistic_stability_constants(*args, mechanism="output", delta=1e-6)
    assert old == logistic_stability_constants(*args, perturbation="output", delta=1e-6)
    with pytest.raises(TypeError, match="perturbation"):
        auto_lam_grid(800, 4, 0.5, "output", mechanism="output")
