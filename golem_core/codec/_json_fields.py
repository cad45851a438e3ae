"""The field table of the JSON codec: every key golem writes, in one place.

Owns the one description of ``Message`` JSON that every path of the codec reads: the
reference decoder (``_json_reference.py``) interprets it; the fast decoder and both
encoders (``_json_compiled.py``) are compiled from it at import. A record (a message,
a usage, each part type) is a class and its fields in the order they are written; a
field is its JSON key, its attribute, and its kind. Its default is the attribute's
own (``attrs``) unless the row says otherwise (``parts`` is required in JSON, a call's
``id`` is optional); a field without one is required. The rules:

- a required field that is absent is "required field is missing";
- an optional field that is absent reads as the attribute's default; JSON ``null``
  reads as absent for the kinds whose ``nullable`` is true, and is an error otherwise;
- on encode a field at its default is omitted (``None``: ``is None``; ``False`` and
  ``0``: falsy), unless ``always`` says it is always written; required fields are
  always written;
- decode checks fields in table order, so the first error reported is the first
  wrong field in the written order, then the unknown fields.

Adding a field to a ``Message`` (or a usage, or a part) is one line here, beside the
attribute on the class; the import check below refuses a class attribute that has no
row (other than ``extra``).
"""

from __future__ import annotations

import enum
from typing import Any, Final

import attrs
from attrs import frozen

from golem_core._messages import (
    DataPart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    URLPart,
    Usage,
)

__all__ = [
    "MESSAGE",
    "NO_DEFAULT",
    "PART_RECORDS",
    "USAGE",
    "Field",
    "Kind",
    "Record",
]


class Kind(enum.Enum):
    """What a field's JSON value is, and so how each path reads and writes it.

    ``nullable``: whether JSON ``null`` reads as an absent field.
    """

    ROLE = enum.auto()
    """``Role``: one of its string values."""
    PARTS = enum.auto()
    """``tuple[Part, ...]``: an array of part objects, each dispatched on ``type``."""
    STR = enum.auto()
    """``str``; ``null`` is an error."""
    OPTIONAL_STR = enum.auto()
    """``str | None``; ``null`` is absent."""
    FLAG = enum.auto()
    """``bool``, written only when true; ``null`` is an error."""
    TIMESTAMP = enum.auto()
    """``datetime | None`` as ISO 8601 text (``datetime.isoformat``)."""
    COUNT = enum.auto()
    """A non-negative ``int`` (``int | None`` when the default is ``None``)."""
    USAGE = enum.auto()
    """``Usage | None``: a usage object."""
    PART_KIND = enum.auto()
    """``PartKind``: ``image``, ``audio``, ``video`` or ``document``."""
    BASE64 = enum.auto()
    """``bytes`` as standard base64 text."""

    @property
    def nullable(self) -> bool:
        """Whether JSON ``null`` reads as the field being absent."""
        return self in _NULLABLE


_NULLABLE: Final = frozenset({Kind.OPTIONAL_STR, Kind.TIMESTAMP, Kind.COUNT, Kind.USAGE})


class _NoDefault(enum.Enum):
    NO_DEFAULT = enum.auto()
    FROM_CLASS = enum.auto()


NO_DEFAULT: Final = _NoDefault.NO_DEFAULT
"""The default of a required field."""


@frozen
class Field:
    """One JSON key of a record.

    ``default``: what an absent field reads as, when JSON and the class disagree
    (``NO_DEFAULT``: required in JSON although the class has a default); by default
    the attribute's own. ``shared``: the fast decoder shares equal strings of this
    field within one decode (tool names, ids of runs and conversations, model names
    repeat across messages). ``always``: written even at its default (a call's
    ``arguments``).
    """

    key: str
    attr: str
    kind: Kind
    default: Any = attrs.field(default=_NoDefault.FROM_CLASS, kw_only=True)
    shared: bool = attrs.field(default=False, kw_only=True)
    always: bool = attrs.field(default=False, kw_only=True)


