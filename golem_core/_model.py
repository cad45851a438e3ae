"""What a run asks of a model and what a model streams back, provider-neutral.

Owns ``ModelRequest`` (instructions, the canonical conversation to send, tool
definitions, settings), ``ToolDefinition``, ``ModelSettings``, the stream events a model
emits (``TextDelta``, ``ThinkingDelta``, ``ToolCallDelta``, then one ``StreamDone``)
and ``ModelErrorKind``, the named kinds of request failure. Adapters turn a
``ModelRequest`` into their wire body and their wire answer into an assistant
``Message``; the run loop never sees a provider's shape.
"""

from __future__ import annotations

import enum
from typing import Any, Final, Literal, TypeAlias

from attrs import field, frozen

from golem_core._messages import Message

__all__ = [
    "ModelDelta",
    "ModelErrorKind",
    "ModelRequest",
    "ModelSettings",
    "PromptCache",
    "StreamDone",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolDefinition",
]


@frozen
class ToolDefinition:
    """A tool as a model sees it: a name, a description and a JSON Schema of its arguments.

    ``parameters`` is a JSON Schema object (``{"type": "object", "properties": ...}``);
    it takes no part in hashing.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(
        factory=lambda: {"type": "object", "properties": {}}, hash=False
    )


CacheTTL: TypeAlias = Literal["5m", "1h"]
"""How long Anthropic keeps a cache entry: five minutes (the default, write 1.25x) or one
hour (write 2x)."""

CacheRetention: TypeAlias = Literal["in_memory", "24h"]
"""OpenAI's ``prompt_cache_retention``: in memory (minutes, the default) or 24 hours."""


def _check_ttl(instance: object, attribute: object, value: Any) -> None:
    if value not in ("5m", "1h"):
        raise ValueError(f"PromptCache(ttl): expected '5m' or '1h', got {value!r}")


def _check_retention(instance: object, attribute: object, value: Any) -> None:
    if value not in (None, "in_memory", "24h"):
        raise ValueError(
            f"PromptCache(retention): expected None, 'in_memory' or '24h', got {value!r}"
        )


def _check_key(instance: object, attribute: object, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"PromptCache(key): expected None or a non-empty string, got {value!r}")


@frozen
class PromptCache:
    """How requests ask providers to cache their prompt prefix (ADR 0079).

    On by default (``ModelSettings.cache``); ``ModelSettings(cache=None)`` turns every
    marker and key off. What each provider gets:

    - Anthropic: ``cache_control`` breakpoints (at most 4) on the last tool, the system
      block, the last message before the newest user turn (the stable prefix the
      previous run ended with) and the newest message; ``ttl="1h"`` asks for the
      one-hour cache;
    - OpenAI Chat Completions and Responses: ``prompt_cache_key`` (``key``, else the
      request's conversation id, else the newest stamped message's) and, when set,
      ``prompt_cache_retention``; prefix caching itself is automatic;
    - Gemini: nothing to send; implicit caching serves a repeated prefix by itself.

    Attributes:
        ttl: ``"5m"`` or ``"1h"`` (Anthropic).
        key: The OpenAI ``prompt_cache_key``; ``None`` uses the conversation id.
        retention: OpenAI's ``prompt_cache_retention`` (``"in_memory"`` or ``"24h"``);
            ``None`` leaves it to the provider.
    """

    ttl: CacheTTL = field(default="5m", validator=_check_ttl)
    key: str | None = field(default=None, validator=_check_key)
    retention: CacheRetention | None = field(default=None, validator=_check_retention)


DEFAULT_PROMPT_CACHE: Final = PromptCache()
"""The cache settings every request has unless told otherwise."""


@frozen
class ModelSettings:
    """Sampling settings sent with every request of a run; ``None`` means the provider's default.

    ``max_tokens`` defaults, for providers that require it (Anthropic), to the adapter's
    own default. ``cache`` says how the prompt prefix is cached (``PromptCache``, on by
    default); ``cache=None`` sends no cache marker or key at all.
    """

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    parallel_tool_calls: bool | None = None
    cache: PromptCache | None = DEFAULT_PROMPT_CACHE


@frozen
class ModelRequest:
    """One request to a model.

    ``messages`` is the canonical conversation to send, already processed, repaired and
    free of system messages: the run's resolved ``instructions`` are the only system
    text, and each adapter puts them where its provider wants them. ``tool_choice_required``
    asks the model to call a tool (structured output). ``output_schema``, when set, asks
    for a text answer that is JSON matching ``output_schema.parameters`` (native structured
    output, e.g. OpenAI ``response_format``; ``name`` and ``description`` name it); only
    models that declare ``supports_native_output`` are sent one. ``conversation_id``
    names the conversation (the default OpenAI ``prompt_cache_key``); when unset, the
    newest message stamped with one names it.
    """

    messages: tuple[Message, ...]
    instructions: str | None = None
    tools: tuple[ToolDefinition, ...] = ()
    settings: ModelSettings = ModelSettings()
    tool_choice_required: bool = False
    run_id: str | None = None
    output_schema: ToolDefinition | None = field(default=None, kw_only=True)
    conversation_id: str | None = field(default=None, kw_only=True)


# -- streaming ------------------------------------------------------------------------


@frozen
class TextDelta:
    """More text for the text part at ``index`` of the message being streamed."""

    text: str
    index: int = 0


@frozen
class ThinkingDelta:
    """More thinking for the thinking part at ``index``.

    ``signature``, when set, replaces the part's signature (providers send it once, at
    the end). A redacted block arrives whole: ``redacted=True`` and its payload in
    ``text``.
    """

    text: str
    index: int = 0
    signature: str | None = None
    redacted: bool = False


@frozen
class ToolCallDelta:
    """A fragment of the tool call at ``index``: its id and name come once, arguments in pieces."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


ModelDelta: TypeAlias = TextDelta | ThinkingDelta | ToolCallDelta
"""A piece of a streamed assistant message."""


@frozen
class StreamDone:
    """The end of a stream: the complete assistant message, equal to the non-streamed one."""

    message: Message


StreamEvent: TypeAlias = TextDelta | ThinkingDelta | ToolCallDelta | StreamDone
"""What a model stream yields: deltas, then exactly one ``StreamDone``."""


class ModelErrorKind(enum.StrEnum):
    """Why a model request failed, the same names for every provider."""

    AUTHENTICATION = "authentication"
    PERMISSION = "permission"
    NOT_FOUND = "not_found"
    RATE_LIMIT = "rate_limit"
    QUOTA = "quota"
    OVERLOADED = "overloaded"
    INVALID_REQUEST = "invalid_request"
    CONTEXT_TOO_LONG = "context_too_long"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    BAD_RESPONSE = "bad_response"
    STREAM_INTERRUPTED = "stream_interrupted"
    UNSUPPORTED_CONTENT = "unsupported_content"
    CONFIGURATION = "configuration"

    @property
    def retryable(self) -> bool:
        """Whether trying the same request again may succeed."""
        return self in _RETRYABLE


_RETRYABLE = frozenset(
    {
        ModelErrorKind.RATE_LIMIT,
        ModelErrorKind.OVERLOADED,
        ModelErrorKind.SERVER_ERROR,
        ModelErrorKind.TIMEOUT,
        ModelErrorKind.CONNECTION,
        ModelErrorKind.STREAM_INTERRUPTED,
    }
)
