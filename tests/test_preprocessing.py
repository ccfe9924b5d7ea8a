"""Public preprocessing: transformers whose ``fit`` reads nothing but shapes and names.

What is checked: fitting on two different data sets of the same shape and names gives
the same transform (so the transformers are safe outside a private estimator);
unknown categories encode as all zeros; the numeric map is the documented formula;
``public_preprocessor`` follows the schema (numeric first, then one-hot blocks, dense);
the Adult schema reproduces the published category lists; ``row_norm_bound`` is a true
bound on the output's row norms (random and extreme rows of each schema) and is attained;
bad input is refused clearly; an Adult pipeline with the public preprocessing outside and
plain linear teachers inside fits and answers, and so does one with
``OneHotEncoder(handle_unknown="ignore")`` inside the teachers, rare categories and all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skprivpred import PrivacyAccountant, SubsampleAggregateClassifier
from skprivpred._teachers._votes import TeacherEnsemble
from skprivpred.datasets import adult_schema, load_adult, magic_schema
from skprivpred.preprocessing import (
    PublicOneHotEncoder,
    PublicScaler,
    public_preprocessor,
    row_norm_bound,
)

SCHEMA = {
    "numeric": {
        "age": {"scale": 100.0},
        "income": {"scale": 12.0, "log": True, "clip": (0.0, 1e6)},
        "angle": {"center": 45.0, "scale": 90.0, "squash": True},
    },
    "categorical": {"city": ["paris", "rome", "oslo"], "pet": ["cat", "dog"]},
}
SCHEMA["numeric"]["age"]["clip"] = (0.0, 120.0)
SCHEMA["numeric"]["angle"]["clip"] = (-180.0, 180.0)


def frame(seed: int, n: int = 50) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(0, 100, n).astype(float),
            "city": rng.choice(["paris", "rome", "oslo", "lima"], n),
            "income": rng.exponential(30000, n),
            "pet": rng.choice(["cat", "dog"], n),
            "angle": rng.uniform(-90, 90, n),
            "note": rng.choice(["x", "y"], n),  # not in the schema: dropped
        }
    )


def test_fit_reads_no_row_so_any_fit_gives_the_same_transform():
    queries = frame(99)
    a = public_preprocessor(SCHEMA).fit(frame(0)).transform(queries)
    b = public_preprocessor(SCHEMA).fit(frame(1, n=7)).transform(queries)
    np.testing.assert_array_equal(a, b)
    assert isinstance(a, np.ndarray) and a.shape == (50, 3 + 3 + 2)


def test_the_numeric_map_is_the_documented_formula_and_unknowns_are_zeros():
    queries = frame(5)
    out = public_preprocessor(SCHEMA).fit(queries).transform(queries)
    age = np.clip(queries["age"], 0, 120) / 100.0
    income = np.log1p(np.clip(queries["income"], 0, 1e6)) / 12.0
    angle = np.tanh((np.clip(queries["angle"], -180, 180) - 45.0) / 90.0)
    np.testing.assert_allclose(out[:, :3], np.column_stack([age, income, angle]), rtol=1e-15)
    city = out[:, 3:6]
    expected = np.column_stack([queries["city"] == c for c in ("paris", "rome", "oslo")])
    np.testing.assert_array_equal(city, expected.astype(float))
    assert np.all(city[queries["city"] == "lima"] == 0.0)  # not a public category


def test_the_one_hot_encoder_and_the_scaler_on_their_own():
    enc = PublicOneHotEncoder(categories=[["a", "b"], [1, 2, 3]])
    X = np.array([["b", 3], ["z", 1]], dtype=object)
    np.testing.assert_array_equal(enc.fit(X[:1]).transform(X), [[0, 1, 0, 0, 1], [0, 0, 1, 0, 0]])
    assert list(enc.get_feature_names_out()) == ["x0_a", "x0_b", "x1_1", "x1_2", "x1_3"]
    scaler = PublicScaler(center=[1.0, 0.0], scale=[2.0, 4.0], clip=([0, -1], [10, 1]))
    np.testing.assert_array_equal(
        scaler.fit(np.zeros((1, 2))).transform([[5.0, 3.0], [-2.0, -3.0]]),
        [[2.0, 0.25], [-0.5, -0.25]],
    )
    assert list(scaler.get_feature_names_out(["u", "v"])) == ["u", "v"]


@pytest.mark.parametrize(
    "make, X, match",
    [
        (lambda: PublicOneHotEncoder(categories=[["a"]]), np.zeros((2, 2)), "one public category"),
        (lambda: PublicOneHotEncoder(categories=[["a", "a"]]), np.zeros((2, 1)), "without repeats"),
        (lambda: PublicScaler(scale=0.0), np.zeros((2, 1)), "scale must be > 0"),
        (lambda: PublicScaler(scale=[1.0, 2.0, 3.0]), np.zeros((2, 2)), "one value per column"),
        (lambda: PublicScaler(clip=(1.0, 0.0)), np.zeros((2, 1)), "low <= high"),
        (lambda: PublicScaler(center=np.nan), np.zeros((2, 1)), "center must be finite"),
    ],
)
def test_bad_constants_are_refused(make, X, match):
    with pytest.raises(ValueError, match=match):
        make().fit(X)


# -- PublicScaler.from_bounds: public per-column ranges in one line -------------------------------
def test_from_bounds_is_the_scaler_a_schema_builds():
    lower, upper = [0.0, -5.0, 10.0], [100.0, 5.0, 12.0]
    names = ["a", "b", "c"]
    for out_low, out_high in [(-1.0, 1.0), (0.0, 1.0)]:
        width = out_high - out_low
        schema = {
            "numeric": {
                name: {
                    "clip": (lo, hi),
                    "center": lo - out_low * (hi - lo) / width,
                    "scale": (hi - lo) / width,
                }
                for name, lo, hi in zip(names, lower, upper)
            }
        }
        built = public_preprocessor(schema).transformers[0][1]
        scaler = PublicScaler.from_bounds(lower, upper, feature_range=(out_low, out_high))
        for key in ("center", "scale", "clip"):  # (the schema also lists log/squash off)
            assert scaler.get_params()[key] == built.get_params()[key]
        assert not np.any(built.log) and not np.any(built.squash)
        assert scaler.log is False and scaler.squash is False
        # the map sends each range onto feature_range, clipping outside values
        X = pd.DataFrame([lower, upper, [50.0, 0.0, 11.0], [-1e9, 1e9, 0.0]], columns=names)
        Z = scaler.fit(X).transform(X)
        np.testing.assert_allclose(Z[0], out_low)
        np.testing.assert_allclose(Z[1], out_high)
        np.testing.assert_allclose(Z[2], (out_low + out_high) / 2)
        np.testing.assert_allclose(Z[3], [out_low, out_high, out_low])
        np.testing.assert_allclose(Z, built.fit(X).transform(X))
    # public bound of its output: every column in [-1, 1], so sqrt(3)
    assert row_norm_bound(PublicScaler.from_bounds(lower, upper)) == pytest.approx(np.sqrt(3))
    # scalars apply to every column
    scalar = PublicScaler.from_bounds(0.0, 10.0)
    assert (scalar.center, scalar.scale, scalar.clip) == (5.0, 5.0, (0.0, 10.0))
    np.testing.assert_allclose(scalar.fit_transform([[0.0, 5.0, 20.0]]), [[-1.0, 0.0, 1.0]])


@pytest.mark.parametrize(
    "lower, upper, kwargs, match",
    [
        ([0.0, 1.0], [1.0, 1.0], {}, r"column 1 has lower=1.0 >= upper=1.0"),
        ([0.0, 2.0], [1.0, 1.0], {}, r"column 1 has lower=2.0 >= upper=1.0"),
        ([0.0, np.nan], [1.0, 2.0], {}, "lower and upper must be finite"),
        ([0.0], [np.inf], {}, "lower and upper must be finite"),
        ([0.0, 1.0], [1.0, 2.0, 3.0], {}, "one number per column, of the same length"),
        (["a"], [1.0], {}, "one number per column"),
        ([[0.0, 1.0]], [[1.0, 2.0]], {}, "scalars or 1-D"),
        ([0.0], [1.0], {"feature_range": (1.0, -1.0)}, r"feature_range must be a pair"),
        ([0.0], [1.0], {"feature_range": (0.0, np.inf)}, r"feature_range must be a pair"),
        ([0.0], [1.0], {"feature_range": 1.0}, r"feature_range must be a pair"),
    ],
)
def test_from_bounds_refuses_bad_ranges_naming_them(lower, upper, kwargs, match):
    with pytest.raises(ValueError, match=match):
        PublicScaler.from_bounds(lower, upper, **kwargs)


def test_bad_schemas_are_refused():
    with pytest.raises(ValueError, match='keys "numeric"'):
        public_preprocessor({"numbers": {}})
    with pytest.raises(ValueError, match="unknown keys"):
        public_preprocessor({"numeric": {"a": {"mean": 1.0}}})
    with pytest.raises(ValueError, match="no column"):
        public_preprocessor({})
    with pytest.raises(ValueError, match="clip bounds for every"):
        public_preprocessor({"numeric": {"a": {"clip": (0, 1)}, "b": {}}})


def test_the_shipped_schemas():
    adult = adult_schema()
    assert list(adult["categorical"]) == [
        "workclass",
        "education",
        "marital-status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "native-country",
    ]
    assert "Armed-Forces" in adult["categorical"]["occupation"]
    assert len(adult["categorical"]["native-country"]) == 41
    assert set(adult["numeric"]) == {
        "age",
        "fnlwgt",
        "education-num",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
    }
    adult["numeric"]["age"]["scale"] = -1.0  # a copy: the library's schema is unchanged
    assert adult_schema()["numeric"]["age"]["scale"] == 100.0
    assert len(magic_schema()["numeric"]) == 10 and magic_schema()["categorical"] == {}


# -- the public bound on the output's row norms ----------------------------------------------------
def _extreme_and_random_rows(schema: dict, n: int, seed: int) -> pd.DataFrame:
    """Rows of a schema: every numeric column at, inside and far beyond its clip bounds (or at
    huge magnitudes when it is only squashed), every categorical column on a public category or
    an unknown value."""
    rng = np.random.default_rng(seed)
    columns = {}
    for name, spec in schema["numeric"].items():
        low, high = spec.get("clip", (-1e6, 1e6))
        candidates = np.array([low, high, 0.0, -1e12, 1e12, (low + high) / 2])
        if spec.get("log"):
            candidates = candidates[candidates >= max(low, 0.0)]  # log1p is for counts
        values = rng.uniform(low, high, n)
        pick = rng.random(n) < 0.5
        values[pick] = rng.choice(candidates, pick.sum())
        columns[name] = values
    for name, categories in schema["categorical"].items():
        columns[name] = rng.choice([*categories, "not-a-category"], n)
    return pd.DataFrame(columns)


@pytest.mark.parametrize("name", ["adult", "magic", "test"])
def test_row_norm_bound_is_a_true_bound(name):
    schema = {"adult": adult_schema(), "magic": magic_schema(), "test": SCHEMA}[name]
    rows = _extreme_and_random_rows(schema, 20_000, seed=0)
    preprocessor = public_preprocessor(schema)
    bound = row_norm_bound(preprocessor)
    norms = np.linalg.norm(preprocessor.fit(rows).transform(rows), axis=1)
    assert np.all(norms <= bound)
    assert row_norm_bound(preprocessor) == bound  # fitted or not: the same parameters
    assert norms.max() >= 0.9 * bound  # and not a loose guess


@pytest.mark.parametrize("schema", [adult_schema(), magic_schema()], ids=["adult", "magic"])
def test_row_norm_bound_is_attained_by_the_shipped_schemas(schema):
    """Every column at the end of its range that maps farthest from 0, one category each."""
    highest = {
        c: spec["clip"][1] if "clip" in spec else 1e12 for c, spec in schema["numeric"].items()
    }
    corner = pd.DataFrame({**highest, **{c: v[0] for c, v in schema["categorical"].items()}}, [0])
    preprocessor = public_preprocessor(schema).fit(corner)
    norm = np.linalg.norm(preprocessor.transform(corner))
    assert row_norm_bound(preprocessor) * (1 - 1e-9) <= norm <= row_norm_bound(preprocessor)


def test_row_norm_bound_of_the_shipped_schemas():
    assert row_norm_bound(public_preprocessor(adult_schema())) == pytest.approx(np.sqrt(14))
    assert row_norm_bound(public_preprocessor(magic_schema())) == pytest.approx(np.sqrt(10))
    # The test schema: age in [0, 1.2], income in [0, log1p(1e6) / 12], the angle squashed
    # from [(-180 - 45) / 90, (180 - 45) / 90], and two one-hot blocks.
    expected = 1.2**2 + (np.log1p(1e6) / 12) ** 2 + np.tanh(225 / 90) ** 2 + 2
    assert row_norm_bound(public_preprocessor(SCHEMA)) == pytest.approx(np.sqrt(expected))


def test_row_norm_bound_of_each_public_transformer():
    from sklearn.pipeline import Pipeline

    assert row_norm_bound(PublicOneHotEncoder(categories=[["a", "b"], [1, 2, 3]])) == (
        pytest.approx(np.sqrt(2))
    )
    scaler = PublicScaler(center=[1.0, 0.0], scale=[2.0, 4.0], clip=([0, -1], [10, 1]))
    assert row_norm_bound(scaler) == pytest.approx(np.hypot(4.5, 0.25))  # (10 - 1) / 2, 1 / 4
    assert row_norm_bound(PublicScaler(squash=True).fit(np.zeros((1, 9)))) == pytest.approx(3.0)
    pipe = Pipeline([("a", PublicScaler()), ("b", PublicScaler(squash=True, scale=[1.0] * 4))])
    assert row_norm_bound(pipe) == pytest.approx(2.0)  # the last step decides
    dropped = ColumnTransformer([("x", "drop", [0]), ("y", scaler, [1, 2])])
    assert row_norm_bound(dropped) == pytest.approx(np.hypot(4.5, 0.25))


def test_row_norm_bound_refuses_what_has_no_public_bound():
    unclipped = {"numeric": {"age": {"scale": 100.0}, "hours": {"scale": 100.0}}}
    with pytest.raises(ValueError, match=r"\['age', 'hours'\] are neither clipped nor squashed"):
        row_norm_bound(public_preprocessor(unclipped))
    with pytest.raises(ValueError, match="passes its columns through"):
        row_norm_bound(ColumnTransformer([("x", "passthrough", [0])]))
    with pytest.raises(ValueError, match="passes its columns through"):
        row_norm_bound(
            ColumnTransformer([("x", PublicScaler(squash=True), [0])], remainder="passthrough")
        )
    with pytest.raises(ValueError, match="fit it first"):
        row_norm_bound(PublicScaler(squash=True))
    with pytest.raises(TypeError, match="StandardScaler"):
        row_norm_bound(make_pipeline(StandardScaler()))


def test_the_adult_clip_bounds_change_no_published_row(adult):
    (X, _), (X_test, _) = adult
    unclipped = adult_schema()
    for spec in unclipped["numeric"].values():
        del spec["clip"]
    for rows in (X, X_test):
        np.testing.assert_array_equal(
            public_preprocessor(adult_schema()).fit(rows).transform(rows),
            public_preprocessor(unclipped).fit(rows).transform(rows),
        )


# -- on Adult itself -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    """The Adult split, from the repository's shared data when it is beside the checkout."""
    shared = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"
    home = None
    if (shared / "adult.data").exists():
        home = tmp_path_factory.mktemp("data")
        (home / "adult").mkdir()
        for name in ("adult.data", "adult.test", "adult.names"):
            shutil.copy(shared / name, home / "adult" / name)
    train = load_adult(subset="train", as_frame=True, return_X_y=True, data_home=home)
    test = load_adult(subset="test", as_frame=True, return_X_y=True, data_home=home)
    return train, test


