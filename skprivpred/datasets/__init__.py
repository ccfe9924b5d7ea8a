"""Loaders for the data sets used in the examples and benchmarks.

The raw files are downloaded once into a local cache folder (see
:func:`get_data_home`) and verified against their SHA-256 checksum each time
they are read.
"""

# Authors: The skprivpred developers
# SPDX-License-Identifier: BSD-3-Clause

from ._fetch import clear_data_home, get_data_home
from ._loaders import load_adult, load_magic
from ._schema import adult_schema, magic_schema

__all__ = [
    "adult_schema",
    "clear_data_home",
    "get_data_home",
    "load_adult",
    "load_magic",
    "magic_schema",
]
