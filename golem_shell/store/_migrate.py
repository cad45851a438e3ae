"""Stores written by golem 0.2 (one table, no owners) moved into today's tables.

Owns ``migrate_store`` and its report, ``StoreMigration``; ``golem migrate-store`` is the
same function on the command line. golem 0.2 kept every message in one table (default
``golem_messages``: ``conversation_id, position, message``) with no owner; 0.3 (ADR 0070)
keys three tables by owner, and its default messages table has the same name, so a 0.3
store opened on a 0.2 database reads nothing and fails on its first append ("table
golem_messages has no column named owner").

The migration, in this order, and safe to run again after any failure:

1. reads every 0.2 conversation and decodes every row; a missing position or a row that
   no longer decodes is a ``CorruptHistoryError`` naming the conversation and position,
   and nothing is changed;
2. renames the 0.2 table to ``<table>_v02`` when today's tables would take its name
   (it is kept, never deleted: drop it once you have checked the result);
3. appends each conversation, as branch ``main`` under its owner, through today's store
   (so the rows get today's chain, signed heads and encryption when keys are given).
   A conversation already there with the same messages (a previous run) is skipped; one
   there with other messages is left alone, and named in a ``HistoryStoreError`` raised
   once the rest are moved.

A 0.2 ``fork`` copied rows, so a fork moves as a conversation of its own (no shared
prefix). The messages are decoded and encoded again by today's codec; the contract is
additive, so unknown fields and 0.2's ``v1`` signatures are kept as they were.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable
from typing import Any

from attrs import frozen
from returns.result import Failure, Success

from golem_core import Message, SigningKeys, decode_message, encode_message
from golem_shell._errors import UsageError
from golem_shell.store._crypto import EncryptionKeys
from golem_shell.store._errors import (
    CorruptHistoryError,
    HistoryStoreError,
    check_id,
)
from golem_shell.store._postgres import PostgresHistoryStore
from golem_shell.store._sqlite import SQLiteHistoryStore

__all__ = ["OLD_TABLE", "StoreMigration", "migrate_store"]

OLD_TABLE = "golem_messages"
"""golem 0.2's default table name (``SQLiteHistoryStore(table=...)`` then)."""

_KEPT_SUFFIX = "_v02"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_OLD_COLUMNS = frozenset({"conversation_id", "position", "message"})
_MAX_LISTED = 10

Owner = str | Callable[[str], str]


@frozen(kw_only=True)
class StoreMigration:
    """What ``migrate_store`` did.

    Args:
        database: the database, as given (a PostgreSQL URL without its password).
        kept_as: the table that holds the 0.2 rows now (renamed or not; never deleted).
        conversations: ``(owner, conversation id)`` of each conversation moved by this run.
        messages: how many messages this run moved.
        skipped: ``(owner, conversation id)`` already moved by an earlier run, unchanged.
    """

    database: str
    kept_as: str
    conversations: tuple[tuple[str, str], ...]
    messages: int
    skipped: tuple[tuple[str, str], ...]


