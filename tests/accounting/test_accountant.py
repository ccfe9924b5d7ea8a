"""Tests of the composition arithmetic of ``skprivpred.accounting.PrivacyAccountant``.

What is checked:

* Basic composition: spending is ``sum n_rows * eps`` and ``sum n_rows * delta``; float
  noise does not refuse a charge that fits exactly (ten charges of 0.1 in 1.0) and does
  not admit one more; a refused charge raises ``BudgetExhaustedError`` and changes
  nothing; ``can_charge`` agrees with ``charge``; ``remaining_queries`` is exact;
  ``n_queries`` caps the number of rows.
* Advanced (Dwork-Rothblum-Vadhan, one per-row guarantee) composition: the reported pair is the
  better of the basic and the advanced pairs, pinned at eps0=0.01, k=10000,
  delta'=1e-6; it admits more queries than basic for a small per-row epsilon; the delta
  cap is respected; constructor errors.
* Sharing: ``copy.copy``, ``copy.deepcopy`` and ``sklearn.base.clone`` of an estimator
  keep the very same accountant object.
* A pickled copy charges the same ledger; a ':memory:' accountant is shared by its copies
  in its own process only (other processes: see ``test_privacy_state.py``).
* Thread safety: concurrent charges never overspend.
* Bad input in the constructor and in ``charge`` raises errors naming the parameter,
  and a failed charge changes nothing.
* A refused fit-time release (the one-release estimators, the exponential mechanism, the
  grid search's selection) says it is one ``(epsilon, delta)`` release, not a query row.
"""

from __future__ import annotations

import copy
import math
import pickle
import sys
import threading

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

import skprivpred
from skprivpred import (
    DPValidatedLogisticRegression,
    ExponentialMechanismClassifier,
    PrivateGridSearchCV,
    SubsampleAggregateClassifier,
    SufficientStatisticClassifier,
)
from skprivpred.accounting import PrivacyAccountant
from skprivpred.exceptions import BudgetExhaustedError


# --------------------------------------------------------------------------- helpers
def state_of(acc):
    """Everything observable about an accountant's spending."""
    return (acc.queries_answered, acc.epsilon_spent, acc.delta_spent, acc.spent())


def advanced_epsilon(per_row_epsilons, delta_prime):
    """Heterogeneous advanced composition (Dwork & Roth Thm 3.20 / DRV 2010)."""
    eps = np.asarray(per_row_epsilons, dtype=float)
    return math.sqrt(2.0 * math.log(1.0 / delta_prime) * np.sum(eps**2)) + np.sum(
        eps * np.expm1(eps)
    )


def advanced_accountant(epsilon=10.0, delta=1e-5, delta_prime=1e-6, **kwargs):
    return PrivacyAccountant(
        epsilon=epsilon, delta=delta, composition="advanced", delta_prime=delta_prime, **kwargs
    )


# ---------------------------------------------------------------- basic composition
def test_fresh_accountant_has_spent_nothing():
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    assert state_of(acc) == (0, 0.0, 0.0, (0.0, 0.0))


def test_basic_spending_is_the_sum_over_rows():
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    charges = [(3, 0.5, 1e-6), (1, 0.25, 0.0), (10, 0.1, 2e-5), (0, 7.0, 0.0)]
    for n_rows, eps, delta in charges:
        acc.charge(n_rows, eps, delta)
    assert acc.queries_answered == 14
    assert acc.epsilon_spent == pytest.approx(3 * 0.5 + 0.25 + 10 * 0.1, rel=1e-14)
    assert acc.delta_spent == pytest.approx(3e-6 + 10 * 2e-5, rel=1e-14)
    assert acc.spent() == (acc.epsilon_spent, acc.delta_spent)


def test_ten_charges_of_a_tenth_fit_exactly_and_the_eleventh_is_refused():
    acc = PrivacyAccountant(epsilon=1.0)
    for _ in range(10):
        acc.charge(1, 0.1)
    assert acc.queries_answered == 10
    assert acc.epsilon_spent == pytest.approx(1.0, rel=1e-12)
    before = state_of(acc)
    assert not acc.can_charge(1, 0.1)
    with pytest.raises(BudgetExhaustedError):
        acc.charge(1, 0.1)
    assert state_of(acc) == before


