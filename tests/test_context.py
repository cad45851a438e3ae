"""Context processors: clearing old tool results, dropping old thinking, planning a summary."""

from __future__ import annotations

import json

import pytest
from returns.result import Success

from golem_core import (
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    check_pairing,
    compose,
    decode_history,
    encode_history,
    trim_history,
)
from golem_core.history._context import (
    DEFAULT_CLEARED_PLACEHOLDER,
    SUMMARY_KEY,
    ClearedResult,
    ClearReport,
    SummaryPlan,
    clear_old_tool_results,
    clear_tool_results,
    drop_thinking,
    is_summary,
    plan_summary,
    summary_message,
    turn_starts,
)

CLEARED = (TextPart(DEFAULT_CLEARED_PLACEHOLDER),)


def call(i: int) -> ToolCallPart:
    return ToolCallPart(f"c{i}", "search", '{"q":"x"}')


def think(text: str = "hmm") -> ThinkingPart:
    return ThinkingPart(text, signature="sig")


def conversation() -> tuple[Message, ...]:
    """Three turns: a tool exchange with thinking, a failed call, a plain answer."""
    return (
        Message.system("be brief"),
        Message.user("first"),
        Message.assistant("looking", tool_calls=[call(0), call(1)], thinking=[think("a")]),
        Message.tool_result("c0", "search", "result zero"),
        Message.tool_result("c1", "search", "result one", failed=True).with_ids("r1", "k"),
        Message.assistant("done", thinking=[think("b")]),
        Message.user("second"),
        Message.assistant(None, tool_calls=[call(2)], thinking=[think("c")]),
        Message.tool_result("c2", "search", "result two"),
        Message.assistant("ok"),
        Message.user("third"),
        Message.assistant("fine", thinking=[think("d")]),
    )


# -- clear_tool_results --------------------------------------------------------------------


def test_clear_keeps_the_newest_results_and_every_pair() -> None:
    history = conversation()
    out, report = clear_old_tool_results(history, keep_last=1, step=1)
    assert [m.parts == CLEARED for m in out] == [i in (3, 4) for i in range(len(history))]
    assert out[8] is history[8]
    cleared = out[4]
    assert (cleared.tool_call_id, cleared.tool_name, cleared.failed) == ("c1", "search", True)
    assert (cleared.run_id, cleared.conversation_id) == ("r1", "k")
    assert report.cleared == (
        ClearedResult(3, "c0", "search", 1),
        ClearedResult(4, "c1", "search", 1),
    )
    assert report.record is not None and report.record.kind == "cleared"
    assert report.changed
    assert check_pairing(out) == ()
    recorded, _ = clear_old_tool_results(history, keep_last=1, step=1, record=True)
    assert clear_tool_results(keep_last=1, step=1)(history) == Success(recorded)


def test_clear_reports_nothing_the_second_time_and_returns_the_same_tuple() -> None:
    out, _ = clear_old_tool_results(conversation(), keep_last=0)
    again, report = clear_old_tool_results(out, keep_last=0)
    assert again is out
    assert report == ClearReport()
    assert not report.changed


def test_clear_keeps_everything_when_there_are_fewer_results_than_kept() -> None:
    history = conversation()
    out, report = clear_old_tool_results(history, keep_last=10)
    assert out is history
    assert report.cleared == ()


def test_clear_with_a_custom_placeholder() -> None:
    processor = clear_tool_results(keep_last=0, step=1, placeholder="[gone]")
    out = processor(conversation()).unwrap()
    assert {m.text for m in out if m.role is Role.TOOL} == {"[gone]"}
    assert repr(processor) == "clear_tool_results(keep_last=0, placeholder='[gone]', step=1)"
    assert repr(clear_tool_results()) == "clear_tool_results(keep_last=3)"


@pytest.mark.parametrize("bad", [-1, True, 1.5, "2"])
def test_clear_refuses_a_bad_keep_last(bad: object) -> None:
    with pytest.raises(ValueError, match="keep_last must be"):
        clear_tool_results(keep_last=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "   ", None])
def test_clear_refuses_a_blank_placeholder(bad: object) -> None:
    with pytest.raises(ValueError, match="placeholder must be a non-blank string"):
        clear_tool_results(placeholder=bad)  # type: ignore[arg-type]


# -- drop_thinking -------------------------------------------------------------------------


def test_turns_start_at_user_messages_and_a_leading_turn() -> None:
    assert turn_starts(conversation()) == (1, 6, 10)
    lead = (Message.system("s"), Message.assistant("hello"), Message.user("hi"))
    assert turn_starts(lead) == (0, 2)
    assert turn_starts((Message.system("s"),)) == ()
    assert turn_starts(()) == ()


def test_drop_thinking_keeps_the_newest_turns_thinking() -> None:
    history = conversation()
    out = drop_thinking(keep_last_turns=2, step=1)(history).unwrap()
    thinking = [any(type(p) is ThinkingPart for p in m.parts) for m in out]
    assert thinking == [i in (7, 11) for i in range(len(history))]
    assert out[2].parts == (TextPart("looking"), call(0), call(1))
    assert out[7] is history[7]


