"""Collection of the durable engines' blobs: what no conversation holds goes (issue 47).

Owns bounding a ``BlobStore`` over time (ADR 0154). ``release`` (``golem_shell.engines._blobs``)
erases what an erased, deleted or pruned conversation held; what is left unbounded is
(a) blobs written while no conversation held them (a handshake, a value a client stashed
for a run that never read it, a run that failed before its first write) and (b) the blobs
of conversations no history store will ever delete (their runs' records only).

- ``unhold(store, conversations)`` takes conversations' hold away **without deleting**:
  their blobs become orphans, which a run of the same conversation starting meanwhile
  holds again by writing them (``run_input`` writes the whole history chain under the
  conversation: ``INSERT OR IGNORE`` of the blob and of its holder).
- ``collect(store, grace=...)`` is a two-phase mark and sweep: each call marks the blobs no
  conversation holds (``golem_blob_orphans``: key, when first seen unheld), forgets marks
  of blobs held again, and deletes the blobs marked at least ``grace`` seconds ago that are
  still unheld, in one transaction whose delete re-checks the holders. A blob is therefore
  deleted only after being unheld for ``grace`` and at the moment of deletion. A concurrent
  ``put`` that holds it again either commits first (the delete sees its holder) or after
  (it writes the blob again): SQLite has one writer at a time; on PostgreSQL every
  ``put`` takes a shared advisory lock (``COLLECT_LOCK``) and the sweep the exclusive one,
  so the sweep never misses a holder still uncommitted. It also drops the erasure notes
  (``golem_blobs_erased``) older than ``keep_notes`` seconds, which otherwise grow with
  every erased blob (``MemoryBlobs`` keeps no time: all of them, with ``keep_notes=0``).

``DurableAgent.forget`` deletes DBOS's records of runs finished before an age, unholds the
conversations none of whose runs is still recorded, then collects.
"""

from __future__ import annotations

import sqlite3
import time
import weakref
from collections.abc import Sequence

from attrs import frozen

from golem_shell._errors import UsageError
from golem_shell.engines._blobs import (
    COLLECT_LOCK,
    BlobStore,
    MemoryBlobs,
    SQLiteBlobs,
    _forget,
)
from golem_shell.engines._blobs_sql import SQLBlobs

__all__ = ["COLLECT_LOCK", "Collected", "collect", "unhold"]

GRACE = 3600.0
"""Seconds a blob stays unheld before ``collect`` deletes it, by default."""
KEEP_NOTES = 30 * 86400.0
"""Seconds an erasure note (``golem_blobs_erased``) is kept, by default."""

_ORPHANS_DDL = (
    "CREATE TABLE IF NOT EXISTS golem_blob_orphans (key TEXT PRIMARY KEY, seen_ms BIGINT NOT NULL)"
)
_MARK = (  # blobs no conversation holds, first seen now
    "INSERT INTO golem_blob_orphans (key, seen_ms) SELECT b.key, {now} FROM golem_blobs b"
    " WHERE NOT EXISTS (SELECT 1 FROM golem_blob_owners o WHERE o.key = b.key)"
    " AND NOT EXISTS (SELECT 1 FROM golem_blob_orphans m WHERE m.key = b.key)"
)
_UNMARK = (  # held again, or gone
    "DELETE FROM golem_blob_orphans WHERE"
    " EXISTS (SELECT 1 FROM golem_blob_owners o WHERE o.key = golem_blob_orphans.key)"
    " OR NOT EXISTS (SELECT 1 FROM golem_blobs b WHERE b.key = golem_blob_orphans.key)"
)
_SWEEP = (  # the holders re-checked by the delete itself
    "DELETE FROM golem_blobs WHERE key IN"
    " (SELECT key FROM golem_blob_orphans WHERE seen_ms <= {cut})"
    " AND NOT EXISTS (SELECT 1 FROM golem_blob_owners o WHERE o.key = golem_blobs.key)"
    " RETURNING key"
)
_SWEPT = (
    "DELETE FROM golem_blob_orphans WHERE seen_ms <= {cut}"
    " AND NOT EXISTS (SELECT 1 FROM golem_blobs b WHERE b.key = golem_blob_orphans.key)"
)
_NOTES = "DELETE FROM golem_blobs_erased WHERE erased_ms <= {cut}"


@frozen
class Collected:
    """What one ``collect`` deleted: the blobs' ``keys`` (sorted), how many erasure notes
    it dropped (``notes``), and how many blobs are still marked unheld (``pending``)."""

    keys: tuple[str, ...] = ()
    notes: int = 0
    pending: int = 0


_MEMORY_MARKS: weakref.WeakKeyDictionary[MemoryBlobs, dict[str, int]] = weakref.WeakKeyDictionary()


