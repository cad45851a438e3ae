"""Minting identifiers: the clock and entropy behind ``golem_core.next_uuid7``."""

from __future__ import annotations

import os
import threading
import time

from golem_core.ids import next_uuid7

__all__ = ["new_id"]

_lock = threading.Lock()
_last: str | None = None


def new_id() -> str:
    """A fresh, time-ordered UUID version 7 (RFC 9562) as a string.

    Ids minted by one process are strictly increasing, even many within one
    millisecond or across a clock step back. Thread-safe.
    """
    global _last
    with _lock:
        _last = next_uuid7(_last, time.time_ns() // 1_000_000, os.urandom(10))
        return _last
