"""Teachers in isolation: what a teacher is handed, and what it can change.

The privacy argument of every teacher-based estimator (Dwork & Feldman (2018),
Section 2; Naor et al. (2023)) is that replacing one training row changes one
teacher's output and nothing else. A teacher is user code, so this module keeps
everything a teacher could reach from another teacher, or from the caller, out
of its hands:

- **Rows.** :func:`freeze_rows` turns a numeric array into one read-only copy
  per query batch whose *owning* buffer is an immutable ``bytes`` object, so no
  code can make it writeable again (``flags.writeable = True`` is refused);
  :func:`handed_rows` gives a teacher, at every call, an array object of its
  own: a fresh view of such a frozen array (its buffer cannot be written, and
  setting its ``shape``, ``strides`` or ``dtype`` changes that view alone), and
  any other input (a DataFrame, a sparse matrix, an object array) as a deep
  copy of its own. A copy-on-write shallow copy of a DataFrame would not do:
  scikit-learn may set its numpy buffer writeable and write through it.
- **Warnings.** ``warnings.catch_warnings`` changes the process-wide filters, so
  every section of the library that changes them holds :data:`WARNINGS_LOCK`;
  a warning that *another* thread raises during such a section is captured too.
- **Process-wide state.** :func:`teacher_call` runs one teacher's fit or answer
  with its warnings captured, under a fixed floating-point error state, and
  restores numpy's error state, scikit-learn's configuration and numpy's and
  Python's global random states afterwards (the whole state: numpy's key,
  position and cached Gaussian), so that a teacher that changes them does not
  change what the next teacher computes. The state a teacher is restored to is
  a :class:`ProcessState` taken while holding :data:`WARNINGS_LOCK`, the lock
  every teacher runs under (:func:`teacher_run` for a run of teachers): a
  snapshot taken outside it could hold what another thread's teacher was
  changing at that moment.

The one boundary
----------------
Every call of user code on *protected* rows goes through :func:`call_user_code`
(and :func:`call_user_code_by_row`, which cuts a batch into rows and calls it),
and nothing else in the library calls user code on such rows. Protected are the
training rows, everywhere (and the queries and their answers of the everlasting
predictors). User code is anything the user passes: estimators fitted on a
teacher's block, hypotheses and experts, callables, ``basis=`` transformers,
the members of a hypothesis class. Per *protected unit* (one row for labels,
votes and features; one teacher's block for a fit or an ERM, which the proof
lets depend on its own whole block), the boundary:

- gives the code a **copy of its own**: the code is pickled once per boundary
  call with ``cloudpickle`` (:func:`user_code`; closures and lambdas by value,
  so a closure cell, a default argument or an attribute written by one unit is
  never seen by another), and unpickled for every unit (only code objects and
  modules, immutable or shared by reference anyway, are not rebuilt). Code that
  cannot be pickled is refused with an
  :class:`~skprivpred.exceptions.InvalidParameterError` before anything is read
  or charged;
- hands the unit as **an object of its own** (rows: :func:`freeze_rows`, then
  :func:`handed_rows` at every call; a teacher's training block: a writeable
  copy of its own at every fit): writing into it, or into its metadata,
  changes neither the caller's rows nor what the next code or unit sees;
- runs the code as :func:`teacher_call` does (the teachers' lock held for the
  run, warnings captured and dropped, every floating-point condition ignored;
  the warning filters, numpy's error state, scikit-learn's configuration and
  numpy's and Python's global random states set back after every unit);
- **validates the output** (the caller's ``check``: allowed set, shape,
  finiteness) inside the same guard, and gives the unit a **fixed public
  fallback** whenever the code raises (any ``Exception``) or its output fails
  the check. Whether a unit gets its fallback depends on that unit alone;
- evaluates **identical rows once** (:func:`call_user_code_by_row`): rows equal
  byte for byte (numeric arrays), or whose pickled values are equal (object
  arrays, DataFrames, sparse rows), share one evaluation. Two rows that
  differ in any bit (``0.0`` and ``-0.0``) are evaluated apart; each one-row
  unit is the same object whichever occurrence it came from (a DataFrame row
  is handed with the index ``[0]``).

During the call :func:`protected_units_in_call` returns 1, and 0 outside.

**Threat model.** The boundary isolates what a process can isolate: the code's
own state (attributes, closure cells, default arguments, everything pickled
with it), its input, and the process-wide states listed above. It cannot
isolate state the code reaches *by reference* rather than by value: module
globals of an importable module (cloudpickle pickles such functions and
classes by reference), class attributes, files, sockets or other processes.
User code that keeps state there can carry information from one unit to the
next; the privacy guarantees assume that user code does not (state the
library documents for every parameter that takes user code).
"""

