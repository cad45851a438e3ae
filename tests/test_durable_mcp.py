"""Toolsets (MCP) on durable runs (issue 46 item 3), on DBOS and on Temporal.

The tool list of a run's toolsets is recorded at its start (the step or activity
``golem.toolsets``) and each call of one of their tools is an ordinary recorded tool
step or activity, made through the worker's connection. The fault tests run real worker
processes (``mcp_durable_worker.py``), each with the real MCP server
``tests/mcp_servers/tools_server.py`` over stdio, which logs every ``tools/list`` and
every ``note`` call: the worker is SIGKILLed with the run's second model request in
flight (after its first MCP call was recorded), another worker whose server offers other
tools (it hides ``echo``) takes the run over, and the run ends with each call made once,
the tools listed once, and the model offered the recorded list to the end.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from dbos_launch import dbos_fixture
from mcp_durable_worker import SERVER, make_agent, temporal_agent
from worker_process import Worker, until

from golem_core import Message, Role, ToolCallPart
from golem_shell import Agent, FunctionModel, RunError, Stage, Tool
from golem_shell.mcp import MCPConnectionError, MCPServerStdio

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")
pytest.importorskip("mcp", reason="the mcp extra is not installed")

from golem_shell.durable import DurableAgent  # noqa: E402

TESTS = Path(__file__).resolve().parent
WORKER = TESTS / "mcp_durable_worker.py"
OFFERED = "add,crash,echo,grow,note,pixel,refuse,slow"
"""The tools the first worker's server lists (the second's hides ``echo``)."""


def _worker(where: Path, config: dict[str, Any]) -> Worker:
    """A worker process running ``mcp_durable_worker.py``, named after its ``mode``."""
    return Worker(WORKER, where, config["mode"], {**config, "dir": str(where)})


_until = functools.partial(until, every=0.05)


def _expected(output: str, log: Path) -> None:
    """The run's end and the MCP server's log after a kill and a recovery: golem listed
    the tools once (at the run's start, by the first worker), each note was written once,
    and the model was offered the recorded list to the end (with ``echo``, which the
    second worker's server hides). The last ``list`` is the mcp package's own: a new
    connection lists the tools after its first call, to check the call's structured
    result against the tool's output schema (inside the recorded call)."""
    assert output == (
        f'offered {OFFERED}; results {{"result":"noted one"}} | {{"result":"noted two"}}'
    )
    assert log.read_text().splitlines() == ["list", "note one", "note two", "list"]


@pytest.mark.anyio
async def test_a_killed_dbos_worker_makes_each_mcp_call_once(tmp_path: Path) -> None:
    log = tmp_path / "mcp.log"
    base = {
        "engine": "dbos",
        "db": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
        "log": str(log),
        "run": "mcp-run",
    }
    first = _worker(tmp_path, {**base, "mode": "first"})
    try:
        await _until((tmp_path / "request2").exists, [first], "the second request")
    finally:
        first.kill()
    assert log.read_text().splitlines() == ["list", "note one"]  # recorded before the kill
    second = _worker(tmp_path, {**base, "mode": "second"})
    try:
        await _until((tmp_path / "result.json").exists, [second], "the run's result")
    finally:
        second.process.wait(timeout=30)
    result = json.loads((tmp_path / "result.json").read_text())
    _expected(result["output"], log)
    assert result["toolExecutions"] == 2


@pytest.mark.anyio
async def test_a_killed_temporal_worker_makes_each_mcp_call_once(
    tmp_path: Path, temporal_server: Any
) -> None:
    from temporalio.client import Client

    log = tmp_path / "mcp.log"
    queue = f"mcp-{uuid.uuid4().hex[:8]}"
    base = {
        "engine": "temporal",
        "address": temporal_server.address,
        "queue": queue,
        "blobs": str(tmp_path / "blobs.sqlite"),
        "log": str(log),
        "run": queue,
    }
    # this process starts the run and reads its result: its agent's toolset is never used
    durable = temporal_agent(base, make_agent(log, tmp_path, hang=False))
    client = await Client.connect(temporal_server.address)
    first = _worker(tmp_path, {**base, "mode": "first"})
    try:
        await _until((tmp_path / "first.ready").exists, [first], "the first worker")
        await durable.start(client, "take notes", run_id=queue)
        await _until((tmp_path / "request2").exists, [first], "the second request")
    finally:
        first.kill()
    assert log.read_text().splitlines() == ["list", "note one"]  # recorded before the kill
    second = _worker(tmp_path, {**base, "mode": "second"})
    try:
        result = await asyncio.wait_for(durable.result(client, queue), 90)
    finally:
        second.kill()
    _expected(result.output, log)
    assert result.tool_executions == 2


# -- in process: a toolset that cannot be listed at the run's start ------------------------


def _noting(request: Any) -> Message | str:
    if not any(m.role is Role.TOOL for m in request.messages):
        return Message(Role.ASSISTANT, (ToolCallPart("n1", "note", '{"text": "x"}'),))
    return "noted"


launched = dbos_fixture("golem-durable-mcp-unit")
"""One DBOS on a fresh SQLite file for this module's tests; yields the file."""


def _server(log: Path) -> MCPServerStdio:
    return MCPServerStdio(sys.executable, [str(SERVER), "stdio"], env={"GOLEM_MCP_LOG": str(log)})


DOWN = _server(Path(os.devnull))
UNCONNECTED = _server(Path(os.devnull))
UNIT = {
    "down": DurableAgent(Agent(FunctionModel(_noting), toolsets=[DOWN]), name="mcp-down"),
    "unconnected": DurableAgent(
        Agent(FunctionModel(_noting), toolsets=[UNCONNECTED]), name="mcp-unconnected"
    ),
}


def _prefixed_noting(request: Any) -> Message | str:
    if not any(m.role is Role.TOOL for m in request.messages):
        return Message(Role.ASSISTANT, (ToolCallPart("n1", "srv_note", '{"text": "x"}'),))
    return "noted"


@pytest.mark.anyio
async def test_a_dbos_run_with_an_mcp_toolset(launched: Path, tmp_path: Path) -> None:
    """The call is made by the tool rebuilt from the recorded list (its prefix taken off
    the name the server knows), through the connection entered here."""
    log = tmp_path / "mcp.log"
    server = MCPServerStdio(
        sys.executable, [str(SERVER), "stdio"], env={"GOLEM_MCP_LOG": str(log)}, prefix="srv"
    )
    agent = Agent(FunctionModel(_prefixed_noting), toolsets=[server])
    durable = DurableAgent(agent, name="mcp-unit")
    async with server:
        result = await durable.run("note it")
    assert result.output == "noted"
    tool_result = next(m for m in result.messages if m.role is Role.TOOL)
    assert tool_result.text == '{"result":"noted x"}'
    assert log.read_text().splitlines() == ["list", "note x"]
    steps = await dbos.DBOS.list_workflow_steps_async(result.run_id)
    assert [s["function_name"] for s in steps] == [
        "golem.toolsets",
        "golem.request",
        "golem.tool",
        "golem.request",
    ]


class Fading:
    """A toolset of plain tools (no MCP): ``shout`` on its first listing, ``whisper``
    after; it counts its listings."""

    def __init__(self) -> None:
        self.listings = 0

    async def tools(self, context: Any) -> list[Tool[Any]]:
        self.listings += 1

        def shout(text: str) -> str:
            """Shout the text."""
            return text.upper()

        def whisper(text: str) -> str:
            """Whisper the text."""
            return text.lower()

        return [Tool.from_function(shout if self.listings == 1 else whisper)]


def _shouting(request: Any) -> Message | str:
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        calls = (ToolCallPart("s1", "shout", '{"text": "hi"}'),)
        return Message(Role.ASSISTANT, calls)
    return f"offered {','.join(t.name for t in request.tools)}: {results[0].text}"


@pytest.mark.anyio
async def test_a_toolset_that_cannot_rebuild_a_tool_is_asked_again_by_the_call(
    launched: Path,
) -> None:
    """A toolset without MCP's rebuild is listed again by the process making the call; a
    tool it no longer offers answers with a failed result (the model offered the
    recorded list to the end)."""
    fading = Fading()
    durable = DurableAgent(Agent(FunctionModel(_shouting), toolsets=[fading]), name="fading")
    result = await durable.run("shout it")
    assert result.output == (
        "offered shout: the tool shout is no longer offered by " + repr(fading)
    )
    assert fading.listings == 2  # at the run's start, and by the call


@pytest.mark.anyio
async def test_a_dbos_run_whose_mcp_server_is_down_at_its_start_fails_clearly(
    launched: Path,
) -> None:
    async with DOWN:
        with pytest.raises(MCPConnectionError):
            await DOWN._call("crash", {})  # the server process dies
        with pytest.raises(RunError) as failed:
            await UNIT["down"].run("note it")
    assert failed.value.stage is Stage.TOOL
    assert "listing the tools of MCPServerStdio(" in failed.value.message
    assert failed.value.partial is None  # nothing was done
    with pytest.raises(RunError) as failed:
        await UNIT["unconnected"].run("note it")
    assert failed.value.stage is Stage.TOOL
    assert "is not connected: enter it" in failed.value.message


@pytest.mark.anyio
async def test_a_temporal_run_whose_mcp_server_is_down_at_its_start_fails_clearly(
    temporal_server: Any,
) -> None:
    from temporalio.client import Client

    from golem_shell.temporal import TemporalAgent

    server = _server(Path(os.devnull))
    durable = TemporalAgent(
        Agent(FunctionModel(_noting), toolsets=[server]), name="mcp-down", task_queue="mcp-down"
    )
    client = await Client.connect(temporal_server.address)
    async with durable.worker(client), server:
        with pytest.raises(MCPConnectionError):
            await server._call("crash", {})  # the server process dies
        with pytest.raises(RunError) as failed:
            await durable.run(client, "note it")
    assert failed.value.stage is Stage.TOOL
    assert "listing the tools of MCPServerStdio(" in failed.value.message
