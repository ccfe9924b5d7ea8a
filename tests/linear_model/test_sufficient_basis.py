"""A user basis (``basis=``) of the one-release estimators sees one labelled value at a time.

Issue 38, items 8 and 9. Whatever a user transformer does on a labelled row (raises, warns,
returns non-finite values or a wrong shape), that row's block is the fixed public zero
block and the release is charged as on any other data set; and each labelled row's block
depends on that row alone, by construction: every value goes through its own copy of the
transformer fitted on the public rows, inside the isolation guard, so that neither a
transformer that standardises its batch, nor one that keeps state across calls (in an
attribute, a closure or numpy's global random state) couples one labelled row's features
to another's.

The neighbour tests replace one labelled row (D -> D'), fit both with an accountant and
check that the charge is the same and that the exact grid index of the statistic moves by
at most the index sensitivity the estimator claims (``plan["index_sensitivity"]``, the
statistic by at most ``plan["sensitivity"]``), for the binary and multiclass classifier and
the regressor.
"""

from __future__ import annotations

import pickle
import threading
import warnings

import cloudpickle
import numpy as np
import pytest
from _registry import make_estimator
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.preprocessing import FunctionTransformer, SplineTransformer

from skprivpred import (
    InvalidParameterError,
    PrivacyAccountant,
    SufficientStatisticClassifier,
    SufficientStatisticRegressor,
)
from skprivpred.linear_model import _basis as sufficient_module
from skprivpred.linear_model import _sufficient as sufficient_module_sufficient
from skprivpred.linear_model._basis import _isolated_block

N_PUBLIC, N_LABELLED = 100, 200
REPLACED = N_PUBLIC + 7  # the labelled row that D' replaces
MARK = "the basis saw"  # in the message of every warning a test basis raises


# -- user bases -----------------------------------------------------------------------------------
class WarnsAbove(TransformerMixin, BaseEstimator):
    """Identity that warns (naming the value) on values above ``threshold``."""

    def __init__(self, threshold=3.0):
        self.threshold = threshold

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=float)
        for value in X[X > self.threshold]:
            warnings.warn(f"{MARK} {value}", UserWarning, stacklevel=2)
        return X


class WideAbove(TransformerMixin, BaseEstimator):
    """One column, or two columns and two rows per row on a batch holding a value above 3."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=float)
        if np.any(X > 3.0):
            return np.repeat(np.hstack([X, X]), 2, axis=0)
        return X


class RunningCentre(TransformerMixin, BaseEstimator):
    """Keeps state across calls: each value minus the mean of every value it has seen."""

    def fit(self, X, y=None):
        self.seen_ = []
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=float)
        self.seen_.extend(X.ravel().tolist())
        return np.tanh(X - np.mean(self.seen_))


class PreviousValue(TransformerMixin, BaseEstimator):
    """Keeps state across calls: ``[x, the last value of the previous call]``."""

    def fit(self, X, y=None):
        self.previous_ = 0.0
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=float)
        out = np.column_stack([np.tanh(X[:, 0]), np.full(X.shape[0], np.tanh(self.previous_))])
        self.previous_ = float(X[-1, 0])
        return out


class GlobalRandom(TransformerMixin, BaseEstimator):
    """Reads numpy's global random state after a value-dependent number of draws."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=float)
        np.random.random(int(abs(X[0, 0]) * 10) % 7)  # noqa: NPY002
        return np.tanh(X) + np.random.random((X.shape[0], 1))  # noqa: NPY002


class Unpicklable(TransformerMixin, BaseEstimator):
    """Holds a lock once fitted: no copy of it can be made."""

    def fit(self, X, y=None):
        self.lock_ = threading.Lock()
        return self

    def transform(self, X):
        return np.asarray(X, dtype=float)


def closure_basis():
    """A closure that keeps state across calls (each value minus the mean of all seen)."""
    seen: list = []

    def centre(Z):
        seen.extend(np.ravel(Z).tolist())
        return np.tanh(Z - np.mean(seen))

    return FunctionTransformer(centre)