@frozen
class Record:
    """A class and its fields in the order they are written.

    ``tag`` is a part's ``type`` (``None`` for a message and a usage); ``defaults``,
    ``known`` and ``not_null`` are derived: each field's default (``NO_DEFAULT`` when
    required), every key this version reads (the tag's ``type`` included), and the keys
    whose JSON ``null`` is an error (their kind is not ``nullable``).
    """

    cls: type
    fields: tuple[Field, ...]
    tag: str | None = None
    defaults: tuple[Any, ...] = attrs.field(init=False)
    known: frozenset[str] = attrs.field(init=False)
    not_null: tuple[str, ...] = attrs.field(init=False)

    @defaults.default
    def _defaults(self) -> tuple[Any, ...]:
        by_name = {a.name: a for a in attrs.fields(self.cls)}
        missing = set(by_name) - {"extra"} - {f.attr for f in self.fields}
        if missing:
            raise TypeError(f"{self.cls.__name__}: no JSON field for {sorted(missing)}")
        if "extra" not in by_name:
            raise TypeError(f"{self.cls.__name__} has no 'extra' attribute")
        out: list[Any] = []
        for f in self.fields:
            if f.default is not _NoDefault.FROM_CLASS:
                out.append(f.default)
                continue
            default = by_name[f.attr].default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                raise TypeError(f"{self.cls.__name__}.{f.attr}: a factory default")
            out.append(NO_DEFAULT if default is attrs.NOTHING else default)
        return tuple(out)

    @known.default
    def _known(self) -> frozenset[str]:
        keys = {f.key for f in self.fields}
        return frozenset(keys | {"type"} if self.tag is not None else keys)

    @not_null.default
    def _not_null(self) -> tuple[str, ...]:
        return tuple(f.key for f in self.fields if not f.kind.nullable)


# -- the table ----------------------------------------------------------------------

MESSAGE: Final = Record(
    Message,
    (
        Field("role", "role", Kind.ROLE),
        Field("parts", "parts", Kind.PARTS, default=NO_DEFAULT),
        Field("toolCallId", "tool_call_id", Kind.OPTIONAL_STR),
        Field("toolName", "tool_name", Kind.OPTIONAL_STR, shared=True),
        Field("failed", "failed", Kind.FLAG),
        Field("runId", "run_id", Kind.OPTIONAL_STR, shared=True),
        Field("conversationId", "conversation_id", Kind.OPTIONAL_STR, shared=True),
        Field("createdAt", "created_at", Kind.TIMESTAMP),
        Field("model", "model", Kind.OPTIONAL_STR, shared=True),
        Field("usage", "usage", Kind.USAGE),
        Field("finishReason", "finish_reason", Kind.OPTIONAL_STR, shared=True),
        Field("provider", "provider", Kind.OPTIONAL_STR, shared=True),
        Field("endpoint", "endpoint", Kind.OPTIONAL_STR, shared=True),
        Field("askedModel", "asked_model", Kind.OPTIONAL_STR, shared=True),
    ),
)

USAGE: Final = Record(
    Usage,
    (
        Field("inputTokens", "input_tokens", Kind.COUNT),
        Field("outputTokens", "output_tokens", Kind.COUNT),
        Field("cacheReadTokens", "cache_read_tokens", Kind.COUNT),
        Field("cacheWriteTokens", "cache_write_tokens", Kind.COUNT),
        Field("reasoningTokens", "reasoning_tokens", Kind.COUNT),
    ),
)

PART_RECORDS: Final[tuple[Record, ...]] = (
    Record(TextPart, (Field("text", "text", Kind.STR),), "text"),
    Record(
        ToolCallPart,
        (
            Field("id", "id", Kind.OPTIONAL_STR, default=None),
            Field("name", "name", Kind.STR, shared=True),
            Field("arguments", "arguments", Kind.STR, always=True),
        ),
        "tool_call",
    ),
    Record(
        ThinkingPart,
        (
            Field("text", "text", Kind.STR),
            Field("signature", "signature", Kind.OPTIONAL_STR),
            Field("redacted", "redacted", Kind.FLAG),
        ),
        "thinking",
    ),
    Record(
        URLPart,
        (
            Field("url", "url", Kind.STR),
            Field("kind", "kind", Kind.PART_KIND),
            Field("mediaType", "media_type", Kind.OPTIONAL_STR),
        ),
        "url",
    ),
    Record(
        DataPart,
        (
            Field("data", "data", Kind.BASE64),
            Field("kind", "kind", Kind.PART_KIND),
            Field("mediaType", "media_type", Kind.STR),
        ),
        "data",
    ),
)
"""The known part types, most frequent first (the fast paths test them in this order).
``UnknownPart`` (any other ``type``) has no row: its fields are all kept as unknown."""
