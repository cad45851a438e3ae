"""MCP toolsets against real MCP servers: one over stdio in a subprocess, one over
streamable HTTP on 127.0.0.1 (uvicorn, started here), and one that dies mid-call.

The servers are ``tests/mcp_servers/tools_server.py``, written with the ``mcp`` package's
own server API. Every wait is bounded (``anyio.fail_after``): a hang fails the test.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    anyio_backend_fixture,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
)

from golem_core import DataPart, Message, ModelRequest, Role, TextPart, ToolCallPart
from golem_shell import (
    Agent,
    FunctionModel,
    OpenAIModel,
    RunContext,
    RunError,
    Stage,
    Tool,
    UsageError,
)
from golem_shell.mcp import (
    MCPConnectionError,
    MCPServerHTTP,
    MCPServerStdio,
    content_to_parts,
)

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).resolve().parent / "mcp_servers" / "tools_server.py"
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
LIMIT = 30  # seconds any one test may take: a hang fails instead of blocking CI


def stdio_server(**kw: Any) -> MCPServerStdio:
    kw.setdefault("timeout", 10.0)
    return MCPServerStdio(sys.executable, [str(SERVER), "stdio"], **kw)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The test MCP server over streamable HTTP, in a subprocess on 127.0.0.1."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "listening on <port>", printed before serving
        assert line.startswith("listening on "), line
        port = int(line.split()[-1])
        deadline = time.monotonic() + 20  # a loaded machine: wait until it accepts
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the MCP test server never listened"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait(timeout=10)
        if proc.stdout is not None:  # else the garbage collector warns of it in a later test
            proc.stdout.close()


def call(name: str, arguments: dict[str, Any], call_id: str) -> Message:
    return Message.assistant(tool_calls=[ToolCallPart(call_id, name, json.dumps(arguments))])


class Script:
    """An offline model that makes the given calls one turn at a time, then answers."""

    def __init__(self, *turns: Message) -> None:
        self.turns = list(turns)
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> Message | str:
        self.requests.append(request)
        if self.turns:
            return self.turns.pop(0)
        return "done"

    def tool_names(self, i: int = 0) -> list[str]:
        return [t.name for t in self.requests[i].tools]


def results(messages: tuple[Message, ...]) -> dict[str, Message]:
    return {str(m.tool_call_id): m for m in messages if m.role is Role.TOOL}


async def test_stdio_tools_join_the_run_with_their_schemas_and_results() -> None:
    script = Script(
        Message.assistant(
            tool_calls=[
                ToolCallPart("c_add", "add", '{"a": 2, "b": 3}'),
                ToolCallPart("c_pix", "pixel", "{}"),
                ToolCallPart("c_ref", "refuse", '{"reason": "not today"}'),
                ToolCallPart("c_local", "local", '{"x": 4}'),
            ]
        )
    )

    def local(x: int) -> int:
        """A plain golem tool next to the MCP ones."""
        return x + 1

    server = stdio_server()
    agent = Agent(FunctionModel(script), tools=[local], toolsets=[server])
    with anyio.fail_after(LIMIT):
        async with agent:
            assert server.connected
            result = await agent.run("go")
    assert not server.connected  # the session closed with the agent
    assert result.output == "done"
    assert set(script.tool_names()) == {
        "local",
        "add",
        "echo",
        "pixel",
        "refuse",
        "slow",
        "grow",
        "crash",
        "note",
    }
    add_schema = next(t for t in script.requests[0].tools if t.name == "add").parameters
    assert add_schema["properties"]["a"]["type"] == "integer"  # the server's schema, as sent
    assert add_schema["required"] == ["a", "b"]
    got = results(result.messages)
    assert got["c_add"].parts == (TextPart('{"result":5}'),)  # structured content
    assert not got["c_add"].failed
    assert got["c_pix"].parts == (DataPart(PIXEL_PNG, "image", "image/png"),)
    assert got["c_ref"].failed  # an isError result is a failed result; the run goes on
    assert "refused: not today" in got["c_ref"].text
    assert got["c_local"].text == "5"


async def test_tool_list_changes_are_picked_up_per_run() -> None:
    server = stdio_server()
    first = Script(call("grow", {}, "c1"))
    with anyio.fail_after(LIMIT):
        async with server:
            result = await Agent(FunctionModel(first), toolsets=[server]).run("grow")
            assert results(result.messages)["c1"].parts == (TextPart('{"result":"added extra_1"}'),)
            assert "extra_1" not in first.tool_names()
            second = Script(call("extra_1", {"x": 2}, "c2"))
            result = await Agent(FunctionModel(second), toolsets=[server]).run("use it")
    assert "extra_1" in second.tool_names()
    assert results(result.messages)["c2"].text == '{"result":21}'


async def test_a_call_that_times_out_is_a_failed_result_not_a_hang() -> None:
    server = stdio_server(timeout=0.5)
    script = Script(call("slow", {"seconds": 20}, "c_slow"), call("echo", {"text": "hi"}, "c_e"))
    with anyio.fail_after(LIMIT):
        async with Agent(FunctionModel(script), toolsets=[server]) as agent:
            result = await agent.run("sleep")
    got = results(result.messages)
    assert got["c_slow"].failed
    assert "did not answer within 0.5 s" in got["c_slow"].text
    assert got["c_e"].text == '{"result":"echo: hi"}'  # the session survived the timeout


async def test_a_server_that_dies_mid_call_fails_the_run_with_a_partial() -> None:
    server = stdio_server()
    script = Script(call("crash", {}, "c_crash"))
    agent = Agent(FunctionModel(script), toolsets=[server])
    with anyio.fail_after(LIMIT):
        async with agent:
            with pytest.raises(RunError) as caught:
                await agent.run("crash it")
            error = caught.value
            assert error.stage is Stage.TOOL
            assert "closed during a call of crash" in error.message
            assert error.partial is not None
            last = error.partial.messages[-1]  # the evidence ends at the turn that asked
            assert last.role is Role.ASSISTANT and last.tool_calls[0].id == "c_crash"
            # the next run cannot list the dead server's tools: a clear error, no hang
            with pytest.raises(RunError) as again:
                await agent.run("again")
            assert again.value.stage is Stage.TOOL
            assert "listing the tools" in again.value.message
            assert again.value.partial is None
    assert not server.connected


async def test_http_server_and_stdio_server_in_one_agent(http_url: str) -> None:
    http = MCPServerHTTP(http_url, prefix="web", timeout=10.0)
    local = stdio_server(prefix="box")
    script = Script(
        Message.assistant(
            tool_calls=[
                ToolCallPart("c1", "web_echo", '{"text": "over http"}'),
                ToolCallPart("c2", "box_add", '{"a": 20, "b": 22}'),
                ToolCallPart("c3", "web_pixel", "{}"),
            ]
        )
    )
    with anyio.fail_after(LIMIT):
        async with Agent(FunctionModel(script), toolsets=[http, local]) as agent:
            result = await agent.run("both")
    got = results(result.messages)
    assert got["c1"].text == '{"result":"echo: over http"}'
    assert got["c2"].text == '{"result":42}'
    assert got["c3"].parts == (DataPart(PIXEL_PNG, "image", "image/png"),)
    assert {"web_echo", "box_add"} <= set(script.tool_names())
    assert not http.connected and not local.connected


async def test_http_server_tools_through_a_real_openai_model(
    http_url: str, provider_server: ProviderServer
) -> None:
    """The MCP schema reaches the provider's wire unchanged; the result reaches the model."""
    provider_server.enqueue(
        json_reply(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_echo",
                                    "type": "function",
                                    "function": {"name": "echo", "arguments": '{"text":"wire"}'},
                                }
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        ),
        json_reply(
            {
                "id": "chatcmpl-2",
                "object": "chat.completion",
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "it said echo: wire"},
                    }
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
            }
        ),
    )
    model = OpenAIModel(
        "gpt-4o-mini", api_key="sk-test-mcp", base_url=f"{provider_server.url}/v1", timeout=5.0
    )
    server = MCPServerHTTP(http_url, timeout=10.0)
    with anyio.fail_after(LIMIT):
        async with Agent(model, toolsets=[server]) as agent:
            result = await agent.run("echo wire")
    assert result.output == "it said echo: wire"
    first, second = (r.json() for r in provider_server.requests)
    echo = next(t for t in first["tools"] if t["function"]["name"] == "echo")
    assert echo["function"]["parameters"]["properties"]["text"]["type"] == "string"
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_echo"
    assert "echo: wire" in json.dumps(tool_message["content"])


