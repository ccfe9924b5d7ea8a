"""The mutant audit: every public estimator, patched to break its claim, is caught by its audit.

A mutant patches the library, for one test only (``monkeypatch``), where an estimator's
module uses a mechanism, so that the REAL estimator draws its noise for a multiple of the
epsilon it claims (2, or 3 where 2 still keeps the claim: the ERM and validated logistic
cases prove why) while it still charges and reports the claimed epsilon. Each case checks
that the patch took effect (the patched estimator's exact law, or a simulated law within a
stated Monte Carlo margin, is that of the larger epsilon), that ``privacy_guarantee_`` and
the accountant's charge are the claimed ones, asserts the exact power of the estimator's own
black-box audit against the patched law on the audited pair (>= 0.99,
``tests/_audit_power.py``), and runs that audit, which must reject it.

:data:`MUTANTS` is the table: the estimator, what the patch does, the audit that must catch
it, and the case that does all of this (in the family modules ``_mutants_*.py`` beside this
file, with their derivations). Every public estimator of the suite's registry
(``tests/_registry.py``) has at least one row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import _mutants_bbl as bbl
import _mutants_models as models
import _mutants_sufficient as sufficient
import _mutants_teachers as teachers
import _mutants_validated as validated
import pytest
from _registry import all_estimators


@dataclass(frozen=True)
class Mutant:
    """One row of the table: ``case(monkeypatch)`` patches ``estimator`` as ``patch`` says and
    asserts that ``audit`` (at power >= 0.99) rejects it."""

    id: str
    estimator: str
    patch: str
    audit: str
    case: Callable[[pytest.MonkeyPatch], None]
    #: The case fits on purpose where the estimator warns (too few rows for its guarantee).
    ignores_privacy_warning: bool = False


MUTANTS = [
    # -- teacher-based and sequential estimators (_mutants_teachers.py): twice epsilon ----------
    Mutant(
        "SubsampleAggregateClassifier",
        "SubsampleAggregateClassifier",
        "vote weight 2 epsilon / 2 in the per-row release",
        "three teachers agree at the query, one label of the neighbour turns one vote",
        teachers._aggregate_mutant,
    ),
    Mutant(
        "SubsampleAggregateClassifier-n_queries",
        "SubsampleAggregateClassifier",
        "vote weight doubled in many-query mode (epsilon_per_query_ from the horizon)",
        "the same vote audit, on the many-query calibration",
        functools.partial(teachers._aggregate_mutant, many_queries=True),
    ),
    Mutant(
        "SubsampleAverageClassifier-predict",
        "SubsampleAverageClassifier",
        "the closed form's scale set in fit, and the grid releases, for 2 epsilon",
        "predict's label law on the audited pair",
        functools.partial(teachers._average_classifier_mutant, method="predict"),
    ),
    Mutant(
        "SubsampleAverageClassifier-predict_proba",
        "SubsampleAverageClassifier",
        "grid-Laplace noise of predict_proba calibrated for 2 epsilon",
        "binned predict_proba answers on the audited pair",
        functools.partial(teachers._average_classifier_mutant, method="predict_proba"),
    ),
    Mutant(
        "SubsampleAverageRegressor",
        "SubsampleAverageRegressor",
        "grid-Laplace noise calibrated per call for 2 epsilon",
        "binned answers on the audited pair",
        teachers._average_regressor_mutant,
    ),
    Mutant(
        "ExpProjectedWalkClassifier",
        "ExpProjectedWalkClassifier",
        "weight 2 epsilon / 2 on the walk value (clamp bound as fitted)",
        "a run of label 0 with the first row flipped",
        teachers._walk_mutant,
    ),
    Mutant(
        "PrivateGridSearchCV-selection",
        "PrivateGridSearchCV",
        "the selection (exponential mechanism and report-noisy-max) at 2 selection_epsilon",
        "best_index_ on the near-worst-case pair of tests/model_selection/test_search.py",
        teachers._grid_search_selection_mutant,
    ),
    Mutant(
        "PrivateGridSearchCV-answers",
        "PrivateGridSearchCV",
        "the answers of best_estimator_ at 2 epsilon (one candidate)",
        "all-ones labels, three teachers, one turned by a 0 label",
        teachers._grid_search_answers_mutant,
    ),
    Mutant(
        "PrivateEverlastingClassifier-relabelling",
        "PrivateEverlastingClassifier",
        "the relabelling exponential mechanism at 2 epsilon_r (Gaussian votes left alone)",
        "audit_game of tests/everlasting/test_everlasting_privacy.py on near-worst-case pools",
        teachers._everlasting_relabelling_mutant,
    ),
    # -- GenericBBL (_mutants_bbl.py) ---------------------------------------------------------
    Mutant(
        "GenericBBLClassifier",
        "GenericBBLClassifier",
        "LabelBoost's exponential mechanism at 2 LABELBOOST_EPSILON",
        "the real phase change on two labelled pools that differ in one label",
        bbl.labelboost_mutant,
    ),
    # -- model-releasing and linear estimators (_mutants_models.py) ---------------------------
    Mutant(
        "AveragedPSGDClassifier",
        "AveragedPSGDClassifier",
        "every Laplace release of skprivpred.linear_model at 2 epsilon",
        "labels on the PSGD counterexample with labels (moves 0.99 of the sensitivity)",
        models._case_averaged_psgd_classifier,
        ignores_privacy_warning=True,
    ),
    Mutant(
        "AveragedPSGDRegressor",
        "AveragedPSGDRegressor",
        "every Laplace release of skprivpred.linear_model at 2 epsilon",
        "lower-tail bins on the PSGD counterexample (moves 0.998 of the sensitivity)",
        models._case_averaged_psgd_regressor,
        ignores_privacy_warning=True,
    ),
    Mutant(
        "StableERMClassifier",
        "StableERMClassifier",
        "every Laplace release of skprivpred.linear_model at 3 epsilon (2 keeps the claim)",
        "decision_function on the extremal pair with labels",
        models._case_stable_erm_classifier,
        ignores_privacy_warning=True,
    ),
    Mutant(
        "StableERMRegressor",
        "StableERMRegressor",
        "every Laplace release of skprivpred.linear_model at 3 epsilon (2 keeps the claim)",
        "lower-tail bins on the extremal pair (Huber loss in its linear zone)",
        models._case_stable_erm_regressor,
        ignores_privacy_warning=True,
    ),
    Mutant(
        "ExponentialMechanismClassifier",
        "ExponentialMechanismClassifier",
        "the fewest-mistakes exponential mechanism (sampler and law) at 2 epsilon",
        "refits on the pair of tests/finite/test_learners.py (a tie in the neighbour)",
        models._case_exponential_mechanism,
        ignores_privacy_warning=True,
    ),
    Mutant(
        "PrivateExpertsClassifier",
        "PrivateExpertsClassifier",
        "mw_round_proba at twice the rate, in every round and every query",
        "predict on the stream of tests/finite/test_learners.py",
        models._case_private_experts,
        ignores_privacy_warning=True,
    ),
    Mutant(
        "PrivateHalfspacePPMClassifier",
        "PrivateHalfspacePPMClassifier",
        "the fewest-mistakes exponential mechanism (sampler and log-law) at 2 epsilon",
        "refits, released hypothesis as outcome, on a searched one-dimensional pair",
        models._case_halfspace_ppm,
        ignores_privacy_warning=True,
    ),
    Mutant(
        "DPValidatedHistogramDensity",
        "DPValidatedHistogramDensity",
        "the noisy histogram and the noisy-max selection at 2 epsilon",
        "the released histogram on the pair of tests/model_selection/test_stability.py",
        models._case_histogram_density,
        ignores_privacy_warning=True,
    ),
    # -- one-release estimators (_mutants_sufficient.py, _mutants_validated.py) ---------------
    Mutant(
        "SufficientStatisticClassifier",
        "SufficientStatisticClassifier",
        "discrete Gaussian noise at half its scale (rho x 4)",
        "refits on the extremal pair of tests/linear_model/test_sufficient.py, one event",
        sufficient._case_classifier,
        ignores_privacy_warning=True,
    ),
    Mutant(
        "SufficientStatisticRegressor",
        "SufficientStatisticRegressor",
        "discrete Gaussian noise at half its scale (rho x 4)",
        "the same refit audit, the target of one row moved between the bounds",
        sufficient._case_regressor,
        ignores_privacy_warning=True,
    ),
    Mutant(
        "DPValidatedLogisticRegression",
        "DPValidatedLogisticRegression",
        "training noise and selection at 3 epsilon (2 keeps the claim)",
        "the released coefficient below a public grid boundary, one feature and one lam",
        validated.released_model_mutant,
        ignores_privacy_warning=True,
    ),
]


def _param(mutant: Mutant):
    marks = [pytest.mark.mutant]
    if mutant.ignores_privacy_warning:
        marks.append(pytest.mark.filterwarnings("ignore::skprivpred.PrivacyWarning"))
    return pytest.param(mutant, id=mutant.id, marks=marks)


@pytest.mark.parametrize("mutant", [_param(m) for m in MUTANTS])
def test_mutant_is_caught(mutant, monkeypatch):
    mutant.case(monkeypatch)


# -- the table covers the registry ------------------------------------------------------------
def _missing(mutants) -> tuple[set[str], set[str]]:
    """(public estimators without a mutant, estimators named that are not public ones)."""
    covered = {mutant.estimator for mutant in mutants}
    names = {cls.__name__ for cls in all_estimators()}
    return names - covered, covered - names


def test_every_public_estimator_has_a_mutant():
    uncovered, unknown = _missing(MUTANTS)
    assert not uncovered, f"public estimators without a mutant: {sorted(uncovered)}"
    assert not unknown, f"mutants of names that are not public estimators: {sorted(unknown)}"
    assert len({mutant.id for mutant in MUTANTS}) == len(MUTANTS)


def test_a_missing_mutant_is_reported():
    """The check itself can fail: a table that leaves one estimator out, or names a class
    that is not a public estimator, is caught."""
    first = MUTANTS[0].estimator
    partial = [mutant for mutant in MUTANTS if mutant.estimator != first]
    typo = Mutant("typo", "NoSuchClassifier", "", "", MUTANTS[0].case)
    assert _missing([*partial, typo]) == ({first}, {"NoSuchClassifier"})
