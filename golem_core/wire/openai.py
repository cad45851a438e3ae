"""The pure codec of OpenAI Chat Completions (and every OpenAI-compatible server).

Owns the request body built from a ``ModelRequest``, the assistant ``Message`` read from
a response body or from a stream of chunks, and the reading of error bodies. No I/O: the
shell (``golem_shell.models.openai``) does the HTTP. The mapping:

- instructions are one leading ``system`` message (``developer`` when asked); system
  messages of the history are never sent; thinking and unknown parts are never sent;
- user text, image (URL or ``data:`` URL), PDF data (``file``) and wav/mp3 data
  (``input_audio``) become content parts; a user message of one text part is sent as a
  plain string; empty text parts are dropped and a message left empty is not sent;
  video, audio URLs, document URLs and other media (SVG, octet-stream, ...) are sent as
  a short textual stand-in naming what they were, their type and size (ADR 0067);
- an assistant message is ``content`` (its text, or ``null`` beside tool calls) and
  ``tool_calls`` whose ``arguments`` string is ``wire_arguments(call)`` as compact JSON
  with UTF-8 kept (``separators=(",", ":")``, ``ensure_ascii=False``): deterministic, and
  a truncated call travels as ``{"truncated_args": "<verbatim>"}``; calls without an id
  cannot be paired and are not sent;
- a tool result is one ``tool`` message (``tool_call_id``, ``content`` = its text; OpenAI
  has no failure flag, so a failed result's own text says what failed); media a tool
  returned cannot go in a ``tool`` message, so, as pydantic-ai does, it follows in one
  ``user`` message after the run of tool messages;
- with no tools declared, tool calls and results are rendered as text (ADR 0031);
- ``max_tokens`` is sent as ``max_tokens`` (not ``max_completion_tokens``), which every
  OpenAI-compatible server understands; ``stop``, ``temperature``, ``top_p`` as named;
  ``parallel_tool_calls`` and ``tool_choice: "required"`` only when tools are declared;
  a stream asks for ``stream_options: {"include_usage": true}``; an ``output_schema``
  (native structured output) is ``response_format: {"type": "json_schema", ...}``, with
  ``strict: true`` and the schema rewritten for strict mode wherever it can be made to
  qualify (``golem_core.wire.strict``, ADR 0130), else ``strict: false`` and the schema
  unchanged; a tool is ``strict: true`` under the same rule (else ``strict`` is left out,
  Chat's default being false).

Responses: ``content`` and a ``refusal`` (OpenAI's text for "I will not answer") both
become the message's text, so a refusal reads like any answer while ``finish_reason``
keeps the provider's string; ``reasoning_content``/``reasoning`` of compatible servers
become a thinking part; tool calls keep their id and their raw ``arguments`` string.
``Usage``: ``prompt_tokens`` in, ``completion_tokens`` out (reasoning included),
``cached_tokens`` read from cache, ``reasoning_tokens``. A stream is complete only at
``data: [DONE]``; a chunk holding a top-level ``error`` fails it.

Over 600 lines because a codec is one concept: the request encoder and the response,
stream and error decoders of one API share its vocabulary and are read together.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, Literal, assert_never

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
    ToolDefinition,
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
    stream_error,
    wire_sequence,
)
from golem_core.wire._sse import ServerSentEvent
from golem_core.wire._stream import StreamAccumulator
from golem_core.wire.strict import openai_strict_schema

__all__ = [
    "MAX_CALL_ID_LENGTH",
    "PROVIDER",
    "MaxTokensField",
    "StreamDecoder",
    "decode_error",
    "decode_response",
    "encode_request",
    "json_schema_spec",
    "media_block",
]

PROVIDER = "OpenAI"

SystemRole = Literal["system", "developer"]
MaxTokensField = Literal["max_tokens", "max_completion_tokens"]
"""How the token limit is named: OpenAI's own models (o-series, gpt-5) refuse
``max_tokens`` and want ``max_completion_tokens``; compatible servers know ``max_tokens``."""

_AUDIO_FORMATS: Mapping[str, str] = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types OpenAI accepts inline (HEIC, TIFF, BMP, SVG, ... are refused)."""


_NAME = "OpenAI Chat Completions"
"""The API's name in the stand-in of a part it cannot take (``stand_in``, ADR 0067)."""


