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

Every key and its rule is one row of the field table (``_json_fields.py``); the
reference decoder that explains errors reads it (``_json_reference.py``), and the fast
decoder and both encoders are compiled from it (``_json_compiled.py``). This module is
the boundary: bytes and text in and out, the converter, and the fallbacks from each
fast path to its reference (the fast path raises ``Unhandled``, nothing else).
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, NoReturn, TypeVar

import cattrs
from returns.result import Failure, Result, Success

from golem_core._messages import (
    DataPart,
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    Usage,
)
from golem_core.codec._json_compiled import (
    INEXACT_NUMBERS,
    Unhandled,
    fast_message,
    fast_message_list,
    fast_messages,
    message_text,
    unstructure_message,
    unstructure_part,
    unstructure_usage,
)
from golem_core.codec._json_reference import (
    MAX_UNKNOWN_DEPTH,
    DecodeError,
    JSONObject,
    _Invalid,
    structure_message,
    structure_part,
    structure_usage,
)
from golem_core.codec._json_reference import _describe as _describe  # golem_core.wire imports it

__all__ = [
    "MAX_UNKNOWN_DEPTH",
    "DecodeError",
    "HistoryDecodeError",
    "JSONObject",
    "configure_converter",
    "decode_history",
    "decode_history_or_raise",
    "decode_message",
    "decode_message_or_raise",
    "encode_history",
    "encode_message",
    "history_from_jsonable",
    "history_to_jsonable",
    "make_converter",
    "structure_message",
    "structure_part",
    "structure_usage",
    "unstructure_message",
    "unstructure_part",
    "unstructure_usage",
]

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


def _message_json(m: Message) -> str:
    """The compact JSON text of ``m``: exactly ``_COMPACT.encode(unstructure_message(m))``.

    Encoding is the other hot path: the text path (``message_text``) writes the text
    straight, without the intermediate dicts (twice as fast). What it does not write
    itself (unknown fields, a value of an unexpected type) it hands back, and the dict
    path encodes it: the very same text, or the error it always raised.
    """
    try:
        return message_text(m)
    except Unhandled:
        return _COMPACT.encode(unstructure_message(m))


# -- the optional accelerator ---------------------------------------------------------

_ORJSON: Any = None
"""orjson when importable, else ``None``; tests set it to ``None`` for the stdlib path."""
try:  # an optional accelerator only: same values, same errors without it (ADR 0074)
    import orjson

    _ORJSON = orjson
except ImportError:  # pragma: no cover - the stdlib parser alone
    pass

_CHUNK: Final = 1 << 16
"""Characters (or bytes) parsed at once by the accelerated path over a large history."""


def _accelerated(data: bytes | bytearray | memoryview | str) -> tuple[Message, ...] | None:
    """The history in ``data`` parsed by orjson, or ``None`` when this path gives up.

    Gives up (the stdlib path then decides, and explains) on anything orjson refuses
    (it refuses more than ``json``: lone surrogates, NaN, numbers beyond a double, a
    BOM), on a value the fast decoder does not handle, and on an unknown field holding
    a float (orjson reads an integer beyond 64 bits as one). What it accepts, ``json``
    reads to the same value.

    A large history is parsed a chunk of about ``_CHUNK`` at a time (``_pieces``), so
    the JSON objects of the whole history never exist at once.
    """
    loads = _ORJSON.loads
    if isinstance(data, memoryview):
        data = data.tobytes()
    elif not isinstance(data, bytes | bytearray | memoryview | str):  # not a history's
        return None  # type: the stdlib path says what it is
    names: dict[Any, str] = {INEXACT_NUMBERS: ""}
    out: list[Message] = []
    build = fast_message_list
    for piece in _pieces(data):
        try:
            value = loads(piece)
        except ValueError:  # orjson.JSONDecodeError
            return None
        if type(value) is not list:
            return None
        try:
            out += build(value, names)
        except Unhandled:
            return None
    return tuple(out)


def _pieces(data: bytes | bytearray | str) -> Iterator[Any]:
    """``data`` in pieces of about ``_CHUNK`` to parse one after the other (``data``
    itself when it is no longer, or holds no cut).

    Each cut is before a message that begins ``{"role":`` (as ``encode_history`` writes
    it), and each piece is made an array: ``[`` and ``]`` around its messages. A cut
    inside a string or a nested value leaves a piece that is not a JSON array (it ends
    inside the string or with brackets open), so every piece parses only when the cuts
    are between messages, and then the pieces' elements are the document's. A piece is
    one copy of its span with its brackets, joined from a view of the input (text is
    sliced), so only one piece's copy exists at a time: no copy of the whole input is
    made (``decode_json_peak_mem`` in ``python -m bench``).
    """
    end = len(data)
    if end <= _CHUNK:
        yield data
        return
    text = isinstance(data, str)
    # the same cuts for text and bytes (``Any``: one loop over either kind of sequence)
    separator: Any = '},{"role":' if text else b'},{"role":'
    opening: Any = "[" if text else b"["
    closing: Any = "]" if text else b"]"
    join = opening[:0].join
    # a view's slices are not copies (released when the pieces end); a str has none
    spans: Any = data
    with contextlib.nullcontext(spans) if text else memoryview(spans) as view:
        start = 0  # where the piece begins: 0, or the "," after the last piece's message
        while True:
            cut = data.find(separator, start + _CHUNK) if end - start > _CHUNK else -1
            if cut < 0:
                yield data if start == 0 else join((opening, view[start + 1 :]))
                return
            if start == 0:  # the document's own opening (and any space before it)
                yield join((view[: cut + 1], closing))
            else:  # the "," before this piece's first message, made a "["
                yield join((opening, view[start + 1 : cut + 1], closing))
            start = cut + 1


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


