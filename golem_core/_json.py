"""The JSON codec of the message contract, on one configured cattrs converter.

Owns every wire rule of ``Message`` JSON. ``make_converter()`` returns a fresh
``cattrs.Converter`` with golem's hooks registered by ``configure_converter``; the
module-level functions use the same hooks directly. The rules:

- keys are camelCase: ``toolCallId``, ``toolName``, ``runId``, ``conversationId``,
  ``createdAt``, ``mediaType``, ``finishReason`` and, in usage, ``inputTokens``,
  ``outputTokens``, ``cacheReadTokens``, ``cacheWriteTokens``, ``reasoningTokens``;
- a part's discriminator is ``"type"``: ``text``, ``thinking``, ``url``, ``data``
  (bytes as standard base64), ``tool_call``;
- additive only: fields are only ever added. Unknown fields of a message, a part or a
  usage, and parts of an unknown ``type``, are kept and written back unchanged, after
  the known fields;
- absent optional fields and fields at their default are omitted (``failed`` appears
  only when true); ``role`` and ``parts`` are always written;
- ``createdAt`` is ISO 8601 (``datetime.isoformat``);
- encoding is deterministic (same value, same bytes), compact, UTF-8, and standard JSON:
  NaN, Infinity and numbers beyond a float's range (``1e400``) are refused at decode;
  strings that cannot be UTF-8 (lone surrogates) are written as ``\\u`` escapes;
- decoding never raises: it returns ``Failure(DecodeError)`` naming the JSON path
  (``[3].parts[1].url``) and what was wrong.
"""

from __future__ import annotations

import base64
import binascii
import json
import json.encoder
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final, NoReturn, TypeAlias, cast, get_args

import cattrs
from attrs import frozen
from returns.result import Failure, Result, Success

from golem_core._messages import (
    DataPart,
    Extra,
    Message,
    Part,
    PartKind,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    Usage,
    _plain_message,
    _plain_text,
)

__all__ = [
    "DecodeError",
    "configure_converter",
    "decode_history",
    "decode_message",
    "encode_history",
    "encode_message",
    "history_from_jsonable",
    "history_to_jsonable",
    "make_converter",
]

JSONObject: TypeAlias = dict[str, Any]


@frozen
class DecodeError:
    """Why bytes could not be decoded as history: where (a JSON path) and what."""

    path: str
    reason: str

    @property
    def message(self) -> str:
        """A one-line explanation for a person."""
        where = self.path or "the top level"
        return f"invalid history JSON at {where}: {self.reason}"

    def __str__(self) -> str:
        return self.message


