"""Chat in the browser: golem behind the Vercel AI SDK UI message stream (and AG-UI).

    python -m pip install -e '.[ui]' && python examples/web_chat/app.py
    # then open http://127.0.0.1:8000 (offline model, no key)
    OPENAI_API_KEY=sk-... python examples/web_chat/app.py    # a real model (OPENAI_MODEL)

    # a real deployment: durable runs (DBOS), two server processes, one store
    python examples/web_chat/app.py --durable --worker a --port 8000 &
    python examples/web_chat/app.py --durable --worker b --port 8001 &

One page of plain HTML and JavaScript (``index.html``, no build step) speaks the UI
message stream to ``POST /api/chat``. Conversations live in a SQLite store (or
PostgreSQL: ``--db postgresql://...``), owned by the browser's ``uid`` cookie; each
turn's stream is written to the same database as it is made (``StoredRuns``), so a
reload, another server process or a restarted one resumes it (``GET
/api/chat/{id}/stream`` with ``Last-Event-ID``). With ``--durable`` each turn is a
DBOS workflow (``DurableAgent``): a server killed mid-turn resumes the run when it
restarts, and the browser's stream goes on from where it was. Editing a message
regenerates from there on a branch (a fork of the conversation). A message sent while
a turn streams steers it (ADR 0094): ``POST /api/chat`` answers 202 ``{"steered": true}``,
the run takes the message at its next safe point and the stream reports it
(``data-steered``); one that comes after the run's last look starts the turn's next
run in the same stream, or, once the turn has closed, a new turn. The server trusts its
store, never the client's copy of the history: of what a client posts it reads only
the newest message (a prompt, or approvals), sanitized. ``POST /agui`` serves the same
agent statelessly as AG-UI events: there the client holds the history, signatures
(``signing_key``) decide which calls may be approved, and the SQLite file remembers
which were answered, so a replayed snapshot never runs a call twice.

Over 600 lines because it is the whole example in one file that runs as it is: the
offline model, the routes, and the rules that place a client's list on a branch.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import os
import secrets
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from ag_ui.core import CustomEvent, RunAgentInput
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from golem_core import (
    Approved,
    DeferredAnswer,
    Message,
    ModelDelta,
    ModelRequest,
    Role,
    TextDelta,
    ToolCallDelta,
    history_from_jsonable,
    history_to_jsonable,
    signed_calls,
)
from golem_shell import (
    Agent,
    DeferredResultsError,
    FunctionModel,
    RunError,
    RunResult,
    SQLiteHistoryStore,
    Steering,
    UsageError,
    new_id,
    tool,
)
from golem_shell.store import (
    MAIN,
    HistoryConflict,
    HistoryNotFound,
    HistoryStoreError,
    PostgresHistoryStore,
    StreamLog,
    StreamRecord,
)
from golem_shell.ui import (
    DONE,
    UI_MESSAGE_STREAM_HEADERS,
    AGUIStream,
    Refused,
    RunEnded,
    StartRun,
    StoredRun,
    StoredRuns,
    StreamTap,
    TurnSteering,
    VercelStream,
    accept_history,
    agui_answers,
    agui_frames,
    agui_messages_to_history,
    end_stream,
    history_to_ui_messages,
    parse_json_body,
    pause_stream,
    read_body,
    report_json,
    run_items,
    sse_frame,
    ui_messages_to_history,
    vercel_frames,
)

HERE = Path(__file__).resolve().parent
COOKIE = "uid"
FINISH_PATIENCE = 120.0
"""Seconds ``ChatServer.finish`` tries again what fails while it finishes a durable turn
(the database or the engine away) before it ends the stream failed."""
_BUGS = (UsageError, TypeError, ValueError, LookupError, AttributeError, AssertionError)
"""What ``ChatServer.finish`` does not try again: no wait makes these pass."""
_log = logging.getLogger("golem.web_chat")

# -- the agent: an offline model by default ----------------------------------------------


@tool
def get_weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: the city's name.
    """
    return f"sunny, 21 C in {city}"


@tool(requires_approval=True)
def send_money(to: str, cents: int) -> str:
    """Send money (a person must approve each transfer).

    Args:
        to: who receives it.
        cents: how much, in cents.
    """
    return f"sent {cents} cents to {to}"


LONG_ANSWER = " ".join(f"word{i}" for i in range(1, 61)) + "."


def offline_stream(delay: float) -> Callable[[ModelRequest], AsyncIterator[str | ModelDelta]]:
    """A model with no network: it streams word by word, calls a tool when asked.

    "weather in X" calls get_weather, "pay X N" asks to send money (approval), "long"
    streams a long answer slowly, "fail" fails the request; anything else is echoed.
    """

    async def stream(request: ModelRequest) -> AsyncIterator[str | ModelDelta]:
        last = request.messages[-1]
        call_id = f"call_{len(request.messages)}"
        if last.role is Role.TOOL:
            words = f"The {last.tool_name} tool says: {last.text}.".split(" ")
        else:
            text = last.text.strip()
            lower = text.lower()
            if lower.startswith("fail"):
                raise RuntimeError("the offline model was asked to fail")
            if "weather" in lower:
                city = text.rsplit(" ", 1)[-1].strip("?.!") or "Paris"
                yield TextDelta("Let me check. ")
                await asyncio.sleep(delay)
                yield ToolCallDelta(0, call_id, "get_weather", '{"city": ')
                await asyncio.sleep(delay)
                yield ToolCallDelta(0, None, None, f'"{city}"}}')
                return
            if lower.startswith("pay"):
                words = text.split()
                to = words[1] if len(words) > 1 else "landlord"
                cents = int(words[2]) if len(words) > 2 and words[2].isdigit() else 100
                args = json.dumps({"to": to, "cents": cents})
                yield ToolCallDelta(0, call_id, "send_money", args)
                return
            if "long" in lower:
                words = LONG_ANSWER.split(" ")
            else:
                words = (
                    f"You said: {text} (offline model; set OPENAI_API_KEY for a real one)".split(
                        " "
                    )
                )
        for k, word in enumerate(words):
            yield word if k == len(words) - 1 else word + " "
            await asyncio.sleep(delay * (4 if "word" in word else 1))

    return stream


