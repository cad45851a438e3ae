"""Offline models: a function of the request answers it, streamed or not; and the rough
token count the offline models report when the answer brings none (``estimate_usage``)."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

import attrs

from golem_core import (
    Message,
    ModelDelta,
    ModelRequest,
    Role,
    StreamDone,
    StreamEvent,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallDelta,
    ToolCallPart,
    Usage,
)
from golem_core.wire import (
    StreamAccumulator,
    text_deltas,
)

__all__ = ["FunctionModel", "ScriptedModel", "deltas_of", "estimate_usage"]

Answer = Message | str
Streamed = Iterable[str | ModelDelta] | AsyncIterator[str | ModelDelta]
AnswerFunction = (
    Callable[[ModelRequest], Answer | Awaitable[Answer]]
    | Callable[[tuple[Message, ...], ModelRequest], Answer | Awaitable[Answer]]
)
StreamFunction = (
    Callable[[ModelRequest], Streamed] | Callable[[tuple[Message, ...], ModelRequest], Streamed]
)

_TOKEN_SPLIT = re.compile(r'[\s",.:]+')
_OVERHEAD = 50
"""Tokens a request costs besides its messages (pydantic-ai's test models assume 50)."""


def _tokens(text: str) -> int:
    """Words split on whitespace and ``",.:`` (pydantic-ai's estimate); blank text is 0."""
    return len(_TOKEN_SPLIT.split(text.strip())) if text.strip() else 0


def _message_tokens(message: Message) -> int:
    total = 0
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            total += 1 + _tokens(part.arguments)
        elif isinstance(part, TextPart | ThinkingPart):
            total += _tokens(part.text)
    return total


_COUNTED: dict[int, tuple[Message, int]] = {}
_COUNTED_LIMIT = 16_384


def _counted(message: Message) -> int:
    """``_message_tokens(message)``, counted once per message object: a run's requests
    resend its history, and a message is immutable (the entry holds the message, so its
    ``id`` is not reused while the entry lives; the table is emptied when full)."""
    hit = _COUNTED.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    tokens = _message_tokens(message)
    if len(_COUNTED) >= _COUNTED_LIMIT:
        _COUNTED.clear()
    _COUNTED[id(message)] = (message, tokens)
    return tokens


def estimate_usage(request: ModelRequest, answer: Message) -> Usage:
    """A rough, deterministic token count of ``request`` and its ``answer``, for offline
    models whose answer reports none (``FunctionModel``, ``TestModel``; ``ScriptedModel``
    reports what its script says),
    so that token and cost limits fire in tests as they would against a provider.

    Counted as pydantic-ai's test models count: words split on whitespace and ``",.:``
    (text, thinking, tool results), a tool call as one token plus its arguments, 50 tokens
    of overhead per request. ``input_tokens`` counts the instructions and every message of
    the request (earlier answers included: they are input to this one), ``output_tokens``
    the answer. Not a tokenizer: plausible numbers for tests, not a bill.
    """
    sent = sum(_counted(m) for m in request.messages)
    instructions = _tokens(request.instructions) if request.instructions else 0
    return Usage(_OVERHEAD + instructions + sent, _message_tokens(answer))


def _with_usage(request: ModelRequest, answer: Message) -> Message:
    """``answer``, with an estimated usage when it reports none."""
    if answer.usage is not None:
        return answer
    return attrs.evolve(answer, usage=estimate_usage(request, answer))


def _takes_messages_and_info(function: Callable[..., Any], what: str) -> bool:
    """Whether ``function`` is written pydantic-ai's way, ``(messages, info)``: two
    positional parameters (golem passes ``request.messages`` and the ``ModelRequest``,
    which carries what pydantic-ai's ``AgentInfo`` does: tools, settings, output schema)
    rather than one (the ``ModelRequest``). Another shape is refused saying both."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin or C callable: assume golem's shape
        return False
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in signature.parameters.values())
    if len(required) == 2:
        return True
    if len(required) <= 1 and (positional or varargs):
        return False
    raise TypeError(
        f"FunctionModel's {what} takes {len(required)} required positional parameters"
        f" {[p.name for p in required]}: write it as {what}(request: ModelRequest) (golem's"
        " shape: request.messages, request.tools, request.output_schema) or as"
        f" {what}(messages, request) (pydantic-ai's (messages, info) shape)"
    )


def _as_message(answer: Answer) -> Message:
    if isinstance(answer, str):
        return Message(Role.ASSISTANT, (TextPart(answer),))
    if not isinstance(answer, Message):
        raise TypeError(
            f"a model function returns a golem_core Message (Message.assistant(...)) or a"
            f" str, not {type(answer).__module__}.{type(answer).__qualname__}"
        )
    if answer.role is not Role.ASSISTANT:
        raise TypeError(f"a model answers with an assistant message, not {answer.role.value}")
    return answer


def deltas_of(message: Message) -> tuple[ModelDelta, ...]:
    """The deltas a streaming provider would send for ``message``, text split into words.

    Folding them with ``StreamAccumulator`` gives back ``message``'s parts.
    """
    out: list[ModelDelta] = []
    calls = 0
    for index, part in enumerate(message.parts):
        if isinstance(part, TextPart):
            out.extend(TextDelta(d.text, index) for d in text_deltas(part.text))
        elif isinstance(part, ThinkingPart):
            out.append(ThinkingDelta(part.text, index, part.signature, part.redacted))
        elif isinstance(part, ToolCallPart):
            half = len(part.arguments) // 2
            out.append(ToolCallDelta(calls, part.id, part.name, part.arguments[:half]))
            if part.arguments[half:]:
                out.append(ToolCallDelta(calls, None, None, part.arguments[half:]))
            calls += 1
    return tuple(out)


class FunctionModel:
    """A model whose answers come from your function: for tests, demos and offline runs.

    ``function(request)`` (sync or async) returns the assistant message, or a string for
    a text answer. Streaming uses ``stream_function(request)`` when given, which yields
    strings (text) or deltas; otherwise it streams ``function``'s answer word by word.

    A function of two positional parameters is called pydantic-ai's way,
    ``function(messages, request)``: ``request.messages`` first, then the
    ``ModelRequest`` in the place of pydantic-ai's ``AgentInfo`` (``request.tools``,
    ``request.settings``, ``request.output_schema``). The messages are golem's
    ``Message`` values, and the answer is a ``Message`` or a string, not a
    ``ModelResponse``.

    An answer that reports no ``usage`` gets an estimated one (``estimate_usage``), so
    that token and cost limits fire offline.
    """

    supports_native_output = True
    """Your function sees ``request.output_schema`` (``output_mode="native"``)."""

    def __init__(
        self,
        function: AnswerFunction | None = None,
        *,
        stream_function: StreamFunction | None = None,
        name: str = "function",
    ) -> None:
        if function is None and stream_function is None:
            raise TypeError("FunctionModel needs a function or a stream_function")
        self._function = function
        self._stream_function = stream_function
        self._name = name
        self._two = function is not None and _takes_messages_and_info(function, "function")
        self._stream_two = stream_function is not None and _takes_messages_and_info(
            stream_function, "stream_function"
        )

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"FunctionModel(name={self._name!r})"

    async def request(self, request: ModelRequest) -> Message:
        if self._function is None:
            async for event in self.request_stream(request):
                if isinstance(event, StreamDone):
                    return event.message
            raise AssertionError("unreachable")  # pragma: no cover
        function: Any = self._function
        answer = function(request.messages, request) if self._two else function(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return _with_usage(request, _as_message(answer))

    async def request_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if self._stream_function is None:
            message = await self.request(request)
            for delta in deltas_of(message):
                yield delta
            yield StreamDone(message)
            return
        acc = StreamAccumulator()
        stream_function: Any = self._stream_function
        produced = (
            stream_function(request.messages, request)
            if self._stream_two
            else stream_function(request)
        )
        items: list[str | ModelDelta] = []
        if isinstance(produced, AsyncIterator):
            async for item in produced:
                delta = TextDelta(item) if isinstance(item, str) else item
                acc.add(delta)
                yield delta
        else:
            items = list(produced)
            for item in items:
                delta = TextDelta(item) if isinstance(item, str) else item
                acc.add(delta)
                yield delta
        yield StreamDone(_with_usage(request, acc.message(finish_reason="stop")))


class ScriptedModel:
    """A model that gives scripted answers in order and records every request it got.

    Each script item is an assistant ``Message``, a string (text answer), an exception
    (raised for that request, e.g. a ``ModelError``) or a function of the request that
    returns one of these. Running past the end of the script raises ``AssertionError``.
    """

    supports_native_output = True
    """The script answers whatever is asked, ``output_schema`` too (``output_mode="native"``)."""

    def __init__(self, script: Sequence[Any], *, name: str = "scripted") -> None:
        self._script = list(script)
        self._name = name
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self._name!r}, remaining={len(self._script)})"

    @property
    def remaining(self) -> int:
        """How many scripted answers are left."""
        return len(self._script)

    def _next(self, request: ModelRequest) -> Message:
        self.requests.append(request)
        if not self._script:
            raise AssertionError(
                f"ScriptedModel ran out of answers at request {len(self.requests)}"
            )
        item = self._script.pop(0)
        if callable(item) and not isinstance(item, BaseException):
            item = item(request)
        if isinstance(item, BaseException):
            raise item
        return _as_message(item)

    async def request(self, request: ModelRequest) -> Message:
        return self._next(request)

    async def request_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        message = self._next(request)
        for delta in deltas_of(message):
            yield delta
        yield StreamDone(message)
