"""Model files across versions: a file records the versions that saved it.

A model saved under scikit-learn V (and skprivpred S) loads and answers under V and S,
a ``ColumnTransformer`` included; a file whose recorded versions differ from the running
ones is refused with a message naming both, before it answers anything.
"""

import os

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import skprivpred
from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred.serving import load_model, save_model

pytest.importorskip("skops")


def _frame_model(tmp_path):
    """A pipeline with a ColumnTransformer (remainder passthrough) fitted on a DataFrame."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "a": rng.normal(size=300),
            "b": rng.normal(size=300),
            "city": rng.choice(["x", "y", "z"], 300),
        }
    )
    y = (X["a"] > 0).astype(int).to_numpy()
    teacher = make_pipeline(
        make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), ["city"]),
            (StandardScaler(), ["a"]),
            remainder="passthrough",
        ),
        LogisticRegression(),
    )
    acc = PrivacyAccountant(epsilon=10.0, ledger=str(tmp_path / "budget.db"), name="versions")
    clf = SubsampleAggregateClassifier(
        teacher, epsilon=1.0, n_teachers=4, classes=[0, 1], accountant=acc
    ).fit(X, y)
    return clf, X


def test_a_model_with_a_column_transformer_loads_and_answers_under_the_saving_versions(tmp_path):
    import skops.io as sio

    clf, X = _frame_model(tmp_path)
    path = tmp_path / "model.skops"
    save_model(clf, path)
    payload = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    assert payload["versions"] == {
        "scikit-learn": sklearn.__version__,
        "skprivpred": skprivpred.__version__,
    }
    loaded = load_model(path)
    answers = loaded.predict(X.iloc[:5])
    assert answers.shape == (5,) and set(answers.tolist()) <= {0, 1}


def test_a_column_transformer_model_is_served_under_the_saving_versions(tmp_path, service_factory):
    """The real service (one worker) answers rows by column name and charges for them."""
    clf, _ = _frame_model(tmp_path)
    path = tmp_path / "model.skops"
    save_model(clf, path)
    service = service_factory(path, workers=1)
    records = [{"a": 0.5, "b": -1.0, "city": "y"}, {"a": -0.5, "b": 1.0, "city": "x"}]
    status, answer = service.request("POST", "/predict", {"records": records})
    assert status == 200, answer
    assert len(answer["predictions"]) == 2 and set(answer["predictions"]) <= {0, 1}
    assert clf.accountant.queries_answered == 2  # the file's budget was charged


@pytest.mark.parametrize(
    "package, attribute",
    [("scikit-learn", (sklearn, "__version__")), ("skprivpred", (skprivpred, "__version__"))],
)
def test_a_file_saved_under_another_version_is_refused_naming_both(
    tmp_path, monkeypatch, package, attribute
):
    clf, _ = _frame_model(tmp_path)
    path = tmp_path / "model.skops"
    module, name = attribute
    running = getattr(module, name)
    with monkeypatch.context() as patch:
        patch.setattr(module, name, "0.0.1")  # the file records another version
        save_model(clf, path)
    with pytest.raises(ValueError) as info:
        load_model(path)
    message = str(info.value)
    assert f"{package} 0.0.1" in message and f"{package} {running}" in message, message
    assert "\n" not in message
    assert clf.accountant.epsilon_spent == 0.0  # refusing charges nothing


def test_a_file_without_a_version_record_is_refused(tmp_path):
    import skops.io as sio

    clf, _ = _frame_model(tmp_path)
    path = tmp_path / "old.skops"
    path.write_bytes(sio.dumps({"format": "skprivpred-model", "version": 2, "estimator": clf}))
    os.chmod(path, 0o600)
    with pytest.raises(ValueError, match="does not record the scikit-learn and skprivpred"):
        load_model(path)
