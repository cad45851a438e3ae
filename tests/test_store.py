# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Stored conversations (``golem_shell.store``) on SQLite (a file) and a real PostgreSQL.

One suite runs against both stores: round trips (unknown fields included), the
compare-and-set, fork, list, rows that no longer decode, misuse; then races: 50 writers
on one conversation (threads, and asyncio tasks), and 2 worker processes appending to
200 conversations. This file is also the worker: ``python test_store.py worker ...``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from store_backends import (  # noqa: F401 (fixtures)
    OWNER,
    Backend,
    Store,
    backend,
    postgres_backend,
    sqlite_backend,
    store,
    store_database,
    user,
)

from golem_core import (
    DataPart,
    Message,
    Role,
    TextPart,
    ToolCallPart,
    Usage,
    decode_history,
    decode_message,
    encode_history,
    encode_message,
)
from golem_shell import UsageError
from golem_shell.store import (
    CorruptHistoryError,
    HistoryConflict,
    HistoryStoreError,
    PostgresHistoryStore,
    SQLiteHistoryStore,
)

GOLDEN = Path(__file__).resolve().parent / "golden" / "v1"

# -- round trips ------------------------------------------------------------------------------


def test_empty_conversation_loads_as_empty(store: Store) -> None:
    assert store.load_sync(OWNER, "nobody-here") == ()
    assert store.list_conversations_sync(OWNER) == ()


@pytest.mark.parametrize("golden", sorted(p.name for p in GOLDEN.glob("*.json")))
def test_golden_histories_round_trip_byte_for_byte(store: Store, golden: str) -> None:
    history = decode_history((GOLDEN / golden).read_bytes()).unwrap()
    assert store.append_sync(OWNER, "c", history, expected_length=0) == len(history)
    loaded = store.load_sync(OWNER, "c")
    assert loaded == history
    assert encode_history(loaded) == encode_history(history)


def test_unknown_fields_and_parts_survive(store: Store) -> None:
    written_by_newer_golem = (
        b'{"role":"assistant","parts":[{"type":"text","text":"hi","cacheControl":{"t":1}},'
        b'{"type":"hologram","frames":[1,2]}],"priority":"high","usage":{"inputTokens":3,'
        b'"outputTokens":1,"costMicros":42}}'
    )
    message = decode_message(written_by_newer_golem).unwrap()
    store.append_sync(OWNER, "c", [message], expected_length=0)
    (loaded,) = store.load_sync(OWNER, "c")
    stored = json.loads(encode_message(loaded))
    assert stored == json.loads(written_by_newer_golem)
    assert stored["priority"] == "high" and stored["parts"][1]["type"] == "hologram"


def test_every_kind_of_message_round_trips(store: Store) -> None:
    history = (
        user("null \x00 byte, emoji \U0001f600, lone surrogate \ud800"),
        Message(
            role=Role.ASSISTANT,
            parts=(ToolCallPart(id="call_1", name="lookup", arguments='{"q": "x'),),
            usage=Usage(input_tokens=5, output_tokens=2),
            run_id="run-1",
            conversation_id="conv-1",
        ),
        Message(
            role=Role.TOOL,
            parts=(DataPart(data=b"\x00\xff", kind="image", media_type="image/png"),),
            tool_call_id="call_1",
            tool_name="lookup",
            failed=True,
        ),
    )
    store.append_sync(OWNER, "c", history, expected_length=0)
    assert store.load_sync(OWNER, "c") == history


def test_appends_accumulate_in_order(store: Store) -> None:
    assert store.append_sync(OWNER, "c", [user("1"), user("2")], expected_length=0) == 2
    assert (
        store.append_sync(OWNER, "c", [], expected_length=2) == 2
    )  # nothing to add: still checked
    assert store.append_sync(OWNER, "c", [user("3")], expected_length=2) == 3
    assert [m.text for m in store.load_sync(OWNER, "c")] == ["1", "2", "3"]


