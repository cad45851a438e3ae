"""Issue 22: ``Agent``, DBOS and Temporal runs share one driver and pass one conformance
suite: the same scenarios give the same output or failure, the same conversation (or
partial), the same counts and the same lifecycle events on every runtime
(``tests/conformance.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conformance import (
    GATES,
    SCENARIOS,
    Gate,
    Outcome,
    Scenario,
    Verdict,
    outcome_of,
    plain,
    steer_while_held,
)
from dbos_launch import dbos_fixture

from golem_shell import RunError

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")

from golem_shell.durable import DurableAgent  # noqa: E402

pytestmark = pytest.mark.anyio

_EVENTS: dict[str, list[Any]] = {}


def _record(event: Any) -> None:
    _EVENTS.setdefault(event.run_id, []).append(event)


_DURABLE = {
    s.name: DurableAgent(
        s.agent(),
        name=f"conformance-{s.name}",
        on_event=_record,
        steerable=s.steer is not None,
        models=s.models(),
        output_types=s.output_types(),
    )
    for s in SCENARIOS
}


class DBOSRuntime:
    """``DurableAgent`` on one DBOS launch (SQLite): pauses are answered in the same run."""

    name = "dbos"

    async def run(self, scenario: Scenario) -> Outcome:
        durable = _DURABLE[scenario.name]
        run_id = f"conformance-{scenario.name}"
        GATES[scenario.name] = Gate()
        await durable.start(
            scenario.prompt,
            history=scenario.history,
            run_id=run_id,
            conversation_id="conformance",
            output_type=scenario.run_output_type,
            **scenario.options,
        )
        await steer_while_held(scenario, lambda text: durable.steer(run_id, text))
        for answers in scenario.answers:
            waiting = await durable.waiting(run_id, timeout=10)
            await durable.answer(run_id, answers, pause=waiting.pause)
        try:
            result = await durable.result(run_id)
        except RunError as e:
            return outcome_of(None, e, _EVENTS.get(run_id, []))
        return outcome_of(result, None, _EVENTS.get(run_id, []))


launched = dbos_fixture("golem-conformance")
"""One DBOS on a fresh SQLite file for this module's tests; yields the file."""


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_dbos_runs_conform_to_plain_runs(launched: Path, scenario: Scenario) -> None:
    expected = await plain.run(scenario)
    got = await DBOSRuntime().run(scenario)
    assert got == expected


async def test_the_plain_outcomes_are_what_the_scenarios_mean() -> None:
    """The reference itself is checked, so that agreeing runtimes agree on something."""
    outcomes = {s.name: await plain.run(s) for s in SCENARIOS}
    assert outcomes["text"].output == "hello"
    assert outcomes["sequential-tools"].output == "sum is 11"
    assert outcomes["sequential-tools"].requests == 3
    assert outcomes["sequential-tools"].tool_executions == 2
    assert outcomes["parallel-tools"].output == "3 + 7"
    assert outcomes["unknown-tool"].output == "recovered"
    assert outcomes["structured"].output.label == "good"
    assert outcomes["tool-crash"].failure is not None
    assert outcomes["tool-crash"].failure[0] == "tool"
    assert outcomes["model-fails"].failure is not None
    assert outcomes["model-fails"].failure[0] == "request"
    assert outcomes["output-validator"].output == "FINAL"
    assert outcomes["output-validator"].requests == 2
    assert outcomes["approved"].output == "after: deleted /tmp/x"
    assert outcomes["denied"].output == "after: denied: not today"
    assert outcomes["sequential-tools"].events == (
        "RunStarted",
        "RequestStarted",
        "RequestFinished",
        "ToolStarted",
        "ToolFinished",
        "RequestStarted",
        "RequestFinished",
        "ToolStarted",
        "ToolFinished",
        "RequestStarted",
        "RequestFinished",
        "RunFinished",
    )
    assert outcomes["tool-crash"].events[-1] == "RunFailed"
    assert outcomes["model-keyword"].output == "from the run's own model"
    assert outcomes["settings-keyword"].output == "temperature 0.25"
    assert outcomes["usage-limits-keyword"].failure is not None
    assert outcomes["usage-limits-keyword"].failure[0] == "limit"
    assert outcomes["usage-limits-keyword"].requests == 2
    assert outcomes["output-type-keyword"].output == Verdict("good", 3)
    assert outcomes["deps-keyword"].output == "for ada"
    await asyncio.sleep(0)


