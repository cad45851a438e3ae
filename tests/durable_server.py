"""A loopback OpenAI-compatible model server for the durable-run tests: counts, blocks.

Every conversation it sees follows one script, keyed by the text of its first user
message (the run's label): request 1 calls the tool ``step`` with ``{"n": 1}``, request 2
calls it with ``{"n": 2}``, request 3 answers ``"finished <label>: <last tool result>"``.
The request number is the number of assistant messages in the request plus one, so a
resumed run that repeats a request is answered the same way (and counted again).

``counts[(label, j)]`` is how many times request ``j`` of ``label`` arrived, and
``models[(label, j)]`` which models it asked for, in order; ``block``
holds ``(label, j)`` pairs whose requests hang (until ``release()``), for killing a
worker with a request in flight; ``delay`` slows every answer; ``max_inflight`` is the
most requests ever in flight at once. It runs with uvicorn in a thread on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from asgi_body import read_body


class DurableModelServer:
    """The scripted server: ``url``, ``counts``, ``block``, ``release()``."""

    def __init__(self) -> None:
        self.url = ""
        self.counts: Counter[tuple[str, int]] = Counter()
        self.models: dict[tuple[str, int], list[str]] = {}
        self.block: set[tuple[str, int]] = set()
        self.delay = 0.0
        self.inflight = 0
        self.max_inflight = 0
        self._released = threading.Event()
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()
            self.models.clear()
            self.block.clear()
            self.delay = 0.0
            self.inflight = 0
            self.max_inflight = 0
            self._released.clear()

    def release(self) -> None:
        """Stop blocking: hung requests end and new ones are answered."""
        with self._lock:
            self.block.clear()
        self._released.set()

    def arrived(self, label: str, request: int) -> bool:
        with self._lock:
            return self.counts[(label, request)] > 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        request = json.loads(body)
        messages = request["messages"]
        label = next(str(m["content"]) for m in messages if m["role"] == "user")
        number = 1 + sum(1 for m in messages if m["role"] == "assistant")
        with self._lock:
            self.counts[(label, number)] += 1
            self.models.setdefault((label, number), []).append(str(request.get("model")))
            blocked = (label, number) in self.block
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            while blocked and not self._released.is_set():
                await asyncio.sleep(0.02)
            if blocked:
                status, answer = 503, {"error": {"message": "blocked request released"}}
            else:
                if self.delay:
                    await asyncio.sleep(self.delay)
                status, answer = 200, _answer(label, number, messages)
        finally:
            with self._lock:
                self.inflight -= 1
        raw = json.dumps(answer).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": raw})


def _answer(label: str, number: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
    if number <= 2:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{number}",
                    "type": "function",
                    "function": {"name": "step", "arguments": json.dumps({"n": number})},
                }
            ],
        }
        finish = "tool_calls"
    else:
        last = next(m for m in reversed(messages) if m["role"] == "tool")
        message = {"role": "assistant", "content": f"finished {label}: {last['content']}"}
        finish = "stop"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": "durable-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 10 * number,
            "completion_tokens": 5,
            "total_tokens": 10 * number + 5,
        },
    }


@contextmanager
def running_server() -> Iterator[DurableModelServer]:
    """Start the server on a free port of 127.0.0.1; stop it at the end."""
    app = DurableModelServer()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", log_level="critical", access_log=False, http="h11")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:  # pragma: no cover
            raise RuntimeError("the durable model server did not start")
        time.sleep(0.01)
    app.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield app
    finally:
        app.release()
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()
