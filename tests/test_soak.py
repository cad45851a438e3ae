"""The soak, short (issue 50): the whole stack across processes, with one kill of each
kind, and the invariants asserted.

``bench/soak.py`` on a deployment of its own (``bench/soak_deploy.py``: a PostgreSQL
server the test restarts, the scripted model, two web-chat processes behind the
round-robin balancer, turns on DBOS executors, or on Temporal workers), a few users for
a few seconds, then one SIGKILL of a server process, one of a worker (on DBOS: the
process whose executor has turns in flight) and one PostgreSQL restart (as a crash:
``-m immediate``); every invariant must hold: each acknowledged message stored once and
in order, each durable turn answered, each tool effect once, no frame twice or skipped,
no conversation visible to another user. The long soak is ``python -m bench.soak``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.soak import KINDS, run_phase  # noqa: E402
from bench.soak_deploy import Deployment  # noqa: E402


def _unavailable(e: Exception, require: str) -> None:
    if os.environ.get(require) == "1":
        pytest.fail(f"{require}=1 but: {e}", pytrace=False)
    pytest.skip(str(e))


async def _soak(config: str) -> dict[str, Any]:
    from postgres_server import PostgresUnavailable
    from temporal_server import TemporalUnavailable

    where = Path(tempfile.mkdtemp(prefix=f"golem-soak-test-{config}-"))
    deploy = Deployment(config, where / config, servers=2, workers=1)
    try:
        try:
            await deploy.start()
        except PostgresUnavailable as e:
            _unavailable(e, "GOLEM_REQUIRE_POSTGRES")
        except TemporalUnavailable as e:
            _unavailable(e, "GOLEM_REQUIRE_TEMPORAL")
        phase = await run_phase(
            deploy,
            users=3,
            seconds=8,
            with_chaos=True,
            every=(1.5, 3.0),
            min_kills=1,
            turns=6,
            turn_timeout=45,
        )
        phase["where"] = str(where)  # the logs, kept when an invariant broke
        return phase
    finally:
        await deploy.close()


def _assert_held(phase: dict[str, Any], config: str) -> None:
    failed = {
        k: v["faults"] for k, v in phase["invariants"].items() if k != "counts" and not v["ok"]
    }
    assert not failed, (
        f"{config}: invariants broken: {failed}; errors: {phase['client_errors']};"
        f" logs in {phase['where']}"
    )
    for kind in KINDS[config]:
        assert phase["kills"][kind]["killed"] >= 1, phase["kills"]
        assert phase["kills"][kind]["survived"] == phase["kills"][kind]["killed"], phase["kills"]
    counts = phase["invariants"]["counts"]
    assert counts["prompts_acked"] >= 6 and counts["tool_results"] >= 1, counts
    assert phase["invariants"]["isolation"]["probes"] > 0
    shutil.rmtree(phase["where"], ignore_errors=True)


def test_the_stack_on_dbos_survives_a_kill_of_each_kind() -> None:
    phase = asyncio.run(_soak("dbos"))
    _assert_held(phase, "dbos")


def test_the_stack_on_temporal_survives_a_kill_of_each_kind() -> None:
    phase = asyncio.run(_soak("temporal"))
    _assert_held(phase, "temporal")
