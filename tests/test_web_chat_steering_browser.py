"""Steering in a real browser (issue 36 item 5, ADR 0094): in headless Chromium the person
types a second message while a tool runs (the example's ``get_weather`` waits until the
test releases it); the answer reflects it, the list shows one turn, and the store keeps
the message between the tool's result and the next model answer.
``GOLEM_REQUIRE_BROWSER=1`` (set by ``.ci/run``) makes a missing browser a failure.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import Browser, browser_fixture, compose
from web_chat_server import (
    ExampleProcess,
    SplitBalancer,
    WebChatServer,
    free_port,
    gate_weather,
    web_chat_fixture,
)

from golem_core import Role
from golem_shell import SQLiteHistoryStore

pytestmark = pytest.mark.anyio

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


server = web_chat_fixture(delay=0.02)
browser = browser_fixture()


def _messages() -> str:
    """What the page shows: (role, text of the message) for each message, in order."""
    return (
        "[...document.querySelectorAll('#messages .message')].map(m => [m.dataset.role,"
        " [...m.querySelectorAll('.text')].map(t => t.textContent).join('')])"
    )


def _turns(db: Path, uid: str, cid: str) -> int:
    """How many turns the stream log keeps for the conversation's main branch (its table
    stands beside the conversations', named ``..._streams``)."""
    with sqlite3.connect(db) as conn:
        (streams,) = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%\\_streams'"
            " ESCAPE '\\'"
        ).fetchone()
        (turns,) = conn.execute(
            f"SELECT count(*) FROM {streams} WHERE skey = ?", (f"{uid}/{cid}/main",)
        ).fetchone()
    return int(turns)


async def test_a_message_typed_while_a_tool_runs_steers_the_turn(
    server: WebChatServer, browser: Browser, tmp_path: Path
) -> None:
    gate = gate_weather(server, delay=0.02)
    page = await browser.page()
    await page.goto(server.url + "/")
    await page.wait_for("document.querySelector('#status').textContent === 'idle'")
    # what the stream alone shows, before the page re-reads the stored conversation
    await page.evaluate(
        f"window.__before_reread = null; const reread = open;"
        f" open = (...args) => {{ if (window.__before_reread === null && state.id)"
        f" window.__before_reread = {_messages()}; return reread(...args); }}; true"
    )
    await page.evaluate(compose("weather in Oslo"))
    assert await asyncio.to_thread(gate.started.wait, 30)  # the tool runs, and waits
    await page.wait_for("!!document.querySelector('.tool[data-state=input-available]')")
    assert await page.evaluate("document.querySelector('#status').textContent") == "streaming"

    await page.evaluate(compose("actually, use Paris"))  # typed while the tool runs
    await page.wait_for("!!document.querySelector('.message.user[data-pending=sent]')")
    await page.screenshot(ARTIFACTS / "web_chat_steering.png")
    gate.release.set()

    await page.wait_for(
        "[...document.querySelectorAll('.message[data-role=assistant] .text')]"
        ".some(t => t.textContent.startsWith('You said: actually, use Paris'))"
    )
    await page.wait_for(
        "document.querySelector('#status').textContent === 'idle'"
        " && !document.querySelector('.message.pending')"
    )
    expected = [
        ["user", "weather in Oslo"],
        ["assistant", "Let me check. "],
        ["user", "actually, use Paris"],
        [
            "assistant",
            "You said: actually, use Paris (offline model; set OPENAI_API_KEY for a real one)",
        ],
    ]
    assert await page.evaluate("window.__before_reread") == expected  # as it streamed
    assert await page.evaluate(_messages()) == expected  # as it was stored
    tool = await page.evaluate(
        "[...document.querySelectorAll('.tool')].map(t => [t.dataset.state,"
        " t.querySelector('.output').textContent])"
    )
    assert tool == [["output-available", "→ sunny, 21 C in Oslo"]]
    titles = await page.wait_for(
        "[...document.querySelectorAll('#conversations li')].map(li => li.textContent)"
    )
    assert titles == ["weather in Oslo"]  # one conversation, one branch

    cid = await page.evaluate("state.id")
    uid = next(c["value"] for c in (await page.send("Network.getCookies"))["cookies"])
    server.close()
    # one turn: the message joined it, no second turn
    assert _turns(tmp_path / "chat.db", uid, cid) == 1
    assert gate.calls == 1  # and one run: the tool ran once
    with SQLiteHistoryStore(str(tmp_path / "chat.db")) as store:
        kept = store.load_sync(uid, cid)
    assert [m.role for m in kept] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.USER,  # the steering message: after the tool's result, before the answer
        Role.ASSISTANT,
    ]
    assert kept[3].text == "actually, use Paris" and kept[3].run_id == kept[4].run_id


