"""Compaction off the critical path (issue 48 item 6): a fold prepared while the user reads.

Owns ``prepare_ahead(strategy)``: an async history processor wrapping a compacting
strategy (``summarize_history``, ``native_compaction``, ``compact_when_cold``, ...) with
``prepare(history)``. Call ``prepare(result.messages)`` once a turn has ended: the
strategy runs in the background on exactly the history the next turn will start from.
When that turn's run calls the processor:

- the history starts with the prepared one and the fold is done: its result is swapped
  in at once (the messages added since, a steering message say, follow it), so the turn
  waits for no summarizing call;
- the fold is still running: the turn waits for it (never longer than starting anew);
- no preparation matches (another conversation, an edited history) or it failed: the
  strategy runs on the turn's history, as without this wrapper.

A prepared fold is the strategy's own output on that history (its threshold, step point
and compaction record included), so swapping it in changes nothing but when it was
computed. ``prepare`` needs a running event loop (an async application, a server); a
durable run records the processor's outcome as a step (``golem.processor``), the swapped
fold included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from returns.result import Result, Success

from golem_core import HistoryError, HistoryProcessor, Message
from golem_shell._errors import UsageError
from golem_shell.context._summarize import AsyncHistoryProcessor, run_history_processor

__all__ = ["PreparedCompaction", "prepare_ahead"]

_Fold = Result[tuple[Message, ...], HistoryError]


class PreparedCompaction:
    """A compacting strategy whose next fold can be prepared in the background
    (``prepare_ahead``). Use it as the agent's ``history_processor``."""

    def __init__(self, strategy: HistoryProcessor | AsyncHistoryProcessor) -> None:
        self.strategy = strategy
        self._base: tuple[Message, ...] | None = None
        self._task: asyncio.Task[_Fold] | None = None
        self.swapped = 0
        """How many calls took a prepared fold instead of folding on the spot."""

    def __repr__(self) -> str:
        return f"prepare_ahead({self.strategy!r})"

    def prepare(self, history: Sequence[Message]) -> asyncio.Task[_Fold]:
        """Start folding ``history`` (what the next turn starts from: the last run's
        ``result.messages``) in the background; a preparation not yet taken is dropped.

        Raises:
            UsageError: no running event loop.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError(
                "prepare() needs a running event loop: call it from async code"
                " (after `await agent.run_with_history(...)`)"
            ) from None
        self.discard()
        base = tuple(history)
        self._base = base
        self._task = loop.create_task(run_history_processor(self.strategy, base))
        return self._task

    def discard(self) -> None:
        """Drop the preparation (cancelled if it still runs)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._base, self._task = None, None

    def forced(self) -> HistoryProcessor | AsyncHistoryProcessor:
        """The strategy forced (compact-and-retry, ADR 0141)."""
        forced = getattr(self.strategy, "forced", None)
        if not callable(forced):
            return self.strategy
        out: HistoryProcessor | AsyncHistoryProcessor = forced()
        return out

    async def __call__(self, history: Sequence[Message]) -> _Fold:
        history = tuple(history)
        base, task = self._base, self._task
        if base is not None and task is not None and history[: len(base)] == base:
            self._base, self._task = None, None
            try:
                prepared = await asyncio.shield(task) if not task.done() else task.result()
            except asyncio.CancelledError:
                prepared = None
            if isinstance(prepared, Success):
                self.swapped += 1
                return Success((*prepared.unwrap(), *history[len(base) :]))
        return await run_history_processor(self.strategy, history)


def prepare_ahead(strategy: HistoryProcessor | AsyncHistoryProcessor) -> PreparedCompaction:
    """``strategy`` with ``prepare(history)``: its next fold computed while the user reads.

    Args:
        strategy: The compacting processor (``summarize_history(...)``, ...).

    Returns:
        A ``PreparedCompaction``: pass it as the agent's ``history_processor`` and call
        ``prepare(result.messages)`` after each turn (``forced()`` for compact-and-retry).
    """
    if not callable(strategy):
        raise UsageError(f"prepare_ahead needs a history processor, got {strategy!r}")
    return PreparedCompaction(strategy)
