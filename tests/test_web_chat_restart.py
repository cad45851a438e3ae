"""The web chat as a deployment: two server processes, one store, durable turns (DBOS).

A turn starts on process A; A is SIGKILLed in the middle of the streamed answer; the
client reconnects to process B with its ``Last-Event-ID`` and B serves the same stream
from the store while A, restarted with its worker id, resumes the run (DBOS recovers the
workflow; ``StreamTap`` writes the rest). The client sees every frame once, in order,
numbered without a gap; the answer's words each once; the stored conversation equals
an uninterrupted one's (issue 36 items 2 and 3).
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from returns.result import Success
from web_chat_server import ExampleProcess, free_port, load_example

from golem_core import Message, history_from_jsonable
from golem_shell import SQLiteHistoryStore
from golem_shell.store import StreamLog, StreamRecord

pytest.importorskip("dbos")


def _prompt(cid: str, text: str) -> dict[str, object]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": cid, "branch": "main", "messages": [user]}


def _events(response: httpx.Response) -> Iterator[tuple[int, str]]:
    """The SSE events of a response as ``(id, data)``."""
    n, data = 0, ""
    for line in response.iter_lines():
        if line.startswith("id: "):
            n = int(line[4:])
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and data:
            yield n, data
            data = ""


def _shape(messages: tuple[Message, ...]) -> list[tuple[str, str, list[str]]]:
    return [
        (m.role.value, m.text, [f"{c.name}({c.arguments})" for c in m.tool_calls]) for m in messages
    ]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[tuple[ExampleProcess, ExampleProcess]]:
    db = tmp_path / "chat.db"
    a = ExampleProcess(db, free_port(), "a", delay=0.01).start(wait=False)
    b = ExampleProcess(db, free_port(), "b", delay=0.01).start(wait=False)
    a.wait(), b.wait()
    yield a, b
    for p in (a, b):
        p.stop()


def test_a_turn_survives_sigkill_of_its_server_and_finishes_through_another(
    deployment: tuple[ExampleProcess, ExampleProcess], tmp_path: Path
) -> None:
    a, b = deployment
    client = httpx.Client(timeout=60)
    client.get(a.url + "/")  # the uid cookie: the same owner on both processes
    cookies = dict(client.cookies)
    uid = cookies["uid"]

    # an uninterrupted turn, on B, for comparison
    with client.stream("POST", b.url + "/api/chat", json=_prompt("calm", "long")) as r:
        assert r.status_code == 200
        calm = [data for _, data in _events(r)]
    assert calm[-1] == "[DONE]"

    seen: list[tuple[int, str]] = []
    with client.stream("POST", a.url + "/api/chat", json=_prompt("crash", "long")) as r:
        assert r.status_code == 200
        for n, data in _events(r):
            seen.append((n, data))
            if sum('"text-delta"' in d for _, d in seen) == 8:
                a.kill()  # mid-answer, mid-request: the model step is not recorded
                break
    last = seen[-1][0]

    # B has the stream (it is in the store), still open: the run is A's, not over
    with client.stream("GET", b.url + "/api/chat/crash/stream") as r:
        assert r.status_code == 200  # (the client leaves at once)
    a.start()  # A comes back: DBOS resumes the workflow, the tap writes the rest

    headers = {"Last-Event-ID": str(last)}
    with client.stream("GET", b.url + "/api/chat/crash/stream", headers=headers) as r:
        assert r.status_code == 200
        seen += list(_events(r))

    numbers = [n for n, _ in seen]
    assert numbers == list(range(1, len(seen) + 1))  # every frame once, no gap
    chunks = [json.loads(d) for _, d in seen[:-1]]
    assert seen[-1][1] == "[DONE]" and chunks[-1]["type"] == "finish"
    words = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert words == load_example().LONG_ANSWER  # each word once, none lost
    assert [c["type"] for c in chunks].count("start") == 1

    # nothing is left in flight: a resume is 204, on either process
    assert client.get(b.url + "/api/chat/crash/stream").status_code == 204
    assert client.get(a.url + "/api/chat/crash/stream").status_code == 204

    store = SQLiteHistoryStore(tmp_path / "chat.db")
    try:
        crashed = store.load_sync(uid, "crash")
        uninterrupted = store.load_sync(uid, "calm")
    finally:
        store.close()
    assert _shape(crashed) == _shape(uninterrupted)
    assert len(crashed) == 2  # one turn: the prompt and one answer
    assert crashed[-1].text == load_example().LONG_ANSWER

    # the conversation view on A (restarted) shows the turn once, not live
    view = client.get(a.url + "/api/conversations/crash").json()
    assert view["live"] is False and [m["role"] for m in view["messages"]] == [
        "user",
        "assistant",
    ]


def _frames(db: Path, key: str, *, timeout: float = 60) -> tuple[StreamRecord, list[str]]:
    """The newest stream of ``key`` once it has ended, and its frames' data."""

    async def read() -> tuple[StreamRecord, list[str]]:
        store = SQLiteHistoryStore(db)
        try:
            log = StreamLog(store)
            deadline = time.monotonic() + timeout
            while True:
                record = await log.latest(key)
                assert record is not None
                if not record.open:
                    frames, _ = await log.read(record.stream, 0)
                    return record, [data for _, data in frames]
                assert time.monotonic() < deadline, f"stream {key!r} still open"
                await asyncio.sleep(0.1)
        finally:
            await store.aclose()

    return asyncio.run(read())


