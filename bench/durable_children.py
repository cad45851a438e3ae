"""What ``python -m bench.durable`` runs in its child processes, and what they share.

Owns the benchmark's agent (``make_agent``: 3 requests, 2 tool calls, offline), the DBOS
helpers (``wal_journal``, ``dbos_largest_row``), each child's measurement (``overhead``
and ``worker`` on DBOS; ``temporal_overhead`` and ``temporal_worker`` on Temporal;
``long_dbos`` and ``long_temporal``: one long run, timed step by step, with
``long_agent``, ``per_step``, ``largest_message``, ``payload_sizes`` and ``exponent``)
and ``child_exit``, how a child hands back its figures. ``bench/durable.py`` starts the
children and reads their figures; ``bench/durable_peers.py`` reuses the agent, the long
run and the figures' helpers for golem's side of its comparison.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from golem_core import Message, Role, ToolCallPart
from golem_shell import Agent, FunctionModel

__all__ = [
    "AGENT_NAME",
    "child_exit",
    "dbos_largest_row",
    "exponent",
    "largest_message",
    "long_agent",
    "long_dbos",
    "long_temporal",
    "make_agent",
    "overhead",
    "payload_sizes",
    "per_step",
    "temporal_agent",
    "temporal_overhead",
    "temporal_worker",
    "wal_journal",
    "worker",
]

AGENT_NAME = "bench-durable"


def make_agent(latency: float = 0.0) -> Agent[None, str]:
    """The benchmark's agent: 3 requests, 2 tool calls, answered offline."""

    async def answer(request: Any) -> Message | str:
        if latency:
            await asyncio.sleep(latency)
        turns = sum(1 for m in request.messages if m.role is Role.ASSISTANT)
        if turns < 2:
            call = ToolCallPart(f"call_{turns + 1}", "step", json.dumps({"n": turns + 1}))
            return Message(Role.ASSISTANT, (call,))
        return "finished: " + request.messages[-1].text

    async def step(n: int) -> str:
        """Do step n."""
        return f"step {n} done"

    return Agent(FunctionModel(answer), tools=[step])


def _dbos_config(db: str, executor: str) -> Any:
    from dbos import DBOSPortableJSONSerializer

    return {
        "name": "golem-bench-durable",
        "system_database_url": db,
        "executor_id": executor,
        "serializer": DBOSPortableJSONSerializer(),
        "log_level": "WARNING",
    }


def wal_journal(db: str) -> None:
    """Switch a DBOS SQLite system database (a ``sqlite:///`` URL) to WAL: a property of
    the file, set once, before DBOS opens it."""
    import sqlite3

    with sqlite3.connect(db.removeprefix("sqlite:///")) as c:
        c.execute("PRAGMA journal_mode=WAL")


def dbos_largest_row(db: str) -> int:
    """The largest row DBOS recorded in a SQLite system database: a workflow's input or
    output, a step's output."""
    import sqlite3

    with sqlite3.connect(db.removeprefix("sqlite:///")) as c:
        return max(
            len(v or "")
            for table, column in (
                ("workflow_input", "inputs"),
                ("workflow_output", "output"),
                ("operation_outputs", "output"),
            )
            for (v,) in c.execute(f"SELECT {column} FROM {table}")
        )


# -- child: overhead per run ------------------------------------------------------------


async def overhead(db: str, runs: int, rounds: int, wal: bool) -> dict[str, Any]:
    from dbos import DBOS

    from golem_shell.durable import DurableAgent

    if wal:
        wal_journal(db)

    agent = make_agent()
    durable = DurableAgent(agent, name=AGENT_NAME)
    DBOS(config=_dbos_config(db, "overhead"))
    DBOS.launch()
    for _ in range(5):  # warm-up: imports, connections, prepared statements
        await agent.run("warm up")
        await durable.run("warm up")
    wall: dict[str, list[float]] = {"plain": [], "durable": []}
    cpu: dict[str, list[float]] = {"plain": [], "durable": []}
    for _ in range(rounds):
        for kind, run in (("plain", agent.run), ("durable", durable.run)):
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(runs):
                result = await run("go")
            wall[kind].append((time.perf_counter() - start) / runs)
            cpu[kind].append((time.process_time() - start_cpu) / runs)  # all threads
            assert result.output == "finished: step 2 done", result.output
    p, d = statistics.median(wall["plain"]), statistics.median(wall["durable"])
    pc, dc = statistics.median(cpu["plain"]), statistics.median(cpu["durable"])
    return {
        "plain_ms": p * 1000,
        "durable_ms": d * 1000,
        "overhead_ms": (d - p) * 1000,
        "plain_cpu_ms": pc * 1000,
        "durable_cpu_ms": dc * 1000,
        "runs_per_round": runs,
        "rounds": rounds,
    }


# -- child: a queue worker ----------------------------------------------------------------


