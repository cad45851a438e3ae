"""Issue 47 item 1: erasure reaches the durable engines (ADR 0152).

A conversation whose turns ran durably is erased (``erase``), deleted (``delete``) or
pruned (``prune``) from a history store given the engine's blob store (``blobs=``): a
canary planted in the prompt, a tool call's arguments, a tool's result and the answer is
then in no byte of the DBOS system database (file and WAL after a checkpoint), of any
Temporal workflow history the server returns (never, even before: every payload is a
reference), of the blob store (SQLite file, every PostgreSQL table) and of the history
store. A second conversation holding the same opening messages (the same blobs) still
reads its runs; the erased conversation's run fails with a ``RunError`` naming the
erasure; the receipt lists the deleted blobs per store.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from golem_core import Message, Role, TextPart, ToolCallPart, encode_message
from golem_shell import Agent, FunctionModel, RunError, Stage, tool
from golem_shell.engines._blobs import (
    MESSAGE_CHAIN,
    Chain,
    ErasedBlob,
    MemoryBlobs,
    SQLiteBlobs,
    extend_chain,
    load_chain,
    owned_by,
    stash,
    unstash,
)
from golem_shell.engines._blobs_sql import SQLBlobs
from golem_shell.store import PostgresHistoryStore, SQLiteHistoryStore

CANARY = "zq-canary-7f3a9e"
OWNER = "ada"
COMMON = (  # the same opening in both conversations: the same blobs, held by both
    Message.user("shared opening"),
    Message(Role.ASSISTANT, (TextPart("shared reply"),)),
)


@tool
def lookup(key: str) -> str:
    """The value of ``key``."""
    return f"value of {key}: {CANARY}-result"


def _model(request: Any) -> Message | str:
    if request.messages[-1].role is Role.TOOL:
        return f"answer: {request.messages[-1].text} {CANARY}-answer"
    if CANARY in request.messages[-1].text:
        call = ToolCallPart("c1", "lookup", json.dumps({"key": f"{CANARY}-args"}))
        return Message(Role.ASSISTANT, (call,))
    return "a plain answer"


def _has(data: bytes) -> bool:
    return CANARY.encode() in data or CANARY.encode().hex().encode() in data


def _sqlite_bytes(path: Path) -> bytes:
    """A SQLite file and its WAL, after a checkpoint, as bytes."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    db.close()
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


# -- the blob stores ------------------------------------------------------------------------


def _stores(tmp_path: Path, postgres_url: str | None) -> Iterator[tuple[str, Any]]:
    yield "memory", MemoryBlobs()
    yield "sqlite", SQLiteBlobs(tmp_path / "blobs.sqlite")
    import sqlalchemy as sa

    yield "sql-sqlite", SQLBlobs(sa.create_engine(f"sqlite:///{tmp_path / 'sql.sqlite'}"))
    if postgres_url is not None:
        from postgres_server import create_database

        url = create_database(postgres_url, f"blobs_{uuid.uuid4().hex[:8]}")
        yield (
            "sql-postgres",
            SQLBlobs(sa.create_engine(url.replace("postgresql:", "postgresql+psycopg:", 1))),
        )


