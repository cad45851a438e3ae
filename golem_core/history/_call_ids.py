"""Mistral's call ids for ``port_history``: exactly nine letters and digits.

Owns ``NineChars`` (one request's names: an id that fits is kept, another is named by a
hash of it) and ``CallIds``, what ``port_history`` asks of any id builder (``WireIds``
too). Pure.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final, Protocol

__all__ = ["CallIds", "NineChars"]

_ALNUM: Final = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_NINE: Final = re.compile(r"[a-zA-Z0-9]{9}")


class CallIds(Protocol):
    """What names the call ids of one request: a call's, then its results'."""

    def call(self, call_id: str) -> str: ...
    def result(self, call_id: str) -> str: ...


class NineChars:
    """Mistral's call ids: exactly nine letters and digits. An id that fits is kept;
    another is named by a hash of it (then of it and a counter, on a clash)."""

    def __init__(self) -> None:
        self._name: dict[str, str] = {}
        self._owner: dict[str, str] = {}

    def _fresh(self, call_id: str) -> str:
        if _NINE.fullmatch(call_id) and call_id not in self._owner:
            return call_id
        k = 0
        while True:
            seed = call_id if k == 0 else f"{call_id}#{k}"
            digest = int.from_bytes(hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest())
            name = ""
            for _ in range(9):
                digest, r = divmod(digest, len(_ALNUM))
                name += _ALNUM[r]
            if name not in self._owner:
                return name
            k += 1

    def call(self, call_id: str) -> str:
        name = self._name.get(call_id)
        if name is None:
            name = self._fresh(call_id)
            self._name[call_id] = name
            self._owner[name] = call_id
        return name

    def result(self, call_id: str) -> str:
        return self.call(call_id)