async def worker(config: dict[str, Any]) -> None:
    from dbos import DBOS

    from golem_shell.durable import DurableAgent

    where = Path(config["dir"])
    durable = DurableAgent(make_agent(config["latency"]), name=AGENT_NAME)
    DBOS(config=_dbos_config(config["db"], config["executor"]))
    DBOS.launch()
    await DBOS.register_queue_async(
        config["queue"], worker_concurrency=config["concurrency"], polling_interval_sec=0.05
    )
    (where / f"{config['executor']}.ready").write_text("ready")
    if config["producer"]:
        while not all((where / f"{w}.ready").exists() for w in config["workers"]):
            await asyncio.sleep(0.02)
        start = time.perf_counter()
        ids = [
            await durable.start(f"run {i}", queue=config["queue"]) for i in range(config["runs"])
        ]
        for run_id in ids:
            await durable.result(run_id)
        elapsed = time.perf_counter() - start
        partial = where / "result.partial"
        partial.write_text(json.dumps({"seconds": elapsed, "runs": len(ids)}))
        partial.replace(where / "result.json")
    await asyncio.Event().wait()  # until the benchmark kills it


# -- children: Temporal ---------------------------------------------------------------------


def temporal_agent(latency: float, queue: str, blobs: str | None = None) -> Any:
    from golem_shell.engines._blobs import SQLiteBlobs
    from golem_shell.temporal import TemporalAgent

    store = None if blobs is None else SQLiteBlobs(blobs)  # shared by worker processes
    return TemporalAgent(make_agent(latency), name=AGENT_NAME, task_queue=queue, blobs=store)


async def temporal_overhead(address: str, runs: int, rounds: int) -> dict[str, Any]:
    from temporalio.client import Client

    durable = temporal_agent(0.0, "bench-overhead")
    agent = durable.agent
    client = await Client.connect(address)
    async with durable.worker(client):

        async def run_durable(prompt: str) -> Any:
            return await durable.run(client, prompt)

        for _ in range(5):  # warm-up: imports, connections, the worker's caches
            await agent.run("warm up")
            await run_durable("warm up")
        wall: dict[str, list[float]] = {"plain": [], "durable": []}
        cpu: dict[str, list[float]] = {"plain": [], "durable": []}
        for _ in range(rounds):
            for kind, run in (("plain", agent.run), ("durable", run_durable)):
                start, start_cpu = time.perf_counter(), time.process_time()
                for _ in range(runs):
                    result = await run("go")
                wall[kind].append((time.perf_counter() - start) / runs)
                cpu[kind].append((time.process_time() - start_cpu) / runs)
                assert result.output == "finished: step 2 done", result.output
    p, d = statistics.median(wall["plain"]), statistics.median(wall["durable"])
    pc, dc = statistics.median(cpu["plain"]), statistics.median(cpu["durable"])
    return {
        "plain_ms": p * 1000,
        "durable_ms": d * 1000,
        "overhead_ms": (d - p) * 1000,
        "plain_cpu_ms": pc * 1000,
        "durable_cpu_ms": dc * 1000,
        "runs_per_round": runs,
        "rounds": rounds,
    }


async def temporal_worker(config: dict[str, Any]) -> None:
    from temporalio.client import Client

    durable = temporal_agent(config["latency"], config["queue"], config["blobs"])
    client = await Client.connect(config["address"])
    async with durable.worker(client, max_concurrent_activities=config["concurrency"]):
        (Path(config["dir"]) / f"{config['name']}.ready").write_text("ready")
        await asyncio.Event().wait()  # until the benchmark kills it


# -- child: a long run ---------------------------------------------------------------------


def long_agent(steps: int, times: list[float], cpu: list[float] | None = None) -> Agent[None, str]:
    """A run of ``steps`` steps: each a model request calling ``step``, timed by it (wall
    clock in ``times``; the process's CPU time, every thread's, in ``cpu`` when given)."""

    def answer(request: Any) -> Message | str:
        # the steps done so far, read from the newest message in constant time: counting
        # the history's tool results would make the model itself slower with each step,
        # and its cost is not golem's (the figure is golem's and the engine's per step)
        last = request.messages[-1]
        done = int(last.tool_call_id.removeprefix("call_")) + 1 if last.role is Role.TOOL else 0
        if done >= steps:
            return f"done {done}"
        call = ToolCallPart(f"call_{done}", "step", json.dumps({"n": done}))
        return Message(Role.ASSISTANT, (call,))

    async def step(n: int) -> str:
        """Do step n."""
        times.append(time.perf_counter())
        if cpu is not None:
            cpu.append(time.process_time())
        return f"step {n} done"

    return Agent(FunctionModel(answer), tools=[step], max_requests=steps + 5)


def per_step(times: list[float], cpu: list[float] | None = None) -> dict[str, Any]:
    """Per-step cost near the start (median of steps 6-25) and at the end (the last 20)
    by the wall clock and, with ``cpu``, by the measuring process's CPU time (what golem
    and an in-process engine spend), over steps 6-105 and the last 100."""
    gaps = [b - a for a, b in itertools.pairwise(times)]
    early, late = statistics.median(gaps[5:25]), statistics.median(gaps[-20:])
    figures: dict[str, Any] = {
        "steps": len(times),
        "early_step_ms": early * 1000,
        "late_step_ms": late * 1000,
        "late_over_early": late / early,
    }
    if cpu is not None:
        spent = [b - a for a, b in itertools.pairwise(cpu)]
        # the median over 100 steps (6-105, and the last 100): a step that pays a SQLite
        # checkpoint or a full collection, or a moment of the host's other load, moves a
        # 20-step window by up to 2x either way (runs of 2,000 steps show no trend)
        early_cpu = statistics.median(spent[5:105])
        late_cpu = statistics.median(spent[-100:])
        figures |= {
            "early_step_cpu_ms": early_cpu * 1000,
            "late_step_cpu_ms": late_cpu * 1000,
            "late_over_early_cpu": late_cpu / early_cpu,
        }
    return figures