from __future__ import annotations

import copy
import ctypes
import io
import pickle
import random
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import joblib
import numpy as np
import sklearn
from scipy import sparse

from ..exceptions import InvalidParameterError

try:  # a dependency of joblib >= 1.6; vendored by older joblib
    import cloudpickle  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover
    from joblib.externals import cloudpickle

__all__ = [
    "RAISE",
    "WARNINGS_LOCK",
    "ProcessState",
    "UserCode",
    "call_user_code",
    "call_user_code_by_row",
    "captured_warnings",
    "freeze_rows",
    "handed_rows",
    "holds_warnings_lock",
    "is_frozen",
    "library_numerics",
    "protected_units_in_call",
    "teacher_call",
    "teacher_run",
    "user_code",
]

#: Held around every section of the library that changes the warning filters.
#: Re-entrant: a teacher fitted inside ``predict`` (an everlasting phase change)
#: nests such sections.
WARNINGS_LOCK = threading.RLock()

# How deep the current thread is in sections that hold WARNINGS_LOCK (``depth``), and a
# token of its outermost such section (``section``): a ProcessState is valid only within
# the hold of the lock it was taken in.
_HELD = threading.local()


def holds_warnings_lock() -> bool:
    """Whether the current thread runs inside :func:`captured_warnings`.

    Teachers fitted or asked from such a section run in this thread: a joblib
    worker *thread* could never take the lock this thread holds.
    """
    return getattr(_HELD, "depth", 0) > 0


def _nested_joblib_here() -> Any:
    """A joblib context running nested calls in this thread under the dask backend."""
    from joblib.parallel import get_active_backend

    backend, _ = get_active_backend()
    if type(backend).__name__ == "DaskDistributedBackend":
        return joblib.parallel_config(backend="sequential")
    return nullcontext()


@contextmanager
def captured_warnings() -> Iterator[None]:
    """Capture (and drop) every warning raised inside, under :data:`WARNINGS_LOCK`.

    The filters are process-wide: a warning another thread raises while this
    section runs is captured as well. Under joblib's dask backend, a joblib call
    inside (scikit-learn 1.6's ``LogisticRegression.fit`` makes one) runs in this
    thread: sent to the cluster, it would wait, lock held, behind the tasks of
    other teachers that wait for the lock.
    """
    with WARNINGS_LOCK:
        depth = getattr(_HELD, "depth", 0)
        if depth == 0:
            _HELD.section = object()
        _HELD.depth = depth + 1
        try:
            with warnings.catch_warnings(), _nested_joblib_here():
                warnings.simplefilter("ignore")
                yield
        finally:
            _HELD.depth = depth
            if depth == 0:
                _HELD.section = None


def library_numerics() -> np.errstate:
    """The library's own floating-point state for numeric work on teacher outputs.

    A context manager: every floating-point condition is ignored (the code
    tests finiteness itself), whatever error state the caller set, so no
    floating-point warning or ``FloatingPointError`` depends on a teacher's
    output.
    """
    return np.errstate(all="ignore")


