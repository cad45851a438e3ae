"""A durable run's stream, written from where the run executes: by its model requests.

Owns ``StreamTap`` and the two closing writers, ``end_stream`` and ``pause_stream``
(ADR 0114). A durable run (``DurableAgent`` on DBOS) executes each model request as a
recorded step, in whichever process runs the workflow, and does not stream to its
caller. ``StreamTap`` wraps the agent's model: inside the step it streams the real
model's answer and writes the UI message stream chunks of that request (the results of
the tools that ran before it, ``start-step``, text, reasoning and calls,
``finish-step``) into the stored stream of the request's run (``StoredRuns``, found by
the run id), then returns the answer the step records.

Every frame is keyed by what it is: ``result:<call id>``, ``<position>:<k>`` (the k-th
chunk of the request at ``position``, the engine's step number), ``end:<k>``. A step that
completed is never performed again (its recorded answer is replayed, and the tap is not
called); a step interrupted by a crash is performed again and writes the same keys,
which the log skips: with a model that answers the same request the same way (the
offline model, a cache, temperature 0 mostly) the reader sees each word once. A model
that answers the repeated request differently shows, live, the words the first attempt
streamed followed by the rest of the second; the stored conversation (and a reload)
holds the recorded answer only.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from golem_core import (
    Message,
    ModelRequest,
    RequestFinished,
    Role,
    StreamDone,
    StreamEvent,
    ToolCallPart,
)
from golem_shell import DeltaEvent
from golem_shell.store import HistoryStoreError
from golem_shell.ui._run import RunEnded
from golem_shell.ui._stored import StoredRun, StoredRuns
from golem_shell.ui._vercel import DONE, Chunk, VercelStream
from golem_shell.ui._vercel import _dumps as _dumps_chunk

__all__ = ["StreamTap", "end_stream", "pause_stream"]

_log = logging.getLogger("golem.ui")


def _dumps(chunk: Chunk) -> str:
    return _dumps_chunk(chunk)


def _since_last_answer(messages: Sequence[Message]) -> list[Message]:
    """The end of a request since the model last spoke: the tool results, and the
    person's messages the run took meanwhile (steering)."""
    tail: list[Message] = []
    for m in reversed(messages):
        if m.role is Role.ASSISTANT:
            break
        tail.append(m)
    return tail[::-1]


def _turn_run(run_id: str) -> tuple[str, str]:
    """The run that owns the stream of ``run_id``'s frames, and the frame keys' prefix:
    a run ``<id>+<n>`` is the n-th run of the turn whose stream ``<id>`` writes (a
    durable turn's next run, for the messages the previous one did not take)."""
    owner, plus, n = run_id.rpartition("+")
    if plus and owner and n.isdigit():
        return owner, f"+{n}/"
    return run_id, ""


