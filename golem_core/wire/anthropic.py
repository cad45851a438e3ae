"""The pure codec of Anthropic Messages.

Owns the request body built from a ``ModelRequest``, the assistant ``Message`` read from
a response body or from a stream of events, and the reading of error bodies. No I/O: the
shell (``golem_shell.models.anthropic``) does the HTTP. The mapping:

- instructions are the top-level ``system`` string; system messages of the history are
  never sent, nor are unknown parts;
- roles alternate: consecutive user-side messages (user messages and tool results) are
  merged into one ``user`` turn whose ``tool_result`` blocks come first, and
  consecutive assistant messages into one ``assistant`` turn;
- user text, images (``url`` or ``base64`` source; JPEG, PNG, GIF, WebP) and documents
  (PDF by URL or as base64, plain text as a ``text`` source) become content blocks;
  audio, video and other media (SVG, octet-stream, ...) are sent as a short textual
  stand-in naming what they were, their type and size (ADR 0067); empty text blocks,
  which Anthropic rejects, are not sent, and a message left empty is not sent;
- an assistant turn keeps its blocks in order: thinking with its ``signature`` unchanged
  (``thinking``), redacted thinking (``redacted_thinking`` with ``data``), text, and
  ``tool_use`` whose ``input`` is ``wire_arguments(call)`` (a truncated call travels as
  ``{"truncated_args": "<verbatim>"}``). Thinking without a signature (from another
  provider) cannot be verified and is not sent; calls without an id are not sent;
- a tool result is a ``tool_result`` block: ``tool_use_id``, ``content`` (a string for
  text, blocks when the tool returned media, omitted when empty) and ``is_error: true``
  for a failed result;
- with no tools declared, tool calls and results are rendered as text (ADR 0031);
- a tool is ``strict: true`` (strict tool use) with its schema shaped as for structured
  output (``structured_schema``) on the models that have structured outputs, when
  Anthropic takes its schema and the request's budget of strict schemas allows
  (``strict_tool_schemas``, ADR 0130); other tools go as they are, without ``strict``;
- ``max_tokens`` is required: the request's, else ``default_max_tokens`` (4096);
  ``tool_choice_required`` is ``{"type": "any"}``; ``parallel_tool_calls=False`` is
  ``disable_parallel_tool_use``; ``stop`` is ``stop_sequences``;
- an ``output_schema`` (native structured output, ADR 0087; Claude 4.5 and later,
  ``supports_structured_output``) is ``output_config.format``: ``{"type":
  "json_schema", "schema"}``, the schema closed (``additionalProperties: false`` on every
  object that does not say) and without the constraints Anthropic refuses (numeric and
  length bounds, patterns, ``prefixItems``, undocumented formats), which move into the
  description (the run still validates). A schema Anthropic is documented to refuse
  whatever is moved (an open map, a recursive type, ...; ``structured_output_problem``)
  is refused here, never sent (ADR 0120).

Responses: text, thinking (signature kept), redacted thinking, and tool calls with ids
and raw arguments: a non-streamed ``input`` object is written as compact JSON with UTF-8
kept; a streamed input is its ``partial_json`` fragments concatenated verbatim (a block
that ended with no fragment is ``{}``; a block cut by ``max_tokens`` keeps what came).
``stop_reason`` is kept as the finish reason. ``Usage``: input counts every prompt token
(``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``), cache read
and write as reported; in a stream the last cumulative figure of each field wins. A
stream is complete only at ``message_stop``; an ``error`` event fails it.

Context management (ADR 0148): ``encode_request(context_edits=...)`` sends
``context_management: {"edits": [...]}`` (``clear_tool_uses``, ``clear_thinking``,
``compact``; ``beta_headers`` names the ``anthropic-beta`` values they need). A
``compaction`` block (``compact_20260112``) becomes a ``TextPart`` of its summary whose
``extra`` holds ``COMPACTION_KEY`` (the block's ``content``, JSON, ``null`` for a failed
compaction) and ``COMPACTION_FIELDS_KEY`` (every other field of the block as it came:
``encrypted_content``, ``signature``, ``tool_changes``, ...); the encoder sends it back
as a ``compaction`` block holding every field unchanged, so Anthropic drops what stands
before it. A stream carries it as ``content_block_start`` then one ``compaction_delta``
(its ``content`` and ``encrypted_content``). A request carrying a compaction block needs
the compaction beta (``request_betas(body)``: the ``anthropic-beta`` values a body
needs, its edits' and its blocks'). The edits a response
reports (``context_management.applied_edits``) are kept in the message's ``extra``
(``APPLIED_EDITS_KEY``), never sent.

Over 600 lines because a codec is one concept: the request encoder and the response,
stream and error decoders of one API share its vocabulary and are read together.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, assert_never

import attrs
from returns.result import Failure, Result, Success

from golem_core._messages import (
    DataPart,
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
from golem_core.wire._cache import add_anthropic_breakpoints
from golem_core.wire._common import (
    Malformed,
    Origin,
    WireError,
    WireIds,
    arr,
    bad,
    call_as_text,
    decode_error_body,
    dumps_compact,
    obj,
    opt_count,
    opt_str,
    parse_json,
    recursive_defs,
    req_str,
    result_as_text,
    stamp_origin,
    stand_in,
    stream_error,
    wire_sequence,
)
from golem_core.wire._sse import ServerSentEvent
from golem_core.wire._stream import StreamAccumulator

__all__ = [
    "ANTHROPIC_VERSION",
    "APPLIED_EDITS_KEY",
    "COMPACTION_BETA",
    "COMPACTION_FIELDS_KEY",
    "COMPACTION_KEY",
    "CONTEXT_MANAGEMENT_BETA",
    "DEFAULT_MAX_TOKENS",
    "ID_CHARS",
    "PROVIDER",
    "StreamDecoder",
    "beta_headers",
    "clear_thinking",
    "clear_tool_uses",
    "compact",
    "compaction_block",
    "compaction_content",
    "compaction_part",
    "context_edits_problem",
    "decode_error",
    "decode_response",
    "encode_request",
    "media_block",
    "request_betas",
    "structured_output_problem",
    "strict_tool_schemas",
    "structured_schema",
    "supports_structured_output",
]

PROVIDER = "Anthropic"
ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header golem speaks."""
DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` when neither the request nor the adapter sets one (Anthropic requires it)."""
COMPACTION_KEY = "anthropicCompaction"
"""The ``extra`` key of a text part standing for a ``compaction`` block: its ``content``
as JSON (a string, or ``null`` for a compaction that failed)."""
COMPACTION_FIELDS_KEY = "anthropicCompactionFields"
"""The ``extra`` key of a text part standing for a ``compaction`` block: every field of
the block other than ``type`` and ``content`` (``encrypted_content``, ``signature``,
``tool_changes``, and any field a later API version adds), as one JSON object, sent
back verbatim with the block."""
APPLIED_EDITS_KEY = "anthropicAppliedEdits"
"""The ``extra`` key of a message holding the ``context_management.applied_edits`` its
response reported (JSON list): a report, never sent."""
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
"""The ``anthropic-beta`` value of the clearing edits."""
COMPACTION_BETA = "compact-2026-01-12"
"""The ``anthropic-beta`` value of ``compact_20260112``."""
MIN_COMPACT_TRIGGER = 50_000
"""The smallest ``trigger`` (input tokens) ``compact_20260112`` takes."""

_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


class _Unsupported(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _media(part: URLPart | DataPart) -> dict[str, Any]:
    if isinstance(part, URLPart):
        if part.kind in ("image", "document"):
            return {"type": part.kind, "source": {"type": "url", "url": part.url}}
        return _stand_in(part)
    media_type = part.media_type.lower()
    if part.kind == "image" and media_type in _IMAGE_TYPES:
        source = {"type": "base64", "media_type": media_type, "data": _b64(part.data)}
        return {"type": "image", "source": source}
    if part.kind == "document" and media_type == "application/pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": _b64(part.data)}
        return {"type": "document", "source": source}
    if part.kind == "document" and media_type == "text/plain":
        try:
            text = part.data.decode("utf-8")
        except UnicodeDecodeError:
            return _stand_in(part)
        return {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
    return _stand_in(part)


media_block = _media
"""The content block a URL or data part becomes (its stand-in when Anthropic cannot take it)."""


def _stand_in(part: URLPart | DataPart) -> dict[str, Any]:
    """A text block in place of a part Anthropic cannot take (ADR 0067)."""
    return {"type": "text", "text": stand_in(part, PROVIDER)}


def _user_blocks(parts: Sequence[Part], *, include_text: bool = True) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        match part:
            case TextPart():
                if include_text and _sendable(part.text):
                    blocks.append({"type": "text", "text": part.text})
            case URLPart() | DataPart():
                blocks.append(_media(part))
            case ThinkingPart() | ToolCallPart() | UnknownPart():
                pass  # not user content: not sent
            case _:  # pragma: no cover
                assert_never(part)
    return blocks


ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
"""The characters Anthropic takes in a ``tool_use`` id (``^[a-zA-Z0-9_-]+$``)."""
_ID_CHARS = ID_CHARS


def _sendable(text: str) -> bool:
    """Anthropic refuses text blocks that are empty or only whitespace (a real reply can
    start with a ``"\n\n"`` block): such a block is left off the wire, never the history."""
    return bool(text) and not text.isspace()


def _trim_final_assistant(turns: list[_Turn]) -> None:
    """Anthropic refuses a final assistant turn (a prefill) ending in whitespace: its last
    text block loses the trailing whitespace on the wire (and goes if nothing is left)."""
    if not turns or turns[-1].role != "assistant":
        return
    blocks = turns[-1].blocks
    if blocks and blocks[-1]["type"] == "text":
        text = blocks[-1]["text"].rstrip()
        if text:
            blocks[-1] = {"type": "text", "text": text}
        else:
            blocks.pop()
    if not blocks and not turns[-1].results:
        turns.pop()


_BLOCK_OWN = frozenset({"type", "content", "cache_control"})
"""The fields of a ``compaction`` block golem writes itself (``cache_control`` is a
request's marker, never kept)."""


def compaction_part(content: str | None, fields: Mapping[str, Any] | None = None) -> TextPart:
    """The part a ``compaction`` block becomes: its summary as text (empty when the
    compaction failed), the block's ``content`` kept in ``extra`` (``COMPACTION_KEY``)
    and every other field of ``fields`` (the block as it came: ``encrypted_content``,
    ``signature``, ``tool_changes``, ...) in ``COMPACTION_FIELDS_KEY``, to be sent back
    unchanged. Total, deterministic."""
    extra = [(COMPACTION_KEY, dumps_compact(content))]
    kept = {k: v for k, v in (fields or {}).items() if k not in _BLOCK_OWN}
    if kept:
        text = json.dumps(kept, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
        extra.append((COMPACTION_FIELDS_KEY, text))  # keys sorted: a stream's order differs
    return TextPart(content or "", extra=tuple(extra))


_NOT_COMPACTION: Any = object()


def compaction_content(part: TextPart) -> Any:
    """The ``content`` of the ``compaction`` block ``part`` stands for (a string or
    ``None``), or ``_NOT_COMPACTION`` when it stands for none. Total."""
    for key, text in part.extra:
        if key == COMPACTION_KEY:
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                return _NOT_COMPACTION
            return value if value is None or (isinstance(value, str) and value) else None
    return _NOT_COMPACTION


def _compaction_fields(part: TextPart) -> dict[str, Any]:
    for key, text in part.extra:
        if key == COMPACTION_FIELDS_KEY:
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                return {}
            if isinstance(value, dict):
                return {k: v for k, v in value.items() if k not in _BLOCK_OWN}
    return {}


def compaction_block(part: TextPart) -> dict[str, Any] | None:
    """The ``compaction`` block ``part`` stands for, every field with the value it came
    with (``type`` and ``content`` first, then the others: ``encrypted_content``,
    ``signature``, ``tool_changes``, ...), or ``None`` when it stands for none. Total,
    deterministic."""
    content = compaction_content(part)
    if content is _NOT_COMPACTION:
        return None
    return {"type": "compaction", "content": content, **_compaction_fields(part)}


def _assistant_blocks(message: Message, with_tools: bool, ids: WireIds) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if type(part) is TextPart and part.extra:
            block = compaction_block(part)
            if block is not None:
                blocks.append(block)
                continue
        match part:
            case ThinkingPart():
                if part.redacted:
                    blocks.append({"type": "redacted_thinking", "data": part.text})
                elif part.signature:
                    blocks.append(
                        {"type": "thinking", "thinking": part.text, "signature": part.signature}
                    )
            case TextPart():
                if _sendable(part.text):
                    blocks.append({"type": "text", "text": part.text})
            case ToolCallPart():
                arguments = wire_arguments(part)
                if not with_tools:
                    blocks.append({"type": "text", "text": call_as_text(part, arguments)})
                elif part.id:
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": ids.call(part.id),
                            "name": part.name,
                            "input": arguments,
                        }
                    )
            case URLPart() | DataPart():  # no media in an assistant turn: its stand-in
                blocks.append(_stand_in(part))
            case UnknownPart():
                pass
            case _:  # pragma: no cover
                assert_never(part)
    return blocks


def _tool_result(message: Message, ids: WireIds) -> dict[str, Any]:
    assert message.tool_call_id is not None
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": ids.result(message.tool_call_id)}
    media = _user_blocks(message.parts, include_text=False)
    text = message.text if _sendable(message.text) else ""
    if media:
        block["content"] = ([{"type": "text", "text": text}] if text else []) + media
    elif text:
        block["content"] = text
    if message.failed:
        block["is_error"] = True
    return block


class _Turn:
    __slots__ = ("blocks", "results", "role")

    def __init__(self, role: str) -> None:
        self.role = role
        self.results: list[dict[str, Any]] = []
        self.blocks: list[dict[str, Any]] = []

    def render(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.results + self.blocks}


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    with_tools = bool(request.tools)
    turns: list[_Turn] = []
    ids = WireIds(allowed=_ID_CHARS, unique=True)

    def turn(role: str) -> _Turn:
        if not turns or turns[-1].role != role:
            turns.append(_Turn(role))
        return turns[-1]

    for _, message in wire_sequence(request.messages):
        match message.role:
            case Role.SYSTEM:
                continue
            case Role.USER:
                blocks = _user_blocks(message.parts)
                if blocks:
                    turn("user").blocks.extend(blocks)
            case Role.ASSISTANT:
                blocks = _assistant_blocks(message, with_tools, ids)
                if blocks:
                    turn("assistant").blocks.extend(blocks)
            case Role.TOOL:
                if not with_tools:
                    text = {"type": "text", "text": result_as_text(message)}
                    media = _user_blocks(message.parts, include_text=False)
                    turn("user").blocks.extend([text, *media])
                elif message.tool_call_id:  # a result that answers no call is not sent
                    turn("user").results.append(_tool_result(message, ids))
            case _:  # pragma: no cover
                assert_never(message.role)
    _trim_final_assistant(turns)
    if not turns:
        raise _Unsupported(
            "nothing to send: no message holds content Anthropic accepts"
            " (empty or whitespace-only text is not sent)"
        )
    return [t.render() for t in turns]


def clear_tool_uses(
    *,
    trigger_tokens: int | None = None,
    keep_tool_uses: int | None = None,
    clear_at_least_tokens: int | None = None,
    exclude_tools: Sequence[str] = (),
    clear_tool_inputs: bool = False,
) -> dict[str, Any]:
    """The ``clear_tool_uses_20250919`` edit: Anthropic clears the oldest tool results
    (and, with ``clear_tool_inputs``, their calls) once the prompt passes
    ``trigger_tokens``, keeping the newest ``keep_tool_uses``. Unset fields take
    Anthropic's defaults (100,000 tokens; 3 tool uses). Total."""
    edit: dict[str, Any] = {"type": "clear_tool_uses_20250919"}
    if trigger_tokens is not None:
        edit["trigger"] = {"type": "input_tokens", "value": trigger_tokens}
    if keep_tool_uses is not None:
        edit["keep"] = {"type": "tool_uses", "value": keep_tool_uses}
    if clear_at_least_tokens is not None:
        edit["clear_at_least"] = {"type": "input_tokens", "value": clear_at_least_tokens}
    if exclude_tools:
        edit["exclude_tools"] = list(exclude_tools)
    if clear_tool_inputs:
        edit["clear_tool_inputs"] = True
    return edit


def clear_thinking(keep_turns: int | None = None) -> dict[str, Any]:
    """The ``clear_thinking_20251015`` edit: keep the thinking of the newest
    ``keep_turns`` assistant turns (``None``: all of it, ``keep: "all"``). Total."""
    keep: Any = "all" if keep_turns is None else {"type": "thinking_turns", "value": keep_turns}
    return {"type": "clear_thinking_20251015", "keep": keep}


def compact(
    *,
    trigger_tokens: int | None = None,
    pause_after_compaction: bool = False,
    instructions: str | None = None,
) -> dict[str, Any]:
    """The ``compact_20260112`` edit: once the prompt passes ``trigger_tokens`` (default
    150,000; at least 50,000) Anthropic summarizes it into a ``compaction`` block at the
    start of the answer; ``pause_after_compaction`` stops there (stop reason
    ``compaction``); ``instructions`` replace its summarizing prompt. Total."""
    edit: dict[str, Any] = {"type": "compact_20260112"}
    if trigger_tokens is not None:
        edit["trigger"] = {"type": "input_tokens", "value": trigger_tokens}
    if pause_after_compaction:
        edit["pause_after_compaction"] = True
    if instructions is not None:
        edit["instructions"] = instructions
    return edit


_EDIT_BETAS = {
    "clear_tool_uses_20250919": CONTEXT_MANAGEMENT_BETA,
    "clear_thinking_20251015": CONTEXT_MANAGEMENT_BETA,
    "compact_20260112": COMPACTION_BETA,
}


def context_edits_problem(edits: Sequence[Mapping[str, Any]]) -> str | None:
    """Why Anthropic would refuse ``edits``, or ``None``: an edit type it does not know,
    a ``compact`` trigger under 50,000 tokens, or ``clear_thinking`` not listed first.
    Total, deterministic."""
    for k, edit in enumerate(edits):
        kind = edit.get("type")
        if kind not in _EDIT_BETAS:
            return f"edits[{k}]: unknown edit type {kind!r} (known: {', '.join(_EDIT_BETAS)})"
        if kind == "clear_thinking_20251015" and k != 0:
            return f"edits[{k}]: clear_thinking_20251015 must be listed first"
        trigger = edit.get("trigger")
        if kind == "compact_20260112" and isinstance(trigger, Mapping):
            value = trigger.get("value")
            if not isinstance(value, int) or value < MIN_COMPACT_TRIGGER:
                return f"edits[{k}]: compact_20260112 trigger must be at least 50000 tokens"
    return None


def beta_headers(edits: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The ``anthropic-beta`` values ``edits`` need, each once, in a fixed order. Total."""
    wanted = {_EDIT_BETAS[e["type"]] for e in edits if e.get("type") in _EDIT_BETAS}
    return tuple(b for b in (CONTEXT_MANAGEMENT_BETA, COMPACTION_BETA) if b in wanted)


def request_betas(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``anthropic-beta`` values a request ``body`` needs, each once, in a fixed
    order: its ``context_management`` edits' (``beta_headers``), and the compaction beta
    when a message holds a ``compaction`` block (Anthropic refuses one without it).
    Total, deterministic."""
    management = body.get("context_management")
    edits = management.get("edits") if isinstance(management, Mapping) else None
    wanted = set(beta_headers([e for e in edits or () if isinstance(e, Mapping)]))
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") == "compaction" for b in content
        ):
            wanted.add(COMPACTION_BETA)
            break
    return tuple(b for b in (CONTEXT_MANAGEMENT_BETA, COMPACTION_BETA) if b in wanted)


def encode_request(
    request: ModelRequest,
    *,
    model: str,
    stream: bool,
    default_max_tokens: int = DEFAULT_MAX_TOKENS,
    context_edits: Sequence[Mapping[str, Any]] = (),
) -> Result[dict[str, Any], WireError]:
    """The JSON body of a Messages request.

    Total, deterministic (same request, equal body, same key order).

    Args:
        request: what to send.
        model: the model name (``"claude-sonnet-4-5"``).
        stream: whether to ask for a stream of events.
        default_max_tokens: ``max_tokens`` when the request's settings leave it unset.
        context_edits: ``context_management.edits`` (``clear_tool_uses``,
            ``clear_thinking``, ``compact``); the adapter sends ``beta_headers(edits)``.

    Returns:
        The body (a part Anthropic cannot take travels as its textual stand-in, ADR
        0067), or ``Failure(WireError)`` of kind ``UNSUPPORTED_CONTENT`` when nothing is
        left to send or the edits would be refused (``context_edits_problem``).
    """
    problem = context_edits_problem(context_edits)
    if problem is not None:
        return Failure(
            WireError(ModelErrorKind.UNSUPPORTED_CONTENT, f"context_management.{problem}")
        )
    try:
        messages = _messages(request)
    except _Unsupported as exc:
        return Failure(WireError(ModelErrorKind.UNSUPPORTED_CONTENT, exc.message))
    settings = request.settings
    max_tokens = settings.max_tokens if settings.max_tokens is not None else default_max_tokens
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    if request.instructions:
        body["system"] = request.instructions
    body["messages"] = messages
    if request.tools:
        tools: list[dict[str, Any]] = []
        for tool, shaped in zip(request.tools, strict_tool_schemas(request, model), strict=True):
            spec: dict[str, Any] = {"name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            if shaped is None:
                spec["input_schema"] = tool.parameters
            else:  # strict tool use (ADR 0130)
                spec["input_schema"] = shaped
                spec["strict"] = True
            tools.append(spec)
        body["tools"] = tools
        choice: dict[str, Any] | None = None
        if request.tool_choice_required:
            choice = {"type": "any"}
        if settings.parallel_tool_calls is False:
            choice = choice or {"type": "auto"}
            choice["disable_parallel_tool_use"] = True
        if choice is not None:
            body["tool_choice"] = choice
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.stop:
        body["stop_sequences"] = list(settings.stop)
    if request.output_schema is not None:
        problem = structured_output_problem(request.output_schema.parameters)
        if problem is not None:  # never a body Anthropic is documented to refuse (ADR 0120)
            return Failure(
                WireError(
                    ModelErrorKind.UNSUPPORTED_CONTENT,
                    f"Anthropic's structured output cannot take the output schema: {problem};"
                    " use output_mode='tool' (the final_result tool takes any schema)",
                )
            )
        schema = structured_schema(request.output_schema.parameters)
        body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    if context_edits:
        body["context_management"] = {"edits": [dict(e) for e in context_edits]}
    if stream:
        body["stream"] = True
    add_anthropic_breakpoints(body, request)
    return Success(body)


# -- native structured output (ADR 0087) -------------------------------------------------

_STRUCTURED_MODEL = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?:-|@|$)")
_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
"""The string formats Anthropic's structured output documents; others move into the
description."""
MAX_OPTIONAL_PROPERTIES = 24
"""Anthropic's limit on optional properties across one structured output schema."""
MAX_UNION_PROPERTIES = 16
"""Anthropic's limit on properties typed as a union (``anyOf``, a list of types)."""
_UNSUPPORTED_KEYWORDS = (
    "prefixItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "maxItems",
    "uniqueItems",
)


def supports_structured_output(model: str) -> bool:
    """Whether ``model`` takes ``output_config.format`` (Claude Opus, Sonnet and Haiku 4.5
    and later). A guess from the name: total, deterministic."""
    found = _STRUCTURED_MODEL.search(model.strip().lower())
    if found is None:
        return False
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    return (major, minor) >= (4, 5)


MAX_STRICT_TOOLS = 20
"""Anthropic's limit on tools with ``strict: true`` in one request."""


def strict_tool_schemas(request: ModelRequest, model: str) -> list[dict[str, Any] | None]:
    """For each of ``request.tools``, the schema it is sent with as a strict tool
    (``strict: true``, ADR 0130), or ``None``: sent as it is, without ``strict``.

    A tool is strict when ``model`` has structured outputs (``supports_structured_output``),
    its schema has none of the problems Anthropic documents (``structured_output_problem``)
    and it fits the request's budget, which Anthropic counts across every strict schema
    of a request (the output schema first, then the tools in order): at most 20 strict
    tools, 24 optional and 16 union-typed properties. The schema is ``structured_schema``
    of the tool's (closed, constraints moved into the description); the tool's owner
    still validates the arguments. Total, deterministic."""
    if not supports_structured_output(model):
        return [None for _ in request.tools]
    optional = unions = count = 0
    output = request.output_schema
    if output is not None and structured_output_problem(output.parameters) is None:
        optional, unions = _complexity(output.parameters)
    out: list[dict[str, Any] | None] = []
    for tool in request.tools:
        shaped: dict[str, Any] | None = None
        if structured_output_problem(tool.parameters) is None:
            more_optional, more_unions = _complexity(tool.parameters)
            if (
                count < MAX_STRICT_TOOLS
                and optional + more_optional <= MAX_OPTIONAL_PROPERTIES
                and unions + more_unions <= MAX_UNION_PROPERTIES
            ):
                shaped = structured_schema(tool.parameters)
                count, optional, unions = count + 1, optional + more_optional, unions + more_unions
        out.append(shaped)
    return out


def _complexity(schema: Any) -> tuple[int, int]:
    """``(optional properties, union-typed properties)`` of ``schema``, as Anthropic counts."""
    counts = {"optional": 0, "union": 0}
    _first_problem(schema, "$", counts)
    return counts["optional"], counts["union"]


def structured_schema(schema: Any) -> Any:
    """``schema`` as Anthropic's structured output takes it: every object closed
    (``additionalProperties: false`` unless it says otherwise), numeric, length and
    pattern constraints moved into the description, ``minItems`` above 1 likewise. A new
    value; total, deterministic."""
    if isinstance(schema, list):
        return [structured_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    moved: list[str] = []
    for key, value in schema.items():
        if (
            key in _UNSUPPORTED_KEYWORDS
            or (key == "minItems" and isinstance(value, int) and value > 1)
            or (key == "format" and value not in _STRING_FORMATS)
        ):
            moved.append(f"{key}: {dumps_compact(value)}")
        elif key in ("properties", "$defs", "definitions", "patternProperties"):
            out[key] = (
                {k: structured_schema(v) for k, v in value.items()}
                if isinstance(value, dict)
                else value
            )
        elif key in ("items", "anyOf", "allOf", "oneOf", "not", "additionalProperties"):
            out[key] = structured_schema(value)
        else:
            out[key] = value
    if (out.get("type") == "object" or "properties" in out) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if moved:
        note = "; ".join(moved)
        description = out.get("description")
        out["description"] = f"{description} ({note})" if description else note
    return out


def structured_output_problem(schema: Any) -> str | None:
    """What in ``schema`` Anthropic's structured output is documented to refuse even
    after ``structured_schema`` (``None``: nothing): an open map (an object whose
    ``additionalProperties`` is not ``false``, or an object with no ``properties``:
    closing it would change what it means), a recursive type, a value of any type (no
    ``type``), an ``enum`` of non-primitive values, a ``$ref`` outside the schema, more
    than 24 optional or 16 union-typed properties. Names the first problem and where.
    Total, deterministic."""
    recursive = recursive_defs(schema)
    if recursive:
        names = ", ".join(sorted(recursive))
        return f"it is recursive ({names} refers to itself), and recursive schemas are refused"
    counts = {"optional": 0, "union": 0}
    problem = _first_problem(schema, "$", counts)
    if problem is not None:
        return problem
    if counts["optional"] > MAX_OPTIONAL_PROPERTIES:
        return (
            f"it has {counts['optional']} optional properties"
            f" (at most {MAX_OPTIONAL_PROPERTIES} are taken)"
        )
    if counts["union"] > MAX_UNION_PROPERTIES:
        return (
            f"it has {counts['union']} properties typed as a union"
            f" (at most {MAX_UNION_PROPERTIES} are taken)"
        )
    return None


def _first_problem(schema: Any, path: str, counts: dict[str, int]) -> str | None:
    if not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return None if ref.startswith("#") else f"{path} refers to {ref!r} outside the schema"
    typed = {"type", "anyOf", "allOf", "oneOf", "enum", "const"} & set(schema)
    if not typed:
        return f"{path} takes any JSON value (Anthropic needs a type)"
    enum = schema.get("enum")
    if isinstance(enum, list) and not all(
        v is None or isinstance(v, str | int | float | bool) for v in enum
    ):
        return f"{path} is an enum of values that are not strings, numbers or booleans"
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        extra = schema.get("additionalProperties", None if properties is None else False)
        if extra is not False:
            shown = "a schema" if isinstance(extra, dict) else dumps_compact(extra)
            return (
                f"{path} is an open map (additionalProperties: {shown}); Anthropic requires"
                " additionalProperties: false on every object"
            )
    children: list[tuple[Any, str]] = []
    if isinstance(properties, dict):
        required = schema.get("required", ())
        for name, sub in properties.items():
            counts["optional"] += name not in required
            is_union = isinstance(sub, dict) and (
                "anyOf" in sub or isinstance(sub.get("type"), list)
            )
            counts["union"] += is_union
            children.append((sub, f"{path}.{name}"))
    if "items" in schema:
        children.append((schema["items"], f"{path}[]"))
    for key in ("anyOf", "allOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            children += [(o, f"{path}.{key}[{k}]") for k, o in enumerate(options)]
    for key in ("$defs", "definitions"):
        defs = schema.get(key)
        if isinstance(defs, dict):
            children += [(d, f"{path}.{key}.{name}") for name, d in defs.items()]
    for child, where in children:
        problem = _first_problem(child, where, counts)
        if problem is not None:
            return problem
    return None


# -- responses -------------------------------------------------------------------------


def _read_usage(value: object, into: dict[str, int]) -> None:
    """Copy the reported figures of a usage object over ``into`` (cumulative: overwrite)."""
    if not isinstance(value, dict):
        return
    for key in _USAGE_FIELDS:
        count = opt_count(value, key)
        if count is not None:
            into[key] = count
    details = value.get("output_tokens_details")
    if isinstance(details, dict):
        thinking = opt_count(details, "thinking_tokens")
        if thinking is not None:
            into["thinking_tokens"] = thinking


def _usage(fields: Mapping[str, int]) -> Usage | None:
    if not fields:
        return None
    written = fields.get("cache_creation_input_tokens")
    read = fields.get("cache_read_input_tokens")
    return Usage(
        input_tokens=fields.get("input_tokens", 0) + (written or 0) + (read or 0),
        output_tokens=fields.get("output_tokens", 0),
        cache_read_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=fields.get("thinking_tokens"),
    )


def _bad_response(exc: Malformed) -> WireError:
    return WireError(ModelErrorKind.BAD_RESPONSE, f"malformed Anthropic {exc.path}: {exc.reason}")


def _decode(body: object) -> Message:
    top = obj(body, "response")
    if "content" not in top:
        raise Malformed("response.content", "required field is missing")
    parts: list[Part] = []
    for k, raw in enumerate(arr(top.get("content"), "response.content")):
        path = f"response.content[{k}]"
        block = obj(raw, path)
        kind = req_str(block, "type", path)
        if kind == "text":
            text = req_str(block, "text", path)
            if text:
                parts.append(TextPart(text))
        elif kind == "thinking":
            signature = opt_str(block, "signature", path) or None
            parts.append(ThinkingPart(req_str(block, "thinking", path), signature=signature))
        elif kind == "redacted_thinking":
            parts.append(ThinkingPart(req_str(block, "data", path), redacted=True))
        elif kind == "compaction":
            content = block.get("content")
            if content is not None and not isinstance(content, str):
                bad(f"{path}.content", "a string or null", content)
            parts.append(compaction_part(content, block))
        elif kind == "tool_use":
            if "input" not in block:
                raise Malformed(f"{path}.input", "required field is missing")
            arguments = dumps_compact(block["input"])
            parts.append(
                ToolCallPart(
                    req_str(block, "id", path) or None, req_str(block, "name", path), arguments
                )
            )
        # other block types (server tools, citations) are not part of the contract
    fields: dict[str, int] = {}
    _read_usage(top.get("usage"), fields)
    return Message(
        Role.ASSISTANT,
        tuple(parts),
        model=opt_str(top, "model", "response") or None,
        usage=_usage(fields),
        finish_reason=opt_str(top, "stop_reason", "response"),
        extra=_applied_edits(top.get("context_management")),
    )


def _applied_edits(value: object) -> tuple[tuple[str, str], ...]:
    """``context_management.applied_edits`` as the message ``extra`` that keeps it."""
    if not isinstance(value, dict):
        return ()
    edits = value.get("applied_edits")
    if not isinstance(edits, list) or not edits:
        return ()
    return ((APPLIED_EDITS_KEY, dumps_compact(edits)),)


def decode_response(body: object, *, origin: Origin | None = None) -> Result[Message, WireError]:
    """The assistant message of a Messages response body (decoded JSON).

    Total, deterministic.
    ``origin``: who the adapter asked (``Origin``); the message records it (ADR 0085).

    Returns:
        The message with its ``model``, ``usage`` and ``finish_reason``; an error body
        (``"type": "error"``) is that error; a body of the wrong shape is
        ``Failure(WireError)`` of kind ``BAD_RESPONSE`` naming the path that was wrong.
    """
    if isinstance(body, dict) and body.get("type") == "error":
        return Failure(stream_error(PROVIDER, body))
    try:
        return Success(stamp_origin(_decode(body), origin))
    except Malformed as exc:
        return Failure(_bad_response(exc))


def decode_error(
    status: int, headers: Mapping[str, str], body: bytes, *, now_unix: float | None = None
) -> WireError:
    """A failed Messages response (status >= 400) as a ``WireError``.

    Total, deterministic. ``now_unix`` is needed only to read an HTTP-date
    ``retry-after``. See ``golem_core.wire._common`` for the kind table.
    """
    return decode_error_body(PROVIDER, status, headers, body, now_unix=now_unix)


class StreamDecoder:
    """Messages stream events in, deltas out, then the complete message.

    Feed each server-sent event in order; ``feed`` returns the deltas the event carries
    (already folded into the message being built) or the failure it reports. Pings and
    events of unknown type are ignored. A thinking block announces itself with an empty
    ``ThinkingDelta`` (so that an empty block still becomes a part, as in a plain
    response); a ``tool_use`` block that ends without a fragment adds ``"{}"``. The
    stream is complete at ``message_stop``; later events are ignored. A builder, mutated
    in place; deterministic, effect-free.
    """

    __slots__ = (
        "_acc",
        "_args",
        "_blocks",
        "_compactions",
        "_done",
        "_edits",
        "_finish_reason",
        "_model",
        "_origin",
        "_usage",
    )

    def __init__(self, *, origin: Origin | None = None) -> None:
        self._origin = origin
        self._acc = StreamAccumulator()
        self._blocks: dict[int, str] = {}  # block index -> block type
        self._args: set[int] = set()  # tool_use blocks that received a fragment
        self._compactions: dict[int, dict[str, Any]] = {}  # block index -> compaction block
        self._edits: tuple[tuple[str, str], ...] = ()  # applied_edits, from message_delta
        self._done = False
        self._model: str | None = None
        self._usage: dict[str, int] = {}
        self._finish_reason: str | None = None

    @property
    def done(self) -> bool:
        """Whether ``message_stop`` arrived."""
        return self._done

    @property
    def model(self) -> str | None:
        """The model that answered (from ``message_start``)."""
        return self._model

    @property
    def usage(self) -> Usage | None:
        """The usage so far: each field's last cumulative figure, never summed."""
        return _usage(self._usage)

    @property
    def finish_reason(self) -> str | None:
        """The ``stop_reason``, once ``message_delta`` gave it."""
        return self._finish_reason

    def feed(self, event: ServerSentEvent) -> Result[tuple[ModelDelta, ...], WireError]:
        """Read one event.

        Returns:
            The deltas it carries, or ``Failure(WireError)``: the error an ``error``
            event reports, or ``BAD_RESPONSE`` for an event that cannot be read.
        """
        if self._done:
            return Success(())
        try:
            data = obj(parse_json(event.data, f"{event.event} event"), f"{event.event} event")
            kind = data.get("type")
            kind = kind if isinstance(kind, str) else event.event
            if kind == "error":
                return Failure(stream_error(PROVIDER, data))
            deltas = self._read(kind, data)
        except Malformed as exc:
            return Failure(_bad_response(exc))
        self._acc.add_all(deltas)
        return Success(deltas)

    def _index(self, data: dict[str, Any], path: str) -> int:
        index = data.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            bad(f"{path}.index", "a non-negative integer", index)
        return index

    def _read(self, kind: str, data: dict[str, Any]) -> tuple[ModelDelta, ...]:
        if kind == "message_start":
            message = obj(data.get("message"), "message_start.message")
            model = opt_str(message, "model", "message_start.message")
            if model:
                self._model = model
            _read_usage(message.get("usage"), self._usage)
        elif kind == "content_block_start":
            return self._start(data)
        elif kind == "content_block_delta":
            return self._delta(data)
        elif kind == "content_block_stop":
            index = self._index(data, kind)
            if self._blocks.get(index) == "tool_use" and index not in self._args:
                self._args.add(index)
                return (ToolCallDelta(index, arguments="{}"),)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict):
                reason = opt_str(delta, "stop_reason", "message_delta.delta")
                if reason:
                    self._finish_reason = reason
            _read_usage(data.get("usage"), self._usage)
            edits = _applied_edits(data.get("context_management"))
            if edits:
                self._edits = edits
        elif kind == "message_stop":
            self._done = True
        return ()

    def _start(self, data: dict[str, Any]) -> tuple[ModelDelta, ...]:
        path = "content_block_start"
        index = self._index(data, path)
        block = obj(data.get("content_block"), f"{path}.content_block")
        bpath = f"{path}.content_block"
        kind = req_str(block, "type", bpath)
        self._blocks[index] = kind
        if kind == "text":
            text = opt_str(block, "text", bpath)
            return (TextDelta(text, index),) if text else ()
        if kind == "thinking":
            return (
                ThinkingDelta(
                    opt_str(block, "thinking", bpath) or "",
                    index,
                    signature=opt_str(block, "signature", bpath) or None,
                ),
            )
        if kind == "redacted_thinking":
            return (ThinkingDelta(req_str(block, "data", bpath), index, redacted=True),)
        if kind == "compaction":  # its summary comes whole, in one compaction_delta
            kept = dict(block)
            if not isinstance(kept.get("content"), str):
                kept["content"] = None
            self._compactions[index] = kept
            return ()
        if kind == "tool_use":
            initial = block.get("input")
            arguments = dumps_compact(initial) if initial not in (None, {}) else ""
            if arguments:
                self._args.add(index)
            return (
                ToolCallDelta(
                    index,
                    id=req_str(block, "id", bpath) or None,
                    name=req_str(block, "name", bpath),
                    arguments=arguments,
                ),
            )
        return ()

    def _delta(self, data: dict[str, Any]) -> tuple[ModelDelta, ...]:
        path = "content_block_delta"
        index = self._index(data, path)
        delta = obj(data.get("delta"), f"{path}.delta")
        dpath = f"{path}.delta"
        kind = req_str(delta, "type", dpath)
        if kind == "text_delta":
            text = req_str(delta, "text", dpath)
            return (TextDelta(text, index),) if text else ()
        if kind == "thinking_delta":
            text = req_str(delta, "thinking", dpath)
            return (ThinkingDelta(text, index),) if text else ()
        if kind == "signature_delta":
            if index in self._compactions:  # a compaction block's signature, kept verbatim
                self._compactions[index]["signature"] = req_str(delta, "signature", dpath)
                return ()
            return (ThinkingDelta("", index, signature=req_str(delta, "signature", dpath)),)
        if kind == "compaction_delta":  # its fields replace the block's (SDK semantics)
            content = delta.get("content")
            if content is not None and not isinstance(content, str):
                bad(f"{dpath}.content", "a string or null", content)
            if index in self._compactions:
                self._compactions[index].update((k, v) for k, v in delta.items() if k != "type")
            return ()
        if kind == "input_json_delta":
            fragment = req_str(delta, "partial_json", dpath)
            if not fragment or self._blocks.get(index) != "tool_use":
                return ()  # server tools (web search, code execution, mcp) are not calls
            self._args.add(index)
            return (ToolCallDelta(index, arguments=fragment),)
        return ()  # citations and future delta types are not part of the contract

    def finish(self) -> Result[Message, WireError]:
        """The complete assistant message, once the stream is done.

        Returns:
            The message (``model``, ``usage``, ``finish_reason`` included), or
            ``Failure(WireError)`` of kind ``STREAM_INTERRUPTED`` when ``message_stop``
            never came.
        """
        if not self._done:
            return Failure(
                WireError(
                    ModelErrorKind.STREAM_INTERRUPTED,
                    "the Anthropic stream ended before message_stop",
                )
            )
        return Success(self.message())

    def message(self) -> Message:
        """The message built so far (complete once ``done``)."""
        message = self._acc.message(
            model=self._model, usage=_usage(self._usage), finish_reason=self._finish_reason
        )
        if self._compactions:  # Anthropic sends a compaction block first in its answer
            folded = tuple(
                compaction_part(self._compactions[k]["content"], self._compactions[k])
                for k in sorted(self._compactions)
            )
            message = attrs.evolve(message, parts=(*folded, *message.parts))
        if self._edits:
            message = attrs.evolve(message, extra=self._edits)
        return stamp_origin(message, self._origin)