def test_async_methods_match_the_sync_ones(store: Store) -> None:
    async def main() -> None:
        assert await store.append(OWNER, "a", [user("1")], 0) == 1
        assert await store.append(OWNER, "a", [user("2")], 1) == 2
        await store.fork(OWNER, "a", 1, "b")
        assert [m.text for m in await store.load(OWNER, "b")] == ["1"]
        assert await store.list_conversations(OWNER) == ("a", "b")
        with pytest.raises(HistoryConflict):
            await store.append(OWNER, "a", [user("x")], 1)
        assert [m.text for m in store.load_sync(OWNER, "a")] == ["1", "2"]  # sync inside a loop too
        await store.aclose()

    asyncio.run(main())


def test_a_closed_store_says_so(store: Store) -> None:
    store.append_sync(OWNER, "a", [user("1")], 0)
    store.close()
    with pytest.raises(UsageError, match="is closed"):
        store.load_sync(OWNER, "a")

    async def main() -> None:
        with pytest.raises(UsageError, match="is closed"):
            await store.load(OWNER, "a")

    asyncio.run(main())


# -- compare-and-set --------------------------------------------------------------------------


def test_a_stale_append_is_refused_and_writes_nothing(store: Store) -> None:
    store.append_sync(OWNER, "conv-7", [user("1"), user("2")], expected_length=0)
    with pytest.raises(HistoryConflict) as caught:
        store.append_sync(OWNER, "conv-7", [user("a"), user("b"), user("c")], expected_length=1)
    error = caught.value
    assert (error.conversation_id, error.expected_length, error.actual_length) == ("conv-7", 1, 2)
    assert "'conv-7'" in str(error) and "2 messages" in str(error) and "expected 1" in str(error)
    assert isinstance(error, HistoryStoreError)
    assert [m.text for m in store.load_sync(OWNER, "conv-7")] == ["1", "2"]


def test_creating_an_existing_conversation_conflicts(store: Store) -> None:
    store.append_sync(OWNER, "c", [user("1")], expected_length=0)
    with pytest.raises(HistoryConflict, match="has 1 message, expected 0"):
        store.append_sync(OWNER, "c", [user("again")], expected_length=0)


def test_an_append_longer_than_the_conversation_conflicts(store: Store) -> None:
    with pytest.raises(HistoryConflict) as caught:
        store.append_sync(OWNER, "c", [user("1")], expected_length=3)
    assert caught.value.actual_length == 0
    assert store.load_sync(OWNER, "c") == ()


RIVAL_ROW = "INSERT INTO {M} VALUES (?, ?, ?, ?, ?, ?, ?)"
RIVAL_LENGTH = "UPDATE {B} SET length = 2, revision = revision + 1 WHERE owner = ? AND branch = ?"


def test_a_writer_holding_the_branch_makes_the_store_wait_then_conflict(
    postgres_backend: Backend,
) -> None:
    """A rival transaction holds the branch row while the store appends at the same length.

    (On SQLite the same interleaving is the write lock: next test.)
    """
    import psycopg

    backend = postgres_backend
    store = backend.open()
    store.append_sync(OWNER, "c", [user("0")], expected_length=0)
    rival = psycopg.connect(backend.target)
    rival.execute(backend.sql("SELECT length FROM {B} WHERE owner = ? FOR UPDATE"), (OWNER,))
    outcome: list[BaseException | int] = []

    def append() -> None:
        try:
            outcome.append(store.append_sync(OWNER, "c", [user("a"), user("b"), user("c")], 1))
        except BaseException as e:
            outcome.append(e)

    worker = threading.Thread(target=append)
    worker.start()
    blocked = _wait_for_lock_wait(backend.target, "SELECT")
    rival.execute(
        backend.sql(RIVAL_ROW),
        (OWNER, "c", "main", 1, encode_message(user("rival")).decode(), "s", "l"),
    )
    rival.execute(backend.sql(RIVAL_LENGTH), (OWNER, "main"))
    rival.commit()
    rival.close()
    worker.join(30)
    assert blocked, "the store's append never waited for the rival's lock"
    (error,) = outcome
    assert isinstance(error, HistoryConflict)
    assert (error.expected_length, error.actual_length) == (1, 2)
    assert [m.text for m in store.load_sync(OWNER, "c")] == ["0", "rival"]