class CallerTools:
    """A toolset scoped to the caller: guests may only echo; admins get everything."""

    def __init__(self, server: MCPServerStdio) -> None:
        self.server = server

    async def __aenter__(self) -> CallerTools:
        await self.server.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.__aexit__(None, None, None)

    async def tools(self, context: RunContext[Any]) -> list[Tool[Any]]:
        offered = await self.server.tools(context)
        return [t for t in offered if context.deps == "admin" or t.name == "echo"]


async def test_toolsets_are_asked_per_run_so_tools_can_be_scoped_to_the_caller() -> None:
    guest = Script(call("add", {"a": 1, "b": 1}, "c_add"))
    admin = Script(call("add", {"a": 1, "b": 1}, "c_add"))
    scoped = CallerTools(stdio_server())
    with anyio.fail_after(LIMIT):
        async with scoped:
            as_guest = await Agent(FunctionModel(guest), toolsets=[scoped]).run("add", deps="guest")
            as_admin = await Agent(FunctionModel(admin), toolsets=[scoped]).run("add", deps="admin")
    assert guest.tool_names() == ["echo"]
    refused = results(as_guest.messages)["c_add"]  # never reaches the server
    assert refused.failed and "unknown tool 'add'" in refused.text
    assert "add" in admin.tool_names()
    assert results(as_admin.messages)["c_add"].text == '{"result":2}'


