"""A model card for a served private model: what it promises, what it costs, what is secret.

Built with :class:`skops.card.Card` (sections rendered to Markdown) from public
information only: the estimator's guarantee and public parameters, its
budget's terms and ledger kind, the library's version. Nothing fitted on the
rows appears (teachers, coefficients, votes, training statistics), and neither
does what is the same on neighbouring data sets but still sensitive: an
integer ``random_state`` (anyone who knows it can regenerate the noise) shows
as "seeded", ledger credentials are redacted, and a label set read from ``y``
is flagged as such without being listed.
"""

from __future__ import annotations

import math
import re
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from ..accounting._accountant import PrivacyAccountant
from ..accounting._ledger import redact
from ..utils._deprecation import DEPRECATED, deprecated_parameters
from ._model import budget_of, final_step, per_row_guarantee, releases_at_fit

__all__ = ["model_card"]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_NEIGHBOURING = {
    "replace-one": (
        "two training sets are neighbours when one row of one is replaced by any other row "
        "(the number of rows is public)"
    ),
    "add-remove": "two training sets are neighbours when one has one row more than the other",
}
_SECRET = (
    "The training rows and everything fitted on them are secret: the teachers or the model's "
    "coefficients, vote counts, exact scores and probabilities, and any statistic of the "
    "training data. They never leave the service: each answer is a fresh random release "
    "drawn after its cost is charged to the budget. The query noise is secret too (drawn "
    "from operating-system entropy in each process unless the estimator was seeded). The "
    "model file holds the teachers: protect it like the training data, and let no one else "
    "write it (whoever writes it chooses the answers and the budget)."
)
_SECRET_RELEASED = (
    "The training rows are secret, and so is everything computed from them before the "
    "release's noise was drawn (exact statistics, counts, scores). The fitted model is the "
    "release: fit drew it once, after its cost was charged to the budget, and every answer "
    "is computed from it, so answers are free post-processing and charge nothing. The "
    "model file holds that release: let no one else write it (whoever writes it chooses the "
    "answers)."
)


def _ledger_kind(url: str) -> str:
    if url.startswith("sqlite:///"):
        return "SQLite file (shared by the processes of one machine)"
    if url.startswith(("postgresql://", "postgres://")):
        return "PostgreSQL server (shared by processes on several machines)"
    return "process memory"


def _number(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:g}"


def _random_state(value: Any) -> str:
    if value is None:
        return "None (fresh operating-system entropy)"
    if isinstance(value, Integral) and not isinstance(value, bool):
        return "seeded (the seed is not shown: anyone who knows it can regenerate the noise)"
    return f"seeded (a {type(value).__name__}, for the fit only)"


#: Numeric sequences longer than this are summarised (a scaler's per-column constants).
_LONG = 8


