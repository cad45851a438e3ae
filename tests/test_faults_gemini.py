"""The fault suite of ``tests/test_faults.py``, for Gemini.

The same scenarios, the same fault storms at request 1, 2 or 3, streamed and not, the
same conversation rule, run against ``FaultServer`` speaking the Gemini API: the server,
the suite's helpers and its tests themselves (``test_fault_at_every_point``,
``_cancel_http``) are reused by import, with provider ``"gemini"``.

``GeminiFaultServer`` only reads a Gemini request (the path says whether it streams,
``systemInstruction`` holds the scenario) and lets ``FaultServer`` play the answer.
While this module runs, the server's wire writers (``_json_answer``, ``_sse``,
``_error_body``, ``_malformed_event``) and the suite's ``make_model``,
``assert_wire_valid`` and ``assert_retries_identical`` also speak Gemini for provider
``"gemini"``, and stay as they are for the others. The deterministic model numbers its
calls in ``functionCall.id`` (an id Gemini 3 gives; older models give none, which
``test_gemini_model.py`` covers).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import fault_server
import pytest
import test_faults
from fault_server import _SCENARIO, Answer, Exchange, Fault, FaultServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples  # properties/profiles.py: the loaded profile's count
from provider_server import fixture_bytes
from test_faults import (
    FAST,
    FAULTS,
    KEY,
    TIMEOUT,
    final_text,
    make_agent,
    pairing_problems,
)

from golem_core import Message, RetryPolicy, ToolCallPart, check_pairing
from golem_shell import GeminiModel, RunError

pytestmark = pytest.mark.anyio

_PATH = re.compile(r"/models/[^/:?]+:(generateContent|streamGenerateContent)")


# -- reading and writing the Gemini wire in the fault server -----------------------------


def _as_chat(payload: dict[str, Any]) -> dict[str, Any]:
    """A Gemini body in the shape ``FaultServer._decide`` reads (roles and user text)."""
    messages = []
    for content in payload.get("contents", []):
        text = "".join(p.get("text", "") for p in content.get("parts", []) if "text" in p)
        role = "assistant" if content.get("role") == "model" else "user"
        if role == "user" and not text:
            continue  # function responses only: not a user prompt
        messages.append({"role": role, "content": text})
    return {"messages": messages}


class GeminiFaultServer(FaultServer):
    """``FaultServer`` that also answers ``POST .../models/<m>:generateContent`` and
    ``...:streamGenerateContent?alt=sse``."""

    async def _answer(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
    ) -> bool:
        found = _PATH.search(path)
        if found is None:
            return await super()._answer(method, path, headers, body, writer)
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        stream = found.group(1) == "streamGenerateContent"
        scenario = None
        if isinstance(payload, dict):
            system = payload.get("systemInstruction", {}).get("parts", [{}])[0].get("text", "")
            match = _SCENARIO.search(system)
            scenario = match.group(1) if match else None
        with self._lock:
            exchange = Exchange(
                len(self.exchanges) + 1,
                "gemini",
                path,
                headers,
                body,
                scenario,
                stream,  # type: ignore[arg-type]
            )
            self.exchanges.append(exchange)
            plan = self._plans.get(scenario or "")
            fault = plan.pop(0) if plan else None
        exchange.fault = fault
        if method != "POST" or not isinstance(payload, dict):
            await self._write_full(writer, 404, "application/json", b'{"error":"not found"}')
            return True
        answer = self._decide(_as_chat(payload))
        return await self._play(exchange, "gemini", payload, answer, fault, writer)  # type: ignore[arg-type]


def _usage(payload: dict[str, Any]) -> dict[str, int]:
    prompt = 10 + 3 * len(payload.get("contents", []))
    return {"promptTokenCount": prompt, "candidatesTokenCount": 5, "totalTokenCount": prompt + 5}


def _parts(answer: Answer) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if answer.text is not None:
        parts.append({"text": answer.text})
    for c in answer.calls:
        call = {"id": c.id, "name": c.name, "args": json.loads(c.arguments)}
        parts.append({"functionCall": call})
    return parts


def _chunk(parts: list[dict[str, Any]], payload: dict[str, Any], finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    return {
        "candidates": [candidate],
        "usageMetadata": _usage(payload),
        "modelVersion": "gemini-2.5-flash",
    }


def gemini_json(answer: Answer, payload: dict[str, Any]) -> dict[str, Any]:
    return _chunk(_parts(answer), payload, True)


def gemini_sse(answer: Answer, payload: dict[str, Any]) -> list[bytes]:
    """The answer as Gemini streams it: text in words, each call whole, the finish last."""
    pieces: list[dict[str, Any]] = []
    if answer.text is not None:
        words = answer.text.split(" ")
        pieces.extend({"text": w if i == 0 else " " + w} for i, w in enumerate(words))
    pieces.extend(_parts(Answer(answer.turn, calls=answer.calls)))
    chunks = [_chunk([p], payload, i == len(pieces) - 1) for i, p in enumerate(pieces)]
    return [b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks]


def gemini_error(status: int) -> bytes:
    names = {
        401: "gemini/error_401_unauthenticated.json",
        500: "gemini/error_500_internal.json",
        503: "gemini/error_503_unavailable.json",
        529: "gemini/error_503_unavailable.json",
    }
    if status == 429:
        quota = json.loads(fixture_bytes("gemini/error_429_resource_exhausted.json"))
        quota["error"]["details"][-1]["retryDelay"] = "0.01s"
        return json.dumps(quota).encode()
    return fixture_bytes(names.get(status, "gemini/error_500_internal.json"))


_MALFORMED = b'data: {"candidates": [{"content": {"parts": [{"text": \r\n\r\n'


@pytest.fixture(scope="module", autouse=True)
def gemini_dialect() -> Iterator[None]:
    """The server's wire writers speak Gemini for provider ``"gemini"``, and the suite's
    model factory and wire check know Gemini, for the duration of this module."""
    json_answer, sse, error_body, malformed = (
        fault_server._json_answer,
        fault_server._sse,
        fault_server._error_body,
        fault_server._malformed_event,
    )
    make_model, wire_valid = test_faults.make_model, test_faults.assert_wire_valid
    retries_identical = test_faults.assert_retries_identical

    def patched_model(provider: str, server: FaultServer, **kw: Any) -> Any:
        return (
            gemini_model(server, **kw)
            if provider == "gemini"
            else make_model(provider, server, **kw)
        )  # type: ignore[arg-type]

    def patched_valid(exchanges: Sequence[Exchange]) -> None:
        if exchanges and all(e.provider == "gemini" for e in exchanges):
            assert_gemini_wire_valid(exchanges)
        else:
            wire_valid(exchanges)

    def patched_identical(exchanges: Sequence[Exchange]) -> None:
        if exchanges and all(e.provider == "gemini" for e in exchanges):
            assert_retries_identical(exchanges)
        else:
            retries_identical(exchanges)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            fault_server,
            "_json_answer",
            lambda p, a, pl: gemini_json(a, pl) if p == "gemini" else json_answer(p, a, pl),
        )
        mp.setattr(
            fault_server,
            "_sse",
            lambda p, a, pl: gemini_sse(a, pl) if p == "gemini" else sse(p, a, pl),
        )
        mp.setattr(
            fault_server,
            "_error_body",
            lambda p, s: gemini_error(s) if p == "gemini" else error_body(p, s),
        )
        mp.setattr(
            fault_server,
            "_malformed_event",
            lambda p: _MALFORMED if p == "gemini" else malformed(p),
        )
        mp.setattr(test_faults, "make_model", patched_model)
        mp.setattr(test_faults, "assert_wire_valid", patched_valid)
        mp.setattr(test_faults, "assert_retries_identical", patched_identical)
        yield


@pytest.fixture(name="gemini_server")
def gemini_server_fixture() -> Iterator[GeminiFaultServer]:
    server = GeminiFaultServer(max_seconds=120.0)
    with server:
        yield server


def gemini_model(server: FaultServer, **kw: Any) -> GeminiModel:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", TIMEOUT)
    kw.setdefault("api_key", KEY)
    return GeminiModel("gemini-2.5-flash", base_url=f"{server.url}/v1beta", **kw)


# -- the wire rule, on Gemini bodies ------------------------------------------------------


def wire_shape(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A Gemini body as the suite's pairing items; responses must lead their content."""
    seq: list[tuple[Any, ...]] = []
    for content in body["contents"]:
        parts = content["parts"]
        if content["role"] == "model":
            seq.append(
                ("assistant", [p["functionCall"]["id"] for p in parts if "functionCall" in p])
            )
            continue
        seen_other = False
        for p in parts:
            if "functionResponse" in p:
                assert not seen_other, "a functionResponse after other parts of a user content"
                seq.append(("tool", p["functionResponse"]["id"]))
            else:
                seen_other = True
        if seen_other:
            seq.append(("user",))
    return seq