MAX_CALL_ID_LENGTH = 40
"""OpenAI Chat Completions refuses a longer tool-call id."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _media(part: URLPart | DataPart) -> dict[str, Any]:
    if isinstance(part, URLPart):
        if part.kind == "image":
            return {"type": "image_url", "image_url": {"url": part.url}}
        return {"type": "text", "text": stand_in(part, _NAME)}  # only images by URL
    media_type = part.media_type.lower()
    if part.kind == "image" and media_type in _IMAGE_TYPES:
        url = f"data:{part.media_type};base64,{_b64(part.data)}"
        return {"type": "image_url", "image_url": {"url": url}}
    if part.kind == "document" and media_type == "application/pdf":
        return {
            "type": "file",
            "file": {
                "filename": "document.pdf",
                "file_data": f"data:application/pdf;base64,{_b64(part.data)}",
            },
        }
    if part.kind == "audio" and media_type in _AUDIO_FORMATS:
        return {
            "type": "input_audio",
            "input_audio": {"data": _b64(part.data), "format": _AUDIO_FORMATS[media_type]},
        }
    return {"type": "text", "text": stand_in(part, _NAME)}


media_block = _media
"""The content part a URL or data part becomes (its stand-in when OpenAI cannot take it)."""


def _user_content(
    parts: Sequence[Part],
    *,
    include_text: bool = True,
    leading: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = list(leading)
    for part in parts:
        match part:
            case TextPart():
                if include_text and part.text:
                    content.append({"type": "text", "text": part.text})
            case URLPart() | DataPart():
                content.append(_media(part))
            case ThinkingPart() | ToolCallPart() | UnknownPart():
                pass  # not user content: not sent
            case _:  # pragma: no cover
                assert_never(part)
    return content


def _as_content(content: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if len(content) == 1 and content[0]["type"] == "text":
        text: str = content[0]["text"]
        return text
    return content


def _assistant(message: Message, with_tools: bool, ids: WireIds) -> dict[str, Any] | None:
    texts: list[str] = []
    segments: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case TextPart():
                if part.text:
                    texts.append(part.text)
                    segments.append(part.text)
            case ToolCallPart():
                arguments = wire_arguments(part)
                if not with_tools:
                    segments.append(call_as_text(part, arguments))
                elif part.id:
                    function = {"name": part.name, "arguments": dumps_compact(arguments)}
                    calls.append(
                        {"id": ids.call(part.id), "type": "function", "function": function}
                    )
            case URLPart() | DataPart():  # no media in an assistant message: its stand-in
                texts.append(stand_in(part, _NAME))
                segments.append(texts[-1])
            case ThinkingPart() | UnknownPart():
                pass  # thinking cannot be replayed to Chat Completions; unknown never sent
            case _:  # pragma: no cover
                assert_never(part)
    if not with_tools:
        return {"role": "assistant", "content": "\n".join(segments)} if segments else None
    if not texts and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    return out


def _messages(request: ModelRequest, system_role: SystemRole) -> list[dict[str, Any]]:
    with_tools = bool(request.tools)
    out: list[dict[str, Any]] = []
    ids = WireIds(max_length=MAX_CALL_ID_LENGTH)  # OpenAI refuses longer tool-call ids
    if request.instructions:
        out.append({"role": system_role, "content": request.instructions})
    attachments: list[dict[str, Any]] = []  # media of the current run of tool results

    def flush() -> None:
        if attachments:
            out.append({"role": "user", "content": list(attachments)})
            attachments.clear()

    for _, message in wire_sequence(request.messages):
        role = message.role
        if role is not Role.TOOL:
            flush()
        if role is Role.SYSTEM:
            continue
        if role is Role.USER:
            content = _user_content(message.parts)
            if content:
                out.append({"role": "user", "content": _as_content(content)})
        elif role is Role.ASSISTANT:
            assistant = _assistant(message, with_tools, ids)
            if assistant is not None:
                out.append(assistant)
        elif role is Role.TOOL:
            if not with_tools:
                flush()
                label = {"type": "text", "text": result_as_text(message)}
                content = _user_content(message.parts, include_text=False, leading=[label])
                out.append({"role": "user", "content": _as_content(content)})
                continue
            if not message.tool_call_id:
                continue  # answers no call: a provider would reject it
            media = _user_content(message.parts, include_text=False)
            text = message.text
            if media:
                attachments.append(
                    {
                        "type": "text",
                        "text": f"Attachments of the result of tool call {message.tool_call_id}:",
                    }
                )
                attachments.extend(media)
                text = text or "(attachments follow in the next user message)"
            out.append(
                {"role": "tool", "tool_call_id": ids.result(message.tool_call_id), "content": text}
            )
        else:  # pragma: no cover - Role is exhaustive
            raise AssertionError(role)
    flush()
    return out


def encode_request(
    request: ModelRequest,
    *,
    model: str,
    stream: bool,
    system_role: SystemRole = "system",
    max_tokens_field: MaxTokensField = "max_tokens",
) -> Result[dict[str, Any], WireError]:
    """The JSON body of a Chat Completions request.

    Total, deterministic (same request, equal body, same key order).

    Args:
        request: what to send.
        model: the model name (``"gpt-4o-mini"``).
        stream: whether to ask for a stream of chunks.
        system_role: the role of the instructions message: ``"system"``, or
            ``"developer"`` for models that want it.
        max_tokens_field: the name the token limit travels under.

    Returns:
        The body, always: a part OpenAI cannot take travels as its textual stand-in
        (``stand_in``, ADR 0067). A ``Result`` like every codec's encoder.
    """
    messages = _messages(request, system_role)
    body: dict[str, Any] = {"model": model, "messages": messages}
    settings = request.settings
    if request.tools:
        tools: list[dict[str, Any]] = []
        for tool in request.tools:
            function: dict[str, Any] = {"name": tool.name}
            if tool.description:
                function["description"] = tool.description
            schema, why_not = openai_strict_schema(tool.parameters)
            function["parameters"] = schema
            if why_not is None:  # else left out: Chat's default, false (ADR 0130)
                function["strict"] = True
            tools.append({"type": "function", "function": function})
        body["tools"] = tools
        if request.tool_choice_required:
            body["tool_choice"] = "required"
        if settings.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.max_tokens is not None:
        body[max_tokens_field] = settings.max_tokens
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.stop:
        body["stop"] = list(settings.stop)
    if request.output_schema is not None:
        body["response_format"] = _response_format(request.output_schema)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    add_openai_cache_key(body, request)
    return Success(body)


def json_schema_spec(output: ToolDefinition) -> dict[str, Any]:
    """Native structured output as OpenAI names it (``name``, ``description``, ``schema``,
    ``strict``): Chat's ``response_format.json_schema``, and the Responses API's
    ``text.format`` (flattened there). ``strict: true`` with the schema rewritten for
    strict mode where it can be made to qualify, else ``strict: false`` with the schema
    unchanged (``golem_core.wire.strict``, ADR 0130)."""
    schema, why_not = openai_strict_schema(output.parameters)
    spec: dict[str, Any] = {"name": output.name}
    if output.description:
        spec["description"] = output.description
    spec["schema"] = schema
    spec["strict"] = why_not is None
    return spec


def _response_format(output: ToolDefinition) -> dict[str, Any]:
    """Native structured output: ``json_schema``, strict where the schema can be."""
    return {"type": "json_schema", "json_schema": json_schema_spec(output)}


# -- responses -------------------------------------------------------------------------


def _usage(value: object) -> Usage | None:
    if not isinstance(value, dict):
        return None
    prompt = value.get("prompt_tokens_details")
    completion = value.get("completion_tokens_details")
    return Usage(
        input_tokens=opt_count(value, "prompt_tokens") or 0,
        output_tokens=opt_count(value, "completion_tokens") or 0,
        cache_read_tokens=opt_count(prompt, "cached_tokens") if isinstance(prompt, dict) else None,
        reasoning_tokens=(
            opt_count(completion, "reasoning_tokens") if isinstance(completion, dict) else None
        ),
    )


def _content_text(d: dict[str, Any], key: str, path: str) -> str:
    """A message's ``content`` (or ``refusal``): a string, or (Mistral and some
    compatible servers) an array of ``{"type": "text", "text": ...}`` parts; other part
    types (references, images) are not text and are left out."""
    value = d.get(key)
    if not isinstance(value, list):
        return opt_str(d, key, path) or ""
    texts: list[str] = []
    for k, raw in enumerate(value):
        item = obj(raw, f"{path}.{key}[{k}]")
        if item.get("type") == "text":
            texts.append(req_str(item, "text", f"{path}.{key}[{k}]"))
    return "".join(texts)


def _reasoning(d: dict[str, Any]) -> str | None:
    for key in ("reasoning_content", "reasoning"):
        value = d.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _first_choice(body: dict[str, Any], path: str) -> tuple[dict[str, Any], str] | None:
    choices = arr(body.get("choices"), f"{path}choices")
    for k, choice in enumerate(choices):
        c = obj(choice, f"{path}choices[{k}]")
        if c.get("index", 0) == 0:
            return c, f"{path}choices[{k}]"
    return None


def _decode(body: object) -> Message:
    top = obj(body, "response")
    if "choices" not in top:
        raise Malformed("response.choices", "required field is missing")
    found = _first_choice(top, "response.")
    if found is None:
        raise Malformed("response.choices", "no choice with index 0")
    choice, path = found
    # a choice the content filter stopped (Azure) comes without a message: an empty answer
    raw_message = choice.get("message")
    if raw_message is None and choice.get("finish_reason") is not None:
        raw_message = {}
    message = obj(raw_message, f"{path}.message")
    mpath = f"{path}.message"
    parts: list[Part] = []
    reasoning = _reasoning(message)
    if reasoning:
        parts.append(ThinkingPart(reasoning))
    text = _content_text(message, "content", mpath) + _content_text(message, "refusal", mpath)
    if text:
        parts.append(TextPart(text))
    calls = message.get("tool_calls")
    if calls is not None:
        for k, raw in enumerate(arr(calls, f"{mpath}.tool_calls")):
            cpath = f"{mpath}.tool_calls[{k}]"
            call = obj(raw, cpath)
            function = obj(call.get("function"), f"{cpath}.function")
            parts.append(
                ToolCallPart(
                    opt_str(call, "id", cpath) or None,
                    req_str(function, "name", f"{cpath}.function"),
                    opt_str(function, "arguments", f"{cpath}.function") or "",
                )
            )
    return Message(
        Role.ASSISTANT,
        tuple(parts),
        model=opt_str(top, "model", "response") or None,
        usage=_usage(top.get("usage")),
        finish_reason=opt_str(choice, "finish_reason", path),
    )


def decode_response(body: object, *, origin: Origin | None = None) -> Result[Message, WireError]:
    """The assistant message of a Chat Completions response body (decoded JSON).

    Total, deterministic.
    ``origin``: who the adapter asked (``Origin``); the message records it (ADR 0085).

    Returns:
        The message with its ``model``, ``usage`` and ``finish_reason``; a body holding
        an ``error`` object is that error; a body of the wrong shape is
        ``Failure(WireError)`` of kind ``BAD_RESPONSE`` naming the path that was wrong.
    """
    if isinstance(body, dict) and isinstance(body.get("error"), dict | str):
        return Failure(stream_error(PROVIDER, body))
    try:
        return Success(stamp_origin(_decode(body), origin))
    except Malformed as exc:
        return Failure(
            WireError(ModelErrorKind.BAD_RESPONSE, f"malformed OpenAI {exc.path}: {exc.reason}")
        )


def decode_error(
    status: int, headers: Mapping[str, str], body: bytes, *, now_unix: float | None = None
) -> WireError:
    """A failed Chat Completions response (status >= 400) as a ``WireError``.

    Total, deterministic. ``now_unix`` is needed only to read an HTTP-date
    ``retry-after``. See ``golem_core.wire._common`` for the kind table.
    """
    return decode_error_body(PROVIDER, status, headers, body, now_unix=now_unix)


class StreamDecoder:
    """Chat Completions stream chunks in, deltas out, then the complete message.

    Feed each server-sent event in order; ``feed`` returns the deltas the chunk carries
    (already folded into the message being built) or the failure it reports. The stream
    is complete at ``data: [DONE]``; later events are ignored. A builder, mutated in
    place; deterministic and effect-free.
    """

    __slots__ = ("_acc", "_done", "_finish_reason", "_model", "_origin", "_usage")

    def __init__(self, *, origin: Origin | None = None) -> None:
        self._origin = origin
        self._acc = StreamAccumulator()
        self._done = False
        self._model: str | None = None
        self._usage: Usage | None = None
        self._finish_reason: str | None = None

    @property
    def done(self) -> bool:
        """Whether ``[DONE]`` arrived."""
        return self._done

    @property
    def model(self) -> str | None:
        """The model that answered, as the chunks name it."""
        return self._model

    @property
    def usage(self) -> Usage | None:
        """The last usage a chunk reported (figures are cumulative, never summed)."""
        return self._usage

    @property
    def finish_reason(self) -> str | None:
        """The provider's finish reason, once a chunk gave it."""
        return self._finish_reason

    def feed(self, event: ServerSentEvent) -> Result[tuple[ModelDelta, ...], WireError]:
        """Read one event.

        Returns:
            The deltas it carries, or ``Failure(WireError)``: the error the chunk
            reports, or ``BAD_RESPONSE`` for a chunk that is not a chunk.
        """
        if self._done:
            return Success(())
        if event.data.startswith("[DONE]"):
            self._done = True
            return Success(())
        try:
            chunk = obj(parse_json(event.data, "stream chunk"), "stream chunk")
            if chunk.get("error") is not None:
                return Failure(stream_error(PROVIDER, chunk))
            deltas = self._read(chunk)
        except Malformed as exc:
            return Failure(
                WireError(ModelErrorKind.BAD_RESPONSE, f"malformed OpenAI {exc.path}: {exc.reason}")
            )
        self._acc.add_all(deltas)
        return Success(deltas)

    def _read(self, chunk: dict[str, Any]) -> tuple[ModelDelta, ...]:
        model = opt_str(chunk, "model", "stream chunk")
        if model:
            self._model = model
        usage = _usage(chunk.get("usage"))
        if usage is not None:
            self._usage = usage
        if chunk.get("choices") is None:
            return ()
        found = _first_choice(chunk, "stream chunk.")
        if found is None:
            return ()
        choice, path = found
        reason = opt_str(choice, "finish_reason", path)
        if reason:
            self._finish_reason = reason
        delta_value = choice.get("delta")
        if delta_value is None:
            return ()
        delta = obj(delta_value, f"{path}.delta")
        dpath = f"{path}.delta"
        out: list[ModelDelta] = []
        reasoning = _reasoning(delta)
        if reasoning:
            out.append(ThinkingDelta(reasoning))
        for key in ("content", "refusal"):
            text = _content_text(delta, key, dpath)
            if text:
                out.append(TextDelta(text))
        calls = delta.get("tool_calls")
        if calls is not None:
            for k, raw in enumerate(arr(calls, f"{dpath}.tool_calls")):
                cpath = f"{dpath}.tool_calls[{k}]"
                call = obj(raw, cpath)
                index = call.get("index", k)
                if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                    bad(f"{cpath}.index", "a non-negative integer", index)
                fn_value = call.get("function")
                fn = obj(fn_value, f"{cpath}.function") if fn_value is not None else {}
                out.append(
                    ToolCallDelta(
                        index,
                        id=opt_str(call, "id", cpath) or None,
                        name=opt_str(fn, "name", f"{cpath}.function") or None,
                        arguments=opt_str(fn, "arguments", f"{cpath}.function") or "",
                    )
                )
        return tuple(out)

    def finish(self) -> Result[Message, WireError]:
        """The complete assistant message, once the stream is done.

        Returns:
            The message (``model``, ``usage``, ``finish_reason`` included), or
            ``Failure(WireError)`` of kind ``STREAM_INTERRUPTED`` when ``[DONE]`` never
            came.
        """
        if not self._done:
            return Failure(
                WireError(
                    ModelErrorKind.STREAM_INTERRUPTED,
                    "the OpenAI stream ended before data: [DONE]"
                    + ("" if self._finish_reason else " (no finish reason)"),
                )
            )
        return Success(self.message())

    def message(self) -> Message:
        """The message built so far (complete once ``done``)."""
        message = self._acc.message(
            model=self._model, usage=self._usage, finish_reason=self._finish_reason
        )
        return stamp_origin(message, self._origin)