def test_refusal_changes_nothing_and_a_smaller_charge_still_succeeds():
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    acc.charge(3, 0.25, 1e-6)
    before = state_of(acc)
    with pytest.raises(BudgetExhaustedError, match="budget"):
        acc.charge(2, 0.25)  # 1.25 > 1.0
    assert state_of(acc) == before
    with pytest.raises(BudgetExhaustedError):
        acc.charge(1, 0.1, 1e-5)  # delta 1.3e-5 > 1e-5
    assert state_of(acc) == before
    acc.charge(1, 0.25)
    assert acc.queries_answered == 4
    assert acc.epsilon_spent == pytest.approx(1.0, rel=1e-12)


def test_budget_exhausted_error_is_a_runtime_error_exported_at_top_level():
    assert skprivpred.BudgetExhaustedError is BudgetExhaustedError
    assert issubclass(BudgetExhaustedError, RuntimeError)


@pytest.mark.parametrize(
    ("n_rows", "epsilon", "delta"),
    [
        (1, 0.1, 0.0),
        (4, 0.1, 0.0),
        (5, 0.1, 0.0),
        (6, 0.1, 0.0),
        (1, 0.3, 0.0),
        (2, 0.3, 0.0),
        (1, 0.01, 2e-6),
        (1, 0.01, 3e-6),
        (0, 5.0, 0.0),
    ],
)
def test_can_charge_agrees_with_charge(n_rows, epsilon, delta):
    acc = PrivacyAccountant(epsilon=1.0, delta=5e-6)
    acc.charge(5, 0.1, 1e-6)
    before = state_of(acc)
    predicted = acc.can_charge(n_rows, epsilon, delta)
    assert state_of(acc) == before  # can_charge itself spends nothing
    try:
        acc.charge(n_rows, epsilon, delta)
        succeeded = True
    except BudgetExhaustedError:
        succeeded = False
        assert state_of(acc) == before
    assert predicted == succeeded


@pytest.mark.parametrize(
    ("budget", "epsilon", "expected"),
    [
        (1.0, 0.1, 10),
        (1.0, 0.3, 3),
        (0.7, 0.1, 7),
        (2.5, 1 / 3, 7),
        (1.0, 1 / 7, 7),
        (math.pi, 0.01, 314),
        (0.05, 0.003, 16),
        (1.0, 0.001, 1000),
    ],
)
def test_remaining_queries_is_exact(budget, epsilon, expected):
    acc = PrivacyAccountant(epsilon=budget)
    k = acc.remaining_queries(epsilon)
    assert k == expected
    assert acc.can_charge(k, epsilon)
    assert not acc.can_charge(k + 1, epsilon)
    # The same count fits one row at a time, and one more row does not.
    for _ in range(k):
        acc.charge(1, epsilon)
    assert acc.remaining_queries(epsilon) == 0
    with pytest.raises(BudgetExhaustedError):
        acc.charge(1, epsilon)


def test_remaining_queries_after_spending_and_with_delta():
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    acc.charge(7, 0.1, 1e-6)
    assert acc.remaining_queries(0.1) == 13
    assert acc.remaining_queries(0.1, 1e-6) == 3  # delta binds: 7 + 3 = 10 rows of 1e-6
    assert acc.can_charge(3, 0.1, 1e-6) and not acc.can_charge(4, 0.1, 1e-6)


def test_unlimited_budget_records_spending():
    acc = PrivacyAccountant()
    acc.charge(1000, 5.0)
    assert acc.epsilon_spent == 5000.0
    assert acc.remaining_queries(1.0) == sys.maxsize


def test_n_queries_caps_rows():
    acc = PrivacyAccountant(n_queries=5)
    assert acc.remaining_queries(1.0) == 5
    acc.charge(3, 1.0)
    assert acc.remaining_queries(1.0) == 2
    assert not acc.can_charge(3, 1.0)
    before = state_of(acc)
    with pytest.raises(BudgetExhaustedError, match="n_queries"):
        acc.charge(3, 1.0)
    assert state_of(acc) == before
    acc.charge(2, 1.0)
    assert acc.remaining_queries(1.0) == 0
    with pytest.raises(BudgetExhaustedError):
        acc.charge(1, 1.0)


