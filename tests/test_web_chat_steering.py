"""Steering in the web chat (issue 36 items 1 and 5, ADR 0094): a message sent while a turn
streams joins its run; one that comes too late starts the turn's next run or the next
turn; never lost. Over HTTP against the example (uvicorn on 127.0.0.1, offline model,
a ``get_weather`` the test holds), and the adapters' steering events."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from js_node import PACKAGES, Sdk, run_sdk, sdk_or_skip
from web_chat_server import (
    ExampleProcess,
    ToolGate,
    WebChatServer,
    cookie_client,
    free_port,
    gate_weather,
    web_chat_fixture,
)

from golem_core import Message, Role, ToolCallPart, check_pairing
from golem_shell import Agent, FunctionModel, SQLiteHistoryStore, Steering, UsageError
from golem_shell.ui import (
    AGUIStream,
    Steered,
    TurnSteering,
    VercelStream,
    run_items,
    vercel_frames,
)

server = web_chat_fixture(delay=0.005)


def _user(text: str) -> dict[str, Any]:
    return {"id": "client-" + text[:8], "role": "user", "parts": [{"type": "text", "text": text}]}


def _chunks(response: httpx.Response) -> list[dict[str, Any]]:
    out = []
    for line in response.iter_lines():
        if line.startswith("data: ") and line[6:] != "[DONE]":
            out.append(json.loads(line[6:]))
    return out


def _stored(server: WebChatServer, client: httpx.Client, cid: str) -> tuple[Message, ...]:
    with SQLiteHistoryStore(server.db) as store:
        return store.load_sync(client.cookies["uid"], cid)


class _Turn:
    """A turn streamed in a thread of its own (the test sends while it runs); ``live``:
    ``chunks`` grows as they come."""

    def __init__(
        self, client: httpx.Client, cid: str, messages: list[Any], *, live: bool = False
    ) -> None:
        self.chunks: list[dict[str, Any]] = []
        self.status = 0

        def read() -> None:
            with client.stream("POST", "/api/chat", json={"id": cid, "messages": messages}) as r:
                self.status = r.status_code
                if not live:
                    self.chunks = _chunks(r)
                    return
                for line in r.iter_lines():
                    if line.startswith("data: ") and line[6:] != "[DONE]":
                        self.chunks.append(json.loads(line[6:]))

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()

    def join(self) -> list[dict[str, Any]]:
        self.thread.join(60)
        assert not self.thread.is_alive() and self.status == 200
        return self.chunks


def _held_turn(
    server: WebChatServer, text: str
) -> tuple[ToolGate, httpx.Client, str, dict[str, Any], _Turn]:
    """A turn of ``text`` sent over HTTP in a new conversation, once its ``get_weather`` has
    started and is held: the gate, the client, the conversation's id, the message, the turn."""
    gate = gate_weather(server)
    client = cookie_client(server, timeout=60)
    cid = client.post("/api/conversations").json()["id"]
    first = _user(text)
    turn = _Turn(client, cid, [first])
    assert gate.started.wait(30)
    return gate, client, cid, first, turn


def test_a_message_sent_while_a_tool_runs_steers_the_turn(server: WebChatServer) -> None:
    gate, client, cid, first, turn = _held_turn(server, "weather in Oslo")
    # what a page sends: its list (the prompt, the turn so far as it shows it) and the message
    shown = {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "Let me"}]}
    steer = client.post(
        "/api/chat", json={"id": cid, "messages": [first, shown, _user("actually, Paris")]}
    )
    assert steer.status_code == 202
    assert steer.json() == {"steered": True, "id": cid, "branch": "main"}
    gate.release.set()
    chunks = turn.join()

    history = _stored(server, client, cid)
    roles = [m.role for m in history]
    assert roles == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER, Role.ASSISTANT]
    assert history[3].text == "actually, Paris"  # between the tool result and the answer
    # stamped by the run that took it (the core stamps no created_at on it yet: reported)
    assert history[3].run_id == history[4].run_id is not None
    assert history[3].conversation_id == cid
    assert history[4].text.startswith("You said: actually, Paris")
    assert [m.text for m in history].count("actually, Paris") == 1  # stored once
    assert check_pairing(history) == ()
    assert gate.calls == 1  # one run: the tool ran once
    # the stream reports it where it joined: after the step with the tool, before the next
    types = [c["type"] for c in chunks]
    at = types.index("data-steered")
    assert types[at - 1] == "finish-step" and types[at + 1] == "start-step"
    assert chunks[at]["data"]["messages"] == [
        {"role": "user", "parts": [{"type": "text", "text": "actually, Paris"}]}
    ]
    assert types.count("start") == 1 and types.count("finish") == 1  # one turn
    # the page's reload shows it in order
    view = client.get(f"/api/conversations/{cid}").json()
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "user", "assistant"]


