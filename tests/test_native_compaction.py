"""Provider-native compaction (issue 35 item 2, ADR 0148), on the loopback server.

OpenAI Responses: ``native_compaction`` posts the older turns to ``/responses/compact``
with the right body, keeps the compaction item in the history, sends it back on the next
request to the same model and leaves it off (reported) for another provider or endpoint.
Anthropic: ``context_management`` edits and their beta header are sent, a ``compaction``
block is kept (body and stream alike), goes back to its model, travels as summary text
elsewhere, and ``native_compaction`` cuts what Anthropic ignores. Elsewhere golem's own
summarizer does the job behind the same option.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from returns.result import Success

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "properties"))

from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    anyio_backend_fixture,
    fixture_bytes,
    fixture_json,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
    sse_reply,
)
from wire_rules import (
    anthropic_context_violations,
    anthropic_violations,
    openai_violations,
    responses_compact_violations,
    responses_violations,
)

from golem_core import (
    Message,
    ModelRequest,
    RetryPolicy,
    Role,
    Target,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    compaction_of,
    decode_history,
    encode_history,
    is_summary,
    port_history,
)
from golem_core.loop import CompactHistory, HistoryCompacted
from golem_core.wire import anthropic as anthropic_wire
from golem_core.wire import openai_responses as responses_wire
from golem_shell import AnthropicModel, OpenAIModel, OpenAIResponsesModel, UsageError
from golem_shell.context._native_compaction import native_compaction
from golem_shell.context._summarize import compact_history

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(max_attempts=1, base=0.01, cap=0.02)
VENUE = ToolDefinition(
    "book_venue",
    "Book a venue.",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)
ENCRYPTED = "gAAAAABoz1cmpEncryptedSummaryOfTheLaunchPlanAndTheVenueCall=="


def responses(server: ProviderServer, name: str = "gpt-5", host: str = "") -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        name, api_key="sk-test", base_url=f"{host or server.url}/v1", retry=FAST, timeout=2.0
    )


def anthropic(server: ProviderServer, **kw: Any) -> AnthropicModel:
    return AnthropicModel(
        "claude-opus-4-6", api_key="sk-ant-test", base_url=server.url, retry=FAST, timeout=2.0, **kw
    )


def chat(server: ProviderServer) -> OpenAIModel:
    return OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=f"{server.url}/v1", retry=FAST)


def long_history() -> tuple[Message, ...]:
    call = ToolCallPart("call_v1", "book_venue", '{"name":"Rua Augusta 12"}')
    return (
        Message.user("Plan the launch of the Lisbon office."),
        Message(Role.ASSISTANT, (TextPart("Booking the venue."), call)),
        Message.tool_result("call_v1", "book_venue", "booked: LIS-4471"),
        Message.assistant("Booked."),
        Message.user("Book the venue we agreed on."),
        Message.assistant("Already booked: LIS-4471."),
        Message.user("Now the invitations?"),
        Message.assistant("Drafting them."),
    )


def text_reply() -> dict[str, Any]:
    body: dict[str, Any] = fixture_json("openai_responses/response_text.json")
    return body


# -- OpenAI Responses -------------------------------------------------------------------


async def test_responses_compaction_is_called_kept_sent_back_and_left_off_elsewhere(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(json_reply(fixture_json("openai_responses/compact_response.json")))
    history = long_history()
    async with responses(provider_server) as m:
        fold = native_compaction(m, keep_last_turns=1, step_turns=0, instructions="Keep ids.")
        result = await fold(history)
        assert isinstance(result, Success)
        compacted = result.unwrap()

        # the compact endpoint got the older turns, as Responses input items, and nothing else
        [sent] = provider_server.requests
        assert sent.path == "/v1/responses/compact"
        body = sent.json()
        assert responses_compact_violations(body) == []
        assert body["model"] == "gpt-5" and body["instructions"] == "Keep ids."
        kinds = [item.get("type", item.get("role")) for item in body["input"]]
        assert "function_call" in kinds and "function_call_output" in kinds
        assert body["input"][0] == {
            "role": "user",
            "content": "Plan the launch of the Lisbon office.",
        }

        # kept: golem's own user messages, then the compaction item, then the kept turn
        assert compacted[0] is history[0] and compacted[1] is history[4]
        holder = compacted[2]
        assert holder.role is Role.ASSISTANT and holder.provider == "openai-responses"
        assert is_summary(holder)
        assert responses_wire.compaction_item(holder.parts[0]) == {  # type: ignore[arg-type]
            "type": "compaction",
            "encrypted_content": ENCRYPTED,
            "id": "cmp_68c1a2f0c9d88190",
        }
        record = compaction_of(holder)
        assert record is not None and record.kind == "summary"
        assert len(record.replaced) == 6  # every message it was built from, kept users too
        assert record.usage is not None and record.usage.input_tokens == 42897
        assert compacted[3:] == history[6:]
        assert decode_history(encode_history(compacted)).unwrap() == compacted  # survives storage

        # the next request to the same model sends the item back
        provider_server.enqueue(json_reply(text_reply()))
        await m.request(ModelRequest((*compacted, Message.user("Go on."))))
        items = provider_server.requests[-1].json()["input"]
        assert responses_violations({"input": items}) == []
        assert {
            "type": "compaction",
            "encrypted_content": ENCRYPTED,
            "id": "cmp_68c1a2f0c9d88190",
        } in items

    # another provider, or another Responses endpoint: left off, and reported
    for target in (
        Target("anthropic", "claude-opus-4-6", "api.anthropic.com"),
        Target("openai", "gpt-4o-mini", provider_server.url.split("//")[1]),
        Target("openai-responses", "gpt-5", "api.openai.com"),
    ):
        ported, report = port_history(compacted, target)
        assert [p.what for p in report.left_off] == ["compaction item"], target
        assert ENCRYPTED not in json.dumps([m.text for m in ported])
        assert all(not p.extra for m in ported for p in m.parts if type(p) is TextPart)

    # sent through the Anthropic and Chat encoders: a valid request without the item
    provider_server.enqueue(
        json_reply(fixture_json("anthropic/message_text.json")),
        json_reply(fixture_json("openai/chat_text.json")),
    )
    async with anthropic(provider_server) as a, chat(provider_server) as c:
        await a.request(ModelRequest((*compacted, Message.user("Go on."))))
        await c.request(ModelRequest((*compacted, Message.user("Go on."))))
    a_body, c_body = (r.json() for r in provider_server.requests[-2:])
    assert anthropic_violations(a_body) == [] and ENCRYPTED not in json.dumps(a_body)
    assert openai_violations(c_body) == [] and ENCRYPTED not in json.dumps(c_body)


async def test_a_failed_compact_request_is_a_history_error(provider_server: ProviderServer) -> None:
    provider_server.enqueue(
        json_reply({"error": {"message": "bad", "type": "invalid_request_error"}}, status=400)
    )
    async with responses(provider_server) as m:
        result = await native_compaction(m, keep_last_turns=1, step_turns=0)(long_history())
    assert "the compaction request failed" in str(result.failure())


async def test_compact_and_retry_runs_native_compaction_forced(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(json_reply(fixture_json("openai_responses/compact_response.json")))
    history = long_history()
    async with responses(provider_server) as m:
        strategy = native_compaction(m, keep_last_turns=1, max_tokens=10**9)
        outcome = await compact_history(strategy, CompactHistory(history, len(history), "test"))
    assert isinstance(outcome, HistoryCompacted)
    assert outcome.record.kind == "summary" and len(outcome.record.replaced) == 6
    assert provider_server.requests[0].path == "/v1/responses/compact"


def test_decode_compact_response_needs_a_compaction_item() -> None:
    body = fixture_json("openai_responses/compact_response.json")
    body["output"] = body["output"][:2]
    failure = responses_wire.decode_compact_response(body).failure()
    assert "no compaction item" in failure.message


def test_a_compaction_item_in_a_plain_response_is_kept() -> None:
    body = fixture_json("openai_responses/response_text.json")
    body["output"].insert(0, {"type": "compaction", "id": "cmp_1", "encrypted_content": "e=="})
    message = responses_wire.decode_response(body).unwrap()
    first = message.parts[0]
    assert type(first) is TextPart
    assert responses_wire.compaction_item(first) == {
        "type": "compaction",
        "encrypted_content": "e==",
        "id": "cmp_1",
    }


# -- Anthropic --------------------------------------------------------------------------


async def test_anthropic_edits_compaction_block_kept_sent_back_and_as_text_elsewhere(
    provider_server: ProviderServer,
) -> None:
    edits = [
        anthropic_wire.clear_thinking(2),
        anthropic_wire.clear_tool_uses(trigger_tokens=30000, keep_tool_uses=3),
        anthropic_wire.compact(trigger_tokens=100000),
    ]
    history = long_history()
    provider_server.enqueue(
        json_reply(fixture_json("anthropic/response_compaction.json")),
        json_reply(fixture_json("anthropic/message_text.json")),
    )
    async with anthropic(provider_server, context_edits=edits) as m:
        answer = await m.request(ModelRequest(history, tools=(VENUE,)))
        first = provider_server.requests[0]
        betas = first.headers["anthropic-beta"]
        assert betas == "context-management-2025-06-27,compact-2026-01-12"
        assert first.json()["context_management"] == {"edits": edits}
        assert anthropic_context_violations(first.json(), betas) == []

        # the block is kept as the answer's first part, the applied edits as a report
        block = answer.parts[0]
        assert type(block) is TextPart and block.text.startswith("<summary>The user")
        assert answer.text.endswith("send the invitations.")
        assert (
            json.loads(dict(answer.extra)[anthropic_wire.APPLIED_EDITS_KEY])[0]["cleared_tool_uses"]
            == 8
        )
        assert decode_history(encode_history((answer,))).unwrap() == (answer,)

        # native_compaction cuts what Anthropic ignores, and records it
        grown = (*history, answer, Message.user("And the catering?"))
        result = await native_compaction(m)(grown)
        compacted = result.unwrap()
        assert compacted[1:] == grown[len(history) + 1 :]
        record = compaction_of(compacted[0])
        assert record is not None and len(record.replaced) == len(history)

        # sent back to its model: a compaction block opening the request
        await m.request(ModelRequest(compacted, tools=(VENUE,)))
        second = provider_server.requests[-1].json()
        assert second["messages"][0]["content"][0] == {
            "type": "compaction",
            "content": block.text,
        }
        assert anthropic_violations(second) == []
        assert anthropic_context_violations(second, betas) == []

    # elsewhere: the summary travels as text, reported
    ported, report = port_history(compacted, Target("openai", "gpt-4o-mini"))
    assert [p.what for p in report.as_text] == ["compaction summary"]
    assert ported[0].parts[0] == TextPart(block.text)
    other = Target("anthropic", "claude-opus-4-6", "anthropic.example.com")
    assert [p.what for p in port_history(compacted, other)[1].as_text] == ["compaction summary"]


async def test_anthropic_stream_keeps_the_compaction_block_as_the_body_does(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(sse_reply(fixture_bytes("anthropic/stream_compaction.sse")))
    async with anthropic(provider_server, context_edits=[anthropic_wire.compact()]) as m:
        events = [e async for e in m.request_stream(ModelRequest(long_history()))]
    streamed = events[-1].message  # type: ignore[attr-defined]
    plain = anthropic_wire.decode_response(
        fixture_json("anthropic/response_compaction.json")
    ).unwrap()
    assert streamed.parts == plain.parts
    record = compaction_of(streamed)  # the adapter records what the block was built from
    assert record is not None and len(record.replaced) == len(long_history())
    assert {k: v for k, v in streamed.extra if k != "compaction"} == dict(plain.extra)


def test_edits_anthropic_would_refuse_are_refused_here() -> None:
    with pytest.raises(UsageError, match="at least 50000"):
        AnthropicModel(
            "claude-opus-4-6",
            api_key="k",
            context_edits=[anthropic_wire.compact(trigger_tokens=1000)],
        )
    with pytest.raises(UsageError, match="must be listed first"):
        AnthropicModel(
            "claude-opus-4-6",
            api_key="k",
            context_edits=[anthropic_wire.clear_tool_uses(), anthropic_wire.clear_thinking()],
        )
    with pytest.raises(UsageError, match="unknown edit type"):
        AnthropicModel("claude-opus-4-6", api_key="k", context_edits=[{"type": "nope"}])


# -- no native compaction: golem's summarizer behind the same option ---------------------


async def test_chat_completions_falls_back_to_golems_summarizer(
    provider_server: ProviderServer,
) -> None:
    reply = fixture_json("openai/chat_text.json")
    provider_server.enqueue(json_reply(reply))
    history = long_history()
    async with chat(provider_server) as c:
        compacted = (await native_compaction(c, keep_last_turns=1, step_turns=0)(history)).unwrap()
    assert provider_server.requests[0].path == "/v1/chat/completions"
    assert is_summary(compacted[0]) and compacted[0].role is Role.USER
    record = compaction_of(compacted[0])
    assert record is not None and record.processor.startswith("summarize_history(")
    assert compacted[1:] == history[6:]
