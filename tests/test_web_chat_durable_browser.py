"""The durable web chat in headless Chromium: the server dies mid-answer, the page recovers.

The example runs as a process of its own (``--durable``: DBOS, streams in the store).
The page sends "long"; while the answer streams the server is SIGKILLed and started
again on the same port with the same worker id; DBOS resumes the run, and the page,
which only retries its ``Last-Event-ID``, finishes the same answer by itself: one
answer, each word once, in the stream it applied and on the screen (issue 36 item 5,
the resumption half). Then an approval: the durable run waits, the page shows the
request, a reload shows it again, approving runs the tool once.
``GOLEM_REQUIRE_BROWSER=1`` makes a missing browser a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Browser, browser_fixture, send
from web_chat_server import ExampleProcess, free_port, load_example

pytest.importorskip("dbos")
pytestmark = pytest.mark.anyio

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ExampleProcess]:
    process = ExampleProcess(tmp_path / "chat.db", free_port(), "web", delay=0.02).start()
    yield process
    process.stop()


browser = browser_fixture()


ANSWERS = (
    "[...document.querySelectorAll('.message[data-role=assistant] .text')].map(e => e.textContent)"
)
IDLE = "document.querySelector('#status').textContent === 'idle'"


async def test_the_page_recovers_by_itself_when_the_server_dies_mid_answer(
    server: ExampleProcess, browser: Browser
) -> None:
    long_answer = load_example().LONG_ANSWER
    page = await browser.page()
    await page.goto(server.url + "/")
    await send(page, "a long answer please")
    await page.wait_for("state.streamed.length >= 8")
    server.kill()  # mid-answer: the page sees its connection die
    assert not await page.evaluate(f"{ANSWERS}.join(' ').includes('word60.')")
    server.start()  # same port, same worker id: DBOS resumes the run
    await page.wait_for(f"{ANSWERS}.join(' ').includes('word60.')", timeout=60)
    await page.wait_for(IDLE, timeout=30)
    streamed = await page.evaluate("state.streamed.join('')")
    assert streamed == long_answer  # each word applied once, none lost
    assert await page.evaluate(ANSWERS) == [long_answer]  # one answer on screen
    users = await page.evaluate(
        "[...document.querySelectorAll('.message[data-role=user] .text')].map(e => e.textContent)"
    )
    assert users == ["a long answer please"]
    await page.screenshot(ARTIFACTS / "web_chat_restart.png")

    # a durable run that waits for approval: shown, shown again after a reload, approved once
    await send(page, "pay landlord 950")
    approve = "!!document.querySelector('.tool[data-state=approval-requested] button.approve')"
    await page.wait_for(approve)
    await page.reload()
    await page.wait_for(approve)
    await page.evaluate("document.querySelector('button.approve').click(); true")
    await page.wait_for(f"{ANSWERS}.join(' ').includes('sent 950 cents to landlord.')")
    await page.wait_for(IDLE)
    states = await page.evaluate(
        "[...document.querySelectorAll('.tool')].map(t => t.dataset.state)"
    )
    assert states == ["output-available"]
    assert len(await page.evaluate(ANSWERS)) == 2
