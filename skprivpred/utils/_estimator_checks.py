"""The scikit-learn estimator checks that skprivpred estimators are expected to fail, and why.

One table for the test suite (``tests/test_common.py``) and for users::

    from sklearn.utils.estimator_checks import check_estimator
    from skprivpred import SubsampleAggregateClassifier
    from skprivpred.utils import expected_failed_checks

    est = SubsampleAggregateClassifier()
    check_estimator(est, expected_failed_checks=expected_failed_checks(est))

Every entry is a consequence of the privacy contract or of what the estimator is defined on
(one feature, binary features, a public/private split, a minimum sample size that a theorem
needs), never a defect: a check that fails for any other reason is a bug to fix, not an entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ._deprecation import DEPRECATED

__all__ = ["expected_failed_checks"]

# -- Groups of checks ---------------------------------------------------------------------
# Checks that fit the estimator on scikit-learn's generic data (a few to a few hundred rows,
# two to ten real-valued columns, labels or targets of any kind).
_FIT_CHECKS = (
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_dtype_object",
    "check_estimators_dtypes",
    "check_estimators_fit_returns_self",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
    "check_supervised_y_2d",
)
_CLASSIFIER_FIT_CHECKS = (
    "check_classifier_data_not_an_array",
    "check_classifiers_classes",
    "check_classifiers_train",
)
_REGRESSOR_FIT_CHECKS = (
    "check_regressor_data_not_an_array",
    "check_regressors_int",
    "check_regressors_no_decision_function",
    "check_regressors_train",
)
# Checks that expect a particular message from the data validation; an estimator that
# refuses its parameters first (before it reads the data, as it must) gives another one.
_MESSAGE_CHECKS = (
    "check_complex_data",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
    "check_estimator_sparse_tag",
    "check_estimators_empty_data_messages",
    "check_fit2d_1feature",
    "check_fit2d_1sample",
    "check_requires_y_none",
)
# Checks about the label set that fit on several real-valued columns.
_LABEL_CHECKS = (
    "check_classifier_not_supporting_multiclass",
    "check_classifiers_one_label",
    "check_classifiers_regression_target",
)

# Checks that compare a classifier's labels with its own scores or probabilities.
_SEPARATE_RELEASE_CHECKS = (
    "check_classifiers_classes",
    "check_classifiers_train",
    "check_decision_proba_consistency",
)
# Checks that fit on fewer rows than the default number of teachers of the subsample-and-
# aggregate classifier (the others pass with a teacher per row).
_AGGREGATE_FEW_ROWS_CHECKS = (
    "check_classifier_data_not_an_array",
    "check_classifiers_classes",
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_estimators_dtypes",
    "check_estimators_fit_returns_self",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1feature",
    "check_fit2d_predict1d",
    "check_n_features_in_after_fitting",
    "check_readonly_memmap_input",
)
# The same for the subsample-averaging classifier (fewer teachers by default).
_AVERAGE_FEW_ROWS_CHECKS = (
    "check_classifier_data_not_an_array",
    "check_estimators_nan_inf",
    "check_fit2d_1feature",
    "check_n_features_in_after_fitting",
)
# Checks that compare two fits of the search (its refitted candidate must be seeded).
_REFIT_COMPARING_CHECKS = (
    "check_classifier_data_not_an_array",
    "check_fit_idempotent",
    "check_supervised_y_2d",
)
# Checks of partial_fit and of fit's rows that the experts learner's horizon refuses.
_HORIZON_CHECKS = (
    "check_estimators_partial_fit_n_features",
    "check_fit_score_takes_y",
    "check_n_features_in_after_fitting",
)

# -- Reasons ------------------------------------------------------------------------------
_FRESH_NOISE_PICKLE = (
    "each answer is a fresh private draw: a pickled copy gets a fresh query stream from OS "
    "entropy, so that two copies never replay the same noise, and its answers are new "
    "draws, not the original's answers"
)
_ONE_LIVE_COPY = (
    "the phase state of an everlasting predictor belongs to the object that fit returned: a "
    "pickled copy refuses to answer (ForkedStateError), since answering from two copies "
    "would answer more queries per phase than the guarantee allows"
)
_SEPARATE_RELEASES = (
    "predict, decision_function and predict_proba are separate private releases, each with "
    "its own fresh noise, so one call's noisy score need not agree with another call's label "
    "or ranking"
)
_SECRET_N_ITER = (
    "the solver's iteration count depends on the private training data and is not covered by "
    "the privacy guarantee, so it is not a public n_iter_ attribute (public fitted attributes "
    "are the released model and data-independent quantities)"
)
_TEACHERS_NEED_ROWS = (
    "the default number of teachers is set from target_error and the public label set (never "
    "from the number of rows, which would make it data-dependent) and is larger than the 10 to "
    "21 rows this check fits on, while each teacher needs at least one row"
)
_Y_BOUNDS_REQUIRED = (
    "the output range y_bounds=(lo, hi) sets the sensitivity and must be public: there is no "
    "data-independent default and it is never read from the training data, so with the "
    "default y_bounds=None fit refuses the parameters before it reads the data. Set y_bounds "
    "first, e.g. check_estimator(StableERMRegressor(y_bounds=(-3.0, 3.0)), "
    "expected_failed_checks=...): with a public range these checks are not expected to fail"
)
_HISTOGRAM_SAMPLE_SIZE = (
    "the stability-based validation (Chaudhuri & Vinterbo (2013), Theorem 6) needs a few "
    "hundred training rows for the default grid, epsilon and delta with one feature, and many "
    "more with each further feature (the bins are per feature); this check fits on a few dozen "
    "rows, so fit refuses it"
)
_WALK_ONE_FEATURE = (
    "the walk predicts from one public ordered feature: with feature=None it refuses X with "
    "several columns, which this check passes (set feature=... to choose a column)"
)
_WALK_INFINITE_QUERIES = (
    "queries may be -inf or +inf (the walk's domain is the extended real line, answered at its "
    "ends), so predict accepts infinite values; NaN is refused"
)
_CONJUNCTIONS_BINARY_X = (
    "the default hypothesis class, monotone conjunctions, is defined on binary features: the "
    "real-valued X of this check is refused (binarise with public thresholds first)"
)
_BBL_THRESHOLDS_PAPER = (
    "the default hypothesis class, thresholds on the line, is defined on one feature, and "
    "constants='paper' needs the paper's sample size (about 1e28 rows at the default "
    "target_error and failure_probability; Naor, Nissim, Stemmer & Yan (2023), GenericBBL); "
    "this check passes several columns or a few dozen rows, which fit refuses"
)
_PPM_IS_PUBLIC = (
    "fit needs is_public, one flag per row saying which rows are public (the privacy status "
    "of a row cannot be inferred from the data), and this check calls fit(X, y) without it"
)
_NEEDS_UNLABELLED_ROWS = (
    "fit needs unlabelled public rows (y == -1 for a classifier, NaN for a regressor: "
    "scikit-learn's semi-supervised convention) to build its basis and post-processing from, "
    "and refuses a y without them; this check fits on fully labelled data (scikit-learn "
    "exempts only its own semi-supervised classifiers)"
)
_EXPERTS_HORIZON = (
    "the total number of rounds n_rounds sets the per-round privacy rate and must be announced "
    "before the stream starts: with the default n_rounds=None it is the number of rows of the "
    "fit call, so partial_fit before fit (no horizon announced) or after it (the horizon is "
    "used up, and extending it would break the rate) is refused"
)

_UNSEEDED_CANDIDATE = (
    "the candidate estimator keeps its default random_state=None, so the refitted model's "
    "answers are fresh draws from OS entropy; the check seeds only the search's own "
    "random_state and compares the answers of two fits (seed the candidate, "
    "estimator=SubsampleAggregateClassifier(random_state=0), for reproducible experiments)"
)


def _reasons(reason: str, *groups: Iterable[str]) -> dict[str, str]:
    return {check: reason for group in groups for check in group}


def _when(condition: bool, reason: str, *groups: Iterable[str]) -> dict[str, str]:
    """``reason`` for every check of ``groups`` if ``condition`` holds, else nothing."""
    return _reasons(reason, *groups) if condition else {}


def _randomised(estimator: Any) -> dict[str, str]:
    return {"check_estimators_pickle": _FRESH_NOISE_PICKLE}


def _randomised_scores(estimator: Any) -> dict[str, str]:
    """A randomised classifier whose decision_function/predict_proba are separate releases."""
    scores = hasattr(estimator, "decision_function") or hasattr(estimator, "predict_proba")
    return {
        **_randomised(estimator),
        **_when(scores, _SEPARATE_RELEASES, _SEPARATE_RELEASE_CHECKS),
    }


def _default_teachers(estimator: Any) -> bool:
    return estimator.get_params().get("n_teachers") is None


def _subsample_aggregate(estimator: Any) -> dict[str, str]:
    return {
        **_randomised(estimator),
        **_when(_default_teachers(estimator), _TEACHERS_NEED_ROWS, _AGGREGATE_FEW_ROWS_CHECKS),
    }


def _subsample_average_classifier(estimator: Any) -> dict[str, str]:
    return {
        **_randomised_scores(estimator),
        **_when(_default_teachers(estimator), _TEACHERS_NEED_ROWS, _AVERAGE_FEW_ROWS_CHECKS),
    }


def _needs_y_bounds(estimator: Any) -> dict[str, str]:
    """Regressors whose output range is required (the default squared loss)."""
    params = estimator.get_params()
    required = params.get("y_bounds") is None and params.get("loss", "squared") == "squared"
    groups = (_FIT_CHECKS, _REGRESSOR_FIT_CHECKS, _MESSAGE_CHECKS)
    return {**_when(required, _Y_BOUNDS_REQUIRED, *groups), **_randomised(estimator)}


def _with_n_iter(table: Callable[[Any], dict[str, str]]) -> Callable[[Any], dict[str, str]]:
    def expected(estimator: Any) -> dict[str, str]:
        result = table(estimator)
        result.setdefault("check_non_transformer_estimators_n_iter", _SECRET_N_ITER)
        return result

    return expected


def _walk(estimator: Any) -> dict[str, str]:
    if estimator.get_params().get("feature") is None:
        groups = (_FIT_CHECKS, _CLASSIFIER_FIT_CHECKS, _LABEL_CHECKS, ("check_fit2d_1sample",))
        expected = _reasons(_WALK_ONE_FEATURE, *groups)
    else:
        expected = {"check_estimators_nan_inf": _WALK_INFINITE_QUERIES}
    return {**expected, **_randomised(estimator)}


_USER_CODE_ROW_FAILS = (
    "a hypothesis or expert (user code) that raises on a training row counts that row as "
    "its mistake instead of raising: whether user code fails depends on the row, so letting "
    "the error through would disclose it; object features it cannot read never raise"
)


def _exponential_mechanism(estimator: Any) -> dict[str, str]:
    # The released model answers deterministically: pickling keeps its answers.
    hypotheses = estimator.get_params().get("hypotheses")
    if isinstance(hypotheses, list | tuple):
        return {"check_dtype_object": _USER_CODE_ROW_FAILS}
    if hypotheses != "conjunctions":
        return {}
    return _reasons(
        _CONJUNCTIONS_BINARY_X, _FIT_CHECKS, _CLASSIFIER_FIT_CHECKS, ("check_fit2d_1feature",)
    )


def _renamed(params: dict, old: str, new: str) -> Any:
    """A renamed parameter's value, given under its deprecated old name or its new one."""
    value = params.get(old, DEPRECATED)
    return params.get(new) if isinstance(value, str) and value == DEPRECATED else value


