"""A run as an async iterator of its events: ``Agent.iter_stream``.

Owns ``EventStream``: it drives one streamed run in its own task and hands its events
(``DeltaEvent`` and the lifecycle events of ``golem_core.loop._events``) to the consumer in
the order they happened. The final result is ``stream.result`` once the events are
exhausted. Leaving early (``break`` inside ``async with``, or ``aclose()``) cancels the
run; what it completed stays reachable as ``stream.partial``, as ``partial_from`` gives
it for any interrupted run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from types import TracebackType
from typing import Any, Final, Generic, TypeAlias, TypeVar

from golem_core import LifecycleEvent, TextDelta, ToolCallDelta
from golem_shell._errors import PartialResult, RunError, Stage, UsageError
from golem_shell._results import DeltaEvent, RunResult, ToolResultEvent, partial_from
from golem_shell.tools._output import Output
from golem_shell.tools._partial_json import INCOMPLETE

__all__ = ["EventStream", "RunEvent"]

OutputT = TypeVar("OutputT")

RunEvent: TypeAlias = DeltaEvent | ToolResultEvent | LifecycleEvent
"""What ``iter_stream`` yields and ``on_event`` receives."""

PARSE_EVERY_PIECE: Final = 1024
"""Characters of a structured answer that ``stream_output`` parses again on every piece."""


def _due(length: int, parsed: int) -> bool:
    """Whether ``stream_output`` parses an answer of ``length`` characters, last parsed
    at ``parsed``: on every piece while short, then once it has grown by an eighth (so
    the parses of an answer read at most about nine times its length past the start)."""
    return length <= PARSE_EVERY_PIECE or length - parsed >= parsed >> 3


StartRun: TypeAlias = Callable[
    [Callable[[DeltaEvent], None], Callable[[RunEvent], None]],
    Coroutine[Any, Any, RunResult[OutputT]],
]

_DONE = object()


class EventStream(Generic[OutputT]):
    """The events of one streamed run, in order, then its result.

    Use it as ``async with agent.iter_stream(prompt) as stream: async for event in
    stream: ...``. The run starts at the first iteration (or on entering ``async with``)
    in a task of its own, so a slow consumer never loses an event (they queue up).

    - ``result``: the ``RunResult`` once the run finished or paused; if the run failed,
      iterating raises its ``RunError`` and ``result`` raises it again.
    - Leaving the ``async with`` block early, or ``await stream.aclose()``, cancels the
      run and waits for it to stop; ``partial`` is then the completed evidence
      (``None`` if nothing was completed), ready for ``run_with_history``.
    """

    def __init__(self, start: StartRun[OutputT], output: Output | None = None) -> None:
        self._start = start
        self._output = output
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._task: asyncio.Task[RunResult[OutputT]] | None = None
        self._error: BaseException | None = None
        self._result: RunResult[OutputT] | None = None
        self._finished = False
        self._cancelled: asyncio.CancelledError | None = None

    def __repr__(self) -> str:
        state = "finished" if self._finished else "running" if self._task else "not started"
        return f"EventStream({state})"

    # -- running --------------------------------------------------------------------

    def _ensure_started(self) -> None:
        if self._task is not None:
            return
        put = self._queue.put_nowait

        def on_delta(_: DeltaEvent) -> None:
            return None  # deltas reach the queue through on_event, in order

        self._task = asyncio.get_running_loop().create_task(self._drive(self._start(on_delta, put)))

    async def _drive(self, run: Coroutine[Any, Any, RunResult[OutputT]]) -> RunResult[OutputT]:
        try:
            return await run
        except asyncio.CancelledError as e:
            self._cancelled = e  # carries the run's partial (``partial_from``)
            raise
        finally:
            self._queue.put_nowait(_DONE)

    def __aiter__(self) -> EventStream[OutputT]:
        return self

    async def __anext__(self) -> RunEvent:
        if self._finished:
            raise StopAsyncIteration
        self._ensure_started()
        item = await self._queue.get()
        if item is not _DONE:
            return item  # type: ignore[return-value]
        self._finish()
        if self._error is not None:
            raise self._error
        raise StopAsyncIteration

    def _finish(self) -> None:
        self._finished = True
        task = self._task
        assert task is not None and task.done()
        if task.cancelled():
            self._error = self._cancelled or asyncio.CancelledError()
            return
        error = task.exception()
        if error is not None:
            self._error = error
        else:
            self._result = task.result()

    async def aclose(self) -> None:
        """Stop the run if it is still going, and wait until it has stopped."""
        task = self._task
        if task is None:
            self._finished = True
            return
        if not task.done():
            task.cancel()
        await asyncio.wait({task})
        if not self._finished:
            self._finish()

    async def __aenter__(self) -> EventStream[OutputT]:
        self._ensure_started()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def stream_text(self, *, delta: bool = False) -> AsyncIterator[str]:
        """The model's answer text as it streams: the whole text of the current answer
        so far at each delta (``delta=False``), or each new piece (``delta=True``). In a
        tool loop each model request's answer starts anew. The other events are passed
        over; ``result`` holds the run's result once this ends.

        Raises:
            RunError: the run failed.
        """
        shown: list[str] = []
        request = 0
        async for event in self:
            if not isinstance(event, DeltaEvent) or (piece := event.text) is None:
                continue
            if event.request != request:
                request, shown = event.request, []
            shown.append(piece)
            yield piece if delta else "".join(shown)

    async def stream_output(self) -> AsyncIterator[OutputT]:
        """The run's output as it streams: each time the streamed answer so far is valid
        as the output type, that value (a structured output grows field by field; the
        field being written shows as far as it has come), and at the end the final
        output (after the output validators, which never see a partial). A value equal
        to the one before is not repeated. A structured answer is read again on every
        piece for its first ``PARSE_EVERY_PIECE`` characters, then each time it has
        grown by an eighth: each read parses the whole answer so far, so this keeps a
        long answer's cost a bounded multiple of its length (on every piece it grew
        with the square of the length). ``str`` output gives the text so far, as
        ``stream_text()`` does. ``result`` holds the run's result once this ends.

        Raises:
            RunError: the run failed.
            UsageError: the stream was not made by ``Agent.iter_stream``.
        """
        output = self._output
        if output is None:
            raise UsageError("stream_output needs the stream of Agent.iter_stream")
        shown: Any = INCOMPLETE
        request = 0
        pieces: dict[int, list[str]] = {}  # the output's pieces by tool-call index
        lengths: dict[int, int] = {}  # their length so far, and when last parsed
        parsed: dict[int, int] = {}
        names: dict[int, str | None] = {}
        async for event in self:
            if not isinstance(event, DeltaEvent):
                continue
            if event.request != request:
                request, pieces, lengths, parsed, names = event.request, {}, {}, {}, {}
            delta = event.delta
            if output.text or output.mode == "native":  # the answer's text is the output
                if not isinstance(delta, TextDelta):
                    continue
                index, piece = -1, delta.text
            elif isinstance(delta, ToolCallDelta) and output.definition is not None:
                if delta.name is not None:  # a call's name comes once, with its first piece
                    names[delta.index] = delta.name
                if names.get(delta.index) != output.definition.name:
                    continue
                index, piece = delta.index, delta.arguments
            else:
                continue
            growing = pieces.setdefault(index, [])
            growing.append(piece)
            length = lengths.get(index, 0) + len(piece)
            lengths[index] = length
            if not output.text and not _due(length, parsed.get(index, 0)):
                continue
            parsed[index] = length
            value = output.partial("".join(growing))
            if value is not INCOMPLETE and value != shown:
                shown = value
                yield value
        if self._result is not None and not self._result.paused:
            final = self._result.output
            if final != shown:
                yield final

    # -- the outcome ----------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Whether the run has ended (finished, paused, failed or cancelled)."""
        return self._finished

    @property
    def result(self) -> RunResult[OutputT]:
        """The run's result.

        Raises:
            RunError: the run failed (the error iteration raised), or the stream was
                closed before the run ended (stage ``canceled``, with ``partial``: what
                it completed, as a cancelled run gives it).
            UsageError: the events are not exhausted yet.
        """
        if not self._finished:
            raise UsageError("the run has not ended yet: iterate the stream to its end first")
        if isinstance(self._error, asyncio.CancelledError):
            raise RunError(
                Stage.CANCELED,
                "the stream was closed before the run ended",
                partial=partial_from(self._error),
                cause=self._error,
            )
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    @property
    def partial(self) -> PartialResult | None:
        """What a failed or cancelled run completed (``None`` if it finished, or did nothing)."""
        if self._error is None:
            return None
        return partial_from(self._error)
