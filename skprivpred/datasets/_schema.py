"""Public schemas of the bundled data sets: what may be known without the data.

A schema lists, for each column, what its public documentation says: the
category lists of a categorical column, and for a numeric column a fixed
transform chosen from its documented units (never from its values). It feeds
:func:`skprivpred.preprocessing.public_preprocessor`, whose transformers read
nothing from the data, so they may sit outside a private estimator.

Schema format: ``{"numeric": {column: {"scale": s, "center": c, "log": bool,
"squash": bool}}, "categorical": {column: [category, ...]}}``; a numeric column
becomes ``v -> log1p(v)`` if ``log``, then ``(v - center) / scale``, then ``tanh``
if ``squash``.
"""

# Authors: The skprivpred developers
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy

__all__ = ["adult_schema", "magic_schema"]

# Category lists of the public documentation of the data set (adult.names).
_ADULT_CATEGORIES: dict[str, list[str]] = {
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


# Numeric columns of Adult from their units: years, a census weight, a number of
# years of education (1 to 16), dollars, hours a week; each to roughly [0, 1].
_ADULT_NUMERIC = {
    "age": {"scale": 100.0},
    "fnlwgt": {"scale": 15.0, "log": True},
    "education-num": {"scale": 16.0},
    "capital-gain": {"scale": 12.0, "log": True},
    "capital-loss": {"scale": 12.0, "log": True},
    "hours-per-week": {"scale": 100.0},
}

# MAGIC features from their documented units (mm, log10 of a photon count, ratios,
# degrees), squashed to (-1, 1) by tanh(value / scale).
_MAGIC_NUMERIC = {
    name: {"scale": scale, "squash": True}
    for name, scale in {
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
    }.items()
}


def adult_schema() -> dict:
    """The public schema of UCI Adult (see the module docstring for its format).

    The category lists are those of the data set's documentation
    (``adult.names``); the missing value ``"?"`` is not a category, so it
    encodes as all zeros. The numeric transforms come from the columns' units.

    Returns
    -------
    dict
        ``{"numeric": {...}, "categorical": {...}}`` (a fresh copy).

    Examples
    --------
    >>> from skprivpred.datasets import adult_schema
    >>> schema = adult_schema()
    >>> len(schema["categorical"]["occupation"]), schema["numeric"]["age"]
    (14, {'scale': 100.0})
    """
    return copy.deepcopy({"numeric": _ADULT_NUMERIC, "categorical": _ADULT_CATEGORIES})


def magic_schema() -> dict:
    """The public schema of the MAGIC gamma telescope data (ten numeric features).

    Returns
    -------
    dict
        ``{"numeric": {...}, "categorical": {}}`` (a fresh copy).
    """
    return copy.deepcopy({"numeric": _MAGIC_NUMERIC, "categorical": {}})
