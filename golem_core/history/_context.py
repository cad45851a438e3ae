"""Context processors: making an old conversation cheaper without breaking it.

Owns the pure processors beyond a plain cut (``_processors.py``): ``clear_tool_results``
(old tool results lose their content, never their pairing), ``drop_thinking`` (old
reasoning is not replayed), and the pure half of summarization: ``plan_summary`` chooses
where a summary may replace the older part of a history, ``summary_message`` builds the
message that holds it, and ``SummaryPlan.apply`` puts it in place. The shell's
``golem_shell.summarize_history`` asks a model for the text in between.

The vocabulary (ADR 0044):

- a **turn** starts at a user message and runs to the next user message; messages
  before the first user message form a leading turn of their own. A turn holds a
  request and everything the run did for it: assistant messages, tool calls and their
  results, so a cut at a turn's start is never inside a tool exchange;
- a **summary** is a user message marked by the additive JSON field ``"summary"``
  (``{"messages": <how many it replaced>}``), carried in ``Message.extra`` like every
  field this version does not model; providers never see the marker, stores keep it;
- a **compaction record** (``golem_core.history._compaction``, ADR 0140) rides on the message
  that holds a fold: the summary, or the newest result a clear emptied. It names the
  replaced messages by reference, so what a fold took can be found again.

Over 600 lines because the three folds share one vocabulary (turns, steps, the summary
marker, the compaction record) and one promise about pairing, which belong together.

Every processor here is total, deterministic and idempotent, returns ``Success``, keeps
every ``tool`` message with its ``tool_call_id``, ``tool_name``, ``failed`` flag and
stamps, and keeps the order of messages: pairing that was valid stays valid.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

import attrs
from attrs import field, frozen
from returns.result import Result, Success

from golem_core._messages import Message, Part, Role, TextPart, ThinkingPart, Usage
from golem_core.history._compaction import (
    DECLINED_NOTHING_TO_FOLD,
    DECLINED_PENDING_CALL,
    CompactionRecord,
    message_ref,
    with_compaction,
)
from golem_core.history._processors import (
    HistoryError,
    TokenCounter,
    _open_tail,
    approximate_tokens,
)

__all__ = [
    "ClearReport",
    "ClearedResult",
    "DEFAULT_CLEARED_PLACEHOLDER",
    "SUMMARY_KEY",
    "SummaryPlan",
    "clear_old_tool_results",
    "clear_tool_results",
    "drop_thinking",
    "is_summary",
    "plan_compaction",
    "plan_summary",
    "summary_message",
    "turn_starts",
]

DEFAULT_CLEARED_PLACEHOLDER: Final = "[tool result cleared to save context]"
"""The text an old tool result is replaced with, unless the caller names another."""

DEFAULT_CLEAR_STEP: Final = 8
"""How many tool results one stepped clear handles (ADR 0078)."""

DEFAULT_THINKING_STEP: Final = 4
"""How many turns one stepped ``drop_thinking`` handles (ADR 0078)."""

SUMMARY_KEY: Final = "summary"
"""The JSON field that marks a summary message (kept in ``Message.extra``)."""


def _check_count(function: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{function}({name}): {name} must be an int of at least 0, got {value!r}")
    if value < 0:
        raise ValueError(f"{function}({name}): {name} must be at least 0, got {value}")
    return value


def _check_step(function: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{function}(step): step must be an int of at least 1, got {value!r}")
    return value


def _as_tuple(history: Sequence[Message]) -> tuple[Message, ...]:
    return history if type(history) is tuple else tuple(history)


def turn_starts(history: Sequence[Message]) -> tuple[int, ...]:
    """The index at which each turn of ``history`` starts, oldest first.

    A turn starts at every user message, and at index 0 when the history does not open
    with one (the messages before the first user message are a leading turn; a history
    of system messages alone has no turn).

    Total and deterministic; linear.
    """
    starts = [i for i, m in enumerate(history) if m.role is Role.USER]
    if (not starts or starts[0] != 0) and any(
        m.role is not Role.SYSTEM for m in history[: starts[0] if starts else len(history)]
    ):
        starts.insert(0, 0)
    return tuple(starts)


def _stepped(done: int, total: int, keep: int, step: int) -> int:
    """How many of ``total`` items (oldest first) a stepped processor leaves processed.

    ``done`` leading items need nothing (already processed, or nothing to process); the
    rest are processed in whole steps of ``step``, the most that leave at least ``keep``
    untouched. The result moves only when ``step`` more items have aged, so between two
    steps every request repeats the previous one's history (ADR 0078). Idempotent: once
    applied, ``(total - done - keep) < step``.
    """
    waiting = total - done - keep
    return done + (waiting // step) * step if waiting >= step else done


# -- clearing old tool results ----------------------------------------------------------


@frozen
class ClearedResult:
    """One tool result whose content ``clear_tool_results`` replaced.

    Attributes:
        message_index: Index of the ``tool`` message in the INPUT history.
        call_id: Its ``tool_call_id``.
        tool_name: Its ``tool_name``.
        parts: How many parts it held before.
    """

    message_index: int
    call_id: str | None
    tool_name: str | None
    parts: int


@frozen
class ClearReport:
    """What ``clear_old_tool_results`` cleared, in input order (empty: nothing changed)."""

    cleared: tuple[ClearedResult, ...] = field(default=(), kw_only=True)
    record: CompactionRecord | None = field(default=None, kw_only=True)
    """The clear's compaction record (ADR 0140), when something was cleared."""

    @property
    def changed(self) -> bool:
        """Whether the returned history differs from the input."""
        return bool(self.cleared)