class ProcessState:
    """A snapshot of the process-wide state a teacher may change, to restore after it.

    scikit-learn's configuration (``sklearn.get_config``), numpy's and
    Python's global random states. (numpy's error state is set and restored by
    ``np.errstate`` in :func:`teacher_call`.) One snapshot may serve many
    teachers in a row: after each, whatever changed is set back to it.

    A snapshot is taken, and serves, only while the current thread holds
    :data:`WARNINGS_LOCK` (inside :func:`teacher_run` or :func:`teacher_call`),
    in one hold of it: the state it records is then never one that another
    thread's teacher is in the middle of changing. Taking one outside the lock
    raises ``RuntimeError``.

    numpy's global state is the legacy ``RandomState``'s: the bit generator's
    words (the Mersenne Twister's key and position) and a cached Gaussian
    (``has_gauss``, ``gauss``), which a legacy ``standard_normal`` returns
    without moving the generator. It is restored whole. When the snapshot holds
    no cached Gaussian (``has_gauss == 0``, ``gauss == 0.0``: numpy's state
    whenever none is cached), the words are compared (2.5 kB, through
    ``BitGenerator.ctypes.state_address``, instead of a ``get_state`` per
    teacher): if they differ the whole state is set back; if they are equal, the
    bit generator is set again (``np.random.set_bit_generator``), which clears
    whatever Gaussian a teacher may have left cached (``set_state(..., has_gauss=1,
    gauss=v)`` would otherwise hand ``v`` to the next teacher). Otherwise the
    full state is compared. Python's random state (its generator's words and
    ``gauss_next``) is set back after every teacher.
    """

    def __init__(self) -> None:
        if not holds_warnings_lock():
            raise RuntimeError(
                "a ProcessState is taken while holding WARNINGS_LOCK (inside teacher_run() or "
                "teacher_call()); outside it, it may record another thread's teacher mid-run."
            )
        self.section = _HELD.section
        self.config = sklearn.get_config()
        self.numpy: tuple = np.random.get_state(legacy=True)  # type: ignore[assignment]  # noqa: NPY002
        self.python = random.getstate()
        self.bit_generator = _get_bit_generator()
        self._view = _state_view(self.bit_generator)  # the live words, read without a copy
        self._words = None if self._view is None else bytes(self._view)
        self._fast = (
            self._words is not None
            and _set_bit_generator is not None
            and self.numpy[3] == 0  # no cached Gaussian ...
            and self.numpy[4] == 0.0  # ... and the value numpy keeps when there is none
        )

    def restore(self) -> None:
        """Set back whatever differs from the snapshot."""
        if sklearn.get_config() != self.config:
            sklearn.set_config(**self.config)
        if _set_bit_generator is not None and _get_bit_generator() is not self.bit_generator:
            _set_bit_generator(self.bit_generator)
            np.random.set_state(self.numpy)  # noqa: NPY002
        elif self._fast:
            assert _set_bit_generator is not None  # (part of the fast condition)
            if self._view != self._words:
                np.random.set_state(self.numpy)  # noqa: NPY002
            else:  # same words: clear any cached Gaussian (numpy resets it with the generator)
                _set_bit_generator(self.bit_generator)
        else:
            now: tuple = np.random.get_state(legacy=True)  # type: ignore[assignment]  # noqa: NPY002
            if now[2:] != self.numpy[2:] or not np.array_equal(now[1], self.numpy[1]):
                np.random.set_state(self.numpy)  # noqa: NPY002
        random.setstate(self.python)


# numpy's accessors of the global bit generator (public since numpy 1.25; absent from its
# stubs). With an older numpy every restore compares the full state.
_get_bit_generator = getattr(np.random, "get_bit_generator", lambda: None)
_set_bit_generator = getattr(np.random, "set_bit_generator", None)


