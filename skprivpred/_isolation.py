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
"""

from __future__ import annotations

import ctypes
import random
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import joblib
import numpy as np
import sklearn
from scipy import sparse

__all__ = [
    "WARNINGS_LOCK",
    "ProcessState",
    "captured_warnings",
    "freeze_rows",
    "handed_rows",
    "holds_warnings_lock",
    "is_frozen",
    "library_numerics",
    "teacher_call",
    "teacher_run",
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
        self._words = _state_words(self.bit_generator)
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
            if _state_words(self.bit_generator) != self._words:
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


def _state_words(bit_generator) -> bytes | None:
    """The Mersenne Twister's key and position as bytes (None for another bit generator)."""
    if type(bit_generator) is not np.random.MT19937:
        return None
    words = (ctypes.c_uint32 * 625).from_address(bit_generator.ctypes.state_address)
    return bytes(words)


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