def test_public_preprocessing_outside_plain_linear_teachers_inside(adult):
    (X, y), (X_test, y_test) = adult
    budget = PrivacyAccountant(epsilon=1e4)
    model = make_pipeline(
        public_preprocessor(adult_schema()),
        SubsampleAggregateClassifier(
            LogisticRegression(max_iter=1000), epsilon=1.0, classes=[0, 1], accountant=budget
        ),
    ).fit(X, y)
    private = model[-1]
    assert private._ensemble._other == []  # plain linear teachers: one stacked product
    law = private._output_distribution(model[0].transform(X_test))
    accuracy = float(np.mean(law[np.arange(y_test.size), y_test]))
    assert accuracy >= 0.84  # exact expected accuracy (the non-private model scores 0.85)
    assert model.predict(X_test[:20]).shape == (20,) and budget.queries_answered == 20


def test_one_hot_inside_the_teachers_handles_rare_categories(adult):
    (X, y), (X_test, _) = adult
    categorical = list(adult_schema()["categorical"])
    numeric = list(adult_schema()["numeric"])
    teacher = make_pipeline(
        ColumnTransformer(
            [
                ("categories", OneHotEncoder(handle_unknown="ignore"), categorical),
                ("numbers", StandardScaler(), numeric),
            ]
        ),
        LogisticRegression(max_iter=1000),
    )
    clf = SubsampleAggregateClassifier(teacher, epsilon=1.0, classes=[0, 1]).fit(X, y)
    rare = X_test[X_test["occupation"].astype(str) == "Armed-Forces"]
    assert len(rare) > 0  # seen by few teachers, if any
    assert clf.predict(rare).shape == (len(rare),)
    assert clf.predict(X_test[:100]).shape == (100,)


