"""The answering path of one query, traced: its stages, their order, the modules it enters.

Every query method of a private predictor answers through one sequence (the
answering path: ``answer`` and the :class:`QueryPlan` an estimator declares, in
the module of :class:`~skprivpred._base.PrivatePredictorMixin`). These tests
record one in-memory ``predict`` (and the other query methods) of each
estimator converted to the path with :func:`sys.setprofile` and check the
path against the issue: "public checks -> dry run -> charge -> the estimator's
own computation -> its mechanism", "the path of one query should enter no
more modules than the concepts it needs, and never return to one it has left".

Definitions (what is asserted, precisely)
-----------------------------------------
- **Modules** are told apart by identity (``frame.f_globals["__name__"]``
  compared with the ``__module__`` of the objects involved), never by a
  hard-coded name: the tests hold when modules move.
- **The core** is the module that defines ``answer``. **The hub** is the frame
  of ``answer`` and every frame of the core entered from a hub frame (the
  path's own code: the lock, the charge's bookkeeping, the lambda that calls
  the computation and then the mechanism).
- A **stage** is a call from a hub frame into a frame of another skprivpred
  module (the hooks a plan holds may be lambdas, bound methods or partials of
  any module); everything that call enters, at any depth, belongs to that
  stage. Calls into numpy or the standard library are not stages. Each
  stage is labelled by the function it calls: ``edge`` (the dask check),
  ``check``, ``dry_run``, ``values`` (the computation), ``draw`` (the
  mechanism), ``finish``, ``released``, ``handoff`` (the plan's hooks, by
  code object) or ``charge`` (the accountant's ``charge``). A stage calling
  anything else is an error ("more modules than the concepts it needs").
- **Order**: the stages occur once each, in the order edge, check, dry_run,
  charge, values, draw, finish (with a horizon and a hand-off: ``horizon``,
  the accountant's count of the rows left, before the charge, and
  ``handoff`` then the student's ``after.values`` after the charged rows);
  free post-processing has no charge and no draw; the first draw of noise (a
  recording wrapper around the query stream's generator) comes after the
  charge returned, inside ``draw``.
- **Never returns to a module it has left**: let the *modules of a stage* be
  the skprivpred modules its frames are in (the core excluded: the path never
  leaves it). Over the stages in order, leaving out the charge and the
  horizon count (the accountant, which the issue does not count either: "before counting the
  accountant"; its place is asserted by the order), every module's stages are
  consecutive: once the path has passed a stage that does not enter module
  ``M`` after one that did, no later stage enters ``M``. (Nested calls within
  a stage, such as the teachers' calls through the isolation boundary, are
  that stage's own business.)

The queries are numeric, so the dry run decides from the queries' signature
alone and never enters the isolation boundary (for text columns it fits the
base estimator through that boundary, which the votes use again: the
boundary is shared by design, the one way user code meets rows).
"""

from __future__ import annotations

import functools
import sys

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from skprivpred import (
    AveragedPSGDRegressor,
    DPValidatedHistogramDensity,
    DPValidatedLogisticRegression,
    ExponentialMechanismClassifier,
    ExpProjectedWalkClassifier,
    GenericBBLClassifier,
    PrivacyAccountant,
    PrivateEverlastingClassifier,
    PrivateExpertsClassifier,
    PrivateGridSearchCV,
    PrivateHalfspacePPMClassifier,
    StableERMClassifier,
    SubsampleAggregateClassifier,
    SubsampleAverageClassifier,
    SubsampleAverageRegressor,
    SufficientStatisticClassifier,
    SufficientStatisticRegressor,
)
from skprivpred._base import PrivatePredictorMixin
from skprivpred._teachers._dask import is_dask_collection
from skprivpred._teachers._votes import TeacherEnsemble
from skprivpred.exceptions import InsufficientSampleError

ORDER = ("edge", "check", "dry_run", "charge", "values", "draw", "finish", "released")
PACKAGE = PrivatePredictorMixin.__module__.split(".")[0]


def _core():
    """The module of the answering path (that of the mixin), and its ``answer``."""
    core = sys.modules[PrivatePredictorMixin.__module__]
    return core, core.answer


def _code(function):
    """The code object a hook runs (through partials and bound methods)."""
    while isinstance(function, functools.partial):
        function = function.func
    function = getattr(function, "__func__", function)
    return getattr(function, "__code__", None)


