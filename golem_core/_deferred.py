"""Deferred tool calls: which calls of a paused run wait, and how answers resume it.

Owns the human-in-the-loop rules. A call of a tool marked ``approval`` or ``external``
is not executed by the run: the run pauses with the call waiting. The waiting calls are
the run's live frontier: the calls of the history's last assistant message that have no
result yet, when nothing but tool results follows that message. ``resume_run`` applies
answers first (an approval lets the tool run, a denial and an external result become
its result), and only then closes what is still unanswered, so repair never
synthesizes a result for a call that is about to be answered. Resuming is a transition
of the loop (``golem_core._loop``: a paused state receives ``Answered``); this module
holds what it needs and imports nothing of the loop.

Approvals in a history attest nothing: the history is data a client can write. The
shell re-checks every answered call against what the server actually issued (ADR 0033).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

from attrs import frozen

from golem_core._history import _calls_of
from golem_core._messages import Message, Part, Role, TextPart, ToolCallPart

__all__ = [
    "Approved",
    "DeferredAnswer",
    "DeferredCall",
    "DeferredError",
    "Denied",
    "ExternalResult",
    "waiting_calls",
]


@frozen
class DeferredCall:
    """A call that waits for an answer from outside the run (approval or external result)."""

    call: ToolCallPart
    kind: Literal["approval", "external"]


@frozen
class Approved:
    """A person approved the call: the tool runs with the model's arguments."""


@frozen
class Denied:
    """The call was refused; the model sees a failed result giving ``reason``."""

    reason: str = "the call was denied"


@frozen
class ExternalResult:
    """The result of a call executed outside the run (by a client, a service, a person)."""

    parts: tuple[Part, ...]
    failed: bool = False

    @classmethod
    def text(cls, text: str, *, failed: bool = False) -> ExternalResult:
        """An external result holding ``text``."""
        return cls((TextPart(text),), failed)


DeferredAnswer: TypeAlias = Approved | Denied | ExternalResult


@frozen
class DeferredError:
    """Answers that do not fit the waiting calls: ``reason`` names the call ids."""

    reason: str
    call_ids: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.reason


def frontier(history: Sequence[Message]) -> int | None:
    """Index of the last assistant message when only tool results follow it."""
    for i in range(len(history) - 1, -1, -1):
        role = history[i].role
        if role is Role.ASSISTANT:
            return i
        if role is not Role.TOOL and role is not Role.SYSTEM:
            return None
    return None


def unanswered_calls(history: Sequence[Message], a: int) -> list[ToolCallPart]:
    answered = {m.tool_call_id for m in history[a + 1 :] if m.role is Role.TOOL}
    return [c for c in _calls_of(history[a]) if c.id not in answered]


def waiting_calls(history: Sequence[Message], kinds: Mapping[str, str]) -> tuple[DeferredCall, ...]:
    """The calls of ``history`` that wait for a deferred answer, in call order.

    Args:
        history: a paused run's messages (as stored).
        kinds: tool name to kind (``"approval"``, ``"external"``, ...) of the agent's tools;
            only calls of approval and external tools wait.

    Total and deterministic.
    """
    a = frontier(history)
    if a is None:
        return ()
    out: list[DeferredCall] = []
    for c in unanswered_calls(history, a):
        kind = kinds.get(c.name)
        if kind == "approval":
            out.append(DeferredCall(c, "approval"))
        elif kind == "external":
            out.append(DeferredCall(c, "external"))
    return tuple(out)


def check_answers(
    waiting: Sequence[DeferredCall], answers: Mapping[str, DeferredAnswer]
) -> DeferredError | None:
    """Why ``answers`` do not fit the ``waiting`` calls (an unknown id, the wrong kind of
    answer), or ``None`` when they do. Total and deterministic."""
    by_id = {d.call.id: d for d in waiting}
    strangers = sorted(k for k in answers if k not in by_id)
    if strangers:
        return DeferredError(
            "answers for calls that are not waiting: "
            + ", ".join(strangers)
            + (
                f" (waiting: {', '.join(str(d.call.id) for d in waiting)})"
                if waiting
                else " (no call is waiting)"
            ),
            tuple(strangers),
        )
    mismatched = []
    for call_id, answer in answers.items():
        kind = by_id[call_id].kind
        if (kind == "approval" and type(answer) is ExternalResult) or (
            kind == "external" and type(answer) is Approved
        ):
            mismatched.append(call_id)
    if mismatched:
        return DeferredError(
            "an approval call takes Approved or Denied and an external call takes"
            " ExternalResult or Denied; these do not: " + ", ".join(sorted(mismatched)),
            tuple(sorted(mismatched)),
        )
    return None
