"""StreamTap while its database is away: the durable run goes on (issue 50's soak).

The soak (``bench/soak.py``) restarted PostgreSQL while Temporal workers ran turns: the
model request of a run looked up its stream (``StreamLog.of_run``), the lookup raised
``HistoryStoreError``, and the whole run failed at stage ``request``, although a
failing frame write is only logged (the frames are a view; the run is what counts).
A lookup that fails is now treated as a write that fails: the request is answered. A
write that fails is one warning line, and that request writes no more.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from golem_core import Message, ModelRequest, Role, TextPart
from golem_shell import Agent, FunctionModel, SQLiteHistoryStore
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


async def test_a_frame_write_that_fails_is_logged_once_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The store fails the tap's first write of a request's frames (``HistoryStoreError``):
    one warning line naming the stream, no traceback, no further write of that request,
    and the model's reply reaches the run."""
    runs = StoredRuns(StreamLog(SQLiteHistoryStore(tmp_path / "c.db")))
    model = FunctionModel(lambda request: "the answer comes word by word")
    agent = Agent(StreamTap(model, runs))
    run = await runs.open("u/c/main", run_id="r1", info={"message": "m1"})
    tried: list[int] = []

    async def unreachable(stream: str, frames: object, *, end: object = None) -> int:
        tried.append(len(frames))  # type: ignore[arg-type]
        raise HistoryStoreError("PostgreSQL store: server closed the connection unexpectedly")

    runs.write = unreachable  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="golem.ui"):
        result = await agent.run("hello", run_id="r1")
    assert result.output == "the answer comes word by word"
    assert len(tried) == 1  # the later batches (each word, finish-step) were not tried
    lines = [r for r in caplog.records if r.name == "golem.ui"]
    assert [(r.levelno, r.getMessage()) for r in lines] == [
        (
            logging.WARNING,
            f"writing the frames of stream {run.stream!r} failed: PostgreSQL store: server"
            " closed the connection unexpectedly",
        )
    ]
    assert lines[0].exc_info is None and "Traceback" not in caplog.text
    frames, record = await runs.log.read(run.stream, 0)
    assert frames == [] and record is not None and record.open
    await runs.aclose()
