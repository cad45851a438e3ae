"""Content-addressed payload storage for durable engines: blobs, history chains, stashes.

Over 600 lines because the stores, chains and stashes share one contract (a key names one
content, ADR 0125 and 0152) that is read most easily in one place.

Owns how a durable engine keeps what is large out of what it records (ADR 0125). A
**blob** is bytes stored under the SHA-256 of those bytes (``key_of``), once, in a
``BlobStore`` the engine is given: ``SQLBlobs`` (``_blobs_sql``: a ``golem_blobs`` table
beside DBOS's own, in its system database, SQLite or Postgres), ``SQLiteBlobs`` (a file
every worker of a host opens) or ``MemoryBlobs`` (one process). A key names exactly one
content, so a reference read twice, by any worker, on any replay, gives the same bytes:
reading a blob is as deterministic as the reference itself, and a blob can never be swapped for
another revision (``BlobStore.get`` checks the hash of what it returns).

- A **chain** is a sequence of values stored one node per value, each node holding its
  predecessor's key (``prev``) and its value: the key of the last node (the ``head``)
  stands for the whole sequence, and two sequences that share a prefix share its nodes.
  A conversation is a chain of messages (``MESSAGE_CHAIN``): a run's input, the history
  processor's outcome and a run's end hold its head, never the messages; extending a
  chain by one turn stores one node per new message. ``Chain`` keeps the values with
  their keys, so the writer hashes only what is new.
- A **stash** is a JSON value replaced by ``{"type": "golemBlob", "key", "size"}``
  (``stash`` / ``unstash``): every value an engine records that may hold conversation
  content (DBOS's step outputs, events, messages and result; every Temporal workflow and
  activity payload) crosses stashed, so the engine's own records hold hashes only and
  deleting the blob erases the content (ADR 0152).

``MissingBlob`` (a ``CorruptRecord``) is raised when a reference names a blob the store
does not hold (another store than the writer's) or whose bytes do not hash to its key;
``ErasedBlob`` (a ``MissingBlob``) when the store erased it.

**Owners and erasure** (ADR 0152): a blob written while ``owned_by(conversation_id)``
is in effect (a durable run's whole body, its steps and activities, its start) is
recorded as held by that conversation (``golem_blob_owners``, keys only). ``release``
takes conversations' hold away and deletes every blob no other conversation holds
(``secure_delete`` and a WAL checkpoint on SQLite, ``VACUUM`` on PostgreSQL), remembers
each deleted key in ``golem_blobs_erased`` (key, time, why: no content), and forgets this
process's cached chains and the blobs ``SQLiteBlobs`` kept (``_Recent``); a later read of
such a key raises ``ErasedBlob`` naming the erasure. ``golem_shell.store`` stores call it
after ``erase``, ``delete`` and ``prune``.

A **handshake** makes a store that is not shared loud at a run's start: the process that
starts a run writes a blob of its own (``handshake``, once per store) and the run's input
names it; the worker executing the run reads it first (``shares_store``) and fails the run
at once, naming ``blobs=``, when its store does not hold it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar

from attrs import frozen

from golem_core import Message, decode_message_or_raise, encode_message
from golem_shell._errors import UsageError
from golem_shell.engines._records import CorruptRecord

__all__ = [
    "BlobStore",
    "COLLECT_LOCK",
    "Chain",
    "ChainKind",
    "ErasedBlob",
    "LOG_CHAIN",
    "MESSAGE_CHAIN",
    "MemoryBlobs",
    "MissingBlob",
    "Row",
    "SQLiteBlobs",
    "STASH_LIMIT",
    "extend_chain",
    "handshake",
    "hold_in_task",
    "is_stashed",
    "key_of",
    "load_chain",
    "messages_chain",
    "owned_by",
    "shares_store",
    "stash",
    "stash_row",
    "unstash",
    "unstash_held",
]

JSON: TypeAlias = Any
V = TypeVar("V")
R = TypeVar("R")
Row: TypeAlias = tuple[str, str | None, bytes]
"""A stored blob: its key, the key of the chain node before it (or ``None``), its bytes."""

STASH_LIMIT = 256 * 1024
"""The largest JSON payload (in bytes) Temporal carried inline before ADR 0152 (Temporal
refuses a payload over 2 MB); ``stash`` now stashes every value unless given a limit."""
_WALK = 32  # chain nodes read one query at a time before reading the rest at once
_CACHED = 32  # chains kept decoded per kind (by head), for the next step of a run
_STASH_TAG = "golemBlob"
COLLECT_LOCK = 0x676F6C656D  # PostgreSQL advisory lock: puts share it, collect takes it


class MissingBlob(CorruptRecord):
    """A reference to a blob the store does not hold, or holds with other bytes."""


class ErasedBlob(MissingBlob):
    """A reference to a blob the store erased (``release``: the content is gone)."""


_OWNER: ContextVar[str | None] = ContextVar("golem_blob_owner", default=None)


@contextmanager
def owned_by(conversation_id: str | None) -> Iterator[None]:
    """Within it, every blob a store writes (or is asked to write again) is held by
    ``conversation_id`` (``None``: by nobody new); asyncio tasks started inside inherit it."""
    token = _OWNER.set(conversation_id)
    try:
        yield
    finally:
        with suppress(ValueError):  # a coroutine closed from another context (evicted)
            _OWNER.reset(token)


def hold_in_task(conversation_id: str | None) -> None:
    """``owned_by`` for the rest of the current task (an activity, which runs in an
    asyncio task of its own)."""
    _OWNER.set(conversation_id)


def _forget() -> None:
    """Drop this process's cached chains and blobs: after an erasure none may serve erased
    content."""
    MESSAGE_CHAIN.cache.clear()
    LOG_CHAIN.cache.clear()
    for recent in list(_RECENTS):
        recent.clear()


_RECENT = 256  # blobs a SQLite store keeps the bytes of, after writing or reading them
_RECENT_BYTES = 4 * 1024 * 1024  # and their bytes at most (a larger blob is not kept)


class _Recent:
    """The bytes of the blobs a store wrote or read lately, by key (a key names one
    content, so they are the stored bytes): what a worker reads back soon after (an
    activity's outcome in its workflow, a workflow's payload in its activity, a run's
    result in its client) is served without a query. Bounded; emptied by every erasure
    in this process (``_forget``), as the cached chains are."""

    def __init__(self) -> None:
        self._bodies: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        _RECENTS.add(self)

    def keep(self, rows: Sequence[tuple[str, bytes]]) -> None:
        with self._lock:
            for key, body in rows:
                if len(body) > _RECENT_BYTES // 16 or key in self._bodies:
                    continue
                self._bodies[key] = body
                self._size += len(body)
            while len(self._bodies) > _RECENT or self._size > _RECENT_BYTES:
                self._size -= len(self._bodies.popitem(last=False)[1])

    def hits(self, keys: Sequence[str]) -> tuple[dict[str, bytes], list[str]]:
        """The bytes of ``keys`` kept, and the keys not kept."""
        found: dict[str, bytes] = {}
        rest: list[str] = []
        with self._lock:
            for key in keys:
                body = self._bodies.get(key)
                if body is None:
                    rest.append(key)
                else:
                    found[key] = body
        return found, rest

    def clear(self) -> None:
        with self._lock:
            self._bodies.clear()
            self._size = 0


_RECENTS: weakref.WeakSet[_Recent] = weakref.WeakSet()


def _missing(store: BlobStore, key: str, where: str, what: str) -> MissingBlob:
    erased: Callable[[str], str | None] | None = getattr(store, "erased", None)
    note = None if erased is None else erased(key)
    if note is not None:
        return ErasedBlob(
            f"{where}: {what} {key} was erased from {store!r} ({note}): the content it"
            " held is gone, and so is every run record that needs it"
        )
    return MissingBlob(
        f"{where}: {what} {key} is not in {store!r}: every process of a run needs the"
        " same blob store (blobs=)"
    )


def key_of(data: bytes) -> str:
    """The key of ``data``: the hex SHA-256 of the bytes (total, deterministic)."""
    return hashlib.sha256(data).hexdigest()


class BlobStore(Protocol):
    """Where an engine keeps blobs, shared by every process of its runs. Writes are
    idempotent (a key already stored is left as it is); nothing is ever updated."""

    def put(self, rows: Sequence[Row]) -> None:
        """Store ``rows`` (``(key, prev, bytes)``, ``key == key_of(bytes)``)."""
        ...

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The bytes of each of ``keys`` the store holds (missing keys are left out)."""
        ...

    def walk(self, head: str, limit: int | None) -> list[Row]:
        """The chain ending at ``head``, newest first, following ``prev``, at most
        ``limit`` nodes (``None``: to its start); empty when ``head`` is not stored."""
        ...


