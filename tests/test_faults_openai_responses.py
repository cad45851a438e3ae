"""The fault suite of ``test_faults.py`` for the OpenAI Responses API.

The same scenarios, helpers and rules, imported from ``test_faults`` (a three-request
tool-using run with one fault storm at request 1, 2 or 3, streamed and not; the run
succeeds after retries or raises ``RunError`` whose partial resumes against the healthy
server; every body holds the pairing rule, every retry resends the same bytes, every
tool runs exactly once), played by ``FaultServer`` from ``fault_server.py`` taught the
Responses API: ``ResponsesFaultServer`` routes ``POST /v1/responses`` to its OpenAI
handling, and ``responses_dialect`` answers in Responses JSON and events whenever the
request body is a Responses body (an ``input`` list). Cancellation from outside at
points Hypothesis chooses holds to the same rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

import fault_server as fs
import pytest
from fault_server import Answer, Exchange, Fault, FaultServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples  # properties/profiles.py: the loaded profile's count
from test_faults import (
    FAST,
    FAULTS,
    KEY,
    RETRIED_UNLESS_STREAMED,
    TIMEOUT,
    TOOL_TURNS,
    assert_complete,
    assert_partial_complete,
    call_ids,
    conversation,
    executed,
    expect_success,
    make_agent,
    pairing_problems,
    run,
)

from golem_core import Message, ToolCallPart, check_pairing
from golem_shell import OpenAIResponsesModel, RunError, Stage, partial_from

pytestmark = pytest.mark.anyio


# -- the Responses dialect of the fault server -------------------------------------------


def _is_responses(body: object) -> bool:
    return isinstance(body, dict) and isinstance(body.get("input"), list)


def _user_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    for part in content or []:
        if isinstance(part, dict) and part.get("type") == "input_text":
            return str(part.get("text", ""))
    return ""


def _assistant_side(item: dict[str, Any]) -> bool:
    return item.get("type") in ("function_call", "reasoning") or item.get("role") == "assistant"


def responses_turns(body: dict[str, Any]) -> int:
    """Assistant turns of a Responses body: runs of assistant-side items."""
    turns = 0
    inside = False
    for item in body["input"]:
        side = _assistant_side(item)
        turns += side and not inside
        inside = side
    return turns


def _response(answer: Answer, payload: dict[str, Any], status: str) -> dict[str, Any]:
    prompt_tokens, completion_tokens = fs._usage_numbers(payload)
    output: list[dict[str, Any]] = []
    if answer.text is not None:
        output.append(
            {
                "id": f"msg_fault{answer.turn}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "annotations": [], "text": answer.text}],
            }
        )
    for j, c in enumerate(answer.calls):
        output.append(
            {
                "id": f"fc_fault{answer.turn}_{j}",
                "type": "function_call",
                "status": "completed",
                "arguments": c.arguments,
                "call_id": c.id,
                "name": c.name,
            }
        )
    return {
        "id": f"resp_fault{answer.turn}",
        "object": "response",
        "created_at": 1758034836,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": str(payload.get("model", "model")),
        "output": output if status == "completed" else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": prompt_tokens,
            "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
            "output_tokens": completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if status == "completed"
        else None,
    }


def responses_json(answer: Answer, payload: dict[str, Any]) -> dict[str, Any]:
    return _response(answer, payload, "completed")


def responses_sse(answer: Answer, payload: dict[str, Any]) -> list[bytes]:
    """The answer as the Responses API streams it: one piece per event."""
    pieces: list[bytes] = []

    def event(kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(pieces), **fields}
        pieces.append(fs._event(kind, data))

    event("response.created", response=_response(answer, payload, "in_progress"))
    final = responses_json(answer, payload)
    for index, item in enumerate(final["output"]):
        if item["type"] == "message":
            event("response.output_item.added", output_index=index, item={**item, "content": []})
            for i, word in enumerate(str(answer.text).split(" ")):
                event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=word if i == 0 else " " + word,
                    logprobs=[],
                )
        else:
            event("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            half = len(item["arguments"]) // 2
            for part in (item["arguments"][:half], item["arguments"][half:]):
                event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=part,
                )
        event("response.output_item.done", output_index=index, item=item)
    event("response.completed", response=final)
    return pieces


@contextlib.contextmanager
def responses_dialect() -> Iterator[None]:
    """``fault_server``'s readers and answer builders, taught Responses bodies (any other
    body goes to the originals unchanged)."""
    originals = {
        name: getattr(fs, name)
        for name in ("system_text", "first_user_text", "_assistant_turns", "_usage_numbers")
    }
    originals["_json_answer"] = fs._json_answer
    originals["_sse"] = fs._sse

    def system_text(provider: Any, body: dict[str, Any]) -> str:
        if _is_responses(body):
            return str(body.get("instructions") or "")
        return str(originals["system_text"](provider, body))

    def first_user_text(body: dict[str, Any]) -> str:
        if _is_responses(body):
            return next((_user_text(i) for i in body["input"] if i.get("role") == "user"), "")
        return str(originals["first_user_text"](body))

    def assistant_turns(body: dict[str, Any]) -> int:
        if _is_responses(body):
            return responses_turns(body)
        return int(originals["_assistant_turns"](body))

    def usage_numbers(payload: dict[str, Any]) -> tuple[int, int]:
        if _is_responses(payload):
            return 10 + 3 * len(payload["input"]), 5
        return tuple(originals["_usage_numbers"](payload))  # type: ignore[return-value]

    def json_answer(provider: Any, answer: Answer, payload: dict[str, Any]) -> dict[str, Any]:
        if _is_responses(payload):
            return responses_json(answer, payload)
        return dict(originals["_json_answer"](provider, answer, payload))

    def sse(provider: Any, answer: Answer, payload: dict[str, Any]) -> list[bytes]:
        if _is_responses(payload):
            return responses_sse(answer, payload)
        return list(originals["_sse"](provider, answer, payload))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fs, "system_text", system_text)
        patch.setattr(fs, "first_user_text", first_user_text)
        patch.setattr(fs, "_assistant_turns", assistant_turns)
        patch.setattr(fs, "_usage_numbers", usage_numbers)
        patch.setattr(fs, "_json_answer", json_answer)
        patch.setattr(fs, "_sse", sse)
        yield


class ResponsesFaultServer(FaultServer):
    """``FaultServer`` that also answers ``POST .../v1/responses`` (as its OpenAI route;
    the dialect fixture makes the answers Responses answers)."""

    async def _answer(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
    ) -> bool:
        if path.endswith("/v1/responses"):
            path += "#/chat/completions"  # routed as OpenAI; exchanges keep the marker
        return await super()._answer(method, path, headers, body, writer)


@pytest.fixture(name="server")
def server_fixture() -> Iterator[ResponsesFaultServer]:
    with responses_dialect(), ResponsesFaultServer(max_seconds=120.0) as server:
        yield server


def make_model(server: FaultServer, **kw: Any) -> OpenAIResponsesModel:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", TIMEOUT)
    return OpenAIResponsesModel("gpt-5", api_key=KEY, base_url=server.openai_base_url, **kw)


# -- the wire rules for Responses bodies ------------------------------------------------------


def responses_shape(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A Responses body as ``pairing_problems`` items: a run of assistant-side items is one
    ("assistant", call ids) turn; an output is ("tool", call id); anything else ("user",)."""
    seq: list[tuple[Any, ...]] = []
    for item in body["input"]:
        if _assistant_side(item):
            ids = [item["call_id"]] if item.get("type") == "function_call" else []
            if seq and seq[-1][0] == "assistant":
                seq[-1] = ("assistant", [*seq[-1][1], *ids])
            else:
                seq.append(("assistant", ids))
        elif item.get("type") == "function_call_output":
            seq.append(("tool", item["call_id"]))
        else:
            seq.append(("user",))
    return seq


