"""Durable runs on Temporal (golem_shell.temporal): in process, and killed workers that resume.

Every test runs against the session's real Temporal dev server (``temporal_server``
fixture, ``tests/temporal_server.py``). The in-process tests run a worker in the test's
event loop. The fault tests run real worker processes (``temporal_worker.py``) against
the loopback model server of the DBOS tests, which counts requests, with a tool that
logs its executions: a worker is SIGKILLed with each effect of a 3-request, 2-tool run
in flight (and once after the run completed), another worker is started, and every run
must complete with no recorded effect repeated and the history of an uninterrupted run;
a run paused for approval survives the kill; two workers share one task queue.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from golem_core import Message, Role, ToolCallPart
from golem_shell import (
    Agent,
    Approved,
    DeferredResultsError,
    Denied,
    ExternalResult,
    FunctionModel,
    RunError,
    Stage,
    UsageError,
    tool,
)

pytest.importorskip("temporalio", reason="the temporal extra is not installed")

from temporalio.client import Client

from golem_shell.temporal import TemporalAgent

TESTS = Path(__file__).resolve().parent
WORKER = TESTS / "temporal_worker.py"


def _plain(messages: tuple[Message, ...]) -> list[Message]:
    """Messages without their clock readings: two runs differ only there."""
    return [attrs.evolve(m, created_at=None) for m in messages]


# -- in process ---------------------------------------------------------------------------


def _turns(request: Any) -> int:
    return sum(1 for m in request.messages if m.role is Role.ASSISTANT)


class Calls:
    """A model function that counts its calls."""

    def __init__(self, function: Callable[[Any], Message | str]) -> None:
        self.function = function
        self.count = 0

    def __call__(self, request: Any) -> Message | str:
        self.count += 1
        return self.function(request)


def _two_tools(request: Any) -> Message | str:
    n = _turns(request)
    if n < 2:
        call = ToolCallPart(f"c{n + 1}", "add", json.dumps({"a": n, "b": 10}))
        return Message(Role.ASSISTANT, (call,))
    return f"sum is {request.messages[-1].text}"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@attrs.frozen
class Verdict:
    label: str
    score: int


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool(external=True)
def lookup(key: str) -> str:
    """Look a key up elsewhere."""
    raise AssertionError("an external tool is never executed by the run")


def _deferred(request: Any) -> Message | str:
    if _turns(request) == 0:
        return Message(
            Role.ASSISTANT,
            (
                ToolCallPart("d1", "delete", '{"path": "/tmp/x"}'),
                ToolCallPart("e1", "lookup", '{"key": "k"}'),
            ),
        )
    results = [m.text for m in request.messages if m.role is Role.TOOL]
    return "after: " + " | ".join(results)


@tool
def crash() -> str:
    """Crash."""
    raise RuntimeError("boom")


COUNTED = Calls(_two_tools)
AGENTS: dict[str, Agent[None, Any]] = {
    "two-tools": Agent(FunctionModel(COUNTED), tools=[add]),
    "verdict": Agent(
        FunctionModel(
            lambda r: Message(
                Role.ASSISTANT,
                (ToolCallPart("v1", "final_result", '{"label": "good", "score": 3}'),),
            )
        ),
        output_type=Verdict,
    ),
    "deferred": Agent(FunctionModel(_deferred), tools=[delete, lookup]),
    "model-fails": Agent(FunctionModel(lambda r: 1 / 0)),
    "tool-crashes": Agent(
        FunctionModel(lambda r: Message(Role.ASSISTANT, (ToolCallPart("x", "crash", "{}"),))),
        tools=[crash],
    ),
    "bad-instructions": Agent(FunctionModel(lambda r: "hi"), dynamic_instructions=lambda c: 1 / 0),
    "instructed": Agent(
        FunctionModel(lambda r: f"told: {r.instructions}"),
        instructions="be brief",
        dynamic_instructions=lambda c: f"run {c.run_id}",
    ),
}
QUEUE = "golem-unit"
DURABLE = {
    name: TemporalAgent(agent, name=f"unit-{name}", task_queue=QUEUE)
    for name, agent in AGENTS.items()
}


@asynccontextmanager
async def _working(address: str) -> AsyncIterator[Client]:
    """A client and a worker for the unit agents, in this event loop."""
    client = await Client.connect(address)
    async with DURABLE["two-tools"].worker(client):
        yield client


def _id(label: str) -> str:
    return f"{label}-{uuid.uuid4()}"


@pytest.mark.anyio
async def test_durable_run_equals_plain_run(temporal_server: Any) -> None:
    async with _working(temporal_server.address) as client:
        run_id = _id("two-tools")
        result = await DURABLE["two-tools"].run(client, "add things", run_id=run_id)
        again = await DURABLE["two-tools"].run(client, "add things", run_id=run_id)
        by_id = await DURABLE["two-tools"].result(client, run_id)
    plain = await AGENTS["two-tools"].run(
        "add things", run_id=run_id, conversation_id=result.conversation_id
    )
    assert result.output == plain.output == "sum is 11"
    assert _plain(result.messages) == _plain(plain.messages)
    assert _plain(result.new_messages) == _plain(plain.new_messages)
    assert (result.usage, result.requests, result.tool_executions) == (
        plain.usage,
        plain.requests,
        plain.tool_executions,
    )
    assert result.run_id == run_id
    assert again.messages == by_id.messages == result.messages  # one run per run id


@pytest.mark.anyio
async def test_instructions_history_and_structured_output(temporal_server: Any) -> None:
    async with _working(temporal_server.address) as client:
        first = await DURABLE["instructed"].run(client, "hello", run_id=_id("instr"))
        second = await DURABLE["instructed"].run(
            client, "again", history=first.messages, run_id=_id("instr")
        )
        verdict = await DURABLE["verdict"].run(client, "judge", run_id=_id("verdict"))
        read_back = await DURABLE["verdict"].result(client, verdict.run_id)
        history = await client.get_workflow_handle(second.run_id).fetch_history()
    assert first.output == f"told: be brief\n\nrun {first.run_id}"
    assert second.conversation_id == first.conversation_id
    assert second.output == f"told: be brief\n\nrun {second.run_id}"
    assert [m.role for m in second.new_messages] == [Role.USER, Role.ASSISTANT]
    activities = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert activities == ["golem.instructions", "golem.request"]
    assert verdict.output == read_back.output == Verdict("good", 3)


@pytest.mark.anyio
async def test_failures_are_run_errors_with_the_recorded_partial(temporal_server: Any) -> None:
    async with _working(temporal_server.address) as client:
        with pytest.raises(RunError) as info:
            await DURABLE["model-fails"].run(client, "hi", run_id=_id("model-fails"))
        assert info.value.stage is Stage.REQUEST
        assert "ZeroDivisionError" in info.value.message
        assert info.value.partial is None
        run_id = _id("tool-crashes")
        with pytest.raises(RunError) as info:
            await DURABLE["tool-crashes"].run(client, "hi", run_id=run_id)
        assert info.value.stage is Stage.TOOL and "boom" in info.value.message
        partial = info.value.partial
        assert partial is not None and partial.requests == 1
        assert partial.messages[-1].tool_calls[0].name == "crash"
        with pytest.raises(RunError) as again:  # reading the result again fails the same way
            await DURABLE["tool-crashes"].result(client, run_id)
        assert again.value.stage is Stage.TOOL
        with pytest.raises(RunError) as info:
            await DURABLE["bad-instructions"].run(client, "hi", run_id=_id("bad-instructions"))
        assert info.value.stage is Stage.INSTRUCTIONS


@pytest.mark.anyio
async def test_a_paused_run_waits_for_answers_bound_to_its_pause(temporal_server: Any) -> None:
    durable = DURABLE["deferred"]
    async with _working(temporal_server.address) as client:
        run_id = await durable.start(client, "clean up", run_id=_id("deferred"))
        waiting = await durable.waiting(client, run_id, timeout=30)
        assert [(d.call.id, d.kind) for d in waiting] == [("d1", "approval"), ("e1", "external")]
        with pytest.raises(DeferredResultsError) as refused:
            await durable.answer(client, run_id, {"forged": Approved()})
        assert refused.value.call_ids == ("forged",)
        with pytest.raises(DeferredResultsError):  # an external call takes a result
            await durable.answer(client, run_id, {"e1": Approved()})
        with pytest.raises(DeferredResultsError, match="pause"):  # not this pause
            await durable.answer(client, run_id, {"d1": Approved()}, pause=waiting.pause + 1)
        await durable.answer(client, run_id, {"d1": Approved()}, pause=waiting.pause)
        for _ in range(400):
            now = await durable.waiting(client, run_id)
            if [d.call.id for d in now] == ["e1"]:
                break
            await asyncio.sleep(0.02)
        assert [d.call.id for d in now] == ["e1"] and now.pause > waiting.pause
        with pytest.raises(DeferredResultsError, match="stale"):  # a repeated answer
            await durable.answer(client, run_id, {"d1": Approved()}, pause=waiting.pause)
        await durable.answer(client, run_id, {"e1": ExternalResult.text("v=42")})
        result = await durable.result(client, run_id)
        assert await durable.waiting(client, run_id) == ()
    assert result.output == "after: deleted /tmp/x | v=42"
    assert result.requests == 2 and result.tool_executions == 1
    assert [m.role for m in result.new_messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.TOOL,
        Role.ASSISTANT,
    ]


@pytest.mark.anyio
async def test_a_stale_answer_that_reaches_the_run_is_refused(temporal_server: Any) -> None:
    """The run's update validator refuses answers for a pause that is over, even when
    they bypass the client's own check."""
    from temporalio.client import WorkflowUpdateFailedError

    from golem_shell._records import AnswersSent, encode
    from golem_shell.temporal import ANSWER_UPDATE

    durable = DURABLE["deferred"]
    async with _working(temporal_server.address) as client:
        run_id = await durable.start(client, "clean up", run_id=_id("stale"))
        waiting = await durable.waiting(client, run_id, timeout=30)
        handle = client.get_workflow_handle(run_id)
        stale = encode(AnswersSent(waiting.pause - 1, {"d1": Denied("old")}))
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(ANSWER_UPDATE, stale)
        await durable.answer(client, run_id, {"d1": Denied("no"), "e1": Denied("none")})
        result = await durable.result(client, run_id)
    assert result.output == "after: denied: no | denied: none"
    assert all(m.failed for m in result.new_messages if m.role is Role.TOOL)


@pytest.mark.anyio
async def test_misuse_is_a_usage_error(temporal_server: Any) -> None:
    async with _working(temporal_server.address) as client:
        with pytest.raises(UsageError, match="no durable run"):
            await DURABLE["two-tools"].result(client, _id("never-started"))
        owned = await DURABLE["verdict"].run(client, "judge", run_id=_id("owned"))
        with pytest.raises(UsageError, match="not a run of TemporalAgent 'unit-two-tools'"):
            await DURABLE["two-tools"].result(client, owned.run_id)
    with pytest.raises(UsageError, match="wraps an Agent, not FunctionModel"):
        TemporalAgent(FunctionModel(lambda r: "x"), name="not-an-agent")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="non-empty name"):
        TemporalAgent(AGENTS["two-tools"], name="")
    with pytest.raises(UsageError, match="already registered"):
        TemporalAgent(Agent(FunctionModel(lambda r: "x")), name="unit-two-tools")


def test_importing_without_temporalio_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['temporalio'] = None\n"
        "try:\n    import golem_shell.temporal\n"
        "except Exception as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.startswith("UsageError")
    assert "[temporal]" in out