def test_a_writer_holding_the_sqlite_lock_makes_the_store_wait_then_conflict(
    sqlite_backend: Backend,
) -> None:
    backend = sqlite_backend
    store = backend.open()
    store.append_sync(OWNER, "c", [user("0")], expected_length=0)
    rival = sqlite3.connect(backend.target, isolation_level=None)
    rival.execute("BEGIN IMMEDIATE")
    rival.execute(
        backend.sql(RIVAL_ROW),
        (OWNER, "c", "main", 1, encode_message(user("rival")).decode(), "s", "l"),
    )
    rival.execute(backend.sql(RIVAL_LENGTH), (OWNER, "main"))
    outcome: list[BaseException | int] = []
    worker = threading.Thread(
        target=lambda: outcome.append(
            _attempt(lambda: store.append_sync(OWNER, "c", [user("a")], 1))
        )
    )
    worker.start()
    worker.join(0.3)  # no assert on time: the store waits for the lock however long this is
    rival.execute("COMMIT")
    rival.close()
    worker.join(30)
    (error,) = outcome
    assert isinstance(error, HistoryConflict) and error.actual_length == 2
    assert [m.text for m in store.load_sync(OWNER, "c")] == ["0", "rival"]


def _wait_for_lock_wait(url: str, statement: str) -> bool:
    """Whether a statement starting so is seen waiting for a lock (polled, bounded)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as watcher:
        for _ in range(600):
            waiting = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND query LIKE %s",
                (f"{statement}%",),
            ).fetchone()
            if waiting and waiting[0]:
                return True
            time.sleep(0.05)
    return False


def test_a_cancelled_async_append_writes_nothing_and_the_store_goes_on(
    postgres_backend: Backend,
) -> None:
    import psycopg

    backend = postgres_backend
    store = backend.open()
    store.append_sync(OWNER, "c", [user("0")], expected_length=0)
    rival = psycopg.connect(backend.target)
    rival.execute(
        backend.sql(RIVAL_ROW),
        (OWNER, "c", "main", 1, encode_message(user("rival")).decode(), "s", "l"),
    )  # uncommitted: the store's insert at position 1 waits for it

    async def main() -> None:
        task = asyncio.create_task(store.append(OWNER, "c", [user("a"), user("b")], 1))
        assert await asyncio.to_thread(_wait_for_lock_wait, backend.target, "INSERT")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        rival.rollback()  # the rival gives up: position 1 is free again
        rival.close()
        assert await store.append(OWNER, "c", [user("after")], 1) == 2  # the store goes on
        await store.aclose()

    asyncio.run(main())
    assert [m.text for m in backend.open().load_sync(OWNER, "c")] == ["0", "after"]


def _attempt(call: Callable[[], int]) -> BaseException | int:
    try:
        return call()
    except BaseException as e:
        return e


# -- fork and list ----------------------------------------------------------------------------


def test_fork_copies_a_verbatim_prefix(store: Store) -> None:
    stamped = tuple(
        Message(role=Role.USER, parts=(TextPart(str(i)),), run_id="r1", conversation_id="a")
        for i in range(4)
    )
    store.append_sync(OWNER, "a", stamped, expected_length=0)
    store.fork_sync(OWNER, "a", 2, "b")
    assert store.load_sync(OWNER, "b") == stamped[:2]  # stamps kept: the fork is the same past
    assert store.append_sync(OWNER, "b", [user("b2")], expected_length=2) == 3
    assert store.load_sync(OWNER, "a") == stamped  # the original is untouched
    store.fork_sync(OWNER, "a", 4, "whole")
    assert store.load_sync(OWNER, "whole") == stamped


def test_fork_at_zero_stores_nothing(store: Store) -> None:
    store.append_sync(OWNER, "a", [user("1")], expected_length=0)
    store.fork_sync(OWNER, "a", 0, "empty")
    assert store.load_sync(OWNER, "empty") == ()
    assert store.list_conversations_sync(OWNER) == ("a",)


def test_fork_refuses_bad_requests(store: Store) -> None:
    store.append_sync(OWNER, "a", [user("1"), user("2")], expected_length=0)
    store.append_sync(OWNER, "taken", [user("x")], expected_length=0)
    with pytest.raises(UsageError, match="at 3: it has 2 messages"):
        store.fork_sync(OWNER, "a", 3, "b")
    with pytest.raises(HistoryConflict) as caught:
        store.fork_sync(OWNER, "a", 1, "taken")
    assert (caught.value.conversation_id, caught.value.expected_length) == ("taken", 0)
    with pytest.raises(UsageError, match="into itself"):
        store.fork_sync(OWNER, "a", 1, "a")
    assert store.list_conversations_sync(OWNER) == ("a", "taken")
    assert [m.text for m in store.load_sync(OWNER, "taken")] == ["x"]


def test_list_conversations_is_sorted_and_distinct(store: Store) -> None:
    for cid in ["b", "a", "c-1", "a-2"]:
        store.append_sync(OWNER, cid, [user("1"), user("2")], expected_length=0)
    assert store.list_conversations_sync(OWNER) == ("a", "a-2", "b", "c-1")


def test_stores_on_one_table_share_conversations(backend: Backend) -> None:
    first, second = backend.open(), backend.open()
    first.append_sync(OWNER, "c", [user("1")], expected_length=0)
    assert second.append_sync(OWNER, "c", [user("2")], expected_length=1) == 2
    assert [m.text for m in first.load_sync(OWNER, "c")] == ["1", "2"]


# -- rows that no longer decode ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ('{"role": "wizard", "parts": []}', "role"),
        ("{not json", "not JSON"),
        ('{"role": "user", "parts": [{"type": "text"}]}', "text"),
        ("[]", "expected"),
    ],
)
def test_a_row_that_no_longer_decodes_is_named(
    store: Store, backend: Backend, row: str, reason: str
) -> None:
    store.append_sync(OWNER, "c", [user("fine"), user("replaced")], expected_length=0)
    backend.raw("UPDATE {M} SET message = ? WHERE position = 1", row)
    with pytest.raises(CorruptHistoryError) as caught:
        store.load_sync(OWNER, "c")
    error = caught.value
    assert (error.conversation_id, error.position) == ("c", 1)
    assert "'c'" in str(error) and "position 1" in str(error) and reason in str(error)


def test_a_missing_position_is_named(store: Store, backend: Backend) -> None:
    store.append_sync(OWNER, "c", [user("0"), user("1"), user("2")], expected_length=0)
    backend.raw("DELETE FROM {M} WHERE position = 1")
    with pytest.raises(CorruptHistoryError, match=r"position 1: .*no row at this position"):
        store.load_sync(OWNER, "c")


def test_a_non_text_row_is_named(sqlite_backend: Backend) -> None:
    """SQLite stores whatever it is given; PostgreSQL's TEXT column holds only text."""
    backend = sqlite_backend
    store = backend.open()
    store.append_sync(OWNER, "c", [user("0")], expected_length=0)
    backend.raw("UPDATE {M} SET message = 42")
    with pytest.raises(CorruptHistoryError, match="position 0"):
        store.load_sync(OWNER, "c")


