"""Following a durable run's events and deltas from another process (ADR 0151).

A worker process (``events_worker.py``) executes runs of a streaming agent on DBOS (a
SQLite system database) or Temporal (the session's dev server); the test process follows
each run with ``events(run_id, after=)`` from the event log both open (a SQLite
conversation store's stream log). The follower disconnects midway and resumes from its
last offset, the worker is SIGKILLed with a tool in flight and another recovers the run:
the offsets the follower read are 1..N without a gap or a repeat, and the events are
those a plain streamed run of the same agent emits (ids and measured durations aside).
What the engine records (DBOS's step outputs, Temporal's event history) is the same for
an answer streamed in 10 pieces as in 1000.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from events_worker import TEXT, make_agent
from worker_process import Worker, until

from golem_core import RequestStarted, RunFinished, ToolStarted
from golem_shell import Agent, DeltaEvent
from golem_shell.run._event_stream import RunEvent
from golem_shell.store import SQLiteHistoryStore

pytest.importorskip("dbos", reason="the dbos extra is not installed")
pytest.importorskip("temporalio", reason="the temporal extra is not installed")

from golem_shell.durable import DurableAgent
from golem_shell.temporal import TemporalAgent

TESTS = Path(__file__).parent
WORKER = TESTS / "events_worker.py"
_FOLLOW_SECONDS = 90.0
_until = functools.partial(until, seconds=_FOLLOW_SECONDS)


def _normal(event: RunEvent) -> RunEvent:
    """The event without what differs between two runs: ids and measured durations."""
    changes: dict[str, Any] = {"run_id": "", "conversation_id": ""}
    if hasattr(event, "duration"):
        changes["duration"] = 0.0
    return attrs.evolve(event, **changes)  # type: ignore[misc]


async def _plain(where: Path, prompt: str) -> list[RunEvent]:
    """The events of a plain streamed run of the same agent."""
    agent: Agent[None, str] = make_agent(where)
    async with agent.iter_stream(prompt) as stream:
        return [event async for event in stream]


async def _take(
    events: AsyncIterator[tuple[int, RunEvent]],
    into: list[tuple[int, RunEvent]],
    stop: Callable[[RunEvent], bool] = lambda e: False,
) -> None:
    """Read ``events`` into ``into`` until one satisfies ``stop`` (or they end)."""

    async def read() -> None:
        async for offset, event in events:
            into.append((offset, event))
            if stop(event):
                return

    await asyncio.wait_for(read(), _FOLLOW_SECONDS)


def _check(seen: list[tuple[int, RunEvent]], plain: list[RunEvent]) -> None:
    offsets = [o for o, _ in seen]
    assert offsets == list(range(1, len(seen) + 1)), "a gap or a repeated offset"
    assert [_normal(e) for _, e in seen] == [_normal(e) for e in plain]
    assert isinstance(seen[-1][1], RunFinished)
    text = "".join(e.text or "" for _, e in seen if isinstance(e, DeltaEvent))
    assert text == TEXT


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The directory of the module's event log (and Temporal blob store)."""
    yield tmp_path_factory.mktemp("events")


def _store(shared: Path) -> SQLiteHistoryStore:
    return SQLiteHistoryStore(shared / "events.sqlite")


# -- DBOS ---------------------------------------------------------------------------------


def _dbos_config(where: Path, shared: Path, **more: Any) -> dict[str, Any]:
    return {
        "engine": "dbos",
        "dir": str(where),
        "events": str(shared / "events.sqlite"),
        "db": f"sqlite:///{where / 'dbos.sqlite'}",
        "executor": "events-1",
        **more,
    }


