"""Files and directories that no other local user controls: the one place for these checks.

A file that another local user owns, can write, or can replace (through a
directory above it that they own or can write, or a symbolic link they
planted) is that user's: they can reset a ledger, choose a model's answers or
read its teachers, or add an API key. So

* every directory the library creates for its own files is created with mode
  0700 and checked before use: a real directory (not a symbolic link), owned by
  this user, with mode 0700, under directories no other user controls
  (:func:`private_directory_problem`);
* the files that hold privacy state (ledgers, model files, API key files) and
  every directory above them must be owned by this user or root and not
  writable by another user, except a directory above that is sticky and owned
  by root, like ``/tmp`` (:func:`foreign_control`); a file that holds secrets
  (a model's teachers, API keys) must not be readable by others either.

"Another user" is any uid other than this process's and root's; a group
other than root's counts as other users. On systems without POSIX owners
(Windows) only the symbolic-link checks apply; the user's own temporary
directory (``%LOCALAPPDATA%\\Temp``) and the directories' access control lists
protect the rest.
"""

from __future__ import annotations

import atexit
import os
import stat
import tempfile
import threading
from pathlib import Path

__all__ = [
    "foreign_control",
    "make_private_directory",
    "own_temporary_directory",
    "private_directory_problem",
    "user_temporary_directory",
]


def user_temporary_directory() -> Path:
    """``$TMPDIR/skprivpred-<uid>``: this user's directory for the library's temporary files."""
    getuid = getattr(os, "getuid", None)
    user = str(getuid()) if getuid is not None else os.environ.get("USERNAME", "user")
    return Path(tempfile.gettempdir()) / f"skprivpred-{user}"


#: The fresh directories this process created because every fixed name was taken, by pid.
_FRESH: dict[tuple[int, Path], Path] = {}
_FRESH_LOCK = threading.Lock()


def own_temporary_directory() -> Path:
    """A private directory of this user's for the library's temporary files (the default ledger).

    The first of these that is, or can be made, a real directory owned by this
    user with mode 0700 (:func:`private_directory_problem`):

    1. ``$XDG_RUNTIME_DIR/skprivpred``, if ``XDG_RUNTIME_DIR`` names this user's
       private runtime directory (a local ``tmpfs`` where SQLite's WAL works; it
       is often unset for services);
    2. ``$TMPDIR/skprivpred-<uid>``;
    3. a new directory ``$TMPDIR/skprivpred-<uid>-XXXXXXXX`` with a random name,
       created by ``mkdtemp`` (atomically, mode 0700, never one that existed),
       one per process and removed when that process exits if it is empty.

    Another local user can create the fixed name of step 2 first (a directory of
    theirs, or one open to everyone): it is then left alone, never used, and the
    fresh directory of step 3 is used instead, which no one else can take. The
    home directory is not used: it may be read-only, or on NFS, where SQLite's
    WAL mode fails.

    Raises
    ------
    ValueError
        If the temporary directory itself lies in a directory another user
        controls (``$TMPDIR`` owned by another user): the sentence names it.
    OSError
        If the fresh directory cannot be created.
    """
    candidates = []
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):
        try:
            if private_directory_problem(runtime) is None:
                candidates.append(Path(runtime) / "skprivpred")
        except OSError:
            pass  # a runtime directory that does not exist (any more)
    candidates.append(user_temporary_directory())
    for directory in candidates:
        try:
            make_private_directory(directory)
            if private_directory_problem(directory) is None:
                return directory
        except OSError:
            continue  # taken by a file of another user's, or no permission: the next one
    with _FRESH_LOCK:
        key = (os.getpid(), candidates[-1])
        fresh = _FRESH.get(key)
        if fresh is None or not os.path.isdir(fresh):
            fresh = Path(tempfile.mkdtemp(prefix=candidates[-1].name + "-"))
            _FRESH[key] = fresh
    problem = private_directory_problem(fresh)
    if problem is not None:
        raise ValueError(f"{fresh} {problem}")
    return fresh


@atexit.register
def _remove_fresh_directory() -> None:
    """At exit of the process that created it, remove its fresh directory if it is empty."""
    for (pid, _), fresh in list(_FRESH.items()):
        if pid == os.getpid():
            try:
                os.rmdir(fresh)
            except OSError:
                pass


def make_private_directory(directory: str | os.PathLike) -> None:
    """Create ``directory`` with mode 0700 unless it exists (then it is left as it is).

    A new directory gets mode 0700 whatever the umask took away from the
    owner. Check the directory with :func:`private_directory_problem` before
    using it, whether it was created here or not.

    Raises
    ------
    OSError
        If it cannot be created (a missing parent, no permission).
    """
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        return
    os.chmod(directory, 0o700)


def private_directory_problem(directory: str | os.PathLike) -> str | None:
    """Why ``directory`` is not this user's private directory, or None if it is.

    The reason completes a sentence that names the directory: ``"is a
    symbolic link"``, ``"is not a directory"``, ``"is owned by uid 65534, not
    by this user (uid 1000)"`` or ``"has mode 0777, not 0700"``.
    """
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # no POSIX owners: the profile's permissions protect it
        return None
    if info.st_uid != getuid():
        return f"is owned by uid {info.st_uid}, not by this user (uid {getuid()})"
    if stat.S_IMODE(info.st_mode) != 0o700:
        return f"has mode {stat.S_IMODE(info.st_mode):04o}, not 0700"
    above = _directories_problem(
        os.path.dirname(os.path.abspath(directory)),
        os.path.dirname(os.path.realpath(directory)),
        strict=False,
    )
    if above is not None:
        where, info = above
        return f"lies in {where} ({_owner_and_mode(info)}), {_why(info, getuid())}"
    return None


