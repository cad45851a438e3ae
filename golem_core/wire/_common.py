"""What the OpenAI and Anthropic codecs share: the wire error value, error
classification, tool blocks rendered as text, and strict readers of decoded JSON.

Owns the mapping from a provider's error (HTTP status, error ``type``/``code``, message)
to ``ModelErrorKind``, one table for every provider:

- context overflow (``code: context_length_exceeded``, or a message saying "prompt is
  too long" / "maximum context length" (vLLM, Mistral, OpenRouter word it so too) /
  "exceeds the available context size" (llama.cpp)) is ``CONTEXT_TOO_LONG``;
- ``insufficient_quota``, ``credit_balance_exhausted``, ``billing_error``, and
  Anthropic's 429 ``enforced_spend_limit_reached`` without ``retry-after`` are ``QUOTA``
  (never fixed by retrying);
- ``overloaded_error`` (Anthropic 529) and HTTP 503 are ``OVERLOADED``;
- then by status: 401 authentication, 403 permission, 404 not found, 408 timeout,
  409 (a lock conflict the official SDKs retry) and other 5xx server error, 429 rate
  limit, any other 4xx invalid request;
- an error without a status (inside a stream) goes by its ``type``, else server error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, NoReturn, cast

import attrs
from attrs import field, frozen

from golem_core._messages import DataPart, Message, Part, Role, ToolCallPart, URLPart, calls_of
from golem_core._model import ModelErrorKind
from golem_core._retry import _header, parse_retry_after
from golem_core.codec._json import _describe, collector_paused

__all__ = [
    "REPEATED_CALL_TEXT",
    "Malformed",
    "Origin",
    "WireIds",
    "WireError",
    "arr",
    "bad",
    "call_as_text",
    "classify_error",
    "decode_error_body",
    "describe",
    "dumps_compact",
    "error_fields",
    "local_refs",
    "obj",
    "opt_count",
    "opt_str",
    "parse_json",
    "recursive_defs",
    "req_str",
    "result_as_text",
    "stamp_origin",
    "stand_in",
    "stream_error",
    "wire_sequence",
]

_MAX_MESSAGE_CHARS = 2000

_QUOTA_MARKERS = frozenset({"insufficient_quota", "credit_balance_exhausted", "billing_error"})
_CONTEXT_PHRASES = (
    "prompt is too long",
    "maximum context length",
    "context length exceeded",
    "exceeds the available context size",  # llama.cpp's server (exceed_context_size_error)
)
_BY_TYPE: Mapping[str, ModelErrorKind] = {
    "authentication_error": ModelErrorKind.AUTHENTICATION,
    "invalid_api_key": ModelErrorKind.AUTHENTICATION,
    "permission_error": ModelErrorKind.PERMISSION,
    "not_found_error": ModelErrorKind.NOT_FOUND,
    "rate_limit_error": ModelErrorKind.RATE_LIMIT,
    "rate_limit_exceeded": ModelErrorKind.RATE_LIMIT,
    "tokens": ModelErrorKind.RATE_LIMIT,
    "requests": ModelErrorKind.RATE_LIMIT,
    "invalid_request_error": ModelErrorKind.INVALID_REQUEST,
    "request_too_large": ModelErrorKind.INVALID_REQUEST,
    "api_error": ModelErrorKind.SERVER_ERROR,
    "server_error": ModelErrorKind.SERVER_ERROR,
    "overloaded_error": ModelErrorKind.OVERLOADED,
    "timeout_error": ModelErrorKind.TIMEOUT,
}


@frozen
class WireError:
    """Why a provider exchange failed, or why a request cannot be encoded.

    ``kind`` is ``UNSUPPORTED_CONTENT`` when the request holds content the provider
    cannot take (the shell raises ``UsageError``); any other kind describes a provider
    failure (the shell raises ``ModelError``). ``message`` is the provider's own words
    where it gave some, else what was wrong.
    """

    kind: ModelErrorKind
    message: str
    status: int | None = field(default=None, kw_only=True)
    request_id: str | None = field(default=None, kw_only=True)
    retry_after: float | None = field(default=None, kw_only=True)

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.message}"


@frozen
class Origin:
    """Who issued an assistant message, so its provider artifacts go back only where they
    are valid (ADR 0085): the adapter (``"anthropic"``, ``"openai"`` for Chat Completions
    and every compatible server, ``"openai-responses"``, ``"google"``), the model asked
    for, and the host of the API base URL (``"api.openai.com"``; OpenAI ties encrypted
    reasoning to the organization, Anthropic and Gemini signatures to the model)."""

    provider: str
    model: str | None = None
    endpoint: str | None = None


def stamp_origin(message: Message, origin: Origin | None) -> Message:
    """``message`` with ``origin`` recorded (``provider``, ``endpoint``; ``model`` only when
    the response named none): how every decoder marks what it decoded. Total."""
    if origin is None:
        return message
    return attrs.evolve(
        message,
        provider=origin.provider,
        endpoint=origin.endpoint,
        model=message.model or origin.model,
    )


def dumps_compact(value: object) -> str:
    """JSON text as golem sends it: compact separators, UTF-8 kept (no ``\\u`` escapes)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- errors ------------------------------------------------------------------------------