# -- misuse -----------------------------------------------------------------------------------


def test_misuse_is_refused_before_touching_the_database(store: Store) -> None:
    with pytest.raises(UsageError, match="conversation_id must be a non-empty string"):
        store.append_sync(OWNER, "", [user("1")], 0)
    with pytest.raises(UsageError, match="expected_length must be an int >= 0"):
        store.append_sync(OWNER, "c", [user("1")], -1)
    with pytest.raises(UsageError, match="expected_length"):
        store.append_sync(OWNER, "c", [user("1")], True)
    with pytest.raises(UsageError, match="sequence of Message, got Message"):
        store.append_sync(OWNER, "c", user("1"), 0)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"messages\[1\] is dict"):
        store.append_sync(OWNER, "c", [user("1"), {"role": "user"}], 0)  # type: ignore[list-item]
    with pytest.raises(UsageError, match="at must be an int >= 0"):
        store.fork_sync(OWNER, "c", -1, "d")
    with pytest.raises(UsageError, match="new_id"):
        store.fork_sync(OWNER, "c", 0, "")
    assert store.list_conversations_sync(OWNER) == ()


def test_a_bad_table_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="table name"):
        SQLiteHistoryStore(tmp_path / "h.db", table="x; DROP TABLE y")
    with pytest.raises(UsageError, match="table name"):
        PostgresHistoryStore("postgresql://localhost/db", table="a.b")


