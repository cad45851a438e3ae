"""Tools from MCP servers: a client toolset over stdio or streamable HTTP (the ``mcp`` extra).

Owns the translation between the Model Context Protocol and golem's tools: an MCP
server's tools become ``Tool`` values whose JSON Schemas reach the model unchanged; a
``tools/call`` result becomes evidence parts (text, images and audio as data parts,
structured content as its JSON text), an ``isError`` result a failed result the model
can read, a timeout a failed result, and a server that dies mid-call a crashed tool
(the run fails at stage ``tool`` with a partial). A call's arguments are checked against
the tool's input schema first: a misfit is a retry naming each problem (as a golem tool's
validation failure is), and the server is not called. Every wait is bounded.

    async with MCPServerStdio("python", ["server.py"]) as server:
        agent = Agent(model, toolsets=[server])
        result = await agent.run("...")

The tool list is read again at the start of every run, so tools a server adds or
removes between runs are picked up (a durable run records it at its start: a replay,
and every call it makes, uses the recorded list; the worker's connection makes each
call). The connection lives from ``async with`` (on the
server, or on an agent holding it) to its end; a toolset is built per run when an
application scopes tools to the caller (e.g. an HTTP server per authenticated user).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import importlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from attrs import frozen

from golem_core import DataPart, Part, PartKind, TextPart, ToolDefinition
from golem_shell._errors import UsageError
from golem_shell.tools._tools import ModelRetry, RunContext, Tool, ToolFailure

if TYPE_CHECKING:  # the mcp package is an optional extra: imported when a server connects
    from mcp import ClientSession

__all__ = [
    "MCPConnectionError",
    "MCPServerHTTP",
    "MCPServerStdio",
    "MCPToolset",
    "content_to_parts",
]

_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


def _import_mcp() -> Any:
    try:
        import mcp
        import mcp.client.stdio
        import mcp.client.streamable_http
    except ImportError as e:
        raise UsageError(
            "MCP toolsets need the mcp package: pip install 'golem-agents[mcp]' (the mcp extra)"
        ) from e
    if not hasattr(mcp, "MCPError") or not hasattr(
        mcp.client.streamable_http, "streamable_http_client"
    ):  # pragma: no cover - the 1.x API
        raise UsageError(
            "MCP toolsets need mcp 2.x (pip install 'golem-agents[mcp]');"
            f" mcp {getattr(mcp, '__version__', 'of another major version')} is installed"
        )
    return mcp


class MCPConnectionError(ConnectionError):
    """The MCP server could not be reached, or the connection broke (the server died)."""


class MCPToolset:
    """The tools of one MCP server, as a toolset of an agent (``Agent(toolsets=[...])``).

    Use ``MCPServerStdio`` or ``MCPServerHTTP``. Enter it (``async with``), or enter the
    agent that holds it, before running; the connection closes at the block's end.

    Args:
        timeout: seconds a tool call (and a tool listing) may take; a call that takes
            longer gets a failed result saying so, and the run goes on.
        connect_timeout: seconds connecting and the protocol handshake may take.
        prefix: prepended to every tool name as ``<prefix>_<name>`` (to keep two
            servers' tools apart).
    """

    def __init__(
        self, *, timeout: float = 30.0, connect_timeout: float = 10.0, prefix: str | None = None
    ) -> None:
        if timeout <= 0 or connect_timeout <= 0:
            raise UsageError("MCP timeouts must be positive")
        if prefix is not None and not re.fullmatch(r"[a-zA-Z0-9_-]{1,40}", prefix):
            raise UsageError(f"MCP tool prefix {prefix!r} must be 1-40 letters, digits, _ or -")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.prefix = prefix
        self._stack: AsyncExitStack | None = None
        self._session: ClientSession | None = None
        self._entered = 0

    def _transport(self, mcp: Any) -> Any:
        raise NotImplementedError

    def _where(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where()})"

    @property
    def connected(self) -> bool:
        """Whether the connection is open (between ``__aenter__`` and ``__aexit__``)."""
        return self._session is not None

    async def __aenter__(self) -> MCPToolset:
        mcp = _import_mcp()
        if self._stack is not None:  # entered again (by an agent that holds it): one connection
            self._entered += 1
            return self
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            async with asyncio.timeout(self.connect_timeout):
                read, write = await stack.enter_async_context(self._transport(mcp))
                session = await stack.enter_async_context(mcp.ClientSession(read, write))
                await session.initialize()
        except BaseException as e:
            closing: Exception | None = None
            try:
                await stack.aclose()
            except Exception as error:  # the transport's own failure, reported on close
                closing = error
            task = asyncio.current_task()
            if isinstance(e, UsageError) or not isinstance(e, Exception | asyncio.CancelledError):
                raise
            if isinstance(e, asyncio.CancelledError) and (
                closing is None or task is None or task.cancelling()
            ):
                raise  # a cancellation from outside stays one
            if isinstance(e, TimeoutError) and closing is None:
                raise MCPConnectionError(
                    f"MCP server {self._where()} did not complete the handshake within"
                    f" {self.connect_timeout} s"
                ) from e
            cause = _leaf(closing if closing is not None else e)
            raise MCPConnectionError(
                f"cannot connect to MCP server {self._where()}: {type(cause).__name__}: {cause}"
            ) from cause
        self._stack = stack
        self._session = session
        self._entered = 1
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._entered -= 1
        if self._entered > 0:
            return
        stack, self._stack, self._session = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    def _live(self) -> ClientSession:
        if self._session is None:
            raise UsageError(
                f"{self!r} is not connected: enter it (async with server: ...) or the agent"
                " that holds it (async with agent: ..., or with agent: ... around the _sync"
                " methods) before running"
            )
        return self._session

    async def tools(self, context: RunContext[Any]) -> tuple[Tool[Any], ...]:
        """The server's tools, listed afresh (tool-list changes are picked up per run).

        Raises:
            UsageError: not connected, or a tool name no provider accepts.
            MCPConnectionError: the listing failed or timed out.
        """
        session = self._live()
        listed: list[Any] = []
        cursor: str | None = None
        mcp = _import_mcp()
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    params = (
                        None if cursor is None else mcp.types.PaginatedRequestParams(cursor=cursor)
                    )
                    page = await session.list_tools(params=params)
                    listed.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except TimeoutError as e:
            raise MCPConnectionError(
                f"MCP server {self._where()} did not list its tools within {self.timeout} s"
            ) from e
        except mcp.MCPError as e:
            raise MCPConnectionError(
                f"MCP server {self._where()} failed to list its tools: {e.error.message}"
            ) from e
        return tuple(self._tool(t) for t in listed)

    def _recorded_tool(self, definition: ToolDefinition) -> Tool[Any]:
        """The tool a durable run recorded (``definition``, as listed at its start), made
        again without asking the server: a call goes through this connection."""
        remote = definition.name
        if self.prefix is not None and remote.startswith(f"{self.prefix}_"):
            remote = remote[len(self.prefix) + 1 :]
        listed = _Listed(remote, definition.description, dict(definition.parameters))
        return self._tool(listed)

    def _tool(self, listed: Any) -> Tool[Any]:
        remote: str = listed.name
        name = remote if self.prefix is None else f"{self.prefix}_{remote}"
        if not _NAME.fullmatch(name):
            raise UsageError(
                f"MCP server {self._where()} offers a tool named {remote!r}; tool names must"
                " be 1-64 letters, digits, '_' or '-' (what every provider accepts)"
            )
        description = listed.description or listed.title or ""
        schema = dict(listed.input_schema)
        check = _arguments_checker(schema)

        async def call(context: RunContext[Any], arguments: dict[str, object]) -> Any:
            problems = check(arguments)
            if problems:  # as a golem tool's validation failure: the model tries again
                raise ModelRetry(
                    f"the arguments of {name} are not valid: {'; '.join(problems)}."
                    " Fix them and call again."
                )
            return await self._call(remote, arguments)

        return Tool.from_schema(name, description, schema, call)

    async def _call(
        self, remote: str, arguments: dict[str, object]
    ) -> tuple[Part, ...] | ToolFailure:
        session = self._live()
        mcp = _import_mcp()
        try:
            # the session's read timeout bounds the request; the outer bound is a backstop
            async with asyncio.timeout(self.timeout + 5):
                result = await session.call_tool(
                    remote, arguments, read_timeout_seconds=self.timeout
                )
        except TimeoutError:
            return ToolFailure(f"the MCP tool {remote} did not answer within {self.timeout} s")
        except mcp.MCPError as e:
            if e.error.code == _REQUEST_TIMEOUT:
                return ToolFailure(f"the MCP tool {remote} did not answer within {self.timeout} s")
            if e.error.code == _CONNECTION_CLOSED:
                raise MCPConnectionError(
                    f"the connection to MCP server {self._where()} closed during a call of"
                    f" {remote} (did the server crash?)"
                ) from e
            return ToolFailure(f"the MCP server refused the call of {remote}: {e.error.message}")
        parts = content_to_parts(result.content, result.structured_content)
        if result.is_error:
            text = "".join(p.text for p in parts if isinstance(p, TextPart))
            return ToolFailure(text or f"the MCP tool {remote} failed", parts=parts)
        return parts


@frozen
class _Listed:
    """A tool as ``tools/list`` lists it, made from a durable run's record."""

    name: str
    description: str
    input_schema: dict[str, Any]
    title: None = None


class MCPServerStdio(MCPToolset):
    """An MCP server run as a subprocess, spoken to over its stdin and stdout.

    Args:
        command: the executable.
        args: its arguments.
        env: environment variables added to the small safe set the mcp package passes
            on (``PATH``, ``HOME``, ...); the parent's environment is not inherited.
        cwd: its working directory.
        timeout, connect_timeout, prefix: as for ``MCPToolset``.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        prefix: str | None = None,
    ) -> None:
        super().__init__(timeout=timeout, connect_timeout=connect_timeout, prefix=prefix)
        self.command = command
        self.args = tuple(args)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd

    def _where(self) -> str:
        return repr(" ".join((self.command, *self.args))[:80])

    def _transport(self, mcp: Any) -> Any:
        params = mcp.StdioServerParameters(
            command=self.command, args=list(self.args), env=self.env, cwd=self.cwd
        )
        return mcp.stdio_client(params)


class MCPServerHTTP(MCPToolset):
    """An MCP server reached over streamable HTTP (``http://host/mcp``).

    Args:
        url: the server's MCP endpoint.
        headers: sent with every request (e.g. the caller's ``Authorization``: build
            one toolset per caller to scope the tools to them). Never shown in a repr.
        timeout, connect_timeout, prefix: as for ``MCPToolset``.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        prefix: str | None = None,
    ) -> None:
        super().__init__(timeout=timeout, connect_timeout=connect_timeout, prefix=prefix)
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"an MCP HTTP server URL must be http(s), got {url[:80]!r}")
        self.url = url
        self._headers = dict(headers or {})

    def _where(self) -> str:
        return repr(self.url)

    def _transport(self, mcp: Any) -> Any:
        import httpx2  # the HTTP client the mcp package's transport is built on

        # the mcp package's defaults: a server may hold its event stream open for long;
        # each request is bounded by the session's read timeout all the same
        client = httpx2.AsyncClient(headers=self._headers, timeout=httpx2.Timeout(30.0, read=300.0))
        return _owning(
            client, mcp.client.streamable_http.streamable_http_client(self.url, http_client=client)
        )


