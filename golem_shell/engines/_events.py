"""The events and deltas of durable runs: written to a stored stream, read from an offset.

Owns how a durable run (DBOS or Temporal) publishes what a plain streamed run hands its
``on_event`` (ADR 0151): its lifecycle events, its ``ToolResultEvent`` values and the
``DeltaEvent`` pieces of each model answer, as the numbered frames of one ``StreamLog``
stream per run (``golem.run/<run id>``), in the conversation store's database that every
process of the runs opens (``event_log=``). A client in any process follows a run from an
offset (``follow``), after a disconnect too: frame numbers are dense and never change.

Who writes what, and why a replay adds nothing twice:

- The workflow body (``body_handler``) writes the lifecycle events the driver emits, each
  under a key saying what it is (its type, the request it follows, its tool call, and
  which occurrence of those it is): the body is deterministic, so a replay (a recovered
  DBOS workflow, a Temporal replay, a run continued as new) makes the same keys and the
  log skips them. ``RequestStarted`` is the one lifecycle event the body does not write;
  a ``RunFailed`` of a cancelled task is not written either: a durable run's task is
  cancelled when its worker stops, and the engine recovers the run.
- The model request step or activity (``request_streamed``) writes ``RequestStarted``
  and then the answer's deltas, keyed by that request and by the step's attempt (a fresh
  id per execution). A recorded step that replays is not executed: it writes nothing. A
  step executed again because its worker died writes a second ``RequestStarted`` for the
  same request, then the deltas of the new answer: what happened, once each (a client
  drops the pieces it showed for that request when it sees its request start again).

The deltas never enter a workflow's record: a step's recorded output (an activity's
result) is the answer's message, as without events, so what a run records does not grow
with the number of deltas. Writes of deltas are batched: each write takes whatever came
while the previous one was in flight.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, TypeVar

from golem_core import (
    CompactionFinished,
    CompactionStarted,
    HistoryPorted,
    HistoryProcessed,
    RequestFailed,
    RequestFinished,
    RequestStarted,
    RetryScheduled,
    RunFailed,
    RunFinished,
    RunPaused,
    RunStarted,
    RunSteered,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolFinished,
    ToolStarted,
    make_converter,
)
from golem_core.loop import ModelFailed, ModelResponded, RequestModel, RunState
from golem_shell._errors import ModelRequestsNotAllowed, RunError, UsageError
from golem_shell._results import DeltaEvent, ToolResultEvent
from golem_shell.engines._records import CorruptRecord
from golem_shell.observe._observe import EventHandler
from golem_shell.run._asyncio import AgentEffects
from golem_shell.run._event_stream import RunEvent
from golem_shell.run._setup import RunSpec
from golem_shell.store._methods import StoreMethods
from golem_shell.store._streams import StreamLog
from golem_shell.tools._tools import RunContext

__all__ = [
    "EventLog",
    "body_handler",
    "close_run",
    "close_run_sync",
    "decode_event",
    "encode_event",
    "event_log",
    "follow",
    "follow_into",
    "request_streamed",
    "stream_of",
]

EventLog = StreamLog
"""Where durable runs write their events: the frame log of a golem SQL store."""

T = TypeVar("T")
_CONVERTER = make_converter()
_EVENTS: Final = {
    c.__name__: c
    for c in (
        RunStarted,
        HistoryProcessed,
        RunSteered,
        CompactionStarted,
        CompactionFinished,
        HistoryPorted,
        RequestStarted,
        RequestFinished,
        RequestFailed,
        RetryScheduled,
        ToolStarted,
        ToolFinished,
        RunFinished,
        RunPaused,
        RunFailed,
        DeltaEvent,
        ToolResultEvent,
    )
}
_DELTAS: Final = {c.__name__: c for c in (TextDelta, ThinkingDelta, ToolCallDelta)}
_POLL_SECONDS = 0.05
_ENDED_EVERY = 20  # polls without a frame between two asks whether the run has ended
_READ_LIMIT = 500


def stream_of(run_id: str) -> str:
    """The stream (and slot) of the run ``run_id``'s events in an event log."""
    return f"golem.run/{run_id}"


def event_log(value: object, wrapper: str) -> StreamLog | None:
    """The event log a ``wrapper``'s ``event_log=`` names: a ``StreamLog``, or a golem SQL
    store (``SQLiteHistoryStore``, ``PostgresHistoryStore``) whose log it is.

    Raises:
        UsageError: it is neither.
    """
    if value is None or isinstance(value, StreamLog):
        return value
    if isinstance(value, StoreMethods):
        return StreamLog(value)
    raise UsageError(
        f"{wrapper}(event_log=...) takes a StreamLog or a golem SQL history store"
        f" (SQLiteHistoryStore, PostgresHistoryStore), not {type(value).__name__}"
    )