@pytest.mark.anyio
async def test_dbos_follower_resumes_and_outlives_a_killed_worker(
    tmp_path: Path, shared: Path
) -> None:
    plain = await _plain(tmp_path, "go pieces=40")
    (tmp_path / "block").write_text("")
    run_id = "ev-dbos-kill"
    config = _dbos_config(tmp_path, shared, runs=[[run_id, "go pieces=40"]], wait=[run_id])
    first = Worker(WORKER, tmp_path, "first", config)
    reader = DurableAgent(make_agent(tmp_path), name="reader-kill", event_log=_store(shared))
    seen: list[tuple[int, RunEvent]] = []
    try:
        await _take(reader.events(run_id), seen, lambda e: len(seen) == 2)  # disconnects
        after = seen[-1][0]
        await _take(reader.events(run_id, after=after), seen, lambda e: isinstance(e, ToolStarted))
        await _until((tmp_path / "blocked").exists, [first], "the tool to start")
        first.kill()  # the tool in flight: the run resumes in the next worker
        (tmp_path / "block").unlink()
        second = Worker(WORKER, tmp_path, "second", config)
        try:
            await _take(reader.events(run_id, after=seen[-1][0]), seen)
            await _until((tmp_path / f"{run_id}.done").exists, [second], "the run's end")
        finally:
            second.kill()
    finally:
        first.kill()
    _check(seen, plain)
    assert sum(isinstance(e, RequestStarted) for _, e in seen) == 2  # no request again


@pytest.mark.anyio
async def test_dbos_request_killed_midway_starts_again_in_the_stream(
    tmp_path: Path, shared: Path
) -> None:
    plain = await _plain(tmp_path, "go pieces=40")
    (tmp_path / "block-stream").write_text("")
    run_id = "ev-dbos-midway"
    config = _dbos_config(tmp_path, shared, runs=[[run_id, "go pieces=40"]], wait=[run_id])
    first = Worker(WORKER, tmp_path, "first", config)
    reader = DurableAgent(make_agent(tmp_path), name="reader-midway", event_log=_store(shared))
    seen: list[tuple[int, RunEvent]] = []
    try:
        await _until((tmp_path / "streaming").exists, [first], "the answer to stream")
        first.kill()  # 20 of its 40 pieces out: the request is performed again
        (tmp_path / "block-stream").unlink()
        second = Worker(WORKER, tmp_path, "second", config)
        try:
            await _take(reader.events(run_id), seen)
        finally:
            second.kill()
    finally:
        first.kill()
    assert [o for o, _ in seen] == list(range(1, len(seen) + 1))
    starts = [i for i, (_, e) in enumerate(seen) if isinstance(e, RequestStarted)]
    assert [seen[i][1].request for i in starts] == [1, 2, 2]  # type: ignore[attr-defined]
    cut = seen[starts[1] : starts[2]]  # the first attempt of request 2: 20 pieces
    assert 1 <= len(cut) - 1 <= 20 and all(isinstance(e, DeltaEvent) for _, e in cut[1:])
    rest = seen[: starts[1]] + seen[starts[2] :]  # a client drops it at the new start
    _check([(n, e) for n, (_, e) in enumerate(rest, 1)], plain)


@pytest.mark.anyio
async def test_dbos_step_outputs_do_not_grow_with_the_deltas(tmp_path: Path, shared: Path) -> None:
    runs = [["ev-dbos-0010", "go pieces=10"], ["ev-dbos-1000", "go pieces=1000"]]
    config = _dbos_config(tmp_path, shared, runs=runs, wait=[r for r, _ in runs])
    worker = Worker(WORKER, tmp_path, "sizes", config)
    reader = DurableAgent(make_agent(tmp_path), name="reader-sizes", event_log=_store(shared))
    try:
        followed: dict[str, list[tuple[int, RunEvent]]] = {}
        for run_id, prompt in runs:
            followed[run_id] = []
            await _take(reader.events(run_id), followed[run_id])
            _check(followed[run_id], await _plain(tmp_path, prompt))
        await _until(
            lambda: all((tmp_path / f"{r}.done").exists() for r, _ in runs), [worker], "the runs"
        )
    finally:
        worker.kill()
    deltas = {r: sum(isinstance(e, DeltaEvent) for _, e in followed[r]) for r, _ in runs}
    assert deltas == {"ev-dbos-0010": 11, "ev-dbos-1000": 1001}
    with sqlite3.connect(tmp_path / "dbos.sqlite") as db:
        sizes = {
            r: db.execute(
                "SELECT count(*), sum(length(output)) FROM operation_outputs"
                " WHERE workflow_uuid = ?",
                (r,),
            ).fetchone()
            for r, _ in runs
        }
    (steps_10, size_10), (steps_1000, size_1000) = sizes["ev-dbos-0010"], sizes["ev-dbos-1000"]
    # the outputs are references to the answer's blobs (ADR 0152): none holds a delta
    assert steps_10 == steps_1000 and size_10 > 0
    assert abs(size_1000 - size_10) < 100, sizes  # the same answer, in 100x the deltas


