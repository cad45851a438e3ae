"""Issue 47 item 1, the stream log (ADR 0153): the frames a conversation's turns were
streamed through (a web chat turn's text deltas in ``StoredRuns``, a durable run's
events and deltas in ``golem.run/<run id>``) are in the same database as the store, and
``erase``, ``delete`` and ``prune`` of the conversation delete them: a canary streamed
in an answer is, afterwards, in no byte of the SQLite file and its WAL, and no row of
any PostgreSQL table. A stream still open ends ``abandoned`` (its follower stops, its
writer adds nothing); the streams of other conversations and owners stay.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_durable_erasure import CANARY, OWNER, _has, _postgres_rows, _sqlite_bytes

from golem_core import Message, Role, TextPart
from golem_shell.store import PostgresHistoryStore, SQLiteHistoryStore, StreamLog
from golem_shell.ui import StoredRuns

QUESTION = Message.user(f"tell me {CANARY}-prompt")
ANSWER = Message(Role.ASSISTANT, (TextPart(f"here: {CANARY}-answer"),))


def _delta(text: str) -> str:
    return json.dumps({"type": "text-delta", "id": "t1", "delta": text})


@pytest.fixture(params=["sqlite", "postgres"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """A store and what reads every byte it keeps (SQLite: file and WAL; PostgreSQL:
    every row of every table of its database)."""
    if request.param == "sqlite":
        path = tmp_path / "store.sqlite"
        store: Any = SQLiteHistoryStore(path)
        yield store, lambda: _sqlite_bytes(path)
        store.close()
        return
    import sqlalchemy as sa
    from postgres_server import create_database

    url = create_database(
        request.getfixturevalue("postgres_url"), f"streams_{uuid.uuid4().hex[:8]}"
    )
    store = PostgresHistoryStore(url)
    engine = sa.create_engine(url.replace("postgresql:", "postgresql+psycopg:", 1))
    yield store, lambda: _postgres_rows(engine)
    store.close()
    engine.dispose()


async def _turn(runs: StoredRuns, owner: str, cid: str, text: str) -> str:
    """A finished web chat turn's stream (its frames as ``StoredRuns.start`` writes them)."""

    async def frames(_: Any) -> AsyncIterator[str]:
        yield json.dumps({"type": "start", "messageId": "m1"})
        yield _delta(text)
        yield "[DONE]"

    key = f"{owner}/{cid}/main"
    run = await runs.start(key, frames, owner=owner, conversation_id=cid)
    await runs.wait(key)
    return run.stream


@pytest.mark.anyio
@pytest.mark.parametrize("action", ["erase", "delete", "prune"])
async def test_erasure_deletes_the_streams_of_the_conversation(
    action: str, opened: tuple[Any, Any]
) -> None:
    store, stored_bytes = opened
    runs = StoredRuns(StreamLog(store))
    c1, c2 = f"c1-{uuid.uuid4()}", f"c2-{uuid.uuid4()}"
    ours = await _turn(runs, OWNER, c1, f"{CANARY}-answer")
    other_cid = await _turn(runs, OWNER, c2, "just talk")
    other_owner = await _turn(runs, "grace", c1, "same id, another owner")
    await store.append(OWNER, c1, (QUESTION, ANSWER), 0)
    await store.append(OWNER, c2, (Message.user("hi"),), 0)
    await store.append("grace", c1, (Message.user("hello"),), 0)
    assert _has(stored_bytes())  # the check would see it

    if action == "erase":
        receipt = await store.erase(OWNER, c1, [0, 1])
    elif action == "delete":
        receipt = await store.delete(OWNER, c1)
    else:
        await store.append(OWNER, c2, (Message.user("again"),), 1)  # c2 is newer
        receipt = await store.prune(owner=OWNER, keep_newest=1)

    assert receipt.streams == (ours,)
    assert not _has(stored_bytes())  # no frame, no row, no page left holding it
    assert await runs.latest(f"{OWNER}/{c1}/main") is None
    for kept in (other_cid, other_owner):
        frames, record = await runs.log.read(kept)
        assert record is not None and record.state == "done" and len(frames) == 3


