"""The web chat example (``examples/web_chat/app.py``) served by uvicorn on 127.0.0.1.

``serve_web_chat(db, delay=...)`` starts it in a thread on a free port and returns a
``WebChatServer`` (``url``, ``app``, ``db``, ``close()``), for the HTTP and browser tests.
``server = web_chat_fixture(delay=...)`` gives a test module that server as its ``server``
fixture; ``cookie_client(server)`` is an HTTP client holding the cookie the page sets.
``DroppingProxy`` sits in front of it and cuts connections on demand (a network drop).
``gate_weather(server)`` makes its ``get_weather`` tool wait until the test releases it
(steering: a message typed while a tool runs). ``ExampleProcess`` runs the example as a
process of a deployment (durable or not, dying or waiting at a ``CRASH_POINTS`` point
when asked: ``python tests/web_chat_server.py <point> <app args>``); ``SplitBalancer``
puts two such processes behind one address for a browser. Both servers run in a thread
through ``Served`` (uvicorn on a free port). The example's module is loaded by
``bench/web_chat_example.py``, which the soak's process shares.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import uvicorn
from asgi_body import read_body

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ is not part of the wheel
    sys.path.insert(0, str(ROOT))

from bench.web_chat_example import APP_PATH, load_example  # noqa: E402

if TYPE_CHECKING:
    import httpx


class Served:
    """An ASGI ``app`` served by uvicorn in a daemon thread on a free port of 127.0.0.1
    (``url``), started when made: ``RuntimeError`` naming ``what`` if it has not started
    within 30 seconds. ``close()`` stops it."""

    def __init__(self, app: Any, *, lifespan: Literal["on", "off"], what: str) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan=lifespan)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"{what} did not start")
            time.sleep(0.02)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


class WebChatServer:
    def __init__(self, app: Any, db: str) -> None:
        self.app = app
        self.db = db
        self.served = Served(app, lifespan="on", what="the web chat server")
        self.url = self.served.url

    @property
    def chat(self) -> Any:
        """The example's ``ChatServer`` (its store, runs and agent)."""
        return self.app.state.server

    def close(self) -> None:
        self.served.close()


def serve_web_chat(db: Path, *, delay: float = 0.01, key: bytes | None = None) -> WebChatServer:
    """Start the example on a free port of 127.0.0.1 with its SQLite file at ``db``."""
    example = load_example()
    return WebChatServer(example.make_app(str(db), delay=delay, key=key), str(db))


def web_chat_fixture(*, delay: float) -> Any:
    """The pytest fixture ``server`` for a test module (``server = web_chat_fixture(delay=...)``):
    the example served (``serve_web_chat``) with its store at ``chat.db`` in the test's
    ``tmp_path``, its offline model waiting ``delay`` seconds a chunk; closed after the test."""
    import pytest

    @pytest.fixture
    def server(tmp_path: Path) -> Iterator[WebChatServer]:
        served = serve_web_chat(tmp_path / "chat.db", delay=delay)
        yield served
        served.close()

    return server


def cookie_client(server: WebChatServer, *, timeout: float = 30) -> httpx.Client:
    """An HTTP client holding the cookie the page sets (a user), as a browser would."""
    import httpx

    client = httpx.Client(base_url=server.url, timeout=timeout)
    assert client.get("/").status_code == 200
    assert client.cookies.get("uid")
    return client