class _owning:
    """Enter a transport and close the HTTP client it was given afterwards."""

    def __init__(self, client: Any, transport: Any) -> None:
        self._client = client
        self._transport = transport

    async def __aenter__(self) -> Any:
        await self._client.__aenter__()
        try:
            return await self._transport.__aenter__()
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._transport.__aexit__(*exc)
        finally:
            await self._client.__aexit__(None, None, None)


def _arguments_checker(schema: dict[str, Any]) -> Callable[[dict[str, object]], list[str]]:
    """What is wrong with a call's arguments under the tool's input schema, each problem
    with its path (``a: 'two' is not of type 'integer'``); nothing when they fit.

    The schema's ``$schema`` names its dialect (JSON Schema 2020-12 when it names none,
    as MCP says). A schema that is not a valid JSON Schema checks nothing: the server
    owns its schema and still validates the call itself. ``jsonschema`` comes with the
    ``mcp`` package.
    """
    jsonschema: Any = importlib.import_module("jsonschema")  # untyped: read as Any
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return lambda arguments: []
    validator = cls(schema)

    def problems(arguments: dict[str, object]) -> list[str]:
        found = sorted(validator.iter_errors(arguments), key=lambda e: list(map(str, e.path)))
        return [_problem(e) for e in found]

    return problems


