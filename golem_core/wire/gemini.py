"""The pure codec of the Google Gemini API (``generateContent``, ``streamGenerateContent``).

Owns the request body built from a ``ModelRequest``, the request path, the assistant
``Message`` read from a response body or from a stream of chunks, and the reading of error
bodies. No I/O: the shell (``golem_shell.models.gemini``) does the HTTP. The mapping:

- instructions are ``systemInstruction`` (one text part); system messages of the history
  are never sent, nor are unknown parts;
- roles are ``user`` and ``model``: consecutive user-side messages (user messages and
  tool results) are merged into one ``user`` content whose ``functionResponse`` parts
  come first, and consecutive assistant messages into one ``model`` content (ADR 0046);
  a request whose first content would be a ``model`` one opens with a ``user`` content
  holding ``OPENING_TEXT`` (Gemini refuses a function call turn that follows no user
  turn), and a request with no content at all is refused before sending (ADR 0065);
- user text, URL parts (``fileData``: ``fileUri`` and, when known, ``mimeType``) and data
  parts (``inlineData``: ``mimeType`` and base64 ``data``) become parts; Gemini takes
  images, audio, video and documents, but not every media type: SVG, octet-stream and
  other types it refuses are sent as a short textual stand-in naming what they were,
  their type and size (ADR 0067); empty text parts are not sent, and a content left
  empty is not sent;
- an assistant turn keeps its parts in order: text, ``functionCall`` (``id`` when the
  call has one, ``name``, ``args`` = ``wire_arguments(call)``, so a truncated call travels
  as ``{"truncated_args": "<verbatim>"}``), media; calls without an id are not sent.
  A Gemini thought signature is kept on the part that carried it (``thoughtSignature``
  in the part's ``extra``, ADR 0047) and sent back on that part; a thinking part is sent
  (``thought: true``) only when it carries a Gemini signature: thinking from another
  provider or an unsigned thought summary is not sent. The first ``functionCall`` of a
  ``model`` content that has no signature of its own gets Google's documented
  placeholder (``skip_thought_signature_validator``): Gemini 3 refuses a replayed call
  step without one (history from another provider, or from Gemini 2.5);
- the tool results after a turn become ``functionResponse`` parts in the order of that
  turn's calls, one per call (Gemini pairs by name and order; the ``id`` rides along),
  named after the call; ``response`` is ``{"output": text}``, or ``{"error": text}`` for a
  failed result. A call that repeats an earlier call's id in its turn is renamed and
  answered with ``REPEATED_CALL_TEXT`` on the wire (``wire_sequence``, ADR 0035). Media
  a tool returned follows the responses in the same ``user`` content, after a label naming the
  call;
- with no tools declared, tool calls and results are rendered as text (ADR 0031);
- tools are ``functionDeclarations`` with ``parametersJsonSchema`` (full JSON Schema,
  loosened where the documented subset needs it as ``responseJsonSchema`` is:
  ``json_output_schema``, ADR 0130);
  ``tool_choice_required`` is ``functionCallingConfig.mode: "ANY"``; ``max_tokens``,
  ``temperature``, ``top_p`` and ``stop`` are ``maxOutputTokens``, ``temperature``,
  ``topP`` and ``stopSequences`` in ``generationConfig``. Gemini has no switch for
  parallel calls: ``parallel_tool_calls`` is not sent. An ``output_schema`` (native
  structured output, ADR 0087) is ``responseMimeType: "application/json"`` with the
  schema as ``responseJsonSchema`` (full JSON Schema, as tools use
  ``parametersJsonSchema``; ``responseSchema`` takes only an OpenAPI subset), loosened
  where that field's documented subset needs it (``json_output_schema``). Beside
  function declarations only Gemini 3 and later take it: for earlier models (and when
  the encoder is not told the model) the schema goes into the instructions instead
  (ADR 0120).

Responses: text, thought text (``ThinkingPart``), function calls (the Gemini ``id`` when
given, else none: the run loop names it; ``args`` written as compact JSON with UTF-8
kept), ``inlineData`` and ``fileData``; consecutive text (or thought) parts are joined, as
a stream's chunks are, unless both carry a signature. ``finishReason`` is kept as the
finish reason (``STOP``, ``MAX_TOKENS``, ``SAFETY``, ...). An answer with no part at all
that Gemini withheld (a safety or recitation block) or botched (``MALFORMED_FUNCTION_CALL``
and its kin), and a prompt Gemini blocked, are failures that say so (ADR 0048).
``Usage``: input is ``promptTokenCount`` (cached content included) plus
``toolUsePromptTokenCount``, output is ``candidatesTokenCount + thoughtsTokenCount``,
cache read is ``cachedContentTokenCount``, reasoning is ``thoughtsTokenCount``; in a
stream the last ``usageMetadata`` wins (each is a cumulative snapshot). A stream is
complete once a chunk gives the ``finishReason``; an ``error`` chunk fails it.

Over 600 lines because a codec is one concept: the request encoder and the response,
stream and error decoders of one API share its vocabulary and are read together.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, assert_never
from urllib.parse import quote

import attrs
from returns.result import Failure, Result, Success

from golem_core._messages import (
    DataPart,
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
from golem_core.wire._common import REPEATED_CALL_TEXT as REPEATED_CALL_TEXT
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
    local_refs,
    obj,
    opt_count,
    opt_str,
    parse_json,
    recursive_defs,
    req_str,
    result_as_text,
    stamp_origin,
    stand_in,
    wire_sequence,
)
from golem_core.wire._sse import ServerSentEvent

__all__ = [
    "OPENING_TEXT",
    "PROMPTED_OUTPUT_TEXT",
    "PROVIDER",
    "REPEATED_CALL_TEXT",
    "SKIP_SIGNATURE",
    "THOUGHT_SIGNATURE_KEY",
    "StreamDecoder",
    "decode_error",
    "decode_response",
    "encode_request",
    "json_output_schema",
    "request_path",
    "takes_json_output_with_tools",
    "thought_signature",
    "with_thought_signature",
    "media_block",
]

PROVIDER = "Gemini"
THOUGHT_SIGNATURE_KEY = "thoughtSignature"
"""The ``extra`` key of a part that holds the Gemini thought signature it came with."""
SKIP_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode("ascii")
"""Google's documented placeholder signature for a function call Gemini did not produce."""
OPENING_TEXT = "(the conversation so far)"
"""The text of the ``user`` content put before a request whose history opens with a
model turn: Gemini refuses a function call turn that does not follow a user turn or a
function response turn (ADR 0065)."""
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_WITHHELD = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)
"""Finish reasons that mean Gemini withheld (part of) its answer."""
_BOTCHED = frozenset(
    {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "MALFORMED_RESPONSE"}
)
"""Finish reasons that mean the model produced something that is not an answer."""
_MEDIA_KINDS: Mapping[str, PartKind] = {"image": "image", "audio": "audio", "video": "video"}