def _generic_bbl(estimator: Any) -> dict[str, str]:
    params = estimator.get_params()
    hypotheses = _renamed(params, "hypothesis_class", "hypotheses")
    paper = hypotheses == "thresholds" and _renamed(params, "mode", "constants") == "paper"
    groups = (_FIT_CHECKS, _CLASSIFIER_FIT_CHECKS, ("check_fit2d_1feature",))
    return {
        **_when(paper, _BBL_THRESHOLDS_PAPER, *groups),
        "check_estimators_pickle": _ONE_LIVE_COPY,
    }


def _ppm(estimator: Any) -> dict[str, str]:
    # Every check that fits on valid data calls fit(X, y) without is_public (the checks of
    # the error messages pass: the data are validated first).
    return _reasons(_PPM_IS_PUBLIC, _FIT_CHECKS, _CLASSIFIER_FIT_CHECKS, ("check_fit2d_1feature",))


# Further checks that fit on fully labelled data (they pass for the other estimators).
_LABELLED_ONLY_CHECKS = (
    "check_fit2d_1feature",
    "check_fit2d_1sample",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_pipeline_consistency",
)


def _sufficient_classifier(estimator: Any) -> dict[str, str]:
    extra = ("check_classifiers_one_label", "check_decision_proba_consistency")
    groups = (_FIT_CHECKS, _CLASSIFIER_FIT_CHECKS, _LABELLED_ONLY_CHECKS, extra)
    return _reasons(_NEEDS_UNLABELLED_ROWS, *groups)


