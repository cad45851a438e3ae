"""``SQLiteHistoryStore``: conversations in an SQLite file (or ``":memory:"``), stdlib only."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import TypeVar

from golem_core import SigningKeys
from golem_shell._errors import UsageError
from golem_shell.store._crypto import Cipher, EncryptionKeys, Sealer
from golem_shell.store._errors import DuplicateKey, HistoryStoreError
from golem_shell.store._methods import ErasableBlobs, StoreMethods, blob_stores
from golem_shell.store._rows import Config
from golem_shell.store._sql import Operation, Query, Row, dialect, schema_steps, transact

__all__ = ["SQLiteHistoryStore"]

T = TypeVar("T")


class SQLiteHistoryStore(StoreMethods):
    """Conversations in an SQLite database: a file (shared by processes) or ``":memory:"``.

    One connection per store, its operations serialized by a lock; the async methods run
    them in a worker thread. Several processes (or stores) may share one file: every
    write takes SQLite's write lock first (``BEGIN IMMEDIATE``) and waits up to
    ``timeout`` seconds for it. A file is put in WAL mode (readers do not wait for
    writers; processes opening a new file at once retry the switch within ``timeout``),
    with ``secure_delete`` on: erased and deleted content is overwritten, and a WAL
    checkpoint after each erasure takes it out of the log too. That checkpoint never
    waits: while another connection holds a read transaction (its snapshot may still
    need the old content) it cannot empty the log, and the store tries again after each
    later operation and on ``close`` until it can.

    Args:
        path: the database file, or ``":memory:"`` (the default: gone when closed).
        table: the prefix of the store's three tables (created if absent).
        timeout: seconds to wait for another writer's lock.
        signing_keys: the agent's signing keys (``golem_core`` provenance keys, newest
            first) for the hash chain and signed heads; without them the chain detects
            accidents, not an attacker (``verify`` says ``signed=False``).
        encryption: ``EncryptionKeys`` to encrypt message content at rest.
        clock: seconds since the epoch (``time.time``): conversation times, receipts.
        blobs: the blob stores of the durable runs of these conversations (a
            ``DurableAgent``'s or ``TemporalAgent``'s ``blobs``, ``SQLBlobs`` of DBOS's
            system database): ``erase``, ``delete`` and ``prune`` delete the touched
            conversations' durable run content there too (ADR 0152).

    Raises:
        HistoryStoreError: the database cannot be opened.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        table: str = "golem",
        timeout: float = 30.0,
        signing_keys: SigningKeys | None = None,
        encryption: EncryptionKeys | None = None,
        clock: Callable[[], float] = time.time,
        blobs: ErasableBlobs | Sequence[ErasableBlobs] | None = None,
    ) -> None:
        self._blobs = blob_stores(blobs)
        self._path = os.fspath(path)
        self._dialect = dialect(table, postgres=False)
        self._config = Config(Sealer(signing_keys), Cipher(encryption), clock)
        self._lock = threading.Lock()
        self._closed = False
        self._timeout_ms = int(timeout * 1000)
        self._checkpoint_due = False
        try:
            self._connection = sqlite3.connect(
                self._path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as e:
            raise HistoryStoreError(f"SQLite store {self._path!r}: {e}") from e
        try:
            self._execute(Query("PRAGMA foreign_keys = ON"))
            self._execute(Query("PRAGMA secure_delete = ON"))
            if self._path != ":memory:":
                self._wal(timeout)
            self._run(Operation(schema_steps, write=True))
        except BaseException:
            self._connection.close()
            raise

    def _wal(self, timeout: float) -> None:
        """Switch the file to WAL: SQLite answers "locked" at once, without waiting for
        its busy timeout, while another process is switching it: retry until ``timeout``."""
        deadline = time.monotonic() + timeout
        pause = 0.001
        while True:
            try:
                if self._connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                    return
                self._connection.execute("PRAGMA journal_mode = WAL").fetchall()
            except sqlite3.OperationalError as e:
                if e.sqlite_errorname not in ("SQLITE_BUSY", "SQLITE_LOCKED"):
                    raise HistoryStoreError(f"SQLite store {self._path!r}: {e}") from e
                if time.monotonic() > deadline:
                    raise HistoryStoreError(f"SQLite store {self._path!r}: {e}") from e
                time.sleep(pause)
                pause = min(pause * 2, 0.05)

    def __repr__(self) -> str:
        return f"SQLiteHistoryStore({self._path!r})"

    def _execute(self, query: Query) -> list[Row]:
        try:
            if query.batch:
                self._connection.executemany(query.sql, query.params)
                return []
            return self._connection.execute(query.sql, query.params).fetchall()
        except sqlite3.IntegrityError as e:
            if e.sqlite_errorname == "SQLITE_CONSTRAINT_PRIMARYKEY":
                raise DuplicateKey from e
            raise HistoryStoreError(f"SQLite store {self._path!r}: {e}") from e
        except sqlite3.Error as e:
            raise HistoryStoreError(f"SQLite store {self._path!r}: {e}") from e

    def _run(self, op: Operation[T]) -> T:
        with self._lock:
            if self._closed:
                raise UsageError(f"{self!r} is closed")
            try:
                result = transact(op, self._dialect, self._execute)
            finally:
                if self._connection.in_transaction:  # a failed ROLLBACK: never carry it on
                    with suppress(sqlite3.Error):
                        self._connection.rollback()
            self._checkpoint_due |= op.erases
            if self._checkpoint_due:
                self._checkpoint()
            return result

    def _checkpoint(self) -> None:
        """Empty the WAL (``TRUNCATE``) so erased content leaves the log file, without
        waiting: SQLite's checkpoint would wait the whole busy timeout for another
        connection's read transaction. When it cannot finish now, it stays due."""
        if self._path == ":memory:":
            self._checkpoint_due = False
            return
        connection = self._connection
        try:
            connection.execute("PRAGMA busy_timeout = 0")
            try:
                busy = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                connection.execute(f"PRAGMA busy_timeout = {self._timeout_ms}")
        except sqlite3.Error:
            busy = 1  # locked by another writer: due still
        self._checkpoint_due = bool(busy)

    async def _run_async(self, op: Operation[T]) -> T:
        return await asyncio.to_thread(self._run, op)

    def close(self) -> None:
        """Close the connection (a ``":memory:"`` database is gone); the store is done."""
        with self._lock:
            if not self._closed and self._checkpoint_due:
                self._checkpoint()
            self._closed = True
            self._connection.close()

    async def aclose(self) -> None:
        """``close``, for ``async with``."""
        self.close()
