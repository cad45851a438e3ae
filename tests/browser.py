"""A headless Chromium driven over the DevTools protocol, for the browser tests.

``start_browser(tmp)`` starts the system's ``chromium`` (Debian's package; Playwright's
own browser download is not used) with ``--remote-debugging-port=0`` and returns a
``Browser``; ``browser.page()`` opens a tab (``Page``) over one websocket session
(``Target.attachToTarget`` with ``flatten``). A page can ``goto``, ``reload``,
``evaluate`` JavaScript (promises awaited), ``wait_for`` a JavaScript condition, and
``screenshot`` to a PNG. ``BrowserUnavailable`` says why no browser could start.

For the test modules: ``browser = browser_fixture()`` gives a module the ``browser`` fixture
(a fresh browser a test, skipped without Chromium unless ``GOLEM_REQUIRE_BROWSER=1``);
``compose(text)`` and ``send(page, text)`` type a message into the web chat example's page
(``examples/web_chat``) and submit it.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

__all__ = [
    "Browser",
    "BrowserUnavailable",
    "Page",
    "browser_fixture",
    "compose",
    "send",
    "start_browser",
]

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class BrowserUnavailable(RuntimeError):
    """No headless Chromium could be started here (the message says why)."""


def find_chromium() -> str:
    """The path of a Chromium binary, or ``BrowserUnavailable``."""
    explicit = os.environ.get("GOLEM_CHROMIUM")
    if explicit:
        return explicit
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserUnavailable(
        "no chromium on PATH (apt-get install -y chromium, or set GOLEM_CHROMIUM)"
    )


class Browser:
    """A running headless Chromium and its DevTools websocket."""

    def __init__(self, process: subprocess.Popen[bytes], ws: ClientConnection) -> None:
        self._process = process
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._events: dict[str, list[dict[str, Any]]] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for raw in self._ws:
            message = json.loads(raw)
            if "id" in message:
                future = self._pending.pop(message["id"], None)
                if future is not None and not future.done():
                    if "error" in message:
                        future.set_exception(RuntimeError(f"CDP error: {message['error']}"))
                    else:
                        future.set_result(message.get("result", {}))
            elif "sessionId" in message:
                self._events.setdefault(message["sessionId"], []).append(message)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> Any:
        """Send a DevTools command and wait for its result."""
        call_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        await self._ws.send(json.dumps(message))
        return await asyncio.wait_for(future, 30)

    async def page(self) -> Page:
        """A new tab (sharing the browser's cookies)."""
        target = await self.send("Target.createTarget", {"url": "about:blank"})
        attached = await self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        page = Page(self, attached["sessionId"])
        await page.send("Page.enable")
        await page.send("Runtime.enable")
        return page

    async def close(self) -> None:
        """Stop the browser."""
        self._reader.cancel()
        try:
            await self._ws.close()
        finally:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


class Page:
    """One tab."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    async def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.browser.send(method, params, self.session)

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (a promise is awaited)."""
        result = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"JavaScript failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        """Poll a JavaScript expression until it is truthy; its value."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                value = await self.evaluate(expression)
            except RuntimeError:
                value = None  # the page is navigating
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out waiting for: {expression}")
            await asyncio.sleep(0.05)

    async def goto(self, url: str) -> None:
        """Navigate and wait until the document has loaded."""
        await self.send("Page.navigate", {"url": url})
        await self.wait_for(
            f"location.href.startsWith({json.dumps(url)}) && document.readyState === 'complete'"
        )

    async def reload(self) -> None:
        """Reload and wait until the document has loaded again."""
        await self.evaluate("window.__before_reload = true")
        await self.send("Page.reload", {"ignoreCache": True})
        await self.wait_for("!window.__before_reload && document.readyState === 'complete'")

    async def screenshot(self, path: Path) -> Path:
        """A PNG of the page, written to ``path``."""
        shot = await self.send("Page.captureScreenshot", {"format": "png"})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


async def start_browser(profile: Path, *, width: int = 1100, height: int = 760) -> Browser:
    """Start headless Chromium with a fresh profile under ``profile``.

    Raises:
        BrowserUnavailable: no binary, or it did not open its DevTools endpoint.
    """
    binary = find_chromium()
    args = [
        binary,
        "--headless=new",
        "--no-sandbox",  # root in CI containers
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        "about:blank",
    ]
    # its stderr goes to a file, not a pipe: nothing to drain while it runs, and no pipe
    # left open for the garbage collector to warn about once it is closed
    log = profile.with_name(profile.name + "-stderr.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with log.open("wb") as err:
            process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    except OSError as e:
        raise BrowserUnavailable(f"{binary} could not start: {e}") from None

    async def endpoint() -> str | None:
        while True:
            ended = process.poll() is not None
            said = log.read_text(errors="replace")
            found = re.search(r"DevTools listening on (ws://\S+)", said)
            if found:
                return found.group(1)
            if ended:
                return None
            await asyncio.sleep(0.05)

    try:
        url = await asyncio.wait_for(endpoint(), 60)
    except TimeoutError:
        url = None
    if url is None:
        process.kill()
        process.wait()
        raise BrowserUnavailable(
            f"{binary} opened no DevTools endpoint: {log.read_text(errors='replace')[-2000:]}"
        )
    ws = await connect(url, max_size=None, open_timeout=30)
    return Browser(process, ws)


async def start_or_skip(profile: Path) -> Browser:
    """``start_browser(profile)``; without Chromium the calling test skips, or fails when
    ``GOLEM_REQUIRE_BROWSER=1`` (set by ``.ci/run``)."""
    import pytest

    try:
        return await start_browser(profile)
    except BrowserUnavailable as e:
        if os.environ.get("GOLEM_REQUIRE_BROWSER") == "1":
            pytest.fail(f"headless Chromium is required here: {e}", pytrace=False)
        pytest.skip(f"no headless Chromium: {e}")


def browser_fixture() -> Any:
    """The pytest fixture ``browser`` for a test module (``browser = browser_fixture()``): a
    browser started with a fresh profile under the test's ``tmp_path`` and closed after the
    test. Without Chromium the test skips, or fails when ``GOLEM_REQUIRE_BROWSER=1`` (set by
    ``.ci/run``)."""
    import pytest

    @pytest.fixture
    async def browser(tmp_path: Path) -> AsyncIterator[Browser]:
        started = await start_or_skip(tmp_path / "profile")
        yield started
        await started.close()

    return browser


def compose(text: str) -> str:
    """JavaScript that types ``text`` into the web chat page's composer and submits it (at
    once: while an answer streams too)."""
    return (
        f"document.querySelector('#input').value = {json.dumps(text)};"
        "document.querySelector('#composer').requestSubmit(); true"
    )


async def send(page: Page, text: str) -> None:
    """Wait until the web chat page is idle, then type ``text`` and submit it."""
    await page.wait_for("document.querySelector('#status').textContent === 'idle'")
    await page.evaluate(compose(text))