def request_path(model: str, *, stream: bool) -> str:
    """The path of a request, relative to the API version's base URL.

    ``models/gemini-2.5-flash:generateContent``, or
    ``models/gemini-2.5-flash:streamGenerateContent?alt=sse`` (server-sent events; without
    ``alt=sse`` Gemini streams one JSON array). A name holding a ``/``
    (``tunedModels/abc``, ``models/gemini-2.5-flash``) is taken as the resource name.
    Segments are percent-encoded. Total, deterministic.
    """
    name = model.strip()
    resource = name if "/" in name else f"models/{name}"
    path = "/".join(quote(segment, safe="-._~") for segment in resource.split("/"))
    return f"{path}:streamGenerateContent?alt=sse" if stream else f"{path}:generateContent"


# -- thought signatures (ADR 0047) -----------------------------------------------------


def thought_signature(part: Part) -> str | None:
    """The Gemini thought signature ``part`` came with, if any (a string in the part's
    ``extra`` under ``"thoughtSignature"``)."""
    value = _signature_value(part)
    return value if isinstance(value, str) else None


_ABSENT = object()


def _signature_value(part: Part) -> object:
    """The decoded JSON value under ``"thoughtSignature"`` in ``extra``, or ``_ABSENT``."""
    for key, text in part.extra:
        if key == THOUGHT_SIGNATURE_KEY:
            if len(text) >= 2 and text[0] == '"' and text[-1] == '"' and "\\" not in text:
                return text[1:-1]
            try:
                return parse_json(text, "extra")
            except Malformed:
                return None
    return _ABSENT


_P = TypeVar("_P", TextPart, ThinkingPart, ToolCallPart, DataPart, URLPart)


def with_thought_signature(part: _P, signature: str | None) -> _P:
    """``part`` carrying ``signature`` in its ``extra`` (replacing any earlier one);
    ``part`` itself when ``signature`` is ``None``."""
    if signature is None:
        return part
    kept: tuple[tuple[str, str], ...] = tuple(
        (k, v) for k, v in part.extra if k != THOUGHT_SIGNATURE_KEY
    )
    new: _P = attrs.evolve(part, extra=(*kept, (THOUGHT_SIGNATURE_KEY, dumps_compact(signature))))
    return new


# -- requests ---------------------------------------------------------------------------


class _Unsupported(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _signed(wire: dict[str, Any], part: Part, index: int, part_index: int) -> dict[str, Any]:
    value = _signature_value(part)
    if value is _ABSENT:
        return wire
    if not isinstance(value, str) or not _BASE64.fullmatch(value):
        raise _Unsupported(
            f"message {index} part {part_index}: its Gemini thought signature is not a"
            f" base64 string ({str(value)[:40]!r})"
        )
    wire[THOUGHT_SIGNATURE_KEY] = value
    return wire


_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})
_DOCUMENT_TYPES = frozenset(
    {
        "application/pdf",
        "application/json",
        "application/rtf",
        "application/x-javascript",
        "application/x-python",
        "application/x-python-code",
        "application/x-typescript",
    }
)


def _takes(media_type: str | None) -> bool:
    """Whether Gemini takes media of ``media_type`` (``None``: unknown, Gemini reads the
    file): its image types, any audio, video or text type, and its document types. SVG,
    ``application/octet-stream`` and other types are refused by the API."""
    if media_type is None:
        return True
    lowered = media_type.lower().split(";")[0].strip()
    major = lowered.split("/")[0]
    if major in ("audio", "video", "text"):
        return True
    return lowered in _IMAGE_TYPES or lowered in _DOCUMENT_TYPES


