"""The pure codec of the OpenAI Responses API (``POST /v1/responses``).

Owns the request body built from a ``ModelRequest``, the assistant ``Message`` read from
a response body or from a stream of events, and the reading of error bodies. No I/O: the
shell (``golem_shell.models.openai_responses``) does the HTTP. The mapping (ADRs
0049-0051):

- instructions are the top-level ``instructions``; system messages of the history are
  never sent, nor are unknown parts; every request is stateless (``store: false``): the
  history is the state, never an id on OpenAI's side;
- user text, images (URL, or JPEG, PNG, GIF, WebP data as a ``data:`` URL; ``detail:
  "auto"``) and PDF documents (data, or a URL) become ``input_text`` / ``input_image`` /
  ``input_file`` content; a user message of one text part is sent as a plain string;
  empty text is dropped and a message left empty is not sent; audio, video and other
  media (SVG, octet-stream, ...) are sent as a short textual stand-in naming what they
  were, their type and size (ADR 0067);
- an assistant message becomes items: its reasoning items and one ``assistant`` message
  per run of text of one ``phase`` (kept in the text part's ``extra`` as ``openaiPhase``
  and sent back as received; ADR 0066), in order, then its ``function_call`` items
  (``call_id``, ``name``, ``arguments`` = ``wire_arguments(call)`` as compact JSON
  with UTF-8 kept, so a truncated call travels as ``{"truncated_args": "<verbatim>"}``).
  Calls come last so that each is answered before any other item (the pairing rule);
  calls without an id are not sent;
- reasoning: a ``ThinkingPart`` that came from this API carries the reasoning item's id
  and ``encrypted_content`` in its ``extra`` (``openaiReasoningId``,
  ``openaiEncryptedContent``; ADR 0049) and no signature, so no other provider's
  encoder replays it. With ``encrypted_reasoning`` on, it is sent back as a
  ``reasoning`` item (``id``, ``summary``, ``encrypted_content``) and the request asks
  for ``include: ["reasoning.encrypted_content"]``; a reasoning item with nothing after
  it in its turn is not sent (OpenAI wants a following item). Thinking from other
  providers (Anthropic signatures, compatible servers' text) cannot be verified by
  OpenAI and is never sent;
- a tool result is a ``function_call_output`` (``call_id``, ``output``): its text, or,
  when the tool returned media, a list of ``input_text`` / ``input_image`` /
  ``input_file`` content. OpenAI has no failure flag: a failed result's text says what
  failed;
- call ids pass through ``WireIds``: kept when OpenAI accepts them, else cut to 64
  characters with a hash, and made unique per request (``_2``, ``_3``; ADR 0034), and
  a turn that repeats an id is answered per call (``wire_sequence``);
- with no tools declared, tool calls and results are rendered as text (ADR 0031);
- tools are ``{"type": "function", "name", "description", "parameters", "strict"}``:
  ``strict: true`` with the schema rewritten for strict mode wherever it can be made to
  qualify, else ``strict: false`` (the Responses API's default is strict) with the
  schema unchanged (``golem_core.wire.strict``, ADR 0130); ``tool_choice_required`` is
  ``"required"``; ``max_tokens`` is ``max_output_tokens``; ``temperature``, ``top_p``
  and ``parallel_tool_calls`` as named; ``stop`` sequences do not exist in this API and
  are refused; an ``output_schema`` (native structured output, ADR 0087) is
  ``text.format``: ``{"type": "json_schema", "name", "schema", "strict"}`` as Chat's
  ``response_format``.

Responses (ADR 0051): reasoning items become thinking parts (summary texts joined by a
blank line), each ``message`` item one text part (``output_text`` and ``refusal``
content joined; its ``phase``, ``commentary`` or ``final_answer``, kept),
``function_call`` items tool calls with their ``call_id`` and raw ``arguments``.
``finish_reason`` is ``"refusal"`` when the answer holds a refusal, else
``incomplete_details.reason`` (``"max_output_tokens"``, ``"content_filter"``) for an
incomplete response, else the status (``"completed"``). ``Usage``: ``input_tokens`` in
(cached included), ``output_tokens`` out (reasoning included), ``cached_tokens`` read
from cache, ``cache_write_tokens`` written to it (where reported), ``reasoning_tokens``.
A ``failed`` response is its error. A stream is complete only at ``response.completed``
or ``response.incomplete``; ``response.failed`` and ``error`` events fail it.

Native compaction (ADR 0148): a ``compaction`` item (``POST /responses/compact``, or an
output item of a response) becomes a ``TextPart`` with empty text whose ``extra`` holds the
item's id and ``encrypted_content`` (``COMPACTION_ID_KEY``, ``COMPACTION_CONTENT_KEY``); the
encoder sends it back as a ``compaction`` input item. ``encode_compact_request`` builds the
body of ``POST /responses/compact`` (``model``, ``input``, ``instructions``, the cache key;
nothing else) and ``decode_compact_response`` reads its ``response.compaction`` object: the
user messages it kept and one assistant message holding the compaction item, with usage.

Over 600 lines because a codec is one concept: the request encoder and the response,
stream and error decoders of one API share its vocabulary and are read together.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any, assert_never

from returns.result import Failure, Result, Success

from golem_core._messages import (
    DataPart,
    Extra,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    Usage,
)
from golem_core._model import (
    ModelDelta,
    ModelErrorKind,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
)
from golem_core.wire._arguments import wire_arguments
from golem_core.wire._cache import add_openai_cache_key
from golem_core.wire._common import (
    Malformed,
    Origin,
    WireError,
    WireIds,
    arr,
    bad,
    call_as_text,
    classify_error,
    decode_error_body,
    dumps_compact,
    obj,
    opt_count,
    opt_str,
    parse_json,
    req_str,
    result_as_text,
    stamp_origin,
    stand_in,
    wire_sequence,
)
from golem_core.wire._sse import ServerSentEvent
from golem_core.wire._stream import StreamAccumulator
from golem_core.wire.openai import json_schema_spec
from golem_core.wire.strict import openai_strict_schema

__all__ = [
    "COMPACTION_CONTENT_KEY",
    "COMPACTION_ID_KEY",
    "ENCRYPTED_CONTENT_KEY",
    "MAX_CALL_ID_LENGTH",
    "PHASE_KEY",
    "PROVIDER",
    "REASONING_ID_KEY",
    "StreamDecoder",
    "compaction_item",
    "compaction_part",
    "decode_compact_response",
    "decode_error",
    "decode_response",
    "encode_compact_request",
    "encode_request",
    "reasoning_item",
    "reasoning_part",
    "supports_encrypted_reasoning",
    "media_block",
]

PROVIDER = "OpenAI Responses"
REASONING_ID_KEY = "openaiReasoningId"
"""The ``extra`` key of a thinking part holding its Responses reasoning item id."""
ENCRYPTED_CONTENT_KEY = "openaiEncryptedContent"
"""The ``extra`` key of a thinking part holding the item's ``encrypted_content``."""
PHASE_KEY = "openaiPhase"
"""The ``extra`` key of a text part holding its message item's ``phase`` (``commentary``
or ``final_answer``; ADR 0066)."""
COMPACTION_ID_KEY = "openaiCompactionId"
"""The ``extra`` key of a text part standing for a Responses ``compaction`` item: its id."""
COMPACTION_CONTENT_KEY = "openaiEncryptedCompaction"
"""The ``extra`` key of that text part holding the item's ``encrypted_content``."""
MAX_CALL_ID_LENGTH = 64
"""OpenAI refuses a longer ``call_id`` (``string_above_max_length``)."""
INCLUDE_ENCRYPTED = "reasoning.encrypted_content"
_SUMMARY_SEPARATOR = "\n\n"
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

