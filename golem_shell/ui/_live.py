"""Runs that outlive their HTTP request: a browser may drop and come back for the rest.

Owns ``LiveRuns``: a run is started under a key (a conversation id) as a task of the
server, not of the request, so a dropped connection never cancels it. Everything it
streams is kept as numbered frames (1, 2, ...): any number of readers follow it from
any point (an SSE ``Last-Event-ID``), and a reader that reconnects gets exactly the
frames it has not seen, so the client never asks for the turn again (no duplicate
turn). While a run for a key is in flight a second one is refused (``Refused``, 409).
``resume`` is what a reconnect gets: the run in flight, or ``None`` once it has finished
(the server answers 204 and the client reads the store, which holds the whole turn). A
finished run's frames stay in ``get`` for ``linger`` seconds, for a server that wants
to show them (ADR 0111). A run started with a ``TurnSteering`` takes what the person
sends while it streams (``LiveRun.steering``, ADR 0094).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from golem_shell.ui._boundary import Refused
from golem_shell.ui._steer import TurnSteering

__all__ = ["LiveRun", "LiveRuns"]

_log = logging.getLogger("golem.ui")


class LiveRun:
    """The frames of one run, kept while it runs and for a while after.

    Attributes:
        key: what the run belongs to (a conversation id).
        info: what the server wants to remember with it (e.g. where its messages start).
        frames: the data of every frame so far; frame ``n`` is ``frames[n - 1]``.
        done: whether the run has streamed its last frame.
        steering: the turn's steering, if it was started with one.
    """

    def __init__(
        self, key: str, info: dict[str, Any], steering: TurnSteering | None = None
    ) -> None:
        self.key = key
        self.info = info
        self.steering = steering
        self.frames: list[str] = []
        self.done = False
        self.task: asyncio.Task[None] | None = None
        self._changed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def __repr__(self) -> str:
        return f"LiveRun({self.key!r}, frames={len(self.frames)}, done={self.done})"

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.get_running_loop().create_future()
        changed.set_result(None)

    def push(self, data: str) -> None:
        """Add a frame (readers waiting for it wake up)."""
        self.frames.append(data)
        self._wake()

    def finish(self) -> None:
        """No more frames."""
        self.done = True
        self._wake()

    async def follow(self, after: int = 0) -> AsyncIterator[tuple[int, str]]:
        """The frames after number ``after``, as ``(number, data)``, until the run ends.

        Leaving early (the client dropped) leaves the run alone.
        """
        n = max(after, 0)
        while True:
            while n < len(self.frames):
                n += 1
                yield n, self.frames[n - 1]
            if self.done:
                return
            await asyncio.shield(self._changed)


class LiveRuns:
    """The runs of a server that survive their requests, one in flight per key.

    Args:
        linger: seconds a finished run's frames stay readable.
    """

    def __init__(self, *, linger: float = 60.0) -> None:
        self.linger = linger
        self._runs: dict[str, LiveRun] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def get(self, key: str) -> LiveRun | None:
        """The run under ``key``: in flight, or finished less than ``linger`` ago."""
        return self._runs.get(key)

    def running(self, key: str) -> LiveRun | None:
        """The run under ``key`` if it is still in flight."""
        run = self._runs.get(key)
        return run if run is not None and not run.done else None

    def resume(self, key: str, after: int = 0) -> LiveRun | None:
        """The run under ``key`` for a reader that has seen its frames up to ``after``
        (an SSE ``Last-Event-ID``; 0: none), or ``None`` when there is nothing to
        resume: no run in flight, or it has finished (answer 204, as the AI SDK's
        ``reconnectToStream`` expects: the client then reads the stored conversation).

        Raises:
            Refused: ``after`` is negative (400), or past the frames the run in flight
                has streamed (409: the number belongs to another run; reload).
        """
        if after < 0:
            raise Refused(f"Last-Event-ID must be a frame number (0 or more), got {after}")
        run = self.running(key)
        if run is None:
            return None
        if after > len(run.frames):
            raise Refused(
                f"Last-Event-ID {after} is past the end of the run in flight"
                f" ({len(run.frames)} frames so far): it belongs to another run; reload"
                " the conversation",
                409,
            )
        return run

    def start(
        self,
        key: str,
        frames: Callable[[LiveRun], AsyncIterator[str]],
        *,
        info: dict[str, Any] | None = None,
        steering: TurnSteering | None = None,
    ) -> LiveRun:
        """Start streaming ``frames(run)`` under ``key`` in a task of its own;
        ``steering`` is the turn's (``running(key).steering`` while it streams).

        Raises:
            Refused: a run under ``key`` is still in flight (409): resume it instead.
        """
        if self.running(key) is not None:
            raise Refused(
                f"a run of conversation {key!r} is still in flight: resume its stream"
                " (GET .../stream with Last-Event-ID) instead of sending again",
                409,
            )
        run = LiveRun(key, info or {}, steering)
        self._runs[key] = run

        async def produce() -> None:
            try:
                async for data in frames(run):
                    run.push(data)
            except Exception:  # the frames say what failed; this is the server's own bug
                _log.exception("the stream of run %r failed", key)
            finally:
                run.finish()
            await asyncio.sleep(self.linger)
            if self._runs.get(key) is run:
                del self._runs[key]

        run.task = asyncio.get_running_loop().create_task(produce())
        self._tasks.add(run.task)
        run.task.add_done_callback(self._tasks.discard)
        return run

    async def aclose(self) -> None:
        """Cancel every run still in flight and forget them all."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self._runs.clear()

    async def wait(self, key: str) -> None:
        """Wait until the run under ``key`` (if any) has streamed its last frame."""
        run = self._runs.get(key)
        if run is not None:
            async for _ in run.follow(len(run.frames)):
                pass
