"""Load: many concurrent tool-using runs on ONE shared Agent against a loopback provider.

``python -m bench.load`` (or ``python bench/load.py``) starts ``tests/fault_server.py``'s
``FaultServer`` in a child process (so the server has its own core), then:

1. warm-up: ``--concurrency`` runs at once, not measured;
2. throughput: ``--concurrency`` runs at once (half streamed, half not; each a
   three-request run that calls a tool twice per turn, twice), timed: runs per second;
3. memory: ``--batches`` more batches of ``--concurrency`` concurrent runs (10 x 1,000
   = 10,000 runs by default); after each, a full ``gc.collect()`` and the heap size
   (``tracemalloc`` when ``--tracemalloc``, else the process's resident set). The growth
   per 1,000 runs is the least-squares slope over the batches after the first: flat when
   nothing of a finished run is kept.

Every run is checked for identity isolation: its output, every message it added, every
``DeltaEvent`` it received, every tool call id and result, and the ``RunContext`` its
tools saw carry its own run id and its own prompt, never another run's. Peak memory is
``ru_maxrss``. One JSON line of figures is printed at the end.

Options: ``--concurrency``, ``--batches``, ``--provider openai|anthropic``,
``--tracemalloc``, ``--quick`` (100 x 3).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import multiprocessing
import os
import resource
import sys
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import httpx  # noqa: E402

from golem_core import Role  # noqa: E402
from golem_shell import (  # noqa: E402
    Agent,
    AnthropicModel,
    DeltaEvent,
    OpenAIModel,
    RunContext,
    RunResult,
)

SCENARIO = "load"


@dataclass
class Run:
    """What one run produced, kept only until it is checked."""

    prompt: str
    stream: bool
    result: RunResult[str] | None = None
    events: list[DeltaEvent] = field(default_factory=list)


@dataclass
class ToolSeen:
    """Tool executions by the run id their ``RunContext`` carried."""

    by_run: dict[str, list[str]] = field(default_factory=dict)

    def add(self, run_id: str, key: str) -> None:
        self.by_run.setdefault(run_id, []).append(key)


class ShardedTransport(httpx.AsyncBaseTransport):
    """Requests spread round-robin over ``pools`` connection pools of 16 connections.

    httpcore's pool scans every connection and every queued request each time a request
    is queued or done, so one pool with 1,000 requests waiting spends its time there
    (about 40 runs/s here, whatever its size): the figure would be httpcore's, not
    golem's. ``--pools 1`` measures exactly that.
    """

    def __init__(self, pools: int) -> None:
        limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
        self._pools = [httpx.AsyncHTTPTransport(limits=limits) for _ in range(pools)]
        self._next = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self._next = (self._next + 1) % len(self._pools)
        return await self._pools[self._next].handle_async_request(request)

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


def build_agent(
    provider: str, base_url: str, seen: ToolSeen, pools: int = 16
) -> tuple[Agent[None, str], Any]:
    """The one shared agent (and the model, to close)."""

    async def lookup(ctx: RunContext[None], key: str) -> str:
        """Look a key up.

        Args:
            key: what to look up.
        """
        seen.add(ctx.run_id, key)
        return f"value of {key}"

    client = httpx.AsyncClient(transport=ShardedTransport(pools))
    if provider == "openai":
        model: Any = OpenAIModel(
            "gpt-4o-mini", api_key="sk-load", base_url=f"{base_url}/v1", http_client=client
        )
    else:
        model = AnthropicModel(
            "claude-sonnet-4-5", api_key="sk-load", base_url=base_url, http_client=client
        )
    agent: Agent[None, str] = Agent(
        model, instructions=f"Be terse. scenario={SCENARIO}", tools=[lookup]
    )
    return agent, client


async def one_run(agent: Agent[None, str], run: Run) -> Run:
    if run.stream:
        run.result = await agent.run_stream(run.prompt, on_delta=run.events.append)
    else:
        run.result = await agent.run(run.prompt)
    return run


def _tag(prompt: str) -> str:
    return hashlib.sha1(prompt.encode()).hexdigest()[:8]


def check_isolation(runs: Sequence[Run], seen: ToolSeen) -> int:
    """Assert that nothing of one run carries another run's identity; count the checks."""
    checks = 0
    run_ids = set()
    for run in runs:
        result = run.result
        assert result is not None
        assert result.run_id not in run_ids, "two runs share a run id"
        run_ids.add(result.run_id)
        prompt, tag = run.prompt, _tag(run.prompt)
        assert result.output == f"done: {prompt} after 2 turns", (prompt, result.output)
        assert [m.text for m in result.messages if m.role is Role.USER] == [prompt]
        for m in result.new_messages:
            assert (m.run_id, m.conversation_id) == (result.run_id, result.conversation_id)
            for call in m.tool_calls:
                assert call.id is not None and call.id.endswith(tag)
                assert json.loads(call.arguments)["key"].startswith(prompt + "/")
            if m.role is Role.TOOL:
                assert m.tool_call_id is not None and m.tool_call_id.endswith(tag)
                assert m.text.startswith(f"value of {prompt}/")
            checks += 1
        for event in run.events:
            assert (event.run_id, event.conversation_id) == (
                result.run_id,
                result.conversation_id,
            )
            checks += 1
        if run.stream:
            assert run.events, "a streamed run saw no event"
        keys = seen.by_run.pop(result.run_id)
        assert sorted(keys) == sorted(f"{prompt}/{t}/{j}" for t in range(2) for j in range(2))
        checks += len(keys)
    assert not seen.by_run, "a tool ran under a run id no run had"
    return checks


