# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Issue 33 item 7: the stores on a real PostgreSQL under concurrency, with racing processes.

Each test forces one interleaving instead of hoping for it: the first process runs an
operation until just before a chosen statement (``Pause``: the n-th statement matching
a pattern) and waits there, inside its transaction; the second process then runs its
operation until it finishes or waits on a lock the first one holds (read from
``pg_stat_activity``); then the first goes on. On the broken code each test fails every
time (the second operation slips into the first one's gap); on the fixed code the
second either waits for the first or cannot see (or spoil) what the first is doing.

- ``reencrypt`` racing ``erase`` wrote the erased content back; racing ``delete``, it
  left a fork's materialized rows under the old key;
- ``prune(older_than=...)`` deleted a conversation whose append was acknowledged after
  prune picked its candidates;
- ``verify`` reported ``unsigned``/``truncated`` while another worker appended and
  erased; ``load`` raised ``CorruptHistoryError`` while another worker deleted a fork's
  source.
"""

from __future__ import annotations

import multiprocessing
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from store_backends import (  # noqa: F401 (fixtures)
    OWNER,
    Backend,
    Store,
    postgres_backend,
    store_database,
    texts,
    user,
)

from golem_shell.store import ERASED_TEXT, EncryptionKeys, PostgresHistoryStore
from golem_shell.store._sql import Query, Row

pytest.importorskip("psycopg")

K1 = b"k" * 32
K2 = b"j" * 32
_WAIT = 60.0  # a bound for a step that takes milliseconds: only a hang reaches it


def old_keys() -> EncryptionKeys:
    return EncryptionKeys({"k1": K1}, current="k1")


def rotated_keys() -> EncryptionKeys:
    return EncryptionKeys({"k1": K1, "k2": K2}, current="k2")


def new_keys_only() -> EncryptionKeys:
    return EncryptionKeys({"k2": K2}, current="k2")


class _Pause:
    """Where the first process stops: before the ``nth`` statement matching ``pattern``."""

    def __init__(self, pattern: str, nth: int, reached: Any, go: Any) -> None:
        self.pattern = re.compile(pattern)
        self.nth = nth
        self.seen = 0
        self.armed = False
        self.reached = reached
        self.go = go

    def before(self, query: Query) -> None:
        if not self.armed or not self.pattern.search(query.sql):
            return
        self.seen += 1
        if self.seen == self.nth:
            self.reached.set()
            self.go.wait(_WAIT)


class _PausingStore(PostgresHistoryStore):
    """A ``PostgresHistoryStore`` whose sync statements pass through ``pause`` first."""

    pause: _Pause | None = None

    def _executor(self, connection: Any) -> Callable[[Query], list[Row]]:
        execute = super()._executor(connection)
        pause = self.pause

        def paused(query: Query) -> list[Row]:
            if pause is not None:
                pause.before(query)
            return execute(query)

        return paused


Job = Callable[[Store], object]


def _worker(
    url: str,
    table: str,
    name: str,
    job: Job,
    options: dict[str, Any],
    pause: _Pause | None,
    ready: Any,
    start: Any,
    done: Any,
    results: Any,
) -> None:
    try:
        store = _PausingStore(f"{url}?application_name={name}", table=table, **options)
        store.pause = pause
        try:
            # Connect (the schema's CREATE ... IF NOT EXISTS waits for a writer's table
            # lock) before either operation starts: only the operations may meet.
            store.list_conversations_sync("warm-up")
            ready.set()
            start.wait(_WAIT)
            if pause is not None:
                pause.armed = True
            outcome: tuple[str, object] = ("ok", job(store))
        finally:
            store.close()
    except BaseException as e:
        outcome = ("error", f"{type(e).__name__}: {e}")
    results.put((name, outcome))
    done.set()


def _done_or_waiting(backend: Backend, name: str, done: Any) -> str:
    """Wait until process ``name`` finished its operation or waits on a lock."""
    deadline = time.monotonic() + _WAIT
    while not done.is_set():
        rows = backend.raw(
            "SELECT wait_event_type FROM pg_stat_activity WHERE application_name = ?", name
        )
        if any(r[0] == "Lock" for r in rows):
            return "waiting"
        assert time.monotonic() < deadline, f"{name} neither finished nor waited on a lock"
        done.wait(0.01)
    return "done"


def race(
    backend: Backend,
    first: Job,
    pattern: str,
    second: Job,
    *,
    nth: int = 1,
    first_options: dict[str, Any] | None = None,
    second_options: dict[str, Any] | None = None,
) -> tuple[tuple[str, object], tuple[str, object], str]:
    """Run ``first`` until just before its ``nth`` statement matching ``pattern``, then
    ``second`` until it is done or waits on a lock, then let ``first`` go on.

    Returns both outcomes (``("ok", value)`` or ``("error", text)``) and whether the
    second finished inside the first one's gap (``"done"``) or waited (``"waiting"``).
    """
    context = multiprocessing.get_context("fork")  # the children inherit golem's imports
    reached, go = context.Event(), context.Event()
    ready_a, ready_b, start_a, start_b = (context.Event() for _ in range(4))
    done_a, done_b = context.Event(), context.Event()
    results = context.Queue()
    tag = backend.table
    pause = _Pause(pattern, nth, reached, go)
    a = context.Process(
        target=_worker,
        args=(backend.target, tag, f"{tag}_a", first, first_options or {}, pause, ready_a,
              start_a, done_a, results),
    )  # fmt: skip
    b = context.Process(
        target=_worker,
        args=(backend.target, tag, f"{tag}_b", second, second_options or {}, None, ready_b,
              start_b, done_b, results),
    )  # fmt: skip
    a.start()
    b.start()
    try:
        if not (ready_a.wait(_WAIT) and ready_b.wait(_WAIT)):
            raise AssertionError(f"a process did not connect: {_drain(results)}")
        start_a.set()
        if not reached.wait(_WAIT):
            raise AssertionError(f"the first process never reached {pattern!r}: {_drain(results)}")
        start_b.set()
        gap = _done_or_waiting(backend, f"{tag}_b", done_b)
        go.set()
        outcomes = dict(results.get(timeout=_WAIT) for _ in range(2))
    finally:
        for event in (start_a, start_b, go):
            event.set()
        for p in (a, b):
            p.join(_WAIT)
            if p.is_alive():
                p.kill()
    return outcomes[f"{tag}_a"], outcomes[f"{tag}_b"], gap


def _drain(results: Any) -> list[object]:
    found = []
    while not results.empty():
        found.append(results.get())
    return found


# -- reencrypt racing erase and delete ---------------------------------------------------------

_REENCRYPT_WRITES = r"UPDATE \w+_messages SET message"


def test_reencrypt_never_writes_erased_content_back(postgres_backend: Backend) -> None:
    setup = postgres_backend.open(encryption=old_keys())
    setup.append_sync(OWNER, "c", [user("hello"), user("secret 4111"), user("bye")], 0)
    setup.close()

    first, second, _ = race(
        postgres_backend,
        lambda s: s.reencrypt_sync(),
        _REENCRYPT_WRITES,
        lambda s: s.erase_sync(OWNER, "c", 1).conversations,
        first_options={"encryption": rotated_keys()},
        second_options={"encryption": rotated_keys()},
    )
    assert first[0] == "ok" and second == ("ok", ("c",)), (first, second)
    after = postgres_backend.open(encryption=new_keys_only())  # the old key is dropped
    assert texts(after.load_sync(OWNER, "c")) == ["hello", ERASED_TEXT, "bye"]
    assert after.verify_sync(OWNER, "c").intact


def test_reencrypt_leaves_no_row_of_a_materialized_fork_under_the_old_key(
    postgres_backend: Backend,
) -> None:
    setup = postgres_backend.open(encryption=old_keys())
    setup.append_sync(OWNER, "source", [user("one"), user("two"), user("three")], 0)
    setup.fork_sync(OWNER, "source", 2, "fork")
    setup.append_sync(OWNER, "other", [user("elsewhere")], 0)
    setup.close()

    first, second, _ = race(
        postgres_backend,
        lambda s: s.reencrypt_sync(),
        _REENCRYPT_WRITES,
        lambda s: s.delete_sync(OWNER, "source").conversations,
        first_options={"encryption": rotated_keys()},
        second_options={"encryption": rotated_keys()},
    )
    assert first[0] == "ok" and second == ("ok", ("source",)), (first, second)
    after = postgres_backend.open(encryption=new_keys_only())  # as the docs say: drop it
    assert texts(after.load_sync(OWNER, "fork")) == ["one", "two"]
    assert texts(after.load_sync(OWNER, "other")) == ["elsewhere"]
    assert after.list_conversations_sync(OWNER) == ("fork", "other")
    assert after.verify_sync(OWNER, "fork").intact


# -- prune racing an append --------------------------------------------------------------------

_PRUNE_LOCKS = r"pg_advisory_xact_lock\("


@pytest.mark.parametrize("owner", [OWNER, None], ids=["one-owner", "every-owner"])
def test_prune_keeps_a_conversation_appended_to_after_it_looked(
    postgres_backend: Backend, owner: str | None
) -> None:
    long_ago = postgres_backend.open(clock=lambda: 1_000.0)  # 1970: older than any cut-off
    long_ago.append_sync(OWNER, "revived", [user("old")], 0)
    long_ago.append_sync(OWNER, "stale", [user("old too")], 0)
    long_ago.close()
    cutoff = datetime(2000, 1, 1, tzinfo=UTC)

    first, second, _ = race(
        postgres_backend,
        lambda s: s.prune_sync(owner=owner, older_than=cutoff).conversations,
        _PRUNE_LOCKS,
        lambda s: s.append_sync(OWNER, "revived", [user("new")], 1),
    )
    assert second == ("ok", 2)  # acknowledged: the append must not be lost
    assert first == ("ok", ("stale",))
    check = postgres_backend.open()
    assert texts(check.load_sync(OWNER, "revived")) == ["old", "new"]
    assert check.list_conversations_sync(OWNER) == ("revived",)


def test_prune_keeps_a_conversation_whose_append_is_in_flight(postgres_backend: Backend) -> None:
    """The append is the one stopped: it has written its rows and not yet its
    conversation's time when the prune starts; the prune must not decide from the old
    time and delete what the append then acknowledges."""
    long_ago = postgres_backend.open(clock=lambda: 1_000.0)
    long_ago.append_sync(OWNER, "revived", [user("old")], 0)
    long_ago.append_sync(OWNER, "stale", [user("old too")], 0)
    long_ago.close()
    cutoff = datetime(2000, 1, 1, tzinfo=UTC)

    first, second, gap = race(
        postgres_backend,
        lambda s: s.append_sync(OWNER, "revived", [user("new")], 1),
        r"UPDATE \w+_conversations SET updated_ms",
        lambda s: s.prune_sync(owner=OWNER, older_than=cutoff).conversations,
    )
    assert gap == "waiting"
    assert first == ("ok", 2)
    assert second == ("ok", ("stale",))
    check = postgres_backend.open()
    assert texts(check.load_sync(OWNER, "revived")) == ["old", "new"]


# -- reads see one snapshot --------------------------------------------------------------------


def test_verify_of_an_untouched_store_is_intact_while_another_worker_writes(
    postgres_backend: Backend,
) -> None:
    """``verify`` pauses between reading the branches and reading their rows; another
    worker appends and erases in that gap: the report is of one state, intact."""
    setup = postgres_backend.open(signing_keys=K1)
    setup.append_sync(OWNER, "c", [user("a"), user("secret"), user("c")], 0)
    setup.close()

    def append_and_erase(s: Store) -> int:
        s.append_sync(OWNER, "c", [user("d")], 3)
        s.erase_sync(OWNER, "c", 1)
        return len(s.load_sync(OWNER, "c"))

    first, second, gap = race(
        postgres_backend,
        lambda s: (s.verify_sync(OWNER, "c").findings, s.verify_sync(OWNER, "c").intact),
        r"SELECT position, message, seal, link",
        append_and_erase,
        first_options={"signing_keys": K1},
        second_options={"signing_keys": K1},
    )
    assert gap == "done"  # a reader holds no lock a writer waits for
    assert second == ("ok", 4)
    assert first == ("ok", ((), True))


@pytest.mark.parametrize(
    ("pattern", "nth"),
    [(r"FROM \w+_branches", 2), (r"FROM \w+_messages", 1)],
    ids=["before-the-parent-branch", "before-the-rows"],
)
def test_load_of_a_fork_while_its_source_is_deleted(
    postgres_backend: Backend, pattern: str, nth: int
) -> None:
    """``load`` of a fork pauses before it reads its source's branch (or the rows); the
    source is deleted in that gap (the fork gets its own copy): the load is of one state."""
    setup = postgres_backend.open()
    setup.append_sync(OWNER, "source", [user("one"), user("two"), user("three")], 0)
    setup.fork_sync(OWNER, "source", 2, "fork")
    setup.append_sync(OWNER, "fork", [user("fork's own")], 2)
    setup.close()

    first, second, gap = race(
        postgres_backend,
        lambda s: texts(s.load_sync(OWNER, "fork")),
        pattern,
        lambda s: s.delete_sync(OWNER, "source").conversations,
        nth=nth,
    )
    assert gap == "done"
    assert second == ("ok", ("source",))
    assert first == ("ok", ["one", "two", "fork's own"])
    assert texts(postgres_backend.open().load_sync(OWNER, "fork")) == ["one", "two", "fork's own"]


# -- a new connection beside a write in flight ---------------------------------------------------


def test_a_new_store_opens_beside_a_write_in_flight(postgres_backend: Backend) -> None:
    """Opening a store checks its tables; on existing tables that must not wait for (and
    then hold up every later write behind) a write transaction in flight: ``CREATE INDEX
    IF NOT EXISTS`` takes a table lock even when the index exists."""
    setup = postgres_backend.open()
    setup.append_sync(OWNER, "c", [user("a")], 0)
    setup.close()

    def open_fresh(s: Store) -> tuple[str, ...]:
        assert isinstance(s, PostgresHistoryStore)
        with PostgresHistoryStore(s._url, table=postgres_backend.table) as fresh:
            return fresh.list_conversations_sync(OWNER)

    first, second, gap = race(
        postgres_backend,
        lambda s: s.append_sync(OWNER, "c", [user("b")], 1),
        r"UPDATE \w+_conversations SET updated_ms",
        open_fresh,
    )
    assert (gap, second, first) == ("done", ("ok", ("c",)), ("ok", 2))