def unhold(store: BlobStore, conversations: Sequence[str]) -> int:
    """Take ``conversations``' hold on their blobs away, deleting none (``collect`` does,
    after its grace, what nobody holds again); returns how many holds were taken."""
    convs = sorted(set(conversations))
    if not convs:
        return 0
    if isinstance(store, MemoryBlobs):
        gone, n = set(convs), 0
        for holders in store._owners.values():
            n += len(holders & gone)
            holders -= gone
        store._owners = {k: v for k, v in store._owners.items() if v}
        return n
    if isinstance(store, SQLiteBlobs):
        with store._lock, store._db:
            n = 0
            for i in range(0, len(convs), 500):
                batch = convs[i : i + 500]
                marks = ",".join("?" * len(batch))
                sql = f"DELETE FROM golem_blob_owners WHERE conversation IN ({marks})"
                n += store._db.execute(sql, batch).rowcount
        return n
    if isinstance(store, SQLBlobs):
        owners = store._owners
        with store.engine.begin() as c:
            return sum(
                c.execute(
                    owners.delete().where(owners.c.conversation.in_(convs[i : i + 500]))
                ).rowcount
                for i in range(0, len(convs), 500)
            )
    raise UsageError(f"unhold needs a MemoryBlobs, SQLiteBlobs or SQLBlobs, not {store!r}")


def collect(store: BlobStore, *, grace: float = GRACE, keep_notes: float = KEEP_NOTES) -> Collected:
    """Delete the blobs of ``store`` no conversation has held for ``grace`` seconds (two
    calls at least ``grace`` apart: the first marks, the second deletes; ``grace=0`` does
    both at once) and the erasure notes older than ``keep_notes`` seconds.

    Safe against runs writing and reading meanwhile: the delete re-checks, in its own
    transaction, that no conversation holds the blob (a run writes a blob and its holder
    in one transaction; see the module's docstring for PostgreSQL).

    Raises:
        UsageError: ``store`` is none of golem's blob stores.
    """
    now = int(time.time() * 1000)
    cut, notes_cut = now - int(grace * 1000), now - int(keep_notes * 1000)
    if isinstance(store, MemoryBlobs):
        done = _collect_memory(store, now, cut, notes_cut)
    elif isinstance(store, SQLiteBlobs):
        with store._lock:
            done = _collect_sqlite(store._db, now, cut, notes_cut)
            store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    elif isinstance(store, SQLBlobs):
        done = _collect_sql(store, now, cut, notes_cut)
    else:
        raise UsageError(f"collect needs a MemoryBlobs, SQLiteBlobs or SQLBlobs, not {store!r}")
    if done.keys:
        _forget()
    return done


def _collect_memory(store: MemoryBlobs, now: int, cut: int, notes_cut: int) -> Collected:
    marks = _MEMORY_MARKS.setdefault(store, {})
    for key in store._rows:
        if key not in store._owners:
            marks.setdefault(key, now)
    for key in [k for k in marks if k in store._owners or k not in store._rows]:
        del marks[key]
    doomed = sorted(k for k, seen in marks.items() if seen <= cut)
    for key in doomed:
        del store._rows[key], marks[key]
    notes = len(store._erased) if notes_cut >= now else 0  # its notes carry no time
    if notes:
        store._erased.clear()
    return Collected(tuple(doomed), notes, len(marks))


def _collect_sqlite(db: sqlite3.Connection, now: int, cut: int, notes_cut: int) -> Collected:
    db.execute(_ORPHANS_DDL)
    with db:  # the first statement writes: the transaction holds SQLite's write lock
        db.execute(_MARK.format(now=now))
        db.execute(_UNMARK)
        gone = [k for (k,) in db.execute(_SWEEP.format(cut=cut))]
        db.execute(_SWEPT.format(cut=cut))
        notes = db.execute(_NOTES.format(cut=notes_cut)).rowcount
        pending = db.execute("SELECT COUNT(*) FROM golem_blob_orphans").fetchone()[0]
    return Collected(tuple(sorted(gone)), notes, int(pending))


def _collect_sql(store: SQLBlobs, now: int, cut: int, notes_cut: int) -> Collected:
    with store.engine.begin() as c:
        c.exec_driver_sql(_ORPHANS_DDL)
    with store.engine.begin() as c:
        if store._postgres:  # waits for every put in flight; puts wait for it
            c.exec_driver_sql(f"SELECT pg_advisory_xact_lock({COLLECT_LOCK})")
        c.exec_driver_sql(_MARK.format(now=now))
        c.exec_driver_sql(_UNMARK)
        gone = [k for (k,) in c.exec_driver_sql(_SWEEP.format(cut=cut))]
        c.exec_driver_sql(_SWEPT.format(cut=cut))
        notes = c.exec_driver_sql(_NOTES.format(cut=notes_cut)).rowcount
        pending = c.exec_driver_sql("SELECT COUNT(*) FROM golem_blob_orphans").scalar_one()
    if not store._postgres:
        with store.engine.connect() as c:
            c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            c.commit()
    return Collected(tuple(sorted(gone)), int(notes or 0), int(pending))
