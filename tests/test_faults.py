"""Faults at every point of a tool-using run: retried, or a resumable partial; nothing lost.

Every scenario is a three-request run against ``FaultServer`` (request 1 and 2 call the
``lookup`` tool twice each, request 3 answers), with one fault storm injected at request
1, 2 or 3, for both providers, streamed and not. The run either succeeds after retries,
or raises ``RunError`` whose partial, passed back to ``run_with_history`` against the
now healthy server, completes the conversation. For every scenario:

- every request body the server received passes the providers' pairing rule (checked
  on the wire, and again through ``check_pairing`` on the body read back as messages);
- a retry resends the very same bytes: it never duplicates or drops a message;
- the partial holds every model turn the run completed (and the results of their tool
  batches), each exactly once; the resumed conversation holds every turn and every
  result exactly once, and each tool ran exactly once.

Cancellation from outside, at points Hypothesis chooses, holds to the same rule: for an
offline model that awaits between every step, and for the loopback server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from fault_server import (  # noqa: F401 (fixture, asked for by name)
    Exchange,
    Fault,
    FaultServer,
    Provider,
    fault_server_fixture,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples  # properties/profiles.py: the loaded profile's count

from golem_core import (
    INTERRUPTED_RESULT_TEXT,
    UNFINISHED_RESULT_TEXT,
    Message,
    ModelDelta,
    ModelRequest,
    RetryPolicy,
    Role,
    ToolCallPart,
    check_pairing,
)
from golem_shell import (
    Agent,
    AnthropicModel,
    FunctionModel,
    OpenAIModel,
    PartialResult,
    RunError,
    RunResult,
    Stage,
    partial_from,
)
from golem_shell.models.function import deltas_of

pytestmark = pytest.mark.anyio

KEY = "sk-faults-0123456789abcdef"
FAST = RetryPolicy(max_attempts=3, max_total_seconds=10.0, base=0.005, cap=0.02)
TIMEOUT = 0.3  # seconds the client waits to connect, and between two reads
STALL = 1.5  # seconds a stalling server stays silent (bounded; the client gives up first)
TOOL_TURNS = 2
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic")

executed: Counter[str] = Counter()


async def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: what to look up.
    """
    executed[key] += 1
    return f"value of {key}"


def make_model(provider: Provider, server: FaultServer, **kw: Any) -> OpenAIModel | AnthropicModel:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", TIMEOUT)
    kw.setdefault("api_key", KEY)
    if provider == "openai":
        return OpenAIModel("gpt-4o-mini", base_url=server.openai_base_url, **kw)
    return AnthropicModel("claude-sonnet-4-5", base_url=server.anthropic_base_url, **kw)


def make_agent(model: Any, scenario: str) -> Agent[None, str]:
    return Agent(model, instructions=f"Be terse. scenario={scenario}", tools=[lookup])


# -- what the model (the server, or the offline model) says, turn by turn ----------------