@pytest.mark.parametrize("kind", ["memory", "sqlite", "sql-sqlite", "sql-postgres"])
def test_release_deletes_what_only_the_conversation_holds(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("postgres_url") if kind == "sql-postgres" else None
    store = dict(_stores(tmp_path, url))[kind]
    secret = (*COMMON, Message.user(f"my {CANARY}"))
    with owned_by("c1"):
        one = extend_chain(store, MESSAGE_CHAIN, Chain(), secret)
        ref = stash(store, {"said": CANARY})
    with owned_by("c2"):
        two = extend_chain(store, MESSAGE_CHAIN, Chain(), (*COMMON, Message.user("hello")))
    loose = stash(store, {"held": "by nobody"})  # written outside any run: never released
    assert MESSAGE_CHAIN.cache[one.head] == one  # the writer's cache: release forgets it

    removed = store.release(["c1"], "delete of 'c1'")

    assert set(removed) == {one.keys[-1], ref["key"]}  # the shared opening stays
    assert load_chain(store, MESSAGE_CHAIN, two.head, "t").values[:2] == COMMON
    assert unstash(store, loose, "t") == {"held": "by nobody"}
    with pytest.raises(ErasedBlob, match=r"was erased .*delete of 'c1'"):
        load_chain(store, MESSAGE_CHAIN, one.head, "t")
    with pytest.raises(ErasedBlob, match="was erased"):
        unstash(store, ref, "t")
    assert store.release(["c1"], "again") == ()
    assert set(store.release(["c2"], "delete of 'c2'")) == set(two.keys)
    if kind == "sqlite":
        assert not _has(_sqlite_bytes(Path(store.path)))
    if kind == "sql-sqlite":
        assert not _has(_sqlite_bytes(tmp_path / "sql.sqlite"))
    if kind == "sql-postgres":
        assert not _has(_postgres_rows(store.engine))


def _postgres_rows(engine: Any) -> bytes:
    """Every row of every table of the database, as text (bytea as hex)."""
    import sqlalchemy as sa

    out = []
    with engine.connect() as c:
        tables = c.execute(
            sa.text(
                "SELECT table_schema, table_name FROM information_schema.tables"
                " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
                " AND table_type = 'BASE TABLE'"
            )
        ).all()
        assert tables
        for schema, table in tables:
            rows = c.execute(sa.text(f'SELECT t::text FROM "{schema}"."{table}" t')).all()
            out += [r[0] for r in rows]
    return "\n".join(out).encode()


def test_a_store_refuses_blobs_that_cannot_be_erased(tmp_path: Path) -> None:
    from golem_shell import UsageError

    with pytest.raises(UsageError, match="blobs= takes durable blob stores"):
        SQLiteHistoryStore(tmp_path / "s.sqlite", blobs=[object()])  # type: ignore[list-item]


# -- Temporal -------------------------------------------------------------------------------

temporal = pytest.importorskip("temporalio", reason="the temporal extra is not installed")
from temporalio.client import Client  # noqa: E402

from golem_shell.temporal import TemporalAgent  # noqa: E402

QUEUE = "golem-erasure"


async def _history_bytes(client: Client, run_id: str) -> bytes:
    history = await client.get_workflow_handle(run_id).fetch_history()
    return history.to_json().encode() + b"".join(e.SerializeToString() for e in history.events)


async def _two_conversations(durable: Any, client: Client) -> tuple[Any, Any]:
    c1, c2 = f"c1-{uuid.uuid4()}", f"c2-{uuid.uuid4()}"
    one = await durable.run(client, f"tell me {CANARY}-prompt", history=COMMON, conversation_id=c1)
    two = await durable.run(client, "just talk", history=COMMON, conversation_id=c2)
    assert CANARY in one.output and CANARY not in two.output
    return one, two


@pytest.mark.anyio
@pytest.mark.parametrize("action", ["erase", "delete"])
async def test_temporal_erasure_reaches_the_blob_store_sqlite(
    action: str, temporal_server: Any, tmp_path: Path
) -> None:
    blobs = SQLiteBlobs(tmp_path / "blobs.sqlite")
    durable = TemporalAgent(
        Agent(FunctionModel(_model), tools=[lookup]),
        name=f"t-erase-{action}",
        task_queue=QUEUE,
        blobs=blobs,
    )
    store = SQLiteHistoryStore(tmp_path / "store.sqlite", blobs=blobs)
    client = await Client.connect(temporal_server.address)
    async with durable.worker(client):
        one, two = await _two_conversations(durable, client)
        for r in (one, two):
            await store.append(OWNER, r.conversation_id, r.messages, 0)
            # the engine's own records hold references only, before any erasure
            assert not _has(await _history_bytes(client, r.run_id))
        assert _has(_sqlite_bytes(Path(blobs.path)))  # the check would see it
        if action == "erase":
            positions = [
                i for i, m in enumerate(one.messages) if CANARY.encode() in encode_message(m)
            ]
            receipt = await store.erase(OWNER, one.conversation_id, positions)
        else:
            receipt = await store.delete(OWNER, one.conversation_id)
        (reached,) = receipt.blobs
        assert reached.store == repr(blobs) and reached.conversations == (one.conversation_id,)
        assert reached.keys  # the run's content, listed by hash
        assert not _has(_sqlite_bytes(Path(blobs.path)))
        assert not _has(_sqlite_bytes(tmp_path / "store.sqlite"))
        for r in (one, two):
            assert not _has(await _history_bytes(client, r.run_id))
        again = await durable.result(client, two.run_id)  # the shared opening is still held
        assert again.messages[:2] == two.messages[:2]
        with pytest.raises(RunError) as erased:
            await durable.result(client, one.run_id)
    assert erased.value.stage is Stage.HISTORY
    assert "erased" in str(erased.value) and one.conversation_id in str(erased.value)
    store.close()


@pytest.mark.anyio
async def test_temporal_erasure_reaches_the_blob_store_postgres(
    temporal_server: Any, postgres_url: str
) -> None:
    import sqlalchemy as sa
    from postgres_server import create_database

    url = create_database(postgres_url, f"erase_{uuid.uuid4().hex[:8]}")
    blobs = SQLBlobs(sa.create_engine(url.replace("postgresql:", "postgresql+psycopg:", 1)))
    durable = TemporalAgent(
        Agent(FunctionModel(_model), tools=[lookup]),
        name="t-erase-postgres",
        task_queue=QUEUE,
        blobs=blobs,
    )
    store = PostgresHistoryStore(url, blobs=blobs)
    client = await Client.connect(temporal_server.address)
    async with durable.worker(client):
        one, two = await _two_conversations(durable, client)
        for r in (one, two):
            await store.append(OWNER, r.conversation_id, r.messages, 0)
        assert _has(_postgres_rows(blobs.engine))
        # prune: the older conversation goes (its clock is the store's)
        await store.append(OWNER, two.conversation_id, [Message.user("later")], len(two.messages))
        receipt = await store.prune(owner=OWNER, keep_newest=1)
        assert receipt.conversations == (one.conversation_id,)
        assert receipt.blobs[0].keys
        assert not _has(_postgres_rows(blobs.engine))  # every table: blobs, store, owners
        for r in (one, two):
            assert not _has(await _history_bytes(client, r.run_id))
        await durable.result(client, two.run_id)
        with pytest.raises(RunError, match="erased"):
            await durable.result(client, one.run_id)
    await store.aclose()


# -- DBOS -----------------------------------------------------------------------------------

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")
from golem_shell.durable import DurableAgent  # noqa: E402

D_ERASE = DurableAgent(Agent(FunctionModel(_model), tools=[lookup]), name="d-erase")


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("dbos") / "golem.sqlite"
    dbos.DBOS(
        config={
            "name": "golem-erasure",
            "system_database_url": f"sqlite:///{path}",
            "serializer": dbos.DBOSPortableJSONSerializer(),
            "log_level": "WARNING",
        }
    )
    dbos.DBOS.launch()
    yield path
    dbos.DBOS.destroy()


@pytest.mark.anyio
@pytest.mark.parametrize("action", ["erase", "delete", "prune"])
async def test_dbos_erasure_leaves_no_byte_of_the_canary(
    action: str, launched: Path, tmp_path: Path
) -> None:
    store = SQLiteHistoryStore(tmp_path / "store.sqlite", blobs=D_ERASE.store())
    c1, c2 = f"c1-{uuid.uuid4()}", f"c2-{uuid.uuid4()}"
    one = await D_ERASE.run(f"tell me {CANARY}-prompt", history=COMMON, conversation_id=c1)
    two = await D_ERASE.run("just talk", history=COMMON, conversation_id=c2)
    assert CANARY in one.output
    await store.append(OWNER, c1, one.messages, 0)
    await store.append(OWNER, c2, two.messages, 0)
    assert _has(_sqlite_bytes(launched))  # the check would see it
    if action == "erase":
        positions = [i for i, m in enumerate(one.messages) if CANARY.encode() in encode_message(m)]
        receipt = await store.erase(OWNER, c1, positions)
    elif action == "delete":
        receipt = await store.delete(OWNER, c1)
    else:
        later = datetime.now(UTC) + timedelta(days=1)
        await store.delete(OWNER, c2)  # prune every conversation there is: c1
        receipt = await store.prune(owner=OWNER, older_than=later)
    assert receipt.blobs and receipt.blobs[0].keys
    assert c1 in receipt.blobs[-1].conversations
    assert not _has(_sqlite_bytes(launched))  # DBOS's tables, its blobs, its WAL
    assert not _has(_sqlite_bytes(tmp_path / "store.sqlite"))
    if action != "prune":
        again = await D_ERASE.result(two.run_id)  # the shared opening is still held
        assert again.output == two.output
    with pytest.raises(RunError) as erased:
        await D_ERASE.result(one.run_id)
    assert erased.value.stage is Stage.HISTORY and "was erased" in str(erased.value)
    store.close()


@tool(external=True)
def ask_elsewhere(key: str) -> str:
    """Answered by a client."""
    raise AssertionError("an external tool is never executed by the run")


def _asks(request: Any) -> Message | str:
    if request.messages[-1].role is Role.TOOL:
        return "thanks"
    return Message(Role.ASSISTANT, (ToolCallPart("e1", "ask_elsewhere", '{"key": "k"}'),))


D_ASKS = DurableAgent(Agent(FunctionModel(_asks), tools=[ask_elsewhere]), name="d-erase-asks")


@pytest.mark.anyio
async def test_dbos_an_answer_a_client_sent_is_erased_with_the_conversation(
    launched: Path, tmp_path: Path
) -> None:
    """The client stashes its answer before the run reads it (no conversation holds it
    yet); the run, reading it, writes it again held by its conversation: the canary in an
    external result goes with the conversation."""
    from golem_core import ExternalResult

    store = SQLiteHistoryStore(tmp_path / "store.sqlite", blobs=D_ASKS.store())
    cid = f"c-{uuid.uuid4()}"
    run_id = await D_ASKS.start("ask it", conversation_id=cid)
    waiting = await D_ASKS.waiting(run_id, timeout=30)
    await D_ASKS.answer(run_id, {"e1": ExternalResult.text(f"{CANARY}-external")}, pause=waiting)
    result = await D_ASKS.result(run_id)
    assert any(CANARY in m.text for m in result.messages if m.role is Role.TOOL)
    await store.append(OWNER, cid, result.messages, 0)
    assert _has(_sqlite_bytes(launched))
    await store.delete(OWNER, cid)
    assert not _has(_sqlite_bytes(launched))
    store.close()
