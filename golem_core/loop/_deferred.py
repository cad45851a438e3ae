"""Deferred tool calls: which calls of a paused run wait, and how answers resume it.

Owns the human-in-the-loop rules. A call of a tool marked ``approval`` or ``external``
is not executed by the run: the run pauses with the call waiting. The waiting calls are
the run's live frontier: the calls of the history's last assistant message that have no
result yet, when nothing but tool results follows that message. ``resume_run`` applies
answers first (an approval lets the tool run, a denial and an external result become
its result), and only then closes what is still unanswered, so repair never
synthesizes a result for a call that is about to be answered. Resuming is a transition
of the loop (``golem_core.loop``: a paused state receives ``Answered``); this module
holds what it needs and imports nothing of the loop.

Approvals in a history attest nothing: the history is data a client can write.
``check_resume`` is the one rule that says whether answers may resume a paused run (ADR
0090): the pause they are for, the calls that wait and their kinds, and, given the
server's keys or what it ``issued``, the calls it can vouch for (ADR 0033, 0054). The
loop's ``receive`` applies it; runtimes call it to learn whether answers fit, instead of
trying them.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Literal, Protocol, TypeAlias

from attrs import frozen

from golem_core._messages import Message, Part, Role, TextPart, ToolCallPart, calls_of
from golem_core.history._provenance import SigningKeys, signed_calls

__all__ = [
    "Answered",
    "Approved",
    "DeferredAnswer",
    "DeferredCall",
    "DeferredError",
    "Denied",
    "ExternalResult",
    "IssuedCalls",
    "PausedRun",
    "check_answers",
    "check_resume",
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


@frozen
class Answered:
    """Answers for a paused run's waiting calls, by call id (``Approved``, ``Denied``,
    ``ExternalResult``).

    ``close_unanswered`` closes waiting calls left without an answer (otherwise they keep
    the run paused). ``pause`` binds the answers to the pause they answer (the state's
    ``pauses`` count when it paused): answers for an earlier pause are refused, so a
    repeated or stale answer never applies to a later pause. ``None`` skips that check
    (a resume from stored history, which has only the one pause).
    """

    answers: Mapping[str, DeferredAnswer]
    close_unanswered: bool = False
    pause: int | None = None


IssuedCalls: TypeAlias = Container[str] | Callable[[ToolCallPart], bool]
"""What a server issued: the call ids it paused on, or a predicate over a call."""


class PausedRun(Protocol):
    """What ``check_resume`` reads of a paused run (``golem_core.loop.RunState`` is one)."""

    @property
    def deferred(self) -> tuple[DeferredCall, ...]: ...

    @property
    def pauses(self) -> int: ...

    @property
    def messages(self) -> tuple[Message, ...]: ...


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
    return [c for c in calls_of(history[a]) if c.id not in answered]


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


def check_resume(
    paused: PausedRun,
    answered: Answered,
    *,
    issued: IssuedCalls | None = None,
    signing_keys: SigningKeys = (),
    history: Sequence[Message] | None = None,
) -> DeferredError | None:
    """The first reason ``answered`` may not resume ``paused``, or ``None`` when it may.

    The one rule for answers (ADR 0090); ``receive`` applies it (without keys or
    ``issued``), and a runtime calls it to learn whether answers fit before it records
    or applies them. In order:

    1. the answers are for another pause than the one the run is at (``answered.pause``
       names an earlier one: a repeated or stale answer);
    2. with ``signing_keys``, an answered waiting call is not one this server signed,
       intact, in ``history`` (``signed_calls``);
    3. with ``issued``, an answered waiting call is not one ``issued`` vouches for (a
       container of call ids, or a predicate over the call);
    4. an answer names a call that is not waiting, or answers it with the wrong kind of
       answer (``check_answers``).

    Args:
        paused: the paused run (its waiting calls, its pause count, its messages).
        answered: the answers.
        issued: what this server issued, or ``None`` for no such check.
        signing_keys: the server's keys, newest first (one key or several); empty for
            no signature check.
        history: the conversation the answers came with, as supplied, where signatures
            are checked (default: ``paused.messages``).

    Returns:
        The refusal naming the call ids, or ``None``. Total and deterministic.

    Raises:
        ValueError: ``issued`` is a single string (it would vouch for every id it
            contains), or a key is not usable (see ``signing_keys``).
    """
    if isinstance(issued, str | bytes):
        raise ValueError(
            "issued must be a collection of call ids or a predicate, not a single"
            f" string ({issued!r} would vouch for every id it contains);"
            " pass a set or tuple: issued={...}"
        )
    if answered.pause is not None and answered.pause != paused.pauses:
        return DeferredError(
            f"these answers are for pause {answered.pause} of the run, which is now at"
            f" pause {paused.pauses}: a repeated or stale answer is not applied",
            tuple(sorted(answered.answers)),
        )
    answers = answered.answers
    answering = [d.call for d in paused.deferred if d.call.id in answers]
    if isinstance(signing_keys, bytes | bytearray) or len(signing_keys) > 0:
        vouched = signed_calls(paused.messages if history is None else history, signing_keys)
        unsigned = sorted(str(c.id) for c in answering if c.id not in vouched)
        if unsigned:
            return DeferredError(
                "refusing answers for calls without a valid signature of this server"
                " (forged or edited?): " + ", ".join(unsigned),
                tuple(unsigned),
            )
    if issued is not None:
        vouches = issued if callable(issued) else (lambda call: call.id in issued)
        forged = sorted(str(c.id) for c in answering if not vouches(c))
        if forged:
            return DeferredError(
                "refusing answers for calls this server never issued (forged?): "
                + ", ".join(forged),
                tuple(forged),
            )
    return check_answers(paused.deferred, answers)
