"""The message contract: roles, parts, messages and usage.

Owns the canonical, provider-neutral shape of a conversation. Every type here is a
frozen, slotted attrs class with tuple fields: equal and hashable by value, never
mutated (change one with ``attrs.evolve``). No default reads the clock or mints an id;
identity and timestamps are passed in by whoever creates the message.

Serialization lives apart, in ``_json.py``; these classes know nothing about JSON
except ``extra``: fields a newer golem wrote that this one does not know, kept as
``(key, json_text)`` pairs so that decode then encode loses nothing.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any, Literal, TypeAlias

import attrs
from attrs import field, frozen

__all__ = [
    "DataPart",
    "Extra",
    "Message",
    "Part",
    "PartKind",
    "Price",
    "Role",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "URLPart",
    "UnknownPart",
    "Usage",
    "calls_of",
]

Extra: TypeAlias = tuple[tuple[str, str], ...]
"""Unknown JSON fields kept verbatim: ``(key, json_text)`` pairs in their original order."""

PartKind: TypeAlias = Literal["image", "audio", "video", "document"]
"""What a URL or data part holds."""


class Role(enum.StrEnum):
    """Who speaks a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@frozen
class TextPart:
    """Plain text."""

    text: str
    extra: Extra = field(default=(), kw_only=True, repr=False)


@frozen
class ThinkingPart:
    """A model's reasoning, replayed to the provider that produced it.

    ``signature`` is the provider's opaque proof of the block (Anthropic ``signature``).
    A redacted block (``redacted=True``) carries the provider's encrypted payload in
    ``text``; it is never shown to a person and is sent back verbatim.
    """

    text: str
    signature: str | None = field(default=None, kw_only=True)
    redacted: bool = field(default=False, kw_only=True)
    extra: Extra = field(default=(), kw_only=True, repr=False)


@frozen
class URLPart:
    """Media named by a URL: an image, audio, video or document."""

    url: str
    kind: PartKind
    media_type: str | None = field(default=None, kw_only=True)
    extra: Extra = field(default=(), kw_only=True, repr=False)


@frozen
class DataPart:
    """Media carried inline as bytes (base64 in JSON)."""

    data: bytes = field(repr=lambda b: f"<{len(b)} bytes>")
    kind: PartKind
    media_type: str
    extra: Extra = field(default=(), kw_only=True, repr=False)


@frozen
class ToolCallPart:
    """A model's request to call a tool.

    ``arguments`` holds the bytes exactly as the model sent them; they are never parsed
    into the type, because a stream that died mid-arguments leaves invalid JSON that is
    still evidence. ``id`` is the provider's call id; a call without one cannot be
    paired with a result.
    """

    id: str | None
    name: str
    arguments: str = "{}"
    extra: Extra = field(default=(), kw_only=True, repr=False)

    @property
    def arguments_object(self) -> dict[str, object] | None:
        """The arguments parsed as a JSON object, or ``None`` when they are not one.

        Empty arguments (how some providers stream a call without parameters) are ``{}``.
        Not standard JSON (NaN, a number out of a float's range, lone surrogates) or
        nested deeper than ``MAX_ARGUMENT_DEPTH`` levels is not an object: no tool needs
        it, and no provider request could carry it. Parsed once per part and cached;
        every call returns a fresh copy, so changing it never changes the part (or what
        is sent later).
        """
        parsed = self._parsed_arguments
        return None if parsed is None else copy_json(parsed)

    @cached_property
    def _parsed_arguments(self) -> dict[str, object] | None:
        """The cached parse behind ``arguments_object`` and ``arguments_valid``: shared,
        never handed out."""
        text = self.arguments
        if not text.strip(" \t\n\r"):  # JSON's whitespace only ("\xa0" is not JSON's)
            return {}
        plain = type(text) is str
        try:  # json.loads, without building a decoder on every call
            value = (
                _ARGUMENTS_DECODER.decode(text)
                if plain
                else json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
            )
        except (ValueError, RecursionError):
            return None
        if type(value) is not dict or nests_deeper(value, text, MAX_ARGUMENT_DEPTH):
            return None
        if plain and text.isascii() and "\\u" not in text:
            return value  # no escape and no non-ASCII character: no lone surrogate either
        try:  # lone surrogates cannot be sent as UTF-8: treat them as not an object
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return None
        return value

    @property
    def arguments_valid(self) -> bool:
        """Whether the arguments are a JSON object (``False``: truncated or malformed)."""
        return self._parsed_arguments is not None


def copy_json(value: Any) -> Any:
    """A deep copy of parsed JSON: new dicts and lists, shared immutable scalars."""
    if type(value) is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [copy_json(v) for v in value]
    return value


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not standard JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # 1e400 is an infinity: no more standard than Infinity
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


