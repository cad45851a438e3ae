"""Identifiers: time-ordered UUID version 7, built from values passed in.

Owns the bit layout of RFC 9562 UUIDv7 (48-bit Unix milliseconds, version 7, 12 bits
``rand_a``, variant ``10``, 62 bits ``rand_b``). Pure: the clock reading and the random
bytes are arguments; ``golem_shell.new_id`` supplies them. Also the run tag that the call
ids a run mints carry (``run_tag``).
"""

from __future__ import annotations

import hashlib
import uuid

__all__ = ["next_uuid7", "run_tag", "uuid7", "uuid7_unix_ms"]

_RAND_BITS = 74
_RAND_MASK = (1 << _RAND_BITS) - 1
_MAX_MS = (1 << 48) - 1


def _assemble(unix_ms: int, rand: int) -> str:
    rand_a = (rand >> 62) & 0xFFF
    rand_b = rand & ((1 << 62) - 1)
    value = (unix_ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return str(uuid.UUID(int=value))


def _payload(unix_ms: int, rand_bytes: bytes) -> int:
    if not 0 <= unix_ms <= _MAX_MS:
        raise ValueError(f"unix_ms must fit in 48 bits, got {unix_ms}")
    if len(rand_bytes) < 10:
        raise ValueError(f"uuid7 needs at least 10 random bytes, got {len(rand_bytes)}")
    return int.from_bytes(rand_bytes[:10], "big") & _RAND_MASK


def uuid7(unix_ms: int, rand_bytes: bytes) -> str:
    """A UUIDv7 string for the millisecond ``unix_ms`` and 10 bytes of randomness.

    Total over valid input, deterministic: the same arguments give the same id.

    Raises:
        ValueError: ``unix_ms`` does not fit in 48 bits or fewer than 10 bytes were given.
    """
    return _assemble(unix_ms, _payload(unix_ms, rand_bytes))


def uuid7_unix_ms(id_: str) -> int:
    """The millisecond timestamp of a UUIDv7 string."""
    return uuid.UUID(id_).int >> 80


def next_uuid7(previous: str | None, unix_ms: int, rand_bytes: bytes) -> str:
    """A UUIDv7 strictly greater than ``previous`` (RFC 9562 method 2, monotonic random).

    When the clock has moved past ``previous``'s millisecond, this is ``uuid7(unix_ms,
    rand_bytes)``. Otherwise (same millisecond, or a clock that stepped back) it keeps
    ``previous``'s millisecond and increments its random field by a random step of up
    to 2**32, so ids minted in a burst still sort in minting order and stay
    unguessable. Deterministic in its arguments.
    """
    if previous is None:
        return uuid7(unix_ms, rand_bytes)
    prev = uuid.UUID(previous).int
    prev_ms = prev >> 80
    if unix_ms > prev_ms:
        return uuid7(unix_ms, rand_bytes)
    prev_rand = (((prev >> 64) & 0xFFF) << 62) | (prev & ((1 << 62) - 1))
    step = 1 + (_payload(0, rand_bytes) & 0xFFFFFFFF)
    rand = prev_rand + step
    if rand > _RAND_MASK:  # the millisecond is exhausted: borrow the next one
        return _assemble(min(prev_ms + 1, _MAX_MS), rand & _RAND_MASK)
    return _assemble(prev_ms, rand)


def run_tag(run_id: str) -> str:
    """The 12 hex digits that the call ids a run mints carry (``golem_<tag>_<n>_<index>``
    for a call the model sent without an id): the start of the SHA-256 of the run id.
    48 bits: two runs of one conversation share a tag about once in 10**14 pairs, and
    minted ids stay well within OpenAI's 40 characters. Total and deterministic.
    """
    return hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
