"""Warnings to the user: at the user's line, once per process and call site.

Python shows a ``"default"``-action warning once per call site by remembering
it in the calling module's ``__warningregistry__``; but every change of the
warning filters (each ``warnings.catch_warnings`` block, such as the one every
teacher fits in, :mod:`skprivpred._teachers._isolation`) invalidates those registries,
so the same warning came back on every call from the same line. This module
keeps its own registry of what it has shown in this process, keyed by
``(category, message, filename, line)`` (or a count-free ``key`` in place of
the message), and points each warning at the user's line: the first frame
outside skprivpred, scikit-learn and joblib (a ``cross_val_score``, a
``Pipeline.fit`` or a ``fit`` call in the user's code).

In a joblib worker process no user frame is on the stack (the call came
through a pickle); there the warning points at the line recorded when
scikit-learn cloned the estimator in the user's process (``_user_site``, set
by :meth:`~skprivpred._base.PrivatePredictorMixin.__sklearn_clone__`), and
else at the first frame outside skprivpred.

The user's filters keep their meaning: under an ``"always"`` filter (as in
``pytest.warns``) every warning is shown, an ``"error"`` filter raises, an
``"ignore"`` filter hides it (and does not count as shown).
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import types
import warnings

__all__ = ["Site", "caller_site", "clone_site", "user_site", "warn_user"]

#: What this process has shown: (category, message, filename, line).
_SHOWN: set[tuple[type, str, str, int]] = set()
_SHOWN_LOCK = threading.Lock()

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _skipped_directories() -> tuple[str, ...]:
    """skprivpred, scikit-learn and joblib, and the standard library's process machinery."""
    import concurrent.futures
    import multiprocessing

    import joblib
    import sklearn

    directories = [_PACKAGE]
    for module in (sklearn, joblib, multiprocessing, concurrent.futures):
        directories.append(os.path.dirname(os.path.abspath(str(module.__file__))) + os.sep)
    return tuple(directories)


_SKIPPED: tuple[str, ...] | None = None
# Single files of the standard library that run a worker's task: threading, and runpy
# (frozen from Python 3.11 on, a plain file before: a process pool's worker starts in it).
_SKIPPED_FILES = {os.path.abspath(threading.__file__), os.path.abspath(runpy.__file__)}


def _is_skipped(filename: str, skipped: tuple[str, ...]) -> bool:
    if filename.startswith("<frozen"):  # runpy, importlib: how a worker process starts
        return True
    path = os.path.abspath(filename)
    return path.startswith(skipped) or path in _SKIPPED_FILES


Site = tuple[str, int, str, dict]


def _site_of(frame: types.FrameType) -> Site:
    return (
        frame.f_code.co_filename,
        frame.f_lineno,
        frame.f_globals.get("__name__", ""),
        frame.f_globals,
    )


def caller_site(frame: types.FrameType | None = None) -> Site | None:
    """The user's line: the first frame outside skprivpred, scikit-learn and joblib.

    ``None`` when the whole stack is library code (a joblib worker's task).
    """
    global _SKIPPED
    if _SKIPPED is None:
        _SKIPPED = _skipped_directories()
    frame = sys._getframe(1) if frame is None else frame
    while frame is not None:
        if not _is_skipped(frame.f_code.co_filename, _SKIPPED):
            return _site_of(frame)
        frame = frame.f_back
    return None


def _recorded_site(frame: types.FrameType | None) -> Site | None:
    """The site recorded on an estimator this stack runs (a joblib worker's task)."""
    while frame is not None:
        if os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
            owner = frame.f_locals.get("self")
            recorded = getattr(owner, "__dict__", {}).get("_user_site")
            if isinstance(recorded, tuple) and len(recorded) == 2:
                filename, lineno = recorded
                return filename, lineno, "", {}
        frame = frame.f_back
    return None


def _first_outside_package(frame: types.FrameType | None) -> Site | None:
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
            return _site_of(frame)
        frame = frame.f_back
    return None


def _action(message: str, category: type, module: str, lineno: int) -> str:
    """The action of the first filter that matches, as :func:`warnings.warn_explicit` finds it."""
    for action, msg, cat, mod, ln in warnings.filters:
        if (
            (msg is None or msg.match(message))
            and issubclass(category, cat)
            and (mod is None or mod.match(module))
            and (ln == 0 or lineno == ln)
        ):
            return action
    return getattr(warnings, "defaultaction", "default")


def user_site(frame: types.FrameType | None = None) -> Site:
    """Where a warning raised now is shown: the user's line, else the best known site.

    The user's line (:func:`caller_site`); in a worker process the line
    recorded on the estimator when it was cloned; else the first frame
    outside skprivpred.
    """
    frame = sys._getframe(1) if frame is None else frame
    site = caller_site(frame) or _recorded_site(frame) or _first_outside_package(frame)
    return site if site is not None else ("<unknown>", 0, "", {})


def clone_site() -> tuple[str, int] | None:
    """The user's line as ``(filename, lineno)`` while scikit-learn clones an estimator.

    A clone may be made in a joblib dispatch thread while the thread that
    called ``cross_val_score`` (or ``GridSearchCV.fit``) waits for it: then the
    waiting main thread's stack holds the user's line.
    """
    site = caller_site(sys._getframe(1))
    if site is None:
        main = sys._current_frames().get(threading.main_thread().ident or -1)
        site = caller_site(main) if main is not None else None
    return None if site is None else (site[0], site[1])


def warn_user(
    message: str,
    category: type[Warning] = UserWarning,
    *,
    site: Site | None = None,
    key: str | None = None,
):
    """Show ``message`` at the user's line, once per process and call site.

    Parameters
    ----------
    message : str
        The warning's text (one text per kind of warning, so that the
        registry recognises it).
    category : type, default=UserWarning
        A ``Warning`` subclass.
    site : tuple, default=None
        ``(filename, lineno, module, module_globals)`` to point at; by default
        the user's line (:func:`caller_site`).
    key : str, default=None
        What identifies the warning in the once-per-site registry, in place of
        ``message``: a message that carries counts (which differ between the
        folds of a cross-validation) gives a count-free key, so that it shows
        once per call site, with the first call's counts.
    """
    if site is None:
        site = user_site(sys._getframe(1))
    filename, lineno, module, module_globals = site
    if not module:
        module = os.path.splitext(os.path.basename(filename))[0]
    action = _action(message, category, module, lineno)
    if action in ("default", "module", "once"):
        shown = (category, message if key is None else key, filename, lineno)
        with _SHOWN_LOCK:
            if shown in _SHOWN:
                return
            _SHOWN.add(shown)
    registry = module_globals.setdefault("__warningregistry__", {}) if module_globals else None
    warnings.warn_explicit(
        message,
        category,
        filename,
        lineno,
        module=module,
        registry=registry,
        # No module_globals: linecache would ask the module's loader for its source,
        # and ``python -c`` or an interactive session's __main__ (BuiltinImporter)
        # raises ImportError there. The line is read from ``filename`` instead.
    )
