"""A real MCP server for golem's MCP client tests, written with the ``mcp`` package's server API.

    python tests/mcp_servers/tools_server.py stdio        # over stdin/stdout
    python tests/mcp_servers/tools_server.py http         # streamable HTTP on 127.0.0.1,
                                                          # port chosen by the OS, printed
                                                          # as "listening on <port>"

Tools: ``add`` (structured output), ``echo`` (text), ``pixel`` (an image), ``refuse``
(an ``isError`` result), ``slow`` (sleeps, for timeouts), ``grow`` (adds a tool at run
time: the tool list changes), ``crash`` (the process dies mid-call), ``note`` (appends
``note <text>`` to the file ``$GOLEM_MCP_LOG``: an effect a test can count).

With ``$GOLEM_MCP_LOG`` set, every ``tools/list`` request appends ``list`` to that file;
``$GOLEM_MCP_HIDE`` (comma-separated tool names) removes those tools from this server.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

server = MCPServer("golem-test-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def pixel() -> Image:
    """A one-pixel PNG."""
    return Image(data=PIXEL_PNG, format="png")


@server.tool()
def refuse(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "woke up"


_grown = 0


@server.tool()
def grow() -> str:
    """Add a new tool to this server."""
    global _grown
    _grown += 1
    n = _grown

    def extra(x: int) -> int:
        return x * 10 + n

    server.add_tool(extra, name=f"extra_{n}", description=f"extra tool number {n}")
    return f"added extra_{n}"


@server.tool()
def crash() -> str:
    """The server process dies in the middle of this call."""
    sys.stdout.flush()
    os._exit(3)


def _log(line: str) -> None:
    path = os.environ.get("GOLEM_MCP_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@server.tool()
def note(text: str) -> str:
    """Write a note (appended to the server's log)."""
    _log(f"note {text}")
    return f"noted {text}"


_list_tools = server.list_tools


async def _listing() -> list[object]:
    _log("list")
    return list(await _list_tools())


server.list_tools = _listing  # type: ignore[method-assign]
for _hidden in filter(None, os.environ.get("GOLEM_MCP_HIDE", "").split(",")):
    server.remove_tool(_hidden)


def _serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"listening on {port}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "http":
        _serve_http()
    else:
        server.run("stdio")
