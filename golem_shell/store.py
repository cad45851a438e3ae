"""Stored conversations: append-only history in SQLite or PostgreSQL, with compare-and-set.

Owns ``HistoryStore`` (the protocol), ``SQLiteHistoryStore`` (stdlib ``sqlite3``, the
default: a file, or ``":memory:"``) and ``PostgresHistoryStore`` (``psycopg`` 3, the
``postgres`` extra), and the errors they raise. A store is not a session: the agent never
reads it; the application wires it around a run in three lines::

    history = await store.load(cid)
    result = await agent.run_with_history(history, prompt, conversation_id=cid)
    await store.append(cid, result.new_messages, expected_length=len(history))

Rows are append-only, one per message, keyed by (conversation id, position), each holding
the message's bytes in golem's JSON contract (``golem_core.encode_message``), so fields
written by a newer golem survive. ``append`` is a compare-and-set on the conversation's
length: of two runs that loaded the same history, one appends and the other gets
``HistoryConflict`` (naming the conversation, the expected and the actual length) with
nothing written; it reloads and decides. The primary key makes this race-safe on
PostgreSQL (a second insert at a taken position fails and its transaction rolls back);
SQLite takes its write lock first (``BEGIN IMMEDIATE``), across processes too.

The logic is written once, as generators that yield SQL and receive rows (after httpx's
auth flows); thin drivers run them on a sync or an async connection, so every method has
an async form for async code and a ``_sync`` twin (``load``/``load_sync``, ...).

Errors::

    GolemError
    └── HistoryStoreError        the database failed or refused (the driver's error chained)
        ├── HistoryConflict      append/fork lost a compare-and-set; nothing was written
        └── CorruptHistoryError  a stored row no longer decodes (or a position is missing)

Misuse (an empty conversation id, a negative length, a fork past the end, psycopg
missing) raises ``UsageError``.
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import threading
import weakref
import zlib
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import suppress
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

from attrs import frozen
from returns.result import Failure, Success

from golem_core import Message, decode_message, encode_message
from golem_shell._errors import GolemError, UsageError

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "CorruptHistoryError",
    "HistoryConflict",
    "HistoryStore",
    "HistoryStoreError",
    "PostgresHistoryStore",
    "SQLiteHistoryStore",
]

T = TypeVar("T")
Row = tuple[Any, ...]


# -- errors -----------------------------------------------------------------------------


class HistoryStoreError(GolemError):
    """A history store failed: the database refused, or could not be reached."""


class HistoryConflict(HistoryStoreError):
    """An append (or fork) lost a compare-and-set: the conversation is not as long as expected.

    Nothing was written. Load the conversation again and decide (rerun, merge, give up).
    """

    def __init__(self, conversation_id: str, expected_length: int, actual_length: int) -> None:
        self.conversation_id = conversation_id
        self.expected_length = expected_length
        self.actual_length = actual_length
        super().__init__(
            f"conversation {conversation_id!r} has {_messages(actual_length)}, expected "
            f"{expected_length}: another writer got there first; nothing was written "
            "(load it again and retry)"
        )


def _messages(n: int) -> str:
    return f"{n} message" if n == 1 else f"{n} messages"


class CorruptHistoryError(HistoryStoreError):
    """A stored row no longer decodes, or a position is missing; names both."""

    def __init__(self, conversation_id: str, position: int, reason: str) -> None:
        self.conversation_id = conversation_id
        self.position = position
        self.reason = reason
        super().__init__(
            f"conversation {conversation_id!r}, position {position}: cannot load: {reason}"
        )


class _DuplicateKey(Exception):
    """Internal: an insert hit a taken (conversation, position): a lost race."""


# -- the protocol -------------------------------------------------------------------------


class HistoryStore(Protocol):
    """Where conversations live: append-only, with compare-and-set appends.

    Every method has an async form and a ``_sync`` twin for code without an event loop.
    """

    async def load(self, conversation_id: str) -> tuple[Message, ...]:
        """The stored conversation, oldest first (``()`` when there is none)."""
        ...

    async def append(
        self, conversation_id: str, messages: Sequence[Message], expected_length: int
    ) -> int:
        """Append if the conversation has exactly ``expected_length`` messages; the new length."""
        ...

    async def fork(self, conversation_id: str, at: int, new_id: str) -> None:
        """Start ``new_id`` as a copy of the first ``at`` messages of ``conversation_id``."""
        ...

    async def list_conversations(self) -> tuple[str, ...]:
        """The ids of the stored (non-empty) conversations, sorted."""
        ...

    def load_sync(self, conversation_id: str) -> tuple[Message, ...]:
        """``load`` for code without an event loop."""
        ...

    def append_sync(
        self, conversation_id: str, messages: Sequence[Message], expected_length: int
    ) -> int:
        """``append`` for code without an event loop."""
        ...

    def fork_sync(self, conversation_id: str, at: int, new_id: str) -> None:
        """``fork`` for code without an event loop."""
        ...

    def list_conversations_sync(self) -> tuple[str, ...]:
        """``list_conversations`` for code without an event loop."""
        ...


# -- the logic, written once: generators that yield SQL and receive rows -------------------


@frozen
class _Query:
    sql: str
    params: tuple[Any, ...] = ()
    batch: bool = False  # params is a tuple of parameter tuples: executemany


_Steps = Generator[_Query, list[Row], T]

_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


@frozen
class _Dialect:
    """The SQL of one database for one table."""

    begin_read: str
    begin_write: str
    schema: tuple[_Query, ...]
    length: str
    rows: str
    insert: str
    copy: str
    conversations: str


def _dialect(table: str, *, postgres: bool) -> _Dialect:
    if not isinstance(table, str) or not _TABLE_NAME.fullmatch(table):
        raise UsageError(f"table name {table!r}: letters, digits and _ only (at most 63)")
    p = "%s" if postgres else "?"
    create = (
        f"CREATE TABLE IF NOT EXISTS {table} ("
        "conversation_id TEXT NOT NULL, "
        "position INTEGER NOT NULL CHECK (position >= 0), "
        "message TEXT NOT NULL, "
        "PRIMARY KEY (conversation_id, position))"
    )
    schema = (
        # concurrent CREATE TABLE IF NOT EXISTS can collide on PostgreSQL's catalog
        (_Query("SELECT pg_advisory_xact_lock(%s)", (zlib.crc32(table.encode()),)), _Query(create))
        if postgres
        else (_Query(create + " WITHOUT ROWID"),)
    )
    return _Dialect(
        begin_read="BEGIN",
        begin_write="BEGIN" if postgres else "BEGIN IMMEDIATE",
        schema=schema,
        length=f"SELECT COALESCE(MAX(position) + 1, 0) FROM {table} WHERE conversation_id = {p}",
        rows=f"SELECT position, message FROM {table} WHERE conversation_id = {p} ORDER BY position",
        insert=f"INSERT INTO {table} (conversation_id, position, message) VALUES ({p}, {p}, {p})",
        copy=(
            f"INSERT INTO {table} (conversation_id, position, message) "
            f"SELECT CAST({p} AS TEXT), position, message FROM {table} "
            f"WHERE conversation_id = {p} AND position < {p}"
        ),
        conversations=f"SELECT DISTINCT conversation_id FROM {table} ORDER BY conversation_id",
    )


@frozen
class _Operation(Generic[T]):
    """One transaction: its steps, whether it writes, and whose length a lost race is about."""

    steps: Callable[[_Dialect], _Steps[T]]
    write: bool = False
    guards: tuple[str, int] | None = None  # (conversation, expected length)


def _schema_steps(d: _Dialect) -> _Steps[None]:
    for query in d.schema:  # noqa: UP028 (a tuple's iterator takes no send)
        yield query


def _length_steps(d: _Dialect, conversation_id: str) -> _Steps[int]:
    rows = yield _Query(d.length, (conversation_id,))
    return int(rows[0][0])


def _decode_rows(conversation_id: str, rows: Sequence[Row]) -> tuple[Message, ...]:
    messages: list[Message] = []
    for index, (position, data) in enumerate(rows):
        if position != index:
            raise CorruptHistoryError(
                conversation_id, index, f"no row at this position (the next is {position})"
            )
        if isinstance(data, memoryview):
            data = bytes(data)
        if not isinstance(data, str | bytes):
            raise CorruptHistoryError(
                conversation_id, index, f"stored value is {type(data).__name__}, not JSON text"
            )
        match decode_message(data):
            case Success(message):
                messages.append(message)
            case Failure(error):
                raise CorruptHistoryError(conversation_id, index, error.message)
    return tuple(messages)


def _load_op(conversation_id: str) -> _Operation[tuple[Message, ...]]:
    _check_id("conversation_id", conversation_id)

    def steps(d: _Dialect) -> _Steps[tuple[Message, ...]]:
        rows = yield _Query(d.rows, (conversation_id,))
        return _decode_rows(conversation_id, rows)

    return _Operation(steps)


def _append_op(
    conversation_id: str, messages: Sequence[Message], expected_length: int
) -> _Operation[int]:
    _check_id("conversation_id", conversation_id)
    _check_length("expected_length", expected_length)
    if isinstance(messages, Message | str | bytes) or not isinstance(messages, Sequence):
        raise UsageError(f"messages must be a sequence of Message, got {type(messages).__name__}")
    for index, message in enumerate(messages):
        if not isinstance(message, Message):
            raise UsageError(f"messages[{index}] is {type(message).__name__}, not a Message")
    rows = tuple(
        (conversation_id, expected_length + i, encode_message(m).decode("utf-8"))
        for i, m in enumerate(messages)
    )

    def steps(d: _Dialect) -> _Steps[int]:
        actual = yield from _length_steps(d, conversation_id)
        if actual != expected_length:
            raise HistoryConflict(conversation_id, expected_length, actual)
        if rows:
            yield _Query(d.insert, rows, batch=True)
        return expected_length + len(rows)

    return _Operation(steps, write=True, guards=(conversation_id, expected_length))


def _fork_op(conversation_id: str, at: int, new_id: str) -> _Operation[None]:
    _check_id("conversation_id", conversation_id)
    _check_id("new_id", new_id)
    _check_length("at", at)
    if new_id == conversation_id:
        raise UsageError(f"cannot fork conversation {conversation_id!r} into itself")

    def steps(d: _Dialect) -> _Steps[None]:
        length = yield from _length_steps(d, conversation_id)
        if at > length:
            raise UsageError(
                f"cannot fork conversation {conversation_id!r} at {at}: it has {_messages(length)}"
            )
        existing = yield from _length_steps(d, new_id)
        if existing:
            raise HistoryConflict(new_id, 0, existing)
        if at:
            yield _Query(d.copy, (new_id, conversation_id, at))

    return _Operation(steps, write=True, guards=(new_id, 0))


def _list_op() -> _Operation[tuple[str, ...]]:
    def steps(d: _Dialect) -> _Steps[tuple[str, ...]]:
        rows = yield _Query(d.conversations)
        return tuple(str(row[0]) for row in rows)

    return _Operation(steps)


def _check_id(name: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise UsageError(f"{name} must be a non-empty string, got {value!r}")


def _check_length(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{name} must be an int >= 0, got {value!r}")


# -- the drivers: the only code that differs between sync and async -------------------------


def _transact(op: _Operation[T], d: _Dialect, execute: Callable[[_Query], list[Row]]) -> T:
    execute(_Query(d.begin_write if op.write else d.begin_read))
    try:
        steps = op.steps(d)
        try:
            query = next(steps)
            while True:
                query = steps.send(execute(query))
        except StopIteration as done:
            result = cast(T, done.value)
        execute(_Query("COMMIT"))
        return result
    except _DuplicateKey:
        execute(_Query("ROLLBACK"))
        assert op.guards is not None, "only guarded operations insert"
        conversation_id, expected = op.guards
        actual = _transact(_Operation(lambda d: _length_steps(d, conversation_id)), d, execute)
        raise HistoryConflict(conversation_id, expected, actual) from None
    except BaseException:
        with suppress(Exception):
            execute(_Query("ROLLBACK"))
        raise


async def _transact_async(
    op: _Operation[T], d: _Dialect, execute: Callable[[_Query], Awaitable[list[Row]]]
) -> T:
    await execute(_Query(d.begin_write if op.write else d.begin_read))
    try:
        steps = op.steps(d)
        try:
            query = next(steps)
            while True:
                query = steps.send(await execute(query))
        except StopIteration as done:
            result = cast(T, done.value)
        await execute(_Query("COMMIT"))
        return result
    except _DuplicateKey:
        await execute(_Query("ROLLBACK"))
        assert op.guards is not None, "only guarded operations insert"
        conversation_id, expected = op.guards
        length_op = _Operation(lambda d: _length_steps(d, conversation_id))
        actual = await _transact_async(length_op, d, execute)
        raise HistoryConflict(conversation_id, expected, actual) from None
    except BaseException:
        with suppress(Exception):
            await execute(_Query("ROLLBACK"))
        raise


class _StoreMethods:
    """The public methods, each one line over ``_run`` / ``_run_async``."""

    def _run(self, op: _Operation[T]) -> T:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _run_async(self, op: _Operation[T]) -> T:
        raise NotImplementedError

    async def load(self, conversation_id: str) -> tuple[Message, ...]:
        """The stored conversation, oldest first (``()`` when there is none).

        Raises:
            CorruptHistoryError: a row no longer decodes; names conversation and position.
            HistoryStoreError: the database failed.
        """
        return await self._run_async(_load_op(conversation_id))

    async def append(
        self, conversation_id: str, messages: Sequence[Message], expected_length: int
    ) -> int:
        """Append ``messages`` if the conversation has exactly ``expected_length`` messages.

        Args:
            conversation_id: the conversation (created by its first append).
            messages: what to add, e.g. a run's ``new_messages``.
            expected_length: how long the caller saw it, e.g. ``len(history)`` as loaded.

        Returns:
            The conversation's new length.

        Raises:
            HistoryConflict: it is not ``expected_length`` long (another writer appended);
                nothing was written.
            HistoryStoreError: the database failed; nothing was written.
        """
        return await self._run_async(_append_op(conversation_id, messages, expected_length))

    async def fork(self, conversation_id: str, at: int, new_id: str) -> None:
        """Start ``new_id`` with the first ``at`` messages of ``conversation_id``, verbatim.

        Messages keep their stamps (run and conversation ids, signatures); run the fork
        with ``conversation_id=new_id`` so what it adds is stamped with the new id.

        Raises:
            HistoryConflict: ``new_id`` already holds messages.
            UsageError: ``at`` is past the end of ``conversation_id``.
        """
        return await self._run_async(_fork_op(conversation_id, at, new_id))

    async def list_conversations(self) -> tuple[str, ...]:
        """The ids of the stored conversations (those with at least one message), sorted."""
        return await self._run_async(_list_op())

    def load_sync(self, conversation_id: str) -> tuple[Message, ...]:
        """``load`` for code without an event loop."""
        return self._run(_load_op(conversation_id))

    def append_sync(
        self, conversation_id: str, messages: Sequence[Message], expected_length: int
    ) -> int:
        """``append`` for code without an event loop."""
        return self._run(_append_op(conversation_id, messages, expected_length))

    def fork_sync(self, conversation_id: str, at: int, new_id: str) -> None:
        """``fork`` for code without an event loop."""
        return self._run(_fork_op(conversation_id, at, new_id))

    def list_conversations_sync(self) -> tuple[str, ...]:
        """``list_conversations`` for code without an event loop."""
        return self._run(_list_op())


# -- SQLite -------------------------------------------------------------------------------


class SQLiteHistoryStore(_StoreMethods):
    """Conversations in an SQLite database: a file (shared by processes) or ``":memory:"``.

    One connection per store, its operations serialized by a lock; the async methods run
    them in a worker thread. Several processes (or several stores) may share one file:
    every write takes SQLite's write lock first (``BEGIN IMMEDIATE``) and waits up to
    ``timeout`` seconds for it. A file is put in WAL mode, so readers do not wait for
    writers.

    Args:
        path: the database file, or ``":memory:"`` (the default: gone when closed).
        table: the table's name (created if absent).
        timeout: seconds to wait for another writer's lock.

    Raises:
        HistoryStoreError: the database cannot be opened.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        table: str = "golem_messages",
        timeout: float = 30.0,
    ) -> None:
        self._path = os.fspath(path)
        self._dialect = _dialect(table, postgres=False)
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._connection = sqlite3.connect(
                self._path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as e:
            raise HistoryStoreError(f"SQLite store {self._path!r}: {e}") from e
        try:
            if self._path != ":memory:":
                self._execute(_Query("PRAGMA journal_mode=WAL"))
            self._run(_Operation(_schema_steps, write=True))
        except BaseException:
            self._connection.close()
            raise

    def __repr__(self) -> str:
        return f"SQLiteHistoryStore({self._path!r})"

    def _execute(self, query: _Query) -> list[Row]:
        try:
            if query.batch:
                self._connection.executemany(query.sql, query.params)
                return []
            return self._connection.execute(query.sql, query.params).fetchall()
        except sqlite3.IntegrityError as e:
            if e.sqlite_errorname == "SQLITE_CONSTRAINT_PRIMARYKEY":
                raise _DuplicateKey from e
            raise HistoryStoreError(f"SQLite store {self._path!r}: {e}") from e
        except sqlite3.Error as e:
            raise HistoryStoreError(f"SQLite store {self._path!r}: {e}") from e

    def _run(self, op: _Operation[T]) -> T:
        with self._lock:
            if self._closed:
                raise UsageError(f"{self!r} is closed")
            try:
                return _transact(op, self._dialect, self._execute)
            finally:
                if self._connection.in_transaction:  # a failed ROLLBACK: never carry it on
                    with suppress(sqlite3.Error):
                        self._connection.rollback()

    async def _run_async(self, op: _Operation[T]) -> T:
        return await asyncio.to_thread(self._run, op)

    def close(self) -> None:
        """Close the connection (a ``":memory:"`` database is gone); the store is done."""
        with self._lock:
            self._closed = True
            self._connection.close()

    async def aclose(self) -> None:
        """``close``, for ``async with``."""
        self.close()


# -- PostgreSQL -----------------------------------------------------------------------------


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as e:
        raise UsageError(
            "PostgresHistoryStore needs psycopg 3: pip install 'golem[postgres]'"
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


class PostgresHistoryStore(_StoreMethods):
    """Conversations in PostgreSQL, for many workers (needs ``pip install 'golem[postgres]'``).

    The store opens its connections when first used (``autocommit``; each operation is
    one explicit transaction): one for the sync methods, and one per event loop for the
    async methods; a store's operations on each are serialized. The table is created if
    absent. The compare-and-set is race-safe by the primary key: of two appends at the
    same position the second's insert fails, its transaction rolls back, and it raises
    ``HistoryConflict``.

    Args:
        url: a libpq connection string or URL (``postgresql://user:pw@host/db``); the
            password never appears in a message or repr.
        table: the table's name.

    Raises:
        UsageError: psycopg is not installed.
    """

    def __init__(self, url: str, *, table: str = "golem_messages") -> None:
        _psycopg()
        if not isinstance(url, str) or not url:
            raise UsageError(f"url must be a non-empty connection string, got {url!r}")
        self._url = url
        self._where = _redact(url)
        self._dialect = _dialect(table, postgres=True)
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
            return _DuplicateKey()
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
            _transact(
                _Operation(_schema_steps, write=True), self._dialect, self._executor(connection)
            )
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    def _executor(self, connection: psycopg.Connection[Any]) -> Callable[[_Query], list[Row]]:
        pg = _psycopg()

        def execute(query: _Query) -> list[Row]:
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

    def _run(self, op: _Operation[T]) -> T:
        with self._lock:
            connection = self._sync_connection()
            try:
                return _transact(op, self._dialect, self._executor(connection))
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
            await _transact_async(
                _Operation(_schema_steps, write=True),
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
    ) -> Callable[[_Query], Awaitable[list[Row]]]:
        pg = _psycopg()

        async def execute(query: _Query) -> list[Row]:
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

    async def _run_async(self, op: _Operation[T]) -> T:
        loop = asyncio.get_running_loop()
        slot = self._slots.get(loop)
        if slot is None:
            slot = self._slots[loop] = _AsyncSlot()
        async with slot.lock:
            connection = await self._async_connection(slot)
            try:
                return await _transact_async(op, self._dialect, self._async_executor(connection))
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
