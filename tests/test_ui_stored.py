"""StoredRuns: a turn's frames kept in the conversation store's database.

A reader in another process (here: another store object on the same file, or the same
PostgreSQL database) follows a stream from any frame number; a writer that replays adds
nothing twice; one open stream per slot; a dead plain writer's stream goes stale.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem_shell import SQLiteHistoryStore
from golem_shell.store import StreamLog
from golem_shell.ui import Refused, StoredRun, StoredRuns

pytestmark = pytest.mark.anyio


def _runs(db: Path, **kwargs: float) -> StoredRuns:
    return StoredRuns(StreamLog(SQLiteHistoryStore(db)), poll=0.02, **kwargs)


async def test_frames_written_in_one_process_are_followed_from_another(tmp_path: Path) -> None:
    writer, reader = _runs(tmp_path / "c.db"), _runs(tmp_path / "c.db")
    gate = asyncio.Event()

    async def frames(run: StoredRun) -> AsyncIterator[str]:
        for k in range(1, 7):
            if k == 4:
                await gate.wait()
            yield f"f{k}"

    await writer.start("u/c/main", frames)
    await asyncio.sleep(0.1)
    run = await reader.resume("u/c/main", 2)
    assert run is not None
    seen: list[tuple[int, str]] = []

    async def read() -> None:
        async for item in run.follow(2):
            seen.append(item)

    task = asyncio.create_task(read())
    await asyncio.sleep(0.1)
    assert seen == [(3, "f3")]  # the rest is not written yet
    gate.set()
    await asyncio.wait_for(task, 10)
    assert seen == [(k, f"f{k}") for k in range(3, 7)]
    assert await reader.resume("u/c/main", 6) is None  # finished: 204
    await writer.aclose()


async def test_a_replayed_writer_adds_nothing_twice_and_numbers_stay(tmp_path: Path) -> None:
    runs = _runs(tmp_path / "c.db")
    run = await runs.open("k", run_id="r1", info={"message": "m1"})
    assert await runs.write(run.stream, [("7:0", "a"), ("7:1", "b")]) == 2
    # the step is performed again after a crash: same keys, then more
    assert await runs.write(run.stream, [("7:0", "a"), ("7:1", "b"), ("7:2", "c")]) == 3
    await runs.end(run.stream)
    assert await runs.write(run.stream, [("x", "late")]) == 3  # ended: takes none
    assert [f async for f in run.follow(0)] == [(1, "a"), (2, "b"), (3, "c")]
    record = await runs.log.get(run.stream)
    assert record is not None and record.state == "done" and record.info == {"message": "m1"}


async def test_one_open_stream_per_slot_and_resume_numbers(tmp_path: Path) -> None:
    a, b = _runs(tmp_path / "c.db"), _runs(tmp_path / "c.db")
    run = await a.open("slot", run_id="r1")
    await a.write(run.stream, [("0", "x")])
    with pytest.raises(Refused) as busy:
        await b.open("slot", run_id="r2")
    assert busy.value.status == 409
    with pytest.raises(Refused) as past:
        await b.resume("slot", 2)
    assert past.value.status == 409
    with pytest.raises(Refused) as negative:
        await b.resume("slot", -1)
    assert negative.value.status == 400
    assert (await b.log.of_run("r1")) is not None
    await a.end(run.stream, "paused")
    assert await b.resume("slot", 0) is None
    assert (await b.latest("slot")) is not None
    await b.open("slot", run_id="r1")  # the paused run goes on in a new stream


async def test_a_plain_stream_whose_writer_died_goes_stale(tmp_path: Path) -> None:
    now = [1000.0]
    log = StreamLog(SQLiteHistoryStore(tmp_path / "c.db"), clock=lambda: now[0])
    runs = StoredRuns(log, stale_after=30)
    dead = await runs.open("slot", durable=False)
    with pytest.raises(Refused):
        await runs.open("slot")
    now[0] += 31  # no beat for longer than stale_after
    assert await runs.running("slot") is None
    assert [f async for f in dead.follow(0)] == []  # a reader is let go, not kept waiting
    await runs.open("slot", durable=True)  # the dead writer's turn is abandoned
    now[0] += 3600
    assert await runs.running("slot") is not None  # a durable stream never goes stale


async def test_the_log_works_on_postgres(postgres_url: str) -> None:
    from golem_shell.store import PostgresHistoryStore

    a = StoredRuns(StreamLog(PostgresHistoryStore(postgres_url, table="streams_t")), poll=0.02)
    b = StoredRuns(StreamLog(PostgresHistoryStore(postgres_url, table="streams_t")), poll=0.02)
    run = await a.open("slot", run_id="r1")
    await asyncio.gather(
        a.write(run.stream, [("1", "one"), ("2", "two")]),
        b.write(run.stream, [("2", "two"), ("3", "three")]),
    )
    await b.end(run.stream)
    frames = [f async for f in (await b.log.get(run.stream) and run).follow(0)]
    assert sorted(d for _, d in frames) == ["one", "three", "two"]
    assert [n for n, _ in frames] == [1, 2, 3]
    with pytest.raises(Refused):
        await asyncio.gather(b.open("slot2"), a.open("slot2"))
