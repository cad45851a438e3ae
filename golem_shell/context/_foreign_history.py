"""Input that is a provider's or a UI's history, not golem's: named for what it is.

Owns the guess the ``golem`` command makes when a file is not golem history JSON (or
decodes only because golem keeps unknown parts): an OpenAI Chat Completions or Responses
body, an Anthropic Messages body or messages list, Gemini ``contents``, AG-UI or Vercel AI
SDK UI messages. It names the shape and golem's converter for it when there is one
(``golem_shell.ui``), else says golem has none. A guess from the JSON's shape only:
nothing here converts or decides validity.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["describe_foreign_history"]

_NO_CONVERTER: Final = (
    "golem has no converter for it: golem history is a JSON list of messages, each with"
    ' "role" and "parts" (`golem schema` prints the contract)'
)
_VERCEL_PARTS: Final = frozenset(
    {"step-start", "reasoning", "file", "dynamic-tool", "source-url", "source-document"}
)
_VERCEL_MARKERS: Final = (
    b'"step-start"',
    b'"reasoning"',
    b'"file"',
    b'"dynamic-tool"',
    b'"source-',
    b'"tool-',
    b'"data-',
)
_GOLEM_PARTS: Final = frozenset({"text", "thinking", "url", "data", "tool_call"})
_ANTHROPIC_BLOCKS: Final = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)
_OPENAI_CONTENT: Final = frozenset({"image_url", "input_audio", "refusal"})


def describe_foreign_history(data: bytes, *, decoded: bool) -> str | None:
    """A sentence naming what ``data`` is when it is a provider's or a UI's history
    rather than golem's, and how to convert it; ``None`` when it does not look like one.
    After a successful decode only UI messages whose parts golem does not know are named
    (they would pass as golem history with unknown parts). Total.

    Args:
        data: the input, as read.
        decoded: whether ``decode_history`` accepted it (then the JSON is parsed again
            only when a UI part type's name occurs in it at all).
    """
    if decoded and not any(marker in data for marker in _VERCEL_MARKERS):
        return None
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    what = _shape_of(value)
    if what is None or (decoded and what[0] != "Vercel AI SDK UI messages"):
        return None
    name, converter = what
    how = f"convert it in Python with {converter}" if converter else _NO_CONVERTER
    return f"this looks like {name}, not golem history; {how}"


def _shape_of(value: object) -> tuple[str, str | None] | None:
    """What ``value`` (parsed JSON) looks like, and golem's converter for it, if any."""
    if isinstance(value, dict):
        if isinstance(value.get("contents"), list):
            return "a Gemini request body", None
        if "input" in value and ("model" in value or "instructions" in value):
            return "an OpenAI Responses request body", None
        messages = value.get("messages")
        if not isinstance(messages, list):
            return None
        if "threadId" in value or "runId" in value:
            return "an AG-UI RunAgentInput body", (
                "golem_shell.ui.agui_messages_to_history(body['messages'])"
            )
        inner = _shape_of(messages)
        inner_name = "" if inner is None else inner[0]
        if "Vercel" in inner_name:
            return "a Vercel AI SDK chat request body", (
                "golem_shell.ui.ui_messages_to_history(body['messages'])"
            )
        if "Anthropic" in inner_name and "OpenAI" not in inner_name:
            return "an Anthropic Messages request body", None
        if "OpenAI" in inner_name and "Anthropic" not in inner_name:
            return "an OpenAI Chat Completions request body", None
        if "system" in value or "max_tokens" in value:  # Anthropic: system outside, required
            return "an Anthropic Messages request body", None
        return "an OpenAI Chat Completions request body", None
    if not isinstance(value, list) or not value:
        return None
    items = [m for m in value if isinstance(m, dict)]
    if len(items) != len(value) or not all("role" in m for m in items):
        return None
    return _list_shape(items)


def _list_shape(items: list[dict[str, Any]]) -> tuple[str, str | None] | None:
    roles = {m.get("role") for m in items}
    with_parts = [m for m in items if isinstance(m.get("parts"), list)]
    if "model" in roles or any(
        isinstance(p, dict) and "type" not in p for m in with_parts for p in m["parts"]
    ):
        return "a Gemini contents list", None
    part_types = {p.get("type") for m in with_parts for p in m["parts"] if isinstance(p, dict)}
    foreign = {t for t in part_types if isinstance(t, str) and t not in _GOLEM_PARTS}
    if foreign and all(t in _VERCEL_PARTS or t.startswith(("tool-", "data-")) for t in foreign):
        return "Vercel AI SDK UI messages", "golem_shell.ui.ui_messages_to_history(messages)"
    if with_parts:
        return None  # golem's own shape: the decoder's finding says what is wrong
    if any("toolCalls" in m or "toolCallId" in m for m in items) or all("id" in m for m in items):
        return "AG-UI messages", "golem_shell.ui.agui_messages_to_history(messages)"
    blocks = {
        b.get("type")
        for m in items
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict)
    }
    openai = (
        any("tool_calls" in m or "tool_call_id" in m for m in items)
        or bool(roles & {"system", "developer", "tool", "function"})
        or bool(blocks & _OPENAI_CONTENT)
    )
    anthropic = bool(blocks & _ANTHROPIC_BLOCKS)
    if openai and not anthropic:
        return "an OpenAI Chat Completions messages list", None
    if anthropic and not openai:
        return "an Anthropic Messages messages list", None
    if all("content" in m for m in items):
        return "a provider's messages list (OpenAI Chat Completions or Anthropic Messages)", None
    return None
