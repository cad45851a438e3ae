"""tests/browser.py leaves nothing open for the garbage collector once its browser closes.

A fresh clone's CI failed ``test_http_close`` on ``unclosed file <_io.BufferedReader
name=77>``: the headless Chromium of an earlier browser test had its stderr on a pipe that
nobody closed, and the warning came out of the next test's ``gc.collect()``. The
browser's stderr now goes to a file beside its profile.
"""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import pytest
from browser import start_or_skip

pytestmark = pytest.mark.anyio


async def test_a_closed_browser_leaves_no_unclosed_file_to_the_garbage_collector(
    tmp_path: Path,
) -> None:
    gc.collect()  # what earlier tests left is not this helper's
    browser = await start_or_skip(tmp_path / "profile")
    page = await browser.page()
    assert await page.evaluate("1 + 1") == 2
    await browser.close()
    del browser, page
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert unclosed == []
    assert "DevTools listening on" in (tmp_path / "profile-stderr.log").read_text()
