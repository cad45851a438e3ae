"""Deferred tool calls: which calls of a paused run wait, and how answers resume it.

Owns the human-in-the-loop rules. A call of a tool marked ``approval`` or ``external``
is not executed by the run: the run pauses with the call waiting. The waiting calls are
the run's live frontier: the calls of the history's last assistant message that have no
result yet, when nothing but tool results follows that message. ``resume_run`` applies
answers first (an approval lets the tool run, a denial and an external result become
its result), and only then closes what is still unanswered, so repair never
synthesizes a result for a call that is about to be answered.

Approvals in a history attest nothing: the history is data a client can write. The
shell re-checks every answered call against what the server actually issued (ADR 0033).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TypeAlias

import attrs
from attrs import frozen
from returns.result import Failure, Result, Success

from golem_core._history import _calls_of, interrupted_result, normalize_history
from golem_core._loop import (
    DeferredCall,
    Phase,
    RunConfig,
    RunState,
    _add,
    _stamp,
)
from golem_core._messages import Message, Part, Role, TextPart, ToolCallPart

__all__ = [
    "Approved",
    "DeferredAnswer",
    "DeferredError",
    "Denied",
    "ExternalResult",
    "resume_run",
    "waiting_calls",
]


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


def _frontier(history: Sequence[Message]) -> int | None:
    """Index of the last assistant message when only tool results follow it."""
    for i in range(len(history) - 1, -1, -1):
        role = history[i].role
        if role is Role.ASSISTANT:
            return i
        if role is not Role.TOOL and role is not Role.SYSTEM:
            return None
    return None


def _unanswered(history: Sequence[Message], a: int) -> list[ToolCallPart]:
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
    a = _frontier(history)
    if a is None:
        return ()
    out: list[DeferredCall] = []
    for c in _unanswered(history, a):
        kind = kinds.get(c.name)
        if kind == "approval":
            out.append(DeferredCall(c, "approval"))
        elif kind == "external":
            out.append(DeferredCall(c, "external"))
    return tuple(out)


def _check(
    waiting: Sequence[DeferredCall], answers: Mapping[str, DeferredAnswer]
) -> DeferredError | None:
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


def resume_run(
    config: RunConfig,
    history: Sequence[Message],
    answers: Mapping[str, DeferredAnswer],
    *,
    close_unanswered: bool = False,
    now: datetime | None = None,
) -> Result[RunState, DeferredError]:
    """Continue a paused run with answers for its waiting calls.

    Answers come first: approved calls are executed by the driver, denials and external
    results become those calls' results. Waiting calls left unanswered keep the run
    paused, or, with ``close_unanswered``, get the neutral no-result result. Unanswered
    calls of ordinary tools in that turn (a crash mid-batch) get it too. Only then is the
    history before the frontier repaired. Total and deterministic.

    Returns:
        The state to drive, or ``Failure(DeferredError)`` when an answer names a call that
        is not waiting, or answers a call with the wrong kind of answer.
    """
    del now  # the frontier's results carry no timestamps; kept for symmetry with start_run
    kinds = {t.name: t.kind for t in config.tools}
    history = [m for m in history if m.role is not Role.SYSTEM]
    waiting = waiting_calls(history, kinds)
    error = _check(waiting, answers)
    if error is not None:
        return Failure(error)
    a = _frontier(history)
    if a is None:
        repaired, _ = normalize_history(history)
        return Success(RunState(config=config, history=repaired))
    turn = history[a]
    turn_ids = {c.id for c in turn.tool_calls if c.id is not None}
    seen: set[str | None] = set()
    block: list[Message] = []
    for m in history[a + 1 :]:
        if m.tool_call_id in turn_ids and m.tool_call_id not in seen:
            seen.add(m.tool_call_id)
            block.append(m)
    prefix, _ = normalize_history(history[:a])
    state = RunState(config=config, history=(*prefix, turn, *block), turn=turn)
    waiting_ids = {d.call.id for d in waiting}
    pre: list[Message] = []
    to_execute: list[ToolCallPart] = []
    still: list[DeferredCall] = []
    awaiting: list[ToolCallPart] = []
    for call in _unanswered(history, a):
        answer = answers.get(call.id or "")
        if call.id not in waiting_ids:
            pre.append(interrupted_result(call))
        elif type(answer) is Approved:
            to_execute.append(call)
        elif type(answer) is Denied:
            pre.append(
                _stamp(
                    state,
                    Message.tool_result(
                        call.id, call.name, f"denied: {answer.reason}", failed=True
                    ),
                )
            )
        elif type(answer) is ExternalResult:
            pre.append(
                _stamp(
                    state,
                    Message.tool_result(call.id, call.name, answer.parts, failed=answer.failed),
                )
            )
        elif close_unanswered:
            pre.append(interrupted_result(call))
        else:
            still.extend(d for d in waiting if d.call.id == call.id)
        awaiting.append(call)
    if to_execute:
        return Success(
            attrs.evolve(
                state,
                phase=Phase.TOOLS,
                to_execute=tuple(to_execute),
                deferred=tuple(still),
                awaiting=tuple(awaiting),
                answered=tuple(pre),
            )
        )
    state = _add(state, pre, stamp=False)
    return Success(
        attrs.evolve(
            state,
            evidence=len(state.added),
            deferred=tuple(still),
            awaiting=tuple(d.call for d in still),
            phase=Phase.PAUSED if still else Phase.REQUEST,
        )
    )
