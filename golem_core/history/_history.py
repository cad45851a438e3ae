"""Tool-call pairing: check it, repair it, report what was repaired.

Owns the providers' pairing rule and golem's repair of it. The rule (OpenAI Chat
Completions and Anthropic Messages alike): every tool call an assistant message makes
with an id is answered, exactly once, by the ``tool`` messages that directly follow that
assistant message, before any other message; every ``tool`` message answers such a call.

The vocabulary shared by the functions here:

- a **turn** is an assistant message; only assistant messages make calls (a
  ``ToolCallPart`` in any other role is content, not a call);
- a **call** is a ``ToolCallPart`` whose ``id`` is not ``None`` (``""`` is an id like
  any other). A call without an id cannot be paired: it passes through unrepaired;
- a **result** is a ``tool`` message; it answers the call of the nearest earlier turn
  that holds its ``tool_call_id`` (ids are scoped to their turn: a provider that reuses
  ``call_0`` in every response still pairs correctly);
- a turn's **block** is the run of ``tool`` messages directly after it.

Repair, in one linear pass plus one rebuild only when something changes:

- a call with no result gets a synthesized neutral result (``interrupted_result``),
  appended to its turn's block;
- a result after its call but outside its block (a user message between them) is
  *moved* into the block: it is evidence that the call ran;
- a result with no earlier call (``orphan``), before its call (``early``), a second one
  for a call (``duplicate``) or one without ``tool_call_id`` (``missing_id``) is dropped;
- a block keeps the results it holds in their order; moved and synthesized results
  follow them, in call order.

Every ``message_index`` in a report refers to the INPUT history: for a dropped, moved or
empty message its own index, for a synthesized result, a truncated or a reused call the
index of the assistant message that holds the call. The decisions are ADR 0030.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from attrs import field, frozen

from golem_core._messages import (
    Message,
    Part,
    Role,
    TextPart,
    ToolCallPart,
    UnknownPart,
    calls_of,
)

__all__ = [
    "INTERRUPTED_RESULT_TEXT",
    "UNFINISHED_RESULT_TEXT",
    "HistoryRepair",
    "PairingKind",
    "PairingProblem",
    "RepairEntry",
    "RepairReason",
    "check_pairing",
    "interrupted_result",
    "normalize_history",
    "repair_history",
]

INTERRUPTED_RESULT_TEXT = "interrupted before execution; no result was produced"
"""The text of a synthesized result: the absence of an outcome, not a tool failure."""
UNFINISHED_RESULT_TEXT = (
    "interrupted while running: the call started but did not finish, so it may have had"
    " effects; no result was produced"
)
"""The text of the result closing a call that started and was interrupted (a cancel or a
timeout while it ran): no outcome, but unlike ``INTERRUPTED_RESULT_TEXT`` not a call
that never ran."""

PairingKind: TypeAlias = Literal[
    "dangling", "separated", "orphan", "early", "duplicate", "missing_id"
]
"""What is wrong with a history's pairing.

``dangling``: a call has no result anywhere after it. ``separated``: a result comes after
its call but not in the block directly after it. ``orphan``: a result answers no call.
``early``: a result comes before its call (and after no earlier call with its id).
``duplicate``: a second result for a call. ``missing_id``: a ``tool`` message without
``tool_call_id``.
"""

RepairReason: TypeAlias = Literal[
    "dangling", "separated", "orphan", "early", "duplicate", "missing_id", "truncated", "reused"
]
"""Why a ``RepairEntry`` was written: a ``PairingKind``, or a detection.