class MemoryBlobs:
    """Blobs in this process's memory (a test, or client and worker in one process)."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[str | None, bytes]] = {}
        self._owners: dict[str, set[str]] = {}  # by key: the conversations holding it
        self._erased: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"MemoryBlobs({len(self._rows)} blobs)"

    def put(self, rows: Sequence[Row]) -> None:
        owner = _OWNER.get()
        for key, prev, body in rows:
            self._rows.setdefault(key, (prev, body))
            if owner is not None:
                self._owners.setdefault(key, set()).add(owner)

    def release(self, conversations: Sequence[str], note: str) -> tuple[str, ...]:
        """Take ``conversations``' hold away; delete (and return, sorted) the keys no
        other conversation holds."""
        gone = set(conversations)
        removed = []
        for key, owners in list(self._owners.items()):
            if owners & gone:
                owners -= gone
                if not owners:
                    del self._owners[key]
                    self._rows.pop(key, None)
                    self._erased[key] = note
                    removed.append(key)
        _forget()
        return tuple(sorted(removed))

    def erased(self, key: str) -> str | None:
        """Why ``key`` was erased, or ``None``."""
        return self._erased.get(key)

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        return {k: self._rows[k][1] for k in keys if k in self._rows}

    def walk(self, head: str, limit: int | None) -> list[Row]:
        out: list[Row] = []
        key: str | None = head
        while key is not None and key in self._rows and (limit is None or len(out) < limit):
            prev, body = self._rows[key]
            out.append((key, prev, body))
            key = prev
        return out


_WALK_SQL = """
WITH RECURSIVE chain(key, prev, body, depth) AS (
    SELECT key, prev, body, 1 FROM golem_blobs WHERE key = :head
    UNION ALL
    SELECT b.key, b.prev, b.body, chain.depth + 1
    FROM golem_blobs b JOIN chain ON b.key = chain.prev
    WHERE chain.depth < :limit
)
SELECT key, prev, body FROM chain ORDER BY depth
"""
_NO_LIMIT = 2**62
_SQLITE_ERASURE = (
    "CREATE TABLE IF NOT EXISTS golem_blob_owners"
    " (conversation TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (conversation, key))",
    "CREATE INDEX IF NOT EXISTS golem_blob_owners_key ON golem_blob_owners (key)",
    "CREATE TABLE IF NOT EXISTS golem_blobs_erased"
    " (key TEXT PRIMARY KEY, erased_ms INTEGER NOT NULL, note TEXT NOT NULL)",
)


def _batches(items: Sequence[str]) -> Iterator[list[str]]:
    for i in range(0, len(items), 500):
        yield list(items[i : i + 500])


def _release_sqlite(
    db: sqlite3.Connection, conversations: Sequence[str], note: str
) -> tuple[str, ...]:
    """``release`` in one SQLite transaction (the caller's)."""
    held: set[str] = set()
    for batch in _batches(sorted(set(conversations))):
        marks = ",".join("?" * len(batch))
        held.update(
            k
            for (k,) in db.execute(
                f"SELECT key FROM golem_blob_owners WHERE conversation IN ({marks})", batch
            )
        )
        db.execute(f"DELETE FROM golem_blob_owners WHERE conversation IN ({marks})", batch)
    still: set[str] = set()
    for batch in _batches(sorted(held)):
        marks = ",".join("?" * len(batch))
        still.update(
            k
            for (k,) in db.execute(
                f"SELECT DISTINCT key FROM golem_blob_owners WHERE key IN ({marks})", batch
            )
        )
    removed = sorted(held - still)
    now = int(time.time() * 1000)
    for batch in _batches(removed):
        marks = ",".join("?" * len(batch))
        db.execute(f"DELETE FROM golem_blobs WHERE key IN ({marks})", batch)
        db.executemany(
            "INSERT OR IGNORE INTO golem_blobs_erased (key, erased_ms, note) VALUES (?, ?, ?)",
            [(k, now, note) for k in batch],
        )
    return tuple(removed)


_SYNCHRONOUS = ("full", "normal")


class SQLiteBlobs:
    """Blobs in a SQLite file (table ``golem_blobs``, WAL): every process of one host
    that opens the same path shares them. Safe across threads.

    ``synchronous`` is SQLite's flush after each write: ``"full"`` (the default) flushes
    the file to the disk before a write returns, so a blob a run's engine names (in
    Temporal's history, in a DBOS step) outlives a power loss or an operating system
    crash; ``"normal"`` flushes only at checkpoints: a write costs less CPU
    (``bench/durable_temporal.py`` compares a step with each), a killed process still
    loses nothing, but after a power loss the writes since the last checkpoint may be
    gone, and a run that needs one of them fails with ``RunError(stage="history")``
    (docs/durable.md)."""

    def __init__(
        self, path: str | Path, *, synchronous: Literal["full", "normal"] = "full"
    ) -> None:
        if synchronous not in _SYNCHRONOUS:
            raise UsageError(
                f"SQLiteBlobs(synchronous={synchronous!r}): expected one of"
                f" {', '.join(map(repr, _SYNCHRONOUS))}"
            )
        self.path = str(path)
        self.synchronous: Literal["full", "normal"] = synchronous
        self._lock = threading.Lock()
        self._recent = _Recent()  # what it wrote or read lately, served without a query
        self._db = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False)
        # per connection, not stored in the file: set before any write
        self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
        with self._lock, self._db:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA secure_delete=ON")  # an erased blob's bytes are zeroed
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS golem_blobs"
                " (key TEXT PRIMARY KEY, prev TEXT, body BLOB NOT NULL)"
            )
            for ddl in _SQLITE_ERASURE:
                self._db.execute(ddl)

    def __repr__(self) -> str:
        if self.synchronous == "full":
            return f"SQLiteBlobs({self.path!r})"
        return f"SQLiteBlobs({self.path!r}, synchronous={self.synchronous!r})"

    def put(self, rows: Sequence[Row]) -> None:
        owner = _OWNER.get()
        if rows:
            with self._lock, self._db:
                self._db.executemany(
                    "INSERT OR IGNORE INTO golem_blobs (key, prev, body) VALUES (?, ?, ?)", rows
                )
                if owner is not None:
                    self._db.executemany(
                        "INSERT OR IGNORE INTO golem_blob_owners (conversation, key) VALUES (?, ?)",
                        [(owner, r[0]) for r in rows],
                    )
            self._recent.keep([(r[0], r[2]) for r in rows])  # committed

    def release(self, conversations: Sequence[str], note: str) -> tuple[str, ...]:
        """Take ``conversations``' hold away; delete (and return, sorted) the keys no
        other conversation holds; then empty the WAL (``TRUNCATE``)."""
        with self._lock:
            with self._db:
                removed = _release_sqlite(self._db, conversations, note)
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        _forget()
        return removed

    def erased(self, key: str) -> str | None:
        """Why ``key`` was erased, or ``None``."""
        with self._lock:
            row = self._db.execute(
                "SELECT note FROM golem_blobs_erased WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else str(row[0])

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        out, rest = self._recent.hits(keys)
        if not rest:
            return out
        read: list[tuple[str, bytes]] = []
        with self._lock:
            for i in range(0, len(rest), 500):
                batch = rest[i : i + 500]
                marks = ",".join("?" * len(batch))
                query = f"SELECT key, body FROM golem_blobs WHERE key IN ({marks})"
                read += self._db.execute(query, batch).fetchall()
        self._recent.keep(read)
        out.update(read)
        return out

    def walk(self, head: str, limit: int | None) -> list[Row]:
        params = {"head": head, "limit": _NO_LIMIT if limit is None else limit}
        with self._lock:
            return [(k, p, bytes(b)) for k, p, b in self._db.execute(_WALK_SQL, params)]


# -- chains ---------------------------------------------------------------------------------


@frozen
class ChainKind(Generic[V]):
    """How the values of one kind of chain are written and read (and its cache)."""

    name: str
    encode: Callable[[V], bytes]
    decode: Callable[[bytes], V]
    cache: OrderedDict[str, Chain[V]]


@frozen
class Chain(Generic[V]):
    """A stored sequence: its ``values`` and the key of each one's node (same length)."""

    values: tuple[V, ...] = ()
    keys: tuple[str, ...] = ()

    @property
    def head(self) -> str | None:
        """The key standing for the whole sequence (``None`` when it is empty)."""
        return self.keys[-1] if self.keys else None


def _node(prev: str | None, value: bytes) -> bytes:
    return (prev or "").encode("ascii") + b"\n" + value


def _remember(kind: ChainKind[V], chain: Chain[V]) -> Chain[V]:
    head = chain.head
    if head is not None:
        kind.cache[head] = chain
        kind.cache.move_to_end(head)
        while len(kind.cache) > _CACHED:
            kind.cache.popitem(last=False)
    return chain


def extend_chain(
    store: BlobStore, kind: ChainKind[V], chain: Chain[V], values: Sequence[V]
) -> Chain[V]:
    """The chain of ``values``, stored: the nodes of the prefix ``values`` shares with
    ``chain`` are reused (compared by identity, then equality), the rest hashed and
    stored (idempotent, deterministic: the same values always give the same keys)."""
    old = chain.values
    if len(values) >= len(old) and tuple(values[: len(old)]) == old:
        same = len(old)  # the usual case, a run's chain grown at its end: compared in C
        # (a tuple compares its items by identity first), not item by item in Python,
        # which made every step cost more as the conversation grew
    else:
        same = 0
        for a, b in zip(old, values, strict=False):
            if a is not b and a != b:
                break
            same += 1
    if same == len(old) == len(values):
        return chain
    keys = list(chain.keys[:same])
    rows: list[Row] = []
    for value in values[same:]:
        prev = keys[-1] if keys else None
        body = _node(prev, kind.encode(value))
        key = key_of(body)
        rows.append((key, prev, body))
        keys.append(key)
    store.put(rows)
    return _remember(kind, Chain(tuple(values), tuple(keys)))


def load_chain(store: BlobStore, kind: ChainKind[V], head: str | None, where: str) -> Chain[V]:
    """The chain ``head`` stands for, read from ``store`` (or this process's cache of
    recently read and written chains of ``kind``: a key names one content).

    Raises:
        MissingBlob: a node is not in the store, or its bytes do not hash to its key.
    """
    if head is None:
        return Chain()
    cached = kind.cache.get(head)
    if cached is not None:
        kind.cache.move_to_end(head)
        return cached
    newest: list[tuple[str, bytes]] = []  # (key, value bytes), newest first
    key: str | None = head
    base: Chain[V] = Chain()
    limit: int | None = _WALK
    while key is not None:
        rows = store.walk(key, limit)
        if not rows:
            raise _missing(store, key, where, f"{kind.name} node")
        found = False
        for k, prev, body in rows:
            hit = kind.cache.get(k)
            if hit is not None:
                base, found = hit, True
                break
            if key_of(body) != k:
                raise MissingBlob(f"{where}: {kind.name} node {k} does not hold its content")
            cut = body.index(b"\n")
            if (body[:cut].decode("ascii") or None) != prev:
                raise MissingBlob(f"{where}: {kind.name} node {k} names another predecessor")
            newest.append((k, body[cut + 1 :]))
            key = prev
        if found:
            break
        limit = None  # not near a cached chain: read the rest in one query
    values = list(base.values)
    keys = list(base.keys)
    for k, value in reversed(newest):
        try:
            values.append(kind.decode(value))
        except (ValueError, TypeError) as e:
            raise CorruptRecord(f"{where}: {kind.name} node {k}: {e}") from None
        keys.append(k)
    return _remember(kind, Chain(tuple(values), tuple(keys)))


def _compact(value: JSON) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )


