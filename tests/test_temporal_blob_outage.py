"""A Temporal run outlives its blob store's database restarting (issue 50's soak).

The soak (``bench/soak.py``) restarted PostgreSQL while Temporal workers ran turns whose
blobs live there (``SQLBlobs``): a model request activity could not read the
conversation (``OperationalError``), and as golem's activities never retry (a failure
is the effect's outcome), the whole run failed at stage ``request``. A blob store that
cannot be reached is no outcome of the model or the tool: the activity now fails as
``UNREACHABLE`` and the workflow performs it again a second later.

Against the session's real Temporal dev server (``temporal_server`` fixture).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from golem_shell import Agent, FunctionModel

pytest.importorskip("temporalio", reason="the temporal extra is not installed")

from temporalio import activity
from temporalio.client import Client

from golem_shell.engines._blobs import MemoryBlobs
from golem_shell.temporal import TemporalAgent

pytestmark = pytest.mark.anyio


class RestartingBlobs(MemoryBlobs):
    """Blobs whose database is away for the first ``outage`` reads made by an activity
    (the workflow's own reads pass: a workflow task that fails is retried by Temporal)."""

    def __init__(self, outage: int) -> None:
        super().__init__()
        self.outage = outage
        self.refused = 0

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        if activity.in_activity() and self.refused < self.outage:
            self.refused += 1
            raise ConnectionError("connection to server at 127.0.0.1 failed: Connection refused")
        return super().get(keys)


async def test_a_run_waits_for_its_blob_store_instead_of_failing(temporal_server: Any) -> None:
    blobs = RestartingBlobs(outage=2)
    # instructions of its own: its request's set-up is a blob no earlier run's worker
    # read (a worker reads an agent's set-up once), so the activity has to read it
    unique = uuid.uuid4().hex
    agent = Agent(
        FunctionModel(lambda request: "still here"), name="blob-outage", instructions=unique
    )
    durable = TemporalAgent(
        agent, name=f"blob-outage-{uuid.uuid4().hex[:8]}", blobs=blobs, task_queue="outage"
    )
    client = await Client.connect(temporal_server.address)
    async with durable.worker(client):
        result = await durable.run(client, "hello", run_id=f"outage-{uuid.uuid4()}")
    assert result.output == "still here"
    assert blobs.refused == 2  # the request activity was turned away twice, then ran
