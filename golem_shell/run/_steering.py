"""Steering a run while it works: ``Steering``.

Owns the line from the person to a running ``Agent`` run: what they send joins the run at
its next safe point (the core's ``Steered`` row: before its next request, or instead of
taking an output it was about to take), and what arrives after the run took its last
look is kept in ``left``, never lost. Durable runs are steered through their engine
(``DurableAgent.steer``, ``TemporalAgent.steer``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime

import attrs

from golem_core import DataPart, Message, Part, Role, TextPart, URLPart
from golem_shell._errors import UsageError

__all__ = ["Steering", "steering_message"]


def steering_message(prompt: str | Sequence[Part]) -> Message:
    """The user message a steering prompt is (text, or parts), stamped with the time it
    was sent (``created_at``: the sender's clock, carried in what a durable engine
    records, so a replay gives the same stamp); the run stamps its ids where it takes it.

    Raises:
        UsageError: an empty prompt, something else than text or parts, or a part a
            user message does not carry (a ``ToolCallPart``, a ``ThinkingPart``: the
            provider's body would drop it, and the message with it).
    """
    now = datetime.now(UTC)
    if isinstance(prompt, str):
        if not prompt.strip():
            raise UsageError("a steering message needs some text")
        return attrs.evolve(Message.user(prompt), created_at=now)
    parts = tuple(prompt)
    if not parts or any(isinstance(p, str) for p in parts):
        raise UsageError("a steering message is text or a non-empty sequence of parts")
    other = next((p for p in parts if not isinstance(p, _USER_PARTS)), None)
    if other is not None:  # a provider's body leaves it out of a user message, silently
        raise UsageError(
            "a steering message is what a person says (text, TextPart, URLPart, DataPart):"
            f" got a {type(other).__name__}, which no provider sends in a user message (a"
            " message of only such parts would be dropped); say it as text instead"
        )
    if not any(not isinstance(p, TextPart) or p.text.strip() for p in parts):
        raise UsageError("a steering message needs some text (its text parts are all blank)")
    return Message(Role.USER, parts, created_at=now)


_USER_PARTS = (TextPart, URLPart, DataPart)
"""The parts a user message carries to every provider (the others are not sent)."""


class Steering:
    """Messages for a run that is still working: pass ``steering=`` to a run method, then
    ``steering.send("actually, use the EU account")`` from any task or thread while it
    runs. The run takes what was sent at its next safe point (after a tool batch, before
    its next request; or instead of taking its final answer) and reports ``RunSteered``.

    One ``Steering`` serves one run. Once the run has ended, ``send`` raises and ``left``
    holds what arrived after the run's last look: start the next run with it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[Message] = []
        self._taken: list[Message] = []
        self._state = "new"

    def __repr__(self) -> str:
        return f"Steering({self._state}, pending={len(self._pending)})"

    def send(self, prompt: str | Sequence[Part]) -> None:
        """Send a message to the run (text, or parts).

        Raises:
            UsageError: the run has ended (start the next run with the message; ``left``
                holds any that came too late), or the prompt is empty or holds a part a
                user message does not carry (``steering_message``).
        """
        message = steering_message(prompt)
        with self._lock:
            if self._state == "ended":
                raise UsageError(
                    "the run this steering was for has ended: start the next run with"
                    " this message (steering.left holds any that came too late)"
                )
            self._pending.append(message)

    @property
    def taken(self) -> tuple[Message, ...]:
        """What the run has taken so far."""
        with self._lock:
            return tuple(self._taken)

    @property
    def left(self) -> tuple[Message, ...]:
        """What was sent but not taken (after the run ended: it came too late)."""
        with self._lock:
            return tuple(self._pending)

    def _bind(self) -> None:
        with self._lock:
            if self._state != "new":
                raise UsageError("a Steering serves one run: make a new one for this run")
            self._state = "running"

    def _take(self) -> tuple[Message, ...]:
        with self._lock:
            taken, self._pending = tuple(self._pending), []
            self._taken.extend(taken)
            return taken

    def _end(self) -> None:
        with self._lock:
            self._state = "ended"
