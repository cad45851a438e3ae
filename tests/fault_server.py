"""A fault-injecting loopback provider: OpenAI Chat Completions and Anthropic Messages.

``FaultServer`` is a small HTTP/1.1 server written on raw asyncio streams (not an ASGI
app: a fault such as a TCP reset halfway through a body needs the socket itself). It
listens on 127.0.0.1 only, runs its own event loop in a daemon thread, answers at most
``max_requests`` requests, and stops by itself after ``max_seconds``; every stall it
plays is bounded and ends early when the server stops.

It plays a deterministic tool-using model whose answer depends only on the request body
(so a retried or resumed request gets the same answer):

- the number of assistant turns ``A`` in the conversation picks the turn: while
  ``A < tool_turns`` the model calls ``lookup`` ``calls_per_turn`` times, with call ids
  ``call_<A>_<j>_<tag>`` (``<tag>``: a short hash of the first user prompt, so two runs
  never share an id); then it answers ``done: <first user prompt> after <A> turns``;
- a body with ``"stream": true`` is answered as a provider's event stream, else as JSON.

Faults are planned per scenario: the agent's instructions carry ``scenario=<name>``, and
each request of that scenario takes the next planned ``Fault`` (a healthy answer once the
plan is used up). ``plan("s", Fault.status(500), Fault.status(500))`` is "a valid answer
after two failures". Every request is recorded (``exchanges``): its body, headers,
scenario, the fault played, the healthy answer sent, and whether the response was
written in full.

Usable from any thread or event loop::

    with FaultServer() as server:
        server.plan("s1", Fault.reset_mid())
        model = OpenAIModel("m", api_key="k", base_url=server.openai_base_url)

and as the pytest fixture ``fault_server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from attrs import define, frozen
from provider_server import fixture_bytes

__all__ = [
    "Answer",
    "Call",
    "Exchange",
    "Fault",
    "FaultServer",
    "Provider",
    "fault_server_fixture",
    "first_user_text",
    "system_text",
]

Provider = Literal["openai", "anthropic"]
FaultKind = Literal[
    "healthy",
    "status",
    "stall_before",
    "stall_mid",
    "reset_before",
    "reset_mid",
    "cut_mid",
    "malformed_json",
    "malformed_sse",
    "wrong_content_type",
    "huge_body",
    "slow_stream",
]

_SCENARIO = re.compile(r"scenario=(\S+)")
_MIB = 1024 * 1024


@frozen
class Fault:
    """One misbehaviour, played instead of (or around) a healthy answer.

    Build them with the classmethods; ``seconds`` bounds every stall, ``size`` is the
    body size of ``huge_body``, ``headers`` and ``body`` override a status reply's.
    """

    kind: FaultKind
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    seconds: float = 0.0
    size: int = 0

    @classmethod
    def healthy(cls) -> Fault:
        """No fault: the healthy answer (a placeholder in a plan)."""
        return cls("healthy")

    @classmethod
    def status_code(
        cls,
        status: int,
        *,
        retry_after: str | None = None,
        retry_after_ms: str | None = None,
        body: bytes | None = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> Fault:
        """An error status with the provider's own error body (or ``body``)."""
        extra = list(headers)
        if retry_after is not None:
            extra.append(("retry-after", retry_after))
        if retry_after_ms is not None:
            extra.append(("retry-after-ms", retry_after_ms))
        return cls("status", status=status, headers=tuple(extra), body=body)

    @classmethod
    def stall_before(cls, seconds: float = 2.0) -> Fault:
        """Read the request, then send nothing for ``seconds``."""
        return cls("stall_before", seconds=seconds)

    @classmethod
    def stall_mid(cls, seconds: float = 2.0) -> Fault:
        """Send the head and the first half of the answer, then nothing for ``seconds``."""
        return cls("stall_mid", seconds=seconds)

    @classmethod
    def reset_before(cls) -> Fault:
        """Read the request, then reset the connection (TCP RST) before any byte."""
        return cls("reset_before")

    @classmethod
    def reset_mid(cls) -> Fault:
        """Send the head and the first half of the answer, then reset the connection."""
        return cls("reset_mid")

    @classmethod
    def cut_mid(cls) -> Fault:
        """Send the head and the first half of the answer, then close the connection."""
        return cls("cut_mid")

    @classmethod
    def malformed_json(cls) -> Fault:
        """A 200 JSON answer (or event data) that is not JSON."""
        return cls("malformed_json")

    @classmethod
    def malformed_sse(cls) -> Fault:
        """A 200 event stream whose events cannot be read."""
        return cls("malformed_sse")

    @classmethod
    def wrong_content_type(cls) -> Fault:
        """A 200 HTML page where JSON or an event stream belongs."""
        return cls("wrong_content_type")

    @classmethod
    def huge_body(cls, size: int = 40 * _MIB) -> Fault:
        """A 200 answer of ``size`` bytes (JSON padding, or SSE comment lines)."""
        return cls("huge_body", size=size)

    @classmethod
    def slow_stream(cls, seconds: float = 0.01) -> Fault:
        """The healthy answer, each piece ``seconds`` after the previous one."""
        return cls("slow_stream", seconds=seconds)