def migrate_store(
    database: str | os.PathLike[str],
    *,
    owner: Owner,
    table: str = OLD_TABLE,
    prefix: str = "golem",
    signing_keys: SigningKeys | None = None,
    encryption: EncryptionKeys | None = None,
) -> StoreMigration:
    """Move the conversations of a golem 0.2 store into today's tables, under ``owner``.

    Args:
        database: an SQLite file, or a PostgreSQL URL (``postgresql://...``).
        owner: the owner every conversation moves to, or a function from a conversation
            id to its owner (0.2 had no owners; an application that put the user in the
            id can split it here).
        table: the 0.2 table (its ``table=`` argument then; default ``golem_messages``).
        prefix: today's table prefix (the store's ``table=`` argument now).
        signing_keys: the keys today's store will be opened with, if any (the moved rows
            are chained and their heads signed with them).
        encryption: the store's encryption keys, if it encrypts at rest.

    Returns:
        What was moved and what was already there.

    Raises:
        UsageError: a bad argument, no 0.2 table of that name, an owner or conversation
            id today's store cannot hold (listed, before anything is changed).
        CorruptHistoryError: a 0.2 row that does not decode or a missing position
            (listed, before anything is changed).
        HistoryStoreError: the database failed, or conversations already stored with
            other messages (listed, left alone; the others were moved).
    """
    if not isinstance(table, str) or not _NAME.fullmatch(table):
        raise UsageError(f"table {table!r}: letters, digits and _ only (at most 63)")
    if len(table) + len(_KEPT_SUFFIX) > 63:
        raise UsageError(f"table {table!r}: at most {63 - len(_KEPT_SUFFIX)} characters")
    if not (isinstance(owner, str) or callable(owner)):
        raise UsageError(f"owner must be a string or a function of the conversation id: {owner!r}")
    target = os.fspath(database)
    if not isinstance(target, str) or not target:
        raise UsageError(f"database must be a file path or a PostgreSQL URL, got {database!r}")
    postgres = target.startswith(("postgresql://", "postgres://"))
    new_tables = {f"{prefix}_{t}" for t in ("messages", "branches", "conversations")}
    with _Old.open(target, postgres) as old:
        source = old.find(table)
        if source is None:
            raise UsageError(
                f"{old.name}: no golem 0.2 table {table!r} (nor {table + _KEPT_SUFFIX!r}) "
                "with columns conversation_id, position, message"
            )
        owners = _check(old, source, owner)
        if source in new_tables:
            source = old.rename(source, source + _KEPT_SUFFIX)
        store = _open_store(target, postgres, prefix, signing_keys, encryption)
        with store:
            return _move(old, source, owners, store)


class _Old:
    """A plain connection to the database, for the 0.2 table (no store methods)."""

    def __init__(self, connection: Any, postgres: bool, name: str) -> None:
        self._connection = connection
        self._postgres = postgres
        self.name = name

    @classmethod
    def open(cls, target: str, postgres: bool) -> _Old:
        if postgres:
            try:
                import psycopg
            except ImportError as e:
                raise UsageError(
                    "a PostgreSQL store needs psycopg: pip install 'golem-agents[postgres]'"
                ) from e
            name = _redact(target)
            try:
                return cls(psycopg.connect(target, autocommit=True), True, name)
            except psycopg.Error as e:
                raise HistoryStoreError(f"PostgreSQL {name}: {e}") from e
        if target != ":memory:" and not os.path.isfile(target):
            raise UsageError(f"no SQLite database at {target!r}")
        try:
            return cls(sqlite3.connect(target, isolation_level=None), False, repr(target))
        except sqlite3.Error as e:
            raise HistoryStoreError(f"SQLite {target!r}: {e}") from e

    def __enter__(self) -> _Old:
        return self

    def __exit__(self, *exc: object) -> None:
        self._connection.close()

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        if self._postgres:
            sql = sql.replace("?", "%s")
        try:
            cursor = self._connection.execute(sql, params)
            return list(cursor.fetchall()) if cursor.description is not None else []
        except Exception as e:  # the driver's error, whichever driver
            raise HistoryStoreError(f"{self.name}: {e}") from e

    def columns(self, table: str) -> frozenset[str]:
        if self._postgres:
            found = self.rows(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = ?",
                table.lower(),  # unquoted names, as 0.2 wrote them, are folded
            )
            return frozenset(str(r[0]) for r in found)
        return frozenset(str(r[1]) for r in self.rows(f"PRAGMA table_info({table})"))

    def find(self, table: str) -> str | None:
        """The 0.2 table: ``table``, or ``table_v02`` if an earlier run renamed it."""
        for name in (table, table + _KEPT_SUFFIX):
            columns = self.columns(name)
            if columns >= _OLD_COLUMNS and "owner" not in columns:
                return name
        return None

    def conversation_ids(self, table: str) -> list[str]:
        return [
            str(r[0]) for r in self.rows(f"SELECT DISTINCT conversation_id FROM {table} ORDER BY 1")
        ]

    def messages(self, table: str, cid: str) -> tuple[Message, ...]:
        """The conversation's messages, or ``CorruptHistoryError`` at the first bad row."""
        found = self.rows(
            f"SELECT position, message FROM {table} WHERE conversation_id = ? ORDER BY position",
            cid,
        )
        out: list[Message] = []
        for index, (position, data) in enumerate(found):
            if position != index:
                raise CorruptHistoryError(cid, index, f"no row (the next is {position})")
            if isinstance(data, memoryview):
                data = bytes(data)
            if not isinstance(data, str | bytes):
                raise CorruptHistoryError(cid, index, f"{type(data).__name__}, not JSON text")
            match decode_message(data):
                case Success(message):
                    out.append(message)
                case Failure(error):
                    raise CorruptHistoryError(cid, index, error.message)
        return tuple(out)

    def rename(self, table: str, kept: str) -> str:
        """Rename the 0.2 table (and on PostgreSQL its primary key, whose index name
        today's messages table would take) in one transaction; returns ``kept``."""
        if self._postgres:
            pkey = self.rows(
                "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(?) "
                "AND contype = 'p'",
                table.lower(),
            )
            statements = [f"ALTER TABLE {table} RENAME TO {kept}"]
            if pkey:
                statements.append(
                    f'ALTER TABLE {kept} RENAME CONSTRAINT "{pkey[0][0]}" TO {kept[:58]}_pkey'
                )
            with self._connection.transaction():
                for statement in statements:
                    self.rows(statement)
        else:
            self.rows(f"ALTER TABLE {table} RENAME TO {kept}")
        return kept


