"""The soak's deployment on 127.0.0.1: PostgreSQL, the scripted model, N web-chat
processes behind a round-robin balancer, Temporal workers; and what kills them.

Owns ``Deployment`` (start, kill, restart and sample every process of one
configuration), ``Balancer`` (a TCP round-robin proxy: it passes SSE through byte for
byte, and a backend that refuses the connection is skipped: the next one is tried) and
``rss_kib`` (a process's resident memory, from ``/proc/<pid>/status``).

The processes, as ``docs/guides/many-users.md`` runs them (``Deployment.commands``
prints their command lines):

- PostgreSQL (``tests/postgres_server.py``: a fresh server on a free port), one database
  per configuration holding the conversations, the streams and DBOS's (or the Temporal
  run's) blobs;
- the scripted model (``python -m bench.soak_model PORT``);
- ``servers`` web-chat processes (``python -m bench.soak_app``: the example with effect
  logging tools), each ``--durable --worker s<k>`` on DBOS (its own executor id, so a
  restarted process resumes its workflows), or ``--temporal ADDRESS`` with
  ``workers`` Temporal worker processes and the dev server (``tests/temporal_server.py``),
  or plain (the turn runs in the process that took the request);
- the balancer, in the soak's own process.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["Balancer", "Deployment", "Proc", "rss_kib"]

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def _tests_on_path() -> None:
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(pid: int) -> int | None:
    """``VmRSS`` of ``pid`` in KiB (``None``: the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Proc:
    """One process of the deployment: its command line, started again after a kill."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.argv, self.env, self.log = name, argv, env, log
        self.process: subprocess.Popen[bytes] | None = None
        self.url: str | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=self.log.parent
            )

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no cleanup, as a crashed machine."""
        if self.alive():
            assert self.process is not None
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        if self.alive():
            assert self.process is not None
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    async def ready(self, timeout: float = 90) -> None:
        """Wait until the process answers ``GET /`` (a web server), or just runs."""
        import httpx

        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2) as client:
            while True:
                if not self.alive() or time.monotonic() > deadline:
                    tail = self.log.read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"{self.name} did not start: {tail}")
                if self.url is None:
                    return
                try:
                    if (await client.get(self.url + "/")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)


class Balancer:
    """A round-robin TCP proxy on 127.0.0.1 in front of ``backends`` (ports): each
    connection goes to the next backend that accepts it."""

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self._next = itertools.count()
        self._server: asyncio.Server | None = None
        self.port = 0
        self.failovers = 0

    async def start(self) -> Balancer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        for _ in range(len(self.backends) * 20):
            port = self.backends[next(self._next) % len(self.backends)]
            try:
                return await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                self.failovers += 1
                await asyncio.sleep(0.05)
        return None

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.transport.abort()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream = await self._connect()
        if upstream is None:
            writer.transport.abort()
            return
        up_reader, up_writer = upstream
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()


