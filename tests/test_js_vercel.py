"""Every UI message stream golem's Vercel adapter writes, read by the real ``ai`` package
(5 for ``sdk_version=5``; 6 and 7 for the default stream, ai 7 under Node 22; pinned in
``tests/js/package.json``, run by ``tests/js_node.py``): each chunk against the package's own
``uiMessageChunkSchema`` (as ``DefaultChatTransport`` parses a response), the UIMessage
``readUIMessageStream`` builds, and ``validateUIMessages`` on it and on every rendered
history (``tests/js/check_streams.mjs``). Issue 36, item 4.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from js_node import Sdk, run_sdk, sdk_or_skip
from test_ui_vercel import get_weather, pay_model, send_money, weather_model
from web_chat_server import WebChatServer, serve_web_chat

from golem_core import Approved, Denied, Message, ModelRequest
from golem_shell import Agent, FunctionModel
from golem_shell.ui import VercelStream, history_to_ui_messages, run_items, vercel_frames

pytestmark = pytest.mark.anyio


async def frames_of(
    stream: VercelStream, start: Any, *, first: list[dict[str, Any]] | None = None
) -> list[str]:
    return [f async for f in vercel_frames(stream, run_items(start), first=first or [])]


def streamed(agent: Agent[Any, Any], history: tuple[Message, ...], prompt: str | None) -> Any:
    def start(on_delta: Any, on_event: Any) -> Any:
        return agent.run_stream_with_history(history, prompt, on_delta=on_delta, on_event=on_event)

    return start


def continued(agent: Agent[Any, Any], history: tuple[Message, ...], answers: Any) -> Any:
    def start(on_delta: Any, on_event: Any) -> Any:
        return agent.run_with_deferred_results(
            history, answers, on_delta=on_delta, on_event=on_event
        )

    return start


async def adapter_streams(sdk: Literal[5, 6]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Every kind of stream the adapter writes for ``sdk``, and the histories behind them."""
    out: list[dict[str, Any]] = []
    weather = Agent(FunctionModel(weather_model), tools=[get_weather])
    text = Agent(FunctionModel(lambda r: "Hello there, friend."))
    pay = Agent(FunctionModel(pay_model), tools=[send_money])

    def broken(request: ModelRequest) -> Message:
        raise RuntimeError("the model is down")

    sanitize = [{"type": "data-sanitize", "data": {"systemPrompts": 1}, "transient": True}]
    for name, agent, extra in (
        ("text", text, sanitize),
        ("tool", weather, []),
        ("error", Agent(FunctionModel(broken)), []),
    ):
        stream = VercelStream("m1", sdk_version=sdk)
        frames = await frames_of(stream, streamed(agent, (), "hi"), first=extra)
        out.append({"name": name, "sdk": sdk, "frames": frames})
    stream = VercelStream("m1", sdk_version=sdk)
    out.append(
        {
            "name": "approval",
            "sdk": sdk,
            "frames": await frames_of(stream, streamed(pay, (), "pay")),
        }
    )
    paused = await pay.run("pay")
    histories: list[Any] = [paused.messages]
    [_, asked] = history_to_ui_messages(paused.messages, awaiting=["call_pay"])
    for name, answer in (("approved", Approved()), ("denied", Denied("not today"))):
        answers = {"call_pay": answer}
        # the message as the client holds it once the person answered (useChat's
        # addToolApprovalResponse), which the continuation's stream then completes
        turn = json.loads(json.dumps(asked))
        [part] = [p for p in turn["parts"] if p["type"] == "tool-send_money"]
        if sdk == 6:
            part["state"] = "approval-responded"
            part["approval"] = {"id": "call_pay", "approved": name == "approved"}
        else:  # AI SDK 5 has no approvals: the waiting call stays input-available
            part["state"] = "input-available"
            del part["approval"]
        stream = VercelStream("m1", prior=paused.messages[1:], answered=answers, sdk_version=sdk)
        frames = await frames_of(stream, continued(pay, paused.messages, answers))
        out.append({"name": name, "sdk": sdk, "frames": frames, "message": turn})
        done = await pay.run_with_deferred_results(paused.messages, answers)
        histories.append((*paused.messages, *done.new_messages))
    return out, histories