def classify_error(
    status: int | None,
    *,
    error_type: str | None = None,
    code: str | None = None,
    message: str = "",
    detail_code: str | None = None,
    has_retry_after: bool = False,
) -> ModelErrorKind:
    """The kind of a provider error, by the table in this module's docstring. Total."""
    lowered = message.lower()
    client_side = status is None or 400 <= status < 500
    if client_side and (
        code == "context_length_exceeded"
        or error_type == "context_length_exceeded"
        or any(p in lowered for p in _CONTEXT_PHRASES)
    ):
        return ModelErrorKind.CONTEXT_TOO_LONG
    if code in _QUOTA_MARKERS or error_type in _QUOTA_MARKERS:
        return ModelErrorKind.QUOTA
    if detail_code == "enforced_spend_limit_reached" and not has_retry_after:
        return ModelErrorKind.QUOTA
    if error_type == "overloaded_error" or status in (503, 529):
        return ModelErrorKind.OVERLOADED
    if status is None:
        by_type = _BY_TYPE.get(error_type or "") or _BY_TYPE.get(code or "")
        return by_type or ModelErrorKind.SERVER_ERROR
    by_status = {
        401: ModelErrorKind.AUTHENTICATION,
        403: ModelErrorKind.PERMISSION,
        404: ModelErrorKind.NOT_FOUND,
        408: ModelErrorKind.TIMEOUT,
        409: ModelErrorKind.SERVER_ERROR,
        429: ModelErrorKind.RATE_LIMIT,
    }.get(status)
    if by_status is not None:
        return by_status
    if status >= 500:
        return ModelErrorKind.SERVER_ERROR
    return ModelErrorKind.INVALID_REQUEST


def _short(text: str) -> str:
    text = text.strip()
    if len(text) > _MAX_MESSAGE_CHARS:
        return text[:_MAX_MESSAGE_CHARS] + "..."
    return text


