"""Offline models: a function of the request answers it, streamed or not."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

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
)
from golem_core.wire import (
    StreamAccumulator,
    text_deltas,
)

__all__ = ["FunctionModel", "ScriptedModel", "deltas_of"]

Answer = Message | str
AnswerFunction = Callable[[ModelRequest], Answer | Awaitable[Answer]]
StreamFunction = Callable[
    [ModelRequest], Iterable[str | ModelDelta] | AsyncIterator[str | ModelDelta]
]


def _as_message(answer: Answer) -> Message:
    if isinstance(answer, str):
        return Message(Role.ASSISTANT, (TextPart(answer),))
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
        answer = self._function(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return _as_message(answer)

    async def request_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if self._stream_function is None:
            message = await self.request(request)
            for delta in deltas_of(message):
                yield delta
            yield StreamDone(message)
            return
        acc = StreamAccumulator()
        produced = self._stream_function(request)
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
        yield StreamDone(acc.message(finish_reason="stop"))


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