def _structured(value: object) -> Result[tuple[Message, ...], DecodeError]:
    """The history of a parsed JSON value: the fast path, else the reference."""
    if type(value) is list:
        try:
            return Success(fast_messages(value))
        except Unhandled:
            pass
    return _reference_history(value)


_WHITESPACE: Final = re.compile(r"[ \t\n\r]+")  # JSON's whitespace, as ``json`` reads it
_SPACE_CHARS: Final = frozenset(" \t\n\r")


def _skip_space(text: str, i: int) -> int:
    match = _WHITESPACE.match(text, i)
    return i if match is None else match.end()


_WHOLE_PARSE_CHARS: Final = 1 << 20


def _scanned_history(text: str) -> tuple[Message, ...] | None:
    """The history in a large ``text``, or ``None`` when the fast path gives up.

    Parses the top-level array one message at a time with the stdlib scanner and
    structures each message as soon as it is parsed, so that the JSON objects of the
    whole history never exist at once (peak memory: the text, the messages, and one
    message's objects). It accepts exactly what ``json.loads`` accepts, and gives up
    on anything else (not JSON, not an array, a message the fast path does not
    handle): the reference path then decides and explains.
    """
    end = len(text)
    i = _skip_space(text, 0)
    if not text.startswith("[", i):
        return None
    i = _skip_space(text, i + 1)
    out: list[Message] = []
    if text.startswith("]", i):
        i += 1
    else:
        scan = _SCAN_ONCE
        fast = fast_message
        append = out.append
        names: dict[str, str] = {}
        while True:
            try:
                value, i = scan(text, i)
            except (StopIteration, ValueError, RecursionError):  # not (standard) JSON
                return None
            try:
                append(fast(value, names))
            except Unhandled:
                return None
            if i < end and text[i] in _SPACE_CHARS:
                i = _skip_space(text, i)
            if i >= end:
                return None  # unclosed
            separator = text[i]
            i += 1
            if separator == "]":
                break
            if separator != ",":
                return None
            if i < end and text[i] in _SPACE_CHARS:
                i = _skip_space(text, i)
    if i != end and _skip_space(text, i) != end:
        return None
    return tuple(out)


_A = TypeVar("_A")
_R = TypeVar("_R")


def collector_paused(fn: Callable[[_A], _R], arg: _A) -> _R:
    """``fn(arg)`` with the cyclic garbage collector paused, restored as it was (also
    when ``fn`` raises; left alone when it is already off).

    For building many objects that make no reference cycles (a collection triggered by
    the build's own allocations would only scan, again and again, what it is building:
    ADR 0093), and for parsing what a stranger sent (JSON nested to the recursion limit
    would otherwise run a collection, and every pending finalizer, at that depth, where
    the finalizers fail with ``RecursionError`` and leave their resources open).
    """
    if not gc.isenabled():
        return fn(arg)
    gc.disable()
    try:
        return fn(arg)
    finally:
        gc.enable()


def history_to_jsonable(history: Sequence[Message]) -> list[JSONObject]:
    """The JSON value (a list of objects) of a history."""
    return [unstructure_message(m) for m in history]


def history_from_jsonable(value: object) -> Result[tuple[Message, ...], DecodeError]:
    """Build a history from an already parsed JSON value (a list of message objects).

    Like ``decode_history``, it builds with the cyclic collector paused (ADR 0093).
    """
    return collector_paused(_structured, value)


def encode_history(history: Sequence[Message]) -> bytes:
    """Encode a history as compact, deterministic UTF-8 JSON (an array of messages).

    Total and deterministic: the same history always gives the same bytes.
    """
    texts = [_message_json(m) for m in history]
    if not texts:
        return b"[]"
    texts[0] = "[" + texts[0]  # the brackets on the ends: the whole text is never copied
    texts[-1] += "]"
    try:
        return ",".join(texts).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape everything, still standard JSON
        return _ESCAPED.encode([unstructure_message(m) for m in history]).encode("ascii")


def decode_history(
    data: bytes | bytearray | memoryview | str,
) -> Result[tuple[Message, ...], DecodeError]:
    """Decode a history written by ``encode_history`` (by any version of golem).

    Total: never raises. Returns ``Failure(DecodeError)`` naming the JSON path and the
    problem for bytes that are not UTF-8 or not standard JSON, a top level that is not
    an array, an unknown role, a missing or mistyped field, or bad base64.

    The cyclic garbage collector is paused while the history is built and restored as
    it was (also when decoding fails or raises): decoding creates no reference cycles,
    and a collection triggered by its own allocations would only scan, again and again,
    the objects it is building (ADR 0093).
    """
    return collector_paused(_decode_history, data)


def _decode_history(
    data: bytes | bytearray | memoryview | str,
) -> Result[tuple[Message, ...], DecodeError]:
    if _ORJSON is not None:
        accelerated = _accelerated(data)
        if accelerated is not None:
            return Success(accelerated)
    text = _text(data)
    if isinstance(text, DecodeError):
        return Failure(text)
    if len(text) > _WHOLE_PARSE_CHARS:  # large: structure each message as it is parsed
        history = _scanned_history(text)
        if history is not None:
            return Success(history)
    match _parse(text):  # small (parsing at once is cheaper than the scan), or explaining
        case Success(value):
            return _structured(value)
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
    if _ORJSON is not None:
        try:
            return Success(fast_message(_ORJSON.loads(data), {INEXACT_NUMBERS: ""}))
        except (ValueError, Unhandled):  # the stdlib path decides, and explains
            pass
    text = _text(data)
    if isinstance(text, DecodeError):
        return Failure(text)
    match _parse(text):
        case Success(value):
            try:
                return Success(fast_message(value, {}))
            except Unhandled:  # the reference path decides, and explains
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