def test_a_public_prefix_inside_every_teacher_is_applied_once_and_the_rest_stacked(adult):
    (X, y), (X_test, _) = adult
    teacher = make_pipeline(public_preprocessor(adult_schema()), LogisticRegression(max_iter=500))
    parts = np.array_split(np.random.default_rng(0).permutation(y.size), 10)
    full = [clone(teacher).fit(X.iloc[p], y.iloc[p]) for p in parts]
    ensemble = TeacherEnsemble(full, np.array([0, 1]))
    assert ensemble._prefix is not None and ensemble._other == []  # prefix once, LR stacked
    queries = X_test.iloc[:500]
    expected = np.zeros((500, 2), dtype=np.int64)
    for model in full:  # the votes are those of the full pipelines
        expected[np.arange(500), model.predict(queries)] += 1
    np.testing.assert_array_equal(ensemble.vote_counts(queries), expected)
    clf = SubsampleAggregateClassifier(teacher, n_teachers=10, classes=[0, 1]).fit(X, y)
    assert clf._ensemble._prefix is not None and clf.predict(queries).shape == (500,)
    # A prefix that is not public (fitted to the rows) is never shared.
    fitted = make_pipeline(StandardScaler(), LogisticRegression())
    numeric = X[list(adult_schema()["numeric"])]
    rows = [clone(fitted).fit(numeric.iloc[p], y.iloc[p]) for p in parts]
    assert TeacherEnsemble(rows, np.array([0, 1]))._prefix is None
