"""Every cut reported (issue 23, ADR 0080): what a processor did to a history, and the
first difference between two requests of a conversation."""

from __future__ import annotations

from golem_core import (
    HistoryChange,
    HistoryProcessed,
    Message,
    ModelRequest,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    approximate_tokens,
    budget_history,
    clear_tool_results,
    describe_cut,
    describe_processing,
    drop_thinking,
    summary_message,
    trim_history,
)


def exchange(k: int, size: int = 40) -> tuple[Message, ...]:
    call = ToolCallPart(f"c{k}", "lookup", "{}")
    return (
        Message.user(f"question {k}"),
        Message.assistant(None, tool_calls=[call]),
        Message.tool_result(f"c{k}", "lookup", "r" * size),
        Message.assistant(f"answer {k}", thinking=[ThinkingPart("hm", signature="s")]),
    )


HISTORY = tuple(m for k in range(6) for m in exchange(k))


def test_a_cut_reports_the_removed_range_tokens_and_pairs() -> None:
    out = budget_history(approximate_tokens, 120)(HISTORY).unwrap()
    change = describe_processing(HISTORY, out, processor="budget")
    assert change is not None
    cut = len(HISTORY) - len(out)
    assert change.removed == ((0, cut),)
    assert change.first_change == 0
    assert (change.messages_before, change.messages_after) == (len(HISTORY), len(out))
    assert change.tokens_after <= 120 < change.tokens_before
    assert change.pairs_kept == sum(m.role == "tool" for m in out)
    assert "removed 0.." in change.describe()


def test_clearing_and_dropping_thinking_report_rewritten_messages() -> None:
    cleared = clear_tool_results(keep_last=1, step=1)(HISTORY).unwrap()
    change = describe_processing(HISTORY, cleared)
    assert change is not None
    assert change.removed == ()
    assert change.rewritten == (2, 6, 10, 14, 18)  # every result but the newest
    assert change.first_change == 2
    dropped = drop_thinking(keep_last_turns=1, step=1)(HISTORY).unwrap()
    thinking = describe_processing(HISTORY, dropped)
    assert thinking is not None and thinking.rewritten == (3, 7, 11, 15, 19)


def test_a_summary_reports_the_range_it_stands_for() -> None:
    kept = HISTORY[16:]
    out = (summary_message("earlier: questions 0-3", summarized=16), *kept)
    change = describe_processing(HISTORY, out)
    assert change is not None
    assert change.summarized == ((0, 16),)
    assert change.removed == ()


def test_nothing_changed_is_none_and_pending_calls_are_named() -> None:
    assert describe_processing(HISTORY, HISTORY) is None
    pending = (
        *HISTORY,
        Message.user("go"),
        Message.assistant(None, tool_calls=[ToolCallPart("wait", "deploy", "{}")]),
    )
    out = trim_history(3)(pending).unwrap()
    assert out[-1] is pending[-1]  # the pending call is never cut
    change = describe_processing(pending, out)
    assert change is not None and change.pending_kept == ("wait",)


def test_describe_cut_names_the_first_difference_and_its_cause() -> None:
    tools = (ToolDefinition("lookup"),)
    first = ModelRequest(HISTORY, instructions="Be brief.", tools=tools)
    extended = ModelRequest((*HISTORY, Message.user("more")), instructions="Be brief.", tools=tools)
    assert describe_cut(first, extended) is None
    cut = ModelRequest(HISTORY[8:], instructions="Be brief.", tools=tools)
    gap = describe_cut(first, cut)
    assert gap is not None and (gap.cause, gap.message_index) == ("cut", 0)
    assert "0..7" in gap.detail
    other_tools = ModelRequest(HISTORY, instructions="Be brief.", tools=(ToolDefinition("x"),))
    assert describe_cut(first, other_tools).cause == "tools"  # type: ignore[union-attr]
    other_text = ModelRequest(HISTORY, instructions="Be long.", tools=tools)
    assert describe_cut(first, other_text).cause == "instructions"  # type: ignore[union-attr]
    cleared = clear_tool_results(keep_last=0, step=1)(HISTORY).unwrap()
    gap = describe_cut(first, ModelRequest(cleared, instructions="Be brief.", tools=tools))
    assert gap is not None and (gap.cause, gap.message_index) == ("cleared", 2)
    dropped = drop_thinking(keep_last_turns=0, step=1)(HISTORY).unwrap()
    gap = describe_cut(first, ModelRequest(dropped, instructions="Be brief.", tools=tools))
    assert gap is not None and gap.cause == "thinking"
    edited = (Message.user("question zero"), *HISTORY[1:])
    gap = describe_cut(first, ModelRequest(edited, instructions="Be brief.", tools=tools))
    assert gap is not None and (gap.cause, gap.message_index) == ("edited", 0)
    summarized = (summary_message("s", summarized=8), *HISTORY[8:])
    gap = describe_cut(first, ModelRequest(summarized, instructions="Be brief.", tools=tools))
    assert gap is not None and gap.cause == "summary"


def test_the_lifecycle_event_carries_the_change() -> None:
    change = HistoryChange("trim_history(4)", removed=((0, 3),), messages_before=7)
    event = HistoryProcessed("run-1", "conv-1", change)
    assert event.change.removed == ((0, 3),)
    assert "trim_history(4): removed 0..2" in change.describe()