def _sufficient_regressor(estimator: Any) -> dict[str, str]:
    groups = (_FIT_CHECKS, _REGRESSOR_FIT_CHECKS, _LABELLED_ONLY_CHECKS)
    expected = _reasons(_NEEDS_UNLABELLED_ROWS, *groups)
    if estimator.get_params().get("y_bounds") is None:
        expected.update(_reasons(_Y_BOUNDS_REQUIRED, _MESSAGE_CHECKS))
    return expected


def _everlasting(estimator: Any) -> dict[str, str]:
    expected = {"check_estimators_pickle": _ONE_LIVE_COPY}
    expected["check_dtype_object"] = (
        "a teacher whose fit raises becomes a constant vote instead of an error: whether a "
        "teacher's fit fails depends on a training row or on a query of an earlier phase, so "
        "letting the error through would disclose that row; object features that the teacher "
        "cannot use therefore never raise"
    )
    return expected


def _experts(estimator: Any) -> dict[str, str]:
    no_horizon = estimator.get_params().get("n_rounds") is None
    return {
        **_randomised(estimator),
        **_when(no_horizon, _EXPERTS_HORIZON, _HORIZON_CHECKS),
        "check_dtype_object": _USER_CODE_ROW_FAILS,
    }


def _grid_search(estimator: Any) -> dict[str, str]:
    unseeded = getattr(estimator.get_params().get("estimator"), "random_state", 0) is None
    return {
        **_randomised(estimator),
        **_when(unseeded, _UNSEEDED_CANDIDATE, _REFIT_COMPARING_CHECKS),
    }


