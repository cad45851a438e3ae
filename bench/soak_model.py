"""The soak's model: one scripted OpenAI-compatible server with realistic latency.

Owns ``POST /v1/chat/completions`` (streamed with ``"stream": true``, else whole) for
``bench.soak``: every answer is chosen by the newest user (or tool) message, so a
request sent again (a durable step performed again after a crash) gets the same answer
and the same call ids. The script, by the text of the person's message:

- ``weather <city> [tag]``: "Let me check." then a ``get_weather`` call;
- ``pay <to> <cents> [tag]``: a ``send_money`` call (the app asks a person to approve);
- ``say <n> words [tag]`` (or anything else): ``n`` words (default 8);
- after a tool result: "The <tool> tool says: <result>." word by word.

Call ids are ``call_`` and a digest of the message the call answers (unique per
prompt: the clients tag every prompt). Latency: ``FIRST`` seconds to the first chunk,
then ``CHUNK`` seconds a chunk; ``model_seconds`` is what one request costs, so a client
can subtract the model's own time from a turn's.

    python -m bench.soak_model PORT        # serves on 127.0.0.1:PORT until killed
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["CHUNK", "FIRST", "answer_chunks", "main", "model_seconds", "words_of"]

FIRST = 0.12
"""Seconds to the first chunk of every request (the model 'thinking')."""
CHUNK = 0.025
"""Seconds between chunks."""


def words_of(text: str) -> int:
    """How many words ``say <n> words`` asks for (8 when it asks for no number)."""
    match = re.match(r"\s*say (\d+) words", text)
    return min(int(match.group(1)), 400) if match else 8


def _last_content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def answer_chunks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The script: the deltas (``{"content": ...}`` or ``{"tool_calls": [...]}``) that
    answer ``messages``, in order."""
    last = messages[-1] if messages else {"role": "user", "content": ""}
    text = _last_content(last)
    if last.get("role") == "tool":
        return [{"content": w + " "} for w in f"The tool says: {text}.".split()]
    digest = hashlib.sha256(json.dumps(messages[-1], sort_keys=True).encode()).hexdigest()
    call_id = "call_" + digest[:20]
    lower = text.lower().strip()
    if lower.startswith("weather"):
        city = [*text.split(), "Paris", "Paris"][1]
        args = json.dumps({"city": city})
        return [
            {"content": "Let me check. "},
            {"tool_calls": [_call(call_id, "get_weather", args)]},
        ]
    if lower.startswith("pay"):
        words = text.split()
        to = words[1] if len(words) > 1 else "landlord"
        cents = int(words[2]) if len(words) > 2 and words[2].isdigit() else 100
        args = json.dumps({"to": to, "cents": cents})
        return [{"tool_calls": [_call(call_id, "send_money", args)]}]
    n = words_of(lower)
    return [{"content": f"w{k}{'.' if k == n else ' '}"} for k in range(1, n + 1)]


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def model_seconds(chunks: int) -> float:
    """What a request of ``chunks`` chunks costs at the script's pace."""
    return FIRST + CHUNK * max(chunks - 1, 0)


async def _sse(body: dict[str, Any]) -> AsyncIterator[bytes]:
    chunks = answer_chunks(body.get("messages") or [])
    made = int(time.time())
    name = str(body.get("model", "scripted"))

    def frame(delta: dict[str, Any], finish: str | None, **extra: Any) -> bytes:
        data = {
            "id": "chatcmpl-soak",
            "object": "chat.completion.chunk",
            "created": made,
            "model": name,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    await asyncio.sleep(FIRST)
    for k, delta in enumerate(chunks):
        if k:
            await asyncio.sleep(CHUNK)
        yield frame({"role": "assistant", **delta} if k == 0 else delta, None)
    finish = "tool_calls" if any("tool_calls" in c for c in chunks) else "stop"
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": len(chunks),
        "total_tokens": 10 + len(chunks),
    }
    yield frame({}, finish, usage=usage)
    yield b"data: [DONE]\n\n"


async def _whole(body: dict[str, Any]) -> dict[str, Any]:
    chunks = answer_chunks(body.get("messages") or [])
    await asyncio.sleep(model_seconds(len(chunks)))
    calls = [c["tool_calls"][0] for c in chunks if "tool_calls" in c]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(c.get("content", "") for c in chunks) or None,
    }
    if calls:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
    return {
        "id": "chatcmpl-soak",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "scripted")),
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": len(chunks), "total_tokens": 10},
    }


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The ASGI app: the scripted completions, 404 elsewhere."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    if scope["path"] != "/v1/chat/completions" or scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
        return
    request = json.loads(body or b"{}")
    if not request.get("stream"):  # the whole answer at once, after the same time
        data = json.dumps(await _whole(request)).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": data})
        return
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    async for data in _sse(request):
        await send({"type": "http.response.body", "body": data, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def main() -> None:
    import uvicorn

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
