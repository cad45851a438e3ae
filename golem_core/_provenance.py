"""Signed provenance: which messages of a history a server wrote, and whether they are intact.

Owns signing and verifying messages with a server-held key (HMAC-SHA256, standard
library only). A signed message carries ``"provenance": "v1.<base64url MAC>"`` as an
additive JSON field, kept in ``Message.extra`` (so every golem version stores it and
writes it back unchanged); every tool call of a signed assistant message carries its
own ``"provenance"`` field the same way, in the part's ``extra``.

What a MAC covers (ADR 0054):

- a domain tag (``golem-provenance/1``) and what is signed (a message or a call);
- the run id and conversation id, length-prefixed (for a call: its message's);
- the canonical JSON bytes of the message (or call) without its own ``provenance``
  field: the object ``encode_message`` writes, serialized with sorted keys, no
  whitespace, ASCII escapes, no NaN. The canonical form depends on the JSON value only,
  so it survives decode/encode round trips, key reordering by another JSON library, and
  versions that know fields this one keeps as unknown. A message's canonical form
  includes its calls' ``provenance`` fields.

Keys come newest first (rotation): signing uses the first, verification accepts any.
Every function here is total and deterministic; a key must be ``bytes`` of at least
``MIN_KEY_BYTES`` (a ``ValueError`` otherwise: that is a programming error, not data).
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Final

import attrs
from attrs import frozen

from golem_core._history import INTERRUPTED_RESULT_TEXT
from golem_core._json import unstructure_message, unstructure_part
from golem_core._messages import Extra, Message, Part, Role, ToolCallPart

__all__ = [
    "MIN_KEY_BYTES",
    "PROVENANCE_FIELD",
    "MessageProvenance",
    "ProvenanceReport",
    "SigningKeys",
    "canonical_bytes",
    "sign_message",
    "signed_calls",
    "signing_keys",
    "verify_call",
    "verify_history",
    "verify_message",
]

PROVENANCE_FIELD: Final = "provenance"
"""The JSON key of a signature, on a message and on a tool call part."""

MIN_KEY_BYTES: Final = 16
"""The shortest key accepted; use 32 random bytes (``secrets.token_bytes(32)``)."""

_VERSION: Final = "v1."
_TAG: Final = b"golem-provenance/1\x00"
_MESSAGE: Final = b"message\x00"
_CALL: Final = b"call\x00"

SigningKeys = bytes | Sequence[bytes]
"""One key, or several newest first: the first signs, any verifies."""


def signing_keys(keys: SigningKeys) -> tuple[bytes, ...]:
    """The keys as a tuple, newest first.

    Raises:
        ValueError: no key, a key that is not ``bytes``, or one shorter than
            ``MIN_KEY_BYTES``.
    """
    found: tuple[object, ...] = (keys,) if isinstance(keys, bytes | bytearray) else tuple(keys)
    if not found:
        raise ValueError("signing keys: at least one key is needed")
    out: list[bytes] = []
    for i, key in enumerate(found):
        if not isinstance(key, bytes | bytearray):
            raise ValueError(f"signing key {i} is {type(key).__name__}, not bytes")
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(
                f"signing key {i} has {len(key)} bytes; at least {MIN_KEY_BYTES} are needed"
                " (use secrets.token_bytes(32))"
            )
        out.append(bytes(key))
    return tuple(out)


class MessageProvenance(enum.StrEnum):
    """What ``verify_history`` found for one message."""

    SIGNED = "signed"
    """Signed by one of the keys and intact: every byte as the server wrote it."""
    UNSIGNED = "unsigned"
    """No signature at all (a client's message, or history from before signing)."""
    TAMPERED = "tampered"
    """A signature is present but does not verify: edited, forged, stripped or moved."""


@frozen
class ProvenanceReport:
    """Per-message verdicts of ``verify_history``, in history order.

    Attributes:
        verdicts: one ``MessageProvenance`` per message.
        key_indices: for each signed message the index (into the keys) of the key
            that verified it, else ``None``; an index above 0 means an older key.
    """

    verdicts: tuple[MessageProvenance, ...]
    key_indices: tuple[int | None, ...]

    @property
    def signed(self) -> tuple[int, ...]:
        """Indices of signed, intact messages."""
        return self._where(MessageProvenance.SIGNED)

    @property
    def unsigned(self) -> tuple[int, ...]:
        """Indices of messages without a signature."""
        return self._where(MessageProvenance.UNSIGNED)

    @property
    def tampered(self) -> tuple[int, ...]:
        """Indices of messages whose signature does not verify."""
        return self._where(MessageProvenance.TAMPERED)

    @property
    def intact(self) -> bool:
        """Whether every message is signed and intact."""
        return all(v is MessageProvenance.SIGNED for v in self.verdicts)

    def _where(self, verdict: MessageProvenance) -> tuple[int, ...]:
        return tuple(i for i, v in enumerate(self.verdicts) if v is verdict)


# -- canonical bytes ------------------------------------------------------------------


def _without_field(extra: Extra) -> Extra:
    if not any(k == PROVENANCE_FIELD for k, _ in extra):
        return extra
    return tuple((k, v) for k, v in extra if k != PROVENANCE_FIELD)


def _field_of(extra: Extra) -> str | None:
    """The signature text in ``extra``, or ``None``; a non-string value counts as none of ours."""
    for k, text in extra:
        if k == PROVENANCE_FIELD:
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                return ""
            return value if isinstance(value, str) else ""
    return None


def _dumps(value: object) -> bytes | None:
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
        )
    except (ValueError, TypeError, RecursionError):
        return None
    return text.encode("ascii")


