"""Invariants of the history processors, on the shared strategies.

Every property runs on ``histories()`` (any shape, broken pairing included) and on
``valid_histories()`` (provider-valid). The processors are checked against a brute-force
reference written from the rule itself; no property measures time.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success
from strategies import (
    histories,
    history_processors,
    max_messages,
    max_tokens,
    one_token,
    token_counters,
    valid_histories,
)

from golem_core import (
    HistoryError,
    HistoryProcessor,
    Message,
    Role,
    TokenCounter,
    ToolCallPart,
    approximate_tokens,
    budget_history,
    budget_window,
    compose,
    trim_history,
)
from golem_core.history._history import check_pairing, repair_history

any_histories = st.one_of(histories(), histories(max_size=40), valid_histories(max_turns=8))

Outcome = Result[tuple[Message, ...], HistoryError]


# -- a reference, written from the rule, quadratic and obvious --------------------------


def can_open(history: Sequence[Message], index: int) -> bool:
    """A user message, or an assistant message each of whose calls has a result after it
    that pairs with it (a result pairs with the nearest earlier turn holding its id)."""
    message = history[index]
    if message.role == Role.USER:
        return True
    if message.role != Role.ASSISTANT:
        return False
    for call in message.parts:
        if type(call) is not ToolCallPart or call.id is None:
            continue
        answered = False
        for later in range(index + 1, len(history)):
            other = history[later]
            if other.role == Role.ASSISTANT and any(
                type(p) is ToolCallPart and p.id == call.id for p in other.parts
            ):
                break  # a newer turn holding the id takes every later result
            if other.role == Role.TOOL and other.tool_call_id == call.id:
                answered = True
                break
        if not answered:
            return False
    return True


def counted(history: Sequence[Message]) -> list[Message]:
    return [m for m in history if m.role != Role.SYSTEM]


def pending_turn(history: Sequence[Message]) -> int | None:
    """The newest assistant turn, when only tool or system messages follow it and one of
    its calls has no result among them (a call waiting for its result or approval)."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == Role.ASSISTANT:
            results = {m.tool_call_id for m in history[index + 1 :]}
            ids = {p.id for p in message.parts if type(p) is ToolCallPart and p.id is not None}
            return index if ids - results else None
        if message.role not in (Role.TOOL, Role.SYSTEM):
            return None
    return None


def reference(history: tuple[Message, ...], fits: object) -> tuple[str, tuple[Message, ...] | None]:
    """("unchanged" | "cut" | "failed", output) from the longest fitting suffix (the
    sliding window), moved back to keep a pending call."""
    assert callable(fits)
    cut = next(c for c in range(len(history) + 1) if fits(history[c:]))
    if cut == 0:
        return "unchanged", history
    for start in range(cut, len(history)):
        if can_open(history, start):
            pending = pending_turn(history)
            if pending is not None and start > pending:
                # back to the latest message before it that opens a request in its block
                start = next(
                    (i for i in range(pending - 1, -1, -1) if opens_in_block(history, i)), -1
                )
                if start < 0:
                    return "failed", None
            return ("unchanged", history) if start == 0 else ("cut", history[start:])
    return "failed", None


def opens_in_block(history: Sequence[Message], index: int) -> bool:
    """A user message, or an assistant message whose calls the tool messages directly
    after it answer."""
    message = history[index]
    if message.role == Role.USER:
        return True
    if message.role != Role.ASSISTANT:
        return False
    ids = {p.id for p in message.parts if type(p) is ToolCallPart and p.id is not None}
    following = index + 1
    while ids and following < len(history) and history[following].role == Role.TOOL:
        ids.discard(history[following].tool_call_id)
        following += 1
    return not ids


def trim_fits(limit: int) -> object:
    return lambda suffix: len(counted(suffix)) <= limit


def budget_fits(counter: TokenCounter, limit: int) -> object:
    return lambda suffix: sum(counter(m) for m in counted(suffix)) <= limit