MESSAGE_CHAIN: ChainKind[Message] = ChainKind(
    "message", encode_message, decode_message_or_raise, OrderedDict()
)
"""A conversation: one node per message, in golem's message contract."""
LOG_CHAIN: ChainKind[JSON] = ChainKind("record", _compact, json.loads, OrderedDict())
"""A log of recorded JSON values (a Temporal run's outcomes, carried across
``continue_as_new``)."""


# -- handshakes ------------------------------------------------------------------------------

_HANDSHAKES: dict[int, tuple[BlobStore, str]] = {}  # by id(store): the store kept alive
_HANDSHAKES_LOCK = threading.Lock()


def handshake(store: BlobStore) -> str:
    """The key of this process's handshake blob in ``store``, written at its first use
    (bytes of its own, so no other store holds them unless it is this one)."""
    with _HANDSHAKES_LOCK:
        known = _HANDSHAKES.get(id(store))
        if known is not None and known[0] is store:
            return known[1]
        data = f"golem blob store handshake {uuid.uuid4()}".encode()
        key = key_of(data)
        with owned_by("golem:handshakes"):  # held: collection keeps it (engines._collect)
            store.put([(key, None, data)])
        _HANDSHAKES[id(store)] = (store, key)
        return key


def shares_store(store: BlobStore, key: str) -> bool:
    """Whether ``store`` holds the handshake blob ``key`` (the starter's store is this
    one); a read by key, as deterministic as any blob read."""
    return key in store.get([key])