def _state_view(bit_generator) -> memoryview | None:
    """The Mersenne Twister's key and position, a live view (None for another bit generator).

    The view reads the generator's memory as it is when compared: it stays
    valid as long as the generator lives (the snapshot holds it).
    """
    if type(bit_generator) is not np.random.MT19937:
        return None
    words = (ctypes.c_uint32 * 625).from_address(bit_generator.ctypes.state_address)
    return memoryview(words).cast("B")


@contextmanager
def teacher_run() -> Iterator[ProcessState]:
    """Hold the teachers' lock for a run of teachers, and snapshot the state they start from.

    Yields a :class:`ProcessState` taken after :data:`WARNINGS_LOCK` is
    acquired (inside :func:`captured_warnings`), to pass to every
    :func:`teacher_call` of the run. The lock is held for the whole run, so no
    teacher of another thread runs between two teachers of this one, and the
    snapshot stays the state every teacher of the run starts from.
    """
    with captured_warnings():
        yield ProcessState()


@contextmanager
def teacher_call(state: ProcessState | None = None) -> Iterator[None]:
    """Run one teacher's ``fit`` or answer in isolation from the other teachers.

    Inside: warnings captured (:func:`captured_warnings`), every floating-point
    condition ignored. Afterwards numpy's error state, scikit-learn's
    configuration and numpy's and Python's global random states are what they
    were before (``state``, the :class:`ProcessState` of the
    :func:`teacher_run` this call is part of, or a snapshot taken now, once
    the lock is held), whatever the teacher did to them. A ``state`` taken in
    another hold of the lock (another thread, or an earlier run) raises
    ``RuntimeError``.
    """
    with captured_warnings():
        if state is None:
            state = ProcessState()
        elif state.section is not _HELD.section:
            raise RuntimeError(
                "a shared ProcessState serves only within the hold of WARNINGS_LOCK it was "
                "taken in (one teacher_run)."
            )
        try:
            with np.errstate(all="ignore"):
                yield
        finally:
            state.restore()


def _owner(array: np.ndarray) -> Any:
    """The object that finally owns the memory of ``array``."""
    base: Any = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base


def is_frozen(X) -> bool:
    """Whether ``X`` is a numeric array whose owning buffer is immutable ``bytes``."""
    return (
        isinstance(X, np.ndarray)
        and X.dtype != object
        and not X.flags.writeable
        and isinstance(_owner(X), bytes)
    )


def freeze_rows(X):
    """One read-only copy of a numeric array, which no code can make writeable.

    The copy's owning buffer is a ``bytes`` object (immutable), so setting
    ``flags.writeable = True`` on it or on any view of it is refused. Other
    inputs (DataFrames, sparse matrices, object arrays) are returned as they
    are: :func:`handed_rows` copies them for each teacher.
    """
    if not isinstance(X, np.ndarray) or X.dtype == object or is_frozen(X):
        return X
    frozen = np.frombuffer(np.ascontiguousarray(X).tobytes(), dtype=X.dtype)
    return frozen.reshape(X.shape)


def handed_rows(X):
    """The rows one teacher is handed at one call: an object of its own, always.

    A frozen array (:func:`freeze_rows`) is handed as a fresh view: its buffer
    stays immutable (a view of it cannot be made writeable), and its metadata
    is its own, so a teacher that sets ``shape``, ``strides`` or ``dtype`` on
    it changes that view alone, never the batch, another teacher's view or the
    view of a retry. Anything else is copied (a DataFrame deeply). Whatever the
    teacher does to what it is handed (a scaler with ``copy=False``, a write
    through a DataFrame's buffer, ``X.strides = (0, ...)``) changes neither the
    caller's rows nor what any other teacher, or any other call, is handed.
    """
    if is_frozen(X):
        return X.view()
    if hasattr(X, "iloc"):
        return X.copy(deep=True)
    if sparse.issparse(X):
        return X.copy()
    if isinstance(X, np.ndarray):
        return X.copy()
    return X


# -- the one boundary --------------------------------------------------------------------------