def check_against_reference(history: tuple[Message, ...], outcome: Outcome, fits: object) -> None:
    kind, expected = reference(history, fits)
    match outcome:
        case Success(out):
            assert kind != "failed"
            assert out == expected
            if kind == "unchanged":
                assert out is history
            else:
                assert out, "a successful cut is never empty"
                assert can_open(out, 0)
            # a suffix of the input, its messages the very objects
            offset = len(history) - len(out)
            assert all(a is b for a, b in zip(out, history[offset:], strict=True))
        case Failure(error):
            assert kind == "failed"
            assert str(error) == error.message and error.message


# -- the rule ---------------------------------------------------------------------------


@given(any_histories, max_messages)
def test_trim_matches_the_reference(history: tuple[Message, ...], limit: int) -> None:
    outcome = trim_history(limit, low_water=limit)(history)
    check_against_reference(history, outcome, trim_fits(limit))
    if isinstance(outcome, Success):
        assert len(counted(outcome.unwrap())) <= limit


@given(any_histories, token_counters, max_tokens)
def test_budget_matches_the_reference(
    history: tuple[Message, ...], counter: TokenCounter, limit: int
) -> None:
    outcome = budget_history(counter, limit, low_water=limit)(history)
    check_against_reference(history, outcome, budget_fits(counter, limit))
    if isinstance(outcome, Success):
        assert sum(counter(m) for m in counted(outcome.unwrap())) <= limit


@given(any_histories, token_counters, max_tokens)
def test_budget_counts_only_the_fitting_suffix_and_the_first_misfit_once(
    history: tuple[Message, ...], counter: TokenCounter, limit: int
) -> None:
    seen: list[Message] = []

    def recording(message: Message) -> int:
        seen.append(message)
        return counter(message)

    budget_history(recording, limit, low_water=limit)(history)
    newest_first = counted(history)[::-1]
    fitting = 0
    total = 0
    for message in newest_first:
        total += counter(message)
        if total > limit:
            break
        fitting += 1
    expected = newest_first[: fitting + 1]  # the misfit too, when there is one
    assert len(seen) == len(expected)
    assert all(a is b for a, b in zip(seen, expected, strict=True))


@given(any_histories)
def test_short_histories_come_back_unchanged(history: tuple[Message, ...]) -> None:
    limit = len(counted(history))
    for unchanged in (trim_history(max(limit, 1)), budget_history(one_token, max(limit, 1))):
        assert unchanged(history).unwrap() is history
        assert unchanged(list(history)).unwrap() == history


@given(any_histories, history_processors())
def test_processors_are_idempotent_and_deterministic(
    history: tuple[Message, ...], processor: HistoryProcessor
) -> None:
    first = processor(history)
    assert processor(history) == first
    assert processor(list(history)) == first
    if isinstance(first, Success):
        out = first.unwrap()
        assert processor(out).unwrap() is out


# -- pairing: a cut of a provider-valid history is provider-valid -------------------------


@given(st.one_of(valid_histories(max_turns=8), histories(max_size=30)), history_processors())
def test_a_cut_keeps_a_valid_history_valid(
    history: tuple[Message, ...], processor: HistoryProcessor
) -> None:
    assume(check_pairing(history) == ())
    match processor(history):
        case Success(out):
            assert check_pairing(out) == ()
            assert repair_history(out) == out  # repair synthesizes and drops nothing
        case _:
            pass


@given(any_histories, history_processors())
def test_a_cut_never_leaves_repair_a_result_to_synthesize_for_its_opening_turn(
    history: tuple[Message, ...], processor: HistoryProcessor
) -> None:
    match processor(history):
        case Success(out) if out is not history:
            assert out[0].role in (Role.USER, Role.ASSISTANT)
            problems = check_pairing(out)
            assert not [p for p in problems if p.kind == "dangling" and p.message_index == 0]
        case _:
            pass


# -- algebra ------------------------------------------------------------------------------


