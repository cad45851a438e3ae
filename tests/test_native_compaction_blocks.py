# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Anthropic ``compaction`` blocks keep every field (issue 48 item 1).

The anthropic SDK's ``BetaCompactionBlockParam`` says ``encrypted_content``,
``signature`` and ``tool_changes`` come back to be sent back unchanged. A block decoded
from a body or a stream goes back verbatim: through the history's JSON contract, both
stores (SQLite and a real PostgreSQL) and the request encoder; every request carrying a
block (an adapter made without ``compact()`` edits included, and a token count) sends
the compaction beta header, on a real loopback server.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from anthropic.types.beta import (
    BetaCompactionBlock,
    BetaCompactionBlockParam,
    BetaCompactionContentBlockDelta,
)
from store_backends import (  # noqa: F401 (fixtures)
    OWNER,
    Backend,
    Store,
    backend,
    postgres_backend,
    sqlite_backend,
    store,
    store_database,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "properties"))

from provider_server import (  # noqa: F401 (fixtures, asked for by name)
    ProviderServer,
    anyio_backend_fixture,
    fixture_json,
    json_reply,
    provider_server_fixture,
    provider_server_instance_fixture,
    sse_reply,
)
from wire_rules import anthropic_context_violations, anthropic_violations

from golem_core import (
    Message,
    ModelRequest,
    RetryPolicy,
    Target,
    TextPart,
    decode_history,
    encode_history,
    port_history,
)
from golem_core.providers import Origin
from golem_core.wire import anthropic as wire
from golem_shell import AnthropicModel
from golem_shell.context._token_counters import anthropic_token_counter

FAST = RetryPolicy(max_attempts=1, base=0.01, cap=0.02)
SUMMARY = "<summary>The launch of the Lisbon office; venue LIS-4471 booked.</summary>"
BLOCK: dict[str, Any] = {
    "type": "compaction",
    "content": SUMMARY,
    "encrypted_content": "EqQBCkYIBxgCKkA-opaque-compaction-metadata==",
    "signature": "sig_01Hq9cmpSignatureOverTheSummary==",
    "tool_changes": [
        {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "book_venue"}},
        {
            "type": "tool_removal",
            "tool": {"type": "mcp_toolset_reference", "server_name": "calendar"},
        },
    ],
}


