"""A DBOS run outlives its blob store's database being away for a moment (issue 50, E).

The soak (``bench/soak.py``) restarted PostgreSQL while a DBOS run went on after an
approved tool call: the run's body stashes what it records in ``SQLBlobs`` (not in a
step), so its ``INSERT INTO golem_blobs`` raised ``OperationalError`` straight out of the
workflow: ``result()`` reported the run failed (the web chat ended the turn failed),
although DBOS later recovered it to success with the tool run once and no answer stored.
``SQLBlobs`` now retries a read or write the database refused for being unreachable, for
a while, so the run does not fail. Faults are injected into a real SQLAlchemy engine
(SQLite) the way a restarting server refuses: ``OperationalError`` from the driver.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from dbos_launch import dbos_fixture

from golem_core import Message, Role, ToolCallPart
from golem_shell import Agent, FunctionModel, tool

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")
sa = pytest.importorskip("sqlalchemy")

from golem_shell.durable import DurableAgent  # noqa: E402
from golem_shell.engines._blobs_sql import SQLBlobs  # noqa: E402

RAN: list[str] = []


@tool
def record(note: str) -> str:
    """Record a note (an effect: it must run once)."""
    RAN.append(note)
    return f"noted {note}"


def _model(request: Any) -> Message | str:
    if any(m.role is Role.TOOL for m in request.messages):
        return "done"
    return Message(Role.ASSISTANT, (ToolCallPart("c1", "record", json.dumps({"note": "n"})),))


class Outage:
    """Makes the engine's driver refuse the first ``count`` blob inserts a workflow's
    body makes (not a step's), as PostgreSQL restarting does."""

    def __init__(self, engine: Any, count: int) -> None:
        self.count, self.refused = count, 0
        sa.event.listen(engine, "before_cursor_execute", self.before)

    def before(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        in_body = dbos.DBOS.workflow_id is not None and dbos.DBOS.step_id is None
        if in_body and "INSERT INTO golem_blobs" in statement and self.refused < self.count:
            self.refused += 1
            raise sa.exc.OperationalError(
                statement, None, sqlite3.OperationalError("server closed the connection")
            )


ENGINE = sa.create_engine("sqlite://", poolclass=sa.pool.StaticPool)
BLOBS = SQLBlobs(ENGINE)
D_NOTE = DurableAgent(Agent(FunctionModel(_model), tools=[record]), name="d-outage", blobs=BLOBS)


launched = dbos_fixture("golem-blob-outage")
"""One DBOS on a fresh SQLite file for this module's tests; yields the file."""


@pytest.mark.anyio
async def test_a_dbos_run_rides_out_its_blob_store_refusing_writes(launched: Path) -> None:
    outage = Outage(ENGINE, count=3)
    RAN.clear()
    run_id = f"outage-{uuid.uuid4()}"
    await D_NOTE.start("note it", run_id=run_id)
    result = await asyncio.wait_for(D_NOTE.result(run_id), 60)
    assert result.output == "done"
    assert outage.refused == 3  # the body's writes were refused, then went through
    assert RAN == ["n"]  # the tool ran once
    status = await dbos.DBOS.get_workflow_status_async(run_id)
    assert status is not None and status.status == "SUCCESS"