MAX_ARGUMENT_DEPTH = 128
"""The deepest nesting of call arguments used as an object (deeper is sent verbatim)."""


def nests_deeper(value: object, text: str, limit: int) -> bool:
    """Whether parsed JSON ``value`` nests deeper than ``limit`` levels; linear, and free
    when ``text`` (its JSON) has too few brackets to nest that deep."""
    if text.count("{") + text.count("[") <= limit:
        return False
    level: list[object] = [value]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[object] = []
        for v in level:
            children = v.values() if type(v) is dict else v if type(v) is list else ()
            below.extend(c for c in children if type(c) is dict or type(c) is list)
        level = below
    return False


_ARGUMENTS_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


@frozen
class UnknownPart:
    """A part of a ``type`` this version does not know, kept so that it survives storage.

    Providers never see it: wire encoders skip unknown parts.
    """

    type: str
    extra: Extra = field(default=())


Part: TypeAlias = TextPart | ThinkingPart | URLPart | DataPart | ToolCallPart | UnknownPart
"""Any part of a message."""


def _add_optional(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@frozen
class Usage:
    """Token usage with one meaning for every provider.

    ``input_tokens`` counts every prompt token processed, cached or not;
    ``output_tokens`` every generated token, reasoning included. The cache and reasoning
    figures are ``None`` where the provider does not report them. Usages add up.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    extra: Extra = field(default=(), kw_only=True, repr=False)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=_add_optional(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=_add_optional(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens=_add_optional(self.reasoning_tokens, other.reasoning_tokens),
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


def _rate(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e12:
        raise ValueError(
            f"Price.{name} must be a finite number of at least 0 (per million tokens),"
            f" got {value!r}"
        )
    return float(value)


def _input_rate(value: object) -> float:
    return _rate(value, "input")


def _output_rate(value: object) -> float:
    return _rate(value, "output")


def _read_rate(value: object) -> float | None:
    return None if value is None else _rate(value, "cache_read")


def _write_rate(value: object) -> float | None:
    return None if value is None else _rate(value, "cache_write")


@frozen
class Price:
    """What a model charges, per million tokens, in one currency (the caller's: golem
    keeps no price table, prices change).

    Args:
        input: per million input tokens that were not read from or written to a cache.
        output: per million output tokens (reasoning included).
        cache_read: per million input tokens read from the provider's cache (``None``:
            charged as ``input``).
        cache_write: per million input tokens written to the cache (``None``: as ``input``).
    """

    input: float = field(converter=_input_rate)
    output: float = field(converter=_output_rate)
    cache_read: float | None = field(default=None, kw_only=True, converter=_read_rate)
    cache_write: float | None = field(default=None, kw_only=True, converter=_write_rate)

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` at this price. ``usage.input_tokens`` counts cached tokens
        too (``Usage``'s one meaning), so the cached ones are taken out of the input and
        charged at their own rate. Total: a count too large for a float (an answer may
        report any integer) costs ``inf`` at a non-zero rate, so a cost limit fires (as it
        does where such counts of opposite signs would make the sum ``nan``)."""
        read = usage.cache_read_tokens or 0
        write = usage.cache_write_tokens or 0
        plain = max(usage.input_tokens - read - write, 0)
        read_rate = self.input if self.cache_read is None else self.cache_read
        write_rate = self.input if self.cache_write is None else self.cache_write
        total = (
            _charge(plain, self.input)
            + _charge(read, read_rate)
            + _charge(write, write_rate)
            + _charge(usage.output_tokens, self.output)
        )
        return math.inf if math.isnan(total) else total / 1_000_000


def _charge(tokens: int, rate: float) -> float:
    """``tokens * rate``, saturated: ``inf`` (signed as the count) where the count is past
    a float's range (``int * float`` raises ``OverflowError`` there), ``0`` at a zero
    rate or count."""
    if not tokens or not rate:
        return 0.0
    try:
        return tokens * rate
    except OverflowError:
        return math.inf if tokens > 0 else -math.inf


def _as_parts(parts: Iterable[Part]) -> tuple[Part, ...]:
    return parts if type(parts) is tuple else tuple(parts)


def _as_role(role: Role | str) -> Role:
    """A ``Role``; its plain string value (``"assistant"``) is accepted as that role."""
    if type(role) is Role:
        return role
    try:
        return Role(role)
    except ValueError:
        raise ValueError(
            f"unknown message role {role!r}; expected one of system, user, assistant, tool"
        ) from None


