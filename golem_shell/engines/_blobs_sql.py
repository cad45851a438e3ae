"""The blob store of durable runs in a SQLAlchemy database (``SQLBlobs``: SQLite or
PostgreSQL, DBOS's system database by default), and its patience with a database that
cannot be reached for a moment (``_reaching``: a restart, a cut connection).

Beside ``golem_shell.engines._blobs`` (the protocol, the other stores, chains and stashes),
whose erasure and ownership rules (ADR 0152) and collection lock (ADR 0154) it follows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from golem_shell.engines._blobs import (
    _NO_LIMIT,
    _OWNER,
    _WALK_SQL,
    COLLECT_LOCK,
    Row,
    _batches,
    _forget,
)

__all__ = ["UNREACHABLE_FOR", "SQLBlobs"]

R = TypeVar("R")


SCHEMA_LOCK = COLLECT_LOCK + 1  # PostgreSQL advisory lock: creating the tables

UNREACHABLE_FOR = 30.0
"""Seconds ``SQLBlobs`` retries a read or write its database refused for being unreachable
(restarting, its connection cut) before it lets the error through."""


def _reaching(work: Callable[[], R]) -> R:
    """``work()`` again, with backoff (0.05 s doubling to 2 s), while it fails because the
    database cannot be reached (SQLAlchemy's ``OperationalError`` or ``InterfaceError``, or
    a connection it invalidated), for up to ``UNREACHABLE_FOR`` seconds. Every write is an
    insert that skips what is there, and a read reads: doing one again is harmless. The
    wait blocks this thread: it runs in a durable run's body, which waits on the store
    anyway (issue 50: a PostgreSQL restart failed a DBOS run that then recovered)."""
    import sqlalchemy.exc as sa_exc

    deadline, pause = time.monotonic() + UNREACHABLE_FOR, 0.05
    while True:
        try:
            return work()
        except sa_exc.DBAPIError as e:
            away = isinstance(e, (sa_exc.OperationalError, sa_exc.InterfaceError))
            if not (away or e.connection_invalidated) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 2.0)


class SQLBlobs:
    """Blobs in a SQLAlchemy database (SQLite or Postgres), table ``golem_blobs``: what a
    ``DurableAgent`` uses by default, in DBOS's own system database. A read or write the
    database refuses for being unreachable is retried for a while (``_reaching``)."""

    def __init__(self, engine: Any) -> None:
        import sqlalchemy as sa  # DBOS's dependency; this class is DBOS's default

        self.engine = engine
        self._sa = sa
        self._table = sa.Table(
            "golem_blobs",
            sa.MetaData(),
            sa.Column("key", sa.Text, primary_key=True),
            sa.Column("prev", sa.Text, nullable=True),
            sa.Column("body", sa.LargeBinary, nullable=False),
        )
        self._owners = sa.Table(
            "golem_blob_owners",
            self._table.metadata,
            sa.Column("conversation", sa.Text, primary_key=True),
            sa.Column("key", sa.Text, primary_key=True, index=True),
        )
        self._erased = sa.Table(
            "golem_blobs_erased",
            self._table.metadata,
            sa.Column("key", sa.Text, primary_key=True),
            sa.Column("erased_ms", sa.BigInteger, nullable=False),
            sa.Column("note", sa.Text, nullable=False),
        )
        self._postgres = engine.dialect.name == "postgresql"
        self._create_tables()

    def _create_tables(self) -> None:
        """Create the tables if missing. On PostgreSQL under an advisory lock, in one
        transaction: processes starting at once (a deployment's servers and workers) would
        race to create them, and the loser's ``CREATE TABLE`` fails on PostgreSQL's catalog
        (``pg_type_typname_nsp_index``) although the table is there (issue 50's soak)."""
        if not self._postgres:
            self._table.metadata.create_all(self.engine, checkfirst=True)
            return
        with self.engine.begin() as c:
            c.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")
            self._table.metadata.create_all(c, checkfirst=True)

    def __repr__(self) -> str:
        return f"SQLBlobs({self.engine.url.render_as_string(hide_password=True)!r})"

    def _insert(self) -> Any:
        from sqlalchemy.dialects import postgresql, sqlite

        return postgresql.insert if self._postgres else sqlite.insert

    def put(self, rows: Sequence[Row]) -> None:
        if not rows:
            return
        owner = _OWNER.get()
        insert = self._insert()
        values = [{"key": k, "prev": p, "body": b} for k, p, b in rows]

        def write() -> None:
            with self.engine.begin() as c:
                if self._postgres:  # a collection in flight ends first (engines._collect)
                    c.exec_driver_sql(f"SELECT pg_advisory_xact_lock_shared({COLLECT_LOCK})")
                c.execute(insert(self._table).on_conflict_do_nothing(), values)
                if owner is not None:
                    held = [{"conversation": owner, "key": r[0]} for r in rows]
                    c.execute(insert(self._owners).on_conflict_do_nothing(), held)

        _reaching(write)

    def release(self, conversations: Sequence[str], note: str) -> tuple[str, ...]:
        """Take ``conversations``' hold away; delete (and return, sorted) the keys no
        other conversation holds; then empty SQLite's WAL, or vacuum PostgreSQL's tables."""
        sa, owners, blobs = self._sa, self._owners, self._table
        with self.engine.connect() as c:
            if not self._postgres:
                c.exec_driver_sql("PRAGMA secure_delete=ON")  # the freed bytes are zeroed
                c.commit()
            with c.begin():
                held: set[str] = set()
                for batch in _batches(sorted(set(conversations))):
                    where = owners.c.conversation.in_(batch)
                    held.update(k for (k,) in c.execute(sa.select(owners.c.key).where(where)))
                    c.execute(owners.delete().where(where))
                still: set[str] = set()
                for batch in _batches(sorted(held)):
                    query = sa.select(owners.c.key).where(owners.c.key.in_(batch))
                    still.update(k for (k,) in c.execute(query))
                removed = sorted(held - still)
                now = int(time.time() * 1000)
                for batch in _batches(removed):
                    c.execute(blobs.delete().where(blobs.c.key.in_(batch)))
                    marks = [{"key": k, "erased_ms": now, "note": note} for k in batch]
                    c.execute(self._insert()(self._erased).on_conflict_do_nothing(), marks)
            if not self._postgres:
                c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                c.commit()
        if self._postgres and removed:
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.exec_driver_sql("VACUUM golem_blobs, golem_blob_owners")
        _forget()
        return tuple(removed)

    def erased(self, key: str) -> str | None:
        """Why ``key`` was erased, or ``None``."""
        query = self._sa.select(self._erased.c.note).where(self._erased.c.key == key)
        with self.engine.connect() as c:
            row = c.execute(query).first()
        return None if row is None else str(row[0])

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        t = self._table

        def read() -> dict[str, bytes]:
            out: dict[str, bytes] = {}
            with self.engine.connect() as c:
                for i in range(0, len(keys), 500):
                    where = t.c.key.in_(keys[i : i + 500])
                    out.update(
                        (k, bytes(b))
                        for k, b in c.execute(self._sa.select(t.c.key, t.c.body).where(where))
                    )
            return out

        return _reaching(read)

    def walk(self, head: str, limit: int | None) -> list[Row]:
        params = {"head": head, "limit": _NO_LIMIT if limit is None else limit}

        def read() -> list[Row]:
            with self.engine.connect() as c:
                rows = c.execute(self._sa.text(_WALK_SQL), params)
                return [(k, p, bytes(b)) for k, p, b in rows]

        return _reaching(read)