@pytest.mark.anyio
async def test_an_open_stream_loses_its_frames_and_ends_abandoned(
    opened: tuple[Any, Any],
) -> None:
    """A run in flight: its stream keeps its row (ids only) marked ``abandoned`` so a
    follower ends; what its writer sends afterwards is not kept."""
    store, stored_bytes = opened
    runs = StoredRuns(StreamLog(store), poll=0.02)
    cid = f"c-{uuid.uuid4()}"
    run = await runs.open(f"{OWNER}/{cid}/main", run_id="r1", owner=OWNER, conversation_id=cid)
    await runs.write(run.stream, [("1", _delta(f"{CANARY}-answer"))])
    await store.append(OWNER, cid, (QUESTION,), 0)
    seen: list[str] = []

    async def follow() -> None:
        async for _, data in run.follow():
            seen.append(data)

    follower = asyncio.create_task(follow())
    while not seen:
        await asyncio.sleep(0.01)

    receipt = await store.erase(OWNER, cid, 0)  # one message: every stream of it goes

    assert receipt.streams == (run.stream,)
    await asyncio.wait_for(follower, 5)  # it ended
    record = await runs.log.get(run.stream)
    assert record is not None and record.state == "abandoned" and record.frames == 0
    assert await runs.write(run.stream, [("2", _delta(f"{CANARY}-late"))]) == 0
    assert (await runs.log.read(run.stream))[0] == []
    assert not _has(stored_bytes())
    assert (await runs.running(f"{OWNER}/{cid}/main")) is None  # a new turn may start


def test_a_stream_table_of_an_older_version_gains_the_columns(tmp_path: Path) -> None:
    """A streams table made before ADR 0153 (no owner, no conversation) still opens; its
    old streams name no conversation (erasure cannot find them), new ones do."""
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE golem_streams (stream TEXT PRIMARY KEY, skey TEXT NOT NULL,"
        " run_id TEXT NOT NULL, info TEXT NOT NULL, frames INTEGER NOT NULL,"
        " state TEXT NOT NULL, durable INTEGER NOT NULL, beat_ms INTEGER NOT NULL,"
        " created_ms INTEGER NOT NULL)"
    )
    db.execute("INSERT INTO golem_streams VALUES ('old', 'k', '', '{}', 0, 'done', 0, 1, 1)")
    db.commit()
    db.close()
    with SQLiteHistoryStore(path) as store:
        log = StreamLog(store)
        old = asyncio.run(log.get("old"))
        assert old is not None and (old.owner, old.conversation_id) == ("", "")
        asyncio.run(log.open("k2", "new", owner=OWNER, conversation_id="c"))
        new = asyncio.run(log.get("new"))
        assert new is not None and (new.owner, new.conversation_id) == (OWNER, "c")
        store.append_sync(OWNER, "c", (QUESTION,), 0)
        assert store.delete_sync(OWNER, "c").streams == ("new",)
        assert asyncio.run(log.get("old")) is not None


# -- the web chat example ---------------------------------------------------------------------


@pytest.mark.parametrize("action", ["erase", "delete"])
def test_a_web_chat_turn_streamed_is_gone_after_erasure(action: str, tmp_path: Path) -> None:
    from web_chat_server import cookie_client, serve_web_chat

    server = serve_web_chat(tmp_path / "chat.db", delay=0.0)
    try:
        client = cookie_client(server)
        cid = client.post("/api/conversations").json()["id"]
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": CANARY}]}
        with client.stream("POST", "/api/chat", json={"id": cid, "messages": [message]}) as r:
            assert r.status_code == 200
            body = r.read()
        assert CANARY.encode() in body  # the offline model said it back, streamed
        uid = client.cookies["uid"]
        store = server.chat.store
        assert _has(_sqlite_bytes(Path(server.db)))
        if action == "erase":
            receipt = store.erase_sync(uid, cid, [0, 1])
        else:
            receipt = store.delete_sync(uid, cid)
        assert len(receipt.streams) == 1
        assert client.get(f"/api/conversations/{cid}").status_code in (200, 404)
    finally:
        server.close()
    assert not _has(_sqlite_bytes(Path(server.db)))


# -- a durable run's event stream (DBOS, ``event_log=``) ----------------------------------------

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")
from golem_shell import Agent, FunctionModel  # noqa: E402
from golem_shell.durable import DurableAgent  # noqa: E402


async def _streamed(request: Any) -> AsyncIterator[str]:
    yield "here: "
    yield f"{CANARY}-answer" if CANARY in request.messages[-1].text else "nothing"


_EVENTS_DIR = Path(__import__("tempfile").mkdtemp(prefix="golem-stream-erasure-"))
_EVENTS = SQLiteHistoryStore(_EVENTS_DIR / "store.sqlite")
D_STREAM = DurableAgent(
    Agent(FunctionModel(stream_function=_streamed)), name="d-stream-erase", event_log=_EVENTS
)


