"""A small load: 100 concurrent tool-using runs on ONE shared Agent, identities isolated.

The smoke version of ``python -m bench.load``: half the runs streamed, half not, each a
three-request run that calls a tool twice per turn, against the loopback ``FaultServer``,
with a few 429s sprinkled in (absorbed by retries). No event, result,
message, tool call or tool context of one run may carry another run's id or content
(``bench.load.check_isolation``).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from fault_server import Fault, FaultServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.load import SCENARIO, Run, ToolSeen, build_agent, check_isolation, one_run

pytestmark = pytest.mark.anyio

RUNS = 100


async def test_100_concurrent_runs_on_one_agent_stay_isolated() -> None:
    with FaultServer(max_seconds=60.0) as server:
        # a few transient faults, absorbed by retries before any delta is handed out
        server.plan(SCENARIO, *[Fault.status_code(429, retry_after="0.01")] * 5)
        seen = ToolSeen()
        agent, client = build_agent("openai", server.url, seen, pools=4)
        try:
            runs = [Run(f"smoke-{i}", stream=i % 2 == 0) for i in range(RUNS)]
            async with asyncio.timeout(15):
                done = await asyncio.gather(*(one_run(agent, r) for r in runs))
        finally:
            await client.aclose()
        checks = check_isolation(done, seen)
        assert checks > RUNS * 10
        assert len({r.result.run_id for r in done if r.result}) == RUNS
        assert server.remaining(SCENARIO) == 0
        assert len(server.exchanges) == 3 * RUNS + 5


async def test_the_anthropic_adapter_too() -> None:
    with FaultServer(max_seconds=60.0) as server:
        seen = ToolSeen()
        agent, client = build_agent("anthropic", server.url, seen, pools=2)
        try:
            runs = [Run(f"smoke-a-{i}", stream=i % 2 == 1) for i in range(40)]
            async with asyncio.timeout(15):
                done = await asyncio.gather(*(one_run(agent, r) for r in runs))
        finally:
            await client.aclose()
        check_isolation(done, seen)