def test_postgres_without_psycopg_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(UsageError, match=r"pip install 'golem-agents\[postgres\]'"):
        PostgresHistoryStore("postgresql://localhost/db")


def test_the_postgres_password_never_shows(postgres_url: str) -> None:
    wrong = postgres_url.replace(":golem@", ":s3cret-pw@")
    store = PostgresHistoryStore(wrong)
    assert "s3cret-pw" not in repr(store) and "***" in repr(store)
    with pytest.raises(HistoryStoreError) as caught:
        store.load_sync(OWNER, "c")
    assert "s3cret-pw" not in str(caught.value)
    assert "password authentication failed" in str(caught.value)
    conninfo = PostgresHistoryStore("host=127.0.0.1 password=s3cret-pw dbname=x")
    assert "s3cret-pw" not in repr(conninfo)


def test_an_unusable_sqlite_path_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(HistoryStoreError, match="SQLite store"):
        SQLiteHistoryStore(tmp_path / "no-such-dir" / "h.db")


# -- races ------------------------------------------------------------------------------------

WRITERS = 50


def test_50_writers_at_one_position_exactly_one_wins(backend: Backend) -> None:
    stores = [backend.open() for _ in range(WRITERS)]
    barrier = threading.Barrier(WRITERS)
    outcomes: list[BaseException | int] = [0] * WRITERS

    def write(i: int) -> None:
        barrier.wait()
        outcomes[i] = _attempt(lambda: stores[i].append_sync(OWNER, "c", [user(f"w{i}")], 0))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    winners = [i for i, o in enumerate(outcomes) if o == 1]
    losers = [o for o in outcomes if isinstance(o, HistoryConflict)]
    assert len(winners) == 1 and len(losers) == WRITERS - 1, outcomes
    assert all(
        (e.conversation_id, e.expected_length, e.actual_length) == ("c", 0, 1) for e in losers
    )
    assert [m.text for m in stores[0].load_sync(OWNER, "c")] == [f"w{winners[0]}"]


def _retry_until_stored(store: Store, cid: str, message: Message) -> int:
    """Append at the end as loaded; on a conflict reload and retry. Returns the conflicts."""
    conflicts = 0
    while True:
        history = store.load_sync(OWNER, cid)
        try:
            store.append_sync(OWNER, cid, [message], expected_length=len(history))
            return conflicts
        except HistoryConflict as e:
            assert e.actual_length > e.expected_length == len(history)
            conflicts += 1


def test_50_writers_racing_for_every_position_one_winner_each(backend: Backend) -> None:
    stores = [backend.open() for _ in range(WRITERS)]
    barrier = threading.Barrier(WRITERS)
    conflicts = [0] * WRITERS

    def write(i: int) -> None:
        barrier.wait()
        conflicts[i] = _retry_until_stored(stores[i], "c", user(f"w{i}"))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    texts = [m.text for m in stores[0].load_sync(OWNER, "c")]
    assert len(texts) == WRITERS  # one message per position
    assert sorted(texts) == sorted(f"w{i}" for i in range(WRITERS))  # each writer exactly once
    assert all(c >= 0 for c in conflicts)