def test_n_queries_and_epsilon_budget_together():
    acc = PrivacyAccountant(epsilon=1.0, n_queries=8)
    assert acc.remaining_queries(0.1) == 8  # the row cap binds
    assert acc.remaining_queries(0.25) == 4  # epsilon binds
    zero = PrivacyAccountant(n_queries=0)
    assert zero.remaining_queries(0.1) == 0
    with pytest.raises(BudgetExhaustedError):
        zero.charge(1, 0.1)


# ------------------------------------------------------------- advanced composition
def test_advanced_composition_pinned_value():
    acc = advanced_accountant(epsilon=10.0, delta=1e-5, delta_prime=1e-6)
    for _ in range(100):
        acc.charge(100, 0.01)
    expected = 0.01 * math.sqrt(2 * 10_000 * math.log(1e6)) + 10_000 * 0.01 * math.expm1(0.01)
    assert expected == pytest.approx(6.261538478, abs=1e-9)  # pinned
    assert acc.queries_answered == 10_000
    assert acc.epsilon_spent == pytest.approx(expected, rel=1e-12)
    assert acc.delta_spent == pytest.approx(1e-6, rel=1e-12)  # k * 0 + delta'


def test_advanced_composition_with_per_row_delta():
    acc = advanced_accountant(epsilon=10.0, delta=1e-4, delta_prime=1e-6)
    acc.charge(10_000, 0.01, 1e-9)
    assert acc.epsilon_spent == pytest.approx(advanced_epsilon([0.01] * 10_000, 1e-6), rel=1e-12)
    assert acc.delta_spent == pytest.approx(10_000 * 1e-9 + 1e-6, rel=1e-12)


def test_advanced_composition_reports_basic_when_basic_is_smaller():
    acc = advanced_accountant(epsilon=10.0, delta=1e-5, delta_prime=1e-6)
    acc.charge(5, 1.0)
    assert advanced_epsilon([1.0] * 5, 1e-6) > 5.0
    assert acc.spent() == (5.0, 0.0)


def test_advanced_composition_refuses_a_second_per_row_guarantee():
    # The theorem is for one per-row (eps0, delta0); mixing needs filter theory.
    acc = advanced_accountant(epsilon=100.0, delta=1e-5, delta_prime=1e-6)
    acc.charge(5000, 0.01)
    before = state_of(acc)
    with pytest.raises(ValueError, match="one per-row guarantee"):
        acc.charge(1, 0.02)
    assert state_of(acc) == before
    acc.charge(10, 0.01)
    assert acc.epsilon_spent == pytest.approx(advanced_epsilon([0.01] * 5010, 1e-6), rel=1e-10)
    basic = PrivacyAccountant(epsilon=100.0)
    basic.charge(5000, 0.01)
    basic.charge(1, 0.5)
    assert basic.epsilon_spent == pytest.approx(50.5)


def test_advanced_composition_respects_the_delta_cap():
    # Per-row deltas leave no room for delta': only the basic pair is valid.
    acc = advanced_accountant(epsilon=200.0, delta=1e-5, delta_prime=1e-6)
    acc.charge(10_000, 0.01, 1e-9)  # sum delta = 1e-5 exactly: + delta' would exceed
    assert acc.spent() == pytest.approx((100.0, 1e-5), rel=1e-12)
    acc = advanced_accountant(epsilon=10.0, delta=1e-5, delta_prime=1e-6)
    with pytest.raises(BudgetExhaustedError):
        acc.charge(10_000, 0.01, 1e-9)  # basic eps 100 > 10, advanced delta 1.1e-5 > 1e-5
    assert state_of(acc) == (0, 0.0, 0.0, (0.0, 0.0))