class Deployment:
    """Every process of one configuration (``plain``, ``dbos`` or ``temporal``)."""

    def __init__(self, config: str, where: Path, *, servers: int = 2, workers: int = 2) -> None:
        self.config, self.where = config, where
        self.n_servers, self.n_workers = servers, workers
        self.postgres: Any = None
        self.temporal: Any = None
        self.model: Proc | None = None
        self.servers: list[Proc] = []
        self.workers: list[Proc] = []
        self.balancer: Balancer | None = None
        self.db = ""
        self.key_file = where / "signing.key"
        self.effects = where / "effects.log"
        self.rss: list[dict[str, Any]] = []  # samples: {t, name, kib}
        # what chaos did, by wall clock: {t, pid} (SIGKILL) or {t, postgres: True}
        self.chaos_log: list[dict[str, Any]] = []
        self.started = time.monotonic()

    # -- starting ------------------------------------------------------------------------

    async def start(self, postgres: Any = None) -> Deployment:
        """Start everything (``postgres``: a running server to share, else a new one)."""
        _tests_on_path()
        from postgres_server import create_database, start_postgres

        self.where.mkdir(parents=True, exist_ok=True)
        self.where.chmod(0o755)
        self.key_file.write_bytes(secrets.token_bytes(32))
        self.effects.touch()
        self.postgres = postgres or await asyncio.to_thread(start_postgres)
        self._own_postgres = postgres is None
        if self._own_postgres:  # with the options it will crash with (synchronous commits)
            await self.restart_postgres(down=0, mode="fast")
        name = f"soak_{self.config}_{secrets.token_hex(3)}"
        self.db = await asyncio.to_thread(create_database, self.postgres.url, name)
        model_port = free_port()
        self.model = Proc(
            "model",
            [sys.executable, "-m", "bench.soak_model", str(model_port)],
            {**os.environ, "PYTHONPATH": str(ROOT)},
            self.where / "model.log",
        )
        self.model.start()
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(ROOT),  # bench.soak_app, from the deployment's directory
            "OPENAI_API_KEY": "sk-soak",
            "OPENAI_BASE_URL": f"http://127.0.0.1:{model_port}/v1",
            "OPENAI_MODEL": "scripted",
        }
        common = ["--db", self.db, "--key-file", str(self.key_file)]
        launcher = [sys.executable, "-m", "bench.soak_app", "--effects", str(self.effects)]
        if self.config == "temporal":
            from temporal_server import start_temporal

            self.temporal = await asyncio.to_thread(start_temporal, self.where)
            launcher += ["--temporal", self.temporal.address]
            for k in range(self.n_workers):
                argv = [*launcher, "--temporal-worker", *common]
                self.workers.append(Proc(f"worker{k}", argv, env, self.where / f"worker{k}.log"))
        ports = []
        for k in range(self.n_servers):
            port = free_port()
            ports.append(port)
            argv = [*launcher, *common, "--port", str(port)]
            if self.config == "dbos":
                argv += ["--durable", "--worker", f"s{k}"]
            proc = Proc(f"server{k}", argv, env, self.where / f"server{k}.log")
            proc.url = f"http://127.0.0.1:{port}"
            self.servers.append(proc)
        for proc in [*self.workers, *self.servers[:1]]:
            proc.start()
        await self.servers[0].ready()  # the first creates the schemas (DBOS's, the store's)
        for proc in self.servers[1:]:
            proc.start()
        await asyncio.gather(*(p.ready() for p in [*self.servers, *self.workers]))
        self.balancer = await Balancer(ports).start()
        return self

    def commands(self) -> list[str]:
        """The command lines of the processes (for the guide)."""
        return [" ".join(p.argv) for p in [self.model, *self.servers, *self.workers] if p]

    @property
    def url(self) -> str:
        assert self.balancer is not None
        return self.balancer.url

    def processes(self) -> list[Proc]:
        return [p for p in [self.model, *self.servers, *self.workers] if p is not None]

    # -- chaos ---------------------------------------------------------------------------

    async def kill_and_restart(self, proc: Proc, *, down: float = 0.5) -> None:
        """SIGKILL ``proc``, wait ``down`` seconds, start it again (same command line:
        the same DBOS executor id) and wait until it serves."""
        self.chaos_log.append({"t": time.time(), "pid": proc.pid})
        proc.kill()
        await asyncio.sleep(down)
        proc.start()
        await proc.ready()

    async def restart_postgres(self, *, down: float = 0.5, mode: str = "immediate") -> None:
        """Stop PostgreSQL as a crash does (``-m immediate``: its processes die, the
        machine does not), then start it again on its port and data directory.

        It comes back with ``synchronous_commit=on``: the test server's ``off`` lets a
        crash of the server lose transactions it acknowledged, which no deployment
        accepts (``fsync=off`` stays: the machine never crashes here)."""
        pg = self.postgres
        self.chaos_log.append({"t": time.time(), "postgres": True})
        pg_ctl = str(pg.bindir / "pg_ctl")
        data = str(pg.data_dir)
        await asyncio.to_thread(pg._runner.run, [pg_ctl, "stop", "-D", data, "-m", mode, "-w"])
        await asyncio.sleep(down)
        log = str(pg.root / "server.log")
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={pg.port} -c unix_socket_directories=''"
            " -c max_connections=300 -c fsync=off -c synchronous_commit=on"
        )
        started = await asyncio.to_thread(
            pg._runner.run,
            [pg_ctl, "start", "-D", data, "-l", log, "-w", "-t", "60", "-o", options],
        )
        if started.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not restart: {started.stdout[-2000:]}")

    def sample_rss(self) -> None:
        t = round(time.monotonic() - self.started, 1)
        for p in self.processes():
            if p.pid is not None and (kib := rss_kib(p.pid)) is not None:
                self.rss.append({"t": t, "name": p.name, "kib": kib})
        if (kib := rss_kib(os.getpid())) is not None:
            self.rss.append({"t": t, "name": "soak (clients, balancer)", "kib": kib})

    # -- stopping ------------------------------------------------------------------------

    async def close(self) -> None:
        if self.balancer is not None:
            await self.balancer.close()
        for p in self.processes():
            p.stop()
        if self.temporal is not None:
            self.temporal.stop()
        if self.postgres is not None and self._own_postgres:
            self.postgres.stop()
