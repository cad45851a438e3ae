"""Durable runs on DBOS (golem_shell.durable): in process, and killed workers that resume.

The in-process tests share one DBOS launch on SQLite (module fixture). The fault tests run
real worker processes (``durable_worker.py``) against a loopback model server that counts
requests, with a tool that logs its executions: a worker is SIGKILLed with each effect
of a 3-request, 2-tool run in flight (and once after the run completed), restarted, and
every run must complete with no recorded effect repeated and the history of an
uninterrupted run. The same on a real Postgres (the ``postgres_url`` fixture), where two
workers also pull runs from one DBOS queue with a concurrency limit.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos_launch import dbos_fixture
from durable_app import (
    RECORDED_STEPS,
    SCENARIOS,
    Verdict,
    assert_each_effect_ran_once,
    block_kill_points,
    importing_without,
    judge_or_say,
    make_agent,
    make_models,
    reached_kill_points,
    tool_counts,
    unit_agents,
    without_clock,
)
from durable_server import DurableModelServer, running_server
from worker_process import Worker, wait_for

from golem_core import ModelErrorKind, Role, history_from_jsonable
from golem_shell import (
    Agent,
    Approved,
    DeferredResultsError,
    Denied,
    ExternalResult,
    FunctionModel,
    ModelError,
    RunError,
    Stage,
    Steering,
    UsageError,
)

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")

from golem_shell.durable import DurableAgent  # noqa: E402
from golem_shell.engines._blobs import unstash  # noqa: E402

TESTS = Path(__file__).resolve().parent
WORKER = TESTS / "durable_worker.py"


# -- in process, one DBOS on SQLite -------------------------------------------------------


UNIT = unit_agents()
AGENTS = UNIT.agents
COUNTED = UNIT.counted
EFFECTS_DONE = UNIT.effects_done


def _refuse(request: Any) -> str:
    raise ModelError(ModelErrorKind.AUTHENTICATION, "bad key", status=401, provider="test")


AGENTS["model-refuses"] = Agent(FunctionModel(_refuse))


async def _slow(request: Any) -> str:
    await asyncio.sleep(0.5)
    return "too late"


AGENTS["slow"] = Agent(FunctionModel(_slow))
DURABLE = {name: DurableAgent(agent, name=name) for name, agent in AGENTS.items()}


launched = dbos_fixture("golem-durable-unit")
"""One DBOS on a fresh SQLite file for this module's tests; yields the file."""


@pytest.mark.anyio
async def test_durable_run_equals_plain_run(launched: Path) -> None:
    durable = DURABLE["two-tools"]
    result = await durable.run("add things", run_id="unit-two-tools")
    plain = await AGENTS["two-tools"].run(
        "add things", run_id="unit-two-tools", conversation_id=result.conversation_id
    )
    assert result.output == plain.output == "sum is 11"
    assert without_clock(result.messages) == without_clock(plain.messages)
    assert without_clock(result.new_messages) == without_clock(plain.new_messages)
    assert (result.usage, result.requests, result.tool_executions) == (
        plain.usage,
        plain.requests,
        plain.tool_executions,
    )
    assert result.run_id == "unit-two-tools"


@pytest.mark.anyio
async def test_a_run_id_runs_once_and_its_result_is_read_by_id(launched: Path) -> None:
    durable = DURABLE["two-tools"]
    before = COUNTED.count
    first = await durable.run("once", run_id="unit-once")
    again = await durable.run("once", run_id="unit-once")  # the same workflow: not rerun
    by_id = await durable.result("unit-once")
    assert COUNTED.count - before == 3
    assert first.messages == again.messages == by_id.messages
    assert await durable.start("once", run_id="unit-once") == "unit-once"


@pytest.mark.anyio
async def test_history_continues_and_instructions_are_recorded(launched: Path) -> None:
    first = await DURABLE["instructed"].run("hello", run_id="unit-instr-1")
    assert first.output == "told: be brief\n\nrun unit-instr-1"
    assert first.messages[0].role is Role.SYSTEM
    second = await DURABLE["instructed"].run("again", history=first.messages, run_id="unit-instr-2")
    assert second.conversation_id == first.conversation_id
    assert second.output == "told: be brief\n\nrun unit-instr-2"
    status = await dbos.DBOS.list_workflow_steps_async("unit-instr-2")
    assert [step["function_name"] for step in status] == ["golem.instructions", "golem.request"]
    assert [m.role for m in second.new_messages] == [Role.USER, Role.ASSISTANT]
    assert without_clock(second.messages[1:3]) == without_clock(first.messages[1:3])


