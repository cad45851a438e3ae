"""Prompt-cache markers and keys on the wire (ADR 0079).

Owns what a request body says about caching, for every provider, from one setting
(``ModelSettings.cache``, a ``PromptCache``; ``None`` turns everything off):

- Anthropic: ``cache_control`` breakpoints, at most ``MAX_ANTHROPIC_BREAKPOINTS`` (4):
  the last tool (caches every tool definition), the system block, the last message
  before the newest user turn (the prefix the previous run ended with, stable between
  two cuts) and the newest message (what the next request reads back). A breakpoint
  sits on the last block of its message that may carry one (not thinking, not an
  empty text); markers are not part of the cached content, so moving the newest-message
  breakpoint forward never breaks the prefix;
- OpenAI Chat Completions and Responses: ``prompt_cache_key`` (the setting's ``key``,
  else the request's conversation id, else the newest stamped message's), and
  ``prompt_cache_retention`` when set;
- Gemini: nothing. Implicit caching serves any repeated prefix of at least the model's
  minimum size without a marker; explicit ``cachedContents`` are a separate resource
  golem does not manage.

Each provider's rule is a ``CacheRule`` in its registry profile (``golem_core.providers``);
``add_cache_markers(body, request, rule)`` applies one. Pure: functions of the request and
the body the encoder built.
"""

from __future__ import annotations

import enum
from typing import Any, Final, assert_never

from golem_core._identity import conversation_id_of
from golem_core._model import ModelRequest, PromptCache

__all__ = [
    "MAX_ANTHROPIC_BREAKPOINTS",
    "CacheRule",
    "add_anthropic_breakpoints",
    "add_cache_markers",
    "add_openai_cache_key",
    "cache_key",
    "strip_cache_markers",
]

MAX_ANTHROPIC_BREAKPOINTS: Final = 4
"""Anthropic refuses a request with more ``cache_control`` blocks than this."""


class CacheRule(enum.StrEnum):
    """How a request body asks a provider to cache its prefix."""

    BREAKPOINTS = "breakpoints"
    """Anthropic: ``cache_control`` markers (``add_anthropic_breakpoints``)."""
    KEY = "key"
    """OpenAI: ``prompt_cache_key`` and retention (``add_openai_cache_key``)."""
    IMPLICIT = "implicit"
    """Gemini: nothing in the body; any repeated prefix is served from cache."""


_UNMARKABLE: Final = frozenset({"thinking", "redacted_thinking"})


def cache_key(request: ModelRequest) -> str | None:
    """The OpenAI ``prompt_cache_key`` of ``request``, or ``None`` when caching is off.

    The setting's explicit ``key``, else ``request.conversation_id``, else the
    conversation id of the newest message stamped with one. Total and deterministic.
    """
    cache = request.settings.cache
    if cache is None:
        return None
    if cache.key is not None:
        return cache.key
    return request.conversation_id or conversation_id_of(request.messages)


def add_openai_cache_key(body: dict[str, Any], request: ModelRequest) -> None:
    """Write ``prompt_cache_key`` and ``prompt_cache_retention`` into a Chat or Responses body."""
    cache = request.settings.cache
    if cache is None:
        return
    key = cache_key(request)
    if key is not None:
        body["prompt_cache_key"] = key
    if cache.retention is not None:
        body["prompt_cache_retention"] = cache.retention


def _marker(cache: PromptCache) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": "1h"} if cache.ttl == "1h" else {"type": "ephemeral"}


def _mark_message(message: dict[str, Any], marker: dict[str, str]) -> bool:
    """Put ``marker`` on the last block of ``message`` that may carry one."""
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": dict(marker)}]
        return True
    if not isinstance(content, list):
        return False
    for block in reversed(content):
        if block.get("type") in _UNMARKABLE:
            continue
        if block.get("type") == "text" and not block.get("text"):
            continue
        block["cache_control"] = dict(marker)
        return True
    return False


def _opens_a_turn(message: dict[str, Any]) -> bool:
    """Whether an encoded user message holds more than tool results (a new prompt)."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return True
    return any(block.get("type") != "tool_result" for block in content or ())


def add_anthropic_breakpoints(body: dict[str, Any], request: ModelRequest) -> None:
    """Put Anthropic ``cache_control`` breakpoints into ``body`` (at most 4).

    In order: the last tool, the system text (made a one-block list), the last message
    before the newest user turn, the newest message. Nothing when caching is off.
    """
    cache = request.settings.cache
    if cache is None:
        return
    marker = _marker(cache)
    tools = body.get("tools")
    if tools:
        tools[-1]["cache_control"] = dict(marker)
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(marker)}]
    messages: list[dict[str, Any]] = body.get("messages") or []
    if not messages:
        return
    newest = len(messages) - 1
    turn = next((k for k in range(newest, -1, -1) if _opens_a_turn(messages[k])), None)
    if turn is not None and turn > 0:
        _mark_message(messages[turn - 1], marker)
    _mark_message(messages[newest], marker)


def strip_cache_markers(value: Any) -> Any:
    """``value`` (a body or any part of it) without ``cache_control``, ``prompt_cache_key``
    and ``prompt_cache_retention``, and with a system block list marked only for caching
    turned back into its string: the content a cache compares. A new value; total."""
    if isinstance(value, dict):
        out = {
            k: strip_cache_markers(v)
            for k, v in value.items()
            if k not in ("cache_control", "prompt_cache_key", "prompt_cache_retention")
        }
        system = out.get("system")
        if (
            isinstance(system, list)
            and len(system) == 1
            and set(system[0]) == {"type", "text"}
            and system[0]["type"] == "text"
        ):
            out["system"] = system[0]["text"]
        return out
    if isinstance(value, list):
        return [strip_cache_markers(v) for v in value]
    return value


def add_cache_markers(body: dict[str, Any], request: ModelRequest, rule: CacheRule) -> None:
    """Write what ``rule`` says about caching into ``body`` (nothing when caching is off,
    or for ``IMPLICIT``)."""
    match rule:
        case CacheRule.BREAKPOINTS:
            add_anthropic_breakpoints(body, request)
        case CacheRule.KEY:
            add_openai_cache_key(body, request)
        case CacheRule.IMPLICIT:
            pass
        case _:  # pragma: no cover
            assert_never(rule)
