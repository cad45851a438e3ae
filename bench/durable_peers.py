"""Durable overhead against pydantic-ai's DBOS integration: ``python -m bench.durable_peers``.

One child process, DBOS on SQLite (a file in a temporary directory), both libraries'
durable agents registered on the same DBOS instance, the same workload (three model
requests around two tool calls, offline ``FunctionModel``s), timed in interleaved rounds:
golem ``Agent.run`` and ``DurableAgent.run`` (the public API only), pydantic-ai
``Agent.run`` and ``DBOSAgent.run``. The overhead of durability is the durable run minus
the plain run of the same library; per effect, it is divided by the steps each records
(golem: every model request and every tool call, 5; pydantic-ai: its model requests, 3,
its function tools run inside the workflow unrecorded). Prints JSON and a Markdown table.
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.timing import Record

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["main"]


def _golem() -> tuple[Any, Any]:
    from bench.durable import AGENT_NAME, make_agent
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

    ops = {
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
        proc = subprocess.run(
            [
                *[sys.executable, "-m", "bench.durable_peers", "--child", db],
                *["--runs", str(runs), "--rounds", str(rounds)],
            ],
            cwd=str(ROOT),
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return None
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durable_peers", description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(_measure(args.child, args.runs, args.rounds))))
        return 0
    result = _child_result(args.runs, args.rounds)
    if result is None:
        print("DBOS or pydantic-ai is not installed, or the child failed", file=sys.stderr)
        return 1
    print(json.dumps(result))
    print()
    print(
        "| library | plain CPU ms/run | durable CPU ms/run | overhead ms/run "
        "| overhead wall ms/run | steps | ms/step |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for lib, key in (("golem", "golem"), ("pydantic-ai", "pydantic_ai")):
        plain, durable = result[f"{key}_plain_cpu_ms"], result[f"{key}_durable_cpu_ms"]
        print(
            f"| {lib} | {plain:.2f} | {durable:.2f} "
            f"| {result[f'{key}_overhead_ms']:.2f} | {result[f'{key}_overhead_wall_ms']:.2f} "
            f"| {result[f'{key}_steps']} "
            f"| {result[f'{key}_per_step_ms']:.2f} |"
        )
    print()
    print(
        f"golem/pydantic-ai overhead: per run {result['per_run_ratio']:.2f}, "
        f"per recorded step {result['per_step_ratio']:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