def canonical_bytes(message: Message) -> bytes | None:
    """The canonical JSON bytes of ``message`` without its own ``provenance`` field.

    The object ``encode_message`` writes, serialized with sorted keys, no whitespace,
    ASCII escapes and no NaN; the calls' ``provenance`` fields are included. ``None``
    for a message that cannot be written as standard JSON at all (an unknown field
    holding text that is not JSON, or NaN): such a message cannot be stored either.
    Total and deterministic.
    """
    stripped = _without_field(message.extra)
    if stripped is not message.extra:
        message = attrs.evolve(message, extra=stripped)
    try:
        value = unstructure_message(message)
    except (ValueError, TypeError, RecursionError):
        return None
    return _dumps(value)


def _canonical_call(call: ToolCallPart) -> bytes | None:
    stripped = _without_field(call.extra)
    if stripped is not call.extra:
        call = attrs.evolve(call, extra=stripped)
    try:
        value = unstructure_part(call)
    except (ValueError, TypeError, RecursionError):
        return None
    return _dumps(value)


def _context(run_id: str | None, conversation_id: str | None) -> bytes:
    out = b""
    for value in (run_id, conversation_id):
        if value is None:
            out += b"\x00"
        else:
            raw = value.encode("utf-8", "surrogatepass")
            out += b"\x01" + len(raw).to_bytes(8, "big") + raw
    return out


def _mac(key: bytes, kind: bytes, context: bytes, canonical: bytes) -> str:
    digest = hmac.new(key, _TAG + kind + context + canonical, hashlib.sha256).digest()
    return _VERSION + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _with_field(extra: Extra, signature: str) -> Extra:
    return (*_without_field(extra), (PROVENANCE_FIELD, json.dumps(signature)))


# -- signing ----------------------------------------------------------------------------


def sign_message(message: Message, keys: SigningKeys) -> Message:
    """``message`` signed with the newest key: its calls first, then the message itself.

    The MACs bind the message's run and conversation ids (a call: its message's).
    Only the tool calls of an assistant message are calls (a ``ToolCallPart`` in another
    role is content, signed as part of its message). A message that cannot be written
    as JSON (see ``canonical_bytes``) is returned unsigned. Total, deterministic and
    idempotent: signing a signed message again gives the same message.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    key = signing_keys(keys)[0]
    context = _context(message.run_id, message.conversation_id)
    if message.role is Role.ASSISTANT and any(type(p) is ToolCallPart for p in message.parts):
        parts: list[Part] = []
        for p in message.parts:
            if type(p) is ToolCallPart:
                canonical = _canonical_call(p)
                if canonical is not None:
                    p = attrs.evolve(
                        p, extra=_with_field(p.extra, _mac(key, _CALL, context, canonical))
                    )
            parts.append(p)
        message = attrs.evolve(message, parts=tuple(parts))
    canonical = canonical_bytes(message)
    if canonical is None:
        return message
    return attrs.evolve(
        message, extra=_with_field(message.extra, _mac(key, _MESSAGE, context, canonical))
    )


# -- verifying --------------------------------------------------------------------------


def _verified_by(
    signature: str, keys: tuple[bytes, ...], kind: bytes, context: bytes, canonical: bytes
) -> int | None:
    found: int | None = None
    for i, key in enumerate(keys):  # every key is tried: the time does not say which
        if hmac.compare_digest(signature, _mac(key, kind, context, canonical)) and found is None:
            found = i
    return found


def _check_message(
    message: Message, keys: tuple[bytes, ...]
) -> tuple[MessageProvenance, int | None]:
    signature = _field_of(message.extra)
    if signature is None:
        marked = any(
            type(p) is ToolCallPart and _field_of(p.extra) is not None for p in message.parts
        )
        return (MessageProvenance.TAMPERED if marked else MessageProvenance.UNSIGNED), None
    canonical = canonical_bytes(message)
    if canonical is None or not signature.isascii():
        return MessageProvenance.TAMPERED, None
    context = _context(message.run_id, message.conversation_id)
    index = _verified_by(signature, keys, _MESSAGE, context, canonical)
    if index is None:
        return MessageProvenance.TAMPERED, None
    return MessageProvenance.SIGNED, index


def verify_message(message: Message, keys: SigningKeys) -> MessageProvenance:
    """Whether ``message`` is signed by one of ``keys`` and intact, unsigned, or tampered.

    A message counts as unsigned only when neither it nor any of its calls carries a
    signature: a call signature without a message signature means one was stripped.
    Total and deterministic.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    return _check_message(message, signing_keys(keys))[0]