async def test_a_message_too_late_for_the_run_or_the_turn_is_answered_next(
    server: WebChatServer, browser: Browser, tmp_path: Path
) -> None:
    """Sent while the run's messages are being stored: the turn's next run answers it in
    the same stream. Sent while the stream's last frame is being written (the turn has
    closed): it starts the next turn, which the page follows by itself."""
    chat = server.chat
    hold_store, hold_end = threading.Event(), threading.Event()
    holding: list[str] = []
    append, write = chat.store.append, chat.runs.write

    async def held_append(*args: Any, **kwargs: Any) -> Any:
        if args[3] > 0 and not hold_store.is_set():  # a run's messages (not a prompt)
            holding.append("store")
            await asyncio.to_thread(hold_store.wait, 30)
        return await append(*args, **kwargs)

    async def held_write(stream: str, frames: Any, **kwargs: Any) -> Any:
        if any(data == "[DONE]" for _, data in frames) and not hold_end.is_set():
            holding.append("end")
            await asyncio.to_thread(hold_end.wait, 30)
        return await write(stream, frames, **kwargs)

    steered: list[int | None] = []  # what the steering route answered each message
    asked: list[object] = []  # each message the steering route was asked about, on arrival
    steer = chat.steer

    async def told(*args: Any) -> Any:
        asked.append(args)
        response = await steer(*args)
        steered.append(None if response is None else response.status_code)
        return response

    chat.store.append, chat.runs.write, chat.steer = held_append, held_write, told
    page = await browser.page()
    await page.goto(server.url + "/")
    await page.wait_for("document.querySelector('#status').textContent === 'idle'")

    # 1. too late for the run: the turn's next run, one stream
    hold_end.set()
    await page.evaluate(compose("hello"))
    while "store" not in holding:
        await asyncio.sleep(0.02)
    await page.evaluate(compose("and more"))
    await page.wait_for("!!document.querySelector('.message.user[data-pending=sent]')")
    hold_store.set()
    await page.wait_for(
        "[...document.querySelectorAll('.message[data-role=assistant] .text')]"
        ".some(t => t.textContent.startsWith('You said: and more'))"
    )
    await page.wait_for(
        "document.querySelector('#status').textContent === 'idle'"
        " && !document.querySelector('.message.pending')"
    )
    tail = " (offline model; set OPENAI_API_KEY for a real one)"
    assert await page.evaluate(_messages()) == [
        ["user", "hello"],
        ["assistant", "You said: hello" + tail],
        ["user", "and more"],
        ["assistant", "You said: and more" + tail],
    ]

    # 2. too late for the turn: the next turn
    holding.clear()
    hold_end.clear()
    await page.evaluate(compose("bye"))
    while "end" not in holding:
        await asyncio.sleep(0.02)
    await page.evaluate(compose("one more"))
    await page.wait_for("!!document.querySelector('.message.user[data-pending=sending]')")
    while len(asked) < 4:  # the server has the message while the turn's end is held
        await asyncio.sleep(0.02)
    hold_end.set()
    await page.wait_for(
        "[...document.querySelectorAll('.message[data-role=assistant] .text')]"
        ".some(t => t.textContent.startsWith('You said: one more'))"
    )
    await page.wait_for("document.querySelector('#status').textContent === 'idle'")
    shown = await page.evaluate(_messages())
    assert shown[4:] == [
        ["user", "bye"],
        ["assistant", "You said: bye" + tail],
        ["user", "one more"],
        ["assistant", "You said: one more" + tail],
    ]

    # hello, bye: no turn streamed; and more: steered (202); one more: the next turn (200)
    assert steered == [None, 202, None, 200]
    cid = await page.evaluate("state.id")
    uid = next(c["value"] for c in (await page.send("Network.getCookies"))["cookies"])
    server.close()
    with SQLiteHistoryStore(str(tmp_path / "chat.db")) as store:
        kept = store.load_sync(uid, cid)
    assert [m.text for m in kept if m.role is Role.USER] == ["hello", "and more", "bye", "one more"]
    # hello (two runs, one stream), bye, one more
    assert _turns(tmp_path / "chat.db", uid, cid) == 3


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[tuple[ExampleProcess, SplitBalancer]]:
    """Two ``--durable`` processes on one store behind a balancer that sends a message
    typed while a turn streams to the process that does not hold the stream."""
    pytest.importorskip("dbos")
    db = tmp_path / "chat.db"
    a = ExampleProcess(db, free_port(), "a", delay=0.02)
    b = ExampleProcess(db, free_port(), "b", delay=0.02)
    a.start(wait=False), b.start(wait=False)
    balancer = None
    try:
        a.wait(), b.wait()
        balancer = SplitBalancer(a.url, b.url)
        yield a, balancer
    finally:
        if balancer is not None:
            balancer.close()
        for p in (a, b):
            p.stop()


async def test_a_message_typed_while_a_durable_turn_streams_joins_it_through_the_other_process(
    deployment: tuple[ExampleProcess, SplitBalancer], browser: Browser
) -> None:
    a, balancer = deployment
    page = await browser.page()
    await page.goto(balancer.url + "/")
    await page.wait_for("document.querySelector('#status').textContent === 'idle'")
    await page.evaluate(compose("a long answer please"))
    await page.wait_for("state.streamed.length >= 4")  # the long answer streams

    await page.evaluate(compose("actually, use Paris"))  # typed while it streams
    await page.wait_for(
        "[...document.querySelectorAll('.message[data-role=assistant] .text')]"
        ".some(t => t.textContent.startsWith('You said: actually, use Paris'))",
        timeout=60,
    )
    await page.wait_for(
        "document.querySelector('#status').textContent === 'idle'"
        " && !document.querySelector('.message.pending')"
    )
    await page.screenshot(ARTIFACTS / "web_chat_durable_steering.png")
    chats = [which for method, path, which in balancer.routes if path == "/api/chat"]
    assert chats == [0, 1]  # the turn to A, the message to B (202)
    shown = await page.evaluate(_messages())
    users = [text for role, text in shown if role == "user"]
    assert users == ["a long answer please", "actually, use Paris"]
    assert shown[-1] == [
        "assistant",
        "You said: actually, use Paris (offline model; set OPENAI_API_KEY for a real one)",
    ]
    cid = await page.evaluate("state.id")
    uid = next(c["value"] for c in (await page.send("Network.getCookies"))["cookies"])
    assert _turns(a.db, uid, cid) == 1  # one turn: the message joined it
    with SQLiteHistoryStore(str(a.db)) as store:
        kept = store.load_sync(uid, cid)
    assert [m.text for m in kept if m.role is Role.USER] == users
    steered = next(m for m in kept if m.text == "actually, use Paris")
    assert steered.run_id is not None and kept[-1].text == shown[-1][1]
