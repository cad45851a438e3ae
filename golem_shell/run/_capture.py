"""Capturing a run's messages when it raises: ``capture_run_messages``.

Owns the one context variable that a ``with capture_run_messages() as messages:`` block
sets; the asyncio runtime writes each run's messages into it as the run ends, however it
ends (finished, paused, failed, timed out or cancelled), so the conversation up to a
failure can be logged or shown without digging into ``RunError.partial``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from golem_core import Message

__all__ = ["capture_run_messages", "record_run_messages"]

_CAPTURED: ContextVar[list[Message] | None] = ContextVar("golem_captured", default=None)


@contextmanager
def capture_run_messages() -> Iterator[list[Message]]:
    """A list that holds the messages of the latest run started in this block (and in
    tasks it starts), as the run left them, also when it raised::

        with capture_run_messages() as messages:
            try:
                agent.run_sync("...")
            except RunError:
                log(messages)  # the prompt, the answers and tool results so far

    It is filled when the run ends; a second run in the block replaces what the first
    left. Blocks nest: the innermost one captures.
    """
    messages: list[Message] = []
    token = _CAPTURED.set(messages)
    try:
        yield messages
    finally:
        _CAPTURED.reset(token)


def record_run_messages(messages: Sequence[Message]) -> None:
    """Put a run's messages in the innermost ``capture_run_messages`` list, if any."""
    captured = _CAPTURED.get()
    if captured is not None:
        captured[:] = messages