def responses_messages(body: dict[str, Any]) -> list[Message]:
    out: list[Message] = []
    for kind, *rest in responses_shape(body):
        if kind == "assistant":
            out.append(
                Message.assistant(tool_calls=[ToolCallPart(i, "lookup", "{}") for i in rest[0]])
            )
        elif kind == "tool":
            out.append(Message.tool_result(rest[0], "lookup", "x"))
        else:
            out.append(Message.user("x"))
    return out


def assert_wire_valid(exchanges: Sequence[Exchange]) -> None:
    for e in exchanges:
        assert e.path.startswith("/v1/responses")
        body = e.json()
        assert body["store"] is False and "messages" not in body
        shape = responses_shape(body)
        assert pairing_problems(shape) == {
            "dangling": 0,
            "orphan": 0,
            "duplicate": 0,
            "starts_with": "user",
        }
        assert check_pairing(responses_messages(body)) == ()
        ids = [i for item in shape if item[0] == "assistant" for i in item[1]]
        assert len(ids) == len(set(ids)), "a call id appears in two turns"


def assert_retries_identical(exchanges: Sequence[Exchange]) -> None:
    """A retry resends exactly the same bytes (requests of one conversation, one turn:
    a run started over is another conversation, with another prompt cache key)."""
    by_turn: dict[tuple[object, int], bytes] = {}
    for e in exchanges:
        turn = (e.json().get("prompt_cache_key"), responses_turns(e.json()))
        if turn in by_turn:
            assert e.body == by_turn[turn], "a retry sent a different body"
        by_turn[turn] = e.body