@pytest.fixture
def dbos_here(tmp_path: Path) -> Iterator[Path]:
    """DBOS launched in this process, on a fresh SQLite file."""
    from dbos import DBOS, DBOSPortableJSONSerializer

    DBOS(
        config={
            "name": "golem-events-here",
            "system_database_url": f"sqlite:///{tmp_path / 'here.sqlite'}",
            "serializer": DBOSPortableJSONSerializer(),
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": 0.05,
        }
    )
    DBOS.launch()
    yield tmp_path
    DBOS.destroy()


@pytest.mark.anyio
async def test_dbos_run_hands_its_events_to_on_event(dbos_here: Path, shared: Path) -> None:
    from golem_shell import UsageError

    durable = DurableAgent(make_agent(dbos_here), name="events-here", event_log=_store(shared))
    received: list[RunEvent] = []
    result = await durable.run("go pieces=10", run_id="ev-here", on_event=received.append)
    assert result.output == TEXT
    _check(list(enumerate(received, 1)), await _plain(dbos_here, "go pieces=10"))
    with pytest.raises(UsageError, match="events"):
        await durable.start("go", on_event=received.append)
    bare = DurableAgent(make_agent(dbos_here), name="events-bare")
    with pytest.raises(UsageError, match="event_log="):
        await bare.run("go", on_event=received.append)


# -- Temporal -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def temporal_reader(shared: Path) -> TemporalAgent[None, str]:
    """The test process's ``TemporalAgent`` (the worker's name: it starts the runs)."""
    from golem_shell.engines._blobs import SQLiteBlobs

    return TemporalAgent(
        make_agent(shared),
        task_queue="unused",
        event_log=_store(shared),
        blobs=SQLiteBlobs(shared / "blobs.sqlite"),
    )


def _temporal_config(where: Path, shared: Path, address: str, queue: str) -> dict[str, Any]:
    return {
        "engine": "temporal",
        "dir": str(where),
        "events": str(shared / "events.sqlite"),
        "blobs": str(shared / "blobs.sqlite"),
        "address": address,
        "queue": queue,
    }


@pytest.mark.anyio
async def test_temporal_follower_resumes_and_outlives_a_killed_worker(
    tmp_path: Path, shared: Path, temporal_server: Any, temporal_reader: TemporalAgent[None, str]
) -> None:
    from temporalio.client import Client

    plain = await _plain(tmp_path, "go pieces=40")
    queue = f"events-{uuid.uuid4().hex[:8]}"
    temporal_reader.task_queue = queue
    config = _temporal_config(tmp_path, shared, temporal_server.address, queue)
    (tmp_path / "block").write_text("")
    first = Worker(WORKER, tmp_path, "first", {**config, "identity": "first"})
    workers = [first]
    try:
        await _until((tmp_path / "first.ready").exists, workers, "the first worker")
        client = await Client.connect(temporal_server.address)
        run_id = await temporal_reader.start(client, "go pieces=40", run_id=f"ev-t-{queue}")
        seen: list[tuple[int, RunEvent]] = []
        await _take(temporal_reader.events(client, run_id), seen, lambda e: len(seen) == 2)
        await _take(
            temporal_reader.events(client, run_id, after=seen[-1][0]),
            seen,
            lambda e: isinstance(e, ToolStarted),
        )
        await _until((tmp_path / "blocked").exists, workers, "the tool to start")
        first.kill()
        (tmp_path / "block").unlink()
        workers.append(Worker(WORKER, tmp_path, "second", {**config, "identity": "second"}))
        await _take(temporal_reader.events(client, run_id, after=seen[-1][0]), seen)
        result = await temporal_reader.result(client, run_id)
    finally:
        for w in workers:
            w.kill()
    assert result.output == TEXT
    _check(seen, plain)
    assert sum(isinstance(e, RequestStarted) for _, e in seen) == 2