def _dying_and_other(tmp_path: Path, crash: str) -> tuple[Path, ExampleProcess, ExampleProcess]:
    """Process ``a`` serving (dying at ``crash``), ``b`` on the same store, not started."""
    db = tmp_path / "chat.db"
    a = ExampleProcess(db, free_port(), "a", delay=0.01, crash=crash).start()
    return db, a, ExampleProcess(db, free_port(), "b", delay=0.01)


def _user(process: ExampleProcess) -> tuple[httpx.Client, str]:
    """A client holding the uid cookie ``process`` set, and the uid."""
    client = httpx.Client(timeout=60)
    client.get(process.url + "/")
    return client, client.cookies["uid"]


def _recovered(
    db: Path, a: ExampleProcess, b: ExampleProcess, key: str
) -> tuple[StreamRecord, list[dict[str, Any]], str]:
    """Start ``a`` (its crash point off) and ``b`` at once, both recovering the open stream
    of ``key``; the stream once ended: its record, its chunks, the text it said. It must
    end done, with one ``start`` and one ``finish``, and ``[DONE]``."""
    a.crash = None
    a.start(wait=False), b.start(wait=False)  # both recover the open stream at once
    a.wait(), b.wait()
    record, frames = _frames(db, key)
    assert record.state == "done"
    chunks = [json.loads(d) for d in frames[:-1]]
    assert frames[-1] == "[DONE]" and chunks[-1]["type"] == "finish"
    assert [c["type"] for c in chunks].count("start") == 1
    assert [c["type"] for c in chunks].count("finish") == 1
    return record, chunks, "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def _stored(db: Path, uid: str, cid: str) -> tuple[Message, ...]:
    store = SQLiteHistoryStore(db)
    try:
        return store.load_sync(uid, cid)
    finally:
        store.close()


def test_a_durable_turn_whose_workflow_never_started_is_started_once_by_recovery(
    tmp_path: Path,
) -> None:
    """The process dies after storing the prompt and opening the stream, before starting
    the workflow (issue 50): both processes, starting, recover the turn; it runs once
    under its run id and the stream ends with its answer."""
    db, a, b = _dying_and_other(tmp_path, "durable-start")
    try:
        client, uid = _user(a)
        with pytest.raises(httpx.HTTPError):  # the process died before it answered
            client.post(a.url + "/api/chat", json=_prompt("lost", "hello there"))
        assert a.process.wait(30) == -signal.SIGKILL

        record, _, said = _recovered(db, a, b, f"{uid}/lost/main")
        assert said.startswith("You said: hello there")
        assert client.get(b.url + "/api/chat/lost/stream").status_code == 204

        stored = _stored(db, uid, "lost")
        assert [m.role.value for m in stored] == ["user", "assistant"]  # answered once
        assert stored[-1].text == said and stored[-1].run_id == record.run_id
    finally:
        for p in (a, b):
            p.stop()