def _media(part: URLPart | DataPart) -> dict[str, Any]:
    if not _takes(part.media_type):  # its stand-in instead (ADR 0067)
        return {"text": stand_in(part, PROVIDER)}
    if isinstance(part, URLPart):
        data: dict[str, Any] = {}
        if part.media_type:
            data["mimeType"] = part.media_type
        data["fileUri"] = part.url
        return {"fileData": data}
    return {"inlineData": {"mimeType": part.media_type, "data": _b64(part.data)}}


media_block = _media
"""The content a URL or data part becomes (its stand-in when Gemini cannot take it)."""


def _user_parts(parts: Sequence[Part], *, include_text: bool = True) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        match part:
            case TextPart():
                if include_text and part.text:
                    out.append({"text": part.text})
            case URLPart() | DataPart():
                out.append(_media(part))
            case ThinkingPart() | ToolCallPart() | UnknownPart():
                pass  # not user content: not sent
            case _:  # pragma: no cover
                assert_never(part)
    return out


class _Content:
    """A ``user`` or ``model`` content being built from consecutive messages."""

    __slots__ = ("calls", "parts", "results", "role")

    def __init__(self, role: str) -> None:
        self.role = role
        self.parts: list[dict[str, Any]] = []
        self.calls: list[ToolCallPart] = []  # model: the calls sent, in order
        self.results: list[Message] = []  # user: the tool results, in order


def _model_parts(
    message: Message, index: int, with_tools: bool, into: _Content, ids: WireIds
) -> None:
    for j, part in enumerate(message.parts):
        match part:
            case TextPart():
                if part.text or _signature_value(part) is not _ABSENT:
                    into.parts.append(_signed({"text": part.text}, part, index, j))
            case ThinkingPart():
                if not part.redacted and _signature_value(part) is not _ABSENT:
                    wire = {"text": part.text, "thought": True}
                    into.parts.append(_signed(wire, part, index, j))
            case ToolCallPart():
                arguments = wire_arguments(part)
                if not with_tools:
                    into.parts.append({"text": call_as_text(part, arguments)})
                elif part.id is not None:
                    call: dict[str, Any] = {
                        "id": ids.call(part.id),
                        "name": part.name,
                        "args": arguments,
                    }
                    into.parts.append(_signed({"functionCall": call}, part, index, j))
                    into.calls.append(part)
            case URLPart() | DataPart():
                into.parts.append(_signed(_media(part), part, index, j))
            case UnknownPart():
                pass
            case _:  # pragma: no cover
                assert_never(part)


def _response(name: str, call_id: str | None, result: Message) -> dict[str, Any]:
    body = {"error" if result.failed else "output": result.text}
    response: dict[str, Any] = {}
    if call_id is not None:
        response["id"] = call_id
    response["name"] = name
    response["response"] = body
    return {"functionResponse": response}


def _user_content(
    content: _Content, previous: _Content | None, ids: WireIds
) -> list[dict[str, Any]]:
    """The parts of a ``user`` content: the responses to ``previous``'s calls in call order
    (one per call), then results that answer none of them, then attachments, then the
    user's own parts."""
    calls = previous.calls if previous is not None and previous.role == "model" else []
    first: dict[str, Message] = {}
    for result in content.results:
        assert result.tool_call_id is not None
        first.setdefault(result.tool_call_id, result)
    answered: set[int] = set()
    out: list[dict[str, Any]] = []
    for call in calls:
        assert call.id is not None
        answer = first.get(call.id)
        if answer is not None:
            answered.add(id(answer))
            out.append(_response(call.name, ids.result(call.id), answer))
    for result in content.results:
        if id(result) not in answered:  # answers no call of the turn before: sent as is
            call_id = result.tool_call_id
            wire_id = None if call_id is None else ids.result(call_id)
            out.append(_response(result.tool_name or "tool", wire_id, result))
    for result in content.results:
        media = _user_parts(result.parts, include_text=False)
        if media:
            label = f"Attachments of the result of tool call {result.tool_call_id}:"
            out.append({"text": label})
            out.extend(media)
    return out + content.parts


def _contents(request: ModelRequest) -> list[dict[str, Any]]:
    with_tools = bool(request.tools)
    built: list[_Content] = []
    ids = WireIds()  # ids kept, but never two that only a lone surrogate told apart

    def content(role: str) -> _Content:
        if not built or built[-1].role != role:
            built.append(_Content(role))
        return built[-1]

    for i, message in wire_sequence(request.messages):  # repeated ids answered (ADR 0035)
        match message.role:
            case Role.SYSTEM:
                continue
            case Role.USER:
                parts = _user_parts(message.parts)
                if parts:
                    content("user").parts.extend(parts)
            case Role.ASSISTANT:
                _model_parts(message, i, with_tools, content("model"), ids)
            case Role.TOOL:
                if not with_tools:
                    text = {"text": result_as_text(message)}
                    content("user").parts.extend(
                        [text, *_user_parts(message.parts, include_text=False)]
                    )
                elif message.tool_call_id is not None:  # a result answering no call is not sent
                    content("user").results.append(message)
            case _:  # pragma: no cover
                assert_never(message.role)
    out: list[dict[str, Any]] = []
    for k, c in enumerate(built):
        if c.role == "user":
            parts = _user_content(c, built[k - 1] if k else None, ids)
        else:
            parts = c.parts
            first_call = next((p for p in parts if "functionCall" in p), None)
            if first_call is not None and THOUGHT_SIGNATURE_KEY not in first_call:
                first_call[THOUGHT_SIGNATURE_KEY] = SKIP_SIGNATURE
        if not parts:
            continue
        if out and out[-1]["role"] == c.role:  # an empty content between them was not sent
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": c.role, "parts": parts})
    if not out:
        raise _Unsupported(
            "nothing to send: no message holds content Gemini accepts"
            " (empty text and system messages are not sent)"
        )
    if out[0]["role"] == "model":  # Gemini wants a user turn first (ADR 0065)
        out.insert(0, {"role": "user", "parts": [{"text": OPENING_TEXT}]})
    return out