@frozen(repr=False)
class Message:
    """One message of a conversation.

    A tool result is a ``tool`` message: ``tool_call_id`` and ``tool_name`` name the call
    it answers, ``parts`` carry the evidence, and ``failed`` marks a definitive failure.
    ``run_id`` and ``conversation_id`` are stamped on the messages a run adds; ``model``,
    ``usage`` and ``finish_reason`` describe the model turn that produced an assistant
    message. ``provider`` and ``endpoint`` (with ``model``) are the origin of an assistant
    message: the adapter that decoded it (``"anthropic"``, ``"openai"``,
    ``"openai-responses"``, ``"google"``) and the host of the API that issued it. Every
    provider artifact of its parts (signatures, redacted thinking, reasoning items,
    thought signatures, call ids) belongs to that origin; ``None`` (history written
    before ADR 0085) means unknown, and each artifact goes back only to the wire format
    that wrote it, as before (``golem_core.port_history``). ``asked_model`` is the model
    its adapter asked for (JSON ``askedModel``; an alias may be answered under another
    name); ``None`` when not recorded.
    """

    role: Role = field(converter=_as_role)
    parts: tuple[Part, ...] = field(default=(), converter=_as_parts)
    tool_call_id: str | None = field(default=None, kw_only=True)
    tool_name: str | None = field(default=None, kw_only=True)
    failed: bool = field(default=False, kw_only=True)
    run_id: str | None = field(default=None, kw_only=True)
    conversation_id: str | None = field(default=None, kw_only=True)
    created_at: datetime | None = field(default=None, kw_only=True)
    model: str | None = field(default=None, kw_only=True)
    usage: Usage | None = field(default=None, kw_only=True)
    finish_reason: str | None = field(default=None, kw_only=True)
    provider: str | None = field(default=None, kw_only=True)
    endpoint: str | None = field(default=None, kw_only=True)
    asked_model: str | None = field(default=None, kw_only=True)
    extra: Extra = field(default=(), kw_only=True, repr=False)

    def __repr__(self) -> str:
        """Only the fields that differ from their defaults, so histories read at a glance."""
        shown = [f"{self.role.value!r}", f"parts={self.parts!r}"]
        for f in _MESSAGE_OPTIONAL:
            value = getattr(self, f.name)
            if value != f.default and f.name != "extra":
                shown.append(f"{f.name}={value!r}")
        return f"Message({', '.join(shown)})"

    # -- named constructors for the common shapes ---------------------------------

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message holding ``text``."""
        return cls(Role.SYSTEM, (TextPart(text),))

    @classmethod
    def user(cls, text: str, *media: URLPart | DataPart) -> Message:
        """A user message: ``text`` first, then any media parts."""
        return cls(Role.USER, (TextPart(text), *media))

    @classmethod
    def assistant(
        cls,
        text: str | None = None,
        *,
        tool_calls: Iterable[ToolCallPart] = (),
        thinking: Iterable[ThinkingPart] = (),
    ) -> Message:
        """An assistant message: thinking, then ``text`` (if any), then tool calls."""
        parts: list[Part] = [*thinking]
        if text is not None:
            parts.append(TextPart(text))
        parts.extend(tool_calls)
        return cls(Role.ASSISTANT, tuple(parts))

    @classmethod
    def tool_result(
        cls,
        call_id: str | None,
        tool_name: str | None,
        content: str | Sequence[Part],
        *,
        failed: bool = False,
    ) -> Message:
        """A tool message answering call ``call_id`` of tool ``tool_name``."""
        parts = (TextPart(content),) if isinstance(content, str) else tuple(content)
        return cls(Role.TOOL, parts, tool_call_id=call_id, tool_name=tool_name, failed=failed)

    # -- reading ----------------------------------------------------------------

    @property
    def text(self) -> str:
        """The concatenated text of the text parts (thinking excluded)."""
        return "".join(p.text for p in self.parts if type(p) is TextPart)

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The tool calls of this message, in order."""
        return tuple(p for p in self.parts if type(p) is ToolCallPart)

    def with_ids(self, run_id: str | None, conversation_id: str | None) -> Message:
        """A copy stamped with the given run and conversation identifiers."""
        return attrs.evolve(self, run_id=run_id, conversation_id=conversation_id)


_MESSAGE_OPTIONAL = attrs.fields(Message)[2:]


def calls_of(message: Message) -> list[ToolCallPart]:
    """The calls of a turn that need a result: id'd, one per distinct id, in call order."""
    seen: set[str] = set()
    calls: list[ToolCallPart] = []
    for p in message.parts:
        if type(p) is ToolCallPart and p.id is not None and p.id not in seen:
            seen.add(p.id)
            calls.append(p)
    return calls
