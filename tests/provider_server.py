"""A loopback HTTP server that plays scripted provider replies, for adapter tests.

``provider_server`` (a fixture) is a real uvicorn server on 127.0.0.1 running a raw
ASGI app in a thread. A test queues ``Reply`` values; each request pops the next one and
is recorded (method, path, headers, body). A reply controls everything a test needs from
a provider: status, headers, the body as chunks written with delays, a hang before the
headers, or a cut connection (the response never completes: the client sees the
connection lost mid-body). ``reset_server`` is a raw TCP server that answers every
connection with a TCP reset. The fixtures are named by ``name=``, so a test module imports
the functions and asks for the fixtures by their short names::

    from provider_server import (  # noqa: F401 (fixtures)
        anyio_backend_fixture,
        provider_server_fixture,
        provider_server_instance_fixture,
    )

    async def test_x(provider_server: ProviderServer) -> None: ...
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from asgi_body import read_body
from attrs import define, field

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture_bytes(name: str) -> bytes:
    """The bytes of ``tests/fixtures/<name>``."""
    return (FIXTURES / name).read_bytes()


def fixture_json(name: str) -> Any:
    """The decoded JSON of ``tests/fixtures/<name>``."""
    return json.loads(fixture_bytes(name))


def split_every(data: bytes, size: int) -> list[bytes]:
    """``data`` cut into pieces of ``size`` bytes."""
    return [data[i : i + size] for i in range(0, len(data), size)]


@define
class Reply:
    """One scripted HTTP response."""

    status: int = 200
    headers: dict[str, str] = field(factory=dict)
    chunks: Sequence[bytes] = ()
    delay: float = 0.0  # seconds between chunks
    hang: float = 0.0  # seconds before the status line
    cut: bool = False  # abort after the chunks instead of ending the body


def json_reply(body: object, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """A JSON response (``body`` is JSON-encoded unless it is already bytes)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    all_headers = {"content-type": "application/json", **(headers or {})}
    return Reply(status=status, headers=all_headers, chunks=[raw])


def sse_reply(
    data: bytes,
    *,
    chunk_size: int | None = None,
    delay: float = 0.0,
    cut: bool = False,
    content_type: str = "text/event-stream; charset=utf-8",
) -> Reply:
    """An event stream, optionally cut into ``chunk_size`` pieces sent ``delay`` apart."""
    chunks = split_every(data, chunk_size) if chunk_size else [data]
    return Reply(headers={"content-type": content_type}, chunks=chunks, delay=delay, cut=cut)


@define
class Recorded:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: str = ""  # the raw query string, e.g. "alt=sse"

    def json(self) -> Any:
        return json.loads(self.body)


class ProviderServer:
    """The scripted server: ``url``, ``enqueue(...)``, ``requests``."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self.url = ""

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self.replies.clear()
            self.requests.clear()

    async def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.closing.is_set() and time.monotonic() < end:
            await asyncio.sleep(min(0.02, max(0.0, end - time.monotonic())))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        with self._lock:
            query = scope.get("query_string", b"").decode("latin-1")
            self.requests.append(Recorded(scope["method"], scope["path"], headers, body, query))
            reply = self.replies.pop(0) if self.replies else None
        if reply is None:
            reply = json_reply({"error": {"message": "no scripted reply"}}, status=599)
        if reply.hang:
            await self._sleep(reply.hang)
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [(k.encode(), v.encode()) for k, v in reply.headers.items()],
            }
        )
        for i, chunk in enumerate(reply.chunks):
            if i and reply.delay:
                await self._sleep(reply.delay)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if reply.cut:
            return  # the response never completes: uvicorn drops the connection
        await send({"type": "http.response.body", "body": b"", "more_body": False})


@pytest.fixture(scope="session", name="provider_server_instance")
def provider_server_instance_fixture() -> Iterator[ProviderServer]:
    """The running server, shared by the session."""
    app = ProviderServer()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="critical",
        access_log=False,
        timeout_graceful_shutdown=1,
        http="h11",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:  # pragma: no cover
            raise RuntimeError("the loopback provider server did not start")
        time.sleep(0.01)
    app.url = f"http://127.0.0.1:{port}"
    yield app
    app.closing.set()
    server.should_exit = True
    thread.join(timeout=5)
    sock.close()


@pytest.fixture(name="provider_server")
def provider_server_fixture(provider_server_instance: ProviderServer) -> Iterator[ProviderServer]:
    """The loopback server, with an empty script and no recorded request."""
    provider_server_instance.reset()
    yield provider_server_instance
    provider_server_instance.reset()


class ResetServer:
    """Accepts connections, reads the request head, then resets the connection."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:  # pragma: no cover
                return
            self.connections += 1
            conn.settimeout(1)
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    piece = conn.recv(65536)
                    if not piece:
                        break
                    data += piece
            except OSError:  # pragma: no cover
                pass
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


@pytest.fixture(name="reset_server")
def reset_server_fixture() -> Iterator[ResetServer]:
    """A server that resets every connection once it has read the request head."""
    server = ResetServer()
    yield server
    server.close()


@pytest.fixture(name="anyio_backend")
def anyio_backend_fixture() -> str:
    """Run ``@pytest.mark.anyio`` tests on asyncio only."""
    return "asyncio"