class _Invalid(Exception):
    """Internal: raised inside the hooks, turned into ``DecodeError`` at the boundary."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _fail(path: str, key: str, expected: str, value: object) -> NoReturn:
    raise _Invalid(f"{path}.{key}" if path else key, f"expected {expected}, got {_describe(value)}")


# -- structuring (JSON value -> contract) -------------------------------------------

_ROLES: Final = {r.value: r for r in Role}
_KINDS: Final[frozenset[str]] = frozenset(get_args(PartKind))

_MESSAGE_KEYS: Final = frozenset(
    {
        "role",
        "parts",
        "toolCallId",
        "toolName",
        "failed",
        "runId",
        "conversationId",
        "createdAt",
        "model",
        "usage",
        "finishReason",
    }
)
_USAGE_KEYS: Final = frozenset(
    {"inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens"}
)
_PART_KEYS: Final = {
    "text": frozenset({"type", "text"}),
    "thinking": frozenset({"type", "text", "signature", "redacted"}),
    "url": frozenset({"type", "url", "kind", "mediaType"}),
    "data": frozenset({"type", "data", "kind", "mediaType"}),
    "tool_call": frozenset({"type", "id", "name", "arguments"}),
}


MAX_UNKNOWN_DEPTH: Final = 128
"""The deepest nesting an unknown field may hold. Deeper is refused at decode: encoding
recurses (in ``json``'s C code) as deep as the value, on top of the caller's stack, so
an unbounded depth that decodes at one stack depth could fail to encode at another."""


def _extra(d: JSONObject, known: frozenset[str], path: str = "") -> Extra:
    if d.keys() <= known:
        return ()
    unknown = d.keys() - known
    out: list[tuple[str, str]] = []
    for k, v in d.items():
        if k not in unknown:
            continue
        try:
            text = json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError:  # NaN or an infinity (a value built in Python): not standard JSON
            raise _Invalid(path, f"unknown field {k!r} holds NaN or an infinite number") from None
        if text.count("[") + text.count("{") > MAX_UNKNOWN_DEPTH and _nests_deeper(v):
            raise _Invalid(
                f"{path}.{k}" if path else k,
                f"an unknown field nests deeper than {MAX_UNKNOWN_DEPTH} levels",
            )
        out.append((k, text))
    return tuple(out)


def _nests_deeper(value: object) -> bool:
    """Whether ``value`` nests deeper than ``MAX_UNKNOWN_DEPTH``; iterative and linear."""
    level: list[object] = [value]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_UNKNOWN_DEPTH:
            return True
        below: list[object] = []
        for v in level:
            children = v.values() if type(v) is dict else v if type(v) is list else ()
            below.extend(c for c in children if type(c) is dict or type(c) is list)
        level = below
    return False


def _opt_str(d: JSONObject, key: str, path: str) -> str | None:
    v = d.get(key)
    if v is None or type(v) is str:
        return v
    _fail(path, key, "a string", v)


def _req_str(d: JSONObject, key: str, path: str) -> str:
    v = d.get(key)
    if type(v) is str:
        return v
    if v is None and key not in d:
        raise _Invalid(f"{path}.{key}" if path else key, "required field is missing")
    _fail(path, key, "a string", v)


def _opt_int(d: JSONObject, key: str, path: str) -> int | None:
    v = d.get(key)
    if v is None or (type(v) is int and v >= 0):
        return v
    _fail(path, key, "a non-negative integer", v)


def _kind(d: JSONObject, path: str) -> PartKind:
    v = d.get("kind")
    if type(v) is str and v in _KINDS:
        return cast(PartKind, v)
    if v is None and "kind" not in d:
        raise _Invalid(f"{path}.kind", "required field is missing")
    raise _Invalid(f"{path}.kind", f"expected one of {sorted(_KINDS)}, got {v!r:.60}")


def structure_usage(d: object, path: str = "usage") -> Usage:
    """Build a ``Usage`` from its JSON object."""
    if type(d) is not dict:
        _fail("", path, "an object", d)
    return Usage(
        input_tokens=_opt_int(d, "inputTokens", path) or 0,
        output_tokens=_opt_int(d, "outputTokens", path) or 0,
        cache_read_tokens=_opt_int(d, "cacheReadTokens", path),
        cache_write_tokens=_opt_int(d, "cacheWriteTokens", path),
        reasoning_tokens=_opt_int(d, "reasoningTokens", path),
        extra=_extra(d, _USAGE_KEYS, path),
    )


def structure_part(d: object, path: str = "part") -> Part:
    """Build a part from its JSON object, dispatching on ``type``."""
    if type(d) is not dict:
        _fail("", path, "an object", d)
    kind = d.get("type")
    if kind == "text":
        return TextPart(_req_str(d, "text", path), extra=_extra(d, _PART_KEYS["text"], path))
    if kind == "tool_call":
        args = d.get("arguments", "{}")
        if type(args) is not str:
            _fail(path, "arguments", "a string", args)
        return ToolCallPart(
            _opt_str(d, "id", path),
            _req_str(d, "name", path),
            args,
            extra=_extra(d, _PART_KEYS["tool_call"], path),
        )
    if kind == "thinking":
        redacted = d.get("redacted", False)
        if type(redacted) is not bool:
            _fail(path, "redacted", "a boolean", redacted)
        return ThinkingPart(
            _req_str(d, "text", path),
            signature=_opt_str(d, "signature", path),
            redacted=redacted,
            extra=_extra(d, _PART_KEYS["thinking"], path),
        )
    if kind == "url":
        return URLPart(
            _req_str(d, "url", path),
            _kind(d, path),
            media_type=_opt_str(d, "mediaType", path),
            extra=_extra(d, _PART_KEYS["url"], path),
        )
    if kind == "data":
        encoded = _req_str(d, "data", path)
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise _Invalid(f"{path}.data", "not valid standard base64") from None
        return DataPart(
            data,
            _kind(d, path),
            _req_str(d, "mediaType", path),
            extra=_extra(d, _PART_KEYS["data"], path),
        )
    if type(kind) is str and kind:
        return UnknownPart(kind, _extra(d, frozenset({"type"}), path))
    if kind is None and "type" not in d:
        raise _Invalid(f"{path}.type", "required field is missing")
    _fail(path, "type", "a non-empty string", kind)


def structure_message(d: object, path: str = "") -> Message:
    """Build a ``Message`` from its JSON object; errors name paths below ``path``."""
    if type(d) is not dict:
        raise _Invalid(path, f"expected an object, got {_describe(d)}")
    r = d.get("role")
    role = _ROLES.get(r) if type(r) is str else None
    if role is None:
        if r is None and "role" not in d:
            raise _Invalid(f"{path}.role" if path else "role", "required field is missing")
        raise _Invalid(
            f"{path}.role" if path else "role",
            f"unknown role {r!r:.60}; expected one of system, user, assistant, tool",
        )
    raw_parts = d.get("parts")
    if type(raw_parts) is not list:
        if raw_parts is None and "parts" not in d:
            raise _Invalid(f"{path}.parts" if path else "parts", "required field is missing")
        _fail(path, "parts", "an array", raw_parts)
    parts = tuple([structure_part(p, f"{path}.parts[{j}]") for j, p in enumerate(raw_parts)])
    failed = d.get("failed", False)
    if type(failed) is not bool:
        _fail(path, "failed", "a boolean", failed)
    created = d.get("createdAt")
    created_at: datetime | None = None
    if created is not None:
        if type(created) is not str:
            _fail(path, "createdAt", "an ISO 8601 timestamp string", created)
        try:
            created_at = datetime.fromisoformat(created)
        except ValueError:
            raise _Invalid(
                f"{path}.createdAt" if path else "createdAt",
                f"not an ISO 8601 timestamp: {created!r:.60}",
            ) from None
    raw_usage = d.get("usage")
    return Message(
        role,
        parts,
        tool_call_id=_opt_str(d, "toolCallId", path),
        tool_name=_opt_str(d, "toolName", path),
        failed=failed,
        run_id=_opt_str(d, "runId", path),
        conversation_id=_opt_str(d, "conversationId", path),
        created_at=created_at,
        model=_opt_str(d, "model", path),
        usage=None if raw_usage is None else structure_usage(raw_usage, f"{path}.usage"),
        finish_reason=_opt_str(d, "finishReason", path),
        extra=_extra(d, _MESSAGE_KEYS, path),
    )


# -- the fast path of structuring ----------------------------------------------------
#
# Decoding is the hot path of every stored conversation. The functions above are the
# reference: they check in the order errors are reported and build a JSON path for
# each. The fast path below builds the same values for well-formed input without
# building paths; it gives up (raises anything at all) on whatever it does not
# recognize at a glance, and the caller then runs the reference functions from the
# start, which either build the very same value or report the first error exactly.
# Short strings that repeat across messages (tool names, ids of runs and
# conversations, model names) are shared within one decode through ``names``.

_TOOL_CALL_KEYS: Final = _PART_KEYS["tool_call"]


def _fast_part(d: object, names: dict[str, str]) -> Part:
    if type(d) is dict:
        kind = d.get("type")
        if kind == "text":
            text = d.get("text")
            if type(text) is str and len(d) == 2:
                return TextPart(text)
        elif kind == "tool_call":
            call_id = d.get("id")
            name = d.get("name")
            arguments = d.get("arguments", "{}")
            if (
                type(name) is str
                and type(arguments) is str
                and (call_id is None or type(call_id) is str)
                and d.keys() <= _TOOL_CALL_KEYS
            ):
                return ToolCallPart(call_id, names.setdefault(name, name), arguments)
    return structure_part(d)


def _shared(value: object, names: dict[str, str]) -> str | None:
    if value is None:
        return None
    if type(value) is str:
        return names.setdefault(value, value)
    raise TypeError  # the reference path reports it


def _fast_message(d: object, names: dict[str, str]) -> Message:
    if type(d) is not dict:
        return structure_message(d)
    r = d.get("role")
    role = _ROLES.get(r) if type(r) is str else None
    raw_parts = d.get("parts")
    if role is None or type(raw_parts) is not list:
        return structure_message(d)
    built: list[Part] = []
    for p in raw_parts:  # text parts inline: most parts are text
        if type(p) is dict and len(p) == 2 and p.get("type") == "text":
            text = p.get("text")
            if type(text) is str:
                built.append(_plain_text(text))
                continue
        built.append(_fast_part(p, names))
    parts = tuple(built)
    size = len(d)
    if size == 2:  # role and parts only
        return _plain_message(role, parts, None, None)
    get = d.get
    call_id = get("toolCallId")
    tool_name = _shared(get("toolName"), names)
    if size == 4 and type(call_id) is str and tool_name is not None:  # a tool result
        return _plain_message(role, parts, call_id, tool_name)
    failed = get("failed", False)
    created = get("createdAt")
    raw_usage = get("usage")
    if (
        (call_id is not None and type(call_id) is not str)
        or type(failed) is not bool
        or (created is not None and type(created) is not str)
    ):
        raise TypeError  # the reference path reports it
    return Message(
        role,
        parts,
        tool_call_id=call_id,
        tool_name=tool_name,
        failed=failed,
        run_id=_shared(get("runId"), names),
        conversation_id=_shared(get("conversationId"), names),
        created_at=None if created is None else datetime.fromisoformat(created),
        model=_shared(get("model"), names),
        usage=None if raw_usage is None else structure_usage(raw_usage),
        finish_reason=_shared(get("finishReason"), names),
        extra=_extra(d, _MESSAGE_KEYS),
    )


_WHITESPACE: Final = re.compile(r"[ \t\n\r]+")  # JSON's whitespace, as ``json`` reads it
_SPACE_CHARS: Final = frozenset(" \t\n\r")


def _skip_space(text: str, i: int) -> int:
    match = _WHITESPACE.match(text, i)
    return i if match is None else match.end()


_WHOLE_PARSE_CHARS: Final = 1 << 20


def _fast_history(text: str) -> tuple[Message, ...] | None:
    """The history in ``text``, or ``None`` when the fast path gives up.

    Parses the top-level array one message at a time with the stdlib scanner and
    structures each message as soon as it is parsed, so that the JSON objects of the
    whole history never exist at once (peak memory: the text, the messages, and one
    message's objects). It accepts exactly what ``json.loads`` accepts, and gives up
    on anything unusual: the reference path then decides and explains.
    """
    if len(text) <= _WHOLE_PARSE_CHARS:  # small: parse at once, the scan loop costs more
        try:
            value = _DECODER.decode(text)
            if type(value) is not list:
                return None
            shared: dict[str, str] = {}
            return tuple([_fast_message(m, shared) for m in value])
        except Exception:  # anything unusual: the reference path decides, and explains
            return None
    i = _skip_space(text, 0)
    if not text.startswith("[", i):
        return None
    i = _skip_space(text, i + 1)
    out: list[Message] = []
    if text.startswith("]", i):
        i += 1
    else:
        scan = _SCAN_ONCE
        append = out.append
        names: dict[str, str] = {}
        try:  # an IndexError past the end, like any other surprise, means "give up"
            while True:
                value, i = scan(text, i)
                append(_fast_message(value, names))
                separator = text[i]
                if separator in _SPACE_CHARS:
                    i = _skip_space(text, i)
                    separator = text[i]
                i += 1
                if separator == "]":
                    break
                if separator != ",":
                    return None
                if text[i] in _SPACE_CHARS:
                    i = _skip_space(text, i)
        except Exception:  # anything unusual: the reference path decides, and explains
            return None
    if i != len(text) and _skip_space(text, i) != len(text):
        return None
    return tuple(out)


# -- unstructuring (contract -> JSON value) ---------------------------------------


def _put_extra(out: JSONObject, extra: Extra) -> JSONObject:
    for k, text in extra:
        if k not in out:
            out[k] = json.loads(text)
    return out


def unstructure_usage(u: Usage) -> JSONObject:
    """The JSON object of a ``Usage``."""
    out: JSONObject = {}
    if u.input_tokens:
        out["inputTokens"] = u.input_tokens
    if u.output_tokens:
        out["outputTokens"] = u.output_tokens
    if u.cache_read_tokens is not None:
        out["cacheReadTokens"] = u.cache_read_tokens
    if u.cache_write_tokens is not None:
        out["cacheWriteTokens"] = u.cache_write_tokens
    if u.reasoning_tokens is not None:
        out["reasoningTokens"] = u.reasoning_tokens
    return _put_extra(out, u.extra) if u.extra else out


def unstructure_part(p: Part) -> JSONObject:
    """The JSON object of a part."""
    out: JSONObject
    tp = type(p)
    if tp is TextPart:
        out = {"type": "text", "text": p.text}  # type: ignore[union-attr]
    elif tp is ToolCallPart:
        assert isinstance(p, ToolCallPart)
        out = {"type": "tool_call"}
        if p.id is not None:
            out["id"] = p.id
        out["name"] = p.name
        out["arguments"] = p.arguments
    elif tp is ThinkingPart:
        assert isinstance(p, ThinkingPart)
        out = {"type": "thinking", "text": p.text}
        if p.signature is not None:
            out["signature"] = p.signature
        if p.redacted:
            out["redacted"] = True
    elif tp is URLPart:
        assert isinstance(p, URLPart)
        out = {"type": "url", "url": p.url, "kind": p.kind}
        if p.media_type is not None:
            out["mediaType"] = p.media_type
    elif tp is DataPart:
        assert isinstance(p, DataPart)
        out = {
            "type": "data",
            "data": base64.b64encode(p.data).decode("ascii"),
            "kind": p.kind,
            "mediaType": p.media_type,
        }
    elif tp is UnknownPart:
        assert isinstance(p, UnknownPart)
        out = {"type": p.type}
    else:
        raise TypeError(f"not a message part: {p!r:.80}")
    return _put_extra(out, p.extra) if p.extra else out


def unstructure_message(m: Message) -> JSONObject:
    """The JSON object of a ``Message``."""
    out: JSONObject = {
        "role": m.role._value_,  # the plain str; ``.value`` is a slower descriptor
        "parts": [
            {"type": "text", "text": p.text}
            if type(p) is TextPart and not p.extra
            else unstructure_part(p)
            for p in m.parts
        ],
    }
    if m.tool_call_id is not None:
        out["toolCallId"] = m.tool_call_id
    if m.tool_name is not None:
        out["toolName"] = m.tool_name
    if m.failed:
        out["failed"] = True
    if m.run_id is not None:
        out["runId"] = m.run_id
    if m.conversation_id is not None:
        out["conversationId"] = m.conversation_id
    if m.created_at is not None:
        out["createdAt"] = m.created_at.isoformat()
    if m.model is not None:
        out["model"] = m.model
    if m.usage is not None:
        out["usage"] = unstructure_usage(m.usage)
    if m.finish_reason is not None:
        out["finishReason"] = m.finish_reason
    return _put_extra(out, m.extra) if m.extra else out


# -- the converter ------------------------------------------------------------------


def _hook(fn: Callable[[object, str], Any]) -> Callable[[object, type], Any]:
    def structure(value: object, _: type) -> Any:
        try:
            return fn(value, "")
        except _Invalid as e:
            raise ValueError(DecodeError(e.path, e.reason).message) from None

    return structure


def configure_converter(converter: cattrs.Converter) -> None:
    """Register golem's message hooks on ``converter`` (the rules in this module's header).

    After this, ``converter.unstructure(message)`` gives the JSON object of a message and
    ``converter.structure(obj, Message)`` builds one (raising ``ValueError`` with the path
    on bad input); the same holds for every part type, ``Part`` and ``Usage``.
    """
    converter.register_unstructure_hook(Message, unstructure_message)
    converter.register_unstructure_hook(Usage, unstructure_usage)
    for part_type in (TextPart, ThinkingPart, URLPart, DataPart, ToolCallPart, UnknownPart):
        converter.register_unstructure_hook(part_type, unstructure_part)
    converter.register_unstructure_hook(Part, unstructure_part)
    converter.register_structure_hook(Message, _hook(structure_message))
    converter.register_structure_hook(Usage, _hook(structure_usage))
    converter.register_structure_hook(Part, _hook(structure_part))


def make_converter() -> cattrs.Converter:
    """A new cattrs converter configured for the message contract."""
    converter = cattrs.Converter()
    configure_converter(converter)
    return converter


# -- bytes -------------------------------------------------------------------------


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not standard JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # inf - inf is NaN: 1e400 is no more standard than Infinity
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


_DECODER: Final = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_SCAN_ONCE: Final[Callable[[str, int], tuple[Any, int]]] = _DECODER.scan_once  # type: ignore[attr-defined]
"""``raw_decode`` without its wrapper: the value at an index and the index after it
(``StopIteration`` when there is none)."""
_COMPACT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ESCAPED: Final = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


_quote: Final = json.encoder.encode_basestring
"""The string encoder ``_COMPACT`` itself uses (``ensure_ascii=False``): same bytes."""


def _part_json(p: Part) -> str:
    tp = type(p)
    if tp is TextPart and not p.extra:
        return '{"type":"text","text":' + _quote(p.text) + "}"  # type: ignore[union-attr]
    if tp is ToolCallPart and not p.extra:
        assert isinstance(p, ToolCallPart)
        head = (
            '{"type":"tool_call",'
            if p.id is None
            else '{"type":"tool_call","id":' + _quote(p.id) + ","
        )
        return head + '"name":' + _quote(p.name) + ',"arguments":' + _quote(p.arguments) + "}"
    return _COMPACT.encode(unstructure_part(p))


def _written_message_json(m: Message) -> str:
    if m.extra:
        return _COMPACT.encode(unstructure_message(m))
    out = (
        '{"role":"'
        + m.role._value_
        + '","parts":['
        + ",".join([_part_json(p) for p in m.parts])
        + "]"
    )
    if m.tool_call_id is not None:
        out += ',"toolCallId":' + _quote(m.tool_call_id)
    if m.tool_name is not None:
        out += ',"toolName":' + _quote(m.tool_name)
    if m.failed:
        out += ',"failed":true'
    if m.run_id is not None:
        out += ',"runId":' + _quote(m.run_id)
    if m.conversation_id is not None:
        out += ',"conversationId":' + _quote(m.conversation_id)
    if m.created_at is not None:
        out += ',"createdAt":' + _quote(m.created_at.isoformat())
    if m.model is not None:
        out += ',"model":' + _quote(m.model)
    if m.usage is not None:
        out += ',"usage":' + _COMPACT.encode(unstructure_usage(m.usage))
    if m.finish_reason is not None:
        out += ',"finishReason":' + _quote(m.finish_reason)
    return out + "}"


def _message_json(m: Message) -> str:
    """The compact JSON text of ``m``: exactly ``_COMPACT.encode(unstructure_message(m))``.

    Encoding is the other hot path. The common shapes are written straight to text,
    without the intermediate dicts (twice as fast); anything unusual (unknown fields,
    a value of an unexpected type) is encoded by the reference path, which gives the
    very same text or raises as it always did.
    """
    try:
        return _written_message_json(m)
    except Exception:
        return _COMPACT.encode(unstructure_message(m))


def _text(data: bytes | bytearray | memoryview | str) -> str | DecodeError:
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            return DecodeError("", f"not UTF-8 (byte {e.start}: {e.reason})")
    return text[1:] if text.startswith("\ufeff") else text


def _parse(text: str) -> Result[Any, DecodeError]:
    try:
        return Success(_DECODER.decode(text))
    except json.JSONDecodeError as e:
        return Failure(DecodeError("", f"not JSON: {e.msg} (line {e.lineno}, column {e.colno})"))
    except ValueError as e:  # NaN/Infinity, or an integer too large to convert
        return Failure(DecodeError("", f"not standard JSON: {e}"))
    except RecursionError:
        return Failure(DecodeError("", "JSON nested too deeply"))


def _reference_history(value: object) -> Result[tuple[Message, ...], DecodeError]:
    if type(value) is not list:
        return Failure(DecodeError("", f"expected an array of messages, got {_describe(value)}"))
    try:
        return Success(tuple([structure_message(d, f"[{i}]") for i, d in enumerate(value)]))
    except _Invalid as e:
        return Failure(DecodeError(e.path, e.reason))
    except RecursionError:
        return Failure(DecodeError("", "JSON nested too deeply"))


def history_to_jsonable(history: Sequence[Message]) -> list[JSONObject]:
    """The JSON value (a list of objects) of a history."""
    return [unstructure_message(m) for m in history]


def history_from_jsonable(value: object) -> Result[tuple[Message, ...], DecodeError]:
    """Build a history from an already parsed JSON value (a list of message objects)."""
    if type(value) is list:
        names: dict[str, str] = {}
        try:
            return Success(tuple([_fast_message(d, names) for d in value]))
        except Exception:  # anything unusual: the reference path decides, and explains
            pass
    return _reference_history(value)


def encode_history(history: Sequence[Message]) -> bytes:
    """Encode a history as compact, deterministic UTF-8 JSON (an array of messages).

    Total and deterministic: the same history always gives the same bytes.
    """
    try:
        return ("[" + ",".join([_message_json(m) for m in history]) + "]").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape everything, still standard JSON
        return _ESCAPED.encode([unstructure_message(m) for m in history]).encode("ascii")


def decode_history(
    data: bytes | bytearray | memoryview | str,
) -> Result[tuple[Message, ...], DecodeError]:
    """Decode a history written by ``encode_history`` (by any version of golem).

    Total: never raises. Returns ``Failure(DecodeError)`` naming the JSON path and the
    problem for bytes that are not UTF-8 or not standard JSON, a top level that is not
    an array, an unknown role, a missing or mistyped field, or bad base64.
    """
    text = _text(data)
    if isinstance(text, DecodeError):
        return Failure(text)
    history = _fast_history(text)
    if history is not None:
        return Success(history)
    match _parse(text):
        case Success(value):
            return _reference_history(value)
        case Failure(error):
            return Failure(error)
    raise AssertionError("unreachable")  # pragma: no cover


def encode_message(message: Message) -> bytes:
    """Encode one message as compact, deterministic UTF-8 JSON."""
    try:
        return _message_json(message).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape everything, still standard JSON
        return _ESCAPED.encode(unstructure_message(message)).encode("ascii")


def decode_message(data: bytes | bytearray | memoryview | str) -> Result[Message, DecodeError]:
    """Decode one message; total, like ``decode_history``."""
    text = _text(data)
    if isinstance(text, DecodeError):
        return Failure(text)
    match _parse(text):
        case Success(value):
            try:
                return Success(_fast_message(value, {}))
            except Exception:  # anything unusual: the reference path decides, and explains
                pass
            try:
                return Success(structure_message(value))
            except _Invalid as e:
                return Failure(DecodeError(e.path, e.reason))
            except RecursionError:
                return Failure(DecodeError("", "JSON nested too deeply"))
        case Failure(error):
            return Failure(error)
    raise AssertionError("unreachable")  # pragma: no cover


class HistoryDecodeError(ValueError):
    """Raised by ``decode_history_or_raise``: ``path`` (a JSON path) and ``reason``."""

    def __init__(self, error: DecodeError) -> None:
        super().__init__(error.message)
        self.error = error
        self.path = error.path
        self.reason = error.reason


def decode_history_or_raise(data: bytes | bytearray | memoryview | str) -> tuple[Message, ...]:
    """``decode_history`` for code that prefers exceptions to ``Result``.

    Raises:
        HistoryDecodeError: the bytes are not a history; ``str(error)`` names the JSON
            path and what was wrong, e.g. ``invalid history JSON at [1].parts[0].url:
            expected a string, got a number``.
    """
    result = decode_history(data)
    if isinstance(result, Failure):
        raise HistoryDecodeError(result.failure()) from None
    history: tuple[Message, ...] = result.unwrap()
    return history


def decode_message_or_raise(data: bytes | bytearray | memoryview | str) -> Message:
    """``decode_message`` for code that prefers exceptions; raises ``HistoryDecodeError``."""
    result = decode_message(data)
    if isinstance(result, Failure):
        raise HistoryDecodeError(result.failure()) from None
    message: Message = result.unwrap()
    return message
