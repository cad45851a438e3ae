"""A worker process of the Temporal tests: ``python tests/temporal_worker.py CONFIG.json``.

The configuration (JSON) holds ``address`` (the Temporal server), ``queue`` (the task
queue), ``identity`` (the worker's name in the workflows' histories), ``model`` (the
loopback model URL), ``log`` (the tools' execution log), ``dir`` (where the worker writes
``<identity>.ready`` once it polls), ``block`` (``[run id, n]`` pairs whose ``step`` tool
hangs here), ``heartbeat`` (seconds: how soon a dead worker's effect is noticed) and
``activities`` (the most activities it runs at once), ``blobs`` (the SQLite file of the
blob store every process of a run shares; ``null``: the default, this process's memory)
and ``history_events`` (when a run continues as new), ``default_model`` (which of
``durable_app.make_models`` the agent has as its own, default ``"loopback"``; all of them
are registered by name). It registers the agents of ``durable_app.py`` (as
``TemporalAgent``), writes ``<identity>.model`` (its agent's
model's name) and works until killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from durable_app import (
    AGENT_NAME,
    APPROVAL_AGENT_NAME,
    make_agent,
    make_approval_agent,
    make_models,
)
from temporalio.client import Client

from golem_shell.engines._blobs import SQLiteBlobs
from golem_shell.temporal import TemporalAgent


def agents(config: dict[str, Any]) -> tuple[TemporalAgent[None, str], TemporalAgent[None, str]]:
    """The test agent and the approval agent, as every process of the tests makes them."""
    log = Path(config["log"])
    block = {(run_id, n) for run_id, n in config.get("block", ())}
    heartbeat = timedelta(seconds=config.get("heartbeat", 1.0))
    blobs = SQLiteBlobs(config["blobs"]) if config.get("blobs") else None  # None: memory
    events = config.get("history_events", 2000)
    models = make_models(config["model"])
    default = models[config.get("default_model", "loopback")]
    durable = TemporalAgent(
        make_agent(config["model"], log, block, default),
        name=AGENT_NAME,
        models=models,
        task_queue=config["queue"],
        heartbeat_timeout=heartbeat,
        blobs=blobs,
        history_events=events,
    )
    approval = TemporalAgent(
        make_approval_agent(log),
        name=APPROVAL_AGENT_NAME,
        task_queue=config["queue"],
        heartbeat_timeout=heartbeat,
        blobs=blobs,
        history_events=events,
    )
    return durable, approval


async def main(config: dict[str, Any]) -> None:
    durable, _ = agents(config)
    client = await Client.connect(config["address"])
    worker = durable.worker(
        client,
        identity=config["identity"],
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
        max_concurrent_activities=config.get("activities", 100),
    )
    async with worker:
        where = Path(config["dir"])
        (where / f"{config['identity']}.model").write_text(durable.agent.model.name)
        marker = where / f"{config['identity']}.ready"
        marker.write_text("ready")
        await asyncio.Event().wait()  # work until killed


if __name__ == "__main__":
    asyncio.run(main(json.loads(Path(sys.argv[1]).read_text())))
    sys.stdout.flush()
    os._exit(0)  # skip finalization: the Temporal SDK's native threads can abort it