def test_advanced_composition_allows_more_queries_than_basic():
    basic = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    advanced = advanced_accountant(epsilon=10.0, delta=1e-5, delta_prime=1e-6)
    assert basic.remaining_queries(0.01) == 1000
    k = advanced.remaining_queries(0.01)
    assert k == 21972  # largest k with advanced_epsilon([0.01] * k, 1e-6) <= 10
    assert advanced_epsilon([0.01] * k, 1e-6) <= 10.0 < advanced_epsilon([0.01] * (k + 1), 1e-6)
    assert advanced.can_charge(k, 0.01) and not advanced.can_charge(k + 1, 0.01)
    advanced.charge(k, 0.01)
    with pytest.raises(BudgetExhaustedError):
        advanced.charge(1, 0.01)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(epsilon=1.0, delta=1e-5, composition="advanced"), "delta_prime"),
        (dict(epsilon=1.0, delta=1e-5, composition="advanced", delta_prime=1e-5), "delta_prime"),
        (dict(epsilon=1.0, delta=1e-5, composition="advanced", delta_prime=1e-4), "delta_prime"),
        (dict(epsilon=1.0, delta=0.0, composition="advanced", delta_prime=1e-6), "delta_prime"),
        (dict(epsilon=1.0, delta=1e-5, composition="advanced", delta_prime=0.0), "delta_prime"),
        (
            dict(epsilon=1.0, delta=1e-5, composition="advanced", delta_prime=float("nan")),
            "delta_prime",
        ),
    ],
)
def test_advanced_composition_constructor_errors(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PrivacyAccountant(**kwargs)


# ------------------------------------------------------------------------- sharing
def test_copies_of_the_accountant_are_the_accountant():
    acc = PrivacyAccountant(epsilon=1.0)
    assert copy.copy(acc) is acc
    assert copy.deepcopy(acc) is acc
    assert copy.deepcopy({"a": acc, "b": [acc]})["b"][0] is acc


def test_estimator_copies_and_clones_share_the_accountant():
    acc = PrivacyAccountant(epsilon=1.0)
    est = skprivpred.SubsampleAggregateClassifier(accountant=acc)
    assert copy.copy(est).accountant is acc
    assert copy.deepcopy(est).accountant is acc
    assert clone(est).accountant is acc
    assert clone(est).get_params()["accountant"] is acc


def test_a_clone_spends_the_shared_budget():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    acc = PrivacyAccountant(epsilon=1.0)
    est = skprivpred.SubsampleAggregateClassifier(
        epsilon=0.25, n_teachers=2, classes=[0, 1], accountant=acc, random_state=0
    )
    twin = clone(est).fit(X, y)
    est.fit(X, y)
    twin.predict(X[:3])
    assert acc.queries_answered == 3
    est.predict(X[:1])
    assert acc.epsilon_spent == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(BudgetExhaustedError):
        twin.predict(X[:1])
    assert acc.queries_answered == 4


# ------------------------------------------------------------------------- pickling
def test_a_pickled_copy_charges_the_same_budget():
    acc = advanced_accountant(epsilon=10.0, delta=1e-5, delta_prime=1e-6, n_queries=50_000)
    acc.charge(4000, 0.01)
    restored = pickle.loads(pickle.dumps(acc))
    assert restored is not acc
    assert state_of(restored) == state_of(acc)
    assert (
        restored.epsilon,
        restored.delta,
        restored.composition,
        restored.delta_prime,
        restored.n_queries,
        restored.ledger_url,
        restored.name,
    ) == (10.0, 1e-5, "advanced", 1e-6, 50_000, acc.ledger_url, "default")
    # Both copies draw on one budget: what one spends, the other sees.
    restored.charge(10, 0.01)
    assert acc.queries_answered == restored.queries_answered == 4010
    with pytest.raises(BudgetExhaustedError):
        acc.charge(restored.remaining_queries(0.01) + 1, 0.01)
    remaining = acc.remaining_queries(0.01)
    restored.charge(remaining, 0.01)
    with pytest.raises(BudgetExhaustedError):
        acc.charge(1, 0.01)
    assert acc.queries_answered == 4010 + remaining


def test_a_memory_ledger_is_one_budget_for_its_copies_in_its_process():
    acc = PrivacyAccountant(epsilon=1.0, ledger=":memory:")
    acc.charge(2, 0.1)
    assert copy.deepcopy(acc) is acc
    twin = pickle.loads(pickle.dumps(acc))  # unpickled in this process: the same budget
    twin.charge(3, 0.1)
    assert acc.queries_answered == twin.queries_answered == 5
    twin.charge(5, 0.1)
    with pytest.raises(BudgetExhaustedError):
        acc.charge(1, 0.1)


# -------------------------------------------------------------------- thread safety
def race_charges(acc, n_threads, per_thread, epsilon):
    """Charge ``acc`` from ``n_threads`` threads at once; return (successes, refusals)."""
    barrier = threading.Barrier(n_threads)
    successes = [0] * n_threads
    refusals = [0] * n_threads

    def worker(i):
        barrier.wait()
        for _ in range(per_thread):
            try:
                acc.charge(1, epsilon)
                successes[i] += 1
            except BudgetExhaustedError:
                refusals[i] += 1

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old_interval)
    return sum(successes), sum(refusals)


