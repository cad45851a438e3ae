"""The trust boundary of a UI adapter: what a browser sends is refused or sanitized here.

Owns ``Refused`` (a client request the server will not run, with the HTTP status that
says why), ``accept_history`` (``sanitize_history`` on the client's history, with the
signing key when the server signs, and the size limits), ``report_json`` (what the pass
dropped, as JSON a client or a log can read), the SSE framing both protocols share, and
``read_body`` (the request body, read chunk by chunk and refused as soon as it passes the
limit), and ``parse_json_body`` (its JSON value, refused when it is too large, not JSON,
nested too deeply, or holds a string that is not Unicode text: a lone surrogate, such as
a JavaScript string cut in the middle of an emoji, would be stored and then fail every
response that tries to encode it as UTF-8). ADR 0110 says why each is refused, not
repaired.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, Collection, Sequence
from itertools import accumulate
from typing import Any

from golem_core import Message, SanitizeReport, SigningKeys, sanitize_history
from golem_shell import GolemError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_JSON_DEPTH",
    "DEFAULT_MAX_MESSAGES",
    "Refused",
    "accept_history",
    "parse_json_body",
    "read_body",
    "report_json",
    "sse_frame",
]

DEFAULT_MAX_BODY_BYTES = 1 << 20
"""1 MiB: the largest request body a UI endpoint reads by default."""

DEFAULT_MAX_JSON_DEPTH = 200
"""The deepest nesting of arrays and objects a request body may have by default: deeper
than anything golem writes (tool arguments stop at 128 levels, inside a few levels of
message), and far from Python's recursion limit."""

DEFAULT_MAX_MESSAGES = 1000
"""The most messages a client history may hold by default."""


class Refused(GolemError, ValueError):
    """A client request the server refuses; nothing was run.

    ``status`` is the HTTP status to answer with (400 bad input, 409 a conflict with
    the conversation's state, 413 too large); the message says what and where.
    """

    def __init__(self, message: str, status: int = 400) -> None:
        self.status = status
        super().__init__(message)


async def read_body(
    chunks: AsyncIterable[bytes],
    *,
    max_bytes: int = DEFAULT_MAX_BODY_BYTES,
    content_length: str | None = None,
) -> bytes:
    """A request body, read from its ``chunks`` (Starlette: ``request.stream()``) and
    refused as soon as it passes ``max_bytes``: the server never holds more than the
    limit and one chunk, however much a client sends or declares.

    Args:
        chunks: the body as it arrives.
        max_bytes: the most bytes a body may have.
        content_length: the request's ``Content-Length`` header, when it has one: a
            declared length over the limit is refused before a byte is read.

    Raises:
        Refused: the body declares or passes ``max_bytes`` (413); ``content_length``
            is not a number of bytes (400).
    """
    if content_length is not None:
        try:
            declared = int(content_length)
        except ValueError:
            raise Refused(
                f"Content-Length must be a number of bytes, got {content_length!r}"
            ) from None
        if declared > max_bytes:
            raise Refused(
                f"request body of {declared} bytes is over the limit of {max_bytes} bytes", 413
            )
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            raise Refused(
                f"request body is over the limit of {max_bytes} bytes"
                f" (stopped reading at {size} bytes)",
                413,
            )
        parts.append(chunk)
    return b"".join(parts)