def _check_placeholder(function: str, placeholder: object) -> str:
    if not isinstance(placeholder, str) or not placeholder.strip():
        raise ValueError(
            f"{function}(placeholder): placeholder must be a non-blank string (providers "
            f"refuse empty tool results), got {placeholder!r}"
        )
    return placeholder


def clear_old_tool_results(
    history: Sequence[Message],
    *,
    keep_last: int = 3,
    placeholder: str = DEFAULT_CLEARED_PLACEHOLDER,
    step: int = DEFAULT_CLEAR_STEP,
    record: bool = False,
) -> tuple[tuple[Message, ...], ClearReport]:
    """Clear the content of old tool results in steps, keeping the newest; report it.

    The report holds the clear's compaction record (with ``record``, the newest result it
    empties carries it too; ``compaction_of``: the references of the results it cleared,
    tokens before and after by ``approximate_tokens``; ADR 0140). The oldest results already
    cleared need nothing; of the rest, whole steps of ``step`` results are cleared, the most
    that leave at least ``keep_last`` results with their content. So at most ``keep_last +
    step - 1`` results hold content, and a clear happens once per ``step`` new results:
    between two clears every history is the previous one plus new messages, which a prompt
    cache serves (ADR 0078).
    ``step=1`` clears every result as soon as ``keep_last`` newer ones exist.

    A cleared result keeps its place, ``tool_call_id``, ``tool_name``, ``failed`` flag,
    stamps and unknown fields; only its parts become one ``TextPart(placeholder)``. A
    result that already holds exactly that is left alone and not reported again.

    Args:
        history: Any history (broken pairing included: nothing is paired or dropped).
        keep_last: How many of the newest ``tool`` messages keep their content at least;
            0 lets a step clear them all.
        placeholder: The text a cleared result holds; not blank.
        step: How many results one clear handles, at least 1.
        record: Also write the clear's compaction record into the history, on the
            newest result it empties (what the ``clear_tool_results`` processor does);
            the report holds it either way.

    Returns:
        The history and a ``ClearReport`` whose indices refer to ``history``. Total,
        deterministic and idempotent; the input itself (the same tuple) when nothing
        is cleared.

    Raises:
        ValueError: ``keep_last`` is not an ``int`` of at least 0, or ``placeholder``
            is blank.
    """
    keep = _check_count("clear_tool_results", "keep_last", keep_last)
    text = _check_placeholder("clear_tool_results", placeholder)
    every = _check_step("clear_tool_results", step)
    cleared_parts: tuple[Part, ...] = (TextPart(text),)
    results = [i for i, m in enumerate(history) if m.role is Role.TOOL]
    done = 0
    while done < len(results) and history[results[done]].parts == cleared_parts:
        done += 1
    old = results[: _stepped(done, len(results), keep, every)]
    out: list[Message] | None = None
    report: list[ClearedResult] = []
    for index in old:
        message = history[index]
        if message.parts == cleared_parts:
            continue
        if out is None:
            out = list(history)
        out[index] = attrs.evolve(message, parts=cleared_parts)
        report.append(
            ClearedResult(index, message.tool_call_id, message.tool_name, len(message.parts))
        )
    if out is None:
        return _as_tuple(history), ClearReport()
    fold = CompactionRecord(
        repr(_ClearToolResults(keep, text, every)),
        "cleared",
        replaced=tuple(message_ref(history[r.message_index]) for r in report),
        tokens_before=_tokens(history, approximate_tokens),
        tokens_after=_tokens(out, approximate_tokens),
    )
    if record:
        newest = report[-1].message_index
        out[newest] = with_compaction(out[newest], fold)
    return tuple(out), ClearReport(cleared=tuple(report), record=fold)