@pytest.mark.anyio
async def test_structured_output_is_read_back_into_its_type(launched: Path) -> None:
    result = await DURABLE["verdict"].run("judge", run_id="unit-verdict")
    assert result.output == Verdict("good", 3)
    again = await DURABLE["verdict"].result("unit-verdict")
    assert again.output == Verdict("good", 3)


@pytest.mark.anyio
async def test_failures_are_run_errors_with_the_recorded_partial(launched: Path) -> None:
    with pytest.raises(RunError) as info:
        await DURABLE["model-fails"].run("hi", run_id="unit-model-fails")
    assert info.value.stage is Stage.REQUEST
    assert "ZeroDivisionError" in info.value.message
    assert info.value.partial is None
    with pytest.raises(RunError) as info:
        await DURABLE["model-refuses"].run("hi", run_id="unit-model-refuses")
    assert info.value.stage is Stage.REQUEST and "bad key" in info.value.message
    (step,) = await dbos.DBOS.list_workflow_steps_async("unit-model-refuses")
    recorded = unstash(DURABLE["model-refuses"].store(), step["output"], "step")
    assert recorded["kind"] == "authentication"  # the error's kind is recorded too
    with pytest.raises(RunError) as info:
        await DURABLE["tool-crashes"].run("hi", run_id="unit-tool-crashes")
    assert info.value.stage is Stage.TOOL
    assert "boom" in info.value.message
    partial = info.value.partial
    assert partial is not None and partial.requests == 1
    assert partial.messages[-1].tool_calls[0].name == "crash"
    with pytest.raises(RunError) as info:
        await DURABLE["bad-instructions"].run("hi", run_id="unit-bad-instructions")
    assert info.value.stage is Stage.INSTRUCTIONS
    with pytest.raises(RunError) as again:  # reading the result again fails the same way
        await DURABLE["tool-crashes"].result("unit-tool-crashes")
    assert again.value.stage is Stage.TOOL


@pytest.mark.anyio
async def test_a_paused_run_waits_for_answers_then_goes_on(launched: Path) -> None:
    durable = DURABLE["deferred"]
    run_id = await durable.start("clean up", run_id="unit-deferred")
    waiting = await durable.waiting(run_id, timeout=10)
    assert [(d.call.id, d.kind) for d in waiting] == [("d1", "approval"), ("e1", "external")]
    with pytest.raises(DeferredResultsError) as refused:
        await durable.answer(run_id, {"forged": Approved()})
    assert refused.value.call_ids == ("forged",)
    with pytest.raises(DeferredResultsError):
        await durable.answer(run_id, {"e1": Approved()})  # an external call takes a result
    await durable.answer(run_id, {"d1": Approved()})  # e1 still waits
    for _ in range(200):
        waiting = await durable.waiting(run_id)
        if [d.call.id for d in waiting] == ["e1"]:
            break
        await asyncio.sleep(0.02)
    assert [d.call.id for d in waiting] == ["e1"]
    await durable.answer(run_id, {"e1": ExternalResult.text("v=42")})
    result = await durable.result(run_id)
    assert result.output == "after: deleted /tmp/x | v=42"
    assert result.requests == 2 and result.tool_executions == 1
    assert [m.role for m in result.new_messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.TOOL,
        Role.ASSISTANT,
    ]
    assert await durable.waiting(run_id) == ()


@pytest.mark.anyio
async def test_a_retried_answer_never_approves_the_next_pause(launched: Path) -> None:
    """The same answer sent again without ``pause=`` (an HTTP retry) once the run paused
    on a new call with the same id is refused: it never approves a call nobody saw."""
    durable = DURABLE["same-ids"]
    run_id = await durable.start("ship it", run_id="unit-same-ids")
    first = await durable.waiting(run_id, timeout=10)
    assert [(d.call.id, d.call.name) for d in first] == [("call_0", "publish")]
    await durable.answer(run_id, {"call_0": Approved()})
    for _ in range(500):
        second = await durable.waiting(run_id)
        if second and second.pause > first.pause:
            break
        await asyncio.sleep(0.02)
    assert [(d.call.id, d.call.name) for d in second] == [("call_0", "wipe")]
    assert second.repeated == ("call_0",)
    with pytest.raises(DeferredResultsError, match="earlier pause") as refused:
        await durable.answer(run_id, {"call_0": Approved()})  # the retry
    assert refused.value.call_ids == ("call_0",)
    with pytest.raises(DeferredResultsError, match="pause"):  # bound to the first pause
        await durable.answer(run_id, {"call_0": Approved()}, pause=first)
    assert EFFECTS_DONE == ["publish"]
    await durable.answer(run_id, {"call_0": Denied("no")}, pause=second)  # the easy path
    result = await durable.result(run_id)
    assert result.output == "done" and EFFECTS_DONE == ["publish"]