# -- the fault matrix -------------------------------------------------------------------


@pytest.mark.parametrize("point", [1, 2, 3])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_fault_at_every_point(
    server: ResponsesFaultServer, fault: str, stream: bool, point: int
) -> None:
    scenario = f"{fault}-responses-{stream}-{point}"
    prompt = f"hello {scenario}"
    server.plan(scenario, *([Fault.healthy()] * (point - 1)), *FAULTS[fault])
    model = make_model(server, max_response_bytes=1024 * 1024)
    agent = make_agent(model, scenario)
    try:
        result = await run(agent, (), prompt, stream)
    except RunError as error:
        assert not expect_success(fault, stream), f"{fault} should have been retried: {error}"
        assert error.stage is Stage.REQUEST
        partial = error.partial
        if point == 1:
            assert partial is None
            server.forget(scenario)
            result = await run(agent, (), prompt, stream)
            assert_complete(result.messages, prompt, turns=TOOL_TURNS, final=True)
        else:
            assert partial is not None
            assert partial.requests == point - 1
            assert partial.tool_executions == 2 * (point - 1)
            assert_complete(partial.messages, prompt, turns=point - 1, final=False)
            server.forget(scenario)
            again = "continue" if point == 3 else None
            result = await run(agent, partial.messages, again, stream)
            assert result.conversation_id == partial.conversation_id
            assert result.messages[1 : len(partial.messages)] == partial.messages[1:]
            assert_complete(
                result.messages, prompt, turns=TOOL_TURNS, final=True, continues=1 if again else 0
            )
    else:
        assert expect_success(fault, stream), f"{fault} should have failed the run"
        assert result.requests == TOOL_TURNS + 1
        assert_complete(result.messages, prompt, turns=TOOL_TURNS, final=True)
    finally:
        await model.aclose()
    exchanges = server.of(scenario)
    played = [e for e in exchanges if e.fault is not None and e.fault.kind != "healthy"]
    storm = len(FAULTS[fault])
    if expect_success(fault, stream):
        assert len(played) == storm
    elif fault in RETRIED_UNLESS_STREAMED or fault == "503-storm":
        assert len(played) == (1 if stream and fault != "503-storm" else FAST.max_attempts + 1)
    else:
        assert len(played) == 1
    assert len(exchanges) >= 3
    assert_wire_valid(exchanges)
    assert_retries_identical([e for e in exchanges if b'"continue"' not in e.body])
    for turn in range(TOOL_TURNS):
        for j in range(2):
            assert executed[f"{prompt}/{turn}/{j}"] == 1


# -- cancellation against the loopback server, after a delay Hypothesis picks --------------------


@pytest.fixture(scope="module")
def slow_server() -> Iterator[ResponsesFaultServer]:
    with responses_dialect(), ResponsesFaultServer(chunk_pause=0.002, max_seconds=120.0) as server:
        yield server


_cancel_runs = iter(range(1_000_000))


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(delay=st.floats(0.0, 0.06), stream=st.booleans(), again=st.sampled_from([None, "continue"]))
def test_cancellation_over_http_leaves_a_complete_resumable_partial(
    slow_server: ResponsesFaultServer, delay: float, stream: bool, again: str | None
) -> None:
    asyncio.run(_cancel_http(slow_server, delay, stream, again))


async def _cancel_http(server: FaultServer, delay: float, stream: bool, again: str | None) -> None:
    scenario = f"cancel-responses-{next(_cancel_runs)}"
    prompt = f"hello {scenario}"
    model = make_model(server, timeout=5.0)
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
            done = len(conversation(partial.messages)["turns"])
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
    finally:
        await model.aclose()
    assert_wire_valid(server.of(scenario))
    ran = {key: n for key, n in executed.items() if key.startswith(prompt + "/")}
    assert all(n == 1 for n in ran.values())


def test_the_dialect_reads_responses_bodies() -> None:
    body = {
        "instructions": "Be terse. scenario=x",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
            {"type": "function_call", "call_id": "a", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "x"},
            {"role": "assistant", "content": "ok"},
            {"type": "function_call", "call_id": "b", "name": "lookup", "arguments": "{}"},
        ],
    }
    assert responses_turns(body) == 2
    assert responses_shape(body) == [
        ("user",),
        ("assistant", ["a"]),
        ("tool", "a"),
        ("assistant", ["b"]),
    ]
    assert json.loads(json.dumps(responses_json(Answer(0, text="done"), body)))["output"][0][
        "type"
    ] == ("message")