# ``ResponseError.code`` values: what each means for a retry (others go by the table in
# ``golem_core.wire._common``)
_FAILED_CODES: Mapping[str, ModelErrorKind] = {
    "server_error": ModelErrorKind.SERVER_ERROR,
    "rate_limit_exceeded": ModelErrorKind.RATE_LIMIT,
    "vector_store_timeout": ModelErrorKind.TIMEOUT,
    "invalid_prompt": ModelErrorKind.INVALID_REQUEST,
    "data_residency_mismatch": ModelErrorKind.INVALID_REQUEST,
    "bio_policy": ModelErrorKind.INVALID_REQUEST,
    "misalignment_policy_violation": ModelErrorKind.INVALID_REQUEST,
    "empty_image_file": ModelErrorKind.INVALID_REQUEST,
    "failed_to_download_image": ModelErrorKind.INVALID_REQUEST,
    "unsupported_image_media_type": ModelErrorKind.INVALID_REQUEST,
}


def supports_encrypted_reasoning(model: str) -> bool:
    """Whether ``model`` is a reasoning model that returns ``encrypted_content``.

    The o-series and gpt-5 (not ``gpt-5-chat``) do; OpenAI answers HTTP 400 ("Encrypted
    content is not supported with this model") when other models are asked for it.
    A guess from the name: total, deterministic.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    if name.startswith(("o1", "o3", "o4", "codex")):
        return True
    return name.startswith("gpt-5") and not name.startswith("gpt-5-chat")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# -- reasoning parts (ADR 0049) -------------------------------------------------------------


def _extra_str(extra: Extra, key: str) -> str | None:
    for k, text in extra:
        if k == key:
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                return None
            return value if isinstance(value, str) else None
    return None


def reasoning_part(
    item_id: str | None, summary: Sequence[str], encrypted_content: str | None
) -> ThinkingPart:
    """The thinking part of a Responses reasoning item.

    The summary texts are joined by a blank line; the item id and the encrypted content
    are kept in ``extra`` (``REASONING_ID_KEY``, ``ENCRYPTED_CONTENT_KEY``), so they
    survive storage as additive JSON fields; the signature stays ``None``, so no other
    provider's encoder sends the part. Total, deterministic.
    """
    extra: list[tuple[str, str]] = []
    if item_id:
        extra.append((REASONING_ID_KEY, json.dumps(item_id, ensure_ascii=False)))
    if encrypted_content:
        extra.append((ENCRYPTED_CONTENT_KEY, json.dumps(encrypted_content, ensure_ascii=False)))
    return ThinkingPart(_SUMMARY_SEPARATOR.join(t for t in summary if t), extra=tuple(extra))


def reasoning_item(part: ThinkingPart) -> dict[str, Any] | None:
    """The ``reasoning`` input item a thinking part replays, or ``None`` when the part
    did not come from the Responses API with encrypted content (nothing OpenAI could
    verify in a stateless request). Total, deterministic."""
    if part.signature is not None or part.redacted:
        return None
    encrypted = _extra_str(part.extra, ENCRYPTED_CONTENT_KEY)
    item_id = _extra_str(part.extra, REASONING_ID_KEY)
    if not encrypted or not item_id:
        return None
    summary = [{"type": "summary_text", "text": part.text}] if part.text else []
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": summary,
        "encrypted_content": encrypted,
    }


def compaction_part(item_id: str | None, encrypted_content: str) -> TextPart:
    """The part a Responses ``compaction`` item becomes: empty text (the summary is
    encrypted: nothing readable travels anywhere else) with the item's id and
    ``encrypted_content`` in ``extra``. Total, deterministic."""
    extra: list[tuple[str, str]] = []
    if item_id:
        extra.append((COMPACTION_ID_KEY, json.dumps(item_id, ensure_ascii=False)))
    extra.append((COMPACTION_CONTENT_KEY, json.dumps(encrypted_content, ensure_ascii=False)))
    return TextPart("", extra=tuple(extra))


def compaction_item(part: TextPart) -> dict[str, Any] | None:
    """The ``compaction`` input item ``part`` stands for, or ``None`` when it is not a
    compaction part. Total, deterministic."""
    encrypted = _extra_str(part.extra, COMPACTION_CONTENT_KEY)
    if not encrypted:
        return None
    item: dict[str, Any] = {"type": "compaction", "encrypted_content": encrypted}
    item_id = _extra_str(part.extra, COMPACTION_ID_KEY)
    if item_id:
        item["id"] = item_id
    return item


# -- requests ----------------------------------------------------------------------------


def _media(part: URLPart | DataPart) -> dict[str, Any]:
    if isinstance(part, URLPart):
        if part.kind == "image":
            return {"type": "input_image", "image_url": part.url, "detail": "auto"}
        if part.kind == "document":
            return {"type": "input_file", "file_url": part.url}
        return {"type": "input_text", "text": stand_in(part, PROVIDER)}  # ADR 0067
    media_type = part.media_type.lower()
    if part.kind == "image" and media_type in _IMAGE_TYPES:
        url = f"data:{part.media_type};base64,{_b64(part.data)}"
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if part.kind == "document" and media_type == "application/pdf":
        return {
            "type": "input_file",
            "filename": "document.pdf",
            "file_data": f"data:application/pdf;base64,{_b64(part.data)}",
        }
    return {"type": "input_text", "text": stand_in(part, PROVIDER)}  # ADR 0067


media_block = _media
"""The content a URL or data part becomes (its stand-in when the Responses API cannot take it)."""


def _user_content(parts: Sequence[Part], *, include_text: bool = True) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for part in parts:
        match part:
            case TextPart():
                if include_text and part.text:
                    content.append({"type": "input_text", "text": part.text})
            case URLPart() | DataPart():
                content.append(_media(part))
            case ThinkingPart() | ToolCallPart() | UnknownPart():
                pass  # not user content: not sent
            case _:  # pragma: no cover
                assert_never(part)
    return content


def _as_content(content: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if len(content) == 1 and content[0]["type"] == "input_text":
        text: str = content[0]["text"]
        return text
    return content


class _Encoder:
    __slots__ = ("ids", "items", "reasoning", "with_tools")

    def __init__(self, request: ModelRequest, reasoning: bool, *, calls: bool = False) -> None:
        self.with_tools = calls or bool(request.tools)
        self.reasoning = reasoning
        self.ids = WireIds(max_length=MAX_CALL_ID_LENGTH, unique=True)
        self.items: list[dict[str, Any]] = []

    def assistant(self, message: Message) -> None:
        leading: list[dict[str, Any]] = []  # reasoning and text items, in order
        calls: list[dict[str, Any]] = []
        text: list[str] = []  # segments: text parts, and calls rendered as text (ADR 0031)
        glue = "" if self.with_tools else "\n"
        phase: list[str | None] = [None]  # the phase of the text gathered (ADR 0066)

        def flush_text() -> None:
            if text:
                item: dict[str, Any] = {"role": "assistant", "content": glue.join(text)}
                if phase[0] is not None:
                    item["phase"] = phase[0]
                leading.append(item)
                text.clear()

        for part in message.parts:
            match part:
                case ThinkingPart():
                    item = reasoning_item(part) if self.reasoning else None
                    if item is not None:
                        flush_text()
                        leading.append(item)
                case TextPart():
                    compaction = compaction_item(part) if part.extra else None
                    if compaction is not None:
                        flush_text()
                        leading.append(compaction)
                    elif part.text:
                        own = _extra_str(part.extra, PHASE_KEY)
                        if text and own != phase[0]:
                            flush_text()  # items of different phases stay apart
                        phase[0] = own
                        text.append(part.text)
                case ToolCallPart():
                    arguments = wire_arguments(part)
                    if not self.with_tools:
                        text.append(call_as_text(part, arguments))
                    elif part.id:
                        calls.append(
                            {
                                "type": "function_call",
                                "call_id": self.ids.call(part.id),
                                "name": part.name,
                                "arguments": dumps_compact(arguments),
                            }
                        )
                case URLPart() | DataPart():  # no media in an assistant item: its stand-in
                    text.append(stand_in(part, PROVIDER))
                case UnknownPart():
                    pass
                case _:  # pragma: no cover
                    assert_never(part)
        flush_text()
        if not calls:  # a reasoning item needs an item after it in its turn
            while leading and leading[-1].get("type") == "reasoning":
                leading.pop()
        self.items.extend(leading)
        self.items.extend(calls)

    def tool(self, message: Message) -> None:
        if not self.with_tools:
            label = {"type": "input_text", "text": result_as_text(message)}
            media = _user_content(message.parts, include_text=False)
            self.items.append({"role": "user", "content": _as_content([label, *media])})
            return
        if not message.tool_call_id:
            return  # answers no call: OpenAI would refuse it
        media = _user_content(message.parts, include_text=False)
        text = message.text
        output: str | list[dict[str, Any]] = text
        if media:
            output = ([{"type": "input_text", "text": text}] if text else []) + media
        self.items.append(
            {
                "type": "function_call_output",
                "call_id": self.ids.result(message.tool_call_id),
                "output": output,
            }
        )

    def encode(self, request: ModelRequest) -> list[dict[str, Any]]:
        for _, message in wire_sequence(request.messages):
            match message.role:
                case Role.SYSTEM:
                    continue
                case Role.USER:
                    content = _user_content(message.parts)
                    if content:
                        self.items.append({"role": "user", "content": _as_content(content)})
                case Role.ASSISTANT:
                    self.assistant(message)
                case Role.TOOL:
                    self.tool(message)
                case _:  # pragma: no cover
                    assert_never(message.role)
        return self.items


def encode_request(
    request: ModelRequest,
    *,
    model: str,
    stream: bool,
    encrypted_reasoning: bool | None = None,
    reasoning: Mapping[str, str] | None = None,
) -> Result[dict[str, Any], WireError]:
    """The JSON body of a Responses request.

    Total, deterministic (same request, equal body, same key order).

    Args:
        request: what to send.
        model: the model name (``"gpt-5"``).
        stream: whether to ask for a stream of events.
        encrypted_reasoning: whether to ask for, and send back, encrypted reasoning;
            ``None`` guesses from the model name (``supports_encrypted_reasoning``).
        reasoning: the ``reasoning`` object to send (``{"effort": "low"}``), if any.

    Returns:
        The body (a part the Responses API cannot take travels as its textual stand-in,
        ADR 0067), or ``Failure(WireError)`` of kind ``UNSUPPORTED_CONTENT`` naming the
        setting it cannot take (``stop``).
    """
    if encrypted_reasoning is None:
        encrypted_reasoning = supports_encrypted_reasoning(model)
    settings = request.settings
    if settings.stop:
        return Failure(
            WireError(
                ModelErrorKind.UNSUPPORTED_CONTENT,
                "settings.stop: OpenAI Responses has no stop sequences",
            )
        )
    items = _Encoder(request, encrypted_reasoning).encode(request)
    body: dict[str, Any] = {"model": model}
    if request.instructions:
        body["instructions"] = request.instructions
    body["input"] = items
    if request.tools:
        tools: list[dict[str, Any]] = []
        for tool in request.tools:
            spec: dict[str, Any] = {"type": "function", "name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            schema, why_not = openai_strict_schema(tool.parameters)
            spec["parameters"] = schema
            spec["strict"] = why_not is None  # ADR 0130
            tools.append(spec)
        body["tools"] = tools
        if request.tool_choice_required:
            body["tool_choice"] = "required"
        if settings.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.max_tokens is not None:
        body["max_output_tokens"] = settings.max_tokens
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if reasoning:
        body["reasoning"] = dict(reasoning)
    if request.output_schema is not None:  # native structured output (ADR 0087)
        body["text"] = {
            "format": {"type": "json_schema", **json_schema_spec(request.output_schema)}
        }
    body["store"] = False
    if encrypted_reasoning:
        body["include"] = [INCLUDE_ENCRYPTED]
    if stream:
        body["stream"] = True
    add_openai_cache_key(body, request)
    return Success(body)


def encode_compact_request(
    request: ModelRequest, *, model: str, encrypted_reasoning: bool | None = None
) -> Result[dict[str, Any], WireError]:
    """The JSON body of ``POST /responses/compact``: the history to compact as input
    items (calls and results as ``function_call`` / ``function_call_output`` items,
    whether or not the request declares tools), its instructions, and its cache key.

    Total, deterministic. The endpoint takes no tools, ``store``, ``include`` or
    settings (ADR 0148).

    Returns:
        The body, or ``Failure(WireError)`` of kind ``UNSUPPORTED_CONTENT`` when no item
        is left to compact.
    """
    if encrypted_reasoning is None:
        encrypted_reasoning = supports_encrypted_reasoning(model)
    items = _Encoder(request, encrypted_reasoning, calls=True).encode(request)
    if not items:
        return Failure(
            WireError(ModelErrorKind.UNSUPPORTED_CONTENT, "nothing to compact: no input items")
        )
    body: dict[str, Any] = {"model": model}
    if request.instructions:
        body["instructions"] = request.instructions
    body["input"] = items
    add_openai_cache_key(body, request)
    return Success(body)


# -- responses -------------------------------------------------------------------------


def _usage(value: object) -> Usage | None:
    if not isinstance(value, dict):
        return None
    inputs = value.get("input_tokens_details")
    outputs = value.get("output_tokens_details")
    return Usage(
        input_tokens=opt_count(value, "input_tokens") or 0,
        output_tokens=opt_count(value, "output_tokens") or 0,
        cache_read_tokens=opt_count(inputs, "cached_tokens") if isinstance(inputs, dict) else None,
        cache_write_tokens=(
            opt_count(inputs, "cache_write_tokens") if isinstance(inputs, dict) else None
        ),
        reasoning_tokens=(
            opt_count(outputs, "reasoning_tokens") if isinstance(outputs, dict) else None
        ),
    )


def _texts(values: object, path: str, kind: str) -> list[str]:
    out: list[str] = []
    if values is None:
        return out
    for k, raw in enumerate(arr(values, path)):
        entry = obj(raw, f"{path}[{k}]")
        if entry.get("type", kind) == kind:
            out.append(req_str(entry, "text", f"{path}[{k}]"))
    return out


def _item_part(item: dict[str, Any], path: str) -> tuple[Part | None, bool]:
    """The part an output item becomes (``None``: nothing golem keeps), and whether it
    holds a refusal."""
    kind = req_str(item, "type", path)
    if kind == "message":
        text: list[str] = []
        refused = False
        for k, raw in enumerate(arr(item.get("content", []), f"{path}.content")):
            cpath = f"{path}.content[{k}]"
            content = obj(raw, cpath)
            ctype = req_str(content, "type", cpath)
            if ctype == "output_text":
                text.append(req_str(content, "text", cpath))
            elif ctype == "refusal":
                text.append(req_str(content, "refusal", cpath))
                refused = True
        joined = "".join(text)
        if not joined:
            return None, refused
        phase = item.get("phase")  # commentary or final_answer: kept, sent back (ADR 0066)
        if isinstance(phase, str) and phase:
            return TextPart(joined, extra=((PHASE_KEY, dumps_compact(phase)),)), refused
        return TextPart(joined), refused
    if kind == "function_call":
        return (
            ToolCallPart(
                req_str(item, "call_id", path) or None,
                req_str(item, "name", path),
                opt_str(item, "arguments", path) or "",
            ),
            False,
        )
    if kind == "reasoning":
        summary = _texts(item.get("summary"), f"{path}.summary", "summary_text")
        if not any(summary):
            summary = _texts(item.get("content"), f"{path}.content", "reasoning_text")
        encrypted = opt_str(item, "encrypted_content", path)
        if not any(summary) and not encrypted:
            return None, False  # nothing to show and nothing to replay
        return reasoning_part(opt_str(item, "id", path), summary, encrypted), False
    if kind == "compaction":
        encrypted = req_str(item, "encrypted_content", path)
        if not encrypted:
            raise Malformed(f"{path}.encrypted_content", "a compaction item without content")
        return compaction_part(opt_str(item, "id", path) or None, encrypted), False
    return None, False  # hosted tools and future item types are not part of the contract


def _finish_reason(response: dict[str, Any], refused: bool) -> str | None:
    if refused:
        return "refusal"
    status = opt_str(response, "status", "response")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return reason if isinstance(reason, str) and reason else "incomplete"
    return status


def _message(response: dict[str, Any], items: Sequence[tuple[object, str]]) -> Message:
    parts: list[Part] = []
    refused = False
    for raw, path in items:
        part, refusal = _item_part(obj(raw, path), path)
        refused = refused or refusal
        if part is not None:
            parts.append(part)
    return Message(
        Role.ASSISTANT,
        tuple(parts),
        model=opt_str(response, "model", "response") or None,
        usage=_usage(response.get("usage")),
        finish_reason=_finish_reason(response, refused),
    )


def _error_fields(payload: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """``(message, type, code)`` of an error object, an ``error`` event (fields at the
    top) or a body or event wrapping one under ``error``."""
    inner = payload.get("error")
    source = inner if isinstance(inner, dict) else payload
    values = []
    for key in ("message", "type", "code"):
        value = source.get(key)
        values.append(value if isinstance(value, str) and value else None)
    if isinstance(inner, str) and inner and values[0] is None:
        values[0] = inner
    return values[0], values[1], values[2]


def _reported_error(payload: dict[str, Any], what: str) -> WireError:
    """An error reported with HTTP 200: a failed response, or an ``error`` event."""
    message, error_type, code = _error_fields(payload)
    if error_type == "error":  # the event's own type, not an error type
        error_type = None
    message = message or f"OpenAI Responses reported {what}"
    kind = _FAILED_CODES.get(code or "") or classify_error(
        None, error_type=error_type or code, code=code, message=message
    )
    request_id = payload.get("request_id")
    return WireError(
        kind,
        message[:2000],
        request_id=request_id if isinstance(request_id, str) and request_id else None,
    )


def _bad_response(exc: Malformed) -> WireError:
    return WireError(ModelErrorKind.BAD_RESPONSE, f"malformed {PROVIDER} {exc.path}: {exc.reason}")


_ANSWERED = ("completed", "incomplete")


def _decode(body: object) -> Result[Message, WireError]:
    top = obj(body, "response")
    status = opt_str(top, "status", "response")
    if status == "failed":
        error = top.get("error")
        return Failure(_reported_error(error if isinstance(error, dict) else {}, "a failure"))
    if "output" not in top:
        raise Malformed("response.output", "required field is missing")
    if status is not None and status not in _ANSWERED:
        raise Malformed("response.status", f"expected a finished response, got {status!r}")
    output = arr(top.get("output"), "response.output")
    items = [(raw, f"response.output[{k}]") for k, raw in enumerate(output)]
    return Success(_message(top, items))


def decode_response(body: object, *, origin: Origin | None = None) -> Result[Message, WireError]:
    """The assistant message of a Responses body (decoded JSON).

    Total, deterministic.
    ``origin``: who the adapter asked (``Origin``); the message records it (ADR 0085).

    Returns:
        The message with its ``model``, ``usage`` and ``finish_reason``; a ``failed``
        response, or a body holding only an ``error``, is that error; a body of the
        wrong shape is ``Failure(WireError)`` of kind ``BAD_RESPONSE`` naming the path.
    """
    if isinstance(body, dict) and "output" not in body and isinstance(body.get("error"), dict):
        return Failure(_reported_error(body, "an error"))
    try:
        return _decode(body).map(lambda m: stamp_origin(m, origin))
    except Malformed as exc:
        return Failure(_bad_response(exc))


def _compacted_user(item: dict[str, Any], path: str) -> Message:
    content = item.get("content")
    if isinstance(content, str):
        return Message(Role.USER, (TextPart(content),))
    parts: list[Part] = []
    for k, raw in enumerate(arr(content, f"{path}.content")):
        cpath = f"{path}.content[{k}]"
        entry = obj(raw, cpath)
        ctype = req_str(entry, "type", cpath)
        if ctype in ("input_text", "output_text"):
            parts.append(TextPart(req_str(entry, "text", cpath)))
        elif ctype == "input_image" and isinstance(entry.get("image_url"), str):
            parts.append(URLPart(entry["image_url"], kind="image"))
        else:  # kept, never sent (a file, a future content type)
            parts.append(UnknownPart(ctype, extra=(("openaiContent", dumps_compact(entry)),)))
    return Message(Role.USER, tuple(parts))


def decode_compact_response(
    body: object, *, origin: Origin | None = None
) -> Result[tuple[Message, ...], WireError]:
    """The compacted history of a ``response.compaction`` body (``POST /responses/compact``).

    Total, deterministic. The output lists the user messages the provider kept, then one
    ``compaction`` item: each user message becomes a user ``Message``; the compaction
    item (and any other assistant output) becomes one assistant message recording
    ``origin`` (ADR 0085) and the pass's ``usage``, so it goes back only to its issuer.

    Returns:
        The messages, oldest first (exactly one holds the compaction item), or
        ``Failure(WireError)``: the error an error body reports, or ``BAD_RESPONSE`` for
        a body of the wrong shape or without a compaction item.
    """
    if isinstance(body, dict) and "output" not in body and isinstance(body.get("error"), dict):
        return Failure(_reported_error(body, "an error"))
    try:
        top = obj(body, "response")
        kind = opt_str(top, "object", "response")
        if kind not in (None, "response.compaction"):
            raise Malformed("response.object", f"expected 'response.compaction', got {kind!r}")
        out: list[Message] = []
        compactions: list[Part] = []
        for k, raw in enumerate(arr(top.get("output"), "response.output")):
            path = f"response.output[{k}]"
            item = obj(raw, path)
            if item.get("type", "message") == "message" and item.get("role") == "user":
                out.append(_compacted_user(item, path))
                continue
            part, _ = _item_part(item, path)
            if part is not None:
                compactions.append(part)
        if not any(compaction_item(p) for p in compactions if isinstance(p, TextPart)):
            raise Malformed("response.output", "no compaction item")
        message = Message(
            Role.ASSISTANT,
            tuple(compactions),
            model=opt_str(top, "model", "response") or None,
            usage=_usage(top.get("usage")),
            finish_reason="compaction",
        )
        out.append(stamp_origin(message, origin))
    except Malformed as exc:
        return Failure(_bad_response(exc))
    return Success(tuple(out))


def decode_error(
    status: int, headers: Mapping[str, str], body: bytes, *, now_unix: float | None = None
) -> WireError:
    """A failed Responses request (status >= 400) as a ``WireError``.

    Total, deterministic. ``now_unix`` is needed only to read an HTTP-date
    ``retry-after``. See ``golem_core.wire._common`` for the kind table.
    """
    return decode_error_body(PROVIDER, status, headers, body, now_unix=now_unix)


def _opened_item(item: dict[str, Any]) -> dict[str, Any]:
    """A copy of an item ``response.output_item.added`` announced, its lists copied, to
    be grown by the item's deltas."""
    return {k: list(v) if isinstance(v, list) else v for k, v in item.items()}