@pytest.mark.anyio
async def test_a_denied_call_is_a_failed_result(launched: Path) -> None:
    durable = DURABLE["deferred"]
    run_id = await durable.start("clean up", run_id="unit-denied")
    assert len(await durable.waiting(run_id, timeout=10)) == 2
    await durable.answer(run_id, {"d1": Denied("not today"), "e1": Denied("no source")})
    result = await durable.result(run_id)
    assert result.output == "after: denied: not today | denied: no source"
    denied = [m for m in result.new_messages if m.role is Role.TOOL]
    assert all(m.failed for m in denied)


@pytest.mark.anyio
async def test_a_run_cancelled_through_dbos_is_a_canceled_run_error(launched: Path) -> None:
    run_id = await DURABLE["slow"].start("wait", run_id="unit-cancel")
    await dbos.DBOS.cancel_workflow_async(run_id)
    with pytest.raises(RunError) as info:
        await DURABLE["slow"].result(run_id)
    assert info.value.stage is Stage.CANCELED
    assert "unit-cancel" in info.value.message


@pytest.mark.anyio
async def test_a_run_enqueued_on_a_queue_runs_in_this_process_too(launched: Path) -> None:
    await dbos.DBOS.register_queue_async(
        "unit-queue", worker_concurrency=1, polling_interval_sec=0.05
    )
    result = await DURABLE["two-tools"].run("queued", run_id="unit-queued", queue="unit-queue")
    assert result.output == "sum is 11"
    status = await dbos.DBOS.get_workflow_status_async("unit-queued")
    assert status is not None and status.queue_name == "unit-queue"


@pytest.mark.anyio
async def test_misuse_is_a_usage_error(launched: Path) -> None:
    with pytest.raises(UsageError, match="no durable run"):
        await DURABLE["two-tools"].result("unit-never-started")
    await DURABLE["verdict"].run("judge", run_id="unit-owned")
    with pytest.raises(UsageError, match="not a run of DurableAgent 'two-tools'"):
        await DURABLE["two-tools"].result("unit-owned")
    with pytest.raises(UsageError, match="wraps an Agent, not FunctionModel"):
        DurableAgent(FunctionModel(lambda r: "x"), name="not-an-agent")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="non-empty name"):
        DurableAgent(AGENTS["two-tools"], name="")
    with pytest.raises(UsageError, match="non-empty name"):
        DurableAgent(Agent(FunctionModel(lambda r: "x")))  # no name anywhere
    assert DurableAgent(Agent(FunctionModel(lambda r: "x"), name="named")).name == "named"
    with pytest.raises(UsageError, match="already registered"):
        DurableAgent(Agent(FunctionModel(lambda r: "x")), name="two-tools")
    assert DurableAgent(AGENTS["two-tools"], name="two-tools").name == "two-tools"
    # issue 46 item 3: toolsets are taken (their tool list is a recorded step)
    with_toolsets = Agent(FunctionModel(lambda r: "x"), toolsets=[_NoTools()])
    assert DurableAgent(with_toolsets, name="with-toolsets").agent is with_toolsets


class _NoTools:
    async def tools(self, context: Any) -> tuple[()]:
        return ()


# -- the run keywords (issue 45 item 2; each keyword's outcome: tests/test_conformance.py) ---


FAST = FunctionModel(lambda r: "from the fast model")
KEYWORDS = DurableAgent(
    Agent(FunctionModel(judge_or_say)),
    name="keywords",
    models={"fast": FAST},
    output_types={"verdict": Verdict},
)


@pytest.mark.anyio
async def test_a_run_names_its_model_and_output_type_as_registered(launched: Path) -> None:
    by_name = await KEYWORDS.run("hi", model="fast", run_id="kw-by-name")
    by_instance = await KEYWORDS.run("hi", model=FAST, run_id="kw-by-instance")
    own = await KEYWORDS.run("hi", run_id="kw-own")
    assert [r.output for r in (by_name, by_instance, own)] == [
        "from the fast model",
        "from the fast model",
        "from the agent's model",
    ]
    judged = await KEYWORDS.run("judge", output_type="verdict", run_id="kw-verdict")
    assert judged.output == Verdict("fine", 2)
    # read back by run id, the output is the run's own type (recorded with its end)
    assert (await KEYWORDS.result("kw-verdict")).output == Verdict("fine", 2)


