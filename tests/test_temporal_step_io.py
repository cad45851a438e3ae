"""Issue 46 item 7: what a Temporal step costs the blob store.

Every Temporal payload and result that may hold conversation content crosses by
reference (ADR 0152), so each activity writes its outcome to the blob store, once. The
rest of a step writes once: a model request's and a tool call's payloads are built of
references only (ids, chain heads, blob keys, counts: ``engines/temporal/_refs.py``), so
they cross inline; a tool batch's payload names the step's response by the request's
recorded outcome and its call by its place there; what a request's payload stores (the
conversation's new nodes, and at the run's start its keywords and set-up) is one write.
So a step costs a request's two writes and one per tool call (each write is a SQLite
transaction, flushed to disk); the starter writes the run's input and prompt at once. A
worker reads a request's set-up (instructions, tool definitions) from the store once,
not once per request. The tools still see the whole conversation, the step's response
included.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from golem_core import Message, Role, ToolCallPart
from golem_core.loop import ModelResponded
from golem_shell import Agent, FunctionModel, RunContext, tool
from golem_shell.engines._blobs import MemoryBlobs, Row, is_stashed, stash
from golem_shell.engines._records import encode

temporal = pytest.importorskip("temporalio", reason="the temporal extra is not installed")
from temporalio.client import Client  # noqa: E402

from golem_shell.engines.temporal._refs import Refs, read_tool  # noqa: E402
from golem_shell.temporal import TemporalAgent  # noqa: E402

STEPS = 4
SEEN: list[int] = []  # the messages each tool call saw


class CountingBlobs(MemoryBlobs):
    """Blobs in memory, counting writes (with rows) and reads by key."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.reads: Counter[str] = Counter()

    def put(self, rows: Sequence[Row]) -> None:
        if rows:
            self.writes += 1
        super().put(rows)

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        self.reads.update(keys)
        return super().get(keys)


def _steps(request: Any) -> Message | str:
    done = sum(1 for m in request.messages if m.role is Role.TOOL)
    if done >= STEPS:
        return f"done {done}"
    call = ToolCallPart(f"c{done}", "look", json.dumps({"n": done}))
    return Message(Role.ASSISTANT, (call,))


@tool
def look(ctx: RunContext[None], n: int) -> str:
    """Look at step n."""
    SEEN.append(len(ctx.messages))
    last = ctx.messages[-1]
    assert last.role is Role.ASSISTANT and last.tool_calls[0].id == f"c{n}"  # its call
    return f"step {n}"


STORE = CountingBlobs()
AGENT = TemporalAgent(
    Agent(FunctionModel(_steps), tools=[look], instructions="Look at every step."),
    name="t-step-io",
    task_queue="golem-step-io",
    blobs=STORE,
)


@pytest.mark.anyio
async def test_a_step_writes_the_store_once_and_reads_the_set_up_once(
    temporal_server: Any,
) -> None:
    client = await Client.connect(temporal_server.address)
    SEEN.clear()
    async with AGENT.worker(client):
        before = STORE.writes
        result = await AGENT.run(client, "go", run_id=f"io-{uuid.uuid4()}")
        writes = STORE.writes - before
    assert result.output == f"done {STEPS}"
    # the tools saw the conversation up to their call: the instructions, the prompt,
    # then per step a call and a result
    expected = [3 + 2 * n for n in range(STEPS)]
    assert expected == SEEN, SEEN
    requests = STEPS + 1
    # per request: its history's new nodes (with, at the first, the run's keywords, its
    # set-up and system messages) and its outcome; per tool call: its outcome; once: the
    # starter's input and prompt (one write), the process's handshake, and the run's end.
    # No payload is written apart (there were two more writes per step).
    assert writes <= 2 * requests + STEPS + 3, writes
    set_up_reads = [n for key, n in STORE.reads.items() if n >= requests]
    assert not set_up_reads, STORE.reads  # the set-up was read once, not per request


def test_a_payload_field_not_known_as_a_reference_is_stashed() -> None:
    """``Refs`` names the step's response and its calls by the request's recorded
    outcome; anything else it was not built from (another message, a call the response
    does not hold) is stashed, never carried inline, and each reads back as it was."""
    store = MemoryBlobs()
    call = ToolCallPart("c0", "look", json.dumps({"n": "secret"}))
    response = Message(Role.ASSISTANT, (call,))
    refs = Refs(store)
    refs.responded(response, stash(store, encode(ModelResponded(response))))
    ids = ("run", "conversation")
    stamped = response.with_ids(*ids)
    by_ref = {"runId": "run", "conversationId": "conversation", "history": None}
    by_ref |= refs.added((stamped,), ids) | refs.call(call, {})
    assert set(by_ref) == {
        "runId",
        "conversationId",
        "history",
        "addedFrom",
        "stamped",
        "callFrom",
        "callAt",
    }
    assert read_tool(store, by_ref) == ((stamped,), call)
    other = Message(Role.ASSISTANT, (ToolCallPart("c9", "look", "{}"),))
    stranger = ToolCallPart("c9", "look", json.dumps({"n": "other secret"}))
    stashed = refs.added((stamped, other), ids) | refs.call(stranger, {})
    assert set(stashed) == {"added", "call"} and all(is_stashed(v) for v in stashed.values())
    assert "secret" not in json.dumps(by_ref) + json.dumps(stashed)
    assert read_tool(store, stashed) == ((stamped, other), stranger)