def _owner_and_mode(info: os.stat_result) -> str:
    return f"owner uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):04o}"


def _others_can_write(info: os.stat_result) -> bool:
    group = info.st_mode & stat.S_IWGRP and info.st_gid != 0
    return bool(info.st_mode & stat.S_IWOTH or group)


def _others_can_read(info: os.stat_result) -> bool:
    return bool(info.st_mode & (stat.S_IRGRP | stat.S_IROTH))


def _why(info: os.stat_result, uid: int) -> str:
    """Why another user controls the entry ``info`` describes (it is known that one does)."""
    if info.st_uid not in (uid, 0):
        return f"which belongs to another user, not to this one (uid {uid}) or root"
    return "which other users can write"


def _controlled(info: os.stat_result, uid: int, *, sticky_ok: bool) -> bool:
    if info.st_uid not in (uid, 0):
        return True
    sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX and info.st_uid == 0
    return _others_can_write(info) and not (sticky_ok and sticky)


def _directories_problem(*directories: str, strict: bool) -> tuple[str, os.stat_result] | None:
    """The first directory at or above ``directories`` that another user controls, if any.

    Give both the path as written (its symbolic links must be this user's or
    root's) and the path it resolves to. ``strict``: the directories
    themselves get no exception for being sticky and owned by root.
    """
    uid = os.getuid()
    chains = []
    for start in directories:
        chain, current = [], start
        while True:
            chain.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        chains.append(chain)
    for chain in chains:
        for i, where in enumerate(chain):
            try:
                info = os.lstat(where)
            except FileNotFoundError:
                continue  # not created yet: the directories above it are checked
            if stat.S_ISLNK(info.st_mode):
                if info.st_uid not in (uid, 0):
                    return where, info
                try:
                    info = os.stat(where)
                except FileNotFoundError:
                    continue  # a dangling link: opening through it fails anyway
            if _controlled(info, uid, sticky_ok=not (strict and i == 0)):
                return where, info
    return None


def foreign_control(
    path: str | os.PathLike,
    what: str,
    *,
    info: os.stat_result | None = None,
    secret: bool = False,
    strict_directory: bool = False,
    allow_link: bool = False,
) -> str | None:
    """How another local user controls the file at ``path``, or None if no one else does.

    Parameters
    ----------
    path : str or os.PathLike
        The file (it need not exist yet: then only its directories are checked).
    what : str
        What the file is, for the message (``"the ledger file"``).
    info : os.stat_result, default=None
        The status of the file as opened (``os.fstat``), so that the checks
        look at the file that is read; by default the path's ``os.lstat``.
    secret : bool, default=False
        Whether the file holds secrets: then it must not be readable by
        others either.
    strict_directory : bool, default=False
        Whether the file's own directory gets no exception for being sticky
        and owned by root (a SQLite ledger: SQLite creates its ``-wal``,
        ``-shm`` and ``-journal`` files beside it without ``O_EXCL``).
    allow_link : bool, default=False
        Whether ``path`` may be a symbolic link owned by this user or root
        (then the directories of its target are checked too). Otherwise a
        link is refused: a file opened by name through a link (as ``sqlite3``
        opens a ledger) is whatever the link's owner points it at.

    Returns
    -------
    str or None
        A sentence that names the path, its owner and its mode, and says who
        could do what; None if the file and its directories are this user's.
    """
    path = os.fspath(path)
    getuid = getattr(os, "getuid", None)
    try:
        link: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        link = None
    if link is not None and stat.S_ISLNK(link.st_mode):
        if not allow_link or (getuid is not None and link.st_uid not in (getuid(), 0)):
            return (
                f"{what} {path} is a symbolic link ({_owner_and_mode(link)}): whoever "
                "controls it or its target could replace the file; name the file itself"
            )
    if getuid is None:  # no POSIX owners: access control lists protect the files
        return None
    uid = getuid()
    if info is None and link is not None:
        info = os.stat(path) if stat.S_ISLNK(link.st_mode) else link
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            return f"{what} {path} is not a regular file ({_owner_and_mode(info)})"
        if info.st_uid not in (uid, 0):
            return (
                f"{what} {path} belongs to another user ({_owner_and_mode(info)}), not to "
                f"this user (uid {uid}) or root: that user could read, write or replace it"
            )
        if _others_can_write(info):
            return (
                f"{what} {path} is writable by other users ({_owner_and_mode(info)}); "
                "remove their access (chmod 600)"
            )
        if secret and _others_can_read(info):
            return (
                f"{what} {path} is readable by other users ({_owner_and_mode(info)}); "
                "remove their access (chmod 600)"
            )
    found = _directories_problem(
        os.path.dirname(os.path.abspath(path)),
        os.path.dirname(os.path.realpath(path)),
        strict=strict_directory,
    )
    if found is not None:
        where, entry = found
        return (
            f"{what} {path} lies in {where} ({_owner_and_mode(entry)}), {_why(entry, uid)}: "
            "another user could replace the file; use a directory that only this user and "
            "root can write"
        )
    return None
