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


#: Occupations of the census "managerial and professional specialty" group.
ADULT_WHITE_COLLAR = ("Exec-managerial", "Prof-specialty")
#: Marital statuses with a spouse present (civilian or armed forces).
ADULT_MARRIED = ("Married-civ-spouse", "Married-AF-spouse")
#: Columns of :func:`adult_compact_design`, in order.
ADULT_COMPACT_COLUMNS = (
    "age",
    "education-num",
    "hours-per-week",
    "capital-gain",
    "capital-loss",
    "married",
    "male",
    "white-collar",
)


def adult_compact_design(X: pd.DataFrame) -> np.ndarray:
    """A compact Adult design of 8 features known to predict income, for tiny teachers.

    The features are the usual predictors of income in the census literature,
    each through a fixed transform chosen from its unit, never from the data:

    * ``age``: ``(age - 40) / 20`` (years; centre and spread of a working life);
    * ``education-num``: ``(education-num - 10) / 4`` (1 to 16 years of school);
    * ``hours-per-week``: ``(hours - 40) / 20`` (around the 40-hour full-time week);
    * ``capital-gain``, ``capital-loss``: ``log1p(dollars) / 10``;
    * ``married``: 1 if the marital status is married with a spouse present;
    * ``male``: 1 if ``sex`` is ``Male``;
    * ``white-collar``: 1 for the managerial and professional occupations.

    A teacher fitted on a dozen rows cannot estimate the 105 coefficients of
    :func:`public_design`; on these 8 columns a logistic regression is an
    informative teacher (see the ``--adult-teacher`` option of
    ``benchmarks/everlasting.py``). The missing value ``"?"`` gives 0 in the flags.
    """

    def num(col: str) -> np.ndarray:
        return X[col].to_numpy(dtype=np.float64)

    def flag(col: str, values: tuple) -> np.ndarray:
        return X[col].astype(str).isin(values).to_numpy(np.float64)

    design = np.column_stack(
        [
            (num("age") - 40.0) / 20.0,
            (num("education-num") - 10.0) / 4.0,
            (num("hours-per-week") - 40.0) / 20.0,
            np.log1p(np.maximum(num("capital-gain"), 0.0)) / 10.0,
            np.log1p(np.maximum(num("capital-loss"), 0.0)) / 10.0,
            flag("marital-status", ADULT_MARRIED),
            flag("sex", ("Male",)),
            flag("occupation", ADULT_WHITE_COLLAR),
        ]
    )
    return np.ascontiguousarray(design, dtype=np.float64)
