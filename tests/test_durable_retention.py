"""Issue 47 item 2: retention by age of DBOS's records of finished runs (ADR 0154).

``DurableAgent.forget(older_than=...)`` deletes the records of the agent's runs finished
before the age and, through ``collect``, the blobs no conversation holds any more: after
every run is forgotten, the system database holds no workflow of the agent and its blob
table only the handshake. A conversation with a run still in flight (recorded) keeps its
blobs while an older run of it is forgotten, so the run in flight and the next turn,
started from its old head, read theirs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem_core import Message
from golem_shell import Agent, FunctionModel, UsageError
from golem_shell.engines._blobs import handshake

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")

from golem_shell.durable import DurableAgent  # noqa: E402

GATE: dict[str, asyncio.Event] = {}


async def _model(request: Any) -> Message | str:
    gate = GATE.get(request.messages[-1].text)
    if gate is not None:
        await gate.wait()
    return f"echo {len(request.messages)}"


D_FORGET = DurableAgent(Agent(FunctionModel(_model)), name="d-forget")


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("dbos") / "golem.sqlite"
    dbos.DBOS(
        config={
            "name": "golem-retention",
            "system_database_url": f"sqlite:///{path}",
            "serializer": dbos.DBOSPortableJSONSerializer(),
            "log_level": "WARNING",
        }
    )
    dbos.DBOS.launch()
    yield path
    dbos.DBOS.destroy()


def _blobs() -> int:
    with D_FORGET.store().engine.connect() as c:  # type: ignore[attr-defined]
        return int(c.exec_driver_sql("SELECT COUNT(*) FROM golem_blobs").scalar_one())


async def _recorded(run_ids: list[str]) -> list[str]:
    found = await dbos.DBOS.list_workflows_async(workflow_ids=run_ids, load_input=False)
    return [s.workflow_id for s in found]


@pytest.mark.anyio
async def test_forget_deletes_finished_runs_and_their_blobs(launched: Path) -> None:
    handshake(D_FORGET.store())  # written by the first run this process starts
    await D_FORGET.forget(0, grace=0)  # from earlier tests of the module: none
    base = _blobs()
    c1, c2 = f"c1-{uuid.uuid4()}", f"c2-{uuid.uuid4()}"
    one = await D_FORGET.run("first", conversation_id=c1)
    two = await D_FORGET.run("second", history=one.messages, conversation_id=c1)
    other = await D_FORGET.run("elsewhere", conversation_id=c2)
    ids = [one.run_id, two.run_id, other.run_id]
    assert _blobs() > base
    kept = await D_FORGET.forget(3600)  # none finished an hour ago
    assert kept.runs == () and sorted(await _recorded(ids)) == sorted(ids)

    gone = await D_FORGET.forget(0, grace=0)

    assert set(gone.runs) == set(ids) and set(gone.conversations) == {c1, c2}
    assert await _recorded(ids) == []
    assert _blobs() == base  # only what no forgotten conversation held: the handshake
    assert len(gone.collected.keys) > 0
    with pytest.raises(UsageError, match="no durable run"):
        await D_FORGET.result(two.run_id)


@pytest.mark.anyio
async def test_a_run_in_flight_keeps_its_conversation_while_an_older_run_is_forgotten(
    launched: Path,
) -> None:
    """Turn 2 of a conversation is running (recorded, unfinished) when turn 1's records are
    forgotten and the store collected with no grace: turn 2 ends with what it read, and
    turn 3, started from turn 2's history, runs."""
    conv = f"c-{uuid.uuid4()}"
    one = await D_FORGET.run("turn one", conversation_id=conv)
    hold = f"turn two {conv}"
    GATE[hold] = asyncio.Event()
    run_id = await D_FORGET.start(hold, history=one.messages, conversation_id=conv)
    await asyncio.sleep(0.3)  # turn 2 has read its history and waits in its model call

    forgotten = await D_FORGET.forget(0, grace=0)

    assert one.run_id in forgotten.runs and conv not in forgotten.conversations
    GATE[hold].set()
    two = await D_FORGET.result(run_id)
    assert two.output == "echo 3"
    three = await D_FORGET.run("turn three", history=two.messages, conversation_id=conv)
    assert three.output == "echo 5"
    done = await D_FORGET.forget(0, grace=0)
    assert conv in done.conversations
    assert (await D_FORGET.forget(0, grace=0)).collected.keys == ()
