"""Stored streams: the numbered frames of a chat turn's stream, in the store's database.

Owns ``StreamLog``: a frame log kept next to a conversation store's tables (the same
SQLite file or PostgreSQL database, the same connection), so any process that opens the
store can serve a stream, after a restart too. Two tables (``prefix`` = the store's
``table``)::

    {prefix}_streams        stream -> slot key, run id, info (JSON), frame count,
                            state (open, done, paused, abandoned), durable, heartbeat,
                            the owner and conversation whose content it carries
    {prefix}_stream_frames  (stream, n) -> frame key, data; (stream, frame key) unique

Promises:

- **Numbers are dense and stable.** A stream's frames are numbered 1, 2, ... in the
  order they were first written; a frame never changes number or data.
- **Writes are idempotent by frame key.** ``append`` skips a frame whose key the stream
  already has: a writer that replays (a recovered durable run performing a step again)
  keys its frames by what they are (run, step, position) and adds nothing twice.
- **One open stream per slot.** ``open`` refuses (``StreamBusy``) while another stream of
  the same slot key (a conversation's branch) is open, in one transaction: two processes
  racing to start a turn cannot both win. A non-durable stream whose writer stopped
  beating for ``stale_after`` seconds (its process died) is marked ``abandoned`` then.
- **Erasure reaches it** (ADR 0153). A stream opened with the ``owner`` and
  ``conversation_id`` it carries loses its frames when the history store erases,
  deletes or prunes that conversation (a stream still open ends ``abandoned``).

Operations are written once as steps (``_sql``) and run on the store's own connection,
sync or async; PostgreSQL serializes appends to one stream by locking its row, and
``open`` by an advisory lock on the slot; SQLite has one writer. There is no push:
readers poll (``StoredRuns`` in ``golem_shell.ui`` wakes readers in the writer's own
process at once and polls for the others).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from attrs import frozen

from golem_shell._errors import UsageError
from golem_shell.store._errors import HistoryStoreError
from golem_shell.store._methods import StoreMethods
from golem_shell.store._sql import Dialect, Operation, Query, Row, Steps, _lock_key
from golem_shell.store._streamerase import add_columns

__all__ = ["StreamBusy", "StreamLog", "StreamRecord", "StreamState"]

StreamState: TypeAlias = Literal["open", "done", "paused", "abandoned"]
"""Where a stream is: being written, finished, ended at a pause of its run (its run goes
on later under another stream), or left by a writer that died (never finished)."""

_STATES: tuple[StreamState, ...] = ("open", "done", "paused", "abandoned")
_Read: TypeAlias = "tuple[list[tuple[int, str]], StreamRecord | None]"
_COLUMNS = (
    "stream, skey, run_id, info, frames, state, durable, beat_ms, created_ms,"
    " owner, conversation_id"
)


@frozen
class StreamRecord:
    """What the log knows of one stream.

    Attributes:
        stream: its id.
        key: the slot it belongs to (e.g. owner, conversation and branch).
        run_id: the run writing it ('' when none was named).
        info: what the server stored with it (JSON).
        frames: how many frames it has.
        state: ``open``, ``done``, ``paused`` or ``abandoned``.
        durable: its run survives its process (no heartbeat needed).
        beat_ms: when its writer last wrote or beat (ms since the epoch).
        owner: the owner of the conversation it carries ('' when none was named, or
            any owner: a durable run's event stream).
        conversation_id: the conversation it carries ('' when none was named): the
            history store's erasure of it deletes the stream's frames.
    """

    stream: str
    key: str
    run_id: str
    info: dict[str, Any]
    frames: int
    state: StreamState
    durable: bool
    beat_ms: int
    owner: str = ""
    conversation_id: str = ""

    @property
    def open(self) -> bool:
        """Whether frames may still come."""
        return self.state == "open"


class StreamBusy(HistoryStoreError):
    """``open`` found another open stream for the slot (the record is ``current``)."""

    def __init__(self, current: StreamRecord) -> None:
        super().__init__(f"stream {current.stream!r} of {current.key!r} is still open")
        self.current = current


def _record(row: Row) -> StreamRecord:
    stream, key, run_id, info, frames, state, durable, beat_ms, _, owner, cid = row
    if state not in _STATES:
        raise HistoryStoreError(f"stream {stream!r}: unknown state {state!r}")
    return StreamRecord(
        stream, key, run_id, json.loads(info), int(frames), state, bool(durable), int(beat_ms),
        owner, cid,
    )  # fmt: skip


class _Tables:
    """The log's SQL for one dialect."""

    def __init__(self, d: Dialect) -> None:
        self.d = d
        self.streams = f"{d.prefix}_streams"
        self.frames = f"{d.prefix}_stream_frames"

    def q(self, sql: str, *params: Any) -> Query:
        text = sql.format(S=self.streams, F=self.frames)
        return Query(text.replace("?", "%s") if self.d.postgres else text, params)

    def schema(self) -> Steps[None]:
        big = "BIGINT" if self.d.postgres else "INTEGER"
        if self.d.postgres:
            yield Query("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self.streams),))
        yield self.q(
            "CREATE TABLE IF NOT EXISTS {S} (stream TEXT PRIMARY KEY, skey TEXT NOT NULL,"
            f" run_id TEXT NOT NULL, info TEXT NOT NULL, frames {big} NOT NULL,"
            f" state TEXT NOT NULL, durable INTEGER NOT NULL, beat_ms {big} NOT NULL,"
            f" created_ms {big} NOT NULL, owner TEXT NOT NULL DEFAULT '',"
            " conversation_id TEXT NOT NULL DEFAULT '')"
        )
        yield from add_columns(self.d)  # a table made before ADR 0153
        yield self.q("CREATE INDEX IF NOT EXISTS {S}_skey ON {S} (skey, created_ms)")
        yield self.q("CREATE INDEX IF NOT EXISTS {S}_run ON {S} (run_id, created_ms)")
        yield self.q(
            "CREATE TABLE IF NOT EXISTS {F} (stream TEXT NOT NULL,"
            f" n {big} NOT NULL, fkey TEXT NOT NULL, data TEXT NOT NULL,"
            " PRIMARY KEY (stream, n), UNIQUE (stream, fkey))"
        )

    def one(self, sql: str, *params: Any) -> Steps[StreamRecord | None]:
        rows = yield self.q(f"SELECT {_COLUMNS} FROM {{S}} " + sql, *params)
        return _record(rows[0]) if rows else None

    def open(
        self,
        key: str,
        stream: str,
        run_id: str,
        info: str,
        durable: bool,
        now_ms: int,
        stale_ms: int,
        of: tuple[str, str] = ("", ""),
    ) -> Steps[StreamRecord]:
        if self.d.postgres:
            yield Query("SELECT pg_advisory_xact_lock(%s)", (_lock_key(f"{self.streams}/{key}"),))
        rows = yield self.q(f"SELECT {_COLUMNS} FROM {{S}} WHERE skey = ? AND state = 'open'", key)
        for current in map(_record, rows):
            if not current.durable and current.beat_ms < now_ms - stale_ms:
                yield self.q("UPDATE {S} SET state = 'abandoned' WHERE stream = ?", current.stream)
                continue
            raise StreamBusy(current)
        yield self.q(
            f"INSERT INTO {{S}} ({_COLUMNS}) VALUES (?, ?, ?, ?, 0, 'open', ?, ?, ?, ?, ?)",
            stream,
            key,
            run_id,
            info,
            int(durable),
            now_ms,
            now_ms,
            *of,
        )
        return StreamRecord(stream, key, run_id, json.loads(info), 0, "open", durable, now_ms, *of)

    def append(
        self, stream: str, frames: Sequence[tuple[str, str]], now_ms: int, end: str | None
    ) -> Steps[int]:
        lock = " FOR UPDATE" if self.d.postgres else ""
        rows = yield self.q("SELECT frames, state FROM {S} WHERE stream = ?" + lock, stream)
        if not rows:
            raise HistoryStoreError(f"no stream {stream!r} to append to")
        count, state = int(rows[0][0]), rows[0][1]
        if state != "open" or (not frames and end is None):
            return count
        keys = [k for k, _ in frames]
        marks = ", ".join("?" * len(keys))
        seen = yield self.q(
            f"SELECT fkey FROM {{F}} WHERE stream = ? AND fkey IN ({marks})", stream, *keys
        )
        known = {r[0] for r in seen}
        new: list[tuple[Any, ...]] = []
        for fkey, data in frames:
            if fkey in known:
                continue
            known.add(fkey)
            count += 1
            new.append((stream, count, fkey, data))
        if new:
            insert = self.q("INSERT INTO {F} (stream, n, fkey, data) VALUES (?, ?, ?, ?)")
            yield Query(insert.sql, tuple(new), batch=True)
        yield self.q(
            "UPDATE {S} SET frames = ?, beat_ms = ?, state = ? WHERE stream = ?",
            count,
            now_ms,
            end or "open",
            stream,
        )
        return count

    def read(self, stream: str, after: int, limit: int) -> Steps[_Read]:
        record = yield from self.one("WHERE stream = ?", stream)
        rows = yield self.q(
            "SELECT n, data FROM {F} WHERE stream = ? AND n > ? ORDER BY n LIMIT ?",
            stream,
            after,
            limit,
        )
        return [(int(n), data) for n, data in rows], record


class StreamLog:
    """The frame log of a conversation store: tables next to the store's, its connection.

    Args:
        store: a ``SQLiteHistoryStore`` or ``PostgresHistoryStore`` (the tables take its
            ``table`` prefix and are created on first use).
        clock: seconds since the epoch (heartbeats, staleness).

    Raises:
        UsageError: ``store`` is not one of golem's SQL stores.
    """

    def __init__(self, store: StoreMethods, *, clock: Callable[[], float] = time.time) -> None:
        if not isinstance(store, StoreMethods):
            raise UsageError(f"StreamLog needs a golem SQL history store, got {store!r}")
        self.store = store
        self._t = _Tables(store._dialect)
        self._clock = clock
        self._ready = False

    def __repr__(self) -> str:
        return f"StreamLog({self.store!r})"

    def _now(self) -> int:
        return int(self._clock() * 1000)

    async def _run(self, steps: Callable[[Dialect], Steps[Any]], *, write: bool) -> Any:
        if not self._ready:
            await self.store._run_async(Operation(lambda _: self._t.schema(), write=True))
            self._ready = True
        return await self.store._run_async(Operation(steps, write=write))

    def _run_sync(self, steps: Callable[[Dialect], Steps[Any]], *, write: bool) -> Any:
        """``_run`` for a caller that may not await (a Temporal workflow's code)."""
        if not self._ready:
            self.store._run(Operation(lambda _: self._t.schema(), write=True))
            self._ready = True
        return self.store._run(Operation(steps, write=write))

    def open_sync(
        self,
        key: str,
        stream: str,
        *,
        run_id: str = "",
        durable: bool = False,
        owner: str = "",
        conversation_id: str = "",
    ) -> None:
        """``open`` (no info, the default staleness) for a caller that may not await."""
        now = self._now()
        of = (owner, conversation_id)
        self._run_sync(
            lambda _: self._t.open(key, stream, run_id, "{}", durable, now, 30_000, of),
            write=True,
        )

    def append_sync(
        self, stream: str, frames: Sequence[tuple[str, str]], *, end: StreamState | None = None
    ) -> int:
        """``append`` for a caller that may not await (a Temporal workflow's code)."""
        if end == "open":
            raise UsageError("a stream ends as done, paused or abandoned, not 'open'")
        now = self._now()
        count: int = self._run_sync(lambda _: self._t.append(stream, frames, now, end), write=True)
        return count

    def get_sync(self, stream: str) -> StreamRecord | None:
        """``get`` for a caller that may not await."""
        record: StreamRecord | None = self._run_sync(
            lambda _: self._t.one("WHERE stream = ?", stream), write=False
        )
        return record

    async def open(
        self,
        key: str,
        stream: str,
        *,
        run_id: str = "",
        info: Mapping[str, Any] | None = None,
        durable: bool = False,
        stale_after: float = 30.0,
        owner: str = "",
        conversation_id: str = "",
    ) -> StreamRecord:
        """Open stream ``stream`` in slot ``key`` (its ``run_id`` and ``info`` kept with it).

        ``owner`` and ``conversation_id`` name the conversation whose content it carries:
        the history store's ``erase``, ``delete`` and ``prune`` of that conversation
        delete its frames (ADR 0153; ``owner=''``: the conversation id under any owner).
        ``info`` is kept after that: put ids in it, never content.

        Raises:
            StreamBusy: another stream of ``key`` is open (and, if not durable, its
                writer beat less than ``stale_after`` seconds ago).
        """
        text = json.dumps(dict(info or {}))
        stale = int(stale_after * 1000)
        now = self._now()
        of = (owner, conversation_id)
        record: StreamRecord = await self._run(
            lambda _: self._t.open(key, stream, run_id, text, durable, now, stale, of), write=True
        )
        return record

    async def append(
        self,
        stream: str,
        frames: Sequence[tuple[str, str]],
        *,
        end: StreamState | None = None,
    ) -> int:
        """Add ``frames`` (``(frame key, data)``) the stream does not have yet, numbered
        after its last, and with ``end`` end it in the same transaction (a reader that
        saw the last frame never finds the stream still open); a stream that is no
        longer open takes none. Returns its count of frames."""
        if end == "open":
            raise UsageError("a stream ends as done, paused or abandoned, not 'open'")
        now = self._now()
        count: int = await self._run(lambda _: self._t.append(stream, frames, now, end), write=True)
        return count

    async def end(self, stream: str, state: StreamState = "done") -> None:
        """Mark the stream ``done`` (or ``paused``, ``abandoned``): it takes no more frames."""
        if state not in _STATES or state == "open":
            raise UsageError(f"a stream ends as done, paused or abandoned, not {state!r}")

        def steps(_: Dialect) -> Steps[None]:
            yield self._t.q(
                "UPDATE {S} SET state = ? WHERE stream = ? AND state = 'open'", state, stream
            )

        await self._run(steps, write=True)

    async def beat(self, stream: str) -> None:
        """Say the stream's writer is alive (``open`` abandons a silent one)."""
        now = self._now()

        def steps(_: Dialect) -> Steps[None]:
            yield self._t.q("UPDATE {S} SET beat_ms = ? WHERE stream = ?", now, stream)

        await self._run(steps, write=True)

    async def get(self, stream: str) -> StreamRecord | None:
        """The stream ``stream``, or ``None``."""
        record: StreamRecord | None = await self._run(
            lambda _: self._t.one("WHERE stream = ?", stream), write=False
        )
        return record

    async def latest(self, key: str) -> StreamRecord | None:
        """The newest stream of slot ``key`` (open or not), or ``None``."""
        record: StreamRecord | None = await self._run(
            lambda _: self._t.one(
                "WHERE skey = ? ORDER BY created_ms DESC, stream DESC LIMIT 1", key
            ),
            write=False,
        )
        return record

    async def of_run(self, run_id: str) -> StreamRecord | None:
        """The newest open stream written by run ``run_id``, or ``None``."""
        record: StreamRecord | None = await self._run(
            lambda _: self._t.one(
                "WHERE run_id = ? AND state = 'open' ORDER BY created_ms DESC, stream DESC LIMIT 1",
                run_id,
            ),
            write=False,
        )
        return record

    async def unfinished(self, *, durable: bool = True) -> list[StreamRecord]:
        """Every open stream (durable ones, or the others): what a starting server
        finishes for runs a durable runtime recovers."""

        def steps(_: Dialect) -> Steps[list[StreamRecord]]:
            rows = yield self._t.q(
                f"SELECT {_COLUMNS} FROM {{S}} WHERE state = 'open' AND durable = ?"
                " ORDER BY created_ms",
                int(durable),
            )
            return [_record(r) for r in rows]

        records: list[StreamRecord] = await self._run(steps, write=False)
        return records

    async def read(
        self, stream: str, after: int = 0, *, limit: int = 1000
    ) -> tuple[list[tuple[int, str]], StreamRecord | None]:
        """Up to ``limit`` frames after number ``after`` as ``(n, data)``, and the stream
        as it was when they were read (one snapshot: frames past these came later)."""
        out: tuple[list[tuple[int, str]], StreamRecord | None] = await self._run(
            lambda _: self._t.read(stream, after, limit), write=False
        )
        return out
