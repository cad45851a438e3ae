"""Issue 47 item 1 on DBOS over PostgreSQL (ADR 0152): a canary planted in a durably run
conversation is, after the history store (PostgreSQL, given DBOS's blob store) deletes
the conversation, in no row of any table of DBOS's system database (its ``dbos`` schema,
the ``golem_blobs`` tables) nor of the store's database; a conversation sharing the
opening still reads its run; the deleted one's run fails naming the erasure.

Its own module: DBOS is one per process, and ``tests/test_durable_erasure.py`` launches
it on SQLite.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from test_durable_erasure import CANARY, COMMON, OWNER, _has, _model, _postgres_rows, lookup

from golem_shell import Agent, FunctionModel, RunError, Stage
from golem_shell.store import PostgresHistoryStore

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")
from golem_shell.durable import DurableAgent  # noqa: E402

D_ERASE_PG = DurableAgent(Agent(FunctionModel(_model), tools=[lookup]), name="d-erase-pg")


@pytest.fixture(scope="module")
def launched_pg(postgres_url: str) -> Iterator[str]:
    from postgres_server import create_database

    url = create_database(postgres_url, f"dbos_erase_{uuid.uuid4().hex[:8]}")
    dbos.DBOS(
        config={
            "name": "golem-erasure-pg",
            "system_database_url": url,
            "serializer": dbos.DBOSPortableJSONSerializer(),
            "log_level": "WARNING",
        }
    )
    dbos.DBOS.launch()
    yield url
    dbos.DBOS.destroy()


@pytest.mark.anyio
async def test_dbos_on_postgres_delete_leaves_no_row_with_the_canary(
    launched_pg: str, postgres_url: str
) -> None:
    from postgres_server import create_database

    store_url = create_database(postgres_url, f"store_erase_{uuid.uuid4().hex[:8]}")
    store = PostgresHistoryStore(store_url, blobs=D_ERASE_PG.store())
    c1, c2 = f"c1-{uuid.uuid4()}", f"c2-{uuid.uuid4()}"
    one = await D_ERASE_PG.run(f"tell me {CANARY}-prompt", history=COMMON, conversation_id=c1)
    two = await D_ERASE_PG.run("just talk", history=COMMON, conversation_id=c2)
    await store.append(OWNER, c1, one.messages, 0)
    await store.append(OWNER, c2, two.messages, 0)
    engine: Any = D_ERASE_PG.store().engine  # type: ignore[attr-defined]
    assert _has(_postgres_rows(engine))  # the check would see it

    receipt = await store.delete(OWNER, c1)

    (reached,) = receipt.blobs
    assert reached.conversations == (c1,) and reached.keys
    assert not _has(_postgres_rows(engine))  # DBOS's tables and the blob tables
    import sqlalchemy as sa

    store_engine = sa.create_engine(store_url.replace("postgresql:", "postgresql+psycopg:", 1))
    assert not _has(_postgres_rows(store_engine))
    store_engine.dispose()
    assert (await D_ERASE_PG.result(two.run_id)).output == two.output
    with pytest.raises(RunError) as erased:
        await D_ERASE_PG.result(one.run_id)
    assert erased.value.stage is Stage.HISTORY and "was erased" in str(erased.value)
    await store.aclose()