@pytest.mark.anyio
async def test_temporal_run_continued_as_new_adds_no_event_twice(
    tmp_path: Path, shared: Path, temporal_server: Any, temporal_reader: TemporalAgent[None, str]
) -> None:
    from temporalio.client import Client

    prompt = "go steps=12 pieces=40"
    queue = f"events-{uuid.uuid4().hex[:8]}"
    temporal_reader.task_queue = queue
    config = _temporal_config(tmp_path, shared, temporal_server.address, queue)
    worker = Worker(WORKER, tmp_path, "can", {**config, "identity": "can", "history_events": 50})
    try:
        await _until((tmp_path / "can.ready").exists, [worker], "the worker")
        client = await Client.connect(temporal_server.address)
        run_id = await temporal_reader.start(client, prompt, run_id=f"ev-can-{queue}")
        seen: list[tuple[int, RunEvent]] = []
        await _take(temporal_reader.events(client, run_id), seen)
        executions = [e async for e in client.list_workflows(f"WorkflowId = '{run_id}'")]
    finally:
        worker.kill()
    assert len(executions) > 1  # it continued as new
    _check(seen, await _plain(tmp_path, prompt))
    assert sum(isinstance(e, ToolStarted) for _, e in seen) == 12


@pytest.mark.anyio
async def test_temporal_history_does_not_grow_with_the_deltas(
    tmp_path: Path, shared: Path, temporal_server: Any, temporal_reader: TemporalAgent[None, str]
) -> None:
    from temporalio.client import Client

    queue = f"events-{uuid.uuid4().hex[:8]}"
    temporal_reader.task_queue = queue
    config = _temporal_config(tmp_path, shared, temporal_server.address, queue)
    worker = Worker(WORKER, tmp_path, "sizes", {**config, "identity": "sizes"})
    sizes: dict[int, int] = {}
    try:
        await _until((tmp_path / "sizes.ready").exists, [worker], "the worker")
        client = await Client.connect(temporal_server.address)
        for pieces in (10, 1000):
            prompt = f"go pieces={pieces:04d}"
            run_id = await temporal_reader.start(client, prompt, run_id=f"ev-{pieces:04d}-{queue}")
            seen: list[tuple[int, RunEvent]] = []
            received: list[RunEvent] = []
            await _take(temporal_reader.events(client, run_id), seen)
            _check(seen, await _plain(tmp_path, prompt))
            assert sum(isinstance(e, DeltaEvent) for _, e in seen) == pieces + 1
            # run(on_event=) hands the same events over before it returns
            again = await temporal_reader.run(
                client, prompt, run_id=f"{run_id}-again", on_event=received.append
            )
            assert again.output == TEXT
            assert [_normal(e) for e in received] == [_normal(e) for _, e in seen]
            history = await client.get_workflow_handle(run_id).fetch_history()
            sizes[pieces] = len(history.to_json())
        # a run terminated through Temporal never ends its stream: the follower asks
        (tmp_path / "block").write_text("")
        run_id = await temporal_reader.start(client, "go", run_id=f"ev-terminated-{queue}")
        seen = []
        await _take(
            temporal_reader.events(client, run_id), seen, lambda e: isinstance(e, ToolStarted)
        )
        await client.get_workflow_handle(run_id).terminate("by the test")
        rest: list[tuple[int, RunEvent]] = []
        events = temporal_reader.events(client, run_id, after=seen[-1][0])
        await asyncio.wait_for(_take(events, rest), 15)  # it ends, with nothing more
        assert rest == []
    finally:
        worker.kill()
    assert abs(sizes[1000] - sizes[10]) < 300, sizes  # the same answer, in 100x the deltas


# -- the frames' JSON -------------------------------------------------------------------------


