"""The model card shows long public constants compactly (issue 51, item 4)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.pipeline import make_pipeline

from skprivpred import StableERMClassifier
from skprivpred.preprocessing import PublicScaler

pytest.importorskip("skops")

from skprivpred.serving import model_card  # noqa: E402


def _card_of_a_scaled_model(lower, upper):
    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(
        PublicScaler.from_bounds(lower, upper), StableERMClassifier(classes=[0, 1])
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model_card(model)


def test_card_summarises_a_scalers_thirty_constants_in_one_line_each():
    lower = [float(v) for v in np.arange(30)]  # public per-column bounds (a list, as typed)
    upper = [float(v) for v in np.arange(30) * 10.0 + 100.0]
    card = _card_of_a_scaled_model(lower, upper)
    (steps,) = [line for line in card.splitlines() if line.startswith("| `steps` |")]
    # center = (lower + upper) / 2, scale = (upper - lower) / 2; clip = (lower, upper)
    assert "center=30 values from 50 to 209.5 (50, 55.5, ..., 209.5)" in steps
    assert "scale=30 values from 50 to 180.5 (50, 54.5, ..., 180.5)" in steps
    assert "clip=(30 values from 0 to 29 (0, 1, ..., 29), 30 values from 100 to 390" in steps
    assert "54.5, 55.0" not in steps and len(steps) < 600  # not value by value
    assert "classes=[0, 1]" in steps  # short sequences stay as they are


def test_card_lists_a_renamed_parameter_once_under_its_new_name():
    from skprivpred import SubsampleAggregateClassifier

    X, y = load_breast_cancer(return_X_y=True)
    new = SubsampleAggregateClassifier(n_teachers=5, target_error=0.2, classes=[0, 1])
    old = SubsampleAggregateClassifier(n_teachers=5, alpha=0.2, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new_card, old_card = model_card(new.fit(X, y)), model_card(old.fit(X, y))
    assert "| `target_error` | 0.2 |" in new_card and "`alpha`" not in new_card
    assert "| `alpha` | 0.2 |" in old_card  # an old name given is shown as given
