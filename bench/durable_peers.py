"""Durable runs against pydantic-ai's DBOS and Temporal integrations.

``python -m bench.durable_peers``, the short comparison: one child process, DBOS on
SQLite (a file in a temporary directory), both libraries' durable agents registered on
the same DBOS instance, the same workload (three model requests around two tool calls,
offline ``FunctionModel``s), timed in interleaved rounds:
golem ``Agent.run`` and ``DurableAgent.run`` (the public API only), pydantic-ai
``Agent.run`` and ``DBOSAgent.run``. The overhead of durability is the durable run minus
the plain run of the same library; per effect, it is divided by the steps each records
(golem: every model request and every tool call, 5; pydantic-ai: its model requests, 3,
its function tools run inside the workflow unrecorded). Prints JSON and a Markdown table.

``--long`` (issue 34) adds one long run per library and engine, the measurement of
``bench/durable.py``'s long runs (whose children it runs for golem's figures, from the
same machine state): ``--long-steps`` steps (default 1,000), each a model request calling
the tool ``step``; the scripted model (golem's ``FunctionModel``, pydantic-ai's
``FunctionModel``) reads the step number from the newest message in constant time, so
its own cost is flat. pydantic-ai runs through its wrappers, ``DBOSAgent`` (DBOS on
SQLite-WAL, DBOS's default serializer: pydantic-ai's steps return its own types) and
``TemporalAgent`` (a ``sandboxed=False`` workflow holding it in
``__pydantic_ai_agents__``, the client with ``PydanticAIPlugin``, the worker with
``AgentPlugin``: the setup pydantic-ai documents; golem's workflow is unsandboxed too),
against the tests' Temporal dev server (``tests/temporal_server.py``), one server per
library. Figures: per-step time (median of steps 6-25 against the last 20); the largest
recorded payload (DBOS: any row of ``workflow_input``, ``workflow_output``,
``operation_outputs``; Temporal: the data of any ``Payloads`` in any history event, over
every execution) against the largest message (golem's codec; pydantic-ai's
``ModelMessagesTypeAdapter``); the system database's size after the run (WAL
checkpointed); on Temporal the event-history bytes at steps 50-500 with the exponent of
a log-log fit. A Temporal run that stops before its last step (a server limit, or
``--temporal-timeout`` seconds) is recorded with the step it reached and the error: a
finding, not a failure of the benchmark. A third Temporal run (none with
``--no-continued``) measures pydantic-ai's ``TemporalDurability`` capability
(``TemporalAgent``'s successor in pydantic-ai 2.x) with a ``continue_as_new`` handler
that carries the run's messages into the next execution whenever Temporal suggests it.
Rows of engine ``plain``: each library's ``Agent.run`` without durability, its own
per-step cost. ``--write bench/results.md`` records the short
and the long figures as the ``durable_peers`` section; ``--quick`` runs small sizes.

Over 600 lines because it holds both comparisons (short and long, DBOS and Temporal),
their child processes and the section's ``render``: one benchmark, one module.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from bench.timing import Record

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["durable_records", "long_rows", "main", "render"]


def _golem() -> tuple[Any, Any]:
    from bench.durable_children import AGENT_NAME, make_agent
    from golem_shell.durable import DurableAgent

    agent = make_agent()
    return agent, DurableAgent(agent, name=AGENT_NAME)


def _pydantic_ai() -> tuple[Any, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.dbos import DBOSAgent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turns = sum(1 for m in messages if isinstance(m, ModelResponse))
        if turns < 2:
            return ModelResponse(
                parts=[ToolCallPart("step", {"n": turns + 1}, tool_call_id=f"call_{turns + 1}")]
            )
        return ModelResponse(parts=[TextPart("finished: step 2 done")])

    agent = Agent(FunctionModel(answer), name="bench_durable_pai")

    @agent.tool_plain
    async def step(n: int) -> str:
        """Do step n."""
        return f"step {n} done"

    return agent, DBOSAgent(agent)


async def _measure(db: str, runs: int, rounds: int) -> dict[str, Any]:
    from dbos import DBOS

    golem_plain, golem_durable = _golem()
    pai_plain, pai_durable = _pydantic_ai()
    config: Any = {  # DBOS's default serializer: pydantic-ai's steps return its own types
        "name": "golem-bench-durable-peers",
        "system_database_url": db,
        "executor_id": "peers",
        "log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()

    async def golem_run(agent: Any) -> str:
        return str((await agent.run("go")).output)

    async def pai_run(agent: Any) -> str:
        return str((await agent.run("go")).output)

    ops: dict[str, Callable[[], Awaitable[str]]] = {
        "golem_plain": lambda: golem_run(golem_plain),
        "golem_durable": lambda: golem_run(golem_durable),
        "pydantic_ai_plain": lambda: pai_run(pai_plain),
        "pydantic_ai_durable": lambda: pai_run(pai_durable),
    }
    for _ in range(5):  # warm-up: imports, connections, prepared statements
        for op in ops.values():
            assert (await op()) == "finished: step 2 done"
    samples: dict[str, list[float]] = {k: [] for k in ops}
    walls: dict[str, list[float]] = {k: [] for k in ops}
    for _ in range(rounds):
        for name, op in ops.items():
            start, start_wall = time.process_time(), time.perf_counter()
            for _ in range(runs):
                await op()
            samples[name].append((time.process_time() - start) / runs)
            walls[name].append((time.perf_counter() - start_wall) / runs)
    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    wall = {k: statistics.median(v) * 1000 for k, v in walls.items()}
    golem = med["golem_durable"] - med["golem_plain"]
    pai = med["pydantic_ai_durable"] - med["pydantic_ai_plain"]
    golem_wall = wall["golem_durable"] - wall["golem_plain"]
    pai_wall = wall["pydantic_ai_durable"] - wall["pydantic_ai_plain"]
    return {
        **{f"{k}_cpu_ms": round(v, 3) for k, v in med.items()},
        **{f"{k}_wall_ms": round(v, 3) for k, v in wall.items()},
        "golem_overhead_wall_ms": round(golem_wall, 3),
        "pydantic_ai_overhead_wall_ms": round(pai_wall, 3),
        "golem_overhead_ms": round(golem, 3),
        "pydantic_ai_overhead_ms": round(pai, 3),
        "golem_steps": 5,
        "pydantic_ai_steps": 3,
        "golem_per_step_ms": round(golem / 5, 3),
        "pydantic_ai_per_step_ms": round(pai / 3, 3),
        "per_run_ratio": round(golem / pai, 3),
        "per_step_ratio": round((golem / 5) / (pai / 3), 3),
        "runs": runs,
        "rounds": rounds,
    }


# -- long runs (issue 34) -------------------------------------------------------------------

PAI_LONG_NAME = "bench_long_pai"


def _pai_long_agent(steps: int, times: list[float], capabilities: Sequence[Any] = ()) -> Any:
    """pydantic-ai's agent for a run of ``steps`` steps: each a model request calling
    ``step``, timed by it; the model reads the step from the newest message."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # the usage is given: without it ``FunctionModel`` estimates it from every
        # message, a cost growing with the run that is the test model's, not pydantic-ai's
        usage = RequestUsage(input_tokens=1, output_tokens=1)
        last, done = messages[-1], 0
        if isinstance(last, ModelRequest):
            for part in last.parts:  # the newest request's parts only: constant time
                if isinstance(part, ToolReturnPart):
                    done = int(part.tool_call_id.removeprefix("call_")) + 1
        if done >= steps:
            return ModelResponse(parts=[TextPart(f"done {done}")], usage=usage)
        call = ToolCallPart("step", {"n": done}, tool_call_id=f"call_{done}")
        return ModelResponse(parts=[call], usage=usage)

    agent = Agent(FunctionModel(answer), name=PAI_LONG_NAME, capabilities=list(capabilities))

    @agent.tool_plain
    async def step(n: int) -> str:
        """Do step n."""
        times.append(time.perf_counter())
        return f"step {n} done"

    return agent


