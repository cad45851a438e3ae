"""``@ag-ui/client``'s ``HttpAgent`` (pinned in ``tests/js/package.json``) against the web
chat example's stateless ``POST /agui`` (``tests/js/agui_client.mjs``): the client
verifies every event itself, so an order or a field it refuses fails here. Issue 36."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_chat_server import WebChatServer, js_clients_or_skip, run_node, serve_web_chat


@pytest.fixture
def server(tmp_path: Path) -> Iterator[WebChatServer]:
    js_clients_or_skip()
    served = serve_web_chat(tmp_path / "chat.db", delay=0.005)
    yield served
    served.close()


def test_http_agent_runs_sanitizes_approves_once_and_refuses_a_replay(
    server: WebChatServer,
) -> None:
    result: dict[str, Any] = run_node("agui_client.mjs", server.url)
    sanitized = result["sanitized"]
    # a developer message is dropped and reported after RUN_STARTED, never before it
    # (the client throws "First event must be 'RUN_STARTED'" otherwise)
    assert sanitized["error"] is None
    assert sanitized["events"][:2] == ["RUN_STARTED", "CUSTOM"]
    [notice] = sanitized["custom"]
    assert notice["name"] == "golem.sanitize" and notice["value"]["systemPrompts"] == 1
    assert [m["role"] for m in sanitized["messages"]] == ["user", "assistant"]
    assert sanitized["finished"][0]["outcome"] == {"type": "success"}

    paused = result["paused"]
    assert paused["error"] is None
    [interrupt] = paused["finished"][0]["outcome"]["interrupts"]
    assert interrupt["reason"] == "tool_approval"
    assert [i["id"] for i in paused["interrupts"]] == [interrupt["id"]]

    approved = result["approved"]
    assert approved["error"] is None and "TOOL_CALL_RESULT" in approved["events"]
    tool = next(m for m in approved["messages"] if m["role"] == "tool")
    assert tool["content"] == "sent 5 cents to ann"

    replayed = result["replayed"]  # the same snapshot and approval, sent again
    assert replayed["events"] == []
    assert replayed["error"].startswith("HTTP 409") and "already answered" in replayed["error"]
