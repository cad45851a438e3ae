"""Erasure reaches the stream log: the streams a conversation's content went through.

Owns the link between a ``StreamLog`` stream and the conversation it carried (the
``owner`` and ``conversation_id`` columns of ``{prefix}_streams``, added to a table an
older version made) and ``erase_streams_op``, which an ``erase``, ``delete`` or ``prune``
of the history store runs after it commits (ADR 0153): every stream recorded for a
touched conversation loses its frames; a finished stream loses its row too, one still
``open`` (a run in flight) keeps it, marked ``abandoned`` with no frames, so a follower
ends and its writer adds nothing more. A stream opened with an owner of ``''`` (a
durable run's event stream: an engine knows the conversation id of a run, not its
owner) belongs to that conversation id under every owner, as its blobs do (ADR 0152).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from golem_shell.store._sql import Dialect, Operation, Query, Steps, _lock_key
from golem_shell.store._values import Receipt

__all__ = [
    "add_columns",
    "erase_streams",
    "erase_streams_op",
    "stream_tables",
    "streams_exist_op",
]


def stream_tables(d: Dialect) -> tuple[str, str]:
    """The log's two tables: streams, frames."""
    return f"{d.prefix}_streams", f"{d.prefix}_stream_frames"


def _q(d: Dialect, sql: str, *params: object) -> Query:
    streams, frames = stream_tables(d)
    text = sql.format(S=streams, F=frames)
    return Query(text.replace("?", "%s") if d.postgres else text, params)


def add_columns(d: Dialect) -> Steps[None]:
    """Give a streams table made before ADR 0153 its conversation columns (``''``)."""
    if d.postgres:
        rows = yield Query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
            " AND table_schema = current_schema()",
            (stream_tables(d)[0],),
        )
        have = {str(r[0]) for r in rows}
    else:
        rows = yield _q(d, "PRAGMA table_info({S})")
        have = {str(r[1]) for r in rows}
    for column in ("owner", "conversation_id"):
        if column not in have:
            yield _q(d, f"ALTER TABLE {{S}} ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")
    yield _q(d, "CREATE INDEX IF NOT EXISTS {S}_conversation ON {S} (conversation_id, owner)")


def streams_exist_op() -> Operation[bool]:
    """Whether the store's database has a stream log (a read)."""

    def steps(d: Dialect) -> Steps[bool]:
        name = stream_tables(d)[0]
        if d.postgres:
            rows = yield Query("SELECT to_regclass(%s) IS NOT NULL", (name,))
        else:
            rows = yield Query(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
            )
        return bool(rows and rows[0][0])

    return Operation(steps)


def erase_streams_op(
    d: Dialect, conversations: Sequence[tuple[str, str]]
) -> Operation[tuple[str, ...]]:
    """Delete the frames of every stream of these ``(owner, conversation id)`` pairs (and
    of the conversation id under owner ``''``); the ids of the streams reached, sorted.
    After commit SQLite checkpoints its WAL (``secure_delete``), PostgreSQL vacuums."""

    def steps(d: Dialect) -> Steps[tuple[str, ...]]:
        if d.postgres:  # as the log's schema does: no two processes add the columns
            yield Query("SELECT pg_advisory_xact_lock(%s)", (_lock_key(stream_tables(d)[0]),))
        yield from add_columns(d)
        reached: set[str] = set()
        for owner, cid in conversations:
            rows = yield _q(
                d,
                "SELECT stream, state FROM {S} WHERE conversation_id = ? AND owner IN (?, '')"
                + (" FOR UPDATE" if d.postgres else ""),
                cid,
                owner,
            )
            for stream, state in rows:
                reached.add(str(stream))
                yield _q(d, "DELETE FROM {F} WHERE stream = ?", stream)
                if state == "open":
                    yield _q(
                        d, "UPDATE {S} SET state = 'abandoned', frames = 0 WHERE stream = ?", stream
                    )
                else:
                    yield _q(d, "DELETE FROM {S} WHERE stream = ?", stream)
        return tuple(sorted(reached))

    return Operation(steps, write=True, erases=True, vacuum=stream_tables(d))


def erase_streams(run: Callable[[Operation[Any]], Any], d: Dialect, receipt: Receipt) -> Receipt:
    """After an erasure committed (``run``: the store's, ``d``: its dialect): delete the
    streams of every conversation the receipt touched (erased views, stale summaries,
    deleted conversations), the receipt naming them in ``streams``."""
    touched = sorted({(e.owner, e.conversation_id) for e in (*receipt.erased, *receipt.summaries)})
    if not touched or not run(streams_exist_op()):  # no stream log in this database
        return receipt
    streams: tuple[str, ...] = run(erase_streams_op(d, touched))
    return attrs.evolve(receipt, streams=streams)