def _problem(error: Any) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return (
        f"{path[1:] if path.startswith('.') else path}: {error.message}" if path else error.message
    )


def _leaf(error: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups: what actually went wrong."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _kind(media_type: str | None) -> PartKind:
    major = (media_type or "").partition("/")[0]
    return major if major in ("image", "audio", "video") else "document"  # type: ignore[return-value]


def _data(encoded: str, kind: PartKind, media_type: str, what: str) -> Part:
    try:
        return DataPart(base64.b64decode(encoded, validate=True), kind, media_type)
    except (binascii.Error, ValueError):
        return TextPart(f"[the MCP server sent {what} that is not valid base64]")


def content_to_parts(content: Sequence[Any], structured: Any = None) -> tuple[Part, ...]:
    """golem parts for an MCP tool result's ``content`` blocks and ``structuredContent``.

    Text is a text part; an image or audio block a data part; an embedded resource its
    text, or a data part of its bytes; a resource link a text part naming it.
    Structured content, when present, is one text part of its compact JSON, first; text
    blocks are then taken as its plain rendering (what the protocol asks servers to
    send alongside) and not repeated; media blocks are kept.
    """
    parts: list[Part] = []
    if structured is not None:
        parts.append(TextPart(json.dumps(structured, ensure_ascii=False, separators=(",", ":"))))
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            if structured is None:
                parts.append(TextPart(block.text))
        elif kind == "image":
            parts.append(_data(block.data, "image", block.mime_type, "an image"))
        elif kind == "audio":
            parts.append(_data(block.data, "audio", block.mime_type, "audio"))
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(TextPart(text))
            else:
                media = resource.mime_type or "application/octet-stream"
                parts.append(_data(resource.blob, _kind(media), media, f"resource {resource.uri}"))
        elif kind == "resource_link":
            parts.append(TextPart(f"[resource {block.name}: {block.uri}]"))
        else:
            parts.append(TextPart(f"[an MCP content block of type {kind!r} golem cannot show]"))
    return tuple(parts)