def _pai_largest_message(messages: Sequence[Any]) -> int:
    """The largest message as pydantic-ai stores it (``ModelMessagesTypeAdapter``)."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return max(len(ModelMessagesTypeAdapter.dump_json([m])) - 2 for m in messages)  # no [ ]


def _pai_limits(steps: int) -> Any:
    from pydantic_ai.usage import UsageLimits

    return UsageLimits(request_limit=steps + 5)  # pydantic-ai's default stops at 50


def _db_bytes(db: str) -> int:
    """The system database's size once its WAL is checkpointed into it."""
    import sqlite3

    path = db.removeprefix("sqlite:///")
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(path)


async def _plain_long(library: str, steps: int) -> dict[str, Any]:
    """A long run without durability (``Agent.run``): each library's own per-step cost,
    against which its durable runs' figures read."""
    from bench.durable_children import largest_message, long_agent, per_step

    times: list[float] = []
    start = time.perf_counter()
    if library == "golem":
        result = await long_agent(steps, times).run("go")
        largest = largest_message(result)
    else:
        result = await _pai_long_agent(steps, times).run("go", usage_limits=_pai_limits(steps))
        largest = _pai_largest_message(result.all_messages())
    seconds = time.perf_counter() - start
    assert result.output == f"done {steps}", result.output
    return {**per_step(times), "seconds": seconds, "largest_message": largest}


