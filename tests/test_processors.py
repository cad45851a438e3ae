"""History processors: the cut, the boundary rule, token counting, compose, and errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from golem_core import (
    DataPart,
    HistoryError,
    HistoryProcessor,
    Message,
    Role,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    URLPart,
    approximate_tokens,
    budget_history,
    compose,
    token_counter,
    trim_history,
)
from golem_core.history._processors import _after_counted

SYSTEM = Message.system("You are terse.")
ASK = Message.user("Weather in Paris and Rome?")
CALLS = Message.assistant(
    "Looking it up.",
    tool_calls=[
        ToolCallPart("c1", "get_weather", '{"city":"Paris"}'),
        ToolCallPart("c2", "get_weather", '{"city":"Rome"}'),
    ],
)
PARIS = Message.tool_result("c1", "get_weather", "18C, sunny")
ROME = Message.tool_result("c2", "get_weather", "21C, cloudy")
ANSWER = Message.assistant("Paris 18C, Rome 21C.")
THANKS = Message.user("Thanks!")

WEATHER = (SYSTEM, ASK, CALLS, PARIS, ROME, ANSWER, THANKS)


def ok(result: Result[tuple[Message, ...], HistoryError]) -> tuple[Message, ...]:
    match result:
        case Success(value):
            assert type(value) is tuple
            return value
        case _:
            pytest.fail(f"expected a success, got {result}")


def error(result: Result[tuple[Message, ...], HistoryError]) -> str:
    match result:
        case Failure(failure):
            assert isinstance(failure, HistoryError)
            assert str(failure) == failure.message
            return failure.message
        case _:
            pytest.fail(f"expected a failure, got {result}")


# -- trim_history ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_messages", "expected"),
    [
        (1, (THANKS,)),
        (2, (ANSWER, THANKS)),
        # the cut keeps ROME, whose call was cut: skipped
        (3, (ANSWER, THANKS)),
        # the cut keeps PARIS and ROME, whose call was cut: both skipped
        (4, (ANSWER, THANKS)),
        # the cut lands on the tool-call turn, whose results are all kept: it opens
        (5, (CALLS, PARIS, ROME, ANSWER, THANKS)),
        # six non-system messages: within the bound, unchanged (the system message is free)
        (6, WEATHER),
        (100, WEATHER),
    ],
)
def test_trim_cuts_on_a_request_boundary(max_messages: int, expected: tuple[Message, ...]) -> None:
    assert ok(trim_history(max_messages, low_water=max_messages)(WEATHER)) == expected


def test_trim_returns_short_histories_unchanged() -> None:
    assert trim_history(6)(WEATHER).unwrap() is WEATHER
    # the boundary rule applies only when a cut happens: a short history that opens
    # with a tool result is returned as it is
    opens_badly = (PARIS, ROME, ANSWER)
    assert trim_history(3)(opens_badly).unwrap() is opens_badly
    assert trim_history(1)(()).unwrap() == ()
    assert ok(trim_history(7)(list(WEATHER))) == WEATHER


def test_trim_keeps_messages_identical_and_in_order() -> None:
    kept = ok(trim_history(5, low_water=5)(WEATHER))
    assert all(a is b for a, b in zip(kept, WEATHER[2:], strict=True))


def test_trim_skips_an_assistant_turn_whose_results_were_cut() -> None:
    # results placed before their call: when the cut keeps the call but not its
    # results, the call cannot open (repair would synthesize results for it)
    history = (ASK, PARIS, ROME, CALLS, ANSWER, THANKS)
    assert ok(trim_history(3)(history)) == (ANSWER, THANKS)
    # a call that never got a result, at the boundary, is skipped too
    dangling = Message.assistant(tool_calls=[ToolCallPart("c9", "search", "{}")])
    assert ok(trim_history(2)((ASK, dangling, THANKS))) == (THANKS,)


def test_trim_lets_a_partly_answered_turn_open_only_when_every_call_is_answered() -> None:
    history = (ASK, CALLS, PARIS, ANSWER, THANKS)  # c2 has no result
    assert ok(trim_history(4)(history)) == (ANSWER, THANKS)


def test_trim_pairs_results_as_repair_does() -> None:
    # a result after its call but outside its block still answers it: the turn opens
    # (repair moves the result; it synthesizes nothing)
    separated = (ASK, CALLS, THANKS, PARIS, ROME, ANSWER)
    assert ok(trim_history(5, low_water=5)(separated)) == separated[1:]
    # a result answers the nearest earlier turn holding its id: with the id reused, the
    # older turn has no result and cannot open; the newer one can
    again = Message.assistant(tool_calls=[ToolCallPart("c1", "get_weather", "{}")])
    reused = (ASK, Message.assistant(tool_calls=[ToolCallPart("c1", "get_weather", "{}")]))
    history = (*reused, again, PARIS, ANSWER)
    assert ok(trim_history(4, low_water=4)(history)) == (again, PARIS, ANSWER)


def test_trim_lets_calls_without_an_id_open() -> None:
    anonymous = Message.assistant(tool_calls=[ToolCallPart(None, "search", "{}")])
    assert ok(trim_history(2)((ASK, anonymous, THANKS))) == (anonymous, THANKS)


def test_trim_counts_no_system_message_and_never_opens_with_one() -> None:
    history = (Message.user("a"), Message.assistant("b"), SYSTEM, Message.user("c"), ANSWER)
    # three non-system messages kept; the system message between them rides free
    assert ok(trim_history(3)(history)) == history[1:]
    # a system message at the boundary is skipped: the run replaces it anyway
    assert ok(trim_history(2)(history)) == history[3:]
    only_system = (SYSTEM, SYSTEM)
    assert trim_history(1)(only_system).unwrap() is only_system


def test_trim_fails_when_the_cut_leaves_only_tool_results() -> None:
    message = error(trim_history(3)((ASK, CALLS, PARIS, ROME, PARIS)))
    assert message == (
        "trim_history(3) left no message that can open a request: the newest 3 messages "
        "are tool results; a request opens with a user message, or an assistant message "
        "whose tool calls all have results after it. Raise max_messages so that the cut "
        "keeps the turn that opened them."
    )
    assert error(trim_history(1)((ASK, CALLS, PARIS))).startswith(
        "trim_history(1) left no message that can open a request: the newest message is "
        "a tool result;"
    )


def test_trim_failure_names_every_kind_it_skipped() -> None:
    dangling = Message.assistant(tool_calls=[ToolCallPart("c9", "search", "{}")])
    history = (ASK, dangling, SYSTEM, PARIS, ROME)
    assert (
        "the newest 4 messages are 2 tool results, 1 assistant tool-call turn with no "
        "results after it and 1 system message;"
    ) in error(trim_history(3)(history))


@pytest.mark.parametrize("bad", [0, -1, True, False, 1.5, "3", None])
def test_trim_refuses_a_bad_bound_when_made(bad: object) -> None:
    with pytest.raises(ValueError, match=r"trim_history\(max_messages\): max_messages must be"):
        trim_history(bad)  # type: ignore[arg-type]


def test_trim_is_a_value() -> None:
    assert trim_history(3) == trim_history(3)
    assert trim_history(3) != trim_history(4)
    assert repr(trim_history(3)) == "trim_history(3)"


# -- budget_history -------------------------------------------------------------------


COSTS = {ASK: 10, CALLS: 30, PARIS: 20, ROME: 20, ANSWER: 15, THANKS: 5}


def cost(message: Message) -> int:
    return COSTS[message]


@pytest.mark.parametrize(
    ("max_tokens", "expected"),
    [
        (5, (THANKS,)),
        (19, (THANKS,)),
        (20, (ANSWER, THANKS)),
        # ROME fits, its call does not: ROME is skipped
        (40, (ANSWER, THANKS)),
        (89, (ANSWER, THANKS)),
        # the tool-call turn fits with both of its results: it opens
        (90, (CALLS, PARIS, ROME, ANSWER, THANKS)),
        (99, (CALLS, PARIS, ROME, ANSWER, THANKS)),
        # 100 tokens in all (the system message is free and never counted)
        (100, WEATHER),
    ],
)
def test_budget_cuts_on_a_request_boundary(max_tokens: int, expected: tuple[Message, ...]) -> None:
    assert ok(budget_history(cost, max_tokens, low_water=max_tokens)(WEATHER)) == expected


def test_budget_returns_a_fitting_history_unchanged() -> None:
    assert budget_history(cost, 100)(WEATHER).unwrap() is WEATHER
    assert budget_history(cost, 1)(()).unwrap() == ()


def test_budget_counts_each_message_once_and_stops_at_the_first_misfit() -> None:
    seen: list[Message] = []

    def recording(message: Message) -> int:
        seen.append(message)
        return cost(message)

    assert ok(budget_history(recording, 40, low_water=40)(WEATHER)) == (ANSWER, THANKS)
    assert seen == [THANKS, ANSWER, ROME, PARIS]  # PARIS did not fit; nothing older is counted
    seen.clear()
    assert budget_history(recording, 1000, low_water=1000)(WEATHER).unwrap() is WEATHER
    assert seen == list(reversed(WEATHER[1:]))  # every non-system message, once


def test_budget_fails_when_nothing_fits() -> None:
    assert error(budget_history(cost, 4)(WEATHER)) == (
        "budget_history(cost, 4) kept no message: the newest message alone counts 5 tokens. "
        "Raise max_tokens to at least 5."
    )


def test_budget_fails_when_only_tool_results_fit() -> None:
    message = error(budget_history(cost, 45)((ASK, CALLS, PARIS, ROME)))
    assert message.startswith(
        "budget_history(cost, 45) left no message that can open a request: the 2 newest "
        "messages that fit (40 tokens) are tool results;"
    )
    assert message.endswith("Raise max_tokens so that the cut keeps the turn that opened them.")


def test_budget_with_approximate_tokens_at_a_tool_boundary() -> None:
    counts = [approximate_tokens(m) for m in WEATHER[1:]]
    assert counts == [13, 28, 9, 9, 11, 8]
    processor = budget_history(approximate_tokens, 40, low_water=40)
    assert ok(processor(WEATHER)) == (ANSWER, THANKS)  # ROME and PARIS fit, CALLS does not
    assert ok(budget_history(approximate_tokens, 65, low_water=65)(WEATHER)) == WEATHER[2:]
    assert repr(processor) == "budget_history(approximate_tokens, 40, low_water=40)"


@pytest.mark.parametrize("bad", [0, -5, True, 2.0, "10", None])
def test_budget_refuses_a_bad_bound_when_made(bad: object) -> None:
    with pytest.raises(ValueError, match=r"budget_history\(max_tokens\): max_tokens must be"):
        budget_history(cost, bad)  # type: ignore[arg-type]


def test_budget_refuses_a_counter_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match="counter must be callable"):
        budget_history(10, 10)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("returned", "exception", "words"),
    [(-1, ValueError, "returned -1"), (1.5, TypeError, "returned 1.5"), (True, TypeError, "True")],
)
def test_budget_refuses_a_counter_that_misbehaves(
    returned: object, exception: type[Exception], words: str
) -> None:
    processor = budget_history(lambda message: returned, 10)  # type: ignore[arg-type, return-value]
    with pytest.raises(exception, match=f"{words} for message 6; a TokenCounter must return"):
        processor(WEATHER)


# -- compose --------------------------------------------------------------------------


def test_compose_of_nothing_is_the_identity() -> None:
    assert compose()(WEATHER).unwrap() is WEATHER
    assert compose()(list(WEATHER)) == Success(WEATHER)
    assert repr(compose()) == "compose()"


def test_compose_chains_left_to_right() -> None:
    chained = compose(budget_history(cost, 90), trim_history(2))
    assert ok(chained(WEATHER)) == (ANSWER, THANKS)
    assert chained(WEATHER) == budget_history(cost, 90)(WEATHER).bind(trim_history(2))
    assert repr(chained) == "compose(budget_history(cost, 90), trim_history(2))"


def test_compose_stops_at_the_first_failure() -> None:
    calls: list[Sequence[Message]] = []

    def spy(history: Sequence[Message]) -> Result[tuple[Message, ...], HistoryError]:
        calls.append(history)
        return Success(tuple(history))

    failing = trim_history(1)
    result = compose(spy, failing, spy)((ASK, CALLS, PARIS))
    assert result == failing((ASK, CALLS, PARIS))
    assert len(calls) == 1


def test_compose_is_flat_and_has_a_unit() -> None:
    p, q, r = trim_history(5), budget_history(cost, 50), trim_history(2)
    assert compose(compose(p, q), r) == compose(p, compose(q, r)) == compose(p, q, r)
    assert compose(p) is p
    assert compose(compose(), p) is p


def test_compose_refuses_what_is_not_callable() -> None:
    with pytest.raises(TypeError, match="expected callables"):
        compose(trim_history(2), 3)  # type: ignore[arg-type]


def test_processors_have_the_history_processor_type() -> None:
    processors: list[HistoryProcessor] = [trim_history(1), budget_history(cost, 1), compose()]
    assert all(callable(p) for p in processors)


# -- approximate_tokens and token_counter ---------------------------------------------


@pytest.mark.parametrize(
    ("message", "tokens"),
    [
        (Message(Role.USER), 4),
        (Message.user(""), 4 + 2),
        (Message.user("abcd"), 4 + 2 + 1),
        (Message.user("abcde"), 4 + 2 + 2),
        (Message.user("a" * 400), 4 + 2 + 100),
        (Message.user("look", URLPart("https://x/y.png", "image")), 4 + 2 + 1 + 2 + 1_000),
        (Message.user("", DataPart(b"\0" * 10_000, "audio", "audio/wav")), 4 + 2 + 2 + 2_000),
        (Message.user("", URLPart("https://x/v.mp4", "video")), 4 + 2 + 2 + 10_000),
        (Message.user("", DataPart(b"%PDF", "document", "application/pdf")), 4 + 2 + 2 + 3_000),
        # a tool call: name (3 chars) and arguments (7 chars) as text
        (Message.assistant(tool_calls=[ToolCallPart("c1", "get", '{"a":1}')]), 4 + 2 + 1 + 2),
        (Message.assistant("hi", thinking=[ThinkingPart("12345678")]), 4 + 2 + 2 + 2 + 1),
        (Message(Role.ASSISTANT, (UnknownPart("hologram"),)), 4),
        (Message.tool_result("c1", "get", "x" * 8), 4 + 2 + 2),
    ],
)
def test_approximate_tokens(message: Message, tokens: int) -> None:
    assert approximate_tokens(message) == tokens


def test_approximate_tokens_counts_an_unknown_media_kind_at_the_highest_cost() -> None:
    part = URLPart("https://x/h", "hologram")  # type: ignore[arg-type]
    assert approximate_tokens(Message.user("", part)) == 4 + 2 + 2 + 10_000


def test_token_counter_applies_the_part_rules_to_any_text_counter() -> None:
    same = token_counter(lambda text: (len(text) + 3) // 4)
    words = token_counter(lambda text: len(text.split()))
    for message in WEATHER:
        assert same(message) == approximate_tokens(message)
    assert words(Message.user("one two three")) == 4 + 2 + 3
    assert words(Message.user("", URLPart("https://x/y.png", "image"))) == 4 + 2 + 2 + 1_000
    with pytest.raises(TypeError, match="expected a callable"):
        token_counter("len")  # type: ignore[arg-type]


# -- inputs of every sequence type, and a long history --------------------------------


class Wrapped(Sequence[Message]):
    """A sequence that is neither a tuple nor a list (and cannot be sliced)."""

    def __init__(self, messages: tuple[Message, ...]) -> None:
        self._messages = messages

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            raise TypeError("no slicing")
        return self._messages[index]

    def __len__(self) -> int:
        return len(self._messages)


@pytest.mark.parametrize("make", [tuple, list, Wrapped])
def test_processors_accept_any_sequence(make: type[Sequence[Message]]) -> None:
    history = make(WEATHER)  # type: ignore[call-arg]
    assert ok(trim_history(3, low_water=3)(history)) == (ANSWER, THANKS)
    assert ok(budget_history(cost, 90, low_water=90)(history)) == WEATHER[2:]
    assert ok(trim_history(10, low_water=10)(history)) == WEATHER


def test_a_long_history_is_cut_to_its_newest_turns() -> None:
    turn = (ASK, CALLS, PARIS, ROME, ANSWER)
    history = turn * 20_000
    assert ok(trim_history(7, low_water=7)(history)) == (ANSWER, *turn)  # ROME's call was cut
    assert ok(budget_history(cost, 95, low_water=95)(history)) == turn


# -- trim_history's cut points found by searching the roles (correctness round 4) ----------
# ``trim_history``'s cut points found by searching the roles (issue 33, item 10).
#
# ``trim_history`` no longer walks the messages in Python: it reads their roles once and
# finds both cut points (the sliding window's and the stepped one) by searching that list
# for system messages. The search must give what a plain pass over the counts gives.


ROLES = st.lists(st.sampled_from([Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL]))


def reference(roles: list[Role], target: int) -> int:
    """The first index whose prefix holds ``target`` non-system messages, by a plain pass."""
    reached = 0
    for index, role in enumerate(roles):
        if reached >= target:
            return index
        reached += role is not Role.SYSTEM
    return len(roles)


@given(ROLES, st.integers(0, 40))
def test_the_search_finds_the_point_a_plain_pass_finds(roles: list[Role], target: int) -> None:
    assert _after_counted(roles, target) == reference(roles, target)


def test_system_messages_stay_free_at_both_cut_points() -> None:
    system, user = Message.system("s"), Message.user
    history = (system, user("1"), system, user("2"), system, user("3"), user("4"), system)
    # the window keeps the newest 2 non-system messages (a system message cannot open)
    assert trim_history(2, low_water=2)(history).unwrap() == history[5:]
    # stepped: 4 counted, limit 3, steps of 2 or 1: cut after 2 or 1 counted messages
    assert trim_history(3, low_water=1)(history).unwrap() == history[5:]
    assert trim_history(3, low_water=2)(history).unwrap() == history[3:]
    assert trim_history(4)(history).unwrap() is history