@frozen
class Call:
    """A tool call the model makes."""

    id: str
    name: str
    arguments: str


@frozen
class Answer:
    """A healthy answer: tool calls, or a final text."""

    turn: int
    calls: tuple[Call, ...] = ()
    text: str | None = None


@define
class Exchange:
    """One request the server received and what it did with it."""

    seq: int
    provider: Provider | None
    path: str
    headers: dict[str, str]
    body: bytes
    scenario: str | None
    stream: bool
    fault: Fault | None = None
    answer: Answer | None = None
    delivered: bool = False  # the whole response was written

    def json(self) -> Any:
        return json.loads(self.body)


def system_text(provider: Provider, body: dict[str, Any]) -> str:
    """The instructions of a request body."""
    if provider == "anthropic":
        system = body.get("system")
        if isinstance(system, list):
            return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
        return system if isinstance(system, str) else ""
    texts = []
    for m in body.get("messages", []):
        if m.get("role") in ("system", "developer"):
            content = m.get("content")
            if isinstance(content, list):
                content = "\n".join(p.get("text", "") for p in content)
            texts.append(content or "")
    return "\n".join(texts)


def first_user_text(body: dict[str, Any]) -> str:
    """The text of the first user message of a request body (either provider)."""
    for m in body.get("messages", []):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        for block in content or []:
            if isinstance(block, dict) and block.get("type") == "text":
                return str(block.get("text", ""))
    return ""


def _assistant_turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


