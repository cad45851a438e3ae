"""A run as a chat UI sees it: the items of a run, and the steps both protocols share.

Owns what both protocol adapters (``_vercel``, ``_agui``) read from a run:

- ``run_items(start)`` drives one run (streamed) in a task of its own and yields, in
  order, its ``RunEvent``s, the ``ToolResults`` the run produced (each as soon as the
  tool finished: a streamed run reports ``ToolResultEvent``; whatever the run added
  without one, e.g. an answer to an approval, at the end), a ``Steered`` with the
  person's messages each time the run took some it was sent while it worked (given
  its ``Steering``), and finally a ``RunEnded`` with the result or the error.
- ``failure_text(error)`` is what a client is shown of a failed run (a generic
  sentence and an error id; the detail goes to the ``golem.ui`` log).
- ``UIFold`` turns those items into protocol-neutral ``UIStep``s (steps, text and
  reasoning blocks, calls, results, approvals, the end) in the order every chat
  protocol shares; each adapter only names them in its own vocabulary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from attrs import frozen

from golem_core import (
    DeferredAnswer,
    Denied,
    Message,
    RequestFinished,
    Role,
    RunPaused,
    RunSteered,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallPart,
)
from golem_shell import (  # the public API only: the agent's internals may change
    DeltaEvent,
    EventHandler,
    RunEvent,
    RunResult,
    Steering,
    ToolResultEvent,
    new_id,
    partial_from,
)

__all__ = [
    "ApprovalRequested",
    "BlockDelta",
    "BlockEnded",
    "BlockStarted",
    "CallArguments",
    "CallReady",
    "CallResult",
    "CallStarted",
    "RunEnded",
    "RunItem",
    "StartRun",
    "Steered",
    "StepEnded",
    "StepStarted",
    "ToolResults",
    "UIFold",
    "UIStep",
    "failure_text",
    "run_items",
]

_log = logging.getLogger("golem.ui")


@frozen
class ToolResults:
    """Tool messages the run has produced so far (some may have been reported before)."""

    messages: tuple[Message, ...]


@frozen
class RunEnded:
    """The run ended: ``result`` when it finished or paused, else ``error``."""

    result: RunResult[Any] | None
    error: BaseException | None = None


@frozen
class Steered:
    """The person's ``messages``, sent while the run worked, joined it before its model
    request ``request`` (steering: ``RunSteered`` with what was taken). Both a run item
    and a UI step: a chat shows them where they joined, between a step and the next."""

    request: int
    messages: tuple[Message, ...]


RunItem: TypeAlias = RunEvent | ToolResults | Steered | RunEnded
"""What ``run_items`` yields."""

StartRun: TypeAlias = Callable[
    [Callable[[DeltaEvent], None], EventHandler], Awaitable[RunResult[Any]]
]
"""Starts the run with an ``on_delta`` and an ``on_event`` handler, e.g.
``lambda on_delta, on_event: agent.run_stream_with_history(h, p, on_delta=on_delta,
on_event=on_event)``."""


def _ignore(_: DeltaEvent) -> None:
    return None


async def run_items(start: StartRun, *, steering: Steering | None = None) -> AsyncIterator[RunItem]:
    """Drive a run and yield its items in order, ending with exactly one ``RunEnded``.

    The run goes on in its own task while the consumer is slow; if the consumer
    leaves early (closes this generator), the run is cancelled. With the ``steering``
    the run was started with, each ``RunSteered`` is followed by a ``Steered`` holding
    the messages it took (the event counts them; the ``Steering`` holds them).
    """
    queue: asyncio.Queue[RunItem] = asyncio.Queue()
    done = object()

    def on_event(event: RunEvent) -> None:
        if isinstance(event, RunSteered) and steering is not None:
            queue.put_nowait(event)
            taken = steering.taken  # the run takes, then reports: the newest are these
            queue.put_nowait(Steered(event.request, taken[len(taken) - event.messages :]))
            return
        if isinstance(event, ToolResultEvent):
            result = Message.tool_result(
                event.call_id, event.name, event.parts, failed=event.failed
            )
            queue.put_nowait(ToolResults((result,)))
            return
        queue.put_nowait(event)

    async def drive() -> None:
        try:
            result = await start(_ignore, on_event)
        except Exception as e:  # a RunError, a refusal: reported as the run's end
            queue.put_nowait(RunEnded(None, e))
        else:
            queue.put_nowait(ToolResults(_tool_messages(result.new_messages)))
            queue.put_nowait(RunEnded(result))
        finally:
            queue.put_nowait(done)  # type: ignore[arg-type]

    task = asyncio.get_running_loop().create_task(drive())
    try:
        while True:
            item = await queue.get()
            if item is done:
                break
            yield item
    finally:
        if not task.done():
            task.cancel()
        await asyncio.wait({task})


def failure_text(error: BaseException | None) -> str:
    """What a client is told about a failed run: a generic sentence and an error id.

    The error's own text (a provider's message, a host name, a key's prefix, a stack of
    a tool) goes to the ``golem.ui`` log with its traceback under that id, never to the
    browser. Mints an id and logs: call it once per failed run.
    """
    error_id = new_id()
    _log.error(
        "a run failed (error id %s): %s",
        error_id,
        type(error).__name__,
        exc_info=(type(error), error, error.__traceback__) if error is not None else None,
    )
    return f"the run failed (error id {error_id})."


def _tool_messages(messages: Sequence[Message]) -> tuple[Message, ...]:
    return tuple(m for m in messages if m.role is Role.TOOL)


# -- protocol-neutral steps: what both encoders translate -----------------------------------


@frozen
class StepStarted:
    """Model request ``request`` of the run began answering."""

    request: int


@frozen
class StepEnded:
    """The model answer of the current step is complete."""


@frozen
class BlockStarted:
    """A text or reasoning block began; ``id`` is unique within the stream."""

    kind: Literal["text", "reasoning"]
    id: str


@frozen
class BlockDelta:
    """More text for the open block."""

    kind: Literal["text", "reasoning"]
    id: str
    text: str


@frozen
class BlockEnded:
    """The open block is complete."""

    kind: Literal["text", "reasoning"]
    id: str


@frozen
class CallStarted:
    """A tool call began streaming: its id and tool name are known."""

    id: str
    name: str


@frozen
class CallArguments:
    """More argument text of a call (concatenated in order they are the arguments)."""

    id: str
    text: str


@frozen
class CallReady:
    """A call is complete (its arguments whole); ``part`` as it is stored."""

    part: ToolCallPart


@frozen
class CallResult:
    """A call's result (``denied`` when the person refused the call)."""

    message: Message
    denied: bool = False