def parse_json_body(
    body: bytes,
    *,
    max_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_depth: int = DEFAULT_MAX_JSON_DEPTH,
) -> Any:
    """The JSON value of a request body; every string and key in it is Unicode text.

    Raises:
        Refused: the body is over ``max_bytes`` (413), not UTF-8 JSON (400), nested
            deeper than ``max_depth`` arrays and objects (400, checked before it is
            parsed: a 10 kB ``[[[...]]]`` never reaches the recursive parser), or a
            string or key holds a lone surrogate (400, naming its path, e.g.
            ``messages[0].parts[0].text``): nothing such is ever stored.
    """
    if len(body) > max_bytes:
        raise Refused(
            f"request body of {len(body)} bytes is over the limit of {max_bytes} bytes", 413
        )
    try:
        text = body.decode("utf-8-sig")  # JSON over HTTP is UTF-8 (RFC 8259)
    except UnicodeDecodeError as e:
        raise Refused(f"request body is not JSON: {e}") from None
    _refuse_deep_nesting(text, max_depth)
    try:
        value = json.loads(text)
    except ValueError as e:
        raise Refused(f"request body is not JSON: {e}") from None
    except RecursionError:  # only if the stack was already deep: the check above holds
        raise Refused(f"request body is nested too deeply to parse (limit {max_depth})") from None
    if _SURROGATE_ESCAPE.search(text):  # decoded UTF-8 holds none: only a \u escape can
        _refuse_lone_surrogates(value)
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_A_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256)]


def _refuse_deep_nesting(text: str, max_depth: int) -> None:
    """Refused (400) when the arrays and objects of ``text`` nest deeper than
    ``max_depth``; brackets inside strings do not count. Linear, no recursion, and
    every pass at C speed (a 1 MiB body of brackets is checked in milliseconds)."""
    if text.count("[") + text.count("{") <= max_depth:
        return  # not enough brackets to nest that deep: the common case
    outside = _JSON_STRING.sub("", text).encode("utf-8", "replace")
    brackets = outside.translate(None, _NOT_A_BRACKET)
    if max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > max_depth:
        raise Refused(f"request body is nested deeper than {max_depth} arrays and objects")


def _refuse_lone_surrogates(value: Any) -> None:
    """Refused at the first string or key, in document order, holding a lone surrogate
    (a proper pair of escapes decodes to one character, so any surrogate left is lone)."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            _check_text(item, path or "the body")
        elif isinstance(item, dict):
            for key in item:
                _check_text(key, f"a key of {path or 'the body'}")
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((item[k], f"{path}[{k}]") for k in reversed(range(len(item))))


def _check_text(text: str, where: str) -> None:
    if text.isascii():
        return
    at = next((i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"), None)
    if at is not None:
        raise Refused(
            f"{where}: a lone surrogate \\u{ord(text[at]):04x} at character {at} is not"
            " Unicode text (a string cut in the middle of a character?)"
        )


def accept_history(
    history: Sequence[Message],
    *,
    key: SigningKeys | None = None,
    awaiting: Collection[str] = (),
    max_messages: int = DEFAULT_MAX_MESSAGES,
) -> tuple[tuple[Message, ...], SanitizeReport]:
    """Sanitize a history a client sent: ``sanitize_history`` with the server's key.

    Raises:
        Refused: more than ``max_messages`` messages (413).
    """
    if len(history) > max_messages:
        raise Refused(
            f"history of {len(history)} messages is over the limit of {max_messages}", 413
        )
    return sanitize_history(history, awaiting=awaiting, key=key)


def report_json(report: SanitizeReport) -> dict[str, Any]:
    """What ``sanitize_history`` dropped and repaired, as a JSON object (camelCase keys;
    indices are into the history the client sent)."""
    repair = report.repair

    def entries(items: Sequence[Any]) -> list[dict[str, Any]]:
        return [
            {
                "messageIndex": e.message_index,
                "callId": e.call_id,
                "toolName": e.tool_name,
                "reason": e.reason,
            }
            for e in items
        ]

    return {
        "changed": report.changed,
        "systemPrompts": report.system_prompts,
        "unsafeParts": [
            {"messageIndex": p.message_index, "kind": p.kind, "scheme": p.scheme}
            for p in report.unsafe_parts
        ],
        "emptied": list(report.emptied),
        "unverified": list(report.unverified),
        "synthesized": entries(repair.synthesized),
        "dropped": entries(repair.dropped),
    }


def sse_frame(data: str, event_id: int | None = None) -> str:
    """One server-sent event: an ``id:`` line (for ``Last-Event-ID``) and a data line."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {data}\n\n"