def test_a_message_after_the_turn_starts_the_next_turn(server: WebChatServer) -> None:
    client = cookie_client(server, timeout=60)
    cid = client.post("/api/conversations").json()["id"]
    with client.stream("POST", "/api/chat", json={"id": cid, "messages": [_user("hi")]}) as r:
        _chunks(r)
    view = client.get(f"/api/conversations/{cid}").json()
    with client.stream(
        "POST", "/api/chat", json={"id": cid, "messages": [*view["messages"], _user("again")]}
    ) as r:
        assert r.status_code == 200  # no turn streams: a new turn, not a steer
        assert [c["type"] for c in _chunks(r)].count("data-steered") == 0
    assert [m.text for m in _stored(server, client, cid) if m.role is Role.USER] == ["hi", "again"]


def test_a_message_after_the_runs_last_look_starts_the_turns_next_run(
    server: WebChatServer,
) -> None:
    """The run has ended (its messages are being stored) but the stream is still open: the
    message is kept, stored after the run's, and the turn's next run answers it."""
    client = cookie_client(server, timeout=60)
    cid = client.post("/api/conversations").json()["id"]
    chat = server.chat
    storing, go_on = threading.Event(), threading.Event()
    append = chat.store.append

    async def slow_append(*args: Any, **kwargs: Any) -> Any:
        if args[3] > 0 and not go_on.is_set():  # the run's messages, not the prompt
            storing.set()
            await asyncio.to_thread(go_on.wait, 30)
        return await append(*args, **kwargs)

    chat.store.append = slow_append
    first = _user("hello")
    turn = _Turn(client, cid, [first])
    assert storing.wait(30)
    late = client.post("/api/chat", json={"id": cid, "messages": [first, _user("and more")]})
    assert late.status_code == 202
    go_on.set()
    chunks = turn.join()
    texts = [m.text for m in _stored(server, client, cid)]
    assert texts[2] == "and more" and texts[3].startswith("You said: and more")
    types = [c["type"] for c in chunks]
    assert types.count("data-steered") == 1 and types.count("start") == 2  # one stream


def test_a_steer_that_fits_no_conversation_is_refused(server: WebChatServer) -> None:
    gate, client, cid, _, turn = _held_turn(server, "weather in Rome")
    wrong = client.post(
        "/api/chat",
        json={"id": cid, "branch": "main", "messages": [_user("other"), _user("x")]},
    )
    assert wrong.status_code == 409 and "reload" in wrong.json()["error"]
    gate.release.set()
    turn.join()


def test_a_turn_this_process_cannot_steer_answers_409(server: WebChatServer) -> None:
    """A turn another server process writes (or a durable one) has no steering here: the
    message is refused, as before, never taken and dropped."""
    gate, client, cid, first, turn = _held_turn(server, "weather in Rome")
    server.chat.runs._steerings.clear()  # as a reader in another process sees the stream
    refused = client.post("/api/chat", json={"id": cid, "messages": [first, _user("x")]})
    assert refused.status_code == 409 and "takes no steering" in refused.json()["error"]
    gate.release.set()
    turn.join()
    assert "x" not in [m.text for m in _stored(server, client, cid)]


# -- the adapters: where a steering message joined ---------------------------------------


def _steered_run() -> tuple[Any, Steering]:
    steering = Steering()

    def answer(request: Any) -> Message | str:
        if not any(m.role is Role.TOOL for m in request.messages):
            return Message(Role.ASSISTANT, (ToolCallPart("c1", "charge", "{}"),))
        return "noted: " + request.messages[-1].text

    async def charge() -> str:
        """Charge."""
        steering.send("use the EU account")
        return "charged"

    agent = Agent(FunctionModel(answer), tools=[charge])

    def start(on_delta: Any, on_event: Any) -> Any:
        return agent.run_stream("charge me", on_event=on_event, steering=steering)

    return start, steering