def _owner_of(owner: Owner, cid: str) -> str:
    return owner if isinstance(owner, str) else owner(cid)


def _check(old: _Old, table: str, owner: Owner) -> dict[str, str]:
    """Each conversation's owner, once every row decodes and every id is storable."""
    owners: dict[str, str] = {}
    problems: list[str] = []
    corrupt: CorruptHistoryError | None = None
    for cid in old.conversation_ids(table):
        try:
            check_id("conversation id", cid)
            owners[cid] = check_id("owner", _owner_of(owner, cid))
            old.messages(table, cid)
        except CorruptHistoryError as e:
            problems.append(str(e))
            corrupt = corrupt or e
        except UsageError as e:
            problems.append(f"conversation {cid!r}: {e}")
    if problems:
        listed = "; ".join(problems[:_MAX_LISTED])
        more = f" (and {len(problems) - _MAX_LISTED} more)" if len(problems) > _MAX_LISTED else ""
        message = (
            f"{old.name}, table {table}: {len(problems)} conversation(s) cannot move, "
            f"nothing was changed: {listed}{more}"
        )
        if corrupt is not None:  # named by its first bad row, listing every problem
            raise CorruptHistoryError(corrupt.conversation_id, corrupt.position, message)
        raise UsageError(message)
    return owners


def _open_store(
    target: str,
    postgres: bool,
    prefix: str,
    signing_keys: SigningKeys | None,
    encryption: EncryptionKeys | None,
) -> SQLiteHistoryStore | PostgresHistoryStore:
    if postgres:
        return PostgresHistoryStore(
            target, table=prefix, signing_keys=signing_keys, encryption=encryption
        )
    return SQLiteHistoryStore(
        target, table=prefix, signing_keys=signing_keys, encryption=encryption
    )


def _encoded(messages: tuple[Message, ...]) -> list[bytes]:
    return [encode_message(m) for m in messages]


def _move(
    old: _Old,
    table: str,
    owners: dict[str, str],
    store: SQLiteHistoryStore | PostgresHistoryStore,
) -> StoreMigration:
    moved: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    conflicts: list[str] = []
    count = 0
    for cid, owner in owners.items():
        messages = old.messages(table, cid)
        there = store.load_sync(owner, cid)
        if there:
            if _encoded(there) == _encoded(messages):
                skipped.append((owner, cid))
            else:
                conflicts.append(f"{cid!r} of {owner!r} ({len(there)} stored)")
            continue
        store.append_sync(owner, cid, messages, expected_length=0)
        moved.append((owner, cid))
        count += len(messages)
    if conflicts:
        raise HistoryStoreError(
            f"{old.name}: {len(conflicts)} conversation(s) already stored with other "
            f"messages were left alone: {', '.join(conflicts[:_MAX_LISTED])}; "
            f"{len(moved)} moved now, {len(skipped)} moved before; the 0.2 rows stay in {table}"
        )
    return StoreMigration(
        database=old.name.strip("'"),
        kept_as=table,
        conversations=tuple(moved),
        messages=count,
        skipped=tuple(skipped),
    )


def _redact(url: str) -> str:
    """``url`` without its password."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)
