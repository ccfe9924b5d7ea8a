"""Private density estimation.

- :class:`DPValidatedHistogramDensity`: a histogram whose bin width is chosen privately
  by stability (Chaudhuri & Vinterbo, NeurIPS 2013), released once.
"""

from ._histogram import DPValidatedHistogramDensity

__all__ = [
    "DPValidatedHistogramDensity",
]