# -- the frames' JSON -----------------------------------------------------------------------


def encode_event(event: RunEvent) -> str:
    """``event`` as a frame's data (JSON naming its type)."""
    data: dict[str, Any] = _CONVERTER.unstructure(event)
    if isinstance(event, DeltaEvent):
        data["delta"] = {"type": type(event.delta).__name__, **data["delta"]}
    return json.dumps({"type": type(event).__name__, **data}, separators=(",", ":"))


def decode_event(data: str) -> RunEvent:
    """The event a frame's data stands for.

    Raises:
        CorruptRecord: it is not one.
    """
    try:
        value = json.loads(data)
        kind = _EVENTS[value.pop("type")]
        if kind is DeltaEvent:
            delta = value.pop("delta")
            piece = _CONVERTER.structure(delta, _DELTAS[delta.pop("type")])
            return DeltaEvent(**{**value, "delta": piece})
        event: RunEvent = _CONVERTER.structure(value, kind)  # type: ignore[assignment]
        return event
    except Exception as e:
        raise CorruptRecord(f"an event of a durable run cannot be read: {e}") from e


# -- writing --------------------------------------------------------------------------------


async def _opened(log: StreamLog, run_id: str, conversation_id: str = "") -> str:
    """The run's stream, opened if it is not yet (by whichever writer comes first), as
    the conversation's (any owner's: its erasure deletes the frames, ADR 0153)."""
    stream = stream_of(run_id)
    if await log.get(stream) is None:
        try:
            await log.open(
                stream, stream, run_id=run_id, durable=True, conversation_id=conversation_id
            )
        except Exception:
            if await log.get(stream) is None:
                raise
    return stream


def _opened_sync(log: StreamLog, run_id: str, conversation_id: str = "") -> str:
    stream = stream_of(run_id)
    if log.get_sync(stream) is None:
        try:
            log.open_sync(
                stream, stream, run_id=run_id, durable=True, conversation_id=conversation_id
            )
        except Exception:
            if log.get_sync(stream) is None:
                raise
    return stream


class _Keys:
    """The key of each lifecycle event the body writes: its type, the number of the
    request it follows, its tool call, and which occurrence of these it is (the same in
    every replay of the deterministic body). ``None`` for what the body does not write."""

    def __init__(self) -> None:
        self.request = 0
        self.counts: dict[str, int] = {}

    def __call__(self, event: RunEvent) -> str | None:
        if isinstance(event, RequestStarted):  # the request step writes it
            self.request = event.request
            return None
        if isinstance(event, DeltaEvent):
            return None
        if isinstance(event, RunFailed) and event.error_type == "CancelledError":
            return None  # its worker stopping (the engine recovers the run), not its end
        base = f"{type(event).__name__}/{self.request}/{getattr(event, 'call_id', '')}"
        seen = self.counts.get(base, 0)
        self.counts[base] = seen + 1
        return f"{base}/{seen}"


def body_handler(
    log: StreamLog | None,
    state: RunState,
    on_event: EventHandler | None,
    *,
    sync: bool = False,
    quiet: Callable[[], bool] | None = None,
) -> EventHandler | None:
    """The handler a durable run's observer calls: each lifecycle event is written to the
    run's stream in ``log`` (keyed, so a replay writes nothing twice), then handed to
    the worker's ``on_event``. ``sync``: written without awaiting (a Temporal workflow's
    code may not await I/O); ``quiet()``: true while the body replays what an earlier
    execution wrote already (the keys are still counted, nothing is written)."""
    if log is None:
        return on_event
    run_id, cid = state.config.run_id, state.config.conversation_id or ""
    keys = _Keys()
    opened: list[str] = []

    if sync:

        def write_now(event: RunEvent) -> Awaitable[None] | None:
            key = keys(event)
            if key is not None and (quiet is None or not quiet()):
                if not opened:
                    opened.append(_opened_sync(log, run_id, cid))
                log.append_sync(opened[0], [(key, encode_event(event))])
            return None if on_event is None else on_event(event)

        return write_now

    async def write(event: RunEvent) -> None:
        key = keys(event)
        if key is not None:
            if not opened:
                opened.append(await _opened(log, run_id, cid))
            await log.append(opened[0], [(key, encode_event(event))])
        if on_event is not None:
            delivered = on_event(event)
            if inspect.isawaitable(delivered):
                await delivered

    return write