``truncated``: a call whose arguments are not a JSON object. ``reused``: a call whose id
an earlier call (in the same or an earlier turn) already carries.
"""

_ASSISTANT = Role.ASSISTANT
_TOOL = Role.TOOL
_USER = Role.USER


@frozen
class RepairEntry:
    """One thing a repair pass did or detected.

    Attributes:
        message_index: Index into the INPUT history: the dropped or moved ``tool``
            message, or the assistant message holding the synthesized-for, truncated or
            reused call.
        call_id: The call id concerned (``None`` for a ``tool`` message without one).
        tool_name: The call's tool name, or the ``tool`` message's ``tool_name``.
        reason: Why the entry exists.
    """

    message_index: int
    call_id: str | None
    tool_name: str | None
    reason: RepairReason


@frozen
class HistoryRepair:
    """What ``normalize_history`` changed and detected; every index is into its input.

    Attributes:
        synthesized: Calls that got a synthesized result (reason ``dangling``), in
            output order: by turn, then call order.
        dropped: ``tool`` messages removed (``orphan``, ``early``, ``duplicate``,
            ``missing_id``), in input order.
        moved: results moved up into their call's block (``separated``), in input order.
        truncated: calls whose arguments are not a JSON object. Detection only: the
            bytes stay verbatim and the call is listed again on every pass.
        reused: calls whose id an earlier call already carries. Detection only: ids are
            never rewritten (Anthropic requires unique ids per request; its wire encoder
            owns that).
        empty: user and assistant messages that hold nothing a provider accepts (no
            part, or only ``""`` text and unknown parts). Detection only: a person's
            message is never dropped silently.
    """

    synthesized: tuple[RepairEntry, ...] = field(default=(), kw_only=True)
    dropped: tuple[RepairEntry, ...] = field(default=(), kw_only=True)
    moved: tuple[RepairEntry, ...] = field(default=(), kw_only=True)
    truncated: tuple[RepairEntry, ...] = field(default=(), kw_only=True)
    reused: tuple[RepairEntry, ...] = field(default=(), kw_only=True)
    empty: tuple[int, ...] = field(default=(), kw_only=True)

    @property
    def changed(self) -> bool:
        """Whether the returned history differs from the input (something synthesized,
        dropped or moved). Detections alone do not count."""
        return bool(self.synthesized or self.dropped or self.moved)


@frozen
class PairingProblem:
    """One way a history breaks the providers' pairing rule.

    Attributes:
        message_index: The assistant message of a ``dangling`` call, else the ``tool``
            message at fault.
        call_id: The call id concerned (``None`` for ``missing_id``).
        tool_name: The call's tool name, or the ``tool`` message's ``tool_name``.
        kind: What is wrong (see ``PairingKind``).
        message: The problem in one readable sentence.
    """

    message_index: int
    call_id: str | None
    tool_name: str | None
    kind: PairingKind
    message: str


_EMPTY_REPAIR = HistoryRepair()


def interrupted_result(call: ToolCallPart) -> Message:
    """The neutral result that closes a call that never produced one.

    Not a failure (``failed=False``): it states the absence of an outcome, so the model
    may request the call again. It carries no timestamp and no identity stamps, so
    repairing the same history twice gives equal messages.

    Args:
        call: The unanswered call.

    Returns:
        A ``tool`` message answering ``call.id``. Total and deterministic.
    """
    return Message.tool_result(call.id, call.name, INTERRUPTED_RESULT_TEXT)


def unfinished_result(call: ToolCallPart) -> Message:
    """The neutral result that closes a call that started but was interrupted before it
    returned (a cancel or timeout while the tool ran): unlike ``interrupted_result`` it
    says the call may have had effects, so a model (or a person) does not assume it
    never ran. Not a failure; no timestamp, no identity stamps. Total and deterministic.
    """
    return Message.tool_result(call.id, call.name, UNFINISHED_RESULT_TEXT)


def _holds_nothing(parts: Sequence[Part]) -> bool:
    """Whether no part is something a provider receives (text ``""`` and unknown parts
    are not; whitespace is what the person wrote and counts)."""
    for p in parts:
        if type(p) is TextPart:
            if p.text:
                return False
        elif type(p) is not UnknownPart:
            return False
    return True


class _Scan:
    """The findings of one pass over a history (private, mutable while scanning)."""

    __slots__ = (
        "answered",
        "dropped",
        "empty",
        "lost",
        "moved",
        "owner",
        "paired",
        "registered",
        "reused",
        "truncated",
    )

    def __init__(self) -> None:
        self.owner: dict[str, int] = {}  # call id -> latest turn holding it
        self.answered: dict[str, int] = {}  # call id -> latest turn whose call got a result
        self.registered = 0  # (turn, id) pairs that need a result
        self.paired = 0  # (turn, id) pairs that have one
        self.dropped: list[tuple[int, PairingKind]] = []
        self.moved: list[tuple[int, int]] = []  # (result index, turn)
        self.lost: list[tuple[int, str]] = []  # (turn, id) left unanswered when reused
        self.truncated: list[RepairEntry] = []
        self.reused: list[RepairEntry] = []
        self.empty: list[int] = []

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.moved) or self.registered != self.paired


def _scan(history: Sequence[Message]) -> _Scan:
    """Walk the history once: pair results with calls by dict lookup, classify the rest."""
    s = _Scan()
    owner = s.owner
    answered = s.answered
    dropped = s.dropped
    registered = 0
    paired = 0
    block = -1  # the turn whose block we are in, -1 for none
    for i, m in enumerate(history):
        role = m.role
        if role is _TOOL:
            cid = m.tool_call_id
            if cid is None:
                dropped.append((i, "missing_id"))
                continue
            turn = owner.get(cid)
            if turn is None:
                dropped.append((i, "orphan"))  # refined to "early" below
                continue
            if answered.get(cid) == turn:
                dropped.append((i, "duplicate"))
                continue
            answered[cid] = turn
            paired += 1
            if turn != block:
                s.moved.append((i, turn))
            continue
        parts = m.parts
        if role is _ASSISTANT:
            block = i
            content = False
            for p in parts:
                if type(p) is ToolCallPart:
                    content = True
                    if p._parsed_arguments is None:  # not p.arguments_valid, one call less
                        s.truncated.append(RepairEntry(i, p.id, p.name, "truncated"))
                    cid = p.id
                    if cid is None:
                        continue
                    prev = owner.get(cid)
                    if prev is not None:
                        s.reused.append(RepairEntry(i, cid, p.name, "reused"))
                        if prev == i:
                            continue
                        if answered.get(cid) != prev:
                            s.lost.append((prev, cid))
                    owner[cid] = i
                    registered += 1
            if not content:
                first = parts[0] if parts else None
                if not (type(first) is TextPart and first.text) and _holds_nothing(parts):
                    s.empty.append(i)
            continue
        block = -1
        if role is _USER:
            first = parts[0] if parts else None
            if not (type(first) is TextPart and first.text) and _holds_nothing(parts):
                s.empty.append(i)
    s.registered = registered
    s.paired = paired
    if dropped:
        for k, (j, kind) in enumerate(dropped):
            if kind == "orphan" and history[j].tool_call_id in owner:
                dropped[k] = (j, "early")
    return s


def _detections(s: _Scan) -> HistoryRepair:
    if not (s.truncated or s.reused or s.empty):
        return _EMPTY_REPAIR
    return HistoryRepair(truncated=tuple(s.truncated), reused=tuple(s.reused), empty=tuple(s.empty))


def _unanswered(s: _Scan) -> dict[int, set[str]]:
    """The turns with calls that no result answers, and those calls' ids."""
    unanswered: dict[int, set[str]] = {}
    if s.registered == s.paired:
        return unanswered
    for turn, cid in s.lost:
        unanswered.setdefault(turn, set()).add(cid)
    answered = s.answered
    for cid, turn in s.owner.items():
        if answered.get(cid) != turn:
            unanswered.setdefault(turn, set()).add(cid)
    return unanswered


