"""useChat's engine from the real ``ai`` package, 6 and 7 (``AbstractChat`` with
``DefaultChatTransport``, pinned in ``tests/js/package.json``; ai 7 under Node 22, see
``tests/js_node.py``) against the live web chat
example: what a React front end does, scenario by scenario (``tests/js/chat_client.mjs``).
Issue 36: the example must serve the client as it really behaves, not as golem's own page.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from js_node import PACKAGES, Sdk, run_sdk, sdk_or_skip
from web_chat_server import WebChatServer, js_clients_or_skip, serve_web_chat

from golem_core import Role
from golem_shell import SQLiteHistoryStore
from golem_shell.store import MAIN


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebChatServer]:
    js_clients_or_skip()
    served = serve_web_chat(tmp_path_factory.mktemp("js") / "chat.db", delay=0.005)
    yield served
    served.close()


@pytest.fixture(scope="module", params=[6, 7], ids=["ai6", "ai7"])
def sdk(request: pytest.FixtureRequest) -> Sdk:
    version: Sdk = request.param
    return version


def chat(server: WebChatServer, scenario: str, sdk: Sdk) -> dict[str, Any]:
    sdk_or_skip(sdk)
    result: dict[str, Any] = run_sdk(sdk, "chat_client.mjs", server.url, scenario, PACKAGES[sdk])
    return result


def text(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


def stored_branches(
    server: WebChatServer, result: dict[str, Any]
) -> dict[str, list[tuple[Role, str]]]:
    """Every stored branch of the scenario's conversation, as (role, text) pairs."""
    uid, cid = result["uid"], result["id"]
    with SQLiteHistoryStore(server.db) as store:
        return {
            info.name: [(m.role, m.text) for m in store.load_sync(uid, cid, branch=info.name)]
            for info in store.branches_sync(uid, cid)
        }


def test_a_text_answer_and_a_tool_call(server: WebChatServer, sdk: Sdk) -> None:
    result = chat(server, "send", sdk)
    assert result["errors"] == [] and result["status"] == "ready" and result["first"] == "ready"
    hello, weather = result["answers"]
    assert hello.startswith("You said: hello")
    assert weather.endswith("The get_weather tool says: sunny, 21 C in Oslo.")
    tool = next(p for p in result["messages"][-1]["parts"] if p["type"] == "tool-get_weather")
    assert tool["state"] == "output-available" and tool["input"] == {"city": "Oslo"}


def test_an_approval_given_and_one_refused(server: WebChatServer, sdk: Sdk) -> None:
    result = chat(server, "approval", sdk)
    assert result["errors"] == [] and result["status"] == "ready"
    assert result["asked"]["state"] == "approval-requested"
    assert result["approved"]["state"] == "output-available"
    assert result["approved"]["output"] == "sent 5 cents to ann"
    assert result["denied"]["state"] == "output-denied"


def test_a_failed_run_does_not_lock_the_chat(server: WebChatServer, sdk: Sdk) -> None:
    """Issue 36: the failed stream's ``start`` makes useChat keep an assistant message
    the store never gets; the next send used to be a 409 ("reload it")."""
    result = chat(server, "failed", sdk)
    after = result["afterFailure"]
    assert after["status"] == "error" and after["roles"] == ["user", "assistant"]
    assert result["status"] == "ready", result["errors"]
    assert result["last"].startswith("You said: hello again")
    [posts] = [[r["status"] for r in result["requests"] if r["method"] == "POST"]]
    assert posts == [200, 200]
    assert stored_branches(server, result) == {
        MAIN: [
            (Role.USER, "fail please"),
            (Role.USER, "hello again"),
            (Role.ASSISTANT, result["last"]),
        ]
    }


def test_after_an_edit_the_next_message_continues_the_edited_branch(
    server: WebChatServer, sdk: Sdk
) -> None:
    """Issue 36: useChat never sends ``branch``; the message after an edit went to ``main``,
    so the model answered a conversation other than the one on screen."""
    result = chat(server, "edit", sdk)
    assert result["errors"] == [] and result["status"] == "ready"
    shown = result["texts"]
    assert shown[0::2] == ["first", "second, edited", "third"]
    branches = stored_branches(server, result)
    assert [t for _, t in branches[MAIN]][0::2] == ["first", "second"]
    [edited] = [b for b in branches if b != MAIN]
    assert [(r, t) for r, t in branches[edited]][0::2] == [
        (Role.USER, "first"),
        (Role.USER, "second, edited"),
        (Role.USER, "third"),
    ]
    assert [t for _, t in branches[edited]] == shown  # the store holds what the screen shows


def test_resume_replays_a_live_stream_and_finds_nothing_once_it_finished(
    server: WebChatServer, sdk: Sdk
) -> None:
    result = chat(server, "resume", sdk)
    resumed = result["resumed"]
    assert resumed["status"] == "ready" and resumed["roles"] == ["user", "assistant"]
    assert resumed["text"].startswith("word1 word2 ") and resumed["text"].endswith("word60.")
    assert resumed["text"].count("word7 ") == 1
    requests = result["requests"]
    gets = [r["status"] for r in requests if r["method"] == "GET" and "/stream" in r["url"]]
    assert gets == [200, 204]  # once finished, nothing to resume (the store has it all)
    assert result["status"] == "ready" and result["laterText"] == resumed["text"]