def _standardise(Z):
    return (Z - Z.mean()) / Z.std()


# -- data sets: D and D' (one labelled row replaced) -----------------------------------------------
def _labels(x, kind):
    if kind == "binary":
        return (x > 0).astype(float)
    if kind == "multiclass":
        return np.digitize(x, [-0.5, 0.5]).astype(float)
    return np.clip(x, -1.0, 1.0)


def _pair(kind, low, high, replacement, seed=0):
    """Two numeric columns uniform in (low, high); row REPLACED's first value -> replacement."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(low, high, size=(N_PUBLIC + N_LABELLED, 2))
    y = _labels(X[:, 0] - 0.5 * (low + high), kind)
    marker = np.nan if kind == "regression" else -1.0
    y[:N_PUBLIC] = marker
    if kind != "regression":
        y = y.astype(int)
    X2 = X.copy()
    X2[REPLACED, 0] = replacement
    y2 = y.copy()
    y2[REPLACED] = _labels(np.array([replacement - 0.5 * (low + high)]), kind)[0]
    return X, y, X2, y2


def _make(kind, basis, accountant=None):
    if kind == "regression":
        return make_estimator(
            SufficientStatisticRegressor, y_bounds=(-1.0, 1.0), basis=basis, accountant=accountant
        )
    classes = [0, 1] if kind == "binary" else [0, 1, 2]
    return make_estimator(
        SufficientStatisticClassifier, classes=classes, basis=basis, accountant=accountant
    )


BASES = {
    # item 8: the reproductions of the issue, and the rest of the class
    "spline extrapolation=error, a row outside the public range": (
        lambda: SplineTransformer(extrapolation="error"),
        (-3.0, 3.0, 10.0),
    ),
    "log, a row at 0": (lambda: FunctionTransformer(np.log), (0.5, 2.0, 0.0)),
    "NaN above a threshold": (
        lambda: FunctionTransformer(lambda Z: np.where(Z > 3.0, np.nan, Z)),
        (-2.0, 2.0, 5.0),
    ),
    "infinity above a threshold": (
        lambda: FunctionTransformer(lambda Z: np.where(Z > 3.0, np.inf, Z)),
        (-2.0, 2.0, 5.0),
    ),
    "a wrong shape above a threshold": (WideAbove, (-2.0, 2.0, 5.0)),
    "warns above a threshold": (WarnsAbove, (-2.0, 2.0, 5.0)),
    # item 9: not row-wise
    "standardises its batch": (lambda: FunctionTransformer(_standardise), (-2.0, 2.0, 1e3)),
    "keeps a running mean in an attribute": (RunningCentre, (-2.0, 2.0, 1e3)),
    "keeps a running mean in a closure": (closure_basis, (-2.0, 2.0, 1e3)),
}
KINDS = ["binary", "multiclass", "regression"]


def neighbour_violations(case, kind):
    """What the neighbour check finds wrong on the pair of ``case`` (empty: nothing).

    Fits D and D' with an accountant each: neither may raise, no warning of the basis may
    reach the caller, and both must be charged the same (epsilon, delta, rho); then the
    exact statistic of D and D' may move by at most the claimed sensitivity and its grid
    index by at most the claimed index sensitivity, with the same public plan.
    """
    factory, (low, high, replacement) = BASES[case]
    X, y, X2, y2 = _pair(kind, low, high, replacement)
    found = []
    charged = []
    for name, data in (("D", (X, y)), ("D'", (X2, y2))):
        accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                _make(kind, factory(), accountant).fit(*data)
            except Exception as exc:  # noqa: BLE001 - the finding
                found.append(f"fit on {name} raised {type(exc).__name__}: {exc}")
        if [w for w in caught if MARK in str(w.message)]:
            found.append(f"a warning of the basis on a labelled row of {name} reached the caller")
        charged.append((accountant.epsilon_spent, accountant.delta_spent, accountant.rho_spent))
    if charged[0] != charged[1] or charged[0][:2] != (1.0, 1e-6):
        found.append(f"charged {charged[0]} on D and {charged[1]} on D'")
    try:
        s1, plan = _make(kind, factory())._exact_statistic(X, y)
        s2, plan2 = _make(kind, factory())._exact_statistic(X2, y2)
    except Exception as exc:  # noqa: BLE001 - the finding
        return [*found, f"the exact statistic raised {type(exc).__name__}"]
    if plan != plan2:
        found.append("the public plan differs between D and D'")
    if s1.shape != s2.shape:
        return [*found, f"the statistic has shape {s1.shape} on D and {s2.shape} on D'"]
    if np.linalg.norm(s1 - s2) > plan["sensitivity"] * (1 + 1e-12):
        found.append(f"the statistic moved by {np.linalg.norm(s1 - s2):.4g}")
    moved = np.linalg.norm(np.rint(s1 / plan["step"]) - np.rint(s2 / plan["step"]))
    if moved > plan["index_sensitivity"]:
        found.append(f"the grid index moved by {moved:.0f} > {plan['index_sensitivity']:.0f}")
    return found


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", sorted(BASES))
def test_replacing_one_labelled_row_is_charged_and_moves_the_index_at_most_as_claimed(case, kind):
    assert neighbour_violations(case, kind) == []


def _batched_labelled_block(payload, values, width):
    """The code before issue 38: the labelled values transformed as one batch, failures raise."""
    block = np.asarray(pickle.loads(payload).transform(values[:, None]), dtype=float)
    if not np.all(np.isfinite(block)):
        raise ValueError("the basis transformer returned NaN or infinity.")
    return block


@pytest.mark.mutant
@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")
@pytest.mark.parametrize("kind", KINDS)
def test_the_neighbour_check_flags_a_batched_labelled_basis(kind, monkeypatch):
    """The real estimator with its labelled rows batched again: the check flags each case."""
    monkeypatch.setattr(sufficient_module, "_isolated_block", _batched_labelled_block)
    for case in sorted(BASES):
        assert neighbour_violations(case, kind), case


def test_a_batch_standardising_basis_no_longer_moves_the_index_beyond_the_claim():
    """Issue 38's reproduction: one replaced row moved the grid index by 3.8 times the claim."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    y[:1000] = -1
    X2 = X.copy()
    X2[2000] = [40.0, -40.0, 40.0]
    est = SufficientStatisticClassifier(classes=[0, 1], basis=FunctionTransformer(_standardise))
    s1, plan = est._exact_statistic(X, y)
    s2, _ = est._exact_statistic(X2, y)
    moved = np.linalg.norm(np.rint(s1 / plan["step"]) - np.rint(s2 / plan["step"]))
    assert plan["index_sensitivity"] == pytest.approx(202.0)  # d = 4
    assert moved <= plan["index_sensitivity"]


