"""The benchmark: golem and its peers on one workload, in one run, in one process.

``python -m bench`` builds the workload (``bench/workload.py``) at each size, converts
it for every library, times every op in interleaved rounds (``bench/timing.py``), and
prints one JSON line per measurement and per ratio, then a table of golem/peer ratios
with each target met or missed. ``--write bench/results.md`` records the measurements,
the machine and the library versions as the ``run`` section of ``bench/results.json``
and renders the report from it (``bench/report.py``: ``render``, from
``bench/run_report.py``, turns the recorded section into Markdown, verdicts and misses
included, so nothing in it is typed).

This module owns the command: its options, the order of the measurements and what is
recorded. The ops are ``bench/run_ops.py``'s, the targets and verdicts
``bench/targets.py``'s, the section's Markdown ``bench/run_report.py``'s.

Ops per size ``n`` (seconds per call):

- baselines: stdlib ``json.loads`` / ``json.dumps`` of the very bytes golem reads and
  writes (orjson's too, for scale); a bare Python pass over the neutral dicts; the
  floor pass (one pass that pairs results with calls by id in a dict and parses every
  call's arguments: the least work a repair can do);
- golem: ``decode_history`` (also ``decode_json_stdlib``: without the optional orjson
  accelerator, as without ``golem-agents[fast]``) / ``encode_history``;
  ``normalize_history`` on the clean and the damaged workload and ``sanitize_history``,
  each both on one history called again and again (the plain name) and ``_cold``: on a
  freshly built history whose tool-call arguments were never parsed (golem parses them
  once per part and caches the result); ``trim_history(n // 2)`` as the sliding window
  (``trim_half``: the window the peers keep) and with its default steps
  (``trim_half_stepped``);
  ``budget_history(approximate_tokens, half)``;
- pydantic-ai: its JSON codec, ``repair_messages``, ``sanitize_messages``; langchain-core:
  ``trim_messages`` by message count and by approximate tokens. Above 10,000 messages
  the peers' encoder and token trim are skipped (seconds per call).

Once per run: recorded streams decoded and accumulated, golem vs each official SDK
(``bench/streaming.py``); start-up in fresh processes vs pydantic-ai
(``bench/startup.py``, left out by ``--quick``); stored conversations: one append at
100 to 100,000 messages and a 10,000-message load, SQLite and PostgreSQL
(``bench/store.py``; ``--quick``: SQLite, small); ``agent.run`` overhead on offline
models (a text answer; one tool round trip; one tool round trip after a 1,000-message
history), golem vs pydantic-ai; and,
per size up to 10,000, the peak memory of one decode (``tracemalloc``) vs input bytes.
Every peer is optional: without one, golem runs against the baselines alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bench.durable_peers import durable_records
from bench.peers import Peers, load_peers
from bench.report import write_section
from bench.run_ops import agent_ops, size_ops
from bench.run_report import render
from bench.startup import startup_records
from bench.store import store_records, store_verdicts
from bench.streaming import stream_ops
from bench.targets import judge, tracing_verdicts
from bench.timing import CLOCKS, Memory, Record, measure
from bench.tracing import history_ops

__all__ = ["main", "render"]

DEFAULT_SIZES = (1_000, 10_000, 100_000)
DEFAULT_REPEAT = 7
MIN_REPEAT_S = 0.02
AGENT_HISTORY_N = 1_000


def _distribution_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def environment(peers: Peers) -> dict[str, str]:
    libraries = {
        name: _distribution_version(name) for name in ("golem-agents", "attrs", "cattrs", "returns")
    }
    libraries.update(peers.versions())
    if peers.pydantic_ai is not None:
        libraries["pydantic"] = _distribution_version("pydantic")
    return {
        "nproc": str(os.cpu_count()),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        **libraries,
    }


# -- main ----------------------------------------------------------------------------


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(s.replace("_", "")) for s in text.split(",") if s.strip())
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected sizes like 1000,10000, got {text!r}")
    return sizes


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Time golem and its peers on the reference workload, in one process.",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        help="history sizes, comma-separated (default 1000,10000,100000; --quick: 200)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help=f"timed repeats per op after warm-up (default {DEFAULT_REPEAT}; --quick: 1)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke mode: one call per repeat, small agent history; figures not meaningful",
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: elapsed time (default); cpu: process CPU time, steadier on a busy machine",
    )
    parser.add_argument("--no-peers", action="store_true", help="golem and baselines only")
    parser.add_argument("--write", type=Path, help="also write the report (markdown) here")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = (200,) if args.quick else DEFAULT_SIZES
    if args.repeat is None:
        args.repeat = 1 if args.quick else DEFAULT_REPEAT
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = "python -m bench" + (" " + " ".join(argv) if argv else "")
    if argv is None:
        command = "python -m bench " + " ".join(sys.argv[1:])
    command = command.strip()
    min_repeat_s = 0.0 if args.quick else MIN_REPEAT_S
    clock = CLOCKS[args.clock]
    peers = Peers(None, None, None) if args.no_peers else load_peers()

    def emit(line: dict[str, object]) -> None:
        print(json.dumps(line), flush=True)

    records: list[Record] = []
    memory: list[Memory] = []
    for n in args.sizes:
        ops, mem = size_ops(n, peers)
        for m in mem:
            emit(m.as_json())
        memory += mem
        for r in measure(ops, args.repeat, min_repeat_s, clock):
            emit({"kind": "time", **r.as_json()})
            records.append(r)
        del ops
    history_n = min(AGENT_HISTORY_N, max(args.sizes)) if args.quick else AGENT_HISTORY_N
    for r in asyncio.run(agent_ops(peers, history_n, args.repeat, min_repeat_s, clock)):
        emit({"kind": "time", **r.as_json()})
        records.append(r)
    for r in asyncio.run(history_ops(args.repeat, min_repeat_s, clock)):
        emit({"kind": "time", **r.as_json()})
        records.append(r)
    for r in measure(stream_ops(), args.repeat, min_repeat_s, clock):
        emit({"kind": "time", **r.as_json()})
        records.append(r)
    if not args.quick:  # fresh processes: seconds, not for the smoke run
        for r in startup_records(args.repeat):
            emit({"kind": "time", **r.as_json()})
            records.append(r)
        for r in durable_records(rounds=args.repeat):
            emit({"kind": "time", **r.as_json()})
            records.append(r)
    store_args = {"repeat": args.repeat, "min_repeat_s": min_repeat_s, "clock": clock}
    for r in store_records(quick=args.quick, postgres=not args.quick, **store_args):
        emit({"kind": "time", **r.as_json()})
        records.append(r)

    verdicts = judge(records, memory) + tracing_verdicts(records) + store_verdicts(records)
    for v in verdicts:
        emit(v.as_json())
    env = environment(peers)
    env["clock"] = {"wall": "wall (time.perf_counter)", "cpu": "cpu (time.process_time)"}[
        args.clock
    ]
    data = {
        "command": command,
        "env": env,
        "records": [r.as_json() for r in records],
        "memory": [m.as_json() for m in memory],
    }
    print()
    print(render(data))
    if args.write is not None:
        write_section(args.write, "run", data)
    return 0
