"""Streams kept in the conversation store: any process serves them, after a restart too.

Owns ``StoredRuns``, the store-backed twin of ``LiveRuns`` (ADR 0113): a chat turn's
frames are written to a ``StreamLog`` (tables next to the conversation store's, in the
same SQLite file or PostgreSQL database) as they are made, numbered from 1, so a reader
in any process that opens the store follows them from any ``Last-Event-ID``. Two kinds of
writer:

- ``start(key, frames)``: the frames are made in this process (a plain ``Agent`` run in a
  task of the server). The writer beats while it runs; if its process dies, the turn is
  lost, and after ``stale_after`` seconds of silence the stream counts as abandoned (a
  new turn may start; a reader is told there is nothing to resume).
- ``open(key, run_id=...)`` then ``write``/``end``: the frames come from wherever the run
  executes (a durable run: ``StreamTap`` writes each model request's frames from inside
  the recorded step, keyed so that a replayed step adds nothing twice). A durable stream
  never goes stale: its run resumes when its worker restarts, and the stream with it.

Readers in the writer's process wake at once; others poll every ``poll`` seconds. A
plain turn started with a ``TurnSteering`` is steered through the process that writes
it (``StoredRun.steering``; ``None`` in any other process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from golem_shell import new_id
from golem_shell.store import StreamBusy, StreamLog, StreamRecord, StreamState
from golem_shell.ui._boundary import Refused
from golem_shell.ui._steer import TurnSteering
from golem_shell.ui._vercel import DONE

__all__ = ["StoredRun", "StoredRuns"]

_log = logging.getLogger("golem.ui")


class StoredRun:
    """One stored stream, as a reader or a writer sees it.

    Attributes:
        key: the slot it belongs to (owner, conversation, branch).
        stream: its id in the log.
        run_id: the run that writes it.
        info: what the server stored with it.
        steering: the turn's steering, when this process writes it (``start``).
    """

    def __init__(self, runs: StoredRuns, record: StreamRecord) -> None:
        self.runs = runs
        self.key = record.key
        self.stream = record.stream
        self.run_id = record.run_id
        self.info = record.info
        self.task: asyncio.Task[None] | None = None
        self.steering: TurnSteering | None = runs._steerings.get(record.stream)

    def __repr__(self) -> str:
        return f"StoredRun({self.key!r}, {self.stream!r})"

    async def follow(
        self,
        after: int = 0,
        *,
        idle: Callable[[StreamRecord], Awaitable[None]] | None = None,
    ) -> AsyncIterator[tuple[int, str]]:
        """The frames after number ``after``, as ``(number, data)``, until the stream ends
        (done, paused or abandoned, or its plain writer went stale). Leaving early leaves
        the run alone. ``idle(record)`` runs each time the open stream has no new frame
        (it may end the stream, e.g. with what the store already holds)."""
        n = max(after, 0)
        while True:
            wake = self.runs._waiter(self.stream)
            frames, record = await self.runs.log.read(self.stream, n)
            for number, data in frames:
                n = number
                yield number, data
            if frames:
                continue
            if record is None or not record.open or self.runs._stale(record):
                return  # ended, or its writer died (a plain run): nothing more comes
            if idle is not None:
                await idle(record)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(wake), self.runs.poll)


class StoredRuns:
    """The streams of a server, kept in a ``StreamLog``: one open stream per key.

    Args:
        log: the frame log (``StreamLog(store)``).
        poll: seconds between a reader's checks for frames another process wrote.
        stale_after: seconds after which a silent non-durable writer counts as dead.
    """

    def __init__(self, log: StreamLog, *, poll: float = 0.1, stale_after: float = 30.0) -> None:
        self.log = log
        self.poll = poll
        self.stale_after = stale_after
        self._wakes: dict[str, asyncio.Future[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._steerings: dict[str, TurnSteering] = {}

    def __repr__(self) -> str:
        return f"StoredRuns({self.log!r})"

    # -- waking readers of this process -------------------------------------------------

    def _waiter(self, stream: str) -> asyncio.Future[None]:
        wake = self._wakes.get(stream)
        if wake is None or wake.done():
            wake = self._wakes[stream] = asyncio.get_running_loop().create_future()
        return wake

    def _wake(self, stream: str) -> None:
        wake = self._wakes.pop(stream, None)
        if wake is None:
            return
        loop = wake.get_loop()
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if loop is here:
            _settle(wake)
        else:  # a writer on another event loop (a durable engine's own)
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_settle, wake)

    # -- reading ---------------------------------------------------------------------------

    async def running(self, key: str) -> StoredRun | None:
        """The stream of ``key`` that is still open, if any (a dead writer's is not)."""
        record = await self.log.latest(key)
        if record is None or not record.open or self._stale(record):
            return None
        return StoredRun(self, record)

    async def latest(self, key: str) -> StreamRecord | None:
        """The newest stream of ``key``, whatever its state."""
        return await self.log.latest(key)

    def _stale(self, record: StreamRecord) -> bool:
        now_ms = int(self.log._clock() * 1000)
        return not record.durable and record.beat_ms < now_ms - int(self.stale_after * 1000)

    async def resume(self, key: str, after: int = 0) -> StoredRun | None:
        """What a reconnect after frame ``after`` gets: the open stream of ``key``, or
        ``None`` (answer 204) when nothing is open (``LiveRuns.resume``'s rules).

        Raises:
            Refused: ``after`` is negative (400), or past the frames the open stream has
                (409: it belongs to another stream; reload).
        """
        if after < 0:
            raise Refused(f"Last-Event-ID must be a frame number (0 or more), got {after}")
        record = await self.log.latest(key)
        if record is None or not record.open or self._stale(record):
            return None
        if after > record.frames:
            raise Refused(
                f"Last-Event-ID {after} is past the end of the run in flight"
                f" ({record.frames} frames so far): it belongs to another run; reload"
                " the conversation",
                409,
            )
        return StoredRun(self, record)

    # -- writing ---------------------------------------------------------------------------

    async def open(
        self,
        key: str,
        *,
        run_id: str = "",
        info: Mapping[str, Any] | None = None,
        durable: bool = True,
        stream: str | None = None,
        owner: str = "",
        conversation_id: str = "",
    ) -> StoredRun:
        """Open a stream of ``key`` whose frames some writer adds with ``write``;
        ``owner`` and ``conversation_id`` name the conversation it carries (the store's
        erasure of it deletes the stream's frames, ADR 0153).

        Raises:
            Refused: another stream of ``key`` is open (409: resume it instead).
        """
        try:
            record = await self.log.open(
                key,
                stream or new_id(),
                run_id=run_id,
                info=info,
                durable=durable,
                stale_after=self.stale_after,
                owner=owner,
                conversation_id=conversation_id,
            )
        except StreamBusy:
            raise Refused(
                f"a run of conversation {key!r} is still in flight: resume its stream"
                " (GET .../stream with Last-Event-ID) instead of sending again",
                409,
            ) from None
        return StoredRun(self, record)

    async def write(
        self, stream: str, frames: Sequence[tuple[str, str]], *, end: StreamState | None = None
    ) -> int:
        """Add frames (``(frame key, data)``; a key the stream has is skipped), and with
        ``end`` end the stream at once (``done``, ``paused``)."""
        count = await self.log.append(stream, frames, end=end)
        self._wake(stream)
        return count

    async def end(self, stream: str, state: StreamState = "done") -> None:
        """No more frames (``state``: ``done``, or ``paused`` for a run that waits)."""
        await self.log.end(stream, state)
        self._wake(stream)

    async def start(
        self,
        key: str,
        frames: Callable[[StoredRun], AsyncIterator[str]],
        *,
        info: dict[str, Any] | None = None,
        steering: TurnSteering | None = None,
        owner: str = "",
        conversation_id: str = "",
    ) -> StoredRun:
        """Stream ``frames(run)`` from a task of this process into a new stream of ``key``
        (frame keys are their numbers; the stream ends with its ``[DONE]`` frame, in
        the same write); the writer beats every ``stale_after / 3`` s. ``steering`` is
        the turn's (``running(key).steering`` in this process while it streams);
        ``owner`` and ``conversation_id`` as for ``open``.

        Raises:
            Refused: a stream of ``key`` is open (409).
        """
        run = await self.open(
            key, info=info, durable=False, owner=owner, conversation_id=conversation_id
        )
        if steering is not None:
            self._steerings[run.stream] = run.steering = steering

        async def beat() -> None:
            while True:
                await asyncio.sleep(self.stale_after / 3)
                await self.log.beat(run.stream)

        async def produce() -> None:
            beating = asyncio.get_running_loop().create_task(beat())
            n = 0
            state: StreamState = "done"
            try:
                async for data in frames(run):
                    n += 1
                    end: StreamState | None = "done" if data == DONE else None
                    await self.write(run.stream, [(str(n), data)], end=end)
            except asyncio.CancelledError:  # the server stops: this turn is lost
                state = "abandoned"
                raise
            except Exception:  # the frames say what failed; this is the server's own bug
                _log.exception("the stream of run %r failed", key)
            finally:
                beating.cancel()
                self._steerings.pop(run.stream, None)
                with contextlib.suppress(Exception):
                    await self.end(run.stream, state)

        run.task = asyncio.get_running_loop().create_task(produce())
        self._tasks.add(run.task)
        run.task.add_done_callback(self._tasks.discard)
        return run

    def spawn(self, work: Any) -> asyncio.Task[None]:
        """Run ``work`` (a coroutine that writes a stream) as a task ``aclose`` cancels."""
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def wait(self, key: str) -> None:
        """Wait until the stream of ``key`` (if any is open) has ended."""
        run = await self.running(key)
        if run is not None:
            async for _ in run.follow((await self.log.latest(key) or _EMPTY).frames):
                pass

    async def aclose(self) -> None:
        """Cancel this process's writers (their streams stay open: a durable run goes
        on elsewhere or after a restart; a plain one goes stale)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)


def _settle(wake: asyncio.Future[None]) -> None:
    if not wake.done():
        wake.set_result(None)


_EMPTY = StreamRecord("", "", "", {}, 0, "done", False, 0)
