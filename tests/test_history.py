"""Pairing repair: the seed's cases, the open cases of ADR 0030, and check_pairing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from golem_core import (
    INTERRUPTED_RESULT_TEXT,
    HistoryRepair,
    Message,
    PairingProblem,
    RepairEntry,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UnknownPart,
    check_pairing,
    interrupted_result,
    normalize_history,
    repair_history,
)

A = Message.assistant
U = Message.user
R = Message.tool_result


def call(
    cid: str | None, name: str = "get_weather", arguments: str = '{"city":"Paris"}'
) -> ToolCallPart:
    return ToolCallPart(cid, name, arguments)


def synth(cid: str, name: str = "get_weather") -> Message:
    return Message(
        Role.TOOL, (TextPart(INTERRUPTED_RESULT_TEXT),), tool_call_id=cid, tool_name=name
    )


def kinds(history: tuple[Message, ...]) -> list[tuple[int, str | None, str]]:
    return [(p.message_index, p.call_id, p.kind) for p in check_pairing(history)]


def valid() -> tuple[Message, ...]:
    return (
        Message.system("be brief"),
        U("weather in Paris and Rome?"),
        A("checking", tool_calls=[call("c1"), call("c2", arguments='{"city":"Rome"}')]),
        R("c1", "get_weather", "18C"),
        R("c2", "get_weather", "24C", failed=True),
        A("Paris 18C, Rome unknown."),
    )


# -- the seed's cases --------------------------------------------------------------------


def test_a_valid_history_comes_back_as_the_same_tuple_with_an_empty_report() -> None:
    history = valid()
    out, report = normalize_history(history)
    assert out is history
    assert report == HistoryRepair()
    assert not report.changed
    assert repair_history(history) is history
    assert check_pairing(history) == ()


def test_a_list_in_gives_a_tuple_of_the_same_messages() -> None:
    history = list(valid())
    out = repair_history(history)
    assert type(out) is tuple
    assert all(a is b for a, b in zip(out, history, strict=True))


def test_the_empty_history() -> None:
    assert normalize_history(()) == ((), HistoryRepair())
    assert check_pairing([]) == ()


def test_a_dangling_call_gets_a_neutral_result_right_after_its_turn() -> None:
    turn = A(tool_calls=[call("c1")])
    history = (U("go"), turn, U("and?"))
    out, report = normalize_history(history)
    assert out == (history[0], turn, synth("c1"), history[2])
    result = out[2]
    assert result.failed is False
    assert result.created_at is None and result.run_id is None
    assert result.conversation_id is None
    assert result.text == "interrupted before execution; no result was produced"
    assert report.synthesized == (RepairEntry(1, "c1", "get_weather", "dangling"),)
    assert report.changed


def test_a_crash_mid_batch_closes_every_unanswered_call_after_the_present_results() -> None:
    turn = A(tool_calls=[call("c1", "a"), call("c2", "b"), call("c3", "c")])
    history = (U("go"), turn, R("c2", "b", "done"))
    out, report = normalize_history(history)
    assert out == (history[0], turn, history[2], synth("c1", "a"), synth("c3", "c"))
    assert out[2] is history[2]
    assert [e.call_id for e in report.synthesized] == ["c1", "c3"]


def test_synthesized_results_carry_no_stamps_even_when_the_turn_does() -> None:
    turn = Message(
        Role.ASSISTANT,
        (call("c1"),),
        run_id="run-1",
        conversation_id="conv-1",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    out = repair_history((turn,))
    assert out[1] == interrupted_result(call("c1"))
    assert (out[1].run_id, out[1].conversation_id, out[1].created_at) == (None, None, None)


def test_a_result_without_a_call_is_dropped() -> None:
    history = (U("hi"), R("ghost", "x", "boo"), A("hello"))
    out, report = normalize_history(history)
    assert out == (history[0], history[2])
    assert report.dropped == (RepairEntry(1, "ghost", "x", "orphan"),)


def test_a_result_before_its_call_is_dropped_and_the_call_closed() -> None:
    history = (U("hi"), R("c1", "get_weather", "early"), A(tool_calls=[call("c1")]))
    out, report = normalize_history(history)
    assert out == (history[0], history[2], synth("c1"))
    assert report.dropped == (RepairEntry(1, "c1", "get_weather", "early"),)
    assert report.synthesized == (RepairEntry(2, "c1", "get_weather", "dangling"),)


def test_duplicate_results_keep_the_first() -> None:
    first, second = R("c1", "get_weather", "first"), R("c1", "get_weather", "second")
    history = (A(tool_calls=[call("c1")]), first, second)
    out, report = normalize_history(history)
    assert out == (history[0], first)
    assert out[1] is first
    assert report.dropped == (RepairEntry(2, "c1", "get_weather", "duplicate"),)


def test_calls_without_an_id_pass_through_unrepaired() -> None:
    history = (U("go"), A(tool_calls=[call(None)]), A("done"))
    out, report = normalize_history(history)
    assert out is history
    assert not report.changed


def test_truncated_arguments_are_detected_not_changed_and_listed_every_pass() -> None:
    bad = call("c1", arguments='{"path": "/tm')
    history = (A(tool_calls=[bad, call("c2", arguments="[1, 2]")]), R("c1", "get_weather", "?"))
    out, report = normalize_history(history)
    assert out[0].parts[0] is bad
    assert [(e.call_id, e.reason) for e in report.truncated] == [
        ("c1", "truncated"),
        ("c2", "truncated"),
    ]
    assert report.synthesized == (RepairEntry(0, "c2", "get_weather", "dangling"),)
    again, report2 = normalize_history(out)
    assert again is out
    assert report2.truncated == report.truncated
    assert not report2.changed


def test_repair_is_idempotent_and_deterministic() -> None:
    history = (
        R("x", "x", "orphan"),
        A(tool_calls=[call("c1"), call("c2")]),
        U("between"),
        R("c2", "get_weather", "late"),
        R("c2", "get_weather", "again"),
    )
    once = repair_history(history)
    assert repair_history(once) is once
    assert repair_history(history) == once
    assert normalize_history(history) == normalize_history(list(history))


# -- the open cases (ADR 0030) -----------------------------------------------------------


def test_a_separated_result_moves_up_into_its_block() -> None:
    turn = A(tool_calls=[call("c1")])
    late = R("c1", "get_weather", "18C")
    history = (U("go"), turn, U("still there?"), late, A("it is 18C"))
    out, report = normalize_history(history)
    assert out == (history[0], turn, late, history[2], history[4])
    assert out[2] is late
    assert report.moved == (RepairEntry(3, "c1", "get_weather", "separated"),)
    assert report.synthesized == () and report.dropped == ()
    assert kinds(history) == [(3, "c1", "separated")]


def test_a_separated_result_joins_a_partial_block_in_call_order() -> None:
    turn = A(tool_calls=[call("a"), call("b"), call("c")])
    present, late = R("c", "get_weather", "c!"), R("a", "get_weather", "a!")
    history = (turn, present, U("hm"), late)
    out, report = normalize_history(history)
    # present results first, then the others in call order: a (moved), b (synthesized)
    assert out == (turn, present, late, synth("b"), history[2])
    assert [e.message_index for e in report.moved] == [3]
    assert report.synthesized == (RepairEntry(0, "b", "get_weather", "dangling"),)


def test_a_result_in_a_later_block_moves_to_its_own_turn() -> None:
    first, second = A(tool_calls=[call("x")]), A(tool_calls=[call("y")])
    rx, ry = R("x", "get_weather", "x"), R("y", "get_weather", "y")
    history = (first, U("next"), second, ry, rx)
    out, report = normalize_history(history)
    assert out == (first, rx, history[1], second, ry)
    assert report.moved == (RepairEntry(4, "x", "get_weather", "separated"),)


def test_of_a_separated_result_and_its_duplicate_the_first_moves() -> None:
    turn = A(tool_calls=[call("c1")])
    a, b = R("c1", "get_weather", "a"), R("c1", "get_weather", "b")
    history = (turn, U("?"), a, b)
    out, report = normalize_history(history)
    assert out == (turn, a, history[1])
    assert [(e.message_index, e.reason) for e in report.moved + report.dropped] == [
        (2, "separated"),
        (3, "duplicate"),
    ]


def test_the_same_id_in_two_turns_pairs_each_turn_with_its_own_result() -> None:
    # Some OpenAI-compatible servers number calls per response: call_0 every turn.
    t1, t2 = A(tool_calls=[call("call_0")]), A(tool_calls=[call("call_0", "search")])
    r1, r2 = R("call_0", "get_weather", "one"), R("call_0", "search", "two")
    history = (U("a"), t1, r1, U("b"), t2, r2)
    out, report = normalize_history(history)
    assert out is history
    assert not report.changed
    assert report.reused == (RepairEntry(4, "call_0", "search", "reused"),)
    assert check_pairing(history) == ()


def test_a_reused_id_answered_only_after_the_later_turn_closes_the_earlier() -> None:
    t1, t2 = A(tool_calls=[call("call_0")]), A(tool_calls=[call("call_0")])
    r = R("call_0", "get_weather", "which one?")
    history = (t1, U("b"), t2, r)
    out, report = normalize_history(history)
    assert out == (t1, synth("call_0"), history[1], t2, r)
    assert report.synthesized == (RepairEntry(0, "call_0", "get_weather", "dangling"),)


def test_the_same_id_twice_in_one_turn_needs_one_result() -> None:
    turn = A(tool_calls=[call("c1"), call("c1", "other")])
    history = (turn, R("c1", "get_weather", "ok"))
    out, report = normalize_history(history)
    assert out is history
    assert report.reused == (RepairEntry(0, "c1", "other", "reused"),)
    dangling = (A(tool_calls=[call("c1"), call("c1", "other")]),)
    assert repair_history(dangling) == (*dangling, synth("c1"))


def test_a_tool_message_without_a_call_id_is_dropped() -> None:
    history = (
        A(tool_calls=[call("c1")]),
        R(None, "get_weather", "?"),
        R("c1", "get_weather", "ok"),
    )
    out, report = normalize_history(history)
    assert out == (history[0], history[2])
    assert report.dropped == (RepairEntry(1, None, "get_weather", "missing_id"),)
    assert kinds(history) == [(1, None, "missing_id")]


def test_results_out_of_call_order_are_kept_in_their_order() -> None:
    turn = A(tool_calls=[call("a"), call("b")])
    history = (turn, R("b", "get_weather", "b"), R("a", "get_weather", "a"))
    out, report = normalize_history(history)
    assert out is history
    assert report == HistoryRepair()


def test_empty_messages_are_reported_and_kept() -> None:
    history = (
        Message(Role.USER, ()),
        U(""),
        U("   "),  # whitespace is what the person wrote: content
        Message(Role.USER, (UnknownPart("hologram"),)),
        Message(Role.ASSISTANT, (TextPart(""),)),
        Message(Role.ASSISTANT, (ThinkingPart("hmm", signature="s"),)),
        Message.system(""),  # a run replaces system messages: never sent as is
        Message(Role.TOOL, (), tool_call_id="x", tool_name="t"),
    )
    out, report = normalize_history(history)
    assert report.empty == (0, 1, 3, 4)
    assert out[:7] == history[:7]
    assert [e.reason for e in report.dropped] == ["orphan"]


def test_a_tool_call_part_outside_an_assistant_message_is_not_a_call() -> None:
    history = (Message(Role.USER, (TextPart("see"), call("c1"))), A("ok"))
    out, report = normalize_history(history)
    assert out is history and report == HistoryRepair()


def test_an_empty_string_is_an_id_like_any_other() -> None:
    history = (A(tool_calls=[call("")]),)
    assert repair_history(history) == (*history, synth(""))


def test_report_indices_refer_to_the_input() -> None:
    history = (
        R("ghost", "x", "boo"),  # 0: dropped
        R("ghost", "x", "boo"),  # 1: dropped
        A(tool_calls=[call("c1", arguments="{")]),  # 2: truncated and dangling
        U("x"),  # 3
        R("c1", "get_weather", "late"),  # 4: moved
        U(""),  # 5: empty
    )
    _, report = normalize_history(history)
    assert [e.message_index for e in report.dropped] == [0, 1]
    assert [e.message_index for e in report.truncated] == [2]
    assert [e.message_index for e in report.moved] == [4]
    assert report.synthesized == ()
    assert report.empty == (5,)


def test_content_passes_through_untouched() -> None:
    thinking = ThinkingPart("secret", signature="sig", redacted=True)
    turn = Message(
        Role.ASSISTANT,
        (thinking, call("c1", arguments='{"a": 1, "a": 2')),
        run_id="r",
        conversation_id="c",
        model="m",
        finish_reason="tool_calls",
    )
    failed = Message.tool_result("c1", "get_weather", "boom", failed=True)
    history = (U("go"), turn, U("?"), failed)
    out = repair_history(history)
    assert out[1] is turn and out[2] is failed


# -- check_pairing -------------------------------------------------------------------------


def test_check_pairing_names_every_problem_in_message_order() -> None:
    history = (
        R("c9", "x", "early"),  # 0
        A(tool_calls=[call("c1"), call("c2")]),  # 1: c2 dangling
        R("c1", "get_weather", "ok"),  # 2
        R("c1", "get_weather", "dup"),  # 3
        U("between"),  # 4
        R("zz", "x", "orphan"),  # 5
        R(None, "x", "no id"),  # 6
        A(tool_calls=[call("c9"), call("c3")]),  # 7: c9 dangling (its result came early)
        U("and"),  # 8
        R("c3", "get_weather", "late"),  # 9: separated
    )
    problems = check_pairing(history)
    assert [(p.message_index, p.call_id, p.kind) for p in problems] == [
        (0, "c9", "early"),
        (1, "c2", "dangling"),
        (3, "c1", "duplicate"),
        (5, "zz", "orphan"),
        (6, None, "missing_id"),
        (7, "c9", "dangling"),
        (9, "c3", "separated"),
    ]
    assert all(isinstance(p, PairingProblem) for p in problems)
    assert problems[1].message == "message 1: tool call 'c2' ('get_weather') has no result"
    assert "message 7" in problems[6].message
    assert check_pairing(repair_history(history)) == ()


def test_check_pairing_follows_the_openai_rule_no_message_between_call_and_results() -> None:
    history = (A(tool_calls=[call("c1")]), Message.system("hi"), R("c1", "get_weather", "ok"))
    assert kinds(history) == [(2, "c1", "separated")]


@pytest.mark.parametrize(
    "history",
    [
        (A(tool_calls=[call("c1")]),),
        (R("c1", "get_weather", "x"),),
        (A(tool_calls=[call("c1")]), U("x"), R("c1", "get_weather", "x")),
        (A(tool_calls=[call("c1")]), R("c1", "get_weather", "x"), R("c1", "get_weather", "y")),
        (R(None, "t", "x"),),
    ],
)
def test_problems_correspond_to_what_repair_does(history: tuple[Message, ...]) -> None:
    _, report = normalize_history(history)
    entries = report.synthesized + report.dropped + report.moved
    assert sorted((p.message_index, p.call_id, p.kind) for p in check_pairing(history)) == sorted(
        (e.message_index, e.call_id, e.reason) for e in entries
    )
    assert report.changed


def test_interrupted_result_is_a_neutral_tool_message() -> None:
    result = interrupted_result(call("c7", "search"))
    assert result == Message(
        Role.TOOL,
        (TextPart("interrupted before execution; no result was produced"),),
        tool_call_id="c7",
        tool_name="search",
    )