def test_concurrent_charges_never_overspend():
    # Repeated a few times: an unlocked check-then-update loses this race in most rounds.
    n_threads, per_thread, epsilon = 8, 500, 0.001
    for _ in range(5):
        acc = PrivacyAccountant(epsilon=1000 * epsilon)
        successes, refusals = race_charges(acc, n_threads, per_thread, epsilon)
        assert successes == 1000
        assert refusals == n_threads * per_thread - 1000
        assert acc.queries_answered == 1000
        assert acc.epsilon_spent == pytest.approx(1.0, rel=1e-12)
        assert acc.epsilon_spent <= acc.epsilon * (1 + 1e-12)


# ------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        (dict(epsilon=0.0), ValueError, "epsilon"),
        (dict(epsilon=-1.0), ValueError, "epsilon"),
        (dict(epsilon=float("nan")), ValueError, "epsilon"),
        (dict(epsilon=True), TypeError, "epsilon"),
        (dict(epsilon="1"), TypeError, "epsilon"),
        (dict(delta=-1e-9), ValueError, "delta"),
        (dict(delta=1.0), ValueError, "delta"),
        (dict(delta=float("nan")), ValueError, "delta"),
        (dict(delta=False), TypeError, "delta"),
        (dict(composition="renyi"), ValueError, "composition"),
        (dict(composition=None), ValueError, "composition"),
        (dict(n_queries=-1), ValueError, "n_queries"),
        (dict(n_queries=2.5), ValueError, "n_queries"),
        (dict(n_queries=True), ValueError, "n_queries"),
        (dict(delta_prime=-0.1), ValueError, "delta_prime"),
    ],
    ids=lambda x: repr(x) if isinstance(x, dict) else None,
)
def test_constructor_rejects_bad_input_by_name(kwargs, error, name):
    with pytest.raises(error, match=name):
        PrivacyAccountant(**kwargs)


def test_constructor_accepts_numpy_scalars():
    acc = PrivacyAccountant(epsilon=np.float64(1.0), delta=np.float32(0.0), n_queries=np.int64(3))
    acc.charge(np.int64(2), np.float64(0.5))
    assert acc.queries_answered == 2 and acc.n_queries == 3


@pytest.mark.parametrize(
    ("args", "error", "name"),
    [
        ((-1, 0.1), ValueError, "n_rows"),
        ((1.5, 0.1), (ValueError, TypeError), "n_rows"),
        ((2.0, 0.1), (ValueError, TypeError), "n_rows"),
        ((True, 0.1), (ValueError, TypeError), "n_rows"),
        (("3", 0.1), (ValueError, TypeError), "n_rows"),
        ((None, 0.1), (ValueError, TypeError), "n_rows"),
        ((1, 0.0), ValueError, "epsilon"),
        ((1, -0.1), ValueError, "epsilon"),
        ((1, float("nan")), ValueError, "epsilon"),
        ((1, float("inf")), ValueError, "epsilon"),
        ((1, True), TypeError, "epsilon"),
        ((1, "0.1"), TypeError, "epsilon"),
        ((1, 0.1, -1e-9), ValueError, "delta"),
        ((1, 0.1, 1.0), ValueError, "delta"),
        ((1, 0.1, float("nan")), ValueError, "delta"),
    ],
    ids=repr,
)
def test_charge_rejects_bad_input_by_name_and_changes_nothing(args, error, name):
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    acc.charge(2, 0.1, 1e-6)
    before = state_of(acc)
    with pytest.raises(error, match=name):
        acc.charge(*args)
    with pytest.raises(error, match=name):
        acc.can_charge(*args)
    assert state_of(acc) == before
    acc.charge(1, 0.1)  # still usable
    assert acc.queries_answered == 3


@pytest.mark.parametrize("bad", [0.0, float("nan"), float("inf"), True], ids=repr)
def test_remaining_queries_rejects_bad_epsilon_by_name(bad):
    with pytest.raises((ValueError, TypeError), match="epsilon"):
        PrivacyAccountant(epsilon=1.0).remaining_queries(bad)


