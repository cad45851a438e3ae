"""Issue 38 item 2: the guide "Drive the loop yourself" and its example.

``examples/drive_the_loop.py`` drives a real conversation with tools with golem_core
alone, over the standard library's HTTP client, against a fake OpenAI server on
127.0.0.1 (``tests/fake_openai_server.py``): a tool runs, a tool that needs approval
pauses the run, a resume approves it, the run finishes. Its whole run imports neither
golem_shell nor httpx nor asyncio. The driver shown in docs/guides/embedding.md is the
example's driver, character for character.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from fake_openai_server import FakeOpenAI

from golem_core import Approved, Denied, Role, TextPart
from golem_core.loop import Fail, Finish, ModelFailed, Pause, RequestModel, next_command, start_run

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "drive_the_loop.py"
PAGE = ROOT / "docs" / "guides" / "embedding.md"
PAGE_MARK = "<!-- the driver of examples/drive_the_loop.py (tests/test_embedding_guide.py) -->"
NEVER = ("golem_shell", "httpx", "asyncio", "anyio", "httpcore")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("drive_the_loop", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run() -> Iterator[tuple[subprocess.CompletedProcess[str], FakeOpenAI]]:
    """The example run as a user runs it, in a fresh interpreter that logs every import."""
    with FakeOpenAI() as fake:
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", str(EXAMPLE), "--base-url", fake.base_url],
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
        )
        yield proc, fake


def _imported(importtime_log: str) -> set[str]:
    """The modules ``-X importtime`` reports: ``import time: self | cumulative | name``."""
    names = set()
    for line in importtime_log.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", line)
        if match:
            names.add(match.group(1))
    return names


def test_the_example_pauses_for_approval_resumes_and_finishes(
    run: tuple[subprocess.CompletedProcess[str], FakeOpenAI],
) -> None:
    proc, fake = run
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        'paused: transfer {"to": "landlord", "amount": 950} waits for approval (call_2)'
    )
    assert lines[1] == "resumed: approved call_2 (5 stored messages)"
    assert "tool balance: 1200.00 EUR in checking" in lines
    assert "tool transfer: sent 950.00 EUR to landlord" in lines
    assert (
        "answer: Done. The tools said: 1200.00 EUR in checking; sent 950.00 EUR to landlord"
        in lines
    )
    assert lines[-1] == "requests: 2 before the pause, 1 after"
    # what went over the wire: golem's codec, both tools declared, the results sent back
    assert len(fake.requests) == 3
    first, _, last = fake.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["balance", "transfer"]
    assert first["messages"][0] == {
        "role": "system",
        "content": "You are a careful banking assistant.",
    }
    assert [(m["role"], m.get("content")) for m in last["messages"] if m["role"] == "tool"] == [
        ("tool", "1200.00 EUR in checking"),
        ("tool", "sent 950.00 EUR to landlord"),
    ]


def test_the_example_never_imports_the_shell_httpx_or_asyncio(
    run: tuple[subprocess.CompletedProcess[str], FakeOpenAI],
) -> None:
    proc, _ = run
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = _imported(proc.stderr)
    # the log is read: the example's own imports are in it
    assert {"golem_core", "golem_core.loop", "golem_core.wire.openai", "urllib.request"} <= imported
    assert sorted(m for m in imported if m.split(".")[0] in NEVER) == []


def test_the_driver_takes_an_approval_within_the_run(
    example: ModuleType, server: FakeOpenAI
) -> None:
    asked: list[tuple[str, str]] = []

    def approve(deferred: tuple[object, ...]) -> dict[str, object]:
        asked.extend((d.call.name, d.kind) for d in deferred)  # type: ignore[attr-defined]
        return {d.call.id: Approved() for d in deferred}  # type: ignore[attr-defined]

    state = start_run(example.config("c1"), (), [TextPart("Pay my rent.")])
    end = example.drive(state, server.base_url, "m", example.TOOLS, approve)
    assert isinstance(end, Finish), end
    assert asked == [("transfer", "approval")]
    results = [(m.tool_name, m.text, m.failed) for m in end.state.messages if m.role is Role.TOOL]
    assert results == [
        ("balance", "1200.00 EUR in checking", False),
        ("transfer", "sent 950.00 EUR to landlord", False),
    ]
    assert end.output == (
        "Done. The tools said: 1200.00 EUR in checking; sent 950.00 EUR to landlord"
    )


def test_a_denied_call_never_runs_and_the_model_reads_why(
    example: ModuleType, server: FakeOpenAI
) -> None:
    ran: list[str] = []
    tools = {**example.TOOLS, "transfer": lambda **kw: ran.append("transfer") or "sent"}
    state = start_run(example.config("c2"), (), [TextPart("Pay my rent.")])
    paused = example.drive(state, server.base_url, "m", tools, lambda deferred: None)
    assert isinstance(paused, Pause)
    assert [(d.call.name, d.kind) for d in paused.deferred] == [("transfer", "approval")]
    assert paused.state.requests == 2
    no = {d.call.id: Denied("not this month") for d in paused.deferred}
    end = example.drive(paused.state, server.base_url, "m", tools, lambda deferred: no)
    assert isinstance(end, Finish), end
    assert ran == []
    assert "not this month" in end.output


def test_a_refused_request_fails_the_run_with_the_providers_words(
    example: ModuleType, server: FakeOpenAI
) -> None:
    state = start_run(example.config("c3"), (), [TextPart("hello")])
    command = next_command(state)
    assert isinstance(command, RequestModel)
    failed = example.request_model(server.base_url + "/nowhere", "m", command)
    assert isinstance(failed, ModelFailed)
    assert "no route /v1/nowhere/chat/completions" in failed.reason
    end = example.drive(state, "http://127.0.0.1:9/v1", "m", example.TOOLS, lambda d: None)
    assert isinstance(end, Fail)
    assert end.stage.value == "request"
    assert "ConnectionRefusedError" in end.reason or "URLError" in end.reason


def test_the_fake_server_refuses_what_it_cannot_read(server: FakeOpenAI) -> None:
    request = urllib.request.Request(
        server.base_url + "/chat/completions", b'{"model": 1}', {"content-type": "x"}
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert "needs 'model'" in json.loads(caught.value.read())["error"]["message"]
    assert server.requests == []


def driver_section(source: str) -> str:
    """The example's driver: the lines between its ``[start:driver]`` and
    ``[end:driver]`` markers, without the blank lines at either end."""
    match = re.search(
        r"^# --8<-- \[start:driver\]\n(.*?)^# --8<-- \[end:driver\]$", source, re.M | re.S
    )
    assert match, f"{EXAMPLE.name} lost its driver markers"
    return match.group(1).strip("\n")


def page_driver(page: str) -> str:
    """The fenced Python block that follows ``PAGE_MARK`` in the page."""
    # fenced ```py, not ```python: a part of the example, whose whole file the README's
    # typing test checks (tests/test_quality.py checks every ```python block standalone)
    match = re.search(re.escape(PAGE_MARK) + r"\n\n?```py\n(.*?)^```$", page, re.M | re.S)
    assert match, f"{PAGE.name} has no ```py block after {PAGE_MARK}"
    return match.group(1).strip("\n")


def test_the_page_shows_the_examples_driver_as_it_is() -> None:
    shown = page_driver(PAGE.read_text(encoding="utf-8"))
    assert shown == driver_section(EXAMPLE.read_text(encoding="utf-8")), (
        f"docs/guides/embedding.md shows a driver that differs from {EXAMPLE.name}'s: copy the"
        " lines between the example's driver markers into the page's block"
    )


def test_the_drift_check_sees_a_one_character_change() -> None:
    source = EXAMPLE.read_text(encoding="utf-8")
    page = PAGE.read_text(encoding="utf-8")
    drifted = source.replace("timeout=120", "timeout=121")
    assert drifted != source
    assert page_driver(page) != driver_section(drifted)
