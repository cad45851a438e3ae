"""What moved a conversation's cached prefix: reports of every cut (ADR 0080).

Owns two pure comparisons that a driver, a test or a dashboard can run:

- ``describe_processing(before, after)`` says what a history processor did: the input
  ranges it removed or summarized, the messages it kept with other content (cleared
  tool results, dropped thinking), tokens before and after, the call/result pairs it
  kept and the pending calls it protected, and where the first change is (the point
  from which a prompt cache must be written again). Any processor, golem's or not,
  sync or async, is described the same way: from its input and its output.
- ``describe_cut(previous, current)`` compares a request with the previous request of
  the same conversation and names the first difference a prompt cache sees, and its
  cause: the tools changed, the instructions changed, messages were cut from the
  front, a summary took their place, a message was cleared or lost its thinking, or an
  earlier message was edited; ``None`` when ``current`` extends ``previous``.

Both are total and deterministic, and read no message content into their reports
beyond roles, ids and counts, so a report can be logged or exported as a span event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from attrs import field, frozen

from golem_core._messages import Message, Role, ThinkingPart
from golem_core._model import ModelRequest
from golem_core.history._context import DEFAULT_CLEARED_PLACEHOLDER, is_summary
from golem_core.history._processors import TokenCounter, _open_tail, approximate_tokens

__all__ = [
    "BreakCause",
    "HistoryChange",
    "PrefixBreak",
    "describe_cut",
    "describe_processing",
]

Range: TypeAlias = tuple[int, int]
"""A half-open range ``(start, end)`` of message indices."""

BreakCause: TypeAlias = Literal[
    "tools", "instructions", "cut", "summary", "cleared", "thinking", "edited", "shortened"
]
"""Why a request's prefix differs from the previous request's."""


@frozen
class HistoryChange:
    """What a history processor did (indices refer to its INPUT).

    Attributes:
        processor: The processor's name (its ``repr``).
        removed: Ranges of input messages dropped (a cut from the front is ``(0, n)``).
        summarized: Ranges of input messages a summary message stands for.
        rewritten: Input messages kept in place with other content (a cleared tool
            result, thinking dropped).
        first_change: Index of the first input message not kept unchanged in place:
            the prefix before it stays cached, everything from it on is sent anew.
        messages_before: How many messages went in.
        messages_after: How many came out.
        tokens_before: Tokens of the non-system input messages, by the counter.
        tokens_after: Tokens of the non-system output messages.
        pairs_kept: Tool results in the output that answer a call before them.
        pending_kept: Ids of the pending calls (the newest turn's calls with no result
            yet, waiting for approval or execution) that the output still holds.
    """

    processor: str
    removed: tuple[Range, ...] = field(default=(), kw_only=True)
    summarized: tuple[Range, ...] = field(default=(), kw_only=True)
    rewritten: tuple[int, ...] = field(default=(), kw_only=True)
    first_change: int = field(default=0, kw_only=True)
    messages_before: int = field(default=0, kw_only=True)
    messages_after: int = field(default=0, kw_only=True)
    tokens_before: int = field(default=0, kw_only=True)
    tokens_after: int = field(default=0, kw_only=True)
    pairs_kept: int = field(default=0, kw_only=True)
    pending_kept: tuple[str, ...] = field(default=(), kw_only=True)

    def describe(self) -> str:
        """One line for a log: what changed and what it cost the cache."""
        what: list[str] = []
        if self.removed:
            what.append("removed " + ", ".join(f"{a}..{b - 1}" for a, b in self.removed))
        if self.summarized:
            what.append("summarized " + ", ".join(f"{a}..{b - 1}" for a, b in self.summarized))
        if self.rewritten:
            what.append(f"rewrote {len(self.rewritten)} messages")
        pending = f", {len(self.pending_kept)} pending calls kept" if self.pending_kept else ""
        return (
            f"{self.processor}: {'; '.join(what) or 'changed'} "
            f"(messages {self.messages_before} -> {self.messages_after}, tokens "
            f"{self.tokens_before} -> {self.tokens_after}, {self.pairs_kept} pairs kept"
            f"{pending}; prefix kept up to message {self.first_change})"
        )


def _call_ids(message: Message) -> tuple[str | None, ...]:
    return tuple(c.id for c in message.tool_calls)


def _same_place(a: Message, b: Message) -> bool:
    """Whether ``a`` stands for ``b`` with other content: role, ids, tool name, calls."""
    return (
        a.role is b.role
        and a.tool_call_id == b.tool_call_id
        and a.tool_name == b.tool_name
        and _call_ids(a) == _call_ids(b)
    )


def _stands_for(a: Message, b: Message) -> bool:
    """Whether ``a`` is ``b``, or ``b`` rewritten in place (a message with ids: a tool
    result, an assistant turn with calls)."""
    if a == b:
        return True
    has_ids = a.tool_call_id is not None or any(c.id is not None for c in a.tool_calls)
    return has_ids and _same_place(a, b)


def _ranges(indices: Sequence[int]) -> tuple[Range, ...]:
    out: list[Range] = []
    for index in sorted(indices):
        if out and out[-1][1] == index:
            out[-1] = (out[-1][0], index + 1)
        else:
            out.append((index, index + 1))
    return tuple(out)


def _pairs(history: Sequence[Message]) -> int:
    called: set[str | None] = set()
    pairs = 0
    for message in history:
        if message.role is Role.ASSISTANT:
            called.update(c.id for c in message.tool_calls if c.id is not None)
        elif message.role is Role.TOOL and message.tool_call_id in called:
            pairs += 1
    return pairs


def _tokens(history: Sequence[Message], counter: TokenCounter) -> int:
    return sum(counter(m) for m in history if m.role is not Role.SYSTEM)


def describe_processing(
    before: Sequence[Message],
    after: Sequence[Message],
    *,
    processor: str = "history processor",
    counter: TokenCounter = approximate_tokens,
) -> HistoryChange | None:
    """What turned ``before`` into ``after``; ``None`` when nothing changed.

    Messages are matched from the newest back: an output message equal to an input
    message is kept; one in the same place with other content is rewritten; a summary
    message stands for every input message before the kept ones; input messages
    matched by nothing are removed.

    Args:
        before: A processor's input.
        after: Its output.
        processor: The processor's name for the report.
        counter: Tokens per message.

    Returns:
        The ``HistoryChange``, or ``None`` when ``after`` equals ``before``. Total and
        deterministic.
    """
    if len(before) == len(after) and all(a == b for a, b in zip(before, after, strict=True)):
        return None
    removed: list[int] = []
    rewritten: list[int] = []
    summarized: list[Range] = []
    i, j = len(before) - 1, len(after) - 1
    while j >= 0 and i >= 0:
        out = after[j]
        if out == before[i]:
            i, j = i - 1, j - 1
        elif is_summary(out) and not is_summary(before[i]):
            summarized.append((0, i + 1))
            i = -1
        elif _same_place(out, before[i]):
            rewritten.append(i)
            i, j = i - 1, j - 1
        else:
            removed.append(i)
            i -= 1
    removed.extend(range(i + 1))
    if summarized:  # system messages kept in front of a summary are not summarized
        kept_head = {m for m in after if m.role is Role.SYSTEM}
        removed = [k for k in removed if before[k] not in kept_head]
    starts = [k for k, _ in summarized] + removed + rewritten
    first = min(starts) if starts else min(len(before), len(after))
    pending = _open_tail(before)
    kept_ids = {c.id for m in after for c in m.tool_calls}
    pending_kept = (
        tuple(c.id for c in before[pending].tool_calls if c.id is not None and c.id in kept_ids)
        if pending is not None
        else ()
    )
    return HistoryChange(
        processor,
        removed=_ranges(removed),
        summarized=tuple(summarized),
        rewritten=tuple(sorted(rewritten)),
        first_change=first,
        messages_before=len(before),
        messages_after=len(after),
        tokens_before=_tokens(before, counter),
        tokens_after=_tokens(after, counter),
        pairs_kept=_pairs(after),
        pending_kept=pending_kept,
    )


@frozen
class PrefixBreak:
    """Where and why a request's cacheable prefix differs from the previous request's.

    Attributes:
        cause: ``tools`` (a tool definition changed, was added in front or removed),
            ``instructions``, ``cut`` (messages removed from the history), ``summary``
            (a summary took their place), ``cleared`` (a tool result's content was
            cleared), ``thinking`` (thinking was dropped from a message), ``edited``
            (an earlier message was changed otherwise), ``shortened`` (the request
            holds fewer messages and nothing else changed).
        message_index: The first differing index of the previous request's messages;
            ``None`` for tools and instructions.
        detail: One sentence naming what differs (ids and indices, never content).
    """

    cause: BreakCause
    message_index: int | None
    detail: str


def _without_thinking(message: Message) -> tuple[object, ...]:
    return tuple(p for p in message.parts if type(p) is not ThinkingPart)


def _sent(message: Message) -> tuple[object, ...]:
    """What of ``message`` a provider is sent: never its stamps, usage or origin."""
    return (message.role, message.parts, message.tool_call_id, message.tool_name, message.failed)


def _lost_thinking(new: Message, old: Message) -> bool:
    """Whether ``new`` is ``old`` with its thinking dropped (and nothing else changed)."""
    return new.parts != old.parts and new.parts == _without_thinking(old)


def describe_cut(previous: ModelRequest, current: ModelRequest) -> PrefixBreak | None:
    """The first difference a prompt cache sees between two requests, and its cause.

    Providers cache a request's prefix in the order they read it: tool definitions,
    instructions, then messages. ``current`` extends ``previous`` when its tools and
    instructions are equal and its messages start with all of ``previous``'s, compared
    as a provider is sent them (stamps, usage and origin are never sent).

    Args:
        previous: The previous request of the same conversation.
        current: The request about to be sent.

    Returns:
        ``None`` when ``current`` extends ``previous`` (the whole previous prompt can be
        served from the cache), else the ``PrefixBreak``. Total and deterministic.
    """
    if previous.tools != current.tools:
        k = next(
            (
                k
                for k, (a, b) in enumerate(zip(previous.tools, current.tools, strict=False))
                if a != b
            ),
            min(len(previous.tools), len(current.tools)),
        )
        name = (current.tools[k] if k < len(current.tools) else previous.tools[k]).name
        return PrefixBreak("tools", None, f"tool definition {k} ({name!r}) differs")
    if previous.instructions != current.instructions:
        return PrefixBreak("instructions", None, "the instructions differ")
    old, new = previous.messages, current.messages
    k = next(
        (k for k, (a, b) in enumerate(zip(old, new, strict=False)) if _sent(a) != _sent(b)),
        min(len(old), len(new)),
    )
    if k == len(old):
        return None
    if k == len(new):
        return PrefixBreak("shortened", k, f"the request ends after message {k - 1} of {len(old)}")
    moved = next((m for m in range(k + 1, len(old)) if _stands_for(new[k], old[m])), None)
    if moved is not None:
        return PrefixBreak("cut", k, f"messages {k}..{moved - 1} were removed")
    if is_summary(new[k]):
        return PrefixBreak("summary", k, f"a summary replaces messages from {k} on")
    if _same_place(new[k], old[k]):
        if new[k].role is Role.TOOL and new[k].text == DEFAULT_CLEARED_PLACEHOLDER:
            return PrefixBreak("cleared", k, f"tool result {k} ({new[k].tool_call_id}) was cleared")
        if _lost_thinking(new[k], old[k]):
            return PrefixBreak("thinking", k, f"thinking was dropped from message {k}")
    positions = {_sent(m): i for i, m in enumerate(old)}
    shifted = next(
        (j for j in range(k + 1, len(new)) if positions.get(_sent(new[j]), j) != j),
        None,
    )
    if shifted is not None:  # the history now starts elsewhere (a cut moved back or forth)
        return PrefixBreak(
            "cut",
            k,
            f"the history changed from message {k}: message {positions[_sent(new[shifted])]} of the"
            f" previous request is message {shifted} now",
        )
    return PrefixBreak("edited", k, f"message {k} ({old[k].role.value}) was changed")
