"""What a model says it is: its card, budget, guarantee and OpenAPI document.

* The model card shows long public constants compactly (issue 51, item 4).
* A one-release model (its fit is the release) says so in ``/card``, ``/budget``,
  ``/guarantee`` and ``/openapi.json``; a per-query model says that each answer is one
  (issue 41), on the real server.
"""

import warnings
from pathlib import Path

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


# -- a one-release model says what it is, everywhere ----------------------------------------------
def _one_release_model(tmp_path: Path):
    from skprivpred import PrivacyAccountant, SufficientStatisticClassifier
    from skprivpred.serving import save_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = (X[:, 0] > 0).astype(int)
    y[:1000] = -1  # unlabelled public rows
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6, ledger=str(tmp_path / "budget.db"))
    path = tmp_path / "model.skops"
    save_model(SufficientStatisticClassifier(classes=[0, 1], accountant=acc).fit(X, y), path)
    return path, acc


def test_a_one_release_model_says_that_it_is_the_release(tmp_path, service_factory):
    path, acc = _one_release_model(tmp_path)
    service = service_factory(path, workers=1)
    status, body = service.request("POST", "/predict", {"rows": [[0.1, 0.2, 0.3]] * 5})
    assert status == 200 and len(body["predictions"]) == 5
    status, report = service.request("GET", "/budget")
    assert status == 200
    assert report["fit_releases"] == 1 and report["answers_charged"] is False
    assert "queries_answered" not in report  # the fit's release is not a query answered
    assert report["note"] == (
        "This model is the release: its fit was charged to this budget, once; its answers "
        "are free post-processing of that release and charge nothing."
    )
    assert report["epsilon_spent"] == acc.epsilon_spent  # the answers charged nothing
    status, card = service.request_raw("GET", "/card")[::2]
    card = card.decode()
    assert "never released" not in card
    assert (
        "This model is itself a differentially private release, made once by fit and charged "
        "to the budget then; its answers are free post-processing of the release and charge "
        "nothing." in card
    )
    assert "| Cost of one answer | nothing: answers are post-processing of the one release" in card
    assert "Every answer is charged to this budget" not in card
    assert "The model's release was charged to this budget, in its ledger, once" in card
    assert service.request("GET", "/guarantee")[1]["unit"] == "one release made by fit"
    document = service.request("GET", "/openapi.json")[1]
    assert document["info"]["description"].startswith(
        "A differentially private model: fit released it once, and its answers are free "
        "post-processing of that release."
    )
    assert document["paths"]["/predict"]["post"]["summary"].startswith(
        "Answers of the released model"
    )
    budget = document["paths"]["/budget"]["get"]["responses"]["200"]["content"]
    properties = budget["application/json"]["schema"]["properties"]
    assert "fit_releases" in properties and "queries_answered" not in properties


def test_a_per_query_model_says_that_each_answer_is_a_release(tmp_path, service_factory):
    from test_serving import fitted_model  # the serving tests' model (needs uvicorn)

    path, acc = fitted_model(tmp_path, 10)
    service = service_factory(path, workers=1)
    assert service.request("POST", "/predict", {"rows": [[0.0, 1.0, 2.0]] * 3})[0] == 200
    status, report = service.request("GET", "/budget")
    assert report["queries_answered"] == 3 and report["answers_charged"] is True
    assert "fit_releases" not in report
    card = service.request_raw("GET", "/card")[2].decode()
    assert (
        "Every answer of this model is a differentially private release, charged to the "
        "budget before it is drawn; the model itself is never released." in card
    )
    assert "Every answer is charged to this budget" in card
    assert service.request("GET", "/guarantee")[1]["unit"] == "each answered query row"
    document = service.request("GET", "/openapi.json")[1]
    assert document["paths"]["/predict"]["post"]["summary"].startswith("Private answers")


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