_GEMINI_MAJOR = re.compile(r"gemini-(\d+)(?:\.\d+)?-")
PROMPTED_OUTPUT_TEXT = (
    "Answer with only a JSON value that matches this JSON Schema, with no text or"
    " Markdown fence around it:\n{schema}"
)
"""The instruction that carries an output schema where Gemini cannot constrain the
answer to it (ADR 0120); ``{schema}`` is the schema as compact JSON."""


def takes_json_output_with_tools(model: str | None) -> bool:
    """Whether ``model`` takes ``responseMimeType: application/json`` together with
    function declarations (Gemini 3 and later; earlier models answer 400). A guess from
    the name; an unknown or missing name is no. Total, deterministic."""
    if model is None:
        return False
    found = _GEMINI_MAJOR.search(model.strip().lower() + "-")
    return found is not None and int(found.group(1)) >= 3


def json_output_schema(schema: Any) -> Any:
    """``schema`` as ``responseJsonSchema`` (and ``parametersJsonSchema``) is documented
    to take it: ``const`` (outside the subset; pydantic writes it for a ``Literal``
    discriminator) becomes a one-value ``enum``, an ``enum`` holds strings and numbers
    only (``null`` and booleans become ``anyOf`` branches), a ``$ref`` stands alone
    (other keywords beside it wrap it in ``anyOf``), and a property whose schema leads
    back into a recursive type is not required (Gemini unrolls cycles only through
    optional properties). Looser than the type, never stricter: the run validates the
    answer against the full schema. A new value; total, deterministic."""
    recursive = recursive_defs(schema)
    return _json_output(schema, recursive)


def _json_output(schema: Any, recursive: frozenset[str]) -> Any:
    if isinstance(schema, list):
        return [_json_output(s, recursive) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _json_output(v, recursive) for k, v in schema.items()}
    const = out.get("const", out)
    if const is not out and not isinstance(const, dict | list) and "enum" not in out:
        # outside the subset: a one-value enum (a dict here is a property named "const")
        out = {("enum" if k == "const" else k): v for k, v in out.items()}
        out["enum"] = [const]
    enum = out.get("enum")
    if isinstance(enum, list) and any(v is None or isinstance(v, bool) for v in enum):
        kept = [v for v in enum if isinstance(v, str | int | float) and not isinstance(v, bool)]
        options: list[Any] = [{"enum": kept}] if kept else []
        if any(isinstance(v, bool) for v in enum):
            options.append({"type": "boolean"})
        if None in enum:
            options.append({"type": "null"})
        del out["enum"]
        out = {**out, "anyOf": options} if len(options) > 1 else {**out, **options[0]}
    ref = out.get("$ref")
    if isinstance(ref, str) and "anyOf" not in out and any(not k.startswith("$") for k in out):
        # beside $ref only $-keywords may stand: the rest goes around it
        out = {k: v for k, v in out.items() if k != "$ref"} | {"anyOf": [{"$ref": ref}]}
    properties = out.get("properties")
    required = out.get("required")
    if recursive and isinstance(properties, dict) and isinstance(required, list):
        cyclic = {name for name, sub in properties.items() if local_refs(sub) & recursive}
        if cyclic & set(required):
            kept_required = [name for name in required if name not in cyclic]
            out["required"] = kept_required
            if not kept_required:
                del out["required"]
    return out