def response_with(block: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = copy.deepcopy(fixture_json("anthropic/response_compaction.json"))
    body["content"][0] = copy.deepcopy(block)
    return body


def decoded(origin: Origin | None = None) -> Message:
    origin = origin or Origin("anthropic", "claude-opus-4-6", "api.anthropic.com")
    return wire.decode_response(response_with(BLOCK), origin=origin).unwrap()


def sent_block(history: tuple[Message, ...]) -> dict[str, Any]:
    request = ModelRequest((*history, Message.user("And the catering?")))
    body = wire.encode_request(request, model="claude-opus-4-6", stream=False).unwrap()
    blocks = [b for m in body["messages"] for b in m["content"] if b["type"] == "compaction"]
    assert len(blocks) == 1
    block: dict[str, Any] = blocks[0]
    return block


def without_marker(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def test_the_sdk_shape_holds_the_fields_golem_must_keep() -> None:
    """The fields this file keeps are the SDK's own (a renamed field fails here first)."""
    fields = set(BetaCompactionBlockParam.__annotations__)
    assert {"content", "encrypted_content", "signature", "tool_changes"} <= fields
    assert BetaCompactionBlock.model_validate(BLOCK).encrypted_content == BLOCK["encrypted_content"]
    assert "encrypted_content" in BetaCompactionContentBlockDelta.model_fields


def test_a_decoded_block_goes_back_with_every_field_unchanged() -> None:
    answer = decoded()
    assert without_marker(sent_block((Message.user("Plan the launch."), answer))) == BLOCK
    assert set(sent_block((answer,))) <= set(BetaCompactionBlockParam.__annotations__)
    part = answer.parts[0]
    assert type(part) is TextPart and part.text == SUMMARY
    assert wire.compaction_block(part) == BLOCK


def test_the_json_contract_keeps_every_field() -> None:
    answer = decoded()
    text = encode_history((answer,))
    assert decode_history(text).unwrap() == (answer,)
    assert without_marker(sent_block(decode_history(text).unwrap())) == BLOCK
    stored = json.loads(text)[0]["parts"][0]  # additive JSON: one field of the part
    assert stored["anthropicCompactionFields"] == {
        k: v for k, v in BLOCK.items() if k not in ("type", "content")
    }


def test_both_stores_keep_every_field(store: Store) -> None:
    history = (Message.user("Plan the launch."), decoded())
    store.append_sync(OWNER, "c1", history, 0)
    loaded = store.load_sync(OWNER, "c1")
    assert loaded == history
    assert without_marker(sent_block(loaded)) == BLOCK


def test_elsewhere_only_the_summary_travels() -> None:
    """Another provider never gets the block's opaque fields: its summary as text."""
    ported, report = port_history((decoded(),), Target("openai", "gpt-4o-mini"))
    assert ported[0].parts[0] == TextPart(SUMMARY)
    assert [p.what for p in report.as_text] == ["compaction summary"]


def stream_of(start: dict[str, Any], deltas: list[dict[str, Any]]) -> bytes:
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-opus-4-6",
                    "content": [],
                    "usage": {"input_tokens": 23000, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": start},
        ),
        *(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
            for d in deltas
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {
                    "type": "text_delta",
                    "text": "The venue is booked; next I will send the invitations.",
                },
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 1000},
                "context_management": {
                    "applied_edits": [
                        {
                            "type": "clear_tool_uses_20250919",
                            "cleared_tool_uses": 8,
                            "cleared_input_tokens": 50000,
                        }
                    ]
                },
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


STREAMED = stream_of(
    # the block opens with the fields that do not stream (as the SDK's snapshot keeps them)
    {
        "type": "compaction",
        "content": None,
        "signature": BLOCK["signature"],
        "tool_changes": BLOCK["tool_changes"],
    },
    # then one compaction_delta: its content and its encrypted_content
    [
        {
            "type": "compaction_delta",
            "content": SUMMARY,
            "encrypted_content": BLOCK["encrypted_content"],
        }
    ],
)


def anthropic(server: ProviderServer, **kw: Any) -> AnthropicModel:
    return AnthropicModel(
        "claude-opus-4-6", api_key="sk-ant-test", base_url=server.url, retry=FAST, timeout=2.0, **kw
    )


@pytest.mark.anyio
async def test_a_streamed_block_keeps_its_encrypted_content(
    provider_server: ProviderServer,
) -> None:
    provider_server.enqueue(sse_reply(STREAMED), json_reply(response_with(BLOCK)))
    async with anthropic(provider_server, context_edits=[wire.compact()]) as m:
        events = [e async for e in m.request_stream(ModelRequest((Message.user("Plan it."),)))]
        streamed = events[-1].message  # type: ignore[attr-defined]
        plain = await m.request(ModelRequest((Message.user("Plan it."),)))
    assert without_marker(sent_block((Message.user("Plan it."), streamed))) == BLOCK
    assert streamed.parts == plain.parts


@pytest.mark.anyio
async def test_every_request_carrying_a_block_sends_the_compaction_beta(
    provider_server: ProviderServer,
) -> None:
    """An adapter made without ``compact()`` (the edits dropped, another process, a
    token counter) still sends a block it is given: Anthropic refuses it without the
    compaction beta header."""
    provider_server.enqueue(
        json_reply(fixture_json("anthropic/message_text.json")),
        json_reply(fixture_json("anthropic/message_text.json")),
        json_reply({"input_tokens": 90}),
        json_reply({"input_tokens": 7}),
    )
    async with anthropic(provider_server) as m:  # no context edits
        answer = decoded(m.origin)  # issued by this model at this endpoint: sent back
        history = (Message.user("Plan the launch."), answer, Message.user("And the catering?"))
        await m.request(ModelRequest(history))
        await m.request(ModelRequest((Message.user("Hello"),)))
    with_block, plain = provider_server.requests[:2]
    body = with_block.json()
    assert with_block.headers["anthropic-beta"] == wire.COMPACTION_BETA
    assert anthropic_violations(body) == []
    assert anthropic_context_violations(body, with_block.headers["anthropic-beta"]) == []
    assert without_marker(body["messages"][1]["content"][0]) == BLOCK
    assert "anthropic-beta" not in plain.headers  # no block, no edit: no beta

    counter = anthropic_token_counter(
        "claude-opus-4-6", api_key="sk-ant-test", base_url=provider_server.url, retry=FAST
    )
    async with counter:
        assert await counter(answer) == 83
    counted, primer = provider_server.requests[2:4]
    assert counted.headers["anthropic-beta"] == wire.COMPACTION_BETA
    assert anthropic_context_violations(counted.json(), counted.headers["anthropic-beta"]) == []
    assert "anthropic-beta" not in primer.headers


def test_request_betas_reads_edits_and_blocks() -> None:
    edits = [wire.clear_tool_uses()]
    body = {"context_management": {"edits": edits}, "messages": [{"role": "user", "content": "q"}]}
    assert wire.request_betas(body) == (wire.CONTEXT_MANAGEMENT_BETA,)
    body["messages"].append({"role": "assistant", "content": [BLOCK]})
    assert wire.request_betas(body) == (wire.CONTEXT_MANAGEMENT_BETA, wire.COMPACTION_BETA)
    assert wire.request_betas({"messages": [{"role": "user", "content": "q"}]}) == ()


def test_a_signature_streamed_as_a_delta_stays_on_the_block() -> None:
    """A ``signature_delta`` at a compaction block's index is the block's signature (not
    a thinking part)."""
    from golem_core.sse import SSEDecoder

    streamed = stream_of(
        {"type": "compaction", "content": None, "tool_changes": BLOCK["tool_changes"]},
        [
            {
                "type": "compaction_delta",
                "content": SUMMARY,
                "encrypted_content": BLOCK["encrypted_content"],
            },
            {"type": "signature_delta", "signature": BLOCK["signature"]},
        ],
    )
    decoder = wire.StreamDecoder()
    for event in SSEDecoder().feed(streamed):
        decoder.feed(event).unwrap()
    message = decoder.finish().unwrap()
    assert len(message.parts) == 2  # the block and the answer's text, no thinking part
    assert without_marker(sent_block((Message.user("Plan it."), message))) == BLOCK
