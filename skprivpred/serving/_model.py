"""Saving a fitted private estimator for a service, and finding its budget.

A model file is a :mod:`skops.io` archive, never a pickle: reading it constructs
only trusted types (:mod:`._trust`) and runs no code from the file. It is
written with mode 0600 and read only if no other user could have read, written
or replaced it.
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings
from collections.abc import Iterable
from typing import Any

from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..accounting._accountant import PrivacyAccountant, ledger_addresses_without_passwords
from ..accounting._guarantee import GuaranteeUnit, PrivacyGuarantee
from ..utils._private_dirs import foreign_control
from ._trust import _objects, check_svms, check_trees, default_trusted_types, process_local

__all__ = ["budget_of", "load_model", "per_row_guarantee", "releases_at_fit", "save_model"]

_FORMAT = "skprivpred-model"
_VERSION = 2  # 1 was a joblib pickle, no longer read
_ZIP_MAGIC = b"PK\x03\x04"


def budget_of(estimator: BaseEstimator) -> PrivacyAccountant:
    """The one accountant that every answer of ``estimator`` charges.

    Looks through the parameters (a ``Pipeline``'s steps included) and the
    accountant that a fitted estimator with a query horizon keeps for it.

    Raises
    ------
    ValueError
        If there is no accountant, or more than one.
    """
    found: dict[int, PrivacyAccountant] = {}
    for value in estimator.get_params(deep=True).values():
        if isinstance(value, PrivacyAccountant):
            found[id(value)] = value
    for step in _steps(estimator):
        horizon = step.__dict__.get("_horizon_accountant")
        if isinstance(horizon, PrivacyAccountant):
            found[id(horizon)] = horizon
    if not found:
        raise ValueError(
            f"{type(estimator).__name__} has no PrivacyAccountant: a served model needs one, "
            "with a file or server ledger, since its budget is what protects the training "
            "data (for example accountant=PrivacyAccountant(epsilon=..., ledger='budget.db'))."
        )
    if len(found) > 1:
        raise ValueError(
            f"{type(estimator).__name__} charges {len(found)} different accountants; a served "
            "model must charge exactly one budget."
        )
    return next(iter(found.values()))


def final_step(estimator: BaseEstimator) -> Any:
    """The estimator, or a pipeline's last step: what answers and states the guarantee."""
    return estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator


def releases_at_fit(estimator: BaseEstimator) -> bool:
    """Whether the model is itself the release: ``fit`` released it once, and answers are free.

    True when the guarantee of the estimator (a pipeline's last step) covers
    one release made by ``fit``
    (:attr:`~skprivpred.accounting.GuaranteeUnit.RELEASE`): the fitted model
    is that release, its budget was charged for it then, and every answer is
    post-processing of it, charged nothing.
    """
    guarantee = getattr(final_step(estimator), "privacy_guarantee_", None)
    return isinstance(guarantee, PrivacyGuarantee) and guarantee.unit is GuaranteeUnit.RELEASE


def _steps(estimator: BaseEstimator) -> list:
    steps = [estimator]
    for _, step in getattr(estimator, "steps", []):
        if step is not None and step != "passthrough":
            steps.append(step)
    return steps


def per_row_guarantee(estimator: BaseEstimator) -> tuple[float, float]:
    """The ``(epsilon, delta)`` that one answered row costs (for per-client quotas).

    Raises
    ------
    ValueError
        If the estimator's guarantee is not per answered row
        (:attr:`~skprivpred.accounting.GuaranteeUnit.QUERY_ROW`) and it states no
        ``epsilon_per_query_``: its answers are not charged row by row.
    """
    final = _steps(estimator)[-1]
    per_query = getattr(final, "epsilon_per_query_", None)
    if per_query is not None:
        return float(per_query), 0.0
    guarantee = getattr(final, "privacy_guarantee_", None)
    if isinstance(guarantee, PrivacyGuarantee) and guarantee.unit is GuaranteeUnit.QUERY_ROW:
        return guarantee.epsilon, guarantee.delta
    unit = "none" if not isinstance(guarantee, PrivacyGuarantee) else repr(guarantee.unit.value)
    raise ValueError(
        f"{type(final).__name__} states no per-row guarantee (its guarantee's unit is {unit}), "
        "so a per-client quota cannot be charged for its answers."
    )


def save_model(estimator: BaseEstimator, path: str | os.PathLike) -> None:
    """Write a fitted private estimator to ``path`` for ``skprivpred.serving``.

    The file is a :mod:`skops.io` archive (not a pickle), created with mode
    0600 and moved into place in one step. It holds the teachers: protect it
    like the training data, and let no other user write it (whoever writes it
    chooses the answers and the budget they are charged to;
    :func:`load_model` refuses such a file). The accountant is saved by
    address, so every process that loads the file charges the same ledger.

    No password is ever written to the file: a PostgreSQL ledger's address is
    saved without the password of its user information and without its
    ``password`` and ``sslpassword`` parameters. The process that loads the
    file supplies the password the way libpq finds one: the password file
    named by ``PGPASSFILE`` (or by ``passfile=`` in the address), else
    ``~/.pgpass`` (mode 0600), else the ``PGPASSWORD`` environment variable.

    Parameters
    ----------
    estimator : estimator
        A fitted skprivpred estimator (or a ``Pipeline`` ending in one) with one
        :class:`~skprivpred.PrivacyAccountant` whose ledger is a file or a
        server: not ``":memory:"``, and not the default ledger, a temporary
        file deleted when the process that created it exits. Not an
        everlasting predictor (:class:`~skprivpred.PrivateEverlastingClassifier`,
        :class:`~skprivpred.GenericBBLClassifier`), whose phase state lives in
        the process that fitted it. Not a
        :class:`~skprivpred.SubsampleAggregateClassifier` with
        ``on_exhausted="student"`` whose student is not fitted yet: call
        ``fit_student(X_public)`` first (the pairs it would learn from at the
        horizon live in the process that answered them).
    path : str or os.PathLike
        Where to write (conventionally ``model.skops``).

    Raises
    ------
    ValueError
        If the estimator has no accountant, its ledger would not outlive
        this process, or its privacy state lives in the process.
    TypeError
        If the estimator holds an object that skops cannot write.
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.

    Warns
    -----
    UserWarning
        If the file holds types that :func:`load_model` does not trust by
        default (a custom teacher, a function used as an expert): the message
        names them, to be passed as ``trusted``.
    """
    check_is_fitted(estimator)
    budget = budget_of(estimator)
    if not budget.durable:
        where = "':memory:'" if budget.ledger_url == ":memory:" else "the default temporary file"
        raise ValueError(
            f"the estimator's PrivacyAccountant keeps its spending in {where}, which does not "
            "outlive this process: a service loading the model could not charge it. Fit with "
            "accountant=PrivacyAccountant(..., ledger='path/to/budget.db') or a "
            "'postgresql://' ledger."
        )
    if not math.isfinite(budget.epsilon):
        raise ValueError(
            "the estimator's PrivacyAccountant has no epsilon cap (epsilon=inf): a served model "
            "needs a total budget."
        )
    local = process_local(estimator)
    if local is not None:
        raise ValueError(_process_local_message(local))
    pending = pending_student(estimator)
    if pending is not None:
        raise ValueError(_pending_student_message(pending))
    sio = _skops_io()
    try:
        with ledger_addresses_without_passwords():
            data = sio.dumps(
                {
                    "format": _FORMAT,
                    "version": _VERSION,
                    "versions": _saving_versions(),
                    "estimator": estimator,
                }
            )
    except TypeError as exc:  # skops's UnsupportedTypeException says which type
        raise TypeError(f"save_model cannot write this estimator: {exc}") from None
    extra = sorted(set(sio.get_untrusted_types(data=data)) - set(default_trusted_types()))
    if extra:
        warnings.warn(
            f"the model file holds types that load_model does not trust by default: {extra}. "
            "Load it with load_model(path, trusted=[...]) or python -m skprivpred.serving "
            "--trust TYPE, naming only types you have reviewed.",
            UserWarning,
            stacklevel=2,
        )
    _write_private(os.fspath(path), data)


def pending_student(model: Any) -> Any:
    """The first part of ``model`` that would hand off to a student not fitted yet, or None.

    A :class:`~skprivpred.SubsampleAggregateClassifier` with
    ``on_exhausted="student"`` fits its student, at the horizon, on the
    (query, answer) pairs it released: those live in the Python process that
    answered them, while the horizon is counted in the ledger. Loaded by several
    workers, or again after a restart, each copy would hold only its own pairs
    (or none, and refuse every request once the ledger's horizon is spent).
    """
    for obj in _objects(model):
        if (
            getattr(obj, "on_exhausted", None) == "student"
            and getattr(obj, "mode_", "student") != "student"
        ):
            return obj
    return None


def _pending_student_message(part: Any) -> str:
    return (
        f"{type(part).__name__} with on_exhausted='student' cannot be saved for a service "
        "before its student is fitted: the student learns from the (query, answer) pairs "
        "released by the process that answered them, which other workers and a restarted "
        "service do not have, while the spent horizon stays in the ledger. Fit the student "
        "first, on public rows (estimator.fit_student(X_public): charged like any query, "
        "within the horizon), then save the model: every worker then answers from that "
        "one student, free."
    )


def _process_local_message(part: Any) -> str:
    return (
        f"{type(part).__name__} cannot be saved for a service: its phase state (the current "
        "phase and the answers counted in it) lives in this Python process, not in the "
        "ledger, so two processes loading the file would each run their own phases and "
        "answer more queries per phase than its guarantee allows. Answer its queries from "
        "the one process that fitted it."
    )


def _write_private(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600, replacing any file there in one step."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".skprivpred-model-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:  # mkstemp: O_EXCL, mode 0600
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.remove(temporary)
        except OSError:
            pass
        raise


def load_model(path: str | os.PathLike, *, trusted: Iterable[str | type] | None = None) -> Any:
    """Read a model written by :func:`save_model`, constructing only trusted types.

    The file is read with :mod:`skops.io`: no code from the file runs, and a
    type outside the trusted ones is refused by name. Pickles (joblib files,
    the format of skprivpred before 0.1) are refused without being read.

    Parameters
    ----------
    path : str or os.PathLike
        The file. On POSIX it must be owned by this user (or root) and
        readable and writable by no one else (mode 0600), and the directories
        above it must be owned by this user or root and writable by no one
        else (unless sticky and owned by root, as ``/tmp``): whoever can write
        the file chooses the answers and the budget they are charged to, and
        whoever can read it reads the teachers.
    trusted : iterable of str or type, default=None
        Types to trust besides the defaults (scikit-learn's and skprivpred's
        estimators and the state they hold), as fully qualified names
        (``"mypackage.MyTeacher"``) or the types themselves. Name only types
        you have reviewed: a trusted type is constructed from the file's data.

    Returns
    -------
    estimator
        The fitted estimator; its accountant charges the ledger it was saved with.

    Raises
    ------
    ValueError
        If the file is not a model written by :func:`save_model` (a pickle, a
        file of another kind, a damaged archive), holds an untrusted type, a
        malformed decision tree, inconsistent libsvm arrays, an everlasting
        predictor or a student hand-off whose student is not fitted, or could
        have been read or written by another user. The message is one line.
    """
    name = os.fspath(path)
    # O_NONBLOCK: a FIFO in the file's place must not block the command.
    descriptor = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        # The checks look at the file that was opened, not at whatever the name means later.
        _check_private(name, os.fstat(handle.fileno()))
        data = handle.read()
    if not data.startswith(_ZIP_MAGIC):
        raise ValueError(f"{name!r} is not a model file written by save_model{_kind(data)}.")
    extra = _type_names(trusted)
    allowed = sorted({*default_trusted_types(), *extra})
    sio = _skops_io()
    try:
        untrusted = sorted(set(sio.get_untrusted_types(data=data)) - set(allowed))
    except Exception as exc:  # noqa: BLE001 - a damaged or foreign archive, in one line
        raise ValueError(
            f"{name!r} is not a model file written by save_model (unreadable archive: "
            f"{type(exc).__name__})."
        ) from None
    if untrusted:
        raise ValueError(
            f"{name!r} holds types that are not trusted: {', '.join(untrusted)}. Trust a type "
            "only if you have reviewed it and the file's origin: load_model(path, trusted=[...]) "
            "or --trust TYPE."
        )
    try:
        payload = sio.loads(data, trusted=allowed)
    except Exception as exc:  # noqa: BLE001 - a crafted state, in one line
        raise ValueError(
            f"{name!r} could not be read as a model file ({type(exc).__name__})."
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise ValueError(f"{name!r} was not written by skprivpred.serving.save_model.")
    if payload.get("version") != _VERSION:
        raise ValueError(
            f"{name!r} has model format version {payload.get('version')!r}; this "
            f"skprivpred reads version {_VERSION}."
        )
    estimator = payload.get("estimator")
    try:
        check_trees(estimator)
        check_svms(estimator)
    except ValueError as exc:
        raise ValueError(f"{name!r} is refused: {exc}.") from None
    local = process_local(estimator)
    if local is not None:
        raise ValueError(f"{name!r} is refused: {_process_local_message(local)}")
    pending = pending_student(estimator)
    if pending is not None:
        raise ValueError(f"{name!r} is refused: {_pending_student_message(pending)}")
    _check_versions(name, payload.get("versions"))
    return estimator


def _saving_versions() -> dict[str, str]:
    """The versions a model file records: whoever loads it must run the same ones."""
    import sklearn

    from .. import __version__

    return {"scikit-learn": sklearn.__version__, "skprivpred": __version__}


def _check_versions(name: str, recorded: Any) -> None:
    """Refuse a model file saved under another scikit-learn or skprivpred version.

    A fitted estimator's attributes (scikit-learn's and skprivpred's private state)
    change between versions without notice: the same file could answer with another
    law, or not at all. Refusing names both versions, so the operator knows which
    one to install (or to refit and save under).
    """
    here = _saving_versions()
    if not isinstance(recorded, dict) or not all(
        isinstance(recorded.get(package), str) for package in here
    ):
        raise ValueError(
            f"{name!r} does not record the scikit-learn and skprivpred versions that saved it "
            f"(files written before skprivpred 0.3.0 do not); this is scikit-learn "
            f"{here['scikit-learn']} with skprivpred {here['skprivpred']}: fit and save the "
            "model again with these versions."
        )
    saved = {package: recorded[package] for package in here}
    if saved != here:
        raise ValueError(
            f"{name!r} was saved with scikit-learn {saved['scikit-learn']} and skprivpred "
            f"{saved['skprivpred']}, but this is scikit-learn {here['scikit-learn']} with "
            f"skprivpred {here['skprivpred']}: a model file is served only by the versions "
            "that saved it (a fitted estimator's state changes between versions). Serve it "
            f"with scikit-learn=={saved['scikit-learn']} and skprivpred=={saved['skprivpred']} "
            "installed, or fit and save it again with these versions."
        )


def _skops_io():
    try:
        import skops.io
    except ImportError:
        raise ImportError(
            "model files are read and written with skops, a dependency of skprivpred: "
            'pip install "skprivpred[serve]" (or, from a checkout, pip install -e ".[serve]").'
        ) from None
    return skops.io


def _type_names(trusted: Iterable[str | type] | None) -> list[str]:
    if trusted is None:
        return []
    if isinstance(trusted, bool | str) or not isinstance(trusted, Iterable):
        raise TypeError(
            "trusted must be a list of type names or types (never True: trusting every type "
            f"would let the file run code), got {trusted!r}."
        )
    names = []
    for item in trusted:
        if isinstance(item, type):
            names.append(f"{item.__module__}.{item.__qualname__}")
        elif isinstance(item, str) and item:
            names.append(item)
        else:
            raise TypeError(f"trusted holds {item!r}; each entry is a type or its full name.")
    return names


#: First bytes of a pickle (protocol 2+) and of joblib's compressed formats: zlib at every
#: level, gzip, bz2, xz and lzma.
_PICKLE_SIGNATURES = (
    b"\x80",
    b"x\x01",
    b"x^",
    b"x\x9c",
    b"x\xda",
    b"\x1f\x8b",
    b"BZh",
    b"\xfd7zXZ",
    b"]\x00\x00",
)


def _looks_pickled(data: bytes) -> bool:
    return data.startswith(_PICKLE_SIGNATURES)


def _kind(data: bytes) -> str:
    """What a file that is not a skops archive looks like, for the error message."""
    if _looks_pickled(data):
        return (
            " (it looks like a pickle or joblib file, which could run code when read: refused "
            'unread. To re-save a model file you wrote yourself and trust: python -c "import '
            "joblib; from skprivpred.serving import save_model; save_model(joblib.load("
            "'model.joblib')['estimator'], 'model.skops')\")"
        )
    if not data:
        return " (it is empty)"
    return " (it is not a skops archive)"


def _check_private(path: str, info: os.stat_result) -> None:
    """Refuse a model file that another user could have read, written or replaced.

    ``info`` is the status of the opened file; the directories above it must
    not let another user replace it either (:mod:`skprivpred.utils._private_dirs`).
    """
    problem = foreign_control(path, "the model file", info=info, secret=True, allow_link=True)
    if problem is not None:
        raise ValueError(
            f"{path!r} is refused: {problem}. A model file holds the teachers, and whoever "
            "can write it chooses the answers."
        )
