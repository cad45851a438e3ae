"""Issue 34 items 1-2: durable runs carry conversations by reference, and no payload wall.

A run whose tools return 700 kB results (three in one batch, ten in all) completes on
Temporal and on DBOS, and no recorded payload is larger than twice the largest message
(Temporal's history events; DBOS's workflow input, output and step outputs). A run
started with a 2.5 MB history works on both. A conversation of many DBOS runs records its
history once, not once per run. A Temporal run that outgrows ``history_events``
continues as new and ends as an uninterrupted run does, reporting each event once. A
reference to a blob the store does not hold fails the run promptly with a ``RunError``
(a Temporal workflow task that raised would be retried without end: the run would hang).
The blob store itself: chains round-trip, a tampered blob is refused.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import pytest
from dbos_launch import dbos_fixture

from golem_core import Message, Role, TextPart, ToolCallPart, encode_message, trim_history
from golem_shell import Agent, FunctionModel, RunError, Stage, Tool, tool
from golem_shell.engines._blobs import (
    LOG_CHAIN,
    MESSAGE_CHAIN,
    Chain,
    ErasedBlob,
    MemoryBlobs,
    MissingBlob,
    SQLiteBlobs,
    extend_chain,
    key_of,
    load_chain,
    owned_by,
    stash,
    unstash,
)

BIG = 700_000
RESULTS = 10


@tool
def fetch(n: int) -> str:
    """A 700 kB document, distinct per ``n``."""
    return f"document {n}: " + "x" * BIG


def _big_tools(request: Any) -> Message | str:
    """Three calls in the first batch, then one per turn, until ten results; then text."""
    done = sum(1 for m in request.messages if m.role is Role.TOOL)
    if done >= RESULTS:
        return f"read {done} documents"
    batch = range(done, done + 3) if done == 0 else range(done, done + 1)
    calls = tuple(ToolCallPart(f"c{n}", "fetch", json.dumps({"n": n})) for n in batch)
    return Message(Role.ASSISTANT, calls)


def _echo_length(request: Any) -> str:
    return f"{len(request.messages)} messages, {sum(_size(m) for m in request.messages)} bytes"


def _size(m: Message) -> int:
    return len(encode_message(m))


def _steps(request: Any) -> Message | str:
    """A call per turn for 30 turns (a long run), then the sum of the results."""
    results = [m for m in request.messages if m.role is Role.TOOL]
    if len(results) >= 30:
        return f"total {sum(int(m.text) for m in results)}"
    call = ToolCallPart(f"s{len(results)}", "square", json.dumps({"n": len(results)}))
    return Message(Role.ASSISTANT, (call,))


@tool
def square(n: int) -> int:
    """n squared."""
    return n * n


BIG_HISTORY = (
    Message.user("a" * 1_300_000),
    Message(Role.ASSISTANT, (TextPart("b" * 1_300_000),)),
)  # 2.6 MB: past Temporal's 2 MB payload limit


def _plain(messages: tuple[Message, ...]) -> list[Message]:
    return [attrs.evolve(m, created_at=None) for m in messages]


# -- the blob store -------------------------------------------------------------------------


def test_a_sqlite_store_reads_back_what_it_wrote_lately_without_a_query(tmp_path: Path) -> None:
    """What a worker reads soon after writing it (an activity's outcome in its workflow,
    a run's result in its client) is served from the store's memory; another store on
    the file has no such memory, and an erasure in the process empties it, so an erased
    blob is never served."""
    store = SQLiteBlobs(tmp_path / "blobs.sqlite")
    with owned_by("c1"):
        ref = stash(store, {"said": "hello"})
    db = sqlite3.connect(store.path)
    with db:  # behind the store's back: a read that queried would not find it
        db.execute("DELETE FROM golem_blobs WHERE key = ?", (ref["key"],))
    db.close()
    assert unstash(store, ref, "t") == {"said": "hello"}
    with pytest.raises(MissingBlob):
        unstash(SQLiteBlobs(store.path), ref, "t")
    assert store.release(["c1"], "delete of 'c1'") == (ref["key"],)
    with pytest.raises(ErasedBlob, match="delete of 'c1'"):
        unstash(store, ref, "t")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_chain_round_trips_and_shares_its_prefix(kind: str, tmp_path: Path) -> None:
    store = MemoryBlobs() if kind == "memory" else SQLiteBlobs(tmp_path / "blobs.sqlite")
    messages = tuple(Message.user(f"m{i}") for i in range(40))
    chain = extend_chain(store, MESSAGE_CHAIN, Chain(), messages[:30])
    longer = extend_chain(store, MESSAGE_CHAIN, chain, messages)
    assert longer.keys[:30] == chain.keys  # the prefix's nodes are reused
    MESSAGE_CHAIN.cache.clear()
    assert load_chain(store, MESSAGE_CHAIN, longer.head, "t").values == messages
    MESSAGE_CHAIN.cache.clear()
    again = extend_chain(store, MESSAGE_CHAIN, Chain(), messages)  # from scratch: same keys
    assert again.keys == longer.keys
    assert load_chain(store, LOG_CHAIN, None, "t") == Chain()


def test_a_tampered_or_missing_blob_is_refused(tmp_path: Path) -> None:
    store = SQLiteBlobs(tmp_path / "blobs.sqlite")
    chain = extend_chain(store, MESSAGE_CHAIN, Chain(), (Message.user("pay 10"),))
    MESSAGE_CHAIN.cache.clear()
    db = sqlite3.connect(store.path)
    with db:
        db.execute(
            "UPDATE golem_blobs SET body = ? WHERE key = ?",
            (b"\n" + encode_message(Message.user("pay 10000")), chain.head),
        )
    with pytest.raises(MissingBlob, match="does not hold its content"):
        load_chain(store, MESSAGE_CHAIN, chain.head, "history")
    with pytest.raises(MissingBlob, match="not in"):
        load_chain(MemoryBlobs(), MESSAGE_CHAIN, key_of(b"nothing"), "history")
    small, large = {"a": 1}, {"a": "y" * 300_000}
    assert stash(store, small, limit=100) == small  # by default every value is a reference
    assert (
        stash(store, small)["type"] == "golemBlob"
        and unstash(store, stash(store, small), "t") == small
    )
    stashed = stash(store, large)
    assert len(json.dumps(stashed)) < 200 and unstash(store, stashed, "t") == large
    with pytest.raises(MissingBlob):
        unstash(MemoryBlobs(), stashed, "t")


# -- Temporal -------------------------------------------------------------------------------

temporal = pytest.importorskip("temporalio", reason="the temporal extra is not installed")
from temporalio.client import Client  # noqa: E402

from golem_shell.temporal import TemporalAgent  # noqa: E402

QUEUE = "golem-payloads"
EVENTS: list[Any] = []
T_BIG = TemporalAgent(
    Agent(FunctionModel(_big_tools), tools=[fetch]), name="t-big", task_queue=QUEUE
)
T_ECHO = TemporalAgent(Agent(FunctionModel(_echo_length)), name="t-echo", task_queue=QUEUE)
T_LONG = TemporalAgent(
    Agent(FunctionModel(_steps), tools=[square]),
    name="t-long",
    task_queue=QUEUE,
    history_events=50,
    on_event=EVENTS.append,
)
LARGEST = _size(Message.tool_result("c9", "fetch", f"document 9: {'x' * BIG}"))


def _lookup(key: str) -> str:
    return f"value of {key}"


MANY_TOOLS = [
    Tool.from_function(_lookup, name=f"lookup_{i}", description=f"Tool {i}. " + "y" * 2_000)
    for i in range(30)
]


SEEN_IDS: list[tuple[str | None, str | None]] = []  # each request's ids, as the model saw them


def _uses_tool_3(request: Any) -> Message | str:
    SEEN_IDS.append((request.run_id, request.conversation_id))
    if request.messages[-1].role is Role.TOOL:
        return f"found: {request.messages[-1].text}"
    return Message.assistant(tool_calls=[ToolCallPart("c1", "lookup_3", '{"key": "k"}')])


T_TOOLS = TemporalAgent(
    Agent(FunctionModel(_uses_tool_3), tools=MANY_TOOLS), name="t-tools", task_queue=QUEUE
)


async def _events(client: Client, run_id: str) -> list[Any]:
    handle = client.get_workflow_handle(run_id)
    return [e async for e in handle.fetch_history_events()]


@pytest.mark.anyio
async def test_temporal_700kB_tool_results_complete_with_bounded_payloads(
    temporal_server: Any,
) -> None:
    client = await Client.connect(temporal_server.address)
    run_id = f"big-{uuid.uuid4()}"
    async with T_BIG.worker(client):
        result = await asyncio.wait_for(T_BIG.run(client, "read them", run_id=run_id), 120)
        events = await _events(client, run_id)
    assert result.output == f"read {RESULTS} documents"
    assert sum(1 for m in result.messages if m.role is Role.TOOL) == RESULTS
    assert max(_size(m) for m in result.messages) >= BIG
    largest_event = max(e.ByteSize() for e in events)
    assert largest_event <= 2 * LARGEST, (largest_event, LARGEST)
    assert sum(e.ByteSize() for e in events) <= 2 * LARGEST  # nothing carries the conversation


def _payload_bytes(event: Any) -> int:
    """The data bytes of an activity's input or result in ``event`` (0 for other events)."""
    if event.HasField("activity_task_scheduled_event_attributes"):
        payloads = event.activity_task_scheduled_event_attributes.input
    elif event.HasField("activity_task_completed_event_attributes"):
        payloads = event.activity_task_completed_event_attributes.result
    else:
        return 0
    return sum(len(p.data) for p in payloads.payloads)


@pytest.mark.anyio
async def test_temporal_a_requests_set_up_goes_by_reference_once(temporal_server: Any) -> None:
    """Thirty tools of 2 kB each: the request activity's input names the request's set-up
    (instructions, tool definitions) by its blob, so no activity input carries them; the
    set-up holds no ids, so two runs of the agent share it, and each request still
    carries its own run's ids to the model."""
    client = await Client.connect(temporal_server.address)
    runs = [f"tools-{uuid.uuid4()}" for _ in range(2)]
    SEEN_IDS.clear()
    inputs = []
    async with T_TOOLS.worker(client):
        for run_id in runs:
            result = await asyncio.wait_for(T_TOOLS.run(client, "look it up", run_id=run_id), 60)
            assert result.output == "found: value of k"
            events = await _events(client, run_id)
            largest = max(_payload_bytes(e) for e in events)
            assert largest < 2_000, largest  # no payload holds the tool definitions
            scheduled = [
                e.activity_task_scheduled_event_attributes
                for e in events
                if e.HasField("activity_task_scheduled_event_attributes")
            ]
            inputs += [
                json.loads(e.input.payloads[0].data)
                for e in scheduled
                if e.activity_type.name == "golem.request"
            ]
            assert SEEN_IDS[-2:] == [(run_id, result.conversation_id)] * 2
    definitions = sum(len(t.definition.description or "") for t in MANY_TOOLS)
    assert definitions >= 60_000
    # built of references only, it crosses inline (ADR 0152 holds: ids, heads, blob keys)
    fields = {"agent", "runId", "conversationId", "options", "request", "requestIds"}
    assert all(set(i) == fields | {"history", "requests"} for i in inputs), inputs
    assert all(i["options"]["type"] == "golemBlob" for i in inputs)
    assert all(i["requestIds"] == [i["runId"], i["conversationId"]] for i in inputs)
    assert len(inputs) == 4 and all(i["request"]["type"] == "golemBlob" for i in inputs)
    assert len({json.dumps(i["request"]) for i in inputs}) == 1  # one set-up, every run's


@pytest.mark.anyio
async def test_temporal_start_with_a_2_5MB_history_works(temporal_server: Any) -> None:
    client = await Client.connect(temporal_server.address)
    async with T_ECHO.worker(client):
        result = await asyncio.wait_for(
            T_ECHO.run(client, "and now?", history=BIG_HISTORY, run_id=f"echo-{uuid.uuid4()}"),
            60,
        )
    assert result.output.startswith("3 messages")
    assert _plain(result.messages[:2]) == _plain(BIG_HISTORY)


@pytest.mark.anyio
async def test_temporal_long_run_continues_as_new_and_equals_a_plain_run(
    temporal_server: Any,
) -> None:
    client = await Client.connect(temporal_server.address)
    run_id = f"long-{uuid.uuid4()}"
    EVENTS.clear()
    async with T_LONG.worker(client):
        result = await asyncio.wait_for(T_LONG.run(client, "sum squares", run_id=run_id), 120)
        events = await _events(client, run_id)  # the latest execution's
    plain_events: list[Any] = []
    plain = await T_LONG.agent.run(
        "sum squares",
        run_id=run_id,
        conversation_id=result.conversation_id,
        on_event=plain_events.append,
    )
    assert result.output == plain.output == f"total {sum(n * n for n in range(30))}"
    assert _plain(result.messages) == _plain(plain.messages)
    assert (result.requests, result.tool_executions) == (plain.requests, plain.tool_executions)
    started = events[0].workflow_execution_started_event_attributes
    assert started.continued_execution_run_id  # it continued as new
    assert len(events) <= 50 + 20  # bounded by history_events, not by the run's length
    assert [type(e).__name__ for e in EVENTS] == [type(e).__name__ for e in plain_events]


def _brief(context: Any) -> str:
    return "be brief"


T_REPLAY = TemporalAgent(
    Agent(
        FunctionModel(_steps),
        tools=[square],
        dynamic_instructions=_brief,
        history_processor=trim_history(1000),
    ),
    name="t-replay",
    task_queue=QUEUE,
    history_events=50,
)


@pytest.mark.anyio
async def test_temporal_a_replay_makes_no_activity_payload(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46 item 6 (docs/durable.md: "a replay makes no activity payload"): a run
    with dynamic instructions, a history processor and 30 tool turns continues as new
    several times; every execution replays the driver over the journal of the earlier
    ones, and no activity payload is built while it does (each is built once, by the
    execution that performs its activity)."""
    from golem_shell.engines.temporal import _workflow

    counts: Counter[str] = Counter()
    replaying = [False]  # whether the effect asked for now is one of an earlier execution
    journal_init, ask, build = (
        _workflow._Journal.__init__,
        _workflow._Journal.ask,
        _workflow.payload_of,
    )
    go_on = _workflow._Journal.continue_as_new

    def counting_init(self: Any, *args: Any) -> None:
        journal_init(self, *args)
        replaying[0] = bool(self.earlier.values)  # a continued execution starts replaying

    def counting_ask(self: Any) -> int:
        replaying[0] = self.replaying
        counts["replayed asks" if self.replaying else "asks"] += 1
        return ask(self)

    def counting_build(*args: Any, **kwargs: Any) -> Any:
        counts["builds in a replay" if replaying[0] else "builds"] += 1
        return build(*args, **kwargs)

    async def counting_continue(self: Any) -> None:
        counts["continued"] += 1
        await go_on(self)

    monkeypatch.setattr(_workflow._Journal, "__init__", counting_init)
    monkeypatch.setattr(_workflow._Journal, "ask", counting_ask)
    monkeypatch.setattr(_workflow._Journal, "continue_as_new", counting_continue)
    monkeypatch.setattr(_workflow, "payload_of", counting_build)
    client = await Client.connect(temporal_server.address)
    async with T_REPLAY.worker(client):
        result = await asyncio.wait_for(
            T_REPLAY.run(client, "sum squares", run_id=f"replay-{uuid.uuid4()}"), 120
        )
    assert result.output == f"total {sum(n * n for n in range(30))}"
    assert counts["continued"] >= 3, counts
    assert counts["replayed asks"] >= 3 * 10, counts  # the replays did replay
    assert counts["builds in a replay"] == 0, counts
    activities = result.requests + result.tool_executions + 2  # + instructions, processor
    assert counts["builds"] >= activities, counts


@pytest.mark.anyio
async def test_temporal_missing_blob_fails_the_run_promptly(temporal_server: Any) -> None:
    client = await Client.connect(temporal_server.address)
    run_id = f"missing-{uuid.uuid4()}"
    payload = {
        "runId": run_id,
        "conversationId": "c",
        "historyHead": key_of(b"a blob no store holds"),
        "prompt": None,
        "now": "2025-01-01T00:00:00+00:00",
    }
    async with T_ECHO.worker(client):
        await client.start_workflow(
            "golem.run", args=["t-echo", payload], id=run_id, task_queue=QUEUE
        )
        with pytest.raises(RunError) as failed:
            await asyncio.wait_for(T_ECHO.result(client, run_id), 30)
    assert failed.value.stage is Stage.HISTORY
    assert "not in" in str(failed.value)


# -- DBOS -----------------------------------------------------------------------------------

dbos = pytest.importorskip("dbos", reason="the dbos extra is not installed")
from golem_shell.durable import DurableAgent  # noqa: E402
from golem_shell.engines.dbos._workflow import durable_run  # noqa: E402

D_BIG = DurableAgent(Agent(FunctionModel(_big_tools), tools=[fetch]), name="d-big")
D_ECHO = DurableAgent(Agent(FunctionModel(_echo_length)), name="d-echo")
D_CHAT = DurableAgent(Agent(FunctionModel(lambda r: "r" * 4000)), name="d-chat")


launched = dbos_fixture("golem-payloads")
"""One DBOS on a fresh SQLite file for this module's tests; yields the file."""


def _recorded(path: Path, run_ids: list[str]) -> list[int]:
    """The sizes of every value DBOS recorded for these runs: inputs, outputs, steps."""
    db = sqlite3.connect(path)
    marks = ",".join("?" * len(run_ids))
    sizes: list[int] = []
    for table, column in (
        ("workflow_status", "inputs"),
        ("workflow_status", "output"),
        ("workflow_input", "inputs"),
        ("workflow_output", "output"),
        ("operation_outputs", "output"),
    ):
        query = f"SELECT {column} FROM {table} WHERE workflow_uuid IN ({marks})"
        sizes += [len(v or "") for (v,) in db.execute(query, run_ids)]
    return sizes


def _run_io(path: Path, run_id: str) -> int:
    """The size of a run's recorded input and output."""
    db = sqlite3.connect(path)
    return sum(
        len(v or "")
        for table, column in (("workflow_input", "inputs"), ("workflow_output", "output"))
        for (v,) in db.execute(f"SELECT {column} FROM {table} WHERE workflow_uuid = ?", [run_id])
    )


@pytest.mark.anyio
async def test_dbos_700kB_tool_results_complete_with_bounded_records(launched: Path) -> None:
    run_id = f"big-{uuid.uuid4()}"
    result = await asyncio.wait_for(D_BIG.run("read them", run_id=run_id), 120)
    assert result.output == f"read {RESULTS} documents"
    assert sum(1 for m in result.messages if m.role is Role.TOOL) == RESULTS
    sizes = _recorded(launched, [run_id])
    assert max(sizes) <= 2 * LARGEST, (max(sizes), LARGEST)
    assert 0 < _run_io(launched, run_id) < 10_000  # references, not the conversation


@pytest.mark.anyio
async def test_dbos_start_with_a_2_5MB_history_works(launched: Path) -> None:
    run_id = f"echo-{uuid.uuid4()}"
    result = await D_ECHO.run("and now?", history=BIG_HISTORY, run_id=run_id)
    assert result.output.startswith("3 messages")
    assert 0 < _run_io(launched, run_id) < 10_000


@pytest.mark.anyio
async def test_dbos_a_conversation_of_many_runs_is_recorded_once(launched: Path) -> None:
    history: tuple[Message, ...] = ()
    run_ids = []
    db = sqlite3.connect(launched)
    stored = "SELECT coalesce(sum(length(body)), 0) FROM golem_blobs"
    before = db.execute(stored).fetchone()[0]
    for turn in range(12):
        run_ids.append(f"chat-{turn}-{uuid.uuid4()}")
        result = await D_CHAT.run("q" * 4000, history=history, run_id=run_ids[-1])
        history = result.messages
    conversation = sum(_size(m) for m in history)
    blobs = db.execute(stored).fetchone()[0] - before
    recorded = sum(_recorded(launched, run_ids))
    # each run records its own turn (prompt in, answer out), not the conversation so far
    first, last = sum(_recorded(launched, run_ids[:1])), sum(_recorded(launched, run_ids[-1:]))
    assert last <= 1.2 * first, (first, last)
    assert recorded <= 2 * conversation, (recorded, conversation)
    # the conversation is stored once as a chain, and each run's turn once more as the
    # records DBOS holds by reference (ADR 0152): never the conversation so far per run
    assert blobs + recorded <= 3.2 * conversation, (blobs, recorded, conversation)
    assert recorded <= 0.1 * conversation, (recorded, conversation)  # hashes only


@pytest.mark.anyio
async def test_dbos_missing_blob_fails_the_run_promptly(launched: Path) -> None:
    run_id = f"missing-{uuid.uuid4()}"
    payload = {
        "runId": run_id,
        "conversationId": "c",
        "historyHead": key_of(b"a blob no store holds"),
        "prompt": None,
        "now": "2025-01-01T00:00:00+00:00",
    }
    with dbos.SetWorkflowID(run_id):
        await dbos.DBOS.start_workflow_async(durable_run, "d-echo", payload)
    with pytest.raises(RunError) as failed:
        await asyncio.wait_for(D_ECHO.result(run_id), 30)
    assert failed.value.stage is Stage.HISTORY


@pytest.mark.anyio
async def test_dbos_a_starter_and_a_worker_of_other_blob_stores_fail_at_the_start(
    launched: Path,
) -> None:
    """Issue 46 item 5 on DBOS: a run started with another blob store than the worker's
    (``DurableAgent(blobs=)`` differing between processes) fails at its start, before
    any request, with ``RunError(stage="history")`` naming ``blobs=``; a result whose
    blobs the reader's store lacks is the same ``RunError``, not a raw ``MissingBlob``."""
    from golem_shell.engines._engine import run_input
    from golem_shell.engines._records import RecordedOptions

    run_id = f"foreign-{uuid.uuid4()}"
    starters = MemoryBlobs()  # the starting process's own store
    payload = run_input("hello", (), run_id, None, starters, RecordedOptions())
    with dbos.SetWorkflowID(run_id):
        await dbos.DBOS.start_workflow_async(durable_run, "d-echo", payload)
    with pytest.raises(RunError) as failed:
        await asyncio.wait_for(D_ECHO.result(run_id), 30)
    assert failed.value.stage is Stage.HISTORY
    assert "blobs=" in str(failed.value) and failed.value.partial is None
    assert "not the one the run was started with" in str(failed.value)

    done = await asyncio.wait_for(D_ECHO.run("hello", run_id=f"read-{uuid.uuid4()}"), 30)
    D_ECHO.blobs = MemoryBlobs()  # a reader whose store is not the worker's
    MESSAGE_CHAIN.cache.clear()  # as in another process: no chain decoded in memory
    try:
        with pytest.raises(RunError) as unreadable:
            await D_ECHO.result(done.run_id)
    finally:
        D_ECHO.blobs = None
    assert unreadable.value.stage is Stage.HISTORY
    assert "blobs=" in str(unreadable.value)
