"""What a private estimator promises: :class:`GuaranteeUnit` and the immutable
:class:`PrivacyGuarantee`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..exceptions import (
    InvalidParameterError,
)

__all__ = ["PER_QUERY_ROW", "GuaranteeUnit", "PrivacyGuarantee"]


class GuaranteeUnit(str, Enum):
    """What one ``(epsilon, delta)`` of a :class:`PrivacyGuarantee` covers.

    The one vocabulary of :attr:`PrivacyGuarantee.unit`: code that needs to know
    whether a guarantee is per answered row (a per-client quota, say) compares
    with these members, never with free text. Each member is also its text.

    Attributes
    ----------
    QUERY_ROW : str
        ``"each answered query row"``: every row passed to ``predict``,
        ``predict_proba``, ``decision_function`` or ``score`` is one release at
        this guarantee, charged before it is answered.
    ALL_ANSWERS : str
        ``"all answers, under one total budget"``: the whole transcript of
        answers (a horizon of ``n_queries`` rows, or an unbounded stream) is
        covered together.
    RELEASE : str
        ``"one release made by fit"``: ``fit`` releases one object (a model, a
        hypothesis, a selected index); its predictions are free
        post-processing.

    Examples
    --------
    >>> from skprivpred.accounting import GuaranteeUnit
    >>> GuaranteeUnit("each answered query row") is GuaranteeUnit.QUERY_ROW
    True
    """

    QUERY_ROW = "each answered query row"
    ALL_ANSWERS = "all answers, under one total budget"
    RELEASE = "one release made by fit"

    def __str__(self) -> str:
        return str(self.value)


#: The ``unit`` of a guarantee that holds for every answered query row.
PER_QUERY_ROW = GuaranteeUnit.QUERY_ROW


@dataclass(frozen=True)
class PrivacyGuarantee:
    """What a fitted estimator promises: the type of every ``privacy_guarantee_``.

    Every fitted skprivpred estimator states its guarantee in this one form,
    with only public, data-independent quantities. ``str`` gives a sentence.

    Parameters
    ----------
    epsilon : float
        The epsilon of the guarantee, per :attr:`unit`.
    delta : float
        The delta of the guarantee, per :attr:`unit` (0 for pure DP).
    unit : GuaranteeUnit or str
        What one ``(epsilon, delta)`` covers, one of :class:`GuaranteeUnit`
        (its member or its text, for example ``"each answered query row"``);
        stored as the member.
    theorem : str
        The paper and result the guarantee rests on, for example
        ``"Dwork & Feldman (2018), Theorem 4.1"``.
    neighbouring : str, default="replace-one"
        The neighbouring relation: ``"replace-one"`` (one training row
        replaced by any other; the number of rows is public) or
        ``"add-remove"``.
    protects : str, default="each training row"
        Whose privacy is protected (the everlasting predictors also protect
        every query).
    rho : float or None, default=None
        The zero-concentrated DP parameter per :attr:`unit`, where the
        mechanism has one (Bun & Steinke 2016).
    details : dict, default={}
        Further public quantities that the guarantee depends on (noise
        scales, numbers of teachers, horizons); never a function of the data.
    scope : str or None, default=None
        What the unit is for this estimator, in words (for example ``"the
        selected index (best_params_), once per fit"``); free text, for
        people, never compared by code.

    Examples
    --------
    >>> from skprivpred import PrivacyGuarantee
    >>> guarantee = PrivacyGuarantee(1.0, 0.0, unit="each answered query row",
    ...                              theorem="Dwork & Feldman (2018), Theorem 4.1")
    >>> print(guarantee)  # doctest: +NORMALIZE_WHITESPACE
    1-differential privacy of each training row for each answered query row
    (replace-one neighbouring data sets; Dwork & Feldman (2018), Theorem 4.1)
    """

    epsilon: float
    delta: float
    unit: GuaranteeUnit
    theorem: str
    neighbouring: str = "replace-one"
    protects: str = "each training row"
    rho: float | None = None
    details: dict = field(default_factory=dict, hash=False)
    scope: str | None = None

    def __post_init__(self) -> None:
        try:
            unit = GuaranteeUnit(self.unit)
        except ValueError:
            allowed = ", ".join(repr(member.value) for member in GuaranteeUnit)
            raise InvalidParameterError(
                f"unit must be a GuaranteeUnit ({allowed}), got {self.unit!r}; describe what "
                "the unit is for this estimator in `scope`."
            ) from None
        object.__setattr__(self, "unit", unit)

    def __setstate__(self, state: dict) -> None:
        # A copy read back from a file (skops keeps a str enum as its text) is checked
        # and converted like a new guarantee, so ``unit`` is always a GuaranteeUnit.
        for key, value in state.items():
            object.__setattr__(self, key, value)
        self.__post_init__()

    def __str__(self) -> str:
        if self.delta == 0:
            pair = f"{self.epsilon:g}-differential privacy"
        else:
            pair = f"({self.epsilon:g}, {self.delta:g})-differential privacy"
        if self.rho is not None:
            pair += f" ({self.rho:g}-zCDP)"
        scope = f" ({self.scope})" if self.scope else ""
        return (
            f"{pair} of {self.protects} for {self.unit}{scope} "
            f"({self.neighbouring} neighbouring data sets; {self.theorem})"
        )
