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

This module owns the command, the short comparison (its child, ``_measure``), the parent
side of the long runs (``long_rows``: one child process per run) and ``durable_records``
(the overhead figures ``python -m bench`` records); pydantic-ai's long-run children are
``bench/durable_peers_long.py``'s, the section's ``render`` is
``bench/durable_peers_render.py``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bench.durable_peers_long import (
    CONTINUED,
    db_bytes,
    diagnose,
    pai_long_dbos,
    pai_long_temporal,
    plain_long,
)
from bench.durable_peers_render import render
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


# -- the parent: children, long rows, records, the command --------------------


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
                figures["db_bytes"] = db_bytes(db)
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
        child_exit(asyncio.run(diagnose(*args.diagnose)))
    if args.plain_long:
        child_exit(asyncio.run(plain_long(args.plain_long, args.long_steps)))
    if args.pai_long_dbos:
        child_exit(asyncio.run(pai_long_dbos(args.pai_long_dbos, args.long_steps)))
    if args.pai_long_temporal:
        child_exit(
            asyncio.run(
                pai_long_temporal(
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


if __name__ == "__main__":
    raise SystemExit(main())