async def test_arguments_that_do_not_fit_the_input_schema_are_a_retry_and_never_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 37 item 4: the arguments are checked against the tool's input schema before
    the call; a misfit is a retry naming what is wrong, as a golem tool's is, and the
    server is not called."""
    script = Script(
        call("add", {"a": "two", "c": 1}, "c_bad"),  # wrong type, missing b, unknown c
        call("add", {"a": 2, "b": 3}, "c_good"),
    )
    server = stdio_server()
    sent: list[tuple[str, object]] = []
    with anyio.fail_after(LIMIT):
        async with server:
            session = server._live()
            real = session.call_tool

            async def counting(name: str, arguments: object = None, **kw: Any) -> Any:
                sent.append((name, arguments))
                return await real(name, arguments, **kw)

            monkeypatch.setattr(session, "call_tool", counting)
            result = await Agent(FunctionModel(script), toolsets=[server]).run("add")
    assert sent == [("add", {"a": 2, "b": 3})]  # the misfit never reached the server
    retry = script.requests[1].messages[-1]  # what the model read after its bad call
    text = retry.text
    assert text.startswith("the arguments of add are not valid: "), text
    assert "a: 'two' is not of type 'integer'" in text
    assert "'b' is a required property" in text
    assert text.endswith("Fix them and call again."), text
    assert results(result.messages)["c_good"].text == '{"result":5}'
    assert result.output == "done"


def test_a_tool_from_a_schema_is_checked() -> None:
    async def run(context: RunContext[Any], arguments: dict[str, object]) -> str:
        return "ok"  # pragma: no cover

    with pytest.raises(UsageError, match="must be 1-64"):
        Tool.from_schema("files.read", "", {"type": "object"}, run)
    with pytest.raises(UsageError, match="JSON Schema of an object"):
        Tool.from_schema("read", "", {"type": "string"}, run)


async def test_running_without_connecting_is_a_usage_error() -> None:
    agent = Agent(FunctionModel(Script()), toolsets=[stdio_server()])
    with anyio.fail_after(LIMIT), pytest.raises(UsageError, match="not connected"):
        await agent.run("hi")


async def test_an_unreachable_http_server_is_a_connection_error() -> None:
    server = MCPServerHTTP("http://127.0.0.1:9/mcp", connect_timeout=5.0)
    with anyio.fail_after(LIMIT), pytest.raises(MCPConnectionError, match=r"127\.0\.0\.1:9"):
        async with server:
            pass  # pragma: no cover
    assert not server.connected


async def test_a_server_that_does_not_start_is_a_connection_error() -> None:
    server = MCPServerStdio(sys.executable, ["-c", "import sys; sys.exit(0)"], connect_timeout=5.0)
    with anyio.fail_after(LIMIT), pytest.raises(MCPConnectionError):
        async with server:
            pass  # pragma: no cover


def test_without_the_mcp_package_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # "import mcp" now raises ImportError
    server = stdio_server()

    async def enter() -> None:
        async with server:
            pass  # pragma: no cover

    with pytest.raises(UsageError, match=r"mcp extra"):
        anyio.run(enter)


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(UsageError, match="http"):
        MCPServerHTTP("file:///tmp/x")
    with pytest.raises(UsageError, match="positive"):
        stdio_server(timeout=0)
    with pytest.raises(UsageError, match="prefix"):
        stdio_server(prefix="has space")
    with pytest.raises(UsageError, match="not a toolset"):
        Agent(FunctionModel(Script()), toolsets=[object()])  # type: ignore[list-item]
    assert "secret" not in repr(MCPServerHTTP("http://x/mcp", headers={"Authorization": "secret"}))


def test_content_blocks_map_to_parts() -> None:
    import mcp.types as t

    blocks = [
        t.TextContent(type="text", text="plain"),
        t.AudioContent(
            type="audio", data=base64.b64encode(b"RIFF").decode(), mime_type="audio/wav"
        ),
        t.EmbeddedResource(
            type="resource",
            resource=t.TextResourceContents(uri="file:///notes.txt", text="notes"),
        ),
        t.EmbeddedResource(
            type="resource",
            resource=t.BlobResourceContents(
                uri="file:///a.pdf",
                blob=base64.b64encode(b"%PDF").decode(),
                mime_type="application/pdf",
            ),
        ),
        t.ResourceLink(type="resource_link", name="report", uri="https://example.com/r"),
        t.ImageContent(type="image", data="not base64!", mime_type="image/png"),
    ]
    assert content_to_parts(blocks) == (
        TextPart("plain"),
        DataPart(b"RIFF", "audio", "audio/wav"),
        TextPart("notes"),
        DataPart(b"%PDF", "document", "application/pdf"),
        TextPart("[resource report: https://example.com/r]"),
        TextPart("[the MCP server sent an image that is not valid base64]"),
    )
    # structured content leads; its plain-text rendering is not repeated
    assert content_to_parts([t.TextContent(type="text", text="3")], {"result": 3}) == (
        TextPart('{"result":3}'),
    )