# Per thread: how many protected units the user-code call running now was handed (0: none).
_UNITS = threading.local()


def protected_units_in_call() -> int:
    """How many protected units the user code running now in this thread was handed.

    0 when the current thread is not inside a user-code call of the boundary
    (:func:`call_user_code`); otherwise 1, by construction: the boundary hands
    every call exactly one protected unit (one row, or one teacher's block).
    User code may call it to check that it runs inside the boundary.
    """
    return int(getattr(_UNITS, "count", 0))


class _SharingPickler(cloudpickle.Pickler):
    """cloudpickle, with code objects and modules kept out of the pickle (shared by reference).

    Both are shared by every copy anyway or cannot be changed: a code object is
    immutable, and a module is what cloudpickle itself pickles by reference. Not
    rebuilding them for every unit makes a copy several times cheaper.
    """

    def __init__(self, file: Any, shared: list) -> None:
        super().__init__(file)
        self.shared = shared

    def persistent_id(self, obj: Any) -> int | None:
        if isinstance(obj, (types.CodeType, types.ModuleType)):
            self.shared.append(obj)
            return len(self.shared) - 1
        return None


class _SharingUnpickler(pickle.Unpickler):
    def __init__(self, file: Any, shared: list) -> None:
        super().__init__(file)
        self.shared = shared

    def persistent_load(self, pid: Any) -> Any:
        return self.shared[pid]


class UserCode:
    """User code pickled once, from which each protected unit gets a copy of its own.

    Made by :func:`user_code`. ``payload`` is the ``cloudpickle`` pickle of the
    object (plain bytes: it can be sent to a joblib or dask worker and used
    there); :meth:`copy` unpickles a new copy. In each process, the first copy
    re-pickles the object once with its code objects and modules held apart
    (immutable, or shared by reference anyway), so that every later copy
    rebuilds only the object's own state: attributes, closure cells, defaults.
    """

    def __init__(self, payload: bytes, name: str) -> None:
        self.payload = payload
        self.name = name
        self._local: tuple[bytes, list] | None = None

    def __getstate__(self) -> dict:
        return {"payload": self.payload, "name": self.name}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["payload"], state["name"])  # type: ignore[misc]

    def copy(self) -> Any:
        """A new copy of the code (its attributes, closure cells and defaults its own)."""
        local = self._local
        if local is None:
            shared: list = []
            buffer = io.BytesIO()
            _SharingPickler(buffer, shared).dump(pickle.loads(self.payload))  # noqa: S301
            local = self._local = (buffer.getvalue(), shared)
        return _SharingUnpickler(io.BytesIO(local[0]), local[1]).load()


def user_code(code: Any, name: str) -> UserCode:
    """``code`` pickled once with ``cloudpickle``, for :func:`call_user_code`.

    Parameters
    ----------
    code : object
        The user's object (an estimator, a callable, a transformer), or a
        :class:`UserCode` already (returned as it is).
    name : str
        The parameter it came from, for the error message (``"hypotheses[3]"``).

    Raises
    ------
    InvalidParameterError
        If ``code`` cannot be pickled. Nothing private is read to decide it:
        call it before anything is charged.
    """
    if isinstance(code, UserCode):
        return code
    try:
        payload = cloudpickle.dumps(code)
    except Exception as exc:  # noqa: BLE001 - any failure to copy refuses the code
        raise InvalidParameterError(
            f"{name} ({type(code).__name__}) cannot be used: user code that meets training "
            "rows runs as a copy of its own for each protected unit (one row, or one "
            "teacher's block), made by pickling it once with cloudpickle, and pickling it "
            f"failed ({type(exc).__name__}: {exc}). Pass a picklable object: no open "
            "files, locks, sockets or generators among its attributes or closure."
        ) from None
    return UserCode(payload, name)


class _Raise:
    """The marker of :data:`RAISE`."""

    def __repr__(self) -> str:
        return "RAISE"