def test_50_asyncio_tasks_with_their_own_connections_one_winner_per_position(
    backend: Backend,
) -> None:
    stores = [backend.open() for _ in range(WRITERS)]

    async def write(i: int, start: asyncio.Event) -> tuple[int, int]:
        await start.wait()
        rounds = conflicts = 0
        while True:
            rounds += 1
            history = await stores[i].load(OWNER, "c")
            try:
                await stores[i].append(OWNER, "c", [user(f"t{i}")], expected_length=len(history))
                return rounds, conflicts
            except HistoryConflict:
                conflicts += 1

    async def main() -> list[tuple[int, int]]:
        start = asyncio.Event()
        tasks = [asyncio.create_task(write(i, start)) for i in range(WRITERS)]
        await asyncio.sleep(0)
        start.set()
        results = await asyncio.gather(*tasks)
        for s in stores:
            await s.aclose()
        return results

    results = asyncio.run(main())
    texts = [m.text for m in backend.open().load_sync(OWNER, "c")]
    assert sorted(texts) == sorted(f"t{i}" for i in range(WRITERS))
    assert sum(rounds - conflicts for rounds, conflicts in results) == WRITERS


# -- two worker processes, 200 conversations --------------------------------------------------

CONVERSATIONS = 200
HOT = "hot"  # one conversation both workers append to after every step: they collide on it


def test_two_processes_append_to_200_conversations_and_nothing_is_lost(
    backend: Backend, tmp_path: Path
) -> None:
    backend.open()  # creates the table before the workers race for it
    go = tmp_path / "go"
    names = ("w0", "w1")
    command = [sys.executable, __file__, "worker", backend.kind, backend.target, backend.table]
    workers = [
        subprocess.Popen(
            [*command, name, str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name in names
    ]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{n}").exists() for n in names):  # both connected
        assert all(w.poll() is None for w in workers), [w.communicate() for w in workers]
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.01)
    go.touch()  # then both start at once
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err
        reports.append(json.loads(out))
    print("two workers:", reports)
    assert all(r["stored"] == 2 * CONVERSATIONS for r in reports)
    store = backend.open()
    assert len(store.list_conversations_sync(OWNER)) == CONVERSATIONS + 1
    for c in range(CONVERSATIONS):
        texts = [m.text for m in store.load_sync(OWNER, f"conv-{c:03}")]
        assert sorted(texts) == [f"{w}:{c}" for w in names]
    hot = [m.text for m in store.load_sync(OWNER, HOT)]
    assert len(hot) == len(names) * CONVERSATIONS  # every append landed exactly once
    for w in names:  # each worker's own appends in its own order
        assert [t for t in hot if t.startswith(w)] == [f"{w}:hot:{c}" for c in range(CONVERSATIONS)]


def _worker(kind: str, target: str, table: str, name: str, go: str) -> None:
    store: Store = (
        SQLiteHistoryStore(target, table=table)
        if kind == "sqlite"
        else PostgresHistoryStore(target, table=table)
    )
    store.list_conversations_sync(OWNER)  # connected before the start
    Path(go).with_name(f"ready-{name}").touch()
    deadline = time.monotonic() + 60
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.01)
    stored = conflicts = 0
    for c in range(CONVERSATIONS):
        conflicts += _retry_until_stored(store, f"conv-{c:03}", user(f"{name}:{c}"))
        conflicts += _retry_until_stored(store, HOT, user(f"{name}:hot:{c}"))
        stored += 2
    store.close()
    print(json.dumps({"stored": stored, "conflicts": conflicts}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        _worker(*sys.argv[2:7])
    else:
        sys.exit("usage: test_store.py worker KIND TARGET TABLE NAME GO_FILE")
