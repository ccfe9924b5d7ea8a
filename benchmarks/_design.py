"""Design matrices built without looking at the data, for linear models.

A model that is fitted once on all rows (stable ERM, averaged PSGD) or whose
teachers are voted by one stacked matrix product needs numeric features that
are *not* fitted to the data: anything fitted on the whole training set would
couple every answer to every row. Everything here comes from the public
schemas: the category lists of ``adult.names``, and fixed transforms of the
numeric columns chosen from their documented units (never from their values).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
import pandas as pd
from sklearn.preprocessing import OneHotEncoder

# Category lists of the public documentation of the data set (adult.names).
ADULT_CATEGORIES: dict[str, list[str]] = {
    "workclass": [
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
    ],
    "education": [
        "Bachelors",
        "Some-college",
        "11th",
        "HS-grad",
        "Prof-school",
        "Assoc-acdm",
        "Assoc-voc",
        "9th",
        "7th-8th",
        "12th",
        "Masters",
        "1st-4th",
        "10th",
        "Doctorate",
        "5th-6th",
        "Preschool",
    ],
    "marital-status": [
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ],
    "occupation": [
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
    ],
    "relationship": [
        "Wife",
        "Own-child",
        "Husband",
        "Not-in-family",
        "Other-relative",
        "Unmarried",
    ],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native-country": [
        "United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands",
    ],
}

# Fixed public transforms of the numeric columns, each mapping to roughly [0, 1].
ADULT_NUMERIC: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "age": lambda v: v / 100.0,
    "fnlwgt": lambda v: np.log1p(v) / 15.0,
    "education-num": lambda v: v / 16.0,
    "capital-gain": lambda v: np.log1p(v) / 12.0,
    "capital-loss": lambda v: np.log1p(v) / 12.0,
    "hours-per-week": lambda v: v / 100.0,
}

#: Fixed scales of the MAGIC features from their documented units (mm, log10 of a
#: photon count, ratios, degrees); each feature becomes tanh(value / scale).
MAGIC_SCALES = {
    "fLength": 100.0,
    "fWidth": 100.0,
    "fSize": 5.0,
    "fConc": 1.0,
    "fConc1": 1.0,
    "fAsym": 100.0,
    "fM3Long": 100.0,
    "fM3Trans": 100.0,
    "fAlpha": 90.0,
    "fDist": 300.0,
}

#: Fixed scales of the raw diabetes features (``load_diabetes(scaled=False)``): age in
#: years, sex in {1, 2}, BMI, blood pressure in mm Hg, six serum measurements.
DIABETES_SCALES = {
    "age": 100.0,
    "sex": 2.0,
    "bmi": 50.0,
    "bp": 150.0,
    "s1": 300.0,
    "s2": 300.0,
    "s3": 100.0,
    "s4": 10.0,
    "s5": 10.0,
    "s6": 150.0,
}

#: Norm bound of a public design row, from the schema alone: Adult has 6 numeric
#: columns mapped to about [0, 1] plus 8 one-hot groups (norm^2 <= 6 + 8); the
#: other designs have 10 columns in (-1, 1).
PUBLIC_NORM_BOUND = {"adult": 14.0**0.5, "magic": 10.0**0.5, "diabetes": 10.0**0.5}


@lru_cache(maxsize=1)
def public_one_hot_encoder() -> OneHotEncoder:
    """A one-hot encoder for the public Adult categories, fitted on a synthetic frame.

    The categories are passed explicitly; the frame it is fitted on is made from
    the same lists (no data row is involved).
    """
    columns = list(ADULT_CATEGORIES)
    n_rows = max(len(values) for values in ADULT_CATEGORIES.values())
    synthetic = pd.DataFrame(
        {c: np.resize(ADULT_CATEGORIES[c], n_rows) for c in columns}  # cycles each list
    )
    encoder = OneHotEncoder(
        categories=[ADULT_CATEGORIES[c] for c in columns],
        handle_unknown="ignore",
        sparse_output=False,
    )
    return encoder.fit(synthetic)


def adult_design_matrix(X: pd.DataFrame, encoder: OneHotEncoder) -> np.ndarray:
    """Numeric, C-contiguous float64 design matrix from fixed public transforms only."""
    categorical = X[list(ADULT_CATEGORIES)].astype(str)
    numeric = [ADULT_NUMERIC[c](X[c].to_numpy(dtype=float)) for c in ADULT_NUMERIC]
    return np.ascontiguousarray(
        np.column_stack([*numeric, encoder.transform(categorical)]), dtype=np.float64
    )


def public_design(X: pd.DataFrame) -> np.ndarray:
    """Numeric design matrix from fixed public transforms only (chosen by the schema)."""
    columns = set(X.columns)
    if set(ADULT_CATEGORIES) <= columns:
        return adult_design_matrix(X, public_one_hot_encoder())
    scales = MAGIC_SCALES if set(MAGIC_SCALES) <= columns else DIABETES_SCALES
    return np.column_stack([np.tanh(X[c].to_numpy(dtype=float) / s) for c, s in scales.items()])
