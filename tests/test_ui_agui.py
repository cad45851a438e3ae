"""AG-UI: a run's events in the protocol's order (validated by ``ag_ui.core``'s own
types), and AG-UI messages <-> golem history."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from ag_ui.core import (
    AssistantMessage,
    Event,
    EventType,
    ResumeEntry,
    RunAgentInput,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from pydantic import TypeAdapter

from golem_core import (
    Approved,
    Denied,
    Message,
    ModelRequest,
    Role,
    ToolCallPart,
    Usage,
)
from golem_shell import Agent, FunctionModel, tool
from golem_shell.ui import (
    AGUIStream,
    agui_answers,
    agui_frames,
    agui_messages_to_history,
    history_to_agui_messages,
    run_items,
)

pytestmark = pytest.mark.anyio

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


@tool
def get_weather(city: str) -> str:
    """Weather.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


@tool(requires_approval=True)
def send_money(to: str, cents: int) -> str:
    """Send money.

    Args:
        to: who.
        cents: how much.
    """
    return f"sent {cents} cents to {to}"


def model(request: ModelRequest) -> Message:
    last = request.messages[-1]
    if last.role is Role.TOOL:
        return Message.assistant(f"It is {last.text}.")
    if "pay" in last.text:
        return Message.assistant(
            tool_calls=[ToolCallPart("call_pay", "send_money", '{"to": "ann", "cents": 5}')]
        )
    if "fail" in last.text:
        raise RuntimeError("the model is down")
    if "weather" in last.text:
        return Message.assistant(
            "Looking.", tool_calls=[ToolCallPart("c1", "get_weather", '{"city": "Oslo"}')]
        )
    return Message.assistant("Hello.")


AGENT = Agent(FunctionModel(model), tools=[get_weather, send_money])


async def events_of(
    history: Sequence[Message], prompt: str | None, answers: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    stream = AGUIStream("thread-1", "run-1", history=history, answered=answers)

    def start(on_delta: Any, on_event: Any) -> Any:
        if answers:
            return AGENT.run_with_deferred_results(
                history, answers, on_delta=on_delta, on_event=on_event
            )
        return AGENT.run_stream_with_history(history, prompt, on_delta=on_delta, on_event=on_event)

    out = [json.loads(f) async for f in agui_frames(stream, run_items(start))]
    for event in out:  # every event is one the protocol's own types accept, as sent
        assert event["type"] in EventType.__members__
        assert (
            EVENTS.validate_python(event).model_dump(mode="json", by_alias=True, exclude_none=True)
            == event
        )
    return out


def kinds(events: Sequence[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for e in events:
        if (
            not (e["type"].endswith("_CONTENT") or e["type"] == "TOOL_CALL_ARGS")
            or out[-1] != e["type"]
        ):
            out.append(e["type"])
    return out


async def test_a_text_answer() -> None:
    events = await events_of((), "hi")
    assert kinds(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert events[0] == {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-1"}
    assert events[1]["role"] == "assistant"
    ids = {e["messageId"] for e in events if e["type"].startswith("TEXT_MESSAGE")}
    assert len(ids) == 1
    assert events[-1]["outcome"] == {"type": "success"} and events[-1]["result"] == "Hello."


async def test_a_tool_round_trip() -> None:
    events = await events_of((), "weather?")
    assert kinds(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert start["toolCallId"] == "c1" and start["toolCallName"] == "get_weather"
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"city": "Oslo"}
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == "c1" and result["content"] == "sunny in Oslo"
    assert result["role"] == "tool"


async def test_an_approval_interrupts_and_resume_approves() -> None:
    events = await events_of((), "pay ann")
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["outcome"]["type"] == "interrupt"
    [interrupt] = finished["outcome"]["interrupts"]
    assert interrupt["id"] == "call_pay" and interrupt["toolCallId"] == "call_pay"
    assert interrupt["reason"] == "tool_approval"
    assert not any(e["type"] == "TOOL_CALL_RESULT" for e in events)

    # the client sends the snapshot back with a resume entry
    snapshot = next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    run_input = RunAgentInput.model_validate(
        {
            "threadId": "thread-1",
            "runId": "run-2",
            "state": None,
            "messages": snapshot,
            "tools": [],
            "context": [],
            "forwardedProps": None,
            "resume": [
                {"interruptId": "call_pay", "status": "resolved", "payload": {"approved": True}}
            ],
        }
    )
    history = agui_messages_to_history(run_input.messages)
    answers = agui_answers(run_input.resume)
    assert answers == {"call_pay": Approved()}
    events = await events_of(history, None, answers)
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "sent 5 cents to ann"
    assert events[-1]["outcome"] == {"type": "success"}


async def test_an_error_is_run_error() -> None:
    events = await events_of((), "fail")
    assert kinds(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert "the model is down" not in events[-1]["message"]  # issue 36: in the log only
    assert events[-1]["message"].startswith("the run failed (error id ")
    assert events[-1]["code"] == "run_failed"


def test_resume_entries_approve_only_with_a_true_boolean() -> None:
    entries = [
        ResumeEntry(interrupt_id="a", status="resolved", payload={"approved": True}),
        ResumeEntry(interrupt_id="b", status="resolved", payload={"approved": "true"}),
        ResumeEntry(interrupt_id="c", status="cancelled", payload={"approved": True}),
        ResumeEntry(
            interrupt_id="d", status="resolved", payload={"approved": False, "reason": "no"}
        ),
    ]
    assert agui_answers(entries) == {
        "a": Approved(),
        "b": Denied(),
        "c": Denied(),
        "d": Denied("no"),
    }


def test_history_round_trips_exactly_through_agui_messages() -> None:
    call = ToolCallPart("c1", "get_weather", '{"city": "Oslo"}')
    history = (
        Message.user("Weather?"),
        attrs.evolve(
            Message.assistant("Looking.", tool_calls=[call]), run_id="r", usage=Usage(1, 2)
        ),
        Message.tool_result("c1", "get_weather", "rain"),
        Message.tool_result("c2", "get_weather", "no", failed=True),
        Message.assistant("Rain."),
    )
    messages = history_to_agui_messages(history)
    assert [type(m) for m in messages] == [
        UserMessage,
        AssistantMessage,
        ToolMessage,
        ToolMessage,
        AssistantMessage,
    ]
    assert messages[3].error == "no"
    assert agui_messages_to_history(messages) == history


def test_plain_agui_messages_become_history() -> None:
    messages = [
        SystemMessage(id="s", content="You obey me now."),
        UserMessage(id="u", content="hi"),
        AssistantMessage(
            id="a",
            content=None,
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
            ],
        ),
        ToolMessage(id="t", content="rain", tool_call_id="c1"),
    ]
    assert agui_messages_to_history(messages) == (
        Message.system("You obey me now."),
        Message.user("hi"),
        Message.assistant(tool_calls=[ToolCallPart("c1", "get_weather", "{}")]),
        Message.tool_result("c1", "get_weather", "rain"),
    )
