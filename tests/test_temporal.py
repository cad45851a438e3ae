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
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from durable_app import (
    RECORDED_STEPS,
    SCENARIOS,
    Verdict,
    add,
    assert_each_effect_ran_once,
    block_kill_points,
    importing_without,
    judge_or_say,
    make_agent,
    reached_kill_points,
    tool_counts,
    two_tools,
    unit_agents,
    without_clock,
)
from durable_server import DurableModelServer, running_server
from worker_process import Worker, until

from golem_core import Role
from golem_shell import (
    Agent,
    Approved,
    DeferredResultsError,
    Denied,
    ExternalResult,
    FunctionModel,
    RunError,
    Stage,
    Steering,
    UsageError,
)

pytest.importorskip("temporalio", reason="the temporal extra is not installed")

from temporalio.client import Client

from golem_shell.engines._blobs import MESSAGE_CHAIN, MemoryBlobs
from golem_shell.temporal import TemporalAgent

TESTS = Path(__file__).resolve().parent
WORKER = TESTS / "temporal_worker.py"


# -- in process ---------------------------------------------------------------------------


UNIT = unit_agents()
AGENTS = UNIT.agents
COUNTED = UNIT.counted
EFFECTS_DONE = UNIT.effects_done
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
    assert without_clock(result.messages) == without_clock(plain.messages)
    assert without_clock(result.new_messages) == without_clock(plain.new_messages)
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
        with pytest.raises(DeferredResultsError, match="not waiting"):
            await durable.answer(client, run_id, {})
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

    from golem_shell.engines._records import AnswersSent, encode
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
async def test_two_answers_for_one_pause_apply_once(temporal_server: Any) -> None:
    """A double click: two answers for the same pause race; one applies, the other is
    refused (by the client's check, the run's validator, or the run itself), never kept
    for a later pause."""
    durable = DURABLE["deferred"]
    async with _working(temporal_server.address) as client:
        run_id = await durable.start(client, "clean up", run_id=_id("race"))
        waiting = await durable.waiting(client, run_id, timeout=30)
        answers = {"d1": Denied("no"), "e1": Denied("none")}
        outcomes = await asyncio.gather(
            durable.answer(client, run_id, answers, pause=waiting.pause),
            durable.answer(client, run_id, answers, pause=waiting.pause),
            return_exceptions=True,
        )
        result = await durable.result(client, run_id)
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], DeferredResultsError), outcomes
    assert result.output == "after: denied: no | denied: none"
    assert result.requests == 2


@pytest.mark.anyio
async def test_a_retried_answer_never_approves_the_next_pause(temporal_server: Any) -> None:
    """As on DBOS: the same answer sent again without ``pause=`` once the run paused on
    a new call with the same id is refused; bound to the WaitingCalls shown, it applies."""
    durable = DURABLE["same-ids"]
    async with _working(temporal_server.address) as client:
        run_id = await durable.start(client, "ship it", run_id=_id("same-ids"))
        first = await durable.waiting(client, run_id, timeout=30)
        assert [(d.call.id, d.call.name) for d in first] == [("call_0", "publish")]
        await durable.answer(client, run_id, {"call_0": Approved()})
        for _ in range(500):
            second = await durable.waiting(client, run_id)
            if second and second.pause > first.pause:
                break
            await asyncio.sleep(0.02)
        assert [(d.call.id, d.call.name) for d in second] == [("call_0", "wipe")]
        with pytest.raises(DeferredResultsError, match="earlier pause"):
            await durable.answer(client, run_id, {"call_0": Approved()})  # the retry
        with pytest.raises(DeferredResultsError, match="pause"):
            await durable.answer(client, run_id, {"call_0": Approved()}, pause=first)
        assert EFFECTS_DONE == ["publish"]
        await durable.answer(client, run_id, {"call_0": Denied("no")}, pause=second)
        result = await durable.result(client, run_id)
    assert result.output == "done" and EFFECTS_DONE == ["publish"]