async def _events(run_id: str) -> list[Any]:
    return [e async for e in D_STREAM.events(run_id)]


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("dbos") / "golem.sqlite"
    dbos.DBOS(
        config={
            "name": "golem-stream-erasure",
            "system_database_url": f"sqlite:///{path}",
            "serializer": dbos.DBOSPortableJSONSerializer(),
            "log_level": "WARNING",
        }
    )
    dbos.DBOS.launch()
    yield path
    dbos.DBOS.destroy()
    _EVENTS.close()
    shutil.rmtree(_EVENTS_DIR, ignore_errors=True)


@pytest.mark.anyio
@pytest.mark.parametrize("action", ["erase", "delete", "prune"])
async def test_a_durable_runs_event_stream_is_erased_with_its_conversation(
    action: str, launched: Path
) -> None:
    store = SQLiteHistoryStore(_EVENTS_DIR / "store.sqlite", blobs=D_STREAM.store())
    cid, other = f"c-{uuid.uuid4()}", f"o-{uuid.uuid4()}"
    one = await D_STREAM.run(f"tell me {CANARY}-prompt", conversation_id=cid)
    two = await D_STREAM.run("just talk", conversation_id=other)
    assert CANARY in one.output
    await store.append(OWNER, cid, one.messages, 0)
    await store.append(OWNER, other, two.messages, 0)
    assert _has(_sqlite_bytes(_EVENTS_DIR / "store.sqlite"))  # the deltas, the events
    if action == "erase":
        positions = [i for i, m in enumerate(one.messages) if CANARY in m.text]
        receipt = await store.erase(OWNER, cid, positions)
    elif action == "delete":
        receipt = await store.delete(OWNER, cid)
    else:
        await store.delete(OWNER, other)
        later = datetime.now(UTC) + timedelta(days=1)
        receipt = await store.prune(owner=OWNER, older_than=later)
    assert f"golem.run/{one.run_id}" in receipt.streams
    assert receipt.blobs and cid in receipt.blobs[0].conversations
    assert not _has(_sqlite_bytes(_EVENTS_DIR / "store.sqlite"))  # no frame left
    assert not _has(_sqlite_bytes(launched))  # nor in DBOS's records and blobs
    assert await asyncio.wait_for(_events(one.run_id), 60) == []
    if action != "prune":
        assert await asyncio.wait_for(_events(two.run_id), 60)  # another conversation's
    store.close()


# -- a Temporal run's event stream (``TemporalAgent(event_log=...)``) ----------------------------


@pytest.mark.anyio
async def test_a_temporal_runs_event_stream_is_erased_with_its_conversation(
    temporal_server: Any, tmp_path: Path
) -> None:
    """The events and deltas a Temporal run published into its ``event_log`` (the store's
    own database) go with its conversation: a canary the model streamed is in no byte of
    the store's file, nor of the blob file, and ``events`` of the run yields nothing;
    another conversation's stream stays."""
    pytest.importorskip("temporalio", reason="the temporal extra is not installed")
    from temporalio.client import Client

    from golem_shell.durable import SQLiteBlobs
    from golem_shell.temporal import TemporalAgent

    path, blobs = tmp_path / "store.sqlite", SQLiteBlobs(tmp_path / "blobs.sqlite")
    events = SQLiteHistoryStore(path)
    durable = TemporalAgent(
        Agent(FunctionModel(stream_function=_streamed)),
        name="t-stream-erase",
        task_queue="golem-stream-erasure",
        blobs=blobs,
        event_log=events,
    )
    store = SQLiteHistoryStore(path, blobs=blobs)
    client = await Client.connect(temporal_server.address)

    async def followed(run_id: str) -> list[Any]:
        return [e async for e in durable.events(client, run_id)]

    try:
        async with durable.worker(client):
            cid, other = f"c-{uuid.uuid4()}", f"o-{uuid.uuid4()}"
            one = await durable.run(client, f"tell me {CANARY}-prompt", conversation_id=cid)
            two = await durable.run(client, "just talk", conversation_id=other)
            assert CANARY in one.output
            await store.append(OWNER, cid, one.messages, 0)
            await store.append(OWNER, other, two.messages, 0)
            assert _has(_sqlite_bytes(path))  # the deltas, the events: the check would see
            assert await asyncio.wait_for(followed(one.run_id), 60)

            receipt = await store.delete(OWNER, cid)
            assert f"golem.run/{one.run_id}" in receipt.streams
            assert not _has(_sqlite_bytes(path))  # no frame left
            assert not _has(_sqlite_bytes(tmp_path / "blobs.sqlite"))
            assert await asyncio.wait_for(followed(one.run_id), 60) == []
            assert await asyncio.wait_for(followed(two.run_id), 60)  # another conversation's
    finally:
        store.close()
        events.close()