def _rebuild(history: Sequence[Message], s: _Scan) -> tuple[tuple[Message, ...], HistoryRepair]:
    """Second pass, only when the scan found something to change."""
    skip = {j for j, _ in s.dropped}
    moved_for: dict[tuple[int, str | None], int] = {}
    for j, turn in s.moved:
        skip.add(j)
        moved_for[(turn, history[j].tool_call_id)] = j
    needs_tail = set(_unanswered(s))
    needs_tail.update(turn for _, turn in s.moved)
    out: list[Message] = []
    synthesized: list[RepairEntry] = []
    n = len(history)
    pos = 0  # history[:pos] is done; untouched runs are copied as slices
    for cut in sorted(skip | needs_tail):
        if cut < pos:  # a skipped result inside a block handled below
            continue
        out.extend(history[pos:cut])
        pos = cut + 1
        if cut in skip:
            continue
        out.append(history[cut])  # a turn whose block needs moved or synthesized results
        answered_here: set[str | None] = set()
        while pos < n and history[pos].role is _TOOL:
            if pos not in skip:
                out.append(history[pos])
                answered_here.add(history[pos].tool_call_id)
            pos += 1
        for call in calls_of(history[cut]):
            if call.id in answered_here:
                continue
            found = moved_for.get((cut, call.id))
            if found is not None:
                out.append(history[found])
            else:
                out.append(interrupted_result(call))
                synthesized.append(RepairEntry(cut, call.id, call.name, "dangling"))
    out.extend(history[pos:])

    report = HistoryRepair(
        synthesized=tuple(synthesized),
        dropped=tuple(
            RepairEntry(j, history[j].tool_call_id, history[j].tool_name, kind)
            for j, kind in s.dropped
        ),
        moved=tuple(
            RepairEntry(j, history[j].tool_call_id, history[j].tool_name, "separated")
            for j, _ in s.moved
        ),
        truncated=tuple(s.truncated),
        reused=tuple(s.reused),
        empty=tuple(s.empty),
    )
    return tuple(out), report


