"""Private validation by stability (Chaudhuri & Vinterbo, NeurIPS 2013): what the
validated estimators share (the split, the validation score, the private selection).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from .accounting._accountant import PrivacyAccountant
from .exceptions import InvalidParameterError
from .mechanisms._closed_forms import (
    exponential_mechanism_proba,
    noisy_max_proba,
    sample_categorical,
)
from .utils._param_validation import (
    Interval,
    StrOptions,
)

__all__ = ["validation_score"]


# The two perturbations of DPValidatedLogisticRegression's training (``perturbation``).
_PERTURBATIONS = [StrOptions({"objective", "output"})]


# Validation scores q(w, V) = -mean g(w; x, y): name -> (sup g, sup_x,y g(0; x, y)).
# Every g here is 1-Lipschitz in w for ||x|| <= 1 (Chaudhuri & Vinterbo 2013, Theorem 4).
_SCORES = {"ramp": (1.0, 1.0), "hinge": (math.inf, 1.0), "logistic": (math.inf, math.log(2.0))}

_POSITIVE = Interval(Real, 0, None, closed="neither")
_FRACTION = Interval(Real, 0, 1, closed="neither")
_COUNT = Interval(Integral, 1, None, closed="left")

# Constraints of both validated estimators (a budget split between training and selection).
_VALIDATED_CONSTRAINTS: dict = {
    "epsilon": [_POSITIVE],
    "epsilon_split": [_FRACTION],
    "validation_size": [_FRACTION],
    "accountant": [PrivacyAccountant, None],
    "random_state": ["random_state"],
}


def validation_score(w: np.ndarray, X: np.ndarray, y: np.ndarray, score: str = "ramp") -> float:
    """``q(w, V) = -mean g(w; x, y)``: ramp ``min(1, max(0, 1 - y w.x))``, hinge or logistic."""
    margin = y * (X @ w)
    if score == "ramp":
        losses = np.clip(1.0 - margin, 0.0, 1.0)
    elif score == "hinge":
        losses = np.maximum(0.0, 1.0 - margin)
    else:
        losses = np.logaddexp(0.0, -margin)
    return -float(np.mean(losses))


def _positive_grid(values, name: str, *, integer: bool = False) -> np.ndarray:
    """A public grid as a non-empty 1-D float array of finite values > 0 (integers if asked)."""
    try:
        grid = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        grid = np.empty(0)
    if (
        grid.ndim != 1
        or grid.size < 1
        or not np.all(np.isfinite(grid) & (grid > 0))
        or (integer and not np.all(grid == np.round(grid)))
    ):
        kind = "integers >= 1" if integer else "finite numbers > 0"
        raise InvalidParameterError(
            f"{name} must be a non-empty 1-D sequence of {kind}, got {values!r}."
        )
    return grid


def _split(n_rows: int, validation_size: float, rng: np.random.Generator):
    """Disjoint (train, validation) index sets from a data-independent permutation."""
    m = int(round(validation_size * n_rows))
    if m < 1 or n_rows - m < 1:
        raise InvalidParameterError(
            f"validation_size={validation_size!r} on n_samples = {n_rows} leaves an empty "
            "training or validation part; both need at least one row."
        )
    perm = rng.permutation(n_rows)
    return perm[m:], perm[:m]


def _select(scores, epsilon, sensitivity, selection, rng) -> int:
    """The selected index, drawn from the exact law of the chosen selection rule.

    ``"noisy_max"``: report-noisy-max (Chaudhuri & Vinterbo 2013, Algorithm 1);
    ``"exponential"``: the exponential mechanism (McSherry & Talwar 2007).
    """
    law_of = exponential_mechanism_proba if selection == "exponential" else noisy_max_proba
    law = law_of(scores, epsilon, sensitivity)
    return int(sample_categorical(law[None, :], rng)[0])