def make_agent(
    delay: float, signing_key: bytes, wrap: Callable[[Any], Any] = lambda model: model
) -> Agent[None, str]:
    """The offline agent, or a real model when ``OPENAI_API_KEY`` is set; every message
    and call it writes is signed with ``signing_key``; ``wrap`` wraps the model (a
    durable server's ``StreamTap``)."""
    model: Any
    if os.environ.get("OPENAI_API_KEY"):
        from golem_shell.models import infer_model

        model = infer_model("openai:" + os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    else:
        model = FunctionModel(stream_function=offline_stream(delay), name="offline")
    return Agent(
        wrap(model),
        instructions="You are a helpful, terse assistant.",
        tools=[get_weather, send_money],
        signing_key=signing_key,
    )


# -- the server ------------------------------------------------------------------------------


class SafeJSONResponse(JSONResponse):
    """A JSON answer that always renders: a string UTF-8 cannot hold (a lone surrogate a
    server before the boundary refused it could store) goes out as a ``\\u`` escape,
    which the client's ``JSON.parse`` reads back as it was."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


async def _json_body(request: Request) -> Any:
    """The request's JSON, read no further than the 1 MiB limit (413 past it)."""
    length = request.headers.get("content-length")
    return parse_json_body(await read_body(request.stream(), content_length=length))


def _title(history: Sequence[Message]) -> str:
    first = next((m.text for m in history if m.role is Role.USER and m.text), "New chat")
    return first if len(first) <= 40 else first[:39] + "…"


def _branch(value: object) -> str:
    if value is None:
        return MAIN
    if not isinstance(value, str) or not value or len(value) > 64:
        raise Refused(f"branch: expected a branch name, got {value!r}")
    return value


def _ui_text(message: dict[str, Any]) -> str:
    parts = message.get("parts")
    if not isinstance(parts, list):
        return ""
    return "".join(
        p["text"]
        for p in parts
        if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
    )


def _ui_calls(message: dict[str, Any]) -> list[Any]:
    parts = message.get("parts")
    if not isinstance(parts, list):
        return []
    return [p.get("toolCallId") for p in parts if isinstance(p, dict) and "toolCallId" in p]


def _same(client: object, stored: dict[str, Any]) -> bool:
    """Whether a client's UI message shows the stored one: a user message by its text
    (its id is the client's own until a reload), an assistant message by the id the
    server gave it, its text and its calls."""
    if not isinstance(client, dict) or client.get("role") != stored["role"]:
        return False
    if stored["role"] != "assistant":
        return _ui_text(client) == _ui_text(stored)
    return (
        client.get("id") == stored["id"]
        and _ui_text(client) == _ui_text(stored)
        and _ui_calls(client) == _ui_calls(stored)
    )


def _newest(
    message: dict[str, Any],
) -> tuple[object, tuple[Message, ...], dict[str, DeferredAnswer]]:
    """The newest message of a client's request (``chat``'s, or the one an answering
    stream recorded), read from its role and parts only (the store holds the rest; a
    client's ``metadata`` is never read as golem messages): its role, what it says, and
    the approvals it answers with."""
    role = message.get("role")
    read, answers = ui_messages_to_history([{"role": role, "parts": message.get("parts", [])}])
    return role, read, answers


def _fit(prior: Sequence[Any], newest: Any, history: Sequence[Message]) -> int | None:
    """Where the newest message goes in ``history`` if the client's ``prior`` messages
    are its own (``None`` if they are not): the index of the rendered message it
    follows or replaces. Total."""
    shown = history_to_ui_messages(history)
    if _kept_after_failure(prior, history):
        prior = prior[:-1]
    n = len(prior)
    if isinstance(newest, dict) and newest.get("role") == "assistant":  # approvals
        ok = (
            n == len(shown) - 1
            and all(map(_same, prior, shown))
            and newest.get("id") == shown[-1]["id"]
        )
        return n if ok else None
    held = _as_steering_client_holds(history)
    if held != shown and n == len(held) and all(map(_same, prior, held)):
        return len(shown)  # a useChat list after it steered a turn: continues it
    if n > len(shown) or not all(map(_same, prior, shown)):
        return None
    if n < len(shown) and shown[n]["role"] != "user":
        return None  # only a person's message can be edited
    return n


def _as_steering_client_holds(history: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as useChat holds it after it steered a turn: the turn's stream
    went on into one assistant message, and what the person sent meanwhile follows it
    (the AI SDK has no steering chunk; the store keeps each message where it joined). A
    steering message is a user message its run stamped (``run_id``; a prompt is stored,
    unstamped, before its run). Total; equal to the rendering when nothing was steered.
    """
    out: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    for m in history_to_ui_messages(history):
        steered = m["role"] == "user" and history[int(m["id"][1:])].run_id is not None
        if steered and out and out[-1]["role"] == "assistant":
            moved.append(m)
        elif m["role"] == "assistant" and moved:
            out[-1] = {**out[-1], "parts": [*out[-1]["parts"], *m["parts"]]}
        else:
            out.extend(moved)
            moved = []
            out.append(m)
    return [*out, *moved]


def _kept_after_failure(prior: Sequence[Any], history: Sequence[Message]) -> bool:
    """Whether the client's list ends with the assistant message of a run that failed.

    A failed run's stream opens with ``start {messageId: "m<n>"}`` like any other, and
    useChat (``AbstractChat``) keeps that message, with whatever streamed before the
    ``error``; the store never gets it (a failed run stores nothing but the person's
    message). So the client holds one message more than the conversation: an assistant
    message named ``m<len(history)>`` right after the stored history, which ends with
    the person's message.
    """
    if not history or history[-1].role is not Role.USER:
        return False
    if len(prior) != len(history_to_ui_messages(history)) + 1:
        return False
    last = prior[-1]
    return (
        isinstance(last, dict)
        and last.get("role") == "assistant"
        and last.get("id") == f"m{len(history)}"
    )


SETTLE = 1.0
"""Seconds a plain turn's writer in another process may be silent, once the store holds
the turn, before a reader ends the turn's stream from the store (``_settler``)."""


def _closing(
    chunks: Sequence[dict[str, Any]], turn: Sequence[Message], waiting: Sequence[Any]
) -> list[dict[str, Any]]:
    """The chunks that end a stream whose run is stored (``turn``: what the store holds
    after the stream's base) but whose writer died before ``finish``: the blocks and step
    left open closed, the results not shown, then the ``finish`` of the run (its
    approvals, when it waits for some)."""
    blocks: dict[str, str] = {}
    step = False
    calls: set[str] = set()
    results: set[str] = set()
    for c in chunks:
        kind = str(c.get("type"))
        if kind in ("text-start", "reasoning-start"):
            blocks[c["id"]] = kind[: -len("-start")]
        elif kind in ("text-end", "reasoning-end"):
            blocks.pop(c["id"], None)
        elif kind in ("start-step", "finish-step"):
            step = kind == "start-step"
        elif kind.startswith("tool-input-"):
            calls.add(c["toolCallId"])
        elif kind.startswith("tool-output-"):
            results.add(c["toolCallId"])
    stream = VercelStream("m0")
    out = [{"type": f"{kind}-end", "id": block} for block, kind in blocks.items()]
    out += stream.results(
        m for m in turn if m.role is Role.TOOL and m.tool_call_id in calls - results
    )
    if step:
        out.append({"type": "finish-step"})
    if waiting:
        return [*out, *stream.paused(waiting)]
    run = turn[-1].run_id  # the stream's last run: what its finish carries
    answer = tuple(m for m in turn if m.run_id == run and m.role is not Role.USER)
    metadata = {"golem": {"messages": history_to_jsonable(answer)}}
    return [*out, {"type": "finish", "finishReason": "stop", "messageMetadata": metadata}]


class AnsweredCalls:
    """The calls of the stateless AG-UI endpoint that have been answered, kept in the
    example's SQLite file: each at most once.

    A signature proves the server issued a call, not that the call still waits: a
    client could send an older snapshot back with the same approval and run the call
    again (ADR 0069). So an answer claims its call first; a call is the signed
    assistant message that holds it (its exact bytes: ids alone repeat across
    conversations) and its id. The claim is one transaction: all of a request's calls,
    or none.
    """

    def __init__(self, db: str) -> None:
        self.db = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS web_chat_answered_calls (call TEXT PRIMARY KEY)"
        )

    @staticmethod
    def key(history: Sequence[Message], call_id: str) -> str:
        holder = next(m for m in history if any(c.id == call_id for c in m.tool_calls))
        digest = hashlib.sha256(json.dumps(history_to_jsonable((holder,))).encode())
        return f"{digest.hexdigest()}/{call_id}"

    def claim(self, history: Sequence[Message], call_ids: Sequence[str]) -> None:
        """Record that ``call_ids`` (each vouched for in ``history``) are answered now.

        Raises:
            Refused: one of them was answered before (409); nothing is recorded.
        """
        keys = {self.key(history, c): c for c in call_ids}
        self.db.execute("BEGIN IMMEDIATE")
        try:
            marks = ",".join("?" * len(keys))
            seen = self.db.execute(
                f"SELECT call FROM web_chat_answered_calls WHERE call IN ({marks})", list(keys)
            ).fetchall()
            if seen:
                raise Refused(
                    "refusing answers for calls already answered (a replayed snapshot?): "
                    + ", ".join(sorted(keys[k] for (k,) in seen)),
                    409,
                )
            self.db.executemany(
                "INSERT INTO web_chat_answered_calls VALUES (?)", [(k,) for k in keys]
            )
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()


class ChatServer:
    """The routes' logic: a store of conversations per owner (the ``uid`` cookie), the
    agent, and the streams of the turns (``StoredRuns``, in the store's database, keyed
    by owner, conversation and branch); with ``durable``, each turn is a DBOS workflow."""

    def __init__(
        self,
        agent: Agent[None, str],
        store: SQLiteHistoryStore | PostgresHistoryStore,
        key: bytes,
        answered: AnsweredCalls,
        runs: StoredRuns,
        durable: Any = None,
    ) -> None:
        self.agent = agent
        self.store = store
        self.key = key
        self.answered = answered
        self.runs = runs
        self.durable = durable  # a DurableAgent, or None: runs in this process
        self._steering = asyncio.Lock()  # a plain turn's messages are recorded in order

    def owner(self, request: Request) -> str:
        uid = request.cookies.get(COOKIE)
        if not uid:
            raise Refused("no user cookie: load the page first", 401)
        return uid

    async def load(self, uid: str, cid: object, branch: str) -> tuple[Message, ...]:
        if not isinstance(cid, str) or not cid or len(cid) > 64:
            raise Refused(f"id: expected a conversation id, got {cid!r}")
        try:  # another owner's conversation is simply not there: it loads as new
            return await self.store.load(uid, cid, branch=branch)
        except HistoryNotFound:
            raise Refused(f"no branch {branch!r} in conversation {cid!r}", 404) from None

    # -- pages and lists ----------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        response = FileResponse(HERE / "index.html")
        if not request.cookies.get(COOKIE):
            response.set_cookie(COOKIE, secrets.token_urlsafe(16), httponly=True, samesite="strict")
        return response

    async def list_conversations(self, request: Request) -> Response:
        uid = self.owner(request)
        out = []
        for cid in reversed(await self.store.list_conversations(uid)):  # newest first
            branches = []
            for info in await self.store.branches(uid, cid):
                history = await self.store.load(uid, cid, branch=info.name)
                branches.append({"name": info.name, "title": _title(history)})
            out.append({"id": cid, "title": branches[0]["title"], "branches": branches})
        return SafeJSONResponse(out)

    async def create_conversation(self, request: Request) -> Response:
        self.owner(request)
        return SafeJSONResponse({"id": new_id(), "branch": MAIN})

    async def conversation(self, request: Request) -> Response:
        uid = self.owner(request)
        cid = request.path_params["cid"]
        branch = _branch(request.query_params.get("branch"))
        await self._dead_turns(uid, cid, [branch])
        history = await self.load(uid, cid, branch)
        latest = await self.runs.latest(f"{uid}/{cid}/{branch}")
        live = await self.runs.running(f"{uid}/{cid}/{branch}")
        paused: list[Any] = []
        if live is not None:  # the stream holds the rest: the page replays it
            shown = history[: live.info["base"]]
            awaiting: tuple[str, ...] = ()
        else:
            shown = history
            awaiting = tuple(str(d.call.id) for d in self.agent.waiting_calls(history))
            if latest is not None and latest.state == "paused":  # a durable run waits
                paused = await self._chunks(latest.stream)
        return SafeJSONResponse(
            {
                "id": cid,
                "branch": branch,
                "title": _title(history),
                "messages": history_to_ui_messages(shown, awaiting=awaiting),
                "live": live is not None,
                "paused": paused,  # the waiting turn's chunks: the page applies them
            }
        )

    async def _chunks(self, stream: str) -> list[Any]:
        frames, _ = await self.runs.log.read(stream, 0)
        return [json.loads(data) for _, data in frames if data != "[DONE]"]

    # -- the UI message stream ----------------------------------------------------------------

    def _follow(
        self,
        run: StoredRun,
        after: int,
        idle: Callable[[StreamRecord], Awaitable[None]] | None = None,
    ) -> StreamingResponse:
        async def body() -> AsyncIterator[str]:
            last = after
            try:
                async for n, data in run.follow(after, idle=idle):
                    last = n
                    yield sse_frame(data, n)
            except HistoryStoreError as e:  # the database restarts: the client resumes
                _log.warning("following stream %r after frame %d: %s", run.stream, last, e)

        return StreamingResponse(
            body(), media_type="text/event-stream", headers=UI_MESSAGE_STREAM_HEADERS
        )

    async def resume(self, request: Request) -> Response:
        uid = self.owner(request)
        cid = request.path_params["cid"]
        branch = _branch(request.query_params.get("branch"))
        last = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        try:
            after = int(last)
        except ValueError:
            raise Refused(f"Last-Event-ID must be a frame number, got {last!r}") from None
        run = await self.runs.resume(f"{uid}/{cid}/{branch}", after)
        if run is None:  # nothing in flight, or finished: the store has it all
            return Response(status_code=204)
        return self._follow(run, after, self._settler(uid, cid, branch, run))

    def _settler(
        self, uid: str, cid: str, branch: str, run: StoredRun
    ) -> Callable[[StreamRecord], Awaitable[None]] | None:
        """What a reader of a plain turn another process writes does while the stream is
        silent: once the store holds the turn's answer and the writer has said nothing for
        ``SETTLE`` seconds (it died between storing the turn and writing ``finish``), end
        the stream with what the store holds, at once rather than when the writer goes
        stale. Keyed frames: the writer's own ``finish``, if it comes first, wins."""
        if run.steering is not None:  # this process writes it: its own finish comes
            return None
        checked = 0.0

        async def idle(record: StreamRecord) -> None:
            nonlocal checked
            now = time.time()
            if record.durable or min(now - record.beat_ms / 1000, now - checked) < SETTLE:
                return
            checked = now
            history = await self.store.load(uid, cid, branch=branch)
            base = int(record.info.get("base", len(history)))
            if len(history) <= base or history[-1].role is not Role.ASSISTANT:
                return  # the turn is not stored (yet): its writer may still be at work
            await self._keep_steering(uid, cid, branch, record)  # what it acknowledged
            frames = await self._frames(record.stream)
            chunks = [json.loads(data) for _, data in frames if data != DONE]
            waiting = [d.call for d in self.agent.waiting_calls(history) if d.kind == "approval"]
            closing = _closing(chunks, history[base:], waiting)
            await self.runs.write(
                record.stream,
                [
                    *((f"settled:{k}", json.dumps(c)) for k, c in enumerate(closing)),
                    ("settled:done", DONE),
                ],
                end="done",
            )

        return idle

    async def chat(self, request: Request) -> Response:
        uid = self.owner(request)
        body = await _json_body(request)
        if not isinstance(body, dict):
            raise Refused("the body must be an object {id, branch, messages}")
        cid = body.get("id")
        requested = None if body.get("branch") is None else _branch(body.get("branch"))
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refused("messages: expected a non-empty list of UI messages")
        last = messages[-1]
        if not isinstance(last, dict):
            raise Refused(f"messages[{len(messages) - 1}]: expected an object")
        if last.get("role") == "system":
            raise Refused("a client may not send a system message: instructions are the server's")
        role, read, answers = _newest(last)
        if isinstance(cid, str) and cid:  # what a dead turn acknowledged is stored first
            names = [requested or MAIN]
            if requested is None:
                names += [b.name for b in await self.store.branches(uid, cid) if b.name != MAIN]
            await self._dead_turns(uid, cid, names)
        if self.durable is not None and role == "assistant":
            waiting = await self._paused(uid, cid, requested or MAIN, last)
            if waiting is not None:
                return await self._answer_durable(
                    uid, cid, requested or MAIN, messages, *waiting, answers
                )
        if role == "user":
            steered = await self.steer(uid, cid, requested, messages, read)
            if steered is not None:
                return steered
        branch, history, position = await self.place(uid, cid, requested, messages)
        assert isinstance(cid, str)
        if await self.runs.running(f"{uid}/{cid}/{branch}") is not None:
            raise Refused("a run of this conversation is in flight: resume its stream", 409)
        if role == "assistant":
            return await self._answer(uid, cid, branch, history, answers)
        return await self._prompt(uid, cid, branch, history, read, position)

    async def steer(
        self,
        uid: str,
        cid: object,
        requested: str | None,
        messages: list[Any],
        read: Sequence[Message],
    ) -> Response | None:
        """Give the person's newest message to the turn streaming on the client's branch
        (``None``: no turn streams there, the message starts one as usual).

        The client's list must begin with the conversation as it was when the turn
        began (what it shows of the turn in flight, and any message it sent since, is
        its own); the message is sanitized like a prompt. The turn takes it (202
        ``{"steered": true}``): its run at the next safe point, or its next run. A turn
        that has just closed takes nothing: the message then starts the next turn once
        that stream has ended (the answer is that turn's stream).

        A durable turn (``--durable``) is steered through DBOS from any process; a plain
        one only through the process that writes it, and the message is recorded in its
        stream before the 202 (``_send_kept``): stored once even if that process dies.

        Raises:
            Refused: the list does not fit the conversation (409), the turn is a plain
                one another process writes (409: no steering there), or nothing is left
                of the message after sanitizing (400).
        """
        if not isinstance(cid, str) or not cid:
            return None
        names = [requested] if requested is not None else [MAIN]
        if requested is None:
            names += [b.name for b in await self.store.branches(uid, cid) if b.name != MAIN]
        for name in names:
            key = f"{uid}/{cid}/{name}"
            run = await self.runs.running(key)
            if run is None:
                continue
            history = await self.load(uid, cid, name)
            shown = history_to_ui_messages(history[: run.info.get("base", len(history))])
            prior = messages[:-1]
            if len(prior) < len(shown) or not all(map(_same, prior, shown)):
                if requested is None:
                    continue  # another branch's list: try the next
                raise Refused("the messages do not match this conversation: reload it", 409)
            if run.steering is None and (self.durable is None or not run.run_id):
                raise Refused(
                    "a run of this conversation is in flight and takes no steering here"
                    " (another server process writes it): resume its stream, then send",
                    409,
                )
            prompt, _ = self._sanitized(read)
            if await self._send_kept(run, prompt):
                return SafeJSONResponse(
                    {"steered": True, "id": cid, "branch": name}, status_code=202
                )
            await self.runs.wait(key)  # the turn closed just now: the next turn follows it
            history = await self.load(uid, cid, name)
            return await self._prompt(
                uid, cid, name, history, read, len(history_to_ui_messages(history))
            )
        return None

    async def _send_kept(self, run: StoredRun, prompt: Message) -> bool:
        """``_send``, and for a plain turn the message recorded in the turn's stream (a
        transient ``data-steering-pending`` chunk holding it) before the 202: if this
        process dies before the turn stores it, whoever finds the turn's writer dead
        stores it (``_keep_steering``). Recorded in the order the turn was given them
        (one lock), as the turn takes and stores them: in order."""
        if run.steering is None:  # durable: DBOS holds it from here
            return await self._send(run, prompt)
        async with self._steering:
            if not await self._send(run, prompt):
                return False
            chunk = {
                "type": "data-steering-pending",
                "data": {"golem": history_to_jsonable((prompt,))},
                "transient": True,
            }
            await self.runs.write(run.stream, [(f"steer:{new_id()}", json.dumps(chunk))])
        return True

    async def _keep_steering(self, uid: str, cid: str, branch: str, record: StreamRecord) -> None:
        """Store what a plain turn whose writer is dead acknowledged and never stored: the
        messages of its ``data-steering-pending`` chunks, after the ones it stored (its
        user messages after ``base``: it stores them in the order it was given them) and
        gave back (``data-steering-returned``). Appended after the conversation (compare-
        and-set: once, whichever process gets there first), unanswered: the next turn
        answers them with its own message."""
        frames = await self._frames(record.stream)
        chunks = [json.loads(data) for _, data in frames if data != DONE]
        pending = [
            m
            for c in chunks
            if c.get("type") == "data-steering-pending"
            for m in history_from_jsonable(c["data"]["golem"]).unwrap()
        ]
        back = sum(
            len(c["data"]["messages"]) for c in chunks if c.get("type") == "data-steering-returned"
        )
        while pending:
            history = await self.store.load(uid, cid, branch=branch)
            base = int(record.info.get("base", len(history)))
            left = pending[sum(m.role is Role.USER for m in history[base:]) + back :]
            if not left:
                return
            try:
                await self.store.append(uid, cid, tuple(left), len(history), branch=branch)
                return
            except HistoryConflict:  # another process stored them (or more) first: look again
                continue

    async def _dead_turns(self, uid: str, cid: object, names: Sequence[str]) -> None:
        """``_keep_steering`` for each branch of ``names`` whose newest stream is a plain
        turn whose writer died (abandoned, or open and silent past the limit)."""
        if not isinstance(cid, str) or not cid:
            return
        for name in names:
            key = f"{uid}/{cid}/{name}"
            record = await self.runs.latest(key)
            if record is None or record.durable or record.state not in ("open", "abandoned"):
                continue
            if await self.runs.running(key) is None:
                await self._keep_steering(uid, cid, name, record)

    async def _send(self, run: StoredRun, prompt: Message) -> bool:
        """Give the turn of ``run`` the person's message: ``True`` if it takes it (its run
        at its next safe point, or its next run), ``False`` if the turn is closing. A
        durable turn takes it through DBOS (``DurableAgent.steer``), whichever process
        runs it: its newest run, ``<run id>+<n>`` once it has a next one (``finish``)."""
        if run.steering is not None:
            return run.steering.send(prompt)
        newest, n = run.run_id, 2
        while await self._status(f"{run.run_id}+{n}") is not None:
            newest, n = f"{run.run_id}+{n}", n + 1
        try:
            await self.durable.steer(newest, prompt.parts)
        except UsageError:  # it has ended (or never started): not taken
            return False
        return True

    async def place(
        self, uid: str, cid: object, requested: str | None, messages: list[Any]
    ) -> tuple[str, tuple[Message, ...], int]:
        """The branch the client's list belongs to, its stored history, and where the
        newest message goes (``len`` of the rendered history: appended; less: an edit).

        The messages before the newest must be the branch's, compared by content (a
        user message by its text, an assistant message by its id, text and calls), not
        by count: useChat never sends ``branch``, so after an edit only the content
        says which branch is on screen. Without ``branch`` every branch is tried, main
        first; a list that continues a branch wins over one that edits it. An
        assistant message last (approvals) must be the branch's last message.

        Raises:
            Refused: the list fits no branch (409: reload the conversation).
        """
        names = [requested] if requested is not None else [MAIN]
        if requested is None and isinstance(cid, str) and cid:
            names += [b.name for b in await self.store.branches(uid, cid) if b.name != MAIN]
        prior, newest = messages[:-1], messages[-1]
        edit: tuple[str, tuple[Message, ...], int] | None = None
        for name in names:
            history = await self.load(uid, cid, name)
            fit = _fit(prior, newest, history)
            if fit is None:
                continue
            shown = len(history_to_ui_messages(history))
            if fit >= shown:
                return name, history, fit
            if edit is None:
                edit = (name, history, fit)
        if edit is not None:
            return edit
        where = f"branch {requested!r}" if requested is not None else "any branch"
        raise Refused(
            f"the {len(prior)} messages before the newest do not match {where} of this"
            " conversation: reload it",
            409,
        )

    def _sanitized(self, read: Sequence[Message]) -> tuple[Message, Any]:
        """The person's message as the run will see it, and the sanitize report."""
        clean, report = accept_history(read, key=self.key)
        if not clean or clean[-1].role is not Role.USER or not clean[-1].parts:
            raise Refused(
                "nothing is left of the message after sanitizing: "
                + json.dumps(report_json(report))
            )
        return clean[-1], report

    async def _prompt(
        self,
        uid: str,
        cid: str,
        branch: str,
        history: tuple[Message, ...],
        read: Sequence[Message],
        position: int,
    ) -> Response:
        prompt, report = self._sanitized(read)
        shown = history_to_ui_messages(history)
        if position < len(shown):  # an edit: regenerate from there on a new branch
            at = int(shown[position]["id"][1:])
            branch = await self.store.branch(uid, cid, at, source=branch)
            history = history[:at]
        try:  # the person's message is kept before the run starts: a drop never loses it
            await self.store.append(uid, cid, (prompt,), len(history), branch=branch)
        except HistoryConflict as e:
            raise Refused(str(e), 409) from None
        history = (*history, prompt)
        first = [{"type": "data-conversation", "data": {"id": cid, "branch": branch}}]
        if report.changed:
            first.append({"type": "data-sanitize", "data": report_json(report)})
        if self.durable is not None:
            return await self._start_durable(uid, cid, branch, history, first)
        stream = VercelStream(f"m{len(history)}")
        return await self._start(
            uid, cid, branch, history, stream, self._continue(history, cid), first
        )

    def _continue(self, history: tuple[Message, ...], cid: str) -> Callable[[Steering], StartRun]:
        """A run that answers ``history`` (it ends with the person's message)."""

        def run(steering: Steering) -> StartRun:
            def start(on_delta: Any, on_event: Any) -> Awaitable[RunResult[str]]:
                return self.agent.run_stream_with_history(
                    history,
                    None,
                    on_delta=on_delta,
                    on_event=on_event,
                    conversation_id=cid,
                    steering=steering,
                )

            return start

        return run

    async def _answer(
        self,
        uid: str,
        cid: str,
        branch: str,
        history: tuple[Message, ...],
        answers: dict[str, DeferredAnswer],
    ) -> Response:
        waiting = {str(d.call.id) for d in self.agent.waiting_calls(history)}
        if not answers:
            raise Refused("the assistant message answers no call (no approval-responded part)")
        forged = sorted(set(answers) - waiting)
        if forged:
            raise Refused(
                "refusing answers for calls this conversation is not waiting for: "
                + ", ".join(forged)
            )
        turn = max((i + 1 for i, m in enumerate(history) if m.role is Role.USER), default=0)
        stream = VercelStream(f"m{turn}", prior=history[turn:], answered=answers)

        def start(steering: Steering) -> StartRun:
            def run(on_delta: Any, on_event: Any) -> Awaitable[RunResult[str]]:
                return self.agent.run_with_deferred_results(
                    history,
                    answers,
                    issued=waiting,
                    on_delta=on_delta,
                    on_event=on_event,
                    steering=steering,
                )

            return run

        first = [{"type": "data-conversation", "data": {"id": cid, "branch": branch}}]
        return await self._start(uid, cid, branch, history, stream, start, first)

    async def _start(
        self,
        uid: str,
        cid: str,
        branch: str,
        history: tuple[Message, ...],
        stream: VercelStream,
        start: Callable[[Steering], StartRun],
        first: list[dict[str, Any]],
    ) -> Response:
        """Stream a turn: its run, steered by what the person sends meanwhile
        (``TurnSteering``), then a next run for each batch of messages that came after
        a run's last look, in the same stream, each stored as it ends."""
        turn = TurnSteering()

        async def frames(run: StoredRun) -> AsyncIterator[str]:
            now, out, opening, begin = history, stream, first, start
            while True:
                steering = turn.run()
                ended: list[RunEnded] = []

                store = self._store_turn(uid, cid, branch, len(now), steering, turn, ended)
                items = run_items(begin(steering), steering=steering)
                async for data in vercel_frames(out, items, first=opening, on_end=store):
                    if data != DONE:
                        yield data
                if not ended or ended[0].result is None or ended[0].result.paused:
                    # failed (what came is stored), or waits for approval: a message
                    # after a call without its result cannot be stored, so it goes back
                    back = turn.close()
                    if back:
                        returned = out.steered(0, back)["data"]
                        yield json.dumps(out.data("steering-returned", returned))
                    break
                late = turn.late()
                if not late:
                    break  # closed: what comes now starts a new turn
                now = (*now, *ended[0].result.new_messages)
                await self.store.append(uid, cid, late, len(now), branch=branch)
                yield json.dumps(out.steered(0, late))
                now = (*now, *late)
                out, begin = VercelStream(f"m{len(now)}"), self._continue(now, cid)
                opening = [{"type": "data-conversation", "data": {"id": cid, "branch": branch}}]
            yield DONE

        key = f"{uid}/{cid}/{branch}"
        run = await self.runs.start(
            key, frames, info={"base": len(history)}, steering=turn, owner=uid, conversation_id=cid
        )
        return self._follow(run, 0)

    def _store_turn(
        self,
        uid: str,
        cid: str,
        branch: str,
        base: int,
        steering: Steering,
        turn: TurnSteering,
        ended: list[RunEnded],
    ) -> Callable[[RunEnded], Awaitable[None]]:
        """What stores a run of a turn as it ends (before the stream's ``finish``): what
        it added; if it failed, what the person sent meanwhile (never lost)."""

        async def store(end: RunEnded) -> None:
            if end.result is None:
                kept = (*steering.taken, *turn.close())
                if kept:
                    await self.store.append(uid, cid, kept, base, branch=branch)
                return
            await self.store.append(uid, cid, end.result.new_messages, base, branch=branch)
            ended.append(end)

        return store

    # -- durable turns (DBOS): the run is a workflow, its frames come from StreamTap ----------

    async def _start_durable(
        self,
        uid: str,
        cid: str,
        branch: str,
        history: tuple[Message, ...],
        first: list[dict[str, Any]],
    ) -> Response:
        """Open the turn's stream, then start the workflow (its model requests write
        their frames into the stream, wherever it runs), and finish it from here."""
        run_id = new_id()
        message = f"m{len(history)}"
        info = {"uid": uid, "cid": cid, "branch": branch, "base": len(history)}
        run = await self.runs.open(
            f"{uid}/{cid}/{branch}",
            run_id=run_id,
            info={**info, "message": message},
            owner=uid,
            conversation_id=cid,
        )
        opening = [{"type": "start", "messageId": message}, *first]
        await self.runs.write(
            run.stream, [(f"open:{k}", json.dumps(c)) for k, c in enumerate(opening)]
        )
        await self.durable.start(None, history=history, run_id=run_id, conversation_id=cid)
        self.runs.spawn(self.finish(run))
        return self._follow(run, 0)

    async def finish(self, run: StoredRun, *, answered: bool = False) -> None:
        """Wait for the durable run of ``run``'s stream to end or pause, store what it
        added (compare-and-set: once, whichever process gets there first), and write the
        stream's closing frames (keyed: written once). The messages the run was sent but
        did not take (``steering_left``) are stored after it and answered by the turn's
        next run, ``<run id>+2`` (then ``+3``...), in the same stream, as a plain turn's
        late messages are: every step keyed or compare-and-set, so a process that
        recovers the turn redoes none of them.

        What fails on the way that is not the run's outcome (the database restarting,
        the engine's server or its only worker away: any error but the run's
        ``RunError``) is waited out: the whole finish is done again, with backoff (0.25
        s doubling to 5 s), for up to ``FINISH_PATIENCE`` seconds; as every step is keyed
        or compare-and-set, doing it again redoes nothing. A failure that cannot pass
        (``UsageError``, a bug), or one that outlasts the patience, is logged and ends
        the stream failed, saying why: the client never waits on a task that died.

        A stream opened to answer a paused run holds the answers (``answering``, the
        client's message); unless ``answered`` (this process sent them), the finisher
        sends them again while the run still waits at that pause: the process that took
        them may have died before they reached the engine (answers are bound to their
        pause, so ones that did arrive are not applied twice)."""
        pause, deadline = 0.25, None
        while True:
            try:
                if not answered:
                    await self._deliver(run)
                    answered = True
                await self._finish(run)
                return
            except Exception as e:
                deadline = deadline or time.monotonic() + FINISH_PATIENCE  # from the first
                if isinstance(e, _BUGS) or time.monotonic() + pause > deadline:
                    _log.error("finishing stream %r failed for good", run.stream, exc_info=e)
                    await self._give_up(run, e)
                    return
                _log.warning(
                    "finishing stream %r failed (%r): trying again in %.2f s", run.stream, e, pause
                )
                await asyncio.sleep(pause)
                pause = min(pause * 2, 5.0)

    async def _deliver(self, run: StoredRun) -> None:
        """Send the answers ``run``'s stream was opened with (``answering``) if its run
        still waits at the pause they answer."""
        message = run.info.get("answering")
        if message is None:
            return
        record = await self.runs.log.get(run.stream)
        if record is not None and not record.open:
            return
        waiting = await self.durable.waiting(run.run_id)
        if not waiting or waiting.pause != run.info["after_pause"]:
            return  # they arrived: the run went on
        _, _, answers = _newest(message)
        try:
            await self.durable.answer(run.run_id, answers, pause=waiting)
        except DeferredResultsError:
            if (await self.durable.waiting(run.run_id)).pause == waiting.pause:
                raise  # refused, and still waiting: a bug (they were checked when taken)
            # they arrived meanwhile (the run moved on): nothing to send

    async def _give_up(self, run: StoredRun, error: Exception) -> None:
        """End ``run``'s stream failed with ``error`` (logged if even that fails: the
        stream then stays open, and the next start of a server process finishes it)."""
        failed = RuntimeError(f"the turn could not be finished: {error!r}")
        try:
            await end_stream(self.runs, run, RunEnded(None, failed), key="gave-up")
        except Exception:
            _log.exception("ending stream %r failed", run.stream)

    async def _finish(self, run: StoredRun) -> None:
        """One try of ``finish``: nothing if the stream has ended already."""
        record = await self.runs.log.get(run.stream)
        if record is not None and not record.open:
            return
        info = run.info
        await self._started(run)
        uid, cid, branch, base = info["uid"], info["cid"], info["branch"], info["base"]
        run_id, n = run.run_id, 1
        while True:
            key = "end" if n == 1 else f"end+{n}"
            done = asyncio.ensure_future(self.durable.result(run_id))
            after = info.get("after_pause", 0) if n == 1 else 0
            try:
                while not done.done():
                    await asyncio.wait({done}, timeout=0.25)
                    if done.done():
                        break
                    waiting = await self.durable.waiting(run_id)
                    if waiting and waiting.pause > after:
                        calls = [d.call for d in waiting if d.kind == "approval"]
                        await pause_stream(self.runs, run, calls)
                        return
            finally:
                done.cancel()  # (done already: nothing) a try that failed leaves no task
            try:
                result = done.result()
            except RunError as e:  # the run failed: the stream says so (the store keeps
                kept = getattr(e, "steering_left", ())  # the prompt, and what was sent)
                if kept:
                    await self._keep(uid, cid, branch, kept, base)
                await end_stream(self.runs, run, RunEnded(None, e), key=key)
                return
            added = result.new_messages
            if not await self._keep(uid, cid, branch, added, base):
                changed = RuntimeError("the conversation changed during the run")
                await end_stream(self.runs, run, RunEnded(None, changed), key=key)
                return
            left = result.steering_left
            if not left or not await self._keep(uid, cid, branch, left, base + len(added)):
                await end_stream(self.runs, run, RunEnded(result), key=key)
                return
            # the turn's next run answers what this one did not take, in the same stream
            base += len(added) + len(left)
            n, run_id = n + 1, f"{run.run_id}+{n + 1}"
            stream = VercelStream(f"m{base}")
            then = [
                stream.steered(0, left),
                *stream.start(),
                {"type": "data-conversation", "data": {"id": cid, "branch": branch}},
            ]
            await end_stream(self.runs, run, RunEnded(result), then=then, key=key)
            if await self._status(run_id) is None:
                history = (await self.store.load(uid, cid, branch=branch))[:base]
                await self.durable.start(None, history=history, run_id=run_id, conversation_id=cid)

    async def _keep(
        self, uid: str, cid: str, branch: str, messages: Sequence[Message], at: int
    ) -> bool:
        """Store ``messages`` at ``at`` once: ``True`` when they are there now (stored
        here, or by another process first), ``False`` when something else is."""
        if not messages:
            return True
        try:
            await self.store.append(uid, cid, messages, at, branch=branch)
        except HistoryConflict:  # another process stored it first, or something else did
            stored = await self.store.load(uid, cid, branch=branch)
            return history_to_jsonable(stored[at : at + len(messages)]) == history_to_jsonable(
                messages
            )
        return True

    async def _status(self, run_id: str) -> Any:
        """The DBOS status of the workflow ``run_id`` (``None``: never started)."""
        from dbos import DBOS

        return await DBOS.get_workflow_status_async(run_id)

    async def _started(self, run: StoredRun) -> None:
        """Start the workflow of ``run``'s stream if it never started (its process died
        between opening the stream and starting it): the same run id, the prompt from
        the store. DBOS starts a workflow id once: two processes recovering the same turn
        start one run, executed by the first."""
        if await self._status(run.run_id) is not None:
            return
        info = run.info
        opening = [  # keyed as _start_durable writes them: skipped if they are there
            {"type": "start", "messageId": info["message"]},
            {"type": "data-conversation", "data": {"id": info["cid"], "branch": info["branch"]}},
        ]
        await self.runs.write(
            run.stream, [(f"open:{k}", json.dumps(c)) for k, c in enumerate(opening)]
        )
        history = await self.store.load(info["uid"], info["cid"], branch=info["branch"])
        await self.durable.start(
            None, history=history[: info["base"]], run_id=run.run_id, conversation_id=info["cid"]
        )

    async def recover(self) -> None:
        """Finish the durable streams left open (their runs resume in the worker that
        started them, when it restarts; a run that never started starts here): a
        finisher per stream, idempotent."""
        for record in await self.runs.log.unfinished(durable=True):
            self.runs.spawn(self.finish(StoredRun(self.runs, record)))

    async def _paused(
        self, uid: str, cid: object, branch: str, last: dict[str, Any]
    ) -> tuple[StoredRun, Any] | None:
        """The paused durable run the client's approvals are for, and what it waits for."""
        if not isinstance(cid, str) or not cid:
            return None
        record = await self.runs.latest(f"{uid}/{cid}/{branch}")
        if record is None or record.state != "paused":
            return None
        if last.get("id") != record.info.get("message"):
            return None
        return StoredRun(self.runs, record), await self.durable.waiting(record.run_id)

    async def _answer_durable(
        self,
        uid: str,
        cid: str,
        branch: str,
        messages: list[Any],
        paused: StoredRun,
        waiting: Any,
        answers: dict[str, DeferredAnswer],
    ) -> Response:
        """Send approvals to the paused workflow; its continuation streams anew."""
        history = await self.load(uid, cid, branch)
        shown = history_to_ui_messages(history)
        prior = messages[:-1]
        if len(prior) != len(shown) or not all(map(_same, prior, shown)):
            raise Refused("the messages do not match this conversation: reload it", 409)
        if not answers:
            raise Refused("the assistant message answers no call (no approval-responded part)")
        forged = sorted(set(answers) - {str(d.call.id) for d in waiting})
        if forged:
            raise Refused(
                "refusing answers for calls this conversation is not waiting for: "
                + ", ".join(forged)
            )
        denied = sorted(k for k, v in answers.items() if not isinstance(v, Approved))
        info = {
            **paused.info,
            "denied": denied,
            "after_pause": waiting.pause,
            "answering": messages[-1],  # what recovery sends again if it never arrived
        }
        run = await self.runs.open(
            paused.key, run_id=paused.run_id, info=info, owner=uid, conversation_id=cid
        )
        opening = [
            {"type": "start", "messageId": info["message"]},
            {"type": "data-conversation", "data": {"id": cid, "branch": branch}},
        ]
        await self.runs.write(
            run.stream, [(f"open:{k}", json.dumps(c)) for k, c in enumerate(opening)]
        )
        try:
            await self.durable.answer(paused.run_id, answers, pause=waiting)
        except _BUGS:  # the answers do not fit the pause (nothing was applied): say so;
            await self._still_paused(run, paused)  # and the run stays answerable
            raise
        except Exception as e:  # the engine or the database did not answer: the finisher
            _log.warning("answering run %r failed (%r): finishing sends it", run.run_id, e)
            self.runs.spawn(self.finish(run))  # sends the answers again (stream's info)
        else:
            self.runs.spawn(self.finish(run, answered=True))
        return self._follow(run, 0)

    async def _frames(self, stream: str) -> list[tuple[int, str]]:
        """Every frame ``stream`` holds, as ``(number, data)``, read page by page."""
        frames: list[tuple[int, str]] = []
        while batch := (await self.runs.log.read(stream, len(frames)))[0]:
            frames += batch
        return frames

    async def _still_paused(self, run: StoredRun, paused: StoredRun) -> None:
        """After the run refused the answers ``run``'s stream was opened with (nothing was
        applied, the run still waits), end that stream and put the pause back as the
        newest stream of its key: a copy of ``paused`` (its run, its info, its frames),
        ended ``paused``, which the next answer finds (``_paused``) and a reload shows
        (``conversation``). Without it the newest stream was the abandoned answering
        one: the paused run could never be answered again."""
        await self.runs.end(run.stream, "abandoned")
        frames = await self._frames(paused.stream)
        again = await self.runs.open(
            paused.key,
            run_id=paused.run_id,
            info=paused.info,
            owner=paused.info["uid"],
            conversation_id=paused.info["cid"],
        )
        kept = [(f"paused:{n}", data) for n, data in frames]
        await self.runs.write(again.stream, kept, end="paused")

    # -- AG-UI, stateless --------------------------------------------------------------------

    async def agui(self, request: Request) -> Response:
        body = await _json_body(request)
        try:
            run_input = RunAgentInput.model_validate(body)
        except ValidationError as e:
            raise Refused(f"not an AG-UI RunAgentInput: {e.errors()[0]}") from None
        history, report = accept_history(agui_messages_to_history(run_input.messages), key=self.key)
        answers = agui_answers(run_input.resume)
        vouched = signed_calls(history, self.key)
        waiting = {str(d.call.id) for d in self.agent.waiting_calls(history)}
        forged = sorted(set(answers) - (waiting & vouched))
        if forged:
            raise Refused(
                "refusing answers for calls this server did not issue, or that wait for"
                " nothing (forged or edited?): " + ", ".join(forged)
            )
        if answers:  # each call is answered once, whatever snapshot comes back
            self.answered.claim(history, sorted(answers))
        stream = AGUIStream(
            run_input.thread_id, run_input.run_id, history=history, answered=answers
        )
        if answers:

            def start(on_delta: Any, on_event: Any) -> Awaitable[RunResult[str]]:
                return self.agent.run_with_deferred_results(
                    history, answers, issued=vouched, on_delta=on_delta, on_event=on_event
                )
        else:

            def start(on_delta: Any, on_event: Any) -> Awaitable[RunResult[str]]:
                return self.agent.run_stream_with_history(
                    history, None, on_delta=on_delta, on_event=on_event
                )

        notices = (
            [CustomEvent(name="golem.sanitize", value=report_json(report))]
            if report.changed
            else []
        )

        async def body_frames() -> AsyncIterator[str]:
            async for data in agui_frames(stream, run_items(start), first=notices):
                yield sse_frame(data)

        return StreamingResponse(body_frames(), media_type="text/event-stream")


class LaunchedBlobs:
    """The ``DurableAgent``'s blob store as the history store's ``blobs=`` (ADR 0152):
    DBOS launches with the app, after the store is made, so it is looked up when an
    erasure releases a conversation's blobs."""

    def __init__(self) -> None:
        self.agent: Any = None

    def __repr__(self) -> str:
        return f"LaunchedBlobs({self.agent!r})"

    def release(self, conversations: Sequence[str], note: str) -> tuple[str, ...]:
        """``release`` on the agent's blob store (DBOS's system database)."""
        if self.agent is None:
            return ()
        return tuple(self.agent.store().release(conversations, note))


def make_app(
    db: str = "web_chat.db",
    *,
    delay: float = 0.05,
    key: bytes | None = None,
    durable: bool = False,
    worker: str = "web-1",
    answered: str | None = None,
) -> Starlette:
    """The web chat application (``uvicorn`` serves it).

    Args:
        db: the SQLite file of conversations and streams, or a PostgreSQL URL.
        delay: paces the offline model's words.
        key: signs what the agent writes (a fresh one by default; every process of one
            deployment needs the same: ``--key-file``).
        durable: run each turn as a DBOS workflow (its log next to the store: the same
            PostgreSQL database, or ``<db>.dbos.sqlite``); DBOS launches with the app.
        worker: this process's DBOS executor id: a restarted process with the same id
            resumes the runs it had in flight; each process of a deployment its own.
        answered: the SQLite file of answered AG-UI calls (default: ``db``, or
            ``web_chat_answered.db`` beside a PostgreSQL store).
    """
    key = key or secrets.token_bytes(32)
    postgres = db.startswith(("postgresql://", "postgres://"))
    blobs = LaunchedBlobs() if durable else None  # erasure reaches the DBOS runs' blobs
    store: SQLiteHistoryStore | PostgresHistoryStore = (
        PostgresHistoryStore(db, signing_keys=key, blobs=blobs)
        if postgres
        else SQLiteHistoryStore(db, signing_keys=key, blobs=blobs)
    )
    runs = StoredRuns(StreamLog(store))
    durable_agent: Any = None
    if durable:
        from dbos import DBOS

        from golem_shell.durable import DurableAgent

        agent = make_agent(
            delay, key, lambda model: StreamTap(model, runs, position=lambda _: DBOS.step_id)
        )
        durable_agent = DurableAgent(agent, name="web-chat", steerable=True)
        assert blobs is not None
        blobs.agent = durable_agent
        DBOS(
            config={
                "name": "golem-web-chat",
                "system_database_url": db if postgres else f"sqlite:///{db}.dbos.sqlite",
                "executor_id": worker,
                "application_version": "web-chat-1",
                "run_admin_server": False,
            }
        )
    else:
        agent = make_agent(delay, key)
    answered_db = answered or ("web_chat_answered.db" if postgres else db)
    server = ChatServer(agent, store, key, AnsweredCalls(answered_db), runs, durable_agent)

    def guarded(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)  # type: ignore[no-any-return]
            except Refused as e:
                return SafeJSONResponse({"error": str(e)}, status_code=e.status)
            except DeferredResultsError as e:
                return SafeJSONResponse({"error": str(e)}, status_code=400)
            except HistoryStoreError as e:  # the database restarts: a moment, not a bug
                _log.warning("%s %s: %s", request.method, request.url.path, e)
                return SafeJSONResponse(
                    {"error": "the conversation store is unavailable for a moment: try again"},
                    status_code=503,
                    headers={"Retry-After": "1"},
                )

        return endpoint

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if durable:
            from dbos import DBOS

            DBOS.launch()  # resumes this worker's runs left unfinished
            await server.recover()  # and finishes their streams
        yield
        await server.runs.aclose()
        if durable:
            from dbos import DBOS

            DBOS.destroy()
        server.answered.close()
        await store.aclose()

    app = Starlette(
        routes=[
            Route("/", guarded(server.index)),
            Route("/api/conversations", guarded(server.list_conversations), methods=["GET"]),
            Route("/api/conversations", guarded(server.create_conversation), methods=["POST"]),
            Route("/api/conversations/{cid}", guarded(server.conversation)),
            Route("/api/chat", guarded(server.chat), methods=["POST"]),
            Route("/api/chat/{cid}/stream", guarded(server.resume)),
            Route("/agui", guarded(server.agui), methods=["POST"]),
        ],
        lifespan=lifespan,
    )
    app.state.server = server
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description="golem web chat")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--db",
        default="web_chat.db",
        help="the SQLite file of conversations and streams, or a postgresql:// URL",
    )
    parser.add_argument(
        "--durable", action="store_true", help="run each turn as a DBOS workflow (dbos extra)"
    )
    parser.add_argument("--worker", default="web-1", help="this process's DBOS executor id")
    parser.add_argument(
        "--key-file",
        default=None,
        help="the signing key's file (created if absent): every process of one deployment"
        " shares it (default: a fresh key per process)",
    )
    parser.add_argument("--delay", type=float, default=0.05, help="the offline model's pace")
    args = parser.parse_args()
    import uvicorn

    key = None
    if args.key_file:
        path = Path(args.key_file)
        if not path.exists():
            with contextlib.suppress(FileExistsError), path.open("xb") as f:
                f.write(secrets.token_bytes(32))
        key = path.read_bytes()
    model = "OpenAI" if os.environ.get("OPENAI_API_KEY") else "the offline model (no key)"
    mode = f", durable (DBOS worker {args.worker})" if args.durable else ""
    print(f"golem web chat on http://{args.host}:{args.port} with {model}{mode}", flush=True)
    app = make_app(args.db, delay=args.delay, key=key, durable=args.durable, worker=args.worker)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
