"""The SQL side, written once: tables, dialects, and the drivers that run an operation.

An operation is a generator that yields ``Query`` values and receives their rows (after
httpx's auth flows); ``transact`` / ``transact_async`` run one in a transaction on a sync
or an async connection: the only code that differs between the two.

Tables (``prefix`` = the store's ``table`` argument; every key starts with ``owner``, so
a conversation id of another owner is another key, not a row a filter must skip)::

    {prefix}_conversations  (owner, conversation_id) -> created_ms, updated_ms
    {prefix}_branches       (owner, conversation_id, branch) -> parent, fork point,
                            length, revision, chain root, last link, signed head
    {prefix}_messages       (owner, conversation_id, branch, position) -> message text,
                            seal, link: the rows a branch stores itself (a branch at n
                            reads its first n messages from its parent: stored once)
    {prefix}_marks          (owner, conversation_id, branch, position) -> mark: every
                            64th row's link signed with its place and the branch's
                            erasure revision, so a page is verified without the rest
                            (``_pages``; no content)
    {prefix}_steps          (owner, conversation_id, branch, grid) -> start,
                            rechained, mark: a token budget's step point, recorded by
                            ``append(..., window=)`` for the next first load (``_window``)
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Awaitable, Callable, Generator
from contextlib import suppress
from typing import Any, Generic, TypeVar, cast

from attrs import frozen

from golem_shell._errors import UsageError
from golem_shell.store._errors import DuplicateKey, HistoryConflict

__all__ = [
    "Dialect",
    "Operation",
    "Query",
    "Row",
    "Steps",
    "dialect",
    "schema_steps",
    "take_locks",
    "transact",
    "transact_async",
]

T = TypeVar("T")
Row = tuple[Any, ...]

_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,48}")


@frozen
class Query:
    sql: str
    params: tuple[Any, ...] = ()
    batch: bool = False  # params is a tuple of parameter tuples: executemany


Steps = Generator[Query, list[Row], T]


@frozen
class Dialect:
    """One database's SQL for one set of tables; ``q`` formats a statement."""

    prefix: str
    postgres: bool

    @property
    def begin_read(self) -> str:
        """A read sees one snapshot in every statement (PostgreSQL's default, READ
        COMMITTED, takes a new one per statement: a load or verify running beside a
        write saw half of it). SQLite's read transaction in WAL mode is one snapshot."""
        return "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if self.postgres else "BEGIN"

    @property
    def begin_write(self) -> str:
        return "BEGIN" if self.postgres else "BEGIN IMMEDIATE"

    @property
    def for_update(self) -> str:
        return " FOR NO KEY UPDATE" if self.postgres else ""

    @property
    def after_erasure(self) -> tuple[Query, ...]:
        """Run after an erasure commits: PostgreSQL vacuums the tables (SQLite: none here;
        its store checkpoints the WAL without waiting for readers)."""
        if not self.postgres:
            return ()
        return self.vacuum(self.tables)

    def vacuum(self, tables: tuple[str, ...]) -> tuple[Query, ...]:
        """``after_erasure`` for these tables."""
        if not self.postgres:
            return ()
        return tuple(Query(f"VACUUM {t}") for t in tables)

    def q(self, sql: str, *params: Any) -> Query:
        return Query(_format(self.prefix, self.postgres, sql), params)

    def batch(self, sql: str, rows: tuple[tuple[Any, ...], ...]) -> Query:
        return Query(_format(self.prefix, self.postgres, sql), rows, batch=True)

    def owner_locks(self, owner: str, *, shared: bool = False) -> tuple[Query, ...]:
        """The PostgreSQL locks of a write to ``owner``'s conversations (SQLite: none, it
        has one writer), held to the end of the transaction.

        Two levels, always taken in this order: the store's lock, shared by every
        one-owner write (``every_owner_locks`` takes it alone), then the owner's lock:
        shared by appends (they race only on their branch row), exclusive for the writes
        that read or rewrite more than they lock row by row (branch, fork, erase, delete,
        prune, reencrypt). So an append acknowledged while a prune, a reencrypt or an
        erasure runs was made either before that one read or after it committed.
        """
        if not self.postgres:
            return ()
        kind = "_shared" if shared else ""
        return (
            Query("SELECT pg_advisory_xact_lock_shared(%s)", (_lock_key(f"{self.prefix}\x01"),)),
            Query(
                f"SELECT pg_advisory_xact_lock{kind}(%s)",
                (_lock_key(f"{self.prefix}\x00{owner}"),),
            ),
        )

    def every_owner_locks(self) -> tuple[Query, ...]:
        """The PostgreSQL lock of a write to every owner (prune, reencrypt without an
        owner): the store's lock, exclusive; it waits for every one-owner write."""
        if not self.postgres:
            return ()
        return (Query("SELECT pg_advisory_xact_lock(%s)", (_lock_key(f"{self.prefix}\x01"),)),)

    @property
    def tables(self) -> tuple[str, ...]:
        names = ("messages", "marks", "steps", "branches", "conversations")
        return tuple(f"{self.prefix}_{t}" for t in names)

    @property
    def schema(self) -> tuple[Query, ...]:
        big = "BIGINT" if self.postgres else "INTEGER"
        rowid = "" if self.postgres else " WITHOUT ROWID"
        statements = (
            "CREATE TABLE IF NOT EXISTS {C} (owner TEXT NOT NULL, conversation_id TEXT NOT NULL, "
            f"created_ms {big} NOT NULL, updated_ms {big} NOT NULL, "
            "PRIMARY KEY (owner, conversation_id))" + rowid,
            "CREATE INDEX IF NOT EXISTS {C}_updated ON {C} (owner, updated_ms)",
            "CREATE TABLE IF NOT EXISTS {B} (owner TEXT NOT NULL, conversation_id TEXT NOT NULL, "
            "branch TEXT NOT NULL, parent_conversation TEXT, parent_branch TEXT, "
            f"fork_at {big} NOT NULL, length {big} NOT NULL, revision {big} NOT NULL, "
            f"rechained {big} NOT NULL, root TEXT NOT NULL, link TEXT NOT NULL, "
            f"head TEXT NOT NULL, created_ms {big} NOT NULL, "
            "PRIMARY KEY (owner, conversation_id, branch), "
            "FOREIGN KEY (owner, conversation_id) REFERENCES {C} (owner, conversation_id), "
            "FOREIGN KEY (owner, parent_conversation, parent_branch) "
            "REFERENCES {B} (owner, conversation_id, branch))" + rowid,
            "CREATE INDEX IF NOT EXISTS {B}_parent ON {B} "
            "(owner, parent_conversation, parent_branch)",
            "CREATE TABLE IF NOT EXISTS {M} (owner TEXT NOT NULL, conversation_id TEXT NOT NULL, "
            f"branch TEXT NOT NULL, position {big} NOT NULL CHECK (position >= 0), "
            "message TEXT NOT NULL, seal TEXT NOT NULL, link TEXT NOT NULL, "
            "PRIMARY KEY (owner, conversation_id, branch, position), "
            "FOREIGN KEY (owner, conversation_id, branch) "
            "REFERENCES {B} (owner, conversation_id, branch))" + rowid,
            "CREATE TABLE IF NOT EXISTS {K} (owner TEXT NOT NULL, conversation_id TEXT NOT NULL, "
            f"branch TEXT NOT NULL, position {big} NOT NULL, mark TEXT NOT NULL, "
            "PRIMARY KEY (owner, conversation_id, branch, position))" + rowid,
            "CREATE TABLE IF NOT EXISTS {S} (owner TEXT NOT NULL, conversation_id TEXT NOT NULL, "
            f"branch TEXT NOT NULL, grid TEXT NOT NULL, start {big} NOT NULL, "
            f"rechained {big} NOT NULL, mark TEXT NOT NULL, "
            "PRIMARY KEY (owner, conversation_id, branch, grid))" + rowid,
        )
        queries = tuple(self.q(s) for s in statements)
        if self.postgres:  # concurrent CREATE ... IF NOT EXISTS can collide on the catalog
            return (Query("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self.prefix),)), *queries)
        return queries


def dialect(table: str, *, postgres: bool) -> Dialect:
    if not isinstance(table, str) or not _TABLE_NAME.fullmatch(table):
        raise UsageError(f"table name {table!r}: letters, digits and _ only (at most 49)")
    return Dialect(table, postgres)


@functools.lru_cache(maxsize=512)
def _format(prefix: str, postgres: bool, sql: str) -> str:
    text = sql.format(
        C=f"{prefix}_conversations", B=f"{prefix}_branches", M=f"{prefix}_messages",
        K=f"{prefix}_marks", S=f"{prefix}_steps",
    )  # fmt: skip
    return text.replace("?", "%s") if postgres else text


def schema_steps(d: Dialect) -> Steps[None]:
    """Create what is missing of the tables and indexes. On PostgreSQL nothing is run
    when all exist: ``CREATE INDEX IF NOT EXISTS`` takes a table lock even then, so a
    store opened beside a write in flight would wait for it, and every later write on
    the table would queue behind that wait."""
    if d.postgres:
        names = (*d.tables, f"{d.prefix}_conversations_updated", f"{d.prefix}_branches_parent")
        rows = yield Query(
            "SELECT COUNT(to_regclass(name)) FROM unnest(%s::text[]) AS name", (list(names),)
        )
        if rows and rows[0][0] == len(names):
            return
    for query in d.schema:  # noqa: UP028 (a tuple's iterator takes no send)
        yield query


def take_locks(queries: tuple[Query, ...]) -> Steps[None]:
    """Take ``owner_locks`` or ``every_owner_locks`` (nothing on SQLite)."""
    for query in queries:  # noqa: UP028 (a tuple's iterator takes no send)
        yield query


def _lock_key(text: str) -> int:
    """A PostgreSQL advisory lock key (a signed 64-bit integer) for ``text``."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), signed=True)


@frozen
class Operation(Generic[T]):
    """One transaction: its steps, whether it writes, whose length a lost race is about,
    and whether it takes content away (``erases``: after it commits, outside a
    transaction, PostgreSQL vacuums the tables here; the SQLite store checkpoints its
    WAL itself, without waiting for another connection's readers)."""

    steps: Callable[[Dialect], Steps[T]]
    write: bool = False
    guards: tuple[Callable[[Dialect], Steps[int]], HistoryConflict] | None = None
    erases: bool = False
    vacuum: tuple[str, ...] = ()  # the tables an erasure vacuums (default: the store's)


def transact(op: Operation[T], d: Dialect, execute: Callable[[Query], list[Row]]) -> T:
    execute(Query(d.begin_write if op.write else d.begin_read))
    try:
        steps = op.steps(d)
        try:
            query = next(steps)
            while True:
                query = steps.send(execute(query))
        except StopIteration as done:
            result = cast(T, done.value)
        execute(Query("COMMIT"))
    except DuplicateKey:
        execute(Query("ROLLBACK"))
        assert op.guards is not None, "only guarded operations race on a key"
        length_steps, conflict = op.guards
        actual = transact(Operation(length_steps), d, execute)
        raise _lost(conflict, actual) from None
    except BaseException:
        with suppress(Exception):
            execute(Query("ROLLBACK"))
        raise
    for query in _after(op, d):
        execute(query)
    return result


async def transact_async(
    op: Operation[T], d: Dialect, execute: Callable[[Query], Awaitable[list[Row]]]
) -> T:
    await execute(Query(d.begin_write if op.write else d.begin_read))
    try:
        steps = op.steps(d)
        try:
            query = next(steps)
            while True:
                query = steps.send(await execute(query))
        except StopIteration as done:
            result = cast(T, done.value)
        await execute(Query("COMMIT"))
    except DuplicateKey:
        await execute(Query("ROLLBACK"))
        assert op.guards is not None, "only guarded operations race on a key"
        length_steps, conflict = op.guards
        actual = await transact_async(Operation(length_steps), d, execute)
        raise _lost(conflict, actual) from None
    except BaseException:
        with suppress(Exception):
            await execute(Query("ROLLBACK"))
        raise
    for query in _after(op, d):
        await execute(query)
    return result


def _after(op: Operation[Any], d: Dialect) -> tuple[Query, ...]:
    if not op.erases:
        return ()
    return d.vacuum(op.vacuum) if op.vacuum else d.after_erasure


def _lost(conflict: HistoryConflict, actual: int) -> HistoryConflict:
    return HistoryConflict(
        conflict.conversation_id, conflict.expected_length, actual, conflict.branch
    )