# -- zCDP composition -------------------------------------------------------------------
def test_zcdp_needs_a_delta_budget():
    with pytest.raises(ValueError, match="zcdp"):
        PrivacyAccountant(epsilon=1.0, composition="zcdp")


def test_zcdp_pure_charges_use_rho_and_ledger_charges_compose_basically():
    from skprivpred.accounting import eps_of_rho

    acc = PrivacyAccountant(epsilon=4.0, delta=1e-5, composition="zcdp")
    acc.charge(100, 0.05)  # generic pure DP: rho = eps^2 / 2
    assert acc.rho_spent == pytest.approx(100 * 0.05**2 / 2)
    assert acc.epsilon_spent == pytest.approx(eps_of_rho(100 * 0.05**2 / 2, 1e-5))
    acc.charge(10, 0.1, delta=1e-7)  # an (eps, delta) mechanism: the ledger
    assert acc.rho_spent == pytest.approx(100 * 0.05**2 / 2)  # not in the zCDP sum
    expected = eps_of_rho(100 * 0.05**2 / 2, 1e-5 - 10 * 1e-7) + 10 * 0.1
    assert acc.epsilon_spent == pytest.approx(min(expected, 100 * 0.05 + 10 * 0.1))
    before = state_of(acc)
    with pytest.raises(BudgetExhaustedError):
        acc.charge(10_000, 0.05)
    assert state_of(acc) == before


def test_zcdp_bounded_range_rho_buys_four_times_the_rows():
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6, composition="zcdp")
    generic = acc.remaining_queries(0.01)
    bounded_range = acc.remaining_queries(0.01, rho=0.01**2 / 8)
    assert 3.9 < bounded_range / generic < 4.1
    with pytest.raises(ValueError, match="rho"):
        acc.charge(1, 0.01, rho=-1.0)


def test_gaussian_charge_with_rho_composes_as_zcdp():
    """A (eps, delta) charge that states its rho is summed as zCDP, not by basic composition."""
    from skprivpred.accounting import eps_of_rho

    rho, delta_row = 0.001, 1e-9
    eps_row = eps_of_rho(rho, delta_row)
    with_rho = PrivacyAccountant(epsilon=30.0, delta=1e-5, composition="zcdp", ledger=":memory:")
    without = PrivacyAccountant(epsilon=30.0, delta=1e-5, composition="zcdp", ledger=":memory:")
    with_rho.charge(n_rows=100, epsilon=eps_row, delta=delta_row, rho=rho)
    without.charge(n_rows=100, epsilon=eps_row, delta=delta_row)
    # zCDP: 100 rho = 0.1, converted once at the whole delta budget.
    assert (with_rho.rho_spent, without.rho_spent) == (pytest.approx(100 * rho), 0.0)
    assert with_rho.epsilon_spent == pytest.approx(eps_of_rho(100 * rho, 1e-5), rel=1e-9)
    assert with_rho.epsilon_spent < without.epsilon_spent == pytest.approx(100 * eps_row)


@pytest.mark.parametrize("k, delta_prime", [(1, 0.9), (2, 0.5), (10, 1e-7), (10_000, 1e-6)])
def test_advanced_composition_inverse_is_the_largest_admissible(k, delta_prime):
    """The inverse meets the target from below, also where its root lies above epsilon."""
    from skprivpred.accounting import advanced_composition_epsilon, advanced_composition_inverse

    eps0 = advanced_composition_inverse(1.0, k, delta_prime)
    assert advanced_composition_epsilon(eps0, k, delta_prime) <= 1.0
    assert advanced_composition_epsilon(eps0 * (1 + 1e-9), k, delta_prime) > 1.0


# ---------------------------------------------------------------------- messages
def test_refusals_count_rows_in_the_right_number():
    acc = PrivacyAccountant(epsilon=1.0, ledger=":memory:")
    acc.charge(4, 0.2)
    with pytest.raises(BudgetExhaustedError) as e:
        acc.charge(2, 0.2)
    assert "answering 2 more query rows at" in str(e.value)
    assert str(e.value).endswith("; 1 row at that cost still fits.")
    assert e.value.budget == "default"  # the refusing budget is named
    assert repr(acc).endswith("over 4 query rows)")
    with pytest.raises(BudgetExhaustedError, match="; 0 rows at that cost still fit.$"):
        acc.charge(1, 0.5)
    capped = PrivacyAccountant(n_queries=1, ledger=":memory:")
    capped.charge(1, 0.1)
    assert repr(capped).endswith("over 1 query row)")
    with pytest.raises(BudgetExhaustedError, match=r"^answering 1 more query row would exceed"):
        capped.charge(1, 0.1)