def _paused_payment(client: httpx.Client, process: ExampleProcess) -> dict[str, Any]:
    """Ask ``process`` to "pay bob 7" in conversation ``pay``: the durable turn pauses for
    the approval (a reload shows its request once); the body that approves it."""
    with client.stream("POST", process.url + "/api/chat", json=_prompt("pay", "pay bob 7")) as r:
        assert r.status_code == 200
        asked = [json.loads(d) for _, d in _events(r) if d != "[DONE]"]
    started = next(c for c in asked if c["type"] == "start")
    ask = next(c for c in asked if c["type"] == "tool-approval-request")
    view = client.get(process.url + "/api/conversations/pay").json()
    assert [c["type"] for c in view["paused"]].count("tool-approval-request") == 1
    part = {
        "type": "tool-send_money",
        "toolCallId": ask["toolCallId"],
        "state": "approval-responded",
        "input": {"to": "bob", "cents": 7},
        "approval": {"id": ask["approvalId"], "approved": True},
    }
    approval = {"id": started["messageId"], "role": "assistant", "parts": [part]}
    return {"id": "pay", "branch": "main", "messages": [*view["messages"], approval]}


def _paid_once(db: Path, uid: str, said: str) -> None:
    """The conversation ``pay`` holds the transfer made once, then the answer ``said``."""
    stored = _stored(db, uid, "pay")
    assert [m.role.value for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[2].text == "sent 7 cents to bob"  # the transfer, made once
    assert stored[-1].text == said


def test_approvals_taken_by_a_process_that_died_before_sending_them_still_reach_the_run(
    tmp_path: Path,
) -> None:
    """A durable turn pauses for an approval; the client approves; the process that took
    the approval (its answering stream open) dies before the approval reaches the run
    (issue 50, found by the soak on Temporal: the stream stayed open with no frame, the
    run paused for ever, the transfer never made). Recovery sends the approval again from
    the stream's record: the transfer is made once, the stream ends with the answer."""
    db, a, b = _dying_and_other(tmp_path, "durable-answer")
    try:
        client, uid = _user(a)
        body = _paused_payment(client, a)
        with pytest.raises(httpx.HTTPError):  # the process died while sending the approval
            client.post(a.url + "/api/chat", json=body)
        assert a.process.wait(30) == -signal.SIGKILL

        _, _, said = _recovered(db, a, b, f"{uid}/pay/main")  # the answering stream
        assert said == "The send_money tool says: sent 7 cents to bob."
        _paid_once(db, uid, said)
    finally:
        for p in (a, b):
            p.stop()


def test_an_answer_the_run_refuses_leaves_the_turn_paused_and_answerable(tmp_path: Path) -> None:
    """A durable turn pauses for an approval; the run refuses the first answer (it comes
    bound to a pause that is over, as a stale retry: the ``stale-answer`` hook; nothing is
    applied). The client is told (400), a reload shows the approval request again, and the
    next answer is taken: the turn's run (the same run id) goes on, the transfer is made
    once. (The answering stream of the refused answer used to end abandoned as the newest
    stream of the conversation: the pause was lost, the next answer found no paused run.)"""
    db = tmp_path / "chat.db"
    a = ExampleProcess(db, free_port(), "a", delay=0.01, crash="stale-answer").start()
    try:
        client, uid = _user(a)
        body = _paused_payment(client, a)
        paused, _ = _frames(db, f"{uid}/pay/main")
        assert paused.state == "paused"

        refused = client.post(a.url + "/api/chat", json=body)
        assert refused.status_code == 400, refused.text
        assert "a repeated or stale answer is not applied" in refused.json()["error"]
        view = client.get(a.url + "/api/conversations/pay").json()
        assert [c["type"] for c in view["paused"]].count("tool-approval-request") == 1

        with client.stream("POST", a.url + "/api/chat", json=body) as r:
            assert r.status_code == 200
            chunks = [json.loads(d) for _, d in _events(r) if d != "[DONE]"]
        assert chunks[-1]["type"] == "finish"
        said = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
        assert said == "The send_money tool says: sent 7 cents to bob."
        record, _ = _frames(db, f"{uid}/pay/main")
        assert (record.state, record.run_id) == ("done", paused.run_id)
        _paid_once(db, uid, said)
    finally:
        a.stop()


def test_a_stored_plain_turn_whose_process_died_before_finish_resumes_at_once(
    tmp_path: Path,
) -> None:
    """A plain turn's run is stored, then its process dies before the stream's ``finish``
    (issue 50): a resume through another process ends with what the store holds, not
    after the 30 s a silent writer takes to go stale."""
    db = tmp_path / "chat.db"
    a = ExampleProcess(db, free_port(), "a", delay=0.01, durable=False, crash="plain-stored")
    b = ExampleProcess(db, free_port(), "b", delay=0.01, durable=False)
    a.start(wait=False), b.start(wait=False)
    try:
        a.wait(), b.wait()
        client = httpx.Client(timeout=60)
        client.get(a.url + "/")
        uid = client.cookies["uid"]
        seen: list[tuple[int, str]] = []
        with (
            pytest.raises(httpx.HTTPError),  # cut: the process died
            client.stream("POST", a.url + "/api/chat", json=_prompt("cut", "weather in Oslo")) as r,
        ):
            seen += _events(r)
        assert a.process.wait(30) == -signal.SIGKILL
        store = SQLiteHistoryStore(db)
        try:
            stored = store.load_sync(uid, "cut")
        finally:
            store.close()
        assert [m.role.value for m in stored] == ["user", "assistant", "tool", "assistant"]
        assert '"type":"finish"' not in "".join(data for _, data in seen)

        # the stream is open and its writer silent; the limit is 30 s, this is far less
        began = time.monotonic()
        after = {"Last-Event-ID": str(seen[-1][0])} if seen else {}
        with client.stream("GET", b.url + "/api/chat/cut/stream", headers=after) as r:
            assert r.status_code == 200
            rest = list(_events(r))
        assert time.monotonic() - began < 10
        frames = [*seen, *rest]
        assert [n for n, _ in frames] == list(range(1, len(frames) + 1))
        assert frames[-1][1] == "[DONE]"
        chunks = [json.loads(d) for _, d in frames[:-1]]
        types = [c["type"] for c in chunks]
        assert types.count("finish") == 1 and types[-2:] == ["finish-step", "finish"]
        opened = {c["id"] for c in chunks if c["type"] == "text-start"}
        assert opened == {c["id"] for c in chunks if c["type"] == "text-end"}  # all closed
        decoded = history_from_jsonable(chunks[-1]["messageMetadata"]["golem"]["messages"])
        assert isinstance(decoded, Success)
        turn = decoded.unwrap()
        assert turn == stored[1:]  # the stored answer, as an uninterrupted finish has it

        record, _ = _frames(db, f"{uid}/cut/main")
        assert record.state == "done"  # ended for every reader: a new turn may start
        assert client.get(b.url + "/api/chat/cut/stream").status_code == 204
    finally:
        for p in (a, b):
            p.stop()


def test_a_durable_turn_finishes_although_the_infrastructure_fails_on_the_way(
    tmp_path: Path,
) -> None:
    """Issue 50 A: the task that finishes a durable turn met a failure of the database or
    of the engine (``result``, ``waiting``, the stream's closing write) and died ("Task
    exception was never retrieved"): the stream stayed open until the server restarted,
    or ended failed although the run succeeded. Each fails once here: the turn still
    ends with its answer, stored once."""
    db = tmp_path / "chat.db"
    a = ExampleProcess(db, free_port(), "a", delay=0.02, crash="flaky-finish").start()
    try:
        client = httpx.Client(timeout=60)
        client.get(a.url + "/")
        uid = client.cookies["uid"]
        with client.stream("POST", a.url + "/api/chat", json=_prompt("flaky", "long")) as r:
            assert r.status_code == 200
            began = time.monotonic()
            seen = list(_events(r))
        assert time.monotonic() - began < 30
        record, frames = _frames(db, f"{uid}/flaky/main", timeout=5)
        assert record.state == "done"
        assert [d for _, d in seen] == frames  # the client saw the whole stream
        chunks = [json.loads(d) for d in frames[:-1]]
        types = [c["type"] for c in chunks]
        assert frames[-1] == "[DONE]" and types[-1] == "finish" and "error" not in types
        said = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
        assert said == load_example().LONG_ANSWER
        faults = (tmp_path / "faults").read_text().split()
        assert sorted(faults) == ["result", "waiting", "write"]  # each failed once

        store = SQLiteHistoryStore(db)
        try:
            stored = store.load_sync(uid, "flaky")
        finally:
            store.close()
        assert [m.role.value for m in stored] == ["user", "assistant"]
        assert stored[-1].text == said
    finally:
        a.stop()


def test_a_steering_message_acknowledged_by_a_plain_turn_that_died_is_stored_once(
    tmp_path: Path,
) -> None:
    """Issue 50 B: a plain turn answered a steering message 202 while holding it only in
    its run's memory; its process died before the run took it: the message was never
    stored. It is recorded in the turn's stream before the 202 now: once the turn's
    writer is known dead, whoever looks at the conversation stores it (once), and the
    next turn answers it."""
    db = tmp_path / "chat.db"
    a = ExampleProcess(db, free_port(), "a", delay=0.01, durable=False, crash="after-steer-202")
    b = ExampleProcess(db, free_port(), "b", delay=0.01, durable=False)
    a.start(wait=False), b.start(wait=False)
    try:
        a.wait(), b.wait()
        client = httpx.Client(timeout=60)
        client.get(a.url + "/")
        uid = client.cookies["uid"]
        prompt = _prompt("steer", "weather in Oslo")
        steer = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "and Paris?"}]}
        with (
            pytest.raises(httpx.HTTPError),  # cut: the process died
            client.stream("POST", a.url + "/api/chat", json=prompt) as r,
        ):
            for _, data in _events(r):
                if '"tool-input-available"' in data:  # get_weather runs (for a minute)
                    body = {**prompt, "messages": [*prompt["messages"], steer]}
                    sent = client.post(a.url + "/api/chat", json=body)
                    assert sent.status_code == 202 and sent.json()["steered"] is True
        assert a.process.wait(30) == -signal.SIGKILL

        # its writer is dead: what the stream log does to a silent writer after its limit
        # (30 s), done at once here
        async def abandon() -> None:
            store = SQLiteHistoryStore(db)
            try:
                log = StreamLog(store)
                latest = await log.latest(f"{uid}/steer/main")
                assert latest is not None and latest.open
                await log.end(latest.stream, "abandoned")
            finally:
                await store.aclose()

        asyncio.run(abandon())

        def stored() -> list[tuple[str, str]]:
            store = SQLiteHistoryStore(db)
            try:
                return [(m.role.value, m.text) for m in store.load_sync(uid, "steer")]
            finally:
                store.close()

        view = client.get(b.url + "/api/conversations/steer").json()  # B finds it dead
        assert [m["role"] for m in view["messages"]] == ["user", "user"]
        assert stored() == [("user", "weather in Oslo"), ("user", "and Paris?")]
        client.get(b.url + "/api/conversations/steer")  # again: nothing more stored
        assert stored() == [("user", "weather in Oslo"), ("user", "and Paris?")]

        # the next turn answers it (the client's list is the conversation as stored)
        nxt = {"id": "u3", "role": "user", "parts": [{"type": "text", "text": "thanks"}]}
        body = {**prompt, "messages": [*prompt["messages"], steer, nxt]}
        with client.stream("POST", b.url + "/api/chat", json=body) as r:
            assert r.status_code == 200
            frames = [data for _, data in _events(r)]
        assert frames[-1] == "[DONE]"
        turn = stored()
        assert turn[:3] == [("user", "weather in Oslo"), ("user", "and Paris?"), ("user", "thanks")]
        assert turn[-1][0] == "assistant" and [t for _, t in turn].count("and Paris?") == 1
    finally:
        for p in (a, b):
            p.stop()
