"""Issue 47 item 2: bounded storage of the durable engines' blobs (ADR 0154).

``collect`` deletes the blobs no conversation has held for its grace (two-phase: marked
unheld, then deleted if still unheld), keeps handshakes and every held blob, and drops old
erasure notes; ``unhold`` takes a conversation's hold away without deleting, so a run of
it that writes its history again keeps it. A collection racing a run that writes (holds)
a blob it is deleting never leaves the run without it: on SQLite by SQLite's single
writer, on PostgreSQL by the advisory lock every ``put`` shares.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from golem_core import Message, Role, TextPart
from golem_shell.engines._blobs import (
    MESSAGE_CHAIN,
    Chain,
    MemoryBlobs,
    SQLiteBlobs,
    extend_chain,
    handshake,
    key_of,
    load_chain,
    owned_by,
    stash,
    unstash,
)
from golem_shell.engines._blobs_sql import SQLBlobs
from golem_shell.engines._collect import Collected, collect, unhold

KINDS = ["memory", "sqlite", "sql-sqlite", "sql-postgres"]
TURNS = (Message.user("hello"), Message(Role.ASSISTANT, (TextPart("hi there"),)))


def _store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if kind == "memory":
        return MemoryBlobs()
    if kind == "sqlite":
        return SQLiteBlobs(tmp_path / "blobs.sqlite")
    import sqlalchemy as sa

    if kind == "sql-sqlite":
        return SQLBlobs(sa.create_engine(f"sqlite:///{tmp_path / 'sql.sqlite'}"))
    from postgres_server import create_database

    url = create_database(request.getfixturevalue("postgres_url"), f"gc_{uuid.uuid4().hex[:8]}")
    return SQLBlobs(sa.create_engine(url.replace("postgresql:", "postgresql+psycopg:", 1)))


def _count(store: Any) -> int:
    if isinstance(store, MemoryBlobs):
        return len(store._rows)
    if isinstance(store, SQLiteBlobs):
        return int(store._db.execute("SELECT COUNT(*) FROM golem_blobs").fetchone()[0])
    with store.engine.connect() as c:
        return int(c.exec_driver_sql("SELECT COUNT(*) FROM golem_blobs").scalar_one())


@pytest.mark.parametrize("kind", KINDS)
def test_collect_deletes_what_nobody_holds_after_its_grace(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = _store(kind, tmp_path, request)
    hello = handshake(store)
    with owned_by("c1"):
        one = extend_chain(store, MESSAGE_CHAIN, Chain(), TURNS)
        ref = stash(store, {"said": "c1's"})
    loose = stash(store, {"held": "by nobody"})  # a client's stash no run read
    first = collect(store, grace=0.5)  # marks the loose blob, deletes nothing yet
    assert first.keys == () and first.pending == 1
    assert unstash(store, loose, "t") == {"held": "by nobody"}
    time.sleep(0.6)
    assert collect(store, grace=0.5).keys == (loose["key"],)  # unheld for its grace
    assert _count(store) == 4  # the handshake and c1's three
    assert unhold(store, ["c1"]) == 3
    assert collect(store, grace=3600).keys == ()  # c1's are marked, kept for the grace
    assert set(collect(store, grace=0).keys) == {*one.keys, ref["key"]}
    assert store.get([hello]) != {}  # a handshake is held: a client's runs need it
    assert _count(store) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_blob_held_again_within_the_grace_is_kept(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A conversation's runs were forgotten (unheld); a new run of it starts from its
    stored history (the old head) and writes it again: the next collection keeps it."""
    store = _store(kind, tmp_path, request)
    with owned_by("c1"):
        old = extend_chain(store, MESSAGE_CHAIN, Chain(), TURNS)
    unhold(store, ["c1"])
    assert collect(store, grace=0.5).pending == 2  # marked
    time.sleep(0.6)
    with owned_by("c1"):  # run_input writes the whole history again, held
        again = extend_chain(store, MESSAGE_CHAIN, Chain(), TURNS)
    assert again.keys == old.keys
    assert collect(store, grace=0.5) == Collected((), 0, 0)  # held: the marks are dropped
    MESSAGE_CHAIN.cache.clear()
    assert load_chain(store, MESSAGE_CHAIN, old.head, "t").values == TURNS
    unhold(store, ["c1"])  # unheld again: its grace starts again, not from the old mark
    assert collect(store, grace=0.5).keys == ()


@pytest.mark.parametrize("kind", ["sql-sqlite", "sql-postgres"])
def test_a_collection_racing_a_run_that_holds_the_blob_keeps_it(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The run's ``put`` (blob and holder in one transaction) is paused after writing its
    holder, uncommitted, while a collection with no grace runs: the collection must not
    delete the blob the run is holding (on PostgreSQL it would not see the uncommitted
    holder: it waits for the put's advisory lock)."""
    import sqlalchemy as sa

    store = _store(kind, tmp_path, request)
    body = b"\nan old message nobody held"
    key = key_of(body)
    store.put([(key, None, body)])  # unheld: collectable at once with grace=0
    paused, go = threading.Event(), threading.Event()
    runner: list[threading.Thread] = []

    def pause(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if threading.current_thread() in runner and "golem_blob_owners" in statement:
            paused.set()
            go.wait(10)

    sa.event.listen(store.engine, "after_cursor_execute", pause)

    def run() -> None:
        with owned_by("c-new"):
            store.put([(key, None, body)])

    runner.append(threading.Thread(target=run))
    runner[0].start()
    assert paused.wait(10)
    done: list[Any] = []
    sweeper = threading.Thread(target=lambda: done.append(collect(store, grace=0)))
    sweeper.start()
    time.sleep(1.0)
    assert not done  # the collection waits for the put's transaction
    go.set()
    runner[0].join(10)
    sweeper.join(30)
    sa.event.remove(store.engine, "after_cursor_execute", pause)
    assert done and key not in done[0].keys
    assert store.get([key]) == {key: body}
    assert collect(store, grace=0).keys == ()  # held by c-new


@pytest.mark.parametrize("kind", KINDS)
def test_collect_drops_old_erasure_notes(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = _store(kind, tmp_path, request)
    with owned_by("c1"):
        ref = stash(store, {"said": "soon erased"})
    assert store.release(["c1"], "delete of 'c1'") == (ref["key"],)
    assert store.erased(ref["key"]) == "delete of 'c1'"
    assert collect(store, grace=0).notes == 0  # younger than keep_notes
    assert collect(store, grace=0, keep_notes=0).notes == 1
    assert store.erased(ref["key"]) is None