async def close_run(log: StreamLog | None, run_id: str) -> None:
    """End the run's stream (done): a follower stops once it has read every frame."""
    if log is not None:
        await log.append(await _opened(log, run_id), (), end="done")


def close_run_sync(log: StreamLog | None, run_id: str) -> None:
    """``close_run`` without awaiting (a Temporal workflow's code)."""
    if log is not None:
        log.append_sync(_opened_sync(log, run_id), (), end="done")


_NO_CONTEXT: RunContext[Any] = RunContext(None, "", "")


async def request_streamed(
    log: StreamLog, spec: RunSpec, command: RequestModel, state: RunState
) -> ModelResponded | ModelFailed:
    """Perform one model request streamed (inside a step or an activity): its
    ``RequestStarted`` and its deltas are written to the run's stream under this
    attempt's keys as they come; the outcome (the whole answer) is what the step
    records. A failed write fails the request (``ModelFailed``), as a failing
    ``on_delta`` does: the run fails rather than leave a gap in its stream."""
    config = state.config
    number = state.requests + 1
    attempt = uuid.uuid4().hex[:16]
    pending: list[tuple[str, str]] = []
    writing: list[asyncio.Task[None]] = []
    count = 0
    stream = stream_of(config.run_id)

    async def drain() -> None:
        while pending:
            batch = pending[:]
            del pending[:]
            await log.append(stream, batch)

    def on_delta(event: DeltaEvent) -> None:
        nonlocal count
        pending.append((f"d/{number}/{attempt}/{count}", encode_event(event)))
        count += 1
        if writing and writing[0].done():
            writing.pop().result()  # raises what the last write raised
        if not writing:  # one write at a time; it takes what came meanwhile
            writing.append(asyncio.ensure_future(drain()))

    started = RequestStarted(config.run_id, config.conversation_id, number, spec.model.name, True)
    try:
        await _opened(log, config.run_id, config.conversation_id or "")
        await log.append(stream, [(f"RequestStarted/{number}/{attempt}", encode_event(started))])
        outcome = await AgentEffects(spec, _NO_CONTEXT, on_delta).request(command, state)
        if writing:
            await writing.pop()
        await drain()
    except ModelRequestsNotAllowed:
        raise  # a test that forgot its override: loudly, as in a plain run
    except Exception as e:
        return ModelFailed(f"writing the request's events to the event log failed: {e}")
    finally:
        for task in writing:
            task.cancel()
    return outcome


# -- reading --------------------------------------------------------------------------------


async def follow(
    log: StreamLog,
    run_id: str,
    after: int = 0,
    ended: Callable[[], Awaitable[bool]] | None = None,
    *,
    poll: float = _POLL_SECONDS,
) -> AsyncIterator[tuple[int, RunEvent]]:
    """The run's events after offset ``after``, as ``(offset, event)``, as they are
    written; ends once the run's stream is done and read to its end, or, when the run
    ended without closing it (cancelled through its engine), once ``ended()`` says so
    and nothing more came."""
    stream = stream_of(run_id)
    idle = 0
    while True:
        frames, record = await log.read(stream, after, limit=_READ_LIMIT)
        for n, data in frames:
            after = n
            yield n, decode_event(data)
        if len(frames) == _READ_LIMIT:
            continue
        if record is not None and not record.open:
            return
        if frames:
            idle = 0
        else:
            idle += 1
            if ended is not None and idle % _ENDED_EVERY == 0 and await ended():
                frames, _ = await log.read(stream, after, limit=_READ_LIMIT)
                if not frames:
                    return
                continue
        await asyncio.sleep(poll)


async def follow_into(
    result: Awaitable[T], events: AsyncIterator[tuple[int, RunEvent]], on_event: EventHandler
) -> T:
    """``result`` (a durable run's), its ``events`` handed to ``on_event`` meanwhile: it
    returns (or raises the run's ``RunError``) once every event of the run was handed
    over. What ``on_event`` raises ends the wait and propagates."""

    async def deliver() -> None:
        async for _, event in events:
            delivered = on_event(event)
            if inspect.isawaitable(delivered):
                await delivered

    follower = asyncio.ensure_future(deliver())
    waiting = asyncio.ensure_future(result)
    try:
        await asyncio.wait({follower, waiting}, return_when=asyncio.FIRST_EXCEPTION)
        if follower.done() and follower.exception() is not None:
            waiting.cancel()
            await follower  # raises the handler's error
        try:
            value = await waiting
        except RunError:
            await follower  # the run failed: its last events (RunFailed) are handed over
            raise
        await follower
        return value
    finally:
        for task in (follower, waiting):
            if not task.done():
                task.cancel()