class FaultServer:
    """The fault-injecting provider; see the module docstring.

    Args:
        tool_turns: how many turns call tools before the final answer.
        calls_per_turn: calls per tool turn (parallel calls).
        max_requests: requests answered before the server stops by itself.
        max_seconds: seconds after which the server stops by itself.
        chunk_pause: seconds between two pieces of every streamed answer.
    """

    def __init__(
        self,
        *,
        tool_turns: int = 2,
        calls_per_turn: int = 2,
        max_requests: int = 20_000,
        max_seconds: float = 300.0,
        chunk_pause: float = 0.0,
    ) -> None:
        self.tool_turns = tool_turns
        self.calls_per_turn = calls_per_turn
        self.max_requests = max_requests
        self.max_seconds = max_seconds
        self.chunk_pause = chunk_pause
        self.exchanges: list[Exchange] = []
        self._plans: dict[str, list[Fault]] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.port = 0
        self.record_bodies = True

    # -- control (any thread) -------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def plan(self, scenario: str, *faults: Fault) -> None:
        """Queue faults for the next requests of ``scenario`` (healthy after them)."""
        with self._lock:
            self._plans.setdefault(scenario, []).extend(faults)

    def forget(self, scenario: str) -> None:
        """Drop the faults ``scenario`` has not used: it is healthy from now on."""
        with self._lock:
            self._plans.pop(scenario, None)

    def remaining(self, scenario: str) -> int:
        """How many planned faults ``scenario`` has not used yet."""
        with self._lock:
            return len(self._plans.get(scenario, ()))

    def of(self, scenario: str) -> list[Exchange]:
        """The exchanges of one scenario, in arrival order."""
        with self._lock:
            return [e for e in self.exchanges if e.scenario == scenario]

    def clear(self) -> None:
        with self._lock:
            self.exchanges.clear()
            self._plans.clear()

    def start(self) -> FaultServer:
        self._thread = threading.Thread(target=self._run, name="fault-server", daemon=True)
        self._thread.start()
        if not self._started.wait(10):  # pragma: no cover
            raise RuntimeError("the fault server did not start")
        if self._error is not None:  # pragma: no cover
            raise RuntimeError("the fault server failed to start") from self._error
        return self

    def stop(self) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the server (its own thread and loop) ----------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as e:  # pragma: no cover
            self._error = e
            self._started.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(
            self._connection, "127.0.0.1", 0, backlog=4096, limit=1 << 20
        )
        self.port = server.sockets[0].getsockname()[1]
        self._started.set()
        handlers = self._handlers
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), self.max_seconds)
        server.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or less if the server stops."""
        assert self._stop is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            keep_open = True
            while keep_open:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = [*lines[0].split(" ", 2), "", ""][:3]
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                keep_open = await self._answer(method, path, headers, body, writer)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        except asyncio.CancelledError:  # the server stops: end quietly
            pass
        finally:
            self._handlers.discard(task)
            if not writer.transport.is_closing():
                writer.transport.close()

    async def _answer(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
    ) -> bool:
        provider: Provider | None = None
        if path.endswith("/chat/completions"):
            provider = "openai"
        elif path.endswith("/v1/messages"):
            provider = "anthropic"
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        stream = bool(isinstance(payload, dict) and payload.get("stream"))
        scenario = None
        if provider is not None and isinstance(payload, dict):
            found = _SCENARIO.search(system_text(provider, payload))
            scenario = found.group(1) if found else None
        with self._lock:
            exchange = Exchange(
                len(self.exchanges) + 1,
                provider,
                path,
                headers,
                body if self.record_bodies else b"",
                scenario,
                stream,
            )
            self.exchanges.append(exchange)
            over = len(self.exchanges) > self.max_requests
            plan = self._plans.get(scenario or "")
            fault = plan.pop(0) if plan else None
        exchange.fault = fault
        if over:
            await self._write_full(writer, 503, "application/json", b'{"error":"over budget"}')
            assert self._stop is not None
            self._stop.set()
            return False
        if method != "POST" or provider is None or not isinstance(payload, dict):
            await self._write_full(writer, 404, "application/json", b'{"error":"not found"}')
            exchange.delivered = True
            return True
        answer = self._decide(payload)
        return await self._play(exchange, provider, payload, answer, fault, writer)

    def _decide(self, body: dict[str, Any]) -> Answer:
        turn = _assistant_turns(body)
        prompt = first_user_text(body)
        if turn >= self.tool_turns:
            return Answer(turn, text=f"done: {prompt} after {turn} turns")
        tag = hashlib.sha1(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        calls = tuple(
            Call(
                f"call_{turn}_{j}_{tag}",
                "lookup",
                json.dumps({"key": f"{prompt}/{turn}/{j}"}, separators=(",", ":")),
            )
            for j in range(self.calls_per_turn)
        )
        return Answer(turn, calls=calls)

    # -- playing an answer --------------------------------------------------------------

    async def _play(
        self,
        exchange: Exchange,
        provider: Provider,
        payload: dict[str, Any],
        answer: Answer,
        fault: Fault | None,
        writer: asyncio.StreamWriter,
    ) -> bool:
        kind = fault.kind if fault is not None and fault.kind != "healthy" else None
        if fault is not None and kind == "status":
            body = fault.body if fault.body is not None else _error_body(provider, fault.status)
            await self._write_full(
                writer, fault.status, "application/json", body, extra=fault.headers
            )
            exchange.delivered = True
            return True
        if kind == "stall_before":
            assert fault is not None
            await self._pause(fault.seconds)
            writer.transport.close()
            return False
        if kind == "reset_before":
            _reset(writer)
            return False
        if kind == "wrong_content_type":
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            await self._write_full(writer, 200, "text/html; charset=utf-8", page)
            exchange.delivered = True
            return True
        if kind == "huge_body":
            assert fault is not None
            await self._write_huge(writer, fault.size, stream=exchange.stream)
            exchange.delivered = True
            return True
        if exchange.stream:
            pieces = _sse(provider, answer, payload)
            content_type = "text/event-stream; charset=utf-8"
            if kind == "malformed_sse":
                pieces = [pieces[0], _malformed_event(provider), *pieces[1:]]
            elif kind == "malformed_json":
                pieces = [b"data: {this is not json\n\n"]
        else:
            whole = json.dumps(_json_answer(provider, answer, payload)).encode()
            content_type = "application/json"
            if kind in ("malformed_json", "malformed_sse"):
                whole = whole[: len(whole) // 2] + b"\x00<garbage"
            pieces = [whole[: len(whole) // 2], whole[len(whole) // 2 :]]
        pause = self.chunk_pause
        if fault is not None and kind == "slow_stream":
            pause = fault.seconds
        half = max(1, len(pieces) // 2)
        if exchange.stream:
            writer.write(_head(200, content_type, chunked=True))
            for i, piece in enumerate(pieces):
                if kind in ("stall_mid", "reset_mid", "cut_mid") and i == half:
                    await writer.drain()
                    return await self._break(writer, fault)
                if i and pause:
                    await writer.drain()
                    await self._pause(pause)
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            writer.write(b"0\r\n\r\n")
        else:
            total = sum(len(p) for p in pieces)
            writer.write(_head(200, content_type, length=total))
            for i, piece in enumerate(pieces):
                if kind in ("stall_mid", "reset_mid", "cut_mid") and i == 1:
                    await writer.drain()
                    return await self._break(writer, fault)
                if i and pause:
                    await writer.drain()
                    await self._pause(pause)
                writer.write(piece)
        await writer.drain()
        exchange.answer = answer if kind is None or kind == "slow_stream" else None
        exchange.delivered = True
        return True

    async def _break(self, writer: asyncio.StreamWriter, fault: Fault | None) -> bool:
        assert fault is not None
        if fault.kind == "stall_mid":
            await self._pause(fault.seconds)
            writer.transport.close()
        elif fault.kind == "reset_mid":
            _reset(writer)
        else:
            writer.transport.close()
        return False

    async def _write_full(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        content_type: str,
        body: bytes,
        *,
        extra: tuple[tuple[str, str], ...] = (),
    ) -> None:
        writer.write(_head(status, content_type, length=len(body), extra=extra) + body)
        await writer.drain()

    async def _write_huge(self, writer: asyncio.StreamWriter, size: int, *, stream: bool) -> None:
        if stream:
            line = b": " + b"x" * (64 * 1024 - 3) + b"\n"
            content_type = "text/event-stream"
        else:
            line = b" " * (64 * 1024)  # JSON whitespace: the body is one padded object
            content_type = "application/json"
        writer.write(_head(200, content_type, length=size))
        head = b"" if stream else b'{"pad":1'
        writer.write(head)
        sent = len(head)
        tail = b"" if stream else b"}"
        written = 0
        while sent + len(line) + len(tail) <= size:
            writer.write(line)
            sent += len(line)
            written += 1
            if written % 16 == 0:
                await writer.drain()
        rest = size - sent - len(tail)
        writer.write((b" " if not stream else b"\n") * rest + tail)
        await writer.drain()


# -- wire bytes ---------------------------------------------------------------------------

_REASONS = {
    200: "OK",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


def _head(
    status: int,
    content_type: str,
    *,
    length: int | None = None,
    chunked: bool = False,
    extra: tuple[tuple[str, str], ...] = (),
) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", f"content-type: {content_type}"]
    if chunked:
        lines.append("transfer-encoding: chunked")
    elif length is not None:
        lines.append(f"content-length: {length}")
    lines.extend(f"{k}: {v}" for k, v in extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _error_body(provider: Provider, status: int) -> bytes:
    if provider == "openai":
        names = {
            429: "openai/error_429_rate_limit.json",
            401: "openai/error_401_invalid_key.json",
        }
        if status in names:
            return fixture_bytes(names[status])
        message = (
            "The server is overloaded or not ready yet."
            if status == 503
            else "The server had an error while processing your request. Sorry about that!"
        )
        return json.dumps(
            {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
        ).encode()
    names = {
        429: "anthropic/error_429_rate_limit.json",
        529: "anthropic/error_529_overloaded.json",
        401: "anthropic/error_401_authentication.json",
    }
    if status in names:
        return fixture_bytes(names[status])
    kind = "overloaded_error" if status == 503 else "api_error"
    return json.dumps(
        {"type": "error", "error": {"type": kind, "message": "Internal server error"}}
    ).encode()


def _usage_numbers(payload: dict[str, Any]) -> tuple[int, int]:
    return 10 + 3 * len(payload.get("messages", [])), 5


def _json_answer(provider: Provider, answer: Answer, payload: dict[str, Any]) -> dict[str, Any]:
    prompt_tokens, completion_tokens = _usage_numbers(payload)
    model = str(payload.get("model", "model"))
    if provider == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None}
        if answer.calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in answer.calls
            ]
        return {
            "id": f"chatcmpl-fault{answer.turn}",
            "object": "chat.completion",
            "created": 1745851067,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if answer.calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    content: list[dict[str, Any]] = []
    if answer.text is not None:
        content.append({"type": "text", "text": answer.text})
    for c in answer.calls:
        content.append(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments)}
        )
    return {
        "id": f"msg_fault{answer.turn}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if answer.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens},
    }


def _data(value: object) -> bytes:
    return b"data: " + json.dumps(value, separators=(",", ":")).encode() + b"\n\n"


def _event(name: str, value: object) -> bytes:
    return f"event: {name}\n".encode() + _data(value)


def _sse(provider: Provider, answer: Answer, payload: dict[str, Any]) -> list[bytes]:
    """The answer as the provider streams it: one piece per event."""
    prompt_tokens, completion_tokens = _usage_numbers(payload)
    model = str(payload.get("model", "model"))
    if provider == "openai":
        base = {
            "id": f"chatcmpl-fault{answer.turn}",
            "object": "chat.completion.chunk",
            "created": 1745851067,
            "model": model,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return _data({**base, "choices": [choice], "usage": None})

        pieces = [chunk({"role": "assistant", "content": "" if answer.text else None})]
        if answer.text is not None:
            words = answer.text.split(" ")
            for i, word in enumerate(words):
                pieces.append(chunk({"content": word if i == 0 else " " + word}))
        for index, c in enumerate(answer.calls):
            head = {
                "index": index,
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": ""},
            }
            pieces.append(chunk({"tool_calls": [head]}))
            half = len(c.arguments) // 2
            for part in (c.arguments[:half], c.arguments[half:]):
                pieces.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
                )
        pieces.append(chunk({}, "tool_calls" if answer.calls else "stop"))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        pieces.append(_data({**base, "choices": [], "usage": usage}))
        pieces.append(b"data: [DONE]\n\n")
        return pieces
    pieces = [
        _event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_fault{answer.turn}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": prompt_tokens, "output_tokens": 1},
                },
            },
        )
    ]
    index = 0
    if answer.text is not None:
        pieces.append(
            _event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        for i, word in enumerate(answer.text.split(" ")):
            delta = {"type": "text_delta", "text": word if i == 0 else " " + word}
            pieces.append(
                _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                )
            )
        pieces.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    for c in answer.calls:
        block = {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}
        pieces.append(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        half = len(c.arguments) // 2
        for part in (c.arguments[:half], c.arguments[half:]):
            delta = {"type": "input_json_delta", "partial_json": part}
            pieces.append(
                _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        pieces.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    pieces.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if answer.calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": completion_tokens},
            },
        )
    )
    pieces.append(_event("message_stop", {"type": "message_stop"}))
    return pieces


def _malformed_event(provider: Provider) -> bytes:
    if provider == "openai":
        return b'data: {"id":"chatcmpl-x","choices":[{"index":0,"delta":{"content":\n\n'
    return b'event: content_block_delta\ndata: {"type":"content_block_delta","index":\n\n'


# -- pytest ----------------------------------------------------------------------------------


@pytest.fixture(name="fault_server")
def fault_server_fixture() -> Iterator[FaultServer]:
    """A running ``FaultServer`` for one test (stopped, with its stalls, afterwards)."""
    server = FaultServer(max_seconds=120.0)
    with server:
        yield server
