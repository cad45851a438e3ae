"""``PostgresHistoryStore``: conversations in PostgreSQL via psycopg 3 (``postgres`` extra)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from golem_core import SigningKeys
from golem_shell._errors import UsageError
from golem_shell.store._crypto import Cipher, EncryptionKeys, Sealer
from golem_shell.store._errors import DuplicateKey, HistoryStoreError
from golem_shell.store._methods import ErasableBlobs, StoreMethods, blob_stores
from golem_shell.store._rows import Config
from golem_shell.store._sql import (
    Operation,
    Query,
    Row,
    dialect,
    schema_steps,
    transact,
    transact_async,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresHistoryStore"]

T = TypeVar("T")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as e:
        raise UsageError(
            "PostgresHistoryStore needs psycopg 3: pip install 'golem-agents[postgres]'"
            " (or 'psycopg[binary]')"
        ) from e
    return psycopg


def _redact(url: str) -> str:
    """``url`` without its password, for messages and reprs."""
    if "://" in url:
        parts = urlsplit(url)
        if parts.password is not None:
            host = parts.netloc.rsplit("@", 1)[-1]
            user = parts.username or ""
            return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
        return url
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", url)


def _in_transaction(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether a failed ROLLBACK (a cancellation, a lost server) left a transaction open."""
    return bool(connection.info.transaction_status != _psycopg().pq.TransactionStatus.IDLE)


class _AsyncSlot:
    """One event loop's connection and the lock that serializes its operations."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.connection: psycopg.AsyncConnection[Any] | None = None


class PostgresHistoryStore(StoreMethods):
    """Conversations in PostgreSQL, for many workers (the ``postgres`` extra).

    The store opens its connections when first used (``autocommit``; each operation is
    one explicit transaction): one for the sync methods, and one per event loop for the
    async methods; a store's operations on each are serialized. The table is created if
    absent. The compare-and-set locks the branch row (``FOR UPDATE``) before reading its
    length; two first appends to a new conversation race on the branch row's primary
    key, and the loser's transaction rolls back with ``HistoryConflict``. Structural
    writes (branch, fork, erase, delete) also take a per-owner advisory lock.

    Args:
        url: a libpq connection string or URL (``postgresql://user:pw@host/db``); the
            password never appears in a message or repr.
        table: the prefix of the store's three tables.
        signing_keys: the agent's signing keys for the hash chain and signed heads.
        encryption: ``EncryptionKeys`` to encrypt message content at rest.
        clock: seconds since the epoch (``time.time``): conversation times, receipts.
        blobs: the blob stores of the durable runs of these conversations (a
            ``DurableAgent``'s or ``TemporalAgent``'s ``blobs``, ``SQLBlobs`` of DBOS's
            system database): ``erase``, ``delete`` and ``prune`` delete the touched
            conversations' durable run content there too (ADR 0152).

    Raises:
        UsageError: psycopg is not installed.
    """

    def __init__(
        self,
        url: str,
        *,
        table: str = "golem",
        signing_keys: SigningKeys | None = None,
        encryption: EncryptionKeys | None = None,
        clock: Callable[[], float] = time.time,
        blobs: ErasableBlobs | Sequence[ErasableBlobs] | None = None,
    ) -> None:
        _psycopg()
        if not isinstance(url, str) or not url:
            raise UsageError(f"url must be a non-empty connection string, got {url!r}")
        self._blobs = blob_stores(blobs)
        self._url = url
        self._where = _redact(url)
        self._dialect = dialect(table, postgres=True)
        self._config = Config(Sealer(signing_keys), Cipher(encryption), clock)
        self._lock = threading.Lock()
        self._connection: psycopg.Connection[Any] | None = None
        self._closed = False
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AsyncSlot] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"PostgresHistoryStore({self._where!r})"

    def _failed(self, e: Exception) -> Exception:
        """The one place a psycopg error is translated."""
        if isinstance(e, _psycopg().errors.UniqueViolation):
            return DuplicateKey()
        return HistoryStoreError(f"PostgreSQL store {self._where}: {e}")

    # sync

    def _sync_connection(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise UsageError(f"{self!r} is closed")
        if self._connection is not None and not self._connection.closed:
            return self._connection
        pg = _psycopg()
        try:
            connection: psycopg.Connection[Any] = pg.Connection.connect(self._url, autocommit=True)
        except pg.Error as e:
            raise HistoryStoreError(f"PostgreSQL store {self._where}: {e}") from None
        try:
            transact(Operation(schema_steps, write=True), self._dialect, self._executor(connection))
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    def _executor(self, connection: psycopg.Connection[Any]) -> Callable[[Query], list[Row]]:
        pg = _psycopg()

        def execute(query: Query) -> list[Row]:
            try:
                with connection.cursor() as cursor:
                    if query.batch:
                        cursor.executemany(query.sql, query.params)
                        return []
                    cursor.execute(query.sql, query.params)
                    return cursor.fetchall() if cursor.description is not None else []
            except pg.Error as e:
                raise self._failed(e) from e

        return execute

    def _run(self, op: Operation[T]) -> T:
        with self._lock:
            connection = self._sync_connection()
            try:
                return transact(op, self._dialect, self._executor(connection))
            finally:
                if connection.broken or _in_transaction(connection):
                    connection.close()  # never reuse a connection left inside a transaction

    # async

    async def _async_connection(self, slot: _AsyncSlot) -> psycopg.AsyncConnection[Any]:
        if self._closed:
            raise UsageError(f"{self!r} is closed")
        if slot.connection is not None and not slot.connection.closed:
            return slot.connection
        pg = _psycopg()
        try:
            connection: psycopg.AsyncConnection[Any] = await pg.AsyncConnection.connect(
                self._url, autocommit=True
            )
        except pg.Error as e:
            raise HistoryStoreError(f"PostgreSQL store {self._where}: {e}") from None
        try:
            await transact_async(
                Operation(schema_steps, write=True),
                self._dialect,
                self._async_executor(connection),
            )
        except BaseException:
            await connection.close()
            raise
        slot.connection = connection
        return connection

    def _async_executor(
        self, connection: psycopg.AsyncConnection[Any]
    ) -> Callable[[Query], Awaitable[list[Row]]]:
        pg = _psycopg()

        async def execute(query: Query) -> list[Row]:
            try:
                async with connection.cursor() as cursor:
                    if query.batch:
                        await cursor.executemany(query.sql, query.params)
                        return []
                    await cursor.execute(query.sql, query.params)
                    return await cursor.fetchall() if cursor.description is not None else []
            except pg.Error as e:
                raise self._failed(e) from e

        return execute

    async def _run_async(self, op: Operation[T]) -> T:
        loop = asyncio.get_running_loop()
        slot = self._slots.get(loop)
        if slot is None:
            slot = self._slots[loop] = _AsyncSlot()
        async with slot.lock:
            connection = await self._async_connection(slot)
            try:
                return await transact_async(op, self._dialect, self._async_executor(connection))
            finally:
                if connection.broken or _in_transaction(connection):
                    await connection.close()  # never reuse one left inside a transaction

    # lifecycle

    def close(self) -> None:
        """Close the sync methods' connection; the store is done.

        An async connection is closed by ``aclose`` (this event loop's) or, for other
        event loops, when it is garbage collected.
        """
        with self._lock:
            self._closed = True
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    async def aclose(self) -> None:
        """Close this event loop's connection and the sync one; the store is done."""
        self._closed = True
        slot = self._slots.get(asyncio.get_running_loop())
        if slot is not None and slot.connection is not None:
            async with slot.lock:
                await slot.connection.close()
                slot.connection = None
        self.close()