@pytest.mark.anyio
async def test_keywords_that_cannot_be_recorded_are_refused(launched: Path) -> None:
    refused: list[tuple[dict[str, Any], str]] = [
        ({"on_event": print}, r"on_event=.*DurableAgent\(\.\.\., on_event=\.\.\.\)"),
        ({"steering": Steering()}, r"steering=.*DurableAgent\.steer\(run_id"),
        ({"model": FunctionModel(lambda r: "x")}, r"model=.*register it.*models="),
        ({"model": "opnai:gpt-4o"}, "unknown model"),
        ({"deps": object()}, r"deps=.*as JSON.*DurableAgent\(\.\.\., deps="),
        ({"deps": {"ids": (1, 2)}}, r"deps=.*as JSON"),  # a tuple would read back a list
    ]
    for i, (options, match) in enumerate(refused):
        with pytest.raises(UsageError, match=match):
            await KEYWORDS.start("hi", run_id=f"kw-refused-{i}", **options)
        assert await dbos.DBOS.get_workflow_status_async(f"kw-refused-{i}") is None
    with pytest.raises(UsageError, match=r"output_type=.*register it.*output_types="):
        await KEYWORDS.run("hi", output_type=int)
    with pytest.raises(TypeError, match="unexpected keyword argument 'temperature'"):
        await KEYWORDS.start("hi", temperature=0.2)  # type: ignore[call-arg]
    with pytest.raises(UsageError, match="is not a Model"):
        DurableAgent(Agent(FunctionModel(lambda r: "x")), name="bad-models", models={"m": "x"})  # type: ignore[dict-item]


def test_every_step_output_is_plain_json_in_the_message_contract(launched: Path) -> None:
    asyncio.run(DURABLE["two-tools"].run("recorded", run_id="unit-json"))
    with sqlite3.connect(launched) as db:
        rows = db.execute(
            "select function_name, output, serialization from operation_outputs"
            " where workflow_uuid = ? order by function_id",
            ("unit-json",),
        ).fetchall()
        (stored,) = db.execute(
            "select output from workflow_output where workflow_uuid = ?", ("unit-json",)
        ).fetchone()
    assert [r[0] for r in rows] == RECORDED_STEPS
    assert {r[2] for r in rows} == {"portable_json"}
    # each is a reference (ADR 0152) to plain JSON in the blob store: no pickle anywhere
    store = DURABLE["two-tools"].store()
    outputs = [unstash(store, json.loads(r[1]), "step") for r in rows]
    answers = [o["message"] for r, o in zip(rows, outputs, strict=True) if r[0] == "golem.request"]
    decoded = history_from_jsonable(answers).unwrap()
    assert decoded[-1].text == "sum is 11"
    assert unstash(store, json.loads(stored), "result")["output"] == "sum is 11"


def test_importing_without_dbos_names_the_extra() -> None:
    out = importing_without("dbos", "golem_shell.durable")
    assert out.startswith("UsageError")
    assert "golem-agents[dbos]" in out


# -- killed workers ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_server() -> Iterator[DurableModelServer]:
    with running_server() as server:
        yield server