def largest_message(result: Any) -> int:
    from golem_core import encode_message

    return max(len(encode_message(m)) for m in result.messages)


async def long_dbos(db: str, steps: int) -> dict[str, Any]:
    from dbos import DBOS

    from golem_shell.durable import DurableAgent

    wal_journal(db)
    times: list[float] = []
    cpu: list[float] = []
    durable = DurableAgent(long_agent(steps, times, cpu), name="bench-long")
    DBOS(config=_dbos_config(db, "long"))
    DBOS.launch()
    start = time.perf_counter()
    result = await durable.run("go", run_id="long")
    seconds = time.perf_counter() - start
    assert result.output == f"done {steps}", result.output
    return {
        **per_step(times, cpu),
        "seconds": seconds,
        "largest_payload": dbos_largest_row(db),
        "largest_message": largest_message(result),
    }


async def long_temporal(address: str, steps: int, tmp: str) -> dict[str, Any]:
    from temporalio.client import Client

    from golem_shell.engines._blobs import SQLiteBlobs
    from golem_shell.temporal import TemporalAgent

    times: list[float] = []
    cpu: list[float] = []
    durable = TemporalAgent(
        long_agent(steps, times, cpu),
        name="bench-long",
        task_queue="bench-long",
        blobs=SQLiteBlobs(Path(tmp) / "blobs.sqlite"),
    )
    client = await Client.connect(address)
    async with durable.worker(client):
        start = time.perf_counter()
        result = await durable.run(client, "go", run_id="long")
        seconds = time.perf_counter() - start
        assert result.output == f"done {steps}", result.output
        executions: list[list[Any]] = []  # each execution's events, newest execution first
        run_id: str | None = None
        while True:
            handle = client.get_workflow_handle("long", run_id=run_id)
            events = [e async for e in handle.fetch_history_events()]
            executions.append(events)
            run_id = events[
                0
            ].workflow_execution_started_event_attributes.continued_execution_run_id
            if not run_id:
                break
    executions.reverse()
    # the event history's bytes so far (every execution's, in order) at each step's end
    # (a step is a request and a tool call: two completed activities)
    series: list[tuple[int, int]] = []
    total_bytes = completed = 0
    for events in executions:
        for e in events:
            total_bytes += e.ByteSize()
            if e.HasField("activity_task_completed_event_attributes"):
                completed += 1
                if completed % 2 == 0:
                    series.append((completed // 2, total_bytes))
    at = dict(series)
    marks = [n for n in (50, 100, 200, 300, 400, 500) if n in at]
    everything = [e for events in executions for e in events]
    return {
        **per_step(times, cpu),
        "seconds": seconds,
        "largest_payload": max(size for e in everything for size in payload_sizes(e)),
        "largest_event": max(e.ByteSize() for e in everything),
        "largest_message": largest_message(result),
        "executions": len(executions),
        "history_bytes": total_bytes,
        "history_points": [(n, at[n]) for n in marks],
        "history_exponent": exponent([(n, at[n]) for n in marks]),
    }


def payload_sizes(message: Any) -> list[int]:
    """The data bytes of each ``Payloads`` in a history event (an activity's input or
    result, a workflow's input, a signal's or an update's arguments): what Temporal's
    payload limits apply to, without the event's own metadata."""
    sizes: list[int] = []
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            continue  # headers and memo fields: metadata, not a payload
        items = [value] if hasattr(value, "ListFields") else list(value)  # one, or repeated
        for item in items:
            if field.message_type.full_name == "temporal.api.common.v1.Payloads":
                sizes.append(sum(len(p.data) for p in item.payloads))
            else:
                sizes.extend(payload_sizes(item))
    return sizes or [0]


def exponent(points: list[tuple[int, int]]) -> float | None:
    """The slope of log(bytes) against log(activities) (least squares), or ``None``."""
    import math

    usable = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(usable) < 2:
        return None
    mx = statistics.fmean(x for x, _ in usable)
    my = statistics.fmean(y for _, y in usable)
    sxx = sum((x - mx) ** 2 for x, _ in usable)
    return sum((x - mx) * (y - my) for x, y in usable) / sxx if sxx else None


def child_exit(figures: dict[str, Any]) -> NoReturn:
    """Print a child's figures as one JSON line and leave at once: the figures are out,
    and DBOS's graceful shutdown, or the finalization in which the Temporal SDK's native
    runtime threads can abort the interpreter (PyGILState_Release), is skipped."""
    print(json.dumps(figures))
    sys.stdout.flush()
    os._exit(0)
