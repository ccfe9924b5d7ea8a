"""Clients of a service: optional API keys and per-key quotas kept in the ledger."""

from __future__ import annotations

import hmac
import os
import threading
from collections.abc import Mapping

from ..accounting._accountant import PrivacyAccountant
from ..utils._private_dirs import foreign_control

__all__ = ["Clients", "KeyFileRefused", "UnknownKey", "parse_keys"]

#: Environment variable that may hold the keys, as ``name:key`` pairs separated by commas.
KEYS_ENVIRONMENT_VARIABLE = "SKPRIVPRED_API_KEYS"


class UnknownKey(Exception):
    """The request presented no key, or a key that is not configured."""


class KeyFileRefused(ValueError):
    """Another local user could read or write the API key file: no key is accepted."""


def parse_keys(text: str, source: str) -> dict[str, str]:
    """``name:key`` pairs, one per line or separated by commas.

    A line whose first character other than blanks is ``#`` is a comment;
    a ``#`` anywhere else is part of the entry, so that a key holding one is
    refused (as is a key holding whitespace), naming its line, instead of
    being cut short at it. A line ``admin:name:key`` gives the client
    ``admin:name``, an administrator.

    Raises
    ------
    ValueError
        For a malformed entry, a key shorter than 16 characters or holding
        ``#`` or whitespace, a client with two keys, or no key at all; the
        message names the source and the line, never a key.
    """
    keys: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip().startswith("#"):
            continue
        where = f"{source}, line {number}"
        for entry in raw.split(","):
            line = entry.strip()
            if not line:
                continue
            name, sep, key = line.partition(":")
            if name.strip() == "admin":  # 'admin:NAME:KEY': client 'admin:NAME' is an admin
                name, sep, key = key.partition(":")
                name = f"admin:{name.strip()}" if name.strip() else ""
            name, key = name.strip(), key.strip()
            if not sep or not name or not key:
                raise ValueError(
                    f"{where}: each API key is written 'name:key' (or 'admin:name:key' for an "
                    "administrator), got a malformed entry."
                )
            if "#" in key or any(c.isspace() for c in key):
                raise ValueError(
                    f"{where}: the key of client {name!r} holds '#' or whitespace, which a key "
                    "may not hold (a comment is a line of its own, starting with '#')."
                )
            if len(key) < 16:
                raise ValueError(
                    f"{where}: the key of client {name!r} is shorter than 16 characters."
                )
            if name in keys:
                raise ValueError(f"{where}: client {name!r} has two keys.")
            keys[name] = key
    if not keys:
        raise ValueError(f"{source}: no API key found.")
    return keys


class Clients:
    """Who may ask, and how much of the global budget each client may spend.

    Parameters
    ----------
    budget : PrivacyAccountant
        The global budget (the one that protects the training data).
    keys : mapping, str, os.PathLike or None
        ``None``: no keys, anyone may ask. A mapping ``{client name: key}``, or a
        file of ``name:key`` lines, re-read whenever it changes (to rotate keys,
        edit the file).
    quota_epsilon : float or None
        Each client's share: at most this much epsilon (basic composition of
        its rows' per-row guarantee), counted in the global budget's ledger
        under ``"<budget name>/client/<client name>/epsilon=<quota>"`` (with
        ``",delta=<delta>"`` appended when the global budget has a delta, which
        is then the quota's delta cap too). The service charges a quota in the
        same ledger transaction as the global budget
        (:meth:`~skprivpred.PrivacyAccountant.charging_also`).
    """

    def __init__(self, budget: PrivacyAccountant, keys=None, quota_epsilon=None) -> None:
        if quota_epsilon is not None and keys is None:
            raise ValueError("a per-client quota needs API keys: say who the clients are.")
        if quota_epsilon is not None and not (0 < float(quota_epsilon) < float("inf")):
            raise ValueError(f"quota_epsilon must be a finite number > 0, got {quota_epsilon!r}.")
        self.budget = budget
        self.quota_epsilon = None if quota_epsilon is None else float(quota_epsilon)
        self._lock = threading.Lock()
        self._quotas: dict[str, PrivacyAccountant] = {}
        self._file: str | None = None
        self._file_state: tuple[int, ...] | None = None
        self._keys: dict[str, str] | None = None
        if isinstance(keys, Mapping):
            self._keys = parse_keys(",".join(f"{n}:{k}" for n, k in keys.items()), "api_keys")
        elif keys is not None:
            self._file = os.fspath(keys)
            self._reload()

    @property
    def required(self) -> bool:
        """Whether requests must present a key."""
        return self._keys is not None

    def _reload(self) -> None:
        """Re-read the key file when it changed (its content, owner or mode), checking it first.

        As ``ssh`` does for its keys, the file is refused while another user
        could read or write it, or replace it through a directory above it
        (:func:`~skprivpred.utils._private_dirs.foreign_control`): then no key is
        accepted, until the file is fixed.
        """
        assert self._file is not None
        info = os.stat(self._file)
        # A chmod or chown changes the ctime, an edit the mtime (and ctime), a new file the inode.
        state = (info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_mode, info.st_uid)
        if state == self._file_state:
            return
        with open(self._file, encoding="utf-8") as handle:
            problem = foreign_control(
                self._file,
                "the API key file",
                info=os.fstat(handle.fileno()),
                secret=True,
                allow_link=True,
            )
            if problem is not None:
                self._keys = {}  # fail closed: keys are required and none matches
                raise KeyFileRefused(
                    f"{problem}. Another user could read the keys or add one, so no key "
                    "is accepted until it is fixed."
                )
            keys = parse_keys(handle.read(), self._file)
        self._keys, self._file_state = keys, state

    def identify(self, presented: str | None) -> str | None:
        """The client's name for a presented key (``None`` when no keys are configured).

        Every configured key is compared, in constant time, whatever matches.

        Raises
        ------
        UnknownKey
            If keys are configured and ``presented`` is none of them.
        """
        if self._file is not None:
            with self._lock:
                self._reload()
        if self._keys is None:
            return None
        if not presented:
            raise UnknownKey
        offered = presented.encode()
        match = None
        for name, key in self._keys.items():
            if hmac.compare_digest(offered, key.encode()) and match is None:
                match = name
        if match is None:
            raise UnknownKey
        return match

    def quota(self, client: str | None) -> PrivacyAccountant | None:
        """The client's quota, an accountant in the global budget's ledger (or None)."""
        if client is None or self.quota_epsilon is None:
            return None
        with self._lock:
            if client not in self._quotas:
                delta = self.budget.delta
                name = f"{self.budget.name}/client/{client}/epsilon={self.quota_epsilon!r}"
                self._quotas[client] = PrivacyAccountant(
                    epsilon=self.quota_epsilon,
                    delta=delta,
                    ledger=self.budget,  # the same ledger: charged in one transaction
                    name=name + (f",delta={delta!r}" if delta > 0 else ""),
                    timeout=self.budget.timeout,
                )
            return self._quotas[client]

    def quotas(self) -> dict[str, PrivacyAccountant]:
        """Every configured client's quota (empty without quotas), read from the ledger."""
        if self.quota_epsilon is None or self._keys is None:
            return {}
        if self._file is not None:
            with self._lock:
                self._reload()
        assert self._keys is not None
        quotas = {}
        for client in sorted(self._keys):
            quota = self.quota(client)
            assert quota is not None
            quotas[client] = quota
        return quotas