def _opt_text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def error_fields(payload: object) -> tuple[str | None, str | None, str | None, str | None]:
    """``(message, type, code, detail_code)`` read from a decoded error body or event.

    Reads ``{"error": {"message", "type", "code", "details": {"error_code"}}}`` (OpenAI,
    Anthropic), ``{"error": "text"}``, ``{"message": ...}`` and ``{"detail": ...}``
    (compatible servers). Total: what is absent or of the wrong type is ``None``.
    """
    if not isinstance(payload, dict):
        return None, None, None, None
    err = payload.get("error")
    if isinstance(err, dict):
        details = err.get("details")
        detail_code = _opt_text(details.get("error_code")) if isinstance(details, dict) else None
        code = err.get("code")
        return (
            _opt_text(err.get("message")),
            _opt_text(err.get("type")),
            _opt_text(code) if not isinstance(code, int) else str(code),
            detail_code,
        )
    if isinstance(err, str) and err:
        return err, None, None, None
    for key in ("message", "detail"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value, None, None, None
    return None, None, None, None


def decode_error_body(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now_unix: float | None = None,
) -> WireError:
    """A failed HTTP response read as a ``WireError``. Total, deterministic.

    Args:
        provider: the provider's display name, used when the body says nothing.
        status: the HTTP status.
        headers: the response headers (``x-request-id``/``request-id``, ``retry-after``).
        body: the response body (JSON from the provider, or anything from a proxy).
        now_unix: the current time, to read an HTTP-date ``retry-after``.
    """
    try:
        payload: object = collector_paused(json.loads, body.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read
        payload = None
    message, error_type, code, detail_code = error_fields(payload)
    if message is None:
        snippet = _short(body.decode("utf-8", errors="replace"))
        message = (
            f"{provider} answered HTTP {status}: {snippet}"
            if snippet
            else f"{provider} answered HTTP {status} with an empty body"
        )
    retry_after = parse_retry_after(headers, now_unix=now_unix)
    request_id = _header(headers, "x-request-id") or _header(headers, "request-id")
    if request_id is None and isinstance(payload, dict):
        request_id = _opt_text(payload.get("request_id"))
    kind = classify_error(
        status,
        error_type=error_type,
        code=code,
        message=message,
        detail_code=detail_code,
        has_retry_after=retry_after is not None,
    )
    return WireError(
        kind, _short(message), status=status, request_id=request_id, retry_after=retry_after
    )


def stream_error(provider: str, payload: dict[str, Any]) -> WireError:
    """An error reported inside a stream (HTTP status already 200) as a ``WireError``."""
    message, error_type, code, detail_code = error_fields(payload)
    message = message or f"{provider} reported an error in the stream"
    kind = classify_error(
        None, error_type=error_type, code=code, message=message, detail_code=detail_code
    )
    return WireError(kind, _short(message), request_id=_opt_text(payload.get("request_id")))


# -- tool blocks as text (ADR 0031) -------------------------------------------------------


def call_as_text(call: ToolCallPart, arguments: dict[str, object]) -> str:
    """A tool call rendered as text, for a request that declares no tools (ADR 0031)."""
    ident = f" (id {call.id})" if call.id else ""
    return f"[tool call {call.name}{ident}] {dumps_compact(arguments)}"


def result_as_text(message: Message) -> str:
    """A tool result rendered as text, for a request that declares no tools (ADR 0031)."""
    what = "tool error" if message.failed else "tool result"
    name = f" {message.tool_name}" if message.tool_name else ""
    ident = f" (id {message.tool_call_id})" if message.tool_call_id else ""
    text = message.text
    return f"[{what}{name}{ident}] {text}" if text else f"[{what}{name}{ident}]"


# -- parts a provider cannot take (ADR 0067) ----------------------------------------------

_MAX_URL_SHOWN = 200


def stand_in(part: URLPart | DataPart, provider: str) -> str:
    """The short text sent in place of a part ``provider`` cannot take (ADR 0067): what it
    was, its media type and its size (or its URL), never its bytes. So a tool that
    returned an SVG, a video or an octet-stream never bricks the conversation: the
    request goes, and the model learns what was there. Total, deterministic."""
    if isinstance(part, DataPart):
        size = len(part.data)
        what = f"{part.kind} ({part.media_type}, {size} byte{'' if size == 1 else 's'})"
    else:
        url = part.url
        if url[:5].lower() == "data:":
            url = "a data: URL"
        elif len(url) > _MAX_URL_SHOWN:
            url = url[:_MAX_URL_SHOWN] + "..."
        media = f", {part.media_type}" if part.media_type else ""
        what = f"{part.kind} by URL ({url}{media})"
    return f"[{what}: not sent, {provider} cannot take it]"


# -- strict readers of decoded JSON -------------------------------------------------------


class Malformed(Exception):
    """Internal: raised by the readers, turned into a ``BAD_RESPONSE`` failure at the
    codec's boundary (never escapes a public function)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason


describe = _describe
"""A JSON value's type in words (the message codec's wording, shared)."""


def bad(path: str, expected: str, value: object) -> NoReturn:
    """Raise ``Malformed`` for ``path``: expected something else than ``value``."""
    raise Malformed(path, f"expected {expected}, got {describe(value)}")


def obj(value: object, path: str) -> dict[str, Any]:
    """``value`` as a JSON object, else ``Malformed``."""
    if isinstance(value, dict):
        return value
    bad(path, "an object", value)


def arr(value: object, path: str) -> list[Any]:
    """``value`` as a JSON array, else ``Malformed``."""
    if isinstance(value, list):
        return value
    bad(path, "an array", value)


def opt_str(d: dict[str, Any], key: str, path: str) -> str | None:
    """``d[key]`` as a string, ``None`` when absent or null, else ``Malformed``."""
    value = d.get(key)
    if value is None or isinstance(value, str):
        return value
    bad(f"{path}.{key}", "a string", value)


def req_str(d: dict[str, Any], key: str, path: str) -> str:
    """``d[key]`` as a string, else ``Malformed``."""
    value = d.get(key)
    if isinstance(value, str):
        return value
    if key not in d:
        raise Malformed(f"{path}.{key}", "required field is missing")
    bad(f"{path}.{key}", "a string", value)


def opt_count(d: dict[str, Any], key: str) -> int | None:
    """A token count: ``d[key]`` when it is a non-negative integer, else ``None`` (lenient:
    a usage figure of the wrong type is treated as unreported)."""
    value = d.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def parse_json(text: str, what: str) -> object:
    """Standard JSON (no NaN or Infinity), else ``Malformed`` naming ``what``. Parsed
    with the cyclic collector paused (``collector_paused``: a provider's body may be
    nested to the recursion limit)."""
    try:
        return collector_paused(_STANDARD_JSON.decode, text)
    except (ValueError, RecursionError) as exc:
        raise Malformed(what, f"not valid JSON ({exc})") from None


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not standard JSON")


_STANDARD_JSON: Final = json.JSONDecoder(parse_constant=_refuse_constant)
"""One decoder for every stream event (``json.loads`` with a keyword builds one per call)."""


class WireIds:
    """Deterministic wire names for call ids a provider would refuse as they are.

    Ids are kept byte for byte when the provider accepts them, so ordinary histories are
    sent unchanged (and stay prompt-cache friendly). Otherwise: characters outside
    ``allowed`` become ``_``, a surrogate (which has no UTF-8 form) becomes ``_`` and a hash
    of the original follows (ids differing only there stay distinct), an id longer than
    ``max_length`` is cut and suffixed with a hash of the original, and with ``unique`` an
    id already used by an earlier call of the request gets ``_2``, ``_3``, ... (Anthropic
    refuses a request in which two ``tool_use`` blocks share an id; servers that number
    calls ``call_0`` in every response produce exactly that). A result is sent under the
    name of the most recent call with its id, which is the call it answers once the history
    is repaired.

    A builder used while encoding one request: effect-free and deterministic.
    """

    def __init__(self, *, allowed: str | None = None, max_length: int = 0, unique: bool = False):
        self._allowed = frozenset(allowed) if allowed is not None else None
        self._max = max_length
        self._unique = unique
        self._current: dict[str, str] = {}
        self._used: set[str] = set()

    def _clean(self, call_id: str) -> str:
        name = call_id
        lossy = False  # whether two ids could now meet: then a hash of the original follows
        if not name.isascii() and _has_surrogate(name):  # no UTF-8 form: "\ud800" -> "_"
            name = "".join("_" if "\ud800" <= c <= "\udfff" else c for c in name)
            lossy = True
        if self._allowed is not None and not all(c in self._allowed for c in name):
            name = "".join(c if c in self._allowed else "_" for c in name)
        if not name:
            name = "call"
        if lossy or (self._max and len(name) > self._max):
            digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
            if self._max and len(name) + 11 > self._max:
                name = name[: self._max - 11]
            name = name + "_" + digest
        return name

    def call(self, call_id: str) -> str:
        """The wire id of a call (each call of the request once, in order)."""
        name = self._clean(call_id)
        if self._unique and name in self._used:
            k = 2
            while f"{name}_{k}" in self._used:
                k += 1
            name = f"{name}_{k}"
            if self._max and len(name) > self._max:  # pragma: no cover - absurd lengths
                name = self._clean(name + call_id)
        self._used.add(name)
        self._current[call_id] = name
        return name

    def result(self, call_id: str) -> str:
        """The wire id a result for ``call_id`` answers."""
        found = self._current.get(call_id)
        return found if found is not None else self._clean(call_id)


def _has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (it then has no UTF-8 form, and the
    request's bytes would replace it, so that two ids differing only there would meet)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


REPEATED_CALL_TEXT = (
    "not executed: this call repeated the id of an earlier call in the same turn;"
    " call the tool again if it is still needed"
)
"""The wire-only answer to a call that repeats an earlier call's id in its turn."""


def wire_sequence(messages: Sequence[Message]) -> list[tuple[int, Message]]:
    """The messages a request carries, each with its index in ``messages``.

    A turn that repeats a call id (``[call x, call x]``) needs one result for ``x`` in
    the history (ADR 0030 §3; the loop executes the first only), but a provider answers
    calls, not ids: each repeat is renamed on the wire (``x_2``, an id no other call or
    result of the request uses) and answered after the turn's results with
    ``REPEATED_CALL_TEXT``, so every call on the wire has exactly one answer. The history
    itself never changes. A synthesized answer carries the index of its turn. Total and
    deterministic; histories without repeats (nearly all) come back message for message.
    """
    repeats = [
        i
        for i, m in enumerate(messages)
        if m.role is Role.ASSISTANT and len(m.parts) > 1 and _has_repeat(m)
    ]
    if not repeats:
        return list(enumerate(messages))
    taken: set[str] = set()
    for m in messages:
        if m.tool_call_id is not None:
            taken.add(m.tool_call_id)
        for p in m.parts:
            if type(p) is ToolCallPart and p.id is not None:
                taken.add(p.id)
    out: list[tuple[int, Message]] = []
    pending: list[tuple[int, Message]] = []
    at_turn = set(repeats)
    for i, m in enumerate(messages):
        if pending and m.role is not Role.TOOL:
            out.extend(pending)
            pending = []
        if i not in at_turn:
            out.append((i, m))
            continue
        seen: set[str] = set()
        parts: list[Part] = []
        for p in m.parts:
            call_id = p.id if type(p) is ToolCallPart else None
            if call_id is not None and call_id in seen:
                k = 2
                while f"{call_id}_{k}" in taken:
                    k += 1
                new_id = f"{call_id}_{k}"
                taken.add(new_id)
                call = attrs.evolve(cast(ToolCallPart, p), id=new_id)
                pending.append((i, Message.tool_result(new_id, call.name, REPEATED_CALL_TEXT)))
                parts.append(call)
                continue
            if call_id is not None:
                seen.add(call_id)
            parts.append(p)
        out.append((i, attrs.evolve(m, parts=tuple(parts))))
    out.extend(pending)
    return out


def _has_repeat(message: Message) -> bool:
    """Whether a turn repeats a call id: more id'd calls than distinct ids (``calls_of``)."""
    ids = sum(1 for p in message.parts if type(p) is ToolCallPart and p.id is not None)
    return ids > len(calls_of(message))


# -- output schemas: what the providers' structured output rules need to see ------------------


def local_refs(schema: object) -> set[str]:
    """The names of the root definitions ``schema`` refers to (``#/$defs/X``,
    ``#/definitions/X``) anywhere inside it."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                for prefix in ("#/$defs/", "#/definitions/"):
                    if ref.startswith(prefix):
                        found.add(ref.removeprefix(prefix))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def recursive_defs(schema: object) -> frozenset[str]:
    """The names of the root ``$defs`` (or ``definitions``) that refer back to
    themselves, directly or through others: the recursive types of an output schema.

    Total, deterministic; ``frozenset()`` for anything that is not a schema object.
    """
    if not isinstance(schema, dict):
        return frozenset()
    defs: dict[str, object] = {}
    for key in ("$defs", "definitions"):
        value = schema.get(key)
        if isinstance(value, dict):
            defs.update(value)
    edges = {name: local_refs(body) for name, body in defs.items()}
    recursive: set[str] = set()
    for name in edges:
        seen: set[str] = set()
        stack = list(edges[name])
        while stack:
            other = stack.pop()
            if other == name:
                recursive.add(name)
                break
            if other in seen:
                continue
            seen.add(other)
            stack.extend(edges.get(other, ()))
    return frozenset(recursive)