async def _pai_long_dbos(db: str, steps: int) -> dict[str, Any]:
    import warnings

    from dbos import DBOS
    from pydantic_ai.durable_exec.dbos import DBOSAgent

    from bench.durable_children import dbos_largest_row, per_step, wal_journal

    wal_journal(db)
    times: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DBOSAgent is deprecated for DBOSDurability in 2.x
        durable = DBOSAgent(_pai_long_agent(steps, times))
    config: Any = {
        "name": "golem-bench-durable-peers-long",
        "system_database_url": db,
        "executor_id": "long",
        "log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()
    start = time.perf_counter()
    result = await durable.run("go", usage_limits=_pai_limits(steps))
    seconds = time.perf_counter() - start
    assert result.output == f"done {steps}", result.output
    return {
        **per_step(times),
        "seconds": seconds,
        "largest_payload": dbos_largest_row(db),
        "largest_message": _pai_largest_message(result.all_messages()),
    }


class _History:
    """History figures, fed one execution's events at a time (oldest first), so a long
    run's history is never held whole: bytes so far at steps 50-500, the exponent of
    their log-log fit, the largest ``Payloads`` and event. ``is_step`` says, of an
    activity type's name, whether its completion ends a step."""

    def __init__(self, is_step: Callable[[str], bool]) -> None:
        self.is_step = is_step
        self.series: dict[int, int] = {}
        self.total = self.done = self.events = self.executions = 0
        self.largest_payload = self.largest_event = 0
        self.last: list[Any] = []  # the newest execution's events

    def add(self, events: list[Any]) -> None:
        from bench.durable_children import payload_sizes

        names: dict[int, str] = {}  # event ids start again in each execution
        for e in events:
            size = e.ByteSize()
            self.total += size
            self.largest_event = max(self.largest_event, size)
            self.largest_payload = max(self.largest_payload, *payload_sizes(e))
            if e.HasField("activity_task_scheduled_event_attributes"):
                names[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
            if e.HasField("activity_task_completed_event_attributes"):
                scheduled = e.activity_task_completed_event_attributes.scheduled_event_id
                if self.is_step(names.get(scheduled, "")):
                    self.done += 1
                    self.series[self.done] = self.total
        self.events += len(events)
        self.executions += 1
        self.last = events

    def figures(self) -> dict[str, Any]:
        from bench.durable_children import exponent

        marks: list[tuple[int, int]] = [
            (n, self.series[n]) for n in (50, 100, 200, 300, 400, 500) if n in self.series
        ]
        return {
            "largest_payload": self.largest_payload,
            "largest_event": self.largest_event,
            "executions": self.executions,
            "history_bytes": self.total,
            "history_events": self.events,
            "history_points": marks,
            "history_exponent": exponent(marks),
        }


def _history_figures(
    executions: Iterable[list[Any]], is_step: Callable[[str], bool]
) -> dict[str, Any]:
    """The figures of :class:`_History` over ``executions`` (oldest first)."""
    history = _History(is_step)
    for events in executions:
        history.add(events)
    return history.figures()


async def _read_history(client: Any, workflow_id: str, history: _History) -> None:
    """Feed every execution of ``workflow_id`` to ``history``, oldest first, one at a time."""
    run_ids: list[str | None] = []
    run_id: str | None = None
    while True:  # newest first: each execution names the one it continued
        run_ids.append(run_id)
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        first = await anext(aiter(handle.fetch_history_events()))
        run_id = first.workflow_execution_started_event_attributes.continued_execution_run_id
        if not run_id:
            break
    for run_id in reversed(run_ids):
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        history.add([e async for e in handle.fetch_history_events()])


def _why(events: list[Any]) -> str:
    """What an execution's events say stopped it: a termination, a failure, a failed task."""
    reasons: list[str] = []
    for e in events:
        if e.HasField("workflow_execution_terminated_event_attributes"):
            terminated = e.workflow_execution_terminated_event_attributes
            reasons.append(f"terminated: {terminated.reason}")
        if e.HasField("workflow_execution_failed_event_attributes"):
            failed = e.workflow_execution_failed_event_attributes
            reasons.append(f"failed: {failed.failure.message}")
        if e.HasField("workflow_task_failed_event_attributes"):
            failure = e.workflow_task_failed_event_attributes.failure.message
            if f"workflow task failed: {failure}" not in reasons:
                reasons.append(f"workflow task failed: {failure}")
    return "; ".join(reasons)


async def _pai_long_temporal(
    address: str, steps: int, timeout: float, *, continued: bool = False
) -> dict[str, Any]:
    """pydantic-ai's long run on Temporal: its ``TemporalAgent`` wrapper, or with
    ``continued`` its ``TemporalDurability`` capability continuing as new when Temporal
    suggests it (``_pai_continue``)."""
    import warnings

    from pydantic_ai.durable_exec.temporal import (
        AgentPlugin,
        PydanticAIPlugin,
        TemporalAgent,
        TemporalDurability,
    )
    from temporalio.client import Client
    from temporalio.worker import Worker

    from bench.durable_children import per_step

    times: list[float] = []
    if continued:
        durability = TemporalDurability(continue_as_new=_pai_continue)
        durable = _pai_long_agent(steps, times, capabilities=[durability])
        workflow_class, args = _PaiLongContinued, ["go", None]
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated for TemporalDurability in 2.x
            durable = TemporalAgent(_pai_long_agent(steps, times))
        workflow_class, args = _PaiLongRun, ["go"]
    assert workflow_class is not None
    workflow_class.__pydantic_ai_agents__ = [durable]  # pydantic-ai's convention
    workflow_class.limits = _pai_limits(steps)
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    worker = Worker(
        client,
        task_queue="bench-long-pai",
        workflows=[workflow_class],
        plugins=[AgentPlugin(durable)],
    )
    # never shut down: the child exits with os._exit once the figures are out
    running = asyncio.create_task(worker.run())
    handle = await client.start_workflow(
        workflow_class.run, args=args, id="pai-long", task_queue="bench-long-pai"
    )
    start = time.perf_counter()
    error: str | None = None
    largest_message: int | None = None
    try:
        output, largest_message = json.loads(await asyncio.wait_for(handle.result(), timeout))
        assert output == f"done {steps}", output
    except TimeoutError:
        error = f"no result after {timeout:.0f} s"
        await handle.terminate("the benchmark's timeout")
    except Exception as exc:  # the run's failure is a finding: record it
        cause = exc.__cause__
        error = f"{type(exc).__name__}: {exc}" + (
            f" ({type(cause).__name__}: {cause})" if cause else ""
        )
    seconds = time.perf_counter() - start
    history = _History(lambda name: name.endswith("__call_tool"))
    history_error = None
    try:
        await _read_history(client, "pai-long", history)
    except Exception as exc:  # recorded: the figures cover the executions read
        history_error = (
            f"reading the history stopped after {history.executions} executions:"
            f" {type(exc).__name__}: {exc}"
        )
    if error is not None:
        why = _why(history.last)
        error = f"{error}; history: {why}" if why else error
    if largest_message is None:  # the run stopped: the messages of a plain run of 50 steps
        plain = await _pai_long_agent(50, []).run("go", usage_limits=_pai_limits(50))
        largest_message = _pai_largest_message(plain.all_messages())
    assert not running.done() or running.exception() is None
    return {
        **per_step(times),
        "seconds": seconds,
        "largest_message": largest_message,
        "error": error,
        **history.figures(),
        "history_error": history_error,
    }


_workflow: Any
try:
    from temporalio import workflow as _workflow
except ImportError:  # Temporal is optional: the DBOS figures need none of this
    _workflow = None

_PaiLongRun: Any = None
_PaiLongContinued: Any = None
if _workflow is not None:

    @_workflow.defn(name="BenchLongPai", sandboxed=False)  # as golem's workflow: no sandbox
    class _PaiLongRunWorkflow:
        """pydantic-ai's long run as a workflow (Temporal refuses a class defined in a
        function, so the agent and its limits are set on the class before the worker starts)."""

        __pydantic_ai_agents__: ClassVar[list[Any]] = []
        limits: ClassVar[Any] = None

        @_workflow.run  # type: ignore[untyped-decorator]
        async def run(self, prompt: str) -> str:
            (agent,) = self.__pydantic_ai_agents__
            result = await agent.run(prompt, usage_limits=self.limits)
            return json.dumps([result.output, _pai_largest_message(result.all_messages())])

    _PaiLongRun = _PaiLongRunWorkflow

    @_workflow.defn(name="BenchLongPaiContinued", sandboxed=False)
    class _PaiLongContinuedWorkflow:
        """pydantic-ai's long run on its ``TemporalDurability`` capability with a
        ``continue_as_new`` handler (:func:`_pai_continue`): when Temporal suggests it, the
        run continues as new carrying its messages, and resumes from them."""

        __pydantic_ai_agents__: ClassVar[list[Any]] = []
        limits: ClassVar[Any] = None

        @_workflow.run  # type: ignore[untyped-decorator]
        async def run(self, prompt: str | None, history: str | None) -> str:
            from pydantic_ai.messages import ModelMessagesTypeAdapter

            (agent,) = self.__pydantic_ai_agents__
            carried = None if history is None else ModelMessagesTypeAdapter.validate_json(history)
            result = await agent.run(prompt, message_history=carried, usage_limits=self.limits)
            return json.dumps([result.output, _pai_largest_message(result.all_messages())])

    _PaiLongContinued = _PaiLongContinuedWorkflow


def _pai_continue(ctx: Any) -> None:
    """pydantic-ai's ``continue_as_new`` handler: the messages so far, carried as new."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    history = ModelMessagesTypeAdapter.dump_json(ctx.messages).decode()
    _workflow.continue_as_new(args=[None, history])


def _run_child(argv: list[str], timeout: float | None) -> dict[str, Any]:
    """Run ``python -m <argv>`` from the repository; its last stdout line, as JSON.

    Raises:
        RuntimeError: the child failed or printed nothing (the message ends with its stderr).
        subprocess.TimeoutExpired: it ran longer than ``timeout`` seconds.
    """
    proc = subprocess.run(
        [sys.executable, "-m", *argv],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(
            f"the child {' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-3000:]}"
        )
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


CONTINUED = "TemporalDurability, continue_as_new"


def long_rows(
    steps: int,
    temporal_steps: int,
    *,
    temporal: bool = True,
    temporal_timeout: float = 1800,
    continued: bool = False,
) -> list[dict[str, Any]]:
    """The long runs, golem's and pydantic-ai's without durability and on each engine,
    one child process each (golem's durable ones: ``bench.durable``'s own long-run
    children); with ``continued``, pydantic-ai's ``TemporalDurability`` continuing as new
    too. One row each, printed as it comes: ``library``, ``variant`` (pydantic-ai's API),
    ``engine``, ``steps_requested``, ``completed``, ``error`` and the child's figures
    (DBOS adds ``db_bytes``)."""
    rows: list[dict[str, Any]] = []

    def child(argv: list[str], timeout: float) -> dict[str, Any]:
        """The child's figures, or (a crash, a timeout) only its error: recorded, so one
        failed run does not lose the others."""
        start = time.perf_counter()
        try:
            return _run_child(argv, timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            elapsed = time.perf_counter() - start
            return {"error": f"the child gave no figures after {elapsed:.0f} s: {exc}"[:600]}

    def add(
        library: str, variant: str | None, engine: str, requested: int, figures: dict[str, Any]
    ) -> None:
        error = figures.pop("error", None)
        rows.append(
            {
                "library": library,
                "variant": variant,
                "engine": engine,
                "steps_requested": requested,
                "completed": error is None and figures.get("steps") == requested,
                "error": error,
                **figures,
            }
        )
        print(json.dumps(rows[-1]), flush=True)

    for library in ("golem", "pydantic-ai"):
        argv = ["bench.durable_peers", "--plain-long", library, "--long-steps", str(steps)]
        add(library, None, "plain", steps, child(argv, 3600))
    for library, variant, module, flag in (
        ("golem", None, "bench.durable", "--long-dbos"),
        ("pydantic-ai", "DBOSAgent", "bench.durable_peers", "--pai-long-dbos"),
    ):
        with tempfile.TemporaryDirectory() as tmp:
            db = f"sqlite:///{tmp}/long.sqlite"
            figures = child([module, flag, db, "--long-steps", str(steps)], 3600)
            if "steps" in figures:
                figures["db_bytes"] = _db_bytes(db)
            add(library, variant, "dbos", steps, figures)
    if not temporal:
        return rows
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from temporal_server import start_temporal  # type: ignore[import-not-found,unused-ignore]

    timeout = ["--temporal-timeout", str(temporal_timeout)]
    runs: list[tuple[str, str | None, list[str]]] = [
        ("golem", None, ["bench.durable", "--long-temporal"]),
        ("pydantic-ai", "TemporalAgent", ["bench.durable_peers", "--pai-long-temporal"]),
    ]
    if continued:
        runs.append(("pydantic-ai", CONTINUED, ["bench.durable_peers", "--pai-long-temporal"]))
    for library, variant, argv in runs:
        with tempfile.TemporaryDirectory() as tmp, start_temporal(Path(tmp)) as server:
            extra = ["--long-dir", tmp] if library == "golem" else timeout
            extra += ["--continued"] if variant == CONTINUED else []
            figures = child(
                [*argv, server.address, "--long-steps", str(temporal_steps), *extra],
                # golem's child has no timeout of its own: this one stops a stuck run
                temporal_timeout + (0 if library == "golem" else 600),
            )
            if "steps" not in figures:  # what the server says of the run that gave none
                workflow_id = "long" if library == "golem" else "pai-long"
                found = child(
                    ["bench.durable_peers", "--diagnose", server.address, workflow_id], 600
                )
                figures["error"] += f"; the server: {found.get('diagnosis', found.get('error'))}"
            add(library, variant, "temporal", temporal_steps, figures)
    return rows


async def _diagnose(address: str, workflow_id: str) -> dict[str, Any]:
    """What the server's history says of a run whose child gave no figures: its executions,
    the activities completed, and why its newest execution stopped or is stuck."""
    from temporalio.client import Client

    client = await Client.connect(address)
    # a step ends with its tool call: golem's ``golem.tool``, pydantic-ai's ``__call_tool``
    history = _History(lambda name: name == "golem.tool" or name.endswith("__call_tool"))
    await _read_history(client, workflow_id, history)
    why = _why(history.last) or "no failure recorded"
    return {
        "diagnosis": f"{history.done} steps done over {history.executions} executions;"
        f" the newest execution: {why}"
    }


def durable_records(runs: int = 20, rounds: int = 5) -> list[Record]:
    """For ``python -m bench``: the overhead per recorded step (CPU) of each library, as
    records (``durable_overhead_per_step``) and per run (``durable_overhead_per_run``);
    empty when DBOS or pydantic-ai is not installed or the child fails."""
    result = _child_result(runs, rounds)
    if result is None:
        return []
    out: list[Record] = []
    for lib, key in (("golem", "golem"), ("pydantic-ai", "pydantic_ai")):
        for op, value in (
            ("durable_overhead_per_step", result[f"{key}_per_step_ms"]),
            ("durable_overhead_per_run", result[f"{key}_overhead_ms"]),
        ):
            seconds = value / 1000
            out.append(Record(lib, op, 0, seconds, seconds, seconds, rounds, runs))
    return out


def _child_result(runs: int, rounds: int) -> dict[str, Any] | None:
    try:
        import dbos  # noqa: F401
        import pydantic_ai.durable_exec.dbos  # noqa: F401
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'dbos.sqlite'}"
        argv = ["bench.durable_peers", "--child", db, "--runs", str(runs), "--rounds", str(rounds)]
        try:
            return _run_child(argv, timeout=None)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durable_peers", description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--long", action="store_true", help="the long runs too (issue 34)")
    parser.add_argument("--long-steps", type=int, default=1000, help="steps of each long run")
    parser.add_argument(
        "--temporal-steps", type=int, default=1000, help="steps of the Temporal long runs"
    )
    parser.add_argument(
        "--temporal-timeout", type=float, default=1800, help="seconds a Temporal run may take"
    )
    parser.add_argument("--no-temporal", action="store_true", help="long runs on DBOS only")
    parser.add_argument("--no-short", action="store_true", help="with --long: no short run")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument(
        "--write", type=Path, help="record the figures in the report's JSON sibling, render it"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--plain-long", metavar="LIBRARY", help=argparse.SUPPRESS)
    parser.add_argument("--diagnose", nargs=2, metavar=("ADDRESS", "ID"), help=argparse.SUPPRESS)
    parser.add_argument("--pai-long-dbos", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--pai-long-temporal", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-continued",
        action="store_true",
        help="no long run of pydantic-ai's TemporalDurability continuing as new",
    )
    parser.add_argument("--continued", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from bench.durable_children import child_exit

    if args.child:
        child_exit(asyncio.run(_measure(args.child, args.runs, args.rounds)))
    if args.diagnose:
        child_exit(asyncio.run(_diagnose(*args.diagnose)))
    if args.plain_long:
        child_exit(asyncio.run(_plain_long(args.plain_long, args.long_steps)))
    if args.pai_long_dbos:
        child_exit(asyncio.run(_pai_long_dbos(args.pai_long_dbos, args.long_steps)))
    if args.pai_long_temporal:
        child_exit(
            asyncio.run(
                _pai_long_temporal(
                    args.pai_long_temporal,
                    args.long_steps,
                    args.temporal_timeout,
                    continued=args.continued,
                )
            )
        )
    if args.quick:
        args.runs, args.rounds, args.long_steps, args.temporal_steps = 5, 2, 60, 60
    result = None
    if not (args.long and args.no_short):
        result = _child_result(args.runs, args.rounds)
        if result is None:
            print("DBOS or pydantic-ai is not installed, or the child failed", file=sys.stderr)
            return 1
        print(json.dumps(result))
    rows = (
        long_rows(
            args.long_steps,
            args.temporal_steps,
            temporal=not args.no_temporal,
            temporal_timeout=args.temporal_timeout,
            continued=not args.no_continued,
        )
        if args.long
        else []
    )
    from bench.report import machine, recorded_command, write_section

    data = {
        "command": recorded_command("python -m bench.durable_peers", argv),
        "machine": machine(),
        "versions": _versions(),
        "short": result,
        "long": rows,
    }
    print()
    print(render(data))
    if args.write is not None:
        write_section(args.write, "durable_peers", data)
    return 0


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("pydantic-ai-slim", "dbos", "temporalio"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "-"
    return found


def render(data: dict[str, Any]) -> str:
    """This benchmark's section of the report, from its record in ``bench/results.json``."""
    machine, versions = data["machine"], data["versions"]
    lines = [
        f"## Durable runs against pydantic-ai (`{data['command']}`)",
        "",
        "golem's durable agents beside pydantic-ai's (`DBOSAgent`, `TemporalAgent`, and on"
        " Temporal its `TemporalDurability` capability continuing as new), offline"
        " `FunctionModel`s (`bench/durable_peers.py`).",
        f"pydantic-ai-slim {versions['pydantic-ai-slim']}, dbos {versions['dbos']},"
        f" temporalio {versions['temporalio']}; machine: nproc {machine['nproc']},"
        f" python {machine['python']}, load average {machine['load_average_end']:.1f} at the end.",
    ]
    if data.get("short"):
        lines += ["", *_short_markdown(data["short"])]
    if data.get("long"):
        lines += ["", *_long_markdown(data["long"])]
    return "\n".join(lines) + "\n"


def _short_markdown(result: dict[str, Any]) -> list[str]:
    lines = [
        "Overhead of durability on DBOS/SQLite (3 model requests and 2 tool calls per run;"
        " durable run minus plain run, CPU; per step: divided by the steps each records,"
        f" golem {result['golem_steps']}, pydantic-ai {result['pydantic_ai_steps']}):",
        "",
        "| library | plain CPU ms/run | durable CPU ms/run | overhead ms/run"
        " | overhead wall ms/run | steps | ms/step |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for lib, key in (("golem", "golem"), ("pydantic-ai", "pydantic_ai")):
        lines.append(
            f"| {lib} | {result[f'{key}_plain_cpu_ms']:.2f}"
            f" | {result[f'{key}_durable_cpu_ms']:.2f}"
            f" | {result[f'{key}_overhead_ms']:.2f} | {result[f'{key}_overhead_wall_ms']:.2f}"
            f" | {result[f'{key}_steps']} | {result[f'{key}_per_step_ms']:.2f} |"
        )
    lines += [
        "",
        f"golem / pydantic-ai overhead: per run {result['per_run_ratio']:.2f},"
        f" per recorded step {result['per_step_ratio']:.2f}.",
    ]
    return lines


def _cell(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def _long_markdown(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "Long runs (one run each, a model request calling a tool per step; issue 34; engine"
        " `plain`: `Agent.run`, no durability, each library's own cost): per-step"
        " time at the start (median of steps 6-25) and at the end (last 20); the largest"
        " recorded payload (DBOS: a row of its tables; Temporal: a `Payloads` in the event"
        " history) against the largest message; the system database after the run; on"
        " Temporal the event history and the exponent of its growth over steps 50-500"
        " (1.0: linear).",
        "",
        "| engine | library | steps | seconds | step ms (6-25) | step ms (last 20)"
        " | late / early | largest payload B | largest message B | payload / message"
        " | database MB | history MB | exponent | outcome |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        history = r.get("history_bytes")
        database = r.get("db_bytes")
        payload, message = r.get("largest_payload"), r.get("largest_message")
        ratio = None if payload is None or not message else payload / message
        lines.append(
            f"| {r['engine']} | {_who(r)} | {_cell(r.get('steps'))} of {r['steps_requested']}"
            f" | {_cell(r.get('seconds'), '.1f')} | {_cell(r.get('early_step_ms'), '.2f')}"
            f" | {_cell(r.get('late_step_ms'), '.2f')} | {_cell(r.get('late_over_early'), '.2f')}"
            f" | {_cell(payload)} | {_cell(message)} | {_cell(ratio, '.1f')}"
            f" | {_cell(None if database is None else database / 1e6, '.2f')}"
            f" | {_cell(None if history is None else history / 1e6, '.2f')}"
            f" | {_cell(r.get('history_exponent'), '.2f')}"
            f" | {_outcome(r)} |"
        )
    verdicts = [v for engine in ("plain", "dbos", "temporal") if (v := _verdict(rows, engine))]
    return [*lines, "", *verdicts]


def _outcome(row: dict[str, Any]) -> str:
    text = "completed" if row["completed"] else f"stopped: {row['error']}"
    if row.get("history_error"):
        text += f"; {row['history_error']}"
    return " ".join(text.replace("|", "/").split())  # one table cell


def _who(row: dict[str, Any]) -> str:
    variant = row.get("variant")
    return row["library"] if not variant else f"{row['library']} (`{variant}`)"


def _verdict(rows: list[dict[str, Any]], engine: str) -> str:
    """One generated sentence comparing the two libraries' long runs on ``engine``."""
    pair = {
        r["library"]: r for r in rows if r["engine"] == engine and r.get("variant") != CONTINUED
    }
    if set(pair) != {"golem", "pydantic-ai"}:
        return ""
    g, p = pair["golem"], pair["pydantic-ai"]
    name = {"plain": "`Agent.run`", "dbos": "DBOS", "temporal": "Temporal"}[engine]
    failed = [who for who, r in (("golem", g), ("pydantic-ai", p)) if r.get("steps") is None]
    if failed:  # a child that gave no figures: nothing to compare
        return f"On {name}, no comparison: {' and '.join(failed)} gave no figures."
    if engine == "plain":
        return (
            f"Without durability (`Agent.run`), a step at the end of the run costs"
            f" {g['late_over_early']:.2f}x one at the start in golem and"
            f" {p['late_over_early']:.2f}x in pydantic-ai."
        )

    def late(r: dict[str, Any]) -> str:
        where = "" if r["completed"] else f" (its last steps, before step {r['steps']})"
        return f"{r['late_over_early']:.2f}x{where}"

    sentence = (
        f"On {name}, a step at the end of the run costs {late(g)} one at the"
        f" start in golem and {late(p)} in pydantic-ai; the largest"
        f" payload is {g['largest_payload'] / g['largest_message']:.1f}x the largest message"
        f" in golem and {p['largest_payload'] / p['largest_message']:.1f}x in pydantic-ai"
    )
    if g.get("history_exponent") is not None and p.get("history_exponent") is not None:
        sentence += (
            f"; the event history grows with exponent {g['history_exponent']:.2f} in golem"
            f" and {p['history_exponent']:.2f} in pydantic-ai"
        )
    for who, r in (("golem", g), ("pydantic-ai", p)):
        if not r["completed"]:
            sentence += f"; {who}'s run stopped at step {r['steps']} of {r['steps_requested']}"
    sentence += "."
    for r in rows:
        if r["engine"] == engine and r.get("variant") == CONTINUED:
            outcome = (
                f"completed its {r['steps']} steps"
                if r["completed"]
                else f"stopped at step {r['steps']} of {r['steps_requested']}"
            )
            sentence += (
                f" pydantic-ai continuing as new (`{CONTINUED}`) {outcome} over"
                f" {r['executions']} executions, its largest payload"
                f" {r['largest_payload'] / r['largest_message']:.1f}x its largest message"
            )
            if r.get("history_exponent") is not None:
                sentence += f", its history's exponent {r['history_exponent']:.2f}"
            sentence += "."
    return sentence


if __name__ == "__main__":
    raise SystemExit(main())