def _histogram(estimator: Any) -> dict[str, str]:
    # The released density answers deterministically: pickling keeps its answers. The checks'
    # smallest training part has 8 rows (10 rows, one fifth held out for validation).
    from skprivpred.model_selection import histogram_stability_constants

    params = estimator.get_params()
    epsilon, split = float(params["epsilon"]), float(params["epsilon_split"])
    try:
        histogram_stability_constants(
            params["n_bins_grid"], 8, 2, split * epsilon, float(params["delta"])
        )
    except ValueError:
        unsupervised = [check for check in _FIT_CHECKS if check != "check_supervised_y_2d"]
        return _reasons(_HISTOGRAM_SAMPLE_SIZE, unsupervised, ("check_fit2d_1feature",))
    return {}


# Class name -> the expected failures of an instance (they may depend on its parameters).
_TABLE: dict[str, Callable[[Any], dict[str, str]]] = {
    "AveragedPSGDClassifier": _randomised_scores,
    "AveragedPSGDRegressor": _needs_y_bounds,
    "DPValidatedHistogramDensity": _histogram,
    "DPValidatedLogisticRegression": _with_n_iter(lambda estimator: {}),
    "ExpProjectedWalkClassifier": _walk,
    "ExponentialMechanismClassifier": _exponential_mechanism,
    "GenericBBLClassifier": _generic_bbl,
    "PrivateEverlastingClassifier": _everlasting,
    "PrivateExpertsClassifier": _experts,
    "PrivateGridSearchCV": _grid_search,
    "PrivateHalfspacePPMClassifier": _ppm,
    "StableERMClassifier": _with_n_iter(_randomised_scores),
    "StableERMRegressor": _with_n_iter(_needs_y_bounds),
    "SubsampleAggregateClassifier": _subsample_aggregate,
    "SubsampleAverageClassifier": _subsample_average_classifier,
    "SubsampleAverageRegressor": _needs_y_bounds,
    "SufficientStatisticClassifier": _sufficient_classifier,
    "SufficientStatisticRegressor": _sufficient_regressor,
}