class _RecordingGenerator:
    """A query stream's generator that notes every draw in the trace."""

    def __init__(self, rng, note):
        self._rng, self._note = rng, note

    def __getattr__(self, name):
        attribute = getattr(self._rng, name)
        if not callable(attribute):
            return attribute

        def drawn(*args, **kwargs):
            self._note(("noise", name))
            return attribute(*args, **kwargs)

        return drawn


class PathTrace:
    """A profile of one query call: its stages (see the module docstring) and a timeline."""

    def __init__(self):
        self.core, self.answer = _core()
        self.status: dict = {}  # frame -> "hub" | stage index | None (outside the path)
        self.stages: list[dict] = []
        self.timeline: list[tuple] = []
        self.entered: list[str] = []  # every skprivpred module entered, in order (collapsed)
        self.labels: dict = {}
        self.charge_code = _code(PrivacyAccountant.charge)

    def _label(self, code) -> str:
        if code is self.charge_code:
            return "charge"
        if code is _code(PrivacyAccountant.horizon_answered):
            return "horizon"  # the rows the horizon still allows, read from the ledger
        if code is _code(is_dask_collection):
            return "edge"
        return self.labels.get(code, f"unexpected {code.co_name} ({code.co_filename})")

    def __call__(self, frame, event, arg):
        if event == "return":
            self.status.pop(frame, None)
            return
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if module.split(".")[0] == PACKAGE and (not self.entered or self.entered[-1] != module):
            self.entered.append(module)
        parent = self.status.get(frame.f_back)
        if parent is None:
            if frame.f_code is self.answer.__code__:
                self.status[frame] = "hub"
            return
        if parent == "hub":
            self._learn_hooks(frame.f_back)
            if module == self.core.__name__:
                self.status[frame] = "hub"
                return
            if module.split(".")[0] != PACKAGE:
                return  # numpy's or the standard library's helpers: not a concept of the path
            self.stages.append({"label": self._label(frame.f_code), "modules": [module]})
            self.timeline.append(("stage", self.stages[-1]["label"]))
            self.status[frame] = len(self.stages) - 1
            return
        self.status[frame] = parent
        modules = self.stages[parent]["modules"]
        if module not in modules:
            modules.append(module)

    def _learn_hooks(self, hub_frame) -> None:
        """The hooks of the plans a hub frame holds: ``plan`` (and ``after``, the hand-off's)."""
        for local, plan in hub_frame.f_locals.items():
            if type(plan).__name__ != "QueryPlan":
                continue
            for name in ORDER[1:] + ("handoff",):
                code = _code(getattr(plan, name, None))
                if code is not None and code.co_filename != self.core.__file__:
                    self.labels.setdefault(code, name if local == "plan" else f"{local}.{name}")

    def note(self, item) -> None:
        self.timeline.append(item)

    def run(self, estimator, method, X):
        estimator._query_stream.rng = _RecordingGenerator(estimator._query_stream.rng, self.note)
        sys.setprofile(self)
        try:
            return getattr(estimator, method)(X)
        finally:
            sys.setprofile(None)

    # -- what the tests read -------------------------------------------------------------
    def labels_in_order(self) -> list[str]:
        return [stage["label"] for stage in self.stages]

    def stage_modules(self) -> list[tuple[str, list[str]]]:
        """(label, skprivpred modules entered) per stage, the core left out."""
        return [
            (
                stage["label"],
                [
                    m
                    for m in stage["modules"]
                    if m.split(".")[0] == PACKAGE and m != self.core.__name__
                ],
            )
            for stage in self.stages
        ]

    def returns(
        self, until: str | None = None, together: frozenset[str] = frozenset()
    ) -> list[str]:
        """Modules entered again after the path left them (the accountant left out).

        ``until``: only the stages before the first one with this label. ``together``: modules
        counted as one (named by the first of them in sorted order).
        """
        one = min(together) if together else ""
        seen_left: set[str] = set()
        current: set[str] = set()
        back = []
        for label, modules in self.stage_modules():
            if label == until:
                break
            if label in ("charge", "horizon"):
                continue
            here = {one if m in together else m for m in modules}
            seen_left |= current - here
            back += sorted(here & seen_left)
            current = here
        return back


