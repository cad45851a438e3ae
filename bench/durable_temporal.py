"""Temporal overhead per step: golem's ``TemporalAgent`` against pydantic-ai's, same run.

``python -m bench.durable_temporal`` (issue 46 item 7) starts one Temporal dev server
(``tests/temporal_server.py``, 127.0.0.1, SQLite-backed) and one child process holding
both libraries' workers and clients, on the same workload as ``bench.durable_peers``'s
short comparison (three model requests around two tool calls, offline
``FunctionModel``s): golem ``Agent.run`` and ``TemporalAgent.run`` (its blobs in a
``SQLiteBlobs`` file, the store workers of one host share), pydantic-ai ``Agent.run`` and
its ``TemporalAgent`` (a ``sandboxed=False`` workflow, ``PydanticAIPlugin`` and
``AgentPlugin``: the setup pydantic-ai documents; golem's workflow is unsandboxed too).
The four are timed in interleaved rounds (``--rounds``, default 5, of ``--runs`` runs
each): the overhead of durability is the durable run minus the plain run of the same
library, by the measuring process's CPU time (both workers and clients; the server's is
left out, as it is the same server for both) and by the wall clock; per step, it is
divided by the activities one run records (counted in each library's event history:
golem 5, pydantic-ai 5: its tool calls are activities too). The figures are the median
over the rounds; the ratio golem / pydantic-ai is the ratio of those medians (each
round's own ratio beside it). Target: golem's CPU overhead per step at most 0.8x
pydantic-ai's.

Two more runs in the same rounds say where the overhead sits: bare Temporal (a workflow
of as many no-op activities as golem's run records, payloads of golem's size: the SDK's
and the server's cost of a step, which no library on Temporal avoids) and golem with its
blobs in this process's memory (``MemoryBlobs``: golem's workflow and activities without
a durable blob store).

Then one more round of golem's durable runs, instrumented (``breakdown``): timers wrap
the engine's serialization (golem's JSON of payloads, records and blob nodes, the
converter's structuring, Temporal's JSON payload converter), blob hashing, blob reads
(the store's ``get`` and ``walk``) and blob writes (``put``: SQLite inserts and commits),
counted by exclusive time (a timed call inside another is its own); "other" is the
rest of the step's CPU overhead (Temporal's SDK, the workflow's replay of the driver,
asyncio). The instrumentation is the bench's (it patches the engine's modules in this
child only): the timed rounds run without it.

``--write bench/results.md`` records the section ``durable_temporal``; ``--quick``
runs small sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["main", "render"]

PAI_NAME = "bench_temporal_pai"
GOLEM_NAME = "bench-temporal-golem"
TARGET = 0.8
"""golem's CPU overhead per step over pydantic-ai's, at most (issue 46 item 7)."""
FLOOR_STEPS = 5
"""The bare Temporal workflow's activities: as many as golem's run records."""
ANSWER = "finished: step 2 done"
"""What every run of the workload answers (bare Temporal's: how many no-ops it ran)."""


# -- pydantic-ai's side ------------------------------------------------------------------


def _pai_agent() -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        usage = RequestUsage(input_tokens=1, output_tokens=1)  # no estimate over messages
        turns = sum(1 for m in messages if isinstance(m, ModelResponse))
        if turns < 2:
            call = ToolCallPart("step", {"n": turns + 1}, tool_call_id=f"call_{turns + 1}")
            return ModelResponse(parts=[call], usage=usage)
        return ModelResponse(parts=[TextPart(ANSWER)], usage=usage)

    agent = Agent(FunctionModel(answer), name=PAI_NAME)

    @agent.tool_plain
    async def step(n: int) -> str:
        """Do step n."""
        return f"step {n} done"

    return agent


_PaiRun: Any = None
_Floor: Any = None
try:
    from temporalio import workflow as _workflow
except ImportError:  # Temporal is optional
    _workflow = None  # type: ignore[assignment]

if _workflow is not None:

    @_workflow.defn(name="BenchTemporalPai", sandboxed=False)  # as golem's: no sandbox
    class _PaiRunWorkflow:
        """pydantic-ai's run as a workflow (the agent is set on the class before the
        worker starts: Temporal refuses a class defined in a function)."""

        __pydantic_ai_agents__: ClassVar[list[Any]] = []

        @_workflow.run
        async def run(self, prompt: str) -> str:
            (agent,) = self.__pydantic_ai_agents__
            result = await agent.run(prompt)
            return str(result.output)

    _PaiRun = _PaiRunWorkflow

    from datetime import timedelta

    from temporalio import activity as _activity

    @_activity.defn(name="bench.noop")
    async def _noop(payload: dict[str, Any]) -> dict[str, Any]:
        """Nothing: what a step costs Temporal alone (a reference-sized result)."""
        return {"type": "golemBlob", "key": "0" * 64, "size": len(payload)}

    @_workflow.defn(name="BenchTemporalFloor", sandboxed=False)
    class _FloorWorkflow:
        """Bare Temporal: the activities golem's run records (five), each a no-op
        taking and returning payloads of the size golem's carry (ids and references)."""

        @_workflow.run
        async def run(self, steps: int) -> dict[str, Any]:
            for n in range(steps):
                payload = {"agent": GOLEM_NAME, "runId": "r" * 32, "history": "h" * 64, "n": n}
                await _workflow.execute_activity(
                    _noop,
                    payload,
                    start_to_close_timeout=timedelta(minutes=5),
                    heartbeat_timeout=timedelta(seconds=30),
                )
            return {"type": "golemBlob", "key": "1" * 64, "size": steps}

    _Floor = _FloorWorkflow


# -- the breakdown: timers the child patches into golem's engine ----------------------------


class _Timers:
    """Exclusive time per category, by the calling thread's CPU clock and by the wall
    clock (a blob write waits for the disk): a timed call inside another pauses the
    outer one."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[list[Any]] = []  # [category, cpu, wall, inner cpu, inner wall]

    def wrap(self, category: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            frame: list[Any] = [category, time.thread_time(), time.perf_counter(), 0.0, 0.0]
            self._stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                self._stack.pop()
                cpu = time.thread_time() - frame[1]
                wall = time.perf_counter() - frame[2]
                self.cpu[category] = self.cpu.get(category, 0.0) + cpu - frame[3]
                self.wall[category] = self.wall.get(category, 0.0) + wall - frame[4]
                self.calls[category] = self.calls.get(category, 0) + 1
                if self._stack:
                    self._stack[-1][3] += cpu
                    self._stack[-1][4] += wall

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed


def _thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's threads so far, by kind: ``core`` (the Temporal
    SDK's Rust threads: gRPC, protobuf, its state machines) and ``python`` (the event
    loop, the workflow threads); empty where ``/proc`` is not there."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    found = {"core": 0.0, "python": 0.0}
    for task in Path("/proc/self/task").glob("*"):
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kind = "core" if name.startswith(("tokio", "temporal", "workflow-proces")) else "python"
        found[kind] += (int(fields[11]) + int(fields[12])) / tick
    return found if Path("/proc/self/task").exists() else {}


@contextmanager
def _instrumented(timers: _Timers, store: Any) -> Iterator[None]:
    """Patch the engine's serialization, hashing and blob store with ``timers``."""
    from temporalio import converter

    import golem_shell.engines._blobs as blobs
    import golem_shell.engines._records as records
    import golem_shell.engines.temporal._activities as activities
    import golem_shell.engines.temporal._common as common
    import golem_shell.engines.temporal._refs as refs
    import golem_shell.engines.temporal._workflow as workflow_

    undo: list[tuple[Any, str, Any]] = []
    split = os.environ.get("BENCH_SPLIT")
    golem_json = "serialization (golem: records, blob nodes, stashes)"

    def patch(owner: Any, name: str, category: str) -> None:
        old = getattr(owner, name)
        undo.append((owner, name, old))
        setattr(owner, name, timers.wrap(category, old))

    patch(blobs, "_compact", golem_json + (" _compact" if split else ""))
    patch(blobs, "key_of", "blob hashing")
    for module in (blobs,):
        shim = type("json", (), {})()
        shim.loads = timers.wrap(golem_json + (" loads" if split else ""), json.loads)
        shim.dumps = json.dumps
        undo.append((module, "json", module.json))
        module.json = shim  # type: ignore[attr-defined]
    for module in (records, workflow_, activities, refs):
        for name in ("encode", "decode", "decode_as", "CALL", "MESSAGES", "USAGE"):
            if not hasattr(module, name):
                continue
            value = getattr(module, name)
            if isinstance(value, tuple):  # (unstructure, structure) pairs
                undo.append((module, name, value))
                where = golem_json + (f" {name}" if split else "")
                setattr(module, name, tuple(timers.wrap(where, f) for f in value))
            else:
                patch(module, name, golem_json + (f" {name}" if split else ""))
    for kind in (blobs.MESSAGE_CHAIN, blobs.LOG_CHAIN):
        for name in ("encode", "decode"):
            old = getattr(kind, name)
            undo.append((kind, name, old))
            where = golem_json + (f" {kind.name} {name}" if split else "")
            object.__setattr__(kind, name, timers.wrap(where, old))
    proxy = type("Converter", (), {})()  # cattrs' converter has slots: a timed stand-in
    where = golem_json + (" converter" if split else "")
    proxy.structure = timers.wrap(where, common.CONVERTER.structure)
    proxy.unstructure = timers.wrap(where, common.CONVERTER.unstructure)
    for module in (activities, refs):  # the request's set-up: the workflow's, in ``_refs``
        undo.append((module, "CONVERTER", module.CONVERTER))
        module.CONVERTER = proxy  # type: ignore[attr-defined]
    plain = converter.JSONPlainPayloadConverter
    for name in ("to_payload", "from_payload"):
        patch(plain, name, "serialization (Temporal's JSON payload converter)")
    patch(store, "put", "blob writes (SQLite)")
    patch(store, "get", "blob reads")
    patch(store, "walk", "blob reads")
    try:
        yield
    finally:
        for owner, name, old in reversed(undo):
            if isinstance(owner, blobs.ChainKind):
                object.__setattr__(owner, name, old)
            elif owner is store:
                delattr(owner, name) if name in vars(owner) else setattr(owner, name, old)
            else:
                setattr(owner, name, old)


# -- the child --------------------------------------------------------------------------------


async def _activities(client: Any, workflow_id: str) -> int:
    """The activities one run recorded (its event history's scheduled activities)."""
    handle = client.get_workflow_handle(workflow_id)
    events = [e async for e in handle.fetch_history_events()]
    return sum(1 for e in events if e.HasField("activity_task_scheduled_event_attributes"))


async def _measure(address: str, runs: int, rounds: int, where: str) -> dict[str, Any]:
    import warnings

    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalAgent
    from temporalio.client import Client
    from temporalio.worker import Worker

    from bench.durable_children import make_agent
    from golem_shell.engines._blobs import MemoryBlobs, SQLiteBlobs
    from golem_shell.temporal import TemporalAgent as GolemTemporalAgent

    store = SQLiteBlobs(Path(where) / "blobs.sqlite")
    golem_plain = make_agent()
    golem = GolemTemporalAgent(golem_plain, name=GOLEM_NAME, task_queue="golem", blobs=store)
    # the same agent with its blobs in this process's memory: what no durable store costs
    golem_memory = GolemTemporalAgent(
        golem_plain, name=f"{GOLEM_NAME}-memory", task_queue="golem-memory", blobs=MemoryBlobs()
    )
    # and in a SQLite file flushed at checkpoints only (``synchronous="normal"``)
    normal = SQLiteBlobs(Path(where) / "blobs-normal.sqlite", synchronous="normal")
    golem_normal = GolemTemporalAgent(
        golem_plain, name=f"{GOLEM_NAME}-normal", task_queue="golem-normal", blobs=normal
    )
    pai_plain = _pai_agent()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated for TemporalDurability in 2.x
        pai = TemporalAgent(pai_plain)
    _PaiRun.__pydantic_ai_agents__ = [pai]
    golem_client = await Client.connect(address)
    pai_client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    pai_worker = Worker(
        pai_client, task_queue="pai", workflows=[_PaiRun], plugins=[AgentPlugin(pai)]
    )
    floor_worker = Worker(golem_client, task_queue="floor", workflows=[_Floor], activities=[_noop])
    running = asyncio.create_task(pai_worker.run())  # never shut down: ``_leave_with``
    floor_running = asyncio.create_task(floor_worker.run())
    counter = iter(range(10**9))
    prefix = f"{time.time_ns()}-"  # run ids never started before on this server

    async def golem_durable() -> str:
        return str((await golem.run(golem_client, "go", run_id=f"{prefix}g{next(counter)}")).output)

    async def golem_memory_durable() -> str:
        run_id = f"{prefix}m{next(counter)}"
        return str((await golem_memory.run(golem_client, "go", run_id=run_id)).output)

    async def golem_normal_durable() -> str:
        run_id = f"{prefix}n{next(counter)}"
        return str((await golem_normal.run(golem_client, "go", run_id=run_id)).output)

    async def floor() -> str:
        result = await golem_client.execute_workflow(
            _Floor.run, FLOOR_STEPS, id=f"{prefix}f{next(counter)}", task_queue="floor"
        )
        return f"{result['size']} no-ops"

    async def pai_durable() -> str:
        return str(
            await pai_client.execute_workflow(
                _PaiRun.run, "go", id=f"{prefix}p{next(counter)}", task_queue="pai"
            )
        )

    async def golem_direct() -> str:
        return str((await golem_plain.run("go")).output)

    async def pai_direct() -> str:
        return str((await pai_plain.run("go")).output)

    ops: dict[str, Callable[[], Awaitable[str]]] = {
        "golem_plain": golem_direct,
        "golem_durable": golem_durable,
        "pydantic_ai_plain": pai_direct,
        "pydantic_ai_durable": pai_durable,
        "golem_memory_durable": golem_memory_durable,
        "golem_normal_durable": golem_normal_durable,
        "temporal_floor": floor,
    }
    async with (
        golem.worker(golem_client),
        golem_memory.worker(golem_client),
        golem_normal.worker(golem_client),
    ):
        for _ in range(5):  # warm-up: imports, connections, caches
            for name, op in ops.items():
                answer = f"{FLOOR_STEPS} no-ops" if name == "temporal_floor" else ANSWER
                assert (await op()) == answer, name
        # as bench/timing.py does: what is alive now is frozen, so a collection scans
        # what the runs allocate, not the libraries' imports (a full collection of
        # those in one library's round would be charged to it)
        gc.collect()
        gc.freeze()
        steps = {
            "golem": await _activities(golem_client, f"{prefix}g0"),
            "pydantic_ai": await _activities(pai_client, f"{prefix}p1"),
            "golem_memory": await _activities(golem_client, f"{prefix}m2"),
            "golem_normal": await _activities(golem_client, f"{prefix}n3"),
            "temporal_floor": await _activities(golem_client, f"{prefix}f4"),
        }
        cpu: dict[str, list[float]] = {k: [] for k in ops}
        wall: dict[str, list[float]] = {k: [] for k in ops}
        for _ in range(rounds):
            for name, op in ops.items():
                start, start_wall = time.process_time(), time.perf_counter()
                for _ in range(runs):
                    await op()
                cpu[name].append((time.process_time() - start) / runs * 1000)
                wall[name].append((time.perf_counter() - start_wall) / runs * 1000)
        timers = _Timers()
        with _instrumented(timers, store):
            start, threads = time.process_time(), _thread_cpu()
            for _ in range(runs):
                await golem_durable()
            instrumented = (time.process_time() - start) / runs * 1000
            after = _thread_cpu()
            threads = {k: (after[k] - threads[k]) / runs * 1000 for k in after}
    for task in (running, floor_running):
        assert not task.done() or task.exception() is None
    return _figures(cpu, wall, steps, rounds, runs, timers, instrumented, threads)


def _figures(
    cpu: dict[str, list[float]],
    wall: dict[str, list[float]],
    steps: dict[str, int],
    rounds: int,
    runs: int,
    timers: _Timers,
    instrumented_ms: float,
    threads: dict[str, float],
) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": runs, "rounds": rounds, "steps": steps}
    for clock, samples in (("cpu", cpu), ("wall", wall)):
        per_round = {
            lib: [
                (d - p) / steps[lib]
                for p, d in zip(samples[f"{lib}_plain"], samples[f"{lib}_durable"], strict=True)
            ]
            for lib in ("golem", "pydantic_ai")
        }
        # golem with its blobs in memory (its plain run subtracted, as golem's) and bare
        # Temporal (no plain run: all of it is durability's cost)
        per_round["golem_memory"] = [
            (d - p) / steps["golem_memory"]
            for p, d in zip(samples["golem_plain"], samples["golem_memory_durable"], strict=True)
        ]
        per_round["golem_normal"] = [
            (d - p) / steps["golem_normal"]
            for p, d in zip(samples["golem_plain"], samples["golem_normal_durable"], strict=True)
        ]
        per_round["temporal_floor"] = [
            d / steps["temporal_floor"] for d in samples["temporal_floor"]
        ]
        med = {k: statistics.median(v) for k, v in samples.items()}
        step = {lib: statistics.median(v) for lib, v in per_round.items()}
        out[clock] = {
            **{f"{k}_ms": round(v, 3) for k, v in med.items()},
            "golem_step_ms": round(step["golem"], 3),
            "pydantic_ai_step_ms": round(step["pydantic_ai"], 3),
            "ratio": round(step["golem"] / step["pydantic_ai"], 3),
            "round_ratios": [
                round(g / p, 3)
                for g, p in zip(per_round["golem"], per_round["pydantic_ai"], strict=True)
            ],
            "golem_memory_step_ms": round(step["golem_memory"], 3),
            "temporal_floor_step_ms": round(step["temporal_floor"], 3),
            "golem_normal_step_ms": round(step["golem_normal"], 3),
            "memory_ratio": round(step["golem_memory"] / step["pydantic_ai"], 3),
            "normal_ratio": round(step["golem_normal"] / step["pydantic_ai"], 3),
            "floor_ratio": round(step["temporal_floor"] / step["pydantic_ai"], 3),
        }
    n = steps["golem"]
    plain = out["cpu"]["golem_plain_ms"]

    def per_step(value_s: float) -> float:
        return round(value_s * 1000 / runs / n, 3)

    parts = {k: per_step(v) for k, v in sorted(timers.cpu.items())}
    breakdown: dict[str, Any] = {
        "step_ms": round((instrumented_ms - plain) / n, 3),
        "parts_ms": parts,
        "parts_wall_ms": {k: per_step(v) for k, v in sorted(timers.wall.items())},
        "calls_per_step": {k: round(v / runs / n, 2) for k, v in sorted(timers.calls.items())},
    }
    if threads:  # the rest, by thread: the SDK's core apart from the Python threads
        breakdown["core_ms"] = round(threads["core"] / n, 3)
        breakdown["other_ms"] = round((threads["python"] - plain) / n - sum(parts.values()), 3)
    else:
        breakdown["other_ms"] = round(breakdown["step_ms"] - sum(parts.values()), 3)
    out["breakdown"] = breakdown
    return out


# -- the parent ------------------------------------------------------------------------------


def _child(address: str, runs: int, rounds: int, where: str) -> dict[str, Any]:
    argv = ["--child", address, "--runs", str(runs), "--rounds", str(rounds), "--dir", where]
    proc = subprocess.run(
        [sys.executable, "-m", "bench.durable_temporal", *argv],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"the child failed ({proc.returncode}): {proc.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


def render(data: dict[str, Any]) -> str:
    """The section's Markdown."""
    r = data["figures"]
    machine = data["machine"]
    steps = r["steps"]
    lines = [
        f"## Temporal overhead per step against pydantic-ai (`{data['command']}`)",
        "",
        "golem's `TemporalAgent` (blobs in a `SQLiteBlobs` file) and pydantic-ai's"
        " `TemporalAgent` (unsandboxed workflow, `PydanticAIPlugin`, `AgentPlugin`), one"
        " Temporal dev server, one process holding both workers and clients, 3 model"
        " requests and 2 tool calls per run, offline `FunctionModel`s; interleaved rounds"
        f" ({r['rounds']} of {r['runs']} runs), medians over the rounds"
        " (`bench/durable_temporal.py`). Overhead: durable run minus plain run of the same"
        f" library; per step: divided by the activities a run records (golem {steps['golem']},"
        f" pydantic-ai {steps['pydantic_ai']}). CPU: the measuring process's (the server's"
        " left out)."
        f" {', '.join(f'{k} {v}' for k, v in data.get('versions', {}).items())};"
        f" machine: nproc {machine['nproc']}, python {machine['python']}, load average"
        f" {machine.get('load_average_end', '-')} at the end.",
        "",
        "| clock | golem plain ms/run | golem durable ms/run | pydantic-ai plain ms/run"
        " | pydantic-ai durable ms/run | golem ms/step | pydantic-ai ms/step"
        " | golem / pydantic-ai | each round |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for clock in ("cpu", "wall"):
        c = r[clock]
        lines.append(
            f"| {clock} | {c['golem_plain_ms']:.2f} | {c['golem_durable_ms']:.2f}"
            f" | {c['pydantic_ai_plain_ms']:.2f} | {c['pydantic_ai_durable_ms']:.2f}"
            f" | {c['golem_step_ms']:.2f} | {c['pydantic_ai_step_ms']:.2f}"
            f" | {c['ratio']:.2f} | {', '.join(f'{x:.2f}' for x in c['round_ratios'])} |"
        )
    ratio = r["cpu"]["ratio"]
    verdict = "met" if ratio <= TARGET else "MISSED"
    b = r["breakdown"]
    lines += [
        "",
        f"Target: golem's CPU overhead per step at most {TARGET}x pydantic-ai's:"
        f" {ratio:.2f}x (the ratio of the medians), {verdict}; the median of the rounds'"
        f" own ratios is {statistics.median(r['cpu']['round_ratios']):.2f}x.",
        "",
        *_floor_lines(r),
        "Where a golem step's CPU time goes (one more round of golem's durable runs,"
        " instrumented: the exclusive CPU time of each kind of work, by the thread's clock,"
        " and its wall time (a blob write waits for the disk's flush), per step; the"
        " SDK's core and the rest by the CPU time of the process's threads; the instrumented"
        f" step cost {b['step_ms']:.2f} ms of CPU):",
        "",
        "| part | CPU ms/step | wall ms/step | calls/step |",
        "|---|---:|---:|---:|",
    ]
    for part, ms in b["parts_ms"].items():
        lines.append(
            f"| {part} | {ms:.3f} | {b['parts_wall_ms'][part]:.3f}"
            f" | {b['calls_per_step'].get(part, 0):.1f} |"
        )
    if "core_ms" in b:
        lines.append(
            "| Temporal SDK's core (its Rust threads: gRPC, protobuf)"
            f" | {b['core_ms']:.3f} | - | - |"
        )
    lines.append(
        "| other Python (Temporal's Python SDK, golem's workflow and activities, asyncio)"
        f" | {b['other_ms']:.3f} | - | - |"
    )
    return "\n".join(lines) + "\n"


def _floor_lines(r: dict[str, Any]) -> list[str]:
    """Where the overhead sits: bare Temporal's cost of the same activities, golem
    without a durable blob store, golem, pydantic-ai (the same rounds)."""
    cpu, wall = r["cpu"], r["wall"]
    if "temporal_floor_step_ms" not in cpu:
        return []
    floor, memory = cpu["temporal_floor_step_ms"], cpu["golem_memory_step_ms"]
    golem, pai = cpu["golem_step_ms"], cpu["pydantic_ai_step_ms"]
    rows = (
        (
            f"bare Temporal: a workflow of {r['steps']['temporal_floor']} no-op activities,"
            " payloads of golem's size (ids and references)",
            "temporal_floor_step_ms",
            cpu["floor_ratio"],
        ),
        (
            "golem, its blobs in this process's memory (`MemoryBlobs`: no durable store)",
            "golem_memory_step_ms",
            cpu["memory_ratio"],
        ),
        (
            "golem, its blobs in a `SQLiteBlobs` file flushed at checkpoints only"
            ' (`synchronous="normal"`: no flush per write)',
            "golem_normal_step_ms",
            cpu["normal_ratio"],
        ),
        (
            "golem, its blobs in a `SQLiteBlobs` file (as above: the default, a flush per write)",
            "golem_step_ms",
            cpu["ratio"],
        ),
        ("pydantic-ai (as above)", "pydantic_ai_step_ms", 1.0),
    )
    lines = [
        "Where the overhead sits (the same rounds; per step, medians over the rounds):",
        "",
        "| run | CPU ms/step | wall ms/step | CPU / pydantic-ai |",
        "|---|---:|---:|---:|",
    ]
    for name, key, ratio in rows:
        lines.append(f"| {name} | {cpu[key]:.2f} | {wall[key]:.2f} | {ratio:.2f} |")
    needed = TARGET * pai
    lines += [
        "",
        f"Above bare Temporal, a step of golem costs {golem - floor:.2f} ms of CPU"
        f" ({memory - floor:.2f} ms with no durable blob store), one of pydantic-ai"
        f" {pai - floor:.2f} ms. At {TARGET}x pydantic-ai a golem step would cost"
        f" {needed:.2f} ms: {needed - floor:.2f} ms above bare Temporal for golem's"
        " workflow, activities and blob store together. The default's flush per write,"
        f" against `normal`: {golem - cpu['golem_normal_step_ms']:+.2f} ms a step.",
        "",
    ]
    return lines


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("pydantic-ai-slim", "temporalio"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "-"
    return found


async def _leave_with(measuring: Awaitable[dict[str, Any]]) -> None:
    """The child's body: its figures printed, it leaves from inside the event loop, so the
    workers' tasks are never cancelled (a Temporal worker's shutdown can wait for ever on
    a poll), nor the SDK's threads finalized; a failure leaves too, its traceback out."""
    from bench.durable_children import child_exit

    try:
        figures = await measuring
    except BaseException:
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    child_exit(figures)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durable_temporal", description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="runs per timed round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument(
        "--write", type=Path, help="record the figures in the report's JSON sibling, render it"
    )
    parser.add_argument("--child", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        asyncio.run(_leave_with(_measure(args.child, args.runs, args.rounds, args.dir)))
    if args.quick:
        args.runs, args.rounds = 3, 2
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from temporal_server import start_temporal  # type: ignore[import-not-found,unused-ignore]

    with tempfile.TemporaryDirectory() as tmp, start_temporal(Path(tmp)) as server:
        figures = _child(server.address, args.runs, args.rounds, tmp)
    print(json.dumps(figures))
    from bench.report import machine, recorded_command, write_section

    data = {
        "command": recorded_command("python -m bench.durable_temporal", argv),
        "machine": machine(),
        "versions": _versions(),
        "figures": figures,
    }
    print()
    print(render(data))
    if args.write is not None:
        write_section(args.write, "durable_temporal", data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
