"""Steering a chat turn: what the person sends while the turn streams.

Owns ``TurnSteering``, the line from a chat's person to the turn in flight of one
conversation (ADR 0094). A turn is one stream; it runs one ``Agent`` run, or several in
a row when messages come too late for the run in progress:

- ``send(message)`` while the turn's current run works: the run takes the message at
  its next safe point (its ``Steering``) and reports it (``Steered``);
- sent after that run took its last look (it was answering, or had just finished):
  the message is kept, and ``late()`` hands it to the turn's writer, which stores it and
  starts the turn's next run with it, in the same stream;
- once ``late()`` found nothing, the turn is closed: ``send`` returns ``False`` and the
  server starts a new turn with the message, after the stream has ended.

So a message is taken by a run, handed to the next run, or refused to the caller (who
starts the next turn with it): never lost. Thread-safe, like ``Steering``.
"""

from __future__ import annotations

import threading

from golem_core import Message, Role
from golem_shell import Steering, UsageError

__all__ = ["TurnSteering"]


class TurnSteering:
    """The steering of one chat turn: ``run()`` before each of its runs, ``send`` from
    the routes, ``late()`` when a run has ended (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: Steering | None = None
        self._late: list[Message] = []
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"TurnSteering({state}, late={len(self._late)})"

    @property
    def closed(self) -> bool:
        """Whether the turn takes no more messages (``send`` returns ``False``)."""
        with self._lock:
            return self._closed

    def run(self) -> Steering:
        """The ``Steering`` for the turn's next run (pass it as ``steering=``).

        Raises:
            UsageError: the turn is closed.
        """
        with self._lock:
            if self._closed:
                raise UsageError("this turn is closed: start a new turn")
            self._current = Steering()
            for message in self._late:  # came between two runs: the new one takes them
                self._current.send(message.parts)
            self._late = []
            return self._current

    def send(self, message: Message) -> bool:
        """Give the turn a user message: ``True`` if it takes it (its run in progress, or
        its next run), ``False`` if the turn is closed (start a new turn with it).

        Raises:
            UsageError: ``message`` is not a user message with parts.
        """
        if message.role is not Role.USER or not message.parts:
            raise UsageError(f"a steering message is a user message with parts, got {message!r}")
        with self._lock:
            if self._closed:
                return False
            try:
                if self._current is None:
                    raise UsageError("no run yet")
                self._current.send(message.parts)
            except UsageError:  # between runs, or the run has ended: the next run takes it
                self._late.append(message)
            return True

    def taken(self) -> tuple[Message, ...]:
        """What the current run has taken so far."""
        with self._lock:
            return () if self._current is None else self._current.taken

    def late(self) -> tuple[Message, ...]:
        """After a run ended: the messages it did not take, for the turn's next run;
        when there are none the turn closes (one lock: nothing slips in between)."""
        with self._lock:
            left = (*(() if self._current is None else self._current.left), *self._late)
            self._current, self._late = None, []  # what comes now waits for the next run
            if not left:
                self._closed = True
            return left

    def close(self) -> tuple[Message, ...]:
        """Close the turn now (it failed or stopped): what it had not taken, to keep."""
        with self._lock:
            left = (*(() if self._current is None else self._current.left), *self._late)
            self._current, self._late = None, []
            self._closed = True
            return left