def _tokens(history: Sequence[Message], counter: TokenCounter) -> int:
    return sum(counter(m) for m in history if m.role is not Role.SYSTEM)


@frozen(repr=False)
class _ClearToolResults:
    keep_last: int
    placeholder: str
    step: int = DEFAULT_CLEAR_STEP

    def __call__(self, history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
        cleared, _ = clear_old_tool_results(
            history,
            keep_last=self.keep_last,
            placeholder=self.placeholder,
            step=self.step,
            record=True,
        )
        return Success(cleared)

    def __repr__(self) -> str:
        text = f"keep_last={self.keep_last}"
        if self.placeholder != DEFAULT_CLEARED_PLACEHOLDER:
            text += f", placeholder={self.placeholder!r}"
        if self.step != DEFAULT_CLEAR_STEP:
            text += f", step={self.step}"
        return f"clear_tool_results({text})"


def clear_tool_results(
    *,
    keep_last: int = 3,
    placeholder: str = DEFAULT_CLEARED_PLACEHOLDER,
    step: int = DEFAULT_CLEAR_STEP,
) -> _ClearToolResults:
    """A processor that clears the content of old tool results in steps, keeping the newest.

    Tool results are usually the bulk of an agent's context and the part least needed
    once the model has acted on them. The pairs stay: a cleared result still answers
    its call, with its ids, ``failed`` flag and stamps, so the history stays
    provider-valid and the model still sees which tools ran. Results are cleared
    ``step`` at a time (``clear_old_tool_results``), so a prompt cache keeps serving
    the history between two clears; ``step=1`` clears each result as it ages. For the
    report of what was cleared, call ``clear_old_tool_results`` with the same arguments.

    Args:
        keep_last: How many of the newest results keep their content at least (0: none).
        placeholder: The text a cleared result holds.
        step: How many results one clear handles (``DEFAULT_CLEAR_STEP``), at least 1.

    Returns:
        The processor: always ``Success``; total, deterministic, idempotent, and
        monotone in ``keep_last`` (a larger ``keep_last`` clears a subset).

    Raises:
        ValueError: ``keep_last`` is not an ``int`` of at least 0, or ``placeholder``
            is blank.
    """
    return _ClearToolResults(
        _check_count("clear_tool_results", "keep_last", keep_last),
        _check_placeholder("clear_tool_results", placeholder),
        _check_step("clear_tool_results", step),
    )


# -- dropping old thinking ---------------------------------------------------------------


def _droppable(message: Message) -> tuple[Part, ...] | None:
    """``message``'s parts without thinking, when that removes something and leaves some."""
    if message.role is not Role.ASSISTANT:
        return None
    kept = tuple(p for p in message.parts if type(p) is not ThinkingPart)
    return None if len(kept) == len(message.parts) or not kept else kept


@frozen(repr=False)
class _DropThinking:
    keep_last_turns: int
    step: int = DEFAULT_THINKING_STEP

    def __call__(self, history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
        starts = [*turn_starts(history), len(history)]
        turns = len(starts) - 1
        done = 0
        while done < turns and not any(
            _droppable(history[i]) for i in range(starts[done], starts[done + 1])
        ):
            done += 1
        end = starts[_stepped(done, turns, self.keep_last_turns, self.step)] if turns else 0
        out: list[Message] | None = None
        for index in range(end):
            kept = _droppable(history[index])
            if kept is None:
                continue  # no thinking, or nothing but thinking: left as it is
            if out is None:
                out = list(history)
            out[index] = attrs.evolve(history[index], parts=kept)
        return Success(_as_tuple(history) if out is None else tuple(out))

    def __repr__(self) -> str:
        step = "" if self.step == DEFAULT_THINKING_STEP else f", step={self.step}"
        return f"drop_thinking(keep_last_turns={self.keep_last_turns}{step})"


def drop_thinking(*, keep_last_turns: int = 1, step: int = DEFAULT_THINKING_STEP) -> _DropThinking:
    """A processor that removes thinking from old assistant messages in steps of turns.

    Reasoning is rarely worth replaying once its turn is over (Anthropic strips it from
    earlier turns itself, and bills it where it does not); the newest turns keep theirs,
    as Anthropic requires of a tool loop in progress when thinking is on. A message
    that holds nothing but thinking keeps it: removing the message, or leaving it empty,
    would change the shape of the conversation.

    Turns are handled ``step`` at a time: the oldest turns with nothing to drop need
    nothing; of the rest, whole steps of ``step`` turns lose their thinking, the most
    that leave at least ``keep_last_turns`` turns untouched, so a prompt cache keeps
    serving the history between two steps (ADR 0078). ``step=1`` drops it from every
    turn as soon as it is older than the newest ``keep_last_turns``.

    Args:
        keep_last_turns: How many of the newest turns (each starting at a user
            message) keep their thinking at least; 0 lets a step drop it everywhere.
        step: How many turns one step handles (``DEFAULT_THINKING_STEP``), at least 1.

    Returns:
        The processor: always ``Success``; total, deterministic, idempotent, and
        monotone in ``keep_last_turns``. Redacted thinking is thinking too.

    Raises:
        ValueError: ``keep_last_turns`` is not an ``int`` of at least 0.
    """
    return _DropThinking(
        _check_count("drop_thinking", "keep_last_turns", keep_last_turns),
        _check_step("drop_thinking", step),
    )


# -- planning a summary ------------------------------------------------------------------


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary that ``summary_message`` built (or a peer wrote)."""
    return any(key == SUMMARY_KEY for key, _ in message.extra)


def summary_message(
    text: str, *, summarized: int, record: CompactionRecord | None = None
) -> Message:
    """The user message that stands for ``summarized`` earlier messages.

    Args:
        text: The summary, as the model should read it.
        summarized: How many messages it replaces (written in the marker).
        record: The fold's compaction record (``SummaryPlan.record``), written as the
            additive field ``"compaction"``.

    Returns:
        ``Message(Role.USER, (TextPart(text),))`` carrying the additive field
        ``"summary": {"messages": summarized}`` (and the record). No stamps: a run stamps
        only the messages it adds after processing. Total and deterministic.
    """
    marker = json.dumps({"messages": summarized}, separators=(",", ":"))
    message = Message(Role.USER, (TextPart(text),), extra=((SUMMARY_KEY, marker),))
    return message if record is None else with_compaction(message, record)


@frozen
class SummaryPlan:
    """Where a summary replaces the older part of a history.

    Attributes:
        cut: Index of the first kept message: the start of a turn.
        to_summarize: The non-system messages before ``cut``, in order: what the summary
            must stand for (an earlier summary among them included).
        kept: ``history[cut:]``, the newest turns, whole.
        head: The system messages before ``cut``, kept in front (a run replaces them
            with its instructions anyway).
    """

    cut: int
    to_summarize: tuple[Message, ...]
    kept: tuple[Message, ...]
    head: tuple[Message, ...] = ()

    def apply(self, summary: Message) -> tuple[Message, ...]:
        """The history with ``summary`` in place of ``to_summarize``: head, summary, kept."""
        return (*self.head, summary, *self.kept)

    def record(
        self,
        summary: Message,
        *,
        processor: str,
        counter: TokenCounter = approximate_tokens,
        usage: Usage | None = None,
    ) -> CompactionRecord:
        """The compaction record of putting ``summary`` in place: the references of
        ``to_summarize``, and the tokens of the non-system history before and after by
        ``counter`` (ADR 0140). Total and deterministic for a deterministic counter."""
        kept = _tokens(self.kept, counter)
        return CompactionRecord(
            processor,
            "summary",
            replaced=tuple(message_ref(m) for m in self.to_summarize),
            tokens_before=_tokens(self.to_summarize, counter) + kept,
            tokens_after=counter(summary) + kept,
            usage=usage,
        )


def _splits_a_pair(history: Sequence[Message], cut: int) -> bool:
    """Whether a result at or after ``cut`` answers a call that only a turn before it makes."""
    before: set[str] = set()
    for message in history[:cut]:
        if message.role is Role.ASSISTANT:
            before.update(c.id for c in message.tool_calls if c.id is not None)
    if not before:
        return False
    after: set[str] = set()
    for message in history[cut:]:
        if message.role is Role.ASSISTANT:
            after.update(c.id for c in message.tool_calls if c.id is not None)
        elif (
            message.role is Role.TOOL
            and message.tool_call_id in before
            and message.tool_call_id not in after
        ):
            return True
    return False


def plan_summary(
    history: Sequence[Message],
    *,
    keep_last_turns: int = 2,
    max_tokens: int | None = None,
    counter: TokenCounter = approximate_tokens,
    step_turns: int = 0,
) -> SummaryPlan | None:
    """Choose the cut for a summary: before the newest turns, never inside a tool exchange.

    ``plan_compaction``'s plan, ``None`` where it declines. The cut is the start of the
    ``keep_last_turns``-th newest turn; when a result after it answers a call made
    before it (only in a broken history), the cut moves back a turn until none does;
    it never passes the turn of a pending call (a call of the newest assistant turn
    with no result yet: waiting for approval or a deferred result). Everything before
    the cut that is not a system message is to be summarized.

    Args:
        history: Any history.
        keep_last_turns: How many of the newest turns are kept whole (0: summarize all).
        max_tokens: Summarize only when the non-system messages count more than this by
            ``counter``; ``None`` summarizes whenever there is something to summarize.
        counter: Tokens per message, for ``max_tokens``.
        step_turns: Without ``max_tokens``, summarize only once more than
            ``keep_last_turns + step_turns`` turns follow the last summary (or the start),
            so a placed summary and the turns after it stay byte-identical for that many
            runs (the prompt cache keeps serving them); 0 summarizes whenever more than
            the kept turns stand.

    Returns:
        The plan, or ``None`` when there is nothing to do: the history fits
        ``max_tokens`` (or the step), has no more than ``keep_last_turns`` turns, no cut keeps the
        pairs whole, or everything before the cut is already a summary (so summarizing
        a summarized history again changes nothing). Total and deterministic.

    Raises:
        ValueError: ``keep_last_turns`` is not an ``int`` of at least 0, or
            ``max_tokens`` is given and is not an ``int`` of at least 1.
    """
    plan = plan_compaction(
        history,
        keep_last_turns=keep_last_turns,
        max_tokens=max_tokens,
        counter=counter,
        step_turns=step_turns,
    )
    return plan if isinstance(plan, SummaryPlan) else None


def plan_compaction(
    history: Sequence[Message],
    *,
    keep_last_turns: int = 2,
    max_tokens: int | None = None,
    counter: TokenCounter = approximate_tokens,
    step_turns: int = 0,
) -> SummaryPlan | str:
    """``plan_summary``, saying why when it declines (ADR 0140).

    Args:
        history, keep_last_turns, max_tokens, counter, step_turns: As ``plan_summary``.

    Returns:
        The plan, or the outcome of declining: ``DECLINED_PENDING_CALL`` when the only
        cut that would fold something passes a pending call, ``DECLINED_NOTHING_TO_FOLD``
        otherwise (the history fits, the step has not come, too few turns, or only
        summaries stand before the cut). Total and deterministic.

    Raises:
        ValueError: As ``plan_summary``.
    """
    keep = _check_count("plan_summary", "keep_last_turns", keep_last_turns)
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise ValueError(
            f"plan_summary(max_tokens): max_tokens must be None or an int of at least 1, "
            f"got {max_tokens!r}"
        )
    step = _check_count("plan_summary", "step_turns", step_turns)
    if max_tokens is not None:
        total = _tokens(history, counter)
        if total <= max_tokens:
            return DECLINED_NOTHING_TO_FOLD
    starts = [*turn_starts(history), len(history)]
    if max_tokens is None and step:
        last = max((i for i, m in enumerate(history) if is_summary(m)), default=-1)
        fresh = sum(1 for s in starts[:-1] if s > last)  # turns after the last summary
        if fresh <= keep + step:
            return DECLINED_NOTHING_TO_FOLD
    candidates = (
        [s for s in starts[: max(0, len(starts) - keep)] if s > 0] if keep else [len(history)]
    )
    pending = _open_tail(history)
    if pending is not None:  # a pending call stays, with the turn that made it
        limit = max((s for s in starts[:-1] if s <= pending), default=0)
        safe = sorted({min(c, limit) for c in candidates} - {0})
        if safe != candidates:
            plan = _first_plan(history, safe)
            if (
                isinstance(plan, SummaryPlan)
                or _first_plan(history, candidates) == DECLINED_NOTHING_TO_FOLD
            ):
                return plan
            return DECLINED_PENDING_CALL
    return _first_plan(history, candidates)


def _first_plan(history: Sequence[Message], candidates: Sequence[int]) -> SummaryPlan | str:
    """The plan at the newest of ``candidates`` that splits no pair, or why there is none."""
    for cut in reversed(candidates):
        if cut <= 0 or _splits_a_pair(history, cut):
            continue
        older = history[:cut]
        to_summarize = tuple(m for m in older if m.role is not Role.SYSTEM)
        if not to_summarize or all(is_summary(m) for m in to_summarize):
            return DECLINED_NOTHING_TO_FOLD
        return SummaryPlan(
            cut=cut,
            to_summarize=to_summarize,
            kept=tuple(history[cut:]),
            head=tuple(m for m in older if m.role is Role.SYSTEM),
        )
    return DECLINED_NOTHING_TO_FOLD