class StreamTap:
    """A model that also writes each request's UI chunks to its run's stored stream.

    A request whose run has no open stream in ``runs`` (or no run id) passes through
    untouched; ``request_stream`` always does (a plain streamed run has its own stream).

    Args:
        model: the model that answers.
        runs: the stored streams (``StoredRuns``) the frames go to.
        position: the request's number within its run, the same when a recovered run
            performs the request again; for DBOS, ``lambda request: DBOS.step_id``
            (default: the number of messages the request sends, which a retried request
            repeats: give ``position`` when the model retries).
    """

    def __init__(
        self,
        model: Any,
        runs: StoredRuns,
        *,
        position: Callable[[ModelRequest], int] | None = None,
    ) -> None:
        self.model = model
        self.runs = runs
        self.position = position or (lambda request: len(request.messages))

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return str(self.model.name)

    def __repr__(self) -> str:
        return f"StreamTap({self.model!r})"

    def __getattr__(self, name: str) -> Any:  # optional model features pass through
        return getattr(self.model, name)

    def request_stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """The wrapped model's stream, untouched."""
        stream: AsyncIterator[StreamEvent] = self.model.request_stream(request)
        return stream

    async def request(self, request: ModelRequest) -> Message:
        """Answer ``request``, writing its chunks to its run's open stream as they come.

        A stream that cannot be looked up (its database is unreachable for a moment) is
        written no more than a stream whose write fails: the request is answered, the
        run goes on, the failure is logged."""
        run_id, cid = request.run_id or "", request.conversation_id or ""
        record = None
        prefix = ""
        try:
            record = await self.runs.log.of_run(run_id) if run_id else None
            if record is None and run_id:
                owner, prefix = _turn_run(run_id)
                record = await self.runs.log.of_run(owner) if prefix else None
        except Exception:
            _log.exception("finding the stream of run %r failed", run_id)
            record = None
        if record is None:
            message: Message = await self.model.request(request)
            return message
        writer = _Writer(self.runs, record.stream)
        position = self.position(request)
        info = record.info
        stream = VercelStream(str(info.get("message", "m0")) + prefix.rstrip("/"))
        tail = _since_last_answer(request.messages)
        await writer.write(
            [
                (f"result:{m.tool_call_id}", c)
                for m in tail
                for c in stream.results((m,), denied=info.get("denied", ()))
            ]
        )
        steered = [m for m in tail if m.role is Role.USER and m.run_id == run_id]
        if steered:  # the person's messages the run took before this request
            await writer.write([(f"{prefix}steered:{position}", stream.steered(position, steered))])
        k = 0
        answer: Message | None = None
        async for event in self.model.request_stream(request):
            if isinstance(event, StreamDone):
                answer = event.message
                continue
            chunks = stream.item(DeltaEvent(run_id, cid, position, event))
            await writer.write([(f"{prefix}{position}:{k + i}", c) for i, c in enumerate(chunks)])
            k += len(chunks)
        if answer is None:
            raise RuntimeError(f"{self.model!r} ended its stream without StreamDone")
        ready = stream.item(RequestFinished(run_id, cid, position, 0.0))
        closing = [*ready, {"type": "finish-step"}]
        await writer.write([(f"{prefix}{position}:{k + i}", c) for i, c in enumerate(closing)])
        return answer


class _Writer:
    """Writes one request's frames; a failing write is logged and writing stops (the
    run goes on: its answer is recorded and stored, a reload shows it)."""

    def __init__(self, runs: StoredRuns, stream: str) -> None:
        self.runs = runs
        self.stream = stream
        self.broken = False

    async def write(self, frames: Iterable[tuple[str, Chunk]]) -> None:
        batch = [(key, _dumps(chunk)) for key, chunk in frames]
        if self.broken or not batch:
            return
        try:
            await self.runs.write(self.stream, batch)
        except HistoryStoreError as e:  # the database away for a moment: one line
            self.broken = True
            _log.warning("writing the frames of stream %r failed: %s", self.stream, e)
        except Exception:
            self.broken = True
            _log.exception("writing the frames of stream %r failed", self.stream)


async def end_stream(
    runs: StoredRuns,
    run: StoredRun,
    ended: RunEnded,
    *,
    first: Sequence[Chunk] = (),
    then: Sequence[Chunk] | None = None,
    key: str = "end",
) -> None:
    """Write the closing frames of ``run``'s stream (results not shown yet, ``error``
    and ``finish``, ``[DONE]``) and end it; idempotent (keys ``<key>:<k>``), so two
    processes finishing the same run write them once. With ``then``, the stream goes on
    instead: those chunks follow ``finish`` (a turn's next run: ``data-steered``, its
    ``start``), with no ``[DONE]``; give each run of the turn its own ``key``."""
    stream = VercelStream(str(run.info.get("message", "m0")))
    added = ended.result.new_messages if ended.result is not None else ()
    denied = run.info.get("denied", ())
    frames = [
        (f"result:{m.tool_call_id}", _dumps(c))
        for m in added
        if m.role is Role.TOOL
        for c in stream.results((m,), denied=denied)
    ]
    chunks = [*first, *stream.item(ended), *(then or ())]
    frames += [(f"{key}:{k}", _dumps(c)) for k, c in enumerate(chunks)]
    if then is not None:
        await runs.write(run.stream, frames)
        return
    frames.append((f"{key}:done", DONE))
    await runs.write(run.stream, frames, end="done")


async def pause_stream(runs: StoredRuns, run: StoredRun, calls: Sequence[ToolCallPart]) -> None:
    """Close ``run``'s stream at a pause: a ``tool-approval-request`` per call, ``finish``
    (``tool-calls``), ``[DONE]``; the stream ends ``paused`` (its run goes on later,
    under another stream)."""
    stream = VercelStream(str(run.info.get("message", "m0")))
    frames = [(f"pause:{k}", _dumps(c)) for k, c in enumerate(stream.paused(calls))]
    frames.append(("pause:done", DONE))
    await runs.write(run.stream, frames, end="paused")