# -- the construction: each value through its own copy, inside the isolation guard -----------------
STATEFUL = {
    "attribute (running mean)": RunningCentre,
    "attribute (previous call)": PreviousValue,
    "closure": closure_basis,
    "numpy's global random state": GlobalRandom,
    "batch standardisation": lambda: FunctionTransformer(_standardise),
}


@pytest.mark.parametrize("case", sorted(STATEFUL))
def test_each_labelled_value_gets_the_block_of_that_value_alone(case):
    public = np.random.default_rng(0).uniform(-2, 2, size=(50, 1))
    fitted = STATEFUL[case]().fit(public)
    payload = cloudpickle.dumps(fitted)
    width = np.asarray(fitted.transform(public)).shape[1]
    values = np.random.default_rng(1).uniform(-2, 2, size=40)
    values[5] = values[17]  # a repeated value
    together = _isolated_block(payload, values, width)
    alone = np.vstack([_isolated_block(payload, values[[k]], width) for k in range(values.size)])
    np.testing.assert_array_equal(together, alone)
    order = np.random.default_rng(2).permutation(values.size)
    np.testing.assert_array_equal(_isolated_block(payload, values[order], width), together[order])


def test_a_failing_value_gets_the_zero_block_and_the_others_their_own():
    payload = cloudpickle.dumps(SplineTransformer(extrapolation="error").fit(np.c_[[-1.0, 0, 1]]))
    blocks = _isolated_block(payload, np.array([0.25, 5.0, -0.25]), 7)
    reference = SplineTransformer(extrapolation="error").fit(np.c_[[-1.0, 0, 1]])
    np.testing.assert_array_equal(blocks[1], 0.0)
    np.testing.assert_allclose(blocks[[0, 2]], reference.transform(np.c_[[0.25, -0.25]]))