# -- stashes --------------------------------------------------------------------------------


def stash(store: BlobStore, value: JSON, limit: int = 0) -> JSON:
    """A reference to ``value`` stored as a blob (``value`` itself when its JSON is at
    most ``limit`` bytes; by default every value goes by reference, so the engine's
    records hold no content: ADR 0152). Deterministic: the same value gives the same
    reference). Keys keep their order (a message's extra fields are ordered)."""
    ref, row = stash_row(value)
    if ref["size"] <= limit:
        return value
    store.put([row])
    return ref


def stash_row(value: JSON) -> tuple[JSON, Row]:
    """The reference ``stash`` makes of ``value`` (by default), and the row it stores."""
    data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )
    key = key_of(data)
    return {"type": _STASH_TAG, "key": key, "size": len(data)}, (key, None, data)


def is_stashed(value: JSON) -> bool:
    """Whether ``value`` is a reference ``stash`` made."""
    return (
        type(value) is dict
        and value.get("type") == _STASH_TAG
        and set(value)
        == {
            "type",
            "key",
            "size",
        }
    )


def unstash(store: BlobStore, value: JSON, where: str) -> JSON:
    """The value a ``stash`` result stands for (``value`` itself when it is not one).

    Raises:
        MissingBlob: the stashed blob is not in the store, or not what its key says.
    """
    if not is_stashed(value):
        return value
    key = value["key"]
    data = store.get([key]).get(key)
    if data is None:
        raise _missing(store, key, where, "blob")
    if key_of(data) != key:
        raise MissingBlob(f"{where}: blob {key} does not hold its content")
    return json.loads(data)


def unstash_held(store: BlobStore, value: JSON, where: str) -> JSON:
    """``unstash`` of a value another process stashed for the run (answers, steering
    messages a client sent), written again so the run's conversation (``owned_by``)
    holds it: erasing the conversation then erases it too."""
    if is_stashed(value) and _OWNER.get() is not None:
        key = value["key"]
        data = store.get([key]).get(key)
        if data is not None and key_of(data) == key:
            store.put([(key, None, data)])
    return unstash(store, value, where)


def messages_chain(
    store: BlobStore, messages: Sequence[Message], known: Chain[Message] | None = None
) -> Chain[Message]:
    """``messages`` stored as a chain (reusing ``known``'s nodes for a shared prefix)."""
    return extend_chain(store, MESSAGE_CHAIN, known or Chain(), messages)
