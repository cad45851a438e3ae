"""The soak's simulated users: async HTTP clients speaking the UI message stream as
``useChat`` does, each keeping the oracle log the invariants are checked against.

Owns ``User`` (one person: a cookie, conversations of many turns) and ``Oracle`` (what
every client saw: each prompt sent and whether the server acknowledged it, each turn's
latency, each stream's frame numbers, each isolation probe).

A turn, as the page does it (docs/web-chat.md): ``POST /api/chat`` with the conversation
as the page holds it plus the new message; a 200 is the acknowledgement (the server
stores the person's message before its stream opens); the client reads the SSE frames,
and when the connection drops it resumes with ``GET /api/chat/{id}/stream`` and
``Last-Event-ID`` (another process may answer it: the balancer picks one), until
``[DONE]`` or a 204 (finished: the store has it all). A POST that got no answer is not
acknowledged: the client reloads the conversation and, if its message is there after
all, resumes its stream, else sends it again. Turns: text (``say <n> words``), a tool
call (``weather``), a transfer the user approves (``pay``), and, where the turn runs in
the process that took it (``plain``), a steering message sent while a long answer
streams (a 202 acknowledges it; a 409 means another process writes the turn: the
message is sent again as the next turn). Every prompt carries a tag unique in the soak.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.soak_model import model_seconds

__all__ = ["Oracle", "User"]

RETRYABLE = (httpx.TransportError, httpx.HTTPStatusError)
SLOW_RESUME = 15.0


def _text(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")


@dataclass
class Oracle:
    """What the clients saw, for the invariants: shared by every user of one run."""

    prompts: list[dict[str, Any]] = field(default_factory=list)  # uid cid tag text acked kind
    turns: list[dict[str, Any]] = field(default_factory=list)  # kind latency model resumes
    frame_faults: list[str] = field(default_factory=list)
    isolation_faults: list[str] = field(default_factory=list)
    isolation_probes: int = 0
    slow_resumes: list[str] = field(default_factory=list)  # a stored turn resumed slowly
    conversations: list[tuple[str, str]] = field(default_factory=list)  # (uid, cid)
    errors: list[str] = field(default_factory=list)  # client-side surprises (not invariants)


def _user_message(text: str) -> dict[str, Any]:
    return {
        "id": f"u-{random.getrandbits(40):x}",
        "role": "user",
        "parts": [{"type": "text", "text": text}],
    }


class Stream:
    """One turn's stream as the client reads it: frames by number, resumed after a drop."""

    def __init__(self, user: User, cid: str, name: str) -> None:
        self.user, self.cid, self.name = user, cid, name
        self.last = 0
        self.chunks: list[dict[str, Any]] = []
        self.done = False
        self.resumes = 0
        self.dropped_at: float | None = None  # when the first connection was lost

    def _frame(self, n: int, data: str) -> None:
        if n != self.last + 1:
            kind = "twice" if n <= self.last else "skipped"
            self.user.oracle.frame_faults.append(
                f"{self.name}: frame {n} after {self.last} ({kind}) in {self.cid}"
            )
        self.last = max(self.last, n)
        if data == "[DONE]":
            self.done = True
        else:
            self.chunks.append(json.loads(data))

    async def read(self, response: httpx.Response) -> None:
        event: int | None = None
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                event = int(line[4:])
            elif line.startswith("data: "):
                if event is None:
                    self.user.oracle.frame_faults.append(f"{self.name}: a frame without id")
                    continue
                self._frame(event, line[6:])

    async def follow(self, response: httpx.Response | None) -> None:
        """Read ``response`` (if any), then resume until ``[DONE]`` or a 204."""
        http = self.user.http
        deadline = time.monotonic() + self.user.turn_timeout
        while True:
            if response is not None:
                try:
                    await self.read(response)
                except RETRYABLE:
                    pass
                finally:
                    await response.aclose()
                if self.done:
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: no end of stream in {self.cid}")
            if self.dropped_at is None:
                self.dropped_at = time.monotonic()
            self.resumes += 1
            headers = {"Last-Event-ID": str(self.last)}
            try:
                request = http.build_request("GET", f"/api/chat/{self.cid}/stream", headers=headers)
                response = await http.send(request, stream=True)
            except RETRYABLE:
                response = None
                await asyncio.sleep(0.2)
                continue
            if response.status_code == 204:
                await response.aclose()
                return  # finished: the store has it all
            if response.status_code != 200:
                await response.aclose()
                response = None
                await asyncio.sleep(0.3)