@frozen
class ApprovalRequested:
    """The run paused: ``call`` waits for a person's approval."""

    call: ToolCallPart


UIStep: TypeAlias = (
    StepStarted
    | StepEnded
    | BlockStarted
    | BlockDelta
    | BlockEnded
    | CallStarted
    | CallArguments
    | CallReady
    | CallResult
    | ApprovalRequested
    | Steered
    | RunEnded
)
"""One step of a run as a chat UI shows it."""


class _Call:
    __slots__ = ("args", "id", "name", "ready", "sent", "started")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.args: list[str] = []
        self.started = False
        self.ready = False
        self.sent = 0  # argument fragments already reported


class UIFold:
    """Folds run items into ``UIStep``s, the order every chat protocol shares.

    Blocks never overlap (a new one closes the open one); a step ends before the next
    starts and before the run ends; a call is ``CallStarted`` once its id and name are
    known, ``CallReady`` when its request finished (or it is about to wait for
    approval); a result is reported once, only for calls this stream showed or
    ``answered`` names. A builder, used once per stream.

    Args:
        block_prefix: makes block ids unique (e.g. the UI message id).
        answered: answers a continued run gives to waiting calls (their results are
            shown; a ``Denied`` one with ``denied=True``).
    """

    def __init__(
        self, block_prefix: str, answered: Mapping[str, DeferredAnswer] | None = None
    ) -> None:
        answers = answered or {}
        self._prefix = block_prefix
        self._denied = {k for k, v in answers.items() if isinstance(v, Denied)}
        self._known: set[str] = set(answers)
        self._shown: set[str] = set()
        self._request: int | None = None
        self._open: BlockStarted | None = None
        self._calls: dict[tuple[int, int], _Call] = {}

    def steps(self, item: RunItem) -> list[UIStep]:
        """The steps ``item`` adds, in order."""
        if isinstance(item, DeltaEvent):
            return self._delta(item)
        if isinstance(item, ToolResults):
            return self._results(item.messages)
        if isinstance(item, RequestFinished):
            return self._ready(item.request)
        if isinstance(item, Steered):  # between one step and the next, never inside one
            out = self._close()
            if self._request is not None:
                out.append(StepEnded())
                self._request = None
            out.append(item)
            return out
        if isinstance(item, RunPaused):
            out = self._close()
            for deferred in item.deferred:
                if deferred.call.id is not None and deferred.kind == "approval":
                    out.extend(self._ensure_ready(deferred.call))
                    out.append(ApprovalRequested(deferred.call))
            return out
        if isinstance(item, RunEnded):
            out = self._close()
            out.extend(self._results(_added(item)))
            if self._request is not None:
                out.append(StepEnded())
                self._request = None
            out.append(item)
            return out
        return []

    def _step(self, request: int) -> list[UIStep]:
        if request == self._request:
            return []
        out = self._close()
        if self._request is not None:
            out.append(StepEnded())
        out.append(StepStarted(request))
        self._request = request
        return out

    def _close(self) -> list[UIStep]:
        block, self._open = self._open, None
        return [] if block is None else [BlockEnded(block.kind, block.id)]

    def _text(
        self, kind: Literal["text", "reasoning"], request: int, index: int, text: str
    ) -> list[UIStep]:
        block = f"{self._prefix}-{kind[0]}{request}.{index}"
        out: list[UIStep] = []
        if self._open is None or self._open.id != block:
            out.extend(self._close())
            self._open = BlockStarted(kind, block)
            out.append(self._open)
        out.append(BlockDelta(kind, block, text))
        return out

    def _delta(self, event: DeltaEvent) -> list[UIStep]:
        out = self._step(event.request)
        delta = event.delta
        if isinstance(delta, TextDelta):
            if delta.text:
                out.extend(self._text("text", event.request, delta.index, delta.text))
        elif isinstance(delta, ThinkingDelta):
            if delta.text and not delta.redacted:  # a redacted block is never shown
                out.extend(self._text("reasoning", event.request, delta.index, delta.text))
        else:
            out.extend(self._call_delta(event.request, delta))
        return out

    def _call_delta(self, request: int, delta: ToolCallDelta) -> list[UIStep]:
        call = self._calls.setdefault((request, delta.index), _Call())
        if call.id is None and delta.id:
            call.id = delta.id
        if call.name is None and delta.name:
            call.name = delta.name
        if delta.arguments:
            call.args.append(delta.arguments)
        out: list[UIStep] = []
        if not call.started and call.id and call.name:
            call.started = True
            self._known.add(call.id)
            out.extend(self._close())  # a call ends the text before it, as providers do
            out.append(CallStarted(call.id, call.name))
        if call.started and call.sent < len(call.args):
            assert call.id is not None
            out.append(CallArguments(call.id, "".join(call.args[call.sent :])))
            call.sent = len(call.args)
        return out

    def _ready(self, request: int) -> list[UIStep]:
        out = self._close()
        for (n, _), call in self._calls.items():
            if n == request and call.started and not call.ready:
                call.ready = True
                assert call.id is not None and call.name is not None
                out.append(CallReady(ToolCallPart(call.id, call.name, "".join(call.args))))
        return out

    def _ensure_ready(self, part: ToolCallPart) -> list[UIStep]:
        assert part.id is not None
        calls = [c for c in self._calls.values() if c.id == part.id]
        if any(c.ready for c in calls):
            return []
        out: list[UIStep] = (
            [] if any(c.started for c in calls) else [CallStarted(part.id, part.name)]
        )
        for c in calls:
            c.ready = True
        self._known.add(part.id)
        out.append(CallReady(part))
        return out

    def _results(self, messages: Iterable[Message]) -> list[UIStep]:
        out: list[UIStep] = []
        for m in messages:
            call_id = m.tool_call_id
            if m.role is not Role.TOOL or call_id is None:
                continue
            if call_id in self._shown or call_id not in self._known:
                continue
            self._shown.add(call_id)
            out.append(CallResult(m, denied=call_id in self._denied))
        return out


def _added(ended: RunEnded) -> tuple[Message, ...]:
    if ended.result is not None:
        return ended.result.new_messages
    partial = partial_from(ended.error) if ended.error is not None else None
    return partial.messages if partial is not None else ()