class _Pieces(list[str]):
    """The fragments of one text an item's deltas add, joined once at the end (adding
    to a string at every delta would copy it each time)."""


def _pieces(entry: dict[str, Any], key: str) -> _Pieces:
    """``entry[key]`` as fragments to append to (the announced text first)."""
    value = entry.get(key)
    if isinstance(value, _Pieces):
        return value
    pieces = entry[key] = _Pieces([value] if isinstance(value, str) else [])
    return pieces


def _built(item: dict[str, Any]) -> dict[str, Any]:
    """An item built from deltas with its fragments joined: as a body would list it."""

    def joined(entry: dict[str, Any]) -> dict[str, Any]:
        return {k: "".join(v) if isinstance(v, _Pieces) else v for k, v in entry.items()}

    out = joined(item)
    for field in ("content", "summary"):
        entries = out.get(field)
        if isinstance(entries, list):
            out[field] = [joined(e) if isinstance(e, dict) else e for e in entries]
    return out


class StreamDecoder:
    """Responses stream events in, deltas out, then the complete message.

    Feed each server-sent event in order; ``feed`` returns the deltas the event carries
    (text, refusal text, reasoning summary text and function-call arguments, indexed by
    ``output_index``) or the failure it reports. The stream is complete at
    ``response.completed`` or ``response.incomplete``: the message is then read from the
    response those events carry, exactly as ``decode_response`` reads a body. When that
    response lists no ``output`` (left out, or empty), the output is rebuilt from the
    stream as the SDK's accumulator does: per ``output_index``, the item of
    ``response.output_item.done``, else the item ``response.output_item.added``
    announced with the content, arguments and summaries its deltas added (an item cut
    by ``max_output_tokens`` keeps its phase and its refusal). So a stream and the body
    of the same response decode to the same message. Events of other types are ignored.
    A builder, mutated in place; deterministic, effect-free.
    """

    __slots__ = (
        "_acc",
        "_done",
        "_final",
        "_items",
        "_model",
        "_open",
        "_origin",
        "_summaries",
        "_usage",
    )

    def __init__(self, *, origin: Origin | None = None) -> None:
        self._origin = origin
        self._acc = StreamAccumulator()
        self._done = False
        self._final: Message | None = None
        self._items: dict[int, object] = {}  # output_index -> item from output_item.done
        self._open: dict[int, dict[str, Any]] = {}  # output_index -> item built from deltas
        self._summaries: dict[int, int] = {}  # output_index -> last summary_index seen
        self._model: str | None = None
        self._usage: Usage | None = None

    @property
    def done(self) -> bool:
        """Whether ``response.completed`` or ``response.incomplete`` arrived."""
        return self._done

    @property
    def model(self) -> str | None:
        """The model that answered, as the events name it."""
        return self._model

    @property
    def usage(self) -> Usage | None:
        """The usage of the finished response (``None`` before it)."""
        return self._usage

    @property
    def finish_reason(self) -> str | None:
        """The finish reason, once the response finished."""
        return None if self._final is None else self._final.finish_reason

    def feed(self, event: ServerSentEvent) -> Result[tuple[ModelDelta, ...], WireError]:
        """Read one event.

        Returns:
            The deltas it carries, or ``Failure(WireError)``: the error a
            ``response.failed`` or ``error`` event reports, or ``BAD_RESPONSE`` for an
            event that cannot be read.
        """
        if self._done:
            return Success(())
        try:
            data = obj(parse_json(event.data, f"{event.event} event"), f"{event.event} event")
            kind = data.get("type")
            kind = kind if isinstance(kind, str) else event.event
            if kind == "error":
                return Failure(_reported_error(data, "an error in the stream"))
            if kind == "response.failed":
                response = data.get("response")
                error = response.get("error") if isinstance(response, dict) else None
                return Failure(
                    _reported_error(error if isinstance(error, dict) else data, "a failure")
                )
            deltas = self._read(kind, data)
        except Malformed as exc:
            return Failure(_bad_response(exc))
        self._acc.add_all(deltas)
        return Success(deltas)

    @staticmethod
    def _index(data: dict[str, Any], path: str) -> int:
        index = data.get("output_index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            bad(f"{path}.output_index", "a non-negative integer", index)
        return index

    def _read(self, kind: str, data: dict[str, Any]) -> tuple[ModelDelta, ...]:
        if kind in ("response.created", "response.in_progress"):
            response = obj(data.get("response"), f"{kind}.response")
            model = opt_str(response, "model", f"{kind}.response")
            if model:
                self._model = model
        elif kind == "response.output_item.added":
            index = self._index(data, kind)
            item = obj(data.get("item"), f"{kind}.item")
            itype = req_str(item, "type", f"{kind}.item")
            self._open[index] = _opened_item(item)
            if itype == "function_call":
                return (
                    ToolCallDelta(
                        index,
                        id=opt_str(item, "call_id", f"{kind}.item") or None,
                        name=opt_str(item, "name", f"{kind}.item") or None,
                        arguments=opt_str(item, "arguments", f"{kind}.item") or "",
                    ),
                )
            if itype == "reasoning":
                return (ThinkingDelta("", index),)
        elif kind == "response.content_part.added":
            part = obj(data.get("part"), f"{kind}.part")
            self._grow(data, kind, "content", "content_index", dict(part))
        elif kind == "response.reasoning_summary_part.added":
            part = obj(data.get("part"), f"{kind}.part")
            self._grow(data, kind, "summary", "summary_index", dict(part))
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            text = req_str(data, "delta", kind)
            key, ctype = ("text", "output_text") if "text" in kind else ("refusal", "refusal")
            self._grow(data, kind, "content", "content_index", {"type": ctype}, (key, text))
            return (TextDelta(text, self._index(data, kind)),) if text else ()
        elif kind == "response.function_call_arguments.delta":
            fragment = req_str(data, "delta", kind)
            call = self._open.get(self._index(data, kind))
            if call is not None:
                _pieces(call, "arguments").append(fragment)
            return (ToolCallDelta(self._index(data, kind), arguments=fragment),) if fragment else ()
        elif kind == "response.reasoning_text.delta":
            text = req_str(data, "delta", kind)
            self._grow(
                data, kind, "content", "content_index", {"type": "reasoning_text"}, ("text", text)
            )
        elif kind == "response.reasoning_summary_text.delta":
            index = self._index(data, kind)
            text = req_str(data, "delta", kind)
            self._grow(
                data, kind, "summary", "summary_index", {"type": "summary_text"}, ("text", text)
            )
            summary = data.get("summary_index", 0)
            summary = summary if isinstance(summary, int) and not isinstance(summary, bool) else 0
            last = self._summaries.get(index)
            self._summaries[index] = summary
            if last is not None and summary != last:
                text = _SUMMARY_SEPARATOR + text
            return (ThinkingDelta(text, index),) if text else ()
        elif kind == "response.output_item.done":
            self._items[self._index(data, kind)] = obj(data.get("item"), f"{kind}.item")
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(kind, obj(data.get("response"), f"{kind}.response"))
        return ()

    def _grow(
        self,
        data: dict[str, Any],
        kind: str,
        field: str,
        position: str,
        new: dict[str, Any],
        append: tuple[str, str] | None = None,
    ) -> None:
        """Add to the item being built at the event's ``output_index``: a new entry of
        its ``field`` list (``content`` or ``summary``) at ``data[position]``, or text
        appended to that entry's ``append[0]`` (the entry made from ``new`` when the
        stream never announced it). Events for an item never announced are left out
        here (their deltas still reach the accumulator)."""
        item = self._open.get(self._index(data, kind))
        if item is None:
            return
        entries = item.get(field)
        if not isinstance(entries, list):
            entries = item[field] = []
        at = data.get(position, len(entries) if append is None else max(len(entries) - 1, 0))
        if not isinstance(at, int) or isinstance(at, bool) or at < 0:
            bad(f"{kind}.{position}", "a non-negative integer", at)
        while len(entries) <= at:
            entries.append(dict(new))
        if append is None:
            entries[at] = new
            return
        entry = entries[at]
        if not isinstance(entry, dict):
            entry = entries[at] = dict(new)
        key, text = append
        _pieces(entry, key).append(text)

    def _finish(self, kind: str, response: dict[str, Any]) -> None:
        output = response.get("output")
        if isinstance(output, list) and output:
            items = [(raw, f"{kind}.response.output[{k}]") for k, raw in enumerate(output)]
        else:  # the output as the stream built it: done items, else what was added so far
            items = [
                (self._items[k], f"output_item.done[{k}]")
                if k in self._items
                else (_built(self._open[k]), f"output_item.added[{k}]")
                for k in sorted(self._items.keys() | self._open.keys())
            ]
        if not response.get("model") and self._model:
            response = {**response, "model": self._model}
        message = _message(response, items)
        if not items and self._acc.parts:
            message = self._acc.message(
                model=message.model, usage=message.usage, finish_reason=message.finish_reason
            )
        self._final = message
        self._model = message.model
        self._usage = message.usage
        self._done = True

    def finish(self) -> Result[Message, WireError]:
        """The complete assistant message, once the stream is done.

        Returns:
            The message (``model``, ``usage``, ``finish_reason`` included), or
            ``Failure(WireError)`` of kind ``STREAM_INTERRUPTED`` when the response never
            finished.
        """
        if self._final is None:
            return Failure(
                WireError(
                    ModelErrorKind.STREAM_INTERRUPTED,
                    "the OpenAI Responses stream ended before response.completed",
                )
            )
        return Success(stamp_origin(self._final, self._origin))

    def message(self) -> Message:
        """The message built so far: the finished one, else what the deltas built."""
        if self._final is not None:
            return stamp_origin(self._final, self._origin)
        return stamp_origin(self._acc.message(model=self._model), self._origin)