@pytest.fixture
def server(tmp_path: Path) -> Iterator[WebChatServer]:
    served = serve_web_chat(tmp_path / "chat.db", delay=0.01)
    yield served
    served.close()


def resumed_stream(server: WebChatServer) -> list[str]:
    """The replay a reconnect gets mid-run (``GET .../stream``, no ``Last-Event-ID``)."""
    client = httpx.Client(base_url=server.url, timeout=30)
    client.get("/")
    cid = client.post("/api/conversations").json()["id"]
    body = {
        "id": cid,
        "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "long"}]}],
    }
    with client.stream("POST", "/api/chat", json=body) as r:
        for line in r.iter_lines():
            if line.startswith("data: ") and "text-delta" in line:
                break  # the browser dropped mid-answer
    with client.stream("GET", f"/api/chat/{cid}/stream") as r:
        assert r.status_code == 200
        return [line[6:] for line in r.iter_lines() if line.startswith("data: ")]


@pytest.mark.parametrize("sdk", [5, 6, 7])
async def test_the_ai_package_reads_every_stream_the_adapter_writes(
    sdk: Sdk, server: WebChatServer
) -> None:
    sdk_or_skip(sdk)
    written: Literal[5, 6] = 5 if sdk == 5 else 6  # AI SDK 6 and 7 read the same stream
    streams, histories = await adapter_streams(written)
    if sdk != 5:  # the example speaks the default stream
        streams.append({"name": "resume", "frames": resumed_stream(server)})
    for s in streams:
        s["sdk"] = sdk
    messages = [
        {"name": f"history{k}", "sdk": sdk, "messages": history_to_ui_messages(h, awaiting=aw)}
        for k, (h, aw) in enumerate(
            [(histories[0], ["call_pay"]), (histories[1], []), (histories[2], [])]
        )
    ]
    result = run_sdk(sdk, "check_streams.mjs", stdin={"streams": streams, "messages": messages})
    for checked in result["streams"]:
        where = f"{checked['name']} (ai {sdk})"
        assert checked["invalid"] == [], (where, checked["invalid"])
        assert checked["errors"] == [] or checked["name"] == "error", (where, checked["errors"])
        assert checked["messageInvalid"] is None, (where, checked["messageInvalid"])
    by = {c["name"]: c for c in result["streams"]}
    assert [c["name"] for c in result["streams"]] == [s["name"] for s in streams]
    assert by["text"]["message"]["parts"][-1]["text"] == "Hello there, friend."
    tool = by["tool"]["message"]["parts"]
    [call] = [p for p in tool if p["type"] == "tool-get_weather"]
    assert call["state"] == "output-available" and call["output"] == "sunny in Paris"
    assert len(by["error"]["errors"]) == 1
    assert by["error"]["errors"][0].startswith("the run failed (error id ")
    approved = by["approved"]["message"]["parts"]
    assert [p["state"] for p in approved if p["type"] == "tool-send_money"] == ["output-available"]
    denied = [
        p["state"] for p in by["denied"]["message"]["parts"] if p["type"] == "tool-send_money"
    ]
    if sdk == 5:  # AI SDK 5 has no approvals: a refusal is the call's error
        assert denied == ["output-error"]
    else:
        [asked] = [p for p in by["approval"]["message"]["parts"] if p["type"] == "tool-send_money"]
        assert asked["state"] == "approval-requested"
        assert denied == ["output-denied"]
        resume = by["resume"]["message"]
        text = "".join(p["text"] for p in resume["parts"] if p["type"] == "text")
        assert text.startswith("word1 ") and text.endswith("word60.")
        assert text.count("word7 ") == 1
    for checked in result["messages"]:  # rendered histories are valid UIMessages
        assert checked["invalid"] is None, checked