def _numbers(value: Any) -> np.ndarray | None:
    """``value`` as a 1-D float array when it is a sequence of real numbers, else ``None``."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.dtype.kind not in "biuf":
            return None
        return value.astype(float)
    if isinstance(value, list | tuple) and all(
        isinstance(v, Real | np.number) and not isinstance(v, bool) for v in value
    ):
        return np.asarray(value, dtype=float)
    return None


def _compact(numbers: np.ndarray) -> str:
    """``30 values from 0.0009 to 2220 (17.55, 24.5, ..., 0.1313)``: a long constant in a line."""
    head = ", ".join(f"{v:.4g}" for v in numbers[:2])
    return (
        f"{numbers.size} values from {numbers.min():.4g} to {numbers.max():.4g} "
        f"({head}, ..., {numbers[-1]:.4g})"
    )


def _value(name: str, value: Any, depth: int = 0) -> str:
    """A public parameter's value in words; seeds masked, accountants referred to the budget.

    A numeric sequence of more than eight values (a scaler's per-column centres,
    scales or bounds) is shown by its length, range and ends, not value by value.
    """
    if name == "random_state" or name.endswith("__random_state"):
        return _random_state(value)
    numbers = _numbers(value)
    if numbers is not None and numbers.size > _LONG and np.all(np.isfinite(numbers)):
        return _compact(numbers)
    if isinstance(value, PrivacyAccountant):
        return "a PrivacyAccountant (see Budget)"
    if isinstance(value, BaseEstimator):
        return _estimator(value, depth + 1) if depth < 8 else f"{type(value).__name__}(...)"
    if isinstance(value, list | tuple) and len(value) <= 20:
        inner = ", ".join(_value(name, v, depth + 1) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, np.ndarray):
        if value.size <= 20:
            return str(value.tolist())
        return f"array of shape {value.shape}"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    return " ".join(_ADDRESS.sub("", repr(value)).split())


def _estimator(estimator: BaseEstimator, depth: int = 0) -> str:
    """``Class(param=value, ...)`` with the parameters that differ from their defaults."""
    import inspect

    signature = inspect.signature(type(estimator).__init__).parameters
    shown = []
    for key, value in estimator.get_params(deep=False).items():
        default = signature[key].default if key in signature else inspect.Parameter.empty
        try:
            same = default is not inspect.Parameter.empty and bool(default == value)
        except (TypeError, ValueError):
            same = False
        if (key == "random_state" and value is not None) or not same:
            shown.append(f"{key}={_value(key, value, depth)}")
    return f"{type(estimator).__name__}({', '.join(shown)})"


def _table(rows: list[tuple[str, str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| | |", "|---|---|"]
    lines += [f"| {cell(key)} | {cell(value)} |" for key, value in rows]
    return "\n".join(lines)


def _guarantee_section(final: Any, estimator: Any) -> str:
    guarantee = getattr(final, "privacy_guarantee_", None)
    if guarantee is None:
        return "The estimator states no privacy guarantee."
    relation = _NEIGHBOURING.get(guarantee.neighbouring, guarantee.neighbouring)
    lines = [
        f"{guarantee}.",
        "",
        f"In words: for {guarantee.unit}, the probability of any answer changes by at most a "
        f"factor of e^{_number(guarantee.epsilon)}"
        + (f" (plus {guarantee.delta:g})" if guarantee.delta else "")
        + f" when the training data change to a neighbouring data set, so that an answer says "
        f"almost nothing about {guarantee.protects}.",
        "",
        "",
    ]
    rows = [
        ("Neighbouring relation", f"{guarantee.neighbouring}: {relation}"),
        ("Protects", guarantee.protects),
        ("Unit", guarantee.unit),
        ("Epsilon", _number(guarantee.epsilon)),
        ("Delta", f"{guarantee.delta:g}"),
    ]
    if guarantee.rho is not None:
        rows.append(("zCDP rho", f"{guarantee.rho:g}"))
    rows.append(("Theorem", guarantee.theorem))
    try:
        epsilon, delta = per_row_guarantee(estimator)
        rows.append(
            (
                "Cost of one answer",
                f"epsilon={_number(epsilon)}, delta={delta:g} per answered row, charged to the "
                "budget before the answer is drawn",
            )
        )
    except ValueError:
        if releases_at_fit(estimator):
            rows.append(
                (
                    "Cost of one answer",
                    "nothing: answers are post-processing of the one release made by fit, "
                    "charged to the budget when the model was fitted",
                )
            )
        else:
            rows.append(("Cost of one answer", "as the guarantee's unit says"))
    for key in sorted(guarantee.details):
        rows.append((f"Public quantity: {key}", _value(key, guarantee.details[key])))
    return "\n".join(lines) + _table(rows)


def _budget_section(estimator: Any) -> str:
    try:
        budget = budget_of(estimator)
    except ValueError as exc:
        return str(exc)
    rows = [
        ("Budget name", budget.name),
        ("Epsilon cap", _number(budget.epsilon)),
        ("Delta cap", f"{budget.delta:g}"),
        ("Composition", budget.composition),
    ]
    if budget.delta_prime is not None:
        rows.append(("delta' (advanced composition)", f"{budget.delta_prime:g}"))
    if budget.n_queries is not None:
        rows.append(("Query rows at most", str(budget.n_queries)))
    rows += [
        ("Ledger kind", _ledger_kind(budget.ledger_url)),
        ("Ledger", redact(budget.ledger_url)),
    ]
    if releases_at_fit(estimator):
        text = (
            "The model's release was charged to this budget, in its ledger, once, when it was "
            "fitted (before its noise was drawn); answers charge nothing. What is spent now: "
            "`GET /budget` (`fit_releases`) or `GET /metrics`."
        )
    else:
        text = (
            "Every answer is charged to this budget, in its ledger, before it is drawn; when "
            "the budget cannot pay for a request, nothing is answered. What is spent now: "
            "`GET /budget` or `GET /metrics`."
        )
    return text + "\n\n" + _table(rows)


def _public_attribute(value: Any) -> str | None:
    if isinstance(value, str | bool | Real | np.generic):
        return _ADDRESS.sub("", repr(value.item() if isinstance(value, np.generic) else value))
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufUO" and value.size <= 50:
        return str(value.tolist())
    if isinstance(value, list | tuple) and len(value) <= 50:
        if all(isinstance(v, str | bool | Real) for v in value):
            return repr(value)
    return None


def _estimator_section(estimator: Any, final: Any) -> str:
    rows = []
    renamed = deprecated_parameters(type(estimator))  # old names, listed only if given
    for name, value in estimator.get_params(deep=False).items():
        if name in renamed and isinstance(value, str) and value == DEPRECATED:
            continue
        rows.append((f"`{name}`", _value(name, value)))
    text = (
        f"`{type(estimator).__module__}.{type(estimator).__name__}`"
        + (f", answering through `{type(final).__name__}`" if final is not estimator else "")
        + ".\n\nPublic parameters (set by whoever fitted the model, never read from the data):"
        "\n\n" + _table(rows)
    )
    fitted = []
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        fitted.append(("Input columns", ", ".join(str(n) for n in names)))
    n_features = getattr(estimator, "n_features_in_", None)
    if n_features is not None:
        fitted.append(("Number of input columns", str(n_features)))
    params = final.get_params(deep=False) if hasattr(final, "get_params") else {}
    if hasattr(final, "classes_"):
        if "classes" in params and params["classes"] is None:
            fitted.append(
                (
                    "Label set",
                    "READ FROM THE TRAINING LABELS y (classes=None): which labels occur is "
                    "information about the training data, so they are not listed here; pass "
                    "the public label set as `classes` when fitting",
                )
            )
        elif "classes" in params:
            fitted.append(("Label set (public, from `classes`)", _value("classes", final.classes_)))
    skip = {"classes_", "n_features_in_", "feature_names_in_", "privacy_guarantee_"}
    for name in sorted(vars(final)):
        if not name.endswith("_") or name.startswith("_") or name in skip:
            continue
        shown = _public_attribute(getattr(final, name))
        if shown is not None:
            fitted.append((f"`{name}`", shown))
    if fitted:
        text += "\n\nPublic fitted attributes (data-independent):\n\n" + _table(fitted)
    return text


def model_card(model: Any) -> str:
    """A Markdown model card of a fitted private model, from public information only.

    It states the guarantee in words (``privacy_guarantee_``, the neighbouring
    relation, what one answer costs), the budget (terms, ledger kind, address
    with credentials redacted), the estimator and its public parameters, the
    library's version, and what is secret. It never shows what is fitted on
    the rows; an integer ``random_state`` appears as "seeded", and a label
    set read from ``y`` is flagged, not listed.

    Parameters
    ----------
    model : estimator
        A fitted skprivpred estimator, or a ``Pipeline`` ending in one.

    Returns
    -------
    str
        Markdown.

    Examples
    --------
    >>> import numpy as np
    >>> from skprivpred import SubsampleAggregateClassifier
    >>> from skprivpred.serving import model_card
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = SubsampleAggregateClassifier(n_teachers=4, classes=[0, 1]).fit(X, y)
    >>> print(model_card(clf).splitlines()[0])
    # Model card: SubsampleAggregateClassifier
    """
    from sklearn.utils.validation import check_is_fitted
    from skops.card import Card

    import skprivpred

    check_is_fitted(model)
    final = final_step(model)
    import sklearn

    title = f"Model card: {type(final).__name__}"
    served = f"Served by skprivpred {skprivpred.__version__} (scikit-learn {sklearn.__version__})."
    released = releases_at_fit(model)
    if released:
        what = (
            "This model is itself a differentially private release, made once by fit and "
            "charged to the budget then; its answers are free post-processing of the release "
            "and charge nothing. "
        )
    else:
        what = (
            "Every answer of this model is a differentially private release, charged to the "
            "budget before it is drawn; the model itself is never released. "
        )
    card = Card(model=None, template=None)
    card.add(
        **{
            title: what + served,
            f"{title}/Privacy guarantee": _guarantee_section(final, model),
            f"{title}/Budget": _budget_section(model),
            f"{title}/Estimator": _estimator_section(model, final),
            f"{title}/What is secret": _SECRET_RELEASED if released else _SECRET,
        }
    )
    return card.render().lstrip("\n")