def wire_messages(body: dict[str, Any]) -> list[Message]:
    """A Gemini body read back as golem messages (roles, calls and results only)."""
    out: list[Message] = []
    for content in body["contents"]:
        parts = content["parts"]
        if content["role"] == "model":
            calls = [
                ToolCallPart(
                    p["functionCall"]["id"],
                    p["functionCall"]["name"],
                    json.dumps(p["functionCall"]["args"]),
                )
                for p in parts
                if "functionCall" in p
            ]
            text = "".join(p.get("text", "") for p in parts)
            out.append(Message.assistant(text or None, tool_calls=calls))
            continue
        for p in parts:
            if "functionResponse" in p:
                r = p["functionResponse"]
                out.append(Message.tool_result(r["id"], r["name"], json.dumps(r["response"])))
        texts = [p["text"] for p in parts if "text" in p]
        if texts:
            out.append(Message.user("".join(texts)))
    return out


def assert_gemini_wire_valid(exchanges: Sequence[Exchange]) -> None:
    """Every body is pairing-valid (in call order, by id and name), and a retry resends
    exactly the same bytes."""
    for e in exchanges:
        body = e.json()
        shape = wire_shape(body)
        problems = pairing_problems(shape)
        assert problems == {"dangling": 0, "orphan": 0, "duplicate": 0, "starts_with": "user"}
        assert check_pairing(wire_messages(body)) == ()
        ids = [i for item in shape if item[0] == "assistant" for i in item[1]]
        assert len(ids) == len(set(ids)), "a call id appears in two turns"
        contents = body["contents"]
        for k, content in enumerate(contents):
            calls = [p["functionCall"] for p in content["parts"] if "functionCall" in p]
            if calls:
                answers = [
                    p["functionResponse"]
                    for p in contents[k + 1]["parts"]
                    if "functionResponse" in p
                ]
                assert [(a["id"], a["name"]) for a in answers] == [
                    (c["id"], c["name"]) for c in calls
                ]


