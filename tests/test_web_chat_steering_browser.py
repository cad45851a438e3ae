"""Steering in a real browser (issue 36 item 5, ADR 0094): in headless Chromium the person
types a second message while a tool runs (the example's ``get_weather`` waits until the
test releases it); the answer reflects it, the list shows one turn, and the store keeps
the message between the tool's result and the next model answer.
``GOLEM_REQUIRE_BROWSER=1`` (set by ``.ci/run``) makes a missing browser a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from browser import Browser, BrowserUnavailable, start_browser
from web_chat_server import WebChatServer, gate_weather, serve_web_chat

from golem_core import Role
from golem_shell import SQLiteHistoryStore

pytestmark = pytest.mark.anyio

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[WebChatServer]:
    served = serve_web_chat(tmp_path / "chat.db", delay=0.02)
    yield served
    served.close()


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[Browser]:
    try:
        started = await start_browser(tmp_path / "profile")
    except BrowserUnavailable as e:
        if os.environ.get("GOLEM_REQUIRE_BROWSER") == "1":
            pytest.fail(f"headless Chromium is required here: {e}", pytrace=False)
        pytest.skip(f"no headless Chromium: {e}")
    yield started
    await started.close()


def _messages() -> str:
    """What the page shows: (role, text of the message) for each message, in order."""
    return (
        "[...document.querySelectorAll('#messages .message')].map(m => [m.dataset.role,"
        " [...m.querySelectorAll('.text')].map(t => t.textContent).join('')])"
    )


def _type(text: str) -> str:
    return (
        f"document.querySelector('#input').value = {json.dumps(text)};"
        "document.querySelector('#composer').requestSubmit(); true"
    )


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
    await page.evaluate(_type("weather in Oslo"))
    assert await asyncio.to_thread(gate.started.wait, 30)  # the tool runs, and waits
    await page.wait_for("!!document.querySelector('.tool[data-state=input-available]')")
    assert await page.evaluate("document.querySelector('#status').textContent") == "streaming"

    await page.evaluate(_type("actually, use Paris"))  # typed while the tool runs
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
    with sqlite3.connect(tmp_path / "chat.db") as db:
        (streams,) = db.execute(  # the stream log's table, beside the conversations
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%\\_streams'"
            " ESCAPE '\\'"
        ).fetchone()
        (turns,) = db.execute(
            f"SELECT count(*) FROM {streams} WHERE skey = ?", (f"{uid}/{cid}/main",)
        ).fetchone()
    assert turns == 1  # one turn: the message joined it, no second turn
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