@pytest.mark.anyio
async def test_the_vercel_stream_reports_steering_between_two_steps() -> None:
    start, steering = _steered_run()
    stream = VercelStream("m0")
    items = [i async for i in run_items(start, steering=steering)]
    assert [i.messages[0].text for i in items if isinstance(i, Steered)] == ["use the EU account"]
    chunks = [c for i in items for c in stream.item(i)]
    types = [c["type"] for c in chunks]
    at = types.index("data-steered")
    assert types[at - 1] == "finish-step" and types[at + 1] == "start-step"
    assert chunks[at]["data"]["request"] == 2 and chunks[at]["transient"] is True


@pytest.mark.anyio
async def test_agui_reports_steering_as_a_user_text_message() -> None:
    start, steering = _steered_run()
    stream = AGUIStream("t", "r")
    events = [
        e for i in [i async for i in run_items(start, steering=steering)] for e in stream.item(i)
    ]
    kinds = [(e.type.value, getattr(e, "role", None), getattr(e, "delta", None)) for e in events]
    at = kinds.index(("TEXT_MESSAGE_START", "user", None))
    assert kinds[at + 1] == ("TEXT_MESSAGE_CONTENT", None, "use the EU account")
    assert kinds[at + 2][0] == "TEXT_MESSAGE_END"
    assert kinds.index(("TOOL_CALL_RESULT", "tool", None)) < at  # after the tool's result
    snapshot = next(e for e in events if e.type.value == "MESSAGES_SNAPSHOT")
    assert [m.role for m in snapshot.messages] == ["user", "assistant", "tool", "user", "assistant"]


def test_turn_steering_hands_late_messages_on_and_then_closes() -> None:
    turn = TurnSteering()
    steering = turn.run()
    assert turn.send(Message.user("a"))  # taken by the run (pending until its next look)
    assert steering.left[0].text == "a"
    steering._end()  # the run ended without another look
    assert turn.send(Message.user("b"))  # too late for the run: the turn's next run
    assert [m.text for m in turn.late()] == ["a", "b"]
    assert turn.send(Message.user("c"))  # between two runs: the next run takes it
    assert [m.text for m in turn.run().left] == ["c"]
    with pytest.raises(UsageError, match="user message"):
        turn.send(Message.assistant("x"))
    turn.run()._end()
    assert turn.late() == () and turn.closed
    assert not turn.send(Message.user("d"))  # closed: the caller starts a new turn


@pytest.mark.anyio
@pytest.mark.parametrize("sdk", [5, 6, 7])
async def test_the_ai_package_reads_a_steered_stream(sdk: Sdk) -> None:
    """The real ``ai`` package (tests/js; 7 under Node 22) reads the stream:
    ``data-steered`` is one of its own data chunks, and the UIMessage it builds is valid."""
    sdk_or_skip(sdk)
    start, steering = _steered_run()
    stream = VercelStream("m0", sdk_version=5 if sdk == 5 else 6)  # 6 and 7 read one stream
    frames = [f async for f in vercel_frames(stream, run_items(start, steering=steering))]
    assert any('"data-steered"' in f for f in frames)
    result = run_sdk(
        sdk,
        "check_streams.mjs",
        stdin={"streams": [{"name": "steered", "sdk": sdk, "frames": frames}]},
    )
    [checked] = result["streams"]
    assert checked["invalid"] == [] and checked["errors"] == [], checked
    assert checked["messageInvalid"] is None, checked
    texts = [p.get("text") for p in checked["message"]["parts"] if p["type"] == "text"]
    assert texts == ["noted: use the EU account"]  # transient: not a part of the message