def assert_retries_identical(exchanges: Sequence[Exchange]) -> None:
    by_turn: dict[int, bytes] = {}
    for e in exchanges:
        turn = sum(1 for c in e.json()["contents"] if c["role"] == "model")
        if turn in by_turn:
            assert e.body == by_turn[turn], "a retry sent a different body"
        by_turn[turn] = e.body


# -- the fault matrix, for Gemini ----------------------------------------------------------


@pytest.mark.parametrize("point", [1, 2, 3])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_fault_at_every_point(
    gemini_server: GeminiFaultServer, fault: str, stream: bool, point: int
) -> None:
    """``test_faults.test_fault_at_every_point`` itself, with provider ``"gemini"``."""
    await test_faults.test_fault_at_every_point(gemini_server, fault, "gemini", stream, point)  # type: ignore[arg-type]
    exchanges = gemini_server.of(f"{fault}-gemini-{stream}-{point}")
    assert len(exchanges) >= 3
    assert all(e.provider == "gemini" for e in exchanges)
    assert_gemini_wire_valid(exchanges)


async def test_the_other_providers_are_untouched(gemini_server: GeminiFaultServer) -> None:
    """The dialect patch speaks Gemini only to Gemini: OpenAI still gets OpenAI."""
    model = test_faults.make_model("openai", gemini_server)
    try:
        result = await make_agent(model, "untouched").run("hi untouched")
    finally:
        await model.aclose()
    assert result.output == final_text("hi untouched")
    assert {e.provider for e in gemini_server.of("untouched")} == {"openai"}


@pytest.fixture(scope="module")
def slow_gemini_server() -> Iterator[GeminiFaultServer]:
    with GeminiFaultServer(chunk_pause=0.002, max_seconds=120.0) as server:
        yield server


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(delay=st.floats(0.0, 0.06), stream=st.booleans(), again=st.sampled_from([None, "continue"]))
def test_cancellation_over_http_leaves_a_complete_resumable_partial(
    slow_gemini_server: GeminiFaultServer, delay: float, stream: bool, again: str | None
) -> None:
    asyncio.run(test_faults._cancel_http(slow_gemini_server, delay, "gemini", stream, again))  # type: ignore[arg-type]


def test_a_valid_answer_after_n_failures(gemini_server: GeminiFaultServer) -> None:
    """Exactly ``max_attempts`` failures are absorbed; one more fails the run."""
    for failures, ok in ((3, True), (4, False)):
        scenario = f"gemini-n-failures-{failures}"
        gemini_server.plan(scenario, *[Fault.status_code(503)] * failures)
        model = gemini_model(
            gemini_server, retry=RetryPolicy(max_attempts=3, base=0.001, cap=0.002)
        )
        agent = make_agent(model, scenario)
        if ok:
            assert agent.run_sync(f"hi {failures}").output == final_text(f"hi {failures}")
        else:
            with pytest.raises(RunError):
                agent.run_sync(f"hi {failures}")
        assert len(gemini_server.of(scenario)) >= failures + (1 if ok else 0)
