"""Public schemas of the bundled data sets: what may be known without the data.

A schema lists, for each column, what its public documentation says: the
category lists of a categorical column, and for a numeric column a fixed
transform chosen from its documented units (never from its values). It feeds
:func:`skprivpred.preprocessing.public_preprocessor`, whose transformers read
nothing from the data, so they may sit outside a private estimator.

Schema format: ``{"numeric": {column: {"scale": s, "center": c, "log": bool,
"squash": bool, "clip": (low, high)}}, "categorical": {column: [category, ...]},
"missing": {column: [marker, ...]}}``; ``"missing"`` (optional) gives the values the
documentation uses for a missing value in a categorical column, which encode as none
of its categories (a service answers them, and refuses any other value outside the
list); a numeric column becomes ``clip(v, low, high)`` if ``clip``, then ``log1p`` if
``log``, then ``(v - center) / scale``, then ``tanh`` if ``squash``. Clipped or
squashed columns give the output a public norm bound
(:func:`skprivpred.preprocessing.row_norm_bound`).
"""

# Authors: The skprivpred developers
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
import math

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


# The documentation's marker of a missing value, and the columns that have one (the
# variables table of the UCI page; adult.names writes unknown values as "?").
_ADULT_MISSING: dict[str, list[str]] = {
    "workclass": ["?"],
    "occupation": ["?"],
    "native-country": ["?"],
}


# Numeric columns of Adult from their units: years, a census weight, a number of
# years of education (1 to 16), dollars, hours a week; each mapped to [0, 1]. The
# clip bounds are the values the map sends to 0 and 1 (``expm1(15)`` and ``expm1(12)``
# undo ``log1p(v) / 15`` and ``log1p(v) / 12``), chosen from the transform, not from
# the data: every value of the published files lies inside them (age at most 90,
# hours at most 99, capital gains at most the census top code 99,999), so they
# change no row, and they make the output's norm publicly bounded (sqrt(14)).
_ADULT_NUMERIC = {
    "age": {"scale": 100.0, "clip": (0.0, 100.0)},
    "fnlwgt": {"scale": 15.0, "log": True, "clip": (0.0, math.expm1(15.0))},
    "education-num": {"scale": 16.0, "clip": (0.0, 16.0)},
    "capital-gain": {"scale": 12.0, "log": True, "clip": (0.0, math.expm1(12.0))},
    "capital-loss": {"scale": 12.0, "log": True, "clip": (0.0, math.expm1(12.0))},
    "hours-per-week": {"scale": 100.0, "clip": (0.0, 100.0)},
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
    (``adult.names``). The missing value ``"?"`` of ``workclass``,
    ``occupation`` and ``native-country`` is declared under ``"missing"``: it
    is not a category, so it encodes as all zeros (and a service answers it).
    The numeric transforms come from the columns' units
    and map each column into ``[0, 1]`` (clipped at the values that map to 0
    and 1), so a row of ``public_preprocessor(adult_schema())`` has norm at
    most ``sqrt(14)`` (6 numbers and 8 one-hot blocks; see
    :func:`~skprivpred.preprocessing.row_norm_bound`).

    Returns
    -------
    dict
        ``{"numeric": {...}, "categorical": {...}, "missing": {...}}`` (a fresh
        copy).

    Examples
    --------
    >>> from skprivpred.datasets import adult_schema
    >>> schema = adult_schema()
    >>> len(schema["categorical"]["occupation"]), schema["numeric"]["age"]
    (14, {'scale': 100.0, 'clip': (0.0, 100.0)})
    >>> schema["missing"]["workclass"]
    ['?']
    """
    return copy.deepcopy(
        {"numeric": _ADULT_NUMERIC, "categorical": _ADULT_CATEGORIES, "missing": _ADULT_MISSING}
    )


def magic_schema() -> dict:
    """The public schema of the MAGIC gamma telescope data (ten numeric features).

    Returns
    -------
    dict
        ``{"numeric": {...}, "categorical": {}}`` (a fresh copy).
    """
    return copy.deepcopy({"numeric": _MAGIC_NUMERIC, "categorical": {}})