def verify_call(message: Message, call: ToolCallPart, keys: SigningKeys) -> bool:
    """Whether ``call``, as it sits in ``message``, carries a valid signature.

    The call's signature is checked against the run and conversation ids of
    ``message`` (the assistant message that holds it), so a signed call moved into
    another run's message does not verify. Total and deterministic.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    return _call_verifies(message, call, signing_keys(keys))


def _call_verifies(message: Message, call: ToolCallPart, keys: tuple[bytes, ...]) -> bool:
    signature = _field_of(call.extra)
    if not signature or not signature.isascii() or message.role is not Role.ASSISTANT:
        return False
    canonical = _canonical_call(call)
    if canonical is None:
        return False
    context = _context(message.run_id, message.conversation_id)
    return _verified_by(signature, keys, _CALL, context, canonical) is not None


def verify_history(history: Sequence[Message], keys: SigningKeys) -> ProvenanceReport:
    """Verify every message of ``history``: signed and intact, unsigned, or tampered.

    Args:
        history: any history (e.g. decoded from a client's JSON).
        keys: the server's keys, newest first; a message signed by any of them verifies.

    Returns:
        A ``ProvenanceReport`` with one verdict per message. Total and deterministic.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    usable = signing_keys(keys)
    checked = [_check_message(m, usable) for m in history]
    return ProvenanceReport(
        verdicts=tuple(v for v, _ in checked), key_indices=tuple(k for _, k in checked)
    )


def signed_calls(history: Sequence[Message], keys: SigningKeys) -> frozenset[str]:
    """The ids of the calls a server can vouch for from the history alone.

    A call qualifies when its own signature verifies, the assistant message holding it
    is signed and intact, and its id is carried by no other call of the history (a
    second copy of a signed call is a replay). This is what lets a stateless server
    resume a paused run without storing the ids it issued; see ADR 0054 for what it
    cannot prove (that this is the newest copy of the history). Total and deterministic.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    usable = signing_keys(keys)
    counts: dict[str, int] = {}
    for m in history:
        if m.role is Role.ASSISTANT:
            for c in m.tool_calls:
                if c.id is not None:
                    counts[c.id] = counts.get(c.id, 0) + 1
    out: set[str] = set()
    for m in history:
        if m.role is not Role.ASSISTANT or not m.tool_calls:
            continue
        calls = [c for c in m.tool_calls if c.id is not None and counts[c.id] == 1]
        if not calls or _check_message(m, usable)[0] is not MessageProvenance.SIGNED:
            continue
        out.update(c.id for c in calls if c.id is not None and _call_verifies(m, c, usable))
    return frozenset(out)


def _keyed_view(
    history: Sequence[Message], keys: SigningKeys
) -> tuple[frozenset[int], frozenset[int], frozenset[str]]:
    """What a keyed ``sanitize_history`` needs to know of ``history`` (ADR 0056).

    Returns:
        ``(forged, own, vouched)``: the indices of the ``tool`` messages to drop (not
        signed and intact, the neutral no-result result excepted: it carries no claim
        and no stamps by design, and repair would synthesize the very same message);
        the indices of signed, intact assistant and tool messages (the server's own
        bytes, passed through unchanged); and ``signed_calls(history, keys)``. Total
        and deterministic.
    """
    usable = signing_keys(keys)
    forged: set[int] = set()
    own: set[int] = set()
    for i, m in enumerate(history):
        if m.role is not Role.TOOL and m.role is not Role.ASSISTANT:
            continue
        if _check_message(m, usable)[0] is MessageProvenance.SIGNED:
            own.add(i)
        elif m.role is Role.TOOL and m != Message.tool_result(
            m.tool_call_id, m.tool_name, INTERRUPTED_RESULT_TEXT
        ):
            forged.add(i)
    return frozenset(forged), frozenset(own), signed_calls(history, usable)
