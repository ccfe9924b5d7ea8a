"""Directories that belong to this user alone: the default ledgers' and the service's metrics.

A file whose directory another local user prepared (created first, made
writable by others, or pointed elsewhere by a symbolic link) may be read,
copied or replaced by that user. Every directory the library creates for its
own files is therefore created with mode 0700 and checked before use: a real
directory (not a symbolic link), owned by this user, with mode 0700. On
systems without POSIX owners (Windows) only the first check applies; the
user's own temporary directory (``%LOCALAPPDATA%\\Temp``) is protected by the
profile's permissions.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["make_private_directory", "private_directory_problem", "user_temporary_directory"]


def user_temporary_directory() -> Path:
    """``$TMPDIR/skprivpred-<uid>``: this user's directory for the library's temporary files."""
    getuid = getattr(os, "getuid", None)
    user = str(getuid()) if getuid is not None else os.environ.get("USERNAME", "user")
    return Path(tempfile.gettempdir()) / f"skprivpred-{user}"


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
    return None