@pytest.mark.parametrize("sdk", [6, 7])
def test_use_chat_sending_while_it_streams_steers_the_turn(server: WebChatServer, sdk: Sdk) -> None:
    """useChat's engine (AbstractChat, ai 6 and 7) sends a second message while the answer
    streams: the server steers the turn (202, an empty body to the transport), the first
    request's stream carries the rest of the turn and ``data-steered``."""
    sdk_or_skip(sdk)
    gate = gate_weather(server)
    chat = server.chat
    delivered = threading.Event()
    steer = chat.steer

    async def steer_and_tell(*args: Any) -> Any:
        response = await steer(*args)
        if response is not None and response.status_code == 202:
            delivered.set()
        return response

    chat.steer = steer_and_tell
    box: list[Any] = []
    node = threading.Thread(
        target=lambda: box.append(run_sdk(sdk, "steer_client.mjs", server.url, PACKAGES[sdk]))
    )
    node.start()
    assert delivered.wait(60)
    gate.release.set()
    node.join(90)
    [result] = box
    assert result["errors"] == [] and result["error"] is None, result
    assert result["statusWhenSent"] == "streaming"
    posts = [r["status"] for r in result["requests"] if r["method"] == "POST"]
    assert posts == [200, 202, 200]  # the turn, the steer, and the next turn
    # the steering message is recorded in the turn's stream before the 202 (a transient
    # data-steering-pending chunk, kept by whoever finds the turn's writer dead), then
    # data-steered where the run took it
    assert [d["type"] for d in result["data"]] == [
        "data-conversation",
        "data-steering-pending",
        "data-steered",
        "data-conversation",
    ]
    # useChat holds the turn in one message and the steering message after it (the AI SDK
    # has no steering chunk); the server reads that list as this conversation's
    assert [m["role"] for m in result["turn"]] == ["user", "assistant", "user"]
    client = httpx.Client(base_url=server.url, cookies={"uid": result["uid"]}, timeout=30)
    history = _stored(server, client, result["id"])
    assert [m.text for m in history if m.role is Role.USER] == [
        "weather in Oslo",
        "actually, use Paris",
        "thanks",
    ]
    assert history[4].text.startswith("You said: actually, use Paris")
    assert history[-1].text.startswith("You said: thanks")


# -- durable turns (--durable): steered through DBOS, from any server process ----------------


@pytest.fixture
def durable_pair(tmp_path: Path) -> Iterator[tuple[ExampleProcess, ExampleProcess]]:
    """Two ``--durable`` server processes on one store: A's turns are held after their
    run's last look until the file ``release`` exists (``hold-last-look``), B is plain."""
    pytest.importorskip("dbos")
    db = tmp_path / "chat.db"
    a = ExampleProcess(db, free_port(), "a", delay=0.02, crash="hold-last-look")
    b = ExampleProcess(db, free_port(), "b", delay=0.02)
    a.start(wait=False), b.start(wait=False)
    try:
        a.wait(), b.wait()
        yield a, b
    finally:
        for p in (a, b):
            p.stop()


def _durable_turn(
    a: ExampleProcess, text: str, *, deltas: int
) -> tuple[httpx.Client, str, dict[str, Any], _Turn]:
    client = httpx.Client(base_url=a.url, timeout=60)
    client.get("/")
    cid = client.post("/api/conversations").json()["id"]
    first = _user(text)
    turn = _Turn(client, cid, [first], live=True)
    while sum(c["type"] == "text-delta" for c in list(turn.chunks)) < deltas:
        assert turn.thread.is_alive(), turn.chunks
        time.sleep(0.02)
    return client, cid, first, turn


def _stored_at(process: ExampleProcess, client: httpx.Client, cid: str) -> tuple[Message, ...]:
    with SQLiteHistoryStore(process.db) as store:
        return store.load_sync(client.cookies["uid"], cid)


def test_a_durable_turn_takes_a_message_sent_to_another_process(
    durable_pair: tuple[ExampleProcess, ExampleProcess],
) -> None:
    """The turn streams from A; the message goes to B, which does not hold the stream:
    202, the run takes it before it takes its answer, A's stream says so."""
    a, b = durable_pair
    (a.db.parent / "release").touch()  # no hold: the run's own look takes the message
    client, cid, first, turn = _durable_turn(a, "a long answer please", deltas=3)
    steer = httpx.post(
        b.url + "/api/chat",
        cookies=dict(client.cookies),
        json={"id": cid, "messages": [first, _user("actually, Paris")]},
        timeout=60,
    )
    assert steer.status_code == 202, steer.text
    assert steer.json() == {"steered": True, "id": cid, "branch": "main"}
    chunks = turn.join()
    types = [c["type"] for c in chunks]
    assert types.count("start") == 1 and types.count("finish") == 1  # one turn, one run
    at = types.index("data-steered")
    assert chunks[at]["data"]["messages"] == [
        {"role": "user", "parts": [{"type": "text", "text": "actually, Paris"}]}
    ]
    assert types[at + 1] == "start-step"
    history = _stored_at(a, client, cid)
    users = [m for m in history if m.role is Role.USER]
    assert [m.text for m in users] == ["a long answer please", "actually, Paris"]
    assert users[1].run_id == history[-1].run_id is not None  # taken by the run
    assert history[-1].text.startswith("You said: actually, Paris")
    assert check_pairing(history) == ()


