"""History processors: bounding a conversation before a run sends it.

Owns ``HistoryProcessor`` (a function from history to ``Result[history, HistoryError]``),
the builtins ``trim_history`` (a message count) and ``budget_history`` (a token budget),
``compose``, and token counting: ``TokenCounter``, the deterministic ``approximate_tokens``
and ``token_counter``, which applies the same per-part rules to any text tokenizer (the
shell's exact ``tiktoken_counter`` is one). Over 600 lines because the two builtins share
one cut, one boundary rule and one set of error messages, which belong together.

Both builtins follow one rule, and keep these invariants:

- **The cut, in steps** (ADR 0078). A history within the bound comes back unchanged.
  Past it, the cut removes whole steps of at least ``limit - low_water`` (messages or
  tokens), each from one step point to the next (a step point is the start, or the
  first message at which the count since the previous step point reaches the step),
  the fewest that bring it within the bound; ``low_water`` defaults to half the bound.
  Step points depend only on the messages before them, so they never change as a
  conversation grows: the cut point moves only once per step of growth, and between
  two moves every request's history is the previous one's plus new messages: a prompt
  cache serves it. ``low_water == limit`` is the sliding window (keep the newest
  messages that fit, cutting on every request once full). System messages are free:
  they never count toward the bound (a run replaces every system message of its
  history with its own instructions, so they are never sent), are kept where they sit
  inside the kept suffix, and so keeping or skipping one never costs the cut a message.
- **A pending call is never cut**: the newest assistant turn whose calls have no
  result after it (waiting for approval, a deferred result or execution) is kept, the
  cut moving back to the message that opens its turn.
- **The boundary.** When a cut happens, advance past every message that cannot open a
  request, so that the cut leaves repair nothing to synthesize or drop at the start. A
  message can open a request when it is a user message, or an assistant message each of
  whose tool calls (those with an id) has a result after it in the kept suffix, paired
  as repair pairs them: a result answers the nearest earlier turn that holds its id (a
  message with no calls qualifies). Skipped: tool results (their requesting call was
  cut), assistant tool-call turns whose results were cut (placed before the call) or
  never came, and system messages (replaced by instructions; they cannot vouch for a
  tool result after them). So a cut of a provider-valid history is provider-valid.
- A history within the bound comes back unchanged: the very tuple when given a tuple
  (the boundary rule applies only when a cut happens). A cut that leaves nothing able
  to open a request is ``Failure(HistoryError)``; a successful cut is never empty.
- The output is a suffix of the input: no kept message is changed, none reordered.
- Linear: ``budget_history`` reads a history within the bound from the newest back only
  as far as the bound (plus the one message that did not fit), and a stepped cut then
  reads the rest once, calling its counter at most once per message; ``trim_history``
  reads each message's role once (``map`` and ``list.count``, no Python-level pass) and
  finds both cut points by searching that list for system messages; the boundary rule
  reads the messages it skips and the block of the message that opens, and only for a
  turn whose results are not in its block, one more backward pass to pair them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias, assert_never

from attrs import field, frozen
from returns.result import Failure, Result, Success

from golem_core._messages import (
    DataPart,
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
)

__all__ = [
    "BudgetWindow",
    "HistoryError",
    "HistoryProcessor",
    "TokenCounter",
    "approximate_tokens",
    "budget_history",
    "budget_window",
    "compose",
    "message_window",
    "token_counter",
    "trim_history",
]


@frozen
class HistoryError:
    """Why a history processor could not produce a history: one actionable sentence."""

    message: str

    def __str__(self) -> str:
        return self.message


HistoryProcessor: TypeAlias = Callable[[Sequence[Message]], Result[tuple[Message, ...], Any]]
"""Rewrites a history once per run, before repair: ``Success(history)`` or ``Failure`` of
any error (golem's own processors fail with ``HistoryError``). The one processor type: the
agent, the loop and ``compose`` all take it."""

TokenCounter: TypeAlias = Callable[[Message], int]
"""Counts the tokens one message costs; must return a non-negative ``int``."""


# -- token counting -------------------------------------------------------------------

_MESSAGE_TOKENS: Final = 4
"""Fixed cost of every message: role and framing."""
_PART_TOKENS: Final = 2
"""Fixed cost of every part a provider sees (unknown parts are never sent: 0)."""
_MEDIA_TOKENS: Final[Mapping[str, int]] = {
    "image": 1_000,
    "audio": 2_000,
    "video": 10_000,
    "document": 3_000,
}
_UNKNOWN_MEDIA_TOKENS: Final = 10_000


def _approximate_text(text: str) -> int:
    return (len(text) + 3) // 4


def _count_message(message: Message, text_tokens: Callable[[str], int]) -> int:
    total = _MESSAGE_TOKENS
    for part in message.parts:
        match part:
            case TextPart() | ThinkingPart():
                total += _PART_TOKENS + text_tokens(part.text)
            case ToolCallPart():
                total += _PART_TOKENS + text_tokens(part.name) + text_tokens(part.arguments)
            case URLPart() | DataPart():
                total += _PART_TOKENS + _MEDIA_TOKENS.get(part.kind, _UNKNOWN_MEDIA_TOKENS)
            case UnknownPart():
                pass
            case _:  # pragma: no cover
                assert_never(part)
    return total


def approximate_tokens(message: Message) -> int:
    """An estimate of the tokens ``message`` costs, without a tokenizer.

    The rules, all fixed: 4 tokens per message; 2 per part; text, thinking (redacted
    too), and a tool call's name and arguments at ``ceil(characters / 4)`` each;
    a URL or data part at a flat cost by kind, whatever its size: image 1,000, audio
    2,000, video 10,000, document 3,000 (an unknown kind 10,000); an unknown part 0,
    since providers never see it. Characters are code points, so text in scripts
    that tokenize densely (CJK) is underestimated; use an exact counter
    (``golem_shell.tiktoken_counter``) where that matters.

    Args:
        message: Any message.

    Returns:
        A positive token estimate.

    Total and deterministic; it reads only ``message.parts``, so messages with equal
    parts cost the same, and the cost of parts adds up.
    """
    return _count_message(message, _approximate_text)


def token_counter(text_tokens: Callable[[str], int]) -> TokenCounter:
    """A ``TokenCounter`` that counts text with ``text_tokens``, the rest as ``approximate_tokens``.

    Text, thinking, a tool call's name and its arguments are counted by ``text_tokens``;
    the fixed costs (per message, per part, per media kind) are ``approximate_tokens``'.
    ``token_counter(lambda s: (len(s) + 3) // 4)`` counts exactly as
    ``approximate_tokens`` does.

    Args:
        text_tokens: The number of tokens in a string (for example the length of a
            tokenizer's encoding); must return a non-negative ``int``.

    Returns:
        A counter, deterministic when ``text_tokens`` is.

    Raises:
        TypeError: ``text_tokens`` is not callable.
    """
    if not callable(text_tokens):
        raise TypeError(f"token_counter(text_tokens): expected a callable, got {text_tokens!r}")

    def count(message: Message) -> int:
        return _count_message(message, text_tokens)

    count.__qualname__ = count.__name__ = f"token_counter({_name_of(text_tokens)})"
    return count


# -- the boundary rule ----------------------------------------------------------------


def _call_ids(message: Message) -> set[str]:
    return {p.id for p in message.parts if type(p) is ToolCallPart and p.id is not None}


def _answered_in_block(history: Sequence[Message], index: int, pending: set[str]) -> bool:
    """Whether the tool messages directly after ``index`` answer every id of ``pending``."""
    following = index + 1
    end = len(history)
    while pending and following < end and history[following].role == Role.TOOL:
        pending.discard(history[following].tool_call_id)
        following += 1
    return not pending


def _answered_turns(history: Sequence[Message], start: int) -> set[int]:
    """The assistant turns of ``history[start:]`` whose calls all have a result after them.

    Results pair as repair pairs them: a result answers the nearest earlier turn that
    holds its id. One backward pass: each turn claims the unclaimed results of its ids.
    """
    answered: set[int] = set()
    unclaimed: set[str] = set()
    for index in range(len(history) - 1, start - 1, -1):
        message = history[index]
        if message.role == Role.TOOL:
            if message.tool_call_id is not None:
                unclaimed.add(message.tool_call_id)
        elif message.role == Role.ASSISTANT:
            ids = _call_ids(message)
            if ids <= unclaimed:
                answered.add(index)
            unclaimed -= ids
    return answered


def _opening_index(history: Sequence[Message], start: int) -> int:
    """The first index at or after ``start`` whose message can open a request, else ``len``.

    A user message can; an assistant message can when each of its calls has a result
    after it. Most turns show that in their block (the tool messages directly after
    them); for one that does not, one backward pass over ``history[start:]`` pairs the
    rest, at most once. Linear.
    """
    end = len(history)
    answered: set[int] | None = None
    index = start
    while index < end:
        message = history[index]
        if message.role == Role.USER:
            return index
        if message.role == Role.ASSISTANT:
            if _answered_in_block(history, index, _call_ids(message)):
                return index
            if answered is None:
                answered = _answered_turns(history, start)
            if index in answered:
                return index
        index += 1
    return end


def _as_tuple(history: Sequence[Message]) -> tuple[Message, ...]:
    return history if type(history) is tuple else tuple(history)


def _suffix(history: Sequence[Message], start: int) -> tuple[Message, ...]:
    if isinstance(history, tuple | list):
        return tuple(history[start:])
    return tuple(history[index] for index in range(start, len(history)))


def _describe(history: Sequence[Message], start: int) -> str:
    """What the messages ``history[start:]``, none able to open a request, are."""
    tools = assistants = systems = 0
    for index in range(start, len(history)):
        role = history[index].role
        if role == Role.TOOL:
            tools += 1
        elif role == Role.ASSISTANT:
            assistants += 1
        else:
            systems += 1
    kinds = [
        (count, singular, plural)
        for count, singular, plural in (
            (tools, "tool result", "tool results"),
            (
                assistants,
                "assistant tool-call turn with no results after it",
                "assistant tool-call turns with no results after them",
            ),
            (systems, "system message", "system messages"),
        )
        if count
    ]
    if len(kinds) == 1:
        count, singular, plural = kinds[0]
        return f"is a {singular}" if count == 1 else f"are {plural}"
    named = [f"{count} {singular if count == 1 else plural}" for count, singular, plural in kinds]
    return "are " + ", ".join(named[:-1]) + " and " + named[-1]


_OPENING_RULE: Final = (
    "a request opens with a user message, or an assistant message whose tool calls all "
    "have results after it"
)


def _name_of(function: object) -> str:
    return str(getattr(function, "__qualname__", None) or repr(function))


def _check_limit(function: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{function}({name}): {name} must be an int of at least 1, got {value!r}")
    if value < 1:
        raise ValueError(
            f"{function}({name}): {name} must be at least 1, got {value}; "
            "to send no history, run without one"
        )
    return value


# -- the cut ----------------------------------------------------------------------------


def _open_tail(history: Sequence[Message]) -> int | None:
    """The index of the newest assistant turn when a call of it waits for its result.

    Only tool (and system) messages may follow it, and some call of it with an id has no
    result among them: a call that is pending (waiting for approval, a deferred result or
    its execution). A cut never removes it.
    """
    index = len(history) - 1
    results: set[str | None] = set()
    while index >= 0 and history[index].role in (Role.TOOL, Role.SYSTEM):
        results.add(history[index].tool_call_id)
        index -= 1
    if index < 0 or history[index].role != Role.ASSISTANT:
        return None
    return index if _call_ids(history[index]) - results else None


def _protect_open_tail(history: Sequence[Message], start: int) -> int | None:
    """``start``, or an earlier opening index that keeps a pending call; ``None`` if none."""
    pending = _open_tail(history)
    if pending is None or start <= pending:
        return start
    for index in range(pending - 1, -1, -1):
        message = history[index]
        if message.role == Role.USER:
            return index
        if message.role == Role.ASSISTANT and _answered_in_block(
            history, index, _call_ids(message)
        ):
            return index
    return None


def _step_points(counts: Sequence[int], total: int, limit: int, low_water: int) -> tuple[int, int]:
    """The first step point whose suffix counts at most ``limit``, and the step point
    before it (both ``0`` when everything fits; ``len`` when none fits).

    The step points are ``0`` and then, each from the one before, the first index at
    which the counts since the previous step point reach the step (``limit -
    low_water``): every step removes at least a step. Each point depends only on the
    counts before it, so the points never change as the history grows and the cut moves
    only when the suffix from it passes ``limit``. Counting each step from the one
    before (not from the start) makes any step point a start as good as ``0``: the
    points after it are the same, which is what lets a store load a window from one
    (``budget_window``, ADR 0107); with unit counts they are the multiples of the
    step.
    """
    step = limit - low_water
    before, point, rest, end = 0, 0, total, len(counts)
    while rest > limit:
        before, reached = point, 0
        while reached < step:
            if point >= end:
                return before, end
            reached += counts[point]
            point += 1
        rest -= reached
    return before, point


def _check_low_water(function: str, limit_name: str, limit: int, value: object) -> int:
    if value is None:
        return limit - limit // 2
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"{function}(low_water): low_water must be None or an int from 1 to {limit_name}, "
            f"got {value!r}"
        )
    if not 1 <= value <= limit:
        raise ValueError(
            f"{function}(low_water): low_water must be from 1 to {limit_name} ({limit}), "
            f"got {value}; low_water={limit_name} is the sliding window"
        )
    return value


def _low_water_repr(limit: int, low_water: int) -> str:
    return "" if low_water == limit - limit // 2 else f", low_water={low_water}"


_PENDING: Final = (
    "the newest assistant turn has a call waiting for its result, and no message before "
    "it can open a request; a processor never drops a pending call"
)


def _cut(
    history: Sequence[Message],
    counts: Sequence[int],
    total: int,
    *,
    fit_cut: int,
    limit: int,
    low_water: int,
) -> int | None:
    """Where the kept suffix starts (``0``: unchanged), or ``None`` when nothing opens.

    ``counts`` holds every message's count (system messages 0) when ``low_water`` is
    below ``limit``; ``fit_cut`` is the sliding window's cut (the longest fitting
    suffix), used when ``low_water == limit``.
    """
    point = fit_cut if low_water == limit else _step_points(counts, total, limit, low_water)[1]
    return _cut_at(history, point)


def _cut_at(history: Sequence[Message], point: int) -> int | None:
    """Where the kept suffix starts when the cut falls at ``point``: the first message at
    or after it that can open a request, moved back to keep a pending call; ``None`` when
    nothing opens."""
    start = _opening_index(history, point)
    if start >= len(history):
        return None
    return _protect_open_tail(history, start)


_ROLE: Final = operator.attrgetter("role")


def _after_counted(roles: list[Role], target: int) -> int:
    """The first index whose prefix holds ``target`` non-system messages (``len`` if none).

    ``_step_point``'s answer when every non-system message counts one, found with C-level
    searches instead of a Python pass: start at ``target`` and move one on for each
    system message before the candidate (``list.index``), so the work is the number of
    system messages, not of messages.
    """
    index, searched, end = target, 0, len(roles)
    while index <= end:
        try:
            found = roles.index(Role.SYSTEM, searched, index)
        except ValueError:
            return index
        index, searched = index + 1, found + 1
    return end


@frozen(repr=False)
class _TrimHistory:
    max_messages: int
    low_water: int = field(kw_only=True)

    def __call__(self, history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
        limit = self.max_messages
        # every non-system message counts one: the roles, read once at C speed, give the
        # total and both cut points without a Python pass over the messages
        roles = list(map(_ROLE, history))
        total = len(roles) - roles.count(Role.SYSTEM)
        if total <= limit:
            return Success(_as_tuple(history))
        cut = _after_counted(roles, total - limit)  # the sliding window's cut
        if self.low_water < limit:
            step = limit - self.low_water
            cut_point = _after_counted(roles, -(-(total - limit) // step) * step)
        else:
            cut_point = cut
        start = _cut_at(history, cut_point)
        if start is not None:
            return Success(_as_tuple(history) if start == 0 else _suffix(history, start))
        kept = len(history) - cut
        newest = "newest message" if kept == 1 else f"newest {kept} messages"
        if _open_tail(history) is not None and _opening_index(history, cut) < len(history):
            reason = _PENDING
        else:
            reason = f"the {newest} {_describe(history, cut)}; {_OPENING_RULE}"
        return Failure(
            HistoryError(
                f"{self!r} left no message that can open a request: {reason}. Raise "
                "max_messages so that the cut keeps the turn that opened them."
            )
        )

    def __repr__(self) -> str:
        return (
            f"trim_history({self.max_messages}{_low_water_repr(self.max_messages, self.low_water)})"
        )


def trim_history(max_messages: int, *, low_water: int | None = None) -> HistoryProcessor:
    """A processor that bounds a history to ``max_messages`` messages, cutting in steps.

    A history of at most ``max_messages`` non-system messages comes back unchanged
    (system messages are free: a run replaces them with its instructions). Past that,
    the cut removes whole steps of ``max_messages - low_water`` messages from the
    start, the fewest that bring it within ``max_messages``, so it keeps between
    ``low_water`` and ``max_messages`` messages; then it advances past every message
    that cannot open a request (tool results whose call was cut, assistant tool-call
    turns whose results were cut, system messages). The step points are counted from
    the start of the history, so as a conversation grows each request repeats the
    previous one's history and adds to it, and a prompt cache serves it, until the
    next step (ADR 0078). ``low_water=max_messages`` is the sliding window: keep the
    newest ``max_messages``, cutting on every request once full.

    A pending call (the newest assistant turn's call with no result after it) is never
    cut: the cut moves back to the message that opened its turn.

    Args:
        max_messages: How many non-system messages to keep at most, at least 1.
        low_water: Where a cut brings the history down to, from 1 to
            ``max_messages``; ``None``: ``max_messages - max_messages // 2`` (half).

    Returns:
        The processor. It returns the input unchanged, or a suffix of it of at most
        ``max_messages`` non-system messages starting at a message that can open a
        request, or ``Failure(HistoryError)`` when the cut leaves no such message. It
        is total, deterministic, stateless and idempotent. Processors with equal
        arguments are equal.

    Raises:
        ValueError: ``max_messages`` is not an ``int`` (a ``bool`` is not), or is below 1;
            ``low_water`` is out of range.
    """
    limit = _check_limit("trim_history", "max_messages", max_messages)
    return _TrimHistory(
        limit, low_water=_check_low_water("trim_history", "max_messages", limit, low_water)
    )


def _checked_count(counter: TokenCounter, message: Message, index: int) -> int:
    value = counter(message)
    try:
        if isinstance(value, bool):
            raise TypeError
        count = operator.index(value)
    except TypeError:
        raise TypeError(
            f"token counter {_name_of(counter)} returned {value!r} for message {index}; "
            "a TokenCounter must return a non-negative int"
        ) from None
    if count < 0:
        raise ValueError(
            f"token counter {_name_of(counter)} returned {count} for message {index}; "
            "a TokenCounter must return a non-negative int"
        )
    return count


@frozen(repr=False)
class _BudgetHistory:
    counter: TokenCounter
    max_tokens: int = field(kw_only=True)
    low_water: int = field(kw_only=True)

    def __call__(self, history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
        budget = self.max_tokens
        counts = [0] * len(history)
        total = 0
        kept_counted = 0
        overflow = 0
        cut = len(history)
        while cut > 0:
            message = history[cut - 1]
            if message.role != Role.SYSTEM:
                count = _checked_count(self.counter, message, cut - 1)
                counts[cut - 1] = count
                if total + count > budget:
                    overflow = count
                    break
                total += count
                kept_counted += 1
            cut -= 1
        if cut == 0:
            return Success(_as_tuple(history))
        whole = total
        if self.low_water < budget:
            whole += overflow
            for index in range(cut - 2, -1, -1):
                if history[index].role != Role.SYSTEM:
                    counts[index] = _checked_count(self.counter, history[index], index)
                    whole += counts[index]
        start = _cut(history, counts, whole, fit_cut=cut, limit=budget, low_water=self.low_water)
        if start is not None:
            return Success(_as_tuple(history) if start == 0 else _suffix(history, start))
        if kept_counted == 0:
            newest = "newest message" if cut == len(history) else "newest non-system message"
            return Failure(
                HistoryError(
                    f"{self!r} kept no message: the {newest} alone counts {overflow} "
                    f"tokens. Raise max_tokens to at least {overflow}."
                )
            )
        kept = len(history) - cut
        newest = "newest message" if kept == 1 else f"{kept} newest messages"
        if _open_tail(history) is not None and _opening_index(history, cut) < len(history):
            reason = _PENDING
        else:
            reason = (
                f"the {newest} that fit ({total} tokens) {_describe(history, cut)}; {_OPENING_RULE}"
            )
        return Failure(
            HistoryError(
                f"{self!r} left no message that can open a request: {reason}. Raise "
                "max_tokens so that the cut keeps the turn that opened them."
            )
        )

    def window(self, history: Sequence[Message]) -> BudgetWindow:
        """Where the newest part of ``history`` that this processor needs starts, when
        ``history`` starts at one of its step points (see ``budget_window``)."""
        counts = [
            0 if m.role == Role.SYSTEM else _checked_count(self.counter, m, i)
            for i, m in enumerate(history)
        ]
        total = sum(counts)
        budget = self.max_tokens
        if total <= budget:
            return BudgetWindow(0, fits=True)
        if self.low_water < budget:
            return BudgetWindow(_step_points(counts, total, budget, self.low_water)[0])
        rest, fit = total, 0
        while rest > budget:  # the sliding window: the longest suffix that fits
            rest -= counts[fit]
            fit += 1
        return BudgetWindow(fit - 1)

    def __repr__(self) -> str:
        low = _low_water_repr(self.max_tokens, self.low_water)
        return f"budget_history({_name_of(self.counter)}, {self.max_tokens}{low})"


def budget_history(
    counter: TokenCounter, max_tokens: int, *, low_water: int | None = None
) -> HistoryProcessor:
    """A processor that bounds a history to ``max_tokens`` tokens, cutting in steps.

    A history whose non-system messages count at most ``max_tokens`` by ``counter``
    comes back unchanged (system messages are free and never counted: a run replaces
    them with its instructions). Past that, the cut removes whole steps, the fewest
    that bring it within ``max_tokens``, then applies ``trim_history``'s boundary rule;
    a pending call is never cut. A step runs from one step point to the next: the step
    points are the start of the history and then, each from the one before, the first
    message at which the tokens since the previous one reach ``max_tokens -
    low_water``. They depend only on the messages before them, so between two steps
    every request's history is the previous one's plus new messages and a prompt cache
    serves it (ADR 0078); and any step point is as good a start as the first message,
    so a store can load the newest part only (``budget_window``, ADR 0107).
    ``low_water=max_tokens`` is the sliding window: keep the longest fitting suffix,
    cutting on every request once full.

    Args:
        counter: Tokens per message, such as ``approximate_tokens`` or
            ``golem_shell.tiktoken_counter()``; called at most once per message, from
            the newest back: in the sliding window never beyond the first message that
            does not fit, in steps on every message once the history does not fit.
        max_tokens: The budget, at least 1.
        low_water: Where a cut brings the history down to, from 1 to ``max_tokens``;
            ``None``: ``max_tokens - max_tokens // 2`` (half).

    Returns:
        The processor. It returns the input unchanged, or a suffix of it whose
        non-system messages count at most ``max_tokens`` (a kept pending call aside),
        starting at a message that can open a request, or ``Failure(HistoryError)``
        when nothing that can open a request fits. It is total (for a counter that
        is), deterministic (for a deterministic counter), stateless and idempotent;
        ``budget_history(lambda m: 1, n, low_water=w)`` is ``trim_history(n,
        low_water=w)``.

    Raises:
        TypeError: ``counter`` is not callable (and, when the processor runs, the
            counter returned something other than an ``int``).
        ValueError: ``max_tokens`` is not an ``int`` (a ``bool`` is not), or is below 1,
            or ``low_water`` is out of range (and, when the processor runs, the counter
            returned a negative count).
    """
    if not callable(counter):
        raise TypeError(
            f"budget_history(counter, max_tokens): counter must be callable, got {counter!r}"
        )
    limit = _check_limit("budget_history", "max_tokens", max_tokens)
    return _BudgetHistory(
        counter,
        max_tokens=limit,
        low_water=_check_low_water("budget_history", "max_tokens", limit, low_water),
    )


@frozen(repr=False)
class _Composed:
    processors: tuple[HistoryProcessor, ...]

    def __call__(self, history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
        current = _as_tuple(history)
        for processor in self.processors:
            match processor(current):
                case Success(value):
                    current = value
                case failure:
                    return failure
        return Success(current)

    def __repr__(self) -> str:
        return f"compose({', '.join(map(repr, self.processors))})"


def compose(*processors: HistoryProcessor) -> HistoryProcessor:
    """One processor that runs ``processors`` left to right, stopping at the first failure.

    Args:
        *processors: Processors; each receives the previous one's output as a tuple.

    Returns:
        The chain. ``compose()`` is the identity (``Success(tuple(history))``),
        ``compose(p)`` is ``p``, and composition is associative: nested chains are
        flattened, so ``compose(compose(p, q), r) == compose(p, compose(q, r))``.
        ``compose(p, q)(h)`` is ``p(h).bind(q)``.

    Raises:
        TypeError: One of ``processors`` is not callable.
    """
    flat: list[HistoryProcessor] = []
    for processor in processors:
        if not callable(processor):
            raise TypeError(f"compose(*processors): expected callables, got {processor!r}")
        if isinstance(processor, _Composed):
            flat.extend(processor.processors)
        else:
            flat.append(processor)
    if len(flat) == 1:
        return flat[0]
    return _Composed(tuple(flat))


def _first_stage(processor: object) -> object:
    """What sees the history first: the first stage of a ``compose(...)`` (``None`` for
    the empty one), else ``processor`` itself."""
    if isinstance(processor, _Composed):
        return processor.processors[0] if processor.processors else None
    return processor


def message_window(processor: object) -> tuple[int, int] | None:
    """The ``trim_history`` numbers that bound what ``processor`` reads, or ``None``.

    ``(max_messages, low_water)`` when ``processor`` is ``trim_history(max_messages,
    low_water=low_water)`` or a ``compose(...)`` whose first stage is one: every later
    stage sees only the trim's output, so the processor returns from the newest part of
    a history that ``trim_history`` needs exactly what it returns from the whole (a
    store's ``load_window(processor=...)`` reads just that part). ``None`` for any other
    processor (``budget_history`` has its own windows: ``budget_window``).

    Total and pure: any object is accepted, and only ``golem_core``'s own processors
    are recognised.
    """
    first = _first_stage(processor)
    if isinstance(first, _TrimHistory):
        return first.max_messages, first.low_water
    return None


@frozen
class BudgetWindow:
    """Where a ``budget_history`` processor's window starts in a history (``start``), and
    whether the history fits its budget whole (``fits``: then ``start`` is ``0`` and the
    processor returns the history unchanged)."""

    start: int
    fits: bool = False


def budget_window(processor: object, history: Sequence[Message]) -> BudgetWindow | None:
    """Where the part of ``history`` that a ``budget_history`` processor reads starts, or
    ``None`` when ``processor`` is not one (nor a ``compose(...)`` that starts with one).

    ``history`` must start at one of the processor's step points: the start of a
    conversation, or the ``start`` an earlier call returned for a shorter version of it
    (a conversation only grows). ``start`` is the step point one step before the
    processor's cut (the sliding window: the message before its cut; ``0`` when the
    history fits, and ``fits`` says so), so ``processor(history[start:]) ==
    processor(history)`` and ``start`` is itself a step point: a store loads, turn after
    turn, only the rows from the last window's start on (``load_window(processor=...,
    after=window)``). A history read from such a start never fits (the suffix from a
    step point before the cut only grows), so ``fits`` there means the start was not
    one. Counts each message once with the processor's counter (system messages count
    nothing).

    Raises:
        TypeError, ValueError: the counter returned something other than a
            non-negative ``int`` (as the processor itself would).
    """
    first = _first_stage(processor)
    if isinstance(first, _BudgetHistory):
        return first.window(history)
    return None