#: ``fallback=RAISE``: a unit whose code raises re-raises (for callers whose failure is
#: public, such as a direct call of ``fit_teachers`` without a fallback; no estimator
#: of the library uses it on protected rows).
RAISE: Any = _Raise()


class _RunState:
    """What every unit of one boundary run is set back to after it.

    Taken inside the run's :func:`teacher_run` (the lock held, every warning
    ignored) and its ``np.errstate(all="ignore")``: the warning filters (the
    list object and its entries), ``warnings.showwarning`` and its
    implementation, numpy's error state and the :class:`ProcessState`. What
    ``warnings.catch_warnings`` and ``np.errstate`` around every unit would
    restore, compared and set back only when a unit changed it (a unit costs
    microseconds, and there is one per row).
    """

    def __init__(self, state: ProcessState) -> None:
        self.state = state
        self.filters: Any = warnings.filters
        self.entries = list(self.filters)
        self.showwarning = warnings.showwarning
        self.showwarnmsg_impl = warnings._showwarnmsg_impl  # type: ignore[attr-defined]
        self.errors = np.geterr()

    def restore(self) -> None:
        if warnings.filters is not self.filters or warnings.filters != self.entries:
            self.filters[:] = self.entries
            warnings.filters = self.filters
            warnings._filters_mutated()  # type: ignore[attr-defined]
        if warnings.showwarning is not self.showwarning:
            warnings.showwarning = self.showwarning
        if warnings._showwarnmsg_impl is not self.showwarnmsg_impl:  # type: ignore[attr-defined]
            warnings._showwarnmsg_impl = self.showwarnmsg_impl  # type: ignore[attr-defined]
        if np.geterr() != self.errors:
            np.seterr(**self.errors)
        self.state.restore()


def _run_unit(
    code: UserCode,
    unit: tuple,
    call: Callable[..., Any],
    check: Callable[[Any], Any],
    fallback: Any,
    run: _RunState,
) -> Any:
    """One unit through its own copy of ``code``, guarded (see :func:`call_user_code`).

    What :func:`teacher_call` does for one call, inside the run's
    :func:`teacher_run` (which holds the lock, ignores every warning and took
    ``run``): afterwards, the warning filters, numpy's error state and the
    process state are set back to ``run`` (:meth:`_RunState.restore`).
    """
    previous = getattr(_UNITS, "count", 0)
    try:
        _UNITS.count = 1
        return check(call(code.copy(), *[_hand(part) for part in unit]))
    except Exception:
        if fallback is RAISE:
            raise
        return fallback
    finally:
        _UNITS.count = previous
        run.restore()


def call_user_code(
    code: Any,
    units: Sequence[tuple],
    call: Callable[..., Any],
    check: Callable[[Any], Any],
    fallback: Any,
    *,
    name: str,
) -> list:
    """The boundary: user code on protected units, one unit at a time, each in isolation.

    For every unit of ``units``, a copy of ``code`` of its own (unpickled from
    one ``cloudpickle`` payload made here, once: :func:`user_code`) is called
    as ``call(copy, *handed)``, where ``handed`` holds
    :func:`handed_rows` of each part of the unit (an object of its own: a
    fresh view of a frozen array, a copy of anything else), guarded as by
    :func:`teacher_call`: warnings captured and dropped, every floating-point
    condition ignored, and the warning filters, numpy's error state,
    scikit-learn's configuration and numpy's and Python's global random states
    set back after the unit (:class:`_RunState`).
    ``check(output)`` converts and validates the output (allowed set, shape,
    finiteness) inside the same guard and returns the unit's value. If the
    call or the check raises any ``Exception``, the unit's value is
    ``fallback``, a fixed public value (``fallback=RAISE`` re-raises instead).

    The whole run holds the teachers' lock (:func:`teacher_run`), so every unit
    starts from the same process state. :func:`protected_units_in_call` is 1
    inside each call.

    Parameters
    ----------
    code : object or UserCode
        The user code (pickled here) or its :class:`UserCode`.
    units : sequence of tuple
        The protected units, each a tuple of the parts handed to ``call``
        after the copy (``(row,)``, or ``(X_block, y_block)`` for a fit).
        Parts should be frozen (:func:`freeze_rows`) where they are numeric
        arrays, so that handing them costs a view.
    call : callable
        ``call(copy, *parts)``: the library's accessor (``lambda h, X: h(X)``,
        ``lambda t, X: t.predict(X)``); a method lookup inside it is guarded too.
    check : callable
        ``check(output)`` -> the unit's value; raises for an unusable output.
    fallback : object
        The unit's value whenever the code or the check raises.
    name : str
        The parameter the code came from, for the error message of
        :func:`user_code`.

    Returns
    -------
    list
        One value per unit, in order.

    Raises
    ------
    InvalidParameterError
        If ``code`` cannot be pickled (before any unit is run).
    """
    code = user_code(code, name)
    with teacher_run() as state, np.errstate(all="ignore"):
        run = _RunState(state)
        return [_run_unit(code, unit, call, check, fallback, run) for unit in units]