def expected_failed_checks(estimator: Any) -> dict[str, str]:
    """The scikit-learn checks that ``estimator`` is expected to fail, with the reason for each.

    Pass the result to ``sklearn.utils.estimator_checks.check_estimator(estimator,
    expected_failed_checks=...)`` (or as the ``expected_failed_checks`` callable of
    ``parametrize_with_checks``): with its default parameters, every skprivpred estimator
    passes every other check. The regressors need their public output range first: at the
    default ``y_bounds=None`` their ``fit`` refuses to run, so about thirty checks share that
    one reason; construct them with ``y_bounds=(lo, hi)`` (as the project's own tests do)
    and only the few checks that follow from the privacy contract remain. The reasons follow
    from the privacy contract (fresh noise per answer, public parameters never read from the
    data, secret solver state) or from what the estimator is defined on (one feature, binary
    features, a public/private split, the sample size a theorem needs).

    Parameters
    ----------
    estimator : estimator instance
        An instance of a skprivpred estimator, fitted or not. Some entries depend on its
        parameters (for example a required public bound left at its default ``None``).

    Returns
    -------
    dict of str to str
        Name of each check expected to fail, to the reason it fails.

    Raises
    ------
    TypeError
        If ``estimator`` is not an instance of a skprivpred estimator.

    Examples
    --------
    >>> from skprivpred import DPValidatedLogisticRegression, SubsampleAggregateClassifier
    >>> from skprivpred.utils import expected_failed_checks
    >>> list(expected_failed_checks(DPValidatedLogisticRegression()))
    ['check_non_transformer_estimators_n_iter']
    >>> expected = expected_failed_checks(SubsampleAggregateClassifier(n_teachers=3))
    >>> print(expected["check_estimators_pickle"])
    each answer is a fresh private draw: a pickled copy gets a fresh query stream ...

    A regressor: set its public output range first.

    >>> from skprivpred import StableERMRegressor
    >>> len(expected_failed_checks(StableERMRegressor())) > 20
    True
    >>> len(expected_failed_checks(StableERMRegressor(y_bounds=(-3.0, 3.0)))) < 5
    True

    Run scikit-learn's checks on an estimator with its defaults:

    >>> from sklearn.utils.estimator_checks import check_estimator
    >>> est = SubsampleAggregateClassifier()
    >>> check_estimator(est, expected_failed_checks=expected_failed_checks(est))  # doctest: +SKIP
    """
    for klass in type(estimator).__mro__:
        if klass.__module__.split(".")[0] == "skprivpred" and klass.__name__ in _TABLE:
            return _TABLE[klass.__name__](estimator)
    raise TypeError(
        f"expected_failed_checks takes an instance of a skprivpred estimator; got "
        f"{type(estimator).__name__!r}."
    )