def normalize_history(
    history: Sequence[Message],
) -> tuple[tuple[Message, ...], HistoryRepair]:
    """Repair a history's call/result pairing and report what changed.

    The output satisfies the pairing rule of OpenAI and Anthropic (``check_pairing``
    returns ``()`` on it): dangling calls get ``interrupted_result``, separated results
    move into their call's block, orphan, early, duplicate and id-less results are
    dropped. Nothing else changes: every other message is the very same object, in the
    same relative order; arguments, thinking, failure flags and stamps pass through.

    When nothing needs changing the input is returned as is (the same tuple object
    when the input is a tuple), after one linear pass.

    Args:
        history: Any sequence of messages, broken or not.

    Returns:
        The repaired history and a ``HistoryRepair`` whose indices refer to ``history``.
        Total, deterministic and idempotent: ``normalize_history(out)`` returns ``out``
        itself with a report that has ``changed == False``.
    """
    s = _scan(history)
    if not s.changed:
        same = history if type(history) is tuple else tuple(history)
        return same, _detections(s)
    return _rebuild(history, s)


def repair_history(history: Sequence[Message]) -> tuple[Message, ...]:
    """The history of ``normalize_history``, without the report (what runs use).

    Args:
        history: Any sequence of messages.

    Returns:
        The repaired history. Total, deterministic and idempotent; the input itself
        when it is a tuple that needs no repair.
    """
    return normalize_history(history)[0]


def _problem(
    index: int, call_id: str | None, tool_name: str | None, kind: PairingKind, extra: int = -1
) -> PairingProblem:
    call = f"tool call {call_id!r}"
    if kind == "dangling":
        text = f"{call} ({tool_name!r}) has no result"
    elif kind == "separated":
        text = (
            f"the result of {call} is not among the tool messages directly after its call "
            f"(message {extra})"
        )
    elif kind == "orphan":
        text = f"the result of {call} answers no earlier call"
    elif kind == "early":
        text = f"the result of {call} comes before its call"
    elif kind == "duplicate":
        text = f"a second result for {call}"
    else:
        text = "a tool message without tool_call_id answers no call"
    return PairingProblem(index, call_id, tool_name, kind, f"message {index}: {text}")


def check_pairing(history: Sequence[Message]) -> tuple[PairingProblem, ...]:
    """Whether a history is provider-valid, and if not, what is wrong.

    The problems correspond one to one with what ``normalize_history`` would do:
    ``dangling`` to a synthesized entry, ``separated`` to a moved one, the others to
    dropped ones (same index, call id and kind/reason). Truncated arguments, reused
    ids and empty messages are not pairing problems.

    Args:
        history: Any sequence of messages.

    Returns:
        The problems ordered by message index (a turn's dangling calls in call order);
        ``()`` when the history is provider-valid. Total and deterministic; always
        ``()`` on ``repair_history``'s output.
    """
    s = _scan(history)
    if not s.changed:
        return ()
    problems: list[PairingProblem] = []
    for j, kind in s.dropped:
        m = history[j]
        problems.append(_problem(j, m.tool_call_id, m.tool_name, kind))
    for j, turn in s.moved:
        m = history[j]
        problems.append(_problem(j, m.tool_call_id, m.tool_name, "separated", turn))
    for turn, ids in _unanswered(s).items():
        for call in calls_of(history[turn]):
            if call.id in ids:
                problems.append(_problem(turn, call.id, call.name, "dangling"))
    problems.sort(key=lambda p: p.message_index)
    return tuple(problems)