def test_drop_thinking_everywhere_and_idempotent() -> None:
    processor = drop_thinking(keep_last_turns=0, step=1)
    out = processor(conversation()).unwrap()
    assert not any(type(p) is ThinkingPart for m in out for p in m.parts)
    assert processor(out).unwrap() is out
    assert repr(processor) == "drop_thinking(keep_last_turns=0, step=1)"


def test_drop_thinking_leaves_a_message_of_nothing_but_thinking() -> None:
    only = Message(Role.ASSISTANT, (think(),))
    history = (Message.user("a"), only, Message.user("b"))
    assert drop_thinking(keep_last_turns=0)(history).unwrap() == history


def test_drop_thinking_keeps_everything_when_there_are_few_turns() -> None:
    history = conversation()
    assert drop_thinking(keep_last_turns=3)(history).unwrap() is history


def test_drop_thinking_drops_redacted_thinking_too() -> None:
    turn = Message.assistant("x", thinking=[ThinkingPart("opaque", redacted=True)])
    out = drop_thinking(keep_last_turns=0, step=1)((Message.user("q"), turn)).unwrap()
    assert out[1].parts == (TextPart("x"),)


def test_the_context_processors_compose() -> None:
    processor = compose(
        clear_tool_results(keep_last=0, step=1),
        drop_thinking(keep_last_turns=1, step=1),
        trim_history(6, low_water=6),
    )
    out = processor(conversation()).unwrap()
    assert out[0] == Message.user("second")
    assert check_pairing(out) == ()
    assert out[2].parts == CLEARED


# -- summaries ----------------------------------------------------------------------------


def test_summary_message_carries_an_additive_marker_that_survives_json() -> None:
    summary = summary_message("they talked", summarized=7)
    assert summary.role is Role.USER
    assert summary.text == "they talked"
    assert is_summary(summary)
    assert not is_summary(Message.user("they talked"))
    encoded = json.loads(encode_history((summary,)))
    assert encoded == [
        {
            "role": "user",
            "parts": [{"type": "text", "text": "they talked"}],
            SUMMARY_KEY: {"messages": 7},
        }
    ]
    assert decode_history(encode_history((summary,))) == Success((summary,))


def test_plan_keeps_the_newest_turns_whole() -> None:
    history = conversation()
    plan = plan_summary(history, keep_last_turns=2)
    assert plan == SummaryPlan(
        cut=6, to_summarize=history[1:6], kept=history[6:], head=(history[0],)
    )
    summary = summary_message("s", summarized=len(plan.to_summarize))
    out = plan.apply(summary)
    assert out == (history[0], summary, *history[6:])
    assert check_pairing(out) == ()


def test_plan_summarizes_everything_with_no_kept_turn() -> None:
    history = conversation()
    plan = plan_summary(history, keep_last_turns=0)
    assert plan is not None
    assert plan.kept == ()
    assert plan.to_summarize == history[1:]


def test_plan_does_nothing_for_few_turns_or_a_small_history() -> None:
    history = conversation()
    assert plan_summary(history, keep_last_turns=3) is None
    assert plan_summary(history, keep_last_turns=1, max_tokens=100_000) is None
    assert plan_summary(history, keep_last_turns=1, max_tokens=10) is not None
    assert plan_summary((), keep_last_turns=0) is None


def test_a_summarized_history_is_not_summarized_again() -> None:
    history = conversation()
    plan = plan_summary(history, keep_last_turns=1)
    assert plan is not None
    out = plan.apply(summary_message("s", summarized=len(plan.to_summarize)))
    assert plan_summary(out, keep_last_turns=1) is None
    assert plan_summary(out, keep_last_turns=1, max_tokens=1) is None


def test_an_earlier_summary_is_summarized_with_what_followed_it() -> None:
    history = conversation()
    first = plan_summary(history, keep_last_turns=2)
    assert first is not None
    summary = summary_message("s", summarized=5)
    out = first.apply(summary)
    second = plan_summary(out, keep_last_turns=1)
    assert second is not None
    assert second.to_summarize[0] is summary


def test_the_cut_never_separates_a_result_from_its_call() -> None:
    # a broken history: a user message between a call and its result
    history = (
        Message.user("zero"),
        Message.assistant("a"),
        Message.user("one"),
        Message.assistant(None, tool_calls=[call(0)]),
        Message.user("interjection"),
        Message.tool_result("c0", "search", "late"),
        Message.user("two"),
        Message.assistant("ok"),
    )
    plan = plan_summary(history, keep_last_turns=2)
    assert plan is not None
    assert plan.cut == 2  # the cut at 4 would strand the result of c0: moved back a turn
    assert plan_summary(history[2:], keep_last_turns=2) is None  # no cut keeps the pair


@pytest.mark.parametrize(
    ("keyword", "value", "match"),
    [
        ("keep_last_turns", -1, "keep_last_turns must be at least 0"),
        ("max_tokens", 0, "max_tokens must be None or an int of at least 1"),
        ("max_tokens", True, "max_tokens must be None or an int of at least 1"),
    ],
)
def test_plan_refuses_bad_arguments(keyword: str, value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        plan_summary(conversation(), **{keyword: value})  # type: ignore[arg-type]
