"""StreamTap while its database is away: the durable run goes on (issue 50's soak).

The soak (``bench/soak.py``) restarted PostgreSQL while Temporal workers ran turns: the
model request of a run looked up its stream (``StreamLog.of_run``), the lookup raised
``HistoryStoreError``, and the whole run failed at stage ``request``, although a
failing frame write is only logged (the frames are a view; the run is what counts).
A lookup that fails is now treated as a write that fails: the request is answered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem_core import Message, ModelRequest, Role, TextPart
from golem_shell import FunctionModel, SQLiteHistoryStore
from golem_shell.store import HistoryStoreError, StreamLog
from golem_shell.ui import StoredRuns, StreamTap

pytestmark = pytest.mark.anyio


def _request(run_id: str) -> ModelRequest:
    return ModelRequest((Message(Role.USER, (TextPart("hello"),)),), run_id=run_id)


async def test_a_stream_lookup_that_fails_leaves_the_request_answered(tmp_path: Path) -> None:
    runs = StoredRuns(StreamLog(SQLiteHistoryStore(tmp_path / "c.db")))
    tap = StreamTap(FunctionModel(lambda request: "the answer"), runs)

    async def unreachable(run_id: str) -> None:
        raise HistoryStoreError("PostgreSQL store: server closed the connection unexpectedly")

    runs.log.of_run = unreachable  # type: ignore[method-assign]
    answer = await tap.request(_request("r1"))
    assert answer.text == "the answer"
    await runs.aclose()


async def test_a_stream_found_gets_the_request_frames(tmp_path: Path) -> None:
    runs = StoredRuns(StreamLog(SQLiteHistoryStore(tmp_path / "c.db")))
    tap = StreamTap(FunctionModel(lambda request: "the answer"), runs)
    run = await runs.open("u/c/main", run_id="r1", info={"message": "m1"})
    answer = await tap.request(_request("r1"))
    assert answer.text == "the answer"
    frames, _ = await runs.log.read(run.stream, 0)
    chunks = [json.loads(data) for _, data in frames]
    assert "".join(c.get("delta", "") for c in chunks if c["type"] == "text-delta") == "the answer"
    await runs.aclose()
