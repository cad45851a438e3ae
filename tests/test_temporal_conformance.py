"""Issue 22: Temporal runs pass the conformance suite (``tests/conformance.py``): every
scenario gives the same output or failure, conversation (or partial), counts and lifecycle
events as the plain ``Agent``; answers are bound to the pause they answer, as on DBOS
(``tests/test_conformance.py``), on the session's real Temporal dev server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from conformance import (
    GATES,
    SCENARIOS,
    Gate,
    Outcome,
    Scenario,
    outcome_of,
    plain,
    steer_while_held,
)

from golem_core import Message, Role, ToolCallPart
from golem_shell import (
    Agent,
    Approved,
    DeferredResultsError,
    Denied,
    FunctionModel,
    RunError,
    Tool,
)

pytest.importorskip("temporalio", reason="the temporal extra is not installed")

from temporalio.client import Client

from golem_shell.temporal import TemporalAgent

pytestmark = pytest.mark.anyio

QUEUE = f"conformance-{uuid.uuid4().hex[:8]}"
_EVENTS: dict[str, list[Any]] = {}


def _record(event: Any) -> None:
    _EVENTS.setdefault(event.run_id, []).append(event)


_DURABLE = {
    s.name: TemporalAgent(
        s.agent(),
        name=f"conformance-{s.name}",
        task_queue=QUEUE,
        on_event=_record,
        models=s.models(),
        output_types=s.output_types(),
    )
    for s in SCENARIOS
}


class TemporalRuntime:
    """``TemporalAgent`` with a worker in this event loop: pauses are answered in the
    same run (the same workflow)."""

    name = "temporal"

    def __init__(self, client: Client) -> None:
        self.client = client

    async def run(self, scenario: Scenario) -> Outcome:
        durable = _DURABLE[scenario.name]
        run_id = f"conformance-{scenario.name}-{uuid.uuid4()}"
        GATES[scenario.name] = Gate()
        await durable.start(
            self.client,
            scenario.prompt,
            history=scenario.history,
            run_id=run_id,
            conversation_id="conformance",
            output_type=scenario.run_output_type,
            **scenario.options,
        )
        await steer_while_held(scenario, lambda text: durable.steer(self.client, run_id, text))
        for answers in scenario.answers:
            waiting = await durable.waiting(self.client, run_id, timeout=30)
            await durable.answer(self.client, run_id, answers, pause=waiting.pause)
        try:
            result = await durable.result(self.client, run_id)
        except RunError as e:
            return outcome_of(None, e, _EVENTS.get(run_id, []))
        return outcome_of(result, None, _EVENTS.get(run_id, []))


@asynccontextmanager
async def _runtime(address: str) -> AsyncIterator[TemporalRuntime]:
    client = await Client.connect(address)
    async with _DURABLE["text"].worker(client):
        yield TemporalRuntime(client)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_temporal_runs_conform_to_plain_runs(
    temporal_server: Any, scenario: Scenario
) -> None:
    expected = await plain.run(scenario)
    async with _runtime(temporal_server.address) as runtime:
        got = await runtime.run(scenario)
    assert got == expected


# -- answers are bound to the pause they answer --------------------------------------------

_DELETED: list[str] = []


def _remove(path: str) -> str:
    """Remove a file."""
    _DELETED.append(path)
    return f"removed {path}"


def _numbered_from_zero(request: Any) -> Message | str:
    """A provider that numbers its calls ``call_0`` in every response."""
    turns = sum(1 for m in request.messages if m.role is Role.ASSISTANT)
    if turns < 2:
        path = ["/a", "/b"][turns]
        return Message(Role.ASSISTANT, (ToolCallPart("call_0", "remove", f'{{"path": "{path}"}}'),))
    return "after: " + " | ".join(m.text for m in request.messages if m.role is Role.TOOL)


_REMOVER = TemporalAgent(
    Agent(
        FunctionModel(_numbered_from_zero),
        tools=[Tool.from_function(_remove, name="remove", kind="approval")],
    ),
    name="conformance-remover",
    task_queue=QUEUE,
)


async def _waiting_at(client: Client, run_id: str, pause: int) -> Any:
    for _ in range(400):
        waiting = await _REMOVER.waiting(client, run_id, timeout=5)
        if waiting.pause == pause and waiting:
            return waiting
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached pause {pause}")


async def test_a_repeated_approval_never_approves_the_next_pause(temporal_server: Any) -> None:
    _DELETED.clear()
    async with _runtime(temporal_server.address) as runtime:
        client = runtime.client
        run_id = await _REMOVER.start(client, "clean", run_id=f"double-click-{uuid.uuid4()}")
        first = await _waiting_at(client, run_id, 1)
        assert [d.call.id for d in first] == ["call_0"]
        await _REMOVER.answer(client, run_id, {"call_0": Approved()}, pause=first.pause)
        second = await _waiting_at(client, run_id, 2)  # the next call has the same id
        assert second[0].call.arguments_object == {"path": "/b"}
        with pytest.raises(DeferredResultsError, match="stale"):  # the double click
            await _REMOVER.answer(client, run_id, {"call_0": Approved()}, pause=first.pause)
        assert _DELETED == ["/a"]
        await _REMOVER.answer(client, run_id, {"call_0": Denied("no")}, pause=second.pause)
        result = await _REMOVER.result(client, run_id)
    assert result.output == "after: removed /a | denied: no"
    assert _DELETED == ["/a"]


async def test_a_stale_answer_arriving_late_is_refused_by_the_run(temporal_server: Any) -> None:
    """An HTTP retry that slipped past the client's check reaches the run: its update
    validator refuses it, and the run keeps waiting at its own pause."""
    from temporalio.client import WorkflowUpdateFailedError

    from golem_shell.engines._records import AnswersSent, encode
    from golem_shell.temporal import ANSWER_UPDATE

    _DELETED.clear()
    async with _runtime(temporal_server.address) as runtime:
        client = runtime.client
        run_id = await _REMOVER.start(client, "clean", run_id=f"late-{uuid.uuid4()}")
        first = await _waiting_at(client, run_id, 1)
        await _REMOVER.answer(client, run_id, {"call_0": Approved()}, pause=first.pause)
        await _waiting_at(client, run_id, 2)
        stale = encode(AnswersSent(1, {"call_0": Approved()}))
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await client.get_workflow_handle(run_id).execute_update(ANSWER_UPDATE, stale)
        assert "pause 1" in str(refused.value.cause)
        still = await _REMOVER.waiting(client, run_id)
        assert still.pause == 2 and [d.call.id for d in still] == ["call_0"]
        assert _DELETED == ["/a"]
        await client.get_workflow_handle(run_id).terminate("done with the test")


async def test_an_answer_when_nothing_waits_is_refused(temporal_server: Any) -> None:
    async with _runtime(temporal_server.address) as runtime:
        client = runtime.client
        durable = _DURABLE["text"]
        run_id = await durable.start(client, "go", run_id=f"nothing-{uuid.uuid4()}")
        await durable.result(client, run_id)
        with pytest.raises(DeferredResultsError, match="not waiting"):
            await durable.answer(client, run_id, {"x": Approved()})