def test_zero_and_negative_zero_are_different_values():
    payload = cloudpickle.dumps(FunctionTransformer(lambda Z: np.copysign(1.0, Z)).fit([[1.0]]))
    blocks = _isolated_block(payload, np.array([0.0, -0.0, 0.0]), 1)
    np.testing.assert_array_equal(blocks[:, 0], [1.0, -1.0, 1.0])


def test_the_labelled_rows_leave_no_trace_in_global_state():
    """After fit, numpy's global random state and the warning filters do not depend on them.

    (The public rows are transformed as one batch, outside the guard: what they do to the
    global state is public.)
    """
    X, y, X2, y2 = _pair("binary", -2.0, 2.0, 0.0)
    X2[N_PUBLIC:, 0] = np.random.default_rng(5).uniform(-2.0, 2.0, N_LABELLED)  # other draws
    after = []
    for data in ((X, y), (X2, y2)):
        np.random.seed(7)  # noqa: NPY002
        filters = list(warnings.filters)
        SufficientStatisticClassifier(classes=[0, 1], basis=GlobalRandom()).fit(*data)
        assert warnings.filters == filters
        after.append(np.random.random())  # noqa: NPY002
    assert after[0] == after[1]


def test_a_basis_that_cannot_be_copied_is_refused_before_the_charge():
    X, y, _, _ = _pair("binary", -2.0, 2.0, 0.0)
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    est = SufficientStatisticClassifier(classes=[0, 1], basis=Unpicklable(), accountant=accountant)
    with pytest.raises(InvalidParameterError, match=r"basis=Unpicklable\(\).*its own copy"):
        est.fit(X, y)
    assert accountant.epsilon_spent == 0
    assert not hasattr(est, "privacy_guarantee_")


def test_a_failure_on_the_public_rows_is_public_and_raises_before_the_charge():
    X, y, _, _ = _pair("binary", 0.5, 2.0, 1.0)
    X[3, 0] = 0.0  # a public row at 0: log gives -inf
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    est = SufficientStatisticClassifier(
        classes=[0, 1], basis=FunctionTransformer(np.log), accountant=accountant
    )
    with pytest.raises(ValueError, match="NaN or infinity"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        est.fit(X, y)
    assert accountant.epsilon_spent == 0


def test_the_default_basis_stays_batched(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the default basis went through the per-value path")

    monkeypatch.setattr(sufficient_module, "_isolated_block", refuse)
    monkeypatch.setattr(sufficient_module_sufficient, "_copy_payloads", refuse)
    X, y, _, _ = _pair("binary", -2.0, 2.0, 0.0)
    SufficientStatisticClassifier(classes=[0, 1]).fit(X, y)


def test_a_user_basis_learns_and_answers_as_before_on_rows_it_handles():
    """Row-wise bases give the same labelled features as the batch: the model is unchanged."""
    X, y, _, _ = _pair("binary", -2.0, 2.0, 0.0)
    est = SufficientStatisticClassifier(classes=[0, 1], basis=SplineTransformer())
    s, plan = est._exact_statistic(X, y)
    # An integer seed: the released model is fixed, so the accuracy bound cannot flake
    # (0.93 here; a fit seeded by a Generator draws a new release each time).
    fitted = SufficientStatisticClassifier(
        classes=[0, 1], basis=SplineTransformer(), random_state=0
    ).fit(X, y)
    labelled = y != -1
    batch = fitted._phi(X[labelled])  # query path: one batch
    np.testing.assert_allclose(s, (y[labelled] - 0.5) @ batch, rtol=1e-12, atol=1e-12)
    assert fitted.score(X, y) > 0.8
