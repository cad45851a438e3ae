"""A worker process of the durable MCP tests: ``python tests/mcp_durable_worker.py CONFIG.json``.

The agent (``make_agent``) has no tools of its own and one toolset: the real MCP server
``tests/mcp_servers/tools_server.py`` over stdio, started by this process, which logs
every ``tools/list`` and every ``note`` call to ``log``. Its offline model calls
``note("one")``, then ``note("two")``, then answers with the tool names it was offered
and the notes' results. In the ``first`` worker, the model's second request writes
``<dir>/request2`` and hangs (the test SIGKILLs the worker there, after the first call
was recorded); in the ``second`` worker the server hides its ``echo`` tool (``hide``), so
a run that listed the tools again would offer other tools than it recorded.

The configuration (JSON) holds ``engine`` (``dbos`` or ``temporal``), ``mode`` (``first``
or ``second``), ``dir``, ``log``, ``run`` (the run id), and for DBOS ``db`` (the system
database URL), for Temporal ``address``, ``queue`` and ``blobs`` (the SQLite blob store
every process shares). A DBOS ``first`` worker starts the run; a ``second`` one recovers
it (the same executor id), writes ``<dir>/result.json`` and exits. A Temporal worker
works until killed (the test process starts the run and reads its result).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from golem_core import Message, ModelRequest, Role, ToolCallPart
from golem_shell import Agent, FunctionModel
from golem_shell.mcp import MCPServerStdio

AGENT_NAME = "mcp-durable"
SERVER = Path(__file__).resolve().parent / "mcp_servers" / "tools_server.py"


def make_agent(log: Path, where: Path, *, hang: bool, hide: str = "") -> Agent[None, str]:
    """The agent: the offline model below and the MCP server as its one toolset."""

    async def model(request: ModelRequest) -> Message | str:
        turns = sum(1 for m in request.messages if m.role is Role.ASSISTANT)
        if turns == 0:
            return Message(Role.ASSISTANT, (ToolCallPart("n1", "note", '{"text": "one"}'),))
        if turns == 1:
            if hang:
                (where / "request2").write_text("arrived")
                await asyncio.Event().wait()  # SIGKILLed here
            return Message(Role.ASSISTANT, (ToolCallPart("n2", "note", '{"text": "two"}'),))
        offered = ",".join(sorted(t.name for t in request.tools))
        results = " | ".join(m.text for m in request.messages if m.role is Role.TOOL)
        return f"offered {offered}; results {results}"

    env = {"GOLEM_MCP_LOG": str(log), "GOLEM_MCP_HIDE": hide}
    server = MCPServerStdio(sys.executable, [str(SERVER), "stdio"], env=env)
    return Agent(FunctionModel(model), toolsets=[server], name=AGENT_NAME)


async def _dbos(config: dict[str, Any], agent: Agent[None, str]) -> None:
    from dbos import DBOS, DBOSPortableJSONSerializer

    from golem_shell.durable import DurableAgent

    durable = DurableAgent(agent)
    DBOS(
        config={
            "name": "golem-durable-mcp",
            "system_database_url": config["db"],
            "executor_id": "mcp",
            "serializer": DBOSPortableJSONSerializer(),
            "log_level": "WARNING",
        }
    )
    async with agent:  # the MCP connection this worker's steps call through
        DBOS.launch()
        if config["mode"] == "first":
            await durable.start("take notes", run_id=config["run"])
            await asyncio.Event().wait()  # SIGKILLed
        result = await durable.result(config["run"])
        out = {"output": result.output, "toolExecutions": result.tool_executions}
        (Path(config["dir"]) / "result.json").write_text(json.dumps(out))
        sys.stdout.flush()
        os._exit(0)  # the result is written; skip DBOS's graceful shutdown


def temporal_agent(config: dict[str, Any], agent: Agent[None, str]) -> Any:
    """The run's ``TemporalAgent``, as every process of the test makes it."""
    from golem_shell.engines._blobs import SQLiteBlobs
    from golem_shell.temporal import TemporalAgent

    return TemporalAgent(
        agent,
        task_queue=config["queue"],
        heartbeat_timeout=timedelta(seconds=1),
        blobs=SQLiteBlobs(config["blobs"]),
    )


async def _temporal(config: dict[str, Any], agent: Agent[None, str]) -> None:
    from temporalio.client import Client

    durable = temporal_agent(config, agent)
    client = await Client.connect(config["address"])
    worker = durable.worker(
        client,
        identity=config["mode"],
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    )
    async with agent, worker:  # the MCP connection this worker's activities call through
        (Path(config["dir"]) / f"{config['mode']}.ready").write_text("ready")
        await asyncio.Event().wait()  # work until killed


def main(config: dict[str, Any]) -> None:
    where = Path(config["dir"])
    first = config["mode"] == "first"
    agent = make_agent(Path(config["log"]), where, hang=first, hide="" if first else "echo")
    engine = _dbos if config["engine"] == "dbos" else _temporal
    asyncio.run(engine(config, agent))


if __name__ == "__main__":
    main(json.loads(Path(sys.argv[1]).read_text()))
    sys.stdout.flush()
    os._exit(0)  # skip finalization: the Temporal SDK's native threads can abort it
