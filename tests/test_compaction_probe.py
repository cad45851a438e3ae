"""The compaction probe (issue 35 item 6, ADR 0142): which facts survive a fold, which
questions a model can still answer from it, and a law check that a strategy never splits a
call from its result or touches a pending call."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from returns.result import Result, Success

from golem_core import (
    Message,
    ModelRequest,
    ToolCallPart,
    clear_tool_results,
    plan_summary,
    summary_message,
    trim_history,
)
from golem_core.testing import check_compaction, compaction_probe
from golem_shell import FunctionModel
from golem_shell.context._summarize import probe_compaction, summarize_history

pytestmark = pytest.mark.anyio


def conversation() -> tuple[Message, ...]:
    return (
        Message.user("My budget is 900 euros and I fly from Lyon."),
        Message.assistant(None, tool_calls=[ToolCallPart("k1", "flights", '{"from":"Lyon"}')]),
        Message.tool_result("k1", "flights", "AF 1234 departs 07:40"),
        Message.assistant("AF 1234 departs at 07:40."),
        Message.user("Book a hotel near the station."),
        Message.assistant("Booked Hotel Terminus."),
        Message.user("What time do I leave?"),
        Message.assistant("07:40."),
    )


def keeps_the_first_line(history: Sequence[Message]) -> Result[tuple[Message, ...], str]:
    """A local summarizer: the summary is each summarized user message's first words."""
    plan = plan_summary(history, keep_last_turns=1)
    if plan is None:
        return Success(tuple(history))
    text = " / ".join(m.text for m in plan.to_summarize if m.role.value == "user")
    return Success(plan.apply(summary_message(text, summarized=len(plan.to_summarize))))


def test_the_probe_says_which_facts_survive_and_where() -> None:
    facts = ["900 euros", "AF 1234", "hotel terminus", "07:40"]
    probe = compaction_probe(conversation(), keeps_the_first_line, facts)
    assert probe.outcome == "compacted"
    found = {f.fact: f.found_in for f in probe.facts}
    assert found == {
        "900 euros": "summary",
        "AF 1234": None,  # only a tool result and an answer held it
        "hotel terminus": None,
        "07:40": "kept",
    }
    assert probe.lost == ("AF 1234", "hotel terminus")
    assert probe.survival == 0.5
    assert probe.pairing_kept and probe.pending_kept


def test_declined_and_failed_strategies_are_outcomes() -> None:
    probe = compaction_probe(conversation()[-2:], keeps_the_first_line, ["07:40"])
    assert probe.outcome == "declined: nothing to fold" and probe.survival == 1.0

    def broken(history: Sequence[Message]) -> Result[tuple[Message, ...], str]:
        raise RuntimeError("no budget")

    failed = compaction_probe(conversation(), broken, ["07:40"])
    assert failed.outcome.startswith("failed: RuntimeError")


def test_golems_strategies_keep_the_rules() -> None:
    for strategy in (
        keeps_the_first_line,
        trim_history(4),
        clear_tool_results(keep_last=0, step=1),
    ):
        check_compaction(strategy, max_examples=60)


def drops_the_oldest_call(history: Sequence[Message]) -> Result[tuple[Message, ...], str]:
    """Drops the oldest assistant turn with calls (not the last message), keeping its
    results: a fold that splits a call from its result."""
    for i, m in enumerate(history[:-1]):
        if m.tool_calls:
            return Success((*history[:i], *history[i + 1 :]))
    return Success(tuple(history))


def summarizes_everything(history: Sequence[Message]) -> Result[tuple[Message, ...], str]:
    """Summarizes the whole history, a pending call included (plan_summary's old bug)."""
    if len(history) < 2:
        return Success(tuple(history))
    return Success((summary_message("all of it", summarized=len(history)),))


def test_the_law_check_finds_a_split_pair_and_a_touched_pending_call() -> None:
    with pytest.raises(AssertionError, match="split a call from its result"):
        check_compaction(drops_the_oldest_call, max_examples=200)
    with pytest.raises(AssertionError, match="touched a pending call"):
        check_compaction(summarizes_everything, max_examples=200)


async def test_the_model_probe_asks_questions_of_the_compacted_history() -> None:
    def reads_the_request(request: ModelRequest) -> str:
        """A test model: answers with everything the request holds (as CI would)."""
        return " ".join(m.text for m in request.messages)

    summarizer = summarize_history(
        FunctionModel(lambda r: "Budget 900 euros; flight AF 1234 at 07:40."),
        keep_last_turns=1,
        step_turns=0,
    )
    report = await probe_compaction(
        conversation(),
        summarizer,
        ["AF 1234", "Hotel Terminus"],
        questions=[("Which flight?", "AF 1234"), ("Which hotel?", "Terminus")],
        model=FunctionModel(reads_the_request),
    )
    assert report.probe.outcome == "compacted"
    assert report.probe.lost == ("Hotel Terminus",)
    assert report.unanswered == ("Which hotel?",)
    assert [a[3] for a in report.answers] == [True, False]