class User:
    """One person: a cookie (from ``GET /``) and conversations of ``turns`` turns."""

    def __init__(
        self,
        name: str,
        url: str,
        oracle: Oracle,
        *,
        steering: bool,
        turn_timeout: float = 120,
        think: float = 0.3,
    ) -> None:
        self.name, self.url, self.oracle = name, url, oracle
        self.steering = steering
        self.turn_timeout = turn_timeout
        self.think = think
        self.http = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(60, connect=5))
        self.uid = ""
        self.count = 0

    async def open(self) -> None:
        while True:
            try:
                await self.http.get("/")
                self.uid = self.http.cookies["uid"]
                return
            except (*RETRYABLE, KeyError):
                await asyncio.sleep(0.3)

    async def close(self) -> None:
        await self.http.aclose()

    def _tag(self) -> str:
        self.count += 1
        return f"[{self.name}-{self.count}]"

    async def _view(self, cid: str) -> dict[str, Any]:
        while True:
            try:
                r = await self.http.get(f"/api/conversations/{cid}")
                if r.status_code == 200:
                    return r.json()  # type: ignore[no-any-return]
            except RETRYABLE:
                pass
            await asyncio.sleep(0.3)

    async def _stored_texts(self, cid: str) -> list[str]:
        view = await self._view(cid)
        return [
            p.get("text", "")
            for m in view["messages"]
            if m["role"] == "user"
            for p in m["parts"]
            if p.get("type") == "text"
        ]

    # -- one turn --------------------------------------------------------------------------

    async def _post(self, cid: str, messages: list[dict[str, Any]]) -> httpx.Response:
        body = {"id": cid, "messages": messages}
        request = self.http.build_request("POST", "/api/chat", json=body)
        return await self.http.send(request, stream=True)

    async def turn(self, cid: str, kind: str, text: str, model_s: float | None) -> Stream:
        """Send ``text`` as the conversation's next message and read its turn to the end."""
        record = {"uid": self.uid, "cid": cid, "text": text, "acked": False, "kind": kind}
        self.oracle.prompts.append(record)
        start = time.monotonic()
        stream = Stream(self, cid, f"{self.name}/{kind}")
        while True:
            if time.monotonic() - start > self.turn_timeout:
                raise TimeoutError(f"{self.name}: {kind} not accepted in {cid}")
            view = await self._view(cid)
            if view.get("live"):  # a turn still streams (a resumed one): follow it first
                await Stream(self, cid, f"{self.name}/pending").follow(None)
                continue
            shown = view["messages"]
            if any(text in t for t in await self._stored_texts(cid)):
                record["stored_unacked"] = True  # sent, unanswered, yet stored: resume it
                await stream.follow(None)
                break
            try:
                response = await self._post(cid, [*shown, _user_message(text)])
            except RETRYABLE:
                await asyncio.sleep(0.3)
                continue
            if response.status_code == 200:
                record["acked"] = True
                await stream.follow(response)
                break
            await response.aread()
            await response.aclose()
            await asyncio.sleep(0.3 if response.status_code >= 500 else 0.1)
        self._record(kind, start, model_s, stream)
        await self._resumed_in_time(cid, text, stream)
        return stream

    async def _resumed_in_time(self, cid: str, text: str, stream: Stream) -> None:
        """A turn stored before its stream dropped must not keep a resuming client
        waiting for the stale limit (``SLOW_RESUME`` s; checked where turns run in the
        process that took them: a durable turn waits for its worker, legitimately)."""
        if self.steering is False or stream.dropped_at is None:
            return
        waited = time.monotonic() - stream.dropped_at
        if waited < SLOW_RESUME:
            return
        view = await self._view(cid)
        roles = [(m["role"], _text(m)) for m in view["messages"]]
        at = next((i for i, (r, t) in enumerate(roles) if r == "user" and text in t), None)
        if at is not None and any(r == "assistant" for r, _ in roles[at + 1 : at + 2]):
            self.oracle.slow_resumes.append(
                f"{cid}: {text!r} was answered and stored, its resume took {waited:.0f} s"
            )

    def _record(self, kind: str, start: float, model_s: float | None, stream: Stream) -> None:
        failed = any(c.get("type") == "error" for c in stream.chunks)
        self.oracle.turns.append(
            {
                "kind": kind,
                "latency_s": time.monotonic() - start,
                "model_s": model_s,
                "resumes": stream.resumes,
                "done": stream.done,
                "failed": failed,
            }
        )

    async def approve(self, cid: str, first: Stream) -> None:
        """Approve the transfer the turn ``first`` asks about (as the page's button)."""
        start = time.monotonic()
        while True:
            view = await self._view(cid)
            shown = view["messages"]
            chunks = [*first.chunks, *view.get("paused", [])]
            asks = [c for c in chunks if c.get("type") == "tool-approval-request"]
            waiting = [
                p
                for p in (shown[-1]["parts"] if shown and shown[-1]["role"] == "assistant" else [])
                if p.get("state") == "approval-requested"
            ]
            if waiting:  # the store holds the call (a turn in this process): answer there
                part = waiting[0]
                part["state"] = "approval-responded"
                part["approval"] = {"id": part["toolCallId"], "approved": True}
                messages = shown
            elif asks and view.get("paused"):  # a durable run waits: its stream named it
                started = next(c for c in chunks if c.get("type") == "start")
                call = asks[-1]["toolCallId"]
                inputs = [c for c in chunks if c.get("toolCallId") == call and "input" in c]
                part = {
                    "type": "tool-send_money",
                    "toolCallId": call,
                    "state": "approval-responded",
                    "input": inputs[-1]["input"] if inputs else {},
                    "approval": {"id": call, "approved": True},
                }
                message = {"id": started["messageId"], "role": "assistant", "parts": [part]}
                messages = [*shown, message]
            else:
                return  # nothing waits (the turn failed, or was answered already)
            try:
                response = await self._post(cid, messages)
            except RETRYABLE:
                await asyncio.sleep(0.3)
                continue
            if response.status_code == 200:
                stream = Stream(self, cid, f"{self.name}/approve")
                await stream.follow(response)
                self._record("approve", start, model_seconds(7), stream)
                return
            await response.aread()
            await response.aclose()
            if time.monotonic() - start > self.turn_timeout:
                raise TimeoutError(f"{self.name}: approval not accepted in {cid}")
            await asyncio.sleep(0.3)

    async def steer_turn(self, cid: str) -> None:
        """A long answer, and a message sent while it streams (steering)."""
        long_text = f"say 60 words {self._tag()}"
        record = {"uid": self.uid, "cid": cid, "text": long_text, "acked": False, "kind": "long"}
        self.oracle.prompts.append(record)
        view = await self._view(cid)
        if view.get("live"):
            return
        try:
            response = await self._post(cid, [*view["messages"], _user_message(long_text)])
        except RETRYABLE:
            return  # the next turn's reload finds it (or not)
        if response.status_code != 200:
            await response.aclose()
            return
        record["acked"] = True
        start = time.monotonic()
        stream = Stream(self, cid, f"{self.name}/long")
        reader = asyncio.ensure_future(stream.follow(response))
        await asyncio.sleep(0.5)
        steer = f"say 3 words {self._tag()} (steering)"
        sent = {"uid": self.uid, "cid": cid, "text": steer, "acked": False, "kind": "steer"}
        prior = [*view["messages"], _user_message(long_text), _user_message(steer)]
        try:
            r = await self.http.post("/api/chat", json={"id": cid, "messages": prior})
            if r.status_code == 202:
                sent["acked"] = True
                self.oracle.prompts.append(sent)
        except RETRYABLE:
            pass
        await reader
        self._record("long", start, None, stream)
        if not sent["acked"]:  # another process writes the turn: send it as the next one
            await self.turn(cid, "text", steer, None)

    # -- a conversation ---------------------------------------------------------------------

    async def conversation(self, turns: int, stop: asyncio.Event) -> None:
        cid = f"c{random.getrandbits(64):016x}"
        self.oracle.conversations.append((self.uid, cid))
        kinds = ["text", "weather", "pay", "text"] + (["steer"] if self.steering else [])
        for k in range(turns):
            if stop.is_set():
                return
            kind = kinds[k % len(kinds)]
            try:
                if kind == "text":
                    n = random.choice((6, 12, 24))
                    await self.turn(cid, kind, f"say {n} words {self._tag()}", model_seconds(n))
                elif kind == "weather":
                    text = f"weather {random.choice(('Paris', 'Oslo', 'Lima'))} {self._tag()}"
                    await self.turn(cid, kind, text, model_seconds(2) + model_seconds(8))
                elif kind == "pay":
                    first = await self.turn(cid, kind, f"pay bob 7 {self._tag()}", model_seconds(1))
                    await self.approve(cid, first)
                else:
                    await self.steer_turn(cid)
            except TimeoutError as e:
                self.oracle.errors.append(str(e))
                return
            await asyncio.sleep(random.uniform(0, 2 * self.think))

    async def probe(self, others: list[tuple[str, str]]) -> None:
        """Try to read other users' conversations: each must look empty or absent."""
        for uid, cid in others:
            if uid == self.uid:
                continue
            self.oracle.isolation_probes += 1
            try:
                r = await self.http.get(f"/api/conversations/{cid}")
                if r.status_code == 200 and r.json().get("messages"):
                    self.oracle.isolation_faults.append(f"{self.uid} read {uid}'s {cid}")
                s = await self.http.get(f"/api/chat/{cid}/stream")
                if s.status_code == 200:
                    self.oracle.isolation_faults.append(f"{self.uid} streamed {uid}'s {cid}")
                listed = {c["id"] for c in (await self.http.get("/api/conversations")).json()}
                if cid in listed:
                    self.oracle.isolation_faults.append(f"{self.uid} lists {uid}'s {cid}")
            except RETRYABLE as e:
                self.oracle.errors.append(f"probe: {e!r}")
