"""Reading a whole HTTP request body in the ASGI test servers (the loopback model
servers of ``durable_server.py`` and ``provider_server.py``, the balancer of
``web_chat_server.py``), once."""

from __future__ import annotations

from typing import Any

__all__ = ["read_body"]


async def read_body(receive: Any) -> bytes:
    """The request's body: every ``http.request`` message's bytes until no more follow."""
    body = b""
    while True:
        message = await receive()
        chunk: bytes = message.get("body", b"")
        body += chunk
        if not message.get("more_body"):
            return body