def test_the_update_validator_itself_refuses_answers_that_do_not_fit() -> None:
    """The validator runs the core's check (nothing is recorded for a refused update):
    tested on its own, since the update handler refuses such answers too."""
    from temporalio.exceptions import ApplicationError

    from golem_core.loop import paused_from
    from golem_shell.engines._records import AnswersSent, encode
    from golem_shell.run._setup import run_config
    from golem_shell.temporal import GolemRun

    agent = AGENTS["deferred"]
    paused_run = agent.run_sync("clean up")
    config = run_config(agent.run_spec(), paused_run.run_id, paused_run.conversation_id, None)
    workflow_run = GolemRun()
    with pytest.raises(ApplicationError, match="not waiting"):
        workflow_run.check_answer(encode(AnswersSent(1, {"d1": Denied("no")})))
    workflow_run.paused = paused = paused_from(config, paused_run.messages)
    workflow_run.check_answer(encode(AnswersSent(paused.pauses, {"d1": Denied("no")})))  # fits
    for stale in (paused.pauses - 1, paused.pauses + 1):
        with pytest.raises(ApplicationError, match="pause") as refused:
            workflow_run.check_answer(encode(AnswersSent(stale, {"d1": Denied("no")})))
        assert refused.value.type == "Rejected"
    with pytest.raises(ApplicationError, match="forged"):
        workflow_run.check_answer(encode(AnswersSent(paused.pauses, {"forged": Approved()})))
    with pytest.raises(ApplicationError, match="cannot be read"):
        workflow_run.check_answer({"type": "answers"})


EVENTS: list[Any] = []
OBSERVED = TemporalAgent(
    Agent(FunctionModel(two_tools), tools=[add]),
    name="unit-observed",
    task_queue=QUEUE,
    on_event=EVENTS.append,
)


@pytest.mark.anyio
async def test_a_durable_run_reports_the_events_of_a_plain_run(temporal_server: Any) -> None:
    async with _working(temporal_server.address) as client:
        result = await OBSERVED.run(client, "add things", run_id=_id("observed"))
    plain: list[Any] = []
    await OBSERVED.agent.run(
        "add things",
        run_id=result.run_id,
        conversation_id=result.conversation_id,
        on_event=plain.append,
    )
    durable = [type(e).__name__ for e in EVENTS if e.run_id == result.run_id]
    assert durable == [type(e).__name__ for e in plain]
    assert durable[0] == "RunStarted" and durable[-1] == "RunFinished"


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


# -- the run keywords (issue 45 item 2; each keyword's outcome: test_temporal_conformance.py)


FAST = FunctionModel(lambda r: "from the fast model")
KEYWORDS = TemporalAgent(
    Agent(FunctionModel(judge_or_say)),
    name="unit-keywords",
    task_queue=QUEUE,
    models={"fast": FAST},
    output_types={"verdict": Verdict},
)


@pytest.mark.anyio
async def test_a_run_names_its_model_and_output_type_as_registered(temporal_server: Any) -> None:
    async with _working(temporal_server.address) as client:
        by_name = await KEYWORDS.run(client, "hi", model="fast", run_id=_id("kw"))
        by_instance = await KEYWORDS.run(client, "hi", model=FAST, run_id=_id("kw"))
        own = await KEYWORDS.run(client, "hi", run_id=_id("kw"))
        judged = await KEYWORDS.run(client, "judge", output_type="verdict", run_id=_id("kw"))
        again = await KEYWORDS.result(client, judged.run_id)
    assert [r.output for r in (by_name, by_instance, own)] == [
        "from the fast model",
        "from the fast model",
        "from the agent's model",
    ]
    # read back by run id, the output is the run's own type (recorded with its end)
    assert judged.output == again.output == Verdict("fine", 2)