def encode_request(
    request: ModelRequest, *, include_thoughts: bool = False, model: str | None = None
) -> Result[dict[str, Any], WireError]:
    """The JSON body of a ``generateContent`` (or ``streamGenerateContent``) request.

    The model and the choice of stream are in the path (``request_path``), not the body.
    Total, deterministic (same request, equal body, same key order).

    Args:
        request: what to send.
        include_thoughts: ask for thought summaries (``thinkingConfig.includeThoughts``).
        model: the model asked; decides whether an ``output_schema`` can be sent as
            ``responseJsonSchema`` beside function declarations (Gemini 3 and later,
            ``takes_json_output_with_tools``). Without a name, and on earlier models,
            a request with tools carries the schema in the instructions instead
            (``PROMPTED_OUTPUT_TEXT``; ADR 0120).

    Returns:
        The body, or ``Failure(WireError)`` of kind ``UNSUPPORTED_CONTENT`` naming the
        message and part Gemini cannot take (a thought signature that is not base64),
        or saying that nothing is left to send.
    """
    try:
        contents = _contents(request)
    except _Unsupported as exc:
        return Failure(WireError(ModelErrorKind.UNSUPPORTED_CONTENT, exc.message))
    body: dict[str, Any] = {}
    if request.instructions:
        body["systemInstruction"] = {"parts": [{"text": request.instructions}]}
    body["contents"] = contents
    if request.tools:
        declarations: list[dict[str, Any]] = []
        for tool in request.tools:
            spec: dict[str, Any] = {"name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            spec["parametersJsonSchema"] = json_output_schema(tool.parameters)
            declarations.append(spec)
        body["tools"] = [{"functionDeclarations": declarations}]
        if request.tool_choice_required:
            body["toolConfig"] = {"functionCallingConfig": {"mode": "ANY"}}
    settings = request.settings
    config: dict[str, Any] = {}
    if settings.max_tokens is not None:
        config["maxOutputTokens"] = settings.max_tokens
    if settings.temperature is not None:
        config["temperature"] = settings.temperature
    if settings.top_p is not None:
        config["topP"] = settings.top_p
    if settings.stop:
        config["stopSequences"] = list(settings.stop)
    if include_thoughts:
        config["thinkingConfig"] = {"includeThoughts": True}
    if request.output_schema is not None:  # native structured output (ADRs 0087, 0120)
        schema = json_output_schema(request.output_schema.parameters)
        if request.tools and not takes_json_output_with_tools(model):
            prompt = {"text": PROMPTED_OUTPUT_TEXT.format(schema=dumps_compact(schema))}
            system = body.setdefault("systemInstruction", {"parts": []})
            system["parts"].append(prompt)
            body["contents"] = body.pop("contents")  # keep the documented key order
        else:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = schema
    if config:
        body["generationConfig"] = config
    return Success(body)


# -- responses -------------------------------------------------------------------------


def _usage(value: object) -> Usage | None:
    if not isinstance(value, dict):
        return None
    thoughts = opt_count(value, "thoughtsTokenCount")
    return Usage(
        input_tokens=(opt_count(value, "promptTokenCount") or 0)
        + (opt_count(value, "toolUsePromptTokenCount") or 0),
        output_tokens=(opt_count(value, "candidatesTokenCount") or 0) + (thoughts or 0),
        cache_read_tokens=opt_count(value, "cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


def _kind_of(mime_type: str | None) -> PartKind:
    major = (mime_type or "").split("/")[0].lower()
    return _MEDIA_KINDS.get(major, "document")


class _Building:
    __slots__ = ("call_id", "data", "kind", "media_type", "name", "signature", "text")

    def __init__(self, kind: str, signature: str | None) -> None:
        self.kind = kind  # text | thinking | call | data | url
        self.signature = signature
        self.text: list[str] = []
        self.call_id: str | None = None
        self.name = ""
        self.data = b""
        self.media_type: str | None = None

    def part(self) -> Part | None:
        text = "".join(self.text)
        sig = self.signature
        if self.kind in ("text", "thinking") and not text and sig is None:
            return None
        if self.kind == "text":
            return with_thought_signature(TextPart(text), sig)
        if self.kind == "thinking":
            return with_thought_signature(ThinkingPart(text), sig)
        if self.kind == "call":
            return with_thought_signature(ToolCallPart(self.call_id, self.name, text), sig)
        kind = _kind_of(self.media_type)
        if self.kind == "data":
            return with_thought_signature(DataPart(self.data, kind, self.media_type or ""), sig)
        return with_thought_signature(URLPart(text, kind, media_type=self.media_type), sig)


class _Parts:
    """Gemini parts folded into golem parts, the same way for a body and for a stream."""

    __slots__ = ("building",)

    def __init__(self) -> None:
        self.building: list[_Building] = []

    def add(self, raw: object, path: str) -> tuple[ModelDelta, ...]:
        part = obj(raw, path)
        signature = opt_str(part, THOUGHT_SIGNATURE_KEY, path) or None
        if "functionCall" in part:
            call = obj(part["functionCall"], f"{path}.functionCall")
            cpath = f"{path}.functionCall"
            args = call.get("args")
            if args is not None:
                obj(args, f"{cpath}.args")
            b = self._new("call", signature)
            b.call_id = opt_str(call, "id", cpath) or None
            b.name = req_str(call, "name", cpath)
            b.text.append(dumps_compact(args) if args is not None else "{}")
            index = len(self.building) - 1
            return (ToolCallDelta(index, id=b.call_id, name=b.name, arguments=b.text[0]),)
        if "inlineData" in part:
            blob = obj(part["inlineData"], f"{path}.inlineData")
            encoded = req_str(blob, "data", f"{path}.inlineData")
            try:
                data = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError):
                raise Malformed(f"{path}.inlineData.data", "not base64") from None
            b = self._new("data", signature)
            b.data = data
            b.media_type = opt_str(blob, "mimeType", f"{path}.inlineData")
            return ()
        if "fileData" in part:
            file = obj(part["fileData"], f"{path}.fileData")
            b = self._new("url", signature)
            b.text.append(req_str(file, "fileUri", f"{path}.fileData"))
            b.media_type = opt_str(file, "mimeType", f"{path}.fileData")
            return ()
        if "text" in part or set(part) <= {THOUGHT_SIGNATURE_KEY, "thought"}:
            text = opt_str(part, "text", path) or ""
            thought = part.get("thought")
            if thought is not None and not isinstance(thought, bool):
                bad(f"{path}.thought", "a boolean", thought)
            kind = "thinking" if thought else "text"
            last = self.building[-1] if self.building else None
            if (
                last is not None
                and last.kind == kind
                and (signature is None or last.signature is None)
            ):
                b = last
                if signature is not None:
                    b.signature = signature
            else:
                b = self._new(kind, signature)
            if not text:
                return ()
            b.text.append(text)
            index = len(self.building) - 1
            return (
                (ThinkingDelta(text, index),) if kind == "thinking" else (TextDelta(text, index),)
            )
        return ()  # executable code, code results, server tools: not part of the contract

    def _new(self, kind: str, signature: str | None) -> _Building:
        b = _Building(kind, signature)
        self.building.append(b)
        return b

    def parts(self) -> tuple[Part, ...]:
        out: list[Part] = []
        for b in self.building:
            part = b.part()
            if part is not None:
                out.append(part)
        return tuple(out)


def _candidate(body: dict[str, Any], path: str) -> tuple[dict[str, Any], str] | None:
    candidates = body.get("candidates")
    if candidates is None:
        return None
    for k, raw in enumerate(arr(candidates, f"{path}.candidates")):
        c = obj(raw, f"{path}.candidates[{k}]")
        if c.get("index", 0) == 0:
            return c, f"{path}.candidates[{k}]"
    return None


def _candidate_parts(candidate: dict[str, Any], path: str) -> list[Any]:
    content = candidate.get("content")
    if content is None:
        return []
    c = obj(content, f"{path}.content")
    parts = c.get("parts")
    return [] if parts is None else arr(parts, f"{path}.content.parts")


def _ratings(value: object) -> str:
    """The safety ratings that are not negligible, as ``CATEGORY: PROBABILITY`` text."""
    if not isinstance(value, list):
        return ""
    shown: list[str] = []
    for rating in value:
        if not isinstance(rating, dict):
            continue
        category, probability = rating.get("category"), rating.get("probability")
        if rating.get("blocked") or probability not in (None, "NEGLIGIBLE", "LOW"):
            shown.append(f"{category}: {probability}")
    return f" ({', '.join(shown)})" if shown else ""


def _blocked_prompt(body: dict[str, Any]) -> WireError | None:
    """The failure of a body whose prompt Gemini blocked (no candidate, a block reason)."""
    feedback = body.get("promptFeedback")
    if not isinstance(feedback, dict):
        return None
    reason = feedback.get("blockReason")
    if not isinstance(reason, str) or not reason:
        return None
    message = feedback.get("blockReasonMessage")
    detail = f": {message}" if isinstance(message, str) and message else ""
    return WireError(
        ModelErrorKind.INVALID_REQUEST,
        f"Gemini blocked the prompt (blockReason {reason}){_ratings(feedback.get('safetyRatings'))}"
        f"{detail}",
    )


def _outcome(
    message: Message, finish: str | None, candidate: dict[str, Any]
) -> Result[Message, WireError]:
    """The message, unless Gemini withheld or botched the whole answer (ADR 0048)."""
    if message.parts or finish is None:
        return Success(message)
    said = candidate.get("finishMessage")
    detail = f": {said}" if isinstance(said, str) and said else ""
    if finish in _WITHHELD:
        return Failure(
            WireError(
                ModelErrorKind.INVALID_REQUEST,
                f"Gemini withheld its answer (finishReason {finish})"
                f"{_ratings(candidate.get('safetyRatings'))}{detail}",
            )
        )
    if finish in _BOTCHED:
        return Failure(
            WireError(
                ModelErrorKind.BAD_RESPONSE,
                f"Gemini gave no usable answer (finishReason {finish}){detail}",
            )
        )
    if finish == "MISSING_THOUGHT_SIGNATURE":
        return Failure(
            WireError(
                ModelErrorKind.INVALID_REQUEST,
                f"Gemini refused a function call without its thought signature{detail}",
            )
        )
    return Success(message)


def _bad_response(exc: Malformed) -> WireError:
    return WireError(ModelErrorKind.BAD_RESPONSE, f"malformed Gemini {exc.path}: {exc.reason}")


def _decode(body: object) -> Result[Message, WireError]:
    top = obj(body, "response")
    found = _candidate(top, "response")
    if found is None:
        blocked = _blocked_prompt(top)
        if blocked is not None:
            return Failure(blocked)
        raise Malformed("response.candidates", "no candidate with index 0")
    candidate, path = found
    parts = _Parts()
    for k, raw in enumerate(_candidate_parts(candidate, path)):
        parts.add(raw, f"{path}.content.parts[{k}]")
    finish = opt_str(candidate, "finishReason", path)
    message = Message(
        Role.ASSISTANT,
        parts.parts(),
        model=opt_str(top, "modelVersion", "response") or None,
        usage=_usage(top.get("usageMetadata")),
        finish_reason=finish,
    )
    return _outcome(message, finish, candidate)


def decode_response(body: object, *, origin: Origin | None = None) -> Result[Message, WireError]:
    """The assistant message of a ``generateContent`` response body (decoded JSON).

    Total, deterministic.
    ``origin``: who the adapter asked (``Origin``); the message records it (ADR 0085).

    Returns:
        The message with its ``model`` (``modelVersion``), ``usage`` and
        ``finish_reason``; an error body is that error; a blocked prompt, or an answer
        withheld or botched as a whole, is the failure that says so (ADR 0048); a body of
        the wrong shape is ``Failure(WireError)`` of kind ``BAD_RESPONSE`` naming the path
        that was wrong.
    """
    if isinstance(body, dict) and isinstance(body.get("error"), dict | str):
        return Failure(_error_payload(body, None))
    try:
        return _decode(body).map(lambda m: stamp_origin(m, origin))
    except Malformed as exc:
        return Failure(_bad_response(exc))


# -- errors ------------------------------------------------------------------------------

_BY_STATUS: Mapping[str, ModelErrorKind] = {
    "UNAUTHENTICATED": ModelErrorKind.AUTHENTICATION,
    "PERMISSION_DENIED": ModelErrorKind.PERMISSION,
    "NOT_FOUND": ModelErrorKind.NOT_FOUND,
    "RESOURCE_EXHAUSTED": ModelErrorKind.RATE_LIMIT,
    "UNAVAILABLE": ModelErrorKind.OVERLOADED,
    "DEADLINE_EXCEEDED": ModelErrorKind.TIMEOUT,
    "INTERNAL": ModelErrorKind.SERVER_ERROR,
    "INVALID_ARGUMENT": ModelErrorKind.INVALID_REQUEST,
    "FAILED_PRECONDITION": ModelErrorKind.INVALID_REQUEST,
}
_CONTEXT = re.compile(
    r"input token count.*exceeds the maximum|exceeds the maximum number of tokens"
)
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)s\s*")


def _details(error: dict[str, Any]) -> list[dict[str, Any]]:
    details = error.get("details")
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def _retry_delay(details: list[dict[str, Any]]) -> float | None:
    """The wait a ``google.rpc.RetryInfo`` asks for (``"34s"``, ``"0.5s"``)."""
    for d in details:
        if str(d.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = d.get("retryDelay")
            found = _DURATION.fullmatch(delay) if isinstance(delay, str) else None
            if found:
                return float(found.group(1))
    return None


def _daily_quota(details: list[dict[str, Any]]) -> bool:
    """Whether a ``google.rpc.QuotaFailure`` names a daily quota (not fixed by retrying)."""
    for d in details:
        if not str(d.get("@type", "")).endswith("google.rpc.QuotaFailure"):
            continue
        violations = d.get("violations")
        for v in violations if isinstance(violations, list) else ():
            if isinstance(v, dict) and "PerDay" in str(v.get("quotaId", "")):
                return True
    return False


def _reason(details: list[dict[str, Any]]) -> str | None:
    for d in details:
        if str(d.get("@type", "")).endswith("google.rpc.ErrorInfo"):
            reason = d.get("reason")
            if isinstance(reason, str):
                return reason
    return None


def _kind(status: int | None, error: dict[str, Any], message: str) -> ModelErrorKind:
    """The kind of a Google API error: its ``status`` name and details first, then the
    shared table (``golem_core.wire._common``)."""
    google = error.get("status") if isinstance(error.get("status"), str) else None
    details = _details(error)
    if _reason(details) in ("API_KEY_INVALID", "API_KEY_EXPIRED"):
        return ModelErrorKind.AUTHENTICATION
    if _CONTEXT.search(message.lower()):
        return ModelErrorKind.CONTEXT_TOO_LONG
    if google == "RESOURCE_EXHAUSTED" and _daily_quota(details):
        return ModelErrorKind.QUOTA
    shared = classify_error(status, message=message)
    if status is not None and shared is not ModelErrorKind.INVALID_REQUEST:
        return shared  # the HTTP status said it (5xx, 401, 403, 404, 408, 429)
    return _BY_STATUS.get(google or "", shared)


def _error_payload(payload: dict[str, Any], status: int | None) -> WireError:
    """An error body or an ``error`` chunk (``{"error": {"code", "message", "status",
    "details"}}``) as a ``WireError``."""
    raw = payload.get("error")
    error: dict[str, Any] = raw if isinstance(raw, dict) else {"message": raw}
    code = error.get("code")
    if status is None and isinstance(code, int) and not isinstance(code, bool) and code >= 400:
        status = code
    message = error.get("message") if isinstance(error.get("message"), str) else ""
    google = error.get("status") if isinstance(error.get("status"), str) else None
    text = message or f"{PROVIDER} reported an error"
    if google:
        text = f"{google}: {text}"
    return WireError(
        _kind(status, error, message or ""),
        text[:2000],
        status=status,
        retry_after=_retry_delay(_details(error)),
    )


def decode_error(
    status: int, headers: Mapping[str, str], body: bytes, *, now_unix: float | None = None
) -> WireError:
    """A failed Gemini response (status >= 400) as a ``WireError``.

    Total, deterministic. The kind comes from the HTTP status, the Google status name
    (``RESOURCE_EXHAUSTED``, ``UNAVAILABLE``, ...) and the details: an invalid key
    (``ErrorInfo`` reason ``API_KEY_INVALID``, sent with HTTP 400) is ``AUTHENTICATION``,
    a ``QuotaFailure`` on a per-day quota is ``QUOTA``, an input over the context window
    is ``CONTEXT_TOO_LONG``. The wait is the ``retry-after`` header when there is one,
    else the ``RetryInfo`` ``retryDelay``. ``now_unix`` is needed only to read an
    HTTP-date ``retry-after``.
    """
    base = decode_error_body(PROVIDER, status, headers, body, now_unix=now_unix)
    try:
        payload = parse_json(body.decode("utf-8", errors="replace"), "error body")
    except Malformed:
        return base
    if not isinstance(payload, dict) or not isinstance(payload.get("error"), dict):
        return base
    google = _error_payload(payload, status)
    return attrs.evolve(
        google,
        request_id=base.request_id,
        retry_after=base.retry_after if base.retry_after is not None else google.retry_after,
    )


# -- streams ---------------------------------------------------------------------------


class StreamDecoder:
    """``streamGenerateContent?alt=sse`` chunks in, deltas out, then the complete message.

    Each event's data is a whole ``GenerateContentResponse`` holding the next piece of
    the answer. Feed each server-sent event in order; ``feed`` returns the deltas the
    chunk carries (already folded into the message being built) or the failure it
    reports. The stream is complete at the chunk that gives a ``finishReason``; later
    events are ignored. A builder, mutated in place; deterministic and effect-free.
    """

    __slots__ = ("_candidate", "_done", "_finish_reason", "_model", "_origin", "_parts", "_usage")

    def __init__(self, *, origin: Origin | None = None) -> None:
        self._origin = origin
        self._parts = _Parts()
        self._done = False
        self._model: str | None = None
        self._usage: Usage | None = None
        self._finish_reason: str | None = None
        self._candidate: dict[str, Any] = {}

    @property
    def done(self) -> bool:
        """Whether a chunk gave the ``finishReason``."""
        return self._done

    @property
    def model(self) -> str | None:
        """The model that answered (``modelVersion``)."""
        return self._model

    @property
    def usage(self) -> Usage | None:
        """The usage of the last chunk that reported one (cumulative, never summed)."""
        return self._usage

    @property
    def finish_reason(self) -> str | None:
        """The ``finishReason``, once a chunk gave it."""
        return self._finish_reason

    def feed(self, event: ServerSentEvent) -> Result[tuple[ModelDelta, ...], WireError]:
        """Read one event.

        Returns:
            The deltas it carries, or ``Failure(WireError)``: the error the chunk
            reports, a blocked prompt, or ``BAD_RESPONSE`` for a chunk that cannot be
            read.
        """
        if self._done:
            return Success(())
        try:
            chunk = obj(parse_json(event.data, "stream chunk"), "stream chunk")
            if isinstance(chunk.get("error"), dict | str):
                return Failure(_error_payload(chunk, None))
            return Success(self._read(chunk))
        except _Blocked as blocked:
            return Failure(blocked.error)
        except Malformed as exc:
            return Failure(_bad_response(exc))

    def _read(self, chunk: dict[str, Any]) -> tuple[ModelDelta, ...]:
        model = opt_str(chunk, "modelVersion", "stream chunk")
        if model:
            self._model = model
        usage = _usage(chunk.get("usageMetadata"))
        if usage is not None:
            self._usage = usage
        found = _candidate(chunk, "stream chunk")
        if found is None:
            blocked = _blocked_prompt(chunk)
            if blocked is not None:
                raise _Blocked(blocked)
            return ()
        candidate, path = found
        deltas: list[ModelDelta] = []
        for k, raw in enumerate(_candidate_parts(candidate, path)):
            deltas.extend(self._parts.add(raw, f"{path}.content.parts[{k}]"))
        finish = opt_str(candidate, "finishReason", path)
        if finish:
            self._finish_reason = finish
            self._candidate = candidate
            self._done = True
        return tuple(deltas)

    def finish(self) -> Result[Message, WireError]:
        """The complete assistant message, once the stream is done.

        Returns:
            The message (``model``, ``usage``, ``finish_reason`` included); the failure
            of an answer Gemini withheld or botched as a whole (ADR 0048); or
            ``Failure(WireError)`` of kind ``STREAM_INTERRUPTED`` when no chunk gave a
            ``finishReason``.
        """
        if not self._done:
            return Failure(
                WireError(
                    ModelErrorKind.STREAM_INTERRUPTED,
                    "the Gemini stream ended before a chunk gave its finishReason",
                )
            )
        return _outcome(self.message(), self._finish_reason, self._candidate)

    def message(self) -> Message:
        """The message built so far (complete once ``done``)."""
        message = Message(
            Role.ASSISTANT,
            self._parts.parts(),
            model=self._model,
            usage=self._usage,
            finish_reason=self._finish_reason,
        )
        return stamp_origin(message, self._origin)


class _Blocked(Exception):
    def __init__(self, error: WireError) -> None:
        super().__init__(error.message)
        self.error = error
