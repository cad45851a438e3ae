"""Where the soak's deployment stops scaling: users raised until turns/s levels off.

``python -m bench.soak_limit`` (issue 50 item 2) starts ``bench.soak``'s deployment of
each configuration (``--config``: plain, dbos, temporal, durable or all), then runs calm
phases of ``--minutes`` each with ``--start`` users, doubling the users each phase, until
the turns per second grow by less than ``--gain`` (10 %) over the previous phase, or
``--max-users`` is reached. Each phase records its throughput, latency (and the part
golem adds), the invariants (checked as the soak checks them), and the machine's CPU
use over the phase (``/proc/stat``: the share of both cores' time not idle), which shows
what the limit is. ``--write bench/results.md`` records the section ``soak_limit``.

    python -m bench.soak_limit --config all --write bench/results.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.report import add_write_option
from bench.soak import run_phase
from bench.soak_deploy import Deployment

__all__ = ["cpu_busy", "main", "render", "search"]


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cpu_busy(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the machine's CPU time that was busy between two ``_cpu_times``."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


async def search(
    config: str,
    where: Path,
    *,
    start: int,
    max_users: int,
    minutes: float,
    gain: float,
    servers: int = 2,
) -> list[dict[str, Any]]:
    """The phases of one configuration, users doubling until the throughput levels off."""
    steps: list[dict[str, Any]] = []
    deploy = Deployment(config, where, servers=servers)
    try:
        await deploy.start()
        users = start
        while users <= max_users:
            before = _cpu_times()
            phase = await run_phase(deploy, users=users, seconds=minutes * 60, with_chaos=False)
            phase["cpu_busy"] = round(cpu_busy(before, _cpu_times()), 3)
            phase["config"] = config
            phase.pop("client_errors", None)
            print(json.dumps({k: v for k, v in phase.items() if k != "invariants"}), flush=True)
            steps.append(phase)
            if len(steps) > 1 and phase["turns_per_s"] < steps[-2]["turns_per_s"] * (1 + gain):
                break
            users *= 2
    finally:
        await deploy.close()
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak_limit", description=__doc__)
    parser.add_argument(
        "--config", choices=("plain", "dbos", "temporal", "durable", "all"), default="all"
    )
    parser.add_argument("--start", type=int, default=4, help="users of the first phase")
    parser.add_argument("--max-users", type=int, default=128)
    parser.add_argument("--minutes", type=float, default=1.0, help="per phase")
    parser.add_argument("--gain", type=float, default=0.1, help="least growth to go on")
    add_write_option(parser)
    args = parser.parse_args(argv)
    named = {"all": ("plain", "dbos", "temporal"), "durable": ("dbos", "temporal")}
    root = Path(tempfile.mkdtemp(prefix="golem-soak-limit-"))
    print(f"bench.soak_limit: the deployment's files are in {root}", file=sys.stderr)
    steps: list[dict[str, Any]] = []
    for config in named.get(args.config, (args.config,)):
        steps += asyncio.run(
            search(
                config,
                root / config,
                start=args.start,
                max_users=args.max_users,
                minutes=args.minutes,
                gain=args.gain,
            )
        )
    ok = all(v["ok"] for s in steps for k, v in s["invariants"].items() if k != "counts")
    if ok:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"bench.soak_limit: an invariant broke; the logs are in {root}", file=sys.stderr)
    if args.write is not None:
        from bench.report import machine, recorded_command, write_section

        data = {
            "steps": steps,
            "command": recorded_command("python -m bench.soak_limit", argv),
            "machine": machine(),
            "parameters": {"minutes": args.minutes, "gain": args.gain},
        }
        write_section(args.write, "soak_limit", data)
    return 0 if ok else 1


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def render(data: dict[str, Any]) -> str:
    """The ``soak_limit`` section of ``bench/results.md``."""
    p, m = data.get("parameters", {}), data.get("machine", {})
    lines = [
        f"## Many users: where the deployment stops scaling (`{data['command']}`)",
        "",
        f"Calm phases of {p.get('minutes', '?')} minutes, the users doubling each phase"
        f" until the turns per second grow by less than {p.get('gain', 0.1):.0%}; the"
        " soak's deployment (two web-chat processes, one PostgreSQL, the scripted model) on"
        f" {m.get('nproc', '?')} cores, Python {m.get('python', '?')}, load"
        f" {m.get('load_average_end', '?')} at the end. *CPU busy*: the share of the"
        " machine's CPU time not idle during the phase (`/proc/stat`), the clients and the"
        " model included. *Invariants*: the soak's, checked after each phase.",
        "",
        "| config | users | turns | turns/s | p50 ms | p99 ms | added p50 ms | added p99 ms"
        " | CPU busy | invariants |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s in data["steps"]:
        broken = [k for k, v in s["invariants"].items() if k != "counts" and not v["ok"]]
        lines.append(
            f"| {s['config']} | {s['users']} | {s['turns']} | {s['turns_per_s']:.2f}"
            f" | {_ms(s['latency_p50_s'])} | {_ms(s['latency_p99_s'])}"
            f" | {_ms(s['added_p50_s'])} | {_ms(s['added_p99_s'])}"
            f" | {s['cpu_busy']:.0%} | {'hold' if not broken else 'BROKEN: ' + ', '.join(broken)} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