@given(any_histories, history_processors(), history_processors())
def test_compose_is_bind(
    history: tuple[Message, ...], p: HistoryProcessor, q: HistoryProcessor
) -> None:
    assert compose(p, q)(history) == p(history).bind(q)
    assert compose()(history).unwrap() is history
    assert compose(compose(p, q), compose())(history) == compose(p, q)(history)


@given(any_histories, max_messages, max_messages)
def test_trims_compose_as_the_smaller(history: tuple[Message, ...], a: int, b: int) -> None:
    chained = compose(trim_history(a, low_water=a), trim_history(b, low_water=b))(history)
    direct = trim_history(min(a, b), low_water=min(a, b))(history)
    assert isinstance(chained, Success) == isinstance(direct, Success)
    if isinstance(direct, Success):
        assert chained == direct


@given(any_histories, token_counters, max_tokens, max_tokens)
def test_budgets_compose_as_the_smaller(
    history: tuple[Message, ...], counter: TokenCounter, a: int, b: int
) -> None:
    chained = compose(
        budget_history(counter, a, low_water=a), budget_history(counter, b, low_water=b)
    )(history)
    direct = budget_history(counter, min(a, b), low_water=min(a, b))(history)
    assert isinstance(chained, Success) == isinstance(direct, Success)
    if isinstance(direct, Success):
        assert chained == direct


@given(any_histories, max_messages)
def test_a_budget_of_one_token_per_message_is_a_trim(
    history: tuple[Message, ...], limit: int
) -> None:
    by_budget = budget_history(one_token, limit)(history)
    by_count = trim_history(limit)(history)
    assert by_budget == budget_history(one_token, limit)(history)
    assert isinstance(by_budget, Success) == isinstance(by_count, Success)
    if isinstance(by_count, Success):
        assert by_budget == by_count
    by_budget = budget_history(one_token, limit, low_water=limit)(history)
    by_count = trim_history(limit, low_water=limit)(history)
    assert isinstance(by_budget, Success) == isinstance(by_count, Success)
    if isinstance(by_count, Success):
        assert by_budget == by_count


# -- approximate_tokens -------------------------------------------------------------------


@given(any_histories)
def test_approximate_tokens_is_positive_deterministic_and_adds_up_over_parts(
    history: tuple[Message, ...],
) -> None:
    for message in history:
        tokens = approximate_tokens(message)
        assert tokens >= 4
        assert approximate_tokens(message) == tokens
        singles = [approximate_tokens(Message(message.role, (p,))) - 4 for p in message.parts]
        assert tokens == 4 + sum(singles)


# -- windows: what a budget reads (budget_window, ADR 0107) -----------------------------


@given(any_histories, any_histories, token_counters, max_tokens, st.data())
def test_a_budget_returns_from_its_window_what_it_returns_from_the_whole(
    history: tuple[Message, ...],
    later: tuple[Message, ...],
    counter: TokenCounter,
    limit: int,
    data: st.DataObject,
) -> None:
    """The window starts on a step point: the processor returns from it what it returns
    from the whole history, and as the history grows a window found from the last one's
    start is the window found from the start (so a store reads from there on)."""
    low_water = data.draw(st.integers(1, limit), label="low_water")
    processor = budget_history(counter, limit, low_water=low_water)
    window = budget_window(processor, history)
    assert window is not None and 0 <= window.start <= len(history)
    start = window.start
    assert window.fits == (processor(history) == Success(history))
    assert processor(history[start:]) == processor(history)
    grown = history + later
    found = budget_window(processor, grown[start:])
    assert found is not None
    anchored = start + found.start
    whole = budget_window(processor, grown)
    assert whole is not None and anchored == whole.start
    if start:  # the suffix from a step point before the cut only grows: it never fits
        assert not found.fits
    assert processor(grown[anchored:]) == processor(grown)
    assert budget_window(compose(processor, trim_history(3)), grown) == whole
    assert budget_window(trim_history(3), grown) is None