class ToolGate:
    """Holds the example's ``get_weather`` while it runs: ``started`` is set when a call
    begins, the call returns once ``release`` is set (threading events: the server runs
    in a thread of its own)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls = 0


def gate_weather(server: WebChatServer, *, delay: float = 0.01) -> ToolGate:
    """Give ``server`` the example's offline agent with a ``get_weather`` that waits on
    the returned gate (the same model, tools and signing key otherwise)."""
    from golem_shell import Agent, FunctionModel

    example = load_example()
    gate = ToolGate()

    async def get_weather(city: str) -> str:
        """The weather of a city.

        Args:
            city: the city's name.
        """
        gate.calls += 1
        gate.started.set()
        if not await asyncio.to_thread(gate.release.wait, 60):
            raise RuntimeError("the test never released get_weather")
        return f"sunny, 21 C in {city}"

    chat = server.chat
    chat.agent = Agent(
        FunctionModel(stream_function=example.offline_stream(delay), name="offline"),
        instructions="You are a helpful, terse assistant.",
        tools=[get_weather, example.send_money],
        signing_key=chat.key,
    )
    return gate


class DroppingProxy:
    """A TCP proxy in front of a server that can cut every open connection at once, as a
    network drop does; new connections go through again. ``requests`` records the head
    (request line and headers) of every request that passed, in order.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.requests: list[str] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self.url = ""

    async def start(self) -> DroppingProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, sniff: bool
    ) -> None:
        try:
            while data := await reader.read(65536):
                if sniff and b"HTTP/1.1\r\n" in data:
                    self.requests.append(data.split(b"\r\n\r\n", 1)[0].decode(errors="replace"))
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.transport.abort()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._writers |= {writer, up_writer}
        await asyncio.gather(
            self._pipe(reader, up_writer, sniff=True), self._pipe(up_reader, writer, sniff=False)
        )
        self._writers -= {writer, up_writer}

    def drop(self) -> None:
        """Cut every open connection (both sides), like a lost network."""
        for writer in list(self._writers):
            writer.transport.abort()

    async def close(self) -> None:
        self.drop()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


class SplitBalancer:
    """An HTTP load balancer in front of two processes of one deployment, as a browser
    meets them: everything goes to ``first``, except a ``POST /api/chat`` sent while
    another one's answer still streams through it, which goes to ``second`` (a message
    sent while a turn streams reaches the process that does not hold its stream).
    ``routes`` records ``(method, path, 0 or 1)`` for each request, in order. Served by
    uvicorn in a thread on 127.0.0.1; ``close()`` stops it."""

    def __init__(self, first: str, second: str) -> None:
        self.upstreams = (first, second)
        self.routes: list[tuple[str, str, int]] = []
        self.streaming = 0
        self.served = Served(self, lifespan="off", what="the balancer")
        self.url = self.served.url

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        import httpx

        if scope["type"] != "http":
            return
        body = await read_body(receive)
        method, path = scope["method"], scope["path"]
        chat = method == "POST" and path == "/api/chat"
        which = 1 if chat and self.streaming else 0
        self.routes.append((method, path, which))
        query = scope["query_string"].decode()
        url = self.upstreams[which] + path + (f"?{query}" if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"host"]
        async with httpx.AsyncClient(timeout=120) as client:
            request = client.build_request(method, url, headers=headers, content=body)
            response = await client.send(request, stream=True)
            self.streaming += chat
            try:
                await send(
                    {
                        "type": "http.response.start",
                        "status": response.status_code,
                        "headers": [
                            (k, v)
                            for k, v in response.headers.raw
                            if k.lower() not in (b"content-length", b"transfer-encoding")
                        ],
                    }
                )
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                self.streaming -= chat
                await response.aclose()

    def close(self) -> None:
        self.served.close()


# -- the real JavaScript clients (tests/js) -----------------------------------------------------

JS_DIR = Path(__file__).resolve().parent / "js"


def js_clients_or_skip() -> None:
    """Skip unless ``tests/js/node_modules`` is installed (``npm ci`` in ``tests/js``);
    with ``GOLEM_REQUIRE_JS=1`` (``.ci/run``) a missing install or node fails instead."""
    import os
    import shutil

    import pytest

    missing = None
    if shutil.which("node") is None:
        missing = (
            "node is not on PATH: install Node.js 20 or newer (the system's nodejs package or"
            " nodejs.org), then run (cd tests/js && npm ci)"
        )
    elif not (JS_DIR / "node_modules" / "ai").is_dir():
        missing = "tests/js/node_modules is missing: run (cd tests/js && npm ci)"
    if missing is None:
        return
    if os.environ.get("GOLEM_REQUIRE_JS") == "1":
        pytest.fail(f"GOLEM_REQUIRE_JS=1 but {missing}")
    pytest.skip(missing)


