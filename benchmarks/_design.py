"""Design matrices built without looking at the data, for linear models.

A model that is fitted once on all rows (stable ERM, averaged PSGD) or whose
teachers are voted by one stacked matrix product needs numeric features that
are *not* fitted to the data: anything fitted on the whole training set would
couple every answer to every row. Everything here comes from the public
schemas that the library's loaders provide (``skprivpred.datasets.adult_schema``,
``magic_schema``: the category lists of ``adult.names`` and fixed transforms of
the numeric columns chosen from their documented units, never from their values),
through the library's public preprocessing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from skprivpred.datasets import adult_schema, magic_schema
from skprivpred.preprocessing import public_preprocessor

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


#: The public schemas, from the library's loaders (Adult, MAGIC) or written here.
SCHEMAS = {
    "adult": adult_schema(),
    "magic": magic_schema(),
    "diabetes": {
        "numeric": {c: {"scale": s, "squash": True} for c, s in DIABETES_SCALES.items()},
        "categorical": {},
    },
}


def public_design(X: pd.DataFrame) -> np.ndarray:
    """Numeric, C-contiguous design matrix from fixed public transforms only.

    The schema is chosen by the columns; the transformer is
    :func:`skprivpred.preprocessing.public_preprocessor`, whose ``fit`` reads only
    the column names and counts.
    """
    columns = set(X.columns)
    name = next(n for n, schema in SCHEMAS.items() if _columns(schema) <= columns)
    design = public_preprocessor(SCHEMAS[name]).fit(X).transform(X)
    return np.ascontiguousarray(design, dtype=np.float64)


def _columns(schema: dict) -> set:
    return set(schema["numeric"]) | set(schema["categorical"])
