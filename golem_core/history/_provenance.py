"""Signed provenance: which messages of a history a server wrote, and whether they are intact.

Owns signing and verifying messages with a server-held key (HMAC-SHA256, standard
library only). A signed message carries ``"provenance": "v2.<base64url MAC>"`` as an
additive JSON field, kept in ``Message.extra`` (so every golem version stores it and
writes it back unchanged); every tool call of a signed assistant message carries its
own ``"provenance"`` field the same way, in the part's ``extra``. A message that stands in
two histories at once (what a run adds after its processor cut the window: the window and
the conversation as supplied, ADR 0091) carries one MAC per place, ``"v2.<MAC>.<MAC>"``,
and verifies where any of them does. A ``v2`` signature ends with the id of the key that
made it, ``".k=<key id>"`` (``signing_key_id``: a keyed digest that reveals nothing of the
key): when no key verifies a signature, the id tells a message signed with a key you did
not pass (``ProvenanceReport.unknown_key``) from one edited under the right key. The id is
the signer's claim, never a proof: it is not covered by the MAC, a forger can write any
id, and nothing trusts a message for it (such a message stays ``TAMPERED``).

What a ``v2`` MAC covers (ADR 0054, ADR 0068):

- a domain tag (``golem-provenance/2``) and what is signed (a message or a call);
- the run id and conversation id, length-prefixed (for a call: its message's);
- the message's place: a chain digest over the messages before it (user and assistant
  messages as sanitizing leaves them: system and tool messages, URL parts
  ``is_safe_url`` rejects, signatures and messages left holding nothing do not count);
  for a ``tool`` message, the place of the call it answers (the latest call with its
  id before it) and that call's digest. A fork sharing the prefix verifies; a message
  moved into another history or to another place does not;
- the canonical JSON bytes of the message (or call) without its own ``provenance``
  field (``canonical_bytes``): a function of the JSON value only, so it survives round
  trips, other JSON libraries, and versions that know fields this one keeps as unknown.
  A message's canonical form includes its calls' ``provenance`` fields.

``v1`` signatures (golem before ADR 0068, and ``sign_message`` without ``before``) cover
the same minus the place: they still verify (``ProvenanceReport.unbound`` lists them),
but ``signed_calls`` and ``sanitize_history(key=...)`` trust only ``v2``.

Over 600 lines because it is one concept: the MAC, the place it binds and every reader of
it (verify, vouch, carry) share the private walk and canonical form; split, they would
import each other's internals.

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
from attrs import field, frozen

from golem_core._messages import Extra, Message, Part, Role, ToolCallPart, URLPart
from golem_core.codec._json import unstructure_message, unstructure_part
from golem_core.history._history import _holds_nothing
from golem_core.history._urls import is_safe_url

__all__ = [
    "MIN_KEY_BYTES",
    "PROVENANCE_FIELD",
    "MessageProvenance",
    "ProvenanceReport",
    "SigningKeys",
    "canonical_bytes",
    "carry_signatures",
    "sign_message",
    "signed_calls",
    "signing_key_id",
    "signing_keys",
    "verify_call",
    "verify_history",
    "verify_message",
]

PROVENANCE_FIELD: Final = "provenance"
"""The JSON key of a signature, on a message and on a tool call part."""

MIN_KEY_BYTES: Final = 16
"""The shortest key accepted; use 32 random bytes (``secrets.token_bytes(32)``)."""

_V1: Final = "v1."
_V2: Final = "v2."
_TAG_V1: Final = b"golem-provenance/1\x00"
_TAG_V2: Final = b"golem-provenance/2\x00"
_MESSAGE: Final = b"message\x00"
_CALL: Final = b"call\x00"
_CHAIN_START: Final = hashlib.sha256(b"golem-provenance/2 chain").digest()
_UNWRITABLE: Final = hashlib.sha256(b"golem-provenance/2 unwritable").digest()
_KEY_ID: Final = "k="
_KEY_ID_TAG: Final = b"golem-provenance/2 key id"

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


def signing_key_id(key: bytes) -> str:
    """The id a ``v2`` signature gives for the key that made it (8 base64url characters).

    A keyed digest (HMAC-SHA256 of a fixed tag under ``key``, cut to 6 bytes): the same key
    always has the same id, and the id tells nothing about the key. Compare it with
    ``ProvenanceReport.key_ids`` to find which of your keys signed a message. Total and
    deterministic.

    Raises:
        ValueError: the key is not usable (see ``signing_keys``).
    """
    return _key_id(signing_keys(key)[0])


def _key_id(key: bytes) -> str:
    digest = hmac.new(key, _KEY_ID_TAG, hashlib.sha256).digest()[:6]
    return base64.urlsafe_b64encode(digest).decode("ascii")


def _named_key(signature: str | None) -> str | None:
    """The key id a ``v2`` signature names (its last segment, ``k=<id>``), else ``None``."""
    if not signature or not signature.startswith(_V2):
        return None
    last = signature.rsplit(".", 1)[-1]
    return last[len(_KEY_ID) :] if last.startswith(_KEY_ID) and len(last) > len(_KEY_ID) else None


class MessageProvenance(enum.StrEnum):
    """What ``verify_history`` found for one message."""

    SIGNED = "signed"
    """Signed by one of the keys and intact: every byte as the server wrote it (and, for
    a ``v2`` signature, in the place the server wrote it)."""
    UNSIGNED = "unsigned"
    """No signature at all (a client's message, or history from before signing)."""
    TAMPERED = "tampered"
    """A signature is present but does not verify under the keys given: edited, forged,
    stripped or moved, or signed with a key that was not given
    (``ProvenanceReport.unknown_key`` tells which, as far as the signature says)."""


@frozen
class ProvenanceReport:
    """Per-message verdicts of ``verify_history``, in history order.

    Attributes:
        verdicts: one ``MessageProvenance`` per message.
        key_indices: for each signed message the index (into the keys) of the key
            that verified it, else ``None``; an index above 0 means an older key.
        unbound: indices of signed messages whose signature is ``v1`` (made before
            ADR 0068, or by ``sign_message`` without ``before``): intact, but not bound
            to their place, so ``signed_calls`` and a keyed ``sanitize_history`` do not
            trust them.
        key_ids: for each message the key id its signature names (``signing_key_id``),
            else ``None`` (unsigned, ``v1``, or signed before signatures named their key).
        unknown_key: indices of tampered messages whose signature names a key that is
            none of the keys given: most likely signed with another key (a retired one,
            another server's, a test key), not edited; pass that key to verify them.
            Tampered all the same (the id is the signature's word, not a proof).
        given_key_ids: the ids of the keys given, in their order.
    """

    verdicts: tuple[MessageProvenance, ...]
    key_indices: tuple[int | None, ...]
    unbound: tuple[int, ...] = field(default=(), kw_only=True)
    key_ids: tuple[str | None, ...] = field(default=(), kw_only=True)
    unknown_key: tuple[int, ...] = field(default=(), kw_only=True)
    given_key_ids: tuple[str, ...] = field(default=(), kw_only=True)

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
        """Whether every message is signed and intact (``unbound`` ones included)."""
        return all(v is MessageProvenance.SIGNED for v in self.verdicts)

    def reason(self, index: int) -> str:
        """One sentence saying what was found for message ``index``, and why.

        Raises:
            IndexError: no message has that index.
        """
        verdict = self.verdicts[index]
        named = self.key_ids[index] if index < len(self.key_ids) else None
        if verdict is MessageProvenance.UNSIGNED:
            return "unsigned: the message carries no signature (a client's word)"
        if verdict is MessageProvenance.SIGNED:
            key = self.key_indices[index]
            which = "the newest key" if key == 0 else f"key {key} (an older one: re-sign it)"
            unbound = " (v1: not bound to its place)" if index in self.unbound else ""
            return f"signed with {which}, intact{unbound}"
        given = ", ".join(repr(k) for k in self.given_key_ids) or "none"
        if index in self.unknown_key:
            return (
                f"signed with a key you did not pass (its signature names key id {named!r};"
                f" the keys given have ids {given}): pass that key to verify it"
                " (the id is the signature's claim: until a key verifies it, trust nothing in it)"
            )
        if named is not None:
            return (
                f"tampered: signed with a key you passed (key id {named!r}) but edited, forged,"
                " stripped or moved since: its signature does not verify here"
            )
        return (
            "tampered: its signature verifies under none of the keys given: edited, forged,"
            " stripped or moved (or signed with another key by a golem whose signatures"
            " do not name their key)"
        )

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


def _digest(canonical: bytes | None) -> bytes:
    return _UNWRITABLE if canonical is None else hashlib.sha256(canonical).digest()


# -- places: where a message stands in its history (v2) ---------------------------------


def _chain_link(message: Message) -> bytes | None:
    """What ``message`` adds to the chain of the messages after it, or ``None``: user and
    assistant messages as sanitizing leaves them (no unsafe URL part, no ``provenance``
    field; holding nothing, they count for nothing). System messages (sanitize drops
    them) and ``tool`` messages (repair moves them) never count, so sanitizing and
    repairing a history never moves a signed message."""
    role = message.role
    if role is Role.SYSTEM or role is Role.TOOL:
        return None
    parts: list[Part] = []
    changed = False
    for p in message.parts:
        if type(p) is URLPart and not is_safe_url(p.url):
            changed = True
            continue
        if type(p) is ToolCallPart:
            stripped = _without_field(p.extra)
            if stripped is not p.extra:
                p = attrs.evolve(p, extra=stripped)
                changed = True
        parts.append(p)
    if _holds_nothing(parts):
        return None
    view = attrs.evolve(message, parts=tuple(parts)) if changed else message
    return _digest(canonical_bytes(view))


class _Walk:
    """The place of each message while a history is read in order (private, mutable):
    ``chain`` digests the counting messages read so far; ``calls`` maps a call id to the
    chain just after the latest call carrying it, and that call's digest."""

    __slots__ = ("calls", "chain")

    def __init__(self) -> None:
        self.chain = _CHAIN_START
        self.calls: dict[str, bytes] = {}

    def place(self, message: Message) -> bytes:
        """The place ``message`` takes after what was read: a ``tool`` message answering a
        call stands where that call stands (repair may move it within its call's block),
        any other message after the chain."""
        if message.role is Role.TOOL and message.tool_call_id is not None:
            answered = self.calls.get(message.tool_call_id)
            if answered is not None:
                return b"\x01" + answered
        return b"\x00" + self.chain

    def read(self, message: Message) -> None:
        link = _chain_link(message)
        if link is not None:
            self.chain = hashlib.sha256(self.chain + link).digest()
        if message.role is Role.ASSISTANT:
            for p in message.parts:
                if type(p) is ToolCallPart and p.id is not None:
                    self.calls[p.id] = self.chain + _digest(_canonical_call(p))


def _place_after(before: Sequence[Message], message: Message) -> bytes:
    walk = _Walk()
    for m in before:
        walk.read(m)
    return walk.place(message)


def _context(run_id: str | None, conversation_id: str | None) -> bytes:
    out = b""
    for value in (run_id, conversation_id):
        if value is None:
            out += b"\x00"
        else:
            raw = value.encode("utf-8", "surrogatepass")
            out += b"\x01" + len(raw).to_bytes(8, "big") + raw
    return out


def _mac(key: bytes, kind: bytes, context: bytes, place: bytes | None, canonical: bytes) -> str:
    """A ``v2`` MAC when ``place`` is given, else a ``v1`` MAC (which has no place)."""
    if place is None:
        data = _TAG_V1 + kind + context + canonical
        version = _V1
    else:
        data = _TAG_V2 + kind + context + place + canonical
        version = _V2
    digest = hmac.new(key, data, hashlib.sha256).digest()
    return version + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _signature(
    key: bytes, kind: bytes, context: bytes, places: tuple[bytes, ...] | None, canonical: bytes
) -> str:
    """``v1.<MAC>`` without places; ``v2.<MAC>.k=<key id>`` for one place, and
    ``v2.<MAC>.<MAC>...k=<key id>`` for a message that stands in several histories at once
    (ADR 0091): one MAC per distinct place, in order (base64url has no ``.`` and no ``=``),
    then the id of the key (``signing_key_id``)."""
    if places is None:
        return _mac(key, kind, context, None, canonical)
    distinct = tuple(dict.fromkeys(places))
    macs = (_mac(key, kind, context, p, canonical)[len(_V2) :] for p in distinct)
    return _V2 + ".".join((*macs, _KEY_ID + _key_id(key)))


def _with_field(extra: Extra, signature: str) -> Extra:
    return (*_without_field(extra), (PROVENANCE_FIELD, json.dumps(signature)))


# -- signing ----------------------------------------------------------------------------


def _sign(message: Message, key: bytes, place: bytes | None) -> Message:
    """``message`` signed in one place (``v2``), or ``v1`` without one."""
    return _sign_places(message, key, None if place is None else (place,))


def _sign_places(message: Message, key: bytes, places: tuple[bytes, ...] | None) -> Message:
    """``message`` signed in every one of ``places`` (``v2``), or ``v1`` without places."""
    context = _context(message.run_id, message.conversation_id)
    if message.role is Role.ASSISTANT and any(type(p) is ToolCallPart for p in message.parts):
        parts: list[Part] = []
        for p in message.parts:
            if type(p) is ToolCallPart:
                canonical = _canonical_call(p)
                if canonical is not None:
                    signature = _signature(key, _CALL, context, places, canonical)
                    p = attrs.evolve(p, extra=_with_field(p.extra, signature))
            parts.append(p)
        message = attrs.evolve(message, parts=tuple(parts))
    canonical = canonical_bytes(message)
    if canonical is None:
        return message
    signature = _signature(key, _MESSAGE, context, places, canonical)
    return attrs.evolve(message, extra=_with_field(message.extra, signature))


def sign_message(
    message: Message,
    keys: SigningKeys,
    *,
    before: Sequence[Message] | None = None,
    also_before: Sequence[Sequence[Message]] = (),
) -> Message:
    """``message`` signed with the newest key: its calls first, then the message itself.

    The MACs bind the message's run and conversation ids (a call: its message's) and,
    given ``before``, its place (``v2``): the messages before it in its history, and for
    a ``tool`` message the call it answers, so it verifies only where it stands and in
    any fork that shares that prefix. Without ``before`` the signature is ``v1``: bound
    to the ids only, trusted by neither ``signed_calls`` nor a keyed ``sanitize_history``
    (fine for a message that is the client's word anyway, such as a prompt).
    Only the tool calls of an assistant message are calls (a ``ToolCallPart`` in another
    role is content, signed as part of its message). A message that cannot be written
    as JSON (see ``canonical_bytes``) is returned unsigned. Total, deterministic and
    idempotent: signing a signed message again in the same place gives the same message.

    Args:
        message: the message to sign (stamp its ids first: they are bound).
        keys: the server's keys, newest first; the first signs.
        before: the messages before it in its history (system messages may be
            included or not: they never count).
        also_before: other histories the message stands after at the same time, each
            given as the messages before it there: it then carries one MAC per distinct
            place and verifies in each (ADR 0091). A run whose processor cut the window
            it sees signs what it adds after the window and after the conversation as
            supplied, so both the window it returns and a store holding the whole
            conversation verify.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``), or ``also_before``
            is given without ``before``.
    """
    key = signing_keys(keys)[0]
    if before is None:
        if also_before:
            raise ValueError("sign_message: also_before needs before (the message's place)")
        return _sign(message, key, None)
    places = (_place_after(before, message), *(_place_after(h, message) for h in also_before))
    return _sign_places(message, key, places)


# -- verifying --------------------------------------------------------------------------


def _verified_by(
    signature: str,
    keys: tuple[bytes, ...],
    kind: bytes,
    context: bytes,
    place: bytes | None,
    canonical: bytes,
) -> int | None:
    """The index of the key that made ``signature`` (a ``v2`` one: any of its MACs) for
    ``place``, or ``None``."""
    if place is None:
        candidates = [signature]
    else:
        candidates = [
            _V2 + mac for mac in signature[len(_V2) :].split(".") if not mac.startswith(_KEY_ID)
        ]
    found: int | None = None
    for i, key in enumerate(keys):  # every key and MAC is tried: the time does not say which
        expected = _mac(key, kind, context, place, canonical)
        if any(hmac.compare_digest(c, expected) for c in candidates) and found is None:
            found = i
    return found


def _check_message(
    message: Message, keys: tuple[bytes, ...], place: bytes
) -> tuple[MessageProvenance, int | None, bool]:
    """The verdict, the index of the key that verified, and whether the signature is
    bound to ``place`` (``v2``)."""
    signature = _field_of(message.extra)
    if signature is None:
        marked = any(
            type(p) is ToolCallPart and _field_of(p.extra) is not None for p in message.parts
        )
        return (MessageProvenance.TAMPERED if marked else MessageProvenance.UNSIGNED), None, False
    canonical = canonical_bytes(message)
    if canonical is None or not signature.isascii():
        return MessageProvenance.TAMPERED, None, False
    context = _context(message.run_id, message.conversation_id)
    at = None if signature.startswith(_V1) else place  # v1: no place
    index = _verified_by(signature, keys, _MESSAGE, context, at, canonical)
    if index is None:
        return MessageProvenance.TAMPERED, None, False
    return MessageProvenance.SIGNED, index, at is not None


def verify_message(
    message: Message, keys: SigningKeys, *, before: Sequence[Message] = ()
) -> MessageProvenance:
    """Whether ``message`` is signed by one of ``keys`` and intact, unsigned, or tampered.

    A ``v2`` signature verifies only in the place it was made: ``before`` is the history
    before the message (by default none: the message opens its history). A message
    counts as unsigned only when neither it nor any of its calls carries a signature: a
    call signature without a message signature means one was stripped. Total and
    deterministic.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    return _check_message(message, signing_keys(keys), _place_after(before, message))[0]


def verify_call(
    message: Message, call: ToolCallPart, keys: SigningKeys, *, before: Sequence[Message] = ()
) -> bool:
    """Whether ``call``, as it sits in ``message``, carries a valid signature.

    The call's signature is checked against the run and conversation ids of
    ``message`` (the assistant message that holds it) and, for ``v2``, against the place
    of ``message`` after ``before``: a signed call moved into another run's message, or
    into another history, does not verify. Total and deterministic.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    return _call_verifies(message, call, signing_keys(keys), _place_after(before, message))


def _call_verifies(
    message: Message,
    call: ToolCallPart,
    keys: tuple[bytes, ...],
    place: bytes,
    *,
    bound: bool = False,
) -> bool:
    signature = _field_of(call.extra)
    if not signature or not signature.isascii() or message.role is not Role.ASSISTANT:
        return False
    if bound and not signature.startswith(_V2):
        return False
    canonical = _canonical_call(call)
    if canonical is None:
        return False
    context = _context(message.run_id, message.conversation_id)
    at = None if signature.startswith(_V1) else place  # v1: no place
    return _verified_by(signature, keys, _CALL, context, at, canonical) is not None


def _checked(
    history: Sequence[Message], keys: tuple[bytes, ...]
) -> list[tuple[MessageProvenance, int | None, bool, bytes]]:
    """Every message's verdict, key index, boundness and place, in one pass."""
    walk = _Walk()
    out: list[tuple[MessageProvenance, int | None, bool, bytes]] = []
    for m in history:
        place = walk.place(m)
        out.append((*_check_message(m, keys, place), place))
        walk.read(m)
    return out


def verify_history(history: Sequence[Message], keys: SigningKeys) -> ProvenanceReport:
    """Verify every message of ``history``: signed and intact, unsigned, or tampered.

    Each ``v2`` signature is checked in its place: the messages before it in this
    history, and for a result the call it answers (ADR 0068).

    Args:
        history: any history (e.g. decoded from a client's JSON).
        keys: the server's keys, newest first; a message signed by any of them verifies.

    Returns:
        A ``ProvenanceReport`` with one verdict per message, the key id each signature
        names, and which tampered messages name a key that was not given
        (``unknown_key``: a wrong or retired key, not an edit); ``report.reason(i)`` says
        it in a sentence. Total and deterministic.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    usable = signing_keys(keys)
    checked = _checked(history, usable)
    given = tuple(_key_id(k) for k in usable)
    named = tuple(_named_key(_field_of(m.extra)) for m in history)
    return ProvenanceReport(
        verdicts=tuple(c[0] for c in checked),
        key_indices=tuple(c[1] for c in checked),
        unbound=tuple(
            i for i, c in enumerate(checked) if c[0] is MessageProvenance.SIGNED and not c[2]
        ),
        key_ids=named,
        unknown_key=tuple(
            i
            for i, (c, k) in enumerate(zip(checked, named, strict=True))
            if c[0] is MessageProvenance.TAMPERED and k is not None and k not in given
        ),
        given_key_ids=given,
    )


def _vouched(
    history: Sequence[Message],
    keys: tuple[bytes, ...],
    checked: list[tuple[MessageProvenance, int | None, bool, bytes]],
) -> frozenset[str]:
    counts: dict[str, int] = {}
    for m in history:
        if m.role is Role.ASSISTANT:
            for c in m.tool_calls:
                if c.id is not None:
                    counts[c.id] = counts.get(c.id, 0) + 1
    out: set[str] = set()
    for m, (verdict, _, bound, place) in zip(history, checked, strict=True):
        if m.role is not Role.ASSISTANT or verdict is not MessageProvenance.SIGNED or not bound:
            continue
        out.update(
            c.id
            for c in m.tool_calls
            if c.id is not None
            and counts[c.id] == 1
            and _call_verifies(m, c, keys, place, bound=True)
        )
    return frozenset(out)


def signed_calls(history: Sequence[Message], keys: SigningKeys) -> frozenset[str]:
    """The ids of the calls a server can vouch for from the history alone.

    A call qualifies when its own ``v2`` signature verifies, the assistant message
    holding it is signed (``v2``) and intact in its place in ``history`` (so a signed
    call copied into another conversation, or to another place, does not qualify), and
    its id is carried by no other call of the history (a second copy of a signed call
    is a replay). This is what lets a stateless server resume a paused run without
    storing the ids it issued; see ADR 0054 and 0068 for what it cannot prove (that this
    is the newest copy of the history). Total and deterministic.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    usable = signing_keys(keys)
    return _vouched(history, usable, _checked(history, usable))


def carry_signatures(
    supplied: Sequence[Message], processed: Sequence[Message], keys: SigningKeys
) -> tuple[Message, ...]:
    """``processed`` with the server's own signatures carried to the places it moved them.

    A history processor (``trim_history``, ``summarize_history``, ...) cuts or replaces
    messages, which moves every message after the cut to another place (ADR 0068), so
    their ``v2`` signatures stop verifying. This signs again, in its place in
    ``processed`` and with the newest key, each message that is one of ``supplied`` (the
    same object, held once: processors pass kept messages through) and was signed
    (``v2``) and intact in its place there, when its place changed. Nothing else is
    touched: a message a client wrote, a signed message that did not verify where it
    stood (a replayed copy) or a rewritten one keeps its bytes (signing it would launder
    it), and a message whose place did not change keeps its signature (and its key).

    Returns ``processed`` re-signed where needed (the same tuple when nothing moved):
    ``supplied`` is the history a run received, ``processed`` what its processor (then
    dropping system messages and repair) made of it. Total and deterministic.

    Raises:
        ValueError: the keys are not usable (see ``signing_keys``).
    """
    usable = signing_keys(keys)
    places: dict[int, bytes] = {}  # by identity: a copy of a signed message is not it
    seen: set[int] = set()
    for m, (verdict, _, bound, place) in zip(supplied, _checked(supplied, usable), strict=True):
        if id(m) in seen:  # the same object twice: neither place is vouched for
            places.pop(id(m), None)
        elif verdict is MessageProvenance.SIGNED and bound:
            places[id(m)] = place
        seen.add(id(m))
    walk = _Walk()
    out: list[Message] = []
    changed = False
    for m in processed:
        place = walk.place(m)
        was = places.pop(id(m), None) if places else None  # once: a second copy is not it
        if was is not None and was != place:
            m = _sign(m, usable[0], place)
            changed = True
        out.append(m)
        walk.read(m)
    if not changed and isinstance(processed, tuple):
        return processed
    return tuple(out)
