"""A worker process of the durable-events tests: ``python tests/events_worker.py CONFIG.json``.

The agent (``make_agent``) streams: its first answers call the tool ``step`` (one
``ToolCallDelta`` each; as many as the prompt's ``steps=N`` says, default 1), its last
is ``TEXT`` in as many pieces as the prompt's ``pieces=N`` says, a little at a time.
``step`` hangs while ``<dir>/block`` exists (it writes ``<dir>/blocked`` first), so a
test can kill the worker with the tool in flight; the last answer hangs halfway while
``<dir>/block-stream`` exists (``<dir>/streaming`` written first): killed with the model
request in flight.

The configuration (JSON) holds ``engine`` (``dbos`` or ``temporal``), ``dir``, ``events``
(the SQLite file of the conversation store whose stream log holds the runs' events) and:

- dbos: ``db`` (the system database URL), ``executor`` (a restarted worker reuses it, so
  it recovers its runs), ``runs`` (``[run id, prompt]`` pairs started here) and ``wait``
  (run ids: ``<dir>/<run id>.done`` is written once each has finished). Then it idles
  until killed.
- temporal: ``address``, ``queue``, ``identity``, ``blobs`` (the SQLite blob store every
  process shares), ``history_events`` (when a run continues as new); it writes
  ``<dir>/<identity>.ready`` and works until killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from golem_core import Message, ModelRequest, Role, TextPart, ToolCallDelta
from golem_shell import Agent
from golem_shell.models.function import FunctionModel
from golem_shell.store import SQLiteHistoryStore, StreamLog

AGENT_NAME = "events-agent"
TEXT = "".join(f"{i % 10}" for i in range(2000))
"""The second answer's text: the same whatever the number of pieces it streams in."""


def setting(messages: tuple[Message, ...], name: str, default: int) -> int:
    """The ``name=N`` of the run's prompt (``pieces=``, ``steps=``)."""
    for m in messages:
        for part in m.parts:
            if m.role is Role.USER and isinstance(part, TextPart) and f"{name}=" in part.text:
                return int(part.text.split(f"{name}=")[1].split()[0])
    return default


def make_agent(where: Path) -> Agent[None, str]:
    """The streaming agent every process of the tests makes."""

    async def stream(messages: tuple[Message, ...], request: ModelRequest) -> AsyncIterator[Any]:
        done = sum(m.role is Role.TOOL for m in messages)
        if done < setting(messages, "steps", 1):
            yield ToolCallDelta(
                index=0, id=f"c{done + 1}", name="step", arguments=f'{{"n": {done + 1}}}'
            )
            return
        n = setting(messages, "pieces", 10)
        size = len(TEXT) // n
        for i in range(n):
            if i % 10 == 0:
                await asyncio.sleep(0.01)  # a follower reads while the answer streams
            if i == n // 2 and (where / "block-stream").exists():
                (where / "streaming").write_text("streaming")
                await asyncio.Event().wait()
            yield TEXT[i * size : (i + 1) * size]

    async def step(n: int) -> str:
        """Do step ``n``."""
        if (where / "block").exists():
            (where / "blocked").write_text("blocked")
            await asyncio.Event().wait()
        return f"step {n} done"

    model = FunctionModel(stream_function=stream, name="events-model")
    return Agent(model, tools=[step], name=AGENT_NAME)


async def _dbos(config: dict[str, Any], where: Path, log: StreamLog) -> None:
    from dbos import DBOS, DBOSPortableJSONSerializer

    from golem_shell.durable import DurableAgent

    durable = DurableAgent(make_agent(where), event_log=log)
    DBOS(
        config={
            "name": "golem-events-test",
            "system_database_url": config["db"],
            "executor_id": config["executor"],
            "serializer": DBOSPortableJSONSerializer(),
            "log_level": "WARNING",
        }
    )
    DBOS.launch()  # recovers this executor's pending runs
    for run_id, prompt in config.get("runs", ()):
        await durable.start(prompt, run_id=run_id)
    for run_id in config.get("wait", ()):
        await durable.result(run_id)
        (where / f"{run_id}.done").write_text("done")


async def _temporal(config: dict[str, Any], where: Path, log: StreamLog) -> None:
    from temporalio.client import Client

    from golem_shell.engines._blobs import SQLiteBlobs
    from golem_shell.temporal import TemporalAgent

    durable = TemporalAgent(
        make_agent(where),
        event_log=log,
        task_queue=config["queue"],
        heartbeat_timeout=timedelta(seconds=1),
        blobs=SQLiteBlobs(config["blobs"]),
        history_events=config.get("history_events", 2000),
    )
    client = await Client.connect(config["address"])
    worker = durable.worker(
        client,
        identity=config["identity"],
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    )
    await worker.__aenter__()
    (where / f"{config['identity']}.ready").write_text("ready")


async def main(config: dict[str, Any]) -> None:
    where = Path(config["dir"])
    log = StreamLog(SQLiteHistoryStore(config["events"]))
    if config["engine"] == "dbos":
        await _dbos(config, where, log)
    else:
        await _temporal(config, where, log)
    await asyncio.Event().wait()  # work until killed


if __name__ == "__main__":
    asyncio.run(main(json.loads(Path(sys.argv[1]).read_text())))
    sys.stdout.flush()
    os._exit(0)
