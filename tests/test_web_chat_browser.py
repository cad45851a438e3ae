"""The web chat example in a real browser: headless Chromium over the DevTools protocol.

The browser loads the page from the example served on 127.0.0.1 (offline model), sends
messages, sees a tool call run, approves a tool, reloads in the middle of a streamed
answer, and edits a message into a branch; each time the test reads what the page
shows. A screenshot is kept in ``tests/artifacts/`` (ignored by git).
``GOLEM_REQUIRE_BROWSER=1`` (set by ``.ci/run``) makes a missing browser a failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import Browser, Page, browser_fixture, send
from web_chat_server import DroppingProxy, WebChatServer, web_chat_fixture

from golem_core import Role
from golem_shell import SQLiteHistoryStore

pytestmark = pytest.mark.anyio

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


server = web_chat_fixture(delay=0.03)
browser = browser_fixture()


async def _idle(page: Page) -> None:
    await page.wait_for(
        "document.querySelector('#status').textContent === 'idle'"
        " && !document.querySelector('.tool[data-state=input-streaming]')"
    )


def _texts(role: str) -> str:
    return (
        f"[...document.querySelectorAll('.message[data-role={role}] .text')]"
        ".map(e => e.textContent)"
    )


async def test_chat_tools_approval_reload_and_edit_in_a_browser(
    server: WebChatServer, browser: Browser, tmp_path: Path
) -> None:
    page = await browser.page()
    await page.goto(server.url + "/")

    # a streamed answer with a tool call shown as it runs
    await page.evaluate(  # the state of the tool part after each chunk the page applies
        "window.__tool_states = []; const applyChunk = apply;"
        " apply = (chunk, ctx) => { applyChunk(chunk, ctx);"
        " const t = ctx.message && ctx.message.parts.find((p) => p.toolCallId);"
        " if (t && window.__tool_states.at(-1) !== t.state) window.__tool_states.push(t.state); };"
        " true"
    )
    await send(page, "weather in Oslo")
    await page.wait_for(
        "document.querySelector('.tool[data-state=output-available] .output')"
        "?.textContent.includes('sunny, 21 C in Oslo')"
    )
    await page.wait_for(
        f"{_texts('assistant')}.join(' ').includes('tool says: sunny, 21 C in Oslo.')"
    )
    states = await page.evaluate("window.__tool_states")
    assert states == ["input-streaming", "input-available", "output-available"]
    await _idle(page)
    titles = await page.wait_for(
        "[...document.querySelectorAll('#conversations li')].map(li => li.textContent)"
    )
    assert titles == ["weather in Oslo"]
    assert await page.evaluate("location.hash.length > 1")

    # a tool that needs approval: the button, then the result and the answer
    await send(page, "pay landlord 950")
    await page.wait_for(
        "!!document.querySelector('.tool[data-state=approval-requested] button.approve')"
    )
    assert not await page.evaluate("document.body.textContent.includes('sent 950 cents')")
    await page.screenshot(ARTIFACTS / "web_chat_approval.png")  # as in docs/web-chat.png
    await page.evaluate("document.querySelector('button.approve').click(); true")
    await page.wait_for(f"{_texts('assistant')}.join(' ').includes('sent 950 cents to landlord.')")
    await _idle(page)
    states = await page.evaluate(
        "[...document.querySelectorAll('.tool')].map(t => t.dataset.state)"
    )
    assert states == ["output-available", "output-available"]

    # a reload in the middle of a streamed answer: the message and the stream survive
    await send(page, "a long answer please")
    await page.wait_for(f"{_texts('assistant')}.join(' ').includes('word5 ')")
    assert not await page.evaluate(f"{_texts('assistant')}.join(' ').includes('word60.')")
    await page.reload()
    await page.wait_for(f"{_texts('user')}.includes('a long answer please')")
    await page.wait_for(f"{_texts('assistant')}.join(' ').includes('word60.')")
    await _idle(page)
    users = await page.evaluate(_texts("user"))
    assert users == ["weather in Oslo", "pay landlord 950", "a long answer please"]
    answers = await page.evaluate(
        "[...document.querySelectorAll('.message[data-role=assistant]')].length"
    )
    assert answers == 3  # no duplicate turn
    long_text = (await page.evaluate(_texts("assistant")))[-1]
    assert long_text.count("word1 ") == 1 and long_text.endswith("word60.")

    await page.screenshot(ARTIFACTS / "web_chat.png")

    # edit the first message: regenerated on a branch, the original kept
    original = await page.evaluate("location.hash.slice(1)")
    await page.evaluate(
        "document.querySelector('.message[data-role=user] button.edit').click(); true"
    )
    await page.evaluate(
        "document.querySelector('textarea.edit-input').value = 'weather in Rome';"
        "document.querySelector('button.save').click(); true"
    )
    await page.wait_for(f"{_texts('assistant')}.join(' ').includes('sunny, 21 C in Rome.')")
    await _idle(page)
    assert await page.evaluate("location.hash.slice(1)") == original + "/b1"
    assert await page.evaluate(_texts("user")) == ["weather in Rome"]
    listed = await page.wait_for(
        "document.querySelectorAll('#conversations li').length === 2"
        " && [...document.querySelectorAll('#conversations li')].map(li => li.textContent)"
    )
    assert listed == ["weather in Oslo", "weather in Rome (branch b1)"]
    await page.screenshot(ARTIFACTS / "web_chat_branch.png")

    # what the store kept: each person's message once, each turn once
    uid = next(c["value"] for c in (await page.send("Network.getCookies"))["cookies"])
    server.close()
    with SQLiteHistoryStore(str(tmp_path / "chat.db")) as store:
        kept = store.load_sync(uid, original)
        forked = store.load_sync(uid, original, branch="b1")
    assert [m.text for m in kept if m.role is Role.USER] == [
        "weather in Oslo",
        "pay landlord 950",
        "a long answer please",
    ]
    assert [m.text for m in forked if m.role is Role.USER] == ["weather in Rome"]
    assert forked[-1].text == "The get_weather tool says: sunny, 21 C in Rome."


async def test_a_network_drop_mid_stream_resumes_from_the_last_event_id(
    server: WebChatServer, browser: Browser
) -> None:
    proxy = await DroppingProxy(int(server.url.rsplit(":", 1)[1])).start()
    try:
        page = await browser.page()
        await page.goto(proxy.url + "/")
        await send(page, "a long answer please")
        await page.wait_for(f"{_texts('assistant')}.join(' ').includes('word5 ')")
        await page.evaluate(
            "window.__statuses = []; new MutationObserver(() => window.__statuses.push("
            "document.querySelector('#status').textContent)).observe("
            "document.querySelector('#status'), {childList: true}); true"
        )
        # what the page shows from the stream alone: every change to the messages, and
        # the page as it stands when the stream has ended, before ``open`` re-reads the
        # stored conversation (which would hide a resume that replayed the whole stream)
        await page.evaluate(
            f"window.__shown = []; const shown = () => {_texts('assistant')};"
            " new MutationObserver(() => window.__shown.push(shown())).observe("
            "document.querySelector('#messages'),"
            " {childList: true, subtree: true, characterData: true});"
            " window.__before_reread = null; const reread = open;"
            " open = (...args) => { if (window.__before_reread === null)"
            " window.__before_reread = shown(); return reread(...args); }; true"
        )
        proxy.drop()  # the network goes away in the middle of the answer
        await page.wait_for(f"{_texts('assistant')}.join(' ').includes('word60.')")
        await _idle(page)
        assert "reconnecting" in await page.evaluate("window.__statuses")
        whole = " ".join(f"word{i}" for i in range(1, 61)) + "."
        streamed = await page.evaluate("window.__before_reread")
        assert streamed == [whole]  # the resumed stream alone shows each word once
        for texts in await page.evaluate("window.__shown"):
            assert len(texts) == 1 and whole.startswith(texts[0]), texts  # never a repeat
        [answer] = await page.evaluate(_texts("assistant"))
        assert answer == whole  # and so does the stored conversation read after it
        assert await page.evaluate(_texts("user")) == ["a long answer please"]
        resumes = [r for r in proxy.requests if r.startswith("GET /api/chat/")]
        last_ids = [
            int(line.split(":", 1)[1])
            for r in resumes
            for line in r.split("\r\n")
            if line.lower().startswith("last-event-id:")
        ]
        assert last_ids and last_ids[0] > 0  # it asked for the rest, not the whole stream
        posts = [r for r in proxy.requests if r.startswith("POST /api/chat ")]
        assert len(posts) == 1  # the message was sent once: no duplicate turn
    finally:
        await proxy.close()