def _kill_and_resume(
    where: Path, db: str, server: DurableModelServer, prefix: str
) -> dict[str, Any]:
    server.reset()
    log = where / "tools.log"
    runs = [(f"{prefix}-{k}", f"{prefix} scenario {k}") for k in SCENARIOS]
    last = runs[-1][0]
    tools_blocked = block_kill_points(server, runs)
    base = {
        "db": db,
        "executor": "kill",
        "model": server.url,
        "log": str(log),
        "dir": str(where),
        "approval": [(f"{prefix}-approval", "publish it")],
    }
    first = Worker(
        WORKER,
        where,
        "first",
        {**base, "mode": "start", "runs": runs, "block": tools_blocked, "wait": [last]},
    )

    def in_flight() -> bool:
        return (
            reached_kill_points(server, runs, log)
            and (where / f"{last}.done").exists()
            and (where / f"{prefix}-approval.waiting").exists()
        )

    try:
        wait_for(in_flight, [first], "every run to reach its kill point")
    finally:
        first.kill()
    server.release()
    second = Worker(WORKER, where, "second", {**base, "mode": "resume", "runs": runs})
    second.finish()
    results: dict[str, Any] = json.loads((where / "results.json").read_text())

    assert_each_effect_ran_once(server, runs, log)
    for run_id, label in runs:
        assert results[run_id]["output"] == f"finished {label}: step 2 done"
        assert (results[run_id]["requests"], results[run_id]["toolExecutions"]) == (3, 2)

    # a run paused for approval waited across the restart; approved, it ran its tool once
    approved = results.pop(f"{prefix}-approval")
    assert approved["output"] == "published: 'hi' is out"
    assert log.read_text().splitlines().count(f"{prefix}-approval publish") == 1

    # the history of each resumed run is the history of an uninterrupted run
    agent = make_agent(server.url, where / "plain.log")

    async def uninterrupted() -> None:
        for run_id, label in runs:
            got = history_from_jsonable(results[run_id]["messages"]).unwrap()
            plain = await agent.run(
                label, run_id=run_id, conversation_id=results[run_id]["conversationId"]
            )
            assert without_clock(got) == without_clock(plain.messages), run_id
            assert results[run_id]["newMessages"] == len(plain.new_messages)

    asyncio.run(uninterrupted())
    return results


def _recorded_steps(rows: list[tuple[str, str, str]]) -> None:
    assert [r[0] for r in rows] == RECORDED_STEPS
    for name, output, serialization in rows:
        assert serialization == "portable_json", name
        json.loads(output)


def test_killed_worker_resumes_every_run_on_sqlite(
    tmp_path: Path, model_server: DurableModelServer
) -> None:
    db = tmp_path / "golem.sqlite"
    results = _kill_and_resume(tmp_path, f"sqlite:///{db}", model_server, "sqlite")
    with sqlite3.connect(db) as c:
        for run_id in results:
            rows = c.execute(
                "select function_name, output, serialization from operation_outputs"
                " where workflow_uuid = ? order by function_id",
                (run_id,),
            ).fetchall()
            _recorded_steps(rows)
            (status,) = c.execute(
                "select status from workflow_status where workflow_uuid = ?", (run_id,)
            ).fetchone()
            assert status == "SUCCESS"


# -- Postgres -----------------------------------------------------------------------------


