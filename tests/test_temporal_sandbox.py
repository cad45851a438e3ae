"""The proof that golem_core is pure: it runs inside Temporal's workflow sandbox as it is.

Temporal's sandbox re-imports a workflow's modules in isolation and refuses, at import and
at run time, what would make a workflow non-deterministic (the clock, randomness, files,
threads, the network). Here a workflow imports ``golem_core`` in the sandbox with
Temporal's default restrictions, without passing golem_core through and without any
``imports_passed_through`` escape, and drives a whole run of the sans-IO loop there
(``start_run``, ``next_command``, ``receive``, the JSON codec): the run it returns is the
same run driven outside. Only golem_core's third-party dependencies (attrs, cattrs,
returns) are passed through: attrs reads ``platform`` at import, which the sandbox refuses.
A fresh import is checked (a marker set on the host's golem_core is absent inside), and a
control shows the sandbox does refuse effects: ``golem_shell``, the effects shell, cannot
be imported there.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the temporal extra is not installed")

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import (
    SandboxedWorkflowRunner,
    SandboxRestrictions,
)

import golem_core
from golem_core import (
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    history_to_jsonable,
)
from golem_core.loop import (
    ExecuteTools,
    Finish,
    ModelResponded,
    OutputValid,
    RequestModel,
    RunConfig,
    ToolReturned,
    ToolSpec,
    ToolsReturned,
    ValidateOutput,
    next_command,
    receive,
    start_run,
)

DEPENDENCIES = ("attr", "attrs", "cattr", "cattrs", "returns")
"""golem_core's third-party dependencies: the only modules passed through."""
STARTED = "2026-01-02T03:04:05+00:00"


def drive_scripted_run(now: datetime) -> list[Any]:
    """A whole run of the loop with scripted outcomes (two tool rounds, then text), as
    JSON: the same function runs inside the sandbox and outside."""
    add = ToolDefinition("add", "Add two numbers.", {"type": "object"})
    config = RunConfig(
        run_id="run-1",
        conversation_id="conv-1",
        instructions="be brief",
        tools=(ToolSpec(add),),
    )
    state = start_run(config, (), (TextPart("add things"),), now=now)
    turns = 0
    commands: list[str] = []
    while True:
        command = next_command(state)
        commands.append(type(command).__name__)
        outcome: Any
        if isinstance(command, RequestModel):
            turns += 1
            if turns <= 2:
                call = ToolCallPart(f"c{turns}", "add", f'{{"a": {turns}, "b": 10}}')
                reply = Message(Role.ASSISTANT, (call,), created_at=now)
            else:
                reply = Message(Role.ASSISTANT, (TextPart("sum is 12"),), created_at=now)
            outcome = ModelResponded(reply)
        elif isinstance(command, ExecuteTools):
            outcome = ToolsReturned(
                tuple(ToolReturned(str(c.id), (TextPart(str(10 + turns)),)) for c in command.calls)
            )
        elif isinstance(command, ValidateOutput):
            assert isinstance(command.candidate, Message)
            outcome = OutputValid(command.candidate.text)
        else:
            assert isinstance(command, Finish), command
            return [commands, command.output, history_to_jsonable(command.state.messages)]
        state = receive(state, outcome)


@workflow.defn(name="golem-core-in-the-sandbox")
class CoreInTheSandbox:
    @workflow.run
    async def run(self, started: str) -> list[Any]:
        fresh = not hasattr(golem_core, "_host_marker")  # set on the host's copy only
        try:
            import golem_shell  # noqa: F401
        except Exception as e:  # the sandbox refuses the shell's import-time effects
            shell = type(e).__name__
        else:  # pragma: no cover - would mean the sandbox checks nothing
            shell = "imported"
        return [fresh, shell, drive_scripted_run(datetime.fromisoformat(started))]


async def _in_the_sandbox(address: str) -> list[Any]:
    client = await Client.connect(address)
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*DEPENDENCIES)
    queue = f"sandbox-{uuid.uuid4()}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[CoreInTheSandbox],
        workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions),
    ):
        result: list[Any] = await client.execute_workflow(
            CoreInTheSandbox.run,
            STARTED,
            id=f"sandbox-{uuid.uuid4()}",
            task_queue=queue,
            execution_timeout=timedelta(seconds=60),
        )
        return result


@pytest.mark.filterwarnings("ignore:Module .* was imported after initial workflow load")
def test_golem_core_runs_a_whole_loop_inside_the_workflow_sandbox(temporal_server: Any) -> None:
    assert not any(
        m == "golem_core" or m.startswith("golem_core.")
        for m in SandboxRestrictions.default.passthrough_modules
    )
    golem_core._host_marker = True  # type: ignore[attr-defined]
    try:
        fresh, shell, inside = asyncio.run(_in_the_sandbox(temporal_server.address))
    finally:
        del golem_core._host_marker  # type: ignore[attr-defined]
    assert fresh is True  # golem_core was imported anew inside the sandbox, not passed through
    assert shell == "RestrictedWorkflowAccessError"  # the control: effects are refused there
    outside = drive_scripted_run(datetime.fromisoformat(STARTED).astimezone(UTC))
    assert inside == outside
    commands, output, messages = inside
    assert commands == [
        "RequestModel",
        "ExecuteTools",
        "RequestModel",
        "ExecuteTools",
        "RequestModel",
        "ValidateOutput",
        "Finish",
    ]
    assert output == "sum is 12"
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