def run_node(
    script: str, *args: str, stdin: Any = None, timeout: float = 60, node: str = "node"
) -> Any:
    """Run ``tests/js/<script>`` with ``node`` (the one on ``PATH`` unless a path is given)
    and return the JSON it prints (stdin: a JSON value, when given). A failing script fails
    the test with its output."""
    import json
    import subprocess

    completed = subprocess.run(
        [node, script, *args],
        cwd=JS_DIR,
        input=None if stdin is None else json.dumps(stdin),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if completed.returncode != 0:
        raise AssertionError(
            f"{node} {script} {' '.join(args)} failed ({completed.returncode}):\n"
            f"{completed.stdout[-2000:]}\n{completed.stderr[-4000:]}"
        )
    return json.loads(completed.stdout)


# -- the example as a deployment: server processes sharing one store -------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ExampleProcess:
    """``examples/web_chat/app.py --durable`` in a process of its own (a DBOS worker), on
    ``port``, with its store at ``db``: start it, SIGKILL it, start it again (same worker
    id: DBOS resumes the runs it had in flight). ``durable=False``: plain turns (their
    streams in the store, their runs in the process). ``crash``: the process SIGKILLs
    itself at that point of its first turn (``CRASH_POINTS``); set it to ``None`` before
    starting the process again."""

    def __init__(
        self,
        db: Path,
        port: int,
        worker: str,
        *,
        delay: float = 0.02,
        durable: bool = True,
        crash: str | None = None,
    ) -> None:
        self.db, self.port, self.worker, self.delay = db, port, worker, delay
        self.durable, self.crash = durable, crash
        self.url = f"http://127.0.0.1:{port}"
        self.process: Any = None
        self.log = db.parent / f"server-{worker}.log"

    def start(self, *, wait: bool = True) -> ExampleProcess:
        """Start the process and (``wait``) wait until it answers."""
        import os
        import subprocess

        root = str(APP_PATH.parents[2])  # this checkout's golem, not an installed one
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
        env.pop("OPENAI_API_KEY", None)
        script = [str(APP_PATH)] if self.crash is None else [__file__, self.crash]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    *script,
                    *(["--durable"] if self.durable else []),
                    "--worker",
                    self.worker,
                    "--port",
                    str(self.port),
                    "--db",
                    str(self.db),
                    "--key-file",
                    str(self.db.parent / "signing.key"),
                    "--delay",
                    str(self.delay),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )
        return self.wait() if wait else self

    def wait(self) -> ExampleProcess:
        """Wait until the process answers ``GET /``."""
        import httpx

        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the web chat did not start: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup, as a crashed machine."""
        import signal

        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except Exception:
                self.kill()


# -- a server that dies at a chosen point (``ExampleProcess(crash=...)``) ------------------------

CRASH_POINTS = (
    "durable-start",
    "plain-stored",
    "hold-last-look",
    "flaky-finish",
    "after-steer-202",
    "durable-answer",
    "stale-answer",
)
"""Where ``python tests/web_chat_server.py <point> <app args>`` SIGKILLs itself, once:
``durable-start``: a durable turn's prompt is stored and its stream open, its workflow
not started yet; ``plain-stored``: a plain turn's run is stored, its stream has no
``finish`` yet. Or where it waits: ``hold-last-look``: each durable run, once it has
looked for steering messages for the last time (before it closes its steering), creates
the file ``held`` beside the store and waits until the file ``release`` exists there.
Or where the infrastructure fails for a moment: ``flaky-finish``: while a durable turn
is finished, the first ``DurableAgent.result`` raises ``ConnectionError``, the first
``waiting`` and the first closing write of a stream that succeeded raise ``HistoryStoreError`` (each
appends a line to the file ``faults`` beside the store). ``after-steer-202``: a
steering message is answered 202, and the process dies a moment later, while the turn's
``get_weather`` (which takes a minute here) still runs: its run never took the message.
``durable-answer``: a paused durable turn's approvals are taken (its answering stream
open), and the process dies while sending them to the run: they never reach it.
``stale-answer``: the first answers sent to a paused durable run go bound to the pause
before the one it is in, as a stale retry would: the run refuses them
(``DeferredResultsError``, nothing applied); later answers go as sent."""


def _crash_at(point: str) -> None:
    """Make the example die at ``point`` (see ``CRASH_POINTS``)."""
    import os
    import signal

    example = load_example()

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "durable-start":
        from golem_shell.durable import DurableAgent

        async def start(self: Any, *args: Any, **kwargs: Any) -> str:
            die()
            raise AssertionError("unreachable")

        DurableAgent.start = start  # type: ignore[method-assign]
    elif point == "plain-stored":
        store_turn = example.ChatServer._store_turn

        def dying_store_turn(self: Any, *args: Any) -> Any:
            store = store_turn(self, *args)

            async def store_then_die(end: Any) -> None:
                await store(end)
                die()

            return store_then_die

        example.ChatServer._store_turn = dying_store_turn
    elif point == "durable-answer":
        from golem_shell.durable import DurableAgent

        async def answer(self: Any, *args: Any, **kwargs: Any) -> None:
            die()

        DurableAgent.answer = answer  # type: ignore[method-assign]
    elif point == "hold-last-look":
        from golem_shell.engines.dbos import _workflow

        here = Path(sys.argv[sys.argv.index("--db") + 1]).parent
        body = _workflow._body

        async def held_body(*args: Any) -> Any:
            record = await body(*args)
            if not (here / "release").exists():
                (here / "held").touch()
                while not (here / "release").exists():
                    await asyncio.sleep(0.02)
            return record

        _workflow._body = held_body  # type: ignore[assignment]
    elif point == "flaky-finish":
        from golem_shell.durable import DurableAgent
        from golem_shell.store import HistoryStoreError
        from golem_shell.ui import StoredRuns

        faults = Path(sys.argv[sys.argv.index("--db") + 1]).parent / "faults"
        failed: set[str] = set()

        def fail_once(name: str, error: Exception) -> None:
            if name not in failed:
                failed.add(name)
                with faults.open("a") as out:
                    out.write(name + "\n")
                raise error

        result, waiting, write = DurableAgent.result, DurableAgent.waiting, StoredRuns.write

        async def flaky_result(self: Any, *args: Any, **kwargs: Any) -> Any:
            fail_once("result", ConnectionError("connection refused (the database restarts)"))
            return await result(self, *args, **kwargs)

        async def flaky_waiting(self: Any, *args: Any, **kwargs: Any) -> Any:
            fail_once("waiting", HistoryStoreError("the database could not be reached"))
            return await waiting(self, *args, **kwargs)

        async def flaky_write(self: Any, stream: str, frames: Any, *, end: Any = None) -> int:
            said = "".join(data for _, data in frames)
            if end is not None and '"type":"error"' not in said:  # a success's close
                fail_once("write", HistoryStoreError("the database could not be reached"))
            return await write(self, stream, frames, end=end)

        DurableAgent.result = flaky_result  # type: ignore[method-assign]
        DurableAgent.waiting = flaky_waiting  # type: ignore[method-assign]
        StoredRuns.write = flaky_write  # type: ignore[method-assign]
    elif point == "after-steer-202":
        from golem_shell import tool

        @tool
        async def get_weather(city: str) -> str:
            """The weather of a city (slowly).

            Args:
                city: the city's name.
            """
            await asyncio.sleep(60)
            return f"sunny in {city}"

        example.get_weather = get_weather
        steer = example.ChatServer.steer

        async def steer_then_die(self: Any, *args: Any) -> Any:
            response = await steer(self, *args)
            if response is not None and response.status_code == 202:
                asyncio.get_running_loop().call_later(0.3, die)  # the 202 goes out first
            return response

        example.ChatServer.steer = steer_then_die
    elif point == "stale-answer":
        from golem_shell.durable import DurableAgent

        answer = DurableAgent.answer
        sent: list[str] = []

        async def stale_once(self: Any, run_id: str, answers: Any, *, pause: Any = None) -> None:
            if not sent:
                sent.append(run_id)
                pause = getattr(pause, "pause", pause) - 1  # the pause before this one
            await answer(self, run_id, answers, pause=pause)

        DurableAgent.answer = stale_once  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown crash point {point!r}: one of {CRASH_POINTS}")


if __name__ == "__main__":
    _crash_at(sys.argv.pop(1))
    sys.argv[0] = str(APP_PATH)
    load_example().main()
