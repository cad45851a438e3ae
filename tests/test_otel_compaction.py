"""Compaction on the run span (ADR 0140): ``golem.compaction.started`` and
``golem.compaction.finished`` events with the outcome and the record's counts, no content."""

from __future__ import annotations

import pytest
from test_otel import Telemetry, otel_fixture  # noqa: F401 (fixture)

from golem_core import Message, ToolCallPart
from golem_shell import Agent, FunctionModel, ScriptedModel
from golem_shell.context._summarize import summarize_history

pytestmark = pytest.mark.anyio


def conversation() -> tuple[Message, ...]:
    return (
        Message.user("secret plan: Oslo"),
        Message.assistant(None, tool_calls=[ToolCallPart("k1", "weather", "{}")]),
        Message.tool_result("k1", "weather", "rain"),
        Message.assistant("Pack a raincoat."),
        Message.user("book it"),
        Message.assistant("Booked."),
    )


async def test_a_fold_is_two_span_events_of_the_run(otel: Telemetry) -> None:
    agent = Agent(
        ScriptedModel(["Done."]),
        name="trip",
        history_processor=summarize_history(
            FunctionModel(lambda request: "SUMMARY-TEXT"), keep_last_turns=1, step_turns=0
        ),
    )
    await agent.run_with_history(conversation(), "next?")
    (run,) = otel.named("invoke_agent")
    names = [e.name for e in run.events]
    assert names[:3] == [
        "golem.history.processed",
        "golem.compaction.started",
        "golem.compaction.finished",
    ]
    started, finished = run.events[1], run.events[2]
    assert dict(started.attributes or {}) == {
        "golem.processor": "summarize_history('function', keep_last_turns=1, step_turns=0)",
        "golem.compaction.trigger": "processor",
        "golem.compaction.request": 0,
        "golem.compaction.messages": 6,
    }
    attributes = dict(finished.attributes or {})
    assert attributes["golem.compaction.outcome"] == "compacted"
    assert attributes["golem.compaction.kind"] == "summary"
    assert attributes["golem.compaction.replaced"] == 4
    assert (
        attributes["golem.compaction.tokens_before"] > attributes["golem.compaction.tokens_after"]
    )
    recorded = " ".join(otel.every_recorded_text())
    assert "SUMMARY-TEXT" not in recorded and "secret plan" not in recorded