@pytest.mark.anyio
async def test_keywords_that_cannot_be_recorded_are_refused(temporal_server: Any) -> None:
    refused: list[tuple[dict[str, Any], str]] = [
        ({"on_event": print}, r"on_event=.*TemporalAgent\(\.\.\., on_event=\.\.\.\)"),
        ({"steering": Steering()}, r"steering=.*TemporalAgent\.steer\(run_id"),
        ({"model": FunctionModel(lambda r: "x")}, r"model=.*register it.*models="),
        ({"model": "opnai:gpt-4o"}, "unknown model"),
        ({"deps": object()}, r"deps=.*as JSON.*TemporalAgent\(\.\.\., deps="),
        ({"deps": {"ids": (1, 2)}}, r"deps=.*as JSON"),  # a tuple would read back a list
    ]
    client = await Client.connect(temporal_server.address)
    for options, match in refused:
        run_id = _id("kw-refused")
        with pytest.raises(UsageError, match=match):
            await KEYWORDS.start(client, "hi", run_id=run_id, **options)
        with pytest.raises(UsageError, match="no durable run"):  # nothing was started
            await KEYWORDS.result(client, run_id)
    with pytest.raises(UsageError, match=r"output_type=.*register it.*output_types="):
        await KEYWORDS.run(client, "hi", output_type=int)
    with pytest.raises(TypeError, match="unexpected keyword argument 'temperature'"):
        await KEYWORDS.start(client, "hi", temperature=0.2)  # type: ignore[call-arg]


def test_importing_without_temporalio_names_the_extra() -> None:
    out = importing_without("temporalio", "golem_shell.temporal")
    assert out.startswith("UsageError")
    assert "[temporal]" in out


# -- killed workers ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_server() -> Iterator[DurableModelServer]:
    with running_server() as server:
        yield server