# -- issue 28 item 4: answers are bound to the pause they answer ---------------------------

_DELETED: list[str] = []


def _remove(path: str) -> str:
    """Remove a file."""
    _DELETED.append(path)
    return f"removed {path}"


def _numbered_from_zero(request: Any) -> Any:
    """A provider that numbers its calls ``call_0`` in every response."""
    from golem_core import Message, Role, ToolCallPart

    turns = sum(1 for m in request.messages if m.role is Role.ASSISTANT)
    if turns < 2:
        path = ["/a", "/b"][turns]
        return Message(Role.ASSISTANT, (ToolCallPart("call_0", "remove", f'{{"path": "{path}"}}'),))
    return "after: " + " | ".join(m.text for m in request.messages if m.role is Role.TOOL)


def _remove_agent() -> Any:
    from golem_shell import Agent, FunctionModel, Tool

    return Agent(
        FunctionModel(_numbered_from_zero),
        tools=[Tool.from_function(_remove, name="remove", kind="approval")],
    )


_REMOVER = DurableAgent(_remove_agent(), name="conformance-remover")


async def _waiting_at(run_id: str, pause: int) -> Any:
    for _ in range(400):
        waiting = await _REMOVER.waiting(run_id, timeout=5)
        if waiting.pause == pause and waiting:
            return waiting
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached pause {pause}")


async def test_a_repeated_approval_never_approves_the_next_pause(launched: Path) -> None:
    from golem_shell import Approved, DeferredResultsError, Denied

    _DELETED.clear()
    run_id = await _REMOVER.start("clean", run_id="answers-double-click")
    first = await _waiting_at(run_id, 1)
    assert [d.call.id for d in first] == ["call_0"]
    await _REMOVER.answer(run_id, {"call_0": Approved()}, pause=first.pause)
    second = await _waiting_at(run_id, 2)  # the next call has the same id
    assert second[0].call.arguments_object == {"path": "/b"}
    with pytest.raises(DeferredResultsError, match="stale"):  # the double click
        await _REMOVER.answer(run_id, {"call_0": Approved()}, pause=first.pause)
    assert _DELETED == ["/a"]
    await _REMOVER.answer(run_id, {"call_0": Denied("no")}, pause=second.pause)
    result = await _REMOVER.result(run_id)
    assert result.output == "after: removed /a | denied: no"
    assert _DELETED == ["/a"]


async def test_a_stale_answer_arriving_late_is_refused_by_the_run(launched: Path) -> None:
    """An HTTP retry that slipped past the client's check reaches the run itself."""
    from golem_core import Approved
    from golem_shell.durable import ANSWERS_TOPIC
    from golem_shell.engines._records import AnswersSent, encode
    from golem_shell.engines.dbos._common import REJECTED_EVENT

    _DELETED.clear()
    run_id = await _REMOVER.start("clean", run_id="answers-late")
    first = await _waiting_at(run_id, 1)
    await _REMOVER.answer(run_id, {"call_0": Approved()}, pause=first.pause)
    await _waiting_at(run_id, 2)
    stale = encode(AnswersSent(1, {"call_0": Approved()}))
    await dbos.DBOS.send_async(run_id, stale, ANSWERS_TOPIC)
    rejected = None
    for _ in range(400):
        rejected = await dbos.DBOS.get_event_async(run_id, REJECTED_EVENT, 0)
        if rejected:
            break
        await asyncio.sleep(0.02)
    assert rejected is not None and "pause 1" in rejected and "now at pause 2" in rejected
    still = await _REMOVER.waiting(run_id)
    assert still.pause == 2 and [d.call.id for d in still] == ["call_0"]
    assert _DELETED == ["/a"]
    await dbos.DBOS.cancel_workflow_async(run_id)


async def test_an_answer_when_nothing_waits_is_refused(launched: Path) -> None:
    from golem_core import Approved
    from golem_shell import DeferredResultsError

    run_id = await _DURABLE["text"].start("go", run_id="answers-nothing")
    await _DURABLE["text"].result(run_id)
    with pytest.raises(DeferredResultsError, match="not waiting"):
        await _DURABLE["text"].answer(run_id, {"x": Approved()})