@pytest.fixture
def postgres_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database on the test Postgres server (the ``postgres_url`` fixture)."""
    try:
        base: str = request.getfixturevalue("postgres_url")
    except pytest.FixtureLookupError:
        pytest.skip("no postgres_url fixture (tests/postgres_server.py) in this tree")
    import psycopg
    from postgres_server import create_database

    name = f"golem_durable_{os.getpid()}_{time.monotonic_ns()}"
    yield create_database(base, name)
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'drop database if exists "{name}" with (force)')


def _postgres_steps(db: str, run_id: str) -> list[tuple[str, str, str]]:
    import psycopg

    with psycopg.connect(db) as c:
        return c.execute(
            "select function_name, output, serialization from dbos.operation_outputs"
            " where workflow_uuid = %s order by function_id",
            (run_id,),
        ).fetchall()


def test_a_recovered_run_keeps_its_recorded_model(
    tmp_path: Path, model_server: DurableModelServer
) -> None:
    """Issue 45 item 2: the worker is killed with the run's second request in flight, and
    the worker that recovers it has another default model (``"changed"``): the run goes
    on with the model it recorded when it started, while a run started there now uses
    the new default."""
    model_server.reset()
    label, run_id = "keeps its model", "keep-model"
    fresh = ("keep-model-fresh", "started after the change")
    model_server.block.add((label, 2))
    base = {
        "db": f"sqlite:///{tmp_path / 'golem.sqlite'}",
        "executor": "keep-model",
        "model": model_server.url,
        "log": str(tmp_path / "tools.log"),
        "dir": str(tmp_path),
        "runs": [(run_id, label)],
    }
    first = Worker(WORKER, tmp_path, "first", {**base, "mode": "start"})
    try:
        wait_for(lambda: model_server.arrived(label, 2), [first], "the second request")
    finally:
        first.kill()
    model_server.release()
    second = Worker(
        WORKER,
        tmp_path,
        "second",
        {**base, "mode": "resume", "default_model": "changed", "fresh": [fresh]},
    )
    second.finish()
    results = json.loads((tmp_path / "results.json").read_text())
    assert results[run_id]["output"] == f"finished {label}: step 2 done"
    assert [model_server.models[(label, n)] for n in (1, 2, 3)] == [
        ["durable-test"],
        ["durable-test", "durable-test"],  # the request in flight at the kill, sent again
        ["durable-test"],
    ]
    assert model_server.models[(fresh[1], 1)] == ["changed-model"]
    assert make_models(model_server.url)["changed"].name == "openai:changed-model"


def test_killed_worker_resumes_every_run_on_postgres(
    tmp_path: Path, model_server: DurableModelServer, postgres_db: str
) -> None:
    results = _kill_and_resume(tmp_path, postgres_db, model_server, "pg")
    for run_id in results:
        _recorded_steps(_postgres_steps(postgres_db, run_id))


def test_two_workers_pull_runs_from_a_queue_on_postgres(
    tmp_path: Path, model_server: DurableModelServer, postgres_db: str
) -> None:
    import psycopg

    model_server.reset()
    model_server.delay = 0.05  # each run takes a while, so one worker cannot drain the queue
    log = tmp_path / "tools.log"
    runs = [(f"queue-{i}", f"queue run {i}") for i in range(12)]
    base = {
        "db": postgres_db,
        "model": model_server.url,
        "log": str(log),
        "dir": str(tmp_path),
        "mode": "queue",
        "runs": runs,
        "queue": {"name": "golem-test", "worker_concurrency": 2},
        "workers": ["w1", "w2"],
    }
    w2 = Worker(WORKER, tmp_path, "w2", {**base, "executor": "w2"})
    workers = [w2]
    try:  # one launch at a time: the database is created and migrated once
        wait_for(lambda: (tmp_path / "w2.ready").exists(), workers, "worker w2")
        workers.append(Worker(WORKER, tmp_path, "w1", {**base, "executor": "w1", "producer": True}))
        wait_for(lambda: (tmp_path / "results.json").exists(), workers, "the queue's runs")
    finally:
        for w in workers:
            w.kill()
    results = json.loads((tmp_path / "results.json").read_text())
    started = tool_counts(log)
    for run_id, label in runs:
        assert results[run_id]["output"] == f"finished {label}: step 2 done"
        assert [model_server.counts[(label, n)] for n in (1, 2, 3)] == [1, 1, 1]
        assert [started[(run_id, n)] for n in (1, 2)] == [1, 1]
    with psycopg.connect(postgres_db) as c:
        rows = c.execute(
            "select executor_id, count(*) from dbos.workflow_status"
            " where queue_name = 'golem-test' group by executor_id"
        ).fetchall()
    by_worker = dict(rows)
    assert set(by_worker) == {"w1", "w2"}, by_worker  # both workers pulled runs
    assert sum(by_worker.values()) == len(runs)
    assert model_server.max_inflight <= 4  # 2 workers x worker_concurrency 2


# -- the environment ------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)")
def test_a_worker_runs_without_network(tmp_path: Path) -> None:
    """DBOS on SQLite needs no network (run here as root, in a namespace with no network)."""
    code = (
        "import asyncio, socket\n"
        "from dbos import DBOS\n"
        "from golem_shell import Agent, FunctionModel\n"
        "from golem_shell.durable import DurableAgent\n"
        "d = DurableAgent(Agent(FunctionModel(lambda r: 'offline')), name='offline')\n"
        f"DBOS(config={{'name': 'offline', 'system_database_url': 'sqlite:///{tmp_path}/o.sqlite',"
        " 'log_level': 'WARNING'})\n"
        "DBOS.launch()\n"
        "print(asyncio.run(d.run('hi')).output)\n"
        "try:\n    socket.create_connection(('192.0.2.1', 80), timeout=1); print('network')\n"
        "except OSError:\n    print('no network')\n"
        "import os; os._exit(0)\n"
    )
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a network namespace here: {probe.stderr.decode().strip()}")
    out = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=TESTS.parent,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["offline", "no", "network"]


def test_the_benchmark_runs_and_prints_its_figures() -> None:
    """``python -m bench.durable`` (quick, SQLite): a smoke run; no timing is asserted."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.durable", "--quick", "--no-postgres"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=TESTS.parent,
    )
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    overhead = [r for r in rows if r["kind"] == "overhead"]
    assert [r["backend"] for r in overhead] == ["sqlite", "sqlite-wal"]
    assert all(r["durable_ms"] > 0 and r["plain_ms"] > 0 for r in overhead)
    assert {r["kind"] for r in rows} <= {"overhead", "long"}  # and the long runs (ADR 0125)
    assert "| sqlite-wal |" in out.stdout