# Python types whose values cannot be changed in place: an object array holding only these
# is handed to user code as a shallow copy (a deep copy otherwise).
_IMMUTABLE = (str, bytes, int, float, complex, bool, type(None), np.generic)


def _row_units(X) -> tuple[list[tuple], np.ndarray]:
    """The distinct one-row units of a batch, and the unit of each row.

    Rows equal byte for byte (numeric arrays) or with equal pickled values
    (object arrays, DataFrames, sparse rows) share one unit. Each unit is one
    row, 2-D (shape ``(1, n_features)``): a view of the frozen batch, a one-row
    object array, a one-row DataFrame with the index ``[0]``, or a one-row CSR
    matrix.
    """
    if hasattr(X, "iloc"):
        keys = [_row_key(row, i) for i, row in enumerate(X.itertuples(index=False, name=None))]
        distinct, inverse = _first_of(keys)
        units = []
        for i in distinct:
            units.append((X.iloc[[int(i)]].reset_index(drop=True),))
        return units, inverse
    if sparse.issparse(X):
        X = sparse.csr_matrix(X, copy=True)
        X.sort_indices()
        keys = [
            pickle.dumps(
                (X.indices[X.indptr[i] : X.indptr[i + 1]], X.data[X.indptr[i] : X.indptr[i + 1]])
            )
            for i in range(X.shape[0])
        ]
        distinct, inverse = _first_of(keys)
        return [(X[int(i) : int(i) + 1],) for i in distinct], inverse
    X = np.asarray(X)
    if X.ndim == 1:
        X = X[:, None]
    if X.dtype == object:
        immutable = all(isinstance(v, _IMMUTABLE) for v in X.flat)
        keys = [_row_key(X[i : i + 1], i) for i in range(X.shape[0])]
        distinct, inverse = _first_of(keys)
        units = []
        for i in distinct:
            row = X[int(i) : int(i) + 1]
            units.append((row.copy() if immutable else _deep_or_shallow(row),))
        return units, inverse
    frozen = freeze_rows(np.ascontiguousarray(X))
    if frozen.shape[0] == 0:
        return [], np.zeros(0, dtype=np.intp)
    width = frozen.dtype.itemsize * int(np.prod(frozen.shape[1:], dtype=np.int64))
    keys_array = frozen.reshape(frozen.shape[0], -1).view(np.dtype((np.void, max(width, 1))))
    if width == 0:
        keys_array = np.zeros((frozen.shape[0], 1), dtype=np.uint8).view(np.dtype((np.void, 1)))
    _, first, inverse = np.unique(keys_array.ravel(), return_index=True, return_inverse=True)
    return [(frozen[int(i) : int(i) + 1],) for i in first], inverse.reshape(-1)