async def batch(agent: Agent[None, str], seen: ToolSeen, start: int, n: int) -> int:
    runs = [Run(f"run-{i}", stream=i % 2 == 1) for i in range(start, start + n)]
    done = await asyncio.gather(*(one_run(agent, r) for r in runs))
    return check_isolation(done, seen)


def heap_bytes(traced: bool) -> int:
    if traced:
        return tracemalloc.get_traced_memory()[0]
    with open("/proc/self/statm") as f:  # resident pages
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def slope(ys: Sequence[float]) -> float:
    """Least-squares slope of ``ys`` over 0, 1, 2, ..."""
    n = len(ys)
    if n < 2:
        return 0.0
    mx = (n - 1) / 2
    my = sum(ys) / n
    num = sum((x - mx) * (y - my) for x, y in enumerate(ys))
    den = sum((x - mx) ** 2 for x in range(n))
    return num / den


def _serve(conn: Any) -> None:  # pragma: no cover (child process)
    from fault_server import FaultServer

    server = FaultServer(max_requests=10_000_000, max_seconds=3600.0)
    server.record_bodies = False
    with server:
        conn.send(server.url)
        conn.recv()  # until the parent says stop
        conn.send(len(server.exchanges))


async def measure(args: argparse.Namespace, url: str) -> dict[str, Any]:
    seen = ToolSeen()
    agent, client = build_agent(args.provider, url, seen, args.pools)
    n = args.concurrency
    try:
        await batch(agent, seen, 0, n)  # warm-up: connections, caches
        gc.collect()
        started = time.perf_counter()
        checks = await batch(agent, seen, n, n)
        elapsed = time.perf_counter() - started
        if args.tracemalloc:
            tracemalloc.start()
        samples: list[int] = []
        batches_started = time.perf_counter()
        for b in range(args.batches):
            checks += await batch(agent, seen, (b + 2) * n, n)
            gc.collect()
            samples.append(heap_bytes(args.tracemalloc))
        batches_elapsed = time.perf_counter() - batches_started
        traced_peak = tracemalloc.get_traced_memory()[1] if args.tracemalloc else None
        if args.tracemalloc:
            tracemalloc.stop()
    finally:
        await client.aclose()
    growth_per_batch = slope(samples[1:]) if len(samples) > 2 else slope(samples)
    return {
        "provider": args.provider,
        "concurrency": n,
        "pools": args.pools,
        "runs_measured": n + args.batches * n,
        "runs_per_second": round(n / elapsed, 1),
        "runs_per_second_memory_phase": round(args.batches * n / batches_elapsed, 1),
        "requests_per_run": 3,
        "isolation_checks": checks,
        "memory_measure": "tracemalloc" if args.tracemalloc else "rss",
        "heap_after_each_batch_mib": [round(s / 2**20, 2) for s in samples],
        "growth_per_1000_runs_kib": round(growth_per_batch * 1000 / n / 1024, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_traced_mib": None if traced_peak is None else round(traced_peak / 2**20, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--provider", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--pools", type=int, default=16, help="HTTP connection pools")
    parser.add_argument("--quick", action="store_true", help="100 concurrent runs, 3 batches")
    args = parser.parse_args(argv)
    if args.quick:
        args.concurrency, args.batches = 100, 3
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve, args=(child,), daemon=True)
    process.start()
    try:
        url = parent.recv()
        figures = asyncio.run(measure(args, url))
        parent.send("stop")
        figures["server_requests"] = parent.recv()
    finally:
        process.join(timeout=15)
        if process.is_alive():  # pragma: no cover
            process.terminate()
    print(
        f"{figures['runs_per_second']} runs/s ({figures['concurrency']} concurrent, "
        f"{figures['provider']}); peak RSS {figures['peak_rss_mib']} MiB; heap growth "
        f"{figures['growth_per_1000_runs_kib']} KiB per 1,000 runs over "
        f"{args.batches * args.concurrency} runs ({figures['memory_measure']}); "
        f"{figures['isolation_checks']} isolation checks passed",
        file=sys.stderr,
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