def test_every_event_kind_reads_back_as_it_was_written() -> None:
    from golem_core import (
        CompactionFinished,
        CompactionRecord,
        CompactionStarted,
        HistoryPorted,
        HistoryProcessed,
        RequestFailed,
        RequestFinished,
        RetryScheduled,
        RunFailed,
        RunPaused,
        RunStarted,
        RunSteered,
        TextDelta,
        TextPart,
        ThinkingDelta,
        ToolCallDelta,
        ToolCallPart,
        ToolFinished,
        Usage,
    )
    from golem_core.history._port import PortedPart, PortReport, RewrittenId
    from golem_core.history._prefix import HistoryChange
    from golem_core.loop import DeferredCall
    from golem_shell import ToolResultEvent
    from golem_shell.engines._events import decode_event, encode_event

    ids = ("r", "c")
    usage = Usage(input_tokens=3, output_tokens=4)
    record = CompactionRecord("fold", replaced=("m1", "m2"), tokens_before=90, tokens_after=20)
    report = PortReport(
        "openai",
        as_text=(PortedPart(1, 0, "thinking", "no signature"),),
        call_ids=(RewrittenId(2, "a.b", "a_b"),),
    )
    events: list[RunEvent] = [
        RunStarted(*ids, "m", True),
        HistoryProcessed(*ids, HistoryChange("cut", removed=((0, 2),), messages_before=5)),
        RunSteered(*ids, 2, 1),
        CompactionStarted(*ids, "fold", "context_too_long", 2, 9),
        CompactionFinished(*ids, "fold", "context_too_long", "compacted", record, 2),
        CompactionFinished(*ids, "fold", "processor", "declined: nothing to fold"),
        HistoryPorted(*ids, 2, "m", report),
        RequestStarted(*ids, 1, "m", True),
        RequestFinished(*ids, 1, 0.5, "m-1", usage, "stop"),
        RequestFailed(*ids, 1, 0.5, "boom", "overloaded", 529),
        RetryScheduled(*ids, 1, 1, 0.25, "boom", "overloaded", 529),
        ToolStarted(*ids, "c1", "step"),
        ToolFinished(*ids, "c1", "step", "returned", False, 0.1),
        ToolResultEvent(*ids, "c1", "step", (TextPart("done"),), False),
        RunFinished(*ids, usage, 2, 1),
        RunPaused(*ids, usage, 1, 0, (DeferredCall(ToolCallPart("c2", "x", "{}"), "approval"),)),
        RunFailed(*ids, "model", "ModelError", "boom", usage, 1, 0),
        DeltaEvent(*ids, 1, TextDelta("hi")),
        DeltaEvent(*ids, 1, ThinkingDelta("hm")),
        DeltaEvent(*ids, 1, ToolCallDelta(0, "c1", "step", '{"n"')),
    ]
    for event in events:
        assert decode_event(encode_event(event)) == event


@pytest.mark.anyio
async def test_a_failed_write_fails_the_request_rather_than_leave_a_gap(tmp_path: Path) -> None:
    from golem_core import ModelRequest
    from golem_core.loop import ModelFailed, ModelResponded, RequestModel, RunConfig, RunState
    from golem_shell.engines._events import request_streamed
    from golem_shell.store import StreamLog

    spec = make_agent(tmp_path)._spec({})
    command = RequestModel(ModelRequest(messages=()))
    state = RunState(RunConfig(run_id="ev-fails", conversation_id="c"), ())
    store = SQLiteHistoryStore(tmp_path / "events.sqlite")
    log = StreamLog(store)
    assert isinstance(await request_streamed(log, spec, command, state), ModelResponded)
    frames, _ = await log.read("golem.run/ev-fails")
    assert [type(decode(d)) for _, d in frames] == [RequestStarted, DeltaEvent]
    store.close()
    outcome = await request_streamed(log, spec, command, state)
    assert isinstance(outcome, ModelFailed) and "event log" in outcome.reason


def decode(data: str) -> RunEvent:
    from golem_shell.engines._events import decode_event

    return decode_event(data)


@pytest.mark.anyio
async def test_the_body_writes_each_event_once_and_not_a_stopped_worker(tmp_path: Path) -> None:
    from golem_core import RunFailed, Usage
    from golem_core.loop import RunConfig, RunState
    from golem_shell.engines._events import body_handler
    from golem_shell.store import StreamLog

    log = StreamLog(SQLiteHistoryStore(tmp_path / "events.sqlite"))
    state = RunState(RunConfig(run_id="ev-body", conversation_id="c"), ())
    heard: list[RunEvent] = []
    started = ToolStarted("ev-body", "c", "c1", "step")
    stopped = RunFailed("ev-body", "c", "cancelled", "CancelledError", "stop", Usage(), 1, 0)
    for _ in range(2):  # a replay of the body: the same events again
        handler = body_handler(log, state, heard.append)
        assert handler is not None
        for event in (started, stopped):
            await handler(event)  # type: ignore[misc]
    frames, _ = await log.read("golem.run/ev-body")
    assert [decode(d) for _, d in frames] == [started]
    assert heard == [started, stopped] * 2  # the worker's on_event hears everything
