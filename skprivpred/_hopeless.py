"""The warning that public quantities alone make learning hopeless (shared by the estimators).

Some parameter choices guarantee, before any row is read, that the noise a fit
or an answer carries is at least as large as anything the model can express:
every answer is then noise. Whether that happens depends only on public
quantities (``epsilon``, the number of training rows, the number of columns, the
public bounds and the hyper-parameters), so warning about it reads no row and
fires identically on every data set of the same size. The estimators that can
decide it (the stable linear models, :class:`~skprivpred.DPValidatedLogisticRegression`)
warn through :func:`warn_if_noise_dominates`, with one wording.
"""

from __future__ import annotations

from ._warnings import warn_user

__all__ = ["warn_if_noise_dominates"]


def warn_if_noise_dominates(
    name: str,
    *,
    noise: float,
    reach: float,
    what: str,
    detail: str,
    public: str,
    remedy: str,
) -> bool:
    """Emit a ``UserWarning`` (at the user's line, once per site) when ``noise >= reach``.

    Parameters
    ----------
    name : str
        The estimator's class name.
    noise, reach : float
        The noise scale and the largest signal any model can reach, both
        computed from public quantities only and in the same units.
    what : str
        What is noisy (``"answer"``, ``"release coefficients"``).
    detail : str
        One sentence that states both figures and where they hold.
    public : str
        The public quantities the decision used.
    remedy : str
        What the user can change.
    """
    if noise < reach:
        return False
    warn_user(
        f"{name} will {what} with noise at least as large as any score: {detail} This "
        f"follows from public quantities only ({public}), not from the data: {remedy}.",
        UserWarning,
    )
    return True
