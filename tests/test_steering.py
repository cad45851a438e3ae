"""Steering a running run (issue 36 item 1): a message sent while the agent works joins
the run at its next safe point, on plain asyncio (the conformance suite runs the same on
DBOS and Temporal)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from golem_core import Message, Role, TextPart, ThinkingPart, ToolCallPart, URLPart, check_pairing
from golem_core.loop import Steered
from golem_shell import Agent, FunctionModel, RunSteered, Steering, UsageError

pytestmark = pytest.mark.anyio


def _model(seen: list[list[str]]) -> FunctionModel:
    def answer(request: Any) -> Message | str:
        seen.append([m.text for m in request.messages if m.role is Role.USER])
        if not any(m.role is Role.TOOL for m in request.messages):
            call = ToolCallPart("c1", "charge", json.dumps({"account": "US-1"}))
            return Message(Role.ASSISTANT, (call,))
        users = [m.text for m in request.messages if m.role is Role.USER]
        return f"noted: {users[-1]}"

    return FunctionModel(answer)


async def test_a_message_sent_while_a_tool_runs_joins_before_the_next_request() -> None:
    seen: list[list[str]] = []
    started, release = asyncio.Event(), asyncio.Event()

    async def charge(account: str) -> str:
        """Charge an account."""
        started.set()
        await release.wait()
        return f"charged {account}"

    steering = Steering()
    events: list[Any] = []
    agent = Agent(_model(seen), tools=[charge])
    run = asyncio.create_task(agent.run("charge me", steering=steering, on_event=events.append))
    await started.wait()
    steering.send("actually, use the EU account")
    release.set()
    result = await run
    assert result.output == "noted: actually, use the EU account"
    assert seen[-1] == ["charge me", "actually, use the EU account"]
    roles = [m.role for m in result.messages]
    assert roles == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER, Role.ASSISTANT]
    assert check_pairing(result.messages) == ()  # never between a call and its result
    prompt, joined, answer = result.messages[0], result.messages[3], result.messages[4]
    # its own stamps: the run's ids where it joined, the time it was sent
    assert (joined.run_id, joined.conversation_id) == (result.run_id, result.conversation_id)
    assert joined.created_at is not None and prompt.created_at is not None
    assert answer.created_at is not None
    assert prompt.created_at <= joined.created_at <= answer.created_at
    steered = [e for e in events if isinstance(e, RunSteered)]
    assert [(e.request, e.messages) for e in steered] == [(2, 1)]
    assert [m.text for m in steering.taken] == [result.messages[3].text] and not steering.left
    with pytest.raises(UsageError, match="has ended"):
        steering.send("too late")  # refused, and the caller still holds it


async def test_a_message_sent_before_the_output_is_taken_asks_again() -> None:
    steering = Steering()
    answers: list[str] = []

    def answer(request: Any) -> str:
        if len(answers) == 0:
            steering.send("and in French")  # arrives while the model answers
        answers.append(request.messages[-1].text)
        return f"answer {len(answers)}"

    result = await Agent(FunctionModel(answer)).run("hello", steering=steering)
    assert result.output == "answer 2"  # the first answer was not taken as the output
    assert [m.text for m in result.messages] == [
        "hello",
        "answer 1",
        "and in French",
        "answer 2",
    ]


async def test_a_steering_serves_one_run_and_steered_takes_user_messages() -> None:
    steering = Steering()
    agent = Agent(FunctionModel(lambda request: "ok"))
    await agent.run("a", steering=steering)
    with pytest.raises(UsageError, match="one run"):
        await agent.run("b", steering=steering)
    with pytest.raises(ValueError, match="user messages"):
        Steered((Message.assistant("x"),))
    with pytest.raises(UsageError, match="needs some text"):
        Steering().send("  ")


@pytest.mark.parametrize(
    ("parts", "says"),
    [
        ([ToolCallPart("c1", "lookup", "{}")], "got a ToolCallPart"),
        ([TextPart("use the EU account"), ToolCallPart("c1", "lookup", "{}")], "ToolCallPart"),
        ([ThinkingPart("hmm")], "got a ThinkingPart"),
        ([TextPart("  ")], "needs some text"),
    ],
)
def test_a_steering_message_a_provider_would_drop_is_refused_at_send(
    parts: list[Any], says: str
) -> None:
    # a user message of only a tool call was left out of OpenAI's and Anthropic's
    # bodies: the run went on as if nothing had been sent (issue 49)
    steering = Steering()
    with pytest.raises(UsageError, match=says) as caught:
        steering.send(parts)
    assert "say it as text instead" in str(caught.value) or says == "needs some text"
    assert steering.left == ()
    steering.send([TextPart("use the EU account"), URLPart("https://example.com/a.png", "image")])
    assert len(steering.left) == 1