class _DeepCopied:
    """A part of a unit that holds mutable Python objects: deep-copied for every call."""

    def __init__(self, value: Any) -> None:
        self.value = copy.deepcopy(value)

    def handed(self) -> Any:
        return copy.deepcopy(self.value)


def _deep_or_shallow(row: np.ndarray) -> Any:
    """A one-row object array's unit: deep-copied at every call, or a copy if it cannot be."""
    try:
        return _DeepCopied(row)
    except Exception:  # noqa: BLE001 - values that cannot be deep-copied: a copy of the row
        return row.copy()


def _hand(part: Any) -> Any:
    """What user code is handed of one part of a unit, at one call: an object of its own."""
    if isinstance(part, _DeepCopied):
        return part.handed()
    return handed_rows(part)


def _row_key(row: Any, i: int) -> bytes:
    """The bytes two rows share exactly when they are the same values (pickled).

    A row whose values cannot be pickled gets a key of its own (it is evaluated
    alone): never an exception, whose presence would depend on the rows.
    """
    try:
        return pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - any failure: no sharing for this row
        return b"\x00" + i.to_bytes(8, "little")  # a pickle never starts with a zero byte


def _first_of(keys: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the first occurrence of each distinct key, and each key's distinct index."""
    seen: dict[bytes, int] = {}
    first: list[int] = []
    inverse = np.empty(len(keys), dtype=np.intp)
    for i, key in enumerate(keys):
        k = seen.get(key)
        if k is None:
            k = seen[key] = len(first)
            first.append(i)
        inverse[i] = k
    return np.asarray(first, dtype=np.intp), inverse


def call_user_code_by_row(
    codes: Sequence[Any],
    X,
    call: Callable[..., Any],
    check: Callable[[Any], Any],
    fallback: Any,
    *,
    names: Sequence[str],
    dtype: Any,
) -> np.ndarray:
    """Each code on each row of ``X`` alone, through :func:`call_user_code`.

    The batch is cut into one-row units once (2-D, shape ``(1, n_features)``;
    a DataFrame row keeps its columns and dtypes and gets the index ``[0]``).
    **Identical rows share one evaluation**: rows equal byte for byte (numeric
    arrays), or whose pickled values are equal (object arrays, DataFrames,
    sparse rows), are evaluated once per code, and every copy of the row gets
    that value; a row's value therefore depends on that row alone. Each code
    is pickled once (one payload per code) and copied for every distinct row.

    Parameters
    ----------
    codes : sequence
        The user codes (or their :class:`UserCode`).
    X : ndarray, DataFrame or sparse matrix of shape (n_rows, n_features)
        The protected rows.
    call, check, fallback
        As in :func:`call_user_code`; ``check`` returns a value of the shape of
        ``fallback`` (converted to ``dtype`` inside the guard).
    names : sequence of str
        The parameter each code came from.
    dtype : dtype
        The dtype of the result.

    Returns
    -------
    ndarray of shape (len(codes), n_rows, *np.shape(fallback))
    """
    payloads = [user_code(code, name) for code, name in zip(codes, names)]  # all, before any row
    units, inverse = _row_units(X)
    fill = np.asarray(fallback, dtype=dtype)

    def checked(output):
        value = np.asarray(check(output), dtype=dtype)
        if value.shape != fill.shape:
            raise ValueError(f"expected a value of shape {fill.shape}, got {value.shape}.")
        return value

    out = np.empty((len(payloads), len(inverse), *fill.shape), dtype=dtype)
    for k, payload in enumerate(payloads):
        values = call_user_code(payload, units, call, checked, fill, name=payload.name)
        distinct = np.empty((len(units), *fill.shape), dtype=dtype)
        for j, value in enumerate(values):
            distinct[j] = value
        out[k] = distinct[inverse] if len(units) else distinct[:0]
    return out
