"""A fake OpenAI Chat Completions server on 127.0.0.1, standard library only.

Owns a scripted model behind ``POST /v1/chat/completions`` for the guide "Drive the loop
yourself" (``examples/drive_the_loop.py``, ``tests/test_embedding_guide.py``): it plays a
``plan`` of tool calls, one a request, chosen by how many ``tool`` messages the request
carries (none: the first call; one: the second; ...), then answers in text quoting every
tool result it was sent, so a test sees the results went back to the model. Every request
body is kept in ``requests``. A request it cannot read gets a 400 in OpenAI's error shape,
a path it does not serve a 404; it never streams (``"stream": true`` is a 400).

Run it on its own for the example::

    python tests/fake_openai_server.py          # prints its base URL, serves until Ctrl-C
    python examples/drive_the_loop.py --base-url <that URL>
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PLAN: tuple[tuple[str, dict[str, Any]], ...] = (
    ("balance", {"account": "checking"}),
    ("transfer", {"to": "landlord", "amount": 950}),
)
"""The example's plan: read the balance, then pay the rent (a call that needs approval)."""


class FakeOpenAI:
    """A running fake server: ``base_url`` to point a client at, ``requests`` it received,
    ``close()`` to stop it (also a context manager)."""

    def __init__(self, plan: Sequence[tuple[str, dict[str, Any]]] = PLAN, port: int = 0) -> None:
        self.plan = tuple(plan)
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if self.path != "/v1/chat/completions":
                    self._send(404, _error(f"no route {self.path}", "not_found"))
                    return
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length))
                    status, reply = fake.answer(body)
                except (ValueError, TypeError, KeyError) as e:
                    status, reply = 400, _error(f"bad request: {e}", "invalid_request_error")
                self._send(status, reply)

            def _send(self, status: int, reply: dict[str, Any]) -> None:
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: a test reads ``requests``

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        host, bound = self._server.server_address[:2]
        self.base_url = f"http://{host!s}:{bound}/v1"

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and response body for one request body (recorded)."""
        if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
            return 400, _error(
                "a request needs 'model' (a string) and 'messages' (a list)",
                "invalid_request_error",
            )
        if body.get("stream"):
            return 400, _error("this fake server does not stream", "invalid_request_error")
        self.requests.append(body)
        results = [m for m in body["messages"] if m["role"] == "tool"]
        step = len(results)
        if step < len(self.plan):
            name, arguments = self.plan[step]
            call = {
                "id": f"call_{step + 1}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            said = "; ".join(str(m["content"]) for m in results)
            message = {"role": "assistant", "content": f"Done. The tools said: {said}"}
            finish = "stop"
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10 * len(body["messages"]), "completion_tokens": 7},
        }

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = FakeOpenAI(port=port)
    print(server.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.close()