def call_ids(prompt: str, turn: int, calls: int = 2) -> tuple[str, ...]:
    tag = hashlib.sha1(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return tuple(f"call_{turn}_{j}_{tag}" for j in range(calls))


def final_text(prompt: str, turns: int = TOOL_TURNS) -> str:
    return f"done: {prompt} after {turns} turns"


# -- the wire pairing rule ------------------------------------------------------------


def pairing_problems(seq: Sequence[tuple[Any, ...]]) -> dict[str, Any]:
    """The strict OpenAI/Anthropic pairing rule over ("user",) / ("assistant", ids) /
    ("tool", id) items (as ``/work/shared/bench/workload.py``'s ``pairing_problems``)."""
    dangling = orphan = duplicate = 0
    open_ids: set[str] = set()
    answered: set[str] = set()
    first = None
    for item in seq:
        kind = item[0]
        if first is None and kind != "system":
            first = kind
        if kind == "tool":
            cid = item[1]
            if cid in open_ids:
                open_ids.discard(cid)
                answered.add(cid)
            elif cid in answered:
                duplicate += 1
            else:
                orphan += 1
            continue
        dangling += len(open_ids)
        open_ids, answered = set(), set()
        if kind == "assistant":
            open_ids = set(item[1])
    dangling += len(open_ids)
    return {"dangling": dangling, "orphan": orphan, "duplicate": duplicate, "starts_with": first}


def wire_shape(provider: Provider, body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A request body as pairing items. Anthropic's results must lead their user turn."""
    seq: list[tuple[Any, ...]] = []
    for m in body["messages"]:
        role = m["role"]
        content = m.get("content")
        if provider == "openai":
            if role == "assistant":
                seq.append(("assistant", [c["id"] for c in m.get("tool_calls") or []]))
            elif role == "tool":
                seq.append(("tool", m["tool_call_id"]))
            else:
                seq.append((role,))
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if role == "assistant":
            seq.append(("assistant", [b["id"] for b in blocks if b["type"] == "tool_use"]))
            continue
        seen_other = False
        for b in blocks:
            if b["type"] == "tool_result":
                assert not seen_other, "a tool_result after other content in a user turn"
                seq.append(("tool", b["tool_use_id"]))
            else:
                seen_other = True
        if seen_other:
            seq.append(("user",))
    return seq


def wire_messages(provider: Provider, body: dict[str, Any]) -> list[Message]:
    """A request body read back as golem messages (roles, calls and results only)."""
    out: list[Message] = []
    for m in body["messages"]:
        role = m["role"]
        content = m.get("content")
        if provider == "openai":
            if role == "assistant":
                calls = [
                    ToolCallPart(c["id"], c["function"]["name"], c["function"]["arguments"])
                    for c in m.get("tool_calls") or []
                ]
                out.append(Message.assistant(content or None, tool_calls=calls))
            elif role == "tool":
                out.append(Message.tool_result(m["tool_call_id"], None, str(content)))
            elif role == "user":
                out.append(Message.user(str(content)))
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if role == "assistant":
            calls = [
                ToolCallPart(b["id"], b["name"], json.dumps(b["input"]))
                for b in blocks
                if b["type"] == "tool_use"
            ]
            text = "".join(b.get("text", "") for b in blocks if b["type"] == "text")
            out.append(Message.assistant(text or None, tool_calls=calls))
            continue
        for b in blocks:
            if b["type"] == "tool_result":
                out.append(Message.tool_result(b["tool_use_id"], None, str(b.get("content"))))
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        if texts:
            out.append(Message.user("".join(texts)))
    return out


def assert_wire_valid(exchanges: Sequence[Exchange]) -> None:
    """Every body is pairing-valid, and a retry resends exactly the same bytes."""
    for e in exchanges:
        assert e.provider is not None
        body = e.json()
        problems = pairing_problems(wire_shape(e.provider, body))
        assert problems == {"dangling": 0, "orphan": 0, "duplicate": 0, "starts_with": "user"}
        assert check_pairing(wire_messages(e.provider, body)) == ()
        ids = [
            i for item in wire_shape(e.provider, body) if item[0] == "assistant" for i in item[1]
        ]
        assert len(ids) == len(set(ids)), "a call id appears in two turns"


def assert_retries_identical(exchanges: Sequence[Exchange]) -> None:
    """A retry resends exactly the same bytes (requests of one conversation, one turn:
    a run started over is another conversation, with another prompt cache key)."""
    by_turn: dict[tuple[object, int], bytes] = {}
    for e in exchanges:
        turn = (
            e.json().get("prompt_cache_key"),
            sum(1 for m in e.json()["messages"] if m["role"] == "assistant"),
        )
        if turn in by_turn:
            assert e.body == by_turn[turn], "a retry sent a different body"
        by_turn[turn] = e.body


# -- the conversation rule --------------------------------------------------------------


def conversation(messages: Sequence[Message]) -> dict[str, Any]:
    """What a conversation holds, for exact comparison."""
    rest = [m for m in messages if m.role is not Role.SYSTEM]
    return {
        "users": [m.text for m in rest if m.role is Role.USER],
        "turns": [
            tuple(c.id for c in m.tool_calls)
            for m in rest
            if m.role is Role.ASSISTANT and m.tool_calls
        ],
        "results": [m.tool_call_id for m in rest if m.role is Role.TOOL],
        "texts": [m.text for m in rest if m.role is Role.ASSISTANT and not m.tool_calls],
    }


def assert_complete(
    messages: Sequence[Message],
    prompt: str,
    *,
    turns: int,
    final: bool,
    continues: int = 0,
    interrupted: frozenset[str] = frozenset(),
) -> None:
    """``messages`` hold exactly ``turns`` tool turns (each answered once, right after it)
    and the final answer when ``final``; nothing lost, nothing twice."""
    got = conversation(messages)
    assert got["users"] == [prompt] + ["continue"] * continues
    expected_turns = [call_ids(prompt, t) for t in range(turns)]
    assert got["turns"] == expected_turns
    assert got["results"] == [i for t in expected_turns for i in t]
    assert got["texts"] == ([final_text(prompt, turns)] if final else [])
    assert check_pairing(messages) == ()
    for m in messages:
        if m.role is Role.TOOL:
            assert m.tool_call_id is not None
            if m.tool_call_id in interrupted:
                assert m.text in (INTERRUPTED_RESULT_TEXT, UNFINISHED_RESULT_TEXT)
            else:
                turn, j = m.tool_call_id.split("_")[1:3]
                assert m.text == f"value of {prompt}/{turn}/{j}"


# -- the fault matrix -------------------------------------------------------------------

DEEP = b"[" * 100_000

FAULTS: dict[str, tuple[Fault, ...]] = {
    "429-retry-after": (Fault.status_code(429, retry_after="0.01"),) * 2,
    "429-retry-after-ms": (Fault.status_code(429, retry_after_ms="20"),),
    "500-no-retry-after": (Fault.status_code(500),) * 2,
    "503-storm": (Fault.status_code(503, retry_after="0.01"),) * 6,
    "529-overloaded": (Fault.status_code(529),),
    "500-deep-json-body": (Fault.status_code(500, body=DEEP),),
    "401-unauthorized": (Fault.status_code(401),),
    "stall-before-first-byte": (Fault.stall_before(STALL),),
    "stall-mid-stream": (Fault.stall_mid(STALL),),
    "reset-before-first-byte": (Fault.reset_before(),),
    "reset-mid-stream": (Fault.reset_mid(),),
    "cut-mid-stream": (Fault.cut_mid(),),
    "malformed-json": (Fault.malformed_json(),),
    "malformed-sse": (Fault.malformed_sse(),),
    "wrong-content-type": (Fault.wrong_content_type(),),
    "huge-body": (Fault.huge_body(40 * 1024 * 1024),),
}
RETRIED = {
    "429-retry-after",
    "429-retry-after-ms",
    "500-no-retry-after",
    "529-overloaded",
    "500-deep-json-body",
    "stall-before-first-byte",
    "reset-before-first-byte",
}
RETRIED_UNLESS_STREAMED = {"stall-mid-stream", "reset-mid-stream", "cut-mid-stream"}


def expect_success(fault: str, stream: bool) -> bool:
    return fault in RETRIED or (fault in RETRIED_UNLESS_STREAMED and not stream)


async def run(
    agent: Agent[None, str], history: Sequence[Message], prompt: str | None, stream: bool
) -> RunResult[str]:
    if stream:
        events: list[Any] = []
        result = await agent.run_stream_with_history(history, prompt, on_delta=events.append)
        assert all(e.run_id == result.run_id for e in events)
        return result
    return await agent.run_with_history(history, prompt)


@pytest.mark.parametrize("point", [1, 2, 3])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_fault_at_every_point(
    fault_server: FaultServer, fault: str, provider: Provider, stream: bool, point: int
) -> None:
    scenario = f"{fault}-{provider}-{stream}-{point}"
    prompt = f"hello {scenario}"
    fault_server.plan(scenario, *([Fault.healthy()] * (point - 1)), *FAULTS[fault])
    model = make_model(provider, fault_server, max_response_bytes=1024 * 1024)
    agent = make_agent(model, scenario)
    try:
        result = await run(agent, (), prompt, stream)
    except RunError as error:
        assert not expect_success(fault, stream), f"{fault} should have been retried: {error}"
        assert error.stage is Stage.REQUEST
        partial = error.partial
        if point == 1:
            assert partial is None  # nothing was completed: start over
            fault_server.forget(scenario)
            result = await run(agent, (), prompt, stream)
            assert_complete(result.messages, prompt, turns=TOOL_TURNS, final=True)
        else:
            assert partial is not None
            assert partial.requests == point - 1
            assert partial.tool_executions == 2 * (point - 1)
            assert all(m.run_id == partial.run_id for m in partial.messages)
            assert_complete(partial.messages, prompt, turns=point - 1, final=False)
            fault_server.forget(scenario)
            again = "continue" if point == 3 else None
            result = await run(agent, partial.messages, again, stream)
            assert result.conversation_id == partial.conversation_id
            assert result.messages[1 : len(partial.messages)] == partial.messages[1:]
            assert_complete(
                result.messages,
                prompt,
                turns=TOOL_TURNS,
                final=True,
                continues=1 if again else 0,
            )
    else:
        assert expect_success(fault, stream), f"{fault} should have failed the run"
        assert result.requests == TOOL_TURNS + 1
        assert_complete(result.messages, prompt, turns=TOOL_TURNS, final=True)
    finally:
        await model.aclose()
    exchanges = fault_server.of(scenario)
    played = [e for e in exchanges if e.fault is not None and e.fault.kind != "healthy"]
    storm = len(FAULTS[fault])
    if expect_success(fault, stream):
        assert len(played) == storm  # every failure was absorbed by a retry
    elif fault in RETRIED_UNLESS_STREAMED or fault == "503-storm":
        assert len(played) == (1 if stream and fault != "503-storm" else FAST.max_attempts + 1)
    else:
        assert len(played) == 1  # not retryable: never sent again
    assert len(exchanges) >= 3
    assert_wire_valid(exchanges)
    first_run = [e for e in exchanges if b'"continue"' not in e.body]
    assert_retries_identical(first_run)
    for turn in range(TOOL_TURNS):
        for j in range(2):
            assert executed[f"{prompt}/{turn}/{j}"] == 1  # every tool ran exactly once


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_body_of_tens_of_megabytes_is_refused_at_the_default_limit(
    fault_server: FaultServer, provider: Provider, stream: bool
) -> None:
    scenario = f"huge-default-{provider}-{stream}"
    fault_server.plan(scenario, Fault.huge_body(40 * 1024 * 1024))
    model = make_model(provider, fault_server, timeout=10.0)
    try:
        with pytest.raises(RunError) as info:
            await run(make_agent(model, scenario), (), "hello", stream)
    finally:
        await model.aclose()
    assert info.value.partial is None
    assert "larger than" in str(info.value)


async def test_a_valid_answer_after_n_failures(fault_server: FaultServer) -> None:
    """Exactly ``max_attempts`` failures are absorbed; one more fails the run."""
    for failures, ok in ((3, True), (4, False)):
        scenario = f"n-failures-{failures}"
        fault_server.plan(scenario, *[Fault.status_code(500)] * failures)
        model = make_model("openai", fault_server)
        agent = make_agent(model, scenario)
        try:
            if ok:
                result = await agent.run(f"hi {failures}")
                assert result.output == final_text(f"hi {failures}")
            else:
                with pytest.raises(RunError):
                    await agent.run(f"hi {failures}")
        finally:
            await model.aclose()
        assert len(fault_server.of(scenario)) >= failures + (1 if ok else 0)


# -- cancellation: offline, Hypothesis picks the step ------------------------------------


class Offline:
    """An offline model and tool that await between every step, and cancel the run's
    task at step ``cancel_at`` (as a cancel from outside would land there)."""

    def __init__(self, prompt: str, cancel_at: int | None) -> None:
        self.prompt = prompt
        self.cancel_at = cancel_at
        self.steps = 0
        self.task: asyncio.Task[Any] | None = None
        self.completed: list[tuple[str, ...]] = []  # model turns handed to the run
        self.ran: Counter[str] = Counter()

    async def step(self) -> None:
        self.steps += 1
        if self.steps == self.cancel_at and self.task is not None:
            self.task.cancel()
        await asyncio.sleep(0)

    def answer(self, request: ModelRequest) -> Message:
        turn = sum(1 for m in request.messages if m.role is Role.ASSISTANT)
        if turn >= TOOL_TURNS:
            return Message.assistant(final_text(self.prompt))
        calls = [
            ToolCallPart(cid, "lookup", json.dumps({"key": f"{self.prompt}/{turn}/{j}"}))
            for j, cid in enumerate(call_ids(self.prompt, turn))
        ]
        return Message.assistant(tool_calls=calls)

    async def respond(self, request: ModelRequest) -> Message:
        for _ in range(3):
            await self.step()
        message = self.answer(request)
        self.completed.append(tuple(c.id or "" for c in message.tool_calls))
        return message  # no await from here until the run has it

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        message = self.answer(request)
        for delta in deltas_of(message):
            await self.step()
            yield delta
        await self.step()
        self.completed.append(tuple(c.id or "" for c in message.tool_calls))

    def agent(self) -> Agent[None, str]:
        async def lookup(key: str) -> str:
            """Look a key up.

            Args:
                key: what to look up.
            """
            await self.step()
            await self.step()
            self.ran[key] += 1
            return f"value of {key}"

        model = FunctionModel(self.respond, stream_function=self.stream)
        return Agent(model, instructions="Be terse.", tools=[lookup])


def assert_partial_complete(
    partial: PartialResult, prompt: str, completed: Sequence[tuple[str, ...]]
) -> frozenset[str]:
    """The partial holds every completed model turn once; every batch but the last is
    answered; in the last, each call that finished has its result and every other call is
    closed as unfinished (it was running) or interrupted (it never started), so the
    partial is paired (issue 28.1). Returns the ids closed without a result."""
    got = conversation(partial.messages)
    model_turns = [t for t in completed if t]
    assert got["turns"] == model_turns
    assert got["texts"] == []  # a final answer ends the run: never in a partial
    answered = set(got["results"])
    assert len(answered) == len(got["results"])
    for turn in model_turns[:-1]:
        assert set(turn) <= answered
    last = set(model_turns[-1]) if model_turns else set()
    assert last <= answered or not (last & answered)
    assert all(p.kind == "dangling" and p.call_id in last for p in check_pairing(partial.messages))
    closed = {
        str(m.tool_call_id)
        for m in partial.messages
        if m.role is Role.TOOL and m.text in (UNFINISHED_RESULT_TEXT, INTERRUPTED_RESULT_TEXT)
    }
    assert closed <= last
    return frozenset(last - (answered - closed))


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    cancel_at=st.integers(1, 45), stream=st.booleans(), again=st.sampled_from([None, "continue"])
)
def test_cancellation_offline_leaves_a_complete_resumable_partial(
    cancel_at: int, stream: bool, again: str | None
) -> None:
    asyncio.run(_cancel_offline(cancel_at, stream, again))


async def _cancel_offline(cancel_at: int, stream: bool, again: str | None) -> None:
    prompt = f"offline {cancel_at} {stream} {again}"
    offline = Offline(prompt, cancel_at)
    agent = offline.agent()
    events: list[Any] = []
    coro = agent.run_stream(prompt, on_delta=events.append) if stream else agent.run(prompt)
    task = asyncio.create_task(coro)
    offline.task = task
    try:
        result = await task
    except asyncio.CancelledError as cancelled:
        partial = partial_from(cancelled)
    else:
        assert_complete(result.messages, prompt, turns=TOOL_TURNS, final=True)
        return
    if partial is None:  # nothing was completed
        assert offline.completed == []
        assert sum(offline.ran.values()) == 0
        return
    interrupted = assert_partial_complete(partial, prompt, offline.completed)
    done = len([t for t in offline.completed if t])
    assert partial.requests == len(offline.completed)
    for m in partial.messages:
        if m.role is Role.TOOL and m.text.startswith("value of "):
            assert offline.ran[m.text.removeprefix("value of ")] == 1
    healthy = Offline(prompt, None)
    result = await healthy.agent().run_with_history(partial.messages, again)
    assert_complete(
        result.messages,
        prompt,
        turns=TOOL_TURNS,
        final=True,
        continues=1 if again else 0,
        interrupted=interrupted,
    )
    assert result.messages[1 : len(partial.messages)] == partial.messages[1:]
    assert done <= TOOL_TURNS
    # a batch the cancel cut short is answered "interrupted" on resume, not run again:
    # across both runs every tool call ran at most once
    assert all(offline.ran[key] + healthy.ran[key] == 1 for key in offline.ran | healthy.ran)


# -- cancellation: against the loopback server, after a delay Hypothesis picks ----------------


@pytest.fixture(scope="module")
def slow_server() -> Iterator[FaultServer]:
    with FaultServer(chunk_pause=0.002, max_seconds=120.0) as server:
        yield server


@settings(
    max_examples=examples(24),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    delay=st.floats(0.0, 0.06),
    provider=st.sampled_from(PROVIDERS),
    stream=st.booleans(),
    again=st.sampled_from([None, "continue"]),
)
def test_cancellation_over_http_leaves_a_complete_resumable_partial(
    slow_server: FaultServer, delay: float, provider: Provider, stream: bool, again: str | None
) -> None:
    asyncio.run(_cancel_http(slow_server, delay, provider, stream, again))


_cancel_runs = iter(range(1_000_000))


async def _cancel_http(
    server: FaultServer, delay: float, provider: Provider, stream: bool, again: str | None
) -> None:
    scenario = f"cancel-{next(_cancel_runs)}"
    prompt = f"hello {scenario}"
    model = make_model(provider, server, timeout=5.0)
    agent = make_agent(model, scenario)
    try:
        task = asyncio.create_task(run(agent, (), prompt, stream))
        await asyncio.sleep(delay)
        task.cancel()
        try:
            result = await task
        except asyncio.CancelledError as cancelled:
            partial = partial_from(cancelled)
        else:
            assert_complete(result.messages, prompt, turns=TOOL_TURNS, final=True)
            return
        if partial is None:
            result = await run(agent, (), prompt, stream)
            assert_complete(result.messages, prompt, turns=TOOL_TURNS, final=True)
        else:
            got = conversation(partial.messages)
            done = len(got["turns"])
            delivered = [call_ids(prompt, t) for t in range(done)]
            interrupted = assert_partial_complete(partial, prompt, delivered)
            result = await run(agent, partial.messages, again, stream)
            assert_complete(
                result.messages,
                prompt,
                turns=TOOL_TURNS,
                final=True,
                continues=1 if again else 0,
                interrupted=interrupted,
            )
            assert result.messages[1 : len(partial.messages)] == partial.messages[1:]
    finally:
        await model.aclose()
    assert_wire_valid(server.of(scenario))
    ran = {key: n for key, n in executed.items() if key.startswith(prompt + "/")}
    assert all(n == 1 for n in ran.values())  # no tool call ran twice
    assert len(ran) >= 2 * TOOL_TURNS - 2