# -- the estimators converted to the path -----------------------------------------------------
def _classification(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _aggregate(accountant):
    X, y = _classification()
    est = SubsampleAggregateClassifier(
        LogisticRegression(), n_teachers=10, classes=[0, 1], accountant=accountant
    )
    return est.fit(X, y), X[:7]


def _average(accountant):
    X, y = _classification()
    est = SubsampleAverageClassifier(
        LogisticRegression(), n_teachers=10, classes=[0, 1], accountant=accountant
    )
    return est.fit(X, y), X[:7]


def _regressor(accountant):
    X, y = _classification()
    est = SubsampleAverageRegressor(n_teachers=10, y_bounds=(0.0, 1.0), accountant=accountant)
    return est.fit(X, y.astype(float)), X[:7]


def _walk(accountant):
    X, y = _classification()
    est = ExpProjectedWalkClassifier(feature=0, classes=[0, 1], accountant=accountant)
    return est.fit(X, y), X[:7]


def _experts(accountant):
    X, y = _classification()
    experts = [
        DecisionTreeClassifier(max_depth=1, random_state=k).fit(X[k::5], y[k::5]) for k in range(3)
    ]
    est = PrivateExpertsClassifier(experts, classes=[0, 1], accountant=accountant)
    return est.fit(X, y), X[:7]


def _exponential(accountant):
    X, y = _classification()
    est = ExponentialMechanismClassifier(
        "thresholds", grid=np.linspace(-2, 2, 9), classes=[0, 1], accountant=accountant
    )
    return est.fit(X[:, :1], y), X[:7, :1]


def _ppm(accountant):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    is_public = np.arange(40) < 20
    y = np.where(is_public, 0, 1)
    est = PrivateHalfspacePPMClassifier(epsilon=1.0, accountant=accountant)
    return est.fit(X, y, is_public=is_public), X[:7]


#: (name, factory, method, charged, dry run)
CASES = [
    ("aggregate", _aggregate, "predict", True, True),
    ("average", _average, "predict", True, True),
    ("average", _average, "predict_proba", True, True),
    ("average", _average, "decision_function", True, True),
    ("regressor", _regressor, "predict", True, True),
    ("walk", _walk, "predict", True, False),
    ("experts", _experts, "predict", True, False),
    ("exponential", _exponential, "predict", False, False),
    ("ppm", _ppm, "predict", False, False),
    ("ppm", _ppm, "decision_function", False, False),
]
IDS = [f"{name}-{method}" for name, _, method, _, _ in CASES]


@pytest.fixture(autouse=True)
def _quiet(recwarn):
    """The fits' PrivacyWarnings (integer seeds, defaults) are not under test here."""


@pytest.mark.parametrize("name, make, method, charged, dry_run", CASES, ids=IDS)
def test_one_query_runs_the_stages_in_order(name, make, method, charged, dry_run):
    accountant = PrivacyAccountant(epsilon=1e6, delta=0.5)
    estimator, X = make(accountant)
    spent = accountant.queries_answered
    trace = PathTrace()
    answers = trace.run(estimator, method, X)
    assert np.asarray(answers).shape[0] == X.shape[0]
    labels = trace.labels_in_order()
    assert not [label for label in labels if label.startswith("unexpected")], labels
    expected = ["edge", "check"]
    expected += ["dry_run"] if dry_run else []
    expected += ["charge", "values", "draw"] if charged else ["values"]
    assert [label for label in labels if label not in ("finish",)] == expected, labels
    assert labels == [label for label in ORDER if label in labels], labels  # each once, in order
    noise = [k for k, item in enumerate(trace.timeline) if item[0] == "noise"]
    if not charged:
        assert noise == [] and accountant.queries_answered == spent
        return
    assert noise, "a charged answer draws noise"
    stage_at = {item[1]: k for k, item in enumerate(trace.timeline) if item[0] == "stage"}
    # The charge returned before the first draw, which the mechanism makes.
    assert stage_at["charge"] < stage_at["values"] < stage_at["draw"] < noise[0]
    after_draw = [k for label, k in stage_at.items() if ORDER.index(label) > ORDER.index("draw")]
    assert all(k < min(after_draw, default=len(trace.timeline)) for k in noise)
    assert accountant.queries_answered == spent + X.shape[0]


@pytest.mark.parametrize("name, make, method, charged, dry_run", CASES, ids=IDS)
def test_one_query_never_returns_to_a_module_it_has_left(name, make, method, charged, dry_run):
    estimator, X = make(PrivacyAccountant(epsilon=1e6, delta=0.5))
    trace = PathTrace()
    trace.run(estimator, method, X)
    assert trace.stages, "the query went through the answering path"
    assert trace.returns() == [], trace.stage_modules()


@pytest.mark.parametrize(
    "make", [_aggregate, _average, _regressor], ids=["aggregate", "average", "regressor"]
)
def test_the_teachers_answer_after_the_charge(make):
    """The votes (the estimator's computation) are counted only once every row is charged."""
    accountant = PrivacyAccountant(epsilon=1e6, delta=0.5)
    estimator, X = make(accountant)
    timeline = []
    charge, votes = _code(PrivacyAccountant.charge), _code(TeacherEnsemble.vote_counts)
    teacher_module = TeacherEnsemble.__module__

    def profile(frame, event, arg):
        if event != "call":
            return
        if frame.f_code is charge:
            timeline.append("charge")
        elif frame.f_code is votes or frame.f_globals.get("__name__") == teacher_module:
            timeline.append("teachers")

    sys.setprofile(profile)
    try:
        estimator.predict(X)
    finally:
        sys.setprofile(None)
    assert "charge" in timeline and "teachers" in timeline
    assert timeline.index("charge") < timeline.index("teachers"), timeline


def test_a_refused_call_stops_before_the_charge_and_the_computation():
    """A budget refusal: checks and dry run ran, nothing was computed or drawn."""
    accountant = PrivacyAccountant(epsilon=1.0)
    estimator, X = _aggregate(accountant)
    trace = PathTrace()
    with pytest.raises(Exception, match="budget|exhaust|refuse"):
        trace.run(estimator, "predict", np.repeat(X, 100, axis=0))
    labels = trace.labels_in_order()
    assert labels == ["edge", "check", "dry_run", "charge"], labels
    assert not [item for item in trace.timeline if item[0] == "noise"]
    assert accountant.queries_answered == 0


def test_the_horizon_hands_off_to_the_student_after_the_charged_rows():
    """on_exhausted="student": the charged rows go through the stages, then the hand-off."""
    X, y = _classification()
    est = SubsampleAggregateClassifier(
        LogisticRegression(),
        n_teachers=10,
        classes=[0, 1],
        n_queries=5,
        total_epsilon=5.0,
        student=LogisticRegression(),
        on_exhausted="student",
    ).fit(X, y)
    trace = PathTrace()
    answers = trace.run(est, "predict", X[:9])
    assert answers.shape == (9,)
    labels = trace.labels_in_order()
    assert labels == [
        "edge",
        "check",
        "dry_run",
        "horizon",
        "charge",
        "values",
        "draw",
        "finish",
        "released",
        "handoff",
        "after.values",
    ], labels
    # The charged rows' path never returns; the hand-off then keeps a copy of the released
    # rows (the isolation module's handed_rows) and stacks them (the teacher engine's row
    # helpers) for the student: a second answerer, fitted inside this call.
    assert trace.returns(until="released") == [], trace.stage_modules()
    noise = [k for k, item in enumerate(trace.timeline) if item[0] == "noise"]
    stage_at = {item[1]: k for k, item in enumerate(trace.timeline) if item[0] == "stage"}
    assert stage_at["charge"] < noise[0] and noise[-1] < stage_at["handoff"]
    assert est.mode_ == "student" and est.queries_answered_ == 5


# -- the one-release estimators, the linear releases, the grid search, the everlasting phases ----
def _stable_erm(accountant):
    X, y = _classification()
    return StableERMClassifier(classes=[0, 1], accountant=accountant).fit(X, y), X[:7]


def _psgd_regressor(accountant):
    X, y = _classification()
    est = AveragedPSGDRegressor(y_bounds=(0.0, 1.0), accountant=accountant)
    return est.fit(X, y.astype(float)), X[:7]


def _sufficient(accountant):
    X, y = _classification()
    y = np.where(np.arange(y.size) % 2 == 0, -1, y)  # half the rows public, unlabelled
    return SufficientStatisticClassifier(classes=[0, 1], accountant=accountant).fit(X, y), X[:7]


def _sufficient_regressor(accountant):
    X, y = _classification()
    y = np.where(np.arange(y.size) % 2 == 0, np.nan, y.astype(float))
    est = SufficientStatisticRegressor(y_bounds=(0.0, 1.0), accountant=accountant)
    return est.fit(X, y), X[:7]


def _validated(accountant):
    X, y = _classification(n=2000)
    est = DPValidatedLogisticRegression(epsilon=5.0, classes=[0, 1], accountant=accountant)
    return est.fit(X, y), X[:7]


def _histogram(accountant):
    X, _ = _classification(n=2000, d=1)
    est = DPValidatedHistogramDensity(epsilon=5.0, bounds=(-4.0, 4.0), accountant=accountant)
    return est.fit(X), X[:7]


def _grid_search(accountant):
    X, y = _classification()
    est = PrivateGridSearchCV(
        SubsampleAggregateClassifier(LogisticRegression(), classes=[0, 1], accountant=accountant),
        {"n_teachers": [5, 10]},
        accountant=accountant,
    )
    return est.fit(X, y), X[:7]


def _everlasting(accountant):
    rng = np.random.default_rng(40)
    X = rng.random((400, 1))
    est = PrivateEverlastingClassifier(
        LogisticRegression(),
        n_teachers=20,
        epsilon=2.0,
        phase_growth=1.0,
        classes=(0, 1),
        accountant=accountant,
    )
    return est.fit(X, (X[:, 0] >= 0.5).astype(int)), rng.random((7, 1))


def _genericbbl(accountant):
    """Paper mode (the one that charges), sized as test_everlasting's charging test."""
    overrides = {
        "n_teachers": 3000,
        "teacher_size": 1,
        "top_budget": 1,
        "threshold_gap": 0.5,
        "phase_length": 500_000,
    }
    est = GenericBBLClassifier(
        epsilon=1.0,
        delta=0.05,
        alpha=0.05,
        beta=0.05,
        overrides=overrides,
        classes=(0, 1),
        accountant=accountant,
    )
    rng = np.random.default_rng(41)
    try:
        est.fit(np.zeros((10, 1)), np.zeros(10, dtype=int))
    except InsufficientSampleError as too_small:
        n = too_small.required_samples
    X = rng.random((n, 1))
    return est.fit(X, (X[:, 0] >= 0.5).astype(int)), np.full((7, 1), 0.9)


#: (name, factory, method, charged, dry run), as CASES
RELEASE_CASES = [
    ("stable-erm", _stable_erm, "predict", True, False),
    ("stable-erm", _stable_erm, "decision_function", True, False),
    ("stable-erm", _stable_erm, "predict_proba", True, False),
    ("psgd-regressor", _psgd_regressor, "predict", True, False),
    ("sufficient", _sufficient, "predict", False, False),
    ("sufficient", _sufficient, "predict_proba", False, False),
    ("sufficient", _sufficient, "decision_function", False, False),
    ("sufficient-regressor", _sufficient_regressor, "predict", False, False),
    ("validated", _validated, "predict", False, False),
    ("validated", _validated, "predict_proba", False, False),
    ("histogram", _histogram, "score_samples", False, False),
    ("histogram", _histogram, "density", False, False),
]
RELEASE_IDS = [f"{name}-{method}" for name, _, method, _, _ in RELEASE_CASES]


@pytest.mark.parametrize("name, make, method, charged, dry_run", RELEASE_CASES, ids=RELEASE_IDS)
def test_release_estimators_run_the_stages_in_order(name, make, method, charged, dry_run):
    """One-release estimators declare free post-processing (no charge, no noise); the linear
    releases and the everlasting phases are charged once per call, before any noise."""
    test_one_query_runs_the_stages_in_order(name, make, method, charged, dry_run)


@pytest.mark.parametrize("name, make, method, charged, dry_run", RELEASE_CASES, ids=RELEASE_IDS)
def test_release_estimators_never_return_to_a_module_they_left(
    name, make, method, charged, dry_run
):
    test_one_query_never_returns_to_a_module_it_has_left(name, make, method, charged, dry_run)


def test_free_post_processing_declares_no_mechanism():
    """The one-release estimators say so in their plan: ``draw=None`` (the path's ``free``)."""
    for make, method in [
        (_sufficient, "predict"),
        (_sufficient_regressor, "predict"),
        (_validated, "decision_function"),
        (_histogram, "density"),
    ]:
        estimator, _ = make(None)
        plan = estimator._query_plan(method)
        assert plan.free and plan.draw is None
    for make in (_stable_erm, _psgd_regressor):
        estimator, _ = make(None)
        assert not estimator._score_plan(estimator._draw_real_values).free


def test_the_grid_search_answers_by_the_refitted_candidates_path():
    accountant = PrivacyAccountant(epsilon=1e6, delta=0.5)
    estimator, X = _grid_search(accountant)
    spent = accountant.queries_answered
    trace = PathTrace()
    trace.best = estimator.best_estimator_
    trace.best._query_stream.rng = _RecordingGenerator(trace.best._query_stream.rng, trace.note)
    sys.setprofile(trace)
    try:
        answers = estimator.predict(X)
    finally:
        sys.setprofile(None)
    assert answers.shape == (7,)
    labels = [label for label in trace.labels_in_order() if label != "finish"]
    assert labels == ["edge", "check", "dry_run", "charge", "values", "draw"], labels
    assert accountant.queries_answered == spent + 7


class _PhaseTrace(PathTrace):
    """A trace that also names the plan's ``charge_rows`` (the everlasting per-row charge)."""

    def _learn_hooks(self, hub_frame) -> None:
        super()._learn_hooks(hub_frame)
        plan = hub_frame.f_locals.get("plan")
        if type(plan).__name__ == "QueryPlan" and plan.charge_rows is not None:
            self.labels.setdefault(_code(plan.charge_rows), "charge_rows")


@pytest.mark.parametrize(
    "make, dry_run", [(_everlasting, True), (_genericbbl, False)], ids=["practical", "genericbbl"]
)
def test_the_everlasting_phases_run_the_stages_in_order(make, dry_run):
    """Checks (the stream's owner and halt, the queries), the dry run, the per-row charge of the
    phases the call reaches, one charge, then the phases (computation and mechanism interleaved,
    under the lock), then the halt if any: the noise after the charge."""
    accountant = PrivacyAccountant(epsilon=1e6, delta=0.5)
    estimator, X = make(accountant)
    trace = _PhaseTrace()
    answers = trace.run(estimator, "predict", X)
    assert answers.shape == (X.shape[0],)
    expected = ["edge", "check", *(["dry_run"] if dry_run else [])]
    expected += ["charge_rows", "charge", "values", "draw", "finish"]
    assert trace.labels_in_order() == expected, trace.labels_in_order()
    noise = [k for k, item in enumerate(trace.timeline) if item[0] == "noise"]
    stage_at = {item[1]: k for k, item in enumerate(trace.timeline) if item[0] == "stage"}
    assert noise and stage_at["charge"] < stage_at["draw"] < noise[0]
    assert noise[-1] < stage_at["finish"]
    # GenericBBL's hypothesis class is met twice: its domain check is a public check (a query
    # outside it is refused before the charge), its votes are the phases' computation.
    again = [] if dry_run else [type(estimator._hclass).__module__]
    # The predictor's own classes are one concept, the stream: its base class (the stream's
    # owner and halt checks, the query batch, the phases' loop) and the predictor's class live
    # in two modules of the everlasting subpackage, and each stage enters the stream.
    own = frozenset(
        cls.__module__
        for cls in type(estimator).__mro__
        if cls.__module__.startswith(PACKAGE + ".")
    ) - {trace.core.__name__}
    assert len(own) == 2, own
    assert trace.returns(together=own) == again, trace.stage_modules()
    assert accountant.queries_answered == X.shape[0]


def test_a_call_across_a_phase_boundary_is_charged_once_before_the_next_phase_trains():
    """The everlasting phases: one charge for the call (at the largest per-row guarantee of the
    phases it reaches), then the answers and the next phase's training, all after it."""
    accountant = PrivacyAccountant(epsilon=1e6, delta=0.5)
    estimator, _ = _everlasting(accountant)
    length = estimator.phase_schedule_[0]["phase_length"]
    queries = np.random.default_rng(5).random((length + 3, 1))
    timeline = []
    charge, next_phase = _code(PrivacyAccountant.charge), _code(type(estimator)._next_phase)

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in (charge, next_phase):
            timeline.append("charge" if frame.f_code is charge else "next phase")

    sys.setprofile(profile)
    try:
        answers = estimator.predict(queries)
    finally:
        sys.setprofile(None)
    assert answers.shape == (length + 3,) and estimator.phase_ == 2
    assert timeline == ["charge", "next phase"], timeline
    assert accountant.queries_answered == length + 3