@pytest.fixture(scope="module")
def durable_app(model_server: DurableModelServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """This process's side of the fault tests: the agents, registered once (to start runs
    and read their results; the workers execute them)."""
    from temporal_worker import agents

    where = tmp_path_factory.mktemp("client")
    config = {"model": model_server.url, "log": str(where / "unused.log"), "queue": "unused"}
    return agents({**config, "blobs": str(where / "blobs.sqlite")})


def _worker(where: Path, identity: str, config: dict[str, Any]) -> Worker:
    """A worker process running ``temporal_worker.py`` as ``identity``."""
    return Worker(WORKER, where, identity, {**config, "identity": identity, "dir": str(where)})


async def _completed_activities(client: Client, run_id: str) -> list[str]:
    """The activities of a run's history that completed (recorded results), in order."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    scheduled: dict[int, str] = {}
    completed: list[str] = []
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            attributes = e.activity_task_scheduled_event_attributes
            scheduled[e.event_id] = attributes.activity_type.name
        if e.HasField("activity_task_completed_event_attributes"):
            completed.append(
                scheduled[e.activity_task_completed_event_attributes.scheduled_event_id]
            )
    return completed


@pytest.mark.anyio
async def test_killed_worker_resumes_every_run(
    tmp_path: Path, temporal_server: Any, model_server: DurableModelServer, durable_app: Any
) -> None:
    durable, approval = durable_app
    model_server.reset()
    log = tmp_path / "tools.log"
    prefix = f"kill-{uuid.uuid4().hex[:8]}"
    runs = [(f"{prefix}-{k}", f"{prefix} scenario {k}") for k in SCENARIOS]
    approval_run = f"{prefix}-approval"
    tools_blocked = block_kill_points(model_server, runs)
    base = {
        "address": temporal_server.address,
        "queue": prefix,
        "model": model_server.url,
        "log": str(log),
        "blobs": durable.blobs.path,
    }
    client = await Client.connect(temporal_server.address)
    durable.task_queue = approval.task_queue = prefix
    first = _worker(tmp_path, "first", {**base, "block": tools_blocked})

    async def in_flight() -> bool:
        if not reached_kill_points(model_server, runs, log):
            return False
        return bool(await approval.waiting(client, approval_run))

    try:
        for run_id, label in runs:
            await durable.start(client, label, run_id=run_id)
        await approval.start(client, "publish it", run_id=approval_run)
        await durable.result(client, runs[-1][0])  # the last run completes before the kill
        await until(in_flight, [first], "every run to reach its kill point")
    finally:
        first.kill()
    model_server.release()
    second = _worker(tmp_path, "second", base)
    try:
        waiting = await approval.waiting(client, approval_run, timeout=30)  # across the kill
        await approval.answer(client, approval_run, {str(d.call.id): Approved() for d in waiting})
        results = {run_id: await durable.result(client, run_id) for run_id, _ in runs}
        approved = await approval.result(client, approval_run)
    finally:
        second.kill()

    assert_each_effect_ran_once(model_server, runs, log)
    for run_id, label in runs:
        result = results[run_id]
        assert result.output == f"finished {label}: step 2 done"
        assert (result.requests, result.tool_executions) == (3, 2)
        assert await _completed_activities(client, run_id) == RECORDED_STEPS

    # a run paused for approval waited across the kill; approved, it ran its tool once
    assert approved.output == "published: 'hi' is out"
    assert log.read_text().splitlines().count(f"{approval_run} publish") == 1

    # the history of each resumed run is the history of an uninterrupted run
    agent = make_agent(model_server.url, tmp_path / "plain.log")
    for run_id, label in runs:
        plain = await agent.run(
            label, run_id=run_id, conversation_id=results[run_id].conversation_id
        )
        assert without_clock(results[run_id].messages) == without_clock(plain.messages), run_id
        assert len(results[run_id].new_messages) == len(plain.new_messages)


@pytest.mark.anyio
async def test_a_recovered_run_keeps_its_recorded_model(
    tmp_path: Path, temporal_server: Any, model_server: DurableModelServer, durable_app: Any
) -> None:
    """Issue 45 item 2: the worker is killed with the run's second request in flight, and
    the worker that takes the run over has another default model (``"changed"``): the run
    goes on with the model it recorded when it started."""
    durable, _ = durable_app
    model_server.reset()
    queue = f"keep-model-{uuid.uuid4().hex[:8]}"
    label, run_id = f"{queue} keeps its model", queue
    model_server.block.add((label, 2))
    base = {
        "address": temporal_server.address,
        "queue": queue,
        "model": model_server.url,
        "log": str(tmp_path / "tools.log"),
        "blobs": durable.blobs.path,
    }
    client = await Client.connect(temporal_server.address)
    durable.task_queue = queue
    first = _worker(tmp_path, "first", base)
    try:
        await durable.start(client, label, run_id=run_id)

        async def second_request() -> bool:
            return model_server.arrived(label, 2)

        await until(second_request, [first], "the second request")
    finally:
        first.kill()
    model_server.release()
    second = _worker(tmp_path, "second", {**base, "default_model": "changed"})
    try:
        result = await durable.result(client, run_id)
    finally:
        second.kill()
    assert (tmp_path / "second.model").read_text() == "openai:changed-model"
    assert result.output == f"finished {label}: step 2 done"
    assert [model_server.models[(label, n)] for n in (1, 2, 3)] == [
        ["durable-test"],
        ["durable-test", "durable-test"],  # the request in flight at the kill, sent again
        ["durable-test"],
    ]


@pytest.mark.anyio
async def test_two_workers_share_one_task_queue(
    tmp_path: Path, temporal_server: Any, model_server: DurableModelServer, durable_app: Any
) -> None:
    durable, _ = durable_app
    model_server.reset()
    model_server.delay = 0.05  # each run takes a while, so one worker cannot take them all
    log = tmp_path / "tools.log"
    queue = f"shared-{uuid.uuid4().hex[:8]}"
    base = {
        "address": temporal_server.address,
        "queue": queue,
        "model": model_server.url,
        "log": str(log),
        "blobs": durable.blobs.path,
        "activities": 2,  # each worker runs 2 effects at once: one alone cannot take all
    }
    durable.task_queue = queue
    client = await Client.connect(temporal_server.address)
    workers = [_worker(tmp_path, "w1", base), _worker(tmp_path, "w2", base)]
    runs = [(f"{queue}-{i}", f"{queue} run {i}") for i in range(12)]
    try:

        async def ready() -> bool:
            return all(w.ready.exists() for w in workers)

        await until(ready, workers, "both workers")
        await asyncio.gather(*(durable.start(client, label, run_id=r) for r, label in runs))
        results = {run_id: await durable.result(client, run_id) for run_id, _ in runs}
        identities: set[str] = set()
        for run_id, _ in runs:
            history = await client.get_workflow_handle(run_id).fetch_history()
            for e in history.events:
                if e.HasField("activity_task_started_event_attributes"):
                    identities.add(e.activity_task_started_event_attributes.identity)
    finally:
        for w in workers:
            w.kill()
    started = tool_counts(log)
    for run_id, label in runs:
        assert results[run_id].output == f"finished {label}: step 2 done"
        assert [model_server.counts[(label, n)] for n in (1, 2, 3)] == [1, 1, 1]
        assert [started[(run_id, n)] for n in (1, 2)] == [1, 1]
    assert identities == {"w1", "w2"}  # both workers executed effects of these runs
    assert model_server.max_inflight <= 4  # 2 workers x 2 activities at once


def test_the_benchmark_measures_temporal() -> None:
    """``python -m bench.durable --temporal-only`` (the overhead, tiny numbers; the
    throughput figures start worker processes and are left to the benchmark): a smoke
    run; no timing is asserted."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.durable",
            "--temporal-only",
            *("--runs", "1", "--rounds", "1", "--queue-runs", "0"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=TESTS.parent,
    )
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [(r["kind"], r["backend"]) for r in rows] == [("overhead", "temporal")]
    assert rows[0]["durable_ms"] > 0 and rows[0]["plain_ms"] > 0
    assert "| temporal |" in out.stdout


# -- a blob store that is not shared (issue 46 item 5) -----------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("stores", ["memory", "two files"])
async def test_a_worker_without_the_clients_blob_store_fails_the_run_at_its_start(
    tmp_path: Path,
    temporal_server: Any,
    model_server: DurableModelServer,
    durable_app: Any,
    stores: str,
) -> None:
    """A client and a worker in two processes, each with its own blob store (the
    default, each process's memory; or two SQLite files): the run fails at its start,
    before any model request, with ``RunError(stage="history")`` naming ``blobs=``."""
    durable, _ = durable_app
    model_server.reset()
    prefix = f"blobs-{uuid.uuid4().hex[:8]}"
    worker_blobs = None if stores == "memory" else str(tmp_path / "worker-blobs.sqlite")
    config = {
        "address": temporal_server.address,
        "queue": prefix,
        "model": model_server.url,
        "log": str(tmp_path / "tools.log"),
        "blobs": worker_blobs,
    }
    client = await Client.connect(temporal_server.address)
    shared, queue = durable.blobs, durable.task_queue
    durable.task_queue = prefix
    if stores == "memory":
        durable.blobs = MemoryBlobs()  # the client's default: its own memory
    worker = _worker(tmp_path, "lonely", config)
    try:

        async def ready() -> bool:
            return worker.ready.exists()

        await until(ready, [worker], "the worker to poll")
        with pytest.raises(RunError) as caught:
            await asyncio.wait_for(durable.run(client, "hello", run_id=f"{prefix}-run"), 60)
    finally:
        worker.kill()
        durable.blobs, durable.task_queue = shared, queue
    assert caught.value.stage is Stage.HISTORY
    assert "blobs=" in str(caught.value)
    assert "not the one the run was started with" in str(caught.value)
    assert caught.value.partial is None
    assert sum(model_server.counts.values()) == 0  # failed at its start: no request made


@pytest.mark.anyio
async def test_a_result_whose_blobs_this_process_lacks_is_a_history_run_error(
    temporal_server: Any,
) -> None:
    """Reading a run's result with a store that lacks its conversation (another
    process's store) raises the documented ``RunError(stage="history")``, not the raw
    ``MissingBlob``."""
    durable = DURABLE["two-tools"]
    async with _working(temporal_server.address) as client:
        run_id = _id("two-tools")
        await durable.run(client, "add things", run_id=run_id)
        shared = durable.blobs
        durable.blobs = MemoryBlobs()  # a reader whose store is not the worker's
        MESSAGE_CHAIN.cache.clear()  # as in another process: no chain decoded in memory
        try:
            with pytest.raises(RunError) as caught:
                await durable.result(client, run_id)
        finally:
            durable.blobs = shared
    assert caught.value.stage is Stage.HISTORY
    assert "blobs=" in str(caught.value)