def test_a_message_after_a_durable_runs_last_look_is_answered_by_its_next_run(
    durable_pair: tuple[ExampleProcess, ExampleProcess],
) -> None:
    """Sent (to B) after the run's last look: the run gives it back (``steering_left``),
    the turn stores it after the run's messages and its next run answers it, in A's
    stream: ``finish``, ``data-steered``, ``start``, the answer."""
    a, b = durable_pair
    client, cid, first, turn = _durable_turn(a, "hello", deltas=1)
    while not (a.db.parent / "held").exists():  # the run has looked for the last time
        time.sleep(0.02)
    steer = httpx.post(
        b.url + "/api/chat",
        cookies=dict(client.cookies),
        json={"id": cid, "messages": [first, _user("and more")]},
        timeout=60,
    )
    assert steer.status_code == 202, steer.text
    (a.db.parent / "release").touch()
    chunks = turn.join()
    types = [c["type"] for c in chunks]
    assert types.count("start") == 2 and types.count("finish") == 2  # two runs, one stream
    at = types.index("data-steered")
    assert types[at - 1] == "finish" and types[at + 1] == "start"
    said = [c["delta"] for c in chunks[at:] if c["type"] == "text-delta"]
    assert "".join(said).startswith("You said: and more")
    history = _stored_at(a, client, cid)
    assert [m.role for m in history] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    assert history[1].text.startswith("You said: hello")
    assert history[2].text == "and more" and history[3].text.startswith("You said: and more")
    assert check_pairing(history) == ()
    # the page's reload shows it in order, the stream ended
    view = client.get(f"/api/conversations/{cid}").json()
    assert view["live"] is False
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "user", "assistant"]


@pytest.mark.parametrize("sdk", [6, 7])
def test_use_chat_steers_a_durable_turn_through_the_other_process(
    durable_pair: tuple[ExampleProcess, ExampleProcess], sdk: Sdk
) -> None:
    """useChat's engine (ai 6 and 7) against two ``--durable`` processes: the turn streams
    from A, the message sent meanwhile goes to B (202: an empty body to the transport), A's
    stream carries the rest of the turn and ``data-steered``; the next message (to A again)
    continues the conversation from the list useChat holds."""
    sdk_or_skip(sdk)
    a, b = durable_pair
    (a.db.parent / "release").touch()
    result = run_sdk(sdk, "steer_client.mjs", a.url, PACKAGES[sdk], b.url, timeout=120)
    assert result["errors"] == [] and result["error"] is None, result
    assert result["statusWhenSent"] == "streaming"
    posts = [(r["status"], r["server"]) for r in result["requests"] if r["method"] == "POST"]
    assert posts == [(200, 0), (202, 1), (200, 0)]  # the turn (A), the steer (B), the next (A)
    kinds = [d["type"] for d in result["data"]]
    assert kinds.count("data-steered") == 1
    # the run took it, or (after its last look) its next run answered it in the same stream
    assert kinds in (
        ["data-conversation", "data-steered", "data-conversation"],
        ["data-conversation", "data-steered", "data-conversation", "data-conversation"],
    )
    client = httpx.Client(base_url=a.url, cookies={"uid": result["uid"]}, timeout=30)
    history = _stored_at(a, client, result["id"])
    assert [m.text for m in history if m.role is Role.USER] == [
        "weather in Oslo",
        "actually, use Paris",
        "thanks",
    ]
    answers = [m.text for m in history if m.role is Role.ASSISTANT and m.text]
    assert any(t.startswith("You said: actually, use Paris") for t in answers)
    assert history[-1].text.startswith("You said: thanks")
    assert check_pairing(history) == ()