# ----------------------------------------------------------- the unit vocabulary
def test_a_guarantee_unit_is_one_of_the_vocabulary():
    from skprivpred import PrivacyGuarantee
    from skprivpred.accounting import PER_QUERY_ROW, GuaranteeUnit

    by_text = PrivacyGuarantee(1.0, 0.0, unit="each answered query row", theorem="t")
    assert by_text.unit is GuaranteeUnit.QUERY_ROW is PER_QUERY_ROW
    assert by_text == PrivacyGuarantee(1.0, 0.0, unit=GuaranteeUnit.QUERY_ROW, theorem="t")
    with pytest.raises(skprivpred.InvalidParameterError, match="unit must be a GuaranteeUnit"):
        PrivacyGuarantee(
            1.0, 0.0, unit="each answered query row, per query method call", theorem="t"
        )
    released = PrivacyGuarantee(
        1.0, 0.0, unit=GuaranteeUnit.RELEASE, theorem="t", scope="the released hypothesis"
    )
    assert "for one release made by fit (the released hypothesis)" in str(released)


# -- a refused fit-time release says it is one (epsilon, delta) release ------------------------
# Issue 41, item 4: SufficientStatisticClassifier(accountant=PrivacyAccountant(epsilon=1.0))
# used to fail with the per-query message "answering 1 more query row at epsilon=1.0,
# delta=1e-06 per row ... 0 rows at that cost still fit".
def _data(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    return X, y


def test_delta_zero_accountant_is_told_to_take_a_delta():
    X, y = _data()
    y = y.copy()
    y[:200] = -1
    accountant = PrivacyAccountant(epsilon=1.0)
    clf = SufficientStatisticClassifier(classes=[0, 1], accountant=accountant)
    # The budget is checked before any row is read (issue 40: before any graph over
    # a dask collection runs), so no count of public rows is warned about first.
    with pytest.raises(BudgetExhaustedError) as info:
        clf.fit(X, y)
    message = str(info.value)
    assert "query row" not in message.replace("not per query row", "")
    assert "SufficientStatisticClassifier.fit is one release of the model" in message
    assert "epsilon=1.0, delta=1e-06" in message
    assert "the accountant has delta=0" in message
    assert "delta of at least the estimator's delta=1e-06" in message
    assert accountant.queries_answered == 0  # nothing charged
    assert info.value.budget == accountant.name


def _sufficient(acc):
    return SufficientStatisticClassifier(classes=[0, 1], accountant=acc)


def _validated(acc):
    return DPValidatedLogisticRegression(classes=[0, 1], accountant=acc, feature_norm_bound=3.0)


def _exponential(acc):
    return ExponentialMechanismClassifier(classes=[0, 1], accountant=acc)


def _search(acc):
    return PrivateGridSearchCV(
        SubsampleAggregateClassifier(LogisticRegression(), classes=[0, 1]),
        {"n_teachers": [5, 10]},
        accountant=acc,
    )


@pytest.mark.parametrize("make", [_sufficient, _validated, _exponential, _search])
def test_every_model_release_is_refused_as_a_release(make):
    X, y = _data()
    if make is _sufficient:
        y = y.copy()
        y[:200] = -1
    if make is _exponential:
        X = (X > 0).astype(int)  # conjunctions of binary features
    accountant = PrivacyAccountant(epsilon=1e-3, delta=1e-3)  # too small for any fit
    with pytest.raises(BudgetExhaustedError) as info:
        make(accountant).fit(X, y)
    message = str(info.value)
    assert ".fit is one release of the model at epsilon=" in message
    assert "answering 1 more query row" not in message
    assert accountant.queries_answered == 0


def test_second_fit_on_a_spent_accountant_says_fits_add_up():
    X, y = _data()
    y = y.copy()
    y[:200] = -1
    accountant = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    _sufficient(accountant).fit(X, y)
    with pytest.raises(BudgetExhaustedError, match="size the accountant for all the fits"):
        _sufficient(accountant).fit(X, y)
